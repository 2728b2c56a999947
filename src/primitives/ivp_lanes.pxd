# cython: language_level=3
"""Lane-loop helpers of the IVP primitive families (Spike-style: a mnemonic's body is one helper call).

Each helper is a `cdef inline ... noexcept nogil` function over a fused lane type: the caller picks the
lane view of the vec_t union (`vs.s16`, `vr.u8`, ...), so width and signedness are fixed at compile time
and every specialisation is a branch-free loop of 64 / sizeof(lane) lanes that GCC vectorises at -O3. The
operation selector (`op`) is a compile-time constant at every call site; each helper tests it outside
its lane loops. Helpers that produce a vec write a local first and copy it out, so a destination may
alias any source (the kernels issue `bminnx16 v26, v26, v4`). Predicated `...t` forms are the op into
a local plus `merge` (vec) or `vb_merge` (vbool): lanes whose predicate is false keep their old value.
"""
from libc.stdint cimport uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t
from libc.string cimport memcpy, memset
from q7regs cimport vec_t, wvec_t, vbool_t, vmask_t, vpred_t, vpred_src_t, vumask_ptr_t, vb_spread, vb_to_mask, \
    vb_from_mask, Q7_MASK_COMPARE, q7_lt_bits, q7_merge_bits, q7_copy64

