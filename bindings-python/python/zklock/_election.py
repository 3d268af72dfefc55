"""Leader election: :class:`Election` (one participant's side), the asyncio run for leader,
and :class:`LeaderWatch` (who leads, seen from outside)."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, List, Literal, Optional, Type, TypeVar, overload

from . import _zklock
from ._args import _check_timeout, _type_name
from ._errors import Cancelled, ClientClosed, InvalidArgumentType
from ._lease import Lease, Participant, _granted, _leave_async

if TYPE_CHECKING:  # for annotations only: the client module imports this one at run time
    from ._client import Client


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
        lease: Lease = await _granted(self._lead_async(timeout, settled), settled)
        return lease

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
        await _leave_async(lease, exc_type is not None)


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
