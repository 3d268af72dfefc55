"""fork() safety and many threads without deadlocks between the GIL and zklock's threads."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import random
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from typing import List

import pytest

import zklock
from conftest import assert_empty_eventually, nodes


def run_script(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args],
                          capture_output=True, text=True, timeout=timeout)


def test_child_forked_before_first_use_works(servers, path):
    out = run_script(
        """
        import os, sys, zklock
        servers, path = sys.argv[1], sys.argv[2]
        pid = os.fork()
        if pid == 0:
            with zklock.Client(servers) as c:
                with c.lock(path) as lease:
                    print("child", lease.token, flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        with zklock.Client(servers) as c:
            with c.lock(path) as lease:
                print("parent", lease.token, flush=True)
        sys.exit(os.waitstatus_to_exitcode(status))
        """,
        servers, path,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert lines[0] == "child" and lines[2] == "parent", out.stdout
    assert int(lines[1]) < int(lines[3])


def test_child_forked_after_use_makes_its_own_clients_and_the_inherited_one_reads_closed(servers, path):
    out = run_script(
        """
        import os, sys, time, zklock
        servers, path = sys.argv[1], sys.argv[2]
        client = zklock.Client(servers)
        lock = client.lock(path)
        lease = lock.hold().__enter__()
        pid = os.fork()
        if pid == 0:
            code = 0
            started = time.monotonic()
            if not client.closed or client.state != "lost": code |= 64   # it is the parent's
            try:
                lock.acquire(timeout=1)          # the parent's client is unusable here
                code |= 1
            except zklock.ClientClosed as e:
                if "inherited across fork" not in str(e): code |= 2
            try:
                lease.release()                  # the parent's lease: not ours to release
                code |= 32
            except zklock.ClientClosed:
                pass
            client.close()                       # closes our view only, not the parent's session
            if time.monotonic() - started > 3: code |= 16
            with zklock.Client(servers, connect_timeout=10) as own:   # a client of our own works
                with own.lock(path + "-child") as mine:
                    if mine.state != "held": code |= 4
                if own.lock(path).acquire(blocking=False): code |= 8   # the parent still holds it
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), flush=True)
        # the parent's session and lease survived the child
        print("parent", client.state, lease.state, len(lock.participants()), flush=True)
        lease.release()
        with lock:
            print("again", flush=True)
        client.close()
        """,
        servers, path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["child", "0", "parent", "connected", "held", "1", "again"], out.stdout + out.stderr


def fork_child_connect(servers: str, path: str, inherited: zklock.Client, queue) -> None:  # type: ignore[no-untyped-def]
    try:
        said = []
        said.append(f"inherited closed={inherited.closed} state={inherited.state}")
        try:
            inherited.lock(path).participants()
            said.append("inherited works")
        except zklock.ClientClosed as e:
            said.append(f"inherited raises: {e}")
        with zklock.Client(servers, connect_timeout=10) as own:
            with own.lock(path + "-child") as lease:
                said.append(f"own holds {lease.state}")
        queue.put(said)
    except BaseException as e:  # noqa: BLE001
        queue.put([f"other: {e!r}"])


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_multiprocessing_fork_children_make_their_own_clients_and_leave_the_parent_untouched(client, servers, path):
    held = client.lock(path)
    assert held.acquire(timeout=10)  # this process has used zklock, and holds a lock
    ctx = multiprocessing.get_context("fork")
    for _ in range(2):
        q = ctx.Queue()
        p = ctx.Process(target=fork_child_connect, args=(servers, path, client, q))
        p.start()
        said = q.get(timeout=60)
        p.join(30)
        assert p.exitcode == 0
        assert said[0] == "inherited closed=True state=lost", said
        assert said[1].startswith("inherited raises:") and "inherited across fork" in said[1], said
        assert said[2:] == ["own holds held"], said
    # The parent is untouched: still connected, still holding, and it goes on working.
    assert client.state == "connected" and not client.closed
    lease = held.lease
    assert lease is not None and lease.state == "held"
    assert len(client.lock(path).participants()) == 1
    held.release()
    with client.lock(path):
        pass


def test_many_threads_mixed_calls_do_not_deadlock(servers, client):
    """32 threads doing blocking acquires, try-locks, timeouts, asyncio loops, participants and
    releases from lost callbacks on a few shared locks, with the GC running, must all finish."""
    base = f"/zklock-py/{uuid.uuid4().hex}"
    paths = [f"{base}/{i}" for i in range(3)]
    locks = [client.lock(p) for p in paths]
    rw = client.rw_lock(f"{base}/rw")
    errors: List[BaseException] = []
    done = [0]
    done_lock = threading.Lock()

    def finish() -> None:
        with done_lock:
            done[0] += 1

    def blocking_worker(seed: int) -> None:
        rnd = random.Random(seed)
        try:
            for _ in range(15):
                lock = rnd.choice(locks)
                choice = rnd.random()
                if choice < 0.4:
                    with lock as lease:
                        with lock:  # re-entry
                            assert lease.is_held()
                elif choice < 0.6:
                    if lock.acquire(blocking=False):
                        lock.release()
                elif choice < 0.75:
                    if lock.acquire(timeout=0.05):
                        lock.release()
                elif choice < 0.85:
                    with (rw.read if rnd.random() < 0.7 else rw.write):
                        pass
                else:
                    lock.participants()
                if rnd.random() < 0.1:
                    gc.collect()
            finish()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def async_worker(seed: int) -> None:
        rnd = random.Random(seed)

        async def main() -> None:
            async def one() -> None:
                for _ in range(5):
                    lock = rnd.choice(locks)
                    try:
                        async with lock.hold(timeout=rnd.choice([None, 0.05])):
                            await asyncio.sleep(0)
                    except zklock.LockTimeout:
                        pass

            await asyncio.gather(*(one() for _ in range(4)))

        try:
            asyncio.run(main())
            finish()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    # Callbacks that call back into zklock (blocking calls on the callback thread).
    def callback_worker() -> None:
        try:
            for _ in range(5):
                side = zklock.Client(servers)
                lock = side.lock(paths[0])
                lease = lock.hold().__enter__()
                came_back = threading.Event()

                def on_lost() -> None:
                    locks[1].participants()
                    if locks[2].acquire(timeout=1):
                        locks[2].release()
                    came_back.set()

                lease.on_lost(on_lost)
                side.close()  # the lease is lost; the callback runs on zklock's thread
                assert came_back.wait(30), "lost callback never finished"
            finish()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=blocking_worker, args=(i,)) for i in range(24)]
    threads += [threading.Thread(target=async_worker, args=(100 + i,)) for i in range(6)]
    threads += [threading.Thread(target=callback_worker) for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 240
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    assert not stuck, f"threads deadlocked: {stuck}"
    assert not errors, errors
    assert done[0] == len(threads)
    for p in paths:
        assert_empty_eventually(client, p)
    assert nodes(client, f"{base}/rw") == []
