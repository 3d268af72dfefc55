// Acceptance 5: `await using lease = await mutex.acquire()` releases at block exit, also when
// the block throws. The scenarios are TypeScript (test/dispose/dispose.ts), compiled here.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const path = require('node:path')
const { startZooKeeper, uniquePath } = require('./harness.js')
const { Client } = require('../index.js')

const root = path.resolve(__dirname, '..')

let zk
let client
let scenarios
test.before(async () => {
  // tsc is a devDependency: a missing one fails the suite.
  const tsc = require.resolve('typescript/bin/tsc', { paths: [root] })
  execFileSync(process.execPath, [tsc, '-p', path.join(__dirname, 'dispose')], {
    cwd: root,
    stdio: 'inherit',
  })
  scenarios = require('./.build/dispose/dispose.js')
  zk = await startZooKeeper()
  client = await Client.connect(zk.servers)
})
test.after(async () => {
  if (client) await client.close()
  if (zk) await zk.stop()
})

test('await using releases the lease at block exit', async () => {
  const out = await scenarios.releasedAtBlockExit(client, uniquePath('dispose'))
  assert.deepEqual(out, { nodesInside: 1, stateAfter: 'released', nodesAfter: 0 })
})

test('await using releases the lease when the block throws', async () => {
  const out = await scenarios.releasedWhenThrowing(client, uniquePath('dispose-throw'))
  assert.deepEqual(out, {
    nodesInside: 1,
    stateAfter: 'released',
    nodesAfter: 0,
    error: 'boom inside the block',
  })
})

test('await using after a manual release does not fail', async () => {
  const out = await scenarios.releasedByHand(client, uniquePath('dispose-hand'))
  assert.equal(out.stateAfter, 'released')
  assert.equal(out.nodesAfter, 0)
})

test('await using closes a client', async () => {
  assert.equal(await scenarios.clientDisposed(zk.servers), true)
})

test('await using rejects with ZKLOCK_LOST when the lease was lost inside the block, as using() does', async () => {
  const out = await scenarios.lostInsideTheBlock(zk.servers, uniquePath('dispose-lost'))
  assert.deepEqual(out, {
    disposed: 'ZKLOCK_LOST',
    used: 'ZKLOCK_LOST',
    stateAfter: 'lost',
    thrown: { name: 'SuppressedError', error: 'ZKLOCK_LOST', suppressed: 'boom after the loss' },
  })
})
