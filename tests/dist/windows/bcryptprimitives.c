/* bcryptprimitives.c: a stand-in for Windows' bcryptprimitives.dll, for Wine 8.0 only (Debian
 * 12's), which lacks it. Rust's standard library takes its random bytes (HashMap seeds) from
 * ProcessPrng in bcryptprimitives.dll, which every Windows 10 and newer has; a program or DLL
 * built by Rust >= 1.78 does not load under a Wine without it.
 * tests/dist/test-dist-reach.sh builds this with zig cc into its own Wine prefix's system32; it
 * is never shipped. RtlGenRandom (advapi32's SystemFunction036) gives the bytes. */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!RtlGenRandom(data, n)) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
