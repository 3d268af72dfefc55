"""Issue 33: zklock's records follow ``logging`` as configured at each record (the level used to
be read once per Client creation, for the whole process), and every record names its client
(``record.zklock["client"] == client.id``), as docs/contract.md says."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from typing import List

import zklock

WAIT = 30.0

# A module-level client made before logging is configured, as an application's module does.
SCRIPT = """
import json, logging, sys, threading
import zklock

client = zklock.Client(sys.argv[1])
logging.basicConfig(level=logging.DEBUG, format="%(name)s %(levelname)s %(message)s")
seen = []
acquired = threading.Event()

class Keep(logging.Handler):
    def emit(self, record):
        seen.append([record.levelname, getattr(record, "zklock", None)])
        if getattr(record, "zklock", {}).get("outcome") == "acquired":
            acquired.set()

logging.getLogger("zklock").addHandler(Keep())
with client.lock(sys.argv[2]):
    pass
ok = acquired.wait(30)
print(json.dumps({"ok": ok, "client": client.id, "records": seen}))
client.close()
"""


def test_a_client_made_before_logging_basicconfig_debug_logs_its_acquires_at_debug(servers, path):
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, servers, path], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["ok"], f"no DEBUG acquire record came: {out['records']}"
    acquires = [r for r in out["records"] if r[1] and r[1].get("outcome") == "acquired"]
    assert acquires[0][0] == "DEBUG"
    assert acquires[0][1]["client"] == out["client"]


class Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: List[logging.LogRecord] = []
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.changed:
            self.records.append(record)
            self.changed.notify_all()

    def acquires_of(self, client_id: int) -> List[logging.LogRecord]:
        return [
            r for r in self.records
            if r.zklock.get("outcome") == "acquired" and r.zklock.get("client") == client_id  # type: ignore[attr-defined]
        ]

    def wait_for_acquire_of(self, client_id: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.acquires_of(client_id), WAIT), (
                f"no acquire record of client {client_id}: {[r.__dict__.get('zklock') for r in self.records]}"
            )


def test_every_record_names_the_client_it_is_about_and_raising_the_level_later_takes_effect(servers, path):
    logger = logging.getLogger("zklock")
    before = logger.level
    keep = Keep()
    logger.addHandler(keep)
    try:
        logger.setLevel(logging.WARNING)
        with zklock.Client(servers) as a, zklock.Client(servers) as b:
            assert a.id != b.id
            logger.setLevel(logging.DEBUG)  # after both clients were made
            with a.lock(path):
                pass
            keep.wait_for_acquire_of(a.id)
            with b.lock(path):
                pass
            keep.wait_for_acquire_of(b.id)
            assert len(keep.acquires_of(a.id)) == 1
            assert all(r.levelno == logging.DEBUG for r in keep.acquires_of(b.id))
            assert all("client" in r.zklock for r in keep.records)  # type: ignore[attr-defined]
            # Lowering it again is followed too: logging would drop them anyway, and zklock's
            # records of a level logging does not want are not even made.
            logger.setLevel(logging.WARNING)
            with a.lock(path):
                pass
            with b.lock(path):
                pass
            assert len(keep.acquires_of(a.id)) == 1
    finally:
        logger.removeHandler(keep)
        logger.setLevel(before)
