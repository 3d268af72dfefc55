// Elections: Election (one participant's side; a leadership is a Lease), LeaderWatch.
'use strict'


const { ErrorCode, call, invalid, isZkLockError, translate, zkError } = require('./errors')
const { acquireOptions, checkMillis, checkOptions, checkSignal, describe, internalOnly, kInternal, kNativeLease, signalMethodFailed } = require('./args')
const { Lease, LeaseCore, releaseAtScopeEnd } = require('./lease')
const { onAbort } = require('./lock')

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
      if (!requeue) return releaseAtScopeEnd(lead, 'the run() callback').then(() => result)
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

module.exports = { Election, LeaderWatch, Leadership }
