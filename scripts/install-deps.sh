#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine, only what is missing:
# ZooKeeper 3.8 (server jars), Java, Curator's jars and kazoo for the interop suites, openssl
# for the secured server's certificates, ZooKeeper's C client for the bench's `zkc` limit,
# promtool for monitoring/'s alert rules.
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
# test-dist's old userland, a Debian 11 root (scripts/old-userland.sh).
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
# make test-monitoring: promtool checks and unit-tests monitoring/alerts.yml. Debian ships it in
# `prometheus`, with the server (a service where an init system runs it; only promtool is used).
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
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
# A musl target has no std in Debian: it is built from rust-web-src (the standard library's
# source for the same rustc) with cargo's -Zbuild-std, zig linking musl. So are the Windows and
# macOS ones (issue 36; `make check-reach` type-checks them, scripts/check-reach.sh).
case " ${DIST_TARGETS:-} " in
  *" linux-arm64-"* | *"-musl "* | *" windows-"* | *" macos-"*)
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    for b in rustc rustdoc; do
      if ! dpkg-divert --list "/usr/bin/$b" | grep -q rust-web; then
        $SUDO mkdir -p /usr/lib/rust-web/bin
        $SUDO dpkg-divert --quiet --local --rename --divert "/usr/lib/rust-web/bin/$b" --add "/usr/bin/$b"
      fi
    done
    cross=()
    [ -x /usr/lib/rust-web/bin/rustc ] || cross+=(rustc-web)
    case " $DIST_TARGETS " in *" linux-arm64-"*)
      [ -d /usr/lib/rustlib/aarch64-unknown-linux-gnu/lib ] || cross+=(libstd-rust-web-dev:arm64)
      [ -x /usr/bin/qemu-aarch64-static ] || cross+=(qemu-user-static)
      [ -f /usr/lib/aarch64-linux-gnu/libc.so.6 ] || cross+=(libc6:arm64)
      # strip --strip-debug of libzklock.a: the host's binutils read no aarch64 objects.
      command -v aarch64-linux-gnu-strip >/dev/null || cross+=(binutils-aarch64-linux-gnu) ;;
    esac
    case " $DIST_TARGETS " in *"-musl "* | *" windows-"* | *" macos-"*)
      [ -d /usr/lib/rustlib/src/rust/library ] || cross+=(rust-web-src) ;;
    esac
    # Windows (x86_64-pc-windows-gnu): rustc runs binutils' x86_64-w64-mingw32-dlltool for the
    # raw-dylib imports (windows-link's, pyo3's python3.dll); make dist also makes zklock.dll's
    # mingw import library with it, the MSVC one with llvm-dlltool-14, and zips the C files.
    case " $DIST_TARGETS " in *" windows-x64-gnu "*)
      command -v x86_64-w64-mingw32-dlltool >/dev/null || cross+=(binutils-mingw-w64-x86-64)
      command -v llvm-dlltool-14 >/dev/null || cross+=(llvm-14)
      command -v zip >/dev/null || cross+=(zip) ;;
    esac
    # macOS (Mach-O, issue 36): rustc strips a Mach-O file with rust-objcopy (rust-web-llvm's,
    # llvm-objcopy-22); make dist strips again and test-dist reads every Mach-O file with
    # LLVM 22's otool, nm, readobj and strip (llvm-22; older LLVMs misread the newest load
    # commands).
    case " $DIST_TARGETS " in *" macos-"*)
      [ -x /usr/lib/rustlib/x86_64-unknown-linux-gnu/bin/rust-objcopy ] || cross+=(rust-web-llvm)
      command -v llvm-otool-22 >/dev/null || cross+=(llvm-22) ;;
    esac
    # test-dist runs the musl C tours with musl's dynamic loader, /lib/ld-musl-<arch>.so.1
    # (Debian's musl is Multi-Arch: same; qemu-aarch64-static finds the aarch64 one there).
    case " $DIST_TARGETS " in *" linux-x64-musl "*)
      [ -f /lib/ld-musl-x86_64.so.1 ] || cross+=(musl) ;;
    esac
    case " $DIST_TARGETS " in *" linux-arm64-musl "*)
      [ -f /lib/ld-musl-aarch64.so.1 ] || cross+=(musl:arm64) ;;
    esac
    if [ ${#cross[@]} -gt 0 ]; then
      echo "install-deps: installing ${cross[*]} (DIST_TARGETS: $DIST_TARGETS)"
      case " $DIST_TARGETS " in *" linux-arm64-"*)
        if ! dpkg --print-foreign-architectures | grep -qx arm64; then $SUDO dpkg --add-architecture arm64; fi ;;
      esac
      $SUDO apt-get update -q
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${cross[@]}"
    fi
    ;;
esac

# make test-dist runs the aarch64 wheel and npm addon under qemu-aarch64-static with an arm64
# CPython and Node from Debian: python3.11 and nodejs cannot be installed for arm64 next to
# their amd64 selves (not Multi-Arch: same), so their packages and what they load are unpacked
# with `dpkg-deb -x` into a root of their own, /var/cache/zklock/arm64-root, which qemu's -L
# puts under every absolute path the emulated programs open. Only when the packages' versions
# change is it made again.
case " ${DIST_TARGETS:-} " in
  *" linux-arm64-gnu "*)
    arm64_root=/var/cache/zklock/arm64-root
    arm64_pkgs=(libc6 libgcc-s1 libstdc++6 zlib1g libexpat1 libffi8 python3.11-minimal
      libpython3.11-minimal libpython3.11-stdlib nodejs libnode108 libuv1 libssl3 libc-ares2
      libbrotli1 libnghttp2-14 libicu72)
    all_pkgs=(node-acorn node-cjs-module-lexer node-undici) # Debian's Node loads these from /usr/share/nodejs
    want="$(apt-cache policy "${arm64_pkgs[@]/%/:arm64}" "${all_pkgs[@]}" | awk '/^[^ ]/{p=$1} /Candidate:/{print p, $2}')"
    if [ "$(cat "$arm64_root/.packages" 2>/dev/null)" != "$want" ]; then
      echo "install-deps: unpacking arm64 CPython and Node into $arm64_root (for qemu-aarch64-static -L)"
      SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
      debs="$(mktemp -d)"; chmod 777 "$debs"  # apt-get download writes as _apt
      (cd "$debs" && apt-get download -q "${arm64_pkgs[@]/%/:arm64}" "${all_pkgs[@]}" >/dev/null)
      $SUDO rm -rf "$arm64_root"
      $SUDO mkdir -p "$arm64_root"
      for d in "$debs"/*.deb; do $SUDO dpkg-deb -x "$d" "$arm64_root"; done
      rm -rf "$debs"
      echo "$want" | $SUDO tee "$arm64_root/.packages" >/dev/null
    fi
    ;;
esac
