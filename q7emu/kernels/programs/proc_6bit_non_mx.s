# proc_6bit_non_mx: POOL 0x7b TensorDequantize, FP6 E2M3 -> E4M3, group 0 (docs/firmware.md §1.5, §2; seed 002 §7):
# 3 source words (16 six-bit codes) -> 4 destination words; 48 source bytes (64 codes) per pass.
#
# The statement of the kernel's schedule (docs/asm.md §6), the only one: q7emu.dequantize runs it, translated
# untraced and on the interpreter traced (q7emu.kernels.dequant); `q7emu listing proc_6bit_non_mx --asm` prints it for
# one configuration. The path is the firmware's inline non-MX block of decode, which it shares with
# proc_4bit_non_mx's E2M1 and INT4 formats: rebias.inc holds it.
#
# Calling convention (docs/asm.md §4.3): a2 = the source stream's address, a3 = its u32 words (num_elem), a4 = the
# destination stream's address. Configuration symbols (q7emu.kernels.programs.dequant_symbols): FP6_MSB_FIRST
# (fp6_packing msb-first) and the format's numbers (rebias.inc lists them).
.include "kernel_common.inc"
.equ FP6, 1
.include "rebias.inc"
