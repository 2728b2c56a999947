# cython: language_level=3
"""IVP moves into the packed register pr (docs/firmware.md §6.2 Moves into pr, XPR): lane extracts, upper bits 0."""
from libc.stdint cimport uint16_t, uint64_t
from q7regs cimport vec_t, pr_t

# extrpr2nx8: pr = u8 lane (k & 63) of vs
cdef inline void extrpr2nx8(pr_t* pr, const vec_t* vs, int k) noexcept nogil:
    pr[0] = vs.u8[k & 63]

# extrprn_2x32: pr = u32 lane (k & 15) of vs
cdef inline void extrprn_2x32(pr_t* pr, const vec_t* vs, int k) noexcept nogil:
    pr[0] = vs.u32[k & 15]

# dextrprn_2x32: pr = vlo.u32[ilo & 15] | vhi.u32[ihi & 15] << 32: a dual-lane extract, each index a lane of its
# own vector, the second pair into the low word (docs/intrinsics.md §3.4). Seed @0x22b5: pr8, v14, v16, 5, 10
cdef inline void dextrprn_2x32(pr_t* pr, const vec_t* vhi, const vec_t* vlo, int ihi, int ilo) noexcept nogil:
    pr[0] = (<uint64_t>vlo.u32[ilo & 15]) | ((<uint64_t>vhi.u32[ihi & 15]) << 32)

# movpint16: pr = the 16-bit immediate in each of pr's four 16-bit fields (a broadcast; q7emu choice of the
# semantics: docs/firmware.md §8.1 item 15 leaves them open, docs/model.md §8 item 19)
cdef inline void movpint16(pr_t* pr, int imm) noexcept nogil:
    pr[0] = <uint64_t>(<uint16_t>imm) * <uint64_t>0x0001000100010001
