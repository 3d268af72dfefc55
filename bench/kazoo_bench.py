"""kazoo workers for the zklock benchmarks (issue 8), same command line and output as the Rust
and Curator workers. Run with Debian's /usr/bin/python3 (python3-kazoo)."""

import json
import math
import sys
import threading
import time

from kazoo.client import KazooClient

ARGS = {}


def arg(k, default=None):
    v = ARGS.get(k, default)
    if v is None:
        raise SystemExit(f"missing --{k}")
    return v


def num(k, default):
    return float(ARGS.get(k, default))


def connect():
    c = KazooClient(hosts=arg("servers"), timeout=10.0)
    c.start(timeout=15)
    return c


def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def pct(v, p):
    if not v:
        return 0
    rank = math.ceil(p / 100 * len(v))
    return v[max(1, min(rank, len(v))) - 1]


def latency(lat, secs):
    lat.sort()
    return {"ops": len(lat), "secs": secs, "ops_s": len(lat) / secs,
            "p50_us": pct(lat, 50) / 1000, "p99_us": pct(lat, 99) / 1000}


def ready(obj):
    print("ready " + json.dumps(obj), flush=True)


def windows():
    return int(num("warmup", 1) * 1e9), int(num("secs", 3) * 1e9)


def cycle_loop(lock, start, warm, secs, lat):
    mono = time.monotonic_ns
    while True:
        t0 = mono()
        lock.acquire()
        lock.release()
        t1 = mono()
        if t1 > start + warm + secs:
            return
        if t0 >= start + warm:
            lat.append(t1 - t0)


def s1():
    c = connect()
    lock = c.Lock(arg("path"), "bench")
    warm, secs = windows()
    lat = []
    cycle_loop(lock, time.monotonic_ns(), warm, secs, lat)
    c.stop()
    return latency(lat, secs / 1e9)


def s3():
    c = connect()
    lock = c.Lock(arg("path"), "bench")
    start = int(num("start-at", 0))
    warm, secs = windows()
    end = start + warm + secs
    delay = (start - time.monotonic_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)
    events = []
    while time.monotonic_ns() < end:
        lock.acquire()
        acquired = time.monotonic_ns()
        releasing = time.monotonic_ns()
        lock.release()
        events.append([acquired, releasing])
    c.stop()
    return {"events": events}


def s4():
    c = connect()
    n = int(num("locks", 64))
    warm, secs = windows()
    start = time.monotonic_ns()
    lats = [[] for _ in range(n)]
    threads = [threading.Thread(target=cycle_loop,
                                args=(c.Lock(f"{arg('path')}/{i}", "bench"), start, warm, secs, lats[i]))
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c.stop()
    return latency([x for l in lats for x in l], secs / 1e9)


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
    sys.stdin.readline()
    t0 = time.monotonic_ns()
    hl.release()
    for t in threads:
        t.join()
    elapsed = time.monotonic_ns() - t0
    for c in clients:
        c.stop()
    holder.stop()
    return {"releases": waiters + 1, "handoffs_s": waiters / (elapsed / 1e9)}


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
    sys.stdin.readline()
    return res


def main():
    argv = sys.argv[1:]
    for i in range(0, len(argv) - 1, 2):
        ARGS[argv[i].lstrip("-")] = argv[i + 1]
    scenario = {"s1": s1, "s3": s3, "s4": s4, "s5": s5, "s6": s6}.get(arg("scenario"))
    if scenario is None:
        raise SystemExit(f"no scenario {arg('scenario')} for kazoo (kazoo locks are not re-entrant)")
    print(json.dumps(scenario()), flush=True)


if __name__ == "__main__":
    main()
