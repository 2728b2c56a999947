"""CLI commands ``q7emu trace ...`` and ``q7emu profile ...`` (registered by q7emu.cli.main).

::

    q7emu trace record CASE|RECORD -o FILE [--window START:END] [--partitions LIST] [--ops NAME,...]
                [--bundles LIST] [--jsonl] [--log FILE|-] [--max-size SIZE] [--no-progress] [--json]
                [--sbuf IN.npz] [-g GEN] [--knob NAME=VALUE] [--partition-bytes N]
    q7emu trace CASE|RECORD -o FILE [options]           the same as trace record
    q7emu trace show FILE [--op NAME[,NAME]] [--seq A:B] [--partitions LIST] [--lanes A:B] [--json]
    q7emu trace diff A B [--align seq|op] [--max-lanes N] [--json]     exit 1 when the traces differ
    q7emu trace export FILE -o OUT.jsonl|- [--json]
    q7emu trace import IN.jsonl -o OUT.q7t [--json]
    q7emu trace log FILE [-o OUT|-] [--seq A:B] [--json]  the text log of a trace file
    q7emu profile CASE|RECORD [--json] [--chrome-trace FILE] [--plot FILE.png] [--top N] [--window ...]
                  [--partitions ...] [--ops ...] [--bundles ...] [--repeat N] [--no-progress]

CASE is a replay case (``NAME.json`` / ``NAME.npz`` / the stem; its SBUF image, generation and knobs are
used). RECORD is a 64-byte instruction record (128 hex digits, or a file of 64 raw bytes / hex text) run on
the SBUF image of ``--sbuf`` (array ``sbuf``, uint8 [128, partition_bytes]) or on a zero SBUF.
Ranges are half-open ``START:END`` (either side may be omitted; ``N`` alone means ``N:N+1``); a LIST is
comma-separated ``N`` / ``START:END`` items. Partitions are absolute SBUF partitions (the record's destination
partitions, as ``replay`` reports them). Before recording, ``trace`` estimates the file's size and refuses past
``--max-size`` (default 2G). ``trace`` and ``profile`` exit 1 when the CASE they run fails. A word after ``trace``
names a subcommand only when it is one exactly (a CASE file named ``show`` is ``./show``).
Trace files: docs/traces.md (binary ``q7emu-trace`` v2, v1 still read, or JSON Lines; every reader reads all).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import IO, Any

from q7emu._dataclass import dataclass
from q7emu._version import __version__
from q7emu.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    Parser,
    Subparsers,
    UsageError,
    json_text,
    parse_knobs,
    program_backend,
    read_record,
)
from q7emu.cli.trace_args import (
    DEFAULT_MAX_SIZE,
    SUBCOMMANDS,
    convert_options,
    diff_options,
    filter_options,
    filters,
    list_arg,
    log_options,
    names_arg,
    range_arg,
    record_options,
    run_options,
    show_options,
)
from q7emu.errors import shown_name

TICK_OPS = 1 << 16


def _is_case(target: str) -> bool:
    p = Path(target)
    if p.suffix in (".json", ".npz"):
        return True
    return len(target) < 512 and p.with_suffix(".json").is_file() and not p.is_file()


@dataclass
class Target:
    """A CASE or RECORD loaded once: :meth:`machine` gives a fresh machine each time (so a run can be
    repeated on the same input), ``label`` names it in trace headers, ``partition_base`` is the record's
    first destination partition."""

    label: str
    record: bytes
    partition_base: int
    case: Any = None
    knobs: dict[str, str] | None = None
    sbuf: Any = None
    generation: str = "MARIANA"
    partition_bytes: int = 0
    backend: Any = "kernel"

    def machine(self) -> Any:
        """A fresh Machine holding the target's SBUF image (the kernel, or ``--program``, runs the record)."""
        from q7emu.machine.machine import Machine
        if self.case is not None:
            from q7emu.machine.cases import _prepared_machine
            return _prepared_machine(self.case, self.knobs, self.backend)
        m = Machine(self.generation, self.partition_bytes, self.knobs, backend=self.backend)
        if self.sbuf is not None:
            m.sbuf[:] = self.sbuf
        return m

    def verdict(self, m: Any) -> str | None:
        """PASS / FAIL (first mismatch) of a CASE after it ran on ``m``; None for a RECORD."""
        if self.case is None:
            return None
        from q7emu.machine.cases import compare
        mm = compare(self.case.expected, m.sbuf)
        return "PASS" if mm is None else f"FAIL ({mm.describe()})"


