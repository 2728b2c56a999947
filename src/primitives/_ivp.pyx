# cython: language_level=3
"""Python access to every IVP primitive (q7emu.ivp.<mnemonic>), for tests and exploration.

Operands are numpy arrays in the op's lane dtype: int8/uint8 [64], int16/uint16 [32], int32/uint32
[16], float16 [32] (NXF16), float32 [16] (N_2XF32); vbool as bool [lanes] (one entry per lane of
the op's width); wvec lanes as int64 [64 | 32] (24/48-bit views) or a list of 16 Python ints
(96-bit view), each in -2^(w-1)..2^w - 1 for a w-bit lane (its signed or unsigned value; anything else is refused,
never wrapped); pr as a Python int in [0, 2^64). Multi-output ops return a tuple in disassembly
order (flags first for bmin/bmax). Memory ops take a uint8 buffer and a byte offset and return
the new offset.

Nothing here is written per op: every wrapper is built at import from its record in the op table
(q7emu/primitives/optable.py: argument order, lane views and dtypes, docstring, annotations) and runs
:func:`_invoke`, which validates every operand into a register slot (raising InvalidArgument that names
the operand and the rule) before any nogil code, then calls the primitive through the typed
function-pointer tables that q7emu/primitives/gen_wrappers.py generates from the same table
(_ivp_table.pxi). The op table's C-only primitives get underscored wrappers (_c_<mnemonic>) for tests.
"""
import numpy as np
import numpy.typing as npt
from collections.abc import Sequence
from libc.stdint cimport uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy, memset
from cpython.pyport cimport PY_SSIZE_T_MAX
from q7regs cimport (vec_t, wvec_t, wcells16_t, wcells32_t, vbool_t, vmask_t, pr_t, valign_t, sext, wvec_to_raw,
                     wvec_from_raw, wvec_zero, q7_bits_to_bytes)
cimport q7ivp as P

from q7emu.errors import InvalidArgument
from q7emu.primitives import optable as _T
from q7emu.primitives import gen_wrappers as _G


_LANES = {"u8": (np.uint8, 64), "s8": (np.int8, 64), "u16": (np.uint16, 32), "s16": (np.int16, 32),
          "u32": (np.uint32, 16), "s32": (np.int32, 16), "f16": (np.float16, 32), "f32": (np.float32, 16)}
_RAW = {"f16": np.uint16, "f32": np.uint32}


cdef vec_t _vec(object a, str kind, str name) except *:
    """numpy lanes -> vec_t, checking dtype-compatibility and lane count."""
    cdef vec_t v
    dt, n = _LANES[kind]
    arr = np.asarray(a)
    if arr.shape != (n,):
        raise InvalidArgument(name, arr.shape, f"must have {n} lanes of {np.dtype(dt).name}")
    if kind in _RAW:
        if arr.dtype != dt:
            raise InvalidArgument(name, str(arr.dtype), f"must be {np.dtype(dt).name} lanes")
        raw = np.ascontiguousarray(arr).view(_RAW[kind])
    else:
        if arr.dtype.kind not in "iub":
            raise InvalidArgument(name, str(arr.dtype), "must be integer lanes")
        if arr.size and (int(arr.min()) < np.iinfo(dt).min or int(arr.max()) > np.iinfo(dt).max):
            raise InvalidArgument(name, (int(arr.min()), int(arr.max())),
                                  f"lane values must fit {np.dtype(dt).name}")
        raw = np.ascontiguousarray(arr.astype(dt))
    cdef const uint8_t[::1] b = raw.view(np.uint8)
    memcpy(v.u8, &b[0], 64)
    return v


cdef object _out(vec_t* v, str kind):
    """vec_t -> numpy lanes of the given view."""
    dt, _ = _LANES[kind]
    buf = np.empty(64, dtype=np.uint8)
    cdef uint8_t[::1] b = buf
    memcpy(&b[0], v.u8, 64)
    return buf.view(dt).copy()


cdef vbool_t _vb(object m, int lanes, str name) except *:
    """bool [lanes] -> vbool (every bit of a true lane set)."""
    arr = np.asarray(m)
    if arr.shape != (lanes,) or arr.dtype != np.bool_:
        raise InvalidArgument(name, arr.shape, f"vbool must be bool [{lanes}]")
    cdef int k, w = 64 // lanes
    cdef vbool_t r = 0
    for k in range(lanes):
        if arr[k]:
            r |= (((<vbool_t>1) << w) - 1) << (w * k)
    return r


cdef object _vbout(vbool_t b, int lanes):
    """vbool -> bool [lanes] (bit (64/lanes)*k of lane k)."""
    cdef int k, w = 64 // lanes
    return np.array([bool((b >> (w * k)) & 1) for k in range(lanes)], dtype=np.bool_)


