"""IVP soft-float primitives: fp compares (ultn_2xf32t, ueqn_2xf32t, oltnxf16t), converts (float16nx16t,
floatn_2x32, truncn_2xf32, trunc16nxf16, cvtf32nxf16_0/_1), negnxf16t and addexpnxf16 (docs/firmware.md §6.2 fp ALU B02,
Converts B13/B20).

Values are written as bit patterns and the expected patterns are worked out by hand in the comments.
cvtf32nxf16_0 widens the even fp16 lanes (2k) and cvtf32nxf16_1 the odd lanes (2k + 1), not the low / high halves.
"""
from __future__ import annotations

import platform
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from ivp_testlib import M, eq

from q7emu.primitives import ivp

PROP = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: the op-table rows this file tests by hand (test_ivp_catalog checks the declaration against the table and
#: that each is called inside an asserting test)
COVERS = ("ultn_2xf32t", "ueqn_2xf32t", "oltnxf16t", "negnxf16t", "addexpnxf16", "float16nx16t",
          "floatn_2x32", "truncn_2xf32", "trunc16nxf16", "cvtf32nxf16_0", "cvtf32nxf16_1")


def F32(bits, n=16, fill=0):
    out = [fill] * n
    out[: len(bits)] = bits
    return np.array(out, dtype=np.uint32).view(np.float32)


def F16(bits, n=32, fill=0):
    out = [fill] * n
    out[: len(bits)] = bits
    return np.array(out, dtype=np.uint16).view(np.float16)


def bits32(x):
    return np.asarray(x).view(np.uint32)


def bits16(x):
    return np.asarray(x).view(np.uint16)


ONE, TWO, M_ONE, M_TWO = 0x3F800000, 0x40000000, 0xBF800000, 0xC0000000
PZ, NZ, PINF, NINF = 0x00000000, 0x80000000, 0x7F800000, 0xFF800000
QNAN, SNAN, NQNAN = 0x7FC00000, 0x7F800001, 0xFFC00000

# (a, b) lanes shared by the fp32 compares
PAIRS32 = [(ONE, TWO), (TWO, ONE), (QNAN, ONE), (ONE, QNAN), (QNAN, QNAN), (NZ, PZ), (PZ, NZ), (NINF, PINF),
           (PINF, PINF), (M_ONE, NZ), (SNAN, PZ), (NQNAN, NINF), (0x00000001, 0x00000002), (0x80000001, PZ),
           (PINF, QNAN), (ONE, ONE)]
A32 = F32([p[0] for p in PAIRS32])
B32 = F32([p[1] for p in PAIRS32])
ALL16 = np.ones(16, dtype=np.bool_)


# ===================================================================== fp compares
def test_ultn_2xf32t_nan_zero_inf():
    got = ivp.ultn_2xf32t(np.zeros(16, dtype=np.bool_), A32, B32, ALL16)
    # unordered less-than: true if either is NaN, else a < b (+0 == -0):
    # 1<2 T ; 2<1 F ; NaN T ; NaN T ; NaN T ; -0<+0 F ; +0<-0 F ; -inf<inf T ; inf<inf F ; -1<-0 T ;
    # sNaN T ; -NaN T ; sub1<sub2 T ; -sub<+0 T ; (inf, NaN) T ; 1<1 F
    eq(got, np.array([1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0], dtype=np.bool_))


def test_ueqn_2xf32t_nan_zero_inf():
    got = ivp.ueqn_2xf32t(np.zeros(16, dtype=np.bool_), A32, B32, ALL16)
    # unordered equal: true if either is NaN, else a == b (+0 == -0):
    # F F T T T T T F T(inf==inf) F T T F F T T
    eq(got, np.array([0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1], dtype=np.bool_))


def test_fp32_compares_predicated_merge():
    vbp = np.array([k % 2 == 0 for k in range(16)])
    old = np.array([k % 4 < 2 for k in range(16)])         # T T F F T T F F ...
    full_lt = np.array([1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0], dtype=np.bool_)
    full_eq = np.array([0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1], dtype=np.bool_)
    # even lanes (vbp true) take the compare; odd lanes keep old (lane 3: NaN compare would be T, old F -> F)
    eq(ivp.ultn_2xf32t(old, A32, B32, vbp), np.where(vbp, full_lt, old))
    eq(ivp.ueqn_2xf32t(old, A32, B32, vbp), np.where(vbp, full_eq, old))
    assert not ivp.ultn_2xf32t(old, A32, B32, vbp)[3]
    # vbp all false: vb_old unchanged
    eq(ivp.ueqn_2xf32t(old, A32, B32, np.zeros(16, dtype=np.bool_)), old)


H1, H2, HM1, HM2 = 0x3C00, 0x4000, 0xBC00, 0xC000
HNAN, HSNAN, HNNAN, HINF, HNINF, HMAX, HNMAX = 0x7E00, 0x7C01, 0xFE00, 0x7C00, 0xFC00, 0x7BFF, 0xFBFF
PAIRS16 = [(H1, H2), (H2, H1), (HNAN, H1), (H1, HNAN), (HNAN, HNAN), (0x8000, 0), (0, 0x8000), (HNINF, HMAX),
           (HNMAX, HNINF), (0x0001, 0x0002), (0x8001, 0), (HSNAN, HINF), (HNNAN, HNINF), (H1, H1), (HM2, HM1),
           (HNINF, HINF)]


def test_oltnxf16t_nan_is_false():
    a, b = F16([p[0] for p in PAIRS16]), F16([p[1] for p in PAIRS16])
    got = ivp.oltnxf16t(np.zeros(32, dtype=np.bool_), a, b, np.ones(32, dtype=np.bool_))
    # ordered less-than, false on NaN: 1<2 T ; F ; NaN F ; F ; F ; -0<+0 F ; +0<-0 F ; -inf<65504 T ;
    # -65504 < -inf F ; sub1<sub2 T ; -sub<0 T ; sNaN F ; -NaN F ; 1<1 F ; -2<-1 T ; -inf<inf T ; rest 0<0 F
    want = M(32, [1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1])
    eq(got, want)
    # merge: vbp false keeps the old flag (old all True -> only the computed lanes can go False)
    vbp = M(32, [True] * 8)
    eq(ivp.oltnxf16t(np.ones(32, dtype=np.bool_), a, b, vbp), np.where(vbp, want, True))


def test_oltnxf16t_every_pattern_against_the_edges():
    """Every fp16 bit pattern compared both ways with each edge value (signed zeros, the smallest subnormals and
    normals, the largest finite values, infinities, a signalling and a negative NaN): numpy's ordered fp16 <."""
    every = np.arange(1 << 16, dtype=np.uint16).reshape(-1, 32).view(np.float16)
    edges = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x0400, 0x8400, HMAX, HNMAX, HINF, HNINF, HSNAN, HNNAN],
                     dtype=np.uint16).view(np.float16)
    old, every_lane = np.zeros(32, dtype=np.bool_), np.ones(32, dtype=np.bool_)
    with np.errstate(invalid="ignore"):
        for e in edges:
            b = np.full(32, e)
            for a in every:
                eq(ivp.oltnxf16t(old, a, b, every_lane), a < b)
                eq(ivp.oltnxf16t(old, b, a, every_lane), b < a)


