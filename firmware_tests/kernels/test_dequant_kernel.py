"""TensorDequantize (POOL 0x7b) kernels (their programs, q7emu/kernels/programs; q7emu.kernels.dequant) vs the
golden model (q7emu.golden.dequantize) -- issue 3 "Done when".

1. exhaustive kernel == golden, byte for byte, for every fmt x group x knob value;
2. hypothesis streams of random length (every tail of the 32 / 48 / 40-byte pass) over 1..128
   partitions, uint8 and uint32 sources;
3. known answers computed by hand from the format definitions (arithmetic in the comments);
4. every invalid argument raises InvalidArgument before the kernel is entered;
5. tracing does not change results.

The stream builders below (nibble packing, FP6 packing, MX group layouts) are written here from
docs/model.md §1 and share no code with either the kernels or the golden model.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import kernel_settings
from hypothesis import given
from hypothesis import strategies as st
from kernel_checks import assert_rejected_before_compute, stub_kernel

import q7emu
from q7emu import golden, registry
from q7emu.errors import InvalidArgument
from q7emu.kernels.dequant import dequantize, dequantize_path
from q7emu.model.format_table import DEQUANT_FORMATS, dequant_path
from q7emu.model.knobs import DEQUANT_KNOBS, dequant_knobs

NIBBLE = DEQUANT_KNOBS["nibble_order"]
FP6_PACKING = DEQUANT_KNOBS["fp6_packing"]
MX_LAYOUT = DEQUANT_KNOBS["mx_layout"]
MX_SCALE = DEQUANT_KNOBS["mx_scale"]

#: (fmt, group) -> (path, source words per unit, source bytes per kernel pass), every pair of the format table
PATHS = {(f.code, g): (p, dequant_path(p).ratio[0], dequant_path(p).pass_bytes)
         for f in DEQUANT_FORMATS for g, p in f.paths.items()}
#: the formats of the MX path and the 4-bit formats (the parametrisations of the exhaustive tests)
MX_FMTS = [f.code for f in DEQUANT_FORMATS if 8 in f.paths]
NIBBLE_FMTS = [f.code for f in DEQUANT_FORMATS if f.paths[0] == "proc_4bit_non_mx"]


def all_knobs(fmt: int, group: int):
    """Every knob combination that can influence (fmt, group) (q7emu.model.knobs.dequant_knobs); the others stay
    at their default (they are also varied by the hypothesis test)."""
    names = dequant_knobs(fmt, group)
    for vals in itertools.product(*(DEQUANT_KNOBS[k] for k in names)):
        yield dict(zip(names, vals))


def assert_same(src, fmt, group, **knobs):
    """Kernel == golden byte for byte (shape, dtype and every byte); returns the output."""
    want = golden.dequantize(src, fmt, group, **knobs)
    got = dequantize(src, fmt, group, **knobs)
    assert got.dtype == np.uint8 and want.dtype == np.uint8
    assert got.shape == want.shape, (got.shape, want.shape)
    if not np.array_equal(got, want):
        p, i = np.argwhere(got != want)[0]
        raise AssertionError(f"fmt={fmt} group={group} {knobs}: first mismatch at partition {p} byte {i}: "
                             f"kernel 0x{got[p, i]:02X} golden 0x{want[p, i]:02X}; "
                             f"{int((got != want).sum())} of {got.size} bytes differ")
    return got


# ---------------------------------------------------------------- stream builders (docs/model.md §1)
def pack_nibbles(codes: np.ndarray, nibble_order: str) -> np.ndarray:
    """uint8 codes [..., 2n] (element order) -> bytes [..., n]: element 2i is the low nibble of
    byte i under ``low-first``, the high nibble under ``high-first``."""
    c = np.asarray(codes, np.uint8)
    a, b = c[..., 0::2], c[..., 1::2]
    return (a | (b << 4)) if nibble_order == "low-first" else ((a << 4) | b)


def pack_fp6(codes: np.ndarray, packing: str) -> np.ndarray:
    """uint8 6-bit codes [P, 4t] -> bytes [P, 3t]: w = c0 | c1<<6 | c2<<12 | c3<<18 (``lsb-first``)
    or c0<<18 | c1<<12 | c2<<6 | c3 (``msb-first``), then bytes w, w>>8, w>>16."""
    c = np.asarray(codes, np.uint32).reshape(codes.shape[0], -1, 4)
    shifts = (0, 6, 12, 18) if packing == "lsb-first" else (18, 12, 6, 0)
    w = sum(c[..., k] << shifts[k] for k in range(4))
    return np.stack([w & 0xFF, (w >> 8) & 0xFF, (w >> 16) & 0xFF], axis=-1).reshape(codes.shape[0], -1) \
        .astype(np.uint8)


def pack_mx(scales: np.ndarray, code_bytes: np.ndarray, layout: str) -> np.ndarray:
    """Scale bytes [P, g] + code bytes [P, g, 4] -> the group-8 stream [P, 5g] for ``layout``.
    ``word-block`` needs g % 4 == 0: per 4 groups, one word of their 4 scales, then 4 code words."""
    p, g = scales.shape
    if layout == "scale-first":
        return np.concatenate([scales[..., None], code_bytes], axis=-1).reshape(p, 5 * g)
    if layout == "scale-last":
        return np.concatenate([code_bytes, scales[..., None]], axis=-1).reshape(p, 5 * g)
    assert g % 4 == 0
    s = scales.reshape(p, g // 4, 4)
    c = code_bytes.reshape(p, g // 4, 16)
    return np.concatenate([s, c], axis=-1).reshape(p, 5 * g)


def mx_stream(scales, codes, layout, nibble_order):
    """Scale bytes [P, g] + 4-bit codes [P, g, 8] -> stream bytes [P, 5g]."""
    p, g = scales.shape
    cb = pack_nibbles(codes.reshape(p, g * 8), nibble_order).reshape(p, g, 4)
    return pack_mx(np.asarray(scales, np.uint8), cb, layout)


# ---------------------------------------------------------------- 1. exhaustive kernel == golden
@pytest.mark.parametrize("fmt", MX_FMTS)
def test_mx_exhaustive_codes_scales_positions(fmt, rng):
    # Group (s, k): scale byte s (0..255), code at position pos = (k + pos) % 16, k = 0..15, so for
    # every scale byte each of the 16 codes appears in each of the 8 positions of a group.
    s = np.repeat(np.arange(256), 16)
    k = np.tile(np.arange(16), 256)
    codes = (k[:, None] + np.arange(8)[None, :]) % 16                      # [4096, 8]
    order = rng.permutation(4096)                 # scatter the groups over the passes and partitions
    s, codes = s[order], codes[order]
    # Two arrangements: 128 partitions x 32 groups (4 whole passes of 8 groups), and 64 partitions
    # x 68 groups (8 passes + a 4-group, 20-byte tail), the extra 256 groups random.
    extra_s = rng.integers(0, 256, 256)
    extra_c = rng.integers(0, 16, (256, 8))
    arrangements = [(s.reshape(128, 32), codes.reshape(128, 32, 8)),
                    (np.concatenate([s, extra_s]).reshape(64, 68),
                     np.concatenate([codes, extra_c]).reshape(64, 68, 8))]
    for knobs in all_knobs(fmt, 8):
        for sc, cd in arrangements:
            src = mx_stream(sc.astype(np.uint8), cd.astype(np.uint8), knobs["mx_layout"], knobs["nibble_order"])
            assert_same(src, fmt, 8, **knobs)


@pytest.mark.parametrize("fmt", NIBBLE_FMTS)
def test_4bit_non_mx_exhaustive_bytes(fmt, rng):
    # all 256 byte values (= every ordered pair of codes) in one partition (8 whole passes), and
    # spread over 8 partitions of 36 bytes (one pass + a 4-byte tail; 32 padding bytes random)
    b = np.arange(256, dtype=np.uint8)
    pad = rng.integers(0, 256, 32, dtype=np.uint8)
    for nib in NIBBLE:
        assert_same(b[None, :], fmt, 0, nibble_order=nib)
        assert_same(np.concatenate([rng.permutation(b), pad]).reshape(8, 36), fmt, 0, nibble_order=nib)
        # the same 256 bytes in every one of 128 partitions (each partition is processed alike)
        assert_same(np.tile(b, (128, 1)), fmt, 0, nibble_order=nib)


def test_fp6_exhaustive_codes_in_every_slot(rng):
    # Triple (a, b): codes (a, b, (a + b) % 64, (a - b) % 64) for all 64 x 64 (a, b): every one of
    # the 64 codes appears in every one of the 4 slots of a 3-byte triple (64 times each).
    a, b = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    a, b = a.ravel(), b.ravel()
    codes = np.stack([a, b, (a + b) % 64, (a - b) % 64], axis=-1)          # [4096, 4]
    codes = codes[rng.permutation(4096)]
    extra = rng.integers(0, 64, (256, 4))
    for pk in FP6_PACKING:
        # 64 partitions x 64 triples (192 bytes = 4 passes), and 64 x 68 triples (4 passes + 12-byte tail)
        assert_same(pack_fp6(codes.reshape(64, 256), pk), 4, 0, fp6_packing=pk)
        assert_same(pack_fp6(np.concatenate([codes, extra]).reshape(64, 272), pk), 4, 0, fp6_packing=pk)


@pytest.mark.parametrize("fmt,group", sorted(PATHS))
def test_every_tail_length_every_knob(fmt, group, rng):
    # Deterministic cover of every tail: units (of 1 / 3 / 5 words) from 1 to two passes + 1.
    path, words, pass_bytes = PATHS[(fmt, group)]
    units_per_pass = pass_bytes // (4 * words)
    for knobs in all_knobs(fmt, group):
        for units in range(1, 2 * units_per_pass + 2):
            p = int(rng.integers(1, 9))
            src = rng.integers(0, 256, (p, 4 * words * units), dtype=np.uint8)
            assert_same(src, fmt, group, **knobs)


# ---------------------------------------------------------------- 2. hypothesis streams
@st.composite
def dequant_case(draw):
    fmt, group = draw(st.sampled_from(sorted(PATHS)))
    path, words, pass_bytes = PATHS[(fmt, group)]
    units_per_pass = pass_bytes // (4 * words)
    units = draw(st.integers(1, 3 * units_per_pass + 1))       # every tail, up to 3 passes + 1 unit
    parts = draw(st.one_of(st.integers(1, 4), st.integers(1, 128), st.just(128)))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    as_words = draw(st.booleans())
    mode = draw(st.sampled_from(["random", "special-scales"]))
    knobs = dict(nibble_order=draw(st.sampled_from(NIBBLE)), fp6_packing=draw(st.sampled_from(FP6_PACKING)),
                 mx_layout=draw(st.sampled_from(MX_LAYOUT)), mx_scale=draw(st.sampled_from(MX_SCALE)))
    return fmt, group, units * words, parts, seed, as_words, mode, knobs


@kernel_settings(5)
@given(dequant_case())
def test_hypothesis_streams(case):
    fmt, group, nwords, parts, seed, as_words, mode, knobs = case
    r = np.random.default_rng(seed)
    src = r.integers(0, 256, (parts, 4 * nwords), dtype=np.uint8)       # different data per partition
    if mode == "special-scales":
        # bias every byte towards the interesting scale / code values (0x00, 0x7F, 0x80, 0xFE, 0xFF)
        special = np.array([0x00, 0x7F, 0x80, 0xFE, 0xFF, 0x01, 0x6F, 0x88], np.uint8)
        mask = r.random(src.shape) < 0.5
        src[mask] = r.choice(special, int(mask.sum()))
    if as_words:
        src32 = src.view("<u4").astype(np.uint32)
        got32 = assert_same(src32, fmt, group, **knobs)
        assert np.array_equal(got32, dequantize(src, fmt, group, **knobs))   # u32 == its bytes
    else:
        assert_same(src, fmt, group, **knobs)


def test_non_contiguous_sources(rng):
    # strided and Fortran-ordered views dequantize like their contiguous copies
    big = rng.integers(0, 256, (64, 120), dtype=np.uint8)
    views = (big[::3, :60], big[:, ::2], np.asfortranarray(big[:7, :60]))
    for (fmt, group), view in itertools.product(sorted(PATHS), views):
        want = golden.dequantize(np.ascontiguousarray(view), fmt, group)
        assert np.array_equal(assert_same(view, fmt, group), want)
    words = big.view("<u4")[:, ::2]                                   # strided uint32 [64, 15]
    assert np.array_equal(assert_same(words, 4, 0), golden.dequantize(np.ascontiguousarray(words), 4, 0))


# ---------------------------------------------------------------- 3. known answers, by hand
def run1(codes_or_bytes, fmt, group=0, **knobs):
    """One-partition kernel run; also checks the golden agrees."""
    src = np.asarray(codes_or_bytes, np.uint8)[None, :]
    return list(assert_same(src, fmt, group, **knobs)[0])


def test_known_fp4_int4_nf4_fp6_scale_one():
    # FP4 E2M1 0x7 = 0 11 1 = 1.5 x 2^(3-1) = 6.0 = 1.5 x 2^2 -> E5M2 exp 2+15 = 17 = 10001, mant 10
    #   -> 0 10001 10 = 0x46.  Byte 0x07 low-first: element 0 = 0x7 (6.0), element 1 = 0x0 (0.0 -> 0x00).
    assert run1([0x07, 0, 0, 0], 1)[:2] == [0x46, 0x00]
    # high-first: element 0 is the high nibble 0x0, element 1 = 0x7
    assert run1([0x07, 0, 0, 0], 1, nibble_order="high-first")[:2] == [0x00, 0x46]
    # INT4 0x8 = -8 = -1.0 x 2^3 -> E5M2 sign 1, exp 3+15 = 18 = 10010, mant 00 -> 1100 1000 = 0xC8;
    # INT4 0x7 = 7 = 1.75 x 2^2 -> 0 10001 11 = 0x47
    assert run1([0x78, 0, 0, 0], 2)[:2] == [0xC8, 0x47]
    # NF4 code 1 = -0.6961928 = -(11.139 x 2^-4): E4M3 exponent -1 (biased 6 = 0110) has steps of
    # 2^-1 / 8 = 2^-4, 11.139 -> 11 = 1.375 x 8 -> mant 011 -> 1 0110 011 = 0xB3.
    # NF4 code 15 = 1.0 -> 0 0111 000 = 0x38; code 7 = 0.0 -> 0x00.
    assert run1([0xF1, 0x77, 0, 0], 3)[:4] == [0xB3, 0x38, 0x00, 0x00]
    # FP6 E2M3 0x01 = exp 00 (subnormal), mant 001 -> 1/8 x 2^(1-1) = 0.125 = 2^-3
    #   -> E4M3 exp -3+7 = 4 = 0100, mant 000 -> 0x20.
    # FP6 0x1F = 0 11 111 = 1.875 x 2^(3-1) = 7.5 -> E4M3 exp 2+7 = 9 = 1001, mant 111 -> 0x4F.
    # FP6 0x21 = -0.125 -> 0xA0. lsb-first: w = 0x01 | 0x1F<<6 | 0x21<<12 | 0<<18 = 0x0217C1
    #   -> bytes C1 17 02.
    assert run1([0xC1, 0x17, 0x02] + [0] * 9, 4)[:4] == [0x20, 0x4F, 0xA0, 0x00]
    # msb-first: code k is bits [18-6k, 24-6k): w = 0x01<<18 | 0x1F<<12 | 0x21<<6 | 0 = 0x05F840
    #   -> bytes 40 F8 05.
    assert run1([0x40, 0xF8, 0x05] + [0] * 9, 4, fp6_packing="msb-first")[:4] == [0x20, 0x4F, 0xA0, 0x00]


FP4_CODES_0_7 = [0x10, 0x32, 0x54, 0x76]        # low-first bytes: elements 0..7 = codes 0..7


def mx_group(scale, code_bytes, tail_groups=3):
    """One scale-first group followed by ``tail_groups`` zero groups of scale 0x7F (to fill 5 words)."""
    return [scale] + list(code_bytes) + [0x7F, 0, 0, 0, 0] * tail_groups


def test_known_mx_scale_one_and_two():
    # FP4 codes 0..7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6.
    # scale 0x7F = 2^0: E5M2 0 -> 0x00; 0.5 = 2^-1 -> exp 14 = 01110 -> 0x38; 1 -> exp 15 -> 0x3C;
    #   1.5 -> 0x3C | mant 10 = 0x3E; 2 -> exp 16 -> 0x40; 3 = 1.5 x 2 -> 0x42; 4 -> 0x44; 6 -> 0x46
    assert run1(mx_group(0x7F, FP4_CODES_0_7), 1, 8)[:8] == [0x00, 0x38, 0x3C, 0x3E, 0x40, 0x42, 0x44, 0x46]
    # scale 0x80 = 2^1: 0, 1, 2, 3, 4, 6, 8, 12 -> 0x00, 0x3C, 0x40, 0x42, 0x44, 0x46,
    #   8 = 2^3 -> exp 18 = 10010 -> 0x48, 12 = 1.5 x 8 -> 0x4A
    assert run1(mx_group(0x80, FP4_CODES_0_7), 1, 8)[:8] == [0x00, 0x3C, 0x40, 0x42, 0x44, 0x46, 0x48, 0x4A]
    # scale-last: the same group written [4 code bytes][scale]
    src = FP4_CODES_0_7 + [0x80] + [0, 0, 0, 0, 0x7F] * 3
    assert run1(src, 1, 8, mx_layout="scale-last")[:8] == [0x00, 0x3C, 0x40, 0x42, 0x44, 0x46, 0x48, 0x4A]
    # word-block: word 0 = scales of groups 0..3 (0x80, 0x7F, 0x7F, 0x7F), then group 0's codes
    src = [0x80, 0x7F, 0x7F, 0x7F] + FP4_CODES_0_7 + [0] * 12
    assert run1(src, 1, 8, mx_layout="word-block")[:8] == [0x00, 0x3C, 0x40, 0x42, 0x44, 0x46, 0x48, 0x4A]
    # NF4 x2 (scale 0x80): code 0 = -1.0 -> -2.0 = -(1.0 x 2^1) -> E4M3 1 1000 000 = 0xC0;
    #   code 15 = 1.0 -> 2.0 -> 0x40; code 1 = -0.6961928 x 2 = -1.3923856 = -(1.3923856 x 2^0):
    #   mantissa steps 1/8: 3.139 -> 3 -> 1.375 -> 1 0111 011 = 0xBB; code 7 = 0.0 -> 0x00.
    #   Bytes F0 01 77 77 (low-first) = codes 0, 15, 1, 0, 7, 7, 7, 7.
    assert run1(mx_group(0x80, [0xF0, 0x01, 0x77, 0x77]), 3, 8)[:8] == [0xC0, 0x40, 0xBB, 0xC0] + [0x00] * 4


def test_known_mx_underflow():
    # scale 0x00 = 2^-127: FP4 6.0 x 2^-127 is far below half the smallest E5M2 subnormal
    #   (2^-16 / 2 = 2^-17) -> +0 = 0x00; FP4 -6.0 (code 0xF) -> -0 = 0x80
    assert run1(mx_group(0x00, [0xF7, 0x00, 0x00, 0x00]), 1, 8)[:2] == [0x00, 0x80]
    # INT4 -8 (code 0x8) x 2^-127 -> -0 = 0x80; 7 x 2^-127 -> 0x00
    assert run1(mx_group(0x00, [0x78, 0x00, 0x00, 0x00]), 2, 8)[:2] == [0x80, 0x00]
    # scale 0x6F = 2^(111-127) = 2^-16 (the smallest E5M2 subnormal, 0 00000 01):
    #   FP4 0.5 -> 2^-17 = half of 2^-16: tie between 0x00 and 0x01 -> even -> 0x00
    #   1.0 -> 2^-16 -> 0x01; 1.5 -> 1.5 x 2^-16: tie between 0x01 and 0x02 -> even 0x02
    #   2.0 -> 2^-15 -> 0x02; 3.0 -> 0x03; 4.0 -> 2^-14 = smallest normal 0 00001 00 = 0x04;
    #   6.0 -> 1.5 x 2^-14 -> 0 00001 10 = 0x06; 0 -> 0x00
    assert run1(mx_group(0x6F, FP4_CODES_0_7), 1, 8)[:8] == [0x00, 0x00, 0x01, 0x02, 0x02, 0x03, 0x04, 0x06]
    # NF4 / E4M3 at scale 0x74 = 2^-11: smallest E4M3 subnormal is 2^-9; NF4 1.0 -> 2^-11 = 1/4 of it -> 0x00;
    # NF4 -1.0 -> -0 = 0x80; scale 0x76 = 2^-9: NF4 1.0 -> 0x01, -1.0 -> 0x81
    assert run1(mx_group(0x74, [0x0F, 0x77, 0x77, 0x77]), 3, 8)[:2] == [0x00, 0x80]
    assert run1(mx_group(0x76, [0x0F, 0x77, 0x77, 0x77]), 3, 8)[:2] == [0x01, 0x81]


@pytest.mark.parametrize("mx_scale", MX_SCALE)
def test_known_mx_saturation_0xfe(mx_scale):
    # scale 0xFE = 2^127: FP4 0.5 x 2^127 = 2^126 > 57344 -> saturate to E5M2 max 0 11110 11 = 0x7B
    #   (1.75 x 2^15 = 57344); codes 1..7 -> 0x7B; -0.5 .. -6 (codes 9..15) -> 0xFB;
    #   +0 (code 0) -> 0x00, -0 (code 8) -> 0x80
    want = [0x00, 0x7B, 0x7B, 0x7B, 0x7B, 0x7B, 0x7B, 0x7B, 0x80, 0xFB, 0xFB, 0xFB, 0xFB, 0xFB, 0xFB, 0xFB]
    src = mx_group(0xFE, FP4_CODES_0_7, 0) + mx_group(0xFE, [0x98, 0xBA, 0xDC, 0xFE], 0) + \
        mx_group(0x7F, [0, 0, 0, 0], 1)
    assert run1(src, 1, 8, mx_scale=mx_scale)[:16] == want
    # INT4: 1 x 2^127 -> 0x7B, -1 (0xF) -> 0xFB, 0 -> 0x00
    assert run1(mx_group(0xFE, [0xF1, 0x00, 0, 0]), 2, 8, mx_scale=mx_scale)[:4] == [0x7B, 0xFB, 0x00, 0x00]
    # NF4 -> E4M3 max 448 = 0 1111 110 = 0x7E, -448 = 0xFE; NF4 0.0 (code 7) -> 0x00
    assert run1(mx_group(0xFE, [0x0F, 0x77, 0, 0]), 3, 8, mx_scale=mx_scale)[:4] == [0x7E, 0xFE, 0x00, 0x00]


def test_known_mx_scale_0xff():
    # e8m0: s = 0xFF is NaN -> every byte of the group is the canonical NaN (E5M2 0x7E), zeros too;
    # the next group (scale 0x7F) is untouched: 1.0 -> 0x3C
    src = mx_group(0xFF, [0x10, 0x98, 0x00, 0x00], 0) + mx_group(0x7F, [0x02, 0, 0, 0], 2)
    assert run1(src, 1, 8)[:10] == [0x7E] * 8 + [0x3C, 0x00]
    assert run1(src, 2, 8)[:8] == [0x7E] * 8
    # E4M3 canonical NaN 0x7F
    assert run1(src, 3, 8)[:8] == [0x7F] * 8
    # e8m0-nonan: 0xFF = 2^128 -> saturate: FP4 0.5 (code 1) -> 0x7B, -0 (code 8) -> 0x80,
    #   -0.5 (code 9) -> 0xFB, +0 -> 0x00
    assert run1(src, 1, 8, mx_scale="e8m0-nonan")[:8] == [0x00, 0x7B, 0x80, 0xFB, 0x00, 0x00, 0x00, 0x00]
    # NF4 under e8m0-nonan: code 0 = -1.0 -> 0xFE, code 1 -> 0xFE, code 8 (0.0796) -> 0x7E, 9 -> 0x7E,
    #   code 7 = 0.0 -> 0x00
    assert run1(mx_group(0xFF, [0x10, 0x98, 0x77, 0x77]), 3, 8, mx_scale="e8m0-nonan")[:6] == \
        [0xFE, 0xFE, 0x7E, 0x7E, 0x00, 0x00]


def test_known_full_tables_scale_one():
    # every code once, group 0, low-first: byte i = code 2i | code 2i+1 << 4
    b = [0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE]
    # FP4 -> E5M2 (see above for 0..7; 8..15 are the negatives, sign bit 0x80; -0 -> 0x80)
    assert run1(b, 1) == [0x00, 0x38, 0x3C, 0x3E, 0x40, 0x42, 0x44, 0x46,
                          0x80, 0xB8, 0xBC, 0xBE, 0xC0, 0xC2, 0xC4, 0xC6]
    # INT4 -> E5M2: 0..7 = 0, 1 (0x3C), 2 (0x40), 3 = 1.5x2 (0x42), 4 (0x44), 5 = 1.25x4 (0x45),
    #   6 = 1.5x4 (0x46), 7 = 1.75x4 (0x47); 8..15 = -8 (0xC8), -7 (0xC7), -6 (0xC6), -5 (0xC5),
    #   -4 (0xC4), -3 (0xC2), -2 (0xC0), -1 (0xBC)
    assert run1(b, 2) == [0x00, 0x3C, 0x40, 0x42, 0x44, 0x45, 0x46, 0x47,
                          0xC8, 0xC7, 0xC6, 0xC5, 0xC4, 0xC2, 0xC0, 0xBC]
    # NF4 qlora -> E4M3, each rounded by hand in steps of the exponent's ulp (2^(e-3)):
    #   -1.0 -> 1 0111 000 = B8; -0.6962 = -11.14 x 2^-4 -> 11 = 1.375 x 2^-1 -> B3;
    #   -0.5251 = -8.40 x 2^-4 -> 8 = 1.0 x 2^-1 -> B0; -0.3949 = -12.64 x 2^-5 -> 13 = 1.625 x 2^-2 -> AD;
    #   -0.2844 = -9.10 x 2^-5 -> 9 = 1.125 x 2^-2 -> A9; -0.1848 = -11.83 x 2^-6 -> 12 = 1.5 x 2^-3 -> A4;
    #   -0.0911 = -11.65 x 2^-7 -> 12 = 1.5 x 2^-4 -> 9C; 0.0 -> 00;
    #   0.0796 = 10.19 x 2^-7 -> 10 = 1.25 x 2^-4 -> 1A; 0.1609 = 10.30 x 2^-6 -> 10 = 1.25 x 2^-3 -> 22;
    #   0.2461 = 15.75 x 2^-6 -> 16 = 2^-2 -> 28; 0.3379 = 10.81 x 2^-5 -> 11 = 1.375 x 2^-2 -> 2B;
    #   0.4407 = 14.10 x 2^-5 -> 14 = 1.75 x 2^-2 -> 2E; 0.5626 = 9.00 x 2^-4 -> 9 = 1.125 x 2^-1 -> 31;
    #   0.7230 = 11.57 x 2^-4 -> 12 = 1.5 x 2^-1 -> 34; 1.0 -> 38
    assert run1(b, 3) == [0xB8, 0xB3, 0xB0, 0xAD, 0xA9, 0xA4, 0x9C, 0x00,
                          0x1A, 0x22, 0x28, 0x2B, 0x2E, 0x31, 0x34, 0x38]


# ---------------------------------------------------------------- 4. invalid arguments
GOOD = np.zeros((2, 20), np.uint8)     # 5 words: valid for every path

INVALID = [
    ("fmt 0", dict(src=GOOD, fmt=0)),
    ("fmt past the table", dict(src=GOOD, fmt=max(f.code for f in DEQUANT_FORMATS) + 1)),
    ("fmt -1", dict(src=GOOD, fmt=-1)),
    ("fmt name", dict(src=GOOD, fmt="e3m2")),
    ("fmt float", dict(src=GOOD, fmt=1.0)),
    ("group 4", dict(src=GOOD, fmt=1, group_size=4)),
    ("group 16", dict(src=GOOD, fmt=1, group_size=16)),
    ("group 8 with FP6", dict(src=np.zeros((2, 60), np.uint8), fmt=4, group_size=8)),
    ("FP6 4 words", dict(src=np.zeros((2, 16), np.uint8), fmt=4)),
    ("FP6 5 words", dict(src=np.zeros((2, 5), np.uint32), fmt=4)),
    ("MX 3 words", dict(src=np.zeros((2, 12), np.uint8), fmt=1, group_size=8)),
    ("MX 6 words", dict(src=np.zeros((2, 6), np.uint32), fmt=2, group_size=8)),
    ("MX 4 words", dict(src=np.zeros((2, 4), np.uint32), fmt=3, group_size=8)),
    ("zero words", dict(src=np.zeros((2, 0), np.uint8), fmt=1)),
    ("zero partitions", dict(src=np.zeros((0, 8), np.uint8), fmt=1)),
    ("129 partitions", dict(src=np.zeros((129, 8), np.uint8), fmt=1)),
    ("uint16", dict(src=np.zeros((2, 8), np.uint16), fmt=1)),
    ("int8", dict(src=np.zeros((2, 8), np.int8), fmt=1)),
    ("float32", dict(src=np.zeros((2, 2), np.float32), fmt=1)),
    ("list", dict(src=[[0, 0, 0, 0]], fmt=1)),
    ("rank 1", dict(src=np.zeros(8, np.uint8), fmt=1)),
    ("rank 3", dict(src=np.zeros((2, 2, 8), np.uint8), fmt=1)),
    ("uint8 not whole words", dict(src=np.zeros((2, 6), np.uint8), fmt=1)),
    ("uint8 not whole words MX", dict(src=np.zeros((2, 22), np.uint8), fmt=1, group_size=8)),
    ("nibble_order", dict(src=GOOD, fmt=1, nibble_order="middle-first")),
    ("fp6_packing", dict(src=GOOD, fmt=1, fp6_packing="lsb")),
    ("mx_layout", dict(src=GOOD, fmt=1, group_size=8, mx_layout="scale-middle")),
    ("mx_scale", dict(src=GOOD, fmt=1, group_size=8, mx_scale="e5m2")),
    ("nf4_table", dict(src=GOOD, fmt=3, nf4_table="bnb")),
    ("knob not a str", dict(src=GOOD, fmt=1, nibble_order=0)),
]


@pytest.mark.parametrize("name,args", INVALID, ids=[n for n, _ in INVALID])
def test_invalid_arguments_raise_before_compute(name, args, monkeypatch, recorder):
    args = dict(args)
    src, fmt = args.pop("src"), args.pop("fmt")
    # every path's entry is q7emu.kernels.dequant.dequantize and golden.dequantize
    assert registry.get("proc_4bit_non_mx").handler is dequantize
    assert registry.get("proc_4bit_non_mx").golden is golden.dequantize
    assert_rejected_before_compute(monkeypatch, recorder, "proc_4bit_non_mx", q7emu.dequantize, src, fmt, **args)


def test_invalid_path_selection(monkeypatch):
    stub_kernel(monkeypatch, "proc_4bit_non_mx")
    for path, fmt in [("proc_4bit_mx_8", 4), ("proc_6bit_non_mx", 1), ("proc_4bit_non_mx", 4),
                      ("proc_8bit", 1)]:
        with pytest.raises(InvalidArgument):
            dequantize_path(path, np.zeros((1, 60), np.uint8), fmt)
    with pytest.raises(InvalidArgument):
        dequantize_path("proc_4bit_non_mx", np.zeros((1, 6), np.uint8), 1)      # not whole words


# ---------------------------------------------------------------- dequantize_path, fmt spellings
@pytest.mark.parametrize("fmt,group", sorted(PATHS))
def test_dequantize_path_and_fmt_spellings(fmt, group, rng):
    path, words, _ = PATHS[(fmt, group)]
    src = rng.integers(0, 256, (5, 4 * words * 7), dtype=np.uint8)
    want = golden.dequantize(src, fmt, group)
    assert np.array_equal(dequantize_path(path, src, fmt), want)
    name = next(f.short for f in DEQUANT_FORMATS if f.code == fmt)
    for spelling in (q7emu.DequantFmt(fmt), name, name.upper(), np.int64(fmt)):
        assert np.array_equal(dequantize(src, spelling, group), want)
    # knobs pass through dequantize_path
    kn = dict(nibble_order="high-first", mx_layout="scale-last", mx_scale="e8m0-nonan", fp6_packing="msb-first")
    assert np.array_equal(dequantize_path(path, src, fmt, **kn), golden.dequantize(src, fmt, group, **kn))


# ---------------------------------------------------------------- 5. tracing does not change results
@pytest.mark.parametrize("fmt,group", sorted(PATHS))
def test_trace_does_not_change_results(fmt, group, rng, recorder):
    path, words, pass_bytes = PATHS[(fmt, group)]
    # two whole passes plus the shortest tail
    src = rng.integers(0, 256, (3, 2 * pass_bytes + 4 * words), dtype=np.uint8)
    for knobs in all_knobs(fmt, group):
        plain = dequantize(src, fmt, group, **knobs)
        traced = dequantize(src, fmt, group, trace=recorder, **knobs)
        assert np.array_equal(plain, traced)
        assert np.array_equal(plain, golden.dequantize(src, fmt, group, **knobs))
        raw, kernel, kn = recorder.runs[-1]
        assert memoryview(raw).nbytes > 0  # a bytes-like TraceBuffer (zero-copy)
        assert kernel == path
    assert len(recorder.runs) == len(list(all_knobs(fmt, group)))
