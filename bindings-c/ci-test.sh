#!/usr/bin/env bash
# The C face's suite (make test-c): builds libzklock.{so,a}, checks include/zklock.h is current,
# starts a real ZooKeeper (zk-harness, with its fault proxy), runs the C test program linked
# against the shared and against the static library, the same under valgrind, the conformance
# runner (tests/conformance/cases.txt through the C API), the C++ wrapper test, the semaphore
# and election tests (also under valgrind), and a pkg-config build of examples/worker.c after
# `make install PREFIX=<tmp>`.
# Exits non-zero when anything fails; the last line is `N passed, N failed` (steps and tests).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"
CARGO="${CARGO:-cargo}"
CC="${CC:-cc}"
CXX="${CXX:-c++}"
ROUNDS="${ZKLOCK_TEST_ROUNDS:-200}"
VALGRIND_ROUNDS="${ZKLOCK_VALGRIND_ROUNDS:-10}"

passed=0
failed=0
step() { # step NAME COMMAND...: runs a step, counts it
  local name="$1"; shift
  echo "=== $name"
  if "$@"; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"
  fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}
# Adds a test program's own `N passed, N failed` to the totals; fails the step when it failed.
# The conformance runner's line reads `conformance c: N passed, N failed` (make test's summary
# counts it by that name, so it is added to this script's total but not to "test programs").
run_counted() { # run_counted LOG COMMAND... (killed after $TEST_TIMEOUT s: a hang is a failure)
  local log="$1"; shift
  timeout --signal=KILL "${TEST_TIMEOUT:-900}" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line
  line="$(grep -E "^${COUNT_PREFIX:-}[0-9]+ passed, [0-9]+ failed\$" "$log" | tail -n1)"
  line="${line#"${COUNT_PREFIX:-}"}"
  if [ -z "$line" ]; then
    echo "(no summary line: the program crashed or was killed; exit status $rc)"
    return 1
  fi
  local p f
  p="${line%% passed*}"; f="${line#*passed, }"; f="${f%% failed*}"
  if [ -n "${COUNT_PREFIX:-}" ]; then
    conf_passed=$((conf_passed + p)); conf_failed=$((conf_failed + f))
  else
    sub_passed=$((sub_passed + p)); sub_failed=$((sub_failed + f))
  fi
  [ "$rc" -eq 0 ] && [ "$f" -eq 0 ]
}
sub_passed=0
sub_failed=0
conf_passed=0
conf_failed=0

tmp="$(mktemp -d /tmp/zklock-c-test.XXXXXX)"
harness_pid=""
cleanup() {
  exec 3>&- 2>/dev/null || true
  if [ -n "$harness_pid" ]; then
    for _ in $(seq 1 100); do kill -0 "$harness_pid" 2>/dev/null || break; sleep 0.1; done
    kill "$harness_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

for tool in valgrind pkg-config readelf "$CC" "$CXX"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "ci-test: $tool is missing (scripts/install-deps.sh installs valgrind and pkg-config)"; failed=$((failed + 1)); }
done

# --- build --------------------------------------------------------------------------------
target_dir="$("$CARGO" metadata --format-version 1 --no-deps 2>/dev/null | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
target_dir="${target_dir:-$root/target}"
# The target directory is shared with other work trees: the tests use this run's own copy of
# the libraries (a library overwritten under a running test would crash it with SIGBUS).
out="$tmp/lib"
build_lib() {
  "$CARGO" build -q -p zklock-c &&
    mkdir -p "$out" &&
    cp "$target_dir/debug/libzklock_c.so" "$out/libzklock.so.0" &&
    ln -s libzklock.so.0 "$out/libzklock.so" &&
    cp "$target_dir/debug/libzklock_c.a" "$out/libzklock.a" &&
    readelf -d "$out/libzklock.so" | grep 'SONAME.*\[libzklock.so.0\]' >/dev/null
}
step "build libzklock.so and libzklock.a" build_lib || true
[ -f "$out/libzklock.so" ] || { echo "ci-test: no library, stopping"; finish; }
step "include/zklock.h is generated from the code (cbindgen --verify)" bindings-c/gen-header.sh --verify
step "cargo test -p zklock-c (panic guard, status mapping)" "$CARGO" test -q -p zklock-c

