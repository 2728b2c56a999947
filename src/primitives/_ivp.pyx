# cython: language_level=3
"""Python access to every IVP primitive (q7emu.ivp.<mnemonic>), for tests and exploration.

Operands are numpy arrays in the op's lane dtype: int8/uint8 [64], int16/uint16 [32], int32/uint32
[16], float16 [32] (NXF16), float32 [16] (N_2XF32); vbool as bool [lanes] (one entry per lane of
the op's width); wvec lanes as int64 [64 | 32] (24/48-bit views) or a list of 16 Python ints
(96-bit view); pr as a Python int in [0, 2^64). Multi-output ops return a tuple in disassembly
order (flags first for bmin/bmax). Memory ops take a uint8 buffer and a byte offset and return
the new offset. Every wrapper validates its operands before calling the nogil primitive.

Each docstring's first line is the op's semantics; its second line names the SPEC section and the
provenance: `SPEC HIGH` / `SPEC MED` (a firmware fact at that confidence) or `q7emu choice`.
"""
import numpy as np
from libc.stdint cimport uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t
from libc.string cimport memcpy, memset
from q7regs cimport vec_t, wvec_t, vbool_t, pr_t, valign_t, wvec_to_raw, wvec_from_raw, sext
cimport q7ivp as P

from q7emu.errors import InvalidArgument


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
    dt, n = _LANES[kind]
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


cdef pr_t _pr(object p, str name="pr") except *:
    if not isinstance(p, (int, np.integer)) or not 0 <= int(p) < 2 ** 64:
        raise InvalidArgument(name, p, "pr must be an int in [0, 2^64)")
    return <pr_t>int(p)


cdef int _imm(object i, int lo, int hi, str name) except? -1:
    if not isinstance(i, (int, np.integer)) or not lo <= int(i) <= hi:
        raise InvalidArgument(name, i, f"immediate must be an int in [{lo}, {hi}]")
    return <int>i


cdef object _wout(wvec_t* w):
    """wvec -> int64 [64] (24-bit), int64 [32] (48-bit) or 16 Python ints (96-bit) in its view."""
    cdef int i
    if w.view == 24:
        return np.array([w.c[i] for i in range(64)], dtype=np.int64)
    if w.view == 48:
        return np.array([w.c[i] for i in range(32)], dtype=np.int64)
    return [(int(w.c[2 * i + 1]) << 64) | (int(w.c[2 * i]) & 0xFFFFFFFFFFFFFFFF) for i in range(16)]


