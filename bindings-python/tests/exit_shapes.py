"""Short programs that end while zklock is busy: one shape a run (issue 57).

    python exit_shapes.py SHAPE SERVERS PATH

Each shape leaves something of zklock's in flight when the program ends (a client open, a lease
held, a callback running, a log record on its way, an asyncio acquire pending, a daemon thread
waiting) and exits with a status of its own, which the caller checks (tests/test_exit.py): a
crash at exit (SIGSEGV, SIGABRT, "Fatal Python error") shows as another status.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from typing import Callable, Dict, List

import zklock

# What each shape exits with, when nothing crashed.
STATUS: Dict[str, int] = {
    "open": 0,
    "held": 0,
    "running": 0,
    "logging": 0,
    "os-exit": 7,
    "sys-exit": 5,
    "asyncio": 0,
    "daemon": 0,
}


def busy(seconds: float) -> None:
    """Python bytecode for a while: the interpreter hands the GIL around meanwhile."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1


def open_client(servers: str) -> zklock.Client:
    return zklock.Client(servers, session_timeout=4.0)


def hold(lock: zklock.Lock) -> zklock.Lease:
    lock.acquire()
    lease = lock.lease
    assert lease is not None
    return lease


def shape_open(servers: str, path: str) -> None:
    # A client left open at exit, with a listener and a released lock behind it.
    client = open_client(servers)
    client.add_listener(lambda state: busy(0.002))
    with client.lock(path):
        pass


def shape_held(servers: str, path: str) -> None:
    # A lease held at exit whose lost signal and state callbacks run Python.
    client = open_client(servers)
    lease = hold(client.lock(path))
    lease.on_lost(lambda: busy(0.005))
    lease.on_state(lambda state: busy(0.005))


def shape_running(servers: str, path: str) -> None:
    # Callbacks still running when the program ends: closing the client makes the listener's and
    # the lease's callbacks run (for 30 ms each) on zklock's thread while the main thread exits.
    client = open_client(servers)
    client.add_listener(lambda state: busy(0.03))
    lease = hold(client.lock(path))
    lease.on_lost(lambda: busy(0.03))
    watch = client.observe_leader(f"{path}/election")
    watch.next(timeout=0.5)
    client.close()


def shape_logging(servers: str, path: str) -> None:
    # zklock's log records on their way to `logging` at exit.
    handler = logging.StreamHandler(open(os.devnull, "w"))
    logger = logging.getLogger("zklock")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    client = open_client(servers)
    for i in range(3):
        with client.lock(f"{path}/{i}"):
            pass
    client.close()


def shape_os_exit(servers: str, path: str) -> None:
    # A callback that ends the process on the spot.
    client = open_client(servers)
    lease = hold(client.lock(path))
    lease.on_lost(lambda: os._exit(STATUS["os-exit"]))
    client.close()
    time.sleep(30)  # the callback ends the process first
    raise SystemExit(1)


def shape_sys_exit(servers: str, path: str) -> None:
    # A callback that raises SystemExit (on zklock's thread it is reported, not obeyed) while the
    # main thread ends with its own status.
    client = open_client(servers)
    lease = hold(client.lock(path))
    lease.on_lost(lambda: (busy(0.01), sys.exit(9)))
    client.close()
    sys.exit(STATUS["sys-exit"])


def shape_asyncio(servers: str, path: str) -> None:
    # asyncio acquires still pending (and one granted, never released) on a loop nobody runs
    # again, with the client open.
    client = open_client(servers)
    blocker = hold(client.lock(path, reentrant=False))
    loop = asyncio.new_event_loop()

    async def take() -> None:
        async with client.lock(path):
            busy(0.001)

    async def grant() -> None:
        await client.lock(f"{path}-free").acquire_async()

    tasks = [loop.create_task(take()) for _ in range(3)] + [loop.create_task(grant())]
    loop.run_until_complete(asyncio.sleep(0.05))
    del blocker, tasks  # the loop is left as it is, tasks pending


def shape_daemon(servers: str, path: str) -> None:
    # Daemon threads still inside zklock at exit: two wait on a held lock, one takes and
    # releases another lock in a loop.
    client = open_client(servers)
    hold(client.lock(path, reentrant=False))
    ready = threading.Barrier(4)

    def wait_on_held() -> None:
        lock = client.lock(path, reentrant=False)
        ready.wait()
        lock.acquire()

    def churn() -> None:
        lock = client.lock(f"{path}-churn")
        ready.wait()
        while True:
            with lock:
                busy(0.001)

    threads: List[Callable[[], None]] = [wait_on_held, wait_on_held, churn]
    for target in threads:
        threading.Thread(target=target, daemon=True).start()
    ready.wait()
    time.sleep(0.05)


SHAPES: Dict[str, Callable[[str, str], None]] = {
    "open": shape_open,
    "held": shape_held,
    "running": shape_running,
    "logging": shape_logging,
    "os-exit": shape_os_exit,
    "sys-exit": shape_sys_exit,
    "asyncio": shape_asyncio,
    "daemon": shape_daemon,
}


def main(argv: List[str]) -> None:
    if len(argv) != 4 or argv[1] not in SHAPES:
        print(f"usage: {argv[0]} {{{','.join(SHAPES)}}} SERVERS PATH", file=sys.stderr)
        raise SystemExit(2)
    SHAPES[argv[1]](argv[2], argv[3])
    raise SystemExit(STATUS[argv[1]])


if __name__ == "__main__":
    main(sys.argv)
