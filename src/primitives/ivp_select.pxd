# cython: language_level=3
"""IVP select / shuffle (docs/firmware.md §6.2 B21), the dcmprs expand, predicated moves (§6.1 `t` forms) and the
lane broadcast. pool = vs (low half) || vr (high half); selectors are read before any output is written."""
from libc.stdint cimport uint8_t, uint16_t, uint32_t
from q7regs cimport vec_t, vbool_t, vb_spread, vb_to_mask, q7_permute2_u8, q7_permute2_u16, q7_permute2_u32, \
    q7_dsel_u16_merge
from ivp_lanes cimport merge, merge_mask
from ivp_mem cimport expand_bytes


cdef inline void dsel_lanes(vec_t* vu, vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr,
                            int lane_bytes) noexcept nogil:
    """Two permutations of pool = vs || vr in lanes of lane_bytes (2 or 4): vu[k] from the low half of
    selector lane k (its low 6 / 5 bits), vt[k] from its high half."""
    cdef vec_t hi, ou, ot
    cdef int k
    if lane_bytes == 2:
        for k in range(32):
            hi.u16[k] = sr.u16[k] >> 8                   # sr.u8[2k+1] (the permute reads the low 6 bits)
        q7_permute2_u16(ou.u16, vs.u16, vr.u16, sr.u16)  # low 6 bits of sr.u16[k] = sr.u8[2k] & 0x3F
        q7_permute2_u16(ot.u16, vs.u16, vr.u16, hi.u16)
    else:
        for k in range(16):
            hi.u32[k] = sr.u32[k] >> 16                  # sr.u16[2k+1]
        q7_permute2_u32(ou.u32, vs.u32, vr.u32, sr.u32)  # low 5 bits of sr.u32[k] = sr.u16[2k] & 0x1F
        q7_permute2_u32(ot.u32, vs.u32, vr.u32, hi.u32)
    vu[0] = ou
    vt[0] = ot


cdef inline void dsel_merged(vec_t* vu, vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr,
                             vbool_t vb, int lane_bytes) noexcept nogil:
    """dsel_lanes merged under vb: lanes whose predicate bit is false keep vu / vt."""
    cdef vec_t ou, ot, m
    dsel_lanes(&ou, &ot, vs, vr, sr, lane_bytes)
    vb_to_mask(vb, lane_bytes, &m)
    merge_mask(vu, &ou, &m)
    merge_mask(vt, &ot, &m)


# sel2nx8: vt[k] = pool[sr[k] & 0x7F], pool = vs (bytes 0..63) || vr (64..127)
cdef inline void sel2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr) noexcept nogil:
    q7_permute2_u8(vt.u8, vs.u8, vr.u8, sr.u8)

# selnx16: vt[k] = pool16[sr[k] & 0x3F], pool = vs (lanes 0..31) || vr (32..63)
cdef inline void selnx16(vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr) noexcept nogil:
    q7_permute2_u16(vt.u16, vs.u16, vr.u16, sr.u16)

# seln_2x32: vt[k] = pool32[sr[k] & 0x1F], pool = vs (lanes 0..15) || vr (16..31)
cdef inline void seln_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr) noexcept nogil:
    q7_permute2_u32(vt.u32, vs.u32, vr.u32, sr.u32)


# Legal sel2nx8i immediates and their lane maps (q7emu choice; docs/firmware.md §6.2 / §8.1.12: the table's
# patterns are not exposed). pool = vs (0..63) || vr (64..127):
#   0x00 EXTRACT_1_OF_2_OFF_0  vt[k] = pool[2k]        0x01 EXTRACT_1_OF_2_OFF_1  vt[k] = pool[2k+1]
#   0x02 INTERLEAVE_1_LO       vt[2k] = pool[k],    vt[2k+1] = pool[64+k]   (k < 32)
#   0x03 INTERLEAVE_1_HI       vt[2k] = pool[32+k], vt[2k+1] = pool[96+k]   (k < 32)
#   0x08..0x0B EXTRACT_1_OF_4_OFF_j  vt[k] = pool[(4k + j) & 127]
#   0x10 ROTATE_RIGHT_1  vt[k] = pool[k+1]            0x11 ROTATE_RIGHT_4  vt[k] = pool[k+4]
#   53 (0x35) INTERLEAVE_ODD  vt[2k] = pool[2k+1], vt[2k+1] = pool[64+2k+1]  (k < 32): the high bytes of two
#        16-bit-lane vectors, interleaved (seed @0x01004fc8's immediate, not in the table: docs/model.md §8 item 20)

