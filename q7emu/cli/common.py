"""What every CLI command module shares: the parser class, the usage-error type, exit codes and the
argument helpers (``--knob`` lists, records given as hex or a file, integers in any base, one-line errors).

A command module imports from here and from the layers below the CLI, never from another command module.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO, TypeAlias

#: exit status: success / a passing verdict
EXIT_OK = 0
#: exit status: a failing verdict (a record INVALID, a case mismatch, traces that differ, no knob fits)
EXIT_FAIL = 1
#: exit status: bad input (usage, unreadable or malformed files, invalid arguments)
EXIT_USAGE = 2
#: exit status: interrupted (SIGINT), as a shell reports it
EXIT_INTERRUPT = 130

#: the generation names the commands accept, for help texts
GENERATIONS = "SUNDA, CAYMAN, MARIANA, MARIANA_PLUS, MAVERICK"
#: help text of a ``--knob`` option that takes a machine knob
KNOB_HELP = "model knob NAME=VALUE (docs/model.md §1-§2), repeatable"

#: what ``ArgumentParser.add_subparsers`` returns; every command module's ``register`` adds its commands to it
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class UsageError(Exception):
    """Bad command-line input; ``main`` prints ``q7emu: error: MESSAGE`` and exits with :data:`EXIT_USAGE`."""


class ParserError(UsageError):
    """An argparse error; the message is complete (it already names the (sub)command)."""


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line and raise :class:`ParserError` instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Raise ``PROG: error: MESSAGE`` as a :class:`ParserError`."""
        raise ParserError(f"{self.prog}: error: {message}")


def parse_knobs(items: Sequence[str] | None, *, check: bool = True) -> dict[str, str]:
    """``NAME=VALUE`` items (a repeatable ``--knob``) as a dict, names and values stripped.

    ``check``: also validate names and values as machine knobs (docs/model.md §1-§2; raises InvalidArgument).
    The dict holds only the knobs given (no defaults filled in)."""
    out: dict[str, str] = {}
    for it in items or []:
        if "=" not in it:
            raise UsageError(f"--knob {it!r}: expected NAME=VALUE")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    if check:
        from q7emu.machine.machine import normalize_machine_knobs
        normalize_machine_knobs(out)
    return out


def read_record(text: str, allow_kernel_info: bool = False) -> bytes:
    """64 record bytes from hex text or a file (raw 64 bytes, or hex text); 8 bytes if ``allow_kernel_info``."""
    from q7emu.isa.records import RECORD_SIZE, parse_hex

    p = Path(text)
    if len(text) < 256 and p.exists() and p.is_file():
        data = p.read_bytes()
        if len(data) != RECORD_SIZE:
            try:
                data = parse_hex(data.decode("ascii"))
            except (UnicodeDecodeError, ValueError):
                raise UsageError(f"{text}: neither {RECORD_SIZE} raw bytes nor hex text") from None
    else:
        data = parse_hex(text)
    if len(data) != RECORD_SIZE and not (allow_kernel_info and len(data) == 8):
        raise UsageError(f"record must be exactly {RECORD_SIZE} bytes"
                         f"{' (or 8 for a kernel_info record)' if allow_kernel_info else ''}, got {len(data)}")
    return data


def parse_int(text: str) -> int:
    """An integer in Python literal syntax (``1024``, ``0x400``, ``0o2000``, ``0b...``); an argparse ``type``."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def error_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its type name when the message is empty."""
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def print_error(message: str, stream: TextIO | None = None) -> None:
    """Print ``q7emu: error: MESSAGE`` (one line) on stderr."""
    print(f"q7emu: error: {message}", file=stream or sys.stderr)
