// Issue 27, item 2: the `zklock` diagnostics channel of each JS environment (the main thread, a
// worker thread) gets the records of that environment's clients, and only those: a worker that
// connects does not take the main thread's records away, and a worker that subscribes does not
// receive the main thread's (its lost leases' 'warn' records included).
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const diagnosticsChannel = require('node:diagnostics_channel')
const { Worker } = require('node:worker_threads')
const path = require('node:path')
const { useZooKeeper, uniquePath, eventually } = require('./harness.js')
const { Client } = require('../index.js')

const indexPath = path.join(__dirname, '..', 'index.js')

let zk
useZooKeeper({}, (s) => (zk = s.zk))

const WAIT = 10_000

// A worker that subscribes to the channel, connects, and then answers the main thread's asks:
// 'acquire' (takes and releases its lock), 'lose' (a second client takes a lock and closes, so
// that its lease is lost) and 'records' (what its channel got).
const workerSource = `
'use strict'
const { parentPort, workerData } = require('node:worker_threads')
const diagnosticsChannel = require('node:diagnostics_channel')
const { Client } = require(workerData.indexPath)
const records = []
diagnosticsChannel.subscribe('zklock', (r) => records.push(r))
;(async () => {
  const client = await Client.connect(workerData.servers, { sessionTimeoutMs: 10_000 })
  parentPort.on('message', async (ask) => {
    try {
      if (ask === 'acquire') {
        await (await client.mutex(workerData.path).acquire({ timeoutMs: 10_000 })).release()
      } else if (ask === 'lose') {
        const other = await Client.connect(workerData.servers, { sessionTimeoutMs: 10_000 })
        await other.mutex(workerData.path + '-lost').acquire({ timeoutMs: 10_000 })
        await other.close()
      } else if (ask === 'records') {
        parentPort.postMessage({ records })
        return
      } else if (ask === 'close') {
        await client.close()
      }
      parentPort.postMessage({ done: ask })
    } catch (e) {
      parentPort.postMessage({ failed: String(e && e.stack) })
    }
  })
  parentPort.postMessage({ done: 'connect' })
})().catch((e) => parentPort.postMessage({ failed: String(e && e.stack) }))
`

/** Starts the worker; resolves once it connected, with `ask(what)` for its answers. */
async function startWorker(lockPath) {
  const worker = new Worker(workerSource, {
    eval: true,
    workerData: { indexPath, servers: zk.servers, path: lockPath },
  })
  const answers = []
  const waiting = []
  worker.on('message', (m) => {
    const w = waiting.shift()
    if (w) w(m)
    else answers.push(m)
  })
  const next = () =>
    new Promise((resolve, reject) => {
      const take = (m) => (m.failed ? reject(new Error(`worker: ${m.failed}`)) : resolve(m))
      if (answers.length) take(answers.shift())
      else waiting.push(take)
    })
  worker.once('error', (e) => {
    for (const w of waiting.splice(0)) w({ failed: String(e) })
  })
  assert.deepEqual(await next(), { done: 'connect' })
  return {
    worker,
    ask: (what) => {
      worker.postMessage(what)
      return next()
    },
  }
}

const about = (r, lockPath) =>
  (r.fields.path ?? r.fields.node ?? '').startsWith(lockPath)

test("a worker's clients neither take the main thread's records nor receive them", async () => {
  const mainPath = uniquePath('logs-main')
  const workerPath = uniquePath('logs-worker')
  const records = []
  const keep = (r) => records.push(r)
  diagnosticsChannel.subscribe('zklock', keep) // before connecting: 'debug' records too
  const main = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  const { worker, ask } = await startWorker(workerPath)
  try {
    // The worker connected last; the main thread's records still come here.
    await (await main.mutex(mainPath).acquire({ timeoutMs: WAIT })).release()
    const other = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
    const otherSession = `0x${other.sessionId.toString(16)}`
    await other.mutex(`${mainPath}-lost`).acquire({ timeoutMs: WAIT })
    await other.close()
    await eventually(
      () =>
        records.some((r) => r.event === 'acquire' && r.fields.path === mainPath) &&
        records.some((r) => r.level === 'warn' && r.fields.state === 'lost' && about(r, `${mainPath}-lost`)),
      WAIT,
      "the main thread's acquire and lost records on the main thread's channel",
    )
    // Connected after the worker: its session's opening is the main thread's too.
    assert.ok(
      records.some((r) => r.event === 'session' && r.fields.event === 'opened' && r.fields.session === otherSession),
      JSON.stringify(records.filter((r) => r.event === 'session')),
    )

    await ask('acquire')
    await ask('lose')
    let theirs = []
    await eventually(
      async () => {
        theirs = (await ask('records')).records
        return (
          theirs.some((r) => r.event === 'acquire' && r.fields.path === workerPath) &&
          theirs.some((r) => r.level === 'warn' && r.fields.state === 'lost' && about(r, `${workerPath}-lost`))
        )
      },
      WAIT,
      "the worker's acquire and lost records on the worker's channel",
    )
    // Give any stray record time to arrive before looking for one.
    await new Promise((r) => setTimeout(r, 300))
    theirs = (await ask('records')).records
    assert.deepEqual(
      theirs.filter((r) => about(r, mainPath) || r.fields.session === otherSession).map((r) => r.message),
      [],
      "the worker's channel got main-thread records",
    )
    assert.deepEqual(
      records.filter((r) => about(r, workerPath)).map((r) => r.message),
      [],
      "the main thread's channel got worker records",
    )
  } finally {
    diagnosticsChannel.unsubscribe('zklock', keep)
    await ask('close').catch(() => {})
    await worker.terminate()
    await main.close()
  }
})

test('records keep coming to the main thread after a worker with clients was terminated', async () => {
  const mainPath = uniquePath('logs-after-worker')
  const records = []
  const keep = (r) => records.push(r)
  diagnosticsChannel.subscribe('zklock', keep)
  const main = await Client.connect(zk.servers, { sessionTimeoutMs: 10_000 })
  try {
    const { worker, ask } = await startWorker(uniquePath('logs-terminated'))
    await ask('acquire')
    await worker.terminate()
    await (await main.mutex(mainPath).acquire({ timeoutMs: WAIT })).release()
    await eventually(
      () => records.some((r) => r.event === 'acquire' && r.fields.path === mainPath),
      WAIT,
      "the main thread's acquire record after the worker ended",
    )
  } finally {
    diagnosticsChannel.unsubscribe('zklock', keep)
    await main.close()
  }
})
