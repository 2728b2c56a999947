"""docs/tutorial.md: every command of its ``sh`` blocks runs, in order, in one empty folder (nothing linked or copied
in: the page says it works so), and exits with the status the page gives (``# exit N`` at its end; 0 otherwise); the
outputs the text quotes are what the commands print.

The commands run the installed ``q7emu`` / ``pytest`` / ``python`` of this interpreter's environment, from
outside the source tree (the repository on PYTHONPATH, as the other CLI tests do).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
HANG = 300


def commands(text: str) -> list[tuple[str, int]]:
    """(command, expected exit status) of every line of every ```sh block, continuation lines joined."""
    out, block, pending = [], False, ""
    for line in text.splitlines():
        if line.startswith("```"):
            block = line.strip() == "```sh"
            continue
        if not block or not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        m = re.search(r"\s+#\s*exit (\d+)\s*$", line)
        out.append((line[:m.start()] if m else line, int(m.group(1)) if m else 0))
    return out


def test_the_tutorial_has_the_walk_through():
    cmds = [c for c, _ in commands(TUTORIAL.read_text())]
    for step in ("q7emu record new", "q7emu case new", "q7emu replay", "q7emu explore", "q7emu trace diff",
                 "q7emu merge", "pytest"):
        assert any(c.startswith(step) for c in cmds), step


def test_every_command_of_the_tutorial_runs(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra (the tutorial draws a diff map)")
    assert not any(tmp_path.iterdir())
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTEST_ADDOPTS", None)
    outputs = {}
    for cmd, want in commands(TUTORIAL.read_text()):
        p = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=HANG, stdin=subprocess.DEVNULL)
        assert p.returncode == want, f"{cmd}\nexit {p.returncode}, the tutorial says {want}\n{p.stdout[-2000:]}" \
                                     f"\n{p.stderr[-2000:]}"
        assert "Traceback" not in p.stderr, p.stderr
        outputs[cmd] = p.stdout
    text = TUTORIAL.read_text()
    # the lines the page quotes are the replay's own
    replay = next(out for cmd, out in outputs.items() if cmd.startswith("q7emu replay capture.json --max-diffs"))
    quoted = text.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    for line in quoted:
        assert line.strip() in replay, line
    assert "962 of 1024 bytes differ" in replay
    explore = next(out for cmd, out in outputs.items() if cmd.startswith("q7emu explore"))
    assert "REPRODUCED by 1 combination(s):\n  nibble_order=high-first" in explore
    assert (tmp_path / "diff.png").read_bytes().startswith(b"\x89PNG") and (tmp_path / "report.xml").is_file()