# The lane types of the helpers: the stdint types with GCC's may_alias attribute (where the compiler has it). A
# primitive reads and writes a vec_t in whatever lane view its op has (the kernels issue and2nx8 on a register the next
# addnx16 reads as 16-bit lanes): through the union's members, as the C primitives did before the helpers,
# every access may alias every other (GCC's union rule); through a uint16_t* / uint32_t* pointer it would
# not, and GCC could reorder a 32-bit store and a 16-bit load of the same register. may_alias lane
# pointers keep the union's semantics. Callers still pass the union members (vs.u16, vr.s32): Cython picks
# the specialisation whose base type matches.
cdef extern from *:
    """
    #include <stdint.h>
    #if (defined(__GNUC__) || defined(__clang__)) && !defined(Q7_PLAIN_C)
    #define Q7_MAY_ALIAS __attribute__((__may_alias__))
    #else
    #define Q7_MAY_ALIAS    /* MSVC assumes no type-based aliasing rule: every pointer may alias */
    #endif
    typedef uint8_t  Q7_MAY_ALIAS q7_u8a;
    typedef int8_t   Q7_MAY_ALIAS q7_s8a;
    typedef uint16_t Q7_MAY_ALIAS q7_u16a;
    typedef int16_t  Q7_MAY_ALIAS q7_s16a;
    typedef uint32_t Q7_MAY_ALIAS q7_u32a;
    typedef int32_t  Q7_MAY_ALIAS q7_s32a;
    #include <string.h>
    #if defined(__AVX2__) || defined(__AVX512F__)
    #include <immintrin.h>
    #define Q7_SHIFT16_LEAF 1
    #elif defined(__SSE2__)
    #include <emmintrin.h>
    #define Q7_SHIFT16_LEAF 1
    #else
    #define Q7_SHIFT16_LEAF 0
    #endif
    /* The variable 16-bit shifts (srlnx16, sllnx16): o[k] = a[k] shifted right by r[k] (r < 0: left by -r; |r| >= 16
       gives 0), r[k] = s[k] for the logical right shift (LEFT = 0: the amount lane's signed 16-bit value), r[k] =
       -sext6(s[k]) for the left shift (LEFT = 1: its signed 6-bit value). AVX2 has no 16-bit variable shift: GCC
       widened each half to 32-bit lanes and packed back (74 and 102 instructions per op). Here the even and odd
       lanes shift in their 32-bit containers, one vpsllvd each (below); AVX-512 BW shifts 16-bit lanes.
       SSE2 has no variable shift at all: there a shift is a multiply by a power of two, the high or the low half of
       the product by the AVX2 body's count (below; GCC's lane loop was scalar there). A first form took |r| and its
       sign apart, 121 instructions per srlnx16 and 198 per sllnx16 in the MX kernel's translation at generic; the
       count's form, 102 and 137 (bench/count_instructions.py --by-primitive). The portable body is the reference
       (lanes_srl / lanes_sll keep their lane loops where Q7_SHIFT16_LEAF is 0); o may alias a or s (every input is
       read before o is written). */
    static inline void q7_shift16_var(uint16_t *o, const uint16_t *a, const int16_t *s, int left) {
    #if defined(__AVX512BW__)
        __m512i x = _mm512_loadu_si512((const void *)a), n = _mm512_loadu_si512((const void *)s);
        __m512i r = left ? _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_srai_epi16(_mm512_slli_epi16(n, 10), 10))
                         : n;
        __m512i neg = _mm512_sub_epi16(_mm512_setzero_si512(), r);
        _mm512_storeu_si512((void *)o, _mm512_or_si512(_mm512_srlv_epi16(x, r), _mm512_sllv_epi16(x, neg)));
    #elif defined(__AVX2__)
        /* one left shift per container: with r the right amount, x << (16 - r) holds in bits 16..31 x >> r (r >= 0)
           or x << -r (r < 0), and vpsllvd gives 0 for a count of 32 or more or a negative one (read unsigned): r <= -16
           and r > 16; r = 16 (count 0) leaves x in bits 0..15 and 0 in bits 16..31 */
        const __m256i k16 = _mm256_set1_epi32(16), low16 = _mm256_set1_epi32(0xFFFF);
        __m256i out[2];
        int h;
        for (h = 0; h < 2; h++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(a + 16 * h));
            __m256i n = _mm256_loadu_si256((const __m256i *)(s + 16 * h));
            __m256i xe = _mm256_and_si256(x, low16), xo = _mm256_srli_epi32(x, 16);   /* even / odd lanes */
            __m256i ce, co;                                                            /* their counts 16 - r */
            if (left) {         /* r = -sext6(n): 16 + sext6(n) */
                ce = _mm256_add_epi32(k16, _mm256_srai_epi32(_mm256_slli_epi32(n, 26), 26));
                co = _mm256_add_epi32(k16, _mm256_srai_epi32(_mm256_slli_epi32(n, 10), 26));
            } else {            /* r = n, a signed 16-bit lane */
                ce = _mm256_sub_epi32(k16, _mm256_srai_epi32(_mm256_slli_epi32(n, 16), 16));
                co = _mm256_sub_epi32(k16, _mm256_srai_epi32(n, 16));
            }
            out[h] = _mm256_blend_epi16(_mm256_srli_epi32(_mm256_sllv_epi32(xe, ce), 16), _mm256_sllv_epi32(xo, co),
                                        0xAA);
        }
        _mm256_storeu_si256((__m256i *)o, out[0]);
        _mm256_storeu_si256((__m256i *)(o + 16), out[1]);
    #elif defined(__SSE2__)
        /* with c = 16 - r (the AVX2 body's count), the result is bits 16..31 of x << c for c in 0..31 (r in -15..16)
           and 0 for any other c (read unsigned: r > 16 or r < -15): for c < 16 the high half of the 16 x 16-bit
           product x * 2^c (pmulhuw), for c >= 16 the low half of x * 2^(c - 16) (pmullw); 2^(c & 15) from a float's
           exponent field ((e + 127) << 23, truncated to int32), its low 16 bits packed (2^15 as 0x8000) */
        const __m128i zero = _mm_setzero_si128(), k15 = _mm_set1_epi16(15), k16 = _mm_set1_epi16(16),
                      k31 = _mm_set1_epi16(31), bias = _mm_set1_epi16(127);
        __m128i out[4];
        int q;
        for (q = 0; q < 4; q++) {
            __m128i x = _mm_loadu_si128((const __m128i *)(a + 8 * q));
            __m128i n = _mm_loadu_si128((const __m128i *)(s + 8 * q));
            __m128i c = left ? _mm_add_epi16(k16, _mm_srai_epi16(_mm_slli_epi16(n, 10), 10))   /* 16 + sext6(n) */
                             : _mm_sub_epi16(k16, n);
            __m128i inrange = _mm_cmpeq_epi16(_mm_subs_epu16(c, k31), zero);       /* c <= 31 (unsigned) */
            __m128i high = _mm_cmpgt_epi16(k16, c);                                /* c < 16: the high half */
            __m128i e = _mm_add_epi16(_mm_and_si128(c, k15), bias);
            __m128i plo = _mm_cvttps_epi32(_mm_castsi128_ps(_mm_slli_epi32(_mm_unpacklo_epi16(e, zero), 23)));
            __m128i phi = _mm_cvttps_epi32(_mm_castsi128_ps(_mm_slli_epi32(_mm_unpackhi_epi16(e, zero), 23)));
            __m128i p = _mm_packs_epi32(_mm_srai_epi32(_mm_slli_epi32(plo, 16), 16),
                                        _mm_srai_epi32(_mm_slli_epi32(phi, 16), 16));
            __m128i y = _mm_or_si128(_mm_and_si128(high, _mm_mulhi_epu16(x, p)),
                                     _mm_andnot_si128(high, _mm_mullo_epi16(x, p)));
            out[q] = _mm_and_si128(y, inrange);
        }
        for (q = 0; q < 4; q++)
            _mm_storeu_si128((__m128i *)(o + 8 * q), out[q]);
    #else
        uint16_t t[32];
        int k;
        for (k = 0; k < 32; k++) {
            int r = left ? -((((int)s[k] & 63) ^ 32) - 32) : (int)s[k];
            unsigned x = a[k];
            t[k] = (uint16_t)(r >= 0 ? (r < 16 ? x >> r : 0u) : (r > -16 ? x << -r : 0u));
        }
        memcpy(o, t, 64);
    #endif
    }
    /* The shifts by an immediate on 16- and 32-bit lanes (sllinx16, srlinx16, srainx16, sllin_2x32, srlin_2x32,
       srain_2x32) where the amount is not a compile-time constant (a translation reads it from its immediates, the
       interpreter from the instruction): GCC's lane loop widened each 16-bit half to 32-bit lanes, shifted, masked
       and packed back (24 instructions per op at avx2). x86's uniform shifts take one amount for every lane, from an
       xmm register, and give 0 for a logical amount of the width or more and the sign for an arithmetic one: the
       ops' rule (lanes_shl_imm / lanes_shr_imm). KIND: 0 left, 1 logical right, 2 arithmetic right; BITS 16 or 32;
       COUNT >= 0 (the callers keep their lane loops for a negative one). Where the amount is a constant the C
       compiler folds it into the shift's immediate form. Reads a before o is written (o may be a). */
    #if defined(__SSE2__)
    #define Q7_SHIFT_IMM_LEAF 1
    #else
    #define Q7_SHIFT_IMM_LEAF 0
    #endif
    /* one uniform shift at the level's vector width (P: the intrinsics' prefix) */
    #define Q7_SHIFT_IMM_AT(P, K, B, x, c) ((K) == 0 ? ((B) == 16 ? P##sll_epi16(x, c) : P##sll_epi32(x, c)) \
        : (K) == 1 ? ((B) == 16 ? P##srl_epi16(x, c) : P##srl_epi32(x, c)) \
        : ((B) == 16 ? P##sra_epi16(x, c) : P##sra_epi32(x, c)))
    #if defined(__AVX512BW__)
    #define Q7_SHIFT_IMM_VEC(K, B, x, c) Q7_SHIFT_IMM_AT(_mm512_, K, B, x, c)
    #elif defined(__AVX2__)
    #define Q7_SHIFT_IMM_VEC(K, B, x, c) Q7_SHIFT_IMM_AT(_mm256_, K, B, x, c)
    #elif defined(__SSE2__)
    #define Q7_SHIFT_IMM_VEC(K, B, x, c) Q7_SHIFT_IMM_AT(_mm_, K, B, x, c)
    #endif
    static inline void q7_shift_imm(void *o, const void *a, int bits, int kind, int count) {
    #if defined(__AVX512BW__)
        const __m128i c = _mm_cvtsi32_si128(count);
        __m512i x = _mm512_loadu_si512(a);
        _mm512_storeu_si512(o, Q7_SHIFT_IMM_VEC(kind, bits, x, c));
    #elif defined(__AVX2__)
        const __m128i c = _mm_cvtsi32_si128(count);
        __m256i x0 = _mm256_loadu_si256((const __m256i *)a), x1 = _mm256_loadu_si256((const __m256i *)a + 1);
        x0 = Q7_SHIFT_IMM_VEC(kind, bits, x0, c);
        x1 = Q7_SHIFT_IMM_VEC(kind, bits, x1, c);
        _mm256_storeu_si256((__m256i *)o, x0);
        _mm256_storeu_si256((__m256i *)o + 1, x1);
    #elif defined(__SSE2__)
        const __m128i c = _mm_cvtsi32_si128(count);
        __m128i x[4];
        int q;
        for (q = 0; q < 4; q++)
            x[q] = Q7_SHIFT_IMM_VEC(kind, bits, _mm_loadu_si128((const __m128i *)a + q), c);
        for (q = 0; q < 4; q++)
            _mm_storeu_si128((__m128i *)o + q, x[q]);
    #else
        (void)o; (void)a; (void)bits; (void)kind; (void)count;     /* not called: the lane loops run */
    #endif
    }
    /* The abs-sub flag ops (babssub2nx8, babssubu2nx8, babssubunx16, ...) at SSE2 without AVX2 (the generic level):
       o[k] = |a[k] - b[k]| as the unsigned lane pattern, the returned vbool's lane k true where a[k] < b[k]
       (LANE_BYTES 1 or 2, the abs-subs the op table has; signed or unsigned). SSE2 has neither the 8-bit signed nor
       the 16-bit unsigned min / max, and GCC's form of the lane loop took about 470 instructions for 8-bit lanes.
       Here lt = the compare (unsigned: both operands' sign bits flipped first), d = a - b wrapping, o = (d ^ lt) - lt
       (the negation where a < b), and the vbool is the compare's byte signs (pmovmskb). Reads a and b before o is
       written. */
    #if defined(__SSE2__) && !defined(__AVX2__)
    #define Q7_ABSDIFF_LEAF 1
    static inline uint64_t q7_absdiff_bits(uint8_t *o, const void *a, const void *b, int lane_bytes, int sgn) {
        const __m128i flip = lane_bytes == 1 ? _mm_set1_epi8((char)0x80) : _mm_set1_epi16((short)0x8000);
        __m128i out[4];
        uint64_t bits = 0;
        int q;
        for (q = 0; q < 4; q++) {
            __m128i x = _mm_loadu_si128((const __m128i *)((const uint8_t *)a + 16 * q));
            __m128i y = _mm_loadu_si128((const __m128i *)((const uint8_t *)b + 16 * q));
            __m128i xs = sgn ? x : _mm_xor_si128(x, flip), ys = sgn ? y : _mm_xor_si128(y, flip), lt, d;
            if (lane_bytes == 1) {
                lt = _mm_cmpgt_epi8(ys, xs);
                d = _mm_sub_epi8(_mm_xor_si128(_mm_sub_epi8(x, y), lt), lt);
            } else {
                lt = _mm_cmpgt_epi16(ys, xs);
                d = _mm_sub_epi16(_mm_xor_si128(_mm_sub_epi16(x, y), lt), lt);
            }
            out[q] = d;
            bits |= (uint64_t)(uint32_t)_mm_movemask_epi8(lt) << (16 * q);
        }
        for (q = 0; q < 4; q++)
            _mm_storeu_si128((__m128i *)(o + 16 * q), out[q]);
        return bits;
    }
    #else
    #define Q7_ABSDIFF_LEAF 0
    static inline uint64_t q7_absdiff_bits(uint8_t *o, const void *a, const void *b, int lane_bytes, int sgn) {
        (void)o; (void)a; (void)b; (void)lane_bytes; (void)sgn;
        return 0;       /* not called: lanes_flag's loop runs where Q7_ABSDIFF_LEAF is 0 */
    }
    #endif
    """
    const bint Q7_ABSDIFF_LEAF      # 1 where q7_absdiff_bits has a body (SSE2 without AVX2: the generic level)
    uint64_t q7_absdiff_bits(uint8_t* o, const void* a, const void* b, int lane_bytes, int sgn) nogil
    const bint Q7_SHIFT16_LEAF      # 1 where q7_shift16_var has a SIMD body (SSE2, AVX2, AVX-512)
    void q7_shift16_var(uint16_t* o, const uint16_t* a, const int16_t* s, int left) nogil
    const bint Q7_SHIFT_IMM_LEAF    # 1 where q7_shift_imm has a SIMD body (SSE2, AVX2, AVX-512)
    void q7_shift_imm(void* o, const void* a, int bits, int kind, int count) nogil
    ctypedef uint8_t u8a "q7_u8a"
    ctypedef int8_t s8a "q7_s8a"
    ctypedef uint16_t u16a "q7_u16a"
    ctypedef int16_t s16a "q7_s16a"
    ctypedef uint32_t u32a "q7_u32a"
    ctypedef int32_t s32a "q7_s32a"

