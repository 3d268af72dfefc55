import asyncio
import os
import threading

import zklock

servers = os.environ.get("ZKLOCK_SERVERS", "127.0.0.1:2181")
path = "/elections/billing"

with zklock.Client(servers) as client, zklock.Client(servers) as other:
    watch = client.observe_leader(path)          # from outside: the leader now, then every change
    print("leader:", watch.next(timeout=5.0))    # None: nobody leads
    election = client.election(path, id="worker-1")  # style="latch" (Curator's LeaderLatch)
    with election.lead(timeout=30.0) as lead:    # blocks, GIL released; zklock.LockTimeout
        print("leading, token", lead.token, "valid for", round(lead.time_left() or 0), "s")
        election.proclaim(lead, "worker-1 @ 10.0.0.7")  # the id others see from now on
        seen = watch.next(timeout=5.0)           # the next change: worker-1 leads
        print("observed:", seen.id if seen else None)
        print("token current:", other.check(path, lead.token))  # what a resource asks
        rival = other.election(path, id="worker-2")
        waiting = threading.Thread(target=lambda: rival.run(lambda l: print("worker-2 leads")))
        waiting.start()
    waiting.join()                               # leaving the block resigned: worker-2 led
    print("after:", [p.id for p in election.participants()])

    def step(lead: zklock.Leadership) -> int:    # kazoo's shape: lead, call, resign
        if lead.lost.is_set():                   # set before anyone else can lead
            raise zklock.LockLost("lost")
        return lead.token

    print("ran:", election.run(step) > 0)

    async def main() -> None:
        async with election.lead_async(timeout=30.0) as lead:
            print("async leader:", lead.state)

    asyncio.run(main())
