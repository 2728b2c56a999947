"""The IVP primitives against what public code written with the real Xtensa toolchain says the intrinsics compute.

Every expected value here is computed in plain numpy from the PUBLIC CODE's own statement: the Halide IR pattern an
intrinsic sequence replaces, a C fallback body, an ``#ifdef`` alternative, a value check against Cadence's functional
model or Cadence's user-guide sequence. The references are written from those sources, independently of the q7emu
wrappers and of the semantics strings of q7emu/primitives/optable.py (docs/intrinsics.md and
q7emu/primitives/evidence.toml say in prose what each source shows and how strong it is). Each test's docstring names
the evidence it encodes: repository, path, commit and lines.

Sources (the commits the line numbers are at):

* ``halide/Halide`` branch xtensa-codegen @ 001745e0290e7ecc8dcd9645a60c95b5e259805a:
  src/CodeGen_Xtensa_vectors.template.cpp (the C++ bodies of Halide's Xtensa helpers), src/XtensaOptimize.cpp,
  src/CodeGen_Xtensa.cpp, test/correctness/simd_op_check_xtensa.cpp (value checks run against Cadence's cstub
  library), src/runtime/float16_t.cpp; and the removed code at 12f5760a222dfe23ce6278f15624634e23b40437;
* ``foss-xtensa/tflmlib_vision`` @ 8f54fea399daf28602d74b60e8b5122ec192a81a: Cadence's Vision P6 kernels
  (same 512-bit vectors as Q7);
* ``xai_intrin.h``: Tensilica's XAI CNN library intrinsics header (2013-2018) with ``#ifndef`` C fallbacks; the
  public-code index holds it without its repository, so it is cited by macro and character offset.

Operands are passed in the C intrinsics' argument order (a two-register source high half first), as the wrappers
take them; vbool2N bit k is lane k of a bool[64].
"""
from __future__ import annotations

import ast
import pathlib
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from ivp_testlib import eq

from q7emu.primitives import ivp

PROP = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

U8_64 = arrays(np.uint8, 64)
S8_64 = arrays(np.int8, 64)
U16_32 = arrays(np.uint16, 32)
S16_32 = arrays(np.int16, 32)
U32_16 = arrays(np.uint32, 16)
PR64 = st.integers(0, 2 ** 64 - 1)


def concat(*vs):
    """Halide's concat of native vectors: vs[0] is lanes 0..N-1, vs[1] lanes N..2N-1, ..."""
    return np.concatenate(vs)


def interleave(*vs):
    """Halide's interleave_vectors: r[len(vs) * i + j] = vs[j][i]."""
    return np.stack(vs, axis=1).ravel()


def wrap(x, bits):
    """An integer wrapped to a signed ``bits``-bit value (a wide-accumulator lane read back as signed)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << (bits - 1))) & ((1 << bits) - 1)) - (1 << (bits - 1))


def s8(x):
    """The low byte of an int as a signed 8-bit value."""
    x &= 0xFF
    return x - 0x100 if x >= 0x80 else x


def s16(x):
    """The low 16 bits of an int as a signed 16-bit value."""
    x &= 0xFFFF
    return x - 0x10000 if x >= 0x8000 else x


# ===================================================================== (a) Halide's shuffles: sel*, sel2nx8i
@PROP
@given(a0=U8_64, a1=U8_64, idx=arrays(np.uint8, 64, elements=st.integers(0, 127)))
def test_halide_dynamic_shuffle_u8(a0, a1, idx):
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    2009-2011: halide_xtensa_dynamic_shuffle(a_x2, idx) = IVP_SEL2NX8(a[1], a[0], idx), which replaces a lookup
    into the 128 lanes concat(a[0], a[1]) (src/XtensaOptimize.cpp 1436-1444): out[k] = concat(a0, a1)[idx[k]]."""
    eq(ivp.sel2nx8(a1, a0, idx), concat(a0, a1)[idx])


@PROP
@given(lut=arrays(np.uint8, 256), idx=U8_64)
def test_tflm_softmax_256_entry_lut(lut, idx):
    """foss-xtensa/tflmlib_vision xi_tflmlib_vision_p6/kernels/src/softmaxA.h
    @8f54fea399daf28602d74b60e8b5122ec192a81a lines 292-293: a 256-entry byte table in four vectors LUT0..LUT3
    (entries 0..63, 64..127, ...): dvecLL = IVP_SEL2NX8(LUT1, LUT0, idx); IVP_SEL2NX8T(dvecLL, LUT3, LUT2, idx,
    idx >= 128). The pair is the lookup lut[idx] for every byte idx, so the select reads concat(lo, hi)[idx & 127]
    (the predicated form's merge is done here in numpy)."""
    lut0, lut1, lut2, lut3 = lut[0:64], lut[64:128], lut[128:192], lut[192:256]
    low = ivp.sel2nx8(lut1, lut0, idx)
    high = ivp.sel2nx8(lut3, lut2, idx)
    eq(np.where(idx >= 128, high, low), lut[idx])
    eq(low, concat(lut0, lut1)[idx & 127])


