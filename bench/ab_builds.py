"""Same-process A/B of the kernels against another build of q7emu (docs/build.md §3.2).

    python bench/ab_builds.py BASE_DIR [--levels generic,avx2] [--rounds N] [--trace] [--cpu] [--json]

BASE_DIR holds the other build's kernel extension modules (a copy of an earlier checkout's built
``q7emu/kernels/_program*.so``, e.g. ``mkdir -p build/ab-base && cp q7emu/kernels/*.so build/ab-base/`` before the
change; build/ is not tracked). A base whose translation tables differ from this checkout's (another set of
translations: their indices differ) also needs its configuration table beside the modules (``cp
q7emu/kernels/programs/configurations_gen.py build/ab-base/``): its runs then take their translations' indices and
immediates from it. For every ISA level this CPU runs and both builds
hold, each path of bench/summary.py is run through the public API (``dequantize`` / ``quantize_mx``, one core,
trace off) with this build's module and with the base's, timed alternately in one process (so a drifting machine
load slows both alike), and the bytes of the two are compared. Prints the median times and the ratio new /
base (> 1: this build is faster). Nothing is asserted. ``--trace`` times traced runs instead (a
``q7emu.analysis.trace.Recorder`` in memory, on the first 8 partitions of each dequantize input and 32 of
QuantizeMX's, its smallest tile) and compares the trace bytes as well as the output.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import summary  # noqa: E402

from q7emu.kernels import configured, dequant, extension, quantize_mx  # noqa: E402

P = summary.P


def import_file(name: str, path: Path) -> ModuleType:
    """The module in file ``path`` (an extension module or Python source), imported under ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def load_base(base: Path, name: str, level: str) -> ModuleType | None:
    """The base build's extension module ``name`` at ``level`` (None when the base holds no such file)."""
    short = name.rsplit(".", 1)[-1]
    mod = short if level == extension.BASELINE else f"{short}_{level}"
    files = sorted(base.glob(f"{mod}.*.so")) + sorted(base.glob(f"{mod}.so"))
    return import_file(f"q7emu.kernels.{mod}", files[0]) if files else None


def load_base_configurations(base: Path) -> ModuleType | None:
    """The base's configurations_gen module (its CONFIGURATIONS and DATA_SECTIONS), None when the base holds none."""
    path = base / "configurations_gen.py"
    return import_file("ab_base_configurations_gen", path) if path.is_file() else None


def same_arrays(x: object, y: object) -> bool:
    """Whether two outputs (an array, or nested tuples of arrays) hold the same shapes and bytes."""
    if isinstance(x, tuple) or isinstance(y, tuple):
        return (isinstance(x, tuple) and isinstance(y, tuple) and len(x) == len(y)
                and all(same_arrays(a, b) for a, b in zip(x, y)))
    return bool(np.array_equal(x, y))


def paths(traced: bool = False) -> list[tuple[str, object]]:
    """(name, fn()) of every path: the dequant combinations and QuantizeMX bf16 / fp16 (e4m3). With ``traced``
    each call records a trace of its first 8 partitions and returns (output, trace bytes)."""
    rows = 8 if traced else None

    def call(fn, *args, **kw):
        if not traced:
            return fn(*args, **kw)
        from q7emu.analysis.trace import Recorder
        rec = Recorder()
        out = fn(*args, trace=rec, **kw)
        blocks = b"".join(block for run in rec.run_blocks for block in run) + rec.raw
        return out, np.frombuffer(blocks, np.uint8)

    out = []
    for fmt, group in summary.COMBOS:
        src = summary.dequant_src(fmt, group)[:rows]
        out.append((f"{summary.FMT[fmt]}-g{group}",
                    lambda s=src, f=fmt, g=group: call(dequant.dequantize, s, f, g, cores=1)))
    xb = summary.qmx_src()[:None if rows is None else 32]
    xh = summary.qmx_fp16_src()[:None if rows is None else 32]
    out.append(("quantize_mx bf16", lambda: call(quantize_mx.quantize_mx, xb, cores=1)))
    out.append(("quantize_mx fp16", lambda: call(quantize_mx.quantize_mx, xh, cores=1)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", type=Path, help="directory holding the other build's kernel .so files")
    ap.add_argument("--levels", default=None, help="comma list of ISA levels (default: every level this CPU runs)")
    ap.add_argument("--rounds", type=int, default=7, help="timed calls of each build per path (default 7)")
    ap.add_argument("--trace", action="store_true", help="time traced runs (8 / 32 partitions) and compare the traces")
    ap.add_argument("--cpu", action="store_true",
                    help="time the CPU time of this process (time.process_time) instead of wall time")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    a = ap.parse_args(argv)
    levels = a.levels.split(",") if a.levels else extension.cpu_levels()
    rows = []
    todo = paths(a.trace)
    tables = {"new": (configured.CONFIGURATIONS, configured.DATA_SECTIONS, configured._configured)}
    base_tables = load_base_configurations(a.base)
    tables["base"] = tables["new"] if base_tables is None else (base_tables.CONFIGURATIONS,
                                                                 base_tables.DATA_SECTIONS, {})
    for level in levels:
        new_d = new_q = extension.load_extension(dequant.EXTENSION, level)
        base_d = base_q = load_base(a.base, dequant.EXTENSION, level)
        if base_d is None:
            print(f"ab_builds: {a.base} has no {level} build; skipped", file=sys.stderr)
            continue
        if base_tables is None and getattr(base_d, "TRANSLATIONS", ()) != getattr(new_d, "TRANSLATIONS", ()):
            print(f"ab_builds: {a.base}'s {level} module has other translations than this checkout's; copy that "
                  "checkout's q7emu/kernels/programs/configurations_gen.py beside its modules", file=sys.stderr)
            return 2

        def use(d: ModuleType, q: ModuleType, build: str) -> None:
            dequant._program, quantize_mx._program = d, q
            configured.CONFIGURATIONS, configured.DATA_SECTIONS, configured._configured = tables[build]

        for name, fn in todo:
            def run_new(fn=fn, d=new_d, q=new_q):
                use(d, q, "new")
                return fn()

            def run_base(fn=fn, d=base_d, q=base_q):
                use(d, q, "base")
                return fn()
            out_new, out_base = run_new(), run_base()
            same = same_arrays(out_new, out_base)
            t_new, t_base = summary.paired_times(run_new, run_base, a.rounds,
                                                 time.process_time if a.cpu else time.perf_counter)
            rows.append({"level": level, "path": name, "new_ms": t_new * 1e3, "base_ms": t_base * 1e3,
                         "new_over_base_speed": t_base / t_new, "same_bytes": bool(same)})
    if a.json:
        print(json.dumps({"format": "q7emu-ab-builds", "version": 1, "base": str(a.base), "traced": a.trace,
                          "clock": "cpu" if a.cpu else "wall",
                          "rows": rows,
                          "load_average": os.getloadavg()}))
        return 0
    print(f"same-process A/B against {a.base}{' (traced runs)' if a.trace else ''}: one core, "
          f"{'CPU' if a.cpu else 'wall'} time, median of "
          f"{a.rounds} alternating calls "
          f"(load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})")
    print(f"{'level':8s} {'path':17s} {'new ms':>9s} {'base ms':>9s} {'speed new/base':>15s} {'same bytes':>10s}")
    for r in rows:
        print(f"{r['level']:8s} {r['path']:17s} {r['new_ms']:9.2f} {r['base_ms']:9.2f} "
              f"{r['new_over_base_speed']:14.2f}x {'yes' if r['same_bytes'] else 'NO':>10s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
