# Shared by the TensorDequantize and QuantizeMX kernels: the register/constant slots of the FP8
# narrowing sequence, the rodata loader, and narrow_fp8 itself (one copy, used by all four kernels).
# Included after kernel_ops.pxi.

cdef enum:
    kZERO = 0      # 0
    kONE = 1       # 1 (16-bit lanes)
    kA = 2         # 1 - BIAS(out)        narrow: subnormal shift / exponent field
    kSH0 = 3       # 14 - M(out)          narrow: significand right shift for a normal result
    kCLAMP = 4     # free: narrow_fp8 needs no shift clamp (docs/model.md §9) -- QuantizeMX: pair weights, then scratch
    kMAX = 5       # largest finite FP8 code (0x7B E5M2, 0x7E E4M3); QuantizeMX keeps it elsewhere (narrow_fp8's kmax)
    # slot 6 is kernel-specific
    k4000 = 7      # hidden bit of SIG (bit 14)
    kZEXP = 8      # EXP of zero (-16384)
    vSIG = 23      # significand, leading one at bit 14 (16-bit lanes)
    vEXP = 24      # unbiased exponent of bit 14
    vSGN = 25      # 0x00 / 0x80
    vT0 = 26
    vT1 = 27
    vT2 = 28
    vT3 = 29
    vbALL = 0      # all-true predicate
    vbF = 1        # scratch flag output of bmin / bmax
    vbG = 2        # second scratch flag


# ---------------------------------------------------------------------------- shared bundle labels
# Bundle numbers are labels (docs/model.md §9.1): the members of a `cpdef enum` (a Python enum of the module too,
# which the listing reads) and a note each (*_NOTES, what the listing says of the bundle). A kernel's labels
# start at ENTRY_B; a shared sequence that starts at bundle b takes b .. b + its *_LEN - 1.
cdef enum:
    MAX_CONST = 24                        # constant vectors a kernel may load
    NARROW_LEN = 12                       # narrow_fp8
    NO_HOLE = 32                          # load_rodata: no register skipped

cpdef enum SharedBundle:
    RODATA_B = 0                          # the constant loads, two per bundle (s0 and s1)
    RODATA_VB = RODATA_B + MAX_CONST // 2  # the all-true predicate

cdef enum:
    ENTRY_B = RODATA_VB + 1               # a kernel's first own bundle

SHARED_NOTES = {
    "RODATA_B": "load_rodata: the constant vectors from the kernel's rodata, two loads per bundle (s0 and s1)",
    "RODATA_VB": "the all-true predicate = (v0 == v0)",
}


cdef inline void load_rodata(TR tr, regfile_t* rf, const vec_t* rodata, int nconst, int first,
                             int hole, int hole_len, int all_true) noexcept nogil:
    """Row c of rodata into register first + c (c < nconst), skipping the `hole_len` registers from `hole` on
    (the rows from there on go hole_len registers up; NO_HOLE: none), then the all-true predicate into vbool
    register `all_true` (vbALL, or the kernel's own)."""
    # RODATA_B: constant vectors from rodata, two loads per bundle
    cdef int c
    for c in range(nconst):
        lv2nx8_i(tr, rf, RODATA_B + c // 2, first + c + hole_len * (first + c >= hole), <const uint8_t*>rodata, 64 * c)
    # RODATA_VB: the all-true predicate = (v0 == v0)
    eqnx16(tr, rf, RODATA_VB, all_true, kZERO, kZERO)


cdef inline void narrow_fp8(TR tr, regfile_t* rf, int b, int m_bits, int out, int kmax) noexcept nogil:
    """(vSIG, vEXP, vSGN) -> FP8 code | sign in 16-bit lanes of `out`: RNE, saturating at the code in register
    `kmax` (the kernel's kMAX slot).
    vSIG holds the significand with its leading one at bit 14 (value = SIG * 2^(EXP - 14)).
    Rounding is q = (SIG + 2^(sh-1) - 1 + lsb) >> sh, lsb = bit sh of SIG: round to nearest, ties
    to even; SIG < 2^15 keeps every sum inside 16 bits (a shift sh >= 16 gives q = 0). Clobbers vT0..vT3."""
    # b+0: d = (1-BIAS) - EXP (subnormal depth), e = EXP - (1-BIAS) (exponent field - 1 when normal)
    subnx16(tr, rf, b, vT0, kA, vEXP)
    subnx16(tr, rf, b, vT1, vEXP, kA)
    # b+1: clamp both at 0 (flags unused)
    bmaxnx16(tr, rf, b + 1, vbF, vT0, vT0, kZERO)
    bmaxnx16(tr, rf, b + 1, vbG, vT1, vT1, kZERO)
    # b+2: total right shift sh = d + 14 - M; exponent field moved to its place (a shift of 16 or more rounds
    # to 0 without a clamp: srlnx16 gives 0 for amounts >= 16, so q below is 0 whatever `half` is)
    addnx16(tr, rf, b + 2, vT0, vT0, kSH0)
    sllinx16(tr, rf, b + 2, vT1, vT1, m_bits)
    # b+3: lsb of the kept bits ; sh - 1
    srlnx16(tr, rf, b + 3, vT2, vSIG, vT0)
    subnx16(tr, rf, b + 3, vT3, vT0, kONE)
    # b+4: lsb & 1 ; half = 1 << (sh - 1)
    and2nx8(tr, rf, b + 4, vT2, vT2, kONE)
    sllnx16(tr, rf, b + 4, vT3, kONE, vT3)
    # b+5: half - 1
    subnx16(tr, rf, b + 5, vT3, vT3, kONE)
    # b+6: + lsb (ties go to even)
    addnx16(tr, rf, b + 6, vT3, vT3, vT2)
    # b+7: + significand
    addnx16(tr, rf, b + 7, vT3, vT3, vSIG)
    # b+8: ROUND: shift out
    srlnx16(tr, rf, b + 8, vT3, vT3, vT0)
    # b+9: exponent field + rounded significand (a carry moves into the exponent)
    addnx16(tr, rf, b + 9, vT1, vT1, vT3)
    # b+10: SATURATE to the largest finite code
    bminnx16(tr, rf, b + 10, vbF, vT1, vT1, kmax)
    # b+11: sign
    or2nx8(tr, rf, b + 11, out, vT1, vSGN)
