// The Node runner's scenarios of issue 33's lease semantics (cases.txt's last block), apart
// from conformance.test.js, which is past the 700-line rule. `validUntil()` is read against
// Date.now(); the scoped hold is `mutex.using(fn)`; a foreign resign is `eb.resign(leadA)` with
// `eb` a second election object on the same path and client.
'use strict'

const MAX_HOLD_MS = 1000
const ROUNDING_MS = 10
// valid-until-max-hold-from-idle: a short session, the harness's tick, and an idle spell past
// the warm time (one session timeout) so that the acquire has to earn a fresh proof.
const IDLE_OPTIONS = { sessionTimeoutMs: 2000, serverTickMs: 200 }
const IDLE_SPELL_MS = 2500

/** Where `validUntil()` stands against the maximum hold counted from `acquired`. */
function againstMaxHold(lease, acquired) {
  const until = lease.validUntil()
  const now = Date.now()
  if (until === null) return 'none'
  if (until <= now) return 'past'
  if (until > acquired + MAX_HOLD_MS + ROUNDING_MS) return 'beyond-max-hold'
  return 'within-max-hold'
}

/**
 * The scenarios, given the runner's helpers: `client()` the runner's connected client,
 * `outcome(fn)` (a zklock error as its kind), `ownClient(fn, options)` (a client of the case's own),
 * `kindOf(err)`.
 */
