#!/usr/bin/env python3
"""Small rooms: no source file of the core, the transport, the CLI or a face over the limit.

    scripts/check-sizes.py [--limit N] [DIR ...]

Reads the files git tracks under each DIR (default: the core, wire, the CLI, the faces and the C
header's folder) ending in .rs, .py, .js, .mjs, .cjs, .ts, .c, .h or .java, and counts their
lines, tests aside: files under a `tests/` or `test/` folder, test files by name (`test_*.py`,
`*_test.py`, `*.test.js`, `*.spec.ts`, `tests.rs`, ...), and in Rust the lines from a trailing
top-level `#[cfg(test)]` module on. A generated file (a "Generated" or "@generated" marker in
its first lines, as cbindgen's header has) is not counted. Exits 1 listing each file over the
limit, biggest first; 0 with a one-line summary.
"""

import re
import subprocess
import sys
from pathlib import Path

LIMIT = 700
DIRS = ["core", "wire", "cli", "bindings-python", "bindings-node", "bindings-c", "include"]
SUFFIXES = {".rs", ".py", ".js", ".mjs", ".cjs", ".ts", ".c", ".h", ".java"}
TEST_DIRS = {"tests", "test", "__tests__"}
TEST_NAME = re.compile(
    r"^(test_.*\.py|.*_test\.(py|rs|c)|.*\.(test|spec)\.(js|mjs|cjs|ts)|tests?\.rs|conftest\.py)$"
)
GENERATED = re.compile(r"\bGenerated\b|@generated")


def counted_lines(path: Path) -> int:
    """Lines that count: none for a generated file, and a Rust file's up to its tests."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    if any(GENERATED.search(line) for line in lines[:5]):
        return 0
    if path.suffix == ".rs":
        # The last top-level `#[cfg(test)]` that opens a module: its module runs to the end.
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].strip() == "#[cfg(test)]" and not lines[i].startswith((" ", "\t")):
                after = next((l for l in lines[i + 1 :] if not l.startswith("#[")), "")
                if re.match(r"(pub(\(\w+\))? )?mod \w+", after):
                    return i
                break
    return len(lines)


def is_test(path: Path) -> bool:
    return bool(TEST_DIRS & set(path.parts[:-1])) or bool(TEST_NAME.match(path.name))


def main() -> int:
    args = sys.argv[1:]
    limit = LIMIT
    if args[:1] == ["--limit"]:
        limit, args = int(args[1]), args[2:]
    dirs = args or DIRS
    root = Path(
        subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--", *dirs], capture_output=True, text=True, check=True, cwd=root
    ).stdout.split("\0")
    checked, over = 0, []
    for name in filter(None, tracked):
        path = Path(name)
        if path.suffix not in SUFFIXES or is_test(path) or not (root / path).is_file():
            continue
        checked += 1
        n = counted_lines(root / path)
        if n > limit:
            over.append((n, name))
    for n, name in sorted(over, reverse=True):
        print(f"check-sizes: {name}: {n} lines, over the {limit}-line limit (tests aside)",
              file=sys.stderr)
    if over:
        print(f"check-sizes: {len(over)} of {checked} files over {limit} lines: split them by "
              "concept (docs/architecture.md)", file=sys.stderr)
        return 1
    print(f"check-sizes: {checked} source files, none over {limit} lines (tests and generated "
          "files aside)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
