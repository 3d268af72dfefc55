"""Fixtures: a real ZooKeeper (and a fault proxy in front of it) from the project's zk-harness.

The harness is the binary `zk-harness` of the crate zklock-testkit (tests/harness). It prints
`servers=<connect string>` and `proxy=<addr>` once ZooKeeper serves, then obeys commands on
stdin (`blackhole`, `heal`, `cut`, ...) answering `ok`; closing stdin stops everything.

If ZooKeeper cannot be started the tests FAIL (never skip) with the harness's own words.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

import zklock

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = float(os.environ.get("ZK_HARNESS_START_TIMEOUT", "120"))


def harness_binary() -> Path:
    explicit = os.environ.get("ZK_HARNESS")
    if explicit:
        return Path(explicit)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "debug" / "zk-harness"


class Harness:
    """A running zk-harness: `servers`, `proxy` (connect string through the fault proxy) and
    `command(...)` to drive faults."""

    def __init__(self, args: Tuple[str, ...] = ("--proxy",), last_key: str = "proxy") -> None:
        binary = harness_binary()
        if not binary.exists():
            pytest.fail(
                f"zk-harness not found at {binary}: build it with "
                "`cargo build -p zklock-testkit --bin zk-harness` (or set ZK_HARNESS)",
                pytrace=False,
            )
        self.proc = subprocess.Popen(
            [str(binary), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self.stderr: List[str] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.servers = ""
        self.proxy = ""
        # Every `key=value` line the harness printed (--secure: tls_servers, tls_ca, ...).
        self.info: Dict[str, str] = {}
        self.lock = threading.Lock()
        deadline = time.monotonic() + START_TIMEOUT
        while last_key not in self.info:
            line = self._next_line(deadline)
            if line is None:
                self.close()
                pytest.fail(
                    "ZooKeeper could not be started by zk-harness "
                    f"(exit code {self.proc.poll()}):\n" + "".join(self.stderr[-40:]),
                    pytrace=False,
                )
            key, _, value = line.strip().partition("=")
            self.info[key] = value
            if line.startswith("servers="):
                self.servers = line.split("=", 1)[1].strip()
            elif line.startswith("proxy="):
                self.proxy = line.split("=", 1)[1].strip()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def _next_line(self, deadline: float) -> Optional[str]:
        try:
            return self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None

    def command(self, cmd: str, timeout: float = 30.0) -> None:
        """Sends one command and waits for its `ok`."""
        with self.lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(cmd + "\n")
            self.proc.stdin.flush()
            deadline = time.monotonic() + timeout
            while True:
                line = self._next_line(deadline)
                if line is None:
                    raise AssertionError(f"zk-harness gave no answer to {cmd!r}")
                if line.strip() == "ok":
                    return
                if line.startswith("error"):
                    raise AssertionError(f"zk-harness: {cmd!r}: {line.strip()}")

    def close(self) -> None:
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="session")
def harness() -> Iterator[Harness]:
    h = Harness()
    try:
        yield h
    finally:
        try:
            h.command("heal")
        except AssertionError:
            pass
        h.close()


@pytest.fixture(scope="session")
def secure() -> Iterator[Harness]:
    """One secured ZooKeeper for the suite (`zk-harness --secure`): a TLS port, SASL users alice
    and bob; `secure.info` has `tls_servers`, `tls_wrong_host_servers`, `tls_ca`, `tls_wrong_ca`,
    `tls_cert`, `tls_key`, `sasl_users` (user:password,...)."""
    h = Harness(("--secure",), last_key="sasl_users")
    try:
        yield h
    finally:
        h.close()


@pytest.fixture(scope="session")
def servers(harness: Harness) -> str:
    return harness.servers


@pytest.fixture()
def client(servers: str) -> Iterator[zklock.Client]:
    with zklock.Client(servers, session_timeout=10.0) as c:
        yield c


@pytest.fixture()
def other(servers: str) -> Iterator[zklock.Client]:
    """A second client (another session, as another process would have)."""
    with zklock.Client(servers, session_timeout=10.0) as c:
        yield c


@pytest.fixture()
def path() -> str:
    return f"/zklock-py/{uuid.uuid4().hex}"


def nodes(client: zklock.Client, path: str) -> List[zklock.Participant]:
    return client.lock(path).participants()


def wait_until(predicate, timeout: float = 10.0, interval: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def assert_empty_eventually(client: zklock.Client, path: str, timeout: float = 10.0) -> None:
    assert wait_until(lambda: not nodes(client, path), timeout), (
        f"lock path {path} still holds {nodes(client, path)}"
    )


# The conformance runner's results (test_conformance.py): (case id, expected, outcome or what
# went wrong, passed).
CONFORMANCE: List[Tuple[str, str, str, bool]] = []


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    """One line per conformance case and a closing count, as tests/conformance/README.md asks."""
    if not CONFORMANCE:
        return
    write = terminalreporter.write_line
    terminalreporter.section("conformance (tests/conformance/cases.txt)")
    for case_id, expected, outcome, passed in CONFORMANCE:
        if outcome.startswith("n/a: "):
            write(f"n/a  {case_id}: {outcome[5:]}"[:300])
        elif passed:
            write(f"ok   {case_id}: {outcome}")
        else:
            write(f"FAIL {case_id}: {outcome}"[:300])
    failed = sum(1 for c in CONFORMANCE if not c[3])
    na = sum(1 for c in CONFORMANCE if c[2].startswith("n/a: "))
    write(f"conformance: {len(CONFORMANCE)} cases, {len(CONFORMANCE) - failed - na} passed, "
          f"{failed} failed, {na} n/a")
