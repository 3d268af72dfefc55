"""The Python collector's bench row (issue 51, part 4): ``ZklockCollector.collect()`` and one
scrape of a ``prometheus_client`` registry with a client that has statistics for 1,000 lock
paths (the default ``path_stats_limit``). Goal, a bench row and not a timed test: a collect in
at most 20 ms and a scrape of at most 200 KB (it was 287 ms and 1.4 MB when the collector
rendered OpenMetrics text and parsed it back, and every path carried its zero series).

    python bench/python_collect.py [--paths 1000] [--rounds 30] [--out FILE]

ZooKeeper comes from the project's zk-harness (``ZK_HARNESS``, or
``$CARGO_TARGET_DIR/debug/zk-harness``). Prints the row; ``--out`` writes it as JSON."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import zklock
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from zklock.metrics import ZklockCollector

ROOT = Path(__file__).resolve().parents[1]
GOAL_MS, GOAL_KB = 20.0, 200.0


def harness() -> subprocess.Popen:
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = os.environ.get("ZK_HARNESS", str(target / "debug" / "zk-harness"))
    return subprocess.Popen(
        [binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--paths", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--out")
    args = ap.parse_args()
    zk = harness()
    try:
        servers = ""
        assert zk.stdout is not None
        for line in zk.stdout:
            if line.startswith("servers="):
                servers = line.strip().split("=", 1)[1]
                break
        if not servers:
            print("python-collect: zk-harness did not start ZooKeeper", file=sys.stderr)
            return 1
        with zklock.Client(servers) as client:
            base = f"/zklock-bench/collect-{os.getpid()}"
            for i in range(args.paths):
                with client.lock(f"{base}/{i:04}").hold(30.0):
                    pass
            collector = ZklockCollector(client)
            registry = CollectorRegistry()
            registry.register(collector)
            times = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                families = list(collector.collect())
                times.append((time.perf_counter() - started) * 1000.0)
            samples = sum(len(f.samples) for f in families)
            text = len(generate_latest(registry))
            openmetrics = len(generate_openmetrics(registry))
        row = {
            "paths": args.paths,
            "samples": samples,
            "collect_ms_median": round(statistics.median(times), 2),
            "collect_ms_max": round(max(times), 2),
            "scrape_kb_text": round(text / 1000.0, 1),
            "scrape_kb_openmetrics": round(openmetrics / 1000.0, 1),
        }
        worst_kb = max(row["scrape_kb_text"], row["scrape_kb_openmetrics"])
        row["meets_goal"] = row["collect_ms_median"] <= GOAL_MS and worst_kb <= GOAL_KB
        print(
            f"python-collect: {args.paths} paths, {samples} samples: collect median "
            f"{row['collect_ms_median']} ms (max {row['collect_ms_max']}; goal <= {GOAL_MS:g}), "
            f"scrape {row['scrape_kb_text']} KB text / {row['scrape_kb_openmetrics']} KB "
            f"OpenMetrics (goal <= {GOAL_KB:g}): {'meets' if row['meets_goal'] else 'MISSES'} "
            "the goal"
        )
        if args.out:
            Path(args.out).write_text(json.dumps(row, indent=2) + "\n")
        return 0
    finally:
        if zk.stdin:
            zk.stdin.close()
        zk.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())
