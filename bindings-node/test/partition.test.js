// Issue 12, part 2 (Node): the holder knows first. A holder connected through the fault proxy is
// black-holed (the link stays open, nothing crosses) while a second client on the direct link
// waits with acquire(). The holder's lost signal (lease.signal abort and the 'lost' event) must
// fire before the second client's acquire resolves: otherwise two holders run at once. Each
// round prints the margin (positive: the holder knew that many ms before the other got the lock).
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { performance } = require('node:perf_hooks')
const { useZooKeeper, uniquePath, eventually } = require('./harness.js')
const { Client, ErrorCode } = require('../index.js')

let zk
useZooKeeper({ proxy: true }, (s) => (zk = s.zk))

async function round(sessionTimeoutMs) {
  const lockPath = uniquePath('partition')
  const holder = await Client.connect(zk.proxy, { sessionTimeoutMs })
  const other = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  try {
    const lease = await holder.mutex(lockPath).acquire()
    let abortAt = null
    let lostEventAt = null
    lease.signal.addEventListener('abort', () => (abortAt = performance.now()))
    lease.on('lost', () => (lostEventAt = performance.now()))
    const waiting = other.mutex(lockPath).acquire({ timeoutMs: 60_000 })
    // Let the waiter queue up behind the holder.
    await eventually(
      async () => (await other.mutex(lockPath).participants()).length === 2,
      5_000,
      'the waiter node',
    )
    const blackholedAt = performance.now()
    await zk.command('blackhole')
    const next = await waiting
    const acquiredAt = performance.now()
    await eventually(() => abortAt !== null && lostEventAt !== null, 30_000, "the holder's lost signal")
    assert.equal(lease.signal.reason.code, ErrorCode.LOST)
    await next.release()
    return {
      sessionTimeoutMs,
      abortMargin: Math.round(acquiredAt - abortAt),
      lostEventMargin: Math.round(acquiredAt - lostEventAt),
      lostAfterBlackhole: Math.round(abortAt - blackholedAt),
      acquiredAfterBlackhole: Math.round(acquiredAt - blackholedAt),
    }
  } finally {
    await zk.command('heal').catch(() => {})
    await holder.close()
    await other.close()
  }
}

test("a black-holed holder's lost signal fires before another client's acquire resolves", async () => {
  const results = []
  for (const sessionTimeoutMs of [2_000, 4_000, 2_000]) {
    const r = await round(sessionTimeoutMs)
    console.log(
      `session ${r.sessionTimeoutMs} ms: lost ${r.lostAfterBlackhole} ms and acquired ` +
        `${r.acquiredAfterBlackhole} ms after the black hole; margin ${r.abortMargin} ms ` +
        `(signal), ${r.lostEventMargin} ms ('lost' event)`,
    )
    results.push(r)
  }
  for (const r of results) {
    assert.ok(
      r.abortMargin > 0 && r.lostEventMargin > 0,
      `the holder learnt it lost the lock after the other client had it: ${JSON.stringify(r)}`,
    )
  }
})
