#!/usr/bin/env bash
# zklock's one-command demo (`make demo`): workers of every face that exists — Rust, the `zklock`
# command line, Python, Node and C — contend for one lock on a real ZooKeeper; each critical
# section (about 20 ms) is logged as `<face> <token> <enter_ns> <exit_ns>`, then the checker prints
# the timeline and its verdict: no two sections overlapped and fencing tokens strictly increased
# in entry order. Exit status 0 only when the verdict is OK and every worker that ran succeeded.
#
# ZooKeeper: $ZKLOCK_SERVERS when set, else the local server of `zklock server start` (started
# here when needed; a second run reuses it; `zklock server stop` stops it).
# Knobs: ZKLOCK_DEMO_ROUNDS (default 5 per worker), CARGO, CARGO_TARGET_DIR.
# A face whose worker is missing or cannot be built is reported as skipped, with the reason and
# a log under target/demo/.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
CARGO="${CARGO:-cargo}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
ROUNDS="${ZKLOCK_DEMO_ROUNDS:-5}"
DEMO="$TARGET/demo"
mkdir -p "$DEMO"
START=$(date +%s)

step() { printf '\n== %s\n' "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

step "building zklock (the command line and the Rust worker)"
"$CARGO" build -q -p zklock-cli --bin zklock --example worker || die "cargo build failed"
ZK="$TARGET/debug/zklock"
RUST_WORKER="$TARGET/debug/examples/worker"

if [ -n "${ZKLOCK_SERVERS:-}" ]; then
  SERVERS="$ZKLOCK_SERVERS"
  step "ZooKeeper: $SERVERS (from ZKLOCK_SERVERS)"
else
  step "ZooKeeper: the local server (zklock server start)"
  SERVERS="$("$ZK" server start)" || die "could not start the local ZooKeeper (see the message above)"
fi

"$ZK" --servers "$SERVERS" --connect-timeout 10s ls /zklock-demo >/dev/null ||
  die "cannot reach ZooKeeper at $SERVERS (see the message above)"

# ---- the faces: each prepare_* sets WORKER (an array) or SKIP (the reason) ----------------------
prepare_rust() { WORKER=("$RUST_WORKER"); }

# The command line: `zklock exec` runs one shell critical section per round.
prepare_cli() {
  cat >"$DEMO/cli-worker.sh" <<'EOF_WORKER'
#!/usr/bin/env bash
# cli-worker.sh ZKLOCK SERVERS PATH ROUNDS LOGFILE: ROUNDS times `zklock exec`.
set -euo pipefail
zk="$1" servers="$2" path="$3" rounds="$4" log="$5"
for ((i = 0; i < rounds; i++)); do
  "$zk" --servers "$servers" --identity "cli-worker/$$" exec "$path" -- sh -c \
    'e=$(date +%s%N); sleep 0.02; x=$(date +%s%N); echo "cli $ZKLOCK_TOKEN $e $x" >> "$1"' sh "$log"
done
EOF_WORKER
  chmod +x "$DEMO/cli-worker.sh"
  WORKER=("$DEMO/cli-worker.sh" "$ZK")
}

prepare_python() {
  local src=bindings-python/examples/worker.py blog="$DEMO/python-build.log"
  [ -f "$src" ] || { SKIP="$src is not there yet"; return; }
  command -v python3 >/dev/null || { SKIP="no python3"; return; }
  if ! "$CARGO" build -q -p zklock-python >"$blog" 2>&1; then
    SKIP="cargo build -p zklock-python failed (see $blog)"; return
  fi
  # The package from the checkout: python/zklock plus the native module built just now.
  local pkg="$DEMO/python/zklock"
  rm -rf "$pkg" && mkdir -p "$pkg" && cp bindings-python/python/zklock/* "$pkg/" &&
    cp "$TARGET/debug/lib_zklock.so" "$pkg/_zklock.abi3.so" ||
    { SKIP="cannot assemble the Python package in $pkg"; return; }
  if ! PYTHONPATH="$DEMO/python" python3 -c 'import zklock' >>"$blog" 2>&1; then
    SKIP="import zklock failed (see $blog)"; return
  fi
  WORKER=(env PYTHONPATH="$DEMO/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 python3 "$src")
}

prepare_node() {
  local src=bindings-node/examples/worker.mjs blog="$DEMO/node-build.log"
  [ -f "$src" ] || { SKIP="$src is not there yet"; return; }
  command -v node >/dev/null || { SKIP="no node"; return; }
  # The package's own build script (cargo, then copies the addon to bindings-node/zklock.node).
  if ! ZKLOCK_NODE_PROFILE=debug CARGO="$CARGO" node bindings-node/scripts/build.js >"$blog" 2>&1; then
    SKIP="building the Node addon failed (see $blog)"; return
  fi
  WORKER=(node "$src")
}

prepare_c() {
  local src=bindings-c/examples/worker.c blog="$DEMO/c-build.log"
  [ -f "$src" ] || { SKIP="$src is not there yet"; return; }
  command -v cc >/dev/null || { SKIP="no C compiler (cc)"; return; }
  [ -f include/zklock.h ] || { SKIP="include/zklock.h is not there yet"; return; }
  # As `make -C bindings-c worker` does, but with the library copied into target/demo/lib, so
  # that a concurrent build of bindings-c cannot swap it under the running worker.
  if ! "$CARGO" build -q -p zklock-c >"$blog" 2>&1; then
    SKIP="cargo build -p zklock-c failed (see $blog)"; return
  fi
  mkdir -p "$DEMO/lib" &&
    cp -f "$TARGET/debug/libzklock_c.so" "$DEMO/lib/.libzklock.so.$$" &&
    mv -f "$DEMO/lib/.libzklock.so.$$" "$DEMO/lib/libzklock.so.0" &&
    ln -sf libzklock.so.0 "$DEMO/lib/libzklock.so" ||
    { SKIP="cannot copy libzklock_c.so to $DEMO/lib"; return; }
  if ! cc -std=c11 -O2 -Wall -D_GNU_SOURCE -Iinclude "$src" -L"$DEMO/lib" -lzklock \
    -Wl,-rpath,"$DEMO/lib" -o "$DEMO/c-worker" >>"$blog" 2>&1; then
    SKIP="compiling $src failed (see $blog)"; return
  fi
  WORKER=("$DEMO/c-worker")
}

step "preparing the workers"
LOCK="/zklock-demo/run-$(date +%s)-$$"
LOG="$DEMO/sections-$$.log"
: >"$LOG"
FACES=()
declare -A CMD
for face in rust cli python node c; do
  WORKER=() SKIP=""
  "prepare_$face"
  if [ -n "$SKIP" ]; then
    printf '  %-7s skipped: %s\n' "$face" "$SKIP"
  else
    printf '  %-7s ready\n' "$face"
    FACES+=("$face")
    CMD[$face]="$(printf '%q ' "${WORKER[@]}")"
  fi
done

[ "${#FACES[@]}" -gt 0 ] || die "no worker could be prepared"

# A start gate: the demo holds the lock while the workers start and queue up behind it, so
# that every face contends from the first round (and slow starters miss nothing).
step "${#FACES[@]} workers x $ROUNDS rounds contend for $LOCK"
GATE="$DEMO/gate-$$"
rm -f "$GATE".*
"$ZK" --servers "$SERVERS" --identity demo-start-gate exec "$LOCK" -- sh -c \
  'touch "$1.held"; while [ ! -e "$1.open" ]; do sleep 0.02; done' sh "$GATE" &
GATE_PID=$!
trap 'touch "$GATE.open"; rm -f "$GATE".*' EXIT
for _ in $(seq 1000); do
  [ -e "$GATE.held" ] || ! kill -0 "$GATE_PID" 2>/dev/null && break
  sleep 0.02
done
[ -e "$GATE.held" ] || die "the start gate could not take $LOCK"

declare -A PID
for face in "${FACES[@]}"; do
  (
    eval "timeout 120 ${CMD[$face]} \"\$SERVERS\" \"\$LOCK\" \"\$ROUNDS\" \"\$LOG\"" 2>&1 |
      sed -u "s/^/  [$face] /"
  ) &
  PID[$face]=$!
done
# Wait (at most 20 s) until every worker has queued, show the queue, then open the gate.
want=$(( ${#FACES[@]} + 1 ))
for _ in $(seq 400); do
  n=$("$ZK" --servers "$SERVERS" ls --json "$LOCK" 2>/dev/null | grep -o '"position"' | wc -l)
  [ "$n" -ge "$want" ] && break
  sleep 0.05
done
"$ZK" --servers "$SERVERS" ls "$LOCK" 2>&1 | sed 's/^/  /' || true
touch "$GATE.open"
wait "$GATE_PID" || die "the start gate failed"

FAILED=()
for face in "${FACES[@]}"; do
  wait "${PID[$face]}" || FAILED+=("$face")
done

step "critical sections in entry order, and the checker's verdict"
expected=$(( (${#FACES[@]} - ${#FAILED[@]}) * ROUNDS ))
verdict=0
"$ZK" check-log --timeline "$LOG" || verdict=$?
if [ "${#FAILED[@]}" -gt 0 ]; then
  printf 'demo: worker(s) failed: %s (their output is above)\n' "${FAILED[*]}"
fi
got=$(grep -c . "$LOG" || true)
if [ "$got" -lt "$expected" ]; then
  printf 'demo: expected at least %s critical sections, the log has %s\n' "$expected" "$got"
  verdict=1
fi
printf '\ndemo: %s face(s) ran (%s) in %ss; log %s\n' "${#FACES[@]}" "${FACES[*]}" \
  "$(($(date +%s) - START))" "$LOG"
if [ "$verdict" -ne 0 ] || [ "${#FAILED[@]}" -gt 0 ]; then
  echo "demo: FAILED"
  exit 1
fi
echo "demo: OK"
