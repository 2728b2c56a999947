"""QuantizeMX (DVE 0xE3) kernel (its program, q7emu/kernels/programs/quantize_mx.s, run by q7emu.kernels.quantize_mx:
translated untraced, interpreted traced) vs the golden model
(q7emu.golden.quantize_mx) -- issue 4 "Done when".

6. exhaustive kernel == golden, bit for bit (data and scales), both FP8 types x emax x (underflow,
   nonfinite) -- every underflow value under nonfinite=sim, and nonfinite=ocp with a wrapped and a clamped
   byte, stored-byte and true divisor -- x scale_layout, on all 65,536 fp16 and all 65,536 bf16 bit
   patterns, each as the largest element of a block of random smaller elements, and as a whole block of
   32 copies; special blocks under every knob combination;
7. hypothesis tiles of every legal shape;
8. known answers computed by hand (arithmetic in the comments);
9. every invalid argument raises InvalidArgument before the kernel is entered.

Reminders for the hand computations: fp32 biased exponent e(1.0) = 127; scale = m - max_exp with
max_exp 8 / 15 (ocp, E4M3 / E5M2) or 7 / 14 (alt); q = x / 2^(scale - 127).
E4M3: bias 7, max 448 = 0 1111 110 = 0x7E. E5M2: bias 15, max 57344 = 0 11110 11 = 0x7B.
"""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from conftest import kernel_settings
from hypothesis import given
from hypothesis import strategies as st
from kernel_checks import assert_rejected_before_compute

import q7emu
from q7emu import golden, registry
from q7emu.kernels.quantize_mx import quantize_mx
from q7emu.model.format_table import FP8_FORMATS
from q7emu.model.knobs import QUANTIZE_MX_KNOBS

BF16 = ml_dtypes.bfloat16
KINDS = {"float16": np.float16, "bfloat16": BF16}
#: exponent-field all-ones pattern (+Inf) of each 16-bit source format
INF_BITS = {"float16": 0x7C00, "bfloat16": 0x7F80}
DSTS = tuple(f.name for f in FP8_FORMATS)
EMAX = QUANTIZE_MX_KNOBS["emax"]
UNDERFLOW = ("wrap", "clamp", "unclamped-data", "unwrapped-data")
NONFINITE = ("sim", "ocp")
#: the (underflow, nonfinite) pairs of the exhaustive test: every underflow value under sim; ocp with the
#: stored-byte divisor (wrap) and the true divisor (unclamped-data)
EXHAUSTIVE_PAIRS = [(u, "sim") for u in UNDERFLOW] + [("wrap", "ocp"), ("unclamped-data", "ocp")]
LAYOUTS = ("auto", "scatter", "compact")

# The golden model's float32 -> float64 upcast of signalling-NaN patterns raises numpy's
# "invalid value encountered in cast" warning; the values are still NaN (checked bit for bit).
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")


