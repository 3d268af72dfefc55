// The Node runner of zklock's conformance suite: every line of tests/conformance/cases.txt
// becomes one test, performed through the public Node API (require('../index.js')) against a
// real ZooKeeper, its outcome compared with the expected column. A line added to cases.txt is
// a new test here with no other change. Format and ops: tests/conformance/README.md.
//
// What this runner chose where Node's idiom needs a choice (a Node user's reading):
// - An error is the zklock Error's `err.code`, mapped back to the core's kind name through one
//   table (KIND_OF_CODE below; ZKLOCK_ABORTED is the core's Cancelled). An error that is not a
//   zklock error (a TypeError, say) fails the case: the face let something through untranslated.
// - Invalid input may throw synchronously (client.mutex) or reject (Client.connect, acquire):
//   both are that call's outcome.
// - "not-acquired": `tryAcquire()` resolving `null`, or `acquire({ timeoutMs })` rejecting with
//   ZKLOCK_TIMEOUT (the `timeout` op always calls `acquire({ timeoutMs })`, also for 0).
// - Timeouts: the input is seconds, passed as `timeoutMs` = seconds * 1000 (nan -> NaN,
//   inf -> Infinity, -inf -> -Infinity), except `-1`, passed as `-1` (the README's rule).
// - Session timeouts: `sessionTimeoutMs` = Math.round(seconds * 1000).
// - "Owner" is the caller (issue 50): one caller is a `using()` callback (its nested acquires
//   re-enter), concurrent callers are async functions started together on one Mutex object; a
//   second owner in `second-owner-try` is a second `client.mutex(samePath)`.
// - The read/write scenarios use the two sides of one `client.rwLock(path)`, the second acquire
//   inside the first side's `using()` (one caller).
// - The hold count of `reenter-same-owner` is `mutex.holdCount` inside `mutex.using()`.
// - `release-not-held` is n/a: a Node user releases a Lease, and a Lease exists only once the
//   lock was acquired; the only release of something not held is a second release (the
//   `release-twice` case). An n/a case is reported by name with its reason as a skipped test
//   ("n/a: ..."), counted apart in the closing line, never silently.
// - A semaphore's N is `client.semaphore(path, Number(input))`; its lease is taken with
//   `acquire({ timeoutMs: 5000 })`. The "same value, same owner" semaphore scenarios use one
//   Semaphore object. Revocation is heard
//   through the lease's 'revokeRequested' event and asked with `client.revoke(path)`.
// - Elections: `client.election(path, { style, id })`; "leads once as a try" is
//   `lead({ timeoutMs: 0 })`, a resign is `election.resign(lead)`; "starts leading" is a
//   `lead()` promise not awaited yet. The maximum hold is `client.mutex(path, { maxHoldMs })`
//   with maxHoldMs = seconds * 1000 (nan -> NaN); the lost reason's first word is read from
//   the 'lost' event's ZKLOCK_LOST error message (what follows its last " lost: ", which is
//   where the core's lost reason says why, as the Rust runner reads it). The observer is
//   `client.observeLeader(path)` read with `next({ timeoutMs: 10000 })`; `check` is
//   `client.check(path, lease.token)`; valid-until is `lease.validUntil()` against Date.now().
// - Every error message met on the way (also one mapped to not-acquired) must be at most 300
//   characters.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { useZooKeeper, repo } = require('./harness.js')
const { Client, isZkLockError } = require('../index.js')
const { leaseScenarios } = require('./conformance-lease.js')
const { breakScenarios } = require('./conformance-break.js')
const { queueScenarios } = require('./conformance-queue.js')
const { peerScenarios } = require('./conformance-peers.js')

const CASES_FILE = path.join(repo, 'tests', 'conformance', 'cases.txt')
const MAX_MESSAGE = 300

/** The one table from Node's `err.code` back to the core's kind names. */
const KIND_OF_CODE = Object.freeze({
  ZKLOCK_TIMEOUT: 'Timeout',
  ZKLOCK_ABORTED: 'Cancelled',
  ZKLOCK_LOST: 'LockLost',
  ZKLOCK_SESSION_EXPIRED: 'SessionExpired',
  ZKLOCK_CONNECTION: 'Connection',
  ZKLOCK_NOT_HELD: 'NotHeld',
  ZKLOCK_UPGRADE: 'UpgradeNotAllowed',
  ZKLOCK_INVALID_ARGUMENT: 'InvalidArgument',
  ZKLOCK_CLOSED: 'Closed',
  ZKLOCK_PERMISSION: 'Permission',
  ZKLOCK_ZOOKEEPER: 'ZooKeeper',
  ZKLOCK_INTERNAL: 'Internal',
  ZKLOCK_OUTCOME_UNKNOWN: 'OutcomeUnknown',
  ZKLOCK_CONFLICT: 'Conflict',
})