def load_target(target: str, *, sbuf: str | None = None, generation: str | None = None,
                knobs: list[str] | None = None, partition_bytes: int | None = None, backend: Any = "kernel") -> Target:
    """Load a CASE or RECORD (UsageError for options that do not apply to a CASE and for a case that
    expects an error); ``backend``: what runs the record (a ``--program``'s ProgramBackend, or the kernels)."""
    from q7emu.isa.records import decode_record
    from q7emu.machine.machine import DEFAULT_PARTITION_BYTES, load_sbuf_image

    kn = parse_knobs(knobs)
    if _is_case(target):
        from q7emu.machine.cases import load_case
        if sbuf is not None or generation is not None or partition_bytes is not None:
            raise UsageError("--sbuf, -g and --partition-bytes apply to a RECORD; a CASE carries its own")
        case = load_case(target)
        if case.expected_error is not None:
            raise UsageError(f"{target}: the case expects an error ({case.expected_error!r}); nothing to trace")
        base = _dst_partition(decode_record(case.record), case.partition_bytes)
        # the case's file name, not the path as typed: the same run gives the same bytes in any checkout
        return Target(shown_name(Path(case.path or target).name), case.record, base, case=case, knobs=kn,
                      backend=backend)
    record = read_record(target)
    if partition_bytes is not None:          # 0 is a value to refuse, not "the default" (issue 27 item 11)
        from q7emu.isa.validate import check_partition_bytes
        check_partition_bytes(partition_bytes, "--partition-bytes")
    arr = load_sbuf_image(sbuf, partition_bytes) if sbuf is not None else None
    pb = arr.shape[1] if arr is not None else (DEFAULT_PARTITION_BYTES if partition_bytes is None
                                                 else partition_bytes)
    return Target(f"record:{record.hex()}", record, _dst_partition(decode_record(record), pb), knobs=kn,
                  sbuf=arr, generation=generation or "MARIANA", partition_bytes=pb, backend=backend)


def _dst_partition(rec: Any, partition_bytes: int) -> int:
    """The record's first destination partition, its opcode spec's kernel partition (0 when the opcode has no spec
    or the record no immediate SBUF destination)."""
    from q7emu.errors import Q7Error
    from q7emu.isa.opcodes import find_spec

    try:
        spec = find_spec(rec)
        dest = spec.destination(rec, partition_bytes) if spec is not None else None
    except (Q7Error, ValueError, ZeroDivisionError):
        return 0
    if dest is None or not dest.addresses:
        return 0
    addr = dest.addresses[0][1]           # the address the kernel partition is read from
    return int(dest.kernel_partition) if addr.is_immediate and not addr.is_psum else 0


def run_target(target: str, recorder: Any, *, sbuf: str | None = None, generation: str | None = None,
               knobs: list[str] | None = None, partition_bytes: int | None = None) -> tuple[Any, str, str | None]:
    """Execute a CASE or RECORD once with ``trace=recorder`` (None: untraced).

    Returns (ExecResult, label for the trace header, case verdict or None)."""
    t = load_target(target, sbuf=sbuf, generation=generation, knobs=knobs, partition_bytes=partition_bytes)
    m = t.machine()   # Machine.execute tells the recorder the record's first partition (absolute partitions)
    res = m.execute(t.record, trace=recorder)
    return res, t.label, t.verdict(m)


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def _recorder(f: dict[str, Any], **kw: Any) -> Any:
    from q7emu.analysis.trace import Recorder
    from q7emu.errors import InvalidArgument
    try:
        return Recorder(**f, **kw)
    except InvalidArgument as e:
        raise UsageError(str(e)) from None


