# proc_4bit_mx_8: POOL 0x7b TensorDequantize, group 8 (docs/firmware.md §1.5, §2; seed 002 §5): groups of 8 4-bit
# codes and one in-band scale byte (5 bytes) -> 8 FP8 each; 8 groups (40 bytes) per pass.
#
# The statement of the kernel's schedule (docs/asm.md §6), the only one: q7emu.dequantize runs it, translated
# untraced and on the interpreter traced (q7emu.kernels.dequant); `q7emu listing proc_4bit_mx_8 --asm` prints it for
# one configuration.
#
# Calling convention (docs/asm.md §4.3): a2 = the source stream's address, a3 = its u32 words (num_elem), a4 = the
# destination stream's address. Configuration symbols (q7emu.kernels.programs.dequant_symbols):
#   knobs   NIBBLE_HIGH_FIRST (nibble_order high-first), MX_SCALE_BASE, MX_SCALE_STEP, MX_CODE_BASE, MX_CODE_STEP
#           (mx_layout: where group g's scale and code bytes sit in its 20-byte block, the format table's
#           MxGroupLayout), MX_NAN_SCALE (mx_scale e8m0: scale byte 0xFF makes its group NaN)
#   format  OUT_BIAS, OUT_MBITS, OUT_MAX, OUT_NAN (the FP8 output format), CB_SIG[16], CB_EXP[16], CB_SGN[16] (each
#           code's exact value as a soft-float triple, EXP with the scale's 127 taken off)
#
# The block scale goes through the MAC (docs/model.md §9.4): each lane's exponent is set up in a 48-bit accumulator
# lane (EXP * 2^15 + SIG, mulsupn16xr16 with the pair weights in pr2); for each group the scale byte moves into pr1
# (extrpr2nx8) and one accumulating MAC adds 2^15 * pr1 to that group's lanes (mulus4tan16xr16, the mask 2^15 in the
# group's lanes): the value is multiplied by 2^s. The extract (packvrnrnx48 >> 15) returns EXP + s. With
# MX_NAN_SCALE, muln_2x32 makes each scale byte's factor 2^(s - 127) as an fp32 pattern (s * 2^23; +Inf for 0xFF)
# and an unordered fp32 compare with 2^127 flags the groups to turn NaN, a pass late: seed @0x010052ee issues that
# compare with the multiply and the first unpack of the pass after, so a pass's gate, pack and store come one pass
# late (the first pass stores 0 bytes; the last pass's follow the loop).
.include "kernel_common.inc"

# ---------------------------------------------------------------- bundle labels (docs/model.md §9.1)
.equ MX_ENTRY, ENTRY_B
.equ MX_PR2, ENTRY_B + 1
.equ MX_LOAD, ENTRY_B + 2
.equ MX_SPLIT, ENTRY_B + 3
.equ MX_PACKP, ENTRY_B + 4
.equ MX_GATE, ENTRY_B + 5
.equ MX_NANSET, ENTRY_B + 6
.equ MX_STORE, ENTRY_B + 7
.equ MX_UNPACK, ENTRY_B + 8
.equ MX_DECODE, ENTRY_B + 9
.equ MX_ACC, MX_DECODE + NF4_LEN
.equ MX_MAC0, MX_ACC + 1
.equ MX_MAC1, MX_ACC + 2
.equ MX_MAC2, MX_ACC + 3
.equ MX_MAC3, MX_ACC + 4
.equ MX_EXT, MX_ACC + 5
.equ MX_NARROW, MX_ACC + 6

