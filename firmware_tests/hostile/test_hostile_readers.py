"""Every read goes through the bounded readers of q7emu.fileio (issue 27 item 6, and the record file of item 10).

* ``replay DIR --knob ...`` read every case with a plain ``json.loads`` to learn its kernel: one deeply nested
  case ended the whole run with ``internal error (RecursionError)``, exit 3, no row for the good cases.
* ``trace import`` opened its input with ``open()``: ``/dev/zero`` was read as one endless line, a FIFO blocked
  for ever; ``trace show`` of a FIFO too. A regular file holding one endless line was read whole.
* A RECORD file was read whole (1 GB in, 3.7 GB peak).
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys

import pytest
from hostile_lib import EXAMPLES, HANG, Outcome, assert_clean_error, assert_no_crash, cli, env

CAYMAN = sorted((EXAMPLES / "cayman").glob("*.json"))


def test_replay_knob_scan_survives_a_deeply_nested_case(tmp_path):
    for j in CAYMAN[:3]:
        shutil.copy(j, tmp_path / j.name)
        shutil.copy(j.with_suffix(".npz"), tmp_path / j.with_suffix(".npz").name)
    (tmp_path / "deep.json").write_text('{"format": "q7emu-case", "x": ' + "[" * 200_000 + "]" * 200_000 + "}")
    out = cli("replay", str(tmp_path), "--knob", "nibble_order=low-first")
    assert_no_crash(out)
    assert out.returncode == 2, out.describe()                    # a broken case file: bad input, not a bug
    assert "internal error" not in out.stderr, out.describe()
    assert "deep.json" in out.stdout and "ERROR" in out.stdout, out.describe()
    assert out.stdout.count(" PASS ") == 3, out.describe()       # every good case still has its row


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "t.jsonl"
    os.mkfifo(p)
    return p


@pytest.mark.parametrize("argv", [
    ["trace", "import", "{src}", "-o", "{out}"],
    ["trace", "show", "{src}"],
    ["trace", "show", "{src}", "--json"],
    ["trace", "export", "{src}", "-o", "{out}"],
    ["trace", "diff", "{src}", "{src}"],
], ids=["import", "show", "show-json", "export", "diff"])
@pytest.mark.parametrize("source", ["fifo", "dev-zero", "folder"])
def test_trace_readers_refuse_what_is_not_a_regular_file(tmp_path, argv, source, request):
    src = {"fifo": lambda: request.getfixturevalue("fifo"), "dev-zero": lambda: "/dev/zero",
           "folder": lambda: tmp_path}[source]()
    out = cli(*[a.format(src=src, out=tmp_path / "o.q7t") for a in argv], timeout=60)
    line = assert_clean_error(out)
    assert "regular file" in line or "folder" in line, line
    assert not (tmp_path / "o.q7t").exists()


def test_an_endless_json_lines_line_is_refused_without_reading_it_whole(tmp_path):
    """Under a 1 GiB data limit a 3 GiB line read whole is a MemoryError (exit 3 before); read in bounded
    pieces it is refused after 16 MiB."""
    src = tmp_path / "t.jsonl"
    with open(src, "wb") as f:                  # 3 GiB of one line (sparse: costs no disk)
        f.write(b'{"op": "')
        f.truncate(3 << 30)

    def limit():
        resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, 1 << 30))
    p = subprocess.run([sys.executable, "-m", "q7emu", "trace", "import", str(src), "-o", str(tmp_path / "o.q7t")],
                       capture_output=True, text=True, env=env(), timeout=HANG, preexec_fn=limit)
    line = assert_clean_error(Outcome(p.returncode, p.stdout, p.stderr))
    assert "longer than" in line, line


def test_a_huge_record_file_is_refused_from_its_size(tmp_path):
    rec = tmp_path / "rec.bin"
    with open(rec, "wb") as f:
        f.truncate(1 << 30)                     # 1 GiB, sparse
    out = cli("decode", str(rec), timeout=60)
    line = assert_clean_error(out)
    assert "larger than the limit" in line and "rec.bin" in line, line
