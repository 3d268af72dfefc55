// Leader election (issue 25) through the Node face, against a real ZooKeeper: a leadership is a
// Lease of the election's first node; handover, requeue, the refusal to lead beside another
// layout, observers, sequencer checks, the maximum hold, validUntil, `await using`, run() and
// its lost signal, and bad input.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const path = require('node:path')
const { useZooKeeper, uniquePath, eventually } = require('./harness.js')
const { Client, ErrorCode, Leadership, Lease } = require('../index.js')

let zk
let a
let b
useZooKeeper({ clients: [{ identity: 'client-a' }, { identity: 'client-b' }] }, (s) => {
  zk = s.zk
  ;[a, b] = s.clients
})

const WAIT = 10_000

async function participantsOf(election, n) {
  let parts = []
  await eventually(async () => (parts = await election.participants()).length === n, WAIT, `${n} participants`)
  return parts
}

test('the leader resigns and the next participant leads with a larger token', async () => {
  const p = uniquePath('handover')
  const ea = a.election(p, { id: 'a' })
  const eb = b.election(p, { id: 'b' })
  assert.equal(ea.style, 'latch', 'latch is the default style')
  assert.equal(ea.path, p)
  assert.equal(ea.id, 'a')
  assert.equal(ea.maxHoldMs, null)
  const leadA = await ea.lead({ timeoutMs: WAIT })
  assert.ok(leadA instanceof Leadership)
  assert.ok(leadA instanceof Lease)
  assert.equal(leadA.state, 'held')
  assert.equal(leadA.lockPath, p)
  const waiting = eb.lead()
  const parts = await participantsOf(ea, 2)
  assert.deepEqual(parts.map((x) => x.id), ['a', 'b'])
  const mine = parts[0]
  assert.equal(mine.node, leadA.path)
  assert.equal(mine.token, leadA.token)
  assert.equal(mine.sessionId, a.sessionId)
  assert.equal(mine.style, 'latch')
  assert.equal(mine.kind, 'latch')
  assert.equal(mine.library, 'zklock')
  assert.equal((await ea.leader()).id, 'a')
  assert.equal(await ea.resign(leadA), undefined)
  assert.equal(leadA.state, 'released')
  const leadB = await waiting
  assert.ok(leadB.token > leadA.token)
  assert.equal((await eb.leader()).id, 'b')
  await assert.rejects(ea.resign(leadA), { code: ErrorCode.NOT_HELD })
  await eb.resign(leadB)
  assert.equal(await ea.leader(), null)
})

test('resign with requeue hands over and resolves with the next leadership at the tail', async () => {
  const p = uniquePath('requeue')
  const ea = a.election(p, { id: 'a', style: 'selector' })
  const eb = b.election(p, { id: 'b', style: 'selector' })
  const leadA = await ea.lead()
  const waitingB = eb.lead()
  await participantsOf(ea, 2)
  const again = ea.resign(leadA, { requeue: true })
  const leadB = await waitingB
  const parts = await participantsOf(ea, 2)
  assert.deepEqual(parts.map((x) => x.id), ['b', 'a'])
  assert.deepEqual(parts.map((x) => x.style), ['selector', 'selector'])
  await eb.resign(leadB)
  const leadA2 = await again
  assert.ok(leadA2 instanceof Leadership)
  assert.ok(leadA2.token > leadB.token)
  await ea.resign(leadA2)
})

test('a requeued wait is aborted by its signal and leaves no node', async () => {
  const p = uniquePath('requeue-abort')
  const ea = a.election(p, { id: 'a' })
  const eb = b.election(p, { id: 'b' })
  const leadB = await eb.lead()
  const leadA = ea.lead()
  await participantsOf(ea, 2)
  const controller = new AbortController()
  const newLeadB = eb.resign(leadB, { requeue: true, signal: controller.signal })
  const la = await leadA
  await participantsOf(ea, 2)
  controller.abort()
  await assert.rejects(newLeadB, { code: ErrorCode.ABORTED })
  await participantsOf(ea, 1)
  await ea.resign(la)
})

