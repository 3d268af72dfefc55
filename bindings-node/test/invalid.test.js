// Acceptance 7: bad input rejects or throws with ZKLOCK_INVALID_ARGUMENT and nothing crashes
// the process.
'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { useZooKeeper, uniquePath } = require('./harness.js')
const zklock = require('../index.js')
const { Client, ErrorCode } = zklock

const INVALID = { code: ErrorCode.INVALID_ARGUMENT }

let zk
let client
useZooKeeper({ clients: [{}] }, (s) => ([zk, client] = [s.zk, ...s.clients]))

test('bad hosts reject with ZKLOCK_INVALID_ARGUMENT', async () => {
  for (const hosts of ['', '127.0.0.1:notaport', '127.0.0.1:0', 'bad host:2181', '127.0.0.1:2181/chroot/', ',,', '/chroot']) {
    await assert.rejects(Client.connect(hosts, { connectTimeoutMs: 500 }), INVALID, `hosts ${hosts}`)
  }
  for (const hosts of [undefined, null, 42, {}, ['127.0.0.1:2181']]) {
    await assert.rejects(Client.connect(/** @type {any} */ (hosts)), INVALID)
  }
})

test('bad connect options reject with ZKLOCK_INVALID_ARGUMENT', async () => {
  const bad = [
    'options',
    { sessionTimeoutMs: -1 },
    { sessionTimeoutMs: 10 },
    { sessionTimeoutMs: NaN },
    { sessionTimeoutMs: '1000' },
    { sessionTimeoutMs: Infinity },
    { connectTimeoutMs: -5 },
    { connectTimeoutMs: 0 },
    { auth: 'no-password' },
    { auth: 42 },
    { identity: 'x'.repeat(2000) },
    { identity: {} },
    { acl: 'closed' },
    { acl: 'creator-all' },
    { acl: 1 },
  ]
  for (const options of bad) {
    await assert.rejects(
      Client.connect(zk.servers, /** @type {any} */ (options)),
      INVALID,
      JSON.stringify(options),
    )
  }
})

test('bad paths throw ZKLOCK_INVALID_ARGUMENT', () => {
  const badPaths = ['', 'relative/path', '/trailing/', '/double//slash', '/a/./b', '/zookeeper/x', '/nul\u0000x']
  for (const p of badPaths) {
    assert.throws(() => client.mutex(p), INVALID, `mutex ${JSON.stringify(p)}`)
    assert.throws(() => client.rwLock(p), INVALID, `rwLock ${JSON.stringify(p)}`)
    assert.throws(() => client.multiLock([p]), INVALID, `multiLock ${JSON.stringify(p)}`)
  }
  for (const p of [undefined, null, 1, {}, ['/a']]) {
    assert.throws(() => client.mutex(/** @type {any} */ (p)), INVALID)
    assert.throws(() => client.rwLock(/** @type {any} */ (p)), INVALID)
  }
  assert.throws(() => client.multiLock(/** @type {any} */ ('/a')), INVALID)
  assert.throws(() => client.multiLock(/** @type {any} */ (['/a', 7])), INVALID)
  assert.throws(() => client.mutex('/ok', /** @type {any} */ ({ reentrant: 'yes' })), INVALID)
  assert.throws(() => client.mutex('/ok', /** @type {any} */ (5)), INVALID)
})

test('bad acquire options reject with ZKLOCK_INVALID_ARGUMENT and create nothing', async () => {
  const m = client.mutex(uniquePath('invalid'))
  const bad = [
    { timeoutMs: -2 },
    { timeoutMs: -0.5 },
    { timeoutMs: -Infinity },
    { timeoutMs: NaN },
    { timeoutMs: '100' },
    { timeoutMs: 10n },
    { signal: 'abort' },
    { signal: {} },
    'opts',
    42,
  ]
  for (const options of bad) {
    await assert.rejects(m.acquire(/** @type {any} */ (options)), INVALID, String(options))
    await assert.rejects(m.using(async () => {}, /** @type {any} */ (options)), INVALID)
  }
  await assert.rejects(m.using(/** @type {any} */ ('not a function')), INVALID)
  assert.equal((await m.participants()).length, 0)
  // Large timeouts are fine (no deadline overflow).
  const lease = await m.acquire({ timeoutMs: Number.MAX_SAFE_INTEGER })
  await lease.release()
  const forever = await m.acquire({ timeoutMs: Infinity })
  await forever.release()
})

