# cython: language_level=3
"""POOL opcode 0x7b TensorDequantize: proc_4bit_non_mx, proc_4bit_mx_8 and proc_6bit_non_mx.

The three firmware compute paths (docs/firmware.md §1.5, §2; seed 002 §5, §7), rebuilt from the IVP
primitives of q7ivp.pxd and nothing else. Each kernel runs one partition's byte stream on one
Q7 register file `rf`; every instruction is one primitive issued through kernel_ops.pxi, with a
bundle index (the listing position) and a comment saying what the bundle does.

Datapath (q7emu's reconstruction of the soft-float chain; docs/firmware.md §2.2-§2.4, seed 002 §5.5, §7.1):
  load (lav2nx8_xp; tails are variable-length loads / stores, never a Python fallback)
  -> unpack codes into 16-bit lanes (sel2nx8i_s4 nibbles; sel2nx8 + per-lane shifts for 6-bit codes)
  -> group 0 (proc_4bit_non_mx, proc_6bit_non_mx), the seed's scale-free WIDEN: FP4 / FP6 codes are
     exponent re-biased to their exact fp16 value (subnormal codes through the int -> fp16 convert
     float16nx16t), INT4 goes int -> fp16; every such value is exact in the output format, so the
     FP8 byte is a second re-bias of that fp16 (E5M2 = its top byte; E4M3 = (bits >> 7) - 64).
     NF4 values are not exact: they take the rounding path below.
  -> rounding path (NF4, and every code of the MX path): a soft-float triple per lane -- SIG (the
     significand, leading one at bit 14; 0 for zero), EXP (its unbiased exponent; -16384 for zero),
     SGN (0x00 / 0x80) -- from split_f16 or the NF4 codebook registers (dselnx16);
     MX: SIG x the block scale's significand (mulus4tn16xr16 with pr1 = 1.0 in Q1.14, E8M0 having
     no other significand) and EXP += s - 127; scale bytes 0xFF (e8m0) are found with an unordered
     fp32 compare (ultn_2xf32t) and gate their group's bytes to the NaN code;
     then narrow_fp8 (kernel_fp8.pxi): RNE at the output precision incl. subnormals, saturation
     with bminnx16, sign.
  -> pack the 16-bit lanes' low bytes (sel2nx8i), store (sav2nx8_xp).
"""
import numpy as np
include "kernel_cimports.pxi"     # cimports (q7regs, q7ivp as P, q7trace) and the kernel includes

# ---------------------------------------------------------------------------- register map
# Shared with QuantizeMX (kernel_fp8.pxi): constants v0..v8 (v6 = kEB here), vSIG/vEXP/vSGN/vT0..vT3
# = v23..v29, vbF / vbG. Constants ("rodata", loaded by lv2nx8_i at kernel entry): v0..v19.
cdef enum:
    kEB = 6        # exponent bias removed after decode (15 fp16; +127 under MX)
    # format-specific constants v9..v12
    kF0 = 9
    kF1 = 10
    kF2 = 11
    kF3 = 12
    # path-specific constants v13..v19 (MX: gathers, NaN pipeline; FP6: unpack tables)
    kP0 = 13
    kP1 = 14
    kP2 = 15
    kP3 = 16
    kP4 = 17
    kP5 = 18
    kP6 = 19
    # working registers (v23..v29 are kernel_fp8.pxi's)
    vIN = 20
    vCB = 21
    vCODE = 22
    vOLO = 30
    vOHI = 31
    # vbool registers (vbALL, vbF, vbG: kernel_fp8.pxi)
    vbSUB = 3      # subnormal-code lanes
    vbZ = 4        # zero lanes
    vbNAN = 5      # NaN-scale byte lanes
    # pr registers
    prSCALE = 1    # block-scale significand (seed @0x010051a9: ivp_mulus4tan16xr16 ..., pr1)
    # wvec
    wvACC = 2

cdef enum:
    FMT_E2M1 = 1
    FMT_INT4 = 2
    FMT_NF4 = 3
    FMT_E2M3 = 4

