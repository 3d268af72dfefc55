// Types of the zklock npm package (index.js over the native addon built from src/lib.rs).

/// <reference types="node" />
import { EventEmitter } from 'node:events'

/** Every `err.code` zklock rejects or throws with (the error table of the API contract). */
export declare const ErrorCode: {
  readonly TIMEOUT: 'ZKLOCK_TIMEOUT'
  readonly ABORTED: 'ZKLOCK_ABORTED'
  readonly LOST: 'ZKLOCK_LOST'
  readonly SESSION_EXPIRED: 'ZKLOCK_SESSION_EXPIRED'
  readonly CONNECTION: 'ZKLOCK_CONNECTION'
  readonly NOT_HELD: 'ZKLOCK_NOT_HELD'
  readonly UPGRADE: 'ZKLOCK_UPGRADE'
  readonly INVALID_ARGUMENT: 'ZKLOCK_INVALID_ARGUMENT'
  readonly CLOSED: 'ZKLOCK_CLOSED'
  readonly PERMISSION: 'ZKLOCK_PERMISSION'
  readonly ZOOKEEPER: 'ZKLOCK_ZOOKEEPER'
  /** A bug in zklock (a panicked task): please report it. */
  readonly INTERNAL: 'ZKLOCK_INTERNAL'
  /** A write was sent but its answer was lost with the connection: it may or may not have been
   * applied. Read back before retrying. */
  readonly OUTCOME_UNKNOWN: 'ZKLOCK_OUTCOME_UNKNOWN'
  /** An election refused to lead beside a node of another layout (Curator's latch next to
   * its selector, or Curator's next to kazoo's): each would lead. The message names the node. */
  readonly CONFLICT: 'ZKLOCK_CONFLICT'
}
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode]

/** What every zklock failure is: a plain `Error` with one of the `ErrorCode` codes. */
export interface ZkLockError extends Error {
  code: ErrorCode
}

/** True for an error thrown or rejected by zklock. */
export declare function isZkLockError(e: unknown): e is ZkLockError

export interface ConnectOptions {
  /** Session timeout asked of the server (it may clamp it). Default 10 000. */
  sessionTimeoutMs?: number
  /** How long `connect` keeps trying before ZKLOCK_CONNECTION. Default 15 000. */
  connectTimeoutMs?: number
  /** The ensemble's tickTime: the lost signal's deadline depends on it (docs/safety.md).
   * Learned from the servers at connect (`serverTick`); this can raise it, never lower it. A
   * session shorter than four ticks rejects with ZKLOCK_INVALID_ARGUMENT. */
  serverTickMs?: number
  /** How many lock paths get statistics of their own (`pathStats()`, `openmetrics()`); the
   * acquires on later paths are counted together in one overflow series. 0 turns them off.
   * Default 1000; a negative, fractional or too large number rejects with
   * ZKLOCK_INVALID_ARGUMENT. */
  pathStatsLimit?: number
  /** Digest credentials `user:password`. */
  auth?: string
  /** Written into our lock nodes and shown by `participants()`. Default `host/pid`. */
  identity?: string
  /** ACL of the lock nodes (and parents) we create. Default 'open'; the others need `auth`
   * or `saslUser`. */
  acl?: AclPolicy
  /**
   * The CA that signed the servers' certificates: TLS to every server. Like `tls.connect`'s
   * `ca`, `cert` and `key`, this and the next two take PEM content (a Buffer, or a string
   * holding `-----BEGIN `); any other string is the path of a PEM file. No error, log or
   * `util.inspect()` ever shows PEM content, nor a value that looks like key material.
   */
  tlsCa?: string | Buffer
  /** A client certificate and its key (both or neither; need `tlsCa`): PEM content or paths. */
  tlsCert?: string | Buffer
  tlsKey?: string | Buffer
  /** Check that a server's certificate names the host dialled. Default true. */
  tlsVerifyHostname?: boolean
  /** SASL DIGEST-MD5 credentials; a wrong password rejects with ZKLOCK_PERMISSION. */
  saslUser?: string
  saslPassword?: string
}

