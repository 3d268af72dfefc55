// Secure ZooKeeper: TLS, SASL, ACLs and chroot against one secured server (zk-harness --secure).
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const util = require('node:util')
const { startZooKeeper, uniquePath } = require('./harness.js')
const { Client, ErrorCode } = require('../index.js')

const FAST_MS = 6_000 // a configuration error must not cost the 15 s connect timeout
let zk
let info
let sasl

test.before(async () => {
  zk = await startZooKeeper({ secure: true })
  info = zk.info
  sasl = Object.fromEntries(info.sasl_users.split(',').map((u) => u.split(':')))
})

test.after(async () => {
  if (zk) await zk.stop()
})

test('a TLS client with a client certificate acquires and releases', async () => {
  const client = await Client.connect(info.tls_servers, {
    tlsCa: info.tls_ca,
    tlsCert: info.tls_cert,
    tlsKey: info.tls_key,
  })
  const lease = await client.mutex(uniquePath('tls')).acquire()
  assert.equal(lease.state, 'held')
  await lease.release()
  assert.equal(lease.state, 'released')
  await client.close()
})

// Issue 27, point 5: PEM content is taken as tls.connect takes it (a Buffer or a string), and a
// key given as content never shows in an error.
test('PEM content (Buffer or string) connects like the files; a key as content is never shown', async () => {
  const fs = require('node:fs')
  for (const read of [(f) => fs.readFileSync(f), (f) => fs.readFileSync(f, 'utf8')]) {
    const client = await Client.connect(info.tls_servers, {
      tlsCa: read(info.tls_ca),
      tlsCert: read(info.tls_cert),
      tlsKey: read(info.tls_key),
    })
    const lease = await client.mutex(uniquePath('tls-content')).acquire()
    await lease.release()
    await client.close()
  }
  const key = fs.readFileSync(info.tls_key, 'utf8')
  const body = key.split('\n').filter((l) => l && !l.startsWith('-----')).join('')
  for (const options of [{ tlsCa: key }, { tlsCa: key, tlsCert: key, tlsKey: key }, { tlsKey: key },
    { tlsCa: info.tls_ca, tlsCert: key, tlsKey: info.tls_cert }]) {
    await assert.rejects(Client.connect(info.tls_servers, { ...options, connectTimeoutMs: 5000 }), (e) => {
      assert.equal(e.code, ErrorCode.INVALID_ARGUMENT, e.message)
      const shown = e.message + util.inspect(e, { showHidden: true, depth: 6 })
      for (let i = 0; i + 12 <= body.length; i++) {
        assert.ok(!shown.includes(body.slice(i, i + 12)), `the key shows in: ${e.message}`)
      }
      return true
    })
  }
})

for (const [name, hosts, options, words] of [
  ['a wrong CA', 'tls_servers', { tlsCa: 'tls_wrong_ca' }, /wrong CA/],
  ['a plaintext client on the TLS port', 'tls_servers', {}, /speaks TLS/],
  ['a certificate for another host', 'tls_wrong_host_servers', { tlsCa: 'tls_ca' }, /wrong host/],
]) {
  test(`${name} fails fast with ZKLOCK_CONNECTION saying which`, async () => {
    const opts = Object.fromEntries(Object.entries(options).map(([k, v]) => [k, info[v]]))
    const start = Date.now()
    await assert.rejects(Client.connect(info[hosts], opts), (e) => {
      assert.equal(e.code, ErrorCode.CONNECTION)
      assert.match(e.message, words)
      return true
    })
    assert.ok(Date.now() - start < FAST_MS, `took ${Date.now() - start} ms`)
  })
}

test('a wrong SASL password rejects with ZKLOCK_PERMISSION and never shows it', async () => {
  await assert.rejects(
    Client.connect(info.servers, { saslUser: 'alice', saslPassword: 'pw-never-shown-2' }),
    (e) => {
      assert.equal(e.code, ErrorCode.PERMISSION)
      assert.doesNotMatch(util.inspect(e) + e.message, /pw-never-shown-2/)
      return true
    },
  )
})

test('creator-all keeps another user out and another session of ours in', async () => {
  const path = uniquePath('creator-all')
  const alice = { saslUser: 'alice', saslPassword: sasl.alice, acl: 'creator-all' }
  const ours = await Client.connect(info.tls_servers, { tlsCa: info.tls_ca, ...alice })
  const oursToo = await Client.connect(info.servers, alice)
  const bob = await Client.connect(info.servers, { auth: 'bob:bob-digest', acl: 'creator-all' })
  const lease = await ours.mutex(path).acquire()
  await assert.rejects(bob.mutex(path).tryAcquire(), { code: ErrorCode.PERMISSION })
  await assert.rejects(bob.mutex(path).participants(), { code: ErrorCode.PERMISSION })
  assert.equal(await oursToo.mutex(path).tryAcquire(), null)
  assert.equal((await oursToo.mutex(path).participants()).length, 1)
  await lease.release()
  for (const c of [ours, oursToo, bob]) await c.close()
})

test('read-anyone-creator-all lets another user list the queue but not join it', async () => {
  const path = uniquePath('read-anyone')
  const ours = await Client.connect(info.servers, {
    auth: 'carol:carol-digest',
    acl: 'read-anyone-creator-all',
  })
  const bob = await Client.connect(info.servers, { saslUser: 'bob', saslPassword: sasl.bob })
  const lease = await ours.mutex(path).acquire()
  const seen = await bob.mutex(path).participants()
  assert.deepEqual(
    seen.map((p) => p.node),
    [lease.path],
  )
  await assert.rejects(bob.mutex(path).tryAcquire(), { code: ErrorCode.PERMISSION })
  await lease.release()
  await ours.close()
  await bob.close()
})

test('lock paths are relative to the chroot', async () => {
  const root = uniquePath('chroot')
  const plain = await Client.connect(info.servers)
  // the chroot must exist: a lock held under it makes it
  const base = await plain.mutex(`${root}/base`).acquire()
  const chrooted = await Client.connect(info.tls_servers + root, { tlsCa: info.tls_ca })
  const lease = await chrooted.mutex('/app/orders').acquire()
  assert.match(lease.path, /^\/app\/orders\/_c_/)
  const seen = await plain.mutex(`${root}/app/orders`).participants()
  assert.deepEqual(
    seen.map((p) => p.node),
    [root + lease.path],
  )
  await lease.release()
  await base.release()
  await chrooted.close()
  await plain.close()
})

test('secrets never show in inspect() or error messages', async () => {
  const client = await Client.connect(info.servers, {
    auth: 'dave:digest-pw-4',
    saslUser: 'alice',
    saslPassword: sasl.alice,
  })
  const shown = util.inspect(client, { showHidden: true, depth: 5 })
  assert.doesNotMatch(shown, /digest-pw-4/)
  assert.ok(!shown.includes(sasl.alice), shown)
  await client.close()
  await assert.rejects(Client.connect(info.servers, { auth: 'no-colon-secret' }), (e) => {
    assert.equal(e.code, ErrorCode.INVALID_ARGUMENT)
    assert.doesNotMatch(e.message, /no-colon-secret/)
    return true
  })
})
