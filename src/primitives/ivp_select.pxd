# cython: language_level=3
"""IVP select / shuffle (docs/firmware.md §6.2 B21), the dcmprs expand, predicated moves (§6.1 `t` forms) and the
lane broadcast. Two-register sources come high half first, as the C intrinsics take them (docs/intrinsics.md §3.1):
pool = lo (low half) || hi (high half); dual selects return (odd, even), the outputs of the odd / even selector
pieces (§3.2). Selectors are read before any output is written."""
from libc.stdint cimport uint8_t, uint16_t, uint32_t
from q7regs cimport vec_t, vbool_t, vpred_src_t, q7_permute2_u8, q7_permute2_u16, q7_permute2_u32, \
    q7_dsel_u16_merge, q7_bits_to_bytes, q7_copy64
from ivp_lanes cimport merge, merge_mask
from ivp_mem cimport expand_bytes


cdef inline void dsel_lanes32(vec_t* odd, vec_t* even, const vec_t* hi, const vec_t* lo,
                              const vec_t* sel) noexcept nogil:
    """Two permutations of pool = lo || hi in 32-bit lanes: even[k] from the low 16-bit half of selector lane k (its
    low 5 bits), odd[k] from its high half. (The 16-bit form is q7_dsel_u16_merge.)"""
    cdef vec_t up, oe, oo
    cdef int k
    for k in range(16):
        up.u32[k] = sel.u32[k] >> 16                  # sel.u16[2k+1]
    q7_permute2_u32(oe.u32, lo.u32, hi.u32, sel.u32)  # low 5 bits of sel.u32[k] = sel.u16[2k] & 0x1F
    q7_permute2_u32(oo.u32, lo.u32, hi.u32, up.u32)
    q7_copy64(even, &oe)
    q7_copy64(odd, &oo)


# sel2nx8: vt[k] = pool[sel[k] & 0x7F], pool = lo (bytes 0..63) || hi (64..127)
cdef inline void sel2nx8(vec_t* vt, const vec_t* hi, const vec_t* lo, const vec_t* sel) noexcept nogil:
    q7_permute2_u8(vt.u8, lo.u8, hi.u8, sel.u8)

# selnx16: vt[k] = pool16[sel[k] & 0x3F], pool16 = lo (lanes 0..31) || hi (32..63)
cdef inline void selnx16(vec_t* vt, const vec_t* hi, const vec_t* lo, const vec_t* sel) noexcept nogil:
    q7_permute2_u16(vt.u16, lo.u16, hi.u16, sel.u16, -1)

# selnx16_chunk: selnx16's chunk form (optable.Op.chunk_form; docs/asm.md §9, lookup chunks): vt[k] = pool16[16 c +
# (sel[k] & 0xF)], c in 0..3 -- selnx16 itself wherever every index it reads lies in chunk c (bits 4, 5 = c), or reads
# a lane of the pool equal to the one at the same place in chunk c. Not an op of its own: a translation's form
cdef inline void selnx16_chunk(vec_t* vt, const vec_t* hi, const vec_t* lo, const vec_t* sel, int c) noexcept nogil:
    q7_permute2_u16(vt.u16, lo.u16, hi.u16, sel.u16, c & 3)

# seln_2x32: vt[k] = pool32[sel[k] & 0x1F], pool32 = lo (lanes 0..15) || hi (16..31)
cdef inline void seln_2x32(vec_t* vt, const vec_t* hi, const vec_t* lo, const vec_t* sel) noexcept nogil:
    q7_permute2_u32(vt.u32, lo.u32, hi.u32, sel.u32)


