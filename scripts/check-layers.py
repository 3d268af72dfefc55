#!/usr/bin/env python3
"""One way down: checks a crate's `crate::` imports against its layer table, and finds import
circles between its files.

    scripts/check-layers.py CRATE_DIR [CRATE_DIR ...]

Each CRATE_DIR holds `src/` and `layers.txt`. The table lists the layers from the bottom up, one
per line, either as `NAME: module module ...` (a module is a file `src/NAME.rs` or a folder
`src/NAME/`; everything inside a folder belongs to its module) or as a bare `FOLDER/`: a layer
that is one folder of `src/`, whose `mod.rs` must open with two `//!` lines (what the layer owns,
what it may use). A module may name modules of its own layer and of the layers listed before it;
naming one of a later layer is an arrow up and fails, unless the table lists it as
`allow: FROM -> TO: reason`. Every module of `src/` must be in the table, and every module in the
table must exist, so the table cannot go stale silently. `lib.rs` (and `main.rs`) sit above
every layer.

Circles are looked for between files, not only between layers: each `crate::`, `super::` and
`self::` path (inside `use` groups too) is followed to the file of the deepest module it names,
and a circle between files fails, whatever their layers. A file's own children (`mod x;` in
`a.rs`, kept in `a/x.rs`: one file's body cut into rooms) count as part of that file, since they
may reach into it by `super::`. Exits 1 with one line per finding, 0 with a one-line summary.
"""

import re
import sys
from pathlib import Path

ROOTS = {"lib", "main"}
ROOT_EXPORTS = {}
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


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
    """Comments out, so a path in prose or a doc link is not an import."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def use_paths(text: str, start: int) -> list:
    """The full paths of the path (or `use` tree) that starts at `start`, as segment lists."""

    def tree(i):
        """Parses `seg::seg::{tree, tree}` from i; returns (paths, end)."""
        segs = []
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i < len(text) and text[i] == "{":
                depth, j = 1, i + 1
                while j < len(text) and depth:
                    depth += {"{": 1, "}": -1}.get(text[j], 0)
                    j += 1
                paths, k = [], i + 1
                while k < j - 1:
                    sub, k = tree(k)
                    paths += [segs + p for p in sub]
                    while k < j - 1 and text[k] in " \t\n,":
                        k += 1
                return paths or [segs], j
            m = re.compile(IDENT).match(text, i)
            if not m:
                return [segs], i
            segs.append(m[0])
            i = m.end()
            sep = re.compile(r"\s*::\s*").match(text, i)
            if not sep:
                return [segs], i
            i = sep.end()

    paths, _ = tree(start)
    return [[s for s in p if s != "self"] or p for p in paths]


def inline_spans(text: str) -> list:
    """The spans of the inline modules (`mod tests { ... }`) of a file."""
    spans = []
    for m in re.finditer(r"\bmod\s+" + IDENT + r"\s*\{", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        spans.append((m.start(), i))
    return spans


def module_path(src: Path, path: Path) -> list:
    """The module path of a file: src/a/b.rs and src/a/b/mod.rs are both ["a", "b"]."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    return [] if parts in (["lib"], ["main"]) else parts


def file_of(src: Path, segs: list):
    """The file of the deepest module `segs` names (None if it names no module of `src`)."""
    for n in range(len(segs), 0, -1):
        base = src.joinpath(*segs[:n])
        for cand in (base.with_suffix(".rs"), base / "mod.rs"):
            if cand.is_file():
                return cand
    return None


def owner_of(src: Path, path: Path) -> Path:
    """The file a file is part of: a file's own children (`a/x.rs` beside `a.rs`) are `a.rs`'s."""
    while path.parent != src:
        parent_file = path.parent.with_suffix(".rs")
        if not parent_file.is_file():
            break
        path = parent_file
    return path


def root_exports(src: Path) -> dict:
    """What `lib.rs` re-exports at the crate's root (`pub use a::b::X;`): X's path, so that a
    file naming `crate::X` is counted as naming the file X comes from."""
    lib = src / "lib.rs"
    if not lib.is_file():
        return {}
    text = strip_comments(lib.read_text(encoding="utf-8"))
    out = {}
    for m in re.finditer(r"^pub use\s+", text, flags=re.M):
        for segs in use_paths(text, m.end()):
            if segs and segs[0] == "crate":
                segs = segs[1:]
            if len(segs) > 1:
                out[segs[-1]] = segs[:-1]
    return out


