# cython: language_level=3
"""IVP integer ALU: add / sub / bitwise, integer compares, vbool logic (docs/firmware.md §6.2 B03, docs/anchors.md §7).
Adds and subs wrap; bitwise ops see all 512 bits; compares write 1/2/4 vbool bits per true 8/16/32-bit
lane and have no gt/ge (swap the operands)."""
from q7regs cimport vec_t, vbool_t, vpred_t
from ivp_lanes cimport lanes_arith, lanes_cmp, OP_ADD, OP_SUB, OP_AND, OP_OR, OP_XOR, CMP_EQ, CMP_NE, CMP_LT, CMP_LE

# add2nx8: vt = vs + vr, 8-bit lanes, wrapping
cdef inline void add2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_arith(vt, vs.u8, vr.u8, OP_ADD)

# addnx16: vt = vs + vr, 16-bit lanes, wrapping
cdef inline void addnx16(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_arith(vt, vs.u16, vr.u16, OP_ADD)

# addn_2x32: vt = vs + vr, 32-bit lanes, wrapping
cdef inline void addn_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_arith(vt, vs.u32, vr.u32, OP_ADD)

# sub2nx8: vt = vs - vr, 8-bit lanes, wrapping
cdef inline void sub2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_arith(vt, vs.u8, vr.u8, OP_SUB)

# subnx16: vt = vs - vr, 16-bit lanes, wrapping
cdef inline void subnx16(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_arith(vt, vs.u16, vr.u16, OP_SUB)

# subn_2x32: vt = vs - vr, 32-bit lanes, wrapping
cdef inline void subn_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_arith(vt, vs.u32, vr.u32, OP_SUB)

# and2nx8: vt = vs & vr over all 512 bits
cdef inline void and2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_arith(vt, vs.u8, vr.u8, OP_AND)

# or2nx8: vt = vs | vr over all 512 bits
cdef inline void or2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_arith(vt, vs.u8, vr.u8, OP_OR)

# xor2nx8: vt = vs ^ vr over all 512 bits
cdef inline void xor2nx8(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_arith(vt, vs.u8, vr.u8, OP_XOR)

# eq2nx8: vb[k] = vs[k] == vr[k], 8-bit lanes
cdef inline void eq2nx8(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_cmp(vb, vs.u8, vr.u8, CMP_EQ)

# ltu2nx8: vb[k] = vs[k] < vr[k], unsigned 8-bit lanes
cdef inline void ltu2nx8(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_cmp(vb, vs.u8, vr.u8, CMP_LT)

# eqnx16: vb[k] = vs[k] == vr[k], 16-bit lanes
cdef inline void eqnx16(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_cmp(vb, vs.u16, vr.u16, CMP_EQ)

# neqnx16: vb[k] = vs[k] != vr[k], 16-bit lanes
cdef inline void neqnx16(vpred_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_cmp(vb, vs.u16, vr.u16, CMP_NE)

# ltnx16: vb[k] = vs[k] < vr[k], signed 16-bit lanes
cdef inline void ltnx16(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_cmp(vb, vs.s16, vr.s16, CMP_LT)

# lenx16: vb[k] = vs[k] <= vr[k], signed 16-bit lanes
cdef inline void lenx16(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_cmp(vb, vs.s16, vr.s16, CMP_LE)

# ltunx16: vb[k] = vs[k] < vr[k], unsigned 16-bit lanes
cdef inline void ltunx16(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_cmp(vb, vs.u16, vr.u16, CMP_LT)

# eqn_2x32: vb[k] = vs[k] == vr[k], 32-bit lanes
cdef inline void eqn_2x32(vpred_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_cmp(vb, vs.u32, vr.u32, CMP_EQ)

# ltn_2x32: vb[k] = vs[k] < vr[k], signed 32-bit lanes
cdef inline void ltn_2x32(vbool_t* vb, const vec_t* vs, const vec_t* vr) noexcept nogil:
    lanes_cmp(vb, vs.s32, vr.s32, CMP_LT)

# andb / orb / xorb / notb: bitwise ops on the 64 bits of vbool registers (docs/firmware.md §6.1 vbool file)
cdef inline void andb(vbool_t* vt, vbool_t a, vbool_t b) noexcept nogil:
    vt[0] = a & b

cdef inline void orb(vbool_t* vt, vbool_t a, vbool_t b) noexcept nogil:
    vt[0] = a | b

cdef inline void xorb(vbool_t* vt, vbool_t a, vbool_t b) noexcept nogil:
    vt[0] = a ^ b

cdef inline void notb(vbool_t* vt, vbool_t a) noexcept nogil:
    vt[0] = ~a
