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
    Literal,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
    overload,
)

from . import _zklock
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
    "OutcomeUnknown",
    "Conflict",
]

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
        raise InvalidArgumentType(
            f"{what} must be a file path or PEM text (str), got {_type_name(value)}"
        )
    return value


def _check_number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentType(f"{what} must be a number of seconds, got {_type_name(value)}")
    # An int past a float (10**400) is past any clock: infinite, for the core's rule to judge.
    if isinstance(value, int) and abs(value) >= 2**1000:
        return float("inf") if value > 0 else float("-inf")
    return float(value)


def _check_optional_seconds(value: object, what: str) -> Optional[float]:
    """``None``, or a number of seconds (its value is the core's to judge)."""
    return None if value is None else _check_number(value, what)


def _check_timeout(value: object) -> Optional[float]:
    """``None`` waits forever; a number is judged by the core's rule (``Wait::from_secs``)."""
    seconds = None if value is None else _check_number(value, "timeout")
    _zklock.check_timeout(seconds)
    return seconds


# ---------------------------------------------------------------------------------------------
# Observing: logs and stats

from ._logs import install_log_sink as _install_log_sink, logger


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


# ---------------------------------------------------------------------------------------------
# Leases


#: A held lock (the native class, see its docstring): fencing token, node, state, lost signal.
Lease = _zklock.Lease


#: A leadership is a lease (token, state, ``lost``, ``lost_reason``, guarded writes,
#: ``valid_until``): the same class, named for election code.
Leadership = _zklock.Lease

#: A run for leader that ``Election.resign(lead, requeue=True)`` started at the tail of the queue:
#: ``result(timeout=None)`` (the next leadership; :class:`LockTimeout` leaves it running),
#: ``cancel()``, ``done()`` - the shape of ``concurrent.futures.Future``.
LeadAttempt = _zklock.LeadAttempt


class Participant(NamedTuple):
    """One contender in a lock's queue (holder first), or in an election (leader first)."""

    node: str
    identity: str
    token: int
    library: str
    kind: str
    session_id: int
    max_leases: Optional[int] = None
    """A semaphore's N on its ``'lease'`` participants, when known (ZooKeeper does not store
    it: it is the N of the semaphore asked)."""
    style: Optional[str] = None
    """An election participant's layout (its family): ``'selector'``, ``'latch'`` or
    ``'kazoo'``; None for a lock's participants and for read, write and lease nodes."""

    @property
    def id(self) -> str:
        """The participant id of an election (its node's data): ``identity``."""
        return self.identity

    @property
    def family(self) -> Optional[str]:
        """The election layout: ``style``."""
        return self.style


# How long a cancelled asyncio acquire waits for the core to settle the cancel. The core ends a
# cancelled acquire once its node is removed (or the removal was given up on, within a session
# timeout); this only bounds a wait that something broke.
_CANCEL_SETTLE = 5.0


async def _cancel_settled(settled: "asyncio.Future[None]") -> None:
    """Called with the CancelledError of a cancelled acquire in hand: waits until the core has
    ended the acquire (its waiting node deleted), as the blocking acquire's cancel does before
    it returns, so that whoever catches the error finds the node gone (issue 33). At most
    ``_CANCEL_SETTLE`` seconds; a second cancel of the task ends the wait at once."""
    await asyncio.wait({settled}, timeout=_CANCEL_SETTLE)


# ---------------------------------------------------------------------------------------------
# Locks


