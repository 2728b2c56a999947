"""pytest-benchmark suite of q7emu (not part of the default `firmware_tests` run).

    python -m pytest bench -q --benchmark-only        (from the repository root, after pip install -e .)

The tests never assert a time. Each records what it measured in _benchutil.RESULTS (and in
pytest-benchmark's extra_info); the summary tables are printed when the session finishes.
"""
from __future__ import annotations

import os

import pytest

# An idle OpenBLAS thread pool spinning on the 2-core machine steals time from the timed loops.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import _benchutil as B  # noqa: E402


def _fmt(x, spec="8.1f", none="     n/a"):
    return none if x is None else format(x, spec)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Session-finish summary (after pytest-benchmark's own tables)."""
    R = B.RESULTS
    if not any(R.values()):
        return
    w = terminalreporter.write_line
    if R["dequant"]:
        w("")
        w("TensorDequantize throughput, M output elements/s (median; output 128 x 32 KiB = 4 MiB per call)")
        paths = ["kernel", "kernel_1core", "golden", "lut", "ml_dtypes", "memcpy"]
        w(f"{'fmt-group':12s}" + "".join(f"{p:>13s}" for p in paths)
          + f"{'1core/LUT':>10s}{'kern/LUT':>10s}{'kern/gold':>10s}{'kern/mld':>10s}{'kern/mcpy':>10s}")
        for fmt, group in B.COMBOS:
            cid = B.combo_id(fmt, group)
            row = R["dequant"].get(cid, {})
            if not row:
                continue
            k = row.get("kernel")
            k1 = row.get("kernel_1core")
            ratios = [(k1 / row["lut"]) if (k1 and row.get("lut")) else None]
            ratios += [(k / row[p]) if (k and row.get(p)) else None for p in ("lut", "golden", "ml_dtypes", "memcpy")]
            w(f"{cid:12s}" + "".join(f"{_fmt(row.get(p), '13.1f', '          n/a')}" for p in paths)
              + "".join(f"{_fmt(r, '10.3f', '       n/a')}" for r in ratios))
        w("  kernel = q7emu.kernels.dequant.dequantize (trace off, partitions split over the host cores; includes "
          "argument checks and the output allocation); kernel_1core = the same with cores=1; lut = lut[codes] on "
          "pre-unpacked codes (1 byte each, no scale); ml_dtypes = "
          "codes.view(fp4/int4/fp6).astype(fp8) (no MX scale); memcpy = np.copyto of the output bytes.")
    if R["wrapper"] or R["numpy"] or R["trace_rec"]:
        w("")
        w("Primitives: ns per 512-bit op")
        w(f"{'op':18s}{'ivp wrapper':>13s}{'C loop':>9s}{'numpy/row':>11s}{'trace rec':>11s}{'uses/64 el':>12s}")
        ops = list(dict.fromkeys(list(R["wrapper"]) + list(R["numpy"])))
        for op in ops:
            w(f"{op:18s}{_fmt(R['wrapper'].get(op), '13.0f', '          n/a')}"
              f"{_fmt(R['c_loop'].get(op), '9.2f', '      n/a')}{_fmt(R['numpy'].get(op), '11.2f', '        n/a')}"
              f"{_fmt(R['trace_rec'].get(op), '11.1f', '        n/a')}"
              f"{_fmt(R['op_counts'].get(op), '12.2f', '         n/a')}")
        w("  ivp wrapper = one q7emu.primitives.ivp.<op>(...) call from Python: argument checks, numpy <-> vec_t "
          "conversion and the call overhead dominate; the C primitive is a few ns of it.")
        w("  C loop = q7emu.primitives._ivp.time_op: the primitive via a function pointer in a nogil C loop (see the "
          "caveats in test_bench_primitives.py); the kernel table below gives the in-kernel average.")
        w("  numpy/row = the same lane operation as a numpy one-liner on [N, 32] lanes (ns per 32-lane row).")
        w("  trace rec = extra ns per executed op when the trace records that op (kernel runs, trace_ops "
          "filter); uses/64 el = executions per 64 output elements in the kernel path that uses it most.")
    if R["kernel_ops"]:
        w("")
        w("Kernels: average ns per executed primitive (C, from kernel runs; time / ops executed)")
        w(f"{'fmt-group':12s}{'ops/el':>8s}{'trace off':>11s}{'on, empty':>11s}{'on, all':>10s}")
        for fmt, group in B.COMBOS:
            cid = B.combo_id(fmt, group)
            row = R["kernel_ops"].get(cid)
            if row:
                w(f"{cid:12s}{row['ops_per_el']:8.3f}{_fmt(row.get('off'), '11.2f', '        n/a')}"
                  f"{_fmt(row.get('on_empty'), '11.2f', '        n/a')}"
                  f"{_fmt(row.get('on_all'), '10.2f', '       n/a')}")
        w("  trace off = the NoTrace specialisation; on, empty = TracerP with an empty window (every op "
          "checks the window, nothing recorded); on, all = every op recorded (smaller input: 128 x 2 KiB).")
