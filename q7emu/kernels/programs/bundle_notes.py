"""What a kernel's listing says of each labelled bundle (docs/model.md §9.1): ``BUNDLE_NOTES``, label -> note.

The labels themselves -- each bundle tag's name -- are the kernel programs' ``.equ`` symbols (q7emu/kernels/programs/
*.s), which q7emu.asm.gen_translations reads into each decoded program's ``labels`` (decoded_gen.PROGRAMS): a label is
a symbol named here. A bundle inside a shared sequence (``decode_nf4``, ``narrow_fp8``) is shown as the label before
it plus an offset.
"""
from __future__ import annotations

__all__ = ["BUNDLE_NOTES"]

#: the bundles every path shares: the entry's constant loads
_SHARED = {
    "RODATA_B": "load_rodata: the constant vectors from the kernel's rodata, two loads per bundle (s0 and s1)",
    "RODATA_VB": "the all-true predicate = (v0 == v0)",
}

#: proc_4bit_non_mx NF4: the 16-entry table path
_NF4 = {
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

#: the re-bias MAC path: proc_4bit_non_mx E2M1 / INT4 and proc_6bit_non_mx
_REBIAS = {
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

#: proc_4bit_mx_8
_MX = {
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

#: quantize_mx (the DVE 0xE3 body)
_QMX = {
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

#: every label's note (what the listing says of the bundle)
BUNDLE_NOTES: dict[str, str] = {**_SHARED, **_NF4, **_REBIAS, **_MX, **_QMX}
