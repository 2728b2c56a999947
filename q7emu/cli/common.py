"""What every CLI command module shares: the parser class, the usage-error type, exit codes, the ``--json``
document envelope and the argument helpers (``--knob`` lists, records given as hex or a file, integers in any
base, partition sizes, one-line errors).

A command module imports from here and from the layers below the CLI, never from another command module.
"""
from __future__ import annotations

import argparse
import importlib.machinery
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO, TypeAlias

from q7emu.errors import first_line, shown_name, shown_names

#: exit status: success / a passing verdict
EXIT_OK = 0
#: exit status: a failing verdict (a record INVALID, a case mismatch, traces that differ, no knob fits)
EXIT_FAIL = 1
#: exit status: bad input (usage, unreadable or malformed files, invalid arguments)
EXIT_USAGE = 2
#: exit status: an internal error, q7emu's own bug (the only status that may come with a traceback: --debug)
EXIT_INTERNAL = 3
#: exit status: interrupted (SIGINT), as a shell reports it
EXIT_INTERRUPT = 130

#: the generation names the commands accept, for help texts
GENERATIONS = "SUNDA, CAYMAN, MARIANA, MARIANA_PLUS, MAVERICK"
#: help text of a ``--knob`` option that takes a machine knob
KNOB_HELP = "model knob NAME=VALUE (docs/model.md §1-§2), repeatable"
#: the exit statuses, as every ``--help`` ends (docs/cli.md)
EXIT_HELP = ("exit status: 0 pass; 1 mismatch or divergence (a case fails, a record is INVALID, traces differ, no "
             "knob combination fits); 2 bad input or usage (one line on stderr); 3 internal error, a q7emu bug "
             "(q7emu --debug ... prints its traceback); 130 interrupted. --json: one JSON document on stdout "
             "(docs/cli.md), also for errors (format q7emu-error).")
#: the largest partition size (SBUF bytes per partition): 128 partitions below the PSUM bit 25 (docs/model.md §4)
PARTITION_BYTES_MAX = (1 << 25) // 128
#: version of every ``q7emu-<command>`` JSON document the CLI prints (docs/cli.md)
JSON_VERSION = 1

#: what ``ArgumentParser.add_subparsers`` returns; every command module's ``register`` adds its commands to it
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


#: the arguments whose value may be empty: free text
EMPTY_ALLOWED = frozenset({"note"})


class UsageError(Exception):
    """Bad command-line input; ``main`` prints ``q7emu: error: MESSAGE`` and exits with :data:`EXIT_USAGE`."""


class ParserError(UsageError):
    """An argparse error; the message is complete (it already names the (sub)command)."""


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line and raise :class:`ParserError` instead of exiting; its help ends
    with the exit statuses (:data:`EXIT_HELP`) unless an epilog is given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("epilog", EXIT_HELP)
        super().__init__(*args, **kwargs)

    #: whether ``--json`` is on the command line, set before parsing so that --version can answer in JSON
    want_json: bool = False

    def error(self, message: str) -> NoReturn:
        """Raise ``PROG: error: MESSAGE`` as a :class:`ParserError`."""
        raise ParserError(f"{self.prog}: error: {message}")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # argparse's overloads, as one
        """argparse's, and then an empty value of any argument of this (sub)command but free text
        (:data:`EMPTY_ALLOWED`) is an error: ``--shard "$SHARD"``, ``--junit "$OUT"`` or ``replay "$DIR"`` with the
        variable unset must not mean "every case", "no JUnit file" or "the current folder" (docs/cli.md §1)."""
        ns, extras = super().parse_known_args(args, namespace)
        for action in self._actions:
            if action.dest in EMPTY_ALLOWED or action.dest == argparse.SUPPRESS:
                continue
            value = getattr(ns, action.dest, None)
            if value == "" or (isinstance(value, list) and "" in value):
                name = "/".join(action.option_strings) or action.metavar or action.dest
                self.error(f"argument {name}: an empty value (a shell variable that is not set?); give a value or "
                           "leave the argument out")
        return ns, extras


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


#: the largest record file read (docs/limits.md §2): 64 raw bytes, or their hex text with room for spacing
RECORD_FILE_MAX = 1 << 16


def read_record(text: str, allow_kernel_info: bool = False) -> bytes:
    """64 record bytes from hex text or a file (raw 64 bytes, or hex text); 8 bytes if ``allow_kernel_info``."""
    from q7emu.isa.records import RECORD_SIZE, parse_hex

    p = Path(text)
    if len(text) < 256 and p.exists() and p.is_file():
        from q7emu.fileio import read_bytes
        data = read_bytes(p, RECORD_FILE_MAX)      # bounded: a record file is 64 bytes or their hex text
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


