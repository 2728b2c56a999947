"""CLI commands ``q7emu trace ...`` and ``q7emu profile ...`` (registered by q7emu.cli.main).

::

    q7emu trace CASE|RECORD -o FILE [--window START:END] [--ops NAME,...] [--jsonl]
                [--sbuf IN.npz] [-g GEN] [--knob NAME=VALUE] [--partition-bytes N]
    q7emu trace show FILE [--op NAME[,NAME]] [--seq A:B] [--lanes A:B]
    q7emu trace diff A B [--align seq|op]          exit 1 when the traces differ
    q7emu trace export FILE -o OUT.jsonl
    q7emu trace import IN.jsonl -o OUT.q7t
    q7emu profile CASE|RECORD [--json] [--chrome-trace FILE] [--plot FILE.png] [--top N]

CASE is a replay case (``NAME.json`` / ``NAME.npz`` / the stem; its SBUF image, generation and knobs are
used). RECORD is a 64-byte instruction record (128 hex digits, or a file of 64 raw bytes / hex text) run on
the SBUF image of ``--sbuf`` (array ``sbuf``, uint8 [128, partition_bytes]) or on a zero SBUF.
Ranges are half-open ``START:END`` (either side may be omitted; ``N`` alone means ``N:N+1``).
Trace files: see q7emu.analysis.trace (binary ``q7emu-trace`` v1, or JSON Lines; ``show`` / ``diff`` read both).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from q7emu.cli.common import EXIT_FAIL, EXIT_OK, GENERATIONS, Parser, Subparsers, UsageError, parse_knobs, read_record

#: ``--partition-bytes`` of a RECORD. A lambda, not common.parse_int: argparse names it in the error text
#: (``invalid <lambda> value``), and the CLI's error texts are kept as they are.
_partition_bytes = lambda s: int(s, 0)  # noqa: E731


def _is_case(target: str) -> bool:
    p = Path(target)
    if p.suffix in (".json", ".npz"):
        return True
    return len(target) < 512 and p.with_suffix(".json").is_file() and not p.is_file()


def run_target(target: str, recorder: Any, *, sbuf: str | None = None, generation: str | None = None,
               knobs: list[str] | None = None, partition_bytes: int | None = None) -> tuple[Any, str, str | None]:
    """Execute a CASE or RECORD with ``trace=recorder`` (None: untraced).

    Returns (ExecResult, label for the trace header, case verdict or None). Raises UsageError for options
    that do not apply to a CASE and for a case that expects an error."""
    from q7emu.machine.machine import DEFAULT_PARTITION_BYTES, Machine, load_sbuf_image

    kn = parse_knobs(knobs)
    if _is_case(target):
        from q7emu.machine.cases import _prepared_machine, compare, load_case
        if sbuf is not None or generation is not None or partition_bytes is not None:
            raise UsageError("--sbuf, -g and --partition-bytes apply to a RECORD; a CASE carries its own")
        case = load_case(target)
        if case.expected_error is not None:
            raise UsageError(f"{target}: the case expects an error ({case.expected_error!r}); nothing to trace")
        m = _prepared_machine(case, kn, "kernel")
        res = m.execute(case.record, trace=recorder)
        mm = compare(case.expected, m.sbuf)
        verdict = "PASS" if mm is None else f"FAIL ({mm.describe()})"
        return res, str(case.path or target), verdict
    record = read_record(target)
    arr = None
    if sbuf is not None:
        arr = load_sbuf_image(sbuf)
    pb = arr.shape[1] if arr is not None else (partition_bytes or DEFAULT_PARTITION_BYTES)
    m = Machine(generation or "MARIANA", pb, kn, backend="kernel")
    if arr is not None:
        m.sbuf[:] = arr
    res = m.execute(record, trace=recorder)
    return res, f"record:{record.hex()}", None


def _range(text: str | None, what: str) -> tuple[int | None, int | None] | None:
    from q7emu.analysis.trace import parse_range
    from q7emu.errors import InvalidArgument
    try:
        return parse_range(text, what)
    except InvalidArgument as e:
        raise UsageError(str(e)) from None


def _names(items: list[str] | None) -> list[str] | None:
    if not items:
        return None
    out = [n.strip() for it in items for n in it.split(",") if n.strip()]
    return out or None


# ---------------------------------------------------------------------- trace
def _record_options(p: argparse.ArgumentParser, suppress: bool = False) -> None:
    h = (lambda s: argparse.SUPPRESS) if suppress else (lambda s: s)
    d = argparse.SUPPRESS if suppress else None
    p.add_argument("-o", "--output", metavar="FILE", default=d, help=h("trace file to write"))
    p.add_argument("--window", metavar="START:END", default=d,
                   help=h("record only sequence numbers START <= seq < END (every op still counts)"))
    p.add_argument("--ops", action="append", metavar="NAME,...", default=d,
                   help=h("record only these mnemonics (comma list, repeatable; at most 64)"))
    p.add_argument("--jsonl", action="store_true", default=d if suppress else False,
                   help=h("write JSON Lines instead of the binary trace file"))
    p.add_argument("--sbuf", metavar="IN.npz", default=d, help=h("SBUF image for a RECORD (default: zeros)"))
    p.add_argument("-g", "--generation", default=d, help=h(f"generation for a RECORD: {GENERATIONS} (default MARIANA)"))
    p.add_argument("--knob", action="append", metavar="NAME=VALUE", default=d,
                   help=h("model knob (docs/model.md §1-§2), repeatable; overrides a case's knobs"))
    p.add_argument("--partition-bytes", type=_partition_bytes, default=d,
                   help=h("SBUF bytes per partition for a RECORD without --sbuf (default 0x30000)"))


def cmd_trace(args: argparse.Namespace) -> int:
    """``q7emu trace``: record a trace of a CASE|RECORD, or run the ``show`` / ``diff`` / ``export`` /
    ``import`` subcommand named by the first word of ``args.argv``."""
    argv = list(args.argv or [])
    if not argv:
        raise UsageError("trace: give CASE|RECORD -o FILE, or a subcommand (show, diff, export, import); "
                         "see q7emu trace --help")
    mode = argv[0]
    if mode == "show":
        return _trace_show(argv[1:])
    if mode == "diff":
        return _trace_diff(argv[1:])
    if mode in ("export", "import"):
        return _trace_convert(mode, argv[1:])
    p = Parser(prog="q7emu trace", add_help=False)
    p.add_argument("target", metavar="CASE|RECORD")
    _record_options(p)
    inner = p.parse_args(argv)
    for k, v in vars(inner).items():          # options given before the target land on the outer parser
        outer = getattr(args, k, None)
        if v in (None, False) and outer not in (None, False):
            setattr(inner, k, outer)
        elif isinstance(v, list) and isinstance(outer, list):
            setattr(inner, k, outer + v)
    return _trace_record(inner)


def _trace_record(a: argparse.Namespace) -> int:
    from q7emu.analysis.trace import Recorder

    if not a.output:
        raise UsageError("trace: -o FILE is required")
    win = _range(a.window, "--window")
    if win is not None:
        win = (win[0] or 0, 0xFFFFFFFF if win[1] is None else win[1])
    rec = Recorder(window=win, ops=_names(a.ops))
    res, label, verdict = run_target(a.target, rec, sbuf=a.sbuf, generation=a.generation, knobs=a.knob,
                                     partition_bytes=a.partition_bytes)
    rec.case = label
    t = rec.trace
    t.case = label
    out = Path(a.output)
    jsonl = a.jsonl or out.suffix == ".jsonl"
    if jsonl:
        t.to_jsonl(out)
    else:
        t.save(out)
    seqs = t.records["seq"]
    span = f"seq {int(seqs.min())}..{int(seqs.max())}" if len(t) else "no records"
    kern = ", ".join(sorted({r["kernel"] for r in t.runs})) or res.path
    print(f"{res.path}: traced {len(t)} ops ({span}) of {kern} in {len(t.runs)} run(s)"
          + (f"; case {verdict}" if verdict else "") + f" -> {out} ({'JSON Lines' if jsonl else 'q7emu-trace'})")
    return EXIT_OK


def _trace_show(argv: list[str]) -> int:
    from q7emu.analysis.trace import Trace

    p = Parser(prog="q7emu trace show", description="print trace records in each op's lane view")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--op", action="append", metavar="NAME[,NAME]", help="only these mnemonics (repeatable)")
    p.add_argument("--seq", metavar="A:B", help="only sequence numbers A <= seq < B")
    p.add_argument("--lanes", metavar="A:B", help="only lanes A <= lane < B of each vector operand")
    a = p.parse_args(argv)
    t = Trace.load(a.file)
    seq = _range(a.seq, "--seq")
    lanes = _range(a.lanes, "--lanes")
    n = 0
    for text in t.show(op=_names(a.op), seq=seq, lanes=lanes):
        print(text)
        n += 1
    print(f"({n} of {len(t)} records shown)")
    return EXIT_OK


def _trace_diff(argv: list[str]) -> int:
    from q7emu.analysis.trace import Trace, diff

    p = Parser(prog="q7emu trace diff", description="compare two traces; exit 1 when they differ")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("--align", choices=("seq", "op"), default="seq",
                   help="pair records by sequence number (default) or along the mnemonic sequence")
    p.add_argument("--max-lanes", type=int, default=16, help="differing lanes to print (default 16)")
    a = p.parse_args(argv)
    r = diff(Trace.load(a.a), Trace.load(a.b), align=a.align)
    print(r.format(max_lanes=a.max_lanes))
    return EXIT_OK if r.same else EXIT_FAIL


def _trace_convert(mode: str, argv: list[str]) -> int:
    from q7emu.analysis.trace import Trace

    p = Parser(prog=f"q7emu trace {mode}",
                     description="binary trace -> JSON Lines" if mode == "export" else "JSON Lines -> binary trace")
    p.add_argument("file", metavar="FILE")
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    a = p.parse_args(argv)
    if mode == "export":
        t = Trace.load(a.file)
        t.to_jsonl(a.output)
    else:
        t = Trace.from_jsonl(a.file)
        t.save(a.output)
    print(f"{a.file} -> {a.output}: {len(t)} records")
    return EXIT_OK


# ---------------------------------------------------------------------- profile
def cmd_profile(a: argparse.Namespace) -> int:
    """``q7emu profile``: run a CASE|RECORD untraced and traced, print (or write) its profile."""
    from q7emu.analysis.profile import format_profile, plot, profile, require_matplotlib, write_chrome_trace
    from q7emu.analysis.trace import Recorder

    if a.plot:
        require_matplotlib()            # fail before running anything
    kw: dict[str, Any] = dict(sbuf=a.sbuf, generation=a.generation, knobs=a.knob, partition_bytes=a.partition_bytes)
    t0 = time.perf_counter()
    run_target(a.target, None, **kw)
    t_off = time.perf_counter() - t0
    rec = Recorder()
    t0 = time.perf_counter()
    res, label, verdict = run_target(a.target, rec, **kw)
    t_on = time.perf_counter() - t0
    trace = rec.trace
    trace.case = label
    p = profile(trace, wall={"execute_untraced_s": t_off, "execute_traced_s": t_on})
    if verdict:
        p["case_verdict"] = verdict
    if a.chrome_trace:
        write_chrome_trace(trace, a.chrome_trace)
    if a.plot:
        plot(p, a.plot)
    if a.json:
        print(json.dumps(p, indent=1))
    else:
        print(format_profile(p, top=a.top))
        if verdict:
            print(f"case {verdict}")
        if a.chrome_trace:
            print(f"chrome trace -> {a.chrome_trace} (open in https://ui.perfetto.dev; 1 us = 1 cycle)")
        if a.plot:
            print(f"op-mix plot -> {a.plot}")
    return EXIT_OK


# ---------------------------------------------------------------------- registration
def register(sub: Subparsers) -> None:
    """Add ``trace`` (with its show / diff / export / import words) and ``profile`` to the ``q7emu`` subparsers."""
    t = sub.add_parser("trace", help="record, show, diff and convert lane-level kernel traces",
                       description=__doc__.split("::", 1)[1].split("CASE is", 1)[0].strip("\n") + "\n\n"
                       "CASE is" + __doc__.split("CASE is", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       usage="q7emu trace {CASE|RECORD -o FILE [options] | show | diff | export | import} ...")
    _record_options(t, suppress=True)
    t.add_argument("argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    t.set_defaults(func=cmd_trace)

    p = sub.add_parser("profile", help="per-op / per-bundle counts, modelled cycles and emulator time of a run",
                       description="Profile one CASE|RECORD: per-mnemonic counts, per-bundle issue counts, "
                                   "estimated cycles (II = 1 per bundle + MAC latency 2; see q7emu.analysis.profile) "
                                   "per group and per output element, and emulator time per op family.")
    p.add_argument("target", metavar="CASE|RECORD")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.add_argument("--chrome-trace", metavar="FILE", help="write Chrome trace-event JSON (one slice per bundle)")
    p.add_argument("--plot", metavar="FILE.png", help="op-mix bar chart (needs matplotlib)")
    p.add_argument("--top", type=int, default=None, help="show only the N most frequent mnemonics")
    p.add_argument("--sbuf", metavar="IN.npz", help="SBUF image for a RECORD (default: zeros)")
    p.add_argument("-g", "--generation", default=None, help=f"generation for a RECORD: {GENERATIONS} (default MARIANA)")
    p.add_argument("--knob", action="append", metavar="NAME=VALUE", help="model knob, repeatable")
    p.add_argument("--partition-bytes", type=_partition_bytes, default=None,
                   help="SBUF bytes per partition for a RECORD without --sbuf")
    p.set_defaults(func=cmd_profile)
