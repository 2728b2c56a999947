"""Cases and replay.

The shipped cases' expected bytes were written by the golden models through the machine
(tools/make_example_cases.py), so replaying them on the golden backend cannot fail for a defect. What
is checked instead:

* every shipped case replays on the **kernels** (different code from the golden models);
* every case file's expected bytes are **recomputed** here from the record's decoded fields: the source
  gathered and the destination scattered by this file's own reading of the addressing (docs/model.md §4 and the
  QuantizeMX reading of q7emu.machine.machine's docstring), the golden model called directly -- not
  through Machine or run_case -- so a stale or hand-damaged case file is caught;
* a damaged expected byte is reported at its partition / byte / region, with the count of bad bytes;
* format round-trip, knob overrides, expected errors, malformed files, directories, --jobs, progress.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from q7emu import golden
from q7emu.errors import CaseError
from q7emu.isa.enums import DType
from q7emu.isa.records import S3D3TensDequant, S3DMX1Quant, decode_record, make_dequant_record
from q7emu.machine.cases import CaseResult, build_case, load_case, run_case, save_case
from q7emu.machine.machine import Region
from q7emu.machine.replay import ProgressBar, find_cases, format_row, replay

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cases"
SHIPPED = sorted(EXAMPLES.rglob("*.json"))
IDS = [p.stem for p in SHIPPED]
PB = 0x400
NUM_PARTITIONS = 128
DEQUANT_KNOB_NAMES = ("nibble_order", "fp6_packing", "mx_layout", "mx_scale", "nf4_table")
QUANTIZE_MX_KNOB_NAMES = ("emax", "underflow", "nonfinite")


def small_case(**kw):
    rec = make_dequant_record(2, 0, 4, 3, src_partition=1, dst_partition=1, partition_bytes=PB)
    data = np.arange(4 * 12, dtype=np.uint8).reshape(4, 12)
    return build_case(rec.encode(), "CAYMAN", [(1, 0, data)], partition_bytes=PB, name="small", **kw)


# ---------------------------------------------------------------------- an independent reading of a case file
def read_case_file(path):
    """(meta, {array name: uint8 array}) straight from NAME.json / NAME.npz (not through load_case)."""
    path = Path(path)
    meta = json.loads(path.read_text())
    with np.load(path.with_suffix(".npz"), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return meta, arrays


def initial_sbuf(meta, arrays):
    sbuf = np.full((NUM_PARTITIONS, meta["partition_bytes"]), meta.get("fill", 0), dtype=np.uint8)
    for r in meta["inputs"]:
        a = arrays[r["array"]]
        assert a.shape == (r["count"], r["length"])
        sbuf[r["partition"]:r["partition"] + r["count"], r["offset"]:r["offset"] + r["length"]] = a
    return sbuf


def locate(addr, pb):
    """(partition, byte offset) of an immediate SBUF ADDR4 (docs/model.md §4 flat reading)."""
    assert addr.is_immediate and not addr.is_psum
    return addr.raw // pb, addr.raw % pb


def tensor3d_word_offsets(t, offset):
    """Byte offset of each u32 element of a TENSOR3D in stream order (dim 0 innermost), plain loops."""
    (n0, n1, n2), (s0, s1, s2) = t.num_elem, t.step_elem
    return [offset + 4 * (i0 * s0 + i1 * s1 + i2 * s2) for i2 in range(n2) for i1 in range(n1) for i0 in range(n0)]


def gather_bytes(sbuf, partition, nparts, word_offsets):
    """uint8 [nparts, 4 * len(word_offsets)]: each word's 4 bytes, words in stream order."""
    cols = [o + k for o in word_offsets for k in range(4)]
    return sbuf[partition:partition + nparts, cols].copy()


