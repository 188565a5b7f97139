/* bcryptprimitives.dll for Wine 8, which lacks ProcessPrng: Go 1.24+ runtimes load it from
 * bcryptprimitives.dll at start-up. A test-harness shim, never shipped: it forwards to
 * RtlGenRandom (advapi32!SystemFunction036). Build:
 *   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll processprng.c processprng.def -ladvapi32
 * (make test-windows does)
 * and run with WINEDLLOVERRIDES=bcryptprimitives=n and the DLL in the prefix's system32. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
