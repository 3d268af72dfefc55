// Mutex basics against a real ZooKeeper: acquire/release, tryAcquire, timeout and abort leave
// no node (acceptance 3), re-entrancy per caller (issue 50), using(), participants, close and exit.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const path = require('node:path')
const { startZooKeeper, uniquePath, eventually } = require('./harness.js')
const { Client, ErrorCode, isZkLockError } = require('../index.js')

let zk
let a
let b

test.before(async () => {
  zk = await startZooKeeper()
  a = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  b = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
})

test.after(async () => {
  if (a) await a.close()
  if (b) await b.close()
  if (zk) await zk.stop()
})

async function nodesOf(mutex) {
  return (await mutex.participants()).length
}

test('acquire returns a lease with a bigint token, path and state; release deletes the node', async () => {
  const m = a.mutex(uniquePath('basic'))
  const lease = await m.acquire()
  assert.equal(typeof lease.token, 'bigint')
  assert.ok(lease.token > 0n)
  assert.ok(lease.path.startsWith(`${m.path}/_c_`), lease.path)
  assert.match(lease.path, /-lock-\d{10}$/)
  assert.equal(lease.lockPath, m.path)
  assert.equal(lease.state, 'held')
  assert.equal(lease.signal.aborted, false)
  const parts = await m.participants()
  assert.equal(parts.length, 1)
  assert.equal(parts[0].node, lease.path)
  assert.equal(parts[0].token, lease.token)
  assert.equal(parts[0].kind, 'mutex')
  assert.equal(parts[0].library, 'zklock')
  // index.d.ts declares `maxLeases: number | null`: present and null on a mutex participant.
  assert.ok('maxLeases' in parts[0], `maxLeases is absent: ${Object.keys(parts[0])}`)
  assert.equal(parts[0].maxLeases, null)
  assert.equal(await lease.release(), 'released')
  assert.equal(lease.state, 'released')
  assert.equal(await nodesOf(m), 0)
  await assert.rejects(lease.release(), { code: ErrorCode.NOT_HELD })
})

test('tryAcquire returns null while held and leaves no node', async () => {
  const p = uniquePath('try')
  const held = await a.mutex(p).acquire()
  const other = b.mutex(p)
  assert.equal(await other.tryAcquire(), null)
  assert.equal(await nodesOf(other), 1)
  await held.release()
  const lease = await other.tryAcquire()
  assert.ok(lease)
  assert.ok(lease.token > held.token, 'tokens increase from holder to holder')
  await lease.release()
})

test('timeoutMs rejects with ZKLOCK_TIMEOUT and leaves no node', async () => {
  const p = uniquePath('timeout')
  const held = await a.mutex(p).acquire()
  const other = b.mutex(p)
  const started = Date.now()
  const err = await other.acquire({ timeoutMs: 300 }).then(
    () => assert.fail('acquired a held lock'),
    (e) => e,
  )
  assert.ok(err instanceof Error)
  assert.equal(err.code, ErrorCode.TIMEOUT)
  assert.ok(isZkLockError(err))
  assert.ok(err.message.includes(p), `the message names the path: ${err.message}`)
  assert.ok(Date.now() - started >= 250, 'waited for the timeout')
  await assert.rejects(other.acquire({ timeoutMs: 0 }), { code: ErrorCode.TIMEOUT })
  await eventually(async () => (await nodesOf(other)) === 1, 5_000, 'only the holder node')
  await held.release()
})

// Issue 27, point 4: `timeoutMs: deadline - Date.now()` is -1, "forever", when the deadline
// passed a millisecond ago. The `deadline` option is the safe form: once passed, one attempt.
test('a deadline that passed is one attempt, never forever; a Date works; bad deadlines reject', async () => {
  const p = uniquePath('deadline')
  const held = await a.mutex(p).acquire()
  const other = b.mutex(p)
  // The holder lets go after 3 s: an acquire that waits "forever" gets the lock then, instead
  // of the ZKLOCK_TIMEOUT expected here.
  const letGo = new Promise((resolve) => setTimeout(resolve, 3000)).then(() => held.release())
  try {
    for (const deadline of [Date.now() - 1, Date.now() - 1.5, Date.now() - 3_600_000, Date.now(), 0,
      -Infinity, new Date(Date.now() - 1)]) {
      const started = Date.now()
      await assert.rejects(other.acquire({ deadline }), { code: ErrorCode.TIMEOUT }, String(deadline))
      assert.ok(Date.now() - started < 2000, `one attempt for ${deadline}`)
    }
    const started = Date.now()
    await assert.rejects(other.acquire({ deadline: new Date(Date.now() + 300) }), { code: ErrorCode.TIMEOUT })
    assert.ok(Date.now() - started >= 250, 'a deadline ahead is waited for')
    for (const bad of [new Date('not a date'), NaN, '2030-01-01', {}]) {
      await assert.rejects(other.acquire({ deadline: bad }), { code: ErrorCode.INVALID_ARGUMENT }, String(bad))
    }
    await assert.rejects(other.acquire({ deadline: Date.now() + 1000, timeoutMs: 1000 }), {
      code: ErrorCode.INVALID_ARGUMENT,
      message: /not both/,
    })
    await eventually(async () => (await nodesOf(other)) === 1, 5_000, 'only the holder node')
  } finally {
    await letGo
  }
  // Infinity as a deadline, like -1 and Infinity as timeoutMs, waits as long as it takes.
  const lease = await other.acquire({ deadline: Infinity })
  await lease.release()
})

