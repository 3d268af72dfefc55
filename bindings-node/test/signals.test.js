// Issue 27, wish: Ctrl-C or SIGTERM releases the lock at once when the application opts in with
// zklock.closeOnSignals(); without it a signal kills Node without an 'exit' event and the lock
// lasts the session timeout (as documented). Each case spawns a child that connects, acquires
// and says 'held'; the test sends the signal and times how soon another client gets the lock.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const path = require('node:path')
const readline = require('node:readline')
const { useZooKeeper, uniquePath } = require('./harness.js')
const zklock = require('../index.js')

const indexPath = path.join(__dirname, '..', 'index.js')
const SESSION_MS = 8000

let zk
let other
useZooKeeper({ clients: [{ sessionTimeoutMs: 10_000 }] }, (s) => ([zk, other] = [s.zk, ...s.clients]))

/**
 * A child holding `lockPath`. `setup` is code run before connecting (e.g. the opt-in). Resolves
 * once it holds the lock, with the child and a promise of its `{ code, signal }` at exit.
 */
async function holdingChild(lockPath, setup) {
  const script = `
'use strict'
const zklock = require(${JSON.stringify(indexPath)})
${setup}
;(async () => {
  const client = await zklock.Client.connect(${JSON.stringify(zk.servers)}, { sessionTimeoutMs: ${SESSION_MS} })
  await client.mutex(${JSON.stringify(lockPath)}).acquire()
  console.log('held')
  setInterval(() => {}, 1000) // alive until signalled
})().catch((e) => { console.error(e); process.exit(3) })
`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  const lines = readline.createInterface({ input: child.stdout })
  const first = await Promise.race([
    new Promise((resolve) => lines.once('line', resolve)),
    exited.then((e) => `exited ${JSON.stringify(e)}`),
  ])
  assert.equal(first, 'held')
  return { child, exited, lines }
}

/** Milliseconds from `since` until `other` acquires `lockPath` (Infinity: not within waitMs). */
async function msUntilAcquired(lockPath, since, waitMs) {
  let lease
  try {
    lease = await other.mutex(lockPath).acquire({ timeoutMs: waitMs })
  } catch (e) {
    if (e.code === zklock.ErrorCode.TIMEOUT) return Infinity
    throw e
  }
  const ms = performance.now() - since
  await lease.release()
  return ms
}

const shown = (ms) => (ms === Infinity ? 'not within the wait' : `${ms.toFixed(1)} ms`)

for (const signal of ['SIGTERM', 'SIGINT']) {
  test(`with closeOnSignals(), ${signal} frees the lock within a second and the child dies by ${signal}`, async () => {
    const lockPath = uniquePath(`signal-${signal}`)
    const { child, exited } = await holdingChild(lockPath, 'zklock.closeOnSignals()')
    const t0 = performance.now()
    child.kill(signal)
    const ms = await msUntilAcquired(lockPath, t0, 2 * SESSION_MS)
    console.log(`closeOnSignals, ${signal} -> another client holds the lock: ${shown(ms)} (session ${SESSION_MS} ms)`)
    assert.ok(ms < 1000, `the lock came ${shown(ms)} after ${signal}, expected < 1000 ms`)
    // Re-raised: the process ends by the signal, as it would without the handlers.
    assert.deepEqual(await exited, { code: null, signal })
  })
}

test('without closeOnSignals, SIGTERM leaves the lock to the session timeout (the documented default)', async () => {
  const lockPath = uniquePath('signal-default')
  const { child, exited } = await holdingChild(lockPath, '')
  const t0 = performance.now()
  child.kill('SIGTERM')
  assert.deepEqual(await exited, { code: null, signal: 'SIGTERM' })
  const ms = await msUntilAcquired(lockPath, t0, 2 * SESSION_MS)
  console.log(`no opt-in, SIGTERM -> another client holds the lock: ${shown(ms)}`)
  assert.ok(ms > 2000, `the lock came after ${shown(ms)}: expected the session timeout`)
})

test("an application's own SIGTERM listener decides after closeOnSignals closed the clients", async () => {
  const lockPath = uniquePath('signal-own-listener')
  const setup = `
zklock.closeOnSignals()
process.on('SIGTERM', () => { console.log('own listener'); setTimeout(() => process.exit(7), 200) })
`
  const { child, exited, lines } = await holdingChild(lockPath, setup)
  const heard = new Promise((resolve) => lines.once('line', resolve))
  const t0 = performance.now()
  child.kill('SIGTERM')
  const ms = await msUntilAcquired(lockPath, t0, 2 * SESSION_MS)
  assert.ok(ms < 1000, `the lock came ${shown(ms)} after SIGTERM, expected < 1000 ms`)
  assert.equal(await heard, 'own listener')
  assert.deepEqual(await exited, { code: 7, signal: null })
})

test('closeOnSignals checks its options and its returned function removes the handlers', () => {
  const before = process.listenerCount('SIGTERM')
  const stop = zklock.closeOnSignals({ signals: ['SIGTERM'] })
  assert.equal(process.listenerCount('SIGTERM'), before + 1)
  zklock.closeOnSignals({ signals: ['SIGTERM'] }) // once per signal, however often called
  assert.equal(process.listenerCount('SIGTERM'), before + 1)
  stop()
  assert.equal(process.listenerCount('SIGTERM'), before)
  const INVALID = { code: zklock.ErrorCode.INVALID_ARGUMENT }
  for (const signals of [[], 'SIGTERM', ['sigterm'], [15], ['SIGKILL']]) {
    assert.throws(() => zklock.closeOnSignals({ signals: /** @type {any} */ (signals) }), INVALID, String(signals))
  }
})
