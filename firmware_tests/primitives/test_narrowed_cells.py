"""Narrowed accumulators (docs/asm.md §9): every op whose op-table row narrows (optable.Op.narrows), run on 16- or
32-bit cells, gives the low 16 / 32 bits of the lanes its wide form gives (48-bit MACs; the 96-bit product); a
bit-window pack gives the wide pack's lanes whenever its window (bits sh .. sh + 15) fits the cells, a whole-lane
pack whenever every lane fits the cells as a signed number (value ranges). Property-based over lanes, weights, taps
and shifts; the one-tap weights (one non-zero 16-bit field: the MX scale MACs' case) are drawn on purpose."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from q7emu.errors import InvalidArgument
from q7emu.primitives import _ivp, ivp, optable

MACS = [op for op in optable.ALL_OPS if op.narrows == optable.CARRY_UP]
PACKS = [op for op in optable.ALL_OPS if op.narrows == optable.BIT_WINDOW]
WHOLE_LANE_PACKS = [op for op in optable.ALL_OPS if op.narrows == optable.WHOLE_LANE]

u16_lanes = st.lists(st.integers(0, 0xFFFF), min_size=32, max_size=32)
lanes48 = st.lists(st.integers(-(1 << 47), (1 << 47) - 1), min_size=32, max_size=32)
weights = st.one_of(st.integers(0, (1 << 64) - 1),
                    st.tuples(st.integers(0, 3), st.integers(0, 0xFFFF)).map(lambda t: t[1] << (16 * t[0])))


def _vec(lanes: list[int], dtype: str) -> np.ndarray:
    return np.array(lanes, np.uint16).view(dtype)


@pytest.mark.parametrize("width", [16, 32])
@pytest.mark.parametrize("op", MACS, ids=lambda op: op.mnemonic)
@settings(max_examples=60, deadline=None)
@given(acc=lanes48, a=u16_lanes, b=u16_lanes, pr=weights)
def test_a_narrowed_mac_is_the_low_bits_of_the_wide_one(op, width, acc, a, b, pr):
    vecs = [o for o in op.operands if o.kind == optable.VEC]          # the C operands' order: (va, vb) / (hi, lo)
    values = {vecs[0].name: _vec(a, vecs[0].dtype), vecs[1].name: _vec(b, vecs[1].dtype), "pr": pr,
              "wv": np.array(acc, np.int64)}
    wide = getattr(ivp, op.mnemonic)(*(values[o.name] for o in op.args))
    cells, _ = _ivp._narrowed(op.mnemonic, width, acc, _vec(a, "uint16"), _vec(b, "uint16"), pr)
    assert len(wide) in (16, 32)                # a 96-bit op's 16 lanes are the first 16 cells
    assert cells[:len(wide)] == [int(x) % (1 << width) for x in wide]


@pytest.mark.parametrize("width", [16, 32])
@pytest.mark.parametrize("op", PACKS, ids=lambda op: op.mnemonic)
@settings(max_examples=60, deadline=None)
@given(acc=lanes48, data=st.data())
def test_a_narrowed_pack_is_the_wide_one_when_its_window_fits(op, width, acc, data):
    sh = data.draw(st.integers(0, width - 16))
    wide = getattr(ivp, op.mnemonic)(np.array(acc, np.int64), sh)
    _, out = _ivp._narrowed(op.mnemonic, width, acc, _vec([0] * 32, "uint16"), _vec([0] * 32, "uint16"), 0, sh)
    assert np.array_equal(out, wide)


@pytest.mark.parametrize("width", [16, 32])
@pytest.mark.parametrize("op", WHOLE_LANE_PACKS, ids=lambda op: op.mnemonic)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_a_narrowed_whole_lane_pack_is_the_wide_one_when_every_lane_fits(op, width, data):
    lanes = data.draw(st.lists(st.one_of(st.integers(-(1 << (width - 1)), (1 << (width - 1)) - 1),
                                         st.sampled_from([-(1 << (width - 1)), (1 << (width - 1)) - 1, 0, -1])),
                               min_size=16, max_size=16))
    sh = data.draw(st.integers(0, 40))          # clamped to 32 by both forms
    wide = getattr(ivp, op.mnemonic)(lanes, sh)
    cells = [x % (1 << width) for x in lanes] + [0] * 16
    _, out = _ivp._narrowed(op.mnemonic, width, cells, _vec([0] * 32, "uint16"), _vec([0] * 32, "uint16"), 0, sh)
    assert np.array_equal(out.view(wide.dtype), wide)


def test_a_lane_outside_the_cells_is_not_the_wide_whole_lane_pack():
    # the analysis' precondition is real: 2^15 in a 16-bit cell reads back as -2^15 (and 2^31 in a 32-bit one)
    for width in (16, 32):
        lanes = [1 << (width - 1)] * 16
        cells = [x % (1 << width) for x in lanes] + [0] * 16
        _, out = _ivp._narrowed("packvrn_2x96", width, cells, _vec([0] * 32, "uint16"), _vec([0] * 32, "uint16"))
        assert not np.array_equal(out.view(np.int32), ivp.packvrn_2x96(lanes, 0))


def test_a_window_above_the_cells_is_not_the_wide_pack():
    # the analysis' precondition is real: bits 16.. are not in a 16-bit cell, so a shift of 1 reads a zero there
    acc = [0x1_8000] * 32
    _, out = _ivp._narrowed("packvrnrnx48", 16, acc, _vec([0] * 32, "uint16"), _vec([0] * 32, "uint16"), 0, 1)
    assert not np.array_equal(out, ivp.packvrnrnx48(np.array(acc, np.int64), 1))


def test_only_a_narrowing_op_takes_narrowed_cells():
    with pytest.raises(InvalidArgument, match="narrows"):
        _ivp._narrowed("packvrnx48", 16, [0] * 32, _vec([0] * 32, "uint16"), _vec([0] * 32, "uint16"))
    with pytest.raises(InvalidArgument, match="16 or 32"):
        _ivp._narrowed("packvrnrnx48", 24, [0] * 32, _vec([0] * 32, "uint16"), _vec([0] * 32, "uint16"))