test('bad lease listeners throw ZKLOCK_INVALID_ARGUMENT', async () => {
  const lease = await client.mutex(uniquePath('listeners')).acquire()
  try {
    assert.throws(() => lease.on('lost', /** @type {any} */ (5)), INVALID)
    assert.throws(() => lease.once('gone', () => {}), INVALID)
    assert.throws(() => lease.addListener(/** @type {any} */ (Symbol('x')), () => {}), INVALID)
    assert.equal(lease.on('lost', () => {}), lease, 'on() chains')
  } finally {
    await lease.release()
  }
})

test('objects cannot be constructed directly', () => {
  for (const C of [zklock.Client, zklock.Mutex, zklock.Lock, zklock.Lease, zklock.MultiLock, zklock.RwLock]) {
    assert.throws(() => new /** @type {any} */ (C)(), INVALID)
  }
})

test('every error code is an Error with a message', async () => {
  const errors = []
  const m = client.mutex(uniquePath('codes'))
  const held = await m.acquire()
  errors.push(await client.mutex(m.path).acquire({ timeoutMs: 0 }).catch((e) => e))
  errors.push(await Client.connect('').catch((e) => e))
  await held.release()
  errors.push(await held.release().catch((e) => e))
  for (const e of errors) {
    assert.ok(e instanceof Error)
    assert.ok(zklock.isZkLockError(e))
    assert.ok(Object.values(ErrorCode).includes(e.code))
    assert.ok(e.message.length > 10, e.message)
  }
  assert.deepEqual(
    errors.map((e) => e.code),
    [ErrorCode.TIMEOUT, ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_HELD],
  )
})

// Issue 27, item 14: the core names options (`tls_ca`); a Node user wrote `tlsCa`, and the
// error says that. No server is needed: the options are refused before any I/O.
test('option errors name the options as Node spells them (tlsCa, not tls_ca)', async () => {
  const cases = [
    [{ tlsCa: 'ca.pem', tlsCert: 'cert.pem' }, /tlsCert and tlsKey go together/],
    [{ tlsCert: 'cert.pem', tlsKey: 'key.pem' }, /tlsCert, tlsKey and tlsVerifyHostname need tlsCa/],
    [{ tlsVerifyHostname: false }, /tlsVerifyHostname need tlsCa/],
    [{ saslUser: 'u' }, /saslUser needs saslPassword/],
    [{ saslPassword: 'p' }, /saslPassword needs saslUser/],
  ]
  for (const [options, message] of cases) {
    const e = await Client.connect('127.0.0.1:1', { connectTimeoutMs: 500, ...options }).catch((e) => e)
    assert.equal(e.code, ErrorCode.INVALID_ARGUMENT, `${JSON.stringify(options)}: ${e.message}`)
    assert.match(e.message, message, JSON.stringify(options))
    assert.doesNotMatch(e.message, /\b(tls|sasl)_[a-z]/, e.message)
  }
})

test('a too-short session timeout is told in milliseconds, not "0ns"', async () => {
  for (const [ms, shown] of [[0, '0 ms'], [50, '50 ms'], [99.5, '99.5 ms']]) {
    const e = await Client.connect('127.0.0.1:1', { sessionTimeoutMs: ms }).catch((e) => e)
    assert.equal(e.code, ErrorCode.INVALID_ARGUMENT)
    assert.ok(e.message.includes(`session timeout ${shown} is too short`), e.message)
  }
})
