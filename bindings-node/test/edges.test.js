// Issue 12, part 7 (Node): edges where a lock stayed held or a lost lease went unnoticed.
// A look-alike signal is refused before anything is acquired, no error path leaves a lock held,
// process.exit() and an uncaught exception free the lock node at once, using() rejects when the
// lease was lost inside fn, and after close() the state, the 'lost' event and the abort agree.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const path = require('node:path')
const { useZooKeeper, uniquePath, eventually } = require('./harness.js')
const { Client, ErrorCode } = require('../index.js')

const indexJs = path.resolve(__dirname, '..', 'index.js')

let zk
let client
let watcher
const tenSeconds = { sessionTimeoutMs: 10_000 }
useZooKeeper({ clients: [tenSeconds, tenSeconds] }, (s) => ([zk, client, watcher] = [s.zk, ...s.clients]))

async function nodes(lockPath) {
  return (await watcher.mutex(lockPath).participants()).length
}

test('a signal look-alike without removeEventListener is refused before anything is acquired', async () => {
  const p = uniquePath('lookalike')
  const m = client.mutex(p)
  const lookalike = { aborted: false, addEventListener() {} }
  await assert.rejects(m.acquire(/** @type {any} */ ({ signal: lookalike })), (e) => {
    assert.equal(e.code, ErrorCode.INVALID_ARGUMENT)
    assert.match(e.message, /removeEventListener/)
    return true
  })
  await assert.rejects(
    m.using(async () => assert.fail('ran under a refused signal'), /** @type {any} */ ({ signal: lookalike })),
    { code: ErrorCode.INVALID_ARGUMENT },
  )
  assert.equal(m.holdCount, 0)
  assert.equal(await nodes(p), 0)
})

test('a signal whose listener methods throw leaves no lock held', async () => {
  const p = uniquePath('throwing-signal')
  const m = client.mutex(p)
  const badAdd = {
    aborted: false,
    addEventListener() {
      throw new TypeError('addEventListener broke')
    },
    removeEventListener() {},
  }
  await assert.rejects(m.acquire(/** @type {any} */ ({ signal: badAdd })), (e) => {
    assert.equal(e.code, ErrorCode.INVALID_ARGUMENT)
    assert.match(e.message, /addEventListener broke/)
    return true
  })
  assert.equal(m.holdCount, 0)
  assert.equal(await nodes(p), 0)

  const badRemove = {
    aborted: false,
    addEventListener() {},
    removeEventListener() {
      throw new TypeError('removeEventListener broke')
    },
  }
  await assert.rejects(m.acquire(/** @type {any} */ ({ signal: badRemove })), (e) => {
    assert.equal(e.code, ErrorCode.INVALID_ARGUMENT)
    assert.match(e.message, /removeEventListener broke/)
    return true
  })
  assert.equal(m.holdCount, 0)
  await eventually(async () => (await nodes(p)) === 0, 5_000, 'the lock node to be gone')
  // The lock is free for someone else.
  const lease = await watcher.mutex(p).acquire({ timeoutMs: 5_000 })
  assert.equal(await lease.release(), 'released')
})

/** Runs `body` in a child node with a client on `servers` holding `lockPath` as `lease`. */
function childHolding(lockPath, body) {
  const script = `
    const { Client } = require(${JSON.stringify(indexJs)})
    ;(async () => {
      const c = await Client.connect(process.argv[1], { sessionTimeoutMs: 20_000 })
      const lease = await c.mutex(process.argv[2]).acquire()
      console.log('held', lease.path)
      ${body}
    })()
  `
  const child = spawn(process.execPath, ['-e', script, zk.servers, lockPath], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (err += d))
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, exited, output: () => ({ out, err }) }
}

async function freedAtExit(body, expectedCode) {
  const p = uniquePath('exit')
  const { exited, output } = childHolding(p, body)
  const code = await Promise.race([
    exited,
    new Promise((r) => setTimeout(() => r('hung'), 20_000)),
  ])
  const exitedAt = Date.now()
  assert.equal(code, expectedCode, `child output: ${JSON.stringify(output())}`)
  assert.match(output().out, /held /)
  // The session timeout is 20 s: anything near that means the session was not closed.
  const lease = await watcher.mutex(p).acquire({ timeoutMs: 15_000 })
  const freedAfter = Date.now() - exitedAt
  console.log(`lock free ${freedAfter} ms after the child exited`)
  assert.ok(freedAfter < 3_000, `the lock node outlived the process by ${freedAfter} ms`)
  assert.equal(await lease.release(), 'released')
}

test('process.exit() with a held lock frees the lock node at once', async () => {
  await freedAtExit('process.exit(3)', 3)
})

test('an uncaught exception with a held lock frees the lock node at once', async () => {
  await freedAtExit("setImmediate(() => { throw new Error('boom') })", 1)
})

test('using() rejects with ZKLOCK_LOST when the lease was lost inside fn', async () => {
  const c = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  const p = uniquePath('using-lost')
  let ran = false
  const err = await c
    .mutex(p)
    .using(async () => {
      ran = true
      await c.close()
      return 'done'
    })
    .then(
      (v) => assert.fail(`using() resolved with ${JSON.stringify(v)} although the lease was lost`),
      (e) => e,
    )
  assert.ok(ran)
  assert.equal(err.code, ErrorCode.LOST)
  assert.ok(err.message.includes(p), err.message)
  assert.equal(await nodes(p), 0)
})

test('after close() resolves, the state, the lost event and the abort agree at once', async () => {
  for (let round = 0; round < 5; round++) {
    const c = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
    const lease = await c.mutex(uniquePath('close-sync')).acquire()
    const seen = []
    lease.on('lost', (e) => seen.push(['lost', e.code]))
    lease.signal.addEventListener('abort', () => seen.push('abort'))
    const signal = lease.signal
    await c.close()
    // No await between close() and these reads.
    assert.equal(signal.aborted, true, `round ${round}: signal.aborted after close()`)
    assert.equal(lease.state, 'lost', `round ${round}`)
    assert.deepEqual(seen, ['abort', ['lost', ErrorCode.LOST]], `round ${round}`)
    assert.equal(signal.reason.code, ErrorCode.LOST)
    // The later notification from the core does not add a second lost.
    await new Promise((r) => setTimeout(r, 100))
    assert.deepEqual(seen, ['abort', ['lost', ErrorCode.LOST]], `round ${round}`)
  }
})
