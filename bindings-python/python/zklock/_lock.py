"""The locks: :class:`Lock` (a mutex, a side of a read/write lock), :class:`Semaphore`,
:class:`RwLock` and :class:`MultiLock`, with the asyncio glue over the native classes."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Type

from . import _zklock
from ._args import _check_timeout
from ._lease import Lease, Participant, _granted, _leave, _leave_async

if TYPE_CHECKING:  # for annotations only: the client module imports this one at run time
    from ._client import Client


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

    async def _acquire_async_as(
        self,
        timeout: Optional[float],
        entered: bool = False,
        on_queued: Optional[Callable[[int], object]] = None,
    ) -> Lease:
        owner = self._key()
        loop = asyncio.get_running_loop()
        settled: "asyncio.Future[None]" = loop.create_future()
        # Not callable: passed as it is, for the native check's InvalidArgument.
        told = on_queued if on_queued is None or not callable(on_queued) else _on_loop(
            loop, on_queued)
        pending = self._acquire_async(owner, timeout, settled, told)
        native = await _granted(pending, settled)
        return self._keep(native, owner, entered)

    async def acquire_async(
        self,
        timeout: Optional[float] = None,
        on_queued: Optional[Callable[[int], object]] = None,
    ) -> Lease:
        """Waits for the lock without blocking the event loop and returns the lease; raises
        :class:`LockTimeout` after ``timeout`` seconds (None: forever, 0: one try). Cancelling
        the awaiting task removes the waiting node. ``on_queued(position)`` is called on the
        event loop's thread when the acquire is queued behind others and each time its place
        changes (how many contenders must leave first), never when it holds at once."""
        return await self._acquire_async_as(_check_timeout(timeout), on_queued=on_queued)

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


def _on_loop(loop: asyncio.AbstractEventLoop,
             on_queued: Callable[[int], object]) -> Callable[[int], None]:
    """``on_queued`` called on ``loop``'s thread (nothing once the loop is closed)."""

    def told(position: int) -> None:
        try:
            loop.call_soon_threadsafe(on_queued, position)
        except RuntimeError:
            pass  # the loop is closed: nobody awaits the acquire any more

    return told


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
        _leave(lease, exc_type is not None)

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
        await _leave_async(lease, exc_type is not None)


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

    def __init__(self, client: "Client", path: str, max_hold: Optional[float] = None) -> None:
        read, write = client._native.rw_lock(path, max_hold)
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

    def __new__(
        cls,
        client: "Client",
        members: Sequence[Lock],
        max_hold: Optional[float] = None,
        hold_ceiling: Optional[float] = None,
    ) -> "MultiLock":
        native = client._native.multi_lock(list(members), max_hold, hold_ceiling)
        self = super().__new__(cls, client, native, "multi", True)
        self._members = list(members)
        return self

    @property
    def members(self) -> List[Lock]:
        return list(self._members)

    def participants(self, timeout: Optional[float] = None) -> List[Participant]:
        """The queues of every member path, one after the other."""
        return [p for m in self._members for p in m.participants(timeout)]
