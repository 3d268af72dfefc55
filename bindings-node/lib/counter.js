// A shared counter on Curator's layouts (`client.counter(path, { width })`): 'int32' is
// Curator's SharedCount, 'int64' DistributedAtomicLong, so a Curator process shares the node.
// The width's names and every rule are the core's; this file checks JS types and converts.
'use strict'

const { translate, invalid } = require('./errors')
const { describe, internalOnly } = require('./args')

const kNativeCounter = Symbol('zklock.nativeCounter')

/** A count argument: a JS number counts exactly up to 2^53 - 1. */
function checkCount(value, what) {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw invalid(`${what} must be a safe integer number, got ${describe(value)}`)
  }
  return value
}

/** A count read back: `{ value, version }` (version -1: the node does not exist yet). */
function countOf(native) {
  return native === null || native === undefined ? null : { value: native.value, version: native.version }
}

class Counter {
  #native

  constructor(token, native) {
    internalOnly(token, 'Counter')
    this.#native = native
  }

  /** The counter's node. */
  get path() {
    return this.#native.path
  }

  /** 'int32' (Curator's SharedCount) or 'int64' (DistributedAtomicLong). */
  get width() {
    return this.#native.width
  }

  /** The count and its version (`{ value: 0, version: -1 }` while the node does not exist). */
  async get() {
    try {
      return countOf(await this.#native.get())
    } catch (e) {
      throw translate(e)
    }
  }

  /**
   * Sets the count to `value` if it is still at `seen.version` (creating the node when `seen`
   * is the missing node's): the new `{ value, version }`, or null when it moved meanwhile.
   */
  async compareAndSet(seen, value) {
    if (typeof seen !== 'object' || seen === null) {
      throw invalid(`seen must be a count from counter.get(), got ${describe(seen)}`)
    }
    const seenValue = checkCount(seen.value, 'seen.value')
    const seenVersion = checkCount(seen.version, 'seen.version')
    checkCount(value, 'value')
    try {
      return countOf(await this.#native.compareAndSet(seenValue, seenVersion, value))
    } catch (e) {
      throw translate(e)
    }
  }

  /** zklock's own (lease.guardedIncrement): the native counter. */
  [kNativeCounter]() {
    return this.#native
  }

  get [Symbol.toStringTag]() {
    return 'Counter'
  }
}

module.exports = { Counter, checkCount, countOf, kNativeCounter }
