# cython: language_level=3
"""POOL opcode 0x7b TensorDequantize: proc_4bit_non_mx, proc_4bit_mx_8 and proc_6bit_non_mx.

The three firmware compute paths (docs/firmware.md §1.5, §2; seed 002 §5, §7), rebuilt from the IVP
primitives of q7ivp.pxd and nothing else. Each kernel runs one partition's byte stream on one
Q7 register file `rf`; every instruction is one primitive issued through kernel_ops_gen.pxi, in a bundle
named by a label (the bundle labels below) with a comment saying what the bundle does.

Datapath (q7emu's reconstruction of the soft-float chain; docs/firmware.md §2.2-§2.4, seed 002 §5.5, §7.1):
  group 0 E2M1 / INT4 (proc_4bit_non_mx) and FP6 E2M3 (proc_6bit_non_mx): the RE-BIAS MAC path (docs/model.md
     §9.7; seeds @0x01004dfc, @0x01004fc8, both issued with their registers):
     load + spread (labvdcmprs2nx8_xp: the pass's bytes expanded into 16-bit lanes, FP6: 3-byte groups into
     32-bit lanes) -> unpack (shifts and merges make each 16-bit lane a selector of two codes) -> each code's
     X through a table (dselnx16t) -> abs-sub: its kinks |p - X| (babssub2nx8; two, FP6 three) and the sign
     tests (babssubunx16) -> re-bias MAC: paired MACs (mulsupn16xr16, muluupan16xr16) whose sum mod 2^16 is
     -|value| (fp16; FP6: the E4M3 byte in the high byte) -> extract (packvrnrnx48) -> fp gate: an ordered
     fp16 compare (oltnxf16t) finds the zeros, negnxf16t gives the positive codes their sign -> pack the high
     bytes (sel2nx8i 53; every such value is exact in the FP8 format) and store (sav2nx8_xp).
  NF4 (proc_4bit_non_mx fmt 3) and every format of the MX path: the rounding path:
     load (lav2nx8_xp; tails are variable-length loads / stores, never a Python fallback) -> unpack the
     nibbles into 16-bit lanes (sel2nx8i_s4) -> a soft-float triple per lane -- SIG (the significand, leading
     one at bit 14; 0 for zero), EXP (its unbiased exponent; -16384 for zero), SGN (0x00 / 0x80) -- from the
     format's 16-entry codebook registers (dselnx16 / dselnx16t);
     MX: THE SCALE THROUGH THE MAC (docs/model.md §9.4): the accumulator lanes are set up as
     EXP * 2^15 + SIG, each group's scale byte goes from the loaded bytes into pr1 (extrpr2nx8) and an
     accumulating MAC adds 2^15 * pr1 to that group's lanes (mulus4tan16xr16 with a lane mask), so the
     extract (packvrnrnx48) gives EXP + s: the multiply by 2^(s - 127) done in the multiplier; e8m0:
     muln_2x32 makes each scale byte's factor 2^(s - 127) as an fp32 pattern (s * 2^23; +Inf for 0xFF) and an
     unordered fp32 compare with 2^127 (ultn_2xf32t) gates the groups of 0xFF bytes to the NaN code, a pass
     late (seed @0x010052ee, with its registers);
     then narrow_fp8 (kernel_fp8.pxi): RNE at the output precision incl. subnormals, saturation
     with bminnx16, sign -> pack the 16-bit lanes' low bytes (sel2nx8i), store (sav2nx8_xp).
"""
from functools import lru_cache

import numpy as np

from q7emu.model.format_table import codebook_triples, dequant_format, dequant_path, mx_layout as mx_layout_of
from q7emu.model.knobs import KNOB_DEFAULTS
from q7emu.model.tables import NF4_TABLES

include "kernel_cimports.pxi"     # cimports (q7regs, q7ivp as P, q7trace) and the kernel includes

# ---------------------------------------------------------------------------- register map
# Shared with QuantizeMX (kernel_fp8.pxi): constants v0..v3 and v8, vSIG/vEXP/vSGN/vT0..vT3 = v23..v29, vbALL /
# vbF / vbG. Constants ("rodata", loaded by lv2nx8_i at kernel entry).
cdef enum:
    # v4: mxK2P23 on the MX path, else loaded as 0
    kMAX = 5       # largest finite FP8 code (0x7B E5M2, 0x7E E4M3): narrow_fp8's saturation
    k32 = 6        # 32: the sign-table selector offset of the codebook lookup
    k4000 = 7      # 0x4000, the hidden bit of SIG: loaded with the constants, read by no op
    # the codebook constants (NF4 and every MX format) v9..v11
    kF0 = 9
    kF1 = 10
    kF2 = 11
    # working registers (v23..v29 are kernel_fp8.pxi's)
    vCODE = 21     # the codes of a half (16-bit lanes; NF4 group 0: the 16 codes of its table); MX: then the
    #                second half's FP8 codes (seed @0x010052ee v21)
    vOLO = 30      # MX: the first half's FP8 codes
    # pr registers
    prSCALE = 1    # the group's scale byte (seed @0x010051a9: ivp_mulus4tan16xr16 wv2, ..., pr1)
    prPAIR = 2     # the pair weights (1, 2^15) of the accumulator set-up
    # wvec
    wvACC = 2      # the exponent accumulator (seed: wv2)

# proc_4bit_non_mx NF4 (the table path): constants v0..v12 (kZERO .., the codebook kF0..kF2, the spread constant);
# rodata row N4_ROW_CODES (the codes) goes straight into vCODE at the entry
cdef enum:
    n4SPREAD = 12      # 0x000F in every 16-bit lane: its non-zero bytes are the lanes the expanding load fills
    N4_NCONST = 13
    N4_ROW_CODES = 13  # 16-bit lane c: c & 15 (the table's 32 lanes repeat the 16 codes)
    n4TABLE = 14       # 16-bit lane c: the E4M3 byte of code c & 15 in the high byte
    n4LD = 15          # the loaded pass: byte j in the low byte of 16-bit lane j
    n4T = 16           # the spread shifted
    n4SEL = 17         # the lookup's selector: the even code in the low byte of each 16-bit lane, the odd in the high
    n4XO = 18          # the odd codes' E4M3 bytes (the lookup's first output), in the high bytes
    n4XE = 19          # the even codes'
    n4PK = 20          # the packed FP8 bytes
    n4J = 22           # high-first: the spread << 8
    vbN4SPREAD = 12    # the expanding load's predicate

cdef enum:
    NIBBLE_PASS_BYTES = 32   # source bytes of one pass of a 4-bit group-0 path (64 codes)
    FP6_PASS_BYTES = 48      # ... of proc_6bit_non_mx (64 six-bit codes)
    RB_LANE_W2WX = 0         # rbPR3's u32 lanes: w2 | wX << 16 (pr3) ...
    RB_LANE_W3 = 1           # ... and FP6's w3 << 16 (pr5)

cdef enum:
    FMT_E2M1 = 1
    FMT_INT4 = 2
    FMT_NF4 = 3
    FMT_E2M3 = 4

# proc_4bit_mx_8's registers. Seed @0x010052ee ({ muln_2x32 ; ultn_2xf32t vb1,v13,v16,vb9 ; sel2nx8i_s4
# v21,v17,v16,0 }) fixes v13, v16, v17, v21, vb1 and vb9: the constants are v0..v15 and v18..v20 (load_rodata's
# hole: v16, v17) and v22 (loaded at MX_ENTRY).
cdef enum:
    mxK2P23 = 4        # 2^23 (32-bit lanes): the scale byte s times it is the fp32 pattern of 2^(s - 127)
    mxIDX_SPLIT = 12   # sel2nx8: the 32 code bytes of the pass's 8 groups -> bytes 0..31, their scale bytes -> 32..39
    mxK2P127 = 13      # 2^127 (fp32): the largest finite power of two, the NaN-scale gate's bound
    mxM0 = 14          # mxM0..mxM3: 2^15 in the 16-bit lanes of group j = 0..3 of a half (8 j .. 8 j + 7), else 0
    mxM1 = 15
    mxM2 = 18
    mxM3 = 19
    mxIDX_SL = 20      # sel2nx8: 32-bit lane L <- the scale byte of output bytes 4L..4L+3 (group L >> 1), zero-extended
    mxNAN8 = 22        # NaN byte of the output format (0x7E E5M2 / 0x7F E4M3)
    MX_HOLE = 16       # load_rodata skips v16, v17
    MX_NCONST = 19     # rodata rows 0..18 -> v0..v15, v18..v20; row 19 -> v22, row 20 -> the pair weights
    MX_ROW_NAN8 = 19
    MX_ROW_PAIRW = 20  # u32 lane 0 = 1 | 2^15 << 16
    MX_BLOCK_BYTES = 20      # a 5-word block: 4 groups of 8 codes and their 4 scale bytes
    MX_BLOCK_OUT_BYTES = 32  # its FP8 bytes (4 groups x 8)
    MX_SCALE_AT = 32         # after MX_SPLIT, group g's (0..7) scale byte is byte MX_SCALE_AT + g of mxIN
    MX_HALF_GROUPS = 4       # groups per half (32 codes)
    MX_EXP_SHIFT = 15        # the accumulator's EXP field starts at bit 15 (EXP * 2^15 + SIG)
    # working registers
    mxX = 16           # the pass's scale factors 2^(s - 127) as fp32 patterns (+Inf for s = 0xFF), a pass late
    mxIN = 17          # the loaded pass, split in place: code bytes 0..31, scale bytes 32..39
    # vbool
    vbNAN = 1          # the lanes of groups whose scale byte is 0xFF (seed vb1), of the pass before
    vbALL_MX = 9       # the all-true predicate (seed vb9)
    wvX = 0            # muln_2x32's products


