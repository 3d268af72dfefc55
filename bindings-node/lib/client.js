// The client: one ZooKeeper session and the locks and elections made on it, closed at exit
// (and on Ctrl-C and SIGTERM with closeOnSignals).
'use strict'

const { EventEmitter } = require('node:events')

const { native } = require('./native')
const { call, invalid, translate } = require('./errors')
const { checkCount, checkMillis, checkOptions, checkString, describe, internalOnly, kInternal, tokenArgument } = require('./args')
const { installLogSink } = require('./logs')
const { Counter } = require('./counter')
const { Lock, MultiLock, Mutex, RwLock, Semaphore } = require('./lock')
const { Election, LeaderWatch } = require('./election')
const { registerMetrics } = require('./metrics')

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
   * identity, acl, pathStatsLimit (how many lock paths get statistics of their own, default
   * 1000, 0 for none);
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
      pathStatsLimit: checkCount(o.pathStatsLimit, 'pathStatsLimit'),
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
   * The tick the lease proof runs on, in ms: the larger of `serverTickMs` and the tick learned
   * from the servers at connect (half the shortest session they grant).
   */
  get serverTick() {
    return this.#native.serverTickMs
  }

  /** Which ZooKeeper version class answered at connect: `{ version: '3.7+', lacks: [] }`. */
  serverFeatures() {
    return this.#native.serverFeatures()
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
   * This client's statistics as OpenMetrics text, what Prometheus scrapes (serve it from your
   * own /metrics): acquires by outcome, wait and hold summaries, leases held, acquires waiting,
   * losses and reconnects, each sample labelled client="<id>" and with `labels`.
   */
  openmetrics(labels) {
    const o = checkOptions(labels, 'labels')
    const pairs = Object.entries(o).map(([k, v]) => [k, checkString(v, `label ${k}`)])
    return call(() => this.#native.openmetrics(pairs))
  }

  /**
   * This client's statistics per lock path: `{ limit, folded, paths, overflow }`, each path
   * `{ path, acquired, timedOut, cancelled, failed, waitSum, lost: { broken, 'max-hold',
   * conflict, session }, held, oldestHold }` (times in milliseconds); at most `pathStatsLimit`
   * paths, the acquires on later ones counted in `overflow` (path null). Works after close too.
   */
  pathStats() {
    const s = call(() => this.#native.pathStats())
    const one = (p) => ({ ...p, path: p.path ?? null })
    return { ...s, paths: s.paths.map(one), overflow: s.overflow ? one(s.overflow) : null }
  }

  /**
   * Serves this client's metrics (the families of openmetrics()) from a prom-client Registry
   * (prom-client's default `register` when absent: then prom-client must be installed), read
   * at each scrape. Returns a function that unregisters them.
   */
  registerMetrics(registry, labels) {
    const o = checkOptions(labels, 'labels')
    for (const [k, v] of Object.entries(o)) checkString(v, `label ${k}`)
    return registerMetrics([this], registry, o)
  }

  /**
   * An exclusive lock on `path`; re-entrant per caller unless `{ reentrant: false }` (lock.js).
   * `maxHoldMs`: every lease ends (lost, reason 'max-hold', node deleted) after that long.
   * `lockDelayMs` (Chubby's lock-delay): after a holder's node went without a clean release
   * (session expiry, a break), the next holder's lease is held only that long after.
   */
  mutex(path, options) {
    checkString(path, 'path')
    const o = checkOptions(options, 'mutex options')
    if (o.reentrant !== undefined && typeof o.reentrant !== 'boolean') {
      throw invalid(`reentrant must be a boolean, got ${describe(o.reentrant)}`)
    }
    const maxHoldMs = checkMillis(o.maxHoldMs, 'maxHoldMs')
    const holdCeilingMs = checkMillis(o.holdCeilingMs, 'holdCeilingMs')
    const lockDelayMs = checkMillis(o.lockDelayMs, 'lockDelayMs')
    const nativeLock = call(() =>
      this.#native.mutex(path, o.reentrant !== false, maxHoldMs, holdCeilingMs, lockDelayMs),
    )
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
    const o = checkOptions(options, 'semaphore options')
    const maxHoldMs = checkMillis(o.maxHoldMs, 'maxHoldMs')
    const lockDelayMs = checkMillis(o.lockDelayMs, 'lockDelayMs')
    const nativeLock = call(() => this.#native.semaphore(path, maxLeases, maxHoldMs, lockDelayMs))
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
   * A shared counter on `path`: `{ width: 'int32' }` (the default, Curator's SharedCount: a
   * 4-byte big-endian int) or `'int64'` (DistributedAtomicLong: 8 bytes), so a Curator process
   * shares the node. `get()`, `compareAndSet(seen, value)`, and `lease.guardedIncrement(counter,
   * by)`, which moves it only while the lease holds its lock. An 'int32' counter's values are
   * numbers, an 'int64' counter's bigints (exact over 64 bits).
   */
  counter(path, options) {
    checkString(path, 'path')
    const o = checkOptions(options, 'counter options')
    const width = o.width === undefined || o.width === null ? undefined : checkString(o.width, 'width')
    return new Counter(kInternal, call(() => this.#native.counter(path, width)))
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
   * Breaks a stuck lock: deletes `node` (a node's name, as `participants()` shows it, or its
   * full path), checked against the version read just before, so a node changed or re-created
   * meanwhile is not touched. Resolves with the Participant broken (identity, token). Rejects
   * with ZKLOCK_NOT_HELD when the node is not among the contenders (or went away first),
   * ZKLOCK_PERMISSION when the ACL refuses, ZKLOCK_INVALID_ARGUMENT for an empty node.
   * `options.reason` goes to the logs. A zklock holder's lease turns lost (reason 'broken').
   */
  async breakLock(path, node, options) {
    checkString(path, 'path')
    checkString(node, 'node')
    const o = checkOptions(options, 'breakLock options')
    const reason = o.reason === undefined || o.reason === null ? undefined : checkString(o.reason, 'reason')
    try {
      const p = await this.#native.breakLock(path, node, reason)
      p.maxLeases ??= null
      return p
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
    const lockDelayMs = checkMillis(o.lockDelayMs, 'lockDelayMs')
    const nativeElection = call(() => this.#native.election(path, style, id, maxHoldMs, lockDelayMs))
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

  /**
   * A read/write lock on `path`: `.read` and `.write` are its two sides. `{ maxHoldMs }` ends
   * every lease of either side after that long, as for `mutex()`.
   */
  rwLock(path, options) {
    checkString(path, 'path')
    const maxHoldMs = checkMillis(checkOptions(options, 'rwLock options').maxHoldMs, 'maxHoldMs')
    const [read, write] = call(() => this.#native.rwLock(path, maxHoldMs))
    return new RwLock(
      kInternal,
      path,
      new Lock(kInternal, read, this.#leases),
      new Lock(kInternal, write, this.#leases),
    )
  }

  /**
   * Exclusive locks on several paths taken as one (all or nothing, in path order).
   * `{ maxHoldMs }` ends the whole hold that long after every member became ours (each member
   * lost, reason 'max-hold', its node deleted); `lease.extend` moves that end for every member,
   * up to `holdCeilingMs`.
   */
  multiLock(paths, options) {
    if (!Array.isArray(paths)) {
      throw invalid(`paths must be an array of strings, got ${describe(paths)}`)
    }
    paths.forEach((p, i) => checkString(p, `paths[${i}]`))
    const o = checkOptions(options, 'multiLock options')
    const maxHoldMs = checkMillis(o.maxHoldMs, 'maxHoldMs')
    const holdCeilingMs = checkMillis(o.holdCeilingMs, 'holdCeilingMs')
    const nativeLock = call(() => this.#native.multiLock(paths, maxHoldMs, holdCeilingMs))
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

module.exports = { Client, closeOnSignals }
