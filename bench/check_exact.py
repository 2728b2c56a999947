"""Exactness check: the TensorDequantize kernels (q7emu.kernels.dequant) against the golden model.

For every fmt / group / knob combination, random streams rng.integers(0, 256, (7, 4*nw*L), uint8)
(nw = 1 for 4-bit group 0, 3 for FP6, 5 for group 8; L = 37 plus a few extra lengths that
exercise the pass tails) must give identical bytes from q7emu.kernels.dequant.dequantize and
q7emu.golden.dequantize, with tracing off and on.

    python bench/check_exact.py [--seeds N]        (from the repository root, after pip install -e .)
Exit status 0 when everything matches.
"""
from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np

from q7emu import golden
from q7emu.kernels.dequant import dequantize


class _Sink:
    """Minimal trace receiver (the kernels only need .window / .ops / .add_run)."""

    window = None
    ops = None

    def __init__(self) -> None:
        self.n = 0

    def add_run(self, raw, **_kw) -> None:
        self.n += len(raw)


def combos():
    for fmt in (1, 2, 3, 4):
        for group in ((0, 8) if fmt != 4 else (0,)):
            nibs = ("low-first", "high-first") if fmt != 4 else ("low-first",)
            fp6s = ("lsb-first", "msb-first") if fmt == 4 else ("lsb-first",)
            lays = ("scale-first", "scale-last", "word-block") if group == 8 else ("scale-first",)
            scs = ("e8m0", "e8m0-nonan") if group == 8 else ("e8m0",)
            for nib, fp6, lay, sc in itertools.product(nibs, fp6s, lays, scs):
                yield fmt, group, dict(nibble_order=nib, fp6_packing=fp6, mx_layout=lay, mx_scale=sc)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--no-trace", action="store_true", help="skip the traced runs")
    args = ap.parse_args(argv)
    bad = 0
    n = 0
    for fmt, group, knobs in combos():
        nw = 5 if group == 8 else (3 if fmt == 4 else 1)
        for seed in range(args.seeds):
            rng = np.random.default_rng(1000 * fmt + 100 * group + seed)
            for length in (37, 1, 2, 3, 16, 17):
                src = rng.integers(0, 256, (7, 4 * nw * length), np.uint8)
                want = golden.dequantize(src, fmt, group, **knobs)
                runs = [("notrace", None)] + ([] if args.no_trace or length != 37 else [("trace", _Sink())])
                for label, tr in runs:
                    got = dequantize(src, fmt, group, trace=tr, **knobs)
                    n += 1
                    if got.shape != want.shape or not np.array_equal(got, want):
                        bad += 1
                        idx = np.argwhere(got != want) if got.shape == want.shape else []
                        print(f"MISMATCH fmt={fmt} group={group} {knobs} seed={seed} len={length} {label}: "
                              f"{len(idx)} bytes differ, first {idx[:3].tolist()}")
    print(f"check_exact: {n} runs, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
