"""docs/safety.md's fenced resource, run as the page shows it: a holder that stalls past the end
of its lease cannot overwrite the next holder's data with its old token (issue 23, point 9)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict

import pytest

import zklock

SAFETY = Path(__file__).resolve().parents[2] / "docs" / "safety.md"


def fenced_resource() -> Dict[str, Any]:
    """The page's code block between its fenced-resource markers, executed."""
    text = SAFETY.read_text()
    block = re.search(
        r"<!-- fenced-resource:begin -->\s*```python\n(.*?)```\s*<!-- fenced-resource:end -->",
        text,
        re.S,
    )
    assert block, "docs/safety.md lost its fenced-resource block"
    scope: Dict[str, Any] = {}
    exec(compile(block.group(1), str(SAFETY), "exec"), scope)
    return scope


def test_a_stalled_holder_cannot_overwrite_the_next_holders_data(servers, path, tmp_path):
    scope = fenced_resource()
    report = scope["FencedFile"](str(tmp_path / "report"))
    a_client = zklock.Client(servers, session_timeout=4.0)
    with zklock.Client(servers, session_timeout=4.0) as b_client:
        a_lock = a_client.lock(path)
        assert a_lock.acquire(timeout=10)
        a = a_lock.lease
        assert a is not None
        a_token = a.token
        report.write(a_token, b"A, first")
        # A stalls; its session ends under it (as a pause past the session timeout ends it).
        a_client.close()
        assert a.state == "lost"
        with b_client.lock(path).hold(timeout=10) as b:
            assert b.token > a_token
            report.write(b.token, b"B")
        # A wakes up and writes with the token it had.
        with pytest.raises(scope["StaleToken"], match=f"token {a_token} is older than {b.token}"):
            report.write(a_token, b"A, late")
    assert (tmp_path / "report").read_bytes() == b"B"


def test_the_same_holder_may_write_again_with_its_token(tmp_path):
    report = fenced_resource()["FencedFile"](str(tmp_path / "report"))
    report.write(7, b"one")
    report.write(7, b"two")
    report.write(9, b"three")
    assert (tmp_path / "report").read_bytes() == b"three"
    assert (tmp_path / "report.fence").read_text() == "9"