/** Scenarios (or ops) that have no form in the Node API, with the reason. */
const NOT_APPLICABLE = Object.freeze({
  'scenario:release-not-held':
    'a Node user releases a Lease, which exists only once acquired; ' +
    'releasing what is not held is the second release (release-twice)',
})

// Parsing -----------------------------------------------------------------------------------

/** Decodes a percent-encoded input: %XX is a byte, %*N(x) is x repeated N times. */
function decodeInput(text, servers) {
  const src = Buffer.from(text, 'utf8')
  const out = []
  let i = 0
  const hexByte = (at) => {
    const hex = src.toString('latin1', at, at + 2)
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw new Error(`bad escape %${hex} in ${JSON.stringify(text)}`)
    return parseInt(hex, 16)
  }
  // One "character" of the repeat form: a %XX escape or one UTF-8 encoded character.
  const oneChar = (at) => {
    if (src[at] === 0x25) return { bytes: [hexByte(at + 1)], next: at + 3 }
    let len = 1
    if (src[at] >= 0xf0) len = 4
    else if (src[at] >= 0xe0) len = 3
    else if (src[at] >= 0xc0) len = 2
    return { bytes: [...src.subarray(at, at + len)], next: at + len }
  }
  while (i < src.length) {
    if (src[i] !== 0x25) {
      out.push(src[i])
      i += 1
      continue
    }
    if (src[i + 1] === 0x2a) {
      const m = /^%\*(\d+)\(/.exec(src.toString('latin1', i, i + 32))
      if (!m) throw new Error(`bad repeat in ${JSON.stringify(text)}`)
      const n = Number(m[1])
      const { bytes, next } = oneChar(i + m[0].length)
      if (src[next] !== 0x29) throw new Error(`bad repeat (no ')') in ${JSON.stringify(text)}`)
      for (let k = 0; k < n; k += 1) out.push(...bytes)
      i = next + 1
      continue
    }
    out.push(hexByte(i + 1))
    i += 3
  }
  const decoded = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(out))
  return decoded.split('$SERVERS').join(servers)
}

/** The cases of cases.txt, in file order: { id, op, rawInput, expected, line }. */
function readCases() {
  const text = fs.readFileSync(CASES_FILE, 'utf8')
  const cases = []
  const ids = new Set()
  text.split('\n').forEach((raw, n) => {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    const cols = raw.split('|').map((c) => c.trim())
    if (cols.length !== 4) {
      throw new Error(`${CASES_FILE}:${n + 1}: expected 4 columns separated by '|', got ${cols.length}`)
    }
    const [id, op, rawInput, expected] = cols
    if (!id || !op || !expected) throw new Error(`${CASES_FILE}:${n + 1}: empty id, op or expected`)
    if (ids.has(id)) throw new Error(`${CASES_FILE}:${n + 1}: duplicate id ${id}`)
    ids.add(id)
    cases.push({ id, op, rawInput, expected, line: n + 1 })
  })
  return cases
}

// Outcomes ----------------------------------------------------------------------------------

/** Every error message met by the current case. */
let messages = []

/** The kind name of a zklock error; anything else is a failure of the face. */
function kindOf(e) {
  if (e instanceof Error) messages.push(e.message)
  if (!isZkLockError(e) || !(e.code in KIND_OF_CODE)) {
    const err = new Error(`not a zklock error: ${e instanceof Error ? `${e.name} ${e.code}: ${e.message}` : String(e)}`)
    err.cause = e
    throw err
  }
  return KIND_OF_CODE[e.code]
}

/** Runs `fn`; its result, or the kind of the zklock error it threw or rejected with. */
async function outcome(fn) {
  try {
    return await fn()
  } catch (e) {
    return kindOf(e)
  }
}

// Timeouts: ZKLOCK_TIMEOUT is the Node way of saying "not acquired" for an acquire.
async function acquireOutcome(lock, options) {
  try {
    const lease = await lock.acquire(options)
    await lease.release()
    return 'acquired'
  } catch (e) {
    const kind = kindOf(e)
    return kind === 'Timeout' ? 'not-acquired' : kind
  }
}

/** seconds as written in cases.txt (nan, inf, -inf, exponents) to a number. */
function seconds(text) {
  const t = text.trim().toLowerCase()
  if (t === 'nan') return NaN
  if (t === 'inf' || t === '+inf' || t === 'infinity') return Infinity
  if (t === '-inf' || t === '-infinity') return -Infinity
  if (t === '' || Number.isNaN(Number(t))) throw new Error(`not a number of seconds: ${JSON.stringify(text)}`)
  return Number(t)
}

// Ops ---------------------------------------------------------------------------------------

let zk
/** Two long-lived clients; scenarios that close a client make their own. */
let a
let b