# ---------------------------------------------------------------- registers
# Seed @0x010052ee ({ muln_2x32 ; ultn_2xf32t vb1,v13,v16,vb9 ; sel2nx8i_s4 v21,v17,v16,0 }) fixes v13, v16, v17,
# v21, vb1 and vb9: the constants are v0..v15 and v18..v20 (load_rodata's hole: v16, v17) and v22.
.req mxK2P23, v4        # 2^23 (32-bit lanes): the scale byte s times it is the fp32 pattern of 2^(s - 127)
.req kMAX, v5           # the largest finite FP8 code: narrow_fp8's saturation
.req mxIDX_SPLIT, v12   # sel2nx8: the 32 code bytes of the pass's 8 groups -> bytes 0..31, their scale bytes -> 32..39
.req mxK2P127, v13      # 2^127 (fp32): the largest finite power of two, the NaN-scale gate's bound
.req mxM0, v14          # mxM0..mxM3: 2^15 in the 16-bit lanes of group j = 0..3 of a half, else 0
.req mxM1, v15
.req mxM2, v18
.req mxM3, v19
.req mxIDX_SL, v20      # sel2nx8: 32-bit lane L <- the scale byte of output bytes 4L..4L+3, zero-extended
.req mxNAN8, v22        # the NaN byte of the output format
.req mxX, v16           # the pass's scale factors 2^(s - 127) as fp32 patterns, a pass late
.req mxIN, v17          # the loaded pass, split in place: code bytes 0..31, scale bytes 32..39
.req vCODE, v21         # a half's codes (16-bit lanes), then the second half's FP8 codes
.req vOLO, v30          # the first half's FP8 codes
.req vbNAN, vb1         # the lanes of groups whose scale byte is 0xFF, of the pass before (seed vb1)
.req vbALL_MX, vb9      # the all-true predicate (seed vb9)
.req prSCALE, pr1       # the group's scale byte (seed @0x010051a9: ivp_mulus4tan16xr16 wv2, ..., pr1)
.req prPAIR, pr2        # the pair weights (1, 2^15) of the accumulator set-up
.req wvACC, wv2         # the exponent accumulator (seed: wv2)
.req wvX, wv0           # muln_2x32's products
.equ MX_SCALE_AT, 32    # after MX_SPLIT, group g's scale byte is byte MX_SCALE_AT + g of mxIN
.equ MX_EXP_SHIFT, 15   # the accumulator's EXP field starts at bit 15
.equ MX_NCONST, 19      # constant rows 0..18 -> v0..v15, v18..v20; row 19 -> v22, row 20 -> the pair weights
.equ MX_ROW_NAN8, 19
.equ MX_ROW_PAIRW, 20
# scalars: a2 source, a4 destination (both advanced by the stream ops), a5 the 5-word blocks, a6 a pass's source
# bytes, a7 the bytes the pass before stores, a8 the constant rows, a9 the 2-block passes

# ---------------------------------------------------------------- the constant rows (the kernel's .rodata)
# group g (of a 20-byte block of 4 groups): scale byte MX_SCALE_BASE + MX_SCALE_STEP * g, code byte j at
# MX_CODE_BASE + MX_CODE_STEP * g + j (docs/model.md §1, the format table's MxGroupLayout)
.data
.align 64
rodata:
  codebook_rows 1 << 23                     # v0..v11 (v4 mxK2P23)
  .for g, 0, 8                              # v12 mxIDX_SPLIT: each group's 4 code bytes, then the 8 scale bytes
    .for j, 0, 4
      .byte 20 * (\g >> 2) + MX_CODE_BASE + MX_CODE_STEP * (\g & 3) + \j
    .endr
  .endr
  .for g, 0, 8
    .byte MX_SCALE_BASE + MX_SCALE_STEP * (\g & 3) + 20 * (\g >> 2)
  .endr
  .space 24, 64
  bcast32 0x7F000000                        # v13 mxK2P127
  .for j, 0, 4                              # v14, v15, v18, v19: mxM0..mxM3
    .for k, 0, 32
      .half (\k >> 3) == \j ? 0x8000 : 0
    .endr
  .endr
  .for lane, 0, 16                          # v20 mxIDX_SL (64: a byte of the zero vector)
    .byte MX_SCALE_BASE + MX_SCALE_STEP * ((\lane >> 1) & 3) + 20 * (\lane >> 3), 64, 64, 64
  .endr
  .rept 64                                  # row 19: the NaN byte
    .byte OUT_NAN
  .endr
  .word 1 | 1 << 31                         # row 20: the pair weights 1 | 2^15 << 16
  .space 60

# ---------------------------------------------------------------- the pass (one pass: up to 8 groups)
# mx_pass_head: load a6 bytes and split codes from scales, finish the pass before (pack, NaN gate, store its a7
# bytes) and unpack the first half (seed @0x010052ee's bundle)
.macro mx_pass_head
  .bundle MX_LOAD
  { ivp_lav2nx8_xp mxIN, a2, a6 }                              # group-of-8 packed load (a tail: 20 bytes)
  .bundle MX_SPLIT
  .if MX_NAN_SCALE
  { ivp_sel2nx8 vT3, kZERO, mxIN, mxIDX_SL ; ivp_sel2nx8 mxIN, kZERO, mxIN, mxIDX_SPLIT }
  .else
  { ivp_sel2nx8 mxIN, kZERO, mxIN, mxIDX_SPLIT }               # split the code bytes from the scale bytes, in place
  .endif
  .bundle MX_PACKP
  { ivp_sel2nx8i vOLO, vCODE, vOLO, PACK_LOW_BYTES ; ivp_extrpr2nx8 prSCALE, mxIN, MX_SCALE_AT }
  .bundle MX_GATE
  .if MX_NAN_SCALE
  { ivp_muln_2x32 wvX, vT3, mxK2P23 ; ivp_ultn_2xf32t vbNAN, mxK2P127, mxX, vbALL_MX ; ivp_sel2nx8i_s4 vCODE, mxIN, mxX, 8 * NIBBLE_HIGH_FIRST }
  .bundle MX_NANSET
  { ivp_mov2nx8t vOLO, mxNAN8, vbNAN ; ivp_packvrn_2x96 mxX, wvX, 0 }
  .else
  { ivp_sel2nx8i_s4 vCODE, mxIN, mxX, 8 * NIBBLE_HIGH_FIRST }   # 4-bit UNPACK of the first half
  .endif
  .bundle MX_STORE
  { ivp_sav2nx8_xp vOLO, a4, a7 }                              # the pass before's FP8 bytes (the first pass: 0)
