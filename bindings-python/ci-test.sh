#!/usr/bin/env bash
# The Python face's test suite, as `make test-python` runs it:
#   1. a virtualenv (target/py-venv unless ZKLOCK_PY_VENV says otherwise) with pytest, mypy and
#      prometheus_client (the tests of zklock.metrics run against the real package),
#   2. `pip install ./bindings-python` (maturin from PyPI builds the abi3 wheel),
#   3. zk-harness (a real ZooKeeper for the tests),
#   4. pytest against it, and mypy --strict on the typed example.
# Exits non-zero when any step fails. Needs Rust, CPython >= 3.9 with pip, Java + ZooKeeper jars
# (scripts/install-deps.sh installs what is missing).
#
# Knobs: PYTHON (interpreter, default python3), ZKLOCK_PY_VENV, ZKLOCK_PY_PROFILE (cargo profile of
# the wheel: `dev` by default, which reuses the workspace's debug build; `release` for the wheel a
# user gets), PYTEST_ARGS (extra pytest arguments).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$repo"

python="${PYTHON:-python3}"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
venv="${ZKLOCK_PY_VENV:-$target_dir/py-venv}"
profile="${ZKLOCK_PY_PROFILE:-dev}"

step() { echo "== test-python: $*"; }

if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)'; then
  echo "test-python: $python is older than Python 3.9" >&2
  exit 1
fi

if [ ! -f /usr/share/java/zookeeper.jar ] && [ -x scripts/install-deps.sh ]; then
  step "installing ZooKeeper (scripts/install-deps.sh)"
  scripts/install-deps.sh || echo "test-python: install-deps failed; the tests will say what is missing" >&2
fi

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  step "creating the virtualenv $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
vpy="$venv/bin/python"

step "installing pytest, mypy and prometheus_client (zklock.metrics' tests)"
"$vpy" -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
"$vpy" -m pip install --quiet --disable-pip-version-check "pytest>=7" "mypy>=1.8" "prometheus_client>=0.17"

step "pip install ./bindings-python (cargo profile $profile)"
MATURIN_PEP517_ARGS="--profile $profile" \
  "$vpy" -m pip install --disable-pip-version-check --force-reinstall --no-deps ./bindings-python

step "building zk-harness"
cargo build -q -p zklock-testkit --bin zk-harness
# A private copy: other suites rebuilding the shared target/ must not swap it under a running test.
cp "$target_dir/debug/zk-harness" "$venv/bin/zk-harness"
export ZK_HARNESS="$venv/bin/zk-harness"

step "mypy --strict on the typed example"
(cd "$here/examples" && "$vpy" -m mypy --strict --no-incremental typed_example.py worker.py readme.py readme_semaphore.py readme_election.py)

step "pytest"
set +e
(cd "$here" && "$vpy" -m pytest -p no:cacheprovider -q -ra ${PYTEST_ARGS:-} tests)
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "test-python: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
