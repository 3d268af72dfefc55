#!/usr/bin/env bash
# Keeps the README's tour honest: every snippet in docs/tour/ (and core/examples/tour.rs) must
# appear in README.md verbatim, and each one runs against a real ZooKeeper here. Needs the faces
# built (tests/ci-test.sh runs this after building them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
CARGO="${CARGO:-cargo}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
passed=0; failed=0
check() { # check NAME COMMAND...
  local name="$1"; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
in_readme() { python3 - "$1" <<'PY'
import sys
snippet = open(sys.argv[1]).read().strip("\n")
readme = open("README.md").read()
sys.exit(0 if snippet in readme else 1)
PY
}
for f in docs/tour/tour.py docs/tour/tour.mjs docs/tour/tour.c docs/tour/tour.sh; do
  check "README shows $f verbatim" in_readme "$f"
done
# The Rust snippet is the body of main() in core/examples/tour.rs.
rust_body="$(mktemp)"; sed -n '/^async fn main/,/^}/p' core/examples/tour.rs | sed '1d;$d' | sed 's/^    //' > "$rust_body"
check "README shows core/examples/tour.rs verbatim" in_readme "$rust_body"
# A snippet that must also be in a face's own README ("Secure ZooKeeper", "Observing locks").
in_file() { python3 - "$1" "$2" <<'PY'
import sys
snippet = open(sys.argv[1]).read().strip("\n")
sys.exit(0 if snippet in open(sys.argv[2]).read() else 1)
PY
}
in_readmes() { # in_readmes SNIPPET FACE_README
  in_readme "$1" && in_file "$1" "$2"
}
secure_body="$(mktemp)"; sed -n '/^async fn main/,/^}/p' core/examples/secure.rs | sed '1d;$d' | sed 's/^    //' > "$secure_body"
check "README shows core/examples/secure.rs verbatim" in_readme "$secure_body"
for pair in secure.py:bindings-python secure.mjs:bindings-node secure.c:bindings-c secure.sh:cli; do
  f="docs/tour/${pair%%:*}"; face="${pair#*:}"
  check "README shows $f verbatim" in_readme "$f"
  check "$face/README.md shows $f verbatim" in_file "$f" "$face/README.md"
done

elect_rust="$(mktemp)"; sed -n '/^async fn main/,/^}/p' core/examples/elect.rs | sed '1d;$d' | sed 's/^    //' > "$elect_rust"
check "README shows core/examples/elect.rs verbatim" in_readme "$elect_rust"
observe_rust="$(mktemp)"; sed -n '/^async fn main/,/^}/p' core/examples/observe.rs | sed '1d;$d' | sed 's/^    //' > "$observe_rust"
check "README shows core/examples/observe.rs verbatim" in_readme "$observe_rust"
check "README and bindings-python/README.md show docs/tour/observe.py" in_readmes docs/tour/observe.py bindings-python/README.md
check "README and bindings-node/README.md show docs/tour/observe.mjs" in_readmes docs/tour/observe.mjs bindings-node/README.md
check "README and bindings-c/README.md show docs/tour/observe.c" in_readmes docs/tour/observe.c bindings-c/README.md
check "README and cli/README.md show docs/tour/observe.sh" in_readmes docs/tour/observe.sh cli/README.md

"$CARGO" build -q -p zklock-testkit --bin zk-harness
"$CARGO" build -q -p zklock --example tour --example secure --example observe --example elect
"$CARGO" build -q -p zklock-cli --bin zklock
coproc HARNESS { "$target_dir/debug/zk-harness"; }
read -r line <&"${HARNESS[0]}"
export ZKLOCK_SERVERS="${line#servers=}"
trap 'exec {HARNESS[1]}>&-; wait' EXIT

tmp="$(mktemp -d)"
venv="${ZKLOCK_PY_VENV:-$target_dir/py-venv}"
check "tour.rs runs" "$target_dir/debug/examples/tour"
check "tour.py runs" "$venv/bin/python" docs/tour/tour.py
mkdir -p "$tmp/node_modules" && ln -s "$root/bindings-node" "$tmp/node_modules/zklock" && cp docs/tour/tour.mjs "$tmp/"
check "tour.mjs runs" node "$tmp/tour.mjs"
make -s -C bindings-c build PROFILE=debug >/dev/null
check "tour.c builds" cc -std=c11 -Wall -Werror -I include docs/tour/tour.c -o "$tmp/tour" -L "$target_dir/zklock-c/debug" -lzklock -Wl,-rpath,"$target_dir/zklock-c/debug"
check "tour.c runs" "$tmp/tour"
check "tour.sh runs" env PATH="$target_dir/debug:$PATH" bash -c 'set -e; source docs/tour/tour.sh'
check "observe.rs runs" "$target_dir/debug/examples/observe"
check "elect.rs runs" "$target_dir/debug/examples/elect"
check "observe.py runs" "$venv/bin/python" docs/tour/observe.py
cp docs/tour/observe.mjs "$tmp/"
check "observe.mjs runs" node "$tmp/observe.mjs"
check "observe.c builds" cc -std=c11 -Wall -Werror -I include docs/tour/observe.c -o "$tmp/observe" -L "$target_dir/zklock-c/debug" -lzklock -Wl,-rpath,"$target_dir/zklock-c/debug"
check "observe.c runs" "$tmp/observe"
check "observe.sh runs" env PATH="$target_dir/debug:$PATH" bash -c 'set -e; source docs/tour/observe.sh'

# The secure snippets against the harness's secured ZooKeeper (TLS port, SASL user alice).
mkfifo "$tmp/secure-ctl"
"$target_dir/debug/zk-harness" --secure <"$tmp/secure-ctl" >"$tmp/secure.out" 2>"$tmp/secure.err" &
secure_pid=$!
exec {secure_ctl}>"$tmp/secure-ctl"
for _ in $(seq 1 1200); do
  grep -q '^sasl_users=' "$tmp/secure.out" 2>/dev/null && break
  kill -0 "$secure_pid" 2>/dev/null || break
  sleep 0.1
done
if grep -q '^sasl_users=' "$tmp/secure.out"; then
  users="$(sed -n 's/^sasl_users=//p' "$tmp/secure.out")"; alice="${users%%,*}"
  secure_env=(env ZKLOCK_SERVERS="$(sed -n 's/^tls_servers=//p' "$tmp/secure.out")"
    ZKLOCK_TLS_CA="$(sed -n 's/^tls_ca=//p' "$tmp/secure.out")"
    ZKLOCK_SASL_USER="${alice%%:*}" ZKLOCK_SASL_PASSWORD="${alice#*:}")
  check "secure.rs runs" "${secure_env[@]}" "$target_dir/debug/examples/secure"
  check "secure.py runs" "${secure_env[@]}" "$venv/bin/python" docs/tour/secure.py
  cp docs/tour/secure.mjs "$tmp/"
  check "secure.mjs runs" "${secure_env[@]}" node "$tmp/secure.mjs"
  check "secure.c builds" cc -std=c11 -Wall -Werror -I include docs/tour/secure.c -o "$tmp/secure" -L "$target_dir/zklock-c/debug" -lzklock -Wl,-rpath,"$target_dir/zklock-c/debug"
  check "secure.c runs" "${secure_env[@]}" "$tmp/secure"
  check "secure.sh runs" "${secure_env[@]}" PATH="$target_dir/debug:$PATH" bash -c 'set -e; source docs/tour/secure.sh'
else
  echo "FAIL the secured ZooKeeper did not start (zk-harness --secure):"; cat "$tmp/secure.err"
  failed=$((failed + 1))
fi
exec {secure_ctl}>&-
wait "$secure_pid" || true
rm -rf "$tmp" "$rust_body" "$secure_body" "$observe_rust" "$elect_rust"
echo "readme: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
