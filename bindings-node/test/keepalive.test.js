// Issue 33, must-fix: a Node process exited with code 0 while it led, when the only thing left
// to wait on was its leadership's signal. A held lease (or leadership) keeps the event loop
// alive until it is released or lost, unless unref()'d. The children are
// test/fixtures/keepalive-child.js: they print what happened in order ('holding', then
// 'ended ...' when the lease ends, 'idle <state>' when Node's loop empties), so each case
// checks the order of events, not a time.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const path = require('node:path')
const readline = require('node:readline')
const { useZooKeeper, uniquePath } = require('./harness.js')

const childPath = path.join(__dirname, 'fixtures', 'keepalive-child.js')

let zk
let client
useZooKeeper({ clients: [{}] }, (s) => ([zk, client] = [s.zk, ...s.clients]))

/** Spawns a child; resolves once it said 'holding', with its lines so far and its exit. */
async function holdingChild(lockPath, mode, maxHoldMs) {
  const child = spawn(process.execPath, [childPath, zk.servers, lockPath, mode, String(maxHoldMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const lines = []
  let onLine = () => {}
  readline.createInterface({ input: child.stdout }).on('line', (l) => {
    lines.push(l)
    onLine()
  })
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  await new Promise((resolve, reject) => {
    onLine = () => lines.includes('holding') && resolve()
    exited.then((e) => reject(new Error(`the child exited before holding: ${JSON.stringify(e)}, said ${lines}`)))
  })
  return { child, lines, exited, heldAt: performance.now() }
}

// How long an unref()'d holder takes to exit on this machine, now: the window in which a
// holder that is not kept alive would have exited (a loaded machine gets a longer one).
let windowMs = 0

test('a lease that is unref()ed lets its process exit on its own while it holds', async () => {
  const lockPath = uniquePath('keepalive-unref')
  const { lines, exited, heldAt } = await holdingChild(lockPath, 'unref', 60_000)
  const exit = await exited
  const took = performance.now() - heldAt
  windowMs = Math.max(1_500, 10 * took)
  assert.deepEqual(exit, { code: 0, signal: null })
  assert.deepEqual(lines, ['holding', 'idle held'], 'it exited while its lease was held')
})

test('a child that holds a lock and only awaits its lost event stays alive until it releases', async () => {
  const lockPath = uniquePath('keepalive-lock')
  const { child, lines, exited } = await holdingChild(lockPath, 'lock', 60_000)
  const early = await Promise.race([exited, new Promise((r) => setTimeout(() => r(null), windowMs))])
  assert.equal(early, null, `the holder exited while holding: ${lines}`)
  assert.deepEqual(lines, ['holding'])
  assert.equal((await client.mutex(lockPath).participants()).length, 1, 'its node is there')
  child.kill('SIGUSR2') // it releases
  assert.deepEqual(await exited, { code: 0, signal: null })
  assert.deepEqual(lines, ['holding', 'ended released', 'idle released'])
})

test('a child that leads and only awaits the signal inside run() stays alive while it leads, and exits when the leadership ends', async () => {
  const lockPath = uniquePath('keepalive-lead')
  // The leadership ends by its maximum hold, after the window in which a leader that is not
  // kept alive would have exited.
  const { lines, exited } = await holdingChild(lockPath, 'lead', Math.ceil(windowMs))
  assert.deepEqual(await exited, { code: 0, signal: null })
  assert.deepEqual(lines, ['holding', 'ended ZKLOCK_LOST', 'idle lost'], 'it exited while it led')
})

test('hasRef() follows unref(), ref(), release and loss', async () => {
  const mutex = client.mutex(uniquePath('keepalive-hasref'))
  const lease = await mutex.acquire()
  assert.equal(lease.hasRef(), true, 'a held lease keeps the loop alive')
  assert.equal(lease.unref(), lease)
  assert.equal(lease.hasRef(), false)
  assert.equal(lease.ref(), lease)
  assert.equal(lease.hasRef(), true)
  assert.equal(await lease.release(), 'released')
  assert.equal(lease.hasRef(), false, 'a released lease keeps nothing alive')
  lease.ref()
  assert.equal(lease.hasRef(), false, 'ref() after release does nothing')

  const short = await client.mutex(uniquePath('keepalive-hasref-lost'), { maxHoldMs: 200 }).acquire()
  assert.equal(short.hasRef(), true)
  const [err] = await require('node:events').once(short, 'lost')
  assert.equal(err.code, 'ZKLOCK_LOST')
  // The core's end report reaches the JS thread through the settle queue, after 'lost'.
  await new Promise((resolve) => {
    const poll = () => (short.hasRef() ? setImmediate(poll) : resolve())
    poll()
  })
  assert.equal(short.hasRef(), false)
})
