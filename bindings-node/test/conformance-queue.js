// The Node runner's scenarios of issue 37's queue position (cases.txt's block), apart from
// conformance.test.js, which is past the 700-line rule: `lock.acquire({ onQueued })`,
// `lock.position` while an acquire waits, an AbortSignal to make one leave.
'use strict'

const WAIT_MS = 10000

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits (at most 10 s) until `lock.position` is `n`. */
async function untilPosition(lock, n) {
  for (let i = 0; i < WAIT_MS / 20; i += 1) {
    if (lock.position === n) return
    await sleep(20)
  }
  throw new Error(`the position never was ${n}: ${lock.position}`)
}

/** An acquire of `lock` whose onQueued calls are kept; `next()` resolves with the next one. */
function queued(lock, outcome) {
  const calls = []
  const waiters = []
  const onQueued = (position) => {
    const waiter = waiters.shift()
    if (waiter) waiter(String(position))
    else calls.push(String(position))
  }
  const result = outcome(async () => {
    const lease = await lock.acquire({ onQueued })
    await lease.release()
    return 'acquired'
  })
  const next = () => {
    if (calls.length) return Promise.resolve(calls.shift())
    return Promise.race([
      new Promise((resolve) => waiters.push(resolve)),
      sleep(WAIT_MS).then(() => 'silent'),
    ])
  }
  const ended = async (heard) => {
    heard.push(await result)
    await sleep(300)
    const late = calls.splice(0)
    const all = [...heard.slice(0, -1), ...late, heard[heard.length - 1]]
    if (all.length === 1) all.push('quiet')
    return all.join(',')
  }
  return { next, ended }
}

/** A waiting acquire of `lock` that an abort makes leave (its rejection is expected). */
function parked(lock) {
  const controller = new AbortController()
  const done = lock.acquire({ signal: controller.signal }).then(
    (lease) => lease.release(),
    () => {},
  )
  return { leave: () => controller.abort(), done }
}

function queueScenarios({ client, outcome, ownClient }) {
  return {
    'queue-position-third': (p) =>
      ownClient((second) =>
        ownClient(async (third) => {
          const held = await client().mutex(p).acquire()
          const middleLock = second.mutex(p)
          const middle = parked(middleLock)
          await untilPosition(middleLock, 1)
          const waiting = queued(third.mutex(p), outcome)
          const heard = [await waiting.next()]
          middle.leave()
          await middle.done
          heard.push(await waiting.next())
          await held.release()
          return waiting.ended(heard)
        }),
      ),
    'queue-position-uncontended': (p) => queued(client().mutex(p), outcome).ended([]),
    'queue-position-reader': (p) =>
      ownClient((second) =>
        ownClient(async (third) => {
          const held = await client().rwLock(p).read.acquire()
          try {
            const writerLock = second.rwLock(p).write
            const writer = parked(writerLock)
            await untilPosition(writerLock, 1)
            const waiting = queued(third.rwLock(p).read, outcome)
            const heard = [await waiting.next()]
            writer.leave()
            await writer.done
            return await waiting.ended(heard)
          } finally {
            await held.release()
          }
        }),
      ),
  }
}

module.exports = { queueScenarios }
