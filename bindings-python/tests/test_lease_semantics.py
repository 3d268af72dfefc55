"""Issue 33's lease semantics in the Python face: ``valid_until()`` / ``time_left()`` never
outlast ``max_hold``; a lease lost before its release keeps reading 'lost' and its reason
after every way out (``with lock``, ``with lock.hold()``, ``with election.lead()``, an explicit
``release()``, their asyncio forms); leaving a scoped hold after a loss raises ``LockLost``
unless the body raised; an election object resigns only its own leadership and refuses a
second lead while it leads."""

from __future__ import annotations

import asyncio
import time
from typing import Callable, ContextManager

import pytest

import zklock

WAIT = 10.0
MAX_HOLD = 1.0


@pytest.mark.parametrize("make", ["lock", "semaphore_mutex", "election"])
def test_time_left_right_after_the_acquire_is_at_most_the_maximum_hold(
    client: zklock.Client, path: str, make: str
) -> None:
    held: ContextManager[zklock.Lease]
    if make == "lock":
        held = client.lock(path, max_hold=MAX_HOLD).hold(WAIT)
    elif make == "semaphore_mutex":
        held = client.semaphore_mutex(path, max_hold=MAX_HOLD).hold(WAIT)
    else:
        held = client.election(path, id="a", max_hold=MAX_HOLD).lead(WAIT)
    assert client.session_timeout > 2 * MAX_HOLD, "the session is not what bounds it"
    with pytest.raises(zklock.LockLost):  # the maximum hold ends it inside the block
        with held as lease:
            acquired = time.monotonic()
            left = lease.time_left()
            until = lease.valid_until()
            assert left is not None and 0 < left <= MAX_HOLD, left
            assert until is not None and until <= acquired + MAX_HOLD + 0.01, until - acquired
            assert lease.lost.wait(5.0), "the maximum hold ends the lease"
            assert time.monotonic() >= until, "lost no earlier than valid_until said"


def close_inside(client: zklock.Client) -> Callable[[zklock.Lease], None]:
    def body(lease: zklock.Lease) -> None:
        client.close()
        assert lease.lost.wait(5.0)

    return body


@pytest.mark.parametrize("form", ["with lock", "with lock.hold()", "with election.lead()"])
def test_leaving_a_with_block_after_a_loss_raises_lock_lost_and_the_lease_stays_lost(
    servers: str, path: str, form: str
) -> None:
    own = zklock.Client(servers)
    held: ContextManager[zklock.Lease]
    if form == "with lock":
        held = own.lock(path)
    elif form == "with lock.hold()":
        held = own.lock(path).hold(WAIT)
    else:
        held = own.election(path, id="a").lead(WAIT)
    with pytest.raises(zklock.LockLost) as raised:
        with held as lease:
            close_inside(own)(lease)
    assert "was lost before the with block ended" in str(raised.value)
    assert lease.state == "lost", "lost is final"
    assert lease.lost_reason is not None and "closed" in lease.lost_reason
    assert lease.lost.is_set()


def test_an_exception_from_the_body_wins_over_the_loss_at_the_end_of_the_block(
    servers: str, path: str
) -> None:
    own = zklock.Client(servers)
    with pytest.raises(KeyError):
        with own.lock(path).hold(WAIT) as lease:
            close_inside(own)(lease)
            raise KeyError("the body's own failure")
    assert lease.state == "lost"


def test_an_explicit_release_of_a_lost_lease_says_was_lost_and_the_lease_stays_lost(
    servers: str, path: str
) -> None:
    own = zklock.Client(servers)
    lock = own.lock(path)
    assert lock.acquire(timeout=WAIT)
    lease = lock.lease
    assert lease is not None
    close_inside(own)(lease)
    lock.release()
    assert lease.state == "lost"
    assert lease.lost_reason is not None
    with pytest.raises(zklock.NotHeld):
        lease.release()


def test_a_held_lease_leaves_its_block_quietly_and_reads_released(
    client: zklock.Client, path: str
) -> None:
    with client.lock(path).hold(WAIT) as lease:
        assert lease.state == "held"
    assert lease.state == "released"
    assert lease.lost_reason is None


def test_async_with_blocks_after_a_loss_raise_lock_lost_and_the_lease_stays_lost(
    servers: str, path: str
) -> None:
    async def main() -> None:
        for n, form in enumerate(["async with lock", "async with lock.hold()", "lead_async"]):
            own = zklock.Client(servers)
            p = f"{path}-{n}"
            with pytest.raises(zklock.LockLost):
                if form == "async with lock":
                    async with own.lock(p) as lease:
                        own.close()
                elif form == "async with lock.hold()":
                    async with own.lock(p).hold(WAIT) as lease:
                        own.close()
                else:
                    async with own.election(p, id="a").lead_async(WAIT) as lease:
                        own.close()
            assert lease.state == "lost", form
            assert lease.lost_reason is not None, form

    asyncio.run(main())


def test_another_election_object_cannot_resign_a_leadership_which_keeps_leading(
    client: zklock.Client, other: zklock.Client, path: str
) -> None:
    ours = client.election(path, id="a")
    with ours.lead(WAIT) as lead:
        for theirs in (client.election(path, id="b"), other.election(path, id="c")):
            with pytest.raises(zklock.InvalidArgument, match="not taken through this election"):
                theirs.resign(lead)
        assert lead.state == "held"
        leader = ours.leader()
        assert leader is not None and leader.id == "a"
    assert lead.state == "released"


def test_a_second_lead_while_leading_is_refused_at_once(client: zklock.Client, path: str) -> None:
    election = client.election(path, id="a")
    with election.lead(WAIT):
        started = time.monotonic()
        with pytest.raises(zklock.InvalidArgument, match="already leads"):
            election.lead(30.0)
        assert time.monotonic() - started < 5.0, "refused, not timed out"
        assert len(election.participants()) == 1
    with election.lead(WAIT) as again:
        assert again.state == "held", "leads again after resigning"
