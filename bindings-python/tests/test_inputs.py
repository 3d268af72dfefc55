"""Every bad input raises the documented exception and none crashes the interpreter (acceptance 8).

Bad values raise ``zklock.InvalidArgument`` (a ``ValueError``); values of the wrong type raise
its subclass ``zklock.InvalidArgumentType`` (also a ``TypeError``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

import zklock

BAD_PATHS = ["", "relative/path", "/", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/a\x00b",
             "/zookeeper/x", "/a\nb"]
WRONG_TYPE_PATHS = [None, 5, b"/bytes", ["/a"], 1.5]


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_bad_paths(client, bad):
    for make in (client.lock, client.rw_lock, lambda p: client.multi_lock([p])):
        with pytest.raises(zklock.InvalidArgument) as info:
            make(bad)
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, zklock.ZkLockError)
        assert "path" in str(info.value)


@pytest.mark.parametrize("bad", WRONG_TYPE_PATHS)
def test_wrong_type_paths(client, bad):
    for make in (client.lock, client.rw_lock):
        with pytest.raises(zklock.InvalidArgumentType) as info:
            make(bad)
        assert isinstance(info.value, TypeError)
        assert isinstance(info.value, zklock.InvalidArgument)


@pytest.mark.parametrize(
    "hosts", ["", " ", "host:notaport", "host:99999", ",", "127.0.0.1:2181,,", "bad host:2181"]
)
def test_bad_connect_strings(hosts):
    with pytest.raises(zklock.InvalidArgument) as info:
        zklock.Client(hosts, connect_timeout=2.0)
    assert "connect string" in str(info.value)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"hosts": 2181}, zklock.InvalidArgumentType),
        ({"hosts": None}, zklock.InvalidArgumentType),
        ({"session_timeout": -1.0}, zklock.InvalidArgument),
        ({"session_timeout": 0}, zklock.InvalidArgument),
        ({"session_timeout": float("nan")}, zklock.InvalidArgument),
        ({"session_timeout": float("inf")}, zklock.InvalidArgument),
        ({"session_timeout": 0.01}, zklock.InvalidArgument),  # below the core's 100 ms
        ({"session_timeout": "10"}, zklock.InvalidArgumentType),
        ({"session_timeout": True}, zklock.InvalidArgumentType),
        ({"connect_timeout": 0}, zklock.InvalidArgument),
        ({"connect_timeout": -5}, zklock.InvalidArgument),
        ({"connect_timeout": [1]}, zklock.InvalidArgumentType),
        ({"auth": "nopassword"}, zklock.InvalidArgument),
        ({"auth": ":pw"}, zklock.InvalidArgument),
        ({"auth": 5}, zklock.InvalidArgumentType),
        ({"identity": "x" * 2000}, zklock.InvalidArgument),
        ({"identity": 7}, zklock.InvalidArgumentType),
        ({"acl": "everyone"}, zklock.InvalidArgument),
        ({"acl": "creator-all"}, zklock.InvalidArgument),  # needs auth
        ({"acl": "creator"}, zklock.InvalidArgument),  # not a name of the core's
        ({"acl": None}, zklock.InvalidArgumentType),
    ],
)
def test_bad_client_options(servers, kwargs, error):
    args = {"hosts": servers, "connect_timeout": 5.0, **kwargs}
    with pytest.raises(error):
        zklock.Client(**args)


def test_auth_secret_is_not_echoed(servers):
    with pytest.raises(zklock.InvalidArgument) as info:
        zklock.Client(servers, auth="justasecret")
    assert "justasecret" not in str(info.value)


def test_unreachable_ensemble_raises_connection_failed():
    with pytest.raises(zklock.ConnectionFailed) as info:
        zklock.Client("127.0.0.1:1", connect_timeout=0.5)
    assert isinstance(info.value, ConnectionError)
    assert "127.0.0.1:1" in str(info.value)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"timeout": -2}, zklock.InvalidArgument),
        ({"timeout": -0.5}, zklock.InvalidArgument),
        ({"timeout": float("nan")}, zklock.InvalidArgument),
        ({"timeout": "1"}, zklock.InvalidArgumentType),
        ({"blocking": False, "timeout": 1.0}, zklock.InvalidArgument),
        ({"blocking": "yes"}, zklock.InvalidArgumentType),
    ],
)
def test_bad_acquire_arguments(client, path, kwargs, error):
    lock = client.lock(path)
    with pytest.raises(error):
        lock.acquire(**kwargs)
    assert not lock.locked()
    assert lock.participants() == []


def test_acquire_with_timeout_none_waits_until_acquired_as_the_time_rules_say(client, other, path):
    held = other.lock(path)
    taken = threading.Event()

    def hold_briefly() -> None:  # the holder's own thread releases (the owner is the thread)
        assert held.acquire()
        taken.set()
        time.sleep(0.3)
        held.release()

    holder = threading.Thread(target=hold_briefly)
    holder.start()
    assert taken.wait(10)
    lock = client.lock(path)
    assert lock.acquire(timeout=None) is True  # waited for the release, no TypeError
    holder.join()
    lock.release()
    assert lock.acquire(blocking=False, timeout=None) is True  # a try, as without a timeout
    lock.release()


@pytest.mark.parametrize("timeout", [-2, -0.001, float("nan"), float("-inf"), "soon", [1]])
def test_bad_hold_and_async_timeouts(client, path, timeout):
    import asyncio

    lock = client.lock(path)
    with pytest.raises(zklock.InvalidArgument):
        lock.hold(timeout=timeout)

    async def main() -> None:
        with pytest.raises(zklock.InvalidArgument):
            await lock.acquire_async(timeout=timeout)

    asyncio.run(main())
    assert not lock.locked()


def test_infinite_timeout_means_forever(client, path):
    lock = client.lock(path)
    assert lock.acquire(timeout=float("inf"))
    lock.release()
    with lock.hold(timeout=float("inf")):
        pass


def test_bad_reentrant_flag(client, path):
    with pytest.raises(zklock.InvalidArgumentType):
        client.lock(path, reentrant="no")  # type: ignore[arg-type]


def test_async_acquire_outside_a_loop_raises(client, path):
    native = client.lock(path)
    coro = native.acquire_async()
    with pytest.raises(RuntimeError):
        coro.send(None)  # no running event loop
    coro.close()


def test_bad_inputs_do_not_crash_a_fresh_interpreter(servers):
    """The same bad inputs in a clean interpreter: it must survive them all and exit 0."""
    script = textwrap.dedent(
        f"""
        import zklock
        bad = 0
        for call in [
            lambda: zklock.Client("", connect_timeout=1),
            lambda: zklock.Client({servers!r}, session_timeout=-1),
            lambda: zklock.Client({servers!r}, auth=b"x"),
        ]:
            try:
                call()
            except zklock.ZkLockError:
                bad += 1
        with zklock.Client({servers!r}) as c:
            for p in [None, "", "x", "/a//b", 3, "/a\\x00"]:
                try:
                    c.lock(p)
                except zklock.ZkLockError:
                    bad += 1
            l = c.lock("/zklock-py/crash-check")
            for kw in [dict(timeout=-3), dict(timeout="x"), dict(blocking=0, timeout=2)]:
                try:
                    l.acquire(**kw)
                except zklock.ZkLockError:
                    bad += 1
            try:
                l.release()
            except zklock.NotHeld:
                bad += 1
        try:
            c.lock("/a").acquire()
        except zklock.ClientClosed:
            bad += 1
        print(bad)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "14", out.stdout + out.stderr


