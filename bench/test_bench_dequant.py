"""TensorDequantize throughput: the kernels against golden, a numpy LUT gather, ml_dtypes and memcpy.

For every fmt x group, on 128 partitions x 32 KiB of output (4 MiB): M output elements/s of
  kernel    q7emu.kernels.dequant.dequantize (trace off; partitions split over the host's cores, as the
            firmware splits channels over POOL cores)
  kernel_1core  the same on one core (cores=1): the like-for-like figure against one-thread numpy
  golden    q7emu.golden.dequantize
  lut       lut[codes], a 16-entry (64 for FP6) uint8 table gathered by codes already unpacked to one
            byte each (the unpacking is not timed; MX scales are not applied)
  ml_dtypes codes.view(float4_e2m1fn | int4 | float6_e2m3fn).astype(float8_*) (fmt 1, 2, 4; no scale)
  memcpy    np.copyto of the 4 MiB output into a preallocated array
The paths of one combo run in that order (kernel last), so the kernel's extra_info carries the
ratios against the others. No time is asserted.
"""
from __future__ import annotations

import _benchutil as B
import numpy as np
import pytest

from q7emu import golden
from q7emu.kernels.dequant import dequantize

PATHS = ["memcpy", "lut", "ml_dtypes", "golden", "kernel_1core", "kernel"]
ROUNDS = {"golden": 3}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fmt,group", B.COMBOS, ids=[B.combo_id(f, g) for f, g in B.COMBOS])
def test_dequant(benchmark, fmt, group, path):
    src, codes, lut = B.dequant_inputs(fmt, group)
    n_out = codes.size
    benchmark.group = f"dequant {B.combo_id(fmt, group)}"
    if path == "kernel":
        fn, args = dequantize, (src, fmt, group)
    elif path == "kernel_1core":
        fn, args = (lambda s, f, g: dequantize(s, f, g, cores=1)), (src, fmt, group)
    elif path == "golden":
        fn, args = golden.dequantize, (src, fmt, group)
    elif path == "lut":
        fn, args = (lambda lt, c: lt[c]), (lut, codes)
    elif path == "ml_dtypes":
        conv = B.ml_dtypes_convert(fmt)
        if conv is None:
            pytest.skip("ml_dtypes has no NF4 type")
        fn, args = conv, (codes,)
    else:
        dst = np.empty_like(codes)
        fn, args = np.copyto, (dst, codes)
    out = benchmark.pedantic(fn, args=args, rounds=ROUNDS.get(path, 9), iterations=1, warmup_rounds=1)
    if path in ("kernel", "kernel_1core", "lut", "ml_dtypes") and out is not None and group == 0:
        # correctness side note (not a timing assertion): the non-MX LUT / ml_dtypes bytes equal the kernel's
        ref = dequantize(src, fmt, group)
        benchmark.extra_info["bytes_equal_kernel"] = bool(np.array_equal(np.asarray(out).view(np.uint8), ref))
    t = B.median_s(benchmark)
    if t is None:
        return
    rate = n_out / t / 1e6
    row = B.RESULTS["dequant"].setdefault(B.combo_id(fmt, group), {})
    row[path] = rate
    benchmark.extra_info["M_elements_per_s"] = round(rate, 1)
    benchmark.extra_info["output_bytes"] = int(n_out)
    if path in ("kernel", "kernel_1core"):
        for ref in ("lut", "golden", "ml_dtypes", "memcpy"):
            if row.get(ref):
                benchmark.extra_info[f"{path}_over_{ref}"] = round(rate / row[ref], 4)
