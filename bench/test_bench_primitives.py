"""IVP primitives: ns per 512-bit op, three ways, none of them a C micro-benchmark module.

1. test_wrapper   one q7emu.primitives.ivp.<op>(...) call from Python on operands built from the op table
                  (ivp.example_args), timed by pytest-benchmark. This is what a
                  Python user of the primitive library pays; the Python call, argument validation and
                  the numpy <-> vec_t conversions dominate (microseconds), the primitive itself is ns.
1b. test_c_loop  q7emu.primitives._ivp.time_op(op) for every op of the op table it covers (the register-to-register
                  signatures): the primitive called through the table's typed function pointer in a nogil C
                  loop (src/primitives/_ivp.pyx). Caveat: ultn_2xf32t / mul*4ta* carry a partial-store
                  dependency the loop adds; the kernel figures below are the representative ones.
2. test_numpy     the same lane operation as a numpy one-liner on [N, 32] lanes (N = 4096 rows);
                  reported as ns per 32-lane row (one 512-bit vector's worth).
3. test_kernel_ops / test_trace_record
                  C-level estimates from the firmware kernels' instruction layer (kernel_ops.pxi), which
                  executes exactly one primitive per issued instruction: average ns per executed
                  primitive with tracing off, on with an empty window, and on recording every op; and
                  the extra ns a traced record of one particular op costs (trace_ops filter).
No time is asserted.
"""
from __future__ import annotations

import _benchutil as B
import numpy as np
import pytest

import q7emu.primitives.ivp as ivp
from q7emu.kernels.dequant import dequantize
from q7emu.primitives import optable

#: the representative ops of the wrapper / numpy / trace benchmarks (one per kind of lane loop the kernels
#: lean on); each is a row of the op table, whose records give the wrapper's operands
OPS = ["addnx16", "srlnx16", "sel2nx8", "sel2nx8i_s4", "bminnx16", "mulus4tan16xr16", "packvrnrnx48",
       "float16nx16t", "ultn_2xf32t", "dselnx16"]
assert set(OPS) <= set(optable.BY_NAME), set(OPS) - set(optable.BY_NAME)
#: every wrapped op of the table, in table order (the C-loop benchmark skips the ones time_op does not cover)
TABLE_OPS = [o.mnemonic for o in optable.OPS]
N = 4096


def _numpy_case(op):
    r = np.random.default_rng(3)
    a16 = r.integers(0, 1 << 16, (N, 32), dtype=np.uint16)
    b16 = r.integers(0, 1 << 16, (N, 32), dtype=np.uint16)
    a8 = r.integers(0, 256, (N, 64), dtype=np.uint8)
    b8 = r.integers(0, 256, (N, 64), dtype=np.uint8)
    s8 = r.integers(0, 256, (N, 64), dtype=np.uint8)
    if op == "addnx16":
        return lambda: a16 + b16
    if op == "srlnx16":
        sh = (b16 & 31)
        return lambda: np.where(sh < 16, a16 >> (sh & 15), 0).astype(np.uint16)
    if op == "sel2nx8":
        return lambda: np.take_along_axis(np.concatenate((a8, b8), 1), (s8 & 127).astype(np.intp), 1)
    if op == "sel2nx8i_s4":
        x = a8[:, 16:32]
        return lambda: np.stack((x >> 4, x & 15), -1).reshape(N, 32).astype(np.uint16)
    if op == "bminnx16":
        sa, sb = a16.view(np.int16), b16.view(np.int16)
        return lambda: (np.minimum(sa, sb), sa < sb)
    if op == "mulus4tan16xr16":
        acc = r.integers(-(1 << 40), 1 << 40, (N, 32))
        c = [0x4000, -3, 5, 7]

        def mac():
            pool = np.concatenate((a16, b16), 1).astype(np.int64)
            s = acc + pool[:, 0:32] * c[0] + pool[:, 1:33] * c[1] + pool[:, 2:34] * c[2] + pool[:, 3:35] * c[3]
            return ((s + (1 << 47)) & ((1 << 48) - 1)) - (1 << 47)
        return mac
    if op == "packvrnrnx48":
        acc = r.integers(-(1 << 47), 1 << 47, (N, 32))
        return lambda: (acc >> 14).astype(np.uint16)
    if op == "float16nx16t":
        x = a16.view(np.int16)
        old = b16.view(np.float16)
        m = r.random((N, 32)) < 0.5
        return lambda: np.where(m, (x.astype(np.float32) * np.float32(0.5)).astype(np.float16), old)
    if op == "ultn_2xf32t":
        fa = r.standard_normal((N, 16)).astype(np.float32)
        fb = r.standard_normal((N, 16)).astype(np.float32)
        old = r.random((N, 16)) < 0.5
        p = r.random((N, 16)) < 0.5
        return lambda: np.where(p, np.isnan(fa) | np.isnan(fb) | (fa < fb), old)
    if op == "dselnx16":
        lo = (b16 & 63).astype(np.intp)
        hi = ((b16 >> 8) & 63).astype(np.intp)

        def dsel():
            pool = np.concatenate((a16, b16), 1)
            return np.take_along_axis(pool, lo, 1), np.take_along_axis(pool, hi, 1)
        return dsel
    raise KeyError(op)


