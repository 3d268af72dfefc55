"""The Python runner's scenarios of issue 37's breaking of a stuck lock (cases.txt's block),
apart from test_conformance.py, which is past the 700-line rule: ``client.break_lock(path,
node, reason)`` from a second client; the broken holder's ``lease.lost`` and ``lost_reason``."""

from __future__ import annotations

import re
import threading
from typing import Callable, Dict, List, Optional

import zklock
from conformance_lease import Ctx

WAIT = 10.0
MISSING = "_c_00000000-0000-0000-0000-000000000000-lock-0000009999"


def _break_named(ctx: Ctx, node: str) -> str:
    other = zklock.Client(ctx.servers)
    try:
        with ctx.shared.lock(ctx.path).hold(WAIT):
            try:
                other.break_lock(ctx.path, node, "conformance")
                return "broken"
            except zklock.ZkLockError as e:
                return e.kind
    finally:
        other.close()


def sc_break_without_node(ctx: Ctx) -> str:
    return _break_named(ctx, "")


def sc_break_missing_node(ctx: Ctx) -> str:
    return _break_named(ctx, MISSING)


def sc_break_holder(ctx: Ctx) -> str:
    own, waiter, breaker = (zklock.Client(ctx.servers) for _ in range(3))
    try:
        lock = own.lock(ctx.path)
        assert lock.acquire(timeout=WAIT), "acquired"
        lease = lock.lease
        assert lease is not None, "a held lock has a lease"
        got: List[Optional[zklock.Lease]] = []
        waiting_lock = waiter.lock(ctx.path)

        def wait_turn() -> None:
            got.append(waiting_lock.lease if waiting_lock.acquire(timeout=WAIT) else None)

        thread = threading.Thread(target=wait_turn)
        thread.start()
        name = lease.path.rsplit("/", 1)[-1]
        broken = breaker.break_lock(ctx.path, name, "conformance")
        reason = "none"
        if lease.lost.wait(WAIT):
            why = (lease.lost_reason or "").split(" lost: ", 1)[-1]
            reason = re.split("[: ]", why)[0]
        state = lease.state
        thread.join(WAIT + 5)
        next_lease = got[0] if got else None
        up = "token-up" if next_lease is not None and next_lease.token > broken.token else "token-down"
        if next_lease is not None:
            next_lease.release()  # the lease's own release: the waiter's thread is done
        try:
            lock.release()
        except zklock.ZkLockError:
            pass
        return f"{state},{reason},{up}"
    finally:
        for c in (own, waiter, breaker):
            c.close()


def op_lock_delay(ctx: Ctx, text: str) -> str:
    lock = ctx.shared.lock(ctx.path, lock_delay=float(text))
    if not lock.acquire(blocking=False):
        return "not-acquired"
    lock.release()
    return "ok"


BREAK_SCENARIOS: Dict[str, Callable[[Ctx], str]] = {
    "break-without-node": sc_break_without_node,
    "break-missing-node": sc_break_missing_node,
    "break-holder": sc_break_holder,
}
