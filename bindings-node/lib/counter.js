// A shared counter on Curator's layouts (`client.counter(path, { width })`): 'int32' is
// Curator's SharedCount, 'int64' DistributedAtomicLong, so a Curator process shares the node.
// The width's names and every rule are the core's; this file checks JS types and converts.
'use strict'

const { translate, invalid } = require('./errors')
const { describe, internalOnly } = require('./args')

const kNativeCounter = Symbol('zklock.nativeCounter')

const I64_MIN = -(2n ** 63n)
const I64_MAX = 2n ** 63n - 1n

/**
 * A count argument, as the bigint the native side takes: a safe integer number, or a bigint
 * within 64 bits (an int64 counter's values are bigints, issue 51). The counter's width is the
 * core's to check.
 */
function checkCount(value, what) {
  if (typeof value === 'bigint') {
    if (value < I64_MIN || value > I64_MAX) {
      throw invalid(`${what} must fit in 64 bits, got ${value}`)
    }
    return value
  }
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw invalid(`${what} must be a safe integer number or a bigint, got ${describe(value)}`)
  }
  return BigInt(value)
}

/**
 * A count read back: `{ value, version }` (version -1: the node does not exist yet). The value
 * comes as a bigint; an int32 counter's is given as a number (it always fits), an int64
 * counter's stays a bigint, so that 2^53 + 1 reads as itself and not as 2^53 (issue 51).
 */
function countOf(native, width) {
  if (native === null || native === undefined) return null
  const value = width === 'int32' ? Number(native.value) : native.value
  return { value, version: native.version }
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

  /**
   * The count and its version (`{ value: 0, version: -1 }` while the node does not exist): the
   * value a number for an 'int32' counter, a bigint for an 'int64' one (exact past 2^53).
   */
  async get() {
    try {
      return countOf(await this.#native.get(), this.width)
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
    if (!Number.isSafeInteger(seen.version)) {
      throw invalid(`seen.version must be a safe integer number, got ${describe(seen.version)}`)
    }
    const v = checkCount(value, 'value')
    try {
      return countOf(await this.#native.compareAndSet(seenValue, seen.version, v), this.width)
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
