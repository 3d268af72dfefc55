// Issue 57, the Node face: a program using zklock ends with its own status whatever zklock is
// doing then (leases held with listeners, a listener calling process.exit, the core still
// telling a closing client's leases, a worker terminated while its listeners run), checked by
// many short programs beside CPU hogs started by this test. zklock's threads never call into
// JS: they hand work to a threadsafe function that Node's teardown closes under a lock they
// take (src/queue.rs), so nothing of JS is touched once an environment is gone.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const path = require('node:path')
const { useZooKeeper, uniquePath } = require('./harness.js')
const { STATUS } = require('./fixtures/exit-shapes.js')

const RUNS = Number(process.env.ZKLOCK_EXIT_RUNS || 25)
const PROGRAM = path.join(__dirname, 'fixtures', 'exit-shapes.js')

let zk
useZooKeeper({}, (s) => (zk = s.zk))

function runOnce(shape) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [PROGRAM, shape, zk.servers, uniquePath(`exit-${shape}`)], {
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ shape, code, signal, stderr: stderr.slice(-1500) })
    })
  })
}

test('programs of every shape exit with their own status beside a CPU hog', async () => {
  const hogs = [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }))
  try {
    const shapes = Object.keys(STATUS)
    const jobs = []
    for (let i = 0; i < RUNS; i++) jobs.push(...shapes)
    const results = []
    const started = Date.now()
    // Two at a time beside the two hogs.
    const lanes = [0, 1].map(async () => {
      while (jobs.length) results.push(await runOnce(jobs.shift()))
    })
    await Promise.all(lanes)
    const bad = results.filter((r) => r.code !== STATUS[r.shape] || r.signal !== null)
    const counts = shapes
      .map((s) => `${s} ${results.filter((r) => r.shape === s && !bad.includes(r)).length}/${RUNS}`)
      .join(', ')
    console.log(`exit shapes: ${results.length} runs in ${((Date.now() - started) / 1000).toFixed(0)} s beside 2 CPU hogs: ${counts}`)
    assert.deepEqual(
      bad.map((r) => `${r.shape}: code ${r.code} signal ${r.signal} (expected ${STATUS[r.shape]}): ${r.stderr}`),
      [],
    )
  } finally {
    for (const h of hogs) h.kill('SIGKILL')
  }
})
