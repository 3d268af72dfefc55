// Issue 27, items 6 and 10: Node's own listener helpers work on a lease (`events.once` and
// `events.on` add an 'error' listener next to the one asked for), and one AbortSignal shared by
// many acquires neither trips Node's MaxListenersExceededWarning nor keeps listeners on the
// signal once the acquires have settled.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const events = require('node:events')
const { useZooKeeper, uniquePath } = require('./harness.js')
const { Client, ErrorCode } = require('../index.js')

let zk
let client
useZooKeeper({ clients: [{ sessionTimeoutMs: 10_000 }] }, (s) => ([zk, client] = [s.zk, ...s.clients]))

const WAIT = 10_000

test('events.once(lease, "lost") resolves with the ZKLOCK_LOST error when the lease is lost', async () => {
  const c = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  const lease = await c.mutex(uniquePath('once-lost')).acquire({ timeoutMs: WAIT })
  const lost = events.once(lease, 'lost')
  await c.close()
  const [err] = await lost
  assert.equal(err.code, ErrorCode.LOST)
  // events.once took its 'error' listener away again with the 'lost' one.
  assert.equal(lease.listenerCount('error'), 0)
  assert.equal(lease.listenerCount('lost'), 0)
})

test('events.on(lease, "lost") yields the loss and its iterator can be ended', async () => {
  const c = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  const lease = await c.mutex(uniquePath('on-lost')).acquire({ timeoutMs: WAIT })
  const ac = new AbortController()
  const seen = []
  const iterating = (async () => {
    for await (const [err] of events.on(lease, 'lost', { signal: ac.signal })) {
      seen.push(err.code)
      break
    }
  })()
  await c.close()
  await iterating
  assert.deepEqual(seen, [ErrorCode.LOST])
  assert.equal(lease.listenerCount('error'), 0)
})

test('events.once(lease, "suspended") can be given up with an AbortSignal', async () => {
  const lease = await client.mutex(uniquePath('once-aborted')).acquire({ timeoutMs: WAIT })
  try {
    const ac = new AbortController()
    const waiting = events.once(lease, 'suspended', { signal: ac.signal })
    ac.abort()
    await assert.rejects(waiting, { name: 'AbortError' })
    assert.equal(lease.listenerCount('error'), 0)
    assert.equal(lease.listenerCount('suspended'), 0)
  } finally {
    await lease.release()
  }
})

test('a lease still refuses listeners for events it never emits', async () => {
  const lease = await client.mutex(uniquePath('refuses')).acquire({ timeoutMs: WAIT })
  try {
    assert.throws(() => lease.on(/** @type {any} */ ('lsot'), () => {}), {
      code: ErrorCode.INVALID_ARGUMENT,
    })
    assert.throws(() => lease.on('error', /** @type {any} */ ('not a function')), {
      code: ErrorCode.INVALID_ARGUMENT,
    })
  } finally {
    await lease.release()
  }
})

/** The process warnings emitted while `fn` runs (and a moment after: they come on a tick). */
async function warningsDuring(fn) {
  const warnings = []
  const keep = (w) => warnings.push(w)
  process.on('warning', keep)
  try {
    await fn()
    await new Promise((r) => setTimeout(r, 50))
  } finally {
    process.off('warning', keep)
  }
  return warnings
}

test('one AbortSignal shared by 25 waiting acquires gives no MaxListenersExceededWarning and aborts them all', async () => {
  const lockPath = uniquePath('shared-signal')
  const holder = await client.mutex(lockPath).acquire({ timeoutMs: WAIT })
  const ac = new AbortController()
  let outcomes
  const warnings = await warningsDuring(async () => {
    const waiting = []
    for (let i = 0; i < 25; i++) {
      waiting.push(client.mutex(lockPath).acquire({ signal: ac.signal }))
    }
    try {
      // All 25 wait on one listener of ours.
      assert.equal(events.getEventListeners(ac.signal, 'abort').length, 1)
    } finally {
      ac.abort()
      outcomes = await Promise.allSettled(waiting)
    }
  })
  assert.deepEqual(
    warnings.map((w) => `${w.name}: ${w.message}`),
    [],
  )
  assert.deepEqual(
    new Set(outcomes.map((o) => (o.status === 'rejected' ? o.reason.code : 'acquired'))),
    new Set([ErrorCode.ABORTED]),
  )
  assert.equal(events.getEventListeners(ac.signal, 'abort').length, 0)
  assert.equal((await client.mutex(lockPath).participants()).length, 1)
  await holder.release()
})

test('a shared AbortSignal keeps no listener once its acquires have settled without it', async () => {
  const ac = new AbortController()
  const warnings = await warningsDuring(async () => {
    // 15 locks taken and released while the signal never fires, then 12 timeouts on a held one.
    const leases = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        client.mutex(uniquePath(`shared-ok-${i}`)).acquire({ signal: ac.signal, timeoutMs: WAIT }),
      ),
    )
    assert.equal(events.getEventListeners(ac.signal, 'abort').length, 0)
    await Promise.all(leases.map((l) => l.release()))
    const lockPath = uniquePath('shared-timeout')
    const holder = await client.mutex(lockPath).acquire({ timeoutMs: WAIT })
    const timedOut = await Promise.allSettled(
      Array.from({ length: 12 }, () => client.mutex(lockPath).acquire({ signal: ac.signal, timeoutMs: 200 })),
    )
    assert.ok(timedOut.every((o) => o.status === 'rejected' && o.reason.code === ErrorCode.TIMEOUT))
    await holder.release()
  })
  assert.deepEqual(
    warnings.map((w) => `${w.name}: ${w.message}`),
    [],
  )
  assert.equal(events.getEventListeners(ac.signal, 'abort').length, 0)
  // The signal still works for a later acquire after all of that.
  const lockPath = uniquePath('shared-later')
  const holder = await client.mutex(lockPath).acquire({ timeoutMs: WAIT })
  const later = client.mutex(lockPath).acquire({ signal: ac.signal })
  setTimeout(() => ac.abort(), 50)
  await assert.rejects(later, { code: ErrorCode.ABORTED })
  await holder.release()
})
