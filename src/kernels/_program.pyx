# cython: language_level=3
"""The program interpreter: runs a decoded q7emu program (docs/asm.md §4) on the register file the kernels use.

A program arrives decoded (q7emu.asm.program.Decoded): an int32 row per op (opcode, source line, operands) and per
bundle (first op, op count, tag, mode, line). run() executes it once per *call* (a partition, or a QuantizeMX row
block), each call with its memory regions -- the program's data section (copied fresh for every call), the SBUF
partition, or a kernel call's source and destination streams (docs/asm.md §4.2) -- and its starting scalar
registers. Every IVP op runs through the kernels' own instruction layer (kernel_ops_gen.pxi: the same primitive
bodies, the same trace records), a scalar op through its body in xt_scalar.pxd; program_ops_gen.pxi, generated
from the op tables, is the dispatch. So no op's semantics is written here.

VLIW (docs/asm.md §4.1): every op of a bundle reads the state from before the bundle and its writes land at the
end. A bundle whose ops read nothing an earlier op of it writes (MODE_IN_ORDER: the assembler checks) gives that
result run in order; any other runs each op on a copy of the bundle's starting state and copies the registers it
writes back (MODE_SNAPSHOT). A taken branch or a loop-back takes effect after the bundle; the zero-overhead loop
goes back to LBEG when the bundle before LEND falls through with LCOUNT != 0.

Errors (an address outside every region, a misaligned access, a store into a read-only region, a divide by zero,
the step budget) stop the call; run() returns what and where, and q7emu.asm.run raises ProgramError naming the
line. Ctrl-C is noticed every STEPS_PER_CHECK bundles.
"""
import numpy as np

include "kernel_cimports.pxi"     # cimports (q7regs, q7ivp as P, q7trace) and the kernel includes
cimport xt_scalar as X
from cpython.exc cimport PyErr_Clear


cdef extern from "Python.h":
    # declared without an exception value: cpython.exc's 'except -1' would make Cython re-raise the handler's
    # KeyboardInterrupt at once, which a noexcept function can only print as unraisable and drop
    int _check_signals "PyErr_CheckSignals" () noexcept

cdef enum:
    MAX_REGIONS = 8
    FLAG_END = 1                # q7emu.asm.run FLAG_*: an op's flags (bits 16.. of its second column)
    FLAG_SLOW = 2
    FLAG_SLOW_START = 4
    FLAG_SNAPSHOT = 8
    INSN_COLS = 10              # q7emu.asm.program.INSN_COLS
    BUNDLE_COLS = 5             # q7emu.asm.program.BUNDLE_COLS
    MODE_SNAPSHOT = 1
    STEPS_PER_CHECK = 1 << 16   # bundles between two looks at a pending Ctrl-C
    TOUCH_FIXED = 0             # the op touches `need` bytes at the address
    TOUCH_N = 1                 # min(max(n, 0), 64) bytes at the address
    TOUCH_ROW = 2               # the aligned 64-byte row holding the address
    TOUCH_ROW2 = 3              # that row and the next
    # errors (negative; q7emu.asm.run.ERRORS says each in words)
    ERR_MEM = -1
    ERR_ALIGN = -2
    ERR_READONLY = -3
    ERR_DIV0 = -4
    ERR_STEPS = -5
    ERR_INTERRUPT = -6
    ERR_OPCODE = -7
    ERR_TRACE = -8
    ERR_FALLBACK = -9           # a translation met what only the interpreter reports: run the calls there


cdef struct Region:
    uint32_t base           # its first address
    uint32_t size           # bytes
    uint8_t* ptr            # its first byte in host memory
    int writable


cdef struct Machine:
    uint32_t ar[16]
    uint32_t lcount
    int lbeg
    int lend
    int pc                  # the bundle running
    int next_pc             # the bundle a taken branch or a loop skip goes to (-1: none)
    int halt                # a ret ran
    int nreg
    Region reg[MAX_REGIONS]
    uint64_t err_addr       # the failing access: its address and length
    int64_t err_len
    int hint[2]             # the region the last load (0) / store (1) found: mem_at tries it first


