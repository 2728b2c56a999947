# cython: language_level=3
"""IVP loads and stores (docs/firmware.md §6.2 Loads, B06). Memory operands are (base pointer, byte offset);
`_ip` / `_xp` forms post-increment the offset. Callers check that the bytes touched lie in the buffer."""
from libc.stdint cimport uint8_t
from libc.string cimport memcpy
from q7regs cimport vec_t, vbool_t, valign_t, q7_load_prefix, q7_spread_bytes16, q7_spread_bytes32, \
    q7_spread_halves32, q7_copy64


cdef inline Py_ssize_t _tail(Py_ssize_t n) noexcept nogil:
    """Bytes a variable-length access of n touches: min(max(n, 0), 64)."""
    return 64 if n > 64 else (n if n > 0 else 0)


cdef inline void expand_bytes(vec_t* vt, const uint8_t* r, vbool_t vb) noexcept nogil:
    """The dcmprs rule: vt[k] = vb[k] ? r[popcount(vb bits below k)] : r[63] (r may alias vt). Five predicates
    take straight-line code that gives the same bytes: the even bytes (a byte spread into 16-bit lanes, the SIMD
    leaf q7_spread_bytes16), 3 bytes of every 4 (3-byte groups into 32-bit lanes, q7_spread_bytes32), the low or
    the high two bytes of every 4 (16-bit halves into 32-bit lanes, q7_spread_halves32) and all bytes (a plain
    load)."""
    cdef vec_t o
    cdef int k, n = 0, bit
    if vb == <vbool_t>0x5555555555555555:     # byte k -> the low byte of 16-bit lane k (the byte spread)
        q7_spread_bytes16(vt.u8, r)
        return
    if vb == <vbool_t>0x7777777777777777:     # 3-byte group i -> the low 3 bytes of 32-bit lane i
        q7_spread_bytes32(vt.u8, r)
        return
    if vb == <vbool_t>0x3333333333333333 or vb == <vbool_t>0xCCCCCCCCCCCCCCCC:
        q7_spread_halves32(vt.u8, r, vb == <vbool_t>0xCCCCCCCCCCCCCCCC)
        return
    if vb == <vbool_t>0xFFFFFFFFFFFFFFFF:
        memcpy(o.u8, r, 64)
        q7_copy64(vt, &o)
        return
    for k in range(64):
        bit = <int>((vb >> k) & 1)
        o.u8[k] = r[n] if bit else r[63]
        n += bit
    q7_copy64(vt, &o)


# lv2nx8_i: vt = the 64 bytes at base+off (aligned vector load, no update). A whole vector moves by q7_copy64 (the
# level's widest moves) here and in the stores below: GCC lowered a 64-byte memcpy at avx2 to four 16-byte moves
# through a stack copy of the register
cdef inline void lv2nx8_i(vec_t* vt, const uint8_t* base, Py_ssize_t off) noexcept nogil:
    q7_copy64(vt, base + off)

# lv2nx8_ip: vt = the 64 bytes at base+off; off += inc
cdef inline void lv2nx8_ip(vec_t* vt, const uint8_t* base, Py_ssize_t* off, Py_ssize_t inc) noexcept nogil:
    lv2nx8_i(vt, base, off[0])
    off[0] += inc

# la2nx8_pp: prime the unaligned stream: u = the aligned 64-byte row holding base+off
cdef inline void la2nx8_pp(valign_t* u, const uint8_t* base, Py_ssize_t off) noexcept nogil:
    memcpy(u.row, base + (off & ~(<Py_ssize_t>63)), 64)

# la2nx8_ip: vt[j] = byte (off%64 + j) of {u.row || next row}; u = next row; off += 64
cdef inline void la2nx8_ip(vec_t* vt, valign_t* u, const uint8_t* base, Py_ssize_t* off) noexcept nogil:
    cdef uint8_t window[128]
    cdef Py_ssize_t a = off[0] & 63
    memcpy(window, u.row, 64)
    memcpy(window + 64, base + (off[0] & ~(<Py_ssize_t>63)) + 64, 64)
    memcpy(vt.u8, window + a, 64)
    memcpy(u.row, window + 64, 64)
    off[0] += 64

# l2a4nx8_ip: vt = the 64 bytes at base+off through the 1024-bit two-row window (both LSU pipes, no
# valign priming); off += inc. q7emu choice: the same bytes as lv2nx8_ip (docs/firmware.md §8.2.9)
cdef inline void l2a4nx8_ip(vec_t* vt, const uint8_t* base, Py_ssize_t* off, Py_ssize_t inc) noexcept nogil:
    lv2nx8_ip(vt, base, off, inc)

# lav2nx8_xp: vt = the first c = min(max(n, 0), 64) bytes at base+off, zero-filled above; off += c (a stream of
# LAV(n), LAV(n - 64), ... reads consecutive rows: docs/intrinsics.md §3.8); valign carry not modelled
cdef inline void lav2nx8_xp(vec_t* vt, const uint8_t* base, Py_ssize_t* off, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t c = _tail(n)
    q7_load_prefix(vt.u8, base + off[0], <size_t>c)   # masked load at AVX-512; memset + memcpy else
    off[0] += c

# labvdcmprs2nx8_xp: R = the first c = min(max(n, 0), 64) bytes at base+off, zero-filled above (as lav2nx8_xp);
# vt = expand(R) under vb (dcmprs rule); off += c (q7emu choice, docs/model.md §8 item 18)
cdef inline void labvdcmprs2nx8_xp(vec_t* vt, vbool_t vb, const uint8_t* base, Py_ssize_t* off,
                                   Py_ssize_t n) noexcept nogil:
    cdef vec_t r
    cdef Py_ssize_t c = _tail(n)
    q7_load_prefix(r.u8, base + off[0], <size_t>c)
    expand_bytes(vt, r.u8, vb)
    off[0] += c

# sv2nx8_ip: store the 64 bytes of vs at base+off; off += inc
cdef inline void sv2nx8_ip(const vec_t* vs, uint8_t* base, Py_ssize_t* off, Py_ssize_t inc) noexcept nogil:
    q7_copy64(base + off[0], vs)
    off[0] += inc

# sav2nx8_xp: store the first c = min(max(n, 0), 64) bytes of vs at base+off; off += c (docs/intrinsics.md §3.8)
cdef inline void sav2nx8_xp(const vec_t* vs, uint8_t* base, Py_ssize_t* off, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k = _tail(n)
    if k == 64:                          # the whole vector: one fixed-size copy (no variable-length memcpy)
        q7_copy64(base + off[0], vs)
    elif k:
        memcpy(base + off[0], vs.u8, k)
    off[0] += k
