// Locks: Lock (a mutex or one side of a RwLock), Mutex, Semaphore, MultiLock, RwLock, and how an
// AbortSignal cancels a waiting acquire.
'use strict'


const { AsyncLocalStorage } = require('node:async_hooks')

const { native } = require('./native')
const { ErrorCode, call, invalid, isZkLockError, translate, zkError } = require('./errors')
const { acquireOptions, checkMillis, checkOptions, describe, internalOnly, kInternal, signalMethodFailed } = require('./args')
const { Lease, LeaseCore, releaseAtScopeEnd } = require('./lease')

// Who holds a lock (issue 50): concurrent callers of one Lock object exclude each other. A
// caller is one acquire call, or the async context of a using() callback: the callback and
// everything it awaits or starts re-enter the using()'s hold. The scopes map a lock object's
// group (both sides of a RwLock share one, so a read inside a write's scope downgrades) to the
// owner id of the using() around them; `{ owner }` names a caller explicitly (any object,
// compared by identity; the Lock object itself gives every caller one shared hold, the rule
// before issue 50).
const scopes = new AsyncLocalStorage()
/** @type {WeakMap<object, number>} */
const explicitOwners = new WeakMap()

/** The owner id of `options.owner`, of the using() scope around us, or a caller of its own. */
function callerOf(group, options) {
  const owner = options == null ? undefined : options.owner
  if (owner !== undefined) {
    if ((typeof owner !== 'object' && typeof owner !== 'function') || owner === null) {
      throw invalid(`owner must be an object (compared by identity), got ${describe(owner)}`)
    }
    let id = explicitOwners.get(owner)
    if (id === undefined) {
      id = native.newOwner()
      explicitOwners.set(owner, id)
    }
    return id
  }
  const scoped = scopes.getStore()?.get(group)
  return scoped ?? native.newOwner()
}

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

  /**
   * How many holds the current caller has now: inside a using() callback of this lock, the
   * using()'s; elsewhere 0, as a caller outside one is each acquire call of its own (issue 50).
   */
  get holdCount() {
    const scoped = scopes.getStore()?.get(this.#native.group)
    return scoped === undefined ? 0 : this.#native.holdCountOf(scoped)
  }

  /** How many holds the explicit `owner` (as given to acquire's `{ owner }`) has now. */
  holdCountOf(owner) {
    return this.#native.holdCountOf(callerOf(this.#native.group, { owner }))
  }

  /**
   * How many contenders must leave before the first acquire waiting through this object can
   * hold, as of its last look at the queue (the core's figure); null when none is queued.
   */
  get position() {
    return this.#native.position
  }

  /**
   * Waits until the lock is ours. `timeoutMs` (0 = one attempt) or `deadline` (a Date or
   * epoch milliseconds; one attempt once passed) rejects with ZKLOCK_TIMEOUT, an aborted
   * `signal` with ZKLOCK_ABORTED; neither leaves a node behind.
   */
  async acquire(options) {
    return this.#acquireAs(callerOf(this.#native.group, options), options)
  }

  /** `acquire` for the owner id `owner`. */
  async #acquireAs(owner, options) {
    const { timeoutMs, deadline, signal } = acquireOptions(options)
    const onQueued = checkOptions(options, 'acquire options').onQueued
    if (onQueued !== undefined && onQueued !== null && typeof onQueued !== 'function') {
      throw invalid(`onQueued must be a function, got ${describe(onQueued)}`)
    }
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
      nativeLease = call(() => this.#native.tryReenter(timeoutMs, deadline, owner))
      if (nativeLease == null) {
        pending = call(() => this.#native.startAcquire(timeoutMs, deadline, owner))
        if (onQueued) pending.onQueued((position) => onQueued(position))
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

  /** One attempt: a Lease, or null when someone else holds the lock. `{ owner }` as acquire's. */
  async tryAcquire(options) {
    const owner = callerOf(this.#native.group, checkOptions(options, 'tryAcquire options'))
    let nativeLease
    try {
      nativeLease =
        call(() => this.#native.tryReenter(0, undefined, owner)) ??
        (await call(() => this.#native.startAcquire(0, undefined, owner)).wait())
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
   * `acquire`'s. `fn` runs as the holder: an acquire of this lock inside it (or in anything it
   * awaits or starts) re-enters this hold, while other callers wait (issue 50).
   */
  async using(fn, options) {
    if (typeof fn !== 'function') throw invalid(`fn must be a function, got ${describe(fn)}`)
    const group = this.#native.group
    const owner = callerOf(group, options)
    const lease = await this.#acquireAs(owner, options)
    const scope = new Map(scopes.getStore())
    scope.set(group, owner)
    let result
    try {
      result = await scopes.run(scope, () => fn(lease))
    } catch (e) {
      await lease.release().catch(() => {})
      throw e
    }
    await releaseAtScopeEnd(lease, 'the using() callback')
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

module.exports = { Lock, MultiLock, Mutex, RwLock, Semaphore, onAbort }
