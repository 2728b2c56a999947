# cython: language_level=3
"""DVE opcode 0xE3 QuantizeMX: the quantize body on the IVP primitives (docs/firmware.md §3.4, §3.6; seed 000 §4).

One call quantizes one 8-partition row block of the [P, F] fp16 / bf16 tile. Two passes per chunk
of 16 free elements (4 MX blocks of 8 partitions x 4 elements):
  pass 1 (SHARED-EXPONENT EXTRACT): upcast each of the 8 rows to fp32, take the biased exponent
     with a per-lane shift (ivp_srln_2x32 by a broadcast 23, seed @0x79ec), max-reduce it over the
     8 rows and then over each 4-lane block with bmaxn_2x32, subtract max_exp (knob `emax`) with
     wrap-around in uint8 or a clamp at 0 (knob `underflow`), store the 4 scale bytes. Under
     `underflow` = unclamped-data / unwrapped-data the wrapped / clamped byte is formed in a scratch
     register for the store only, and vSC keeps the true (signed) m - max_exp for pass 2's divide.
     Under `nonfinite` = ocp a block whose maximum is field 0xFF (NaN / Inf) is flagged in vbNB and its
     stored byte forced to 0xFF.
     Then the SCALE TO pr: minus each block's exponent s, masked to 16 bits in one lane per block (lane
     4b + 1 of v14), goes into pr8..pr11 (dextrprn_2x32 of that lane, the pr's high word: tap 2, and of lane 10
     of v16, a zero lane, its low word: taps 0 and 1; block 1's is seed @0x22b5, `dextrprn_2x32
     pr8,v14,v16,5,10`).
  pass 2 (DIVIDE, CLIP, ROUND, PACK) per row: split the fp32 value into sign / exponent /
     significand (bf16 subnormals normalised by the int -> fp32 convert), the DIVIDE by 2^(s - 127)
     through the MAC (docs/model.md §9.4): per block one MAC puts 2^15 x (-s) into its lanes (tap 2 times a lane
     mask two lanes up: lane i of the window lo || hi is i + 2; block 1's in the overwrite form mulus4tn16xr16
     with seed @0x66a6's registers, the others accumulating, mulus4tan16xr16), then the paired muluupan16xr16 adds
     EXP * 2^15 + SIG, and the extract (packvrnrnx48 >> 15) gives EXP - s; ±Inf forced to saturate, NaN gated by an
     unordered compare (ultn_2xf32t) to the format's NaN with the sign kept (`nonfinite` = ocp: every
     lane of a vbNB block joins the NaN mask, its sign cleared), then the shared narrow_fp8
     (RNE + saturation to ±max_val = clip) and a byte pack 4 FP8 per u32 word.
The row's 16 elements are loaded spread into 32-bit lanes (labvdcmprs2nx8_xp: fp16 element j into 16-bit lane 2j,
which cvtf32nxf16_0, the even lanes, widens to fp32; bf16 element j into the high half of 32-bit lane j, already
the fp32 pattern), so the fp32 values are processed 16 per vector (N_2X32); the 16-bit narrowing then runs on their
low halves (lanes 0..15; lanes 16..31 carry duplicates that are never stored).
"""
from functools import lru_cache

import numpy as np

from q7emu.model.format_table import fp8_format

include "kernel_cimports.pxi"     # cimports (q7regs, q7ivp as P, q7trace) and the kernel includes

