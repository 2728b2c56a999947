"""``--json``: every command prints one versioned JSON document (docs/cli.md §2, §3), errors included.

The values checked are the ones the case files, the records and docs/ fix (the shipped examples' layout,
examples/README.md), not values read back from the command under test.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from q7emu._version import __version__
from q7emu.cli.main import build_parser, main
from q7emu.isa.records import make_dequant_record

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cases"
PB = 0x400
DQ = make_dequant_record(1, 0, 4, 4, partition_bytes=PB)
DQ_HEX = DQ.encode().hex()
#: commands whose --json the trace engineer adds (q7emu/cli/trace_commands.py): not checked here
ELSEWHERE = {"trace"}


def run_json(capsys, *argv, code=0):
    got = main([str(a) for a in argv] + ["--json"])
    out, err = capsys.readouterr()
    assert got == code, err
    doc = json.loads(out)                      # exactly one document on stdout
    assert isinstance(doc, dict)
    return doc


#: formats whose document changed shape (docs/cli.md): q7emu-listing v2 is read off runs
VERSIONS = {"q7emu-listing": 2}


def envelope(doc, fmt):
    assert list(doc)[:3] == ["format", "version", "q7emu_version"]
    assert (doc["format"], doc["version"], doc["q7emu_version"]) == (fmt, VERSIONS.get(fmt, 1), __version__)


def _leaf_parsers(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaf_parsers(sub, prefix + (name,))
            return
    yield prefix, parser


def test_every_command_has_json():
    leaves = [(p, sub) for p, sub in _leaf_parsers(build_parser()) if p and p[0] not in ELSEWHERE]
    assert {p[0] for p, _ in leaves} >= {"ops", "decode", "table", "run", "replay", "case", "record", "profile",
                                         "explore", "listing"}
    for path, sub in leaves:
        if path in (("case",), ("record",)):
            continue                                    # the group words themselves only print usage
        assert any("--json" in a.option_strings for a in sub._actions), " ".join(path)


def test_replay_json(capsys):
    doc = run_json(capsys, "replay", EXAMPLES / "mariana", "-k", "e3_")
    envelope(doc, "q7emu-replay")
    assert doc["summary"]["cases"] == 2 and doc["summary"]["passed"] == 2 and doc["exit_code"] == 0
    # each 0xE3 case: 64 x 16 data bytes and 2 x (4 x 4) scale bytes (examples/README.md)
    assert doc["summary"]["bytes_compared"] == 2 * (64 * 16 + 32) and doc["summary"]["bytes_differing"] == 0
    assert doc["select"] == ["e3_"] and {c["verdict"] for c in doc["cases"]} == {"PASS"}
    assert [len(c["regions"]) for c in doc["cases"]] == [3, 3]


def test_replay_json_exit_status_of_a_mismatch(capsys, tmp_path):
    from q7emu.machine.cases import load_case, save_case
    case = load_case(EXAMPLES / "maverick" / "maverick_7b_proc_6bit_non_mx_e2m3.json")
    case.expected[0][1][11, 63] ^= 0x80          # the last byte of partition 3 + 11 = 14: output element 63
    save_case(case, tmp_path / "bad")
    doc = run_json(capsys, "replay", tmp_path, "--max-diffs", "2", code=1)
    (c,) = doc["cases"]
    assert doc["exit_code"] == 1 and c["verdict"] == "FAIL" and c["bytes_differing"] == 1
    assert [(d["partition"], d["offset"], d["element"], d["mx_group"]) for d in c["diffs"]] == [(14, 0x13F, 63, None)]


def test_run_json(capsys, tmp_path):
    np.savez(tmp_path / "in.npz", sbuf=np.zeros((128, PB), np.uint8))
    doc = run_json(capsys, "run", DQ_HEX, "--sbuf", tmp_path / "in.npz", "-o", tmp_path / "out", "-g", "CAYMAN")
    envelope(doc, "q7emu-run")
    # 4 partitions x 4 source words -> 8 destination words right after the source (make_dequant_record)
    assert doc["kernel"] == "proc_4bit_non_mx" and doc["bytes_written"] == 4 * 32
    assert doc["regions_written"] == [{"partition": 0, "count": 4, "offset": 16, "length": 32}]
    assert doc["output"] == str(tmp_path / "out.npz") and doc["partition_bytes"] == PB


def test_decode_json(capsys):
    doc = run_json(capsys, "decode", DQ_HEX, "-g", "CAYMAN", "--partition-bytes", hex(PB))
    envelope(doc, "q7emu-decode")
    assert doc["verdict"] == "VALID" and doc["failing_clauses"] == 0 and doc["partition_bytes"] == PB
    fields = {f["name"]: f for f in doc["fields"]}
    assert fields["dequant_fmt"]["value"] == 1 and fields["dequant_fmt"]["enum"] == "E2M1_TO_E5M2"
    assert fields["src.num_elem"]["value"] == [4, 1, 1] and fields["dst.start_addr"]["value"] == 16
    assert {c["clause"] for c in doc["clauses"]} >= {f"1.3.{i}" for i in range(1, 12)}
    raw = bytearray(DQ.encode())
    raw[35] = 0                                   # dequant_fmt 0: clause 1.3.4 fails
    doc = run_json(capsys, "decode", raw.hex(), "-g", "CAYMAN", "--partition-bytes", hex(PB), code=1)
    assert doc["verdict"] == "INVALID" and [c["clause"] for c in doc["clauses"] if c["status"] == "fail"] == ["1.3.4"]
    doc = run_json(capsys, "decode", (bytes([0x46]) + bytes(63)).hex())
    assert doc["verdict"] == "UNMODELLED"
    doc = run_json(capsys, "decode", "00 00 00 7b c4 4d 00 01")
    assert doc["kind"] == "kernel_info" and doc["opcode"] == 0x7B and doc["func_va"] == 0x01004DC4


def test_table_json(capsys):
    doc = run_json(capsys, "table", "cayman")
    envelope(doc, "q7emu-table")
    names = [t["name"] for t in doc["tables"]]
    assert names[:4] == ["EXTISA_0", "EXTISA_1", "EXTISA_2", "EXTISA_3"] and "DVE" in names
    recs = [r for t in doc["tables"] for r in t["records"]]
    assert any(r["hex"] == "0000007bc44d0001" and r["opcode"] == 0x7B for r in recs)


def test_ops_json(capsys):
    doc = run_json(capsys, "ops")
    envelope(doc, "q7emu-ops")
    mnemonics = {p["mnemonic"] for p in doc["primitives"]}
    assert {"addnx16", "bminnx16"} <= mnemonics and sum(doc["counts"].values()) == len(doc["primitives"])


def test_case_new_json(capsys, tmp_path):
    np.save(tmp_path / "a.npy", np.arange(64, dtype=np.uint8).reshape(4, 16))
    doc = run_json(capsys, "case", "new", tmp_path / "c", "--record", DQ_HEX, "-g", "CAYMAN",
                   "--input", f"0:0={tmp_path / 'a.npy'}", "--partition-bytes", hex(PB))
    envelope(doc, "q7emu-case-new")
    assert doc["case"] == str(tmp_path / "c.json") and Path(doc["arrays"]).is_file()
    assert doc["inputs"] == [{"partition": 0, "count": 4, "offset": 0, "length": 16, "bytes": 64, "bytes_read": 64}]
    assert doc["expected"] == [{"partition": 0, "count": 4, "offset": 16, "length": 32, "bytes": 128}]
    assert doc["partition_bytes_source"] == "given" and doc["expected_source"] == "golden"
    assert doc["kernel"] == "proc_4bit_non_mx" and doc["source_bytes_outside_inputs"] == 0


def test_record_new_json(capsys):
    doc = run_json(capsys, "record", "new", "0x7b", "num_active_channels=4", "dequant_fmt=nf4")
    envelope(doc, "q7emu-record")
    fields = {f["name"]: f for f in doc["fields"]}
    assert fields["dequant_fmt"]["value"] == 3 and fields["num_active_channels"]["value"] == 4
    assert bytes.fromhex(doc["record_hex"])[34:36] == bytes([4, 3])    # offsets 34, 35 (docs/firmware.md §1.1)


@pytest.mark.parametrize("argv,fmt", [
    (["explore", EXAMPLES / "mariana" / "mariana_e3_quantize_mx_e4m3.json"], "q7emu-explore"),
    (["listing", "proc_4bit_mx_8"], "q7emu-listing"),
])
def test_explore_and_listing_json_are_versioned(capsys, argv, fmt):
    envelope(run_json(capsys, *argv), fmt)


@pytest.mark.parametrize("argv,code", [
    (["decode", "zz"], 2), (["replay", "/no/such/case"], 2), (["case", "new", "x", "--record", "7b"], 2),
    (["run", DQ_HEX], 2), (["bogus"], 2), (["record", "new", "0x7b", "x=1"], 2),
])
def test_errors_are_a_json_document_too(capsys, argv, code):
    got = main([str(a) for a in argv] + ["--json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    envelope(doc, "q7emu-error")
    assert got == code == doc["exit_code"] and doc["error"] and len(err.strip().splitlines()) == 1