@pytest.mark.parametrize("op", OPS)
def test_wrapper(benchmark, op):
    fn = getattr(ivp, op)
    args = ivp.example_args(op, seed=7)
    benchmark.group = "primitive: q7emu.primitives.ivp wrapper call (Python)"
    benchmark(fn, *args)
    t = B.median_s(benchmark)
    if t is not None:
        B.RESULTS["wrapper"][op] = t * 1e9
        benchmark.extra_info["ns_per_call"] = round(t * 1e9, 1)
        benchmark.extra_info["note"] = "Python call + argument checks + numpy conversion dominate"


@pytest.mark.parametrize("op", TABLE_OPS)
def test_c_loop(benchmark, op):
    from q7emu.primitives import _ivp
    time_op = getattr(_ivp, "time_op", None)
    if time_op is None:
        pytest.skip("q7emu.primitives._ivp.time_op not available in this build")
    benchmark.group = "primitive: C loop (q7emu.primitives._ivp.time_op)"
    ns = benchmark.pedantic(time_op, args=(op, 200000), rounds=5, warmup_rounds=1)
    if ns is None:
        pytest.skip(f"time_op does not cover {op}")
    best = min(time_op(op, 200000) for _ in range(3))
    B.RESULTS["c_loop"][op] = best
    benchmark.extra_info["ns_per_op"] = round(best, 2)


@pytest.mark.parametrize("op", OPS)
def test_numpy(benchmark, op):
    fn = _numpy_case(op)
    benchmark.group = "primitive: numpy one-liner on [4096, 32] lanes"
    benchmark(fn)
    t = B.median_s(benchmark)
    if t is not None:
        B.RESULTS["numpy"][op] = t * 1e9 / N
        benchmark.extra_info["ns_per_32_lane_row"] = round(t * 1e9 / N, 3)


@pytest.mark.parametrize("mode", ["off", "on_empty", "on_all"])
@pytest.mark.parametrize("fmt,group", B.COMBOS, ids=[B.combo_id(f, g) for f, g in B.COMBOS])
def test_kernel_ops(benchmark, fmt, group, mode):
    """Average ns per executed primitive of one kernel path (time / primitives executed)."""
    src, _, _ = B.dequant_inputs(fmt, group)
    out_row = B.OUT_ROW if mode != "on_all" else 2048
    if mode == "on_all":
        src = np.ascontiguousarray(src[:, :B.in_row_bytes(fmt, group, out_row)])
    n_ops = sum(B.kernel_op_counts(fmt, group, out_row).values()) * src.shape[0]
    benchmark.group = f"kernel ns/op {B.combo_id(fmt, group)}"
    if mode == "off":
        benchmark.pedantic(dequantize, args=(src, fmt, group), rounds=7, warmup_rounds=1)
    elif mode == "on_empty":
        benchmark.pedantic(lambda: dequantize(src, fmt, group, trace=B.TraceSink(window=(0, 0))),
                           rounds=7, warmup_rounds=1)
    else:
        benchmark.pedantic(lambda: dequantize(src, fmt, group, trace=B.TraceSink()), rounds=5, warmup_rounds=1)
    t = B.median_s(benchmark)
    if t is None:
        return
    row = B.RESULTS["kernel_ops"].setdefault(B.combo_id(fmt, group), {})
    row["ops_per_el"] = n_ops / (src.shape[0] * out_row)
    row[mode] = t * 1e9 / n_ops
    benchmark.extra_info["ns_per_executed_op"] = round(t * 1e9 / n_ops, 3)
    benchmark.extra_info["ops_executed"] = int(n_ops)


def _busiest_combo(op):
    best = None
    for fmt, group in B.COMBOS:
        c = B.kernel_op_counts(fmt, group).get(op, 0)
        if c and (best is None or c > best[2]):
            best = (fmt, group, c)
    return best


@pytest.mark.parametrize("op", OPS)
def test_trace_record(benchmark, op):
    """Extra ns per traced record of `op`: (trace on, ops=[op]) - (trace on, empty window), per record."""
    found = _busiest_combo(op)
    if found is None:
        pytest.skip(f"{op} is not issued by any dequant kernel")
    fmt, group, per_part = found
    src, _, _ = B.dequant_inputs(fmt, group)
    src = np.ascontiguousarray(src[:32])
    benchmark.group = "primitive: trace record cost in the kernels"
    base = B.best_seconds(lambda: dequantize(src, fmt, group, trace=B.TraceSink(window=(0, 0))))
    benchmark.pedantic(lambda: dequantize(src, fmt, group, trace=B.TraceSink(ops=[op])), rounds=5, warmup_rounds=1)
    t = B.median_s(benchmark)
    B.RESULTS["op_counts"][op] = per_part * 64 / B.OUT_ROW
    if t is None:
        return
    ns = (t - base) * 1e9 / (per_part * src.shape[0])
    B.RESULTS["trace_rec"][op] = ns
    benchmark.extra_info["kernel"] = B.combo_id(fmt, group)
    benchmark.extra_info["records"] = int(per_part * src.shape[0])
    benchmark.extra_info["extra_ns_per_record"] = round(ns, 2)
