"""CLI commands that execute records on the SBUF machine: ``q7emu run`` (one record on an SBUF image),
``q7emu replay`` (cases; exit 1 if any fails, 2 if a case file is broken) and ``q7emu case new`` (build a case).
Each has ``--json`` (schemas: docs/cli.md)."""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from q7emu.machine.workers import Interrupted

from q7emu.cli.common import (
    EXIT_OK,
    GENERATIONS,
    KNOB_HELP,
    Parser,
    Subparsers,
    UsageError,
    add_program_options,
    add_run_options,
    interrupted,
    parse_int,
    parse_knobs,
    parse_partition_bytes,
    print_error,
    print_json,
    program_backend,
    progress_choice,
    quiet_dask_logs,
    read_record,
)

_BACKEND_HELP = "kernels (default) or golden models"


def _region_json(r: Any) -> dict[str, int]:
    return {"partition": r.partition, "count": r.count, "offset": r.offset, "length": r.length}


def _output_path(text: str, suffix: str, option: str) -> Path:
    """The file an output option names (``suffix`` appended when missing, as numpy does), checked before any work:
    not a folder, its folder exists."""
    out = Path(text)
    if out.is_dir():
        raise UsageError(f"{option} {text}: is a folder; name a file")
    if out.suffix != suffix:
        out = out.with_name(out.name + suffix)
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{option} {text}: its folder {str(folder)!r} does not exist")
    if out.is_dir():
        raise UsageError(f"{option} {text}: {out} is a folder; name a file")
    from q7emu.errors import InvalidArgument
    from q7emu.fileio import output_target
    try:
        output_target(out)          # a FIFO, device or socket is refused before any work (docs/limits.md §3)
    except InvalidArgument as e:
        raise UsageError(f"{option} {text}: {e}") from None
    return out


def cmd_run(args: argparse.Namespace) -> int:
    """``q7emu run``: execute one record on the SBUF image ``--sbuf``, write the SBUF after it to ``-o``."""
    from q7emu.fileio import atomic_write, write_npz
    from q7emu.machine.checks import check_record_knobs
    from q7emu.machine.machine import Machine, load_sbuf_image

    out = _output_path(args.output, ".npz", "-o")
    record = read_record(args.record)
    knobs = parse_knobs(args.knob)
    check_record_knobs(knobs, record)
    sbuf = load_sbuf_image(args.sbuf, args.partition_bytes)
    m = Machine(args.generation, sbuf.shape[1], knobs, backend=args.backend, sbuf=sbuf)
    res = m.execute(record)
    with atomic_write(out, "wb") as fh:        # an interrupt leaves the old file or the whole new one
        write_npz(fh, {"sbuf": m.sbuf})
    func_va = f"0x{res.func_va:08x}" if res.func_va != 0xFFFFFFFF else "unknown"
    if args.json:
        print_json("run", {
            "record_hex": record.hex(), "opcode": res.opcode, "kernel": res.path, "generation": m.generation.name,
            "engine": res.engine, "table": res.table, "func_va": res.func_va if res.func_va != 0xFFFFFFFF else None,
            "backend": args.backend, "knobs": knobs, "partition_bytes": m.partition_bytes,
            "regions_written": [_region_json(r) for r in res.regions], "bytes_written": res.bytes_written,
            "seconds": round(res.seconds, 6), "output": str(out)})
        return EXIT_OK
    regs = ", ".join(f"partitions {r.partition}..{r.partition + r.count - 1} "
                     f"bytes 0x{r.offset:x}..0x{r.offset + r.length - 1:x}" for r in res.regions) or "nothing"
    print(f"0x{res.opcode:02x} {res.path} on {m.generation.name} {res.engine} (funcVA "
          f"{func_va}): wrote {res.bytes_written} bytes "
          f"[{regs}] in {res.seconds * 1000:.1f} ms -> {out}")
    return EXIT_OK


def _case_kernels(files: list[str]) -> dict[str, str]:
    """path -> the registry kernel its record runs, read from each case's JSON alone (a file that cannot be
    read is left out: replay reports it)."""
    from q7emu.errors import Q7Error
    from q7emu.fileio import read_json
    from q7emu.isa.records import RECORD_SIZE, parse_hex
    from q7emu.machine.checks import record_kernel

    out = {}
    for f in files:
        try:
            meta = read_json(f)          # the bounded reader of every case file (docs/limits.md §1)
            record = parse_hex(meta["record_hex"])
            entry = record_kernel(record) if len(record) == RECORD_SIZE else None
        except (OSError, ValueError, KeyError, TypeError, Q7Error):
            continue
        if entry is not None:
            out[f] = entry.name
    return out


