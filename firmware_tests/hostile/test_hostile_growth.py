"""Inputs that grow work without growing size (issue 27 item 7, and the hunt's same class).

* A 29-byte JSON Lines line naming ``"run": 100000`` made ``trace import`` build an encoder for every run
  index below it (~5.5 KB each); ``"run": 4294967295`` ended in ``internal error (MemoryError)``. A run index
  is now at most the number of records before it (or below the header's run count): one line, exit 2.
* Saving an in-memory trace scanned every record once per run (quadratic): 20,000 one-record runs are now one
  sort.

The subprocess timeouts are hang guards, never speed assertions.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest
from hostile_lib import EXAMPLES, HANG, Outcome, assert_clean_error, cli, env, python

LINE = {"op": "ivp_nop", "operands": []}


def _limited(cmd, data_bytes=1 << 30):
    def limit():
        resource.setrlimit(resource.RLIMIT_DATA, (data_bytes, data_bytes))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=HANG, preexec_fn=limit)
    return Outcome(p.returncode, p.stdout, p.stderr)


@pytest.mark.parametrize("run", [100_000, 2 ** 32 - 1])
@pytest.mark.parametrize("command", ["import", "show", "export"])
def test_a_huge_run_index_in_a_tiny_line_is_refused(tmp_path, run, command):
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({**LINE, "run": run}) + "\n")
    argv = {"import": ["trace", "import", str(src), "-o", str(tmp_path / "t.q7t")],
            "show": ["trace", "show", str(src)],
            "export": ["trace", "export", str(src), "-o", str(tmp_path / "x.jsonl")]}[command]
    line = assert_clean_error(_limited([sys.executable, "-m", "q7emu", *argv]))
    assert "'run'" in line and "t.jsonl:1" in line, line


def test_run_indexes_within_the_bound_still_import(tmp_path):
    """Run 1 after one record of run 0, and a header listing 5 runs that lets a record name run 4."""
    src = tmp_path / "a.jsonl"
    src.write_text("\n".join(json.dumps({**LINE, "run": r, "seq": i}) for i, r in enumerate([0, 1, 1, 2])) + "\n")
    out = cli("trace", "import", str(src), "-o", str(tmp_path / "a.q7t"), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["records"] == 4, out.describe()
    src = tmp_path / "b.jsonl"
    head = {"format": "q7emu-trace-jsonl", "version": 1, "case": "", "runs": [{"kernel": "x"}] * 5}
    src.write_text(json.dumps(head) + "\n" + json.dumps({**LINE, "run": 4}) + "\n")
    out = cli("trace", "import", str(src), "-o", str(tmp_path / "b.q7t"), "--json")
    assert out.returncode == 0, out.describe()
    out = cli("trace", "show", str(tmp_path / "b.q7t"), "--json")
    assert out.returncode == 0 and len(json.loads(out.stdout)["runs"]) == 5, out.describe()


SAVE_MANY_RUNS = """
import json, sys
from q7emu.analysis.trace import Trace
n = int(sys.argv[1])
lines = [json.dumps({"op": "ivp_nop", "operands": [], "run": i, "seq": i}) for i in range(n)]
import io
t = Trace.from_jsonl(io.StringIO("\\n".join(lines) + "\\n"))
t.save(sys.argv[2])
print(len(t), len(t.runs))
"""


def test_saving_a_trace_of_many_runs_is_not_quadratic(tmp_path):
    out = python(SAVE_MANY_RUNS, "20000", str(tmp_path / "m.q7t"), timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["20000", "20000"], out.describe()


def test_regions_naming_one_array_read_it_once(tmp_path):
    """40 regions naming one 32 MiB member (32 KB deflated): it was inflated once per region (1.2 GB peak, then
    refused by the 1 GiB array budget, exit 2); it is now read once and the case replays."""
    import numpy as np

    from q7emu.fileio import write_npz
    case = json.loads(sorted((EXAMPLES / "cayman").glob("*.json"))[0].read_text())
    meta = dict(case, partition_bytes=0x40000, expected=[],
                inputs=[{"array": "big", "partition": 0, "count": 128, "offset": 0, "length": 0x40000}] * 40)
    (tmp_path / "same.json").write_text(json.dumps(meta))
    with open(tmp_path / "same.npz", "wb") as f:
        write_npz(f, {"big": np.zeros((128, 0x40000), np.uint8)})
    out = cli("replay", str(tmp_path / "same.json"))
    assert out.returncode == 0 and " PASS " in out.stdout, out.describe()
