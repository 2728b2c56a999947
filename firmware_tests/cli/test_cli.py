"""CLI: every command, --help everywhere, and bad input -> one-line message, exit 2, no traceback."""
from __future__ import annotations

import argparse
import ast
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_support import run

from q7emu.cli import common, inspect_commands
from q7emu.cli.main import COMMANDS as COMMANDS_BY_MODULE
from q7emu.cli.main import build_parser, command_modules, modules_for
from q7emu.errors import InvalidArgument
from q7emu.isa.records import make_dequant_record, make_quantize_mx_record

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cases"
PB = 0x400
DQ_HEX = make_dequant_record(1, 0, 4, 4, partition_bytes=PB).encode().hex()


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("q7emu ")


COMMANDS = ["ops", "decode", "table", "run", "replay", "merge", "case", "record", "trace", "profile", "explore",
            "listing", "asm"]


@pytest.mark.parametrize("argv", [[], *([c] for c in COMMANDS), ["case", "new"], ["trace", "show"], ["trace", "diff"],
                                  ["trace", "export"], ["trace", "import"]])
def test_help_everywhere(capsys, argv):
    code, out, _ = run(capsys, *argv, "--help")
    assert code == 0 and "usage: q7emu" in out


def test_decode_kernel_info_record(capsys):
    code, out, _ = run(capsys, "decode", "00 00 00 7b c4 4d 00 01")
    assert code == 0 and "opcode 0x7b" in out and "spec   0" in out and "0x01004dc4" in out


def test_decode_honours_partition_bytes_in_the_printed_address(capsys):
    # the record's source address is flat: partition 3 * 0x400 + byte 0x40 = 0xc40 (docs/model.md §4)
    rec = make_dequant_record(1, 0, 4, 4, src_partition=3, src_offset=0x40, dst_partition=3, dst_offset=0x100,
                              partition_bytes=PB).encode().hex()
    code, out, _ = run(capsys, "decode", rec, "-g", "CAYMAN", "--partition-bytes", "0x400")
    assert code == 0 and "0x00000c40 (SBUF partition 3, byte 0x40)" in out and "partition_bytes=0x400 (given)" in out
    code, out, _ = run(capsys, "decode", rec, "-g", "CAYMAN", "--partition-bytes", "0x800")
    assert "0x00000c40 (SBUF partition 1, byte 0x440)" in out
    code, out, _ = run(capsys, "decode", rec, "-g", "CAYMAN")
    assert "0x00000c40 (SBUF partition 0, byte 0xc40)" in out and "partition_bytes=0x30000 (default)" in out


@pytest.mark.parametrize("value", ["-5", "1", "7", "0", "0x40004", "x"])
def test_decode_partition_bytes_is_validated(capsys, value):
    code, out, err = run(capsys, "decode", DQ_HEX, f"--partition-bytes={value}")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--partition-bytes" in err and "Traceback" not in err


def test_decode_unmodelled_opcode_is_not_valid(capsys):
    raw = bytes([0x45]) + bytes(63)                    # 0x45 decode_pool: q7emu models no predicate for it
    code, out, _ = run(capsys, "decode", raw.hex())
    assert code == 0 and "verdict: UNMODELLED" in out and "verdict: VALID" not in out


def test_decode_prints_enum_names_beside_numbers(capsys):
    code, out, _ = run(capsys, "decode", DQ_HEX, "-g", "CAYMAN", "--partition-bytes", hex(PB))
    fields = dict(line.split(None, 1) for line in out.splitlines() if line.startswith("  ") and " " in line.strip())
    assert fields["dequant_fmt"] == "1 (E2M1_TO_E5M2)"          # docs/firmware.md §2.1
    assert fields["in_dtype"] == "9 (UINT32)" and fields["out_dtype"] == "9 (UINT32)"   # docs/firmware.md §5
    assert fields["header.opcode"] == "123 (0x7b, TensorDequantize)"


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
    ["run", DQ_HEX, "--sbuf", "/no/such.npz", "-o", "no-such-folder/x.npz"], ["case"],
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


