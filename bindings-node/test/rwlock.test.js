// Acceptance 6: RwLock and MultiLock as in the contract; upgrade rejects with ZKLOCK_UPGRADE.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { useZooKeeper, uniquePath, eventually } = require('./harness.js')
const { Client, ErrorCode } = require('../index.js')

let zk
let a
let b
useZooKeeper({ clients: [{}, {}] }, (s) => ([zk, a, b] = [s.zk, ...s.clients]))

test('readers share, a writer excludes readers and writers', async () => {
  const p = uniquePath('rw')
  const rwA = a.rwLock(p)
  const rwB = b.rwLock(p)
  assert.equal(rwA.path, p)
  const r1 = await rwA.read.acquire()
  const r2 = await rwB.read.acquire({ timeoutMs: 2_000 })
  assert.match(r1.path, /__READ__\d{10}$/)
  assert.equal((await rwA.participants()).map((x) => x.kind).join(), 'read,read')
  // A writer elsewhere (not a holder of this read side) waits.
  await assert.rejects(b.rwLock(p).write.acquire({ timeoutMs: 200 }), { code: ErrorCode.TIMEOUT })
  await r1.release()
  await r2.release()
  const w = await rwB.write.acquire({ timeoutMs: 2_000 })
  assert.match(w.path, /__WRIT__\d{10}$/)
  assert.equal(await rwA.read.tryAcquire(), null)
  assert.equal(await rwA.write.tryAcquire(), null)
  // A reader queued behind the writer gets in when it leaves.
  const waitingReader = rwA.read.acquire({ timeoutMs: 5_000 })
  await new Promise((r) => setTimeout(r, 100))
  await w.release()
  const r3 = await waitingReader
  assert.ok(r3.token > w.token)
  await r3.release()
  assert.equal((await rwA.participants()).length, 0)
})

test('a read holder asking for the write side is rejected with ZKLOCK_UPGRADE at once', async () => {
  const p = uniquePath('upgrade')
  const rw = a.rwLock(p)
  // The read's caller asks (inside its using()): another caller would wait for the read.
  await rw.read.using(async () => {
    const started = Date.now()
    await assert.rejects(rw.write.acquire(), (e) => {
      assert.equal(e.code, ErrorCode.UPGRADE)
      assert.ok(e.message.includes(p), e.message)
      return true
    })
    assert.ok(Date.now() - started < 2_000, 'rejected at once, not after waiting')
    await assert.rejects(rw.write.tryAcquire(), { code: ErrorCode.UPGRADE })
    assert.equal((await rw.participants()).length, 1, 'no write node was left')
  })
})

test('a write holder may take the read side (downgrade)', async () => {
  const p = uniquePath('downgrade')
  const rw = a.rwLock(p)
  // One caller: an explicit owner (a using() callback of the write side would do as well).
  const me = {}
  const w = await rw.write.acquire({ owner: me })
  const r = await rw.read.acquire({ timeoutMs: 2_000, owner: me })
  await w.release()
  // Others can read now, not write.
  const other = b.rwLock(p)
  const r2 = await other.read.acquire({ timeoutMs: 2_000 })
  assert.equal(await b.rwLock(p).write.tryAcquire(), null)
  await r2.release()
  await r.release()
  const w2 = await other.write.acquire({ timeoutMs: 2_000 })
  await w2.release()
})

test('multiLock takes all or nothing, in path order, and releases everything', async () => {
  const base = uniquePath('multi')
  const [x, y, z] = [`${base}/x`, `${base}/y`, `${base}/z`]
  const m = a.multiLock([z, x, y])
  assert.deepEqual(m.paths, [z, x, y])
  const lease = await m.acquire()
  assert.equal(lease.paths.length, 3)
  assert.equal(lease.tokens.length, 3)
  assert.equal(lease.token, lease.tokens.reduce((p, c) => (c > p ? c : p)))
  assert.ok(lease.paths[0].startsWith(`${x}/`), 'members are taken in path order')
  assert.equal((await m.participants()).length, 3)
  assert.equal(await b.mutex(y).tryAcquire(), null)
  assert.equal(await lease.release(), 'released')
  for (const p of [x, y, z]) assert.equal((await b.mutex(p).participants()).length, 0)

  // All or nothing: with y held elsewhere, a timed-out multi-acquire keeps nothing.
  const yHeld = await b.mutex(y).acquire()
  await assert.rejects(m.acquire({ timeoutMs: 300 }), { code: ErrorCode.TIMEOUT })
  assert.equal(await m.tryAcquire(), null)
  await eventually(
    async () => (await b.mutex(x).participants()).length === 0,
    5_000,
    'x released after the failed multi-acquire',
  )
  assert.equal((await b.mutex(y).participants()).length, 1)
  await yHeld.release()
})

test('two multi-locks listing the same paths in opposite orders do not deadlock', async () => {
  const base = uniquePath('multi-order')
  const paths = [`${base}/a`, `${base}/b`, `${base}/c`]
  const m1 = a.multiLock(paths)
  const m2 = b.multiLock([...paths].reverse())
  let inside = 0
  const worker = async (m) => {
    for (let i = 0; i < 20; i++) {
      await m.using(async () => {
        inside++
        assert.equal(inside, 1)
        await new Promise((r) => setImmediate(r))
        inside--
      }, { timeoutMs: 20_000 })
    }
  }
  await Promise.all([worker(m1), worker(m2)])
})

test('multiLock rejects an empty or duplicated list with ZKLOCK_INVALID_ARGUMENT', () => {
  const p = uniquePath('multi-bad')
  assert.throws(() => a.multiLock([]), { code: ErrorCode.INVALID_ARGUMENT })
  assert.throws(() => a.multiLock([p, p]), { code: ErrorCode.INVALID_ARGUMENT })
})
