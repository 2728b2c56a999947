"""CLI commands ``q7emu explore`` (the knob values that reproduce captured cases) and ``q7emu listing``
(a kernel as bundles of ops with provenance)."""
from __future__ import annotations

import argparse

from q7emu.cli.common import (
    EXIT_FAIL,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    Subparsers,
    UsageError,
    add_run_options,
    json_document,
    json_text,
    parse_knobs,
    print_error,
    progress_choice,
    quiet_dask_logs,
)
from q7emu.model.format_table import DEQUANT_FORMATS, FP8_FORMATS
from q7emu.model.kernels import KernelId

#: the kernels' names for --help, from their trace ids (one per registry row; q7emu.registry imports numpy and the
#: kernel modules, which --help and --version do not need)
KERNEL_NAMES = [k.kernel for k in KernelId]


def cmd_explore(args: argparse.Namespace) -> int:
    """``q7emu explore``: replay cases under knob combinations; exit 0 when one reproduces every case."""
    from q7emu.analysis.explore import explore
    from q7emu.machine.report import NOT_RUN, shown

    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if args.dask is not None and args.jobs != 1:
        raise UsageError("--dask and -j: the cluster's workers run the cases; give one of them")
    if args.dask_timeout is not None and args.dask is None:
        raise UsageError("--dask-timeout applies to --dask ADDRESS")
    if args.dask is not None:
        quiet_dask_logs()
    progress = progress_choice(args)
    res = explore(args.paths, knobs=args.knobs, jobs=args.jobs, progress=progress, dask=args.dask,
                  dask_timeout=args.dask_timeout)
    if args.json:
        print(json_text(json_document("explore", res.to_json(best=args.best)), indent=1))
    else:
        print(res.format(best=args.best))
    # a case that could not be read is bad input (2), a dead worker q7emu's own failure (3), as in replay; a case a
    # farm could not run (a worker of another q7emu, a lost scheduler) is 2, said in one line (docs/cli.md §4.2)
    if any("worker failed:" in e for e in res.errors):
        return EXIT_INTERNAL
    not_run = [e for e in res.errors if NOT_RUN in e]
    if not_run:
        reason = not_run[0].split(NOT_RUN, 1)[1].strip()
        print_error(f"--dask {shown(args.dask)}: {len(not_run)} of {len(res.cases)} cases not run: {shown(reason)}")
    if res.errors:
        return EXIT_USAGE
    return EXIT_OK if res.explained else EXIT_FAIL


#: q7emu-listing v2: a listing read off runs (entry / pass / exit of executed ops); v1 was parsed from the source
LISTING_JSON_VERSION = 2


def _print_program(args: argparse.Namespace, knobs: dict[str, str], src: str | None, dst: str | None) -> int:
    """``listing --asm``: one configuration's program as text (or its ``listing-asm`` JSON document)."""
    if args.variants:
        raise UsageError("--asm prints one configuration's program: it does not combine with --variants")
    from q7emu.analysis.listing import program

    prog = program(args.kernel, args.fmt, knobs, src_dtype=src, dst_dtype=dst)
    if args.json:
        print(json_text(json_document("listing-asm", {"kernel": args.kernel, "program": prog.name,
                                                       "text": prog.text()}), indent=1))
    else:
        print(prog.text(), end="")
    return EXIT_OK


def cmd_listing(args: argparse.Namespace) -> int:
    """``q7emu listing``: print (or dump as JSON) a kernel configuration's bundles with operands and provenance;
    ``--variants`` adds, for every other configuration, the ops in which its listing differs."""
    from q7emu.analysis.listing import all_variant_configs, build, variant_diff
    from q7emu.model.dtypes import fp8_dtype, src_dtype

    knobs = parse_knobs(args.knob, check=False)     # the listing checks them against the kernel's own knobs
    dst = fp8_dtype(args.dst_dtype, "--dst-dtype") if args.dst_dtype else None
    src = src_dtype(args.src_dtype, "--src-dtype") if args.src_dtype else None
    if args.case is not None:
        if args.kernel is not None or args.fmt or src or dst:
            raise UsageError("--case takes the kernel, format and types from the case: give no KERNEL, --fmt or "
                             "--src-dtype / --dst-dtype")
        from q7emu.analysis.listing import case_configuration
        from q7emu.machine.cases import load_case

        case = load_case(args.case)
        cfg = case_configuration(case.record, {**case.knobs, **knobs})
        args.kernel, args.fmt, knobs = cfg["kernel"], cfg.get("fmt"), cfg["knobs"]
        src, dst = cfg.get("src_dtype"), cfg.get("dst_dtype")
    elif args.kernel is None:
        raise UsageError("listing: give a KERNEL or --case CASE")
    if args.asm:
        return _print_program(args, knobs, src, dst)
    from q7emu import registry

    entry = registry.find(args.kernel)
    if entry is not None and not entry.dst_dtypes and (src or dst):
        takes_dtypes = ", ".join(e.name for e in registry.KERNELS if e.dst_dtypes)
        raise UsageError(f"--src-dtype / --dst-dtype apply to {takes_dtypes} only")
    lst = build(args.kernel, args.fmt, knobs, src_dtype=src, dst_dtype=dst)
    diffs = []
    if args.variants:
        for c in all_variant_configs(lst.kernel):
            other = build(lst.kernel, c.get("fmt"), c.get("knobs"), src_dtype=c.get("src_dtype"),
                          dst_dtype=c.get("dst_dtype"))
            if other.config != lst.config:
                diffs.append((other.config, variant_diff(lst, other)))
    if args.json:
        doc = lst.to_json()
        if args.variants:
            doc["variants"] = [{"config": c, "diff": d} for c, d in diffs]
        print(json_text(json_document("listing", doc, version=LISTING_JSON_VERSION), indent=1))
        return EXIT_OK
    print(lst.format())
    if args.variants:
        print(f"\nthe other {len(diffs)} configuration(s), each as the ops in which it differs from the one above "
              "(- this listing only, + that configuration only):")
        for c, d in diffs:
            knobs_text = " ".join(f"{k}={v}" for k, v in c.get("knobs", {}).items())
            head = " ".join(f"{k}={v}" for k, v in c.items() if k != "knobs")
            print(f"\n{head} {knobs_text}: " + ("the same ops" if not d else f"{len(d)} line(s)"))
            for line in d:
                print("  " + line)
    return EXIT_OK