def _check_replay_knobs(knobs: dict[str, str], files: list[str]) -> None:
    """A ``--knob`` override that no replayed case's kernel has is an error naming the kernels it belongs to
    (cases of other kernels ignore it: their kernel does not read it)."""
    from q7emu.machine.checks import knob_owners

    kernels = set(_case_kernels(files).values())
    for name in knobs:
        owners = knob_owners(name)
        if kernels and not kernels & set(owners):
            raise UsageError(f"--knob {name}: belongs to {' and '.join(owners)}, but none of the {len(files)} "
                             f"case(s) replayed runs it (they run {', '.join(sorted(kernels))})")


def _check_replay_options(args: argparse.Namespace, max_diffs: int) -> None:
    """UsageError for ``--jobs`` < 1, ``--max-diffs`` outside 0..``max_diffs``, ``--durations`` < 0, ``--dask``
    with ``-j``, or ``--dask-timeout`` without ``--dask``."""
    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if not 0 <= args.max_diffs <= max_diffs:
        raise UsageError(f"--max-diffs must be in 0..{max_diffs} differing bytes per case, got "
                         f"{args.max_diffs} (docs/limits.md §5)")
    if args.durations is not None and args.durations < 0:
        raise UsageError(f"--durations must be >= 0, got {args.durations}")
    if args.dask is not None and args.jobs != 1:
        raise UsageError("--dask and -j: the cluster's workers run the cases; give one of them")
    if args.dask_timeout is not None and args.dask is None:
        raise UsageError("--dask-timeout applies to --dask ADDRESS")


def _selected_cases(args: argparse.Namespace, files: list[str]) -> list[str]:
    """The case files found that ``-k`` selects (all of them without ``-k``); UsageError when there are none, none
    matches or an expression does not parse."""
    from q7emu.machine import report

    if not files:
        raise UsageError("no cases found")
    try:
        selected = report.select_cases(files, args.k or [])
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not selected:
        raise UsageError(f"-k {' -k '.join(args.k)}: none of the {len(files)} case(s) found matches")
    return selected


def _replay_backend(args: argparse.Namespace) -> tuple[Any, str]:
    """(what runs the records, its name in reports): ``--program``'s ProgramBackend, assembled and checked before
    any case runs, or ``--backend``; UsageError for both."""
    if args.program is not None and args.backend != "kernel":
        raise UsageError("--program runs the program in the kernel's place: it does not combine with --backend golden")
    program = program_backend(args)
    return (program, program.name) if program is not None else (args.backend, args.backend)


def _interrupted(e: Interrupted) -> int:
    """A replay stopped by Ctrl-C: the rows of the cases that finished and a count; EXIT_INTERRUPT."""
    from q7emu.machine import report

    width = report.path_width(e.results)
    for r in e.results:
        print(report.format_case(r, None, 0, width=width))
    failed = sum(not r.ok for r in e.results)
    print(f"interrupted: {e.done} of {e.total} cases finished: {e.done - failed} passed, {failed} failed")
    return interrupted()


