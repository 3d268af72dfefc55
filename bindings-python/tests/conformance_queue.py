"""The Python runner's scenarios of issue 37's queue position (cases.txt's block), apart from
test_conformance.py, which is past the 700-line rule: ``lock.acquire(on_queued=...)`` on a
thread of its own, ``lock.position`` read from another, ``lock.cancel()``."""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Dict, List

import zklock
from conformance_lease import Ctx

WAIT = 10.0


def _until_position(lock: zklock.Lock, n: int) -> None:
    deadline = time.monotonic() + WAIT
    while lock.position != n:
        assert time.monotonic() < deadline, f"position never {n}: {lock.position}"
        time.sleep(0.02)


def _waiting(lock: zklock.Lock, heard: "queue.Queue[int]", outcome: List[str]) -> threading.Thread:
    """A thread that acquires ``lock`` (no timeout) with ``on_queued`` calls into ``heard``, and
    releases it at once; its outcome goes into ``outcome``."""

    def run() -> None:
        try:
            lock.acquire(on_queued=heard.put)
            lock.release()
            outcome.append("acquired")
        except zklock.ZkLockError as e:
            outcome.append(e.kind)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _parked(lock: zklock.Lock) -> threading.Thread:
    """A thread whose acquire (no timeout) waits until ``lock.cancel()``."""

    def run() -> None:
        try:
            lock.acquire()
            lock.release()
        except zklock.Cancelled:
            pass

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _next(heard: "queue.Queue[int]") -> str:
    try:
        return str(heard.get(timeout=WAIT))
    except queue.Empty:
        return "silent"


def _ended(thread: threading.Thread, heard: "queue.Queue[int]", calls: List[str],
           outcome: List[str]) -> str:
    thread.join(2 * WAIT)
    time.sleep(0.3)
    while not heard.empty():
        calls.append(str(heard.get()))
    quiet = not calls
    calls.append(outcome[0] if outcome else "still-waiting")
    if quiet:
        calls.append("quiet")
    return ",".join(calls)


def sc_queue_position_third(ctx: Ctx) -> str:
    holder = ctx.shared.lock(ctx.path)
    assert holder.acquire(timeout=WAIT)
    with zklock.Client(ctx.servers) as second, zklock.Client(ctx.servers) as third:
        middle = second.lock(ctx.path)
        parked = _parked(middle)
        _until_position(middle, 1)
        heard: "queue.Queue[int]" = queue.Queue()
        outcome: List[str] = []
        thread = _waiting(third.lock(ctx.path), heard, outcome)
        calls = [_next(heard)]
        middle.cancel()
        parked.join(WAIT)
        calls.append(_next(heard))
        holder.release()
        return _ended(thread, heard, calls, outcome)


def sc_queue_position_uncontended(ctx: Ctx) -> str:
    heard: "queue.Queue[int]" = queue.Queue()
    outcome: List[str] = []
    thread = _waiting(ctx.shared.lock(ctx.path), heard, outcome)
    return _ended(thread, heard, [], outcome)


def sc_queue_position_reader(ctx: Ctx) -> str:
    reader = ctx.shared.rw_lock(ctx.path)
    assert reader.read.acquire(timeout=WAIT)
    try:
        with zklock.Client(ctx.servers) as second, zklock.Client(ctx.servers) as third:
            writer = second.rw_lock(ctx.path).write
            parked = _parked(writer)
            _until_position(writer, 1)
            heard: "queue.Queue[int]" = queue.Queue()
            outcome: List[str] = []
            thread = _waiting(third.rw_lock(ctx.path).read, heard, outcome)
            calls = [_next(heard)]
            writer.cancel()
            parked.join(WAIT)
            return _ended(thread, heard, calls, outcome)
    finally:
        reader.read.release()


QUEUE_SCENARIOS: Dict[str, Callable[[Ctx], str]] = {
    "queue-position-third": sc_queue_position_third,
    "queue-position-uncontended": sc_queue_position_uncontended,
    "queue-position-reader": sc_queue_position_reader,
}
