// Argument checks: a wrong type or shape throws ZKLOCK_INVALID_ARGUMENT; the values themselves
// are the core's to judge. Also the guarded writes' shape and the tokens of internal constructors.
'use strict'


const { ErrorCode, invalid, zkError } = require('./errors')

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

function checkCount(value, what) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number') {
    throw invalid(`${what} must be a number, got ${describe(value)}`)
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

module.exports = {
  acquireOptions, checkCount, checkMillis, checkOptions, checkSignal, checkString, checkWrites, describe, internalOnly, kInternal, kNativeLease, signalMethodFailed, tokenArgument }
