"""Issue 33: numbers a Python int holds but a float or an i64 does not (``10**400``, ``2**64``)
leaked ``OverflowError``. By the contract's time rule a timeout past the clock waits until
acquired (and its negative twin is ``InvalidArgument``); a token past 64 bits is no holder's."""

from __future__ import annotations

import threading

import pytest

import zklock
from conftest import wait_until


def test_a_timeout_past_any_clock_waits_until_acquired(client, other, path):
    lock = client.lock(path)
    assert lock.acquire(timeout=10**400)
    lock.release()
    held = other.lock(path)
    assert held.acquire(timeout=10)
    got = []
    waiter = threading.Thread(target=lambda: got.append(client.lock(path).acquire(timeout=10**400)))
    waiter.start()
    # Released once the waiter's node is queued behind ours: it then gets the lock.
    assert wait_until(lambda: len(other.lock(path).participants()) == 2)
    held.release()
    waiter.join(60)
    assert got == [True]


def test_a_negative_timeout_past_any_clock_is_invalid_argument(client, path):
    with pytest.raises(zklock.InvalidArgument):
        client.lock(path).acquire(timeout=-(10**400))


def test_a_max_hold_past_any_clock_is_invalid_argument_as_an_infinite_one_is(client, path):
    with pytest.raises(zklock.InvalidArgument):
        client.lock(path, max_hold=10**400)


def test_check_with_a_token_past_64_bits_is_false_not_overflowerror(client, path):
    with client.lock(path) as lease:
        assert client.check(path, lease.token)
        assert client.check(path, 2**64) is False
        assert client.check(path, -(2**64)) is False
    with pytest.raises(zklock.InvalidArgument):
        client.check("not/absolute", 2**64)


def test_messages_write_numbers_and_durations_as_people_do(client, path):
    with pytest.raises(zklock.InvalidArgument) as bad:
        client.lock(path).acquire(timeout=-2)
    assert str(bad.value).endswith("got -2"), str(bad.value)
    lock = client.lock(path, max_hold=0.2)
    assert lock.acquire(timeout=10)
    lease = lock.lease
    assert lease is not None and lease.lost.wait(30)
    reason = lease.lost_reason or ""
    try:  # how a release after a loss reports is another rule's; only the reason matters here
        lock.release()
    except zklock.ZkLockError:
        pass
    assert "held for its maximum of 200 ms" in reason, reason


def test_a_counter_value_or_step_beyond_64_bits_is_invalid_argument_not_overflowerror(client, path):
    counter = client.counter(f"{path}/count", width="int64")
    seen = counter.get()
    for value in (2**63, -(2**63) - 1, 10**400):
        with pytest.raises(zklock.InvalidArgument, match="does not fit a counter"):
            counter.compare_and_set(seen, value)
    with client.lock(path) as lease:
        with pytest.raises(zklock.InvalidArgument, match="does not fit a counter"):
            lease.guarded_increment(counter, 2**64)
        assert lease.guarded_increment(counter).value == 1  # by=1 when not given
    with pytest.raises(TypeError):
        counter.compare_and_set(seen, "1")  # type: ignore[arg-type]
    assert counter.get().value == 1  # nothing written by the refused calls
