"""QuantizeMX (DVE opcode 0xE3): the public API over the emulated quantize body.

``quantize_mx`` validates every argument (q7emu.model.knobs) before any kernel code runs, then runs the
DVE quantize body built from the IVP primitives (src/kernels/_quantize_mx.pyx) over each 8-partition
block. The compiled extension is imported on the first call, so this module imports without a build.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from q7emu.kernels.cores import check_cores, host_threads, output_buffer, run_blocks
from q7emu.kernels.extension import cached_extension
from q7emu.kernels.tracing import TraceRecorder, run_traced
from q7emu.model.dtypes import Fp8Arg
from q7emu.model.kernels import KernelId
from q7emu.model.knobs import Emax, Nonfinite, ScaleLayout, SrcFormat, Underflow, normalize_quantize_mx_args

#: max_exp per (emax knob, dst dtype): model data (q7emu.model.tables), re-exported here
from q7emu.model.tables import MAX_EXP

__all__ = ["quantize_mx", "run_params", "listing_run", "EXTENSION", "MAX_EXP"]

#: the compiled module whose ``run()`` executes the quantize body
EXTENSION = "q7emu.kernels._quantize_mx"
#: that module once loaded (None until the first kernel call: cached_extension; tests may replace it)
_quantize_mx: Any = None


def run_params(fmt: int | None = None, group_size: int | None = None, knobs: Mapping[str, str] | None = None,
               src_dtype: str | None = None, dst_dtype: str | None = None) -> dict[str, Any]:
    """The arguments of ``_quantize_mx.run()`` these options decide, by run()'s parameter names.

    src_dtype: "float16" / "bfloat16" (or "bf16") -> ``bf16``; dst_dtype: "float8_e4m3fn" / "float8_e5m2";
    knobs (docs/model.md §2): ``emax`` with dst_dtype -> ``max_exp`` (MAX_EXP), ``underflow`` -> ``wrap`` (the
    stored byte wraps: wrap, unwrapped-data) and ``true_div`` (the data is divided by the true power of two:
    unclamped-data, unwrapped-data), ``nonfinite`` -> ``ocp_nonfinite``, a resolved ``scale_layout`` ->
    ``scatter``. Only what the options decide appears. fmt / group_size do
    not apply to QuantizeMX (every kernel module's ``run_params`` takes the same options)."""
    knobs = knobs or {}
    params: dict[str, Any] = {}
    if src_dtype is not None:
        params["bf16"] = src_dtype in ("bfloat16", "bf16")
    if dst_dtype is not None:
        params["dst_dtype"] = dst_dtype
        if "emax" in knobs:
            params["max_exp"] = MAX_EXP[(knobs["emax"], dst_dtype)]
    if "underflow" in knobs:
        params["wrap"] = knobs["underflow"] in ("wrap", "unwrapped-data")
        params["true_div"] = knobs["underflow"] in ("unclamped-data", "unwrapped-data")
    if "nonfinite" in knobs:
        params["ocp_nonfinite"] = knobs["nonfinite"] == "ocp"
    if knobs.get("scale_layout") in ("scatter", "compact"):
        params["scatter"] = knobs["scale_layout"] == "scatter"
    return params


def listing_run(passes: int, src_dtype: str, dst_dtype: str, knobs: Mapping[str, str]) -> tuple[
        Any, dict[int, str], dict[str, str]]:
    """One traced row block (8 partitions) of ``passes`` whole passes of the main loop (16 columns = 4 MX blocks
    each), compact scale layout, for the listings (q7emu.analysis.listing).

    Returns the raw full-operand trace (``run(trace=True)``), the bundle labels {bundle: label} and every label's
    note. The source values are fixed pseudo-random (a listing does not depend on data)."""
    ext = cached_extension(globals(), "_quantize_mx", EXTENSION)
    src = np.random.default_rng(7).integers(0, 1 << 16, size=(8, 16 * passes), dtype=np.uint16)
    data = np.zeros((8, 16 * passes), np.uint8)
    scale = np.zeros((1, 4 * passes), np.uint8)
    params = run_params(knobs=knobs, src_dtype=src_dtype, dst_dtype=dst_dtype)
    raw = ext.run(src, data, scale, scatter=False, trace=True, kernel_id=int(KernelId.QUANTIZE_MX), **params)
    return raw, ext.bundle_labels(), dict(ext.BUNDLE_NOTES)


def quantize_mx(src: np.ndarray, dst_dtype: Fp8Arg = "float8_e4m3fn", *, scale_layout: ScaleLayout = "auto",
                emax: Emax = "ocp", underflow: Underflow = "wrap", nonfinite: Nonfinite = "sim",
                trace: TraceRecorder | None = None,
                cores: int | None = None, src_format: SrcFormat | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Quantize an fp16 / bf16 tile to MXFP8 exactly as the 0xE3 body does.

    Args:
        src: float16 or ml_dtypes.bfloat16 [P, F], P in {32, 64, 96, 128}, F a multiple of 4; or, with
            ``src_format``, uint16 [P, F] holding those bit patterns.
        dst_dtype: "float8_e4m3fn" or "float8_e5m2" in any spelling (the type lists the lower-case ones, the
            format table's; FP4 output does not exist for this op).
        scale_layout: "auto" (scatter when P > 32, else compact), "scatter" or "compact".
        emax: "ocp" (max_exp 8 / 15) or "alt" (7 / 14).
        underflow: for blocks whose largest fp32 exponent field m is below max_exp (docs/model.md §2):
            "wrap" (uint8 subtract, as the NKI simulator), "clamp" (at 0), "unclamped-data" (byte as clamp,
            data divided by the true 2^(m - max_exp - 127)) or "unwrapped-data" (byte as wrap, true divide).
        nonfinite: "sim" (NaN / Inf take part in the block maximum as field 255) or "ocp" (a block with
            any NaN or Inf: scale byte 0xFF, every element the format's positive NaN).
        trace: None or a q7emu trace recorder.
        cores: host threads sharing the 8-partition row blocks (None = up to the CPU count for
            large tiles; tracing runs on one). The bytes never depend on it.
        src_format: None (``src``'s dtype says), or "float16" / "bfloat16": ``src`` is uint16 bit patterns of that
            format (a bf16 source without importing ml_dtypes, whose import alone takes about a second).
        The knobs' values and defaults are the knob table's (q7emu.model.knobs.KNOBS; docs/model.md §2).

    Returns:
        (data, scale): data uint32 [P, F/4], FP8 element 4j+k in byte k of word j; scale uint8
        E8M0 bytes, [P, F/4] with quadrant q's block rows at partitions 32q..32q+3 and the other
        rows 0 (scatter), or [P/8, F/4] (compact).

    Raises InvalidArgument (before any kernel code runs) or Q7Error when the extension is not built.
    """
    bits, kind, dst, knobs = normalize_quantize_mx_args(
        src, dst_dtype, {"scale_layout": scale_layout, "emax": emax, "underflow": underflow, "nonfinite": nonfinite},
        src_format)
    check_cores(cores)
    ext = cached_extension(globals(), "_quantize_mx", EXTENSION)
    p, f = bits.shape
    params = run_params(knobs=knobs, src_dtype=kind, dst_dtype=dst)
    params["kernel_id"] = int(KernelId.QUANTIZE_MX)
    data = output_buffer((p, f), traced=trace is not None)
    scale = np.zeros((p if params["scatter"] else p // 8, f // 4), dtype=np.uint8)   # scatter: rows left 0
    if trace is not None:
        run_traced(trace, lambda t, **kw: ext.run(bits, data, scale, trace=t, **kw, **params),
                   KernelId.QUANTIZE_MX.kernel, dict(knobs, dst_dtype=dst))
    else:
        # row block b (8 partitions) owns data rows 8b..8b+7 and one scale row (32q + b%4, or b)
        run_blocks(lambda lo, hi: ext.run(bits, data, scale, blocks=(lo, hi), **params),
                   p // 8, host_threads(cores, p // 8, bits.nbytes))
    return data.view("<u4").reshape(p, f // 4), scale