# ===================================================================== int -> float converts
def test_float16nx16t_rne_ties_and_range():
    vs = np.array([2049, 2051, 2050, 32767, -32768, -1, 0, 2047, 4095] + [1] * 23, dtype=np.int16)
    got = ivp.float16nx16t(F16([]), vs, 0, np.ones(32, dtype=np.bool_))
    # fp16 has 11 significant bits; at 2048..4095 the spacing is 2:
    # 2049 tie 2048/2050 -> even mantissa 2048 = 2^11 -> exp 26 -> 0x6800
    # 2051 tie 2050 (mant 1, odd) / 2052 (mant 2) -> 2052 -> 0x6802 ; 2050 exact -> 0x6801
    # 32767 -> 32768 = 2^15 -> exp 30 -> 0x7800 ; -32768 -> 0xF800 ; -1 -> 0xBC00 ; 0 -> 0x0000
    # 2047 exact -> 2^10 * (1 + 1023/1024) -> 0x67FF ; 4095 tie 4094/4096 -> 4096 = 2^12 -> 0x6C00 ; 1 -> 0x3C00
    eq(bits16(got), np.array([0x6800, 0x6802, 0x6801, 0x7800, 0xF800, 0xBC00, 0, 0x67FF, 0x6C00] + [0x3C00] * 23,
                             dtype=np.uint16))