class Lock(_zklock.NativeLock):
    """A lock on a ZooKeeper path: a mutex, one side of a :class:`RwLock`, or a multi-lock.

    Shaped like :class:`threading.Lock` (``acquire``/``release``/``locked``/``with``) and
    :class:`asyncio.Lock` (``async with``, ``await acquire_async()``). Re-entrant per thread, and
    per task under asyncio; with ``reentrant=False`` every acquire waits for its own place and
    any thread may release. Either way it excludes Curator's ``InterProcessMutex``, not its
    ``InterProcessSemaphoreMutex``: for that one use :meth:`Client.semaphore_mutex`.

    The core counts the holds and decides who contends; the native base class keeps the lease
    of each hold taken through this object (``acquire()`` returns a bool, ``release()`` and
    ``with`` need the lease back), so that ``acquire``, ``release``, ``with``, ``locked``,
    ``hold_count`` and ``lease`` are one native call each. This class adds the asyncio glue.
    """

    __slots__ = ()

    @property
    def client(self) -> "Client":
        """The client this lock was made by."""
        client: Client = super().client
        return client

    def __repr__(self) -> str:
        return f"<zklock.Lock {self.kind} {self.path!r} locked={self.locked()}>"

    def hold(self, timeout: Optional[float] = None) -> "_Holding":
        """A context manager (``with`` and ``async with``) that takes the lock within
        ``timeout`` seconds (None: forever) or raises :class:`LockTimeout`, and yields the
        lease."""
        return _Holding(self, _check_timeout(timeout))

    # -- asyncio.Lock shape -------------------------------------------------------------------

    async def _acquire_async_as(self, timeout: Optional[float], entered: bool = False) -> Lease:
        owner = self._key()
        settled: "asyncio.Future[None]" = asyncio.get_running_loop().create_future()
        pending = self._acquire_async(owner, timeout, settled)
        try:
            native = await pending
        except BaseException:
            if pending.done() and not pending.cancelled() and pending.exception() is None:
                # Granted, but this task was cancelled before it resumed: nobody will hold the
                # lease, so it is released now (garbage collection never releases a lock).
                pending.result().release_async()
            elif pending.cancelled():
                await _cancel_settled(settled)
            raise
        return self._keep(native, owner, entered)

    async def acquire_async(self, timeout: Optional[float] = None) -> Lease:
        """Waits for the lock without blocking the event loop and returns the lease; raises
        :class:`LockTimeout` after ``timeout`` seconds (None: forever, 0: one try). Cancelling
        the awaiting task removes the waiting node."""
        return await self._acquire_async_as(_check_timeout(timeout))

    async def release_async(self) -> None:
        """The asyncio twin of :meth:`release`."""
        await self._release_target().release_async()

    async def __aenter__(self) -> Lease:
        return await self._acquire_async_as(None, entered=True)

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        lease = self._exit()
        if lease is not None:
            await lease.release_async()
            lease._leave_scope(exc_type is not None)

    # -- introspection ------------------------------------------------------------------------

    def participants(self, timeout: Optional[float] = None) -> List[Participant]:
        """The queue of the lock path, holder first: node, identity, token, library, kind and
        session id of every contender (Curator's and kazoo's too). ``timeout`` (seconds, by the
        acquire's rule: None or -1 no bound) raises :class:`LockTimeout` when the listing, waiting
        for a reconnect included, takes longer."""
        return [Participant(*p) for p in self._participants(_check_timeout(timeout))]


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
            lease._leave_scope(exc_type is not None)

    async def __aenter__(self) -> Lease:
        self._lease = await self._lock._acquire_async_as(self._timeout)
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
            lease._leave_scope(exc_type is not None)


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

    __slots__ = ("_max_leases",)
    _max_leases: int

    def __new__(cls, client: "Client", native: _zklock.NativeLock, max_leases: int) -> "Semaphore":
        # Never re-entrant; the native base keeps each lease per thread (task) all the same, to
        # know which `with` took which, and release() falls back to any thread's lease.
        self = super().__new__(cls, client, native, "semaphore", False)
        self._max_leases = max_leases
        return self

    @property
    def max_leases(self) -> int:
        """N: how many leases may exist at once."""
        return self._max_leases

    def __repr__(self) -> str:
        return (f"<zklock.Semaphore {self.path!r} max_leases={self._max_leases} "
                f"locked={self.locked()}>")


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

    def participants(self, timeout: Optional[float] = None) -> List[Participant]:
        return self.read.participants(timeout)

    def __repr__(self) -> str:
        return f"<zklock.RwLock {self._path!r}>"


