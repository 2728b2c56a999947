"""The replay report (q7emu.machine.report, q7emu.machine.diffs): verdicts and exit status, per-region and
per-partition counts, the first N differing bytes with output element / MX group and hexdump, JSON, JUnit,
-k selection and durations.

Damaged cases are made here by flipping chosen expected bytes of shipped cases; the expected positions,
counts, element and MX-group indices are worked out in this file from the case's layout (examples/README.md),
not read back from the code under test.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from case_support import damaged

from q7emu.machine import report
from q7emu.machine.cases import CaseResult, load_case, run_case
from q7emu.machine.diffs import compare_regions
from q7emu.machine.machine import Region
from q7emu.machine.replay import replay

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cases"
# 0x7b group 8: 12 partitions from 3, destination 32 contiguous words (128 bytes) at byte 0x100 of each
MX8 = EXAMPLES / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1.json"
# 0xE3 [64, 16]: data 16 bytes per partition at byte 0x80 of partitions 0..63; scales 4 bytes at 0xc0 of
# partitions 4..7 and 36..39 (scale_pidx 4 in quadrants 0 and 1)
QMX = EXAMPLES / "mariana" / "mariana_e3_quantize_mx_e4m3.json"


def test_compare_regions_counts_per_region_and_partition():
    exp = [(Region(2, 3, 8, 4), np.zeros((3, 4), np.uint8)), (Region(0, 1, 0, 2), np.zeros((1, 2), np.uint8))]
    sbuf = np.zeros((128, 32), np.uint8)
    sbuf[2, 9] = sbuf[4, 8] = sbuf[4, 11] = 7      # three bytes in region 0: one in partition 2, two in 4
    d = compare_regions(exp, sbuf)
    assert [x.differing for x in d] == [3, 0]
    assert d[0].partitions == {2: 1, 4: 2} and d[1].partitions == {}
    assert [x.bytes_compared for x in d] == [12, 2]
    assert d[0].actual is not None and d[0].actual[2, 3] == 7 and d[1].actual is None


def test_run_case_records_every_region_also_on_pass():
    r = run_case(load_case(QMX), backend="golden")
    assert r.ok and [(x.region.count, x.region.length) for x in r.regions] == [(64, 16), (4, 4), (4, 4)]
    assert sum(x.bytes_compared for x in r.regions) == 64 * 16 + 2 * 16 and not any(x.differing for x in r.regions)


def test_first_diffs_element_and_mx_group_of_a_0x7b_group8_case(tmp_path):
    # partition 7 = row 4, byte 0x111 = output byte 17 -> element 17, MX group 17 // 8 = 2
    # partition 3 = row 0, byte 0x17f = output byte 127 -> element 127, MX group 15
    path = damaged(tmp_path, MX8, [(0, 4, 0x11), (0, 0, 0x7F)], "mx8")
    case = load_case(path)
    r = run_case(case)
    assert not r.ok and report.kind(r) == "fail"
    diffs, total = report.first_diffs(case, r, 10)
    assert total == 2
    assert [(d.partition, d.offset, d.element, d.mx_group, d.part) for d in diffs] == [
        (3, 0x17F, 127, 15, "data"), (7, 0x111, 17, 2, "data")]
    assert all(d.actual == d.expected ^ 1 for d in diffs)
    assert report.first_diffs(case, r, 1)[0] == diffs[:1]
    assert r.regions[0].partitions == {3: 1, 7: 1}


def test_first_diffs_data_and_scale_bytes_of_a_0xe3_case(tmp_path):
    # data: partition 9 byte 0x85 -> element 5 of the row; block row 9 // 8 = 1, column 5 // 4 = 1
    # scale region 2 (partitions 36..39, bytes 0xc0..0xc3): row 1 = partition 37, byte 0xc2 ->
    #   quadrant 1, scale row 37 - 32 - 4 = 1, so block row 4 * 1 + 1 = 5, block column 2
    path = damaged(tmp_path, QMX, [(0, 9, 5), (2, 1, 2)], "qmx")
    case = load_case(path)
    r = run_case(case, backend="golden")
    diffs, total = report.first_diffs(case, r, 5)
    assert total == 2
    assert [(d.region, d.partition, d.offset, d.part, d.element, d.mx_block) for d in diffs] == [
        (0, 9, 0x85, "data", 5, (1, 1)), (2, 37, 0xC2, "scale", None, (5, 2))]
    assert "scale of MX block (5, 2)" in diffs[1].where()


def test_hexdump_shows_expected_and_actual_around_the_byte(tmp_path):
    path = damaged(tmp_path, MX8, [(0, 4, 0x11)], "mx8")
    case = load_case(path)
    r = run_case(case)
    d = report.first_diffs(case, r, 1)[0][0]
    lines = report.hexdump(case, r, d)
    exp_row = case.expected[0][1][4]
    # three 16-byte rows (0x100, 0x110, 0x120) of partition 7, each as expected / actual; a marker line under
    # the row holding byte 0x111 (the case's expected byte was flipped, so actual = expected ^ 1 there)
    assert lines[0].startswith("p7 0x00100") and exp_row[:16].tobytes().hex(" ") in lines[0]
    assert exp_row[:16].tobytes().hex(" ") in lines[1]
    assert lines[2].startswith("p7 0x00110") and exp_row[16:32].tobytes().hex(" ") in lines[2]
    act_row = exp_row[16:32].copy()
    act_row[1] ^= 1
    assert act_row.tobytes().hex(" ") in lines[3]
    assert lines[4].strip() == "^^" and lines[4].index("^^") == lines[3].index(act_row.tobytes().hex(" ")) + 3
    assert lines[5].startswith("p7 0x00120") and len(lines) == 7


def test_verdicts_and_exit_status_rank_internal_broken_fail():
    ok = CaseResult("a", "a.json", 0x7B, True, 4, 0.0)
    fail = CaseResult("b", "b.json", 0x7B, False, 4, 0.0, error="ValidityError: ...")
    broken = CaseResult("c", "c.json", -1, False, 0, 0.0, error="CaseError: c.json: not a q7emu-case file")
    dead = CaseResult("d", "d.json", -1, False, 0, 0.0, error="worker failed: BrokenProcessPool: ...")
    assert [report.verdict(r) for r in (ok, fail, broken, dead)] == ["PASS", "FAIL", "ERROR", "ERROR"]
    assert report.exit_status([ok]) == 0
    assert report.exit_status([ok, fail]) == 1
    assert report.exit_status([fail, broken]) == 2
    assert report.exit_status([broken, dead, fail]) == 3


def test_a_broken_case_file_is_an_error_not_a_failure(tmp_path):
    (tmp_path / "broken.json").write_text('{"format": "q7emu-case", "version": 1, "generation": 5}')
    (r,) = replay([tmp_path / "broken.json"], progress=False)
    assert report.verdict(r) == "ERROR" and report.exit_status([r]) == 2


def test_replay_json_document(tmp_path):
    bad = damaged(tmp_path, MX8, [(0, 4, 0x11)], "mx8")
    results = replay([QMX, bad], backend="golden", progress=False)
    cases = report.failing_cases(results)
    doc = json.loads(report.dumps(report.replay_json(results, cases, max_diffs=3, backend="golden", seconds=1.5)))
    assert (doc["format"], doc["version"]) == ("q7emu-replay", 1)
    assert doc["summary"] == {"cases": 2, "passed": 1, "failed": 1, "errors": 0,
                              "bytes_compared": 64 * 16 + 32 + 12 * 128, "bytes_differing": 1, "seconds": 1.5}
    assert doc["exit_code"] == 1
    good, failed = doc["cases"]
    assert good["verdict"] == "PASS" and good["diffs"] == [] and good["first_mismatch"] is None
    assert failed["verdict"] == "FAIL" and failed["bytes_differing"] == 1
    assert failed["regions"][0]["partitions"] == [{"partition": 7, "bytes_differing": 1}]
    (d,) = failed["diffs"]
    assert (d["partition"], d["offset"], d["element"], d["mx_group"], d["mx_block"]) == (7, 0x111, 17, 2, None)
    assert d["hexdump"]["partition"] == 7 and d["hexdump"]["offset"] == 0x100
    assert len(bytes.fromhex(d["hexdump"]["expected"])) == 48
    assert failed["first_mismatch"] == {"region": 0, "partition": 7, "offset": 0x111,
                                        "expected": d["expected"], "actual": d["expected"] ^ 1}


def test_junit_xml_one_testcase_per_case_failures_carry_the_summary(tmp_path):
    bad = damaged(tmp_path, MX8, [(0, 4, 0x11)], "mx8")
    (tmp_path / "broken.json").write_text("{not json")
    results = replay([QMX, bad, tmp_path / "broken.json"], backend="golden", progress=False)
    out = report.write_junit(tmp_path / "r.xml", results, report.failing_cases(results), max_diffs=2,
                             backend="golden", seconds=0.25)
    root = ET.parse(out).getroot()
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = suite.findall("testcase")
    assert [c.get("file") for c in cases] == [str(QMX), str(bad), str(tmp_path / "broken.json")]
    assert cases[0].find("failure") is None and cases[0].find("error") is None
    failure = cases[1].find("failure")
    assert failure.get("type") == "mismatch" and "partition 7, byte 0x111" in failure.get("message")
    assert "1 of 1536 bytes differ" in failure.text and "output element 17, MX group 2" in failure.text
    assert cases[2].find("error").get("type") == "bad-case-file"
    assert not list(tmp_path.glob(".r.xml.*"))          # written through atomic_write: no temporary left


@pytest.mark.parametrize("patterns,expected", [
    ([], ["a/cayman_x.json", "b/mariana_e3_y.json", "b/mariana_7b_z.json"]),
    (["MARIANA"], ["b/mariana_e3_y.json", "b/mariana_7b_z.json"]),       # substring, case-insensitive
    (["*_e3_*"], ["b/mariana_e3_y.json"]),                               # wildcard on the stem
    (["a/*"], ["a/cayman_x.json"]),                                      # wildcard on the path
    (["cayman", "_7b_"], ["a/cayman_x.json", "b/mariana_7b_z.json"]),    # any pattern
    (["nothing"], []),
])
def test_select_cases(patterns, expected):
    files = ["a/cayman_x.json", "b/mariana_e3_y.json", "b/mariana_7b_z.json"]
    assert report.select_cases(files, patterns) == expected


def test_format_durations_slowest_first():
    rs = [CaseResult(n, f"{n}.json", 0x7B, True, 0, s) for n, s in (("a", 0.002), ("b", 0.010), ("c", 0.001))]
    text = report.format_durations(rs, 2).splitlines()
    assert text[0] == "slowest 2 of 3 case(s):" and text[1].endswith("b.json") and text[2].endswith("a.json")
    assert len(report.format_durations(rs, 0).splitlines()) == 4


def test_hexdump_rows_stay_on_16_byte_boundaries_when_a_region_starts_mid_row():
    from q7emu.isa.records import make_dequant_record
    from q7emu.machine.cases import build_case

    # FP4 E2M1 code 7 (6.0) -> E5M2 0x46 (docs/firmware.md §2.2 pairs); the case expects zeros instead
    rec = make_dequant_record(1, 0, 1, 2, dst_offset=0x104, partition_bytes=0x400).encode()
    case = build_case(rec, "CAYMAN", [(0, 0, np.full((1, 8), 0x77, np.uint8))],
                      [(0, 0x104, np.zeros((1, 16), np.uint8))], partition_bytes=0x400)
    r = run_case(case, backend="golden")
    diffs, total = report.first_diffs(case, r, 20)
    assert total == 16 and [d.offset for d in diffs] == list(range(0x104, 0x114))
    lines = report.hexdump(case, r, diffs[0])
    assert lines[0].startswith("p0 0x00100") and lines[3].startswith("p0 0x00110")
    start = lines[0].index("expected ") + len("expected ")
    assert lines[0][start:] == " " * 12 + " ".join(["00"] * 12)     # bytes 0x104..0x10f under columns 4..15
    assert lines[1][start:] == " " * 12 + " ".join(["46"] * 12)
    assert lines[3][start:] == " ".join(["00"] * 4) and lines[4][start:] == " ".join(["46"] * 4)


def _xml_char(c: int) -> bool:
    """XML 1.0's Char production (https://www.w3.org/TR/xml/#charsets), written from the standard."""
    return c in (0x9, 0xA, 0xD) or 0x20 <= c <= 0xD7FF or 0xE000 <= c <= 0xFFFD or 0x10000 <= c <= 0x10FFFF


def test_shown_escapes_exactly_the_characters_xml_cannot_hold():
    """Every code point at once: a surrogate as shown_name escapes it, any other character outside XML's Char
    production as ``\\xNN``, every other character unchanged."""
    def expected(c: int) -> str:
        if 0xDC80 <= c <= 0xDCFF:
            return f"\\x{c - 0xDC00:02x}"
        if 0xD800 <= c <= 0xDFFF:
            return f"\\u{c:04x}"
        return chr(c) if _xml_char(c) else f"\\x{c:02x}"
    every = "".join(map(chr, range(0x110000)))
    assert report.shown(every) == "".join(map(expected, range(0x110000)))
