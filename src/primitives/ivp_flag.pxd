# cython: language_level=3
"""IVP flag ALU (docs/firmware.md §6.2 B03): a vec result and a vbool flag. bmin / bmax: vt = min / max(a, b),
vb = the strict flag (a < b / a > b; on a tie the flag is 0 and b is selected); `u` forms compare
unsigned. babssub: vt = |a - b|, vb = a < b. baddnorm / bsubnorm: 17-bit sum / difference, normalised."""
from q7regs cimport vec_t, vbool_t, vpred_t
from ivp_lanes cimport lanes_flag, FLAG_MIN, FLAG_MAX, FLAG_ABSDIFF, FLAG_ADDNORM, FLAG_SUBNORM

# bmin2nx8: vt = min(va, vr), vb = va < vr; signed 8-bit lanes
cdef inline void bmin2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.s8, vr.s8, FLAG_MIN)

# bminu2nx8: vt = min(va, vr), vb = va < vr; unsigned 8-bit lanes
cdef inline void bminu2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.u8, vr.u8, FLAG_MIN)

# bmax2nx8: vt = max(va, vr), vb = va > vr; signed 8-bit lanes
cdef inline void bmax2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.s8, vr.s8, FLAG_MAX)

# bmaxu2nx8: vt = max(va, vr), vb = va > vr; unsigned 8-bit lanes
cdef inline void bmaxu2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.u8, vr.u8, FLAG_MAX)

# bminnx16: vt = min(va, vr), vb = va < vr; signed 16-bit lanes
cdef inline void bminnx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.s16, vr.s16, FLAG_MIN)

# bminunx16: vt = min(va, vr), vb = va < vr; unsigned 16-bit lanes
cdef inline void bminunx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.u16, vr.u16, FLAG_MIN)

# bmaxnx16: vt = max(va, vr), vb = va > vr; signed 16-bit lanes
cdef inline void bmaxnx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.s16, vr.s16, FLAG_MAX)

# bmaxunx16: vt = max(va, vr), vb = va > vr; unsigned 16-bit lanes
cdef inline void bmaxunx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.u16, vr.u16, FLAG_MAX)

# bminn_2x32: vt = min(va, vr), vb = va < vr; signed 32-bit lanes
cdef inline void bminn_2x32(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.s32, vr.s32, FLAG_MIN)

# bminun_2x32: vt = min(va, vr), vb = va < vr; unsigned 32-bit lanes
cdef inline void bminun_2x32(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.u32, vr.u32, FLAG_MIN)

# bmaxn_2x32: vt = max(va, vr), vb = va > vr; signed 32-bit lanes
cdef inline void bmaxn_2x32(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.s32, vr.s32, FLAG_MAX)

# bmaxun_2x32: vt = max(va, vr), vb = va > vr; unsigned 32-bit lanes
cdef inline void bmaxun_2x32(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.u32, vr.u32, FLAG_MAX)

# babssub2nx8: vt = |va - vr| (as an unsigned lane), vb = va < vr; signed 8-bit lanes
cdef inline void babssub2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.s8, vr.s8, FLAG_ABSDIFF)

# babssubu2nx8: vt = |va - vr|, vb = va < vr; unsigned 8-bit lanes
cdef inline void babssubu2nx8(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.u8, vr.u8, FLAG_ABSDIFF)

# babssubnx16: vt = |va - vr| (as an unsigned lane), vb = va < vr; signed 16-bit lanes
cdef inline void babssubnx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.s16, vr.s16, FLAG_ABSDIFF)

# babssubunx16: vt = |va - vr|, vb = va < vr; unsigned 16-bit lanes
cdef inline void babssubunx16(vpred_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.u16, vr.u16, FLAG_ABSDIFF)

# baddnormnx16: s = va + vr (17-bit); vb = overflow (bit 15 != bit 16); vt = vb ? s >> 1 : s.
# An integer normalize, not ldexp (docs/firmware.md §8.2.6 records MXB's other reading)
cdef inline void baddnormnx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.s16, vr.s16, FLAG_ADDNORM)

# bsubnormnx16: s = va - vr (17-bit); vb = overflow; vt = vb ? s >> 1 : s
cdef inline void bsubnormnx16(vbool_t* vb, vec_t* vt, const vec_t* va, const vec_t* vr) noexcept nogil:
    lanes_flag(vb, vt, va.s16, vr.s16, FLAG_SUBNORM)
