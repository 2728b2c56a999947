"""Golden model of QuantizeMX (opcode 0xE3, DVE): docs/model.md §2 / docs/firmware.md §3.4 in plain numpy.

Independent of the Cython kernels: it shares only the argument rules (:mod:`q7emu.model.knobs`) and the
model constants (:mod:`q7emu.model.tables`: MAX_EXP, MAX_VAL, re-exported here, views of the format table); the
values are computed by :mod:`q7emu.golden.formats`' own encoders.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from q7emu.golden import formats
from q7emu.model.dtypes import Fp8Arg
from q7emu.model.knobs import Emax, Nonfinite, ScaleLayout, SrcFormat, Underflow, normalize_quantize_mx_args

#: max_exp per (emax knob, dst dtype) and the clip limit per dst dtype: model data (q7emu.model.tables)
from q7emu.model.tables import MAX_EXP, MAX_VAL

__all__ = ["quantize_mx", "MAX_EXP", "MAX_VAL", "block_scales", "block_max_exponents", "scale_byte",
           "divisor_exponent", "scatter_rows", "pack_x4"]



#: source bytes (all partitions together) the golden model converts at a time (docs/limits.md §5)
BLOCK_BYTES = 1 << 18


def _quantize_block(bits: np.ndarray, kind: str, dst: str, knobs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(FP8 codes uint8 [P, w], E8M0 scale bytes uint8 [P/8, w/4]) of the columns ``bits`` [P, w] (w % 4 == 0)."""
    x32 = upcast_bits(bits, kind)
    max_exp = MAX_EXP[(knobs["emax"], dst)]
    max_val = MAX_VAL[dst]
    m = block_max_exponents(x32)                                          # [P/8, w/4]
    scales = scale_byte(m, max_exp, knobs["underflow"])
    div = divisor_exponent(m, max_exp, knobs["underflow"])
    full = np.repeat(np.repeat(div, 8, axis=0), 4, axis=1)                # [P, w]
    with np.errstate(invalid="ignore"):       # a signalling NaN sets the invalid flag widening; it stays a NaN
        x = x32.astype(np.float64)
    q = np.clip(x * np.ldexp(1.0, 127 - full), -max_val, max_val)        # exact; NaN passes
    nan = np.isnan(x)
    codes = formats.FP8_ENCODERS[dst](q, saturate=True)
    nan_code = formats.FP8_NAN[dst]
    signed_nan = np.uint8(nan_code) | np.where(np.signbit(x), np.uint8(0x80), np.uint8(0))
    codes = np.where(nan, signed_nan, codes).astype(np.uint8)
    if knobs["nonfinite"] == "ocp":
        # OCP v1.0 §6.3 read literally: max|V| is Inf or NaN, so the shared scale X is NaN (E8M0 0xFF)
        # and every V_i / X is NaN
        bad = m == 255
        scales = np.where(bad, np.uint8(0xFF), scales).astype(np.uint8)
        codes = np.where(np.repeat(np.repeat(bad, 8, axis=0), 4, axis=1), np.uint8(nan_code), codes)
    return codes, scales


def upcast_bits(bits: np.ndarray, kind: str) -> np.ndarray:
    """uint16 fp16 / bf16 bit patterns [P, F] -> float32 values (exact)."""
    return formats.decode_fp16(bits) if kind == "float16" else formats.decode_bf16(bits)


