#!/usr/bin/env bash
# make dist: the artifacts a user installs without a Rust toolchain, all from the workspace's one
# version (Cargo.toml [workspace.package] version), written into dist/:
#   pyzklock-<v>-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
#                                                 Python >= 3.9 (abi3), checked with auditwheel
#   pyzklock-<v>.tar.gz                             Python sdist (builds from source with cargo)
#   zklock-<v>.tgz                                npm package: JavaScript and types, optionalDependencies
#   zklock-linux-x64-gnu-<v>.tgz                  npm platform package: zklock.node (os, cpu, libc)
#   libzklock-<v>-linux-x86_64.tar.gz             C: lib/ include/ lib/pkgconfig/ bin/zklock
#   zklock_<v>_amd64.deb                          the same files under /usr
#   SHA256SUMS
# Every binary is linked for glibc 2.17 (manylinux2014: RHEL/CentOS 7, Amazon Linux 2, Ubuntu
# 18.04 and newer) although this machine has 2.36: zig (PyPI `ziglang`) is the C compiler and
# linker and links against its glibc 2.17 stubs (`cargo zigbuild --target
# x86_64-unknown-linux-gnu.2.17`, `maturin build --zig --compatibility manylinux2014`);
# tests/dist/test-dist.sh checks the GLIBC_ symbol versions of every binary.
# The code is built once per artifact with the `dist` cargo profile (release without debug info,
# symbols stripped) into target/x86_64-unknown-linux-gnu/dist: the C library and the Node addon
# in one cargo run, the command line in a second (its tokio features differ), the wheel by
# maturin (pyo3 unifies some dependencies' features differently, so the core is compiled a third
# time). maturin, auditwheel, ziglang and cargo-zigbuild come from PyPI into target/dist-venv.
# Prints each artifact's size and each step's time.
#
# DIST_TARGETS (default linux-x64-gnu): the platforms to build for, in the npm platform packages' names (zklock-<key>).
#   linux-x64-gnu     x86_64, glibc >= 2.17: the files above
#   linux-arm64-gnu   aarch64, glibc >= 2.17: the wheel ..._manylinux2014_aarch64..., the C tarball
#                     libzklock-<v>-linux-aarch64.tar.gz, zklock_<v>_arm64.deb, and the addon in
#                     the npm package zklock-linux-arm64-gnu. Its Rust standard library
#                     is rustup's if the toolchain has the target, else Debian's (rustc-web and
#                     libstd-rust-web-dev:arm64, which scripts/install-deps.sh installs).
#   linux-x64-musl    x86_64, musl >= 1.2: the wheel ..._musllinux_1_2_x86_64.whl, the C tarball
#                     libzklock-<v>-linux-x86_64-musl.tar.gz (a static bin/zklock), no .deb, and
#                     zklock-linux-x64-musl. Its standard library is rustup's if the toolchain
#                     has the target, else compiled from Debian's rust-web-src by Debian's
#                     rustc-web (cargo -Zbuild-std, RUSTC_BOOTSTRAP=1).
#   linux-arm64-musl  aarch64, musl >= 1.2: as linux-x64-musl, for aarch64 (..._musllinux_1_2_aarch64.whl,
#                     libzklock-<v>-linux-aarch64-musl.tar.gz, zklock-linux-arm64-musl).
#   windows-x64-gnu   Windows 10+ x86_64, the mingw (UCRT) ABI (issue 36): the wheel
#                     ..._win_amd64.whl, the C zip libzklock-<v>-windows-x86_64.zip (bin/zklock.dll,
#                     bin/zklock.exe, lib/libzklock.dll.a and lib/zklock.lib: the DLL's import
#                     libraries for mingw and MSVC, lib/zklock.def, lib/libzklock.a for mingw only),
#                     and zklock-win32-x64 (the Node loader's key). Its standard library is
#                     compiled from Debian's rust-web-src as for musl; zig links against its own
#                     mingw-w64 UCRT import libraries; rustc asks binutils-mingw-w64's dlltool for
#                     the raw-dylib imports (windows-link, pyo3's python3.dll).
#   macos-arm64       macOS 11+ on Apple silicon (issue 36): the wheel ..._macosx_11_0_arm64.whl,
#                     the C tarball libzklock-<v>-macos-arm64.tar.gz (lib/libzklock.0.dylib, its
#                     install name @rpath/libzklock.0.dylib, bin/zklock, lib/libzklock.a), and
#                     zklock-darwin-arm64. Standard library from rust-web-src as for musl;
#                     zig links against its own libSystem.tbd (no Apple SDK), for the macOS
#                     version MACOSX_DEPLOYMENT_TARGET names (zig takes it in its target triple,
#                     aarch64-macos.11.0; it ignores -mmacosx-version-min). Every Mach-O file is
#                     stripped, then signed ad hoc by rcodesign (crates.io apple-codesign, built
#                     into target/tools): arm64 macOS runs no unsigned code, and a strip after
#                     zig's own signature breaks it (scripts/dist-macos.sh).
#   macos-x64         macOS 10.12+ on x86_64 (Rust's own minimum): ..._macosx_10_12_x86_64.whl,
#                     libzklock-<v>-macos-x86_64.tar.gz, zklock-darwin-x64; as macos-arm64.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
read -r -a targets <<<"${DIST_TARGETS:-linux-x64-gnu}"
stage="$target_dir/dist-stage"        # the trees the packages are made of
venv="$target_dir/dist-venv"
dist="$root/dist"
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
[ -n "$version" ] || { echo "dist: no version in Cargo.toml [workspace.package]" >&2; exit 1; }

