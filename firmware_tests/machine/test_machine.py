"""The SBUF machine: gather/scatter, dispatch, transactional writes, 0x7B / 0xE3 placement, fuzzing.

Tests marked "golden" need q7emu.golden; tests using backend "kernel" need the compiled kernels
(q7emu.kernels.dequant / q7emu.kernels.quantize_mx). The fuzz test runs on the kernels unless Q7EMU_FUZZ_BACKEND=golden.
"""
from __future__ import annotations

import os
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from q7emu import registry
from q7emu.errors import DispatchError, InvalidArgument, Q7Error
from q7emu.isa.enums import Engine, Generation
from q7emu.isa.records import (
    Addr4,
    Tensor3D,
    make_dequant_record,
    make_quantize_mx_record,
)
from q7emu.machine.machine import RECORD_HANDLERS, Machine, Write, dst_mask, element_offsets, kernel_function
from q7emu.model.kernels import DEQUANT_PATHS

PB = 0x400


def filled(gen="CAYMAN", backend="golden", pb=PB, seed=0, **kw) -> Machine:
    m = Machine(gen, pb, backend=backend, **kw)
    m.sbuf[:] = np.random.default_rng(seed).integers(0, 256, m.sbuf.shape, dtype=np.uint8)
    return m


def reference_offsets(t: Tensor3D, off: int) -> list[int]:
    out = []
    for i2 in range(t.num_elem[2]):
        for i1 in range(t.num_elem[1]):
            for i0 in range(t.num_elem[0]):
                out.append(off + 4 * (i0 * t.step_elem[0] + i1 * t.step_elem[1] + i2 * t.step_elem[2]))
    return out


@pytest.mark.parametrize("steps,nums", [((1, 0, 0), (8, 1, 1)), ((2, 16, 0), (3, 4, 2)), ((-1, 5, -20), (4, 3, 2)),
                                        ((0, 1, 0), (3, 4, 1)), ((1, 0, 7), (2, 2, 2))])
def test_gather_matches_reference(steps, nums):
    m = filled()
    t = Tensor3D(Addr4.sbuf(5, 0x100, PB), steps, nums)
    got = m.gather(t, 3)
    offs = reference_offsets(t, 0x100)
    assert list(element_offsets(t, 0x100)) == offs
    for p in range(3):
        for k, o in enumerate(offs):
            assert got[p, k] == int.from_bytes(bytes(m.sbuf[5 + p, o:o + 4]), "little")


def test_scatter_last_write_wins_and_commit():
    m = Machine("CAYMAN", PB)
    offs = np.array([0, 4, 0, 8], dtype=np.int64)   # element 2 rewrites element 0
    vals = np.arange(2 * 16, dtype=np.uint8).reshape(2, 16)
    w = m.plan_scatter(np.array([7, 8]), offs, vals, 4)
    regions, n = m._commit([w])
    assert n == 2 * 12 and regions[0].as_tuple() == (7, 2, 0, 12)
    assert list(m.sbuf[7, 0:4]) == [8, 9, 10, 11] and list(m.sbuf[8, 8:12]) == [28, 29, 30, 31]


def test_commit_checks_everything_before_writing():
    m = Machine("CAYMAN", PB)
    good = Write(np.array([0]), np.array([0]), np.array([[1]], dtype=np.uint8))
    bad = Write(np.array([0]), np.array([PB]), np.array([[1]], dtype=np.uint8))
    with pytest.raises(InvalidArgument):
        m._commit([good, bad])
    assert not m.sbuf.any()


def test_dispatch_misses_use_firmware_words():
    rec = make_dequant_record(1, 0, 4, 4, partition_bytes=PB).encode()
    with pytest.raises(DispatchError, match=r"^UNKNOWN OPCODE=0x7b\b"):
        Machine("SUNDA", PB).execute(rec)
    q = make_quantize_mx_record(32, 16, partition_bytes=PB).encode()
    with pytest.raises(DispatchError, match=r"^UNKNOWN OPCODE=0xe3\b"):
        Machine("CAYMAN", PB).execute(q)
    with pytest.raises(DispatchError, match="UNKNOWN OPCODE=0x99"):
        Machine("MAVERICK", PB).execute(bytes([0x99]) + bytes(63))
    with pytest.raises(DispatchError, match="binds no handler"):
        Machine("CAYMAN", PB).execute(bytes([0x46]) + bytes(63))


