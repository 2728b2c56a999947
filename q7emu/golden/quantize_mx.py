"""Golden model of QuantizeMX (opcode 0xE3, DVE): docs/model.md §2 / docs/firmware.md §3.4 in plain numpy.

Independent of the Cython kernels: it shares only the argument rules (:mod:`q7emu.model.knobs`) and the
model constants (:mod:`q7emu.model.tables`: MAX_EXP, MAX_VAL, re-exported here).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from q7emu.golden import formats
from q7emu.model.knobs import normalize_quantize_mx_args

#: max_exp per (emax knob, dst dtype) and the clip limit per dst dtype: model data (q7emu.model.tables)
from q7emu.model.tables import MAX_EXP, MAX_VAL

__all__ = ["quantize_mx", "MAX_EXP", "MAX_VAL", "block_scales", "scatter_rows", "pack_x4"]



def upcast_bits(bits: np.ndarray, kind: str) -> np.ndarray:
    """uint16 fp16 / bf16 bit patterns [P, F] -> float32 values (exact)."""
    return formats.decode_fp16(bits) if kind == "float16" else formats.decode_bf16(bits)


def block_scales(x32: np.ndarray, max_exp: int, underflow: str) -> np.ndarray:
    """float32 [P, F] -> compact E8M0 scale bytes uint8 [P/8, F/4].

    e = (fp32 bits >> 23) & 0xFF; m = max over each 8-partition x 4-element block;
    ``wrap``: (m - max_exp) mod 256 (uint8 arithmetic); ``clamp``: max(m - max_exp, 0).
    """
    p, f = x32.shape
    e = ((x32.view(np.uint32) >> 23) & 0xFF).astype(np.int64)
    m = e.reshape(p // 8, 8, f // 4, 4).max(axis=(1, 3))
    s = (m - max_exp) % 256 if underflow == "wrap" else np.maximum(m - max_exp, 0)
    return s.astype(np.uint8)


def scatter_rows(nrows: int) -> np.ndarray:
    """Partition of compact scale row i in the scatter layout: (i // 4) * 32 + i % 4."""
    i = np.arange(nrows)
    return (i // 4) * 32 + i % 4


def pack_x4(codes: np.ndarray) -> np.ndarray:
    """uint8 [P, F] -> uint32 [P, F/4] with element 4j+k in byte k (explicit little-endian)."""
    p, f = codes.shape
    c = codes.reshape(p, f // 4, 4).astype(np.uint32)
    return (c[..., 0] | (c[..., 1] << 8) | (c[..., 2] << 16) | (c[..., 3] << 24)).astype(np.uint32)


def quantize_mx(src: Any, dst_dtype: str = "float8_e4m3fn", *, scale_layout: str = "auto",
                emax: str = "ocp", underflow: str = "wrap") -> tuple[np.ndarray, np.ndarray]:
    """Golden QuantizeMX.

    Parameters
    ----------
    src : float16 or bfloat16 [P, F], P in {32, 64, 96, 128}, F a positive multiple of 4.
    dst_dtype : "float8_e4m3fn" or "float8_e5m2".
    scale_layout : "auto" (scatter if P > 32 else compact), "scatter" or "compact".
    emax : "ocp" (max_exp 8 / 15) or "alt" (7 / 14).
    underflow : "wrap" (uint8 subtraction) or "clamp" (floor at 0).

    Returns
    -------
    data : uint32 [P, F/4], FP8 element 4j+k of row p in byte k of data[p, j].
    scale : uint8 E8M0, [P, F/4] (scatter: compact row i at partition (i//4)*32 + i%4, other
        rows 0) or [P/8, F/4] (compact).

    Each element is q = clip(x / 2^(scale-127), -max_val, max_val), computed exactly in float64
    (x is a float32, the divisor a power of two in [2^-120, 2^127]: no float64 overflow or
    underflow) and rounded once RNE to FP8. NaN keeps its sign (E4M3 0x7F / 0xFF, E5M2 0x7E / 0xFE);
    ±Inf clips to ±max_val.
    """
    bits, kind, dst, knobs = normalize_quantize_mx_args(
        src, dst_dtype, dict(scale_layout=scale_layout, emax=emax, underflow=underflow))
    p, f = bits.shape
    x32 = upcast_bits(bits, kind)
    max_exp = MAX_EXP[(knobs["emax"], dst)]
    max_val = MAX_VAL[dst]
    scales = block_scales(x32, max_exp, knobs["underflow"])                   # [P/8, F/4]
    full = np.repeat(np.repeat(scales, 8, axis=0), 4, axis=1).astype(np.int64)  # [P, F]
    x = x32.astype(np.float64)
    q = np.clip(x * np.ldexp(1.0, 127 - full), -max_val, max_val)        # exact; NaN passes
    nan = np.isnan(x)
    if dst == "float8_e4m3fn":
        codes = formats.encode_e4m3(q, saturate=True)
        nan_code = formats.E4M3_NAN
    else:
        codes = formats.encode_e5m2(q, saturate=True)
        nan_code = formats.E5M2_NAN
    signed_nan = np.uint8(nan_code) | np.where(np.signbit(x), np.uint8(0x80), np.uint8(0))
    codes = np.where(nan, signed_nan, codes).astype(np.uint8)
    data = pack_x4(codes)
    if knobs["scale_layout"] == "compact":
        scale_out = scales
    else:
        scale_out = np.zeros((p, f // 4), dtype=np.uint8)
        scale_out[scatter_rows(p // 8)] = scales
    return np.ascontiguousarray(data), np.ascontiguousarray(scale_out)