# The group-0 re-bias MAC path (docs/model.md §9.7): proc_4bit_non_mx E2M1 / INT4 and proc_6bit_non_mx. Its
# registers are the ones seeds @0x01004fc8 ({ muluupan16xr16 wv3,v0,v23,pr3 ; sel2nx8i v10,v26,v7,53 ;
# babssub2nx8 vb9,v8,v11,v1 }) and @0x01004dfc ({ labvdcmprs2nx8_xp vb12,... ; oltnxf16t vb2,... ;
# dselnx16t v0,... }) name, so its constants start at v11 (load_rodata's `first`).
cdef enum:
    RB_CONST = 11      # the first constant register
    rbP1 = 11          # the first kink point p1 (E2M1 1, INT4 6, FP6 2); FP6: its bytes give the even-byte predicate
    rbP2 = 12          # the second kink point p2 (E2M1 2, INT4 4, FP6 4)
    # rbSPREAD: its non-zero bytes are the lanes the expanding load fills (4-bit: the even bytes; FP6: 3 of
    # every 4); FP6: its 16-bit lanes above 0x8000 are the even ones
    rbSPREAD = 13
    rbXTAB = 14        # the code -> X table (lane i: X of code i, E2M1 c & 7, INT4 |c - 8|, FP6 c & 31; sign at bit 15)
    rbBIAS = 15        # the MAC's constant term, in units of the weight w1 (E2M1 183, INT4 -208, FP6 46)
    # rbZMAX: -(the smallest non-zero magnitude), as the MAC forms it (E2M1 -0.5, INT4 -1.0 fp16; FP6 0xA000:
    # E4M3 2^-3 in the high byte, sign bit set)
    rbZMAX = 16
    rbNEG0 = 17        # 0x8000: fp16 -0, and the sign test's bound
    rbPR3 = 18         # u32 lane 0: the seed MAC's weights w2 | wX << 16 (X, its first vector, on the high field);
    #                    FP6 lane 1: w3 << 16 (the third kink's)
    rbZERO = 19        # 0
    rbP3 = 20          # FP6: the third kink point p3 (8)
    rbXTABN = 21       # FP6: the table's second half, codes 32..63 (the negative ones)
    rbREV = 22         # FP6 msb-first: sel2nx8 indexes that reverse the 4 bytes of each 32-bit lane
    # working registers
    # X of the odd codes (dselnx16t's first output, the odd selector bytes; seed v0) and of the even codes (its
    # second output; seed v1: @0x01004fc8's babssub2nx8 reads it)
    rbXO = 0
    rbXE = 1
    # rbLD: the loaded pass (4-bit: byte j in the low byte of 16-bit lane j; FP6: 3-byte group i in the low 3
    # bytes of 32-bit lane i)
    rbLD = 2
    rbT = 3            # 4-bit: the spread shifted by 4 (low-first: left; high-first: right); FP6: the groups' halves
    rbSEL = 4          # the lookup's selector: the even code in the low byte of each 16-bit lane, the odd in the high
    rbK1O = 5          # |p1 - X| of the odd codes
    rbK2E = 6          # |p2 - X| of the even codes
    rbFE = 7           # the even codes' values (fp16; FP6: the E4M3 byte in the high byte): the pack's lo
    rbK1E = 8          # |p1 - X| of the even codes (seed @0x01004fc8: v8)
    rbJ0 = 9           # the sign tests' differences (not read); high-first: the spread << 8
    rbPK = 10          # the packed FP8 bytes
    rbK2O = 23         # |p2 - X| of the odd codes (seed @0x01004fc8: v23)
    rbK3O = 24         # FP6: |p3 - X| of the odd codes
    rbK3E = 25         # FP6: |p3 - X| of the even codes
    rbFO = 26          # the odd codes' values: the pack's hi (seed @0x01004fc8: v26)
    rbJ1 = 27
    # vbool
    vbSPREAD = 12      # the expanding load's predicate (seed @0x01004dfc: labvdcmprs2nx8_xp vb12)
    vbZO = 2           # zero-magnitude lanes of the odd codes (seed @0x01004dfc: oltnxf16t vb2)
    vbZE = 13
    vbPO = 6           # positive codes (sign bit clear), odd / even
    vbPE = 7
    vbE16 = 1          # FP6: the even 16-bit lanes
    vbE8 = 3           # FP6: the even bytes
    vbK1E = 9          # the kinks' flags (not read); seed vb9: the even codes' |p1 - X|
    vbK1O = 10
    vbK2O = 11
    vbK2E = 14
    vbK3O = 4
    vbK3E = 5
    # pr / wvec
    prW1 = 4           # the weight w1 in every field (movpint16)
    prRB = 3           # w2 | wX << 16 (the first vector, X, takes the high field): seed pr3
    prK3 = 5           # FP6: w3 << 16, the third kink's weight (the pair's second vector is the zero register)
    wvFO = 3           # seed wv3: the odd codes' accumulator
    wvFE = 1           # the even codes'


cdef struct KCfg:
    vec_t rodata[24]
    int nconst
    int fmt
    int nan_gate      # mx_scale == e8m0
    int m_bits        # output mantissa bits (2 E5M2, 3 E4M3)
    int s4_imm        # sel2nx8i_s4 immediate base: H<<3 (nibble_order)
    int const_reg     # the register rodata row 0 goes to
    int rebias        # proc_4bit_non_mx E2M1 / INT4: the re-bias MAC path
    int w1            # its movpint16 weight (16-bit pattern)
    int high_first    # nibble_order == high-first: the even code is the high nibble
    int fp6           # proc_6bit_non_mx: the re-bias path with a third kink
    int msb_first     # fp6_packing == msb-first
    int xtab_hi       # the lookup pool's second half: rbXTABN (FP6), rbXTAB (4-bit: the table repeats)


# ============================================================================ bundle labels
# Bundle numbers come from these labels (docs/model.md §9.1), never from literals: each label is one bundle
# issue of the listing, and a shared sequence called at a label takes the bundles up to its *_LEN. Every
# bundle is a legal FLIX bundle (at most one MAC, two load / store / pack, two ALU ops; docs/firmware.md
# §6.3) and its ops read the registers as they were before the bundle (VLIW; docs/model.md §9.2).
cdef enum:
    NF4_LEN = 4                         # decode_nf4
    DECODE_MX_LEN = NF4_LEN             # decode_mx: the codebook lookup of every MX format
    # the first bundle of the group-0 paths' main loops: after their longest entry (NF4's table), numbered as
    # before the NF4 table path (the re-bias listings keep their bundle numbers)
    LOOP_B = ENTRY_B + 20

# proc_4bit_non_mx NF4 (one pass: 32 source bytes): a 16-entry table lookup (docs/model.md §9.10). The entry builds
# the table, code -> its E4M3 byte, with the rounding path's own primitives on the 16 codes; a pass is the non-MX
# block's load + spread, unpack and dselnx16t, then a pack of the looked-up bytes.
cpdef enum NF4Bundle:
    N4_ENTRY = ENTRY_B                  # the spread predicate ; the codes 0..15 into vCODE
    N4_DECODE                           # decode_nf4 of the 16 codes (NF4_LEN bundles)
    N4_NARROW = N4_DECODE + NF4_LEN     # their rounding narrow (NARROW_LEN bundles)
    N4_TABLE = N4_NARROW + NARROW_LEN   # the table: each code's E4M3 byte in the high byte of its lane
    N4_LOAD = LOOP_B
    N4_SEL0
    N4_SEL1
    N4_LOOKUP
    N4_PACK
    N4_STORE

