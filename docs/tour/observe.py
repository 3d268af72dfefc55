import logging
import os

import zklock

logging.basicConfig(level=logging.WARNING)  # lease state changes and losses are warnings
servers = os.environ.get("ZKLOCK_SERVERS", "127.0.0.1:2181")
with zklock.Client(servers) as client:
    with client.lock("/zklock-tour/observe-python") as lease:
        state = "/zklock-tour/python-state"  # written only while the lock is ours
        lease.guarded_write([("create", state, b"v1"), ("delete", state)])
    stats = client.stats()  # a frozen dataclass: acquired, timed_out, wait.p99, hold.max, ...
    print("acquired", stats.acquired, "waited p99", stats.wait.p99, "s, held max", stats.hold.max, "s")