cdef inline bint holds(uint32_t base, uint32_t size, uint32_t addr, int touch, Py_ssize_t need) noexcept nogil:
    """The region [base, base + size) holds what an access at `addr` touches: `need` bytes from it (a TOUCH_N
    access's need already clamped to 0..64), or a row access's aligned 64- or 128-byte row(s)."""
    cdef uint64_t o
    if addr < base or addr - base > size:
        return False
    o = addr - base
    if touch == TOUCH_ROW or touch == TOUCH_ROW2:
        return (o & ~(<uint64_t>63)) + (64 if touch == TOUCH_ROW else 128) <= size
    return o + <uint64_t>need <= size


cdef inline bint holds_alone(uint32_t base, uint32_t size, uint32_t addr, int touch, Py_ssize_t need) noexcept nogil:
    """The region holds the access and no other region can: the regions do not overlap, so a region holding a byte
    of it (or its row) is the one mem_at's scan finds; an access of no bytes, which two adjacent regions' shared end
    both hold, is not (it keeps the scan's order). What a remembered region (mem_at's hint, a translation's
    RegionHit) must pass to be used without the scan."""
    return (need > 0 or touch == TOUCH_ROW or touch == TOUCH_ROW2) and holds(base, size, addr, touch, need)


cdef inline Py_ssize_t touched_n(Py_ssize_t n) noexcept nogil:
    """The bytes a variable-length (TOUCH_N) access of n touches: min(max(n, 0), 64)."""
    return 0 if n < 0 else (64 if n > 64 else n)


cdef inline int mem_at(Machine* m, uint32_t addr, int touch, Py_ssize_t need, int align, int write, uint8_t** p,
                       Py_ssize_t* off) noexcept nogil:
    """The region holding the `need` bytes an access at `addr` touches: its index, with *p its first byte and *off
    the address's offset in it; or ERR_MEM / ERR_ALIGN / ERR_READONLY (the address and length in m.err_*)."""
    cdef int r
    if touch == TOUCH_N:
        need = touched_n(need)
    m.err_addr = addr
    m.err_len = need
    if align > 1 and addr % <uint32_t>align:
        return ERR_ALIGN
    # the region the last access of this kind found, first (a store's hint was writable when it was found)
    r = m.hint[1 if write else 0]
    if r < m.nreg and holds_alone(m.reg[r].base, m.reg[r].size, addr, touch, need):
        p[0] = m.reg[r].ptr
        off[0] = <Py_ssize_t>(addr - m.reg[r].base)
        return r
    for r in range(m.nreg):
        if not holds(m.reg[r].base, m.reg[r].size, addr, touch, need):
            continue
        if write and not m.reg[r].writable:
            return ERR_READONLY
        p[0] = m.reg[r].ptr
        off[0] = <Py_ssize_t>(addr - m.reg[r].base)
        m.hint[1 if write else 0] = r
        return r
    return ERR_MEM


# The region an access site of a translation found last (docs/asm.md §9, the region cache); r < 0 and size 0: none
# yet (a translation's prologue sets both).
cdef struct RegionHit:
    uint8_t* ptr
    uint32_t base
    uint32_t size
    int r


cdef extern from *:
    """
    #if defined(__GNUC__)
    #define Q7_OUT_OF_LINE __attribute__((noinline)) int
    /* (Cython declares the function's result local with the same type: the attribute is ignored there) */
    #pragma GCC diagnostic ignored "-Wattributes"
    #else
    #define Q7_OUT_OF_LINE int
    #endif
    """
    # the result of a function the C compiler must not inline (a translation's rarely taken paths)
    ctypedef int out_of_line_int "Q7_OUT_OF_LINE"


cdef out_of_line_int mem_miss(Machine* m, RegionHit* h, uint32_t addr, int touch, Py_ssize_t need, int align,
                              int write) noexcept nogil:
    """mem_at out of line (never inlined, so that the C compiler's inlining budget for a translation goes to the
    primitives of its loops, and the translation's p and off stay in registers): the region found is remembered in
    h (its index returned), or the ERR_* code."""
    cdef uint8_t* p
    cdef Py_ssize_t off
    cdef int r = mem_at(m, addr, touch, need, align, write, &p, &off)
    if r >= 0:
        h.ptr = m.reg[r].ptr
        h.base = m.reg[r].base
        h.size = m.reg[r].size
        h.r = r
    return r


