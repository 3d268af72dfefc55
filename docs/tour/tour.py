import os

import zklock

servers = os.environ.get("ZKLOCK_SERVERS", "127.0.0.1:2181")
with zklock.Client(servers, session_timeout=10.0) as client:
    lock = client.lock("/zklock-tour/python")
    with lock as lease:  # the GIL is released while waiting
        print("python holds the lock, fencing token", lease.token, lease.state)
    if lock.acquire(blocking=False):  # threading.Lock's signature
        lock.release()