ctypedef fused lane_t:
    u8a
    s8a
    u16a
    s16a
    u32a
    s32a

ctypedef fused ulane_t:
    u8a
    u16a
    u32a

ctypedef fused slane_t:
    s8a
    s16a
    s32a

cdef enum:
    OP_ADD = 0
    OP_SUB = 1
    OP_AND = 2
    OP_OR = 3
    OP_XOR = 4
    CMP_EQ = 0
    CMP_NE = 1
    CMP_LT = 2
    CMP_LE = 3
    FLAG_MIN = 0
    FLAG_MAX = 1
    FLAG_ABSDIFF = 2
    FLAG_ADDNORM = 3
    FLAG_SUBNORM = 4


# ------------------------------------------------------------------------------------ merges
cdef inline void merge_mask(vec_t* vt, const vec_t* x, const vec_t* m) noexcept nogil:
    """vt = x where the lane mask m is all ones, else vt (bit-wise, on 16-bit lanes into a local: a loop GCC
    vectorises at every level; x may alias vt)."""
    cdef vec_t o
    cdef int k
    for k in range(32):
        o.u16[k] = (x.u16[k] & m.u16[k]) | (vt.u16[k] & ~m.u16[k])
    q7_copy64(vt, &o)


cdef inline void merge(vec_t* vt, const vec_t* x, vpred_src_t vb, int lane_bytes) noexcept nogil:
    """vt[k] = vb[k] ? x[k] : vt[k] for lanes of lane_bytes bytes (predicate bit lane_bytes*k; of a lane mask,
    byte lane_bytes*k)."""
    cdef vec_t m
    cdef int k
    if vpred_src_t is vbool_t:
        # the byte blend under the spread predicate (AVX-512: the mask register; AVX2 and SSE2: the byte masks built
        # in registers; vb_to_mask + merge_mask went through memory, and at SSE2 GCC left their byte loop scalar)
        q7_merge_bits(vt.u8, x.u8, vb_spread(vb, lane_bytes))
    elif vpred_src_t is vumask_ptr_t:
        merge_mask(vt, x, &vb.m)        # every lane's bytes already equal (vumask_t): the blend alone
    else:
        # the lane mask spread as vb_spread spreads the bits (each lane's first byte, sign-extended over the lane),
        # then the byte blend
        if lane_bytes == 2:
            for k in range(32):
                m.s16[k] = <int16_t>(<int16_t>(vb.m.u16[k] << 8) >> 8)
        elif lane_bytes == 4:
            for k in range(16):
                m.s32[k] = <int32_t>(vb.m.u32[k] << 24) >> 24
        else:
            q7_copy64(&m, &vb.m)
        merge_mask(vt, x, &m)


