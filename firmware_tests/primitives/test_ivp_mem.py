"""IVP loads and stores (docs/firmware.md §6.2 Loads, B06; docs/anchors.md §7 LA/LAV/SA protocol): lv2nx8_ip,
l2a4nx8_ip,
lav2nx8_xp, the la2nx8 streaming helper, labvdcmprs2nx8_xp, sv2nx8_ip, sav2nx8_xp.

Memory is a uint8 buffer with a byte offset; the `_ip` / `_xp` forms return the post-incremented offset. The
variable-length forms (lav2nx8_xp, labvdcmprs2nx8_xp, sav2nx8_xp) move c = min(max(n, 0), 64) bytes and advance
the offset by the same c (not by n), as Cadence's kernels need when they issue n, n - 64, ... on one stream.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from q7emu.errors import InvalidArgument
from q7emu.primitives import ivp

#: the op-table rows this file tests by hand (test_ivp_catalog checks the declaration against the table and
#: that each is called inside an asserting test)
COVERS = ("lv2nx8_ip", "l2a4nx8_ip", "lav2nx8_xp", "labvdcmprs2nx8_xp", "sv2nx8_ip", "sav2nx8_xp", "lv2nx8_i",
          "la2nx8_pp", "la2nx8_ip")

PROP = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MEM = np.arange(256, dtype=np.uint8)          # byte i holds i


def eq(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype


def u8(x):
    return np.array(list(x), dtype=np.int64).astype(np.uint8)


# ===================================================================== aligned / two-row loads
def test_lv2nx8_ip_post_increment():
    vt, off = ivp.lv2nx8_ip(MEM, 64, 64)
    eq(vt, u8(range(64, 128)))                # bytes 64..127
    assert off == 128
    vt, off = ivp.lv2nx8_ip(MEM, 128, -64)    # negative increment
    eq(vt, u8(range(128, 192)))
    assert off == 64
    vt, off = ivp.lv2nx8_ip(MEM, 0, 0)
    assert off == 0 and vt[63] == 63


def test_l2a4nx8_ip_unaligned_offset():
    vt, off = ivp.l2a4nx8_ip(MEM, 5, 128)
    # any byte offset: bytes 5..68 (crosses the 64-byte row boundary), off += 128
    eq(vt, u8(range(5, 69)))
    assert off == 133
    vt, off = ivp.l2a4nx8_ip(MEM, 192, 64)    # last full row of the buffer
    eq(vt, u8(range(192, 256)))
    assert off == 256


def test_loads_reject_out_of_range():
    with pytest.raises(InvalidArgument):
        ivp.lv2nx8_ip(MEM, 193, 0)            # 193 + 64 > 256
    with pytest.raises(InvalidArgument):
        ivp.l2a4nx8_ip(MEM, -1, 0)
    with pytest.raises(InvalidArgument):
        ivp.lv2nx8_ip(MEM.astype(np.int16), 0, 0)   # memory must be uint8
    with pytest.raises(InvalidArgument):
        ivp.lv2nx8_ip(MEM.reshape(16, 16), 0, 0)    # ... and 1-D


# ===================================================================== variable-length tail load
def test_lav2nx8_xp_tails():
    vt, off = ivp.lav2nx8_xp(MEM, 3, 10)
    # first 10 bytes 3..12, zero above ; off += 10
    eq(vt, u8(list(range(3, 13)) + [0] * 54))
    assert off == 13
    vt, off = ivp.lav2nx8_xp(MEM, 0, 64)      # n = 64: the full vector
    eq(vt, u8(range(64)))
    assert off == 64
    vt, off = ivp.lav2nx8_xp(MEM, 100, 100)   # n > 64: 64 bytes, off += 64 (the bytes moved)
    eq(vt, u8(range(100, 164)))
    assert off == 164
    vt, off = ivp.lav2nx8_xp(MEM, 7, 0)       # n = 0: nothing read
    eq(vt, u8([0] * 64))
    assert off == 7
    vt, off = ivp.lav2nx8_xp(MEM, 7, -5)      # n < 0: nothing read, the offset does not move
    eq(vt, u8([0] * 64))
    assert off == 7
    vt, off = ivp.lav2nx8_xp(MEM, 192, 65)    # n = 65: 64 bytes (the last row), off += 64
    eq(vt, u8(range(192, 256)))
    assert off == 256
    vt, off = ivp.lav2nx8_xp(MEM, 63, 1)      # n = 1
    eq(vt, u8([63] + [0] * 63))
    assert off == 64


def test_every_tail_length_and_place():
    # every n from -2 to 70 at offsets whose tail ends at the buffer's end, mid-buffer and at the start (the SIMD
    # bodies build a partial 16-byte quarter from the 16 bytes that end at the tail: q7_load_prefix); the bytes a
    # load gives, against the rule: the first c = min(max(n, 0), 64) bytes from off, zero above
    buf = np.arange(7, 7 + 300, dtype=np.int64).astype(np.uint8)
    for n in range(-2, 71):
        c = min(max(n, 0), 64)
        for off in (0, 1, 17, 100, len(buf) - c):
            want = np.zeros(64, np.uint8)
            want[:c] = buf[off:off + c]
            vt, new = ivp.lav2nx8_xp(buf, off, n)
            eq(vt, want)
            assert new == off + c
            vt, _ = ivp.labvdcmprs2nx8_xp(buf, np.ones(64, np.bool_), off, n)     # all true: R itself
            eq(vt, want)


def test_lav2nx8_xp_only_touches_n_bytes():
    small = np.arange(70, dtype=np.uint8)
    vt, off = ivp.lav2nx8_xp(small, 60, 10)   # bytes 60..69: the last byte of the buffer
    eq(vt, u8(list(range(60, 70)) + [0] * 54))
    assert off == 70
    with pytest.raises(InvalidArgument):
        ivp.lav2nx8_xp(small, 60, 11)          # byte 70 is outside
    vt, off = ivp.lav2nx8_xp(small, 70, 0)    # n = 0 at the very end is legal
    assert off == 70


# ===================================================================== unaligned streaming protocol
def test_la2nx8_stream_unaligned():
    outs, off = ivp.la2nx8_stream(MEM, 5, 3)
    # output byte j = byte (off % 64 + j) of {carry row || next row}: consecutive 64-byte windows from 5
    eq(outs[0], u8(range(5, 69)))
    eq(outs[1], u8(range(69, 133)))
    eq(outs[2], u8(range(133, 197)))
    assert off == 5 + 3 * 64


def test_la2nx8_stream_aligned_and_past_end():
    outs, off = ivp.la2nx8_stream(MEM, 64, 2)
    eq(outs[0], u8(range(64, 128)))
    eq(outs[1], u8(range(128, 192)))
    assert off == 192
    # past the end of a 100-byte buffer the helper reads zeros (it pads the buffer)
    outs, off = ivp.la2nx8_stream(np.arange(100, dtype=np.uint8), 40, 1)
    eq(outs[0], u8(list(range(40, 100)) + [0] * 4))
    assert off == 104


# ===================================================================== mask-expanded load
def test_labvdcmprs2nx8_xp_expand_rule():
    vb = np.zeros(64, dtype=np.bool_)
    vb[[1, 2, 10, 63]] = True
    vt, off = ivp.labvdcmprs2nx8_xp(MEM, vb, 32, 48)
    # R = bytes 32..79 (n = 48), zero above ; true lanes take R[popcount below]: lane1 R[0] = 32, lane2 R[1] = 33,
    # lane10 R[2] = 34, lane63 R[3] = 35 ; false lanes take R[63] = 0 ; off += 48
    want = np.zeros(64, dtype=np.uint8)
    want[[1, 2, 10, 63]] = [32, 33, 34, 35]
    eq(vt, want)
    assert off == 80
    vt, off = ivp.labvdcmprs2nx8_xp(MEM, np.ones(64, dtype=np.bool_), 100, 100)   # n > 64: 64 bytes, off += 64
    eq(vt, u8(range(100, 164)))
    assert off == 164
    vt, off = ivp.labvdcmprs2nx8_xp(MEM, np.ones(64, dtype=np.bool_), 7, 0)      # n = 0: nothing read
    eq(vt, u8([0] * 64))
    assert off == 7
    vt, off = ivp.labvdcmprs2nx8_xp(MEM, np.ones(64, dtype=np.bool_), 7, -9)     # n < 0: nothing, off stays
    eq(vt, u8([0] * 64))
    assert off == 7


def test_labvdcmprs2nx8_xp_byte_spread():
    # the even-byte predicate spreads byte j into the low byte of 16-bit lane j; the high byte is R[63]
    vb = np.zeros(64, dtype=np.bool_)
    vb[::2] = True
    vt, off = ivp.labvdcmprs2nx8_xp(MEM, vb, 5, 32)
    eq(vt.view(np.uint16), np.arange(5, 37, dtype=np.uint16))      # R[63] = 0 (only 32 bytes read)
    assert off == 37
    vt, _ = ivp.labvdcmprs2nx8_xp(MEM, vb, 0, 64)
    eq(vt.view(np.uint16), np.arange(32, dtype=np.uint16) | np.uint16(63 << 8))


def test_labvdcmprs2nx8_xp_group_spread():
    # 3 bytes of every 4 (the FP6 path's predicate): 3-byte group i into the low 3 bytes of 32-bit lane i, the
    # top byte R[63]
    vb = np.tile(np.array([1, 1, 1, 0], np.bool_), 16)
    vt, off = ivp.labvdcmprs2nx8_xp(MEM, vb, 7, 48)
    eq(vt.view(np.uint32), np.array([(7 + 3 * i) | (8 + 3 * i) << 8 | (9 + 3 * i) << 16 for i in range(16)],
                                    np.uint32))                  # R[63] = 0: only 48 bytes read
    assert off == 55
    vt, _ = ivp.labvdcmprs2nx8_xp(MEM, vb, 0, 64)
    assert vt[3::4].tolist() == [63] * 16 and vt[0::4].tolist() == list(range(0, 48, 3))


def test_labvdcmprs2nx8_xp_only_touches_n_bytes():
    small = np.arange(70, dtype=np.uint8)
    vt, off = ivp.labvdcmprs2nx8_xp(small, np.ones(64, np.bool_), 60, 10)
    eq(vt, u8(list(range(60, 70)) + [0] * 54))
    assert off == 70
    with pytest.raises(InvalidArgument):
        ivp.labvdcmprs2nx8_xp(small, np.ones(64, np.bool_), 60, 11)


# ===================================================================== stores
def test_sv2nx8_ip():
    mem = np.zeros(200, dtype=np.uint8)
    off = ivp.sv2nx8_ip(mem, u8(range(1, 65)), 10, 64)
    # bytes 10..73 = 1..64 ; the others untouched ; off += 64
    assert off == 74
    eq(mem[10:74], u8(range(1, 65)))
    assert not mem[:10].any() and not mem[74:].any()


def test_sav2nx8_xp_tails():
    vs = u8(range(1, 65))
    mem = np.zeros(200, dtype=np.uint8)
    assert ivp.sav2nx8_xp(mem, vs, 10, 5) == 15          # n = 5: bytes 10..14 = 1..5
    eq(mem[10:15], u8([1, 2, 3, 4, 5]))
    assert not mem[:10].any() and not mem[15:].any()
    mem[:] = 0
    assert ivp.sav2nx8_xp(mem, vs, 10, 0) == 10          # n = 0: nothing written
    assert ivp.sav2nx8_xp(mem, vs, 10, -3) == 10         # n < 0: nothing written, the offset does not move
    assert not mem.any()
    assert ivp.sav2nx8_xp(mem, vs, 100, 70) == 164       # n > 64: 64 bytes written, off += 64
    eq(mem[100:164], vs)
    assert not mem[164:].any()


def test_variable_length_pair_streams_n_bytes_in_64_byte_steps():
    # n = 150 over four calls n, n - 64, n - 128, n - 192 (64, 64, 22, 0 bytes): one contiguous stream
    src = np.arange(256, dtype=np.uint8)
    dst = np.zeros(256, dtype=np.uint8)
    off_in, off_out = 3, 5
    for m in (150, 86, 22, -42):
        vt, off_in = ivp.lav2nx8_xp(src, off_in, m)
        off_out = ivp.sav2nx8_xp(dst, vt, off_out, m)
    assert off_in == 3 + 150 and off_out == 5 + 150
    eq(dst[5:155], src[3:153])
    assert not dst[:5].any() and not dst[155:].any()


def test_stores_reject_bad_memory():
    vs = u8(range(64))
    with pytest.raises(InvalidArgument):
        ivp.sv2nx8_ip(np.zeros(100, dtype=np.uint8), vs, 40, 0)      # 40 + 64 > 100
    with pytest.raises(InvalidArgument):
        ivp.sv2nx8_ip(np.zeros(200, dtype=np.uint8)[::2], vs, 0, 0)  # non-contiguous
    with pytest.raises(InvalidArgument):
        ivp.sav2nx8_xp(bytearray(200), vs, 0, 5)                     # not an ndarray
    with pytest.raises(InvalidArgument):
        ivp.sav2nx8_xp(np.zeros(10, dtype=np.uint8), vs, 8, 3)       # 8 + 3 > 10


# ===================================================================== numpy-reference properties
@PROP
@given(mem=arrays(np.uint8, 256), off=st.integers(0, 192), inc=st.integers(-300, 300))
def test_prop_full_loads(mem, off, inc):
    for f in (ivp.lv2nx8_ip, ivp.l2a4nx8_ip):
        vt, o = f(mem, off, inc)
        eq(vt, mem[off:off + 64])
        assert o == off + inc


@PROP
@given(mem=arrays(np.uint8, 256), off=st.integers(0, 192), n=st.integers(-100, 200))
def test_prop_lav_sav(mem, off, n):
    k = max(0, min(n, 64))
    vt, o = ivp.lav2nx8_xp(mem, off, n)
    eq(vt, np.concatenate([mem[off:off + k], np.zeros(64 - k, dtype=np.uint8)]))
    assert o == off + k
    dst = np.zeros(256, dtype=np.uint8)
    want = dst.copy()
    want[off:off + k] = mem[:k]
    assert ivp.sav2nx8_xp(dst, mem[:64].copy(), off, n) == off + k
    eq(dst, want)


@PROP
@given(mem=arrays(np.uint8, 256), off=st.integers(0, 64), count=st.integers(1, 2))
def test_prop_la2nx8_stream(mem, off, count):
    outs, o = ivp.la2nx8_stream(mem, off, count)
    for c, v in enumerate(outs):
        eq(v, mem[off + 64 * c: off + 64 * c + 64])
    assert o == off + 64 * count


@PROP
@given(mem=arrays(np.uint8, 128), vb=arrays(np.bool_, 64), off=st.integers(0, 64), n=st.integers(-64, 64))
def test_prop_labvdcmprs2nx8_xp(mem, vb, off, n):
    k = max(0, min(n, 64))
    r = np.zeros(64, np.uint8)
    r[:k] = mem[off:off + k]
    below = np.cumsum(vb) - vb
    vt, o = ivp.labvdcmprs2nx8_xp(mem, vb, off, n)
    eq(vt, np.where(vb, r[np.minimum(below, 63)], r[63]))
    assert o == off + k


# ===================================================================== C-only primitives (via _ivp._c_*)
def test_lv2nx8_i_no_update():
    from q7emu.primitives import _ivp
    eq(_ivp._c_lv2nx8_i(MEM, 70), u8(range(70, 134)))        # bytes 70..133, no offset returned
    with pytest.raises(InvalidArgument):
        _ivp._c_lv2nx8_i(MEM, 200)                           # 200 + 64 > 256


def test_la2nx8_pp_ip_stream_pair():
    from q7emu.primitives import _ivp
    u = _ivp._c_la2nx8_pp(MEM, 70)                          # the aligned row holding byte 70: bytes 64..127
    eq(u, u8(range(64, 128)))
    # la2nx8_ip at off 70: window = u (64..127) || next row (128..191); vt = window[6:70] = bytes 70..133;
    # the carry becomes the row 128..191 and off advances by 64
    vt, u2, off = _ivp._c_la2nx8_ip(MEM, u, 70)
    eq(vt, u8(range(70, 134)))
    eq(u2, u8(range(128, 192)))
    assert off == 134
    with pytest.raises(InvalidArgument):
        _ivp._c_la2nx8_ip(MEM, u, 192)                      # rows 192 and 256: bytes [192, 320) of 256


# ===================================================================== hostile offsets, lengths and counts (issue 15)
# Every wrapper that takes an offset, increment, length or count, over the whole integer range: the result is the
# numpy reference's, or InvalidArgument exactly when the reference says the access leaves the buffer (or a value
# does not fit the signed 64-bit range). The reference is plain Python integers and numpy slicing.
I64_MIN, I64_MAX = -(2 ** 63), 2 ** 63 - 1
EDGES = [0, 1, -1, 63, 64, 65, 127, 128, 191, 192, 255, 256, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), 2 ** 32, 2 ** 62,
         I64_MAX - 64, I64_MAX - 1, I64_MAX, I64_MAX + 1, I64_MIN, I64_MIN + 1, I64_MIN - 1, 2 ** 64 - 1, 2 ** 64,
         -(2 ** 64)]
big_ints = st.one_of(st.sampled_from(EDGES), st.integers(-(2 ** 64), 2 ** 64), st.integers(-300, 300))
HOSTILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fits(*vals):
    return all(I64_MIN <= v <= I64_MAX for v in vals)


def expect(valid, call):
    """The call's result when the reference says valid; InvalidArgument (one line) otherwise."""
    if valid:
        return call()
    with pytest.raises(InvalidArgument) as e:
        call()
    assert "\n" not in str(e.value)
    return None


