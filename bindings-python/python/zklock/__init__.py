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

import asyncio
import dataclasses
import logging
import os
import threading
import weakref
from types import TracebackType
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
)

from . import _zklock
from ._errors import (
    Cancelled,
    ClientClosed,
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
)

__version__: str = _zklock.__version__

__all__ = [
    "Client",
    "Lock",
    "RwLock",
    "MultiLock",
    "Semaphore",
    "Lease",
    "Participant",
    "Stats",
    "Percentiles",
    "GuardedWrite",
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
]

# Guards the handles each Lock object keeps (below); held only for list work, never while
# waiting. A child process made by fork() gets a fresh one.
_mu = threading.Lock()


def _reset_after_fork() -> None:
    global _mu
    _mu = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)

_get_running_loop = asyncio.events._get_running_loop

# The core counts re-entrant holds per owner, a number the face chooses: the thread's ident, or
# the running asyncio task's id with the top bit set (a thread ident never has it), or 0, the
# core's shared owner, for a non re-entrant lock (any thread may release it).
_TASK_BIT = 1 << 63
_SHARED = 0


def _owner() -> int:
    """Who holds a re-entrant lock: the current asyncio task, else the current thread."""
    loop = _get_running_loop()
    if loop is not None:
        task = asyncio.current_task(loop)
        if task is not None:
            return id(task) | _TASK_BIT
    return threading.get_ident()


# ---------------------------------------------------------------------------------------------
# Argument types (a wrong type raises InvalidArgumentType: both InvalidArgument and TypeError).
# The values themselves are the core's to judge.


def _type_name(value: object) -> str:
    return type(value).__name__


def _check_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{what} must be a str, got {_type_name(value)}")
    return value


def _check_optional_str(value: object, what: str) -> Optional[str]:
    return None if value is None else _check_str(value, what)


def _check_optional_path(value: object, what: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{what} must be a file path (str), got {_type_name(value)}")
    return value


def _check_number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentType(f"{what} must be a number of seconds, got {_type_name(value)}")
    return float(value)


def _check_timeout(value: object) -> Optional[float]:
    """``None`` waits forever; a number is judged by the core's rule (``Wait::from_secs``)."""
    seconds = None if value is None else _check_number(value, "timeout")
    _zklock.check_timeout(seconds)
    return seconds


def _acquire_timeout(blocking: object, timeout: object) -> float:
    """threading.Lock.acquire's arguments to a timeout for the core (0: one try, -1: forever)."""
    if not isinstance(blocking, (bool, int)):
        raise InvalidArgumentType(f"blocking must be a bool, got {_type_name(blocking)}")
    number = _check_number(timeout, "timeout")
    if not blocking:
        if number != -1:
            raise InvalidArgument("can't specify a timeout for a non-blocking acquire")
        return 0.0
    return number


def _check_callable(callback: object, what: str) -> None:
    if not callable(callback):
        raise InvalidArgumentType(f"{what}() needs a callable, got {_type_name(callback)}")


# ---------------------------------------------------------------------------------------------
# Observing: logs and stats

#: The logger zklock's records go to: a settled acquire at DEBUG, a new session and a reconnect at
#: INFO, lease state changes (suspended, held again, lost) and session breaks at WARNING. Quiet
#: by default (a NullHandler, as libraries do): configure ``logging`` to see them.
logger = logging.getLogger("zklock")
logger.addHandler(logging.NullHandler())

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}


def _forward_log(level: str, event: str, message: str, fields: Dict[str, str]) -> None:
    """The core's log sink (on zklock's callback thread): one ``logging`` record per core record,
    with the core's fields in ``record.zklock`` (``event``, ``path``, ``state``, ...)."""
    logger.log(_LEVELS.get(level, logging.INFO), "%s", message, extra={"zklock": {"event": event, **fields}})