class Progress:
    """A tqdm bar over executed ops on stderr (quiet when stderr is not a TTY or when disabled)."""

    def __init__(self, total: int | None, desc: str, enabled: bool) -> None:
        self.bar = None
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=desc, unit="op", unit_scale=True, file=sys.stderr, leave=False,
                            dynamic_ncols=True, mininterval=0.25)
        self.done = 0

    def tick(self, _run: int, executed: int) -> None:
        """``executed`` ops of the current run so far."""
        if self.bar is not None and executed > self.done:
            self.bar.update(executed - self.done)
            self.done = executed

    def next_run(self) -> None:
        """A new run starts counting from 0."""
        self.done = 0

    def close(self) -> None:
        """Remove the bar."""
        if self.bar is not None:
            self.bar.close()


# ---------------------------------------------------------------------- trace
def _estimate(t: Any, f: dict[str, Any], jsonl: bool) -> dict[str, Any]:
    """A dry recording (blocks measured and dropped): records, executed ops, raw bytes, and the output size
    estimated from the first blocks' compression (binary) or rendered lines (JSON Lines)."""
    import zlib

    from q7emu.analysis.trace import CODEC_LEVEL, Trace, decode_block

    sample: dict[str, Any] = {"raw": 0, "comp": 0, "recs": 0, "text": 0, "text_recs": 0}
    rec = _recorder(f, partition_base=t.partition_base)

    def on_block(run: int, raw: bytes) -> None:
        if sample["raw"] < 4 << 20:
            sample["raw"] += len(raw)
            sample["comp"] += len(zlib.compress(raw, CODEC_LEVEL))
        if jsonl and sample["text_recs"] < 2000:
            b = decode_block(raw, rec.op_names[run], run)
            tr = Trace(b.records, b.operands, b.data)
            n = min(len(tr), 2000)
            sample["text"] += sum(len(json.dumps(tr.op_json(i), separators=(",", ":"))) + 1 for i in range(n))
            sample["text_recs"] += n
        rec.run_blocks[run].clear()

    rec.on_block = on_block
    m = t.machine()
    m.execute(t.record, trace=rec)
    raw_total = rec.raw_bytes
    est = raw_total * (sample["comp"] / sample["raw"]) if sample["raw"] else 0
    if jsonl:
        est = rec.records * (sample["text"] / sample["text_recs"]) if sample["text_recs"] else 0
    return {"records": rec.records, "executed": sum(r.get("executed") or 0 for r in rec.runs),
            "raw_bytes": raw_total, "estimated_bytes": int(est) + 4096}


@contextlib.contextmanager
def _log_stream(dest: str | None) -> Any:
    if dest is None:
        yield None
    elif dest == "-":
        yield sys.stdout
    else:
        from q7emu.fileio import atomic_write
        with atomic_write(dest, "w", newline="\n") as fh:
            yield fh