# target_vars PLATFORM: sets triple, zig_target (zig's glibc version suffix: manylinux2014), arch
# (the wheel's and C tarball's name for it), deb_arch, npm_cpu, strip_tool, rustc (the compiler
# whose sysroot has the target's standard library), out (cargo's output for the `dist` profile
# and that target) and ctar.
target_vars() {
  macos_min=""
  case "$1" in
    linux-x64-gnu) triple=x86_64-unknown-linux-gnu arch=x86_64 deb_arch=amd64 npm_cpu=x64 strip_tool=strip ;;
    linux-arm64-gnu) triple=aarch64-unknown-linux-gnu arch=aarch64 deb_arch=arm64 npm_cpu=arm64 strip_tool=aarch64-linux-gnu-strip ;;
    linux-x64-musl) triple=x86_64-unknown-linux-musl arch=x86_64 deb_arch="" npm_cpu=x64 strip_tool=strip ;;
    linux-arm64-musl) triple=aarch64-unknown-linux-musl arch=aarch64 deb_arch="" npm_cpu=arm64 strip_tool=aarch64-linux-gnu-strip ;;
    windows-x64-gnu) triple=x86_64-pc-windows-gnu arch=x86_64 deb_arch="" npm_cpu=x64 strip_tool=x86_64-w64-mingw32-strip ;;
    macos-arm64) triple=aarch64-apple-darwin arch=arm64 deb_arch="" npm_cpu=arm64 strip_tool=llvm-strip-22 macos_min=11.0 ;;
    macos-x64) triple=x86_64-apple-darwin arch=x86_64 deb_arch="" npm_cpu=x64 strip_tool=llvm-strip-22 macos_min=10.12 ;;
    *) echo "dist: unknown target $1 (DIST_TARGETS: linux-x64-gnu linux-arm64-gnu linux-x64-musl linux-arm64-musl windows-x64-gnu macos-arm64 macos-x64)" >&2; return 1 ;;
  esac
  # npm_key: the platform package zklock-<key> the Node loader looks for (lib/native.js: platform-arch, plus
  # -gnu or -musl on Linux); npm_os: the package.json `os` it adds.
  case "$1" in
    linux-*) npm_key="$1" npm_os=linux ;;
    windows-*) npm_key="win32-$npm_cpu" npm_os=win32 ;;
    macos-*) npm_key="darwin-$npm_cpu" npm_os=darwin ;;
  esac
  out="$target_dir/$triple/dist"
  # lib_env, cli_env: what the cargo runs for the libraries and the command line need.
  lib_env=(env) cli_env=(env)
  case "$1" in
    windows-*)
      # zig brings mingw-w64's start files and import libraries (UCRT), so not rustc's
      # self-contained ones. The stubs (link_stubs) answer two -l's that would otherwise fail:
      # -lssp_nonshared -lssp, which the target asks for (gcc's stack protector libraries, which
      # zig does not have and Rust code does not call: the links resolve without them), and
      # napi's -lnode (the addon has dyn-symbols: it imports nothing from node.exe). Same flags
      # for both runs: the standard library is built once.
      stubs="$target_dir/reach/link-stubs"
      zig_target="$triple" ctar="libzklock-$version-windows-$arch" compat=""
      lib_env+=(RUSTFLAGS="-C link-self-contained=no -L native=$stubs" LIBNODE_PATH="$stubs")
      cli_env+=(RUSTFLAGS="-C link-self-contained=no -L native=$stubs" LIBNODE_PATH="$stubs") ;;
    macos-*)
      # The oldest macOS it runs on: rustc writes it into its objects, cargo-zigbuild into zig's
      # target (aarch64-macos.11.0-none), maturin into the wheel's tag.
      zig_target="$triple" ctar="libzklock-$version-macos-$arch" compat=""
      # zig ignores the exported-symbols list rustc gives it, so every symbol of default
      # visibility is exported: hidden by default, only the #[no_mangle] extern "C" ones (the
      # zklock_* functions, PyInit__zklock, napi_register_module_v1) stay exported. Same flags
      # for both runs: the standard library is built once.
      lib_env+=(MACOSX_DEPLOYMENT_TARGET="$macos_min" RUSTFLAGS="-Z default-visibility=hidden")
      cli_env+=(MACOSX_DEPLOYMENT_TARGET="$macos_min" RUSTFLAGS="-Z default-visibility=hidden") ;;
    *-gnu)
      zig_target="$triple.2.17" ctar="libzklock-$version-linux-$arch" compat=manylinux2014 ;;
    *-musl)
      # musl 1.2 (zig's); no .deb (Debian is glibc). The libraries link musl's libc.so
      # dynamically (-crt-static: a cdylib cannot be static), the command line statically (runs
      # on any Linux). zig brings musl's start files, so not rustc's self-contained ones.
      zig_target="$triple" ctar="libzklock-$version-linux-$arch-musl" compat=musllinux_1_2
      lib_env+=(RUSTFLAGS="-C link-self-contained=no -C target-feature=-crt-static")
      cli_env+=(RUSTFLAGS="-C link-self-contained=no") ;;
  esac
  # The first pass only checks the names: what a target needs is installed after it.
  [ -z "${names_only:-}" ] || return 0
  build_std=()
  rustc=rustc
  if [ -d "$(rustc --print sysroot)/lib/rustlib/$triple/lib" ]; then
    :
  elif [[ "$1" == *-musl || "$1" == windows-* || "$1" == macos-* ]]; then
    # No musl (nor Windows) std in Debian: Debian's rustc-web builds it from rust-web-src (its own version's
    # source) with cargo's -Zbuild-std, which RUSTC_BOOTSTRAP=1 allows on a stable toolchain.
    rustc=/usr/lib/rust-web/bin/rustc
    [ -x "$rustc" ] && [ -d /usr/lib/rustlib/src/rust/library ] || {
      echo "dist: no Rust standard library for $triple: rustup target add $triple, or DIST_TARGETS='${targets[*]}' scripts/install-deps.sh (Debian's rust-web-src)" >&2
      return 1
    }
    build_std=(-Z build-std=std,panic_abort)
    lib_env+=(RUSTC_BOOTSTRAP=1) cli_env+=(RUSTC_BOOTSTRAP=1)
  else
    # Debian's rustc-web has its sysroot in /usr; install-deps.sh diverts it out of /usr/bin.
    rustc=/usr/lib/rust-web/bin/rustc
    [ -x "$rustc" ] && [ -d "/usr/lib/rustlib/$triple/lib" ] || {
      echo "dist: no Rust standard library for $triple: rustup target add $triple, or DIST_TARGETS='${targets[*]}' scripts/install-deps.sh (Debian's)" >&2
      return 1
    }
  fi
  [ "$rustc" = rustc ] || { lib_env+=(RUSTC="$rustc"); cli_env+=(RUSTC="$rustc"); }
}
# Every name first (a typo fails at once), then what the targets need is installed (Debian's
# rust-web-src for a standard library built here, zig, mingw's tools: install-deps.sh, as
# `make test` installs its own needs), then each target's settings are read for real.
for t in "${targets[@]}"; do names_only=1 target_vars "$t"; done
if [ "${targets[*]}" != linux-x64-gnu ]; then
  DIST_TARGETS="${targets[*]}" scripts/install-deps.sh
  for t in "${targets[@]}"; do target_vars "$t"; done
