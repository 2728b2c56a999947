"""q7emu.golden.formats: exhaustive round trips, ml_dtypes cross-checks and hand-computed known answers."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from q7emu.errors import InvalidArgument
from q7emu.golden import formats as F

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")

ALL4 = np.arange(16, dtype=np.uint8)
ALL6 = np.arange(64, dtype=np.uint8)
ALL8 = np.arange(256, dtype=np.uint8)
ALL16 = np.arange(65536, dtype=np.uint32).astype(np.uint16)

FP16_ALL = ALL16.view(np.float16)
BF16_ALL = ALL16.view(ml_dtypes.bfloat16)


def _same(a: np.ndarray, b: np.ndarray) -> None:
    """Equal values, NaN == NaN, and equal signs of zero."""
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


# ---------------------------------------------------------------- round trips over every code
@pytest.mark.parametrize("dec,enc,codes", [
    (F.decode_fp4, F.encode_fp4, ALL4),
    (F.decode_int4, F.encode_int4, ALL4),
    (F.decode_nf4, F.encode_nf4, ALL4),
    (F.decode_fp6, F.encode_fp6, ALL6),
])
def test_roundtrip_small(dec, enc, codes):
    np.testing.assert_array_equal(enc(dec(codes)), codes)


def test_roundtrip_e4m3():
    got = F.encode_e4m3(F.decode_e4m3(ALL8))
    want = ALL8.copy()
    want[[0x7F, 0xFF]] = 0x7F          # both NaN codes -> canonical positive 0x7F
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(F.encode_e4m3(F.decode_e4m3(ALL8), saturate=False), want)


def test_roundtrip_e5m2():
    want = ALL8.copy()
    want[[0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF]] = 0x7E      # NaN codes -> canonical 0x7E
    # saturate=False keeps the infinities
    np.testing.assert_array_equal(F.encode_e5m2(F.decode_e5m2(ALL8), saturate=False), want)
    # saturate=True turns +-Inf (0x7C / 0xFC) into +-57344 (0x7B / 0xFB)
    want_sat = want.copy()
    want_sat[0x7C], want_sat[0xFC] = 0x7B, 0xFB
    np.testing.assert_array_equal(F.encode_e5m2(F.decode_e5m2(ALL8)), want_sat)


def test_roundtrip_e8m0():
    v = F.decode_e8m0(ALL8)
    assert v.dtype == np.float64
    np.testing.assert_array_equal(F.encode_e8m0(v), ALL8)        # NaN -> 0xFF
    assert v[0] == 2.0 ** -127 and v[127] == 1.0 and v[254] == 2.0 ** 127 and np.isnan(v[255])


def test_roundtrip_fp16_bf16_bits():
    h = F.encode_fp16(F.decode_fp16(ALL16))
    nan16 = np.isnan(FP16_ALL)
    np.testing.assert_array_equal(h[~nan16], ALL16[~nan16])
    assert np.all(np.isnan(h[nan16].view(np.float16)))      # numpy quiets signalling NaNs
    b = F.encode_bf16(F.decode_bf16(ALL16))
    nan = np.isnan(F.decode_bf16(ALL16))
    np.testing.assert_array_equal(b[~nan], ALL16[~nan])
    # NaN -> quiet 0x7FC0 keeping the sign
    np.testing.assert_array_equal(b[nan], np.where(ALL16[nan] & 0x8000, 0xFFC0, 0x7FC0))


# ---------------------------------------------------------------- decoders vs ml_dtypes
@pytest.mark.parametrize("dec,mltype,codes", [
    (F.decode_fp4, ml_dtypes.float4_e2m1fn, ALL4),
    (F.decode_fp6, ml_dtypes.float6_e2m3fn, ALL6),
    (F.decode_e4m3, ml_dtypes.float8_e4m3fn, ALL8),
    (F.decode_e5m2, ml_dtypes.float8_e5m2, ALL8),
    (F.decode_int4, ml_dtypes.int4, ALL4),
])
def test_decode_matches_ml_dtypes(dec, mltype, codes):
    got = dec(codes)
    assert got.dtype == np.float32
    _same(got, codes.view(mltype).astype(np.float32))


def test_decode_e8m0_matches_ml_dtypes():
    _same(F.decode_e8m0(ALL8), ALL8.view(ml_dtypes.float8_e8m0fnu).astype(np.float64))


def test_decode_fp16_bf16_match():
    _same(F.decode_fp16(ALL16), FP16_ALL.astype(np.float32))
    _same(F.decode_bf16(ALL16), BF16_ALL.astype(np.float32))


# ---------------------------------------------------------------- encoders vs ml_dtypes on all fp16 / bf16
# (encoder, ml_dtypes type, the NaN code q7emu writes, |x| below which saturation changes nothing (E4M3: 464
# included; no fp16 or bf16 value lies in 464..464.1), +max code)
FP8_ENCODERS = [(F.encode_e4m3, ml_dtypes.float8_e4m3fn, 0x7F, 464.1, 0x7E),
                (F.encode_e5m2, ml_dtypes.float8_e5m2, 0x7E, 61440, 0x7B)]


@pytest.mark.parametrize("src", [FP16_ALL, BF16_ALL], ids=["fp16", "bf16"])
@pytest.mark.parametrize("enc,mltype,nan_code,bound,max_code", FP8_ENCODERS, ids=["e4m3", "e5m2"])
def test_encode_fp8_vs_ml_dtypes(src, enc, mltype, nan_code, bound, max_code):
    x = src.astype(np.float32)
    ml = x.astype(mltype).view(np.uint8)
    nan_in = np.isnan(x)
    # saturate=False equals ml_dtypes everywhere except the sign of NaN inputs (q7emu writes nan_code)
    got = enc(src, saturate=False)
    np.testing.assert_array_equal(got[~nan_in], ml[~nan_in])
    assert np.all(got[nan_in] == nan_code)
    # saturate=True equals ml_dtypes wherever ml_dtypes does not overflow, and writes +-max beyond
    sat = enc(src)
    ok = ~nan_in & (np.abs(x) < bound)
    np.testing.assert_array_equal(sat[ok], ml[ok])
    big = ~nan_in & ~ok
    assert big.any()
    np.testing.assert_array_equal(sat[big], np.where(np.signbit(x[big]), 0x80 | max_code, max_code))


@pytest.mark.parametrize("src", [FP16_ALL, BF16_ALL], ids=["fp16", "bf16"])
@pytest.mark.parametrize("enc,mltype", [(F.encode_fp4, ml_dtypes.float4_e2m1fn),
                                        (F.encode_fp6, ml_dtypes.float6_e2m3fn)])
def test_encode_fp4_fp6_vs_ml_dtypes(src, enc, mltype):
    x = src.astype(np.float32)
    fin = ~np.isnan(x)                        # ml_dtypes maps NaN to -0 (quirk); we reject NaN
    ml = x[fin].astype(mltype).view(np.uint8)
    np.testing.assert_array_equal(enc(src[fin]), ml)
    with pytest.raises(InvalidArgument):
        enc(np.array([np.nan]))


@pytest.mark.parametrize("src", [FP16_ALL, BF16_ALL], ids=["fp16", "bf16"])
def test_encode_e8m0_vs_ml_dtypes(src):
    x = src.astype(np.float32)
    ml = x.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
    # compare on positive finite float32-normal values (ml_dtypes: ties up; 0/neg/NaN -> 0xFF as ours).
    # For float32 subnormals ml_dtypes rounds [2^-127, 1.5*2^-127) up to 0x01: see test_encode_e8m0_known.
    ok = (x >= 2.0 ** -126) & np.isfinite(x)
    np.testing.assert_array_equal(F.encode_e8m0(src[ok], saturate=False), ml[ok])
    bad = ~(x > 0) | np.isnan(x)
    assert np.all(F.encode_e8m0(src[bad]) == 0xFF)


def test_encode_e8m0_known():
    # powers of two: exponent + 127
    np.testing.assert_array_equal(F.encode_e8m0([1.0, 2.0, 0.5, 2.0 ** -127, 2.0 ** 127]), [127, 128, 126, 0, 254])
    # 1.5 is the linear midpoint of 1 and 2 -> ties up to 2 (128); 1.49 -> 1 (127); 3 -> 4 (129)
    np.testing.assert_array_equal(F.encode_e8m0([1.5, 1.49, 3.0]), [128, 127, 129])
    # beyond 2^127: saturate -> 0xFE, otherwise NaN 0xFF; tiny -> 0x00
    np.testing.assert_array_equal(F.encode_e8m0([2.0 ** 128, np.inf, 2.0 ** -140]), [254, 254, 0])
    np.testing.assert_array_equal(F.encode_e8m0([2.0 ** 128, np.inf], saturate=False), [255, 255])
    # below 2^-126: 1.2 * 2^-127 is nearer 2^-127 (0x00) than 2^-126; 1.5 * 2^-127 ties up to 0x01;
    # 0.7 * 2^-127 clamps to 0x00
    np.testing.assert_array_equal(F.encode_e8m0([1.2 * 2.0 ** -127, 1.5 * 2.0 ** -127, 0.7 * 2.0 ** -127]),
                                  [0, 1, 0])


def test_encode_fp16_bf16_single_rounding():
    # bf16 has 8 significant bits: 1 + 2^-8 is the midpoint of 1.0 (0x3F80) and 1 + 2^-7 (0x3F81);
    # exactly the midpoint -> even 0x3F80; a hair above (2^-40, lost if rounded via float32 RNE
    # first) -> 0x3F81.
    np.testing.assert_array_equal(F.encode_bf16([1 + 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -40]), [0x3F80, 0x3F81])
    # bf16 max 0x7F7F = (2 - 2^-7) * 2^127; overflow midpoint (2 - 2^-8) * 2^127 -> Inf 0x7F80
    np.testing.assert_array_equal(F.encode_bf16([(2 - 2.0 ** -7) * 2.0 ** 127, (2 - 2.0 ** -8) * 2.0 ** 127,
                                                 -1e-300]), [0x7F7F, 0x7F80, 0x8000])
    # fp16: 1 + 2^-11 is the midpoint of 1.0 (0x3C00) and 1 + 2^-10 (0x3C01)
    np.testing.assert_array_equal(F.encode_fp16([1 + 2.0 ** -11, 1 + 2.0 ** -11 + 2.0 ** -40]), [0x3C00, 0x3C01])


# ---------------------------------------------------------------- hand-computed known answers
def test_known_answers_cross_format():
    # FP4 0x7 = e 3, m 1 -> 1.5 * 2^(3-1) = 6.0 = 1.5 * 2^2 -> E5M2 exp 2+15 = 17 = 10001b, mant 10b
    #   -> 0 10001 10 = 0x46
    assert F.decode_fp4(np.uint8(7)) == 6.0
    assert F.encode_e5m2(F.decode_fp4(np.array([7], np.uint8)))[0] == 0x46
    # INT4 0x8 = -8 = -1.0 * 2^3 -> exp 18 = 10010b, mant 00 -> 1 10010 00 = 0xC8
    assert F.encode_e5m2(F.decode_int4(np.array([8], np.uint8)))[0] == 0xC8
    # NF4 code 1 = -0.6961928: in [0.5, 1) -> E4M3 exp -1 + 7 = 6, step 2^-4 = 0.0625,
    #   0.6961928 / 0.0625 = 11.14 -> 11 -> 0.6875 = 1.375 * 2^-1, mant 011 -> 1 0110 011 = 0xB3
    assert F.encode_e4m3(F.decode_nf4(np.array([1], np.uint8)))[0] == 0xB3
    # FP6 0x01 = subnormal m=1: 1 * 2^(1-1-3) = 0.125 = 2^-3 -> E4M3 exp -3+7 = 4 -> 0 0100 000 = 0x20
    assert F.decode_fp6(np.uint8(1)) == 0.125
    assert F.encode_e4m3(F.decode_fp6(np.array([1], np.uint8)))[0] == 0x20


def test_nf4_table_to_e4m3():
    # docs/model.md §1: the qlora table with scale 1 rounds to these E4M3 bytes, e.g.
    # -0.39491749: exp -2 (bias -> 5), step 2^-5: 0.39491749 / 0.03125 = 12.64 -> 13 -> 1.625*2^-2, mant 101
    #   -> 1 0101 101 = 0xAD;  0.07958030: exp -4 (-> 3), step 2^-7: 10.19 -> 10 -> 1.25*2^-4 -> 0 0011 010 = 0x1A
    want = [0xB8, 0xB3, 0xB0, 0xAD, 0xA9, 0xA4, 0x9C, 0x00, 0x1A, 0x22, 0x28, 0x2B, 0x2E, 0x31, 0x34, 0x38]
    np.testing.assert_array_equal(F.encode_e4m3(F.decode_nf4(ALL4)), want)
    assert F.NF4_QLORA.dtype == np.float32 and F.NF4_QLORA.shape == (16,)
    assert F.NF4_QLORA[7] == 0.0 and F.NF4_QLORA[0] == -1.0 and F.NF4_QLORA[15] == 1.0


def test_e4m3_saturation_and_nan():
    # 448 = 1.75 * 2^8 = 0 1111 110 = 0x7E (0x7F is NaN). 464 is the midpoint of 448 and the
    # (missing) 480 step: ties to even (0x7E). Saturation: 465, Inf -> 0x7E; -Inf -> 0xFE.
    got = F.encode_e4m3([448.0, 464.0, 465.0, np.inf, -np.inf, -1e30, np.nan, -np.nan])
    np.testing.assert_array_equal(got, [0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0xFE, 0x7F, 0x7F])
    nosat = F.encode_e4m3([464.0, 465.0, -465.0, np.inf], saturate=False)
    np.testing.assert_array_equal(nosat, [0x7E, 0x7F, 0xFF, 0x7F])


def test_e5m2_saturation_and_nan():
    # 57344 = 1.75 * 2^15 = 0 11110 11 = 0x7B; 61440 = 1.875 * 2^15 is the midpoint to 2^16 (Inf 0x7C,
    # even) -> with saturation 0x7B, without 0x7C. 61439 < midpoint -> 0x7B.
    np.testing.assert_array_equal(F.encode_e5m2([61440.0, 61439.0, np.nan, -np.inf, -61440.0]),
                                  [0x7B, 0x7B, 0x7E, 0xFB, 0xFB])
    np.testing.assert_array_equal(F.encode_e5m2([61440.0, 61439.0, -np.inf], saturate=False),
                                  [0x7C, 0x7B, 0xFC])


def test_rne_and_signed_zero():
    # E4M3 near 1: step 2^-3. 1.0625 = midpoint of 1.0 (0x38) and 1.125 (0x39) -> even 0x38;
    # 1.1875 = midpoint of 1.125 and 1.25 (0x3A) -> 0x3A; 1.0625 + 2^-40 -> 0x39 (rounded once
    # from float64: a float32 step would have made it the exact tie).
    np.testing.assert_array_equal(F.encode_e4m3([1.0625, 1.1875, 1.0625 + 2.0 ** -40]), [0x38, 0x3A, 0x39])
    # E4M3 subnormals: step 2^-9. 2^-10 is the midpoint of 0 and 2^-9 -> 0 (even);
    # 3 * 2^-10 = midpoint of 2^-9 (0x01) and 2^-8 (0x02) -> 0x02; -2^-11 -> -0 = 0x80
    np.testing.assert_array_equal(F.encode_e4m3([2.0 ** -10, 3 * 2.0 ** -10, -(2.0 ** -11), -0.0]),
                                  [0x00, 0x02, 0x80, 0x80])
    # E5M2 near 1: step 2^-2. 1.125 -> 1.0 (0x3C), 1.375 -> 1.5 (0x3E), -2^-18 -> 0x80
    np.testing.assert_array_equal(F.encode_e5m2([1.125, 1.375, -(2.0 ** -18)]), [0x3C, 0x3E, 0x80])
    # FP4: 0.25 -> 0 (even), 0.75 -> 1.0 (code 2), 2.5 -> 2 (code 4), 5 -> 4 (code 6), -0 -> 0x8, 7 -> 6 (0x7)
    np.testing.assert_array_equal(F.encode_fp4([0.25, 0.75, 2.5, 5.0, -0.0, 7.0, -100.0]),
                                  [0x0, 0x2, 0x4, 0x6, 0x8, 0x7, 0xF])
    # INT4: RNE then saturate: 2.5 -> 2, 3.5 -> 4, -0.5 -> 0, 100 -> 7, -8.6 -> -8 (0x8), -1 -> 0xF
    np.testing.assert_array_equal(F.encode_int4([2.5, 3.5, -0.5, 100.0, -8.6, -1.0]), [2, 4, 0, 7, 8, 15])
    # NF4: nearest entry; both zeros -> 7; +-2 saturate to 15 / 0
    np.testing.assert_array_equal(F.encode_nf4([0.0, -0.0, 2.0, -2.0, 0.5]), [7, 7, 15, 0, 12])


def test_invalid_codes_and_types():
    with pytest.raises(InvalidArgument):
        F.decode_fp4(np.array([16], np.uint8))
    with pytest.raises(InvalidArgument):
        F.decode_fp6(np.array([64], np.uint8))
    with pytest.raises(InvalidArgument):
        F.decode_e4m3(np.array([1.0]))
    with pytest.raises(InvalidArgument):
        F.encode_e4m3(np.array(["a"]))
    for enc in (F.encode_int4, F.encode_nf4):
        with pytest.raises(InvalidArgument):
            enc([np.nan])