def _trace_record(a: argparse.Namespace) -> int:
    from q7emu.analysis.trace import LogWriter, decode_block, export_jsonl

    if not a.output and not a.log:
        raise UsageError("trace: -o FILE is required (or --log FILE|- for a text log)")
    f = filters(a)
    t = load_target(a.target, sbuf=a.sbuf, generation=a.generation, knobs=a.knob, partition_bytes=a.partition_bytes,
                    backend=program_backend(a) or "kernel")
    out = Path(a.output) if a.output else None
    from q7emu.fileio import output_target
    for dest in (a.output, None if a.log in (None, "-") else a.log):
        if dest is not None:
            output_target(dest)      # a FIFO, device or missing folder: refused before the run (docs/limits.md §3)
    jsonl = bool(out is not None and (a.jsonl or out.suffix == ".jsonl"))
    quiet = a.json
    limit = DEFAULT_MAX_SIZE if a.max_size is None else a.max_size
    est = _estimate(t, f, jsonl) if out is not None else None
    if est is not None:
        if not quiet:
            print(f"q7emu trace: {est['records']} of {est['executed']} executed ops pass the filters; estimated "
                  f"{_mb(est['estimated_bytes'])} ({'JSON Lines' if jsonl else 'q7emu-trace v2'}) -> {out}",
                  file=sys.stderr)
        if est["estimated_bytes"] > limit:
            raise UsageError(f"trace: estimated output {_mb(est['estimated_bytes'])} exceeds --max-size "
                             f"{_mb(limit)}; narrow it (--window, --partitions, --ops, --bundles) or raise --max-size")
    tmp = None
    path: Path | None = out
    bar = Progress(est["executed"] if est else None, "trace", not a.no_progress)
    try:
        if jsonl and out is not None:       # the .q7t the JSON Lines are exported from, removed below
            from q7emu.fileio import create_temporary
            fd, tmp = create_temporary(out.parent if str(out.parent) else ".", out.name, ".q7t.tmp", writing=out)
            os.close(fd)
            path = Path(tmp)
        with _log_stream(a.log) as log_fh:
            log = LogWriter(log_fh) if log_fh is not None else None
            rec = _recorder(f, path=path, partition_base=t.partition_base, case=t.label, on_tick=bar.tick,
                            tick_ops=TICK_OPS, output_name=out if tmp is not None else None)
            if log is not None:
                rec.on_block = lambda run, raw: log.write_block(decode_block(raw, rec.op_names[run], run))
            try:
                m = t.machine()
                res = m.execute(t.record, trace=rec)
                rec.case = t.label
                rec.close()
            except BaseException:
                rec.abort()
                raise
        bar.close()
        if jsonl and path is not None and out is not None:
            export_jsonl(path, out)
    finally:
        bar.close()
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    verdict = t.verdict(m)
    size = out.stat().st_size if out is not None else None
    executed = sum(r.get("executed") or 0 for r in rec.runs)
    kern = ", ".join(sorted({r["kernel"] for r in rec.runs})) or res.path
    if a.json:
        print(json_text({"format": "q7emu-trace-run", "version": 1, "q7emu_version": __version__,
                          "path": res.path, "case": t.label,
                          "verdict": verdict, "output": str(out) if out else None,
                          "output_format": None if out is None else ("jsonl" if jsonl else "q7emu-trace-v2"),
                          "records": rec.records, "executed": executed, "runs": len(rec.runs),
                          "file_bytes": size, "bytes_per_op": size / rec.records if size and rec.records else None,
                          "estimated_bytes": est["estimated_bytes"] if est else None, "log": a.log}))
    elif out is not None and size is not None:
        print(f"{res.path}: traced {rec.records} of {executed} ops of {kern} in {len(rec.runs)} run(s)"
              + (f"; case {verdict}" if verdict else "")
              + f" -> {out} ({'JSON Lines' if jsonl else 'q7emu-trace'}, {_mb(size)}"
              + (f", {size / rec.records:.1f} B/op)" if rec.records else ")"),
              file=sys.stderr if a.log == "-" else None)
    return EXIT_FAIL if verdict and verdict != "PASS" else EXIT_OK


def _json_stream_records(ops: Any, lanes: Any, head: dict[str, Any], out: IO[str]) -> int:
    from q7emu.analysis.trace import op_json

    out.write(json_text(head, separators=(",", ":"))[:-1] + ',"records":[')
    n = 0
    for op in ops:
        o = op_json(op)
        if lanes is not None:
            lo, hi = lanes
            for od in o["operands"]:
                if od["kind"] != "scalar":
                    od["lanes"] = od["lanes"][lo or 0:hi]
        out.write(("," if n else "") + json.dumps(o, separators=(",", ":")))
        n += 1
    out.write(f'],"shown":{n}}}\n')
    return n