fi

timed() { # timed WHAT COMMAND...: runs it and prints how long it took
  local what="$1" start=$SECONDS; shift
  echo "== dist: $what"
  "$@"
  echo "   ($what: $((SECONDS - start)) s)"
}

rm -rf "$dist" "$stage"
mkdir -p "$dist" "$stage"

tools() {
  for t in node npm dpkg-deb strip objdump python3; do
    command -v "$t" >/dev/null || { echo "dist: $t is missing" >&2; return 1; }
  done
  # zig 0.15.2: the version cargo-zigbuild 0.24 is tested with; its Python package runs it.
  local want="maturin>=1.9,<2 auditwheel>=6 ziglang==0.15.2 cargo-zigbuild==0.24.1"
  if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$want" ] || [ ! -x "$venv/bin/maturin" ] ||
    [ ! -x "$venv/bin/auditwheel" ] || [ ! -x "$venv/bin/cargo-zigbuild" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q --disable-pip-version-check $want
    echo "$want" >"$venv/.requirements"
  fi
  echo "   zig $("$venv/bin/python3" -m ziglang version), $("$venv/bin/cargo-zigbuild" --version), $("$venv/bin/maturin" --version)"
  case " ${targets[*]} " in *" macos-"*) rcodesign_ready ;; esac
}
# macOS: rcodesign, the Mach-O files' stripping and signing, the C tarball.
# shellcheck source=scripts/dist-macos.sh
. "$root/scripts/dist-macos.sh"
timed "maturin, auditwheel, ziglang and cargo-zigbuild (PyPI) in $venv" tools
# cargo-zigbuild and maturin --zig find zig as `python3 -m ziglang` of the venv's python3.
export PATH="$venv/bin:$PATH"

