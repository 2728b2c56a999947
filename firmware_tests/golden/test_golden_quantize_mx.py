"""Golden QuantizeMX (q7emu.golden.quantize_mx): hand-computed scales / codes, layouts, contract.

Expected bytes are derived by hand (arithmetic in comments), never copied from the code's output.
Reminder: fp32 biased exponent e(1.0) = 127; scale = m - max_exp (ocp: 8 E4M3 / 15 E5M2;
alt: 7 / 14); q = x / 2^(scale - 127).
"""
from __future__ import annotations

import importlib
import warnings

import ml_dtypes
import numpy as np
import pytest

from q7emu.errors import InvalidArgument
from q7emu.golden import quantize_mx

BF16 = ml_dtypes.bfloat16


def block(values, dtype=np.float16, p: int = 32, f: int = 4) -> np.ndarray:
    """[p, f] tile whose first 8x4 block (partitions 0..7, columns 0..3) holds ``values``
    in row-major order (missing entries 0), everything else 0."""
    x = np.zeros((p, f), dtype=np.float64)
    v = np.asarray(values, dtype=np.float64).ravel()
    x[:8, :4].flat[:v.size] = v
    return x.astype(dtype)


def codes_of(data: np.ndarray, p: int, j: int) -> list[int]:
    """The 4 FP8 bytes of data[p, j] (element 4j+k in byte k)."""
    w = int(data[p, j])
    return [(w >> (8 * k)) & 0xFF for k in range(4)]


# ---------------------------------------------------------------- E4M3, ocp / alt
def test_e4m3_ocp_block_max_one():
    # max 1.0: e = 127 -> scale 127 - 8 = 119; q = x * 2^8.
    # 1.0 -> 256 = 2^8 -> exp 8+7 = 15 -> 0 1111 000 = 0x78; 0.5 -> 128 -> exp 14 -> 0x70;
    # -1.0 -> 0xF8; 0 -> 0x00
    data, scale = quantize_mx(block([1.0, 0.5, -1.0, 0.0]))
    assert data.dtype == np.uint32 and data.shape == (32, 1)
    assert scale.dtype == np.uint8 and scale.shape == (4, 1)          # auto: P = 32 -> compact
    assert scale[0, 0] == 119 and list(scale[1:, 0]) == [248, 248, 248]   # other blocks all-zero (wrap)
    assert codes_of(data, 0, 0) == [0x78, 0x70, 0xF8, 0x00]
    assert data[0, 0] == 0x00F87078


def test_e4m3_ocp_small_values_and_subnormals():
    # block max 1.0 (scale 119, q = x * 2^8): 2^-14 -> 2^-6 = min normal, exp 1 -> 0x08;
    # 2^-16 -> 2^-8 = 2 * 2^-9 -> subnormal mant 2 -> 0x02; 2^-20 -> 2^-12 < 2^-10 -> 0x00;
    # -2^-20 -> -0 -> 0x80; 3 * 2^-18 -> 3 * 2^-10 = tie between 2^-9 (0x01) and 2^-8 (0x02) -> even 0x02
    data, scale = quantize_mx(block([1.0, 0, 0, 0, 2.0 ** -14, 2.0 ** -16, 2.0 ** -20, -(2.0 ** -20),
                                     3 * 2.0 ** -18]))
    assert scale[0, 0] == 119
    assert codes_of(data, 1, 0) == [0x08, 0x02, 0x00, 0x80]
    assert codes_of(data, 2, 0) == [0x02, 0x00, 0x00, 0x00]


def test_e4m3_ocp_saturation_480():
    # max 480 = 1.875 * 2^8: e = 135 -> scale 127 -> q = x; 480 > 448 -> clip 448 = 0x7E;
    # -480 -> 0xFE; 448 -> 0x7E; 240 = 1.875 * 2^7 -> exp 14, mant 7 -> 0 1110 111 = 0x77
    data, scale = quantize_mx(block([480.0, -480.0, 448.0, 240.0]))
    assert scale[0, 0] == 127
    assert codes_of(data, 0, 0) == [0x7E, 0xFE, 0x7E, 0x77]