def test_run_output_path_is_the_file_written(capsys, tmp_path):
    np.savez(tmp_path / "in.npz", sbuf=np.zeros((128, PB), np.uint8))
    code, out, err = run(capsys, "run", DQ_HEX, "--sbuf", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out"),
                         "-g", "CAYMAN")
    assert code == 0, err
    assert out.rstrip().endswith(f"-> {tmp_path / 'out.npz'}") and (tmp_path / "out.npz").is_file()
    assert not (tmp_path / "out").exists()
    (tmp_path / "dir").mkdir()
    for target in ("dir", "no/such/folder/x.npz"):
        code, out, err = run(capsys, "run", DQ_HEX, "--sbuf", str(tmp_path / "in.npz"), "-o", str(tmp_path / target),
                             "-g", "CAYMAN")
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, target
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "in.npz", "out.npz"]


def test_run_refuses_a_knob_of_another_kernel(capsys, tmp_path):
    np.savez(tmp_path / "in.npz", sbuf=np.zeros((128, PB), np.uint8))
    code, _, err = run(capsys, "run", DQ_HEX, "--sbuf", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz"),
                       "-g", "CAYMAN", "--knob", "emax=alt")
    assert code == 2 and "emax" in err and "belongs to quantize_mx" in err and "proc_4bit_non_mx" in err
    assert not (tmp_path / "o.npz").exists()


def test_replay_a_broken_case_file_is_exit_2_not_1(capsys, tmp_path):
    (tmp_path / "broken.json").write_text('{"format": "q7emu-case", "version": 1}')
    code, out, _ = run(capsys, "replay", str(tmp_path / "broken.json"))
    assert code == 2 and "ERROR" in out and "could not be replayed" in out
    # a real mismatch next to a broken file: both reported, the broken file decides the status
    from q7emu.machine.cases import load_case, save_case
    case = load_case(next(EXAMPLES.rglob("*.json")))
    case.expected[0][1][0, 0] ^= 1
    save_case(case, tmp_path / "bad")
    code, out, _ = run(capsys, "replay", str(tmp_path))
    assert code == 2 and "FAIL" in out and "ERROR" in out
    code, out, _ = run(capsys, "replay", str(tmp_path / "bad.json"))
    assert code == 1


def test_replay_knob_of_no_replayed_kernel_is_exit_2(capsys):
    code, _, err = run(capsys, "replay", str(EXAMPLES / "cayman"), "--knob", "emax=alt")
    assert code == 2 and "belongs to quantize_mx" in err and len(err.strip().splitlines()) == 1
    code, out, _ = run(capsys, "replay", str(EXAMPLES / "mariana"), "--knob", "emax=ocp", "--backend", "golden")
    assert code == 0, out


def test_replay_filter_max_diffs_durations_and_junit(capsys, tmp_path):
    from q7emu.machine.cases import load_case, save_case
    src = EXAMPLES / "mariana" / "mariana_7b_proc_4bit_non_mx_int4.json"
    case = load_case(src)
    case.expected[0][1][2, 5] ^= 0x40             # partition 3 + 2 = 5, byte 0x100 + 5: output element 5
    save_case(case, tmp_path / "mariana_bad")
    save_case(load_case(EXAMPLES / "cayman" / "cayman_7b_proc_4bit_non_mx_int4.json"), tmp_path / "cayman_ok")
    code, out, _ = run(capsys, "replay", str(tmp_path), "-k", "MARIANA", "--max-diffs", "5", "--durations", "1",
                       "--junit", str(tmp_path / "r.xml"))
    assert code == 1
    assert "cayman_ok" not in out.split("slowest")[0] and "(1 deselected by -k)" in out
    assert "1 of 384 bytes differ" in out and "in partition 5 (1)" in out
    assert "diff 1 of 1: region 0, partition 5, byte 0x105 (output element 5)" in out
    assert "slowest 1 of 1 case(s):" in out and f"JUnit report -> {tmp_path / 'r.xml'}" in out
    import xml.etree.ElementTree as ET
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "1"
    code, _, err = run(capsys, "replay", str(tmp_path), "-k", "nothing-matches")
    assert code == 2 and "none of the 2 case(s)" in err
    for bad in (["--max-diffs", "-1"], ["--durations", "-2"], ["--junit", str(tmp_path)]):
        code, _, err = run(capsys, "replay", str(tmp_path), *bad)
        assert code == 2 and len(err.strip().splitlines()) == 1, bad


