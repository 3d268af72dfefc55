// Workers for zklock's Node face (bindings-node), same command line and output as the other
// workers. process.hrtime.bigint() reads CLOCK_MONOTONIC like the others.
import { createRequire } from 'node:module'
const require = createRequire(import.meta.url)
const { Client } = require('zklock')

const args = {}
for (let i = 2; i + 1 < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1]
const num = (k, d) => (args[k] === undefined ? d : Number(args[k]))
const mono = () => process.hrtime.bigint()
const warm = BigInt(Math.round(num('warmup', 1) * 1e9))
const secs = BigInt(Math.round(num('secs', 3) * 1e9))

function latency (lat, s) {
  lat.sort((a, b) => a - b)
  const pct = (p) => (lat.length ? lat[Math.max(1, Math.min(Math.ceil((p / 100) * lat.length), lat.length)) - 1] : 0)
  return { ops: lat.length, secs: s, ops_s: lat.length / s, p50_us: pct(50) / 1000, p99_us: pct(99) / 1000 }
}

// Time slots shared by workers running side by side (see bench/src/common.rs, Slots).
const slots = args['start-at'] !== undefined
  ? { start: BigInt(args['start-at']), warm: BigInt(num('warm-ms', 1000)) * 1000000n, slot: BigInt(num('slot-ms', 500)) * 1000000n, n: BigInt(num('nslots', 1)), me: BigInt(num('my-slot', 0)), rounds: num('rounds', 1) }
  : { start: mono(), warm, slot: (secs * 10n) / 9n, n: 1n, me: 0n, rounds: 1 }
const warmWindow = () => [slots.start + slots.me * slots.warm, slots.start + (slots.me + 1n) * slots.warm]
const window = (r) => {
  const from = slots.start + slots.n * slots.warm + (BigInt(r) * slots.n + slots.me) * slots.slot
  return [from, from + (slots.slot * 9n) / 10n]
}
const measuredSecs = Number((slots.slot * 9n) / 10n) / 1e9
const sleepUntil = (t) => { const d = Number(t - mono()) / 1e6; return d > 0 ? new Promise((resolve) => setTimeout(resolve, d)) : null }

// User + system CPU time of the whole process in ns (process.cpuUsage is getrusage, like the
// other workers).
const cpuNs = () => { const u = process.cpuUsage(); return (u.user + u.system) * 1000 }
const withCpu = (out, cpu) => {
  out.cpu_s = cpu / 1e9
  if (out.ops > 0) out.cpu_us_per_op = cpu / 1e3 / out.ops
  return out
}

// The process's CPU time over the measured windows, read once per window for all loops.
async function cpuMeter () {
  let cpu = 0
  for (let r = 0; r < slots.rounds; r++) {
    const [from, to] = window(r)
    await sleepUntil(from)
    const c0 = cpuNs()
    await sleepUntil(to)
    cpu += cpuNs() - c0
  }
  return cpu
}

async function cycle (mutex) {
  const lease = await mutex.acquire()
  await lease.release()
}

async function slottedLoop (mutex, counts, lat) {
  const [w0, w1] = warmWindow()
  await sleepUntil(w0)
  while (mono() < w1) await cycle(mutex)
  for (let r = 0; r < slots.rounds; r++) {
    const [from, to] = window(r)
    await sleepUntil(from)
    for (;;) {
      const t0 = mono()
      if (t0 >= to) break
      await cycle(mutex)
      const t1 = mono()
      if (t1 <= to) {
        counts[r]++
        lat.push(Number(t1 - t0))
      }
    }
  }
}

async function slotted (mutexes) {
  const counts = new Array(slots.rounds).fill(0)
  const lat = []
  const meter = cpuMeter()
  await Promise.all(mutexes.map((m) => slottedLoop(m, counts, lat)))
  const out = latency(lat, measuredSecs * slots.rounds)
  out.rounds = counts.map((c) => c / measuredSecs)
  return withCpu(out, await meter)
}

async function s1 (client) {
  return slotted([client.mutex(args.path)])
}

async function s3 (client) {
  const mutex = client.mutex(args.path)
  const start = BigInt(args['start-at'])
  const end = start + warm + secs
  const delay = Number(start - mono()) / 1e6
  if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay))
  const events = []
  let c0 = null
  while (mono() < end) {
    if (c0 === null && mono() >= start + warm) c0 = cpuNs()
    const lease = await mutex.acquire()
    const acquired = mono()
    const releasing = mono()
    await lease.release()
    events.push(`[${acquired},${releasing}]`)
  }
  return { _events: events, cpu_s: c0 === null ? 0 : (cpuNs() - c0) / 1e9 }
}

async function s4 (client) {
  return slotted(Array.from({ length: num('locks', 64) }, (_, i) => client.mutex(`${args.path}/${i}`)))
}

const scenarios = { s1, s3, s4 }
const fn = scenarios[args.scenario]
if (!fn) {
  console.error(`no scenario ${args.scenario} for the Node face`)
  process.exit(2)
}
const client = await Client.connect(args.servers, { sessionTimeoutMs: 10000 })
const out = await fn(client)
await client.close()
if (out._events) {
  // bigints as JSON numbers
  process.stdout.write(`{"events":[${out._events.join(',')}],"cpu_s":${out.cpu_s}}\n`)
} else {
  process.stdout.write(JSON.stringify(out) + '\n')
}
process.exit(0)
