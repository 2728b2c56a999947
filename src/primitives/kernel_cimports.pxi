# The header of the kernel module (src/kernels/_program.pyx, the interpreter and the translations): the C
# register types, the IVP primitive library as P (q7ivp.pxd, the umbrella over the ivp_*.pxd family
# files), the trace recorder, and the instruction layer and trace buffer.
from libc.stdint cimport uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t
from libc.stdlib cimport free
from libc.string cimport memset, memcpy, memcmp
from q7regs cimport vec_t, wvec_t, wcells16_t, wcells32_t, vbool_t, vmask_t, vumask_t, pr_t, valign_t, regfile_t, \
    regfile_reset, vb_from_mask, q7_bits_to_bytes
cimport q7ivp as P
from q7trace cimport *

cdef extern from *:
    """
    #ifndef Q7_TRACED_HERE
    #define Q7_TRACED_HERE 1
    #endif
    """
    # 1 in the baseline (generic) module; 0 in the other ISA levels' copies, whose run() hands a traced run to the
    # baseline's, so that their traced kernels are dead code and are never compiled (docs/build.md §2.2)
    const bint Q7_TRACED_HERE

include "kernel_ops.pxi"
include "kernel_ops_gen.pxi"
include "trace_buffer.pxi"