NF4_NOTES = {
    "N4_ENTRY": "the expanding load's predicate (the spread constant's non-zero bytes) ; the codes c & 15 of lane c "
                "into vCODE",
    "N4_DECODE": "decode_nf4: the codebook's soft-float SIG, EXP, SGN of each of the 16 codes",
    "N4_NARROW": "narrow_fp8: each code's value rounded to E4M3 (RNE, saturating), sign",
    "N4_TABLE": "the code -> E4M3 table: the byte into the high byte of each 16-bit lane",
    "N4_LOAD": "LOAD + SPREAD one pass: byte j into the low byte of 16-bit lane j (a tail is shorter: zero-filled)",
    "N4_SEL0": "UNPACK: the spread shifted (low-first: << 4; high-first: >> 4, and << 8)",
    "N4_SEL1": "UNPACK: the lookup's selector: the even code in each 16-bit lane's low byte, the odd code in its high "
               "byte",
    "N4_LOOKUP": "the 16-entry TABLE LOOKUP of the odd and even codes (the table repeats every 16 entries)",
    "N4_PACK": "pack the looked-up bytes, even and odd codes interleaved: 64 FP8 in element order",
    "N4_STORE": "store the pass's 64 FP8 bytes (2 per source byte)",
}

# The re-bias MAC path: proc_4bit_non_mx E2M1 / INT4 (one pass: 32 source bytes) and proc_6bit_non_mx (48).
# Software-pipelined the way the seed bundles imply: a pass's load issues in the pass before (RB_LOOKUP; the
# first in RB_FIRST), and its odd codes' zero gate and sign, its pack and its store in the pass after
# (RB_LOOKUP .. RB_EXT0; after the loop for the last pass). Labels only FP6 issues: RB_PRED, RB_SEL2 ..
# RB_SEL4, RB_MACC0, RB_MACC1.
cpdef enum RebiasBundle:
    RB_ENTRY = ENTRY_B                  # the spread predicate, the weight w1
    RB_PR3                              # pr3 = the seed MAC's weights (FP6: and pr5)
    RB_PRED                             # FP6: the even-byte and even-lane predicates
    RB_FIRST                            # the first pass's load
    RB_SEL0 = LOOP_B
    RB_SEL1
    RB_SEL2
    RB_SEL3
    RB_SEL4                             # FP6 msb-first
    RB_LOOKUP                           # seed @0x01004dfc
    RB_ZERO0
    RB_NEG0
    RB_SIGN
    RB_SEED                             # seed @0x01004fc8
    RB_MACC0
    RB_EXT0
    RB_MAC1
    RB_MACC1
    RB_EXT1
    RB_GATE1
    RB_ZERO1
    RB_NEG1

REBIAS_NOTES = {
    "RB_ENTRY": "the expanding load's predicate (the spread constant's non-zero bytes) ; w1 into every field of pr4",
    "RB_PR3": "pr3 = w2 | wX << 16, the seed MAC's weights, from a constant lane (FP6: pr5 = w3 << 16)",
    "RB_PRED": "FP6: the even-byte and the even-16-bit-lane predicates",
    "RB_FIRST": "LOAD + SPREAD the first pass: byte j into the low byte of 16-bit lane j (FP6: 3-byte group i into "
                "32-bit lane i)",
    "RB_SEL0": "UNPACK: the spread shifted (4-bit: by 4; FP6: each group << 4)",
    "RB_SEL1": "UNPACK: the lookup's selector: the even code in each 16-bit lane's low byte, the odd code in its high "
               "byte (FP6: the group's own codes kept in the low lane)",
    "RB_SEL2": "FP6: << 2: each lane's second code at bits 8..13",
    "RB_SEL3": "FP6: the low bytes back from before the shift (the first code at bits 0..5)",
    "RB_SEL4": "FP6 msb-first: a group's codes in the other order (its 4 bytes reversed)",
    "RB_LOOKUP": "seed @0x01004dfc: LOAD + SPREAD the next pass ; FP GATE of the previous pass's odd codes ; X of "
                 "this pass's odd (v0) and even (v1) codes through the code -> X table",
    "RB_ZERO0": "the previous pass's odd zero codes -> -0 ; ABS-SUB: the odd codes' kink |p1 - X|",
    "RB_NEG0": "SIGN: the previous pass's positive odd codes ; the odd codes' kink |p2 - X|",
    "RB_SIGN": "the positive-code flags (ABS-SUB of X against 0x8000; FP6: the odd codes' third kink) ; RE-BIAS MAC "
               "of the odd codes: wv3 = (|p1 - X| + BIAS) * w1",
    "RB_SEED": "seed @0x01004fc8: wv3 += X * wX + |p2 - X| * w2 ; PACK the previous pass (the high bytes of the "
               "even and odd codes' values) ; the even codes' |p1 - X|",
    "RB_MACC0": "FP6: wv3 += |p3 - X| * w3 ; the even codes' |p3 - X|",
    "RB_EXT0": "extract the odd codes' values ; RE-BIAS MAC of the even codes ; store the previous pass ; the even "
               "codes' |p2 - X|",
    "RB_MAC1": "the even codes' second MAC",
    "RB_MACC1": "FP6: the even codes' third-kink MAC ; the positive-code flags",
    "RB_EXT1": "extract the even codes' values",
    "RB_GATE1": "FP GATE: the even codes' zero lanes",
    "RB_ZERO1": "the even zero codes -> -0",
    "RB_NEG1": "SIGN: the positive even codes",
}

# proc_4bit_mx_8 (one pass: 8 groups = 40 source bytes). Software-pipelined the way seed @0x010052ee implies: a
# pass's NaN-scale gate, pack and store issue in the pass after (MX_PACKP .. MX_STORE; after the loop for the
# last pass), so the gate can share its bundle with this pass's scale multiply and first unpack.
cpdef enum MXBundle:
    MX_ENTRY = ENTRY_B                  # the NaN byte into v22, the pair weights into vT0 ...
    MX_PR2                              # ... and into pr2
    MX_LOAD
    MX_SPLIT
    MX_PACKP                            # the pass before: pack
    MX_GATE                             # seed @0x010052ee
    MX_NANSET                           # the pass before: NaN groups
    MX_STORE                            # the pass before: store
    MX_UNPACK                           # the second half's unpack (the first half's is in MX_GATE)
    MX_DECODE
    MX_ACC = MX_DECODE + DECODE_MX_LEN
    MX_MAC0                             # the scale MACs of the half's groups 0..3
    MX_MAC1
    MX_MAC2
    MX_MAC3
    MX_EXT
    MX_NARROW

MX_NOTES = {
    "MX_ENTRY": "the NaN byte of the output format into v22 ; the pair weights (1, 2^15) of the accumulator set-up",
    "MX_PR2": "the pair weights into pr2",
    "MX_LOAD": "group-of-8 packed load: 40 bytes = 8 groups (a tail: 20 bytes), a variable-length load "
               "(docs/model.md §9.6)",
    "MX_SPLIT": "split the code bytes from the scale bytes in place (the mx_layout knob in the index vectors) ; "
                "e8m0: each group's scale byte into the 32-bit lanes of its output bytes",
    "MX_PACKP": "the pass before: pack its FP8 bytes ; the first group's scale byte -> pr1",
    "MX_GATE": "seed @0x010052ee: the scale factors s * 2^23 ; NaN GATE of the pass before (2^127 < its factor) ; "
               "4-bit UNPACK of the first half",
    "MX_NANSET": "the pass before's NaN groups -> the format's NaN byte ; this pass's scale factors out of the "
                 "accumulator",
    "MX_STORE": "store the pass before's 8 FP8 per group (the first pass: 0 bytes)",
    "MX_UNPACK": "4-bit UNPACK of the second half ; its first group's scale byte -> pr1",
    "MX_DECODE": "decode_nf4: codes -> soft-float triples through the format's 16-entry codebook",
    "MX_ACC": "the accumulator lanes EXP * 2^15 + SIG (paired MAC)",
    "MX_MAC0": "SCALE-MULTIPLY of group 0 of the half: + (2^15 in its lanes) x pr1 ; the next scale byte -> pr1",
    "MX_MAC1": "SCALE-MULTIPLY of group 1 ; the next scale byte -> pr1",
    "MX_MAC2": "SCALE-MULTIPLY of group 2 ; the next scale byte -> pr1",
    "MX_MAC3": "SCALE-MULTIPLY of group 3",
    "MX_EXT": "accumulator extract: EXP + s",
    "MX_NARROW": "narrow_fp8: round to FP8 (RNE), saturate, sign",
}


def bundle_labels(int fmt, int group):
    """{bundle: label} of the path (fmt, group) runs: the shared labels and its own family's (docs/model.md §9.1);
    a bundle inside a shared sequence is the label before it plus an offset."""
    cdef object fam
    rec = dequant_format(fmt)
    if group == 8:
        fam = <object>MXBundle
    elif _uses_rebias(rec, group):
        fam = <object>RebiasBundle
    else:
        fam = <object>NF4Bundle
    out = {int(m): m.name for m in <object>SharedBundle}
    out.update({int(m): m.name for m in fam})
    return out


