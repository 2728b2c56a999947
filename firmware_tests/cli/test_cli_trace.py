"""CLI: q7emu trace (record / show / diff / export / import / log) and q7emu profile."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from q7emu.analysis.trace import Trace
from q7emu.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CASE = str(ROOT / "examples/cases/mariana/mariana_7b_proc_4bit_non_mx_e2m1")
MX_CASE = str(ROOT / "examples/cases/mariana/mariana_7b_proc_4bit_mx_8_e2m1")


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    d = tmp_path_factory.mktemp("tr")
    assert main(["trace", CASE, "-o", str(d / "a.q7t")]) == 0
    return d, Trace.load(d / "a.q7t")


def test_trace_case_writes_file(capsys, tmp_path):
    rc, out, _ = run(capsys, "trace", CASE, "-o", tmp_path / "t.q7t")
    assert rc == 0 and "case PASS" in out and "proc_4bit_non_mx" in out
    t = Trace.load(tmp_path / "t.q7t")
    assert len(t) > 0 and t.case.endswith("mariana_7b_proc_4bit_non_mx_e2m1.json")
    assert t.runs[0]["knobs"]["nibble_order"] in ("low-first", "high-first")


def test_window_and_ops_limit_recording(capsys, tmp_path, traced):
    _, full = traced
    assert run(capsys, "trace", CASE, "-o", tmp_path / "w.q7t", "--window", "13:40")[0] == 0
    w = Trace.load(tmp_path / "w.q7t")
    assert w.records["seq"].tolist() == list(range(13, 40))
    # options before the target work too; --ops is a comma list and repeatable
    assert run(capsys, "trace", "--ops", "babssubunx16", CASE, "--ops", "sav2nx8_xp", "-o", tmp_path / "o.q7t")[0] == 0
    o = Trace.load(tmp_path / "o.q7t")
    assert set(o.mnemonics()) == {"babssubunx16", "sav2nx8_xp"}
    assert len(o) == full.op_counts()["babssubunx16"] + full.op_counts()["sav2nx8_xp"]
    assert o.to_raw() == full.subset(full.select(["babssubunx16", "sav2nx8_xp"])).to_raw()


def test_jsonl_output_and_export_import_byte_exact(capsys, tmp_path, traced):
    d, full = traced
    assert run(capsys, "trace", CASE, "-o", tmp_path / "t.jsonl", "--jsonl")[0] == 0
    assert run(capsys, "trace", "export", d / "a.q7t", "-o", tmp_path / "e.jsonl")[0] == 0
    assert (tmp_path / "t.jsonl").read_bytes() == (tmp_path / "e.jsonl").read_bytes()
    assert run(capsys, "trace", "import", tmp_path / "e.jsonl", "-o", tmp_path / "b.q7t")[0] == 0
    assert (tmp_path / "b.q7t").read_bytes() == (d / "a.q7t").read_bytes()


def test_show_filters(capsys, traced):
    d, _ = traced
    rc, out, _ = run(capsys, "trace", "show", d / "a.q7t", "--op", "labvdcmprs2nx8_xp", "--seq", "0:16",
                     "--lanes", "0:4")
    assert rc == 0
    recs = [line for line in out.splitlines() if line.startswith("#")]
    assert len(recs) == 1 and f"B{_label('RB_FIRST')}" in recs[0] and "labvdcmprs2nx8_xp" in recs[0]
    dst = [line for line in out.splitlines() if "dst v2 " in line][0]
    assert len(dst.split("]")[1].split()) == 4
    rc, out, _ = run(capsys, "trace", "show", d / "a.q7t", "--seq", "14")
    assert [line.split()[0] for line in out.splitlines() if line.startswith("#")] == ["#14"]
    assert "(1 of" in out


@pytest.fixture(scope="module")
def readme_trace(tmp_path_factory):
    """The README's trace: the first 400 ops of the MX e2m1 case (its kernel issues mulus4tan16xr16)."""
    path = tmp_path_factory.mktemp("readme") / "run.q7t"
    assert main(["trace", MX_CASE, "-o", str(path), "--window", "0:400"]) == 0
    return path


