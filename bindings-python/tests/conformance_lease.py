"""The Python runner's scenarios of issue 33's lease semantics (cases.txt's last block), apart
from test_conformance.py, which is past the 700-line rule. ``valid_until()`` is read against
``time.monotonic()``; the scoped hold is ``with lock.hold()``; a foreign resign is
``b.resign(a_lead)`` with ``b`` a second election object on the same path and client."""

from __future__ import annotations

import time
from typing import Callable, Dict, List, Optional, Protocol

import zklock

MAX_HOLD = 1.0  # seconds: the maximum hold of the valid-until-max-hold scenarios
ROUNDING = 0.010  # what converting between clocks may add
WAIT = 10.0
# valid-until-max-hold-from-idle: a short session, the harness's tick, and an idle spell past the
# warm time (one session timeout) so that the acquire has to earn a fresh proof.
IDLE_SESSION = 2.0
IDLE_TICK = 0.2
IDLE_SPELL = 2.5


class Ctx(Protocol):
    @property
    def servers(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def shared(self) -> zklock.Client: ...


def against_max_hold(lease: zklock.Lease, acquired: float) -> str:
    until: Optional[float] = lease.valid_until()
    now = time.monotonic()
    if until is None:
        return "none"
    if until <= now:
        return "past"
    if until > acquired + MAX_HOLD + ROUNDING:
        return "beyond-max-hold"
    return "within-max-hold"


def sc_valid_until_max_hold(ctx: Ctx) -> str:
    with ctx.shared.lock(ctx.path, max_hold=MAX_HOLD).hold(WAIT) as lease:
        return against_max_hold(lease, time.monotonic())


def sc_valid_until_max_hold_election(ctx: Ctx) -> str:
    election = ctx.shared.election(ctx.path, style="latch", id="a", max_hold=MAX_HOLD)
    with election.lead(WAIT) as lead:
        return against_max_hold(lead, time.monotonic())


def sc_valid_until_max_hold_from_idle(ctx: Ctx) -> str:
    own = zklock.Client(ctx.servers, session_timeout=IDLE_SESSION, server_tick=IDLE_TICK)
    try:
        time.sleep(IDLE_SPELL)
        with own.lock(ctx.path, max_hold=MAX_HOLD).hold(WAIT) as lease:
            return against_max_hold(lease, time.monotonic())
    finally:
        own.close()


def sc_time_left_max_hold_short_session(ctx: Ctx) -> str:
    own = zklock.Client(ctx.servers, session_timeout=IDLE_SESSION, server_tick=IDLE_TICK)
    try:
        with own.lock(ctx.path, max_hold=MAX_HOLD).hold(WAIT) as lease:
            left: Optional[float] = lease.time_left()
            if left is None:
                return "none"
            if left <= 0:
                return "past"
            if left > MAX_HOLD + ROUNDING:
                return "beyond-max-hold"
            return "within-max-hold"
    finally:
        own.close()


def sc_lost_stays_lost(ctx: Ctx) -> str:
    own = zklock.Client(ctx.servers)
    lock = own.lock(ctx.path)
    assert lock.acquire(timeout=WAIT), "acquired"
    lease = lock.lease
    assert lease is not None, "a held lock has a lease"
    own.close()
    lock.release()
    reason = "reason" if lease.lost_reason is not None else "no-reason"
    return f"{lease.state},{reason}"


def sc_scope_end_after_loss(ctx: Ctx) -> str:
    own = zklock.Client(ctx.servers)
    try:
        with own.lock(ctx.path).hold(WAIT):
            own.close()
    except zklock.ZkLockError as e:
        return e.kind
    return "quiet"


def sc_resign_foreign_leadership(ctx: Ctx) -> str:
    a = ctx.shared.election(ctx.path, style="latch", id="a")
    b = ctx.shared.election(ctx.path, style="latch", id="b")
    lead = a.lead(WAIT)
    try:
        b.resign(lead)
        refused = "ok"
    except zklock.ZkLockError as e:
        refused = e.kind
    leader = a.leader()
    leads = lead.state == "held" and leader is not None and leader.id == "a"
    if lead.state != "released":
        a.resign(lead)
    return f"{refused},{'still-leads' if leads else 'not-leading'}"


def sc_lead_while_leading(ctx: Ctx) -> str:
    election = ctx.shared.election(ctx.path, style="latch", id="a")
    with election.lead(WAIT):
        try:
            with election.lead(2.0):
                return "acquired"
        except zklock.ZkLockError as e:
            return e.kind


def _kind(call: Callable[[], object]) -> str:
    try:
        call()
    except zklock.ZkLockError as e:
        return e.kind
    return "ok"


def sc_counter_width_unknown(ctx: Ctx) -> str:
    return _kind(lambda: ctx.shared.counter(ctx.path + "/n", width="int16"))


def sc_counter_guarded(ctx: Ctx) -> str:
    counter = ctx.shared.counter(ctx.path + "-counter", width="int64")
    with ctx.shared.lock(ctx.path).hold(WAIT) as lease:
        a = lease.guarded_increment(counter, 1).value
        b = lease.guarded_increment(counter, 41).value
    return f"{a},{b}"


def sc_counter_after_loss(ctx: Ctx) -> str:
    own = zklock.Client(ctx.servers)
    counter = own.counter(ctx.path + "-counter")
    lock = own.lock(ctx.path)
    assert lock.acquire(timeout=WAIT), "acquired"
    lease = lock.lease
    assert lease is not None, "a held lock has a lease"
    own.close()
    kind = _kind(lambda: lease.guarded_increment(counter))
    value = ctx.shared.counter(ctx.path + "-counter").get().value
    return f"{kind},{value}"


def sc_counter_int32_overflow(ctx: Ctx) -> str:
    counter = ctx.shared.counter(ctx.path + "-counter", width="int32")
    with ctx.shared.lock(ctx.path).hold(WAIT) as lease:
        lease.guarded_increment(counter, 2**31 - 1)
        kind = _kind(lambda: lease.guarded_increment(counter, 1))
    return f"{kind},{counter.get().value}"


def sc_counter_cas_stale(ctx: Ctx) -> str:
    counter = ctx.shared.counter(ctx.path + "-counter")
    seen = counter.get()
    first = counter.compare_and_set(seen, 7)
    second = counter.compare_and_set(seen, 9)
    words = ["stale" if c is None else str(c.value) for c in (first, second)]
    return ",".join(words)


def sc_extend_no_max_hold(ctx: Ctx) -> str:
    with ctx.shared.lock(ctx.path).hold(WAIT) as lease:
        return _kind(lambda: lease.extend(1.0))


def sc_extend_past_ceiling(ctx: Ctx) -> str:
    with ctx.shared.lock(ctx.path, max_hold=5.0, hold_ceiling=8.0).hold(WAIT) as lease:
        return f"{_kind(lambda: lease.extend(60.0))},{_kind(lambda: lease.extend(6.0))}"


def sc_extend_after_loss(ctx: Ctx) -> str:
    own = zklock.Client(ctx.servers)
    lock = own.lock(ctx.path, max_hold=30.0)
    assert lock.acquire(timeout=WAIT), "acquired"
    lease = lock.lease
    assert lease is not None, "a held lock has a lease"
    own.close()
    return _kind(lambda: lease.extend(1.0))


def sc_extend_moves_valid_until(ctx: Ctx) -> str:
    with ctx.shared.lock(ctx.path, max_hold=MAX_HOLD).hold(WAIT) as lease:
        acquired = time.monotonic()
        lease.extend(20.0)
        return against_max_hold(lease, acquired)


def sc_expiring_warns_first(ctx: Ctx) -> str:
    events: List[str] = []
    lock = ctx.shared.lock(ctx.path, max_hold=0.8)
    assert lock.acquire(timeout=WAIT), "acquired"
    lease = lock.lease
    assert lease is not None, "a held lock has a lease"
    lease.on_expiring(0.4, lambda left: events.append("expiring"))
    lease.on_lost(lambda: events.append("lost"))
    deadline = time.monotonic() + 10.0
    while "lost" not in events and time.monotonic() < deadline:
        time.sleep(0.02)
    lock.release()
    return ",".join(events)


def sc_rw_max_hold(ctx: Ctx) -> str:
    rw = ctx.shared.rw_lock(ctx.path, max_hold=0.5)
    words = []
    for side in (rw.read, rw.write):
        assert side.acquire(timeout=WAIT), "acquired"
        lease = side.lease
        assert lease is not None, "a held lock has a lease"
        deadline = time.monotonic() + 10.0
        while lease.state != "lost" and time.monotonic() < deadline:
            time.sleep(0.02)
        reason = lease.lost_reason or ""
        why = reason.split(" lost: ", 1)[1] if " lost: " in reason else ""
        words.append(why.split(":", 1)[0].strip())
        try:
            side.release()
        except zklock.ZkLockError:
            pass
    return ",".join(words)


def _lost_word(lease: zklock.Lease) -> str:
    reason = lease.lost_reason or ""
    why = reason.split(" lost: ", 1)[1] if " lost: " in reason else ""
    return why.split(":", 1)[0].strip()


def sc_multi_max_hold(ctx: Ctx) -> str:
    members = [f"{ctx.path}/a", f"{ctx.path}/b"]
    multi = ctx.shared.multi_lock(members, max_hold=0.5)
    assert multi.acquire(timeout=WAIT), "acquired"
    lease = multi.lease
    assert lease is not None, "a held lock has a lease"
    deadline = time.monotonic() + 10.0
    while lease.state != "lost" and time.monotonic() < deadline:
        time.sleep(0.02)
    why = _lost_word(lease)
    try:
        multi.release()
    except zklock.ZkLockError:
        pass
    again = ctx.shared.multi_lock(list(reversed(members)))
    if not again.acquire(timeout=10.0):
        return f"{why},not-acquired"
    again.release()
    return f"{why},acquired"


def sc_multi_max_hold_extend(ctx: Ctx) -> str:
    members = [f"{ctx.path}/a", f"{ctx.path}/b"]
    multi = ctx.shared.multi_lock(members, max_hold=MAX_HOLD, hold_ceiling=5.0)
    with multi.hold(WAIT) as lease:
        acquired = time.monotonic()
        first = _kind(lambda: lease.extend(60.0))
        lease.extend(3.0)
        return f"{first},{against_max_hold(lease, acquired)}"


def sc_multi_max_hold_zero(ctx: Ctx) -> str:
    return _kind(lambda: ctx.shared.multi_lock([f"{ctx.path}/a"], max_hold=0))


def sc_openmetrics(ctx: Ctx) -> str:
    own = zklock.Client(ctx.servers)
    try:
        with own.lock(ctx.path).hold(WAIT):
            pass
        text = own.openmetrics()
    finally:
        own.close()
    eof = "eof" if text.endswith("# EOF\n") else "no-eof"
    acquired = "none"
    for line in text.splitlines():
        if line.startswith("zklock_acquires_total{") and 'outcome="acquired"' in line:
            acquired = line.rsplit(" ", 1)[1]
    return f"{eof},acquired={acquired}"


def _sample(text: str, name: str, *labels: str) -> str:
    """The value of the first sample of ``name`` holding every label of ``labels``."""
    for line in text.splitlines():
        rest = line[len(name):]
        if line.startswith(name) and rest[:1] in ("{", " ") and all(x in line for x in labels):
            return line.rsplit(" ", 1)[1]
    return "none"


def sc_path_stats_bound(ctx: Ctx) -> str:
    own = zklock.Client(ctx.servers, path_stats_limit=1)
    try:
        with own.lock(ctx.path).hold(WAIT):
            pass
        with own.lock(ctx.path).hold(WAIT):
            with own.lock(f"{ctx.path}-other").hold(WAIT):
                pass
            text = own.openmetrics()
    finally:
        own.close()
    path, acquired = f'path="{ctx.path}"', 'outcome="acquired"'
    overflow = 'path="(overflow)"'
    return ",".join([
        f"acquired={_sample(text, 'zklock_path_acquires_total', path, acquired)}",
        f"held={_sample(text, 'zklock_path_held', path)}",
        f"overflow={_sample(text, 'zklock_path_acquires_total', overflow, acquired)}",
        f"folded={_sample(text, 'zklock_path_stats_folded_total')}",
    ])


LEASE_SCENARIOS: Dict[str, Callable[[Ctx], str]] = {
    "valid-until-max-hold": sc_valid_until_max_hold,
    "valid-until-max-hold-election": sc_valid_until_max_hold_election,
    "valid-until-max-hold-from-idle": sc_valid_until_max_hold_from_idle,
    "time-left-max-hold-short-session": sc_time_left_max_hold_short_session,
    "lost-stays-lost": sc_lost_stays_lost,
    "scope-end-after-loss": sc_scope_end_after_loss,
    "resign-foreign-leadership": sc_resign_foreign_leadership,
    "lead-while-leading": sc_lead_while_leading,
    "counter-width-unknown": sc_counter_width_unknown,
    "counter-guarded": sc_counter_guarded,
    "counter-after-loss": sc_counter_after_loss,
    "counter-int32-overflow": sc_counter_int32_overflow,
    "counter-cas-stale": sc_counter_cas_stale,
    "extend-no-max-hold": sc_extend_no_max_hold,
    "extend-past-ceiling": sc_extend_past_ceiling,
    "extend-after-loss": sc_extend_after_loss,
    "extend-moves-valid-until": sc_extend_moves_valid_until,
    "expiring-warns-first": sc_expiring_warns_first,
    "rw-max-hold": sc_rw_max_hold,
    "openmetrics": sc_openmetrics,
    "multi-max-hold": sc_multi_max_hold,
    "multi-max-hold-extend": sc_multi_max_hold_extend,
    "multi-max-hold-zero": sc_multi_max_hold_zero,
    "path-stats-bound": sc_path_stats_bound,
}
