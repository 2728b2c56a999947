"""Lookup chunks (docs/asm.md §9): the chunk form of a 16-bit lookup (optable.Op.chunk_form: selnx16, dselnx16,
dselnx16t) reads lane 16 c + (index & 15) of the pool, so it gives the op's own lanes wherever every index it reads
lies in chunk c, and wherever the lanes the indexes read equal those at the same place in chunk c (a pool whose chunks
agree). Property-based over pools, selectors, chunks, predicates and old outputs; and the precondition is real: an
index in another chunk of a pool whose chunks differ gives another lane."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from q7emu.errors import InvalidArgument
from q7emu.primitives import _ivp, ivp, optable

CHUNKED = [op for op in optable.ALL_OPS if op.chunk_form]

u16_lanes = st.lists(st.integers(0, 0xFFFF), min_size=32, max_size=32).map(lambda x: np.array(x, np.uint16))
chunks = st.integers(0, 3)


def _wide(mnemonic: str, hi: np.ndarray, lo: np.ndarray, sel: np.ndarray, vb: int, odd: np.ndarray,
          even: np.ndarray) -> tuple[np.ndarray, ...]:
    """The op's own lanes (its wrapper), as a tuple of its outputs."""
    if mnemonic == "selnx16":
        return (ivp.selnx16(hi, lo, sel),)
    if mnemonic == "dselnx16":
        return tuple(ivp.dselnx16(hi, lo, sel.view(np.uint8)))
    bits = np.array([(vb >> j) & 1 for j in range(64)], bool)
    return tuple(ivp.dselnx16t(odd, even, hi, lo, sel.view(np.uint8), bits))


def _chunked(mnemonic: str, hi: np.ndarray, lo: np.ndarray, sel: np.ndarray, cs: tuple[int, ...], vb: int,
             odd: np.ndarray, even: np.ndarray) -> tuple[np.ndarray, ...]:
    out = _ivp._chunk_form(mnemonic, hi, lo, sel, cs[:1] if mnemonic == "selnx16" else cs, vb, odd, even)
    return out if isinstance(out, tuple) else (out,)


def _in_chunks(sel: np.ndarray, c_low: int, c_high: int) -> np.ndarray:
    """``sel`` with bits 4, 5 of each lane's low byte set to c_low and of its high byte to c_high."""
    return ((sel & ~np.uint16(0x3030)) | np.uint16(c_low << 4 | c_high << 12)).astype(np.uint16)


def test_the_ops_with_a_chunk_form_are_the_16_bit_lookups():
    assert [op.mnemonic for op in CHUNKED] == ["selnx16", "dselnx16", "dselnx16t"]


@pytest.mark.parametrize("op", CHUNKED, ids=lambda op: op.mnemonic)
@settings(max_examples=80, deadline=None)
@given(hi=u16_lanes, lo=u16_lanes, sel=u16_lanes, c_even=chunks, c_odd=chunks, vb=st.integers(0, (1 << 64) - 1),
       odd=u16_lanes, even=u16_lanes)
def test_the_chunk_form_is_the_op_where_every_index_lies_in_its_chunk(op, hi, lo, sel, c_even, c_odd, vb, odd,
                                                                     even):
    sel = _in_chunks(sel, c_even, c_odd)
    wide = _wide(op.mnemonic, hi, lo, sel, vb, odd, even)
    got = _chunked(op.mnemonic, hi, lo, sel, (c_even, c_odd), vb, odd, even)
    assert all(np.array_equal(a, b) for a, b in zip(got, wide, strict=True))


@pytest.mark.parametrize("op", CHUNKED, ids=lambda op: op.mnemonic)
@settings(max_examples=60, deadline=None)
@given(table=st.lists(st.integers(0, 0xFFFF), min_size=16, max_size=16), sel=u16_lanes, c_even=chunks,
       c_odd=chunks, vb=st.integers(0, (1 << 64) - 1), odd=u16_lanes, even=u16_lanes)
def test_the_chunk_form_is_the_op_on_a_pool_whose_chunks_agree(op, table, sel, c_even, c_odd, vb, odd, even):
    pool = np.array(table * 2, np.uint16)            # lo = hi = the table twice: every chunk the same 16 lanes
    wide = _wide(op.mnemonic, pool, pool, sel, vb, odd, even)
    got = _chunked(op.mnemonic, pool, pool, sel, (c_even, c_odd), vb, odd, even)
    assert all(np.array_equal(a, b) for a, b in zip(got, wide, strict=True))


@pytest.mark.parametrize("op", CHUNKED, ids=lambda op: op.mnemonic)
@pytest.mark.parametrize("chunk", range(4))
def test_an_index_in_another_chunk_gives_another_lane(op, chunk):
    lo = np.arange(32, dtype=np.uint16)                  # pool lane j holds j: every chunk differs
    hi = np.arange(32, 64, dtype=np.uint16)
    zeros = np.zeros(32, np.uint16)
    other = (chunk + 1) % 4
    sel = _in_chunks(np.arange(32, dtype=np.uint16) % 16 * 0x0101, chunk, chunk)
    sel[5] = (sel[5] & ~np.uint16(0x3030)) | np.uint16(other << 4 | other << 12)
    wide = _wide(op.mnemonic, hi, lo, sel, (1 << 64) - 1, zeros, zeros)
    got = _chunked(op.mnemonic, hi, lo, sel, (chunk, chunk), (1 << 64) - 1, zeros, zeros)
    for a, b in zip(got, wide, strict=True):
        assert int(a[5]) == 16 * chunk + 5 and int(b[5]) == 16 * other + 5
        assert np.array_equal(np.delete(a, 5), np.delete(b, 5))


@pytest.mark.parametrize("mnemonic, cs", [("selnx16", (4,)), ("selnx16", (0, 1)), ("dselnx16", (0,)),
                                          ("dselnx16t", (0, -1)), ("sel2nx8", (0,))])
def test_a_chunk_form_call_out_of_its_rule_is_refused(mnemonic, cs):
    zeros = np.zeros(32, np.uint16)
    with pytest.raises(InvalidArgument):
        _ivp._chunk_form(mnemonic, zeros, zeros, zeros, cs)