cdef inline int mem_once(Machine* m, RegionHit* h, uint32_t addr, int touch, Py_ssize_t need, int align, int write,
                         uint8_t** p, Py_ssize_t* off) noexcept nogil:
    """mem_at for a translation's access that runs once a call (its entry's table loads): out of line."""
    cdef int r = mem_miss(m, h, addr, touch, need, align, write)
    if r >= 0:
        p[0] = h.ptr
        off[0] = <Py_ssize_t><uint32_t>(addr - h.base)
    return r


cdef inline int mem_hit(Machine* m, RegionHit* h, uint32_t addr, int touch, Py_ssize_t need, int align, int write,
                        uint8_t** p, Py_ssize_t* off) noexcept nogil:
    """mem_at for an access site a call runs many times (a translation's loop): the region the site found last is
    tried first, without the scan. The same answer as mem_at (holds_alone: the regions do not overlap, q7emu.asm.run
    checks it); the site's `write` is fixed, so a region it found was writable when it had to be. A miss, and every
    error, is mem_at's (which records the failing access).

    A byte-range access (TOUCH_FIXED, TOUCH_N: `touch` is a constant at every site) is tested with one unsigned
    comparison, holds_alone's meaning: an address below the base wraps to at least 2^32 - base, which is at least the
    size (every region ends within the 32-bit address space, q7emu.asm.run checks it), so any access of need > 0
    bytes from it fails; a site with no region yet has size 0."""
    cdef uint64_t o = <uint32_t>(addr - h.base)
    cdef bint inside
    if touch == TOUCH_N:
        need = touched_n(need)
    if touch == TOUCH_FIXED or touch == TOUCH_N:
        inside = need > 0 and o + <uint64_t>need <= h.size
    else:
        inside = h.r >= 0 and holds_alone(h.base, h.size, addr, touch, need)
    if inside and (align <= 1 or addr % <uint32_t>align == 0):
        p[0] = h.ptr
        off[0] = <Py_ssize_t>o
        return h.r
    return mem_once(m, h, addr, touch, need, align, write, p, off)


cdef int _interrupted() noexcept with gil:
    """1 when Ctrl-C is pending (its exception cleared here: run() raises KeyboardInterrupt)."""
    if _check_signals() != 0:
        PyErr_Clear()
        return 1
    return 0


cdef inline void copy_back(regfile_t* rf, Machine* m, const regfile_t* tmp, const Machine* tm,
                           const int64_t* w) noexcept nogil:
    """A snapshot bundle's op ran on tmp / tm: copy the registers it writes (its wmask row w) into rf / m."""
    cdef int j
    for j in range(32):
        if (w[0] >> j) & 1:
            memcpy(&rf.v[j], &tmp.v[j], sizeof(vec_t))
    for j in range(4):
        if (w[0] >> (32 + j)) & 1:
            memcpy(&rf.wv[j], &tmp.wv[j], sizeof(wvec_t))
        if (w[0] >> (36 + j)) & 1:
            memcpy(&rf.u[j], &tmp.u[j], sizeof(valign_t))
    for j in range(16):
        if (w[1] >> j) & 1:
            rf.vb[j] = tmp.vb[j]
        if (w[1] >> (16 + j)) & 1:
            rf.pr[j] = tmp.pr[j]
        if (w[2] >> j) & 1:
            m.ar[j] = tm.ar[j]


ctypedef int (*handler_t)(void* tr, regfile_t* rf, Machine* m, Machine* M, const int32_t* ins) noexcept nogil

include "program_ops_gen.pxi"
fill_handlers()


