# cython: language_level=3
"""IVP integer MACs into wvec (docs/firmware.md §6.2 B04 / B05). They wrap modulo 2^(lane width) and never saturate;
`mul` overwrites every lane of the view, `mula` adds. Operands in the C intrinsics' order (docs/intrinsics.md
§3.3-§3.5): a 4-tap window's source is (hi, lo), tap 0 on lo; the quad MACs list their vectors v3 .. v0, the last
on the scalar's field 0; a paired MAC's first vector takes the scalar's bits 16..31.
pr fields: 16-bit field t = bits [16t, 16t+16), 8-bit field j = bits [8j, 8j+8)."""
from libc.string cimport memcpy
from libc.stdint cimport uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t
from q7regs cimport vec_t, wvec_t, wacc48_t, wacc96_t, wcells16_t, pr_t, sext, wvec_as, q7_permute2_u16, q7_add128_s64
from ivp_lanes cimport u8a, u16a, s16a


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__AVX2__) || defined(__AVX512F__)
    #include <immintrin.h>
    #elif defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* The portable bodies' vector form (q7regs.pxd, docs/build.md §1.6), where no x86 body is compiled: 4 lanes at a
       time widened to 32 bits and multiplied by a weight or tap (u16 x u16 in uint32, every other product in int32),
       the products widened to 64-bit cells, unsigned so that sums wrap modulo 2^64 as the SIMD bodies' do (a
       48-bit cell's readers wrap it, docs/build.md §3.6). */
    #if Q7_VEC_CVT && !defined(__SSE2__)
    typedef uint16_t q7_vu16x4 __attribute__((vector_size(8)));
    typedef int16_t q7_vs16x4 __attribute__((vector_size(8)));
    typedef uint64_t q7_vu64x4 __attribute__((vector_size(32)));
    /* the products of lanes p[0..3] (signed with SGN, else unsigned) and c as 64-bit cells; c signed 16-bit, or
       with unsigned lanes and UC unsigned 16-bit */
    static inline q7_vu64x4 q7_vprod64x4(const uint16_t *p, int sgn, int64_t c, int uc) {
        q7_vu16x4 u;
        memcpy(&u, p, 8);
        if (sgn)
            return __builtin_convertvector(__builtin_convertvector((q7_vs16x4)u, q7_vs32) * (int32_t)c, q7_vu64x4);
        if (uc)
            return __builtin_convertvector(__builtin_convertvector(u, q7_vu32) * (uint32_t)c, q7_vu64x4);
        return __builtin_convertvector((q7_vs32)__builtin_convertvector(u, q7_vu32) * (int32_t)c, q7_vu64x4);
    }
    static inline void q7_vacc64x4(int64_t *w, q7_vu64x4 v, int acc) {
        if (acc) {
            q7_vu64x4 o;
            memcpy(&o, w, 32);
            v += o;
        }
        memcpy(w, &v, 32);
    }
    #endif
    /* The paired MACs' lane loop, in C for the restrict qualifiers (the accumulator is never one of the sources,
       so GCC vectorises it in place): w[i] (=|+=) a[i] * ca + b[i] * cb over N lanes into CELL cells, wrapping at
       64 - SHIFT bits (an overwrite of 48-bit lanes, |sum| < 2^33, never wraps). The products fit PROD: u16 x u16 in
       uint32, s16 x u16 and u8 x s16 in int32. A narrowed accumulator (q7regs.pxd wcells16_t / wcells32_t) is the
       same loop into 16- or 32-bit cells with SHIFT 0: the sum modulo the cell, the low bits of the 48-bit lane;
       GCC then computes in the cells' width (16-bit lanes at AVX2: two vpmullw and two vpaddw per 16 lanes). */
    #define Q7_MAC_PAIR(NAME, LANE, PROD, CELL, N, SHIFT) \
    static inline void NAME(CELL *__restrict w, const LANE *__restrict a, const LANE *__restrict b, \
                            int64_t ca, int64_t cb, int acc) { \
        int i; \
        for (i = 0; i < (N); i++) { \
            uint64_t v = (uint64_t)(int64_t)((PROD)a[i] * (PROD)ca) + (uint64_t)(int64_t)((PROD)b[i] * (PROD)cb); \
            if (acc) \
                v += (uint64_t)w[i]; \
            w[i] = (acc || (SHIFT) > 16) ? (CELL)((int64_t)(v << (SHIFT)) >> (SHIFT)) : (CELL)v; \
        } \
    }
    Q7_MAC_PAIR(q7_mac_pair_u16_c16, uint16_t, uint32_t, uint16_t, 32, 0)
    Q7_MAC_PAIR(q7_mac_pair_s16_c16, int16_t, int32_t, uint16_t, 32, 0)
    Q7_MAC_PAIR(q7_mac_pair_u16_c32, uint16_t, uint32_t, uint32_t, 32, 0)
    Q7_MAC_PAIR(q7_mac_pair_s16_c32, int16_t, int32_t, uint32_t, 32, 0)
    /* mac_4tap's lane loop on narrowed cells: w[i] (=|+=) sum_{t<4} pool[i + t] * c[t] modulo the cell (16 or 32
       bits), pool = lo || hi as 16-bit lanes (unsigned, or signed with SGN), c[t] signed 16-bit taps. In 32-bit
       arithmetic, which holds every product and sum modulo 2^32; GCC computes in the cells' width. With ONE >= 0
       only tap ONE is non-zero (mac_4tap's one-tap case, the MX scale MACs'): one product per lane, lane i + ONE of
       the pool read from lo or hi where it lies (Q7_MAC1_CELLS, its tap a constant of each case: no copy of the
       pool, whose stores the window's loads would wait on). Each window is read as two runs of lanes, lanes
       0 .. 31 - T from lo and the last T from hi, so that GCC vectorises the loops (one loop choosing lo or hi per
       lane it did not: a scalar multiply-add per lane, a third of QuantizeMX's time translated at avx2). */
    #define Q7_MAC_LANE16(x) (sgn ? (uint32_t)(int32_t)(int16_t)(x) : (uint32_t)(x))
    #define Q7_MAC1_LANE(CELL, T, x) w[i] = (CELL)((acc ? (uint32_t)w[i] : 0u) + Q7_MAC_LANE16(x) * k[T])
    #define Q7_MAC1_CELLS(CELL, T) \
        for (i = 0; i < 32 - (T); i++) \
            Q7_MAC1_LANE(CELL, T, lo[i + (T)]); \
        for (i = 32 - (T); i < 32; i++) \
            Q7_MAC1_LANE(CELL, T, hi[i + (T) - 32]);
    #define Q7_MAC4_CELLS(NAME, CELL) \
    static inline void NAME(CELL *__restrict w, const uint16_t *__restrict lo, const uint16_t *__restrict hi, \
                            int sgn, const int64_t *c, int one, int acc) { \
        uint32_t k[4], p[32]; \
        int i, t; \
        for (t = 0; t < 4; t++) \
            k[t] = (uint32_t)c[t]; \
        switch (one) { \
            case 0: Q7_MAC1_CELLS(CELL, 0) return; \
            case 1: Q7_MAC1_CELLS(CELL, 1) return; \
            case 2: Q7_MAC1_CELLS(CELL, 2) return; \
            case 3: Q7_MAC1_CELLS(CELL, 3) return; \
            default: break; \
        } \
        for (i = 0; i < 32; i++) \
            p[i] = acc ? (uint32_t)w[i] : 0u; \
        for (t = 0; t < 4; t++) { \
            for (i = 0; i < 32 - t; i++) \
                p[i] += Q7_MAC_LANE16(lo[i + t]) * k[t]; \
            for (i = 32 - t; i < 32; i++) \
                p[i] += Q7_MAC_LANE16(hi[i + t - 32]) * k[t]; \
        } \
        for (i = 0; i < 32; i++) \
            w[i] = (CELL)p[i]; \
    }
    Q7_MAC4_CELLS(q7_mac4_c16, uint16_t)
    Q7_MAC4_CELLS(q7_mac4_c32, uint32_t)
    Q7_MAC_PAIR(q7_mac_pair_u8, uint8_t, int32_t, int64_t, 64, 40)
    /* The accumulator step of the SIMD MAC leaves: cells w[0 .. lanes) = v (overwrite), or with ACC w + v modulo
       2^64. No wrap to 48 bits: a 48-bit cell holds its lane modulo 2^48 (q7regs.pxd), and the low 48 bits of a
       64-bit sum are those of the 48-bit one, so the wrap (a shift pair at AVX-512, three ops below it) is left to
       the few readers of more than the low 48 bits (docs/build.md §3.6) */
    #if defined(__AVX512F__)
    static inline void q7_acc48_512(int64_t *w, __m512i v, int acc) {
        if (acc)
            v = _mm512_add_epi64(_mm512_loadu_si512((const void *)w), v);
        _mm512_storeu_si512((void *)w, v);
    }
    #endif
    #if defined(__AVX2__)
    static inline void q7_acc48_256(int64_t *w, __m256i v, int acc) {
        if (acc)
            v = _mm256_add_epi64(_mm256_loadu_si256((const __m256i *)w), v);
        _mm256_storeu_si256((__m256i *)w, v);
    }
    #endif
    #if defined(__SSE2__) && !defined(__AVX2__)
    /* The SSE2 (generic level) MAC leaves' pieces. q7_acc48_128: as q7_acc48_256, two cells. q7_mulhi16_128: the
       high halves of the 32-bit products of the 16-bit lanes x and y, each read unsigned (XU, YU) or signed: pmulhuw
       for two unsigned, else pmulhw plus, for an unsigned operand, the other operand in the lanes where its bit 15
       is set (u = s + 2^16 there, so u * v = s * v + 2^16 * v). q7_sext128lo / hi: 32-bit lanes 0-1 / 2-3
       sign-extended to 64-bit cells. */
    static inline void q7_acc48_128(int64_t *w, __m128i v, int acc) {
        if (acc)
            v = _mm_add_epi64(_mm_loadu_si128((const __m128i *)w), v);
        _mm_storeu_si128((__m128i *)w, v);
    }
    static inline __m128i q7_mulhi16_128(__m128i x, __m128i y, int xu, int yu) {
        __m128i h;
        if (xu && yu)
            return _mm_mulhi_epu16(x, y);
        h = _mm_mulhi_epi16(x, y);
        if (xu)
            h = _mm_add_epi16(h, _mm_and_si128(_mm_srai_epi16(x, 15), y));
        if (yu)
            h = _mm_add_epi16(h, _mm_and_si128(_mm_srai_epi16(y, 15), x));
        return h;
    }
    static inline __m128i q7_sext128lo(__m128i p) { return _mm_unpacklo_epi32(p, _mm_srai_epi32(p, 31)); }
    static inline __m128i q7_sext128hi(__m128i p) { return _mm_unpackhi_epi32(p, _mm_srai_epi32(p, 31)); }
    /* the four pairs of 64-bit cells of the products of 8 16-bit lanes x and c (each unsigned with XU / CU, else
       signed): low and high halves interleaved into 32-bit products, zero-extended when both are unsigned (a
       product below 2^32), else sign-extended (it fits int32: |s16 x u16| <= 2^15 * (2^16 - 1)) */
    static inline void q7_prod16_cells128(__m128i x, __m128i c, int xu, int cu, __m128i *cells) {
        const __m128i zero = _mm_setzero_si128();
        __m128i l = _mm_mullo_epi16(x, c), h = q7_mulhi16_128(x, c, xu, cu);
        __m128i p0 = _mm_unpacklo_epi16(l, h), p1 = _mm_unpackhi_epi16(l, h);
        if (xu && cu) {
            cells[0] = _mm_unpacklo_epi32(p0, zero);
            cells[1] = _mm_unpackhi_epi32(p0, zero);
            cells[2] = _mm_unpacklo_epi32(p1, zero);
            cells[3] = _mm_unpackhi_epi32(p1, zero);
        } else {
            cells[0] = q7_sext128lo(p0);
            cells[1] = q7_sext128hi(p0);
            cells[2] = q7_sext128lo(p1);
            cells[3] = q7_sext128hi(p1);
        }
    }
    #endif
    /* muln_2x32 (mac_96's overwrite) at AVX2 and AVX-512: 96-bit lane i = a[i] * b[i] (signed 32 x 32 bits), cells
       c[2i] = the 64-bit product, c[2i + 1] = its sign (the high 32 bits, sign-extended). Each lane widened to 64 bits
       (vpmovsxdq) and multiplied by vpmuldq; the reference is mac_96's loop, which the other levels run
       (Q7_MUL96_LEAF 0). Reads a and b before writing c. */
    #if defined(__AVX512F__)
    #define Q7_MUL96_LEAF 1
    static inline void q7_mul96(int64_t *c, const int32_t *a, const int32_t *b) {
        const __m512i lo4 = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
        const __m512i hi4 = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
        __m512i cells[4];
        int h;
        for (h = 0; h < 2; h++) {
            __m512i p = _mm512_mul_epi32(_mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)(a + 8 * h))),
                                         _mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)(b + 8 * h))));
            __m512i sg = _mm512_srai_epi64(p, 63);
            cells[2 * h] = _mm512_permutex2var_epi64(p, lo4, sg);
            cells[2 * h + 1] = _mm512_permutex2var_epi64(p, hi4, sg);
        }
        for (h = 0; h < 4; h++)
            _mm512_storeu_si512((void *)(c + 8 * h), cells[h]);
    }
    #elif defined(__AVX2__)
    #define Q7_MUL96_LEAF 1
    static inline void q7_mul96(int64_t *c, const int32_t *a, const int32_t *b) {
        const __m256i zero = _mm256_setzero_si256();
        __m256i cells[8];
        int q;
        for (q = 0; q < 4; q++) {
            __m256i p = _mm256_mul_epi32(_mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(a + 4 * q))),
                                         _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(b + 4 * q))));
            __m256i sg = _mm256_cmpgt_epi64(zero, p);
            __m256i e = _mm256_unpacklo_epi64(p, sg), o = _mm256_unpackhi_epi64(p, sg);    /* lanes 0, 2 / 1, 3 */
            cells[2 * q] = _mm256_permute2x128_si256(e, o, 0x20);
            cells[2 * q + 1] = _mm256_permute2x128_si256(e, o, 0x31);
        }
        for (q = 0; q < 8; q++)
            _mm256_storeu_si256((__m256i *)(c + 4 * q), cells[q]);
    }
    #else
    #define Q7_MUL96_LEAF 0
    static inline void q7_mul96(int64_t *c, const int32_t *a, const int32_t *b) { (void)c; (void)a; (void)b; }
    #endif
    #if defined(__AVX512F__)
    /* The 16-bit pairs at AVX-512: each lane widened straight to its 64-bit cell (vpmov{z,s}xwq) and multiplied by
       the weight's low 32 bits into a 64-bit product (vpmul{u,}dq: one uop, where GCC's 32-bit products of the
       macro take vpmulld and a widening of each product); the same values as the macro whenever the products fit
       PROD (16-bit weights), the 48-bit lanes sign-extended by a shift pair. CVT widens, MUL multiplies. */
    #define Q7_MAC_PAIR16_AVX512(NAME, LANE, CVT, MUL) \
    static inline void NAME(int64_t *__restrict w, const LANE *__restrict a, const LANE *__restrict b, \
                            int64_t ca, int64_t cb, int acc) { \
        const __m512i wa = _mm512_set1_epi64(ca), wb = _mm512_set1_epi64(cb); \
        int j; \
        for (j = 0; j < 4; j++) { \
            __m512i v = _mm512_add_epi64(MUL(CVT(_mm_loadu_si128((const __m128i *)(a + 8 * j))), wa), \
                                         MUL(CVT(_mm_loadu_si128((const __m128i *)(b + 8 * j))), wb)); \
            q7_acc48_512(w + 8 * j, v, acc); \
        } \
    }
    Q7_MAC_PAIR16_AVX512(q7_mac_pair_u16, uint16_t, _mm512_cvtepu16_epi64, _mm512_mul_epu32)
    Q7_MAC_PAIR16_AVX512(q7_mac_pair_s16, int16_t, _mm512_cvtepi16_epi64, _mm512_mul_epi32)
    #elif defined(__AVX2__)
    /* the same at AVX2, 4 lanes per step */
    #define Q7_MAC_PAIR16_AVX2(NAME, LANE, CVT, MUL) \
    static inline void NAME(int64_t *__restrict w, const LANE *__restrict a, const LANE *__restrict b, \
                            int64_t ca, int64_t cb, int acc) { \
        const __m256i wa = _mm256_set1_epi64x(ca), wb = _mm256_set1_epi64x(cb); \
        int j; \
        for (j = 0; j < 8; j++) { \
            __m256i v = _mm256_add_epi64(MUL(CVT(_mm_loadl_epi64((const __m128i *)(a + 4 * j))), wa), \
                                         MUL(CVT(_mm_loadl_epi64((const __m128i *)(b + 4 * j))), wb)); \
            q7_acc48_256(w + 4 * j, v, acc); \
        } \
    }
    Q7_MAC_PAIR16_AVX2(q7_mac_pair_u16, uint16_t, _mm256_cvtepu16_epi64, _mm256_mul_epu32)
    Q7_MAC_PAIR16_AVX2(q7_mac_pair_s16, int16_t, _mm256_cvtepi16_epi64, _mm256_mul_epi32)
    #elif defined(__SSE2__)
    /* SSE2 (the generic level; GCC's vectorisation of the C loop took 300-450 instructions per op): each 8 lanes'
       products with the unsigned 16-bit weights as 64-bit cells (q7_prod16_cells128), the two summed there */
    static inline void q7_mac_pair16_sse2(int64_t *__restrict w, const uint16_t *__restrict a,
                                          const uint16_t *__restrict b, int64_t ca, int64_t cb, int acc, int sgn) {
        const __m128i wa = _mm_set1_epi16((short)ca), wb = _mm_set1_epi16((short)cb);
        int q, j;
        for (q = 0; q < 4; q++) {
            __m128i cx[4], cy[4];
            q7_prod16_cells128(_mm_loadu_si128((const __m128i *)(a + 8 * q)), wa, !sgn, 1, cx);
            q7_prod16_cells128(_mm_loadu_si128((const __m128i *)(b + 8 * q)), wb, !sgn, 1, cy);
            for (j = 0; j < 4; j++)
                q7_acc48_128(w + 8 * q + 2 * j, _mm_add_epi64(cx[j], cy[j]), acc);
        }
    }
    static inline void q7_mac_pair_u16(int64_t *__restrict w, const uint16_t *__restrict a,
                                       const uint16_t *__restrict b, int64_t ca, int64_t cb, int acc) {
        q7_mac_pair16_sse2(w, a, b, ca, cb, acc, 0);
    }
    static inline void q7_mac_pair_s16(int64_t *__restrict w, const int16_t *__restrict a,
                                       const int16_t *__restrict b, int64_t ca, int64_t cb, int acc) {
        q7_mac_pair16_sse2(w, (const uint16_t *)a, (const uint16_t *)b, ca, cb, acc, 1);
    }
    #elif Q7_VEC_CVT
    /* the vector form for u16 x u16 (callgrind, portable level: 378 host instructions per op, the macro's loop 431);
       s16 x u16 keeps the macro, which took fewer (324 against 396) */
    static inline void q7_mac_pair_u16(int64_t *__restrict w, const uint16_t *__restrict a,
                                       const uint16_t *__restrict b, int64_t ca, int64_t cb, int acc) {
        int i;
        for (i = 0; i < 32; i += 4)
            q7_vacc64x4(w + i, q7_vprod64x4(a + i, 0, ca, 1) + q7_vprod64x4(b + i, 0, cb, 1), acc);
    }
    Q7_MAC_PAIR(q7_mac_pair_s16, int16_t, int32_t, int64_t, 32, 16)
    #else
    Q7_MAC_PAIR(q7_mac_pair_u16, uint16_t, uint32_t, int64_t, 32, 16)
    Q7_MAC_PAIR(q7_mac_pair_s16, int16_t, int32_t, int64_t, 32, 16)
    #endif
    /* The one-tap 4-tap MAC (mac_4tap with a single non-zero tap T: the scale MACs of the MX kernels): w[i] (=|+=)
       pool[i + T] * c over 32 16-bit lanes, pool = lo || hi (unsigned lanes, or signed with SGN), c a signed 16-bit
       tap, 48-bit lanes. The Cython form copied the two registers into a local pool, read the window at lane T
       from it (loads straddling the copy's stores) and went through a local array of products; here the window
       comes from the registers by lane shifts (SSE2: two byte shifts; AVX2: a 128-bit lane swap and a byte align;
       AVX-512: one two-register word permute) and each 4 (AVX2) or 8 (AVX-512) lanes are widened to their cells,
       multiplied by vpmuldq and added in registers (SSE2, which has no signed 32-bit multiply: 16 x 16-bit
       products from their low and high halves, q7_mulhi16_128, sign-extended to the cells). The portable body is
       the reference (the levels without a body keep mac_4tap's loop: Q7_MAC1_LEAF 0). */
    #if defined(__AVX512F__)
    #define Q7_MAC1_LEAF 1
    #elif defined(__AVX2__)
    #define Q7_MAC1_LEAF 1
    #elif defined(__SSE2__)
    #define Q7_MAC1_LEAF 1
    #elif Q7_VEC_CVT
    #define Q7_MAC1_LEAF 1
    #else
    #define Q7_MAC1_LEAF 0
    #endif
    #if defined(__AVX512BW__)
    /* 128-bit piece J (0..3) of x. extracti32x4 takes an immediate: the loops below pass their index, which is a
       constant once GCC unrolls them (#pragma GCC unroll, when optimising); without optimisation nothing unrolls,
       so there Q7_PIECE512 is this switch, each case with its own immediate. (Writing the unrolled form out by
       hand, or calling this switch when optimising, made GCC inline differently: the MX kernel ran at 0.75x.) */
    static inline __m128i q7_piece512(__m512i x, int j) {
        switch (j & 3) {
            case 1: return _mm512_extracti32x4_epi32(x, 1);
            case 2: return _mm512_extracti32x4_epi32(x, 2);
            case 3: return _mm512_extracti32x4_epi32(x, 3);
            default: return _mm512_extracti32x4_epi32(x, 0);
        }
    }
    #if defined(__OPTIMIZE__)
    #define Q7_PIECE512(x, j) _mm512_extracti32x4_epi32(x, j)
    #define Q7_UNROLL4 _Pragma("GCC unroll 4")
    #else
    #define Q7_PIECE512(x, j) q7_piece512(x, j)
    #define Q7_UNROLL4
    #endif
    #endif
    #if defined(__AVX2__) && !defined(__AVX512BW__)
    /* lanes T .. T + 15 of the 16-bit lanes of a || b (T = 0..3): a 128-bit lane swap and a byte align */
    static inline __m256i q7_window16(__m256i a, __m256i b, int t) {
        __m256i m = _mm256_permute2x128_si256(a, b, 0x21);
        switch (t) {
            case 1: return _mm256_alignr_epi8(m, a, 2);
            case 2: return _mm256_alignr_epi8(m, a, 4);
            case 3: return _mm256_alignr_epi8(m, a, 6);
            default: return a;
        }
    }
    #endif
    #if defined(__SSE2__) && !defined(__AVX2__)
    /* lanes T .. T + 7 of the 16-bit lanes of a || b (T = 0..3): two byte shifts, each case with its immediates */
    static inline __m128i q7_window8(__m128i a, __m128i b, int t) {
        switch (t) {
            case 1: return _mm_or_si128(_mm_srli_si128(a, 2), _mm_slli_si128(b, 14));
            case 2: return _mm_or_si128(_mm_srli_si128(a, 4), _mm_slli_si128(b, 12));
            case 3: return _mm_or_si128(_mm_srli_si128(a, 6), _mm_slli_si128(b, 10));
            default: return a;
        }
    }
    #endif
    static inline void q7_mac1_16(int64_t *__restrict w, const uint16_t *lo, const uint16_t *hi, int t, int sgn,
                                  int64_t c, int acc) {
    #if defined(__AVX512BW__)
        const __m512i wc = _mm512_set1_epi64(c);
        __m512i x = _mm512_loadu_si512((const void *)lo);
        int j;
        if (t)
            x = _mm512_permutex2var_epi16(x, _mm512_add_epi16(_mm512_set_epi16(
                31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16,
                15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi16((short)t)),
                _mm512_loadu_si512((const void *)hi));
        Q7_UNROLL4
        for (j = 0; j < 4; j++) {
            __m128i l = Q7_PIECE512(x, j);
            __m512i v = _mm512_mul_epi32(sgn ? _mm512_cvtepi16_epi64(l) : _mm512_cvtepu16_epi64(l), wc);
            q7_acc48_512(w + 8 * j, v, acc);
        }
    #elif defined(__AVX2__)
        const __m256i wc = _mm256_set1_epi64x(c);
        __m256i l0, l1, win[2];
        int h, q;
        if (!t) {      /* the register itself: 8-byte loads (the pieces of two 32-byte loads were slower) */
            for (q = 0; q < 8; q++) {
                __m128i l = _mm_loadl_epi64((const __m128i *)(lo + 4 * q));
                __m256i v = _mm256_mul_epi32(sgn ? _mm256_cvtepi16_epi64(l) : _mm256_cvtepu16_epi64(l), wc);
                q7_acc48_256(w + 4 * q, v, acc);
            }
            return;
        }
        l0 = _mm256_loadu_si256((const __m256i *)lo);
        l1 = _mm256_loadu_si256((const __m256i *)(lo + 16));
        win[0] = q7_window16(l0, l1, t);
        win[1] = q7_window16(l1, _mm256_loadu_si256((const __m256i *)hi), t);
        for (h = 0; h < 2; h++) {
            __m128i half[2];
            half[0] = _mm256_castsi256_si128(win[h]);
            half[1] = _mm256_extracti128_si256(win[h], 1);
            for (q = 0; q < 4; q++) {
                int64_t *wq = w + 16 * h + 4 * q;
                __m128i l = q & 1 ? _mm_srli_si128(half[q >> 1], 8) : half[q >> 1];
                __m256i v = _mm256_mul_epi32(sgn ? _mm256_cvtepi16_epi64(l) : _mm256_cvtepu16_epi64(l), wc);
                q7_acc48_256(wq, v, acc);
            }
        }
    #elif defined(__SSE2__)
        const __m128i wc = _mm_set1_epi16((short)c);
        __m128i reg[5], cells[4];
        int q, j;
        for (q = 0; q < 4; q++)
            reg[q] = _mm_loadu_si128((const __m128i *)(lo + 8 * q));
        reg[4] = _mm_loadu_si128((const __m128i *)hi);
        for (q = 0; q < 4; q++) {
            q7_prod16_cells128(q7_window8(reg[q], reg[q + 1], t), wc, !sgn, 0, cells);
            for (j = 0; j < 4; j++)
                q7_acc48_128(w + 8 * q + 2 * j, cells[j], acc);
        }
    #elif Q7_VEC_CVT
        uint16_t pool[64];
        int i;
        memcpy(pool, lo, 64);
        memcpy(pool + 32, hi, 64);
        for (i = 0; i < 32; i += 4)
            q7_vacc64x4(w + i, q7_vprod64x4(pool + t + i, sgn, c, 0), acc);
    #else
        int i;
        for (i = 0; i < 32; i++) {
            uint16_t x = i + t < 32 ? lo[i + t] : hi[i + t - 32];
            int64_t p = (int64_t)(sgn ? (int32_t)(int16_t)x : (int32_t)x) * c;
            w[i] = acc ? (int64_t)(((uint64_t)w[i] + (uint64_t)p) << 16) >> 16 : p;
        }
    #endif
    }
    /* The 4-tap MAC with several non-zero taps (QuantizeMX's divide MACs): w[i] (=|+=) sum_{t<4} pool[i + t] * c[t],
       pool = lo || hi as 16-bit lanes (unsigned, or signed with SGN), c[t] signed 16-bit taps, 48-bit lanes. The
       windows (lanes t .. t + 31 of the pool) come from the registers by lane shifts across the two (SSE2: two
       byte shifts per 8 lanes; AVX2: a 128-bit lane swap and a byte align; AVX-512: one two-register word
       permute), where the Cython form built each with a full two-register permute and summed the products through
       a local array. Each product of a 16-bit lane and a 16-bit tap fits int32, the sum of four int64. Same levels
       as Q7_MAC1_LEAF. */
    #if defined(__AVX512BW__)
    #define Q7_MAC4_CVT(x, sgn) ((sgn) ? _mm512_cvtepi16_epi64(x) : _mm512_cvtepu16_epi64(x))
    #elif defined(__AVX2__)
    #define Q7_MAC4_CVT(x, sgn) ((sgn) ? _mm256_cvtepi16_epi64(x) : _mm256_cvtepu16_epi64(x))
    #define Q7_MAC4_PIECE(v, q) ((q) & 1 ? _mm_srli_si128((q) & 2 ? _mm256_extracti128_si256(v, 1) \
                                                                 : _mm256_castsi256_si128(v), 8) \
                                         : ((q) & 2 ? _mm256_extracti128_si256(v, 1) : _mm256_castsi256_si128(v)))
    #endif
    static inline void q7_mac4_16(int64_t *__restrict w, const uint16_t *lo, const uint16_t *hi, int sgn,
                                  const int64_t *c, int acc) {
    #if defined(__AVX512BW__)
        const __m512i x0 = _mm512_loadu_si512((const void *)lo), x1 = _mm512_loadu_si512((const void *)hi);
        const __m512i step = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16,
                                              15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
        __m512i win[4], wc[4];
        int t, j;
        for (t = 0; t < 4; t++) {
            win[t] = t ? _mm512_permutex2var_epi16(x0, _mm512_add_epi16(step, _mm512_set1_epi16((short)t)), x1) : x0;
            wc[t] = _mm512_set1_epi64(c[t]);
        }
        Q7_UNROLL4
        for (j = 0; j < 4; j++) {
            __m512i v = _mm512_setzero_si512();
            for (t = 0; t < 4; t++)
                v = _mm512_add_epi64(v, _mm512_mul_epi32(Q7_MAC4_CVT(Q7_PIECE512(win[t], j), sgn), wc[t]));
            q7_acc48_512(w + 8 * j, v, acc);
        }
    #elif defined(__AVX2__)
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)lo), l1 = _mm256_loadu_si256((const __m256i *)(lo + 16));
        const __m256i h0 = _mm256_loadu_si256((const __m256i *)hi);
        __m256i win[4][2], wc[4];
        int t, h, q;
        for (t = 0; t < 4; t++) {      /* window t, lanes 16h .. 16h + 15: pool lanes t + 16h .. */
            win[t][0] = q7_window16(l0, l1, t);
            win[t][1] = q7_window16(l1, h0, t);
            wc[t] = _mm256_set1_epi64x(c[t]);
        }
        for (h = 0; h < 2; h++) {
            for (q = 0; q < 4; q++) {
                int64_t *wq = w + 16 * h + 4 * q;
                __m256i v = _mm256_add_epi64(
                    _mm256_add_epi64(_mm256_mul_epi32(Q7_MAC4_CVT(Q7_MAC4_PIECE(win[0][h], q), sgn), wc[0]),
                                     _mm256_mul_epi32(Q7_MAC4_CVT(Q7_MAC4_PIECE(win[1][h], q), sgn), wc[1])),
                    _mm256_add_epi64(_mm256_mul_epi32(Q7_MAC4_CVT(Q7_MAC4_PIECE(win[2][h], q), sgn), wc[2]),
                                     _mm256_mul_epi32(Q7_MAC4_CVT(Q7_MAC4_PIECE(win[3][h], q), sgn), wc[3])));
                q7_acc48_256(wq, v, acc);
            }
        }
    #elif defined(__SSE2__)
        __m128i reg[5], wc[4];
        int q, t, j;
        for (q = 0; q < 4; q++)
            reg[q] = _mm_loadu_si128((const __m128i *)(lo + 8 * q));
        reg[4] = _mm_loadu_si128((const __m128i *)hi);
        for (t = 0; t < 4; t++)
            wc[t] = _mm_set1_epi16((short)c[t]);
        for (q = 0; q < 4; q++) {
            __m128i sum[4], cells[4];
            q7_prod16_cells128(reg[q], wc[0], !sgn, 0, sum);
            for (t = 1; t < 4; t++) {
                q7_prod16_cells128(q7_window8(reg[q], reg[q + 1], t), wc[t], !sgn, 0, cells);
                for (j = 0; j < 4; j++)
                    sum[j] = _mm_add_epi64(sum[j], cells[j]);
            }
            for (j = 0; j < 4; j++)
                q7_acc48_128(w + 8 * q + 2 * j, sum[j], acc);
        }
    #elif Q7_VEC_CVT
        uint16_t pool[64];
        int i;
        memcpy(pool, lo, 64);
        memcpy(pool + 32, hi, 64);
        for (i = 0; i < 32; i += 4)
            q7_vacc64x4(w + i, (q7_vprod64x4(pool + i, sgn, c[0], 0) + q7_vprod64x4(pool + i + 1, sgn, c[1], 0))
                        + (q7_vprod64x4(pool + i + 2, sgn, c[2], 0) + q7_vprod64x4(pool + i + 3, sgn, c[3], 0)),
                        acc);
    #else
        int i, t;
        for (i = 0; i < 32; i++) {
            int64_t p = 0;
            for (t = 0; t < 4; t++) {
                uint16_t x = i + t < 32 ? lo[i + t] : hi[i + t - 32];
                p += (int64_t)(sgn ? (int32_t)(int16_t)x : (int32_t)x) * c[t];
            }
            w[i] = acc ? (int64_t)(((uint64_t)w[i] + (uint64_t)p) << 16) >> 16 : p;
        }
    #endif
    }
    """
    const bint Q7_MAC1_LEAF        # 1 where q7_mac1_16 has a SIMD body (SSE2, AVX2, AVX-512)
    const bint Q7_MUL96_LEAF       # 1 where q7_mul96 has a SIMD body (AVX2, AVX-512)
    void q7_mul96(int64_t* c, const int32_t* a, const int32_t* b) nogil
    void q7_mac1_16(int64_t* w, const uint16_t* lo, const uint16_t* hi, int t, int sgn, int64_t c, int acc) nogil
    void q7_mac4_16(int64_t* w, const uint16_t* lo, const uint16_t* hi, int sgn, const int64_t* c, int acc) nogil
    void q7_mac_pair_u8(int64_t* w, const uint8_t* a, const uint8_t* b, int64_t ca, int64_t cb, int acc) nogil
    void q7_mac_pair_u16(int64_t* w, const uint16_t* a, const uint16_t* b, int64_t ca, int64_t cb, int acc) nogil
    void q7_mac_pair_s16(int64_t* w, const int16_t* a, const int16_t* b, int64_t ca, int64_t cb, int acc) nogil
    void q7_mac_pair_u16_c16(uint16_t* w, const uint16_t* a, const uint16_t* b, int64_t ca, int64_t cb, int acc) nogil
    void q7_mac_pair_s16_c16(uint16_t* w, const int16_t* a, const int16_t* b, int64_t ca, int64_t cb, int acc) nogil
    void q7_mac_pair_u16_c32(uint32_t* w, const uint16_t* a, const uint16_t* b, int64_t ca, int64_t cb, int acc) nogil
    void q7_mac_pair_s16_c32(uint32_t* w, const int16_t* a, const int16_t* b, int64_t ca, int64_t cb, int acc) nogil
    void q7_mac4_c16(uint16_t* w, const uint16_t* lo, const uint16_t* hi, int sgn, const int64_t* c, int one,
                     int acc) nogil
    void q7_mac4_c32(uint32_t* w, const uint16_t* lo, const uint16_t* hi, int sgn, const int64_t* c, int one,
                     int acc) nogil


ctypedef fused tap_t:             # may_alias lane types: see ivp_lanes.pxd
    u16a
    s16a

ctypedef fused pair_t:
    u8a
    u16a
    s16a


cdef inline void _pool16_shifts(vec_t* p1, vec_t* p2, vec_t* p3, const vec_t* va, const vec_t* vb) noexcept nogil:
    """p_t.u16[i] = pool.u16[i + t] for pool = va || vb (the 4-tap windows), by two-register permutes."""
    cdef vec_t i1, i2, i3
    cdef int k
    for k in range(32):
        i1.u16[k] = <uint16_t>(k + 1)
        i2.u16[k] = <uint16_t>(k + 2)
        i3.u16[k] = <uint16_t>(k + 3)
    q7_permute2_u16(p1.u16, va.u16, vb.u16, i1.u16, -1)
    q7_permute2_u16(p2.u16, va.u16, vb.u16, i2.u16, -1)
    q7_permute2_u16(p3.u16, va.u16, vb.u16, i3.u16, -1)


cdef inline void _overwrite(wvec_t* wv, int view, int lanes) noexcept nogil:
    """Start an overwriting MAC: wv in lane view `view`; the op writes cells 0 .. lanes - 1, the whole
    architectural state of that view. Cells from `lanes` up are not part of it (wvec_to_raw, the packs, the
    traces and the Python views read only the view's cells), so they are left as they are."""
    wv.view = view


cdef inline int _one_tap(pr_t pr) noexcept nogil:
    """The one non-zero 16-bit tap of pr (0..3), or -1 (several taps, or none: tap 0's multiply of zero)."""
    cdef int t
    for t in range(4):
        if (pr & ~(<pr_t>0xFFFF << (16 * t))) == 0:
            return t
    return -1


cdef inline void mac_4tap(wacc48_t* wv, const tap_t* a, const vec_t* va, const vec_t* vb, pr_t pr,
                          bint acc) noexcept nogil:
    """wv48[i] (=|+=) sum_{t<4} pool[i+t] * pr.s16[t], pool = va || vb read as tap_t lanes (`a` is va's
    lane view of that type). A narrowed accumulator (wcells16_t / wcells32_t) takes the same sum modulo its cells."""
    cdef int64_t taps[4]
    cdef int t
    if wacc48_t is wvec_t:
        _mac_4tap_wide(wv, a, va, vb, pr, acc)
    else:
        for t in range(4):
            taps[t] = <int16_t>((pr >> (16 * t)) & 0xFFFF)
        if wacc48_t is wcells16_t:
            q7_mac4_c16(wv.c, va.u16, vb.u16, tap_t is s16a, taps, _one_tap(pr), acc)
        else:
            q7_mac4_c32(wv.c, va.u16, vb.u16, tap_t is s16a, taps, _one_tap(pr), acc)


cdef inline void _mac_4tap_wide(wvec_t* wv, const tap_t* a, const vec_t* va, const vec_t* vb, pr_t pr,
                                bint acc) noexcept nogil:
    """mac_4tap into the 64-bit cells of a wvec_t. |sum| < 4 * 2^16 * 2^15 = 2^33, so an overwrite never wraps the
    48-bit lane."""
    cdef vec_t p1, p2, p3
    cdef vec_t pool[2]
    cdef const tap_t* q1 = <const tap_t*>p1.u8
    cdef const tap_t* q2 = <const tap_t*>p2.u8
    cdef const tap_t* q3 = <const tap_t*>p3.u8
    cdef const tap_t* w = a
    cdef int64_t c0 = <int16_t>(pr & 0xFFFF), c1 = <int16_t>((pr >> 16) & 0xFFFF)
    cdef int64_t c2 = <int16_t>((pr >> 32) & 0xFFFF), c3 = <int16_t>((pr >> 48) & 0xFFFF)
    cdef int64_t c = 0
    cdef int64_t x[32]
    cdef int64_t taps[4]
    cdef int i
    # one tap (a scalar multiply of one window: tap 0 reads va itself, tap t lanes t .. t + 31 of the pool): the
    # same result, no window shifts
    cdef int t = _one_tap(pr)
    if t >= 0:
        c = <int16_t>((pr >> (16 * t)) & 0xFFFF)
    if t >= 0 and Q7_MAC1_LEAF:
        if acc:
            wvec_as(wv, 48)
        else:
            _overwrite(wv, 48, 32)
        q7_mac1_16(wv.c, va.u16, vb.u16, t, tap_t is s16a, c, acc)
        return
    if t > 0:
        pool[0] = va[0]
        pool[1] = vb[0]
        w = (<const tap_t*>pool[0].u8) + t          # the two registers are contiguous: lanes t .. t + 31
    if t >= 0:
        for i in range(32):      # products into a local first: `w` (may_alias) could alias wv for GCC
            x[i] = <int64_t>(<int32_t>w[i] * <int32_t>c)
        if acc:
            wvec_as(wv, 48)
            for i in range(32):
                wv.c[i] = sext(<int64_t>(<uint64_t>wv.c[i] + <uint64_t>x[i]), 48)
        else:
            _overwrite(wv, 48, 32)
            memcpy(wv.c, x, sizeof(x))
        return
    if Q7_MAC1_LEAF:        # the same levels have q7_mac4_16's SIMD body
        taps[0], taps[1], taps[2], taps[3] = c0, c1, c2, c3
        if acc:
            wvec_as(wv, 48)
        else:
            _overwrite(wv, 48, 32)
        q7_mac4_16(wv.c, va.u16, vb.u16, tap_t is s16a, taps, acc)
        return
    _pool16_shifts(&p1, &p2, &p3, va, vb)
    # each product of a 16-bit lane and a signed 16-bit tap fits int32 (|u16 x s16| < 2^31): 32-bit multiplies, then
    # a 64-bit sum (no 64-bit multiply, which SSE2 / AVX2 lack); into a local first, as above
    cdef int32_t d0 = <int32_t>c0, d1 = <int32_t>c1, d2 = <int32_t>c2, d3 = <int32_t>c3
    for i in range(32):
        x[i] = (<int64_t>(<int32_t>a[i] * d0) + <int64_t>(<int32_t>q1[i] * d1)) \
            + (<int64_t>(<int32_t>q2[i] * d2) + <int64_t>(<int32_t>q3[i] * d3))
    if acc:
        wvec_as(wv, 48)
        for i in range(32):
            wv.c[i] = sext(<int64_t>(<uint64_t>wv.c[i] + <uint64_t>x[i]), 48)
        return
    _overwrite(wv, 48, 32)
    memcpy(wv.c, x, sizeof(x))


cdef inline void mac_pair16(wacc48_t* wv, const tap_t* a, const tap_t* b, int64_t ca, int64_t cb,
                            bint acc) noexcept nogil:
    """mac_pair on 16-bit lanes, into a wvec_t or a narrowed accumulator (wcells16_t / wcells32_t), which takes
    the same sum modulo its cells."""
    if wacc48_t is wvec_t:
        mac_pair(wv, a, b, ca, cb, acc)
    elif wacc48_t is wcells16_t:
        if tap_t is u16a:
            q7_mac_pair_u16_c16(wv.c, <const uint16_t*>a, <const uint16_t*>b, ca, cb, acc)
        else:
            q7_mac_pair_s16_c16(wv.c, <const int16_t*>a, <const int16_t*>b, ca, cb, acc)
    else:
        if tap_t is u16a:
            q7_mac_pair_u16_c32(wv.c, <const uint16_t*>a, <const uint16_t*>b, ca, cb, acc)
        else:
            q7_mac_pair_s16_c32(wv.c, <const int16_t*>a, <const int16_t*>b, ca, cb, acc)


cdef inline void mac_pair(wvec_t* wv, const pair_t* a, const pair_t* b, int64_t ca, int64_t cb,
                          bint acc) noexcept nogil:
    """wv[i] (=|+=) a[i] * ca + b[i] * cb in the 24-bit (8-bit lanes) or 48-bit (16-bit lanes) view. The weights
    are 16-bit: unsigned (0..65535) with u16 lanes, either with s16 lanes, signed with u8 lanes."""
    cdef int bits = 24 * <int>sizeof(pair_t)
    if acc:
        wvec_as(wv, bits)
    else:
        _overwrite(wv, bits, 64 // sizeof(pair_t))
    if pair_t is u8a:
        q7_mac_pair_u8(wv.c, <const uint8_t*>a, <const uint8_t*>b, ca, cb, acc)
    elif pair_t is u16a:
        q7_mac_pair_u16(wv.c, <const uint16_t*>a, <const uint16_t*>b, ca, cb, acc)
    else:
        q7_mac_pair_s16(wv.c, <const int16_t*>a, <const int16_t*>b, ca, cb, acc)


cdef inline void mac_96(wvec_t* wv, const vec_t* va, const vec_t* vb, bint acc) noexcept nogil:
    """wv96[i] (=|+=) va.s32[i] * vb.s32[i], signed, wrapping at 2^96 (lane i = cells 2i, 2i+1)."""
    cdef int i
    cdef int64_t p
    if acc:
        wvec_as(wv, 96)
        for i in range(16):
            q7_add128_s64(&wv.c[2 * i], <int64_t>va.s32[i] * <int64_t>vb.s32[i])
            wv.c[2 * i + 1] = sext(wv.c[2 * i + 1], 32)
        return
    _overwrite(wv, 96, 32)
    if Q7_MUL96_LEAF:
        q7_mul96(wv.c, <const int32_t*>va.s32, <const int32_t*>vb.s32)
        return
    for i in range(16):
        p = <int64_t>va.s32[i] * <int64_t>vb.s32[i]
        wv.c[2 * i] = p
        wv.c[2 * i + 1] = -1 if p < 0 else 0


# mulus4tn16xr16: 4-tap MAC (overwrite): wv48[i] = sum_{t<4} pool.u16[i+t] * pr.s16[t], pool = lo
# (lanes 0..31) || hi (32..63), tap 0 on lo; first factor unsigned, pr taps signed (the C fallback of the 8-bit
# sibling IVP_MULUS4TA2N8XR8, docs/intrinsics.md §3.3; the 16-bit taps are pr's 16-bit fields)
cdef inline void mulus4tn16xr16(wacc48_t* wv, const vec_t* hi, const vec_t* lo, pr_t pr) noexcept nogil:
    mac_4tap(wv, lo.u16, lo, hi, pr, False)

# mulus4tan16xr16: as mulus4tn16xr16, accumulating: wv48[i] += sum_{t<4} pool.u16[i+t] * pr.s16[t]
cdef inline void mulus4tan16xr16(wacc48_t* wv, const vec_t* hi, const vec_t* lo, pr_t pr) noexcept nogil:
    mac_4tap(wv, lo.u16, lo, hi, pr, True)

# mul4tn16xr16: wv48[i] = sum_{t<4} pool.s16[i+t] * pr.s16[t], pool = lo || hi (signed x signed)
cdef inline void mul4tn16xr16(wacc48_t* wv, const vec_t* hi, const vec_t* lo, pr_t pr) noexcept nogil:
    mac_4tap(wv, lo.s16, lo, hi, pr, False)

# mul4tan16xr16: wv48[i] += sum_{t<4} pool.s16[i+t] * pr.s16[t], pool = lo || hi (signed x signed)
cdef inline void mul4tan16xr16(wacc48_t* wv, const vec_t* hi, const vec_t* lo, pr_t pr) noexcept nogil:
    mac_4tap(wv, lo.s16, lo, hi, pr, True)

# dmulqa2n8xr8: dual-quad 8-bit MAC into two 24-bit accumulators, operands as the C intrinsic takes them
# (acc_hi, acc_lo, v3, v2, v1, v0, pr): acc_lo24[i] += sum_{j<4} vj.s8[i] * pr.s8[j]; acc_hi24[i] += sum_{j<4}
# vj.s8[i] * pr.s8[4+j] (8 products per lane; the last vector takes byte 0: docs/intrinsics.md §3.4)
cdef inline void dmulqa2n8xr8(wvec_t* wh, wvec_t* wl, const vec_t* v3, const vec_t* v2, const vec_t* v1,
                              const vec_t* v0, pr_t pr) noexcept nogil:
    cdef int64_t c[8]
    cdef int i, j
    cdef int64_t x0, x1, x2, x3
    for j in range(8):
        c[j] = <int8_t>((pr >> (8 * j)) & 0xFF)
    wvec_as(wl, 24)
    wvec_as(wh, 24)
    for i in range(64):
        x0 = v0.s8[i]; x1 = v1.s8[i]; x2 = v2.s8[i]; x3 = v3.s8[i]
        wl.c[i] = sext(wl.c[i] + x0 * c[0] + x1 * c[1] + x2 * c[2] + x3 * c[3], 24)
        wh.c[i] = sext(wh.c[i] + x0 * c[4] + x1 * c[5] + x2 * c[6] + x3 * c[7], 24)

# muluupan16xr16: paired unsigned MAC: wv48[i] += va.u16[i] * pr.u16[1] + vb.u16[i] * pr.u16[0] (`p` = paired;
# the first vector takes the scalar's high 16 bits: the paired family's convention, docs/intrinsics.md §3.5)
cdef inline void muluupan16xr16(wacc48_t* wv, const vec_t* va, const vec_t* vb, pr_t pr) noexcept nogil:
    mac_pair16(wv, va.u16, vb.u16, <int64_t>((pr >> 16) & 0xFFFF), <int64_t>(pr & 0xFFFF), True)

# mulsupn16xr16: paired signed x unsigned MAC (overwrite): wv48[i] = va.s16[i] * pr.u16[1] +
# vb.s16[i] * pr.u16[0] (`su` = the vectors signed, the scalar unsigned; docs/intrinsics.md §3.5)
cdef inline void mulsupn16xr16(wacc48_t* wv, const vec_t* va, const vec_t* vb, pr_t pr) noexcept nogil:
    mac_pair16(wv, va.s16, vb.s16, <int64_t>((pr >> 16) & 0xFFFF), <int64_t>(pr & 0xFFFF), False)

# muluspa2n8xr16: paired MAC on 8-bit lanes: wv24[i] += va.u8[i] * hi16(w) + vb.u8[i] * lo16(w),
# w = pr bits [0, 32), weights signed (docs/anchors.md §7 probe T8)
cdef inline void muluspa2n8xr16(wvec_t* wv, const vec_t* va, const vec_t* vb, pr_t pr) noexcept nogil:
    mac_pair(wv, va.u8, vb.u8, <int16_t>((pr >> 16) & 0xFFFF), <int16_t>(pr & 0xFFFF), True)

# muln_2x32: wv96[i] = va.s32[i] * vb.s32[i], signed; on a narrowed accumulator (a translation's, docs/asm.md §9)
# the same product modulo the cell: its low bits are the low bits of the lanes' product
cdef inline void muln_2x32(wacc96_t* wv, const vec_t* va, const vec_t* vb) noexcept nogil:
    cdef int i
    if wacc96_t is wvec_t:
        mac_96(wv, va, vb, False)
    elif wacc96_t is wcells16_t:
        for i in range(16):
            wv.c[i] = <uint16_t>(va.u32[i] * vb.u32[i])
    else:
        for i in range(16):
            wv.c[i] = va.u32[i] * vb.u32[i]

# mulan_2x32: wv96[i] += va.s32[i] * vb.s32[i], wrapping at 2^96
cdef inline void mulan_2x32(wvec_t* wv, const vec_t* va, const vec_t* vb) noexcept nogil:
    mac_96(wv, va, vb, True)
