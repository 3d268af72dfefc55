"""A real kazoo client for zklock's interop tests: takes a lock ROUNDS times and logs each
critical section as "<who> <kind> <token> <enter_ns> <exit_ns>" (token = czxid of its node).

    python3 kazoo_worker.py SERVERS PATH MODE ROUNDS LOGFILE     MODE: mutex | read | write

kazoo only sees Curator-style names (ours) when told their marker (docs/interop.md).
"""
import random
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError


def acquire(lock):
    """lock.acquire(), again after the lock's parent vanished. zklock and Curator make lock
    parents as containers, which the server reaps once empty (the harness makes it check every
    second); kazoo's Lock ensures its parent once (`assured_path`) and then fails every create
    with NoNodeError (kazoo/recipe/lock.py, _inner_acquire). A kazoo user sharing a path with
    them does the same: ensure the path again and retry."""
    while True:
        try:
            return lock.acquire()
        except NoNodeError:
            lock.assured_path = False


def main():
    servers, path, mode, rounds, log = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    zk = KazooClient(hosts=servers, timeout=10.0)
    zk.start(timeout=20)
    if mode == "mutex":
        lock = zk.Lock(path, "kazoo", extra_lock_patterns=["-lock-"])
    elif mode == "read":
        lock = zk.ReadLock(path, "kazoo", extra_lock_patterns=["__WRIT__"])
    else:
        lock = zk.WriteLock(path, "kazoo", extra_lock_patterns=["__WRIT__", "__READ__"])
    with open(log, "a") as out:
        for _ in range(rounds):
            acquire(lock)
            token = zk.exists(path + "/" + lock.node).czxid
            enter = time.time_ns()
            time.sleep(random.uniform(0.001, 0.003))
            exit_ = time.time_ns()
            lock.release()
            kind = "shared" if mode == "read" else "exclusive"
            out.write(f"kazoo {kind} {token} {enter} {exit_}\n")
            out.flush()
    zk.stop()
    zk.close()


if __name__ == "__main__":
    main()
