"""Mismatch reports a person can read (issue 26 item 4): the value of both bytes in the output format, the
source byte(s) and code behind an output element under every layout knob, the MX scale byte and block, the
diff map of --json / --plot, -k expressions, JUnit identities from the path and aligned rows.

The SBUF places below are worked out by hand from the shipped cases' layouts (examples/README.md) and the
layouts of docs/model.md §1, never read back from the code under test:

* 0x7b cases: 12 partitions from 3; source runs from byte 0x40, the second run 16 words (64 bytes) after the
  first: 4-bit group 0 two runs of 2 words (stream bytes 0..7 at 0x40.., 8..15 at 0x80..), FP6 two runs of 6
  words (0..23 at 0x40.., 24..47 at 0x80..), MX group 8 two runs of 10 words (0..39 at 0x40.., 40..79 at 0x80..).
* 0xE3 [64, 16]: fp16 source from byte 0x20 of partitions 0..63 (element e = stream bytes 2e, 2e+1); scales
  at byte 0xc0 of rows 4..7 of each quadrant (scale_pidx 4): block row i at partition 32 (i // 4) + 4 + i % 4.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from case_support import damaged

from q7emu.machine import report
from q7emu.machine.cases import CaseResult, load_case, run_case, save_case
from q7emu.machine.replay import replay

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "cases"
MX8 = EX / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1.json"
G0 = EX / "cayman" / "cayman_7b_proc_4bit_non_mx_e2m1.json"
FP6 = EX / "cayman" / "cayman_7b_proc_6bit_non_mx_e2m3.json"
QMX = EX / "mariana" / "mariana_e3_quantize_mx_e4m3.json"


def before(case, partition, offset):
    """The SBUF byte before the record ran, from the case's input region (all shipped inputs start at 0x40 /
    0x20 of their first partition)."""
    reg, arr = case.inputs[0]
    return int(arr[partition - reg.partition, offset - reg.offset])


def where(ex):
    return [(b.partition, b.offset) for b in ex.source]


@pytest.mark.parametrize("knobs,element,code_at,half,scale_at", [
    ({}, 17, 0x4B, "high", 0x4A),                                       # scale-first: group 2 = bytes 10..14
    ({"mx_layout": "scale-last"}, 17, 0x4A, "high", 0x4E),              # group 2 = codes 10..13, scale 14
    ({"mx_layout": "word-block"}, 17, 0x4C, "high", 0x42),              # scales 0..3, group 2's codes 12..15
    ({"nibble_order": "high-first"}, 17, 0x4B, "low", 0x4A),            # the odd element is the low nibble
    ({}, 80, 0x8B, "low", 0x8A),                                        # group 10: bytes 50..54, second run
])
def test_mx8_source_byte_nibble_and_scale_byte(knobs, element, code_at, half, scale_at):
    case = load_case(MX8)
    ex = report.explainer(case, knobs).explain(7, "data", element)
    assert where(ex) == [(7, code_at)] and ex.code_where == f"{half} nibble"
    b = before(case, 7, code_at)
    assert ex.code == (b >> 4 if half == "high" else b & 0xF)
    assert (ex.scale.partition, ex.scale.offset, ex.scale.value) == (7, scale_at, before(case, 7, scale_at))
    assert ex.mx_group == element // 8 and (ex.source_format, ex.out_format) == ("E2M1", "E5M2")


@pytest.mark.parametrize("element,code_at,half", [(9, 0x44, "high"), (16, 0x80, "low"), (0, 0x40, "low")])
def test_group0_source_byte_and_nibble(element, code_at, half):
    case = load_case(G0)
    ex = report.explainer(case).explain(3, "data", element)
    assert where(ex) == [(3, code_at)] and ex.code_where == f"{half} nibble" and ex.scale is None
    assert "E2M1" in ex.code_text() and ex.value(0x39) == "0x39 = 0.625 E5M2"


@pytest.mark.parametrize("knobs,element,at,shift", [
    ({}, 3, (0x40, 0x41, 0x42), 18), ({"fp6_packing": "msb-first"}, 3, (0x40, 0x41, 0x42), 0),
    ({}, 17, (0x4C, 0x4D, 0x4E), 6), ({}, 33, (0x80, 0x81, 0x82), 6),
])
def test_fp6_three_source_bytes_and_the_code_bits(knobs, element, at, shift):
    case = load_case(FP6)
    ex = report.explainer(case, knobs).explain(4, "data", element)
    assert where(ex) == [(4, o) for o in at]
    w = sum(before(case, 4, o) << (8 * i) for i, o in enumerate(at))
    assert ex.code == (w >> shift) & 0x3F and ex.code_where == f"bits {shift}..{shift + 5} of the 3 bytes"
    assert (ex.source_format, ex.out_format) == ("E2M3", "E4M3")


def test_quantize_mx_source_element_block_and_scale_byte():
    case = load_case(QMX)
    e = report.explainer(case)
    ex = e.explain(9, "data", 5)
    assert where(ex) == [(9, 0x2A), (9, 0x2B)] and ex.block == (1, 1) and ex.scale_at == (5, 0xC1)
    assert ex.code == before(case, 9, 0x2A) | before(case, 9, 0x2B) << 8 and ex.source_format == "FP16"
    ex = e.explain(40, "data", 13)                  # block row 5 -> quadrant 1, scale row 1: partition 37
    assert where(ex) == [(40, 0x3A), (40, 0x3B)] and ex.block == (5, 3) and ex.scale_at == (37, 0xC3)
    ex = e.explain(37, "scale", None, (5, 2))
    assert ex.out_format == "E8M0" and ex.value(0x7E) == "0x7e = 2^-1 E8M0"


def test_the_report_text_names_values_source_and_scale(tmp_path):
    bad = damaged(tmp_path, MX8, [(0, 4, 0x11)], "mx8")
    case = load_case(bad)
    r = run_case(case)
    exp = int(case.expected[0][1][4, 0x11])
    from q7emu.model.values import format_value
    text = report.format_case(r, case, 1)
    line = next(ln for ln in text.splitlines() if "diff 1 of 1" in ln)
    assert f"expected {format_value(exp, 'E5M2')}, actual {format_value(exp ^ 1, 'E5M2')}" in line
    b, s = before(case, 7, 0x4B), before(case, 7, 0x4A)
    assert f"source byte 0x{b:02x} at p7 0x4b: high nibble 0x{b >> 4:x}" in text
    assert f"MX group 2 scale byte 0x{s:02x} at p7 0x4a = 2^{s - 127}" in text


def test_quantize_mx_data_diff_shows_its_blocks_scale_byte(tmp_path):
    bad = damaged(tmp_path, QMX, [(0, 9, 5)], "qmx")
    case = load_case(bad)
    r = run_case(case, backend="golden")
    s = int(case.expected[1][1][1, 1])             # region 1: partitions 4..7 at 0xc0: p5 byte 0xc1 is row 1
    text = report.format_case(r, case, 1)
    assert f"MX block (1, 1): scale byte at p5 0xc1: expected 0x{s:02x} = 2^{s - 127} E8M0" in text
    assert "(the same)" in text and "fp16 element 5" in text


def test_json_diffs_and_the_diff_map(tmp_path):
    bad = damaged(tmp_path, MX8, [(0, 4, 0x11), (0, 0, 0x7F)], "mx8")
    case = load_case(bad)
    r = run_case(case)
    doc = json.loads(json.dumps(report.case_json(r, case, 2)))     # strict JSON: no NaN
    d = next(x for x in doc["diffs"] if x["partition"] == 7)
    assert d["format"] == "E5M2" and d["expected_text"].endswith(" E5M2") and d["scale_byte"] is None
    src = d["source"]
    assert src["bytes"] == [{"partition": 7, "offset": 0x4B, "value": before(case, 7, 0x4B)}]
    assert src["scale"] == {"partition": 7, "offset": 0x4A, "value": before(case, 7, 0x4A), "mx_group": 2}
    m = doc["diff_map"]
    # bytes 0x111 (p7) and 0x17f (p3): offsets 0x111..0x17f = 111 bytes -> 2-byte bins (64 at most), 56 bins
    assert (m["partitions"], m["offsets"], m["bin_bytes"], m["bins"]) == ([3, 7], [0x111, 0x17F], 2, 56)
    assert sorted(m["cells"]) == [[3, (0x17F - 0x111) // 2, 1], [7, 0, 1]]
    pairs = {(p["expected"], p["actual"]): p["count"] for p in m["values"]["data"]["pairs"]}
    e1, e2 = int(case.expected[0][1][4, 0x11]), int(case.expected[0][1][0, 0x7F])
    assert pairs == ({(e1, e1 ^ 1): 1, (e2, e2 ^ 1): 1} if (e1, e1 ^ 1) != (e2, e2 ^ 1) else {(e1, e1 ^ 1): 2})
    assert m["values"]["data"]["bytes"] == 2 and "scale" not in m["values"]


def test_diff_map_of_quantize_mx_counts_scale_bytes_apart(tmp_path):
    bad = damaged(tmp_path, QMX, [(0, 9, 5), (2, 1, 2)], "qmx")
    case = load_case(bad)
    m = report.case_json(run_case(case, backend="golden"), case, 1)["diff_map"]
    assert m["values"]["data"]["bytes"] == 1 and m["values"]["scale"]["bytes"] == 1
    assert m["values"]["scale"]["format"] == "E8M0" and m["values"]["data"]["format"] == "E4M3"


# ------------------------------------------- the detail is computed where the case ran (with issue 27 item 10)
def _detail(text):
    """A report's text without its first row (the row's time differs between two runs)."""
    return text.splitlines()[1:]


@pytest.mark.parametrize("jobs", [1, 2])
def test_replay_explains_each_diff_where_the_case_ran(tmp_path, monkeypatch, jobs):
    bad = damaged(tmp_path, QMX, [(0, 9, 5), (2, 1, 2)], "qmx")
    case = load_case(bad)
    s = int(case.expected[1][1][1, 1])             # p5 byte 0xc1, as in the test above
    direct = run_case(case, backend="golden")      # its actual bytes still held: the report computes the detail
    res = replay([bad, G0], jobs=jobs, backend="golden", progress=False, max_diffs=2, diff_maps=True)
    r = res[0]
    monkeypatch.setattr(report, "load_case", lambda *a, **k: pytest.fail("the report read a case again"))
    assert all(d.actual is None for d in r.regions) and len(r.diffs) == 2 and r.diff_map is not None
    text = report.format_case(r, None, 2)
    assert f"MX block (1, 1): scale byte at p5 0xc1: expected 0x{s:02x} = 2^{s - 127} E8M0" in text
    assert "fp16 element 5" in text
    assert _detail(text) == _detail(report.format_case(direct, case, 2))
    doc = json.loads(json.dumps(report.case_json(r, None, 2)))
    want = json.loads(json.dumps(report.case_json(direct, case, 2)))
    assert doc["diffs"] == want["diffs"] and doc["diff_map"] == want["diff_map"]
    assert doc["diff_map"]["values"]["scale"]["bytes"] == 1 and not doc["diffs_omitted"]
    assert res[1].ok and res[1].diffs is None and res[1].diff_map is None


def test_replay_keeps_no_diff_map_unless_asked(tmp_path):
    bad = damaged(tmp_path, MX8, [(0, 4, 0x11)], "mx8")
    (r,) = replay([bad], progress=False, max_diffs=1)
    assert r.diff_map is None and len(r.diffs) == 1 and r.diffs[0].explanation is not None
    assert report.case_json(r, None, 1)["diff_map"] is None


@pytest.mark.parametrize("jobs", [1, 2])
def test_diff_maps_count_against_the_reports_budget(tmp_path, monkeypatch, jobs):
    from q7emu.machine import replay as replay_mod
    bads = [damaged(tmp_path, MX8, [(0, 4, 0x11), (0, 0, 0x7F)], f"mx8_{i}") for i in range(4)]
    case = load_case(MX8)
    e1, e2 = int(case.expected[0][1][4, 0x11]), int(case.expected[0][1][0, 0x7F])
    entries = 2 + len({(e1, e1 ^ 1), (e2, e2 ^ 1)})       # two cells, one or two (expected, actual) pairs
    monkeypatch.setattr(replay_mod, "MAX_REPORT_MAP_ENTRIES", 2 * entries + 1)
    res = replay(bads, jobs=jobs, progress=False, max_diffs=0, diff_maps=True)
    assert [r.diff_map is not None for r in res] == [True, True, False, False]
    assert [r.diffs_omitted for r in res] == [False, False, True, True]
    assert [sum(d.differing for d in r.regions) for r in res] == [2] * 4
    assert "diff-map entries" in report.format_case(res[3], None, 1)


def test_replay_plot_draws_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    from q7emu.cli.main import main
    bad = damaged(tmp_path, MX8, [(0, 4, 0x11)], "mx8")
    assert main(["replay", str(bad), str(G0), "--plot", str(tmp_path / "d.png"), "--no-progress"]) == 1
    data = (tmp_path / "d.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_plot_without_matplotlib_is_one_line_before_any_work(monkeypatch, capsys, tmp_path):
    import importlib.util

    from q7emu.cli.main import main
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "matplotlib" else real(n, *a))
    assert main(["replay", str(G0), "--plot", str(tmp_path / "d.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'matplotlib>=3.7' (the plot extra)" in err[0], err
    assert not (tmp_path / "d.png").exists()


# ---------------------------------------------------------------------------------------------- -k
FILES = ["a/cayman_7b_proc_4bit_mx_8_nf4.json", "a/cayman_7b_proc_4bit_non_mx_nf4.json",
         "b/mariana_e3_quantize_mx_e4m3.json", "b/mariana_7b_proc_4bit_mx_8_e2m1.json"]
KEYWORDS = {FILES[0]: {"cayman", "nf4", "g8", "0x7b"}, FILES[1]: {"cayman", "nf4", "g0", "0x7b"},
            FILES[2]: {"mariana", "0xe3", "fp16", "e4m3"}, FILES[3]: {"mariana", "e2m1", "g8", "0x7b"}}


@pytest.mark.parametrize("expr,want", [
    ("nf4 and g8", [0]), ("nf4 or e3", [0, 1, 2]), ("not nf4", [2, 3]), ("mariana and not (e3 or nf4)", [3]),
    ("NF4 and CAYMAN and G0", [1]), ("*_e3_*", [2]), ("a/*", [0, 1]), ("g8 and (cayman or e2m1)", [0, 3]),
    ("", [0, 1, 2, 3]),
])
def test_keyword_expressions(expr, want):
    got = report.select_cases(FILES, [expr], keywords=lambda f: KEYWORDS[f])
    assert got == [FILES[i] for i in want]


@pytest.mark.parametrize("expr", ["nf4 and", "(nf4", "nf4 g8", "and nf4", "nf4 )", "not"])
def test_bad_keyword_expressions_are_value_errors(expr):
    with pytest.raises(ValueError, match="-k"):
        report.KeywordExpression(expr)


def test_case_keywords_come_from_the_case_json():
    assert {"cayman", "0x7b", "e2m1", "g8", "proc_4bit_mx_8"} <= report.case_keywords(MX8)
    assert {"mariana", "0xe3", "quantize_mx", "fp16", "e4m3"} <= report.case_keywords(QMX)
    assert report.case_keywords(ROOT / "pyproject.toml") == set()


def test_replay_k_and_or_not_on_the_cli(capsys):
    from q7emu.cli.main import main
    assert main(["replay", str(EX), "-k", "nf4 and g8", "--no-progress"]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if " PASS " in ln]
    assert len(rows) == 4 and all("_mx_8_nf4" in r for r in rows)          # one per generation with 0x7b
    assert main(["replay", str(EX), "-k", "nf4 and", "--no-progress"]) == 2


# ---------------------------------------------------------------------------------------------- identities, rows
def test_junit_identities_come_from_the_path_not_the_json_name(tmp_path):
    """Two cases named alike in their JSON (34 of 200 collided in one farm) keep distinct identities."""
    for folder in ("x", "y"):
        case = load_case(G0)
        case.name = "same_name"
        save_case(case, tmp_path / folder / "c")
    results = replay([tmp_path], progress=False)
    root = ET.fromstring(report.junit_xml(results))
    ids = [(tc.get("classname"), tc.get("name")) for tc in root.iter("testcase")]
    assert len(set(ids)) == 2 and all(name == "c" for _, name in ids)
    assert sorted(c.rsplit(".", 3)[-3:][0] for c, _ in ids) == ["x", "y"]
    assert report.junit_identity("cases/cayman/a.json") == ("cases.cayman.a.json", "a")


def test_replay_rows_line_up():
    rows = [CaseResult("a", "short.json", 0x7B, True, 8, 0.001),
            CaseResult("b", "a/much/longer/path.json", 0x7B, False, 123456, 0.5),
            CaseResult("c", "mid/path.json", -1, False, 0, 0.0, error="CaseError: x")]
    width = report.path_width(rows)
    lines = [report.format_case(r, width=width).splitlines()[0] for r in rows]
    for col in (" B  ", " ms"):
        assert len({ln.index(col) for ln in lines}) == 1, lines


def test_report_values_never_need_ml_dtypes(tmp_path):
    """A failing 0x7b replay, explained, runs without importing ml_dtypes (its import takes seconds)."""
    import subprocess
    import sys
    bad = damaged(tmp_path, MX8, [(0, 4, 0x11)], "mx8")
    code = ("import sys; from q7emu.cli.main import main; rc = main(['replay', sys.argv[1], '--max-diffs', '3', "
            "'--json']); print('ml_dtypes' in sys.modules, rc, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code, str(bad)], capture_output=True, text=True, timeout=120)
    assert out.stderr.strip().splitlines()[-1] == "False 1", out.stderr
    assert json.loads(out.stdout)["cases"][0]["diffs"][0]["format"] == "E5M2"
    assert np is not None
