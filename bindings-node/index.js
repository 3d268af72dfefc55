// zklock for Node: distributed locks on Apache ZooKeeper.
//
// The native addon (src/lib.rs) hands every decision to the zklock core (re-entrancy per lock
// object, the timeout rule, states, names); the package's JavaScript only gives it the shape a
// Node developer expects: type checks that throw ZKLOCK_INVALID_ARGUMENT, AbortSignal for
// cancelling an acquire and for a lost lease, `await using`, `using(fn)`, and lease events.
//
// The package's files, from the bottom up (lib/): native.js (loads the addon), errors.js,
// args.js (argument checks), logs.js, counter.js, lease.js, lock.js, election.js, client.js. Each requires
// only the ones before it; this file only gathers the public names.
'use strict'

const { ErrorCode, isZkLockError } = require('./lib/errors')
const { logChannel } = require('./lib/logs')
const { Counter } = require('./lib/counter')
const { Lease } = require('./lib/lease')
const { Lock, Mutex, MultiLock, RwLock, Semaphore } = require('./lib/lock')
const { Election, Leadership, LeaderWatch } = require('./lib/election')
const { Client, closeOnSignals } = require('./lib/client')

exports.Client = Client
exports.Lock = Lock
exports.Mutex = Mutex
exports.RwLock = RwLock
exports.MultiLock = MultiLock
exports.Semaphore = Semaphore
exports.Lease = Lease
exports.Counter = Counter
exports.Leadership = Leadership
exports.Election = Election
exports.LeaderWatch = LeaderWatch
exports.ErrorCode = ErrorCode
exports.isZkLockError = isZkLockError
exports.logChannel = logChannel
exports.closeOnSignals = closeOnSignals