# link_stubs: empty static libraries for the -l's a windows-gnu link asks for but needs nothing
# from (see target_vars), and the empty libnode.dll that napi's build script insists on finding
# in LIBNODE_PATH before it asks for -lnode (libnode.a answers that -l, importing nothing).
link_stubs() {
  mkdir -p "$stubs"
  local l
  for l in ssp ssp_nonshared node; do [ -f "$stubs/lib$l.a" ] || printf '!<arch>\n' >"$stubs/lib$l.a"; done
  [ -f "$stubs/libnode.dll" ] || : >"$stubs/libnode.dll"
}

build() { # build PLATFORM: the C library and Node addon, then the command line
  target_vars "$1"
  [[ "$1" != windows-* ]] || link_stubs
  timed "${lib_env[*]:1} cargo zigbuild --profile dist -p zklock-c -p zklock-node --target $zig_target ${build_std[*]}" \
    "${lib_env[@]}" cargo-zigbuild zigbuild -q --locked --profile dist -p zklock-c -p zklock-node --target "$zig_target" "${build_std[@]}"
  timed "${cli_env[*]:1} cargo zigbuild --profile dist -p zklock-cli --target $zig_target ${build_std[*]}" \
    "${cli_env[@]}" cargo-zigbuild zigbuild -q --locked --profile dist -p zklock-cli --target "$zig_target" "${build_std[@]}"
}