def _check_show_ops(names: list[str], recorded: set[str], records: int) -> None:
    """``show --op``: a name none of the trace's records has is a UsageError naming the nearest mnemonics it holds
    (a filter that can match nothing is a typo, or the op of another kernel)."""
    from q7emu.analysis.trace.layout import known_mnemonics, nearest_mnemonics

    for n in names:
        if n in recorded:
            continue
        why = ("a q7emu op this trace does not hold" if n in known_mnemonics()
               else "not a q7emu mnemonic (`q7emu ops` lists them)")
        near = nearest_mnemonics(n, recorded)
        raise UsageError(f"--op {n}: {why} (none of its {records} records)"
                         + (f"; nearest: {', '.join(near)}" if near else ""))


def _trace_show(a: argparse.Namespace) -> int:
    """``q7emu trace show FILE``: the selected records in each op's lane view (or one JSON object)."""
    from q7emu.analysis.trace.model import TraceFile
    from q7emu.analysis.trace.ops import format_op

    seq = range_arg(a.seq, "--seq")
    lanes = range_arg(a.lanes, "--lanes")
    parts = list_arg(a.partitions, "--partitions")
    wanted = names_arg(a.op) or []
    names = set(wanted)
    with TraceFile(a.file) as tf:
        _check_show_ops(wanted, tf.recorded_mnemonics(), tf.records)
        def selected() -> Any:
            for op in tf.ops(seq=seq):
                if names and op.op not in names:
                    continue
                if parts and not any(lo <= op.partition < hi for lo, hi in parts):
                    continue
                yield op
        if a.json:
            head = {"format": "q7emu-trace-show", "version": 1, "file": str(a.file), "case": tf.case,
                    "q7emu_version": tf.q7emu_version, "total": tf.records, "runs": tf.runs}
            _json_stream_records(selected(), lanes, head, sys.stdout)
            return EXIT_OK
        n = 0
        for op in selected():
            print(format_op(op, lanes))
            n += 1
        print(f"({n} of {tf.records} records shown)")
    return EXIT_OK


def _trace_diff(a: argparse.Namespace) -> int:
    """``q7emu trace diff A B``: exit 1 when the traces differ."""
    from q7emu.analysis.trace.diff import diff
    from q7emu.analysis.trace.model import TraceFile

    with TraceFile(a.a) as fa, TraceFile(a.b) as fb:
        r = diff(fa, fb, align=a.align)
    if a.json:
        doc = r.as_json()
        doc = {"format": doc.pop("format"), "version": doc.pop("version"), "q7emu_version": __version__, **doc}
        print(json_text(dict(doc, a=str(a.a), b=str(a.b))))
    else:
        print(r.format(max_lanes=a.max_lanes))
    return EXIT_OK if r.same else EXIT_FAIL


def _trace_convert(a: argparse.Namespace) -> int:
    """``q7emu trace export FILE -o OUT`` (JSON Lines; ``-o -`` streams it to stdout) and ``q7emu trace import
    IN.jsonl -o OUT.q7t``."""
    from q7emu.analysis.trace.convert import export_jsonl, import_jsonl

    mode = a.trace_command
    if a.output == "-":                     # JSON Lines is text: export may stream it to stdout
        if mode != "export" or a.json:
            raise UsageError(f"trace {mode} -o -: only `trace export` without --json writes to stdout "
                             "(a binary trace needs a file)")
        from q7emu.analysis.trace.model import TraceFile
        with TraceFile(a.file) as tf:
            for line in tf.iter_jsonl():
                sys.stdout.write(line + "\n")
        return EXIT_OK
    n = export_jsonl(a.file, a.output) if mode == "export" else import_jsonl(a.file, a.output)
    if a.json:
        print(json_text({"format": f"q7emu-trace-{mode}", "version": 1, "q7emu_version": __version__,
                          "input": str(a.file), "output": str(a.output),
                          "records": n, "output_bytes": Path(a.output).stat().st_size}))
    else:
        print(f"{a.file} -> {a.output}: {n} records")
    return EXIT_OK


