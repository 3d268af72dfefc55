// Acceptance 4: a holder whose session expires gets lease.signal aborted (reason ZKLOCK_LOST)
// and exactly one 'lost' event; another client then gets the lock with a larger token. The
// holder talks to ZooKeeper through the harness's fault proxy, which we blackhole.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { useZooKeeper, uniquePath, eventually } = require('./harness.js')
const { Client, ErrorCode } = require('../index.js')

let zk
useZooKeeper({ proxy: true }, (s) => (zk = s.zk))

test('an expired holder sees signal.aborted and one lost event; others take over', async () => {
  const lockPath = uniquePath('expiry')
  const holder = await Client.connect(zk.proxy, { sessionTimeoutMs: 2_000 })
  const other = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  try {
    const lease = await holder.mutex(lockPath).acquire()
    const events = []
    lease.on('suspended', () => events.push('suspended'))
    lease.on('resumed', () => events.push('resumed'))
    let lostError
    lease.on('lost', (err) => {
      lostError = err
      events.push(['lost', err.code])
    })
    let abortEvents = 0
    lease.signal.addEventListener('abort', () => abortEvents++)

    await zk.command('blackhole')
    await eventually(() => lease.signal.aborted, 20_000, 'the lost signal')
    assert.equal(lease.state, 'lost')
    assert.equal(lease.signal.reason.code, ErrorCode.LOST)
    assert.ok(lease.signal.reason instanceof Error)
    assert.ok(lease.signal.reason.message.includes(lockPath), lease.signal.reason.message)
    // The core says why: here no server contact for the session timeout, or the session expired.
    assert.match(lease.signal.reason.message, /lost: /, lease.signal.reason.message)

    // The server expires the session too; then someone else gets the lock.
    const next = await other.mutex(lockPath).acquire({ timeoutMs: 20_000 })
    assert.ok(next.token > lease.token, 'the next holder has a larger token')

    await zk.command('heal')
    // Give late state changes time to (not) produce a second lost.
    await new Promise((r) => setTimeout(r, 1_500))
    const lost = events.filter((e) => Array.isArray(e) && e[0] === 'lost')
    assert.deepEqual(lost, [['lost', ErrorCode.LOST]], `events: ${JSON.stringify(events)}`)
    assert.equal(abortEvents, 1)
    assert.ok(!events.includes('resumed'), `events: ${JSON.stringify(events)}`)
    assert.equal(lostError, lease.signal.reason, "the 'lost' event carries the signal's reason")
    assert.equal(await lease.release(), 'was-lost')
    await next.release()
    // The holder's client opens a new session and works again.
    const again = await holder.mutex(lockPath).acquire({ timeoutMs: 20_000 })
    assert.ok(again.token > next.token)
    assert.equal(await again.release(), 'released')
  } finally {
    await zk.command('heal').catch(() => {})
    await holder.close()
    await other.close()
  }
})

test('a short blackhole suspends the lease and resumes it', async () => {
  const lockPath = uniquePath('suspend')
  const holder = await Client.connect(zk.proxy, { sessionTimeoutMs: 6_000 })
  try {
    const lease = await holder.mutex(lockPath).acquire()
    const events = []
    lease.on('suspended', () => events.push('suspended'))
    lease.on('resumed', () => events.push('resumed'))
    lease.on('lost', () => events.push('lost'))
    await zk.command('blackhole')
    await eventually(() => events.includes('suspended'), 10_000, 'the suspended event')
    assert.equal(lease.state, 'suspended')
    await zk.command('heal')
    await eventually(() => events.includes('resumed'), 10_000, 'the resumed event')
    assert.deepEqual(events, ['suspended', 'resumed'])
    assert.equal(lease.state, 'held')
    assert.equal(lease.signal.aborted, false)
    assert.equal(await lease.release(), 'released')
  } finally {
    await zk.command('heal').catch(() => {})
    await holder.close()
  }
})
