# cython: language_level=3
"""Soft-float leaves of the Q7 fp ops (docs/firmware.md §6.1 FCR, §6.2 fp ALU / converts).

ncore2gp has no hardware FP: its ivp_*f16 / *f32 ops are soft-float bodies. These helpers are the
bit-level leaves those primitives share. The FCR round mode is fixed at its reset value RNE
(docs/firmware.md §6.1); gradual underflow is on (no flush to zero).
"""
from libc.stdint cimport uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t
from libc.string cimport memcpy

# q7_msb64(x): the index of the highest set bit of x != 0. GCC / Clang: __builtin_clzll (one lzcnt / bsr / clz);
# MSVC: _BitScanReverse64; other compilers, and Q7_PLAIN_C (firmware_tests/primitives/test_primitive_levels.py:
# the C a compiler without GNU extensions compiles), a binary search in plain C.
cdef extern from *:
    """
    #include <stdint.h>
    #if (defined(__GNUC__) || defined(__clang__)) && !defined(Q7_PLAIN_C)
    #define q7_msb64(x) (63 - __builtin_clzll(x))
    #elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64)) && !defined(Q7_PLAIN_C)
    #include <intrin.h>
    static __forceinline int q7_msb64(uint64_t x) {
        unsigned long i;
        _BitScanReverse64(&i, x);
        return (int)i;
    }
    #else
    static inline int q7_msb64(uint64_t x) {
        int n = 0, w;
        for (w = 32; w > 0; w >>= 1)
            if (x >> w) { x >>= w; n += w; }
        return n;
    }
    #endif
    """
    int q7_msb64(uint64_t x) nogil