@HOSTILE
@given(mem=arrays(np.uint8, st.integers(0, 300)), off=big_ints, inc=big_ints)
def test_hostile_full_loads(mem, off, inc):
    valid = fits(off, inc) and 0 <= off <= len(mem) - 64 and fits(off + inc)
    for f in (ivp.lv2nx8_ip, ivp.l2a4nx8_ip):
        got = expect(valid, lambda f=f: f(mem, off, inc))
        if valid:
            eq(got[0], mem[off:off + 64])
            assert got[1] == off + inc


@HOSTILE
@given(mem=arrays(np.uint8, st.integers(0, 300)), off=big_ints, n=big_ints)
def test_hostile_lav_sav(mem, off, n):
    k = max(0, min(n, 64))
    # the op moves and advances by k: off + k <= len(mem) always fits, whatever n is
    valid = fits(off, n) and 0 <= off <= len(mem) - k
    got = expect(valid, lambda: ivp.lav2nx8_xp(mem, off, n))
    if got is not None:
        eq(got[0], np.concatenate([mem[off:off + k], np.zeros(64 - k, np.uint8)]))
        assert got[1] == off + k
    dst = np.arange(len(mem), dtype=np.uint8)
    want = dst.copy()
    vs = np.full(64, 0xA5, np.uint8)
    got = expect(valid, lambda: ivp.sav2nx8_xp(dst, vs, off, n))
    if got is not None:
        want[off:off + k] = 0xA5
        assert got == off + k
    eq(dst, want)                              # nothing written outside [off, off + k), nothing at all when refused


