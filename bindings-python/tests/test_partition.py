"""Safety under a partition and deadlines during outages (issue 12, parts 2 and 4), for the
Python face. The fault proxy of zk-harness stands between one client and ZooKeeper; `blackhole`
keeps the link open while nothing crosses it (a cut would be noticed at once).

* A black-holed holder must see its lease lost (the `lost` event set, `on_lost` run) before a
  rival on a healthy link can acquire the lock: at any moment, one holder.
* With the server unreachable, `acquire(timeout=2)` settles within its deadline plus a small
  bound, as a timeout (False / LockTimeout), never as success after the deadline.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Dict, List, Optional

import pytest

import zklock
from conftest import Harness, nodes, wait_until

ROUNDS = 3


def partition_round(harness: Harness, servers: str, path: str, session_timeout: float) -> Dict[str, object]:
    """One round: a holder through the proxy, a rival waiting on the direct link, a black hole.
    Returns when each thing happened (seconds after the black hole) and what the rival saw."""
    holder = zklock.Client(harness.proxy, session_timeout=session_timeout, identity="partitioned")
    rival = zklock.Client(servers, session_timeout=10.0, identity="rival")
    try:
        lock = holder.lock(path)
        assert lock.acquire(timeout=10)
        lease = lock.lease
        assert lease is not None and lease.state == "held"
        lost = lease.lost
        times: Dict[str, float] = {}
        seen: Dict[str, object] = {}
        callback_ran = threading.Event()

        def on_lost() -> None:
            times["callback"] = time.monotonic()
            callback_ran.set()

        lease.on_lost(on_lost)

        def watch_event() -> None:
            if lost.wait(120):
                times["event"] = time.monotonic()

        rival_lock = rival.lock(path)
        rival_errors: List[BaseException] = []

        def wait_as_rival() -> None:
            try:
                ok = rival_lock.acquire()  # waits as long as it takes
                times["acquired"] = time.monotonic()
                # What the rival's return found, before anything else happens.
                seen["event_set"] = lost.is_set()
                seen["callback_ran"] = callback_ran.is_set()
                seen["holder_state"] = lease.state
                seen["ok"] = ok
                if ok:
                    rival_lock.release()
            except BaseException as e:  # noqa: BLE001
                rival_errors.append(e)

        watcher = threading.Thread(target=watch_event, daemon=True)
        watcher.start()
        waiter = threading.Thread(target=wait_as_rival, daemon=True)
        waiter.start()
        assert wait_until(lambda: len(nodes(rival, path)) == 2, 10), "the rival never queued"
        harness.command("blackhole")
        times["blackhole"] = time.monotonic()
        try:
            waiter.join(session_timeout * 5 + 30)
            assert not waiter.is_alive(), "the rival never acquired the lock"
            assert not rival_errors, rival_errors
            watcher.join(session_timeout * 5 + 30)
            callback_ran.wait(10)
        finally:
            harness.command("heal")
        return {**seen, **{k: v - times["blackhole"] for k, v in times.items()}}
    finally:
        rival.close()
        holder.close()


@pytest.mark.parametrize("session_timeout", [2.0, 4.0])
def test_a_black_holed_holder_sees_its_lease_lost_before_a_rival_acquires(harness, servers, session_timeout):
    rounds = []
    for i in range(ROUNDS):
        path = f"/zklock-py/partition/{uuid.uuid4().hex}"
        r = partition_round(harness, servers, path, session_timeout)
        event: Optional[float] = r.get("event")  # type: ignore[assignment]
        callback: Optional[float] = r.get("callback")  # type: ignore[assignment]
        acquired = float(r["acquired"])  # type: ignore[arg-type]
        margin = (acquired - event) * 1000 if event is not None else float("-inf")
        print(
            f"session {session_timeout:g} s, round {i + 1}: after the black hole the rival acquired at "
            f"{acquired:.3f} s, the holder's lost event was set at "
            f"{'never' if event is None else f'{event:.3f} s'}, on_lost ran at "
            f"{'never' if callback is None else f'{callback:.3f} s'}; margin {margin:+.0f} ms "
            f"(holder state at the rival's return: {r['holder_state']})"
        )
        rounds.append((margin, r))
    for i, (margin, r) in enumerate(rounds):
        assert r["ok"] is True
        assert r["event_set"] and r["callback_ran"], (
            f"round {i + 1}: the rival acquired while the holder's lease was still "
            f"{r['holder_state']!r} (lost event set: {r['event_set']}, on_lost ran: "
            f"{r['callback_ran']}); margin {margin:+.0f} ms (must be > 0). All rounds: "
            + ", ".join(f"{m:+.0f} ms" for m, _ in rounds)
        )


# ---------------------------------------------------------------------------------------------
# Deadlines while the server is unreachable


def waiter_ids(client: zklock.Client, path: str) -> List[zklock.Participant]:
    return [p for p in nodes(client, path) if p.identity == "outage-waiter"]


@pytest.mark.parametrize("how", ["acquire", "hold", "try"])
def test_an_acquire_with_a_deadline_settles_in_time_when_the_server_stops_answering(
    harness, servers, other, how
):
    """The server becomes unreachable (a black hole) while an acquire waits: `acquire(timeout=2)`
    returns False and `hold(timeout=2)` raises LockTimeout within 2 s + 0.5 s; a try
    (`blocking=False`) made 0.5 s into the outage answers False within 1 s."""
    path = f"/zklock-py/outage/{uuid.uuid4().hex}"
    waiter = zklock.Client(harness.proxy, session_timeout=10.0, identity="outage-waiter")
    try:
        lock = waiter.lock(path)
        with other.lock(path):  # the lock is taken: the waiter has to wait
            outcome: List[object] = []
            if how == "try":
                harness.command("blackhole")
                time.sleep(0.5)
                started = time.monotonic()
                try:
                    outcome.append(lock.acquire(blocking=False))
                except zklock.ZkLockError as e:
                    outcome.append(e)
                took = time.monotonic() - started
                bound, expected = 1.0, "False"
            else:
                timer = threading.Timer(0.5, harness.command, ("blackhole",))
                started = time.monotonic()
                timer.start()
                try:
                    if how == "acquire":
                        outcome.append(lock.acquire(timeout=2))
                    else:
                        with lock.hold(timeout=2):
                            outcome.append("acquired")
                except zklock.ZkLockError as e:
                    outcome.append(e)
                took = time.monotonic() - started
                timer.join()
                bound = 2.5
                expected = "False" if how == "acquire" else "LockTimeout"
            harness.command("heal")
            print(f"{how}: settled after {took:.3f} s with {outcome[0]!r} (bound {bound} s)")
            got = type(outcome[0]).__name__ if isinstance(outcome[0], BaseException) else repr(outcome[0])
            assert got == expected, f"{how}: got {outcome[0]!r} after {took:.3f} s, expected {expected}"
            assert took <= bound, f"{how}: settled after {took:.3f} s, bound {bound} s"
            assert not lock.locked()
        # Whatever node the waiter may have left is cleaned up once the server answers again.
        assert wait_until(lambda: not waiter_ids(other, path), 20), waiter_ids(other, path)
    finally:
        harness.command("heal")
        waiter.close()
