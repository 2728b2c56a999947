"""The machine's data path (issue 38): sources read as views, destinations written as slices.

Each fast path is compared, over random access patterns, with the way the machine did it before, written here
independently: a source as one fancy-index gather of every element's bytes (``sbuf[p0:p0+n][:, offs]``), a
destination as ``np.unique`` over the byte offsets (the last element written wins) and one ``np.ix_`` scatter.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from q7emu.errors import InvalidArgument
from q7emu.isa.records import Addr4, Tensor3D
from q7emu.machine.machine import Machine, Write, byte_runs, element_offsets, store_write

PB = 0x400


def _machine(seed: int) -> Machine:
    m = Machine("CAYMAN", PB, backend="golden")
    m.sbuf[:] = np.random.default_rng(seed).integers(0, 256, m.sbuf.shape, dtype=np.uint8)
    return m


def old_gather_bytes(sbuf: np.ndarray, p0: int, n: int, offs: list[int]) -> np.ndarray:
    """uint8 [n, 4 * len(offs)]: each element's 4 bytes, stream order (the gather before issue 38)."""
    idx = (np.asarray(offs, dtype=np.int64)[:, None] + np.arange(4)).reshape(-1)
    return sbuf[p0:p0 + n][:, idx]


def old_scatter(sbuf: np.ndarray, parts: np.ndarray, elem_offsets: np.ndarray, values: np.ndarray,
                elem_bytes: int) -> None:
    """The write before issue 38: unique byte offsets keeping each byte's last value, one np.ix_ scatter."""
    boffs = (elem_offsets[:, None] + np.arange(elem_bytes)).reshape(-1)
    rev = boffs[::-1]
    uniq, first = np.unique(rev, return_index=True)
    keep = boffs.size - 1 - first
    sbuf[np.ix_(parts, uniq)] = values[:, keep]


def reference_offsets(t: Tensor3D, off: int) -> list[int]:
    return [off + 4 * (i0 * t.step_elem[0] + i1 * t.step_elem[1] + i2 * t.step_elem[2])
            for i2 in range(t.num_elem[2]) for i1 in range(t.num_elem[1]) for i0 in range(t.num_elem[0])]


steps = st.one_of(st.sampled_from([0, 1, -1, 2]), st.integers(-40, 40))
counts = st.integers(1, 6)


@st.composite
def patterns(draw):
    """(Tensor3D, partition, count, byte offset) addressing elements inside a PB-byte partition, or None."""
    s = (draw(st.sampled_from([1, 1, 0, -1, 2, 3])), draw(steps), draw(steps))
    n = (draw(st.integers(1, 12)), draw(counts), draw(counts))
    span_lo = sum(min(0, si * (ni - 1)) for si, ni in zip(s, n))
    span_hi = sum(max(0, si * (ni - 1)) for si, ni in zip(s, n))
    if 4 * (span_hi - span_lo) + 4 > PB:
        return None
    off = draw(st.integers(-4 * span_lo, PB - 4 - 4 * span_hi))
    p0 = draw(st.integers(0, 120))
    nparts = draw(st.integers(1, 128 - p0))
    return Tensor3D(Addr4.sbuf(p0, off, PB), s, n), p0, nparts, off


@settings(max_examples=300, deadline=None)
@given(patterns(), st.integers(0, 3))
def test_source_bytes_and_gather_equal_the_fancy_index_gather(pat, seed):
    if pat is None:
        return
    t, p0, n, off = pat
    m = _machine(seed)
    offs = reference_offsets(t, off)
    want = old_gather_bytes(m.sbuf, p0, n, offs)
    got = m.source_bytes(t, n)
    assert got.dtype == np.uint8 and got.shape == want.shape
    assert np.array_equal(got, want)
    words = m.gather(t, n)
    assert words.dtype == np.uint32 and np.array_equal(words, np.ascontiguousarray(want).view("<u4"))
    assert list(element_offsets(t, off)) == offs


