// Compiled by tsc (see dispose.test.js): `await using` as a TypeScript user writes it. Node 20's
// V8 cannot parse `await using` yet; tsc lowers it to Symbol.asyncDispose calls.
import { Client, type Lease, type ZkLockError } from 'zklock'

export interface Outcome {
  nodesInside: number
  stateAfter: string
  nodesAfter: number
  error?: string
}

/** The lease is released when the block exits normally. */
export async function releasedAtBlockExit(client: Client, path: string): Promise<Outcome> {
  const mutex = client.mutex(path)
  let captured: Lease
  let nodesInside: number
  {
    await using lease = await mutex.acquire({ timeoutMs: 5_000 })
    captured = lease
    nodesInside = (await mutex.participants()).length
  }
  return { nodesInside, stateAfter: captured.state, nodesAfter: (await mutex.participants()).length }
}

/** The lease is released when the block throws, and the error propagates. */
export async function releasedWhenThrowing(client: Client, path: string): Promise<Outcome> {
  const mutex = client.mutex(path)
  let captured: Lease | undefined
  let nodesInside = -1
  let error: string | undefined
  try {
    await using lease = await mutex.acquire({ timeoutMs: 5_000 })
    captured = lease
    nodesInside = (await mutex.participants()).length
    throw new Error('boom inside the block')
  } catch (e) {
    error = (e as Error).message
  }
  return {
    nodesInside,
    stateAfter: captured ? captured.state : 'none',
    nodesAfter: (await mutex.participants()).length,
    error,
  }
}

/** A lease released by hand inside the block is not released twice. */
export async function releasedByHand(client: Client, path: string): Promise<Outcome> {
  const mutex = client.mutex(path)
  let captured: Lease
  {
    await using lease = await mutex.acquire({ timeoutMs: 5_000 })
    captured = lease
    await lease.release()
  }
  return { nodesInside: 0, stateAfter: captured.state, nodesAfter: (await mutex.participants()).length }
}

/** `await using` on a client closes it. */
export async function clientDisposed(servers: string): Promise<boolean> {
  let captured: Client
  {
    await using client = await Client.connect(servers)
    captured = client
  }
  return captured.closed
}

export interface LostInside {
  /** The code `await using` rejected with at block exit (undefined: it did not). */
  disposed?: string
  /** The code `mutex.using()` rejected with for the same loss. */
  used?: string
  stateAfter: string
  /** When the block threw too: the SuppressedError's two errors. */
  thrown?: { name: string; error?: string; suppressed?: string }
}

/** A lease lost inside the block (its client closed there): the same outcome as `using()`. */
export async function lostInsideTheBlock(servers: string, path: string): Promise<LostInside> {
  let captured: Lease | undefined
  let disposed: string | undefined
  {
    const client = await Client.connect(servers)
    try {
      await using lease = await client.mutex(path).acquire({ timeoutMs: 5_000 })
      captured = lease
      await client.close()
    } catch (e) {
      disposed = (e as ZkLockError).code
    }
  }
  const other = await Client.connect(servers)
  const used = await other
    .mutex(path)
    .using(() => other.close())
    .then(
      () => undefined,
      (e: ZkLockError) => e.code,
    )

  // The block throws as well: both errors reach the caller, the block's as the suppressed one.
  let thrown: LostInside['thrown']
  const third = await Client.connect(servers)
  try {
    await using lease = await third.mutex(path).acquire({ timeoutMs: 5_000 })
    void lease
    await third.close()
    throw new Error('boom after the loss')
  } catch (e) {
    const s = e as { name: string; error?: ZkLockError; suppressed?: Error }
    thrown = { name: s.name, error: s.error?.code, suppressed: s.suppressed?.message }
  }
  return { disposed, used, stateAfter: captured ? captured.state : 'none', thrown }
}

/** A leadership is resigned at block exit (issue 25): the next participant can lead. */
export async function resignedAtBlockExit(
  client: Client,
  other: Client,
  path: string,
): Promise<{ leaderInside: string | null; proclaimed: string | null; stateAfter: string; leaderAfter: string | null; checkAfter: boolean }> {
  const election = client.election(path, { id: 'scoped' })
  let captured: Lease
  let leaderInside: string | null
  let proclaimed: string | null
  {
    await using lead = await election.lead({ timeoutMs: 5_000 })
    captured = lead
    leaderInside = (await election.leader())?.id ?? null
    await election.proclaim(lead, 'proclaimed')
    proclaimed = (await other.election(path).leader())?.id ?? null
  }
  return {
    leaderInside,
    proclaimed,
    stateAfter: captured.state,
    leaderAfter: (await election.leader())?.id ?? null,
    checkAfter: await other.check(path, captured.token),
  }
}
