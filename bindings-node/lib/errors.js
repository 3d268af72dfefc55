// Errors: the codes a zklock call fails with, and the native errors translated into them.
'use strict'

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

/** Runs a native call, its failure as a zklock error. */
function call(fn) {
  try {
    return fn()
  } catch (e) {
    throw translate(e)
  }
}

module.exports = { ErrorCode, call, invalid, isZkLockError, translate, zkError }