def test_float16nx16t_scaled():
    vs = np.array([2049, 2051, 3, -3] + [0] * 28, dtype=np.int16)
    # imm 1 (x * 2^-1): 1024.5 tie 1024/1025 -> 1024 -> 0x6400 ; 1025.5 tie -> 1026 -> 0x6402 ; 1.5 -> 0x3E00 ; -1.5
    eq(bits16(ivp.float16nx16t(F16([]), vs, 1, np.ones(32, dtype=np.bool_)))[:4],
       np.array([0x6400, 0x6402, 0x3E00, 0xBE00], dtype=np.uint16))
    vs = np.array([1, -1, 32767, 3, -32768, 5] + [0] * 26, dtype=np.int16)
    # imm 15: 1 -> 2^-15 = subnormal 512 * 2^-24 -> 0x0200 ; -1 -> 0x8200 ;
    # 32767 * 2^-15 = 1 - 2^-15 -> nearest of (1 - 2^-11, 1) is 1 -> 0x3C00 ;
    # 3 * 2^-15 = 1.5 * 2^-14 -> exp 1, mant 0x200 -> 0x0600 ; -32768 -> -1 -> 0xBC00 ; 5 * 2^-15 = 1.25 * 2^-13 ->
    # 0x0900
    eq(bits16(ivp.float16nx16t(F16([]), vs, 15, np.ones(32, dtype=np.bool_)))[:6],
       np.array([0x0200, 0x8200, 0x3C00, 0x0600, 0xBC00, 0x0900], dtype=np.uint16))


def test_float16nx16t_predicated_merge():
    old = F16([0x1111] * 32)
    vb = M(32, [True, False, True])
    got = ivp.float16nx16t(old, np.array([1] * 32, dtype=np.int16), 0, vb)
    # lanes 0 and 2 -> 1.0 = 0x3C00 ; every other lane keeps 0x1111
    eq(bits16(got), np.array([0x3C00, 0x1111, 0x3C00] + [0x1111] * 29, dtype=np.uint16))


def test_floatn_2x32_large_int_rounding():
    vs = np.array([16777217, 16777219, 0x7FFFFFFF, -2 ** 31, 0, -1, 33554435, 16777216] + [0] * 8, dtype=np.int32)
    got = ivp.floatn_2x32(vs, 0)
    # fp32 has 24 significant bits: 2^24 + 1 tie -> 2^24 (0x4B800000) ; 2^24 + 3 tie 2^24+2 / 2^24+4 -> even
    # mantissa 2^24+4 -> field 2 -> 0x4B800002 ; 2^31 - 1 -> 2^31 -> exp 158 -> 0x4F000000 ; -2^31 -> 0xCF000000 ;
    # 0 -> 0 ; -1 -> 0xBF800000 ; 2^25 + 3 (spacing 4) -> 2^25 + 4 -> exp 152, field 1 -> 0x4C000001 ; 2^24 exact
    eq(bits32(got), np.array([0x4B800000, 0x4B800002, 0x4F000000, 0xCF000000, 0, 0xBF800000, 0x4C000001,
                              0x4B800000] + [0] * 8, dtype=np.uint32))


