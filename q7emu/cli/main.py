"""Command-line interface: ``q7emu {ops,decode,table,run,replay,case new,record new,trace,profile,explore,listing,
asm}``.

The commands live in the modules of :data:`COMMANDS` (module name -> the commands it registers); each has
``register(subparsers)``, which adds its subcommands with ``set_defaults(func=...)``. ``func(args)`` returns the exit
status. A command line naming a command imports only that command's module (start-up, docs/cli.md §1); help and
an unknown command register them all.

Exit status (docs/cli.md): 0 pass, 1 a mismatch or divergence (a failing case, an INVALID record, differing
traces, no knob fits), 2 bad input or usage (a one-line ``q7emu: error: ...`` on stderr, never a traceback),
3 an internal error, q7emu's own bug (one line; ``q7emu --debug ...`` adds the traceback), 130 interrupted.
With ``--json`` an error is also a ``q7emu-error`` document on stdout, so stdout is always one JSON document.
"""
from __future__ import annotations

import argparse
import codecs
import contextlib
import importlib
import os
import signal
import sys
import threading
import traceback
import zipfile
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from q7emu._version import __version__
from q7emu.cli.common import (
    EXIT_INTERNAL,
    EXIT_INTERRUPT,
    EXIT_OK,
    EXIT_USAGE,
    JSON_VERSION,
    Parser,
    ParserError,
    UsageError,
    error_line,
    interrupted,
    json_text,
    print_error,
    print_json,
    source_tree_problem,
)
from q7emu.cli.trace_args import implicit_record
from q7emu.errors import InternalError, Q7Error, shown_name
from q7emu.kernels.extension import check_env, isa_info
from q7emu.machine.heap import keep_freed_memory

#: the command modules (of q7emu.cli) and the top-level commands each registers, in ``q7emu --help`` order; a test
#: checks the table against what each module's ``register`` adds
COMMANDS: dict[str, tuple[str, ...]] = {
    "inspect_commands": ("ops", "decode", "table"),
    "run_commands": ("run", "replay", "merge", "case"),
    "record_commands": ("record",),
    "trace_commands": ("trace", "profile"),
    "explore_commands": ("explore", "listing"),
    "asm_commands": ("asm",),
}


def command_modules(names: Sequence[str] | None = None) -> list[ModuleType]:
    """The command modules ``names`` (default: every one, in help order), imported."""
    return [importlib.import_module(f"q7emu.cli.{name}") for name in (COMMANDS if names is None else names)]


def modules_for(argv: Sequence[str]) -> list[str]:
    """The command modules a command line needs: the one that owns its command (the first item not starting with
    ``-``: the top-level options take no value), none for a bare ``--version``, else (help, no command, an unknown
    one) all of them, so that help and the choices of an error list every command."""
    command = next((a for a in argv if not a.startswith("-")), None)
    for name, commands in COMMANDS.items():
        if command in commands:
            return [name]
    if command is None and "--version" in argv and not {"-h", "--help"} & set(argv):
        return []
    return list(COMMANDS)

#: exceptions that mean bad input: q7emu's own (Q7Error), usage, and what reading a user's file raises
#: (OSError, EOFError, a damaged .npz, ValueError from numpy / json on malformed contents)
BAD_INPUT = (Q7Error, OSError, EOFError, zipfile.BadZipFile, ValueError)


def version_text(info: dict[str, Any]) -> str:
    """``q7emu --version``: the version, then the ISA level a kernel loads, the levels this CPU runs and the
    compile flags of every level built (docs/build.md §1.2); ``info`` is :func:`q7emu.kernels.extension.isa_info`."""
    lines = [f"q7emu {__version__}"]
    if info["level"] is None:
        lines.append("isa: none (the compiled extensions are not built: golden models only)")
    else:
        why = f"forced by Q7EMU_ISA={info['forced']}" if info["forced"] else "the best this CPU runs"
        lines.append(f"isa: {info['level']} ({why}; Q7EMU_ISA={'|'.join(info['built'])} forces one)")
    lines.append(f"cpu: {' '.join(info['cpu'])}")
    if info["level"] is not None:
        lines.append(f"translations: {'on' if info.get('translations', True) else 'off'} (an untraced TensorDequantize "
                     "call runs its program's translation where the level has one; Q7EMU_TRANSLATIONS=on|off)")
    if info["built"]:
        width = max(map(len, info["built"]))
        lines.append("built:")
        lines += [f"  {lv:<{width}}  {flags}" for lv, flags in info["built"].items()]
    return "\n".join(lines)


