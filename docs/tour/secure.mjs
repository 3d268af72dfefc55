import { Client } from 'zklock'

const env = process.env
const client = await Client.connect(env.ZKLOCK_SERVERS ?? '127.0.0.1:2281', {
  tlsCa: env.ZKLOCK_TLS_CA, // the CA's PEM file; tlsCert / tlsKey for a client certificate
  saslUser: env.ZKLOCK_SASL_USER,
  saslPassword: env.ZKLOCK_SASL_PASSWORD,
  acl: 'creator-all',
})
await client.mutex('/zklock-tour/secure-node').using(async (lease) => {
  console.log('node holds the lock over TLS, fencing token', lease.token)
})
await client.close()
