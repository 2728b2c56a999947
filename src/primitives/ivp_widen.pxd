# cython: language_level=3
"""IVP vec -> wvec widen (docs/firmware.md §6.2 B22: an i32 -> 48-bit gather-widen into wvec, zero fill; the kernel is
HIGH, the gather permutation MED). q7emu choice: the identity gather over pool = lo (lanes 0..15) || hi (16..31),
the operands high half first as the sibling IVP_CVT48SNX32(hi, lo) takes them (docs/intrinsics.md §3.1)."""
from libc.stdint cimport uint64_t, int64_t
from q7regs cimport vec_t, wvec_t, sext, wvec_as


cdef inline uint64_t _pool32(const vec_t* lo, const vec_t* hi, int i) noexcept nogil:
    """u32 lane i of pool = lo || hi (i < 32)."""
    return lo.u32[i] if i < 16 else hi.u32[i - 16]

# cvtg48n_2x32l: wv48[i] = zero-extended u32 lane i of pool = lo || hi (low 32 bits set, high 16 bits 0)
cdef inline void cvtg48n_2x32l(wvec_t* wv, const vec_t* hi, const vec_t* lo) noexcept nogil:
    cdef int i
    wv.view = 48
    for i in range(32):
        wv.c[i] = <int64_t>_pool32(lo, hi, i)
    for i in range(32, 64):
        wv.c[i] = 0

# cvtg48n_2x32h: wv48[i] keeps its low 32 bits; its high 16 bits = the low 16 bits of lane i of pool = lo || hi
cdef inline void cvtg48n_2x32h(wvec_t* wv, const vec_t* hi, const vec_t* lo) noexcept nogil:
    cdef int i
    cdef uint64_t top
    wvec_as(wv, 48)
    for i in range(32):
        top = _pool32(lo, hi, i) & 0xFFFF
        wv.c[i] = sext(<int64_t>(((<uint64_t>wv.c[i]) & ((<uint64_t>1 << 32) - 1)) | (top << 32)), 48)
