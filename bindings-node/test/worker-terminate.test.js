// Issue 27, item 1: every client of a JS environment closes when that environment goes away,
// whatever listens to its leases. A worker_thread that is terminate()d, or that ends with its
// process, frees its locks within milliseconds, also when its leases had listeners or their
// `signal` was read (a state subscription then holds the core lease, so nothing but an
// explicit close ends its session).
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker } = require('node:worker_threads')
const { spawn } = require('node:child_process')
const path = require('node:path')
const readline = require('node:readline')
const { useZooKeeper, uniquePath } = require('./harness.js')

const indexPath = path.join(__dirname, '..', 'index.js')

let zk
let other
useZooKeeper({ clients: [{ sessionTimeoutMs: 10_000 }] }, (s) => ([zk, other] = [s.zk, ...s.clients]))

// A worker that connects with `sessionTimeoutMs`, takes each of `paths` (a mutex, or with
// `semaphore` a semaphore of 1), makes each lease watched the way `listen` says, posts 'held'
// and then waits (its event loop kept alive) until it is terminated.
const workerSource = `
'use strict'
const { parentPort, workerData } = require('node:worker_threads')
const { Client } = require(workerData.indexPath)
;(async () => {
  const client = await Client.connect(workerData.servers, { sessionTimeoutMs: workerData.sessionTimeoutMs })
  const leases = []
  for (const [i, p] of workerData.paths.entries()) {
    const lock = workerData.semaphore && i % 2 === 1 ? client.semaphore(p, 1) : client.mutex(p)
    const lease = await lock.acquire()
    for (const how of workerData.listen) {
      if (how === 'signal') lease.signal.addEventListener('abort', () => {})
      else lease.on(how, () => {})
    }
    leases.push(lease)
  }
  globalThis.keep = leases
  setInterval(() => {}, 1000)
  parentPort.postMessage('held')
})().catch((e) => parentPort.postMessage('failed: ' + (e && e.stack)))
`

function startWorker(paths, { sessionTimeoutMs = 4000, listen = ['signal', 'lost'], semaphore = false } = {}) {
  const worker = new Worker(workerSource, {
    eval: true,
    workerData: { indexPath, servers: zk.servers, paths, sessionTimeoutMs, listen, semaphore },
  })
  const held = new Promise((resolve, reject) => {
    worker.once('error', reject)
    worker.once('message', (m) => (m === 'held' ? resolve() : reject(new Error(String(m)))))
  })
  return { worker, held }
}

/** Milliseconds until `client` acquires `lockPath` (waiting up to `waitMs`), then releases it. */
async function msUntilAcquired(client, lockPath, since, waitMs) {
  let lease
  try {
    lease = await client.mutex(lockPath).acquire({ timeoutMs: waitMs })
  } catch (e) {
    if (e.code === 'ZKLOCK_TIMEOUT') return Infinity
    throw e
  }
  const ms = performance.now() - since
  await lease.release()
  return ms
}

test('a terminated worker whose lease had a lost listener and a read signal frees its lock within a second', async () => {
  const lockPath = uniquePath('terminated')
  const { worker, held } = startWorker([lockPath], { sessionTimeoutMs: 4000, listen: ['signal', 'lost'] })
  await held
  assert.equal(await other.mutex(lockPath).tryAcquire(), null, 'the worker holds the lock')
  const t0 = performance.now()
  const terminated = worker.terminate()
  // Waits past the 4 s session timeout: a lock that only goes with the session shows as ~4-8 s.
  const ms = await msUntilAcquired(other, lockPath, t0, 10_000)
  await terminated
  console.log(`terminate() -> another client holds the lock: ${ms === Infinity ? 'not within 10 s' : `${ms.toFixed(1)} ms`}`)
  assert.ok(ms < 1000, `the lock came ${ms.toFixed(1)} ms after terminate(), expected < 1000 ms`)
})

