"""CLI command ``q7emu record new``: a 64-byte instruction record built from named fields (the names ``q7emu
decode`` prints), written as hex on stdout or as 64 raw bytes to a file."""
from __future__ import annotations

import argparse

from q7emu.cli.common import EXIT_HELP, EXIT_OK, Parser, Subparsers, UsageError, parse_partition_bytes, print_json


def cmd_record_new(args: argparse.Namespace) -> int:
    """``q7emu record new KIND FIELD=VALUE ...``: build a record from its defaults and the fields given."""
    from q7emu.fileio import atomic_write_bytes
    from q7emu.isa.records import describe_fields, field_names, record_from_fields, record_kind

    cls = record_kind(args.kind)
    items = list(args.fields) + list(args.trailing_fields or [])
    if args.list_fields:
        names = field_names(cls)
        if args.json:
            print_json("record-fields", {"struct": cls.__name__, "fields": names})
        else:
            print("\n".join(names))
        return EXIT_OK
    assignments = []
    for item in items:
        if "=" not in item:
            raise UsageError(f"record new: {item!r}: expected FIELD=VALUE (see q7emu record new {args.kind} "
                             "--list-fields)")
        name, value = item.split("=", 1)
        assignments.append((name.strip(), value.strip()))
    rec = record_from_fields(cls.OPCODE, assignments, partition_bytes=args.partition_bytes)
    data = rec.encode()
    if args.output:
        atomic_write_bytes(args.output, data)
    if args.json:
        pb = args.partition_bytes or 0x30000
        print_json("record", {
            "record_hex": data.hex(), "opcode": data[0], "struct": type(rec).__name__,
            "partition_bytes": args.partition_bytes, "output": args.output,
            "fields": [{"name": f.name, "value": f.value, "text": f.text, "enum": f.enum}
                       for f in describe_fields(rec, pb)]})
        return EXIT_OK
    print(data.hex())
    return EXIT_OK


def cmd_record(args: argparse.Namespace) -> int:
    """``q7emu record`` without a subcommand: a usage error."""
    raise UsageError("record: choose a subcommand (new)")


def register(sub: Subparsers) -> None:
    """Add ``record`` (with ``record new``) to the ``q7emu`` subparsers."""
    s = sub.add_parser("record", help="build 64-byte instruction records from named fields")
    rsub = s.add_subparsers(dest="record_command", metavar="SUBCOMMAND", parser_class=Parser)
    r = rsub.add_parser(
        "new", help="build a record from named fields; print its hex",
        description="Start from the struct's defaults and set each FIELD=VALUE, by the names q7emu decode prints "
                    "(src.start_addr, src.num_elem, num_active_channels, dequant_fmt, dst.scale_pidx, ...; "
                    "--list-fields lists them; an item alone as src.num_elem[0]=4). Values: integers in any base; "
                    "lists as 4,1,1; bytes as hex; addresses as a flat integer or PARTITION:OFFSET (needs "
                    "--partition-bytes: the flat address is partition * partition_bytes + offset, docs/model.md "
                    "§4); enum fields also by name (dequant_fmt=e2m1, in_dtype=UINT32 or fp16, out_dtype=e4m3). "
                    "Field ranges are checked; validity is not: pipe the hex to q7emu decode.",
        epilog="example: q7emu record new 0x7b --partition-bytes 0x400 src.start_addr=3:0x40 src.num_elem=4,1,1 "
               "num_active_channels=4 dequant_fmt=e2m1 dst.start_addr=3:0x100 dst.num_elem=8,1,1. " + EXIT_HELP)
    r.add_argument("kind", metavar="KIND", help="0x7b (dequant, TensorDequantize) or 0xe3 (quantize_mx, QuantizeMX)")
    r.add_argument("fields", nargs="*", metavar="FIELD=VALUE", help="a field and its value (repeatable)")
    r.add_argument("--partition-bytes", type=parse_partition_bytes, default=None,
                   help="SBUF bytes per partition for PARTITION:OFFSET addresses (a multiple of 4 in 4..0x40000)")
    r.add_argument("-o", "--output", metavar="FILE", help="also write the 64 raw bytes to FILE")
    r.add_argument("--list-fields", action="store_true", help="list the field names of KIND and exit")
    r.add_argument("--json", action="store_true", help="the record and its fields as JSON (q7emu-record)")
    r.set_defaults(func=cmd_record_new, trailing_fields=[])   # main() appends FIELD=VALUE items given after options
    s.set_defaults(func=cmd_record)