class MultiLock(Lock):
    """Several locks taken as one (Curator's ``InterProcessMultiLock``): all or nothing, one
    deadline for the set, members taken in path order and released in reverse order. Members
    given as :class:`Lock` objects share their re-entrancy with them."""

    __slots__ = ("_members",)
    _members: List[Lock]

    def __new__(cls, client: "Client", members: Sequence[Lock]) -> "MultiLock":
        native = client._native.multi_lock(list(members))
        self = super().__new__(cls, client, native, "multi", True)
        self._members = list(members)
        return self

    @property
    def members(self) -> List[Lock]:
        return list(self._members)

    def participants(self, timeout: Optional[float] = None) -> List[Participant]:
        """The queues of every member path, one after the other."""
        return [p for m in self._members for p in m.participants(timeout)]


# ---------------------------------------------------------------------------------------------
# Leader election

_T = TypeVar("_T")


class Election(_zklock.NativeElection):
    """One participant's side of a leader election on a ZooKeeper path (:meth:`Client.election`).

    The layout is the core's ``style``: ``'latch'`` (the default: Curator's ``LeaderLatch``),
    ``'selector'`` (Curator's ``LeaderSelector``) or ``'kazoo'`` (kazoo's ``Election``), each
    byte-compatible with its peer library on the same path. A participant refuses to lead beside
    a node of another layout (:class:`Conflict`, naming the node). ``id`` is the participant id,
    its node's data (default: the client's identity).

    A leadership is a :class:`Lease` (:data:`Leadership`): fencing ``token``, ``state``, the
    ``lost`` event, ``lost_reason``, ``guarded_write``, ``valid_until()``. Its lost signal fires
    before anyone else can lead (given bounded clock-rate drift); a paused process cannot act on
    it, so a resource checks the token (:meth:`Client.check`, guarded writes).

    Waiting releases the GIL; Ctrl-C and :meth:`cancel` (from another thread) end it and leave
    no node behind.
    """

    __slots__ = ()

    @property
    def client(self) -> "Client":
        """The client this election was made by."""
        client: Client = super().client
        return client

    def __repr__(self) -> str:
        return f"<zklock.Election {self.style} {self.path!r} id={self.id!r}>"

    def lead(self, timeout: Optional[float] = None) -> Lease:
        """Waits until this participant leads and returns the leadership; raises
        :class:`LockTimeout` after ``timeout`` seconds (None: forever, 0: one try),
        :class:`Cancelled` after :meth:`cancel`, :class:`Conflict` beside another layout. The
        leadership is a context manager: ``with election.lead(timeout=5) as lead:`` resigns on
        exit."""
        return self._lead(_check_timeout(timeout))

    async def _lead_async_as(self, timeout: Optional[float]) -> Lease:
        settled: "asyncio.Future[None]" = asyncio.get_running_loop().create_future()
        pending = self._lead_async(timeout, settled)
        try:
            return await pending
        except BaseException:
            if pending.done() and not pending.cancelled() and pending.exception() is None:
                # Led, but this task was cancelled before it resumed: nobody will hold the
                # leadership, so it is resigned now.
                pending.result().release_async()
            elif pending.cancelled():
                await _cancel_settled(settled)
            raise

    def lead_async(self, timeout: Optional[float] = None) -> "_LeadingAsync":
        """The asyncio run for leader: ``lead = await election.lead_async(timeout)``, or
        ``async with election.lead_async(timeout) as lead:`` (resigns on exit). Never blocks the
        event loop; cancelling the awaiting task removes the node."""
        return _LeadingAsync(self, _check_timeout(timeout))

    def participants(self) -> List[Participant]:
        """Everyone running, in election order (the leader first), with ``style`` (family),
        ``id``, ``session_id``, ``token``, ``node``, ``library`` and ``kind``; nodes of other
        layouts are listed too (they make :meth:`lead` raise :class:`Conflict`)."""
        return [Participant(*p) for p in self._participants()]

    def leader(self) -> Optional[Participant]:
        """The leader now (the first participant of this layout), None when nobody runs."""
        found = self._leader()
        return None if found is None else Participant(*found)

    @overload
    def run(
        self,
        fn: Callable[[Lease], _T],
        *,
        requeue: Literal[False] = False,
        timeout: Optional[float] = None,
    ) -> _T: ...

    @overload
    def run(
        self,
        fn: Callable[[Lease], _T],
        *,
        requeue: bool,
        timeout: Optional[float] = None,
    ) -> Optional[_T]: ...

    def run(
        self,
        fn: Callable[[Lease], _T],
        *,
        requeue: bool = False,
        timeout: Optional[float] = None,
    ) -> Optional[_T]:
        """kazoo's ``Election.run``: blocks until leader, calls ``fn(lead)``, resigns after,
        and returns what ``fn`` returned. An exception from ``fn`` resigns and propagates.

        ``requeue=True`` (Curator's ``autoRequeue``): after each call, resigns and runs again at
        the tail of the queue, calling ``fn`` at every new leadership, until ``fn`` raises or
        :meth:`cancel` ends a wait (then ``run`` returns ``fn``'s last value, or None).

        ``timeout`` bounds each wait for leadership (:class:`LockTimeout`). If the leadership is
        lost while ``fn`` runs, ``fn`` is not stopped (Python cannot kill a thread): ``lead.lost``
        (a ``threading.Event``) is set, ``lead.on_lost`` callbacks run, guarded writes raise
        :class:`LockLost`, and once ``fn`` returned ``run`` raises :class:`LockLost` (the rule of
        every scoped hold; with ``requeue=True`` it runs for leader again instead). Long-running ``fn``
        should check ``lead.lost.is_set()`` between steps and pass ``lead.token`` to resources.
        """
        if not callable(fn):
            raise InvalidArgumentType(f"run() needs a callable, got {_type_name(fn)}")
        if not isinstance(requeue, (bool, int)):
            raise InvalidArgumentType(f"requeue must be a bool, got {_type_name(requeue)}")
        timeout = _check_timeout(timeout)
        last: Optional[_T] = None
        while True:
            try:
                lead = self._lead(timeout)
            except Cancelled:
                if requeue and last is not None:
                    return last
                raise
            try:
                last = fn(lead)
            except BaseException:
                if not lead._done:
                    lead.release()
                raise
            if not lead._done:
                lead.release()
                if not requeue:
                    # A scoped hold's rule (docs/contract.md), as Node's run: lost while fn ran
                    # raises LockLost; with requeue the next round runs instead.
                    lead._leave_scope(False)
            if not requeue:
                return last


