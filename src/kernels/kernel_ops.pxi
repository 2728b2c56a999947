# The kernels' instruction layer. The issue functions themselves are generated from the op table
# (kernel_ops_gen.pxi, by q7emu/primitives/gen_wrappers.py): `or2nx8(tr, rf, RB_SEL1, rbSEL, rbT, rbJ0)` issues
# `ivp_or2nx8 v4, v3, v9` in bundle RB_SEL1, its registers in the disassembly's order, which is the C intrinsic's
# (a two-register source high half first: `sel2nx8i(tr, rf, B, 10, 26, 7, 53)` is `ivp_sel2nx8i v10, v26, v7, 53`,
# hi v26, lo v7; docs/intrinsics.md §2). Every call executes exactly one primitive from q7ivp.pxd; in the TracerP
# specialisation it also records the op, its bundle index and its operands (sources before, destinations after),
# and in the NoTraceP specialisation the `if TR is TracerP` blocks are removed at compile time. This file holds
# what the generated functions share. Included by the kernel modules (needs q7regs/q7ivp/q7trace cimports).

cdef inline bint run_op(TR tr, const char* op, int b) noexcept nogil:
    """False when the run's mutation (docs/traces.md §8) makes this op a no-op; always True without a tracer."""
    if TR is TracerP:
        return not tr_skip(tr, op, b)
    return True