/** 'open': anyone may do anything; 'creator-all': only the authenticated creator;
 * 'read-anyone-creator-all': anyone may read, only the creator may change. */
export type AclPolicy = 'open' | 'creator-all' | 'read-anyone-creator-all'


export interface MutexOptions {
  /**
   * Default true: re-entrant per caller (issue 50). false: every acquire queues. Either way it
   * excludes Curator's InterProcessMutex, not its InterProcessSemaphoreMutex (for that one use
   * `client.semaphoreMutex(path)`).
   */
  reentrant?: boolean
  /**
   * Every lease of this lock ends after this many milliseconds, whatever its holder does: it
   * turns lost (reason 'max-hold'), its node is deleted. Absent: no limit. 0, negative or NaN
   * throw ZKLOCK_INVALID_ARGUMENT.
   */
  maxHoldMs?: number
  /**
   * The longest a lease may be held counting its extensions (`lease.extend`), in milliseconds
   * from the acquire. Absent: no ceiling.
   */
  holdCeilingMs?: number
  /**
   * Chubby's lock-delay, in milliseconds: after a holder's node went without a clean release
   * (its session expired, it was broken), the next holder's lease is held only this long
   * after; a clean release hands over at once. Absent: none. 0, negative or NaN throw
   * ZKLOCK_INVALID_ARGUMENT. Every zklock user of the path sets the same delay.
   */
  lockDelayMs?: number
}

/** Options of `client.semaphore()` and `client.semaphoreMutex()`. */
export interface SemaphoreOptions {
  /** Every lease ends after this many milliseconds (see `MutexOptions.maxHoldMs`). */
  maxHoldMs?: number
  /** Chubby's lock-delay per lease (see `MutexOptions.lockDelayMs`; `client.semaphore` only). */
  lockDelayMs?: number
}

/** A bound on a call that is not an acquire (`participants`, `guardedWrite`). */
export interface TimeoutOptions {
  /**
   * The acquire's rule: absent, -1 or Infinity no bound. A bound that passes rejects with
   * ZKLOCK_TIMEOUT (a guarded write: nothing sent) or, once a guarded write was sent, with
   * ZKLOCK_OUTCOME_UNKNOWN; 0 always times out.
   */
  timeoutMs?: number
}

export interface AcquireOptions {
  /**
   * Give up after this long with ZKLOCK_TIMEOUT; 0 makes one attempt. Absent, -1, Infinity (or
   * more than the clock holds): wait forever. NaN, -Infinity and other negatives reject with
   * ZKLOCK_INVALID_ARGUMENT. (zklock's one timeout rule, the same in every language.)
   */
  timeoutMs?: number
  /**
   * The safe form of a computed deadline, instead of `timeoutMs: deadline - Date.now()` (which
   * is -1, "wait forever", when the deadline passed a millisecond ago): a Date or milliseconds
   * since the epoch (Date.now()'s clock). Once it has passed, one attempt (ZKLOCK_TIMEOUT when
   * the lock is held). An invalid Date (NaN) rejects with ZKLOCK_INVALID_ARGUMENT, and so does
   * giving both `timeoutMs` and `deadline`. Read against the system clock once, when the
   * acquire starts; the wait itself is not moved by a later clock step.
   */
  deadline?: Date | number
  /**
   * Aborting it rejects the pending acquire with ZKLOCK_ABORTED and removes its node. One signal
   * may serve any number of acquires at once: they share one 'abort' listener, removed when the
   * last of them settles.
   */
  signal?: AbortSignal
}

/** A lock's acquire options: `AcquireOptions` and the queue position callback. */
export interface LockAcquireOptions extends AcquireOptions {
  /** Who acquires (issue 50), by identity: one owner re-enters its hold. Absent: this lock's
   * `using()` around the call, else the call itself. `{ owner: lock }`: one hold for all. */
  owner?: object
  /**
   * Called on the JS thread with the acquire's place in the queue (how many contenders must
   * leave before it can hold: the nodes ahead for a mutex or a write side, the writers ahead
   * for a read side, the leases that must go for a semaphore) when it is queued behind others,
   * and again each time that changes; never for an acquire that holds at once. As of the
   * acquire's last look at the queue: an upper bound (docs/contract.md, "Queue position").
   */
  onQueued?: (position: number) => void
}

