#!/usr/bin/env python3
"""The layer checker's own tests: each finding `scripts/check-layers.py` promises (an arrow up, a
circle between files, a folder whose `mod.rs` has no header, a stale table entry, a module in no
layer, an exception no longer used) is made in a scratch crate, and the checker must fail on it
and name it; the clean crate must pass. Run by `make lint`, before the checker runs on the tree.

    scripts/test_check_layers.py
"""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

CHECKER = Path(__file__).resolve().parent / "check-layers.py"
HEADER = "//! What this layer owns.\n//! What it may use: the layers below.\n"


def crate(root: Path, table: str, files: dict) -> Path:
    """A scratch crate under `root`: `layers.txt` and `src/` with `files` (path: text)."""
    (root / "src").mkdir(parents=True)
    (root / "layers.txt").write_text(table, encoding="utf-8")
    for name, text in files.items():
        path = root / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def clean_files() -> dict:
    """Two layers, `low/` below `high/`, the upper one naming the lower one."""
    return {
        "lib.rs": "mod low;\nmod high;\npub use high::api::Api;\n",
        "low/mod.rs": HEADER + "pub mod codec;\n",
        "low/codec.rs": "pub fn encode() {}\n",
        "high/mod.rs": HEADER + "pub mod api;\n",
        "high/api.rs": "use crate::low::codec::encode;\npub struct Api;\nfn f() { encode() }\n",
    }


class TheLayerChecker(unittest.TestCase):
    def check(self, table: str, files: dict) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as tmp:
            root = crate(Path(tmp) / "scratch", table, files)
            return subprocess.run(
                [sys.executable, str(CHECKER), str(root)],
                capture_output=True,
                text=True,
                check=False,
            )

    def assert_fails_naming(self, table: str, files: dict, words: str) -> None:
        run = self.check(table, files)
        self.assertEqual(run.returncode, 1, f"the checker passed: {run.stdout}{run.stderr}")
        self.assertIn(words, run.stderr)

    def test_passes_a_crate_whose_imports_only_go_down(self) -> None:
        run = self.check("low/\nhigh/\n", clean_files())
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("scratch", run.stdout)

    def test_fails_on_an_arrow_up_and_names_the_file(self) -> None:
        files = clean_files()
        files["low/codec.rs"] = "use crate::high::api::Api;\npub fn encode() {}\n"
        self.assert_fails_naming("low/\nhigh/\n", files, "a layer above it (in src/low/codec.rs)")

    def test_fails_on_a_circle_between_two_files_of_one_layer(self) -> None:
        files = clean_files()
        files["low/mod.rs"] = HEADER + "pub mod codec;\npub mod frame;\n"
        files["low/codec.rs"] = "use super::frame::split;\npub fn encode() { split() }\n"
        files["low/frame.rs"] = "use super::codec::encode;\npub fn split() { encode() }\n"
        self.assert_fails_naming("low/\nhigh/\n", files, "import circle between the files")

    def test_fails_on_a_layer_folder_whose_mod_rs_has_no_header(self) -> None:
        files = clean_files()
        files["low/mod.rs"] = "pub mod codec;\n"
        self.assert_fails_naming("low/\nhigh/\n", files, "must open with two `//!` lines")

    def test_fails_on_a_table_entry_the_source_no_longer_has(self) -> None:
        self.assert_fails_naming("low/\ngone/\nhigh/\n", clean_files(), "which src/ does not have")

    def test_fails_on_a_module_that_is_in_no_layer(self) -> None:
        files = clean_files()
        files["extra.rs"] = "pub fn f() {}\n"
        files["lib.rs"] += "mod extra;\n"
        self.assert_fails_naming("low/\nhigh/\n", files, "src/extra is in no layer")

    def test_fails_on_an_allowed_arrow_that_is_no_longer_there(self) -> None:
        table = "low/\nhigh/\nallow: low -> high: the codec once needed the API\n"
        self.assert_fails_naming(table, clean_files(), "which is no longer there")

    def test_accepts_an_arrow_up_the_table_allows_with_a_reason(self) -> None:
        files = clean_files()
        files["low/codec.rs"] = "use crate::high::api::Api;\npub fn encode() {}\n"
        files["high/api.rs"] = "pub struct Api;\n"  # no arrow down, so no circle either
        table = "low/\nhigh/\nallow: low -> high: a reason written down\n"
        run = self.check(table, files)
        self.assertEqual(run.returncode, 0, run.stderr)


if __name__ == "__main__":
    unittest.main()
