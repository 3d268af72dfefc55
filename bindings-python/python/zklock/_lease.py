"""What an acquire hands out and what a queue lists: the lease (a leadership is one), a guarded
write, a run for leader requeued, a :class:`Participant`; and how an asyncio acquire that was
cancelled waits for the core to settle it. Used by the locks and the elections alike."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, NamedTuple, Optional, Tuple, Union

from . import _zklock


#: A guarded write: ``("create", path, data)``, ``("set_data", path, data)`` or
#: ``("delete", path)``.
GuardedWrite = Union[Tuple[str, str], Tuple[str, str, bytes]]


#: A held lock (the native class, see its docstring): fencing token, node, state, lost signal.
Lease = _zklock.Lease


#: A leadership is a lease (token, state, ``lost``, ``lost_reason``, guarded writes,
#: ``valid_until``): the same class, named for election code.
Leadership = _zklock.Lease

#: A shared counter on Curator's layouts (``Client.counter``): ``path``, ``width``, ``get()``,
#: ``compare_and_set(seen, value)``; ``Lease.guarded_increment(counter, by)`` moves it only while
#: a lock is held.
Counter = _zklock.Counter

#: A count and the data version it was read at (``version == -1``: the node does not exist yet).
Count = _zklock.Count

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


async def _granted(pending: "asyncio.Future[Any]", settled: "asyncio.Future[None]") -> Any:
    """Awaits a native acquire (or run for leader) and undoes it when the awaiting task is
    cancelled: a grant that came in just before the cancel is released at once (nobody will
    hold it, and garbage collection never releases a lock); a cancel of the wait itself waits
    for the core to settle it (:func:`_cancel_settled`). The error goes on either way."""
    try:
        return await pending
    except BaseException:
        if pending.done() and not pending.cancelled() and pending.exception() is None:
            pending.result().release_async()
        elif pending.cancelled():
            await _cancel_settled(settled)
        raise


def _leave(lease: Optional[Lease], failed: bool) -> None:
    """The end of a ``with`` block that holds ``lease``: released, then the scope's rule
    (a loss while in the block is loud unless the block already raised)."""
    if lease is not None and not lease._done:
        lease.release()
        lease._leave_scope(failed)


async def _leave_async(lease: Optional[Lease], failed: bool) -> None:
    """:func:`_leave` for ``async with``."""
    if lease is not None and not lease._done:
        await lease.release_async()
        lease._leave_scope(failed)
