"""A fifth opcode built the new way (issue 39 item 4): TensorDouble, a made-up POOL opcode 0x5D, is a program, a
spec (with its record class) and a golden model in three files of firmware_tests/fifth_opcode, registered from one
place (``opcodes.register`` at the end of its spec module). Under ``Q7EMU_OPCODES=tensor_double`` it runs on the
machine (kernel: the program; golden: the model), replays, reports and explains a differing byte, explores, and
runs under the pytest plugin (with xdist) and on a Dask farm; without it, the same case is the firmware's
``UNKNOWN OPCODE``. Every run that registers it is a subprocess: the opcode table of this test process stays the
built-in one. Also: an unknown record is a loud error (UnknownOpcode naming what is missing).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from q7emu.errors import UnknownOpcode
from q7emu.isa import opcodes
from q7emu.isa.records import RawRecord, decode_record
from q7emu.machine.report import OutputMap

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "firmware_tests" / "fifth_opcode"
HANG = 300
#: the case's record: 4 partitions of 32 u32 words at p0 0x100 -> p0 0x400, partition_bytes 0x1000
BUILD = """
import sys, numpy as np
import tensor_double as t
from q7emu.isa.records import Addr4, Tensor3D
from q7emu.machine.cases import build_case, save_case
rec = t.S3DTensDouble(src=Tensor3D(Addr4(0x100), (1, 0, 0), (32, 1, 1)), num_active_channels=4,
                      dst=Tensor3D(Addr4(0x400), (1, 0, 0), (32, 1, 1)))
data = np.random.default_rng(5).integers(0, 256, (4, 128), dtype=np.uint8)
case = build_case(rec.encode(), "CAYMAN", [(0, 0x100, data)], name="td", partition_bytes=0x1000)
save_case(case, sys.argv[1] + "/cases/td")
case.expected[0][1][2, 7] ^= 0x10                    # partition 2, byte 0x407: output element 7 of row 2
save_case(case, sys.argv[1] + "/cases/bad/td_bad")
"""


def env(registered: bool = True) -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(EXAMPLE), e.get("PYTHONPATH", "")])
    e.pop("PYTEST_ADDOPTS", None)
    for name in [n for n in e if n.startswith("PYTEST_XDIST_")]:
        e.pop(name)
    if registered:
        e["Q7EMU_OPCODES"] = "tensor_double"
    else:
        e.pop("Q7EMU_OPCODES", None)
    return e


def run(cwd, *argv, registered=True):
    p = subprocess.run([sys.executable, *map(str, argv)], cwd=cwd, capture_output=True, text=True, timeout=HANG,
                       env=env(registered))
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A pytest rootdir holding the TensorDouble case and a copy whose expected byte was changed."""
    d = tmp_path_factory.mktemp("fifth")
    (d / "pytest.ini").write_text("[pytest]\n")
    code, out, err = run(d, "-c", BUILD, d)
    assert code == 0, out + err
    return d


def test_the_opcode_takes_three_source_files_none_in_machine():
    files = sorted(p.name for p in EXAMPLE.iterdir() if p.suffix in (".py", ".s") and not p.name.startswith("test_"))
    assert files == ["tensor_double.py", "tensor_double.s", "tensor_double_golden.py"]


def test_replay_passes_and_a_changed_byte_is_reported_and_explained(folder):
    code, out, err = run(folder, "-m", "q7emu", "replay", "cases/td.json", "--no-progress")
    assert code == 0 and "PASS" in out and "0x5d" in out, out + err
    code, out, err = run(folder, "-m", "q7emu", "replay", "cases", "--no-progress", "--json")
    assert code == 1, out + err
    doc = json.loads(out)
    verdicts = {Path(c["path"]).name: c["verdict"] for c in doc["cases"]}
    assert verdicts == {"td.json": "PASS", "td_bad.json": "FAIL"}
    bad = next(c for c in doc["cases"] if c["verdict"] == "FAIL")
    diff = bad["diffs"][0]
    assert (diff["partition"], diff["offset"], diff["element"], diff["part"]) == (2, 0x407, 7, "data")
    src = diff["source"]["bytes"]
    assert [(b["partition"], b["offset"]) for b in src] == [(2, 0x107)]         # the byte it doubles
    assert (2 * src[0]["value"]) & 0xFF == diff["actual"]
    code, out, err = run(folder, "-m", "q7emu", "replay", "cases", "--no-progress", "-k", "tensor_double and not bad")
    assert code == 0 and "td.json" in out and "td_bad" not in out, out + err


