// zklock for Node: distributed locks on Apache ZooKeeper.
//
// The native addon (src/lib.rs) hands every decision to the zklock core (re-entrancy per lock
// object, the timeout rule, states, names); this file only gives it the shape a Node developer
// expects: type checks that throw ZKLOCK_INVALID_ARGUMENT, AbortSignal for cancelling an acquire
// and for a lost lease, `await using`, `using(fn)`, and lease events.
'use strict'

const { EventEmitter } = require('node:events')
const diagnosticsChannel = require('node:diagnostics_channel')
const path = require('node:path')

/** @type {any} */
const native = loadNative()

/**
 * The addon: ./zklock.node when built from a source checkout (its npm install builds it), else
 * the prebuilt one a packaged zklock (make dist) carries in prebuilds/<platform key>/.
 */
function loadNative() {
  const fs = require('node:fs')
  const built = path.join(__dirname, 'zklock.node')
  const key = fs.existsSync(built) ? null : platformKey()
  const file = key === null ? built : path.join(__dirname, 'prebuilds', key, 'zklock.node')
  const fromSource = 'build it from a zklock source checkout with Rust (https://rustup.rs) ' +
    'installed: `npm install <checkout>/bindings-node`'
  if (key !== null && !fs.existsSync(file)) {
    let have = []
    try { have = fs.readdirSync(path.join(__dirname, 'prebuilds')) } catch {}
    const carried = have.length ? `prebuilt addons for ${have.join(', ')} only` : 'no prebuilt addon'
    const err = new Error(
      `zklock: no native addon for this platform (${key}); this package carries ${carried}. ` +
        `To use zklock here, ${fromSource}`,
    )
    err.code = 'ZKLOCK_NATIVE_MISSING'
    throw err
  }
  try {
    return require(file)
  } catch (e) {
    const err = new Error(`zklock: cannot load the native addon ${file} (${e.message}); ${fromSource}`)
    err.code = 'ZKLOCK_NATIVE_MISSING'
    err.cause = e
    throw err
  }
}

/** `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`...: the prebuilds/ folder for this process. */
function platformKey() {
  let key = `${process.platform}-${process.arch}`
  if (process.platform === 'linux') {
    // glibc or musl: Node's report names the glibc it runs on, and nothing under musl.
    const header = /** @type {any} */ (process.report?.getReport())?.header
    key += header?.glibcVersionRuntime ? '-gnu' : '-musl'
  }
  return key
}

/** Every `err.code` a zklock call rejects or throws with (docs/contract.md's error kinds). */
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
  /** A bug in zklock (the core's Internal kind, e.g. a panicked task). */
  INTERNAL: 'ZKLOCK_INTERNAL',
  /** A write was sent but its answer was lost with the connection: read back before retrying. */
  OUTCOME_UNKNOWN: 'ZKLOCK_OUTCOME_UNKNOWN',
  /** An election refused to lead beside a node of another layout (the message names it). */
  CONFLICT: 'ZKLOCK_CONFLICT',
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
  return zkError(ErrorCode.INTERNAL, `internal error: ${message}`, e)
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

/** A number of milliseconds (undefined/null: absent); its value is the core's to judge. */
function checkMillis(value, what) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number') {
    throw invalid(`${what} must be a number of milliseconds, got ${describe(value)}`)
  }
  return value
}

function checkSignal(value) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'object') {
    throw invalid(`signal must be an AbortSignal, got ${describe(value)}`)
  }
  // What acquire() uses of it, checked before anything is acquired.
  const missing = [
    typeof value.aborted !== 'boolean' && 'a boolean aborted',
    typeof value.addEventListener !== 'function' && 'addEventListener',
    typeof value.removeEventListener !== 'function' && 'removeEventListener',
  ].filter(Boolean)
  if (missing.length) {
    throw invalid(`signal must be an AbortSignal, got an object without ${missing.join(', ')}`)
  }
  return value
}

/** A look-alike signal's own method threw: the caller's input is at fault. */
function signalMethodFailed(method, e) {
  const message = e instanceof Error ? e.message : String(e)
  return zkError(ErrorCode.INVALID_ARGUMENT, `signal.${method} threw: ${message}`, e)
}

/**
 * An absolute deadline: a Date or milliseconds since the epoch (Date.now()'s clock); absent:
 * undefined. Its value (passed, NaN of an invalid Date) is the core's to judge.
 */
function checkDeadline(value) {
  if (value === undefined || value === null) return undefined
  if (value instanceof Date) return value.getTime()
  if (typeof value !== 'number') {
    throw invalid(`deadline must be a Date or milliseconds since the epoch, got ${describe(value)}`)
  }
  return value
}

