#!/usr/bin/env bash
# make release-check (issue 55): every registry's own check of what a release would publish,
# never an upload. After `make dist` (the Makefile runs it first):
#   crates.io  each crate's LICENSE is the root's (a symlink, and the .crate's copy byte for byte),
#              its metadata complete, its README without links that cannot resolve on crates.io,
#              the CLI's normal dependencies without the test kit, every `rust-version` at least
#              that of each normal dependency in Cargo.lock, `cargo doc` without warnings for the
#              wire and the CLI, and `cargo publish --dry-run` for zklock-wire, zklock and
#              zklock-cli in that order (see below);
#   PyPI       the sdist built and installed from source into a fresh venv, `twine check --strict`
#              on the wheels and the sdist, their metadata (License-Expression, Project-URL,
#              Markdown README);
#   npm        `npm publish --dry-run` of every platform package and of the main package, whose
#              tarball holds no addon and names each platform package as an optional dependency.
#
# Why one `cargo publish --dry-run -p zklock-wire -p zklock -p zklock-cli`: none of the three is
# on crates.io yet, so the core's dry run alone cannot resolve `zklock-wire = "0.1.0"` there.
# cargo (>= 1.90) packages the selected crates in dependency order and verifies each against a
# local registry overlay that holds the .crate files packaged before it: the same check as three
# uploads in turn, without one. `--no-verify` is not used: each crate is built from its .crate.
#
# Knobs: RELEASE_CHECK_SDIST=0 skips the sdist's build from source (about 4 minutes on 2 cores).
# The last line is `release-check: N passed, M failed`.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
CARGO="${CARGO:-cargo}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
dist="$root/dist"
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
repo="$(sed -n '/^\[workspace.package\]/,/^\[/s/^repository = "\(.*\)"/\1/p' Cargo.toml)"
tools="$target_dir/tools/pyreg"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() { # check NAME COMMAND...
  local name="$1"; shift
  echo "-- $name"
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
crates=(wire core cli)

# --- crates.io ------------------------------------------------------------------------------
licence_links() {
  local c bad=0
  for c in "${crates[@]}"; do
    [ -L "$c/LICENSE" ] && [ "$(readlink "$c/LICENSE")" = ../LICENSE ] || { echo "  $c/LICENSE is not a link to ../LICENSE"; bad=1; }
  done
  return $bad
}
check "crates: wire/, core/ and cli/LICENSE link to the root's LICENSE (no copy to drift)" licence_links

metadata() {
  "$CARGO" metadata --format-version 1 --no-deps >"$tmp/meta.json" && python3 - "$tmp/meta.json" "$repo" <<'PY'
import json, sys
meta, repo = json.load(open(sys.argv[1])), sys.argv[2]
bad = 0
by_name = {p["name"]: p for p in meta["packages"]}
for name in ["zklock-wire", "zklock", "zklock-cli"]:
    p = by_name[name]
    missing = [k for k in ["description", "license", "repository", "homepage", "documentation", "readme", "rust_version"] if not p.get(k)]
    missing += [k for k in ["keywords", "categories"] if not p.get(k)]
    if p.get("publish") == []:
        missing.append("publish = false")
    if p.get("repository") != repo:
        missing.append(f"repository {p.get('repository')} (workspace: {repo})")
    normal = [d["name"] for d in p["dependencies"] if d["kind"] is None]
    if "zklock-testkit" in normal:
        missing.append("zklock-testkit as a normal dependency")
    unversioned = [d["name"] for d in p["dependencies"] if d.get("path") and d["kind"] != "dev" and d["req"] == "*"]
    if unversioned:
        missing.append(f"path dependencies without a version: {unversioned}")
    print(f"  {name} {p['version']}: rust-version {p.get('rust_version')}, keywords {p.get('keywords')}, categories {p.get('categories')}" + (f"; MISSING {missing}" if missing else ""))
    bad |= bool(missing)
sys.exit(bad)
PY
}
check "crates: metadata complete, path dependencies versioned, the CLI without the test kit" metadata

# A link in a crate README resolves on crates.io only if it is absolute (or an anchor).
readme_links() {
  python3 - "${crates[@]}" <<'PY'
import re, sys
bad = 0
for c in sys.argv[1:]:
    text = open(f"{c}/README.md").read()
    links = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"^\[[^\]]+\]:\s*(\S+)", text, re.M)
    rel = [l for l in links if not re.match(r"(https?://|mailto:|#)", l)]
    print(f"  {c}/README.md: {len(links)} links, {len(rel)} relative" + (f": {rel}" if rel else ""))
    bad |= bool(rel)
sys.exit(bad)
PY
}
check "crates: README links resolve on crates.io (absolute or anchors)" readme_links

