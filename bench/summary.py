"""Issues 12 and 25's targets in one table (docs/build.md §3.1): every kernel path against what a user would write
instead, at every ISA level, each figure beside its level's target.

    python bench/summary.py [--json] [--levels generic,avx2,avx512] [--rounds N]     (after pip install -e .)

One process, one core (``cores=1``) unless a row says otherwise. Per ISA level this CPU runs (the kernel modules
are swapped in with q7emu.kernels.extension.load_extension(name, level)) and per path:

  q7emu G out/s   output elements per second of the public API (dequantize / quantize_mx, trace off), median;
                  an untraced call runs its program's translation (docs/asm.md §9; Q7EMU_TRANSLATIONS=off: the
                  program on the interpreter)
  baseline        measured in the same process on the same output count:
                  take256   group 0 (e2m1, int4, nf4, e2m3): ``np.take(t, src)`` with t a 256-entry uint16 table
                            (one source byte -> its two FP8 bytes); for e2m3 the same call stands in (6-bit codes
                            need a 3-byte window), so its bytes are not compared
                  take64k   MX group 8: ``np.take(t, (scale << 8) | code_byte)`` with t a 64 Ki-entry uint16 table
                            (index built from the scale-first stream, in the timed call)
                  nki-numpy QuantizeMX: the NKI simulator formula (docs/firmware.md §3.4) in numpy + ml_dtypes
  ratio / target  q7emu ÷ baseline, and the level's target: avx512 2x group 0 and MX, 10x QuantizeMX (issue 12);
                  avx2 2x every path; generic 1x every path (issue 25)
  ns/prim         kernel time ÷ the primitives the kernel executes on the same input (counted by a
                  q7emu.analysis.trace.Recorder on one traced call), beside the level's target: avx512 0.5 ns,
                  avx2 2 ns, generic 4 ns (the median over the paths is what the targets count)
  same            whether the baseline's bytes equal q7emu's (a side check, not a timing)

then the two-core rows: time on one core ÷ time on two (``cores=2``) at every level, target 1.8x, on the
same few-MiB inputs (meaningful only on an otherwise idle machine: the header prints the load average).
Kernel and baseline (one core and two) are timed alternately, so a drifting load slows both. Nothing is
asserted: the figures are printed (and with --json written as one document).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

from q7emu import golden  # noqa: E402
from q7emu.analysis.trace import Recorder  # noqa: E402
from q7emu.kernels import dequant, extension, quantize_mx  # noqa: E402

P = 128
OUT_ROW = 32768                          # dequant: 128 x 32 KiB of output = 4 MiB per call
QMX_SHAPE = (128, 16384)                 # QuantizeMX: 2 Mi bf16 elements (4 MiB) per call
COMBOS = [(1, 0), (2, 0), (3, 0), (4, 0), (1, 8), (2, 8), (3, 8)]
FMT = {1: "e2m1", 2: "int4", 3: "nf4", 4: "e2m3"}
#: ratio targets per level and baseline; the ns-per-primitive target per level (issue 12 for avx512, issue 25 below)
TARGET = {"avx512": {"take256": 2.0, "take64k": 2.0, "nki-numpy": 10.0},
          "avx2": {"take256": 2.0, "take64k": 2.0, "nki-numpy": 2.0},
          "generic": {"take256": 1.0, "take64k": 1.0, "nki-numpy": 1.0}}
NS_TARGET = {"avx512": 0.5, "avx2": 2.0, "generic": 4.0}
TARGET["native"], NS_TARGET["native"] = TARGET["avx512"], NS_TARGET["avx512"]     # -march=native: avx512's targets
# the portable C bodies (what a non-x86 machine runs) beside generic's targets, for comparison: no issue sets theirs
TARGET["portable"], NS_TARGET["portable"] = TARGET["generic"], NS_TARGET["generic"]
SCALING_TARGET = 1.8


def median_time(fn, rounds: int) -> float:
    return paired_times(fn, fn, rounds)[0]


def paired_times(fa, fb, rounds: int, clock=time.perf_counter) -> tuple[float, float]:
    """Median seconds of fa and of fb, timed alternately (a, b, a, b, ...) after one warm-up call each, so
    that a machine whose load drifts (other processes on a shared host) slows both alike. ``clock``: wall time
    (default) or ``time.process_time``, the CPU time of this process, which other processes' load moves less."""
    fa()
    fb()
    ta, tb = [], []
    for _ in range(rounds):
        for fn, ts in ((fa, ta), (fb, tb)):
            t0 = clock()
            fn()
            ts.append(clock() - t0)
    return statistics.median(ta), statistics.median(tb)


# ------------------------------------------------------------------------------------------------ inputs
def dequant_src(fmt: int, group: int) -> np.ndarray:
    rng = np.random.default_rng(100 * fmt + group)
    in_row = OUT_ROW * 5 // 8 if group == 8 else (OUT_ROW * 3 // 4 if fmt == 4 else OUT_ROW // 2)
    src = rng.integers(0, 256, (P, in_row), dtype=np.uint8)
    if group == 8:                       # scale bytes around 2^0 (scale-first: byte 0 of every 5)
        src[:, ::5] = 110 + src[:, ::5] % 40
    return src