cflags=(-std=c11 -Wall -Wextra -Werror -g -O1 -D_GNU_SOURCE -I"$root/include")
build_tests() {
  # The header alone: strict C99 and C++11 (cbindgen's extern "C" guards).
  echo '#include "zklock.h"' | "$CC" -std=c99 -pedantic -Wall -Wextra -Werror -I"$root/include" -fsyntax-only -x c - &&
    echo '#include "zklock.h"' | "$CXX" -std=c++11 -pedantic -Wall -Wextra -Werror -I"$root/include" -fsyntax-only -x c++ - &&
  "$CC" "${cflags[@]}" bindings-c/tests/test_zklock.c -L"$out" -lzklock -Wl,-rpath,"$out" -lpthread \
      -o "$tmp/test_shared" &&
    "$CC" "${cflags[@]}" bindings-c/tests/test_zklock.c "$out/libzklock.a" -lpthread -ldl -lm -lrt \
      -o "$tmp/test_static" &&
    # grep reads all of ldd's output (no -q): under pipefail, a grep that quits at its first
    # match can end ldd by SIGPIPE and fail the pipeline on a loaded machine.
    ldd "$tmp/test_shared" | grep "$out/libzklock.so" >/dev/null &&
    ! ldd "$tmp/test_static" | grep libzklock >/dev/null &&
    "$CC" "${cflags[@]}" bindings-c/tests/test_semaphore.c -L"$out" -lzklock -Wl,-rpath,"$out" -lpthread \
      -o "$tmp/test_semaphore" &&
    "$CC" "${cflags[@]}" -Ibindings-c/tests bindings-c/tests/test_election.c -L"$out" -lzklock -Wl,-rpath,"$out" -lpthread \
      -o "$tmp/test_election" &&
    "$CC" "${cflags[@]}" bindings-c/tests/conformance.c -L"$out" -lzklock -Wl,-rpath,"$out" -lpthread -lm \
      -o "$tmp/conformance" &&
    "$CXX" -std=c++17 -Wall -Wextra -Wmissing-field-initializers -Werror -g -O1 -I"$root/include" bindings-c/tests/test_zklock.cpp \
      -L"$out" -lzklock -Wl,-rpath,"$out" -lpthread -o "$tmp/test_cpp" &&
    "$CC" "${cflags[@]}" -Ibindings-c/tests bindings-c/tests/test_secure.c -L"$out" -lzklock -Wl,-rpath,"$out" -lpthread \
      -o "$tmp/test_secure" &&
    # Static, with pthread_create wrapped: the test makes the system refuse a thread.
    "$CC" "${cflags[@]}" bindings-c/tests/test_threads.c "$out/libzklock.a" -Wl,--wrap=pthread_create \
      -lpthread -ldl -lm -lrt -o "$tmp/test_threads"
}
# The dialects the headers promise (issue 27, item 14): zklock.h as C89 (block comments, no
# `#endif // ...`; -pedantic would only object to enumerators' trailing commas), twice in one
# unit; zklock.hpp refuses C++14 with its one #error line and nothing else.
dialects() {
  printf '#include "zklock.h"\n#include "zklock.h"\n' |
    "$CC" -std=c89 -Wall -Wextra -Werror -I"$root/include" -fsyntax-only -x c - || return 1
  local log="$tmp/cxx14.log"
  if echo '#include "zklock.hpp"' |
    "$CXX" -std=c++14 -I"$root/include" -fsyntax-only -x c++ - >"$log" 2>&1; then
    echo "zklock.hpp compiled under C++14"; return 1
  fi
  cat "$log"
  grep -q 'needs C++17 or later' "$log" && [ "$(grep -c 'error:' "$log")" -eq 1 ] &&
    echo '#include "zklock.hpp"' | "$CXX" -std=c++17 -Wall -Wextra -Werror -I"$root/include" -fsyntax-only -x c++ -
}
step "zklock.h compiles as C89; zklock.hpp under C++14 stops at one clear #error" dialects

step "build the C tests (shared, static, semaphores), the conformance runner and the C++17 wrapper test (-Wall -Wextra -Wmissing-field-initializers -Werror)" build_tests

