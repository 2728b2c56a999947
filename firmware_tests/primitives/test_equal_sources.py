"""The op table's ``equal_sources`` facts (docs/asm.md §9, known predicates), checked on the primitives themselves:
an integer compare of a register with itself gives the stated vbool whatever its lanes hold, and the same compare
of two registers does depend on the lanes (so the fact says something about the op, not about any compare)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from q7emu import ivp
from q7emu.primitives import optable as T

FACTS = [op for op in T.OPS if op.equal_sources]


def _lanes(op: T.Op, data: st.DataObject) -> np.ndarray:
    src = next(o for o in op.operands if o.kind == T.VEC and o.role == T.SRC)
    dtype = np.dtype(src.dtype)
    raw = data.draw(st.binary(min_size=64, max_size=64))
    return np.frombuffer(raw, dtype).copy()


def test_the_facts_are_the_integer_compares():
    assert sorted(op.mnemonic for op in FACTS) == sorted(
        ["eq2nx8", "ltu2nx8", "eqnx16", "neqnx16", "ltnx16", "lenx16", "ltunx16", "eqn_2x32", "ltn_2x32"])
    for op in FACTS:
        kinds = [(o.kind, o.role) for o in op.operands]
        assert kinds == [(T.VBOOL, T.DST), (T.VEC, T.SRC), (T.VEC, T.SRC)], op.mnemonic
        assert op.equal_sources in (T.ALL_TRUE, T.ALL_FALSE)


@pytest.mark.parametrize("op", FACTS, ids=lambda op: op.mnemonic)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_compare_of_a_register_with_itself_is_the_fact(op, data):
    x = _lanes(op, data)
    got = getattr(ivp, op.mnemonic)(x, x.copy())
    assert got.dtype == np.bool_ and bool(got.all() if op.equal_sources == T.ALL_TRUE else not got.any())


@pytest.mark.parametrize("op", FACTS, ids=lambda op: op.mnemonic)
def test_the_same_compare_of_two_registers_depends_on_the_lanes(op):
    src = next(o for o in op.operands if o.kind == T.VEC and o.role == T.SRC)
    lanes = 64 // np.dtype(src.dtype).itemsize
    a = np.zeros(lanes, src.dtype)
    b = np.ones(lanes, src.dtype)           # a < b, a != b
    fn = getattr(ivp, op.mnemonic)
    results = {bool(fn(a, b).all()), bool(fn(b, a).all()), bool(fn(a, a).all())}
    assert results == {True, False}, op.mnemonic
