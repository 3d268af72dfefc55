// tour.mjs: an ES module (import, top-level await), so a .mjs file or "type": "module"
import { Client } from 'zklock'

const client = await Client.connect(process.env.ZKLOCK_SERVERS ?? '127.0.0.1:2181', { sessionTimeoutMs: 10_000 })
const mutex = client.mutex('/zklock-tour/node')
await mutex.using(async (lease) => {
  console.log('node holds the lock, fencing token', lease.token, lease.state)
})
const lease = await mutex.acquire({ timeoutMs: 5_000, signal: AbortSignal.timeout(10_000) })
await lease.release()
await client.close()
