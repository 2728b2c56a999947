"""Command-line interface: ``q7emu {ops,decode,table,run,replay,case new,trace,profile,explore,listing}``.

The commands live in the modules of :data:`COMMAND_MODULES`; each has ``register(subparsers)``, which adds
its subcommands with ``set_defaults(func=...)``. ``func(args)`` returns the exit status.

Exit status: 0 ok, 1 a failing verdict (INVALID record, failing case, differing traces, no knob fits),
2 bad input (a one-line ``q7emu: error: ...`` on stderr, never a traceback), 130 interrupted.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from q7emu._version import __version__
from q7emu.cli import explore_commands, inspect_commands, run_commands, trace_commands
from q7emu.cli.common import (
    EXIT_INTERRUPT,
    EXIT_OK,
    EXIT_USAGE,
    Parser,
    ParserError,
    UsageError,
    error_line,
    print_error,
)
from q7emu.errors import Q7Error

#: the command modules, in the order their commands appear in ``q7emu --help``
COMMAND_MODULES = (inspect_commands, run_commands, trace_commands, explore_commands)


def build_parser() -> argparse.ArgumentParser:
    """The ``q7emu`` parser with every command module's subcommands registered."""
    p = Parser(prog="q7emu", description="Bit-exact emulator of the Vision-Q7 IVP firmware kernels "
                                         "(TensorDequantize 0x7b, QuantizeMX 0xe3).")
    p.add_argument("--version", action="version", version=f"q7emu {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in COMMAND_MODULES:
        module.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 failing verdict / case, 2 bad input, 130 interrupted)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        return int(args.func(args))
    except SystemExit as e:  # --help / --version
        return int(e.code or 0) if isinstance(e.code, int) or e.code is None else EXIT_USAGE
    except ParserError as e:
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    except UsageError as e:
        print_error(str(e))
        return EXIT_USAGE
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # left open: the interpreter flushes stdout at exit
        except OSError:
            pass
        return EXIT_OK
    except (Q7Error, OSError, ValueError, KeyError, EOFError) as e:
        print_error(error_line(e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("q7emu: interrupted", file=sys.stderr)
        return EXIT_INTERRUPT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