def _install_log_sink() -> None:
    """Asks the core for records down to the logger's effective level when a client is made (so
    that an application that logs nothing pays nothing for the acquire records)."""
    level = logger.getEffectiveLevel()
    name = "debug" if level <= logging.DEBUG else "info" if level <= logging.INFO else "warn"
    _zklock.set_log_sink(_forward_log, name)


@dataclasses.dataclass(frozen=True)
class Percentiles:
    """Percentiles of recorded times, in seconds (each the upper bound of a log bucket at most a
    quarter wide, never above ``max``, which is exact)."""

    count: int
    p50: float
    p90: float
    p99: float
    max: float


@dataclasses.dataclass(frozen=True)
class Stats:
    """A snapshot of a client's lock statistics (``Client.stats()``), counted by the core since
    the client was made. A re-entrant acquire (a count going up) is not counted; a multi-lock
    counts each member."""

    acquired: int
    timed_out: int
    cancelled: int
    failed: int
    wait: Percentiles
    hold: Percentiles
    held: int
    waiting: int
    suspended: int
    lost: int
    reconnects: int
    session_expiries: int

    @classmethod
    def _of(cls, raw: Mapping[str, Any]) -> "Stats":
        values = dict(raw)
        values["wait"] = Percentiles(**raw["wait"])
        values["hold"] = Percentiles(**raw["hold"])
        return cls(**values)


#: A guarded write: ``("create", path, data)``, ``("set_data", path, data)`` or
#: ``("delete", path)``.
GuardedWrite = Union[Tuple[str, str], Tuple[str, str, bytes]]


def _check_writes(writes: object) -> List[Tuple[str, str, Optional[bytes]]]:
    if isinstance(writes, (str, bytes)) or not isinstance(writes, Iterable):
        raise InvalidArgumentType(f"guarded_write() needs a list of writes, got {_type_name(writes)}")
    out: List[Tuple[str, str, Optional[bytes]]] = []
    for w in writes:
        if not isinstance(w, tuple) or len(w) not in (2, 3):
            raise InvalidArgumentType(
                f"a guarded write is (op, path) or (op, path, data), got {_type_name(w)}"
            )
        op = _check_str(w[0], "the write's op")
        path = _check_str(w[1], "the write's path")
        data = None
        if len(w) == 3:
            if not isinstance(w[2], (bytes, bytearray, memoryview)):
                raise InvalidArgumentType(f"the write's data must be bytes, got {_type_name(w[2])}")
            data = bytes(w[2])
        out.append((op, path, data))
    return out


# ---------------------------------------------------------------------------------------------
# Leases


