"""The conformance suite's Python runner: every case of `tests/conformance/cases.txt` (format and
ops: `tests/conformance/README.md`) performed through zklock's public Python API, one pytest
test per case (parametrised by the case id: a line added to cases.txt is a new test here with
no other change), against the harness's real ZooKeeper.

How this runner performs what the data file leaves to each face (what a Python user writes):

* an outcome is the value of the call, or the exception it raises mapped to the core's kind
  name by its class (``zklock.InvalidArgument`` -> ``InvalidArgument``, ``zklock.ClientClosed``
  -> ``Closed``, ...: the table ``KINDS``); the exception's ``kind`` attribute must say the same
  name (the face shows the core's names, it defines none of its own). Any other exception (a
  ``TypeError`` from a missing method, say) is an outcome ``unexpected ...`` and so a mismatch.
  Every error message must be at most 300 characters.
* ``not-acquired``: ``Lock.acquire`` returning ``False`` (the ``threading.Lock`` idiom), or
  ``LockTimeout`` from an acquire that was asked to wait at most a while.
* a try is ``lock.acquire(blocking=False)``; a bounded hold is ``with lock.hold(seconds) as
  lease``; a timeout is ``lock.acquire(timeout=seconds)`` with the input as a float of seconds
  (``float("nan")``, ``float("inf")``, ``1e300``), ``-1`` passed as ``-1`` (threading's
  "forever").
* ``release-not-held``: ``lock.release()`` on a lock this thread never acquired (as
  ``threading.Lock().release()`` raises ``RuntimeError``; ``zklock.NotHeld`` is one).
* ``release-twice``: ``lock.acquire()``, then ``lock.release()`` twice (the threading idiom; the
  handle is the lock object).
* owners are threads: ``second-owner-try`` holds the lock in the test's thread and tries it
  from another thread, on the same ``Lock`` object; ``reenter-same-owner`` reads the thread's
  count from ``lock.hold_count()``.
* the release outcome is the value ``Lease.release()`` returns; a state is ``Lease.state``; a
  node's kind and library are the ``kind`` / ``library`` of the ``Participant`` whose ``node``
  is our lease's ``path``.
* a semaphore's N is ``client.semaphore(path, int(input))``; a try on it is
  ``sem.acquire(blocking=False)``; ``semaphore-two-leases-one-value`` holds ``with sem`` and
  tries ``sem.acquire(blocking=False)`` on the same object and thread; revocation is heard
  through ``Lease.on_revoke`` and asked with ``Client.revoke(path)``.
* session timeouts are ``Client(session_timeout=float(input))`` seconds, connect strings are
  ``Client(input, connect_timeout=5.0)``, ACL names ``Client(auth="user:secret", acl=input)``.
* elections: ``client.election(path, style=, id=)``; a try is ``election.lead(timeout=0)``,
  a wait ``election.lead()`` (another participant's, in a thread of its own); a resign is
  ``election.resign(lead)`` (``requeue=True`` gives a ``LeadAttempt`` whose ``result()`` is the
  next leadership); ids read back are ``Participant.id`` of ``election.leader()`` /
  ``election.participants()``; observing is ``client.observe_leader(path).next(timeout=)``;
  ``proclaim`` is ``election.proclaim(lead, "p-data")``; sequencer checks ``client.check(path,
  token)``; a maximum hold ``client.lock(path, max_hold=float(input))`` with the lost reason
  from ``Lease.lost_reason``; ``valid_until()`` is read against ``time.monotonic()``.

Each case that needs a lock of its own gets ``/conformance/python/<id>-<pid>``. A case this face
cannot express would be reported as n/a by name (``NOT_APPLICABLE``); today every case can be
expressed in Python.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Type

import pytest

import zklock
from conftest import CONFORMANCE, Harness
from conformance_break import BREAK_SCENARIOS, op_lock_delay
from conformance_lease import LEASE_SCENARIOS
from conformance_queue import QUEUE_SCENARIOS
import conformance_peers
from conformance_peers import PEER_SCENARIOS

REPO = Path(__file__).resolve().parents[2]
CASES_FILE = REPO / "tests" / "conformance" / "cases.txt"
MAX_MESSAGE = 300
WAIT = 10.0  # seconds any acquire that should succeed may take on a loaded machine


class Case(NamedTuple):
    id: str
    op: str
    input: str  # decoded, before $SERVERS is replaced
    expected: str
    problem: str  # non-empty when the line itself is malformed


# ---------------------------------------------------------------------------------------------
# The data file


def decode(text: str) -> str:
    """The README's input encoding: `%XX` is a byte, `%*N(x)` is x repeated N times; the bytes
    are UTF-8. Raises ValueError on a malformed escape."""
    raw = text.encode("utf-8")
    out = bytearray()
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != ord("%"):
            out.append(c)
            i += 1
            continue
        if raw[i + 1 : i + 2] == b"*":
            close = raw.find(b")", i)
            open_ = raw.find(b"(", i)
            if open_ < 0 or close < 0 or close < open_:
                raise ValueError(f"malformed repeat at column {i}")
            count = raw[i + 2 : open_].decode("ascii")
            unit = raw[open_ + 1 : close].decode("utf-8")
            if not count.isdigit() or len(unit) != 1:
                raise ValueError(f"malformed repeat at column {i}: %*{count}({unit})")
            out += unit.encode("utf-8") * int(count)
            i = close + 1
            continue
        pair = raw[i + 1 : i + 3].decode("ascii", "replace")
        if len(pair) != 2 or any(ch not in "0123456789abcdefABCDEF" for ch in pair):
            raise ValueError(f"malformed escape %{pair} at column {i}")
        out.append(int(pair, 16))
        i += 3
    return out.decode("utf-8")


def load_cases() -> List[Case]:
    cases: List[Case] = []
    seen: Dict[str, int] = {}
    for number, line in enumerate(CASES_FILE.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        columns = [c.strip() for c in line.split("|")]
        if len(columns) != 4 or not columns[0]:
            cases.append(Case(f"line-{number}", "", "", "", f"line {number}: not 4 columns"))
            continue
        case_id, op, encoded, expected = columns
        problem = ""
        try:
            decoded = decode(encoded)
        except ValueError as e:
            decoded, problem = "", f"line {number}: {e}"
        if case_id in seen:
            problem = f"line {number}: id {case_id} already used on line {seen[case_id]}"
            case_id = f"{case_id}@{number}"
        seen[case_id] = number
        cases.append(Case(case_id, op, decoded, expected, problem))
    return cases


CASES = load_cases()

# ---------------------------------------------------------------------------------------------
# Outcomes

KINDS: Dict[Type[BaseException], str] = {
    zklock.LockTimeout: "Timeout",
    zklock.Cancelled: "Cancelled",
    zklock.LockLost: "LockLost",
    zklock.SessionExpired: "SessionExpired",
    zklock.ConnectionFailed: "Connection",
    zklock.NotHeld: "NotHeld",
    zklock.UpgradeNotAllowed: "UpgradeNotAllowed",
    zklock.InvalidArgument: "InvalidArgument",
    zklock.ClientClosed: "Closed",
    zklock.PermissionDenied: "Permission",
    zklock.ZooKeeperError: "ZooKeeper",
    zklock.InternalError: "Internal",
    zklock.OutcomeUnknown: "OutcomeUnknown",
    zklock.Conflict: "Conflict",
}


class Failure(Exception):
    """The outcome of a case was an exception: its kind name and the exception."""

    def __init__(self, kind: str, error: BaseException) -> None:
        super().__init__(kind)
        self.kind = kind
        self.error = error


def kind_of(error: BaseException) -> str:
    for cls in type(error).__mro__:
        if cls in KINDS:
            return KINDS[cls]
    return f"unexpected {type(error).__name__}: {str(error)[:200]}"


class Ctx(NamedTuple):
    servers: str
    path: str  # the case's own lock path
    shared: zklock.Client  # a connected client for ops that do not close theirs


def acquired(got: bool, lock: zklock.Lock) -> str:
    if got:
        lock.release()
        return "acquired"
    return "not-acquired"


def try_from_thread(attempt: Callable[[], bool]) -> bool:
    """Runs `attempt` in another thread (another owner) and returns its result."""
    result: List[object] = []

    def run() -> None:
        try:
            result.append(attempt())
        except BaseException as e:  # handed back to the test's thread
            result.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join(WAIT * 2)
    assert result, "the second owner's try did not end"
    if isinstance(result[0], BaseException):
        raise result[0]
    return bool(result[0])


def our_node(participants: List[zklock.Participant], lease: zklock.Lease) -> zklock.Participant:
    mine = [p for p in participants if p.node == lease.path]
    assert len(mine) == 1, f"our node {lease.path} is not once in {participants}"
    return mine[0]


# ---------------------------------------------------------------------------------------------
# Ops


def op_path(ctx: Ctx, text: str) -> str:
    lock = ctx.shared.lock(text)
    return "ok" if acquired(lock.acquire(blocking=False), lock) == "acquired" else "not-acquired"


def op_rwpath(ctx: Ctx, text: str) -> str:
    ctx.shared.rw_lock(text)
    return "ok"


def op_multi(ctx: Ctx, text: str) -> str:
    ctx.shared.multi_lock(text.split(",") if text else [])
    return "ok"


def op_hosts(ctx: Ctx, text: str) -> str:
    zklock.Client(text, connect_timeout=5.0).close()
    return "ok"


def op_server_tick(ctx: Ctx, text: str) -> str:
    zklock.Client(
        ctx.servers, session_timeout=4.0, connect_timeout=5.0, server_tick=float(text)
    ).close()
    return "ok"


def op_learned_tick(ctx: Ctx, text: str) -> str:
    named = None if text == "" else float(text)
    client = zklock.Client(ctx.servers, session_timeout=4.0, connect_timeout=5.0, server_tick=named)
    try:
        return str(round(client.server_tick * 1000))
    finally:
        client.close()


def op_server_features(ctx: Ctx, text: str) -> str:
    client = zklock.Client(ctx.servers, connect_timeout=5.0)
    try:
        return str(client.server_features()["version"])
    finally:
        client.close()


def op_session_timeout(ctx: Ctx, text: str) -> str:
    zklock.Client(ctx.servers, session_timeout=float(text), connect_timeout=5.0).close()
    return "ok"


def op_identity(ctx: Ctx, text: str) -> str:
    zklock.Client(ctx.servers, identity=text, connect_timeout=5.0).close()
    return "ok"


def op_path_stats_limit(ctx: Ctx, text: str) -> str:
    zklock.Client(ctx.servers, path_stats_limit=int(text), connect_timeout=5.0).close()
    return "ok"


def op_acl(ctx: Ctx, text: str) -> str:
    zklock.Client(ctx.servers, auth="user:secret", acl=text, connect_timeout=5.0).close()
    return "ok"


def op_secret(ctx: Ctx, text: str) -> str:
    """Nothing the Python face shows (repr of client, lock, lease, participants; the error of a
    malformed credential) holds the password."""
    shown = ""
    with zklock.Client(
        ctx.servers, auth=f"conformance:{text}", acl="creator-all", connect_timeout=5.0
    ) as client:
        lock = client.lock(ctx.path)
        with lock as lease:
            shown += repr(client) + repr(lock) + repr(lease) + repr(lock.participants())
    try:
        zklock.Client(ctx.servers, auth=text, connect_timeout=5.0).close()
    except zklock.InvalidArgument as e:
        shown += str(e) + repr(e)
    else:
        pytest.fail("a credential without ':' was accepted", pytrace=False)
    return "shown" if text in shown else "hidden"


def pem_body_shown(shown: str, pem: str) -> bool:
    """Whether `shown` holds 12 consecutive characters of the PEM's body (no boundaries)."""
    body = "".join(line.strip() for line in pem.splitlines() if not line.strip().startswith("-----"))
    return any(body[i : i + 12] in shown for i in range(len(body) - 11))


