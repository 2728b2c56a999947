"""q7emu.analysis.explore: identifying knob values from device-like cases."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from q7emu.analysis.explore import applicable_knobs, explore, parse_knob_space
from q7emu.errors import InvalidArgument
from q7emu.machine.cases import build_case, load_case, save_case

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "examples" / "cases"
MX8 = CASES / "mariana" / "mariana_7b_proc_4bit_mx_8_e2m1.json"
QMX = CASES / "mariana" / "mariana_e3_quantize_mx_e4m3.json"          # fp16 source, NaN and Inf inside
QMX_BF16 = CASES / "mariana" / "mariana_e3_quantize_mx_e5m2.json"     # bf16 source, NaN and Inf inside
UNDERFLOW = ("wrap", "clamp", "unclamped-data", "unwrapped-data")
NONFINITE = ("sim", "ocp")


def golden_case(template: Path, knobs: dict[str, str], tweak=None):
    """A case whose expected bytes come from the golden models under ``knobs`` (the template's record and inputs)."""
    t = load_case(template)
    inputs = [(reg, arr.copy()) for reg, arr in t.inputs]
    if tweak:
        tweak(inputs)
    return build_case(t.record, t.generation, inputs, None, knobs=knobs, partition_bytes=t.partition_bytes,
                      name=f"golden_{'_'.join(knobs.values())}", backend="golden",
                      allow_unread=True)          # the shipped inputs keep decoy bytes between the strided runs


def test_applicable_knobs():
    assert applicable_knobs(load_case(MX8)) == ("nibble_order", "mx_layout", "mx_scale")
    assert applicable_knobs(load_case(QMX)) == ("emax", "underflow", "nonfinite")
    assert applicable_knobs(load_case(CASES / "cayman" / "cayman_7b_proc_6bit_non_mx_e2m3.json")) == ("fp6_packing",)
    assert applicable_knobs(load_case(CASES / "cayman" / "cayman_7b_proc_4bit_non_mx_nf4.json")) == \
        ("nibble_order", "nf4_table")


def test_shipped_cases_identify_the_defaults():
    r = explore(CASES)
    assert r.explained and len(r.cases) == 34
    defaults = {"nibble_order": "low-first", "fp6_packing": "lsb-first", "mx_layout": "scale-first",
                "mx_scale": "e8m0", "nf4_table": "qlora", "emax": "ocp", "underflow": "wrap", "nonfinite": "sim"}
    # The shipped QuantizeMX cases underflow only in an all-zero block (m = 0): its byte is wrapped alike by
    # wrap and unwrapped-data, and zeros divide to zero under either divisor, so those two stay grouped.
    assert r.consistent == [defaults, dict(defaults, underflow="unwrapped-data")]
    assert len([c for c in r.candidates if c.ok]) == 1
    assert r.per_knob["mx_layout"]["consistent"] == ["scale-first"]
    assert r.per_knob["nonfinite"]["consistent"] == ["sim"]       # the cases hold a NaN and an Inf
    assert "REPRODUCED" in r.format()


def test_mx_scale_last_high_first_identified():
    case = golden_case(MX8, {"mx_layout": "scale-last", "nibble_order": "high-first"})
    r = explore([case])
    assert r.explained
    assert r.per_knob["nibble_order"]["consistent"] == ["high-first"]
    assert r.per_knob["mx_layout"]["consistent"] == ["scale-last"]
    truth = {"nibble_order": "high-first", "mx_layout": "scale-last", "mx_scale": "e8m0"}
    assert truth in r.consistent
    # whatever else fits gives identical bytes: one indistinguishable group
    assert len([c for c in r.candidates if c.ok]) == 1


def test_mx_scale_nan_rule_identified_with_an_ff_scale():
    def ff_scale(inputs):            # scale-first: byte 0 of every 5-byte group is the scale
        inputs[0][1][:, 0] = 0xFF
    case = golden_case(MX8, {"mx_scale": "e8m0-nonan"}, ff_scale)
    r = explore([case])
    assert r.consistent == [{"nibble_order": "low-first", "mx_layout": "scale-first", "mx_scale": "e8m0-nonan"}]


def test_quantize_alt_clamp_identified():
    def zero_block(inputs):          # a block whose max exponent is 0: wrap and clamp differ
        reg, arr = inputs[0]
        arr[:8, :8] = 0
        arr[8:16, 8:16] = np.frombuffer(np.full(4, 0x0001, np.uint16).tobytes(), np.uint8)  # fp16 subnormals
    case = golden_case(QMX, {"emax": "alt", "underflow": "clamp"}, zero_block)
    r = explore([case])
    # fp16 source: its only underflowing blocks are all-zero (fp16 0x0001 = 2^-24 has fp32 field 103), so
    # unclamped-data (same byte, true divisor) gives the same bytes as clamp; the tweak also overwrote the
    # template's NaN (partition 0) and Inf (partition 9), so nonfinite is not decided either
    assert [(m["emax"], m["underflow"]) for m in r.consistent] == [("alt", "clamp")] * 2 + \
        [("alt", "unclamped-data")] * 2
    assert len([c for c in r.candidates if c.ok]) == 1
    assert r.per_knob["emax"]["consistent"] == ["alt"]
    assert r.per_knob["underflow"]["consistent"] == ["clamp", "unclamped-data"]
    assert r.per_knob["nonfinite"]["consistent"] == ["sim", "ocp"]


def _bf16_small_block(inputs):
    """Partitions 24..31, elements 0..3 (one MX block) of the bf16 tile: 2^-133 (0x0001, field 0) ... 2^-126
    (0x0080, field 1) and zeros -- a non-zero block with m < max_exp, where every underflow value differs."""
    reg, arr = inputs[0]
    vals = np.zeros((8, 4), np.uint16)
    vals[0, :] = [0x0001, 0x8040, 0x0080, 0x007F]
    vals[5, 2] = 0x0003
    arr[24:32, 0:8] = vals.view(np.uint8)


@pytest.mark.parametrize("nonfinite", NONFINITE)
@pytest.mark.parametrize("underflow", UNDERFLOW)
def test_quantize_underflow_nonfinite_identified_uniquely(underflow, nonfinite):
    # bf16 case with a NaN, an Inf (the template's) and a non-zero block whose m is below max_exp: every
    # (underflow, nonfinite) value gives different bytes, so the value a case was made under is the only one
    truth = {"emax": "ocp", "underflow": underflow, "nonfinite": nonfinite}
    r = explore([golden_case(QMX_BF16, truth, _bf16_small_block)])
    assert r.consistent == [truth]
    assert r.per_knob["underflow"]["consistent"] == [underflow]
    assert r.per_knob["nonfinite"]["consistent"] == [nonfinite]
    assert len(r.candidates) == 16 and all(len(c.members) == 1 for c in r.candidates)   # 2 x 4 x 2, all apart


@pytest.mark.parametrize("underflow", UNDERFLOW)
def test_quantize_fp16_underflow_grouped(underflow):
    # fp16 source: an fp16 value is 0 or has fp32 field >= 103 > max_exp, so only all-zero blocks underflow;
    # zeros divide to zero under any divisor, so each value is grouped with the one storing the same byte
    # (wrap ~ unwrapped-data, clamp ~ unclamped-data)
    def zero_block(inputs):
        inputs[0][1][:8, :8] = 0
    truth = {"emax": "ocp", "underflow": underflow, "nonfinite": "sim"}
    r = explore([golden_case(QMX, truth, zero_block)])
    same_byte = {"wrap": "unwrapped-data", "unwrapped-data": "wrap", "clamp": "unclamped-data",
                 "unclamped-data": "clamp"}[underflow]
    assert sorted(m["underflow"] for m in r.consistent) == sorted([underflow, same_byte])
    assert len([c for c in r.candidates if c.ok]) == 1 and "indistinguishable" in r.format()


def test_quantize_nonfinite_grouped_without_nan_or_inf():
    # no NaN or Inf anywhere: sim and ocp differ on no block, so they are one group
    def finite(inputs):
        reg, arr = inputs[0]
        x = arr.view(np.uint16)
        x[(x & 0x7F80) == 0x7F80] = 0x3F80                   # every bf16 NaN / Inf -> 1.0
    truth = {"emax": "ocp", "underflow": "wrap", "nonfinite": "ocp"}
    r = explore([golden_case(QMX_BF16, truth, lambda inp: (finite(inp), _bf16_small_block(inp)))])
    assert r.consistent == [dict(truth, nonfinite="sim"), truth]
    assert r.per_knob["nonfinite"]["consistent"] == ["sim", "ocp"]


def test_indistinguishable_reported_as_such():
    # default-made QuantizeMX case without any underflowing block: underflow cannot be told apart
    case = load_case(QMX)
    r = explore([case])
    groups = [c for c in r.candidates if c.ok]
    if len(r.consistent) > 1:
        assert len(groups) == 1 and len(groups[0].members) == len(r.consistent)
        assert "indistinguishable" in r.format()
        assert r.to_json()["consistent_groups"][0]["indistinguishable"]


def test_unexplained_case_best_candidates(tmp_path):
    case = load_case(MX8)
    reg, exp = case.expected[0]
    exp[2, 5] ^= 0x01
    r = explore([case])
    assert not r.explained and r.consistent == []
    best = r.candidates[0]
    assert best.matched == best.total - 1
    assert {"nibble_order": "low-first", "mx_layout": "scale-first", "mx_scale": "e8m0"} in best.members
    m = best.first_mismatch
    assert (m["partition"], m["offset"], m["count"]) == (reg.partition + 2, reg.offset + 5, 1)
    assert m["expected"] == int(exp[2, 5])
    text = r.format()
    assert "NOT REPRODUCED" in text and "first mismatch" in text
    assert r.per_knob["mx_layout"]["consistent"] == []
    # ranked by matching bytes
    assert [c.matched for c in r.candidates] == sorted((c.matched for c in r.candidates), reverse=True)


def test_knob_restriction():
    case = golden_case(MX8, {"mx_layout": "scale-last"})
    r = explore([case], knobs=["mx_layout=scale-first,word-block"])
    assert list(r.space) == ["mx_layout"] and not r.explained
    r2 = explore([case], knobs={"mx_layout": ["scale-last", "word-block"]})
    assert r2.consistent == [{"mx_layout": "scale-last"}]
    assert parse_knob_space(["emax"]) == {"emax": ("ocp", "alt")}
    with pytest.raises(InvalidArgument):
        parse_knob_space(["emax=nope"])


def test_jobs_give_the_same_result():
    a = explore(CASES, jobs=1).to_json()
    b = explore(CASES, jobs=2).to_json()
    for r in (a, b):
        r.pop("seconds"), r.pop("jobs")
    assert a == b


def test_cli_explore(tmp_path, capsys):
    from q7emu.cli.main import main
    case = golden_case(MX8, {"nibble_order": "high-first"})
    p = save_case(case, tmp_path / "dev")
    assert main(["explore", str(p), "--json", "--no-progress"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["explained"] and d["per_knob"]["nibble_order"]["consistent"] == ["high-first"]
    assert main(["explore", str(p), "--knobs", "nibble_order=low-first", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "NOT REPRODUCED" in out and "first mismatch" in out
    assert main(["explore", str(tmp_path / "missing")]) == 2
    assert main(["explore", str(p), "--knobs", "bogus=1"]) == 2


def test_jobs_speedup(capsys):
    """--jobs 2 vs --jobs 1 on the shipped cases x all knob combinations. Reports the ratio; asserts >= 1.6
    only with Q7EMU_TIMING_TESTS=1 (timings depend on the machine and its load)."""
    explore(CASES, jobs=1)

    def best(jobs, n=5):
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            explore(CASES, jobs=jobs)
            ts.append(time.perf_counter() - t0)
        return min(ts)
    t1, t2 = best(1), best(2)
    ratio = t1 / t2
    with capsys.disabled():
        print(f"\nexplore shipped cases: jobs=1 {t1 * 1000:.1f} ms, jobs=2 {t2 * 1000:.1f} ms, "
              f"speed-up {ratio:.2f}x (cpus: {os.cpu_count()})")
    if os.environ.get("Q7EMU_TIMING_TESTS") == "1":
        assert ratio >= 1.6