def cmd_replay(args: argparse.Namespace) -> int:
    """``q7emu replay``: replay every case named, one row each and a summary; exit 0 all pass, 1 a case fails,
    2 a case file is broken (bad input), 3 a replay worker died."""
    from q7emu.machine import report
    from q7emu.machine.replay import find_cases, parse_shard, replay, shard
    from q7emu.machine.workers import Interrupted

    _check_replay_options(args, report.MAX_DIFFS)
    if args.dask is not None:
        quiet_dask_logs()
    junit = _output_path(args.junit, ".xml", "--junit") if args.junit else None
    plot = _output_path(args.plot, ".png", "--plot") if args.plot else None
    if plot is not None:
        from q7emu.machine.diffmap import require_matplotlib
        require_matplotlib()                    # before any case runs
    sh = parse_shard(args.shard) if args.shard is not None else None     # "" is refused, never "no shard"
    knobs = parse_knobs(args.knob)
    backend, backend_name = _replay_backend(args)
    files = [str(p) for p in find_cases(args.paths)]
    selected = _selected_cases(args, files)
    if knobs:
        _check_replay_knobs(knobs, selected)
    n_selected = len(selected)
    if sh is not None:
        selected = shard(selected, *sh)
    t0 = time.perf_counter()
    try:
        results = replay(selected, jobs=args.jobs, knobs=knobs, backend=backend, dask=args.dask,
                         max_diffs=args.max_diffs, diff_maps=plot is not None or (args.json and args.max_diffs > 0),
                         progress=progress_choice(args), dask_timeout=args.dask_timeout)
    except Interrupted as e:                 # Ctrl-C: the cases that finished, then exit 130
        return _interrupted(e)
    seconds = time.perf_counter() - t0
    code = report.exit_status(results)
    _say_not_run(results, args.dask)
    shard_doc = None if sh is None else {"index": sh[0], "count": sh[1], "cases_selected": n_selected}
    # each result carries its own detail, computed where its case ran (docs/limits.md §5): no case is read again
    if junit is not None:
        report.write_junit(junit, results, max_diffs=args.max_diffs, backend=backend_name, seconds=seconds)
    plotted = None
    if plot is not None:
        from q7emu.machine.diffmap import plot_diff_maps

        plotted = plot_diff_maps([(report.shown(r.path), r.diff_map) for r in results if r.diff_map], str(plot))
    if args.json:
        doc = report.replay_json(results, max_diffs=args.max_diffs, backend=backend_name, knobs=knobs,
                                 jobs=args.jobs, select=args.k or [], seconds=seconds, shard=shard_doc,
                                 dask=args.dask)
        if junit is not None:
            doc["junit"] = str(junit)
        if plot is not None:
            doc["plot"] = str(plot)
        print(report.dumps(doc))
        return code
    _print_replay_text(args, results, files, n_selected, sh, seconds, junit, plot, plotted)
    return code


def _print_replay_text(args: argparse.Namespace, results: list[Any], files: list[str], n_selected: int,
                       sh: tuple[int, int] | None, seconds: float, junit: Path | None, plot: Path | None,
                       plotted: int | None) -> None:
    """replay's text report: a row per case (``-q``: the failing ones), the failing cases again above the summary,
    the summary line (counts, bytes compared, seconds), durations, and where the JUnit file and the plot went."""
    from q7emu.machine import report

    not_ok = [r for r in results if not r.ok]
    width = report.path_width(not_ok if args.quiet else results)
    for r in not_ok if args.quiet else results:       # -q: the failing cases only, with their detail
        print(report.format_case(r, None, args.max_diffs, width=width))
    if not_ok and not args.quiet and len(results) > 1:    # then once more, one row each, above the summary
        print(f"failing cases: {len(not_ok)} of {len(results)}")
        for r in not_ok:
            print("  " + report.format_case(r, None, 0, width=width).splitlines()[0])
    kinds = [report.kind(r) for r in results]
    errors = kinds.count("broken") + kinds.count("internal") + kinds.count("not_run")
    compared = sum(d.bytes_compared for r in results for d in r.regions)
    differing = sum(d.differing for r in results for d in r.regions)
    deselected = len(files) - n_selected
    print(f"{len(results)} cases: {kinds.count('pass')} passed, {kinds.count('fail')} failed"
          + (f", {errors} could not be replayed" if errors else "")
          + (f" ({kinds.count('not_run')} not run: {_not_run_reason(results)})" if "not_run" in kinds else "")
          + (f" ({deselected} deselected by -k)" if deselected else "")
          + (f" (shard {sh[0]}/{sh[1]} of {n_selected})" if sh is not None else "")
          + f"; {compared} bytes compared, {differing} differ; {seconds:.2f} s")
    if args.durations is not None:
        print(report.format_durations(results, args.durations))
    if junit is not None:
        print(f"JUnit report -> {junit}")
    if plot is not None:
        failing = sum(1 for r in results if report.kind(r) == "fail" and any(d.differing for d in r.regions))
        print(f"diff map of {plotted} failing case(s)"
              + (f" (the first {plotted} of {failing})" if failing > (plotted or 0) else "") + f" -> {plot}")


def _not_run_reason(results: list[Any]) -> str:
    """Why the first case that was not run was not run (its error without the ``not run:`` prefix), as shown."""
    from q7emu.machine import report

    first = next(r for r in results if report.kind(r) == "not_run")
    return report.shown(str(first.error)[len(report.NOT_RUN):].strip())


