"""Observing locks (issue 18): `Client.stats()` moving as locks are taken, timed out, cancelled and
lost; records on `logging.getLogger("zklock")` at their levels; guarded writes that do not apply
once the lease was lost (its session black-holed until lost, through the harness's fault proxy)."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import List

import pytest

import zklock
from conftest import wait_until

WAIT = 10.0


class Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture()
def records():  # type: ignore[no-untyped-def]
    logger = logging.getLogger("zklock")
    keep = Keep()
    before = logger.level
    logger.addHandler(keep)
    logger.setLevel(logging.DEBUG)  # before the client is made: it asks the core for debug too
    try:
        yield keep.records
    finally:
        logger.removeHandler(keep)
        logger.setLevel(before)


def test_stats_count_acquires_by_outcome_and_what_is_held_and_waiting_now(servers, other, path):
    with zklock.Client(servers) as client:
        assert client.stats() == zklock.Stats(
            0, 0, 0, 0, zklock.Percentiles(0, 0.0, 0.0, 0.0, 0.0),
            zklock.Percentiles(0, 0.0, 0.0, 0.0, 0.0), 0, 0, 0, 0, 0, 0,
        )
        held_elsewhere = other.lock(path)
        assert held_elsewhere.acquire(timeout=WAIT)
        elsewhere = held_elsewhere.lease
        assert elsewhere is not None
        lock = client.lock(path)
        assert not lock.acquire(blocking=False)
        assert not lock.acquire(timeout=0.2)

        async def cancel_one() -> None:
            task = asyncio.ensure_future(lock.acquire_async())
            assert await asyncio.get_running_loop().run_in_executor(
                None, lambda: wait_until(lambda: client.stats().waiting == 1)
            )
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(cancel_one())
        assert wait_until(lambda: client.stats().cancelled == 1)

        threading.Timer(0.2, elsewhere.release).start()  # a lease releases from any thread
        with lock.hold(WAIT):
            with lock.hold(WAIT):  # re-entrant: not an acquire of its own
                s = client.stats()
        assert (s.acquired, s.timed_out, s.cancelled, s.failed, s.held, s.waiting) == (
            1, 2, 1, 0, 1, 0,
        ), s
        assert s.wait.count == 1 and 0.1 <= s.wait.p50 <= s.wait.max
        after = client.stats()
        assert (after.held, after.hold.count) == (0, 1)
        with pytest.raises(dataclass_frozen_error()):
            after.acquired = 5  # type: ignore[misc]


def dataclass_frozen_error() -> type:
    import dataclasses

    return dataclasses.FrozenInstanceError


def test_a_black_holed_holder_counts_suspended_and_lost_logs_them_at_warning_and_its_guarded_write_does_not_apply(
    harness, other, path, records
):
    data = path + "-data"
    holder = zklock.Client(harness.proxy, session_timeout=2.0, auth="zkuser:hunter2")
    try:
        with pytest.raises(zklock.LockLost):  # leaving the block after the loss is loud (issue 33)
            with holder.lock(path).hold(WAIT) as lease:
                assert lease.guarded_write([("create", data, b"one")]) == [data]
                harness.command("blackhole")
                try:
                    assert lease.lost.wait(15.0), "the lease is lost while black-holed"
                    with pytest.raises(zklock.LockLost):
                        lease.guarded_write([("set_data", data, b"two"), ("create", data + "-2", b"")])
                finally:
                    harness.command("heal")
        s = holder.stats()
        assert s.suspended >= 1 and s.lost == 1 and s.held == 0 and s.session_expiries == 1, s
    finally:
        holder.close()
    # Nothing was written after the loss: the data is still "one" (a guarded set through another
    # client's lease bumps the version from 0 to 1), and "-2" can still be created.
    with other.lock(path).hold(WAIT) as lease:
        assert lease.guarded_write([("set_data", data, b"seen"), ("create", data + "-2", b"")]) == [
            1,
            data + "-2",
        ]
        lease.guarded_write([("delete", data + "-2"), ("delete", data)])

    def warned_lost() -> bool:
        return any(
            r.levelno == logging.WARNING
            and r.zklock.get("state") == "lost"  # type: ignore[attr-defined]
            and r.zklock.get("event") == "state"  # type: ignore[attr-defined]
            for r in list(records)
        )

    assert wait_until(warned_lost), [r.getMessage() for r in records]
    assert any(
        r.levelno == logging.DEBUG and r.zklock.get("outcome") == "acquired"  # type: ignore[attr-defined]
        and r.zklock.get("path") == path  # type: ignore[attr-defined]
        for r in records
    )
    # No credentials in any record (the holder's client used digest auth).
    assert all(
        "hunter2" not in r.getMessage() and "hunter2" not in repr(r.zklock)  # type: ignore[attr-defined]
        for r in records
    )


def test_a_guarded_write_whose_node_was_deleted_raises_lock_lost_and_a_failing_write_applies_nothing(
    client, other, path
):
    data = path + "-data"
    with pytest.raises(zklock.LockLost):  # leaving the block after the loss is loud (issue 33)
        with client.lock(path).hold(WAIT) as lease:
            with pytest.raises(zklock.ZooKeeperError):
                lease.guarded_write([("create", data, b"a"), ("delete", data + "-missing")])
            with pytest.raises(zklock.InvalidArgument):
                lease.guarded_write([("append", data, b"a")])
            with pytest.raises(zklock.InvalidArgumentType):
                lease.guarded_write([("create", data, "not bytes")])  # type: ignore[list-item]
            assert lease.guarded_write([]) == []
            # Closing the client ends the session: the lease is lost, and its write does not apply.
            client.close()
            with pytest.raises(zklock.LockLost):
                lease.guarded_write([("create", data, b"late")])
    with other.lock(path).hold(WAIT) as lease:
        assert lease.guarded_write([("create", data, b"")]) == [data]  # it did not exist
        lease.guarded_write([("delete", data)])


def test_without_logging_configured_zklock_prints_nothing(servers, path, capfd):
    with zklock.Client(servers) as c, c.lock(path).hold(WAIT):
        pass
    out, err = capfd.readouterr()
    assert "zklock" not in err and "zklock" not in out
