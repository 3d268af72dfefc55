#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine, only what is missing:
# ZooKeeper 3.8 (server jars), Java, Curator's jars and kazoo for the interop suites, openssl
# for the secured server's certificates, ZooKeeper's C client for the bench's `zkc` limit.
set -euo pipefail
need=()
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
[ -f /usr/share/java/curator-recipes.jar ] || need+=(libcurator-recipes-java)
[ -d /usr/lib/python3/dist-packages/kazoo ] || need+=(python3-kazoo)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
# The secured test ZooKeeper makes its certificates with openssl (tests/harness/src/secure.rs).
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# The bench's second raw limit, `zkc` (bench/c/zkc_worker.c): zookeeper/zookeeper.h, -lzookeeper_mt.
[ -f /usr/include/zookeeper/zookeeper.h ] || need+=(libzookeeper-mt-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# make dist DIST_TARGETS='... linux-arm64-gnu ...' (docs/packaging.md, Targets): rustup's downloads
# are out of reach here, so a cross target's Rust standard library comes from Debian: rustc-web
# (an x86_64 rustc 1.96, sysroot /usr) with libstd-rust-web-dev of the target's architecture
# (Multi-Arch: same, in /usr/lib/rustlib/<triple>/, so dpkg needs that architecture added), and
# qemu-user-static with the architecture's libc6 to run what was built. Debian's rustc and rustdoc
# are diverted from /usr/bin to /usr/lib/rust-web/bin (dpkg-divert, before they are installed):
# in /usr/bin they would shadow nothing (rustup's ~/.cargo/bin comes first) but would take
# /usr/bin out of test-dist's clean room, which drops every PATH entry holding a rustc.
# The musl targets need a musl std, which no Debian package ships: see docs/packaging.md.
case " ${DIST_TARGETS:-} " in
  *" linux-arm64-gnu "*)
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    for b in rustc rustdoc; do
      if ! dpkg-divert --list "/usr/bin/$b" | grep -q rust-web; then
        $SUDO mkdir -p /usr/lib/rust-web/bin
        $SUDO dpkg-divert --quiet --local --rename --divert "/usr/lib/rust-web/bin/$b" --add "/usr/bin/$b"
      fi
    done
    cross=()
    [ -x /usr/lib/rust-web/bin/rustc ] || cross+=(rustc-web)
    [ -d /usr/lib/rustlib/aarch64-unknown-linux-gnu/lib ] || cross+=(libstd-rust-web-dev:arm64)
    [ -x /usr/bin/qemu-aarch64-static ] || cross+=(qemu-user-static)
    [ -f /usr/lib/aarch64-linux-gnu/libc.so.6 ] || cross+=(libc6:arm64)
    if [ ${#cross[@]} -gt 0 ]; then
      echo "install-deps: installing ${cross[*]} (DIST_TARGETS: linux-arm64-gnu)"
      if ! dpkg --print-foreign-architectures | grep -qx arm64; then $SUDO dpkg --add-architecture arm64; fi
      $SUDO apt-get update -q
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${cross[@]}"
    fi
    ;;
esac