@PROP
@given(a0=U16_32, a1=U16_32, idx=arrays(np.uint16, 32, elements=st.integers(0, 63)))
def test_halide_dynamic_shuffle_16(a0, a1, idx):
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    2013-2019: halide_xtensa_dynamic_shuffle(a_x2, b) = IVP_SELNX16(a[1], a[0], b): out[k] = concat(a0, a1)[b[k]]."""
    eq(ivp.selnx16(a1, a0, idx), concat(a0, a1)[idx])


@PROP
@given(a0=U32_16, a1=U32_16, idx=arrays(np.uint32, 16, elements=st.integers(0, 31)))
def test_halide_dynamic_shuffle_32(a0, a1, idx):
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    2033-2035: halide_xtensa_dynamic_shuffle(a_x2, b) = IVP_SELN_2XF32(a[1], a[0], b) (the f32 sibling of
    IVP_SELN_2X32, the same 32-bit lane map): out[k] = concat(a0, a1)[b[k]]."""
    eq(ivp.seln_2x32(a1, a0, idx), concat(a0, a1)[idx])


@PROP
@given(a0=U16_32, a1=U16_32, b0=U32_16, b1=U32_16)
def test_halide_slices(a0, a1, b0, b1):
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    1968-1978: halide_xtensa_slice_i16(a_x2, start) = IVP_SELNX16(a[1], a[0], IVP_SEQNX16() + start) and
    halide_xtensa_slice_i32 = IVP_SELN_2X32(a[1], a[0], IVP_SEQN_2X32() + start): Halide's
    slice(concat(a0, a1), start, 1, N), out[k] = concat(a0, a1)[start + k], for every start that stays inside."""
    for start in range(0, 33):
        seq = (np.arange(32) + start).astype(np.uint16)
        eq(ivp.selnx16(a1, a0, seq), concat(a0, a1)[start:start + 32])
    for start in range(0, 17):
        seq = (np.arange(16) + start).astype(np.uint32)
        eq(ivp.seln_2x32(b1, b0, seq), concat(b0, b1)[start:start + 16])


#: Halide's IVP_SELI_* pattern names -> the immediates q7emu models them with (the numeric values are in no public
#: source: q7emu's choice)
SELI = {"EXTRACT_1_OF_2_OFF_0": 0x00, "EXTRACT_1_OF_2_OFF_1": 0x01, "INTERLEAVE_1_LO": 0x02,
        "INTERLEAVE_1_HI": 0x03, "ROTATE_RIGHT_1": 0x10, "ROTATE_RIGHT_4": 0x11}


@PROP
@given(a0=U8_64, a1=U8_64)
def test_halide_deinterleave_u8(a0, a1):
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    1993-1999: halide_xtensa_deinterleave_even_u8(a_x2) = IVP_SEL2NX8UI(a[1], a[0],
    IVP_SELI_8B_EXTRACT_1_OF_2_OFF_0), _odd_ with _OFF_1: the even / odd lanes of concat(a0, a1)."""
    eq(ivp.sel2nx8i(a1, a0, SELI["EXTRACT_1_OF_2_OFF_0"]), concat(a0, a1)[0::2])
    eq(ivp.sel2nx8i(a1, a0, SELI["EXTRACT_1_OF_2_OFF_1"]), concat(a0, a1)[1::2])