def test_e4m3_alt():
    # alt max_exp 7: max 1.0 -> scale 120; q = x * 2^7: 1.0 -> 128 = 2^7 -> exp 14 -> 0x70;
    # 1.75 -> 224 = 1.75 * 2^7 -> 0 1110 110 = 0x76; -0.5 -> -64 = -2^6 -> 1 1101 000 = 0xE8
    data, scale = quantize_mx(block([1.0, 1.75, -0.5, 0.0]), emax="alt")
    # the block's max exponent is e(1.75) = 127 -> scale 120
    assert scale[0, 0] == 120
    assert codes_of(data, 0, 0) == [0x70, 0x76, 0xE8, 0x00]
    # all-zero blocks: wrap (0 - 7) mod 256 = 249
    assert list(scale[1:, 0]) == [249, 249, 249]


def test_all_zero_block_wrap_and_clamp():
    z = np.zeros((32, 4), np.float16)
    # ocp E4M3: 0 - 8 wraps to 248; clamp gives 0. E5M2: 0 - 15 -> 241 / 0.
    assert np.all(quantize_mx(z)[1] == 248)
    assert np.all(quantize_mx(z, underflow="clamp")[1] == 0)
    assert np.all(quantize_mx(z, "float8_e5m2")[1] == 241)
    assert np.all(quantize_mx(z, "float8_e5m2", underflow="clamp")[1] == 0)
    assert np.all(quantize_mx(z)[0] == 0)


def test_tiny_block_wrap_vs_clamp_bf16():
    # bf16 2^-124 has fp32 e = 3. ocp E4M3: wrap (3 - 8) mod 256 = 251 -> q = 2^-124 / 2^124 -> 0x00;
    # clamp: scale 0 -> q = 2^-124 / 2^-127 = 8 = 2^3 -> exp 10 -> 0 1010 000 = 0x50
    x = block([2.0 ** -124], dtype=BF16)
    d, s = quantize_mx(x)
    assert s[0, 0] == 251 and codes_of(d, 0, 0)[0] == 0x00
    d, s = quantize_mx(x, underflow="clamp")
    assert s[0, 0] == 0 and codes_of(d, 0, 0)[0] == 0x50


def test_all_zero_block_true_divisor_values():
    # unclamped-data stores clamp's byte, unwrapped-data wrap's; zeros divide to zero under any divisor
    z = np.zeros((32, 4), np.float16)
    for dst, wrapped in (("float8_e4m3fn", 248), ("float8_e5m2", 241)):
        d, s = quantize_mx(z, dst, underflow="unclamped-data")
        assert np.all(s == 0) and not d.any()
        d, s = quantize_mx(z, dst, underflow="unwrapped-data")
        assert np.all(s == wrapped) and not d.any()


def test_tiny_block_true_divisor_bf16():
    # Issue 16's example: bf16 0x0001 = 2^-7 * 2^-126 = 2^-133, an fp32 subnormal: exponent field m = 0.
    # The "true power of two" is 2^(m - max_exp - 127) -- from the field, so 2^-135 (ocp E4M3), not
    # 2^(floor(log2 2^-133) - 8) = 2^-141.
    x = block(np.full(32, 2.0 ** -133), dtype=BF16)
    assert x.view(np.uint16)[0, 0] == 0x0001
    # ocp (max_exp 8), m - max_exp = -8:
    #   unclamped-data: byte clip(-8, 0, 255) = 0; q = 2^-133 / 2^-135 = 4 = 2^2 -> field 2 + 7 = 9
    #     -> 0 1001 000 = 0x48
    #   clamp: byte 0; q = 2^-133 / 2^-127 = 2^-6 -> field 1 -> 0 0001 000 = 0x08
    d, s = quantize_mx(x, underflow="unclamped-data")
    assert s[0, 0] == 0 and codes_of(d, 0, 0) == [0x48] * 4 and codes_of(d, 7, 0) == [0x48] * 4
    d, s = quantize_mx(x, underflow="clamp")
    assert s[0, 0] == 0 and codes_of(d, 0, 0) == [0x08] * 4
    # alt (max_exp 7), m - max_exp = -7:
    #   unwrapped-data: byte -7 mod 256 = 249; q = 2^-133 / 2^(-7-127) = 2 = 2^1 -> field 8 -> 0x40
    #   wrap: byte 249; q = 2^-133 / 2^(249-127) = 2^-255 -> 0x00
    d, s = quantize_mx(x, emax="alt", underflow="unwrapped-data")
    assert s[0, 0] == 249 and codes_of(d, 0, 0) == [0x40] * 4
    d, s = quantize_mx(x, emax="alt", underflow="wrap")
    assert s[0, 0] == 249 and codes_of(d, 0, 0) == [0x00] * 4
    # a normal bf16 field below max_exp: 2^-124 (field 3), ocp: true divisor 2^(3 - 8 - 127) = 2^-132
    #   -> q = 2^8 = 256 -> field 15 -> 0 1111 000 = 0x78 (bytes 0 / 251 as clamp / wrap)
    y = block([2.0 ** -124, -(2.0 ** -125)], dtype=BF16)
    # -2^-125 -> -2^7 = -128 -> field 14 -> 1 1110 000 = 0xF0
    for uf, byte in (("unclamped-data", 0), ("unwrapped-data", 251)):
        d, s = quantize_mx(y, underflow=uf)
        assert s[0, 0] == byte and codes_of(d, 0, 0) == [0x78, 0xF0, 0x00, 0x00]


