// Issue 27, item 6: Node's own listener helpers work on a lease (`events.once` and `events.on`
// add an 'error' listener next to the one asked for).
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
