// A TypeScript user's program: `tsc --noEmit --strict -p test/types` must accept it.
import {
  Client,
  PathStats,
  PathStatsSnapshot,
  closeOnSignals,
  ErrorCode,
  isZkLockError,
  logChannel,
  Semaphore,
  type Count,
  type Election,
  type ElectionParticipant,
  type ElectionStyle,
  type LeaderWatch,
  type Leadership,
  type GuardedWrite,
  type GuardedWritten,
  type Lease,
  type LeaseState,
  type LogRecord,
  type Participant,
  type Stats,
} from 'zklock'
import { once } from 'node:events'

async function writeWithFence(row: string, fence: bigint, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw signal.reason
  void row
  void fence
}

export async function main(servers: string): Promise<void> {
  await using client = await Client.connect(servers, {
    sessionTimeoutMs: 10_000,
    connectTimeoutMs: 5_000,
    identity: 'example',
  })
  const mutex = client.mutex('/locks/orders')
  const controller = new AbortController()

  {
    await using lease = await mutex.acquire({ timeoutMs: 5_000, signal: controller.signal })
    const token: bigint = lease.token
    const state: LeaseState = lease.state
    lease.on('suspended', () => console.log('suspended'))
    lease.on('resumed', () => console.log('resumed'))
    lease.on('lost', (err) => console.log(err.code satisfies ErrorCode, err.message))
    await writeWithFence('row', token, lease.signal)
    console.log(state, lease.path, lease.lockPath, mutex.holdCount)
  }

  const maybe: Lease | null = await mutex.tryAcquire()
  // Issue 50: an explicit owner (any object) re-enters across calls.
  const me = {}
  const mine: Lease | null = await mutex.tryAcquire({ owner: me })
  const again = await mutex.acquire({ owner: me, timeoutMs: 1_000 })
  const held: number = mutex.holdCountOf(me)
  console.log(held, await again.release(), await mine?.release())
  if (maybe) {
    const outcome: 'released' | 'still-held' | 'was-lost' = await maybe.release()
    console.log(outcome)
  }

  const total: number = await mutex.using(async (lease) => {
    await writeWithFence('row', lease.token, lease.signal)
    return 42
  }, { timeoutMs: 1_000 })
  console.log(total)

  // Issue 51: an int64 counter's values are bigints (exact past 2^53), an int32 one's numbers.
  const big = client.counter('/counters/big', { width: 'int64' })
  const bigCount: bigint = (await big.get()).value
  const small = client.counter('/counters/small')
  const smallCount: number = (await small.get()).value
  const moved: Count<'int64'> | null = await big.compareAndSet(await big.get(), bigCount + 1n)
  console.log(smallCount, moved?.value)

  const semaphore = client.mutex('/locks/jobs', { reentrant: false })
  const queue: Participant[] = await semaphore.participants()
  for (const p of queue) console.log(p.node, p.identity, p.token + 1n, p.kind, p.sessionId)

  const jobs: Semaphore = client.semaphore('/locks/jobs-pool', 4)
  const slots: number = jobs.maxLeases
  await jobs.using(async (lease) => {
    lease.on('revokeRequested', () => console.log('asked to let go', lease.revokeRequested))
    await writeWithFence('job', lease.token, lease.signal)
  }, { timeoutMs: 1_000 })
  const leases: Participant[] = await jobs.participants()
  for (const p of leases) console.log(p.kind === 'lease', p.maxLeases ?? slots)
  const asked: string[] = await client.revoke('/locks/jobs-pool', { node: 'some-node' })
  const broken: Participant = await client.breakLock('/locks/jobs-pool', 'some-node', { reason: 'hung' })
  console.log(broken.token satisfies bigint, broken.identity)
  console.log(asked, client.semaphoreMutex('/locks/one') instanceof Semaphore)

  const rw = client.rwLock('/locks/table')
  await rw.read.using(async () => {})
  try {
    await rw.read.using(() => rw.write.acquire())
  } catch (e) {
    if (isZkLockError(e) && e.code === ErrorCode.UPGRADE) console.log('no upgrade')
  }

  const both = client.multiLock(['/locks/a', '/locks/b'])
  const all = await both.acquire({ signal: AbortSignal.timeout(1_000) })
  const tokens: bigint[] = all.tokens
  console.log(tokens, both.paths)
  await all.release()
  const bounded = client.multiLock(['/locks/a', '/locks/b'], { maxHoldMs: 60_000, holdCeilingMs: 600_000 })
  const whole = await bounded.acquire()
  whole.extend(30_000)
  await whole.release()

  try {
    await mutex.acquire({ timeoutMs: 0 })
    await mutex.acquire({ deadline: new Date(Date.now() + 1_000) })
    await mutex.acquire({ deadline: Date.now() + 1_000 })
  } catch (e) {
    if (isZkLockError(e)) {
      switch (e.code) {
        case 'ZKLOCK_TIMEOUT':
        case 'ZKLOCK_ABORTED':
          break
        default:
          throw e
      }
    }
  }
  // Observing: stats, guarded writes, the log channel.
  const stats: Stats = client.stats()
  const p99: number = stats.wait.p99
  console.log(stats.acquired, stats.timedOut, stats.sessionExpiries, p99)
  const perPath: PathStatsSnapshot = client.pathStats()
  const firstPath: PathStats | undefined = perPath.paths[0]
  const oldest: number = firstPath ? firstPath.oldestHold + firstPath.lost['max-hold'] : 0
  console.log(perPath.folded, perPath.overflow?.path ?? null, oldest)
  const unregister: () => void = client.registerMetrics(undefined, { service: 'jobs' })
  unregister()
  const guarded = await mutex.acquire()
  const writes: GuardedWrite[] = [
    { op: 'create', path: '/app/config', data: 'v1' },
    { op: 'set_data', path: '/app/config', data: new Uint8Array([1]) },
    { op: 'delete', path: '/app/config' },
  ]
  const done: GuardedWritten[] = await guarded.guardedWrite(writes)
  for (const w of done) if (w.op === 'set_data') console.log(w.version)
  await guarded.release()
  // Node's own helpers on a lease (they add an 'error' listener, which a lease accepts).
  const watched = await mutex.acquire()
  const lostWith = once(watched, 'lost', { signal: AbortSignal.timeout(1_000) })
  await watched.release()
  await lostWith.catch(() => {})
  const onRecord = (message: unknown): void => {
    const record = message as LogRecord
    if (record.level === 'warn') console.log(record.message, record.fields.path)
  }
  logChannel.subscribe(onRecord)
  logChannel.unsubscribe(onRecord)
  const stopClosingOnSignals: () => void = closeOnSignals({ signals: ['SIGTERM'] })
  stopClosingOnSignals()
  // A participant always carries maxLeases: null unless it is a semaphore's lease.
  const first: Participant | undefined = (await client.mutex('/locks/x').participants())[0]
  const n: number | null = first === undefined ? null : first.maxLeases
  console.log(n === null ? 'no N' : n + 1)
  console.log(client.hosts, client.sessionId, client.closed)
  await elect(client)
  await client.close()
}

