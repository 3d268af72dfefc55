"""Helpers shared by the Python workers (kazoo and the zklock Python face): arguments, the
monotonic clock (CLOCK_MONOTONIC, like the Rust and Java workers), percentiles, RSS."""

import json
import math
import resource
import sys
import time

ARGS = {}


def parse(argv):
    for i in range(0, len(argv) - 1, 2):
        ARGS[argv[i].lstrip("-")] = argv[i + 1]


def arg(k, default=None):
    v = ARGS.get(k, default)
    if v is None:
        raise SystemExit(f"missing --{k}")
    return v


def num(k, default):
    return float(ARGS.get(k, default))


def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_ns():
    """User + system CPU time of the whole process (getrusage, like the other workers)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return int((ru.ru_utime + ru.ru_stime) * 1e9)


def add_cpu(out, cpu):
    out["cpu_s"] = cpu / 1e9
    if out.get("ops"):
        out["cpu_us_per_op"] = cpu / 1e3 / out["ops"]
    return out


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


def wait_line():
    sys.stdin.readline()


def windows():
    return int(num("warmup", 1) * 1e9), int(num("secs", 3) * 1e9)


class Slots:
    """Time slots shared by workers running side by side (see bench/src/common.rs, Slots)."""

    def __init__(self):
        if "start-at" in ARGS:
            self.start = int(ARGS["start-at"])
            self.warm = int(num("warm-ms", 1000)) * 1_000_000
            self.slot = int(num("slot-ms", 500)) * 1_000_000
            self.n = int(num("nslots", 1))
            self.me = int(num("my-slot", 0))
            self.rounds = int(num("rounds", 1))
        else:
            self.start = time.monotonic_ns()
            self.warm = int(num("warmup", 1) * 1e9)
            self.slot = int(num("secs", 3) * 1e9 / 0.9)
            self.n, self.me, self.rounds = 1, 0, 1

    def warm_window(self):
        start = self.start + self.me * self.warm
        return start, start + self.warm

    def window(self, r):
        start = self.start + self.n * self.warm + (r * self.n + self.me) * self.slot
        return start, start + self.slot * 9 // 10

    def secs(self):
        return (self.slot * 9 // 10) / 1e9


def sleep_until(t):
    d = (t - time.monotonic_ns()) / 1e9
    if d > 0:
        time.sleep(d)


def slotted_loop(sl, acquire, release, counts, lat):
    mono = time.monotonic_ns
    w0, w1 = sl.warm_window()
    sleep_until(w0)
    while mono() < w1:
        acquire()
        release()
    for r in range(sl.rounds):
        start, to = sl.window(r)
        sleep_until(start)
        while True:
            t0 = mono()
            if t0 >= to:
                break
            acquire()
            release()
            t1 = mono()
            if t1 <= to:
                counts[r] += 1
                lat.append(t1 - t0)


def slotted(locks):
    """Scenarios 1 and 4: (acquire, release) pairs cycled by one thread each, in the slots."""
    import threading
    sl = Slots()
    counts = [[0] * sl.rounds for _ in locks]
    lats = [[] for _ in locks]
    threads = [threading.Thread(target=slotted_loop, args=(sl, a, r, counts[i], lats[i]))
               for i, (a, r) in enumerate(locks)]
    for t in threads:
        t.start()
    # The process's CPU time over the measured windows, read once per window for all threads.
    cpu = 0
    for r in range(sl.rounds):
        start, to = sl.window(r)
        sleep_until(start)
        c0 = cpu_ns()
        sleep_until(to)
        cpu += cpu_ns() - c0
    for t in threads:
        t.join()
    out = latency([x for l in lats for x in l], sl.secs() * sl.rounds)
    out["rounds"] = [sum(c[r] for c in counts) / sl.secs() for r in range(sl.rounds)]
    return add_cpu(out, cpu)


def contend(acquire, release):
    """Scenario 3: acquire, note the time, release at once, from --start-at for the window."""
    start = int(num("start-at", 0))
    warm, secs = windows()
    end = start + warm + secs
    delay = (start - time.monotonic_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)
    events = []
    c0 = None
    while time.monotonic_ns() < end:
        if c0 is None and time.monotonic_ns() >= start + warm:
            c0 = cpu_ns()
        acquire()
        acquired = time.monotonic_ns()
        releasing = time.monotonic_ns()
        release()
        events.append([acquired, releasing])
    return {"events": events, "cpu_s": (cpu_ns() - c0) / 1e9 if c0 is not None else 0.0}


def reentrant(acquire, release):
    """Scenario 2 body (the caller holds the lock already): ns per acquire+release pair."""
    warm, secs = windows()
    mono = time.monotonic_ns
    start = mono()
    ops = measured_from = measured_ops = cpu0 = 0
    while True:
        for _ in range(1000):
            acquire()
            release()
        ops += 1000
        now = mono()
        if not measured_from and now >= start + warm:
            measured_from, measured_ops, cpu0 = now, ops, cpu_ns()
        if measured_from and now >= measured_from + secs:
            n = ops - measured_ops
            ns = (now - measured_from) / n
            # CPU time per pair: what a loaded machine's time slicing does not inflate.
            return {"ops": n, "ns_per_op": ns, "ops_s": 1e9 / ns, "cpu_ns_per_op": (cpu_ns() - cpu0) / n}


def main(scenarios, what):
    parse(sys.argv[1:])
    fn = scenarios.get(arg("scenario"))
    if fn is None:
        raise SystemExit(f"no scenario {arg('scenario')} for {what}")
    print(json.dumps(fn()), flush=True)