def test_floatn_2x32_scaled():
    vs = np.array([1, 3, -2 ** 31, 0x7FFFFFFF] + [0] * 12, dtype=np.int32)
    # imm 31: 1 -> 2^-31 -> exp 96 -> 0x30000000 ; 3 -> 1.5 * 2^-30 -> exp 97, field 0x400000 -> 0x30C00000 ;
    # -2^31 -> -1.0 -> 0xBF800000 ; 2^31 - 1 -> rounds to 2^31 -> 1.0 -> 0x3F800000
    eq(bits32(ivp.floatn_2x32(vs, 31))[:4], np.array([0x30000000, 0x30C00000, 0xBF800000, 0x3F800000], dtype=np.uint32))
    # imm 1: 3 -> 1.5 -> 0x3FC00000 ; imm 16: 2^31 - 1 -> 2^15 -> 0x47000000
    assert bits32(ivp.floatn_2x32(vs, 1))[1] == 0x3FC00000
    assert bits32(ivp.floatn_2x32(vs, 16))[3] == 0x47000000


# ===================================================================== float -> int converts
I32MAX, I32MIN = 2 ** 31 - 1, -2 ** 31


def test_truncn_2xf32_toward_zero_saturating_nan():
    vs = np.array([1.9, -1.9, -0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, -100.0], dtype=np.float32)
    b = vs.view(np.uint32)
    b[3:14] = [0x4F000000, 0xCF000000, 0xCF800000, PINF, NINF, QNAN, NQNAN, 0x4EFFFFFF, 0x00000001, NZ, 0x7F7FFFFF]
    got = ivp.truncn_2xf32(vs, 0)
    # 1.9 -> 1 ; -1.9 -> -1 ; -0.5 -> 0 ; 2^31 -> MAX ; -2^31 -> MIN exactly ; -2^32 -> MIN ; +inf MAX ; -inf MIN ;
    # NaN -> MAX ; negative NaN -> MAX ; 0x4EFFFFFF = 2^31 - 128 = 2147483520 ; tiny subnormal -> 0 ; -0 -> 0 ;
    # FLT_MAX -> MAX ; 1.0 -> 1 ; -100 -> -100
    eq(got, np.array([1, -1, 0, I32MAX, I32MIN, I32MIN, I32MAX, I32MIN, I32MAX, I32MAX, 2147483520, 0, 0, I32MAX,
                      1, -100], dtype=np.int32))


def test_truncn_2xf32_scaled():
    vs = np.array([2.5, -2.75, 1.0, -1.0, 0.75, 0] + [0] * 10, dtype=np.float32)
    vs.view(np.uint32)[5] = 0x00000001
    # imm 1: 5 ; -5.5 -> -5 ; 2 ; -2 ; 1.5 -> 1
    eq(ivp.truncn_2xf32(vs, 1)[:5], np.array([5, -5, 2, -2, 1], dtype=np.int32))
    # imm 31: 2.5 * 2^31 -> MAX ; -2.75 * 2^31 -> MIN ; 1.0 * 2^31 = 2^31 -> MAX ; -1.0 * 2^31 = MIN exactly ;
    # 0.75 * 2^31 = 1610612736 ; subnormal 2^-149 * 2^31 -> 0
    eq(ivp.truncn_2xf32(vs, 31)[:6], np.array([I32MAX, I32MIN, I32MAX, I32MIN, 1610612736, 0], dtype=np.int32))
    # imm 2: 0.75 * 4 = 3
    assert ivp.truncn_2xf32(vs, 2)[4] == 3


def test_trunc16nxf16_toward_zero_saturating_nan():
    vs = F16([0x3E00, 0xBE00, HMAX, HNMAX, HINF, HNINF, HNAN, HNNAN, 0x3BFF, 0xF800, 0x7800, 0x77FF, 0x8000, 0x0001])
    # 1.5 -> 1 ; -1.5 -> -1 ; 65504 -> 32767 ; -65504 -> -32768 ; inf MAX ; -inf MIN ; NaN -> 32767 ; -NaN -> 32767 ;
    # 0.99951 -> 0 ; -32768 exact ; 32768 -> 32767 ; 0x77FF = 2^14 * (1 + 1023/1024) = 32752 ; -0 -> 0 ; 2^-24 -> 0
    eq(ivp.trunc16nxf16(vs, 0), np.array([1, -1, 32767, -32768, 32767, -32768, 32767, 32767, 0, -32768, 32767, 32752,
                                          0, 0] + [0] * 18, dtype=np.int16))


