"""Mutual exclusion, tokens, re-entrancy, try/timeout (acceptance 1, 2, 3)."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from typing import List, Tuple

import pytest

import zklock
from conftest import assert_empty_eventually, nodes, wait_until

# ---------------------------------------------------------------------------------------------
# 1. No overlap, strictly increasing tokens: 8 threads, then 4 processes


def check_log(records: List[Tuple[int, int, int]], expected: int) -> None:
    """records: (token, enter_ns, exit_ns). Sections must not overlap and tokens must strictly
    increase in the order the sections ran."""
    assert len(records) == expected
    records.sort(key=lambda r: r[1])
    for before, after in zip(records, records[1:]):
        assert before[2] <= after[1], f"critical sections overlap: {before} and {after}"
        assert before[0] < after[0], f"token did not increase: {before} then {after}"


def run_sections(lock: zklock.Lock, rounds: int, shared: dict, out: List[Tuple[int, int, int]]) -> None:
    for _ in range(rounds):
        with lock as lease:
            enter = time.time_ns()
            if shared["inside"]:
                shared["overlaps"] += 1
            shared["inside"] = True
            value = shared["counter"]
            time.sleep(0)  # give another thread the chance to barge in
            shared["counter"] = value + 1
            shared["inside"] = False
            out.append((lease.token, enter, time.time_ns()))


def test_eight_threads_never_overlap_and_tokens_increase(client, path):
    lock = client.lock(path)
    threads_n, rounds = 8, 250
    shared = {"inside": False, "overlaps": 0, "counter": 0}
    records: List[Tuple[int, int, int]] = []
    threads = [
        threading.Thread(target=run_sections, args=(lock, rounds, shared, records))
        for _ in range(threads_n)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
        assert not t.is_alive(), "a worker thread is stuck"
    assert shared["overlaps"] == 0
    assert shared["counter"] == threads_n * rounds
    check_log(records, threads_n * rounds)
    assert not lock.locked()
    assert not lock._held, "the leases kept per thread were not let go"
    assert_empty_eventually(client, path)


def process_worker(servers: str, path: str, rounds: int, threads_n: int, log: str,
                   inside, counter) -> None:  # type: ignore[no-untyped-def]
    # A child process: a client of its own (another ZooKeeper session).
    with zklock.Client(servers, session_timeout=10.0, identity=f"proc-{os.getpid()}") as client:
        lock = client.lock(path)

        def body() -> None:
            for _ in range(rounds):
                with lock as lease:
                    enter = time.time_ns()
                    if inside.value:
                        counter[1] += 1  # overlap seen
                    inside.value = 1
                    value = counter[0]
                    time.sleep(0)
                    counter[0] = value + 1
                    inside.value = 0
                    line = f"{lease.token} {enter} {time.time_ns()}\n"
                # one write per section, O_APPEND: lines of different processes never mix
                fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                try:
                    os.write(fd, line.encode())
                finally:
                    os.close(fd)

        threads = [threading.Thread(target=body) for _ in range(threads_n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def test_four_processes_never_overlap_and_tokens_increase(client, servers, path, tmp_path):
    # 'spawn': this process has used zklock already, and a child forked after that cannot
    # connect (see test_fork.py).
    ctx = multiprocessing.get_context("spawn")
    inside = ctx.RawValue("i", 0)
    counter = ctx.RawArray("l", 2)
    log = str(tmp_path / "sections.log")
    procs_n, threads_n, rounds = 4, 2, 250
    procs = [
        ctx.Process(target=process_worker,
                    args=(servers, path, rounds, threads_n, log, inside, counter))
        for _ in range(procs_n)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0, f"worker process failed with {p.exitcode}"
    total = procs_n * threads_n * rounds
    assert counter[1] == 0, "a process saw another inside the critical section"
    assert counter[0] == total
    with open(log) as f:
        records = [tuple(int(x) for x in line.split()) for line in f if line.strip()]
    check_log(records, total)  # type: ignore[arg-type]
    assert_empty_eventually(client, path)


# ---------------------------------------------------------------------------------------------
# 2. Re-entrancy per thread


def test_reentrant_three_deep_while_another_thread_blocks(client, path):
    lock = client.lock(path)
    other_got_it = threading.Event()
    other_started = threading.Event()

    def other() -> None:
        other_started.set()
        with lock:
            other_got_it.set()

    with lock as a:
        with lock as b:
            with lock as c:
                assert a.token == b.token == c.token
                assert len(nodes(client, path)) == 1  # re-entry takes no new node
                t = threading.Thread(target=other)
                t.start()
                other_started.wait(5)
                # the other thread queues behind us (its own node) and stays blocked
                assert wait_until(lambda: len(nodes(client, path)) == 2, 5)
                time.sleep(0.3)
                assert not other_got_it.is_set()
            assert lock.lease is b
            time.sleep(0.2)
            assert not other_got_it.is_set(), "an inner release freed the lock"
        assert not other_got_it.is_set(), "an inner release freed the lock"
    assert other_got_it.wait(10), "the other thread never got the lock"
    t.join(10)
    assert_empty_eventually(client, path)


def test_acquire_release_counts_like_rlock(client, path):
    lock = client.lock(path)
    assert lock.acquire()
    assert lock.acquire()
    token = lock.lease.token  # type: ignore[union-attr]
    lock.release()
    assert lock.locked()
    assert len(nodes(client, path)) == 1
    lock.release()
    assert not lock.locked()
    with pytest.raises(zklock.NotHeld) as info:
        lock.release()
    assert isinstance(info.value, RuntimeError)
    assert path in str(info.value)
    assert token > 0
    assert_empty_eventually(client, path)


def test_other_thread_cannot_release_our_hold(client, path):
    lock = client.lock(path)
    errors: List[BaseException] = []
    with lock:
        def release_from_elsewhere() -> None:
            try:
                lock.release()
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        t = threading.Thread(target=release_from_elsewhere)
        t.start()
        t.join(10)
        assert lock.locked()
    assert len(errors) == 1 and isinstance(errors[0], zklock.NotHeld)


def test_a_reentrant_acquire_and_release_run_no_python_code_of_the_package(client, path):
    # Issue 17: the bookkeeping of holds (whose lease is which) is the native class's, so that
    # a re-entrant acquire and a release are one native call each.
    lock = client.lock(path)
    ran: List[str] = []

    def profile(frame: object, event: str, arg: object) -> None:
        if event == "call":
            ran.append(frame.f_code.co_filename + ":" + frame.f_code.co_name)  # type: ignore[attr-defined]

    with lock:
        sys.setprofile(profile)
        try:
            assert lock.acquire()
            lock.release()
        finally:
            sys.setprofile(None)
        assert lock.hold_count() == 1
    assert ran == [], ran
    assert not lock.locked() and lock._held == 0


def test_the_lease_of_an_acquire_is_one_object_and_is_forgotten_once_released(client, path):
    lock = client.lock(path)
    assert lock.acquire()
    lease = lock.lease
    assert isinstance(lease, zklock.Lease) and lease.is_held()
    assert lock.lease is lease, "asking again gives another object"
    assert lock.acquire()  # a second hold (the same node, counted): the most recent one
    second = lock.lease
    assert second is not None and second is not lease and second.token == lease.token
    lock.release()  # releases the most recent hold
    assert second.state == "released" and lock.lease is lease and lock.hold_count() == 1
    assert lease.release() == "released"
    assert lock.lease is None and not lock.locked() and lock._held == 0
    with pytest.raises(zklock.NotHeld, match="this thread does not hold it"):
        lock.release()


def test_non_reentrant_lock_waits_for_itself(client, path):
    lock = client.lock(path, reentrant=False)
    assert lock.acquire()
    assert not lock.acquire(timeout=0.2)  # like threading.Lock: a second acquire waits
    assert len(nodes(client, path)) == 1
    # and any thread may release it
    t = threading.Thread(target=lock.release)
    t.start()
    t.join(10)
    assert not lock.locked()
    assert_empty_eventually(client, path)


def test_lease_release_twice_raises_not_held(client, path):
    lock = client.lock(path)
    lease = lock.hold().__enter__()
    lease.release()
    with pytest.raises(zklock.NotHeld):
        lease.release()
    assert lease.state == "released"
    assert not lease.is_held()


def test_release_inside_with_is_fine(client, path):
    lock = client.lock(path)
    with lock as outer:
        with lock as inner:
            inner.release()
        assert outer.is_held()
        assert lock.locked()
    assert not lock.locked()
    assert_empty_eventually(client, path)


# ---------------------------------------------------------------------------------------------
# 3. try-lock and timeouts


def test_try_and_timeout_return_false_and_leave_no_node(client, other, path):
    held = other.lock(path)
    with held as holder:
        lock = client.lock(path)
        assert lock.acquire(blocking=False) is False
        started = time.monotonic()
        assert lock.acquire(timeout=0.2) is False
        elapsed = time.monotonic() - started
        assert 0.15 <= elapsed < 3, elapsed
        assert not lock.locked()
        assert lock.lease is None
        left = nodes(client, path)
        assert [p.node for p in left] == [holder.path], left
        with pytest.raises(zklock.LockTimeout) as info:
            with lock.hold(timeout=0.2):
                pass
        assert isinstance(info.value, TimeoutError)
        assert path in str(info.value)
        assert [p.node for p in nodes(client, path)] == [holder.path]
    assert lock.acquire(blocking=False) is True
    lock.release()
    assert_empty_eventually(client, path)


def test_timeout_zero_is_a_try(client, other, path):
    with other.lock(path):
        assert client.lock(path).acquire(timeout=0) is False
    assert client.lock(path).acquire(timeout=0) is True


def test_participants_show_identity_and_tokens(servers, path):
    with zklock.Client(servers, identity="worker-a") as a, zklock.Client(servers, identity="worker-b") as b:
        la, lb = a.lock(path), b.lock(path)
        with la as lease:
            got = threading.Event()

            def wait_b() -> None:
                with lb:
                    got.set()

            t = threading.Thread(target=wait_b)
            t.start()
            assert wait_until(lambda: len(la.participants()) == 2, 5)
            queue = la.participants()
            assert queue[0].identity == "worker-a" and queue[0].token == lease.token
            assert queue[0].node == lease.path and queue[0].library == "zklock"
            assert queue[0].kind == "mutex" and queue[0].session_id == a.session_id
            assert queue[1].identity == "worker-b"
        assert got.wait(10)
        t.join(10)


def test_acl_refusal_raises_permission_denied(servers, path):
    with zklock.Client(servers, auth="alice:secret", acl="creator-all") as alice, \
            zklock.Client(servers) as stranger:
        with alice.lock(path) as lease:
            assert lease.is_held()
            with pytest.raises(zklock.PermissionDenied) as info:
                stranger.lock(path).acquire(timeout=2)
            assert isinstance(info.value, PermissionError)
            assert path in str(info.value)
        # alice can take it again; her nodes are hers only
        assert alice.lock(path).acquire(timeout=2)


def test_waiting_releases_the_gil(client, other, path):
    """While threads wait for the lock, pure-Python work in this thread runs at full speed."""
    lock = client.lock(path)

    def spin(seconds: float) -> int:
        n = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            n += 1
        return n

    baseline = spin(0.3)
    with other.lock(path):
        waiters = [threading.Thread(target=lambda: lock.acquire(timeout=2) and lock.release())
                   for _ in range(4)]
        for t in waiters:
            t.start()
        assert wait_until(lambda: len(nodes(client, path)) == 5, 5)
        busy = spin(0.3)
    for t in waiters:
        t.join(10)
    # Holding the GIL while waiting would stall this thread completely; allow for the waiters'
    # periodic signal checks and a loaded machine.
    assert busy > baseline * 0.3, (busy, baseline)