function lockPath(c) {
  return `/conformance/node/${c.id}-${process.pid}`
}

const ops = {
  async path(input) {
    return outcome(async () => {
      const m = a.mutex(input)
      const lease = await m.tryAcquire()
      if (lease === null) return 'not-acquired'
      await lease.release()
      return 'ok'
    })
  },

  async rwpath(input) {
    return outcome(() => {
      a.rwLock(input)
      return 'ok'
    })
  },

  async multi(input) {
    return outcome(() => {
      a.multiLock(input === '' ? [] : input.split(','))
      return 'ok'
    })
  },

  async hosts(input) {
    return outcome(async () => {
      const c = await Client.connect(input, { connectTimeoutMs: 5000 })
      await c.close()
      return 'ok'
    })
  },

  async session_timeout(input) {
    return outcome(async () => {
      const c = await Client.connect(zk.servers, { sessionTimeoutMs: Math.round(seconds(input) * 1000) })
      await c.close()
      return 'ok'
    })
  },

  async server_tick(input) {
    return outcome(async () => {
      const c = await Client.connect(zk.servers, {
        sessionTimeoutMs: 4000,
        serverTickMs: Math.round(seconds(input) * 1000),
      })
      await c.close()
      return 'ok'
    })
  },

  async learned_tick(input) {
    return outcome(async () => {
      const options = { sessionTimeoutMs: 4000 }
      if (input !== '') options.serverTickMs = Math.round(seconds(input) * 1000)
      const c = await Client.connect(zk.servers, options)
      const tick = c.serverTick
      await c.close()
      return String(Math.round(tick))
    })
  },

  async server_features(input) {
    return outcome(async () => {
      const c = await Client.connect(zk.servers)
      const { version } = c.serverFeatures()
      await c.close()
      return version
    })
  },

  async path_stats_limit(input) {
    return outcome(async () => {
      const c = await Client.connect(zk.servers, { pathStatsLimit: Number(input) })
      await c.close()
      return 'ok'
    })
  },

  async identity(input) {
    return outcome(async () => {
      const c = await Client.connect(zk.servers, { identity: input })
      await c.close()
      return 'ok'
    })
  },

  async acl(input) {
    return outcome(async () => {
      const c = await Client.connect(zk.servers, {
        auth: 'user:secret',
        acl: /** @type {any} */ (input),
      })
      await c.close()
      return 'ok'
    })
  },

  // Nothing the Node face shows (util.inspect of client, mutex, lease, participants; the error
  // of a malformed credential) holds the password.
  async secret(input, c) {
    const util = require('node:util')
    const show = (v) => util.inspect(v, { showHidden: true, depth: 6 })
    const client = await Client.connect(zk.servers, {
      auth: `conformance:${input}`,
      acl: 'creator-all',
      connectTimeoutMs: 5000,
    })
    const m = client.mutex(lockPath(c))
    const lease = await m.acquire()
    let shown = show(client) + show(m) + show(lease) + show(await m.participants())
    await lease.release()
    await client.close()
    try {
      await Client.connect(zk.servers, { auth: input, connectTimeoutMs: 5000 })
      return 'a credential without ":" was accepted'
    } catch (e) {
      if (!isZkLockError(e) || e.code !== 'ZKLOCK_INVALID_ARGUMENT') throw e
      shown += e.message + show(e)
    }
    return shown.includes(input) ? 'shown' : 'hidden'
  },

  async sasl(input) {
    const [user, password] = [input.slice(0, input.indexOf(':')), input.slice(input.indexOf(':') + 1)]
    const util = require('node:util')
    try {
      const c = await Client.connect(zk.servers, { saslUser: user, saslPassword: password, connectTimeoutMs: 5000 })
      await c.close()
      return 'ok'
    } catch (e) {
      if (isZkLockError(e) && (e.message + util.inspect(e)).includes(password)) return 'shown'
      return kindOf(e)
    }
  },

  // A PEM key given as content (or its body alone) to the TLS options: no error shows it.
  async secret_pem(input) {
    const util = require('node:util')
    let shown = ''
    for (const options of [
      { tlsCa: input },
      { tlsCa: input, tlsCert: input, tlsKey: input },
      { tlsKey: input },
    ]) {
      try {
        const c = await Client.connect(zk.servers, { ...options, connectTimeoutMs: 5000 })
        await c.close()
        return 'connected'
      } catch (e) {
        if (!isZkLockError(e)) throw e
        shown += e.message + util.inspect(e, { showHidden: true, depth: 6 })
      }
    }
    const body = input
      .split('\n')
      .filter((l) => !l.trim().startsWith('-----'))
      .map((l) => l.trim())
      .join('')
    for (let i = 0; i + 12 <= body.length; i++) {
      if (shown.includes(body.slice(i, i + 12))) return 'shown'
    }
    return 'hidden'
  },

  async timeout(input, c) {
    const s = seconds(input)
    const timeoutMs = input.trim() === '-1' ? -1 : s * 1000
    const p = lockPath(c)
    const held = await b.mutex(p).acquire()
    const freed = new Promise((resolve, reject) => {
      setTimeout(() => held.release().then(resolve, reject), 300)
    })
    try {
      return await acquireOutcome(a.mutex(p), { timeoutMs })
    } finally {
      await freed
    }
  },

  async deadline(input, c) {
    const deadline = Date.now() + seconds(input) * 1000
    const p = lockPath(c)
    const held = await b.mutex(p).acquire()
    const freed = new Promise((resolve, reject) => {
      setTimeout(() => held.release().then(resolve, reject), 300)
    })
    try {
      return await acquireOutcome(a.mutex(p), { deadline })
    } finally {
      await freed
    }
  },

  async guarded_timeout(input, c) {
    const timeoutMs = input.trim() === '-1' ? -1 : seconds(input) * 1000
    const data = `${lockPath(c)}-data`
    const lease = await a.mutex(lockPath(c)).acquire()
    try {
      const [created] = await lease.guardedWrite([{ op: 'create', path: data, data: 'a' }], {
        timeoutMs,
      })
      await lease.guardedWrite([{ op: 'delete', path: data }])
      return created.path === data ? 'created' : JSON.stringify(created)
    } catch (e) {
      const kind = kindOf(e)
      // Nothing may have been written: the same create must succeed now.
      const again = await outcome(async () => {
        await lease.guardedWrite([{ op: 'create', path: data }])
        await lease.guardedWrite([{ op: 'delete', path: data }])
        return 'ok'
      })
      return again === 'ok' ? kind : 'written-after-timeout'
    } finally {
      await lease.release()
    }
  },

  async guarded_size(input, c) {
    const data = `${lockPath(c)}-data`
    const lease = await a.mutex(lockPath(c)).acquire()
    try {
      const written = await outcome(async () => {
        await lease.guardedWrite([{ op: 'create', path: data, data: Buffer.alloc(Number(input), 'a') }])
        await lease.guardedWrite([{ op: 'delete', path: data }])
        return 'created'
      })
      return lease.state === 'held' ? written : `${written},${lease.state}`
    } finally {
      await lease.release()
    }
  },

  async participants_timeout(input, c) {
    const timeoutMs = input.trim() === '-1' ? -1 : seconds(input) * 1000
    const lock = a.mutex(lockPath(c))
    const lease = await lock.acquire()
    try {
      return await outcome(async () => `listed=${(await lock.participants({ timeoutMs })).length}`)
    } finally {
      await lease.release()
    }
  },

  async semaphore(input, c) {
    return outcome(async () => {
      const sem = a.semaphore(lockPath(c), Number(input))
      // At most 5 s, not a try: the first lease also creates `leases` and its parents.
      const lease = await sem.acquire({ timeoutMs: 5000 })
      await lease.release()
      return 'ok'
    })
  },

  async election_style(input, c) {
    return outcome(async () => {
      const election = a.election(lockPath(c), { style: /** @type {any} */ (input), id: 'conformance' })
      const lead = await election.lead({ timeoutMs: 0 })
      await election.resign(lead)
      return 'ok'
    })
  },

  async election_id(input, c) {
    return outcome(async () => {
      const election = a.election(lockPath(c), { style: 'latch', id: input })
      const lead = await election.lead({ timeoutMs: 0 })
      try {
        const leader = await election.leader()
        return leader !== null && leader.id === input ? 'ok' : 'id-differs'
      } finally {
        await election.resign(lead)
      }
    })
  },

  async lock_delay(input, c) {
    return outcome(async () => {
      const lock = a.mutex(lockPath(c), { lockDelayMs: seconds(input) * 1000 })
      const lease = await lock.tryAcquire()
      if (lease === null) return 'not-acquired'
      await lease.release()
      return 'ok'
    })
  },

  async max_hold(input, c) {
    return outcome(async () => {
      const lock = a.mutex(lockPath(c), { maxHoldMs: seconds(input) * 1000 })
      const lease = await lock.acquire()
      try {
        // The lease's signal: aborted with the ZKLOCK_LOST error, also when lost already.
        const signal = lease.signal
        const lost = signal.aborted
          ? signal.reason
          : await Promise.race([
            new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })),
            new Promise((resolve) => setTimeout(() => resolve(null), 5000).unref()),
          ])
        if (lost === null) return 'held'
        // The core's reason ends the message: "... was lost: <...> lost: max-hold ...".
        const why = /** @type {Error} */ (lost).message.split(' lost: ').pop() || ''
        messages.push(/** @type {Error} */ (lost).message)
        return `lost,${why.split(/[: ]/)[0]}`
      } finally {
        await lease.release()
      }
    })
  },

  async scenario(input, c) {
    const run = scenarios[input] || lease[input] || breaks[input] || queues[input] || peers[input]
    if (!run) throw new Error(`unknown scenario ${JSON.stringify(input)} (case ${c.id})`)
    return run(lockPath(c))
  },
}