@HOSTILE
@given(mem=arrays(np.uint8, st.integers(0, 300)), off=big_ints, inc=big_ints)
def test_hostile_sv2nx8_ip(mem, off, inc):
    valid = fits(off, inc) and 0 <= off <= len(mem) - 64 and fits(off + inc)
    dst = mem.copy()
    want = mem.copy()
    vs = np.arange(64, dtype=np.uint8)
    got = expect(valid, lambda: ivp.sv2nx8_ip(dst, vs, off, inc))
    if valid:
        want[off:off + 64] = vs
        assert got == off + inc
    eq(dst, want)


@HOSTILE
@given(mem=arrays(np.uint8, st.integers(0, 300)), off=big_ints, n=big_ints)
def test_hostile_labvdcmprs2nx8_xp(mem, off, n):
    vb = np.zeros(64, np.bool_)
    vb[::3] = True
    k = max(0, min(n, 64))
    valid = fits(off, n) and 0 <= off <= len(mem) - k
    got = expect(valid, lambda: ivp.labvdcmprs2nx8_xp(mem, vb, off, n))
    if got is not None:
        r = np.zeros(64, np.uint8)
        r[:k] = mem[off:off + k]
        below = np.cumsum(vb) - vb
        eq(got[0], np.where(vb, r[np.minimum(below, 63)], r[63]))
        assert got[1] == off + k