# sel2nx8i: vt = fixed permutation `imm` of pool = vs || vr (map above; other imms copy vs)
cdef inline void sel2nx8i(vec_t* vt, const vec_t* vs, const vec_t* vr, int imm) noexcept nogil:
    # the lane map as a byte index vector into pool = vs || vr, then one two-register permute
    cdef vec_t idx
    cdef int k, j
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
    q7_permute2_u8(vt.u8, vs.u8, vr.u8, idx.u8)


# sel2nx8i_s4: nibble unpack into 16-bit lanes: vt.s16[k] = nibble ((k & 1) ^ H) of pool byte
# 16*C + (k >> 1), zero-extended, or sign-extended when S; imm = S<<4 | H<<3 | C (C = 0..7 picks a
# 16-byte chunk of pool = vs || vr; H = 1 puts the high nibble first). q7emu choice (docs/firmware.md §8.2.8)
cdef inline void sel2nx8i_s4(vec_t* vt, const vec_t* vs, const vec_t* vr, int imm) noexcept nogil:
    # byte 16*C + (k >> 1) of pool = vs || vr into both bytes of 16-bit lane k (one permute), then the
    # per-lane nibble shift 4 * ((k & 1) ^ H) and the optional sign extension (n ^ 8) - 8
    cdef vec_t idx, x, o
    cdef int k
    cdef int c = imm & 7, h = (imm >> 3) & 1, s = (imm >> 4) & 1
    cdef uint16_t sx = <uint16_t>(8 if s else 0)
    cdef uint16_t n
    for k in range(64):
        idx.u8[k] = <uint8_t>(16 * c + (k >> 2))
    q7_permute2_u8(x.u8, vs.u8, vr.u8, idx.u8)
    for k in range(32):
        n = ((x.u16[k] & 0xFF) >> (4 * ((k & 1) ^ h))) & 0xF
        o.u16[k] = <uint16_t>((n ^ sx) - sx)
    vt[0] = o

# dselnx16: vu[k] = pool16[sr.u8[2k] & 0x3F], vt[k] = pool16[sr.u8[2k+1] & 0x3F] (q7emu choice of the
# index packing: selector lane k holds both indexes, low byte -> vu, high byte -> vt)
cdef inline void dselnx16(vec_t* vu, vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr) noexcept nogil:
    dsel_lanes(vu, vt, vs, vr, sr, 2)

# dselnx16t: dselnx16 merged under vb (16-bit lanes: bit 2k); false lanes keep vu / vt
cdef inline void dselnx16t(vec_t* vu, vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr,
                           vbool_t vb) noexcept nogil:
    q7_dsel_u16_merge(vu.u16, vt.u16, vs.u16, vr.u16, sr.u16, vb_spread(vb, 2))

# dseln_2x32t: vu[k] = pool32[sr.u16[2k] & 0x1F], vt[k] = pool32[sr.u16[2k+1] & 0x1F], merged under vb
# (32-bit lanes: bit 4k); q7emu choice of the index packing
cdef inline void dseln_2x32t(vec_t* vu, vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr,
                             vbool_t vb) noexcept nogil:
    dsel_merged(vu, vt, vs, vr, sr, vb, 4)

# dcmprs2nx8: expand: vt[k] = vb[k] ? vr[popcount(vb bits below k)] : vr[63]
cdef inline void dcmprs2nx8(vec_t* vt, const vec_t* vr, vbool_t vb) noexcept nogil:
    expand_bytes(vt, vr.u8, vb)

# mov2nx8t: vt[k] = vb[k] ? vs[k] : vt[k] (8-bit lanes)
cdef inline void mov2nx8t(vec_t* vt, const vec_t* vs, vbool_t vb) noexcept nogil:
    merge(vt, vs, vb, 1)

# movnx16t: vt[k] = vb[2k] ? vs[k] : vt[k] (16-bit lanes)
cdef inline void movnx16t(vec_t* vt, const vec_t* vs, vbool_t vb) noexcept nogil:
    merge(vt, vs, vb, 2)

# movn_2x32t: vt[k] = vb[4k] ? vs[k] : vt[k] (32-bit lanes)
cdef inline void movn_2x32t(vec_t* vt, const vec_t* vs, vbool_t vb) noexcept nogil:
    merge(vt, vs, vb, 4)

# repnx16: vt[k] = vs[lane & 31] for every k (broadcast one 16-bit lane)
cdef inline void repnx16(vec_t* vt, const vec_t* vs, int lane) noexcept nogil:
    cdef uint16_t x = vs.u16[lane & 31]
    cdef int k
    for k in range(32):
        vt.u16[k] = x
