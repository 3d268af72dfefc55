#!/usr/bin/env bash
# make check-reach [REACH_TARGETS='windows-x64-gnu macos-arm64 macos-x64']: type-checks the crates
# that ship (core, wire, cli, the C, Python and Node faces) for Windows and macOS, the first step
# of issue 36 (docs/packaging.md, "Windows and macOS: where it stands"). `cargo check`, not a
# build: nothing is linked, so it needs no Windows or Apple linker, only what check itself runs:
#
# - a standard library for the target. Neither Debian nor this machine has one, so, as for musl,
#   Debian's rustc-web (1.96) compiles it from rust-web-src with cargo's -Zbuild-std
#   (RUSTC_BOOTSTRAP=1); scripts/install-deps.sh installs both when the targets are named.
# - a C compiler for the target: ring's build script compiles its C and assembly even under
#   check. zig (PyPI ziglang 0.15.2, the one make dist uses) is it, through `cargo-zigbuild
#   check` (no mingw gcc, no Apple SDK).
# - pyo3 needs no target Python: abi3-py39, and on Windows raw-dylib linking of python3.dll.
#
# Opt-in, not part of `make test`: each target compiles a standard library (about 1 to 3 minutes
# of the two cores per target, see docs/packaging.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
read -r -a targets <<<"${REACH_TARGETS:-windows-x64-gnu macos-arm64 macos-x64}"

triple_of() {
  case "$1" in
    windows-x64-gnu) echo x86_64-pc-windows-gnu ;;
    macos-arm64) echo aarch64-apple-darwin ;;
    macos-x64) echo x86_64-apple-darwin ;;
    *) echo "check-reach: unknown target $1 (REACH_TARGETS: windows-x64-gnu macos-arm64 macos-x64)" >&2; return 1 ;;
  esac
}
for t in "${targets[@]}"; do triple_of "$t" >/dev/null; done

# Debian's rustc-web and rust-web-src (diverted to /usr/lib/rust-web/bin, as for musl).
DIST_TARGETS="${targets[*]}" scripts/install-deps.sh
rustc=/usr/lib/rust-web/bin/rustc
[ -x "$rustc" ] && [ -d /usr/lib/rustlib/src/rust/library ] || {
  echo "check-reach: Debian's rustc-web and rust-web-src did not install" >&2
  exit 1
}

# zig and cargo-zigbuild: make dist's venv when it has them (same pins), else a small one.
venv="$target_dir/dist-venv"
if [ ! -x "$venv/bin/cargo-zigbuild" ] || ! "$venv/bin/python3" -m ziglang version >/dev/null 2>&1; then
  venv="$target_dir/reach-venv"
  want="ziglang==0.15.2 cargo-zigbuild==0.24.1"
  if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$want" ] || [ ! -x "$venv/bin/cargo-zigbuild" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q --disable-pip-version-check $want
    echo "$want" >"$venv/.requirements"
  fi
fi
export PATH="$venv/bin:$PATH"
echo "check-reach: $("$rustc" --version), zig $("$venv/bin/python3" -m ziglang version), $(cargo-zigbuild --version)"

# napi 3.16's own build script, on windows-gnu, calls napi-build's setup(), which panics unless a
# file named libnode.dll is in LIBNODE_PATH, LIBPATH or PATH (MSYS2's Node layout), and then asks
# to link -lnode. The addon has `dyn-symbols` on Windows (bindings-node/Cargo.toml): it finds
# the N-API functions in the host process at load time and references none at link time. check
# links nothing, so an empty placeholder passes the build script; the real link (make dist,
# the next step) needs `-lnode` to resolve to a stub that adds no import.
libnode="$target_dir/reach/libnode"
mkdir -p "$libnode"
: >"$libnode/libnode.dll"

crates=(-p zklock -p zklock-wire -p zklock-cli -p zklock-c -p zklock-python -p zklock-node)
failed=()
for t in "${targets[@]}"; do
  triple="$(triple_of "$t")"
  start=$SECONDS
  echo "== check-reach: $t: LIBNODE_PATH=$libnode RUSTC=$rustc RUSTC_BOOTSTRAP=1 cargo-zigbuild check --locked -Zbuild-std=std,panic_abort --target $triple ${crates[*]}"
  # A warning of rustc's fails too (only this workspace's crates can have one: the standard
  # library's and crates.io's are capped; `warning: crate@version:` lines are build scripts'):
  # code that is dead or unused on one platform only shows here, never in the Linux clippy run.
  log="$target_dir/reach/$t.log"
  if LIBNODE_PATH="$libnode" RUSTC="$rustc" RUSTC_BOOTSTRAP=1 cargo-zigbuild check -q --locked \
    -Zbuild-std=std,panic_abort --target "$triple" "${crates[@]}" 2>&1 | tee "$log" &&
    ! grep -E '^warning(\[[^]]*\])?: ' "$log" | grep -qvE '^warning: [A-Za-z0-9_-]+@[0-9]'; then
    echo "   ($t: compiles; $((SECONDS - start)) s)"
  else
    echo "   ($t: FAILED; $((SECONDS - start)) s)"
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "check-reach: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}" >&2
  exit 1
fi
echo "check-reach: ${#targets[@]} of ${#targets[@]} targets compile (${targets[*]})"