test('random terminations of several workers holding locks with listeners free every lock within a second', async () => {
  const listenings = [
    ['signal'],
    ['lost'],
    ['suspended', 'resumed'],
    ['revokeRequested', 'lost'],
    ['signal', 'lost', 'suspended'],
    [],
  ]
  const times = []
  const rounds = 3
  const perRound = 4
  for (let round = 0; round < rounds; round++) {
    const workers = []
    for (let w = 0; w < perRound; w++) {
      // Each worker holds two locks (the second a semaphore for every other worker).
      const paths = [uniquePath(`random-${round}-${w}-a`), uniquePath(`random-${round}-${w}-b`)]
      // Every way of watching comes up twice over the rounds, with an unwatched lease for
      // comparison.
      const listen = listenings[(round * perRound + w) % listenings.length]
      const started = startWorker(paths, { sessionTimeoutMs: 4000, listen, semaphore: w % 2 === 1 })
      workers.push({ ...started, paths, listen })
    }
    await Promise.all(workers.map((w) => w.held))
    // Terminated in a random order, a few milliseconds apart.
    workers.sort(() => Math.random() - 0.5)
    const checks = []
    for (const w of workers) {
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 30)))
      const t0 = performance.now()
      const terminated = w.worker.terminate()
      checks.push(
        (async () => {
          const ms = []
          for (const p of w.paths) ms.push(await msUntilAcquired(other, p, t0, 6000))
          await terminated
          return { listen: w.listen, ms: Math.max(...ms) }
        })(),
      )
    }
    times.push(...(await Promise.all(checks)))
  }
  const worst = Math.max(...times.map((t) => t.ms))
  const late = times.filter((t) => !(t.ms < 1000))
  console.log(
    `${times.length} terminations: slowest lock free after ${worst === Infinity ? 'more than 6 s' : `${worst.toFixed(1)} ms`}; ` +
      `${late.length} later than 1 s (${late.map((t) => `[${t.listen.join(',')}]`).join(' ')})`,
  )
  assert.deepEqual(late, [], 'every lock is free within 1 s of its worker being terminated')
})

// A child process whose main thread ends (`how`) while its worker holds a lock with a lost
// listener; resolves with the ms from the child's last word to another client holding the lock.
async function lockAfterChildEnds(how, sessionTimeoutMs) {
  const lockPath = uniquePath(`child-${how}`)
  const script = `
'use strict'
const { Worker } = require('node:worker_threads')
const worker = new Worker(${JSON.stringify(workerSource)}, {
  eval: true,
  workerData: ${JSON.stringify({ indexPath, servers: zk.servers, paths: [lockPath], sessionTimeoutMs, listen: ['signal', 'lost'] })},
})
worker.once('message', (m) => {
  if (m !== 'held') { console.error(m); process.exit(3) }
  console.log('held')
  if (${JSON.stringify(how)} === 'exit') {
    process.exit(0)
  } else {
    // The main thread has nothing left to do: the unref()'d worker does not keep it alive.
    worker.unref()
  }
})
`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
  const lines = readline.createInterface({ input: child.stdout })
  const [line] = await Promise.race([
    new Promise((resolve) => lines.once('line', (l) => resolve([l]))),
    exited.then((code) => [`exited ${code}`]),
  ])
  assert.equal(line, 'held')
  // The child's main thread is ending now.
  const t0 = performance.now()
  const ms = await msUntilAcquired(other, lockPath, t0, sessionTimeoutMs * 2)
  assert.equal(await exited, 0)
  return ms
}

test('a process whose main thread calls process.exit() while its worker holds a lock with a listener frees the lock at once', async () => {
  const sessionTimeoutMs = 8000
  const ms = await lockAfterChildEnds('exit', sessionTimeoutMs)
  console.log(
    `process.exit(0) in the main thread -> another client holds the worker's lock: ` +
      `${ms === Infinity ? `not within ${2 * sessionTimeoutMs} ms` : `${ms.toFixed(1)} ms`} (session timeout ${sessionTimeoutMs} ms)`,
  )
  assert.ok(ms < 1000, `the lock came ${ms.toFixed(1)} ms after the child's main thread exited, expected < 1000 ms`)
})

test('a process whose main thread ends while its unref()d worker holds a lock with a listener frees the lock at once', async () => {
  const sessionTimeoutMs = 8000
  const ms = await lockAfterChildEnds('end', sessionTimeoutMs)
  console.log(
    `main thread ends -> another client holds the worker's lock: ` +
      `${ms === Infinity ? `not within ${2 * sessionTimeoutMs} ms` : `${ms.toFixed(1)} ms`} (session timeout ${sessionTimeoutMs} ms)`,
  )
  assert.ok(ms < 1000, `the lock came ${ms.toFixed(1)} ms after the child's main thread ended, expected < 1000 ms`)
})
