// Starts the project's zk-harness (a real ZooKeeper, optionally behind a fault proxy) for a
// test file. If ZooKeeper cannot start, the test fails with the harness's own message.
'use strict'
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const readline = require('node:readline')

const repo = path.resolve(__dirname, '..', '..')

function harnessPath() {
  if (process.env.ZK_HARNESS) return process.env.ZK_HARNESS
  const targetDir = process.env.CARGO_TARGET_DIR || path.join(repo, 'target')
  return path.join(targetDir, 'debug', 'zk-harness')
}

/**
 * Starts ZooKeeper. Resolves with { servers, proxy, info, command(cmd), stop() }; with `secure`
 * a secured server (TLS port, SASL users) whose `info` has tls_servers, tls_ca, ... (zk-harness).
 * Rejects (failing the test) when the harness is missing or ZooKeeper does not come up.
 */
async function startZooKeeper({ proxy = false, secure = false, timeoutMs = 120_000 } = {}) {
  const bin = harnessPath()
  if (!fs.existsSync(bin)) {
    throw new Error(
      `zk-harness not found at ${bin}: build it with \`cargo build -p zklock-testkit --bin zk-harness\``,
    )
  }
  const args = [...(proxy ? ['--proxy'] : []), ...(secure ? ['--secure'] : [])]
  const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => {
    stderr += d
  })
  const lines = readline.createInterface({ input: child.stdout })
  const queue = []
  const waiters = []
  lines.on('line', (line) => {
    const w = waiters.shift()
    if (w) w.resolve(line)
    else queue.push(line)
  })
  let exited = null
  child.on('exit', (code, signal) => {
    exited = `zk-harness exited (code ${code}, signal ${signal}): ${stderr.trim()}`
    for (const w of waiters.splice(0)) w.reject(new Error(exited))
  })
  const nextLine = (ms) =>
    new Promise((resolve, reject) => {
      if (queue.length) return resolve(queue.shift())
      if (exited) return reject(new Error(exited))
      const timer = setTimeout(() => {
        const i = waiters.indexOf(entry)
        if (i >= 0) waiters.splice(i, 1)
        reject(new Error(`zk-harness said nothing for ${ms} ms; stderr: ${stderr.trim()}`))
      }, ms)
      const entry = {
        resolve: (l) => {
          clearTimeout(timer)
          resolve(l)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      }
      waiters.push(entry)
    })

  let servers
  let proxyAddr
  const info = {}
  try {
    const first = await nextLine(timeoutMs)
    if (!first.startsWith('servers=')) throw new Error(`zk-harness printed ${first}`)
    servers = first.slice('servers='.length)
    if (proxy) {
      const second = await nextLine(10_000)
      if (!second.startsWith('proxy=')) throw new Error(`zk-harness printed ${second}`)
      proxyAddr = second.slice('proxy='.length)
    }
    info.servers = servers
    // --secure: tls_servers=, tls_wrong_host_servers=, tls_ca=, ... up to sasl_users=.
    while (secure && !('sasl_users' in info)) {
      const line = await nextLine(10_000)
      const eq = line.indexOf('=')
      info[line.slice(0, eq)] = line.slice(eq + 1)
    }
  } catch (e) {
    child.kill('SIGKILL')
    throw new Error(`ZooKeeper did not start: ${e.message}`)
  }

  let chain = Promise.resolve()
  /** Sends one command; resolves with its output lines once the harness answers `ok`. */
  function command(cmd) {
    const run = async () => {
      child.stdin.write(`${cmd}\n`)
      const out = []
      for (;;) {
        const line = await nextLine(30_000)
        if (line === 'ok') return out
        if (line.startsWith('error:')) throw new Error(`zk-harness ${cmd}: ${line}`)
        out.push(line)
      }
    }
    const p = chain.then(run, run)
    chain = p.catch(() => {})
    return p
  }

  async function stop() {
    if (exited) return
    const done = new Promise((resolve) => child.once('exit', resolve))
    child.stdin.end()
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    await done
    clearTimeout(timer)
  }

  return { servers, proxy: proxyAddr, info, command, stop, child }
}

/** A fresh lock path for one test. */
let counter = 0
function uniquePath(name) {
  counter += 1
  return `/zklock-node-test/${name}-${process.pid}-${Date.now()}-${counter}`
}

/** Polls `fn` until it returns true (or fails after `ms`). */
async function eventually(fn, ms = 10_000, what = 'condition') {
  const end = Date.now() + ms
  for (;;) {
    if (await fn()) return
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/**
 * For a test file: starts ZooKeeper (behind the fault proxy with `proxy`) and one client per
 * entry of `clients` (its connect options) before the file's tests, hands `{ zk, clients }` to
 * `use`, and closes the clients and stops ZooKeeper after them.
 */
function useZooKeeper({ proxy = false, clients = [] } = {}, use = () => {}) {
  const test = require('node:test')
  const { Client } = require('../index.js')
  const started = { zk: null, clients: [] }
  test.before(async () => {
    started.zk = await startZooKeeper({ proxy })
    for (const options of clients) {
      started.clients.push(await Client.connect(started.zk.servers, options))
    }
    use(started)
  })
  test.after(async () => {
    for (const client of started.clients) await client.close()
    if (started.zk) await started.zk.stop()
  })
}

module.exports = { startZooKeeper, useZooKeeper, uniquePath, eventually, repo }