.endm

# mx_half OUT, FIRST: one half of a pass (4 groups, 32 codes in vCODE, its first group's scale byte in pr1) from
# MX_DECODE on: codes -> soft-float triples, the scale through the MAC, the rounding narrow into OUT; FIRST is the
# half's first scale byte in mxIN
.macro mx_half out, first
  decode_nf4 MX_DECODE, vCODE, 0
  .bundle MX_ACC
  { ivp_mulsupn16xr16 wvACC, vEXP, vSIG, prPAIR }              # EXP * 2^15 + SIG
  .bundle MX_MAC0
  { ivp_mulus4tan16xr16 wvACC, kZERO, mxM0, prSCALE ; ivp_extrpr2nx8 prSCALE, mxIN, \first + 1 }
  .bundle MX_MAC1
  { ivp_mulus4tan16xr16 wvACC, kZERO, mxM1, prSCALE ; ivp_extrpr2nx8 prSCALE, mxIN, \first + 2 }
  .bundle MX_MAC2
  { ivp_mulus4tan16xr16 wvACC, kZERO, mxM2, prSCALE ; ivp_extrpr2nx8 prSCALE, mxIN, \first + 3 }
  .bundle MX_MAC3
  { ivp_mulus4tan16xr16 wvACC, kZERO, mxM3, prSCALE }
  .bundle MX_EXT
  { ivp_packvrnrnx48 vEXP, wvACC, MX_EXP_SHIFT }               # EXP + s
  narrow_fp8 MX_NARROW, \out, kMAX
.endm

# mx_pass OUT_BYTES: one pass of a6 source bytes (2 blocks; the last of an odd count 1): its load, the pass before's
# finish, both halves; a7 becomes the bytes it stores (OUT_BYTES), a pass late
.macro mx_pass out_bytes
  mx_pass_head
  mx_half vOLO, MX_SCALE_AT
  .bundle MX_UNPACK       # 4-bit UNPACK of the second half ; its first group's scale byte -> pr1 ; this pass's bytes
  { ivp_sel2nx8i_s4 vCODE, mxIN, mxX, 8 * NIBBLE_HIGH_FIRST | 1 ; ivp_extrpr2nx8 prSCALE, mxIN, MX_SCALE_AT + 4 ; movi a7, \out_bytes }
  mx_half vCODE, MX_SCALE_AT + 4
.endm

# ---------------------------------------------------------------- the kernel
.text
proc_4bit_mx_8:
  # blocks = num_elem / 5 by the firmware's reciprocal (seed 002 §5.1: const16 a4,0xCCCD ; muluh ; srli 2)
  const16 a9, 0xCCCC
  const16 a9, 0xCCCD
  muluh a5, a3, a9
  srli a5, a5, 2
  const16 a8, hi16(rodata)
  const16 a8, lo16(rodata)
  load_rodata a8, MX_NCONST, 0, 16, 2, vbALL_MX
  .bundle MX_ENTRY
  { ivp_lv2nx8_i mxNAN8, a8, ROW_BYTES * MX_ROW_NAN8 ; ivp_lv2nx8_i vT0, a8, ROW_BYTES * MX_ROW_PAIRW }
  .bundle MX_PR2
  { ivp_extrprn_2x32 prPAIR, vT0, 0 }
  movi a7, 0                                # the pass before the first stores nothing
  srli a9, a5, 1                            # passes of 2 blocks (40 bytes, 64 FP8) ...
  movi a6, 40
  loopnez a9, .Lpairs_end
  mx_pass 64
.Lpairs_end:
  bbci a5, 0, .Lexit                        # ... then an odd block (20 bytes, 32 FP8)
  movi a6, 20
  mx_pass 32
.Lexit:
  # the last pass's pack, NaN gate and store
  .bundle MX_PACKP
  { ivp_sel2nx8i vOLO, vCODE, vOLO, PACK_LOW_BYTES }
  .if MX_NAN_SCALE
  .bundle MX_GATE
  { ivp_ultn_2xf32t vbNAN, mxK2P127, mxX, vbALL_MX }
  .bundle MX_NANSET
  { ivp_mov2nx8t vOLO, mxNAN8, vbNAN }
  .endif
  .bundle MX_STORE
  { ivp_sav2nx8_xp vOLO, a4, a7 }
  retw