def qmx_src() -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.standard_normal(QMX_SHAPE) * np.exp2(rng.integers(-20, 20, QMX_SHAPE))
    return x.astype(ml_dtypes.bfloat16)


def qmx_fp16_src() -> np.ndarray:
    """QuantizeMX's fp16 input: :func:`qmx_src`'s values clipped to fp16's range (|x| <= 60,000), float16
    QMX_SHAPE."""
    return np.clip(qmx_src().astype(np.float32), -6e4, 6e4).astype(np.float16)


# ------------------------------------------------------------------------------------------------ baselines
def table256(fmt: int) -> np.ndarray:
    """uint16 [256]: source byte b -> its two FP8 bytes (golden, low-first nibbles)."""
    return golden.dequantize(np.arange(256, dtype=np.uint8)[None, :], fmt, 0).view(np.uint16)[0].copy()


def table64k(fmt: int) -> np.ndarray:
    """uint16 [65536]: (scale << 8) | code byte -> the two FP8 bytes of that byte under that scale (golden)."""
    s, b = np.divmod(np.arange(65536), 256)
    groups = np.stack([s, b, b, b, b], axis=-1).astype(np.uint8).reshape(P, -1)      # scale-first groups
    out = golden.dequantize(groups, fmt, 8).reshape(65536, 8)
    return np.ascontiguousarray(out[:, :2]).view(np.uint16)[:, 0].copy()


def take256(table: np.ndarray, src: np.ndarray) -> np.ndarray:
    return np.take(table, src)


def take64k(table: np.ndarray, src: np.ndarray) -> np.ndarray:
    v = src.reshape(src.shape[0], -1, 5)
    idx = (v[:, :, :1].astype(np.uint16) << 8) | v[:, :, 1:]
    return np.take(table, idx)


