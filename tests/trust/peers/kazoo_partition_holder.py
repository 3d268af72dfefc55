"""A real kazoo lock holder for the partition-margin measurement (tests/trust/README.md): set up
as a user would (KazooClient with a state listener), it takes a Lock and prints one line per
signal on stdout, "<signal> <wall-clock ns>":

    held       the lock is acquired
    suspended  the listener got KazooState.SUSPENDED
    lost       the listener got KazooState.LOST (the signal a user stops work on)
    connected  the listener got KazooState.CONNECTED, for the record

    python3 kazoo_partition_holder.py SERVERS PATH SESSION_MS

It holds the lock until its stdin closes (the test closes it, or dies).
"""
import logging
import sys
import threading
import time

from kazoo.client import KazooClient

_out = threading.Lock()


def emit(signal):
    with _out:
        sys.stdout.write(f"{signal} {time.time_ns()}\n")
        sys.stdout.flush()


def main():
    servers, path, session_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # kazoo's warnings go to stderr, which the test sends to a log file.
    logging.basicConfig(level=logging.WARNING)
    zk = KazooClient(hosts=servers, timeout=session_ms / 1000.0)
    zk.add_listener(lambda state: emit(str(state).lower()))
    zk.start(timeout=20)
    # The marker lets kazoo see other libraries' Curator-style names (docs/interop.md).
    lock = zk.Lock(path, "kazoo", extra_lock_patterns=["-lock-"])
    lock.acquire()
    emit("held")
    sys.stdin.read()


if __name__ == "__main__":
    main()
