# cython: language_level=3
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The Vision-Q7 IVP primitive library: one small `cdef inline ... nogil` function per IVP op.

Each function is named after the mnemonic (without the `ivp_` prefix), carries a one-line comment
of its semantics and the SPEC section it follows, and works on the plain C register types of
q7regs.pxd. Destinations come first, as in the disassembly (`ivp_addnx16 vt, vs, vr`).
Where SPEC leaves a lane map open, the comment says `q7emu choice:` and docs/ + tests pin it.
Predicated `...t` forms merge: lanes whose predicate bit is false keep the destination's old value.
Callers validate operands (immediates, lengths) before entering nogil code; every function here is
total on any bit pattern (no undefined behaviour, no out-of-range memory access beyond the bytes
the op is documented to touch).
"""
from libc.stdint cimport uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t
from libc.string cimport memcpy, memset
from q7regs cimport (vec_t, wvec_t, vbool_t, pr_t, valign_t, sext, wvec_as, wvec_zero, vb_lane,
                     vb_spread, vb_to_mask, vb_from_mask, q7_permute2_u8, q7_permute2_u16, q7_permute2_u32,
                     Q7_LITTLE_ENDIAN,
                     vb_set)
from q7softfloat cimport (pack_ieee_rne, f16_to_f32_bits, f32_to_f16_bits_rne, f32_is_nan,
                          f16_is_nan, f32_cmp_lt, f16_cmp_lt, f32_trunc_sat, f32_isnan_mask,
                          f32_order_key, f16_order_key, f16_from_int16_scaled, Q7_HAVE_HW_F16,
                          q7_hw_f16_from_s16_scaled)

cdef extern from *:
    int __builtin_popcountll(unsigned long long) nogil
    ctypedef long long int128 "__int128"

# =====================================================================================  loads / stores
# Memory operands are (base pointer, byte offset); `_ip` / `_xp` forms post-increment the offset.

# lv2nx8_i: vt = the 64 bytes at base+off (aligned vector load, no update). SPEC §6.2 Loads (B06)
cdef inline void lv2nx8_i(vec_t* vt, const uint8_t* base, Py_ssize_t off) noexcept nogil:
    memcpy(vt.u8, base + off, 64)

# lv2nx8_ip: vt = the 64 bytes at base+off; off += inc. SPEC §6.2 Loads (B06)
cdef inline void lv2nx8_ip(vec_t* vt, const uint8_t* base, Py_ssize_t* off, Py_ssize_t inc) noexcept nogil:
    memcpy(vt.u8, base + off[0], 64)
    off[0] += inc

# la2nx8_pp: prime the unaligned stream: u = the aligned 64-byte row holding base+off. SPEC §6.2 (B06)
cdef inline void la2nx8_pp(valign_t* u, const uint8_t* base, Py_ssize_t off) noexcept nogil:
    memcpy(u.row, base + (off & ~(<Py_ssize_t>63)), 64)

# la2nx8_ip: vt[j] = byte (off%64 + j) of {u.row || next row}; u = next row; off += 64. SPEC §6.2 (B06)
cdef inline void la2nx8_ip(vec_t* vt, valign_t* u, const uint8_t* base, Py_ssize_t* off) noexcept nogil:
    cdef uint8_t window[128]
    cdef Py_ssize_t a = off[0] & 63
    memcpy(window, u.row, 64)
    memcpy(window + 64, base + (off[0] & ~(<Py_ssize_t>63)) + 64, 64)
    memcpy(vt.u8, window + a, 64)
    memcpy(u.row, window + 64, 64)
    off[0] += 64

# l2a4nx8_ip: vt = the 64 bytes at base+off, read through the 1024-bit two-row window (both LSU
# pipes, no valign priming); off += inc. q7emu choice (SPEC §8.2.9: B06 "dual-row aligning load").
cdef inline void l2a4nx8_ip(vec_t* vt, const uint8_t* base, Py_ssize_t* off, Py_ssize_t inc) noexcept nogil:
    memcpy(vt.u8, base + off[0], 64)
    off[0] += inc

# lav2nx8_xp: vt = the first min(n, 64) bytes at base+off, zero-filled above; off += n (n <= 0 reads
# nothing). Variable-length aligning load for stream tails. SPEC §6.2 (B06); valign carry not modelled.
cdef inline void lav2nx8_xp(vec_t* vt, const uint8_t* base, Py_ssize_t* off, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k = 64 if n > 64 else (n if n > 0 else 0)
    memset(vt.u8, 0, 64)
    if k:
        memcpy(vt.u8, base + off[0], k)
    off[0] += n

# labvdcmprs2nx8_xp: R = 64 bytes at base+off; vt[k] = vb[k] ? R[popcount(vb below k)] : R[63];
# off += stride. Compressed (mask-expanded) load. SPEC §6.2 (B06, dcmprs rule; lane wiring MED).
cdef inline void labvdcmprs2nx8_xp(vec_t* vt, vbool_t vb, const uint8_t* base, Py_ssize_t* off,
                                   Py_ssize_t stride) noexcept nogil:
    cdef const uint8_t* r = base + off[0]
    cdef vec_t o
    cdef int k, n = 0, bit
    for k in range(64):
        bit = <int>((vb >> k) & 1)
        o.u8[k] = r[n] if bit else r[63]
        n += bit
    vt[0] = o
    off[0] += stride


# sv2nx8_ip: store the 64 bytes of vs at base+off; off += inc. SPEC §6.2 (B06 store side)
cdef inline void sv2nx8_ip(const vec_t* vs, uint8_t* base, Py_ssize_t* off, Py_ssize_t inc) noexcept nogil:
    memcpy(base + off[0], vs.u8, 64)
    off[0] += inc

# sav2nx8_xp: store the first min(n, 64) bytes of vs at base+off; off += n. Variable-length store
# for stream tails. SPEC §6.2 (B06 store side)
cdef inline void sav2nx8_xp(const vec_t* vs, uint8_t* base, Py_ssize_t* off, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k = 64 if n > 64 else (n if n > 0 else 0)
    if k:
        memcpy(base + off[0], vs.u8, k)
    off[0] += n

# =====================================================================================  select / shuffle
# sel2nx8: vt[k] = pool[sr[k] & 0x7F], pool = vs (bytes 0..63) || vr (64..127). SPEC §6.2 (B21)
cdef inline void sel2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr) noexcept nogil:
    q7_permute2_u8(vt.u8, vs.u8, vr.u8, sr.u8)


# selnx16: vt[k] = pool16[sr[k] & 0x3F], pool = vs (lanes 0..31) || vr (32..63). SPEC §6.2 (B21)
cdef inline void selnx16(vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr) noexcept nogil:
    q7_permute2_u16(vt.u16, vs.u16, vr.u16, sr.u16)


# seln_2x32: vt[k] = pool32[sr[k] & 0x1F], pool = vs (lanes 0..15) || vr (16..31). SPEC §6.2 (B21)
cdef inline void seln_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr) noexcept nogil:
    q7_permute2_u32(vt.u32, vs.u32, vr.u32, sr.u32)


# Legal sel2nx8i immediates and their lane maps (q7emu choice; SPEC §6.2 / §8.1.12: the table's
# patterns are not exposed). pool = vs (0..63) || vr (64..127):
#   0x00 EXTRACT_1_OF_2_OFF_0  vt[k] = pool[2k]        0x01 EXTRACT_1_OF_2_OFF_1  vt[k] = pool[2k+1]
#   0x02 INTERLEAVE_1_LO       vt[2k] = pool[k],    vt[2k+1] = pool[64+k]   (k < 32)
#   0x03 INTERLEAVE_1_HI       vt[2k] = pool[32+k], vt[2k+1] = pool[96+k]   (k < 32)
#   0x08..0x0B EXTRACT_1_OF_4_OFF_j  vt[k] = pool[(4k + j) & 127]
#   0x10 ROTATE_RIGHT_1  vt[k] = pool[k+1]            0x11 ROTATE_RIGHT_4  vt[k] = pool[k+4]

# sel2nx8i: vt = fixed permutation `imm` of pool = vs || vr (map above; other imms copy vs).
# SPEC §6.2 (B21 tab_selimm_7b); q7emu choice of the lane maps.
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
    else:
        for k in range(64):
            idx.u8[k] = <uint8_t>k
    q7_permute2_u8(vt.u8, vs.u8, vr.u8, idx.u8)



# sel2nx8i_s4: nibble unpack into 16-bit lanes: vt.s16[k] = nibble ((k & 1) ^ H) of pool byte
# 16*C + (k >> 1), zero-extended, or sign-extended when S; imm = S<<4 | H<<3 | C (C = 0..7 picks a
# 16-byte chunk of pool = vs || vr; H = 1 puts the high nibble first). q7emu choice; SPEC §8.2.8
# (TD/MXD "4-bit sub-byte select/unpack" reading), seed bundle @0x010051a9 uses imm 9.
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




# dselnx16: two permutations of pool16 = vs || vr: vu[k] = pool[sr.u8[2k] & 0x3F],
# vt[k] = pool[sr.u8[2k+1] & 0x3F] (selector lane k holds both indexes: low byte -> vu, high
# byte -> vt). SPEC §6.2 (B21); q7emu choice of the index packing.
cdef inline void dselnx16(vec_t* vu, vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr) noexcept nogil:
    cdef vec_t hi, ou, ot
    cdef int k
    for k in range(32):
        hi.u16[k] = sr.u16[k] >> 8          # sr.u8[2k+1] (the permute reads the low 6 bits only)
    q7_permute2_u16(ou.u16, vs.u16, vr.u16, sr.u16)   # low 6 bits of sr.u16[k] = sr.u8[2k] & 0x3F
    q7_permute2_u16(ot.u16, vs.u16, vr.u16, hi.u16)
    vu[0] = ou
    vt[0] = ot


# dselnx16t: dselnx16, merged under vb (16-bit lanes: bit 2k); false lanes keep vu/vt. SPEC §6.2 (B21)
cdef inline void dselnx16t(vec_t* vu, vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr,
                           vbool_t vb) noexcept nogil:
    cdef vec_t hi, ou, ot, m
    cdef int k
    for k in range(32):
        hi.u16[k] = sr.u16[k] >> 8
    q7_permute2_u16(ou.u16, vs.u16, vr.u16, sr.u16)
    q7_permute2_u16(ot.u16, vs.u16, vr.u16, hi.u16)
    vb_to_mask(vb, 2, &m)
    for k in range(64):
        ou.u8[k] = (ou.u8[k] & m.u8[k]) | (vu.u8[k] & ~m.u8[k])
    vu[0] = ou
    for k in range(64):
        ot.u8[k] = (ot.u8[k] & m.u8[k]) | (vt.u8[k] & ~m.u8[k])
    vt[0] = ot


# dseln_2x32t: vu[k] = pool32[sr.u16[2k] & 0x1F], vt[k] = pool32[sr.u16[2k+1] & 0x1F], merged
# under vb (32-bit lanes: bit 4k). SPEC §6.2 (B21); q7emu choice of the index packing.
cdef inline void dseln_2x32t(vec_t* vu, vec_t* vt, const vec_t* vs, const vec_t* vr, const vec_t* sr,
                             vbool_t vb) noexcept nogil:
    cdef vec_t hi, ou, ot, m
    cdef int k
    for k in range(16):
        hi.u32[k] = sr.u32[k] >> 16          # sr.u16[2k+1]
    q7_permute2_u32(ou.u32, vs.u32, vr.u32, sr.u32)   # low 5 bits of sr.u32[k] = sr.u16[2k] & 0x1F
    q7_permute2_u32(ot.u32, vs.u32, vr.u32, hi.u32)
    vb_to_mask(vb, 4, &m)
    for k in range(64):
        ou.u8[k] = (ou.u8[k] & m.u8[k]) | (vu.u8[k] & ~m.u8[k])
    vu[0] = ou
    for k in range(64):
        ot.u8[k] = (ot.u8[k] & m.u8[k]) | (vt.u8[k] & ~m.u8[k])
    vt[0] = ot


# dcmprs2nx8: expand: vt[k] = vb[k] ? vr[popcount(vb bits below k)] : vr[63]. SPEC §6.2 (B21)
cdef inline void dcmprs2nx8(vec_t* vt, const vec_t* vr, vbool_t vb) noexcept nogil:
    cdef vec_t r = vr[0]
    cdef vec_t o
    cdef int k, n = 0, bit
    for k in range(64):
        bit = <int>((vb >> k) & 1)
        o.u8[k] = r.u8[n] if bit else r.u8[63]
        n += bit
    vt[0] = o


# mov2nx8t: vt[k] = vb[k] ? vs[k] : vt[k] (predicated move, 8-bit lanes). SPEC §6.1 `t` forms
cdef inline void mov2nx8t(vec_t* vt, const vec_t* vs, vbool_t vb) noexcept nogil:
    cdef vec_t m
    cdef int k
    vb_to_mask(vb, 1, &m)
    for k in range(64):
        vt.u8[k] = (vs.u8[k] & m.u8[k]) | (vt.u8[k] & ~m.u8[k])


# movnx16t: vt[k] = vb[2k] ? vs[k] : vt[k] (predicated move, 16-bit lanes). SPEC §6.1 `t` forms
cdef inline void movnx16t(vec_t* vt, const vec_t* vs, vbool_t vb) noexcept nogil:
    cdef vec_t m
    cdef int k
    vb_to_mask(vb, 2, &m)
    for k in range(64):
        vt.u8[k] = (vs.u8[k] & m.u8[k]) | (vt.u8[k] & ~m.u8[k])


# movn_2x32t: vt[k] = vb[4k] ? vs[k] : vt[k] (predicated move, 32-bit lanes). SPEC §6.1 `t` forms
cdef inline void movn_2x32t(vec_t* vt, const vec_t* vs, vbool_t vb) noexcept nogil:
    cdef vec_t m
    cdef int k
    vb_to_mask(vb, 4, &m)
    for k in range(64):
        vt.u8[k] = (vs.u8[k] & m.u8[k]) | (vt.u8[k] & ~m.u8[k])


# repnx16: vt[k] = vs[lane] for every k (broadcast one 16-bit lane; lane & 31). ANCHORS §7 (REPNX16)
cdef inline void repnx16(vec_t* vt, const vec_t* vs, int lane) noexcept nogil:
    cdef uint16_t x = vs.u16[lane & 31]
    cdef int k
    for k in range(32):
        vt.u16[k] = x

# =====================================================================================  integer ALU
# add2nx8 / addnx16 / addn_2x32: vt = vs + vr, wrapping. SPEC §6.2 / ANCHORS §7 (IVP_ADD*)
cdef inline void add2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int k
    for k in range(64):
        vt.u8[k] = <uint8_t>(vs.u8[k] + vr.u8[k])

cdef inline void addnx16(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int k
    for k in range(32):
        vt.u16[k] = <uint16_t>(vs.u16[k] + vr.u16[k])

cdef inline void addn_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int k
    for k in range(16):
        vt.u32[k] = vs.u32[k] + vr.u32[k]

# sub2nx8 / subnx16 / subn_2x32: vt = vs - vr, wrapping. SPEC §6.2 / ANCHORS §7 (IVP_SUB*)
cdef inline void sub2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int k
    for k in range(64):
        vt.u8[k] = <uint8_t>(vs.u8[k] - vr.u8[k])

cdef inline void subnx16(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int k
    for k in range(32):
        vt.u16[k] = <uint16_t>(vs.u16[k] - vr.u16[k])

cdef inline void subn_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int k
    for k in range(16):
        vt.u32[k] = vs.u32[k] - vr.u32[k]

# and2nx8 / or2nx8 / xor2nx8: bitwise over all 512 bits (lane view irrelevant). SPEC §6.2
cdef inline void and2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int k
    for k in range(64):
        vt.u8[k] = vs.u8[k] & vr.u8[k]

cdef inline void or2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int k
    for k in range(64):
        vt.u8[k] = vs.u8[k] | vr.u8[k]

cdef inline void xor2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int k
    for k in range(64):
        vt.u8[k] = vs.u8[k] ^ vr.u8[k]

# slli/srli/srai{nx16,n_2x32}: shift every lane by an immediate (imm4 / imm5); logical right fills
# 0, arithmetic right fills the sign; amounts >= the width give 0 (sign fill for srai). SPEC §6.2 (B12)
cdef inline void sllinx16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    if imm >= 16:
        memset(vt.u8, 0, 64)
        return
    for k in range(32):
        vt.u16[k] = <uint16_t>(vs.u16[k] << (imm & 15))



cdef inline void srlinx16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    if imm >= 16:
        memset(vt.u8, 0, 64)
        return
    for k in range(32):
        vt.u16[k] = <uint16_t>(vs.u16[k] >> (imm & 15))



cdef inline void srainx16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    cdef int sh = imm if imm < 15 else 15
    for k in range(32):
        vt.s16[k] = <int16_t>(vs.s16[k] >> sh)

cdef inline void sllin_2x32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    if imm >= 32:
        memset(vt.u8, 0, 64)
        return
    for k in range(16):
        vt.u32[k] = vs.u32[k] << (imm & 31)



cdef inline void srlin_2x32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    if imm >= 32:
        memset(vt.u8, 0, 64)
        return
    for k in range(16):
        vt.u32[k] = vs.u32[k] >> (imm & 31)



cdef inline void srain_2x32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    cdef int sh = imm if imm < 31 else 31
    for k in range(16):
        vt.s32[k] = vs.s32[k] >> sh

# srlnx16 / srln_2x32: per-lane logical right shift by the unsigned lane value of vr; amounts
# >= the width give 0. SPEC §6.2 (B12 "shifting past the width gives 0")
cdef inline void srlnx16(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t o
    cdef int k
    cdef uint16_t a
    for k in range(32):
        a = vr.u16[k]
        o.u16[k] = <uint16_t>((vs.u16[k] >> (a & 15)) & (0xFFFF if a < 16 else 0))
    vt[0] = o


cdef inline void srln_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t o
    cdef int k
    cdef uint32_t a
    for k in range(16):
        a = vr.u32[k]
        o.u32[k] = (vs.u32[k] >> (a & 31)) & (0xFFFFFFFFu if a < 32 else 0u)
    vt[0] = o


# sllnx16 / sranx16: per-lane shift by the signed 6-bit amount in vr (negative reverses the
# direction: sll by -n is a logical right shift by n, sra by -n a left shift by n); past the width
# gives 0 (sll) or the sign fill (sra). SPEC §6.2 (B12)
cdef inline void sllnx16(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    # a = signed 6-bit amount; both directions computed in 16-bit lanes, then selected
    cdef vec_t o
    cdef int k
    cdef int16_t a
    cdef uint16_t x, lft, rgt
    for k in range(32):
        a = <int16_t>(((vr.u16[k] & 0x3F) ^ 0x20) - 0x20)
        x = vs.u16[k]
        lft = <uint16_t>(x << (a & 15))
        rgt = <uint16_t>(x >> ((-a) & 15))
        o.u16[k] = lft if (a >= 0 and a < 16) else (rgt if (a < 0 and a > -16) else 0)
    vt[0] = o



cdef inline void sranx16(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    # a >= 0: arithmetic right by min(a, 15); a < 0: left by -a (-a >= 16 gives 0)
    cdef vec_t o
    cdef int k
    cdef int16_t a, x, r
    cdef uint16_t lft
    for k in range(32):
        a = <int16_t>(((vr.u16[k] & 0x3F) ^ 0x20) - 0x20)
        x = vs.s16[k]
        r = <int16_t>(x >> ((a if a < 15 else 15) & 15))     # a < 0: any in-range amount (unused)
        lft = <uint16_t>((<uint16_t>x) << ((-a) & 15))
        o.s16[k] = r if a >= 0 else (<int16_t>lft if a > -16 else 0)
    vt[0] = o



# slln_2x32 / sran_2x32: as sllnx16 / sranx16 on 32-bit lanes with a signed 7-bit amount. SPEC §6.2 (B12)
cdef inline void slln_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t o
    cdef int k
    cdef int32_t a, l, r
    for k in range(16):
        a = <int32_t>((vr.u32[k] & 0x7F) ^ 0x40) - 0x40
        l = a if a > 0 else 0
        l = l if l < 32 else 32
        r = -a if a < 0 else 0
        r = r if r < 32 else 32
        o.u32[k] = <uint32_t>(((<uint64_t>vs.u32[k]) << l) >> r)
    vt[0] = o


cdef inline void sran_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t o
    cdef int k
    cdef int32_t a, l, r
    for k in range(16):
        a = <int32_t>((vr.u32[k] & 0x7F) ^ 0x40) - 0x40
        r = a if a > 0 else 0
        r = r if r < 31 else 31
        l = -a if a < 0 else 0
        l = l if l < 32 else 32
        o.s32[k] = <int32_t>(<int64_t>((<uint64_t><int64_t>vs.s32[k]) << l) >> r)
    vt[0] = o


# Integer compares write vbool with 1/2/4 bits per true lane; there is no gt/ge (swap operands).
# eq/neq/lt/le (signed) and ltu/leu (unsigned) on 2nx8 / nx16 / n_2x32. SPEC §6.2 (B03), §6.1 vbool
cdef inline void eq2nx8(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t m
    cdef int k
    for k in range(64):
        m.u8[k] = 0xFF if vs.u8[k] == vr.u8[k] else 0
    vb[0] = vb_from_mask(&m)


cdef inline void eqnx16(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t m
    cdef int k
    for k in range(32):
        m.u16[k] = 0xFFFF if vs.u16[k] == vr.u16[k] else 0
    vb[0] = vb_from_mask(&m)


cdef inline void neqnx16(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t m
    cdef int k
    for k in range(32):
        m.u16[k] = 0xFFFF if vs.u16[k] != vr.u16[k] else 0
    vb[0] = vb_from_mask(&m)


cdef inline void ltnx16(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t m
    cdef int k
    for k in range(32):
        m.u16[k] = 0xFFFF if vs.s16[k] < vr.s16[k] else 0
    vb[0] = vb_from_mask(&m)


cdef inline void lenx16(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t m
    cdef int k
    for k in range(32):
        m.u16[k] = 0xFFFF if vs.s16[k] <= vr.s16[k] else 0
    vb[0] = vb_from_mask(&m)


cdef inline void ltunx16(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t m
    cdef int k
    for k in range(32):
        m.u16[k] = 0xFFFF if vs.u16[k] < vr.u16[k] else 0
    vb[0] = vb_from_mask(&m)


cdef inline void eqn_2x32(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t m
    cdef int k
    for k in range(16):
        m.u32[k] = 0xFFFFFFFFu if vs.u32[k] == vr.u32[k] else 0u
    vb[0] = vb_from_mask(&m)


cdef inline void ltn_2x32(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t m
    cdef int k
    for k in range(16):
        m.u32[k] = 0xFFFFFFFFu if vs.s32[k] < vr.s32[k] else 0u
    vb[0] = vb_from_mask(&m)


cdef inline void ltu2nx8(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef vec_t m
    cdef int k
    for k in range(64):
        m.u8[k] = 0xFF if vs.u8[k] < vr.u8[k] else 0
    vb[0] = vb_from_mask(&m)


# andb / orb / xorb / notb: bitwise ops on vbool registers. SPEC §6.1 (BR/vbool files)
cdef inline void andb(vbool_t* vt, vbool_t a, vbool_t b) noexcept nogil:
    vt[0] = a & b

cdef inline void orb(vbool_t* vt, vbool_t a, vbool_t b) noexcept nogil:
    vt[0] = a | b

cdef inline void xorb(vbool_t* vt, vbool_t a, vbool_t b) noexcept nogil:
    vt[0] = a ^ b

cdef inline void notb(vbool_t* vt, vbool_t a) noexcept nogil:
    vt[0] = ~a

# ---- flag-setting min/max: vt = min/max(a, b) and vb = strict flag (bmin: a < b, bmax: a > b);
# on a tie the flag is 0 and b is selected; `u` forms compare unsigned. SPEC §6.2 Flag ALU (B03)
cdef inline void bmin2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef int8_t a, b
    for k in range(64):
        a = va.s8[k]; b = vr.s8[k]
        m.u8[k] = 0xFF if a < b else 0
        o.s8[k] = a if a < b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bminu2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef uint8_t a, b
    for k in range(64):
        a = va.u8[k]; b = vr.u8[k]
        m.u8[k] = 0xFF if a < b else 0
        o.u8[k] = a if a < b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bmax2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef int8_t a, b
    for k in range(64):
        a = va.s8[k]; b = vr.s8[k]
        m.u8[k] = 0xFF if a > b else 0
        o.s8[k] = a if a > b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bmaxu2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef uint8_t a, b
    for k in range(64):
        a = va.u8[k]; b = vr.u8[k]
        m.u8[k] = 0xFF if a > b else 0
        o.u8[k] = a if a > b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bminnx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef int16_t a, b
    for k in range(32):
        a = va.s16[k]; b = vr.s16[k]
        m.u16[k] = 0xFFFF if a < b else 0
        o.s16[k] = a if a < b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bminunx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef uint16_t a, b
    for k in range(32):
        a = va.u16[k]; b = vr.u16[k]
        m.u16[k] = 0xFFFF if a < b else 0
        o.u16[k] = a if a < b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bmaxnx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef int16_t a, b
    for k in range(32):
        a = va.s16[k]; b = vr.s16[k]
        m.u16[k] = 0xFFFF if a > b else 0
        o.s16[k] = a if a > b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bmaxunx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef uint16_t a, b
    for k in range(32):
        a = va.u16[k]; b = vr.u16[k]
        m.u16[k] = 0xFFFF if a > b else 0
        o.u16[k] = a if a > b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bminn_2x32(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef int32_t a, b
    for k in range(16):
        a = va.s32[k]; b = vr.s32[k]
        m.u32[k] = 0xFFFFFFFFu if a < b else 0u
        o.s32[k] = a if a < b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bminun_2x32(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef uint32_t a, b
    for k in range(16):
        a = va.u32[k]; b = vr.u32[k]
        m.u32[k] = 0xFFFFFFFFu if a < b else 0u
        o.u32[k] = a if a < b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bmaxn_2x32(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef int32_t a, b
    for k in range(16):
        a = va.s32[k]; b = vr.s32[k]
        m.u32[k] = 0xFFFFFFFFu if a > b else 0u
        o.s32[k] = a if a > b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bmaxun_2x32(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef uint32_t a, b
    for k in range(16):
        a = va.u32[k]; b = vr.u32[k]
        m.u32[k] = 0xFFFFFFFFu if a > b else 0u
        o.u32[k] = a if a > b else b
    vb[0] = vb_from_mask(&m)
    vt[0] = o


# babssub2nx8 / babssubu2nx8 / babssubnx16 / babssubunx16: vt = |a - b| (exact, as an unsigned
# lane), vb = (a < b) (signed or unsigned compare). SPEC §6.2 Flag ALU (B03)
cdef inline void babssub2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef int16_t a, b
    for k in range(64):
        a = va.s8[k]; b = vr.s8[k]
        m.u8[k] = 0xFF if a < b else 0
        o.u8[k] = <uint8_t>(b - a if a < b else a - b)
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void babssubu2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef uint8_t a, b
    for k in range(64):
        a = va.u8[k]; b = vr.u8[k]
        m.u8[k] = 0xFF if a < b else 0
        o.u8[k] = <uint8_t>(b - a if a < b else a - b)
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void babssubnx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef int32_t a, b
    for k in range(32):
        a = va.s16[k]; b = vr.s16[k]
        m.u16[k] = 0xFFFF if a < b else 0
        o.u16[k] = <uint16_t>(b - a if a < b else a - b)
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void babssubunx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef uint16_t a, b
    for k in range(32):
        a = va.u16[k]; b = vr.u16[k]
        m.u16[k] = 0xFFFF if a < b else 0
        o.u16[k] = <uint16_t>(b - a if a < b else a - b)
    vb[0] = vb_from_mask(&m)
    vt[0] = o


# baddnormnx16 / bsubnormnx16: 17-bit sum (difference) s of int16 lanes; vb = overflow
# (bit 15 != bit 16); vt = overflow ? s >> 1 (arithmetic) : s. Integer normalize, not ldexp.
# SPEC §6.2 Flag ALU (B03; §8.2.6 records MXB's other reading)
cdef inline void baddnormnx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef int32_t s, ovf
    for k in range(32):
        s = <int32_t>va.s16[k] + <int32_t>vr.s16[k]
        ovf = ((s >> 15) ^ (s >> 16)) & 1
        m.u16[k] = <uint16_t>(0 - ovf)
        o.s16[k] = <int16_t>(s >> ovf)
    vb[0] = vb_from_mask(&m)
    vt[0] = o


cdef inline void bsubnormnx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    cdef vec_t m, o
    cdef int k
    cdef int32_t s, ovf
    for k in range(32):
        s = <int32_t>va.s16[k] - <int32_t>vr.s16[k]
        ovf = ((s >> 15) ^ (s >> 16)) & 1
        m.u16[k] = <uint16_t>(0 - ovf)
        o.s16[k] = <int16_t>(s >> ovf)
    vb[0] = vb_from_mask(&m)
    vt[0] = o


# =====================================================================================  MACs
# Integer MACs wrap modulo 2^(lane width) and never saturate; `mul` overwrites, `mula` adds.
# pr fields: 16-bit field t = bits [16t, 16t+16), 8-bit field j = bits [8j, 8j+8). SPEC §6.2 (B04/B05)

cdef inline void _pool16_shifts(vec_t* p1, vec_t* p2, vec_t* p3, const vec_t* va, const vec_t* vb) noexcept nogil:
    """p_t.u16[i] = pool.u16[i + t] for pool = va || vb (the 4-tap windows), by two-register permutes."""
    cdef vec_t i1, i2, i3
    cdef int k
    for k in range(32):
        i1.u16[k] = <uint16_t>(k + 1)
        i2.u16[k] = <uint16_t>(k + 2)
        i3.u16[k] = <uint16_t>(k + 3)
    q7_permute2_u16(p1.u16, va.u16, vb.u16, i1.u16)
    q7_permute2_u16(p2.u16, va.u16, vb.u16, i2.u16)
    q7_permute2_u16(p3.u16, va.u16, vb.u16, i3.u16)


# mulus4tn16xr16 / mulus4tan16xr16: 4-tap MAC: wv48[i] (=|+=) sum_{t<4} pool.u16[i+t] * pr.s16[t],
# pool = va (lanes 0..31) || vb (32..63); first factor unsigned, pr taps signed. q7emu choice of the
# 4t lane map (SPEC §8.1.13/§8.2.19: "4-tap transpose" / "4 input pairs per op").
cdef inline void mulus4tn16xr16(wvec_t* wv, const vec_t* va, const vec_t* vb, pr_t pr) noexcept nogil:
    cdef vec_t p1, p2, p3
    cdef int64_t c0 = <int16_t>(pr & 0xFFFF), c1 = <int16_t>((pr >> 16) & 0xFFFF)
    cdef int64_t c2 = <int16_t>((pr >> 32) & 0xFFFF), c3 = <int16_t>((pr >> 48) & 0xFFFF)
    cdef int i
    wv.view = 48
    for i in range(32, 64):
        wv.c[i] = 0
    # |sum| < 4 * 2^16 * 2^15 = 2^33: always inside the 48-bit lane, no wrap possible.
    if (c1 | c2 | c3) == 0:      # one tap (a scalar multiply): same result, no window shifts
        for i in range(32):
            wv.c[i] = <int64_t>(<int32_t>va.u16[i] * <int32_t>c0)
        return
    _pool16_shifts(&p1, &p2, &p3, va, vb)
    for i in range(32):
        wv.c[i] = va.u16[i] * c0 + p1.u16[i] * c1 + p2.u16[i] * c2 + p3.u16[i] * c3


cdef inline void mulus4tan16xr16(wvec_t* wv, const vec_t* va, const vec_t* vb, pr_t pr) noexcept nogil:
    cdef vec_t p1, p2, p3
    cdef int64_t c0 = <int16_t>(pr & 0xFFFF), c1 = <int16_t>((pr >> 16) & 0xFFFF)
    cdef int64_t c2 = <int16_t>((pr >> 32) & 0xFFFF), c3 = <int16_t>((pr >> 48) & 0xFFFF)
    cdef int i
    _pool16_shifts(&p1, &p2, &p3, va, vb)
    wvec_as(wv, 48)
    for i in range(32):
        wv.c[i] = sext(wv.c[i] + va.u16[i] * c0 + p1.u16[i] * c1 + p2.u16[i] * c2 + p3.u16[i] * c3, 48)


# mul4tn16xr16 / mul4tan16xr16: as mulus4t* with signed pool lanes (signed x signed). q7emu choice (4t map)
cdef inline void mul4tn16xr16(wvec_t* wv, const vec_t* va, const vec_t* vb, pr_t pr) noexcept nogil:
    cdef vec_t p1, p2, p3
    cdef int64_t c0 = <int16_t>(pr & 0xFFFF), c1 = <int16_t>((pr >> 16) & 0xFFFF)
    cdef int64_t c2 = <int16_t>((pr >> 32) & 0xFFFF), c3 = <int16_t>((pr >> 48) & 0xFFFF)
    cdef int i
    _pool16_shifts(&p1, &p2, &p3, va, vb)
    wv.view = 48
    for i in range(32):
        wv.c[i] = sext(va.s16[i] * c0 + p1.s16[i] * c1 + p2.s16[i] * c2 + p3.s16[i] * c3, 48)
    for i in range(32, 64):
        wv.c[i] = 0


cdef inline void mul4tan16xr16(wvec_t* wv, const vec_t* va, const vec_t* vb, pr_t pr) noexcept nogil:
    cdef vec_t p1, p2, p3
    cdef int64_t c0 = <int16_t>(pr & 0xFFFF), c1 = <int16_t>((pr >> 16) & 0xFFFF)
    cdef int64_t c2 = <int16_t>((pr >> 32) & 0xFFFF), c3 = <int16_t>((pr >> 48) & 0xFFFF)
    cdef int i
    _pool16_shifts(&p1, &p2, &p3, va, vb)
    wvec_as(wv, 48)
    for i in range(32):
        wv.c[i] = sext(wv.c[i] + va.s16[i] * c0 + p1.s16[i] * c1 + p2.s16[i] * c2 + p3.s16[i] * c3, 48)


# dmulqa2n8xr8: dual-quad 8-bit MAC into two 24-bit accumulators: wa24[i] += sum_{j<4} vj.s8[i] *
# pr.s8[j]; wb24[i] += sum_{j<4} vj.s8[i] * pr.s8[4+j] (8 products per lane). q7emu choice of the
# q lane map (SPEC §8.1.13). Operand order as disassembled: wa, wb, v0, v1, v2, v3, pr.
cdef inline void dmulqa2n8xr8(wvec_t* wa, wvec_t* wb, const vec_t* v0, const vec_t* v1, const vec_t* v2,
                              const vec_t* v3, pr_t pr) noexcept nogil:
    cdef int64_t c[8]
    cdef int i, j
    cdef int64_t x0, x1, x2, x3
    for j in range(8):
        c[j] = <int8_t>((pr >> (8 * j)) & 0xFF)
    wvec_as(wa, 24)
    wvec_as(wb, 24)
    for i in range(64):
        x0 = v0.s8[i]; x1 = v1.s8[i]; x2 = v2.s8[i]; x3 = v3.s8[i]
        wa.c[i] = sext(wa.c[i] + x0 * c[0] + x1 * c[1] + x2 * c[2] + x3 * c[3], 24)
        wb.c[i] = sext(wb.c[i] + x0 * c[4] + x1 * c[5] + x2 * c[6] + x3 * c[7], 24)

# muluupan16xr16: paired unsigned MAC: wv48[i] += va.u16[i] * pr.u16[0] + vb.u16[i] * pr.u16[1];
# zero-filled upper bits. SPEC §6.2 (B04/B05 `p` = paired); q7emu choice of the pr fields.
cdef inline void muluupan16xr16(wvec_t* wv, const vec_t* va, const vec_t* vb, pr_t pr) noexcept nogil:
    cdef int64_t c0 = <int64_t>(pr & 0xFFFF), c1 = <int64_t>((pr >> 16) & 0xFFFF)
    cdef int i
    wvec_as(wv, 48)
    for i in range(32):
        wv.c[i] = sext(wv.c[i] + va.u16[i] * c0 + vb.u16[i] * c1, 48)

# mulsupn16xr16: paired signed x unsigned MAC (overwrite): wv48[i] = va.s16[i] * pr.u16[0] +
# vb.s16[i] * pr.u16[1]. SPEC §6.2 (B04/B05 `su` = a signed, b unsigned); q7emu choice of pr fields.
cdef inline void mulsupn16xr16(wvec_t* wv, const vec_t* va, const vec_t* vb, pr_t pr) noexcept nogil:
    cdef int64_t c0 = <int64_t>(pr & 0xFFFF), c1 = <int64_t>((pr >> 16) & 0xFFFF)
    cdef int i
    wv.view = 48
    for i in range(32):
        wv.c[i] = sext(va.s16[i] * c0 + vb.s16[i] * c1, 48)
    for i in range(32, 64):
        wv.c[i] = 0

# muluspa2n8xr16: paired MAC on 8-bit lanes: wv24[i] += va.u8[i] * hi16(w) + vb.u8[i] * lo16(w),
# w = pr bits [0, 32), weights signed. ANCHORS §7 (IVP_MULUSPA2N8XR16 probe T8), SPEC §3.6 @0x6c4b.
cdef inline void muluspa2n8xr16(wvec_t* wv, const vec_t* va, const vec_t* vb, pr_t pr) noexcept nogil:
    cdef int64_t hi = <int16_t>((pr >> 16) & 0xFFFF), lo = <int16_t>(pr & 0xFFFF)
    cdef int i
    wvec_as(wv, 24)
    for i in range(64):
        wv.c[i] = sext(wv.c[i] + va.u8[i] * hi + vb.u8[i] * lo, 24)

# muln_2x32 / mulan_2x32: wv96[i] (=|+=) va.s32[i] * vb.s32[i], signed, wrapping at 2^96. SPEC §6.2 (B04)
cdef inline void muln_2x32(wvec_t* wv, const vec_t* va, const vec_t* vb) noexcept nogil:
    cdef int i
    cdef int64_t p
    wv.view = 96
    for i in range(16):
        p = <int64_t>va.s32[i] * <int64_t>vb.s32[i]
        wv.c[2 * i] = p
        wv.c[2 * i + 1] = -1 if p < 0 else 0
    for i in range(32, 64):
        wv.c[i] = 0

cdef inline void mulan_2x32(wvec_t* wv, const vec_t* va, const vec_t* vb) noexcept nogil:
    cdef int i
    cdef int128 acc
    cdef uint64_t lo
    wvec_as(wv, 96)
    for i in range(16):
        acc = ((<int128>wv.c[2 * i + 1]) << 64) | <int128>(<uint64_t>wv.c[2 * i])
        acc = acc + <int128>(<int64_t>va.s32[i] * <int64_t>vb.s32[i])
        lo = <uint64_t>acc
        wv.c[2 * i] = <int64_t>lo
        wv.c[2 * i + 1] = sext(<int64_t>(acc >> 64), 32)

# =====================================================================================  vec <-> wvec
# cvtg48n_2x32l: wv48[i] = zero-extended u32 lane i of pool = vs (0..15) || vr (16..31) (low 32
# bits set, high 16 bits 0). cvtg48n_2x32h: keeps the low 32 bits of each 48-bit lane and sets its
# high 16 bits from the low 16 bits of pool lane i. SPEC §6.2 (B22: i32 -> 48-bit gather-widen into
# wvec, zero fill); q7emu choice: identity gather permutation (SPEC marks it MED).
cdef inline void cvtg48n_2x32l(wvec_t* wv, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int i
    wv.view = 48
    for i in range(16):
        wv.c[i] = <int64_t>vs.u32[i]
        wv.c[16 + i] = <int64_t>vr.u32[i]
    for i in range(32, 64):
        wv.c[i] = 0

cdef inline void cvtg48n_2x32h(wvec_t* wv, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int i
    cdef uint64_t hi
    wvec_as(wv, 48)
    for i in range(32):
        hi = (vs.u32[i] if i < 16 else vr.u32[i - 16]) & 0xFFFF
        wv.c[i] = sext(<int64_t>(((<uint64_t>wv.c[i]) & ((<uint64_t>1 << 32) - 1)) | (hi << 32)), 48)

cdef inline int64_t _sat(int64_t x, int64_t lo, int64_t hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)

cdef inline int64_t _shr_round(int64_t x, int sh) noexcept nogil:
    """Arithmetic right shift with round half up (+1 << (sh-1)); sh = 0 is exact."""
    if sh <= 0:
        return x
    return (x + ((<int64_t>1) << (sh - 1))) >> sh

# packvr2nx24 / packvrnx48: vt lane i = signed-saturate(round-half-up(wv lane i >> sh)) to 8 / 16
# bits; the shift is clamped to <= 23 (8-bit) / <= 32 (16-bit). SPEC §6.2 wvec -> vec pack (B10)
cdef inline void packvr2nx24(vec_t* vt, wvec_t* wv, int sh) noexcept nogil:
    cdef int i
    cdef int s = 0 if sh < 0 else (23 if sh > 23 else sh)
    wvec_as(wv, 24)
    for i in range(64):
        vt.s8[i] = <int8_t>_sat(_shr_round(wv.c[i], s), -128, 127)

cdef inline void packvrnx48(vec_t* vt, wvec_t* wv, int sh) noexcept nogil:
    cdef int i
    cdef int s = 0 if sh < 0 else (32 if sh > 32 else sh)
    wvec_as(wv, 48)
    for i in range(32):
        vt.s16[i] = <int16_t>_sat(_shr_round(wv.c[i], s), -32768, 32767)

# packvru2nx24 / packvrunx48: as packvr* but saturate unsigned (negative -> 0). SPEC §6.2 (B10)
cdef inline void packvru2nx24(vec_t* vt, wvec_t* wv, int sh) noexcept nogil:
    cdef int i
    cdef int s = 0 if sh < 0 else (23 if sh > 23 else sh)
    wvec_as(wv, 24)
    for i in range(64):
        vt.u8[i] = <uint8_t>_sat(_shr_round(wv.c[i], s), 0, 255)

cdef inline void packvrunx48(vec_t* vt, wvec_t* wv, int sh) noexcept nogil:
    cdef int i
    cdef int s = 0 if sh < 0 else (32 if sh > 32 else sh)
    wvec_as(wv, 48)
    for i in range(32):
        vt.u16[i] = <uint16_t>_sat(_shr_round(wv.c[i], s), 0, 65535)

# packvrnr2nx24 / packvrnrnx48: arithmetic right shift with no rounding, keep the low 8 / 16 bits
# (wraps, no saturation). SPEC §6.2 (B10), ANCHORS §7 (PACKVRNR probe T20)
cdef inline void packvrnr2nx24(vec_t* vt, wvec_t* wv, int sh) noexcept nogil:
    cdef int i
    cdef int s = 0 if sh < 0 else (23 if sh > 23 else sh)
    wvec_as(wv, 24)
    for i in range(64):
        vt.u8[i] = <uint8_t>(wv.c[i] >> s)

cdef inline void packvrnrnx48(vec_t* vt, wvec_t* wv, int sh) noexcept nogil:
    cdef int i
    cdef int s = 0 if sh < 0 else (32 if sh > 32 else sh)
    wvec_as(wv, 48)
    for i in range(32):
        vt.u16[i] = <uint16_t>(wv.c[i] >> s)

# packvrn_2x96: vt lane i = signed-saturate(round-half-up(wv96 lane i >> sh)) to 32 bits; sh <= 32.
# SPEC §6.2 (B10)
cdef inline void packvrn_2x96(vec_t* vt, wvec_t* wv, int sh) noexcept nogil:
    cdef int i
    cdef int s = 0 if sh < 0 else (32 if sh > 32 else sh)
    cdef int128 acc
    wvec_as(wv, 96)
    for i in range(16):
        acc = ((<int128>wv.c[2 * i + 1]) << 64) | <int128>(<uint64_t>wv.c[2 * i])
        if s > 0:
            acc = (acc + ((<int128>1) << (s - 1))) >> s
        if acc > 2147483647:
            vt.s32[i] = 2147483647
        elif acc < -2147483648:
            vt.s32[i] = -2147483648
        else:
            vt.s32[i] = <int32_t>acc

# packl2nx24 / packlnx48 / packln_2x96: the low 8 / 16 / 32 bits of each wide lane (wraps).
# packm*/packh*: the middle / high third of the lane. SPEC §6.2 (B10), ANCHORS §7 (PACKL probe)
cdef inline void packl2nx24(vec_t* vt, wvec_t* wv) noexcept nogil:
    cdef int i
    wvec_as(wv, 24)
    for i in range(64):
        vt.u8[i] = <uint8_t>wv.c[i]

cdef inline void packlnx48(vec_t* vt, wvec_t* wv) noexcept nogil:
    cdef int i
    wvec_as(wv, 48)
    for i in range(32):
        vt.u16[i] = <uint16_t>wv.c[i]

cdef inline void packmnx48(vec_t* vt, wvec_t* wv) noexcept nogil:
    cdef int i
    wvec_as(wv, 48)
    for i in range(32):
        vt.u16[i] = <uint16_t>(wv.c[i] >> 16)

cdef inline void packhnx48(vec_t* vt, wvec_t* wv) noexcept nogil:
    cdef int i
    wvec_as(wv, 48)
    for i in range(32):
        vt.u16[i] = <uint16_t>(wv.c[i] >> 32)

cdef inline void packln_2x96(vec_t* vt, wvec_t* wv) noexcept nogil:
    cdef int i
    wvec_as(wv, 96)
    for i in range(16):
        vt.u32[i] = <uint32_t>wv.c[2 * i]

# =====================================================================================  soft-float ops
# ultn_2xf32t / ueqn_2xf32t: unordered fp32 compares (true when either input is NaN; quiet),
# merged under vbp: vb lane = vbp ? (isnan(a)|isnan(b)|a<b  resp. a==b) : old. SPEC §6.2 fp ALU (B02)
cdef inline void ultn_2xf32t(vbool_t* vb, const vec_t* va, const vec_t* vr, vbool_t vbp) noexcept nogil:
    cdef vec_t m
    cdef int k
    cdef uint32_t a, b
    for k in range(16):
        a = va.u32[k]; b = vr.u32[k]
        m.u32[k] = f32_isnan_mask(a) | f32_isnan_mask(b) | \
            (0xFFFFFFFFu if f32_order_key(a) < f32_order_key(b) else 0u)
    cdef vbool_t p = vb_spread(vbp, 4)
    vb[0] = (vb[0] & ~p) | (vb_from_mask(&m) & p)


cdef inline void ueqn_2xf32t(vbool_t* vb, const vec_t* va, const vec_t* vr, vbool_t vbp) noexcept nogil:
    cdef vec_t m
    cdef int k
    cdef uint32_t a, b
    for k in range(16):
        a = va.u32[k]; b = vr.u32[k]
        m.u32[k] = f32_isnan_mask(a) | f32_isnan_mask(b) | \
            (0xFFFFFFFFu if (a == b or ((a | b) & 0x7FFFFFFFu) == 0) else 0u)
    cdef vbool_t p = vb_spread(vbp, 4)
    vb[0] = (vb[0] & ~p) | (vb_from_mask(&m) & p)


# oltnxf16t: ordered fp16 less-than (false when either input is NaN; signals), merged under vbp.
# SPEC §6.2 fp ALU (B02)
cdef inline void oltnxf16t(vbool_t* vb, const vec_t* va, const vec_t* vr, vbool_t vbp) noexcept nogil:
    cdef vec_t m
    cdef int k
    cdef uint16_t a, b
    for k in range(32):
        a = va.u16[k]; b = vr.u16[k]
        m.u16[k] = 0xFFFF if ((a & 0x7FFF) <= 0x7C00 and (b & 0x7FFF) <= 0x7C00
                              and f16_order_key(a) < f16_order_key(b)) else 0
    cdef vbool_t p = vb_spread(vbp, 2)
    vb[0] = (vb[0] & ~p) | (vb_from_mask(&m) & p)


# float16nx16t: vt[k] = vb ? fp16(int16(vs[k]) * 2^-imm) (RNE) : vt[k]; imm = 0..15. SPEC §6.2 Converts (B13/B20)
cdef inline void float16nx16t(vec_t* vt, const vec_t* vs, int imm, vbool_t vb) noexcept nogil:
    cdef vec_t o, m
    cdef int k
    cdef int sh = imm & 15
    if Q7_HAVE_HW_F16:
        q7_hw_f16_from_s16_scaled(o.u16, vs.s16, sh)
    else:
        for k in range(32):
            o.u16[k] = f16_from_int16_scaled(vs.s16[k], sh)
    vb_to_mask(vb, 2, &m)
    for k in range(64):
        vt.u8[k] = (o.u8[k] & m.u8[k]) | (vt.u8[k] & ~m.u8[k])


# floatn_2x32: vt[k] = fp32(int32(vs[k]) * 2^-imm) (RNE); imm = 0..31. SPEC §6.2 Converts (B13)
cdef inline void floatn_2x32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    cdef int32_t x
    for k in range(16):
        x = vs.s32[k]
        vt.u32[k] = pack_ieee_rne(x < 0, <uint64_t>(-(<int64_t>x) if x < 0 else x), -(imm & 31), 23, 8)

# truncn_2xf32: vt[k] = int32 trunc-toward-zero(fp32(vs[k]) * 2^imm), saturating; NaN and +overflow
# -> 0x7FFFFFFF, -overflow -> 0x80000000; imm = 0..31. SPEC §6.2 Converts (B13)
cdef inline void truncn_2xf32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    for k in range(16):
        vt.s32[k] = <int32_t>f32_trunc_sat(vs.u32[k], imm & 31, -2147483648, 2147483647)

# trunc16nxf16: vt[k] = int16 trunc-toward-zero(fp16(vs[k]) * 2^imm), saturating, NaN -> 0x7FFF
# (ignores FCR); imm = 0..15. SPEC §6.2 Converts (B20; §8.2.7 records MXB's other reading)
cdef inline void trunc16nxf16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    for k in range(32):
        vt.s16[k] = <int16_t>f32_trunc_sat(f16_to_f32_bits(vs.u16[k]), imm & 15, -32768, 32767)

# cvtf32nxf16_0 / _1: widen fp16 lanes 0..15 (_0) or 16..31 (_1) of vs to fp32, exactly. SPEC §6.2 Converts
cdef inline void cvtf32nxf16_0(vec_t* vt, const vec_t* vs) noexcept nogil:
    cdef vec_t s = vs[0]
    cdef int k
    for k in range(16):
        vt.u32[k] = f16_to_f32_bits(s.u16[k])

cdef inline void cvtf32nxf16_1(vec_t* vt, const vec_t* vs) noexcept nogil:
    cdef vec_t s = vs[0]
    cdef int k
    for k in range(16):
        vt.u32[k] = f16_to_f32_bits(s.u16[16 + k])

# negnxf16t: vt[k] = vb ? vs[k] with the sign bit flipped : vt[k] (no flags). SPEC §6.2 fp ALU (B02)
cdef inline void negnxf16t(vec_t* vt, const vec_t* vs, vbool_t vb) noexcept nogil:
    cdef vec_t m
    cdef int k
    vb_to_mask(vb, 2, &m)
    for k in range(32):
        vt.u16[k] = ((vs.u16[k] ^ 0x8000) & m.u16[k]) | (vt.u16[k] & ~m.u16[k])


# addexpnxf16: out.exp = (exp_a + exp_b + 0x11) mod 32; out.mant = a.mant; out.sign = a.sign ^ b.sign.
# SPEC §6.2 fp ALU (B02)
cdef inline void addexpnxf16(vec_t* vt, const vec_t* va, const vec_t* vb) noexcept nogil:
    cdef int k
    cdef uint16_t a, b, e
    for k in range(32):
        a = va.u16[k]; b = vb.u16[k]
        e = (((a >> 10) & 0x1F) + ((b >> 10) & 0x1F) + 0x11) & 0x1F
        vt.u16[k] = ((a ^ b) & 0x8000) | (e << 10) | (a & 0x3FF)

# =====================================================================================  moves into pr
# extrpr2nx8: pr = u8 lane (k & 63) of vs, upper bits 0. SPEC §6.2 Moves into pr (XPR)
cdef inline void extrpr2nx8(pr_t* pr, const vec_t* vs, int k) noexcept nogil:
    pr[0] = vs.u8[k & 63]

# extrprn_2x32: pr = u32 lane (k & 15) of vs, upper bits 0. SPEC §6.2 Moves into pr (XPR)
cdef inline void extrprn_2x32(pr_t* pr, const vec_t* vs, int k) noexcept nogil:
    pr[0] = vs.u32[k & 15]

# dextrprn_2x32: pr = pool32[i & 31] | pool32[j & 31] << 32, pool = vs || vr (dual-lane extract into
# the two halves of pr). SPEC §6.2 (XPR); q7emu choice of the pairing (MED). Seed: pr8,v14,v16,5,10.
cdef inline void dextrprn_2x32(pr_t* pr, const vec_t* vs, const vec_t* vr, int i, int j) noexcept nogil:
    cdef uint64_t a = vs.u32[i & 15] if (i & 31) < 16 else vr.u32[(i & 31) - 16]
    cdef uint64_t b = vs.u32[j & 15] if (j & 31) < 16 else vr.u32[(j & 31) - 16]
    pr[0] = a | (b << 32)
