"""Hostile case files (issue 15 findings 2, 4, 5, 6): regions outside SBUF, wrong types, FIFOs and large
unrelated files in a case folder, damaged arrays; and a mutation fuzz of real case files through load_case,
run_case and replay. A malformed case is refused in one line naming the region or field, and fails only
itself in ``replay DIR``.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hostile_lib import EXAMPLES, assert_clean_error, assert_no_crash, cli, python
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from q7emu.errors import CaseError
from q7emu.machine.cases import CaseResult, load_case, run_case
from q7emu.machine.replay import find_cases, replay

SEED = EXAMPLES / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1"


def copy_case(folder: Path, name: str, mutate=None) -> Path:
    meta = json.loads(SEED.with_suffix(".json").read_text())
    if mutate is not None:
        mutate(meta)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(meta))
    shutil.copy(SEED.with_suffix(".npz"), folder / f"{name}.npz")
    return folder / f"{name}.json"


def seed_meta() -> dict:
    return json.loads(SEED.with_suffix(".json").read_text())


def set_region(key, field, value):
    def f(meta):
        meta[key][0][field] = value
    return f


# the reproducers (finding 4: a negative partition or offset PASSed or aborted replay; past the end
# raised numpy's broadcast error) and finding 5/8 (knobs of the wrong type)
BAD_CASES = {
    "neg-partition": (set_region("expected", "partition", -1), "partition -1 is negative"),
    "neg-offset": (set_region("expected", "offset", -128), "offset -128 is negative"),
    "neg-count": (set_region("expected", "count", -12), "count -12 is negative"),
    "past-the-end": (set_region("expected", "offset", 1023), "leave the 0x400-byte partition"),
    "past-partitions": (set_region("inputs", "partition", 120), "leave the 128 SBUF partitions"),
    "huge-offset": (set_region("inputs", "offset", 2 ** 70), "leave the 0x400-byte partition"),
    "float-offset": (set_region("inputs", "offset", 1.5), "wrong type"),
    "knobs-list": (lambda m: m.update(knobs=[1, 2]), "'knobs' has the wrong type"),
    "knob-array-value": (lambda m: m.update(knobs={"nibble_order": ["low-first", "high-first"]}),
                         "a knob value is a string"),
    "partition-bytes-0": (lambda m: m.update(partition_bytes=0), "multiple of 4"),
    "fill-300": (lambda m: m.update(fill=300), "fill must be a byte value"),
    "fill-bool": (lambda m: m.update(fill=True), "fill must be a byte value"),
    "region-not-object": (lambda m: m["inputs"].__setitem__(0, [3, 12]), "must be an object"),
    "expected-error-int": (lambda m: m.update(expected_error=3), "expected_error"),
}


@pytest.mark.parametrize("name", list(BAD_CASES))
def test_malformed_case_is_one_line_naming_the_rule(tmp_path, name):
    mutate, msg = BAD_CASES[name]
    path = copy_case(tmp_path, name, mutate)
    with pytest.raises(CaseError, match=msg) as e:
        load_case(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)


@pytest.mark.parametrize("name", ["neg-partition", "neg-offset", "past-the-end"])
def test_a_bad_region_never_passes_even_when_an_error_is_expected(tmp_path, name):
    """The in-memory route (run_case on a Case with a bad region) fails the case; it never PASSes by a numpy
    negative index and never aborts with numpy's broadcast error."""
    case = load_case(SEED.with_suffix(".json"))
    reg, arr = case.expected[0]
    fields = {"neg-partition": dict(partition=-1), "neg-offset": dict(offset=-reg.length),
              "past-the-end": dict(offset=case.partition_bytes - 1)}[name]
    from dataclasses import replace
    case.expected[0] = (replace(reg, **fields), arr)
    for expected_error in (None, "SBUF"):
        case.expected_error = expected_error
        res = run_case(case)
        assert isinstance(res, CaseResult) and not res.ok and "must lie inside SBUF" in res.error