# ---------------------------------------------------------------------------- register map
cdef enum:
    # Constants v0..v13 and v15..v22 (load_rodata skips v14: seed @0x79ec's srln_2x32 writes it). Shared with the
    # dequant kernels (kernel_fp8.pxi): v0..v3, v8 (kZERO, kONE, kA, kSH0, kZEXP) and vSIG / vEXP / vSGN / vT0..vT3
    # = v23..v29. v5 holds the broadcast 23 (the seed's v5) and v7 block 1's divide mask (seed @0x66a6's v7).
    k23 = 5            # 23 (32-bit lanes): the exponent-field shift (seed @0x79ec: srln_2x32 v14,v25,v5)
    kMAXEXP = 6        # max_exp (32-bit lanes): 8 / 15 (ocp), 7 / 14 (alt)
    kSAT = 9           # largest finite FP8 code (0x7E E4M3, 0x7B E5M2): narrow_fp8's saturation
    kFF = 10           # 0xFF (32-bit lanes)
    kIDX_R1 = 11       # seln_2x32: lane i <- i + 1
    # kM0, kM1 .. kM3: the divide MACs' lane masks: 2^15 in 16-bit lanes 4b + 2 .. 4b + 5 and 16 + 4b + 2 .. (up to
    # 31) of block b's, else 0: tap 2 reads lane i + 2 of the window for output lane i (docs/model.md §9.4)
    kM0 = 12
    kIDX_B4 = 13       # seln_2x32: lane i <- i & ~3 (block broadcast)
    Q_HOLE = 14        # the register load_rodata skips
    kIDX_SCB = 15      # sel2nx8: byte j <- byte 16 j (scale of block j)
    # kM2: block 2's mask; also dextrprn_2x32's low vector (seed @0x22b5's v16): its u32 lane 10 is 0, so every
    # pr's low word (taps 0 and 1) is 0
    kM2 = 16
    kSPREAD = 17       # the row load's predicate bytes: fp16 (1, 1, 0, 0) x 16, bf16 (0, 0, 1, 1) x 16
    k149 = 18          # 149 (32-bit lanes): fp32 subnormal scale 2^-149
    kBIG = 19          # 1000 (16-bit lanes): exponent that saturates (±Inf)
    kIDX_EVEN16 = 20   # selnx16: lane k <- lane 2 (k & 15) (low halves of the 32-bit lanes)
    kHID = 21          # 0x4000 (16-bit lanes): the hidden bit of SIG (bit 14)
    kNANC = 22         # NaN code of the output format (16-bit lanes): 0x7F E4M3 / 0x7E E5M2
    vX = 14            # pass 2: the row's data
    vE = 14            # pass 1: the row's exponent fields (seed @0x79ec: v14)
    vR1 = 25           # pass 1: the row's data (seed @0x79ec: v25; pass 2 uses v25 as narrow_fp8's vSGN)
    vSC = 30           # per-lane scale byte of the 4 blocks (32-bit lanes)
    vM = 4             # pass 1: exponent max; pass 2: scratch (after the entry has moved kPAIRW into pr2)
    vbS = 3            # exponent field 0 (zero or subnormal)
    vbZ = 4            # ±0
    vbI = 5            # exponent field 0xFF (±Inf, NaN)
    vbN = 6            # NaN (32-bit lanes)
    vbN16 = 7          # NaN (16-bit lanes)
    vbNB = 8           # nonfinite=ocp: lanes of a block whose maximum exponent field is 0xFF (NaN / Inf)
    vbSPREAD = 9       # the row load's predicate: the bytes kSPREAD marks
    # kPAIRW: u32 lane 0 = 1 | 2^15 << 16, the pair weights of the accumulator set-up (kernel_fp8.pxi's kCLAMP
    # slot: narrow_fp8 needs no shift clamp); read once into pr2, then the register is vM
    kPAIRW = 4
    # kM1: block 1's mask, the window's low half of seed @0x66a6 (mulus4tn16xr16 wv0,v31,v7,pr8); kM3: block 3's,
    # its high half v31 (loaded from rodata row kM3_ROW), whose lanes 0 and 1 (read only for output lanes 30, 31,
    # never stored) are 0
    kM1 = 7
    kM3 = 31
    prPAIR = 2         # the pair weights (1, 2^15) of the accumulator set-up: SIG on the low field, EXP the high
    # minus block b's scale exponent as the MAC's tap: block 1 in pr8 (seeds @0x22b5, @0x66a6), then blocks 0, 2, 3
    prSC1 = 8
    prSC0 = 9
    prSC2 = 10
    prSC3 = 11
    vNS = 14           # end of pass 1: minus block b's exponent in lane 4b + 1, zero elsewhere (seed @0x22b5: v14)
    kM3_ROW = 22       # rodata rows (not register constants): block 3's mask, loaded into v31 ...
    kSPARSE_ROW = 23   # ... and 0xFFFF in 32-bit lanes 1, 5, 9, 13 (the low half of one lane per block)
    wvACC = 0          # seed: wv0
    NCONST = 22

cdef enum:
    ROWS = 8           # partitions of a row block (an MX block is 8 rows x 4 elements)
    CHUNK_COLS = 16    # elements of a row per pass: 4 MX blocks, one per 4 32-bit lanes
    BLOCK_COLS = 4     # elements of a row in one MX block (and its 32-bit lanes)
    ELEM_BYTES = 2     # bytes of an fp16 / bf16 element
    NS_LANE = 1        # lane BLOCK_COLS * b + NS_LANE of vNS holds minus block b's exponent (the pr's tap 2) ...
    ZERO_LANE = 10     # ... and u32 lane 10 of kM2 is 0 (the pr's low word: taps 0 and 1)
    # fp32 fields: sign bit 31, exponent field 30..23 (FP32_MANT_BITS up), mantissa 22..0
    FP32_SIGN_BIT = 31
    FP32_MANT_BITS = 23
    SIGN_TO_BYTE = 7   # the sign bit (at bit 0) -> 0x80
    MANT_TO_TOP = 9    # 32 - FP32_MANT_BITS: the mantissa's top bit to bit 31
    TOP14_DOWN = 18    # 32 - 14: the top 14 mantissa bits down to bits 0..13 (SIG below the hidden bit 14)
    ACC_EXP_SHIFT = 15  # the accumulator's EXP field starts at bit 15 (EXP * 2^15 + SIG)


cdef struct QCfg:
    vec_t rodata[24]
    int bf16
    int wrap
    int byte_reg      # the register the stored scale byte is formed in (vSC, or vT0 under true_div)
    int ocp_nonfinite
    int m_bits