def test_trunc16nxf16_scaled():
    vs = F16([0x03FF, H1, HM1, 0x0001, 0x3800, 0xBA00])
    # imm 15: 0x03FF = 1023 * 2^-24 -> * 2^15 = 1023/512 = 1.998 -> 1 ; 1.0 -> 32768 -> 32767 ; -1.0 -> -32768 ;
    # 2^-24 * 2^15 = 2^-9 -> 0
    eq(ivp.trunc16nxf16(vs, 15)[:4], np.array([1, 32767, -32768, 0], dtype=np.int16))
    # imm 1: 0.5 -> 1 ; -0.75 -> -1.5 -> -1
    eq(ivp.trunc16nxf16(vs, 1)[4:6], np.array([1, -1], dtype=np.int16))


def test_cvtf32nxf16_0_1_exact_widen():
    even = [0x3C00, 0x8000, 0x7C00, 0x0001, 0x7E00, 0xFE01, 0x7BFF, 0x03FF, 0xC000, 0x7C01] + [0] * 6
    odd = [0x4000] + [0x3555] * 14 + [0xBC00]
    src = [h for pair in zip(even, odd) for h in pair]     # lane 2k = even[k], lane 2k + 1 = odd[k]
    assert src[:4] == [0x3C00, 0x4000, 0x8000, 0x3555]
    vs = F16(src)
    # _0 widens the even lanes:
    # 1.0 -> 0x3F800000 ; -0 -> 0x80000000 ; inf -> 0x7F800000 ; 2^-24 -> exp 103 -> 0x33800000 ;
    # qNaN 0x7E00 -> 0x7F800000 | 0x200 << 13 = 0x7FC00000 ; 0xFE01 -> 0xFF800000 | 0x201 << 13 = 0xFFC02000 ;
    # 65504 -> 0x477FE000 ; 0x03FF = 1.998046875 * 2^-15 -> exp 112, field 511 << 14 -> 0x387FC000 ;
    # -2 -> 0xC0000000 ; sNaN 0x7C01 -> payload kept: 0x7F800000 | 1 << 13 = 0x7F802000
    eq(bits32(ivp.cvtf32nxf16_0(vs)),
       np.array([0x3F800000, 0x80000000, 0x7F800000, 0x33800000, 0x7FC00000, 0xFFC02000, 0x477FE000, 0x387FC000,
                 0xC0000000, 0x7F802000] + [0] * 6, dtype=np.uint32))
    # _1 widens the odd lanes: 2.0 -> 0x40000000 ; 0x3555 = 2^-2 * (1 + 0x155/1024) -> exp 125, field 0x155 << 13 ;
    # -1 -> 0xBF800000
    eq(bits32(ivp.cvtf32nxf16_1(vs)),
       np.array([0x40000000] + [(125 << 23) | (0x155 << 13)] * 14 + [0xBF800000], dtype=np.uint32))


# ===================================================================== negate, addexp
def test_negnxf16t():
    old = F16([0x1234] * 32)
    vs = F16([H1, 0x0000, HNAN, HNINF, 0x8001, H2])
    vb = M(32, [True, True, True, True, True, False])
    # flip the sign bit, also of zero and NaN: 0xBC00, 0x8000, 0xFE00, 0x7C00, 0x0001 ; lane 5 and up keep 0x1234
    eq(bits16(ivp.negnxf16t(old, vs, vb)),
       np.array([0xBC00, 0x8000, 0xFE00, 0x7C00, 0x0001] + [0x1234] * 27, dtype=np.uint16))