@PROP
@given(a=U8_64, b=U8_64)
def test_halide_interleave_u8(a, b):
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    1594-1598: halide_xtensa_interleave_u8(a, b) = (IVP_SEL2NX8UI(b, a, IVP_SELI_8B_INTERLEAVE_1_LO),
    IVP_SEL2NX8UI(b, a, IVP_SELI_8B_INTERLEAVE_1_HI)): the two halves of interleave(a, b), r[2i] = a[i],
    r[2i + 1] = b[i]."""
    r = interleave(a, b)
    eq(ivp.sel2nx8i(b, a, SELI["INTERLEAVE_1_LO"]), r[:64])
    eq(ivp.sel2nx8i(b, a, SELI["INTERLEAVE_1_HI"]), r[64:])


@PROP
@given(a0=U8_64, a1=U8_64)
def test_halide_slice_right(a0, a1):
    """halide/Halide src/CodeGen_Xtensa.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines 374-409:
    halide_xtensa_slice_right(a_x2, n) is printed as IVP_SEL2NX8I(a.native_vector[1], a.native_vector[0],
    IVP_SELI_8B_ROTATE_RIGHT_n); it implements slice(concat(a0, a1), n, 1, 64): out[k] = concat(a0, a1)[k + n]."""
    eq(ivp.sel2nx8i(a1, a0, SELI["ROTATE_RIGHT_1"]), concat(a0, a1)[1:65])
    eq(ivp.sel2nx8i(a1, a0, SELI["ROTATE_RIGHT_4"]), concat(a0, a1)[4:68])


# ===================================================================== (b) Cadence's 3-way u16 interleave
def _tag(ch, i):
    """A label for element i of input channel ch (0 = a, 1 = b, 2 = c)."""
    return 32 * ch + i


def _three_way_tables():
    """The two DSEL selector tables and the DSELNX16UT predicate of the user-guide 3-way u16 interleave, derived
    from what the sequence must compute (not copied): rgb = interleave(a, b, c) of three 32-lane u16 vectors is
    vRGB0 || vRGB1 || vRGB2 (96 lanes), rgb[3i] = a[i], rgb[3i + 1] = b[i], rgb[3i + 2] = c[i].

    Step 1 (DSELNX16UI INTERLEAVE_1): vRG0 || vRG1 = interleave(a, b). Step 2 interleaves the elements 0..15 of
    a, b, c into rgb[0:48], step 3 the elements 16..31 into rgb[48:96]. Step 2, DSELNX16U(vRGB1, vRGB0, c, vRG0,
    sel0): pool P0 = vRG0 || c; the second output (vRGB0 = rgb[0:32]) takes selector byte 2k, the first (vRGB1 =
    rgb[32:64]) byte 2k + 1; its lanes 16..31 (rgb[48:64]) are step 3's, don't-cares here (index 0). Step 3,
    DSELNX16UT(vRGB1, vRGB2, c, vRG1, sel1, vb): pool P1 = vRG1 || c; vbool bit 2k gates vRGB2[k] (= rgb[64 + k],
    all of it), bit 2k + 1 gates vRGB1[k] (only its lanes 16..31; lanes 0..15 keep step 2's values)."""
    rgb = interleave(*(np.array([_tag(ch, i) for i in range(32)]) for ch in range(3)))
    rg = interleave(np.array([_tag(0, i) for i in range(32)]), np.array([_tag(1, i) for i in range(32)]))
    c = np.array([_tag(2, i) for i in range(32)])
    p0, p1 = concat(rg[:32], c), concat(rg[32:], c)

    def where(p, tag):
        hits = np.flatnonzero(p == tag)
        assert hits.size == 1, tag                      # each element the step needs is in its pool, once
        return int(hits[0])

    sel0 = np.zeros(64, np.uint8)
    sel1 = np.zeros(64, np.uint8)
    vb = np.zeros(64, np.bool_)
    for k in range(32):
        sel0[2 * k] = where(p0, rgb[k])                 # vRGB0[k] = rgb[k] (step 2)
        if 32 + k < 48:
            sel0[2 * k + 1] = where(p0, rgb[32 + k])    # vRGB1[k] = rgb[32 + k] (step 2)
        else:
            sel1[2 * k + 1] = where(p1, rgb[32 + k])    # vRGB1[k] = rgb[32 + k] (step 3)
            vb[2 * k + 1] = True
        sel1[2 * k] = where(p1, rgb[64 + k])            # vRGB2[k] = rgb[64 + k] (step 3)
        vb[2 * k] = True
    return sel0, sel1, vb


def test_three_way_interleave_tables_from_their_meaning():
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    1513-1560 ("taken from the user guide"): the derived predicate is the guide's vbool2N 0xffffffff55555555
    (line 1528), every selector byte indexes the 64-lane pool, and step 2 fills vRGB1 lanes 0..15."""
    sel0, sel1, vb = _three_way_tables()
    mask = sum(1 << i for i in range(64) if vb[i])
    assert mask == 0xFFFFFFFF55555555
    assert sel0.max() < 64 and sel1.max() < 64
    assert vb[1::2].tolist() == [False] * 16 + [True] * 16


@PROP
@given(a=U16_32, b=U16_32, c=U16_32, junk=U16_32)
def test_cadence_user_guide_three_way_u16_interleave(a, b, c, junk):
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    1513-1560, Cadence's user-guide sequence for the interleave of three u16 vectors:
    IVP_DSELNX16UI(vRG1, vRG0, b, a, IVP_DSELI_INTERLEAVE_1) (done here in numpy);
    IVP_DSELNX16U(vRGB1, vRGB0, c, vRG0, sel0); IVP_DSELNX16UT(vRGB1, vRGB2, c, vRG1, sel1, 0xffffffff55555555)
    returns (vRGB0, vRGB1, vRGB2) = interleave(a, b, c). The selector tables are derived from that meaning
    (_three_way_tables); vRGB2 starts as garbage and must be fully written."""
    sel0, sel1, vb = _three_way_tables()
    rg = interleave(a, b)
    v_rg0, v_rg1 = rg[:32], rg[32:]
    v_rgb1, v_rgb0 = ivp.dselnx16(c, v_rg0, sel0)
    v_rgb1, v_rgb2 = ivp.dselnx16t(v_rgb1, junk, c, v_rg1, sel1, vb)
    eq(concat(v_rgb0, v_rgb1, v_rgb2), interleave(a, b, c))


# ===================================================================== (c) the 4-tap MACs (xai_intrin.h fallback)
def _rotate_right(hi, lo, t):
    """IVP_SEL2NX8I(hi, lo, IVP_SELI_*_ROTATE_RIGHT_t): lane i = (lo || hi)[i + t] (the slice_right above)."""
    return concat(lo, hi)[t:t + len(lo)]


def _rep16(pr, t):
    """IVP_REP of field t of the scalar: the signed 16-bit field t of pr (bits 16t .. 16t + 15)."""
    return s16(pr >> (16 * t))


def _four_tap_fallback(acc, dvec1, dvec0, pr):
    """xai_intrin.h's IVP_MUL4TA2N8XR8 body, transposed to 16-bit lanes and XR16 fields:
    IVP_MULA(acc, dvec0, REP(s, 0)); IVP_MULA(acc, SEL(dvec1, dvec0, ROTATE_RIGHT_t), REP(s, t)) for t = 1..3."""
    acc = np.asarray(acc, dtype=np.int64) + dvec0.astype(np.int64) * _rep16(pr, 0)
    for t in (1, 2, 3):
        acc = acc + _rotate_right(dvec1, dvec0, t).astype(np.int64) * _rep16(pr, t)
    return wrap(acc, 48)


ACC48 = arrays(np.int64, 32, elements=st.integers(-2 ** 47, 2 ** 47 - 1))


@PROP
@given(dvec1=U16_32, dvec0=U16_32, pr=PR64, acc=ACC48)
def test_xai_4tap_fallback_mulus4t(dvec1, dvec0, pr, acc):
    """xai_intrin.h (XAI CNN library, chars 16,699-18,500: #ifndef IVP_MULUS4TA2N8XR8 / IVP_MULUS4T2N8XR8):
    IVP_MULUS4TA2N8XR8(acc, dvec1, dvec0, s) = acc += dvec0 * s.0 + SEL2NX8UI(dvec1, dvec0, ROTATE_RIGHT_t) * s.t
    (t = 1..3; MULUS: the vector unsigned, the scalar signed); the non-accumulating form starts from
    IVP_MULUS2NX8(dvec0, s.0). Transposed to IVP_MULUS4TAN16XR16 / IVP_MULUS4TN16XR16: 16-bit lanes, the taps the
    16-bit fields of pr."""
    zero = np.zeros(32, np.int64)
    eq(ivp.mulus4tan16xr16(acc, dvec1, dvec0, pr), _four_tap_fallback(acc, dvec1, dvec0, pr))
    eq(ivp.mulus4tn16xr16(dvec1, dvec0, pr), _four_tap_fallback(zero, dvec1, dvec0, pr))


@PROP
@given(dvec1=S16_32, dvec0=S16_32, pr=PR64, acc=ACC48)
def test_xai_4tap_fallback_mul4t(dvec1, dvec0, pr, acc):
    """xai_intrin.h (XAI CNN library, chars 16,699-18,200: #ifndef IVP_MUL4TA2N8XR8 / IVP_MUL4T2N8XR8):
    IVP_MUL4TA2N8XR8(acc, dvec1, dvec0, s) = acc += dvec0 * s.0 + SEL2NX8I(dvec1, dvec0, ROTATE_RIGHT_t) * s.t
    (signed x signed); IVP_MUL4T2N8XR8 starts from IVP_MUL2NX8(dvec0, s.0). Transposed to IVP_MUL4TAN16XR16 /
    IVP_MUL4TN16XR16: 16-bit lanes, the taps the 16-bit fields of pr."""
    zero = np.zeros(32, np.int64)
    eq(ivp.mul4tan16xr16(acc, dvec1, dvec0, pr), _four_tap_fallback(acc, dvec1, dvec0, pr))
    eq(ivp.mul4tn16xr16(dvec1, dvec0, pr), _four_tap_fallback(zero, dvec1, dvec0, pr))


def test_xai_4tap_fallback_edges():
    """xai_intrin.h (chars 16,699-18,500), as above, on edge lanes: all-ones / all-max vectors and taps, one tap
    at a time (tap t reaches dvec1 in the top t lanes), and the 2^48 wrap."""
    umax = np.full(32, 0xFFFF, np.uint16)
    smin = np.full(32, -32768, np.int16)
    ramp = np.arange(32, dtype=np.uint16)
    high = (np.arange(32) + 100).astype(np.uint16)
    zero = np.zeros(32, np.int64)
    for t in range(4):
        pr = 1 << (16 * t)
        eq(ivp.mulus4tn16xr16(high, ramp, pr), _four_tap_fallback(zero, high, ramp, pr))
        assert ivp.mulus4tn16xr16(high, ramp, pr)[31] == (99 + t if t else 31)
    for pr in (0xFFFF_FFFF_FFFF_FFFF, 0x8000_8000_8000_8000, 0x7FFF_7FFF_7FFF_7FFF):
        eq(ivp.mulus4tn16xr16(umax, umax, pr), _four_tap_fallback(zero, umax, umax, pr))
        eq(ivp.mul4tn16xr16(smin, smin, pr), _four_tap_fallback(zero, smin, smin, pr))
    acc = np.full(32, 2 ** 47 - 1, np.int64)
    eq(ivp.mul4tan16xr16(acc, smin, smin, 0x8000_8000_8000_8000),
       _four_tap_fallback(acc, smin, smin, 0x8000_8000_8000_8000))


# ===================================================================== (d) dual quad MAC / dual extract
def _mulqa(acc, v3, v2, v1, v0, s):
    """IVP_MULQA2N8XR8(acc, v3, v2, v1, v0, s) = acc + sum_j vj * s.byte(j), 24-bit lanes (the #else path of
    Cadence's conv kernel; xai_intrin.h's fallback: IVP_MULA2NX8(acc, dvec_j, IVP_REP2NX8(dvecS, j)))."""
    total = np.asarray(acc, dtype=np.int64).copy()
    for j, v in enumerate((v0, v1, v2, v3)):
        total = total + v.astype(np.int64) * s8(s >> (8 * j))
    return wrap(total, 24)


ACC24 = arrays(np.int64, 64, elements=st.integers(-2 ** 23, 2 ** 23 - 1))


@PROP
@given(acc1=ACC24, acc2=ACC24, c1=S8_64, c2=S8_64, c3=S8_64, c4=S8_64, d1=S8_64, d2=S8_64,
       i=st.integers(0, 15))
def test_cadence_conv_ifdef_pair_dmulqa(acc1, acc2, c1, c2, c3, c4, d1, d2, i):
    """foss-xtensa/tflmlib_vision TFLM_PersonDetection/tensorflow/lite/micro/tools/make/downloads/
    xi_annlib_vision_p6/conv2D_xi.cc @8f54fea399daf28602d74b60e8b5122ec192a81a lines 1143-1154 and 1184-1191, an
    #ifdef IVP_DMULQA2N8XR8 / #else pair that must compute the same:
    #ifdef: q = IVP_DEXTRPRN_2X32(d2, d1, i, i); IVP_DMULQA2N8XR8(daccSum2, daccSum1, c4, c3, c2, c1, q);
    #else: IVP_MULQA2N8XR8(daccSum1, c4, c3, c2, c1, d1.u32[i]); IVP_MULQA2N8XR8(daccSum2, c4, c3, c2, c1,
    d2.u32[i]). The kernel uses i = 0..3; every lane i < 16 is tested. MULQA's byte order: xai_intrin.h
    IVP_MULQA2N8XR8 fallback (chars ~13,600)."""
    d1_32, d2_32 = d1.view(np.uint32), d2.view(np.uint32)       # IVP_MOVN_2X32_FROMNX16(IVP_MOVNX16_FROM2NX8(d))
    q = ivp.dextrprn_2x32(d2_32, d1_32, i, i)
    sum2, sum1 = ivp.dmulqa2n8xr8(acc2, acc1, c4, c3, c2, c1, q)
    eq(sum1, _mulqa(acc1, c4, c3, c2, c1, int(d1_32[i])))
    eq(sum2, _mulqa(acc2, c4, c3, c2, c1, int(d2_32[i])))


@PROP
@given(acc1=ACC24, acc2=ACC24, c1=S8_64, c2=S8_64, c3=S8_64, c4=S8_64, d1=S8_64)
def test_cadence_conv_dmulqa_same_vector_two_lanes(acc1, acc2, c1, c2, c3, c4, d1):
    """foss-xtensa/tflmlib_vision .../xi_annlib_vision_p6/conv2D_xi.cc @8f54fea399daf28602d74b60e8b5122ec192a81a
    lines 1057-1084: IVP_DEXTRPRN_2X32(d1, d1, 2, 0) feeds daccSum1 (the 2nd accumulator) with lane 0 and daccSum2
    (the 1st) with lane 2, the #else path's two MULQA with d1.u32[0] and d1.u32[2]."""
    d = d1.view(np.uint32)
    sum2, sum1 = ivp.dmulqa2n8xr8(acc2, acc1, c4, c3, c2, c1, ivp.dextrprn_2x32(d, d, 2, 0))
    eq(sum1, _mulqa(acc1, c4, c3, c2, c1, int(d[0])))
    eq(sum2, _mulqa(acc2, c4, c3, c2, c1, int(d[2])))


@settings(max_examples=10, deadline=None)
@given(v0=U8_64, v1=U8_64)
def test_halide_dual_extract(v0, v1):
    """halide/Halide src/XtensaOptimize.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines 351-365:
    concat(halide_xtensa_extract_u32(v0, i0), halide_xtensa_extract_u32(v1, i1)) (an 8-byte int8x8_t: bytes 0..3 =
    the 4-byte lane i0 of v0, bytes 4..7 = lane i1 of v1) becomes dual_extract(v1, v0, i1, i0), printed as
    IVP_DEXTRPRN_2X32(v1, v0, i1, i0) (src/CodeGen_Xtensa.cpp 437-443). Every index pair."""
    b0, b1 = v0.tobytes(), v1.tobytes()
    for i0 in range(16):
        for i1 in range(16):
            want = int.from_bytes(b0[4 * i0:4 * i0 + 4] + b1[4 * i1:4 * i1 + 4], "little")
            assert ivp.dextrprn_2x32(v1.view(np.uint32), v0.view(np.uint32), i1, i0) == want, (i0, i1)


# ===================================================================== (e) Halide's f16 -> f32 conversion
_MSB = np.array([0] + [int(x).bit_length() - 1 for x in range(1, 1024)], dtype=np.int64)


def _halide_f16_to_f32_bits(h):
    """halide_float16_bits_to_float (src/runtime/float16_t.cpp 6-64) on uint16 bit patterns: a subnormal is
    renormalised; zero, normals, infinities and NaNs keep their significand shifted left by 13 (NaN payloads
    kept) with the exponent re-encoded (0 -> 0, 31 -> 0xff, else + 112)."""
    h = np.asarray(h).astype(np.int64)
    sign = (h & 0x8000) << 16
    sig = h & 0x3FF
    exp = (h >> 10) & 0x1F
    msb = _MSB[sig]
    sub = sign | ((-24 + msb + 127) << 23) | ((sig & ~(1 << msb)) << (23 - msb))
    re_exp = np.where(exp == 0, 0, np.where(exp == 31, 0xFF, exp - 15 + 127))
    normal = sign | (re_exp << 23) | (sig << 13)
    return np.where((exp == 0) & (sig != 0), sub, normal).astype(np.uint32)


def _check_f16_to_f32(bits16):
    """convert<f32_x2, f16>: IVP_DSELN_2XF32I(out[1], out[0], CVTF32NXF16_1(src), CVTF32NXF16_0(src),
    IVP_DSELI_INTERLEAVE_2): out[0] || out[1] = the 32-bit interleave of (_0, _1) must be f32(src)."""
    src = bits16.view(np.float16)
    out = interleave(ivp.cvtf32nxf16_0(src).view(np.uint32), ivp.cvtf32nxf16_1(src).view(np.uint32))
    eq(out, _halide_f16_to_f32_bits(bits16))


def test_halide_f16_to_f32_reference_is_the_float_value():
    """The numpy reference of halide_float16_bits_to_float (halide/Halide src/runtime/float16_t.cpp
    @001745e0290e7ecc8dcd9645a60c95b5e259805a lines 6-64) gives float32(x) for every non-NaN fp16 and keeps NaN
    payloads (sNaN 0x7C01 -> 0x7F802000)."""
    h = np.arange(65536, dtype=np.uint16)
    ref = _halide_f16_to_f32_bits(h)
    nan = ((h & 0x7C00) == 0x7C00) & ((h & 0x3FF) != 0)
    eq(ref[~nan], h[~nan].view(np.float16).astype(np.float32).view(np.uint32))
    assert ref[0x7C01] == 0x7F802000 and ref[0xFE00] == 0xFFC00000 and ref[0x0001] == 0x33800000


def test_halide_f16_to_f32_every_pattern():
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    2853-2865: convert<f32_x2, f16>(src) = IVP_DSELN_2XF32I(out[1], out[0], IVP_CVTF32NXF16_1(src),
    IVP_CVTF32NXF16_0(src), IVP_DSELI_INTERLEAVE_2), Halide's f16 -> f32 cast (float32(x) as
    src/runtime/float16_t.cpp 6-64 computes it): all 65536 fp16 bit patterns (NaN payloads, subnormals,
    infinities), compared as bit patterns."""
    allbits = np.arange(65536, dtype=np.uint16).reshape(-1, 32)
    for row in allbits:
        _check_f16_to_f32(row)


SPECIAL16 = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0xFDFF, 0x7FFF, 0x0001, 0x8001, 0x03FF,
             0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x3555]


@PROP
@given(bits=arrays(np.uint16, 32, elements=st.sampled_from(SPECIAL16) | st.integers(0, 0xFFFF)))
def test_halide_f16_to_f32_random(bits):
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    2853-2865 (as above) on random mixes of special and ordinary fp16 lanes."""
    _check_f16_to_f32(bits)


