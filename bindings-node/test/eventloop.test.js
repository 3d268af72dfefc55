// Acceptance 2: while 100 acquires wait on one held lock, the event loop keeps running (a
// 10 ms interval is never late by more than 50 ms) and the libuv pool stays free (an
// fs.promises.readFile completes). Waiting happens on the core's runtime.
// Issue 17: what an operation costs the JS thread. A re-entrant acquire and its release settle
// without a trip to the core's runtime and back, and a lease nobody listens to asks the core for
// no state reports (each would be one more threadsafe call waking the JS thread), and promises
// are settled through one threadsafe function per environment, not one each.
'use strict'
const test = require('node:test')
const asyncHooks = require('node:async_hooks')
const assert = require('node:assert/strict')
const fsp = require('node:fs/promises')
const { startZooKeeper, uniquePath, eventually } = require('./harness.js')
const { Client } = require('../index.js')

const WAITERS = 100

let zk
let holderClient
let waiterClient
test.before(async () => {
  zk = await startZooKeeper()
  holderClient = await Client.connect(zk.servers)
  waiterClient = await Client.connect(zk.servers)
})
test.after(async () => {
  if (holderClient) await holderClient.close()
  if (waiterClient) await waiterClient.close()
  if (zk) await zk.stop()
})

function measureLoop(ms) {
  return new Promise((resolve) => {
    let last = performance.now()
    let worst = 0
    let ticks = 0
    const timer = setInterval(() => {
      const now = performance.now()
      worst = Math.max(worst, now - last - 10)
      last = now
      ticks++
    }, 10)
    setTimeout(() => {
      clearInterval(timer)
      resolve({ worst, ticks })
    }, ms)
  })
}

test(`${WAITERS} pending acquires block neither the event loop nor the libuv pool`, async (t) => {
  const lockPath = uniquePath('eventloop')
  const held = await holderClient.mutex(lockPath).acquire()
  // Separate Mutex objects: each acquire takes its own place in the queue.
  const pending = Array.from({ length: WAITERS }, () =>
    waiterClient.mutex(lockPath).acquire({ timeoutMs: 120_000 }),
  )
  const probe = holderClient.mutex(lockPath)
  await eventually(
    async () => (await probe.participants()).length === WAITERS + 1,
    30_000,
    `${WAITERS} waiter nodes`,
  )

  // The libuv pool has 4 threads: if waiters sat on them, this would never complete.
  const readStarted = performance.now()
  const [loop, text] = await Promise.all([
    measureLoop(1_000),
    fsp.readFile(__filename, 'utf8').then((t) => ({ t, ms: performance.now() - readStarted })),
  ])
  t.diagnostic(
    `interval ticks ${loop.ticks}, worst lateness ${loop.worst.toFixed(1)} ms, readFile ${text.ms.toFixed(1)} ms`,
  )
  assert.ok(text.t.includes('libuv pool'), 'readFile read this file')
  assert.ok(text.ms < 1_000, `readFile took ${text.ms} ms`)
  assert.ok(loop.ticks >= 50, `the 10 ms interval fired only ${loop.ticks} times in 1 s`)
  assert.ok(loop.worst < 50, `the event loop was blocked for ${loop.worst.toFixed(1)} ms`)

  // Hand the lock down the queue: every waiter gets it once, one at a time.
  await held.release()
  let holding = 0
  const tokens = []
  await Promise.all(
    pending.map(async (p) => {
      const lease = await p
      holding++
      assert.equal(holding, 1, 'two waiters held the lock at once')
      tokens.push(lease.token)
      await new Promise((r) => setImmediate(r))
      holding--
      await lease.release()
    }),
  )
  assert.equal(tokens.length, WAITERS)
  const sorted = [...tokens].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
  assert.deepEqual(tokens, sorted, 'tokens increase in the order the lock was handed on')
  assert.equal((await probe.participants()).length, 0)
})

test('re-entrant acquires and their releases settle without waiting for the event loop', async () => {
  const mutex = holderClient.mutex(uniquePath('reentrant-sync'))
  // One caller (an explicit owner): re-entered outside a using() scope's bookkeeping too.
  const me = {}
  const outer = await mutex.acquire({ owner: me })
  // setImmediate runs at the next turn of the event loop; a settle that came back from the
  // core's thread through libuv would need at least one turn for each of the 200 cycles.
  let turned = false
  setImmediate(() => {
    turned = true
  })
  for (let i = 0; i < 200; i++) {
    const inner = await mutex.acquire({ timeoutMs: 5_000, owner: me })
    assert.equal(mutex.holdCountOf(me), 2)
    assert.equal(await inner.release(), 'still-held')
    const tried = await mutex.tryAcquire({ owner: me })
    assert.ok(tried, 'tryAcquire re-enters a lock its owner holds')
    assert.equal(await tried.release(), 'still-held')
  }
  assert.equal(turned, false, 'a re-entrant cycle waited for a turn of the event loop')
  assert.equal(mutex.holdCountOf(me), 1)
  // An invalid timeout is still refused on the re-entrant path, before anything is taken.
  await assert.rejects(mutex.acquire({ timeoutMs: -5, owner: me }), { code: 'ZKLOCK_INVALID_ARGUMENT' })
  assert.equal(mutex.holdCountOf(me), 1)
  assert.equal(await outer.release(), 'released')
  assert.equal(mutex.holdCountOf(me), 0)
})

test('an acquire and release nobody listens to make no threadsafe function, a lease listener makes one', async () => {
  const mutex = holderClient.mutex(uniquePath('no-listener'))
  await (await mutex.acquire()).release()
  // Every threadsafe function is an async resource other than a PROMISE: the promises are
  // settled through one made once per environment, and a lease's state reports would make one
  // per lease.
  const made = []
  const hook = asyncHooks.createHook({
    init(_id, type) {
      if (type !== 'PROMISE') made.push(type)
    },
  })
  const CYCLES = 20
  hook.enable()
  try {
    for (let i = 0; i < CYCLES; i++) {
      const lease = await mutex.acquire()
      await lease.release()
    }
  } finally {
    hook.disable()
  }
  assert.equal(made.length, 0, `async resources made in ${CYCLES} cycles: ${made.join(', ')}`)

  const lease = await mutex.acquire()
  made.length = 0
  hook.enable()
  try {
    lease.on('lost', () => {})
    lease.on('suspended', () => {})
  } finally {
    hook.disable()
  }
  assert.equal(made.length, 1, `the first listener asks the core for state reports: ${made.join(', ')}`)
  assert.equal(lease.state, 'held')
  assert.equal(lease.signal.aborted, false)
  assert.equal(await lease.release(), 'released')
})
