// Issue 12, part 6 (Node): garbage collection never releases a lock. A held lease whose last
// reference is dropped stays held (another client cannot take the lock) and the process gets a
// 'ZklockWarning' naming the path; the lock goes when the client closes. A kept `lease.signal`
// still aborts when the lease is lost.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const v8 = require('node:v8')
const vm = require('node:vm')
const { useZooKeeper, uniquePath, eventually } = require('./harness.js')
const { Client, ErrorCode } = require('../index.js')

v8.setFlagsFromString('--expose_gc')
/** @type {() => void} */
const gc = vm.runInNewContext('gc')

let zk
let other
useZooKeeper({ clients: [{ sessionTimeoutMs: 10_000 }] }, (s) => ([zk, other] = [s.zk, ...s.clients]))

/** Collects until `done()` or fails after `ms`. */
async function collectUntil(done, ms, what) {
  const end = Date.now() + ms
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    gc()
    await new Promise((r) => setTimeout(r, 20))
  }
}

function zklockWarnings() {
  const seen = []
  const listener = (/** @type {Error} */ w) => {
    if (w.name === 'ZklockWarning') seen.push(w)
  }
  process.on('warning', listener)
  return { seen, stop: () => process.off('warning', listener) }
}

test('a held lease that nobody references any more is not released by garbage collection', async () => {
  const c = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  const warnings = zklockWarnings()
  try {
    const p = uniquePath('gc')
    // A temporary lock object and a lease nobody keeps.
    let collected = false
    const registry = new FinalizationRegistry(() => (collected = true))
    await (async () => {
      registry.register(await c.mutex(p).acquire(), 'lease')
    })()
    await collectUntil(() => collected && warnings.seen.length > 0, 20_000, 'the lease to be collected')
    assert.equal(warnings.seen.length, 1)
    const w = warnings.seen[0]
    assert.ok(w.message.includes(p), `the warning names the path: ${w.message}`)
    assert.match(w.message, /still held/)
    // Still held: the node is there and nobody else gets the lock.
    for (let i = 0; i < 5; i++) gc()
    await new Promise((r) => setTimeout(r, 300))
    assert.equal((await other.mutex(p).participants()).length, 1)
    assert.equal(await other.mutex(p).tryAcquire(), null)
    // Closing the client frees it.
    await c.close()
    const next = await other.mutex(p).acquire({ timeoutMs: 5_000 })
    assert.equal(await next.release(), 'released')
  } finally {
    warnings.stop()
    await c.close()
  }
})

test('a released or lost lease is collected without a warning', async () => {
  const c = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  const warnings = zklockWarnings()
  try {
    let collected = 0
    const registry = new FinalizationRegistry(() => collected++)
    await (async () => {
      const released = await c.mutex(uniquePath('gc-released')).acquire()
      registry.register(released, 'released')
      await released.release()
    })()
    const lostPath = uniquePath('gc-lost')
    await (async () => {
      const c2 = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
      registry.register(await c2.mutex(lostPath).acquire(), 'lost')
      await c2.close()
    })()
    await collectUntil(() => collected === 2, 20_000, 'both leases to be collected')
    await new Promise((r) => setTimeout(r, 100))
    assert.deepEqual(warnings.seen, [])
  } finally {
    warnings.stop()
    await c.close()
  }
})

test('a kept lease.signal still aborts when its unreferenced lease is lost', async () => {
  const c = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  const warnings = zklockWarnings()
  try {
    const p = uniquePath('gc-signal')
    let collected = false
    const registry = new FinalizationRegistry(() => (collected = true))
    const signal = await (async () => {
      const lease = await c.mutex(p).acquire()
      registry.register(lease, 'lease')
      return lease.signal
    })()
    await collectUntil(() => collected, 20_000, 'the lease to be collected')
    assert.equal(signal.aborted, false)
    assert.equal((await other.mutex(p).participants()).length, 1)
    await c.close()
    assert.equal(signal.aborted, true)
    assert.equal(signal.reason.code, ErrorCode.LOST)
    assert.equal(warnings.seen.length, 1)
  } finally {
    warnings.stop()
    await c.close()
  }
})

test('a lease with a lost listener stays alive to deliver it', async () => {
  const c = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  const warnings = zklockWarnings()
  try {
    const events = []
    let collected = false
    const registry = new FinalizationRegistry(() => (collected = true))
    await (async () => {
      const lease = await c.mutex(uniquePath('gc-listener')).acquire()
      registry.register(lease, 'lease')
      lease.on('lost', (e) => events.push(e.code))
    })()
    for (let i = 0; i < 10; i++) {
      gc()
      await new Promise((r) => setTimeout(r, 20))
    }
    assert.equal(collected, false, 'a lease with listeners was collected')
    await c.close()
    await eventually(() => events.length === 1, 5_000, 'the lost event')
    assert.deepEqual(events, [ErrorCode.LOST])
    assert.deepEqual(warnings.seen, [])
  } finally {
    warnings.stop()
    await c.close()
  }
})