def op_secret_pem(ctx: Ctx, text: str) -> str:
    """A PEM key given as content (or its body alone) to the TLS options: no error shows it."""
    shown = ""
    for options in (
        {"tls_ca": text},
        {"tls_ca": text, "tls_cert": text, "tls_key": text},
        {"tls_key": text},
    ):
        try:
            zklock.Client(ctx.servers, connect_timeout=5.0, **options).close()
        except zklock.ZkLockError as e:
            shown += str(e) + repr(e)
        else:
            return "connected"
    return "shown" if pem_body_shown(shown, text) else "hidden"


def op_sasl(ctx: Ctx, text: str) -> str:
    user, password = text.split(":", 1)
    try:
        zklock.Client(
            ctx.servers, sasl_user=user, sasl_password=password, connect_timeout=5.0
        ).close()
    except zklock.ZkLockError as e:
        if password in str(e) + repr(e):
            return "shown"
        raise
    return "ok"


def op_semaphore(ctx: Ctx, text: str) -> str:
    sem = ctx.shared.semaphore(ctx.path, int(text))
    # At most 5 s, not a try: the first lease also creates `leases` and its parents.
    if not sem.acquire(timeout=5.0):
        return "not-acquired"
    sem.release()
    return "ok"


def op_timeout(ctx: Ctx, text: str) -> str:
    seconds: float = -1 if text == "-1" else float(text)
    holding = threading.Event()
    with zklock.Client(ctx.servers) as holder_client, zklock.Client(ctx.servers) as client:

        def hold_300ms() -> None:
            with holder_client.lock(ctx.path).hold(WAIT):
                holding.set()
                threading.Event().wait(0.3)

        holder = threading.Thread(target=hold_300ms)
        holder.start()
        try:
            assert holding.wait(WAIT), "the second client could not take the lock"
            lock = client.lock(ctx.path)
            try:
                return acquired(lock.acquire(timeout=seconds), lock)
            except zklock.LockTimeout:
                return "not-acquired"
        finally:
            holder.join(WAIT)