# --- ZooKeeper ----------------------------------------------------------------------------
start_harness() {
  "$CARGO" build -q -p zklock-testkit --bin zk-harness || return 1
  mkfifo "$tmp/ctl"
  "$target_dir/debug/zk-harness" --proxy <"$tmp/ctl" >"$tmp/harness.out" 2>"$tmp/harness.err" &
  harness_pid=$!
  exec 3>"$tmp/ctl"
  for _ in $(seq 1 1200); do
    if grep -q '^proxy=' "$tmp/harness.out" 2>/dev/null; then break; fi
    kill -0 "$harness_pid" 2>/dev/null || break
    sleep 0.1
  done
  servers="$(sed -n 's/^servers=//p' "$tmp/harness.out" | head -n1)"
  proxy="$(sed -n 's/^proxy=//p' "$tmp/harness.out" | head -n1)"
  if [ -z "$servers" ] || [ -z "$proxy" ]; then
    echo "ci-test: ZooKeeper did not start (this is a failure, not a skip):"
    cat "$tmp/harness.err"
    return 1
  fi
  echo "ZooKeeper at $servers, fault proxy at $proxy"
}
servers=""
proxy=""
step "start ZooKeeper (zk-harness --proxy)" start_harness
if [ -z "$servers" ]; then finish; fi

# --- tests --------------------------------------------------------------------------------
export ZKLOCK_TEST_ROUNDS="$ROUNDS"
step "C test linked against libzklock.so" \
  run_counted "$tmp/shared.log" "$tmp/test_shared" "$servers" "$proxy" "$tmp/ctl" "$tmp/harness.out"
step "C test linked against libzklock.a" \
  run_counted "$tmp/static.log" "$tmp/test_static" "$servers" "$proxy" "$tmp/ctl" "$tmp/harness.out"
# Semaphores and revocation (issue 14), also under valgrind: the revocation callback may release
# its own lease, which must not touch freed memory.
step "C semaphore test" \
  run_counted "$tmp/semaphore.log" "$tmp/test_semaphore" "$servers" "$proxy" "$tmp/ctl" "$tmp/harness.out"
step "C semaphore test under valgrind: no errors, no leaks" \
  run_counted "$tmp/semaphore-valgrind.log" valgrind --error-exitcode=99 --leak-check=full \
    --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --num-callers=40 \
    "$tmp/test_semaphore" "$servers" "$proxy" "$tmp/ctl" "$tmp/harness.out"

# Leader election (issue 25), also under valgrind.
step "C election test" \
  run_counted "$tmp/election.log" "$tmp/test_election" "$servers"
step "C election test under valgrind: no errors, no leaks" \
  run_counted "$tmp/election-valgrind.log" valgrind --error-exitcode=99 --leak-check=full \
    --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --num-callers=40 \
    "$tmp/test_election" "$servers"

# Valgrind: no memory errors, and no definitely or indirectly lost block. The library's
# runtime and callback threads live as long as the process, so what they own at exit is
# "still reachable" (not a leak); nothing is suppressed.
export ZKLOCK_TEST_ROUNDS="$VALGRIND_ROUNDS"
valgrind_opts=(--error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect
  --errors-for-leak-kinds=definite,indirect --num-callers=40 --child-silent-after-fork=yes)
step "C test (libzklock.so) under valgrind: no errors, no leaks" \
  run_counted "$tmp/valgrind.log" valgrind "${valgrind_opts[@]}" "$tmp/test_shared" "$servers" "$proxy" "$tmp/ctl" "$tmp/harness.out"
export ZKLOCK_TEST_ROUNDS="$ROUNDS"

# The cases every face runs (tests/conformance/cases.txt), through the public C API.
COUNT_PREFIX="conformance c: " step "conformance cases (tests/conformance/cases.txt) through the C API" \
  run_counted "$tmp/conformance.log" "$tmp/conformance" "$root/tests/conformance/cases.txt" "$servers" \
    "$proxy" "$tmp/ctl" "$tmp/harness.out"

# Secure ZooKeeper (TLS, SASL, ACLs, chroot): a secured server of its own, stopped after.
secure_check() {
  mkfifo "$tmp/secure-ctl"
  "$target_dir/debug/zk-harness" --secure <"$tmp/secure-ctl" >"$tmp/secure.out" 2>"$tmp/secure.err" &
  local pid=$! rc
  exec 4>"$tmp/secure-ctl"
  for _ in $(seq 1 1200); do
    grep -q '^sasl_users=' "$tmp/secure.out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q '^sasl_users=' "$tmp/secure.out"; then
    echo "ci-test: the secured ZooKeeper did not start (a failure, not a skip):"; cat "$tmp/secure.err"
    exec 4>&-; return 1
  fi
  run_counted "$tmp/secure.log" "$tmp/test_secure" "$tmp/secure.out"; rc=$?
  exec 4>&-
  wait "$pid"
  return $rc
}
step "secure ZooKeeper through the C API (zk-harness --secure)" secure_check

