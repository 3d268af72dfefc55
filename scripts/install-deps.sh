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