# --- Python -------------------------------------------------------------------------------
python_wheel() {
  [[ "$cur" != windows-* ]] || { python_wheel_windows; return; }
  [[ "$cur" != macos-* ]] || { python_wheel_macos; return; }
  # manylinux2014 (glibc 2.17) by zig; auditwheel (the PyPA's checker) must agree that the
  # wheel's manylinux tag is true of what it contains.
  "${lib_env[@]}" "$venv/bin/maturin" build --quiet --locked --profile dist --zig --compatibility "$compat" \
    --target "$triple" "${build_std[@]}" -m bindings-python/Cargo.toml -o "$dist"
  local whl
  whl="$(ls "$dist"/pyzklock-"$version"-cp39-abi3-"${compat%%[_0-9]*}"*_"$arch".whl)"
  local tag="${whl##*-abi3-}"; tag="${tag%.whl}"
  case "$tag" in manylinux* | musllinux*) ;; *) echo "dist: the wheel is not a manylinux/musllinux wheel: $whl" >&2; return 1 ;; esac
  if [[ "$tag" == musllinux* ]]; then
    # auditwheel cannot judge it: zig links musl's libc by the name libc.so (which musl's loader
    # takes as itself), the musllinux policy knows it as libc.musl-x86_64.so.1, and on this glibc
    # machine auditwheel resolves libc.so to glibc's linker script (ELFError). Instead: the
    # module needs libc.so and nothing else.
    local needed
    needed="$(python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("zklock/_zklock.abi3.so"))' \
      "$whl" >"$stage/musl-module.so" && readelf -d "$stage/musl-module.so" |
      sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ')"
    echo "   $tag: the module needs $needed (auditwheel show cannot check a musl wheel here)"
    [ "$needed" = libc.so ]
    return
  fi
  local show
  show="$("$venv/bin/auditwheel" show "$whl")"
  echo "$show" | sed 's/^/   auditwheel: /'
  # auditwheel says: 'is consistent with the following platform tag: "manylinux_2_17_x86_64"'.
  local allowed
  allowed="$(echo "$show" | tr '\n' ' ' | sed -n 's/.*consistent with *the following platform tag: *"\([^"]*\)".*/\1/p')"
  [ -n "$allowed" ] || { echo "dist: auditwheel gave no platform tag" >&2; return 1; }
  python3 - "$tag" "$allowed" "$arch" <<'PY'
import re, sys
tag, allowed, arch = sys.argv[1], sys.argv[2], sys.argv[3]
def glibc(t):  # (or musl's version, for a musllinux tag)
    m = (re.match(rf"(?:many|musl)linux_(\d+)_(\d+)_{arch}$", t) or re.match(rf"manylinux(2014)_{arch}$", t))
    if not m:
        sys.exit(f"dist: unknown tag {t}")
    return (2, 17) if m.group(1) == "2014" else (int(m.group(1)), int(m.group(2)))
# The wheel may claim a newer glibc than auditwheel's minimum, never an older one.
ok = all(glibc(t) >= glibc(allowed) for t in tag.split("."))
print(f"   wheel tag {tag}; auditwheel: the library needs {allowed} or newer: {'ok' if ok else 'NOT TRUE'}")
sys.exit(0 if ok else 1)
PY
}
python_wheel_windows() {
  # No target Python needed: abi3, and pyo3 links python3.dll by raw-dylib (no import library).
  # Not `maturin --zig`: for a mixed project it hands zig a .def exporting the module's dotted
  # name (PyInit_zklock._zklock), which nothing defines. zig links all the same, as cargo's
  # linker and C compiler (cargo-zigbuild's `zig cc`), and bindings-python/build.rs gives it the
  # .def that exports PyInit__zklock. No auditwheel for Windows; make test-dist checks the
  # module's imports and exports (objdump -p).
  local zigcc="$target_dir/reach/zigcc-$triple.sh"
  mkdir -p "$(dirname "$zigcc")"
  printf '#!/bin/sh\nexec "%s" zig cc -- -g -fno-sanitize=all -target %s "$@"\n' \
    "$venv/bin/cargo-zigbuild" x86_64-windows-gnu >"$zigcc"
  chmod +x "$zigcc"
  "${lib_env[@]}" CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER="$zigcc" CC_x86_64_pc_windows_gnu="$zigcc" \
    AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar "$venv/bin/maturin" build --quiet --locked --profile dist \
    --target "$triple" "${build_std[@]}" -m bindings-python/Cargo.toml -o "$dist"
  local whl
  whl="$(ls "$dist"/pyzklock-"$version"-cp39-abi3-win_amd64.whl)" &&
    echo "   $(basename "$whl")"
}
timed "Python sdist (maturin sdist)" "$venv/bin/maturin" sdist -m bindings-python/Cargo.toml -o "$dist"

# --- Node -----------------------------------------------------------------------------------
node_package() {
  # napi-rs' layout (issue 55): the main package `zklock` is JavaScript and types only, with an
  # optional dependency on one package per platform, `zklock-<key>` (key as the loader's:
  # linux-x64-gnu, linux-arm64-musl, win32-x64, darwin-arm64...), which carries that platform's
  # addon and says where it runs (`os`, `cpu`, and `libc` on Linux). npm installs the one that
  # fits and skips the others; installing a platform package elsewhere is refused (EBADPLATFORM).
  local pkg="$stage/npm" t keys=()
  for t in "${targets[@]}"; do
    target_vars "$t"
    local pp="$stage/npm-$npm_key" libc=""
    mkdir -p "$pp"
    if [[ "$t" == windows-* ]]; then
      cp "$out/zklock_node.dll" "$pp/zklock.node"
    elif [[ "$t" == macos-* ]]; then
      macho_sign "$out/libzklock_node.dylib" "$pp/zklock.node" zklock.node
    else
      cp "$out/libzklock_node.so" "$pp/zklock.node"
    fi
    case "$t" in *-gnu) [ "$npm_os" = linux ] && libc=glibc ;; *-musl) libc=musl ;; esac
    cp LICENSE "$pp/"
    printf '# zklock-%s\n\nThe native addon of [zklock](https://www.npmjs.com/package/zklock) for %s. Install `zklock`, not this package: npm picks the addon for the platform it runs on.\n' "$npm_key" "$npm_key" >"$pp/README.md"
    node - "$root/bindings-node/package.json" "$pp/package.json" "$version" "$npm_key" "$npm_os" "$npm_cpu" "$libc" <<'JS'