# A translation (docs/asm.md §9) runs one call of the program it was generated from: 0, or an ERR_* code (the
# caller then runs every call on the interpreter, which reports it).
cdef extern from *:
    """
    #ifndef Q7_TRANSLATED_HERE
    #define Q7_TRANSLATED_HERE 1
    #endif
    #if defined(__GNUC__) && !defined(__clang__) && Q7_TRANSLATED_HERE
    #define Q7_TX_STATUS __attribute__((flatten)) int
    /* (Cython declares the function's result local with the same type: GCC ignores the attribute there) */
    #pragma GCC diagnostic ignored "-Wattributes"
    #else
    #define Q7_TX_STATUS int
    #endif
    #if defined(__SSSE3__) || !defined(__SSE2__)
    #define Q7_BYTE_MOVES 0
    #else
    #define Q7_BYTE_MOVES 1
    #endif
    """
    # A translation's return type, 0 or an ERR_* code. With GCC the function is flattened: every call in it inlined,
    # where GCC's growth limits left the primitives' larger leaves (mac_pair, the fp16 compare, lanes_flag,
    # merge_bits, the permutes) out of line in a function this size, and which ones moved with every change to the
    # translation (docs/asm.md §9)
    ctypedef int tx_status "Q7_TX_STATUS"
    # 1 where this level holds the translations (setup.py TRANSLATED_LEVELS); 0: each translation returns at once
    # and the C compiler drops its body, TRANSLATIONS is empty and every program runs interpreted
    const bint Q7_TRANSLATED_HERE
    # 1 where a select op with a known selector runs as byte moves (docs/asm.md §9, byte moves): SSE2 without SSSE3
    # (the generic level), whose byte permute gathers byte by byte; a level with a byte shuffle (SSSE3 and up)
    # runs the primitive with the selector as a constant, which the C compiler folds (bench/count_instructions.py:
    # the moves took 1,246 host instructions per 64 outputs of MX group 8 at avx2 where the primitive took 1,231)
    const bint Q7_BYTE_MOVES

ctypedef int (*tx_t)(regfile_t* rf, Machine* m, const int32_t* imm, int64_t max_steps,
                     int64_t* steps) noexcept nogil

include "translations_gen.pxi"
fill_translations()
#: this level holds the translations (docs/asm.md §9)
TRANSLATED = bool(Q7_TRANSLATED_HERE)
#: the columns of run()'s and run_translated()'s offsets: the data section's (unused), then each region's
REGION_COLUMNS = MAX_REGIONS
if not TRANSLATED:
    TRANSLATIONS = ()


