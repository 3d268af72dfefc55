#!/usr/bin/env bash
# Part of make test-dist (issue 55): the packages of dist/ installed BY NAME from real local
# registries, as a user installs them, with no other source:
#   npm   Verdaccio (from npm; 6.8.0, the newest that runs on Node 20) with no uplink: every
#         platform package and the main package published to it, then `npm install zklock` into a
#         fresh project with an empty cache: npm must choose the platform package of this machine
#         (and none other), `require('zklock')` must load its addon. On a wrong platform npm must
#         refuse the platform package itself (EBADPLATFORM), and `zklock` installed for another
#         CPU must say ZKLOCK_NATIVE_MISSING and name the package it lacks.
#   PyPI  pypiserver (from PyPI, 2.4.2) with --disable-fallback (it never redirects to pypi.org):
#         the wheel and sdist uploaded with twine, then `pip install pyzklock` into a fresh venv
#         with that index alone and --only-binary=:all:, `import zklock`.
# A registry that does not start within 60 s is a failure that prints its log, not a skip.
# The tools are installed once into $CARGO_TARGET_DIR/tools (about 25 s for Verdaccio).
# The last line is `registries: N passed, M failed`.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
dist="$root/dist"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
read -r -a targets <<<"${DIST_TARGETS:-linux-x64-gnu}"
tools="$target_dir/tools"
verdaccio_dir="$tools/verdaccio"
pyreg="$tools/pyreg"
here_key=linux-x64-gnu # this machine: the platform package npm must choose
tmp="$(mktemp -d)"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
passed=0 failed=0
check() { # check NAME COMMAND...
  local name="$1"; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
finish() { echo "registries: $passed passed, $failed failed"; [ "$failed" = 0 ]; exit; }
case " ${targets[*]} " in *" $here_key "*) ;; *)
  echo "registries: DIST_TARGETS (${targets[*]}) has no $here_key package to install here; nothing to do"
  finish ;;
esac
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_up NAME URL LOG PID: up to 60 s for URL to answer, else the log and a failure.
wait_up() {
  local i
  for i in $(seq 1 120); do
    curl -fsS -o /dev/null "$2" 2>/dev/null && return 0
    kill -0 "$4" 2>/dev/null || break
    sleep 0.5
  done
  echo "  $1 did not start (no answer at $2 within 60 s); its log:" >&2
  tail -n 30 "$3" | sed 's/^/    /' >&2
  return 1
}

# --- tools ----------------------------------------------------------------------------------
verdaccio_tool() {
  [ -x "$verdaccio_dir/node_modules/.bin/verdaccio" ] && return 0
  mkdir -p "$verdaccio_dir" &&
    # 6.10 needs Node 22; 6.8.0 runs on Node 20 once node-fetch is held at 2.7.0 (a newer one
    # of its dependencies' ranges breaks its start).
    printf '{ "private": true, "dependencies": { "verdaccio": "6.8.0" }, "overrides": { "node-fetch": "2.7.0" } }\n' \
      >"$verdaccio_dir/package.json" &&
    (cd "$verdaccio_dir" && npm install --no-audit --no-fund --loglevel=error >install.log 2>&1) ||
    { tail -n 20 "$verdaccio_dir/install.log"; return 1; }
}
check "tools: Verdaccio 6.8.0 (npm) in $verdaccio_dir" verdaccio_tool
pyreg_tool() {
  [ -x "$pyreg/bin/pypi-server" ] && [ -x "$pyreg/bin/twine" ] && return 0
  python3 -m venv "$pyreg" && "$pyreg/bin/pip" install -q 'pypiserver==2.4.2' 'twine==7.0.0'
}
check "tools: pypiserver 2.4.2 and twine 7.0.0 (PyPI) in $pyreg" pyreg_tool

# --- npm ------------------------------------------------------------------------------------
npm_port="$(free_port)"
npm_url="http://127.0.0.1:$npm_port/"
npmrc="$tmp/npmrc"
mkdir -p "$tmp/verdaccio/storage"
cat >"$tmp/verdaccio/config.yaml" <<EOF
storage: $tmp/verdaccio/storage
auth:
  htpasswd:
    file: $tmp/verdaccio/htpasswd
    max_users: 1
# No uplinks: a package not published here does not exist (no other source).
uplinks: {}
packages:
  '**':
    access: \$all
    publish: \$authenticated
web:
  enable: false
log: { type: stdout, format: pretty, level: warn }
EOF
npm_registry() {
  node "$verdaccio_dir/node_modules/verdaccio/bin/verdaccio" --config "$tmp/verdaccio/config.yaml" \
    --listen "127.0.0.1:$npm_port" >"$tmp/verdaccio.log" 2>&1 &
  pids+=($!)
  wait_up Verdaccio "${npm_url}-/ping" "$tmp/verdaccio.log" "$!" || return 1
  # A user (Verdaccio's htpasswd plugin registers it) and its token: npm publishes only with one.
  local token
  token="$(curl -fsS -X PUT -H 'content-type: application/json' \
    -d '{"name":"zklock-ci","password":"zklock-ci-local"}' "${npm_url}-/user/org.couchdb.user:zklock-ci" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')" || return 1
  printf 'registry=%s\n//127.0.0.1:%s/:_authToken=%s\naudit=false\nfund=false\nupdate-notifier=false\n' \
    "$npm_url" "$npm_port" "$token" >"$npmrc"
  echo "  Verdaccio on $npm_url"
}
check "npm: Verdaccio starts on loopback (no uplink)" npm_registry
npm_q() { npm --userconfig "$npmrc" --globalconfig /dev/null --registry "$npm_url" --cache "$tmp/npm-cache" "$@"; }

