"""Workers for zklock's Python face (bindings-python), same command line and output as the
other workers. Run with the venv python where `pip install ./bindings-python` went."""

import json
import os
import time

import zklock

from bench_common import arg, contend, main, num, ready, reentrant, rss, slotted, wait_line


def connect():
    return zklock.Client(arg("servers"), session_timeout=10.0)


def s1():
    with connect() as c:
        lock = c.lock(arg("path"))
        return slotted([(lock.acquire, lock.release)])


def s2():
    with connect() as c:
        lock = c.lock(arg("path"))
        lock.acquire()
        ready({})
        wait_line()
        res = reentrant(lock.acquire, lock.release)
        ready(res)
        wait_line()
        lock.release()
    return res


def s3():
    with connect() as c:
        lock = c.lock(arg("path"))
        return contend(lock.acquire, lock.release)


def s4():
    with connect() as c:
        locks = [c.lock(f"{arg('path')}/{i}") for i in range(int(num("locks", 64)))]
        return slotted([(l.acquire, l.release) for l in locks])


def s6():
    c = connect()
    n = int(num("locks", 10000))
    path = arg("path")
    warm = c.lock(path + "-warm")
    for _ in range(50):
        warm.acquire()
        warm.release()
    before = rss()
    held = []
    for i in range(n):
        lock = c.lock(f"{path}/{i}")
        lock.acquire()
        held.append(lock)
    time.sleep(0.5)
    after = rss()
    res = {"locks": n, "mode": "hold", "rss_before": before, "rss_after": after,
           "bytes_per_lock": (after - before) / n}
    ready(res)
    wait_line()
    # Leave without unwinding: 10,000 leases dropped at interpreter shutdown are no benchmark.
    print(json.dumps(res), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main({"s1": s1, "s2": s2, "s3": s3, "s4": s4, "s6": s6}, "the Python face")
