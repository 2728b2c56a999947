# The Python side of the trace recorder (q7trace.pxd), included by the kernel modules after the q7trace
# cimport: setting a Tracer up from the caller's arguments, handing compact blocks to the caller's sink
# (with the GIL, while the kernel runs), and the legacy full-operand buffer as a zero-copy bytes-like object.
from cpython.buffer cimport PyBuffer_FillInfo
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from cpython.exc cimport PyErr_CheckSignals
from cpython.ref cimport Py_INCREF, Py_DECREF, PyObject


# One spare legacy buffer per module: a finished TraceBuffer hands its pages back here, and the next
# traced run starts in them, so repeated traced runs do not pay for the kernel zeroing fresh pages
# (hundreds of MB for a large run). Only touched with the GIL held.
cdef uint8_t* _spare_buf = NULL
cdef size_t _spare_cap = 0
# the compact recorder's block buffer, kept for the next run (about 1.4 MB); only touched with the GIL held
cdef uint8_t* _spare_blk = NULL

#: block buffer size: header, shadow snapshot, then the four regions (records, operands, events, data)
cdef size_t BLK_BYTES = BLK_HEADER + SNAP_BYTES + 4 * BLK_RECORDS + 4 * BLK_OPERANDS + 16 * BLK_EVENTS + BLK_DATA
cdef size_t OFF_RECS = BLK_HEADER + SNAP_BYTES
cdef size_t OFF_OPDS = OFF_RECS + 4 * BLK_RECORDS
cdef size_t OFF_EVS = OFF_OPDS + 4 * BLK_OPERANDS
cdef size_t OFF_DATA = OFF_EVS + 16 * BLK_EVENTS


cdef class TraceBuffer:
    """Raw trace records of one kernel run (legacy full-operand layout of q7trace.pxd), as a read-only
    bytes-like object."""
    cdef uint8_t* buf
    cdef Py_ssize_t n
    cdef size_t cap

    def __dealloc__(self):
        global _spare_buf, _spare_cap
        if self.buf != NULL and self.cap > _spare_cap:
            q7_buf_free(_spare_buf, _spare_cap)
            _spare_buf, _spare_cap = self.buf, self.cap
        else:
            q7_buf_free(self.buf, self.cap)
        self.buf = NULL

    def __len__(self):
        return self.n

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, <void*>(self.buf if self.buf != NULL else <uint8_t*>b""), self.n, 1, flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef object take_trace(Tracer* tr):
    """Move the Tracer's legacy buffer into a TraceBuffer (tr no longer owns it)."""
    cdef TraceBuffer t = TraceBuffer.__new__(TraceBuffer)
    t.buf = tr.buf
    t.n = <Py_ssize_t>tr.len
    t.cap = tr.cap
    tr.buf = NULL
    tr.len = 0
    tr.cap = 0
    return t


cdef void _keep_error(Tracer* t, object e) noexcept:
    """Remember the first exception a sink call raised and stop recording (GIL held)."""
    t.failed = 1
    if t.err == NULL:
        Py_INCREF(e)
        t.err = <void*>e


cdef object pack_block(Tracer* t):
    """The open block as bytes: header, snapshot, then the regions packed one after the other (GIL held)."""
    cdef uint32_t flags = 1 if t.mode & MODE_SKELETON else 0
    cdef uint32_t snap = SNAP_BYTES
    cdef size_t n = OFF_RECS + 4 * t.nrec + 4 * t.nopd + 16 * t.nev + t.dlen
    cdef object out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>n)
    cdef uint8_t* o = <uint8_t*>PyBytes_AS_STRING(out)
    cdef size_t pos = OFF_RECS
    memcpy(t.blk, b"Q7B2", 4)
    memcpy(t.blk + 4, &flags, 4)
    memcpy(t.blk + 24, &t.nrec, 4)
    memcpy(t.blk + 28, &t.nopd, 4)
    memcpy(t.blk + 32, &t.nev, 4)
    memcpy(t.blk + 36, &t.dlen, 4)
    memcpy(t.blk + 40, &snap, 4)
    memcpy(o, t.blk, OFF_RECS)
    memcpy(o + pos, t.recs, 4 * t.nrec)
    pos += 4 * t.nrec
    memcpy(o + pos, t.opds, 4 * t.nopd)
    pos += 4 * t.nopd
    memcpy(o + pos, t.evs, 16 * t.nev)
    pos += 16 * t.nev
    memcpy(o + pos, t.data, t.dlen)
    return out