def register(sub: Subparsers) -> None:
    """Add ``explore`` and ``listing`` to the ``q7emu`` subparsers."""
    s = sub.add_parser(
        "explore", help="find the knob values that reproduce captured device output (cases)",
        description="Replay every case under every combination of the model knobs that apply to it (emulated "
                    "kernels) and report the combinations that reproduce every expected byte, or the best "
                    "ones with their first mismatch; per knob, the values consistent with all cases. "
                    "Exit status 0 when some combination reproduces everything, 1 when none does.")
    s.add_argument("paths", nargs="+", metavar="CASE|DIR", help="case .json (or stem) or a directory of cases")
    s.add_argument("--knobs", nargs="+", metavar="NAME[=V1,V2]",
                   help="vary only these knobs (over these values; a bare name = all values); others keep "
                        "each case's value")
    s.add_argument("--json", action="store_true", help="the full result as JSON (q7emu-explore, docs/cli.md)")
    s.add_argument("--best", type=int, default=5, help="candidates shown when nothing reproduces (default 5)")
    add_run_options(s, "each case's knob combinations")
    s.set_defaults(func=cmd_explore)

    s = sub.add_parser(
        "listing", help="print a kernel as bundles of ops with operands and provenance",
        description="Each bundle of the kernel with its ops, operands and provenance: firmware "
                    "(docs/firmware.md §2.4 / "
                    "§3.6 place the mnemonic in this path, with the bundle address where docs/firmware.md gives one), "
                    "firmware~ (the same op in the other MAC accumulate form) or q7emu (q7emu's "
                    "reconstruction). Read off a run of the kernel for one configuration (its entry, one pass of "
                    "its main loop, its exit; docs/model.md §9.1): the options not given take their defaults; "
                    "--variants lists how every other configuration differs.")
    s.add_argument("kernel", metavar="KERNEL", nargs="?",
                   help=", ".join(KERNEL_NAMES[:-1]) + " or " + KERNEL_NAMES[-1] + " (or --case)")
    s.add_argument("--case", metavar="CASE", help="the configuration a case runs (its record's kernel, format or "
                                                  "types, and its knobs)")
    s.add_argument("--asm", action="store_true",
                   help="print the kernel's program for the configuration (docs/asm.md §6): every symbol and macro "
                        "resolved, a complete program `q7emu replay --program` and `q7emu asm run` take")
    s.add_argument("--fmt", help=f"dequant format: {DEQUANT_FORMATS[0].code}..{DEQUANT_FORMATS[-1].code} or "
                   f"{', '.join(f.short for f in DEQUANT_FORMATS)} (the decode bundles differ)")
    s.add_argument("--knob", action="append", metavar="NAME=VALUE",
                   help="model knob that decides a variant (e.g. mx_scale=e8m0, underflow=clamp); repeatable")
    s.add_argument("--src-dtype", metavar="DTYPE", help="quantize_mx input: fp16 / float16 or bf16 / bfloat16")
    s.add_argument("--dst-dtype", metavar="DTYPE",
                   help="quantize_mx output: " + " or ".join(f"{f.short} / {f.name} / {f.dtype}" for f in FP8_FORMATS))
    s.add_argument("--variants", action="store_true",
                   help="also every other configuration of the kernel, as the ops in which it differs")
    s.add_argument("--json", action="store_true", help="the listing as JSON (q7emu-listing, docs/cli.md)")
    s.set_defaults(func=cmd_listing)