@pytest.mark.parametrize("gen", [g.name for g in Generation])
def test_handlers_are_bound_for_the_registry_kernels_the_tables_register(gen):
    """Every registry kernel whose opcode the generation's table registers dispatches to its record handler
    (by funcVA when the table knows it, else by key); an opcode no kernel runs is bound to nothing."""
    m = Machine(gen, PB)
    for entry in registry.KERNELS:
        engine = m.engine_for(entry.opcode)
        assert engine.kind is Engine(entry.engine)
        rec = engine.table.find(entry.opcode)
        if rec is None:
            with pytest.raises(DispatchError, match=f"UNKNOWN OPCODE=0x{entry.opcode:x}"):
                engine.dispatch(entry.opcode, 0)
            continue
        kinfo, handler = engine.dispatch(entry.opcode, 0)
        assert handler is RECORD_HANDLERS[entry.opcode] and kinfo == rec
        assert (rec.func_va in engine.bindings) == rec.func_va_known
    opcodes = {e.opcode for e in registry.KERNELS}
    assert set(RECORD_HANDLERS) == opcodes
    bound = {h for e in (m.pool, m.dve) for h in [*e.bindings.values(), *e.key_bindings.values()]}
    assert bound <= {RECORD_HANDLERS[o] for o in opcodes}


@pytest.mark.parametrize("backend", ["golden", "kernel"])
def test_backend_runs_the_registry_handler_or_golden_model(backend):
    for entry in registry.KERNELS:
        assert kernel_function(entry, backend) is (entry.golden if backend == "golden" else entry.handler)


def test_nothing_written_on_any_failure():
    m = filled()
    before = m.sbuf.copy()
    rec = make_dequant_record(1, 0, 4, 4, partition_bytes=PB)
    for bad in (replace(rec, dequant_fmt=0), replace(rec, dst=replace(rec.dst, start_addr=Addr4(1 << 25))),
                replace(rec, src=replace(rec.src, start_addr=Addr4.register(2, 0x80)))):
        with pytest.raises(Q7Error):
            m.execute(bad.encode())
        assert np.array_equal(m.sbuf, before)


def test_register_form_not_modelled():
    rec = make_dequant_record(1, 0, 4, 4, partition_bytes=PB)
    rec = replace(rec, dst=replace(rec.dst, start_addr=Addr4.register(4, 0xC0)))
    with pytest.raises(InvalidArgument, match="register-form ADDR4 .* not modelled"):
        Machine("CAYMAN", PB).execute(rec)


def test_bad_machine_arguments():
    with pytest.raises(InvalidArgument):
        Machine("CAYMAN", 3)
    with pytest.raises(InvalidArgument):
        Machine("CAYMAN", PB, knobs={"nibble_order": "middle"})
    with pytest.raises(InvalidArgument):
        Machine("CAYMAN", PB, knobs={"scale_layout": "compact"})


@pytest.mark.parametrize("knobs,field", [
    ([1, 2], "knobs"),                                                   # a list, not a mapping (was TypeError)
    ("nibble_order=high-first", "knobs"),
    ({"nibble_order": np.array(["low-first", "high-first"])}, "nibble_order"),   # an array value
    ({"nibble_order": ["low-first"]}, "nibble_order"),
    ({"emax": 1}, "emax"),
    ({("a",): "x"}, "knob"),
])
def test_bad_knob_containers_and_values_are_one_line_invalid_argument(knobs, field):
    with pytest.raises(InvalidArgument) as e:
        Machine("CAYMAN", PB, knobs=knobs)
    assert e.value.field == field and "\n" not in str(e.value)


@pytest.mark.parametrize("pb", [0, -4, 2, 6, 0x40004, 1 << 64, 2.0, "0x400", True, None])
def test_bad_partition_bytes(pb):
    with pytest.raises(InvalidArgument, match="multiple of 4 in 4..0x40000"):
        Machine("CAYMAN", pb)


