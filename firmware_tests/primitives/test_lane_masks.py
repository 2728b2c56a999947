"""Lane-mask predicates (docs/asm.md §9): every op whose op-table row takes a lane mask (optable.Op.lane_mask), run
with that operand as a lane mask (64 bytes, byte j all ones where vbool bit j is set), gives the same predicate and
the same vec output as with the vbool. Property-based over lanes and every bit of the vbool (a lane's upper bits
too, which the merges ignore), with fp16 / fp32 specials drawn on purpose; the fp16 compare exhaustively over its
first operand."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from q7emu.errors import InvalidArgument
from q7emu.primitives import _ivp, optable

OPS = [op for op in optable.ALL_OPS if op.lane_mask]
ALL_ONES = (1 << 64) - 1

#: fp16 and fp32 patterns a compare must order right: zeros of both signs, the smallest subnormal, ones, the
#: largest finite, infinities, a quiet and a signalling NaN of both signs
F16_SPECIAL = [0x0000, 0x8000, 0x0001, 0x8001, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00,
               0x7C01, 0xFC01]
F32_SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000,
               0x7FC00000, 0xFFC00000, 0x7F800001]


def _u16_lanes(specials: list[int]) -> st.SearchStrategy[list[int]]:
    return st.lists(st.one_of(st.integers(0, 0xFFFF), st.sampled_from(specials)), min_size=32, max_size=32)


def _f32_as_u16(words: list[int]) -> list[int]:
    return list(np.array(words, np.uint32).view(np.uint16))


u16 = _u16_lanes([x for w in F32_SPECIAL for x in (w & 0xFFFF, w >> 16)] + F16_SPECIAL)
f32 = st.lists(st.one_of(st.integers(0, 0xFFFFFFFF), st.sampled_from(F32_SPECIAL)), min_size=16,
               max_size=16).map(_f32_as_u16)
vbools = st.one_of(st.integers(0, ALL_ONES), st.just(ALL_ONES), st.just(0))


def _mask_of(bits: int) -> np.ndarray:
    """The lane mask of a vbool: byte j 0xFF where bit j is set."""
    return np.array([0xFF if bits >> j & 1 else 0 for j in range(64)], np.uint8)


def test_the_hook_runs_every_op_that_takes_a_lane_mask():
    assert set(_ivp._LANE_MASK_OPS) == {op.mnemonic for op in OPS}
    assert all(n in {o.name for o in op.operands if o.kind == optable.VBOOL} for op in OPS for n in op.lane_mask)
    with pytest.raises(InvalidArgument, match="lane mask"):
        _ivp._lane_mask("addnx16", np.zeros(32, np.uint16), np.zeros(32, np.uint16), 0)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.mnemonic)
@settings(max_examples=150, deadline=None)
@given(data=st.data(), vb=vbools, vbp=vbools)
def test_an_op_gives_the_same_predicate_and_lanes_on_a_lane_mask(op, data, vb, vbp):
    lanes = f32 if "f32" in op.mnemonic else u16
    a, b = np.array(data.draw(lanes), np.uint16), np.array(data.draw(lanes), np.uint16)
    (bits, vec_bits), (mask, vec_mask) = _ivp._lane_mask(op.mnemonic, a, b, vb, vbp)
    assert np.array_equal(mask, _mask_of(bits))
    assert np.array_equal(vec_mask, vec_bits)


@pytest.mark.parametrize("vbp", [ALL_ONES, 0x5555_0000_FFFF_3333])
def test_the_fp16_compare_on_a_lane_mask_over_every_first_operand(vbp):
    # every fp16 pattern as a, against the specials and a spread of others as b (each b value in every lane position)
    others = np.array(F16_SPECIAL + list(range(0x0400, 0x10000, 0x0FFF)), np.uint16)
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).reshape(-1, 32)
    for i, a in enumerate(every):
        b = np.roll(np.resize(others, 32), i)
        (bits, _), (mask, _) = _ivp._lane_mask("oltnxf16t", a, b, 0x0123_4567_89AB_CDEF, vbp)
        assert np.array_equal(mask, _mask_of(bits)), i
