"""CLI commands that only look: ``q7emu ops`` (the IVP primitives), ``q7emu decode`` (a record, clause by
clause) and ``q7emu table`` (a generation's kernel_info tables). Each has ``--json`` (schemas: docs/cli.md)."""
from __future__ import annotations

import argparse
from typing import Any

from q7emu.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    GENERATIONS,
    Subparsers,
    UsageError,
    parse_partition_bytes,
    print_json,
    read_record,
)
from q7emu.errors import Q7Error

#: ``decode``'s partition size when none is given (the machine's default; docs/model.md §4)
DEFAULT_PARTITION_BYTES = 0x30000


def cmd_ops(args: argparse.Namespace) -> int:
    """``q7emu ops [MNEMONIC ...]``: print the IVP primitive table (mnemonic, provenance, kernels, semantics), or the
    named primitives in full (operands in the C intrinsic's order, public evidence)."""
    try:
        from q7emu.analysis.provenance import PRIMITIVE_CLASSES, format_op_detail, format_ops_table, primitive_rows
        rows = primitive_rows()
        known = {r.mnemonic for r in rows}
        names = [m.lower().removeprefix("ivp_") for m in args.mnemonics or []]
        for m in names:
            if m not in known:
                raise UsageError(f"ops: {m!r} is not a q7emu primitive (`q7emu ops` lists them)")
        if args.json:
            print_json("ops", {
                "primitives": [{"mnemonic": r.mnemonic, "provenance": r.cls, "provenance_detail": r.detail,
                                "reference": r.reference, "semantics": r.semantics, "kernels": list(r.kernels),
                                "operands": r.operands, "evidence": r.evidence}
                               for r in rows if not names or r.mnemonic in names],
                "counts": {c: sum(r.cls == c for r in rows) for c in PRIMITIVE_CLASSES}})
            return EXIT_OK
        table = "\n\n".join(format_op_detail(m) for m in names) if names else format_ops_table()
    except ImportError as e:
        raise Q7Error(f"q7emu.primitives.ivp is not available ({e})") from None
    print(table)
    return EXIT_OK


def _kernel_info_json(data: bytes) -> dict[str, Any]:
    from q7emu.isa.enums import OPCODE_NAMES
    from q7emu.isa.kernel_info import KernelInfoRecord

    k = KernelInfoRecord.from_bytes(data)
    return {"kind": "kernel_info", "record_hex": data.hex(), "opcode": k.opcode,
            "opcode_name": OPCODE_NAMES.get(k.opcode), "spec": k.spec, "func_va": k.func_va,
            "func_va_known": k.func_va_known, "key": k.key, "key_low_half_zero": k.key & 0xFFFF == 0}


def cmd_decode(args: argparse.Namespace) -> int:
    """``q7emu decode``: the record's fields and its validity clause by clause; exit 1 when INVALID.

    A record of an opcode for which q7emu models no validity predicate has the verdict UNMODELLED (exit 0)."""
    from q7emu.isa.enums import OPCODE_NAMES, Generation
    from q7emu.isa.opcodes import find_spec
    from q7emu.isa.records import decode_record, describe_fields
    from q7emu.isa.validate import check, model_checks

    data = read_record(args.record, allow_kernel_info=True)
    gen = Generation.parse(args.generation)
    pb = DEFAULT_PARTITION_BYTES if args.partition_bytes is None else args.partition_bytes
    pb_source = "default" if args.partition_bytes is None else "given"
    if len(data) == 8:
        k = _kernel_info_json(data)
        if args.json:
            print_json("decode", k)
            return EXIT_OK
        print(f"kernel_info record  {data.hex(' ')}")
        print(f"  opcode 0x{k['opcode']:02x} {k['opcode_name'] or ''}".rstrip())
        print(f"  spec   {k['spec']}")
        print(f"  funcVA 0x{k['func_va']:08x}{'' if k['func_va_known'] else ' (unknown marker)'}")
        note = "" if k["key_low_half_zero"] else " (low half not zero: never matches a lookup)"
        print(f"  key    0x{k['key']:08x}{note}")
        return EXIT_OK
    rec = decode_record(data)
    op = data[0]
    verdicts = check(rec, gen, pb) + model_checks(rec, pb)
    bad = [v for v in verdicts if v.status == "fail"]
    modelled = find_spec(rec) is not None
    verdict = "INVALID" if bad else ("VALID" if modelled else "UNMODELLED")
    if args.json:
        print_json("decode", {
            "kind": "record", "record_hex": data.hex(), "opcode": op, "opcode_name": OPCODE_NAMES.get(op),
            "struct": type(rec).__name__, "generation": gen.name, "nc_version": gen.nc_version,
            "partition_bytes": pb, "partition_bytes_source": pb_source,
            "fields": [{"name": f.name, "value": f.value, "text": f.text, "enum": f.enum}
                       for f in describe_fields(rec, pb)],
            "clauses": [{"clause": v.clause, "title": v.title, "status": v.status, "kind": v.kind,
                         "field": v.field or None, "value": None if v.value is None else str(v.value),
                         "rule": v.rule or None} for v in verdicts],
            "verdict": verdict, "failing_clauses": len(bad)})
        return EXIT_OK if not bad else EXIT_FAIL
    print(f"record  {data.hex(' ')}")
    print(f"opcode  0x{op:02x} {OPCODE_NAMES.get(op, '(unnamed)')}  -> {type(rec).__name__}")
    print("fields:")
    for f in describe_fields(rec, pb):
        print(f"  {f.name:<28} {f.text}")
    print(f"validity on {gen.name} (NC-v{gen.nc_version}), partition_bytes=0x{pb:x} ({pb_source}):")
    for v in verdicts:
        print(f"  {'[q7emu] ' if v.kind == 'q7emu' else ''}{v.line()}")
    if bad:
        print(f"verdict: INVALID ({len(bad)} failing clause{'s' * (len(bad) != 1)})")
    elif not modelled:
        print(f"verdict: UNMODELLED (q7emu models no validity predicate for opcode 0x{op:02x}; nothing was checked)")
    else:
        print("verdict: VALID")
    return EXIT_OK if not bad else EXIT_FAIL