def test_without_its_spec_the_case_is_the_firmwares_unknown_opcode(folder):
    code, out, err = run(folder, "-m", "q7emu", "replay", "cases/td.json", "--no-progress", registered=False)
    assert code == 1 and "UNKNOWN OPCODE=0x5d" in out + err, out + err


def test_replay_program_refuses_it_naming_the_calling_conventions(folder):
    """--program stands in for the 0x7b / 0xe3 kernels only: on this opcode the case's error names the rule."""
    code, out, err = run(folder, "-m", "q7emu", "replay", "cases/td.json", "--no-progress", "--json", "--program",
                         EXAMPLE / "tensor_double.s")
    case = json.loads(out)["cases"][0]
    assert code == 1 and case["verdict"] == "FAIL", out + err
    assert "--program" in case["error"] and "0x7b and 0xe3 only" in case["error"], case["error"]


def test_explore_runs_it(folder):
    code, out, err = run(folder, "-m", "q7emu", "explore", "cases", "--json", "--no-progress")
    doc = json.loads(out)
    assert {c["kernel"] for c in doc["cases"]} == {"tensor_double"}, out + err


def test_the_pytest_plugin_runs_it_with_and_without_xdist(folder):
    for extra in ([], ["-n", "2"]):
        code, out, err = run(folder, "-m", "pytest", "--q7emu-cases", "cases", "-q", "-p", "no:cacheprovider", *extra)
        assert code == 1 and "1 failed, 1 passed" in out, out[-3000:] + err
        assert "source byte 0x" in out and "at p2 0x107" in out


def test_a_farm_runs_it_on_its_workers(folder):
    pytest.importorskip("distributed", reason="the dask extra (pip install '.[dask]')")
    script = """
import logging, sys, distributed
from q7emu.machine import report
from q7emu.machine.replay import replay
with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                              dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL) as c:
    here = replay(["cases"], progress=False)
    there = replay(["cases"], progress=False, dask=c.scheduler_address)
print(sorted((r.path, report.verdict(r), r.error) for r in there))
assert [(r.path, report.verdict(r)) for r in there] == [(r.path, report.verdict(r)) for r in here]
"""
    code, out, err = run(folder, "-c", script)
    assert code == 0 and "'PASS'" in out and "'FAIL'" in out, out + err[-3000:]


# ---------------------------------------------------------------------- what is missing is said
def test_a_record_of_an_opcode_without_a_spec_is_a_loud_error():
    raw = decode_record(bytes([0x5D]) + bytes(63))
    assert isinstance(raw, RawRecord) and opcodes.find_spec(raw) is None
    with pytest.raises(UnknownOpcode, match="opcode 0x5d: q7emu has no opcode spec"):
        opcodes.spec_of(raw)
    # a record of a class no spec owns (here: a RawRecord that says 0x7b) is refused, never read as 'unwritten'
    fake = RawRecord.decode(bytes([0x7B]) + bytes(63))
    with pytest.raises(UnknownOpcode, match="RawRecord record of opcode 0x7b: the TensorDequantize spec reads "
                                            "S3D3TensDequant records"):
        opcodes.find_spec(fake)
    assert OutputMap(bytes([0x5D]) + bytes(63), 0x1000).role_at(0, 0) is None


def test_register_refuses_a_second_spec_for_an_opcode_and_a_record_class_of_another_opcode():
    from q7emu.errors import InvalidArgument
    from q7emu.isa.tensor_dequantize import TensorDequantizeSpec

    with pytest.raises(InvalidArgument, match="opcode.*already has a spec"):
        opcodes.register(TensorDequantizeSpec())
    assert np.array_equal([s.opcode for s in opcodes.specs()], [0x7B, 0xE3])
