// Per-path statistics and the prom-client adapter (issue 37, point 4): client.pathStats(), its
// bound (pathStatsLimit), and client.registerMetrics(registry) served from a real prom-client
// Registry in both of its formats.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')
const promClient = require('prom-client')
const { useZooKeeper, uniquePath } = require('./harness.js')
const { Client, ErrorCode } = require('../index.js')

let zk
useZooKeeper({}, (s) => (zk = s.zk))

const WAIT = 10_000

test('each path is counted and paths past the limit fold into the overflow series', async () => {
  const base = uniquePath('path-stats')
  const client = await Client.connect(zk.servers, { pathStatsLimit: 2 })
  try {
    // While both known paths are held, later paths fold (an idle one would be evicted).
    const known = [await client.mutex(base).acquire({ timeoutMs: WAIT }), await client.mutex(`${base}-b`).acquire({ timeoutMs: WAIT })]
    for (const p of [`${base}-c`, `${base}-d`]) {
      await (await client.mutex(p).acquire({ timeoutMs: WAIT })).release()
    }
    for (const held of known) await held.release()
    const lease = await client.mutex(base).acquire({ timeoutMs: WAIT })
    const s = client.pathStats()
    assert.deepEqual([s.limit, s.folded], [2, 2])
    assert.deepEqual(s.paths.map((p) => p.path), [base, `${base}-b`])
    const own = s.paths[0]
    assert.deepEqual([own.acquired, own.held, own.timedOut], [2, 1, 0])
    assert.deepEqual(own.lost, { broken: 0, 'max-hold': 0, conflict: 0, session: 0 })
    assert.ok(own.oldestHold >= 0 && own.waitSum >= 0, JSON.stringify(own))
    assert.deepEqual([s.overflow.path, s.overflow.acquired], [null, 2])
    await lease.release()
    assert.equal(client.pathStats().paths[0].held, 0)
  } finally {
    await client.close()
  }
})

test('a pathStatsLimit out of range or not a number is refused', async () => {
  for (const bad of [-1, 1.5, Number.NaN, 1e12]) {
    await assert.rejects(Client.connect(zk.servers, { pathStatsLimit: bad }), (e) => {
      assert.equal(e.code, ErrorCode.INVALID_ARGUMENT)
      assert.match(e.message, /pathStatsLimit/)
      return true
    })
  }
  await assert.rejects(Client.connect(zk.servers, { pathStatsLimit: '3' }), {
    code: ErrorCode.INVALID_ARGUMENT,
  })
  const off = await Client.connect(zk.servers, { pathStatsLimit: 0 })
  try {
    assert.deepEqual(off.pathStats().paths, [])
    assert.doesNotMatch(off.openmetrics(), /zklock_path_/)
  } finally {
    await off.close()
  }
})

test('registerMetrics fills a prom-client registry at each scrape, in both formats', async () => {
  const lockPath = uniquePath('prom "client" \\ path')
  const client = await Client.connect(zk.servers)
  const registry = new promClient.Registry()
  const unregister = client.registerMetrics(registry, { service: 'jobs' })
  try {
    const lease = await client.mutex(lockPath).acquire({ timeoutMs: WAIT })
    const json = await registry.getMetricsAsJSON()
    const held = json.find((m) => m.name === 'zklock_path_held')
    const mine = held.values.find((v) => v.labels.path === lockPath)
    assert.equal(mine.value, 1)
    assert.match(mine.labels.client, /^\d+$/)
    assert.equal(mine.labels.service, 'jobs')
    const escaped = lockPath.replace(/\\/g, '\\\\').replace(/"/g, '\\"')
    const text = await registry.metrics()
    assert.ok(
      text.includes(
        `zklock_path_acquires_total{client="${mine.labels.client}",service="jobs",path="${escaped}",outcome="acquired"} 1`,
      ),
      text,
    )
    assert.match(text, /# TYPE zklock_wait_seconds summary/)
    assert.match(text, /# TYPE zklock_path_wait_seconds_total counter/)
    assert.match(text, /^zklock_path_wait_seconds_total\{[^}]*\} [0-9.e-]+$/m)
    await lease.release()
    // Released: the path has no held or oldest-hold series (absent, not 0).
    const after = await registry.getMetricsAsJSON()
    for (const name of ['zklock_path_held', 'zklock_path_oldest_hold_seconds']) {
      const family = after.find((m) => m.name === name)
      assert.equal(family.values.find((v) => v.labels.path === lockPath), undefined, name)
    }

    const open = new promClient.Registry(promClient.Registry.OPENMETRICS_CONTENT_TYPE)
    client.registerMetrics(open)
    const openText = await open.metrics()
    assert.match(openText, /^zklock_acquires_total\{client="\d+",outcome="acquired"\} 1$/m)
    assert.ok(openText.endsWith('# EOF\n'))
  } finally {
    unregister()
    assert.equal(registry.getSingleMetric('zklock_path_held'), undefined)
    await client.close()
  }
})

test('prom-client is required only when registerMetrics has no registry, and its absence is clear', () => {
  const probe = `
    const Module = require('node:module')
    const load = Module._load
    Module._load = function (request, ...rest) {
      if (request === 'prom-client') throw Object.assign(new Error('not found'), { code: 'MODULE_NOT_FOUND' })
      return load.call(this, request, ...rest)
    }
    const zklock = require(${JSON.stringify(path.resolve(__dirname, '..', 'index.js'))})
    const loaded = Object.keys(require.cache).some((f) => f.includes('prom-client'))
    const fake = { openmetrics: () => '# EOF\\n' }
    let message = ''
    try { zklock.Client.prototype.registerMetrics.call(fake) } catch (e) { message = e.message }
    console.log(JSON.stringify({ loaded, message }))
  `
  const run = spawnSync(process.execPath, ['-e', probe], { encoding: 'utf8' })
  assert.equal(run.status, 0, run.stderr)
  const out = JSON.parse(run.stdout)
  assert.equal(out.loaded, false)
  assert.match(out.message, /needs the prom-client package: npm install prom-client/)
})
