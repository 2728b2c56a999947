# cython: language_level=3
"""The trace hook: a C-level recorder every kernel can write lane-level records into.

Kernels are fused over `TR` (NoTraceP | TracerP). `if TR is TracerP:` is resolved at compile time,
so the NoTraceP specialisation contains no trace code at all: tracing off costs nothing.

Record layout (little-endian), one per executed primitive inside the window / op filter:
  header 32 B: u32 seq, u16 bundle, u8 kernel, u8 n_operands, u32 record_bytes, u32 partition,
               char op[16] (mnemonic, NUL-padded)
  operand  8 B + data: u8 kind (1 vec, 2 wvec, 3 vbool, 4 pr, 5 scalar), u8 role (0 src, 1 dst),
               u8 reg (register index, 255 = none), u8 view (see VIEW_*), u32 nbytes, then the bytes
               (vec 64, wvec 192 raw image, vbool 8, pr 8, scalar 8 as int64).
Sources are recorded before the op executes, destinations after.
"""
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset, strcmp

cdef extern from "string.h":
    size_t strnlen(const char* s, size_t maxlen) nogil
from q7regs cimport vec_t, wvec_t, vbool_t, pr_t, wvec_to_raw

cdef extern from *:
    """
    /* Trace buffers grow to hundreds of MB; on Linux map them directly with transparent huge pages
       (far fewer page faults) and grow them with mremap (no copy). Elsewhere: realloc / free. */
    #include <stdlib.h>
    #ifdef __linux__
    #ifndef _GNU_SOURCE
    #define _GNU_SOURCE
    #endif
    #include <sys/mman.h>
    static void* q7_buf_grow(void* p, size_t oldcap, size_t newcap) {
        void* q;
        if (p == NULL) q = mmap(NULL, newcap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        else q = mremap(p, oldcap, newcap, MREMAP_MAYMOVE);
        if (q == MAP_FAILED) return NULL;
    #ifdef MADV_HUGEPAGE
        madvise(q, newcap, MADV_HUGEPAGE);
    #endif
        return q;
    }
    static void q7_buf_free(void* p, size_t cap) { if (p) munmap(p, cap); }
    #else
    static void* q7_buf_grow(void* p, size_t oldcap, size_t newcap) { (void)oldcap; return realloc(p, newcap); }
    static void q7_buf_free(void* p, size_t cap) { (void)cap; free(p); }
    #endif
    """
    void* q7_buf_grow(void* p, size_t oldcap, size_t newcap) nogil
    void q7_buf_free(void* p, size_t cap) nogil

cdef enum:
    K_VEC = 1
    K_WVEC = 2
    K_VBOOL = 3
    K_PR = 4
    K_SCALAR = 5
    ROLE_SRC = 0
    ROLE_DST = 1
    VIEW_2NX8 = 0
    VIEW_NX16 = 1
    VIEW_N_2X32 = 2
    VIEW_NXF16 = 3
    VIEW_N_2XF32 = 4
    VIEW_W24 = 5
    VIEW_W48 = 6
    VIEW_W96 = 7
    VIEW_VB8 = 8
    VIEW_VB16 = 9
    VIEW_VB32 = 10
    VIEW_PR = 11
    VIEW_SCALAR = 12
    HEADER_BYTES = 32
    MAX_RECORD_BYTES = 2048     # header + at most 8 operands of <= 200 bytes: reserved once per record

cdef struct Tracer:
    uint8_t* buf
    size_t len
    size_t cap
    uint32_t seq            # sequence number of the next executed primitive (counts every op)
    uint32_t win_lo         # record ops with win_lo <= seq < win_hi
    uint32_t win_hi
    const char** only_ops   # if n_only > 0: record only these mnemonics
    int n_only
    int kernel
    uint32_t partition
    int failed              # allocation failure: recording stopped
    size_t rec              # offset of the open record
    int open

cdef struct NoTrace:
    int unused