#: every label's note (what the listing says of the bundle)
BUNDLE_NOTES = dict(SHARED_NOTES, **NF4_NOTES, **REBIAS_NOTES, **MX_NOTES)


# ============================================================================ shared sequences
cdef inline void decode_nf4(TR tr, regfile_t* rf, int b, bint non_mx) noexcept nogil:
    """NF4 indexes in vCODE -> vSIG / vEXP / vSGN from the 16-entry codebook registers (NF4_LEN bundles). The
    lookup is the MX path's dselnx16, or in the non-MX block its predicated form dselnx16t (docs/firmware.md §2.4
    places each in its path) under the all-true predicate."""
    # kF0 = table lanes 0..15 SIG[c], 16..31 EXP[c] (unbiased: MX takes the 127 off here); kF1 = table
    # lanes 0..15 SGN[c]; kF2 = 0x1000; k32 = 32
    # b+0: selector lanes: c | (c + 16) << 8 for (SIG, EXP) ; c + 32 for SGN
    sllinx16(tr, rf, b, vT0, vCODE, 8)
    addnx16(tr, rf, b, vT1, vCODE, k32)
    # b+1: c << 8 | c ; SIGN TABLE (pool = kF0 || kF1: lanes 32..47)
    or2nx8(tr, rf, b + 1, vT0, vT0, vCODE)
    selnx16(tr, rf, b + 1, vSGN, kF1, kF0, vT1)
    # b+2: + 0x1000 -> low byte c, high byte c + 16
    addnx16(tr, rf, b + 2, vT0, vT0, kF2)
    if non_mx:
        # b+3: 16-ENTRY CODEBOOK LOOKUP: EXP (the selector's odd bytes, c + 16) and SIG (its even bytes, c) from the
        # table register pair kF0 || kF1 (every lane: vbALL)
        dselnx16t(tr, rf, b + 3, vEXP, vSIG, kF1, kF0, vT0, vbALL)
    else:
        # b+3: 16-ENTRY CODEBOOK LOOKUP: EXP and SIG from the table register pair
        dselnx16(tr, rf, b + 3, vEXP, vSIG, kF1, kF0, vT0)


cdef inline void decode_mx(TR tr, regfile_t* rf, int b, int fmt) noexcept nogil:
    """MX path codes in vCODE -> vSIG / vEXP / vSGN soft-float triples (DECODE_MX_LEN bundles): every format
    through its 16-entry codebook (the dselnx16 lookup of decode_nf4; docs/model.md §9.5)."""
    decode_nf4(tr, rf, b, 0)


