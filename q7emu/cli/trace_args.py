"""Argument parsing of ``q7emu trace`` and ``q7emu profile`` (docs/traces.md §5): the subcommand words, the
options of each subcommand, and the text forms of ranges (``--window``, ``--seq``, ``--lanes``: half-open
``START:END``), lists (``--partitions``, ``--bundles``: comma-separated ``N`` / ``START:END`` items), mnemonic
lists (``--ops``) and sizes (``--max-size``).

The checks of the values themselves (64-bit windows, partition ranges, known mnemonics) are the recorder's
(:mod:`q7emu.analysis.trace.recorder`); this module turns the typed text into those values and a malformed
text into a :class:`~q7emu.cli.common.UsageError` (one line, exit 2).
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from q7emu.cli.common import GENERATIONS, UsageError, add_program_options
from q7emu.errors import InvalidArgument

#: the words after ``q7emu trace`` that name a subcommand; anything else is the CASE|RECORD of ``trace record``
SUBCOMMANDS = ("record", "show", "diff", "export", "import", "log")
DEFAULT_MAX_SIZE = 2 << 30
SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
              "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40}

#: ``--partition-bytes`` of a RECORD. A lambda, not common.parse_int: argparse names it in the error text
#: (``invalid <lambda> value``), and the CLI's error texts are kept as they are.
_partition_bytes = lambda s: int(s, 0)  # noqa: E731


def implicit_record(argv: Sequence[str]) -> list[str]:
    """``q7emu [OPTIONS] trace CASE|RECORD ...`` -> ``... trace record CASE|RECORD ...``: today's recording form
    without the word (docs/traces.md §5). The word after ``trace`` names a subcommand only when it is one of
    :data:`SUBCOMMANDS` exactly (a file named ``show`` is ``./show``); ``-h`` / ``--help`` and a bare ``trace``
    are left alone. q7emu's own options before the command (``--debug``) take no value."""
    out = list(argv)
    i = 0
    while i < len(out) and out[i].startswith("-"):
        i += 1
    if i + 1 < len(out) and out[i] == "trace" and out[i + 1] not in (*SUBCOMMANDS, "-h", "--help"):
        out.insert(i + 1, "record")
    return out


def parse_range(text: str | None, what: str = "range") -> tuple[int | None, int | None] | None:
    """``A:B`` (half-open; either side may be empty) or ``A`` (just A) -> (lo, hi)."""
    if text is None:
        return None
    t = text.strip()
    try:
        if ":" not in t:
            v = int(t, 0)
            return v, v + 1
        a, b = t.split(":", 1)
        lo = int(a, 0) if a.strip() else None
        hi = int(b, 0) if b.strip() else None
    except ValueError:
        raise InvalidArgument(what, text, "expected START:END (half-open), START: , :END or N") from None
    if (lo is not None and lo < 0) or (hi is not None and hi < 0) or (lo is not None and hi is not None and hi < lo):
        raise InvalidArgument(what, text, "needs 0 <= START <= END")
    return lo, hi


def parse_list(text: str | None, what: str) -> list[tuple[int, int]] | None:
    """``A,B:C,D`` (single values and half-open ranges, any base) -> ranges [(lo, hi), ...]."""
    if text is None:
        return None
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        r = parse_range(item, what)
        if r is None or r[0] is None or r[1] is None:
            raise InvalidArgument(what, text, "each item is N or START:END with both ends given")
        out.append((r[0], r[1]))
    if not out:
        raise InvalidArgument(what, text, "selects nothing")
    return out


def range_arg(text: str | None, what: str) -> tuple[int | None, int | None] | None:
    """:func:`parse_range` for an option: a malformed range is a UsageError naming the option."""
    try:
        return parse_range(text, what)
    except InvalidArgument as e:
        raise UsageError(str(e)) from None


def list_arg(text: str | None, what: str) -> list[tuple[int, int]] | None:
    """:func:`parse_list` for an option: a malformed list is a UsageError naming the option."""
    try:
        return parse_list(text, what)
    except InvalidArgument as e:
        raise UsageError(str(e)) from None


def names_arg(items: list[str] | None) -> list[str] | None:
    """Mnemonics of a repeatable comma-list option (``--ops a,b --ops c``), or None when none is given."""
    if not items:
        return None
    out = [n.strip() for it in items for n in it.split(",") if n.strip()]
    return out or None


def parse_size(text: str) -> int:
    """``512M``, ``2G``, ``1500000``: a byte count (argparse ``type``)."""
    t = text.strip().upper().replace(" ", "")
    num = t.rstrip("KMGTIB")
    unit = t[len(num):]
    try:
        v = float(num)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 512M, 2G)") from None
    if unit not in SIZE_UNITS or not 0 <= v < 1 << 62:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 512M, 2G)")
    return int(v * SIZE_UNITS[unit])


