#!/usr/bin/env bash
# The cross-language suite (make test-interop): Rust, Python, Node and C workers contend on one
# lock through a connection-cutting proxy (tests/trust/tests/cross_language.rs). Each face's
# worker is built here if its own suite has not built it yet; a face that fails to build fails
# this suite (nothing is skipped silently). Also: zklock beside an application's own rustls
# (tests/tls-apps/run.sh, issue 51).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
CARGO="${CARGO:-cargo}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
# A private temp dir: every server, worker and log of this suite lives below it, so the check for
# leftover processes at the end sees only ours (not another run's on the same machine).
TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/zklock-trust.XXXXXX")"
export TMPDIR
workers=()

# Python: the suite's virtualenv with the package installed from the checkout.
venv="${ZKLOCK_PY_VENV:-$target_dir/py-venv}"
if ! "$venv/bin/python" -c 'import zklock' >/dev/null 2>&1; then
  echo "cross-language: installing the Python face into $venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q ./bindings-python
fi
workers+=("python=$venv/bin/python $root/bindings-python/examples/worker.py")

# Node: the addon built in place by npm install.
if [ ! -f bindings-node/zklock.node ]; then
  echo "cross-language: building the Node face"
  (cd bindings-node && npm install --no-audit --no-fund >/dev/null)
fi
workers+=("node=node $root/bindings-node/examples/worker.mjs")

# C: libzklock and the example worker linked against it.
make -s -C bindings-c worker PROFILE=debug >/dev/null
cworker="$target_dir/zklock-c/debug/worker"  # built by bindings-c/Makefile
workers+=("c=$cworker")

export ZKLOCK_XLANG_WORKERS
ZKLOCK_XLANG_WORKERS="$(IFS=';'; echo "${workers[*]}")"
echo "cross-language workers: $ZKLOCK_XLANG_WORKERS"
"$CARGO" test -p zklock-trust --test cross_language -- --ignored --nocapture

# The Python face's holder in the one-way-loss rounds (issue 33; the Rust rounds run in make
# test-rust).
ZKLOCK_PYTHON="$venv/bin/python" "$CARGO" test -p zklock-trust --test one_way -- --ignored --nocapture

# docs/safety.md's scenarios 3-7 (lost create reply, cancel while suspended, stale release, a
# waiter's own expiry, release from the lost callback) again, on a 3-node ensemble.
"$CARGO" build -q -p zklock-testkit --bin zk-harness
coproc ENSEMBLE { "$target_dir/debug/zk-harness" --nodes 3; }
read -r line <&"${ENSEMBLE[0]}"
echo "3-node ensemble: ${line#servers=}"
ZKLOCK_TEST_SERVERS="${line#servers=}" "$CARGO" test -p zklock --test faults --test expiry --test mutex
exec {ENSEMBLE[1]}>&-
wait "$ENSEMBLE_PID" 2>/dev/null || true

# zklock beside an application's own rustls (issue 51): one on rustls' default features, one on
# aws-lc-rs alone, each builds its own ClientConfig and takes a lock over TLS. Their first build
# compiles aws-lc-sys once (about 4 minutes on two busy cores); later runs reuse it.
tests/tls-apps/run.sh

# The README's tour: each face's snippet is the same text as a file that runs here.
scripts/check-readme.sh

# No test may leave a server or worker behind.
sleep 1
if pgrep -f "$TMPDIR" >/dev/null; then
  echo "leftover test processes:"; pgrep -af "$TMPDIR"
  exit 1
fi
echo "no leftover test processes"
rm -rf "$TMPDIR"
