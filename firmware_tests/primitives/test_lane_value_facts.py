"""The op-table facts lane value sets rest on (docs/asm.md §9), checked on the primitives themselves:

* ``Op.lanewise``: lane i of the output is a function of lane i of each vec source, so rotating every source's
  lanes rotates the output's (property-based, every such op, every immediate drawn); the same check on a select, not
  lane-wise, fails (the test can fail);
* ``Op.one_byte_lanes``: every lane of the output is a function of one source byte, so each lane the op gives lies
  among the lanes it gives on sources filled with one byte value, over the 256 (every immediate).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from q7emu.primitives import ivp, optable

LANEWISE = [op for op in optable.ALL_OPS if op.lanewise]
ONE_BYTE = [op for op in optable.ALL_OPS if op.one_byte_lanes]
raw = st.binary(min_size=64, max_size=64)


def _imm_values(o: optable.Operand) -> list[int]:
    assert o.lo is not None and o.hi is not None
    return list(o.values) or list(range(o.lo, o.hi + 1, o.step))


def _run(op: optable.Op, sources: dict[str, bytes], imms: dict[str, int]) -> bytes:
    """The op's wrapper on vec sources given as 64 raw bytes each; its one vec output as 64 raw bytes."""
    args = [imms[o.name] if o.kind == optable.IMM else np.frombuffer(sources[o.name], np.dtype(o.dtype)).copy()
            for o in op.args]
    return np.asarray(getattr(ivp, op.mnemonic)(*args)).tobytes()


def _rotated(data: bytes, lane_bytes: int, r: int) -> bytes:
    cut = (r * lane_bytes) % 64
    return data[cut:] + data[:cut]


def test_the_lanewise_ops_are_the_vec_alu_and_shift_ops():
    assert {op.mnemonic for op in LANEWISE} >= {"addnx16", "or2nx8", "sllinx16", "srlnx16", "subn_2x32"}
    assert not any(op.lanewise for op in optable.ALL_OPS if op.family not in (optable.ALU, optable.SHIFT))


def _rotation_holds(op: optable.Op, lane_bytes: int, sources: dict[str, bytes], imms: dict[str, int],
                    r: int) -> bool:
    out = _run(op, sources, imms)
    turned = _run(op, {k: _rotated(v, lane_bytes, r) for k, v in sources.items()}, imms)
    return turned == _rotated(out, lane_bytes, r)


@pytest.mark.parametrize("op", LANEWISE, ids=lambda op: op.mnemonic)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_lanewise_op_commutes_with_rotating_its_lanes(op, data):
    sources = {o.name: data.draw(raw) for o in op.operands if o.kind == optable.VEC and o.role == optable.SRC}
    imms = {o.name: data.draw(st.sampled_from(_imm_values(o))) for o in op.operands if o.kind == optable.IMM}
    r = data.draw(st.integers(1, 64 // op.lanewise - 1))
    assert _rotation_holds(op, op.lanewise, sources, imms, r)


def test_the_rotation_check_fails_on_a_select():
    op = next(o for o in optable.ALL_OPS if o.mnemonic == "selnx16")
    lo = np.arange(32, dtype=np.uint16).tobytes()
    sources = {"hi": lo, "lo": lo, "sel": np.arange(32, dtype=np.uint16).tobytes()}
    assert not _rotation_holds(op, 2, sources, {}, 1)


@pytest.mark.parametrize("op", ONE_BYTE, ids=lambda op: op.mnemonic)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_every_lane_lies_among_those_of_the_one_byte_fillings(op, data):
    imm_ops = [o for o in op.operands if o.kind == optable.IMM]
    vec_srcs = [o.name for o in op.operands if o.kind == optable.VEC and o.role == optable.SRC]
    imms = {o.name: data.draw(st.sampled_from(_imm_values(o))) for o in imm_ops}
    w = op.one_byte_lanes
    filled: set[int] = set()
    for b in range(256):
        out = _run(op, {k: bytes([b]) * 64 for k in vec_srcs}, imms)
        filled |= {int.from_bytes(out[i:i + w], "little") for i in range(0, 64, w)}
    out = _run(op, {k: data.draw(raw) for k in vec_srcs}, imms)
    assert {int.from_bytes(out[i:i + w], "little") for i in range(0, 64, w)} <= filled