/** Issue 33's scenarios (conformance-lease.js), with this runner's helpers. */
const lease = leaseScenarios({ client: () => a, outcome, ownClient, kindOf })
/** Issue 37's scenarios (conformance-break.js). */
const breaks = breakScenarios({ client: () => a, outcome, ownClient })
/** Issue 37's queue position (conformance-queue.js). */
const queues = queueScenarios({ client: () => a, outcome, ownClient })
const peers = peerScenarios({ zk: () => zk, client: () => a, outcome })

/** A client of its own, for the scenarios that close it. */
async function ownClient(fn, options) {
  const c = await Client.connect(zk.servers, options)
  try {
    return await fn(c)
  } finally {
    if (!c.closed) await c.close()
  }
}

/** The participant that is our node. */
async function ourParticipant(lock, lease) {
  const parts = await lock.participants()
  const mine = parts.find((p) => p.node === lease.path)
  assert.ok(mine, `our node ${lease.path} is among the participants ${JSON.stringify(parts.map((p) => p.node))}`)
  return mine
}

/** Waits (up to 5 s) until an election lists `n` participants. */
async function waitForParticipants(election, n) {
  for (let i = 0; i < 100; i += 1) {
    if ((await election.participants()).length === n) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`the election on ${election.path} never had ${n} participants`)
}

