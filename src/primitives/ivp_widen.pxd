# cython: language_level=3
"""IVP vec -> wvec widen (SPEC §6.2 B22: an i32 -> 48-bit gather-widen into wvec, zero fill; the kernel is
HIGH, the gather permutation MED). q7emu choice: the identity gather, pool = vs (lanes 0..15) || vr (16..31)."""
from libc.stdint cimport uint64_t, int64_t
from q7regs cimport vec_t, wvec_t, sext, wvec_as


cdef inline uint64_t _pool32(const vec_t* vs, const vec_t* vr, int i) noexcept nogil:
    """u32 lane i of pool = vs || vr (i < 32)."""
    return vs.u32[i] if i < 16 else vr.u32[i - 16]

# cvtg48n_2x32l: wv48[i] = zero-extended u32 lane i of pool (low 32 bits set, high 16 bits 0)
cdef inline void cvtg48n_2x32l(wvec_t* wv, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int i
    wv.view = 48
    for i in range(32):
        wv.c[i] = <int64_t>_pool32(vs, vr, i)
    for i in range(32, 64):
        wv.c[i] = 0

# cvtg48n_2x32h: wv48[i] keeps its low 32 bits; its high 16 bits = the low 16 bits of pool lane i
cdef inline void cvtg48n_2x32h(wvec_t* wv, const vec_t* vs, const vec_t* vr) noexcept nogil:
    cdef int i
    cdef uint64_t hi
    wvec_as(wv, 48)
    for i in range(32):
        hi = _pool32(vs, vr, i) & 0xFFFF
        wv.c[i] = sext(<int64_t>(((<uint64_t>wv.c[i]) & ((<uint64_t>1 << 32) - 1)) | (hi << 32)), 48)
