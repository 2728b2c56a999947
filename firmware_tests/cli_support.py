"""Running ``q7emu`` in-process from a test: the exit status and the captured output, and the one-line error
rule of the command line (docs/cli.md §1)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from q7emu.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "cases"
#: a shipped 0x7b group-8 case (record, input and expected arrays), and the shipped cases' partition size (bytes)
MX8 = EXAMPLES / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1.json"
PB = 0x400


def run(capsys: Any, *argv: object) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``q7emu ARGV...`` run in this process (each argument through str)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    """The one line of an error on stderr; AssertionError if there are more, or a traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]
