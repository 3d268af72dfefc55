"""The Python runner's scenarios of issue 53's block (cases.txt): the peers' fixes, each with a
client behind the harness's fault proxy (conftest's ``Harness``: ``proxy``, ``command``), apart
from test_conformance.py, which is past the 700-line rule.

- ``election-path-deleted-while-disconnected`` (CURATOR-724): the leader, cut off with its
  session alive, has its node deleted (``break_lock`` from another client: this face has no raw
  ZooKeeper client); back on the session it reports lost.
- ``nothing-sent-after-close`` (CURATOR-720/729): once ``close()`` returned, the proxy counts no
  byte and no connection more (the harness's ``count``).
- ``connection-event-not-deletion`` (Curator GH-1290): a waiter whose connection is cut and comes
  back keeps waiting while its predecessor holds."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import zklock
from conformance_lease import Ctx

WAIT = 10.0
# Set by the test (the session's harness, which runs the fault proxy).
HARNESS: Optional[Any] = None


def _harness() -> Any:
    assert HARNESS is not None, "the conformance test sets conformance_peers.HARNESS"
    return HARNESS


def _count() -> Tuple[int, int]:
    """What clients sent through the proxy so far: (bytes, connections)."""
    h = _harness()
    with h.lock:
        h.proc.stdin.write("count\n")
        h.proc.stdin.flush()
        deadline = time.monotonic() + 30.0
        counted: Optional[Tuple[int, int]] = None
        while True:
            line = h._next_line(deadline)
            assert line is not None, "zk-harness gave no answer to count"
            line = line.strip()
            if line.startswith("bytes="):
                fields = dict(f.split("=", 1) for f in line.split())
                counted = (int(fields["bytes"]), int(fields["connections"]))
            elif line == "ok":
                assert counted is not None, "zk-harness's count printed no counts"
                return counted
            elif line.startswith("error"):
                raise AssertionError(f"zk-harness: count: {line}")


class _States:
    """The connection states a client reported, in order."""

    def __init__(self) -> None:
        self.seen: List[str] = []

    def __call__(self, state: str) -> None:
        self.seen.append(state)

    def until(self, start: int, state: str) -> int:
        deadline = time.monotonic() + 30.0
        while True:
            later = self.seen[start:]
            if state in later:
                return start + later.index(state) + 1
            assert time.monotonic() < deadline, f"never {state}: {self.seen}"
            time.sleep(0.02)


def _proxied() -> Tuple[zklock.Client, _States]:
    client = zklock.Client(_harness().proxy, session_timeout=4.0, connect_timeout=5.0)
    states = _States()
    client.add_listener(states)
    return client, states


def _until_queued(lock: zklock.Lock, n: int) -> None:
    deadline = time.monotonic() + 30.0
    while len(lock.participants()) < n:
        assert time.monotonic() < deadline, "the waiter never queued"
        time.sleep(0.02)


def sc_election_path_deleted(ctx: Ctx) -> str:
    h = _harness()
    client, states = _proxied()
    try:
        election = client.election(ctx.path, style="latch", id="a")
        lease = election.lead(timeout=WAIT)
        node = election.participants()[0].node
        seen = len(states.seen)
        h.command("refuse")
        h.command("cut")
        states.until(seen, "suspended")
        ctx.shared.break_lock(ctx.path, node)
        seen = len(states.seen)
        h.command("heal")
        states.until(seen, "connected")
        if lease.lost.wait(20.0):
            return "lost"
        return "re-registered" if ctx.shared.election(ctx.path).participants() else "still-leading-on-no-node"
    finally:
        h.command("heal")
        client.close()


def sc_nothing_sent_after_close(ctx: Ctx) -> str:
    h = _harness()
    client, _ = _proxied()
    other = f"{ctx.path}-other"
    holder = ctx.shared.lock(other)
    waiter_done: List[str] = []
    holding = False
    try:
        # A held lease, a waiting acquire (its watch on the predecessor) when close comes.
        assert client.lock(ctx.path).acquire(timeout=WAIT)
        holding = holder.acquire(timeout=WAIT)
        assert holding

        def wait() -> None:
            try:
                client.lock(other).acquire()
                waiter_done.append("acquired")
            except zklock.ZkLockError as e:
                waiter_done.append(e.kind)

        waiter = threading.Thread(target=wait)
        waiter.start()
        _until_queued(holder, 2)
        client.close()
        before = _count()
        assert before[0] > 0 and before[1] > 0, "the proxy counted the client's traffic"
        # What would wake a loop left behind: the predecessor goes, the connection is cut.
        holder.release()
        holding = False
        h.command("cut")
        waiter.join(WAIT)
        # Three of the closed session's ping intervals (4 s / 3) of quiet.
        time.sleep(4.0)
        after = _count()
    finally:
        client.close()
        if holding:
            holder.release()
    more_bytes, more_conns = after[0] - before[0], after[1] - before[1]
    if more_bytes == 0 and more_conns == 0:
        return "none-sent"
    return f"sent={more_bytes},connections={more_conns}"


def sc_connection_event_not_deletion(ctx: Ctx) -> str:
    h = _harness()
    holder = ctx.shared.lock(ctx.path)
    assert holder.acquire(timeout=WAIT)
    client, states = _proxied()
    acquired = threading.Event()
    let_go = threading.Event()
    failed: List[str] = []

    def wait() -> None:
        lock = client.lock(ctx.path)
        try:
            lock.acquire()
        except zklock.ZkLockError as e:
            failed.append(e.kind)
            acquired.set()
            return
        acquired.set()
        let_go.wait(60.0)
        lock.release()

    waiter = threading.Thread(target=wait)
    waiter.start()
    holding = True
    try:
        _until_queued(holder, 2)
        seen = len(states.seen)
        h.command("cut")
        at = states.until(seen, "suspended")
        states.until(at, "connected")
        # The predecessor still holds: the waiter must still be waiting (two seconds after the
        # reconnect to go wrong: a waiter that takes the event for the deletion acquires at once).
        if acquired.wait(2.0):
            first, second = ("failed" if failed else "acquired-while-held"), "-"
        else:
            first = "waited"
            holder.release()
            holding = False
            second = (failed[0] if failed else "acquired") if acquired.wait(30.0) else "hung"
    finally:
        if holding:
            holder.release()
        let_go.set()
        waiter.join(WAIT)
        client.close()
    return f"{first},{second}"


PEER_SCENARIOS: Dict[str, Callable[[Ctx], str]] = {
    "election-path-deleted-while-disconnected": sc_election_path_deleted,
    "nothing-sent-after-close": sc_nothing_sent_after_close,
    "connection-event-not-deletion": sc_connection_event_not_deletion,
}
