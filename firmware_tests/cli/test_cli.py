"""CLI: every command, --help everywhere, and bad input -> one-line message, exit 2, no traceback."""
from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from q7emu.cli import common, inspect_commands
from q7emu.cli.main import COMMAND_MODULES, build_parser, main
from q7emu.errors import InvalidArgument
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


COMMANDS = ["ops", "decode", "table", "run", "replay", "case", "trace", "profile", "explore", "listing"]


@pytest.mark.parametrize("argv", [[], *([c] for c in COMMANDS), ["case", "new"], ["trace", "show"], ["trace", "diff"],
                                  ["trace", "export"], ["trace", "import"]])
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
    ["run", DQ_HEX, "--sbuf", "/no/such.npz", "-o", "/tmp/x.npz"], ["case"],
    ["decode", DQ_HEX, "--partition-bytes", "x"],
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


# ---------------------------------------------------------------------- how commands are registered
def test_command_modules_register_every_command_once_in_help_order():
    seen = []
    for module in COMMAND_MODULES:
        sub = common.Parser(prog="t").add_subparsers()
        assert module.register(sub) is None
        names = list(sub.choices)
        assert names, f"{module.__name__} registers no command"
        for name in names:
            assert sub.choices[name].get_default("func") is not None, f"{name}: no set_defaults(func=...)"
        seen += names
    assert seen == COMMANDS
    assert list(build_parser()._subparsers._group_actions[0].choices) == COMMANDS


def test_cli_modules_import_no_private_names_and_no_other_command_module():
    cli_dir = Path(common.__file__).parent
    command_modules = {m.__name__ for m in COMMAND_MODULES}
    for path in sorted(cli_dir.glob("*.py")):
        module = f"q7emu.cli.{path.stem}"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("q7emu.cli"):
                names = [a.name for a in node.names]
                assert not [n for n in names if n.startswith("_")], f"{path.name} imports private {names}"
                imported = {node.module} | {f"{node.module}.{n}" for n in names}
                if module in command_modules:
                    assert not imported & command_modules, f"{path.name} imports another command module"
            elif isinstance(node, ast.Import):
                assert not [a.name for a in node.names if a.name.startswith("q7emu.cli.")], path.name
    assert "importlib" not in (cli_dir / "main.py").read_text()


def test_exit_codes():
    assert (common.EXIT_OK, common.EXIT_FAIL, common.EXIT_USAGE, common.EXIT_INTERRUPT) == (0, 1, 2, 130)


def test_interrupt_exits_130(capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(inspect_commands, "cmd_ops", interrupted)
    code, out, err = run(capsys, "ops")
    assert code == 130 and err == "q7emu: interrupted\n" and out == ""


def test_no_command_prints_help_exit_2(capsys):
    code, out, _ = run(capsys)
    assert code == 2 and out.startswith("usage: q7emu") and all(c in out for c in COMMANDS)


@pytest.mark.parametrize("items,check,expect", [
    (None, True, {}),
    ([" nibble_order = high-first ", "emax=alt"], True, {"nibble_order": "high-first", "emax": "alt"}),
    (["anything=goes"], False, {"anything": "goes"}),
])
def test_parse_knobs(items, check, expect):
    assert common.parse_knobs(items, check=check) == expect


def test_parse_knobs_errors():
    with pytest.raises(common.UsageError, match="expected NAME=VALUE"):
        common.parse_knobs(["nibble_order"])
    with pytest.raises(InvalidArgument, match="unknown machine knob"):
        common.parse_knobs(["anything=goes"])


def test_read_record_and_parse_int(tmp_path):
    raw = bytes.fromhex(DQ_HEX)
    assert common.read_record(DQ_HEX) == raw
    (tmp_path / "r.bin").write_bytes(raw)
    (tmp_path / "r.hex").write_text(DQ_HEX + "\n")
    assert common.read_record(str(tmp_path / "r.bin")) == common.read_record(str(tmp_path / "r.hex")) == raw
    assert common.read_record("00 00 00 7b c4 4d 00 01", allow_kernel_info=True) == bytes.fromhex("0000007bc44d0001")
    with pytest.raises(common.UsageError, match="exactly 64 bytes, got 8"):
        common.read_record("00 00 00 7b c4 4d 00 01")
    (tmp_path / "bad.bin").write_bytes(b"\xff" * 3)
    with pytest.raises(common.UsageError, match="neither 64 raw bytes nor hex text"):
        common.read_record(str(tmp_path / "bad.bin"))
    assert [common.parse_int(t) for t in ("1024", "0x400", "0o2000", "0b10000000000")] == [1024] * 4
    with pytest.raises(argparse.ArgumentTypeError, match="not an integer: 'x'"):
        common.parse_int("x")


def test_error_line():
    assert common.error_line(ValueError("first\nsecond")) == "first"
    assert common.error_line(KeyError()) == "KeyError"