def add_run_options(s: argparse.ArgumentParser, task: str) -> None:
    """The options replay and explore share: ``-j``, ``--progress`` / ``--no-progress`` and ``--dask`` (each
    ``task``, e.g. "each case", a task on the cluster)."""
    s.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    s.add_argument("--progress", action="store_true", help="always show the progress bar on stderr")
    s.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    s.add_argument("--dask", metavar="ADDRESS",
                   help=f"run {task} as a task on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:PORT; "
                        "the dask extra); workers read the case files themselves (docs/cli.md §4.2)")
    s.add_argument("--dask-timeout", type=parse_seconds, default=None, metavar="SECONDS",
                   help="--dask: seconds to reach the scheduler and its first worker (default 10, or "
                        "Q7EMU_DASK_CONNECT_SECONDS; docs/limits.md §2)")


def parse_seconds(text: str) -> float:
    """A number of seconds > 0 (``--dask-timeout``); an argparse ``type``."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        raise argparse.ArgumentTypeError(f"not a number of seconds > 0: {text!r}")
    return value


def progress_choice(args: argparse.Namespace) -> bool | None:
    """The progress bar asked for: False (--no-progress), True (--progress) or None (when stderr is a terminal)."""
    return False if args.no_progress else (True if args.progress else None)


def parse_int(text: str) -> int:
    """An integer in Python literal syntax (``1024``, ``0x400``, ``0o2000``, ``0b...``); an argparse ``type``."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def parse_partition_bytes(text: str) -> int:
    """``--partition-bytes``: SBUF bytes per partition, a multiple of 4 in 4..0x40000; an argparse ``type``."""
    value = parse_int(text)
    if not 4 <= value <= PARTITION_BYTES_MAX or value % 4:
        raise argparse.ArgumentTypeError(
            f"{text!r}: SBUF bytes per partition must be a multiple of 4 in 4..0x{PARTITION_BYTES_MAX:x} "
            "(128 partitions below the PSUM bit 25, docs/model.md §4)")
    return value


def json_document(command: str, payload: dict[str, Any], version: int = JSON_VERSION) -> dict[str, Any]:
    """``{"format": "q7emu-COMMAND", "version": version, "q7emu_version": ..., **payload}`` (docs/cli.md; a
    command whose document changed shape passes its own version). A payload that names its own format (a
    profile, a trace header) is returned as it is."""
    from q7emu._version import __version__

    if str(payload.get("format", "")).startswith("q7emu-"):
        return payload
    return {"format": f"q7emu-{command}", "version": version, "q7emu_version": __version__, **payload}


def json_text(doc: Any, **kw: Any) -> str:
    """``json.dumps(doc, **kw)``, with every name that is not UTF-8 (a lone surrogate) written as the reports write
    it (``\\xff``: :func:`q7emu.errors.shown_names`), never as a ``\\udcff`` escape a strict reader refuses
    (docs/cli.md §1). Documents without one are dumped once, as they were."""
    text = json.dumps(doc, **kw)
    if "\\ud" in text:                  # a surrogate escape (or a backslash before "ud"): look at the strings
        text = json.dumps(shown_names(doc), **kw)
    return text


def print_json(command: str, payload: dict[str, Any]) -> None:
    """Print :func:`json_document` on stdout (indent 1)."""
    print(json_text(json_document(command, payload), indent=1))


def source_tree_problem() -> str | None:
    """One line saying what to do when q7emu is imported from a source tree (a ``q7emu/`` folder beside
    ``setup.py`` and ``src/``) whose compiled extensions are not built; None otherwise (an installed package, or a
    built tree). The extensions are setup.py's: ``src/<layer>/_<name>.pyx`` builds ``q7emu.<layer>._<name>``."""
    pkg = Path(__file__).resolve().parents[1]
    root = pkg.parent
    if not ((root / "setup.py").is_file() and (root / "src").is_dir()):
        return None
    missing = [f"q7emu.{pyx.parent.name}.{pyx.stem}" for pyx in sorted((root / "src").glob("*/_*.pyx"))
               if not any((pkg / pyx.parent.name / f"{pyx.stem}{suffix}").is_file()
                          for suffix in importlib.machinery.EXTENSION_SUFFIXES)]
    if not missing:
        return None
    return (f"q7emu is imported from the source tree {pkg}, whose compiled extensions are not built "
            f"({', '.join(missing)}): run `pip install -e .` in {root}, or run from outside the source tree "
            "to use the installed q7emu")