# MX constant slots
cdef enum:
    kIDX_CODES = kP0   # sel2nx8: 32 code bytes of 8 groups -> bytes 0..31, 8 scale bytes -> 32..39
    kIDX_SC0 = kP1     # sel2nx8: scale byte of group (k >> 3) into 16-bit lane k (groups 0..3)
    kIDX_SC1 = kP2     # ... groups 4..7
    kIDX_S32 = kP3     # sel2nx8: scale byte j into byte 3 of 32-bit lane j
    kQBIT = kP4        # 0x00400000: fp32 quiet bit (E8M0 0xFF decodes to NaN)
    kIDX_NM8 = kP5     # sel2nx8: group flag byte (4 * (e >> 3)) for output byte e
    kNAN8 = kP6        # NaN byte of the output format (0x7E E5M2 / 0x7F E4M3)
    kALL1 = kF3        # 0xFF bytes (MX only: the 4-bit formats use at most kF0..kF2)

# FP6 constant slots
cdef enum:
    kIDX6_0 = kP0      # sel2nx8: two source bytes of code k (codes 0..31) into 16-bit lane k
    kIDX6_1 = kP1      # ... codes 32..63
    kSH6 = kP2         # per-lane right shift of those two bytes (lsb-first 0,6,4,2 / msb-first 2,4,6,0)
    k63 = kP3
    k64 = kP4          # E4M3 re-bias: (15 - 7) << 3


cdef struct KCfg:
    vec_t rodata[20]
    int nconst
    int fmt
    int nan_gate      # mx_scale == e8m0
    int m_bits        # output mantissa bits (2 E5M2, 3 E4M3)
    int s4_imm        # sel2nx8i_s4 immediate base: H<<3 | S<<4


# ============================================================================ shared sequences
cdef inline void split_f16(TR tr, regfile_t* rf, int b) noexcept nogil:
    """fp16 magnitude in vSIG (normal or zero) -> vSIG (hidden bit at 14), vEXP = e - kEB."""
    # b+0: exponent field, significand bits moved under the hidden bit (bit 15 out), zero test
    VI(tr, rf, b, "srlinx16", P.srlinx16, VIEW_NX16, vEXP, vSIG, 10)
    CMP(tr, rf, b, "eqnx16", P.eqnx16, VIEW_NX16, VIEW_VB16, vbZ, vSIG, kZERO)
    VI(tr, rf, b, "sllinx16", P.sllinx16, VIEW_NX16, vSIG, vSIG, 6)
    # b+1: unbias the exponent ; significand bits to 4..13
    V3(tr, rf, b + 1, "subnx16", P.subnx16, VIEW_NX16, vEXP, vEXP, kEB)
    VI(tr, rf, b + 1, "srlinx16", P.srlinx16, VIEW_NX16, vSIG, vSIG, 2)
    # b+2: the hidden bit
    V3(tr, rf, b + 2, "or2nx8", P.or2nx8, VIEW_NX16, vSIG, vSIG, k4000)
    # b+3: zeros get SIG 0 and the far-below exponent
    MOVT(tr, rf, b + 3, "movnx16t", P.movnx16t, VIEW_NX16, VIEW_VB16, vEXP, kZEXP, vbZ)
    MOVT(tr, rf, b + 3, "movnx16t", P.movnx16t, VIEW_NX16, VIEW_VB16, vSIG, kZERO, vbZ)


