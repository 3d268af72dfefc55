// The cross-language demo worker (examples/worker.mjs): two of them on one path write
// well-formed, non-overlapping lines with increasing tokens.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { startZooKeeper, uniquePath } = require('./harness.js')

let zk
test.before(async () => {
  zk = await startZooKeeper()
})
test.after(async () => {
  if (zk) await zk.stop()
})

test('worker.mjs: SERVERS PATH ROUNDS LOGFILE', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zklock-node-worker-'))
  const log = path.join(dir, 'log')
  const worker = path.join(__dirname, '..', 'examples', 'worker.mjs')
  const lockPath = uniquePath('worker')
  const codes = await Promise.all(
    [0, 1].map(
      () =>
        new Promise((resolve) => {
          const child = spawn(process.execPath, [worker, zk.servers, lockPath, '5', log], {
            stdio: 'inherit',
          })
          child.on('exit', resolve)
        }),
    ),
  )
  assert.deepEqual(codes, [0, 0])
  const lines = fs.readFileSync(log, 'utf8').trim().split('\n')
  assert.equal(lines.length, 10)
  const now = BigInt(Date.now()) * 1_000_000n
  let prev = null
  for (const line of lines) {
    const m = /^node (\d+) (\d+) (\d+)$/.exec(line)
    assert.ok(m, `bad line ${line}`)
    const [token, enter, exit] = [BigInt(m[1]), BigInt(m[2]), BigInt(m[3])]
    assert.ok(exit - enter >= 15_000_000n, `held ~20 ms: ${line}`)
    assert.ok(now - enter < 600_000_000_000n && enter <= now, `wall clock ns: ${line}`)
    if (prev) {
      assert.ok(token > prev.token, 'tokens increase')
      assert.ok(enter >= prev.exit, 'sections do not overlap')
    }
    prev = { token, exit }
  }
  fs.rmSync(dir, { recursive: true, force: true })
})

test('worker.mjs without arguments prints its usage and exits 2', async () => {
  const worker = path.join(__dirname, '..', 'examples', 'worker.mjs')
  const child = spawn(process.execPath, [worker], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  child.stderr.on('data', (d) => (err += d))
  const code = await new Promise((resolve) => child.on('exit', resolve))
  assert.equal(code, 2)
  assert.match(err, /usage/)
})
