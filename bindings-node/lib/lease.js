// Leases: what a lease keeps after its object is gone (LeaseCore), the Lease a holder sees
// (events, AbortSignal, guarded writes, `await using`), and the events it emits.
'use strict'

const { EventEmitter } = require('node:events')

const { ErrorCode, call, invalid, translate, zkError } = require('./errors')
const { checkMillis, checkOptions, checkWrites, describe, internalOnly, kNativeLease } = require('./args')
const { Counter, checkCount, countOf, kNativeCounter } = require('./counter')

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
   * Moves the end of the maximum hold (`maxHoldMs`) to `byMs` from now, same token; returns the
   * new end (Date.now()'s clock). Throws ZKLOCK_LOST after a loss, ZKLOCK_INVALID_ARGUMENT
   * without a maximum hold or past the mutex's `holdCeilingMs`. validUntil() follows it.
   */
  extend(byMs) {
    const ms = checkMillis(byMs, 'byMs')
    if (ms === undefined) throw invalid(`byMs must be a number of milliseconds, got ${describe(byMs)}`)
    return call(() => this.#core.native.extend(ms))
  }

  /**
   * Calls `callback(msLeft)` once the maximum hold is `beforeMs` from its end, and again before
   * each new end after an extension. Never without a maximum hold, nor after the lease ended.
   */
  onExpiring(beforeMs, callback) {
    const ms = checkMillis(beforeMs, 'beforeMs')
    if (ms === undefined) throw invalid(`beforeMs must be a number of milliseconds, got ${describe(beforeMs)}`)
    if (typeof callback !== 'function') throw invalid(`callback must be a function, got ${describe(callback)}`)
    call(() =>
      this.#core.native.onExpiring(ms, (left) => {
        try {
          callback(Number(left))
        } catch (e) {
          process.nextTick(() => {
            throw e
          })
        }
      }),
    )
  }

  /**
   * Adds `by` (default 1) to `counter` only while this lease holds its lock: one multi with the
   * lock node's check, at the version just read (read again when the count moved). Resolves
   * with the new `{ value, version }`; rejects with ZKLOCK_LOST after a loss (nothing written),
   * ZKLOCK_INVALID_ARGUMENT past the counter's width.
   */
  async guardedIncrement(counter, by = 1) {
    if (!(counter instanceof Counter)) {
      throw invalid(`counter must be a Counter (client.counter(path)), got ${describe(counter)}`)
    }
    const step = checkCount(by, 'by')
    try {
      return countOf(await this.#core.native.guardedIncrement(counter[kNativeCounter](), step), counter.width)
    } catch (e) {
      throw translate(e)
    }
  }

  /**
   * Until when no one else can hold this lease's lock (Chubby's local lease), in milliseconds
   * on Date.now()'s clock, computed at the call; null once released or lost. While held it is
   * ahead of now and moves forward with every answered heartbeat; while suspended it stays
   * where the last proof put it. Check the time left before a side effect (a pause after the
   * check is what fencing tokens are for). A wall clock: a value kept is wrong by any step of
   * it (NTP, a suspend); timeLeft() cannot be misread.
   */
  validUntil() {
    return this.#core.native.validUntil() ?? null
  }

  /**
   * Milliseconds left until validUntil(), measured at the call on a clock that counts the time
   * the machine was suspended (CLOCK_BOOTTIME on Linux; docs/contract.md, "The clock"): 0 once
   * it passed, also after a suspend that outlasted it; null once released or lost.
   */
  timeLeft() {
    return this.#core.native.timeLeft() ?? null
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
    await releaseAtScopeEnd(this, 'the await using block')
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

module.exports = { Lease, LeaseCore, releaseAtScopeEnd }