def test_true_divisor_changes_nothing_at_or_above_max_exp():
    # block max 1.0 (m = 127 >= 8): every underflow value gives scale 119 and q = x * 2^8 (0x78, 0x70)
    x = block([1.0, 0.5])
    for uf in ("wrap", "clamp", "unclamped-data", "unwrapped-data"):
        d, s = quantize_mx(x, underflow=uf)
        assert s[0, 0] == 119 and codes_of(d, 0, 0)[:2] == [0x78, 0x70]


# ---------------------------------------------------------------- E5M2
def test_e5m2_ocp_and_alt():
    # ocp max_exp 15: max 1.875 (e 127) -> scale 112, q = x * 2^15:
    # 1.0 -> 2^15 -> exp 30 -> 0 11110 00 = 0x78; 1.75 -> 57344 = 0x7B; 1.875 -> 61440 -> clip 57344 = 0x7B;
    # -0.25 -> -2^13 -> exp 28 -> 1 11100 00 = 0xF0
    data, scale = quantize_mx(block([1.0, 1.75, 1.875, -0.25]), "float8_e5m2")
    assert scale[0, 0] == 112
    assert codes_of(data, 0, 0) == [0x78, 0x7B, 0x7B, 0xF0]
    # alt max_exp 14 -> scale 113, q = x * 2^14: 1.0 -> exp 29 -> 0x74; 1.75 -> 1.75*2^14 -> 0x77;
    # 1.875 -> 1.875 * 2^14 (mant .111 with 2 bits: tie between 1.75 (odd, 0x77) and 2.0*2^14 (0x78, even))
    # -> 0x78; -0.25 -> -2^12 -> exp 27 -> 1 11011 00 = 0xEC
    data, scale = quantize_mx(block([1.0, 1.75, 1.875, -0.25]), "float8_e5m2", emax="alt")
    assert scale[0, 0] == 113
    assert codes_of(data, 0, 0) == [0x74, 0x77, 0x78, 0xEC]


# ---------------------------------------------------------------- NaN / Inf
def test_nan_inf_blocks_e4m3():
    # NaN / Inf have e = 255 -> scale 255 - 8 = 247; finite values are divided by 2^120 -> 0.
    # +NaN -> 0x7F, -NaN -> 0xFF, +Inf -> clip 448 = 0x7E, -Inf -> 0xFE; 65504 / 2^120 -> 0x00
    x = block([np.nan, -np.nan, np.inf, -np.inf, 65504.0, -1.0, 0, 0])
    for underflow in ("wrap", "clamp"):
        data, scale = quantize_mx(x, underflow=underflow)
        assert scale[0, 0] == 247
        assert codes_of(data, 0, 0) == [0x7F, 0xFF, 0x7E, 0xFE]
        assert codes_of(data, 1, 0) == [0x00, 0x80, 0x00, 0x00]
    # alt: 255 - 7 = 248 (docs/anchors.md §1.4 (c))
    assert quantize_mx(x, emax="alt")[1][0, 0] == 248


def test_nan_inf_blocks_e5m2():
    # scale 255 - 15 = 240; NaN -> 0x7E / 0xFE (sign kept); Inf -> 57344 = 0x7B / 0xFB
    x = block([np.nan, -np.nan, np.inf, -np.inf], dtype=BF16)
    data, scale = quantize_mx(x, "float8_e5m2")
    assert scale[0, 0] == 240
    assert codes_of(data, 0, 0) == [0x7E, 0xFE, 0x7B, 0xFB]


