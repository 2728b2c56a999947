# cython: language_level=3
"""IVP shifts (docs/firmware.md §6.2 B12): by an immediate (imm4 / imm5) or per lane by vr. Logical right fills 0,
arithmetic right fills the sign; shifting past the width gives 0 (sign fill for sra)."""
from q7regs cimport vec_t
from ivp_lanes cimport lanes_shl_imm, lanes_shr_imm, lanes_srl, lanes_sll, lanes_sra

# sllinx16: vt = vs << imm, 16-bit lanes (imm >= 16 gives 0)
cdef inline void sllinx16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil: lanes_shl_imm(vt.u16, vs.u16, imm)

# srlinx16: vt = vs >> imm (logical), 16-bit lanes (imm >= 16 gives 0)
cdef inline void srlinx16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil: lanes_shr_imm(vt.u16, vs.u16, imm)

# srainx16: vt = vs >> min(imm, 15) (arithmetic), 16-bit lanes
cdef inline void srainx16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil: lanes_shr_imm(vt.s16, vs.s16, imm)

# sllin_2x32: vt = vs << imm, 32-bit lanes (imm >= 32 gives 0)
cdef inline void sllin_2x32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil: lanes_shl_imm(vt.u32, vs.u32, imm)

# srlin_2x32: vt = vs >> imm (logical), 32-bit lanes (imm >= 32 gives 0)
cdef inline void srlin_2x32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil: lanes_shr_imm(vt.u32, vs.u32, imm)

# srain_2x32: vt = vs >> min(imm, 31) (arithmetic), 32-bit lanes
cdef inline void srain_2x32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil: lanes_shr_imm(vt.s32, vs.s32, imm)

# srlnx16: vt[k] = vs[k] >> a (logical), a = vr[k] as int16; a < 0 shifts left by -a; |a| >= 16 gives 0
# (negative amounts: docs/intrinsics.md §3.7)
cdef inline void srlnx16(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil: lanes_srl(vt, vs.u16, vr.s16)

# srln_2x32: vt[k] = vs[k] >> a (logical), a = vr[k] as int32; a < 0 shifts left by -a; |a| >= 32 gives 0
cdef inline void srln_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil: lanes_srl(vt, vs.u32, vr.s32)

# sllnx16: vt[k] = vs[k] << a, a = signed 6-bit vr[k] (a < 0: logical right by -a; |a| >= 16 gives 0)
cdef inline void sllnx16(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil: lanes_sll(vt, vs.u16, vr.s16)

# sranx16: vt[k] = vs[k] >> min(a, 15) (arithmetic), a = signed 6-bit vr[k] (a < 0: left by -a)
cdef inline void sranx16(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil: lanes_sra(vt, vs.s16, vr.s16)

# slln_2x32: vt[k] = vs[k] << a, a = signed 7-bit vr[k] (a < 0: logical right by -a; |a| >= 32 gives 0)
cdef inline void slln_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil: lanes_sll(vt, vs.u32, vr.s32)

# sran_2x32: vt[k] = vs[k] >> min(a, 31) (arithmetic), a = signed 7-bit vr[k] (a < 0: left by -a)
cdef inline void sran_2x32(vec_t* vt, const vec_t* vs, const vec_t* vr) noexcept nogil: lanes_sra(vt, vs.s32, vr.s32)
