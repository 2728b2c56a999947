"""CLI commands that execute records on the SBUF machine: ``q7emu run`` (one record on an SBUF image),
``q7emu replay`` (cases; exit 1 if any fails) and ``q7emu case new`` (build a case)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from q7emu.cli.common import (
    EXIT_FAIL,
    EXIT_INTERRUPT,
    EXIT_OK,
    GENERATIONS,
    KNOB_HELP,
    Parser,
    Subparsers,
    UsageError,
    parse_int,
    parse_knobs,
    read_record,
)

_BACKEND_HELP = "kernels (default) or golden models"


def cmd_run(args: argparse.Namespace) -> int:
    """``q7emu run``: execute one record on the SBUF image ``--sbuf``, write the SBUF after it to ``-o``."""
    from q7emu.fileio import atomic_write, write_npz
    from q7emu.machine.machine import Machine, load_sbuf_image

    sbuf = load_sbuf_image(args.sbuf)
    m = Machine(args.generation, sbuf.shape[1], parse_knobs(args.knob), backend=args.backend)
    m.sbuf[:] = sbuf
    res = m.execute(read_record(args.record))
    output = str(args.output)
    if not output.endswith(".npz") and not Path(output).is_dir():   # as np.savez names it; a folder is refused
        output += ".npz"
    with atomic_write(output) as f:        # an interrupt leaves the old file or the whole new one
        write_npz(f, {"sbuf": m.sbuf})
    regs = ", ".join(f"partitions {r.partition}..{r.partition + r.count - 1} "
                     f"bytes 0x{r.offset:x}..0x{r.offset + r.length - 1:x}" for r in res.regions) or "nothing"
    func_va = f"0x{res.func_va:08x}" if res.func_va != 0xFFFFFFFF else "unknown"
    print(f"0x{res.opcode:02x} {res.path} on {m.generation.name} {res.engine} (funcVA "
          f"{func_va}): wrote {res.bytes_written} bytes "
          f"[{regs}] in {res.seconds * 1000:.1f} ms -> {output}")
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    """``q7emu replay``: replay every case named, one row each and a summary; exit 1 if any fails."""
    from q7emu.machine.replay import format_row, replay
    from q7emu.machine.workers import Interrupted

    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    try:
        results = replay(args.paths, jobs=args.jobs, knobs=parse_knobs(args.knob), backend=args.backend,
                         progress=False if args.no_progress else None)
    except Interrupted as e:                 # Ctrl-C: the cases that finished, then exit 130
        for r in e.results:
            print(format_row(r))
        failed = sum(not r.ok for r in e.results)
        print(f"interrupted: {e.done} of {e.total} cases finished: {e.done - failed} passed, {failed} failed")
        print("q7emu: interrupted", file=sys.stderr)
        return EXIT_INTERRUPT
    if not results:
        raise UsageError("no cases found")
    for r in results:
        print(format_row(r))
    failed = sum(not r.ok for r in results)
    print(f"{len(results)} cases: {len(results) - failed} passed, {failed} failed")
    return EXIT_OK if failed == 0 else EXIT_FAIL


def region_arg(spec: str) -> tuple[int, int, np.ndarray]:
    """A region given as ``PARTITION:OFFSET=FILE.npy`` or ``PARTITION:OFFSET=FILE.npz:KEY``:
    (partition, byte offset, uint8 [partitions, bytes]); a 1-D array is one partition, another dtype is
    viewed as bytes."""
    try:
        where, src = spec.split("=", 1)
        p_text, o_text = where.split(":", 1)
        p, off = int(p_text, 0), int(o_text, 0)
    except ValueError:
        raise UsageError(f"region {spec!r}: expected PARTITION:OFFSET=FILE.npy or PARTITION:OFFSET=FILE.npz:KEY"
                         ) from None
    from q7emu.fileio import read_array_file  # bounded reads (docs/limits.md §1)

    if ".npz:" in src:
        f, key = src.rsplit(":", 1)
        arr = read_array_file(f, key)
    else:
        arr = read_array_file(src)
    arr = np.asarray(arr)
    if arr.dtype != np.uint8:
        arr = np.ascontiguousarray(arr).view(np.uint8) if arr.ndim == 2 else arr
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise UsageError(f"region {spec!r}: array must be 2-D [partitions, bytes]")
    return p, off, np.ascontiguousarray(arr)


def cmd_case_new(args: argparse.Namespace) -> int:
    """``q7emu case new``: build a case from a record and arrays (expected bytes given, or computed)."""
    from q7emu.machine.cases import build_case, save_case

    if not 0 <= args.fill <= 255:
        raise UsageError(f"--fill {args.fill}: must be a byte value 0..255")
    inputs = [region_arg(s) for s in args.input or []]
    expected = [region_arg(s) for s in args.expected] if args.expected else None
    case = build_case(read_record(args.record), args.generation, inputs, expected, knobs=parse_knobs(args.knob),
                      partition_bytes=args.partition_bytes, fill=args.fill, note=args.note or "",
                      name=Path(args.out).with_suffix("").name, backend=args.backend)
    path = save_case(case, args.out)
    src = "given" if expected is not None else f"computed by the {args.backend} models"
    print(f"wrote {path} (+ .npz): {len(case.inputs)} input region(s), {len(case.expected)} expected region(s), "
          f"{case.expected_bytes} expected bytes ({src})")
    return EXIT_OK


def cmd_case(args: argparse.Namespace) -> int:
    """``q7emu case`` without a subcommand: a usage error."""
    raise UsageError("case: choose a subcommand (new)")


def register(sub: Subparsers) -> None:
    """Add ``run``, ``replay`` and ``case`` (with ``case new``) to the ``q7emu`` subparsers."""
    s = sub.add_parser("run", help="execute one record on an SBUF image")
    s.add_argument("record", metavar="RECORD", help="128 hex digits or a file")
    s.add_argument("--sbuf", required=True, metavar="IN.npz", help="array 'sbuf' uint8 [128, partition_bytes]")
    s.add_argument("-o", "--output", required=True, metavar="OUT.npz", help="where to write the SBUF after the run")
    s.add_argument("-g", "--generation", default="MARIANA", help=f"one of {GENERATIONS} (default MARIANA)")
    s.add_argument("--knob", action="append", metavar="NAME=VALUE", help=KNOB_HELP)
    s.add_argument("--backend", choices=("kernel", "golden"), default="kernel", help=_BACKEND_HELP)
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("replay", help="replay cases; exit 1 if any fails")
    s.add_argument("paths", nargs="+", metavar="CASE|DIR", help="case .json (or stem) or a directory of cases")
    s.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    s.add_argument("--knob", action="append", metavar="NAME=VALUE", help="override a case knob; " + KNOB_HELP)
    s.add_argument("--backend", choices=("kernel", "golden"), default="kernel", help=_BACKEND_HELP)
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    s.set_defaults(func=cmd_replay)

    s = sub.add_parser("case", help="build replay cases")
    csub = s.add_subparsers(dest="case_command", metavar="SUBCOMMAND", parser_class=Parser)
    c = csub.add_parser("new", help="build a case from a record and arrays",
                        description="Arrays: PARTITION:OFFSET=FILE.npy or PARTITION:OFFSET=FILE.npz:KEY, each a "
                                    "uint8 [partitions, bytes] region. Without --expected, the expected regions "
                                    "are computed by running the record on the golden models.")
    c.add_argument("out", metavar="OUT", help="case path (writes OUT.json and OUT.npz)")
    c.add_argument("--record", required=True, metavar="HEX|FILE")
    c.add_argument("-g", "--generation", required=True, help=GENERATIONS)
    c.add_argument("--input", action="append", metavar="P:OFF=ARRAY", help="an input region (repeatable)")
    c.add_argument("--expected", action="append", metavar="P:OFF=ARRAY", help="an expected region (repeatable)")
    c.add_argument("--knob", action="append", metavar="NAME=VALUE", help=KNOB_HELP)
    c.add_argument("--partition-bytes", type=parse_int, default=0x30000,
                   help="SBUF bytes per partition (default 0x30000)")
    c.add_argument("--fill", type=parse_int, default=0, help="SBUF byte value outside the inputs (default 0)")
    c.add_argument("--note", help="free-text provenance note")
    c.add_argument("--backend", choices=("golden", "kernel"), default="golden",
                   help="models that compute expected bytes when --expected is absent (default golden)")
    c.set_defaults(func=cmd_case_new)
    s.set_defaults(func=cmd_case)