def _say_not_run(results: list[Any], dask: str | None) -> None:
    """One line on stderr when a farm could not run some cases (a worker of another q7emu, a lost scheduler, no
    worker left; docs/cli.md §4.2): the report still lists every case, those marked ``not run``, and the exit
    status is 2."""
    from q7emu.machine import report

    n = sum(report.kind(r) == "not_run" for r in results)
    if n:
        where = f"--dask {report.shown(dask)}: " if dask else ""
        print_error(f"{where}{n} of {len(results)} cases not run: {_not_run_reason(results)}")


def cmd_merge(args: argparse.Namespace) -> int:
    """``q7emu merge``: merge the ``replay --json`` reports of the shards of one run into one report; exit
    status as replay's over all the cases."""
    from q7emu.machine import merge, report

    junit = _output_path(args.junit, ".xml", "--junit") if args.junit else None    # checked before any read
    out = _output_path(args.output, ".json", "-o") if args.output else None
    docs = [(str(p), merge.read_report(p)) for p in args.reports]
    try:
        doc = merge.merge_reports(docs, allow_mixed=args.allow_mixed)
    except ValueError as e:
        raise UsageError(str(e)) from None
    versions = sorted({str(s["q7emu_version"]) for s in doc["shards"]} | {doc["q7emu_version"]})
    results = merge.results_of(doc)
    if junit is not None:
        report.write_junit(junit, results, backend=doc["backend"], seconds=doc["summary"]["seconds"],
                           suite="q7emu replay (merged)")
    if out is not None:
        from q7emu.fileio import atomic_write_text
        atomic_write_text(out, report.dumps(doc) + "\n")
    if args.json:
        print(report.dumps(doc))
        return int(doc["exit_code"])
    width = report.path_width(results)
    for r in results:
        print(report.format_case(r, None, 0, width=width))
    if len(versions) > 1:
        print(f"note: merged reports of q7emu {', '.join(map(report.shown, versions))} (--allow-mixed)")
    s = doc["summary"]
    print(f"{s['cases']} cases from {len(docs)} report(s): {s['passed']} passed, {s['failed']} failed"
          + (f", {s['errors']} could not be replayed" if s["errors"] else "")
          + (f" ({s['not_run']} not run)" if s.get("not_run") else "")
          + f"; {s['bytes_compared']} bytes compared, {s['bytes_differing']} differ; {s['seconds']:.2f} s "
          "of replay (the shards' sum)")
    if junit is not None:
        print(f"JUnit report -> {junit}")
    if out is not None:
        print(f"merged report -> {out}")
    return int(doc["exit_code"])


def region_arg(spec: str, option: str = "--input") -> tuple[int, int, np.ndarray]:
    """A region given as ``PARTITION:OFFSET=FILE.npy`` or ``PARTITION:OFFSET=FILE.npz:KEY``:
    (partition, byte offset, uint8 [partitions, bytes]); a 1-D array is one partition. An array of another dtype
    is an error (its bytes are not silently taken)."""
    try:
        where, src = spec.split("=", 1)
        p_text, o_text = where.split(":", 1)
        p, off = int(p_text, 0), int(o_text, 0)
    except ValueError:
        raise UsageError(f"{option} {spec!r}: expected PARTITION:OFFSET=FILE.npy or PARTITION:OFFSET=FILE.npz:KEY"
                         ) from None
    if p < 0 or off < 0:
        raise UsageError(f"{option} {spec!r}: partition and offset must be >= 0")
    import numpy as np

    from q7emu.fileio import read_array_file  # bounded reads (docs/limits.md)

    if ".npz:" in src:
        f, key = src.rsplit(":", 1)
        arr = read_array_file(f, key)
    else:
        arr = read_array_file(src)
    arr = np.asarray(arr)
    if arr.dtype != np.uint8:
        raise UsageError(f"{option} {spec!r}: the array is {arr.dtype}; case regions are uint8 bytes "
                         "[partitions, bytes] (if its bytes are what you mean, save arr.view(np.uint8))")
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise UsageError(f"{option} {spec!r}: array must be 2-D [partitions, bytes], got {arr.ndim}-D")
    return p, off, np.ascontiguousarray(arr)


