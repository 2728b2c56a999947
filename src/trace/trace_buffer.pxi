# A read-only, zero-copy Python view of a finished trace: it takes ownership of the Tracer's malloc'd
# buffer (exposed through the buffer protocol, freed with the object), so handing a large trace to
# Python costs no copy. Included by the kernel modules after the q7trace cimport.
from cpython.buffer cimport PyBuffer_FillInfo


# One spare trace buffer per module: a finished TraceBuffer hands its pages back here, and the next
# traced run starts in them, so repeated traced runs do not pay for the kernel zeroing fresh pages
# (hundreds of MB for a large run). Only touched with the GIL held.
cdef uint8_t* _spare_buf = NULL
cdef size_t _spare_cap = 0


cdef class TraceBuffer:
    """Raw trace records of one kernel run (q7trace.pxd layout), as a read-only bytes-like object."""
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
    """Move the Tracer's buffer into a TraceBuffer (tr no longer owns it)."""
    cdef TraceBuffer t = TraceBuffer.__new__(TraceBuffer)
    t.buf = tr.buf
    t.n = <Py_ssize_t>tr.len
    t.cap = tr.cap
    tr.buf = NULL
    tr.len = 0
    tr.cap = 0
    return t


cdef object init_tracer(Tracer* tr, int kernel, object trace_window, object trace_ops, const char** ops_c):
    """Zero `tr` and set its window and op filter (at most 64 names, pointed to by ops_c). Returns the
    list of encoded names, which the caller keeps alive for the whole run."""
    global _spare_buf, _spare_cap
    memset(tr, 0, sizeof(Tracer))
    tr.buf, tr.cap = _spare_buf, _spare_cap      # reuse the spare pages (or start empty)
    _spare_buf, _spare_cap = NULL, 0
    lo, hi = trace_window if trace_window is not None else (0, 0xFFFFFFFF)
    tr.win_lo = lo
    tr.win_hi = hi
    keep = [op.encode() for op in (trace_ops or ())][:64]
    for i, b in enumerate(keep):
        ops_c[i] = b
    tr.only_ops = ops_c
    tr.n_only = len(keep)
    tr.kernel = kernel
    return keep
