// hold.mjs OUT PATH: run under Wine by tests/dist/test-dist-reach.sh with the official Windows
// Node. Takes the lock at PATH with a short session, writes `holding TOKEN` to the file OUT,
// then waits for the lease to be lost (the test stops ZooKeeper) and writes `lost STATE REASON`.
// Lines go to a file, not stdout: under Wine, Node's stdout on a Unix pipe fails (EBADF).
import fs from 'node:fs'
import { Client } from 'zklock'

const [out, path] = process.argv.slice(2)
const say = (line) => fs.appendFileSync(out, line + '\n')
const client = await Client.connect(process.env.ZKLOCK_SERVERS, { sessionTimeoutMs: 4_000 })
const lease = await client.mutex(path).acquire({ timeoutMs: 30_000 })
lease.on('lost', (err) => {
  say(`lost ${lease.state} ${err.code} (signal aborted: ${lease.signal.aborted})`)
  process.exit(0)
})
say(`holding ${lease.token}`)
// Nothing else keeps the event loop alive once the lease is held: wait for 'lost' (or the test's
// deadline, which kills this process).
setInterval(() => {}, 1_000)