def test_nonfinite_inf_block_issue_example():
    # Issue 16's example: fp16 block of 32 x +Inf (0x7C00) to E4M3. fp32 +Inf: field 255 -> m = 255.
    #   sim: byte 255 - 8 = 247; +Inf clips to +448 = 0 1111 110 = 0x7E
    #   ocp: byte 0xFF (E8M0 NaN); every element NaN: E4M3 0x7F
    x = block(np.full(32, np.inf))
    assert x.view(np.uint16)[0, 0] == 0x7C00
    d, s = quantize_mx(x)                                           # sim is the default
    assert s[0, 0] == 247 and all(codes_of(d, r, 0) == [0x7E] * 4 for r in range(8))
    d, s = quantize_mx(x, nonfinite="ocp")
    assert s[0, 0] == 0xFF and all(codes_of(d, r, 0) == [0x7F] * 4 for r in range(8))
    assert list(s[1:, 0]) == [248] * 3 and not d[8:].any()          # the all-zero blocks are untouched


def test_nonfinite_ocp_whole_block_positive_nan():
    # one NaN and one -Inf among finite values: the whole 8 x 4 block becomes NaN with the sign dropped
    # (docs/model.md §7): E4M3 0x7F, E5M2 0x7E. The block next to it (columns 4..7, max 1.0, m = 127) keeps
    # its own scale and codes: byte 127 - max_exp, 1.0 -> 2^max_exp:
    #   E4M3 ocp 119, 2^8 -> field 15 -> 0x78; E4M3 alt 120, 2^7 -> field 14 -> 0x70;
    #   E5M2 ocp 112, 2^15 -> field 30 -> 0 11110 00 = 0x78; E5M2 alt 113, 2^14 -> field 29 -> 0x74
    x = np.zeros((32, 8), np.float64)
    x[0, :4] = [-1.0, 2.0, -np.inf, 0.0]
    x[5, 3] = -np.nan
    x[0, 4] = 1.0
    want = {("float8_e4m3fn", "ocp"): (0x7F, 119, 0x78), ("float8_e4m3fn", "alt"): (0x7F, 120, 0x70),
            ("float8_e5m2", "ocp"): (0x7E, 112, 0x78), ("float8_e5m2", "alt"): (0x7E, 113, 0x74)}
    for dt in (np.float16, BF16):
        for (dst, emax), (nan, byte, one) in want.items():
            d, s = quantize_mx(x.astype(dt), dst, emax=emax, nonfinite="ocp")
            assert s[0, 0] == 0xFF and all(codes_of(d, r, 0) == [nan] * 4 for r in range(8))
            assert s[0, 1] == byte and codes_of(d, 0, 1) == [one, 0, 0, 0]


# ---------------------------------------------------------------- block geometry and scale layouts
def test_block_geometry():
    # block (0, 0) = partitions 0..7 x columns 0..3, block (0, 1) = columns 4..7, block (1, 0) = partitions 8..15
    x = np.zeros((32, 8), np.float16)
    x[7, 3] = 1.0      # -> block (0,0): 127 - 8 = 119
    x[0, 4] = 480.0    # -> block (0,1): 135 - 8 = 127
    x[8, 0] = 2.0      # -> block (1,0): 128 - 8 = 120
    data, scale = quantize_mx(x)
    assert scale.shape == (4, 2)
    np.testing.assert_array_equal(scale, [[119, 127], [120, 248], [248, 248], [248, 248]])
    # 1.0 * 2^8 -> 0x78 in byte 3 of data[7, 0]; 480 -> 0x7E in byte 0 of data[0, 1]; 2.0 * 2^7 -> 0x78
    assert data[7, 0] == 0x78000000 and data[0, 1] == 0x7E and data[8, 0] == 0x78


