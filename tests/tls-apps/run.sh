#!/usr/bin/env bash
# zklock beside an application's own rustls (issue 51): each application of this folder is built
# alone (its own features, not unified with the other's or with zklock's workspace), then run
# against a TLS ZooKeeper of `zk-harness --secure`. Both build aws-lc-rs (aws-lc-sys: C, built
# by the cc crate, no cmake), once, in one target folder they share.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
CARGO="${CARGO:-cargo}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

apps=(tls-app-rustls-default tls-app-aws-lc-only)
for app in "${apps[@]}"; do
  echo "tls-apps: building $app"
  CARGO_TARGET_DIR="$target_dir/tls-apps" "$CARGO" build -q --locked \
    --manifest-path "$here/Cargo.toml" -p "$app"
  # Neither application asked for ring: zklock must not have brought it (and with it rustls'
  # `ring` feature beside the application's aws-lc-rs).
  # (With --locked, a zklock that needs ring also fails the build above: Cargo.lock lists no
  # ring.)
  tree="$("$CARGO" tree -q --locked --manifest-path "$here/Cargo.toml" -p "$app" -e normal \
    --prefix none)"
  if grep -q '^ring ' <<<"$tree"; then
    echo "tls-apps: $app links ring, which it did not ask for" >&2
    exit 1
  fi
done

(cd "$root" && "$CARGO" build -q -p zklock-testkit --bin zk-harness)
coproc SECURE { "$target_dir/debug/zk-harness" --secure; }
tls_servers="" tls_ca=""
while read -r line <&"${SECURE[0]}"; do
  case "$line" in
    tls_servers=*) tls_servers="${line#tls_servers=}" ;;
    tls_ca=*) tls_ca="${line#tls_ca=}" ;;
    sasl_users=*) break ;;
  esac
done
if [ -z "$tls_servers" ] || [ -z "$tls_ca" ]; then
  echo "tls-apps: zk-harness --secure gave no TLS port or CA" >&2
  exit 1
fi
status=0
for app in "${apps[@]}"; do
  ZKLOCK_TLS_SERVERS="$tls_servers" ZKLOCK_TLS_CA="$tls_ca" \
    "$target_dir/tls-apps/debug/$app" || { echo "tls-apps: $app failed" >&2; status=1; }
done
exec {SECURE[1]}>&-
wait "$SECURE_PID" 2>/dev/null || true
exit "$status"
