#!/usr/bin/env bash
# Regenerates include/zklock.h from bindings-c/src with cbindgen 0.29.4 (installed from crates.io
# into ~/.cargo/bin when missing). `--verify`: fail, changing nothing, when the header differs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"
if ! cbindgen --version 2>/dev/null | grep -qx 'cbindgen 0.29.4'; then
  echo "gen-header: installing cbindgen 0.29.4 from crates.io (the header is generated with exactly this version)"
  cargo install --locked --version '=0.29.4' cbindgen >&2
fi
cd "$root"
if [ "${1:-}" = "--verify" ]; then
  if ! cbindgen --quiet --config bindings-c/cbindgen.toml --crate zklock-c --output include/zklock.h --verify; then
    echo "gen-header: include/zklock.h is out of date with bindings-c/src; run bindings-c/gen-header.sh and commit it" >&2
    exit 1
  fi
  echo "gen-header: include/zklock.h is current"
else
  cbindgen --quiet --config bindings-c/cbindgen.toml --crate zklock-c --output include/zklock.h
  echo "gen-header: wrote include/zklock.h"
fi