def slicing_reference(p, n, off, ln, pb):
    """A non-empty region lies inside SBUF iff nothing is negative and numpy slicing of [128, pb] keeps its full
    shape; an empty one (count or length 0) must still start and end inside (p + n <= 128, off + ln <= pb)."""
    if min(p, n, off, ln) < 0:
        return False
    if n == 0 or ln == 0:
        return p + n <= 128 and off + ln <= pb
    return np.empty((128, pb), np.uint8)[p:p + n, off:off + ln].shape == (n, ln)


edge = st.one_of(st.integers(-(2 ** 64), 2 ** 64), st.sampled_from([-1, 0, 1, 127, 128, 129, PB - 1, PB, PB + 1,
                                                                     2 ** 31 - 1, 2 ** 63 - 1, 2 ** 63, -(2 ** 63)]))


@settings(max_examples=400, deadline=None)
@given(p=edge, n=edge, off=edge, ln=edge)
def test_region_rule_matches_the_slicing_reference(p, n, off, ln):
    from q7emu.machine.machine import Region, check_region, region_problem
    inside = slicing_reference(p, n, off, ln, PB) if max(abs(p), abs(n), abs(off), abs(ln)) < 2 ** 62 else \
        min(p, n, off, ln) >= 0 and p + n <= 128 and off + ln <= PB
    assert (region_problem(Region(p, n, off, ln), PB) is None) == inside
    m = Machine("CAYMAN", PB)
    if inside:
        check_region(Region(p, n, off, ln), PB)
        assert m.read(p, n, off, ln).shape == (n, ln)
    else:
        with pytest.raises(InvalidArgument, match="must lie inside SBUF") as e:
            m.read(p, n, off, ln)
        assert "\n" not in str(e.value)


# ---------------------------------------------------------------------- SBUF images (bounded reading)
def sbuf_file(tmp_path, kind, arr, name="sbuf"):
    p = tmp_path / f"img.{kind}"
    if kind == "npy":
        np.save(p, arr)
    else:
        np.savez_compressed(p, **{name: arr})
    return p


@pytest.mark.parametrize("kind", ["npz", "npy"])
def test_load_sbuf_image_npz_or_npy(tmp_path, kind):
    from q7emu.machine.machine import load_sbuf_image
    arr = np.random.default_rng(1).integers(0, 256, (128, PB), dtype=np.uint8)
    got = load_sbuf_image(sbuf_file(tmp_path, kind, arr))
    assert got.dtype == np.uint8 and np.array_equal(got, arr)
    if kind == "npz":      # the only array of an .npz, whatever its name
        assert np.array_equal(load_sbuf_image(sbuf_file(tmp_path, "npz", arr, name="image")), arr)


@pytest.mark.parametrize("kind", ["npz", "npy"])
@pytest.mark.parametrize("arr", [np.zeros((127, PB), np.uint8), np.zeros((128, PB), np.uint16),
                                 np.zeros((128, 6), np.uint8), np.zeros((128, 0x40004), np.uint8),
                                 np.zeros(PB, np.uint8)], ids=["127-rows", "uint16", "pb-6", "pb-too-big", "1-D"])
def test_load_sbuf_image_refuses_bad_shapes_from_the_header(tmp_path, kind, arr):
    from q7emu.machine.machine import load_sbuf_image
    with pytest.raises(InvalidArgument, match="sbuf must be uint8 \\[128, partition_bytes\\]"):
        load_sbuf_image(sbuf_file(tmp_path, kind, arr))


def test_load_sbuf_image_huge_header_and_damage(tmp_path):
    from q7emu.machine.machine import load_sbuf_image
    p = tmp_path / "huge.npy"
    with open(p, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "|u1", "fortran_order": False, "shape": (128, 1 << 40)})
    with pytest.raises(InvalidArgument, match="sbuf must be"):       # refused from the header: no MemoryError
        load_sbuf_image(p)
    rnd = np.random.default_rng(2).integers(0, 256, (128, PB), dtype=np.uint8)
    good = sbuf_file(tmp_path, "npz", rnd).read_bytes()
    mid = len(good) // 2                      # inside the deflated data
    for i, data in enumerate([good[:mid], good[:mid] + bytes([good[mid] ^ 0xFF]) + good[mid + 1:], b"", b"PK"]):
        bad = tmp_path / f"bad{i}.npz"
        bad.write_bytes(data)
        with pytest.raises(InvalidArgument) as e:
            load_sbuf_image(bad)
        assert "\n" not in str(e.value)
    np.savez(tmp_path / "two.npz", a=np.zeros((128, PB), np.uint8), b=np.zeros((128, PB), np.uint8))
    with pytest.raises(InvalidArgument, match="needs an array named 'sbuf'"):
        load_sbuf_image(tmp_path / "two.npz")


