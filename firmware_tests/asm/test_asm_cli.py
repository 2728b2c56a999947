"""The command line of programs (docs/asm.md §7, docs/cli.md §3.11): asm check / asm run, replay / trace / profile
--program, listing --asm; exit statuses (0 pass, 1 mismatch, 2 bad input in one line, 130 interrupted) and the
JSON documents. Expected bytes come from numpy arithmetic on the input image, never from the interpreter."""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from firmware_tests.cli_support import one_line, run
from firmware_tests.signal_support import cpu_seconds, default_dispositions

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "examples" / "cases"
NF4 = CASES / "cayman" / "cayman_7b_proc_4bit_non_mx_nf4.json"
MX = CASES / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1.json"
QMX = CASES / "mariana" / "mariana_e3_quantize_mx_e4m3.json"
#: seconds after which a run that should have stopped is called hung
HANG = 60

DOUBLE = """\
    ivp_lv2nx8_i v1, a2, 0                   # the 64 bytes at a2
    { ivp_add2nx8 v2, v1, v1 ; addi a4, a2, 64 }
    ivp_sv2nx8_ip v2, a4, 64                 # doubled, 64 bytes further on
    retw
"""


@pytest.fixture
def image(tmp_path):
    sbuf = np.random.default_rng(3).integers(0, 256, (128, 0x400), dtype=np.uint8)
    path = tmp_path / "in.npz"
    np.savez(path, sbuf=sbuf)
    return path, sbuf


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


