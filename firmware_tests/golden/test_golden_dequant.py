"""Golden TensorDequantize (q7emu.golden.dequant): hand-computed known answers, knobs, validity.

Every expected byte below is derived by hand from the format definitions (arithmetic in the
comments); none was produced by running the code under test.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from q7emu.errors import InvalidArgument
from q7emu.golden import dequantize
from q7emu.model.format_table import DEQUANT_FORMATS
from q7emu.model.knobs import DEQUANT_KNOBS

# ---------------------------------------------------------------- hand-derived code -> FP8 tables
# FP4 E2M1 value -> E5M2 (bias 15): 0.5 = 2^-1 -> exp 14 -> 0 01110 00 = 0x38; 1.0 -> exp 15 = 0x3C;
# 1.5 -> 0x3C | mant 10b = 0x3E; 2 -> exp 16 = 0x40; 3 = 1.5*2 -> 0x42; 4 -> exp 17 = 0x44; 6 = 1.5*4 -> 0x46
FP4_E5M2 = [0x00, 0x38, 0x3C, 0x3E, 0x40, 0x42, 0x44, 0x46,
            0x80, 0xB8, 0xBC, 0xBE, 0xC0, 0xC2, 0xC4, 0xC6]
# INT4 -> E5M2: 1 = 0x3C, 2 = 0x40, 3 = 1.5*2 = 0x42, 4 = 0x44, 5 = 1.25*4 = 0x45, 6 = 1.5*4 = 0x46,
# 7 = 1.75*4 = 0x47; codes 8..15 are -8 (1.0*2^3, exp 18 -> 1 10010 00 = 0xC8), -7 (0xC7), -6 (0xC6),
# -5 (0xC5), -4 (0xC4), -3 (0xC2), -2 (0xC0), -1 (0xBC)
INT4_E5M2 = [0x00, 0x3C, 0x40, 0x42, 0x44, 0x45, 0x46, 0x47,
             0xC8, 0xC7, 0xC6, 0xC5, 0xC4, 0xC2, 0xC0, 0xBC]
# NF4 qlora -> E4M3 (docs/model.md §1; e.g. -0.6961928 = 11.14 steps of 2^-4 -> 11 -> 1.375*2^-1 -> 0xB3)
NF4_E4M3 = [0xB8, 0xB3, 0xB0, 0xAD, 0xA9, 0xA4, 0x9C, 0x00,
            0x1A, 0x22, 0x28, 0x2B, 0x2E, 0x31, 0x34, 0x38]


def fp6_e4m3(code: int) -> int:
    """Hand rule (docs/firmware.md §2.2): normal E2M3 (e > 0) -> E4M3 exp e - 1 + 7 = e + 6, mantissa copied;
    subnormal m/8 -> exact E4M3 (exp, mant) from the docs/firmware.md table; sign copied."""
    s, e, m = code >> 5, (code >> 3) & 3, code & 7
    if e:
        mag = ((e + 6) << 3) | m
    else:
        # m/8: 1 -> 2^-3 (4,0); 2 -> 2^-2 (5,0); 3 -> 1.5*2^-2 (5,4); 4 -> 2^-1 (6,0);
        # 5 -> 1.25*2^-1 (6,2); 6 -> 1.5*2^-1 (6,4); 7 -> 1.75*2^-1 (6,6)
        mag = [0x00, 0x20, 0x28, 0x2C, 0x30, 0x32, 0x34, 0x36][m]
    return (s << 7) | mag


def row(*b: int) -> np.ndarray:
    return np.array([b], dtype=np.uint8)


# ---------------------------------------------------------------- group 0, exhaustive
@pytest.mark.parametrize("fmt,table", [(1, FP4_E5M2), (2, INT4_E5M2), (3, NF4_E4M3)])
@pytest.mark.parametrize("order", ["low-first", "high-first"])
def test_group0_4bit_exhaustive(fmt, table, order):
    src = np.arange(256, dtype=np.uint8).reshape(1, 256)        # 64 words, every byte once
    out = dequantize(src, fmt, 0, nibble_order=order)
    assert out.shape == (1, 512) and out.dtype == np.uint8
    lo = [table[b & 15] for b in range(256)]
    hi = [table[b >> 4] for b in range(256)]
    first, second = (lo, hi) if order == "low-first" else (hi, lo)
    want = np.array([v for pair in zip(first, second) for v in pair], dtype=np.uint8)
    np.testing.assert_array_equal(out[0], want)


@pytest.mark.parametrize("packing", ["lsb-first", "msb-first"])
def test_group0_fp6_exhaustive(packing):
    # all 64 codes in order, packed 4 per 3 bytes by the packing rule -> 48 bytes = 12 words
    codes = list(range(64))
    stream = []
    for g in range(16):
        c = codes[4 * g:4 * g + 4]
        if packing == "lsb-first":
            w = c[0] | c[1] << 6 | c[2] << 12 | c[3] << 18
        else:
            w = c[0] << 18 | c[1] << 12 | c[2] << 6 | c[3]
        stream += [w & 0xFF, (w >> 8) & 0xFF, w >> 16]
    out = dequantize(np.array([stream], np.uint8), 4, 0, fp6_packing=packing)
    np.testing.assert_array_equal(out[0], [fp6_e4m3(c) for c in codes])


# ---------------------------------------------------------------- group 0, hand streams
def test_fp4_known_stream_and_nibble_order():
    # 0x87: lo 7 (6.0 -> 0x46), hi 8 (-0.0 -> 0x80); 0x21: lo 1 (0.5 -> 0x38), hi 2 (1.0 -> 0x3C);
    # 0xF0: lo 0 (0x00), hi F (-6 -> 0xC6); 0x7A: lo A (-1.0 -> 0xBC), hi 7 (0x46)
    src = row(0x87, 0x21, 0xF0, 0x7A)
    np.testing.assert_array_equal(dequantize(src, 1)[0], [0x46, 0x80, 0x38, 0x3C, 0x00, 0xC6, 0xBC, 0x46])
    np.testing.assert_array_equal(dequantize(src, 1, nibble_order="high-first")[0],
                                  [0x80, 0x46, 0x3C, 0x38, 0xC6, 0x00, 0x46, 0xBC])
    # the same bytes as one little-endian u32 word
    w = np.array([[0x7AF02187]], dtype=np.uint32)
    np.testing.assert_array_equal(dequantize(w, "e2m1")[0], [0x46, 0x80, 0x38, 0x3C, 0x00, 0xC6, 0xBC, 0x46])


def test_int4_nf4_known_streams():
    # INT4: 0x8F -> lo F (-1: 0xBC), hi 8 (-8: 0xC8); 0x53 -> 3 (0x42), 5 (0x45); 0x00 -> 0, 0; 0x77 -> 7, 7 (0x47)
    np.testing.assert_array_equal(dequantize(row(0x8F, 0x53, 0x00, 0x77), 2)[0],
                                  [0xBC, 0xC8, 0x42, 0x45, 0x00, 0x00, 0x47, 0x47])
    # NF4: 0x10 -> idx 0 (-1.0: 1 0111 000 = 0xB8), idx 1 (0xB3); 0xF7 -> idx 7 (0.0: 0x00), idx 15 (1.0: 0x38);
    # 0x00 bytes are index 0 = -1.0 -> 0xB8
    np.testing.assert_array_equal(dequantize(row(0x10, 0xF7, 0x00, 0x00), 3)[0],
                                  [0xB8, 0xB3, 0x00, 0x38, 0xB8, 0xB8, 0xB8, 0xB8])


def test_fp6_known_stream_and_packing():
    # codes c0..c3 = 0x01, 0x3F, 0x20, 0x0A; lsb-first w = 0x01 | 0x3F<<6 | 0x20<<12 | 0x0A<<18
    #   = 0x01 + 0xFC0 + 0x20000 + 0x280000 = 0x2A0FC1 -> bytes C1 0F 2A
    # 0x01 = 0.125 -> 0x20; 0x3F = -(1.875*2^2) = -7.5 -> 1 1001 111 = 0xCF; 0x20 = -0.0 -> 0x80;
    # 0x0A = e1 m2 = 1.25 -> 0 0111 010 = 0x3A. The other 9 bytes are zero codes -> 0x00.
    src = row(0xC1, 0x0F, 0x2A, *([0] * 9))
    out = dequantize(src, 4)
    assert out.shape == (1, 16)
    np.testing.assert_array_equal(out[0], [0x20, 0xCF, 0x80, 0x3A] + [0] * 12)
    # msb-first reads code k from bits [18-6k, 24-6k): 0x0A, 0x20, 0x3F, 0x01
    np.testing.assert_array_equal(dequantize(src, 4, fp6_packing="msb-first")[0],
                                  [0x3A, 0x80, 0xCF, 0x20] + [0] * 12)


# ---------------------------------------------------------------- group 8 (MX)
# Four FP4 groups (scale, 4 code bytes) and the hand-computed 8 output bytes of each (E5M2):
G0 = (0x7F, [0x87, 0x21, 0xF0, 0x7A], [0x46, 0x80, 0x38, 0x3C, 0x00, 0xC6, 0xBC, 0x46])   # x1
# x2: code 7 = 6.0 * 2 = 12 = 1.5 * 2^3 -> exp 18 -> 0 10010 10 = 0x4A; zeros stay 0x00
G1 = (0x80, [0x07, 0x00, 0x00, 0x00], [0x4A, 0x00, 0, 0, 0, 0, 0, 0])
# x2^-127: code 1 = 0.5 -> 2^-128 < 2^-17 (half the E5M2 min subnormal 2^-16) -> 0x00; code 8 = -0 -> 0x80;
# code 7 -> 6 * 2^-127 -> 0x00; code F = -6 * 2^-127 -> negative underflow -> -0 = 0x80
G2 = (0x00, [0x81, 0xF7, 0x00, 0x00], [0x00, 0x80, 0x00, 0x80, 0, 0, 0, 0])
# x2^127: 6 * 2^127 saturates -> 57344 = 0x7B; 0 -> 0x00; F = -6*2^127 -> 0xFB; 8 = -0 -> 0x80 (zeros stay zero)
G3 = (0xFE, [0x07, 0x8F, 0x00, 0x00], [0x7B, 0x00, 0xFB, 0x80, 0, 0, 0, 0])
GROUPS = [G0, G1, G2, G3]
MX_WANT = [b for g in GROUPS for b in g[2]]


def mx_stream(groups, layout: str) -> np.ndarray:
    """Hand-assemble a group-8 stream of 4 groups in the given layout."""
    if layout == "scale-first":
        s = [b for sc, code, _ in groups for b in [sc] + code]
    elif layout == "scale-last":
        s = [b for sc, code, _ in groups for b in code + [sc]]
    else:   # word-block: scales of groups 0..3 in one word, then one code word per group
        s = [g[0] for g in groups] + [b for g in groups for b in g[1]]
    return np.array([s], dtype=np.uint8)


@pytest.mark.parametrize("layout", ["scale-first", "scale-last", "word-block"])
def test_mx_fp4_scales_and_layouts(layout):
    out = dequantize(mx_stream(GROUPS, layout), 1, 8, mx_layout=layout)
    assert out.shape == (1, 32)
    np.testing.assert_array_equal(out[0], MX_WANT)


def test_mx_layout_knob_changes_bytes():
    # the scale-first stream read as scale-last: group 0 = bytes 7F 87 21 F0 | scale 7A (2^-5);
    # code bytes 7F 87 21 F0 -> codes F 7 7 8 1 2 0 F = -6 6 6 -0 0.5 1 0 -6, x 2^-5:
    # -0.1875 = -1.5*2^-3 -> exp 12 -> 1 01100 10 = 0xB2; 0.1875 -> 0x32; -0 -> 0x80;
    # 0.5*2^-5 = 2^-6 -> exp 9 -> 0x24; 2^-5 -> exp 10 -> 0x28; 0 -> 0x00
    out = dequantize(mx_stream(GROUPS, "scale-first"), 1, 8, mx_layout="scale-last")
    np.testing.assert_array_equal(out[0, :8], [0xB2, 0x32, 0x32, 0x80, 0x24, 0x28, 0x00, 0xB2])


def test_mx_nibble_order():
    # G0 with high-first: 0x87 -> 8 then 7, etc.
    src = mx_stream([G0] * 4, "scale-first")
    out = dequantize(src, 1, 8, nibble_order="high-first")
    np.testing.assert_array_equal(out[0, :8], [0x80, 0x46, 0x3C, 0x38, 0xC6, 0x00, 0x46, 0xBC])


def test_mx_scale_ff_nan_and_nonan():
    codes = [0x07, 0x8F, 0x01, 0x00]
    src = mx_stream([(0xFF, codes, None), G0, G0, G0], "scale-first")
    # e8m0: the whole group is NaN -> canonical E5M2 NaN 0x7E for every byte (even zero codes)
    out = dequantize(src, 1, 8)
    np.testing.assert_array_equal(out[0, :8], [0x7E] * 8)
    np.testing.assert_array_equal(out[0, 8:16], G0[2])
    # e8m0-nonan: x2^128: 6 -> 0x7B; 0 -> 0x00; F -> 0xFB; 8 -> -0 = 0x80; 1 (0.5) -> 2^127 -> 0x7B; 0, 0, 0
    out = dequantize(src, 1, 8, mx_scale="e8m0-nonan")
    np.testing.assert_array_equal(out[0, :8], [0x7B, 0x00, 0xFB, 0x80, 0x7B, 0x00, 0x00, 0x00])
    # NF4 (E4M3 output): NaN group -> 0x7F
    out = dequantize(src, 3, 8)
    np.testing.assert_array_equal(out[0, :8], [0x7F] * 8)


def test_mx_nf4_int4_known():
    # NF4 x2 (scale 0x80): idx 15 (1.0) -> 2.0 = 0 1000 000 = 0x40; idx 0 (-1) -> 0xC0;
    # idx 1: -0.6961928 * 2 = -1.3923856 = 11.14 steps of 0.125 above 1 ... -> 1.375 -> 1 0111 011 = 0xBB;
    # idx 7 -> 0x00. Code bytes 0x0F, 0x71 -> codes F 0 1 7; then 0x77 0x77 -> 0x00 x4
    g = (0x80, [0x0F, 0x71, 0x77, 0x77], None)
    out = dequantize(mx_stream([g] * 4, "scale-first"), 3, 8)
    np.testing.assert_array_equal(out[0, :8], [0x40, 0xC0, 0xBB, 0x00, 0x00, 0x00, 0x00, 0x00])
    # NF4 x2^127 saturates at 448: 1.0 -> 0x7E, -1.0 -> 0xFE; -0.696*2^127 -> 0xFE; 0 -> 0x00
    g = (0xFE, [0x0F, 0x71, 0x77, 0x77], None)
    out = dequantize(mx_stream([g] * 4, "scale-first"), 3, 8)
    np.testing.assert_array_equal(out[0, :8], [0x7E, 0xFE, 0xFE, 0x00, 0x00, 0x00, 0x00, 0x00])
    # INT4 x0.5 (scale 0x7E): 7 -> 3.5 = 1.75*2 -> 0 10000 11 = 0x43; 8 (-8) -> -4 = 0xC4;
    # 1 -> 0.5 = 0x38; F (-1) -> -0.5 = 0xB8. Bytes 0x87 -> 7, 8; 0xF1 -> 1, F
    g = (0x7E, [0x87, 0xF1, 0x00, 0x00], None)
    out = dequantize(mx_stream([g] * 4, "scale-first"), 2, 8)
    np.testing.assert_array_equal(out[0, :8], [0x43, 0xC4, 0x38, 0xB8, 0x00, 0x00, 0x00, 0x00])


@pytest.mark.parametrize("fmt", [f.code for f in DEQUANT_FORMATS if 8 in f.paths])
@pytest.mark.parametrize("mx_scale", DEQUANT_KNOBS["mx_scale"])
def test_mx_all_scales_all_codes_vs_ml_dtypes(fmt, mx_scale):
    """Independent oracle over every scale byte and every code: value x 2^(s-127), clipped to
    the FP8 max in float64, then float32 (exact for these values except below 2^-126, where the
    FP8 result is a signed zero either way) and ml_dtypes' RNE cast."""
    codes = np.arange(16)
    vals = {1: codes.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64),
            2: ((codes ^ 8) - 8).astype(np.float64),
            3: np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                         -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                         0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
                         0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                         0.7229568362236023, 1.0], dtype=np.float32).astype(np.float64)}[fmt]
    fp8, mx, nan = ((ml_dtypes.float8_e5m2, 57344.0, 0x7E) if fmt < 3 else (ml_dtypes.float8_e4m3fn, 448.0, 0x7F))
    # one partition per scale byte; each group holds codes 0..7 or 8..15 (two groups alternate)
    src, want = [], []
    for s in range(256):
        stream, exp = [], []
        for g in range(4):
            half = codes[8 * (g % 2):8 * (g % 2) + 8]
            stream += [s] + [int(half[2 * i] | half[2 * i + 1] << 4) for i in range(4)]
            if s == 255 and mx_scale == "e8m0":
                exp += [nan] * 8
            else:
                v = np.clip(vals[half] * 2.0 ** (s - 127), -mx, mx)
                exp += list(v.astype(np.float32).astype(fp8).view(np.uint8))
        src.append(stream)
        want.append(exp)
    src = np.array(src, dtype=np.uint8)
    out = np.concatenate([dequantize(src[i:i + 128], fmt, 8, mx_scale=mx_scale) for i in (0, 128)])
    np.testing.assert_array_equal(out, np.array(want, dtype=np.uint8))


