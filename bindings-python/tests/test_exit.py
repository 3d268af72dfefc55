"""A program using zklock never crashes at exit (issue 57), checked by running many short
programs of several shapes (tests/exit_shapes.py, and the typed example) beside a CPU hog that
this test starts: every run must end with its own status and no "Fatal Python error".

ZKLOCK_EXIT_RUNS sets the runs per shape (default 30 here; `make test-exit-long` runs 400)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

HERE = Path(__file__).resolve().parent
SHAPES_PROGRAM = HERE / "exit_shapes.py"
TYPED_EXAMPLE = HERE.parent / "examples" / "typed_example.py"

sys.path.insert(0, str(HERE))
from exit_shapes import STATUS  # noqa: E402

RUNS = int(os.environ.get("ZKLOCK_EXIT_RUNS", "30"))
# Two programs at a time beside two hogs: four runnable processes on a 2-core machine.
PARALLEL = 2
HOGS = 2


@pytest.fixture()
def cpu_hog() -> Iterator[None]:
    """Processes that spin for the whole test: a loaded machine, where the exit race shows."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(HOGS)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def run_once(shape: str, servers: str) -> Tuple[str, int, int, str]:
    """One run of `shape`: (shape, its expected status, the status it ended with, stderr's tail)."""
    path = f"/zklock-tests/exit/{uuid.uuid4().hex}"
    if shape == "typed":
        argv, expected = [sys.executable, str(TYPED_EXAMPLE), servers], 0
    else:
        argv, expected = [sys.executable, str(SHAPES_PROGRAM), shape, servers, path], STATUS[shape]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        return shape, expected, -999, f"no exit within 120 s: {e.stderr!r}"[-2000:]
    status = out.returncode
    if "Fatal Python error" in out.stderr:
        status = -998 if status == expected else status
    return shape, expected, status, out.stderr[-2000:]


def test_programs_of_every_shape_exit_with_their_own_status_beside_a_cpu_hog(
    servers: str, cpu_hog: None
) -> None:
    shapes = ["typed", *STATUS]
    jobs = list(itertools.islice(itertools.cycle(shapes), RUNS * len(shapes)))
    started = time.monotonic()
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(lambda shape: run_once(shape, servers), jobs))
    took = time.monotonic() - started
    failures: Dict[str, List[Tuple[int, str]]] = {}
    for shape, expected, status, err in results:
        if status != expected:
            failures.setdefault(shape, []).append((status, err))
    counts = ", ".join(
        f"{shape} {RUNS - len(failures.get(shape, []))}/{RUNS}" for shape in shapes
    )
    print(f"\nexit shapes: {len(results)} runs in {took:.0f} s beside {HOGS} CPU hogs: {counts}")
    assert not failures, "programs did not exit with their own status:\n" + "\n".join(
        f"{shape}: {len(bad)} of {RUNS}, e.g. status {bad[0][0]} (expected "
        f"{0 if shape == 'typed' else STATUS[shape]}), stderr: {bad[0][1]}"
        for shape, bad in failures.items()
    )
