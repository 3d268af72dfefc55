#!/usr/bin/env bash
# scripts/zk-versions.sh VERSION...: fetches ZooKeeper server versions other than the system's
# (Debian 12's 3.8.0, which scripts/install-deps.sh installs) from Debian's archive, by name and
# version, for `make test-servers` (issue 53; docs/interop.md, Server versions). Prints, for each
# VERSION, one line `VERSION CLASSPATH`; the harness runs that server when ZKLOCK_ZK_CLASSPATH
# holds the class path (tests/harness/src/jars.rs).
#
# Each version is `libzookeeper-java` of one Debian suite, with the dependency jars of the same
# suite (netty, slf4j, metrics... differ per version). Their jars are Java 8 bytecode, so the
# system's Java runs them. Nothing is installed: a scoped apt configuration (its own
# sources.list, lists and cache under /var/cache/zklock/zk-apt) reads the suites, `apt-get
# download` takes the .debs and `dpkg-deb -x` unpacks them into /var/cache/zklock/zk-VERSION,
# leaving the system's 3.8 alone. A version is fetched once and again only when its package
# version changes.
#
# 3.5, 3.6 and 3.7 are in no suite deb.debian.org serves (bullseye has 3.4.13, bookworm 3.8.0,
# trixie 3.9.3, sid 3.9.6), and Maven Central is out of reach here: docs/interop.md says so.
set -euo pipefail
cache=/var/cache/zklock
apt_dir="$cache/zk-apt"

# version -> "suite package-version"
suite_of() {
  case "$1" in
    3.4.13) echo "bullseye 3.4.13-6+deb11u1" ;;
    3.9.3) echo "trixie 3.9.3-1+deb13u1" ;;
    3.9.6) echo "sid 3.9.6-2" ;;
    *) echo "zk-versions: no Debian suite carries ZooKeeper $1 (known: 3.4.13 3.9.3 3.9.6; 3.8.0 is the system's)" >&2; return 1 ;;
  esac
}

# The packages whose jars the server needs on its class path, per version class, and the jars
# (Debian's unversioned names in /usr/share/java). zookeeper.jar comes last: its manifest's
# Class-Path names the system's /usr/share/java/*.jar (3.8's jute among them), and java searches
# those right after the jar that names them, so every jar of the version must come before it.
# 3.4 has no jute jar, no netty by default (NIO),
# and logs through log4j 1.2.
packages_of() {
  case "$1" in
    3.4.*) echo "libzookeeper-java libslf4j-java liblog4j1.2-java libjline-java" ;;
    *) echo "libzookeeper-java libnetty-java libnetty-buffer-java libnetty-common-java libnetty-tcnative-java libslf4j-java libdropwizard-metrics-java libcommons-cli-java libcommons-io-java libsnappy-java" ;;
  esac
}
jars_of() {
  case "$1" in
    3.4.*) echo "slf4j-api slf4j-simple log4j-1.2 jline zookeeper" ;;
    *) echo "zookeeper-jute netty-handler netty-common netty-buffer netty-transport netty-codec netty-resolver netty-transport-native-epoll netty-transport-native-unix-common slf4j-api slf4j-simple metrics-core commons-cli commons-io snappy-java zookeeper" ;;
  esac
}

apt_opts=(-q -o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=$apt_dir/parts"
  -o "Dir::State::lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" -o "Dir::Etc::preferencesparts=$apt_dir/prefs"
  -o "Acquire::Languages=none")

apt_ready=""
apt_update() {
  [ -n "$apt_ready" ] && return 0
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/parts" "$apt_dir/prefs"
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  printf 'deb [signed-by=%s] http://deb.debian.org/debian %s main\n' \
    "$keyring" bullseye "$keyring" trixie "$keyring" sid >"$apt_dir/sources.list"
  # Fresh lists once a day at most (each suite's Packages is tens of MB).
  if [ -z "$(find "$apt_dir/lists" -maxdepth 1 -name '*_Packages' -mmin -1440 2>/dev/null | head -1)" ]; then
    apt-get "${apt_opts[@]}" update >"$apt_dir/update.log" 2>&1 ||
      { tail -n 20 "$apt_dir/update.log" >&2; echo "zk-versions: apt-get update of bullseye, trixie, sid failed" >&2; exit 1; }
  fi
  apt_ready=1
}

# A jar's real file inside the unpacked root: an absolute symlink points into the root, not at
# the system's /usr/share/java.
resolve() {
  local root="$1" path="$2" target n=0
  while [ -L "$path" ] && [ $n -lt 10 ]; do
    target="$(readlink "$path")"
    case "$target" in /*) path="$root$target" ;; *) path="$(dirname "$path")/$target" ;; esac
    n=$((n + 1))
  done
  [ -e "$path" ] || { echo "zk-versions: $2 points at nothing in $root" >&2; exit 1; }
  readlink -f "$path"
}

fetch() {
  local version="$1" suite pkgver root
  read -r suite pkgver < <(suite_of "$version")
  root="$cache/zk-$version"
  local want="$suite libzookeeper-java=$pkgver $(packages_of "$version")"
  if [ "$(cat "$root/.ready" 2>/dev/null)" != "$want" ]; then
    apt_update
    local debs pkgs=() p
    debs="$(mktemp -d)"; chmod 777 "$debs" # apt-get download writes as _apt
    for p in $(packages_of "$version"); do
      if [ "$p" = libzookeeper-java ]; then
        pkgs+=("libzookeeper-java=$pkgver")
      # A package the suite does not have (sid split netty-buffer and netty-common out of
      # libnetty-java; trixie did not) is left out; a jar missing in the end fails below.
      elif apt-cache "${apt_opts[@]}" madison "$p" 2>/dev/null | grep " $suite/main " >/dev/null; then
        pkgs+=("$p/$suite")
      fi
    done
    (cd "$debs" && apt-get "${apt_opts[@]}" download "${pkgs[@]}" >"$debs/download.log" 2>&1) ||
      { tail -n 20 "$debs/download.log" >&2; echo "zk-versions: apt-get download ${pkgs[*]} failed" >&2; exit 1; }
    rm -rf "$root.new"; mkdir -p "$root.new"
    for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$root.new"; done
    rm -rf "$debs"
    echo "$want" >"$root.new/.ready"
    rm -rf "$root"; mv "$root.new" "$root"
  fi
  local cp="" j path
  for j in $(jars_of "$version"); do
    path="$root/usr/share/java/$j.jar"
    [ -e "$path" ] || { echo "zk-versions: ZooKeeper $version: $j.jar is in none of $(packages_of "$version") of $suite" >&2; exit 1; }
    cp="${cp:+$cp:}$(resolve "$root" "$path")"
  done
  echo "$version $cp"
}

[ $# -gt 0 ] || { echo "usage: scripts/zk-versions.sh VERSION... (3.4.13 3.9.3 3.9.6)" >&2; exit 2; }
for v in "$@"; do fetch "$v"; done
