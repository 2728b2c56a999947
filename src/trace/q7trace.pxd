# cython: language_level=3
"""The trace hook: a C-level recorder every kernel writes lane-level records into.

Kernels are fused over `TR` (NoTraceP | TracerP). `if TR is TracerP:` is resolved at compile time,
so the NoTraceP specialisation contains no trace code at all: tracing off costs nothing.

The kernel-facing calls are tr_begin (count one executed op; open a record if it passes the filters),
tr_vec / tr_wvec / tr_vbool / tr_pr / tr_scalar (one operand each: sources before the op executes,
destinations after) and tr_end. Sequence numbers are 64-bit and count every executed primitive of a run.
The filters are all applied here, so nothing outside them is stored: a window lo <= seq < hi, a set of
absolute partitions (tr_set_partition adds the run's partition base), a set of bundle indices and a set of
mnemonics. The hot calls are C (always inlined into the kernels); the rare paths are out of line.

Two output encodings:

* MODE_LEGACY (``run(..., trace=True)``): the full-operand raw stream in one growing buffer, every
  operand's bytes. It is the uncompressed recording that the compact one is checked against
  (q7emu.analysis.trace.parse_raw). Record layout (little-endian), one per recorded primitive:
    header 48 B: u32 seq (low 32 bits), u16 bundle, u8 kernel, u8 n_operands, u32 record_bytes,
                 u32 partition, char op[32] (mnemonic of 1..31 ASCII characters, NUL-padded)
    operand  8 B + data: u8 kind (1 vec, 2 wvec, 3 vbool, 4 pr, 5 scalar), u8 role (0 src, 1 dst),
                 u8 reg (register index, 255 = none), u8 view (see VIEW_*), u32 nbytes, then the bytes
                 (vec 64, wvec 192 raw image, vbool 8, pr 8, scalar 8 as int64).

* MODE_BLOCKS (``run(..., trace=<sink>)``): the compact .q7t v2 blocks (docs/traces.md §3). A block goes
  to the sink's ``block(bytes)`` every BLK_RECORDS records or about BLK_DATA operand bytes, so memory stays
  bounded. An operand's bytes are stored only when they differ from the recorder's shadow of what a reader
  knows about that register (its last stored value; all zeros at the start of a run). Otherwise the operand
  is *implicit* and a reader takes the register's last value. Every block starts with the shadow (the
  reader's register state), so a block decodes on its own. With MODE_SKELETON (profiles) no register bytes
  are stored at all, only the op stream, the operand descriptors and the scalars.
"""
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset, strcmp

from q7regs cimport vec_t, wvec_t, vbool_t, pr_t, wvec_to_raw

cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>
    #if defined(__GNUC__) || defined(__clang__)
    #define Q7_HOT static inline __attribute__((always_inline))
    #define Q7_COLD static __attribute__((noinline, cold))
    #define Q7_UNLIKELY(x) __builtin_expect(!!(x), 0)
    #elif defined(_MSC_VER)
    #define Q7_HOT static __forceinline
    #define Q7_COLD static __declspec(noinline)
    #define Q7_UNLIKELY(x) (x)
    #else
    #define Q7_HOT static inline
    #define Q7_COLD static
    #define Q7_UNLIKELY(x) (x)
    #endif

    /* Legacy trace buffers grow to hundreds of MB; on Linux map them directly with transparent huge pages
       (far fewer page faults) and grow them with mremap (no copy). Elsewhere: realloc / free. */
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

    enum {
        Q7_K_VEC = 1, Q7_K_WVEC = 2, Q7_K_VBOOL = 3, Q7_K_PR = 4, Q7_K_SCALAR = 5,
        Q7_MODE_LEGACY = 1, Q7_MODE_BLOCKS = 2, Q7_MODE_SKELETON = 4,
        Q7_BLK_HEADER = 64, Q7_SNAP_V = 0, Q7_SNAP_WV = 2048, Q7_SNAP_VB = 2816, Q7_SNAP_PR = 2944,
        Q7_SNAP_BYTES = 3072,
        Q7_BLK_RECORDS = 16384, Q7_BLK_OPERANDS = 65536, Q7_BLK_EVENTS = 4096, Q7_BLK_DATA = 1048576,
        Q7_MAX_OP_DATA = 2048, Q7_MAX_OP_OPERANDS = 16, Q7_EV_SEQ = 1, Q7_EV_PARTITION = 2,
        Q7_MAX_NAMES = 256, Q7_CACHE = 1024,
        Q7_NAME_BYTES = 32,         /* a mnemonic field: 1..31 characters, NUL-padded (name table, legacy header) */
        Q7_LEGACY_HEADER = 16 + Q7_NAME_BYTES,
        /* room reserved before each legacy record: its header, at most Q7_MAX_OP_OPERANDS operand headers and
           Q7_MAX_OP_DATA operand bytes */
        Q7_LEGACY_RECORD = Q7_LEGACY_HEADER + 8 * Q7_MAX_OP_OPERANDS + Q7_MAX_OP_DATA
    };

    typedef struct q7_tracer q7_tracer;
    typedef void (*q7_hook)(q7_tracer*);
    struct q7_tracer {
        int mode;
        int open;                   /* a record is open (the op passed every filter) */
        int failed;                 /* recording stopped: allocation failure, a sink error, Ctrl-C */
        int part_skip;              /* the current partition is outside the partition filter */
        int kernel;
        int n_only;                 /* op filter: record only these mnemonics (0 = all) */
        int n_names;                /* distinct mnemonics recorded so far (op ids 0..n_names-1) */
        int n_part;                 /* partition filter: n_part ranges [part_lo, part_hi) (0 = all) */
        uint64_t seq;               /* sequence number of the next executed primitive */
        uint64_t win_lo, win_len;   /* record win_lo <= seq < win_lo + win_len */
        uint64_t tick_mask;         /* tick every tick_mask + 1 executed ops */
        uint64_t next_seq;          /* the seq a record must have to need no seq event */
        uint64_t blocks;            /* blocks flushed */
        uint32_t partition;         /* absolute partition of the ops now running */
        uint32_t part_base;
        uint32_t rec_partition;     /* partition of the last stored record */
        uint32_t nrec, nopd, nev, cur;
        size_t dlen;
        uint32_t part_lo[64], part_hi[64];
        const uint8_t* bundle_bits; /* bundle filter, a 65536-bit map (NULL = all) */
        const char** only_ops;
        const char* cache_ptr[Q7_CACHE];   /* mnemonic literal address -> op id (-1: filtered out) */
        int cache_id[Q7_CACHE];
        char names[Q7_MAX_NAMES * Q7_NAME_BYTES];
        uint8_t* buf;               /* legacy: the growing record buffer */
        size_t len, cap, rec;
        uint8_t* blk;               /* compact: header + snapshot, then the region pointers below */
        uint32_t* recs;
        uint32_t* opds;
        uint8_t* evs;
        uint8_t* data;
        q7_hook flush;              /* hands the block to the sink (trace_buffer.pxi; takes the GIL) */
        q7_hook tick;               /* progress / Ctrl-C check (takes the GIL) */
        void* sink;                 /* the Python sink (borrowed; the caller keeps it alive) */
        void* err;                  /* the exception a sink call raised (new reference) */
        const char* mut_op;         /* mutation: issue no op of this mnemonic in bundle mut_bundle (NULL = none) */
        int mut_bundle;
        uint64_t mut_hits;          /* ops the mutation turned into no-ops */
        uint8_t shadow[Q7_SNAP_BYTES];   /* what a reader knows about each register */
    };
    /* the Cython mirror of the struct (below) declares names[8192]: keep the two in step */
    typedef char q7_names_size_check[sizeof(((q7_tracer*)0)->names) == 8192 ? 1 : -1];

    Q7_COLD int q7_tr_intern(q7_tracer* t, const char* op, size_t h) {
        int i, want = t->n_only == 0;
        for (i = 0; i < t->n_only; i++)
            if (strcmp(t->only_ops[i], op) == 0) { want = 1; break; }
        t->cache_ptr[h] = op;
        t->cache_id[h] = -1;
        if (!want) return -1;
        for (i = 0; i < t->n_names; i++)
            if (strncmp(t->names + Q7_NAME_BYTES * i, op, Q7_NAME_BYTES - 1) == 0) return t->cache_id[h] = i;
        if (t->n_names >= Q7_MAX_NAMES) { t->failed = 1; return -1; }
        i = t->n_names++;
        memset(t->names + Q7_NAME_BYTES * i, 0, Q7_NAME_BYTES);
        strncpy(t->names + Q7_NAME_BYTES * i, op, Q7_NAME_BYTES - 1);
        return t->cache_id[h] = i;
    }

    Q7_COLD int q7_tr_begin_legacy(q7_tracer* t, const char* op, int bundle, uint64_t s) {
        uint8_t* h;
        uint32_t s32 = (uint32_t)s;
        if (t->len + Q7_LEGACY_RECORD > t->cap) {
            size_t cap = t->cap ? 2 * t->cap : ((size_t)1 << 21);
            uint8_t* nb;
            while (cap < t->len + Q7_LEGACY_RECORD) cap *= 2;
            nb = (uint8_t*)q7_buf_grow(t->buf, t->cap, cap);
            if (nb == NULL) { t->failed = 1; return 0; }
            t->buf = nb;
            t->cap = cap;
        }
        h = t->buf + t->len;
        memset(h, 0, Q7_LEGACY_HEADER);
        memcpy(h, &s32, 4);
        h[4] = (uint8_t)(bundle & 0xFF);
        h[5] = (uint8_t)((bundle >> 8) & 0xFF);
        h[6] = (uint8_t)t->kernel;
        memcpy(h + 12, &t->partition, 4);
        strncpy((char*)h + 16, op, Q7_NAME_BYTES - 1);
        t->rec = t->len;
        t->len += Q7_LEGACY_HEADER;
        t->open = 1;
        return 1;
    }

    Q7_COLD void q7_tr_legacy_operand(q7_tracer* t, int kind, int role, int reg, int view, const void* data,
                                      uint32_t nbytes) {
        uint8_t* p = t->buf + t->len;
        p[0] = (uint8_t)kind; p[1] = (uint8_t)role; p[2] = (uint8_t)(reg & 0xFF); p[3] = (uint8_t)view;
        memcpy(p + 4, &nbytes, 4);
        memcpy(p + 8, data, nbytes);
        t->len += 8 + nbytes;
        t->buf[t->rec + 7] += 1;
    }

    Q7_COLD void q7_tr_block_start(q7_tracer* t, uint64_t s) {
        memcpy(t->blk + 8, &s, 8);
        memcpy(t->blk + 16, &t->partition, 4);
        memcpy(t->blk + 20, &t->kernel, 4);
        memcpy(t->blk + Q7_BLK_HEADER, t->shadow, Q7_SNAP_BYTES);
    }

    Q7_HOT void q7_tr_event(q7_tracer* t, uint32_t kind, uint64_t value) {
        uint8_t* e = t->evs + 16 * t->nev++;
        memcpy(e, &t->nrec, 4);
        memcpy(e + 4, &kind, 4);
        memcpy(e + 8, &value, 8);
    }

    Q7_HOT int q7_tr_begin(q7_tracer* t, const char* op, int bundle) {
        uint64_t s = t->seq++;
        size_t h;
        int id;
        t->open = 0;
        if (Q7_UNLIKELY((s & t->tick_mask) == 0) && t->tick) t->tick(t);
        if (s - t->win_lo >= t->win_len || t->part_skip || t->failed) return 0;
        if (t->bundle_bits && !((t->bundle_bits[(bundle >> 3) & 0x1FFF] >> (bundle & 7)) & 1)) return 0;
        h = (size_t)(((uint64_t)(uintptr_t)op * 0x9E3779B97F4A7C15ull) >> 54);
        id = t->cache_ptr[h] == op ? t->cache_id[h] : q7_tr_intern(t, op, h);
        if (id < 0) return 0;
        if (Q7_UNLIKELY(t->mode == Q7_MODE_LEGACY)) return q7_tr_begin_legacy(t, op, bundle, s);
        if (Q7_UNLIKELY(t->nrec >= Q7_BLK_RECORDS || t->nopd > Q7_BLK_OPERANDS - Q7_MAX_OP_OPERANDS
                        || t->nev > Q7_BLK_EVENTS - 2 || t->dlen > Q7_BLK_DATA - Q7_MAX_OP_DATA)) {
            t->flush(t);
            if (t->failed) return 0;
        }
        if (Q7_UNLIKELY(t->nrec == 0)) q7_tr_block_start(t, s);
        else {
            if (Q7_UNLIKELY(s != t->next_seq)) q7_tr_event(t, Q7_EV_SEQ, s);
            if (Q7_UNLIKELY(t->partition != t->rec_partition)) q7_tr_event(t, Q7_EV_PARTITION, t->partition);
        }
        t->next_seq = s + 1;
        t->rec_partition = t->partition;
        t->cur = t->nrec;
        t->recs[t->nrec++] = (uint32_t)(bundle & 0xFFFF) | ((uint32_t)id << 16);
        t->open = 1;
        return 1;
    }

    #if defined(__AVX512F__)
    #include <immintrin.h>
    #endif
    /* a == b for n = 8 or a multiple of 64 bytes (n is a constant once inlined) */
    Q7_HOT int q7_same(const uint8_t* a, const uint8_t* b, uint32_t n) {
        uint32_t i;
        if (n == 8) { uint64_t x, y; memcpy(&x, a, 8); memcpy(&y, b, 8); return x == y; }
        for (i = 0; i < n; i += 64) {
    #if defined(__AVX512F__)
            if (_mm512_cmpneq_epi64_mask(_mm512_loadu_si512((const void*)(a + i)),
                                         _mm512_loadu_si512((const void*)(b + i)))) return 0;
    #else
            if (memcmp(a + i, b + i, 64)) return 0;
    #endif
        }
        return 1;
    }

    /* one operand descriptor (docs/traces.md §3): reg | view << 8 | kind << 16 | role << 20 | explicit << 21 */
    Q7_HOT void q7_tr_desc(q7_tracer* t, uint32_t d) {
        t->opds[t->nopd++] = d;
        t->recs[t->cur] += (uint32_t)1 << 24;
    }

    Q7_HOT void q7_tr_bytes(q7_tracer* t, int kind, int role, int reg, int view, const uint8_t* v, uint32_t n,
                            int slot) {
        uint32_t d;
        if (!t->open) return;
        if (Q7_UNLIKELY(t->mode == Q7_MODE_LEGACY)) { q7_tr_legacy_operand(t, kind, role, reg, view, v, n); return; }
        d = (uint32_t)(reg & 0xFF) | ((uint32_t)view << 8) | ((uint32_t)kind << 16) | ((uint32_t)role << 20);
        if (slot >= 0) {
            uint8_t* sh = t->shadow + slot;
            if ((t->mode & Q7_MODE_SKELETON) || q7_same(sh, v, n)) { q7_tr_desc(t, d); return; }
            memcpy(sh, v, n);
        }
        q7_tr_desc(t, d | ((uint32_t)1 << 21));
        memcpy(t->data + t->dlen, v, n);
        t->dlen += n;
    }

    Q7_HOT void q7_tr_vec(q7_tracer* t, int role, int reg, int view, const uint8_t* v) {
        if (!t->open) return;
        q7_tr_bytes(t, Q7_K_VEC, role, reg, view, v, 64, (unsigned)reg < 32 ? Q7_SNAP_V + 64 * reg : -1);
    }

    Q7_HOT void q7_tr_small(q7_tracer* t, int kind, int role, int reg, int view, uint64_t x, int slot) {
        if (!t->open) return;
        q7_tr_bytes(t, kind, role, reg, view, (const uint8_t*)&x, 8, slot);
    }

    Q7_HOT void q7_tr_end(q7_tracer* t) {
        if (t->open && t->mode == Q7_MODE_LEGACY) {
            uint32_t n = (uint32_t)(t->len - t->rec);
            memcpy(t->buf + t->rec + 8, &n, 4);
        }
        t->open = 0;
    }

    /* the mutation hook (docs/traces.md §8): 1 when this op is to be a no-op (its destinations keep their values) */
    Q7_HOT int q7_tr_skip(q7_tracer* t, const char* op, int bundle) {
        if (Q7_UNLIKELY(t->mut_op != NULL) && bundle == t->mut_bundle && strcmp(op, t->mut_op) == 0) {
            t->mut_hits++;
            return 1;
        }
        return 0;
    }

    static void q7_tr_set_hooks(q7_tracer* t, q7_hook flush, q7_hook tick) { t->flush = flush; t->tick = tick; }

    #define q7_tr_vec_v(t, role, reg, view, v) q7_tr_vec((t), (role), (reg), (view), (const uint8_t*)(v))
    #define q7_tr_vbool(t, role, reg, view, b) q7_tr_small((t), Q7_K_VBOOL, (role), (reg), (view), \\
        (uint64_t)(b), (unsigned)(reg) < 16 ? Q7_SNAP_VB + 8 * (reg) : -1)
    #define q7_tr_pr(t, role, reg, p) \\
        q7_tr_small((t), Q7_K_PR, (role), (reg), 11, (uint64_t)(p), (unsigned)(reg) < 16 ? Q7_SNAP_PR + 8 * (reg) : -1)
    #define q7_tr_scalar(t, reg, x) q7_tr_small((t), Q7_K_SCALAR, 0, (reg), 12, (uint64_t)(int64_t)(x), -1)
    """
    void* q7_buf_grow(void* p, size_t oldcap, size_t newcap) nogil
    void q7_buf_free(void* p, size_t cap) nogil

    ctypedef struct Tracer "q7_tracer":
        int mode
        int open
        int failed
        int part_skip
        int kernel
        int n_only
        int n_names
        int n_part
        uint64_t seq
        uint64_t win_lo
        uint64_t win_len
        uint64_t tick_mask
        uint64_t blocks
        uint32_t partition
        uint32_t part_base
        uint32_t nrec
        uint32_t nopd
        uint32_t nev
        size_t dlen
        uint32_t part_lo[64]
        uint32_t part_hi[64]
        const uint8_t* bundle_bits
        const char** only_ops
        char names[8192]            # Q7_MAX_NAMES * Q7_NAME_BYTES (MAX_NAMES * NAME_BYTES below)
        uint8_t* buf
        size_t len
        size_t cap
        uint8_t* blk
        uint32_t* recs
        uint32_t* opds
        uint8_t* evs
        uint8_t* data
        void* sink
        void* err
        const char* mut_op
        int mut_bundle
        uint64_t mut_hits
        uint8_t shadow[3072]

    bint tr_begin "q7_tr_begin"(Tracer* t, const char* op, int bundle) nogil
    void tr_vec "q7_tr_vec_v"(Tracer* t, int role, int reg, int view, const vec_t* v) nogil
    void tr_vbool "q7_tr_vbool"(Tracer* t, int role, int reg, int view, vbool_t b) nogil
    void tr_pr "q7_tr_pr"(Tracer* t, int role, int reg, pr_t p) nogil
    void tr_scalar "q7_tr_scalar"(Tracer* t, int reg, int64_t x) nogil
    void tr_bytes "q7_tr_bytes"(Tracer* t, int kind, int role, int reg, int view, const uint8_t* v, uint32_t n,
                                int slot) nogil
    void tr_end "q7_tr_end"(Tracer* t) nogil
    bint tr_skip "q7_tr_skip"(Tracer* t, const char* op, int bundle) nogil
    void tr_set_hooks "q7_tr_set_hooks"(Tracer* t, void (*flush)(Tracer*) noexcept nogil,
                                        void (*tick)(Tracer*) noexcept nogil) nogil

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

cdef enum:
    MODE_LEGACY = 1
    MODE_BLOCKS = 2
    MODE_SKELETON = 4           # with MODE_BLOCKS: no register bytes (profiles)
    # v2 block layout (docs/traces.md §3): header, shadow snapshot, then the regions below, packed at flush
    BLK_HEADER = 64
    SNAP_WV = 2048              # shadow offsets: v0..v31 64 B each from 0, wv0..wv3 192 B (raw image),
    SNAP_BYTES = 3072           # vb0..vb15 8 B from 2816, pr0..pr15 8 B from 2944
    BLK_RECORDS = 16384         # records per block at most
    BLK_OPERANDS = 65536        # operand descriptors per block at most
    BLK_EVENTS = 4096           # events (seq jumps, partition changes) per block at most
    BLK_DATA = 1048576          # explicit operand bytes per block (a block is flushed before it could pass this)
    MAX_NAMES = 256             # distinct mnemonics per run (u8 op id)
    NAME_BYTES = 32             # a mnemonic field: 1..31 characters, NUL-padded (the name table, the legacy header)
    MAX_PART_RANGES = 64
    MAX_ONLY_OPS = 64

cdef struct NoTrace:
    int unused

ctypedef NoTrace* NoTraceP
ctypedef Tracer* TracerP
ctypedef fused TR:
    NoTraceP
    TracerP


cdef inline void tr_set_partition(Tracer* t, Py_ssize_t p) noexcept nogil:
    """The kernel starts partition (or row block) `p` of its input: absolute partition part_base + p."""
    cdef int i
    cdef uint32_t a = t.part_base + <uint32_t>p
    t.partition = a
    if t.n_part == 0:
        t.part_skip = 0
        return
    t.part_skip = 1
    for i in range(t.n_part):
        if t.part_lo[i] <= a < t.part_hi[i]:
            t.part_skip = 0
            return


cdef inline void tr_wvec(Tracer* t, int role, int reg, const wvec_t* w) noexcept nogil:
    cdef uint8_t raw[192]
    if not t.open:
        return
    if t.mode & MODE_SKELETON:
        memset(raw, 0, 192)         # a skeleton stores no register bytes: skip the conversion
    else:
        wvec_to_raw(w, raw)
    tr_bytes(t, K_WVEC, role, reg, VIEW_W24 if w.view == 24 else (VIEW_W48 if w.view == 48 else VIEW_W96),
             raw, 192, SNAP_WV + 192 * reg if 0 <= reg < 4 else -1)
