#!/usr/bin/env bash
# scripts/test-servers.sh [--smoke] [VERSION...]: runs zklock against ZooKeeper server versions
# (issue 53; docs/interop.md, Server versions) and prints a pass/fail table.
#
# The matrix (`make test-servers`, default versions 3.8.0 3.9.3 3.9.6): per version, the Rust
# conformance runner (core/tests/conformance.rs, every case of tests/conformance/cases.txt) and
# the isolation and one-way trust rounds (tests/trust/tests/isolation.rs, one_way.rs; rounds
# ZKLOCK_ISOLATION_ROUNDS, default 1 here). 3.8.0 is the system's (Debian 12, installed by
# scripts/install-deps.sh); the others come from Debian's archive through scripts/zk-versions.sh
# and the harness runs them through ZKLOCK_ZK_CLASSPATH. 3.4.13 (no create2) is run apart:
# `--probe-3.4` runs core/tests/old_server.rs's ignored case against it, which passes when
# connect is refused within a round trip, naming create2, and nothing is retried.
#
# `--smoke` (part of `make test`): a few conformance cases, one acquire and release among them,
# against the newest 3.9 only; it takes well under a minute once the server is fetched.
set -uo pipefail
cd "$(dirname "$0")/.."
CARGO="${CARGO:-cargo}"
rounds="${ZKLOCK_ISOLATION_ROUNDS:-1}"
smoke_cases="path-plain,path-empty,hosts-ok,reenter-same-owner,other-client-try,release-outcome,state-lost-on-close"

classpath_of() { # VERSION -> class path ("" for the system's 3.8.0)
  [ "$1" = 3.8.0 ] && { echo ""; return 0; }
  local line
  line="$(scripts/zk-versions.sh "$1")" || return 1
  echo "${line#* }"
}

# The version the server itself reports (mntr's zk_version), to show which jars ran.
reported_version() { # CLASSPATH -> version or "?"
  local out
  out="$( (echo "mntr 1"; sleep 2; echo quit) | ZKLOCK_ZK_CLASSPATH="$1" timeout 120 \
    "${CARGO_TARGET_DIR:-target}/debug/zk-harness" 2>/dev/null | sed -n 's/^zk_version\t\([0-9.]*\).*/\1/p')"
  echo "${out:-?}"
}

if [ "${1:-}" = --smoke ]; then
  version=3.9.6
  cp="$(classpath_of "$version")" || exit 1
  "$CARGO" build -q -p zklock-testkit --bin zk-harness || exit 1
  reported="$(reported_version "$cp")"
  [ "$reported" = "$version" ] || { echo "test-servers: the server started for $version reports $reported" >&2; exit 1; }
  echo "test-servers: smoke against ZooKeeper $version (it reports $reported): $smoke_cases"
  ZKLOCK_ZK_CLASSPATH="$cp" ZKLOCK_CONFORMANCE_CASES="$smoke_cases" \
    "$CARGO" test -q -p zklock --test conformance
  exit $?
fi

if [ "${1:-}" = --probe-3.4 ]; then
  cp="$(classpath_of 3.4.13)" || exit 1
  echo "test-servers: ZooKeeper 3.4.13 (no create2): connect must be refused at once, naming it, without a retry"
  start=$(date +%s)
  ZKLOCK_ZK_CLASSPATH="$cp" RUST_BACKTRACE=0 timeout 120 "$CARGO" test -q -p zklock --test old_server -- \
    --ignored --nocapture the_real_3_4_13
  status=$?
  echo "test-servers: 3.4.13 ended with status $status after $(($(date +%s) - start)) s (124: killed by the 120 s timeout)"
  exit $status
fi

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.8.0 3.9.3 3.9.6)
"$CARGO" build -q -p zklock-testkit --bin zk-harness || exit 1
log_dir="$(mktemp -d "${TMPDIR:-/tmp}/zklock-servers.XXXXXX")"
declare -A result
failed=0
run() { # VERSION NAME CLASSPATH COMMAND...
  local version="$1" name="$2" cp="$3" log start status
  shift 3
  log="$log_dir/$version-$name.log"
  start=$(date +%s)
  ZKLOCK_ZK_CLASSPATH="$cp" ZKLOCK_ISOLATION_ROUNDS="$rounds" "$@" >"$log" 2>&1
  status=$?
  if [ $status = 0 ]; then result[$version,$name]="pass ($(($(date +%s) - start)) s)"
  else result[$version,$name]="FAIL ($(($(date +%s) - start)) s)"; failed=1; tail -n 25 "$log" >&2; fi
  echo "test-servers: $version $name: ${result[$version,$name]} (log: $log)"
}
for v in "${versions[@]}"; do
  if ! cp="$(classpath_of "$v")"; then
    for n in conformance isolation one_way; do result[$v,$n]="no server"; done
    result[$v,reported]="-"; failed=1; continue
  fi
  result[$v,reported]="$(reported_version "$cp")"
  if [ "${result[$v,reported]}" != "$v" ]; then
    echo "test-servers: the server started for $v reports ${result[$v,reported]}" >&2; failed=1
  fi
  run "$v" conformance "$cp" "$CARGO" test -q -p zklock --test conformance
  run "$v" isolation "$cp" "$CARGO" test -q -p zklock-trust --test isolation -- --nocapture --test-threads=1
  run "$v" one_way "$cp" "$CARGO" test -q -p zklock-trust --test one_way -- --nocapture --test-threads=1
done
echo
printf '%-8s | %-8s | %-16s | %-16s | %-16s\n' server reports conformance "isolation (${rounds}r)" "one-way (${rounds}r)"
printf '%s\n' "---------|----------|------------------|------------------|-----------------"
for v in "${versions[@]}"; do
  printf '%-8s | %-8s | %-16s | %-16s | %-16s\n' "$v" "${result[$v,reported]}" "${result[$v,conformance]}" \
    "${result[$v,isolation]}" "${result[$v,one_way]}"
done
exit $failed