def filters(a: argparse.Namespace) -> dict[str, Any]:
    """Recorder filters (``window``, ``ops``, ``partitions``, ``bundles``) from the filter options."""
    win = range_arg(a.window, "--window")
    if win is not None:
        win = (win[0] or 0, (1 << 64) - 1 if win[1] is None else win[1])
    bundles = list_arg(a.bundles, "--bundles")
    return {"window": win, "ops": names_arg(a.ops), "partitions": list_arg(a.partitions, "--partitions"),
            "bundles": None if bundles is None else [b for lo, hi in bundles for b in range(lo, min(hi, lo + 65536))]}


# ---------------------------------------------------------------------- options
def record_options(p: argparse.ArgumentParser) -> None:
    """The options of ``trace record``: output, filters, log, size limit, and the run options."""
    p.add_argument("-o", "--output", metavar="FILE", help="trace file to write (.q7t, or .jsonl)")
    filter_options(p)
    p.add_argument("--jsonl", action="store_true", help="write JSON Lines instead of the binary trace file")
    p.add_argument("--log", metavar="FILE|-",
                   help="also stream a text log, one op per line (seq, partition, bundle, mnemonic, operands "
                        "with lanes in hex), to FILE or stdout (-)")
    p.add_argument("--max-size", type=parse_size, metavar="SIZE",
                   help="refuse when the estimated output is larger (default 2G; e.g. 512M)")
    run_options(p)


def filter_options(p: argparse.ArgumentParser) -> None:
    """The recorder's filters (``trace record``, ``profile``)."""
    p.add_argument("--window", metavar="START:END",
                   help="record only sequence numbers START <= seq < END (every op still counts; 64-bit)")
    p.add_argument("--partitions", metavar="LIST", help="record only these absolute SBUF partitions (e.g. 0:4,17)")
    p.add_argument("--ops", action="append", metavar="NAME,...",
                   help="record only these mnemonics (comma list, repeatable; at most 64)")
    p.add_argument("--bundles", metavar="LIST",
                   help="record only these bundle indices of the kernel listing (e.g. 24:26,39)")


def run_options(p: argparse.ArgumentParser) -> None:
    """How a CASE|RECORD runs (``trace record``, ``profile``): progress, --json, the SBUF image, generation,
    knobs and partition size of a RECORD."""
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it is shown only when stderr is a terminal)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--sbuf", metavar="IN.npz", help="SBUF image for a RECORD (default: zeros)")
    p.add_argument("-g", "--generation", help=f"generation for a RECORD: {GENERATIONS} (default MARIANA)")
    p.add_argument("--knob", action="append", metavar="NAME=VALUE",
                   help="model knob (docs/model.md §1-§2), repeatable; overrides a case's knobs")
    p.add_argument("--partition-bytes", type=_partition_bytes,
                   help="SBUF bytes per partition for a RECORD without --sbuf (default 0x30000)")
    add_program_options(p)


def show_options(p: argparse.ArgumentParser) -> None:
    """``trace show FILE``."""
    p.add_argument("file", metavar="FILE")
    p.add_argument("--op", action="append", metavar="NAME[,NAME]", help="only these mnemonics (repeatable)")
    p.add_argument("--seq", metavar="A:B", help="only sequence numbers A <= seq < B (seeks through the block index)")
    p.add_argument("--partitions", metavar="LIST", help="only these absolute partitions (e.g. 0:4,17)")
    p.add_argument("--lanes", metavar="A:B", help="only lanes A <= lane < B of each vector operand")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (format q7emu-trace-show v1: header fields, records, shown)")


def diff_options(p: argparse.ArgumentParser) -> None:
    """``trace diff A B``."""
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("--align", choices=("seq", "op"), default="seq",
                   help="pair records by sequence number (default) or along the mnemonic sequence")
    p.add_argument("--max-lanes", type=int, default=16, help="differing lanes to print (default 16)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object (q7emu-trace-diff v1)")


def convert_options(p: argparse.ArgumentParser, mode: str) -> None:
    """``trace export FILE -o OUT`` / ``trace import IN.jsonl -o OUT.q7t``."""
    p.add_argument("file", metavar="FILE")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the file to write" + (" (- : stdout)" if mode == "export" else ""))
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def log_options(p: argparse.ArgumentParser) -> None:
    """``trace log FILE [-o OUT|-]``."""
    p.add_argument("file", metavar="FILE")
    p.add_argument("-o", "--output", default="-", metavar="OUT|-",
                   help="the text log to write (default -: stdout)")
    p.add_argument("--seq", metavar="A:B", help="only sequence numbers A <= seq < B (seeks through the block index)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (format q7emu-trace-log v1) instead of a summary line; needs -o FILE")
