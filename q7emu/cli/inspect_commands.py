"""CLI commands that only look: ``q7emu ops`` (the IVP primitives), ``q7emu decode`` (a record, clause by
clause) and ``q7emu table`` (a generation's kernel_info tables)."""
from __future__ import annotations

import argparse

from q7emu.cli.common import EXIT_FAIL, EXIT_OK, GENERATIONS, Subparsers, parse_int, read_record
from q7emu.errors import Q7Error


def cmd_ops(args: argparse.Namespace) -> int:
    """``q7emu ops``: print the IVP primitive table (mnemonic, provenance, kernels, semantics)."""
    try:
        from q7emu.analysis.provenance import format_ops_table
        table = format_ops_table()
    except ImportError as e:
        raise Q7Error(f"q7emu.primitives.ivp is not available ({e})") from None
    print(table)
    return EXIT_OK


def cmd_decode(args: argparse.Namespace) -> int:
    """``q7emu decode``: the record's fields and its validity clause by clause; exit 1 when INVALID."""
    from q7emu.isa.enums import OPCODE_NAMES, Generation
    from q7emu.isa.records import decode_record, fields
    from q7emu.isa.validate import check, model_checks

    data = read_record(args.record, allow_kernel_info=True)
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
    """``q7emu table``: print each built-in kernel_info table of a generation (``--hex``: and its bytes)."""
    from q7emu.isa.kernel_info import builtin_tables

    for t in builtin_tables(args.generation).values():
        print(t.format())
        if args.hex:
            print("  bytes: " + (t.to_bytes().hex(" ") or "-"))
        print()
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``ops``, ``decode`` and ``table`` to the ``q7emu`` subparsers."""
    s = sub.add_parser("ops", help="list the IVP primitives (mnemonic, provenance, kernels, semantics)")
    s.set_defaults(func=cmd_ops)

    s = sub.add_parser("decode", help="decode a 64-byte record and show its validity clause by clause")
    s.add_argument("record", metavar="HEX|FILE",
                   help="128 hex digits, or a file (64 raw bytes or hex text); 8 bytes decode as a kernel_info record")
    s.add_argument("-g", "--generation", default="MARIANA", help=f"one of {GENERATIONS} (default MARIANA)")
    s.add_argument("--partition-bytes", type=parse_int, default=0x30000,
                   help="SBUF bytes per partition (default 0x30000)")
    s.set_defaults(func=cmd_decode)

    s = sub.add_parser("table", help="print a generation's built-in kernel_info tables")
    s.add_argument("generation", metavar="GENERATION", help=GENERATIONS)
    s.add_argument("--hex", action="store_true", help="also dump each table's bytes")
    s.set_defaults(func=cmd_table)