npm_publish() {
  local f
  for f in "$dist"/zklock-*-"$version".tgz "$dist/zklock-$version.tgz"; do
    [ -f "$f" ] || { echo "  missing $f"; return 1; }
    (cd "$tmp" && npm_q publish "$f" >"$tmp/publish.log" 2>&1) || { cat "$tmp/publish.log"; return 1; }
    echo "  published $(basename "$f")"
  done
}
check "npm: the platform packages and zklock published to Verdaccio" npm_publish

npm_by_name() {
  local app="$tmp/app" t0=$SECONDS
  mkdir -p "$app" && (cd "$app" && npm_q init -y >/dev/null && npm_q install zklock >"$tmp/install.log" 2>&1) ||
    { cat "$tmp/install.log"; return 1; }
  echo "  npm install zklock: $((SECONDS - t0)) s"
  local have
  have="$(cd "$app/node_modules" && ls -d zklock zklock-* 2>/dev/null | paste -sd' ')"
  echo "  node_modules: $have"
  [ "$have" = "zklock zklock-$here_key" ] || return 1
  (cd "$app" && node -e '
    const z = require("zklock")
    const addon = require.resolve("zklock-'"$here_key"'/zklock.node")
    if (typeof z.Client !== "function") process.exit(1)
    console.log(`  require("zklock") loaded ${addon.replace(process.cwd() + "/", "")}`)')
}
check "npm: npm install zklock by name into a fresh project chooses zklock-$here_key (and no other) and loads it" npm_by_name

npm_wrong_platform() {
  local app="$tmp/wrong" out
  mkdir -p "$app" && (cd "$app" && npm_q init -y >/dev/null) || return 1
  # The platform package itself on another CPU: npm (running as on arm64, as
  # test-dist-macos.sh fakes darwin; --cpu steers optional dependencies only) refuses it.
  echo "Object.defineProperty(process, 'arch', { value: 'arm64' })" >"$tmp/fake-arm64.cjs"
  out="$(cd "$app" && NODE_OPTIONS="--require $tmp/fake-arm64.cjs" npm_q install "zklock-$here_key" 2>&1)" &&
    { echo "  npm installed zklock-$here_key on arm64"; return 1; }
  grep -q EBADPLATFORM <<<"$out" || { echo "$out"; return 1; }
  echo "  zklock-$here_key on arm64: EBADPLATFORM, $(grep -m1 -o 'Unsupported platform.*' <<<"$out")"
  # zklock for a CPU without a platform package here (--cpu=arm64): installed without an
  # addon, and its require says so, naming the package it lacks.
  (cd "$app" && npm_q install --cpu=arm64 zklock >/dev/null 2>&1) || return 1
  [ ! -e "$app/node_modules/zklock-$here_key" ] || return 1
  out="$(cd "$app" && node -e 'try { require("zklock") } catch (e) { console.log(e.code); console.log(e.message) }')"
  echo "  require(\"zklock\") without its platform package: $(tail -n1 <<<"$out" | cut -c1-160)..."
  [ "$(head -n1 <<<"$out")" = ZKLOCK_NATIVE_MISSING ] && grep -q "zklock-$here_key is not installed" <<<"$out"
}
check "npm: a wrong platform is refused clearly (EBADPLATFORM for the platform package; ZKLOCK_NATIVE_MISSING naming it)" npm_wrong_platform

# --- PyPI -----------------------------------------------------------------------------------
py_port="$(free_port)"
py_url="http://127.0.0.1:$py_port"
py_registry() {
  mkdir -p "$tmp/pypi"
  # -a . -P .: no authentication (loopback, this test only); --disable-fallback: a name it does
  # not have is not sent on to pypi.org.
  "$pyreg/bin/pypi-server" run -i 127.0.0.1 -p "$py_port" -a . -P . --disable-fallback "$tmp/pypi" >"$tmp/pypiserver.log" 2>&1 &
  pids+=($!)
  wait_up pypiserver "$py_url/simple/" "$tmp/pypiserver.log" "$!" && echo "  pypiserver on $py_url"
}
check "PyPI: pypiserver starts on loopback (--disable-fallback)" py_registry
py_upload() {
  local files=("$dist"/pyzklock-"$version"-*.whl "$dist/pyzklock-$version.tar.gz")
  "$pyreg/bin/twine" upload --non-interactive --disable-progress-bar --repository-url "$py_url/" -u zklock-ci -p local \
    "${files[@]}" >"$tmp/twine.log" 2>&1 || { cat "$tmp/twine.log"; return 1; }
  echo "  uploaded $(curl -fsS "$py_url/simple/pyzklock/" | grep -o 'pyzklock-[^"#<]*' | sort -u | paste -sd' ')"
}
check "PyPI: the wheels and the sdist uploaded with twine" py_upload
py_by_name() {
  local venv="$tmp/venv" t0
  python3 -m venv "$venv" || return 1
  t0=$SECONDS
  PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install -q --no-cache-dir \
    --index-url "$py_url/simple/" --only-binary=:all: pyzklock || return 1
  echo "  pip install pyzklock: $((SECONDS - t0)) s; $("$venv/bin/pip" list 2>/dev/null | grep -i zklock)"
  "$venv/bin/python" -c 'import zklock, sys; print("  import zklock:", zklock.__version__); sys.exit(zklock.__version__ != sys.argv[1])' "$version"
}
check "PyPI: pip install pyzklock by name into a fresh venv from that index alone (wheel), import zklock" py_by_name

finish