def op_guarded_timeout(ctx: Ctx, text: str) -> str:
    seconds: float = -1 if text == "-1" else float(text)
    data = ctx.path + "-data"
    with ctx.shared.lock(ctx.path).hold(WAIT) as lease:
        try:
            (created,) = lease.guarded_write([("create", data, b"a")], timeout=seconds)
        except zklock.ZkLockError as e:
            # Nothing may have been written: the same create must succeed now.
            try:
                lease.guarded_write([("create", data, b"")])
            except zklock.ZooKeeperError:
                return "written-after-timeout"
            lease.guarded_write([("delete", data)])
            return kind_of(e)
        lease.guarded_write([("delete", data)])
    return "created" if created == data else str(created)


def op_guarded_size(ctx: Ctx, text: str) -> str:
    data = ctx.path + "-data"
    lock = ctx.shared.lock(ctx.path)
    with lock.hold(WAIT) as lease:
        try:
            lease.guarded_write([("create", data, b"a" * int(text))])
        except zklock.ZkLockError as e:
            outcome = kind_of(e)
        else:
            lease.guarded_write([("delete", data)])
            outcome = "created"
        state = lease.state
    return outcome if state == "held" else f"{outcome},{state}"


def op_participants_timeout(ctx: Ctx, text: str) -> str:
    seconds: float = -1 if text == "-1" else float(text)
    lock = ctx.shared.lock(ctx.path)
    with lock.hold(WAIT):
        return f"listed={len(lock.participants(timeout=seconds))}"