def test_partitions_independent_and_shapes():
    src = np.concatenate([row(0x87, 0x21, 0xF0, 0x7A), row(0, 0, 0, 0x70)])
    out = dequantize(src, 1)
    np.testing.assert_array_equal(out, [[0x46, 0x80, 0x38, 0x3C, 0x00, 0xC6, 0xBC, 0x46],
                                        [0, 0, 0, 0, 0, 0, 0x00, 0x46]])
    assert dequantize(np.zeros((128, 40), np.uint8), 2, 8).shape == (128, 64)     # 10 words -> 16
    assert dequantize(np.zeros((3, 24), np.uint8), 4).shape == (3, 32)            # 6 words -> 8


# ---------------------------------------------------------------- invalid arguments
GOOD = np.zeros((1, 20), np.uint8)


@pytest.mark.parametrize("call", [
    lambda: dequantize(GOOD, 0),
    lambda: dequantize(GOOD, max(f.code for f in DEQUANT_FORMATS) + 1),      # the first code with no format
    lambda: dequantize(GOOD, "fp8"),
    lambda: dequantize(GOOD, 1.0),
    lambda: dequantize(GOOD, True),
    lambda: dequantize(GOOD, 1, 4),
    lambda: dequantize(GOOD, 1, 8.0),
    lambda: dequantize(np.zeros((1, 12), np.uint8), 4, 8),          # FP6 is never MX
    lambda: dequantize(GOOD, 1, nibble_order="middle"),
    lambda: dequantize(GOOD, 4, fp6_packing="lsb"),
    lambda: dequantize(GOOD, 1, 8, mx_layout="interleaved"),
    lambda: dequantize(GOOD, 1, 8, mx_scale="e5m2"),
    lambda: dequantize(GOOD, 3, nf4_table="bnb-fp4"),
    lambda: dequantize(GOOD.tolist(), 1),
    lambda: dequantize(GOOD.astype(np.int8), 1),
    lambda: dequantize(GOOD.astype(np.float32), 1),
    lambda: dequantize(GOOD[0], 1),
    lambda: dequantize(np.zeros((0, 4), np.uint8), 1),
    lambda: dequantize(np.zeros((129, 4), np.uint8), 1),
    lambda: dequantize(np.zeros((1, 6), np.uint8), 1),              # not whole words
    lambda: dequantize(np.zeros((1, 0), np.uint8), 1),              # no words
    lambda: dequantize(np.zeros((1, 8), np.uint8), 4),              # FP6 needs 3k words
    lambda: dequantize(np.zeros((1, 8), np.uint8), 1, 8),           # MX needs 5k words
])
def test_invalid_arguments(call):
    with pytest.raises(InvalidArgument):
        call()


@pytest.mark.parametrize("fmt,group", [("e2m1", 0), ("nf4", 0), ("e2m3", 0), ("int4", 8), ("e2m1", 8)])
def test_the_column_blocks_change_no_byte(fmt, group, monkeypatch):
    """The model converts BLOCK_BYTES of source at a time in whole source groups (bounded memory, docs/limits.md
    §5): blocks of one group and of a few give the bytes of one block, under every MX layout."""
    import q7emu.golden.dequant as mod
    rng = np.random.default_rng(41)
    src = rng.integers(0, 256, (12, 60 * 7), dtype=np.uint8)
    layouts = ("scale-first", "scale-last", "word-block") if group else ("scale-first",)
    for layout in layouts:
        kw = {"mx_layout": layout, "mx_scale": "e8m0-nonan"} if group else {"nibble_order": "high-first"}
        whole = dequantize(src, fmt, group, **kw)
        for block in (1, 12 * 60):
            monkeypatch.setattr(mod, "BLOCK_BYTES", block)
            assert np.array_equal(dequantize(src, fmt, group, **kw), whole), (layout, block)
        monkeypatch.undo()