class Lease:
    """A held lock: its fencing token, its node, its state and a lost signal.

    ``state`` is ``'held'``, ``'suspended'`` (disconnected: we cannot know whether we still hold
    it), ``'lost'`` (final) or ``'released'``. ``lost`` is a :class:`threading.Event` set when the
    lease is lost; ``on_lost(callback)`` calls ``callback()`` once, from zklock's callback thread.

    A lease stays held until it is released, its client is closed or the process exits: garbage
    collection never releases it (a lease collected while held emits a ``ResourceWarning`` and
    its node stays until the client closes). In a child process made by ``fork()``, a lease of
    the parent raises :class:`ClientClosed` for its state, ``lost``, callbacks and release.
    """

    __slots__ = (
        "_native", "_lock", "_owner", "_entered", "_done", "_lost", "_revoked", "__weakref__"
    )

    def __init__(self, native: _zklock.NativeLease, lock: "Lock", owner: int) -> None:
        self._native = native
        self._lock = lock
        self._owner = owner
        self._entered = False  # taken by `with lock` / `async with lock`: that exit releases it
        self._done = False
        # Made on first use: most leases are never asked.
        self._lost: Optional[threading.Event] = None
        self._revoked: Optional[threading.Event] = None

    @property
    def lost(self) -> threading.Event:
        """A :class:`threading.Event`, set once the lease is lost."""
        state = self._native.state  # ClientClosed in a child process after fork()
        event = self._lost
        if event is None:
            with _mu:
                event = self._lost
                if event is None:
                    event = self._lost = threading.Event()
                    if state == "lost":
                        event.set()  # visible at once
                    self._native.on_lost(event.set)
        return event

    @property
    def revoke_requested(self) -> threading.Event:
        """A :class:`threading.Event`, set once someone asks this holder to let go: the data of
        its node was set to ``__REVOKE__`` (``client.revoke(path)``, ``zklock revoke``, or
        Curator's ``Revoker.attemptRevoke``). Only a request: the lease stays held until
        released. Opt-in, as Curator's ``makeRevocable``: nothing listens until this is read."""
        self._native.state  # ClientClosed in a child process after fork()
        event = self._revoked
        if event is None:
            with _mu:
                event = self._revoked
                if event is None:
                    event = self._revoked = threading.Event()
                    self._native.on_revoke(event.set)
                    if self._native.is_revoke_requested():
                        event.set()  # asked before we listened: visible at once
        return event

    def on_revoke(self, callback: Callable[[], object]) -> None:
        """Calls ``callback()`` once, from zklock's callback thread, when a revocation is
        requested while the lease is held (Curator's ``RevocationListener``); never after the
        lease was released or lost. The callback may call into zklock (release the lease)."""
        _check_callable(callback, "on_revoke")
        self._native.on_revoke(callback)

    @property
    def token(self) -> int:
        """The fencing token: the czxid of our lock node (for a multi-lock, the largest)."""
        return self._native.token

    @property
    def tokens(self) -> List[int]:
        """Every member's token (one for a plain lock), in path order."""
        return self._native.tokens

    @property
    def path(self) -> str:
        """Full path of our lock node (the first member's for a multi-lock)."""
        return self._native.path

    @property
    def paths(self) -> List[str]:
        """Full paths of every member's node."""
        return self._native.paths

    @property
    def state(self) -> str:
        """``'held'``, ``'suspended'``, ``'lost'`` or ``'released'``."""
        return self._native.state

    def is_held(self) -> bool:
        """True while the state is ``'held'``."""
        return self._native.is_held()

    def on_lost(self, callback: Callable[[], object]) -> None:
        """Calls ``callback()`` once, from zklock's callback thread, if the lease is lost (at
        once, on that thread, if it already is). The callback may call into zklock."""
        _check_callable(callback, "on_lost")
        self._native.on_lost(callback)

    def on_state(self, callback: Callable[[str], object]) -> None:
        """Calls ``callback(state)`` from zklock's callback thread with the lease's current state
        first, then at every change (``'held'``, ``'suspended'``, ``'lost'``, ``'released'``),
        ending after a final state; ``'lost'`` comes at most once."""
        _check_callable(callback, "on_state")
        self._native.on_state(callback)

    def release(self) -> str:
        """Releases the lease and says how: ``'released'``, ``'still-held'`` (a re-entrant hold
        counted down) or ``'was-lost'``. Releasing a lost lease succeeds; releasing twice raises
        :class:`NotHeld`."""
        try:
            return self._native.release()
        finally:
            self._lock._forget(self)

    def guarded_write(self, writes: Iterable[GuardedWrite]) -> List[Union[str, int, None]]:
        """Runs ZooKeeper writes only while this lease holds the lock: ``("create", path, data)``,
        ``("set_data", path, data)``, ``("delete", path)`` go in one multi request with a check
        that the lease's node still exists, so all apply or none. Returns per write the created
        path, the new data version, or None for a delete. Raises :class:`LockLost` when the lease
        was lost (nothing applied), the write's own error (e.g. :class:`ZooKeeperError`) when a
        write fails (nothing applied either). The GIL is released meanwhile."""
        return self._native.guarded_write(_check_writes(writes))

    async def release_async(self) -> str:
        """The asyncio twin of :meth:`release`."""
        try:
            pending = self._native.release_async()
        finally:
            self._lock._forget(self)
        return await pending

    def __repr__(self) -> str:
        try:
            state = self.state
        except ClientClosed:
            state = "forked"  # a lease of the parent process, seen in a child
        return f"<zklock.Lease path={self.path!r} token={self.token} state={state!r}>"


