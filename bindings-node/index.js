// zklock for Node: distributed locks on Apache ZooKeeper.
//
// The native addon (src/lib.rs) does the work on the zklock core's runtime; this file gives it
// the shape a Node developer expects: argument checks that throw ZKLOCK_INVALID_ARGUMENT,
// AbortSignal for cancelling an acquire and for a lost lease, `await using`, `using(fn)`,
// and lease events.
'use strict'

const { EventEmitter } = require('node:events')
const path = require('node:path')

/** @type {any} */
let native
try {
  native = require('./zklock.node')
} catch (e) {
  const err = new Error(
    `zklock: cannot load the native addon ${path.join(__dirname, 'zklock.node')} (${e.message}); ` +
      'build it with `npm install` (or `node scripts/build.js`) inside the package directory',
  )
  err.code = 'ZKLOCK_NATIVE_MISSING'
  err.cause = e
  throw err
}

/** Every `err.code` a zklock call rejects or throws with (API.md's error table). */
const ErrorCode = Object.freeze({
  TIMEOUT: 'ZKLOCK_TIMEOUT',
  ABORTED: 'ZKLOCK_ABORTED',
  LOST: 'ZKLOCK_LOST',
  SESSION_EXPIRED: 'ZKLOCK_SESSION_EXPIRED',
  CONNECTION: 'ZKLOCK_CONNECTION',
  NOT_HELD: 'ZKLOCK_NOT_HELD',
  UPGRADE: 'ZKLOCK_UPGRADE',
  INVALID_ARGUMENT: 'ZKLOCK_INVALID_ARGUMENT',
  CLOSED: 'ZKLOCK_CLOSED',
  PERMISSION: 'ZKLOCK_PERMISSION',
  ZOOKEEPER: 'ZKLOCK_ZOOKEEPER',
})
const knownCodes = new Set(Object.values(ErrorCode))

function zkError(code, message, cause) {
  const err = cause === undefined ? new Error(message) : new Error(message, { cause })
  err.code = code
  return err
}

/** True for an error thrown or rejected by zklock (it has one of the `ErrorCode` codes). */
function isZkLockError(e) {
  return e instanceof Error && knownCodes.has(/** @type {any} */ (e).code)
}

function invalid(message) {
  return zkError(ErrorCode.INVALID_ARGUMENT, message)
}

// napi's own argument-conversion statuses: the caller passed something of the wrong type.
const napiArgumentCodes = new Set([
  'InvalidArg', 'ObjectExpected', 'StringExpected', 'NameExpected', 'FunctionExpected',
  'NumberExpected', 'BooleanExpected', 'ArrayExpected', 'BigintExpected',
])

/** Gives an error from the native side one of our codes (it has one already, nearly always). */
function translate(e) {
  if (isZkLockError(e)) {
    // Errors made on the native side settle a promise from an empty JS stack: give them the
    // caller's (async) stack instead.
    if (typeof e.stack !== 'string' || !e.stack.includes('\n    at ')) {
      Error.captureStackTrace(e, translate)
    }
    return e
  }
  if (e instanceof Error && napiArgumentCodes.has(/** @type {any} */ (e).code)) {
    return zkError(ErrorCode.INVALID_ARGUMENT, e.message, e)
  }
  const message = e instanceof Error ? e.message : String(e)
  return zkError(ErrorCode.ZOOKEEPER, `internal error: ${message}`, e)
}

// Argument checks -------------------------------------------------------------------------

function checkString(value, what) {
  if (typeof value !== 'string') {
    throw invalid(`${what} must be a string, got ${describe(value)}`)
  }
  return value
}

function checkOptions(value, what) {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(`${what} must be an object, got ${describe(value)}`)
  }
  return value
}

/** A duration in milliseconds: undefined/null/Infinity mean "none". */
function checkMillis(value, what, allowInfinity) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw invalid(`${what} must be a number of milliseconds, got ${describe(value)}`)
  }
  if (value < 0) {
    throw invalid(`${what} must be a non-negative number of milliseconds, got ${value}`)
  }
  if (value === Infinity) {
    if (allowInfinity) return undefined
    throw invalid(`${what} must be finite`)
  }
  return value
}