@pytest.mark.parametrize("name,why,nearest", [
    ("mulus4tn16xr16", "a q7emu op this trace does not hold", "mulus4tan16xr16"),   # the README's example before
    ("bminunx16", "a q7emu op this trace does not hold", "bminnx16"),
    ("sav2nx8xp", "not a q7emu mnemonic", "sav2nx8_xp"),
    ("frobnicate", "not a q7emu mnemonic", None)])
def test_show_refuses_an_op_the_trace_does_not_hold(capsys, readme_trace, name, why, nearest):
    """``trace show --op`` with a name none of the file's records has: one line, exit 2, with the nearest
    mnemonics it does hold (before: "0 of 400 records shown", exit 0; issue 40)."""
    for argv in (["--op", name], ["--op", f"addnx16,{name}"], ["--op", name, "--json"]):
        rc, out, err = run(capsys, "trace", "show", readme_trace, *argv)
        assert rc == 2 and (out == "" or json.loads(out)["format"] == "q7emu-error"), (argv, out)
        assert err.count("\n") == 1 and f"--op {name}" in err and why in err, err
        assert (f"nearest: {nearest}" in err) if nearest else ("nearest" not in err), err
    assert name not in Trace.load(readme_trace).op_counts()
    rc, out, _ = run(capsys, "trace", "show", readme_trace, "--op", "mulus4tan16xr16", "--lanes", "0:8")
    assert rc == 0 and "(32 of 400 records shown)" in out


def test_the_readme_trace_and_show_commands_show_records(capsys, tmp_path, monkeypatch):
    """README "Traces, profiles, exploration": its trace and trace show lines run as written and show records."""
    import shlex
    text = (ROOT / "README.md").read_text().split("## Traces, profiles, exploration", 1)[1]
    lines = [ln.split("#")[0] for ln in text.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()]
    trace, show = (shlex.split(ln) for ln in lines[:2])
    assert trace[:2] == ["q7emu", "trace"] and show[:3] == ["q7emu", "trace", "show"]
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    assert run(capsys, *trace[1:])[0] == 0
    rc, out, _ = run(capsys, *show[1:])
    shown = int(out.strip().splitlines()[-1].split()[0].lstrip("("))
    assert rc == 0 and shown > 0, out[-300:]


def test_record_refuses_an_unknown_op_with_the_nearest_names(capsys, tmp_path):
    rc, _, err = run(capsys, "trace", CASE, "-o", tmp_path / "t.q7t", "--ops", "sav2nx8xp")
    assert rc == 2 and err.count("\n") == 1 and "nearest: sav2nx8_xp" in err, err


def test_diff_identical_and_one_lane_changed(capsys, tmp_path, traced):
    d, full = traced
    rc, out, _ = run(capsys, "trace", "diff", d / "a.q7t", d / "a.q7t")
    assert rc == 0 and "identical" in out and f"{len(full)} records compared" in out
    # change lane 7 of the dst of seq 34 (RB_EXT1 packvrnrnx48: the odd codes' fp16) in an exported copy
    run(capsys, "trace", "export", d / "a.q7t", "-o", tmp_path / "e.jsonl")
    lines = (tmp_path / "e.jsonl").read_text().splitlines()
    obj = json.loads(lines[1 + 34])
    assert obj["seq"] == 34 and obj["op"] == "packvrnrnx48" and obj["bundle"] == _label("RB_EXT1")
    old = obj["operands"][2]["lanes"][7]
    new = format(int(old, 16) ^ 1, "04x")
    obj["operands"][2]["lanes"][7] = new
    lines[1 + 34] = json.dumps(obj)
    (tmp_path / "m.jsonl").write_text("\n".join(lines) + "\n")
    rc, out, _ = run(capsys, "trace", "diff", d / "a.q7t", tmp_path / "m.jsonl")
    assert rc == 1
    assert "seq 34 packvrnrnx48" in out and "operand 2 (dst vec v7, view nx16)" in out
    assert f"lane  7: A {old}  B {new}" in out
    assert "1 differ (first seq 34, last seq 34)" in out
    rc, out, _ = run(capsys, "trace", "diff", d / "a.q7t", tmp_path / "m.jsonl", "--align", "op")
    assert rc == 1 and "align op" in out and "seq 34 packvrnrnx48" in out


