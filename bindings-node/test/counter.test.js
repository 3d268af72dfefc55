// Issue 51 (Node): an 'int64' counter's values are bigints, so a count past 2^53 reads as
// itself (a number read 9007199254740993 as 9007199254740992); an 'int32' counter's stay
// numbers, which always fit. Arguments take a safe integer number or a bigint.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { useZooKeeper, uniquePath } = require('./harness.js')
const { ErrorCode } = require('../index.js')

let client
useZooKeeper({ clients: [{}] }, (s) => ([client] = s.clients))

test('an int64 counter reads 2^53 + 1 exactly as a bigint, and an int32 counter reads numbers', async () => {
  const big = client.counter(uniquePath('counter-int64'), { width: 'int64' })
  const missing = await big.get()
  assert.deepEqual(missing, { value: 0n, version: -1 })
  const set = await big.compareAndSet(missing, 9007199254740993n)
  assert.ok(set !== null)
  assert.equal(set.value, 9007199254740993n)
  assert.equal((await big.get()).value, 9007199254740993n)

  const lockPath = uniquePath('counter-int64-lock')
  const lease = await client.mutex(lockPath).acquire()
  try {
    assert.equal((await lease.guardedIncrement(big, 1)).value, 9007199254740994n)
    assert.equal((await lease.guardedIncrement(big, -2n)).value, 9007199254740992n)
    const max = await big.compareAndSet(await big.get(), 2n ** 63n - 1n)
    assert.equal(max?.value, 2n ** 63n - 1n)
    await assert.rejects(lease.guardedIncrement(big, 1), { code: ErrorCode.INVALID_ARGUMENT })
  } finally {
    await lease.release()
  }
  await assert.rejects(big.compareAndSet(await big.get(), 2n ** 63n), { code: ErrorCode.INVALID_ARGUMENT })
  await assert.rejects(big.compareAndSet(await big.get(), 2 ** 53), { code: ErrorCode.INVALID_ARGUMENT })

  const small = client.counter(uniquePath('counter-int32'))
  const first = await small.compareAndSet(await small.get(), 41n)
  assert.deepEqual(first, { value: 41, version: 0 })
  assert.equal(typeof (await small.get()).value, 'number')
})
