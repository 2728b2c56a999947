"""IVP programs: the assembly language of the disassembly, the assembler and the program interpreter (docs/asm.md).

``q7emu.asm.assemble(text) -> Program`` reads a program: single ops or FLIX bundles in braces, in the objdump's own
syntax (the ``ivp_`` prefix optional, operands in the C intrinsic's order), with labels, constant data, symbols,
conditional assembly and macros; pasted objdump text (addresses, encodings) parses, and an illegible operand
(``…``) is a one-line error naming what to fill in. :meth:`Program.run` runs it on SBUF partitions through the
Cython interpreter, which executes every IVP op through the same primitive bodies as the kernels.
"""
from __future__ import annotations

from q7emu.asm.assembler import assemble, assemble_file
from q7emu.asm.program import DATA_BASE, Bundle, Instr, Program, SourceRef

__all__ = ["assemble", "assemble_file", "Program", "Bundle", "Instr", "SourceRef", "DATA_BASE"]
