"""zklock: distributed locks on Apache ZooKeeper.

Re-entrant mutexes, read/write locks and multi-locks after Apache Curator's recipes, with a
fencing token on every lease and a lost signal. The locks have the shapes of
``threading.Lock`` and ``asyncio.Lock``::

    import zklock

    with zklock.Client("127.0.0.1:2181", session_timeout=10.0) as client:
        lock = client.lock("/locks/orders")     # re-entrant per thread (per task under asyncio)
        with lock as lease:                      # the GIL is released while waiting
            print("fencing token", lease.token)

    async def main() -> None:
        async with await zklock.Client.connect_async("127.0.0.1:2181") as client:
            async with client.lock("/locks/orders") as lease:  # never blocks the event loop
                print("fencing token", lease.token)

    asyncio.run(main())

Re-entrancy follows Curator: a thread that holds a lock may take it again (it only counts up),
while another thread of the same process contends for it like another process would. Under
asyncio each task is an owner of its own. Waiting releases the GIL and is interrupted by Ctrl-C
(``KeyboardInterrupt``), which leaves no node behind.
"""

from __future__ import annotations

# The package's rooms, from the bottom up: argument checks (_args), what a client counts
# (_stats), what an acquire hands out (_lease), the locks (_lock) and elections (_election),
# the client (_client). Each imports only the ones before it; this file only re-exports.
from . import _zklock
from ._client import Client
from ._election import Election, LeaderWatch
from ._errors import (
    Cancelled,
    ClientClosed,
    Conflict,
    ConnectionFailed,
    InvalidArgument,
    InvalidArgumentType,
    LockLost,
    LockTimeout,
    NotHeld,
    PermissionDenied,
    SessionExpired,
    UpgradeNotAllowed,
    ZkLockError,
    ZooKeeperError,
    InternalError,
    OutcomeUnknown,
)
from ._lease import Count, Counter, GuardedWrite, LeadAttempt, Leadership, Lease, Participant
from ._lock import Lock, MultiLock, RwLock, Semaphore
from ._logs import logger
from ._stats import PathStats, PathStatsSnapshot, Percentiles, Stats

__version__: str = _zklock.__version__

__all__ = [
    "Client",
    "Lock",
    "RwLock",
    "MultiLock",
    "Semaphore",
    "Lease",
    "Leadership",
    "Election",
    "LeadAttempt",
    "LeaderWatch",
    "Participant",
    "Stats",
    "Percentiles",
    "PathStats",
    "PathStatsSnapshot",
    "GuardedWrite",
    "Counter",
    "Count",
    "ZkLockError",
    "LockTimeout",
    "Cancelled",
    "LockLost",
    "SessionExpired",
    "ConnectionFailed",
    "NotHeld",
    "UpgradeNotAllowed",
    "InvalidArgument",
    "InvalidArgumentType",
    "ClientClosed",
    "PermissionDenied",
    "ZooKeeperError",
    "InternalError",
    "OutcomeUnknown",
    "Conflict",
]

# The classes read as zklock's own (``zklock.Lock``, not ``zklock._lock.Lock``) in reprs, help()
# and pickles, as they did when this file held them.
for _public in (Client, Election, LeaderWatch, Lock, MultiLock, RwLock, Semaphore, Participant,
                Percentiles, Stats, PathStats, PathStatsSnapshot):
    _public.__module__ = __name__
del _public
