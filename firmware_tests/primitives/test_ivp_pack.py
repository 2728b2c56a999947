"""wvec <-> vec: cvtg48n_2x32{l,h} (docs/firmware.md §6.2 B22), packvr* / packl* / packm / packh
(docs/firmware.md §6.2 B10,
docs/anchors.md §7 PACKVRU / PACKVRNR / PACKL probes), and the wvec_raw / wvec_view image helpers
(docs/firmware.md §6.1).

packvr*: (x + 2^(sh-1)) >> sh (arithmetic, half up), then saturate (signed; `u` unsigned); packvrnr*: x >> sh
truncating, keep the low bits (wraps); the AR shift is clamped to 23 (8-bit out) / 32 (16/32-bit out).
Wide lanes are given and returned as signed integers of the view width. cvtg48n_2x32l/h take their two sources
in the Xtensa C intrinsics' order, high half first: (hi, lo) with pool32 = lo (lanes 0..15) || hi (lanes 16..31).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from ivp_testlib import pool

from q7emu.errors import InvalidArgument
from q7emu.primitives import ivp

#: the op-table rows this file tests by hand (test_ivp_catalog checks the declaration against the table and
#: that each is called inside an asserting test)
COVERS = ("cvtg48n_2x32l", "cvtg48n_2x32h", "packvr2nx24", "packvrnx48", "packvru2nx24", "packvrunx48",
          "packvrnr2nx24", "packvrnrnx48", "packvrn_2x96", "packl2nx24", "packlnx48", "packmnx48",
          "packhnx48", "packln_2x96")

PROP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROP_XFAIL = settings(max_examples=25, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
                      suppress_health_check=[HealthCheck.too_slow])

def eq(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype


def A(n, head, fill=0):
    out = [fill] * n
    out[: len(head)] = head
    return out


def V(dt, n, head, fill=0):
    return np.array(A(n, head, fill), dtype=np.int64).astype(dt)


# ===================================================================== cvtg48
def test_cvtg48n_2x32l_zero_fill_identity_gather():
    lo = V(np.uint32, 16, [0xFFFFFFFF, 1, 0x80000000])
    hi = V(np.uint32, 16, [0x80000000, 0x12345678])
    got = ivp.cvtg48n_2x32l(hi, lo)
    # lane i < 16 = lo[i] zero-extended ; lane 16 + i = hi[i] ; high 16 bits 0, so every lane is >= 0
    # (0xFFFFFFFF -> 4294967295, not -1)
    want = np.zeros(32, dtype=np.int64)
    want[:3] = [4294967295, 1, 2147483648]
    want[16:18] = [2147483648, 0x12345678]
    eq(got, want)


def test_cvtg48n_2x32h_small_acc():
    acc = A(32, [0x1234, 0x0FFF, 7])
    lo = V(np.uint32, 16, [0x00018765, 0xFFFF0002])
    hi = V(np.uint32, 16, [0x0003])
    got = ivp.cvtg48n_2x32h(acc, hi, lo)
    # lane = low 32 bits of acc | (low 16 bits of pool lane) << 32, pool = lo || hi:
    # lane0 = 0x8765_0000_1234 -> top bit set -> reads back as 0x876500001234 - 2^48
    # lane1 = 0x0002_0000_0FFF ; lane2 = acc 7, pool lane 2 = lo[2] = 0 ; lane16 = hi[0] = 3 -> 3 << 32
    want = np.array(A(32, [0x876500001234 - 2 ** 48, 0x000200000FFF, 7]), dtype=np.int64)
    want[16] = 3 << 32
    eq(got, want)


def test_cvtg48n_2x32h_keeps_low_32_bits_of_large_acc():
    acc = A(32, [0x7FFF_89AB_CDEF, -1])
    lo = V(np.uint32, 16, [0x00000002, 0])
    # lane0: low 32 = 0x89ABCDEF, high 16 from lo[0] = 2 -> 0x0002_89AB_CDEF ;
    # lane1: acc -1 = 0xFFFF_FFFF_FFFF: low 32 kept, high 16 = 0 -> 0x0000_FFFF_FFFF = 4294967295
    got = ivp.cvtg48n_2x32h(acc, V(np.uint32, 16, []), lo)
    assert got[0] == 0x000289ABCDEF and got[1] == 4294967295


def test_cvtg48_first_operand_fills_lanes_16_to_31():
    ones, zero = V(np.uint32, 16, [], 1), V(np.uint32, 16, [])
    eq(ivp.cvtg48n_2x32l(ones, zero), np.array([0] * 16 + [1] * 16, dtype=np.int64))
    eq(ivp.cvtg48n_2x32h(A(32, []), ones, zero), np.array([0] * 16 + [1 << 32] * 16, dtype=np.int64))


# ===================================================================== packvr 24 -> 8
def test_packvr2nx24_half_up():
    # sh = 1: (x + 1) >> 1: 5 -> 3 (2.5 up) ; -1 -> 0 (-0.5 up to 0) ; -3 -> -1 (-1.5 up) ; -5 -> -2 ;
    # 3 -> 2 ; 1 -> 1 ; 0 -> 0 ; 2 -> 1
    eq(ivp.packvr2nx24(A(64, [5, -1, -3, -5, 3, 1, 0, 2]), 1), V(np.int8, 64, [3, 0, -1, -2, 2, 1, 0, 1]))


def test_packvr2nx24_saturates():
    acc = A(64, [200, -200, 2 ** 23 - 1, -2 ** 23, 127, -128, 128, -129])
    # sh = 0: exact, then clamp to [-128, 127]
    eq(ivp.packvr2nx24(acc, 0), V(np.int8, 64, [127, -128, 127, -128, 127, -128, 127, -128]))
    # sh = 4: 200+8 = 208 >> 4 = 13 ; -200+8 = -192 >> 4 = -12 ; (2^23-1+8)>>4 = 524288 -> 127 ; -2^23 -> -128 ;
    # 135 >> 4 = 8 ; -120 >> 4 = -8 ; 136 >> 4 = 8 ; -121 >> 4 = floor(-7.56) = -8
    eq(ivp.packvr2nx24(acc, 4), V(np.int8, 64, [13, -12, 127, -128, 8, -8, 8, -8]))


def test_packvr2nx24_shift_23_and_clamp():
    acc = A(64, [2 ** 23 - 1, -2 ** 23, 2 ** 22, 2 ** 22 - 1, -2 ** 22, -2 ** 22 - 1])
    # (x + 2^22) >> 23: 12582911 >> 23 = 1 ; -2^22 >> 23 = -1 ; 2^23 >> 23 = 1 ; (2^23 - 1) >> 23 = 0 ;
    # 0 >> 23 = 0 ; -1 >> 23 = -1
    want = V(np.int8, 64, [1, -1, 1, 0, 0, -1])
    eq(ivp.packvr2nx24(acc, 23), want)
    eq(ivp.packvr2nx24(acc, 30), want)   # the AR shift is clamped to 23 for 8-bit output
    eq(ivp.packvr2nx24(acc, 63), want)


def test_packvru2nx24():
    # sh = 1: 511 -> 512 >> 1 = 256 -> 255 ; 509 -> 255 ; -1 -> 0 ; -3 -> -1 -> 0 ; 2 -> 1
    eq(ivp.packvru2nx24(A(64, [511, 509, -1, -3, 2]), 1), V(np.uint8, 64, [255, 255, 0, 0, 1]))
    # sh = 0: 0x7FFFFF -> 255 ; 0x800000 is read as signed -2^23 -> 0 (ANCHORS T10) ; 255 ; 256 -> 255 ; -1 -> 0
    eq(ivp.packvru2nx24(A(64, [0x7FFFFF, 0x800000, 255, 256, -1]), 0), V(np.uint8, 64, [255, 0, 255, 255, 0]))


def test_packvrnr2nx24_truncates_and_wraps():
    # sh = 4, floor shift, keep 8 bits: 0x123456 >> 4 = 0x12345 -> 0x45 ; -1 -> -1 -> 0xFF ;
    # -17 >> 4 = floor(-1.0625) = -2 -> 0xFE (rounding would give -1) ; 24 >> 4 = 1 (rounding: 2) ;
    # 0x7FFFFF >> 4 = 0x7FFFF -> 0xFF (no saturation)
    eq(ivp.packvrnr2nx24(A(64, [0x123456, -1, -17, 24, 0x7FFFFF]), 4), V(np.uint8, 64, [0x45, 0xFF, 0xFE, 1, 0xFF]))
    # sh = 0: 300 -> 44 ; -128 -> 0x80 ; 0x123 -> 0x23
    eq(ivp.packvrnr2nx24(A(64, [300, -128, 0x123]), 0), V(np.uint8, 64, [44, 0x80, 0x23]))
    # sh 40 clamps to 23: 0x7FFFFF >> 23 = 0 ; -1 >> 23 = -1 -> 0xFF ; -2^23 >> 23 = -1 -> 0xFF
    eq(ivp.packvrnr2nx24(A(64, [0x7FFFFF, -1, -2 ** 23]), 40), V(np.uint8, 64, [0, 0xFF, 0xFF]))


# ===================================================================== packvr 48 -> 16
def test_packvrnx48_small_lanes():
    # sh = 1: 5 -> 3 ; 3 -> 2 ; 1 -> 1 ; 65535 -> 32768 -> sat 32767
    eq(ivp.packvrnx48(A(32, [5, 3, 1, 65535]), 1), V(np.int16, 32, [3, 2, 1, 32767]))
    # sh = 0: 32767 ; 32768 -> 32767 ; 65535 -> 32767
    eq(ivp.packvrnx48(A(32, [32767, 32768, 65535]), 0), V(np.int16, 32, [32767, 32767, 32767]))


def test_packvrnx48_half_up_saturate_clamp():
    acc = A(32, [-1, -3, 2 ** 47 - 1, -2 ** 47, 3 * 2 ** 32 + 2 ** 31, -2 ** 31])
    # sh = 1: -1 -> 0 ; -3 -> -1 ; 2^47-1 -> sat 32767 ; -2^47 -> sat -32768 ; big -> 32767 ; -2^30 -> -32768
    eq(ivp.packvrnx48(acc, 1), V(np.int16, 32, [0, -1, 32767, -32768, 32767, -32768]))
    # sh = 32: (x + 2^31) >> 32: -1 -> 0 ; -3 -> 0 ; 2^47-1 -> 32768 -> 32767 ; -2^47 -> -32768 ;
    # 3*2^32 + 2^31 -> 4 ; -2^31 -> 0 (-0.5 up to 0)
    want = V(np.int16, 32, [0, 0, 32767, -32768, 4, 0])
    eq(ivp.packvrnx48(acc, 32), want)
    eq(ivp.packvrnx48(acc, 40), want)   # clamped to 32


def test_packvrunx48_small_lanes():
    # sh = 0: 65535 ; 65534 ; sh = 1: 65535 -> 32768 ; 2 -> 1
    eq(ivp.packvrunx48(A(32, [65535, 65534]), 0), V(np.uint16, 32, [65535, 65534]))
    eq(ivp.packvrunx48(A(32, [65535, 2]), 1), V(np.uint16, 32, [32768, 1]))


def test_packvrunx48_negative_to_zero():
    # -5 -> 0 ; 2^20 -> 65535 ; -1 (sh 1) -> 0 -> 0
    eq(ivp.packvrunx48(A(32, [-5, 2 ** 20, -1]), 0), V(np.uint16, 32, [0, 65535, 0]))


def test_packvrnrnx48_small_lanes():
    # sh = 8: 0xABCD >> 8 = 0xAB ; 0x00FF -> 0
    eq(ivp.packvrnrnx48(A(32, [0xABCD, 0xFF]), 8), V(np.uint16, 32, [0xAB, 0]))


def test_packvrnrnx48_wraps_and_clamps():
    acc = A(32, [0x0123456789AB, -1, -17])
    # sh = 8: 0x0123456789AB >> 8 = 0x0123456789 -> 0x6789 ; -1 -> 0xFFFF ; floor(-17/256) = -1 -> 0xFFFF
    eq(ivp.packvrnrnx48(acc, 8), V(np.uint16, 32, [0x6789, 0xFFFF, 0xFFFF]))
    # sh 40 clamps to 32: 0x0123456789AB >> 32 = 0x0123 (not >> 40 = 0x01)
    eq(ivp.packvrnrnx48(acc, 40), V(np.uint16, 32, [0x0123, 0xFFFF, 0xFFFF]))


# ===================================================================== packvrn_2x96 -> 32
def test_packvrn_2x96_zero():
    eq(ivp.packvrn_2x96([0] * 16, 5), V(np.int32, 16, []))


def test_packvrn_2x96_round_saturate():
    acc = A(16, [2 ** 40, -2 ** 40, 5 * 2 ** 32 + 2 ** 31, -2 ** 31, 2 ** 95 - 1, 7])
    # sh = 0: 2^40 -> INT32_MAX ; -2^40 -> INT32_MIN ; 5*2^32 + 2^31 -> MAX ; -2^31 exact ; MAX ; 7
    eq(ivp.packvrn_2x96(acc, 0), V(np.int32, 16, [2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, 7]))
    # sh = 32: (x + 2^31) >> 32: 256 ; -256 ; 6 (5.5 up) ; 0 (-0.5 up) ; 2^63 -> MAX ; 0
    want = V(np.int32, 16, [256, -256, 6, 0, 2 ** 31 - 1, 0])
    eq(ivp.packvrn_2x96(acc, 32), want)
    eq(ivp.packvrn_2x96(acc, 63), want)   # clamped to 32


def _packvrn_2x96_ref(x, s):
    return max(-2 ** 31, min(2 ** 31 - 1, (x + (1 << (s - 1))) >> s if s else x))


def test_packvrn_2x96_edges_at_every_shift():
    # at every shift s: the saturation bounds (the 96-bit values whose rounded shift is just inside or just
    # outside int32), the rounding's carry out of the low 64 bits, the 64-bit boundaries either side of zero and
    # the 96-bit extremes, 16 lanes per call; expected values from the definition in Python integers
    for s in range(33):
        half = 1 << (s - 1) if s else 0
        lim = 1 << (31 + s)
        xs = []
        for edge in (lim, -lim):
            xs += [edge - half + d for d in (-2, -1, 0, 1)]
        xs += [2 ** 64 - 1, 2 ** 64 - half, 2 ** 64 - half - 1, -2 ** 64, -2 ** 64 - 1, 2 ** 63 - 1, -2 ** 63,
               2 ** 95 - 1, -2 ** 95, -half, -half - 1, half - 1, (1 << s) - half, -(1 << s) - half - 1]
        # far out of range although the low 64 bits, rounded, shifted by 31 + s, equal the high word h (h * 2^64 +
        # h * 2^(31 + s)): the high word must also be the low word's sign
        for h in sorted({1, 2, -2, (1 << (32 - s)) - 1, -(1 << (32 - s))} - {0, -1}):
            if -2 ** 31 <= h < 2 ** 31 and -2 ** 63 <= h << (31 + s) < 2 ** 63:     # a 96-bit lane's high word
                xs.append(h * 2 ** 64 + (((h << (31 + s)) - half) % 2 ** 64))
        for k in range(0, len(xs), 16):
            acc = A(16, xs[k:k + 16], 3)
            eq(ivp.packvrn_2x96(acc, s), np.array([_packvrn_2x96_ref(x, s) for x in acc], dtype=np.int32))


# ===================================================================== packl / packm / packh
def test_packl2nx24():
    # low 8 bits: 0x123456 -> 0x56 ; -1 -> 0xFF ; 0x800000 -> 0x00 ; 0xFF -> 0xFF ; -256 -> 0x00
    eq(ivp.packl2nx24(A(64, [0x123456, -1, 0x800000, 0xFF, -256])), V(np.uint8, 64, [0x56, 0xFF, 0, 0xFF, 0]))


def test_packl_m_h_nx48_small_lanes():
    acc = A(32, [0xABCD, 0x1])
    eq(ivp.packlnx48(acc), V(np.uint16, 32, [0xABCD, 1]))
    eq(ivp.packmnx48(acc), V(np.uint16, 32, []))
    eq(ivp.packhnx48(acc), V(np.uint16, 32, []))


def test_packl_m_h_nx48_thirds():
    acc = A(32, [0x123456789ABC, -2])
    # 0x1234_5678_9ABC: l = 0x9ABC, m = 0x5678, h = 0x1234 ; -2 = 0xFFFF_FFFF_FFFE: l 0xFFFE, m 0xFFFF, h 0xFFFF
    eq(ivp.packlnx48(acc), V(np.uint16, 32, [0x9ABC, 0xFFFE]))
    eq(ivp.packmnx48(acc), V(np.uint16, 32, [0x5678, 0xFFFF]))
    eq(ivp.packhnx48(acc), V(np.uint16, 32, [0x1234, 0xFFFF]))


def test_packln_2x96():
    # low 32 bits: 0x123456789ABCDEF012345678 -> 0x12345678 ; -1 -> 0xFFFFFFFF ; 2^64 + 7 -> 7
    eq(ivp.packln_2x96(A(16, [0x123456789ABCDEF012345678, -1, 2 ** 64 + 7])),
       V(np.uint32, 16, [0x12345678, 0xFFFFFFFF, 7]))


def test_pack_rejects_bad_shift():
    for bad in (-1, 64, 1.5):
        with pytest.raises(InvalidArgument):
            ivp.packvr2nx24([0] * 64, bad)


# ===================================================================== wvec image and views
def test_wvec_raw_24_layout():
    raw = ivp.wvec_raw(A(64, [0x030201, -1, 0x800000]), 24)
    # lane i at bytes [3i, 3i+3), little endian; -1 -> FF FF FF ; 0x800000 -> 00 00 80
    assert isinstance(raw, bytes) and len(raw) == 192
    assert raw[:9] == bytes([1, 2, 3, 0xFF, 0xFF, 0xFF, 0, 0, 0x80])
    assert raw[9:] == bytes(183)


def test_wvec_view_layout_all_views():
    img = bytes(range(192))
    v24, v48, v96 = ivp.wvec_view(img, 24), ivp.wvec_view(img, 48), ivp.wvec_view(img, 96)
    # 24: bytes 00 01 02 -> 0x020100 = 131328 ; 03 04 05 -> 0x050403 = 328707
    assert v24[0] == 0x020100 and v24[1] == 0x050403
    # 48: bytes 0..5 -> 0x050403020100 ; 6..11 -> 0x0B0A09080706
    assert v48[0] == 0x050403020100 and v48[1] == 0x0B0A09080706
    # 96: bytes 0..11 -> 0x0B0A09080706050403020100
    assert v96[0] == 0x0B0A09080706050403020100
    # last 24-bit lane: bytes BD BE BF -> 0xBFBEBD is negative as 24 bits: 0xBFBEBD - 2^24
    assert v24[63] == 0xBFBEBD - 2 ** 24
    # a 48-bit lane i equals 24-bit lanes 2i (low) and 2i+1 (high) of the same image
    assert v48[0] == (v24[0] & 0xFFFFFF) | (v24[1] << 24)


def test_wvec_view_all_ones_is_minus_one():
    img = b"\xff" * 192
    assert list(ivp.wvec_view(img, 24)) == [-1] * 64
    assert list(ivp.wvec_view(img, 48)) == [-1] * 32
    assert ivp.wvec_view(img, 96) == [-1] * 16


def test_wvec_view_rejects_bad_image():
    with pytest.raises(InvalidArgument):
        ivp.wvec_view(bytes(191), 24)
    with pytest.raises(InvalidArgument):
        ivp.wvec_view(bytes(192), 32)


def test_wvec_raw_48_96_layout():
    raw = ivp.wvec_raw(A(32, [0x123456789ABC, -1]), 48)
    # 48-bit lane i at bytes [6i, 6i+6): BC 9A 78 56 34 12, then FF x 6
    assert raw[:12] == bytes([0xBC, 0x9A, 0x78, 0x56, 0x34, 0x12] + [0xFF] * 6)
    raw = ivp.wvec_raw(A(16, [0x0C0B0A090807060504030201]), 96)
    assert raw[:12] == bytes(range(1, 13))


def _lanes_from_raw(raw, view):
    w = view // 8
    return [int.from_bytes(raw[w * i: w * i + w], "little", signed=True) for i in range(192 // w)]


@PROP
@given(img=st.binary(min_size=192, max_size=192))
def test_prop_wvec_view_matches_byte_reference(img):
    assert list(ivp.wvec_view(img, 24)) == _lanes_from_raw(img, 24)
    assert list(ivp.wvec_view(img, 48)) == _lanes_from_raw(img, 48)
    assert list(ivp.wvec_view(img, 96)) == _lanes_from_raw(img, 96)
    v24, v48, v96 = ivp.wvec_view(img, 24), ivp.wvec_view(img, 48), ivp.wvec_view(img, 96)
    for i in range(32):   # cross-view: 48-bit lane i = 24-bit lanes 2i, 2i+1 ; 96-bit lane = 48-bit 2i, 2i+1
        assert int(v48[i]) == (int(v24[2 * i]) & 0xFFFFFF) + (int(v24[2 * i + 1]) << 24)
    for i in range(16):
        assert v96[i] == (int(v48[2 * i]) & (2 ** 48 - 1)) + (int(v48[2 * i + 1]) << 48)


@PROP
@given(img=st.binary(min_size=192, max_size=192))
def test_prop_wvec_24_round_trip(img):
    assert ivp.wvec_raw(ivp.wvec_view(img, 24), 24) == img


@PROP_XFAIL
@given(img=st.binary(min_size=192, max_size=192), view=st.sampled_from([48, 96]))
def test_prop_wvec_48_96_round_trip(img, view):
    assert ivp.wvec_raw(ivp.wvec_view(img, view), view) == img


# ===================================================================== numpy-reference properties
def _sat(x, lo, hi):
    return np.clip(x, lo, hi)


def _round_shift(x, sh):
    return (x + (1 << (sh - 1))) >> sh if sh else x


ACC24 = arrays(np.int64, 64, elements=st.integers(-2 ** 23, 2 ** 23 - 1))
ACC48_SMALL = arrays(np.int64, 32, elements=st.integers(0, 2 ** 16 - 1))
ACC48_FULL = arrays(np.int64, 32, elements=st.integers(-2 ** 47, 2 ** 47 - 1))


def _check_packs(acc, sh, bits):
    """Every pack of `bits`-bit wide lanes (24 -> 8-bit, 48 -> 16-bit output) against the numpy references:
    packvr / packvru (round half up, signed / unsigned saturation), packvrnr (shift, wrap) and the
    low / middle / high thirds (packl / packm / packh)."""
    vr, vru, vrnr, thirds = {
        24: (ivp.packvr2nx24, ivp.packvru2nx24, ivp.packvrnr2nx24, (ivp.packl2nx24,)),
        48: (ivp.packvrnx48, ivp.packvrunx48, ivp.packvrnrnx48, (ivp.packlnx48, ivp.packmnx48, ivp.packhnx48)),
    }[bits]
    w = bits // 3
    sd, ud = np.dtype(f"int{w}"), np.dtype(f"uint{w}")
    s = min(sh, 23 if w == 8 else 32)
    r = _round_shift(acc, s)
    eq(vr(acc, sh), _sat(r, -(1 << (w - 1)), (1 << (w - 1)) - 1).astype(sd))
    eq(vru(acc, sh), _sat(r, 0, (1 << w) - 1).astype(ud))
    eq(vrnr(acc, sh), ((acc >> s) & ((1 << w) - 1)).astype(ud))
    for k, third in enumerate(thirds):
        eq(third(acc), ((acc >> (w * k)) & ((1 << w) - 1)).astype(ud))


@PROP
@given(acc=ACC24, sh=st.integers(0, 63))
def test_prop_packs_24(acc, sh):
    _check_packs(acc, sh, 24)


def _check_packs_48(acc, sh):
    _check_packs(acc, sh, 48)


@PROP
@given(acc=ACC48_SMALL, sh=st.integers(0, 63))
def test_prop_packs_48_small(acc, sh):
    _check_packs_48(acc, sh)


@PROP_XFAIL
@given(acc=ACC48_FULL, sh=st.integers(0, 63))
def test_prop_packs_48_full_range(acc, sh):
    _check_packs_48(acc, sh)


@PROP_XFAIL
@given(acc=st.lists(st.integers(-2 ** 95, 2 ** 95 - 1), min_size=16, max_size=16), sh=st.integers(0, 63))
def test_prop_packs_96(acc, sh):
    s = min(sh, 32)
    want = [max(-2 ** 31, min(2 ** 31 - 1, (x + (1 << (s - 1))) >> s if s else x)) for x in acc]
    eq(ivp.packvrn_2x96(acc, sh), np.array(want, dtype=np.int32))
    eq(ivp.packln_2x96(acc), np.array([x & 0xFFFFFFFF for x in acc], dtype=np.uint32))


@PROP
@given(hi=arrays(np.uint32, 16), lo=arrays(np.uint32, 16), acc=ACC48_SMALL)
def test_prop_cvtg48(hi, lo, acc):
    p = pool(hi, lo).astype(np.int64)
    eq(ivp.cvtg48n_2x32l(hi, lo), p)
    lane = (acc & 0xFFFFFFFF) | ((p & 0xFFFF) << 32)
    eq(ivp.cvtg48n_2x32h(acc, hi, lo), np.where(lane >= 2 ** 47, lane - 2 ** 48, lane))