export type LeaseState = 'held' | 'suspended' | 'lost' | 'released'

/** What `release()` found (the core's names). */
export type ReleaseResult = 'released' | 'still-held' | 'was-lost'

/** Which library made a lock node (the core's names). */
export type Library = 'zklock' | 'curator' | 'kazoo' | 'go-zookeeper' | 'unknown'

/** What a lock node asks for (the core's names; 'lease': a semaphore's lease node, or a waiter). */
export type NodeKind = 'mutex' | 'read' | 'write' | 'lease' | 'latch'

export interface RevokeOptions {
  /** One node to ask (its name or full path) instead of every current holder. */
  node?: string
}

export interface BreakOptions {
  /** Why: goes to the core's logs with the node, its token and holder. */
  reason?: string
}

export interface Participant {
  /** Full path of the node. */
  node: string
  /** The node's data: zklock's identity, or what another library wrote. */
  identity: string
  /** The node's czxid: the fencing token its holder got. */
  token: bigint
  /** Which library made the node. */
  library: Library
  /** What the node asks for. */
  kind: NodeKind
  /** The ZooKeeper session that owns the node. */
  sessionId: bigint
  /** A semaphore's N on its 'lease' participants, when known (ZooKeeper does not store it);
   * null otherwise (always present, null on a mutex or read/write participant). */
  maxLeases: number | null
}

/** One ZooKeeper session over an ensemble connect string. */
/** Percentiles of recorded times, in milliseconds (each a log bucket's upper bound, at most a
 * quarter above the time; `max` is exact). */
export interface Percentiles {
  count: number
  p50: number
  p90: number
  p99: number
  max: number
}

/** A client's lock statistics (`client.stats()`), counted by the core since it connected. */
export interface Stats {
  acquired: number
  timedOut: number
  cancelled: number
  failed: number
  wait: Percentiles
  hold: Percentiles
  /** Leases held now. */
  held: number
  /** Acquires waiting now. */
  waiting: number
  suspended: number
  lost: number
  reconnects: number
  sessionExpiries: number
}

/** One lock path's statistics (`client.pathStats()`); times in milliseconds. */
export interface PathStats {
  /** The lock path; null for the overflow series (paths past `pathStatsLimit`). */
  path: string | null
  acquired: number
  timedOut: number
  cancelled: number
  failed: number
  /** The sum of the waits of the acquired ones. */
  waitSum: number
  /** Leases lost, by reason word. */
  lost: { broken: number; 'max-hold': number; conflict: number; session: number }
  /** Leases held now. */
  held: number
  /** How long the oldest lease held now has been held (0 when none is). */
  oldestHold: number
}

/** Every lock path's statistics (`client.pathStats()`), sorted by path. */
export interface PathStatsSnapshot {
  /** The client's `pathStatsLimit` (0: off). */
  limit: number
  /** Acquires on paths past the limit, counted in `overflow`. */
  folded: number
  paths: PathStats[]
  overflow: PathStats | null
}

/** What `registerMetrics` needs of a prom-client `Registry`. */
export interface MetricsRegistry {
  registerMetric(metric: any): void
  removeSingleMetric(name: string): void
}

/** A write guarded by a lease: the core's op names. */
export type GuardedWrite =
  | { op: 'create'; path: string; data?: Uint8Array | string }
  | { op: 'set_data'; path: string; data?: Uint8Array | string }
  | { op: 'delete'; path: string }

/** What one guarded write did. */
export type GuardedWritten =
  | { op: 'create'; path: string }
  | { op: 'set_data'; version: number }
  | { op: 'delete' }

/**
 * A record of the core's log, published on the diagnostics channel `zklock` of the JS
 * environment (main thread or worker thread) whose client it is about: each environment gets
 * the records of its own clients only.
 */
export interface LogRecord {
  level: 'error' | 'warn' | 'info' | 'debug'
  event: 'acquire' | 'state' | 'session'
  message: string
  fields: Record<string, string>
}

