import asyncio
import os

import zklock

servers = os.environ.get("ZKLOCK_SERVERS", "127.0.0.1:2181")

with zklock.Client(servers, session_timeout=10.0) as client:
    lock = client.lock("/locks/orders")
    with lock as lease:                       # blocks; the GIL is released while waiting
        print("fencing token", lease.token)   # hand it to what the lock protects
        if not lease.is_held(): ...           # lease.state, lease.lost (threading.Event), lease.on_lost(cb)
    if lock.acquire(timeout=0.5):             # threading.Lock signature -> bool
        lock.release()
    with lock.hold(timeout=5.0) as lease: ... # raises zklock.LockTimeout
    rw = client.rw_lock("/locks/x")
    with rw.read: ...
    with rw.write: ...
    with client.multi_lock(["/locks/a", "/locks/b"]): ...


async def main() -> None:
    async with await zklock.Client.connect_async(servers) as client:  # never blocks the loop
        lock = client.lock("/locks/orders")
        async with lock as lease:             # asyncio: never blocks the event loop
            print("fencing token", lease.token)
        lease = await lock.acquire_async(timeout=5.0)  # raises zklock.LockTimeout
        await lease.release_async()

asyncio.run(main())
