"""Read/write locks and multi-locks (acceptance 7)."""

from __future__ import annotations

import threading
import time
import uuid
from typing import List

import pytest

import zklock
from conftest import assert_empty_eventually, nodes, wait_until


def test_readers_share_writers_exclude(client, other, servers, path):
    mine, theirs = client.rw_lock(path), other.rw_lock(path)
    with zklock.Client(servers) as third_client:
        third = third_client.rw_lock(path)
        with mine.read as r1:
            with theirs.read as r2:  # two readers at once
                assert r1.is_held() and r2.is_held()
                assert {p.kind for p in nodes(client, path)} == {"read"}
                assert third.write.acquire(timeout=0.2) is False  # a writer waits for readers
            assert third.write.acquire(timeout=0.2) is False
            assert [p.kind for p in nodes(client, path)] == ["read"]
    with theirs.write as w:
        assert w.is_held()
        assert mine.read.acquire(timeout=0.2) is False  # a reader waits for the writer
        assert mine.write.acquire(blocking=False) is False
    assert mine.read.acquire(timeout=5)
    mine.read.release()
    assert_empty_eventually(client, path)


def test_read_side_is_shared_between_threads_write_side_is_not(client, path):
    rw = client.rw_lock(path)
    both_inside = threading.Barrier(2, timeout=10)
    errors: List[BaseException] = []

    def reader() -> None:
        try:
            with rw.read:
                both_inside.wait()  # both threads hold the read side together
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not errors, errors

    with rw.write:
        got = threading.Event()

        def writer() -> None:
            with rw.write:
                got.set()

        t = threading.Thread(target=writer)
        t.start()
        assert not got.wait(0.3), "another thread entered the write lock we hold"
    assert got.wait(10)
    t.join(10)
    assert_empty_eventually(client, path)


def test_upgrade_raises_upgrade_not_allowed_at_once(client, path):
    rw = client.rw_lock(path)
    with rw.read:
        started = time.monotonic()
        with pytest.raises(zklock.UpgradeNotAllowed) as info:
            rw.write.acquire()
        assert time.monotonic() - started < 2
        assert path in str(info.value)
        with pytest.raises(zklock.UpgradeNotAllowed):
            with rw.write:
                pass
        assert len(nodes(client, path)) == 1
    assert_empty_eventually(client, path)


def test_a_read_holder_thread_does_not_make_other_threads_upgrade(client, path):
    rw = client.rw_lock(path)
    with rw.read:
        outcome: List[object] = []

        def writer() -> None:
            try:
                outcome.append(rw.write.acquire(timeout=0.3))
            except BaseException as e:  # noqa: BLE001
                outcome.append(e)

        t = threading.Thread(target=writer)
        t.start()
        t.join(10)
        assert outcome == [False]  # it waited (and timed out); no UpgradeNotAllowed


def test_downgrade_write_then_read(client, other, path):
    rw = client.rw_lock(path)
    with rw.write as w:
        with rw.read as r:  # a writer may take the read side at once
            assert r.is_held() and w.is_held()
            w.release()  # keep only the read side
            theirs = other.rw_lock(path)
            assert theirs.read.acquire(timeout=5)  # now readers may join
            theirs.read.release()
            assert theirs.write.acquire(timeout=0.2) is False
    assert_empty_eventually(client, path)


def test_multi_lock_all_or_nothing(client, other, tmp_path):
    base = f"/zklock-py/{uuid.uuid4().hex}"
    a, b = f"{base}/a", f"{base}/b"
    multi = client.multi_lock([a, b])
    assert multi.kind == "multi"
    with multi as lease:
        assert len(lease.tokens) == 2 and lease.token == max(lease.tokens)
        assert len(lease.paths) == 2
        assert other.lock(a).acquire(timeout=0.2) is False
        assert other.lock(b).acquire(timeout=0.2) is False
        assert multi.locked()
    assert not multi.locked()
    with other.lock(b):
        assert multi.acquire(timeout=0.3) is False
        # nothing of ours stays on a (or b)
        assert wait_until(lambda: not nodes(client, a), 5), nodes(client, a)
        assert len(nodes(client, b)) == 1
        with pytest.raises(zklock.LockTimeout):
            with multi.hold(timeout=0.2):
                pass
    assert multi.acquire(timeout=5)
    multi.release()
    assert_empty_eventually(client, a)
    assert_empty_eventually(client, b)


