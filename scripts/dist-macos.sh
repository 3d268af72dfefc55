# scripts/dist.sh's macOS part (issue 36), sourced by it: rcodesign, the Mach-O files' stripping
# and ad-hoc signing, the wheel and the C tarball of a macos-* target. Uses dist.sh's variables
# (root, target_dir, venv, stage, dist, version, and target_vars' triple, arch, out, ctar,
# macos_min, lib_env, build_std, cur).
#
# Why strip and sign here: arm64 macOS runs no code without a valid signature, and the
# signature zig's linker writes (ad hoc, "linker-signed") covers the bytes as linked: a strip
# after it (rustc's own, for the `dist` profile's strip = "symbols") leaves a signature that no
# longer matches. So each file is stripped once more (a no-op when rustc's strip was complete),
# then signed ad hoc by rcodesign, then checked (scripts/macho-signature.py). x86_64 macOS runs
# unsigned code, and its files stay unsigned: zig reserves room for a signature's load command
# on arm64 only (ziglang/zig#17000), so rcodesign finds none ("insufficient room to write code
# signature load command"); -Wl,-headerpad would make it, at the price of a rebuild.

# rcodesign from crates.io (apple-codesign, its default feature `notarize` off: no network
# client is needed to sign ad hoc), built once into target/tools with the host's cargo.
RCODESIGN_VERSION=0.29.0
rcodesign="$target_dir/tools/bin/rcodesign"
rcodesign_ready() {
  if ! "$rcodesign" --version 2>/dev/null | grep -q " $RCODESIGN_VERSION"; then
    echo "   building rcodesign $RCODESIGN_VERSION (crates.io apple-codesign, --no-default-features) into $target_dir/tools"
    cargo install -q --locked --no-default-features apple-codesign --version "$RCODESIGN_VERSION" \
      --root "$target_dir/tools" || return 1
  fi
  command -v llvm-strip-22 >/dev/null || { echo "dist: llvm-strip-22 is missing (scripts/install-deps.sh installs llvm-22 for macos-* targets)" >&2; return 1; }
  echo "   $("$rcodesign" --version), $(llvm-strip-22 --version | sed -n 's/.*LLVM version \(.*\)/llvm-strip \1/p')"
}

# macho_sign SRC DEST IDENTIFIER: DEST a stripped copy of SRC, signed ad hoc under IDENTIFIER
# (the name it is installed under); the signature checked (every page's hash).
macho_sign() {
  local src="$1" dest="$2" ident="$3"
  mkdir -p "$(dirname "$dest")"
  install -m 755 "$src" "$dest"
  if llvm-otool-22 -hv "$dest" | grep -q ' EXECUTE '; then
    llvm-strip-22 "$dest"
  else
    llvm-strip-22 -x "$dest" # a library: its exported symbols stay
  fi
  [ "$arch" = arm64 ] || return 0
  "$rcodesign" sign --binary-identifier "$ident" "$dest" >"$stage/rcodesign.log" 2>&1 ||
    { cat "$stage/rcodesign.log" >&2; return 1; }
  # Not `rcodesign verify`: it fails every ad-hoc signature (scripts/macho-signature.py says why).
  "$root/scripts/macho-signature.py" "$dest" >"$stage/rcodesign.log" ||
    { cat "$stage/rcodesign.log" >&2; return 1; }
}

# The wheel: maturin --zig (cargo-zigbuild; no target Python, abi3), its tag from
# MACOSX_DEPLOYMENT_TARGET; then the module inside stripped and signed, and RECORD's line for it
# rewritten (its sha256 and size), as the wheel format requires.
python_wheel_macos() {
  local tmpd="$stage/wheel-$cur" want="macosx_${macos_min/./_}_$arch"
  rm -rf "$tmpd" && mkdir -p "$tmpd"
  "${lib_env[@]}" "$venv/bin/maturin" build --quiet --locked --profile dist --zig \
    --target "$triple" "${build_std[@]}" -m bindings-python/Cargo.toml -o "$tmpd"
  local whl
  whl="$(ls "$tmpd"/pyzklock-"$version"-cp39-abi3-*.whl)"
  [ "$(basename "$whl")" = "pyzklock-$version-cp39-abi3-$want.whl" ] ||
    { echo "dist: maturin wrote $(basename "$whl"), not the tag $want" >&2; return 1; }
  local member=zklock/_zklock.abi3.so
  python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
    "$whl" "$member" >"$tmpd/module.so"
  macho_sign "$tmpd/module.so" "$tmpd/signed.so" _zklock.abi3.so
  python3 - "$whl" "$dist/$(basename "$whl")" "$member" "$tmpd/signed.so" <<'PY'
import base64, hashlib, sys, zipfile
src, dest, member, new = sys.argv[1:]
data = open(new, "rb").read()
digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
    for info in zin.infolist():
        body = zin.read(info)
        if info.filename == member:
            body = data
        elif info.filename.endswith(".dist-info/RECORD"):
            lines = [f"{member},sha256={digest},{len(data)}" if l.split(",")[0] == member else l
                     for l in body.decode().splitlines()]
            body = ("\n".join(lines) + "\n").encode()
        zout.writestr(info, body)
PY
  echo "   $(basename "$whl") (module stripped and signed ad hoc)"
}

# The C tarball, laid out as a prefix: lib/libzklock.0.dylib (install name
# @rpath/libzklock.0.dylib) and its link name libzklock.dylib, lib/libzklock.a,
# lib/pkgconfig/zklock.pc, include/, bin/zklock.
c_tarball_macos() {
  local dir="$stage/$ctar"
  install -d "$dir/lib/pkgconfig" "$dir/include" "$dir/bin"
  macho_sign "$out/libzklock_c.dylib" "$dir/lib/libzklock.0.dylib" libzklock.0.dylib
  ln -s libzklock.0.dylib "$dir/lib/libzklock.dylib"
  install -m 644 "$out/libzklock_c.a" "$dir/lib/libzklock.a"
  llvm-strip-22 --strip-debug "$dir/lib/libzklock.a"
  macho_sign "$out/zklock" "$dir/bin/zklock" zklock
  install -m 644 include/zklock.h include/zklock.hpp "$dir/include/"
  # A static link needs what the standard library (libSystem) and the libc crate (libiconv)
  # link; both are in every macOS.
  sed -e "s|@PREFIX@|\${pcfiledir}/../..|g" -e "s|@VERSION@|$version|g" \
    -e 's|^Libs.private: .*|Libs.private: -liconv -lSystem|' \
    -e '/^# What libzklock.a needs/,/^# libzklock.a for/d' bindings-c/zklock.pc.in >"$dir/lib/pkgconfig/zklock.pc"
  cp bindings-c/README.md "$dir/README.md"
  cp LICENSE "$dir/LICENSE"
  tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$dist/$ctar.tar.gz" "$ctar"
}
