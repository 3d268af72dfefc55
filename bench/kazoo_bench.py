"""kazoo workers for the zklock benchmarks (issue 8), same command line and output as the Rust
and Curator workers. Run with Debian's /usr/bin/python3 (python3-kazoo). kazoo's locks are not
re-entrant (kazoo #315), so there is no scenario 2."""

import threading
import time

from kazoo.client import KazooClient

from bench_common import arg, contend, main, num, ready, rss, slotted, wait_line


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


if __name__ == "__main__":
    main({"s1": s1, "s3": s3, "s4": s4, "s5": s5, "s6": s6}, "kazoo (its locks are not re-entrant)")
