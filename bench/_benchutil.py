"""Shared inputs, reference paths and bookkeeping for the pytest-benchmark suite in bench/.

Nothing here asserts a time: the tests record what they measured in RESULTS, pytest-benchmark's
extra_info, and the summary table that bench/conftest.py prints when the session finishes.
"""
from __future__ import annotations

import platform
import struct
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np

from q7emu.golden.dequant import code_values, split_mx_groups, unpack_fp6, unpack_nibbles
from q7emu.golden.formats import encode_e4m3, encode_e5m2

PARTS = 128
OUT_ROW = 32768                      # output bytes per partition: 128 x 32 KiB = 4 MiB per run
COMBOS = [(1, 0), (2, 0), (3, 0), (4, 0), (1, 8), (2, 8), (3, 8)]
FMT_NAME = {1: "e2m1", 2: "int4", 3: "nf4", 4: "e2m3"}

# filled by the tests, printed by conftest.pytest_terminal_summary
RESULTS: dict[str, dict] = {"dequant": {}, "wrapper": {}, "c_loop": {}, "numpy": {}, "kernel_ops": {}, "trace_rec": {},
                            "op_counts": {}}


def cpu_model() -> str:
    """The host CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def best_seconds(fn: Callable[[], object], rounds: int = 5, clock: Callable[[], float] = time.perf_counter) -> float:
    """The least of ``rounds`` timings of ``fn()`` by ``clock``, in seconds (a caller that must warm fn up first
    does)."""
    best = float("inf")
    for _ in range(rounds):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def combo_id(fmt: int, group: int) -> str:
    return f"{FMT_NAME[fmt]}-g{group}"


def in_row_bytes(fmt: int, group: int, out_row: int = OUT_ROW) -> int:
    if group == 8:
        return out_row * 5 // 8          # 8 FP8 per 5 source bytes
    if fmt == 4:
        return out_row * 3 // 4          # 4 FP8 per 3 source bytes
    return out_row // 2


@cache
def dequant_inputs(fmt: int, group: int, parts: int = PARTS, out_row: int = OUT_ROW):
    """(src uint8 [P, in], codes uint8 [P, out] one code per byte, lut uint8 [16 | 64])."""
    rng = np.random.default_rng(100 * fmt + group)
    src = rng.integers(0, 256, (parts, in_row_bytes(fmt, group, out_row)), dtype=np.uint8)
    if group == 8:
        _, cb = split_mx_groups(src, "scale-first")
        codes = unpack_nibbles(cb.reshape(parts, -1), "low-first")
    elif fmt == 4:
        codes = unpack_fp6(src, "lsb-first")
    else:
        codes = unpack_nibbles(src, "low-first")
    n = 64 if fmt == 4 else 16
    enc = encode_e5m2 if fmt in (1, 2) else encode_e4m3
    lut = np.ascontiguousarray(enc(code_values(np.arange(n, dtype=np.uint8), fmt), saturate=True), dtype=np.uint8)
    return src, np.ascontiguousarray(codes, dtype=np.uint8), lut


def ml_dtypes_convert(fmt: int):
    """The ml_dtypes one-liner for fmt (codes one per byte -> FP8), or None where none applies (NF4)."""
    import ml_dtypes
    if fmt == 1:
        return lambda c: c.view(ml_dtypes.float4_e2m1fn).astype(ml_dtypes.float8_e5m2)
    if fmt == 2:
        return lambda c: c.view(ml_dtypes.int4).astype(ml_dtypes.float8_e5m2)
    if fmt == 4:
        return lambda c: c.view(ml_dtypes.float6_e2m3fn).astype(ml_dtypes.float8_e4m3fn)
    return None


class TraceSink:
    """A minimal trace receiver for q7emu.kernels.dequant.dequantize(trace=...): keeps the raw records."""

    def __init__(self, window=None, ops=None):
        self.window = window
        self.ops = ops
        self.raw = b""     # bytes or a TraceBuffer, depending on the q7emu version

    def add_run(self, raw, **_kw):
        self.raw = raw


def op_histogram(raw: bytes) -> dict[str, int]:
    """Count the records of a raw kernel trace by mnemonic (header: ..., u32 record_bytes at 8,
    char op[32] at 16; the name is NUL-terminated, so an older build's op[16] reads the same)."""
    counts: dict[str, int] = {}
    raw = memoryview(raw).cast("B")          # bytes or a q7emu TraceBuffer (buffer protocol)
    off, n = 0, len(raw)
    while off < n:
        (rec,) = struct.unpack_from("<I", raw, off + 8)
        op = bytes(raw[off + 16: off + 48]).split(b"\0", 1)[0].decode()
        counts[op] = counts.get(op, 0) + 1
        off += rec
    return counts


@cache
def kernel_op_counts(fmt: int, group: int, out_row: int = OUT_ROW) -> dict[str, int]:
    """Primitives executed per partition of out_row output bytes (from a full trace of one partition)."""
    from q7emu.kernels.dequant import dequantize
    src, _, _ = dequant_inputs(fmt, group)
    sink = TraceSink()
    dequantize(np.ascontiguousarray(src[:1, :in_row_bytes(fmt, group, out_row)]), fmt, group, trace=sink)
    return op_histogram(sink.raw)


def median_s(benchmark) -> float | None:
    """Median seconds per call of a finished benchmark (None when benchmarking is disabled)."""
    st = getattr(benchmark, "stats", None)
    if st is None:
        return None
    return float(st.stats.median)
