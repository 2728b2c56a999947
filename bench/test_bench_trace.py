"""Cost of the trace hook: tracing off vs the compiled-out kernel, and tracing on vs off.

A TensorDequantize call runs its program: untraced, the translation (no trace code at all: the "compiled out"
baseline, run straight through the interpreter module's ``run_translated``); traced, the interpreter with the
recorder (src/trace/q7trace.pxd). Tracing off through the public API (``dequantize(..., trace=None)``) runs the
same translation; what it adds is the API's argument validation / output allocation plus the hook's Python side.

Variants (per shape):
  compiled_out     the translation alone (configured.run_translation, no API)       no trace code
  api_off          q7emu.dequantize(src, fmt, group)                  trace=None
  kernel_on        the interpreter with trace=True (run_program)      C recording + bytes copy
  api_on           q7emu.dequantize(..., trace=Recorder())            what a user calls (parsing deferred)
  api_on_parsed    api_on + recorder.trace (numpy structured arrays)

Ratios go into benchmark.extra_info and the summary test prints them. Run:
  python -m pytest bench/test_bench_trace.py --benchmark-only -s
Times are reported, never asserted.
"""
from __future__ import annotations

import _benchutil as B
import numpy as np
import pytest

from q7emu.analysis.trace import Recorder
from q7emu.kernels import configured, dequant
from q7emu.kernels.dequant import dequantize
from q7emu.kernels.extension import load_extension
from q7emu.kernels.programs import dequant_registers
from q7emu.model.knobs import dequant_out_bytes, path_name

SHAPES = {"small_8x256": (8, 256, 1, 0), "mx_8x640": (8, 640, 1, 8), "large_128x1024": (128, 1024, 1, 0)}
VARIANTS = ["compiled_out", "api_off", "kernel_on", "api_on", "api_on_parsed"]
_RESULTS: dict[tuple[str, str], float] = {}


def _inputs(shape: str):
    p, n, fmt, group = SHAPES[shape]
    src = np.random.default_rng(3).integers(0, 256, (p, n), dtype=np.uint8)
    if group:
        src[:, ::5] = 120 + src[:, ::5] % 16          # sane E8M0 scales
    dst = np.zeros((p, dequant_out_bytes(n, path_name(fmt, group))), np.uint8)
    return src, dst, fmt, group


def _fn(variant: str, src, dst, fmt, group):
    ext = load_extension(dequant.EXTENSION)
    cp = dequant.configured_program(fmt, group, {})
    if variant == "compiled_out":
        regions, offsets = dequant._regions(src, dst, 0, src.shape[0], ext.REGION_COLUMNS)
        ar = configured.registers(dequant_registers(src.shape[1]))
        return lambda: configured.run_translation(ext, cp, regions, offsets, ar)
    if variant == "api_off":
        return lambda: dequantize(src, fmt, group)
    if variant == "kernel_on":
        return lambda: dequant.run_program(ext, cp, src, dst, 0, src.shape[0], trace=True)
    if variant == "api_on":
        return lambda: dequantize(src, fmt, group, trace=Recorder())

    def parsed():
        rec = Recorder()
        dequantize(src, fmt, group, trace=rec)
        return rec.trace
    return parsed


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_trace_cost(benchmark, shape, variant):
    src, dst, fmt, group = _inputs(shape)
    fn = _fn(variant, src, dst, fmt, group)
    slow = shape.startswith("large") and variant != "compiled_out" and variant != "api_off"
    benchmark.group = f"trace-{shape}"
    benchmark.pedantic(fn, rounds=5 if slow else 50, iterations=1, warmup_rounds=1)
    if benchmark.stats is None:          # --benchmark-disable: ran once, nothing to record
        return
    _RESULTS[(shape, variant)] = benchmark.stats.stats.min
    base = _RESULTS.get((shape, "compiled_out"))
    off = _RESULTS.get((shape, "api_off"))
    if base:
        benchmark.extra_info["x_compiled_out"] = benchmark.stats.stats.min / base
    if off:
        benchmark.extra_info["x_api_off"] = benchmark.stats.stats.min / off


def test_api_hook_python(benchmark):
    """The hook's Python work on the trace=None path, alone: getattr(None, 'window'/'ops') and the test."""
    trace = None

    def hook():
        getattr(trace, "window", None)
        getattr(trace, "ops", None)
        return trace is not None
    benchmark.group = "trace-hook-python"
    benchmark.pedantic(hook, rounds=2000, iterations=10)
    if benchmark.stats is None:
        return
    _RESULTS[("hook", "python")] = benchmark.stats.stats.min


@pytest.fixture(scope="module", autouse=True)
def summary():
    """Print the figures after the module's benchmarks ran (use -s to see them; no assertions on time)."""
    yield
    if not _RESULTS:
        return
    lines = ["", "trace cost (min of rounds):"]
    for shape in SHAPES:
        r = {v: _RESULTS.get((shape, v)) for v in VARIANTS}
        if not r["compiled_out"]:
            continue
        lines.append(f"  {shape}: compiled_out {r['compiled_out'] * 1e3:.3f} ms")
        for v in VARIANTS[1:]:
            if r[v]:
                lines.append(f"    {v:<14} {r[v] * 1e3:9.3f} ms  x{r[v] / r['compiled_out']:6.2f} of compiled_out"
                             + (f"  x{r[v] / r['api_off']:6.2f} of api_off" if r["api_off"] else ""))
    if ("hook", "python") in _RESULTS:
        lines.append(f"  hook python work on the trace=None path: {_RESULTS[('hook', 'python')] * 1e9:.0f} ns per call")
    print("\n".join(lines))


if __name__ == "__main__":  # quick figures without pytest-benchmark
    for shape in SHAPES:
        args = _inputs(shape)
        for v in VARIANTS:
            fn = _fn(v, *args)
            fn()
            best = B.best_seconds(fn, 7)
            print(f"{shape:<16} {v:<14} {best * 1e3:9.3f} ms")
