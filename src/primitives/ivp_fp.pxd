# cython: language_level=3
"""IVP fp16 / fp32 ALU ops on bit patterns (docs/firmware.md §6.2 fp ALU, B02): predicated compares into vbool
(merged under vbp: lanes vbp leaves false keep the old vb), sign flip, exponent add. No flags are modelled."""
from libc.stdint cimport int16_t, uint16_t, uint32_t
from q7regs cimport vec_t, vbool_t, vpred_t, vpred_src_t, vb_from_mask, q7_fcmp16_olt_bits, \
    q7_fcmp16_olt_lanes, q7_fcmp32_unordered_bits, q7_fcmp32_unordered_lanes, Q7_FCMP32_LEAF
from q7softfloat cimport f32_isnan_mask, f32_order_key
from ivp_lanes cimport merge, vb_merge, mask_merge

cdef enum:
    FCMP_ULT = 0
    FCMP_UEQ = 1


cdef inline vbool_t fcmp32_unordered(const vec_t* va, const vec_t* vr, int op) noexcept nogil:
    """The vbool of isnan(a) | isnan(b) | (a < b resp. a == b; +0 == -0) over fp32 lanes (quiet): the x86 bodies
    of q7_fcmp32_unordered_bits (q7regs.pxd), the lane loop elsewhere."""
    cdef vec_t m
    if Q7_FCMP32_LEAF:
        return q7_fcmp32_unordered_bits(va.u32, vr.u32, op == FCMP_UEQ)
    fcmp32_unordered_lanes(va, vr, op, &m)
    return vb_from_mask(&m)


cdef inline void fcmp32_unordered_lanes(const vec_t* va, const vec_t* vr, int op, vec_t* m) noexcept nogil:
    """fcmp32_unordered's lane mask (0xFFFFFFFF where true) in m: the x86 bodies' compares stored
    (q7_fcmp32_unordered_lanes), the lane loop elsewhere."""
    cdef int k
    cdef uint32_t a, b
    if Q7_FCMP32_LEAF:
        q7_fcmp32_unordered_lanes(va.u32, vr.u32, op == FCMP_UEQ, m.u32)
        return
    for k in range(16):
        a = va.u32[k]; b = vr.u32[k]
        if op == FCMP_ULT:
            m.u32[k] = f32_isnan_mask(a) | f32_isnan_mask(b) | \
                (0xFFFFFFFFu if f32_order_key(a) < f32_order_key(b) else 0u)
        else:
            m.u32[k] = f32_isnan_mask(a) | f32_isnan_mask(b) | \
                (0xFFFFFFFFu if (a == b or ((a | b) & 0x7FFFFFFFu) == 0) else 0u)


cdef inline void fcmp16_olt_lanes(const vec_t* va, const vec_t* vr, vec_t* m) noexcept nogil:
    """The lane mask of fcmp16_olt (0xFFFF where a < b): q7_fcmp16_olt_lanes (q7regs.pxd), the bits' compare with
    its lanes stored instead of their movemask."""
    q7_fcmp16_olt_lanes(va.u16, vr.u16, m.u16)


cdef inline vbool_t fcmp16_olt(const vec_t* va, const vec_t* vr) noexcept nogil:
    """The vbool of a < b over fp16 lanes, false when either is NaN (ordered): q7_fcmp16_olt_bits (q7regs.pxd), a
    SIMD body per x86 level and the lane loop elsewhere."""
    return q7_fcmp16_olt_bits(va.u16, vr.u16)


# ultn_2xf32t: vb = vbp ? (isnan(a) | isnan(b) | a < b) : vb, fp32 lanes (unordered, quiet)
cdef inline void ultn_2xf32t(vpred_t* vb, const vec_t* va, const vec_t* vr, vbool_t vbp) noexcept nogil:
    cdef vec_t m
    if vpred_t is vbool_t:
        vb[0] = vb_merge(vb[0], fcmp32_unordered(va, vr, FCMP_ULT), vbp, 4)
    else:
        fcmp32_unordered_lanes(va, vr, FCMP_ULT, &m)
        mask_merge(vb, &m, vbp, 4)

# ueqn_2xf32t: vb = vbp ? (isnan(a) | isnan(b) | a == b) : vb, fp32 lanes (unordered)
cdef inline void ueqn_2xf32t(vbool_t* vb, const vec_t* va, const vec_t* vr, vbool_t vbp) noexcept nogil:
    vb[0] = vb_merge(vb[0], fcmp32_unordered(va, vr, FCMP_UEQ), vbp, 4)

# oltnxf16t: vb = vbp ? (a < b, false on NaN) : vb, fp16 lanes (ordered, signals)
cdef inline void oltnxf16t(vpred_t* vb, const vec_t* va, const vec_t* vr, vbool_t vbp) noexcept nogil:
    cdef vec_t m
    if vpred_t is vbool_t:
        vb[0] = vb_merge(vb[0], fcmp16_olt(va, vr), vbp, 2)
    else:
        fcmp16_olt_lanes(va, vr, &m)
        mask_merge(vb, &m, vbp, 2)

# negnxf16t: vt = vb ? vs with the sign bit flipped : vt (fp16 lanes)
cdef inline void negnxf16t(vec_t* vt, const vec_t* vs, vpred_src_t vb) noexcept nogil:
    cdef vec_t o
    cdef int k
    for k in range(32):
        o.u16[k] = vs.u16[k] ^ 0x8000
    merge(vt, &o, vb, 2)

# addexpnxf16: out.exp = (exp_a + exp_b + 0x11) mod 32; out.mant = a.mant; out.sign = a.sign ^ b.sign
cdef inline void addexpnxf16(vec_t* vt, const vec_t* va, const vec_t* vb) noexcept nogil:
    cdef int k
    cdef uint16_t a, b, e
    for k in range(32):
        a = va.u16[k]; b = vb.u16[k]
        e = (((a >> 10) & 0x1F) + ((b >> 10) & 0x1F) + 0x11) & 0x1F
        vt.u16[k] = ((a ^ b) & 0x8000) | (e << 10) | (a & 0x3FF)