def test_exception_hierarchy():
    table = {
        zklock.LockTimeout: TimeoutError,
        zklock.ConnectionFailed: ConnectionError,
        zklock.NotHeld: RuntimeError,
        zklock.InvalidArgument: ValueError,
        zklock.PermissionDenied: PermissionError,
    }
    for cls, base in table.items():
        assert issubclass(cls, zklock.ZkLockError) and issubclass(cls, base)
    for cls in (zklock.Cancelled, zklock.LockLost, zklock.SessionExpired,
                zklock.UpgradeNotAllowed, zklock.ClientClosed, zklock.ZooKeeperError):
        assert issubclass(cls, zklock.ZkLockError)
    assert issubclass(zklock.ZkLockError, Exception)
    assert zklock.LockTimeout("m").kind == "Timeout"  # the core's name of the kind
    assert str(zklock.LockTimeout("boom")) == "boom"


@pytest.mark.parametrize("seconds", [1e300, 1e19, 1.5e30])
def test_a_huge_timeout_waits_until_the_lock_is_free(client, other, servers, path, seconds):
    """A timeout no clock can reach waits forever, as in every face (the core's one rule), in
    every shape of acquire; a session timeout that large is refused with a short message (the
    number in exponent form, not hundreds of digits), or clamped by the server."""
    import asyncio

    def held_for_300ms() -> threading.Thread:
        holding = threading.Event()

        def hold() -> None:
            with other.lock(path).hold(timeout=10):
                holding.set()
                time.sleep(0.3)

        t = threading.Thread(target=hold)
        t.start()
        assert holding.wait(10)
        return t

    lock = client.lock(path)
    t = held_for_300ms()
    assert lock.acquire(timeout=seconds)
    lock.release()
    t.join(10)
    t = held_for_300ms()
    with lock.hold(timeout=seconds) as lease:
        assert lease.is_held()
    t.join(10)

    async def main() -> None:
        lease = await lock.acquire_async(timeout=seconds)
        await lease.release_async()

    t = held_for_300ms()
    asyncio.run(main())
    t.join(10)
    try:
        granted = zklock.Client(servers, session_timeout=seconds, connect_timeout=5.0)
    except zklock.InvalidArgument as e:
        message = str(e)
        assert "timeout" in message and "0" * 12 not in message and len(message) < 160, message
    else:
        with granted:
            assert 0 < granted.session_timeout < 1e6, granted.session_timeout
    assert not lock.locked()
