# proc_4bit_non_mx: POOL 0x7b TensorDequantize, 4-bit codes, group 0 (docs/firmware.md §1.5, §2; seed 002 §7): 1
# source word (8 codes) -> 2 destination words; 32 source bytes (64 codes) per pass.
#
# The statement of the kernel's schedule (docs/asm.md §6), the only one: q7emu.dequantize runs it, translated
# untraced and on the interpreter traced (q7emu.kernels.dequant); `q7emu listing proc_4bit_non_mx --asm` prints it for
# one configuration. E2M1 and INT4 (REBIAS) take the re-bias MAC path of the firmware's inline non-MX
# block (rebias.inc, shared with proc_6bit_non_mx); NF4, a pure function of its code, is a 16-entry table lookup
# (docs/model.md §9.10): the entry computes the table with the rounding path's own primitives, a pass looks its
# codes up.
#
# Calling convention (docs/asm.md §4.3): a2 = the source stream's address, a3 = its u32 words (num_elem), a4 = the
# destination stream's address. Configuration symbols (q7emu.kernels.programs.dequant_symbols): REBIAS (the format
# has re-bias numbers), NIBBLE_HIGH_FIRST (nibble_order high-first); the re-bias path's numbers (rebias.inc lists
# them), or the table path's OUT_BIAS, OUT_MBITS, OUT_MAX (E4M3) and CB_SIG[16], CB_EXP[16], CB_SGN[16] (each code's
# value as a soft-float triple, from the nf4_table knob's codebook).
.include "kernel_common.inc"
.equ FP6, 0
.if REBIAS
.include "rebias.inc"
.else

# ---------------------------------------------------------------- the NF4 table path
.equ N4_ENTRY, ENTRY_B
.equ N4_DECODE, ENTRY_B + 1
.equ N4_NARROW, N4_DECODE + NF4_LEN
.equ N4_TABLE, N4_NARROW + NARROW_LEN
.equ LOOP_B, ENTRY_B + 20
.equ N4_LOAD, LOOP_B
.equ N4_SEL0, LOOP_B + 1
.equ N4_SEL1, LOOP_B + 2
.equ N4_LOOKUP, LOOP_B + 3
.equ N4_PACK, LOOP_B + 4
.equ N4_STORE, LOOP_B + 5
.req kMAX, v5           # the largest finite E4M3 code: narrow_fp8's saturation
.req n4SPREAD, v12      # 0x000F in every 16-bit lane: its non-zero bytes are the lanes the expanding load fills
.req n4TABLE, v14       # 16-bit lane c: the E4M3 byte of code c & 15 in the high byte
.req n4LD, v15          # the loaded pass: byte j in the low byte of 16-bit lane j
.req n4T, v16           # the spread shifted
.req n4SEL, v17         # the lookup's selector: the even code in the low byte of each 16-bit lane, the odd in the high
.req n4XO, v18          # the odd codes' E4M3 bytes (the lookup's first output), in the high bytes
.req n4XE, v19          # the even codes'
.req n4PK, v20          # the packed FP8 bytes
.req vCODE, v21         # the 16 codes of the table (lane c: c & 15)
.req n4J, v22           # high-first: the spread << 8
.req vbN4SPREAD, vb12   # the expanding load's predicate
.equ N4_NCONST, 13      # constant rows 0..12 -> v0..v12; row 13 (the codes) -> vCODE at N4_ENTRY
.equ N4_ROW_CODES, 13
# scalars: a2 source, a4 destination (advanced by the stream ops), a5 the source bytes, a6 a pass's bytes, a7 the
# bytes it stores, a8 the constant rows, a9 the whole passes

.data
.align 64
rodata:
  codebook_rows 0                           # v0..v11 (v4: the MX path's 2^23; 0 here)
  bcast16 0xF                               # v12 n4SPREAD
  .for c, 0, 32                             # row 13: the codes, c & 15 in 16-bit lane c
    .half \c & 15
  .endr

# one pass: a6 source bytes (32; a tail fewer) -> a7 = 2 x a6 FP8 bytes through the 16-entry table
.macro nf4_pass
  .bundle N4_LOAD         # LOAD + SPREAD: byte j into the low byte of 16-bit lane j (a tail: zero-filled)
  { ivp_labvdcmprs2nx8_xp n4LD, vbN4SPREAD, a2, a6 }
  .if NIBBLE_HIGH_FIRST
  .bundle N4_SEL0         # UNPACK: the spread >> 4 (the high nibble, the even code, low) ; << 8
  { ivp_srlinx16 n4T, n4LD, 4 ; ivp_sllinx16 n4J, n4LD, 8 }
  .bundle N4_SEL1         # or: the low nibble in the high byte
  { ivp_or2nx8 n4SEL, n4T, n4J }
  .else
  .bundle N4_SEL0         # UNPACK: the spread << 4 (the high nibble, the odd code, in the high byte) ...
  { ivp_sllinx16 n4T, n4LD, 4 }
  .bundle N4_SEL1         # ... or the spread (the low nibble, the even code, stays in the low byte)
  { ivp_or2nx8 n4SEL, n4LD, n4T }
  .endif
  .bundle N4_LOOKUP       # the 16-entry TABLE LOOKUP of the odd and even codes (the table repeats every 16)
  { ivp_dselnx16t n4XO, n4XE, n4TABLE, n4TABLE, n4SEL, vbALL }
  .bundle N4_PACK         # the high bytes of the even (lo) and odd (hi) codes' lanes, interleaved
  { ivp_sel2nx8i n4PK, n4XO, n4XE, PACK_HIGH_BYTES }
  .bundle N4_STORE        # the pass's FP8 bytes
  { ivp_sav2nx8_xp n4PK, a4, a7 }
.endm

.text
proc_4bit_non_mx:
  slli a5, a3, 2                            # the source bytes
  const16 a8, hi16(rodata)
  const16 a8, lo16(rodata)
  load_rodata a8, N4_NCONST, 0, NO_HOLE, 0, vbALL
  .bundle N4_ENTRY        # the expanding load's predicate ; the codes 0..15 into vCODE
  { ivp_ltu2nx8 vbN4SPREAD, kZERO, n4SPREAD ; ivp_lv2nx8_i vCODE, a8, ROW_BYTES * N4_ROW_CODES }
  decode_nf4 N4_DECODE, vCODE, 1            # the codebook's soft-float SIG, EXP, SGN of each of the 16 codes
  narrow_fp8 N4_NARROW, n4TABLE, kMAX       # each code's value rounded to E4M3 (RNE, saturating), sign
  .bundle N4_TABLE        # the code -> E4M3 table: the byte into the high byte of each 16-bit lane
  { ivp_sllinx16 n4TABLE, n4TABLE, 8 }
  beqz a5, .Ldone
  srli a9, a5, 5                            # whole passes of 32 bytes (64 FP8 each) ...
  movi a6, 32
  movi a7, 64
  loopnez a9, .Lwhole_end
  nf4_pass
.Lwhole_end:
  extui a6, a5, 0, 5                        # ... then a tail of left % 32 bytes, 2 FP8 each
  beqz a6, .Ldone
  slli a7, a6, 1
  nf4_pass
.Ldone:
  retw
.endif
