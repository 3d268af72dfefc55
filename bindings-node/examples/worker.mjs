#!/usr/bin/env node
// Cross-language demo worker: `node worker.mjs SERVERS PATH ROUNDS LOGFILE`.
// ROUNDS times: take the mutex on PATH, append `node <token> <enter_ns> <exit_ns>` (wall-clock
// nanoseconds since the Unix epoch) to LOGFILE, hold it ~20 ms, release. Then close.
import { appendFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
let zklock
try {
  zklock = require('zklock')
} catch {
  zklock = require('../index.js') // run from a checkout without `npm install ./bindings-node`
}
const { Client } = zklock

const [servers, path, roundsArg, logfile] = process.argv.slice(2)
const rounds = Number(roundsArg)
if (!servers || !path || !logfile || !Number.isInteger(rounds) || rounds < 0) {
  console.error('usage: node worker.mjs SERVERS PATH ROUNDS LOGFILE')
  process.exit(2)
}

// Wall clock in ns: the epoch clock read at the moment its millisecond ticks over, paired with
// the monotonic clock, then the monotonic clock's progress. (`performance.timeOrigin +
// performance.now()` is early by the process's start-up, since Node measures `now()` from its
// main context rather than from the time origin: about 20 ms on a loaded machine, which made
// this worker's sections seem to overlap the others'.) A pause between the two reads makes the
// base earlier, so the latest of a few is the truest.
function wallBase() {
  let best = null
  for (let i = 0; i < 5; i++) {
    const before = Date.now()
    let ms = before
    while (ms === before) ms = Date.now()
    const base = BigInt(ms) * 1_000_000n - process.hrtime.bigint()
    if (best === null || base > best) best = base
  }
  return best
}
const base = wallBase()
const nowNs = () => base + process.hrtime.bigint()

const env = process.env // a secured ensemble: the same variables as the CLI's
const client = await Client.connect(servers, {
  sessionTimeoutMs: 10_000,
  tlsCa: env.ZKLOCK_TLS_CA,
  tlsCert: env.ZKLOCK_TLS_CERT,
  tlsKey: env.ZKLOCK_TLS_KEY,
  saslUser: env.ZKLOCK_SASL_USER,
  saslPassword: env.ZKLOCK_SASL_PASSWORD,
})
try {
  const mutex = client.mutex(path)
  for (let i = 0; i < rounds; i++) {
    const lease = await mutex.acquire()
    try {
      const enter = nowNs()
      await sleep(20)
      const exit = nowNs()
      appendFileSync(logfile, `node ${lease.token} ${enter} ${exit}\n`)
    } finally {
      await lease.release()
    }
  }
} finally {
  await client.close()
}