# ===================================================================== (f) Halide's value checks of the shifts
def _shift(x, b, bits, left):
    """Halide's x << b (left) / x >> b on unsigned `bits`-bit lanes with a signed amount b: a negative amount
    shifts the other way (src/CodeGen_Internal.cpp lower_signed_shift_*); the result truncated to `bits` bits."""
    x, b = np.asarray(x, dtype=np.int64), np.asarray(b, dtype=np.int64)
    up = np.where(left, b, -b)                         # > 0: towards the high bits
    out = np.where(up >= 0, x << np.clip(up, 0, 63), x >> np.clip(-up, 0, 63))
    return out & ((1 << bits) - 1)


@PROP
@given(x=U16_32, b=S16_32)
def test_halide_simd_check_shifts_16(x, b):
    """halide/Halide test/correctness/simd_op_check_xtensa.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines 119
    and 123, value-checked against Cadence's cstub library: IVP_SRLNX16 = u16_1 >> min(max(i16_2, -16), 16) and
    IVP_SLLNX16U = u16_1 << min(max(i16_2, -16), 16) (a negative amount shifts the other way)."""
    a = np.clip(b, -16, 16).astype(np.int16)
    eq(ivp.srlnx16(x, a.view(np.uint16)), _shift(x, a, 16, left=False).astype(np.uint16))
    eq(ivp.sllnx16(x, a.view(np.uint16)), _shift(x, a, 16, left=True).astype(np.uint16))