def test_readme_shows_json_junit_and_the_exit_codes():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Command line", 1)[1].split("\n## ", 1)[0]
    assert "--json" in section and "--junit" in section and "q7emu-error" in section
    for code, words in (("0", "pass"), ("1", "mismatch or divergence"), ("2", "bad input or usage"),
                        ("3", "internal error")):
        assert re.search(rf"\|\s*{code}\s*\|\s*{words}", section), (code, words)
    block = section.split("```sh", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    parser = build_parser()
    commands = [line.split("#")[0].split("|")[0].strip() for line in block.splitlines() if line.strip()]
    inner = [m for c in commands for m in re.findall(r"\$\((q7emu [^)]*)\)", c)]
    commands = [re.sub(r"\$\(q7emu [^)]*\)", DQ_HEX, c) for c in commands] + inner
    assert len(commands) >= 5 and inner
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "q7emu"
        args, extras = parser.parse_known_args(argv[1:])
        assert args.func is not None and all("=" in e for e in extras), command


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


def test_ops_one_primitive_shows_its_c_operand_order_and_public_evidence(capsys):
    """docs/intrinsics.md §2: the named op's operands in the C intrinsic's order, with its public evidence."""
    code, out, _ = run(capsys, "ops", "IVP_DSELNX16T", "sel2nx8")
    assert code == 0
    assert "ivp_dselnx16t odd, even, hi, lo, sel, vb" in out and "ivp_sel2nx8 vt, hi, lo, sel" in out
    assert "halide/Halide:src/CodeGen_Xtensa_vectors.template.cpp@001745e0290e" in out and "(strong)" in out
    code, out, _ = run(capsys, "ops", "dselnx16", "--json")
    doc = json.loads(out)
    [row] = doc["primitives"]
    assert code == 0 and row["mnemonic"] == "dselnx16" and row["provenance"] == "PUBLIC HIGH"
    assert [o["name"] for o in row["operands"]] == ["odd", "even", "hi", "lo", "sel"] and row["evidence"]
    code, out, _ = run(capsys, "ops", "sel2nx8i_s4")
    assert code == 0 and "public evidence: none found" in out


def test_ops_unknown_mnemonic_is_one_line_exit_2(capsys):
    code, out, err = run(capsys, "ops", "vmulq")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "'vmulq'" in err


def test_python_dash_m():
    p = subprocess.run([sys.executable, "-m", "q7emu", "decode", "7b"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "q7emu", "--version"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0 and "q7emu" in p.stdout


# ---------------------------------------------------------------------- how commands are registered
def test_command_modules_register_every_command_once_in_help_order():
    seen = []
    for module in command_modules():
        sub = common.Parser(prog="t").add_subparsers()
        assert module.register(sub) is None
        names = list(sub.choices)
        assert names, f"{module.__name__} registers no command"
        assert tuple(names) == COMMANDS_BY_MODULE[module.__name__.rsplit(".", 1)[-1]], module.__name__
        for name in names:
            assert sub.choices[name].get_default("func") is not None, f"{name}: no set_defaults(func=...)"
        seen += names
    assert seen == COMMANDS
    assert list(build_parser()._subparsers._group_actions[0].choices) == COMMANDS


def test_a_command_line_registers_only_its_command_module():
    assert modules_for(["replay", "x.json"]) == ["run_commands"]
    assert modules_for(["--debug", "trace", "show", "t.q7t"]) == ["trace_commands"]
    assert modules_for(["--version"]) == [] and modules_for(["--version", "--json"]) == []
    for argv in ([], ["--help"], ["--version", "--help"], ["nosuchcommand"], ["--debug"]):
        assert modules_for(argv) == list(COMMANDS_BY_MODULE), argv
    for module, commands in COMMANDS_BY_MODULE.items():
        for command in commands:
            assert modules_for([command]) == [module]
            assert list(build_parser([module])._subparsers._group_actions[0].choices) == list(commands)


def test_cli_modules_import_no_private_names_and_no_other_command_module():
    cli_dir = Path(common.__file__).parent
    command_module_names = {m.__name__ for m in command_modules()}
    for path in sorted(cli_dir.glob("*.py")):
        module = f"q7emu.cli.{path.stem}"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("q7emu.cli"):
                names = [a.name for a in node.names]
                assert not [n for n in names if n.startswith("_")], f"{path.name} imports private {names}"
                imported = {node.module} | {f"{node.module}.{n}" for n in names}
                if module in command_module_names:
                    assert not imported & command_module_names, f"{path.name} imports another command module"
            elif isinstance(node, ast.Import):
                assert not [a.name for a in node.names if a.name.startswith("q7emu.cli.")], path.name
    # main imports a command module by its name in main.COMMANDS, in one place, and never swallows an import error
    main_text = (cli_dir / "main.py").read_text()
    assert main_text.count("importlib.import_module(") == 1
    assert "ImportError" not in main_text and "ModuleNotFoundError" not in main_text


def test_exit_codes():
    assert (common.EXIT_OK, common.EXIT_FAIL, common.EXIT_USAGE, common.EXIT_INTERNAL, common.EXIT_INTERRUPT) == \
        (0, 1, 2, 3, 130)


@pytest.mark.parametrize("argv", [[], *([c] for c in COMMANDS), ["case", "new"], ["record", "new"],
                                  ["trace", "show"]])
def test_help_documents_the_exit_statuses(capsys, argv):
    code, out, _ = run(capsys, *argv, "--help")
    text = " ".join(out.split())
    assert code == 0
    for words in ("0 pass", "1 mismatch or divergence", "2 bad input or usage", "3 internal error", "--debug"):
        assert words in text, (argv, words)


def test_internal_error_is_exit_3_in_one_line_and_debug_adds_the_traceback(capsys, monkeypatch):
    def broken(args):
        raise TypeError("an unexpected bug")

    monkeypatch.setattr(inspect_commands, "cmd_ops", broken)
    code, out, err = run(capsys, "ops")
    assert code == 3 and out == "" and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert "internal error" in line and "TypeError: an unexpected bug" in line and "--debug" in line
    code, out, err = run(capsys, "--debug", "ops")
    assert code == 3 and "Traceback (most recent call last)" in err and "an unexpected bug" in err
    code, out, err = run(capsys, "ops", "--json")
    assert code == 3 and json.loads(out)["exit_code"] == 3


def test_a_q7emu_internal_inconsistency_is_exit_3(capsys, monkeypatch):
    from q7emu.errors import InternalError, Q7Error

    def inconsistent(args):
        raise InternalError("3 result bytes for 4 destination bytes")

    monkeypatch.setattr(inspect_commands, "cmd_ops", inconsistent)
    code, _, err = run(capsys, "ops")
    assert code == 3 and "internal error (InternalError: 3 result bytes" in err and len(err.strip().splitlines()) == 1

    def bad_input(args):                   # any other Q7Error is the input's fault: exit 2
        raise Q7Error("internal: a message that merely starts like one")

    monkeypatch.setattr(inspect_commands, "cmd_ops", bad_input)
    code, _, err = run(capsys, "ops")
    assert code == 2 and "internal error" not in err


def test_an_internal_error_in_a_replayed_case_is_not_a_mismatch(tmp_path, monkeypatch):
    """A q7emu bug while a case runs is reported as q7emu's (exit 3), never as the case failing (exit 1)."""
    from q7emu.errors import InternalError
    from q7emu.machine import cases

    def broken(*a, **k):
        raise InternalError("dequantize returned 7 bytes")

    monkeypatch.setattr(cases.Machine, "execute", broken)
    case = cases.load_case(ROOT / "examples" / "cases" / "mariana" / "mariana_7b_proc_4bit_non_mx_e2m1.json")
    with pytest.raises(InternalError):
        cases.run_case(case)


def test_interrupt_exits_130(capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(inspect_commands, "cmd_ops", interrupted)
    code, out, err = run(capsys, "ops")
    assert code == 130 and err == "q7emu: interrupted\n" and out == ""


def test_an_interrupt_after_the_command_returned_is_no_traceback(capsys, monkeypatch):
    """A Ctrl-C that lands as the command finishes -- after it returned, while the signal handlers are put back --
    is outside the command's own handling: its status and report stand, and no traceback (a CI run of the
    interrupted ``case new`` test caught one)."""
    import contextlib

    import q7emu.cli.main as cli_main

    @contextlib.contextmanager
    def signal_on_the_way_out():
        yield []
        raise KeyboardInterrupt              # as the handler does when the signal comes during the restore

    monkeypatch.setattr(cli_main, "_stop_signals", signal_on_the_way_out)
    code, out, err = run(capsys, "ops")
    assert code == 0 and "Traceback" not in err and "addnx16" in out


def test_an_interrupt_before_the_command_began_exits_130(capsys, monkeypatch):
    import q7emu.cli.main as cli_main

    def interrupted_early(argv):
        raise KeyboardInterrupt              # outside _main's own try: before it began

    monkeypatch.setattr(cli_main, "_main", interrupted_early)
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


# ---------------------------------------------------------------------- trace / profile (q7emu/cli/trace_commands.py)
# These commands belong to the trace engineer's branch; the markers go when that branch (exit status of a
# failing case, --json of trace show / diff) is merged (strict: an unexpected pass fails the suite).


@pytest.fixture
def failing_case(tmp_path):
    from q7emu.machine.cases import load_case, save_case
    case = load_case(EXAMPLES / "mariana" / "mariana_7b_proc_4bit_non_mx_e2m1.json")
    case.expected[0][1][0, 0] ^= 1
    save_case(case, tmp_path / "bad")
    return tmp_path / "bad.json"


def test_profile_of_a_failing_case_exits_1(capsys, failing_case):
    code, _, _ = run(capsys, "profile", str(failing_case))
    assert code == 1


def test_trace_of_a_failing_case_exits_1(capsys, failing_case, tmp_path):
    code, _, _ = run(capsys, "trace", str(failing_case), "-o", str(tmp_path / "t.q7t"))
    assert code == 1


@pytest.mark.parametrize("words", [["show", "{t}"], ["diff", "{t}", "{t}"]])
def test_trace_show_and_diff_have_json(capsys, tmp_path, words):
    case = EXAMPLES / "mariana" / "mariana_7b_proc_4bit_non_mx_e2m1.json"
    assert run(capsys, "trace", str(case), "-o", str(tmp_path / "t.q7t"))[0] == 0
    code, out, _ = run(capsys, "trace", *[w.format(t=tmp_path / "t.q7t") for w in words], "--json")
    assert code == 0 and json.loads(out)["format"].startswith("q7emu-trace")


def test_a_second_ctrl_c_while_the_command_cleans_up_is_ignored():
    """The first Ctrl-C interrupts the command; one that comes while it cleans up and prints what finished (or
    while Python unwinds past main) is ignored, not a KeyboardInterrupt traceback (docs/limits.md §4)."""
    import os
    import signal

    from signal_support import default_dispositions

    from q7emu.cli.main import _stop_signals
    with default_dispositions():                     # as in a terminal, whatever this test run inherited
        with _stop_signals() as got:
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)  # the handler runs before os.kill returns
            os.kill(os.getpid(), signal.SIGINT)      # the second: ignored
            os.kill(os.getpid(), signal.SIGTERM)     # and a SIGTERM after it
        assert got == []                             # Ctrl-C: the command's own exit 130, not 128 + N
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