# ============================================================================ bundle labels
# Bundle numbers come from these labels (docs/model.md §9.1); every bundle is a legal FLIX bundle and its ops
# read the registers as they were before it (docs/model.md §9.2, §9.3).
cpdef enum QuantizeMXBundle:
    Q_PR0 = ENTRY_B                     # block 3's mask into v31
    Q_PR1                               # pr2 set-up
    Q_ZERO                              # pass 1: the shared-exponent extract
    Q_LOAD1
    Q_UPCAST1
    Q_EXP1
    Q_FIELD1
    Q_MAX1
    Q_RED0
    Q_RED1
    Q_RED2
    Q_RED3
    Q_RED4
    Q_RED5
    Q_BCAST
    Q_SCALE
    Q_BYTE
    Q_NONFIN
    Q_SCB
    Q_SSTORE
    Q_NEG
    Q_SPARSE
    Q_PRS
    Q_PRS2
    Q_LOAD2                             # pass 2: divide, clip, round, pack
    Q_UPCAST2
    Q_SIGN
    Q_ABS
    Q_FIELD2
    Q_NORM
    Q_CLASS
    Q_TAKE
    Q_SPLIT
    Q_MANT
    Q_DIV
    Q_SUB149
    Q_SUBN
    Q_INF
    Q_ZEROS
    Q_NAN
    Q_HALF16A
    Q_HALF16B
    Q_ACC
    Q_EXT
    Q_NARROW
    Q_NANC = Q_NARROW + NARROW_LEN
    Q_NANSET
    Q_PACK
    Q_STORE

QMX_NOTES = {
    "Q_PR0": "block 3's divide mask into v31 from a rodata row (seed @0x66a6's v31, its MAC's high half)",
    "Q_PR1": "the pair weights (1, 2^15) of the accumulator set-up into pr2 ; the row load's predicate",
    "Q_ZERO": "pass 1 (the shared-exponent extract): running max = 0",
    "Q_LOAD1": "load 16 elements of row r, spread into 32-bit lanes (a tail: fewer, zero-filled)",
    "Q_UPCAST1": "upcast to fp32 inside the op (fp16: cvtf32nxf16_0 of the even lanes; bf16: none needed)",
    "Q_EXP1": "seed @0x79ec: the biased exponent field, a per-lane shift by the broadcast 23",
    "Q_FIELD1": "& 0xFF",
    "Q_MAX1": "MAX over the block's 8 partitions",
    "Q_RED0": "MAX over the block's 4 elements: the neighbour lane",
    "Q_RED1": "max with the neighbour lane",
    "Q_RED2": "again: lanes i .. i + 2",
    "Q_RED3": "max",
    "Q_RED4": "and again: lanes i .. i + 3 (the block's 4 elements at lane 4b)",
    "Q_RED5": "max",
    "Q_BCAST": "broadcast lane 4b over its block",
    "Q_SCALE": "scale = max - max_exp (nonfinite = ocp: blocks whose maximum is field 0xFF)",
    "Q_BYTE": "the stored E8M0 byte: wrapped in uint8 or clamped at 0 (knob underflow)",
    "Q_NONFIN": "nonfinite = ocp: NaN / Inf blocks store 0xFF",
    "Q_SCB": "the scale bytes of the 4 blocks",
    "Q_SSTORE": "store them (E8M0)",
    "Q_NEG": "SCALE TO pr (docs/model.md §9.4): minus each block's exponent ; the lane mask",
    "Q_SPARSE": "minus the exponent as a 16-bit tap in lane 4b + 1 of v14, every other lane 0",
    "Q_PRS": "seed @0x22b5: blocks 1 and 0 -> pr8, pr9 (dual-lane extract: the block's lane, tap 2, and a zero lane)",
    "Q_PRS2": "blocks 2 and 3 -> pr10, pr11",
    "Q_LOAD2": "pass 2 (divide, clip, round, pack): reload row r, spread into 32-bit lanes",
    "Q_UPCAST2": "upcast to fp32",
    "Q_SIGN": "sign bit ; NaN GATE ; seed @0x66a6's MAC: block 1's divide starts the row's accumulator",
    "Q_ABS": "drop the sign ; exponent field ; block 0's divide MAC",
    "Q_FIELD2": "sign byte (0x80) ; |x| bits ; block 2's divide MAC",
    "Q_NORM": "exponent field ; subnormal significand normalised by int -> fp32 ; block 3's divide MAC",
    "Q_CLASS": "field 0 (zero / subnormal), field 0xFF (Inf / NaN)",
    "Q_TAKE": "subnormals take the normalised value (nonfinite = ocp: a NaN / Inf block loses its sign)",
    "Q_SPLIT": "exponent field of the normalised value ; the top 14 mantissa bits",
    "Q_MANT": "zero test ; mantissa to bits 0..13",
    "Q_DIV": "the hidden bit (bit 14)",
    "Q_SUB149": "subnormal inputs are mant * 2^-149: 149 more",
    "Q_SUBN": "subnormals take that exponent",
    "Q_INF": "±Inf: an exponent that saturates (the clip to ±max_val) ; clear the NaN-mask register",
    "Q_ZEROS": "±0: the far-below exponent (nonfinite = ocp: every lane of a NaN / Inf block -> NaN)",
    "Q_NAN": "NaN lanes -> non-zero",
    "Q_HALF16A": "the low halves into 16-bit lanes: significand, exponent",
    "Q_HALF16B": "the low halves into 16-bit lanes: sign, NaN mask",
    "Q_ACC": "+ EXP * 2^15 + SIG (paired MAC) ; the NaN predicate in 16-bit lanes",
    "Q_EXT": "accumulator extract: EXP - scale",
    "Q_NARROW": "narrow_fp8: round to FP8 (RNE), saturate, sign",
    "Q_NANC": "the NaN code with its sign",
    "Q_NANSET": "NaN lanes -> the NaN code",
    "Q_PACK": "PACK: the low byte of each 16-bit lane, 4 FP8 per u32 word",
    "Q_STORE": "store the row's FP8 bytes",
}