VARIABLE_LENGTH = {
    "lav2nx8_xp": lambda mem, off, n: ivp.lav2nx8_xp(mem, off, n)[1],
    "labvdcmprs2nx8_xp": lambda mem, off, n: ivp.labvdcmprs2nx8_xp(mem, np.ones(64, np.bool_), off, n)[1],
    "sav2nx8_xp": lambda mem, off, n: ivp.sav2nx8_xp(mem, np.zeros(64, np.uint8), off, n),
}


@pytest.mark.parametrize("name", sorted(VARIABLE_LENGTH))
@pytest.mark.parametrize("off,n", [(1, I64_MAX), (100, I64_MAX - 99)])
def test_variable_length_n_past_int64_is_valid(name, off, n):
    # 64 bytes moved at offset off of an (off + 64)-byte buffer: the new offset is off + 64, whatever n >= 64 is
    assert VARIABLE_LENGTH[name](np.zeros(off + 64, np.uint8), off, n) == off + 64


@HOSTILE
@given(mem=arrays(np.uint8, st.integers(0, 300)), off=big_ints)
def test_hostile_c_only_memory_ops(mem, off):
    from q7emu.primitives import _ivp
    got = expect(fits(off) and 0 <= off <= len(mem) - 64, lambda: _ivp._c_lv2nx8_i(mem, off))
    if got is not None:
        eq(got, mem[off:off + 64])
    row = off - off % 64 if off >= 0 else None
    got = expect(fits(off) and off >= 0 and row + 64 <= len(mem), lambda: _ivp._c_la2nx8_pp(mem, off))
    if got is not None:
        eq(got, mem[row:row + 64])
    u = np.arange(64, dtype=np.uint8)
    got = expect(fits(off) and off >= 0 and row + 128 <= len(mem), lambda: _ivp._c_la2nx8_ip(mem, u, off))
    if got is not None:
        window = np.concatenate([u, mem[row + 64:row + 128]])
        eq(got[0], window[off % 64:off % 64 + 64])
        eq(got[1], mem[row + 64:row + 128])
        assert got[2] == off + 64


