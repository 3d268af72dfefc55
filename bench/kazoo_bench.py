"""kazoo workers for the zklock benchmarks (issue 8), same command line and output as the Rust
and Curator workers. Run with Debian's /usr/bin/python3 (python3-kazoo). kazoo's locks are not
re-entrant (kazoo #315), so there is no scenario 2."""

import os
import threading
import time

from kazoo.client import KazooClient

from bench_common import arg, contend, cpu_ns, main, num, pct, ready, rss, slotted, wait_line


def connect():
    c = KazooClient(hosts=arg("servers"), timeout=10.0)
    c.start(timeout=15)
    return c


def s1():
    c = connect()
    lock = c.Lock(arg("path"), "bench")
    out = slotted([(lock.acquire, lock.release)])
    c.stop()
    return out


def s3():
    c = connect()
    lock = c.Lock(arg("path"), "bench")
    out = contend(lock.acquire, lock.release)
    c.stop()
    return out


def s8():
    """Election handover (issue 25): kazoo's Election runs its function under its Lock
    (`with self.lock: func()`, kazoo/recipe/election.py), so leading and resigning are that
    lock's acquire and release."""
    c = connect()
    election = c.Election(arg("path"), "bench")
    out = contend(election.lock.acquire, election.lock.release)
    c.stop()
    return out


def s4():
    c = connect()
    locks = [c.Lock(f"{arg('path')}/{i}", "bench") for i in range(int(num("locks", 64)))]
    out = slotted([(l.acquire, l.release) for l in locks])
    c.stop()
    return out


def s5():
    waiters = int(num("waiters", 1000))
    sessions = max(1, int(num("sessions", waiters)))
    path = arg("path")
    holder = connect()
    hl = holder.Lock(path, "holder")
    hl.acquire()
    clients = [connect() for _ in range(sessions)]

    def wait(lock):
        lock.acquire()
        lock.release()

    threads = [threading.Thread(target=wait, args=(clients[i % sessions].Lock(path, f"w{i}"),), daemon=True)
               for i in range(waiters)]
    for t in threads:
        t.start()
    while len(holder.get_children(path)) < waiters + 1:
        time.sleep(0.1)
    time.sleep(0.5)
    ready({"queued": waiters, "sessions": sessions, "rss": rss()})
    wait_line()
    t0 = time.monotonic_ns()
    hl.release()
    for t in threads:
        t.join()
    elapsed = time.monotonic_ns() - t0
    res = {"releases": waiters + 1, "handoffs_s": waiters / (elapsed / 1e9)}
    ready(res)  # counters are read here, before the sessions close
    wait_line()
    for c in clients:
        c.stop()
    holder.stop()
    return res


def _quietly(fn):
    """Runs fn in a waiter thread whose client is stopped under it at the end of the run."""
    try:
        fn()
    except Exception:
        pass


def s9():
    """Scenario 9 (bench/src/s9.rs): --sessions sessions idle, then each holding a lock of its
    own, then all waiting on one lock (the first session of the --holder process holds it)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    n = int(num("sessions", 500))
    offset = int(num("offset", 0))
    path = arg("path")
    timeout = num("session-ms", 10000) / 1000.0
    t0 = time.monotonic()
    clients = []
    for _ in range(n):
        c = KazooClient(hosts=arg("servers"), timeout=timeout)
        c.start(timeout=60)
        clients.append(c)
    ready({"phase": "idle", "sessions": n, "open_s": time.monotonic() - t0, "rss": rss()})
    wait_line()
    locks = [c.Lock(f"{path}/h-{offset + i}", "bench") for i, c in enumerate(clients)]
    for lock in locks:
        lock.acquire()
    ready({"phase": "hold", "leases": n, "rss": rss()})
    wait_line()
    for lock in locks:
        lock.release()
    wait_path = path + "/wait"
    held = None
    threads = []
    for i, c in enumerate(clients):
        lock = c.Lock(wait_path, "bench")
        if arg("holder") == "yes" and i == 0:
            lock.acquire()
            held = lock
        else:
            t = threading.Thread(target=_quietly, args=(lock.acquire,), daemon=True)
            t.start()
            threads.append(t)
    ready({"phase": "wait", "waiters": len(threads), "rss": rss()})
    wait_line()
    t1 = time.monotonic()
    for c in clients:
        c.stop()
        c.close()
    del held
    return {"close_s": time.monotonic() - t1}


def s6():
    c = connect()
    n = int(num("locks", 10000))
    path = arg("path")
    warm = c.Lock(path + "-warm", "bench")
    for _ in range(50):
        warm.acquire()
        warm.release()
    before = rss()
    held = []
    for i in range(n):
        lock = c.Lock(f"{path}/{i}", "bench")
        lock.acquire()
        held.append(lock)
    time.sleep(0.5)
    after = rss()
    res = {"locks": n, "mode": "hold", "rss_before": before, "rss_after": after,
           "bytes_per_lock": (after - before) / n}
    ready(res)
    wait_line()
    return res


def curve():
    """The cost curve (see bench/src/rust_worker.rs, zk_curve): `--depth` waiters (threads over
    at most 16 sessions) behind a holder; 30 non-blocking acquires by another session at that
    depth; then every waiter cycles (acquire, release, queue again) for `--secs`."""
    depth = int(num("depth", 10))
    secs = num("secs", 2)
    path = arg("path")
    holder = connect()
    hl = holder.Lock(path, "holder")
    hl.acquire()
    clients = [connect() for _ in range(max(1, min(depth, 16)))]
    stop = threading.Event()
    events = []

    def cycle(lock):
        try:
            while not stop.is_set():
                lock.acquire()
                acquired = time.monotonic_ns()
                releasing = time.monotonic_ns()
                lock.release()
                events.append([acquired, releasing])
        except Exception:
            pass  # the sessions closed under a waiting thread: the run is over

    for i in range(depth):
        threading.Thread(target=cycle, args=(clients[i % len(clients)].Lock(path, f"w{i}"),), daemon=True).start()
    probe = connect()
    while len(probe.get_children(path)) < depth + 1:
        time.sleep(0.05)
    time.sleep(0.3)
    tries = []
    pl = probe.Lock(path, "probe")
    for i in range(40):
        t0 = time.monotonic_ns()
        if pl.acquire(blocking=False):
            raise SystemExit("try-acquire got a held lock")
        if i >= 10:  # the first 10 warm up
            tries.append(time.monotonic_ns() - t0)
    tries.sort()
    ready({"depth": depth, "try_p50_us": pct(tries, 50) / 1000, "rss": rss()})
    wait_line()
    t0, c0 = time.monotonic_ns(), cpu_ns()
    releasing = time.monotonic_ns()
    hl.release()
    time.sleep(max(0.0, secs - (time.monotonic_ns() - t0) / 1e9))
    stop.set()
    cpu = cpu_ns() - c0
    res = {"depth": depth, "window_s": (time.monotonic_ns() - t0) / 1e9, "cpu_s": cpu / 1e9,
           "events": [[t0, releasing]] + list(events)}
    ready(res)
    wait_line()
    for c in clients + [probe, holder]:
        c.stop()
    os._exit(0)


if __name__ == "__main__":
    main({"s1": s1, "s3": s3, "s8": s8, "s4": s4, "s5": s5, "s6": s6, "s9": s9, "curve": curve}, "kazoo (its locks are not re-entrant)")