cdef inline void decode_minifloat_f16(TR tr, regfile_t* rf, int b, int e_shift, int m_mask, int m_shift,
                                      int s_shift, int sub_imm) noexcept nogil:
    """E2Mn codes in vCODE (FP4 E2M1: n = 1, FP6 E2M3: n = 3; exponent bias 1) -> the exact fp16
    magnitude in vSIG and the sign byte (0x80) in vSGN, bundles b .. b+5. kF0 = 3 (exponent mask),
    kF1 = 14 << 10 (the re-bias 15 - 1), kF2 = the code's sign bit; `m_mask` is the register holding the
    mantissa mask, e_shift = n, m_shift = 10 - n, s_shift moves the sign bit to bit 7, sub_imm = n."""
    # b+0: e = (c >> n) & 3 ; m = c & mask ; sign bit
    VI(tr, rf, b, "srlinx16", P.srlinx16, VIEW_NX16, vT0, vCODE, e_shift)
    V3(tr, rf, b, "and2nx8", P.and2nx8, VIEW_NX16, vT1, vCODE, m_mask)
    V3(tr, rf, b, "and2nx8", P.and2nx8, VIEW_NX16, vSGN, vCODE, kF2)
    # b+1: e ; m << (10 - n) (fp16 mantissa) ; sign to bit 7
    V3(tr, rf, b + 1, "and2nx8", P.and2nx8, VIEW_NX16, vT0, vT0, kF0)
    VI(tr, rf, b + 1, "sllinx16", P.sllinx16, VIEW_NX16, vT2, vT1, m_shift)
    VI(tr, rf, b + 1, "sllinx16", P.sllinx16, VIEW_NX16, vSGN, vSGN, s_shift)
    # b+2: subnormal code (e == 0) ; e << 10
    CMP(tr, rf, b + 2, "eqnx16", P.eqnx16, VIEW_NX16, VIEW_VB16, vbSUB, vT0, kZERO)
    VI(tr, rf, b + 2, "sllinx16", P.sllinx16, VIEW_NX16, vT0, vT0, 10)
    # b+3: exponent RE-BIAS 1.2.n -> fp16 1.5.10: (e + 14) << 10 | m << (10 - n)
    V3(tr, rf, b + 3, "addnx16", P.addnx16, VIEW_NX16, vSIG, vT0, kF1)
    # b+4:
    V3(tr, rf, b + 4, "or2nx8", P.or2nx8, VIEW_NX16, vSIG, vSIG, vT2)
    # b+5: subnormal codes m * 2^-n by the int -> fp16 convert (normalises; m = 0 gives +0)
    I_float16nx16t(tr, rf, b + 5, vSIG, vT1, sub_imm, vbSUB)


cdef inline void decode_e2m1_f16(TR tr, regfile_t* rf, int b) noexcept nogil:
    """FP4 E2M1 codes in vCODE -> exact fp16 magnitude in vSIG, sign byte in vSGN (b .. b+5)."""
    # kF0 = 3, kF1 = 14 << 10, kF2 = 8 (sign bit); mantissa mask 1 (kONE)
    decode_minifloat_f16(tr, rf, b, 1, kONE, 9, 4, 1)


cdef inline void decode_e2m3_f16(TR tr, regfile_t* rf, int b) noexcept nogil:
    """FP6 E2M3 codes in vCODE -> exact fp16 magnitude in vSIG, sign byte in vSGN (b .. b+5)."""
    # kF0 = 3, kF1 = 14 << 10, kF2 = 0x20 (sign bit), kF3 = 7 (mantissa mask)
    decode_minifloat_f16(tr, rf, b, 3, kF3, 7, 2, 3)


cdef inline void decode_nf4(TR tr, regfile_t* rf, int b) noexcept nogil:
    """NF4 indexes in vCODE -> vSIG / vEXP / vSGN from the 16-entry codebook registers (b .. b+4)."""
    # kF0 = table lanes 0..15 SIG[c], 16..31 EXP[c]; kF1 = table lanes 0..15 SGN[c]; kF2 = 0x1000
    # b+0: selector lanes: c | (c + 16) << 8 for (SIG, EXP), c + 32 for SGN
    VI(tr, rf, b, "sllinx16", P.sllinx16, VIEW_NX16, vT0, vCODE, 8)
    VI(tr, rf, b, "srlinx16", P.srlinx16, VIEW_NX16, vT2, kF2, 7)
    # b+1:
    V3(tr, rf, b + 1, "or2nx8", P.or2nx8, VIEW_NX16, vT0, vT0, vCODE)
    V3(tr, rf, b + 1, "addnx16", P.addnx16, VIEW_NX16, vT1, vCODE, vT2)
    # b+2: (c << 8 | c) + 0x1000 -> low byte c, high byte c + 16
    V3(tr, rf, b + 2, "addnx16", P.addnx16, VIEW_NX16, vT0, vT0, kF2)
    # b+3: 16-ENTRY CODEBOOK LOOKUP: SIG, EXP from the table register pair
    I_dselnx16(tr, rf, b + 3, vSIG, vEXP, kF0, kF1, vT0)
    # b+4: sign table (pool lanes 32..47), unbias the exponent for MX (kEB = 0 or 127)
    V4(tr, rf, b + 4, "selnx16", P.selnx16, VIEW_NX16, vSGN, kF0, kF1, vT1)
    V3(tr, rf, b + 4, "subnx16", P.subnx16, VIEW_NX16, vEXP, vEXP, kEB)