def scatter_partitions(p: int) -> list[int]:
    """Scatter rows of a P-partition tile, written out from docs/model.md §2: quadrant q's 4 block-scale
    rows live at partitions 32q..32q+3."""
    return [32 * q + r for q in range(p // 32) for r in range(4)]


def first_mismatch(got: np.ndarray, want: np.ndarray, what: str) -> str:
    idx = tuple(np.argwhere(got != want)[0])
    return (f"{what}: {int((got != want).sum())} of {got.size} differ; first at {idx}: "
            f"kernel 0x{int(got[idx]):X} golden 0x{int(want[idx]):X}")


def assert_same(src, dst, **knobs):
    """Kernel == golden bit for bit (data and scales, shapes and dtypes). Returns (data, scale)."""
    gd, gs = golden.quantize_mx(src, dst, **knobs)
    kd, ks = quantize_mx(src, dst, **knobs)
    assert kd.dtype == np.uint32 and ks.dtype == np.uint8
    assert kd.shape == gd.shape and ks.shape == gs.shape, (kd.shape, gd.shape, ks.shape, gs.shape)
    assert np.array_equal(ks, gs), first_mismatch(ks, gs, f"scale {dst} {knobs}")
    assert np.array_equal(kd, gd), first_mismatch(kd, gd, f"data {dst} {knobs}")
    return kd, ks


def from_bits(bits: np.ndarray, kind: str) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(bits, np.uint16)).view(KINDS[kind])


def blocks_to_tile(blocks: np.ndarray, p: int) -> np.ndarray:
    """uint16 blocks [n, 32] (each row-major 8 partitions x 4 elements) -> tile [p, 4 n / (p/8)]:
    block i goes to row block i % (p/8) (partitions 8r..8r+7), column block i // (p/8)."""
    rb = p // 8
    n = blocks.shape[0]
    assert n % rb == 0
    t = blocks.reshape(n // rb, rb, 8, 4)                       # [c, r, row, col]
    return np.ascontiguousarray(t.transpose(1, 2, 0, 3).reshape(p, (n // rb) * 4))


# ---------------------------------------------------------------- 6. exhaustive: every bit pattern
def pattern_blocks(kind: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(largest, copies): uint16 blocks [65536, 32]. In ``largest`` block i holds pattern i at a
    random position and 31 random elements of strictly smaller magnitude (for a NaN pattern: any
    finite value or ±Inf; for ±0: ±0). Magnitude order of fp16 / bf16 = order of bits & 0x7FFF, and
    the fp32 exponent is monotone in it, so pattern i also owns the block's largest exponent.
    In ``copies`` block i is 32 copies of pattern i."""
    r = np.random.default_rng(seed)
    pats = np.arange(65536, dtype=np.int64)
    mag = pats & 0x7FFF
    inf = INF_BITS[kind]
    lim = np.where(mag > inf, inf + 1, mag)                      # others' magnitudes in [0, lim)
    others = r.integers(0, np.maximum(lim, 1)[:, None], size=(65536, 32))
    others = np.where(lim[:, None] == 0, 0, others)
    blocks = others | (r.integers(0, 2, size=(65536, 32)) << 15)
    blocks[np.arange(65536), r.integers(0, 32, 65536)] = pats
    copies = np.repeat(pats[:, None], 32, axis=1)
    return blocks.astype(np.uint16), copies.astype(np.uint16)


@pytest.fixture(scope="module")
def pattern_tiles():
    """kind -> (largest, copies) tiles [128, 16384]: 16 x 4096 blocks = all 65,536 patterns."""
    out = {}
    for kind, seed in (("float16", 16), ("bfloat16", 1616)):
        largest, copies = pattern_blocks(kind, seed)
        out[kind] = tuple(from_bits(blocks_to_tile(b, 128), kind) for b in (largest, copies))
    return out


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("dst,emax,underflow,nonfinite",
                         [(d, e, u, n) for d, e, (u, n) in itertools.product(DSTS, EMAX, EXHAUSTIVE_PAIRS)])
def test_every_bit_pattern_every_layout(kind, dst, emax, underflow, nonfinite, pattern_tiles):
    rows = scatter_partitions(128)
    knobs = dict(emax=emax, underflow=underflow, nonfinite=nonfinite)
    for tile in pattern_tiles[kind]:
        # The golden once, in the scatter layout; the compact scales are its rows 32q..32q+3 (the
        # golden's own compact layout is compared directly in the hypothesis and special-block
        # tests) -- this keeps the golden, the slow side, to one call per tile.
        gd, gs = golden.quantize_mx(tile, dst, scale_layout="scatter", **knobs)
        assert not gs[np.setdiff1d(np.arange(128), rows)].any()
        for layout in LAYOUTS:                 # P = 128: auto = scatter
            kd, ks = quantize_mx(tile, dst, scale_layout=layout, **knobs)
            want_s = gs[rows] if layout == "compact" else gs
            assert ks.shape == want_s.shape
            assert np.array_equal(ks, want_s), first_mismatch(ks, want_s, f"scale {kind} {dst} {layout}")
            assert np.array_equal(kd, gd), first_mismatch(kd, gd, f"data {kind} {dst} {layout}")


# ---------------------------------------------------------------- 6. special blocks
def special_blocks(kind: str, r: np.random.Generator) -> np.ndarray:
    """uint16 blocks [64, 32]: NaN, ±Inf, ±0, subnormal-only, all-zero and boundary blocks."""
    inf = INF_BITS[kind]
    one = 0x3C00 if kind == "float16" else 0x3F80
    qnan = 0x7E00 if kind == "float16" else 0x7FC0
    snan = inf | 1                                              # lowest NaN payload
    sub_max = 0x03FF if kind == "float16" else 0x007F          # largest subnormal
    max_fin = 0x7BFF if kind == "float16" else 0x7F7F          # largest finite
    min_norm = 0x0400 if kind == "float16" else 0x0080

    def fill(v):
        return np.full(32, v, np.int64)

    def signs(b):
        return b | (r.integers(0, 2, 32) << 15)

    def with_one(base, v, pos=None):
        b = np.array(base, np.int64)
        b[r.integers(0, 32) if pos is None else pos] = v
        return b

    subs = r.integers(1, sub_max + 1, 32)
    blocks = [
        fill(0), fill(0x8000), signs(fill(0)),                               # +0, -0, ±0
        fill(qnan), fill(qnan | 0x8000), fill(snan), fill(snan | 0x8000),    # NaN only
        signs(r.integers(inf + 1, 0x8000, 32)),                              # random NaN payloads
        with_one(signs(fill(one)), qnan), with_one(signs(fill(one)), qnan | 0x8000),
        with_one(fill(inf), qnan), with_one(signs(fill(0)), snan, 31),
        fill(inf), fill(inf | 0x8000), signs(fill(inf)),                     # ±Inf only
        with_one(signs(fill(one)), inf), with_one(signs(fill(one)), inf | 0x8000),
        with_one(signs(r.integers(0, inf, 32)), inf, 0),
        signs(subs), subs, subs | 0x8000,                                    # subnormals only
        fill(1), fill(0x8001), fill(sub_max), signs(fill(sub_max)),
        with_one(signs(fill(0)), 1), with_one(signs(fill(0)), sub_max),      # subnormal + zeros
        signs(r.integers(0, 2, 32)),                                         # 0 / min subnormal
        fill(min_norm), with_one(signs(subs), min_norm),                    # normal boundary
        fill(max_fin), signs(fill(max_fin)), with_one(signs(r.integers(0, max_fin, 32)), max_fin),
        fill(one), signs(fill(one)),
    ]
    blocks = np.array(blocks, np.int64)
    pad = signs(r.integers(0, inf, (64 - len(blocks), 32)))                 # random finite blocks
    return np.concatenate([blocks, pad]).astype(np.uint16)


@pytest.mark.parametrize("kind", list(KINDS))
def test_special_blocks_every_knob(kind):
    r = np.random.default_rng(0xE3)
    blocks = special_blocks(kind, r)
    tiles = [blocks_to_tile(blocks, p) for p in (128, 64, 32)]              # [128, 16], [64, 32], [32, 64]
    # the same blocks again, shuffled, in a tile whose F leaves a chunk tail (F = 20 + 4 = 24)
    tiles.append(blocks_to_tile(np.concatenate([blocks[r.permutation(64)], blocks[:32]]), 128)[:, :24])
    for bits in tiles:
        src = from_bits(bits, kind)
        for dst, emax, uf, nf, lay in itertools.product(DSTS, EMAX, UNDERFLOW, NONFINITE, LAYOUTS):
            assert_same(src, dst, scale_layout=lay, emax=emax, underflow=uf, nonfinite=nf)


# ---------------------------------------------------------------- 7. hypothesis tiles
@st.composite
def qmx_case(draw):
    p = draw(st.sampled_from([32, 64, 96, 128]))
    f = 4 * draw(st.one_of(st.integers(1, 8), st.integers(1, 48)))   # F % 16 in {0, 4, 8, 12}
    kind = draw(st.sampled_from(list(KINDS)))
    mode = draw(st.sampled_from(["bits", "normal", "normal-wide", "bits+special"]))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    knobs = dict(scale_layout=draw(st.sampled_from(LAYOUTS)), emax=draw(st.sampled_from(EMAX)),
                 underflow=draw(st.sampled_from(UNDERFLOW)), nonfinite=draw(st.sampled_from(NONFINITE)))
    return p, f, kind, mode, seed, draw(st.sampled_from(DSTS)), knobs


def random_tile(p, f, kind, mode, seed):
    r = np.random.default_rng(seed)
    if mode.startswith("bits"):
        bits = r.integers(0, 65536, (p, f), dtype=np.uint16)
        if mode == "bits+special":
            inf = INF_BITS[kind]
            special = np.array([0, 0x8000, inf, inf | 0x8000, inf | 1, 1, 0x8001, inf - 1], np.uint16)
            m = r.random((p, f)) < 0.2
            bits[m] = r.choice(special, int(m.sum()))
        return from_bits(bits, kind)
    if mode == "normal":
        return r.standard_normal((p, f)).astype(KINDS[kind])
    # normal values with a per-block magnitude spread over most of the format's range
    lo, hi = (-20, 15) if kind == "float16" else (-120, 120)
    e = r.integers(lo, hi, (p // 8, f // 4))
    e = np.repeat(np.repeat(e, 8, axis=0), 4, axis=1)
    with np.errstate(over="ignore"):                        # fp16 overflow to ±Inf is wanted
        return (r.standard_normal((p, f)) * np.exp2(e)).astype(KINDS[kind])


@kernel_settings(2)
@given(qmx_case())
def test_hypothesis_tiles(case):
    p, f, kind, mode, seed, dst, knobs = case
    assert_same(random_tile(p, f, kind, mode, seed), dst, **knobs)


@pytest.mark.parametrize("p", [32, 64, 96, 128])
def test_every_shape_every_chunk_tail(p):
    # deterministic cover: F = 4 .. 36 (every residue mod 16, with and without whole chunks), all knobs
    # (nonfinite alternating with F)
    r = np.random.default_rng(p)
    for f in range(4, 40, 4):
        kind = ("float16", "bfloat16")[f // 4 % 2]
        nf = NONFINITE[f // 8 % 2]
        src = from_bits(r.integers(0, 65536, (p, f), dtype=np.uint16), kind)
        for dst, emax, uf, lay in itertools.product(DSTS, EMAX, UNDERFLOW, LAYOUTS):
            assert_same(src, dst, scale_layout=lay, emax=emax, underflow=uf, nonfinite=nf)


def test_non_contiguous_sources():
    # strided and Fortran-ordered views quantize like their contiguous copies
    r = np.random.default_rng(11)
    big = from_bits(r.integers(0, 65536, (128, 64), dtype=np.uint16), "bfloat16")
    for view in (big[:, ::2], big[::2, 4:36], np.asfortranarray(big[:32, :12])):
        want = golden.quantize_mx(np.ascontiguousarray(view), "float8_e5m2")
        got = assert_same(view, "float8_e5m2")
        assert all(np.array_equal(a, b) for a, b in zip(got, want))


# ---------------------------------------------------------------- 8. known answers, by hand
def block(values, kind="float16", p=32, f=4):
    """[p, f] tile whose first 8 x 4 block holds ``values`` row-major (missing entries 0), the rest 0."""
    x = np.zeros((p, f), np.float64)
    v = np.asarray(values, np.float64).ravel()
    x[:8, :4].flat[:v.size] = v
    return x.astype(KINDS[kind])


def codes(data, p=0, j=0):
    w = int(data[p, j])
    return [(w >> (8 * k)) & 0xFF for k in range(4)]


@pytest.mark.parametrize("kind", list(KINDS))
def test_known_e4m3(kind):
    # ocp: max 1.0 -> e = 127 -> scale 127 - 8 = 119; q = x * 2^8: 1.0 -> 256 = 2^8 -> exp 8+7 = 15
    #   -> 0 1111 000 = 0x78; 0.5 -> 2^7 -> exp 14 -> 0x70; -1.0 -> 0xF8; 0 -> 0x00
    d, s = assert_same(block([1.0, 0.5, -1.0, 0.0], kind), "float8_e4m3fn")
    assert s.shape == (4, 1) and s[0, 0] == 119 and codes(d) == [0x78, 0x70, 0xF8, 0x00]
    assert d[0, 0] == 0x00F87078                       # element 4j+k in byte k
    # the other three blocks of the P = 32 tile are all zero: m = 0, 0 - 8 wraps to 248 (uint8)
    assert list(s[1:, 0]) == [248, 248, 248]
    # max 480 = 1.875 * 2^8 -> e = 135 -> scale 127 -> q = x: 480 > 448 clips to 448 = 0x7E;
    #   -480 -> 0xFE; 240 = 1.875 * 2^7 -> exp 14, mant 111 -> 0 1110 111 = 0x77
    d, s = assert_same(block([480.0, -480.0, 240.0, 1.0], kind), "float8_e4m3fn")
    # 1.0 -> q = 1.0 -> exp 7 -> 0 0111 000 = 0x38
    assert s[0, 0] == 127 and codes(d) == [0x7E, 0xFE, 0x77, 0x38]
    # all-zero block: 248 (wrap) / 0 (clamp); every code 0x00
    for uf, want in (("wrap", 248), ("clamp", 0)):
        d, s = assert_same(block([], kind), "float8_e4m3fn", underflow=uf)
        assert np.all(s == want) and not d.any()
    # alt (max_exp 7): max 1.0 -> scale 120; q = x * 2^7: 1.0 -> 128 = 2^7 -> exp 14 -> 0x70;
    #   0.5 -> 2^6 -> exp 13 -> 0 1101 000 = 0x68; all-zero blocks: 0 - 7 -> 249 (wrap)
    d, s = assert_same(block([1.0, 0.5, -1.0, 0.0], kind), "float8_e4m3fn", emax="alt")
    assert s[0, 0] == 120 and codes(d) == [0x70, 0x68, 0xF0, 0x00] and list(s[1:, 0]) == [249] * 3
    d, s = assert_same(block([], kind), "float8_e4m3fn", emax="alt", underflow="clamp")
    assert np.all(s == 0)


@pytest.mark.parametrize("kind", list(KINDS))
def test_known_e5m2(kind):
    e5 = "float8_e5m2"
    # ocp (max_exp 15): max 1.0 -> scale 127 - 15 = 112; q = x * 2^15: 1.0 -> exp 15+15 = 30
    #   -> 0 11110 00 = 0x78; 0.5 -> 2^14 -> exp 29 -> 0 11101 00 = 0x74; -1.0 -> 0xF8
    d, s = assert_same(block([1.0, 0.5, -1.0, 0.0], kind), e5)
    assert s[0, 0] == 112 and codes(d) == [0x78, 0x74, 0xF8, 0x00]
    # all-zero blocks: 0 - 15 wraps to 241
    assert list(s[1:, 0]) == [241] * 3
    # alt (max_exp 14): scale 113; q = x * 2^14: 1.0 -> 0x74; 0.5 -> 2^13 -> exp 28 -> 0 11100 00 = 0x70;
    #   all-zero: 0 - 14 -> 242
    d, s = assert_same(block([1.0, 0.5, -1.0, 0.0], kind), e5, emax="alt")
    assert s[0, 0] == 113 and codes(d) == [0x74, 0x70, 0xF4, 0x00] and list(s[1:, 0]) == [242] * 3
    # max 480 = 1.875 * 2^8 -> e = 135 -> scale 120 -> q = x * 2^7: 480 -> 61440 > 57344 -> 0x7B;
    #   -480 -> 0xFB; 448 -> 57344 exactly = 1.75 * 2^15 -> 0x7B; 240 -> 30720 = 1.875 * 2^14: halfway
    #   between 1.75 * 2^14 (mant 11, odd) and 2^15 (mant 00, even) -> RNE -> 2^15 = 0x78
    d, s = assert_same(block([480.0, -480.0, 448.0, 240.0], kind), e5)
    assert s[0, 0] == 120 and codes(d) == [0x7B, 0xFB, 0x7B, 0x78]
    for uf, want in (("wrap", 241), ("clamp", 0)):
        d, s = assert_same(block([], kind), e5, underflow=uf)
        assert np.all(s == want) and not d.any()


@pytest.mark.parametrize("kind", list(KINDS))
def test_known_nan_inf(kind):
    inf, one = INF_BITS[kind], (0x3C00 if kind == "float16" else 0x3F80)
    qnan = 0x7E00 if kind == "float16" else 0x7FC0
    bits = np.zeros((32, 4), np.uint16)
    bits[0] = [qnan, qnan | 0x8000, one, one | 0x8000]
    # NaN: e = 255 -> E4M3 ocp scale 255 - 8 = 247; NaN -> 0x7F, -NaN -> 0xFF (sign kept);
    #   ±1.0 -> ±2^(127-247) = ±2^-120, far below the smallest subnormal 2^-9 -> 0x00 / 0x80
    d, s = assert_same(from_bits(bits, kind), "float8_e4m3fn")
    assert s[0, 0] == 247 and codes(d) == [0x7F, 0xFF, 0x00, 0x80]
    # E5M2: scale 255 - 15 = 240; NaN -> 0x7E / 0xFE
    d, s = assert_same(from_bits(bits, kind), "float8_e5m2")
    assert s[0, 0] == 240 and codes(d) == [0x7E, 0xFE, 0x00, 0x80]
    # ±Inf: e = 255 -> scale 247, clip to ±448 -> 0x7E / 0xFE; E5M2 ±57344 -> 0x7B / 0xFB
    bits[0] = [inf, inf | 0x8000, one, 0]
    d, s = assert_same(from_bits(bits, kind), "float8_e4m3fn")
    assert s[0, 0] == 247 and codes(d) == [0x7E, 0xFE, 0x00, 0x00]
    d, s = assert_same(from_bits(bits, kind), "float8_e5m2")
    assert s[0, 0] == 240 and codes(d) == [0x7B, 0xFB, 0x00, 0x00]


def test_known_subnormal_sources():
    # fp16 0x0001 = 2^-24 -> fp32 normal, e = 127 - 24 = 103 -> E4M3 ocp scale 95;
    #   q = 2^-24 * 2^(127-95) = 2^8 -> 0x78
    bits = np.zeros((32, 4), np.uint16)
    bits[0, 0] = 0x0001
    d, s = assert_same(from_bits(bits, "float16"), "float8_e4m3fn")
    assert s[0, 0] == 95 and codes(d)[0] == 0x78
    # bf16 subnormals stay fp32 subnormals: e = 0. 0x0040 = 2^-127, 0x0001 = 2^-133,
    #   0x007F = 127/128 * 2^-126.
    bits[0, :3] = [0x0040, 0x0001, 0x007F]
    # wrap: scale 248 -> q = x * 2^(127-248): all far below 2^-9 -> 0x00
    d, s = assert_same(from_bits(bits, "bfloat16"), "float8_e4m3fn")
    assert s[0, 0] == 248 and codes(d) == [0, 0, 0, 0]
    # clamp: scale 0 -> q = x * 2^127: 2^-127 -> 1.0 -> 0 0111 000 = 0x38; 2^-133 -> 2^-6 = smallest
    #   normal 0 0001 000 = 0x08; 127/128 * 2 = 1.984375 -> 15.875 eighths above 1 -> rounds up to 2.0
    #   -> 0 1000 000 = 0x40
    d, s = assert_same(from_bits(bits, "bfloat16"), "float8_e4m3fn", underflow="clamp")
    assert s[0, 0] == 0 and codes(d) == [0x38, 0x08, 0x40, 0x00]


def test_known_true_divisor_issue_examples():
    # Issue 16's examples. bf16 0x0001 = 0 00000000 0000001 = 2^-7 * 2^-126 = 2^-133; as fp32 it stays a
    # subnormal (bits 0x00010000), so its exponent field is 0 and a block of 32 of them has m = 0.
    bits = np.zeros((32, 4), np.uint16)
    bits[:8, :4] = 0x0001                                      # block 0; blocks 1..3 all zero (m = 0)
    src = from_bits(bits, "bfloat16")
    e4 = "float8_e4m3fn"
    # ocp (max_exp 8): m - max_exp = -8.
    #   clamp: byte clip(-8, 0, 255) = 0, divisor 2^(0-127): q = 2^-133 * 2^127 = 2^-6 = E4M3 min normal
    #     (field -6 + 7 = 1) -> 0 0001 000 = 0x08
    #   unclamped-data: byte 0, divisor the true 2^(-8-127) = 2^-135: q = 2^2 = 4 -> field 2 + 7 = 9
    #     -> 0 1001 000 = 0x48
    #   wrap: byte -8 mod 256 = 248, divisor 2^121: q = 2^-254 -> 0x00
    #   unwrapped-data: byte 248, divisor 2^-135: q = 4 -> 0x48
    for uf, byte, code in (("clamp", 0, 0x08), ("unclamped-data", 0, 0x48), ("wrap", 248, 0x00),
                           ("unwrapped-data", 248, 0x48)):
        d, s = assert_same(src, e4, underflow=uf)
        assert s[0, 0] == byte and codes(d) == [code] * 4 and codes(d, 7) == [code] * 4, uf
        assert np.all(s[1:] == byte) and not d[8:].any()       # all-zero blocks: same byte, data 0
    # alt (max_exp 7): m - max_exp = -7.
    #   wrap: byte 249, divisor 2^122: q = 2^-255 -> 0x00
    #   unwrapped-data: byte 249, divisor 2^(-7-127) = 2^-134: q = 2^1 -> field 8 -> 0 1000 000 = 0x40
    for uf, byte, code in (("wrap", 249, 0x00), ("unwrapped-data", 249, 0x40), ("clamp", 0, 0x08),
                           ("unclamped-data", 0, 0x40)):
        d, s = assert_same(src, e4, emax="alt", underflow=uf)
        assert s[0, 0] == byte and codes(d) == [code] * 4, uf


def test_known_true_divisor_e5m2_and_mixed_fields():
    # bf16 block: 2^-126 (0x0080, field 1), -2^-133 (0x8001, field 0), 3 * 2^-133 (0x0003), 0 -> m = 1.
    # E5M2 ocp (max_exp 15): m - max_exp = -14.
    #   unclamped-data / unwrapped-data divide by 2^(-14-127) = 2^-141:
    #     2^-126 -> 2^15 -> field 30 -> 0 11110 00 = 0x78; -2^-133 -> -2^8 -> field 23 -> 1 10111 00 = 0xDC;
    #     3 * 2^-133 -> 3 * 2^8 = 1.5 * 2^9 -> field 24, mant 10 -> 0 11000 10 = 0x62
    #   clamp divides by 2^-127: 2^-126 -> 2 -> field 16 -> 0x40; -2^-133 -> -2^-6 -> field 9 -> 1 01001 00
    #     = 0xA4; 3 * 2^-133 -> 1.5 * 2^-5 -> field 10, mant 10 -> 0 01010 10 = 0x2A
    #   wrap: byte -14 mod 256 = 242, divisor 2^115 -> all far below 2^-16 -> 0x00, -0 -> 0x80
    bits = np.zeros((32, 4), np.uint16)
    bits[0] = [0x0080, 0x8001, 0x0003, 0x0000]
    src = from_bits(bits, "bfloat16")
    e5 = "float8_e5m2"
    for uf, byte, want in (("unclamped-data", 0, [0x78, 0xDC, 0x62, 0]), ("unwrapped-data", 242, [0x78, 0xDC, 0x62, 0]),
                           ("clamp", 0, [0x40, 0xA4, 0x2A, 0]), ("wrap", 242, [0, 0x80, 0, 0])):
        d, s = assert_same(src, e5, underflow=uf)
        assert s[0, 0] == byte and codes(d) == want, uf


def test_known_wrap_ff_byte_true_divisor():
    # bf16 2^-120 = 0x0380 (field 7 = max_exp - 1 for E4M3 ocp): byte (7 - 8) mod 256 = 255 = 0xFF under
    #   wrap and unwrapped-data. wrap divides by 2^(255-127) = 2^128: q = 2^-248 -> 0x00;
    #   unwrapped-data divides by 2^(-1-127) = 2^-128: q = 2^8 = 256 -> field 15 -> 0 1111 000 = 0x78.
    bits = np.zeros((32, 4), np.uint16)
    bits[3, 2] = 0x0380
    src = from_bits(bits, "bfloat16")
    for uf, code in (("wrap", 0x00), ("unwrapped-data", 0x78)):
        d, s = assert_same(src, "float8_e4m3fn", underflow=uf)
        assert s[0, 0] == 0xFF and codes(d, 3) == [0, 0, code, 0], uf


@pytest.mark.parametrize("kind", list(KINDS))
def test_known_nonfinite(kind):
    inf, one = INF_BITS[kind], (0x3C00 if kind == "float16" else 0x3F80)
    qnan = 0x7E00 if kind == "float16" else 0x7FC0
    # Issue 16's example: a block of 32 x +Inf to E4M3. fp32 +Inf has field 255, so m = 255:
    #   sim: byte 255 - 8 = 247, Inf clips to 448 = 0 1111 110 = 0x7E;
    #   ocp: byte 0xFF and every element NaN, E4M3 0x7F (positive)
    bits = np.zeros((32, 4), np.uint16)
    bits[:8, :4] = inf
    bits[8, :] = one                                           # block 1: max 1.0, not touched by ocp
    src = from_bits(bits, kind)
    d, s = assert_same(src, "float8_e4m3fn", nonfinite="sim")
    assert s[0, 0] == 247 and all(codes(d, r) == [0x7E] * 4 for r in range(8))
    d, s = assert_same(src, "float8_e4m3fn", nonfinite="ocp")
    assert s[0, 0] == 0xFF and all(codes(d, r) == [0x7F] * 4 for r in range(8))
    # block 1 under both: max 1.0 -> byte 127 - 8 = 119, 1.0 -> 2^8 -> 0x78 (ocp changes nothing there)
    assert s[1, 0] == 119 and codes(d, 8) == [0x78] * 4
    # a mixed block: -NaN, -Inf, -1.0, 0. sim: m = 255 -> 247 (E4M3) / 240 (E5M2); -NaN keeps its sign
    #   (0xFF / 0xFE), -Inf clips to -max (0xFE / 0xFB), -1.0 * 2^-120 -> -0 (0x80), 0 -> 0x00.
    #   ocp: byte 0xFF; all four the positive NaN (0x7F / 0x7E): the sign is not kept
    bits[:8, :4] = 0
    bits[0] = [qnan | 0x8000, inf | 0x8000, one | 0x8000, 0]
    src = from_bits(bits, kind)
    for dst, sim_byte, sim_codes, nan in (("float8_e4m3fn", 247, [0xFF, 0xFE, 0x80, 0x00], 0x7F),
                                          ("float8_e5m2", 240, [0xFE, 0xFB, 0x80, 0x00], 0x7E)):
        d, s = assert_same(src, dst, nonfinite="sim")
        assert s[0, 0] == sim_byte and codes(d) == sim_codes
        for uf in UNDERFLOW:                                   # m = 255 >= max_exp: underflow plays no part
            d, s = assert_same(src, dst, nonfinite="ocp", underflow=uf)
            assert s[0, 0] == 0xFF and all(codes(d, r) == [nan] * 4 for r in range(8)), (dst, uf)


@pytest.mark.parametrize("p", [32, 64, 96, 128])
def test_known_scatter_placement(p):
    # row block i (partitions 8i..8i+7) holds max 2^i (i = 0..P/8-1) -> E4M3 ocp scale 127 + i - 8
    x = np.zeros((p, 8), np.float32)
    for i in range(p // 8):
        x[8 * i + 3, 1] = 2.0 ** i
        x[8 * i, 4] = -(2.0 ** (i - 3))                         # column block 1: scale 116 + i
    src = x.astype(np.float16)
    want = np.array([[119 + i, 116 + i] for i in range(p // 8)], np.uint8)
    rows = {32: [0, 1, 2, 3], 64: [0, 1, 2, 3, 32, 33, 34, 35],
            96: [0, 1, 2, 3, 32, 33, 34, 35, 64, 65, 66, 67],
            128: [0, 1, 2, 3, 32, 33, 34, 35, 64, 65, 66, 67, 96, 97, 98, 99]}[p]
    d, s = assert_same(src, "float8_e4m3fn", scale_layout="scatter")
    assert s.shape == (p, 2) and np.array_equal(s[rows], want)
    assert not np.delete(s, rows, axis=0).any()                # other rows untouched (zero)
    _, s = assert_same(src, "float8_e4m3fn", scale_layout="compact")
    assert np.array_equal(s, want)
    _, s = assert_same(src, "float8_e4m3fn")                   # auto: compact at P = 32 only
    assert s.shape == ((p // 8, 2) if p == 32 else (p, 2))
    # every 2^i lands on 2^8 -> 0x78 in byte 1 of word 0 of partition 8i+3;
    # -2^(i-3) over scale 116 + i -> -2^8 -> 0xF8 in byte 0 of word 1 of partition 8i
    for i in range(p // 8):
        assert codes(d, 8 * i + 3, 0) == [0, 0x78, 0, 0] and codes(d, 8 * i, 1) == [0xF8, 0, 0, 0]


# ---------------------------------------------------------------- 9. invalid arguments
F16 = np.zeros((32, 8), np.float16)
INVALID = [
    ("P 8", dict(src=np.zeros((8, 8), np.float16))),
    ("P 16", dict(src=np.zeros((16, 8), np.float16))),
    ("P 0", dict(src=np.zeros((0, 8), np.float16))),
    ("P 33", dict(src=np.zeros((33, 8), np.float16))),
    ("P 40", dict(src=np.zeros((40, 8), BF16))),
    ("P 160", dict(src=np.zeros((160, 8), np.float16))),
    ("P 256", dict(src=np.zeros((256, 4), BF16))),
    ("F 0", dict(src=np.zeros((32, 0), np.float16))),
    ("F 2", dict(src=np.zeros((32, 2), np.float16))),
    ("F 6", dict(src=np.zeros((64, 6), BF16))),
    ("F 17", dict(src=np.zeros((128, 17), np.float16))),
    ("float32", dict(src=np.zeros((32, 8), np.float32))),
    ("float64", dict(src=np.zeros((32, 8), np.float64))),
    ("int16", dict(src=np.zeros((32, 8), np.int16))),
    ("uint16", dict(src=np.zeros((32, 8), np.uint16))),
    ("int32", dict(src=np.zeros((32, 8), np.int32))),
    ("fp8 input", dict(src=np.zeros((32, 8), ml_dtypes.float8_e4m3fn))),
    ("list", dict(src=[[0.0] * 4] * 32)),
    ("rank 1", dict(src=np.zeros(32, np.float16))),
    ("rank 3", dict(src=np.zeros((32, 4, 4), np.float16))),
    ("dst float4_e2m1fn", dict(src=F16, dst="float4_e2m1fn")),
    ("dst float32", dict(src=F16, dst="float32")),
    ("dst e4m3 (no fn)", dict(src=F16, dst="float8_e4m3")),
    ("emax", dict(src=F16, emax="ieee")),
    ("underflow", dict(src=F16, underflow="saturate")),
    ("underflow unclamped", dict(src=F16, underflow="unclamped")),
    ("nonfinite", dict(src=F16, nonfinite="ieee")),
    ("nonfinite not a str", dict(src=F16, nonfinite=1)),
    ("scale_layout", dict(src=F16, scale_layout="swizzle")),
    ("knob not a str", dict(src=F16, emax=None)),
]


@pytest.mark.parametrize("name,args", INVALID, ids=[n for n, _ in INVALID])
def test_invalid_arguments_raise_before_compute(name, args, monkeypatch, recorder):
    args = dict(args)
    src, dst = args.pop("src"), args.pop("dst", "float8_e4m3fn")
    assert registry.get("quantize_mx").handler is quantize_mx
    assert registry.get("quantize_mx").golden is golden.quantize_mx
    assert_rejected_before_compute(monkeypatch, recorder, "quantize_mx", q7emu.quantize_mx, src, dst, **args)


# ---------------------------------------------------------------- tracing does not change results
def test_trace_does_not_change_results(recorder):
    r = np.random.default_rng(7)
    src = from_bits(r.integers(0, 65536, (64, 20), dtype=np.uint16), "bfloat16")
    for dst in DSTS:
        plain = quantize_mx(src, dst)
        traced = quantize_mx(src, dst, trace=recorder)
        assert all(np.array_equal(a, b) for a, b in zip(plain, traced))
        raw, kernel, _ = recorder.runs[-1]
        assert memoryview(raw).nbytes > 0  # a bytes-like TraceBuffer (zero-copy)