def cmd_table(args: argparse.Namespace) -> int:
    """``q7emu table``: print each built-in kernel_info table of a generation (``--hex``: and its bytes)."""
    from q7emu.isa.enums import Generation
    from q7emu.isa.kernel_info import builtin_tables

    tables = builtin_tables(args.generation)
    if args.json:
        print_json("table", {
            "generation": Generation.parse(args.generation).name,
            "tables": [{"name": name, "engine": t.engine.value, "records": [
                {"index": i, "opcode": r.opcode, "opcode_name": r.name or None, "spec": r.spec,
                 "func_va": r.func_va, "func_va_known": r.func_va_known, "key": r.key, "hex": r.to_bytes().hex()}
                for i, r in enumerate(t)], "bytes": len(t) * 8} for name, t in tables.items()]})
        return EXIT_OK
    for t in tables.values():
        print(t.format())
        if args.hex:
            print("  bytes: " + (t.to_bytes().hex(" ") or "-"))
        print()
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``ops``, ``decode`` and ``table`` to the ``q7emu`` subparsers."""
    s = sub.add_parser("ops", help="list the IVP primitives (mnemonic, provenance, kernels, semantics)",
                       description="The IVP primitive table, or the named primitives in full: operands in the C "
                                   "intrinsic's order (docs/intrinsics.md §2) with roles and lane views, semantics, "
                                   "provenance and the public code that pins them (docs/intrinsics.md §3).")
    s.add_argument("mnemonics", nargs="*", metavar="MNEMONIC", help="show these primitives in full (ivp_ optional)")
    s.add_argument("--json", action="store_true", help="the table as JSON (q7emu-ops, docs/cli.md)")
    s.set_defaults(func=cmd_ops)

    s = sub.add_parser("decode", help="decode a 64-byte record and show its validity clause by clause",
                       description="Decode a record: every field (enum names beside numbers, immediate addresses "
                                   "as SBUF partition and byte at --partition-bytes) and its validity clause by "
                                   "clause (docs/firmware.md §1.3, §3.2). Verdict VALID, INVALID (exit 1) or "
                                   "UNMODELLED (an opcode q7emu models no predicate for; exit 0).")
    s.add_argument("record", metavar="HEX|FILE",
                   help="128 hex digits, or a file (64 raw bytes or hex text); 8 bytes decode as a kernel_info record")
    s.add_argument("-g", "--generation", default="MARIANA", help=f"one of {GENERATIONS} (default MARIANA)")
    s.add_argument("--partition-bytes", type=parse_partition_bytes, default=None,
                   help="SBUF bytes per partition: a multiple of 4 in 4..0x40000 (default 0x30000); decides the "
                        "partition and byte an immediate address names (docs/model.md §4)")
    s.add_argument("--json", action="store_true", help="fields, clauses and verdict as JSON (q7emu-decode)")
    s.set_defaults(func=cmd_decode)

    s = sub.add_parser("table", help="print a generation's built-in kernel_info tables")
    s.add_argument("generation", metavar="GENERATION", help=GENERATIONS)
    s.add_argument("--hex", action="store_true", help="also dump each table's bytes")
    s.add_argument("--json", action="store_true", help="the tables as JSON (q7emu-table)")
    s.set_defaults(func=cmd_table)