@PROP
@given(x=U32_16, b=arrays(np.int32, 16))
def test_halide_simd_check_shifts_32(x, b):
    """halide/Halide test/correctness/simd_op_check_xtensa.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines 121
    and 126: IVP_SRLN_2X32 = u32_1 >> min(max(i32_2, -31), 31) and IVP_SLLN_2X32U = u32_1 << min(max(i32_2, -31),
    31)."""
    a = np.clip(b, -31, 31).astype(np.int32)
    eq(ivp.srln_2x32(x, a.view(np.uint32)), _shift(x, a, 32, left=False).astype(np.uint32))
    eq(ivp.slln_2x32(x, a.view(np.uint32)), _shift(x, a, 32, left=True).astype(np.uint32))


def test_halide_simd_check_shifts_every_amount():
    """halide/Halide test/correctness/simd_op_check_xtensa.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    119-126 (as above): every amount of the checked ranges, [-16, 16] and [-31, 31], on edge lanes."""
    x16 = np.array([0, 1, 0x8000, 0xFFFF, 0x8421, 0x1234, 0x7FFF, 0x0F0F] * 4, dtype=np.uint16)
    for b in range(-16, 17):
        a = np.full(32, b, np.int16)
        eq(ivp.srlnx16(x16, a.view(np.uint16)), _shift(x16, a, 16, left=False).astype(np.uint16))
        eq(ivp.sllnx16(x16, a.view(np.uint16)), _shift(x16, a, 16, left=True).astype(np.uint16))
    x32 = np.array([0, 1, 0x80000000, 0xFFFFFFFF, 0x80000001, 0x12345678, 0x7FFFFFFF, 0x0F0F0F0F] * 2,
                   dtype=np.uint32)
    for b in range(-31, 32):
        a = np.full(16, b, np.int32)
        eq(ivp.srln_2x32(x32, a.view(np.uint32)), _shift(x32, a, 32, left=False).astype(np.uint32))
        eq(ivp.slln_2x32(x32, a.view(np.uint32)), _shift(x32, a, 32, left=True).astype(np.uint32))