def block_max_exponents(x32: np.ndarray) -> np.ndarray:
    """float32 [P, F] -> int64 [P/8, F/4]: m, the largest fp32 biased exponent field
    e = (bits >> 23) & 0xFF of each 8-partition x 4-element block (255 when the block holds a NaN or an
    Inf; 0 for a block of zeros and fp32 subnormals, i.e. bf16 subnormals)."""
    p, f = x32.shape
    e = ((x32.view(np.uint32) >> 23) & 0xFF).astype(np.int64)
    m: np.ndarray = e.reshape(p // 8, 8, f // 4, 4).max(axis=(1, 3))
    return m


def scale_byte(m: np.ndarray, max_exp: int, underflow: Underflow) -> np.ndarray:
    """Block maxima m (int) -> the stored E8M0 scale byte (uint8), docs/model.md §2 step 2.

    ``wrap`` / ``unwrapped-data``: (m - max_exp) mod 256 (uint8 arithmetic); ``clamp`` /
    ``unclamped-data``: clip(m - max_exp, 0, 255)."""
    d = m - max_exp
    s = d % 256 if underflow in ("wrap", "unwrapped-data") else np.clip(d, 0, 255)
    return s.astype(np.uint8)


def divisor_exponent(m: np.ndarray, max_exp: int, underflow: Underflow) -> np.ndarray:
    """Block maxima m (int) -> int64 k such that the block's data is divided by 2^(k - 127)
    (docs/model.md §2 step 3): the stored byte under ``wrap`` / ``clamp``, the true m - max_exp (negative
    when m < max_exp) under ``unclamped-data`` / ``unwrapped-data``."""
    if underflow in ("unclamped-data", "unwrapped-data"):
        return (m - max_exp).astype(np.int64)
    return scale_byte(m, max_exp, underflow).astype(np.int64)


def block_scales(x32: np.ndarray, max_exp: int, underflow: Underflow) -> np.ndarray:
    """float32 [P, F] -> compact E8M0 scale bytes uint8 [P/8, F/4] (``nonfinite=sim``).

    e = (fp32 bits >> 23) & 0xFF; m = max over each 8-partition x 4-element block;
    ``wrap`` / ``unwrapped-data``: (m - max_exp) mod 256 (uint8 arithmetic); ``clamp`` /
    ``unclamped-data``: max(m - max_exp, 0).
    """
    return scale_byte(block_max_exponents(x32), max_exp, underflow)


def scatter_rows(nrows: int) -> np.ndarray:
    """Partition of compact scale row i in the scatter layout: (i // 4) * 32 + i % 4."""
    i = np.arange(nrows)
    return (i // 4) * 32 + i % 4


def pack_x4(codes: np.ndarray) -> np.ndarray:
    """uint8 [P, F] -> uint32 [P, F/4] with element 4j+k in byte k (explicit little-endian)."""
    p, f = codes.shape
    c = codes.reshape(p, f // 4, 4).astype(np.uint32)
    return (c[..., 0] | (c[..., 1] << 8) | (c[..., 2] << 16) | (c[..., 3] << 24)).astype(np.uint32)


def quantize_mx(src: Any, dst_dtype: Fp8Arg = "float8_e4m3fn", *, scale_layout: ScaleLayout = "auto",
                emax: Emax = "ocp", underflow: Underflow = "wrap", nonfinite: Nonfinite = "sim",
                src_format: SrcFormat | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Golden QuantizeMX.

    Parameters
    ----------
    src : float16 or bfloat16 [P, F], P in {32, 64, 96, 128}, F a positive multiple of 4; with ``src_format``
        ("float16" / "bfloat16"), uint16 [P, F] holding those bit patterns.
    dst_dtype : "float8_e4m3fn" or "float8_e5m2".
    scale_layout : "auto" (scatter if P > 32 else compact), "scatter" or "compact".
    emax : "ocp" (max_exp 8 / 15) or "alt" (7 / 14).
    underflow : what a block whose largest exponent field m is below max_exp stores and divides by
        (docs/model.md §2): "wrap" (byte (m - max_exp) mod 256, data divided by that byte's power of two),
        "clamp" (byte max(m - max_exp, 0), likewise), "unclamped-data" (byte as clamp, data divided by
        the true 2^(m - max_exp - 127)) or "unwrapped-data" (byte as wrap, data divided by the true power).
    nonfinite : "sim" (a NaN / Inf takes part in the maximum as field 255; Inf clips, NaN stays NaN) or
        "ocp" (a block holding any NaN or Inf gets scale byte 0xFF and every element the format's
        positive NaN, E4M3 0x7F / E5M2 0x7E).

    Returns
    -------
    data : uint32 [P, F/4], FP8 element 4j+k of row p in byte k of data[p, j].
    scale : uint8 E8M0, [P, F/4] (scatter: compact row i at partition (i//4)*32 + i%4, other
        rows 0) or [P/8, F/4] (compact).

    Each element is q = clip(x / 2^(k-127), -max_val, max_val), k the block's divisor exponent
    (:func:`divisor_exponent`), computed exactly in float64 (x is a float32, the divisor a power of two
    in [2^-142, 2^128]: no float64 overflow or underflow) and rounded once RNE to FP8. NaN keeps its sign
    (E4M3 0x7F / 0xFF, E5M2 0x7E / 0xFE); ±Inf clips to ±max_val (``nonfinite=sim``).
    """
    bits, kind, dst, knobs = normalize_quantize_mx_args(
        src, dst_dtype, dict(scale_layout=scale_layout, emax=emax, underflow=underflow, nonfinite=nonfinite),
        src_format)
    p, f = bits.shape
    # in column blocks of whole 4-element blocks, BLOCK_BYTES of source at a time: the float64 temporaries are tens
    # of bytes per element (a full SBUF at once peaked at 1 GB; docs/limits.md §5)
    width = max(4, BLOCK_BYTES // (2 * p) // 4 * 4)
    data = np.empty((p, f // 4), dtype=np.uint32)
    scales = np.empty((p // 8, f // 4), dtype=np.uint8)
    for c0 in range(0, f, width):
        codes, scales[:, c0 // 4:(c0 + width) // 4] = _quantize_block(bits[:, c0:c0 + width], kind, dst, knobs)
        data[:, c0 // 4:(c0 + width) // 4] = pack_x4(codes)
    if knobs["scale_layout"] == "compact":
        scale_out = scales
    else:
        scale_out = np.zeros((p, f // 4), dtype=np.uint8)
        scale_out[scatter_rows(p // 8)] = scales
    return np.ascontiguousarray(data), np.ascontiguousarray(scale_out)