cdef wvec_t _win(object lanes, int view, str name="wv") except *:
    """Lanes of `view` bits (integers; wrapped modulo 2^view) -> wvec."""
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
    for x in arr:
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
            raise InvalidArgument(name, type(x).__name__, "wvec lanes must be integers")
        vals.append(int(x))
    modulus = 1 << int(view)
    raw = bytearray()
    for x in vals:
        raw += (x % modulus).to_bytes(view // 8, "little")
    cdef const uint8_t[::1] b = bytes(raw)
    wvec_from_raw(&w, &b[0], view)
    return w


def wvec_raw(lanes, int view):
    """Pack wvec lanes of `view` bits (24/48/96) into the 192-byte architectural image (bytes).
    SPEC §6.1 wvec lane views; provenance: SPEC HIGH (1:1 lane correspondence), q7emu choice (image)."""
    cdef wvec_t w = _win(lanes, view)
    cdef uint8_t raw[192]
    wvec_to_raw(&w, raw)
    return bytes(raw[:192])


def wvec_view(raw, int view):
    """Read a 192-byte wvec image in lane view `view` (24/48/96); the inverse of wvec_raw.
    SPEC §6.1 wvec lane views; provenance: q7emu choice (image layout)."""
    cdef wvec_t w
    cdef const uint8_t[::1] b = bytes(raw)
    if len(b) != 192 or view not in (24, 48, 96):
        raise InvalidArgument("raw", len(b), "a wvec image is 192 bytes; view is 24, 48 or 96")
    wvec_from_raw(&w, &b[0], view)
    return _wout(&w)


# ------------------------------------------------------------------ generic shapes
ctypedef void (*vvv_fn)(vec_t*, const vec_t*, const vec_t*) noexcept nogil
ctypedef void (*vvvv_fn)(vec_t*, const vec_t*, const vec_t*, const vec_t*) noexcept nogil
ctypedef void (*vvi_fn)(vec_t*, const vec_t*, int) noexcept nogil
ctypedef void (*bvv_fn)(vbool_t*, vec_t*, const vec_t*, const vec_t*) noexcept nogil
ctypedef void (*cmp_fn)(vbool_t*, const vec_t*, const vec_t*) noexcept nogil
ctypedef void (*mov_fn)(vec_t*, const vec_t*, vbool_t) noexcept nogil
ctypedef void (*fcmp_fn)(vbool_t*, const vec_t*, const vec_t*, vbool_t) noexcept nogil
ctypedef void (*mac4_fn)(wvec_t*, const vec_t*, const vec_t*, pr_t) noexcept nogil
ctypedef void (*pack_fn)(vec_t*, wvec_t*, int) noexcept nogil
ctypedef void (*packl_fn)(vec_t*, wvec_t*) noexcept nogil

cdef object _vvv(vvv_fn f, a, b, str kind):
    cdef vec_t x = _vec(a, kind, "vs"), y = _vec(b, kind, "vr"), t
    f(&t, &x, &y)
    return _out(&t, kind)

cdef object _vvi(vvi_fn f, a, imm, int lo, int hi, str kind):
    cdef vec_t x = _vec(a, kind, "vs"), t
    cdef int i = _imm(imm, lo, hi, "imm")
    f(&t, &x, i)
    return _out(&t, kind)

cdef object _bvv(bvv_fn f, a, b, str kind):
    cdef vec_t x = _vec(a, kind, "va"), y = _vec(b, kind, "vb"), t
    cdef vbool_t fl = 0
    f(&fl, &t, &x, &y)
    return _vbout(fl, _LANES[kind][1]), _out(&t, kind)

cdef object _cmp(cmp_fn f, a, b, str kind):
    cdef vec_t x = _vec(a, kind, "vs"), y = _vec(b, kind, "vr")
    cdef vbool_t r = 0
    f(&r, &x, &y)
    return _vbout(r, _LANES[kind][1])

cdef object _mov(mov_fn f, old, a, m, str kind):
    cdef vec_t t = _vec(old, kind, "vt"), x = _vec(a, kind, "vs")
    cdef vbool_t b = _vb(m, _LANES[kind][1], "vb")
    f(&t, &x, b)
    return _out(&t, kind)

cdef object _fcmp(fcmp_fn f, old, a, b, m, str kind):
    cdef int n = _LANES[kind][1]
    cdef vbool_t r = _vb(old, n, "vb_old")
    cdef vec_t x = _vec(a, kind, "va"), y = _vec(b, kind, "vr")
    f(&r, &x, &y, _vb(m, n, "vbp"))
    return _vbout(r, n)

cdef object _mac4(mac4_fn f, acc, a, b, p, str kind):
    cdef wvec_t w
    if acc is None:
        w = _win([0] * 32, 48)
    else:
        w = _win(acc, 48, "acc")
    cdef vec_t x = _vec(a, kind, "va"), y = _vec(b, kind, "vb")
    f(&w, &x, &y, _pr(p))
    return _wout(&w)

cdef object _pack(pack_fn f, acc, int view, sh, str kind):
    cdef wvec_t w = _win(acc, view, "wv")
    cdef vec_t t
    f(&t, &w, _imm(sh, 0, 63, "sh"))
    return _out(&t, kind)

cdef object _packl(packl_fn f, acc, int view, str kind):
    cdef wvec_t w = _win(acc, view, "wv")
    cdef vec_t t
    f(&t, &w)
    return _out(&t, kind)


# ------------------------------------------------------------------ loads / stores
cdef uint8_t _EMPTY[64]

cdef uint8_t* _mem(object mem, Py_ssize_t off, Py_ssize_t need, uint8_t[::1] keep) except NULL:
    """Check that bytes [off, off+need) lie inside mem; return the buffer's base pointer."""
    if off < 0 or need < 0 or off + need > len(mem):
        raise InvalidArgument("off", off, f"the op touches bytes [{off}, {off + need}) of a {len(mem)}-byte buffer")
    if keep.shape[0] == 0:
        return _EMPTY
    return &keep[0]


def _as_buf(mem):
    arr = np.asarray(mem)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise InvalidArgument("mem", arr.dtype, "memory must be a 1-D uint8 array")
    return np.ascontiguousarray(arr)


def lv2nx8_ip(mem, Py_ssize_t off, Py_ssize_t inc):
    """vt = the 64 bytes at mem[off]; returns (vt uint8[64], off + inc).
    SPEC §6.2 Loads (B06); provenance: SPEC HIGH"""
    buf = _as_buf(mem)
    cdef uint8_t[::1] k = buf
    cdef vec_t t
    cdef Py_ssize_t o = off
    P.lv2nx8_ip(&t, _mem(buf, off, 64, k), &o, inc)
    return _out(&t, "u8"), o


def l2a4nx8_ip(mem, Py_ssize_t off, Py_ssize_t inc):
    """vt = the 64 bytes at mem[off] read through the two-row (1024-bit) window; off += inc.
    SPEC §6.2 Loads (B06), §8.2.9; provenance: q7emu choice"""
    buf = _as_buf(mem)
    cdef uint8_t[::1] k = buf
    cdef vec_t t
    cdef Py_ssize_t o = off
    P.l2a4nx8_ip(&t, _mem(buf, off, 64, k), &o, inc)
    return _out(&t, "u8"), o


def lav2nx8_xp(mem, Py_ssize_t off, Py_ssize_t n):
    """vt = first min(n, 64) bytes at mem[off], zero-filled; off += n (variable-length tail load).
    SPEC §6.2 Loads (B06); provenance: q7emu choice (valign carry not modelled)"""
    buf = _as_buf(mem)
    cdef uint8_t[::1] k = buf
    cdef vec_t t
    cdef Py_ssize_t o = off
    cdef Py_ssize_t need = min(max(n, 0), 64)
    P.lav2nx8_xp(&t, _mem(buf, off, need, k), &o, n)
    return _out(&t, "u8"), o


def la2nx8_stream(mem, Py_ssize_t off, int count):
    """Unaligned streaming protocol: la2nx8_pp (prime valign) then `count` la2nx8_ip loads from off;
    each output byte j = byte (off%64 + j) of {carry row || next aligned row}.
    SPEC §6.2 Loads (B06), ANCHORS §7 (LA_PP / LAV_XP); provenance: SPEC HIGH"""
    buf = _as_buf(mem)
    if off < 0 or count < 0:
        raise InvalidArgument("off", off, "the stream offset and count must be >= 0")
    cdef Py_ssize_t base_row = off & ~63
    cdef Py_ssize_t need_end = base_row + 64 * (count + 1)
    padded = np.zeros(max(need_end, len(buf)), dtype=np.uint8)
    padded[:len(buf)] = buf
    cdef uint8_t[::1] k = padded
    cdef valign_t u
    cdef vec_t t
    cdef Py_ssize_t o = off
    out = []
    P.la2nx8_pp(&u, &k[0], o)
    for _ in range(count):
        P.la2nx8_ip(&t, &u, &k[0], &o)
        out.append(_out(&t, "u8"))
    return out, o


def labvdcmprs2nx8_xp(mem, vb, Py_ssize_t off, Py_ssize_t stride):
    """R = 64 bytes at mem[off]; vt[k] = vb[k] ? R[popcount(vb below k)] : R[63]; off += stride.
    SPEC §6.2 Loads (B06); provenance: SPEC MED (lane wiring)"""
    buf = _as_buf(mem)
    cdef uint8_t[::1] k = buf
    cdef vec_t t
    cdef Py_ssize_t o = off
    cdef vbool_t m = _vb(vb, 64, "vb")
    P.labvdcmprs2nx8_xp(&t, m, _mem(buf, off, 64, k), &o, stride)
    return _out(&t, "u8"), o


def sav2nx8_xp(mem, vs, Py_ssize_t off, Py_ssize_t n):
    """Store the first min(n, 64) bytes of vs at mem[off] (in place); returns off + n.
    SPEC §6.2 Loads/stores (B06); provenance: q7emu choice"""
    if not isinstance(mem, np.ndarray) or mem.dtype != np.uint8 or mem.ndim != 1 or not mem.flags.c_contiguous:
        raise InvalidArgument("mem", type(mem).__name__, "store target must be a contiguous 1-D uint8 array")
    cdef uint8_t[::1] k = mem
    cdef vec_t x = _vec(vs, "u8", "vs")
    cdef Py_ssize_t o = off
    P.sav2nx8_xp(&x, _mem(mem, off, min(max(n, 0), 64), k), &o, n)
    return o


def sv2nx8_ip(mem, vs, Py_ssize_t off, Py_ssize_t inc):
    """Store the 64 bytes of vs at mem[off] (in place); returns off + inc.
    SPEC §6.2 Loads/stores (B06); provenance: SPEC HIGH"""
    if not isinstance(mem, np.ndarray) or mem.dtype != np.uint8 or mem.ndim != 1 or not mem.flags.c_contiguous:
        raise InvalidArgument("mem", type(mem).__name__, "store target must be a contiguous 1-D uint8 array")
    cdef uint8_t[::1] k = mem
    cdef vec_t x = _vec(vs, "u8", "vs")
    cdef Py_ssize_t o = off
    P.sv2nx8_ip(&x, _mem(mem, off, 64, k), &o, inc)
    return o


# ------------------------------------------------------------------ select / shuffle
#: immediates whose sel2nx8i lane maps q7emu models (see q7ivp.pxd)
SEL2NX8I_IMMS = (0x00, 0x01, 0x02, 0x03, 0x08, 0x09, 0x0A, 0x0B, 0x10, 0x11)

def sel2nx8(vs, vr, sr):
    """vt[k] = pool[sr[k] & 0x7F], pool = vs || vr (128 bytes).
    SPEC §6.2 Select (B21); provenance: SPEC HIGH"""
    cdef vec_t a = _vec(vs, "u8", "vs"), b = _vec(vr, "u8", "vr"), s = _vec(sr, "u8", "sr"), t
    P.sel2nx8(&t, &a, &b, &s)
    return _out(&t, "u8")


def selnx16(vs, vr, sr):
    """vt[k] = pool16[sr[k] & 0x3F], pool = vs || vr (64 x 16-bit lanes).
    SPEC §6.2 Select (B21); provenance: SPEC HIGH"""
    cdef vec_t a = _vec(vs, "u16", "vs"), b = _vec(vr, "u16", "vr"), s = _vec(sr, "u16", "sr"), t
    P.selnx16(&t, &a, &b, &s)
    return _out(&t, "u16")


def seln_2x32(vs, vr, sr):
    """vt[k] = pool32[sr[k] & 0x1F], pool = vs || vr (32 x 32-bit lanes).
    SPEC §6.2 Select (B21); provenance: SPEC HIGH"""
    cdef vec_t a = _vec(vs, "u32", "vs"), b = _vec(vr, "u32", "vr"), s = _vec(sr, "u32", "sr"), t
    P.seln_2x32(&t, &a, &b, &s)
    return _out(&t, "u32")


def sel2nx8i(vs, vr, imm):
    """vt = fixed permutation `imm` of pool = vs || vr: 0/1 even/odd bytes, 2/3 interleave lo/hi,
    8..11 every 4th byte from offset imm-8, 0x10/0x11 rotate right by 1/4.
    SPEC §6.2 Select (B21), §8.1.12; provenance: q7emu choice"""
    cdef int i = _imm(imm, 0, 127, "imm")
    if i not in SEL2NX8I_IMMS:
        raise InvalidArgument("imm", i, f"sel2nx8i immediates modelled: {list(SEL2NX8I_IMMS)}")
    cdef vec_t a = _vec(vs, "u8", "vs"), b = _vec(vr, "u8", "vr"), t
    P.sel2nx8i(&t, &a, &b, i)
    return _out(&t, "u8")


def sel2nx8i_s4(vs, vr, imm):
    """Nibble unpack: vt.16[k] = nibble ((k&1)^H) of pool byte 16*C + (k>>1), zero/sign-extended;
    imm = S<<4 | H<<3 | C. SPEC §8.2.8, seed @0x010051a9; provenance: q7emu choice"""
    cdef int i = _imm(imm, 0, 31, "imm")
    cdef vec_t a = _vec(vs, "u8", "vs"), b = _vec(vr, "u8", "vr"), t
    P.sel2nx8i_s4(&t, &a, &b, i)
    return _out(&t, "s16" if i & 16 else "u16")


def dselnx16(vs, vr, sr):
    """Two permutations of pool16 = vs || vr: vu[k] = pool[sr.u8[2k] & 63], vt[k] = pool[sr.u8[2k+1] & 63];
    returns (vu, vt). SPEC §6.2 Select (B21); provenance: q7emu choice (index packing)"""
    cdef vec_t a = _vec(vs, "u16", "vs"), b = _vec(vr, "u16", "vr"), s = _vec(sr, "u16", "sr"), u, t
    P.dselnx16(&u, &t, &a, &b, &s)
    return _out(&u, "u16"), _out(&t, "u16")


def dselnx16t(vu_old, vt_old, vs, vr, sr, vb):
    """dselnx16 merged under vb: false lanes keep vu_old / vt_old; returns (vu, vt).
    SPEC §6.2 Select (B21), §6.1 t forms; provenance: q7emu choice (index packing)"""
    cdef vec_t u = _vec(vu_old, "u16", "vu"), t = _vec(vt_old, "u16", "vt")
    cdef vec_t a = _vec(vs, "u16", "vs"), b = _vec(vr, "u16", "vr"), s = _vec(sr, "u16", "sr")
    P.dselnx16t(&u, &t, &a, &b, &s, _vb(vb, 32, "vb"))
    return _out(&u, "u16"), _out(&t, "u16")


def dseln_2x32t(vu_old, vt_old, vs, vr, sr, vb):
    """vu[k] = pool32[sr.u16[2k] & 31], vt[k] = pool32[sr.u16[2k+1] & 31], merged under vb; returns (vu, vt).
    SPEC §6.2 Select (B21); provenance: q7emu choice (index packing)"""
    cdef vec_t u = _vec(vu_old, "u32", "vu"), t = _vec(vt_old, "u32", "vt")
    cdef vec_t a = _vec(vs, "u32", "vs"), b = _vec(vr, "u32", "vr"), s = _vec(sr, "u16", "sr")
    P.dseln_2x32t(&u, &t, &a, &b, &s, _vb(vb, 16, "vb"))
    return _out(&u, "u32"), _out(&t, "u32")


def dcmprs2nx8(vr, vb):
    """Expand: vt[k] = vb[k] ? vr[popcount(vb bits below k)] : vr[63].
    SPEC §6.2 Select (B21); provenance: SPEC HIGH"""
    cdef vec_t r = _vec(vr, "u8", "vr"), t
    P.dcmprs2nx8(&t, &r, _vb(vb, 64, "vb"))
    return _out(&t, "u8")


def mov2nx8t(vt, vs, vb):
    """vt[k] = vb[k] ? vs[k] : vt[k] (8-bit lanes). SPEC §6.1 t forms; provenance: SPEC HIGH"""
    return _mov(P.mov2nx8t, vt, vs, vb, "u8")


def movnx16t(vt, vs, vb):
    """vt[k] = vb[k] ? vs[k] : vt[k] (16-bit lanes). SPEC §6.1 t forms; provenance: SPEC HIGH"""
    return _mov(P.movnx16t, vt, vs, vb, "u16")


def movn_2x32t(vt, vs, vb):
    """vt[k] = vb[k] ? vs[k] : vt[k] (32-bit lanes). SPEC §6.1 t forms; provenance: SPEC HIGH"""
    return _mov(P.movn_2x32t, vt, vs, vb, "u32")


def repnx16(vs, lane):
    """vt[k] = vs[lane] for all k (broadcast a 16-bit lane). ANCHORS §7 (REPNX16); provenance: SPEC MED"""
    cdef vec_t a = _vec(vs, "u16", "vs"), t
    P.repnx16(&t, &a, _imm(lane, 0, 31, "lane"))
    return _out(&t, "u16")


# ------------------------------------------------------------------ integer ALU
def add2nx8(vs, vr):
    """vt = vs + vr on 8-bit lanes, wrapping. ANCHORS §7 (IVP_ADD2NX8U); provenance: ANCHORS HIGH (Cadence cstub probe)"""
    return _vvv(P.add2nx8, vs, vr, "u8")


def addnx16(vs, vr):
    """vt = vs + vr on 16-bit lanes, wrapping. ANCHORS §7 (IVP_ADDNX16U); provenance: ANCHORS HIGH (Cadence cstub probe)"""
    return _vvv(P.addnx16, vs, vr, "u16")


def addn_2x32(vs, vr):
    """vt = vs + vr on 32-bit lanes, wrapping. ANCHORS §7 (IVP_ADD*/SUB* wrap); provenance: ANCHORS HIGH (Cadence cstub probe, same family)"""
    return _vvv(P.addn_2x32, vs, vr, "u32")


def sub2nx8(vs, vr):
    """vt = vs - vr on 8-bit lanes, wrapping. ANCHORS §7 (IVP_SUB2NX8U); provenance: ANCHORS HIGH (Cadence cstub probe)"""
    return _vvv(P.sub2nx8, vs, vr, "u8")


def subnx16(vs, vr):
    """vt = vs - vr on 16-bit lanes, wrapping. ANCHORS §7 (IVP_ADD*/SUB* wrap); provenance: ANCHORS HIGH (Cadence cstub probe, same family)"""
    return _vvv(P.subnx16, vs, vr, "u16")


def subn_2x32(vs, vr):
    """vt = vs - vr on 32-bit lanes, wrapping. ANCHORS §7 (IVP_ADD*/SUB* wrap); provenance: ANCHORS HIGH (Cadence cstub probe, same family)"""
    return _vvv(P.subn_2x32, vs, vr, "u32")


def and2nx8(vs, vr):
    """vt = vs & vr over all 512 bits. SPEC §6.1 vec register; provenance: q7emu choice (bitwise ops are not described by the facts)"""
    return _vvv(P.and2nx8, vs, vr, "u8")


def or2nx8(vs, vr):
    """vt = vs | vr over all 512 bits. SPEC §6.1 vec register; provenance: q7emu choice (bitwise ops are not described by the facts)"""
    return _vvv(P.or2nx8, vs, vr, "u8")


def xor2nx8(vs, vr):
    """vt = vs ^ vr over all 512 bits. SPEC §6.1 vec register; provenance: q7emu choice (bitwise ops are not described by the facts)"""
    return _vvv(P.xor2nx8, vs, vr, "u8")


def sllinx16(vs, imm):
    """vt = vs << imm on 16-bit lanes (imm4; >= 16 gives 0). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    return _vvi(P.sllinx16, vs, imm, 0, 15, "u16")


def srlinx16(vs, imm):
    """vt = vs >> imm (logical) on 16-bit lanes (imm4). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    return _vvi(P.srlinx16, vs, imm, 0, 15, "u16")


def srainx16(vs, imm):
    """vt = vs >> imm (arithmetic) on 16-bit lanes (imm4). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    return _vvi(P.srainx16, vs, imm, 0, 15, "s16")


def sllin_2x32(vs, imm):
    """vt = vs << imm on 32-bit lanes (imm5). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    return _vvi(P.sllin_2x32, vs, imm, 0, 31, "u32")


def srlin_2x32(vs, imm):
    """vt = vs >> imm (logical) on 32-bit lanes (imm5). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    return _vvi(P.srlin_2x32, vs, imm, 0, 31, "u32")


def srain_2x32(vs, imm):
    """vt = vs >> imm (arithmetic) on 32-bit lanes (imm5). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    return _vvi(P.srain_2x32, vs, imm, 0, 31, "s32")


def srlnx16(vs, vr):
    """vt[k] = vs[k] >> vr[k] (logical, unsigned amount; >= 16 gives 0). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    return _vvv(P.srlnx16, vs, vr, "u16")


def srln_2x32(vs, vr):
    """vt[k] = vs[k] >> vr[k] (logical, unsigned amount; >= 32 gives 0). SPEC §6.2 Shifts (B12), §3.6 @0x79ec; provenance: SPEC HIGH"""
    return _vvv(P.srln_2x32, vs, vr, "u32")


def sllnx16(vs, vr):
    """vt[k] = vs[k] << a, a = signed 6-bit vr[k] (negative: logical right). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    return _vvv(P.sllnx16, vs, vr, "u16")


def sranx16(vs, vr):
    """vt[k] = vs[k] >> a (arithmetic), a = signed 6-bit vr[k] (negative: left). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    cdef vec_t x = _vec(vs, "s16", "vs"), y = _vec(vr, "s16", "vr"), t
    P.sranx16(&t, &x, &y)
    return _out(&t, "s16")


def slln_2x32(vs, vr):
    """vt[k] = vs[k] << a, a = signed 7-bit vr[k] (negative: logical right). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    return _vvv(P.slln_2x32, vs, vr, "u32")


def sran_2x32(vs, vr):
    """vt[k] = vs[k] >> a (arithmetic), a = signed 7-bit vr[k] (negative: left). SPEC §6.2 Shifts (B12); provenance: SPEC HIGH"""
    cdef vec_t x = _vec(vs, "s32", "vs"), y = _vec(vr, "s32", "vr"), t
    P.sran_2x32(&t, &x, &y)
    return _out(&t, "s32")


def eq2nx8(vs, vr):
    """vb[k] = vs[k] == vr[k] (8-bit lanes). SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _cmp(P.eq2nx8, vs, vr, "u8")


def ltu2nx8(vs, vr):
    """vb[k] = vs[k] < vr[k], unsigned 8-bit lanes. ANCHORS §7 (IVP_LTU2NX8); provenance: ANCHORS HIGH (Cadence cstub probe)"""
    return _cmp(P.ltu2nx8, vs, vr, "u8")


def eqnx16(vs, vr):
    """vb[k] = vs[k] == vr[k] (16-bit lanes, 2 bits each). SPEC §6.2 (B03); provenance: SPEC HIGH"""
    return _cmp(P.eqnx16, vs, vr, "u16")


def neqnx16(vs, vr):
    """vb[k] = vs[k] != vr[k] (16-bit lanes). SPEC §6.2 (B03); provenance: SPEC HIGH"""
    return _cmp(P.neqnx16, vs, vr, "u16")


def ltnx16(vs, vr):
    """vb[k] = vs[k] < vr[k], signed 16-bit lanes. SPEC §6.2 (B03); provenance: SPEC HIGH"""
    return _cmp(P.ltnx16, vs, vr, "s16")


def lenx16(vs, vr):
    """vb[k] = vs[k] <= vr[k], signed 16-bit lanes. SPEC §6.2 (B03); provenance: SPEC HIGH"""
    return _cmp(P.lenx16, vs, vr, "s16")


def ltunx16(vs, vr):
    """vb[k] = vs[k] < vr[k], unsigned 16-bit lanes. SPEC §6.2 (B03); provenance: SPEC HIGH"""
    return _cmp(P.ltunx16, vs, vr, "u16")


def eqn_2x32(vs, vr):
    """vb[k] = vs[k] == vr[k] (32-bit lanes, 4 bits each). SPEC §6.2 (B03); provenance: SPEC HIGH"""
    return _cmp(P.eqn_2x32, vs, vr, "u32")


def ltn_2x32(vs, vr):
    """vb[k] = vs[k] < vr[k], signed 32-bit lanes. SPEC §6.2 (B03); provenance: SPEC HIGH"""
    return _cmp(P.ltn_2x32, vs, vr, "s32")


def bmin2nx8(va, vb):
    """(flags, vt): vt = min(a, b) signed 8-bit, flag = a < b (tie: 0, b selected). SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bmin2nx8, va, vb, "s8")


