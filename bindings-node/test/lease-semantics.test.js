// Issue 33's lease semantics through the Node face, against a real ZooKeeper: validUntil()
// never outlasts maxHoldMs (a mutex, a semaphore mutex, a leadership); a lease lost before its
// release keeps reading 'lost' afterwards; leaving using() after a loss rejects with the core's
// ZKLOCK_LOST; an election object refuses another object's leadership and a second lead.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { useZooKeeper, uniquePath } = require('./harness.js')
const { Client, ErrorCode } = require('../index.js')

let zk
let a
let b
useZooKeeper({ clients: [{}, {}] }, (s) => {
  zk = s.zk
  ;[a, b] = s.clients
})

const WAIT = 10_000
const MAX_HOLD_MS = 1000

for (const kind of ['mutex', 'semaphoreMutex', 'election']) {
  test(`validUntil of ${kind === 'election' ? 'an' : 'a'} ${kind} right after the acquire is at most its maxHoldMs ahead, and the lease is lost no earlier`, async () => {
    const p = uniquePath(`vu-${kind}`)
    const lock =
      kind === 'mutex'
        ? a.mutex(p, { maxHoldMs: MAX_HOLD_MS })
        : kind === 'semaphoreMutex'
          ? a.semaphoreMutex(p, { maxHoldMs: MAX_HOLD_MS })
          : a.election(p, { id: 'a', maxHoldMs: MAX_HOLD_MS })
    const lease = kind === 'election' ? await lock.lead({ timeoutMs: WAIT }) : await lock.acquire({ timeoutMs: WAIT })
    const acquired = Date.now()
    const until = lease.validUntil()
    assert.ok(until !== null && until > Date.now(), 'ahead while held')
    assert.ok(until <= acquired + MAX_HOLD_MS + 10, `valid until ${until - acquired} ms after the acquire`)
    const left = lease.timeLeft()
    assert.ok(left !== null && left > 0 && left <= MAX_HOLD_MS, `timeLeft ${left} ms, within the maximum hold`)
    await new Promise((resolve) => lease.once('lost', resolve))
    assert.ok(Date.now() >= until - 1, 'lost no earlier than validUntil said (1 ms of Date.now rounding)')
    assert.equal(lease.validUntil(), null)
    assert.equal(lease.timeLeft(), null)
    await lease.release()
  })
}

test('a lease lost before its release keeps reading lost, and using() rejects with ZKLOCK_LOST naming the lock', async () => {
  const p = uniquePath('lost-stays')
  const c = await Client.connect(zk.servers)
  const lease = await c.mutex(p).acquire()
  await c.close()
  assert.equal(await lease.release(), 'was-lost')
  assert.equal(lease.state, 'lost', 'lost is final')
  assert.equal(lease.signal.reason.code, ErrorCode.LOST)

  const d = await Client.connect(zk.servers)
  let inside
  await assert.rejects(
    d.mutex(p).using(async (l) => {
      inside = l
      await d.close()
    }),
    (err) => {
      assert.equal(err.code, ErrorCode.LOST)
      assert.match(err.message, /was lost before the using\(\) callback ended: /)
      assert.ok(err.message.includes(p), err.message)
      assert.ok(err.message.length <= 300, `${err.message.length} characters`)
      assert.equal(err.cause && err.cause.code, ErrorCode.LOST, 'the lease’s own error as its cause')
      return true
    },
  )
  assert.equal(inside.state, 'lost')
})

test('another election object cannot resign a leadership, which keeps leading', async () => {
  const p = uniquePath('foreign-resign')
  const ea = a.election(p, { id: 'a' })
  const lead = await ea.lead({ timeoutMs: WAIT })
  for (const other of [a.election(p, { id: 'b' }), b.election(p, { id: 'c' })]) {
    await assert.rejects(other.resign(lead), (err) => err.code === ErrorCode.INVALID_ARGUMENT)
    await assert.rejects(other.proclaim(lead, 'usurper'), (err) => err.code === ErrorCode.INVALID_ARGUMENT)
  }
  assert.equal(lead.state, 'held')
  assert.equal((await ea.leader()).id, 'a')
  await ea.resign(lead)
})

test('a second lead while leading is refused at once, and after resigning it leads again', async () => {
  const p = uniquePath('lead-twice')
  const e = a.election(p, { id: 'a' })
  const lead = await e.lead({ timeoutMs: WAIT })
  const started = Date.now()
  await assert.rejects(e.lead({ timeoutMs: 30_000 }), (err) => {
    assert.equal(err.code, ErrorCode.INVALID_ARGUMENT)
    assert.match(err.message, /already leads/)
    return true
  })
  assert.ok(Date.now() - started < 5000, 'refused, not timed out')
  assert.equal((await e.participants()).length, 1)
  await e.resign(lead)
  const again = await e.lead({ timeoutMs: WAIT })
  assert.equal(again.state, 'held')
  await e.resign(again)
})

test("run's signal reason is a zklock error both on a loss and on the caller's abort", async () => {
  const p = uniquePath('run-reason')
  const controller = new AbortController()
  const e = a.election(p, { id: 'a' })
  let reason
  const result = await e.run(
    async (lead, signal) => {
      controller.abort()
      reason = signal.reason
      return 'ran'
    },
    { signal: controller.signal },
  )
  assert.equal(result, 'ran', 'the leadership was held to the end: run resolves')
  assert.equal(reason && reason.code, ErrorCode.ABORTED, `caller's abort: ${reason}`)
  assert.equal(reason.cause, controller.signal.reason, "the caller's reason is the cause")

  const c = await Client.connect(zk.servers)
  let lostReason
  await assert.rejects(
    c.election(uniquePath('run-reason-lost'), { id: 'a' }).run(async (lead, signal) => {
      await c.close()
      await new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', resolve)))
      lostReason = signal.reason
    }),
    (err) => err.code === ErrorCode.LOST,
  )
  assert.equal(lostReason && lostReason.code, ErrorCode.LOST)
})