cdef void blk_flush(Tracer* t) noexcept nogil:
    """Hand the open block to the sink (``sink.block(raw, names)``: the block's bytes, and the run's op-name
    table so far as NAME_BYTES-byte (32) NUL-padded names) and start an empty one."""
    if t.nrec == 0:
        return
    with gil:
        try:
            if not t.failed:
                (<object>t.sink).block(pack_block(t), PyBytes_FromStringAndSize(t.names, NAME_BYTES * t.n_names))
        except BaseException as e:
            _keep_error(t, e)
    t.nrec = 0
    t.nopd = 0
    t.nev = 0
    t.dlen = 0
    t.blocks += 1


cdef void blk_tick(Tracer* t) noexcept nogil:
    """Every tick_mask + 1 executed ops: let Ctrl-C through and tell the sink (``sink.tick(executed)``)."""
    with gil:
        try:
            if not t.failed:
                PyErr_CheckSignals()
                (<object>t.sink).tick(t.seq)
        except BaseException as e:
            _keep_error(t, e)


def _u64(x, what):
    v = int(x)
    if not 0 <= v <= 0xFFFFFFFFFFFFFFFF:
        raise ValueError(f"trace {what} {v} outside 0..2**64-1")
    return v


cdef object init_tracer(Tracer* tr, int kernel, object trace, object trace_window, object trace_ops,
                        const char** ops_c):
    """Zero `tr` and set it up: ``trace=True`` records the legacy full-operand stream with the window
    ``trace_window`` and op filter ``trace_ops``; any other object is a sink (q7emu.analysis.trace) whose
    attributes give the filters (``window``, ``ops``, ``partitions``, ``bundles``), ``partition_base``,
    ``seq_start`` (the first op's sequence number), ``skeleton`` and ``tick_ops``, and which receives the
    compact blocks. At most 64 op names (pointed to by ops_c). Returns the objects the C side points into;
    the caller keeps them alive for the whole run."""
    global _spare_buf, _spare_cap, _spare_blk
    memset(tr, 0, sizeof(Tracer))
    tr.kernel = kernel
    tr.win_len = 0xFFFFFFFFFFFFFFFF
    tr.tick_mask = 0xFFFFFFFFFFFFFFFF
    keep = []
    if trace is True:
        tr.mode = MODE_LEGACY
        window, ops = trace_window, trace_ops
    else:
        tr.mode = MODE_BLOCKS | (MODE_SKELETON if getattr(trace, "skeleton", False) else 0)
        window, ops = getattr(trace, "window", None), getattr(trace, "ops", None)
        tr.part_base = <uint32_t>_u64(getattr(trace, "partition_base", 0) or 0, "partition_base")
        tr.seq = _u64(getattr(trace, "seq_start", 0) or 0, "seq_start")
        parts = getattr(trace, "partitions", None)
        if parts is not None:
            parts = [(int(lo), int(hi)) for lo, hi in parts]
            if not 0 < len(parts) <= MAX_PART_RANGES or any(not 0 <= lo <= hi <= 0xFFFFFFFF for lo, hi in parts):
                raise ValueError(f"trace partitions: 1..{MAX_PART_RANGES} ranges within 0..2**32-1")
            for i, (lo, hi) in enumerate(parts):
                tr.part_lo[i], tr.part_hi[i] = lo, hi
            tr.n_part = len(parts)
        bundles = getattr(trace, "bundles", None)
        if bundles is not None:
            bits = bytearray(8192)
            for b in bundles:
                b = int(b)
                if not 0 <= b <= 0xFFFF:
                    raise ValueError(f"trace bundle {b} outside 0..65535")
                bits[b >> 3] |= 1 << (b & 7)
            bits = bytes(bits)
            keep.append(bits)
            tr.bundle_bits = <const uint8_t*>bits
        tick = int(getattr(trace, "tick_ops", 0) or 0)
        if tick:
            if tick & (tick - 1) or tick < 1024:
                raise ValueError("trace tick_ops must be a power of two >= 1024")
            tr.tick_mask = tick - 1
        if tick:
            tr_set_hooks(tr, blk_flush, blk_tick)
        else:
            tr_set_hooks(tr, blk_flush, NULL)
        tr.sink = <void*>trace
        mutate = getattr(trace, "mutate", None)      # (mnemonic, bundle): those ops become no-ops
        if mutate is not None:
            mut_op = str(mutate[0]).encode()
            if not 0 < len(mut_op) < NAME_BYTES or not 0 <= int(mutate[1]) <= 0xFFFF:
                raise ValueError(f"trace mutate: (mnemonic of 1..{NAME_BYTES - 1} characters, bundle 0..65535)")
            keep.append(mut_op)
            tr.mut_op = mut_op
            tr.mut_bundle = int(mutate[1])
    if window is not None:
        lo, hi = (_u64(x, "window") for x in window)
        if hi < lo:
            raise ValueError("trace window end before its start")
        tr.win_lo, tr.win_len = lo, hi - lo
    names = [op.encode() for op in (ops or ())]
    if len(names) > MAX_ONLY_OPS:
        raise ValueError(f"trace op filter: at most {MAX_ONLY_OPS} mnemonics")
    for i, b in enumerate(names):
        ops_c[i] = b
    keep.append(names)
    tr.only_ops = ops_c
    tr.n_only = len(names)
    # buffers last: every check above raises before anything is taken (issue 15: no leak on a bad window)
    if tr.mode == MODE_LEGACY:
        tr.buf, tr.cap = _spare_buf, _spare_cap      # reuse the spare pages (or start empty)
        _spare_buf, _spare_cap = NULL, 0
    else:
        if _spare_blk != NULL:
            tr.blk, _spare_blk = _spare_blk, NULL
        else:
            tr.blk = <uint8_t*>malloc(BLK_BYTES)
            if tr.blk == NULL:
                raise MemoryError("trace block buffer")
        memset(tr.blk, 0, BLK_HEADER)
        tr.recs = <uint32_t*>(tr.blk + OFF_RECS)
        tr.opds = <uint32_t*>(tr.blk + OFF_OPDS)
        tr.evs = tr.blk + OFF_EVS
        tr.data = tr.blk + OFF_DATA
    return keep