# rust-version against Cargo.lock: no crate may claim less than a normal dependency needs.
msrv() {
  "$CARGO" metadata --format-version 1 >"$tmp/full.json" 2>/dev/null && python3 - "$tmp/full.json" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
pkgs = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
ver = lambda s: tuple(int(x) for x in ((s or "0") + ".0.0").split(".")[:3])  # 1.89 == 1.89.0
bad = 0
for name in ["zklock-wire", "zklock", "zklock-cli"]:
    root = next(i for i, p in pkgs.items() if p["name"] == name and p["source"] is None)
    seen, todo = set(), [root]
    while todo:
        i = todo.pop()
        for d in nodes[i]["deps"]:
            if any(k["kind"] in (None, "build") for k in d["dep_kinds"]) and d["pkg"] not in seen:
                seen.add(d["pkg"]); todo.append(d["pkg"])
    # The registry's crates (the workspace's own say theirs, checked as roots themselves).
    top = max((i for i in seen if pkgs[i]["source"] is not None), key=lambda i: ver(pkgs[i].get("rust_version")))
    need, have = pkgs[top].get("rust_version"), pkgs[root].get("rust_version")
    ok = ver(have) >= ver(need)
    print(f"  {name}: rust-version {have}; its dependencies need {need} ({pkgs[top]['name']} {pkgs[top]['version']}){'' if ok else ' -- TOO LOW'}")
    bad |= not ok
sys.exit(bad)
PY
}
check "crates: rust-version at least every normal dependency's in Cargo.lock" msrv

docs() { RUSTDOCFLAGS='-D warnings' "$CARGO" doc -q --no-deps -p zklock-wire -p zklock-cli; }
check "crates: cargo doc -D warnings for zklock-wire and zklock-cli" docs

publish_crates() {
  "$CARGO" publish --dry-run --allow-dirty -p zklock-wire -p zklock -p zklock-cli 2>&1 | tee "$tmp/publish.log" |
    grep -E '^ *(Packag|Verifying|Uploading|warning|error)|aborting upload' ; [ "${PIPESTATUS[0]}" = 0 ] || return 1
  # The packaged LICENSE is the root's, byte for byte.
  local c f bad=0
  for c in zklock-wire zklock zklock-cli; do
    # (cargo publish leaves the .crate files in package/tmp-crate, cargo package in package/)
    f="$(ls "$target_dir/package/tmp-crate/$c-$version.crate" "$target_dir/package/$c-$version.crate" 2>/dev/null | head -n1)"
    [ -n "$f" ] || { echo "  no $c-$version.crate"; bad=1; continue; }
    tar -xzOf "$f" "$c-$version/LICENSE" | cmp -s - LICENSE || { echo "  $f: LICENSE differs from the root's"; bad=1; }
  done
  return $bad
}
check "crates: cargo publish --dry-run zklock-wire, zklock, zklock-cli (dependency order, local overlay)" publish_crates

