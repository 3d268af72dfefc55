#!/usr/bin/env python3
"""One way down: checks a crate's `crate::` imports against its layer table, and finds import
circles between its modules.

    scripts/check-layers.py CRATE_DIR [CRATE_DIR ...]

Each CRATE_DIR holds `src/` and `layers.txt`. The table lists the layers from the bottom up,
one per line, as `NAME: module module ...`; a module is a file `src/NAME.rs` or a folder
`src/NAME/` (everything inside a folder belongs to its module). A module may name modules of its
own layer and of the layers listed before it; naming one of a later layer is an arrow up and
fails, unless the table lists it as `allow: FROM -> TO: reason`. An import circle between
modules fails in any case. Every module of `src/` must be in the table, and every module in the
table must exist, so the table cannot go stale silently. `lib.rs` (and `main.rs`) sit above every
layer. Exits 1 with one line per finding, 0 with a one-line summary.
"""

import re
import sys
from pathlib import Path

ROOTS = {"lib", "main"}


def modules_of(src: Path) -> dict:
    """Maps each top-level module to the files that belong to it."""
    found = {}
    for entry in sorted(src.iterdir()):
        if entry.is_file() and entry.suffix == ".rs":
            found.setdefault(entry.stem, []).append(entry)
        elif entry.is_dir():
            found.setdefault(entry.name, []).extend(sorted(entry.rglob("*.rs")))
    return found


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def top_level_names(group: str) -> list:
    """The first path segments of a `use crate::{...}` group's items."""
    names, depth, item = [], 0, ""
    for ch in group:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            names.append(item)
            item = ""
        else:
            item += ch
    names.append(item)
    out = []
    for n in names:
        n = n.strip()
        if n:
            out.append(re.split(r"::|\s|\{", n, maxsplit=1)[0])
    return out


def imports_of(path: Path) -> set:
    """The top-level modules a file names through `crate::`."""
    text = strip_comments(path.read_text(encoding="utf-8"))
    named = set()
    for m in re.finditer(r"crate::\{", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        named.update(top_level_names(text[m.end() : i - 1]))
    named.update(re.findall(r"crate::([a-z_][a-z0-9_]*)\b", text))
    return {n for n in named if n not in ("self", "super", "crate")}


def read_table(path: Path):
    layers, allowed = [], {}
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("allow:"):
            m = re.fullmatch(r"allow:\s*(\w+)\s*->\s*(\w+)\s*:\s*(.+)", line)
            if not m:
                sys.exit(f"{path}:{lineno}: write `allow: FROM -> TO: reason`")
            allowed[(m[1], m[2])] = m[3]
            continue
        name, _, mods = line.partition(":")
        if not mods.strip():
            sys.exit(f"{path}:{lineno}: write `LAYER: module module ...`")
        layers.append((name.strip(), mods.split()))
    return layers, allowed


def circles(graph: dict) -> list:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check(crate: Path) -> tuple:
    findings = []
    src = crate / "src"
    layers, allowed = read_table(crate / "layers.txt")
    level = {}
    for i, (name, mods) in enumerate(layers):
        for m in mods:
            if m in level:
                findings.append(f"{crate}: {m} is in the layer table twice")
            level[m] = (i, name)
    mods = modules_of(src)
    for m in sorted(set(mods) - set(level) - ROOTS):
        findings.append(f"{crate}: src/{m} is in no layer of layers.txt")
    for m in sorted(set(level) - set(mods)):
        findings.append(f"{crate}: layers.txt names {m}, which src/ does not have")
    graph, arrows, used = {}, 0, set()
    for m, files in mods.items():
        if m in ROOTS:
            continue
        named = set()
        for f in files:
            named |= imports_of(f)
        named.discard(m)
        graph[m] = {t for t in named if t in mods and t not in ROOTS}
        for t in sorted(graph[m]):
            arrows += 1
            if t not in level or m not in level:
                continue
            if level[t][0] > level[m][0]:
                if (m, t) in allowed:
                    used.add((m, t))
                else:
                    findings.append(
                        f"{crate}: {m} ({level[m][1]}) names {t} ({level[t][1]}), a layer above it"
                    )
    for comp in circles(graph):
        findings.append(f"{crate}: import circle between {', '.join(comp)}")
    for (m, t) in sorted(set(allowed) - used):
        findings.append(f"{crate}: layers.txt allows {m} -> {t}, which is no longer there: drop it")
    return findings, arrows, len(used)


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    failed = False
    for arg in sys.argv[1:]:
        findings, arrows, exceptions = check(Path(arg))
        for f in findings:
            print(f, file=sys.stderr)
        failed |= bool(findings)
        if not findings:
            print(f"check-layers: {arg}: {arrows} arrows, one way down ({exceptions} listed exceptions)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