test('aborting the signal rejects with ZKLOCK_ABORTED and removes the waiting node', async () => {
  const p = uniquePath('abort')
  const held = await a.mutex(p).acquire()
  const other = b.mutex(p)
  const ac = new AbortController()
  const pending = other.acquire({ signal: ac.signal })
  await eventually(async () => (await nodesOf(other)) === 2, 5_000, 'the waiter node')
  const reason = new Error('user gave up')
  ac.abort(reason)
  const err = await pending.then(
    () => assert.fail('acquired a held lock'),
    (e) => e,
  )
  assert.equal(err.code, ErrorCode.ABORTED)
  assert.equal(err.cause, reason)
  assert.ok(err.message.includes(p), err.message)
  await eventually(async () => (await nodesOf(other)) === 1, 5_000, 'the waiter node gone')

  // An already aborted signal rejects at once and creates nothing.
  await assert.rejects(other.acquire({ signal: AbortSignal.abort() }), { code: ErrorCode.ABORTED })
  // AbortSignal.timeout works too.
  await assert.rejects(other.acquire({ signal: AbortSignal.timeout(200) }), {
    code: ErrorCode.ABORTED,
  })
  await eventually(async () => (await nodesOf(other)) === 1, 5_000, 'no waiter node left')
  await held.release()
  // The lock still works for the next one.
  const lease = await other.acquire({ timeoutMs: 5_000 })
  await lease.release()
  assert.equal(await nodesOf(other), 0)
})

test('a waiter gets the lock when the holder releases', async () => {
  const p = uniquePath('handoff')
  const held = await a.mutex(p).acquire()
  const waiting = b.mutex(p).acquire({ timeoutMs: 10_000 })
  await new Promise((r) => setTimeout(r, 100))
  await held.release()
  const lease = await waiting
  assert.ok(lease.token > held.token)
  await lease.release()
})

test('re-entrant per caller: inside using() a nested acquire counts up; another object of the same client contends', async () => {
  const p = uniquePath('reentrant')
  const m = a.mutex(p)
  await m.using(async (first) => {
    const second = await m.acquire({ timeoutMs: 1_000 })
    assert.equal(second.path, first.path)
    assert.equal(second.token, first.token)
    assert.equal(m.holdCount, 2)
    // Another Mutex object (same client, same path) does not share the hold.
    assert.equal(await a.mutex(p).tryAcquire(), null)
    assert.equal(await second.release(), 'still-held')
    assert.equal(m.holdCount, 1)
    assert.equal(await nodesOf(m), 1)
  })
  assert.equal(m.holdCount, 0)
  assert.equal(await nodesOf(m), 0)
})

test('concurrent callers of one Mutex object exclude each other, each with a token of its own (issue 50)', async () => {
  const p = uniquePath('callers')
  const m = a.mutex(p)
  let inside = 0
  const tokens = []
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      const lease = await m.acquire()
      inside++
      assert.equal(inside, 1, 'two callers inside at once')
      assert.equal(m.holdCount, 0, 'outside using() a caller is its acquire call')
      tokens.push(lease.token)
      await new Promise((resolve) => setTimeout(resolve, 2))
      inside--
      assert.equal(await lease.release(), 'released')
    }),
  )
  assert.equal(new Set(tokens).size, 20, 'twenty tokens')
  assert.ok(tokens.every((t, i) => i === 0 || tokens[i - 1] < t), 'increasing in turn')
  assert.equal(await nodesOf(m), 0)
})

