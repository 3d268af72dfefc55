// Acceptance 1: 4 Node processes x 200 using() critical sections on one path never overlap
// (shared state file), and the fencing tokens strictly increase in critical-section order.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { startZooKeeper, uniquePath } = require('./harness.js')

const PROCESSES = 4
const ROUNDS = 200

let zk
test.before(async () => {
  zk = await startZooKeeper()
})
test.after(async () => {
  if (zk) await zk.stop()
})

test(`${PROCESSES} processes x ${ROUNDS} using() sections never overlap; tokens increase`, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zklock-node-contention-'))
  const stateFile = path.join(dir, 'state')
  const logFile = path.join(dir, 'log')
  fs.writeFileSync(stateFile, 'free')
  fs.writeFileSync(logFile, '')
  const lockPath = uniquePath('contention')
  const fixture = path.join(__dirname, 'fixtures', 'contender.js')
  const children = Array.from({ length: PROCESSES }, () =>
    spawn(process.execPath, [fixture, zk.servers, lockPath, String(ROUNDS), stateFile, logFile], {
      stdio: ['ignore', 'inherit', 'pipe'],
    }),
  )
  const results = await Promise.all(
    children.map(
      (child) =>
        new Promise((resolve) => {
          let stderr = ''
          child.stderr.on('data', (d) => (stderr += d))
          child.on('exit', (code) => resolve({ code, stderr }))
        }),
    ),
  )
  for (const r of results) assert.equal(r.code, 0, `a contender failed: ${r.stderr}`)

  const lines = fs.readFileSync(logFile, 'utf8').trim().split('\n')
  assert.equal(lines.length, PROCESSES * ROUNDS)
  let previous = -1n
  const perPid = new Map()
  for (const line of lines) {
    const [token, pid] = line.split(' ')
    const t = BigInt(token)
    assert.ok(t > previous, `token ${t} after ${previous} is not larger`)
    previous = t
    perPid.set(pid, (perPid.get(pid) || 0) + 1)
  }
  assert.equal(perPid.size, PROCESSES)
  for (const n of perPid.values()) assert.equal(n, ROUNDS)
  assert.equal(fs.readFileSync(stateFile, 'utf8'), 'free')
  fs.rmSync(dir, { recursive: true, force: true })
})