def bundle_labels():
    """{bundle: label} of the QuantizeMX body: the shared labels and its own (docs/model.md §9.1); a bundle inside
    a shared sequence is the label before it plus an offset."""
    out = {int(m): m.name for m in SharedBundle}
    out.update({int(m): m.name for m in QuantizeMXBundle})
    return out


#: every label's note (what the listing says of the bundle)
BUNDLE_NOTES = dict(SHARED_NOTES, **QMX_NOTES)


cdef void quantize_block(TR tr, regfile_t* rf, const QCfg* cfg, const uint8_t* src, Py_ssize_t src_stride,
                         Py_ssize_t ncols, uint8_t* dst, Py_ssize_t dst_stride, uint8_t* scale_row) noexcept nogil:
    """ROWS rows x ncols elements (src: fp16/bf16 rows `src_stride` bytes apart) -> FP8 bytes in dst rows,
    ncols / BLOCK_COLS scale bytes at scale_row; CHUNK_COLS columns per pass (a tail fewer)."""
    cdef Py_ssize_t c = 0
    cdef int r, cols
    load_rodata(tr, rf, cfg.rodata, NCONST, 0, Q_HOLE, 1, vbALL)
    # Q_PR0: block 3's divide mask into v31, from a rodata row (seed @0x66a6's v31, its MAC's high half)
    lv2nx8_i(tr, rf, Q_PR0, kM3, <const uint8_t*>cfg.rodata, ROW_BYTES * kM3_ROW)
    # Q_PR1: the pair weights (1, 2^15) of the accumulator set-up into pr2 (v4 is vM from here on) ; the row
    # load's predicate (0 < kSPREAD's bytes)
    extrprn_2x32(tr, rf, Q_PR1, prPAIR, kPAIRW, 0)
    ltu2nx8(tr, rf, Q_PR1, vbSPREAD, kZERO, kSPREAD)
    while c < ncols:
        cols = CHUNK_COLS if ncols - c > CHUNK_COLS else <int>(ncols - c)
        shared_exponent(tr, rf, cfg, src, src_stride, c, cols, scale_row)
        scale_to_pr(tr, rf, cfg)
        # pass 2: divide, clip, round, pack -- row by row
        for r in range(ROWS):
            divide_row(tr, rf, cfg, src, r * src_stride + ELEM_BYTES * c, cols)
            narrow_row(tr, rf, cfg, dst, r * dst_stride + c, cols)
        c += cols