def test_bad_cases_fail_only_themselves_in_replay_dir(tmp_path):
    good = [copy_case(tmp_path, f"good{i}") for i in range(3)]
    for name, (mutate, _) in BAD_CASES.items():
        copy_case(tmp_path, f"bad-{name}", mutate)
    (tmp_path / "unrelated.json").write_text('{"just": "data"}')
    for jobs in (1, 2):
        res = replay([tmp_path], jobs=jobs, backend="golden", progress=False)
        by = {Path(r.path).stem: r for r in res}
        assert len(res) == 3 + len(BAD_CASES)
        assert all(by[p.stem].ok for p in good)
        assert all(not r.ok and "CaseError" in r.error and "\n" not in r.error
                   for n, r in by.items() if n.startswith("bad-"))


def main_in_process(capsys, *argv):
    from hostile_lib import Outcome

    from q7emu.cli.main import main
    code = main(list(argv))
    out, err = capsys.readouterr()
    return Outcome(code, out, err)


def test_cli_replay_dir_with_bad_cases_exit_2_no_traceback(tmp_path, capsys):
    copy_case(tmp_path, "good")
    copy_case(tmp_path, "bad", BAD_CASES["neg-offset"][0])
    out = main_in_process(capsys, "replay", str(tmp_path), "--backend", "golden", "--no-progress")
    assert_no_crash(out)
    assert out.returncode == 2 and "1 passed, 0 failed, 1 could not be replayed" in out.stdout, out.describe()


def test_explore_with_a_malformed_case_is_one_line(tmp_path, capsys):
    copy_case(tmp_path, "bad", BAD_CASES["knobs-list"][0])
    assert_clean_error(main_in_process(capsys, "explore", str(tmp_path), "--no-progress"))