# ------------------------------------------------------------------------------------------------ asm check
def test_asm_check_summarises_a_program(capsys, tmp_path):
    prog = write(tmp_path, "double.s", DOUBLE)
    code, out, err = run(capsys, "asm", "check", prog)
    assert code == 0 and err == ""
    assert out.startswith(f"{prog}: ok: 4 bundles, 5 ops (3 IVP, 2 scalar), 0 data bytes"), out
    code, out, _ = run(capsys, "asm", "check", prog, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["format"] == "q7emu-asm-check" and doc["version"] == 1
    assert (doc["bundles"], doc["ops"], doc["ivp_ops"], doc["scalar_ops"], doc["snapshot_bundles"]) == (4, 5, 3, 2, 0)


def test_asm_check_print_reassembles_to_itself(capsys, tmp_path):
    prog = write(tmp_path, "m.s", ".equ STEP, 32\n.macro twice r\n  ivp_add2nx8 \\r, \\r, \\r\n.endm\n"
                                  "  twice v3\n  addi a2, a2, STEP * 2\n  retw\n")
    code, printed, _ = run(capsys, "asm", "check", prog, "--print")
    assert code == 0 and "addi a2, a2, 64" in printed and ".macro" not in printed
    again = write(tmp_path, "again.s", printed)
    code, printed2, _ = run(capsys, "asm", "check", again, "--print")
    assert code == 0 and printed2.splitlines()[1:] == printed.splitlines()[1:]   # the first line names the file


@pytest.mark.parametrize("text, where, rule", [
    ("  ivp_add2nx8 v1, v2\n", "bad.s:1:", "operand"),
    ("  nop\n  ivp_frob v1, v2, v3\n", "bad.s:2:", "ivp_frob"),
    ("  { ivp_add2nx8 v1, v2, v3 ; ivp_sub2nx8 v1, v2, v3 }\n", "bad.s:1", "v1"),
    ("  j nowhere\n", "bad.s:1:", "nowhere"),
    ("  addi a2, a2, 1000\n", "bad.s:1:", "addi"),
])
def test_asm_check_refuses_a_bad_program_in_one_line(capsys, tmp_path, text, where, rule):
    prog = write(tmp_path, "bad.s", text)
    code, out, err = run(capsys, "asm", "check", prog)
    line = one_line(err)
    assert code == 2 and out == "" and line.startswith(f"q7emu: error: {prog}"[:-len("bad.s")] + where), line
    assert rule in line, line
    code, out, err = run(capsys, "asm", "check", prog, "--json")
    doc = json.loads(out)
    assert code == 2 and doc["format"] == "q7emu-error" and where in doc["error"] and rule in doc["error"]


def test_a_program_larger_than_the_limit_is_refused_before_it_is_read_whole(capsys, tmp_path):
    big = tmp_path / "big.s"
    with open(big, "w") as f:
        line = "  nop\n" * 1000
        for _ in range(10_000_000 // len(line) + 1):
            f.write(line)
    code, _, err = run(capsys, "asm", "check", big)
    assert code == 2 and "larger than 1048576 bytes" in one_line(err)


def test_a_program_that_is_not_a_regular_file_is_refused(capsys, tmp_path):
    fifo = tmp_path / "fifo.s"
    os.mkfifo(fifo)                       # no writer: a blocking open would hang
    code, _, err = run(capsys, "asm", "check", fifo)
    assert code == 2 and "not a regular file" in one_line(err)
    code, _, err = run(capsys, "asm", "check", tmp_path)
    assert code == 2 and "not a regular file" in one_line(err)
    code, _, err = run(capsys, "asm", "check", tmp_path / "none.s")
    assert code == 2 and "cannot read the program" in one_line(err)


def test_a_kernel_program_read_raw_names_its_configuration_symbol(capsys):
    code, _, err = run(capsys, "asm", "check", ROOT / "q7emu" / "kernels" / "programs" / "proc_4bit_non_mx.s")
    line = one_line(err)
    assert code == 2 and "undefined symbol" in line and "--define" in line and "listing KERNEL --asm" in line


def test_define_and_reading_reach_the_program(capsys, tmp_path):
    prog = write(tmp_path, "d.s", "  movi a3, WIDTH\n  ivp_sel2nx8i_s4 v1, v2, v3, 9\n  retw\n")
    code, _, err = run(capsys, "asm", "check", prog)
    assert code == 2 and "WIDTH" in one_line(err)
    code, out, _ = run(capsys, "asm", "check", prog, "--define", "WIDTH=12", "--reading", "sel2nx8i_s4=select",
                       "--json")
    doc = json.loads(out)
    assert code == 0 and doc["readings"] == {"sel2nx8i_s4": "select"}
    for bad in (["--define", "WIDTH"], ["--reading", "sel2nx8i_s4=sideways"], ["--reading", "add2nx8=select"]):
        code, _, err = run(capsys, "asm", "check", prog, *bad)
        assert code == 2, bad
        one_line(err)


# ------------------------------------------------------------------------------------------------ asm run
def test_asm_run_writes_the_image_after_the_program(capsys, tmp_path, image):
    path, sbuf = image
    prog = write(tmp_path, "double.s", DOUBLE)
    out_path = tmp_path / "out.npz"
    code, out, err = run(capsys, "asm", "run", prog, "--sbuf", path, "--partitions", "0:4,17", "--set", "a2=0x40",
                         "-o", out_path, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["format"] == "q7emu-asm-run" and doc["partitions"] == [0, 1, 2, 3, 17]
    assert doc["steps"] == [4] * 5 and doc["bundles"] == 20
    assert all(regs[2] == 0x40 and regs[4] == 0x40 + 64 + 64 for regs in doc["registers"].values())
    want = sbuf.copy()
    for p in (0, 1, 2, 3, 17):
        want[p, 0x80:0xC0] = (sbuf[p, 0x40:0x80].astype(np.uint16) * 2).astype(np.uint8)
    got = np.load(out_path)["sbuf"]
    assert got.dtype == np.uint8 and np.array_equal(got, want)


def test_asm_run_records_a_trace_of_its_ivp_ops(capsys, tmp_path, image):
    path, sbuf = image
    prog = write(tmp_path, "double.s", DOUBLE)
    code, _, err = run(capsys, "asm", "run", prog, "--sbuf", path, "--partitions", "5", "--set", "a2=0x40",
                       "-o", tmp_path / "o.npz", "--trace", tmp_path / "t.q7t")
    assert code == 0, err
    code, out, _ = run(capsys, "trace", "show", tmp_path / "t.q7t", "--json")
    doc = json.loads(out)
    assert [r["op"] for r in doc["records"]] == ["lv2nx8_i", "add2nx8", "sv2nx8_ip"]
    add = doc["records"][1]
    (dst,) = [o for o in add["operands"] if o["role"] == "dst"]
    doubled = [f"{b:02x}" for b in (sbuf[5, 0x40:0x80].astype(np.uint16) * 2 & 0xFF)]
    assert dst["lanes"] == doubled


@pytest.mark.parametrize("argv, rule", [
    (["--set", "a16=1"], "a16"),
    (["--set", "a2"], "--set"),
    (["--set", "a2=x"], "integer"),
    (["--partitions", "128"], "--partitions"),
    (["--partitions", "3,3"], "twice"),
    (["--max-steps", "0"], "--max-steps"),
])
def test_asm_run_refuses_bad_arguments_in_one_line(capsys, tmp_path, image, argv, rule):
    prog = write(tmp_path, "double.s", DOUBLE)
    code, _, err = run(capsys, "asm", "run", prog, "--sbuf", image[0], "-o", tmp_path / "o.npz", *argv)
    assert code == 2 and rule in one_line(err)
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("text, rule", [
    ("  ivp_lv2nx8_i v1, a2, 0\n  retw\n", "outside every memory region"),           # a2 = 0x400: past the end
    ("  ivp_lv2nx8_i v1, a2, 4\n  retw\n", "aligned"),
    ("  movi a3, 0\n  quou a4, a2, a3\n  retw\n", "divide"),
    ("top:\n  j top\n", "step budget"),
])
def test_a_run_that_meets_an_error_names_the_line_and_partition(capsys, tmp_path, image, text, rule):
    prog = write(tmp_path, "e.s", text)
    code, _, err = run(capsys, "asm", "run", prog, "--sbuf", image[0], "--partitions", "7", "--set", "a2=0x400",
                       "--max-steps", "1000", "-o", tmp_path / "o.npz")
    line = one_line(err)
    assert code == 2 and "e.s:" in line and "partition 7" in line and rule in line, line
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_stops_an_endless_program_within_a_second(tmp_path, image):
    prog = write(tmp_path, "endless.s", "top:\n  { addi a3, a3, 1 ; j top }\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with default_dispositions():
        p = subprocess.Popen([sys.executable, "-m", "q7emu", "asm", "run", str(prog), "--sbuf", str(image[0]),
                              "--partitions", "0:16", "--progress", "--max-steps", str(1 << 61),
                              "-o", str(tmp_path / "o.npz")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        seen = b""
        while b"partition" not in seen:              # the bar is drawn just before the first run starts
            ready, _, _ = select.select([p.stderr], [], [], 60)
            assert ready, "no progress bar"
            chunk = os.read(p.stderr.fileno(), 4096)
            assert chunk, (p.wait(), seen)
            seen += chunk
        start = cpu_seconds(p.pid)
        while cpu_seconds(p.pid) < start + 0.3:     # in the interpreter: its CPU time grows
            select.select([p.stderr], [], [], 0.05)
        cpu_before = cpu_seconds(p.pid)
        p.send_signal(signal.SIGINT)
        deadline = time.monotonic() + HANG
        while True:                                  # its end, or HANG seconds (a Ctrl-C that was dropped)
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            assert time.monotonic() < deadline, "Ctrl-C did not stop the run"
            select.select([p.stderr], [], [], 0.05)
        p.returncode = os.waitstatus_to_exitcode(status)
        rest = p.stderr.read().decode()
    finally:
        if p.returncode is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
    assert p.returncode == 130 and "Traceback" not in rest, rest
    assert "interrupted" in rest
    assert usage.ru_utime + usage.ru_stime - cpu_before < 1.0    # CPU spent after the Ctrl-C
    assert not (tmp_path / "o.npz").exists()


# ------------------------------------------------------------------------------ a program in a kernel's place
def test_listing_asm_prints_a_program_that_replays_the_case(capsys, tmp_path):
    for case in (NF4, MX, QMX):
        code, text, _ = run(capsys, "listing", "--case", case, "--asm")
        assert code == 0 and text.startswith("# ")
        prog = write(tmp_path, case.stem + ".s", text)
        code, out, err = run(capsys, "replay", case, "--program", prog, "--json")
        doc = json.loads(out)
        assert code == 0, err
        assert doc["backend"] == f"program {prog.name}" and doc["summary"]["passed"] == 1


def test_listing_asm_json_and_its_refusals(capsys):
    code, out, _ = run(capsys, "listing", "proc_4bit_mx_8", "--fmt", "int4", "--knob", "mx_layout=scale-last",
                       "--asm", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["format"] == "q7emu-listing-asm" and doc["kernel"] == "proc_4bit_mx_8"
    assert "mx_layout=scale-last" in doc["program"] and doc["text"].startswith("# ")
    code, _, err = run(capsys, "listing", "proc_4bit_mx_8", "--asm", "--variants")
    assert code == 2 and "--variants" in one_line(err)


def test_replay_with_another_reading_is_a_mismatch(capsys, tmp_path):
    code, text, _ = run(capsys, "listing", "--case", MX, "--asm")
    prog = write(tmp_path, "mx.s", text)
    code, out, _ = run(capsys, "replay", MX, "--program", prog, "--reading", "sel2nx8i_s4=select")
    assert code == 1 and "FAIL" in out


def test_replay_program_refusals(capsys, tmp_path):
    prog = write(tmp_path, "bad.s", "  ivp_add2nx8 v1, v2\n")
    code, out, err = run(capsys, "replay", NF4, "--program", prog)
    assert code == 2 and "bad.s:1:" in one_line(err) and out == ""
    good = write(tmp_path, "good.s", DOUBLE)
    code, _, err = run(capsys, "replay", NF4, "--program", good, "--backend", "golden")
    assert code == 2 and "--program" in one_line(err)


def test_a_program_that_stops_on_an_error_in_a_kernels_place_is_bad_input(capsys, tmp_path):
    """docs/asm.md §4.5: under replay each case is an ERROR (exit 2) naming the line and partition, the other cases
    go on; the JUnit error is bad-program and merge takes the report; trace and profile exit 2 in one line."""
    prog = write(tmp_path, "oob.s", "  movi a5, 0\n  ivp_lv2nx8_i v1, a5, 0\n  retw\n")   # address 0: no region
    report = tmp_path / "r.json"
    code, out, _ = run(capsys, "replay", NF4, MX, "--program", prog, "--json", "--junit", tmp_path / "j.xml")
    report.write_text(out)
    doc = json.loads(out)
    assert code == 2 and [c["verdict"] for c in doc["cases"]] == ["ERROR", "ERROR"]
    assert doc["summary"]["errors"] == 2 and doc["backend"] == "program oob.s"
    for c in doc["cases"]:
        assert c["error"].startswith("ProgramError: ") and "oob.s:2:" in c["error"] and "partition 0" in c["error"]
        assert "outside every memory region" in c["error"] and c["opcode"] is None
    assert (tmp_path / "j.xml").read_text().count('type="bad-program"') == 2
    code, out, err = run(capsys, "merge", report)
    assert code == 2 and "2 could not be replayed" in out, (out, err)
    for argv in (["trace", NF4, "--program", prog, "-o", tmp_path / "t.q7t"], ["profile", NF4, "--program", prog]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "oob.s:2:" in one_line(err) and "partition 0" in err
    assert not (tmp_path / "t.q7t").exists()


def test_trace_of_the_kernels_program_equals_the_kernels(capsys, tmp_path):
    code, text, _ = run(capsys, "listing", "--case", QMX, "--asm")
    prog = write(tmp_path, "q.s", text)
    assert run(capsys, "trace", QMX, "-o", tmp_path / "k.q7t")[0] == 0
    assert run(capsys, "trace", QMX, "--program", prog, "-o", tmp_path / "p.q7t")[0] == 0
    code, out, _ = run(capsys, "trace", "diff", tmp_path / "k.q7t", tmp_path / "p.q7t", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["same"] and doc["compared"] > 0


def test_profile_program_counts_agree_with_the_trace(capsys, tmp_path):
    """The program section counts ops from bundle counts of an untraced run; its IVP ops must be the traced run's
    op counts (the profile's own ``mnemonics``), and its totals the sums of its parts."""
    code, text, _ = run(capsys, "listing", "--case", NF4, "--asm")
    prog = write(tmp_path, "nf4.s", text)
    code, out, err = run(capsys, "profile", NF4, "--program", prog, "--json")
    assert code == 0, err
    doc = json.loads(out)
    pp = doc["program"]
    ivp = {k[4:]: v for k, v in pp["ops"].items() if k.startswith("ivp_")}
    assert ivp == doc["mnemonics"]
    assert pp["ops_executed"] == sum(pp["ops"].values())
    assert "retw" in pp["ops"] and pp["ops"]["retw"] == 12          # one call per active partition
    assert pp["hot_bundles"] and all(h["line"].startswith(str(prog)) for h in pp["hot_bundles"])
    code, out, _ = run(capsys, "profile", NF4, "--program", prog)
    assert code == 0 and f"program {prog}:" in out and "most executed bundles:" in out


def test_the_syntax_tables_of_docs_asm_are_generated_from_the_op_tables(tmp_path):
    """tools/gen_asm_doc.py --check: docs/asm.md §2.9 and §3 are what the op tables print now."""
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_asm_doc.py"), "--check"], capture_output=True,
                       text=True, timeout=HANG)
    assert p.returncode == 0, p.stderr