// Leader election: lead/resign/requeue, `await using`, run() with the lost signal, observe.
async function elect(client: Client): Promise<void> {
  const election: Election = client.election('/app/leader', { id: 'worker-1', maxHoldMs: 60_000 })
  const style: ElectionStyle = election.style
  console.log(election.path, style, election.id, election.maxHoldMs)
  {
    await using lead: Leadership = await election.lead({ timeoutMs: 5_000, signal: AbortSignal.timeout(10_000) })
    const left: number | null = lead.validUntil()
    const remaining: number | null = lead.timeLeft()
    void remaining
    if (left !== null && left - Date.now() > 100) await writeWithFence('row', lead.token, lead.signal)
    await election.proclaim(lead, 'worker-1 at host:8080')
    const ok: boolean = await client.check('/app/leader', lead.token)
    console.log(ok, await client.check('/app/leader', 12, { maxLeases: 2 }))
  }
  const first = await election.lead()
  const again: Leadership = await election.resign(first, { requeue: true })
  await election.resign(again)
  const everyone: ElectionParticipant[] = await election.participants()
  for (const p of everyone) console.log(p.id, p.style ?? 'foreign', p.token, p.sessionId, p.kind, p.library)
  const leader: ElectionParticipant | null = await election.leader()
  console.log(leader?.id)
  const stop = new AbortController()
  const out: string = await election.run(
    async (lead, signal) => {
      await writeWithFence('row', lead.token, signal)
      return 'done'
    },
    { signal: stop.signal },
  )
  console.log(out)
  const watch: LeaderWatch = client.observeLeader('/app/leader')
  for await (const who of watch) {
    if (who === null) break
    console.log(who.id)
  }
  const next = await client.observeLeader('/app/leader').next({ timeoutMs: 1_000 })
  if (!next.done) console.log(next.value?.id ?? 'none')
  const m = client.mutex('/locks/held', { maxHoldMs: 30_000 })
  const s: Semaphore = client.semaphore('/locks/s', 2, { maxHoldMs: 30_000 })
  console.log(m.path, s.maxLeases, ErrorCode.CONFLICT)
  const queuedLease = await m.acquire({ onQueued: (position: number) => console.log(position), timeoutMs: 5_000 })
  const place: number | null = m.position
  console.log(place)
  await queuedLease.release()
}