# fp16(int16 * 2^-imm) for 32 lanes at once through the host's fp32 -> fp16 convert: int16 -> fp32
# and the power-of-two scale are exact, so the one rounding is the convert's RNE (with gradual
# underflow: the instruction ignores MXCSR.FTZ/DAZ) and the result equals
# f16_from_int16_scaled / pack_ieee_rne bit for bit. Q7_HAVE_HW_F16 is 0 where the host has no
# such convert; callers then use the integer form.
cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__AVX512F__) || (defined(__F16C__) && defined(__AVX2__))
    #include <immintrin.h>
    #define Q7_HAVE_HW_F16 1
    static inline void q7_hw_f16_from_s16_scaled(uint16_t *o, const int16_t *x, int imm) {
        float s = 1.0f / (float)(1 << (imm & 15));
    #if defined(__AVX512F__)
        __m512 sc = _mm512_set1_ps(s);
        __m512 lo = _mm512_mul_ps(
            _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)x))), sc);
        __m512 hi = _mm512_mul_ps(
            _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(x + 16)))), sc);
        __m256i h0 = _mm512_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256i h1 = _mm512_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        /* one 512-bit store: a following full-vector load of o is store-forwarded */
        _mm512_storeu_si512((void *)o, _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1));
    #else
        __m256 sc = _mm256_set1_ps(s);
        int j;
        for (j = 0; j < 32; j += 8) {
            __m256 v = _mm256_mul_ps(
                _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(x + j)))), sc);
            _mm_storeu_si128((__m128i *)(o + j), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
    #endif
    }
    #else
    #define Q7_HAVE_HW_F16 0
    static inline void q7_hw_f16_from_s16_scaled(uint16_t *o, const int16_t *x, int imm) {
        (void)o; (void)x; (void)imm;
    }
    #endif
    """
    const int Q7_HAVE_HW_F16
    void q7_hw_f16_from_s16_scaled(uint16_t* o, const int16_t* x, int imm) nogil


cdef inline uint32_t pack_ieee_rne(uint32_t sign, uint64_t mag, int e2, int mbits, int ebits) noexcept nogil:
    """Round sign * mag * 2^e2 to the nearest IEEE binary format value (mbits fraction bits, ebits
    exponent bits), ties to even; overflow gives infinity. Returns the bit pattern."""
    cdef int bias = (1 << (ebits - 1)) - 1
    cdef int emax_b = (1 << ebits) - 2
    cdef uint32_t sbit = sign << (mbits + ebits)
    cdef int msb, e_b, shift
    cdef uint64_t q, rem, half
    cdef uint32_t bits
    if mag == 0:
        return sbit
    msb = q7_msb64(mag)
    e_b = msb + e2 + bias
    if e_b >= 1:
        shift = msb - mbits
    else:
        shift = msb - mbits + (1 - e_b)
        e_b = 1   # subnormal: encoded as exponent field 0 via the (e_b - 1) term below
    if shift <= 0:
        q = mag << (-shift)
    elif shift >= 64:
        q = 0
    else:
        q = mag >> shift
        rem = mag & (((<uint64_t>1) << shift) - 1)
        half = (<uint64_t>1) << (shift - 1)
        if rem > half or (rem == half and (q & 1)):
            q += 1
    # q carries the hidden bit for normals, so (e_b - 1) << mbits + q also absorbs a rounding carry.
    if e_b - 1 > emax_b:
        return sbit | ((<uint32_t>(emax_b + 1)) << mbits)
    bits = ((<uint32_t>(e_b - 1)) << mbits) + <uint32_t>q
    if bits >= ((<uint32_t>(emax_b + 1)) << mbits):
        bits = (<uint32_t>(emax_b + 1)) << mbits
    return sbit | bits


cdef inline uint32_t f16_to_f32_bits(uint16_t h) noexcept nogil:
    """Exact fp16 -> fp32 widening of a bit pattern (NaN payload kept, quiet bit set as-is)."""
    cdef uint32_t s = (<uint32_t>(h >> 15)) << 31
    cdef uint32_t e = (h >> 10) & 0x1F
    cdef uint32_t m = h & 0x3FF
    if e == 0x1F:
        return s | 0x7F800000 | (m << 13)
    if e == 0:
        if m == 0:
            return s
        return pack_ieee_rne(h >> 15, m, -24, 23, 8)
    return s | ((e + 112) << 23) | (m << 13)


cdef inline uint16_t f32_to_f16_bits_rne(uint32_t f) noexcept nogil:
    """fp32 -> fp16 bit pattern, RNE, overflow to infinity, NaN -> quiet NaN with the sign kept."""
    cdef uint32_t s = f >> 31
    cdef uint32_t e = (f >> 23) & 0xFF
    cdef uint32_t m = f & 0x7FFFFF
    if e == 0xFF:
        if m:
            return <uint16_t>((s << 15) | 0x7E00)
        return <uint16_t>((s << 15) | 0x7C00)
    if e == 0:
        return <uint16_t>pack_ieee_rne(s, m, -149, 10, 5)
    return <uint16_t>pack_ieee_rne(s, m | 0x800000, <int>e - 150, 10, 5)


cdef inline bint f32_is_nan(uint32_t f) noexcept nogil:
    return (f & 0x7F800000) == 0x7F800000 and (f & 0x7FFFFF) != 0


cdef inline bint f16_is_nan(uint16_t h) noexcept nogil:
    return (h & 0x7C00) == 0x7C00 and (h & 0x3FF) != 0


cdef inline int f32_cmp_lt(uint32_t a, uint32_t b) noexcept nogil:
    """a < b for two non-NaN fp32 bit patterns (+0 == -0)."""
    cdef int64_t ka, kb
    if ((a | b) & 0x7FFFFFFF) == 0:
        return 0
    ka = <int64_t>(a & 0x7FFFFFFF)
    kb = <int64_t>(b & 0x7FFFFFFF)
    if a >> 31:
        ka = -ka
    if b >> 31:
        kb = -kb
    return ka < kb


cdef inline int f16_cmp_lt(uint16_t a, uint16_t b) noexcept nogil:
    """a < b for two non-NaN fp16 bit patterns (+0 == -0)."""
    return f32_cmp_lt(f16_to_f32_bits(a), f16_to_f32_bits(b))


cdef inline int64_t f32_trunc_sat(uint32_t f, int imm, int64_t lo, int64_t hi) noexcept nogil:
    """trunc toward zero of fp32(f) * 2^imm, saturated to [lo, hi]; NaN -> hi (docs/firmware.md §6.2 converts)."""
    cdef uint32_t e = (f >> 23) & 0xFF
    cdef uint64_t m = f & 0x7FFFFF
    cdef int sh
    cdef uint64_t mag
    if e == 0xFF:
        if m:
            return hi
        return lo if (f >> 31) else hi
    if e == 0:
        return 0     # subnormal * 2^imm (imm <= 31) stays below 1
    m |= 0x800000
    sh = <int>e - 150 + imm       # value = m * 2^sh
    if sh >= 40:
        mag = (<uint64_t>1) << 40   # certainly beyond any 32-bit range
    elif sh >= 0:
        mag = m << sh
    elif sh > -64:
        mag = m >> (-sh)
    else:
        mag = 0
    if f >> 31:
        return lo if <int64_t>mag > -lo else -(<int64_t>mag)
    return hi if <int64_t>mag > hi else <int64_t>mag


# ------------------------------------------------------------------- branchless lane forms
# The same functions as straight-line integer code with selects, for the vectorised primitive
# loops (GCC if-converts the selects; no calls, no early returns).

cdef inline uint32_t f32_isnan_mask(uint32_t f) noexcept nogil:
    """0xFFFFFFFF if the fp32 pattern f is a NaN, else 0."""
    return 0xFFFFFFFFu if (f & 0x7FFFFFFFu) > 0x7F800000u else 0u


cdef inline int32_t f32_order_key(uint32_t f) noexcept nogil:
    """A signed integer key that orders non-NaN fp32 patterns as their values (+0 and -0 equal)."""
    cdef int32_t m = <int32_t>(f & 0x7FFFFFFFu)
    return -m if (f >> 31) else m


cdef inline int32_t f16_order_key(uint16_t h) noexcept nogil:
    """As f32_order_key for fp16 patterns (fp16 -> fp32 widening is exact and monotone)."""
    cdef int32_t m = <int32_t>(h & 0x7FFF)
    return -m if (h >> 15) else m


cdef inline uint16_t f16_from_int16_scaled(int16_t x, int imm) noexcept nogil:
    """fp16 bit pattern of x * 2^-imm, RNE, for imm in 0..15 (= pack_ieee_rne(x < 0, |x|, -imm,
    10, 5)). The result is always finite; the only subnormal result is 2^-15 (|x| = 1, imm = 15)."""
    cdef uint32_t mag = <uint32_t>(-(<int32_t>x) if x < 0 else <int32_t>x)
    cdef uint32_t sbit = 0x8000u if x < 0 else 0u
    cdef float fm = <float>mag           # exact: mag <= 2^15
    cdef uint32_t fb
    memcpy(&fb, &fm, 4)
    cdef int32_t e = <int32_t>(fb >> 23) - 127        # msb of mag (mag > 0)
    cdef int32_t eb = e - imm + 15                    # biased fp16 exponent before subnormal fixup
    cdef int32_t d = 1 - eb if eb < 1 else 0          # subnormal depth (0 or 1)
    cdef int32_t sh = e - 10 + d                      # right shift of mag to 10 fraction bits
    cdef int32_t left = -sh if sh < 0 else 0
    cdef int32_t right = sh if sh > 0 else 0
    cdef uint32_t q = (mag << left) >> right
    cdef uint32_t rem = mag & ((1u << right) - 1u)
    cdef uint32_t half = (1u << right) >> 1
    cdef uint32_t up = 1u if (rem > half or (rem == half and right > 0 and (q & 1u))) else 0u
    cdef int32_t ebn = eb if eb > 1 else 1
    cdef uint32_t bits = ((<uint32_t>(ebn - 1)) << 10) + q + up
    return <uint16_t>((sbit | bits) if mag != 0 else 0u)