def bminu2nx8(va, vb):
    """(flags, vt): vt = min(a, b) unsigned 8-bit, flag = a < b. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bminu2nx8, va, vb, "u8")


def bmax2nx8(va, vb):
    """(flags, vt): vt = max(a, b) signed 8-bit, flag = a > b (tie: 0, b selected). SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bmax2nx8, va, vb, "s8")


def bmaxu2nx8(va, vb):
    """(flags, vt): vt = max(a, b) unsigned 8-bit, flag = a > b. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bmaxu2nx8, va, vb, "u8")


def bminnx16(va, vb):
    """(flags, vt): vt = min(a, b) signed 16-bit, flag = a < b. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bminnx16, va, vb, "s16")


def bminunx16(va, vb):
    """(flags, vt): vt = min(a, b) unsigned 16-bit, flag = a < b. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bminunx16, va, vb, "u16")


def bmaxnx16(va, vb):
    """(flags, vt): vt = max(a, b) signed 16-bit, flag = a > b. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bmaxnx16, va, vb, "s16")


def bmaxunx16(va, vb):
    """(flags, vt): vt = max(a, b) unsigned 16-bit, flag = a > b. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bmaxunx16, va, vb, "u16")


def bminn_2x32(va, vb):
    """(flags, vt): vt = min(a, b) signed 32-bit, flag = a < b. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bminn_2x32, va, vb, "s32")