function checkSignal(value) {
  if (value === undefined || value === null) return undefined
  if (
    typeof value !== 'object' ||
    typeof value.aborted !== 'boolean' ||
    typeof value.addEventListener !== 'function'
  ) {
    throw invalid(`signal must be an AbortSignal, got ${describe(value)}`)
  }
  return value
}

function acquireOptions(options) {
  const o = checkOptions(options, 'acquire options')
  return {
    timeoutMs: checkMillis(o.timeoutMs, 'timeoutMs', true),
    signal: checkSignal(o.signal),
  }
}

function describe(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return `${typeof value} ${String(value)}`
  }
  return typeof value
}

const kInternal = Symbol('zklock.internal')

function internalOnly(token, what) {
  if (token !== kInternal) {
    throw invalid(`${what} objects are made by zklock (use Client.connect, client.mutex, ...)`)
  }
}

// Client ----------------------------------------------------------------------------------

/** One ZooKeeper session. Make it with `Client.connect`. */
class Client {
  #native

  /** @private */
  constructor(token, nativeClient) {
    internalOnly(token, 'Client')
    this.#native = nativeClient
  }

  /**
   * Connects to `hosts` (`host:port,host:port/optional/chroot`).
   * Options: sessionTimeoutMs, connectTimeoutMs, auth ('user:password'), identity, acl.
   */
  static async connect(hosts, options) {
    checkString(hosts, 'hosts')
    const o = checkOptions(options, 'connect options')
    const nativeOptions = {
      sessionTimeoutMs: checkMillis(o.sessionTimeoutMs, 'sessionTimeoutMs', false),
      connectTimeoutMs: checkMillis(o.connectTimeoutMs, 'connectTimeoutMs', false),
      auth: o.auth === undefined || o.auth === null ? undefined : checkString(o.auth, 'auth'),
      identity:
        o.identity === undefined || o.identity === null
          ? undefined
          : checkString(o.identity, 'identity'),
      acl: o.acl === undefined || o.acl === null ? undefined : checkString(o.acl, 'acl'),
    }
    let nativeClient
    try {
      nativeClient = await native.connect(hosts, nativeOptions)
    } catch (e) {
      throw translate(e)
    }
    return new Client(kInternal, nativeClient)
  }

  /** The connect string. */
  get hosts() {
    return this.#native.hosts
  }

  /** The current ZooKeeper session id. */
  get sessionId() {
    return this.#native.sessionId
  }

  get closed() {
    return this.#native.closed
  }

