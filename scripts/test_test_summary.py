#!/usr/bin/env python3
"""The summary line's own tests (issue 57): every runner's failures count, and a red stage never
closes with "0 failed". Run by `make lint`.

    scripts/test_test_summary.py
"""

import importlib.util
import unittest
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "test_summary", Path(__file__).resolve().parent / "test-summary.py")
summary = importlib.util.module_from_spec(spec)
spec.loader.exec_module(summary)


def counts(log: str):
    return summary.summarize(log.splitlines())


class Summary(unittest.TestCase):
    def test_a_pytest_run_with_a_failure_counts_its_failure_and_its_passes(self):
        self.assertEqual(counts("1 failed, 563 passed, 6 skipped in 123.45s (0:02:03)")[:2], (563, 1))

    def test_pytest_errors_count_as_failures(self):
        self.assertEqual(counts("===== 2 passed, 1 error in 1.00s =====")[:2], (2, 1))
        self.assertEqual(counts("3 failed, 2 errors in 4.2s")[:2], (0, 5))

    def test_xfailed_is_neither_a_pass_nor_a_failure(self):
        self.assertEqual(counts("4 passed, 1 xfailed in 0.50s")[:2], (4, 0))

    def test_cargo_node_and_the_c_runners_count(self):
        log = "\n".join([
            "test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
            "# pass 10", "# fail 2", "# cancelled 1",
            "test programs: 151 passed, 4 failed",
            "conformance c: 148 passed, 0 failed",
        ])
        self.assertEqual(counts(log)[:2], (3 + 10 + 151 + 148, 1 + 2 + 1 + 4))

    def test_a_red_stage_with_no_counted_failure_counts_as_one(self):
        log = "test result: ok. 5 passed; 0 failed\nmake: *** [Makefile:56: test-python] Error 1\n"
        self.assertEqual(counts(log), (5, 1, ["test-python"]))

    def test_a_red_stage_that_counted_its_failures_adds_none(self):
        log = "1 failed, 9 passed in 2.00s\nmake: *** [Makefile:56: test-python] Error 1\n"
        self.assertEqual(counts(log), (9, 1, ["test-python"]))

    def test_a_green_log_has_no_red_stage(self):
        self.assertEqual(counts("9 passed in 2.00s\nmake test: every suite passed\n"), (9, 0, []))


if __name__ == "__main__":
    unittest.main()