def test_addexpnxf16():
    a = F16([H1, H2, 0x3E00, 0x7800, 0x3C01, 0x0000, 0x8000])
    b = F16([H1, 0x4400, HM2, 0x7800, 0x3FFF, 0x0000, 0x0000])
    # exp = (ea + eb + 17) mod 32, mant = a.mant, sign = a.sign ^ b.sign:
    # 1*1: 15+15+17 = 47 -> 15 -> 0x3C00 ; 2*4: 16+17+17 = 50 -> 18 -> 8.0 = 0x4800 ;
    # 1.5 * -2: 15+16+17 = 48 -> 16, sign 1, mant 0x200 -> 0xC200 (-3.0) ;
    # 0x7800 * 0x7800: 30+30+17 = 77 -> 13 -> 0x3400 (wraps) ; b's mantissa ignored: 0x3C01 ;
    # 0 * 0: exp 0+0+17 = 17 -> 0x4400 ; -0 * 0: sign 1 -> 0xC400 ; tail (0, 0) -> 0x4400
    eq(bits16(ivp.addexpnxf16(a, b)),
       np.array([0x3C00, 0x4800, 0xC200, 0x3400, 0x3C01, 0x4400, 0xC400] + [0x4400] * 25, dtype=np.uint16))


# ===================================================================== numpy-reference properties
F32BITS = arrays(np.uint32, 16, elements=st.one_of(
    st.sampled_from([PZ, NZ, PINF, NINF, QNAN, SNAN, NQNAN, ONE, M_ONE, 0x00000001, 0x80000001]),
    st.integers(0, 2 ** 32 - 1)))
F16BITS = arrays(np.uint16, 32, elements=st.one_of(
    st.sampled_from([0, 0x8000, HINF, HNINF, HNAN, HSNAN, HNNAN, H1, HM1, 0x0001, 0x8001, HMAX]),
    st.integers(0, 2 ** 16 - 1)))


@PROP
@given(a=F32BITS, b=F32BITS, old=arrays(np.bool_, 16), vbp=arrays(np.bool_, 16))
def test_prop_fp32_compares(a, b, old, vbp):
    fa, fb = a.view(np.float32), b.view(np.float32)
    un = np.isnan(fa) | np.isnan(fb)
    eq(ivp.ultn_2xf32t(old, fa, fb, vbp), np.where(vbp, un | (fa < fb), old))
    eq(ivp.ueqn_2xf32t(old, fa, fb, vbp), np.where(vbp, un | (fa == fb), old))


@PROP
@given(a=F16BITS, b=F16BITS, old=arrays(np.bool_, 32), vbp=arrays(np.bool_, 32))
def test_prop_oltnxf16t(a, b, old, vbp):
    fa, fb = a.view(np.float16), b.view(np.float16)
    eq(ivp.oltnxf16t(old, fa, fb, vbp), np.where(vbp, fa < fb, old))


@PROP
@given(vs=arrays(np.int16, 32), imm=st.integers(0, 15), old=F16BITS, vb=arrays(np.bool_, 32))
def test_prop_float16nx16t(vs, imm, old, vb):
    want = (vs.astype(np.float64) * 2.0 ** -imm).astype(np.float16)   # exact product, one RNE rounding
    got = ivp.float16nx16t(old.view(np.float16), vs, imm, vb)
    eq(bits16(got), np.where(vb, bits16(want), old))


@PROP
@given(vs=arrays(np.int32, 16), imm=st.integers(0, 31))
def test_prop_floatn_2x32(vs, imm):
    eq(bits32(ivp.floatn_2x32(vs, imm)), bits32((vs.astype(np.float64) * 2.0 ** -imm).astype(np.float32)))


#: int32 values whose fp32 conversion rounds: ties to even either way (2^24 + 1, + 3, 2^25 + 2, + 6), just off the
#: tie, the int32 ends and their neighbours, and exact ones
FLOAT_EDGES = np.array([2 ** 24 + 1, 2 ** 24 + 3, 2 ** 25 + 2, 2 ** 25 + 6, 2 ** 24 + 2, 2 ** 25 + 3, 2 ** 25 + 5,
                        2 ** 31 - 1, -2 ** 31, -2 ** 31 + 1, -(2 ** 24 + 1), -(2 ** 25 + 6), 0, 1, -1, 2 ** 30 + 64],
                       dtype=np.int64).astype(np.int32)