def op_election_style(ctx: Ctx, text: str) -> str:
    election = ctx.shared.election(ctx.path, style=text, id="conformance")
    with election.lead(timeout=0):
        pass
    return "ok"


def op_election_id(ctx: Ctx, text: str) -> str:
    election = ctx.shared.election(ctx.path, id=text)
    with election.lead(timeout=0):
        leader = election.leader()
    assert leader is not None, "we lead, yet the election has no leader"
    return "ok" if leader.id == text else "id-differs"


def op_max_hold(ctx: Ctx, text: str) -> str:
    lock = ctx.shared.lock(ctx.path, max_hold=float(text))
    reason = ""
    try:
        with lock.hold(WAIT) as lease:
            if not lease.lost.wait(5.0):
                return "held"
            reason = lease.lost_reason or ""
    except zklock.LockLost:
        pass  # leaving the block after the loss is loud (issue 33); the reason was read inside
    why = reason.split(" lost: ", 1)[1] if " lost: " in reason else ""
    return f"lost,{re.split('[: ]', why)[0]}"


def wait_for_participants(election: zklock.Election, n: int) -> None:
    deadline = time.monotonic() + 5.0
    while len(election.participants()) != n:
        assert time.monotonic() < deadline, f"the election on {election.path} never had {n}"
        time.sleep(0.05)


class LeadInThread:
    """`election.lead()` (no timeout) in a thread of its own, as another participant waits."""

    def __init__(self, election: zklock.Election) -> None:
        self.election = election
        self.result: List[object] = []
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result.append(self.election.lead())
        except BaseException as e:
            self.result.append(e)

    def lease(self) -> zklock.Lease:
        self.thread.join(WAIT)
        if not self.result:
            self.election.cancel()
            self.thread.join(WAIT)
            pytest.fail("the waiting participant never led", pytrace=False)
        got = self.result[0]
        if isinstance(got, BaseException):
            raise got
        assert isinstance(got, zklock.Lease)
        return got


# -- scenarios ---------------------------------------------------------------------------------


def sc_reenter_same_owner(ctx: Ctx) -> str:
    lock = ctx.shared.lock(ctx.path)
    assert lock.acquire(timeout=WAIT)
    try:
        assert lock.acquire(timeout=WAIT)
        try:
            count = lock.hold_count()  # type: ignore[attr-defined]
            return "held-twice" if count == 2 else f"hold count {count}"
        finally:
            lock.release()
    finally:
        lock.release()