test('mixed layouts on one path refuse to lead with ZKLOCK_CONFLICT naming the foreign node', async () => {
  const p = uniquePath('mixed')
  const theirs = await b.election(p, { style: 'latch', id: 'latch' }).lead()
  try {
    const selector = a.election(p, { style: 'selector', id: 'selector' })
    const err = await selector.lead({ timeoutMs: WAIT }).then(
      () => assert.fail('led beside a latch'),
      (e) => e,
    )
    assert.equal(err.code, ErrorCode.CONFLICT)
    assert.equal(ErrorCode.CONFLICT, 'ZKLOCK_CONFLICT')
    const foreign = theirs.path.slice(theirs.path.lastIndexOf('/') + 1)
    assert.ok(err.message.includes(foreign), `the message names ${foreign}: ${err.message}`)
    const parts = await selector.participants()
    assert.equal(parts.length, 1, 'our node was removed')
    assert.equal(parts[0].style, 'latch')
    // kazoo beside Curator refuses as well.
    await assert.rejects(a.election(p, { style: 'kazoo' }).lead({ timeoutMs: 0 }), { code: ErrorCode.CONFLICT })
  } finally {
    await theirs.release()
  }
})

test('an observer reports the leader now, each change, and no leader', async () => {
  const p = uniquePath('observe')
  const watch = a.observeLeader(p)
  assert.equal(watch.path, p)
  const first = await watch.next({ timeoutMs: WAIT })
  assert.deepEqual(first, { value: null, done: false })
  await assert.rejects(watch.next({ timeoutMs: 200 }), { code: ErrorCode.TIMEOUT })
  const eb = b.election(p, { id: 'b', style: 'kazoo' })
  const lead = await eb.lead()
  const second = await watch.next({ timeoutMs: WAIT })
  assert.equal(second.value.id, 'b')
  assert.equal(second.value.style, 'kazoo')
  assert.equal(second.value.token, lead.token)
  await eb.resign(lead)
  assert.equal((await watch.next({ timeoutMs: WAIT })).value, null)
  // return() stops it, also a next() pending on it.
  const pending = watch.next()
  await watch.return()
  assert.deepEqual(await pending, { value: undefined, done: true })
  assert.deepEqual(await watch.next(), { value: undefined, done: true })
})

test('for await over observeLeader sees every leader and stops at break', async () => {
  const p = uniquePath('observe-loop')
  const ea = b.election(p, { id: 'first' })
  const eb = b.election(p, { id: 'second' })
  const seen = []
  const leadA = await ea.lead()
  const loop = (async () => {
    for await (const leader of a.observeLeader(p)) {
      seen.push(leader === null ? 'none' : leader.id)
      if (seen.length === 3) break
    }
  })()
  await eventually(() => seen.length === 1, WAIT, 'the first report')
  const pendingB = eb.lead()
  await participantsOf(ea, 2)
  await ea.resign(leadA)
  const leadB = await pendingB
  await eventually(() => seen.length === 2, WAIT, 'the second report')
  await eb.resign(leadB)
  await loop
  assert.deepEqual(seen, ['first', 'second', 'none'])
})

test('check tells a current leader or holder token from a past one', async () => {
  const p = uniquePath('check')
  const e = a.election(p)
  const lead = await e.lead()
  assert.equal(await b.check(p, lead.token), true)
  assert.equal(await b.check(p, Number(lead.token)), true, 'an integer number works too')
  assert.equal(await b.check(p, lead.token + 1n), false)
  await e.resign(lead)
  assert.equal(await b.check(p, lead.token), false)
  const m = uniquePath('check-mutex')
  const lease = await a.mutex(m).acquire()
  assert.equal(await b.check(m, lease.token), true)
  await lease.release()
  assert.equal(await b.check(m, lease.token), false)
  const s = uniquePath('check-semaphore')
  const held = await a.semaphore(s, 2).acquire()
  assert.equal(await b.check(s, held.token, { maxLeases: 2 }), true)
  await held.release()
  assert.equal(await b.check(s, held.token, { maxLeases: 2 }), false)
})