#: the first line of an exception's message, or its type name when the message is empty
error_line = first_line


def quiet_dask_logs() -> None:
    """Keep Dask's client warnings and errors (a worker lost, keys rescheduled, the scheduler gone, with their
    tracebacks) off stderr, where the progress bar and the one-line errors are: ``--dask`` reports what happened to
    each case itself, and a lost scheduler in one line (docs/cli.md §4.2)."""
    import contextlib
    import logging

    with contextlib.suppress(ImportError):      # its import sets its loggers' levels from Dask's config: after it
        import distributed  # noqa: F401
    for name in ["distributed", *logging.root.manager.loggerDict]:
        if name == "distributed" or name.startswith("distributed."):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def interrupted() -> int:
    """Say on stderr that Ctrl-C stopped the command (``q7emu: interrupted``) and return EXIT_INTERRUPT (130)."""
    print("q7emu: interrupted", file=sys.stderr)
    return EXIT_INTERRUPT


def print_error(message: str, stream: TextIO | None = None) -> None:
    """Print ``q7emu: error: MESSAGE`` (one line) on stderr (a name that is not UTF-8 as ``\\xff``)."""
    print(f"q7emu: error: {shown_name(message)}", file=stream or sys.stderr)


#: help of the options every command that runs a program takes (docs/asm.md §7)
PROGRAM_HELP = "docs/asm.md"


def add_program_options(s: argparse.ArgumentParser, program: bool = True) -> None:
    """``--program PROG.s`` (when ``program``), ``--reading``, ``--define`` and ``--max-steps``: how a command reads
    and runs a program (docs/asm.md §5, §4.5)."""
    if program:
        s.add_argument("--program", metavar="PROG.s",
                       help="run this program in the record's kernel's place, called as the kernel is (docs/asm.md "
                            "§4.3)")
    s.add_argument("--reading", action="append", metavar="MNEMONIC=READING",
                   help="read a mnemonic the facts read two ways this way, over the program's .reading (docs/asm.md "
                        "§5: sel2nx8i_s4=unpack|select); repeatable")
    s.add_argument("--define", action="append", metavar="NAME=VALUE",
                   help="a predefined symbol of the program (an integer); repeatable")
    s.add_argument("--max-steps", type=parse_int, default=None, metavar="N",
                   help="the bundles one partition's run may execute before it stops with an error (default 2^24, "
                        "docs/asm.md §4.5)")


def integer_assignments(args: argparse.Namespace, option: str, form: str) -> dict[str, int]:
    """The ``--OPTION NAME=VALUE`` items of ``args.OPTION`` as {NAME: VALUE}, VALUE an integer in any base
    (``0x40``); an item without ``=`` or with another value is a UsageError naming the item and ``form``."""
    out: dict[str, int] = {}
    for it in getattr(args, option, None) or []:
        if "=" not in it:
            raise UsageError(f"--{option} {it!r}: expected {form}")
        k, v = it.split("=", 1)
        try:
            out[k.strip()] = int(v.strip(), 0)
        except ValueError:
            raise UsageError(f"--{option} {it!r}: the value must be an integer") from None
    return out


def read_program(path: str, args: argparse.Namespace) -> Any:
    """The program at ``path`` assembled with the command's ``--reading`` / ``--define`` (an AsmError names the
    line), as a :class:`q7emu.asm.Program`."""
    from q7emu.asm import assemble_file

    readings: dict[str, str] = {}
    for it in getattr(args, "reading", None) or []:
        if "=" not in it:
            raise UsageError(f"--reading {it!r}: expected MNEMONIC=READING (sel2nx8i_s4=select)")
        k, v = it.split("=", 1)
        readings[k.strip().lower().removeprefix("ivp_")] = v.strip()
    symbols: dict[str, int | tuple[int, ...]] = dict(integer_assignments(args, "define", "NAME=VALUE"))
    steps = getattr(args, "max_steps", None)
    if steps is not None and not 1 <= steps < 1 << 62:
        raise UsageError(f"--max-steps must be in 1..2^62 bundles, got {steps}")
    return assemble_file(path, symbols=symbols, readings=readings)


def program_backend(args: argparse.Namespace) -> Any:
    """The machine backend of ``--program`` (a :class:`q7emu.asm.kernels.ProgramBackend`), or None without it."""
    if getattr(args, "program", None) is None:
        return None
    from q7emu.asm.kernels import ProgramBackend

    return ProgramBackend(read_program(args.program, args), getattr(args, "max_steps", None))