# ============================================================================ the paths
cdef void proc_non_mx(TR tr, regfile_t* rf, const KCfg* cfg, const uint8_t* src, Py_ssize_t nbytes,
                      uint8_t* dst) noexcept nogil:
    """The group-0 paths, the firmware's inline non-MX block of decode (docs/firmware.md §2.4): proc_4bit_non_mx
    (1 source word = 8 nibble codes -> 2 destination words; NIBBLE_PASS_BYTES = 32 source bytes per pass) and, for fmt
    4, proc_6bit_non_mx (3 source words = 16 six-bit codes -> 4 destination words; FP6_PASS_BYTES = 48 per pass).

    E2M1, INT4 and FP6 E2M3 (cfg.rebias) take the re-bias MAC path (docs/model.md §9.7): the expanding load
    spreads the pass into lanes (labvdcmprs2nx8_xp), shifts and a merge make each lane a selector of two codes,
    dselnx16t looks up each code's X, its kinks |p - X| (babssub2nx8) go through paired MACs whose sum is the
    code's value with the sign bit set (fp16; FP6: the E4M3 byte in the high byte), an fp16 compare finds the
    zero codes, negnxf16t gives the positive codes their sign, and the FP8 byte is the high byte (sel2nx8i
    PACK_HIGH_BYTES). A pass's load issues in the pass before and its odd codes' gate, sign, pack and store in
    the pass after (software pipelining; seeds @0x01004dfc, @0x01004fc8). NF4, a pure function of its code, is a
    16-entry table lookup (docs/model.md §9.10): the entry computes the table (nf4_table), a pass looks its codes up
    (nf4_pass)."""
    cdef Py_ssize_t soff = 0, doff = 0, left = nbytes
    cdef int n, nxt, prev = 0
    cdef int chunk = FP6_PASS_BYTES if cfg.fp6 else NIBBLE_PASS_BYTES
    # the constants (NF4: not the codes' row, which the entry loads into vCODE)
    load_rodata(tr, rf, cfg.rodata, cfg.nconst if cfg.rebias else N4_NCONST, cfg.const_reg, NO_HOLE, 0, vbALL)
    if cfg.rebias:
        n = chunk if left > chunk else <int>left
        rebias_entry(tr, rf, cfg, src, &soff, n)
    else:
        nf4_table(tr, rf, cfg)
    while left > 0:
        n = chunk if left > chunk else <int>left
        if cfg.rebias:
            nxt = chunk if left - n > chunk else <int>(left - n)
            rebias_pass(tr, rf, cfg, src, &soff, nxt, dst, &doff, prev)
            # the bytes this pass stores, one pass late: 2 FP8 per source byte (FP6: 4 per 3)
            prev = (n // 3) * 4 if cfg.fp6 else 2 * n
        else:
            nf4_pass(tr, rf, cfg, src, &soff, n, dst, &doff)
        left -= n
    if cfg.rebias:
        rebias_exit(tr, rf, dst, &doff, prev)


cdef inline void rebias_entry(TR tr, regfile_t* rf, const KCfg* cfg, const uint8_t* src, Py_ssize_t* soff,
                              int n) noexcept nogil:
    """The re-bias path's entry: its predicates and pr weights, and the first pass's load (n bytes)."""
    # RB_ENTRY: the expanding load's predicate: the non-zero bytes of the spread constant ; w1 into every field of
    # pr4
    ltu2nx8(tr, rf, RB_ENTRY, vbSPREAD, rbZERO, rbSPREAD)
    movpint16(tr, rf, RB_ENTRY, prW1, cfg.w1)
    # RB_PR3: pr3 = w2 | wX << 16, the weights of the seed MAC, from u32 lane RB_LANE_W2WX of a constant (FP6: pr5
    # = w3 << 16 from lane RB_LANE_W3)
    extrprn_2x32(tr, rf, RB_PR3, prRB, rbPR3, RB_LANE_W2WX)
    if cfg.fp6:
        extrprn_2x32(tr, rf, RB_PR3, prK3, rbPR3, RB_LANE_W3)
        # RB_PRED: FP6: the even bytes (0 < p1's bytes) ; the even 16-bit lanes (0x8000 < the spread constant's)
        ltu2nx8(tr, rf, RB_PRED, vbE8, rbZERO, rbP1)
        ltunx16(tr, rf, RB_PRED, vbE16, rbNEG0, rbSPREAD)
    # RB_FIRST: LOAD + SPREAD the first pass: its bytes (a tail is shorter; zero-filled to 64) expanded under the
    # predicate (dcmprs rule). 4-bit: byte j into the low byte of 16-bit lane j; FP6: 3-byte group i into the low
    # 3 bytes of 32-bit lane i. The lanes' other byte is byte 63 of the load (0)
    labvdcmprs2nx8_xp(tr, rf, RB_FIRST, rbLD, vbSPREAD, src, soff, n)


cdef inline void nibble_select(TR tr, regfile_t* rf, const KCfg* cfg, int sel0, int sel1, int v_sel, int v_t, int v_j,
                               int v_ld) noexcept nogil:
    """The selector of a 4-bit pass (bundles sel0, sel1; the re-bias and the NF4 paths): from the spread source bytes
    in v_ld (byte j in the low byte of 16-bit lane j), each lane of v_sel gets its even code in the low byte and its
    odd code in the high byte, under nibble_order (docs/model.md §1); v_t and v_j are scratch."""
    if cfg.high_first:
        # sel0: high-first: the spread >> 4 (the high nibble, the even code, in the low byte) ; << 8
        srlinx16(tr, rf, sel0, v_t, v_ld, 4)
        sllinx16(tr, rf, sel0, v_j, v_ld, 8)
        # sel1: or: the low nibble in the high byte
        or2nx8(tr, rf, sel1, v_sel, v_t, v_j)
    else:
        # sel0: low-first: the spread << 4 (the high nibble, the odd code, in the high byte) ...
        sllinx16(tr, rf, sel0, v_t, v_ld, 4)
        # sel1: ... or the spread (the low nibble, the even code, stays in the low byte)
        or2nx8(tr, rf, sel1, v_sel, v_ld, v_t)

cdef inline void rebias_unpack(TR tr, regfile_t* rf, const KCfg* cfg) noexcept nogil:
    """RB_SEL0 .. RB_SEL4, UNPACK: the spread pass in rbLD -> the lookup's selector rbSEL, the even code in the low
    byte of each 16-bit lane and the odd code in the high byte (dselnx16t reads the low 6 bits of each byte; the
    4-bit table repeats every 16 entries, so the other nibble's bits there do not matter)."""
    if cfg.fp6:
        # RB_SEL0: FP6: each group << 4 (its codes 2, 3 at bits 0..11 of the high 16-bit lane) ...
        sllin_2x32(tr, rf, RB_SEL0, rbT, rbLD, 4)
        # RB_SEL1: ... the low 16-bit lane keeps the group's own bits (codes 0, 1)
        movnx16t(tr, rf, RB_SEL1, rbT, rbLD, vbE16)
        # RB_SEL2: << 2: each lane's second code at bits 8..13
        sllinx16(tr, rf, RB_SEL2, rbSEL, rbT, 2)
        # RB_SEL3: the low bytes back from before the shift (the first code at bits 0..5)
        mov2nx8t(tr, rf, RB_SEL3, rbSEL, rbT, vbE8)
        if cfg.msb_first:
            # RB_SEL4: msb-first: a group's codes in the other order: its 4 bytes reversed
            sel2nx8(tr, rf, RB_SEL4, rbSEL, rbSEL, rbSEL, rbREV)
    else:
        # RB_SEL0, RB_SEL1: each lane's even code in its low byte, its odd code in its high byte
        nibble_select(tr, rf, cfg, RB_SEL0, RB_SEL1, rbSEL, rbT, rbJ0, rbLD)


cdef inline void rebias_pass(TR tr, regfile_t* rf, const KCfg* cfg, const uint8_t* src, Py_ssize_t* soff, int nxt,
                             uint8_t* dst, Py_ssize_t* doff, int prev) noexcept nogil:
    """One pass of the re-bias path: unpack and look up this pass (loaded the pass before), load the next one (nxt
    bytes; 0 after the last), finish the previous pass's odd codes and store its `prev` bytes, and compute this
    pass's values (the even codes' gate and sign too; the odd codes' wait for the next pass)."""
    rebias_unpack(tr, rf, cfg)
    # RB_LOOKUP: seed @0x01004dfc: LOAD + SPREAD the next pass ; FP GATE of the previous pass's odd codes: their
    # zero lanes (-min < F) ; this pass's X of the odd and even codes (v0 from the selector's odd bytes, v1 from
    # its even bytes) through the code -> X table (pool = table || its second half), with the code's sign in bit
    # 15 (the MACs' even weights drop it)
    labvdcmprs2nx8_xp(tr, rf, RB_LOOKUP, rbLD, vbSPREAD, src, soff, nxt)
    oltnxf16t(tr, rf, RB_LOOKUP, vbZO, rbZMAX, rbFO, vbALL)
    dselnx16t(tr, rf, RB_LOOKUP, rbXO, rbXE, cfg.xtab_hi, rbXTAB, rbSEL, vbALL)
    # RB_ZERO0: the previous pass's odd zeros -> -0 ; ABS-SUB: the odd codes' kink |p1 - X|
    movnx16t(tr, rf, RB_ZERO0, rbFO, rbNEG0, vbZO)
    babssub2nx8(tr, rf, RB_ZERO0, vbK1O, rbK1O, rbP1, rbXO)
    # RB_NEG0: SIGN: the previous pass's positive odd codes -F ; the odd codes' kink |p2 - X|
    negnxf16t(tr, rf, RB_NEG0, rbFO, rbFO, vbPO)
    babssub2nx8(tr, rf, RB_NEG0, vbK2O, rbK2O, rbP2, rbXO)
    if cfg.fp6:
        # RB_SIGN: FP6: the odd codes' third kink |p3 - X|
        babssub2nx8(tr, rf, RB_SIGN, vbK3O, rbK3O, rbP3, rbXO)
    else:
        # RB_SIGN: ABS-SUB of X against 0x8000: the flag is this pass's positive codes (sign bit clear), odd / even
        babssubunx16(tr, rf, RB_SIGN, vbPO, rbJ0, rbXO, rbNEG0)
        babssubunx16(tr, rf, RB_SIGN, vbPE, rbJ1, rbXE, rbNEG0)
    # RB_SIGN: RE-BIAS MAC, odd codes: wv3 = (|p1 - X| + BIAS) * w1
    mulsupn16xr16(tr, rf, RB_SIGN, wvFO, rbK1O, rbBIAS, prW1)
    # RB_SEED: seed @0x01004fc8: wv3 += X * wX + |p2 - X| * w2 (X on pr3's high field) ; PACK the previous pass:
    # the high bytes of the even (lo, v7) and odd (hi, v26) codes' values, interleaved ; the even codes' |p1 - X|
    muluupan16xr16(tr, rf, RB_SEED, wvFO, rbXO, rbK2O, prRB)
    sel2nx8i(tr, rf, RB_SEED, rbPK, rbFO, rbFE, PACK_HIGH_BYTES)
    babssub2nx8(tr, rf, RB_SEED, vbK1E, rbK1E, rbP1, rbXE)
    if cfg.fp6:
        # RB_MACC0: FP6: wv3 += |p3 - X| * w3 (pr5's low field is 0) ; the even codes' |p3 - X|
        muluupan16xr16(tr, rf, RB_MACC0, wvFO, rbK3O, rbZERO, prK3)
        babssub2nx8(tr, rf, RB_MACC0, vbK3E, rbK3E, rbP3, rbXE)
    # RB_EXT0: accumulator extract: the odd codes' values (sign bit set) ; RE-BIAS MAC of the even codes ; store
    # the previous pass (nothing on the first) ; the even codes' |p2 - X|
    packvrnrnx48(tr, rf, RB_EXT0, rbFO, wvFO, 0)
    mulsupn16xr16(tr, rf, RB_EXT0, wvFE, rbK1E, rbBIAS, prW1)
    sav2nx8_xp(tr, rf, RB_EXT0, rbPK, dst, doff, prev)
    babssub2nx8(tr, rf, RB_EXT0, vbK2E, rbK2E, rbP2, rbXE)
    # RB_MAC1: the even codes' second MAC
    muluupan16xr16(tr, rf, RB_MAC1, wvFE, rbXE, rbK2E, prRB)
    if cfg.fp6:
        # RB_MACC1: FP6: the even codes' third-kink MAC ; ABS-SUB of X against 0x8000: the positive codes
        muluupan16xr16(tr, rf, RB_MACC1, wvFE, rbK3E, rbZERO, prK3)
        babssubunx16(tr, rf, RB_MACC1, vbPO, rbJ0, rbXO, rbNEG0)
        babssubunx16(tr, rf, RB_MACC1, vbPE, rbJ1, rbXE, rbNEG0)
    # RB_EXT1: the even codes' values
    packvrnrnx48(tr, rf, RB_EXT1, rbFE, wvFE, 0)
    # RB_GATE1: FP GATE: the even codes' zero lanes
    oltnxf16t(tr, rf, RB_GATE1, vbZE, rbZMAX, rbFE, vbALL)
    # RB_ZERO1: the even codes' zeros -> -0
    movnx16t(tr, rf, RB_ZERO1, rbFE, rbNEG0, vbZE)
    # RB_NEG1: the positive even codes -F
    negnxf16t(tr, rf, RB_NEG1, rbFE, rbFE, vbPE)


cdef inline void rebias_exit(TR tr, regfile_t* rf, uint8_t* dst, Py_ssize_t* doff, int prev) noexcept nogil:
    """After the main loop: the last pass's odd codes' gate and sign, its pack and the store of its `prev` bytes."""
    # RB_LOOKUP: the last pass's odd zero lanes
    oltnxf16t(tr, rf, RB_LOOKUP, vbZO, rbZMAX, rbFO, vbALL)
    # RB_ZERO0: -> -0
    movnx16t(tr, rf, RB_ZERO0, rbFO, rbNEG0, vbZO)
    # RB_NEG0: its positive odd codes -F
    negnxf16t(tr, rf, RB_NEG0, rbFO, rbFO, vbPO)
    # RB_SEED: PACK the last pass
    sel2nx8i(tr, rf, RB_SEED, rbPK, rbFO, rbFE, PACK_HIGH_BYTES)
    # RB_EXT0: store it
    sav2nx8_xp(tr, rf, RB_EXT0, rbPK, dst, doff, prev)


cdef inline void nf4_table(TR tr, regfile_t* rf, const KCfg* cfg) noexcept nogil:
    """The NF4 table path's entry: the expanding load's predicate, and the code -> E4M3 table in n4TABLE, computed
    by the rounding path's primitives (decode_nf4, narrow_fp8) on the codes 0..15."""
    # N4_ENTRY: the predicate: the non-zero bytes of the spread constant ; the codes into vCODE
    ltu2nx8(tr, rf, N4_ENTRY, vbN4SPREAD, kZERO, n4SPREAD)
    lv2nx8_i(tr, rf, N4_ENTRY, vCODE, <const uint8_t*>cfg.rodata, ROW_BYTES * N4_ROW_CODES)
    # N4_DECODE: the codebook lookup (soft-float SIG, EXP, SGN of each code)
    decode_nf4(tr, rf, N4_DECODE, 1)
    # N4_NARROW: each value rounded to E4M3 (RNE, saturating), sign
    narrow_fp8(tr, rf, N4_NARROW, cfg.m_bits, n4TABLE, kMAX)
    # N4_TABLE: the byte into the high byte of the lane (where the pack takes it from)
    sllinx16(tr, rf, N4_TABLE, n4TABLE, n4TABLE, 8)


cdef inline void nf4_pass(TR tr, regfile_t* rf, const KCfg* cfg, const uint8_t* src, Py_ssize_t* soff, int n,
                          uint8_t* dst, Py_ssize_t* doff) noexcept nogil:
    """One NF4 pass: n packed bytes (NIBBLE_PASS_BYTES, a tail fewer) -> 2n FP8 bytes by a 16-entry table lookup."""
    # N4_LOAD: LOAD + SPREAD: byte j into the low byte of 16-bit lane j (a tail is shorter: zero-filled)
    labvdcmprs2nx8_xp(tr, rf, N4_LOAD, n4LD, vbN4SPREAD, src, soff, n)
    # N4_SEL0, N4_SEL1: each lane's even code in its low byte, its odd code in its high byte
    nibble_select(tr, rf, cfg, N4_SEL0, N4_SEL1, n4SEL, n4T, n4J, n4LD)
    # N4_LOOKUP: the TABLE LOOKUP: the odd codes' bytes (the selector's odd bytes) and the even codes' (pool = the
    # table twice; dselnx16t reads the low 6 bits of each selector byte, and the table repeats every 16 entries)
    dselnx16t(tr, rf, N4_LOOKUP, n4XO, n4XE, n4TABLE, n4TABLE, n4SEL, vbALL)
    # N4_PACK: the high bytes of the even (lo) and odd (hi) codes' lanes, interleaved
    sel2nx8i(tr, rf, N4_PACK, n4PK, n4XO, n4XE, PACK_HIGH_BYTES)
    # N4_STORE: store the pass's FP8 bytes (2 per source byte)
    sav2nx8_xp(tr, rf, N4_STORE, n4PK, dst, doff, 2 * n)


cdef inline void mx_half(TR tr, regfile_t* rf, const KCfg* cfg, int b, int h, int out) noexcept nogil:
    """One half h of an MX pass (4 groups, 32 codes in vCODE, the half's first scale byte in pr1) from bundle b =
    MX_DECODE on: codes -> soft-float triples, the scale through the MAC, the rounding narrow into `out`."""
    cdef int first = MX_SCALE_AT + MX_HALF_GROUPS * h     # the half's group 0's scale byte in mxIN
    # MX_DECODE: codes -> soft-float triples
    decode_mx(tr, rf, b, cfg.fmt)
    # MX_ACC: the accumulator lanes EXP * 2^15 + SIG (paired MAC: EXP on pr2's high field 2^15, SIG on its low 1)
    mulsupn16xr16(tr, rf, MX_ACC, wvACC, vEXP, vSIG, prPAIR)
    # MX_MAC0: SCALE-MULTIPLY of group 0 of the half: + (2^15 in its lanes) x pr1 = its scale byte ; the
    # next group's scale byte -> pr1 (read by the next bundle's MAC: VLIW)
    mulus4tan16xr16(tr, rf, MX_MAC0, wvACC, kZERO, mxM0, prSCALE)
    extrpr2nx8(tr, rf, MX_MAC0, prSCALE, mxIN, first + 1)
    # MX_MAC1: group 1
    mulus4tan16xr16(tr, rf, MX_MAC1, wvACC, kZERO, mxM1, prSCALE)
    extrpr2nx8(tr, rf, MX_MAC1, prSCALE, mxIN, first + 2)
    # MX_MAC2: group 2
    mulus4tan16xr16(tr, rf, MX_MAC2, wvACC, kZERO, mxM2, prSCALE)
    extrpr2nx8(tr, rf, MX_MAC2, prSCALE, mxIN, first + 3)
    # MX_MAC3: group 3
    mulus4tan16xr16(tr, rf, MX_MAC3, wvACC, kZERO, mxM3, prSCALE)
    # MX_EXT: accumulator extract: EXP + s (>> 15: SIG < 2^15 drops out)
    packvrnrnx48(tr, rf, MX_EXT, vEXP, wvACC, MX_EXP_SHIFT)
    # MX_NARROW: round to FP8 (RNE), saturate, sign
    narrow_fp8(tr, rf, MX_NARROW, cfg.m_bits, out, kMAX)


cdef void proc_4bit_mx_8(TR tr, regfile_t* rf, const KCfg* cfg, const uint8_t* src, Py_ssize_t nbytes,
                         uint8_t* dst) noexcept nogil:
    """Groups of 8 codes + 1 in-band scale byte (5 bytes) -> 8 FP8; 8 groups (40 bytes) per pass.

    The block scale goes through the MAC (docs/model.md §9.4): each lane's soft-float exponent is set up in a
    48-bit accumulator lane (EXP * 2^15 + SIG, mulsupn16xr16 with the pair weights in pr2), then for each
    group the scale byte is moved into pr1 from the loaded bytes (extrpr2nx8) and one accumulating MAC adds
    mask * pr1 to the lanes of that group (mulus4tan16xr16, the mask 2^15 in the group's lanes): the exponent
    field grows by s, i.e. the value is multiplied by 2^s (the codebook's EXP has the 127 taken off). The
    extract (packvrnrnx48, a plain >> 15: SIG < 2^15 drops out) returns EXP + s.

    mx_scale = e8m0 (cfg.nan_gate): the NaN-scale gate (docs/model.md §9.4). muln_2x32 multiplies each scale
    byte s by 2^23, the fp32 pattern of the scale factor 2^(s - 127) (s = 0xFF gives +Inf), and an unordered
    fp32 compare with 2^127, the largest finite power of two, flags the groups to turn NaN. Seed @0x010052ee
    issues that compare with the multiply and the first unpack of the pass after, so a pass's gate, pack and
    store come one pass late (the first pass stores 0 bytes; the last pass's follow the loop: mx_exit)."""
    cdef Py_ssize_t soff = 0, doff = 0
    cdef uint32_t num_elem = <uint32_t>(nbytes // 4)
    # num_groups = num_elem / 5 with the firmware's reciprocal (0xCCCCCCCD, >> 34): 5-word blocks
    cdef uint32_t num_groups = <uint32_t>((<uint64_t>num_elem * 0xCCCCCCCDu) >> 34)
    cdef uint32_t left = num_groups
    cdef int n, prev = 0
    load_rodata(tr, rf, cfg.rodata, MX_NCONST, 0, MX_HOLE, 2, vbALL_MX)
    # MX_ENTRY: the NaN byte of the output format into v22 ; the pair weights (1, 2^15) of the accumulator set-up
    lv2nx8_i(tr, rf, MX_ENTRY, mxNAN8, <const uint8_t*>cfg.rodata, ROW_BYTES * MX_ROW_NAN8)
    lv2nx8_i(tr, rf, MX_ENTRY, vT0, <const uint8_t*>cfg.rodata, ROW_BYTES * MX_ROW_PAIRW)
    # MX_PR2: ... into pr2
    extrprn_2x32(tr, rf, MX_PR2, prPAIR, vT0, 0)
    while left > 0:
        n = 2 if left >= 2 else 1          # 5-word blocks this pass (4 groups each)
        mx_pass_head(tr, rf, cfg, src, &soff, MX_BLOCK_BYTES * n, dst, &doff, prev)
        # the first half (its unpack is in MX_GATE): decode, scale, narrow into vOLO
        mx_half(tr, rf, cfg, MX_DECODE, 0, vOLO)
        # MX_UNPACK: 4-bit UNPACK of the second half ; its first group's scale byte -> pr1
        sel2nx8i_s4(tr, rf, MX_UNPACK, vCODE, mxIN, mxX, cfg.s4_imm | 1)
        extrpr2nx8(tr, rf, MX_UNPACK, prSCALE, mxIN, MX_SCALE_AT + MX_HALF_GROUPS)
        # the second half: into vCODE, whose codes the decode has read
        mx_half(tr, rf, cfg, MX_DECODE, 1, vCODE)
        prev = MX_BLOCK_OUT_BYTES * n
        left -= n
    mx_exit(tr, rf, cfg, dst, &doff, prev)


cdef inline void mx_pass_head(TR tr, regfile_t* rf, const KCfg* cfg, const uint8_t* src, Py_ssize_t* soff,
                              int n, uint8_t* dst, Py_ssize_t* doff, int prev) noexcept nogil:
    """An MX pass up to its first half's decode: load n bytes and split codes from scales, finish the pass before
    (pack, NaN gate, store its `prev` bytes) and unpack the first half (seed @0x010052ee's bundle)."""
    # MX_LOAD: group-of-8 packed load: 40 bytes = 8 groups (tail: 20 bytes = 4 groups). A variable-length
    # load, not the seed's l2a4nx8_ip: its 64-byte window would read past the partition's last group
    # (docs/model.md §9.6)
    lav2nx8_xp(tr, rf, MX_LOAD, mxIN, src, soff, n)
    # MX_SPLIT: e8m0: each group's scale byte into the 32-bit lanes of its output bytes ; split codes from
    # scales, in place (layout knob in the index vectors; issued second: VLIW, docs/model.md §9.2)
    if cfg.nan_gate:
        sel2nx8(tr, rf, MX_SPLIT, vT3, kZERO, mxIN, mxIDX_SL)
    sel2nx8(tr, rf, MX_SPLIT, mxIN, kZERO, mxIN, mxIDX_SPLIT)
    # MX_PACKP: the pass before: pack its FP8 bytes (the low bytes of both halves' 16-bit lanes) ; the first
    # group's scale byte -> pr1
    sel2nx8i(tr, rf, MX_PACKP, vOLO, vCODE, vOLO, PACK_LOW_BYTES)
    extrpr2nx8(tr, rf, MX_PACKP, prSCALE, mxIN, MX_SCALE_AT)
    if cfg.nan_gate:
        # MX_GATE: SCALE FACTORS s * 2^23 = the fp32 pattern of 2^(s - 127) ; NaN GATE of the pass before:
        # 2^127 < its factor (+Inf: s = 0xFF) ; 4-bit UNPACK of the first half (16 code bytes -> 32 codes)
        muln_2x32(tr, rf, MX_GATE, wvX, vT3, mxK2P23)
        ultn_2xf32t(tr, rf, MX_GATE, vbNAN, mxK2P127, mxX, vbALL_MX)
    # MX_GATE: the first half's unpack, cfg.s4_imm: high-first 8, low-first 0 (seed @0x010052ee's immediate)
    sel2nx8i_s4(tr, rf, MX_GATE, vCODE, mxIN, mxX, cfg.s4_imm)
    if cfg.nan_gate:
        # MX_NANSET: the pass before's NaN groups -> the format's NaN byte ; this pass's scale factors out of
        # the accumulator (exact: below 2^31)
        mov2nx8t(tr, rf, MX_NANSET, vOLO, mxNAN8, vbNAN)
        packvrn_2x96(tr, rf, MX_NANSET, mxX, wvX, 0)
    # MX_STORE: the pass before's 8 FP8 per group (the first pass: 0 bytes)
    sav2nx8_xp(tr, rf, MX_STORE, vOLO, dst, doff, prev)


cdef inline void mx_exit(TR tr, regfile_t* rf, const KCfg* cfg, uint8_t* dst, Py_ssize_t* doff,
                         int prev) noexcept nogil:
    """After the main loop: the last pass's pack, NaN gate and the store of its `prev` bytes."""
    # MX_PACKP: pack
    sel2nx8i(tr, rf, MX_PACKP, vOLO, vCODE, vOLO, PACK_LOW_BYTES)
    if cfg.nan_gate:
        # MX_GATE: NaN GATE: 2^127 < the scale factor
        ultn_2xf32t(tr, rf, MX_GATE, vbNAN, mxK2P127, mxX, vbALL_MX)
        # MX_NANSET: NaN groups -> the format's NaN byte
        mov2nx8t(tr, rf, MX_NANSET, vOLO, mxNAN8, vbNAN)
    # MX_STORE: 8 FP8 per group
    sav2nx8_xp(tr, rf, MX_STORE, vOLO, dst, doff, prev)


# ============================================================================ configuration ("rodata")
def _bcast16(x):
    return np.full(32, x & 0xFFFF, dtype=np.uint16).view(np.uint8)


def _bytes_vec(lst, fill=64):
    v = np.full(64, fill, dtype=np.uint8)
    v[:len(lst)] = lst
    return v


def _nf4_tables(values, ebias):
    """The codebook's constant rows: the soft-float triples of its 16 values (the format table's
    codebook_triples: SIG, EXP minus `ebias`, SGN) as two 32-lane u16 rows, SIG | EXP and SGN | 0."""
    sig, exp, sgn = codebook_triples(values, ebias)
    lo = np.zeros(32, np.uint16)
    lo[:16] = sig
    lo[16:] = np.asarray(exp, np.int64) & 0xFFFF
    hi = np.zeros(32, np.uint16)
    hi[:16] = sgn
    return lo.view(np.uint8), hi.view(np.uint8)


def rebias_rodata(int fmt, str fp6_packing=KNOB_DEFAULTS["fp6_packing"]):
    """The re-bias path's constants, uint8 [nconst, 64], loaded into v11 .. (w1 goes in by movpint16: run()
    sets cfg.w1): 9 rows for E2M1 / INT4, 11 for FP6 (12 msb-first). The numbers (p1 p2 p3 BIAS w1 wX w2 w3 -min,
    docs/model.md §9.7) and each code's X are the format table's (q7emu.model.format_table ``Rebias``)."""
    rec = dequant_format(fmt)
    rb = rec.rebias
    six = rec.paths[0] == "proc_6bit_non_mx"
    ncodes = 1 << rec.bits
    # lane i of the lookup pool (rbXTAB, then rbXTABN): X of code i mod 2^bits, the code's sign (its top bit) at
    # bit 15; a 4-bit table repeats every 16 entries (the selector's other nibble bits do not matter)
    pool = np.array([rb.x[c % ncodes] | ((c % ncodes) >> (rec.bits - 1)) << 15 for c in range(64)], np.uint16)
    if six:
        spread = np.tile(np.array([1, 0xFF, 1, 0], np.uint8), 16)
    else:
        spread = _bcast16(0xF)
    rows = {rbP1: _bcast16(rb.p1), rbP2: _bcast16(rb.p2), rbSPREAD: spread,
            rbXTAB: pool[:32].view(np.uint8), rbBIAS: _bcast16(rb.bias), rbZMAX: _bcast16(rb.neg_min),
            rbNEG0: _bcast16(0x8000),
            rbPR3: np.array([rb.w2 | rb.wx << 16, rb.w3 << 16] + [0] * 14, np.uint32).view(np.uint8),
            rbZERO: np.zeros(64, np.uint8)}
    if six:
        rows[rbP3] = _bcast16(rb.p3)
        rows[rbXTABN] = pool[32:].view(np.uint8)                 # codes 32..63: c & 31, sign
        if fp6_packing == "msb-first":
            rows[rbREV] = np.array([(k & ~3) | (3 - (k & 3)) for k in range(64)], np.uint8)
    out = np.zeros((max(rows) + 1 - RB_CONST, 64), np.uint8)
    for slot, row in rows.items():
        out[slot - RB_CONST] = row
    return out


def _uses_rebias(rec, int group):
    """Whether a (format, group) configuration runs the re-bias MAC path: group 0 of a format with re-bias numbers
    (E2M1, INT4, FP6); the MX path and NF4 take the codebook (rounding) path."""
    return group == 0 and rec.rebias is not None


def build_rodata(int fmt, int group, str nibble_order, str fp6_packing, str mx_layout, str mx_scale,
                 nf4_values):
    """The constant vectors of one kernel configuration, uint8 [nconst, 64] (the kernel's .rodata; read-only, one
    array per configuration, made once). The format's facts (output FP8 bias, mantissa bits, max and NaN codes,
    codebook) are the format table's; ``nf4_values`` is the codebook of a format whose codebook a knob picks
    (NF4's ``nf4_table``), float32 [16]."""
    key = None if nf4_values is None else np.asarray(nf4_values, np.float32).tobytes()
    return _rodata(fmt, group, nibble_order, fp6_packing, mx_layout, mx_scale, key)


@lru_cache(maxsize=256)
def _rodata(int fmt, int group, str nibble_order, str fp6_packing, str mx_layout, str mx_scale, nf4_bytes):
    """:func:`build_rodata` of one configuration (the codebook as float32 bytes), made read-only."""
    nf4_values = None if nf4_bytes is None else np.frombuffer(nf4_bytes, np.float32)
    out = _make_rodata(fmt, group, nibble_order, fp6_packing, mx_layout, mx_scale, nf4_values)
    out.setflags(write=False)
    return out


def _make_rodata(int fmt, int group, str nibble_order, str fp6_packing, str mx_layout, str mx_scale, nf4_values):
    rec = dequant_format(fmt)
    if _uses_rebias(rec, group):
        return rebias_rodata(fmt, fp6_packing)
    out8 = rec.out_format
    bias, m_bits = out8.bias, out8.mant_bits
    mx = group == 8
    rows = {
        kZERO: np.zeros(64, np.uint8), kONE: _bcast16(1), kA: _bcast16(1 - bias), kSH0: _bcast16(14 - m_bits),
        kMAX: _bcast16(out8.max_code),
        k32: _bcast16(32),
        k4000: _bcast16(0x4000), kZEXP: _bcast16(-16384),
    }
    # every MX format and a group-0 codebook format (NF4) through its 16-entry codebook (SIG, EXP, SGN of each
    # code's exact value; MX takes the 127 off EXP)
    lo, hi = _nf4_tables(nf4_values if rec.codebook is None else rec.codebook, 127 if mx else 0)
    rows.update({kF0: lo, kF1: hi, kF2: _bcast16(0x1000)})
    if fmt == FMT_NF4 and not mx:
        rows.update({n4SPREAD: _bcast16(0xF), N4_ROW_CODES: (np.arange(32) & 15).astype(np.uint16).view(np.uint8)})
    if mx:
        lay = mx_layout_of(mx_layout)          # where each group's scale and code bytes sit (the format table)
        codes = [lay.code_byte(g, j) for g in range(8) for j in range(4)]
        scale_at = [lay.scale_byte(g) for g in range(8)]
        rows[mxIDX_SPLIT] = _bytes_vec(codes + scale_at)
        rows[mxK2P23] = np.full(16, 1 << 23, np.uint32).view(np.uint8)
        rows[mxK2P127] = np.full(16, 0x7F000000, np.uint32).view(np.uint8)
        for j, slot in enumerate((mxM0, mxM1, mxM2, mxM3)):
            rows[slot] = np.array([0x8000 if k >> 3 == j else 0 for k in range(32)], np.uint16).view(np.uint8)
        sl = np.full(64, 64, np.uint8)                           # 64: pool byte 64, a byte of the zero vector
        sl[0::4] = [scale_at[lane >> 1] for lane in range(16)]
        rows[mxIDX_SL] = sl
        # rows by register (load_rodata skips v16, v17), then the two rows MX_ENTRY loads
        regs = list(range(MX_HOLE)) + [r + 2 for r in range(MX_HOLE, MX_NCONST)]
        out = np.zeros((MX_ROW_PAIRW + 1, 64), np.uint8)
        for row, reg in enumerate(regs):
            if reg in rows:
                out[row] = rows[reg]
        out[MX_ROW_NAN8] = np.full(64, out8.nan_code, np.uint8)
        out[MX_ROW_PAIRW] = np.array([1 | (1 << 31)] + [0] * 15, np.uint32).view(np.uint8)
        return out
    n = max(rows) + 1
    out = np.zeros((n, 64), np.uint8)
    for slot, row in rows.items():
        out[slot] = row
    return out


cdef void traced_rows(Tracer* tr, regfile_t* rf, KCfg* cfg, const uint8_t* src, uint8_t* dst, Py_ssize_t parts,
                      Py_ssize_t nbytes, Py_ssize_t out_bytes, bint mx) noexcept nogil:
    """The traced kernel over partitions 0..parts-1 (rows of nbytes in src, of out_bytes in dst). A function of its
    own, compiled with the hot code: in an ISA level's copy Q7_TRACED_HERE is 0, so its body and every traced
    kernel it calls are dead code, which the compiler drops (docs/build.md §2.2)."""
    cdef Py_ssize_t p
    if not Q7_TRACED_HERE:
        return
    for p in range(parts):
        tr_set_partition(tr, p)
        if tr.failed:
            break
        if mx:
            proc_4bit_mx_8(tr, rf, cfg, src + p * nbytes, nbytes, dst + p * out_bytes)
        else:
            proc_non_mx(tr, rf, cfg, src + p * nbytes, nbytes, dst + p * out_bytes)


def run(const uint8_t[:, ::1] src, uint8_t[:, ::1] dst, int fmt, int group,
        str nibble_order=KNOB_DEFAULTS["nibble_order"], str fp6_packing=KNOB_DEFAULTS["fp6_packing"],
        str mx_layout=KNOB_DEFAULTS["mx_layout"], str mx_scale=KNOB_DEFAULTS["mx_scale"], nf4_values=None,
        trace=False, trace_window=None, trace_ops=None, int kernel_id=0):
    """Run the firmware path for (fmt, group) over every partition (row) of `src` into `dst`.

    src uint8 [P, in_bytes], dst uint8 [P, out_bytes]; arguments must already be validated
    (q7emu.kernels.dequant.dequantize does that). With trace=True, returns the raw full-operand trace
    records (a bytes-like, zero-copy TraceBuffer) limited to sequence numbers in trace_window=(lo, hi) and
    mnemonics in trace_ops, each with kernel_id as its kernel byte (the caller's q7emu.model.KernelId; 0 =
    not given); trace=<sink> streams compact blocks to the sink (trace_buffer.pxi init_tracer) and returns
    None; else None. The knobs' defaults are the knob table's (q7emu.model.knobs), nf4_values=None the codebook of
    the ``nf4_table`` default; the format's facts come from the format table (q7emu.model.format_table).
    """
    cdef KCfg cfg
    cdef regfile_t rf
    cdef NoTrace nt
    cdef Tracer tr
    cdef Py_ssize_t p, parts = src.shape[0], nbytes = src.shape[1]
    rec = dequant_format(fmt)
    path = dequant_path(rec.paths[group])
    cdef int words_in = path.ratio[0], words_out = path.ratio[1]
    cdef bint six = path.name == "proc_6bit_non_mx"
    cdef bint mx = path.group == 8
    cdef const char* ops_c[64]
    if nf4_values is None and rec.codebook_knob is not None:
        nf4_values = NF4_TABLES[KNOB_DEFAULTS[rec.codebook_knob]]
    rodata = build_rodata(fmt, group, nibble_order, fp6_packing, mx_layout, mx_scale, nf4_values)
    memset(&cfg, 0, sizeof(cfg))
    regfile_reset(&rf)
    cdef const uint8_t[:, ::1] ro = rodata
    memcpy(cfg.rodata, &ro[0, 0], rodata.size)
    cfg.nconst = rodata.shape[0]
    cfg.fmt = fmt
    cfg.nan_gate = mx and mx_scale == "e8m0"
    cfg.m_bits = rec.out_format.mant_bits
    cfg.s4_imm = 8 if nibble_order == "high-first" else 0
    cfg.rebias = _uses_rebias(rec, group)
    cfg.const_reg = RB_CONST if cfg.rebias else 0
    cfg.w1 = rec.rebias.w1 if cfg.rebias else 0                 # the format table's w1 (movpint16)
    cfg.high_first = nibble_order == "high-first"
    cfg.fp6 = six
    cfg.msb_first = fp6_packing == "msb-first"
    cfg.xtab_hi = rbXTABN if six else rbXTAB
    if dst.shape[0] != parts or parts == 0:
        raise ValueError("src and dst must have the same (non-zero) number of partitions")
    if dst.shape[1] != nbytes // (4 * words_in) * (4 * words_out) or nbytes % (4 * words_in):
        raise ValueError("src / dst stream lengths do not match the path's ratio")
    if not trace:
        with nogil:
            for p in range(parts):
                if mx:
                    proc_4bit_mx_8(&nt, &rf, &cfg, &src[p, 0], nbytes, &dst[p, 0])
                else:
                    proc_non_mx(&nt, &rf, &cfg, &src[p, 0], nbytes, &dst[p, 0])
        return None
    if not Q7_TRACED_HERE:          # an ISA level's copy traces at the baseline (docs/build.md §2.2)
        from q7emu.kernels import _dequant as baseline
        return baseline.run(src, dst, fmt, group, nibble_order, fp6_packing, mx_layout, mx_scale, nf4_values,
                            trace, trace_window, trace_ops, kernel_id)
    _keep = init_tracer(&tr, kernel_id, trace, trace_window, trace_ops, ops_c)  # what the Tracer points into
    try:
        with nogil:
            traced_rows(&tr, &rf, &cfg, &src[0, 0], &dst[0, 0], parts, nbytes, dst.shape[1], mx)
        return finish_tracer(&tr, trace)
    finally:
        release_tracer(&tr)