test('maxHoldMs ends a leadership and a lease: lost with a reason containing max-hold', async () => {
  const p = uniquePath('max-hold')
  const e = a.election(p, { maxHoldMs: 300 })
  assert.equal(e.maxHoldMs, 300)
  const lead = await e.lead()
  const [err] = await Promise.race([
    new Promise((resolve) => lead.once('lost', (x) => resolve([x]))),
    new Promise((_, reject) => setTimeout(() => reject(new Error('not lost within 5 s')), 5000)),
  ])
  assert.equal(err.code, ErrorCode.LOST)
  assert.match(err.message, /max-hold/)
  assert.equal(lead.state, 'lost')
  assert.equal(lead.signal.aborted, true)
  assert.equal(await e.leader(), null, 'the node was deleted')
  await lead.release()
  for (const lock of [
    a.mutex(uniquePath('max-hold-mutex'), { maxHoldMs: 200 }),
    a.semaphore(uniquePath('max-hold-sem'), 2, { maxHoldMs: 200 }),
    a.semaphoreMutex(uniquePath('max-hold-semmutex'), { maxHoldMs: 200 }),
  ]) {
    const lease = await lock.acquire()
    await eventually(() => lease.state === 'lost', 5000, 'the lease lost by max-hold')
    await assert.rejects(lease[Symbol.asyncDispose](), (e) => e.code === ErrorCode.LOST && /max-hold/.test(e.message))
  }
})

test('validUntil is ahead of Date.now() while held and null once released or lost', async () => {
  const own = await Client.connect(zk.servers, { sessionTimeoutMs: 6000 })
  const lead = await own.election(uniquePath('valid-until')).lead()
  const until = lead.validUntil()
  const now = Date.now()
  assert.equal(typeof until, 'number')
  assert.ok(until > now, `${until} is after ${now}`)
  assert.ok(until <= now + 6000, `${until} is within a session timeout of ${now}`)
  await own.close()
  assert.equal(lead.validUntil(), null)
  const lease = await a.mutex(uniquePath('valid-until-mutex')).acquire()
  assert.ok(lease.validUntil() > Date.now())
  await lease.release()
  assert.equal(lease.validUntil(), null)
})

test('await using resigns the leadership at block exit', async () => {
  // tsc lowers `await using` (Node 20 cannot parse it): test/dispose/dispose.ts.
  const root = path.resolve(__dirname, '..')
  const tsc = require.resolve('typescript/bin/tsc', { paths: [root] })
  execFileSync(process.execPath, [tsc, '-p', path.join(__dirname, 'dispose')], { cwd: root, stdio: 'inherit' })
  const scenarios = require('./.build/dispose/dispose.js')
  const out = await scenarios.resignedAtBlockExit(a, b, uniquePath('await-using'))
  assert.deepEqual(out, {
    leaderInside: 'scoped',
    proclaimed: 'proclaimed',
    stateAfter: 'released',
    leaderAfter: null,
    checkAfter: false,
  })
})

test('an aborted signal cancels a waiting lead and removes its node', async () => {
  const p = uniquePath('abort')
  const held = await b.election(p).lead()
  const e = a.election(p)
  const controller = new AbortController()
  const pending = e.lead({ signal: controller.signal })
  await participantsOf(e, 2)
  controller.abort(new Error('enough'))
  const err = await pending.then(() => assert.fail('led'), (x) => x)
  assert.equal(err.code, ErrorCode.ABORTED)
  assert.equal(err.cause.message, 'enough')
  await participantsOf(e, 1)
  await assert.rejects(e.lead({ timeoutMs: 100 }), { code: ErrorCode.TIMEOUT })
  await assert.rejects(e.lead({ deadline: Date.now() - 1 }), { code: ErrorCode.TIMEOUT })
  await assert.rejects(e.lead({ signal: AbortSignal.abort() }), { code: ErrorCode.ABORTED })
  await held.release()
})

test('run() leads, runs the callback and resigns after it', async () => {
  const p = uniquePath('run')
  const e = a.election(p, { id: 'runner' })
  const result = await e.run(async (lead, signal) => {
    assert.ok(lead instanceof Leadership)
    assert.equal(signal.aborted, false)
    assert.equal((await e.leader()).id, 'runner')
    return 42
  })
  assert.equal(result, 42)
  assert.equal(await e.leader(), null)
  await assert.rejects(
    e.run(() => {
      throw new Error('boom')
    }),
    /boom/,
  )
  assert.equal(await e.leader(), null)
})

test('run() aborts the callback signal when the leadership is lost and rejects with ZKLOCK_LOST', async () => {
  const own = await Client.connect(zk.servers)
  try {
    const e = own.election(uniquePath('run-lost'))
    let reason
    const done = e.run(async (lead, signal) => {
      setTimeout(() => own.close(), 100)
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
      reason = signal.reason
      assert.equal(lead.state, 'lost')
      return 'stopped'
    })
    await assert.rejects(done, { code: ErrorCode.LOST })
    assert.equal(reason.code, ErrorCode.LOST)
  } finally {
    if (!own.closed) await own.close()
  }
})