def bminun_2x32(va, vb):
    """(flags, vt): vt = min(a, b) unsigned 32-bit, flag = a < b. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bminun_2x32, va, vb, "u32")


def bmaxn_2x32(va, vb):
    """(flags, vt): vt = max(a, b) signed 32-bit, flag = a > b. SPEC §6.2 Flag ALU (B03), §3.6 @0x79ec; provenance: SPEC HIGH"""
    return _bvv(P.bmaxn_2x32, va, vb, "s32")


def bmaxun_2x32(va, vb):
    """(flags, vt): vt = max(a, b) unsigned 32-bit, flag = a > b. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bmaxun_2x32, va, vb, "u32")


def babssub2nx8(va, vb):
    """(flags, vt): vt = |a - b| (unsigned result), flag = a < b, signed 8-bit. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    cdef vec_t x = _vec(va, "s8", "va"), y = _vec(vb, "s8", "vb"), t
    cdef vbool_t fl = 0
    P.babssub2nx8(&fl, &t, &x, &y)
    return _vbout(fl, 64), _out(&t, "u8")


def babssubu2nx8(va, vb):
    """(flags, vt): vt = |a - b|, flag = a < b, unsigned 8-bit. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.babssubu2nx8, va, vb, "u8")


def babssubnx16(va, vb):
    """(flags, vt): vt = |a - b| (unsigned result), flag = a < b, signed 16-bit. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    cdef vec_t x = _vec(va, "s16", "va"), y = _vec(vb, "s16", "vb"), t
    cdef vbool_t fl = 0
    P.babssubnx16(&fl, &t, &x, &y)
    return _vbout(fl, 32), _out(&t, "u16")


def babssubunx16(va, vb):
    """(flags, vt): vt = |a - b|, flag = a < b, unsigned 16-bit. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.babssubunx16, va, vb, "u16")