ctypedef NoTrace* NoTraceP
ctypedef Tracer* TracerP
ctypedef fused TR:
    NoTraceP
    TracerP


cdef inline bint tr_reserve(Tracer* t, size_t n) noexcept nogil:
    cdef size_t cap
    cdef uint8_t* nb
    if t.failed:
        return False
    if t.len + n <= t.cap:
        return True
    cap = t.cap * 2 if t.cap else (<size_t>1 << 21)
    while cap < t.len + n:
        cap *= 2
    nb = <uint8_t*>q7_buf_grow(t.buf, t.cap, cap)
    if nb == NULL:
        t.failed = 1
        return False
    t.buf = nb
    t.cap = cap
    return True


cdef inline bint tr_begin(Tracer* t, const char* op, int bundle) noexcept nogil:
    """Count one executed op; open a record for it if it is inside the window and the op filter."""
    cdef uint32_t s = t.seq
    cdef int i
    cdef bint want
    cdef uint8_t* h
    t.seq += 1
    t.open = 0
    if s < t.win_lo or s >= t.win_hi:
        return False
    if t.n_only > 0:
        want = False
        for i in range(t.n_only):
            if strcmp(t.only_ops[i], op) == 0:
                want = True
                break
        if not want:
            return False
    if not tr_reserve(t, MAX_RECORD_BYTES):
        return False
    h = t.buf + t.len
    memset(h, 0, HEADER_BYTES)
    memcpy(h, &s, 4)
    h[4] = <uint8_t>(bundle & 0xFF)
    h[5] = <uint8_t>((bundle >> 8) & 0xFF)
    h[6] = <uint8_t>t.kernel
    memcpy(h + 12, &t.partition, 4)
    memcpy(h + 16, op, strnlen(op, 15))       # NUL padding comes from the memset above
    t.rec = t.len
    t.len += HEADER_BYTES
    t.open = 1
    return True


cdef inline void tr_operand(Tracer* t, int kind, int role, int reg, int view, const void* data,
                            uint32_t nbytes) noexcept nogil:
    # room for the whole record was reserved by tr_begin (MAX_RECORD_BYTES)
    cdef uint8_t* p
    if not t.open:
        return
    p = t.buf + t.len
    p[0] = <uint8_t>kind
    p[1] = <uint8_t>role
    p[2] = <uint8_t>(reg & 0xFF)
    p[3] = <uint8_t>view
    memcpy(p + 4, &nbytes, 4)
    memcpy(p + 8, data, nbytes)
    t.len += 8 + nbytes
    t.buf[t.rec + 7] += 1


cdef inline void tr_vec(Tracer* t, int role, int reg, int view, const vec_t* v) noexcept nogil:
    tr_operand(t, K_VEC, role, reg, view, v.u8, 64)


cdef inline void tr_wvec(Tracer* t, int role, int reg, const wvec_t* w) noexcept nogil:
    cdef uint8_t raw[192]
    wvec_to_raw(w, raw)
    tr_operand(t, K_WVEC, role, reg, VIEW_W24 if w.view == 24 else (VIEW_W48 if w.view == 48 else VIEW_W96),
               raw, 192)


cdef inline void tr_vbool(Tracer* t, int role, int reg, int view, vbool_t b) noexcept nogil:
    tr_operand(t, K_VBOOL, role, reg, view, &b, 8)


cdef inline void tr_pr(Tracer* t, int role, int reg, pr_t p) noexcept nogil:
    tr_operand(t, K_PR, role, reg, VIEW_PR, &p, 8)


cdef inline void tr_scalar(Tracer* t, int reg, int64_t x) noexcept nogil:
    tr_operand(t, K_SCALAR, ROLE_SRC, reg, VIEW_SCALAR, &x, 8)


cdef inline void tr_end(Tracer* t) noexcept nogil:
    cdef uint32_t n
    if t.open:
        n = <uint32_t>(t.len - t.rec)
        memcpy(t.buf + t.rec + 8, &n, 4)
    t.open = 0