# ===================================================================== (g) the paired MACs' field order
@PROP
@given(a=S16_32, b=S16_32, w=st.integers(1, 65535))
def test_halide_lerp_mulsupn16xr16(a, b, w):
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    2421-2430 (halide_xtensa_lerp_i16, disabled): alphaMalpha = ((65536 - w) << 16) | w;
    IVP_MULSUPN16XR16(a, b, alphaMalpha) = a * (65536 - w) + b * w (signed vectors, unsigned weights). w = 0 is
    left out: the uint32 expression then wraps to 0."""
    pr = ((65536 - w) << 16) | w
    want = a.astype(np.int64) * (65536 - w) + b.astype(np.int64) * w
    eq(ivp.mulsupn16xr16(a, b, pr), wrap(want, 48))


@PROP
@given(acc=arrays(np.int64, 32, elements=st.integers(-2 ** 47, 2 ** 47 - 1)), a=U16_32, b=U16_32,
       w=st.integers(1, 65535))
def test_halide_lerp_field_order_muluupan16xr16(acc, a, b, w):
    """halide/Halide src/CodeGen_Xtensa_vectors.template.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a lines
    2421-2430: the paired family's field order (the first vector times pr bits 16..31, the second bits 0..15) for
    the unsigned accumulating sibling IVP_MULUUPAN16XR16: acc + a * (65536 - w) + b * w."""
    pr = ((65536 - w) << 16) | w
    want = acc + a.astype(np.int64) * (65536 - w) + b.astype(np.int64) * w
    eq(ivp.muluupan16xr16(acc, a, b, pr), wrap(want, 48))


@PROP
@given(acc=ACC24, a=U8_64, c=U8_64, b=st.integers(-32768, 32767), d=st.integers(-32768, 32767))
def test_halide_pair_mul_field_order_muluspa2n8xr16(acc, a, c, b, d):
    """halide/Halide src/CodeGen_Xtensa.cpp @12f5760a222dfe23ce6278f15624634e23b40437 lines 1321-1327 (removed):
    halide_xtensa_widen_pair_mul_vu8_si16_i24(a, b, c, d) = IVP_MULUSP2N8XR16(a, c, (b << 16) | d) = a * b + c * d
    (u8 vectors, int16 weights); the accumulating IVP_MULUSPA2N8XR16 adds it to acc (24-bit lanes). The weights are
    packed as 16-bit fields (the C expression sign-extends a negative d into the high half)."""
    pr = ((b & 0xFFFF) << 16) | (d & 0xFFFF)
    want = acc + a.astype(np.int64) * b + c.astype(np.int64) * d
    eq(ivp.muluspa2n8xr16(acc, a, c, pr), wrap(want, 24))


# ===================================================================== (h) Cadence's variable-length stream
@pytest.mark.parametrize("start", [0, 5, 64])
def test_cadence_datatransform_variable_length_stream(start):
    """foss-xtensa/tflmlib_vision xi_tflmlib_vision_p6/kernels/src/datatransform.cc
    @8f54fea399daf28602d74b60e8b5122ec192a81a lines 3293-3312: the tail of varLen bytes is loaded by
    IVP_LAV2NX8U_XP(v1, va, p, varLen); IVP_LAV2NX8U_XP(v2, va, p, varLen - 64); ... (varLen - 128), (varLen - 192)
    (vectorizationWidth = 2 * XCHAL_IVPN_SIMD_WIDTH = 64, line 3246) and stored by four IVP_SAV2NX8_XP with the same
    counts: the loads read consecutive 64-byte chunks of one stream (zero past varLen), the stores write exactly
    the first varLen bytes, and both pointers end varLen bytes on. Every n in 0..256; the source buffer ends at
    start + n, so no load may read past it."""
    rng = np.random.default_rng(start)
    for n in range(257):
        src = rng.integers(0, 256, start + n, dtype=np.uint8)
        padded = concat(src[start:], np.zeros(256, np.uint8))
        off, vecs = start, []
        for j in range(4):
            vt, off = ivp.lav2nx8_xp(src, off, n - 64 * j)
            eq(vt, padded[64 * j:64 * j + 64])
            vecs.append(vt)
        assert off == start + n, n
        dst = np.full(start + n + 192, 0xEE, np.uint8)
        off = start
        for j, vt in enumerate(vecs):
            signed = (vt.astype(np.int64) - 128).astype(np.uint8)             # IVP_SUB2NX8U(v, 128)
            off = ivp.sav2nx8_xp(dst, signed, off, n - 64 * j)
        assert off == start + n, n
        eq(dst[start:start + n], (src[start:].astype(np.int64) - 128).astype(np.uint8))
        assert (dst[:start] == 0xEE).all() and (dst[start + n:] == 0xEE).all(), n


# ===================================================================== (i) the no-rounding pack
@PROP
@given(a=S16_32, b=S16_32)
def test_halide_simd_check_packvrnrnx48(a, b):
    """halide/Halide test/correctness/simd_op_check_xtensa.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a line 274,
    value-checked against Cadence's cstub library: IVP_PACKVRNRNX48 = i16(widening_mul(i16_1, i16_2) >> 4): the
    arithmetic shift of the 48-bit product, no rounding, the low 16 bits (i16() of a wider value wraps)."""
    prod = a.astype(np.int64) * b.astype(np.int64)
    eq(ivp.packvrnrnx48(prod, 4).view(np.int16), wrap(prod >> 4, 16).astype(np.int16))


@PROP
@given(x=arrays(np.int32, 32))
def test_halide_simd_check_narrow_with_shift(x):
    """halide/Halide test/correctness/simd_op_check_xtensa.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a line 279
    with src/CodeGen_Xtensa_vectors.template.cpp 2395-2398: i16(i32_1 / 4) = IVP_PACKVRNRNX48(IVP_CVT48SNX32(hi,
    lo), 2), Halide's division rounding to negative infinity, then wrapping to 16 bits."""
    xs = x.astype(np.int64)
    eq(ivp.packvrnrnx48(xs, 2).view(np.int16), wrap(np.floor_divide(xs, 4), 16).astype(np.int16))