cdef inline void decode_mx(TR tr, regfile_t* rf, int b, int fmt) noexcept nogil:
    """MX path codes in vCODE -> vSIG / vEXP / vSGN soft-float triples (bundles b .. b+9)."""
    if fmt == FMT_E2M1:
        decode_e2m1_f16(tr, rf, b)
        split_f16(tr, rf, b + 6)
    elif fmt == FMT_INT4:
        # kF0 = 0x80, kF1 = 0x7FFF ; codes arrive sign-extended (sel2nx8i_s4 S bit)
        # b+0: INT -> FLOAT (fp16, exact for -8..7)
        I_float16nx16t(tr, rf, b, vSIG, vCODE, 0, vbALL)
        # b+1: sign byte, magnitude
        VI(tr, rf, b + 1, "srlinx16", P.srlinx16, VIEW_NX16, vSGN, vSIG, 8)
        V3(tr, rf, b + 1, "and2nx8", P.and2nx8, VIEW_NXF16, vSIG, vSIG, kF1)
        # b+2:
        V3(tr, rf, b + 2, "and2nx8", P.and2nx8, VIEW_NX16, vSGN, vSGN, kF0)
        split_f16(tr, rf, b + 3)
    else:
        decode_nf4(tr, rf, b)


# ============================================================================ the paths
cdef void proc_non_mx(TR tr, regfile_t* rf, const KCfg* cfg, const uint8_t* src, Py_ssize_t nbytes,
                      uint8_t* dst) noexcept nogil:
    """The group-0 paths, the firmware's inline non-MX block of decode (docs/firmware.md §2.4): proc_4bit_non_mx
    (1 source word = 8 nibble codes -> 2 destination words; 32 source bytes per pass) and, for fmt 4,
    proc_6bit_non_mx (3 source words = 16 six-bit codes -> 4 destination words; 48 bytes per pass)."""
    cdef Py_ssize_t soff = 0, doff = 0, left = nbytes
    cdef int h, n, nout
    cdef int chunk = 48 if cfg.fmt == FMT_E2M3 else 32
    load_rodata(tr, rf, cfg.rodata, cfg.nconst)
    while left > 0:
        n = chunk if left > chunk else <int>left
        # B4: load one pass of packed bytes, 32 (4-bit) or 48 (FP6); a tail is shorter (4-bit: zero-filled;
        # FP6: 12 / 24 / 36)
        I_lav2nx8_xp(tr, rf, 4, vIN, src, &soff, n)
        if cfg.fmt == FMT_E2M3:
            for h in range(2):
                # B5: 6-bit UNPACK: the two bytes holding code k into 16-bit lane k
                V4(tr, rf, 5, "sel2nx8", P.sel2nx8, VIEW_2NX8, vCODE, vIN, vIN, kIDX6_0 + h)
                # B6: shift the code down (per-lane amount) ...
                V3(tr, rf, 6, "srlnx16", P.srlnx16, VIEW_NX16, vCODE, vCODE, kSH6)
                # B7: ... and keep 6 bits
                V3(tr, rf, 7, "and2nx8", P.and2nx8, VIEW_NX16, vCODE, vCODE, k63)
                # B8..B13: exponent re-bias to the exact fp16 value
                decode_e2m3_f16(tr, rf, 8)
                # B14: fp16 -> E4M3 re-bias: (exp16 << 3 | mant3) - (8 << 3); every FP6 value is an
                # E4M3 normal, so this is exact ; zero test
                VI(tr, rf, 14, "srlinx16", P.srlinx16, VIEW_NX16, vT0, vSIG, 7)
                CMP(tr, rf, 14, "eqnx16", P.eqnx16, VIEW_NX16, VIEW_VB16, vbZ, vSIG, kZERO)
                # B15:
                V3(tr, rf, 15, "subnx16", P.subnx16, VIEW_NX16, vT0, vT0, k64)
                # B16: zeros stay zero
                MOVT(tr, rf, 16, "movnx16t", P.movnx16t, VIEW_NX16, VIEW_VB16, vT0, kZERO, vbZ)
                # B17: sign
                V3(tr, rf, 17, "or2nx8", P.or2nx8, VIEW_NX16, vOLO + h, vT0, vSGN)
            nout = (n // 3) * 4
        else:
            for h in range(2):
                # B5: 4-bit UNPACK: 16 bytes -> 32 codes (nibble order / sign extension in the imm)
                VVI(tr, rf, 5, "sel2nx8i_s4", P.sel2nx8i_s4, VIEW_2NX8, VIEW_NX16, vCODE, vIN, vIN, cfg.s4_imm | h)
                if cfg.fmt == FMT_E2M1:
                    # B6..B11: exponent re-bias to the exact fp16 value
                    decode_e2m1_f16(tr, rf, 6)
                    # B12: E5M2 is the top byte of an fp16 whose low mantissa bits are 0 (exact: no rounding)
                    VI(tr, rf, 12, "srlinx16", P.srlinx16, VIEW_NX16, vT0, vSIG, 8)
                    # B13: sign
                    V3(tr, rf, 13, "or2nx8", P.or2nx8, VIEW_NX16, vOLO + h, vT0, vSGN)
                elif cfg.fmt == FMT_INT4:
                    # B6: INT -> FLOAT: sign-extended code -> fp16 (exact for -8..7)
                    I_float16nx16t(tr, rf, 6, vSIG, vCODE, 0, vbALL)
                    # B7: E5M2 = the top byte of that fp16, sign included (exact: no rounding)
                    VI(tr, rf, 7, "srlinx16", P.srlinx16, VIEW_NX16, vOLO + h, vSIG, 8)
                else:
                    # B6..B10: NF4 codebook lookup (values need rounding)
                    decode_nf4(tr, rf, 6)
                    # B23..B35: round to E4M3 (RNE, saturating), sign
                    narrow_fp8(tr, rf, 23, cfg.m_bits, vOLO + h)
            nout = 2 * n
        # B37: pack the low bytes of the 16-bit lanes: 64 FP8 in element order
        VVI(tr, rf, 37, "sel2nx8i", P.sel2nx8i, VIEW_NX16, VIEW_2NX8, vIN, vOLO, vOHI, 0)
        # B38: store the pass's FP8 bytes: 2 per source byte (4-bit), 4 per 3 (FP6)
        I_sav2nx8_xp(tr, rf, 38, vIN, dst, &doff, nout)
        left -= n


cdef void proc_4bit_mx_8(TR tr, regfile_t* rf, const KCfg* cfg, const uint8_t* src, Py_ssize_t nbytes,
                         uint8_t* dst) noexcept nogil:
    """Groups of 8 codes + 1 in-band scale byte (5 bytes) -> 8 FP8; 8 groups (40 bytes) per pass."""
    cdef Py_ssize_t soff = 0, doff = 0
    cdef uint32_t num_elem = <uint32_t>(nbytes // 4)
    # num_groups = num_elem / 5 with the firmware's reciprocal (0xCCCCCCCD, >> 34): 5-word blocks
    cdef uint32_t num_groups = <uint32_t>((<uint64_t>num_elem * 0xCCCCCCCDu) >> 34)
    cdef uint32_t left = num_groups
    cdef int h, n
    load_rodata(tr, rf, cfg.rodata, cfg.nconst)
    # B1..B3: pr1 = the block-scale significand: E8M0 scales are 2^(s-127) x 1.0, and 1.0 = 0x4000 in
    # Q1.14 as the single non-zero tap (pr = 0x0000_0000_0000_4000): 1 >> 16 << 14 in lane 0
    VI(tr, rf, 1, "srlin_2x32", P.srlin_2x32, VIEW_N_2X32, vT0, kONE, 16)
    VI(tr, rf, 2, "sllin_2x32", P.sllin_2x32, VIEW_N_2X32, vT0, vT0, 14)
    I_extrprn_2x32(tr, rf, 3, prSCALE, vT0, 0)
    while left > 0:
        n = 2 if left >= 2 else 1          # 5-word blocks this pass (4 groups each)
        # B4: group-of-8 packed load: 40 bytes = 8 groups (tail: 20 bytes = 4 groups)
        I_lav2nx8_xp(tr, rf, 4, vIN, src, &soff, 20 * n)
        # B5: split codes from scales (layout knob in the index vector)
        V4(tr, rf, 5, "sel2nx8", P.sel2nx8, VIEW_2NX8, vCB, vIN, kZERO, kIDX_CODES)
        if cfg.nan_gate:
            # B6: scale byte j -> byte 3 of 32-bit lane j
            V4(tr, rf, 6, "sel2nx8", P.sel2nx8, VIEW_2NX8, vT0, vCB, kZERO, kIDX_S32)
            # B7: E8M0 -> fp32 bits (s << 23), quiet bit set: 0xFF decodes to NaN
            VI(tr, rf, 7, "srlin_2x32", P.srlin_2x32, VIEW_N_2X32, vT0, vT0, 1)
            # B8:
            V3(tr, rf, 8, "or2nx8", P.or2nx8, VIEW_N_2X32, vT0, vT0, kQBIT)
            # B9: NaN GATE: unordered compare of the scale with itself ; clear the mask register
            I_ultn_2xf32t(tr, rf, 9, vbF, vT0, vT0, vbALL)
            V3(tr, rf, 9, "and2nx8", P.and2nx8, VIEW_N_2X32, vT1, kZERO, kZERO)
            # B10: NaN groups -> 0xFFFFFFFF lanes
            MOVT(tr, rf, 10, "movn_2x32t", P.movn_2x32t, VIEW_N_2X32, VIEW_VB32, vT1, kALL1, vbF)
            # B11: group flag -> every output byte of the group
            V4(tr, rf, 11, "sel2nx8", P.sel2nx8, VIEW_2NX8, vT1, vT1, kZERO, kIDX_NM8)
            # B12: byte predicate
            CMP(tr, rf, 12, "eq2nx8", P.eq2nx8, VIEW_2NX8, VIEW_VB8, vbNAN, vT1, kALL1)
        for h in range(2):
            # B13: 4-bit UNPACK of 4 groups (16 code bytes -> 32 codes)
            VVI(tr, rf, 13, "sel2nx8i_s4", P.sel2nx8i_s4, VIEW_2NX8, VIEW_NX16, vCODE, vCB, vCB, cfg.s4_imm | h)
            # B14..B23: codes -> soft-float triples
            decode_mx(tr, rf, 14, cfg.fmt)
            # B24: SCALE-MULTIPLY (significand x pr1) ; scale byte of each lane's group
            I_mulus4tn16xr16(tr, rf, 24, wvACC, vSIG, kZERO, prSCALE)
            V4(tr, rf, 24, "sel2nx8", P.sel2nx8, VIEW_2NX8, vT0, vCB, kZERO, kIDX_SC0 + h)
            # B25: accumulator extract (Q1.14 x 1.0 -> Q1.14) ; exponent += scale exponent
            I_packvrnrnx48(tr, rf, 25, vSIG, wvACC, 14)
            V3(tr, rf, 25, "addnx16", P.addnx16, VIEW_NX16, vEXP, vEXP, vT0)
            # B26..B38: round to FP8 (RNE), saturate, sign
            narrow_fp8(tr, rf, 26, cfg.m_bits, vOLO + h)
        # B39: pack to bytes
        VVI(tr, rf, 39, "sel2nx8i", P.sel2nx8i, VIEW_NX16, VIEW_2NX8, vIN, vOLO, vOHI, 0)
        if cfg.nan_gate:
            # B40: NaN groups -> the format's NaN byte
            MOVT(tr, rf, 40, "mov2nx8t", P.mov2nx8t, VIEW_2NX8, VIEW_VB8, vIN, kNAN8, vbNAN)
        # B41: store 8 FP8 per group
        I_sav2nx8_xp(tr, rf, 41, vIN, dst, &doff, 32 * n)
        left -= n


# ============================================================================ configuration ("rodata")
def _bcast16(x):
    return np.full(32, x & 0xFFFF, dtype=np.uint16).view(np.uint8)


def _bytes_vec(lst, fill=64):
    v = np.full(64, fill, dtype=np.uint8)
    v[:len(lst)] = lst
    return v


def _nf4_tables(values):
    """Soft-float triples of the 16 codebook values: SIG (the top 14 significand bits + a sticky bit,
    leading one at bit 14), EXP (unbiased), SGN (0x80 for negative). Computed from the float32 bit
    patterns (the sticky bit keeps the later single rounding to <= 4 bits exact)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.int64)
    sig = np.zeros(16, np.int64)
    exp = np.full(16, -16384, np.int64)
    sgn = ((bits >> 31) & 1) * 0x80
    for c in range(16):
        e = (int(bits[c]) >> 23) & 0xFF
        m = int(bits[c]) & 0x7FFFFF
        if e == 0 and m == 0:
            continue
        if e == 0:                      # float32 subnormal: normalise
            sh = 24 - m.bit_length()
            m24, ue = m << sh, -126 - sh
        else:
            m24, ue = m | 0x800000, e - 127
        sig[c] = (m24 >> 9) | (1 if (m24 & 0x1FF) else 0)
        exp[c] = ue
    lo = np.zeros(32, np.uint16)
    lo[:16] = sig
    lo[16:] = exp & 0xFFFF
    hi = np.zeros(32, np.uint16)
    hi[:16] = sgn
    return lo.view(np.uint8), hi.view(np.uint8)


def build_rodata(int fmt, int group, str nibble_order, str fp6_packing, str mx_layout, str mx_scale,
                 nf4_values):
    """The constant vectors of one kernel configuration, uint8 [nconst, 64] (the kernel's .rodata)."""
    e5m2 = fmt in (FMT_E2M1, FMT_INT4)
    bias, m_bits = (15, 2) if e5m2 else (7, 3)
    mx = group == 8
    rows = {
        kZERO: np.zeros(64, np.uint8), kONE: _bcast16(1), kA: _bcast16(1 - bias), kSH0: _bcast16(14 - m_bits),
        kCLAMP: _bcast16(16), kMAX: _bcast16(0x7B if e5m2 else 0x7E),
        kEB: _bcast16((15 if fmt != FMT_NF4 else 0) + (127 if mx else 0)),
        k4000: _bcast16(0x4000), kZEXP: _bcast16(-16384),
    }
    if fmt == FMT_E2M1:
        rows.update({kF0: _bcast16(3), kF1: _bcast16(14 << 10), kF2: _bcast16(8)})
    elif fmt == FMT_INT4:
        rows.update({kF0: _bcast16(0x80), kF1: _bcast16(0x7FFF)})
    elif fmt == FMT_NF4:
        lo, hi = _nf4_tables(nf4_values)
        rows.update({kF0: lo, kF1: hi, kF2: _bcast16(0x1000)})
    else:
        rows.update({kF0: _bcast16(3), kF1: _bcast16(14 << 10), kF2: _bcast16(0x20), kF3: _bcast16(7)})
        lo_sh = ((0, 0), (0, 6), (1, 4), (2, 2)) if fp6_packing == "lsb-first" else ((2, 2), (1, 4), (0, 6), (0, 0))
        for h in range(2):
            idx = []
            for k in range(32):
                c = 32 * h + k
                lo = 3 * (c >> 2) + lo_sh[c & 3][0]
                idx += [lo, lo + 1]
            rows[kIDX6_0 + h] = _bytes_vec(idx)
        rows[kSH6] = np.array([lo_sh[k & 3][1] for k in range(32)], np.uint16).view(np.uint8)
        rows[k63] = _bcast16(63)
        rows[k64] = _bcast16(64)
    if mx:
        codes, scales = [], []
        for g in range(8):
            if mx_layout == "scale-first":
                codes += [5 * g + 1 + j for j in range(4)]; scales.append(5 * g)
            elif mx_layout == "scale-last":
                codes += [5 * g + j for j in range(4)]; scales.append(5 * g + 4)
            else:
                b, gi = g >> 2, g & 3
                codes += [20 * b + 4 + 4 * gi + j for j in range(4)]; scales.append(20 * b + gi)
        rows[kIDX_CODES] = _bytes_vec(codes + scales)
        for h in range(2):
            rows[kIDX_SC0 + h] = _bytes_vec(sum(([32 + 4 * h + (k >> 3), 64] for k in range(32)), []))
        s32 = [64] * 64
        for j in range(8):
            s32[4 * j + 3] = 32 + j
        rows[kIDX_S32] = np.array(s32, np.uint8)
        rows[kQBIT] = np.full(16, 0x00400000, np.uint32).view(np.uint8)
        rows[kIDX_NM8] = np.array([4 * (e >> 3) for e in range(64)], np.uint8)
        rows[kNAN8] = np.full(64, 0x7E if e5m2 else 0x7F, np.uint8)
        rows[kALL1] = np.full(64, 0xFF, np.uint8)
    n = max(rows) + 1
    out = np.zeros((n, 64), np.uint8)
    for slot, row in rows.items():
        out[slot] = row
    return out


def run(const uint8_t[:, ::1] src, uint8_t[:, ::1] dst, int fmt, int group, str nibble_order="low-first",
        str fp6_packing="lsb-first", str mx_layout="scale-first", str mx_scale="e8m0", nf4_values=None,
        trace=False, trace_window=None, trace_ops=None, int kernel_id=0):
    """Run the firmware path for (fmt, group) over every partition (row) of `src` into `dst`.

    src uint8 [P, in_bytes], dst uint8 [P, out_bytes]; arguments must already be validated
    (q7emu.kernels.dequant.dequantize does that). With trace=True, returns the raw trace records (a
    bytes-like, zero-copy TraceBuffer) limited to sequence numbers in trace_window=(lo, hi) and mnemonics
    in trace_ops, each with kernel_id as its kernel byte (the caller's q7emu.model.KernelId; 0 = not
    given); else None.
    """
    cdef KCfg cfg
    cdef regfile_t rf
    cdef NoTrace nt
    cdef Tracer tr
    cdef Py_ssize_t p, parts = src.shape[0], nbytes = src.shape[1]
    cdef bint six = fmt == FMT_E2M3
    cdef bint mx = group == 8 and not six
    cdef const char* ops_c[64]
    rodata = build_rodata(fmt, group, nibble_order, fp6_packing, mx_layout, mx_scale, nf4_values)
    memset(&cfg, 0, sizeof(cfg))
    memset(&rf, 0, sizeof(rf))
    cdef const uint8_t[:, ::1] ro = rodata
    memcpy(cfg.rodata, &ro[0, 0], rodata.size)
    cfg.nconst = rodata.shape[0]
    cfg.fmt = fmt
    cfg.nan_gate = group == 8 and mx_scale == "e8m0"
    cfg.m_bits = 2 if fmt in (FMT_E2M1, FMT_INT4) else 3
    cfg.s4_imm = (8 if nibble_order == "high-first" else 0) | (16 if fmt == FMT_INT4 else 0)
    if dst.shape[0] != parts or parts == 0:
        raise ValueError("src and dst must have the same (non-zero) number of partitions")
    expected = nbytes // 12 * 16 if six else (nbytes // 20 * 32 if mx else nbytes * 2)
    if dst.shape[1] != expected or (six and nbytes % 12) or (mx and nbytes % 20) or nbytes % 4:
        raise ValueError("src / dst stream lengths do not match the path's ratio")
    if not trace:
        with nogil:
            for p in range(parts):
                if mx:
                    proc_4bit_mx_8(&nt, &rf, &cfg, &src[p, 0], nbytes, &dst[p, 0])
                else:
                    proc_non_mx(&nt, &rf, &cfg, &src[p, 0], nbytes, &dst[p, 0])
        return None
    _op_names = init_tracer(&tr, kernel_id, trace_window, trace_ops, ops_c)  # keeps the C strings ops_c points to alive
    try:
        with nogil:
            for p in range(parts):
                tr.partition = <uint32_t>p
                if mx:
                    proc_4bit_mx_8(&tr, &rf, &cfg, &src[p, 0], nbytes, &dst[p, 0])
                else:
                    proc_non_mx(&tr, &rf, &cfg, &src[p, 0], nbytes, &dst[p, 0])
        if tr.failed:
            raise MemoryError("trace buffer allocation failed")
        return take_trace(&tr)
    finally:
        q7_buf_free(tr.buf, tr.cap)