class VersionAction(argparse.Action):
    """``--version``: :func:`version_text`, or with ``--json`` on the command line (``parser.want_json``) a
    ``q7emu-version`` document (docs/cli.md §3.9); then exit 0. A bad ``Q7EMU_ISA`` is InvalidArgument (exit 2)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:  # noqa: A002 - argparse's name
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        info = isa_info()
        if getattr(parser, "want_json", False):
            print_json("version", {"isa": info})
        else:
            print(version_text(info))
        parser.exit()


def build_parser(modules: Sequence[str] | None = None) -> Parser:
    """The ``q7emu`` parser with the subcommands of the command modules ``modules`` registered (default: all)."""
    p = Parser(prog="q7emu", description="Bit-exact emulator of the Vision-Q7 IVP firmware kernels "
                                         "(TensorDequantize 0x7b, QuantizeMX 0xe3).")
    p.add_argument("--version", action=VersionAction,
                   help="print the version, the ISA level the kernels run at and every level's compile flags "
                        "(with --json: a q7emu-version document) and exit")
    p.add_argument("--debug", action="store_true",
                   help="on an internal error (exit 3), print its traceback on stderr")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in command_modules(modules):
        module.register(sub)
    return p


def _is_internal(exc: BaseException) -> bool:
    """An :class:`q7emu.errors.InternalError` (q7emu's own inconsistency) is a bug, not bad input."""
    return isinstance(exc, InternalError)


def _json_error(wanted: bool, code: int, message: str) -> None:
    if wanted:
        print(json_text({"format": "q7emu-error", "version": JSON_VERSION, "q7emu_version": __version__,
                         "exit_code": code, "error": message}, indent=1))


#: the signals that stop a command the way Ctrl-C does (docs/limits.md §4): temporary files removed, workers
#: killed, what finished reported; the exit status is then 128 + the signal's number
STOP_SIGNALS = ("SIGTERM", "SIGHUP")


@contextlib.contextmanager
def _stop_signals() -> Iterator[list[int]]:
    """While a command runs (main thread only), the first Ctrl-C, SIGTERM or SIGHUP raises KeyboardInterrupt (a
    signal the parent set to be ignored, as ``nohup`` does, stays ignored); any later one is ignored while the
    command cleans up and prints what finished, so a second Ctrl-C never cuts the report short or prints a
    traceback (docs/limits.md §4). Yields the list the first SIGTERM / SIGHUP number is put in (Ctrl-C: exit
    130 from the command itself)."""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    stopping: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        if not stopping:
            stopping.append(signum)
            if signum != signal.SIGINT:
                got.append(signum)
            raise KeyboardInterrupt

    old = {}
    for name in ("SIGINT", *STOP_SIGNALS):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) not in (signal.SIG_IGN, None):
            old[sig] = signal.signal(sig, stop)
    try:
        yield got
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


#: the codec error handler of the CLI's stdout and stderr: a name that is not UTF-8 as every report writes it
NAMES_ERRORS = "q7emu-names"


def _names_errors(e: UnicodeError) -> tuple[str, int]:
    """Text a stream's encoding cannot carry: the surrogates of a name that is not UTF-8 as ``\\xNN`` (as
    :func:`q7emu.errors.shown_name` writes them), anything else as a backslash escape."""
    if not isinstance(e, UnicodeEncodeError):
        raise e
    bad = e.object[e.start:e.end]
    return shown_name(bad) if shown_name(bad) != bad else bad.encode("ascii", "backslashreplace").decode(), e.end


codecs.register_error(NAMES_ERRORS, _names_errors)


