#!/usr/bin/env python3
"""The whole-SBUF trace / profile measurements of issue 13, on one 128-partition MX TensorDequantize
(proc_4bit_mx_8, fmt 1 e2m1: 20 KiB in, 32 KiB out per partition, 6.36 M executed primitives), from the CLI.

    python bench/sbuf_scale_trace.py [WORKDIR]      (default: a temporary folder)

Builds the record with q7emu.isa.records.make_dequant_record and a random SBUF image (sane E8M0 scales),
then runs, each under /usr/bin/time -v when it exists (peak RSS):

  q7emu trace RECORD --sbuf S.npz -o T.q7t --no-progress
  q7emu profile RECORD --sbuf S.npz --chrome-trace C.json --no-progress

and the API ratio on 32 x 2560 B MX: q7emu.dequantize(..., trace=Recorder()) over the same call untraced, both
warm, the fastest of repeated runs in the same process. Prints one table row per target. Times are measured,
never asserted (like the rest of bench/).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from q7emu.isa.records import make_dequant_record

PARTITION_BYTES = 0x30000
IN_BYTES = 20 * 1024


def build(work: Path) -> str:
    """Write S.npz; return the record's hex."""
    rec = make_dequant_record(1, 8, 128, IN_BYTES // 4, partition_bytes=PARTITION_BYTES)
    rng = np.random.default_rng(5)
    sbuf = np.zeros((128, PARTITION_BYTES), np.uint8)
    src = rng.integers(0, 256, (128, IN_BYTES), dtype=np.uint8)
    src[:, ::5] = 120 + src[:, ::5] % 16
    sbuf[:, :IN_BYTES] = src
    np.savez(work / "S.npz", sbuf=sbuf)
    return rec.encode().hex()


def timed(argv: list[str], cwd: Path) -> tuple[float, float | None, str]:
    """(wall s, peak RSS MB or None, stdout) of one CLI run."""
    gnu_time = shutil.which("time") if Path("/usr/bin/time").exists() else None
    cmd = (["/usr/bin/time", "-v"] if gnu_time else []) + [sys.executable, "-m", "q7emu", *argv]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr[-2000:]}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    return wall, (int(m.group(1)) / 1024 if m else None), r.stdout


def api_ratio(rounds: int = 15) -> tuple[float, float]:
    """(untraced s, traced s): fastest of ``rounds`` warm runs of q7emu.dequantize on 32 x 2560 B MX."""
    import q7emu
    from q7emu.analysis.trace import Recorder

    rng = np.random.default_rng(3)
    src = rng.integers(0, 256, (32, 2560), dtype=np.uint8)
    src[:, ::5] = 120 + src[:, ::5] % 16

    from _benchutil import best_seconds

    def best(fn):
        fn()                                          # warm
        return best_seconds(fn, rounds)

    off = best(lambda: q7emu.dequantize(src, 1, 8))
    on = best(lambda: q7emu.dequantize(src, 1, 8, trace=Recorder()))
    return off, on


def main() -> None:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="q7sbuf-"))
    work.mkdir(parents=True, exist_ok=True)
    record = build(work)
    env_note = f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    t_wall, t_rss, _ = timed(["trace", record, "--sbuf", "S.npz", "-o", "T.q7t", "--no-progress"], work)
    size = (work / "T.q7t").stat().st_size
    from q7emu.analysis.trace import TraceFile
    with TraceFile(work / "T.q7t") as f:
        n = f.records
    p_wall, p_rss, _ = timed(["profile", record, "--sbuf", "S.npz", "--chrome-trace", "C.json", "--no-progress",
                              "--json"], work)
    chrome = (work / "C.json").stat().st_size
    off, on = api_ratio()
    rows = [
        ("q7emu trace RECORD --sbuf S.npz -o T.q7t, peak RSS", "<= 512 MB", f"{t_rss:.0f} MB" if t_rss else "n/a"),
        ("trace file size", "<= 64 B per op", f"{size / 1e6:.1f} MB, {size / n:.1f} B per op ({n} ops)"),
        ("trace wall time", "<= 30 s", f"{t_wall:.1f} s"),
        ("q7emu profile ... --chrome-trace, wall time", "<= 15 s",
         f"{p_wall:.1f} s (peak RSS {p_rss:.0f} MB)" if p_rss else f"{p_wall:.1f} s"),
        ("Chrome trace file", "<= 50 MB", f"{chrome / 1e6:.2f} MB"),
        ("traced / untraced, API, 32 x 2560 B MX", "<= 3x", f"{on / off:.1f}x ({on * 1e3:.2f} / {off * 1e3:.2f} ms)"),
    ]
    print(f"work dir {work} ({env_note})")
    for what, target, got in rows:
        print(f"| {what} | {target} | {got} |")


if __name__ == "__main__":
    main()
