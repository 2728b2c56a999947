# cython: language_level=3
"""The ISA levels this CPU can run (docs/build.md §1), for q7emu.kernels.extension's dispatch.

Compiled at the portable baseline, like every non-kernel module, so it can be imported on any x86-64 CPU.
A level counts when CPUID reports every feature its compile flags let the compiler use and the OS saves
the register state (GCC / Clang ``__builtin_cpu_supports`` checks XGETBV), so under
``qemu-x86_64 -cpu Haswell`` only ``generic`` and ``avx2`` count. Other compilers and CPUs: ``generic`` only.

Also zlib's CRC-32 of large buffers folded with carry-less multiplies (:func:`crc32`, PCLMULQDQ), which the case
reader uses for its members' checks (q7emu.fileio.use_crc32, docs/limits.md §1).
"""
import zlib

from libc.stdint cimport uint8_t, uint32_t

cdef extern from *:
    """
    #if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    #define Q7_CPU_HAS(f) (__builtin_cpu_supports(f) != 0)
    static int q7_cpu_avx2(void) {
        __builtin_cpu_init();
        /* -march=x86-64-v3 */
        return Q7_CPU_HAS("avx") && Q7_CPU_HAS("avx2") && Q7_CPU_HAS("fma") && Q7_CPU_HAS("bmi")
            && Q7_CPU_HAS("bmi2") && Q7_CPU_HAS("f16c") && Q7_CPU_HAS("movbe") && Q7_CPU_HAS("popcnt")
            && Q7_CPU_HAS("sse4.2");
    }
    static int q7_cpu_avx512(void) {
        /* -march=x86-64-v4 -mavx512vbmi */
        return q7_cpu_avx2() && Q7_CPU_HAS("avx512f") && Q7_CPU_HAS("avx512bw") && Q7_CPU_HAS("avx512cd")
            && Q7_CPU_HAS("avx512dq") && Q7_CPU_HAS("avx512vl") && Q7_CPU_HAS("avx512vbmi");
    }
    #define Q7_CPU_DETECTS 1
    #else
    static int q7_cpu_avx2(void) { return 0; }
    static int q7_cpu_avx512(void) { return 0; }
    #define Q7_CPU_DETECTS 0
    #endif
    """
    int q7_cpu_avx2() nogil
    int q7_cpu_avx512() nogil
    int Q7_CPU_DETECTS


def levels() -> tuple:
    """The ISA levels this CPU supports, lowest first: ``("generic",)``, ``(..., "avx2")``,
    ``(..., "avx2", "avx512")``."""
    out = ["generic"]
    if q7_cpu_avx2():
        out.append("avx2")
    if q7_cpu_avx512():
        out.append("avx512")
    return tuple(out)


def detects() -> bool:
    """Whether this build can detect levels above ``generic`` (GCC or Clang on x86)."""
    return bool(Q7_CPU_DETECTS)


cdef extern from *:
    """
    #include <stddef.h>
    #include <stdint.h>
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    #include <immintrin.h>
    /* zlib's CRC-32 (the reflected polynomial 0xEDB88320) folded 64 bytes at a time with PCLMULQDQ: four 128-bit
       accumulators, each multiplied by x^(512+64) and x^512 mod P (reflected: 0x154442bd4, 0x1c6e41596) and added
       to the next 64 bytes; then folded into one by 128 bits (0x1751997d0, 0x0ccaa009e). The 16 bytes left are
       congruent mod P to the message they stand for, ending where it ends, so their CRC (and that of the bytes
       after them) is the message's: the caller finishes with zlib (crc32 below). Returns the bytes folded, a
       multiple of 64, or 0 (fewer than 64 bytes, or no PCLMULQDQ). */
    __attribute__((target("pclmul,sse2")))
    static __m128i q7_crc_fold(__m128i x, __m128i k) {
        return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
    }
    static int q7_crc_has_pclmul(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("pclmul") != 0;
    }
    __attribute__((target("pclmul,sse2")))
    static size_t q7_crc32_fold(const uint8_t *p, size_t n, uint32_t value, uint8_t *out16) {
        __m128i x0, x1, x2, x3, k;
        size_t pos;
        if (n < 64 || !q7_crc_has_pclmul())
            return 0;
        x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)~value));
        x1 = _mm_loadu_si128((const __m128i *)(p + 16));
        x2 = _mm_loadu_si128((const __m128i *)(p + 32));
        x3 = _mm_loadu_si128((const __m128i *)(p + 48));
        k = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
        for (pos = 64; pos + 64 <= n; pos += 64) {
            x0 = _mm_xor_si128(q7_crc_fold(x0, k), _mm_loadu_si128((const __m128i *)(p + pos)));
            x1 = _mm_xor_si128(q7_crc_fold(x1, k), _mm_loadu_si128((const __m128i *)(p + pos + 16)));
            x2 = _mm_xor_si128(q7_crc_fold(x2, k), _mm_loadu_si128((const __m128i *)(p + pos + 32)));
            x3 = _mm_xor_si128(q7_crc_fold(x3, k), _mm_loadu_si128((const __m128i *)(p + pos + 48)));
        }
        k = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
        x0 = _mm_xor_si128(q7_crc_fold(x0, k), x1);
        x0 = _mm_xor_si128(q7_crc_fold(x0, k), x2);
        x0 = _mm_xor_si128(q7_crc_fold(x0, k), x3);
        _mm_storeu_si128((__m128i *)out16, x0);
        return pos;
    }
    #define Q7_CRC_FOLDS 1
    #else
    static size_t q7_crc32_fold(const uint8_t *p, size_t n, uint32_t value, uint8_t *out16) { return 0; }
    static int q7_crc_has_pclmul(void) { return 0; }
    #define Q7_CRC_FOLDS 0
    #endif
    """
    size_t q7_crc32_fold(const uint8_t* p, size_t n, uint32_t value, uint8_t* out16) nogil
    int q7_crc_has_pclmul() nogil
    int Q7_CRC_FOLDS


def crc32_folds() -> bool:
    """Whether :func:`crc32` folds with PCLMULQDQ here (GCC or Clang on x86-64, a CPU that has it)."""
    return bool(Q7_CRC_FOLDS) and bool(q7_crc_has_pclmul())


def crc32(data, value=0) -> int:
    """``zlib.crc32(data, value)``, the same 32-bit value, with the bytes of a contiguous buffer of 64 bytes or more
    folded by PCLMULQDQ (about 3x zlib's speed on a 2-core EPYC) and the last 16 to 79 by zlib; zlib's alone
    for a shorter or non-contiguous buffer or without PCLMULQDQ. ``value``: the running CRC, 0..2^32 - 1. The GIL
    is released while folding."""
    cdef const uint8_t[::1] mv
    cdef uint8_t folded[16]
    cdef size_t done = 0, n
    cdef uint32_t start
    try:
        view = memoryview(data)
        mv = view.cast("B") if view.format != "B" or view.ndim != 1 else view
    except (TypeError, ValueError):                 # not a buffer, or not a contiguous one: zlib says what it takes
        return zlib.crc32(data, value)
    if not 0 <= value <= 0xFFFFFFFF:
        return zlib.crc32(data, value)
    n = mv.shape[0]
    start = value
    if n >= 64:
        with nogil:
            done = q7_crc32_fold(&mv[0], n, start, folded)
    if done == 0:
        return zlib.crc32(data, value)
    return zlib.crc32(bytes(mv[done:]), zlib.crc32((<char*>folded)[:16], 0xFFFFFFFF))
