// Issue 12, part 4 (Node): try, timeout and abort hold while the server is unreachable. A waiter
// talks to ZooKeeper through the fault proxy, a holder on the direct link keeps the lock, and
// the proxy black-holes the waiter's link during the wait. The face adds no timers: the deadline
// and the AbortSignal go to the core, which decides when an acquire settles. Each test prints the
// time it measured.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { performance } = require('node:perf_hooks')
const { useZooKeeper, uniquePath } = require('./harness.js')
const { Client, ErrorCode } = require('../index.js')

let zk
let holder
useZooKeeper({ proxy: true, clients: [{ sessionTimeoutMs: 10_000 }] }, (s) => ([zk, holder] = [s.zk, ...s.clients]))

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Settles `p` as {ok, value | error, ms since `start`}, giving up (a failure) after `capMs`. */
async function timed(p, start, capMs) {
  let timer
  const cap = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ hung: true }), capMs)
  })
  const outcome = await Promise.race([
    p.then(
      (value) => ({ ok: true, value }),
      (error) => ({ ok: false, error }),
    ),
    cap,
  ])
  clearTimeout(timer)
  return { ...outcome, ms: Math.round(performance.now() - start) }
}

/** A waiter on the proxied link and a held lock it has to wait for. */
async function scenario(name, body) {
  const lockPath = uniquePath(name)
  const held = await holder.mutex(lockPath).acquire()
  const waiter = await Client.connect(zk.proxy, { sessionTimeoutMs: 10_000 })
  try {
    return await body(waiter.mutex(lockPath))
  } finally {
    await zk.command('heal').catch(() => {})
    await waiter.close()
    await held.release()
  }
}

test('tryAcquire() settles within 0.5 s while the server is unreachable', async () => {
  const r = await scenario('outage-try', async (m) => {
    await zk.command('blackhole')
    const start = performance.now()
    return timed(m.tryAcquire(), start, 30_000)
  })
  console.log(`tryAcquire during a black hole settled after ${r.ms} ms: ${describe(r)}`)
  assert.ok(!r.hung, `tryAcquire did not settle within 30 s`)
  assert.ok(r.ms <= 500, `tryAcquire took ${r.ms} ms`)
  assert.ok(r.ok ? r.value === null : r.error.code !== undefined, describe(r))
})

test('acquire({ timeoutMs: 1000 }) rejects with ZKLOCK_TIMEOUT within 1.5 s while the server is unreachable', async () => {
  const r = await scenario('outage-timeout', async (m) => {
    const start = performance.now()
    const pending = m.acquire({ timeoutMs: 1_000 })
    await sleep(500)
    await zk.command('blackhole')
    return timed(pending, start, 30_000)
  })
  console.log(`acquire({ timeoutMs: 1000 }) settled after ${r.ms} ms: ${describe(r)}`)
  assert.ok(!r.hung, 'the acquire did not settle within 30 s')
  assert.equal(r.ok, false, 'the acquire succeeded although the lock was held')
  assert.equal(r.error.code, ErrorCode.TIMEOUT, describe(r))
  assert.ok(r.ms <= 1_500, `the acquire took ${r.ms} ms`)
})

test('an AbortSignal.timeout(500) rejects with ZKLOCK_ABORTED within 1 s while the server is unreachable', async () => {
  const r = await scenario('outage-abort', async (m) => {
    const start = performance.now()
    const pending = m.acquire({ signal: AbortSignal.timeout(500) })
    // The black hole starts before the abort, so the abort happens during the outage.
    await sleep(250)
    await zk.command('blackhole')
    return timed(pending, start, 30_000)
  })
  console.log(`acquire({ signal: AbortSignal.timeout(500) }) settled after ${r.ms} ms: ${describe(r)}`)
  assert.ok(!r.hung, 'the acquire did not settle within 30 s')
  assert.equal(r.ok, false, 'the acquire succeeded although the lock was held')
  assert.equal(r.error.code, ErrorCode.ABORTED, describe(r))
  assert.ok(r.ms <= 1_000, `the acquire took ${r.ms} ms`)
})

function describe(r) {
  if (r.hung) return 'still pending'
  if (r.ok) return `resolved with ${r.value === null ? 'null' : 'a lease'}`
  return `rejected with ${r.error.code}: ${r.error.message}`
}
