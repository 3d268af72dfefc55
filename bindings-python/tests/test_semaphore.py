"""Semaphores (issue 14): Semaphore(N) and the semaphore mutex on Curator's layout, and
revocation, through the Python face against a real ZooKeeper."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import List

import pytest

import zklock


def lease_nodes(client: zklock.Client, path: str) -> List[zklock.Participant]:
    return [p for p in client.semaphore(path, 1).participants() if p.kind == "lease"]


def test_a_semaphore_of_two_never_has_more_than_two_holders_among_four_contenders(
    servers, path
):
    clients = [zklock.Client(servers) for _ in range(4)]
    mu = threading.Lock()
    inside: List[int] = []
    most = [0]
    tokens: List[int] = []
    errors: List[BaseException] = []

    def contend(client: zklock.Client) -> None:
        sem = client.semaphore(path, 2)
        try:
            for _ in range(3):
                with sem.hold(60) as lease:
                    with mu:
                        inside.append(1)
                        most[0] = max(most[0], len(inside))
                        tokens.append(lease.token)
                    time.sleep(0.15)
                    with mu:
                        inside.pop()
        except BaseException as e:  # handed to the test's thread
            errors.append(e)

    threads = [threading.Thread(target=contend, args=(c,)) for c in clients]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        assert len(tokens) == 12, tokens
        assert most[0] == 2, f"at most 2 holders at once, and 2 did hold together: saw {most[0]}"
        assert len(set(tokens)) == 12, "every lease has a token of its own"
        assert lease_nodes(clients[0], path) == []
    finally:
        for c in clients:
            c.close()


def test_a_semaphore_mutex_excludes_another_client_and_its_own_holder(client, other, path):
    mine = client.semaphore_mutex(path)
    theirs = other.semaphore_mutex(path)
    assert mine.max_leases == 1 and mine.kind == "semaphore"
    with mine as lease:
        assert lease.state == "held" and lease.token > 0
        assert not theirs.acquire(blocking=False)
        # Not re-entrant (Curator's InterProcessSemaphoreMutex): the holder waits for itself.
        assert not mine.acquire(blocking=False)
        assert mine.hold_count() == 0
        # Any thread may release it, as Curator's can be.
        t = threading.Thread(target=mine.release)
        t.start()
        t.join(30)
        assert lease.state == "released"
        assert theirs.acquire(timeout=30)
        theirs.release()
    assert lease_nodes(client, path) == []


def test_try_and_timeout_on_a_full_semaphore_return_false_and_leave_no_node(
    client, other, path
):
    sem = other.semaphore(path, 1)
    with client.semaphore(path, 1) as lease:
        started = time.monotonic()
        assert sem.acquire(blocking=False) is False
        assert sem.acquire(timeout=0.5) is False
        assert time.monotonic() - started >= 0.5
        with pytest.raises(zklock.LockTimeout):
            with sem.hold(0.3):
                pass

        async def bounded() -> None:
            await sem.acquire_async(timeout=0.3)

        with pytest.raises(zklock.LockTimeout):
            asyncio.run(bounded())
        holders = lease_nodes(client, path)
        assert [p.node for p in holders] == [lease.path], holders
        assert holders[0].max_leases == 1 and holders[0].token == lease.token
        assert not sem.locked()
    assert lease_nodes(client, path) == []


def test_async_with_on_a_semaphore_mutex_serialises_tasks(client, path):
    sem = client.semaphore_mutex(path)
    inside: List[int] = []
    most = [0]

    async def task() -> int:
        async with sem as lease:
            inside.append(1)
            most[0] = max(most[0], len(inside))
            await asyncio.sleep(0.1)
            inside.pop()
            return lease.token

    async def main() -> List[int]:
        return list(await asyncio.gather(*(task() for _ in range(3))))

    tokens = asyncio.run(main())
    assert most[0] == 1
    assert len(set(tokens)) == 3
    assert lease_nodes(client, path) == []


def test_revocation_reaches_the_holder_as_a_callback_and_an_event(client, other, path):
    sem = client.semaphore(path, 2)
    with sem as lease:
        heard = threading.Event()
        called_on: List[str] = []

        def on_revoke() -> None:
            called_on.append(threading.current_thread().name)
            heard.set()

        lease.on_revoke(on_revoke)
        event = lease.revoke_requested
        assert not event.is_set()
        asked = other.revoke(path)
        assert asked == [lease.path]
        assert heard.wait(10), "the holder's on_revoke was not called"
        assert event.wait(10), "the holder's revoke_requested event was not set"
        assert called_on[0] != threading.main_thread().name
        # Only a request: the lease is still held until its holder lets go.
        assert lease.state == "held"
        # A listener that comes after the request still hears it.
        assert lease.revoke_requested.is_set()
    with pytest.raises(zklock.NotHeld):
        other.revoke(path)


def test_revoking_one_node_asks_only_its_holder(client, other, path):
    a = client.semaphore(path, 2)
    b = other.semaphore(path, 2)
    with a as first, b as second:
        asked = other.revoke(path, first.path.rsplit("/", 1)[1])
        assert asked == [first.path]
        assert first.revoke_requested.wait(10)
        time.sleep(0.3)
        assert not second.revoke_requested.is_set()
        with pytest.raises(zklock.NotHeld):
            other.revoke(path, "no-such-node")


def test_a_semaphore_lease_whose_session_expires_is_lost_and_its_place_freed(
    harness, other, path
):
    holder = zklock.Client(harness.proxy, session_timeout=2.0, identity="doomed")
    try:
        lease = holder.semaphore(path, 1).hold().__enter__()
        fired = threading.Event()
        lease.on_lost(fired.set)
        harness.command("blackhole")
        try:
            assert lease.lost.wait(20), f"lease never lost (state {lease.state})"
            assert fired.wait(10)
            assert lease.state == "lost"
            # The server expired the holder's session: its lease node went, a new holder fits.
            with other.semaphore(path, 1).hold(30) as theirs:
                assert theirs.token > lease.token
        finally:
            harness.command("heal")
        assert lease.release() == "was-lost"
    finally:
        holder.close()


@pytest.mark.parametrize("n", [0, -1, 2**31, 2**70])
def test_a_number_of_leases_out_of_range_is_invalid_argument(client, path, n):
    with pytest.raises(zklock.InvalidArgument, match=str(n)):
        client.semaphore(path, n)


@pytest.mark.parametrize("n", ["2", 2.0, True, None])
def test_a_number_of_leases_of_the_wrong_type_is_invalid_argument_type(client, path, n):
    with pytest.raises(zklock.InvalidArgumentType):
        client.semaphore(path, n)  # type: ignore[arg-type]


def test_threads_sharing_one_semaphore_object_each_release_their_own_lease(client, path):
    sem = client.semaphore(path, 2)
    problems: List[str] = []
    first_in = threading.Event()
    second_in = threading.Event()

    def work(name: str) -> None:
        if name == "second":
            first_in.wait(30)
        with sem as lease:
            (first_in if name == "first" else second_in).set()
            second_in.wait(30)
            # The first thread leaves its `with` first, while the second's lease (the one
            # entered last) is held: that exit must release the first thread's lease.
            time.sleep(0.1 if name == "first" else 0.6)
            if lease.state != "held":
                problems.append(f"{name}: {lease.state} inside its with")
        if lease.state != "released":
            problems.append(f"{name}: {lease.state} after its with")

    threads = [threading.Thread(target=work, args=(n,)) for n in ("first", "second")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert problems == []
    assert not sem.locked() and lease_nodes(client, path) == []
    with pytest.raises(zklock.NotHeld):
        sem.release()