@pytest.mark.parametrize("p", [64, 96, 128])
def test_scatter_layout(p):
    # block row i (partitions 8i..8i+7) holds 2^i -> e = 127 + i -> scale 119 + i; compact row i
    # lands at partition (i // 4) * 32 + i % 4: rows 0-3, 32-35, 64-67, 96-99; other rows 0
    x = np.zeros((p, 4), np.float16)
    for i in range(p // 8):
        x[8 * i, 0] = 2.0 ** i
    data, scale = quantize_mx(x)
    assert scale.shape == (p, 1)
    want = np.zeros(p, np.uint8)
    parts = [0, 1, 2, 3, 32, 33, 34, 35, 64, 65, 66, 67, 96, 97, 98, 99][:p // 8]
    for i, part in enumerate(parts):
        want[part] = 119 + i
    np.testing.assert_array_equal(scale[:, 0], want)
    # explicit compact gives the rows in order
    _, compact = quantize_mx(x, scale_layout="compact")
    np.testing.assert_array_equal(compact[:, 0], 119 + np.arange(p // 8))
    # every element is 2^i * 2^-(i - 8) = 256 -> 0x78
    assert all(int(data[8 * i, 0]) == 0x78 for i in range(p // 8))


def test_scatter_p32_explicit():
    x = block([1.0])
    _, s = quantize_mx(x, scale_layout="scatter")
    assert s.shape == (32, 1)
    np.testing.assert_array_equal(s[:, 0], [119, 248, 248, 248] + [0] * 28)


def test_bf16_equals_fp16_on_common_values():
    v = [1.0, -0.5, 0.375, 2.0 ** -10, 3.0, -7.0, 100.0, 0.0]
    a = quantize_mx(block(v, np.float16))
    b = quantize_mx(block(v, BF16))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


# ---------------------------------------------------------------- contract violations
X = np.zeros((32, 8), np.float16)


@pytest.mark.parametrize("call", [
    lambda: quantize_mx(np.zeros((16, 8), np.float16)),
    lambda: quantize_mx(np.zeros((33, 8), np.float16)),
    lambda: quantize_mx(np.zeros((256, 8), np.float16)),
    lambda: quantize_mx(np.zeros((32, 6), np.float16)),
    lambda: quantize_mx(np.zeros((32, 0), np.float16)),
    lambda: quantize_mx(X.astype(np.float32)),
    lambda: quantize_mx(X.astype(np.int16)),
    lambda: quantize_mx(X.view(np.uint16)),
    lambda: quantize_mx(X.tolist()),
    lambda: quantize_mx(X.ravel()),
    lambda: quantize_mx(X, "float4_e2m1fn"),
    lambda: quantize_mx(X, "float8_e4m3"),
    lambda: quantize_mx(X, "bfloat16"),
    lambda: quantize_mx(X, emax="ieee"),
    lambda: quantize_mx(X, underflow="saturate"),
    lambda: quantize_mx(X, underflow="unclamped"),
    lambda: quantize_mx(X, nonfinite="nan"),
    lambda: quantize_mx(X, nonfinite=None),
    lambda: quantize_mx(X, scale_layout="rows"),
])
def test_contract_violations(call):
    with pytest.raises(InvalidArgument):
        call()


@pytest.mark.parametrize("src", ["float16", "bfloat16"])
def test_every_bit_pattern_raises_no_floating_point_warning(src):
    """Every fp16 / bf16 pattern (signalling NaNs too: random SBUF bytes hold them) under every knob value, with
    numpy's floating-point errors raised: no raw RuntimeWarning ("invalid value encountered in cast") may reach a
    user's terminal (issue 40)."""
    bits = np.arange(1 << 16, dtype=np.uint16).reshape(128, 512)
    x = bits.view(np.float16 if src == "float16" else ml_dtypes.bfloat16)
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        for dst in ("float8_e4m3fn", "float8_e5m2"):
            for nonfinite in ("sim", "ocp"):
                for underflow in ("wrap", "clamp", "unclamped-data", "unwrapped-data"):
                    quantize_mx(x, dst, nonfinite=nonfinite, underflow=underflow)


@pytest.mark.parametrize("src", ["float16", "bfloat16"])
def test_the_column_blocks_change_no_byte(src, monkeypatch):
    """The model converts BLOCK_BYTES of source at a time (bounded memory, docs/limits.md §5): blocks of one
    4-element column and of a few columns give the bytes of one block, under every knob value."""
    mod = importlib.import_module("q7emu.golden.quantize_mx")     # (q7emu.golden.quantize_mx is the function)
    rng = np.random.default_rng(40)
    bits = rng.integers(0, 1 << 16, (64, 92), dtype=np.uint16)
    x = bits.view(np.float16 if src == "float16" else ml_dtypes.bfloat16)
    for knobs in ({}, {"nonfinite": "ocp", "underflow": "clamp", "emax": "alt"}, {"scale_layout": "compact"}):
        whole = quantize_mx(x, "float8_e4m3fn", **knobs)
        for block in (1, 2 * 64 * 12):
            monkeypatch.setattr(mod, "BLOCK_BYTES", block)
            got = quantize_mx(x, "float8_e4m3fn", **knobs)
            assert all(np.array_equal(a, b) for a, b in zip(got, whole)), (knobs, block)
        monkeypatch.undo()
