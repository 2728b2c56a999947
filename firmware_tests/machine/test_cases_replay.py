"""Cases and replay: format round-trip, shipped examples pass, a flipped byte is pinpointed, --jobs."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from q7emu.machine.cases import CaseResult, build_case, load_case, run_case, save_case
from q7emu.errors import CaseError
from q7emu.isa.records import make_dequant_record
from q7emu.machine.machine import Region
from q7emu.machine.replay import ProgressBar, find_cases, format_row, replay

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cases"
SHIPPED = sorted(EXAMPLES.rglob("*.json"))
PB = 0x400


def small_case(**kw):
    rec = make_dequant_record(2, 0, 4, 3, src_partition=1, dst_partition=1, partition_bytes=PB)
    data = np.arange(4 * 12, dtype=np.uint8).reshape(4, 12)
    return build_case(rec.encode(), "CAYMAN", [(1, 0, data)], partition_bytes=PB, name="small", **kw)


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


@pytest.mark.parametrize("backend", ["golden", "kernel"])
@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_case_passes(path, backend):
    r = run_case(load_case(path), backend=backend)
    assert r.ok, format_row(r)
    assert r.nbytes > 0


@pytest.mark.parametrize("backend", ["golden", "kernel"])
@pytest.mark.parametrize("path", SHIPPED[::5], ids=[p.stem for p in SHIPPED[::5]])
def test_flipped_expected_byte_is_pinpointed(path, backend, tmp_path):
    case = load_case(path)
    reg, arr = case.expected[-1]
    r_, c_ = arr.shape[0] // 2, arr.shape[1] - 1
    old = int(arr[r_, c_])
    arr[r_, c_] ^= 0x5A
    save_case(case, tmp_path / "flipped")
    res = run_case(load_case(tmp_path / "flipped.json"), backend=backend)
    assert not res.ok and res.mismatch is not None
    mm = res.mismatch
    assert (mm.partition, mm.offset) == (reg.partition + r_, reg.offset + c_)
    assert (mm.expected, mm.actual) == (old ^ 0x5A, old) and mm.count == 1
    assert f"partition {mm.partition}, byte 0x{mm.offset:x}" in format_row(res)


def test_save_load_roundtrip(tmp_path):
    case = small_case(note="hello", knobs={"nibble_order": "high-first"})
    path = save_case(case, tmp_path / "sub" / "c1")
    meta = json.loads(path.read_text())
    assert meta["format"] == "q7emu-case" and meta["version"] == 1 and meta["generation"] == "CAYMAN"
    assert meta["knobs"] == {"nibble_order": "high-first"} and len(meta["record_hex"]) == 128
    back = load_case(path)
    assert back.record == case.record and back.knobs == case.knobs and back.note == "hello"
    assert [r for r, _ in back.expected] == [r for r, _ in case.expected]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(back.expected, case.expected))
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
    assert build_case(rec, "CAYMAN", [(Region(0, 1, 0, 16), np.zeros((1, 16), np.uint8))], partition_bytes=PB)