def test_multi_lock_orders_members_so_opposite_lists_cannot_deadlock(client, other):
    base = f"/zklock-py/{uuid.uuid4().hex}"
    a, b = f"{base}/a", f"{base}/b"
    forward, backward = client.multi_lock([a, b]), other.multi_lock([b, a])
    inside = [0]
    overlaps = [0]

    def run(lock: zklock.Lock) -> None:
        for _ in range(25):
            with lock:
                if inside[0]:
                    overlaps[0] += 1
                inside[0] += 1
                time.sleep(0.001)
                inside[0] -= 1

    threads = [threading.Thread(target=run, args=(l,)) for l in (forward, backward)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "multi-locks deadlocked"
    assert overlaps[0] == 0


def test_multi_lock_shares_reentrancy_with_member_locks(client, other):
    base = f"/zklock-py/{uuid.uuid4().hex}"
    a, b = f"{base}/a", f"{base}/b"
    la = client.lock(a)
    multi = client.multi_lock([la, b])
    with la as held_a:
        with multi as both:  # re-enters a, takes b
            assert held_a.token in both.tokens
            assert len(nodes(client, a)) == 1
        assert la.locked()  # still ours after the multi is released
        lb = other.lock(b)
        assert lb.acquire(timeout=5)
        lb.release()
    assert_empty_eventually(client, a)


def test_multi_lock_with_rw_sides(client, other):
    base = f"/zklock-py/{uuid.uuid4().hex}"
    rw = client.rw_lock(f"{base}/rw")
    multi = client.multi_lock([rw.write, f"{base}/m"])
    theirs = other.rw_lock(f"{base}/rw")
    with multi:
        assert theirs.read.acquire(timeout=0.2) is False
    assert theirs.read.acquire(timeout=5)
    theirs.read.release()
    assert_empty_eventually(client, f"{base}/rw")


def test_multi_lock_bad_members(client):
    with pytest.raises(zklock.InvalidArgument):
        client.multi_lock([])
    with pytest.raises(zklock.InvalidArgument):
        client.multi_lock(["/x/a", "/x/a"])  # the same path twice
    with pytest.raises(zklock.InvalidArgumentType):
        client.multi_lock("/x/a")  # type: ignore[arg-type]
    with pytest.raises(zklock.InvalidArgumentType):
        client.multi_lock([1, 2])  # type: ignore[list-item]
    with pytest.raises(zklock.InvalidArgument):
        client.multi_lock(["relative"])


def test_a_member_lock_reads_locked_while_its_multi_lock_holds_it(client):
    base = f"/zklock-py/{uuid.uuid4().hex}"
    la = client.lock(f"{base}/a")
    multi = client.multi_lock([la, f"{base}/b"])
    with multi:
        assert la.locked() and la.hold_count() == 1  # the core counts the multi's hold of a
        with la:
            assert la.hold_count() == 2
    assert not la.locked() and la.hold_count() == 0
    assert_empty_eventually(client, f"{base}/a")


def test_the_write_holder_downgrades_while_another_thread_waits_for_the_read_side(client, path):
    """Two threads are two owners of one read/write lock object: one waiting for the read side
    must not keep the write holder from taking the read side at once (a downgrade). With
    `with rw.read:` instead of a timeout, this would wait forever."""
    rw = client.rw_lock(path)
    got: List[bool] = []

    def reader() -> None:
        ok = rw.read.acquire(timeout=15)
        got.append(ok)
        if ok:
            rw.read.release()

    with rw.write:
        t = threading.Thread(target=reader)
        t.start()
        assert wait_until(lambda: len(nodes(client, path)) == 2, 5), "the reader never queued"
        started = time.monotonic()
        assert rw.read.acquire(timeout=5), (
            f"the write holder could not downgrade while another thread waits for the read side "
            f"(gave up after {time.monotonic() - started:.1f} s)"
        )
        rw.read.release()
    t.join(20)
    assert got == [True]
    assert_empty_eventually(client, path)
