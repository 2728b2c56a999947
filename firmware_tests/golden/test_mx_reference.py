"""q7emu.golden.mx_reference reference functions: swizzle, dequantize_mx (inverse of golden quantize_mx),
nc_matmul_mx."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from q7emu.errors import InvalidArgument
from q7emu.golden import quantize_mx
from q7emu.golden.mx_reference import dequantize_mx, nc_matmul_mx, swizzle

BF16 = ml_dtypes.bfloat16

# element format: (mantissa bits, min normal exponent, max value)
ELEM = {"float8_e4m3fn": (3, -6, 448.0), "float8_e5m2": (2, -14, 57344.0)}
MAX_EXP = {("ocp", "float8_e4m3fn"): 8, ("ocp", "float8_e5m2"): 15,
           ("alt", "float8_e4m3fn"): 7, ("alt", "float8_e5m2"): 14}


# ---------------------------------------------------------------- swizzle
def test_swizzle_small():
    x = np.arange(16).reshape(8, 2)          # x[r, c] = 2r + c
    # out[i, 4n + k] = x[4i + k, n]
    want = [[0, 2, 4, 6, 1, 3, 5, 7],
            [8, 10, 12, 14, 9, 11, 13, 15]]
    np.testing.assert_array_equal(swizzle(x), want)


def test_swizzle_32x1_blocks_become_8x4():
    # a contiguous [32, 1] column block becomes a contiguous [8, 4] block (one MX block)
    x = np.arange(64 * 3).reshape(64, 3)
    out = swizzle(x)
    assert out.shape == (16, 12)
    for b in range(2):
        for n in range(3):
            np.testing.assert_array_equal(out[8 * b:8 * b + 8, 4 * n:4 * n + 4].ravel(), x[32 * b:32 * b + 32, n])


def test_swizzle_errors():
    with pytest.raises(InvalidArgument):
        swizzle(np.zeros((6, 2)))
    with pytest.raises(InvalidArgument):
        swizzle(np.zeros(8))


# ---------------------------------------------------------------- dequantize_mx known answers
def test_dequantize_mx_known():
    data = np.zeros((32, 1), np.uint32)
    data[0, 0] = 0x00F87078                      # E4M3 0x78 = 256, 0x70 = 128, 0xF8 = -256, 0x00
    data[8, 0] = 0x7F7E3800                      # 0, 0x38 = 1.0, 0x7E = 448, 0x7F = NaN
    scale = np.array([[119], [254], [0xFF], [127]], np.uint8)
    out = dequantize_mx(data, scale)
    assert out.dtype == np.float32 and out.shape == (32, 4)
    # x 2^(119-127) = 2^-8
    np.testing.assert_array_equal(out[0], [1.0, 0.5, -1.0, 0.0])
    # block row 1, scale 254 = 2^127: 1.0 * 2^127; 448 * 2^127 = 1.75 * 2^135 overflows float32 -> inf
    np.testing.assert_array_equal(out[8, :3], [0.0, 2.0 ** 127, np.inf])
    assert np.isnan(out[8, 3])
    assert np.all(np.isnan(out[16:24]))          # scale 0xFF: the whole block is NaN
    assert np.all(out[24:] == 0)


def test_dequantize_mx_scale_ff_clip():
    # scale_ff="clip" (AWS dequantize_mx_golden: exponent 0xFF - 127 = 128 clipped to +127): 0xFF reads 2^127,
    # like 0xFE; the default "nan" (OCP E8M0) makes the whole block NaN
    data = np.zeros((32, 1), np.uint32)
    data[16, 0] = 0x7F7E3830                     # E4M3 0x30 = 0.5, 0x38 = 1.0, 0x7E = 448, 0x7F = NaN
    data[0, 0] = 0x00003800                      # block row 0 (scale 0): 0, 1.0 -> 2^-127
    scale = np.array([[0], [127], [0xFF], [0xFE]], np.uint8)
    clip = dequantize_mx(data, scale, scale_ff="clip")
    # 0.5 * 2^127 = 2^126; 1.0 * 2^127; 448 * 2^127 = 1.75 * 2^135 overflows float32 -> inf; NaN stays NaN
    np.testing.assert_array_equal(clip[16, :3], [2.0 ** 126, 2.0 ** 127, np.inf])
    assert np.isnan(clip[16, 3])
    assert np.all(clip[17:24] == 0)              # zeros x 2^127
    np.testing.assert_array_equal(clip[0], [0.0, 2.0 ** -127, 0.0, 0.0])     # bytes 0..254 as under "nan"
    nan = dequantize_mx(data, scale)
    assert np.all(np.isnan(nan[16:24]))
    np.testing.assert_array_equal(np.delete(nan, np.s_[16:24], 0), np.delete(clip, np.s_[16:24], 0))
    np.testing.assert_array_equal(dequantize_mx(data, scale, scale_ff="nan"), nan, strict=True)


def test_dequantize_mx_scale_ff_after_wrap():
    # underflow=wrap emits 0xFF for a bf16 block with m = max_exp - 1: 2^-120 (field 7), E4M3 ocp:
    #   byte (7 - 8) mod 256 = 255, data 2^-120 / 2^128 -> 0x00 (and -2^-121 -> -0 = 0x80).
    # "nan" reads that block as NaN; "clip" as 2^127 x (+0, -0) = +0, -0
    x = np.zeros((32, 4), np.float64)
    x[0, :2] = [2.0 ** -120, -(2.0 ** -121)]
    data, scale = quantize_mx(x.astype(BF16), underflow="wrap")
    assert scale[0, 0] == 0xFF and data[0, 0] == 0x00008000
    assert np.all(np.isnan(dequantize_mx(data, scale)[:8]))
    out = dequantize_mx(data, scale, scale_ff="clip")
    assert np.all(out[:8] == 0) and np.signbit(out[0, 1]) and not np.signbit(out[0, 0])
    # unwrapped-data stores the same 0xFF but divides by the true 2^(-1-127): 2^-120 -> 2^8 (0x78), so
    # "clip" gives 2^8 * 2^127 = 2^135: beyond float32 -> inf
    data, scale = quantize_mx(x.astype(BF16), underflow="unwrapped-data")
    assert scale[0, 0] == 0xFF and data[0, 0] & 0xFF == 0x78
    assert dequantize_mx(data, scale, scale_ff="clip")[0, 0] == np.inf


def test_dequantize_mx_e5m2_fp4_and_scatter():
    # E5M2: 0x7C = +inf, 0x3C = 1.0, 0xB8 = -0.5, 0x01 = 2^-16; scale 0 = 2^-127
    data = np.zeros((64, 1), np.uint32)
    data[0, 0] = 0x01B83C7C
    data[40, 0] = 0x00003C00
    scale = np.zeros((64, 1), np.uint8)
    scale[0, 0] = 0          # compact row 0 -> partition 0
    scale[33, 0] = 128       # compact row 5 (partitions 40..47) -> partition 32 + 1 = 33
    out = dequantize_mx(data, scale, "float8_e5m2")
    np.testing.assert_array_equal(out[0], [np.inf, 2.0 ** -127, -(2.0 ** -128), 2.0 ** -143])
    np.testing.assert_array_equal(out[40], [0.0, 2.0, 0.0, 0.0])
    # FP4 x4 in uint16, element k in nibble k: 0x7F21 -> 1 (0.5), 2 (1.0), F (-6), 7 (6); x2
    d4 = np.zeros((32, 1), np.uint16)
    d4[0, 0] = 0x7F21
    s4 = np.full((4, 1), 128, np.uint8)
    np.testing.assert_array_equal(dequantize_mx(d4, s4, "float4_e2m1fn_x4")[0], [1.0, 2.0, -12.0, 12.0])


def test_dequantize_mx_errors():
    d = np.zeros((32, 2), np.uint32)
    s = np.zeros((4, 2), np.uint8)
    for call in [lambda: dequantize_mx(d, s, "float8_e4m3"),
                 lambda: dequantize_mx(d.astype(np.uint16), s),
                 lambda: dequantize_mx(np.zeros((16, 2), np.uint32), s),
                 lambda: dequantize_mx(d, np.zeros((5, 2), np.uint8)),
                 lambda: dequantize_mx(d, np.zeros((4, 3), np.uint8)),
                 lambda: dequantize_mx(d, s.astype(np.int8)),
                 lambda: dequantize_mx(d, s, scale_layout="scatter"),
                 lambda: dequantize_mx(d, s, scale_layout="diagonal")]:
        with pytest.raises(InvalidArgument):
            call()
    for bad in ("NaN", "saturate", None, 255):
        with pytest.raises(InvalidArgument, match="scale_ff"):
            dequantize_mx(d, s, scale_ff=bad)


# ---------------------------------------------------------------- round trip with golden quantize_mx
@st.composite
def mx_inputs(draw):
    p = draw(st.sampled_from([32, 64, 96, 128]))
    f = 4 * draw(st.integers(1, 6))
    kind = draw(st.sampled_from(["float16", "bfloat16"]))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    spread = draw(st.integers(0, 40 if kind == "bfloat16" else 12))
    # bf16 centres reach 2^-125, where block maxima fall below max_exp (wrap / clamp differ)
    center = draw(st.integers(-125, 100)) if kind == "bfloat16" else 0
    rng = np.random.default_rng(seed)
    mag = np.exp2(center + rng.uniform(-spread, spread, size=(p, f))) * rng.uniform(1, 2, size=(p, f))
    x = mag * rng.choice([-1.0, 1.0], size=(p, f))
    x[rng.random((p, f)) < 0.1] = 0.0
    dt = np.float16 if kind == "float16" else BF16
    with np.errstate(over="ignore"):
        x = x.astype(dt)
    x[~np.isfinite(x.astype(np.float32))] = 0
    return x


@settings(max_examples=80, deadline=None)
@given(x=mx_inputs(), dst=st.sampled_from(["float8_e4m3fn", "float8_e5m2"]),
       emax=st.sampled_from(["ocp", "alt"]), underflow=st.sampled_from(["wrap", "clamp"]))
def test_dequantize_inverts_quantize(x, dst, emax, underflow):
    """|deq - x| <= 2^-(mbits+1) |x| + 2^(emin - mbits - 1) * S  (half an ulp, relative for normals,
    absolute half the min subnormal times the block scale S), where x / S <= max_val; elements whose
    x / S exceeds max_val dequantize to exactly ±max_val * S (saturation); with ``wrap`` a block whose
    max exponent is below max_exp gets a huge scale and dequantizes to zero, or to NaN when the wrapped
    scale byte is 0xFF (E8M0 NaN); near the top of fp32 a value can round up to 2^128 and become inf."""
    data, scale = quantize_mx(x, dst, emax=emax, underflow=underflow)
    deq = dequantize_mx(data, scale, dst).astype(np.float64)
    p, f = x.shape
    x64 = x.astype(np.float32).astype(np.float64)
    # block scale from the spec's rule, computed here independently
    e = (x.astype(np.float32).view(np.uint32) >> 23) & 0xFF
    m = e.reshape(p // 8, 8, f // 4, 4).max(axis=(1, 3)).astype(np.int64)
    me = MAX_EXP[(emax, dst)]
    s = (m - me) % 256 if underflow == "wrap" else np.maximum(m - me, 0)
    S = np.exp2(np.repeat(np.repeat(s, 8, 0), 4, 1) - 127.0)
    mbits, emin, vmax = ELEM[dst]
    q = np.abs(x64) / S
    sat = q > vmax
    np.testing.assert_array_equal(deq[sat], np.sign(x64[sat]) * vmax * S[sat])
    bound = 2.0 ** -(mbits + 1) * np.abs(x64) + 2.0 ** (emin - mbits - 1) * S
    # a wrapped scale can be 0xFF (e.g. e5m2, ocp: block max exponent field 14 -> 14 - 15 = 255), which E8M0
    # decodes as NaN: the whole block dequantizes to NaN
    nan_blk = np.repeat(np.repeat(s == 255, 8, 0), 4, 1)
    assert np.all(np.isnan(deq[nan_blk]))
    # near the top of fp32 an element can round up to 2^128 (e.g. q = 251 -> 256 with S = 2^120): the
    # float32 result of dequantize_mx is then ±inf (documented); such elements are real overflows
    ovf = np.isinf(deq) & ~nan_blk
    assert np.all(np.abs(x64[ovf]) + bound[ovf] >= np.finfo(np.float32).max)
    ok = ~sat & ~ovf & ~nan_blk
    assert np.all(np.abs(deq - x64)[ok] <= bound[ok])
    # the sign survives everything, including underflow to zero (signed zero); NaN blocks carry no sign
    np.testing.assert_array_equal(np.signbit(deq[~nan_blk]), np.signbit(x64[~nan_blk]))


def test_roundtrip_exact_values():
    x = np.zeros((32, 4), np.float16)
    x[0] = [1.0, 0.5, -1.0, 0.375]
    x[1] = [-0.0, 2.0 ** -10, 1.75, -0.125]
    data, scale = quantize_mx(x, emax="alt")
    out = dequantize_mx(data, scale)
    np.testing.assert_array_equal(out, x.astype(np.float32))
    assert np.signbit(out[1, 0])


# ---------------------------------------------------------------- nc_matmul_mx
def _fp8_word(b: int) -> int:
    return b | b << 8 | b << 16 | b << 24


def test_matmul_hand():
    # every element 1.0 (E4M3 0x38), scale 127 (x1): each output sums K = 32 * 4 = 128 ones
    st_ = np.full((32, 2), _fp8_word(0x38), np.uint32)
    mv = np.full((32, 1), _fp8_word(0x38), np.uint32)
    s_st = np.full((4, 2), 127, np.uint8)
    s_mv = np.full((4, 1), 127, np.uint8)
    np.testing.assert_array_equal(nc_matmul_mx(st_, mv, s_st, s_mv), [[128.0], [128.0]])
    # moving block row 0 (partitions 0..7) at x2: 8 * 4 * 2 + 24 * 4 * 1 = 64 + 96 = 160
    s_mv[0, 0] = 128
    np.testing.assert_array_equal(nc_matmul_mx(st_, mv, s_st, s_mv), [[160.0], [160.0]])
    # the same with scattered scales ([32, free], rows 0..3)
    sc_st = np.zeros((32, 2), np.uint8)
    sc_st[:4] = s_st
    sc_mv = np.zeros((32, 1), np.uint8)
    sc_mv[:4] = s_mv
    np.testing.assert_array_equal(nc_matmul_mx(st_, mv, sc_st, sc_mv), [[160.0], [160.0]])
    # bf16 dst: 160 is exact in bf16
    out = nc_matmul_mx(st_, mv, s_st, s_mv, dst_dtype="bfloat16")
    assert out.dtype == BF16 and np.all(out.astype(np.float32) == 160.0)
    # FP4 moving (uint16, nibble 0x2 = 1.0 in every lane) mixed with FP8 stationary
    mv4 = np.full((32, 1), 0x2222, np.uint16)
    np.testing.assert_array_equal(
        nc_matmul_mx(st_, mv4, s_st, s_mv, in_dtype=("float8_e4m3fn", "float4_e2m1fn")), [[160.0], [160.0]])


def _random_operand(rng, kp, n, elem):
    if elem == "float4_e2m1fn":
        data = rng.integers(0, 1 << 16, size=(kp, n)).astype(np.uint16)
    else:
        b = rng.integers(0, 256, size=(kp, n, 4)).astype(np.uint8)
        nan = (b & 0x7F) == 0x7F if elem == "float8_e4m3fn" else (b & 0x7C) == 0x7C   # no NaN / Inf codes
        b[nan] = 0x10
        data = (b[..., 0].astype(np.uint32) | b[..., 1].astype(np.uint32) << 8 |
                b[..., 2].astype(np.uint32) << 16 | b[..., 3].astype(np.uint32) << 24)
    scale = rng.integers(112, 142, size=(kp // 8, n)).astype(np.uint8)
    return data, scale


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), kp=st.sampled_from([32, 64, 96, 128]),
       m=st.sampled_from([2, 4, 10, 128]), n=st.sampled_from([1, 3, 17, 64]),
       st_e=st.sampled_from(["float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"]),
       mv_e=st.sampled_from(["float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"]))
def test_matmul_vs_float64_einsum(seed, kp, m, n, st_e, mv_e):
    """Tolerance: the reference sums exact products in float64 and rounds once to float32, so
    |out - exact| <= 2^-24 |exact| + K * 2^-53 * sum|a b|. (Device fp32 accumulation in any order is
    bounded by K * 2^-23 * sum|a b|; the reference meets that bound a fortiori.)"""
    rng = np.random.default_rng(seed)
    a, sa = _random_operand(rng, kp, m, st_e)
    b, sb = _random_operand(rng, kp, n, mv_e)
    out = nc_matmul_mx(a, b, sa, sb, in_dtype=(st_e, mv_e))
    assert out.dtype == np.float32 and out.shape == (m, n)
    da = dequantize_mx(a, sa, st_e).astype(np.float64).reshape(kp, m, 4)
    db = dequantize_mx(b, sb, mv_e).astype(np.float64).reshape(kp, n, 4)
    exact = np.einsum("pmk,pnk->mn", da, db)
    absum = np.einsum("pmk,pnk->mn", np.abs(da), np.abs(db))
    k = 4 * kp
    err = np.abs(out.astype(np.float64) - exact)
    assert np.all(err <= 2.0 ** -24 * np.abs(exact) + k * 2.0 ** -53 * absum)
    assert np.all(err <= k * 2.0 ** -23 * absum)
    # bf16 dst = RNE of the fp32 result (ml_dtypes): 8 significant bits, relative error <= 2^-8 on top
    ob = nc_matmul_mx(a, b, sa, sb, in_dtype=(st_e, mv_e), dst_dtype="bfloat16")
    np.testing.assert_array_equal(ob.astype(np.float32), out.astype(BF16).astype(np.float32))
    assert np.all(np.abs(ob.astype(np.float64) - out) <= 2.0 ** -8 * np.abs(out))


def test_matmul_pipeline_layout():
    """swizzle -> quantize_mx -> nc_matmul_mx computes A^T B over K = 4 * K_P: packed word (p, m)
    lane k holds A[4p + k, m]."""
    rng = np.random.default_rng(7)
    K, M, N = 128, 6, 5
    A = rng.standard_normal((K, M)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    qa, sa = quantize_mx(swizzle(A), emax="alt")           # [K/4, M] data, P = 32 -> compact scales
    qb, sb = quantize_mx(swizzle(B), emax="alt")
    out = nc_matmul_mx(qa, qb, sa, sb)
    # unswizzle the dequantized operands: deq[p, 4m + k] = A'[4p + k, m]
    Ad = dequantize_mx(qa, sa).astype(np.float64).reshape(K // 4, M, 4).transpose(0, 2, 1).reshape(K, M)
    Bd = dequantize_mx(qb, sb).astype(np.float64).reshape(K // 4, N, 4).transpose(0, 2, 1).reshape(K, N)
    exact = Ad.T @ Bd
    np.testing.assert_allclose(out, exact, rtol=2.0 ** -22, atol=1e-6)
    # and it approximates the unquantized product (E4M3 relative error 2^-4 per element)
    full = A.astype(np.float64).T @ B.astype(np.float64)
    bound = 2 * 2.0 ** -4 * (np.abs(A.astype(np.float64)).T @ np.abs(B.astype(np.float64))) + 1e-3
    assert np.all(np.abs(out - full) <= bound)


def test_matmul_nan_scale_propagates():
    a = np.full((32, 2), _fp8_word(0x38), np.uint32)
    sa = np.full((4, 2), 127, np.uint8)
    sa[2, 1] = 0xFF
    out = nc_matmul_mx(a, a[:, :1], sa, sa[:, :1])
    assert out[0, 0] == 128.0 and np.isnan(out[1, 0])


S32 = np.zeros((32, 2), np.uint32)
SC = np.zeros((4, 2), np.uint8)


@pytest.mark.parametrize("call", [
    lambda: nc_matmul_mx(S32, np.zeros((64, 2), np.uint32), SC, np.zeros((8, 2), np.uint8)),   # K_P mismatch
    lambda: nc_matmul_mx(np.zeros((16, 2), np.uint32), np.zeros((16, 2), np.uint32), SC[:2], SC[:2]),
    lambda: nc_matmul_mx(np.zeros((160, 2), np.uint32), np.zeros((160, 2), np.uint32),
                         np.zeros((20, 2), np.uint8), np.zeros((20, 2), np.uint8)),
    lambda: nc_matmul_mx(np.zeros((32, 3), np.uint32), S32, np.zeros((4, 3), np.uint8), SC),         # M odd
    lambda: nc_matmul_mx(np.zeros((32, 130), np.uint32), S32, np.zeros((4, 130), np.uint8), SC),     # M > 128
    lambda: nc_matmul_mx(S32, np.zeros((32, 513), np.uint32), SC, np.zeros((4, 513), np.uint8)),     # N > 512
    lambda: nc_matmul_mx(S32, np.zeros((32, 1025), np.uint32), SC, np.zeros((4, 1025), np.uint8),
                         dst_dtype="bfloat16"),
    lambda: nc_matmul_mx(S32, S32.astype(np.uint16), SC, SC),            # FP8 data must be uint32
    lambda: nc_matmul_mx(S32, S32, SC, SC, in_dtype="float8_e4m3"),
    lambda: nc_matmul_mx(S32, S32, SC, SC, in_dtype=("float8_e5m2",)),
    lambda: nc_matmul_mx(S32, S32, SC, SC, dst_dtype="float16"),
    lambda: nc_matmul_mx(S32, S32, np.zeros((8, 2), np.uint8), SC),      # scale rows neither 4 nor 32
    lambda: nc_matmul_mx(S32, S32, SC.astype(np.int32), SC),
    lambda: nc_matmul_mx(S32, S32, SC, np.zeros((4, 3), np.uint8)),
    lambda: nc_matmul_mx(S32.tolist(), S32, SC, SC),
    lambda: nc_matmul_mx(S32[0], S32, SC, SC),
])
def test_matmul_contract(call):
    with pytest.raises(InvalidArgument):
        call()


def test_matmul_limits_accepted():
    # N = 1024 is fine with bf16 dst, N = 512 with fp32; M = 128
    s = np.zeros((32, 1024), np.uint32)
    out = nc_matmul_mx(np.zeros((32, 128), np.uint32), s, np.zeros((4, 128), np.uint8),
                       np.zeros((4, 1024), np.uint8), dst_dtype="bfloat16")
    assert out.shape == (128, 1024)
    assert nc_matmul_mx(S32, s[:, :512], SC, np.zeros((4, 512), np.uint8)).shape == (2, 512)