const fs = require('node:fs')
const [src, dest, version, key, os, cpu, libc] = process.argv.slice(2)
const main = JSON.parse(fs.readFileSync(src, 'utf8'))
const pkg = {
  name: `zklock-${key}`,
  version,
  description: `zklock's native addon for ${key} (install zklock, which depends on it)`,
  license: main.license,
  repository: main.repository,
  homepage: main.homepage,
  main: 'zklock.node',
  files: ['zklock.node', 'LICENSE', 'README.md'],
  os: [os],
  cpu: [cpu],
  ...(libc ? { libc: [libc] } : {}),
  engines: main.engines,
}
fs.writeFileSync(dest, JSON.stringify(pkg, null, 2) + '\n')
JS
    (cd "$pp" && npm pack --silent --pack-destination "$dist" >/dev/null)
    [ -f "$dist/zklock-$npm_key-$version.tgz" ] || return 1
    keys+=("$npm_key")
  done
  mkdir -p "$pkg"
  cp bindings-node/index.js bindings-node/index.d.ts bindings-node/README.md LICENSE "$pkg/"
  cp -r bindings-node/lib "$pkg/"
  # The checkout's package.json builds the addon at install (scripts.install); the packaged one
  # has no scripts, no dev dependencies, the workspace's version, and depends on the platform
  # packages of this dist, at the same version.
  node - "$root/bindings-node/package.json" "$pkg/package.json" "$version" "${keys[@]}" <<'JS'
const fs = require('node:fs')
const [src, dest, version, ...keys] = process.argv.slice(2)
const pkg = JSON.parse(fs.readFileSync(src, 'utf8'))
pkg.version = version
delete pkg.scripts
delete pkg.devDependencies
pkg.files = ['index.js', 'lib/', 'index.d.ts', 'LICENSE']
pkg.optionalDependencies = Object.fromEntries(keys.map((k) => [`zklock-${k}`, version]))
fs.writeFileSync(dest, JSON.stringify(pkg, null, 2) + '\n')
JS
  (cd "$pkg" && npm pack --silent --pack-destination "$dist" >/dev/null)
  [ -f "$dist/zklock-$version.tgz" ]
}

