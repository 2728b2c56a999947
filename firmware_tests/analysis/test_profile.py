"""Profiles (q7emu.analysis.profile): counts equal the trace's, the cycle model on hand-counted listings, Chrome trace."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import q7emu
from q7emu.errors import Q7Error
from q7emu.analysis.profile import chrome_trace, cycle_schedule, family, format_profile, plot, profile
from q7emu.analysis.trace import Recorder


def traced(fn, *args, **kw):
    rec = Recorder(**{k: kw.pop(k) for k in ("window", "ops") if k in kw})
    fn(*args, trace=rec, **kw)
    return rec.trace


@pytest.fixture(scope="module")
def non_mx():
    return traced(q7emu.dequantize, np.array([[0x21, 0x43, 0x65, 0x87]], np.uint8), 1, 0)


@pytest.fixture(scope="module")
def mx():
    return traced(q7emu.dequantize, np.array([[127, 0x21, 0x43, 0x65, 0x87] * 4], np.uint8), 1, 8)


def test_counts_equal_trace_counts(mx):
    p = profile(mx, time_ops=False)
    assert p["mnemonics"] == mx.op_counts()
    assert sum(p["mnemonics"].values()) == len(mx) == p["records"]
    assert sum(b["ops"] for b in p["bundles"]) == len(mx)
    names, counts = np.unique(mx.records["op"], return_counts=True)
    assert {n.decode(): int(c) for n, c in zip(names, counts)} == p["mnemonics"]


def test_issue_count_of_one_pass(non_mx):
    # from the listing: B0, B1, B4, 2 x (B5 + re-bias decode B6..B11 + B12 + B13), B37, B38
    p = profile(non_mx, time_ops=False)
    run = p["runs"][0]
    assert run["issues"] == 1 + 1 + 1 + 2 * (1 + 6 + 2) + 2 == 23
    assert run["mac_stall_cycles"] == 0 and run["cycles"] == 23
    assert run["output_elements"] == 8 and run["groups"] == 1 and run["cycles_per_element"] == 23 / 8
    b5 = next(b for b in p["bundles"] if b["bundle"] == 5)
    assert (b5["issues"], b5["ops"]) == (2, 2)
    b0 = next(b for b in p["bundles"] if b["bundle"] == 0)
    assert (b0["issues"], b0["ops"]) == (1, 12)


def test_mac_latency_stall(mx):
    # B0..B3, B4..B12, 2 x (B13 + B14..B23 + B24 + B25 + B26..B38), B39..B41; B25 packs the wvec B24 wrote
    iid, cycles, stalls = cycle_schedule(mx)
    assert len(cycles) == 4 + 9 + 2 * (1 + 10 + 2 + 13) + 3 == 68
    assert int(stalls.sum()) == 2
    pack_rows = np.nonzero(mx.records["op"] == b"packvrnrnx48")[0]
    mul_rows = np.nonzero(mx.records["op"] == b"mulus4tn16xr16")[0]
    for pr, mr in zip(pack_rows, mul_rows):
        assert stalls[iid[pr]] == 1
        assert cycles[iid[pr]] - cycles[iid[mr]] == 2          # latency 2
    p = profile(mx, time_ops=False)
    run = p["runs"][0]
    assert (run["issues"], run["mac_stall_cycles"], run["cycles"]) == (68, 2, 70)
    assert run["output_elements"] == 32 and run["groups"] == 4 and run["cycles_per_group"] == 70 / 4
    assert next(b for b in p["bundles"] if b["bundle"] == 25)["stall_cycles"] == 2
    assert profile(mx, mac_latency=1, time_ops=False)["runs"][0]["mac_stall_cycles"] == 0
    assert profile(mx, mac_latency=3, time_ops=False)["runs"][0]["mac_stall_cycles"] == 4


def test_quantize_mx_profile():
    x = (np.arange(32 * 8, dtype=np.float32).reshape(32, 8) / 7).astype(np.float16)
    t = traced(q7emu.quantize_mx, x)
    p = profile(t, time_ops=False)
    run = p["runs"][0]
    packs = int((t.records["op"] == b"packvrnrnx48").sum())
    assert run["mac_stall_cycles"] == packs == 4 * 8        # 4 row blocks x 8 rows, 1 chunk
    assert run["output_elements"] == 32 * 8 and run["groups"] == 8
    assert p["mnemonics"] == t.op_counts()


def test_families_and_wall_time(mx):
    p = profile(mx, wall={"execute_untraced_s": 0.001})
    fams = {f["family"]: f for f in p["families"]}
    assert fams["MAC"]["ops"] == 2 and fams["MAC"]["ns_per_op"] > 0
    assert fams["load/store"]["ns_per_op"] is None and fams["load/store"]["untimed_ops"] == fams["load/store"]["ops"]
    assert sum(f["ops"] for f in p["families"]) == len(mx)
    assert family("sel2nx8i_s4") == "select/shuffle" and family("movnx16t") == "predicated move"
    text = format_profile(p)
    assert "cycles/group" in text and "MAC stall" in text and "execute_untraced_s 1.000 ms" in text
    json.dumps(p)


def test_filtered_trace_is_marked(non_mx):
    t = traced(q7emu.dequantize, np.zeros((1, 4), np.uint8), 1, 0, ops=["addnx16"])
    assert profile(t, time_ops=False)["complete"] is False
    assert profile(non_mx, time_ops=False)["complete"] is True


def test_chrome_trace_one_slice_per_bundle(mx):
    ct = chrome_trace(mx)
    json.dumps(ct)
    slices = [e for e in ct["traceEvents"] if e["ph"] == "X" and e["name"].startswith("B")]
    stalls = [e for e in ct["traceEvents"] if e["ph"] == "X" and e["name"] == "MAC stall"]
    assert len(slices) == 68 and len(stalls) == 2
    assert [e["ts"] for e in slices] == sorted(e["ts"] for e in slices)
    assert slices[-1]["ts"] == 69 and slices[0]["args"]["ops"][0] == "lv2nx8_i"
    assert sum(len(e["args"]["ops"]) for e in slices) == len(mx)


def test_plot_needs_matplotlib(mx, tmp_path, monkeypatch):
    p = profile(mx, time_ops=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(Q7Error, match="matplotlib"):
        plot(p, tmp_path / "x.png")


def test_plot_writes_png(mx, tmp_path):
    pytest.importorskip("matplotlib")
    out = plot(profile(mx, time_ops=False), tmp_path / "mix.png")
    assert out.read_bytes()[:4] == b"\x89PNG"