  /** An exclusive lock on `path`; re-entrant per Mutex object unless `{ reentrant: false }`. */
  mutex(path, options) {
    checkString(path, 'path')
    const o = checkOptions(options, 'mutex options')
    if (o.reentrant !== undefined && typeof o.reentrant !== 'boolean') {
      throw invalid(`reentrant must be a boolean, got ${describe(o.reentrant)}`)
    }
    return new Mutex(kInternal, call(() => this.#native.mutex(path, o.reentrant !== false)))
  }

  /** A read/write lock on `path`: `.read` and `.write` are its two sides. */
  rwLock(path) {
    checkString(path, 'path')
    const [read, write] = call(() => this.#native.rwLock(path))
    return new RwLock(kInternal, path, new Lock(kInternal, read), new Lock(kInternal, write))
  }

  /** Exclusive locks on several paths taken as one (all or nothing, in path order). */
  multiLock(paths) {
    if (!Array.isArray(paths)) {
      throw invalid(`paths must be an array of strings, got ${describe(paths)}`)
    }
    paths.forEach((p, i) => checkString(p, `paths[${i}]`))
    return new MultiLock(kInternal, call(() => this.#native.multiLock(paths)), [...paths])
  }

  /** Closes the session: every lease taken through it is lost, later calls reject. */
  async close() {
    try {
      await this.#native.close()
    } catch (e) {
      throw translate(e)
    }
  }

  async [Symbol.asyncDispose]() {
    await this.close()
  }
}

function call(fn) {
  try {
    return fn()
  } catch (e) {
    throw translate(e)
  }
}

// Locks -----------------------------------------------------------------------------------

/** A lock on one path (a mutex or one side of a RwLock), or a multi-lock. */
class Lock {
  #native

  /** @private */
  constructor(token, nativeLock) {
    internalOnly(token, 'Lock')
    this.#native = nativeLock
  }

  /** The lock's path (for a multi-lock, its paths joined with commas). */
  get path() {
    return this.#native.path
  }

  /** How many holds this object has now (0 when not held). */
  get holdCount() {
    return this.#native.holdCount
  }

  /**
   * Waits until the lock is ours. `timeoutMs` (0 = one attempt) rejects with ZKLOCK_TIMEOUT,
   * an aborted `signal` with ZKLOCK_ABORTED; neither leaves a node behind.
   */
  async acquire(options) {
    const { timeoutMs, signal } = acquireOptions(options)
    if (signal && signal.aborted) throw abortError(this.path, signal)
    const pending = call(() => this.#native.startAcquire(timeoutMs))
    const onAbort = () => pending.cancel()
    if (signal) signal.addEventListener('abort', onAbort, { once: true })
    let nativeLease
    try {
      nativeLease = await pending.wait()
    } catch (e) {
      if (signal && signal.aborted && isZkLockError(e) && e.code === ErrorCode.ABORTED) {
        throw abortError(this.path, signal)
      }
      throw translate(e)
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort)
    }
    const lease = new Lease(kInternal, nativeLease, this.path)
    if (signal && signal.aborted) {
      // Aborted just as the lock came: give it back, the caller asked not to have it.
      await lease.release().catch(() => {})
      throw abortError(this.path, signal)
    }
    return lease
  }

  /** One attempt: a Lease, or null when someone else holds the lock. */
  async tryAcquire() {
    let nativeLease
    try {
      nativeLease = await this.#native.tryAcquire()
    } catch (e) {
      throw translate(e)
    }
    return nativeLease ? new Lease(kInternal, nativeLease, this.path) : null
  }

  /**
   * Runs `fn(lease)` under the lock and releases it afterwards, also when `fn` throws.
   * Resolves with what `fn` returns. `options` are `acquire`'s.
   */
  async using(fn, options) {
    if (typeof fn !== 'function') throw invalid(`fn must be a function, got ${describe(fn)}`)
    const lease = await this.acquire(options)
    let result
    try {
      result = await fn(lease)
    } catch (e) {
      await lease.release().catch(() => {})
      throw e
    }
    await lease.release()
    return result
  }

  /** The queue: holder(s) first, then waiters in order. */
  async participants() {
    try {
      return await this.#native.participants()
    } catch (e) {
      throw translate(e)
    }
  }
}

/** An exclusive lock (Curator's InterProcessMutex). */
class Mutex extends Lock {}

/** Several exclusive locks taken as one. */
class MultiLock extends Lock {
  #paths

  /** @private */
  constructor(token, nativeLock, paths) {
    super(token, nativeLock)
    this.#paths = paths
  }

  get paths() {
    return [...this.#paths]
  }
}

/** A read/write lock: any number of readers or one writer. */
class RwLock {
  #path

  /** @private */
  constructor(token, path, read, write) {
    internalOnly(token, 'RwLock')
    this.#path = path
    /** @readonly */
    this.read = read
    /** @readonly */
    this.write = write
    Object.freeze(this)
  }

  get path() {
    return this.#path
  }

  participants() {
    return this.read.participants()
  }
}

function abortError(lockPath, signal) {
  return zkError(ErrorCode.ABORTED, `the acquire of ${lockPath} was aborted`, signal.reason)
}

// Leases ----------------------------------------------------------------------------------

/**
 * A held lock. Events: 'suspended' (connection lost, holding is uncertain), 'resumed' (back
 * to held), 'lost' (final, once, with the ZKLOCK_LOST error). `signal` aborts when lost.
 * A lease stays held until released or lost, also when no longer referenced.
 */
class Lease extends EventEmitter {
  #native
  #lockPath
  #controller = new AbortController()
  #last = 'held'
  #lost = false
  #releasing = null

  /** @private */
  constructor(token, nativeLease, lockPath) {
    super()
    internalOnly(token, 'Lease')
    this.#native = nativeLease
    this.#lockPath = lockPath
    nativeLease.onState((state) => this.#onState(state))
    const now = nativeLease.state
    if (now !== 'held') this.#onState(now)
  }

  #onState(state) {
    if (this.#releasing) return
    try {
      const previous = this.#last
      this.#last = state
      if (state === 'suspended' && previous !== 'suspended') {
        this.emit('suspended')
      } else if (state === 'held' && previous === 'suspended') {
        this.emit('resumed')
      } else if (state === 'lost' && !this.#lost) {
        this.#lost = true
        const reason = this.#native.lostReason
        const err = zkError(
          ErrorCode.LOST,
          `the lease on ${this.#lockPath} (node ${this.path}, token ${this.token}) was lost` +
            (reason ? `: ${reason}` : ''),
        )
        this.#controller.abort(err)
        this.emit('lost', err)
      }
    } catch (e) {
      // A throwing listener is the listener's bug: report it like any uncaught exception.
      process.nextTick(() => {
        throw e
      })
    }
  }

  on(event, listener) {
    return super.on(event, checkListener(event, listener))
  }

  addListener(event, listener) {
    return super.addListener(event, checkListener(event, listener))
  }

  once(event, listener) {
    return super.once(event, checkListener(event, listener))
  }

  prependListener(event, listener) {
    return super.prependListener(event, checkListener(event, listener))
  }

  prependOnceListener(event, listener) {
    return super.prependOnceListener(event, checkListener(event, listener))
  }

  /** The fencing token (bigint): strictly increases from one holder of the lock to the next. */
  get token() {
    return this.#native.token
  }

  /** Every member's token (a multi-lock has several), in path order. */
  get tokens() {
    return this.#native.tokens
  }

  /** Full path of our lock node (the first member's for a multi-lock). */
  get path() {
    return this.#native.path
  }

  /** Full paths of every member's node. */
  get paths() {
    return this.#native.paths
  }

  /** The path of the lock this lease holds. */
  get lockPath() {
    return this.#lockPath
  }

  /** 'held' | 'suspended' | 'lost' | 'released' */
  get state() {
    if (this.#lost) return 'lost'
    return this.#native.state
  }

  /** An AbortSignal aborted once when the lease is lost; its reason is a ZKLOCK_LOST error. */
  get signal() {
    return this.#controller.signal
  }

  /**
   * Releases the lease: 'released' (node deleted), 'stillHeld' (a re-entrant hold went down)
   * or 'wasLost'. Releasing twice rejects with ZKLOCK_NOT_HELD.
   */
  async release() {
    if (this.#releasing) {
      throw zkError(ErrorCode.NOT_HELD, `the lease on ${this.#lockPath} was already released`)
    }
    this.#releasing = this.#native.release()
    try {
      return await this.#releasing
    } catch (e) {
      throw translate(e)
    }
  }

  /** `await using lease = await mutex.acquire()` releases at block exit. */
  async [Symbol.asyncDispose]() {
    if (this.#releasing) {
      await this.#releasing.catch(() => {})
      return
    }
    await this.release()
  }
}

const leaseEvents = new Set(['suspended', 'resumed', 'lost', 'newListener', 'removeListener'])

function checkListener(event, listener) {
  if (!leaseEvents.has(event)) {
    throw invalid(
      `a lease emits 'suspended', 'resumed' and 'lost', not ${describe(event)}`,
    )
  }
  if (typeof listener !== 'function') {
    throw invalid(`the ${String(event)} listener must be a function, got ${describe(listener)}`)
  }
  return listener
}

exports.Client = Client
exports.Lock = Lock
exports.Mutex = Mutex
exports.RwLock = RwLock
exports.MultiLock = MultiLock
exports.Lease = Lease
exports.ErrorCode = ErrorCode
exports.isZkLockError = isZkLockError
