"""QuantizeMX (DVE opcode 0xE3): the public API over the emulated quantize body.

``quantize_mx`` validates every argument (q7emu.model.knobs) before any kernel code runs, then runs the
DVE quantize body built from the IVP primitives (src/_quantize_mx.pyx) over each 8-partition block.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from q7emu.kernels import _quantize_mx
from q7emu.kernels.cores import check_cores, host_threads, run_blocks
from q7emu.model.knobs import normalize_quantize_mx_args

#: max_exp per (emax knob, dst dtype) -- MODEL.md §2
MAX_EXP = {("ocp", "float8_e4m3fn"): 8, ("ocp", "float8_e5m2"): 15,
           ("alt", "float8_e4m3fn"): 7, ("alt", "float8_e5m2"): 14}


def quantize_mx(src: np.ndarray, dst_dtype: str = "float8_e4m3fn", *, scale_layout: str = "auto",
                emax: str = "ocp", underflow: str = "wrap", trace: Any = None, cores: int | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Quantize an fp16 / bf16 tile to MXFP8 exactly as the 0xE3 body does.

    Args:
        src: float16 or ml_dtypes.bfloat16 [P, F], P in {32, 64, 96, 128}, F a multiple of 4.
        dst_dtype: "float8_e4m3fn" or "float8_e5m2" (FP4 output does not exist for this op).
        scale_layout: "auto" (scatter when P > 32, else compact), "scatter" or "compact".
        emax: "ocp" (max_exp 8 / 15) or "alt" (7 / 14).
        underflow: "wrap" (uint8 subtract, as the NKI simulator) or "clamp" (at 0).
        trace: None or a q7emu trace recorder.
        cores: host threads sharing the 8-partition row blocks (None = up to the CPU count for
            large tiles; tracing runs on one). The bytes never depend on it.

    Returns:
        (data, scale): data uint32 [P, F/4], FP8 element 4j+k in byte k of word j; scale uint8
        E8M0 bytes, [P, F/4] with quadrant q's block rows at partitions 32q..32q+3 and the other
        rows 0 (scatter), or [P/8, F/4] (compact).
    """
    bits, kind, dst_dtype, knobs = normalize_quantize_mx_args(
        src, dst_dtype, {"scale_layout": scale_layout, "emax": emax, "underflow": underflow})
    check_cores(cores)
    p, f = bits.shape
    scatter = knobs["scale_layout"] == "scatter"
    data = np.zeros((p, f), dtype=np.uint8)
    scale = np.zeros((p if scatter else p // 8, f // 4), dtype=np.uint8)
    args = (kind == "bfloat16", dst_dtype, MAX_EXP[(knobs["emax"], dst_dtype)], knobs["underflow"] == "wrap", scatter)
    if trace is not None:
        raw = _quantize_mx.run(bits, data, scale, *args, trace=True, trace_window=getattr(trace, "window", None),
                               trace_ops=getattr(trace, "ops", None))
        trace.add_run(raw, kernel="quantize_mx", knobs=dict(knobs, dst_dtype=dst_dtype))
    else:
        # row block b (8 partitions) owns data rows 8b..8b+7 and one scale row (32q + b%4, or b)
        run_blocks(lambda lo, hi: _quantize_mx.run(bits, data, scale, *args, blocks=(lo, hi)),
                   p // 8, host_threads(cores, p // 8, bits.nbytes))
    return data.view("<u4").reshape(p, f // 4), scale
