#!/usr/bin/env python3
"""Replay throughput of full-size cases: cases per core-hour, batched and as one-case processes (issue 38).

Builds one full-size case per kernel path in a temporary folder with the API (``build_case`` / ``save_case``, the
format ``q7emu case new`` writes): every 0x7B TensorDequantize path (e2m1, int4, nf4 non-MX; e2m1, int4, nf4
MX group 8; e2m3 FP6) over 128 partitions with 4 MiB of output (32 KiB per partition), and QuantizeMX (0xE3)
from 2 Mi bf16 elements (128 x 16384) to e5m2. SBUF is the device's 0x30000 bytes per partition; the expected
bytes come from the golden models. Then, at each ISA level given, it measures

* batched: ``q7emu replay DIR`` of ``--copies`` cases of a path, in a child process that loads the ISA level:
  the CPU time of that process per case (``time.process_time``: every thread's, since a kernel call on a large
  tile runs on up to 8 host threads and ``time.thread_time`` would miss theirs), the least of three replays of
  the folder after a warm-up one;
* one-case processes: ``q7emu replay CASE`` as a child process, its user + sys CPU time (``os.wait4``), the median
  of ``--runs`` runs after a warm-up run; the children keep their bytecode under a temporary PYTHONPYCACHEPREFIX,
  as an installed q7emu has it (a tree run with PYTHONDONTWRITEBYTECODE=1 would compile every module on every
  start), and the same figure for a process that only imports numpy is printed first, by default and with the one
  OpenBLAS thread q7emu's CLI asks for (what no q7emu change can remove);

and prints a table with cases per core-hour beside the issue's targets (batched >= 100,000 for 0x7B, >= 50,000
for QuantizeMX; one-case processes >= 25,000) and the CPU model. CPU time, not wall time: the figures hold on a
shared, loaded host (a loaded host still moves them a little: caches and frequency). Nothing is asserted.

``--profile PATH`` prints a cProfile of the batched replay of that path's folder (top functions by own time).

``--instructions`` adds each one-case process's host instructions, counted by valgrind's callgrind over the whole
process (every thread: the interpreter's start, the imports, the case), in millions: the figure a loaded host
cannot move, where the CPU times above move with it by 10-30 %. The same count is printed first for a process that
only imports numpy. A process valgrind cannot run (an AVX encoding it does not decode) shows no figure.

Usage: ``python bench/replay_throughput.py [--isa generic,avx2] [--copies 8] [--runs 5] [--paths e2m1-g0,...]
[--keep DIR] [--profile e2m1-g0] [--instructions]``
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _benchutil import best_seconds, cpu_model  # noqa: E402

from q7emu.isa.records import make_dequant_record, make_quantize_mx_record  # noqa: E402
from q7emu.machine.cases import Case, build_case, save_case  # noqa: E402

GENERATION = "MAVERICK"
PARTITION_BYTES = 0x30000              # the device's SBUF: 128 x 192 KiB
PARTS = 128
OUT_ROW = 32768                        # output bytes per partition: 128 x 32 KiB = 4 MiB
DST_OFFSET = 0x10000
#: path name -> (fmt, group) of the 0x7B paths; "qmx-bf16" is QuantizeMX
PATHS = {"e2m1-g0": (1, 0), "int4-g0": (2, 0), "nf4-g0": (3, 0), "e2m3-g0": (4, 0),
         "e2m1-g8": (1, 8), "int4-g8": (2, 8), "nf4-g8": (3, 8), "qmx-bf16": None}
QMX_FREE = 16384                       # bf16 elements per partition: 128 x 16384 = 2 Mi
TARGET_BATCHED = {"0x7b": 100_000, "0xe3": 50_000}
TARGET_PROCESS = 25_000


def full_case(path: str, seed: int) -> Case:
    """One full-size case of ``path`` (a key of :data:`PATHS`), expected bytes from the golden models."""
    rng = np.random.default_rng(seed)
    pair = PATHS[path]
    if pair is None:
        import ml_dtypes

        rec = make_quantize_mx_record(PARTS, QMX_FREE, in_dtype=0x06, out_dtype=0x0F, src_offset=0,
                                      dst_offset=DST_OFFSET, scale_offset=DST_OFFSET + QMX_FREE, scale_pidx=4,
                                      partition_bytes=PARTITION_BYTES)
        mag = np.exp2(rng.integers(-12, 12, (PARTS // 8, QMX_FREE // 4))).repeat(8, 0).repeat(4, 1)
        x = (rng.standard_normal((PARTS, QMX_FREE)) * mag).astype(ml_dtypes.bfloat16)
        src = np.ascontiguousarray(x).view(np.uint8)
    else:
        fmt, group = pair
        in_row = OUT_ROW * 5 // 8 if group == 8 else OUT_ROW * 3 // 4 if fmt == 4 else OUT_ROW // 2
        rec = make_dequant_record(fmt, group, PARTS, in_row // 4, dst_offset=DST_OFFSET,
                                  partition_bytes=PARTITION_BYTES)
        src = rng.integers(0, 256, (PARTS, in_row), dtype=np.uint8)
        if group == 8:                 # scales near 127 (scale-first: byte 0 of each 5-byte group)
            src[:, 0::5] = rng.integers(120, 135, (PARTS, in_row // 5), dtype=np.uint8)
    return build_case(rec.encode(), GENERATION, [(0, 0, src)], knobs={}, partition_bytes=PARTITION_BYTES,
                      name=f"full_{path}", note=f"bench/replay_throughput.py: full-size {path}", backend="golden")


def build(folder: Path, paths: list[str], copies: int) -> dict[str, Path]:
    """``copies`` cases of each path (different data) under ``folder/PATH/``; path -> its folder."""
    out = {}
    for i, path in enumerate(paths):
        d = folder / path
        for c in range(copies):
            save_case(full_case(path, 1000 * i + c), d / f"case{c:02d}")
        out[path] = d
    return out


def batched_seconds(folder: Path, repeat: int = 3) -> float:
    """CPU seconds of this process per case of an in-process ``replay`` of ``folder``: the least of ``repeat``
    replays after a warm-up (imports, the extension, the file cache), whose verdicts are checked; the least, since
    other work on a shared host only ever adds to a figure."""
    from q7emu.machine.replay import replay

    results = replay([folder], progress=False)
    bad = [r for r in results if not r.ok]
    if bad:
        raise SystemExit(f"{bad[0].path}: {bad[0].status} {bad[0].error or bad[0].mismatch}")
    return best_seconds(lambda: replay([folder], progress=False), repeat, time.process_time) / len(results)


def process_seconds(case: Path | None, runs: int, env: dict[str, str]) -> float:
    """Median user + sys CPU seconds of ``q7emu replay CASE`` run as a child process ``runs`` times, after one
    warm-up run (which writes the modules' bytecode under ``env``'s PYTHONPYCACHEPREFIX, as pip does for an
    installed q7emu). ``case`` None: ``python -c "import numpy"``, what every such process pays first."""
    cmd = [sys.executable, "-m", "q7emu", "replay", str(case)] if case is not None else \
        [sys.executable, "-c", "import numpy"]
    spent = []
    for _ in range(runs + 1):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        if proc.returncode != 0:
            raise SystemExit(f"q7emu replay {case}: exit {proc.returncode}: {err.strip()[:300]}")
        spent.append(usage.ru_utime + usage.ru_stime)
    return statistics.median(spent[1:])


def process_instructions(case: Path | None, env: dict[str, str]) -> float | None:
    """Host instructions (millions) of one ``q7emu replay CASE`` child process (``case`` None: ``python -c "import
    numpy"``) under ``valgrind --tool=callgrind``, all its threads; None when valgrind is missing or cannot run it.
    Run after :func:`process_seconds`, so the bytecode is in place as an installed q7emu has it."""
    import re
    import shutil
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    cmd = [sys.executable, "-m", "q7emu", "replay", str(case)] if case is not None else \
        [sys.executable, "-c", "import numpy"]
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([valgrind, "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.%p", *cmd], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    return int(found.group(1)) / 1e6 if proc.returncode == 0 and found else None


def profile(folder: Path, top: int = 25) -> None:
    """Print the functions that take the most own time in a batched replay of ``folder``."""
    import cProfile
    import pstats

    from q7emu.machine.replay import replay

    replay([folder], progress=False)
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    results = replay([folder], progress=False)
    prof.disable()
    print(f"profile of replay {folder} ({len(results)} cases), CPU time of the process (a kernel's threads "
          "count where the main thread waits for them):")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    """Build the cases, measure, print the table; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--isa", default="generic,avx2", help="ISA levels, comma-separated (Q7EMU_ISA values)")
    ap.add_argument("--copies", type=int, default=8, help="cases per path in the batched folder")
    ap.add_argument("--runs", type=int, default=5, help="one-case processes per path (median)")
    ap.add_argument("--paths", default=",".join(PATHS), help="paths, comma-separated: " + ", ".join(PATHS))
    ap.add_argument("--keep", help="build the cases in this folder (kept; reused when it holds them)")
    ap.add_argument("--no-process", action="store_true", help="skip the one-case processes")
    ap.add_argument("--profile", metavar="PATH", help="print a profile of the batched replay of one path")
    ap.add_argument("--instructions", action="store_true",
                    help="also count each one-case process's host instructions with valgrind (millions)")
    args = ap.parse_args(argv)
    paths = [p for p in args.paths.split(",") if p]
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        ap.error(f"unknown path {unknown[0]!r}; known: {', '.join(PATHS)}")
    if args.profile and args.profile not in paths:
        ap.error(f"--profile: {args.profile!r} is not one of the paths measured ({', '.join(paths)})")
    with tempfile.TemporaryDirectory(prefix="q7emu-replay-bench-") as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        t0 = time.perf_counter()
        have = {p: folder / p for p in paths
                if len(list((folder / p).glob("case*.json"))) == args.copies}
        dirs = {**have, **build(folder, [p for p in paths if p not in have], args.copies)}
        print(f"cases: {len(paths)} paths x {args.copies} in {folder} ({time.perf_counter() - t0:.1f} s to build)")
        if args.profile:
            profile(dirs[args.profile])
            return 0
        print(f"CPU: {cpu_model()}; {os.cpu_count()} logical CPUs; Python {platform.python_version()}, "
              f"numpy {np.__version__}")
        print("CPU time per case (batched: one replay DIR in a process, its time.process_time per case; process: "
              "a one-case q7emu replay's user+sys, median)")
        # child processes keep their bytecode (q7emu's and numpy's) in the temporary folder, as an installed q7emu has
        # it: with PYTHONPYCACHEPREFIX set, Python reads bytecode only there
        base_env = {**os.environ, "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache")}
        base_env.pop("PYTHONDONTWRITEBYTECODE", None)
        base_env.pop("OPENBLAS_NUM_THREADS", None)     # a user's default: the CLI sets it (docs/cli.md §1)
        if not args.no_process:
            floor = process_seconds(None, args.runs, base_env)
            one = process_seconds(None, args.runs, {**base_env, "OPENBLAS_NUM_THREADS": "1"})
            print(f"a process that only imports numpy: {floor * 1e3:.1f} ms of CPU, {one * 1e3:.1f} ms with one "
                  "OpenBLAS thread as q7emu's CLI runs it (interpreter and numpy, paid by every one-case process)")
            if args.instructions:
                floor_count = process_instructions(None, {**base_env, "OPENBLAS_NUM_THREADS": "1"})
                print("  the same, in host instructions (callgrind): "
                      + (f"{floor_count:.1f} M" if floor_count is not None else "valgrind could not run it"))
        head = (f"{'ISA':8} {'path':9} {'batched ms':>10} {'cases/core-h':>13} {'target':>8} {'':6} "
                f"{'process ms':>10} {'cases/core-h':>13} {'target':>8} {'':6}"
                + (f" {'process M instr':>15}" if args.instructions else ""))
        print(head)
        print("-" * len(head))
        for isa in [s for s in args.isa.split(",") if s]:
            # the q7emu of this tree (not whichever one the venv installed), at this ISA level
            env = {**base_env, "Q7EMU_ISA": isa,
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
            code = ("import sys, json; sys.path.insert(0, sys.argv[1] + '/bench'); from replay_throughput import "
                    "batched_seconds; from pathlib import Path; "
                    "print(json.dumps([batched_seconds(Path(d)) for d in sys.argv[2:]]))")
            # the batched figures in a child that loads this ISA level (the extension is chosen once per process)
            out = subprocess.run([sys.executable, "-c", code, str(ROOT), *[str(dirs[p]) for p in paths]], env=env,
                                 check=True, capture_output=True, text=True).stdout
            per_case = json.loads(out.strip().splitlines()[-1])
            for path, sec in zip(paths, per_case):
                op = "0xe3" if PATHS[path] is None else "0x7b"
                rate, target = 3600 / sec, TARGET_BATCHED[op]
                verdict = "met" if rate >= target else "missed"
                row = f"{isa:8} {path:9} {sec * 1e3:10.1f} {rate:13,.0f} {target:8,} {verdict:6}"
                if not args.no_process:
                    psec = process_seconds(next(iter(sorted(dirs[path].glob('case*.json')))), args.runs, env)
                    prate = 3600 / psec
                    row += (f" {psec * 1e3:10.1f} {prate:13,.0f} {TARGET_PROCESS:8,} "
                            f"{'met' if prate >= TARGET_PROCESS else 'missed':6}")
                    if args.instructions:
                        count = process_instructions(next(iter(sorted(dirs[path].glob('case*.json')))), env)
                        row += f" {count:15.1f}" if count is not None else f" {'n/a':>15}"
                print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