def test_diff_window_extra_records(capsys, tmp_path, traced):
    d, full = traced
    run(capsys, "trace", CASE, "-o", tmp_path / "w.q7t", "--window", "0:50")
    rc, out, _ = run(capsys, "trace", "diff", d / "a.q7t", tmp_path / "w.q7t")
    assert rc == 1 and f"{len(full) - 50} only in A" in out and "50 records compared" in out


def test_record_form_with_sbuf(capsys, tmp_path):
    from q7emu.machine.cases import load_case
    case = load_case(CASE)
    sbuf = np.zeros((128, case.partition_bytes), np.uint8)
    for reg, arr in case.inputs:
        sbuf[reg.partition:reg.partition + reg.count, reg.offset:reg.offset + reg.length] = arr
    np.savez(tmp_path / "s.npz", sbuf=sbuf)
    rc, out, _ = run(capsys, "trace", case.record.hex(), "--sbuf", tmp_path / "s.npz", "-g", case.generation.name,
                     "-o", tmp_path / "r.q7t")
    assert rc == 0
    r = Trace.load(tmp_path / "r.q7t")
    assert r.case == "record:" + case.record.hex()
    rc, out, _ = run(capsys, "trace", CASE, "-o", tmp_path / "c.q7t")
    assert r.to_raw() == Trace.load(tmp_path / "c.q7t").to_raw()


def test_profile_text_json_and_chrome(capsys, tmp_path, traced):
    _, full = traced
    rc, out, _ = run(capsys, "profile", MX_CASE, "--chrome-trace", tmp_path / "c.json")
    assert rc == 0 and "MAC stall" in out and "cycles/group" in out and "per bundle" in out
    assert "emulator wall time per op family" in out and "case PASS" in out
    ct = json.loads((tmp_path / "c.json").read_text())
    assert any(e["ph"] == "X" and e["name"] == "B21" for e in ct["traceEvents"])
    rc, out, _ = run(capsys, "profile", CASE, "--json")
    p = json.loads(out)
    assert rc == 0 and p["mnemonics"] == full.op_counts() and p["records"] == len(full)
    assert p["wall"]["execute_untraced_s"] > 0 and p["runs"][0]["cycles_per_element"] > 0


