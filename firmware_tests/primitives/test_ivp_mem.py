"""IVP loads and stores (SPEC §6.2 Loads, B06; ANCHORS §7 LA/LAV/SA protocol): lv2nx8_ip, l2a4nx8_ip,
lav2nx8_xp, the la2nx8 streaming helper, labvdcmprs2nx8_xp, sv2nx8_ip, sav2nx8_xp.

Memory is a uint8 buffer with a byte offset; the `_ip` / `_xp` forms return the post-incremented offset.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from q7emu.primitives import ivp
from q7emu.errors import InvalidArgument

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
    vt, off = ivp.lav2nx8_xp(MEM, 100, 100)   # n > 64: 64 bytes, off still += n
    eq(vt, u8(range(100, 164)))
    assert off == 200
    vt, off = ivp.lav2nx8_xp(MEM, 7, 0)       # n = 0: nothing read
    eq(vt, u8([0] * 64))
    assert off == 7
    vt, off = ivp.lav2nx8_xp(MEM, 7, -5)      # n < 0: nothing read, off += n
    eq(vt, u8([0] * 64))
    assert off == 2
    vt, off = ivp.lav2nx8_xp(MEM, 63, 1)      # n = 1
    eq(vt, u8([63] + [0] * 63))
    assert off == 64


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
    # R = bytes 32..95 ; true lanes take R[popcount below]: lane1 R[0] = 32, lane2 R[1] = 33, lane10 R[2] = 34,
    # lane63 R[3] = 35 ; false lanes take R[63] = 95 ; off += 48
    want = np.full(64, 95, dtype=np.uint8)
    want[[1, 2, 10, 63]] = [32, 33, 34, 35]
    eq(vt, want)
    assert off == 80
    vt, _ = ivp.labvdcmprs2nx8_xp(MEM, np.ones(64, dtype=np.bool_), 0, 0)
    eq(vt, u8(range(64)))


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
    assert ivp.sav2nx8_xp(mem, vs, 10, -3) == 7          # n < 0: nothing written, off += n
    assert not mem.any()
    assert ivp.sav2nx8_xp(mem, vs, 100, 70) == 170       # n > 64: 64 bytes written
    eq(mem[100:164], vs)
    assert not mem[164:].any()


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
    assert o == off + n
    dst = np.zeros(256, dtype=np.uint8)
    want = dst.copy()
    want[off:off + k] = mem[:k]
    assert ivp.sav2nx8_xp(dst, mem[:64].copy(), off, n) == off + n
    eq(dst, want)


@PROP
@given(mem=arrays(np.uint8, 256), off=st.integers(0, 64), count=st.integers(1, 2))
def test_prop_la2nx8_stream(mem, off, count):
    outs, o = ivp.la2nx8_stream(mem, off, count)
    for c, v in enumerate(outs):
        eq(v, mem[off + 64 * c: off + 64 * c + 64])
    assert o == off + 64 * count


@PROP
@given(mem=arrays(np.uint8, 128), vb=arrays(np.bool_, 64), off=st.integers(0, 64), stride=st.integers(-64, 64))
def test_prop_labvdcmprs2nx8_xp(mem, vb, off, stride):
    r = mem[off:off + 64]
    below = np.cumsum(vb) - vb
    vt, o = ivp.labvdcmprs2nx8_xp(mem, vb, off, stride)
    eq(vt, np.where(vb, r[np.minimum(below, 63)], r[63]))
    assert o == off + stride


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