def nki_numpy(x: np.ndarray, dst: str = "float8_e4m3fn") -> tuple[np.ndarray, np.ndarray]:
    """The NKI simulator's QuantizeMX formula (docs/firmware.md §3.4) as a user writes it in numpy."""
    max_exp, max_val = {"float8_e4m3fn": (8, 448.0), "float8_e5m2": (15, 57344.0)}[dst]
    p, f = x.shape
    x32 = x.astype(np.float32)
    e = (x32.view(np.uint32) >> 23) & 0xFF
    s = e.reshape(p // 8, 8, f // 4, 4).max(axis=(1, 3)).astype(np.uint8) - np.uint8(max_exp)   # uint8 wrap
    q = x32.reshape(p // 8, 8, f // 4, 4) / np.exp2(s.astype(np.float32) - 127)[:, None, :, None]
    data = np.clip(q, -max_val, max_val).reshape(p, f).astype(getattr(ml_dtypes, dst)).view(np.uint32)
    scale = np.zeros((p, f // 4), np.uint8)
    rows = [32 * qd + r for qd in range(p // 32) for r in range(4)]
    scale[rows] = s
    return data, scale


# ------------------------------------------------------------------------------------------------ kernels
def executed(fn) -> int:
    """Primitives the kernel executes in fn(trace) (a Recorder that keeps no records, only the count)."""
    rec = Recorder(skeleton=True, window=(0, 0))
    fn(rec)
    return sum(r["executed"] for r in rec.runs)


def use_level(level: str) -> None:
    """Swap the kernel modules' compiled extension (the interpreter with its translations) for the one built for
    ``level``."""
    dequant._program = extension.load_extension(dequant.EXTENSION, level)
    quantize_mx._program = dequant._program


def paths():
    """(name, kernel(cores, trace), n_out, baseline name, baseline fn, compare bytes?) of every path."""
    for fmt, group in COMBOS:
        src = dequant_src(fmt, group)
        n_out = OUT_ROW * P
        if group == 0:
            base, t = "take256", table256(fmt if fmt != 4 else 1)
            bsrc = src if fmt != 4 else dequant_src(1, 0)
            bfn, same = (lambda t=t, b=bsrc: take256(t, b)), fmt != 4
        else:
            base, t = "take64k", table64k(fmt)
            bfn, same = (lambda t=t, s=src: take64k(t, s)), True
        yield (f"{FMT[fmt]}-g{group}", (lambda c, tr=None, s=src, f=fmt, g=group: dequant.dequantize(
            s, f, g, cores=c, trace=tr)), n_out, base, bfn, same)
    x = qmx_src()
    yield ("quantize_mx bf16", (lambda c, tr=None: quantize_mx.quantize_mx(x, cores=c, trace=tr)), x.size,
           "nki-numpy", (lambda: nki_numpy(x)), True)


def same_bytes(kernel_out, base_out) -> bool:
    if isinstance(kernel_out, tuple):
        return all(np.array_equal(a, b) for a, b in zip(kernel_out, base_out))
    return np.array_equal(kernel_out.reshape(-1), np.asarray(base_out).view(np.uint8).reshape(-1))


def measure(levels: list[str], rounds: int) -> dict:
    rows, scaling = [], []
    todo = list(paths())
    for level in levels:
        use_level(level)
        for name, kfn, n_out, base, bfn, cmp in todo:
            t, tb = paired_times(lambda kfn=kfn: kfn(1), bfn, rounds)      # kernel and baseline alternately
            prims = executed(lambda tr, kfn=kfn: kfn(1, tr))
            rate, brate = n_out / t / 1e9, n_out / tb / 1e9
            rows.append({"level": level, "path": name, "q7emu_G_per_s": rate, "baseline": base,
                         "baseline_G_per_s": brate, "ratio": rate / brate,
                         "target": TARGET[level][base], "ns_per_primitive": t / prims * 1e9,
                         "ns_target": NS_TARGET[level],
                         "primitives_per_output": prims / n_out,
                         "same_bytes": same_bytes(kfn(1), bfn()) if cmp else None})
    for level in levels:
        use_level(level)
        for name, kfn, n_out, *_ in todo:
            t1, t2 = paired_times(lambda kfn=kfn: kfn(1), lambda kfn=kfn: kfn(2), rounds)
            scaling.append({"level": level, "path": name, "one_core_G_per_s": n_out / t1 / 1e9,
                            "two_core_G_per_s": n_out / t2 / 1e9, "scaling": t1 / t2,
                            "target": SCALING_TARGET, "input_MiB": None})
    return {"rows": rows, "scaling": scaling, "load_average": os.getloadavg()}


def format_table(doc: dict) -> str:
    head = (f"{'level':8s} {'path':17s} {'q7emu G/s':>9s}  {'baseline':9s} {'base G/s':>8s} {'ratio':>6s} "
            f"{'target':>6s} {'met':>4s} {'ns/prim':>7s} {'target':>6s} {'met':>4s} {'prim/out':>8s} {'same':>5s}")
    load = ", ".join(f"{x:.2f}" for x in doc.get("load_average", ()))
    out = [f"q7emu speed summary (issues 12, 25): one core, one process ({os.cpu_count()} CPUs, load average {load}; "
           f"isa levels {', '.join(sorted({r['level'] for r in doc['rows']}, key=extension.LEVELS.index))})",
           head, "-" * len(head)]
    for r in doc["rows"]:
        same = "-" if r["same_bytes"] is None else ("yes" if r["same_bytes"] else "NO")
        out.append(f"{r['level']:8s} {r['path']:17s} {r['q7emu_G_per_s']:9.3f}  {r['baseline']:9s} "
                   f"{r['baseline_G_per_s']:8.3f} {r['ratio']:5.2f}x {r['target']:5.1f}x "
                   f"{'yes' if r['ratio'] >= r['target'] else 'no':>4s} {r['ns_per_primitive']:7.2f} "
                   f"{r['ns_target']:6.1f} {'yes' if r['ns_per_primitive'] <= r['ns_target'] else 'no':>4s} "
                   f"{r['primitives_per_output']:8.3f} {same:>5s}")
    out += ["", f"{'level':8s} {'path':17s} {'1-core G/s':>10s} {'2-core G/s':>10s} {'scaling':>8s} {'target':>6s} "
                f"{'met':>4s}"]
    for s in doc["scaling"]:
        out.append(f"{s['level']:8s} {s['path']:17s} {s['one_core_G_per_s']:10.3f} {s['two_core_G_per_s']:10.3f} "
                   f"{s['scaling']:7.2f}x {s['target']:5.1f}x {'yes' if s['scaling'] >= s['target'] else 'no':>4s}")
    out.append("")
    for level in dict.fromkeys(r["level"] for r in doc["rows"]):
        ns = statistics.median(r["ns_per_primitive"] for r in doc["rows"] if r["level"] == level)
        out.append(f"median ns per executed primitive at {level}: {ns:.2f} (target {NS_TARGET[level]:.1f}: "
                   f"{'met' if ns <= NS_TARGET[level] else 'missed'})")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    ap.add_argument("--levels", help="comma-separated ISA levels (default: every level this CPU runs)")
    ap.add_argument("--rounds", type=int, default=7, help="timed calls per figure (median; default 7)")
    a = ap.parse_args(argv)
    info = extension.isa_info()
    runnable = [lv for lv in extension.LEVELS if lv in info["built"] and (lv in info["cpu"] or lv == "native")]
    levels = a.levels.split(",") if a.levels else runnable
    for lv in levels:
        extension.select_level(info["built"], env=lv)      # InvalidArgument for a level this CPU / build lacks
    doc = measure(levels, max(1, a.rounds))
    for s in doc["scaling"]:
        s["input_MiB"] = 4.0
    doc = {"format": "q7emu-bench-summary", "version": 1, "isa": info, **doc}
    print(json.dumps(doc, indent=1) if a.json else format_table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
