"""The shipped examples: the cross-language worker, and the typed example under mypy --strict
(acceptance 9)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"


def test_two_workers_share_a_log_without_overlap(servers, path, tmp_path):
    log = tmp_path / "demo.log"
    procs = [
        subprocess.Popen([sys.executable, str(EXAMPLES / "worker.py"), servers, path, "10", str(log)],
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    lines = [line.split() for line in log.read_text().splitlines()]
    assert len(lines) == 20
    assert all(parts[0] == "python" and len(parts) == 4 for parts in lines)
    records = sorted((int(e), int(x), int(t)) for _, t, e, x in lines)
    for (e1, x1, t1), (e2, x2, t2) in zip(records, records[1:]):
        assert x1 <= e2, "critical sections overlap"
        assert t1 < t2, "tokens do not increase"
        assert x1 - e1 >= 15_000_000  # ~20 ms inside


def test_worker_usage_errors(tmp_path):
    out = subprocess.run([sys.executable, str(EXAMPLES / "worker.py")], capture_output=True, text=True)
    assert out.returncode == 2 and "usage" in out.stderr
    out = subprocess.run([sys.executable, str(EXAMPLES / "worker.py"), "h:1", "/p", "x", "l"],
                         capture_output=True, text=True)
    assert out.returncode == 2


def test_typed_example_runs(servers):
    out = subprocess.run([sys.executable, str(EXAMPLES / "typed_example.py"), servers],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "UpgradeNotAllowed" in out.stdout


@pytest.mark.parametrize(
    "target",
    [
        [str(EXAMPLES / "typed_example.py"), str(EXAMPLES / "worker.py"), str(EXAMPLES / "readme.py"),
         str(EXAMPLES / "readme_semaphore.py"), str(EXAMPLES / "readme_election.py")],
        ["-p", "zklock"],  # the package itself: its annotations agree with _zklock.pyi
    ],
    ids=["examples", "package"],
)
def test_mypy_strict_accepts_the_typed_code(target):
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is not installed in this environment (ci-test.sh installs it)")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *target],
        capture_output=True, text=True, timeout=300, cwd=str(EXAMPLES),
    )
    assert out.returncode == 0, out.stdout + out.stderr


README = HERE.parent / "README.md"
README_EXAMPLE = EXAMPLES / "readme.py"


def test_the_readme_example_is_examples_readme_py_verbatim():
    snippet = README_EXAMPLE.read_text().strip("\n")
    assert f"```python\n{snippet}\n```" in README.read_text(), (
        "bindings-python/README.md must show examples/readme.py verbatim"
    )


def test_the_readme_example_runs_as_written(servers):
    env = {**os.environ, "ZKLOCK_SERVERS": servers}
    out = subprocess.run([sys.executable, "-W", "error::ResourceWarning", str(README_EXAMPLE)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    tokens = [line.split()[-1] for line in out.stdout.splitlines() if line.startswith("fencing token")]
    assert len(tokens) == 2 and all(int(t) > 0 for t in tokens), out.stdout


README_SEMAPHORE = EXAMPLES / "readme_semaphore.py"


def test_the_readme_semaphore_example_is_examples_readme_semaphore_py_verbatim():
    snippet = README_SEMAPHORE.read_text().strip("\n")
    assert f"```python\n{snippet}\n```" in README.read_text(), (
        "bindings-python/README.md must show examples/readme_semaphore.py verbatim"
    )


def test_the_readme_semaphore_example_runs_as_written(servers):
    env = {**os.environ, "ZKLOCK_SERVERS": servers}
    out = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(README_SEMAPHORE)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    tokens = lines[0].split()[2:]
    assert lines[0].startswith("lease tokens") and len(set(tokens)) == 2, out.stdout
    assert lines[1:] == ["third: False", "asked to let go: True"], out.stdout


README_ELECTION = EXAMPLES / "readme_election.py"


def test_the_readme_election_example_is_examples_readme_election_py_verbatim():
    snippet = README_ELECTION.read_text().strip("\n")
    assert f"```python\n{snippet}\n```" in README.read_text(), (
        "bindings-python/README.md must show examples/readme_election.py verbatim"
    )


def test_the_readme_election_example_runs_as_written(servers):
    env = {**os.environ, "ZKLOCK_SERVERS": servers}
    out = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(README_ELECTION)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "leader: None", out.stdout
    assert lines[1].startswith("leading, token"), out.stdout
    assert lines[2:] == [
        "observed: worker-1 @ 10.0.0.7",
        "token current: True",
        "worker-2 leads",
        "after: []",
        "ran: True",
        "async leader: held",
    ], out.stdout