/** The diagnostics channel `zklock` (subscribe before connecting to get 'debug' records); each
 * environment's channel carries the records of the clients connected in that environment. */
export declare const logChannel: import('node:diagnostics_channel').Channel

export interface CloseOnSignalsOptions {
  /** The signals to act on (default `['SIGINT', 'SIGTERM']`). */
  signals?: NodeJS.Signals[]
}

/**
 * Opt-in: on SIGINT (Ctrl-C) or SIGTERM, close every open client of this thread at once (its
 * locks go now, not after the session timeout), then re-raise the signal unless the
 * application also listens for it. Call once where the application starts, on the main thread.
 * Returns a function that removes the handlers.
 */
export declare function closeOnSignals(options?: CloseOnSignalsOptions): () => void

/** A connection: 'suspended' when it broke (the session may live, its leases are suspended), 'lost' when the session ended or the client was closed. */
export type ConnectionState = 'connected' | 'suspended' | 'lost'

export interface ClientEvents {
  /** The connection changed (kazoo's add_listener); 'lost' once per session. */
  state: [state: ConnectionState]
}

export declare class Client extends EventEmitter implements AsyncDisposable {
  private constructor()
  /** Connects to `hosts` (`host:port,host:port/optional/chroot`). */
  static connect(hosts: string, options?: ConnectOptions): Promise<Client>
  readonly hosts: string
  readonly sessionId: bigint
  readonly closed: boolean
  /** The tick the lease proof runs on, in ms: `serverTickMs` or the servers', learned at connect, whichever is larger. */
  readonly serverTick: number
  /** The ZooKeeper version class that answered at connect ('3.5', '3.6', '3.7+') and the requests it lacks. */
  serverFeatures(): { version: string; lacks: string[] }
  /** The connection now. */
  readonly state: ConnectionState
  on<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this
  once<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this
  off<K extends keyof ClientEvents>(event: K, listener: (...args: ClientEvents[K]) => void): this
  /** This client's lock statistics (times in milliseconds). */
  stats(): Stats
  /** An exclusive lock on `path`. */
  mutex(path: string, options?: MutexOptions): Mutex
  /**
   * A counting semaphore of `maxLeases` leases on `path` (Curator's InterProcessSemaphoreV2
   * layout; every user of the path must pass the same N). N out of 1..2^31-1 throws
   * ZKLOCK_INVALID_ARGUMENT.
   */
  semaphore(path: string, maxLeases: number, options?: SemaphoreOptions): Semaphore
  /** The semaphore of one lease: excludes Curator's InterProcessSemaphoreMutex. */
  semaphoreMutex(path: string, options?: SemaphoreOptions): Semaphore
  /**
   * A participant in the leader election on `path` (style 'latch' unless asked; id the
   * client's identity unless given). Bad input throws ZKLOCK_INVALID_ARGUMENT.
   */
  election(path: string, options?: ElectionOptions): Election
  /**
   * Watches who leads the election on `path` without taking part: `for await (const leader of
   * client.observeLeader(path))`, the leader now first (null: nobody leads), then each change.
   */
  observeLeader(path: string): LeaderWatch
  /**
   * Whether `token` is the fencing token of a current holder of the lock, or of the leader of
   * the election, on `path` (Chubby's CheckSequencer). True at the moment ZooKeeper answered.
   */
  check(path: string, token: bigint | number, options?: CheckOptions): Promise<boolean>
  /**
   * Asks the holder of `path` (every lease of a semaphore, or `options.node`) to let go: sets
   * its node's data to `__REVOKE__`, as Curator's Revoker.attemptRevoke does. Resolves with the
   * nodes asked; rejects with ZKLOCK_NOT_HELD when nobody holds `path` or the node is gone.
   */
  revoke(path: string, options?: RevokeOptions): Promise<string[]>
  /**
   * A shared counter on `path`: `width` 'int32' (the default: Curator's SharedCount; numbers) or
   * 'int64' (DistributedAtomicLong; bigints, exact past 2^53), so Curator shares the node.
   */
  counter(path: string, options?: CounterOptions<'int32'>): Counter<'int32'>
  counter(path: string, options: CounterOptions<'int64'>): Counter<'int64'>
  counter(path: string, options?: CounterOptions): Counter
  /**
   * Breaks a stuck lock: deletes `node` (its name or full path), checked against the version
   * read just before. Resolves with the contender broken; rejects with ZKLOCK_NOT_HELD when the
   * node is not there, ZKLOCK_PERMISSION when the ACL refuses. A zklock holder's lease turns
   * lost with the reason 'broken'.
   */
  breakLock(path: string, node: string, options?: BreakOptions): Promise<Participant>
  /** A read/write lock on `path`. */
  rwLock(path: string, options?: { maxHoldMs?: number }): RwLock
  /**
   * This client's statistics as OpenMetrics text (what Prometheus scrapes), each sample
   * labelled client="<id>" and with `labels`.
   */
  openmetrics(labels?: Record<string, string>): string
  /** This client's statistics per lock path (at most `pathStatsLimit` paths, then `overflow`). */
  pathStats(): PathStatsSnapshot
  /**
   * Serves this client's metrics (the families of `openmetrics()`) from a prom-client
   * Registry (its default `register` when absent, which needs prom-client installed), read at
   * each scrape. Returns a function that unregisters them.
   */
  registerMetrics(registry?: MetricsRegistry, labels?: Record<string, string>): () => void
  /**
   * Exclusive locks on several paths taken as one (all or nothing, in path order).
   * `maxHoldMs` ends the whole hold that long after every member became ours (each member
   * lost, reason 'max-hold', its node deleted); `lease.extend` moves the end for every member,
   * up to `holdCeilingMs`.
   */
  multiLock(paths: readonly string[], options?: { maxHoldMs?: number; holdCeilingMs?: number }): MultiLock
  /**
   * Closes the session: its leases are lost (when it resolves, each one's state is 'lost', its
   * signal aborted and 'lost' emitted); later calls reject with ZKLOCK_CLOSED. A client still
   * open when the process exits is closed then.
   */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** A lock on one path (a mutex, or one side of a RwLock), or a multi-lock. */
export declare class Lock {
  protected constructor()
  readonly path: string
  /** How many holds the current caller has: inside this lock's `using()`, its; elsewhere 0. */
  readonly holdCount: number
  /** How many holds the explicit `owner` (acquire's `{ owner }`) has now. */
  holdCountOf(owner: object): number
  /**
   * How many contenders must leave before the first acquire waiting through this object can
   * hold (as `onQueued` hears it); null when none is queued.
   */
  readonly position: number | null
  /** Waits until the lock is ours; other callers of this object wait their turn (issue 50). */
  acquire(options?: LockAcquireOptions): Promise<Lease>
  /** One attempt: null when someone else holds the lock. */
  tryAcquire(options?: { owner?: object }): Promise<Lease | null>
  /**
   * Runs `fn` under the lock and releases it afterwards, also when `fn` throws. Rejects with
   * `fn`'s error, or with ZKLOCK_LOST when the lease was lost before `fn` finished (as
   * `await using` does at block exit). Acquires of this lock inside `fn` re-enter its hold.
   */
  using<T>(fn: (lease: Lease) => T | PromiseLike<T>, options?: LockAcquireOptions): Promise<Awaited<T>>
  /**
   * The queue: holder(s) first, then waiters in order. `timeoutMs` (the acquire's rule) rejects
   * with ZKLOCK_TIMEOUT when the listing, waiting for a reconnect included, takes longer.
   */
  participants(options?: TimeoutOptions): Promise<Participant[]>
}

/** An exclusive lock (Curator's InterProcessMutex), re-entrant per caller (issue 50). */
export declare class Mutex extends Lock {}

/**
 * A counting semaphore (Curator's InterProcessSemaphoreV2 layout): at most `maxLeases` leases
 * at once. Never re-entrant: every acquire takes a lease of its own (`holdCount` stays 0).
 */
export declare class Semaphore extends Lock {
  /** N: how many leases may exist at once. */
  readonly maxLeases: number
}

/** Several exclusive locks taken as one. */
export declare class MultiLock extends Lock {
  readonly paths: string[]
}

/** A read/write lock: any number of readers or one writer. A read holder asking for the write
 * side is rejected with ZKLOCK_UPGRADE; a write holder may take the read side. */
export declare class RwLock {
  private constructor()
  readonly path: string
  readonly read: Lock
  readonly write: Lock
  participants(options?: TimeoutOptions): Promise<Participant[]>
}

export interface LeaseEvents {
  /** The connection to ZooKeeper was lost: whether we still hold the lock is unknown. */
  suspended: []
  /** Reconnected to the same session; the lock is still ours. */
  resumed: []
  /** Final, once: the session expired, our node was deleted or the client closed. */
  lost: [error: ZkLockError]
  /**
   * Once, while held: someone asked the holder to let go (its node's data set to
   * `__REVOKE__`). Opt-in: listening for it is what asks zklock to tell. Like the other
   * events, a listener does not keep the process alive.
   */
  revokeRequested: []
}

/** A counter's width: 'int32' (Curator's SharedCount) or 'int64' (DistributedAtomicLong). */
export type CounterWidth = 'int32' | 'int64'
/** A count's value: a number for 'int32', a bigint for 'int64' (exact over 64 bits). */
export type CountValue<W extends CounterWidth = CounterWidth> = W extends 'int32' ? number : bigint
/** `width`: 'int32' (the default) or 'int64'. */
export interface CounterOptions<W extends CounterWidth = CounterWidth> { width?: W }

/** A count and the data version it was read at (version -1: the node does not exist yet). */
export interface Count<W extends CounterWidth = CounterWidth> { value: CountValue<W>; version: number }

/** A shared counter on Curator's layouts (`client.counter(path)`); arguments take a safe integer or a bigint. */
export declare class Counter<W extends CounterWidth = CounterWidth> {
  private constructor()
  readonly path: string
  readonly width: W
  /** The count and its version (`{ value: 0, version: -1 }` while the node does not exist). */
  get(): Promise<Count<W>>
  /** Sets `value` if the count is still at `seen.version`: the new count, or null when it moved. */
  compareAndSet(seen: Count<W>, value: number | bigint): Promise<Count<W> | null>
}

/**
 * A held lock. It stays held until released, lost, its client closed or the process exits;
 * garbage collection never releases it (a held lease no longer referenced emits a
 * 'ZklockWarning' process warning).
 */
export declare class Lease extends EventEmitter implements AsyncDisposable {
  protected constructor()
  /** The fencing token: strictly increases from one holder of the lock to the next. */
  readonly token: bigint
  /** Every member's token (a multi-lock has several), in path order. */
  readonly tokens: bigint[]
  /** Full path of our lock node (the first member's for a multi-lock). */
  readonly path: string
  readonly paths: string[]
  /** The path of the lock this lease holds. */
  readonly lockPath: string
  /** Reading 'lost' means `signal` is aborted and 'lost' emitted already. */
  readonly state: LeaseState
  /** Aborted once when the lease is lost; its reason is a ZKLOCK_LOST error. */
  readonly signal: AbortSignal
  /** True once someone asked this holder to let go; the lease stays held until released. */
  readonly revokeRequested: boolean
  /**
   * Listens for one of `LeaseEvents`. A lease never emits 'error', but accepts 'error'
   * listeners, so that Node's `events.once(lease, 'lost')` and `events.on(lease, ...)` (which add
   * one) work; any other event name throws ZKLOCK_INVALID_ARGUMENT.
   */
  on<K extends keyof LeaseEvents>(event: K, listener: (...args: LeaseEvents[K]) => void): this
  once<K extends keyof LeaseEvents>(event: K, listener: (...args: LeaseEvents[K]) => void): this
  off<K extends keyof LeaseEvents>(event: K, listener: (...args: LeaseEvents[K]) => void): this
  /**
   * Runs the writes as one multi request with a check that the lease's node still exists: all
   * apply or none; rejects with ZKLOCK_LOST after loss (nothing applied), ZKLOCK_OUTCOME_UNKNOWN
   * when the connection broke after sending (it may have been applied). On a suspended lease
   * the batch waits for the reconnect, within `timeoutMs` (ZKLOCK_TIMEOUT, nothing sent).
   */
  guardedWrite(writes: readonly GuardedWrite[], options?: TimeoutOptions): Promise<GuardedWritten[]>
  /**
   * Adds `by` (default 1) to `counter` only while this lease holds its lock (one multi with the
   * lock node's check, at the version just read): the new count. ZKLOCK_LOST after a loss
   * (nothing written), ZKLOCK_INVALID_ARGUMENT past the counter's width.
   */
  guardedIncrement<W extends CounterWidth>(counter: Counter<W>, by?: number | bigint): Promise<Count<W>>
  /**
   * Moves the end of the maximum hold (`maxHoldMs`) to `byMs` from now, same token; returns the
   * new end on Date.now()'s clock. Throws ZKLOCK_LOST after a loss, ZKLOCK_INVALID_ARGUMENT
   * without a maximum hold or past the mutex's `holdCeilingMs`.
   */
  extend(byMs: number): number
  /** Calls `callback(msLeft)` once the maximum hold is `beforeMs` from its end (again after each extension). */
  onExpiring(beforeMs: number, callback: (msLeft: number) => void): void
  /** Until when no one else holds: ms on Date.now() (null once final); a kept value misleads: use timeLeft(). */
  validUntil(): number | null
  /** Ms left until validUntil(), on a clock that counts a suspend (0 once passed); null once released or lost. */
  timeLeft(): number | null
  /**
   * A held lease keeps the event loop (and the process) alive until released or lost, as a
   * pending timer does; `unref()` lets the process end while it is held, `ref()` undoes that.
   */
  unref(): this
  ref(): this
  /** Whether the lease keeps the event loop alive now (held, and not `unref()`'d). */
  hasRef(): boolean
  /** Releases the lease; a second call rejects with ZKLOCK_NOT_HELD. */
  release(): Promise<ReleaseResult>
  /**
   * `await using lease = await lock.acquire()`: releases at block exit, and rejects with
   * ZKLOCK_LOST when the lease was lost inside the block, as `Lock.using()` does: the block's
   * work was (partly) done without the lock. If the block threw too, both errors come as a
   * `SuppressedError` (`error`: the ZKLOCK_LOST one, `suppressed`: the block's). A lease
   * released by hand inside the block is not released again and disposes quietly.
   */
  [Symbol.asyncDispose](): Promise<void>
}

// Leader election -----------------------------------------------------------------------------

/**
 * The layouts of an election's nodes (the core's names): 'latch' (Curator's LeaderLatch, the
 * default), 'selector' (Curator's LeaderSelector), 'kazoo' (kazoo's Election). Participants of
 * different layouts on one path refuse to lead (ZKLOCK_CONFLICT).
 */
export type ElectionStyle = 'latch' | 'selector' | 'kazoo'

export interface ElectionOptions {
  /** Default 'latch'. An unknown name throws ZKLOCK_INVALID_ARGUMENT listing the known ones. */
  style?: ElectionStyle
  /** The participant id, written as the node's data (at most 1024 bytes, no NUL). Default: the
   * client's identity. */
  id?: string
  /** A leadership ends (lost, reason 'max-hold', node deleted) after this many milliseconds.
   * Absent: no limit. */
  maxHoldMs?: number
  /** Chubby's lock-delay (see `MutexOptions.lockDelayMs`): after a leader went without a clean
   * resign, the next leadership starts this many milliseconds later. Absent: none. */
  lockDelayMs?: number
}

export interface CheckOptions {
  /** A semaphore's N: only its first N lease nodes hold (absent: any lease node). */
  maxLeases?: number
}

/** A participant of an election, or the leader an observer reports. */
export interface ElectionParticipant {
  /** Full path of the node. */
  node: string
  /** The participant id (the node's data). */
  id: string
  /** The node's czxid: the fencing token of its leadership. */
  token: bigint
  /** The ZooKeeper session that owns the node. */
  sessionId: bigint
  library: Library
  kind: NodeKind
  /** The participant's family (layout); null for a node of no election layout. */
  style: ElectionStyle | null
}

export interface ResignOptions {
  /** Run again at the tail of the queue: `resign()` resolves with the next Leadership. */
  requeue?: boolean
  /** With `requeue`: aborts the wait for the next leadership (ZKLOCK_ABORTED, node removed). */
  signal?: AbortSignal
}

export interface RunOptions {
  /** Run again at the tail each time `fn` settles, until `signal` aborts. */
  requeue?: boolean
  /** Stops waiting to lead (ZKLOCK_ABORTED) and aborts the signal `fn` gets. */
  signal?: AbortSignal
}

/**
 * A leadership: a Lease of the election's first node (token, states, `signal` aborted when
 * lost, events, guardedWrite, validUntil). Releasing or disposing it (`await using`) resigns.
 *
 * The guarantee: 'lost' fires (and `signal` aborts) before ZooKeeper can let anyone else lead,
 * given a bounded clock-rate drift. A paused process cannot act on it: a resource that must
 * never obey two leaders checks the token (`client.check`, or keeps the largest it saw).
 */
export declare class Leadership extends Lease {}

export declare class Election {
  private constructor()
  readonly path: string
  readonly style: ElectionStyle
  /** This participant's id (its node's data). */
  readonly id: string
  /** The longest a leadership lasts, in milliseconds; null for no limit. */
  readonly maxHoldMs: number | null
  /**
   * Waits until this participant leads. `timeoutMs` / `deadline` as an acquire's
   * (ZKLOCK_TIMEOUT), `signal` aborts (ZKLOCK_ABORTED, node removed); ZKLOCK_CONFLICT when a
   * node of another layout is on the path.
   */
  lead(options?: AcquireOptions): Promise<Leadership>
  /** Gives the leadership up (the next participant leads). */
  resign(lead: Lease, options?: ResignOptions & { requeue?: false }): Promise<void>
  /** Gives the leadership up and runs again at the tail: resolves with the next leadership. */
  resign(lead: Lease, options: ResignOptions & { requeue: true }): Promise<Leadership>
  resign(lead: Lease, options?: ResignOptions): Promise<Leadership | void>
  /** Sets the leadership's node data (a guarded write: ZKLOCK_LOST after loss). */
  proclaim(lead: Lease, data: string | Uint8Array): Promise<void>
  /** Everyone running, in election order (the leader first). */
  participants(): Promise<ElectionParticipant[]>
  /** The leader now, or null when nobody leads. */
  leader(): Promise<ElectionParticipant | null>
  /**
   * Waits to lead, runs `fn(lead, signal)` (`signal` aborts when the leadership is lost, or the
   * run's `signal` aborts; its reason is a zklock error either way: ZKLOCK_LOST, or
   * ZKLOCK_ABORTED with the caller's reason as `cause`), resigns once `fn` settled. Resolves with `fn`'s result; rejects with
   * `fn`'s error, or ZKLOCK_LOST when the leadership was lost before `fn` finished. With
   * `requeue` it runs again at the tail each time, until `signal` aborts (ZKLOCK_ABORTED).
   */
  run<T>(fn: (lead: Leadership, signal: AbortSignal) => T | PromiseLike<T>, options?: RunOptions): Promise<Awaited<T>>
}

export interface LeaderWatchNextOptions {
  /** The acquire's rule: absent, -1 or Infinity no bound; ZKLOCK_TIMEOUT when nothing changed. */
  timeoutMs?: number
}

/**
 * Who leads an election, seen from outside: the leader now first (null: nobody leads), then
 * each change. `return()` (or leaving a `for await`, or `await using`) stops it.
 */
export declare class LeaderWatch
  implements AsyncIterableIterator<ElectionParticipant | null>, AsyncDisposable
{
  private constructor()
  readonly path: string
  next(options?: LeaderWatchNextOptions): Promise<IteratorResult<ElectionParticipant | null, undefined>>
  return(value?: unknown): Promise<IteratorResult<ElectionParticipant | null, undefined>>
  [Symbol.asyncIterator](): LeaderWatch
  [Symbol.asyncDispose](): Promise<void>
}