/** Leads a `style` election on `p`; the `field` of our node among its participants. */
function ourElectionNode(p, style, field) {
  return outcome(async () => {
    const election = a.election(p, { style })
    const lead = await election.lead()
    try {
      const mine = (await election.participants()).find((x) => x.node === lead.path)
      assert.ok(mine, `our node ${lead.path} is among the participants`)
      return mine[field]
    } finally {
      await election.resign(lead)
    }
  })
}

const scenarios = {
  'reenter-same-owner': (p) =>
    outcome(async () => {
      const m = a.mutex(p)
      return m.using(async () => {
        const second = await m.acquire()
        const count = m.holdCount
        await second.release()
        return count === 2 ? 'held-twice' : `hold count ${count}`
      })
    }),

  'concurrent-callers-one-value': (p) =>
    outcome(async () => {
      // Five async callers of one Mutex object, started together (issue 50).
      const m = a.mutex(p)
      let inside = 0
      let most = 0
      const tokens = []
      const counted = await Promise.all(
        Array.from({ length: 5 }, () =>
          m.using(async (lease) => {
            most = Math.max(most, ++inside)
            tokens.push(lease.token)
            const nested = await m.acquire()
            const ok = m.holdCount === 2 && nested.token === lease.token
            await new Promise((resolve) => setTimeout(resolve, 20))
            await nested.release()
            inside--
            return ok
          }),
        ),
      )
      const up = tokens.length === 5 && tokens.every((t, i) => i === 0 || tokens[i - 1] < t)
      return [
        most === 1 ? 'excluded' : 'overlapped',
        up ? 'tokens-up' : 'tokens-not-up',
        counted.every(Boolean) ? 'counted-up' : 'not-counted',
      ].join(',')
    }),

  'second-owner-try': (p) =>
    outcome(async () => {
      const held = await a.mutex(p).acquire()
      try {
        const lease = await a.mutex(p).tryAcquire()
        if (lease === null) return 'not-acquired'
        await lease.release()
        return 'acquired'
      } finally {
        await held.release()
      }
    }),

  'other-client-try': (p) =>
    outcome(async () => {
      const held = await a.mutex(p).acquire()
      try {
        const lease = await b.mutex(p).tryAcquire()
        if (lease === null) return 'not-acquired'
        await lease.release()
        return 'acquired'
      } finally {
        await held.release()
      }
    }),

  'release-twice': async (p) => {
    const lease = await a.mutex(p).acquire()
    await lease.release()
    return outcome(async () => {
      await lease.release()
      return 'ok'
    })
  },

  'lock-after-close': () =>
    ownClient(async (c) => {
      await c.close()
      return outcome(() => {
        c.mutex('/conformance/node/after-close')
        return 'ok'
      })
    }),

  'acquire-after-close': (p) =>
    ownClient(async (c) => {
      const m = c.mutex(p)
      await c.close()
      return acquireOutcome(m)
    }),

  upgrade: (p) =>
    outcome(async () => {
      const rw = a.rwLock(p)
      return rw.read.using(() => acquireOutcome(rw.write, { timeoutMs: 5000 }))
    }),

  downgrade: (p) =>
    outcome(async () => {
      const rw = a.rwLock(p)
      return rw.write.using(() => acquireOutcome(rw.read, { timeoutMs: 5000 }))
    }),

  'state-held': (p) =>
    outcome(async () => {
      const lease = await a.mutex(p).acquire()
      const state = lease.state
      await lease.release()
      return state
    }),

  'state-released': (p) =>
    outcome(async () => {
      const lease = await a.mutex(p).acquire()
      await lease.release()
      return lease.state
    }),

  'state-lost-on-close': (p) =>
    ownClient(async (c) =>
      outcome(async () => {
        const lease = await c.mutex(p).acquire()
        await c.close()
        return lease.state
      }),
    ),

  // Node's idiom: the state when subscribing, then the lease's events ('resumed' is held again).
  subscription: (p) =>
    ownClient(async (c) =>
      outcome(async () => {
        const lease = await c.mutex(p).acquire()
        const heard = [lease.state]
        let lost
        const gotLost = new Promise((resolve) => (lost = resolve))
        lease.on('suspended', () => heard.push('suspended'))
        lease.on('resumed', () => heard.push('held'))
        lease.on('lost', () => {
          heard.push('lost')
          lost()
        })
        await c.close()
        await Promise.race([gotLost, new Promise((r) => setTimeout(r, 5000))])
        await new Promise((r) => setTimeout(r, 300))
        return heard.join(',')
      }),
    ),

  'release-outcome': (p) =>
    outcome(async () => {
      const lease = await a.mutex(p).acquire()
      return lease.release()
    }),

  'release-outcome-reentrant': (p) =>
    outcome(async () => {
      const m = a.mutex(p)
      return m.using(async () => (await m.acquire()).release())
    }),

  'release-outcome-lost': (p) =>
    ownClient(async (c) =>
      outcome(async () => {
        const lease = await c.mutex(p).acquire()
        await c.close()
        return lease.release()
      }),
    ),

  'kind-mutex': (p) =>
    outcome(async () => {
      const m = a.mutex(p)
      const lease = await m.acquire()
      try {
        return (await ourParticipant(m, lease)).kind
      } finally {
        await lease.release()
      }
    }),

  'kind-read': (p) =>
    outcome(async () => {
      const rw = a.rwLock(p)
      const lease = await rw.read.acquire()
      try {
        return (await ourParticipant(rw.read, lease)).kind
      } finally {
        await lease.release()
      }
    }),

  'kind-write': (p) =>
    outcome(async () => {
      const rw = a.rwLock(p)
      const lease = await rw.write.acquire()
      try {
        return (await ourParticipant(rw.write, lease)).kind
      } finally {
        await lease.release()
      }
    }),

  'semaphore-fills': (p) =>
    outcome(async () => {
      const one = await a.semaphore(p, 2).acquire()
      const two = await b.semaphore(p, 2).acquire()
      try {
        return await ownClient(async (c) => {
          const lease = await c.semaphore(p, 2).tryAcquire()
          if (lease === null) return 'not-acquired'
          await lease.release()
          return 'acquired'
        })
      } finally {
        await one.release()
        await two.release()
      }
    }),

  'semaphore-two-leases-one-value': (p) =>
    outcome(async () => {
      const sem = a.semaphore(p, 2)
      const first = await sem.acquire()
      try {
        const second = await sem.tryAcquire()
        if (second === null) return 'not-acquired'
        const same = second.path === first.path
        await second.release()
        return same ? 'same-node' : 'acquired'
      } finally {
        await first.release()
      }
    }),

  'semaphore-mutex-not-reentrant': (p) =>
    outcome(async () => {
      const sem = a.semaphoreMutex(p)
      const held = await sem.acquire()
      try {
        const again = await sem.tryAcquire()
        if (again === null) return 'not-acquired'
        await again.release()
        return 'acquired'
      } finally {
        await held.release()
      }
    }),

  'kind-lease': (p) =>
    outcome(async () => {
      const sem = a.semaphore(p, 2)
      const lease = await sem.acquire()
      try {
        return (await ourParticipant(sem, lease)).kind
      } finally {
        await lease.release()
      }
    }),

  'revoke-requested': (p) =>
    outcome(async () => {
      const lease = await a.mutex(p).acquire()
      try {
        const heard = new Promise((resolve) => {
          lease.once('revokeRequested', () => resolve('revoke-requested'))
          setTimeout(() => resolve('not-requested'), 5_000).unref()
        })
        await b.revoke(p)
        return await heard
      } finally {
        await lease.release()
      }
    }),

  'connection-states': () =>
    ownClient(async (c) =>
      outcome(async () => {
        const heard = [c.state]
        let lost
        const gotLost = new Promise((resolve) => (lost = resolve))
        c.on('state', (state) => {
          heard.push(state)
          if (state === 'lost') lost()
        })
        await c.close()
        await Promise.race([gotLost, new Promise((r) => setTimeout(r, 5000))])
        await new Promise((r) => setTimeout(r, 300))
        return heard.join(',')
      }),
    ),

  'cancel-waiting-acquire': (p) =>
    ownClient(async (c) =>
      outcome(async () => {
        const held = await b.mutex(p).acquire()
        try {
          const abort = new AbortController()
          setTimeout(() => abort.abort(), 200)
          const result = await outcome(async () => {
            const lease = await c.mutex(p).acquire({ signal: abort.signal })
            await lease.release()
            return 'acquired'
          })
          const queue = await b.mutex(p).participants()
          return queue.length === 1 ? result : 'left-node'
        } finally {
          await held.release()
        }
      }),
    ),

  'election-handover': (p) =>
    outcome(async () => {
      const ea = a.election(p, { style: 'selector', id: 'a' })
      const eb = b.election(p, { style: 'selector', id: 'b' })
      const leadA = await ea.lead()
      const tokenA = leadA.token
      const waiting = eb.lead()
      await waitForParticipants(ea, 2)
      await ea.resign(leadA)
      const leadB = await waiting
      const leader = await ea.leader()
      const up = leadB.token > tokenA ? 'token-up' : 'token-down'
      await eb.resign(leadB)
      return `${leader === null ? 'none' : leader.id},${up}`
    }),

  'election-requeue': (p) =>
    outcome(async () => {
      const ea = a.election(p, { style: 'latch', id: 'a' })
      const eb = b.election(p, { style: 'latch', id: 'b' })
      const leadA = await ea.lead()
      const waiting = eb.lead()
      await waitForParticipants(ea, 2)
      const again = ea.resign(leadA, { requeue: true })
      const leadB = await waiting
      await waitForParticipants(ea, 2)
      const order = (await ea.participants()).map((x) => x.id)
      await eb.resign(leadB)
      await (await again).release()
      return order.join(',')
    }),

  'election-mixed-layouts': (p) =>
    outcome(async () => {
      const theirs = await b.election(p, { style: 'latch', id: 'latch' }).lead()
      try {
        const result = await outcome(async () => {
          const lead = await a.election(p, { style: 'selector', id: 'selector' }).lead({ timeoutMs: 0 })
          await lead.release()
          return 'led'
        })
        const left = (await a.mutex(p).participants()).length
        return left === 1 ? result : 'left-node'
      } finally {
        await theirs.release()
      }
    }),

  'election-observe': (p) =>
    outcome(async () => {
      const watch = a.observeLeader(p)
      const id = (/** @type {any} */ r) => (r.done ? 'done' : r.value === null ? 'none' : r.value.id)
      try {
        const seen = [id(await watch.next({ timeoutMs: 10_000 }))]
        const ea = b.election(p, { style: 'selector', id: 'a' })
        const lead = await ea.lead()
        seen.push(id(await watch.next({ timeoutMs: 10_000 })))
        await ea.resign(lead)
        seen.push(id(await watch.next({ timeoutMs: 10_000 })))
        return seen.join(',')
      } finally {
        await watch.return()
      }
    }),

  'election-proclaim': (p) =>
    outcome(async () => {
      const ea = a.election(p, { style: 'latch', id: 'a' })
      const lead = await ea.lead()
      try {
        await ea.proclaim(lead, 'p-data')
        const leader = await b.election(p, { style: 'latch' }).leader()
        return leader === null ? 'none' : leader.id
      } finally {
        await ea.resign(lead)
      }
    }),

  'kind-latch': (p) => ourElectionNode(p, 'latch', 'kind'),

  'library-kazoo-style': (p) => ourElectionNode(p, 'kazoo', 'library'),

  'check-token': (p) =>
    outcome(async () => {
      const lease = await a.mutex(p).acquire()
      const before = await b.check(p, lease.token)
      await lease.release()
      const after = await b.check(p, lease.token)
      return `${before},${after}`
    }),

  'valid-until': (p) =>
    ownClient(async (c) =>
      outcome(async () => {
        const lease = await c.mutex(p).acquire()
        const until = lease.validUntil()
        const now = Date.now()
        // The client's session timeout: the default 10 s (the server may only shorten it).
        const first = until === null ? 'none' : until <= now ? 'past' : until > now + 10_000 ? 'beyond' : 'ahead'
        await c.close()
        const second = lease.validUntil() === null ? 'none' : 'some'
        return `${first},${second}`
      }),
    ),

  'revoke-not-held': (p) =>
    outcome(async () => {
      await a.revoke(p)
      return 'revoked'
    }),

  library: (p) =>
    outcome(async () => {
      const m = a.mutex(p)
      const lease = await m.acquire()
      try {
        return (await ourParticipant(m, lease)).library
      } finally {
        await lease.release()
      }
    }),

  'stats-outcomes': (p) =>
    ownClient(async (c) =>
      outcome(async () => {
        const heldElsewhere = await b.mutex(p).acquire()
        const m = c.mutex(p)
        assert.equal(await m.tryAcquire(), null)
        await heldElsewhere.release()
        const lease = await m.acquire({ timeoutMs: 10_000 })
        const held = c.stats().held
        await lease.release()
        const s = c.stats()
        return `acquired=${s.acquired},timed_out=${s.timedOut},held=${held},after=${s.held},holds=${s.hold.count}`
      }),
    ),

  'stats-lost': (p) =>
    ownClient(async (c) =>
      outcome(async () => {
        const lease = await c.mutex(p).acquire()
        await c.close()
        assert.equal(lease.state, 'lost')
        const s = c.stats()
        return `lost=${s.lost},held=${s.held}`
      }),
    ),

  'guarded-write': (p) =>
    outcome(async () => {
      const data = `${p}-data`
      const lease = await a.mutex(p).acquire()
      try {
        const [created] = await lease.guardedWrite([{ op: 'create', path: data, data: 'a' }])
        const [set, deleted] = await lease.guardedWrite([
          { op: 'set_data', path: data, data: 'b' },
          { op: 'delete', path: data },
        ])
        return `${created.path === data ? 'created' : JSON.stringify(created)},version=${set.version},${deleted.op === 'delete' ? 'deleted' : JSON.stringify(deleted)}`
      } finally {
        await lease.release()
      }
    }),

  'guarded-write-lost': (p) =>
    ownClient(async (c) => {
      const data = `${p}-data`
      const lease = await c.mutex(p).acquire()
      await c.close()
      const first = await outcome(async () => {
        await lease.guardedWrite([{ op: 'create', path: data, data: 'late' }])
        return 'written'
      })
      const other = await b.mutex(p).acquire()
      try {
        await other.guardedWrite([{ op: 'create', path: data }])
      } catch {
        return 'written-after-loss'
      } finally {
        await other.guardedWrite([{ op: 'delete', path: data }]).catch(() => {})
        await other.release()
      }
      return first
    }),

  'guarded-write-unknown-op': (p) =>
    outcome(async () => {
      const lease = await a.mutex(p).acquire()
      try {
        await lease.guardedWrite([{ op: /** @type {any} */ ('append'), path: `${p}-data`, data: 'x' }])
        return 'written'
      } finally {
        await lease.release()
      }
    }),
}