@pytest.mark.parametrize("backend", ["golden", "kernel"])
@pytest.mark.parametrize("fmt,group", list(DEQUANT_PATHS))
def test_dequantize_record_equals_api(backend, fmt, group):
    from q7emu import golden
    m = filled(backend=backend, seed=fmt * 10 + group)
    words = 10 if group == 8 else (6 if fmt == 4 else 5)
    rec = make_dequant_record(fmt, group, 9, words, src_partition=100, src_offset=0x40, dst_partition=110,
                              dst_offset=0x200, partition_bytes=PB)
    before = m.sbuf.copy()
    res = m.execute(rec.encode())
    src = before[100:109, 0x40:0x40 + 4 * words]
    exp = golden.dequantize(src, fmt, group)
    n = exp.shape[1]
    assert np.array_equal(m.sbuf[110:119, 0x200:0x200 + n], exp)
    changed = m.sbuf != before
    changed[110:119, 0x200:0x200 + n] = False
    assert not changed.any()
    assert [r.as_tuple() for r in res.regions] == [(110, 9, 0x200, n)]
    assert res.engine == "POOL" and res.func_va == 0x01004DC4


@pytest.mark.parametrize("backend", ["golden", "kernel"])
@pytest.mark.parametrize("nac,in_dtype,out_dtype,pidx", [(32, 7, 0x0E, 0), (64, 6, 0x0F, 4), (128, 7, 0x0F, 28),
                                                         (96, 6, 0x0E, 8)])