# ---------------------------------------------------------------------------------------------- folder scans
FIFO_SCAN = """
import os, sys, json
from pathlib import Path
from q7emu.machine.replay import find_cases, replay
d = Path(sys.argv[1])
os.mkfifo(d / "blocker.json")
os.mkfifo(d / "blocker.npz")
found = find_cases([d])
res = replay([d], backend="golden", progress=False)
print(json.dumps({"found": [p.name for p in found], "ok": [r.ok for r in res]}))
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_named_json_does_not_block_replay_or_explore(tmp_path):
    copy_case(tmp_path, "good")
    out = python(FIFO_SCAN, str(tmp_path))      # the hang timeout of hostile_lib fails a blocked scan
    assert_no_crash(out)
    assert json.loads(out.stdout) == {"found": ["good.json"], "ok": [True]}, out.describe()
    out = cli("explore", str(tmp_path), "--no-progress")
    assert_no_crash(out)
    assert out.returncode == 0, out.describe()
    # naming the FIFO itself: one failing row, not a hang
    out = cli("replay", str(tmp_path / "blocker.json"), "--no-progress")
    assert_no_crash(out)
    assert out.returncode == 2 and "not a regular file" in out.stdout, out.describe()


def test_a_large_unrelated_json_is_read_only_at_its_head(tmp_path, monkeypatch):
    """find_cases reads SCAN_HEAD_BYTES of each *.json, never the whole file (was: every file read whole)."""
    copy_case(tmp_path, "good")
    big = tmp_path / "big.json"
    with open(big, "wb") as f:          # a sparse 512 MB file: costs no disk, only what is read
        f.truncate(512 << 20)
    reads = []
    import q7emu.machine.replay as rp
    real = rp.read_head

    def spy(path, n=4096):
        data = real(path, n)
        reads.append((Path(path).name, len(data)))
        return data
    monkeypatch.setattr(rp, "read_head", spy)
    assert [p.name for p in find_cases([tmp_path])] == ["good.json"]
    assert max(n for _, n in reads) <= 4096 and {name for name, _ in reads} == {"big.json", "good.json"}


# ---------------------------------------------------------------------------------------------- damaged arrays
def test_damaged_case_arrays_are_one_line(tmp_path, capsys):
    path = copy_case(tmp_path, "c")
    npz = path.with_suffix(".npz")
    data = npz.read_bytes()
    variants = {"truncated": data[:len(data) // 2], "empty": b"", "garbage": b"PK\x03\x04" + b"\xff" * 100,
                "flipped": data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF]) + data[len(data) // 2 + 1:]}
    for name, blob in variants.items():
        npz.write_bytes(blob)
        with pytest.raises(CaseError) as e:
            load_case(path)
        assert "\n" not in str(e.value), name
        out = main_in_process(capsys, "replay", str(path), "--no-progress")
        assert_no_crash(out)
        assert out.returncode == 2, out.describe()   # a case that cannot be read: exit 2 (docs/cli.md)


def test_case_array_of_the_wrong_shape_is_refused_from_its_header(tmp_path):
    path = copy_case(tmp_path, "c")
    meta = json.loads(path.read_text())
    arrays = dict(np.load(path.with_suffix(".npz")))
    arrays["in0"] = np.zeros((1 << 14, 1 << 16), np.uint8)[:1]          # a (1, 65536) array, not (12, 104)
    np.savez_compressed(path.with_suffix(".npz"), **arrays)
    with pytest.raises(CaseError, match=r"needs a uint8 array of shape \(12, 104\), got uint8 \(1, 65536\)"):
        load_case(path)
    assert meta["inputs"][0]["count"] == 12


# ---------------------------------------------------------------------------------------------- mutation fuzz
FIELDS = ["format", "version", "name", "generation", "knobs", "record_hex", "partition_bytes", "fill", "inputs",
          "expected", "expected_error", "note"]
values = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70),
                   st.sampled_from([-1, 0, 1, 128, 1024]), st.floats(allow_nan=False, allow_infinity=False),
                   st.text(max_size=8), st.lists(st.integers(), max_size=3),
                   st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))
COUNTS = {"cases": 0, "loaded": 0, "refused": 0, "passed": 0, "failed": 0}


@st.composite
def mutated_meta(draw):
    meta = seed_meta()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            meta.pop(draw(st.sampled_from(FIELDS)), None)
        elif kind == 1:
            meta[draw(st.sampled_from(FIELDS))] = draw(values)
        else:
            key = draw(st.sampled_from(["inputs", "expected"]))
            if isinstance(meta.get(key), list) and meta[key] and isinstance(meta[key][0], dict):
                meta[key][0][draw(st.sampled_from(["partition", "count", "offset", "length", "array"]))] = \
                    draw(values)
    return meta


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          database=None)
@given(meta=mutated_meta())
def test_mutated_case_files_load_or_refuse_and_never_raise_anything_else(tmp_path_factory, meta):
    d = tmp_path_factory.mktemp("m")
    (d / "c.json").write_text(json.dumps(meta))
    shutil.copy(SEED.with_suffix(".npz"), d / "c.npz")
    COUNTS["cases"] += 1
    try:
        case = load_case(d / "c.json")
    except CaseError as e:
        assert "\n" not in str(e)
        COUNTS["refused"] += 1
        return
    COUNTS["loaded"] += 1
    res = run_case(case, backend="golden")
    assert isinstance(res, CaseResult)
    COUNTS["passed" if res.ok else "failed"] += 1


def test_zz_report_mutation_counts():
    """Prints what the mutation fuzz above tried (the suite's report); runs after it (file order)."""
    print(f"\ncase-file mutation fuzz: {COUNTS}")
    assert COUNTS["cases"] == 0 or COUNTS["cases"] == COUNTS["loaded"] + COUNTS["refused"]


@pytest.mark.parametrize("space", [{"nibble_order": np.array(["low-first", "high-first"])},   # was: truth value
                                   {"nibble_order": 3}, [1], ["nibble_order=sideways"], {3: ["x"]}])
def test_explore_knob_space_of_the_wrong_kind_is_invalid_argument(space):
    from q7emu.analysis.explore import parse_knob_space
    from q7emu.errors import InvalidArgument
    with pytest.raises(InvalidArgument) as e:
        parse_knob_space(space)
    assert "\n" not in str(e.value)