function leaseScenarios({ client, outcome, ownClient, kindOf }) {
  return {
    'valid-until-max-hold': (p) =>
      outcome(async () => {
        const lease = await client().mutex(p, { maxHoldMs: MAX_HOLD_MS }).acquire()
        try {
          return againstMaxHold(lease, Date.now())
        } finally {
          await lease.release()
        }
      }),

    'valid-until-max-hold-election': (p) =>
      outcome(async () => {
        const e = client().election(p, { style: 'latch', id: 'a', maxHoldMs: MAX_HOLD_MS })
        const lead = await e.lead()
        try {
          return againstMaxHold(lead, Date.now())
        } finally {
          await e.resign(lead)
        }
      }),

    'valid-until-max-hold-from-idle': (p) =>
      ownClient(
        async (c) =>
          outcome(async () => {
            await new Promise((resolve) => setTimeout(resolve, IDLE_SPELL_MS))
            const lease = await c.mutex(p, { maxHoldMs: MAX_HOLD_MS }).acquire()
            try {
              return againstMaxHold(lease, Date.now())
            } finally {
              await lease.release()
            }
          }),
        IDLE_OPTIONS,
      ),

    'time-left-max-hold-short-session': (p) =>
      ownClient(
        async (c) =>
          outcome(async () => {
            const lease = await c.mutex(p, { maxHoldMs: MAX_HOLD_MS }).acquire()
            try {
              const left = lease.timeLeft()
              if (left === null) return 'none'
              if (left <= 0) return 'past'
              if (left > MAX_HOLD_MS + ROUNDING_MS) return 'beyond-max-hold'
              return 'within-max-hold'
            } finally {
              await lease.release()
            }
          }),
        IDLE_OPTIONS,
      ),

    'counter-width-unknown': (p) => outcome(async () => (client().counter(`${p}/n`, { width: 'int16' }), 'ok')),

    'counter-guarded': (p) =>
      outcome(async () => {
        const counter = client().counter(`${p}-counter`, { width: 'int64' })
        const lease = await client().mutex(p).acquire()
        try {
          const a = await lease.guardedIncrement(counter, 1)
          const b = await lease.guardedIncrement(counter, 41)
          return `${a.value},${b.value}`
        } finally {
          await lease.release()
        }
      }),

    'counter-after-loss': (p) =>
      ownClient(async (c) =>
        outcome(async () => {
          const counter = c.counter(`${p}-counter`)
          const lease = await c.mutex(p).acquire()
          await c.close()
          const kind = await lease.guardedIncrement(counter).then(() => 'ok', kindOf)
          const read = await client().counter(`${p}-counter`).get()
          return `${kind},${read.value}`
        }),
      ),

    'counter-int32-overflow': (p) =>
      outcome(async () => {
        const counter = client().counter(`${p}-counter`, { width: 'int32' })
        const lease = await client().mutex(p).acquire()
        try {
          await lease.guardedIncrement(counter, 2 ** 31 - 1)
          const kind = await lease.guardedIncrement(counter, 1).then(() => 'ok', kindOf)
          return `${kind},${(await counter.get()).value}`
        } finally {
          await lease.release()
        }
      }),

    'counter-cas-stale': (p) =>
      outcome(async () => {
        const counter = client().counter(`${p}-counter`)
        const seen = await counter.get()
        const first = await counter.compareAndSet(seen, 7)
        const second = await counter.compareAndSet(seen, 9)
        return [first, second].map((c) => (c === null ? 'stale' : String(c.value))).join(',')
      }),

    'extend-no-max-hold': (p) =>
      outcome(async () => {
        const lease = await client().mutex(p).acquire()
        try {
          lease.extend(1000)
          return 'ok'
        } catch (e) {
          return kindOf(e)
        } finally {
          await lease.release()
        }
      }),

    'extend-past-ceiling': (p) =>
      outcome(async () => {
        const lease = await client().mutex(p, { maxHoldMs: 5000, holdCeilingMs: 8000 }).acquire()
        const attempt = (ms) => {
          try {
            lease.extend(ms)
            return 'ok'
          } catch (e) {
            return kindOf(e)
          }
        }
        try {
          return `${attempt(60000)},${attempt(6000)}`
        } finally {
          await lease.release()
        }
      }),

    'extend-after-loss': (p) =>
      ownClient(async (c) =>
        outcome(async () => {
          const lease = await c.mutex(p, { maxHoldMs: 30000 }).acquire()
          await c.close()
          try {
            lease.extend(1000)
            return 'ok'
          } catch (e) {
            return kindOf(e)
          }
        }),
      ),

    'extend-moves-valid-until': (p) =>
      outcome(async () => {
        const lease = await client().mutex(p, { maxHoldMs: MAX_HOLD_MS }).acquire()
        const acquired = Date.now()
        try {
          lease.extend(20000)
          return againstMaxHold(lease, acquired)
        } finally {
          await lease.release()
        }
      }),

    'expiring-warns-first': (p) =>
      outcome(async () => {
        const events = []
        const lease = await client().mutex(p, { maxHoldMs: 800 }).acquire()
        lease.onExpiring(400, () => events.push('expiring'))
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, 10000)
          lease.once('lost', () => {
            events.push('lost')
            clearTimeout(timer)
            resolve()
          })
        })
        await lease.release()
        return events.join(',')
      }),

    'rw-max-hold': (p) =>
      outcome(async () => {
        const rw = client().rwLock(p, { maxHoldMs: 500 })
        const words = []
        for (const side of [rw.read, rw.write]) {
          const lease = await side.acquire()
          const signal = lease.signal
          const lost = signal.aborted
            ? signal.reason
            : await new Promise((resolve) => {
              const timer = setTimeout(() => resolve(null), 10000)
              signal.addEventListener('abort', () => {
                clearTimeout(timer)
                resolve(signal.reason)
              }, { once: true })
            })
          // The core's reason ends the message: "... was lost: <...> lost: max-hold ...".
          const why = lost === null ? '' : lost.message.split(' lost: ').pop() || ''
          words.push(why.split(/[: ]/)[0])
          await lease.release().catch(() => {})
        }
        return words.join(',')
      }),

    'multi-max-hold': (p) =>
      outcome(async () => {
        const members = [`${p}/a`, `${p}/b`]
        const lease = await client().multiLock(members, { maxHoldMs: 500 }).acquire({ timeoutMs: 10000 })
        const signal = lease.signal
        const lost = signal.aborted
          ? signal.reason
          : await new Promise((resolve) => {
            const timer = setTimeout(() => resolve(null), 10000)
            signal.addEventListener('abort', () => {
              clearTimeout(timer)
              resolve(signal.reason)
            }, { once: true })
          })
        const why = lost === null ? '' : lost.message.split(' lost: ').pop() || ''
        await lease.release().catch(() => {})
        let next = 'acquired'
        try {
          const again = await client().multiLock([...members].reverse()).acquire({ timeoutMs: 10000 })
          await again.release()
        } catch (e) {
          next = kindOf(e)
        }
        return `${why.split(/[: ]/)[0]},${next}`
      }),

    'multi-max-hold-extend': (p) =>
      outcome(async () => {
        const multi = client().multiLock([`${p}/a`, `${p}/b`], { maxHoldMs: MAX_HOLD_MS, holdCeilingMs: 5000 })
        const lease = await multi.acquire({ timeoutMs: 10000 })
        const acquired = Date.now()
        try {
          let first = 'ok'
          try {
            lease.extend(60000)
          } catch (e) {
            first = kindOf(e)
          }
          lease.extend(3000)
          return `${first},${againstMaxHold(lease, acquired)}`
        } finally {
          await lease.release()
        }
      }),

    'multi-max-hold-zero': (p) =>
      outcome(async () => {
        client().multiLock([`${p}/a`], { maxHoldMs: 0 })
        return 'ok'
      }),

    openmetrics: (p) =>
      ownClient(async (c) =>
        outcome(async () => {
          const lease = await c.mutex(p).acquire()
          await lease.release()
          const text = c.openmetrics()
          const eof = text.endsWith('# EOF\n') ? 'eof' : 'no-eof'
          const line = text.split('\n').find((l) => l.startsWith('zklock_acquires_total{') && l.includes('outcome="acquired"'))
          return `${eof},acquired=${line ? line.split(' ').pop() : 'none'}`
        }),
      ),

    'path-stats-bound': (p) =>
      ownClient(
        async (c) =>
          outcome(async () => {
            await (await c.mutex(p).acquire()).release()
            const held = await c.mutex(p).acquire()
            await (await c.mutex(`${p}-other`).acquire()).release()
            const text = c.openmetrics()
            await held.release()
            const sample = (name, ...labels) => {
              const line = text
                .split('\n')
                .find((l) => /^[^{ ]+/.exec(l)?.[0] === name && labels.every((x) => l.includes(x)))
              return line ? line.split(' ').pop() : 'none'
            }
            const own = `path="${p}"`
            const acquired = 'outcome="acquired"'
            return [
              `acquired=${sample('zklock_path_acquires_total', own, acquired)}`,
              `held=${sample('zklock_path_held', own)}`,
              `overflow=${sample('zklock_path_acquires_total', 'path="(overflow)"', acquired)}`,
              `folded=${sample('zklock_path_stats_folded_total')}`,
            ].join(',')
          }),
        { pathStatsLimit: 1 },
      ),

    'lost-stays-lost': (p) =>
      ownClient(async (c) =>
        outcome(async () => {
          const lease = await c.mutex(p).acquire()
          await c.close()
          await lease.release()
          // Node's lost reason is the signal's: the ZKLOCK_LOST error, with the core's reason.
          const reason = lease.signal.aborted && lease.signal.reason ? 'reason' : 'no-reason'
          return `${lease.state},${reason}`
        }),
      ),

    'scope-end-after-loss': (p) =>
      ownClient(async (c) =>
        outcome(async () => {
          await c.mutex(p).using(async () => {
            await c.close()
          })
          return 'quiet'
        }),
      ),

    'resign-foreign-leadership': (p) =>
      outcome(async () => {
        const ea = client().election(p, { style: 'latch', id: 'a' })
        const eb = client().election(p, { style: 'latch', id: 'b' })
        const lead = await ea.lead()
        let refused = 'ok'
        try {
          await eb.resign(lead)
        } catch (e) {
          refused = kindOf(e)
        }
        const leader = await ea.leader()
        const leads = lead.state === 'held' && leader !== null && leader.id === 'a'
        if (lead.state !== 'released') await ea.resign(lead)
        return `${refused},${leads ? 'still-leads' : 'not-leading'}`
      }),

    'lead-while-leading': (p) =>
      outcome(async () => {
        const e = client().election(p, { style: 'latch', id: 'a' })
        const lead = await e.lead()
        try {
          const again = await e.lead({ timeoutMs: 2000 })
          await again.release()
          return 'acquired'
        } finally {
          await e.resign(lead)
        }
      }),
  }
}

module.exports = { leaseScenarios }