cdef object finish_tracer(Tracer* tr, object trace):
    """After the run (GIL held): the legacy TraceBuffer, or (compact) flush the last block, tell the sink
    ``finish(executed_ops, op_names)`` and return None. Re-raises what a sink call raised."""
    cdef object e
    if tr.mode != MODE_LEGACY:
        blk_flush(tr)
    if tr.err != NULL:
        e = <object>tr.err
        Py_DECREF(e)
        tr.err = NULL
        raise e
    if tr.mode == MODE_LEGACY:
        if tr.failed:
            raise MemoryError("trace buffer allocation failed")
        return take_trace(tr)
    if tr.failed:
        raise ValueError(f"trace: more than {MAX_NAMES} distinct mnemonics in one run")
    names = [bytes(tr.names[NAME_BYTES * i:NAME_BYTES * (i + 1)]).rstrip(b"\0").decode() for i in range(tr.n_names)]
    if tr.mut_op != NULL:
        trace.mutate_hits = tr.mut_hits
    trace.finish(tr.seq, names)
    return None


cdef void release_tracer(Tracer* tr) noexcept:
    """Free what the Tracer still owns (GIL held; safe after finish_tracer and after an exception)."""
    global _spare_blk
    cdef object e
    q7_buf_free(tr.buf, tr.cap)
    tr.buf = NULL
    tr.cap = 0
    if tr.blk != NULL:
        if _spare_blk == NULL:
            _spare_blk = tr.blk
        else:
            free(tr.blk)
        tr.blk = NULL
    if tr.err != NULL:
        e = <object>tr.err
        Py_DECREF(e)
        tr.err = NULL
