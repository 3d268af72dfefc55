#!/usr/bin/env python3
"""macho-signature.py FILE...: checks each thin 64-bit Mach-O file's embedded code signature as
macOS does for an ad-hoc one: the CodeDirectory's hash of every code page (up to its code limit)
and of the requirements blob must match the file's bytes. Prints the identifier and flags; exits
1 on a missing or broken signature.

Why not `rcodesign verify`: for an ad-hoc signature (an empty CMS blob, as Apple's codesign also
writes) it reports "CMS error: missing further values" and fails, however valid the hashes are
(it says itself that it "is known to be buggy")."""
import hashlib
import struct
import sys

LC_CODE_SIGNATURE = 0x1D
CSMAGIC_EMBEDDED_SIGNATURE, CSMAGIC_CODEDIRECTORY, CSMAGIC_REQUIREMENTS = 0xFADE0CC0, 0xFADE0C02, 0xFADE0C01
HASHES = {1: hashlib.sha1, 2: hashlib.sha256}
FLAGS = {0x2: "adhoc", 0x20000: "linker-signed", 0x10000: "runtime"}


def check(path):
    data = open(path, "rb").read()
    magic, _cpu, _sub, _kind, ncmds, _size, _flags, _res = struct.unpack_from("<IiiIIIII", data, 0)
    if magic != 0xFEEDFACF:
        return f"not a thin 64-bit Mach-O file (magic {magic:#x})"
    off, sig = 32, None
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, off)
        if cmd == LC_CODE_SIGNATURE:
            sig = struct.unpack_from("<II", data, off + 8)
        off += size
    if sig is None:
        return "no code signature (LC_CODE_SIGNATURE)"
    base, _ = sig
    smagic, _slen, count = struct.unpack_from(">III", data, base)
    if smagic != CSMAGIC_EMBEDDED_SIGNATURE:
        return f"the signature is not an embedded signature superblob ({smagic:#x})"
    blobs = {}
    for i in range(count):
        slot, boff = struct.unpack_from(">II", data, base + 12 + 8 * i)
        bmagic, blen = struct.unpack_from(">II", data, base + boff)
        blobs[slot] = (bmagic, data[base + boff:base + boff + blen])
    if 0 not in blobs or blobs[0][0] != CSMAGIC_CODEDIRECTORY:
        return "no CodeDirectory"
    cd = blobs[0][1]
    (_m, _l, _version, flags, hash_off, ident_off, n_special, n_code, code_limit, hash_size,
     hash_type, _platform, page_shift) = struct.unpack_from(">IIIIIIIIIBBBB", cd, 0)
    if hash_type not in HASHES:
        return f"unknown hash type {hash_type}"
    h = HASHES[hash_type]
    page = 1 << page_shift
    if code_limit != base:
        return f"the code limit {code_limit} is not where the signature starts ({base})"
    if n_code != (code_limit + page - 1) // page:
        return f"{n_code} page hashes for {code_limit} bytes"
    for i in range(n_code):
        want = cd[hash_off + i * hash_size:hash_off + (i + 1) * hash_size]
        got = h(data[i * page:min((i + 1) * page, code_limit)]).digest()[:hash_size]
        if want != got:
            return f"page {i} (bytes {i * page}..) does not match its hash: the file changed after signing"
    # Special slots sit before hash_off, slot n at hash_off - n * hash_size; 2 = requirements.
    if n_special >= 2 and 2 in blobs:
        want = cd[hash_off - 2 * hash_size:hash_off - hash_size]
        if want != h(blobs[2][1]).digest()[:hash_size]:
            return "the requirements blob does not match its hash"
    ident = cd[ident_off:cd.index(b"\0", ident_off)].decode()
    names = [n for bit, n in FLAGS.items() if flags & bit] or ["none"]
    return None, f"{ident}, {'+'.join(names)}, {n_code} pages of {page} bytes match ({h().name})"


bad = 0
for path in sys.argv[1:]:
    result = check(path)
    if isinstance(result, str):
        print(f"{path}: {result}")
        bad = 1
    else:
        print(f"{path}: signature valid: {result[1]}")
sys.exit(bad)