# Legal sel2nx8i immediates and their lane maps (the numbers are q7emu's choice: docs/firmware.md §6.2 / §8.1.12 does
# not expose the table's patterns and no public source gives them; the patterns' meanings follow their IVP_SELI_*
# names, docs/intrinsics.md §3.1). pool = lo (0..63) || hi (64..127):
#   0x00 EXTRACT_1_OF_2_OFF_0  vt[k] = pool[2k]        0x01 EXTRACT_1_OF_2_OFF_1  vt[k] = pool[2k+1]
#   0x02 INTERLEAVE_1_LO       vt[2k] = pool[k],    vt[2k+1] = pool[64+k]   (k < 32)
#   0x03 INTERLEAVE_1_HI       vt[2k] = pool[32+k], vt[2k+1] = pool[96+k]   (k < 32)
#   0x08..0x0B EXTRACT_1_OF_4_OFF_j  vt[k] = pool[(4k + j) & 127]
#   0x10 ROTATE_RIGHT_1  vt[k] = pool[k+1]            0x11 ROTATE_RIGHT_4  vt[k] = pool[k+4]
#   53 (0x35) INTERLEAVE_ODD  vt[2k] = pool[2k+1], vt[2k+1] = pool[64+2k+1]  (k < 32): the high bytes of two
#        16-bit-lane vectors, interleaved (seed @0x01004fc8's immediate, not in the table: docs/model.md §8 item 20)

