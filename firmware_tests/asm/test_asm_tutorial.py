"""docs/asm.md §8: every command of its ``sh`` blocks runs, in order, in one empty folder, and exits with the
status the page gives (``# exit N``; 0 otherwise); the lines its ``text`` blocks quote are what the commands print.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from firmware_tests.test_tutorial import commands

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "asm.md"
HANG = 300


def _section() -> str:
    text = PAGE.read_text()
    return text[text.index("## 8. Tutorial"):]


def test_the_tutorial_walks_a_seed_bundle_to_a_trace_diff():
    cmds = [c for c, _ in commands(_section())]
    for step in ("q7emu asm check", "q7emu asm run", "q7emu case new", "q7emu listing --case", "q7emu replay",
                 "q7emu trace diff"):
        assert any(c.startswith(step) for c in cmds), step
    assert any("--program" in c for c in cmds) and any("--reading" in c for c in cmds)


def test_every_command_of_the_tutorial_runs(tmp_path):
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    printed = []
    for cmd, want in commands(_section()):
        p = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=HANG, stdin=subprocess.DEVNULL)
        assert p.returncode == want, f"{cmd}\nexit {p.returncode}, the page says {want}\n{p.stdout[-2000:]}" \
                                     f"\n{p.stderr[-2000:]}"
        assert "Traceback" not in p.stderr, p.stderr
        printed.append(p.stdout + p.stderr)
    quoted = [block.split("```", 1)[0] for block in _section().split("```text\n")[1:]]
    assert len(quoted) == 2
    for block in quoted:
        for line in block.splitlines():
            assert any(line.strip() in out for out in printed), line
    # the seed bundle ran on the loaded bytes: sel2nx8i_s4's v3 is partition 0's bytes 0x80.. of the image
    shown = next(out for (cmd, _), out in zip(commands(_section()), printed)
                 if cmd.startswith("q7emu trace show seed.q7t"))
    image = (tmp_path / "before.bin").read_bytes()
    assert "src v3    2nx8    [ 0] " + " ".join(f"{b:02x}" for b in image[0x80:0x88]) in shown, shown