cdef object _shown(object v):
    """A value as an error message shows it: ints and short strings themselves, anything else by its type (an
    array's repr would span many lines)."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, str) and len(v) <= 40 and "\n" not in v:
        return v
    shape = getattr(v, "shape", None)
    return f"{type(v).__name__}{list(shape) if isinstance(shape, tuple) else ''}"


cdef pr_t _pr(object p, str name="pr") except *:
    if not isinstance(p, (int, np.integer)) or not 0 <= int(p) < 2 ** 64:
        raise InvalidArgument(name, _shown(p), "pr must be an int in [0, 2^64)")
    return <pr_t>int(p)


cdef int _imm(object i, int lo, int hi, str name) except? -1:
    if not isinstance(i, (int, np.integer)) or not lo <= int(i) <= hi:
        raise InvalidArgument(name, _shown(i), f"immediate must be an int in [{lo}, {hi}]")
    return <int>i


cdef object _wout(wvec_t* w):
    """wvec -> int64 [64] (24-bit), int64 [32] (48-bit) or 16 Python ints (96-bit) in its view."""
    cdef int i
    if w.view == 24:
        return np.array([w.c[i] for i in range(64)], dtype=np.int64)
    if w.view == 48:             # a 48-bit cell holds its lane modulo 2^48 (q7regs.pxd): sign-extend it
        return np.array([sext(w.c[i], 48) for i in range(32)], dtype=np.int64)
    return [(int(w.c[2 * i + 1]) << 64) | (int(w.c[2 * i]) & 0xFFFFFFFFFFFFFFFF) for i in range(16)]


cdef wvec_t _win(object lanes, int view, str name="wv") except *:
    """Lanes of `view` bits (integers, each its signed or its unsigned value: -2^(view-1) .. 2^view - 1) -> wvec.
    A lane outside that range is refused, naming it, as an 8/16/32-bit vec lane that does not fit its dtype is: a
    96-bit lane given 2^200 was wrapped silently (docs/limits.md §2)."""
    cdef wvec_t w
    if view not in (24, 48, 96):
        raise InvalidArgument("view", view, "a wvec lane view is 24, 48 or 96 bits")
    cdef int n = {24: 64, 48: 32, 96: 16}[view]
    arr = np.asarray(lanes, dtype=object) if not isinstance(lanes, np.ndarray) else lanes
    if arr.ndim != 1 or len(arr) != n:
        raise InvalidArgument(name, getattr(arr, "shape", None), f"a {view}-bit wvec view has {n} lanes")
    if isinstance(arr, np.ndarray) and arr.dtype != object and arr.dtype.kind not in "iu":
        raise InvalidArgument(name, str(arr.dtype), "wvec lanes must be integers")
    vals = []
    cdef object bits = <object>view          # Python ints: 1 << 96 does not fit a C int
    lo, hi = -(1 << (bits - 1)), (1 << bits) - 1
    for k, x in enumerate(arr):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
            raise InvalidArgument(name, type(x).__name__, "wvec lanes must be integers")
        v = int(x)
        if not lo <= v <= hi:
            raise InvalidArgument(f"{name}[{k}]", v if v.bit_length() <= 128 else f"an int of {v.bit_length()} bits",
                                  f"a {view}-bit wvec lane must lie in -2^{view - 1}..2^{view}-1 (its signed or "
                                  "unsigned value)")
        vals.append(v)
    modulus = 1 << int(view)
    raw = bytearray()
    for x in vals:
        raw += (x % modulus).to_bytes(view // 8, "little")
    cdef const uint8_t[::1] b = bytes(raw)
    wvec_from_raw(&w, &b[0], view)
    return w


def wvec_raw(lanes, view):
    """Pack wvec lanes of `view` bits (24/48/96; each in -2^(view-1)..2^view - 1) into the 192-byte architectural
    image (bytes).
    docs/firmware.md §6.1 wvec lane views; provenance: SPEC HIGH (1:1 lane correspondence), q7emu choice (image)."""
    cdef wvec_t w
    try:
        w = _win(lanes, _imm(view, 0, 96, "view"))
    except InvalidArgument:
        raise
    except (TypeError, ValueError, OverflowError) as e:
        raise _invalid("lanes", e) from None
    cdef uint8_t raw[192]
    wvec_to_raw(&w, raw)
    return bytes(raw[:192])


def wvec_view(raw, view):
    """Read a 192-byte wvec image in lane view `view` (24/48/96); the inverse of wvec_raw.
    docs/firmware.md §6.1 wvec lane views; provenance: q7emu choice (image layout)."""
    cdef wvec_t w
    if not isinstance(raw, (bytes, bytearray, memoryview, np.ndarray)):
        raise InvalidArgument("raw", type(raw).__name__, "a wvec image is 192 bytes (bytes-like or uint8 array)")
    if isinstance(raw, np.ndarray) and raw.dtype != np.uint8:
        raise InvalidArgument("raw", str(raw.dtype), "a wvec image array is uint8")
    data = np.ascontiguousarray(raw).tobytes() if isinstance(raw, np.ndarray) else bytes(raw)
    cdef int v = _imm(view, 0, 96, "view")
    if len(data) != 192 or v not in (24, 48, 96):
        raise InvalidArgument("raw", len(data), "a wvec image is 192 bytes; view is 24, 48 or 96")
    cdef const uint8_t[::1] b = data
    wvec_from_raw(&w, &b[0], v)
    return _wout(&w)


# ------------------------------------------------------------------ narrowed accumulators
def _narrowed(mnemonic, width, cells, va, vb, pr=0, sh=0):
    """Test hook (docs/asm.md §9): run ``mnemonic`` on a narrowed accumulator of 32 ``width``-bit cells (16 or 32;
    ``cells``: 32 ints, each lane modulo 2^width; a 96-bit-lane op's 16 lanes in the first 16), ``va`` / ``vb`` uint16
    [32] (a 4-tap MAC's hi, lo; a product's 32-bit lanes as their halves), ``pr`` an int, ``sh`` a pack's shift.
    Returns (the cells after: int [32], the pack's output uint16 [32])."""
    cdef wcells16_t c16
    cdef wcells32_t c32
    cdef vec_t a = _vec(np.asarray(va, np.uint16), "u16", "va"), b = _vec(np.asarray(vb, np.uint16), "u16", "vb")
    cdef vec_t vt
    cdef int k, i
    cdef pr_t p = _pr(pr)
    cdef int shift = _imm(sh, 0, 63, "sh")
    cdef str name = str(mnemonic)
    memset(&vt, 0, sizeof(vt))
    if width not in (16, 32) or len(cells) != 32:
        raise InvalidArgument("width", width, "a narrowed accumulator has 32 cells of 16 or 32 bits")
    for k in range(32):
        c16.c[k] = <uint16_t>(int(cells[k]) & 0xFFFF)
        c32.c[k] = <uint32_t>(int(cells[k]) & 0xFFFFFFFF)
    if name not in _NARROWED_INDEX:
        raise InvalidArgument("mnemonic", name, "an op whose op-table row narrows (optable.Op.narrows)")
    code, i = _NARROWED_INDEX[name]    # the generated tables (_ivp_table.pxi): MAC (Wvvp), product (Wvv), pack (VWi)
    if code == "VWi" and width == 16:
        _N16_VWi[i](&vt, &c16, shift)
    elif code == "VWi":
        _N32_VWi[i](&vt, &c32, shift)
    elif code == "Wvv" and width == 16:
        _N16_Wvv[i](&c16, &a, &b)
    elif code == "Wvv":
        _N32_Wvv[i](&c32, &a, &b)
    elif width == 16:
        _N16_Wvvp[i](&c16, &a, &b, p)
    else:
        _N32_Wvvp[i](&c32, &a, &b, p)
    out = [int(c16.c[k]) if width == 16 else int(c32.c[k]) for k in range(32)]
    return out, np.array([vt.u16[k] for k in range(32)], np.uint16)


# ------------------------------------------------------------------ lookup chunks
def _chunk_form(mnemonic, hi, lo, sel, chunks, vb=0xFFFFFFFFFFFFFFFF, odd_old=None, even_old=None):
    """Test hook (docs/asm.md §9, lookup chunks): run the chunk form of ``mnemonic`` (selnx16, dselnx16, dselnx16t:
    optable.Op.chunk_form) on ``hi``, ``lo``, ``sel`` (uint16 [32]) with ``chunks`` (selnx16: (c,); the dual selects:
    (c_even, c_odd); each 0..3), ``vb`` the predicate of dselnx16t (an int, 64 bits), ``odd_old`` / ``even_old`` its
    old outputs (uint16 [32], default zeros). Returns what the op's wrapper returns: vt, or (odd, even), uint16 [32]."""
    cdef vec_t h = _vec(np.asarray(hi, np.uint16), "u16", "hi"), low = _vec(np.asarray(lo, np.uint16), "u16", "lo")
    cdef vec_t s = _vec(np.asarray(sel, np.uint16), "u16", "sel")
    cdef vec_t zeros
    memset(&zeros, 0, sizeof(zeros))
    cdef vec_t odd = zeros if odd_old is None else _vec(np.asarray(odd_old, np.uint16), "u16", "odd_old")
    cdef vec_t even = zeros if even_old is None else _vec(np.asarray(even_old, np.uint16), "u16", "even_old")
    cdef vbool_t p = <vbool_t>(int(vb) & 0xFFFFFFFFFFFFFFFF)
    cdef str name = str(mnemonic)
    cs = tuple(chunks)
    if name not in ("selnx16", "dselnx16", "dselnx16t"):
        raise InvalidArgument("mnemonic", name, "an op whose op-table row has a chunk form (optable.Op.chunk_form)")
    if len(cs) != (1 if name == "selnx16" else 2) or not all(isinstance(c, int) and 0 <= c <= 3 for c in cs):
        raise InvalidArgument("chunks", cs, "one chunk (selnx16) or two (c_even, c_odd), each 0..3")
    if name == "selnx16":
        P.selnx16_chunk(&odd, &h, &low, &s, cs[0])
        return np.array([odd.u16[k] for k in range(32)], np.uint16)
    if name == "dselnx16":
        P.dselnx16_chunk(&odd, &even, &h, &low, &s, cs[0], cs[1])
    else:
        P.dselnx16t_chunk(&odd, &even, &h, &low, &s, p, cs[0], cs[1])
    return np.array([odd.u16[k] for k in range(32)], np.uint16), np.array([even.u16[k] for k in range(32)], np.uint16)


# ------------------------------------------------------------------ lane-mask predicates
#: the ops _lane_mask runs: every op whose op-table row takes a lane mask (optable.Op.lane_mask; a test checks)
_LANE_MASK_OPS = ("oltnxf16t", "ultn_2xf32t", "babssubunx16", "movnx16t", "mov2nx8t", "negnxf16t", "movn_2x32t",
                  "eqn_2x32", "neqnx16")


def _lane_mask(mnemonic, va, vr, vb, vbp=0):
    """Test hook (docs/asm.md §9, lane masks): run ``mnemonic`` twice on the same operands, its lane-mask operand
    once a vbool and once a lane mask (vmask_t) made from the same vbool ``vb`` (an int, 64 bits: every bit, a
    lane's upper ones too); ``va`` / ``vr`` uint16 [32] its vec operands in C order (a merge's old vt and vs), ``vbp``
    a compare's governing vbool (an int). Returns ((the vbool after: int, the vec output: uint16 [32]) of the vbool
    form, (the lane mask after: uint8 [64], the vec output) of the lane-mask form)."""
    cdef vec_t a = _vec(np.asarray(va, np.uint16), "u16", "va"), b = _vec(np.asarray(vr, np.uint16), "u16", "vr")
    cdef vec_t out_bits = a, out_mask = a
    cdef vbool_t bits = <vbool_t>(int(vb) & 0xFFFFFFFFFFFFFFFF)
    cdef vbool_t p = <vbool_t>(int(vbp) & 0xFFFFFFFFFFFFFFFF)
    cdef vmask_t m
    cdef str name = str(mnemonic)
    q7_bits_to_bytes(bits, m.m.u8)
    if name == "oltnxf16t":
        P.oltnxf16t(&bits, &a, &b, p)
        P.oltnxf16t(&m, &a, &b, p)
    elif name == "ultn_2xf32t":
        P.ultn_2xf32t(&bits, &a, &b, p)
        P.ultn_2xf32t(&m, &a, &b, p)
    elif name == "babssubunx16":
        P.babssubunx16(&bits, &out_bits, &a, &b)
        P.babssubunx16(&m, &out_mask, &a, &b)
    elif name == "movnx16t":
        P.movnx16t(&out_bits, &b, bits)
        P.movnx16t(&out_mask, &b, &m)
    elif name == "mov2nx8t":
        P.mov2nx8t(&out_bits, &b, bits)
        P.mov2nx8t(&out_mask, &b, &m)
    elif name == "negnxf16t":
        P.negnxf16t(&out_bits, &b, bits)
        P.negnxf16t(&out_mask, &b, &m)
    elif name == "movn_2x32t":
        P.movn_2x32t(&out_bits, &b, bits)
        P.movn_2x32t(&out_mask, &b, &m)
    elif name == "eqn_2x32":
        P.eqn_2x32(&bits, &a, &b)
        P.eqn_2x32(&m, &a, &b)
    elif name == "neqnx16":
        P.neqnx16(&bits, &a, &b)
        P.neqnx16(&m, &a, &b)
    else:
        raise InvalidArgument("mnemonic", name, "an op whose op-table row takes a lane mask (optable.Op.lane_mask)")
    vec_bits = np.array([out_bits.u16[k] for k in range(32)], np.uint16)
    vec_mask = np.array([out_mask.u16[k] for k in range(32)], np.uint16)
    return (int(bits), vec_bits), (np.array([m.m.u8[k] for k in range(64)], np.uint8), vec_mask)


# ------------------------------------------------------------------ memory and the unaligned stream
cdef uint8_t _EMPTY[64]


def _as_buf(mem):
    try:
        arr = np.asarray(mem)
    except (TypeError, ValueError, OverflowError) as e:
        raise _invalid("mem", e) from None
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise InvalidArgument("mem", str(arr.dtype) if arr.ndim == 1 else arr.shape, "memory must be a 1-D uint8 array")
    return np.ascontiguousarray(arr)


def la2nx8_stream(mem, off, count):
    """Unaligned streaming protocol: la2nx8_pp (prime valign) then `count` la2nx8_ip loads from off;
    each output byte j = byte (off%64 + j) of {carry row || next aligned row}. Rows past the end of the
    buffer read as zeros, but every output vector must start inside it: 0 <= off <= len(mem) and
    off + 64*(count-1) < len(mem) when count > 0 (checked in Python integers, before any C code).
    docs/firmware.md §6.2 Loads (B06), docs/anchors.md §7 (LA_PP / LAV_XP); provenance: SPEC HIGH"""
    buf = _as_buf(mem)
    cdef Py_ssize_t o0 = _scalar(off, "off")
    cdef Py_ssize_t n = _scalar(count, "count")
    cdef Py_ssize_t nbuf = len(buf)
    if o0 < 0 or o0 > nbuf:
        raise InvalidArgument("off", o0, f"the stream offset must lie in [0, {nbuf}] (the buffer)")
    # (nbuf - 1 - o0 >= 0 whenever it is divided: no negative C division, no overflow)
    if n < 0 or n > 0 and (o0 >= nbuf or n - 1 > (nbuf - 1 - o0) // 64):
        raise InvalidArgument("count", n, f"every output vector must start inside the {nbuf}-byte buffer "
                                          f"(at most {0 if o0 >= nbuf else (nbuf - 1 - o0) // 64 + 1} from "
                                          f"offset {o0})")
    cdef Py_ssize_t base_row = o0 & ~(<Py_ssize_t>63)
    cdef Py_ssize_t need_end = base_row + 64 * (n + 1)
    padded = np.zeros(max(need_end, len(buf)), dtype=np.uint8)
    padded[:len(buf)] = buf
    cdef uint8_t[::1] k = padded
    cdef valign_t u
    cdef vec_t t
    cdef Py_ssize_t o = o0
    out = []
    P.la2nx8_pp(&u, &k[0], o)
    for _ in range(n):
        P.la2nx8_ip(&t, &u, &k[0], &o)
        out.append(_out(&t, "u8"))
    return out, o


# ------------------------------------------------------------------ the table-driven wrappers
cdef struct _Slots:
    vec_t v[8]
    wvec_t w[2]
    vbool_t b[4]
    pr_t p[2]
    valign_t u[1]
    int i[4]
    Py_ssize_t s[4]
    uint8_t* m

include "_ivp_table.pxi"
_fill_tables()
_fill_narrowed_tables()

cdef enum:
    K_VEC, K_WVEC, K_VBOOL, K_PR, K_VALIGN, K_IMM, K_SCALAR, K_MEM
_KIND = {_T.VEC: K_VEC, _T.WVEC: K_WVEC, _T.VBOOL: K_VBOOL, _T.PR: K_PR, _T.VALIGN: K_VALIGN, _T.IMM: K_IMM,
         _T.SCALAR: K_SCALAR, _T.MEMORY: K_MEM}

#: immediates whose sel2nx8i lane maps q7emu models (see ivp_select.pxd)
SEL2NX8I_IMMS = _T.SEL2NX8I_IMMS


cdef class _Plan:
    """One op's operand handling, precomputed from its table record."""
    cdef readonly str mnemonic
    cdef int sig, idx
    cdef tuple ins          # per argument: (kind, slot, name, lane kind, lanes, lo, hi, values, optional, bits)
    cdef tuple outs         # per returned operand: (kind, slot, lane kind, lanes, (arg position, mask) or None)
    cdef int mem_arg, off_slot, n_slot, inc_slot
    cdef bint store
    cdef str touches
    cdef Py_ssize_t fixed_need  # bytes from off an op of a numeric `touches` reads or writes

    def __init__(self, op):
        self.mnemonic = op.mnemonic
        self.sig, self.idx = _OP_INDEX[op.mnemonic]
        slots = dict(zip([id(o) for o in op.operands], _G.slot_of(op)))
        argpos = {o.argname: j for j, o in enumerate(op.args)}
        ins = []
        self.mem_arg, self.off_slot, self.n_slot, self.touches, self.store = -1, -1, -1, "64", False
        self.inc_slot = -1      # the scalar added to a post-incremented offset (inc, n, stride)
        for j, o in enumerate(op.args):
            bits = int(o.view[4:]) if o.kind == _T.WVEC else 0
            ins.append((_KIND[o.kind], slots[id(o)], o.argname, _G.LANE_KIND.get(o.dtype, ""), o.lanes,
                        o.lo, o.hi, o.values, o.optional, bits))
            if o.kind == _T.MEMORY:
                self.mem_arg, self.touches, self.store = j, str(o.touches), o.role != _T.SRC
            elif o.kind == _T.SCALAR and o.name == "off":
                self.off_slot = slots[id(o)]
            elif o.kind == _T.SCALAR and o.name == "n":
                self.n_slot = slots[id(o)]
            if o.kind == _T.SCALAR and o.name != "off":
                self.inc_slot = slots[id(o)]
        self.ins = tuple(ins)
        self.fixed_need = 64
        if self.mem_arg >= 0:       # a memory op the bounds check cannot cover is a table error: fail at import
            if self.off_slot < 0 or (self.touches == "n" and self.n_slot < 0):
                raise ValueError(f"{op.mnemonic}: a memory op needs an 'off' scalar (and 'n' for touches='n')")
            if self.touches.isdigit():
                self.fixed_need = int(self.touches)
            elif self.touches not in ("n", "row", "row2"):
                raise ValueError(f"{op.mnemonic}: touches={self.touches!r} is not checked by _membuf")
            if op.operand("off").role == _T.SRC:
                self.inc_slot = -1  # the offset is not post-incremented
        outs = []
        for o in op.returns:
            sw = o.signed_when_arg
            outs.append((_KIND[o.kind], slots[id(o)], _G.LANE_KIND.get(o.dtype, ""), o.lanes,
                         (argpos[sw[0]], sw[1]) if sw else None))
        self.outs = tuple(outs)


cdef Py_ssize_t _scalar(object x, str name) except? -1:
    """A byte offset, increment, length or count: an int of the signed 64-bit range (checked as a Python int,
    so nothing wraps or overflows)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise InvalidArgument(name, type(x).__name__, "must be an int (a byte offset, increment or length)")
    v = int(x)
    if not -PY_SSIZE_T_MAX - 1 <= v <= PY_SSIZE_T_MAX:
        raise InvalidArgument(name, v, "must fit a signed 64-bit integer (Py_ssize_t)")
    return <Py_ssize_t>v


cdef object _membuf(_Plan plan, object mem, _Slots* x):
    """The memory argument as a contiguous 1-D uint8 array whose bytes the op touches (checked), with slot
    m pointing at it. A store target must already be such an array (it is written in place)."""
    cdef Py_ssize_t off = x.s[plan.off_slot]
    cdef Py_ssize_t start = off, need = plan.fixed_need
    cdef Py_ssize_t inc = x.s[plan.inc_slot] if plan.inc_slot >= 0 else 0
    cdef uint8_t[::1] view
    if plan.store:
        if not isinstance(mem, np.ndarray) or mem.dtype != np.uint8 or mem.ndim != 1 or not mem.flags.c_contiguous:
            raise InvalidArgument("mem", type(mem).__name__, "store target must be a contiguous 1-D uint8 array")
        buf = mem
    else:
        buf = _as_buf(mem)
    if plan.touches == "n":
        need = min(max(x.s[plan.n_slot], 0), 64)
        inc = need                         # a variable-length op advances by the bytes it moves (docs/model.md §8.9)
    elif plan.touches == "row" or plan.touches == "row2":
        start = off & ~(<Py_ssize_t>63)
        need = 64 if plan.touches == "row" else 128
    # overflow-safe: off >= 0 is checked first, and len(buf) - need >= -128 cannot wrap
    if off < 0 or start > <Py_ssize_t>len(buf) - need:
        raise InvalidArgument("off", off, f"the op touches bytes [{start}, {int(start) + need}) of a "
                                          f"{len(buf)}-byte buffer")
    if inc > PY_SSIZE_T_MAX - off:         # the post-incremented offset (off >= 0 here: no overflow)
        raise InvalidArgument("inc", inc, f"the post-incremented offset {off} + {inc} must fit a signed 64-bit "
                                          "integer")
    view = buf
    if view.shape[0] == 0:
        x.m = &_EMPTY[0]
    else:
        x.m = &view[0]
    return buf


def _invoke(_Plan plan, tuple args):
    """Validate every argument into its operand slot, call the primitive (nogil), return its outputs.

    Every bad operand raises InvalidArgument naming it and the rule, before any nogil code: a plain
    TypeError / ValueError / OverflowError raised while an operand is converted (by numpy or int()) becomes
    one too."""
    cdef _Slots x
    cdef int sig = plan.sig, idx = plan.idx
    memset(&x, 0, sizeof(x))
    name = "mem"
    try:
        for spec, a in zip(plan.ins, args):
            name = spec[2]
            _operand(plan, &x, spec, a)
        name = "mem"
        _keep_buf = _membuf(plan, args[plan.mem_arg], &x) if plan.mem_arg >= 0 else None    # keeps the buffer alive
    except InvalidArgument:
        raise
    except (TypeError, ValueError, OverflowError) as e:
        raise _invalid(name, e) from None
    with nogil:
        _dispatch(sig, idx, &x)
    return _outputs(plan, &x, args)


cdef object _invalid(str name, BaseException e):
    """The InvalidArgument of a plain Python error raised while operand ``name`` was converted."""
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return InvalidArgument(name, type(e).__name__, f"not a valid operand ({text})")


cdef int _operand(_Plan plan, _Slots* x, tuple spec, object a) except -1:
    """Validate one argument into its operand slot (InvalidArgument naming it and the rule)."""
    cdef int kind, slot
    kind, slot, name, lk, lanes, lo, hi, values, optional, bits = spec
    if kind == K_VEC:
        x.v[slot] = _vec(a, lk, name)
    elif kind == K_VBOOL:
        x.b[slot] = _vb(a, lanes, name)
    elif kind == K_WVEC:
        x.w[slot] = _win([0] * lanes if (optional and a is None) else a, bits, name)
    elif kind == K_PR:
        x.p[slot] = _pr(a, name)
    elif kind == K_IMM:
        x.i[slot] = _imm(a, lo, hi, name)
        if values and x.i[slot] not in values:
            raise InvalidArgument(name, x.i[slot], f"{plan.mnemonic} immediates modelled: {list(values)}")
    elif kind == K_SCALAR:
        x.s[slot] = _scalar(a, name)
    elif kind == K_VALIGN:
        x.v[7] = _vec(a, "u8", name)          # (no op has 8 vec operands and a valign)
        memcpy(x.u[slot].row, x.v[7].u8, 64)
    return 0


cdef object _outputs(_Plan plan, _Slots* x, tuple args):
    """The op's returned operands, read from the slots after the call."""
    cdef int kind, slot
    out = []
    for kind, slot, lk, lanes, signed in plan.outs:
        if kind == K_VEC:
            out.append(_out(&x.v[slot], ("s" + lk[1:]) if signed is not None and args[signed[0]] & signed[1] else lk))
        elif kind == K_VBOOL:
            out.append(_vbout(x.b[slot], lanes))
        elif kind == K_WVEC:
            out.append(_wout(&x.w[slot]))
        elif kind == K_PR:
            out.append(int(x.p[slot]))
        elif kind == K_SCALAR:
            out.append(x.s[slot])
        else:
            out.append(np.frombuffer(bytes(x.u[slot].row[:64]), dtype=np.uint8).copy())
    return out[0] if len(out) == 1 else tuple(out)


def _make_wrapper(op):
    """The Python wrapper of one op: signature, docstring and annotations from its table record."""
    name = _G.wrapper_name(op)
    ns = {"_invoke": _invoke, "_PLAN": _Plan(op), "np": np, "npt": npt, "Sequence": Sequence}
    exec(_G.wrapper_source(op), ns)
    fn = ns[name]
    fn.__doc__ = _G.docstring(op)
    fn.__annotations__ = {**dict(_G.arg_types(op)), "return": _G.return_type(op)}
    fn.__module__ = __name__
    fn.__qualname__ = name
    return fn


for _op in _T.ALL_OPS:
    globals()[_G.wrapper_name(_op)] = _make_wrapper(_op)
del _op
__all__ = [o.mnemonic for o in _T.OPS] + ["SEL2NX8I_IMMS", "wvec_raw", "wvec_view", "la2nx8_stream", "time_op"]


# ------------------------------------------------------------------ cost of one primitive in C
#: the most iterations time_op runs (its nogil loop cannot be interrupted: docs/limits.md §2)
TIME_OP_MAX_ITERATIONS = 100_000_000


def time_op(mnemonic, iterations=100000):
    """Mean wall time of one call of primitive `mnemonic` in a nogil C loop, in ns per 512-bit op.

    Each call writes a register distinct from its sources and the next call reads it (the two
    registers swap roles: no dead code, whole-vector dependencies); the call is indirect (the op
    table's typed function pointer), so the figure includes one function-pointer call (~1-2 ns) and no
    Python overhead. Covers the register-to-register signatures (vec / vbool / wvec / pr operands; an
    immediate takes the op table's example value, a wvec starts zero in the op's lane view); memory
    ops are not timed here. Returns None for a mnemonic of another signature or none of the table.
    ``iterations``: 1..TIME_OP_MAX_ITERATIONS (InvalidArgument otherwise: the loop runs without the GIL, so
    Ctrl-C cannot stop it).
    """
    import time
    if not isinstance(mnemonic, str):
        raise InvalidArgument("mnemonic", type(mnemonic).__name__, "must be a str (an op-table mnemonic)")
    if isinstance(iterations, (bool, np.bool_)) or not isinstance(iterations, (int, np.integer)) \
            or not 1 <= int(iterations) <= TIME_OP_MAX_ITERATIONS:
        raise InvalidArgument("iterations", iterations if isinstance(iterations, (int, np.integer)) else
                              type(iterations).__name__, f"must be an int in [1, {TIME_OP_MAX_ITERATIONS}]")
    cdef Py_ssize_t n_iter = int(iterations)
    if mnemonic not in _OP_INDEX:
        return None
    op = _T.op(mnemonic)
    cdef int s = _OP_INDEX[mnemonic][0], i = _OP_INDEX[mnemonic][1]
    if s not in (SIG_Vvv, SIG_BVvv, SIG_Bvv, SIG_Vvb, SIG_Vvi, SIG_Vvvv, SIG_Bvvb, SIG_Wvvp, SIG_VWi, SIG_Vvvi,
                 SIG_VVvvv, SIG_Vvib, SIG_Vv, SIG_VW, SIG_Wvv, SIG_VVvvvb):
        return None
    imms = [o.example for o in op.operands if o.kind == _T.IMM]
    views = [int(o.view[4:]) for o in op.operands if o.kind == _T.WVEC]
    cdef int imm = imms[0] if imms else 0
    cdef vec_t a, b, c, d
    cdef wvec_t w
    cdef vbool_t vb = 0x5555555555555555
    cdef pr_t pr = 0x0001000200034000
    cdef Py_ssize_t _it
    cdef int k
    for k in range(64):
        a.u8[k] = <uint8_t>(k * 7 + 3)
        b.u8[k] = <uint8_t>(k * 13 + 1)
        c.u8[k] = <uint8_t>(k & 63)
        d.u8[k] = <uint8_t>(k * 5)
    wvec_zero(&w, views[0] if views else 48)
    cdef vec_t* src = &a
    cdef vec_t* dst = &d
    cdef vec_t* tmp
    # the op's table entry in a local (an indirect call may write any global: no reload per iteration)
    cdef sig_Vvv_t f_Vvv = _T_Vvv[i] if s == SIG_Vvv else NULL
    cdef sig_BVvv_t f_BVvv = _T_BVvv[i] if s == SIG_BVvv else NULL
    cdef sig_Bvv_t f_Bvv = _T_Bvv[i] if s == SIG_Bvv else NULL
    cdef sig_Vvb_t f_Vvb = _T_Vvb[i] if s == SIG_Vvb else NULL
    cdef sig_Vvi_t f_Vvi = _T_Vvi[i] if s == SIG_Vvi else NULL
    cdef sig_Vvvv_t f_Vvvv = _T_Vvvv[i] if s == SIG_Vvvv else NULL
    cdef sig_Bvvb_t f_Bvvb = _T_Bvvb[i] if s == SIG_Bvvb else NULL
    cdef sig_Wvvp_t f_Wvvp = _T_Wvvp[i] if s == SIG_Wvvp else NULL
    cdef sig_Wvv_t f_Wvv = _T_Wvv[i] if s == SIG_Wvv else NULL
    cdef sig_VWi_t f_VWi = _T_VWi[i] if s == SIG_VWi else NULL
    cdef sig_VW_t f_VW = _T_VW[i] if s == SIG_VW else NULL
    cdef sig_Vvvi_t f_Vvvi = _T_Vvvi[i] if s == SIG_Vvvi else NULL
    cdef sig_VVvvv_t f_VVvvv = _T_VVvvv[i] if s == SIG_VVvvv else NULL
    cdef sig_VVvvvb_t f_VVvvvb = _T_VVvvvb[i] if s == SIG_VVvvvb else NULL
    cdef sig_Vvib_t f_Vvib = _T_Vvib[i] if s == SIG_Vvib else NULL
    cdef sig_Vv_t f_Vv = _T_Vv[i] if s == SIG_Vv else NULL
    t0 = time.perf_counter_ns()
    with nogil:
        for _it in range(n_iter):
            if s == SIG_Vvv:
                f_Vvv(dst, src, &b)
            elif s == SIG_BVvv:
                f_BVvv(&vb, dst, src, &b)
            elif s == SIG_Bvv:
                f_Bvv(&vb, &a, &b)
                a.u8[0] ^= <uint8_t>vb
            elif s == SIG_Vvb:
                f_Vvb(dst, src, vb)
            elif s == SIG_Vvi:
                f_Vvi(dst, src, imm)
            elif s == SIG_Vvvv:
                f_Vvvv(dst, src, &b, &c)
            elif s == SIG_Bvvb:
                f_Bvvb(&vb, &a, &b, vb | 1)
                a.u8[0] ^= <uint8_t>vb
            elif s == SIG_Wvvp:
                f_Wvvp(&w, &a, &b, pr)
                a.u8[0] ^= <uint8_t>w.c[0]
            elif s == SIG_Wvv:
                f_Wvv(&w, &a, &b)
                a.u8[0] ^= <uint8_t>w.c[0]
            elif s == SIG_VWi:
                f_VWi(dst, &w, imm)
            elif s == SIG_VW:
                f_VW(dst, &w)
            elif s == SIG_Vvvi:
                f_Vvvi(dst, src, &b, imm)
            elif s == SIG_VVvvv:
                f_VVvvv(dst, &c, src, &b, &c)
            elif s == SIG_VVvvvb:
                f_VVvvvb(dst, &c, src, &b, &c, vb)
            elif s == SIG_Vvib:
                f_Vvib(dst, src, imm, vb)
            else:
                f_Vv(dst, src)
            tmp = src
            src = dst
            dst = tmp
    t1 = time.perf_counter_ns()
    return (t1 - t0) / n_iter
