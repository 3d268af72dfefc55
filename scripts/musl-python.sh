#!/usr/bin/env bash
# scripts/musl-python.sh ARCH ZIG_PYTHON: makes /var/cache/zklock/musl-python-ARCH, a CPython 3.11
# for ARCH-linux-musl (x86_64 or aarch64), for make test-dist with a musl target: no archive this
# machine reaches has a musl CPython (Alpine's packages are in none of them), so the musllinux
# wheel's module would otherwise be checked by its tags and never run.
#
# The source is Debian 12's (python3.11's orig tarball from deb.debian.org, its SHA-256 as
# Debian's Sources index gives it), cross-compiled by zig (ZIG_PYTHON: the Python whose
# `-m ziglang` runs zig, make dist's target/dist-venv/bin/python3) with Debian's own
# python3.11 as the build Python (3.11.2, the same version). The interpreter is dynamically
# linked against musl's libc.so, as Alpine's is: a statically linked one could not load
# extension modules. Debian's musl loader (/lib/ld-musl-ARCH.so.1; aarch64 under
# qemu-aarch64-static) runs it. Modules that need libraries musl has no headers for here (zlib,
# ssl, ffi...) are left out; the tour needs none of them. About 10 minutes per architecture on
# two cores (zig is slow at configure's probes), once: it is made again only when this script's
# inputs change.
set -euo pipefail
arch="${1:?usage: musl-python.sh x86_64|aarch64 ZIG_PYTHON}" zig_python="${2:?usage: musl-python.sh ARCH ZIG_PYTHON}"
case "$arch" in x86_64 | aarch64) ;; *) echo "musl-python: unknown architecture $arch" >&2; exit 1 ;; esac
cache=/var/cache/zklock
dest="$cache/musl-python-$arch"
orig=python3.11_3.11.2.orig.tar.gz
sha256=2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849
# (this script's own hash: a change to the recipe builds it again)
want="$orig $sha256 zig $("$zig_python" -m ziglang version) $(sha256sum <"$0" | cut -c1-16)"
[ "$(cat "$dest/.ready" 2>/dev/null)" = "$want" ] && exit 0
mkdir -p "$cache"
exec 9>"$cache/musl-python-$arch.lock"
flock 9  # one build at a time; a call that waited finds it ready
[ "$(cat "$dest/.ready" 2>/dev/null)" = "$want" ] && exit 0
[ -x /usr/bin/python3.11 ] || { echo "musl-python: needs Debian's python3.11 as the build Python" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/musl-python.XXXXXX")"
trap 'rm -rf "$work"' EXIT
if ! echo "$sha256  $cache/$orig" | sha256sum --quiet -c >/dev/null 2>&1; then
  echo "musl-python: fetching $orig (deb.debian.org)"
  curl -fsS --max-time 600 -o "$cache/$orig.part" "http://deb.debian.org/debian/pool/main/p/python3.11/$orig"
  echo "$sha256  $cache/$orig.part" | sha256sum --quiet -c || { echo "musl-python: $orig: SHA-256 mismatch" >&2; exit 1; }
  mv "$cache/$orig.part" "$cache/$orig"
fi
tar -C "$work" -xzf "$cache/$orig"

# The compiler: zig cc for the target, dynamic, and without zig's -Werror=date-time (CPython's
# build info expands __DATE__). setup.py asks the compiler for its header search list
# (`cc -E -v -`) and adds what it hears to every module's -I; zig answers that probe with the
# host's glibc directories (/usr/include...), whose headers then redirect ioctl to glibc's
# __ioctl_time64, which musl has not: the wrapper answers with an empty list.
mkdir -p "$work/bin"
printf '#!/bin/sh\ncase " $* " in *" -E -v - "*) exit 0 ;; esac\nexec %s -m ziglang cc -target %s-linux-musl -dynamic -Wno-error=date-time "$@"\n' \
  "$zig_python" "$arch" >"$work/bin/cc"
printf '#!/bin/sh\nexec %s -m ziglang %s "$@"\n' "$zig_python" ar >"$work/bin/ar"
printf '#!/bin/sh\nexec %s -m ziglang %s "$@"\n' "$zig_python" ranlib >"$work/bin/ranlib"
chmod +x "$work/bin/"*
# What configure cannot probe when cross-compiling; and preadv2/pwritev2, which zig's musl
# headers (1.2.5) declare but Debian's musl 1.2.3 loader does not have.
printf '%s\n' ac_cv_file__dev_ptmx=yes ac_cv_file__dev_ptc=no ac_cv_buggy_getaddrinfo=no \
  ac_cv_func_preadv2=no ac_cv_func_pwritev2=no >"$work/config.site"

echo "musl-python: building CPython 3.11.2 for $arch-linux-musl into $dest (log: $cache/musl-python-$arch.log)"
mkdir -p "$work/build"
(
  cd "$work/build"
  CONFIG_SITE="$work/config.site" CC="$work/bin/cc" AR="$work/bin/ar" RANLIB="$work/bin/ranlib" READELF=/usr/bin/readelf \
    "$work/Python-3.11.2/configure" --host="$arch-linux-musl" --build=x86_64-pc-linux-gnu \
    --with-build-python=/usr/bin/python3.11 --prefix=/usr/local --without-ensurepip --disable-test-modules &&
    make -j"$(nproc)" && make install DESTDIR="$work/root"
) >"$cache/musl-python-$arch.log" 2>&1 || { tail -n 20 "$cache/musl-python-$arch.log" >&2; echo "musl-python: the build failed" >&2; exit 1; }

rm -rf "$dest"
mv "$work/root/usr/local" "$dest"
echo "$want" >"$dest/.ready"
echo "musl-python: $dest/bin/python3.11 ready"
