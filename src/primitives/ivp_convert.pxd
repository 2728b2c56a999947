# cython: language_level=3
"""IVP int <-> float converts on bit patterns (docs/firmware.md §6.2 Converts, B13 / B20): RNE to float,
truncate toward zero and saturate to int (NaN -> the positive maximum; FCR is not read)."""
from libc.stdint cimport uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t
from q7regs cimport vec_t, vbool_t
from q7softfloat cimport (pack_ieee_rne, f16_to_f32_bits, f32_trunc_sat, f16_from_int16_scaled, Q7_HAVE_HW_F16,
                          q7_hw_f16_from_s16_scaled)
from ivp_lanes cimport merge


cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__AVX2__) || defined(__AVX512F__)
    #include <immintrin.h>
    #elif defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* floatn_2x32's convert on the host's vector unit: o[k] = fp32(x[k]) * 2^-(imm & 31). The convert rounds once,
       to nearest even; the scaling is exact (a non-zero product is at least 2^-31 in magnitude: a normal number,
       and a power of two). AVX-512 names the rounding in the instruction. SSE2 and AVX2 take it from MXCSR, so
       they run only while MXCSR rounds to nearest and masks the inexact exception (its default; Python does not
       change it): otherwise this returns 0 and the caller's integer loop (pack_ieee_rne, the reference) runs.
       o may alias x. */
    #if defined(__SSE2__)
    #define Q7_HW_FLOAT32 1
    static inline int q7_hw_float_s32(uint32_t *o, const int32_t *x, int imm) {
        union { uint32_t u; float f; } scale;
        scale.u = (uint32_t)(127 - (imm & 31)) << 23;
    #if defined(__AVX512F__)
        _mm512_storeu_ps((float *)o, _mm512_mul_ps(_mm512_cvt_roundepi32_ps(
            _mm512_loadu_si512((const void *)x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
            _mm512_set1_ps(scale.f)));
    #elif defined(__AVX2__)
        __m256 r0, r1;
        if ((_mm_getcsr() & 0x7000u) != 0x1000u)     /* RC = nearest (bits 13-14 clear), PM (bit 12) set */
            return 0;
        r0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)x)), _mm256_set1_ps(scale.f));
        r1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(x + 8))), _mm256_set1_ps(scale.f));
        _mm256_storeu_ps((float *)o, r0);
        _mm256_storeu_ps((float *)(o + 8), r1);
    #else
        __m128 r[4];
        int q;
        if ((_mm_getcsr() & 0x7000u) != 0x1000u)
            return 0;
        for (q = 0; q < 4; q++)
            r[q] = _mm_mul_ps(_mm_cvtepi32_ps(_mm_loadu_si128((const __m128i *)(x + 4 * q))), _mm_set1_ps(scale.f));
        for (q = 0; q < 4; q++)
            _mm_storeu_ps((float *)(o + 4 * q), r[q]);
    #endif
        return 1;
    }
    #else
    #define Q7_HW_FLOAT32 0
    static inline int q7_hw_float_s32(uint32_t *o, const int32_t *x, int imm) {
        (void)o; (void)x; (void)imm;
        return 0;
    }
    #endif
    """
    const bint Q7_HW_FLOAT32       # 1 where q7_hw_float_s32 has a body (x86-64: SSE2, AVX2, AVX-512)
    int q7_hw_float_s32(uint32_t* o, const int32_t* x, int imm) nogil


cdef inline void f16_from_s16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    """vt[k] = fp16(int16 vs[k] * 2^-(imm & 15)), RNE (the F16C body where the host has one)."""
    cdef int k
    cdef int sh = imm & 15
    if Q7_HAVE_HW_F16:
        q7_hw_f16_from_s16_scaled(vt.u16, vs.s16, sh)
    else:
        for k in range(32):
            vt.u16[k] = f16_from_int16_scaled(vs.s16[k], sh)


cdef inline void f32_from_f16_alt(vec_t* vt, const vec_t* vs, int first) noexcept nogil:
    """vt.f32[k] = fp16 lane 2k + first of vs, exactly (k < 16; first 0: the even lanes, 1: the odd; vt may alias
    vs)."""
    cdef vec_t s = vs[0]
    cdef int k
    for k in range(16):
        vt.u32[k] = f16_to_f32_bits(s.u16[2 * k + first])

# float16nx16t: vt = vb ? fp16(int16(vs) * 2^-imm) (RNE) : vt; imm = 0..15
cdef inline void float16nx16t(vec_t* vt, const vec_t* vs, int imm, vbool_t vb) noexcept nogil:
    cdef vec_t o
    f16_from_s16(&o, vs, imm)
    merge(vt, &o, vb, 2)

# floatn_2x32: vt = fp32(int32(vs) * 2^-imm) (RNE); imm = 0..31
cdef inline void floatn_2x32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    cdef int32_t x
    if Q7_HW_FLOAT32 and q7_hw_float_s32(vt.u32, vs.s32, imm):
        return
    for k in range(16):
        x = vs.s32[k]
        vt.u32[k] = pack_ieee_rne(x < 0, <uint64_t>(-(<int64_t>x) if x < 0 else x), -(imm & 31), 23, 8)

# truncn_2xf32: vt = int32 trunc-toward-zero(fp32(vs) * 2^imm), saturating; NaN and +overflow
# -> 0x7FFFFFFF, -overflow -> 0x80000000; imm = 0..31
cdef inline void truncn_2xf32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    for k in range(16):
        vt.s32[k] = <int32_t>f32_trunc_sat(vs.u32[k], imm & 31, -2147483648, 2147483647)

# trunc16nxf16: vt = int16 trunc-toward-zero(fp16(vs) * 2^imm), saturating, NaN -> 0x7FFF (ignores
# FCR); imm = 0..15 (docs/firmware.md §8.2.7 records MXB's other reading)
cdef inline void trunc16nxf16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    for k in range(32):
        vt.s16[k] = <int16_t>f32_trunc_sat(f16_to_f32_bits(vs.u16[k]), imm & 15, -32768, 32767)

# cvtf32nxf16_0: widen the even fp16 lanes (2k) of vs to fp32, exactly (docs/intrinsics.md §3.6: `_0` / `_1` are the
# even / odd lanes, as in Halide's f16 -> f32 conversion; docs/firmware.md §6.2 reads low / high halves)
cdef inline void cvtf32nxf16_0(vec_t* vt, const vec_t* vs) noexcept nogil:
    f32_from_f16_alt(vt, vs, 0)

# cvtf32nxf16_1: widen the odd fp16 lanes (2k + 1) of vs to fp32, exactly
cdef inline void cvtf32nxf16_1(vec_t* vt, const vec_t* vs) noexcept nogil:
    f32_from_f16_alt(vt, vs, 1)
