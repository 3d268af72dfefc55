// Issue 37, point 4 (Node face): a pending acquire's queue position: `onQueued` and
// `lock.position` for a semaphore waiter and a multi-lock, and a bad callback refused.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { useZooKeeper, uniquePath, eventually } = require('./harness.js')
const { ErrorCode } = require('../index.js')

let a
let b
useZooKeeper({ clients: [{}, {}] }, (s) => ([, a, b] = [s.zk, ...s.clients]))

test('a semaphore waiter hears how many leases must go, and its lock reads the same', async () => {
  const lockPath = uniquePath('qpos-sem')
  const held = await a.semaphore(lockPath, 1).acquire()
  const sem = b.semaphore(lockPath, 1)
  const heard = []
  const waiting = sem.acquire({ onQueued: (p) => heard.push(p) })
  await eventually(() => heard.length === 1, 30_000)
  assert.deepEqual(heard, [1])
  assert.equal(sem.position, 1)
  await held.release()
  const lease = await waiting
  assert.equal(sem.position, null)
  await lease.release()
})

test('a multi-lock reports the member it waits for', async () => {
  const [p1, p2] = [uniquePath('qpos-m1'), uniquePath('qpos-m2')]
  const held = await a.mutex(p2).acquire()
  const multi = b.multiLock([p1, p2])
  const heard = []
  const waiting = multi.acquire({ onQueued: (p) => heard.push(p) })
  await eventually(() => heard.length === 1, 30_000)
  assert.equal(multi.position, 1)
  await held.release()
  await (await waiting).release()
  assert.deepEqual(heard, [1])
})

test('an onQueued that is no function is refused before any I/O', async () => {
  await assert.rejects(a.mutex(uniquePath('qpos-bad')).acquire({ onQueued: 42 }), (e) => {
    assert.equal(e.code, ErrorCode.INVALID_ARGUMENT)
    assert.match(e.message, /onQueued/)
    return true
  })
})
