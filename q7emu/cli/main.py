"""Command-line interface: ``q7emu {ops,decode,table,run,replay,case new}``.

Bad input gives a one-line ``q7emu: error: ...`` on stderr and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from q7emu._version import __version__
from q7emu.errors import Q7Error

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class _UsageError(Exception):
    pass


class _ParserError(_UsageError):
    """An argparse error; the message already names the (sub)command."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line and raise instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _ParserError(f"{self.prog}: error: {message}")


def _read_record(text: str, allow_kernel_info: bool = False) -> bytes:
    """64 record bytes from hex text or a file (raw 64 bytes, or hex text); 8 bytes if allow_kernel_info."""
    from q7emu.isa.records import RECORD_SIZE, parse_hex

    p = Path(text)
    if len(text) < 256 and p.exists() and p.is_file():
        data = p.read_bytes()
        if len(data) != RECORD_SIZE:
            try:
                data = parse_hex(data.decode("ascii"))
            except (UnicodeDecodeError, ValueError):
                raise _UsageError(f"{text}: neither {RECORD_SIZE} raw bytes nor hex text") from None
    else:
        data = parse_hex(text)
    if len(data) != RECORD_SIZE and not (allow_kernel_info and len(data) == 8):
        raise _UsageError(f"record must be exactly {RECORD_SIZE} bytes"
                          f"{' (or 8 for a kernel_info record)' if allow_kernel_info else ''}, got {len(data)}")
    return data