# One callback thread per client, and a refused thread reported as such (issue 27, point 9).
step "C callback threads (one per client; a refused thread is ZKLOCK_CONNECTION)" \
  run_counted "$tmp/threads.log" "$tmp/test_threads" "$servers"

step "C++ wrapper test (include/zklock.hpp)" \
  run_counted "$tmp/cpp.log" "$tmp/test_cpp" "$servers"
step "C++ wrapper test under valgrind: no errors, no leaks" \
  run_counted "$tmp/cpp-valgrind.log" valgrind "${valgrind_opts[@]}" "$tmp/test_cpp" "$servers"

# The README's semaphore example: shown verbatim, and it builds and runs as written.
semaphore_example() {
  python3 - <<'PY' || { echo "bindings-c/README.md does not show examples/semaphore.c verbatim"; return 1; }
import sys
snippet = open("bindings-c/examples/semaphore.c").read().strip("\n")
sys.exit(0 if "```c\n" + snippet + "\n```" in open("bindings-c/README.md").read() else 1)
PY
  "$CC" -std=c11 -pedantic -Wall -Wextra -Werror -I"$root/include" bindings-c/examples/semaphore.c \
    -L"$out" -lzklock -Wl,-rpath,"$out" -o "$tmp/semaphore_example" || return 1
  local got
  got="$("$tmp/semaphore_example" "$servers")" || return 1
  echo "$got"
  echo "$got" | grep -q '^third: ZKLOCK_TIMEOUT' && echo "$got" | grep -qx 'asked to let go: yes'
}
step "the README's semaphore example (examples/semaphore.c): verbatim, builds, runs" semaphore_example

# --- install + pkg-config -----------------------------------------------------------------
install_check() {
  local prefix="$tmp/prefix"
  make -s -C bindings-c install PREFIX="$prefix" PROFILE=debug >/dev/null || return 1
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
  local flags
  flags="$(pkg-config --cflags --libs zklock)" || return 1
  echo "pkg-config --cflags --libs zklock: $flags"
  # shellcheck disable=SC2086
  "$CC" -std=c11 -Wall -Werror -D_GNU_SOURCE bindings-c/examples/worker.c $flags -o "$tmp/worker" || return 1
  # shellcheck disable=SC2086
  "$CC" -std=c11 -Wall -Werror -D_GNU_SOURCE bindings-c/examples/worker.c \
    $(pkg-config --cflags zklock) -Wl,-Bstatic $(pkg-config --static --libs zklock) \
    -o "$tmp/worker_static" || return 1
  if ldd "$tmp/worker_static" | grep libzklock; then echo "worker_static is not linked against libzklock.a"; return 1; fi
  # Three workers at once (two shared, one static): 15 rounds that never overlap in time and
  # whose tokens rise in the order the rounds ran.
  local log="$tmp/worker.log" pids=() rc=0
  LD_LIBRARY_PATH="$prefix/lib" "$tmp/worker" "$servers" /zklock-c-test/worker 5 "$log" & pids+=($!)
  LD_LIBRARY_PATH="$prefix/lib" "$tmp/worker" "$servers" /zklock-c-test/worker 5 "$log" & pids+=($!)
  "$tmp/worker_static" "$servers" /zklock-c-test/worker 5 "$log" & pids+=($!)
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  [ "$rc" -eq 0 ] || return 1
  [ "$(grep -c '^c [0-9]* [0-9]* [0-9]*$' "$log")" -eq 15 ] || { cat "$log"; return 1; }
  sort -k3,3n "$log" | awk '
    NR > 1 && ($3 < last_exit || $2 <= last_token) { bad = 1; print "overlap or token order: " $0 }
    { last_exit = $4; last_token = $2 }
    END { exit bad }' || return 1
  echo "3 workers (pkg-config builds, shared and static) ran 15 rounds without overlap, tokens rising"
}
step "make install PREFIX=tmp; pkg-config --cflags --libs zklock; build and run examples/worker.c" install_check

echo "test programs: $sub_passed passed, $sub_failed failed"
passed=$((passed + sub_passed + conf_passed))
failed=$((failed + sub_failed + conf_failed))
finish
