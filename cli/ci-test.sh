#!/usr/bin/env bash
# The command line's suite (`make test-cli`): its tests against real ZooKeeper (cargo test), then
# the demo twice on a fresh local server in a scratch directory: the first run starts it, the
# second must reuse it. ZooKeeper that cannot start makes this FAIL, never skip.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$repo"
CARGO="${CARGO:-cargo}"
TARGET="${CARGO_TARGET_DIR:-$repo/target}"
case "$TARGET" in /*) ;; *) TARGET="$repo/$TARGET" ;; esac

echo "test-cli: cargo test -p zklock-cli"
"$CARGO" test -p zklock-cli

echo "test-cli: demo on a fresh local server"
scratch="$(mktemp -d)"
export ZKLOCK_SERVER_DIR="$scratch/server"
unset ZKLOCK_SERVERS
cleanup() {
  "$TARGET/debug/zklock" server stop >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT
ZKLOCK_DEMO_ROUNDS=3 "$here/demo.sh" 2>&1 | tee "$scratch/first.out"
grep -q "^verdict: OK" "$scratch/first.out" || { echo "test-cli: the demo printed no OK verdict" >&2; exit 1; }
grep -q "local ZooKeeper serving on" "$scratch/first.out" ||
  { echo "test-cli: the first demo run did not start the local server" >&2; exit 1; }

echo "test-cli: demo again (must reuse the server)"
ZKLOCK_DEMO_ROUNDS=1 "$here/demo.sh" >"$scratch/second.out" 2>&1 || { cat "$scratch/second.out"; exit 1; }
grep -q "already runs" "$scratch/second.out" ||
  { cat "$scratch/second.out"; echo "test-cli: the second demo run did not reuse the server" >&2; exit 1; }
grep -q "^verdict: OK" "$scratch/second.out" || { cat "$scratch/second.out"; exit 1; }
echo "test-cli: passed"
