// The Node runner's scenarios of issue 53's block (cases.txt): the peers' fixes, each with a
// client behind the harness's fault proxy (`zk.proxy`, `zk.command`), apart from
// conformance.test.js, which is past the 700-line rule.
// - election-path-deleted-while-disconnected (CURATOR-724): the leader, cut off with its session
//   alive, has its node deleted (`breakLock` from another client: this face has no raw ZooKeeper
//   client); back on the session it reports lost.
// - nothing-sent-after-close (CURATOR-720/729): once `close()` resolved, the proxy counts no byte
//   and no connection more (the harness's `count`).
// - connection-event-not-deletion (Curator GH-1290): a waiter whose connection is cut and comes
//   back keeps waiting while its predecessor holds.
'use strict'

const { Client } = require('../index.js')

const WAIT_MS = 10000
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** What clients sent through the proxy so far: [bytes, connections]. */
async function count(zk) {
  const out = await zk.command('count')
  const line = out.find((l) => l.startsWith('bytes='))
  if (!line) throw new Error(`zk-harness's count printed ${JSON.stringify(out)}`)
  const fields = Object.fromEntries(line.split(' ').map((f) => f.split('=')))
  return [Number(fields.bytes), Number(fields.connections)]
}

/** A client through the proxy (4 s session) and the connection states it reports, in order. */
async function proxied(zk) {
  const client = await Client.connect(zk.proxy, { sessionTimeoutMs: 4000, connectTimeoutMs: 5000 })
  const seen = []
  client.on('state', (s) => seen.push(s))
  /** Waits (at most 30 s) until `state` is reported after the first `from`. */
  const until = async (from, state) => {
    for (let i = 0; i < 1500; i += 1) {
      const at = seen.indexOf(state, from)
      if (at >= 0) return at + 1
      await sleep(20)
    }
    throw new Error(`never ${state}: ${seen.join(',')}`)
  }
  return { client, seen, until }
}

async function untilQueued(lock, n) {
  for (let i = 0; i < 1500; i += 1) {
    if ((await lock.participants()).length >= n) return
    await sleep(20)
  }
  throw new Error('the waiter never queued')
}

function peerScenarios({ zk, client, outcome }) {
  return {
    'election-path-deleted-while-disconnected': (path) =>
      outcome(async () => {
        const { client: c, seen, until } = await proxied(zk())
        try {
          const election = c.election(path, { style: 'latch', id: 'a' })
          const lead = await election.lead({ timeoutMs: WAIT_MS })
          const node = (await election.participants())[0].node
          let from = seen.length
          await zk().command('refuse')
          await zk().command('cut')
          await until(from, 'suspended')
          await client().breakLock(path, node)
          from = seen.length
          await zk().command('heal')
          await until(from, 'connected')
          const lost = await Promise.race([
            new Promise((resolve) => {
              if (lead.signal.aborted) resolve(true)
              lead.signal.addEventListener('abort', () => resolve(true), { once: true })
            }),
            sleep(20000).then(() => false),
          ])
          if (lost) return 'lost'
          const left = await client().election(path).participants()
          return left.length ? 're-registered' : 'still-leading-on-no-node'
        } finally {
          await zk().command('heal')
          if (!c.closed) await c.close()
        }
      }),

    'nothing-sent-after-close': (path) =>
      outcome(async () => {
        const { client: c } = await proxied(zk())
        const other = `${path}-other`
        const holderLock = client().mutex(other)
        let holder = null
        try {
          // A held lease, a waiting acquire (its watch on the predecessor) when close comes.
          await c.mutex(path).acquire({ timeoutMs: WAIT_MS })
          holder = await holderLock.acquire({ timeoutMs: WAIT_MS })
          const waiting = c.mutex(other).acquire().then(
            () => 'acquired',
            (e) => e.code,
          )
          await untilQueued(holderLock, 2)
          await c.close()
          const before = await count(zk())
          if (!(before[0] > 0 && before[1] > 0)) throw new Error('the proxy counted no traffic')
          // What would wake a loop left behind: the predecessor goes, the connection is cut.
          await holder.release()
          holder = null
          await zk().command('cut')
          await waiting
          // Three of the closed session's ping intervals (4 s / 3) of quiet.
          await sleep(4000)
          const after = await count(zk())
          const [bytes, conns] = [after[0] - before[0], after[1] - before[1]]
          return bytes === 0 && conns === 0 ? 'none-sent' : `sent=${bytes},connections=${conns}`
        } finally {
          if (holder) await holder.release()
          if (!c.closed) await c.close()
        }
      }),

    'connection-event-not-deletion': (path) =>
      outcome(async () => {
        const holderLock = client().mutex(path)
        let holder = await holderLock.acquire({ timeoutMs: WAIT_MS })
        const { client: c, seen, until } = await proxied(zk())
        let got = null
        const waiting = c
          .mutex(path)
          .acquire()
          .then(
            (lease) => {
              got = 'acquired'
              return lease
            },
            (e) => {
              got = e.code
              return null
            },
          )
        try {
          await untilQueued(holderLock, 2)
          const from = seen.length
          await zk().command('cut')
          const at = await until(from, 'suspended')
          await until(at, 'connected')
          // The predecessor still holds: the waiter must still be waiting (two seconds after the
          // reconnect to go wrong: a waiter that takes the event for the deletion acquires at once).
          await Promise.race([waiting, sleep(2000)])
          const first = got === null ? 'waited' : got === 'acquired' ? 'acquired-while-held' : 'failed'
          await holder.release()
          holder = null
          let second = '-'
          if (first === 'waited') {
            const lease = await Promise.race([waiting, sleep(30000).then(() => 'hung')])
            if (lease === 'hung') second = 'hung'
            else if (lease) {
              second = 'acquired'
              await lease.release()
            } else second = got
          } else {
            const lease = await waiting
            if (lease) await lease.release()
          }
          return `${first},${second}`
        } finally {
          if (holder) await holder.release()
          if (!c.closed) await c.close()
        }
      }),
  }
}

module.exports = { peerScenarios }