cdef inline void shared_exponent(TR tr, regfile_t* rf, const QCfg* cfg, const uint8_t* src, Py_ssize_t src_stride,
                                 Py_ssize_t c, int cols, uint8_t* scale_row) noexcept nogil:
    """Pass 1 over columns c .. c + cols of the ROWS rows: each block's largest exponent field -> vSC (per lane,
    its block's m - max_exp) and the stored E8M0 bytes (cols / BLOCK_COLS of them at scale_row[c / BLOCK_COLS])."""
    cdef Py_ssize_t off, soff
    cdef int r
    # Q_ZERO: running max = 0
    and2nx8(tr, rf, Q_ZERO, vM, kZERO, kZERO)
    for r in range(ROWS):
        # Q_LOAD1: load `cols` elements of row r (tail: fewer, zero-filled), spread into 32-bit lanes
        off = r * src_stride + ELEM_BYTES * c
        labvdcmprs2nx8_xp(tr, rf, Q_LOAD1, vR1, vbSPREAD, src, &off, ELEM_BYTES * cols)
        # Q_UPCAST1: upcast to fp32 inside the op
        upcast(tr, rf, Q_UPCAST1, cfg.bf16, vR1)
        # Q_EXP1: biased exponent: (bits >> 23) (per-lane shift by a broadcast 23; seed @0x79ec, its registers)
        srln_2x32(tr, rf, Q_EXP1, vE, vR1, k23)
        # Q_FIELD1: & 0xFF
        and2nx8(tr, rf, Q_FIELD1, vE, vE, kFF)
        # Q_MAX1: MAX over the block's ROWS partitions
        bmaxn_2x32(tr, rf, Q_MAX1, vbF, vM, vM, vE)
    # Q_RED0, Q_RED1: ... and over its BLOCK_COLS elements: with the neighbour lane
    max_neighbour(tr, rf, Q_RED0, Q_RED1)
    # Q_RED2, Q_RED3: again: lanes i..i+2
    max_neighbour(tr, rf, Q_RED2, Q_RED3)
    # Q_RED4, Q_RED5: and again: lanes i..i+3 (the block's elements at lane BLOCK_COLS * b)
    max_neighbour(tr, rf, Q_RED4, Q_RED5)
    # Q_BCAST: broadcast lane BLOCK_COLS * b over its block
    seln_2x32(tr, rf, Q_BCAST, vM, vM, vM, kIDX_B4)
    # Q_SCALE: scale = max - max_exp
    subn_2x32(tr, rf, Q_SCALE, vSC, vM, kMAXEXP)
    if cfg.ocp_nonfinite:
        # Q_SCALE: nonfinite=ocp: blocks whose maximum is field 0xFF (a NaN or an Inf)
        eqn_2x32(tr, rf, Q_SCALE, vbNB, vM, kFF)
    # Q_BYTE: the stored byte, in cfg.byte_reg: vSC itself, or (underflow = unclamped-data / unwrapped-data) vT0,
    # so that vSC keeps the true m - max_exp for the divide
    if cfg.wrap:
        # Q_BYTE: narrowed to uint8: wraps below 0 (the simulator's order)
        and2nx8(tr, rf, Q_BYTE, cfg.byte_reg, vSC, kFF)
    else:
        # Q_BYTE: clamp at 0
        bmaxn_2x32(tr, rf, Q_BYTE, vbF, cfg.byte_reg, vSC, kZERO)
    if cfg.ocp_nonfinite:
        # Q_NONFIN: NaN / Inf blocks store 0xFF (E8M0 NaN); their data is all NaN whatever the divisor
        movn_2x32t(tr, rf, Q_NONFIN, cfg.byte_reg, kFF, vbNB)
    # Q_SCB: scale bytes of the blocks
    sel2nx8(tr, rf, Q_SCB, vT0, kZERO, cfg.byte_reg, kIDX_SCB)
    # Q_SSTORE: store them (E8M0)
    soff = c // BLOCK_COLS
    sav2nx8_xp(tr, rf, Q_SSTORE, vT0, scale_row, &soff, cols // BLOCK_COLS)


cdef inline void max_neighbour(TR tr, regfile_t* rf, int b_sel, int b_max) noexcept nogil:
    """One step of pass 1's max-reduce over a block's lanes: vM = max(vM, vM's neighbour lane) (bundle b_sel: lane
    i <- i + 1 into vT0; bundle b_max: the max)."""
    seln_2x32(tr, rf, b_sel, vT0, vM, vM, kIDX_R1)
    bmaxn_2x32(tr, rf, b_max, vbF, vM, vM, vT0)


cdef inline void scale_to_pr(TR tr, regfile_t* rf, const QCfg* cfg) noexcept nogil:
    """SCALE TO pr (docs/model.md §9.4): minus block b's exponent (from vSC) -> the high word of its pr (pr8 block
    1, pr9 block 0, pr10 block 2, pr11 block 3), the divide MACs' tap 2; the low words (taps 0, 1) are 0."""
    # Q_NEG: minus each block's exponent ... ; the lane mask
    subn_2x32(tr, rf, Q_NEG, vT1, kZERO, vSC)
    lv2nx8_i(tr, rf, Q_NEG, vT2, <const uint8_t*>cfg.rodata, ROW_BYTES * kSPARSE_ROW)
    # Q_SPARSE: ... as a 16-bit tap (zero-extended) in lane BLOCK_COLS * b + NS_LANE of v14, every other lane 0
    and2nx8(tr, rf, Q_SPARSE, vNS, vT1, vT2)
    # Q_PRS: blocks 1 and 0 -> pr8, pr9 (dual-lane extract: the block's lane of v14 into the high word, tap 2,
    # and lane ZERO_LANE of v16, a zero lane, into the low word; block 1's is seed @0x22b5 with its registers)
    dextrprn_2x32(tr, rf, Q_PRS, prSC1, vNS, kM2, BLOCK_COLS * 1 + NS_LANE, ZERO_LANE)
    dextrprn_2x32(tr, rf, Q_PRS, prSC0, vNS, kM2, BLOCK_COLS * 0 + NS_LANE, ZERO_LANE)
    # Q_PRS2: blocks 2 and 3 -> pr10, pr11
    dextrprn_2x32(tr, rf, Q_PRS2, prSC2, vNS, kM2, BLOCK_COLS * 2 + NS_LANE, ZERO_LANE)
    dextrprn_2x32(tr, rf, Q_PRS2, prSC3, vNS, kM2, BLOCK_COLS * 3 + NS_LANE, ZERO_LANE)


cdef inline void divide_row(TR tr, regfile_t* rf, const QCfg* cfg, const uint8_t* src, Py_ssize_t off,
                            int cols) noexcept nogil:
    """Pass 2, one row (`cols` elements from src + off): sign / exponent / significand fields of the fp32 values,
    the four blocks' divide MACs into wvACC, the lane classes (zero, subnormal, Inf, NaN) and the exponents they
    force, up to Q_NAN."""
    # Q_LOAD2: reload the row, spread into 32-bit lanes
    labvdcmprs2nx8_xp(tr, rf, Q_LOAD2, vX, vbSPREAD, src, &off, ELEM_BYTES * cols)
    # Q_UPCAST2: upcast
    upcast(tr, rf, Q_UPCAST2, cfg.bf16, vX)
    # Q_SIGN: sign bit ; NaN GATE (unordered compare with itself) ; DIVIDE by 2^(scale-127) through the MAC
    # (docs/model.md §9.4), block 1: the row's accumulator starts as (2^15 in block 1's lanes) x pr8's tap 2 =
    # minus its scale exponent (the overwrite form, with the registers of seed @0x66a6: wv0,v31,v7,pr8; v7 the
    # mask, the window's low half)
    srlin_2x32(tr, rf, Q_SIGN, vT0, vX, FP32_SIGN_BIT)
    ultn_2xf32t(tr, rf, Q_SIGN, vbN, vX, vX, vbALL)
    mulus4tn16xr16(tr, rf, Q_SIGN, wvACC, kM3, kM1, prSC1)
    # Q_ABS: drop the sign ; exponent field (per-lane shift by the broadcast 23, as in pass 1) ; block 0 (pr9)
    # accumulates
    sllin_2x32(tr, rf, Q_ABS, vT1, vX, 1)
    srln_2x32(tr, rf, Q_ABS, vT2, vX, k23)
    mulus4tan16xr16(tr, rf, Q_ABS, wvACC, kZERO, kM0, prSC0)
    # Q_FIELD2: sign byte (0x80) ; |x| bits ; block 2 (pr10)
    sllin_2x32(tr, rf, Q_FIELD2, vT0, vT0, SIGN_TO_BYTE)
    srlin_2x32(tr, rf, Q_FIELD2, vT1, vT1, 1)
    mulus4tan16xr16(tr, rf, Q_FIELD2, wvACC, kZERO, kM2, prSC2)
    # Q_NORM: exponent field ; subnormal significand normalised by int -> fp32 ; block 3 (pr11)
    and2nx8(tr, rf, Q_NORM, vT2, vT2, kFF)
    floatn_2x32(tr, rf, Q_NORM, vT3, vT1, 0)
    mulus4tan16xr16(tr, rf, Q_NORM, wvACC, kZERO, kM3, prSC3)
    # Q_CLASS: field 0 (zero / subnormal), field 0xFF (Inf / NaN)
    eqn_2x32(tr, rf, Q_CLASS, vbS, vT2, kZERO)
    eqn_2x32(tr, rf, Q_CLASS, vbI, vT2, kFF)
    # Q_TAKE: subnormals: take the normalised value
    movn_2x32t(tr, rf, Q_TAKE, vT1, vT3, vbS)
    if cfg.ocp_nonfinite:
        # Q_TAKE: nonfinite=ocp: the lanes of a NaN / Inf block lose their sign (positive NaN)
        movn_2x32t(tr, rf, Q_TAKE, vT0, kZERO, vbNB)
    # Q_SPLIT: exponent field of the normalised value (bf16 subnormals) ; top 14 mantissa bits (fp16 has 10, bf16
    # 7: exact)
    srlin_2x32(tr, rf, Q_SPLIT, vT2, vT1, FP32_MANT_BITS)
    sllin_2x32(tr, rf, Q_SPLIT, vT3, vT1, MANT_TO_TOP)
    # Q_MANT: zero test ; mantissa to bits 0..13
    eqn_2x32(tr, rf, Q_MANT, vbZ, vT1, kZERO)
    srlin_2x32(tr, rf, Q_MANT, vT3, vT3, TOP14_DOWN)
    # Q_DIV: the hidden bit (bit 14) (the divide by 2^(scale - 127) is the MACs' of Q_SIGN .. Q_NORM)
    or2nx8(tr, rf, Q_DIV, vT3, vT3, kHID)
    # Q_SUB149: subnormal inputs are mant * 2^-149: 149 more
    subn_2x32(tr, rf, Q_SUB149, vM, vT2, k149)
    # Q_SUBN:
    movn_2x32t(tr, rf, Q_SUBN, vT2, vM, vbS)
    # Q_INF: ±Inf: an exponent that saturates (the clip to ±max_val) ; clear the NaN-mask register
    movn_2x32t(tr, rf, Q_INF, vT2, kBIG, vbI)
    and2nx8(tr, rf, Q_INF, vM, kZERO, kZERO)
    # Q_ZEROS: ±0: the far-below exponent
    movn_2x32t(tr, rf, Q_ZEROS, vT2, kZEXP, vbZ)
    if cfg.ocp_nonfinite:
        # Q_ZEROS: nonfinite=ocp: every lane of a NaN / Inf block -> NaN
        movn_2x32t(tr, rf, Q_ZEROS, vM, kFF, vbNB)
    # Q_NAN: NaN lanes -> non-zero
    movn_2x32t(tr, rf, Q_NAN, vM, kFF, vbN)


cdef inline void narrow_row(TR tr, regfile_t* rf, const QCfg* cfg, uint8_t* dst, Py_ssize_t doff,
                            int cols) noexcept nogil:
    """Pass 2, one row, from Q_HALF16A: the fields into 16-bit lanes, the accumulator (EXP * 2^15 + SIG - scale)
    extracted, narrow_fp8, NaN lanes set, packed 4 FP8 per u32 word and stored (`cols` bytes at dst + doff)."""
    # Q_HALF16A: low halves into 16-bit lanes: significand, exponent ...
    selnx16(tr, rf, Q_HALF16A, vSIG, vT3, vT3, kIDX_EVEN16)
    selnx16(tr, rf, Q_HALF16A, vEXP, vT2, vT2, kIDX_EVEN16)
    # Q_HALF16B: ... sign, NaN mask
    selnx16(tr, rf, Q_HALF16B, vSGN, vT0, vT0, kIDX_EVEN16)
    selnx16(tr, rf, Q_HALF16B, vM, vM, vM, kIDX_EVEN16)
    # Q_ACC: + EXP * 2^15 + SIG (paired MAC: EXP on pr2's high field 2^15, SIG on its low 1; unsigned lanes: a
    # negative EXP adds 2^31 more, which the 16-bit extract drops) ; NaN predicate in 16-bit lanes
    muluupan16xr16(tr, rf, Q_ACC, wvACC, vEXP, vSIG, prPAIR)
    neqnx16(tr, rf, Q_ACC, vbN16, vM, kZERO)
    # Q_EXT: accumulator extract: EXP - scale
    packvrnrnx48(tr, rf, Q_EXT, vEXP, wvACC, ACC_EXP_SHIFT)
    # Q_NARROW: round to FP8 (RNE), saturate, sign
    narrow_fp8(tr, rf, Q_NARROW, cfg.m_bits, vT1, kSAT)
    # Q_NANC: NaN with its sign
    or2nx8(tr, rf, Q_NANC, vM, kNANC, vSGN)
    # Q_NANSET:
    movnx16t(tr, rf, Q_NANSET, vT1, vM, vbN16)
    # Q_PACK: PACK: the low byte of each 16-bit lane, 4 FP8 per u32 word
    sel2nx8i(tr, rf, Q_PACK, vX, vT1, vT1, PACK_LOW_BYTES)
    # Q_STORE: store the row's FP8 bytes
    sav2nx8_xp(tr, rf, Q_STORE, vX, dst, &doff, cols)


cdef inline void upcast(TR tr, regfile_t* rf, int b, int bf16, int x) noexcept nogil:
    """The row as loaded (element j in 16-bit lane 2j for fp16, in the high half of 32-bit lane j for bf16) -> fp32
    lanes 0..15 (exact), in place: fp16 through cvtf32nxf16_0 (the even lanes); a spread bf16 already is its fp32
    pattern (no op)."""
    if not bf16:
        cvtf32nxf16_0(tr, rf, b, x, x)


# ============================================================================ configuration ("rodata")
def _b16(x):
    return np.full(32, x & 0xFFFF, np.uint16).view(np.uint8)


def _b32(x):
    return np.full(16, x & 0xFFFFFFFF, np.uint32).view(np.uint8)


@lru_cache(maxsize=64)
def build_rodata(bint bf16, str dst_dtype, int max_exp):
    """The QuantizeMX kernel's constant vectors, uint8 [NCONST + 2, 64] (the last two rows are loaded into working
    registers: block 3's mask into v31 at entry, the lane mask of the pr extract once per chunk); read-only, one
    array per configuration, made once. The output format's bias, mantissa bits, max and NaN codes are the format
    table's (q7emu.model.format_table)."""
    out8 = fp8_format(dst_dtype)
    bias, m_bits = out8.bias, out8.mant_bits
    rows = np.zeros((NCONST + 1, 64), np.uint8)       # by register, v0 .. v22 (v14 is no constant)
    rows[kONE] = _b16(1)
    rows[kA] = _b16(1 - bias)
    rows[kSH0] = _b16(14 - m_bits)
    rows[kSAT] = _b16(out8.max_code)
    rows[kMAXEXP] = _b32(max_exp)
    rows[kHID] = _b16(0x4000)
    rows[kZEXP] = _b16(-16384)
    rows[k23] = _b32(23)
    rows[kFF] = _b32(0xFF)
    rows[kIDX_R1] = np.array([min(i + 1, 31) for i in range(16)], np.uint32).view(np.uint8)
    rows[kIDX_B4] = np.array([i & ~3 for i in range(16)], np.uint32).view(np.uint8)
    scb = np.full(64, 64, np.uint8)
    scb[:4] = [0, 16, 32, 48]
    rows[kIDX_SCB] = scb
    rows[kSPREAD] = np.tile(np.array([0, 0, 1, 1] if bf16 else [1, 1, 0, 0], np.uint8), 16)
    rows[k149] = _b32(149)
    rows[kBIG] = _b16(1000)
    rows[kIDX_EVEN16] = np.array([2 * (k & 15) for k in range(32)], np.uint16).view(np.uint8)
    # output lane i of block b (i & 15 in 4b .. 4b + 3) reads window lane i + 2 (tap 2); lanes past 31 are the
    # window's high half
    masks = [np.array([0x8000 if k >= 2 and ((k - 2) & 15) >> 2 == b else 0 for k in range(32)],
                      np.uint16).view(np.uint8) for b in range(4)]
    rows[kM0], rows[kM1], rows[kM2] = masks[0], masks[1], masks[2]
    rows[kPAIRW] = np.array([1 | (1 << 31)] + [0] * 15, np.uint32).view(np.uint8)
    rows[kNANC] = _b16(out8.nan_code)
    out = np.zeros((NCONST + 2, 64), np.uint8)
    out[:Q_HOLE] = rows[:Q_HOLE]
    out[Q_HOLE:NCONST] = rows[Q_HOLE + 1:NCONST + 1]               # v15 .. v22 are rows 14 .. 21
    out[kM3_ROW] = masks[3]                                        # block 3's mask goes to v31 (Q_PR0)
    out[kSPARSE_ROW] = np.array([0xFFFF if i & 3 == 1 else 0 for i in range(16)], np.uint32).view(np.uint8)
    out.setflags(write=False)
    return out


cdef void traced_blocks(Tracer* tr, regfile_t* rf, QCfg* cfg, const uint8_t* sp, Py_ssize_t sstride,
                        Py_ssize_t ncols, uint8_t* data, uint8_t* scale, Py_ssize_t scale_cols, Py_ssize_t b_lo,
                        Py_ssize_t b_hi, bint scatter) noexcept nogil:
    """The traced kernel over 8-partition row blocks b_lo..b_hi-1 (run's arguments as pointers: src rows of sstride
    bytes, data rows of ncols bytes, scale rows of scale_cols bytes). A function of its own, compiled with the hot
    code: in an ISA level's copy Q7_TRACED_HERE is 0, so its body and every traced kernel it calls are dead code,
    which the compiler drops (docs/build.md §2.2)."""
    cdef Py_ssize_t rb, srow
    if not Q7_TRACED_HERE:
        return
    for rb in range(b_lo, b_hi):
        tr_set_partition(tr, 8 * rb)
        if tr.failed:
            break
        srow = 32 * (rb // 4) + rb % 4 if scatter else rb
        quantize_block(tr, rf, cfg, sp + 8 * rb * sstride, sstride, ncols, data + 8 * rb * ncols, ncols,
                       scale + srow * scale_cols)


def run(const uint16_t[:, ::1] src, uint8_t[:, ::1] data, uint8_t[:, ::1] scale, bint bf16, str dst_dtype,
        int max_exp, bint wrap, bint scatter, bint true_div=False, bint ocp_nonfinite=False, trace=False,
        trace_window=None, trace_ops=None, blocks=None, int kernel_id=0):
    """QuantizeMX over every 8-partition row block of `src` (uint16 bit patterns [P, F]).

    data uint8 [P, F] receives the FP8 bytes (4 per u32 word); scale uint8 receives the E8M0 bytes:
    [P, F/4] rows 32q..32q+3 (scatter) or [P/8, F/4] (compact). Arguments must already be validated
    (q7emu.kernels.quantize_mx.quantize_mx). wrap: the stored byte wraps (else clamps) below 0; true_div: the
    data is divided by the true 2^(m - max_exp - 127), not the stored byte's power (underflow =
    unclamped-data / unwrapped-data); ocp_nonfinite: NaN / Inf blocks store 0xFF and all-NaN data
    (nonfinite = ocp). blocks=(lo, hi) limits the run to 8-partition row blocks lo..hi-1
    (threads running disjoint block ranges write disjoint rows). With trace=True returns the raw
    full-operand trace records (a bytes-like TraceBuffer), each with kernel_id as its kernel byte (the
    caller's q7emu.model.KernelId; 0 = not given); trace=<sink> streams compact blocks to the sink
    (trace_buffer.pxi init_tracer) and returns None.
    """
    cdef QCfg cfg
    cdef regfile_t rf
    cdef NoTrace nt
    cdef Tracer tr
    cdef Py_ssize_t rb, srow, parts = src.shape[0], ncols = src.shape[1], b_lo, b_hi
    cdef const char* ops_c[64]
    if parts % 8 or ncols % 4 or data.shape[0] != parts or data.shape[1] != ncols \
            or scale.shape[1] != ncols // 4 or scale.shape[0] != (parts if scatter else parts // 8):
        raise ValueError("quantize_mx kernel: inconsistent array shapes")
    b_lo, b_hi = blocks if blocks is not None else (0, parts // 8)
    if not 0 <= b_lo <= b_hi <= parts // 8:
        raise ValueError("quantize_mx kernel: block range outside the tile")
    rodata = build_rodata(bf16, dst_dtype, max_exp)
    memset(&cfg, 0, sizeof(cfg))
    memset(&rf, 0, sizeof(rf))
    cdef const uint8_t[:, ::1] ro = rodata
    memcpy(cfg.rodata, &ro[0, 0], rodata.size)
    cfg.bf16 = bf16
    cfg.wrap = wrap
    cfg.byte_reg = vT0 if true_div else vSC
    cfg.ocp_nonfinite = ocp_nonfinite
    cfg.m_bits = fp8_format(dst_dtype).mant_bits
    cdef const uint8_t* sp = <const uint8_t*>&src[0, 0]
    cdef Py_ssize_t sstride = 2 * ncols
    if not trace:
        with nogil:
            for rb in range(b_lo, b_hi):
                srow = 32 * (rb // 4) + rb % 4 if scatter else rb
                quantize_block(&nt, &rf, &cfg, sp + 8 * rb * sstride, sstride, ncols,
                               &data[8 * rb, 0], ncols, &scale[srow, 0])
        return None
    if not Q7_TRACED_HERE:          # an ISA level's copy traces at the baseline (docs/build.md §2.2)
        from q7emu.kernels import _quantize_mx as baseline
        return baseline.run(src, data, scale, bf16, dst_dtype, max_exp, wrap, scatter, true_div, ocp_nonfinite,
                            trace, trace_window, trace_ops, blocks, kernel_id)
    _keep = init_tracer(&tr, kernel_id, trace, trace_window, trace_ops, ops_c)  # what the Tracer points into
    try:
        with nogil:
            traced_blocks(&tr, &rf, &cfg, sp, sstride, ncols, &data[0, 0], &scale[0, 0], scale.shape[1], b_lo, b_hi,
                          scatter)
        return finish_tracer(&tr, trace)
    finally:
        release_tracer(&tr)