def golden_after(meta, arrays):
    """SBUF after the case's record, computed with the golden model called directly.

    Returns (sbuf after, bool mask of the bytes the record writes)."""
    pb = meta["partition_bytes"]
    sbuf = initial_sbuf(meta, arrays)
    written = np.zeros(sbuf.shape, dtype=bool)
    knobs = meta.get("knobs") or {}

    def put(partition, offset, value):         # last write wins, as on the device
        sbuf[partition, offset] = value
        written[partition, offset] = True

    rec = decode_record(bytes.fromhex(meta["record_hex"]))
    nac = rec.num_active_channels
    if isinstance(rec, S3D3TensDequant):
        p0, off = locate(rec.src.start_addr, pb)
        src = gather_bytes(sbuf, p0, nac, tensor3d_word_offsets(rec.src, off))
        out = golden.dequantize(src, rec.dequant_fmt, rec.group_size,
                                **{k: v for k, v in knobs.items() if k in DEQUANT_KNOB_NAMES})
        dp, doff = locate(rec.dst.start_addr, pb)
        dst_words = tensor3d_word_offsets(rec.dst, doff)
        assert out.shape == (nac, 4 * len(dst_words))
        for p in range(nac):
            for k, o in enumerate(dst_words):
                for b in range(4):
                    put(dp + p, o + b, out[p, 4 * k + b])
    elif isinstance(rec, S3DMX1Quant):
        p0, off = locate(rec.src.start_addr, pb)
        raw = gather_bytes(sbuf, p0, nac, tensor3d_word_offsets(rec.src, off))
        dtype = {DType.FP16: np.float16, DType.BFLOAT16: ml_dtypes.bfloat16}[rec.in_dtype]
        x = np.ascontiguousarray(raw).view("<u2").view(dtype)           # element 2i = low half of word i
        dst = {DType.FP8_EXP4: "float8_e4m3fn", DType.FP8_EXP5: "float8_e5m2"}[rec.out_dtype]
        data, scale = golden.quantize_mx(x, dst, scale_layout="compact",
                                         **{k: v for k, v in knobs.items() if k in QUANTIZE_MX_KNOB_NAMES})
        f4 = x.shape[1] // 4
        assert rec.dst.num_elem == f4 and data.shape == (nac, f4) and scale.shape == (nac // 8, f4)
        data_bytes = np.ascontiguousarray(data.astype("<u4")).view(np.uint8)   # element 4j+k in byte k of word j
        dp, doff = locate(rec.dst.start_addr, pb)
        for p in range(nac):
            for j in range(f4):
                for b in range(4):
                    put(dp + p, doff + 4 * j * rec.dst.step_elem + b, data_bytes[p, 4 * j + b])
        sp, soff = locate(rec.dst.scale_addr, pb)
        for i in range(nac // 8):                   # block row i -> quadrant i // 4, row scale_pidx + i % 4
            for j in range(f4):
                put(sp + 32 * (i // 4) + rec.dst.scale_pidx + i % 4, soff + j, scale[i, j])
    else:
        raise AssertionError(f"no direct golden model for opcode 0x{rec.header.opcode:02x}")
    return sbuf, written


def expected_problems(meta, arrays):
    """Every way the case file's expected regions disagree with :func:`golden_after` (empty: none)."""
    after, written = golden_after(meta, arrays)
    covered = np.zeros(written.shape, dtype=bool)
    problems = []
    for i, r in enumerate(meta["expected"]):
        rows = slice(r["partition"], r["partition"] + r["count"])
        cols = slice(r["offset"], r["offset"] + r["length"])
        covered[rows, cols] = True
        exp = arrays[r["array"]]
        for rr, cc in np.argwhere(exp != after[rows, cols]):
            problems.append(f"expected region {i}: partition {r['partition'] + rr}, byte 0x{r['offset'] + cc:x}: "
                            f"file 0x{exp[rr, cc]:02x}, golden 0x{after[rows, cols][rr, cc]:02x}")
    for p, o in np.argwhere(written & ~covered):
        problems.append(f"written byte not in any expected region: partition {p}, byte 0x{o:x}")
    return problems


# ---------------------------------------------------------------------- the shipped cases
def test_shipped_examples_cover_every_path():
    names = {p.stem for p in SHIPPED}
    for gen in ("cayman", "mariana", "mariana_plus", "maverick"):
        for path in ("proc_4bit_non_mx_e2m1", "proc_4bit_non_mx_int4", "proc_4bit_non_mx_nf4",
                     "proc_4bit_mx_8_e2m1", "proc_6bit_non_mx_e2m3"):
            assert f"{gen}_7b_{path}" in names
    for gen in ("mariana", "mariana_plus", "maverick"):
        assert {f"{gen}_e3_quantize_mx_e4m3", f"{gen}_e3_quantize_mx_e5m2"} <= names
    for p in SHIPPED:
        assert p.stat().st_size + p.with_suffix(".npz").stat().st_size < 16 * 1024


@pytest.mark.parametrize("path", SHIPPED, ids=IDS)
def test_shipped_case_passes_on_the_kernels(path):
    """The kernels reproduce bytes the golden models wrote: two implementations agree."""
    r = run_case(load_case(path), backend="kernel")
    assert r.ok, format_row(r)
    assert r.nbytes > 0


@pytest.mark.parametrize("path", SHIPPED, ids=IDS)
def test_shipped_case_expected_bytes_are_the_golden_models_output(path):
    """The file's expected bytes = the golden model run directly on the record's decoded fields, and the
    expected regions cover every byte the record writes: a stale or hand-edited case fails here."""
    meta, arrays = read_case_file(path)
    assert meta["expected_error"] is None and meta["expected"]
    problems = expected_problems(meta, arrays)
    assert not problems, f"{len(problems)} problem(s), first: {problems[0]}"


def test_direct_check_catches_a_damaged_case():
    meta, arrays = read_case_file(EXAMPLES / "mariana" / "mariana_e3_quantize_mx_e4m3.json")
    assert expected_problems(meta, arrays) == []
    r = meta["expected"][2]                                     # the scale bytes of the second quadrant
    arrays[r["array"]] = arrays[r["array"]].copy()
    arrays[r["array"]][1, 3] ^= 0x01
    assert expected_problems(meta, arrays) == [
        f"expected region 2: partition {r['partition'] + 1}, byte 0x{r['offset'] + 3:x}: "
        f"file 0x{arrays[r['array']][1, 3]:02x}, golden 0x{arrays[r['array']][1, 3] ^ 1:02x}"]
    meta["expected"] = meta["expected"][:2]                     # a region dropped: its bytes go unchecked
    assert all("not in any expected region" in p for p in expected_problems(meta, arrays))
    assert len(expected_problems(meta, arrays)) == r["count"] * r["length"]
    meta, arrays = read_case_file(EXAMPLES / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1.json")
    arrays["in0"] = arrays["in0"].copy()
    arrays["in0"][3, 2] ^= 0x10                                  # damaged input: the expected bytes go stale
    assert expected_problems(meta, arrays)


@pytest.mark.parametrize("path", SHIPPED, ids=IDS)
def test_damaged_expected_byte_is_pinpointed(path, tmp_path):
    """One byte damaged in every expected region in turn: reported at that partition / byte / region."""
    rng = np.random.default_rng(len(path.stem))
    for i in range(len(load_case(path).expected)):
        case = load_case(path)
        reg, arr = case.expected[i]
        r_, c_ = int(rng.integers(arr.shape[0])), int(rng.integers(arr.shape[1]))
        old = int(arr[r_, c_])
        arr[r_, c_] ^= 0x5A
        save_case(case, tmp_path / f"damaged{i}")
        res = run_case(load_case(tmp_path / f"damaged{i}.json"), backend="kernel")
        assert not res.ok and res.mismatch is not None
        mm = res.mismatch
        assert (mm.region, mm.partition, mm.offset) == (i, reg.partition + r_, reg.offset + c_)
        assert (mm.expected, mm.actual) == (old ^ 0x5A, old) and mm.count == 1
        assert f"partition {mm.partition}, byte 0x{mm.offset:x}" in format_row(res)
        assert f"expected region {i})" in format_row(res)


def test_first_of_several_damaged_bytes_is_reported_with_the_count(tmp_path):
    case = load_case(EXAMPLES / "maverick" / "maverick_7b_proc_6bit_non_mx_e2m3.json")
    reg, arr = case.expected[0]
    arr[-1, -1] ^= 1
    arr[2, 5] ^= 1
    arr[2, 7] ^= 1
    save_case(case, tmp_path / "three")
    mm = run_case(load_case(tmp_path / "three"), backend="kernel").mismatch
    assert (mm.partition, mm.offset, mm.count) == (reg.partition + 2, reg.offset + 5, 3)


def test_save_load_roundtrip(tmp_path):
    case = small_case(note="hello", knobs={"nibble_order": "high-first"})
    path = save_case(case, tmp_path / "sub" / "c1")
    meta = json.loads(path.read_text())
    assert meta["format"] == "q7emu-case" and meta["version"] == 1 and meta["generation"] == "CAYMAN"
    assert meta["knobs"] == {"nibble_order": "high-first"} and len(meta["record_hex"]) == 128
    back = load_case(path)
    assert back.record == case.record and back.knobs == case.knobs and back.note == "hello"
    assert [r for r, _ in back.expected] == [r for r, _ in case.expected]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(back.expected, case.expected, strict=True))
    assert run_case(back, backend="golden").ok


def test_knob_override_changes_result():
    case = small_case()
    assert run_case(case, backend="golden").ok
    assert not run_case(case, knobs={"nibble_order": "high-first"}, backend="golden").ok


def test_expected_error_case():
    rec = make_dequant_record(1, 0, 4, 4, partition_bytes=PB).encode()
    case = build_case(rec, "SUNDA", [], expected=[], partition_bytes=PB)
    res = run_case(case)
    assert not res.ok and "UNKNOWN OPCODE=0x7b" in res.error
    case.expected_error = "UNKNOWN OPCODE=0x7b"
    assert run_case(case).ok


@pytest.mark.parametrize("mutate,msg", [
    (lambda m: m.update(format="other"), "not a q7emu-case"),
    (lambda m: m.update(version=2), "unsupported case version"),
    (lambda m: m.update(record_hex="7b00"), "record_hex"),
    (lambda m: m.update(generation="TONGA"), "generation"),
    (lambda m: m.update(knobs={"emax": "big"}), "emax"),
    (lambda m: m["expected"][0].update(array="nope"), "not in"),
    (lambda m: m["expected"][0].update(count=99), "shape"),
    (lambda m: m.pop("generation"), "missing key"),
])
def test_malformed_cases(tmp_path, mutate, msg):
    path = save_case(small_case(), tmp_path / "c")
    meta = json.loads(path.read_text())
    mutate(meta)
    path.write_text(json.dumps(meta))
    with pytest.raises(CaseError, match=msg):
        load_case(path)
    (tmp_path / "d.json").write_text("{not json")
    with pytest.raises(CaseError):
        load_case(tmp_path / "d.json")


def test_replay_directory_jobs_and_progress(tmp_path):
    for i in range(5):
        save_case(small_case(), tmp_path / f"c{i}")
    (tmp_path / "unrelated.json").write_text('{"a": 1}')
    assert len(find_cases([tmp_path])) == 5
    buf = io.StringIO()
    res = replay([tmp_path], jobs=2, backend="golden", progress=True, stream=buf)
    assert len(res) == 5 and all(isinstance(r, CaseResult) and r.ok for r in res)
    assert "5/5" in buf.getvalue()
    assert [Path(r.path).stem for r in res] == [f"c{i}" for i in range(5)]
    with pytest.raises(CaseError):
        find_cases([tmp_path / "missing"])


def test_progress_bar_text():
    buf = io.StringIO()
    bar = ProgressBar(2, buf)
    bar.update(True)
    bar.update(False)
    bar.close()
    assert "2/2 1 failed" in buf.getvalue()


def test_build_case_rejects_bad_regions():
    rec = make_dequant_record(1, 0, 4, 4, partition_bytes=PB).encode()
    with pytest.raises(CaseError):
        build_case(rec, "CAYMAN", [(0, 0, np.zeros((2, 3), np.float32))], partition_bytes=PB)
    with pytest.raises(CaseError):
        build_case(rec[:10], "CAYMAN", [], partition_bytes=PB)
    assert build_case(rec, "CAYMAN", [(Region(0, 4, 0, 16), np.zeros((4, 16), np.uint8))], partition_bytes=PB)
