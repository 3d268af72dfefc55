"""Ctrl-C while waiting (acceptance 5) and losing a lease to session expiry (acceptance 6)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from typing import List

import pytest

import zklock
from conftest import assert_empty_eventually, nodes, wait_until

CHILD = textwrap.dedent(
    """
    import signal, sys, time, zklock
    # Ctrl-C's default, whatever this child inherited: a shell that starts a job in the
    # background without job control (`make test &`) leaves SIGINT ignored, and Python keeps
    # an ignored SIGINT ignored, so the signal this test sends would never arrive.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    servers, path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    client = zklock.Client(servers, identity="sigint-child")
    lock = client.lock(path)
    print("waiting", flush=True)
    started = time.monotonic()
    try:
        if mode == "with":
            with lock:
                print("acquired?!", flush=True)
        else:
            lock.acquire(timeout=60)
            print("acquired?!", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted {time.monotonic() - started:.3f}", flush=True)
        if mode == "exit":
            raise
    print("locked" if lock.locked() else "not-locked", flush=True)
    sys.stdin.readline()   # stay alive (session open) until the test is done looking
    """
)


def start_child(servers: str, path: str, mode: str) -> subprocess.Popen:  # type: ignore[type-arg]
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, servers, path, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def child_nodes(client: zklock.Client, path: str) -> List[zklock.Participant]:
    return [p for p in nodes(client, path) if p.identity == "sigint-child"]


@pytest.mark.parametrize("mode", ["with", "acquire"])
def test_sigint_interrupts_a_blocked_acquire_and_leaves_no_node(client, other, path, mode):
    with other.lock(path):
        child = start_child(client.hosts, path, mode)
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "waiting"
            assert wait_until(lambda: len(child_nodes(client, path)) == 1, 15), "child never queued"
            sent = time.monotonic()
            child.send_signal(signal.SIGINT)
            # Bounded: a child that never answers fails the test with its stderr, not the suite.
            if not select.select([child.stdout], [], [], 30)[0]:
                child.kill()
                child.wait(timeout=30)
                err = child.stderr.read() if child.stderr is not None else ""
                pytest.fail(f"the child did not answer SIGINT within 30 s; its stderr: {err[-2000:]!r}")
            line = child.stdout.readline().strip()
            took = time.monotonic() - sent
            assert line.startswith("interrupted"), (line, child.stderr.read() if child.poll() is not None else "")  # type: ignore[union-attr]
            assert took < 2.0, f"KeyboardInterrupt took {took:.2f}s"
            assert child.stdout.readline().strip() == "not-locked"
            # The child is still alive with its session open: its waiting node must be gone.
            assert wait_until(lambda: not child_nodes(client, path), 5), child_nodes(client, path)
        finally:
            child.communicate("\n", timeout=30)
    assert_empty_eventually(client, path)


def test_sigint_uncaught_exits_and_leaves_no_node(client, other, path):
    with other.lock(path):
        child = start_child(client.hosts, path, "exit")
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "waiting"
        assert wait_until(lambda: len(child_nodes(client, path)) == 1, 15)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
        assert child.returncode != 0
        assert "KeyboardInterrupt" in err
        # The interpreter exits with the exception; no node of it stays (the waiting node is
        # removed, and the session is closed at exit rather than left to time out).
        assert wait_until(lambda: not child_nodes(client, path), 3), child_nodes(client, path)


def test_sigint_interrupts_a_blocked_acquire_within_a_second_while_the_server_is_unreachable(
    harness, client, other, path
):
    """Ctrl-C during an outage (a black hole 0.5 s before it) interrupts at once: it does not
    wait for the server to answer the removal of the waiting node, which goes on in the
    background and is done once the server is back."""
    with other.lock(path):
        child = start_child(harness.proxy, path, "acquire")
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "waiting"
            assert wait_until(lambda: len(child_nodes(client, path)) == 1, 15), "child never queued"
            harness.command("blackhole")
            try:
                time.sleep(0.5)
                sent = time.monotonic()
                child.send_signal(signal.SIGINT)
                line = child.stdout.readline().strip()
                took = time.monotonic() - sent
            finally:
                harness.command("heal")
            print(f"KeyboardInterrupt during an outage after {took:.3f} s")
            assert line.startswith("interrupted"), (line, child.stderr.read() if child.poll() is not None else "")  # type: ignore[union-attr]
            assert took < 1.0, f"KeyboardInterrupt during an outage took {took:.3f} s"
            assert child.stdout.readline().strip() == "not-locked"
            # Back in contact, the child's waiting node goes although the child lives on.
            assert wait_until(lambda: not child_nodes(client, path), 20), child_nodes(client, path)
        finally:
            child.communicate("\n", timeout=60)
    assert_empty_eventually(client, path)


def test_custom_signal_handler_exception_interrupts_wait(client, other, path):
    """Any exception raised by a Python signal handler interrupts a wait in the main thread."""

    class Stop(Exception):
        pass

    def handler(signum, frame):  # type: ignore[no-untyped-def]
        raise Stop()

    old = signal.signal(signal.SIGUSR1, handler)
    try:
        with other.lock(path):
            lock = client.lock(path)
            timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGUSR1))
            timer.start()
            started = time.monotonic()
            with pytest.raises(Stop):
                lock.acquire()
            assert time.monotonic() - started < 3
            assert not lock.locked()
            assert wait_until(lambda: len(nodes(client, path)) == 1, 5)
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert_empty_eventually(client, path)


# ---------------------------------------------------------------------------------------------
# 6. Session expiry: lost state, lost event, on_lost once, release does not raise


def test_holder_whose_session_expires_sees_its_lease_lost(harness, other, path):
    holder = zklock.Client(harness.proxy, session_timeout=2.0, identity="doomed")
    try:
        lock = holder.lock(path)
        lease = lock.hold().__enter__()
        assert lease.state == "held"
        calls: List[str] = []
        threads: List[str] = []
        called = threading.Event()

        def on_lost() -> None:
            calls.append(lease.state)
            threads.append(threading.current_thread().name)
            # a lost callback may call back into zklock
            calls.append(str(len(other.lock(path).participants())))
            called.set()

        lease.on_lost(on_lost)
        harness.command("blackhole")
        try:
            assert lease.lost.wait(20), f"lease never lost (state {lease.state})"
            assert lease.state == "lost"
            assert not lease.is_held()
            assert called.wait(10), "on_lost was not called"
            # another client gets the lock once the server expired the holder's session
            rival = other.lock(path)
            with rival.hold(timeout=30) as theirs:
                assert theirs.token > lease.token
        finally:
            harness.command("heal")
        time.sleep(0.3)
        assert calls[0] == "lost" and len(calls) == 2, calls
        assert threads[0] != threading.main_thread().name
        assert lock.lease is None  # not held any more
        assert lock.locked() is False
        # releasing a lost lease does not raise
        lease.release()
        assert not lock.locked()
        # a callback registered after the loss runs once too
        late = threading.Event()
        lease.on_lost(late.set)
        assert late.wait(5)
        time.sleep(0.3)
        assert len(calls) == 2, "on_lost was called more than once"
    finally:
        holder.close()


def test_a_short_partition_suspends_the_lease_and_reconnecting_restores_it(harness, path):
    holder = zklock.Client(harness.proxy, session_timeout=6.0)
    try:
        lock = holder.lock(path)
        with lock as lease:
            lost_calls: List[int] = []
            states: List[str] = []
            lease.on_lost(lambda: lost_calls.append(1))
            lease.on_state(states.append)
            harness.command("blackhole")
            try:
                assert wait_until(lambda: lease.state == "suspended", 15, 0.02), lease.state
                assert not lease.is_held()
                assert lock.lease is lease  # suspended: maybe still ours
            finally:
                harness.command("heal")
            assert wait_until(lambda: lease.state == "held", 15, 0.02), lease.state
            assert lease.is_held() and not lease.lost.is_set()
        assert lease.state == "released"
        assert lost_calls == []
        # the current state first, then every change
        assert wait_until(lambda: states == ["held", "suspended", "held", "released"], 5), states
    finally:
        holder.close()


def test_closing_the_client_loses_its_leases(servers, path):
    c = zklock.Client(servers)
    lock = c.lock(path)
    with pytest.raises(zklock.LockLost):  # leaving the block after the loss is loud (issue 33)
        with lock as lease:
            fired = threading.Event()
            lease.on_lost(fired.set)
            c.close()
            assert lease.lost.wait(5)
            assert fired.wait(5)
            assert lease.state == "lost"
    with pytest.raises(zklock.ClientClosed):
        lock.acquire()
    with pytest.raises(zklock.ClientClosed):
        c.lock(path).acquire(timeout=1)
    c.close()  # twice is fine
    assert c.closed


def test_on_lost_is_not_called_for_a_released_lease(client, path):
    fired = threading.Event()
    with client.lock(path) as lease:
        lease.on_lost(fired.set)
    assert not fired.wait(0.5)
    assert not lease.lost.is_set()
    with pytest.raises(zklock.InvalidArgumentType):
        lease.on_lost("not callable")  # type: ignore[arg-type]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_exception_in_on_lost_does_not_break_other_callbacks(servers, path):
    c = zklock.Client(servers)
    try:
        with pytest.raises(zklock.LockLost):  # leaving the block after the loss is loud (issue 33)
            with c.lock(path) as lease:
                after = threading.Event()

                def boom() -> None:
                    raise RuntimeError("callback failure (expected in this test)")

                lease.on_lost(boom)
                lease.on_lost(after.set)
                c.close()
                assert after.wait(5)
    finally:
        c.close()


def test_closing_the_client_wakes_its_waiters_with_client_closed(servers, other, path):
    c = zklock.Client(servers)
    outcome: List[BaseException] = []

    def waiter() -> None:
        try:
            c.lock(path).acquire()
        except BaseException as e:  # noqa: BLE001
            outcome.append(e)

    with other.lock(path):
        t = threading.Thread(target=waiter)
        t.start()
        assert wait_until(lambda: len(nodes(other, path)) == 2, 5)
        c.close()
        t.join(10)
        assert not t.is_alive(), "the waiter was not woken by close()"
    assert len(outcome) == 1 and isinstance(outcome[0], zklock.ClientClosed), outcome
    assert_empty_eventually(other, path)


def test_on_state_reports_the_current_state_first_even_a_final_one(client, path):
    with client.lock(path) as lease:
        seen: List[str] = []
        lease.on_state(seen.append)
        assert wait_until(lambda: seen == ["held"], 5), seen
    assert wait_until(lambda: seen == ["held", "released"], 5), seen
    late: List[str] = []
    lease.on_state(late.append)
    assert wait_until(lambda: late == ["released"], 5), late
    time.sleep(0.2)
    assert seen == ["held", "released"] and late == ["released"]
