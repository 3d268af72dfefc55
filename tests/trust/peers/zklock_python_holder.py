"""A zklock Python-face lock holder for the one-way-loss rounds (tests/trust/tests/one_way.rs),
written as a careful user would: it takes the lock in a ``with`` block, stops its work when the
lease's ``on_lost`` callback runs, and leaves the block (releasing the lease). It prints one
line per signal on stdout, "<signal> <wall-clock ns>":

    held   the lock is acquired
    lost   the on_lost callback ran (the moment the holder stops)

    python zklock_python_holder.py SERVERS PATH SESSION_MS

It then stays until its stdin closes (the test closes it, or dies).
"""
import sys
import threading
import time

import zklock

_out = threading.Lock()


def emit(signal: str) -> None:
    with _out:
        sys.stdout.write(f"{signal} {time.time_ns()}\n")
        sys.stdout.flush()


def main() -> None:
    servers, path, session_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
    client = zklock.Client(servers, session_timeout=session_ms / 1000.0)
    stop = threading.Event()
    try:
        with client.lock(path) as lease:
            emit("held")

            def on_lost() -> None:
                emit("lost")
                stop.set()

            lease.on_lost(on_lost)
            stop.wait()
    except zklock.ZkLockError as e:  # leaving the block after a loss may say so
        sys.stderr.write(f"left the lock's block: {e}\n")
    sys.stdin.read()
    client.close()


if __name__ == "__main__":
    main()