function acquireOptions(options) {
  const o = checkOptions(options, 'acquire options')
  return {
    timeoutMs: checkMillis(o.timeoutMs, 'timeoutMs'),
    deadline: checkDeadline(o.deadline),
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

/** A fencing token as tokens are shown (a bigint); an integer number is taken as one too. */
function tokenArgument(token) {
  if (typeof token === 'bigint') return token
  if (typeof token === 'number' && Number.isSafeInteger(token)) return BigInt(token)
  throw invalid(`token must be a bigint (lease.token) or a safe integer number, got ${describe(token)}`)
}

const kInternal = Symbol('zklock.internal')
const kNativeLease = Symbol('zklock.nativeLease')

function internalOnly(token, what) {
  if (token !== kInternal) {
    throw invalid(`${what} objects are made by zklock (use Client.connect, client.mutex, ...)`)
  }
}

// Observing -------------------------------------------------------------------------------

/**
 * The core's log records, published on the diagnostics channel `zklock` as
 * `{ level, event, message, fields }`: a settled acquire at 'debug', a new session and a
 * reconnect at 'info', lease state changes (suspended, held again, lost) and session breaks at
 * 'warn'. Quiet by default: nothing is published without a subscriber, and the 'debug' records
 * are asked of the core only when the channel has a subscriber as a client connects. Each JS
 * environment has its own channel and sink (the addon routes a record to the environment its
 * client was made in), so this environment's sink gets its own clients' records only.
 */
const logChannel = diagnosticsChannel.channel('zklock')

function installLogSink() {
  native.setLogSink(
    (record) => {
      if (logChannel.hasSubscribers) logChannel.publish(record)
    },
    logChannel.hasSubscribers ? 'debug' : 'info',
  )
}

/** A guarded write's data: a Buffer, a Uint8Array or a string (UTF-8). */
function writeData(data, where) {
  if (data === undefined || data === null) return undefined
  if (typeof data === 'string') return Buffer.from(data, 'utf8')
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength)
  throw invalid(`${where}.data must be a Buffer, a Uint8Array or a string, got ${describe(data)}`)
}

function checkWrites(writes) {
  if (!Array.isArray(writes)) {
    throw invalid(`guardedWrite() needs an array of writes, got ${describe(writes)}`)
  }
  return writes.map((w, i) => {
    const where = `writes[${i}]`
    if (w === null || typeof w !== 'object') {
      throw invalid(`${where} must be { op, path, data? }, got ${describe(w)}`)
    }
    checkString(w.op, `${where}.op`)
    checkString(w.path, `${where}.path`)
    return { op: w.op, path: w.path, data: writeData(w.data, where) }
  })
}

// Client ----------------------------------------------------------------------------------

// Native clients not closed yet. A process that exits with one open (process.exit(), an
// uncaught exception, the end of the script) closes it synchronously in its 'exit' event, so
// its lock nodes go at once instead of after the session timeout. Kept until closed: an open
// session (and the locks it holds) does not end because a Client object became unreachable.
// A worker thread gets no 'exit' event when terminate()d or stopped with its process: there
// the native side closes them as the worker's environment goes (closeWithEnvironment).
const openClients = new Set()
let exitHookInstalled = false

function closeOpenClients() {
  for (const nativeClient of openClients) {
    try {
      nativeClient.closeSync()
    } catch {
      // Exiting anyway: the session ends with its timeout.
    }
  }
  openClients.clear()
}

// Ctrl-C and SIGTERM -----------------------------------------------------------------------

/** The handlers closeOnSignals() installed, by signal, while installed. */
const signalHandlers = new Map()

function uninstallSignalHandlers() {
  for (const [signal, handler] of signalHandlers) process.removeListener(signal, handler)
  signalHandlers.clear()
}

/**
 * Opt-in: on SIGINT (Ctrl-C) or SIGTERM, close every open client of this thread at once, so
 * that its locks go now instead of after the session timeout, then let the signal do what it
 * would have done. Node's default for these signals kills the process without an 'exit' event,
 * so without this a lock outlives a Ctrl-C by a session timeout.
 *
 * A function of the module, not a connect option: a signal is the process's, not a
 * connection's, and a listener on SIGINT turns off Node's own exit on Ctrl-C, so whether to
 * install one is the application's call, made once where it starts (as with process.on), and
 * it covers every client, connected before or after.
 *
 * When the signal comes, the handlers are removed first (a second Ctrl-C kills at once), the
 * clients are closed synchronously (as at 'exit'), and then, if nothing else listens for that
 * signal, it is raised again, so the process ends by it with Node's default outcome (a shell
 * sees 130 or 143). If the application listens for it too, its listener decides what happens
 * next, as Node would let it. `options.signals` (default ['SIGINT', 'SIGTERM']) picks others.
 * Returns a function that removes the handlers. Signals reach the main thread only: call it
 * there (a worker's clients close when the worker's environment goes, not on a signal).
 */
function closeOnSignals(options) {
  const o = checkOptions(options, 'closeOnSignals options')
  const signals = o.signals === undefined || o.signals === null ? ['SIGINT', 'SIGTERM'] : o.signals
  if (!Array.isArray(signals) || signals.length === 0 || !signals.every((x) => typeof x === 'string' && /^SIG[A-Z0-9]+$/.test(x))) {
    throw invalid(`signals must be a non-empty array of signal names such as 'SIGTERM', got ${describe(signals)}`)
  }
  if (signals.includes('SIGKILL') || signals.includes('SIGSTOP')) {
    throw invalid('SIGKILL and SIGSTOP cannot be caught')
  }
  for (const signal of signals) {
    if (signalHandlers.has(signal)) continue
    const handler = () => {
      uninstallSignalHandlers()
      closeOpenClients()
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal)
    }
    signalHandlers.set(signal, handler)
    process.on(signal, handler)
  }
  return uninstallSignalHandlers
}

/**
 * One ZooKeeper session. Make it with `Client.connect`. Emits 'state' with 'connected',
 * 'suspended' or 'lost' at every change of the connection (kazoo's add_listener).
 */
class Client extends EventEmitter {
  #native
  /** LeaseCores of this client's leases that are not lost or released yet. */
  #leases = new Set()
  /** The core's id of our connection listener while 'state' has listeners, and what it said. */
  #stateListener = null
  #lastState = null