@HOSTILE
@given(mem=arrays(np.uint8, st.integers(0, 300)), off=big_ints, count=st.one_of(big_ints, st.integers(0, 6)))
def test_hostile_la2nx8_stream(mem, off, count):
    n = len(mem)
    valid = fits(off, count) and 0 <= off <= n and count >= 0 and (count == 0 or off + 64 * (count - 1) < n)
    got = expect(valid, lambda: ivp.la2nx8_stream(mem, off, count))
    if valid:
        padded = np.concatenate([mem, np.zeros(64 * (count + 2), np.uint8)])
        outs, o = got
        assert len(outs) == count and o == off + 64 * count
        for c, v in enumerate(outs):
            eq(v, padded[off + 64 * c:off + 64 * c + 64])


NOT_INTS = [1.0, 64.5, "64", b"\x40", None, True, np.bool_(True), [64], np.array([64]), np.float64(64), complex(1),
            np.uint64(2 ** 64 - 1), object()]


@pytest.mark.parametrize("bad", NOT_INTS, ids=lambda v: type(v).__name__ + repr(v)[:12])
def test_offsets_that_are_not_ints_are_invalid_argument(bad):
    mem = np.zeros(256, np.uint8)
    vs = np.zeros(64, np.uint8)
    calls = [lambda: ivp.lv2nx8_ip(mem, bad, 0), lambda: ivp.lv2nx8_ip(mem, 0, bad),
             lambda: ivp.l2a4nx8_ip(mem, bad, 0), lambda: ivp.lav2nx8_xp(mem, 0, bad),
             lambda: ivp.sav2nx8_xp(mem, vs, bad, 4), lambda: ivp.sv2nx8_ip(mem, vs, 0, bad),
             lambda: ivp.labvdcmprs2nx8_xp(mem, np.ones(64, np.bool_), bad, 0),
             lambda: ivp.la2nx8_stream(mem, bad, 1), lambda: ivp.la2nx8_stream(mem, 0, bad)]
    for call in calls:
        with pytest.raises(InvalidArgument) as e:
            call()
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("mem", [[[1, 2], [3]], [0] * 256, "x" * 256, b"\0" * 256, np.zeros((16, 16), np.uint8),
                                 np.zeros(256, np.int16), np.zeros(512, np.uint8)[::2], None, 3, object()],
                         ids=lambda m: type(m).__name__)
