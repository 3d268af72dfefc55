// zklock's metrics for prom-client: the families of client.openmetrics() (the core's names,
// client-wide and per lock path) served from a prom-client Registry, read from the clients at
// each scrape. prom-client is required only when no registry is given (its default one).
'use strict'

const { invalid } = require('./errors')

/** Unescapes an OpenMetrics label value (\\, \" and \n). */
function unescape(value) {
  return value.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c))
}

/**
 * The families of one OpenMetrics text (as the core renders it): name -> { type, help,
 * samples: [{ name, labels, value }] }, in order.
 */
function parse(text) {
  const families = new Map()
  const family = (name) => {
    let f = families.get(name)
    if (!f) {
      f = { type: 'untyped', help: '', samples: [] }
      families.set(name, f)
    }
    return f
  }
  let current = null
  for (const line of text.split('\n')) {
    if (line === '' || line === '# EOF') continue
    let m = /^# (TYPE|HELP|UNIT) (\S+) ?(.*)$/.exec(line)
    if (m) {
      current = family(m[2])
      if (m[1] === 'TYPE') current.type = m[3]
      if (m[1] === 'HELP') current.help = unescape(m[3])
      continue
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m || !current) throw new Error(`zklock: an OpenMetrics line not understood: ${line}`)
    const labels = {}
    const pairs = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g
    let p
    while ((p = pairs.exec(m[2] ?? '')) !== null) labels[p[1]] = unescape(p[2])
    current.samples.push({ name: m[1], labels, value: Number(m[3]) })
  }
  return families
}

/**
 * Registers the families of `clients`' metrics in `registry` (prom-client's Registry; its
 * default `register` when absent). Each is read from every client at each scrape, a client's
 * series told apart by their `client` label. Returns a function that unregisters them.
 */
function registerMetrics(clients, registry, labels) {
  if (registry === undefined || registry === null) {
    let promClient
    try {
      promClient = require('prom-client')
    } catch (e) {
      const err = new Error(
        'registerMetrics() without a registry needs the prom-client package: npm install prom-client',
      )
      err.code = 'MODULE_NOT_FOUND'
      err.cause = e
      throw err
    }
    registry = promClient.register
  }
  if (typeof registry !== 'object' || typeof registry.registerMetric !== 'function') {
    throw invalid('registry must be a prom-client Registry (with registerMetric)')
  }
  // One rendering per scrape, shared by every family's get().
  let pending = null
  const snapshot = () => {
    if (!pending) {
      pending = Promise.resolve().then(() => {
        const merged = new Map()
        for (const client of clients) {
          for (const [name, f] of parse(client.openmetrics(labels))) {
            const known = merged.get(name)
            if (known) known.samples.push(...f.samples)
            else merged.set(name, f)
          }
        }
        setImmediate(() => {
          pending = null
        })
        return merged
      })
    }
    return pending
  }
  const names = []
  for (const [family, f] of parse(clients[0].openmetrics(labels))) {
    // prom-client names a counter with its _total (and drops it again for OpenMetrics output).
    const name = f.type === 'counter' ? `${family}_total` : family
    const type = f.type === 'summary' || f.type === 'gauge' || f.type === 'counter' ? f.type : 'untyped'
    const metric = {
      name,
      help: f.help,
      type,
      aggregator: 'sum',
      async get() {
        const now = (await snapshot()).get(family)
        const values = (now ? now.samples : []).map((s) => ({
          labels: s.labels,
          value: s.value,
          // A summary's samples keep their own names (name, name_sum, name_count); a
          // counter's is the metric's name.
          ...(type === 'summary' ? { metricName: s.name } : {}),
        }))
        // this.name: an OpenMetrics registry renames a counter (without its _total) and adds
        // the _total back to each sample.
        return { name: this.name, help: f.help, type, aggregator: 'sum', values }
      },
      reset() {},
    }
    registry.registerMetric(metric)
    names.push(name)
  }
  return () => {
    for (const name of names) registry.removeSingleMetric(name)
  }
}

module.exports = { registerMetrics, parse }