def _knobs(items: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items or []:
        if "=" not in it:
            raise _UsageError(f"--knob {it!r}: expected NAME=VALUE")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    from q7emu.machine.machine import normalize_machine_knobs
    normalize_machine_knobs(out)
    return out


def _int(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


# ---------------------------------------------------------------------- commands
def cmd_ops(args: argparse.Namespace) -> int:
    try:
        from q7emu.analysis.provenance import format_ops_table
        table = format_ops_table()
    except ImportError as e:
        raise Q7Error(f"q7emu.primitives.ivp is not available ({e})") from None
    print(table)
    return EXIT_OK


def cmd_decode(args: argparse.Namespace) -> int:
    from q7emu.isa.enums import OPCODE_NAMES, Generation
    from q7emu.isa.records import decode_record, fields
    from q7emu.isa.validate import check, model_checks

    data = _read_record(args.record, allow_kernel_info=True)
    gen = Generation.parse(args.generation)
    if len(data) == 8:
        from q7emu.isa.kernel_info import KernelInfoRecord
        k = KernelInfoRecord.from_bytes(data)
        print(f"kernel_info record  {data.hex(' ')}")
        print(f"  opcode 0x{k.opcode:02x} {OPCODE_NAMES.get(k.opcode, '')}".rstrip())
        print(f"  spec   {k.spec}")
        print(f"  funcVA 0x{k.func_va:08x}{'' if k.func_va_known else ' (unknown marker)'}")
        print(f"  key    0x{k.key:08x}{'' if k.key & 0xFFFF == 0 else ' (low half not zero: never matches a lookup)'}")
        return EXIT_OK
    rec = decode_record(data)
    op = data[0]
    print(f"record  {data.hex(' ')}")
    print(f"opcode  0x{op:02x} {OPCODE_NAMES.get(op, '(unnamed)')}  -> {type(rec).__name__}")
    print("fields:")
    for name, val in fields(rec):
        print(f"  {name:<28} {val}")
    verdicts = check(rec, gen, args.partition_bytes) + model_checks(rec, args.partition_bytes)
    print(f"validity on {gen.name} (NC-v{gen.nc_version}), partition_bytes=0x{args.partition_bytes:x}:")
    for v in verdicts:
        print(f"  {'[q7emu] ' if v.kind == 'q7emu' else ''}{v.line()}")
    bad = [v for v in verdicts if v.status == "fail"]
    print("verdict: " + ("VALID" if not bad else f"INVALID ({len(bad)} failing clause{'s' * (len(bad) != 1)})"))
    return EXIT_OK if not bad else EXIT_FAIL


def cmd_table(args: argparse.Namespace) -> int:
    from q7emu.isa.kernel_info import builtin_tables

    for name, t in builtin_tables(args.generation).items():
        print(t.format())
        if args.hex:
            print("  bytes: " + (t.to_bytes().hex(" ") or "-"))
        print()
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from q7emu.machine.machine import Machine, load_sbuf_image

    sbuf = load_sbuf_image(args.sbuf)
    m = Machine(args.generation, sbuf.shape[1], _knobs(args.knob), backend=args.backend)
    m.sbuf[:] = sbuf
    res = m.execute(_read_record(args.record))
    np.savez_compressed(args.output, sbuf=m.sbuf)
    regs = ", ".join(f"partitions {r.partition}..{r.partition + r.count - 1} bytes 0x{r.offset:x}..0x{r.offset + r.length - 1:x}"
                     for r in res.regions) or "nothing"
    print(f"0x{res.opcode:02x} {res.path} on {m.generation.name} {res.engine} (funcVA "
          f"{'0x%08x' % res.func_va if res.func_va != 0xFFFFFFFF else 'unknown'}): wrote {res.bytes_written} bytes "
          f"[{regs}] in {res.seconds * 1000:.1f} ms -> {args.output}")
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from q7emu.machine.replay import format_row, replay

    if args.jobs < 1:
        raise _UsageError(f"--jobs must be >= 1, got {args.jobs}")
    results = replay(args.paths, jobs=args.jobs, knobs=_knobs(args.knob), backend=args.backend,
                     progress=False if args.no_progress else None)
    if not results:
        raise _UsageError("no cases found")
    for r in results:
        print(format_row(r))
    failed = sum(not r.ok for r in results)
    print(f"{len(results)} cases: {len(results) - failed} passed, {failed} failed")
    return EXIT_OK if failed == 0 else EXIT_FAIL


def _region_arg(spec: str) -> tuple[int, int, np.ndarray]:
    """``PARTITION:OFFSET=FILE.npy`` or ``PARTITION:OFFSET=FILE.npz:KEY``."""
    try:
        where, src = spec.split("=", 1)
        p_text, o_text = where.split(":", 1)
        p, off = int(p_text, 0), int(o_text, 0)
    except ValueError:
        raise _UsageError(f"region {spec!r}: expected PARTITION:OFFSET=FILE.npy or PARTITION:OFFSET=FILE.npz:KEY") from None
    if ".npz:" in src:
        f, key = src.rsplit(":", 1)
        with np.load(f, allow_pickle=False) as z:
            if key not in z.files:
                raise _UsageError(f"{f}: no array {key!r}")
            arr = z[key]
    else:
        arr = np.load(src, allow_pickle=False)
    arr = np.asarray(arr)
    if arr.dtype != np.uint8:
        arr = np.ascontiguousarray(arr).view(np.uint8) if arr.ndim == 2 else arr
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise _UsageError(f"region {spec!r}: array must be 2-D [partitions, bytes]")
    return p, off, np.ascontiguousarray(arr)


def cmd_case_new(args: argparse.Namespace) -> int:
    from q7emu.machine.cases import build_case, save_case

    inputs = [_region_arg(s) for s in args.input or []]
    expected = [_region_arg(s) for s in args.expected] if args.expected else None
    case = build_case(_read_record(args.record), args.generation, inputs, expected, knobs=_knobs(args.knob),
                      partition_bytes=args.partition_bytes, fill=args.fill, note=args.note or "",
                      name=Path(args.out).with_suffix("").name, backend=args.backend)
    path = save_case(case, args.out)
    src = "given" if expected is not None else f"computed by the {args.backend} models"
    print(f"wrote {path} (+ .npz): {len(case.inputs)} input region(s), {len(case.expected)} expected region(s), "
          f"{case.expected_bytes} expected bytes ({src})")
    return EXIT_OK


# ---------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    gens = "SUNDA, CAYMAN, MARIANA, MARIANA_PLUS, MAVERICK"
    p = _Parser(prog="q7emu", description="Bit-exact emulator of the Vision-Q7 IVP firmware kernels "
                                          "(TensorDequantize 0x7b, QuantizeMX 0xe3).")
    p.add_argument("--version", action="version", version=f"q7emu {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    s = sub.add_parser("ops", help="list the IVP primitives (mnemonic, provenance, kernels, semantics)")
    s.set_defaults(func=cmd_ops)

    s = sub.add_parser("decode", help="decode a 64-byte record and show its validity clause by clause")
    s.add_argument("record", metavar="HEX|FILE",
                   help="128 hex digits, or a file (64 raw bytes or hex text); 8 bytes decode as a kernel_info record")
    s.add_argument("-g", "--generation", default="MARIANA", help=f"one of {gens} (default MARIANA)")
    s.add_argument("--partition-bytes", type=_int, default=0x30000, help="SBUF bytes per partition (default 0x30000)")
    s.set_defaults(func=cmd_decode)

    s = sub.add_parser("table", help="print a generation's built-in kernel_info tables")
    s.add_argument("generation", metavar="GENERATION", help=gens)
    s.add_argument("--hex", action="store_true", help="also dump each table's bytes")
    s.set_defaults(func=cmd_table)

    knob_help = "model knob NAME=VALUE (MODEL.md §1-§2), repeatable"
    s = sub.add_parser("run", help="execute one record on an SBUF image")
    s.add_argument("record", metavar="RECORD", help="128 hex digits or a file")
    s.add_argument("--sbuf", required=True, metavar="IN.npz", help="array 'sbuf' uint8 [128, partition_bytes]")
    s.add_argument("-o", "--output", required=True, metavar="OUT.npz", help="where to write the SBUF after the run")
    s.add_argument("-g", "--generation", default="MARIANA", help=f"one of {gens} (default MARIANA)")
    s.add_argument("--knob", action="append", metavar="NAME=VALUE", help=knob_help)
    s.add_argument("--backend", choices=("kernel", "golden"), default="kernel", help="kernels (default) or golden models")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("replay", help="replay cases; exit 1 if any fails")
    s.add_argument("paths", nargs="+", metavar="CASE|DIR", help="case .json (or stem) or a directory of cases")
    s.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    s.add_argument("--knob", action="append", metavar="NAME=VALUE", help="override a case knob; " + knob_help)
    s.add_argument("--backend", choices=("kernel", "golden"), default="kernel", help="kernels (default) or golden models")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    s.set_defaults(func=cmd_replay)

    s = sub.add_parser("case", help="build replay cases")
    csub = s.add_subparsers(dest="case_command", metavar="SUBCOMMAND", parser_class=_Parser)
    c = csub.add_parser("new", help="build a case from a record and arrays",
                        description="Arrays: PARTITION:OFFSET=FILE.npy or PARTITION:OFFSET=FILE.npz:KEY, each a "
                                    "uint8 [partitions, bytes] region. Without --expected, the expected regions "
                                    "are computed by running the record on the golden models.")
    c.add_argument("out", metavar="OUT", help="case path (writes OUT.json and OUT.npz)")
    c.add_argument("--record", required=True, metavar="HEX|FILE")
    c.add_argument("-g", "--generation", required=True, help=gens)
    c.add_argument("--input", action="append", metavar="P:OFF=ARRAY", help="an input region (repeatable)")
    c.add_argument("--expected", action="append", metavar="P:OFF=ARRAY", help="an expected region (repeatable)")
    c.add_argument("--knob", action="append", metavar="NAME=VALUE", help=knob_help)
    c.add_argument("--partition-bytes", type=_int, default=0x30000, help="SBUF bytes per partition (default 0x30000)")
    c.add_argument("--fill", type=_int, default=0, help="SBUF byte value outside the inputs (default 0)")
    c.add_argument("--note", help="free-text provenance note")
    c.add_argument("--backend", choices=("golden", "kernel"), default="golden",
                   help="models that compute expected bytes when --expected is absent (default golden)")
    c.set_defaults(func=cmd_case_new)
    s.set_defaults(func=lambda a: (_ for _ in ()).throw(_UsageError("case: choose a subcommand (new)")))

    # Further command groups live in their own modules; each exposes
    # register(subparsers, parser_class, usage_error) and adds its subcommands.
    import importlib
    for name in _EXTENSION_MODULES:
        try:
            mod = importlib.import_module(f".{name}", __package__)
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.{name}":
                raise
            continue
        mod.register(sub, _Parser, _UsageError)
    return p


#: CLI command modules: cli_trace (trace, profile), cli_explore (explore, listing)
_EXTENSION_MODULES = ("trace_commands", "explore_commands")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 failing verdict / case, 2 bad input)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        return int(args.func(args))
    except SystemExit as e:  # --help / --version
        return int(e.code or 0) if isinstance(e.code, int) or e.code is None else EXIT_USAGE
    except _ParserError as e:
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    except _UsageError as e:
        print(f"q7emu: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except (Q7Error, OSError, ValueError, KeyError, EOFError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"q7emu: error: {msg}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("q7emu: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