def imports_of(src: Path, path: Path):
    """The top-level modules a file names through `crate::`, and the files its paths reach."""
    text = strip_comments(path.read_text(encoding="utf-8"))
    spans = inline_spans(text)
    here = module_path(src, path)
    named, files = set(), set()
    for m in re.finditer(r"(?<![A-Za-z0-9_$:])(crate|super|self)\s*::", text):
        for segs in use_paths(text, m.start()):
            if segs[0] == "crate":
                full = segs[1:]
                if full and full[0] in ROOT_EXPORTS.get(src, {}):
                    full = ROOT_EXPORTS[src][full[0]] + full[1:]
            else:
                # `super` climbs out of the file's inline modules first (a test module's
                # `use super::*` is the file itself), then out of the file's module.
                inline = sum(1 for a, b in spans if a <= m.start() < b)
                base, rest = list(here), list(segs)
                while rest and rest[0] == "super":
                    rest.pop(0)
                    if inline:
                        inline -= 1
                    elif base:
                        base.pop()
                while rest and rest[0] == "self":
                    rest.pop(0)
                full = base + rest
            target = file_of(src, full) if full else None
            if target is not None:
                files.add(target)
                top = module_path(src, target)
                if top:
                    named.add(top[0])
    return named, files


def read_table(path: Path):
    layers, allowed, folders = [], {}, []
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
        m = re.fullmatch(r"(\w+)/", line)
        if m:
            layers.append((m[1], [m[1]]))
            folders.append(m[1])
            continue
        name, _, mods = line.partition(":")
        if not mods.strip():
            sys.exit(f"{path}:{lineno}: write `LAYER: module module ...` or `FOLDER/`")
        layers.append((name.strip(), mods.split()))
    return layers, allowed, folders


def circles(graph: dict) -> list:
    """Strongly connected components with more than one node (Tarjan)."""
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
    layers, allowed, folders = read_table(crate / "layers.txt")
    level = {}
    for i, (name, mods) in enumerate(layers):
        for m in mods:
            if m in level:
                findings.append(f"{crate}: {m} is in the layer table twice")
            level[m] = (i, name)
    mods = modules_of(src)
    ROOT_EXPORTS[src] = root_exports(src)
    for m in sorted(set(mods) - set(level) - ROOTS):
        findings.append(f"{crate}: src/{m} is in no layer of layers.txt")
    for m in sorted(set(level) - set(mods)):
        findings.append(f"{crate}: layers.txt names {m}, which src/ does not have")
    for f in folders:
        head = (src / f / "mod.rs").read_text(encoding="utf-8").splitlines()[:3] if (
            src / f / "mod.rs"
        ).is_file() else []
        if len(head) < 2 or not all(h.startswith("//! ") for h in head[:2]) or (
            len(head) > 2 and head[2].startswith("//!")
        ):
            findings.append(
                f"{crate}: src/{f}/mod.rs must open with two `//!` lines: what the layer owns, "
                "what it may use"
            )
    graph, arrows, used = {}, 0, set()
    file_graph = {}
    for m, files in mods.items():
        if m in ROOTS:
            continue
        named = set()
        for f in files:
            top, reached = imports_of(src, f)
            named |= top
            me = owner_of(src, f)
            edges = file_graph.setdefault(me, set())
            edges |= {
                owner_of(src, t)
                for t in reached
                if owner_of(src, t) != me and module_path(src, t) != []
            }
        named.discard(m)
        graph[m] = {t for t in named if t in mods and t not in ROOTS}
        for t in sorted(graph[m]):
            if t not in level or m not in level:
                continue
            if level[t][0] > level[m][0]:
                if (m, t) in allowed:
                    used.add((m, t))
                else:
                    bad = sorted(
                        str(f.relative_to(crate))
                        for f in files
                        if t in imports_of(src, f)[0]
                    )
                    findings.append(
                        f"{crate}: {m} ({level[m][1]}) names {t} ({level[t][1]}), a layer above "
                        f"it (in {', '.join(bad)})"
                    )
    for comp in circles(graph):
        findings.append(f"{crate}: import circle between {', '.join(comp)}")
    for comp in circles(file_graph):
        shown = ", ".join(str(p.relative_to(crate)) for p in comp)
        findings.append(f"{crate}: import circle between the files {shown}")
    for m, t in sorted(set(allowed) - used):
        findings.append(f"{crate}: layers.txt allows {m} -> {t}, which is no longer there: drop it")
    arrows = sum(len(v) for v in file_graph.values())
    return findings, arrows, len(file_graph), len(used)


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    failed = False
    for arg in sys.argv[1:]:
        findings, arrows, nfiles, exceptions = check(Path(arg))
        for f in findings:
            print(f, file=sys.stderr)
        failed |= bool(findings)
        if not findings:
            print(
                f"check-layers: {arg}: {arrows} arrows between {nfiles} files, one way down, "
                f"no circle ({exceptions} listed exceptions)"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