class _LeadingAsync:
    """``await election.lead_async(t)`` / ``async with election.lead_async(t) as lead``."""

    def __init__(self, election: Election, timeout: Optional[float]) -> None:
        self._election = election
        self._timeout = timeout
        self._lease: Optional[Lease] = None

    def __await__(self) -> Any:
        return self._election._lead_async_as(self._timeout).__await__()

    async def __aenter__(self) -> Lease:
        self._lease = await self._election._lead_async_as(self._timeout)
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
            lease._leave_scope(exc_type is not None)


class LeaderWatch(_zklock.NativeLeaderWatch):
    """Who leads an election, seen from outside it (:meth:`Client.observe_leader`).

    An iterator: the first item is the leader now, then one item per change; each item is the
    leader's :class:`Participant`, or None when nobody leads. ``for leader in watch:`` waits with
    the GIL released (Ctrl-C interrupts it) and ends when the client is closed. ``next(timeout)``
    raises :class:`LockTimeout` when nothing changed within ``timeout`` seconds. Under asyncio:
    ``async for leader in watch`` and ``await watch.next_async(timeout)``.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<zklock.LeaderWatch {self.path!r}>"

    def next(self, timeout: Optional[float] = None) -> Optional[Participant]:
        """The leader now at the first call, then the next change within ``timeout`` seconds
        (None: forever)."""
        found = self._next(_check_timeout(timeout))
        return None if found is None else Participant(*found)

    def __iter__(self) -> "LeaderWatch":
        return self

    def __next__(self) -> Optional[Participant]:
        try:
            return self.next()
        except ClientClosed:
            raise StopIteration from None

    async def next_async(self, timeout: Optional[float] = None) -> Optional[Participant]:
        """The asyncio twin of :meth:`next` (cancelling the awaiting task ends the wait)."""
        found = await self._next_async(_check_timeout(timeout))
        return None if found is None else Participant(*found)

    def __aiter__(self) -> "LeaderWatch":
        return self

    async def __anext__(self) -> Optional[Participant]:
        try:
            return await self.next_async()
        except ClientClosed:
            raise StopAsyncIteration from None


# ---------------------------------------------------------------------------------------------
# Client


class Client:
    """One ZooKeeper session over ``hosts`` (``host:port,host:port/optional/chroot``).

    Connecting blocks (with the GIL released) until the session is established or
    ``connect_timeout`` passes (:class:`ConnectionFailed`): the client connects here, eagerly,
    so an acquire's ``timeout`` starts after that. When a session ends later (expired, given up),
    the next acquire opens a new one within its own ``timeout``. Also a context manager that closes
    the session on exit; a client still open at interpreter exit is closed then, so that its
    lock nodes go at once instead of after the session timeout.

    Secure ZooKeeper: ``tls_ca`` (PEM file of the CA) turns TLS on for every server;
    ``tls_cert`` and ``tls_key`` give a client certificate. Each takes a path or PEM text itself
    (a ``str`` holding ``-----BEGIN ``), which no exception ever shows; ``tls_verify_hostname=False`` turns
    host name checking off. ``sasl_user`` and ``sasl_password`` authenticate with SASL
    DIGEST-MD5 (a wrong password raises :class:`PermissionDenied`).

    ``server_tick`` (seconds) is the ensemble's ``tickTime``; the lost signal's deadline depends on
    it (docs/safety.md). Default: ZooKeeper's sample 2 s, or a fifth of the session timeout when
    that is shorter. A session shorter than four ticks raises :class:`InvalidArgument`.
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
        server_tick: Optional[float] = None,
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
            None if server_tick is None else _check_number(server_tick, "server_tick"),
        )
        self._finalizer = weakref.finalize(self, self._native.close)
        # add_listener's callables and their ids in the core.
        self._listeners: Dict[Callable[[str], object], int] = {}
        self._listeners_lock = threading.Lock()

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
    def id(self) -> int:
        """This client's id in the process (never reused): ``record.zklock["client"]`` of its
        log records."""
        return self._native.id

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

    # -- connection state (kazoo's add_listener) ----------------------------------------------

    @property
    def state(self) -> str:
        """The connection now: ``'connected'``, ``'suspended'`` (broken; the session may live,
        its leases are suspended) or ``'lost'`` (the session ended, or the client was closed)."""
        return self._native.connection_state

    def add_listener(self, listener: Callable[[str], object]) -> None:
        """Calls ``listener(state)`` with the current state and at every change, on zklock's
        callback thread (kazoo's ``add_listener``): ``'lost'`` once per session, then
        ``'connected'`` when a later acquire opens a new session; nothing after the ``'lost'``
        of a closed client. An exception it raises goes to ``sys.unraisablehook``. Adding the
        same callable twice adds it once."""
        with self._listeners_lock:
            if listener not in self._listeners:
                self._listeners[listener] = self._native._on_connection(listener)

    def remove_listener(self, listener: Callable[[str], object]) -> None:
        """Stops calling ``listener`` (a call already on its way may still run); a listener
        that was never added is ignored, as in kazoo."""
        with self._listeners_lock:
            id = self._listeners.pop(listener, None)
        if id is not None:
            self._native._remove_connection_listener(id)

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

    def lock(
        self, path: str, reentrant: bool = True, *, max_hold: Optional[float] = None
    ) -> Lock:
        """An exclusive lock on ``path`` (Curator's ``InterProcessMutex``, which it excludes,
        also with ``reentrant=False``; for Curator's ``InterProcessSemaphoreMutex`` use
        :meth:`semaphore_mutex`). ``max_hold`` (seconds, None: no limit) ends every lease of
        it after that long: lost, ``lost_reason`` containing ``max-hold``, node deleted."""
        path = _check_str(path, "path")
        if not isinstance(reentrant, (bool, int)):
            raise InvalidArgumentType(f"reentrant must be a bool, got {_type_name(reentrant)}")
        native = self._native.mutex(
            path, bool(reentrant), _check_optional_seconds(max_hold, "max_hold")
        )
        return Lock(self, native, "mutex", bool(reentrant))

    mutex = lock

    def semaphore(
        self, path: str, max_leases: int, *, max_hold: Optional[float] = None
    ) -> Semaphore:
        """A counting semaphore of ``max_leases`` leases on ``path`` (Curator's
        ``InterProcessSemaphoreV2``; every user of the path must pass the same N).
        ``max_hold``: as for :meth:`lock`, per lease."""
        path = _check_str(path, "path")
        if isinstance(max_leases, bool) or not isinstance(max_leases, int):
            raise InvalidArgumentType(
                f"max_leases must be an int, got {_type_name(max_leases)}"
            )
        native = self._native.semaphore(
            path, max_leases, _check_optional_seconds(max_hold, "max_hold")
        )
        return Semaphore(self, native, max_leases)

    def semaphore_mutex(self, path: str, *, max_hold: Optional[float] = None) -> Semaphore:
        """The semaphore of one lease on ``path``: excludes Curator's
        ``InterProcessSemaphoreMutex`` (and zklock's semaphore mutexes). Not re-entrant: a
        second acquire by the holder waits for itself; any thread may release. ``max_hold``:
        as for :meth:`lock`."""
        native = self._native.semaphore_mutex(
            _check_str(path, "path"), _check_optional_seconds(max_hold, "max_hold")
        )
        return Semaphore(self, native, 1)

    def election(
        self,
        path: str,
        *,
        style: Optional[str] = None,
        id: Optional[str] = None,
        max_hold: Optional[float] = None,
    ) -> Election:
        """A participant in the leader election on ``path`` (see :class:`Election`): ``style``
        ``'latch'`` (None: the core's default, Curator's ``LeaderLatch``), ``'selector'`` (Curator's
        ``LeaderSelector``) or ``'kazoo'`` (kazoo's ``Election``); ``id`` the participant id
        (default: the client's identity; at most 1024 bytes, no NUL); ``max_hold`` seconds
        (None: no limit) ends every leadership after that long (lost, reason ``max-hold``)."""
        native = self._native.election(
            _check_str(path, "path"),
            _check_optional_str(style, "style"),
            _check_optional_str(id, "id"),
            _check_optional_seconds(max_hold, "max_hold"),
        )
        return Election(self, native)

    def observe_leader(self, path: str) -> LeaderWatch:
        """Watches who leads the election on ``path`` without running (etcd's ``Observe``,
        which cannot report that nobody leads; this can): a :class:`LeaderWatch` iterator of
        the leader now, then every change (None: no leader)."""
        return LeaderWatch(self._native.observe_leader(_check_str(path, "path")))

    def check(self, path: str, token: int, max_leases: Optional[int] = None) -> bool:
        """Whether ``token`` is the fencing token of a current holder of the lock on ``path``
        (or of its election's leader): Chubby's ``CheckSequencer``, for a resource that gets a
        token from a client. ``max_leases``: a semaphore's N (leases beyond it do not count).
        The GIL is released meanwhile."""
        path = _check_str(path, "path")
        if isinstance(token, bool) or not isinstance(token, int):
            raise InvalidArgumentType(f"token must be an int, got {_type_name(token)}")
        if max_leases is not None and (
            isinstance(max_leases, bool) or not isinstance(max_leases, int)
        ):
            raise InvalidArgumentType(
                f"max_leases must be an int, got {_type_name(max_leases)}"
            )
        return self._native.check(path, token, max_leases)

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
                if item.client is not self:
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