@pytest.mark.parametrize("steps,nums,parts", [((1, 8, 0), (8, 4, 1), 5), ((1, 0, 0), (PB // 4, 1, 1), 3),
                                               ((1, 0, 0), (6, 1, 1), 1), ((2, 0, 0), (8, 1, 1), 5)])
def test_a_source_is_one_fresh_contiguous_copy(steps, nums, parts):
    """Contiguous in SBUF or not, one partition or many: a new C-contiguous writable array (the program
    interpreter writes its input buffer; a kernel must never reach SBUF through it)."""
    m = _machine(0)
    t = Tensor3D(Addr4.sbuf(3, 0 if nums[0] == PB // 4 else 0x40, PB), steps, nums)
    got = m.source_bytes(t, parts)
    assert got.flags.c_contiguous and got.flags.writeable and got.flags.owndata
    assert not np.shares_memory(got, m.sbuf)


def test_a_source_leaving_sbuf_is_refused_before_any_view():
    m = _machine(0)
    with pytest.raises(InvalidArgument, match="gather leaves SBUF"):
        m.source_bytes(Tensor3D(Addr4.sbuf(0, PB - 8, PB), (1, 0, 0), (3, 1, 1)), 1)
    with pytest.raises(InvalidArgument, match="gather leaves SBUF"):
        m.source_bytes(Tensor3D(Addr4.sbuf(0, 4, PB), (-2, 0, 0), (3, 1, 1)), 1)
    with pytest.raises(InvalidArgument, match="gather leaves SBUF"):
        m.source_bytes(Tensor3D(Addr4.sbuf(100, 0, PB), (1, 0, 0), (3, 1, 1)), 29)


@settings(max_examples=300, deadline=None)
@given(patterns(), st.sampled_from([4, 1]), st.integers(0, 3))
def test_plan_and_commit_equal_unique_and_np_ix(pat, elem_bytes, seed):
    """Every destination pattern (overlapping, broadcast, backwards, strided, contiguous): the planned and
    committed bytes equal the np.unique + np.ix_ write, and nothing else changes."""
    if pat is None:
        return
    t, p0, n, off = pat
    offs = np.asarray(reference_offsets(t, off), dtype=np.int64)
    values = np.random.default_rng(seed + 10).integers(0, 256, (n, offs.size * elem_bytes), dtype=np.uint8)
    parts = np.arange(p0, p0 + n)
    m = _machine(seed)
    want = m.sbuf.copy()
    old_scatter(want, parts, offs, values, elem_bytes)
    w = m.plan_scatter(parts, offs, values, elem_bytes)
    regions, total = m._commit([w])
    assert np.array_equal(m.sbuf, want)
    boffs = np.unique((offs[:, None] + np.arange(elem_bytes)).reshape(-1))
    assert total == n * boffs.size
    assert [r.as_tuple() for r in regions] == [(p0, n, int(boffs[0]), int(boffs[-1] - boffs[0] + 1))]


@st.composite
def writes(draw):
    """A Write with distinct partitions (consecutive or not) and strictly increasing byte offsets of any layout:
    one run, equal runs at a fixed step, unequal runs, scattered bytes."""
    if draw(st.booleans()):
        p0 = draw(st.integers(0, 127))
        parts = np.arange(p0, draw(st.integers(p0 + 1, 128)), dtype=np.int64)
    else:
        parts = np.array(sorted(draw(st.sets(st.integers(0, 127), min_size=1, max_size=12))), dtype=np.int64)
    kind = draw(st.sampled_from(["run", "runs", "scattered"]))
    if kind == "run":
        start = draw(st.integers(0, PB - 1))
        offs = np.arange(start, draw(st.integers(start + 1, PB)), dtype=np.int64)
    elif kind == "runs":
        length = draw(st.integers(1, 16))
        step = draw(st.integers(length + 1, length + 40))
        count = draw(st.integers(2, max(2, (PB - length) // step)))
        start = draw(st.integers(0, max(0, PB - length - (count - 1) * step)))
        offs = (start + step * np.arange(count)[:, None] + np.arange(length)).reshape(-1).astype(np.int64)
        offs = offs[offs < PB]
    else:
        offs = np.array(sorted(draw(st.sets(st.integers(0, PB - 1), min_size=1, max_size=64))), dtype=np.int64)
    data = np.random.default_rng(draw(st.integers(0, 99))).integers(0, 256, (parts.size, offs.size), dtype=np.uint8)
    return Write(parts, offs, data)


@settings(max_examples=400, deadline=None)
@given(writes())
def test_store_write_equals_the_np_ix_scatter(w):
    before = np.random.default_rng(5).integers(0, 256, (128, PB), dtype=np.uint8)
    want = before.copy()
    want[np.ix_(w.partitions, w.offsets)] = w.data
    got = before.copy()
    store_write(got, w)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("offs,runs", [
    ([5], (5, 1, 1, 0)),
    ([5, 6, 7], (5, 1, 3, 0)),
    ([0, 1, 8, 9, 16, 17], (0, 3, 2, 8)),
    ([0, 1, 8, 9, 17, 18], None),                   # the third run is one byte late
    ([0, 1, 2, 8, 9], None),                        # runs of unequal length
    ([0, 2, 4, 6], (0, 4, 1, 2)),                   # single bytes at a fixed step
    ([3, 2], None),                                 # not increasing
    ([1, 1], None),                                 # a repeated byte
])
def test_byte_runs(offs, runs):
    assert byte_runs(np.asarray(offs, dtype=np.int64)) == runs


@pytest.mark.parametrize("fmt,group", [(1, 0), (4, 0), (1, 8)])
def test_one_partition_runs_the_same_on_every_backend(fmt, group):
    """One partition (its source bytes contiguous in SBUF): the kernels, the golden models and the kernel
    programs write the same bytes (the program interpreter refused a read-only view of SBUF)."""
    from q7emu.asm.kernels import ProgramBackend
    from q7emu.isa.records import make_dequant_record

    rec = make_dequant_record(fmt, group, 1, 60, partition_bytes=PB).encode()
    outs = []
    for backend in ("kernel", "golden", ProgramBackend()):
        m = _machine(1)
        m.backend = backend
        m.execute(rec)
        outs.append(m.sbuf.copy())
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 127), st.integers(1, 16), st.integers(0, PB - 1), st.integers(1, 64),
       st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(1, 255)), max_size=4), st.booleans())
def test_compare_regions_equals_a_byte_by_byte_count(p, n, off, ln, flips, fortran):
    """Equal regions (compared as wide words) and regions with a few differing bytes: the same counts per region
    and partition as a byte-by-byte comparison, and a copy of the actual bytes only where one differs."""
    from q7emu.machine.diffs import compare_regions
    from q7emu.machine.machine import Region

    n, ln = min(n, 128 - p), min(ln, PB - off)
    sbuf = np.random.default_rng(p + off).integers(0, 256, (128, PB), dtype=np.uint8)
    exp = sbuf[p:p + n, off:off + ln].copy(order="F" if fortran else "C")
    for pos, x in flips:
        exp.flat[pos % exp.size] ^= x
    (d,) = compare_regions([(Region(p, n, off, ln), exp)], sbuf)
    diff = sbuf[p:p + n, off:off + ln] != exp
    assert d.differing == int(diff.sum())
    assert d.partitions == {p + r: int(diff[r].sum()) for r in range(n) if diff[r].any()}
    assert (d.actual is None) == (d.differing == 0)
    if d.actual is not None:
        assert np.array_equal(d.actual, sbuf[p:p + n, off:off + ln])


# ---------------------------------------------------------------------------------------------- reused SBUF
def _dequant_case(dst_offset: int, fill: int = 0, expected=None, seed: int = 0):
    from q7emu.isa.records import make_dequant_record
    from q7emu.machine.cases import build_case

    rec = make_dequant_record(1, 0, 8, 16, src_partition=2, dst_partition=2, src_offset=0x40, dst_offset=dst_offset,
                              partition_bytes=PB).encode()
    src = np.random.default_rng(seed).integers(0, 256, (8, 64), dtype=np.uint8)
    return build_case(rec, "CAYMAN", [(2, 0x40, src)], expected, partition_bytes=PB, fill=fill, name=f"c{seed}")


@pytest.mark.parametrize("fill", [0, 0x5A])
def test_a_case_never_sees_the_bytes_the_previous_case_left(fill):
    """run_case reuses one SBUF per thread: the next case finds the fill where the last one loaded and wrote (its
    expected region covers the bytes the last case wrote, and expects the fill there)."""
    from q7emu.machine.cases import run_case

    first = _dequant_case(0x100, seed=1)
    (reg, _), = first.expected
    stale = np.full((reg.count, reg.length), fill, dtype=np.uint8)
    second = _dequant_case(0x200, fill, seed=2)
    second.expected.append((reg, stale))          # where the first case wrote: the fill, in the second
    for case in (first, second, first, second):
        r = run_case(case, backend="golden")
        assert r.ok, (case.name, r.mismatch, r.error)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0x80, 0x100, 0x1c0, 0x40]), st.sampled_from([0, 0, 7]),
                          st.integers(0, 3)), min_size=1, max_size=6))
