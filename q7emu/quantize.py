"""QuantizeMX (DVE opcode 0xE3): the public API over the emulated quantize body.

``quantize_mx`` validates every argument (q7emu.knobs) before any kernel code runs, then runs the
DVE quantize body built from the IVP primitives (src/_quantize_mx.pyx) over each 8-partition block.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import _quantize_mx
from .knobs import normalize_quantize_mx_args

#: max_exp per (emax knob, dst dtype) -- MODEL.md §2
MAX_EXP = {("ocp", "float8_e4m3fn"): 8, ("ocp", "float8_e5m2"): 15,
           ("alt", "float8_e4m3fn"): 7, ("alt", "float8_e5m2"): 14}


def quantize_mx(src: np.ndarray, dst_dtype: str = "float8_e4m3fn", *, scale_layout: str = "auto",
                emax: str = "ocp", underflow: str = "wrap", trace: Any = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Quantize an fp16 / bf16 tile to MXFP8 exactly as the 0xE3 body does.

    Args:
        src: float16 or ml_dtypes.bfloat16 [P, F], P in {32, 64, 96, 128}, F a multiple of 4.
        dst_dtype: "float8_e4m3fn" or "float8_e5m2" (FP4 output does not exist for this op).
        scale_layout: "auto" (scatter when P > 32, else compact), "scatter" or "compact".
        emax: "ocp" (max_exp 8 / 15) or "alt" (7 / 14).
        underflow: "wrap" (uint8 subtract, as the NKI simulator) or "clamp" (at 0).
        trace: None or a q7emu trace recorder.

    Returns:
        (data, scale): data uint32 [P, F/4], FP8 element 4j+k in byte k of word j; scale uint8
        E8M0 bytes, [P, F/4] with quadrant q's block rows at partitions 32q..32q+3 and the other
        rows 0 (scatter), or [P/8, F/4] (compact).
    """
    bits, kind, dst_dtype, knobs = normalize_quantize_mx_args(
        src, dst_dtype, {"scale_layout": scale_layout, "emax": emax, "underflow": underflow})
    p, f = bits.shape
    scatter = knobs["scale_layout"] == "scatter"
    data = np.zeros((p, f), dtype=np.uint8)
    scale = np.zeros((p if scatter else p // 8, f // 4), dtype=np.uint8)
    raw = _quantize_mx.run(bits, data, scale, kind == "bfloat16", dst_dtype,
                           MAX_EXP[(knobs["emax"], dst_dtype)], knobs["underflow"] == "wrap", scatter,
                           trace=trace is not None, trace_window=getattr(trace, "window", None),
                           trace_ops=getattr(trace, "ops", None))
    if trace is not None:
        trace.add_run(raw, kernel="quantize_mx", knobs=dict(knobs, dst_dtype=dst_dtype))
    return data.view("<u4").reshape(p, f // 4), scale
