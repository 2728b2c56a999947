# cython: language_level=3
"""IVP wvec -> vec packs (docs/firmware.md §6.2 B10). packvr*: arithmetic right shift by sh, round half up
(+1 << (sh-1)), saturate to the output lane (signed, or unsigned for packvru*); packvrnr*: shift, no
rounding, wrap; packl / packm / packh: the low / middle / high third of each wide lane (wraps). The
shift is clamped to <= 23 for 8-bit and <= 32 for 16/32-bit output. The output lane type picks the
wvec view: 8-bit lanes read 24-bit lanes, 16-bit read 48-bit, 32-bit read 96-bit."""
from libc.stdint cimport uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t
from q7regs cimport vec_t, wvec_t, wacc48_t, wacc96_t, wcells16_t, sext, wvec_as, q7_copy64, q7_round_shift_sat96
from ivp_lanes cimport u8a, s8a, u16a, s16a, u32a


cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__AVX2__) || defined(__AVX512F__)
    #include <immintrin.h>
    #endif
    #if defined(__AVX2__) && !defined(__AVX512F__)
    #define Q7_PACK16_LEAF 1
    #else
    #define Q7_PACK16_LEAF 0
    #endif
    /* packvrnrnx48's lane loop at AVX2: o[i] = bits s .. s + 15 of the 48-bit lane in cell i (0 <= s <= 32), 32 lanes.
       GCC narrowed the 64-bit cells to 16 bits with lane-crossing permutes, shuffles and a saturating pack (55
       instructions); here each 64-bit lane of the shifted cells gives its low word to one word of a qword (three
       word blends: qword j = cells j, j + 4, j + 8, j + 12 of a 16-cell block), then one in-lane byte shuffle and a
       dword permute put the words in lane order. AVX-512 narrows in one instruction (vpmovqw) and the other levels
       keep the lane loop (Q7_PACK16_LEAF 0), the reference. Reads all of c before writing o. */
    static inline void q7_pack16_shift(uint16_t *o, const int64_t *c, int s) {
    #if Q7_PACK16_LEAF
        const __m128i cnt = _mm_cvtsi32_si128(s);
        const __m256i order = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                                               0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
        const __m256i dwords = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        __m256i out[2];
        int g;
        for (g = 0; g < 2; g++) {
            const int64_t *b = c + 16 * g;
            __m256i a0 = _mm256_srl_epi64(_mm256_loadu_si256((const __m256i *)b), cnt);
            __m256i a1 = _mm256_srl_epi64(_mm256_loadu_si256((const __m256i *)(b + 4)), cnt);
            __m256i a2 = _mm256_srl_epi64(_mm256_loadu_si256((const __m256i *)(b + 8)), cnt);
            __m256i a3 = _mm256_srl_epi64(_mm256_loadu_si256((const __m256i *)(b + 12)), cnt);
            __m256i t = _mm256_blend_epi16(a0, _mm256_slli_epi64(a1, 16), 0x22);
            t = _mm256_blend_epi16(t, _mm256_slli_epi64(a2, 32), 0x44);
            t = _mm256_blend_epi16(t, _mm256_slli_epi64(a3, 48), 0x88);
            out[g] = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(t, order), dwords);
        }
        _mm256_storeu_si256((__m256i *)o, out[0]);
        _mm256_storeu_si256((__m256i *)(o + 16), out[1]);
    #else
        int i;
        for (i = 0; i < 32; i++) o[i] = (uint16_t)((uint64_t)c[i] >> s);
    #endif
    }
    /* packvrn_2x96's lane loop at AVX2 and AVX-512: o[i] = sat32(round-half-up((hi:lo) >> s)) for the 16 96-bit lanes
       lo = c[2i], hi = c[2i + 1] (sign-extended from 32 bits), 0 <= s <= 32; the reference is the 128-bit lane loop
       (q7_round_shift_sat96) of packvrn_2x96, which the other levels run (Q7_PACK96_LEAF 0). In 64-bit lanes:
       t = lo + round with its carry into h = hi (+1); the result's 32 bits are bits s .. s + 31 of t (a logical
       shift: s + 31 <= 63); it fits int32 when the 96-bit value h:t does in 32 + s bits, i.e. when t's bits from
       s + 31 up, taken as a signed number, and t's sign are both h; otherwise it saturates to h's sign. Reads all
       of c before writing o. */
    #if defined(__AVX512F__)
    #define Q7_PACK96_LEAF 1
    static inline void q7_pack96_sat(int32_t *o, const int64_t *c, int s) {
        const __m512i evens = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
        const __m512i odds = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
        const __m512i rnd = _mm512_set1_epi64(s > 0 ? (long long)(1ULL << (s - 1)) : 0);
        const __m512i one = _mm512_set1_epi64(1), max32 = _mm512_set1_epi64(0x7FFFFFFF);
        const __m128i cs = _mm_cvtsi32_si128(s), ctop = _mm_cvtsi32_si128(s + 31);
        __m256i r[2];
        int g;
        for (g = 0; g < 2; g++) {
            __m512i a = _mm512_loadu_si512((const void *)(c + 16 * g));
            __m512i b = _mm512_loadu_si512((const void *)(c + 16 * g + 8));
            __m512i lo = _mm512_permutex2var_epi64(a, evens, b), hi = _mm512_permutex2var_epi64(a, odds, b);
            __m512i t = _mm512_add_epi64(lo, rnd);
            __m512i h = _mm512_mask_add_epi64(hi, _mm512_cmplt_epu64_mask(t, lo), hi, one);
            __mmask8 fits = _mm512_cmpeq_epi64_mask(_mm512_sra_epi64(t, ctop), h)
                & _mm512_cmpeq_epi64_mask(_mm512_srai_epi64(t, 63), h);
            __m512i sat = _mm512_xor_si512(_mm512_srai_epi64(h, 63), max32);
            r[g] = _mm512_cvtepi64_epi32(_mm512_mask_blend_epi64(fits, sat, _mm512_srl_epi64(t, cs)));
        }
        _mm256_storeu_si256((__m256i *)o, r[0]);
        _mm256_storeu_si256((__m256i *)(o + 8), r[1]);
    }
    #elif defined(__AVX2__)
    #define Q7_PACK96_LEAF 1
    /* (AVX2 has neither 64-bit arithmetic shifts nor unsigned compares: x >> n arithmetic is ((x >>> n) ^ m) - m,
       m = 2^(63 - n); an unsigned compare is a signed one with both sign bits flipped. The four lanes of a group
       come out of the unpacks in the order 0, 2, 1, 3.) */
    static inline void q7_pack96_sat(int32_t *o, const int64_t *c, int s) {
        const __m256i rnd = _mm256_set1_epi64x(s > 0 ? (long long)(1ULL << (s - 1)) : 0);
        const __m256i sb = _mm256_set1_epi64x((long long)0x8000000000000000ULL), zero = _mm256_setzero_si256();
        const __m256i max32 = _mm256_set1_epi64x(0x7FFFFFFF), mtop = _mm256_set1_epi64x((long long)(1ULL << (32 - s)));
        const __m256i order = _mm256_setr_epi32(0, 4, 2, 6, 0, 4, 2, 6);
        const __m128i cs = _mm_cvtsi32_si128(s), ctop = _mm_cvtsi32_si128(s + 31);
        __m128i r[4];
        int g;
        for (g = 0; g < 4; g++) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(c + 8 * g));
            __m256i b = _mm256_loadu_si256((const __m256i *)(c + 8 * g + 4));
            __m256i lo = _mm256_unpacklo_epi64(a, b), hi = _mm256_unpackhi_epi64(a, b);
            __m256i t = _mm256_add_epi64(lo, rnd);
            __m256i carry = _mm256_cmpgt_epi64(_mm256_xor_si256(lo, sb), _mm256_xor_si256(t, sb));
            __m256i h = _mm256_sub_epi64(hi, carry);
            __m256i top = _mm256_sub_epi64(_mm256_xor_si256(_mm256_srl_epi64(t, ctop), mtop), mtop);
            __m256i fits = _mm256_and_si256(_mm256_cmpeq_epi64(top, h),
                                            _mm256_cmpeq_epi64(_mm256_cmpgt_epi64(zero, t), h));
            __m256i sat = _mm256_xor_si256(_mm256_cmpgt_epi64(zero, h), max32);
            __m256i v = _mm256_blendv_epi8(sat, _mm256_srl_epi64(t, cs), fits);
            r[g] = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v, order));
        }
        for (g = 0; g < 4; g++)
            _mm_storeu_si128((__m128i *)(o + 4 * g), r[g]);
    }
    #else
    #define Q7_PACK96_LEAF 0
    static inline void q7_pack96_sat(int32_t *o, const int64_t *c, int s) { (void)o; (void)c; (void)s; }
    #endif
    """
    const bint Q7_PACK16_LEAF      # 1 where q7_pack16_shift has its SIMD body (AVX2 without AVX-512)
    void q7_pack16_shift(uint16_t* o, const int64_t* c, int s) nogil
    const bint Q7_PACK96_LEAF      # 1 where q7_pack96_sat has its SIMD body (AVX2, AVX-512)
    void q7_pack96_sat(int32_t* o, const int64_t* c, int s) nogil


ctypedef fused out_t:             # may_alias lane types: see ivp_lanes.pxd
    u8a
    s8a
    u16a
    s16a

ctypedef fused word_t:
    u8a
    u16a
    u32a


cdef inline int64_t _sat(int64_t x, int64_t lo, int64_t hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef inline int64_t _shr_round(int64_t x, int sh) noexcept nogil:
    """Arithmetic right shift with round half up (+1 << (sh-1)); sh = 0 is exact."""
    if sh <= 0:
        return x
    return (x + ((<int64_t>1) << (sh - 1))) >> sh


cdef inline int _clamp_sh(int sh, int hi) noexcept nogil:
    return 0 if sh < 0 else (hi if sh > hi else sh)


cdef inline void pack_round_sat(out_t* vt, wvec_t* wv, int sh) noexcept nogil:
    """vt[i] = saturate(round-half-up(wv[i] >> sh)) to out_t's range."""
    cdef int i
    cdef int s = _clamp_sh(sh, 23 if sizeof(out_t) == 1 else 32)
    cdef int64_t lo, hi
    if out_t is s8a:
        lo, hi = -128, 127
    elif out_t is u8a:
        lo, hi = 0, 255
    elif out_t is s16a:
        lo, hi = -32768, 32767
    else:
        lo, hi = 0, 65535
    cdef int bits = 24 * <int>sizeof(out_t)
    wvec_as(wv, bits)
    for i in range(<int>(64 // sizeof(out_t))):     # the lane's value: its cell's low `bits` bits, sign-extended
        vt[i] = <out_t>_sat(_shr_round(sext(wv.c[i], bits), s), lo, hi)


cdef inline void pack_shift_wrap(out_t* vt, wvec_t* wv, int sh) noexcept nogil:
    """vt[i] = the low bits of (wv[i] >> sh), no rounding, no saturation."""
    cdef int i
    cdef int s = _clamp_sh(sh, 23 if sizeof(out_t) == 1 else 32)
    cdef out_t o[64]
    wvec_as(wv, 24 * <int>sizeof(out_t))
    if out_t is u16a and Q7_PACK16_LEAF:
        q7_pack16_shift(<uint16_t*>vt, wv.c, s)
        return
    # into a local first: vt (may_alias) could alias wv for GCC. A logical shift: the output's bits s .. s + width - 1
    # (<= 47) are the same as the arithmetic shift's, SSE2 / AVX2 have it for 64-bit lanes (psrlq), and it reads only
    # the cell's low 48 bits (a 48-bit cell's upper bits are not part of its lane: q7regs.pxd)
    for i in range(<int>(64 // sizeof(out_t))):
        o[i] = <out_t>((<uint64_t>wv.c[i]) >> s)
    q7_copy64(vt, o)            # vector moves: memcpy became 8-byte loads of o, each waiting on o's vector stores


cdef inline void pack16_shift_wrap(u16a* vt, wacc48_t* wv, int sh) noexcept nogil:
    """pack_shift_wrap to 16-bit lanes from a wvec_t or a narrowed accumulator (q7regs.pxd wcells16_t /
    wcells32_t), whose cells hold only their lanes' low 16 / 32 bits: a translation narrows an accumulator only
    when its packs' sh + 16 fits the cell (docs/asm.md §9)."""
    cdef int i
    cdef int s = _clamp_sh(sh, 32)
    cdef uint16_t o[32]
    if wacc48_t is wvec_t:
        pack_shift_wrap(vt, wv, sh)
    else:
        for i in range(32):
            o[i] = <uint16_t>((<uint64_t>wv.c[i]) >> s)
        q7_copy64(vt, o)


cdef inline void pack_bits(word_t* vt, wvec_t* wv, int shift) noexcept nogil:
    """vt[i] = bits [shift, shift + width) of wide lane i (96-bit lanes: the low word only)."""
    cdef int i
    if word_t is u32a:
        wvec_as(wv, 96)
        for i in range(16):
            vt[i] = <u32a>wv.c[2 * i]
    else:
        wvec_as(wv, 24 * <int>sizeof(word_t))
        for i in range(<int>(64 // sizeof(word_t))):
            vt[i] = <word_t>(wv.c[i] >> shift)


# packvr2nx24: vt.s8[i] = sat8(round(wv24[i] >> sh)), sh <= 23
cdef inline void packvr2nx24(vec_t* vt, wvec_t* wv, int sh) noexcept nogil: pack_round_sat(vt.s8, wv, sh)

# packvrnx48: vt.s16[i] = sat16(round(wv48[i] >> sh)), sh <= 32
cdef inline void packvrnx48(vec_t* vt, wvec_t* wv, int sh) noexcept nogil: pack_round_sat(vt.s16, wv, sh)

# packvru2nx24: vt.u8[i] = usat8(round(wv24[i] >> sh)) (negative -> 0)
cdef inline void packvru2nx24(vec_t* vt, wvec_t* wv, int sh) noexcept nogil: pack_round_sat(vt.u8, wv, sh)

# packvrunx48: vt.u16[i] = usat16(round(wv48[i] >> sh))
cdef inline void packvrunx48(vec_t* vt, wvec_t* wv, int sh) noexcept nogil: pack_round_sat(vt.u16, wv, sh)

# packvrnr2nx24: vt.u8[i] = low 8 bits of (wv24[i] >> sh), no rounding (docs/anchors.md §7 probe T20)
cdef inline void packvrnr2nx24(vec_t* vt, wvec_t* wv, int sh) noexcept nogil: pack_shift_wrap(vt.u8, wv, sh)

# packvrnrnx48: vt.u16[i] = low 16 bits of (wv48[i] >> sh), no rounding
cdef inline void packvrnrnx48(vec_t* vt, wacc48_t* wv, int sh) noexcept nogil: pack16_shift_wrap(vt.u16, wv, sh)

# packvrn_2x96: vt.s32[i] = sat32(round(wv96[i] >> sh)), sh <= 32 (128-bit arithmetic). On a narrowed accumulator
# (a translation's, docs/asm.md §9, value ranges) lane i is read as cell i's sign extension -- the lane itself where
# the translation proved every value the lane takes fits the cell as a signed number -- through the same formula
# (GCC folds it to a copy at a constant shift of 0, MX's; at another shift it is the scalar 128-bit formula, slower
# than the wide form's AVX2 leaf: no kernel has one).
cdef inline void packvrn_2x96(vec_t* vt, wacc96_t* wv, int sh) noexcept nogil:
    cdef int i
    cdef int s = _clamp_sh(sh, 32)
    cdef int64_t lane
    if wacc96_t is wvec_t:
        wvec_as(wv, 96)
        if Q7_PACK96_LEAF:
            q7_pack96_sat(<int32_t*>vt.s32, wv.c, s)
            return
        for i in range(16):
            vt.s32[i] = q7_round_shift_sat96(wv.c[2 * i], wv.c[2 * i + 1], s)
    else:
        for i in range(16):
            if wacc96_t is wcells16_t:
                lane = <int16_t>wv.c[i]
            else:
                lane = <int32_t>wv.c[i]
            vt.s32[i] = q7_round_shift_sat96(lane, -1 if lane < 0 else 0, s)

# packl2nx24: vt.u8[i] = low 8 bits of wv24[i]
cdef inline void packl2nx24(vec_t* vt, wvec_t* wv) noexcept nogil: pack_bits(vt.u8, wv, 0)

# packlnx48: vt.u16[i] = bits 0..15 of wv48[i]
cdef inline void packlnx48(vec_t* vt, wvec_t* wv) noexcept nogil: pack_bits(vt.u16, wv, 0)

# packmnx48: vt.u16[i] = bits 16..31 of wv48[i]
cdef inline void packmnx48(vec_t* vt, wvec_t* wv) noexcept nogil: pack_bits(vt.u16, wv, 16)

# packhnx48: vt.u16[i] = bits 32..47 of wv48[i]
cdef inline void packhnx48(vec_t* vt, wvec_t* wv) noexcept nogil: pack_bits(vt.u16, wv, 32)

# packln_2x96: vt.u32[i] = low 32 bits of wv96[i]
cdef inline void packln_2x96(vec_t* vt, wvec_t* wv) noexcept nogil: pack_bits(vt.u32, wv, 0)
