// Issue 14 (Node face): Semaphore(N) and the semaphore mutex on Curator's layout, and
// revocation, against a real ZooKeeper. A semaphore is a Lock: promises, AbortSignal, using(),
// await using and the lease's events all come from the same code as the mutex's.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { useZooKeeper, uniquePath, eventually } = require('./harness.js')
const { Client, ErrorCode, Semaphore } = require('../index.js')

let zk
let a
let b
useZooKeeper({ proxy: true, clients: [{}, {}] }, (s) => ([zk, a, b] = [s.zk, ...s.clients]))

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** The lease nodes under a semaphore path (holders and guard waiters). */
async function leaseNodes(client, lockPath) {
  return (await client.semaphore(lockPath, 1).participants()).filter((p) => p.kind === 'lease')
}

test('a semaphore of 2 never has more than 2 holders among 4 contenders', async () => {
  const lockPath = uniquePath('sem-four')
  const clients = await Promise.all([0, 1, 2, 3].map(() => Client.connect(zk.servers)))
  let inside = 0
  let most = 0
  const tokens = []
  try {
    await Promise.all(
      clients.map(async (c) => {
        const sem = c.semaphore(lockPath, 2)
        for (let i = 0; i < 3; i++) {
          await sem.using(async (lease) => {
            inside++
            most = Math.max(most, inside)
            tokens.push(lease.token)
            await sleep(150)
            inside--
          }, { timeoutMs: 60_000 })
        }
      }),
    )
    assert.equal(tokens.length, 12)
    assert.equal(most, 2, 'at most 2 holders at once, and 2 did hold together')
    assert.equal(new Set(tokens).size, 12, 'every lease has a token of its own')
    assert.deepEqual(await leaseNodes(a, lockPath), [])
  } finally {
    await Promise.all(clients.map((c) => c.close()))
  }
})

test('a semaphore mutex excludes another client and its own holder (not re-entrant)', async () => {
  const lockPath = uniquePath('sem-mutex')
  const mine = a.semaphoreMutex(lockPath)
  assert.ok(mine instanceof Semaphore)
  assert.equal(mine.maxLeases, 1)
  const lease = await mine.acquire({ timeoutMs: 10_000 })
  try {
    assert.equal(lease.state, 'held')
    assert.equal(await b.semaphoreMutex(lockPath).tryAcquire(), null)
    assert.equal(await mine.tryAcquire(), null, 'the holder waits for itself, as in Curator')
    assert.equal(mine.holdCount, 0)
  } finally {
    // What `await using` calls at block exit (the syntax needs Node 22 or tsc).
    await lease[Symbol.asyncDispose]()
  }
  assert.equal(lease.state, 'released')
  const next = await b.semaphoreMutex(lockPath).acquire({ timeoutMs: 10_000 })
  assert.equal(await next.release(), 'released')
  assert.deepEqual(await leaseNodes(a, lockPath), [])
})

test('try, timeout and abort on a full semaphore leave no node behind', async () => {
  const lockPath = uniquePath('sem-full')
  const held = await a.semaphore(lockPath, 1).acquire()
  try {
    const sem = b.semaphore(lockPath, 1)
    assert.equal(await sem.tryAcquire(), null)
    await assert.rejects(sem.acquire({ timeoutMs: 300 }), { code: ErrorCode.TIMEOUT })
    const controller = new AbortController()
    const pending = sem.acquire({ signal: controller.signal })
    await sleep(300)
    controller.abort()
    await assert.rejects(pending, { code: ErrorCode.ABORTED })
    const nodes = await leaseNodes(a, lockPath)
    assert.deepEqual(nodes.map((p) => p.node), [held.path])
    assert.equal(nodes[0].maxLeases, 1)
    assert.equal(nodes[0].token, held.token)
  } finally {
    await held.release()
  }
  assert.deepEqual(await leaseNodes(a, lockPath), [])
})

test('revocation reaches the holder as a revokeRequested event; the lease stays held', async () => {
  const lockPath = uniquePath('sem-revoke')
  const lease = await a.semaphore(lockPath, 2).acquire()
  try {
    let heard = 0
    lease.on('revokeRequested', () => heard++)
    assert.equal(lease.revokeRequested, false)
    assert.deepEqual(await b.revoke(lockPath), [lease.path])
    await eventually(() => heard === 1, 10_000, "the 'revokeRequested' event")
    assert.equal(lease.revokeRequested, true)
    assert.equal(lease.state, 'held', 'only a request: the holder decides')
  } finally {
    await lease.release()
  }
  await assert.rejects(b.revoke(lockPath), { code: ErrorCode.NOT_HELD })
})

test('revoking one node asks only its holder', async () => {
  const lockPath = uniquePath('sem-revoke-one')
  const first = await a.semaphore(lockPath, 2).acquire()
  const second = await b.semaphore(lockPath, 2).acquire()
  try {
    const name = first.path.split('/').pop()
    assert.deepEqual(await b.revoke(lockPath, { node: name }), [first.path])
    await eventually(() => first.revokeRequested, 10_000, 'the request on the first lease')
    await sleep(300)
    assert.equal(second.revokeRequested, false)
    await assert.rejects(b.revoke(lockPath, { node: 'no-such-node' }), { code: ErrorCode.NOT_HELD })
  } finally {
    await first.release()
    await second.release()
  }
})

test('a semaphore lease whose session expires is lost (signal, event) and its place freed', async () => {
  const lockPath = uniquePath('sem-expiry')
  const holder = await Client.connect(zk.proxy, { sessionTimeoutMs: 2_000 })
  try {
    const lease = await holder.semaphore(lockPath, 1).acquire()
    let lost = 0
    lease.on('lost', () => lost++)
    await zk.command('blackhole')
    await eventually(() => lease.signal.aborted, 20_000, 'the lost signal')
    assert.equal(lease.state, 'lost')
    assert.equal(lease.signal.reason.code, ErrorCode.LOST)
    const next = await b.semaphore(lockPath, 1).acquire({ timeoutMs: 30_000 })
    assert.ok(next.token > lease.token)
    await next.release()
    await zk.command('heal')
    assert.equal(lost, 1)
    assert.equal(await lease.release(), 'was-lost')
  } finally {
    await zk.command('heal').catch(() => {})
    await holder.close()
  }
})

test('a number of leases out of range or not a number is ZKLOCK_INVALID_ARGUMENT', () => {
  for (const n of [0, -1, 2 ** 31, 2.5, NaN, Infinity]) {
    assert.throws(() => a.semaphore('/sem/invalid', n), { code: ErrorCode.INVALID_ARGUMENT }, String(n))
  }
  for (const n of ['2', 2n, null, undefined]) {
    assert.throws(() => a.semaphore('/sem/invalid', /** @type {any} */ (n)), {
      code: ErrorCode.INVALID_ARGUMENT,
    })
  }
  assert.throws(() => a.semaphore('/sem/invalid', -1), /invalid number of leases -1/)
})