def test_quantize_record_places_data_and_scales(backend, nac, in_dtype, out_dtype, pidx):
    from q7emu import golden
    free = 12
    m = filled("MAVERICK", backend=backend, seed=nac)
    rng = np.random.default_rng(nac)
    npdt = np.float16 if in_dtype == 7 else ml_dtypes.bfloat16
    x = (rng.standard_normal((nac, free)) * 8).astype(npdt)
    base = 128 - nac if nac in (32, 96) else 0
    base -= base % 32
    m.load(base, 0x10, np.ascontiguousarray(x).view(np.uint8))
    rec = make_quantize_mx_record(nac, free, in_dtype=in_dtype, out_dtype=out_dtype, src_partition=base,
                                  src_offset=0x10, dst_partition=base, dst_offset=0x100, scale_offset=0x180,
                                  scale_pidx=pidx, partition_bytes=PB)
    before = m.sbuf.copy()
    res = m.execute(rec)
    assert res.engine == "DVE"
    data, scale = golden.quantize_mx(x, "float8_e4m3fn" if out_dtype == 0x0E else "float8_e5m2",
                                     scale_layout="compact")
    assert np.array_equal(m.sbuf[base:base + nac, 0x100:0x100 + free].copy().view("<u4"), data)
    expect_changed = np.zeros_like(m.sbuf, dtype=bool)
    expect_changed[base:base + nac, 0x100:0x100 + free] = True
    for i in range(nac // 8):
        p = base + 32 * (i // 4) + pidx + i % 4
        assert np.array_equal(m.sbuf[p, 0x180:0x180 + free // 4], scale[i])
        expect_changed[p, 0x180:0x180 + free // 4] = True
    assert not ((m.sbuf != before) & ~expect_changed).any()


def test_quantize_src_pairs_low_half_first():
    """Each src u32 holds elements 2i (low half) and 2i+1 (high half)."""
    from q7emu import golden
    m = Machine("MARIANA", PB, backend="golden")
    x = np.arange(32 * 8, dtype=np.float16).reshape(32, 8)
    words = np.ascontiguousarray(x).view("<u2").astype(np.uint32)
    packed = (words[:, 0::2] | (words[:, 1::2] << 16)).astype("<u4")
    m.load(0, 0, np.ascontiguousarray(packed).view(np.uint8))
    m.execute(make_quantize_mx_record(32, 8, dst_offset=0x100, scale_offset=0x200, partition_bytes=PB))
    data, _ = golden.quantize_mx(x, "float8_e4m3fn", scale_layout="compact")
    assert np.array_equal(m.sbuf[:32, 0x100:0x108].copy().view("<u4"), data)


# ----------------------------------------------------------------------------- fuzzing
FUZZ_BACKEND = os.environ.get("Q7EMU_FUZZ_BACKEND", "kernel")
GENS = ["SUNDA", "CAYMAN", "MARIANA", "MARIANA_PLUS", "MAVERICK"]
SEEDS = [make_dequant_record(f, g, n, w, src_partition=sp, dst_partition=dp, src_offset=so, partition_bytes=PB).encode()
         for f, g, n, w, sp, dp, so in [(1, 0, 4, 4, 0, 8, 0), (2, 0, 128, 3, 0, 0, 0x80), (3, 8, 16, 10, 20, 40, 0),
                                        (4, 0, 7, 6, 100, 2, 0x10), (2, 8, 1, 5, 127, 127, 0x300)]]
SEEDS += [make_quantize_mx_record(n, f, in_dtype=i, out_dtype=o, src_partition=sp, dst_partition=dp,
                                  scale_pidx=pi, partition_bytes=PB).encode()
          for n, f, i, o, sp, dp, pi in [(32, 8, 7, 0x0E, 0, 32, 0), (128, 4, 6, 0x0F, 0, 0, 4),
                                         (64, 16, 7, 0x0F, 64, 64, 28)]]

mutations = st.lists(st.tuples(st.integers(0, 63), st.integers(0, 255), st.booleans()), min_size=0, max_size=4)


@st.composite
def records(draw):
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(min_size=64, max_size=64))
    if kind == 1:
        b = bytearray(draw(st.binary(min_size=64, max_size=64)))
        b[0] = draw(st.sampled_from([0x7B, 0xE3]))
        return bytes(b)
    b = bytearray(draw(st.sampled_from(SEEDS)))
    for pos, val, flip in draw(mutations):
        if flip:
            b[pos] ^= 1 << (val & 7)
        else:
            b[pos] = val
    return bytes(b)


MACHINES: dict[str, Machine] = {}


@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(records(), st.sampled_from(GENS))
def test_fuzz_decode_validate_execute_never_crash_or_stray(data, gen):
    if FUZZ_BACKEND == "kernel":     # fail (do not silently pass) when the kernels are missing
        import q7emu.kernels.dequant  # noqa: F401
        import q7emu.kernels.quantize_mx  # noqa: F401
    from q7emu.isa.records import decode_record
    from q7emu.isa.validate import check, model_checks
    rec = decode_record(data)
    assert rec.encode() == data
    check(rec, gen, PB)
    model_checks(rec, PB)
    m = MACHINES.get(gen)
    if m is None:
        m = MACHINES[gen] = filled(gen, backend=FUZZ_BACKEND, seed=len(MACHINES))
    before = m.sbuf.copy()
    try:
        m.execute(data)
    except Q7Error:
        assert np.array_equal(m.sbuf, before)
        return
    changed = m.sbuf != before
    if changed.any():
        mask = dst_mask(rec, PB)
        assert mask is not None
        assert not (changed & ~mask).any()


def test_a_trace_through_the_machine_names_absolute_sbuf_partitions():
    """Machine.execute(trace=Recorder()) records SBUF partitions (the record's destination starts at 5),
    the numbering replay reports, not the kernel's 0-based index."""
    from q7emu.analysis.trace import Recorder

    rec = make_dequant_record(1, 0, 3, 4, src_partition=5, dst_partition=5, partition_bytes=PB)
    m = Machine("CAYMAN", partition_bytes=PB)
    m.sbuf[5:8, :16] = np.arange(48, dtype=np.uint8).reshape(3, 16)
    recorder = Recorder()
    m.execute(rec, trace=recorder)
    parts = sorted({op.partition for op in recorder.trace})
    assert parts == [5, 6, 7]
