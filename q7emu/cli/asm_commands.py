"""``q7emu asm check`` and ``q7emu asm run``: assemble a program and check it; run it on an SBUF image
(docs/asm.md §7, docs/cli.md §3.11)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from q7emu.cli.common import (
    EXIT_OK,
    Parser,
    Subparsers,
    UsageError,
    add_program_options,
    integer_assignments,
    parse_partition_bytes,
    print_json,
    progress_choice,
    read_program,
)

#: partitions run per interpreter call while a progress bar is shown
PROGRESS_BLOCK = 8


def _summary(prog: Any) -> dict[str, Any]:
    """What ``asm check`` says of a program: its sizes, ops, labels and readings."""
    from q7emu.primitives import asm_syntax as S

    ops = [ins for _, ins in prog.instructions()]
    ivp = sum(S.is_ivp(i.op) for i in ops)
    entry = prog.label_at(prog.entry)
    return {"program": prog.name, "bundles": len(prog.bundles), "ops": len(ops), "ivp_ops": ivp,
            "scalar_ops": len(ops) - ivp, "data_bytes": len(prog.data), "entry": entry[0] if entry else prog.entry,
            "labels": sorted(prog.labels), "readings": dict(prog.readings),
            "snapshot_bundles": sum(1 for b in prog.bundles if b.mode)}


def cmd_asm_check(args: argparse.Namespace) -> int:
    """``q7emu asm check PROG.s``: assemble and check (an error is one line ``file:line:col: rule``, exit 2)."""
    prog = read_program(args.program, args)
    s = _summary(prog)
    if args.json:
        if args.print:
            s["text"] = prog.text()
        print_json("asm-check", s)
        return EXIT_OK
    if args.print:
        sys.stdout.write(prog.text())
        return EXIT_OK
    print(f"{prog.name}: ok: {s['bundles']} bundles, {s['ops']} ops ({s['ivp_ops']} IVP, {s['scalar_ops']} scalar), "
          f"{s['data_bytes']} data bytes, entry {s['entry']}"
          + (f", readings {', '.join(f'{k}={v}' for k, v in s['readings'].items())}" if s["readings"] else ""))
    return EXIT_OK


def cmd_asm_run(args: argparse.Namespace) -> int:
    """``q7emu asm run PROG.s --sbuf IN -o OUT.npz``: run the program on each chosen partition of the SBUF image (in
    place, docs/asm.md §4.2) and write the image after it."""
    import numpy as np

    from q7emu.asm.run import parse_registers, run_sbuf
    from q7emu.cli.trace_args import list_arg
    from q7emu.fileio import atomic_write, write_npz
    from q7emu.machine.machine import load_sbuf_image

    prog = read_program(args.program, args)
    out = args.output if args.output.endswith(".npz") else args.output + ".npz"
    regs = integer_assignments(args, "set", "REGISTER=VALUE (a2=0x40)")
    parse_registers(regs)                               # checked before the image is read
    sbuf = np.ascontiguousarray(load_sbuf_image(args.sbuf, args.partition_bytes))
    ranges = list_arg(args.partitions, "--partitions") or [(0, sbuf.shape[0])]
    parts = [p for lo, hi in ranges for p in range(lo, hi)]
    if any(not 0 <= p < sbuf.shape[0] for p in parts):
        raise UsageError(f"--partitions: partitions are 0..{sbuf.shape[0] - 1}")
    if len(set(parts)) != len(parts):
        raise UsageError("--partitions: a partition is named twice")
    recorder = None
    if args.trace:
        from q7emu.analysis.trace import Recorder
        recorder = Recorder(path=args.trace, case=Path(prog.name).name)
    t0 = time.perf_counter()
    steps = np.zeros(len(parts), np.int64)
    final = np.zeros((len(parts), 16), np.uint32)
    show = progress_choice(args)
    if show is None:
        show = sys.stderr.isatty() and len(parts) > PROGRESS_BLOCK
    bar = None
    if show:
        from tqdm import tqdm
        bar = tqdm(total=len(parts), unit="partition", file=sys.stderr, leave=False)
    try:
        if recorder is not None:
            from q7emu.kernels.tracing import run_traced

            def traced(t: Any, **_: Any) -> None:
                r = run_sbuf(prog, sbuf, partitions=parts, regs=regs, trace=t, max_steps=args.max_steps)
                steps[:], final[:] = r.steps, r.registers
            run_traced(recorder, traced, "program", {})
            if bar is not None:
                bar.update(len(parts))
        else:
            step = PROGRESS_BLOCK if bar is not None else len(parts)
            for i in range(0, len(parts), max(1, step)):
                block = parts[i:i + step]
                r = run_sbuf(prog, sbuf, partitions=block, regs=regs, max_steps=args.max_steps)
                steps[i:i + len(block)], final[i:i + len(block)] = r.steps, r.registers
                if bar is not None:
                    bar.update(len(block))
    finally:
        if bar is not None:
            bar.close()
        if recorder is not None:
            recorder.close()
    seconds = time.perf_counter() - t0
    with atomic_write(out, "wb") as fh:
        write_npz(fh, {"sbuf": sbuf})
    if args.json:
        print_json("asm-run", {
            "program": prog.name, "partitions": parts, "output": out, "trace": args.trace,
            "bundles": int(steps.sum()), "steps": [int(x) for x in steps],
            "registers": {str(p): [int(x) for x in final[i]] for i, p in enumerate(parts)},
            "seconds": round(seconds, 6)})
        return EXIT_OK
    span = f"{int(steps.min())}..{int(steps.max())}" if len(parts) else "0"
    print(f"{prog.name}: ran on {len(parts)} partition(s), {int(steps.sum())} bundles ({span} each) in "
          f"{seconds * 1000:.1f} ms -> {out}" + (f"; trace {args.trace}" if args.trace else ""))
    return EXIT_OK


def cmd_asm(args: argparse.Namespace) -> int:
    """``q7emu asm`` without a subcommand: a usage error."""
    raise UsageError("asm: choose a subcommand (check, run)")


def register(sub: Subparsers) -> None:
    """Add ``asm`` with ``asm check`` and ``asm run`` to the ``q7emu`` subparsers."""
    s = sub.add_parser("asm", help="assemble, check and run IVP programs (docs/asm.md)",
                       description="Programs in the disassembly's own syntax: single ops and FLIX bundles in braces, "
                                   "the ivp_ prefix optional, operands in the C intrinsic's order; pasted objdump "
                                   "text parses (docs/asm.md).")
    ssub = s.add_subparsers(dest="asm_command", metavar="SUBCOMMAND", parser_class=Parser)
    c = ssub.add_parser("check", help="assemble a program and check it; exit 2 with file:line:col on an error",
                        description="Assemble PROG.s and check every rule: the syntax, operand kinds and immediate "
                                    "ranges, FLIX slots, one write per register per bundle, labels, loops "
                                    "(docs/asm.md §2, §4.1). An error is one line naming file:line:col and the "
                                    "rule.")
    c.add_argument("program", metavar="PROG.s")
    c.add_argument("--print", action="store_true",
                   help="write the assembled program, every symbol and macro resolved (it assembles to itself)")
    add_program_options(c, program=False)
    c.add_argument("--json", action="store_true", help="the summary as JSON (q7emu-asm-check)")
    c.set_defaults(func=cmd_asm_check)
    r = ssub.add_parser("run", help="run a program on each partition of an SBUF image",
                        description="Run PROG.s once per partition of the SBUF image, in place: each run sees its "
                                    "partition at address 0 and the program's data section at 0x02000000, every "
                                    "register 0 but those --set (docs/asm.md §4.2); write the image after it.")
    r.add_argument("program", metavar="PROG.s")
    r.add_argument("--sbuf", required=True, metavar="IN.npz",
                   help="the SBUF image: an .npz (array 'sbuf') or .npy of uint8 [128, partition_bytes], or a raw dump "
                        "of 128 x partition_bytes bytes (partition 0 first) with --partition-bytes")
    r.add_argument("--partition-bytes", type=parse_partition_bytes, default=None,
                   help="SBUF bytes per partition (needed to read a raw --sbuf dump)")
    r.add_argument("--partitions", metavar="LIST", help="the partitions to run on (e.g. 0:128, 0:4,17; default all)")
    r.add_argument("--set", action="append", metavar="aN=VALUE",
                   help="a starting scalar register (a2=0x40); repeatable; every other register starts 0")
    r.add_argument("-o", "--output", required=True, metavar="OUT.npz", help="the SBUF image after the run")
    r.add_argument("--trace", metavar="T.q7t", help="also record the lane-level trace of every IVP op (docs/traces.md)")
    r.add_argument("--progress", action="store_true", help="always show the progress bar on stderr")
    r.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    add_program_options(r, program=False)
    r.add_argument("--json", action="store_true", help="what ran, as JSON (q7emu-asm-run)")
    r.set_defaults(func=cmd_asm_run)
    s.set_defaults(func=cmd_asm)


__all__ = ["register", "cmd_asm_check", "cmd_asm_run"]