  /** @private */
  constructor(token, nativeClient) {
    super()
    internalOnly(token, 'Client')
    this.#native = nativeClient
    // The core is asked for states only while someone listens; its callback holds the client
    // weakly, so listening does not keep an unreachable client's objects alive.
    super.on('newListener', (event) => {
      if (event === 'state' && this.#stateListener === null) this.#listenToConnection()
    })
    super.on('removeListener', (event) => {
      if (event === 'state' && this.listenerCount('state') === 0 && this.#stateListener !== null) {
        this.#native.removeConnectionListener(this.#stateListener)
        this.#stateListener = null
      }
    })
    nativeClient.closeWithEnvironment()
    openClients.add(nativeClient)
    if (!exitHookInstalled) {
      exitHookInstalled = true
      process.on('exit', closeOpenClients)
    }
  }

  #listenToConnection() {
    const self = new WeakRef(this)
    this.#lastState = this.#native.connectionState
    this.#stateListener = this.#native.onConnection((state) => {
      const client = self.deref()
      // The core tells the current state first: an event is a change only.
      if (client === undefined || state === client.#lastState) return
      client.#lastState = state
      client.emit('state', state)
    })
  }

  /**
   * The connection now: 'connected', 'suspended' (broken; the session may live, its leases are
   * suspended) or 'lost' (the session ended, or the client was closed).
   */
  get state() {
    return this.#native.connectionState
  }

  /**
   * Connects to `hosts` (`host:port,host:port/optional/chroot`).
   * Options: sessionTimeoutMs, connectTimeoutMs, serverTickMs, auth ('user:password'),
   * identity, acl;
   * secure ZooKeeper: tlsCa, tlsCert, tlsKey (PEM file paths, or PEM content as a Buffer or a
   * string holding '-----BEGIN ', as tls.connect takes them), tlsVerifyHostname, saslUser,
   * saslPassword.
   */
  static async connect(hosts, options) {
    checkString(hosts, 'hosts')
    const o = checkOptions(options, 'connect options')
    const nativeOptions = {
      sessionTimeoutMs: checkMillis(o.sessionTimeoutMs, 'sessionTimeoutMs'),
      connectTimeoutMs: checkMillis(o.connectTimeoutMs, 'connectTimeoutMs'),
      serverTickMs: checkMillis(o.serverTickMs, 'serverTickMs'),
      auth: o.auth === undefined || o.auth === null ? undefined : checkString(o.auth, 'auth'),
      identity:
        o.identity === undefined || o.identity === null
          ? undefined
          : checkString(o.identity, 'identity'),
      acl: o.acl === undefined || o.acl === null ? undefined : checkString(o.acl, 'acl'),
    }
    for (const key of ['tlsCa', 'tlsCert', 'tlsKey']) {
      if (o[key] === undefined || o[key] === null) continue
      // PEM content as a Buffer, as tls.connect takes it; the core tells text from a path.
      nativeOptions[key] = Buffer.isBuffer(o[key]) ? o[key].toString('utf8') : checkString(o[key], key)
    }
    for (const key of ['saslUser', 'saslPassword']) {
      if (o[key] !== undefined && o[key] !== null) nativeOptions[key] = checkString(o[key], key)
    }
    if (o.tlsVerifyHostname !== undefined && o.tlsVerifyHostname !== null) {
      if (typeof o.tlsVerifyHostname !== 'boolean') {
        throw invalid(`tlsVerifyHostname must be a boolean, got ${describe(o.tlsVerifyHostname)}`)
      }
      nativeOptions.tlsVerifyHostname = o.tlsVerifyHostname
    }
    let nativeClient
    installLogSink()
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

  /**
   * This client's lock statistics, counted by the core since it connected: acquires by outcome
   * (`acquired`, `timedOut`, `cancelled`, `failed`), `wait` and `hold` times (`{ count, p50,
   * p90, p99, max }` in milliseconds), leases `held` and acquires `waiting` now, `suspended`
   * and `lost` events, `reconnects` and `sessionExpiries`. Works after close too.
   */
  stats() {
    return call(() => this.#native.stats())
  }

  /**
   * An exclusive lock on `path`; re-entrant per Mutex object unless `{ reentrant: false }`.
   * `maxHoldMs`: every lease ends (lost, reason 'max-hold', node deleted) after that long.
   */
  mutex(path, options) {
    checkString(path, 'path')
    const o = checkOptions(options, 'mutex options')
    if (o.reentrant !== undefined && typeof o.reentrant !== 'boolean') {
      throw invalid(`reentrant must be a boolean, got ${describe(o.reentrant)}`)
    }
    const maxHoldMs = checkMillis(o.maxHoldMs, 'maxHoldMs')
    const nativeLock = call(() => this.#native.mutex(path, o.reentrant !== false, maxHoldMs))
    return new Mutex(kInternal, nativeLock, this.#leases)
  }

  /**
   * A counting semaphore of `maxLeases` leases on `path` (Curator's InterProcessSemaphoreV2:
   * every user of the path passes the same N). Never re-entrant: each acquire is a lease.
   */
  semaphore(path, maxLeases, options) {
    checkString(path, 'path')
    if (typeof maxLeases !== 'number') {
      throw invalid(`maxLeases must be a number, got ${describe(maxLeases)}`)
    }
    const maxHoldMs = checkMillis(checkOptions(options, 'semaphore options').maxHoldMs, 'maxHoldMs')
    const nativeLock = call(() => this.#native.semaphore(path, maxLeases, maxHoldMs))
    return new Semaphore(kInternal, nativeLock, this.#leases, maxLeases)
  }

  /** The semaphore of one lease on `path`: excludes Curator's InterProcessSemaphoreMutex. */
  semaphoreMutex(path, options) {
    checkString(path, 'path')
    const maxHoldMs = checkMillis(checkOptions(options, 'semaphoreMutex options').maxHoldMs, 'maxHoldMs')
    const nativeLock = call(() => this.#native.semaphoreMutex(path, maxHoldMs))
    return new Semaphore(kInternal, nativeLock, this.#leases, 1)
  }

  /**
   * Asks the holder of `path` to let go, as Curator's Revoker.attemptRevoke does: sets its
   * node's data to `__REVOKE__` (every lease of a semaphore; `{ node }`, a node's name or full
   * path, asks that one). Resolves with the nodes asked; rejects with ZKLOCK_NOT_HELD when
   * nobody holds `path` or the node is gone. A request: the holder decides.
   */
  async revoke(path, options) {
    checkString(path, 'path')
    const o = checkOptions(options, 'revoke options')
    const node = o.node === undefined || o.node === null ? undefined : checkString(o.node, 'node')
    try {
      return await this.#native.revoke(path, node)
    } catch (e) {
      throw translate(e)
    }
  }

  /**
   * A participant in the leader election on `path`. Options: `style` ('latch', the default:
   * Curator's LeaderLatch; 'selector': Curator's LeaderSelector; 'kazoo': kazoo's Election),
   * `id` (the participant id, its node's data; default: the client's identity), `maxHoldMs`
   * (a leadership ends, lost with reason 'max-hold', after that long; default: no limit).
   */
  election(path, options) {
    checkString(path, 'path')
    const o = checkOptions(options, 'election options')
    const style = o.style === undefined || o.style === null ? undefined : checkString(o.style, 'style')
    const id = o.id === undefined || o.id === null ? undefined : checkString(o.id, 'id')
    const maxHoldMs = checkMillis(o.maxHoldMs, 'maxHoldMs')
    const nativeElection = call(() => this.#native.election(path, style, id, maxHoldMs))
    return new Election(kInternal, nativeElection, this.#leases)
  }

  /**
   * Watches who leads the election on `path` without taking part: an async iterator of the
   * leader (an ElectionParticipant, or null when nobody leads), the leader now first, then
   * every change. `next({ timeoutMs })` rejects with ZKLOCK_TIMEOUT when nothing changed in
   * time; `return()` (a `break` out of `for await`) stops it.
   */
  observeLeader(path) {
    checkString(path, 'path')
    const nativeWatch = call(() => this.#native.observeLeader(path))
    return new LeaderWatch(kInternal, nativeWatch, path)
  }

  /**
   * Whether `token` (a bigint, or an integer number) is the fencing token of a current holder
   * of the lock, or the leader of the election, on `path` (Chubby's CheckSequencer), so that a
   * resource handed a token can verify it. `maxLeases`: a semaphore's N (only its first N
   * lease nodes hold). True at the moment ZooKeeper answered.
   */
  async check(path, token, options) {
    checkString(path, 'path')
    const o = checkOptions(options, 'check options')
    let maxLeases
    if (o.maxLeases !== undefined && o.maxLeases !== null) {
      if (typeof o.maxLeases !== 'number') {
        throw invalid(`maxLeases must be a number, got ${describe(o.maxLeases)}`)
      }
      maxLeases = o.maxLeases
    }
    try {
      return await this.#native.check(path, tokenArgument(token), maxLeases)
    } catch (e) {
      throw translate(e)
    }
  }

  /** A read/write lock on `path`: `.read` and `.write` are its two sides. */
  rwLock(path) {
    checkString(path, 'path')
    const [read, write] = call(() => this.#native.rwLock(path))
    return new RwLock(
      kInternal,
      path,
      new Lock(kInternal, read, this.#leases),
      new Lock(kInternal, write, this.#leases),
    )
  }

  /** Exclusive locks on several paths taken as one (all or nothing, in path order). */
  multiLock(paths) {
    if (!Array.isArray(paths)) {
      throw invalid(`paths must be an array of strings, got ${describe(paths)}`)
    }
    paths.forEach((p, i) => checkString(p, `paths[${i}]`))
    const nativeLock = call(() => this.#native.multiLock(paths))
    return new MultiLock(kInternal, nativeLock, this.#leases, [...paths])
  }

  /**
   * Closes the session: every lease taken through it is lost, later calls reject. When it
   * resolves, each lease's state is 'lost', its signal aborted and its 'lost' event emitted.
   */
  async close() {
    try {
      await this.#native.close()
    } catch (e) {
      throw translate(e)
    }
    openClients.delete(this.#native)
    for (const core of [...this.#leases]) core.state()
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
  #leases

  /** @private */
  constructor(token, nativeLock, leases) {
    internalOnly(token, 'Lock')
    this.#native = nativeLock
    this.#leases = leases
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
   * Waits until the lock is ours. `timeoutMs` (0 = one attempt) or `deadline` (a Date or
   * epoch milliseconds; one attempt once passed) rejects with ZKLOCK_TIMEOUT, an aborted
   * `signal` with ZKLOCK_ABORTED; neither leaves a node behind.
   */
  async acquire(options) {
    const { timeoutMs, deadline, signal } = acquireOptions(options)
    if (signal && signal.aborted) throw abortError(this.path, signal)
    /** @type {any} */
    let pending = null
    // Listen before starting, so that a signal that cannot be listened to costs nothing.
    const unlisten = signal
      ? onAbort(signal, () => {
          if (pending) pending.cancel()
        })
      : () => {}
    let nativeLease
    try {
      // A re-entrant hold is taken at once (no I/O): no trip to the core and back.
      nativeLease = call(() => this.#native.tryReenter(timeoutMs, deadline))
      if (nativeLease == null) {
        pending = call(() => this.#native.startAcquire(timeoutMs, deadline))
        nativeLease = await pending.wait()
      }
    } catch (e) {
      try {
        unlisten()
      } catch {
        // The acquire failed: that is the error to report.
      }
      if (signal && signal.aborted && isZkLockError(e) && e.code === ErrorCode.ABORTED) {
        throw abortError(this.path, signal)
      }
      throw translate(e)
    }
    // The lock is ours: from here every way out but returning the lease gives it back.
    return this.#adopt(nativeLease, () => {
      try {
        unlisten()
      } catch (e) {
        throw signalMethodFailed('removeEventListener', e)
      }
      // Aborted just as the lock came: give it back, the caller asked not to have it.
      if (signal && signal.aborted) throw abortError(this.path, signal)
    })
  }

  /** One attempt: a Lease, or null when someone else holds the lock. */
  async tryAcquire() {
    let nativeLease
    try {
      nativeLease =
        call(() => this.#native.tryReenter(0, undefined)) ??
        (await call(() => this.#native.startAcquire(0, undefined)).wait())
    } catch (e) {
      if (isZkLockError(e) && e.code === ErrorCode.TIMEOUT) return null
      throw translate(e)
    }
    return this.#adopt(nativeLease, () => {})
  }

  /** Wraps an acquired native lease; if `check` (or anything) throws, releases it first. */
  async #adopt(nativeLease, check) {
    let lease = null
    try {
      lease = new Lease(kInternal, new LeaseCore(nativeLease, this.path, this.#leases))
      check()
      return lease
    } catch (e) {
      await (lease ? lease.release() : nativeLease.release()).catch(() => {})
      throw e
    }
  }

  /**
   * Runs `fn(lease)` under the lock and releases it afterwards, also when `fn` throws.
   * Resolves with what `fn` returns; rejects with `fn`'s error, or with ZKLOCK_LOST when the
   * lease was lost before `fn` finished (its result was made without the lock). `options` are
   * `acquire`'s.
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
    await releaseAtScopeEnd(lease, 'the using() callback finished')
    return result
  }

  /**
   * The queue: holder(s) first, then waiters in order. `{ timeoutMs }` (absent: no bound)
   * rejects with ZKLOCK_TIMEOUT when the listing takes longer (waiting for a reconnect included).
   */
  async participants(options) {
    const timeoutMs = checkMillis(checkOptions(options, 'participants options').timeoutMs, 'timeoutMs')
    try {
      // napi-rs leaves an Option field out of the object when it is None; index.d.ts promises
      // `maxLeases: number | null` on every participant, so the key is always present and
      // null says "not a semaphore lease, or its N unknown" (issue 27, item 11).
      const parts = await this.#native.participants(timeoutMs)
      for (const p of parts) p.maxLeases ??= null
      return parts
    } catch (e) {
      throw translate(e)
    }
  }
}

/** An exclusive lock (Curator's InterProcessMutex). */
class Mutex extends Lock {}

/**
 * A counting semaphore (Curator's InterProcessSemaphoreV2 layout): at most `maxLeases` leases
 * at once across every process using the path. Never re-entrant: every acquire takes a lease
 * of its own (`holdCount` stays 0); each lease has its token, state, signal and events.
 */
class Semaphore extends Lock {
  #maxLeases

  /** @private */
  constructor(token, nativeLock, leases, maxLeases) {
    super(token, nativeLock, leases)
    this.#maxLeases = maxLeases
  }

  /** N: how many leases may exist at once. */
  get maxLeases() {
    return this.#maxLeases
  }
}

/** Several exclusive locks taken as one. */
class MultiLock extends Lock {
  #paths

  /** @private */
  constructor(token, nativeLock, leases, paths) {
    super(token, nativeLock, leases)
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

  participants(options) {
    return this.read.participants(options)
  }
}

/**
 * The acquires waiting on each signal, and the one 'abort' listener they share: a signal passed
 * to many acquires at once (one per job of a batch) gets a single listener of ours, not one per
 * acquire (Node warns past 10 listeners, MaxListenersExceededWarning). The listener is removed
 * with the last acquire, so a long-lived signal keeps nothing of ours once its acquires settled.
 * @type {WeakMap<object, { waiters: Set<() => void>, listener: () => void }>}
 */
const signalWaiters = new WeakMap()

/**
 * Runs `cancel` (a function of one acquire's own) when `signal` aborts. Returns the function
 * that stops that (and takes our listener off the signal when no acquire waits on it any
 * more); it throws what a look-alike signal's removeEventListener throws.
 */
function onAbort(signal, cancel) {
  let entry = signalWaiters.get(signal)
  if (entry === undefined) {
    const waiters = new Set()
    const listener = () => {
      // Once: the signal drops this listener itself (`once`), and later acquires see `aborted`.
      signalWaiters.delete(signal)
      for (const waiter of waiters) waiter()
      waiters.clear()
    }
    try {
      signal.addEventListener('abort', listener, { once: true })
    } catch (e) {
      throw signalMethodFailed('addEventListener', e)
    }
    entry = { waiters, listener }
    signalWaiters.set(signal, entry)
  }
  const mine = entry
  mine.waiters.add(cancel)
  return () => {
    if (!mine.waiters.delete(cancel) || mine.waiters.size > 0) return
    if (signalWaiters.get(signal) !== mine) return
    signalWaiters.delete(signal)
    signal.removeEventListener('abort', mine.listener)
  }
}

function abortError(lockPath, signal) {
  return zkError(ErrorCode.ABORTED, `the acquire of ${lockPath} was aborted`, signal.reason)
}

// Leases ----------------------------------------------------------------------------------

/**
 * What a lease needs to stay correct after its `Lease` object is garbage-collected: the native
 * lease (so that the lock is not released) and the AbortController (a kept `lease.signal` still
 * aborts when lost). The states are the core's (`Lease::subscribe`: the current one first, then
 * every change, `lost` once); this only turns them into events and the abort. The core's state
 * callback holds it until a final state; it holds the `Lease` only weakly, or strongly while
 * the lease has event listeners (someone waits for them).
 *
 * Both are set up lazily, on the first event listener or the first read of `signal`: until
 * then nobody can notice a state change but by reading `state` (which asks the core, and applies
 * a loss at once), and a subscription costs every acquire two hops to the core's callback
 * thread and two wake-ups of the JS thread (its first report and its 'released'), an
 * AbortController and a threadsafe function: about a third of a plain acquire+release's CPU.
 */
class LeaseCore {
  constructor(nativeLease, lockPath, leases) {
    this.native = nativeLease
    this.lockPath = lockPath
    /** @type {AbortController | null} made by `controller` when first needed */
    this.abortController = null
    /** @type {Error | null} the ZKLOCK_LOST error, once lost */
    this.lostError = null
    /** The core reports our states (see watch()). */
    this.watching = false
    /** The client's set of live cores, for close() to bring them up to date. */
    this.leases = leases
    /** The state the core reported last (null before its first report), for 'resumed'. */
    this.last = null
    /** release() was called: no more events. */
    this.done = false
    /** @type {WeakRef<Lease> | null} */
    this.ref = null
    /** @type {Lease | null} */
    this.pin = null
    /** Someone listens for 'revokeRequested': the core was asked to tell us (opt-in). */
    this.revokeWatched = false
    leases.add(this)
    // A held lease is work, like a pending promise: Node must not end the process under it
    // (a leader left awaiting only its 'lost' would exit while leading). `unref()` opts out.
    nativeLease.keepAlive(true, () => this.state())
  }

  /** The lease's AbortController, made on first use (aborted at once if already lost). */
  get controller() {
    if (this.abortController === null) {
      this.abortController = new AbortController()
      if (this.lostError !== null) this.abortController.abort(this.lostError)
    }
    return this.abortController
  }

  /** The lease was lost (and `signal` aborted, 'lost' emitted). */
  get lost() {
    return this.lostError !== null
  }

  /**
   * Asks the core for our state changes (once per lease): from here on a loss aborts `signal`
   * and emits 'lost' without anyone reading `state`. The state now counts as reported, so that
   * the core's first report (the current state) is no news.
   */
  watch() {
    if (this.watching || this.done || this.lost) return
    this.watching = true
    const now = this.native.state
    if (now === 'lost') {
      this.apply(now)
      return
    }
    this.last = now
    this.native.subscribe((state) => this.apply(state))
  }

  /**
   * The core's state now. A loss found here (close() resolved, someone looked) is applied at
   * once, before the core's report reaches the JS thread: state, abort and event agree.
   */
  state() {
    const now = this.native.state
    if (now === 'lost') this.apply(now)
    return now
  }

  /** One state the core reported: the event and (when lost) the abort, all in one go. */
  apply(state) {
    if (this.done || this.lost || state === this.last) return
    const previous = this.last
    this.last = state
    const lease = this.pin || (this.ref && this.ref.deref())
    try {
      if (state === 'suspended') {
        if (lease) lease.emit('suspended')
      } else if (state === 'held' && previous === 'suspended') {
        if (lease) lease.emit('resumed')
      } else if (state === 'lost') {
        this.finish()
        const reason = this.native.lostReason
        // The core's reason names the node ("lease on <node> lost: <why>"): said once.
        const err = zkError(
          ErrorCode.LOST,
          reason
            ? `the lease on ${this.lockPath} (token ${this.native.token}) was lost: ${reason}`
            : `the lease on ${this.lockPath} (node ${this.native.path}, token ${this.native.token}) was lost`,
        )
        this.lostError = err
        if (this.abortController !== null) this.abortController.abort(err)
        if (lease) lease.emit('lost', err)
      } else if (state === 'released') {
        this.finish()
      }
    } catch (e) {
      // A throwing listener is the listener's bug: report it like any uncaught exception.
      process.nextTick(() => {
        throw e
      })
    }
  }

  /** Listens for a revocation request (once per lease): emits 'revokeRequested'. */
  watchRevoke() {
    if (this.revokeWatched) return
    this.revokeWatched = true
    this.native.onRevoke(() => {
      if (this.done || this.lost) return
      const lease = this.pin || (this.ref && this.ref.deref())
      try {
        if (lease) lease.emit('revokeRequested')
      } catch (e) {
        process.nextTick(() => {
          throw e
        })
      }
    })
  }

  /** A final state: nothing left to warn about or to bring up to date. */
  finish() {
    this.leases.delete(this)
    leaseFinalizer.unregister(this)
  }

  /** The Lease object was garbage-collected (see leaseFinalizer). */
  collected() {
    this.state()
    if (this.done || this.lost) return
    process.emitWarning(
      `a held lease on ${this.lockPath} (node ${this.native.path}, token ${this.native.token}) ` +
        'was garbage-collected without release(); the lock is still held, and stays held until ' +
        'its client closes or the process exits. Keep the lease and call release() ' +
        '(or use mutex.using() / await using).',
      { type: 'ZklockWarning', code: 'ZKLOCK_LEASE_UNRELEASED' },
    )
  }
}

// Garbage collection never releases a lock: it only warns (the native lease is kept by its
// LeaseCore, and let go without releasing if ever collected itself).
const leaseFinalizer = new FinalizationRegistry((/** @type {LeaseCore} */ core) => core.collected())

/**
 * A held lock. Events: 'suspended' (connection lost, holding is uncertain), 'resumed' (back
 * to held), 'lost' (final, once, with the ZKLOCK_LOST error), 'revokeRequested' (once, while
 * held: someone asked the holder to let go; opt-in: listening for it is what asks zklock to
 * tell). `signal` aborts when lost.
 * A lease stays held until released, lost, its client closed or the process exits, also when
 * no longer referenced (then the process gets a 'ZklockWarning').
 */
class Lease extends EventEmitter {
  #core
  #releasing = null

  /** @private */
  constructor(token, core) {
    super()
    internalOnly(token, 'Lease')
    this.#core = core
    core.ref = new WeakRef(this)
    leaseFinalizer.register(this, core, core)
  }

  /** A lease with listeners stays reachable (from its core) until a final state. */
  #listened(event, listener) {
    checkListener(event, listener)
    // Nothing to watch for: an 'error' listener comes with events.once()/on()'s real one.
    if (event === 'error') return listener
    if (!this.#core.done && !this.#core.lost) this.#core.pin = this
    this.#core.watch()
    if (event === 'revokeRequested' && !this.#core.done) this.#core.watchRevoke()
    return listener
  }

  on(event, listener) {
    return super.on(event, this.#listened(event, listener))
  }

  addListener(event, listener) {
    return super.addListener(event, this.#listened(event, listener))
  }

  once(event, listener) {
    return super.once(event, this.#listened(event, listener))
  }

  prependListener(event, listener) {
    return super.prependListener(event, this.#listened(event, listener))
  }

  prependOnceListener(event, listener) {
    return super.prependOnceListener(event, this.#listened(event, listener))
  }

  /**
   * A held lease keeps the event loop (and so the process) alive until it is released or lost,
   * as a pending timer does. `unref()` lets the process end while it is held (the lock goes
   * with the session when the process exits); `ref()` undoes that. Both return the lease.
   */
  unref() {
    this.#core.native.keepAlive(false)
    return this
  }

  ref() {
    this.#core.native.keepAlive(true)
    return this
  }

  /** Whether this lease keeps the event loop alive now (held or suspended, and not unref()'d). */
  hasRef() {
    return this.#core.native.keptAlive
  }

  /** The fencing token (bigint): strictly increases from one holder of the lock to the next. */
  get token() {
    return this.#core.native.token
  }

  /** Every member's token (a multi-lock has several), in path order. */
  get tokens() {
    return this.#core.native.tokens
  }

  /** Full path of our lock node (the first member's for a multi-lock). */
  get path() {
    return this.#core.native.path
  }

  /** Full paths of every member's node. */
  get paths() {
    return this.#core.native.paths
  }

  /** The path of the lock this lease holds. */
  get lockPath() {
    return this.#core.lockPath
  }

  /**
   * 'held' | 'suspended' | 'lost' | 'released'. Reading 'lost' means `signal` is aborted and
   * 'lost' emitted already.
   */
  get state() {
    const core = this.#core
    const now = core.state()
    return core.lost ? 'lost' : now
  }

  /**
   * True once someone asked this holder to let go (its node's data set to `__REVOKE__` by
   * `client.revoke()`, `zklock revoke` or Curator's Revoker). Only a request: the lease stays
   * held until released. Listen for 'revokeRequested' to be told.
   */
  get revokeRequested() {
    return this.#core.native.revokeRequested
  }

  /** An AbortSignal aborted once when the lease is lost; its reason is a ZKLOCK_LOST error. */
  get signal() {
    const core = this.#core
    core.watch()
    core.state()
    return core.controller.signal
  }

  /**
   * Runs ZooKeeper writes only while this lease holds the lock: `{ op: 'create', path, data }`,
   * `{ op: 'set_data', path, data }`, `{ op: 'delete', path }` go as one multi request with a
   * check that the lease's node still exists, so all apply or none. Resolves with per write
   * `{ op, path }` (created) or `{ op, version }` (new data version) or `{ op }` (deleted);
   * rejects with ZKLOCK_LOST when the lease was lost (nothing applied), or the failing write's
   * error (nothing applied either), or ZKLOCK_OUTCOME_UNKNOWN when the connection broke after
   * the batch was sent (it may have been applied). On a suspended lease the batch waits for the
   * reconnect; `{ timeoutMs }` (absent: no bound) bounds that wait and the answer.
   */
  async guardedWrite(writes, options) {
    const checked = checkWrites(writes)
    const timeoutMs = checkMillis(checkOptions(options, 'guardedWrite options').timeoutMs, 'timeoutMs')
    let done
    try {
      done = await this.#core.native.guardedWrite(checked, timeoutMs)
    } catch (e) {
      throw translate(e)
    }
    return done.map((w) => {
      const out = { op: w.op }
      if (w.path !== undefined && w.path !== null) out.path = w.path
      if (w.version !== undefined && w.version !== null) out.version = w.version
      return out
    })
  }

  /**
   * Until when no one else can hold this lease's lock (Chubby's local lease), in milliseconds
   * on Date.now()'s clock, computed at the call; null once released or lost. While held it is
   * ahead of now and moves forward with every answered heartbeat; while suspended it stays
   * where the last proof put it. Check the time left before a side effect (a pause after the
   * check is what fencing tokens are for).
   */
  validUntil() {
    return this.#core.native.validUntil() ?? null
  }

  /**
   * zklock's own (Election.resign, Election.proclaim): `use(nativeLease)`; with `end`, that
   * call ends this handle as release() does (its promise is the release's), once it did not
   * throw.
   */
  [kNativeLease](use, end) {
    if (end && this.#releasing) {
      throw zkError(ErrorCode.NOT_HELD, `the lease on ${this.lockPath} was already released`)
    }
    const core = this.#core
    if (!end) return use(core.native)
    core.state()
    const promise = use(core.native)
    core.done = true
    core.finish()
    this.#releasing = promise
    return promise
  }

  /**
   * Releases the lease: the core's outcome, 'released' (node deleted), 'still-held' (a
   * re-entrant hold went down) or 'was-lost'. Releasing twice rejects with ZKLOCK_NOT_HELD.
   */
  async release() {
    if (this.#releasing) {
      throw zkError(ErrorCode.NOT_HELD, `the lease on ${this.lockPath} was already released`)
    }
    const core = this.#core
    // A loss that already happened is reported before the release hides it.
    core.state()
    core.done = true
    core.finish()
    // A re-entrant hold that only counts down is released at once: no trip to the core and back.
    const counted = core.native.releaseCounted()
    this.#releasing = counted == null ? core.native.release() : Promise.resolve(counted)
    try {
      return await this.#releasing
    } catch (e) {
      throw translate(e)
    }
  }

  /**
   * `await using lease = await mutex.acquire()` releases at block exit, and rejects with
   * ZKLOCK_LOST when the lease was lost inside the block, as `using()` does (when the block threw
   * as well, JavaScript hands both on as a SuppressedError). A lease released by hand in the
   * block is left alone: its `release()` answered already.
   */
  async [Symbol.asyncDispose]() {
    if (this.#releasing) {
      await this.#releasing.catch(() => {})
      return
    }
    await releaseAtScopeEnd(this, 'the await using block ended')
  }
}

/**
 * Releases `lease` at the end of a scope (`using()`'s callback, an `await using` block), and
 * rejects with ZKLOCK_LOST when it was lost before the scope ended: what the scope did, it did
 * (partly) without the lock, and a scope that ends quietly would say otherwise. One rule for
 * both forms, so that rewriting one as the other changes nothing.
 */
async function releaseAtScopeEnd(lease, scope) {
  const outcome = await lease.release()
  // The core's rule and message (zklock::Ended::leave_scope): lost before the release, or
  // found lost by it, is ZKLOCK_LOST; the lease's own ZKLOCK_LOST error (its signal's reason)
  // is the cause.
  try {
    lease[kNativeLease]((n) => n.leaveScope(scope), false)
  } catch (e) {
    const err = translate(e)
    if (lease.signal.aborted) err.cause = lease.signal.reason
    throw err
  }
  return outcome
}

// Elections -------------------------------------------------------------------------------

/**
 * A leadership: the lease of the first node of an election (token, states, `signal`, events,
 * guardedWrite, validUntil, `await using`), what `election.lead()` resolves with. Releasing or
 * disposing it resigns.
 */
class Leadership extends Lease {}

/** An election participant as the core lists it; `style` null for a node of no election layout. */
function electionParticipant(p) {
  if (p === undefined || p === null) return null
  p.style ??= null
  return p
}

function checkLeadership(lead) {
  if (!(lead instanceof Lease)) {
    throw invalid(`lead must be a Leadership from election.lead(), got ${describe(lead)}`)
  }
  return lead
}

function leadAbortError(electionPath, signal) {
  return zkError(ErrorCode.ABORTED, `running for leader of ${electionPath} was aborted`, signal.reason)
}

/**
 * One participant's side of a leader election on a path (`client.election(path, options)`).
 * `lead()` waits until it leads and resolves with a Leadership; `run(fn)` is the callback form.
 */
class Election {
  #native
  #leases

  /** @private */
  constructor(token, nativeElection, leases) {
    internalOnly(token, 'Election')
    this.#native = nativeElection
    this.#leases = leases
  }

  /** The election's path. */
  get path() {
    return this.#native.path
  }

  /** The layout of this participant's nodes: 'latch', 'selector' or 'kazoo'. */
  get style() {
    return this.#native.style
  }

  /** This participant's id (its node's data). */
  get id() {
    return this.#native.id
  }

  /** The longest a leadership lasts, in milliseconds; null for no limit. */
  get maxHoldMs() {
    return this.#native.maxHoldMs ?? null
  }

  /**
   * Waits until this participant leads: a Leadership. `timeoutMs` / `deadline` as an acquire's
   * (ZKLOCK_TIMEOUT), an aborted `signal` rejects with ZKLOCK_ABORTED and removes our node;
   * ZKLOCK_CONFLICT when a node of another layout is on the path (the message names it).
   */
  async lead(options) {
    const { timeoutMs, deadline, signal } = acquireOptions(options)
    if (signal && signal.aborted) throw leadAbortError(this.path, signal)
    const pending = call(() => this.#native.startLead(timeoutMs, deadline))
    return this.#leadership(pending, signal)
  }

  /** Waits for a started attempt (`pending`, a native acquire) and wraps its lease. */
  async #leadership(pending, signal) {
    let unlisten = () => {}
    try {
      if (signal) {
        if (signal.aborted) pending.cancel()
        else unlisten = onAbort(signal, () => pending.cancel())
      }
    } catch (e) {
      pending.cancel()
      await pending.wait().then((l) => l.release(), () => {})
      throw e
    }
    let nativeLease
    try {
      nativeLease = await pending.wait()
    } catch (e) {
      try {
        unlisten()
      } catch {
        // The attempt failed: that is the error to report.
      }
      if (signal && signal.aborted && isZkLockError(e) && e.code === ErrorCode.ABORTED) {
        throw leadAbortError(this.path, signal)
      }
      throw translate(e)
    }
    const lead = new Leadership(kInternal, new LeaseCore(nativeLease, this.path, this.#leases))
    try {
      try {
        unlisten()
      } catch (e) {
        throw signalMethodFailed('removeEventListener', e)
      }
      // Aborted just as the leadership came: give it back, the caller asked not to have it.
      if (signal && signal.aborted) throw leadAbortError(this.path, signal)
    } catch (e) {
      await lead.release().catch(() => {})
      throw e
    }
    return lead
  }

  /**
   * Gives the leadership up: its node is deleted and the next participant leads. Resolves
   * with undefined; with `{ requeue: true }` runs again at the tail of the queue and resolves
   * with the next Leadership once that comes (`signal` aborts that wait: ZKLOCK_ABORTED, node
   * removed). A leadership released already rejects with ZKLOCK_NOT_HELD.
   */
  async resign(lead, options) {
    checkLeadership(lead)
    const o = checkOptions(options, 'resign options')
    if (o.requeue !== undefined && o.requeue !== null && typeof o.requeue !== 'boolean') {
      throw invalid(`requeue must be a boolean, got ${describe(o.requeue)}`)
    }
    const requeue = o.requeue === true
    const signal = checkSignal(o.signal)
    let pending
    try {
      pending = await lead[kNativeLease]((n) => this.#native.resign(n, requeue), true)
    } catch (e) {
      throw translate(e)
    }
    if (!requeue) return undefined
    return this.#leadership(pending, signal)
  }

  /**
   * Sets the leadership's node data to `data` (a string, Buffer or Uint8Array): what
   * participants and observers see as its id from then on. A guarded write: rejects with
   * ZKLOCK_LOST after loss (nothing written).
   */
  async proclaim(lead, data) {
    checkLeadership(lead)
    let bytes
    if (typeof data === 'string') bytes = Buffer.from(data, 'utf8')
    else if (data instanceof Uint8Array) bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    else throw invalid(`data must be a string, a Buffer or a Uint8Array, got ${describe(data)}`)
    try {
      await lead[kNativeLease]((n) => this.#native.proclaim(n, bytes), false)
    } catch (e) {
      throw translate(e)
    }
  }

  /**
   * Everyone running, in election order (the leader first): `{ node, id, token, sessionId,
   * library, kind, style }`; nodes of other layouts are listed too (`style` their family, or
   * null), as they make `lead()` fail.
   */
  async participants() {
    try {
      return (await this.#native.participants()).map(electionParticipant)
    } catch (e) {
      throw translate(e)
    }
  }

  /** The leader now (the first participant of this layout), or null when nobody leads. */
  async leader() {
    try {
      return electionParticipant(await this.#native.leader())
    } catch (e) {
      throw translate(e)
    }
  }

  /**
   * The callback form (kazoo's `election.run`): waits to lead, runs `fn(lead, signal)`, and
   * resigns once `fn` settled. `signal` aborts when the leadership is lost (or the run's own
   * `signal` aborts): `fn` should stop then. Its reason is a zklock error either way:
   * ZKLOCK_LOST, or ZKLOCK_ABORTED with the caller's reason as `cause`. Resolves with what `fn` returned; rejects with
   * `fn`'s error, or ZKLOCK_LOST when the leadership was lost before `fn` finished (as
   * `using()` does). With `{ requeue: true }` it runs again at the tail each time `fn` settles
   * (also after a loss), until `signal` aborts (ZKLOCK_ABORTED) or `fn` throws.
   */
  async run(fn, options) {
    if (typeof fn !== 'function') throw invalid(`fn must be a function, got ${describe(fn)}`)
    const o = checkOptions(options, 'run options')
    if (o.requeue !== undefined && o.requeue !== null && typeof o.requeue !== 'boolean') {
      throw invalid(`requeue must be a boolean, got ${describe(o.requeue)}`)
    }
    const requeue = o.requeue === true
    const signal = checkSignal(o.signal)
    let lead = await this.lead({ signal })
    for (;;) {
      const stop = new AbortController()
      const leadSignal = lead.signal
      const onLost = () => stop.abort(leadSignal.reason)
      // One shape for fn's signal.reason (issue 33): a zklock error either way, ZKLOCK_LOST on a
      // loss, ZKLOCK_ABORTED (the caller's reason as its cause) when the run's signal aborts.
      const onStop = () => stop.abort(signal ? leadAbortError(this.path, signal) : undefined)
      if (leadSignal.aborted) onLost()
      else leadSignal.addEventListener('abort', onLost, { once: true })
      const unlisten = signal ? onAbort(signal, onStop) : () => {}
      if (signal && signal.aborted) onStop()
      let result
      try {
        result = await fn(lead, stop.signal)
      } catch (e) {
        await lead.release().catch(() => {})
        throw e
      } finally {
        leadSignal.removeEventListener('abort', onLost)
        try {
          unlisten()
        } catch {
          // Only our listener stays on the caller's signal.
        }
      }
      if (!requeue) return releaseAtScopeEnd(lead, 'the run() callback finished').then(() => result)
      if (signal && signal.aborted) {
        await lead.release().catch(() => {})
        throw leadAbortError(this.path, signal)
      }
      if (lead.state === 'lost') {
        await lead.release().catch(() => {})
        lead = await this.lead({ signal })
      } else {
        lead = await this.resign(lead, { requeue: true, signal })
      }
    }
  }
}

/**
 * Who leads an election, seen from outside (`client.observeLeader(path)`): an async iterator
 * of the leader (an ElectionParticipant, or null when nobody leads), the leader now first, then
 * each change. `next({ timeoutMs })` rejects with ZKLOCK_TIMEOUT when nothing changed in time;
 * `return()` stops it (a pending `next()` then resolves as done).
 */
class LeaderWatch {
  #native
  #path
  #done = false

  /** @private */
  constructor(token, nativeWatch, path) {
    internalOnly(token, 'LeaderWatch')
    this.#native = nativeWatch
    this.#path = path
  }

  /** The election's path. */
  get path() {
    return this.#path
  }

  async next(options) {
    if (this.#done) return { value: undefined, done: true }
    const timeoutMs = checkMillis(checkOptions(options, 'next options').timeoutMs, 'timeoutMs')
    let report
    try {
      report = await this.#native.next(timeoutMs)
    } catch (e) {
      throw translate(e)
    }
    if (report.stopped) {
      this.#done = true
      return { value: undefined, done: true }
    }
    return { value: electionParticipant(report.leader), done: false }
  }

  async return(value) {
    this.#done = true
    this.#native.stop()
    return { value, done: true }
  }

  [Symbol.asyncIterator]() {
    return this
  }

  async [Symbol.asyncDispose]() {
    await this.return()
  }
}

// 'error' is accepted though a lease never emits it: Node's events.once() and events.on() add an
// 'error' listener next to the one asked for, and refusing it made them throw.
const leaseEvents = new Set([
  'suspended', 'resumed', 'lost', 'revokeRequested', 'newListener', 'removeListener', 'error',
])

function checkListener(event, listener) {
  if (!leaseEvents.has(event)) {
    throw invalid(
      `a lease emits 'suspended', 'resumed', 'lost' and 'revokeRequested', not ${describe(event)}`,
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
exports.Semaphore = Semaphore
exports.Lease = Lease
exports.Leadership = Leadership
exports.Election = Election
exports.LeaderWatch = LeaderWatch
exports.ErrorCode = ErrorCode
exports.isZkLockError = isZkLockError
exports.logChannel = logChannel
exports.closeOnSignals = closeOnSignals