# sel2nx8i: vt = fixed permutation `imm` of pool = lo || hi (map above; other imms copy lo)
cdef inline void sel2nx8i(vec_t* vt, const vec_t* hi, const vec_t* lo, int imm) noexcept nogil:
    # the lane map as a byte index vector into pool = vs || vr, then one two-register permute
    cdef vec_t idx
    cdef int k, j
    if Q7_SEL_PAIRS_LEAF and q7_sel2_byte_pairs(vt.u8, lo.u8, hi.u8, imm):
        return
    if imm == 0x00 or imm == 0x01:
        for k in range(64):
            idx.u8[k] = <uint8_t>(2 * k + imm)
    elif imm == 0x02 or imm == 0x03:
        j = 32 * (imm - 2)
        for k in range(32):
            idx.u8[2 * k] = <uint8_t>(j + k)
            idx.u8[2 * k + 1] = <uint8_t>(64 + j + k)
    elif 0x08 <= imm <= 0x0B:
        j = imm - 8
        for k in range(64):
            idx.u8[k] = <uint8_t>((4 * k + j) & 127)
    elif imm == 0x10 or imm == 0x11:
        j = 1 if imm == 0x10 else 4
        for k in range(64):
            idx.u8[k] = <uint8_t>(k + j)
    elif imm == 53:
        for k in range(32):
            idx.u8[2 * k] = <uint8_t>(2 * k + 1)
            idx.u8[2 * k + 1] = <uint8_t>(64 + 2 * k + 1)
    else:
        for k in range(64):
            idx.u8[k] = <uint8_t>k
    q7_permute2_u8(vt.u8, lo.u8, hi.u8, idx.u8)


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__AVX2__) || defined(__AVX512F__)
    #include <immintrin.h>
    #elif defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* sel2nx8i_s4's unpack of one 16-byte chunk: o[2j] = nibble h of chunk[j], o[2j + 1] = the other nibble, 16-bit
       lanes, zero-extended (sgn: sign-extended from 4 bits, (n ^ 8) - 8). The nibbles are split by a mask and a
       shift, interleaved byte-wise (first, second) and widened to 16 bits, in the level's widest stores (GCC's form
       of the strided lane loop took about 60 instructions). o is written after chunk is read. */
    static inline void q7_unpack_nibbles16(uint16_t *o, const uint8_t *chunk, int h, int sgn) {
    #if defined(__SSE2__)
        const __m128i m4 = _mm_set1_epi8(0x0F);
        __m128i x = _mm_loadu_si128((const __m128i *)chunk);
        __m128i lo = _mm_and_si128(x, m4), hi = _mm_and_si128(_mm_srli_epi16(x, 4), m4);
        __m128i f = h ? hi : lo, s = h ? lo : hi;
        __m128i i0 = _mm_unpacklo_epi8(f, s), i1 = _mm_unpackhi_epi8(f, s);   /* lanes 0..15, 16..31 as bytes */
        if (sgn) {      /* sign-extend the 4-bit values within their bytes before widening */
            const __m128i b8 = _mm_set1_epi8(8);
            i0 = _mm_sub_epi8(_mm_xor_si128(i0, b8), b8);
            i1 = _mm_sub_epi8(_mm_xor_si128(i1, b8), b8);
        }
    #if defined(__AVX512BW__)
        __m256i both = _mm256_set_m128i(i1, i0);
        __m512i w = sgn ? _mm512_cvtepi8_epi16(both) : _mm512_cvtepu8_epi16(both);
        _mm512_storeu_si512((void *)o, w);
    #elif defined(__AVX2__)
        __m256i w0 = sgn ? _mm256_cvtepi8_epi16(i0) : _mm256_cvtepu8_epi16(i0);
        __m256i w1 = sgn ? _mm256_cvtepi8_epi16(i1) : _mm256_cvtepu8_epi16(i1);
        _mm256_storeu_si256((__m256i *)o, w0);
        _mm256_storeu_si256((__m256i *)(o + 16), w1);
    #else
        const __m128i zero = _mm_setzero_si128();
        __m128i e0 = sgn ? _mm_cmpgt_epi8(zero, i0) : zero, e1 = sgn ? _mm_cmpgt_epi8(zero, i1) : zero;
        _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi8(i0, e0));
        _mm_storeu_si128((__m128i *)(o + 8), _mm_unpackhi_epi8(i0, e0));
        _mm_storeu_si128((__m128i *)(o + 16), _mm_unpacklo_epi8(i1, e1));
        _mm_storeu_si128((__m128i *)(o + 24), _mm_unpackhi_epi8(i1, e1));
    #endif
    #else
        uint16_t t[32];
        int j;
        for (j = 0; j < 16; j++) {
            unsigned f = h ? chunk[j] >> 4 : chunk[j] & 0xFu, s = h ? chunk[j] & 0xFu : chunk[j] >> 4;
            t[2 * j] = (uint16_t)(sgn ? (int)(f ^ 8u) - 8 : (int)f);
            t[2 * j + 1] = (uint16_t)(sgn ? (int)(s ^ 8u) - 8 : (int)s);
        }
        memcpy(o, t, 64);
    #endif
    }
    /* sel2nx8i's byte-pair patterns as lane operations on 16-bit lanes (IMM 0x00: each lane's low byte, lo's lanes
       then hi's; 0x01: the high bytes; 53: lo's high byte, then hi's, per lane), where the index vector and the
       two-register byte permute are a 64-step byte loop at SSE2 (the generic level): a mask or a shift and a
       saturating pack (the bytes are below 256, so packuswb keeps them), or a mask, a shift and an or. AVX2 has
       it too, on 256-bit vectors: its permute (in-lane shuffles) takes about 110 host instructions where the
       128-bit body took about 25 and the 256-bit one about 12 (bench/count_instructions.py). AVX-512
       VBMI's permute is one vpermi2b, so that level keeps sel2nx8i's index vector and permute, the reference
       form, as the portable levels do. Returns 0 for the other immediates; o is written after lo and hi are read. */
    #if defined(__SSE2__) && !defined(__AVX512VBMI__)
    #define Q7_SEL_PAIRS_LEAF 1
    #else
    #define Q7_SEL_PAIRS_LEAF 0
    #endif
    /* one body at two widths: V the vector type, P its intrinsics' prefix, S their integer suffix, N its bytes, and
       PACKED(v) what puts a pack's quadwords in order (AVX2's packus packs within each 128-bit half: its result is
       (x0 lo, x1 lo, x0 hi, x1 hi), and one permute fixes it; SSE2's is in order) */
    #define Q7_SEL2_BYTE_PAIRS(V, P, S, N, PACKED) \
        const V low = P##set1_epi16(0x00FF), high = P##set1_epi16((short)0xFF00); \
        V x[2 * 64 / (N)], out[64 / (N)]; \
        int q; \
        if (imm != 0x00 && imm != 0x01 && imm != 53) \
            return 0; \
        for (q = 0; q < 64 / (N); q++) { \
            x[q] = P##loadu_##S((const V *)(lo + (N) * q)); \
            x[64 / (N) + q] = P##loadu_##S((const V *)(hi + (N) * q)); \
        } \
        for (q = 0; q < 64 / (N); q++) { \
            if (imm == 53) \
                out[q] = P##or_##S(P##and_##S(x[64 / (N) + q], high), P##srli_epi16(x[q], 8)); \
            else if (imm == 0x01) \
                out[q] = PACKED(P##packus_epi16(P##srli_epi16(x[2 * q], 8), P##srli_epi16(x[2 * q + 1], 8))); \
            else \
                out[q] = PACKED(P##packus_epi16(P##and_##S(x[2 * q], low), P##and_##S(x[2 * q + 1], low))); \
        } \
        for (q = 0; q < 64 / (N); q++) \
            P##storeu_##S((V *)(o + (N) * q), out[q]); \
        return 1;
    #define Q7_PACKED_AVX2(v) _mm256_permute4x64_epi64(v, 0xD8)
    #define Q7_PACKED_SSE2(v) (v)
    static inline int q7_sel2_byte_pairs(uint8_t *o, const uint8_t *lo, const uint8_t *hi, int imm) {
    #if Q7_SEL_PAIRS_LEAF && defined(__AVX2__)
        Q7_SEL2_BYTE_PAIRS(__m256i, _mm256_, si256, 32, Q7_PACKED_AVX2)
    #elif Q7_SEL_PAIRS_LEAF
        Q7_SEL2_BYTE_PAIRS(__m128i, _mm_, si128, 16, Q7_PACKED_SSE2)
    #else
        (void)o; (void)lo; (void)hi; (void)imm;
        return 0;       /* not called: Q7_SEL_PAIRS_LEAF is 0 */
    #endif
    }
    """
    void q7_unpack_nibbles16(uint16_t* o, const uint8_t* chunk, int h, int sgn) nogil
    const bint Q7_SEL_PAIRS_LEAF   # 1 where q7_sel2_byte_pairs has a body (SSE2 without AVX2: the generic level)
    int q7_sel2_byte_pairs(uint8_t* o, const uint8_t* lo, const uint8_t* hi, int imm) nogil


# sel2nx8i_s4: nibble unpack into 16-bit lanes: vt.s16[k] = nibble ((k & 1) ^ H) of pool byte
# 16*C + (k >> 1), zero-extended, or sign-extended when S; imm = S<<4 | H<<3 | C (C = 0..7 picks a
# 16-byte chunk of pool = vs || vr: chunks 0..3 come from the FIRST operand, the order seeds @0x010052ee and
# @0x010051a9 fix; H = 1 puts the high nibble first). q7emu choice (docs/firmware.md §8.2.8, docs/model.md §8 item 2)
cdef inline void sel2nx8i_s4(vec_t* vt, const vec_t* vs, const vec_t* vr, int imm) noexcept nogil:
    # chunk C is 16 contiguous bytes of the pool: vs bytes 16C .. (C < 4), else vr bytes 16(C - 4) ..; byte j of it
    # gives 16-bit lanes 2j (nibble H) and 2j + 1 (nibble 1 - H), then the optional sign extension (n ^ 8) - 8
    # (q7_unpack_nibbles16; its portable body is the reference)
    cdef int c = imm & 7
    cdef const uint8_t* chunk = &vs.u8[16 * c] if c < 4 else &vr.u8[16 * (c - 4)]
    q7_unpack_nibbles16(vt.u16, chunk, (imm >> 3) & 1, (imm >> 4) & 1)


# dselnx16: even[k] = pool16[sel.u8[2k] & 0x3F], odd[k] = pool16[sel.u8[2k+1] & 0x3F], pool16 = lo || hi
# (Cadence's user-guide interleave, docs/intrinsics.md §3.2)
cdef inline void dselnx16(vec_t* odd, vec_t* even, const vec_t* hi, const vec_t* lo, const vec_t* sel) noexcept nogil:
    # the predicated form's leaf with every lane written (both selector bytes looked up in one pass over the pool)
    q7_dsel_u16_merge(even.u16, odd.u16, lo.u16, hi.u16, sel.u16, ~(<vbool_t>0), ~(<vbool_t>0), -1, -1)

# dselnx16t: dselnx16 merged under the vbool2N vb: bit 2k gates even[k], bit 2k+1 gates odd[k] (false: old value)
cdef inline void dselnx16t(vec_t* odd, vec_t* even, const vec_t* hi, const vec_t* lo, const vec_t* sel,
                           vbool_t vb) noexcept nogil:
    q7_dsel_u16_merge(even.u16, odd.u16, lo.u16, hi.u16, sel.u16, (vb & <vbool_t>0x5555555555555555) * 3,
                      ((vb >> 1) & <vbool_t>0x5555555555555555) * 3, -1, -1)

# dselnx16_chunk, dselnx16t_chunk: the chunk forms of dselnx16 and dselnx16t (as selnx16_chunk): even[k] = pool16[16
# c_even + (sel.u8[2k] & 0xF)], odd[k] = pool16[16 c_odd + (sel.u8[2k+1] & 0xF)], c_even and c_odd in 0..3
cdef inline void dselnx16_chunk(vec_t* odd, vec_t* even, const vec_t* hi, const vec_t* lo, const vec_t* sel,
                                int c_even, int c_odd) noexcept nogil:
    q7_dsel_u16_merge(even.u16, odd.u16, lo.u16, hi.u16, sel.u16, ~(<vbool_t>0), ~(<vbool_t>0), c_even & 3, c_odd & 3)

cdef inline void dselnx16t_chunk(vec_t* odd, vec_t* even, const vec_t* hi, const vec_t* lo, const vec_t* sel,
                                 vbool_t vb, int c_even, int c_odd) noexcept nogil:
    q7_dsel_u16_merge(even.u16, odd.u16, lo.u16, hi.u16, sel.u16, (vb & <vbool_t>0x5555555555555555) * 3,
                      ((vb >> 1) & <vbool_t>0x5555555555555555) * 3, c_even & 3, c_odd & 3)

# dseln_2x32t: even[k] = pool32[sel.u16[2k] & 0x1F], odd[k] = pool32[sel.u16[2k+1] & 0x1F], pool32 = lo || hi,
# merged under the vboolN vb: lane 2k (bit 4k) gates even[k], lane 2k+1 (bit 4k+2) odd[k] (q7emu choice, by
# analogy with dselnx16t: no public source uses this form)
cdef inline void dseln_2x32t(vec_t* odd, vec_t* even, const vec_t* hi, const vec_t* lo, const vec_t* sel,
                             vbool_t vb) noexcept nogil:
    cdef vec_t oo, oe, m
    dsel_lanes32(&oo, &oe, hi, lo, sel)
    q7_bits_to_bytes((vb & <vbool_t>0x1111111111111111) * 15, m.u8)
    merge_mask(even, &oe, &m)
    q7_bits_to_bytes(((vb >> 2) & <vbool_t>0x1111111111111111) * 15, m.u8)
    merge_mask(odd, &oo, &m)

# dcmprs2nx8: expand: vt[k] = vb[k] ? vr[popcount(vb bits below k)] : vr[63]
cdef inline void dcmprs2nx8(vec_t* vt, const vec_t* vr, vbool_t vb) noexcept nogil:
    expand_bytes(vt, vr.u8, vb)

# mov2nx8t: vt[k] = vb[k] ? vs[k] : vt[k] (8-bit lanes)
cdef inline void mov2nx8t(vec_t* vt, const vec_t* vs, vpred_src_t vb) noexcept nogil:
    merge(vt, vs, vb, 1)

# movnx16t: vt[k] = vb[2k] ? vs[k] : vt[k] (16-bit lanes)
cdef inline void movnx16t(vec_t* vt, const vec_t* vs, vpred_src_t vb) noexcept nogil:
    merge(vt, vs, vb, 2)

# movn_2x32t: vt[k] = vb[4k] ? vs[k] : vt[k] (32-bit lanes)
cdef inline void movn_2x32t(vec_t* vt, const vec_t* vs, vpred_src_t vb) noexcept nogil:
    merge(vt, vs, vb, 4)

# repnx16: vt[k] = vs[lane & 31] for every k (broadcast one 16-bit lane)
cdef inline void repnx16(vec_t* vt, const vec_t* vs, int lane) noexcept nogil:
    cdef uint16_t x = vs.u16[lane & 31]
    cdef int k
    for k in range(32):
        vt.u16[k] = x
