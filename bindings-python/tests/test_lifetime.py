"""How long a lock stays held (issue 12, parts 6 and 8): garbage collection never releases a
lock, a closed client makes no new locks, and a lease inherited through fork() does not claim to
be held in the child."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import time
import warnings
import weakref
from typing import Callable, List

import pytest

import zklock
from conftest import assert_empty_eventually, nodes, wait_until

SECRET = "s3cret-pw-never-shown"


def holder_nodes(client: zklock.Client, path: str) -> List[zklock.Participant]:
    return [p for p in nodes(client, path) if p.identity == "collected"]


def collect_with_warnings(drop: Callable[[], object] = lambda: None) -> List[warnings.WarningMessage]:
    """The ResourceWarnings of `drop()` (which lets go of the last reference to a lock object:
    without a reference cycle it goes, and warns, right there) and of a full collection."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drop()
        gc.collect()
        gc.collect()
    return [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_a_collected_lock_object_keeps_its_lock_until_the_client_closes_and_warns(servers, other, path):
    holder = zklock.Client(servers, identity="collected", auth=f"user:{SECRET}")
    try:
        gc.collect()
        # The shape the issue tried: a temporary lock object, acquired without blocking.
        lock = holder.lock(path)
        gone = weakref.ref(lock)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert lock.acquire(blocking=False)
            del lock
            gc.collect()
            gc.collect()
        assert gone() is None, "the lock object was not collected; the test proves nothing"
        # Still held: another session cannot take it, and the node is the holder's.
        time.sleep(0.5)
        assert not other.lock(path).acquire(blocking=False), "collecting the lock object released it"
        assert len(holder_nodes(other, path)) == 1, nodes(other, path)
        assert not holder.closed
        # ... and the program was told, by path, without the credentials.
        resource = [w for w in caught if issubclass(w.category, ResourceWarning)]
        assert len(resource) == 1, [str(w.message) for w in caught]
        message = str(resource[0].message)
        assert path in message and "garbage-collected" in message, message
        assert SECRET not in message and "user:" not in message, message
    finally:
        holder.close()
    # Closing the client frees it.
    rival = other.lock(path)
    assert rival.acquire(timeout=10), "the lock was not freed by closing its client"
    rival.release()
    assert_empty_eventually(other, path)


def test_reentrant_holds_of_a_collected_lock_object_are_not_released(servers, other, path):
    holder = zklock.Client(servers, identity="collected")
    try:
        lock = holder.lock(path)
        assert lock.acquire(timeout=5)
        assert lock.acquire(timeout=5)  # re-entrant: the same node, counted twice
        assert lock.acquire(blocking=False)
        gone = weakref.ref(lock)
        held = [lock]
        del lock
        resource = collect_with_warnings(held.clear)
        assert gone() is None, "the lock object was not collected; the test proves nothing"
        time.sleep(0.5)
        assert not other.lock(path).acquire(blocking=False), "collecting the lock object released it"
        assert len(holder_nodes(other, path)) == 1, nodes(other, path)
        assert len(resource) == 3, [str(w.message) for w in resource]
        # The holder's session goes on working with new lock objects.
        with holder.lock(f"{path}-next"):
            pass
        assert not other.lock(path).acquire(blocking=False)
    finally:
        holder.close()
    rival = other.lock(path)
    assert rival.acquire(timeout=10)
    rival.release()
    assert_empty_eventually(other, path)


def test_collecting_a_released_or_lost_lease_neither_warns_nor_releases_anything(servers, other, path):
    holder = zklock.Client(servers, identity="collected")
    try:
        lock = holder.lock(path)
        with lock:
            pass
        lock.acquire()
        lock.release()
        held = [lock]
        del lock
        assert collect_with_warnings(held.clear) == []
    finally:
        holder.close()
    # A lease lost with its client: collected without a warning either.
    c = zklock.Client(servers)
    lock = c.lock(path)
    assert lock.acquire(timeout=5)
    c.close()
    assert wait_until(lambda: not lock.locked(), 5)
    held = [lock]
    del lock
    assert collect_with_warnings(held.clear) == []
    assert_empty_eventually(other, path)


def test_a_client_and_a_lock_object_that_refer_to_each_other_are_collected(servers, path):
    client = zklock.Client(servers)
    lock = client.lock(path)
    client.kept_lock = lock  # type: ignore[attr-defined]  # the lock refers to its client
    gone_lock, gone_client = weakref.ref(lock), weakref.ref(client)
    held = [client, lock]
    del client, lock
    assert collect_with_warnings(held.clear) == []
    assert gone_lock() is None and gone_client() is None, "the cycle was not collected"


@pytest.mark.parametrize(
    "make",
    [
        lambda c, p: c.lock(p),
        lambda c, p: c.lock(p, reentrant=False),
        lambda c, p: c.mutex(p),
        lambda c, p: c.rw_lock(p),
        lambda c, p: c.multi_lock([p, p + "-b"]),
    ],
    ids=["lock", "non-reentrant", "mutex", "rw_lock", "multi_lock"],
)
def test_making_a_lock_after_close_raises_client_closed(servers, path, make: Callable[..., object]):
    c = zklock.Client(servers)
    c.close()
    with pytest.raises(zklock.ClientClosed, match="closed"):
        make(c, path)


def test_a_lease_taken_before_fork_is_not_reported_held_in_the_child(servers, path):
    script = textwrap.dedent(
        """
        import os, sys, zklock
        servers, path = sys.argv[1], sys.argv[2]
        client = zklock.Client(servers)
        lock = client.lock(path)
        lease = lock.hold().__enter__()
        lease.lost  # the lost event exists before the fork
        pid = os.fork()
        if pid == 0:
            out = []
            for name, call in [
                ("state", lambda: lease.state),
                ("is_held", lease.is_held),
                ("lost", lambda: lease.lost.is_set()),
                ("on_lost", lambda: lease.on_lost(print)),
                ("on_state", lambda: lease.on_state(print)),
                ("locked", lock.locked),
                ("lease", lambda: lock.lease),
                ("release", lease.release),
                ("client.lock", lambda: client.lock(path)),
            ]:
                try:
                    out.append(f"{name}=returned:{call()!r}")
                except zklock.ClientClosed as e:
                    out.append(f"{name}=closed" if "fork" in str(e) else f"{name}=closed-unexplained")
            out.append("repr=" + ("forked" if "forked" in repr(lease) else repr(lease)))
            print(" ".join(out), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        print("parent", lease.state, lease.is_held(), lock.locked(), flush=True)
        lease.release()
        client.close()
        """
    )
    out = subprocess.run([sys.executable, "-c", script, servers, path],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    child, parent = out.stdout.splitlines()
    assert child.split() == [
        "state=closed", "is_held=closed", "lost=closed", "on_lost=closed", "on_state=closed",
        "locked=closed", "lease=closed", "release=closed", "client.lock=closed", "repr=forked",
    ], child
    assert parent.split() == ["parent", "held", "True", "True"], parent
