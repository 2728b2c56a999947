"""Running ``q7emu`` in-process from a test: the exit status and the captured output, and the one-line error
rule of the command line (docs/cli.md §1)."""
from __future__ import annotations

from typing import Any

from q7emu.cli.main import main


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