// The tests ---------------------------------------------------------------------------------

const cases = readCases()
const counts = { passed: 0, failed: 0, notApplicable: 0 }

// The fault proxy: issue 53's scenarios cut, refuse and count through it (conformance-peers.js).
useZooKeeper({ proxy: true, clients: [{}, {}] }, (s) => ([zk, a, b] = [s.zk, ...s.clients]))

test.after(() => {
  console.log(
    `conformance (node): ${cases.length} cases, ${counts.passed} passed, ${counts.failed} failed, ` +
      `${counts.notApplicable} n/a`,
  )
})

test(`the conformance file holds at least 40 cases`, () => {
  assert.ok(cases.length >= 40, `${CASES_FILE} has ${cases.length} cases`)
})

function shown(text) {
  return text.length > 40 ? `${text.slice(0, 37)}... (${text.length} chars)` : text
}

for (const c of cases) {
  const name = `case ${c.id}: ${c.op} "${shown(c.rawInput)}" gives ${c.expected}`
  const na = NOT_APPLICABLE[`${c.op}:${c.rawInput}`] || NOT_APPLICABLE[c.op]
  if (na) {
    test(name, (t) => {
      counts.notApplicable += 1
      t.skip(`n/a: ${na}`)
    })
    continue
  }
  test(name, async () => {
    let ok = false
    try {
      const run = ops[c.op]
      if (!run) throw new Error(`unknown op ${JSON.stringify(c.op)} (case ${c.id}, line ${c.line})`)
      messages = []
      const input = decodeInput(c.rawInput, zk.servers)
      const got = await run(input, c)
      assert.equal(got, c.expected, `case ${c.id} (cases.txt line ${c.line})`)
      for (const m of messages) {
        assert.ok(
          m.length <= MAX_MESSAGE,
          `case ${c.id}: an error message of ${m.length} characters (at most ${MAX_MESSAGE}): ${m.slice(0, 200)}...`,
        )
      }
      ok = true
    } finally {
      if (ok) counts.passed += 1
      else counts.failed += 1
    }
  })
}
