"""CLI: every command, --help everywhere, and bad input -> one-line message, exit 2, no traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from q7emu.cli.main import main
from q7emu.isa.records import make_dequant_record, make_quantize_mx_record

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cases"
PB = 0x400
DQ_HEX = make_dequant_record(1, 0, 4, 4, partition_bytes=PB).encode().hex()


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("q7emu ")


@pytest.mark.parametrize("argv", [[], ["ops"], ["decode"], ["table"], ["run"], ["replay"], ["case"], ["case", "new"]])
def test_help_everywhere(capsys, argv):
    code, out, _ = run(capsys, *argv, "--help")
    assert code == 0 and "usage: q7emu" in out


def test_decode_kernel_info_record(capsys):
    code, out, _ = run(capsys, "decode", "00 00 00 7b c4 4d 00 01")
    assert code == 0 and "opcode 0x7b" in out and "spec   0" in out and "0x01004dc4" in out


def test_decode_valid_and_invalid(capsys, tmp_path):
    code, out, _ = run(capsys, "decode", DQ_HEX, "-g", "CAYMAN", "--partition-bytes", hex(PB))
    assert code == 0 and "VALID" in out and "1.3.11" in out and "num_active_channels" in out
    raw = bytearray.fromhex(DQ_HEX)
    raw[35] = 0
    f = tmp_path / "rec.bin"
    f.write_bytes(bytes(raw))
    code, out, _ = run(capsys, "decode", str(f), "-g", "CAYMAN", "--partition-bytes", hex(PB))
    assert code == 1 and "1.3.4           FAIL" in out and "INVALID" in out
    code, out, _ = run(capsys, "decode", DQ_HEX, "-g", "SUNDA")
    assert code == 1 and "1.3.2           FAIL" in out


def test_table(capsys):
    code, out, _ = run(capsys, "table", "cayman", "--hex")
    assert code == 0 and "EXTISA_3" in out and "00 00 00 7b c4 4d 00 01" in out
    code, out, _ = run(capsys, "table", "MAVERICK")
    assert code == 0 and "0x000050ec" in out


@pytest.mark.parametrize("argv", [
    ["decode", "zz"], ["decode", "7b00"], ["decode", DQ_HEX, "-g", "TONGA"], ["table", "nope"], ["bogus"],
    ["replay", "/no/such/case"], ["replay", str(EXAMPLES), "--jobs", "0"], ["replay", str(EXAMPLES), "--knob", "x=y"],
    ["run", DQ_HEX, "--sbuf", "/no/such.npz", "-o", "/tmp/x.npz"], ["case"], ["decode", DQ_HEX, "--partition-bytes", "x"],
])
def test_bad_input_one_line_exit_2(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0] and "Traceback" not in err


def test_replay_examples_pass_and_flipped_fails(capsys, tmp_path):
    code, out, err = run(capsys, "replay", str(EXAMPLES), "--backend", "golden", "--jobs", "2")
    assert code == 0 and "0 failed" in out and out.count("PASS") >= 34
    from q7emu.machine.cases import load_case, save_case
    case = load_case(next(EXAMPLES.rglob("*.json")))
    reg, arr = case.expected[0]
    arr[0, 3] ^= 1
    save_case(case, tmp_path / "bad")
    code, out, _ = run(capsys, "replay", str(tmp_path / "bad.json"), "--backend", "golden")
    assert code == 1 and "FAIL" in out
    assert f"partition {reg.partition}, byte 0x{reg.offset + 3:x}" in out


def test_replay_examples_kernel(capsys):
    code, out, _ = run(capsys, "replay", str(EXAMPLES))
    assert code == 0, out


def test_run_and_case_new(capsys, tmp_path):
    rng = np.random.default_rng(3)
    sbuf = rng.integers(0, 256, (128, PB), dtype=np.uint8)
    np.savez(tmp_path / "in.npz", sbuf=sbuf)
    code, out, err = run(capsys, "run", DQ_HEX, "--sbuf", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz"),
                         "-g", "CAYMAN", "--backend", "golden")
    assert code == 0, err
    after = np.load(tmp_path / "out.npz")["sbuf"]
    from q7emu import golden
    assert np.array_equal(after[0:4, 16:48], golden.dequantize(sbuf[0:4, 0:16], 1, 0))
    # case new: inputs from an npz key, expected computed by golden; then replay it
    np.savez(tmp_path / "arr.npz", src=sbuf[0:4, 0:16])
    code, out, err = run(capsys, "case", "new", str(tmp_path / "c"), "--record", DQ_HEX, "-g", "CAYMAN",
                         "--input", f"0:0={tmp_path / 'arr.npz'}:src", "--partition-bytes", hex(PB), "--note", "t")
    assert code == 0, err
    code, out, _ = run(capsys, "replay", str(tmp_path / "c.json"), "--backend", "golden")
    assert code == 0 and "PASS" in out
    # case new with explicit expected (wrong) -> replay fails
    np.save(tmp_path / "exp.npy", np.zeros((4, 32), np.uint8))
    code, out, err = run(capsys, "case", "new", str(tmp_path / "d"), "--record", DQ_HEX, "-g", "CAYMAN",
                         "--input", f"0:0={tmp_path / 'arr.npz'}:src", "--expected", f"0:16={tmp_path / 'exp.npy'}",
                         "--partition-bytes", hex(PB))
    assert code == 0, err
    code, out, _ = run(capsys, "replay", str(tmp_path / "d"), "--backend", "golden")
    assert code == 1


def test_run_firmware_messages(capsys, tmp_path):
    np.savez(tmp_path / "in.npz", sbuf=np.zeros((128, PB), np.uint8))
    code, _, err = run(capsys, "run", DQ_HEX, "--sbuf", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz"),
                       "-g", "SUNDA")
    assert code == 2 and "UNKNOWN OPCODE=0x7b" in err and len(err.strip().splitlines()) == 1
    q = make_quantize_mx_record(32, 8, partition_bytes=PB).encode().hex()
    code, _, err = run(capsys, "run", q, "--sbuf", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz"),
                       "-g", "CAYMAN")
    assert code == 2 and "UNKNOWN OPCODE=0xe3" in err


def test_ops(capsys):
    code, out, _ = run(capsys, "ops")
    assert code == 0 and len(out.splitlines()) > 5


def test_python_dash_m():
    p = subprocess.run([sys.executable, "-m", "q7emu", "decode", "7b"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "q7emu", "--version"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0 and "q7emu" in p.stdout