def cmd_case_new(args: argparse.Namespace) -> int:
    """``q7emu case new``: build a case from a record and arrays (expected bytes given, or computed).

    Refuses (exit 2) a knob of another kernel, an input region the record does not read completely, and source
    bytes no input provides, unless ``--allow-unread``; the partition size is ``--partition-bytes`` or inferred
    from the record and the inputs, and printed."""
    from q7emu.machine.cases import build_case, save_case
    from q7emu.machine.checks import (
        bytes_read_outside,
        input_coverage,
        partition_bytes_pinned,
        record_kernel,
        source_reads,
    )

    if not 0 <= args.fill <= 255:
        raise UsageError(f"--fill {args.fill}: must be a byte value 0..255")
    if args.sbuf is not None and (args.input or args.expected):
        raise UsageError("--sbuf takes the inputs from an SBUF image: give --input / --expected or --sbuf / "
                         "--expected-sbuf, not both")
    if args.expected_sbuf is not None and args.sbuf is None:
        raise UsageError("--expected-sbuf needs --sbuf (the image before the record ran)")
    record = read_record(args.record)
    name = Path(args.out).with_suffix("").name
    if args.sbuf is not None:
        from q7emu.machine.cases import case_from_images
        from q7emu.machine.machine import load_sbuf_image

        before = load_sbuf_image(args.sbuf, args.partition_bytes)
        after = load_sbuf_image(args.expected_sbuf, before.shape[1]) if args.expected_sbuf else None
        case = case_from_images(record, args.generation, before, after, knobs=parse_knobs(args.knob),
                                note=args.note or "", name=name, backend=args.backend)
        inputs: list[tuple[int, int, np.ndarray]] = [(reg.partition, reg.offset, arr) for reg, arr in case.inputs]
        expected = [(reg.partition, reg.offset, arr) for reg, arr in case.expected] if after is not None else None
    else:
        inputs = [region_arg(s, "--input") for s in args.input or []]
        expected = [region_arg(s, "--expected") for s in args.expected] if args.expected else None
        case = build_case(record, args.generation, inputs, expected, knobs=parse_knobs(args.knob),
                          partition_bytes=args.partition_bytes, fill=args.fill, note=args.note or "",
                          name=name, backend=args.backend, allow_unread=args.allow_unread)
    path = save_case(case, args.out, compress=args.compress)
    if args.partition_bytes is not None:
        pb_key, pb_source = "given", "given"
    elif args.sbuf is not None:
        pb_key, pb_source = "image", "the width of the --sbuf image"
    elif partition_bytes_pinned(case.record, [reg for reg, _ in case.inputs], case.partition_bytes):
        pb_key, pb_source = "inferred", "inferred from the record and the input regions"
    else:
        pb_key = "default"
        pb_source = ("default: no input region pins it (every input region is at partition 0, which does not "
                     "pin the size)" if inputs else "default: no input region to infer it from")
    src = "given" if expected is not None else args.backend
    reads = source_reads(case.record, case.generation, case.partition_bytes)
    regions = [reg for reg, _ in case.inputs]
    outside = bytes_read_outside(reads, regions)
    entry = record_kernel(case.record)
    if args.json:
        print_json("case-new", {
            "case": str(path), "arrays": str(path.with_suffix(".npz")), "name": case.name,
            "generation": case.generation.name, "opcode": case.opcode, "kernel": entry.name if entry else None,
            "knobs": dict(case.knobs), "partition_bytes": case.partition_bytes,
            "partition_bytes_source": pb_key,
            "fill": case.fill, "allow_unread": args.allow_unread,
            "inputs": [{**_region_json(c.region), "bytes": c.size, "bytes_read": c.read}
                       for c in input_coverage(reads, regions)],
            "source_bytes_read": reads.nbytes if reads is not None else None,
            "source_bytes_outside_inputs": outside if reads is not None else None,
            "expected": [{**_region_json(reg), "bytes": int(arr.size)} for reg, arr in case.expected],
            "expected_bytes": case.expected_bytes, "expected_source": src})
        return EXIT_OK
    how = "given" if expected is not None else f"computed by the {src} models"
    print(f"wrote {path} (+ .npz): {len(case.inputs)} input region(s), {len(case.expected)} expected region(s), "
          f"{case.expected_bytes} expected bytes ({how}); partition_bytes=0x{case.partition_bytes:x} ({pb_source})")
    if reads is not None and not inputs:
        print(f"note: no input region: the record reads {reads.nbytes} source bytes of the fill 0x{case.fill:02x}")
    elif reads is not None and outside:
        print(f"note: the record reads {outside} source bytes no input region provides (fill 0x{case.fill:02x})")
    return EXIT_OK