# --- C: tarball and .deb ----------------------------------------------------------------------
# One tree laid out as a prefix: lib/ (libzklock.so.<v>, its soname link libzklock.so.0, the
# link name libzklock.so, libzklock.a, pkgconfig/zklock.pc), include/, bin/zklock,
# share/zklock/valgrind.supp.
c_tree() { # c_tree DIR PC_PREFIX
  local dir="$1" pc_prefix="$2"
  install -d "$dir/lib/pkgconfig" "$dir/include" "$dir/bin"
  install -m 755 "$out/libzklock_c.so" "$dir/lib/libzklock.so.$version"
  ln -s "libzklock.so.$version" "$dir/lib/libzklock.so.0"
  ln -s libzklock.so.0 "$dir/lib/libzklock.so"
  # Rust's standard library comes with debug info; a static library has no use for it.
  install -m 644 "$out/libzklock_c.a" "$dir/lib/libzklock.a"
  "$strip_tool" --strip-debug "$dir/lib/libzklock.a"
  install -m 644 include/zklock.h include/zklock.hpp "$dir/include/"
  install -m 755 "$out/zklock" "$dir/bin/zklock"
  # The suppressions the C README tells valgrind users to add (issue 33: the tarball lacked it).
  install -d "$dir/share/zklock"
  install -m 644 bindings-c/valgrind.supp "$dir/share/zklock/valgrind.supp"
  sed -e "s|@PREFIX@|$pc_prefix|g" -e "s|@VERSION@|$version|g" bindings-c/zklock.pc.in >"$dir/lib/pkgconfig/zklock.pc"
}
# Windows: one zip laid out as a prefix as well, the DLL beside the program in bin/ (where
# Windows looks for it), import libraries in lib/.
c_zip() {
  local dir="$stage/$ctar"
  install -d "$dir/bin" "$dir/lib/pkgconfig" "$dir/include"
  install -m 755 "$out/zklock_c.dll" "$dir/bin/zklock.dll"
  install -m 755 "$out/zklock.exe" "$dir/bin/zklock.exe"
  # The .def of what zklock.dll exports (the zklock_* functions and nothing else: test-dist
  # checks), named by the name it is shipped under; the import libraries made from it: mingw's
  # (binutils dlltool) and MSVC's (llvm-dlltool: the short import format link.exe reads).
  { echo "LIBRARY zklock.dll"; echo "EXPORTS"
    x86_64-w64-mingw32-objdump -p "$out/zklock_c.dll" |
      sed -n '/^\[Ordinal\/Name Pointer\] Table/,/^$/s/^.*\] \(zklock_[A-Za-z0-9_]*\)$/  \1/p'
  } >"$dir/lib/zklock.def"
  grep -q '^  zklock_' "$dir/lib/zklock.def" || { echo "dist: zklock.dll exports no zklock_* function" >&2; return 1; }
  x86_64-w64-mingw32-dlltool -d "$dir/lib/zklock.def" -D zklock.dll -l "$dir/lib/libzklock.dll.a"
  llvm-dlltool-14 -m i386:x86-64 -d "$dir/lib/zklock.def" -D zklock.dll -l "$dir/lib/zklock.lib"
  install -m 644 "$out/libzklock_c.a" "$dir/lib/libzklock.a"
  "$strip_tool" --strip-debug "$dir/lib/libzklock.a"
  install -m 644 include/zklock.h include/zklock.hpp "$dir/include/"
  # For mingw's pkg-config: a static link needs these Windows system libraries (rustc
  # --print native-static-libs for x86_64-pc-windows-gnu).
  sed -e "s|@PREFIX@|\${pcfiledir}/../..|g" -e "s|@VERSION@|$version|g" \
    -e 's|^Libs.private: .*|Libs.private: -lbcrypt -ladvapi32 -lkernel32 -lntdll -luserenv -lws2_32 -ldbghelp|' \
    -e '/^# What libzklock.a needs/,/^# libzklock.a for/d' bindings-c/zklock.pc.in >"$dir/lib/pkgconfig/zklock.pc"
  cp bindings-c/README.md "$dir/README.md"
  cp LICENSE "$dir/LICENSE"
  (cd "$stage" && rm -f "$dist/$ctar.zip" && zip -q -X -r "$dist/$ctar.zip" "$ctar")
}
c_tarball() {
  [[ "$cur" != windows-* ]] || { c_zip; return; }
  [[ "$cur" != macos-* ]] || { c_tarball_macos; return; }
  # ${pcfiledir}/../..: the .pc finds the tree wherever the tarball is unpacked.
  c_tree "$stage/$ctar" '${pcfiledir}/../..'
  cp bindings-c/README.md "$stage/$ctar/README.md"
  cp LICENSE "$stage/$ctar/LICENSE"
  tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$dist/$ctar.tar.gz" "$ctar"
}

