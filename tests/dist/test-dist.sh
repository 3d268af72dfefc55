#!/usr/bin/env bash
# make test-dist: the clean-room test of what `make dist` wrote into dist/. With cargo, rustc and
# rustup taken off PATH it installs the abi3 wheel into fresh virtualenvs of CPython 3.9 and of
# the newest CPython pyenv has, `npm install`s the npm tarball offline into a fresh project, builds
# the C tour against the unpacked C tarball with pkg-config (shared with an rpath, and static) and
# a C++ program against the Debian package, and runs each face's tour snippet (docs/tour/) against
# a real ZooKeeper. It checks that every artifact carries the workspace's version, that libzklock
# exports zklock_* only under its soname libzklock.so.0, that nothing carries debug info, and the
# sizes against the limits in docs/packaging.md. An artifact that needs a toolchain to install or
# to load fails here; the checkout's own npm package (which builds the addon at install) is
# installed too and must fail, which shows the room really has no toolchain.
#
# The Debian package is unpacked with `dpkg-deb -x` into a temporary root (what `dpkg -i` does
# with its files; the package has no maintainer scripts, only an ldconfig trigger), and
# `apt-get install --simulate` checks that apt would install it here (its dependencies resolve).
# It is not installed into this machine's /usr, which other test runs share.
#
# DIST_TARGETS (as for make dist; default linux-x64-gnu): with linux-arm64-gnu it checks the
# aarch64 wheel, C tarball, .deb and addon as well, and runs them under qemu-aarch64-static: the
# C tour (built with zig cc for aarch64 glibc 2.17) and tour.sh with the tarball's bin/zklock,
# tour.py on Debian's arm64 CPython 3.11 and tour.mjs on Debian's arm64 Node 18, both unpacked by
# scripts/install-deps.sh into /var/cache/zklock/arm64-root (qemu's -L), against the same x86_64
# ZooKeeper on loopback. With linux-x64-musl or linux-arm64-musl: the musllinux wheel (pip's
# tags, then tour.py on a musl CPython that scripts/musl-python.sh builds from Debian's source),
# the C tour built with zig cc for musl and run with Debian's musl loader, the static musl
# bin/zklock running tour.sh (aarch64: all under qemu-aarch64-static), and the Node loader
# choosing zklock-linux-<cpu>-musl.
# Always: the x86_64 artifacts installed and run in a Debian 11 root (glibc 2.31).
#
# Knobs: ZKLOCK_DIST_PYTHONS (interpreters to test, default: pyenv's newest 3.9 and newest 3.x).
# The last line is `dist: N passed, M failed`.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
dist="$root/dist"
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
ctar="libzklock-$version-linux-x86_64"
deb="$dist/zklock_${version}_amd64.deb"
npm_tgz="$dist/zklock-$version.tgz"
# The platform package of a loader key (linux-x64-gnu, win32-x64...): zklock-<key>-<v>.tgz, the
# optional dependency of zklock that carries that platform's addon (issue 55).
npm_platform_tgz() { echo "$dist/zklock-$1-$version.tgz"; }
sdist="$dist/pyzklock-$version.tar.gz"
read -r -a targets <<<"${DIST_TARGETS:-linux-x64-gnu}"
# Windows and macOS (issue 36): tests/dist/test-dist-reach.sh (Windows, run under Wine) and
# tests/dist/test-dist-macos.sh (macOS, static), after the Linux checks; alone when DIST_TARGETS
# names no Linux target.
reach_targets=(); mac_targets=()
for t in "${targets[@]}"; do case "$t" in windows-*) reach_targets+=("$t") ;; macos-*) mac_targets+=("$t") ;; esac; done
# other_platforms: runs the Windows and macOS scripts for the targets named, adding their counts
# to passed and failed.
other_platforms() {
  local script ts out counts
  for script in test-dist-reach.sh test-dist-macos.sh; do
    if [ "$script" = test-dist-reach.sh ]; then ts="${reach_targets[*]}"; else ts="${mac_targets[*]}"; fi
    [ -n "$ts" ] || continue
    out="$(mktemp)"
    PATH="$HOME/.cargo/bin:$PATH" DIST_TARGETS="$ts" "tests/dist/$script" | tee "$out"
    counts="$(tail -n1 "$out")"; rm -f "$out"
    [[ "$counts" =~ ^dist:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]] || counts="dist: 0 passed, 1 failed"
    [[ "$counts" =~ ^dist:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]
    passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
  done
}
case " ${targets[*]} " in
  *" linux-x64-gnu "*) ;;
  *) if [ $((${#reach_targets[@]} + ${#mac_targets[@]})) -eq "${#targets[@]}" ]; then
      passed=0 failed=0
      other_platforms
      echo "dist: $passed passed, $failed failed"
      [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
      exit $?
    fi
    echo "test-dist: DIST_TARGETS must name linux-x64-gnu (or Windows and macOS targets only)"; exit 1 ;;
esac
arm64=""; case " ${targets[*]} " in *" linux-arm64-gnu "*) arm64=1 ;; esac
musl_targets=(); for t in "${targets[@]}"; do case "$t" in *-musl) musl_targets+=("$t") ;; esac; done
# musl_vars TARGET: sets m_arch, m_machine (readelf's name), m_cpu (Node's), m_run (what runs
# its programs here), m_ctar, m_c (where test-dist unpacks it), m_whl, m_site and the size
# limits of its archive and C tarball.
musl_vars() {
  case "$1" in
    linux-x64-musl) m_arch=x86_64 m_machine=X86-64 m_cpu=x64 m_run=() m_limit_a=$LIMIT_A m_limit_ctar=$LIMIT_CTAR ;;
    linux-arm64-musl) m_arch=aarch64 m_machine=AArch64 m_cpu=arm64 m_run=(qemu-aarch64-static) m_limit_a=$LIMIT_A_ARM64 m_limit_ctar=$LIMIT_CTAR_ARM64 ;;
    *) echo "test-dist: unknown musl target $1"; return 1 ;;
  esac
  m_ctar="libzklock-$version-linux-$m_arch-musl" m_c="$tmp/c/libzklock-$version-linux-$m_arch-musl"
  m_whl="$(ls "$dist"/pyzklock-"$version"-cp39-abi3-musllinux*_"$m_arch".whl 2>/dev/null | head -n1)"
  m_site="$tmp/site-$1"
}
ctar_arm64="libzklock-$version-linux-aarch64"
deb_arm64="$dist/zklock_${version}_arm64.deb"
arm64_root=/var/cache/zklock/arm64-root
npm_cpus="$(for t in "${targets[@]}"; do case "$t" in linux-x64-* | windows-x64-* | macos-x64) echo x64 ;; linux-arm64-* | macos-arm64) echo arm64 ;; esac; done | awk '!seen[$0]++' | paste -sd,)"
NPM_OSES="linux$([ "${#reach_targets[@]}" -eq 0 ] || echo ',win32')$([ "${#mac_targets[@]}" -eq 0 ] || echo ',darwin')"; export NPM_OSES

# Size limits in KiB (docs/packaging.md has the measured sizes; these leave about 30 % room for
# growth but not for debug info, which multiplies them several times, nor for a second crypto
# provider: aws-lc-rs, which the previous transport's TLS linked, was about 4 MB of every one).
LIMIT_WHEEL=3072 LIMIT_NPM=3072 LIMIT_ADDON=6656 LIMIT_SO=5120 LIMIT_A=38912 LIMIT_CLI=6656
LIMIT_CTAR=15360 LIMIT_DEB=15360
# Each npm platform package carries one addon: LIMIT_NPM each.
# aarch64: libzklock.a is 25 % larger (36.9 MB against 29.5 MB: aarch64 code, and Debian's
# standard library objects), so are its C tarball and .deb (16.4 MB, 16.3 MB).
LIMIT_A_ARM64=46080 LIMIT_CTAR_ARM64=20480 LIMIT_DEB_ARM64=20480

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
declare -A versions   # where -> the version it reports
declare -A took       # install -> seconds

tmp="$(mktemp -d "${TMPDIR:-/tmp}/zklock-dist.XXXXXX")"
harness_pid=""
old_mounts=()  # the Debian 11 overlay's mounts, innermost first
cleanup() {
  # The Debian 11 overlay first: rm -rf must not walk into a mounted root.
  local mnt
  for mnt in "${old_mounts[@]}"; do umount "$mnt" || umount -l "$mnt"; done
  if [ -n "$harness_pid" ]; then
    exec 3>&- 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$harness_pid" 2>/dev/null || break; sleep 0.1; done
    kill "$harness_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# --- what the test needs besides the artifacts (built before the toolchain leaves PATH) -----
export PATH="$HOME/.cargo/bin:$PATH"
for f in "$deb" "$npm_tgz" "$sdist" "$dist/$ctar.tar.gz" "$dist/SHA256SUMS"; do
  [ -f "$f" ] || { echo "test-dist: $f is missing: run make dist first"; failed=$((failed + 1)); }
done
whl="$(ls "$dist"/pyzklock-"$version"-cp39-abi3-manylinux*_x86_64.whl 2>/dev/null | head -n1)"
[ -n "$whl" ] || { echo "test-dist: no abi3 manylinux wheel in $dist: run make dist first"; failed=$((failed + 1)); }
for t in "${musl_targets[@]}"; do
  musl_vars "$t" || { failed=$((failed + 1)); continue; }
  [ -f "$dist/$m_ctar.tar.gz" ] || { echo "test-dist: $dist/$m_ctar.tar.gz is missing"; failed=$((failed + 1)); }
  [ -n "$m_whl" ] || { echo "test-dist: no musllinux $m_arch wheel in $dist"; failed=$((failed + 1)); }
  [ -f "/lib/ld-musl-$m_arch.so.1" ] || { echo "test-dist: no musl loader for $m_arch: DIST_TARGETS='${targets[*]}' scripts/install-deps.sh"; failed=$((failed + 1)); }
  [ "${#m_run[@]}" -eq 0 ] || command -v "${m_run[0]}" >/dev/null || { echo "test-dist: no ${m_run[0]}: DIST_TARGETS='${targets[*]}' scripts/install-deps.sh"; failed=$((failed + 1)); }
done
if [ -n "$arm64" ]; then
  for f in "$deb_arm64" "$dist/$ctar_arm64.tar.gz"; do
    [ -f "$f" ] || { echo "test-dist: $f is missing: run make dist DIST_TARGETS='${targets[*]}' first"; failed=$((failed + 1)); }
  done
  whl_arm64="$(ls "$dist"/pyzklock-"$version"-cp39-abi3-manylinux*_aarch64.whl 2>/dev/null | head -n1)"
  [ -n "$whl_arm64" ] || { echo "test-dist: no aarch64 wheel in $dist"; failed=$((failed + 1)); }
  [ -x /usr/bin/qemu-aarch64-static ] && [ -x "$arm64_root/usr/bin/python3.11" ] && [ -x "$arm64_root/usr/bin/node" ] ||
    { echo "test-dist: no qemu-aarch64-static or $arm64_root: DIST_TARGETS='${targets[*]}' scripts/install-deps.sh"; failed=$((failed + 1)); }
fi
[ "$failed" -eq 0 ] || finish

sums() (
  cd "$dist" && sha256sum --quiet -c SHA256SUMS &&
    diff <(ls | grep -v '^SHA256SUMS$') <(awk '{print $2}' SHA256SUMS | sort)
)
check "SHA256SUMS covers and matches every artifact" sums

# manylinux2014: every shipped binary needs glibc 2.17 at most (scripts/dist.sh links with zig
# against glibc 2.17). The newest GLIBC_x.y symbol version each one references is what the
# dynamic loader demands of the system; above 2.17 the artifact would not load on RHEL/CentOS 7,
# Amazon Linux 2, Debian 10 or Ubuntu 18.04..20.04, whatever its tag or Depends say.
GLIBC_MAX=2.17
glibc_floor() {
  local w="$tmp/glibc" bad=0 f v
  local k
  for k in "${targets[@]}"; do
    case "$k" in linux-*-gnu) mkdir -p "$w/npm/$k" && tar -C "$w/npm/$k" -xzf "$(npm_platform_tgz "$k")" || return 1 ;; esac
  done
  mkdir -p "$w/whl" "$w/npm" "$w/c" "$w/deb" &&
    python3 -m zipfile -e "$whl" "$w/whl" &&
    tar -C "$w/c" -xzf "$dist/$ctar.tar.gz" && dpkg-deb -x "$deb" "$w/deb" || return 1
  local bins=("$w"/whl/zklock/_zklock.abi3.so "$w"/npm/*-gnu/package/zklock.node
    "$w/c/$ctar/lib/libzklock.so.$version" "$w/c/$ctar/bin/zklock"
    "$w/deb/usr/lib/libzklock.so.$version" "$w/deb/usr/bin/zklock")
  if [ -n "$arm64" ]; then
    mkdir -p "$w/whl-arm64" "$w/deb-arm64" && python3 -m zipfile -e "$whl_arm64" "$w/whl-arm64" &&
      tar -C "$w/c" -xzf "$dist/$ctar_arm64.tar.gz" && dpkg-deb -x "$deb_arm64" "$w/deb-arm64" || return 1
    bins+=("$w"/whl-arm64/zklock/_zklock.abi3.so "$w/c/$ctar_arm64/lib/libzklock.so.$version"
      "$w/c/$ctar_arm64/bin/zklock" "$w/deb-arm64/usr/lib/libzklock.so.$version" "$w/deb-arm64/usr/bin/zklock")
    # Each file of the right machine (a wrong one would fail only where it runs).
    local t m
    for t in "${targets[@]}"; do
      case "$t" in linux-x64-*) m='X86-64' ;; linux-arm64-*) m='AArch64' ;; esac
      readelf -h "$w/npm/$t/package/zklock.node" | grep -q "Machine:.*$m" || { echo "  zklock-$t is not $m"; bad=1; }
    done
    for f in "$w"/whl-arm64/zklock/_zklock.abi3.so "$w/c/$ctar_arm64/lib/libzklock.so.$version" "$w/deb-arm64/usr/bin/zklock"; do
      readelf -h "$f" | grep -q 'Machine: *AArch64' || { echo "  ${f#"$w"/} is not AArch64"; bad=1; }
    done
  fi
  for f in "${bins[@]}"; do
    [ -f "$f" ] || { echo "  missing: $f"; bad=1; continue; }
    v="$(objdump -T "$f" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1)"
    [ -n "$v" ] || { echo "  no GLIBC_ versions in $f"; bad=1; continue; }
    printf '  %-60s GLIBC_%s\n' "${f#"$w"/}" "$v"
    [ "$(printf '%s\n%s\n' "$v" "$GLIBC_MAX" | sort -V | tail -n1)" = "$GLIBC_MAX" ] ||
      { echo "  ${f#"$w"/} needs glibc $v, above $GLIBC_MAX"; bad=1; }
  done
  # An archive has no symbol versions: the program that links libzklock.a binds them against
  # its own glibc. Its C objects (ring's) were compiled against zig's glibc 2.17 headers.
  echo "  lib/libzklock.a: no symbol versions (bound when a program links it)"
  # The wheel's tag must claim exactly what the module needs, and auditwheel must agree.
  case "$(basename "$whl")" in *-manylinux2014_x86_64.manylinux_2_17_x86_64.whl) ;;
    *) echo "  the wheel is not tagged manylinux2014 / manylinux_2_17: $(basename "$whl")"; bad=1 ;; esac
  if [ -n "$arm64" ]; then
    case "$(basename "$whl_arm64")" in *-manylinux2014_aarch64.manylinux_2_17_aarch64.whl) ;;
      *) echo "  the aarch64 wheel is not tagged manylinux2014 / manylinux_2_17: $(basename "$whl_arm64")"; bad=1 ;; esac
  fi
  [ "$bad" -eq 0 ]
}
check "manylinux2014: every shipped binary needs GLIBC_$GLIBC_MAX at most (objdump -T)" glibc_floor
auditwheel="${CARGO_TARGET_DIR:-$root/target}/dist-venv/bin/auditwheel"
# zig (PyPI ziglang, in make dist's venv) builds the C tour for aarch64: the C compiler an
# aarch64 machine would have.
zig_python="${CARGO_TARGET_DIR:-$root/target}/dist-venv/bin/python3"
auditwheel_agrees() {
  [ -x "$auditwheel" ] || { echo "no $auditwheel: make dist installs it"; return 1; }
  "$auditwheel" show "$whl" | tee "$tmp/auditwheel.out" | sed 's/^/  /'
  tr '\n' ' ' <"$tmp/auditwheel.out" | grep -q 'consistent with *the following platform tag: *"manylinux_2_17_x86_64"' || return 1
  # (the musl wheel: auditwheel cannot judge it here, see scripts/dist.sh; musl_linkage checks it)
  [ -n "$arm64" ] || return 0
  "$auditwheel" show "$whl_arm64" | tee "$tmp/auditwheel-arm64.out" | sed 's/^/  /'
  tr '\n' ' ' <"$tmp/auditwheel-arm64.out" | grep -q 'consistent with *the following platform tag: *"manylinux_2_17_aarch64"'
}
# musl: no glibc symbol versions; the libraries need musl's libc.so and nothing else, the
# command line is static.
musl_linkage() { # musl_linkage TARGET
  musl_vars "$1" || return 1
  local w="$tmp/musl-$1" f bad=0
  mkdir -p "$w/whl" "$w/npm" && python3 -m zipfile -e "$m_whl" "$w/whl" && tar -C "$w" -xzf "$dist/$m_ctar.tar.gz" &&
    tar -C "$w/npm" -xzf "$(npm_platform_tgz "$1")" || return 1
  for f in "$w"/whl/zklock/_zklock.abi3.so "$w/npm/package/zklock.node" "$w/$m_ctar/lib/libzklock.so.$version"; do
    local needed; needed="$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ')"
    printf '  %-60s NEEDED %s\n' "${f#"$w"/}" "$needed"
    [ "$needed" = libc.so ] && ! objdump -T "$f" | grep -q GLIBC_ && readelf -h "$f" | grep -q "Machine:.*$m_machine" ||
      { echo "  ${f#"$w"/} is not a $m_machine musl library"; bad=1; }
  done
  f="$w/$m_ctar/bin/zklock"
  if readelf -d "$f" | grep -q NEEDED || readelf -l "$f" | grep -q INTERP; then echo "  bin/zklock is not static"; bad=1; else echo "  $m_ctar/bin/zklock: static"; fi
  readelf -h "$f" | grep -q "Machine:.*$m_machine" || { echo "  $m_ctar/bin/zklock is not $m_machine"; bad=1; }
  case "$(basename "$m_whl")" in *-musllinux_1_2_"$m_arch".whl) ;; *) echo "  the musl wheel is not tagged musllinux_1_2_$m_arch: $(basename "$m_whl")"; bad=1 ;; esac
  [ "$bad" -eq 0 ]
}
for t in "${musl_targets[@]}"; do
  check "$t: the wheel's module, the addon and libzklock.so need musl's libc.so only; bin/zklock is static" musl_linkage "$t"
done
check "auditwheel show: the wheel is consistent with manylinux_2_17_x86_64 (and the aarch64 one with manylinux_2_17_aarch64), as its tag says" auditwheel_agrees

# The sdist is for platforms without a wheel: it must hold a complete, locked workspace.
sdist_complete() (
  tar -C "$tmp" -xzf "$sdist" && cd "$tmp/pyzklock-$version" &&
    cargo metadata --offline --format-version 1 >/dev/null &&
    grep -q "^Version: $version\$" PKG-INFO && [ -f pyproject.toml ] && [ -f core/src/lib.rs ]
)
check "the sdist holds a complete workspace (cargo metadata --offline)" sdist_complete

# The checkout's npm package, which builds the addon at install: the control below.
(cd bindings-node && npm pack --silent --pack-destination "$tmp" >/dev/null 2>&1) &&
  mv "$tmp/zklock-"*.tgz "$tmp/source-package.tgz"

start_harness() {
  cargo build -q -p zklock-testkit --bin zk-harness || return 1
  cp "${CARGO_TARGET_DIR:-$root/target}/debug/zk-harness" "$tmp/zk-harness"
  mkfifo "$tmp/ctl"
  "$tmp/zk-harness" <"$tmp/ctl" >"$tmp/harness.out" 2>"$tmp/harness.err" &
  harness_pid=$!
  exec 3>"$tmp/ctl"
  for _ in $(seq 1 1200); do
    grep -q '^servers=' "$tmp/harness.out" 2>/dev/null && break
    kill -0 "$harness_pid" 2>/dev/null || break
    sleep 0.1
  done
  ZKLOCK_SERVERS="$(sed -n 's/^servers=//p' "$tmp/harness.out" | head -n1)"
  export ZKLOCK_SERVERS
  [ -n "$ZKLOCK_SERVERS" ] || { echo "ZooKeeper did not start (a failure, not a skip):"; cat "$tmp/harness.err"; return 1; }
  echo "ZooKeeper at $ZKLOCK_SERVERS"
}
check "start ZooKeeper (zk-harness)" start_harness
[ -n "${ZKLOCK_SERVERS:-}" ] || finish

# Python 3.9 and the newest: pyenv's, unless ZKLOCK_DIST_PYTHONS names them.
if [ -z "${ZKLOCK_DIST_PYTHONS:-}" ] && command -v pyenv >/dev/null; then
  pyroot="$(pyenv root)"
  newest_of() { ls -d "$pyroot"/versions/$1 2>/dev/null | grep -E '/[0-9]+\.[0-9]+\.[0-9]+$' | sort -V | tail -n1; }
  p39="$(newest_of '3.9.*')"; pnew="$(newest_of '3.*')"
  [ -n "$p39" ] && [ -n "$pnew" ] && ZKLOCK_DIST_PYTHONS="$p39/bin/python3 $pnew/bin/python3"
fi
read -r -a pythons <<<"${ZKLOCK_DIST_PYTHONS:-}"
if [ "${#pythons[@]}" -lt 2 ]; then
  echo "test-dist: needs CPython 3.9 and a newer one (pyenv, or ZKLOCK_DIST_PYTHONS)"; failed=$((failed + 1))
fi

# --- the clean room -------------------------------------------------------------------------
clean_path=""
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] || continue
  if [ -e "$d/cargo" ] || [ -e "$d/rustc" ] || [ -e "$d/rustup" ]; then continue; fi
  clean_path="${clean_path:+$clean_path:}$d"
done
export PATH="$clean_path"
unset CARGO RUSTC RUSTUP_TOOLCHAIN CARGO_TARGET_DIR
no_toolchain() {
  ! command -v cargo && ! command -v rustc && ! command -v rustup && echo "PATH=$PATH"
}
check "the clean room: no cargo, rustc or rustup on PATH" no_toolchain

timed() { # timed KEY COMMAND...: runs it, keeps its time in took[KEY]
  local key="$1" start=$EPOCHREALTIME; shift
  "$@" || return 1
  took[$key]="$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')"
}

# Python: the wheel only (--only-binary, --no-index: pip may neither build nor download).
for py in "${pythons[@]}"; do
  pyver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  venv="$tmp/venv-$pyver"
  python_face() {
    "$py" -m venv "$venv" &&
      timed "pip install (Python $pyver)" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        --no-index --no-cache-dir --only-binary=:all: "$whl" &&
      versions["zklock.__version__ (Python $pyver)"]="$(cd "$tmp" && "$venv/bin/python" -c 'import zklock; print(zklock.__version__)')" &&
      (cd "$tmp" && timeout 120 "$venv/bin/python" "$root/docs/tour/tour.py") | tee "$tmp/py.out" &&
      grep -q '^python holds the lock, fencing token [0-9]' "$tmp/py.out"
  }
  check "Python $pyver: pip install the wheel into a fresh virtualenv, run docs/tour/tour.py" python_face
done

# Node: the tarballs (zklock and its linux-x64-gnu platform package), offline, with an empty npm
# cache; install scripts are allowed to run (the packages must have none: if one had one that
# builds, it would fail here). The install by name from a registry is tests/dist/test-registries.sh.
# The other Linux targets' platform packages npm refuses on this machine (EBADPLATFORM: their
# cpu or libc): they are unpacked where npm puts them on their platform, for the qemu and musl
# checks below.
app="$tmp/node-app"
node_face() {
  mkdir -p "$app" && echo '{ "name": "app", "private": true }' >"$app/package.json" &&
    timed "npm install" bash -c "cd '$app' && npm install --offline --no-audit --no-fund --cache '$tmp/npm-cache' '$npm_tgz' '$(npm_platform_tgz linux-x64-gnu)' >/dev/null" &&
    [ -f "$app/node_modules/zklock-linux-x64-gnu/zklock.node" ] || return 1
  local k
  for k in "${targets[@]}"; do
    case "$k" in linux-x64-gnu | windows-* | macos-*) ;; *)
      mkdir -p "$app/node_modules/zklock-$k" && tar -C "$app/node_modules/zklock-$k" --strip-components=1 -xzf "$(npm_platform_tgz "$k")" || return 1 ;;
    esac
  done
  node -e 'const s = require(process.argv[1]).scripts || {}; for (const k of ["preinstall", "install", "postinstall"]) if (s[k]) { console.error("install script:", k); process.exit(1) }' \
      "$app/node_modules/zklock-linux-x64-gnu/package.json" &&
    node -e 'const s = require(process.argv[1]).scripts || {}; for (const k of ["preinstall", "install", "postinstall"]) if (s[k]) { console.error("install script:", k); process.exit(1) }' \
      "$app/node_modules/zklock/package.json" &&
    versions["Node package version"]="$(cd "$app" && node -p "require('zklock/package.json').version")" &&
    cp docs/tour/tour.mjs "$app/" && (cd "$app" && timeout 120 node tour.mjs) | tee "$tmp/node.out" &&
    grep -q '^node holds the lock, fencing token [0-9]' "$tmp/node.out"
}
check "Node: npm install the tarballs (zklock, zklock-linux-x64-gnu) offline into a fresh project (no install script), run docs/tour/tour.mjs" node_face
# Another platform: the loader says what to do instead of failing to find a file.
native_missing() {
  echo "Object.defineProperty(process, 'arch', { value: 'riscv64' })" >"$app/fake-riscv64.cjs"
  local out t
  out="$(cd "$app" && node -r ./fake-riscv64.cjs -e "
    try { require('zklock'); console.log('loaded') } catch (e) { console.log(e.code); console.log(e.message) }")"
  echo "$out"
  [ "$(head -n1 <<<"$out")" = ZKLOCK_NATIVE_MISSING ] && grep -q 'linux-riscv64-gnu' <<<"$out" &&
    grep -q 'only\.' <<<"$out" && grep -q 'npm install <checkout>/bindings-node' <<<"$out" || return 1
  for t in "${targets[@]}"; do
    t="${t/windows-x64-gnu/win32-x64}" t="${t/macos-/darwin-}" # the loader's keys
    grep -q "$t" <<<"$out" || { echo "the message does not name $t"; return 1; }
  done
}
check "Node on linux-riscv64-gnu (faked): ZKLOCK_NATIVE_MISSING names the platform, those carried, and what to do" native_missing
control() {
  local p="$tmp/control-app"
  mkdir -p "$p" && echo '{ "name": "control", "private": true }' >"$p/package.json" &&
    ! (cd "$p" && npm install --offline --no-audit --no-fund --cache "$tmp/npm-cache" "$tmp/source-package.tgz" >"$tmp/control.log" 2>&1) &&
    grep -q 'cannot run cargo' "$tmp/control.log" && echo "the checkout's package failed to install: $(grep -m1 'cannot run cargo' "$tmp/control.log")"
}
check "control: the checkout's npm package (it builds with cargo at install) fails to install here" control

# C: the tarball unpacked anywhere; pkg-config finds it through the .pc's own location.
c="$tmp/c/$ctar"
c_face() {
  mkdir -p "$tmp/c" && tar -C "$tmp/c" -xzf "$dist/$ctar.tar.gz" || return 1
  export PKG_CONFIG_PATH="$c/lib/pkgconfig"
  local libdir; libdir="$(pkg-config --variable=libdir zklock)" || return 1
  versions["zklock.pc (tarball)"]="$(pkg-config --modversion zklock)"
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Werror docs/tour/tour.c $(pkg-config --cflags --libs zklock) -Wl,-rpath,"$libdir" \
    -o "$tmp/tour-c" &&
    ldd "$tmp/tour-c" | grep -q "libzklock.so.0 => $libdir/libzklock.so.0" &&
    timeout 120 "$tmp/tour-c" | tee "$tmp/c.out" && grep -q '^c holds the lock, fencing token [0-9]' "$tmp/c.out" || return 1
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Werror docs/tour/tour.c $(pkg-config --cflags zklock) -Wl,-Bstatic $(pkg-config --static --libs zklock) \
    -o "$tmp/tour-c-static" && ! ldd "$tmp/tour-c-static" | grep libzklock &&
    timeout 120 "$tmp/tour-c-static" | grep -q '^c holds the lock, fencing token [0-9]' || return 1
  printf '#include <stdio.h>\n#include <zklock.h>\nint main(void) { puts(zklock_version()); return 0; }\n' >"$tmp/version.c"
  # shellcheck disable=SC2046
  cc "$tmp/version.c" $(pkg-config --cflags --libs zklock) -Wl,-rpath,"$libdir" -o "$tmp/version" &&
    versions["zklock_version() (tarball)"]="$("$tmp/version")" || return 1
  # The valgrind suppressions its README names (issue 33).
  cmp -s bindings-c/valgrind.supp "$c/share/zklock/valgrind.supp" || { echo "no share/zklock/valgrind.supp in $ctar"; return 1; }
}
check "C: pkg-config against the unpacked tarball; docs/tour/tour.c linked shared (rpath) and static (-Wl,-Bstatic), run; valgrind.supp shipped" c_face
cli_face() {
  versions["zklock --version (tarball)"]="$("$c/bin/zklock" --version | sed 's/^zklock //')" &&
    (PATH="$c/bin:$PATH" timeout 120 bash -c 'set -e; source docs/tour/tour.sh') | tee "$tmp/cli.out" &&
    grep -q '^cli holds the lock, fencing token [0-9]' "$tmp/cli.out"
}
check "command line: the tarball's bin/zklock runs docs/tour/tour.sh" cli_face
abi() {
  local so="$c/lib/libzklock.so.$version" bad
  readelf -d "$so" | grep -q 'SONAME.*\[libzklock.so.0\]' || { echo "soname is not libzklock.so.0"; return 1; }
  [ "$(readlink "$c/lib/libzklock.so.0")" = "libzklock.so.$version" ] && [ "$(readlink "$c/lib/libzklock.so")" = libzklock.so.0 ] || return 1
  bad="$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^zklock_')"
  [ -z "$bad" ] || { echo "exported besides zklock_*: $bad"; return 1; }
  echo "libzklock.so.0 exports $(nm -D --defined-only "$so" | grep -c ' zklock_') zklock_* symbols, nothing else"
  # The Python and Node modules export their entry point only.
  local py_so; py_so="$(ls "$tmp"/venv-*/lib/python*/site-packages/zklock/_zklock.abi3.so | head -n1)"
  [ "$(nm -D --defined-only "$py_so" | awk '{print $3}')" = PyInit__zklock ] &&
    [ "$(nm -D --defined-only "$app/node_modules/zklock-linux-x64-gnu/zklock.node" | awk '{print $3}')" = napi_register_module_v1 ]
}
check "libzklock.so.$version: soname libzklock.so.0, links .so.0 and .so, exports zklock_* only; the Python and Node modules their entry point only" abi

# Debian package: apt resolves it; its files unpacked into a root of their own.
debroot="$tmp/debroot"
deb_face() {
  [ "$(dpkg-deb -f "$deb" Package)" = zklock ] || return 1
  versions["Debian package version"]="$(dpkg-deb -f "$deb" Version)"
  apt-get install --simulate "$deb" 2>&1 | tee "$tmp/apt.out" | tail -n2
  grep -q '^Inst zklock ' "$tmp/apt.out" || return 1
  timed "dpkg-deb -x (.deb)" dpkg-deb -x "$deb" "$debroot" || return 1
  # The .deb carries the tarball's files under /usr (only the README moves to share/doc).
  diff <(cd "$c" && find lib include bin | sort) <(cd "$debroot/usr" && find lib include bin | sort) || return 1
  local pc=(env PKG_CONFIG_SYSROOT_DIR="$debroot" PKG_CONFIG_LIBDIR="$debroot/usr/lib/pkgconfig" PKG_CONFIG_PATH=)
  versions["zklock.pc (.deb)"]="$("${pc[@]}" pkg-config --modversion zklock)"
  # shellcheck disable=SC2046
  c++ -std=c++17 -Wall -Wextra -Werror tests/dist/tour.cpp $("${pc[@]}" pkg-config --cflags --libs zklock) -o "$tmp/tour-cpp" &&
    LD_LIBRARY_PATH="$debroot/usr/lib" timeout 120 "$tmp/tour-cpp" | tee "$tmp/cpp.out" &&
    grep -q "^c++ holds the lock, fencing token [0-9]*, libzklock $version\$" "$tmp/cpp.out" &&
    versions["zklock --version (.deb)"]="$("$debroot/usr/bin/zklock" --version | sed 's/^zklock //')"
}
check "Debian package: apt-get install --simulate resolves it; tests/dist/tour.cpp built with its pkg-config, run" deb_face

# --- x86_64 on an older userland: Debian 11 (glibc 2.31) ------------------------------------
# The oldest userland this machine can assemble (scripts/old-userland.sh; make test starts it in
# the background): each artifact installed the way a Debian 11 user would and its tour run,
# inside an overlay of the cached root (so every run starts from the same root and leaves it
# as it was), chrooted, against the same ZooKeeper on loopback.
old_root=/var/cache/zklock/bullseye-root
old="$tmp/old/merged"
in_old() { # in_old SCRIPT: runs SCRIPT with Debian 11's sh in /tmp/zklock of the root, clean env
  chroot "$old" /usr/bin/env -i PATH=/opt/node/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 \
    ZKLOCK_SERVERS="$ZKLOCK_SERVERS" /bin/sh -ec "cd /tmp/zklock; $1"
}
old_setup() {
  "$root/scripts/old-userland.sh" || return 1
  mkdir -p "$tmp/old/upper" "$tmp/old/work" "$old" &&
    mount -t overlay overlay -o "lowerdir=$old_root,upperdir=$tmp/old/upper,workdir=$tmp/old/work" "$old" &&
    old_mounts=("$old") && mount -t proc proc "$old/proc" && old_mounts=("$old/proc" "$old") || return 1
  mkdir -p "$old/tmp/zklock/app" &&
    cp "$whl" "$deb" docs/tour/tour.py docs/tour/tour.mjs docs/tour/tour.c docs/tour/tour.sh "$old/tmp/zklock/" &&
    cp docs/tour/tour.mjs "$old/tmp/zklock/app/" || return 1
  # npm only copies the package's files (it has no install script): this machine's npm puts it
  # into the root's project, where Node 20 loads it.
  echo '{ "name": "app", "private": true }' >"$old/tmp/zklock/app/package.json" &&
    (cd "$old/tmp/zklock/app" && npm install --offline --no-audit --no-fund --cache "$tmp/npm-cache" "$npm_tgz" "$(npm_platform_tgz linux-x64-gnu)" >/dev/null) || return 1
  in_old 'echo "$(. /etc/os-release; echo "$PRETTY_NAME"), $(ldd --version | head -n1), $(python3 --version), Node $(node --version)"' |
    tee "$tmp/old.out" && grep -q 'Debian GNU/Linux 11.*GLIBC 2\.31' "$tmp/old.out"
}
check "Debian 11 root (glibc 2.31, scripts/old-userland.sh): overlay mounted, the artifacts copied in" old_setup
if [ "${#old_mounts[@]}" -eq 2 ]; then
  old_python() {
    # Debian 11's pip 20.3 decides from the wheel's tags that it fits (manylinux_2_17 <= 2.31).
    versions["zklock.__version__ (Debian 11, CPython 3.9)"]="$(in_old "python3 -m venv venv && venv/bin/pip install -q \
      --disable-pip-version-check --no-index --only-binary=:all: ./$(basename "$whl") >&2 &&
      venv/bin/python -c 'import zklock; print(zklock.__version__)'")" &&
      in_old 'venv/bin/python tour.py' | tee "$tmp/old-py.out" && grep -q '^python holds the lock, fencing token [0-9]' "$tmp/old-py.out"
  }
  check "Debian 11: its pip 20.3 installs the wheel into a CPython 3.9 virtualenv; docs/tour/tour.py runs" old_python
  old_node() {
    in_old 'cd app && node tour.mjs' | tee "$tmp/old-node.out" && grep -q '^node holds the lock, fencing token [0-9]' "$tmp/old-node.out"
  }
  check "Debian 11: Node.js 20 (the official build) loads the npm package's linux-x64-gnu addon; docs/tour/tour.mjs runs" old_node
  old_deb() {
    # dpkg -i, for real: its Depends (libc6 >= 2.17) must hold on Debian 11. Then a C user's
    # build with Debian 11's gcc 10 and pkg-config, and the command line's tour.
    in_old "dpkg -i ./$(basename "$deb") >/dev/null && dpkg -s zklock | grep '^Status: install ok installed'" &&
      in_old 'gcc -std=c11 -Wall -Werror tour.c $(pkg-config --cflags --libs zklock) -o tour-c && ./tour-c' | tee "$tmp/old-c.out" &&
      grep -q '^c holds the lock, fencing token [0-9]' "$tmp/old-c.out" &&
      in_old 'bash -ec ". ./tour.sh"' | tee "$tmp/old-cli.out" && grep -q '^cli holds the lock, fencing token [0-9]' "$tmp/old-cli.out" &&
      versions["zklock --version (.deb on Debian 11)"]="$(in_old 'zklock --version' | sed 's/^zklock //')"
  }
  check "Debian 11: dpkg -i the .deb; docs/tour/tour.c built with its gcc 10 and pkg-config, and docs/tour/tour.sh, run" old_deb
fi

# zig_c_tour TAG DIR ZIG_TARGET LOADER KEY [RUNNER...]: another target's C user, with zig cc as
# the C compiler such a machine has: docs/tour/tour.c built for ZIG_TARGET against the tarball
# unpacked at DIR, linked shared (it must need libzklock.so.0 and ask for the loader LOADER) and
# static (no libzklock.so), each run by RUNNER (qemu, or nothing); zklock_version() goes into
# versions[KEY].
zig_c_tour() {
  local tag="$1" dir="$2" target="$3" loader="$4" key="$5"; shift 5
  local run=("$@") pc=(env PKG_CONFIG_PATH="$dir/lib/pkgconfig") zigcc=("$zig_python" -m ziglang cc -target "$target")
  local libdir; libdir="$("${pc[@]}" pkg-config --variable=libdir zklock)" || return 1
  # shellcheck disable=SC2046
  "${zigcc[@]}" -std=c11 -Wall -Werror docs/tour/tour.c $("${pc[@]}" pkg-config --cflags --libs zklock) \
    -Wl,-rpath,"$libdir" -o "$tmp/tour-c-$tag" &&
    readelf -d "$tmp/tour-c-$tag" | grep -q 'NEEDED.*libzklock.so.0' && readelf -l "$tmp/tour-c-$tag" | grep -q "$loader" &&
    timeout 300 "${run[@]}" "$tmp/tour-c-$tag" | tee "$tmp/c-$tag.out" &&
    grep -q '^c holds the lock, fencing token [0-9]' "$tmp/c-$tag.out" || return 1
  # shellcheck disable=SC2046
  "${zigcc[@]}" -std=c11 -Wall -Werror docs/tour/tour.c $("${pc[@]}" pkg-config --cflags zklock) -Wl,-Bstatic \
    $("${pc[@]}" pkg-config --static --libs zklock) -o "$tmp/tour-c-$tag-static" &&
    ! readelf -d "$tmp/tour-c-$tag-static" | grep libzklock &&
    timeout 300 "${run[@]}" "$tmp/tour-c-$tag-static" | grep -q '^c holds the lock, fencing token [0-9]' || return 1
  # shellcheck disable=SC2046
  "${zigcc[@]}" "$tmp/version.c" $("${pc[@]}" pkg-config --cflags --libs zklock) -Wl,-rpath,"$libdir" -o "$tmp/version-$tag" &&
    versions["$key"]="$("${run[@]}" "$tmp/version-$tag")"
}

# --- aarch64: every artifact run under qemu-aarch64-static ------------------------------------
# qemu's -L puts the arm64 root (Debian's arm64 libc, CPython 3.11 and Node 18, unpacked by
# install-deps.sh) under the absolute paths the emulated programs open; everything else (the
# artifacts, the tours) is this machine's. ZooKeeper is the x86_64 one above, on loopback.
if [ -n "$arm64" ]; then
  qemu=(qemu-aarch64-static -L "$arm64_root")
  c64="$tmp/c/$ctar_arm64"
  arm64_cli() {
    mkdir -p "$tmp/c" "$tmp/arm64-bin" && tar -C "$tmp/c" -xzf "$dist/$ctar_arm64.tar.gz" || return 1
    printf '#!/bin/sh\nexec qemu-aarch64-static -L %s %s "$@"\n' "$arm64_root" "$c64/bin/zklock" >"$tmp/arm64-bin/zklock"
    chmod +x "$tmp/arm64-bin/zklock"
    versions["zklock --version (aarch64 tarball, qemu)"]="$("$tmp/arm64-bin/zklock" --version | sed 's/^zklock //')" &&
      (PATH="$tmp/arm64-bin:$PATH" timeout 300 bash -c 'set -e; source docs/tour/tour.sh') | tee "$tmp/cli-arm64.out" &&
      grep -q '^cli holds the lock, fencing token [0-9]' "$tmp/cli-arm64.out"
  }
  check "aarch64 command line: the tarball's bin/zklock runs docs/tour/tour.sh under qemu" arm64_cli
  arm64_c() { zig_c_tour arm64 "$c64" aarch64-linux-gnu.2.17 ld-linux-aarch64.so.1 "zklock_version() (aarch64 tarball, qemu)" "${qemu[@]}"; }
  check "aarch64 C: docs/tour/tour.c built with zig cc (aarch64 glibc 2.17) against the tarball, shared and static, run under qemu" arm64_c
  arm64_python() {
    # pip decides whether the wheel fits an aarch64 CPython 3.11 on glibc 2.17 (its tags), and
    # installs it; the arm64 CPython then imports it from there.
    local site="$tmp/site-arm64" py="$arm64_root/usr/bin/python3.11"
    timed "pip install (aarch64)" "${pythons[0]}" -m pip install -q --disable-pip-version-check --no-index \
      --no-cache-dir --only-binary=:all: --platform manylinux_2_17_aarch64 --implementation cp \
      --python-version 3.11 --abi abi3 --target "$site" "$whl_arm64" || return 1
    versions["zklock.__version__ (aarch64 CPython 3.11, qemu)"]="$(cd "$tmp" && PYTHONPATH="$site" "${qemu[@]}" "$py" -c \
      'import platform, zklock; assert platform.machine() == "aarch64"; print(zklock.__version__)')" &&
      (cd "$tmp" && PYTHONPATH="$site" timeout 300 "${qemu[@]}" "$py" "$root/docs/tour/tour.py") | tee "$tmp/py-arm64.out" &&
      grep -q '^python holds the lock, fencing token [0-9]' "$tmp/py-arm64.out"
  }
  check "aarch64 Python: pip takes the wheel for manylinux_2_17_aarch64 CPython 3.11; docs/tour/tour.py on Debian's arm64 CPython under qemu" arm64_python
  arm64_node() {
    # The same project as above; Node on arm64 loads zklock-linux-arm64-gnu (unpacked there).
    local node64=("${qemu[@]}" "$arm64_root/usr/bin/node")
    versions["Node package version (aarch64 Node 18, qemu)"]="$(cd "$app" && "${node64[@]}" -e "
      if (process.arch !== 'arm64') throw new Error(process.arch)
      require('zklock'); console.log(require('zklock/package.json').version)")" &&
      (cd "$app" && timeout 300 "${node64[@]}" tour.mjs) | tee "$tmp/node-arm64.out" &&
      grep -q '^node holds the lock, fencing token [0-9]' "$tmp/node-arm64.out"
  }
  check "aarch64 Node: the installed npm package's linux-arm64-gnu addon runs docs/tour/tour.mjs on Debian's arm64 Node 18 under qemu" arm64_node
  arm64_deb() {
    [ "$(dpkg-deb -f "$deb_arm64" Architecture)" = arm64 ] && [ "$(dpkg-deb -f "$deb_arm64" Depends)" = "libc6 (>= 2.17)" ] || return 1
    versions["Debian package version (arm64)"]="$(dpkg-deb -f "$deb_arm64" Version)"
    apt-get install --simulate "$deb_arm64" 2>&1 | tee "$tmp/apt-arm64.out" | tail -n2
    grep -q '^Inst zklock:arm64 ' "$tmp/apt-arm64.out" || return 1
    dpkg-deb -x "$deb_arm64" "$tmp/debroot-arm64" &&
      diff <(cd "$c64" && find lib include bin | sort) <(cd "$tmp/debroot-arm64/usr" && find lib include bin | sort) &&
      cmp "$c64/lib/libzklock.so.$version" "$tmp/debroot-arm64/usr/lib/libzklock.so.$version" &&
      "${qemu[@]}" "$tmp/debroot-arm64/usr/bin/zklock" --version
  }
  check "aarch64 Debian package: Architecture arm64, Depends libc6 (>= 2.17), apt-get install --simulate resolves it (zklock:arm64), the tarball's files, bin/zklock runs under qemu" arm64_deb
fi

# --- musl (x86_64, aarch64) ------------------------------------------------------------------
# The C library, the command line and the wheel run (the wheel on a musl CPython built from
# Debian's source by scripts/musl-python.sh); aarch64 under qemu-aarch64-static, which finds
# Debian's musl:arm64 loader at /lib/ld-musl-aarch64.so.1. No musl Node here: the addon is
# checked by the loader's choice.
musl_cli() { # musl_cli TARGET
  musl_vars "$1" || return 1
  local bin="$tmp/bin-$1"
  mkdir -p "$tmp/c" "$bin" && tar -C "$tmp/c" -xzf "$dist/$m_ctar.tar.gz" || return 1
  printf '#!/bin/sh\nexec %s %s "$@"\n' "${m_run[*]}" "$m_c/bin/zklock" >"$bin/zklock" && chmod +x "$bin/zklock" || return 1
  cmp -s "$root/LICENSE" "$m_c/LICENSE" || { echo "no LICENSE in $m_ctar"; return 1; }
  versions["zklock --version ($1 tarball)"]="$("$bin/zklock" --version | sed 's/^zklock //')" &&
    (PATH="$bin:$PATH" timeout 300 bash -c 'set -e; source docs/tour/tour.sh') | tee "$tmp/cli-$1.out" &&
    grep -q '^cli holds the lock, fencing token [0-9]' "$tmp/cli-$1.out"
}
musl_c() { # musl_c TARGET
  musl_vars "$1" || return 1
  zig_c_tour "$1" "$m_c" "$m_arch-linux-musl" "ld-musl-$m_arch.so.1" "zklock_version() ($1 tarball)" "${m_run[@]}"
}
musl_python() { # musl_python TARGET
  # pip (this machine's, told the platform) decides the wheel fits musllinux_1_2 and installs it;
  # a musl CPython (scripts/musl-python.sh: Debian's CPython source built for musl) imports it
  # and runs the tour.
  musl_vars "$1" || return 1
  local py="/var/cache/zklock/musl-python-$m_arch"
  "${pythons[0]}" -m pip install -q --disable-pip-version-check --no-index --no-cache-dir --only-binary=:all: \
    --platform "musllinux_1_2_$m_arch" --implementation cp --python-version 3.11 --abi abi3 --target "$m_site" "$m_whl" &&
    [ -f "$m_site/zklock/_zklock.abi3.so" ] && echo "pip takes $(basename "$m_whl") for CPython 3.11 on musllinux_1_2_$m_arch" &&
    "$root/scripts/musl-python.sh" "$m_arch" "$zig_python" || return 1
  local run=(env PYTHONHOME="$py" PYTHONPATH="$m_site" "${m_run[@]}" "$py/bin/python3.11")
  versions["zklock.__version__ ($1, musl CPython 3.11)"]="$(cd "$tmp" && "${run[@]}" -c \
    "import platform, zklock; assert platform.machine() == '$m_arch' and platform.libc_ver()[0] != 'glibc', platform.libc_ver(); print(zklock.__version__)")" &&
    (cd "$tmp" && timeout 300 "${run[@]}" "$root/docs/tour/tour.py") | tee "$tmp/py-$1.out" &&
    grep -q '^python holds the lock, fencing token [0-9]' "$tmp/py-$1.out"
}
musl_node() { # musl_node TARGET
  # Node's report names no glibc under musl: the loader then takes zklock-linux-<cpu>-musl,
  # which this glibc Node cannot load (its libc.so is musl's; aarch64: and another machine):
  # the error names that file.
  musl_vars "$1" || return 1
  printf '%s\n' "const r = process.report.getReport; process.report.getReport = () => { const x = r(); delete x.header.glibcVersionRuntime; return x }" \
    "Object.defineProperty(process, 'arch', { value: '$m_cpu' })" >"$app/fake-$1.cjs"
  local out
  out="$(cd "$app" && node -r "./fake-$1.cjs" -e "try { require('zklock'); console.log('loaded') } catch (e) { console.log(e.code); console.log(e.message) }")"
  echo "$out" | cut -c1-240
  [ "$(head -n1 <<<"$out")" = ZKLOCK_NATIVE_MISSING ] && grep -q "zklock-$1/zklock.node" <<<"$out"
}
for t in "${musl_targets[@]}"; do
  check "$t command line: the tarball's static bin/zklock runs docs/tour/tour.sh" musl_cli "$t"
  check "$t C: docs/tour/tour.c built with zig cc against the tarball, shared (musl's loader) and static, run" musl_c "$t"
  check "$t Python: pip takes the wheel for musllinux_1_2 CPython 3.11; docs/tour/tour.py on a musl CPython (scripts/musl-python.sh)" musl_python "$t"
  check "$t Node: the loader takes zklock-$t/zklock.node when Node runs on musl (faked; no musl Node here)" musl_node "$t"
done

# --- versions, debug info, sizes ------------------------------------------------------------
versions_line_up() {
  versions["npm package in the checkout (bindings-node/package.json)"]="$(node -p "require('$root/bindings-node/package.json').version")"
  versions["wheel file name"]="$(basename "$whl" | cut -d- -f2)"
  local k bad=0
  for k in "${!versions[@]}"; do
    printf '  %-58s %s\n' "$k" "${versions[$k]}"
    [ "${versions[$k]}" = "$version" ] || bad=1
  done
  # two Pythons, the Node package and the checkout's, the wheel, 3 from the tarball, 3 from the .deb
  # with linux-arm64-gnu: also Python and Node under qemu, 2 from its tarball, 1 from its .deb
  # Debian 11: Python and the .deb's command line; each musl target: its CLI, C library, Python
  local want=13; [ -z "$arm64" ] || want=$((want + 5)); want=$((want + 3 * ${#musl_targets[@]}))
  [ "${#versions[@]}" -eq "$want" ] && [ "$bad" -eq 0 ] && echo "all say $version (Cargo.toml [workspace.package])"
}
check "versions line up: Python (both), Node, zklock_version(), zklock --version, zklock.pc, .deb" versions_line_up

no_debug_info() {
  local f bad=0
  local so_py; so_py="$(ls "$tmp"/venv-*/lib/python*/site-packages/zklock/_zklock.abi3.so 2>/dev/null | head -n1)"
  for f in "$so_py" "$app/node_modules/zklock-linux-x64-gnu/zklock.node" \
    "$c/lib/libzklock.so.$version" "$c/lib/libzklock.a" "$c/bin/zklock" ${arm64:+"$app/node_modules/zklock-linux-arm64-gnu/zklock.node"} \
    ${arm64:+"$tmp/site-arm64/zklock/_zklock.abi3.so" "$c64/lib/libzklock.so.$version" "$c64/lib/libzklock.a" "$c64/bin/zklock"} \
    $(for t in "${musl_targets[@]}"; do musl_vars "$t" && echo "$m_site/zklock/_zklock.abi3.so $app/node_modules/zklock-$t/zklock.node $m_c/lib/libzklock.so.$version $m_c/lib/libzklock.a $m_c/bin/zklock"; done); do
    # Stripped: no .debug_* sections, and no symbol table (an archive's objects keep theirs:
    # the linker needs them).
    [ -f "$f" ] || { echo "missing: $f"; bad=1; continue; }
    local pattern=' \.(debug_[a-z]*|symtab) '
    [[ "$f" == *.a ]] && pattern=' \.debug_[a-z]* '
    if readelf -S -W "$f" | grep -qE "$pattern"; then echo "debug info or symbol table in $f"; bad=1; fi
  done
  [ "$bad" -eq 0 ]
}
check "no debug info (nor symbol tables) in the Python module, the Node addon, libzklock and bin/zklock" no_debug_info

sizes() {
  local bad=0
  size_ok() { # size_ok WHAT FILE LIMIT_KIB
    [ -f "$2" ] || { echo "  missing: $2"; bad=1; return; }
    local k; k=$(( ($(stat -L -c %s "$2") + 1023) / 1024 ))
    printf '  %-34s %6d KiB  (limit %d KiB)\n' "$1" "$k" "$3"
    [ "$k" -le "$3" ] || { echo "  $1 is over its limit"; bad=1; }
  }
  size_ok "wheel" "$whl" "$LIMIT_WHEEL"
  # The main package is JavaScript and types only (issue 55): 100 KiB, the addons in their own.
  size_ok "npm tarball zklock (no addon)" "$npm_tgz" 100
  local k
  for k in "${targets[@]}"; do
    k="${k/windows-x64-gnu/win32-x64}" k="${k/macos-/darwin-}"
    size_ok "npm tarball zklock-$k" "$(npm_platform_tgz "$k")" "$LIMIT_NPM"
  done
  size_ok "Node addon (unpacked)" "$app/node_modules/zklock-linux-x64-gnu/zklock.node" "$LIMIT_ADDON"
  size_ok "libzklock.so" "$c/lib/libzklock.so.$version" "$LIMIT_SO"
  size_ok "libzklock.a" "$c/lib/libzklock.a" "$LIMIT_A"
  size_ok "bin/zklock" "$c/bin/zklock" "$LIMIT_CLI"
  size_ok "C tarball" "$dist/$ctar.tar.gz" "$LIMIT_CTAR"
  size_ok "Debian package" "$deb" "$LIMIT_DEB"
  if [ -n "$arm64" ]; then
    local a="$tmp/size-arm64"
    mkdir -p "$a" && tar -C "$a" -xzf "$dist/$ctar_arm64.tar.gz" && tar -C "$a" -xzf "$(npm_platform_tgz linux-arm64-gnu)" || bad=1
    size_ok "wheel (aarch64)" "$whl_arm64" "$LIMIT_WHEEL"
    size_ok "Node addon (aarch64, unpacked)" "$a/package/zklock.node" "$LIMIT_ADDON"
    size_ok "libzklock.so (aarch64)" "$a/$ctar_arm64/lib/libzklock.so.$version" "$LIMIT_SO"
    size_ok "libzklock.a (aarch64)" "$a/$ctar_arm64/lib/libzklock.a" "$LIMIT_A_ARM64"
    size_ok "bin/zklock (aarch64)" "$a/$ctar_arm64/bin/zklock" "$LIMIT_CLI"
    size_ok "C tarball (aarch64)" "$dist/$ctar_arm64.tar.gz" "$LIMIT_CTAR_ARM64"
    size_ok "Debian package (arm64)" "$deb_arm64" "$LIMIT_DEB_ARM64"
  fi
  for t in "${musl_targets[@]}"; do
    musl_vars "$t" || { bad=1; continue; }
    size_ok "wheel ($t)" "$m_whl" "$LIMIT_WHEEL"
    size_ok "Node addon ($t, unpacked)" "$app/node_modules/zklock-$t/zklock.node" "$LIMIT_ADDON"
    size_ok "libzklock.so ($t)" "$m_c/lib/libzklock.so.$version" "$LIMIT_SO"
    size_ok "libzklock.a ($t)" "$m_c/lib/libzklock.a" "$m_limit_a"
    size_ok "bin/zklock ($t, static)" "$m_c/bin/zklock" "$LIMIT_CLI"
    size_ok "C tarball ($t)" "$dist/$m_ctar.tar.gz" "$m_limit_ctar"
  done
  [ "$bad" -eq 0 ]
}
check "artifact sizes within their limits (docs/packaging.md)" sizes

# Issue 27, item 13: every artifact carries the licence package.json and the Python metadata
# name (Apache-2.0), byte for byte the repository's LICENSE: the wheel in its .dist-info (and
# License-File in METADATA), the sdist and the C tarball at their top, the npm tarball in
# package/, the .deb as /usr/share/doc/zklock/copyright in Debian's machine-readable format.
# Each npm platform package says where its addon runs (os, cpu, and libc on Linux); the main
# package, JavaScript only, names them as optional dependencies (issue 55).
licence() {
  local extra=()
  [ -z "$arm64" ] || extra=("$dist/$ctar_arm64.tar.gz" "$ctar_arm64" "$deb_arm64")
  ZKLOCK_NPM_PLATFORMS="$(for t in "${targets[@]}"; do t="${t/windows-x64-gnu/win32-x64}"; npm_platform_tgz "${t/macos-/darwin-}"; done | paste -sd,)" \
  python3 - "$root/LICENSE" "$whl" "$sdist" "$npm_tgz" "$dist/$ctar.tar.gz" "$deb" "$version" "$ctar" "$npm_cpus" "${extra[@]}" <<'PY'
import io, json, os, re, subprocess, sys, tarfile, zipfile
licence_path, whl, sdist, npm, ctar_gz, deb, version, ctar, cpus = sys.argv[1:10]
# The other targets' C tarballs and .debs: the same LICENSE, the same copyright.
for extra_ctar_gz, extra_ctar, extra_deb in zip(*[iter(sys.argv[10:])] * 3):
    with tarfile.open(extra_ctar_gz) as t:
        data = t.extractfile(f"{extra_ctar}/LICENSE").read()
    print(f"  C tarball {extra_ctar}/LICENSE: {'the LICENSE' if data == open(licence_path, 'rb').read() else 'DIFFERENT'}")
    if data != open(licence_path, "rb").read():
        sys.exit(1)
    fs = subprocess.run(["dpkg-deb", "--fsys-tarfile", extra_deb], check=True, capture_output=True).stdout
    other = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(fs)) as a, tarfile.open(fileobj=io.BytesIO(other)) as b:
        same_copyright = a.extractfile("./usr/share/doc/zklock/copyright").read() == b.extractfile("./usr/share/doc/zklock/copyright").read()
    print(f"  {extra_deb.split('/')[-1]} copyright: {'as the amd64 one' if same_copyright else 'DIFFERENT'}")
    if not same_copyright:
        sys.exit(1)
text = open(licence_path, "rb").read()
bad = []
def same(where, data, expected=None):
    ok = data == (text if expected is None else expected)
    print(f"  {where}: {'the LICENSE' if ok else 'DIFFERENT or missing'}")
    if not ok:
        bad.append(where)
if not re.search(rb"Apache License\s+Version 2\.0, January 2004", text) or b"END OF TERMS AND CONDITIONS" not in text:
    bad.append("LICENSE is not the full Apache-2.0 text")
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if re.match(r"[^/]+\.dist-info/(licenses/)?LICENSE$", n)]
    same(f"wheel {names[0] if names else '<no .dist-info LICENSE>'}", z.read(names[0]) if names else b"")
    meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    if "License-File: LICENSE" not in meta:
        bad.append("wheel METADATA names no License-File")
def member(tar_path, name):
    with tarfile.open(tar_path) as t:
        try:
            return t.extractfile(name).read()
        except KeyError:
            return b""
same(f"sdist pyzklock-{version}/LICENSE", member(sdist, f"pyzklock-{version}/LICENSE"))
same("npm package/LICENSE", member(npm, "package/LICENSE"))
same(f"C tarball {ctar}/LICENSE", member(ctar_gz, f"{ctar}/LICENSE"))
pkg = json.loads(member(npm, "package/package.json"))
platforms = os.environ["ZKLOCK_NPM_PLATFORMS"].split(",")
print(f"  npm zklock package.json: license {pkg.get('license')}, optionalDependencies {pkg.get('optionalDependencies')}")
if pkg.get("license") != "Apache-2.0" or len(pkg.get("optionalDependencies", {})) != len(platforms):
    bad.append("npm zklock package.json: license/optionalDependencies")
seen_os, seen_cpu = [], []
for f in platforms:
    p = json.loads(member(f, "package/package.json"))
    key = p.get("name", "")[len("zklock-"):]
    same(f"npm {p.get('name')} package/LICENSE", member(f, "package/LICENSE"))
    libc = {"gnu": ["glibc"], "musl": ["musl"]}.get(key.split("-")[2] if key.count("-") == 2 else "")
    print(f"  npm {p.get('name')}: os {p.get('os')}, cpu {p.get('cpu')}, libc {p.get('libc')}")
    if p.get("license") != "Apache-2.0" or p.get("os") != [key.split("-")[0]] or p.get("cpu") != [key.split("-")[1]] or p.get("libc") != libc \
            or pkg.get("optionalDependencies", {}).get(p.get("name")) != version:
        bad.append(f"npm {p.get('name')} package.json: license/os/cpu/libc/version")
    seen_os += [o for o in p.get("os", []) if o not in seen_os]
    seen_cpu += [c for c in p.get("cpu", []) if c not in seen_cpu]
if seen_os != os.environ["NPM_OSES"].split(",") or sorted(seen_cpu) != sorted(cpus.split(",")):
    bad.append(f"npm platform packages cover os {seen_os}, cpu {seen_cpu}")
fs = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], check=True, capture_output=True).stdout
with tarfile.open(fileobj=io.BytesIO(fs)) as t:
    try:
        copyright = t.extractfile("./usr/share/doc/zklock/copyright").read().decode()
    except KeyError:
        copyright = ""
# copyright-format 1.0: paragraphs split by empty lines; the standalone License paragraph's
# continuation lines are the text, one space in, "." for an empty line.
paragraphs = copyright.split("\n\n")
head = paragraphs[0].splitlines() if copyright else [""]
files = next((p for p in paragraphs if p.startswith("Files: ")), "")
standalone = next((p for p in paragraphs if p.startswith("License: Apache-2.0\n")), "")
body = [l[1:] for l in standalone.splitlines()[1:]]
body_text = "\n".join("" if l == "." else l for l in body) + "\n"
print(f"  .deb copyright: {head[0]!r}; Files paragraph {'with' if 'License: Apache-2.0' in files else 'WITHOUT'} License: Apache-2.0")
if head[0] != "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/":
    bad.append(".deb copyright: no machine-readable Format line")
if "Files: *" not in files or "License: Apache-2.0" not in files:
    bad.append(".deb copyright: no Files: * paragraph under Apache-2.0")
if not all(l.startswith(" ") for l in standalone.splitlines()[1:]):
    bad.append(".deb copyright: a licence line is not indented")
# (the LICENSE's leading empty line is not written: a paragraph's text starts with the text)
same(".deb /usr/share/doc/zklock/copyright (licence text)", body_text.encode() if body else b"", text.lstrip(b"\n"))
for b in bad:
    print(f"  {b}")
sys.exit(1 if bad else 0)
PY
}
check "every artifact carries the Apache-2.0 LICENSE (.deb: copyright, machine-readable); npm platform packages' os/cpu/libc" licence

other_platforms
echo "install times (s):"
for k in "${!took[@]}"; do printf '  %-34s %s\n' "$k" "${took[$k]}"; done
finish