def cmd_case(args: argparse.Namespace) -> int:
    """``q7emu case`` without a subcommand: a usage error."""
    raise UsageError("case: choose a subcommand (new)")


def register(sub: Subparsers) -> None:
    """Add ``run``, ``replay`` and ``case`` (with ``case new``) to the ``q7emu`` subparsers."""
    s = sub.add_parser("run", help="execute one record on an SBUF image")
    s.add_argument("record", metavar="RECORD", help="128 hex digits or a file")
    s.add_argument("--sbuf", required=True, metavar="IN.npz",
                   help="the SBUF image: an .npz (array 'sbuf') or .npy of uint8 [128, partition_bytes], or a raw dump "
                        "of 128 x partition_bytes bytes (partition 0 first) with --partition-bytes")
    s.add_argument("--partition-bytes", type=parse_partition_bytes, default=None,
                   help="SBUF bytes per partition, a multiple of 4 in 4..0x40000: needed to read a raw --sbuf dump; "
                        "an .npz / .npy image must have this width")
    s.add_argument("-o", "--output", required=True, metavar="OUT.npz",
                   help="file to write the SBUF after the run to (.npz appended when missing)")
    s.add_argument("-g", "--generation", default="MARIANA", help=f"one of {GENERATIONS} (default MARIANA)")
    s.add_argument("--knob", action="append", metavar="NAME=VALUE",
                   help=KNOB_HELP + "; only knobs of the kernel the record runs")
    s.add_argument("--backend", choices=("kernel", "golden"), default="kernel", help=_BACKEND_HELP)
    s.add_argument("--json", action="store_true", help="what ran and what it wrote, as JSON (q7emu-run)")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser(
        "replay", help="replay cases; exit 1 if any fails, 2 if a case file is broken",
        description="Replay cases and compare every expected byte. Per case: bytes compared and differing, per "
                    "expected region and partition; with --max-diffs N the first N differing bytes with their "
                    "output element and MX group and a hexdump of expected vs actual around each.")
    s.add_argument("paths", nargs="+", metavar="CASE|DIR", help="case .json (or stem) or a directory of cases")
    s.add_argument("-k", action="append", metavar="EXPRESSION",
                   help="only cases that match EXPRESSION: names combined with and, or, not and parentheses (as "
                        "pytest -k, e.g. 'nf4 and g8'); a name matches a case when it is in its path or keywords "
                        "(generation, kernel, format, g0 / g8, 0x7b, fp16, e4m3, ...; case-insensitive) or "
                        "matches one as a shell wildcard (*, ?, [..]); repeatable (any)")
    add_run_options(s, "each case")
    s.add_argument("--knob", action="append", metavar="NAME=VALUE",
                   help="override a case knob (cases whose kernel has no such knob are unaffected); " + KNOB_HELP)
    s.add_argument("--backend", choices=("kernel", "golden"), default="kernel", help=_BACKEND_HELP)
    add_program_options(s)
    s.add_argument("--max-diffs", type=int, default=1, metavar="N",
                   help="differing bytes listed per failing case, with element / MX group, values, source and "
                        "hexdump (0..1000, default 1; 0 = only the summary)")
    s.add_argument("--junit", metavar="FILE.xml", help="also write a JUnit XML report (one testcase per case)")
    s.add_argument("--durations", type=int, metavar="N", default=None,
                   help="print the N slowest cases (0 = every case)")
    s.add_argument("--json", action="store_true", help="the whole report as JSON (q7emu-replay, docs/cli.md)")
    s.add_argument("-q", "--quiet", action="store_true",
                   help="print only the failing cases (with their detail) and the summary, not a row per case")
    s.add_argument("--shard", metavar="I/N",
                   help="replay only shard I of N (1 <= I <= N) of the cases found and selected: every N-th case "
                        "from the I-th, in the order found; merge the shards' --json reports with q7emu merge")
    s.add_argument("--plot", metavar="FILE.png",
                   help="draw where the failing cases' bytes differ (partition x byte offset, expected vs actual "
                        "values; the plot extra: matplotlib)")
    s.set_defaults(func=cmd_replay)

    s = sub.add_parser(
        "merge", help="merge the --json reports of replay shards into one report",
        description="Read the q7emu-replay JSON documents of the shards of one run (replay --shard I/N --json), "
                    "check they fit together (the same backend and knobs, every shard once, no case twice) and "
                    "print one report: the cases in shard order, the summary and the exit status replay would "
                    "give for all of them. The byte-level detail (--max-diffs) stays in the shards' documents.")
    s.add_argument("reports", nargs="+", metavar="REPORT.json", help="replay --json documents, one per shard")
    s.add_argument("-o", "--output", metavar="MERGED.json", help="also write the merged document to a file")
    s.add_argument("--junit", metavar="FILE.xml", help="also write a JUnit XML report of all the cases")
    s.add_argument("--json", action="store_true", help="the merged q7emu-replay document on stdout")
    s.add_argument("--allow-mixed", action="store_true",
                   help="also merge reports made by another q7emu version (refused by default: another version may "
                        "give other verdicts); each shard's version stays in the merged report's shards")
    s.set_defaults(func=cmd_merge)

    s = sub.add_parser("case", help="build replay cases")
    csub = s.add_subparsers(dest="case_command", metavar="SUBCOMMAND", parser_class=Parser)
    c = csub.add_parser(
        "new", help="build a case from a record and arrays",
        description="Arrays: PARTITION:OFFSET=FILE.npy or PARTITION:OFFSET=FILE.npz:KEY, each a uint8 [partitions, "
                    "bytes] region (another dtype is an error). Without --expected, the expected regions are "
                    "computed by running the record on the golden models. Refused (exit 2): a knob of another "
                    "kernel; an input region the record never reads or reads only partly, or source bytes no input "
                    "provides (unless --allow-unread). The partition size is --partition-bytes or inferred from "
                    "the record's flat source address and the inputs (docs/model.md §4), and printed.")
    c.add_argument("out", metavar="OUT", help="case path (writes OUT.json and OUT.npz)")
    c.add_argument("--record", required=True, metavar="HEX|FILE")
    c.add_argument("-g", "--generation", required=True, help=GENERATIONS)
    c.add_argument("--input", action="append", metavar="P:OFF=ARRAY", help="an input region (repeatable)")
    c.add_argument("--expected", action="append", metavar="P:OFF=ARRAY", help="an expected region (repeatable)")
    c.add_argument("--knob", action="append", metavar="NAME=VALUE", help=KNOB_HELP)
    c.add_argument("--partition-bytes", type=parse_partition_bytes, default=None,
                   help="SBUF bytes per partition, a multiple of 4 in 4..0x40000 (default: inferred from the "
                        "record and the inputs, or the --sbuf image's width; 0x30000 when nothing pins it); needed "
                        "to read a raw --sbuf dump")
    c.add_argument("--allow-unread", action="store_true",
                   help="keep input bytes the record does not read (e.g. decoys between strided runs) and source "
                        "bytes no input provides (they read --fill)")
    c.add_argument("--fill", type=parse_int, default=0, help="SBUF byte value outside the inputs (default 0)")
    c.add_argument("--sbuf", metavar="BEFORE",
                   help="take the inputs from a device's SBUF image before the record ran (.npz / .npy, or a raw "
                        "dump of 128 x partition_bytes bytes with --partition-bytes): the bytes the record's source "
                        "reads, one input region per contiguous run")
    c.add_argument("--expected-sbuf", metavar="AFTER",
                   help="with --sbuf: the SBUF image after the record ran; the expected regions are the bounding "
                        "boxes the record writes, read from it (without it they are computed by --backend)")
    c.add_argument("--note", help="free-text provenance note")
    c.add_argument("--backend", choices=("golden", "kernel"), default="golden",
                   help="models that compute expected bytes when --expected is absent (default golden)")
    c.add_argument("--compress", action="store_true",
                   help="deflate the arrays (a smaller OUT.npz that costs about 5 ms per MiB to load; default: "
                        "stored, read at file speed; docs/cli.md §5)")
    c.add_argument("--json", action="store_true", help="what was written, as JSON (q7emu-case-new)")
    c.set_defaults(func=cmd_case_new)
    s.set_defaults(func=cmd_case)