def test_profile_plot(capsys, tmp_path, monkeypatch):
    try:
        import matplotlib  # noqa: F401
        rc, out, _ = run(capsys, "profile", CASE, "--plot", tmp_path / "p.png")
        assert rc == 0 and (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    except ImportError:
        pass
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    rc, out, err = run(capsys, "profile", CASE, "--plot", tmp_path / "q.png")
    assert rc == 2 and "matplotlib" in err and not (tmp_path / "q.png").exists() and out == ""


@pytest.mark.parametrize("argv,msg", [
    (["trace"], "subcommand"),
    (["trace", CASE], "-o FILE is required"),
    (["trace", CASE, "-o", "x.q7t", "--ops", "bogus"], "bogus"),
    (["trace", CASE, "-o", "x.q7t", "--window", "9:3"], "--window"),
    (["trace", "show"], "FILE"),
    (["trace", "show", "/nonexistent.q7t"], "no such trace file"),
    (["trace", "diff", "only_one"], "B"),
    (["trace", "00" * 10, "-o", "x.q7t"], "64 bytes"),
    (["profile"], "CASE|RECORD"),
])
def test_usage_errors(capsys, argv, msg, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and msg in err and len(err.strip().splitlines()) == 1


def _label(name):
    """A bundle label of the TensorDequantize kernels (docs/model.md §9.1), from their programs' labels (the re-bias,
    NF4 table and MX paths')."""
    from q7emu.kernels import dequant
    return next(tag for fmt, group in ((1, 0), (3, 0), (1, 8))
                for tag, label in dequant.listing_run(1, fmt, group, {})[1].items() if label == name)


def test_import_and_show_a_long_mnemonic(capsys, tmp_path):
    """trace import / show / export carry a 17..31-character mnemonic; 32 characters are refused (exit 2)."""
    def line(op):
        return json.dumps({"op": op, "operands": [{"kind": "scalar", "reg": 253, "lanes": ["40"]}]}) + "\n"

    (tmp_path / "a.jsonl").write_text(line("addnx16") + line("labvdcmprs2nx8_xp") + line("y" * 31))
    assert run(capsys, "trace", "import", tmp_path / "a.jsonl", "-o", tmp_path / "a.q7t")[0] == 0
    rc, out, _ = run(capsys, "trace", "show", tmp_path / "a.q7t", "--op", "labvdcmprs2nx8_xp")
    assert rc == 0 and "labvdcmprs2nx8_xp" in out and "addnx16" not in out
    assert run(capsys, "trace", "export", tmp_path / "a.q7t", "-o", tmp_path / "b.jsonl")[0] == 0
    assert [json.loads(x)["op"] for x in (tmp_path / "b.jsonl").read_text().splitlines()[1:]] == \
        ["addnx16", "labvdcmprs2nx8_xp", "y" * 31]
    (tmp_path / "c.jsonl").write_text(line("y" * 32))
    rc, _, err = run(capsys, "trace", "import", tmp_path / "c.jsonl", "-o", tmp_path / "c.q7t")
    assert rc == 2 and "'op' must be a mnemonic of 1..31 ASCII characters" in err and not (tmp_path / "c.q7t").exists()


# ------------------------------------------------------------------------------ the operand convention
def test_runs_record_the_c_intrinsic_operand_order(traced):
    """docs/traces.md §1.4: every run says which operand order its records follow."""
    from q7emu.analysis.trace import OPERAND_ORDER, operand_orders
    _, t = traced
    assert OPERAND_ORDER == "c-intrinsic" and operand_orders(t.runs) == [OPERAND_ORDER] * len(t.runs)
    # a dual select's operands in the trace: odd, even, hi, lo, sel, vb (sources first, then the outputs)
    rec = next(t[i] for i in range(len(t)) if t[i].op == "dselnx16t")
    assert [(o.role, o.kind_name) for o in rec.operands][-2:] == [(1, "vec"), (1, "vec")]


def _legacy_copy(src: Path, dst: Path) -> None:
    """The same trace as an earlier q7emu wrote it: its runs without ``operand_order``."""
    t = Trace.load(src)
    t.runs = [{k: v for k, v in r.items() if k != "operand_order"} for r in t.runs]
    t.save(dst)


def test_a_trace_without_operand_order_loads_as_legacy(tmp_path, traced):
    from q7emu.analysis.trace import LEGACY_OPERAND_ORDER, operand_orders
    d, t = traced
    _legacy_copy(d / "a.q7t", tmp_path / "old.q7t")
    old = Trace.load(tmp_path / "old.q7t")
    assert operand_orders(old.runs) == [LEGACY_OPERAND_ORDER] * len(old.runs) and len(old) == len(t)
    assert old.to_raw() == t.to_raw()                  # the records themselves load unchanged


def test_diff_across_operand_orders_is_one_line_exit_2(capsys, tmp_path, traced):
    d, _ = traced
    _legacy_copy(d / "a.q7t", tmp_path / "old.q7t")
    rc, out, err = run(capsys, "trace", "diff", d / "a.q7t", tmp_path / "old.q7t")
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (rc, out, err)
    assert "C intrinsics' operand order" in err and "earlier operand order" in err and "§1.4" in err
    # the same files with the same convention compare as usual
    rc, out, _ = run(capsys, "trace", "diff", d / "a.q7t", d / "a.q7t")
    assert rc == 0


def test_an_unknown_operand_order_is_refused(tmp_path, traced):
    from q7emu.analysis.trace import TraceError
    d, _ = traced
    t = Trace.load(d / "a.q7t")
    t.runs = [dict(r, operand_order="middle-out") for r in t.runs]
    t.save(tmp_path / "bad.q7t")
    with pytest.raises(TraceError, match="operand_order"):
        Trace.load(tmp_path / "bad.q7t")


# ------------------------------------------------------------------------------ subcommands (issue 24 item 3)
def test_record_subcommand_is_the_bare_form(capsys, tmp_path, traced):
    """`trace record CASE` and today's `trace CASE` write the same bytes (and options may come first)."""
    d, _ = traced
    assert run(capsys, "trace", "record", CASE, "-o", tmp_path / "r.q7t")[0] == 0
    assert run(capsys, "trace", "-o", tmp_path / "s.q7t", CASE)[0] == 0
    assert (tmp_path / "r.q7t").read_bytes() == (d / "a.q7t").read_bytes() == (tmp_path / "s.q7t").read_bytes()


def test_log_subcommand_gives_the_recording_log(capsys, tmp_path, traced):
    """`trace log FILE` prints the lines `trace --log` streamed while recording (docs/traces.md §6)."""
    d, full = traced
    assert run(capsys, "trace", CASE, "--log", tmp_path / "rec.log", "--window", "0:300")[0] == 0
    want = (tmp_path / "rec.log").read_text()
    assert want.count("\n") == 300
    rc, out, err = run(capsys, "trace", "log", d / "a.q7t", "--seq", "0:300")
    assert rc == 0 and out == want and err == ""
    rc, out, _ = run(capsys, "trace", "log", d / "a.q7t", "-o", tmp_path / "f.log", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["format"] == "q7emu-trace-log" and doc["records"] == doc["total"] == len(full)
    text = (tmp_path / "f.log").read_text()
    assert text.startswith(want) and text.count("\n") == len(full) and doc["output_bytes"] == len(text.encode())
    rc, out, err = run(capsys, "trace", "log", d / "a.q7t", "--json")
    assert rc == 2 and "-o FILE" in err and json.loads(out)["format"] == "q7emu-error"


@pytest.mark.parametrize("sub", ["record", "show", "diff", "export", "import", "log"])
def test_each_subcommand_has_help_and_json(capsys, sub):
    rc, out, _ = run(capsys, "trace", sub, "--help")
    assert rc == 0 and out.startswith(f"usage: q7emu trace {sub} ") and "--json" in out


def test_trace_help_lists_the_subcommands(capsys):
    rc, out, _ = run(capsys, "trace", "--help")
    assert rc == 0 and all(f"\n    {w} " in out for w in ("record", "show", "diff", "export", "import", "log"))


def test_unknown_option_names_the_subcommand(capsys, traced):
    d, _ = traced
    rc, _, err = run(capsys, "trace", "show", d / "a.q7t", "--bogus", "1")
    assert rc == 2 and err.strip() == "q7emu trace show: error: unrecognized arguments: --bogus 1"
    rc, _, err = run(capsys, "trace", CASE, "-o", d / "x.q7t", "--bogus")
    assert rc == 2 and err.strip() == "q7emu trace record: error: unrecognized arguments: --bogus"


def test_a_case_named_like_a_subcommand(capsys, tmp_path, monkeypatch, traced):
    """A word after `trace` is a subcommand only when it is one exactly: a CASE named show is ./show."""
    d, _ = traced
    for ext in (".json", ".npz"):
        (tmp_path / f"show{ext}").write_bytes(Path(CASE + ext).read_bytes())
    monkeypatch.chdir(tmp_path)
    rc, out, _ = run(capsys, "trace", "./show", "-o", "t.q7t")
    assert rc == 0 and "case PASS" in out
    assert Trace.load(tmp_path / "t.q7t").to_raw() == Trace.load(d / "a.q7t").to_raw()
    rc, _, err = run(capsys, "trace", "show", "-o", "u.q7t")
    assert rc == 2 and err.startswith("q7emu trace show: error:") and not (tmp_path / "u.q7t").exists()