test('an explicit owner re-enters across calls, and the Mutex object as owner shares one hold', async () => {
  const p = uniquePath('owners')
  const m = a.mutex(p)
  const me = {}
  const first = await m.acquire({ owner: me })
  const second = await m.acquire({ owner: me, timeoutMs: 1_000 })
  assert.equal(second.token, first.token)
  assert.equal(m.holdCountOf(me), 2)
  assert.equal(await m.tryAcquire(), null, 'another caller contends')
  await second.release()
  await first.release()
  // The rule before issue 50, on purpose: every caller passing the object shares its hold.
  const shared = await Promise.all(Array.from({ length: 3 }, () => m.acquire({ owner: m })))
  assert.equal(new Set(shared.map((l) => l.token)).size, 1, 'one hold, one token')
  assert.equal(m.holdCountOf(m), 3)
  for (const l of shared) await l.release()
  assert.equal(m.holdCountOf(m), 0)
  await assert.rejects(m.acquire({ owner: 'me' }), { code: ErrorCode.INVALID_ARGUMENT })
})

test('reentrant: false queues every acquire', async () => {
  const p = uniquePath('semaphore')
  const m = a.mutex(p, { reentrant: false })
  const first = await m.acquire()
  await assert.rejects(m.acquire({ timeoutMs: 200 }), { code: ErrorCode.TIMEOUT })
  await first.release()
  const again = await m.acquire({ timeoutMs: 1_000 })
  await again.release()
})

test('using() releases after the callback, also when it throws, and returns its value', async () => {
  const p = uniquePath('using')
  const m = a.mutex(p)
  let seen
  const value = await m.using(async (lease) => {
    seen = lease
    assert.equal(lease.state, 'held')
    assert.equal(await nodesOf(m), 1)
    return 42
  })
  assert.equal(value, 42)
  assert.equal(seen.state, 'released')
  assert.equal(await nodesOf(m), 0)

  const boom = new Error('boom')
  await assert.rejects(
    m.using(() => {
      throw boom
    }),
    (e) => e === boom,
  )
  assert.equal(await nodesOf(m), 0)
  await assert.rejects(m.using(async () => {}, { timeoutMs: -2 }), {
    code: ErrorCode.INVALID_ARGUMENT,
  })
})

test('close() makes held leases lost and later calls reject with ZKLOCK_CLOSED', async () => {
  const c = await Client.connect(zk.servers)
  const m = c.mutex(uniquePath('close'))
  const lease = await m.acquire()
  let lostEvents = 0
  lease.on('lost', () => lostEvents++)
  await c.close()
  assert.equal(c.closed, true)
  await eventually(() => lease.signal.aborted, 5_000, 'lost signal after close')
  assert.equal(lease.state, 'lost')
  assert.equal(lease.signal.reason.code, ErrorCode.LOST)
  assert.equal(lostEvents, 1)
  assert.equal(await lease.release(), 'was-lost')
  await assert.rejects(m.acquire(), { code: ErrorCode.CLOSED })
  await assert.rejects(m.tryAcquire(), { code: ErrorCode.CLOSED })
  await assert.rejects(m.participants(), { code: ErrorCode.CLOSED })
  // The node went with the session.
  assert.equal(await nodesOf(b.mutex(m.path)), 0)
})

test('the process exits after client.close(), with leases and waiters around', async () => {
  const script = `
    const { Client } = require(${JSON.stringify(path.resolve(__dirname, '..', 'index.js'))})
    ;(async () => {
      const c = await Client.connect(process.argv[1])
      const m = c.mutex(process.argv[2])
      const lease = await m.acquire()
      lease.on('lost', () => {})
      const other = c.mutex(process.argv[2])
      const waiting = other.acquire().catch((e) => e.code)
      await new Promise((r) => setTimeout(r, 200))
      await c.close()
      console.log('closed', await waiting)
    })()
  `
  const child = spawn(process.execPath, ['-e', script, zk.servers, uniquePath('exit')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  const started = Date.now()
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      resolve('hung')
    }, 15_000)
    child.on('exit', (c) => {
      clearTimeout(timer)
      resolve(c)
    })
  })
  assert.equal(code, 0, `the child exits by itself (output ${out})`)
  assert.match(out, /closed ZKLOCK_CLOSED/)
  assert.ok(Date.now() - started < 15_000)
})

test('connect to an unreachable ensemble rejects with ZKLOCK_CONNECTION', async () => {
  await assert.rejects(Client.connect('127.0.0.1:1', { connectTimeoutMs: 500 }), (e) => {
    assert.equal(e.code, ErrorCode.CONNECTION)
    assert.ok(e.message.length > 0)
    return true
  })
})

test('a creator-only ACL refuses another client with ZKLOCK_PERMISSION', async () => {
  const p = uniquePath('acl')
  const owner = await Client.connect(zk.servers, { auth: 'alice:secret', acl: 'creator-all' })
  try {
    const lease = await owner.mutex(p).acquire()
    await assert.rejects(b.mutex(p).tryAcquire(), (e) => {
      assert.equal(e.code, ErrorCode.PERMISSION)
      assert.ok(e.message.includes(p), e.message)
      return true
    })
    await lease.release()
  } finally {
    await owner.close()
  }
})