def test_bad_memory_arguments_are_invalid_argument(mem):
    """A list, a ragged list, bytes, a 2-D or wider array: InvalidArgument (was ValueError / TypeError). A
    non-contiguous uint8 array is fine to read from, never to store into."""
    vs = np.zeros(64, np.uint8)
    for call in (lambda: ivp.lv2nx8_ip(mem, 0, 0), lambda: ivp.sv2nx8_ip(mem, vs, 0, 0),
                 lambda: ivp.la2nx8_stream(mem, 0, 1)):
        try:
            call()
        except InvalidArgument as e:
            assert "\n" not in str(e)
        else:
            assert call is not None and isinstance(mem, np.ndarray) and mem.dtype == np.uint8 and mem.ndim == 1
            with pytest.raises(InvalidArgument):
                ivp.sv2nx8_ip(mem, vs, 0, 0)


def test_time_op_iterations_are_bounded():
    from q7emu.primitives import _ivp
    assert _ivp.time_op("add2nx8", 10) >= 0
    for bad in (0, -1, _ivp.TIME_OP_MAX_ITERATIONS + 1, 2 ** 64, 1.5, "10", None):
        with pytest.raises(InvalidArgument):
            _ivp.time_op("add2nx8", bad)
    with pytest.raises(InvalidArgument):
        _ivp.time_op(12, 10)