def _trace_log(a: argparse.Namespace) -> int:
    """``q7emu trace log FILE``: the text log of a trace file (docs/traces.md §6), the lines ``trace --log``
    streams while recording, to stdout or (atomically) to ``-o OUT``."""
    from q7emu.analysis.trace.log import LogWriter
    from q7emu.analysis.trace.model import TraceFile

    if a.output == "-" and a.json:
        raise UsageError("trace log --json: give -o FILE (the log itself goes to stdout without -o)")
    seq = range_arg(a.seq, "--seq")
    with TraceFile(a.file) as tf:
        if a.output != "-":
            from q7emu.fileio import output_target
            output_target(a.output)      # a FIFO, device or missing folder: refused before reading (docs/limits.md §3)
        with _log_stream(a.output) as fh:
            log = LogWriter(fh)
            for b in tf.blocks(seq=seq):
                log.write_block(b)
        total = tf.records
    if a.json:
        print(json_text({"format": "q7emu-trace-log", "version": 1, "q7emu_version": __version__,
                          "input": str(a.file), "output": str(a.output), "records": log.lines, "total": total,
                          "output_bytes": Path(a.output).stat().st_size}))
    elif a.output != "-":
        print(f"{a.file} -> {a.output}: {log.lines} of {total} records")
    return EXIT_OK


