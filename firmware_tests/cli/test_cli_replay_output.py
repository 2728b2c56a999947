"""q7emu replay DIR's text output (issue 40): one row per case, the failing cases listed again after the rows,
``-q`` for the failing cases and the summary only, and the progress bar on a terminal."""
from __future__ import annotations

import fcntl
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import numpy as np
import pytest
from cli_support import run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cases"
N_CASES = len(list(EXAMPLES.rglob("*.json")))
BROKEN = ("mariana/mariana_7b_proc_4bit_mx_8_nf4", "maverick/maverick_e3_quantize_mx_e5m2")


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """The shipped cases, two of them with one expected byte changed (so they fail)."""
    d = tmp_path_factory.mktemp("cases") / "cases"
    shutil.copytree(EXAMPLES, d)
    for stem in BROKEN:
        with np.load(d / f"{stem}.npz") as z:
            arrays = dict(z)
        arrays["exp0"] = arrays["exp0"].copy()
        arrays["exp0"][0, 0] ^= 0x01
        np.savez(d / f"{stem}.npz", **arrays)
    return d


def failing_rows(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if " FAIL " in ln]


def test_every_case_then_the_failing_ones_then_the_summary(capsys, cases):
    rc, out, _ = run(capsys, "replay", cases)
    lines = out.splitlines()
    assert rc == 1 and lines[-1].startswith(f"{N_CASES} cases: {N_CASES - 2} passed, 2 failed")
    head = lines.index(f"failing cases: 2 of {N_CASES}")
    listed = lines[head + 1:-1]
    assert len(listed) == 2 and all(" FAIL " in ln for ln in listed), lines[head:]
    assert [stem for stem in BROKEN if any(stem in ln for ln in listed)] == list(BROKEN)
    rows = [ln for ln in lines[:head] if ln.startswith("0x")]
    assert len(rows) == N_CASES and len(failing_rows("\n".join(rows))) == 2


def test_quiet_prints_the_failing_cases_and_the_summary(capsys, cases):
    rc, out, _ = run(capsys, "replay", cases, "-q")
    lines = out.splitlines()
    rows = [ln for ln in lines if ln.startswith("0x")]
    assert rc == 1 and len(rows) == 2 and all(" FAIL " in ln for ln in rows), out
    assert " PASS " not in out and "failing cases:" not in out
    assert any(ln.lstrip().startswith("diff 1 of") for ln in lines), out      # a failure keeps its detail
    assert lines[-1].startswith(f"{N_CASES} cases: {N_CASES - 2} passed, 2 failed")
    rc, out, _ = run(capsys, "replay", EXAMPLES, "--quiet")
    assert rc == 0 and out.splitlines() == [out.strip()] and out.startswith(f"{N_CASES} cases: {N_CASES} passed")


def test_one_failing_case_alone_is_not_listed_twice(capsys, cases):
    rc, out, _ = run(capsys, "replay", cases / f"{BROKEN[0]}.json")
    assert rc == 1 and "failing cases" not in out and len(failing_rows(out)) == 1


def test_the_progress_bar_is_drawn_on_a_terminal(cases):
    """stderr a terminal (a pseudo-terminal here): tqdm's bar counts the cases and the failures; stdout (a pipe)
    holds only the report."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))    # a 100-column terminal
    try:
        p = subprocess.Popen([sys.executable, "-m", "q7emu", "replay", str(cases), "-q"], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=child, stdin=subprocess.DEVNULL, text=True)
        os.close(child)
        err = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:             # EIO: the child closed the terminal (it ended)
                break
            if not chunk:
                break
            err += chunk
        out = p.stdout.read()
        assert p.wait(timeout=300) == 1
    finally:
        os.close(main)
    text = err.decode(errors="replace")
    assert f"{N_CASES}/{N_CASES}" in text and "2 failed" in text, text[-500:]
    assert "/" not in out.splitlines()[-1].split(";")[0] and len(failing_rows(out)) == 2
