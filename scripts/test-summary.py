#!/usr/bin/env python3
"""Adds up the test counts of every runner in a `make test` log (cargo test, pytest, node --test,
the C programs, the README tour) into one closing line: `summary: N passed, M failed`."""
import re
import sys

passed = failed = 0
for line in open(sys.argv[1], errors="replace"):
    line = line.strip()
    if m := re.match(r"test result: \w+\. (\d+) passed; (\d+) failed", line):  # cargo test
        passed += int(m[1]); failed += int(m[2])
    elif m := re.match(r"(?:=+ )?(\d+) passed(?:, (\d+) failed)?.* in [\d.]+s", line):  # pytest
        passed += int(m[1]); failed += int(m[2] or 0)
    elif m := re.match(r"# (pass|fail) (\d+)$", line):  # node --test
        if m[1] == "pass":
            passed += int(m[2])
        else:
            failed += int(m[2])
    elif m := re.match(r"(?:test programs|readme|conformance \w+|dist): (\d+) passed, (\d+) failed$", line):  # C programs, README tour, conformance runners, packages
        passed += int(m[1]); failed += int(m[2])
print(f"summary: {passed} passed, {failed} failed")
