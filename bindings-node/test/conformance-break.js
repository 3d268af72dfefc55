// The Node runner's scenarios of issue 37's breaking of a stuck lock (cases.txt's block), apart
// from conformance.test.js, which is past the 700-line rule: `client.breakLock(path, node,
// { reason })` from a second client; the broken holder's `signal` (aborted with ZKLOCK_LOST,
// the core's reason at the end of its message).
'use strict'

const MISSING = '_c_00000000-0000-0000-0000-000000000000-lock-0000009999'
const WAIT_MS = 10000

/** Resolves with the lease's ZKLOCK_LOST error, or null after `ms`. */
function lostWithin(lease, ms) {
  const signal = lease.signal
  if (signal.aborted) return Promise.resolve(signal.reason)
  return Promise.race([
    new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })),
    new Promise((resolve) => setTimeout(() => resolve(null), ms).unref()),
  ])
}

/**
 * The scenarios, given the runner's helpers: `client()` the runner's connected client,
 * `outcome(fn)` (a zklock error as its kind), `ownClient(fn)` (a client of the case's own).
 */
function breakScenarios({ client, outcome, ownClient }) {
  const breakNamed = (p, node) =>
    ownClient(async (other) => {
      const held = await client().mutex(p).acquire()
      try {
        return await outcome(async () => {
          await other.breakLock(p, node, { reason: 'conformance' })
          return 'broken'
        })
      } finally {
        await held.release()
      }
    })
  return {
    'break-without-node': (p) => breakNamed(p, ''),
    'break-missing-node': (p) => breakNamed(p, MISSING),
    'break-holder': (p) =>
      ownClient((own) =>
        ownClient((waiter) =>
          ownClient(async (breaker) => {
            const held = await own.mutex(p).acquire()
            const waiting = waiter.mutex(p).acquire({ timeoutMs: WAIT_MS })
            const name = held.path.split('/').pop()
            const broken = await breaker.breakLock(p, name, { reason: 'conformance' })
            const lost = await lostWithin(held, WAIT_MS)
            const why = lost === null ? 'none' : (lost.message.split(' lost: ').pop() || '').split(/[: ]/)[0]
            const state = held.state
            const next = await waiting
            const up = next.token > broken.token ? 'token-up' : 'token-down'
            await next.release()
            await held.release().catch(() => {})
            return `${state},${why},${up}`
          }),
        ),
      ),
  }
}

module.exports = { breakScenarios }
