"""IVP integer MACs (docs/firmware.md §6.2 Integer MAC, B04/B05) and the moves into pr (XPR).

Accumulators wrap modulo 2^(3L) (24 / 48 / 96 bits) and never saturate; wrapper outputs give each wide
lane as a signed integer. pr fields: 16-bit field t = pr bits [16t, 16t+16), 8-bit field j = pr bits [8j, 8j+8).
Operands are in the Xtensa C intrinsics' order (q7emu/primitives/optable.py): the 4-tap MACs take (acc, hi, lo, pr)
with the window lo || hi and tap 0 on lo; dmulqa2n8xr8 takes (acc_hi, acc_lo, v3, v2, v1, v0, pr), acc_lo
accumulating pr bytes 0..3 and acc_hi bytes 4..7, byte j (4+j) times vj (the last vector is v0), and returns
(acc_hi, acc_lo); the paired MACs multiply their first vector by pr bits 16..31 and the second by bits 0..15;
dextrprn_2x32(vhi, vlo, ihi, ilo) = vlo.u32[ilo] | vhi.u32[ihi] << 32. Expectations are hand-computed from those
definitions; the hypothesis tests re-implement each MAC in numpy.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from ivp_testlib import pool, wrap

from q7emu.errors import InvalidArgument
from q7emu.primitives import ivp

PROP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# full-range accumulator properties: no shrinking / explaining phase
PROP_XFAIL = settings(max_examples=25, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
                      suppress_health_check=[HealthCheck.too_slow])

#: the op-table rows this file tests by hand (test_ivp_catalog checks the declaration against the table and
#: that each is called inside an asserting test)
COVERS = ("mulus4tn16xr16", "mulus4tan16xr16", "mul4tn16xr16", "mul4tan16xr16", "dmulqa2n8xr8",
          "muluupan16xr16", "mulsupn16xr16", "muluspa2n8xr16", "muln_2x32", "mulan_2x32", "extrpr2nx8",
          "extrprn_2x32", "dextrprn_2x32", "movpint16")

TWO47, TWO48, TWO95, TWO96 = 2 ** 47, 2 ** 48, 2 ** 95, 2 ** 96


def eq(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def V(dt, n, head, fill=0):
    out = [fill] * n
    out[: len(head)] = head
    return np.array(out, dtype=np.int64).astype(dt)


def W(n, head, fill=0):
    out = [fill] * n
    out[: len(head)] = head
    return np.array(out, dtype=np.int64)


def pr16(c0, c1=0, c2=0, c3=0):
    return sum((c & 0xFFFF) << (16 * t) for t, c in enumerate((c0, c1, c2, c3)))


def pr8(*c):
    return sum((x & 0xFF) << (8 * j) for j, x in enumerate(c))


# ===================================================================== 4-tap MACs (hand)
def test_mulus4tn16xr16_taps_and_window():
    p = pr16(1, -1, 2, -2)
    assert p == 0xFFFE_0002_FFFF_0001
    lo = V(np.uint16, 32, [0xFFFF, 1, 2, 3])
    lo[31] = 10
    hi = V(np.uint16, 32, [20, 30, 40])
    got = ivp.mulus4tn16xr16(hi, lo, p)
    # wv[i] = W[i]*1 + W[i+1]*(-1) + W[i+2]*2 + W[i+3]*(-2), window W = lo || hi, unsigned:
    # i=0: 65535 - 1 + 4 - 6 = 65532 ; i=1: 1 - 2 + 6 - 0 = 5 ; i=2: 2 - 3 = -1 ; i=3: 3
    # i=28: 10*(-2) = -20 ; i=29: 10*2 + 20*(-2) = -20 ; i=30: -10 + 40 - 60 = -30 ; i=31: 10 - 20 + 60 - 80 = -30
    want = W(32, [65532, 5, -1, 3])
    want[28:32] = [-20, -20, -30, -30]
    eq(got, want)


def test_mulus4_unsigned_window_times_negative_tap():
    lo = V(np.uint16, 32, [0xFFFF, 0x8000, 1])
    hi = V(np.uint16, 32, [])
    # pr tap0 = 0xFFFF = -1 (signed), other taps 0:
    # mulus (window unsigned): 65535 * -1 = -65535 ; 32768 * -1 = -32768 ; 1 * -1 = -1
    eq(ivp.mulus4tn16xr16(hi, lo, pr16(-1)), W(32, [-65535, -32768, -1]))
    # mul4t (signed x signed): -1 * -1 = 1 ; -32768 * -1 = 32768 ; -1
    eq(ivp.mul4tn16xr16(hi.view(np.int16), lo.view(np.int16), pr16(-1)), W(32, [1, 32768, -1]))


def test_4tap_window_starts_in_the_second_operand():
    hi = V(np.uint16, 32, [], 7)
    lo = V(np.uint16, 32, [])
    # tap 0 reads lo[i] only: 0 everywhere
    eq(ivp.mulus4tn16xr16(hi, lo, pr16(1)), W(32, []))
    # tap 3 reads W[i+3]: lanes 29..31 reach hi[0..2] = 7
    eq(ivp.mulus4tn16xr16(hi, lo, pr16(0, 0, 0, 1)), W(32, [0] * 29 + [7, 7, 7]))
    eq(ivp.mul4tan16xr16(None, hi.view(np.int16), lo.view(np.int16), pr16(0, 0, 0, -2)),
       W(32, [0] * 29 + [-14, -14, -14]))


def test_mulus4tan16xr16_accumulates():
    lo = V(np.uint16, 32, [0xFFFF, 2])
    acc = W(32, [100, 7], 3)
    # tap1 = 3: wv[i] += W[i+1]*3 ; lane0: 100 + 2*3 = 106 ; lane1: 7 + 0 = 7 ; others 3
    eq(ivp.mulus4tan16xr16(acc, V(np.uint16, 32, []), lo, pr16(0, 3)), W(32, [106, 7], 3))
    # acc None means 0: lane0 = 0xFFFF * 5 = 327675 (tap0 = 5)
    eq(ivp.mulus4tan16xr16(None, V(np.uint16, 32, []), lo, pr16(5)), W(32, [327675, 10]))


def test_mul4tan16xr16_accumulates():
    lo = V(np.int16, 32, [-32768, 32767])
    # taps (2, -3): lane0 = acc 1000 + (-32768*2) + 32767*(-3) = 1000 - 65536 - 98301 = -162837
    # lane1 = acc 0 + 32767*2 + 0 = 65534
    eq(ivp.mul4tan16xr16(W(32, [1000]), V(np.int16, 32, []), lo, pr16(2, -3)), W(32, [-162837, 65534]))


def test_mulus4tan16xr16_wraps_at_2_48():
    lo = V(np.uint16, 32, [1, 0xFFFF, 0])
    acc = W(32, [TWO47 - 1, TWO47 - 65530, -TWO47])
    # tap0 = +1: lane0 2^47-1+1 = 2^47 -> -2^47 ; lane1 2^47-65530+65535 = 2^47+5 -> -2^47+5 ; lane2 stays -2^47
    eq(ivp.mulus4tan16xr16(acc, V(np.uint16, 32, []), lo, pr16(1)), W(32, [-TWO47, -TWO47 + 5, -TWO47]))
    # tap0 = -1: lane0 -2^47 - 1 -> 2^47 - 1 (the other way round)
    eq(ivp.mulus4tan16xr16(W(32, [-TWO47]), V(np.uint16, 32, []), lo, pr16(-1)), W(32, [TWO47 - 1, -65535]))


def test_mul4tan16xr16_wraps_at_2_48():
    # (-32768) * (-32768) * 4 taps = 2^32 ; acc 2^47 - 2^32 + 2^32 = 2^47 -> -2^47
    hi = V(np.int16, 32, [-32768] * 32)
    lo = V(np.int16, 32, [-32768] * 32)
    got = ivp.mul4tan16xr16(W(32, [TWO47 - 2 ** 32]), hi, lo, pr16(-32768, -32768, -32768, -32768))
    assert got[0] == -TWO47 and got[1] == 2 ** 32


def test_mulus4tn_overwrite_ignores_nothing_but_writes_all_lanes():
    # every lane of an overwrite form is written: all-ones inputs and taps (1, 1, 1, 1) give 4 in every lane
    ones = V(np.uint16, 32, [], 1)
    eq(ivp.mulus4tn16xr16(ones, ones, pr16(1, 1, 1, 1)), W(32, [], 4))


# ===================================================================== dual-quad 8-bit MAC (hand)
def test_dmulqa2n8xr8_lanes():
    p = pr8(1, 2, 3, 4, -1, -2, -3, -4)
    assert p == 0xFCFDFEFF04030201
    v0 = V(np.int8, 64, [10, -128])
    v1 = V(np.int8, 64, [20, 127])
    v2 = V(np.int8, 64, [30, -1])
    v3 = V(np.int8, 64, [40, 0])
    acc_hi, acc_lo = ivp.dmulqa2n8xr8(None, W(64, [], 5), v3, v2, v1, v0, p)
    # acc_lo takes bytes 0..3 (1, 2, 3, 4), byte j times vj: acc_lo[0] = 5 + 10*1 + 20*2 + 30*3 + 40*4 = 305 ;
    # acc_hi takes bytes 4..7 (-1, -2, -3, -4): acc_hi[0] = 0 - 300 = -300
    # acc_lo[1] = 5 + (-128) + 127*2 + (-1)*3 = 5 + 123 = 128 ; acc_hi[1] = 128 - 254 + 3 = -123 ; others: acc
    eq(acc_lo, W(64, [305, 128], 5))
    eq(acc_hi, W(64, [-300, -123], 0))


def test_dmulqa2n8xr8_last_vector_takes_byte_0():
    one = V(np.int8, 64, [], 1)
    z = V(np.int8, 64, [])
    p = pr8(2, 3, 5, 7, 11, 13, 17, 19)
    # only the last vector argument (v0) is 1: acc_lo += byte 0 = 2, acc_hi += byte 4 = 11
    acc_hi, acc_lo = ivp.dmulqa2n8xr8(None, None, z, z, z, one, p)
    eq(acc_lo, W(64, [], 2))
    eq(acc_hi, W(64, [], 11))
    # only the first vector argument (v3) is 1: byte 3 = 7, byte 7 = 19
    acc_hi, acc_lo = ivp.dmulqa2n8xr8(None, None, one, z, z, z, p)
    eq(acc_lo, W(64, [], 7))
    eq(acc_hi, W(64, [], 19))


def test_dmulqa2n8xr8_wraps_at_2_24():
    v0 = V(np.int8, 64, [-128] * 64)
    z = V(np.int8, 64, [])
    # v0 (the last vector) takes byte 0 = -128 (acc_lo) and byte 4 = 127 (acc_hi):
    # acc_lo += (-128)*(-128) = 16384 ; acc_hi += (-128)*127 = -16256
    p = pr8(-128, 0, 0, 0, 127)
    acc_lo = W(64, [2 ** 23 - 16384, 2 ** 23 - 1, -2 ** 23])
    acc_hi = W(64, [-2 ** 23 + 5, 0, 2 ** 23 - 1])
    hi, lo = ivp.dmulqa2n8xr8(acc_hi, acc_lo, z, z, z, v0, p)
    # lo: 2^23 -> -2^23 ; 2^23 - 1 + 16384 = 2^23 + 16383 -> -2^23 + 16383 ; -2^23 + 16384 ; rest 16384
    eq(lo, W(64, [-2 ** 23, -2 ** 23 + 16383, -2 ** 23 + 16384], 16384))
    # hi: -2^23 + 5 - 16256 -> + 2^24 -> 2^23 + 5 - 16256 = 8372357 ; -16256 ; 2^23 - 1 - 16256 = 8372351
    eq(hi, W(64, [8372357, -16256, 8372351], -16256))


# ===================================================================== paired MACs (hand)
def test_muluupan16xr16_unsigned_zero_fill():
    va = V(np.uint16, 32, [0xFFFF, 2])
    vb = V(np.uint16, 32, [0xFFFF, 3])
    # va takes pr bits 16..31 = 7, vb bits 0..15 = 5: lane0 = 65535*7 + 65535*5 = 458745 + 327675 = 786420
    # (a signed reading would give -12) ; lane1 = 2*7 + 3*5 = 29 ; acc lane0 = 4 -> 786424
    eq(ivp.muluupan16xr16(W(32, [4]), va, vb, (7 << 16) | 5), W(32, [786424, 29]))
    # both fields 0xFFFF: 65535^2 * 2 = 2 * 4294836225 = 8589672450 (positive, zero-filled)
    eq(ivp.muluupan16xr16(None, va, vb, 0xFFFF_FFFF), W(32, [8589672450, 2 * 65535 + 3 * 65535]))
    # pr bits above 32 are not read
    eq(ivp.muluupan16xr16(None, va, vb, (0xDEAD << 48) | (7 << 16) | 5), W(32, [786420, 29]))


def test_muluupan16xr16_wraps_at_2_48():
    # acc 2^48 - 1 (given unsigned; the lane reads back as -1) + 1*1 = 2^48 -> 0: va times pr bits 16..31 = 1
    eq(ivp.muluupan16xr16(W(32, [TWO48 - 1]), V(np.uint16, 32, [1]), V(np.uint16, 32, []), 1 << 16), W(32, [0]))
    # the same through vb and pr bits 0..15
    eq(ivp.muluupan16xr16(W(32, [TWO48 - 1]), V(np.uint16, 32, []), V(np.uint16, 32, [1]), 1), W(32, [0]))


def test_mulsupn16xr16_signed_times_unsigned():
    va = V(np.int16, 32, [-1, 1, 32767])
    vb = V(np.int16, 32, [-32768, 1, 0])
    p = (0x8000 << 16) | 0xFFFF                 # bits 16..31 = 32768 (for va), bits 0..15 = 65535 (for vb), unsigned
    # lane0 = -1*32768 + (-32768)*65535 = -32768 - 2147450880 = -2147483648
    # lane1 = 32768 + 65535 = 98303 ; lane2 = 32767*32768 = 1073709056
    eq(ivp.mulsupn16xr16(va, vb, p), W(32, [-2147483648, 98303, 1073709056]))
    # one field at a time: va alone times bits 16..31, vb alone times bits 0..15
    eq(ivp.mulsupn16xr16(va, V(np.int16, 32, []), 3 << 16), W(32, [-3, 3, 98301]))
    eq(ivp.mulsupn16xr16(V(np.int16, 32, []), vb, 3), W(32, [-98304, 3, 0]))


def test_muluspa2n8xr16_paired_anchor():
    va = V(np.uint8, 64, [0xFF, 10])
    vb = V(np.uint8, 64, [0x80, 20])
    # w = pr bits [0, 32): hi16 = 0xFFFF = -1 (weights signed), lo16 = 0x7FFF = 32767
    # lane0 = 255*(-1) + 128*32767 = -255 + 4194176 = 4193921 ; lane1 = -10 + 20*32767 = 655330
    p = 0xFFFF_7FFF
    eq(ivp.muluspa2n8xr16(None, va, vb, p), W(64, [4193921, 655330]))
    # pr bits above 32 are not read
    eq(ivp.muluspa2n8xr16(None, va, vb, (0xDEADBEEF << 32) | p), W(64, [4193921, 655330]))
    # docs/anchors.md §7 form acc += b*hi16(w) + c*lo16(w): hi = 2, lo = 3: lane1 = 10*2 + 20*3 = 80, plus acc 1
    eq(ivp.muluspa2n8xr16(W(64, [0, 1]), va, vb, (2 << 16) | 3), W(64, [255 * 2 + 128 * 3, 81]))


def test_muluspa2n8xr16_wraps_at_2_24():
    # acc 2^23 - 1 + 1*1 -> -2^23 ; acc -2^23 + 255*(-1)... (hi = 1, lo = 0 here) lane1 -2^23 + 0
    va = V(np.uint8, 64, [1, 0])
    got = ivp.muluspa2n8xr16(W(64, [2 ** 23 - 1, -2 ** 23]), va, V(np.uint8, 64, []), 1 << 16)
    eq(got, W(64, [-2 ** 23, -2 ** 23]))


# ===================================================================== 32x32 -> 96 (hand)
def test_muln_2x32_signed_products():
    va = V(np.int32, 16, [-2 ** 31, 2 ** 31 - 1, -1, 65536, 46341])
    vb = V(np.int32, 16, [-2 ** 31, -2 ** 31, 1, 65536, 46341])
    # 2^62 ; (2^31-1)(-2^31) = -2^62 + 2^31 = -4611686016279904256 ; -1 ; 2^32 ; 46341^2 = 2147488281
    got = ivp.muln_2x32(va, vb)
    assert got == [2 ** 62, -4611686016279904256, -1, 2 ** 32, 2147488281] + [0] * 11


def test_mulan_2x32_zero_acc():
    va = V(np.int32, 16, [-7, 3])
    vb = V(np.int32, 16, [6, -5])
    assert ivp.mulan_2x32(None, va, vb) == [-42, -15] + [0] * 14


def test_mulan_2x32_wraps_at_2_96_and_carries_across_64():
    va = V(np.int32, 16, [1, -2 ** 31, 1, 1, -1])
    vb = V(np.int32, 16, [1, -2 ** 31, 1, -1, 1])
    acc = [TWO95 - 1, TWO95 - 2 ** 62, 2 ** 64 - 1, 2 ** 64, -TWO95] + [5] * 11
    # 2^95 - 1 + 1 -> -2^95 ; 2^95 - 2^62 + 2^62 -> -2^95 ; 2^64 - 1 + 1 = 2^64 (carry into the high word) ;
    # 2^64 - 1 (borrow) ; -2^95 - 1 -> 2^95 - 1 ; the rest 5 + 0
    got = ivp.mulan_2x32(acc, va, vb)
    assert got == [-TWO95, -TWO95, 2 ** 64, 2 ** 64 - 1, TWO95 - 1] + [5] * 11


def test_muln_2x32_every_pair_of_edge_lanes():
    # every pair of edge values at every lane position (each product at lane i of one call or another)
    edges = [-2 ** 31, -2 ** 31 + 1, -65536, -1, 0, 1, 65535, 2 ** 31 - 1]
    pairs = [(a, b) for a in edges for b in edges]
    for k in range(0, len(pairs), 16):
        for rot in (0, 5):
            chunk = pairs[k:k + 16]
            chunk = chunk[rot:] + chunk[:rot]
            va = np.array([a for a, _ in chunk], dtype=np.int32)
            vb = np.array([b for _, b in chunk], dtype=np.int32)
            want = [a * b for a, b in chunk]
            assert ivp.muln_2x32(va, vb) == want
            assert ivp.mulan_2x32(None, va, vb) == want


# ===================================================================== moves into pr (hand)
def test_extrpr2nx8():
    vs = V(np.uint8, 64, [0x11, 0xFF], 0)
    vs[63] = 0x80
    # pr = u8 lane k, upper bits 0: 0xFF stays 0xFF (no sign extension)
    assert ivp.extrpr2nx8(vs, 1) == 0xFF
    assert ivp.extrpr2nx8(vs, 63) == 0x80
    assert ivp.extrpr2nx8(vs, 0) == 0x11


def test_movpint16_broadcasts_the_immediate():
    assert ivp.movpint16(256) == 0x0100_0100_0100_0100
    assert ivp.movpint16(0xFF00) == 0xFF00_FF00_FF00_FF00
    assert ivp.movpint16(-256) == 0xFF00_FF00_FF00_FF00         # the same 16-bit pattern
    assert ivp.movpint16(0) == 0
    # the paired MACs read its fields as their weights
    va = np.arange(32, dtype=np.int16)
    w = ivp.mulsupn16xr16(va, va, ivp.movpint16(3))
    assert w.tolist()[:4] == [0, 6, 12, 18]


def test_extrprn_2x32():
    vs = V(np.uint32, 16, [0x12345678, 0xFFFFFFFF])
    assert ivp.extrprn_2x32(vs, 1) == 0xFFFFFFFF
    assert ivp.extrprn_2x32(vs, 0) == 0x12345678
    assert ivp.extrprn_2x32(vs, 15) == 0


def test_dextrprn_2x32_pairing():
    vlo = V(np.uint32, 16, [0xA0 + k for k in range(16)])
    vhi = V(np.uint32, 16, [0xB0000000 + k for k in range(16)])
    # pr = vlo[ilo] | vhi[ihi] << 32 ; seed operands (5, 10): vlo[10] | vhi[5] << 32
    assert ivp.dextrprn_2x32(vhi, vlo, 5, 10) == 0xAA | (0xB0000005 << 32)
    assert ivp.dextrprn_2x32(vhi, vlo, 15, 0) == 0xA0 | (0xB000000F << 32)
    assert ivp.dextrprn_2x32(vhi, vlo, 0, 15) == 0xAF | (0xB0000000 << 32)
    # the same vector twice (Cadence's conv kernel: DEXTRPRN(d1, d1, 2, 0)): lane 0 low, lane 2 high
    assert ivp.dextrprn_2x32(vlo, vlo, 2, 0) == 0xA0 | (0xA2 << 32)


@pytest.mark.parametrize("ihi,ilo", [(16, 0), (0, 16), (31, 0), (-1, 0)])
def test_dextrprn_2x32_indices_are_lanes_of_their_own_vector(ihi, ilo):
    # each index picks one of its own vector's 16 lanes: 16 and above (the old 32-lane pool) are refused
    v = V(np.uint32, 16, [])
    with pytest.raises(InvalidArgument):
        ivp.dextrprn_2x32(v, v, ihi, ilo)


# ===================================================================== numpy-reference properties
_wrap = wrap


def _taps16(p, signed):
    t = np.array([(p >> (16 * j)) & 0xFFFF for j in range(4)], dtype=np.int64)
    return np.where(t >= 0x8000, t - 0x10000, t) if signed else t


def _four_tap(hi, lo, p):
    window = pool(hi, lo).astype(np.int64)          # lo || hi, tap 0 on lo
    c = _taps16(p, True)
    return sum(window[t: t + 32] * c[t] for t in range(4))


ACC48_SMALL = arrays(np.int64, 32, elements=st.integers(0, 2 ** 16 - 1))
ACC48_FULL = arrays(np.int64, 32, elements=st.integers(-TWO47, TWO47 - 1))
U16 = arrays(np.uint16, 32)
S16 = arrays(np.int16, 32)
PR = st.integers(0, 2 ** 64 - 1)


def _check_four_tap(mul, mula, hi, lo, p, acc):
    """The overwrite and accumulate forms of one 4-tap MAC against the numpy reference."""
    prod = _four_tap(hi, lo, p)
    eq(mul(hi, lo, p), _wrap(prod, 48))
    eq(mula(acc, hi, lo, p), _wrap(acc + prod, 48))


@PROP
@given(hi=U16, lo=U16, p=PR, acc=ACC48_SMALL)
def test_prop_mulus4t(hi, lo, p, acc):
    _check_four_tap(ivp.mulus4tn16xr16, ivp.mulus4tan16xr16, hi, lo, p, acc)


@PROP
@given(hi=S16, lo=S16, p=PR, acc=ACC48_SMALL)
def test_prop_mul4t(hi, lo, p, acc):
    _check_four_tap(ivp.mul4tn16xr16, ivp.mul4tan16xr16, hi, lo, p, acc)


@PROP
@given(hi=U16, lo=U16, t=st.integers(0, 3), c=st.integers(-2 ** 15, 2 ** 15 - 1), acc=ACC48_SMALL)
def test_prop_4tap_one_tap(hi, lo, t, c, acc):
    """A single non-zero tap (the MX kernels' scale MACs take their own path through it) at every tap position,
    unsigned and signed windows."""
    p = pr16(*[c if j == t else 0 for j in range(4)])
    _check_four_tap(ivp.mulus4tn16xr16, ivp.mulus4tan16xr16, hi, lo, p, acc)
    _check_four_tap(ivp.mul4tn16xr16, ivp.mul4tan16xr16, hi.view(np.int16), lo.view(np.int16), p, acc)


def test_4tap_edge_lanes_and_taps():
    """Every 4-tap MAC on windows of the lane edges (0x7FFF, 0x8000, 0xFFFF, read unsigned and signed) under
    one edge tap at each position and under all four taps at once, onto the 48-bit lane's edges."""
    lo = np.array([0xFFFF, 0x8000, 0x7FFF, 0xFFFF, 1, 0x8000] * 5 + [0xFFFF, 0x8000], dtype=np.uint16)
    hi = np.array([0x8000, 0xFFFF, 0x7FFF] * 10 + [0xFFFF, 0x8000], dtype=np.uint16)
    acc = np.array([-TWO47, TWO47 - 1, -1, 0] * 8, dtype=np.int64)
    for c in (-2 ** 15, -1, 2 ** 15 - 1):
        for taps in [[c if j == t else 0 for j in range(4)] for t in range(4)] + [[c] * 4, [c, -c - 1, c, -c - 1]]:
            p = pr16(*taps)
            _check_four_tap(ivp.mulus4tn16xr16, ivp.mulus4tan16xr16, hi, lo, p, acc)
            _check_four_tap(ivp.mul4tn16xr16, ivp.mul4tan16xr16, hi.view(np.int16), lo.view(np.int16), p, acc)


@PROP_XFAIL
@given(hi=U16, lo=U16, p=PR, acc=ACC48_FULL)
def test_prop_mulus4tan16xr16_full_range_acc(hi, lo, p, acc):
    eq(ivp.mulus4tan16xr16(acc, hi, lo, p), _wrap(acc + _four_tap(hi, lo, p), 48))


@PROP
@given(va=U16, vb=U16, sa=S16, sb=S16, p=PR, acc=ACC48_SMALL)
def test_prop_paired_16(va, vb, sa, sb, p, acc):
    c = _taps16(p, False)                   # the first vector takes field 1 (bits 16..31), the second field 0
    eq(ivp.muluupan16xr16(acc, va, vb, p), _wrap(acc + va.astype(np.int64) * c[1] + vb.astype(np.int64) * c[0], 48))
    eq(ivp.mulsupn16xr16(sa, sb, p), _wrap(sa.astype(np.int64) * c[1] + sb.astype(np.int64) * c[0], 48))


def test_paired_16_extreme_lanes_and_weights():
    """Both paired MACs on every pair of edge lanes (0, 1, 0x7FFF, 0x8000, 0xFFFF: the sign bit and the largest
    unsigned product) under every pair of edge weights, accumulating onto the 48-bit lane's edges."""
    edges = [0, 1, 0x7FFF, 0x8000, 0xFFFF]
    pairs = np.array([(x, y) for x in edges for y in edges] + [(0xFFFF, 0xFFFF)] * 7, dtype=np.uint16)
    va, vb = pairs[:, 0].copy(), pairs[:, 1].copy()
    acc = np.array([-TWO47, TWO47 - 1, -1, 0] * 8, dtype=np.int64)
    for ca in edges:
        for cb in edges:
            p = (ca << 16) | cb
            ref = acc + va.astype(np.int64) * ca + vb.astype(np.int64) * cb
            eq(ivp.muluupan16xr16(acc, va, vb, p), _wrap(ref, 48))
            sa, sb = va.view(np.int16), vb.view(np.int16)
            eq(ivp.mulsupn16xr16(sa, sb, p), _wrap(sa.astype(np.int64) * ca + sb.astype(np.int64) * cb, 48))


ACC24 = arrays(np.int64, 64, elements=st.integers(-2 ** 23, 2 ** 23 - 1))
S8 = arrays(np.int8, 64)


@PROP
@given(acc_hi=ACC24, acc_lo=ACC24, v0=S8, v1=S8, v2=S8, v3=S8, p=PR)
def test_prop_dmulqa2n8xr8(acc_hi, acc_lo, v0, v1, v2, v3, p):
    c = np.array([(p >> (8 * j)) & 0xFF for j in range(8)], dtype=np.int64)
    c = np.where(c >= 0x80, c - 0x100, c)
    vs = [v.astype(np.int64) for v in (v0, v1, v2, v3)]
    hi, lo = ivp.dmulqa2n8xr8(acc_hi, acc_lo, v3, v2, v1, v0, p)
    eq(lo, _wrap(acc_lo + sum(vs[j] * c[j] for j in range(4)), 24))
    eq(hi, _wrap(acc_hi + sum(vs[j] * c[4 + j] for j in range(4)), 24))


@PROP
@given(acc=ACC24, va=arrays(np.uint8, 64), vb=arrays(np.uint8, 64), p=PR)
def test_prop_muluspa2n8xr16(acc, va, vb, p):
    c = _taps16(p, True)
    eq(ivp.muluspa2n8xr16(acc, va, vb, p),
       _wrap(acc + va.astype(np.int64) * c[1] + vb.astype(np.int64) * c[0], 24))


@PROP
@given(va=arrays(np.int32, 16), vb=arrays(np.int32, 16))
def test_prop_muln_mulan_2x32(va, vb):
    want = [int(a) * int(b) for a, b in zip(va, vb)]
    assert ivp.muln_2x32(va, vb) == want
    assert ivp.mulan_2x32(None, va, vb) == want


@PROP_XFAIL
@given(va=arrays(np.int32, 16), vb=arrays(np.int32, 16),
       acc=st.lists(st.integers(-TWO95, TWO95 - 1), min_size=16, max_size=16))
def test_prop_mulan_2x32_full_range_acc(va, vb, acc):
    want = [((x + int(a) * int(b) + TWO95) % TWO96) - TWO95 for x, a, b in zip(acc, va, vb)]
    assert ivp.mulan_2x32(acc, va, vb) == want


@PROP
@given(vs=arrays(np.uint8, 64), vhi=arrays(np.uint32, 16), vlo=arrays(np.uint32, 16), k8=st.integers(0, 63),
       k32=st.integers(0, 15), ihi=st.integers(0, 15), ilo=st.integers(0, 15))
def test_prop_pr_moves(vs, vhi, vlo, k8, k32, ihi, ilo):
    assert ivp.extrpr2nx8(vs, k8) == int(vs[k8])
    assert ivp.extrprn_2x32(vhi, k32) == int(vhi[k32])
    assert ivp.dextrprn_2x32(vhi, vlo, ihi, ilo) == int(vlo[ilo]) | (int(vhi[ihi]) << 32)
