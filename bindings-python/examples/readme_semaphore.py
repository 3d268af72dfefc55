import os
import threading

import zklock

servers = os.environ.get("ZKLOCK_SERVERS", "127.0.0.1:2181")

with zklock.Client(servers) as client, zklock.Client(servers) as other:
    pool = client.semaphore("/locks/pool", 2)  # at most 2 leases at once, every process passing 2
    with pool as first, pool as second:       # never re-entrant: each acquire is a lease of its own
        print("lease tokens", first.token, second.token)
        print("third:", other.semaphore("/locks/pool", 2).acquire(blocking=False))  # False: full

    one = client.semaphore_mutex("/locks/report")  # excludes Curator's InterProcessSemaphoreMutex
    with one as lease:
        asked = lease.revoke_requested            # threading.Event (or lease.on_revoke(callback))
        other.revoke("/locks/report")             # sets __REVOKE__ on the holder's node
        print("asked to let go:", asked.wait(10)) # a request: we still hold it until we release
