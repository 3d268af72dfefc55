// Issue 13 (Node): participants() shows the core's names for the library and kind of every node
// in a lock's queue, also nodes other libraries made (Curator, kazoo, go-zookeeper). The foreign
// nodes are created with ZooKeeper's own command-line client, run by the test server's Java
// with the test server's class path (read from its command line: no jar list of our own).
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const { useZooKeeper, uniquePath } = require('./harness.js')
const { Client } = require('../index.js')

let zk
let client
useZooKeeper({ clients: [{}] }, (s) => ([zk, client] = [s.zk, ...s.clients]))

/** The command line of the harness's ZooKeeper server (a child process of zk-harness). */
function serverCommandLine() {
  const harnessPid = zk.child.pid
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // gone meanwhile
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    if (ppid !== harnessPid) continue
    const argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')
    const cp = argv.indexOf('-cp')
    if (cp > 0) return { java: argv[0], classpath: argv[cp + 1] }
  }
  throw new Error(`no Java child with -cp found under zk-harness (pid ${harnessPid})`)
}

/** Runs ZooKeeper's own CLI with `commands` on stdin; returns its output. */
function zkCli(commands) {
  const { java, classpath } = serverCommandLine()
  return execFileSync(
    java,
    ['-cp', classpath, 'org.apache.zookeeper.ZooKeeperMain', '-server', zk.servers],
    {
      input: `${commands.join('\n')}\nquit\n`,
      encoding: 'utf8',
      timeout: 60_000,
      stdio: ['pipe', 'pipe', 'pipe'], // its log goes to stderr: kept out of the test output
    },
  )
}

test("participants() names foreign nodes' library and kind with the core's names", async () => {
  const p = uniquePath('foreign')
  const mutex = client.mutex(p)
  // Our node first (it also makes the parents), then one node of each foreign library.
  const lease = await mutex.acquire()
  try {
    const hex = '9a8b7c6d5e4f30211203948576abcdef'
    const foreign = {
      [`_c_${hex}-lock-`]: { library: 'go-zookeeper', kind: 'mutex' },
      '_c_1b4e28ba-2fa1-41d2-883f-0016d3cca427-lock-': { library: 'curator', kind: 'mutex' },
      [`${hex}__lock__`]: { library: 'kazoo', kind: 'mutex' },
      [`${hex}__rlock__`]: { library: 'kazoo', kind: 'read' },
      'someone-lock-': { library: 'unknown', kind: 'mutex' },
    }
    const out = zkCli(Object.keys(foreign).map((prefix) => `create -s ${p}/${prefix} x`))
    const parts = await mutex.participants()
    assert.equal(parts.length, 1 + Object.keys(foreign).length, `participants ${JSON.stringify(parts.map((x) => x.node))}; zkCli said: ${out}`)
    assert.equal(parts[0].node, lease.path)
    assert.deepEqual([parts[0].library, parts[0].kind], ['zklock', 'mutex'])
    const seen = {}
    for (const part of parts.slice(1)) {
      const name = part.node.slice(p.length + 1).replace(/\d{10}$/, '')
      seen[name] = { library: part.library, kind: part.kind }
    }
    assert.deepEqual(seen, foreign)
  } finally {
    await lease.release()
  }
})
