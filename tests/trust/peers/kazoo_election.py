"""kazoo's leader election for zklock's interop tests (issue 25): runs kazoo's Election recipe
and logs each leadership as "<who> exclusive <token> <enter_ns> <exit_ns>" (token = czxid of
its own election node, wall-clock ns).

    python3 kazoo_election.py SERVERS PATH MODE ROUNDS LOGFILE ID [PATTERNS]

    run    zk.Election(PATH, ID).run(func) ROUNDS times; func logs a 1-3 ms section as
           "kazoo-election-ID exclusive ..." (token = czxid of election.lock.node)
    show   does NOT run for leader: prints ROUNDS lines 200 ms apart, each
           {"contenders": [...]} from election.contenders() (the ids in node order; the
           first is the leader). LOGFILE is not written.
    hold   acquires the election's lock (what run() does): prints "leader <czxid> <node>" once
           it leads, or "waiting <node>" if it does not after 1 s and "leader ..." when it
           does; until stdin closes, then releases (or cancels) and exits. LOGFILE is not
           written.

kazoo's Election is a kazoo Lock: it sees only nodes named "...__lock__<seq>" unless told other
markers. PATTERNS, comma-separated (e.g. "-latch-,-lock-" for Curator-style names, docs/interop.md),
become the lock's extra_lock_patterns; without it this is exactly zk.Election(PATH, ID).
stdout lines are flushed one by one.
"""
import json
import random
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    if len(sys.argv) not in (7, 8):
        sys.exit("usage: kazoo_election.py SERVERS PATH MODE ROUNDS LOGFILE ID [PATTERNS]")
    servers, path, mode, rounds, log, ident = sys.argv[1:7]
    rounds = int(rounds)
    patterns = [p for p in sys.argv[7].split(",") if p] if len(sys.argv) == 8 else []
    zk = KazooClient(hosts=servers, timeout=10.0)
    zk.start(timeout=20)
    election = zk.Election(path, ident)
    if patterns:
        election.lock = zk.Lock(path, ident, extra_lock_patterns=patterns)
    if mode == "run":
        with open(log, "a") as out:

            def lead():
                enter = time.time_ns()
                token = zk.exists(path + "/" + election.lock.node).czxid
                time.sleep(random.uniform(0.001, 0.003))
                exit_ = time.time_ns()
                out.write(f"kazoo-election-{ident} exclusive {token} {enter} {exit_}\n")
                out.flush()

            for _ in range(rounds):
                # The lock's parent may have been reaped (a container made by zklock or
                # Curator, empty for a moment): kazoo's Lock ensures it only once, so ensure it
                # again and run again (see kazoo_worker.py's acquire).
                while True:
                    try:
                        election.run(lead)
                        break
                    except NoNodeError:
                        election.lock.assured_path = False
    elif mode == "show":
        for i in range(rounds):
            if i:
                time.sleep(0.2)
            say(json.dumps({"contenders": election.contenders()}))
    elif mode == "hold":
        hold(zk, path, election.lock)
    else:
        sys.exit(f"kazoo_election.py: unknown mode {mode}")
    zk.stop()
    zk.close()


def hold(zk, path, lock):
    acquired = threading.Event()
    eof = threading.Event()

    def acquire():
        try:
            if lock.acquire():
                acquired.set()
        except Exception:  # cancelled at end of input: kazoo deletes the node
            pass

    def watch_stdin():
        sys.stdin.read()
        eof.set()

    threading.Thread(target=acquire, daemon=True).start()
    threading.Thread(target=watch_stdin, daemon=True).start()
    if not acquired.wait(1.0):
        while lock.node is None and not eof.is_set():
            time.sleep(0.01)
        if lock.node is not None and not acquired.is_set():
            say(f"waiting {path}/{lock.node}")
    while not eof.is_set():
        if acquired.wait(0.05):
            node = f"{path}/{lock.node}"
            say(f"leader {zk.exists(node).czxid} {node}")
            break
    eof.wait()
    if acquired.is_set():
        lock.release()
    else:
        lock.cancel()


if __name__ == "__main__":
    main()