# --- PyPI -----------------------------------------------------------------------------------
sdist="$dist/pyzklock-$version.tar.gz"
mapfile -t wheels < <(ls "$dist"/pyzklock-"$version"-*.whl 2>/dev/null)
pytools() {
  [ -x "$tools/bin/twine" ] && [ -x "$tools/bin/pypi-server" ] && return 0
  python3 -m venv "$tools" && "$tools/bin/pip" install -q 'twine==7.0.0' 'pypiserver==2.4.2'
}
check "PyPI: twine 7.0.0 (and pypiserver 2.4.2) from PyPI into $tools" pytools
twine_check() { [ -f "$sdist" ] && [ "${#wheels[@]}" -gt 0 ] && "$tools/bin/twine" check --strict "${wheels[@]}" "$sdist"; }
check "PyPI: twine check --strict on ${#wheels[@]} wheel(s) and the sdist" twine_check
py_metadata() {
  python3 - "$sdist" "$repo" "${wheels[@]}" <<'PY'
import email, sys, tarfile, zipfile
sdist, repo, wheels = sys.argv[1], sys.argv[2], sys.argv[3:]
texts = {}
with tarfile.open(sdist) as t:
    texts[sdist] = t.extractfile(next(m for m in t.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO"))).read().decode()
for w in wheels:
    with zipfile.ZipFile(w) as z:
        texts[w] = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
bad = 0
for f, text in texts.items():
    m = email.message_from_string(text)
    urls = m.get_all("Project-URL") or []
    problems = []
    if m["Metadata-Version"] < "2.4": problems.append(f"Metadata-Version {m['Metadata-Version']}")
    if m["License-Expression"] != "Apache-2.0": problems.append(f"License-Expression {m['License-Expression']}")
    if m["License"]: problems.append("a legacy License field")
    if any(c.startswith("License ::") for c in m.get_all("Classifier") or []): problems.append("a License classifier")
    if not any(repo in u for u in urls): problems.append(f"no Project-URL to {repo}")
    if not (m["Description-Content-Type"] or "").startswith("text/markdown") or len(m.get_payload()) < 1000: problems.append("README not the long description")
    print(f"  {f.rsplit('/', 1)[-1]}: Metadata-Version {m['Metadata-Version']}, License-Expression {m['License-Expression']}, "
          f"License-File {m.get_all('License-File')}, {len(urls)} Project-URLs, {len(m.get_all('Classifier') or [])} classifiers, "
          f"long description {len(m.get_payload())} chars ({m['Description-Content-Type']})" + (f"; {problems}" if problems else ""))
    bad |= bool(problems)
sys.exit(bad)
PY
}
check "PyPI: PEP 639 License-Expression, project URLs, classifiers, README as the long description" py_metadata
sdist_install() {
  [ "${RELEASE_CHECK_SDIST:-1}" = 1 ] || { echo "  skipped (RELEASE_CHECK_SDIST=0)"; return 0; }
  python3 -m venv "$tmp/sdist-venv" && "$tmp/sdist-venv/bin/pip" install -q --upgrade pip >/dev/null &&
    local t0=$SECONDS &&
    "$tmp/sdist-venv/bin/pip" install -q --no-binary pyzklock "$sdist" &&
    echo "  built and installed from source in $((SECONDS - t0)) s" &&
    "$tmp/sdist-venv/bin/python" -c 'import zklock; print("  import zklock:", zklock.__version__)'
}
check "PyPI: the sdist builds and installs from source into a fresh venv" sdist_install

# --- npm ------------------------------------------------------------------------------------
npm_tgz="$dist/zklock-$version.tgz"
mapfile -t platform_tgzs < <(ls "$dist"/zklock-*-"$version".tgz 2>/dev/null)
npm_dry() { # npm_dry TARBALL
  (cd "$tmp" && npm publish --dry-run --registry https://registry.npmjs.org/ "$1" 2>&1) | tee "$tmp/npm.log" |
    grep -E 'name:|version:|package size|unpacked size|total files|ERR' | sed 's/^npm notice/ /'
  [ "${PIPESTATUS[0]}" = 0 ]
}
for f in "${platform_tgzs[@]}"; do
  check "npm: npm publish --dry-run $(basename "$f")" npm_dry "$f"
done
check "npm: npm publish --dry-run $(basename "$npm_tgz")" npm_dry "$npm_tgz"
npm_layout() {
  python3 - "$npm_tgz" "$version" "${platform_tgzs[@]}" <<'PY'
import json, sys, tarfile
main, version, platforms = sys.argv[1], sys.argv[2], sys.argv[3:]
bad = 0
with tarfile.open(main) as t:
    names = t.getnames()
    pkg = json.load(t.extractfile("package/package.json"))
    size = sum(m.size for m in t.getmembers())
addons = [n for n in names if n.endswith(".node")]
opt = pkg.get("optionalDependencies", {})
print(f"  zklock: {len(names)} files, {size // 1024} KiB unpacked, addons {addons}, optionalDependencies {opt}")
for k in ["repository", "types", "exports", "engines", "license"]:
    if not pkg.get(k): print(f"  zklock: no {k}"); bad = 1
if addons or size > 512 * 1024 or "scripts" in pkg: bad = 1
for f in platforms:
    with tarfile.open(f) as t:
        p = json.load(t.extractfile("package/package.json"))
        files = t.getnames()
    key = p["name"][len("zklock-"):]
    os_, cpu = key.split("-")[:2]
    libc = {"gnu": ["glibc"], "musl": ["musl"]}.get(key.split("-")[2] if key.count("-") == 2 else "", None)
    ok = (p["version"] == version and opt.get(p["name"]) == version and p.get("os") == [os_] and p.get("cpu") == [cpu]
          and p.get("libc") == libc and "package/zklock.node" in files and "package/LICENSE" in files and p.get("repository"))
    print(f"  {p['name']}: os {p.get('os')}, cpu {p.get('cpu')}, libc {p.get('libc')}, files {[n[len('package/'):] for n in files]}" + ("" if ok else " -- WRONG"))
    bad |= not ok
if len(platforms) != len(opt): print(f"  {len(platforms)} platform tarballs, {len(opt)} optional dependencies"); bad = 1
sys.exit(bad)
PY
}
check "npm: the main package is JavaScript and types with optionalDependencies on each platform package (os, cpu, libc)" npm_layout

echo "release-check: $passed passed, $failed failed"
[ "$failed" = 0 ]