cdef inline void mask_merge(vmask_t* vb, const vec_t* new, vbool_t vbp, int lane_bytes) noexcept nogil:
    """vb_merge on a lane mask: the lane mask `new` in the lanes vbp selects, vb's in the others."""
    cdef vbool_t p = vb_spread(vbp, lane_bytes)
    if p == ~(<vbool_t>0):
        q7_copy64(&vb.m, new)           # every lane (a known all-true predicate folds to this)
    else:
        q7_merge_bits(vb.m.u8, new.u8, p)


cdef inline vbool_t vb_merge(vbool_t old, vbool_t new, vbool_t vbp, int lane_bytes) noexcept nogil:
    """The vbool `new` in the lanes vbp selects, `old` in the others (lanes of lane_bytes bytes)."""
    cdef vbool_t p = vb_spread(vbp, lane_bytes)
    return (old & ~p) | (new & p)


# ------------------------------------------------------------------------------------ integer ALU
cdef inline void lanes_arith(vec_t* vt, const ulane_t* a, const ulane_t* b, int op) noexcept nogil:
    """vt[k] = a[k] (+ - & | ^) b[k] on ulane_t lanes, wrapping (lane-wise: vt may alias a or b)."""
    cdef ulane_t* o = <ulane_t*>vt.u8
    cdef int k
    if op == OP_ADD:
        for k in range(<int>(64 // sizeof(ulane_t))):
            o[k] = <ulane_t>(a[k] + b[k])
    elif op == OP_SUB:
        for k in range(<int>(64 // sizeof(ulane_t))):
            o[k] = <ulane_t>(a[k] - b[k])
    elif op == OP_AND:
        for k in range(<int>(64 // sizeof(ulane_t))):
            o[k] = a[k] & b[k]
    elif op == OP_OR:
        for k in range(<int>(64 // sizeof(ulane_t))):
            o[k] = a[k] | b[k]
    else:
        for k in range(<int>(64 // sizeof(ulane_t))):
            o[k] = a[k] ^ b[k]


cdef inline void lanes_cmp(vpred_t* vb, const lane_t* a, const lane_t* b, int op) noexcept nogil:
    """vb = a[k] (== != < <=) b[k] in the lane type's signedness (1/2/4 bits per true lane); into a lane mask
    (vmask_t), the loop's mask itself (1/2/4 bytes of ones per true lane)."""
    cdef vec_t m
    cdef lane_t* mk = <lane_t*>m.u8
    cdef int k
    if op == CMP_EQ:
        for k in range(<int>(64 // sizeof(lane_t))):
            mk[k] = <lane_t>(-1) if a[k] == b[k] else 0
    elif op == CMP_NE:
        for k in range(<int>(64 // sizeof(lane_t))):
            mk[k] = <lane_t>(-1) if a[k] != b[k] else 0
    elif op == CMP_LT:
        for k in range(<int>(64 // sizeof(lane_t))):
            mk[k] = <lane_t>(-1) if a[k] < b[k] else 0
    else:
        for k in range(<int>(64 // sizeof(lane_t))):
            mk[k] = <lane_t>(-1) if a[k] <= b[k] else 0
    if vpred_t is vbool_t:
        vb[0] = vb_from_mask(&m)
    else:
        q7_copy64(&vb.m, &m)


# ------------------------------------------------------------------------------------ flag ALU
cdef inline void lanes_flag(vpred_t* vb, vec_t* vt, const lane_t* a, const lane_t* b, int op) noexcept nogil:
    """The flag-ALU lane loop: a vec result in vt and a flag per lane in vb, a vbool or a lane mask (vmask_t: the
    lane loop's mask itself) (vt may alias a or b).
    FLAG_MIN / FLAG_MAX: vt = min / max(a, b), flag = a < b / a > b (strict: a tie selects b, flag 0);
    FLAG_ABSDIFF: vt = |a - b| (the bit pattern of the unsigned lane), flag = a < b;
    FLAG_ADDNORM / FLAG_SUBNORM: s = a + b / a - b in width + 1 bits, flag = overflow (bit W-1 != bit W),
    vt = flag ? s >> 1 : s."""
    cdef vec_t m, o
    cdef lane_t* mk = <lane_t*>m.u8
    cdef lane_t* ok = <lane_t*>o.u8
    cdef lane_t x, y
    cdef int64_t s, ovf
    cdef int w = 8 * <int>sizeof(lane_t)
    cdef int k
    cdef bint sgn = lane_t is s8a or lane_t is s16a or lane_t is s32a
    # AVX-512 (Q7_MASK_COMPARE, a compile-time constant): the min / max / abs-sub flags come from a compare into a
    # mask register (read before vt, which may alias a or b, is written), and the loops below skip the lane mask
    cdef bint lane_mask = vpred_t is vmask_t
    cdef bint mask_compare = Q7_MASK_COMPARE and op <= FLAG_ABSDIFF and not lane_mask
    cdef vbool_t flags = 0
    if vpred_t is vbool_t:
        if op == FLAG_ABSDIFF and Q7_ABSDIFF_LEAF and sizeof(lane_t) <= 2:
            vb[0] = q7_absdiff_bits(vt.u8, a, b, sizeof(lane_t), sgn)
            return
    if mask_compare:
        flags = q7_lt_bits(b, a, sizeof(lane_t), sgn) if op == FLAG_MAX else q7_lt_bits(a, b, sizeof(lane_t), sgn)
    if op == FLAG_MIN:
        for k in range(<int>(64 // sizeof(lane_t))):
            x = a[k]; y = b[k]
            if not mask_compare:
                mk[k] = <lane_t>(-1) if x < y else 0
            ok[k] = x if x < y else y
    elif op == FLAG_MAX:
        for k in range(<int>(64 // sizeof(lane_t))):
            x = a[k]; y = b[k]
            if not mask_compare:
                mk[k] = <lane_t>(-1) if x > y else 0
            ok[k] = x if x > y else y
    elif op == FLAG_ABSDIFF:
        for k in range(<int>(64 // sizeof(lane_t))):
            x = a[k]; y = b[k]
            if not mask_compare:
                mk[k] = <lane_t>(-1) if x < y else 0
            ok[k] = <lane_t>(<lane_t>(x if x > y else y) - <lane_t>(y if x > y else x))   # max - min
    else:
        for k in range(<int>(64 // sizeof(lane_t))):
            s = (<int64_t>a[k] - <int64_t>b[k]) if op == FLAG_SUBNORM else (<int64_t>a[k] + <int64_t>b[k])
            ovf = ((s >> (w - 1)) ^ (s >> w)) & 1
            mk[k] = <lane_t>(0 - ovf)
            ok[k] = <lane_t>(s >> ovf)
    q7_copy64(vt, &o)
    if vpred_t is vmask_t:
        q7_copy64(&vb.m, &m)
    else:
        vb[0] = flags if mask_compare else vb_from_mask(&m)


# ------------------------------------------------------------------------------------ shifts
cdef inline void lanes_shl_imm(ulane_t* vt, const ulane_t* a, int imm) noexcept nogil:
    """vt = a << imm; imm >= the lane width gives 0."""
    cdef int w = 8 * <int>sizeof(ulane_t)
    cdef int k
    if (ulane_t is u16a or ulane_t is u32a) and Q7_SHIFT_IMM_LEAF and imm >= 0:
        q7_shift_imm(vt, a, w, 0, imm)
        return
    if imm >= w:
        memset(vt, 0, 64)
        return
    for k in range(<int>(64 // sizeof(ulane_t))):
        vt[k] = <ulane_t>(a[k] << (imm & (w - 1)))


cdef inline void lanes_shr_imm(lane_t* vt, const lane_t* a, int imm) noexcept nogil:
    """vt = a >> imm: logical on unsigned lanes (imm >= width gives 0), arithmetic on signed lanes
    (imm clamped to width - 1: sign fill)."""
    cdef int k
    cdef int w = 8 * <int>sizeof(lane_t)
    cdef int sh
    if (lane_t is s16a or lane_t is s32a) and Q7_SHIFT_IMM_LEAF and imm >= 0:
        q7_shift_imm(vt, a, w, 2, imm)
        return
    if (lane_t is u16a or lane_t is u32a) and Q7_SHIFT_IMM_LEAF and imm >= 0:
        q7_shift_imm(vt, a, w, 1, imm)
        return
    if lane_t is s8a or lane_t is s16a or lane_t is s32a:
        sh = imm if imm < w - 1 else w - 1
        for k in range(<int>(64 // sizeof(lane_t))):
            vt[k] = <lane_t>(a[k] >> sh)
    else:
        if imm >= w:
            memset(vt, 0, 64)
            return
        for k in range(<int>(64 // sizeof(lane_t))):
            vt[k] = <lane_t>(a[k] >> (imm & (w - 1)))


cdef inline void lanes_shift_var(vec_t* vt, const ulane_t* a, const slane_t* s, bint left) noexcept nogil:
    """The variable logical shifts' lane loop: vt[k] = a[k] >> d, d < 0 shifting left by -d, |d| >= the width
    giving 0, d the amount to shift right: n for lanes_srl (left = 0), -n for lanes_sll (left = 1), n as each reads
    it. `left` is a constant at both callers: the C compiler keeps one of the two amount reads."""
    cdef vec_t o
    cdef ulane_t* ok = <ulane_t*>o.u8
    cdef int w = 8 * <int>sizeof(ulane_t)
    cdef slane_t d
    cdef ulane_t x, rgt, lft
    cdef int k
    if ulane_t is u16a and slane_t is s16a and Q7_SHIFT16_LEAF:
        q7_shift16_var(<uint16_t*>vt.u16, <const uint16_t*>a, <const int16_t*>s, left)
        return
    for k in range(<int>(64 // sizeof(ulane_t))):
        d = <slane_t>(2 * w - ((s[k] & (4 * w - 1)) ^ (2 * w))) if left else s[k]
        x = a[k]
        rgt = <ulane_t>((x >> (d & (w - 1))) & (<ulane_t>(-1) if d < w else 0))
        lft = <ulane_t>((x << ((<ulane_t>0 - <ulane_t>d) & (w - 1))) & (<ulane_t>(-1) if d > -w else 0))
        ok[k] = rgt if d >= 0 else lft
    q7_copy64(vt, &o)


cdef inline void lanes_srl(vec_t* vt, const ulane_t* a, const slane_t* s) noexcept nogil:
    """vt[k] = a[k] >> n (logical), n = s[k], the amount lane read as a signed integer of the lane's width;
    n < 0 shifts left by -n; |n| >= the width gives 0."""
    lanes_shift_var(vt, a, s, 0)


cdef inline void lanes_sll(vec_t* vt, const ulane_t* a, const slane_t* s) noexcept nogil:
    """vt[k] = a[k] << n, n = the signed (log2(width) + 2)-bit amount in s[k] (the signed view of the amount
    register); n < 0 shifts right (logical) by -n; |n| >= the width gives 0."""
    lanes_shift_var(vt, a, s, 1)


cdef inline void lanes_sra(vec_t* vt, const slane_t* a, const slane_t* s) noexcept nogil:
    """vt[k] = a[k] >> n (arithmetic, n clamped to width - 1), n = the signed (log2(width) + 2)-bit
    amount in s[k]; n < 0 shifts left by -n (-n >= the width gives 0)."""
    cdef vec_t o
    cdef slane_t* ok = <slane_t*>o.u8
    cdef slane_t n, x, r, lft
    cdef int w = 8 * <int>sizeof(slane_t)
    cdef int k
    for k in range(<int>(64 // sizeof(slane_t))):
        n = <slane_t>(((s[k] & (4 * w - 1)) ^ (2 * w)) - 2 * w)
        x = a[k]
        r = <slane_t>(x >> ((n if n < w - 1 else w - 1) & (w - 1)))      # n < 0: any in-range amount (unused)
        lft = <slane_t>((<uint32_t>x) << ((-n) & (w - 1)))
        ok[k] = r if n >= 0 else (lft if n > -w else 0)
    q7_copy64(vt, &o)