def sc_concurrent_callers_one_value(ctx: Ctx) -> str:
    """Five threads share one ``Lock`` object (issue 50): one inside at a time, increasing
    tokens, and a nested ``with lock.hold()`` counts up the thread's own hold."""
    lock = ctx.shared.lock(ctx.path)
    guard = threading.Lock()
    inside = [0, 0]  # now, most
    tokens: List[int] = []
    counted: List[bool] = []
    start = threading.Barrier(5)

    def caller() -> None:
        start.wait()
        with lock.hold(WAIT) as lease:
            with guard:
                inside[0] += 1
                inside[1] = max(inside[1], inside[0])
                tokens.append(lease.token)
            with lock.hold(WAIT) as nested:
                count = lock.hold_count()  # type: ignore[attr-defined]
                ok = count == 2 and nested.token == lease.token
                time.sleep(0.02)
            with guard:
                inside[0] -= 1
                counted.append(ok)

    threads = [threading.Thread(target=caller) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    up = len(tokens) == 5 and all(a < b for a, b in zip(tokens, tokens[1:]))
    return ",".join(
        [
            "excluded" if inside[1] == 1 else "overlapped",
            "tokens-up" if up else "tokens-not-up",
            "counted-up" if len(counted) == 5 and all(counted) else "not-counted",
        ]
    )


def sc_second_owner_try(ctx: Ctx) -> str:
    lock = ctx.shared.lock(ctx.path)
    with lock.hold(WAIT):
        return acquired_in_thread(lock)


def acquired_in_thread(lock: zklock.Lock) -> str:
    def attempt() -> bool:
        got = lock.acquire(blocking=False)
        if got:
            lock.release()
        return got

    return "acquired" if try_from_thread(attempt) else "not-acquired"


def sc_other_client_try(ctx: Ctx) -> str:
    with zklock.Client(ctx.servers) as other, ctx.shared.lock(ctx.path).hold(WAIT):
        lock = other.lock(ctx.path)
        return acquired(lock.acquire(blocking=False), lock)


def sc_release_twice(ctx: Ctx) -> str:
    lock = ctx.shared.lock(ctx.path)
    assert lock.acquire(timeout=WAIT)
    lock.release()
    lock.release()
    return "released twice"


def sc_release_not_held(ctx: Ctx) -> str:
    ctx.shared.lock(ctx.path).release()
    return "released"


def sc_lock_after_close(ctx: Ctx) -> str:
    client = zklock.Client(ctx.servers)
    client.close()
    client.lock(ctx.path)
    return "ok"


def sc_acquire_after_close(ctx: Ctx) -> str:
    client = zklock.Client(ctx.servers)
    lock = client.lock(ctx.path)
    client.close()
    return acquired(lock.acquire(timeout=WAIT), lock)


def sc_upgrade(ctx: Ctx) -> str:
    rw = ctx.shared.rw_lock(ctx.path)
    with rw.read.hold(WAIT):
        return acquired(rw.write.acquire(timeout=WAIT), rw.write)


def sc_downgrade(ctx: Ctx) -> str:
    rw = ctx.shared.rw_lock(ctx.path)
    with rw.write.hold(WAIT):
        return acquired(rw.read.acquire(timeout=WAIT), rw.read)


def sc_state_held(ctx: Ctx) -> str:
    with ctx.shared.lock(ctx.path).hold(WAIT) as lease:
        return lease.state


def sc_state_released(ctx: Ctx) -> str:
    with ctx.shared.lock(ctx.path).hold(WAIT) as lease:
        pass
    return lease.state


def sc_state_lost_on_close(ctx: Ctx) -> str:
    client = zklock.Client(ctx.servers)
    with pytest.raises(zklock.LockLost):  # leaving it after the loss is loud (issue 33)
        with client.lock(ctx.path).hold(WAIT) as lease:
            client.close()
            state = lease.state
    return state


def sc_subscription(ctx: Ctx) -> str:
    # The states an on_state callback hears until lost, then 300 ms more (nothing may follow).
    heard: List[str] = []
    lost = threading.Event()

    def record(state: str) -> None:
        heard.append(state)
        if state == "lost":
            lost.set()

    client = zklock.Client(ctx.servers)
    with pytest.raises(zklock.LockLost):  # leaving it after the loss is loud (issue 33)
        with client.lock(ctx.path).hold(WAIT) as lease:
            lease.on_state(record)
            client.close()
            lost.wait(5.0)
            threading.Event().wait(0.3)
    return ",".join(heard)


def sc_release_outcome(ctx: Ctx) -> str:
    with ctx.shared.lock(ctx.path).hold(WAIT) as lease:
        return str(lease.release())


def sc_release_outcome_reentrant(ctx: Ctx) -> str:
    lock = ctx.shared.lock(ctx.path)
    with lock.hold(WAIT):
        with lock.hold(WAIT) as inner:
            return str(inner.release())


def sc_release_outcome_lost(ctx: Ctx) -> str:
    client = zklock.Client(ctx.servers)
    with client.lock(ctx.path).hold(WAIT) as lease:
        client.close()
        return str(lease.release())


def sc_kind_mutex(ctx: Ctx) -> str:
    lock = ctx.shared.lock(ctx.path)
    with lock.hold(WAIT) as lease:
        return our_node(lock.participants(), lease).kind


def sc_kind_read(ctx: Ctx) -> str:
    rw = ctx.shared.rw_lock(ctx.path)
    with rw.read.hold(WAIT) as lease:
        return our_node(rw.participants(), lease).kind


def sc_kind_write(ctx: Ctx) -> str:
    rw = ctx.shared.rw_lock(ctx.path)
    with rw.write.hold(WAIT) as lease:
        return our_node(rw.participants(), lease).kind


def sc_library(ctx: Ctx) -> str:
    lock = ctx.shared.lock(ctx.path)
    with lock.hold(WAIT) as lease:
        return our_node(lock.participants(), lease).library


def sc_stats_outcomes(ctx: Ctx) -> str:
    with zklock.Client(ctx.servers) as client, zklock.Client(ctx.servers) as other:
        lock = client.lock(ctx.path)
        held_elsewhere = other.lock(ctx.path)
        assert held_elsewhere.acquire(timeout=WAIT)
        assert not lock.acquire(blocking=False)
        held_elsewhere.release()
        with lock.hold(WAIT):
            held = client.stats().held
        s = client.stats()
        return (
            f"acquired={s.acquired},timed_out={s.timed_out},held={held},after={s.held},"
            f"holds={s.hold.count}"
        )


def sc_stats_lost(ctx: Ctx) -> str:
    client = zklock.Client(ctx.servers)
    with pytest.raises(zklock.LockLost):  # leaving it after the loss is loud (issue 33)
        with client.lock(ctx.path).hold(WAIT) as lease:
            client.close()
            lease.lost.wait(5.0)
            s = client.stats()
    return f"lost={s.lost},held={s.held}"


def sc_guarded_write(ctx: Ctx) -> str:
    data = ctx.path + "-data"
    with ctx.shared.lock(ctx.path).hold(WAIT) as lease:
        (created,) = lease.guarded_write([("create", data, b"a")])
        version, deleted = lease.guarded_write([("set_data", data, b"b"), ("delete", data)])
    return f"{'created' if created == data else created},version={version}," + (
        "deleted" if deleted is None else str(deleted)
    )


def sc_guarded_write_lost(ctx: Ctx) -> str:
    data = ctx.path + "-data"
    client = zklock.Client(ctx.servers)
    with client.lock(ctx.path).hold(WAIT) as lease:
        client.close()
        try:
            lease.guarded_write([("create", data, b"late")])
            outcome = "written"
        except zklock.ZkLockError as e:
            outcome = kind_of(e)
    with ctx.shared.lock(ctx.path).hold(WAIT) as other:
        try:
            other.guarded_write([("create", data, b"")])
        except zklock.ZooKeeperError:
            return "written-after-loss"
        other.guarded_write([("delete", data)])
    return outcome


def sc_guarded_write_unknown_op(ctx: Ctx) -> str:
    with ctx.shared.lock(ctx.path).hold(WAIT) as lease:
        lease.guarded_write([("append", ctx.path + "-data", b"x")])
    return "written"


def sc_semaphore_fills(ctx: Ctx) -> str:
    with zklock.Client(ctx.servers) as a, zklock.Client(ctx.servers) as b:
        with a.semaphore(ctx.path, 2).hold(WAIT), b.semaphore(ctx.path, 2).hold(WAIT):
            sem = ctx.shared.semaphore(ctx.path, 2)
            return acquired(sem.acquire(blocking=False), sem)


def sc_semaphore_two_leases_one_value(ctx: Ctx) -> str:
    sem = ctx.shared.semaphore(ctx.path, 2)
    with sem as first:
        if not sem.acquire(blocking=False):
            return "not-acquired"
        second = sem.lease
        assert second is not None
        same = second.path == first.path
        second.release()
        return "same-node" if same else "acquired"


def sc_semaphore_mutex_not_reentrant(ctx: Ctx) -> str:
    sem = ctx.shared.semaphore_mutex(ctx.path)
    with sem:
        return acquired(sem.acquire(blocking=False), sem)


def sc_kind_lease(ctx: Ctx) -> str:
    sem = ctx.shared.semaphore(ctx.path, 2)
    with sem as lease:
        return our_node(sem.participants(), lease).kind


def sc_revoke_requested(ctx: Ctx) -> str:
    lock = ctx.shared.lock(ctx.path)
    with lock as lease, zklock.Client(ctx.servers) as other:
        heard = threading.Event()
        lease.on_revoke(heard.set)
        other.revoke(ctx.path)
        return "revoke-requested" if heard.wait(5) else "not-requested"


def sc_revoke_not_held(ctx: Ctx) -> str:
    ctx.shared.revoke(ctx.path)
    return "revoked"


def sc_connection_states(ctx: Ctx) -> str:
    heard: List[str] = []
    lost = threading.Event()

    def listener(state: str) -> None:
        heard.append(state)
        if state == "lost":
            lost.set()

    client = zklock.Client(ctx.servers)
    client.add_listener(listener)
    client.close()
    assert lost.wait(WAIT), f"no 'lost' heard: {heard}"
    threading.Event().wait(0.3)
    return ",".join(heard)


def sc_cancel_waiting_acquire(ctx: Ctx) -> str:
    with ctx.shared.lock(ctx.path).hold(WAIT):
        with zklock.Client(ctx.servers) as client:
            lock = client.lock(ctx.path)

            def cancel_once_waiting() -> None:
                threading.Event().wait(0.2)
                # cancel() says how many acquires it cancelled: none before this one waits.
                for _ in range(int(WAIT / 0.05)):
                    if lock.cancel():
                        return
                    threading.Event().wait(0.05)

            canceller = threading.Thread(target=cancel_once_waiting)
            canceller.start()
            try:
                lock.acquire()
                outcome = "acquired"
            except zklock.ZkLockError as e:
                outcome = kind_of(e)
            finally:
                canceller.join()
            if len(ctx.shared.lock(ctx.path).participants()) != 1:
                return "left-node"
            return outcome


def sc_election_handover(ctx: Ctx) -> str:
    with zklock.Client(ctx.servers) as other:
        a = ctx.shared.election(ctx.path, style="selector", id="a")
        b = other.election(ctx.path, style="selector", id="b")
        a_lead = a.lead(WAIT)
        waiting = LeadInThread(b)
        a.resign(a_lead)
        b_lead = waiting.lease()
        leader = a.leader()
        up = "token-up" if b_lead.token > a_lead.token else "token-down"
        b.resign(b_lead)
        return f"{leader.id if leader else 'none'},{up}"


def sc_election_requeue(ctx: Ctx) -> str:
    with zklock.Client(ctx.servers) as other:
        a = ctx.shared.election(ctx.path, style="latch", id="a")
        b = other.election(ctx.path, style="latch", id="b")
        a_lead = a.lead(WAIT)
        waiting = LeadInThread(b)
        wait_for_participants(a, 2)
        again = a.resign(a_lead, requeue=True)
        assert again is not None, "resign(requeue=True) gave no attempt"
        b_lead = waiting.lease()
        wait_for_participants(a, 2)
        order = [p.id for p in a.participants()]
        b.resign(b_lead)
        again.result(WAIT).release()
        return ",".join(order)


def sc_election_mixed_layouts(ctx: Ctx) -> str:
    with zklock.Client(ctx.servers) as other:
        theirs = other.election(ctx.path, style="latch", id="latch").lead(WAIT)
        try:
            ctx.shared.election(ctx.path, style="selector", id="selector").lead(timeout=0)
            outcome = "led"
        except zklock.ZkLockError as e:
            outcome = kind_of(e)
        left = len(ctx.shared.lock(ctx.path).participants())
        theirs.release()
    return "left-node" if left != 1 else outcome


def leader_id(leader: Optional[zklock.Participant]) -> str:
    return "none" if leader is None else leader.id


def sc_election_observe(ctx: Ctx) -> str:
    with zklock.Client(ctx.servers) as other:
        watch = ctx.shared.observe_leader(ctx.path)
        seen = [leader_id(watch.next(timeout=10.0))]
        a = other.election(ctx.path, style="selector", id="a")
        lead = a.lead(WAIT)
        seen.append(leader_id(watch.next(timeout=10.0)))
        a.resign(lead)
        seen.append(leader_id(watch.next(timeout=10.0)))
        return ",".join(seen)


def sc_election_proclaim(ctx: Ctx) -> str:
    with zklock.Client(ctx.servers) as other:
        a = ctx.shared.election(ctx.path, style="latch", id="a")
        with a.lead(WAIT) as lead:
            a.proclaim(lead, "p-data")
            return leader_id(other.election(ctx.path, style="latch").leader())


def sc_kind_latch(ctx: Ctx) -> str:
    election = ctx.shared.election(ctx.path, style="latch")
    with election.lead(WAIT) as lead:
        return our_node(election.participants(), lead).kind


def sc_library_kazoo_style(ctx: Ctx) -> str:
    election = ctx.shared.election(ctx.path, style="kazoo")
    with election.lead(WAIT) as lead:
        return our_node(election.participants(), lead).library


def sc_check_token(ctx: Ctx) -> str:
    with zklock.Client(ctx.servers) as other:
        with ctx.shared.lock(ctx.path).hold(WAIT) as lease:
            before = other.check(ctx.path, lease.token)
        after = other.check(ctx.path, lease.token)
        return f"{str(before).lower()},{str(after).lower()}"


def sc_valid_until(ctx: Ctx) -> str:
    own = zklock.Client(ctx.servers)
    with pytest.raises(zklock.LockLost):  # leaving it after the loss is loud (issue 33)
        with own.lock(ctx.path).hold(WAIT) as lease:
            until = lease.valid_until()
            now = time.monotonic()
            if until is None:
                first = "none"
            elif until <= now:
                first = "past"
            elif until > now + own.session_timeout:
                first = "beyond"
            else:
                first = "ahead"
            own.close()
            second = "none" if lease.valid_until() is None else "some"
    return f"{first},{second}"


SCENARIOS: Dict[str, Callable[[Ctx], str]] = {
    "reenter-same-owner": sc_reenter_same_owner,
    "concurrent-callers-one-value": sc_concurrent_callers_one_value,
    "second-owner-try": sc_second_owner_try,
    "other-client-try": sc_other_client_try,
    "release-twice": sc_release_twice,
    "release-not-held": sc_release_not_held,
    "lock-after-close": sc_lock_after_close,
    "acquire-after-close": sc_acquire_after_close,
    "upgrade": sc_upgrade,
    "downgrade": sc_downgrade,
    "state-held": sc_state_held,
    "state-released": sc_state_released,
    "state-lost-on-close": sc_state_lost_on_close,
    "subscription": sc_subscription,
    "release-outcome": sc_release_outcome,
    "release-outcome-reentrant": sc_release_outcome_reentrant,
    "release-outcome-lost": sc_release_outcome_lost,
    "kind-mutex": sc_kind_mutex,
    "kind-read": sc_kind_read,
    "kind-write": sc_kind_write,
    "library": sc_library,
    "stats-outcomes": sc_stats_outcomes,
    "stats-lost": sc_stats_lost,
    "guarded-write": sc_guarded_write,
    "guarded-write-lost": sc_guarded_write_lost,
    "guarded-write-unknown-op": sc_guarded_write_unknown_op,


    "semaphore-fills": sc_semaphore_fills,
    "semaphore-two-leases-one-value": sc_semaphore_two_leases_one_value,
    "semaphore-mutex-not-reentrant": sc_semaphore_mutex_not_reentrant,
    "kind-lease": sc_kind_lease,
    "connection-states": sc_connection_states,
    "cancel-waiting-acquire": sc_cancel_waiting_acquire,
    "revoke-requested": sc_revoke_requested,
    "revoke-not-held": sc_revoke_not_held,
    "election-handover": sc_election_handover,
    "election-requeue": sc_election_requeue,
    "election-mixed-layouts": sc_election_mixed_layouts,
    "election-observe": sc_election_observe,
    "election-proclaim": sc_election_proclaim,
    "kind-latch": sc_kind_latch,
    "library-kazoo-style": sc_library_kazoo_style,
    "check-token": sc_check_token,
    "valid-until": sc_valid_until,
    **LEASE_SCENARIOS,
    **BREAK_SCENARIOS,
    **QUEUE_SCENARIOS,
    **PEER_SCENARIOS,
}


def op_scenario(ctx: Ctx, text: str) -> str:
    scenario = SCENARIOS.get(text)
    if scenario is None:
        pytest.fail(f"unknown scenario {text!r}: add it to this runner", pytrace=False)
    return scenario(ctx)


OPS: Dict[str, Callable[[Ctx, str], str]] = {
    "path": op_path,
    "rwpath": op_rwpath,
    "multi": op_multi,
    "hosts": op_hosts,
    "session_timeout": op_session_timeout,
    "server_tick": op_server_tick,
    "learned_tick": op_learned_tick,
    "server_features": op_server_features,
    "identity": op_identity,
    "path_stats_limit": op_path_stats_limit,
    "acl": op_acl,
    "timeout": op_timeout,
    "guarded_timeout": op_guarded_timeout,
    "guarded_size": op_guarded_size,
    "participants_timeout": op_participants_timeout,
    "secret": op_secret,
    "secret_pem": op_secret_pem,
    "sasl": op_sasl,


    "semaphore": op_semaphore,
    "election_style": op_election_style,
    "election_id": op_election_id,
    "max_hold": op_max_hold,
    "lock_delay": op_lock_delay,
    "scenario": op_scenario,
}


def perform(case: Case, ctx: Ctx) -> Tuple[str, Optional[BaseException]]:
    """The case's outcome word or kind name, and the exception it came from (if any)."""
    op = OPS.get(case.op)
    if op is None:
        pytest.fail(f"unknown op {case.op!r}: add it to this runner", pytrace=False)
    text = case.input.replace("$SERVERS", ctx.servers)
    try:
        return op(ctx, text), None
    except (AssertionError, pytest.fail.Exception):
        raise
    except Exception as e:  # every other exception is an outcome to compare
        return kind_of(e), e


# ---------------------------------------------------------------------------------------------
# The tests: one per case


@pytest.fixture(scope="module")
def shared(servers: str) -> Iterator[zklock.Client]:
    with zklock.Client(servers) as c:
        yield c


# Cases this face cannot run, by op or by "scenario:<name>", with the reason (reported n/a).
NOT_APPLICABLE: Dict[str, str] = {
    "deadline": "Python takes a timeout in seconds, no deadline; a computed timeout whose deadline "
    "passed is negative, InvalidArgument (case timeout-negative-half), never 'forever'",
}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_face_behaves_as_the_conformance_case_says(
    case: Case, servers: str, shared: zklock.Client, harness: Harness
) -> None:
    conformance_peers.HARNESS = harness  # its fault proxy, for issue 53's scenarios
    if case.problem:
        CONFORMANCE.append((case.id, case.expected, f"malformed: {case.problem}", False))
        pytest.fail(f"cases.txt: {case.problem}", pytrace=False)
    na = NOT_APPLICABLE.get(case.op) or NOT_APPLICABLE.get(f"{case.op}:{case.input}")
    if na:
        CONFORMANCE.append((case.id, case.expected, f"n/a: {na}", True))
        pytest.skip(f"n/a: {na}")
    ctx = Ctx(servers, f"/conformance/python/{case.id}-{os.getpid()}", shared)
    outcome, error = perform(case, ctx)
    problems: List[str] = []
    if outcome != case.expected:
        problems.append(
            f"{case.op}({case.input[:80]!r}) expected {case.expected}, got {outcome}"
            + (f" ({type(error).__name__}: {str(error)[:300]})" if error is not None else "")
        )
    if error is not None:
        message = str(error)
        if len(message) > MAX_MESSAGE:
            problems.append(f"the message has {len(message)} characters: {message[:120]}...")
        if isinstance(error, zklock.ZkLockError) and error.kind != kind_of(error):
            problems.append(
                f"{type(error).__name__}.kind is {error.kind!r}, the core's name is "
                f"{kind_of(error)!r}"
            )
    CONFORMANCE.append((case.id, case.expected, "; ".join(problems) or outcome, not problems))
    assert not problems, f"{case.id}: " + "; ".join(problems)
