#!/usr/bin/env python3
"""Adds up the test counts of every runner in a `make test` log (cargo test, pytest, node --test,
the C programs, the README tour, the packages) into one closing line: `summary: N passed, M failed`.

Failures and errors of every runner count as failed (pytest's "1 failed, 563 passed" as much as
its "563 passed"). A stage that make reports red ("make: *** [...] Error 2") with no failure
counted (a build error, mypy, a script that stopped early) counts as one failure of its own, so
a red run never closes with "0 failed"; the red stages are named on the line before."""
import re
import sys

# One pytest summary: "[=== ]1 failed, 563 passed, 6 skipped, 2 errors in 12.34s[ (0:00:12)][ ===]".
PYTEST_END = re.compile(r"(?:=+ )?(?:\d+ \w+(?:, )?)+ in [\d.]+s(?: \([\d:]+\))?(?: =+)?$")
PYTEST_COUNT = re.compile(r"\b(\d+) (passed|failed|errors?)\b")
CARGO = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed")
NODE = re.compile(r"# (pass|fail|cancelled) (\d+)$")
# The C programs, the conformance runners, the README tour, the packages.
PLAIN = re.compile(r"(?:test programs|readme|conformance \w+|dist): (\d+) passed, (\d+) failed$")
MAKE_RED = re.compile(r"make(?:\[\d+\])?: \*\*\* \[[^\]]*?:?\s*([\w.-]+)\] Error \d+")


def summarize(lines):
    passed = failed = 0
    red = []
    for line in lines:
        line = line.strip()
        if m := CARGO.match(line):
            passed += int(m[1])
            failed += int(m[2])
        elif PYTEST_END.match(line):
            for count, kind in PYTEST_COUNT.findall(line):
                if kind == "passed":
                    passed += int(count)
                else:
                    failed += int(count)
        elif m := NODE.match(line):
            if m[1] == "pass":
                passed += int(m[2])
            else:
                failed += int(m[2])
        elif m := PLAIN.match(line):
            passed += int(m[1])
            failed += int(m[2])
        elif m := MAKE_RED.search(line):
            if m[1] not in red:
                red.append(m[1])
    if red and failed == 0:
        failed = len(red)
    return passed, failed, red


def main(path):
    with open(path, errors="replace") as log:
        passed, failed, red = summarize(log)
    if red:
        print(f"red stages: {' '.join(red)}")
    print(f"summary: {passed} passed, {failed} failed")


if __name__ == "__main__":
    main(sys.argv[1])