def test_floatn_2x32_rounding_edges_every_scale():
    for imm in range(32):
        eq(bits32(ivp.floatn_2x32(FLOAT_EDGES, imm)),
           bits32((FLOAT_EDGES.astype(np.float64) * 2.0 ** -imm).astype(np.float32)))


#: <fenv.h>'s FE_UPWARD on each host (x86: MXCSR / x87 RC bits; aarch64: FPCR RMode)
FE_UPWARD = {"x86_64": 0x800, "AMD64": 0x800, "aarch64": 0x400000, "arm64": 0x400000}


@pytest.mark.skipif(platform.machine() not in FE_UPWARD, reason="FE_UPWARD of this host's <fenv.h> not known here")
def test_floatn_2x32_ignores_the_host_rounding_mode():
    """The host's vector convert reads its rounding from MXCSR; under another mode floatn_2x32 must still round to
    nearest even (it falls back to its integer form). glibc's fesetround sets MXCSR's rounding field (on aarch64
    FPCR's, which the portable integer form never reads)."""
    import ctypes
    import ctypes.util

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    fe_upward, fe_tonearest = FE_UPWARD[platform.machine()], 0
    want = {imm: bits32((FLOAT_EDGES.astype(np.float64) * 2.0 ** -imm).astype(np.float32)) for imm in (0, 1, 7)}
    got = {}
    assert libm.fesetround(fe_upward) == 0
    try:
        for imm in want:
            got[imm] = bits32(ivp.floatn_2x32(FLOAT_EDGES, imm))
    finally:
        libm.fesetround(fe_tonearest)
    for imm in want:
        eq(got[imm], want[imm])


def _trunc_ref(f, imm, lo, hi):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = f.astype(np.float64) * 2.0 ** imm
        nan = np.isnan(x)
        t = np.trunc(np.where(nan, 0.0, np.clip(x, lo, hi)))
    return np.where(nan, hi, t).astype(np.int64)


@PROP
@given(vs=F32BITS, imm=st.integers(0, 31))
def test_prop_truncn_2xf32(vs, imm):
    f = vs.view(np.float32)
    eq(ivp.truncn_2xf32(f, imm), _trunc_ref(f, imm, I32MIN, I32MAX).astype(np.int32))


@PROP
@given(vs=F16BITS, imm=st.integers(0, 15))
def test_prop_trunc16nxf16(vs, imm):
    f = vs.view(np.float16)
    eq(ivp.trunc16nxf16(f, imm), _trunc_ref(f, imm, -32768, 32767).astype(np.int16))


def _widen_ref(h):
    h = h.astype(np.uint32)
    nan = ((h & 0x7C00) == 0x7C00) & ((h & 0x3FF) != 0)
    safe = np.where(nan, 0, h).astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    return np.where(nan, ((h >> 15) << 31) | 0x7F800000 | ((h & 0x3FF) << 13), safe).astype(np.uint32)


@PROP
@given(vs=F16BITS)
def test_prop_cvtf32nxf16(vs):
    f = vs.view(np.float16)
    eq(bits32(ivp.cvtf32nxf16_0(f)), _widen_ref(vs[0::2]))
    eq(bits32(ivp.cvtf32nxf16_1(f)), _widen_ref(vs[1::2]))


@PROP
@given(old=F16BITS, vs=F16BITS, vb=arrays(np.bool_, 32))
def test_prop_negnxf16t(old, vs, vb):
    eq(bits16(ivp.negnxf16t(old.view(np.float16), vs.view(np.float16), vb)), np.where(vb, vs ^ 0x8000, old))


@PROP
@given(a=F16BITS, b=F16BITS)
def test_prop_addexpnxf16(a, b):
    e = (((a >> 10) & 0x1F) + ((b >> 10) & 0x1F) + 0x11) & 0x1F
    want = ((a ^ b) & 0x8000) | (e << 10) | (a & 0x3FF)
    eq(bits16(ivp.addexpnxf16(a.view(np.float16), b.view(np.float16))), want.astype(np.uint16))
