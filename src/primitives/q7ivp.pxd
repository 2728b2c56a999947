# cython: language_level=3
"""The Vision-Q7 IVP primitive library: one small `cdef inline ... noexcept nogil` function per IVP op.

This umbrella re-exports the family files, so the kernels `cimport q7ivp as P` and issue `P.addnx16`:
  ivp_mem (loads / stores)   ivp_select (permutes, expand, t-moves)   ivp_alu (add / sub / bitwise / compares)
  ivp_shift                  ivp_flag (bmin / bmax / babssub / norm)  ivp_mac (MACs into wvec)
  ivp_widen (vec -> wvec)    ivp_pack (wvec -> vec)                   ivp_fp (fp compares / sign / exponent)
  ivp_convert (int <-> fp)   ivp_pr (moves into pr)                   ivp_lanes (the lane-loop helpers)
Each function is named after the mnemonic (without the `ivp_` prefix), carries a one-line comment of
its semantics and works on the plain C register types of q7regs.pxd. Destinations come first, as in
the disassembly (`ivp_addnx16 vt, vs, vr`). Every other fact of an op (operand views and dtypes, the
SPEC section, provenance, FLIX slot class) is in the op table q7emu/primitives/optable.py.
Where SPEC leaves a lane map open, the comment says `q7emu choice:` and docs/ + tests pin it.
Predicated `...t` forms merge: lanes whose predicate bit is false keep the destination's old value.
Callers validate operands (immediates, lengths) before entering nogil code; every function here is
total on any bit pattern (no undefined behaviour, no out-of-range memory access beyond the bytes
the op is documented to touch).
"""
from ivp_mem cimport *
from ivp_select cimport *
from ivp_alu cimport *
from ivp_shift cimport *
from ivp_flag cimport *
from ivp_mac cimport *
from ivp_widen cimport *
from ivp_pack cimport *
from ivp_fp cimport *
from ivp_convert cimport *
from ivp_pr cimport *
