"""Exit 3 where the user did nothing wrong (issue 27 item 8).

* With stderr closed (``2>&-``) ``trace`` and ``profile`` failed (``'NoneType' object has no attribute
  'isatty'``) and wrote nothing; with stdout closed ``trace show --json`` too. A closed stream now drops what
  is written to it, as ``print`` does: the command runs, writes its files and exits with its verdict.
* ``Q7EMU_MAX_JSON_BYTES=9223372036854775807`` (a valid value per docs/limits.md) overflowed ``f.read(n + 1)``.
* A case folder whose name is not UTF-8 made ``replay --junit`` print no row, write no report and exit 2
  naming no file. Names are now written with backslash escapes.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from hostile_lib import EXAMPLES, HANG, Outcome, assert_no_crash, cli, env

CASE = sorted((EXAMPLES / "cayman").glob("*.json"))[0]


def run_closed(fd, *argv):
    """The CLI with file descriptor ``fd`` (1 stdout, 2 stderr) closed, as ``>&-`` / ``2>&-`` leave it."""
    p = subprocess.run([sys.executable, "-m", "q7emu", *argv], capture_output=True, text=True, env=env(),
                       timeout=HANG, preexec_fn=lambda: os.close(fd))
    return Outcome(p.returncode, p.stdout, p.stderr)


@pytest.mark.parametrize("argv", [
    ["trace", str(CASE), "-o", "{tmp}/t.q7t"],
    ["trace", str(CASE), "-o", "{tmp}/t.jsonl"],
    ["profile", str(CASE), "--chrome-trace", "{tmp}/p.json"],
    ["replay", str(CASE), "--junit", "{tmp}/r.xml"],
], ids=["trace", "trace-jsonl", "profile", "replay"])
def test_stderr_closed_the_command_still_runs_and_writes(tmp_path, argv):
    argv = [a.format(tmp=tmp_path) for a in argv]
    out = run_closed(2, *argv)
    assert out.returncode == 0, out.describe()
    assert os.path.getsize(argv[-1]) > 0


@pytest.mark.parametrize("argv", [
    ["trace", "show", "{tmp}/t.q7t", "--json"],
    ["trace", "show", "{tmp}/t.q7t"],
    ["trace", str(CASE), "-o", "{tmp}/u.q7t", "--json"],
    ["replay", str(CASE), "--json"],
    ["profile", str(CASE), "--json"],
], ids=["show-json", "show", "trace-json", "replay-json", "profile-json"])
def test_stdout_closed_the_command_still_runs(tmp_path, argv):
    assert cli("trace", str(CASE), "-o", str(tmp_path / "t.q7t"), "--ops", "sav2nx8_xp").returncode == 0
    out = run_closed(1, *[a.format(tmp=tmp_path) for a in argv])
    assert_no_crash(out)
    assert out.returncode == 0 and not out.stderr.strip(), out.describe()


def test_the_largest_json_size_limit_is_usable():
    e = dict(env(), Q7EMU_MAX_JSON_BYTES=str(2 ** 63 - 1))
    p = subprocess.run([sys.executable, "-m", "q7emu", "replay", str(CASE)], capture_output=True, text=True, env=e,
                       timeout=HANG)
    assert p.returncode == 0 and " PASS " in p.stdout, (p.returncode, p.stdout, p.stderr)


def test_a_case_folder_whose_name_is_not_utf8(tmp_path):
    folder = os.path.join(os.fsencode(tmp_path), b"cases-\xff\xfe")
    os.mkdir(folder)
    for suffix in (".json", ".npz"):
        shutil.copy(CASE.with_suffix(suffix), os.path.join(folder, b"c" + suffix.encode()))
    bad = tmp_path / "bad.json"          # and a broken case whose error names the folder
    junit = tmp_path / "r.xml"
    p = subprocess.run([sys.executable, "-m", "q7emu", "replay", os.fsdecode(folder), "--junit", str(junit)],
                       capture_output=True, env=env(), timeout=HANG)
    assert p.returncode == 0, p
    assert b" PASS " in p.stdout and b"cases-\\xff\\xfe" in p.stdout, p.stdout
    root = ET.parse(junit).getroot()
    tc = root.find(".//testcase")
    assert tc is not None and "cases-\\xff\\xfe" in tc.get("file"), ET.tostring(root)[:500]
    p = subprocess.run([sys.executable, "-m", "q7emu", "replay", os.fsdecode(folder), "--json"],
                       capture_output=True, env=env(), timeout=HANG)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and "cases-\\xff\\xfe" in doc["cases"][0]["path"], p
    del bad
