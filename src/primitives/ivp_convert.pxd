# cython: language_level=3
"""IVP int <-> float converts on bit patterns (docs/firmware.md §6.2 Converts, B13 / B20): RNE to float,
truncate toward zero and saturate to int (NaN -> the positive maximum; FCR is not read)."""
from libc.stdint cimport uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t
from q7regs cimport vec_t, vbool_t
from q7softfloat cimport (pack_ieee_rne, f16_to_f32_bits, f32_trunc_sat, f16_from_int16_scaled, Q7_HAVE_HW_F16,
                          q7_hw_f16_from_s16_scaled)
from ivp_lanes cimport merge


cdef inline void f16_from_s16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    """vt[k] = fp16(int16 vs[k] * 2^-(imm & 15)), RNE (the F16C body where the host has one)."""
    cdef int k
    cdef int sh = imm & 15
    if Q7_HAVE_HW_F16:
        q7_hw_f16_from_s16_scaled(vt.u16, vs.s16, sh)
    else:
        for k in range(32):
            vt.u16[k] = f16_from_int16_scaled(vs.s16[k], sh)


cdef inline void f32_from_f16_alt(vec_t* vt, const vec_t* vs, int first) noexcept nogil:
    """vt.f32[k] = fp16 lane 2k + first of vs, exactly (k < 16; first 0: the even lanes, 1: the odd; vt may alias
    vs)."""
    cdef vec_t s = vs[0]
    cdef int k
    for k in range(16):
        vt.u32[k] = f16_to_f32_bits(s.u16[2 * k + first])

# float16nx16t: vt = vb ? fp16(int16(vs) * 2^-imm) (RNE) : vt; imm = 0..15
cdef inline void float16nx16t(vec_t* vt, const vec_t* vs, int imm, vbool_t vb) noexcept nogil:
    cdef vec_t o
    f16_from_s16(&o, vs, imm)
    merge(vt, &o, vb, 2)

# floatn_2x32: vt = fp32(int32(vs) * 2^-imm) (RNE); imm = 0..31
cdef inline void floatn_2x32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    cdef int32_t x
    for k in range(16):
        x = vs.s32[k]
        vt.u32[k] = pack_ieee_rne(x < 0, <uint64_t>(-(<int64_t>x) if x < 0 else x), -(imm & 31), 23, 8)

# truncn_2xf32: vt = int32 trunc-toward-zero(fp32(vs) * 2^imm), saturating; NaN and +overflow
# -> 0x7FFFFFFF, -overflow -> 0x80000000; imm = 0..31
cdef inline void truncn_2xf32(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    for k in range(16):
        vt.s32[k] = <int32_t>f32_trunc_sat(vs.u32[k], imm & 31, -2147483648, 2147483647)

# trunc16nxf16: vt = int16 trunc-toward-zero(fp16(vs) * 2^imm), saturating, NaN -> 0x7FFF (ignores
# FCR); imm = 0..15 (docs/firmware.md §8.2.7 records MXB's other reading)
cdef inline void trunc16nxf16(vec_t* vt, const vec_t* vs, int imm) noexcept nogil:
    cdef int k
    for k in range(32):
        vt.s16[k] = <int16_t>f32_trunc_sat(f16_to_f32_bits(vs.u16[k]), imm & 15, -32768, 32767)

# cvtf32nxf16_0: widen the even fp16 lanes (2k) of vs to fp32, exactly (docs/intrinsics.md §3.6: `_0` / `_1` are the
# even / odd lanes, as in Halide's f16 -> f32 conversion; docs/firmware.md §6.2 reads low / high halves)
cdef inline void cvtf32nxf16_0(vec_t* vt, const vec_t* vs) noexcept nogil:
    f32_from_f16_alt(vt, vs, 0)

# cvtf32nxf16_1: widen the odd fp16 lanes (2k + 1) of vs to fp32, exactly
cdef inline void cvtf32nxf16_1(vec_t* vt, const vec_t* vs) noexcept nogil:
    f32_from_f16_alt(vt, vs, 1)