# ---------------------------------------------------------------------- profile
def _time_untraced(t: Target, repeat: int) -> dict[str, Any]:
    """Warm, repeated untraced runs (each on a fresh machine; only ``execute`` is timed): min and median."""
    times = []
    m = t.machine()
    m.execute(t.record)                         # warm-up: extension import, page faults, caches
    deadline = time.perf_counter() + 10.0
    for _ in range(max(1, repeat)):
        m = t.machine()
        t0 = time.perf_counter()
        m.execute(t.record)
        times.append(time.perf_counter() - t0)
        if time.perf_counter() > deadline:
            break
    times.sort()
    return {"execute_untraced_s": times[0], "execute_untraced_median_s": times[len(times) // 2],
            "execute_untraced_runs": len(times)}


def _count_executed(t: Target) -> int:
    """Executed primitives of the target (a run that records nothing: the progress bar's total)."""
    rec = _recorder({"window": (0, 0)}, partition_base=t.partition_base)
    t.machine().execute(t.record, trace=rec)
    return sum(r.get("executed") or 0 for r in rec.runs)


def cmd_profile(a: argparse.Namespace) -> int:
    """``q7emu profile``: time a CASE|RECORD untraced (warm, repeated), then run it once recording a skeleton
    trace folded into the profile's counters as it runs; print (or write) the profile."""
    from q7emu.analysis.profile import (
        ProfileAccumulator,
        format_profile,
        plot,
        require_matplotlib,
        write_chrome_trace,
    )
    from q7emu.analysis.trace import decode_block

    if a.plot:
        require_matplotlib()            # fail before running anything
    f = filters(a)
    prog = program_backend(a)
    t = load_target(a.target, sbuf=a.sbuf, generation=a.generation, knobs=a.knob, partition_bytes=a.partition_bytes,
                    backend=prog or "kernel")
    wall = _time_untraced(t, a.repeat)
    acc = ProfileAccumulator()
    bar = Progress(_count_executed(t) if not a.no_progress and sys.stderr.isatty() else None, "profile",
                   not a.no_progress)
    rec = _recorder(f, partition_base=t.partition_base, case=t.label, skeleton=True, on_tick=bar.tick,
                    tick_ops=TICK_OPS)

    def on_block(run: int, raw: bytes) -> None:
        acc.add(decode_block(raw, rec.op_names[run], run, values=False))
        rec.run_blocks[run].clear()             # folded into the counters: nothing is kept

    rec.on_block = on_block
    m = t.machine()
    try:
        t0 = time.perf_counter()
        m.execute(t.record, trace=rec)
        wall["execute_traced_s"] = time.perf_counter() - t0
    finally:
        bar.close()
    verdict = t.verdict(m)
    p = acc.result(rec.runs, t.label, wall=wall)
    p = {"format": p.pop("format"), "version": p.pop("version"), "q7emu_version": __version__, **p}
    if prog is not None:
        p["program"] = _program_profile(t, prog)
    if verdict:
        p["case_verdict"] = verdict
    if a.chrome_trace:
        write_chrome_trace(acc, a.chrome_trace)
    if a.plot:
        plot(p, a.plot)
    if a.json:
        print(json_text(p, indent=1))
    else:
        print(format_profile(p, top=a.top))
        if prog is not None:
            print(_format_program_profile(p["program"], top=a.top))
        if verdict:
            print(f"case {verdict}")
        if a.chrome_trace:
            print(f"chrome trace -> {a.chrome_trace} (open in https://ui.perfetto.dev; 1 us = 1 cycle; "
                  "repeated bundle instances aggregated per partition)")
        if a.plot:
            print(f"op-mix plot -> {a.plot}")
    return EXIT_FAIL if verdict and verdict != "PASS" else EXIT_OK


def _program_profile(t: Target, backend: Any) -> dict[str, Any]:
    """What a ``--program`` run executed, scalar ops included (the trace holds the IVP ops only): bundles, ops by
    mnemonic and the bundles executed most often, from an untraced run that counts each bundle (docs/asm.md §7)."""
    import dataclasses

    import numpy as np

    prog = backend.program
    counts = np.zeros(len(prog.bundles), np.int64)
    t_count = dataclasses.replace(t, backend=dataclasses.replace(backend, counts=counts))
    t_count.machine().execute(t.record)
    ops: Counter[str] = Counter()
    scalar_only = 0
    from q7emu.primitives import asm_syntax as S
    for i, b in enumerate(prog.bundles):
        n = int(counts[i])
        for ins in b.instrs:
            ops[("ivp_" if S.is_ivp(ins.op) else "") + ins.op.mnemonic] += n
        if not any(S.is_ivp(ins.op) for ins in b.instrs):
            scalar_only += n
    hot = sorted(range(len(prog.bundles)), key=lambda i: -int(counts[i]))[:10]
    return {"name": prog.name, "bundles_executed": int(counts.sum()), "scalar_only_bundles_executed": scalar_only,
            "ops_executed": int(sum(ops.values())), "ops": dict(ops.most_common()),
            "hot_bundles": [{"bundle": i, "tag": prog.bundles[i].tag, "line": str(prog.bundles[i].where),
                             "executed": int(counts[i]), "text": prog.bundles[i].text()} for i in hot if counts[i]]}


def _format_program_profile(pp: dict[str, Any], top: int | None) -> str:
    lines = [f"program {pp['name']}: {pp['bundles_executed']} bundles executed ({pp['scalar_only_bundles_executed']} "
             f"with scalar ops only), {pp['ops_executed']} ops (scalar ones included: the issue count of the cycle "
             "model above counts the IVP bundles only)"]
    for name, n in list(pp["ops"].items())[:top or len(pp["ops"])]:
        lines.append(f"  {name:<26} {n:>12}")
    lines.append("most executed bundles:")
    for h in pp["hot_bundles"]:
        lines.append(f"  {h['executed']:>10}  {h['line']:<28} B{h['tag']:<4} {h['text']}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- registration
def _trace_usage(_a: argparse.Namespace) -> int:
    raise UsageError(f"trace: give a subcommand ({', '.join(SUBCOMMANDS)}) or CASE|RECORD -o FILE "
                     "(= trace record); see q7emu trace --help")


def register(sub: Subparsers) -> None:
    """Add ``trace`` (its subcommands ``record | show | diff | export | import | log``; ``trace CASE|RECORD ...``
    is ``trace record``, see :func:`q7emu.cli.trace_args.implicit_record`) and ``profile`` to the ``q7emu``
    subparsers."""
    doc = __doc__ or ""
    t = sub.add_parser("trace", help="record, show, diff, convert and log lane-level kernel traces",
                       description=doc.split("::", 1)[1].split("CASE is", 1)[0].strip("\n") + "\n\n"
                       "CASE is" + doc.split("CASE is", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       usage="q7emu trace {record|show|diff|export|import|log} ...\n"
                             "       q7emu trace CASE|RECORD -o FILE [options]   (= trace record)")
    t.set_defaults(func=_trace_usage)
    ts = t.add_subparsers(dest="trace_command", metavar="SUBCOMMAND", parser_class=Parser)
    r = ts.add_parser("record", prog="q7emu trace record",
                      help="run a CASE|RECORD and record its trace (also: q7emu trace CASE|RECORD ...)",
                      description="Run a CASE|RECORD once, recording the executed primitives that pass the filters "
                                  "to a .q7t file (or JSON Lines) and / or a text log (docs/traces.md §1, §7). "
                                  "Exit 1 when the CASE fails.")
    r.add_argument("target", metavar="CASE|RECORD")
    record_options(r)
    r.set_defaults(func=_trace_record, command_prog="q7emu trace record")
    s = ts.add_parser("show", prog="q7emu trace show", help="print trace records in each op's lane view",
                      description="print trace records in each op's lane view")
    show_options(s)
    s.set_defaults(func=_trace_show, command_prog="q7emu trace show")
    d = ts.add_parser("diff", prog="q7emu trace diff", help="compare two traces; exit 1 when they differ",
                      description="compare two traces; exit 1 when they differ")
    diff_options(d)
    d.set_defaults(func=_trace_diff, command_prog="q7emu trace diff")
    for mode, what in (("export", "binary trace -> JSON Lines"), ("import", "JSON Lines -> binary trace")):
        c = ts.add_parser(mode, prog=f"q7emu trace {mode}", help=what, description=what)
        convert_options(c, mode)
        c.set_defaults(func=_trace_convert, command_prog=f"q7emu trace {mode}")
    lg = ts.add_parser("log", prog="q7emu trace log",
                       help="the text log of a trace file (one op per line, as trace --log writes it)",
                       description="Write the text log of a trace file (docs/traces.md §6): one line per op, the "
                                   "lines `trace record --log` streams while recording.")
    log_options(lg)
    lg.set_defaults(func=_trace_log, command_prog="q7emu trace log")

    p = sub.add_parser("profile", help="per-op / per-bundle counts, modelled cycles and emulator time of a run",
                       description="Profile one CASE|RECORD: per-mnemonic counts, per-bundle issue counts, "
                                   "estimated cycles (II = 1 per bundle + MAC latency 2; see q7emu.analysis.profile) "
                                   "per group and per output element, and emulator time per op family. The counts "
                                   "come from counters kept while the kernel runs (no trace is stored); the "
                                   "untraced time is the fastest of warm, repeated runs. Exit 1 when a CASE fails.")
    p.add_argument("target", metavar="CASE|RECORD")
    p.add_argument("--chrome-trace", metavar="FILE",
                   help="write Chrome trace-event JSON (opens in ui.perfetto.dev; per partition one slice per bundle)")
    p.add_argument("--plot", metavar="FILE.png", help="op-mix bar chart (needs matplotlib)")
    p.add_argument("--top", type=int, default=None, help="show only the N most frequent mnemonics")
    p.add_argument("--repeat", type=int, default=5, help="untraced timing runs (default 5; the fastest is reported)")
    filter_options(p)
    run_options(p)
    p.set_defaults(func=cmd_profile)