def baddnormnx16(va, vb):
    """(flags, vt): s = a + b (17-bit); flag = bit15 != bit16; vt = flag ? s >> 1 : s. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.baddnormnx16, va, vb, "s16")


def bsubnormnx16(va, vb):
    """(flags, vt): s = a - b (17-bit); flag = bit15 != bit16; vt = flag ? s >> 1 : s. SPEC §6.2 Flag ALU (B03); provenance: SPEC HIGH"""
    return _bvv(P.bsubnormnx16, va, vb, "s16")


# ------------------------------------------------------------------ MACs
def mulus4tn16xr16(va, vb, pr):
    """wv48[i] = sum_t pool.u16[i+t] * pr.s16[t], pool = va || vb (4-tap, overwrite); returns int64[32].
    SPEC §6.2 Integer MAC (B04/B05), §8.2.19; provenance: q7emu choice (4t lane map)"""
    cdef vec_t x = _vec(va, "u16", "va"), y = _vec(vb, "u16", "vb")
    cdef wvec_t w
    P.mulus4tn16xr16(&w, &x, &y, _pr(pr))
    return _wout(&w)


def mulus4tan16xr16(acc, va, vb, pr):
    """wv48[i] += sum_t pool.u16[i+t] * pr.s16[t], pool = va || vb; acc int64[32] (None = 0).
    SPEC §6.2 Integer MAC (B04/B05), seed @0x010051a9; provenance: q7emu choice (4t lane map)"""
    return _mac4(P.mulus4tan16xr16, acc, va, vb, pr, "u16")


def mul4tn16xr16(va, vb, pr):
    """wv48[i] = sum_t pool.s16[i+t] * pr.s16[t] (signed x signed, overwrite).
    SPEC §6.2 Integer MAC (B04); provenance: q7emu choice (4t lane map)"""
    cdef vec_t x = _vec(va, "s16", "va"), y = _vec(vb, "s16", "vb")
    cdef wvec_t w
    P.mul4tn16xr16(&w, &x, &y, _pr(pr))
    return _wout(&w)


def mul4tan16xr16(acc, va, vb, pr):
    """wv48[i] += sum_t pool.s16[i+t] * pr.s16[t] (signed x signed).
    SPEC §6.2 Integer MAC (B04), §2.4 MX path; provenance: q7emu choice (4t lane map)"""
    return _mac4(P.mul4tan16xr16, acc, va, vb, pr, "s16")


def dmulqa2n8xr8(acc_a, acc_b, v0, v1, v2, v3, pr):
    """wa24[i] += sum_j vj.s8[i] * pr.s8[j]; wb24[i] += sum_j vj.s8[i] * pr.s8[4+j] (j < 4); returns (wa, wb).
    SPEC §6.2 Integer MAC (B04/B05), seed @0x010053c0; provenance: q7emu choice (q lane map)"""
    cdef wvec_t wa = _win(acc_a if acc_a is not None else [0] * 64, 24, "acc_a")
    cdef wvec_t wb = _win(acc_b if acc_b is not None else [0] * 64, 24, "acc_b")
    cdef vec_t a = _vec(v0, "s8", "v0"), b = _vec(v1, "s8", "v1"), c = _vec(v2, "s8", "v2"), d = _vec(v3, "s8", "v3")
    P.dmulqa2n8xr8(&wa, &wb, &a, &b, &c, &d, _pr(pr))
    return _wout(&wa), _wout(&wb)


def muluupan16xr16(acc, va, vb, pr):
    """wv48[i] += va.u16[i] * pr.u16[0] + vb.u16[i] * pr.u16[1] (unsigned, paired).
    SPEC §6.2 Integer MAC (B04/B05), §2.4 @0x01004fc8; provenance: q7emu choice (pr fields)"""
    return _mac4(P.muluupan16xr16, acc, va, vb, pr, "u16")


def mulsupn16xr16(va, vb, pr):
    """wv48[i] = va.s16[i] * pr.u16[0] + vb.s16[i] * pr.u16[1] (signed x unsigned, paired, overwrite).
    SPEC §6.2 Integer MAC (B04/B05); provenance: q7emu choice (pr fields)"""
    cdef vec_t x = _vec(va, "s16", "va"), y = _vec(vb, "s16", "vb")
    cdef wvec_t w
    P.mulsupn16xr16(&w, &x, &y, _pr(pr))
    return _wout(&w)


def muluspa2n8xr16(acc, va, vb, pr):
    """wv24[i] += va.u8[i] * hi16(w) + vb.u8[i] * lo16(w), w = pr bits [0, 32), weights signed.
    ANCHORS §7 (IVP_MULUSPA2N8XR16), SPEC §3.6 @0x6c4b; provenance: ANCHORS HIGH (Cadence cstub probe)"""
    cdef wvec_t w = _win(acc if acc is not None else [0] * 64, 24, "acc")
    cdef vec_t x = _vec(va, "u8", "va"), y = _vec(vb, "u8", "vb")
    P.muluspa2n8xr16(&w, &x, &y, _pr(pr))
    return _wout(&w)


def muln_2x32(va, vb):
    """wv96[i] = va.s32[i] * vb.s32[i] (signed); returns 16 Python ints.
    SPEC §6.2 Integer MAC (B04); provenance: SPEC HIGH"""
    cdef vec_t x = _vec(va, "s32", "va"), y = _vec(vb, "s32", "vb")
    cdef wvec_t w
    P.muln_2x32(&w, &x, &y)
    return _wout(&w)


def mulan_2x32(acc, va, vb):
    """wv96[i] += va.s32[i] * vb.s32[i], wrapping modulo 2^96.
    SPEC §6.2 Integer MAC (B04); provenance: SPEC HIGH"""
    cdef wvec_t w = _win(acc if acc is not None else [0] * 16, 96, "acc")
    cdef vec_t x = _vec(va, "s32", "va"), y = _vec(vb, "s32", "vb")
    P.mulan_2x32(&w, &x, &y)
    return _wout(&w)


# ------------------------------------------------------------------ wvec <-> vec
def cvtg48n_2x32l(vs, vr):
    """wv48[i] = zero-extended u32 lane i of vs || vr (high 16 bits 0); returns int64[32].
    SPEC §6.2 (B22), §8.2.5; provenance: q7emu choice (identity gather)"""
    cdef vec_t x = _vec(vs, "u32", "vs"), y = _vec(vr, "u32", "vr")
    cdef wvec_t w
    P.cvtg48n_2x32l(&w, &x, &y)
    return _wout(&w)


def cvtg48n_2x32h(acc, vs, vr):
    """wv48[i] keeps its low 32 bits; high 16 bits = low 16 bits of u32 lane i of vs || vr.
    SPEC §6.2 (B22), §3.6 @0x216d; provenance: q7emu choice (identity gather)"""
    cdef wvec_t w = _win(acc, 48, "acc")
    cdef vec_t x = _vec(vs, "u32", "vs"), y = _vec(vr, "u32", "vr")
    P.cvtg48n_2x32h(&w, &x, &y)
    return _wout(&w)


def packvr2nx24(acc, sh):
    """vt.s8[i] = sat8((wv24[i] + 2^(sh-1)) >> sh), sh clamped to 23. SPEC §6.2 pack (B10); provenance: SPEC HIGH"""
    return _pack(P.packvr2nx24, acc, 24, sh, "s8")


def packvrnx48(acc, sh):
    """vt.s16[i] = sat16((wv48[i] + 2^(sh-1)) >> sh), sh clamped to 32. SPEC §6.2 pack (B10); provenance: SPEC HIGH"""
    return _pack(P.packvrnx48, acc, 48, sh, "s16")


def packvru2nx24(acc, sh):
    """vt.u8[i] = usat8((wv24[i] + 2^(sh-1)) >> sh). SPEC §6.2 pack (B10), ANCHORS §7 T10; provenance: SPEC HIGH"""
    return _pack(P.packvru2nx24, acc, 24, sh, "u8")


def packvrunx48(acc, sh):
    """vt.u16[i] = usat16((wv48[i] + 2^(sh-1)) >> sh). SPEC §6.2 pack (B10); provenance: SPEC HIGH"""
    return _pack(P.packvrunx48, acc, 48, sh, "u16")


def packvrnr2nx24(acc, sh):
    """vt.u8[i] = low 8 bits of (wv24[i] >> sh), no rounding, wraps. SPEC §6.2 pack (B10), ANCHORS §7 T20; provenance: SPEC HIGH"""
    return _pack(P.packvrnr2nx24, acc, 24, sh, "u8")


def packvrnrnx48(acc, sh):
    """vt.u16[i] = low 16 bits of (wv48[i] >> sh), no rounding, wraps. SPEC §6.2 pack (B10); provenance: SPEC HIGH"""
    return _pack(P.packvrnrnx48, acc, 48, sh, "u16")


def packvrn_2x96(acc, sh):
    """vt.s32[i] = sat32((wv96[i] + 2^(sh-1)) >> sh), sh clamped to 32. SPEC §6.2 pack (B10); provenance: SPEC HIGH"""
    return _pack(P.packvrn_2x96, acc, 96, sh, "s32")


def packl2nx24(acc):
    """vt.u8[i] = low 8 bits of wv24[i]. SPEC §6.2 pack (B10), ANCHORS §7 T16; provenance: SPEC HIGH"""
    return _packl(P.packl2nx24, acc, 24, "u8")


def packlnx48(acc):
    """vt.u16[i] = low 16 bits of wv48[i]. SPEC §6.2 pack (B10); provenance: SPEC HIGH"""
    return _packl(P.packlnx48, acc, 48, "u16")


def packmnx48(acc):
    """vt.u16[i] = bits 16..31 of wv48[i]. SPEC §6.2 pack (B10); provenance: SPEC HIGH"""
    return _packl(P.packmnx48, acc, 48, "u16")


def packhnx48(acc):
    """vt.u16[i] = bits 32..47 of wv48[i]. SPEC §6.2 pack (B10); provenance: SPEC HIGH"""
    return _packl(P.packhnx48, acc, 48, "u16")


def packln_2x96(acc):
    """vt.u32[i] = low 32 bits of wv96[i]. SPEC §6.2 pack (B10); provenance: SPEC HIGH"""
    return _packl(P.packln_2x96, acc, 96, "u32")


# ------------------------------------------------------------------ soft-float
def ultn_2xf32t(vb_old, va, vr, vbp):
    """vb[k] = vbp[k] ? (isnan(a) | isnan(b) | a < b) : vb_old[k], fp32 lanes (unordered, quiet).
    SPEC §6.2 fp ALU (B02), seed @0x010052ee; provenance: SPEC HIGH"""
    return _fcmp(P.ultn_2xf32t, vb_old, va, vr, vbp, "f32")


def ueqn_2xf32t(vb_old, va, vr, vbp):
    """vb[k] = vbp[k] ? (isnan(a) | isnan(b) | a == b) : vb_old[k], fp32 lanes (unordered).
    SPEC §6.2 fp ALU (B02), §3.6 @0x216d; provenance: SPEC HIGH"""
    return _fcmp(P.ueqn_2xf32t, vb_old, va, vr, vbp, "f32")


def oltnxf16t(vb_old, va, vr, vbp):
    """vb[k] = vbp[k] ? (a < b, false on NaN) : vb_old[k], fp16 lanes (ordered).
    SPEC §6.2 fp ALU (B02), §2.4 @0x01004dfc; provenance: SPEC HIGH"""
    return _fcmp(P.oltnxf16t, vb_old, va, vr, vbp, "f16")


def float16nx16t(vt_old, vs, imm, vb):
    """vt[k] = vb[k] ? fp16(int16 vs[k] * 2^-imm) (RNE) : vt_old[k]; imm 0..15.
    SPEC §6.2 Converts (B13/B20); provenance: SPEC HIGH"""
    cdef vec_t t = _vec(vt_old, "f16", "vt"), x = _vec(vs, "s16", "vs")
    P.float16nx16t(&t, &x, _imm(imm, 0, 15, "imm"), _vb(vb, 32, "vb"))
    return _out(&t, "f16")


def floatn_2x32(vs, imm):
    """vt[k] = fp32(int32 vs[k] * 2^-imm) (RNE); imm 0..31. SPEC §6.2 Converts (B13); provenance: SPEC HIGH"""
    cdef vec_t x = _vec(vs, "s32", "vs"), t
    P.floatn_2x32(&t, &x, _imm(imm, 0, 31, "imm"))
    return _out(&t, "f32")


def truncn_2xf32(vs, imm):
    """vt[k] = int32 trunc(fp32 vs[k] * 2^imm), saturating; NaN -> INT32_MAX. SPEC §6.2 Converts (B13); provenance: SPEC HIGH"""
    cdef vec_t x = _vec(vs, "f32", "vs"), t
    P.truncn_2xf32(&t, &x, _imm(imm, 0, 31, "imm"))
    return _out(&t, "s32")


def trunc16nxf16(vs, imm):
    """vt[k] = int16 trunc(fp16 vs[k] * 2^imm), saturating; NaN -> INT16_MAX. SPEC §6.2 Converts (B20), §8.2.7; provenance: SPEC HIGH"""
    cdef vec_t x = _vec(vs, "f16", "vs"), t
    P.trunc16nxf16(&t, &x, _imm(imm, 0, 15, "imm"))
    return _out(&t, "s16")


def cvtf32nxf16_0(vs):
    """vt.f32[k] = fp16 lane k of vs (k < 16), exact. SPEC §6.2 Converts; provenance: SPEC HIGH"""
    cdef vec_t x = _vec(vs, "f16", "vs"), t
    P.cvtf32nxf16_0(&t, &x)
    return _out(&t, "f32")


def cvtf32nxf16_1(vs):
    """vt.f32[k] = fp16 lane 16+k of vs, exact. SPEC §6.2 Converts; provenance: SPEC HIGH"""
    cdef vec_t x = _vec(vs, "f16", "vs"), t
    P.cvtf32nxf16_1(&t, &x)
    return _out(&t, "f32")


def negnxf16t(vt_old, vs, vb):
    """vt[k] = vb[k] ? -vs[k] (sign bit flipped) : vt_old[k]. SPEC §6.2 fp ALU (B02); provenance: SPEC HIGH"""
    cdef vec_t t = _vec(vt_old, "f16", "vt"), x = _vec(vs, "f16", "vs")
    P.negnxf16t(&t, &x, _vb(vb, 32, "vb"))
    return _out(&t, "f16")


def addexpnxf16(va, vb):
    """exp = (exp_a + exp_b + 0x11) mod 32, mant = a.mant, sign = a.sign ^ b.sign (fp16 lanes).
    SPEC §6.2 fp ALU (B02); provenance: SPEC HIGH"""
    cdef vec_t x = _vec(va, "f16", "va"), y = _vec(vb, "f16", "vb"), t
    P.addexpnxf16(&t, &x, &y)
    return _out(&t, "f16")


# ------------------------------------------------------------------ pr moves
def extrpr2nx8(vs, k):
    """pr = u8 lane k of vs, upper bits 0 (returns int). SPEC §6.2 Moves into pr (XPR); provenance: SPEC HIGH"""
    cdef vec_t x = _vec(vs, "u8", "vs")
    cdef pr_t p = 0
    P.extrpr2nx8(&p, &x, _imm(k, 0, 63, "k"))
    return int(p)


def extrprn_2x32(vs, k):
    """pr = u32 lane k of vs, upper bits 0 (returns int). SPEC §6.2 Moves into pr (XPR); provenance: SPEC HIGH"""
    cdef vec_t x = _vec(vs, "u32", "vs")
    cdef pr_t p = 0
    P.extrprn_2x32(&p, &x, _imm(k, 0, 15, "k"))
    return int(p)


def dextrprn_2x32(vs, vr, i, j):
    """pr = pool32[i] | pool32[j] << 32, pool = vs || vr (returns int).
    SPEC §6.2 (XPR), §3.6 @0x22b5; provenance: q7emu choice (pairing)"""
    cdef vec_t x = _vec(vs, "u32", "vs"), y = _vec(vr, "u32", "vr")
    cdef pr_t p = 0
    P.dextrprn_2x32(&p, &x, &y, _imm(i, 0, 31, "i"), _imm(j, 0, 31, "j"))
    return int(p)


# ------------------------------------------------------------------ cost of one primitive in C
_SPECIAL = ("sel2nx8i_s4", "sel2nx8i", "dselnx16", "float16nx16t", "cvtf32nxf16_0")

def time_op(str mnemonic, Py_ssize_t iterations=100000):
    """Mean wall time of one call of primitive `mnemonic` in a nogil C loop, in ns per 512-bit op.

    Each call writes a register distinct from its sources and the next call reads it (the two
    registers swap roles: no dead code, whole-vector dependencies); the call is indirect, so the figure includes one
    function-pointer call (~1-2 ns) and no Python overhead. Covers the
    register-to-register shapes (vec/vbool/wvec/pr operands); memory ops are not timed here.
    Returns None for a mnemonic of another shape.
    """
    import time
    cdef vec_t a, b, c, d
    cdef wvec_t w, w2
    cdef vbool_t vb = 0x5555555555555555
    cdef pr_t pr = 0x0001000200034000
    cdef Py_ssize_t i
    cdef int k
    for k in range(64):
        a.u8[k] = <uint8_t>(k * 7 + 3)
        b.u8[k] = <uint8_t>(k * 13 + 1)
        c.u8[k] = <uint8_t>(k & 63)
        d.u8[k] = <uint8_t>(k * 5)
    memset(&w, 0, sizeof(w)); w.view = 48
    memset(&w2, 0, sizeof(w2)); w2.view = 24
    cdef vvv_fn f3 = NULL
    cdef vvvv_fn f4 = NULL
    cdef vvi_fn fi = NULL
    cdef bvv_fn fb = NULL
    cdef cmp_fn fc = NULL
    cdef mov_fn fm = NULL
    cdef fcmp_fn ff = NULL
    cdef mac4_fn fw = NULL
    cdef pack_fn fp = NULL
    cdef int special = -1
    cdef vec_t* src = &a
    cdef vec_t* dst = &d
    cdef vec_t* tmp
    table3 = {"add2nx8": 0, "addnx16": 1, "addn_2x32": 2, "sub2nx8": 3, "subnx16": 4, "subn_2x32": 5,
              "and2nx8": 6, "or2nx8": 7, "xor2nx8": 8, "srlnx16": 9, "srln_2x32": 10, "sllnx16": 11,
              "sranx16": 12, "slln_2x32": 13, "sran_2x32": 14, "addexpnxf16": 15}
    cdef vvv_fn t3[16]
    t3[:] = [P.add2nx8, P.addnx16, P.addn_2x32, P.sub2nx8, P.subnx16, P.subn_2x32, P.and2nx8, P.or2nx8,
             P.xor2nx8, P.srlnx16, P.srln_2x32, P.sllnx16, P.sranx16, P.slln_2x32, P.sran_2x32, P.addexpnxf16]
    table_b = {"bmin2nx8": 0, "bminu2nx8": 1, "bmax2nx8": 2, "bmaxu2nx8": 3, "bminnx16": 4, "bminunx16": 5,
               "bmaxnx16": 6, "bmaxunx16": 7, "bminn_2x32": 8, "bminun_2x32": 9, "bmaxn_2x32": 10,
               "bmaxun_2x32": 11, "babssubu2nx8": 12, "babssubunx16": 13, "baddnormnx16": 14, "bsubnormnx16": 15}
    cdef bvv_fn tb[16]
    tb[:] = [P.bmin2nx8, P.bminu2nx8, P.bmax2nx8, P.bmaxu2nx8, P.bminnx16, P.bminunx16, P.bmaxnx16, P.bmaxunx16,
             P.bminn_2x32, P.bminun_2x32, P.bmaxn_2x32, P.bmaxun_2x32, P.babssubu2nx8, P.babssubunx16,
             P.baddnormnx16, P.bsubnormnx16]
    table_c = {"eq2nx8": 0, "eqnx16": 1, "neqnx16": 2, "ltnx16": 3, "lenx16": 4, "ltunx16": 5, "eqn_2x32": 6,
               "ltn_2x32": 7, "ltu2nx8": 8}
    cdef cmp_fn tc[9]
    tc[:] = [P.eq2nx8, P.eqnx16, P.neqnx16, P.ltnx16, P.lenx16, P.ltunx16, P.eqn_2x32, P.ltn_2x32, P.ltu2nx8]
    table_m = {"mov2nx8t": 0, "movnx16t": 1, "movn_2x32t": 2, "negnxf16t": 3}
    cdef mov_fn tm[4]
    tm[:] = [P.mov2nx8t, P.movnx16t, P.movn_2x32t, P.negnxf16t]
    table_i = {"sllinx16": 0, "srlinx16": 1, "srainx16": 2, "sllin_2x32": 3, "srlin_2x32": 4, "srain_2x32": 5,
               "floatn_2x32": 6, "truncn_2xf32": 7, "trunc16nxf16": 8}
    cdef vvi_fn ti[9]
    ti[:] = [P.sllinx16, P.srlinx16, P.srainx16, P.sllin_2x32, P.srlin_2x32, P.srain_2x32, P.floatn_2x32,
             P.truncn_2xf32, P.trunc16nxf16]
    table_4 = {"sel2nx8": 0, "selnx16": 1, "seln_2x32": 2}
    cdef vvvv_fn t4[3]
    t4[:] = [P.sel2nx8, P.selnx16, P.seln_2x32]
    table_f = {"ultn_2xf32t": 0, "ueqn_2xf32t": 1, "oltnxf16t": 2}
    cdef fcmp_fn tf[3]
    tf[:] = [P.ultn_2xf32t, P.ueqn_2xf32t, P.oltnxf16t]
    table_w = {"mulus4tn16xr16": 0, "mulus4tan16xr16": 1, "mul4tn16xr16": 2, "mul4tan16xr16": 3,
               "muluupan16xr16": 4, "mulsupn16xr16": 5}
    cdef mac4_fn tw[6]
    tw[:] = [P.mulus4tn16xr16, P.mulus4tan16xr16, P.mul4tn16xr16, P.mul4tan16xr16, P.muluupan16xr16,
             P.mulsupn16xr16]
    table_p = {"packvrnx48": 0, "packvrunx48": 1, "packvrnrnx48": 2}
    cdef pack_fn tp[3]
    tp[:] = [P.packvrnx48, P.packvrunx48, P.packvrnrnx48]
    if mnemonic in table3:
        f3 = t3[table3[mnemonic]]
    elif mnemonic in table_b:
        fb = tb[table_b[mnemonic]]
    elif mnemonic in table_c:
        fc = tc[table_c[mnemonic]]
    elif mnemonic in table_m:
        fm = tm[table_m[mnemonic]]
    elif mnemonic in table_i:
        fi = ti[table_i[mnemonic]]
    elif mnemonic in table_4:
        f4 = t4[table_4[mnemonic]]
    elif mnemonic in table_f:
        ff = tf[table_f[mnemonic]]
    elif mnemonic in table_w:
        fw = tw[table_w[mnemonic]]
    elif mnemonic in table_p:
        fp = tp[table_p[mnemonic]]
    elif mnemonic in _SPECIAL:
        special = _SPECIAL.index(mnemonic)
    else:
        return None
    t0 = time.perf_counter_ns()
    with nogil:
        for i in range(iterations):
            if f3 != NULL:
                f3(dst, src, &b)
            elif fb != NULL:
                fb(&vb, dst, src, &b)
            elif fc != NULL:
                fc(&vb, &a, &b)
                a.u8[0] ^= <uint8_t>vb
            elif fm != NULL:
                fm(dst, src, vb)
            elif fi != NULL:
                fi(dst, src, 3)
            elif f4 != NULL:
                f4(dst, src, &b, &c)
            elif ff != NULL:
                ff(&vb, &a, &b, vb | 1)
                a.u8[0] ^= <uint8_t>vb
            elif fw != NULL:
                fw(&w, &a, &b, pr)
                a.u8[0] ^= <uint8_t>w.c[0]
            elif fp != NULL:
                fp(dst, &w, 14)
            elif special == 0:
                P.sel2nx8i_s4(dst, src, &b, 9)
            elif special == 1:
                P.sel2nx8i(dst, src, &b, 0)
            elif special == 2:
                P.dselnx16(dst, &c, src, &b, &c)
            elif special == 3:
                P.float16nx16t(dst, src, 3, vb)
            else:
                P.cvtf32nxf16_0(dst, src)
            tmp = src
            src = dst
            dst = tmp
    t1 = time.perf_counter_ns()
    return (t1 - t0) / iterations