test('run() with maxHoldMs and requeue leads again after each loss until its signal aborts', async () => {
  const p = uniquePath('run-requeue')
  const e = a.election(p, { maxHoldMs: 200 })
  const controller = new AbortController()
  const tokens = []
  const done = e.run(
    async (lead, signal) => {
      tokens.push(lead.token)
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
      assert.match(signal.reason.message, /max-hold/)
      if (tokens.length === 2) controller.abort()
    },
    { requeue: true, signal: controller.signal },
  )
  await assert.rejects(done, { code: ErrorCode.ABORTED })
  assert.equal(tokens.length, 2)
  assert.ok(tokens[1] > tokens[0])
  assert.equal(await e.leader(), null)
})

test('bad input throws ZKLOCK_INVALID_ARGUMENT', async () => {
  const p = uniquePath('invalid')
  const bad = [
    () => a.election(p, { style: 'leader' }),
    () => a.election(p, { style: '' }),
    () => a.election(p, { style: /** @type {any} */ (1) }),
    () => a.election('relative'),
    () => a.election(p, { id: 'a\0b' }),
    () => a.election(p, { id: 'i'.repeat(1025) }),
    () => a.election(p, { maxHoldMs: 0 }),
    () => a.election(p, { maxHoldMs: -1 }),
    () => a.election(p, { maxHoldMs: NaN }),
    () => a.election(p, { maxHoldMs: /** @type {any} */ ('1s') }),
    () => a.mutex(p, { maxHoldMs: 0 }),
    () => a.semaphore(p, 2, { maxHoldMs: -5 }),
    () => a.observeLeader('nope'),
  ]
  for (const f of bad) assert.throws(f, { code: ErrorCode.INVALID_ARGUMENT }, f.toString())
  const unknown = (() => {
    try {
      a.election(p, { style: 'leader' })
    } catch (e) {
      return e
    }
  })()
  assert.match(unknown.message, /latch/, 'the message lists the known styles')
  assert.match(
    (() => {
      try {
        a.mutex(p, { maxHoldMs: 0 })
      } catch (e) {
        return e.message
      }
    })(),
    /maxHoldMs/,
  )
  const e = a.election(p)
  for (const call of [
    () => e.lead({ timeoutMs: -2 }),
    () => e.resign(/** @type {any} */ ({})),
    () => e.proclaim(/** @type {any} */ (null), 'x'),
    () => b.check(p, /** @type {any} */ ('12')),
    () => b.check(p, 1.5),
    () => b.check(p, 2n ** 64n),
    () => b.check('relative', 1n),
    () => e.run(/** @type {any} */ ('fn')),
  ]) {
    await assert.rejects(call, { code: ErrorCode.INVALID_ARGUMENT }, call.toString())
  }
  // A lease of another path is not this election's leadership, and stays held.
  const other = await a.mutex(uniquePath('invalid-other')).acquire()
  await assert.rejects(e.resign(other), { code: ErrorCode.INVALID_ARGUMENT })
  await assert.rejects(e.proclaim(other, 'x'), { code: ErrorCode.INVALID_ARGUMENT })
  assert.equal(other.state, 'held')
  await other.release()
  const lead = await e.lead()
  await assert.rejects(e.proclaim(lead, /** @type {any} */ (42)), { code: ErrorCode.INVALID_ARGUMENT })
  await assert.rejects(e.resign(lead, { requeue: /** @type {any} */ ('yes') }), { code: ErrorCode.INVALID_ARGUMENT })
  await e.resign(lead)
})

test('lockDelayMs: a clean resign hands over at once; zero is refused', async () => {
  const p = uniquePath('lock-delay')
  assert.throws(() => a.election(p, { lockDelayMs: 0 }), (e) => e.code === ErrorCode.INVALID_ARGUMENT && /lockDelayMs/.test(e.message))
  const ea = a.election(p, { id: 'a', lockDelayMs: 5000 })
  const eb = b.election(p, { id: 'b', lockDelayMs: 5000 })
  const lead = await ea.lead()
  const waiting = eb.lead()
  await participantsOf(ea, 2)
  const resigned = Date.now()
  await ea.resign(lead)
  const next = await waiting
  const after = Date.now() - resigned
  assert.ok(after < 2500, `a clean resign hands over at once, not after the 5 s delay (${after} ms)`)
  await eb.resign(next)
})