def test_halide_simd_check_packvrnrnx48_edges():
    """halide/Halide test/correctness/simd_op_check_xtensa.cpp @001745e0290e7ecc8dcd9645a60c95b5e259805a line 274
    (as above) on the extreme products: (-32768)^2 = 2^30 -> 2^26 -> low 16 bits 0; -32768 * 32767 >> 4 =
    -67106816 -> 0x0800 = 2048; -1 * 1 >> 4 = -1 (no rounding towards zero)."""
    a = np.array([-32768, -32768, -1, 7, 15, 16, -16, -17] * 4, dtype=np.int16)
    b = np.array([-32768, 32767, 1, 1, 1, 1, 1, 1] * 4, dtype=np.int16)
    prod = a.astype(np.int64) * b.astype(np.int64)
    got = ivp.packvrnrnx48(prod, 4).view(np.int16)
    assert got[:8].tolist() == [0, 2048, -1, 0, 0, 1, -1, -2]
    eq(got, wrap(prod >> 4, 16).astype(np.int16))


# ===================================================================== the file's own rule
def test_every_test_names_its_evidence():
    """Every test here names the public evidence it encodes: a repository and path (or xai_intrin.h), and a commit
    or character range, and lines."""
    tree = ast.parse(pathlib.Path(__file__).read_text())
    tests = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")
             and f.name != "test_every_test_names_its_evidence"]
    assert len(tests) >= 20
    for f in tests:
        doc = ast.get_docstring(f) or ""
        assert re.search(r"halide/Halide|foss-xtensa/tflmlib_vision|xai_intrin\.h", doc), f.name
        assert re.search(r"@[0-9a-f]{40}|chars [\d,]+", doc), f.name
        assert re.search(r"lines?\s+\d|chars \d", doc), f.name