cdef int exec_loop(const handler_t* table, void* tr, const int* tr_failed, regfile_t* rf, Machine* m,
                   const int32_t* insns, const int32_t* bundles, const int64_t* wmask, int nb, int entry,
                   int64_t max_steps, int64_t* steps, int* fail_insn, int64_t* counts) noexcept nogil:
    """Run the decoded program from bundle `entry` until the program counter leaves the text or a ret (docs/asm.md
    §4.1), each op through its handler in `table` (HN, or HT with the recorder tr, whose failure flag is
    *tr_failed): 0, or an ERR_* code with the failing op in *fail_insn; the bundles executed in *steps.

    The ops run in one stream; an op's flags (q7emu.asm.run FLAG_*) mark the end of its bundle and the bundles
    that need the full end-of-bundle work (a control transfer, a loop's last body bundle, a snapshot bundle; every
    bundle when `counts` is given). Every other bundle ends in a counter and a compare: the step budget and Ctrl-C
    are looked at every STEPS_PER_CHECK bundles. Called through LOOP, never inlined: its state stays in registers."""
    cdef int pc = entry, f, at, e = 0
    cdef int slow = FLAG_SLOW if counts == NULL else FLAG_END
    cdef int64_t k = 0
    cdef int64_t check = max_steps if max_steps < STEPS_PER_CHECK else STEPS_PER_CHECK
    cdef const int32_t* ins
    cdef const int32_t* b
    fail_insn[0] = -1
    m.halt = 0
    m.pc = pc
    m.next_pc = -1
    if pc < 0 or pc >= nb:
        steps[0] = 0
        return 0
    ins = insns + <Py_ssize_t>bundles[<Py_ssize_t>pc * BUNDLE_COLS] * INSN_COLS
    while True:
        f = ins[1] >> 16
        if f & FLAG_SLOW_START:
            m.pc = pc
            m.next_pc = -1
        if f & FLAG_SNAPSHOT:
            b = bundles + <Py_ssize_t>pc * BUNDLE_COLS
            e = SNAPSHOT(table, tr, rf, m, insns, wmask, b[0], b[0] + b[1], b[2], &at)
            if e:
                fail_insn[0] = at
                break
            ins = insns + <Py_ssize_t>(b[0] + b[1] - 1) * INSN_COLS
            f = ins[1] >> 16
        else:
            e = table[ins[0]](tr, rf, m, m, ins)
            if e:
                fail_insn[0] = <int>((ins - insns) // INSN_COLS)
                break
        if not (f & FLAG_END):
            ins += INSN_COLS
            continue
        k += 1
        if not (f & slow) and k < check:
            pc += 1
            if pc >= nb:
                break
            ins += INSN_COLS
            continue
        # the full end of a bundle
        if counts != NULL:
            counts[pc] += 1
        if tr_failed != NULL and tr_failed[0]:
            e = ERR_TRACE
            break
        if m.halt:
            break
        if not (f & FLAG_SLOW):
            pc += 1
        elif m.next_pc >= 0:
            pc = m.next_pc
        else:
            pc += 1
            if pc == m.lend and m.lcount != 0:
                m.lcount -= 1
                pc = m.lbeg
        if pc < 0 or pc >= nb:
            break
        if k >= check:
            if k >= max_steps:
                e = ERR_STEPS
                break
            if _interrupted():
                e = ERR_INTERRUPT
                break
            check = max_steps if max_steps - k < STEPS_PER_CHECK else k + STEPS_PER_CHECK
        ins = insns + <Py_ssize_t>bundles[<Py_ssize_t>pc * BUNDLE_COLS] * INSN_COLS
    steps[0] = k
    return e


cdef int exec_snapshot(const handler_t* table, void* tr, regfile_t* rf, Machine* m, const int32_t* insns,
                       const int64_t* wmask, int first, int last, int tag, int* at) noexcept nogil:
    """A bundle whose ops read what an earlier op of it writes: each op runs on a copy of the bundle's starting
    state, and the registers it writes are copied back (VLIW, docs/asm.md §4.1). 0 or an ERR_* code (the op in
    *at)."""
    cdef regfile_t snap, tmp
    cdef Machine tm
    cdef uint32_t ar0[16]
    cdef int i, e
    memcpy(&snap, rf, sizeof(regfile_t))
    memcpy(ar0, m.ar, sizeof(ar0))
    for i in range(first, last):
        memcpy(&tmp, &snap, sizeof(regfile_t))
        memcpy(&tm, m, sizeof(Machine))
        memcpy(tm.ar, ar0, sizeof(ar0))
        e = table[insns[<Py_ssize_t>i * INSN_COLS]](tr, &tmp, m, &tm, insns + <Py_ssize_t>i * INSN_COLS)
        if e:
            at[0] = i
            return e
        copy_back(rf, m, &tmp, &tm, wmask + 3 * <Py_ssize_t>i)
    return 0


ctypedef int (*loop_t)(const handler_t* table, void* tr, const int* tr_failed, regfile_t* rf, Machine* m,
                       const int32_t* insns, const int32_t* bundles, const int64_t* wmask, int nb, int entry,
                       int64_t max_steps, int64_t* steps, int* fail_insn, int64_t* counts) noexcept nogil
ctypedef int (*snapshot_t)(const handler_t* table, void* tr, regfile_t* rf, Machine* m, const int32_t* insns,
                           const int64_t* wmask, int first, int last, int tag, int* at) noexcept nogil
# called through pointers, so that the compiler keeps them out of their callers (their state stays in registers)
cdef loop_t LOOP = exec_loop
cdef snapshot_t SNAPSHOT = exec_snapshot


cdef void run_calls(TR tr, regfile_t* rf, Machine* m0, Machine* m, const int32_t* insns, const int32_t* bundles,
                    const int64_t* wmask, int nb, int entry, int64_t max_steps, Py_ssize_t ncalls,
                    const uint8_t* data, Py_ssize_t ndata, uint8_t* scratch, uint8_t** ptrs, const int64_t* offs,
                    const int64_t* parts, int64_t* steps, uint32_t* ar_out, int* status, int* fail_insn,
                    Py_ssize_t* failed_call, int64_t* counts, bint carry, tx_t tx=NULL,
                    const int32_t* imm=NULL) noexcept nogil:
    """Every call in turn: a fresh data section and scalar state, the regions at this call's offsets; a fresh
    register file too, unless `carry` (a kernel's calls: the core's vector registers carry from one call to the
    next). `tx`: the program's translation (untraced), run in the interpreter's place."""
    cdef Py_ssize_t c
    cdef int r, e
    failed_call[0] = -1
    regfile_reset(rf)
    for c in range(ncalls):
        if TR is TracerP:
            tr_set_partition(tr, parts[c])
            if tr.failed:
                status[0] = ERR_TRACE
                failed_call[0] = c
                return
        if not carry and c:
            regfile_reset(rf)
        memcpy(m, m0, sizeof(Machine))
        if ndata:
            memcpy(scratch, data, ndata)
        for r in range(1, m.nreg):
            m.reg[r].ptr = ptrs[r] + offs[c * MAX_REGIONS + r]
        if TR is TracerP:
            e = LOOP(HT, <void*>tr, &tr.failed, rf, m, insns, bundles, wmask, nb, entry, max_steps, &steps[c],
                     fail_insn, counts)
        elif tx != NULL:
            e = tx(rf, m, imm, max_steps, &steps[c])
        else:
            e = LOOP(HN, <void*>tr, NULL, rf, m, insns, bundles, wmask, nb, entry, max_steps, &steps[c], fail_insn,
                     counts)
        memcpy(ar_out + 16 * c, m.ar, 16 * sizeof(uint32_t))
        if e < 0:
            status[0] = e
            failed_call[0] = c
            return
    status[0] = 0


cdef list machine_at_reset(Machine* m0, uint8_t** ptrs, const uint8_t[::1] data, uint32_t data_base, regions,
                           const uint32_t[::1] ar_init):
    """A call's starting machine in m0: the starting scalar registers, the data section at data_base (its bytes
    copied into a scratch array before each call), each region's base, size and store flag (ptrs[r]: region r's
    buffer, a call adding its offset). Returns what must stay alive while the machine runs: the scratch array first,
    then the regions' buffers."""
    cdef Py_ssize_t r
    cdef uint8_t[::1] buf
    memset(m0, 0, sizeof(Machine))
    m0.lend = -1
    for r in range(16):
        m0.ar[r] = ar_init[r]
    scratch = np.zeros(max(1, data.shape[0]), np.uint8)
    buf = scratch
    m0.reg[0].base = data_base
    m0.reg[0].size = <uint32_t>data.shape[0]
    m0.reg[0].ptr = &buf[0]
    m0.reg[0].writable = 1
    keep = [scratch]
    for r, (base, arr, size, writable) in enumerate(regions, 1):
        buf = arr
        keep.append(arr)
        ptrs[r] = &buf[0]
        m0.reg[r].base = <uint32_t>base
        m0.reg[r].size = <uint32_t>size
        m0.reg[r].writable = 1 if writable else 0
    m0.nreg = <int>(len(regions) + 1)
    return keep


def run(const int32_t[:, ::1] insns, const int32_t[:, ::1] bundles, const int64_t[:, ::1] wmask,
        const uint8_t[::1] data, uint32_t data_base, int entry, regions, const int64_t[:, ::1] offsets,
        const uint32_t[::1] ar_init, const int64_t[::1] partitions, int64_t max_steps, trace=None, int kernel_id=0,
        counts=None, bint carry=False, int translation=-1, const int32_t[::1] imm=None, trace_window=None,
        trace_ops=None, registers=None):
    """Run a decoded program once per call (docs/asm.md §4.2, §4.4).

    insns int32 [N, INSN_COLS], bundles int32 [M, BUNDLE_COLS], wmask int64 [N, 3], data uint8 (the data section, at
    address data_base), entry: q7emu.asm.run.Decoded. regions: up to MAX_REGIONS - 1 tuples (base address, buffer: a
    C-contiguous uint8 array, size in bytes, writable), each seen by call c at buffer offset offsets[c, r + 1] (region
    0 is the data section: offsets[:, 0] unused). ar_init uint32 [16]: the
    starting scalar registers of every call. partitions int64 [C]: each call's partition (the trace's). max_steps:
    the bundle budget of one call. trace: None, or a sink (q7emu.analysis.trace) recording every IVP op, each with
    kernel_id as its kernel byte; or True: the raw full-operand records (trace_buffer.pxi's TraceBuffer), limited to
    the sequence numbers in trace_window (lo, hi) and the mnemonics in trace_ops. counts: None, or an int64 [M] array
    that gets +1 per executed bundle. carry: the vector register file carries from call to call (reset once), else
    every call starts from the reset state.
    translation: -1, or the index in TRANSLATIONS of this program's translation (untraced, without counts), its
    runtime immediates in imm (int32 [K]); status ERR_FALLBACK (or any error) then asks for the interpreter.
    registers: None, or a dict that receives the vector-side register file where the last call stopped (untraced
    runs): "v" uint8 [32, 64], "vb" uint64 [16], "pr" uint64 [16] (what a translation's known values are read from,
    q7emu.asm.translate.known_values).

    Every address and size here is checked by the caller (q7emu.asm.run) before this runs. Returns (status, call,
    insn, steps int64 [C], ar uint32 [C, 16], err_addr, err_len, raw): status 0, or an ERR_* code stopping call `call`
    at op `insn`; raw the records of trace=True (else None)."""
    cdef Py_ssize_t ncalls = partitions.shape[0], nreg = len(regions) + 1
    cdef Machine m0, m
    cdef regfile_t rf
    cdef NoTrace nt
    cdef Tracer tr
    cdef const char* ops_c[64]
    cdef uint8_t* ptrs[MAX_REGIONS]
    cdef int status = 0, fail_insn = -1
    cdef Py_ssize_t failed_call = -1
    cdef int64_t* cp = NULL
    cdef int64_t[::1] cview
    if nreg > MAX_REGIONS or offsets.shape[0] != ncalls or offsets.shape[1] != MAX_REGIONS or ar_init.shape[0] != 16:
        raise ValueError("program run: inconsistent regions, offsets or registers")
    if bundles.shape[0] == 0 or bundles.shape[1] != BUNDLE_COLS or insns.shape[1] != INSN_COLS \
            or wmask.shape[0] != insns.shape[0]:
        raise ValueError("program run: malformed decoded program")
    raw = None
    memset(&m, 0, sizeof(Machine))
    keep = machine_at_reset(&m0, ptrs, data, data_base, regions, ar_init)
    cdef uint8_t[::1] sv = keep[0]
    steps = np.zeros(ncalls, np.int64)
    ar_out = np.zeros((ncalls, 16), np.uint32)
    cdef int64_t[::1] st = steps
    cdef uint32_t[:, ::1] ao = ar_out
    if counts is not None:
        cview = counts
        cp = &cview[0]
    cdef const uint8_t* dp = &data[0] if data.shape[0] else NULL
    cdef tx_t tx = NULL
    cdef const int32_t* ip = NULL
    if translation >= 0:
        if translation >= len(TRANSLATIONS) or trace is not None or counts is not None or imm is None \
                or imm.shape[0] < TRANSLATIONS[translation][4]:
            raise ValueError("program run: a translation runs untraced, without counts, with its immediates")
        tx = TX[translation]
        ip = &imm[0]
    if trace is None:
        with nogil:
            run_calls(&nt, &rf, &m0, &m, &insns[0, 0], &bundles[0, 0], &wmask[0, 0] if wmask.shape[0] else NULL,
                      <int>bundles.shape[0], entry, max_steps, ncalls, dp, data.shape[0], &sv[0], ptrs,
                      &offsets[0, 0], &partitions[0], &st[0], &ao[0, 0], &status, &fail_insn, &failed_call, cp, carry,
                      tx, ip)
        if registers is not None:
            registers["v"] = np.frombuffer(bytes((<uint8_t*>&rf.v[0])[:sizeof(rf.v)]), np.uint8).reshape(32, 64)
            registers["vb"] = np.array([rf.vb[j] for j in range(16)], np.uint64)
            registers["pr"] = np.array([rf.pr[j] for j in range(16)], np.uint64)
    else:
        if not Q7_TRACED_HERE:          # an ISA level's copy traces at the baseline (docs/build.md §2.2)
            from q7emu.kernels import _program as baseline
            return baseline.run(insns, bundles, wmask, data, data_base, entry, regions, offsets, ar_init, partitions,
                                max_steps, trace, kernel_id, counts, carry, trace_window=trace_window,
                                trace_ops=trace_ops)
        _keep = init_tracer(&tr, kernel_id, trace, trace_window, trace_ops, ops_c)
        try:
            with nogil:
                traced_calls(&tr, &rf, &m0, &m, &insns[0, 0], &bundles[0, 0],
                             &wmask[0, 0] if wmask.shape[0] else NULL, <int>bundles.shape[0], entry, max_steps,
                             ncalls, dp, data.shape[0], &sv[0], ptrs, &offsets[0, 0], &partitions[0], &st[0],
                             &ao[0, 0], &status, &fail_insn, &failed_call, cp, carry)
            if status != ERR_INTERRUPT:
                raw = finish_tracer(&tr, trace)
        finally:
            release_tracer(&tr)
    if status == ERR_INTERRUPT:
        raise KeyboardInterrupt
    return status, failed_call, fail_insn, steps, ar_out, m.err_addr, m.err_len, raw


#: the decoded program a translated run passes run(): one empty bundle (a translation never reads it)
_NO_INSNS = np.zeros((1, INSN_COLS), np.int32)
_NO_BUNDLES = np.zeros((1, BUNDLE_COLS), np.int32)
_NO_WMASK = np.zeros((1, 3), np.int64)


def run_translated(int translation, const int32_t[::1] imm, const uint8_t[::1] data, uint32_t data_base, regions,
                   const int64_t[:, ::1] offsets, const uint32_t[::1] ar_init, int64_t max_steps, bint carry=True):
    """Run the translation TX[translation] once per row of offsets, without its program (docs/asm.md §9): the path
    of an untraced TensorDequantize call (q7emu.kernels.dequant, which finds translation, imm and data in
    q7emu.kernels.programs.configurations_gen). imm int32 [K]: the runtime immediates; data, data_base, regions,
    offsets, ar_init, max_steps, carry: as for run(), which this is with an empty program. Returns 0, or the ERR_*
    code that stopped a call (every call then runs again another way: what a translation stops on is for the
    interpreter to report); Ctrl-C raises KeyboardInterrupt. As for run(), every region's base, size and offsets are
    the caller's to check (q7emu.kernels.dequant builds them from the call's own arrays)."""
    if offsets.shape[0] == 0:
        return 0
    return run(_NO_INSNS, _NO_BUNDLES, _NO_WMASK, data, data_base, 0, regions, offsets, ar_init,
               np.zeros(offsets.shape[0], np.int64), max_steps, carry=carry, translation=translation, imm=imm)[0]


cdef void traced_calls(Tracer* tr, regfile_t* rf, Machine* m0, Machine* m, const int32_t* insns,
                       const int32_t* bundles, const int64_t* wmask, int nb, int entry, int64_t max_steps,
                       Py_ssize_t ncalls, const uint8_t* data, Py_ssize_t ndata, uint8_t* scratch, uint8_t** ptrs,
                       const int64_t* offs, const int64_t* parts, int64_t* steps, uint32_t* ar_out, int* status,
                       int* fail_insn, Py_ssize_t* failed_call, int64_t* counts, bint carry) noexcept nogil:
    """The traced run (compiled with the hot code; dead in an ISA level's copy, whose run() hands a traced run to the
    baseline's: docs/build.md §2.2)."""
    if not Q7_TRACED_HERE:
        return
    run_calls(tr, rf, m0, m, insns, bundles, wmask, nb, entry, max_steps, ncalls, data, ndata, scratch, ptrs, offs,
              parts, steps, ar_out, status, fail_insn, failed_call, counts, carry)