def _usable_streams() -> None:
    """A closed stdout / stderr (``>&-``, ``2>&-``: Python then sets it to None) becomes a sink that drops what
    is written, as ``print`` does for None: the command still runs, writes its files and exits with its status
    (docs/cli.md §1). Text that the stream's encoding cannot carry (a file name that is not UTF-8, a lone surrogate
    from a JSON text) is written with backslash escapes, a name's bytes as ``\\xff`` as the reports write them,
    instead of failing (or, under the C locale's ``surrogateescape``, writing bytes that are not UTF-8)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - lives as long as sys.<name>
        elif hasattr(stream, "reconfigure") and getattr(stream, "errors", "strict") in (
                "strict", "surrogateescape", "backslashreplace"):
            with contextlib.suppress(Exception):
                stream.reconfigure(errors=NAMES_ERRORS)


#: the variable OpenBLAS reads for the threads it starts when numpy loads it (docs/cli.md §1, start-up)
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


def one_blas_thread() -> bool:
    """Before numpy is first imported: unless the user set :data:`BLAS_THREADS_ENV`, set it to 1, so that OpenBLAS
    (the BLAS of numpy's wheels) starts no thread pool when numpy loads. No command uses BLAS; the pool's threads
    cost about 0.1 s of CPU in every process that imports numpy (the 2-vCPU AMD EPYC of docs/build.md: a process
    that only imports numpy 215 ms of user + sys, 129 ms with one thread; medians). The variable reaches the
    processes the command starts (``-j`` workers). Returns True when it set the variable; numpy already imported
    (a program calling :func:`main`), it changes nothing."""
    if "numpy" in sys.modules or BLAS_THREADS_ENV in os.environ:
        return False
    os.environ[BLAS_THREADS_ENV] = "1"
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (0 pass, 1 mismatch or divergence, 2 bad input, 3 internal error,
    130 interrupted, 128 + N stopped by signal N: SIGTERM 143, SIGHUP 129). Run as the program (``argv`` None)
    and interrupted (or stopped by one of those signals), it ignores SIGINT from then on: all was printed, and a
    second Ctrl-C must not print a traceback while Python exits (docs/limits.md §4). OpenBLAS gets one thread
    (:func:`one_blas_thread`)."""
    one_blas_thread()
    _usable_streams()
    code: int | None = None
    got: list[int] = []
    try:
        with _stop_signals() as got:
            code = _main(argv)
    except KeyboardInterrupt:
        # the signal came outside the command's own handling: after it returned (its report is out: its status
        # stands) or before it began
        if code is None:
            code = interrupted()
    if ((got or code == EXIT_INTERRUPT) and argv is None
            and threading.current_thread() is threading.main_thread()):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if got:
        return 128 + got[0]
    return code


def _main(argv: Sequence[str] | None = None) -> int:
    argv = implicit_record(sys.argv[1:] if argv is None else argv)   # trace CASE ... = trace record CASE ...
    want_json = "--json" in argv
    debug = False
    parser = build_parser(modules_for(argv))
    parser.want_json = want_json      # read by --version (VersionAction)
    try:
        args, extras = parser.parse_known_args(argv)
        if extras and getattr(args, "trailing_fields", None) is not None:
            args.trailing_fields.extend(extras)      # record new: FIELD=VALUE items after an option
        elif extras:                                 # named by the subcommand that has a parser of its own
            raise ParserError(f"{getattr(args, 'command_prog', parser.prog)}: error: unrecognized arguments: "
                              f"{' '.join(extras)}")
        debug = bool(getattr(args, "debug", False))
        want_json = bool(getattr(args, "json", want_json))
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        problem = source_tree_problem()
        if problem:
            raise UsageError(problem)
        check_env()                                  # a bad Q7EMU_ISA: one line, exit 2 (docs/build.md §1.3)
        keep_freed_memory()                          # cases' large arrays reused, not faulted in (docs/limits.md §5)
        return int(args.func(args))
    except SystemExit as e:  # --help / --version
        return int(e.code or 0) if isinstance(e.code, int) or e.code is None else EXIT_USAGE
    except ParserError as e:
        print(str(e), file=sys.stderr)
        _json_error(want_json, EXIT_USAGE, str(e))
        return EXIT_USAGE
    except UsageError as e:
        print_error(str(e))
        _json_error(want_json, EXIT_USAGE, str(e))
        return EXIT_USAGE
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # left open: the interpreter flushes stdout at exit
        except OSError:
            pass
        return EXIT_OK
    except KeyboardInterrupt:
        return interrupted()
    except MemoryError as e:       # the machine's memory, not q7emu's logic: the input needs more than there is
        line = (f"out of memory ({error_line(e)}): the input needs more memory than this machine gives q7emu; "
                "see the limits in docs/limits.md §2")
        print_error(line)
        _json_error(want_json, EXIT_USAGE, line)
        return EXIT_USAGE
    except BAD_INPUT as e:
        if not _is_internal(e):
            print_error(error_line(e))
            _json_error(want_json, EXIT_USAGE, error_line(e))
            return EXIT_USAGE
        return _internal(e, debug, want_json)
    except Exception as e:  # noqa: BLE001 - anything else is q7emu's own bug: one line (or the traceback), exit 3
        return _internal(e, debug, want_json)


def _internal(exc: BaseException, debug: bool, want_json: bool) -> int:
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    line = f"internal error ({type(exc).__name__}: {error_line(exc)}); this is a q7emu bug" \
           + ("" if debug else ", rerun as q7emu --debug ... for the traceback")
    print_error(line)
    _json_error(want_json, EXIT_INTERNAL, line)
    return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