# /usr/share/doc/zklock/copyright in Debian's machine-readable format (copyright-format 1.0):
# a header paragraph, one Files paragraph, and the licence's full text in a standalone License
# paragraph (every line indented by one space, an empty line written as " .").
debian_copyright() {
  printf '%s\n' \
    'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
    'Upstream-Name: zklock' \
    'Upstream-Contact: zklock maintainers <zklock@localhost>' \
    '' \
    'Files: *' \
    'Copyright: zklock contributors' \
    'License: Apache-2.0' \
    '' \
    'License: Apache-2.0'
  sed -e '1{/^[[:space:]]*$/d}' -e 's/^[[:space:]]*$/./' -e 's/^/ /' LICENSE
}

deb() {
  local d="$stage/deb-$deb_arch"
  c_tree "$d/usr" /usr
  install -d "$d/usr/share/doc/zklock" "$d/DEBIAN"
  cp bindings-c/README.md "$d/usr/share/doc/zklock/README.md"
  debian_copyright >"$d/usr/share/doc/zklock/copyright"
  # The oldest glibc it runs on: the newest GLIBC_x.y symbol version any binary uses.
  local glibc depends
  glibc="$(objdump -T "$d/usr/lib/libzklock.so.$version" "$d/usr/bin/zklock" |
    grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1)"
  depends="libc6 (>= $glibc)"
  # zig links its own unwinder in; libgcc_s only if a binary still asks for it.
  if readelf -d "$d/usr/lib/libzklock.so.$version" "$d/usr/bin/zklock" | grep -q 'NEEDED.*libgcc_s'; then
    depends="$depends, libgcc-s1"
  fi
  cat >"$d/DEBIAN/control" <<EOF
Package: zklock
Version: $version
Architecture: $deb_arch
Maintainer: zklock maintainers <zklock@localhost>
Section: libs
Priority: optional
Depends: $depends
Installed-Size: $(du -sk --exclude=DEBIAN "$d" | cut -f1)
Description: distributed locks on Apache ZooKeeper (C library and command line)
 libzklock (libzklock.so.0, libzklock.a), the C header zklock.h, the C++17 header
 zklock.hpp, the pkg-config file zklock.pc and the zklock command line.
EOF
  echo "libzklock 0 zklock (>= $version)" >"$d/DEBIAN/shlibs"
  echo "activate-noawait ldconfig" >"$d/DEBIAN/triggers"
  dpkg-deb --root-owner-group -Zgzip --build "$d" "$dist/zklock_${version}_$deb_arch.deb" >/dev/null
}

# Per target: the binaries, the wheel, the C tarball and the .deb; then the one npm package.
for cur in "${targets[@]}"; do
  build "$cur"
  target_vars "$cur"
  timed "Python abi3 wheel for $cur (maturin --profile dist${compat:+ --zig --compatibility $compat}${macos_min:+ --zig, macOS $macos_min})" python_wheel
  timed "C ${ctar} (tarball or zip)" c_tarball
  [ -z "$deb_arch" ] || timed "Debian package zklock_${version}_$deb_arch.deb" deb
done
timed "npm packages: zklock and one per platform (${targets[*]})" node_package

(cd "$dist" && sha256sum -- * >SHA256SUMS)
echo "== dist: $dist (version $version)"
(cd "$dist" && ls -l --block-size=K -- * | awk '{print "   " $5 "\t" $9}')