class Participant(NamedTuple):
    """One contender in a lock's queue (holder first)."""

    node: str
    identity: str
    token: int
    library: str
    kind: str
    session_id: int
    max_leases: Optional[int] = None
    """A semaphore's N on its ``'lease'`` participants, when known (ZooKeeper does not store
    it: it is the N of the semaphore asked)."""


# ---------------------------------------------------------------------------------------------
# Locks


class Lock:
    """A lock on a ZooKeeper path: a mutex, one side of a :class:`RwLock`, or a multi-lock.

    Shaped like :class:`threading.Lock` (``acquire``/``release``/``locked``/``with``) and
    :class:`asyncio.Lock` (``async with``, ``await acquire_async()``). Re-entrant per thread, and
    per task under asyncio; with ``reentrant=False`` every acquire waits for its own place and
    any thread may release. Either way it excludes Curator's ``InterProcessMutex``, not its
    ``InterProcessSemaphoreMutex``: for that one use :meth:`Client.semaphore_mutex`.

    The core counts the holds and decides who contends; this object only keeps the lease of
    each hold taken through it (``acquire()`` returns a bool, ``release()`` and ``with`` need
    the lease back).
    """

    def __init__(
        self, client: "Client", native: _zklock.NativeLock, kind: str, reentrant: bool
    ) -> None:
        self._client = client
        self._native = native
        self._kind = kind
        self._reentrant = reentrant
        # The leases taken through this object and not yet released, per owner, oldest first
        # (a lease entered by `with` stays until that `with` exits).
        self._held: Dict[int, List[Lease]] = {}

    # -- identity -----------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The lock path (comma-separated paths for a multi-lock)."""
        return self._native.path

    @property
    def kind(self) -> str:
        """``'mutex'``, ``'read'``, ``'write'``, ``'multi'`` or ``'semaphore'``."""
        return self._kind

    @property
    def reentrant(self) -> bool:
        return self._reentrant

    @property
    def client(self) -> "Client":
        return self._client

    def __repr__(self) -> str:
        return f"<zklock.Lock {self._kind} {self.path!r} locked={self.locked()}>"

    # -- the leases of this object ------------------------------------------------------------

    def _key(self) -> int:
        return _owner() if self._reentrant else _SHARED

    def _keep(self, native: _zklock.NativeLease, owner: int, entered: bool = False) -> Lease:
        lease = Lease(native, self, owner)
        lease._entered = entered
        with _mu:
            self._held.setdefault(owner, []).append(lease)
        return lease

    def _forget(self, lease: Lease) -> None:
        """`lease` was released (or tried to be): it is no longer this owner's, unless a `with`
        still has to exit it."""
        with _mu:
            lease._done = True
            if not lease._entered:
                self._drop(lease)

    def _drop(self, lease: Lease) -> None:
        leases = self._held.get(lease._owner, [])
        for i in range(len(leases) - 1, -1, -1):
            if leases[i] is lease:
                del leases[i]
                break
        if not leases:
            self._held.pop(lease._owner, None)

    def _latest(self, owner: int) -> Optional[Lease]:
        """This owner's most recent unreleased lease."""
        with _mu:
            leases = [lease for lease in self._held.get(owner, ()) if not lease._done]
        return leases[-1] if leases else None

    def _exit(self) -> Optional[Lease]:
        """The lease the innermost `with` of this owner entered (forgotten here), if it still
        needs releasing."""
        owner = self._key()
        with _mu:
            for lease in reversed(self._held.get(owner, ())):
                if lease._entered:
                    lease._entered = False
                    self._drop(lease)
                    return None if lease._done else lease
        return None

    def _not_held(self) -> NotHeld:
        owner = "process" if not self._reentrant else "task" if self._key() & _TASK_BIT else "thread"
        return NotHeld(f"release of the lock {self.path}: this {owner} does not hold it")

    def _acquire(self, timeout: Optional[float], entered: bool = False) -> Lease:
        owner = self._key()
        return self._keep(self._native.acquire(owner, timeout), owner, entered)

    # -- threading.Lock shape -----------------------------------------------------------------

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Waits for the lock like :meth:`threading.Lock.acquire`: ``blocking=False`` tries
        once, ``timeout`` (seconds, -1 forever) bounds the wait. Returns False when the lock
        was not taken (no node is left behind). The GIL is released while waiting."""
        try:
            self._acquire(_acquire_timeout(blocking, timeout))
        except LockTimeout:
            return False
        return True

    def release(self) -> None:
        """Releases this owner's most recent hold. Raises :class:`NotHeld` when this thread
        (task) holds nothing."""
        lease = self._latest(self._key())
        if lease is None:
            raise self._not_held()
        lease.release()

    def locked(self) -> bool:
        """True while any thread or task of this process holds the lock through this object
        (or this thread or task holds it through a multi-lock made of it)."""
        with _mu:
            leases = [lease for held in self._held.values() for lease in held if not lease._done]
        return any(lease.state in ("held", "suspended") for lease in leases) or self.hold_count() > 0

    def hold_count(self) -> int:
        """How many holds this thread (task) has on the lock, as the core counts them (0 when
        it holds none, or its lease was lost)."""
        return self._native.hold_count(self._key())

    @property
    def lease(self) -> Optional[Lease]:
        """This thread's (task's) lease while it holds the lock (state ``'held'`` or
        ``'suspended'``), else None. A lost lease is not returned, but still needs releasing
        (``release()`` does that without raising)."""
        lease = self._latest(self._key())
        return lease if lease is not None and lease.state in ("held", "suspended") else None

    def hold(self, timeout: Optional[float] = None) -> "_Holding":
        """A context manager (``with`` and ``async with``) that takes the lock within
        ``timeout`` seconds (None: forever) or raises :class:`LockTimeout`, and yields the
        lease."""
        return _Holding(self, _check_timeout(timeout))

    def __enter__(self) -> Lease:
        return self._acquire(None, entered=True)

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        lease = self._exit()
        if lease is not None:
            lease.release()

    # -- asyncio.Lock shape -------------------------------------------------------------------

    async def _acquire_async(self, timeout: Optional[float], entered: bool = False) -> Lease:
        owner = self._key()
        pending = self._native.acquire_async(owner, timeout)
        try:
            native = await pending
        except BaseException:
            if pending.done() and not pending.cancelled() and pending.exception() is None:
                # Granted, but this task was cancelled before it resumed: nobody will hold the
                # lease, so it is released now (garbage collection never releases a lock).
                pending.result().release_async()
            raise
        return self._keep(native, owner, entered)

    async def acquire_async(self, timeout: Optional[float] = None) -> Lease:
        """Waits for the lock without blocking the event loop and returns the lease; raises
        :class:`LockTimeout` after ``timeout`` seconds (None: forever, 0: one try). Cancelling
        the awaiting task removes the waiting node."""
        return await self._acquire_async(_check_timeout(timeout))

    async def release_async(self) -> None:
        """The asyncio twin of :meth:`release`."""
        lease = self._latest(self._key())
        if lease is None:
            raise self._not_held()
        await lease.release_async()

    async def __aenter__(self) -> Lease:
        return await self._acquire_async(None, entered=True)

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        lease = self._exit()
        if lease is not None:
            await lease.release_async()

    # -- introspection ------------------------------------------------------------------------

    def participants(self) -> List[Participant]:
        """The queue of the lock path, holder first: node, identity, token, library, kind and
        session id of every contender (Curator's and kazoo's too)."""
        return [Participant(*p) for p in self._native.participants()]


class _Holding:
    """``with lock.hold(timeout) as lease`` / ``async with lock.hold(timeout) as lease``."""

    def __init__(self, lock: Lock, timeout: Optional[float]) -> None:
        self._lock = lock
        self._timeout = timeout
        self._lease: Optional[Lease] = None

    def __enter__(self) -> Lease:
        self._lease = self._lock._acquire(self._timeout)
        return self._lease

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        lease, self._lease = self._lease, None
        if lease is not None and not lease._done:
            lease.release()

    async def __aenter__(self) -> Lease:
        self._lease = await self._lock._acquire_async(self._timeout)
        return self._lease

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        lease, self._lease = self._lease, None
        if lease is not None and not lease._done:
            await lease.release_async()


class Semaphore(Lock):
    """A counting semaphore of ``max_leases`` leases on a path (Curator's
    ``InterProcessSemaphoreV2``, same nodes: ``<path>/leases`` and ``<path>/locks``), shaped like
    :class:`threading.Semaphore` and :class:`asyncio.Semaphore`: ``acquire(blocking, timeout)``,
    ``release()``, ``with``, ``async with``. At most N leases exist at once, across every
    process that uses the path with the same N (ZooKeeper does not store N). Never re-entrant:
    each acquire takes a lease of its own, even on the thread that holds one. Each lease has
    its fencing token, state and lost signal as a lock's lease has.

    ``with sem`` releases the lease that this very ``with`` took (per thread, per task under
    asyncio); ``release()`` releases the calling thread's most recent lease, or, as
    :class:`threading.Semaphore` allows, another thread's when this one holds none.
    :meth:`Client.semaphore_mutex` is the semaphore of 1, which excludes Curator's
    ``InterProcessSemaphoreMutex``.
    """

    def __init__(
        self, client: "Client", native: _zklock.NativeLock, max_leases: int
    ) -> None:
        super().__init__(client, native, "semaphore", False)
        self._max_leases = max_leases

    @property
    def max_leases(self) -> int:
        """N: how many leases may exist at once."""
        return self._max_leases

    def __repr__(self) -> str:
        return (f"<zklock.Semaphore {self.path!r} max_leases={self._max_leases} "
                f"locked={self.locked()}>")

    def _key(self) -> int:
        # Every lease is its own (the core never counts a semaphore's holds); the key only
        # tells which `with` took which lease.
        return _owner()

    def _any_lease(self) -> Optional[Lease]:
        lease = self._latest(self._key())
        if lease is not None:
            return lease
        with _mu:
            others = [lease for held in self._held.values() for lease in held if not lease._done]
        return others[0] if others else None

    def _not_held(self) -> NotHeld:
        return NotHeld(f"release of the semaphore {self.path}: this process holds no lease of it")

    def release(self) -> None:
        """Releases a lease: this thread's (task's) most recent one, else the oldest lease of
        this object held by any thread. Raises :class:`NotHeld` when there is none."""
        lease = self._any_lease()
        if lease is None:
            raise self._not_held()
        lease.release()

    async def release_async(self) -> None:
        """The asyncio twin of :meth:`release`."""
        lease = self._any_lease()
        if lease is None:
            raise self._not_held()
        await lease.release_async()


class RwLock:
    """A read/write lock (Curator's ``InterProcessReadWriteLock``): any number of readers or
    one writer. A write holder may take the read side (downgrade); a read holder asking for the
    write side gets :class:`UpgradeNotAllowed` at once. Both sides are re-entrant per thread."""

    def __init__(self, client: "Client", path: str) -> None:
        read, write = client._native.rw_lock(path)
        self._path = path
        self.read: Lock = Lock(client, read, "read", True)
        self.write: Lock = Lock(client, write, "write", True)

    @property
    def path(self) -> str:
        return self._path

    def participants(self) -> List[Participant]:
        return self.read.participants()

    def __repr__(self) -> str:
        return f"<zklock.RwLock {self._path!r}>"


class MultiLock(Lock):
    """Several locks taken as one (Curator's ``InterProcessMultiLock``): all or nothing, one
    deadline for the set, members taken in path order and released in reverse order. Members
    given as :class:`Lock` objects share their re-entrancy with them."""

    def __init__(self, client: "Client", members: Sequence[Lock]) -> None:
        native = client._native.multi_lock([m._native for m in members])
        self._members = list(members)
        super().__init__(client, native, "multi", True)

    @property
    def members(self) -> List[Lock]:
        return list(self._members)

    def participants(self) -> List[Participant]:
        """The queues of every member path, one after the other."""
        return [p for m in self._members for p in m.participants()]


# ---------------------------------------------------------------------------------------------
# Client


class Client:
    """One ZooKeeper session over ``hosts`` (``host:port,host:port/optional/chroot``).

    Connecting blocks (with the GIL released) until the session is established or
    ``connect_timeout`` passes (:class:`ConnectionFailed`). Also a context manager that closes
    the session on exit; a client still open at interpreter exit is closed then, so that its
    lock nodes go at once instead of after the session timeout.

    Secure ZooKeeper: ``tls_ca`` (PEM file of the CA) turns TLS on for every server;
    ``tls_cert`` and ``tls_key`` give a client certificate; ``tls_verify_hostname=False`` turns
    host name checking off. ``sasl_user`` and ``sasl_password`` authenticate with SASL
    DIGEST-MD5 (a wrong password raises :class:`PermissionDenied`).
    """

    def __init__(
        self,
        hosts: str,
        session_timeout: float = 10.0,
        connect_timeout: float = 15.0,
        auth: Optional[str] = None,
        identity: Optional[str] = None,
        acl: str = "open",
        *,
        tls_ca: Optional[Union[str, os.PathLike[str]]] = None,
        tls_cert: Optional[Union[str, os.PathLike[str]]] = None,
        tls_key: Optional[Union[str, os.PathLike[str]]] = None,
        tls_verify_hostname: Optional[bool] = None,
        sasl_user: Optional[str] = None,
        sasl_password: Optional[str] = None,
    ) -> None:
        hosts = _check_str(hosts, "hosts")
        session = _check_number(session_timeout, "session_timeout")
        connect = _check_number(connect_timeout, "connect_timeout")
        auth = _check_optional_str(auth, "auth")
        identity = _check_optional_str(identity, "identity")
        acl = _check_str(acl, "acl")
        if tls_verify_hostname is not None and not isinstance(tls_verify_hostname, bool):
            raise InvalidArgumentType(
                f"tls_verify_hostname must be a bool, got {_type_name(tls_verify_hostname)}"
            )
        _install_log_sink()
        self._native = _zklock.Client(
            hosts,
            session,
            connect,
            auth,
            identity,
            acl,
            _check_optional_path(tls_ca, "tls_ca"),
            _check_optional_path(tls_cert, "tls_cert"),
            _check_optional_path(tls_key, "tls_key"),
            tls_verify_hostname,
            _check_optional_str(sasl_user, "sasl_user"),
            _check_optional_str(sasl_password, "sasl_password"),
        )
        self._finalizer = weakref.finalize(self, self._native.close)

    @classmethod
    async def connect_async(
        cls,
        hosts: str,
        session_timeout: float = 10.0,
        connect_timeout: float = 15.0,
        auth: Optional[str] = None,
        identity: Optional[str] = None,
        acl: str = "open",
        **secure: Any,
    ) -> "Client":
        """Connects without blocking the event loop (the connect runs in the loop's default
        executor). Takes the same keyword arguments as the constructor (``tls_ca``, ...)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None,
            lambda: cls(hosts, session_timeout, connect_timeout, auth, identity, acl, **secure),
        )

    @property
    def hosts(self) -> str:
        return self._native.hosts

    @property
    def session_id(self) -> int:
        """The current ZooKeeper session's id."""
        return self._native.session_id

    @property
    def session_timeout(self) -> float:
        """The session timeout the server granted, in seconds."""
        return self._native.session_timeout

    @property
    def closed(self) -> bool:
        return self._native.closed

    def stats(self) -> Stats:
        """This client's lock statistics (a frozen :class:`Stats`): acquires by outcome
        (``acquired``, ``timed_out``, ``cancelled``, ``failed``), ``wait`` and ``hold`` times
        (:class:`Percentiles`, seconds), leases ``held`` and acquires ``waiting`` now,
        ``suspended`` and ``lost`` events, ``reconnects`` and ``session_expiries``. Works after
        close too."""
        return Stats._of(self._native.stats())

    def close(self) -> None:
        """Closes the session: its leases become lost and the server deletes their nodes.
        Later calls raise :class:`ClientClosed`. Closing twice is fine."""
        self._finalizer.detach()
        self._native.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def lock(self, path: str, reentrant: bool = True) -> Lock:
        """An exclusive lock on ``path`` (Curator's ``InterProcessMutex``, which it excludes,
        also with ``reentrant=False``; for Curator's ``InterProcessSemaphoreMutex`` use
        :meth:`semaphore_mutex`)."""
        path = _check_str(path, "path")
        if not isinstance(reentrant, (bool, int)):
            raise InvalidArgumentType(f"reentrant must be a bool, got {_type_name(reentrant)}")
        return Lock(self, self._native.mutex(path, bool(reentrant)), "mutex", bool(reentrant))

    mutex = lock

    def semaphore(self, path: str, max_leases: int) -> Semaphore:
        """A counting semaphore of ``max_leases`` leases on ``path`` (Curator's
        ``InterProcessSemaphoreV2``; every user of the path must pass the same N)."""
        path = _check_str(path, "path")
        if isinstance(max_leases, bool) or not isinstance(max_leases, int):
            raise InvalidArgumentType(
                f"max_leases must be an int, got {_type_name(max_leases)}"
            )
        return Semaphore(self, self._native.semaphore(path, max_leases), max_leases)

    def semaphore_mutex(self, path: str) -> Semaphore:
        """The semaphore of one lease on ``path``: excludes Curator's
        ``InterProcessSemaphoreMutex`` (and zklock's semaphore mutexes). Not re-entrant: a
        second acquire by the holder waits for itself; any thread may release."""
        return Semaphore(self, self._native.semaphore_mutex(_check_str(path, "path")), 1)

    def revoke(self, path: str, node: Optional[str] = None) -> List[str]:
        """Asks the holder of ``path`` to let go, as Curator's ``Revoker.attemptRevoke`` does:
        sets the data of its node to ``__REVOKE__`` (every lease of a semaphore; ``node``, a
        node's name or full path, asks that one). Returns the nodes asked; raises
        :class:`NotHeld` when nobody holds ``path`` or the node is gone. Holders hear it through
        :attr:`Lease.revoke_requested` / :meth:`Lease.on_revoke` (zklock) or a
        ``RevocationListener`` (Curator); it is a request, the holder decides."""
        return self._native.revoke(_check_str(path, "path"), _check_optional_str(node, "node"))

    def rw_lock(self, path: str) -> RwLock:
        """A read/write lock on ``path``: ``.read`` and ``.write`` are :class:`Lock` objects."""
        return RwLock(self, _check_str(path, "path"))

    def multi_lock(self, locks: Iterable[Union[str, Lock]]) -> MultiLock:
        """Several locks taken as one; give paths (new mutexes) or :class:`Lock` objects."""
        if isinstance(locks, (str, bytes)) or not isinstance(locks, Iterable):
            raise InvalidArgumentType(
                f"multi_lock() needs a list of paths or locks, got {_type_name(locks)}"
            )
        members: List[Lock] = []
        for item in locks:
            if isinstance(item, str):
                members.append(self.lock(item))
            elif isinstance(item, Lock) and not isinstance(item, MultiLock):
                if item._client is not self:
                    raise InvalidArgument(f"the lock on {item.path} belongs to another client")
                members.append(item)
            else:
                raise InvalidArgumentType(
                    f"multi_lock() members must be paths or locks, got {_type_name(item)}"
                )
        return MultiLock(self, members)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"session=0x{self.session_id:x}"
        return f"<zklock.Client {self.hosts!r} {state}>"

