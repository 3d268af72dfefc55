// observe.mjs: the core's log records arrive on the 'zklock' diagnostics channel
import diagnosticsChannel from 'node:diagnostics_channel'
import { Client } from 'zklock'

diagnosticsChannel.subscribe('zklock', (r) => r.level === 'warn' && console.warn('zklock:', r.message))
const client = await Client.connect(process.env.ZKLOCK_SERVERS ?? '127.0.0.1:2181')
await client.mutex('/zklock-tour/observe-node').using(async (lease) => {
  const state = '/zklock-tour/node-state' // written only while the lock is ours
  await lease.guardedWrite([{ op: 'create', path: state, data: 'v1' }, { op: 'delete', path: state }])
})
const { acquired, wait, hold } = client.stats()
console.log('acquired', acquired, 'waited p99', wait.p99, 'ms, held max', hold.max, 'ms')
await client.close()