def test_a_sequence_of_cases_gives_what_fresh_machines_give(seq):
    """Cases of random destinations (one overwriting its own source), fills and data, run one after the other on
    the reused SBUF: each result (verdict, counts per region and partition) is the one a fresh SBUF gives."""
    from q7emu.machine import cases as cases_mod

    base = _dequant_case(0x100, seed=9)
    for dst, fill, seed in seq:
        c = _dequant_case(dst, fill, expected=[(r, a) for r, a in base.expected], seed=seed)
        got = cases_mod.run_case(c, backend="golden")
        cases_mod._REUSED.sbuf = None                  # a fresh SBUF for the reference run
        want = cases_mod.run_case(c, backend="golden")
        assert (got.ok, got.error, [(d.differing, d.partitions) for d in got.regions]) == \
            (want.ok, want.error, [(d.differing, d.partitions) for d in want.regions])
        if got.regions and got.regions[0].actual is not None:
            assert np.array_equal(got.regions[0].actual, want.regions[0].actual)


def test_adopt_uses_the_array_in_place_and_refuses_what_it_cannot():
    buf = np.zeros((128, PB), dtype=np.uint8)
    m = Machine("CAYMAN", PB, sbuf=buf, adopt=True)
    m.load(3, 8, np.full((2, 4), 9, np.uint8))
    assert m.sbuf is buf and buf[3:5, 8:12].tolist() == [[9] * 4] * 2
    assert not np.shares_memory(Machine("CAYMAN", PB, sbuf=buf).sbuf, buf)      # without adopt: a copy
    for bad in (np.zeros((128, 2 * PB), np.uint8)[:, ::2], np.zeros((128, PB), np.uint8)[:, :],
                "image.npy"):
        if isinstance(bad, np.ndarray) and bad.flags.c_contiguous:
            bad.flags.writeable = False
        with pytest.raises(InvalidArgument, match="adopt=True takes"):
            Machine("CAYMAN", PB, sbuf=bad, adopt=True)
