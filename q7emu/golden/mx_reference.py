"""Public MX reference functions (plain numpy + ml_dtypes): swizzle, dequantize_mx, nc_matmul_mx.

These are references for checking, not models of a firmware path: ``nc_matmul_mx`` follows
docs/model.md §3 with a stated tolerance (the hardware's fp32 summation order is undocumented).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from q7emu.errors import InvalidArgument
from q7emu.golden import formats
from q7emu.model.knobs import QUANTIZE_MX_KNOBS, VALID_P, ScaleLayout

__all__ = ["swizzle", "dequantize_mx", "nc_matmul_mx", "gather_scales", "MX_IN_DTYPES", "SCALE_FF"]

#: element formats an MX operand may have -> (packed container dtype, decoder, bits per element)
MX_IN_DTYPES = {
    "float8_e4m3fn": (np.uint32, formats.decode_e4m3, 8),
    "float8_e5m2": (np.uint32, formats.decode_e5m2, 8),
    "float4_e2m1fn": (np.uint16, formats.decode_fp4, 4),
}

#: how :func:`dequantize_mx` reads scale byte 0xFF (docs/model.md §3): ``nan`` (OCP E8M0, the default) or
#: ``clip`` (2^127: the scale exponent clipped to +127, as AWS's ``dequantize_mx_golden``)
SCALE_FF = ("nan", "clip")


def _mx_dtype(name: Any, field: str) -> str:
    """Accept 'float8_e4m3fn' or the NKI x4 name 'float8_e4m3fn_x4' (etc.); return the element name."""
    if isinstance(name, str):
        base = name[:-3] if name.endswith("_x4") else name
        if base in MX_IN_DTYPES:
            return base
    raise InvalidArgument(field, name, f"must be one of {', '.join(MX_IN_DTYPES)} (optionally with _x4)")


def swizzle(x: Any) -> np.ndarray:
    """[M, N] -> [M/4, N*4]: out[i, 4n + k] = x[4i + k, n].

    This is the MoE wiring's ``reshaped.transpose(1, 2).reshape(M//4, N*4)`` with
    ``reshaped = x.reshape(M//4, 4, N)`` (torch ``transpose(1, 2)`` swaps the last two axes,
    numpy ``transpose(0, 2, 1)``). It "turns contiguous [32, 1] blocks into [8, 4] blocks":
    rows 32b..32b+31 of column n land in rows 8b..8b+7, columns 4n..4n+3, i.e. exactly one MX
    8-partition x 4-element block. Works for any dtype: the result keeps the input's dtype. M must be a
    multiple of 4.
    """
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    if x.ndim != 2:
        raise InvalidArgument("x.ndim", x.ndim, "swizzle takes a 2-D array [M, N]")
    m, n = x.shape
    if m % 4:
        raise InvalidArgument("x.shape[0]", m, "M must be a multiple of 4")
    return np.ascontiguousarray(x.reshape(m // 4, 4, n).transpose(0, 2, 1).reshape(m // 4, n * 4))


def gather_scales(scale: Any, partitions: int, free: int, scale_layout: ScaleLayout = "auto",
                  field: str = "scale") -> np.ndarray:
    """E8M0 scale tile -> compact uint8 [partitions/8, free].

    ``scatter`` ([partitions, free]): compact row i is read from partition (i//4)*32 + i%4;
    ``compact`` ([partitions/8, free]); ``auto`` decides by ``scale.shape[0]``.
    uint8 or ml_dtypes.float8_e8m0fnu arrays are accepted.
    """
    if not isinstance(scale, np.ndarray):
        raise InvalidArgument(field, type(scale).__name__, "must be a numpy uint8 array")
    if scale.dtype != np.uint8 and scale.dtype.name != "float8_e8m0fnu":
        raise InvalidArgument(f"{field}.dtype", str(scale.dtype), "must be uint8 or float8_e8m0fnu")
    if scale.ndim != 2:
        raise InvalidArgument(f"{field}.ndim", scale.ndim, "must be 2")
    s = scale.view(np.uint8)
    if scale_layout not in QUANTIZE_MX_KNOBS["scale_layout"]:
        raise InvalidArgument("scale_layout", scale_layout,
                              "must be one of " + ", ".join(QUANTIZE_MX_KNOBS["scale_layout"]))
    rows = partitions // 8
    if scale_layout == "auto":
        scale_layout = "scatter" if s.shape[0] == partitions else "compact"
    want = (partitions if scale_layout == "scatter" else rows, free)
    if s.shape != want:
        raise InvalidArgument(f"{field}.shape", s.shape,
                              f"{scale_layout} layout needs {want} (or [{rows}, {free}] / [{partitions}, {free}])")
    if scale_layout == "compact":
        return np.ascontiguousarray(s)
    i = np.arange(rows)
    return np.ascontiguousarray(s[(i // 4) * 32 + i % 4])


def _unpack_x4(data: np.ndarray, bits: int) -> np.ndarray:
    """Packed [P, n] -> element codes uint8 [P, n, 4]; element k at bits [bits*k, bits*k + bits)."""
    d = data.astype(np.uint32)
    mask = (1 << bits) - 1
    return np.stack([(d >> (bits * k)) & mask for k in range(4)], axis=-1).astype(np.uint8)


def _dequant_operand(data: np.ndarray, scale_c: np.ndarray, elem: str, scale_ff: str = "nan") -> np.ndarray:
    """Packed [P, n] + compact scales [P/8, n] -> float64 [P, n, 4] exact values (s = 0xFF: NaN, or 2^127
    under ``scale_ff="clip"``)."""
    _, decode, bits = MX_IN_DTYPES[elem]
    vals = decode(_unpack_x4(data, bits)).astype(np.float64)
    s = np.repeat(scale_c, 8, axis=0)
    if scale_ff == "clip":
        s = np.minimum(s, np.uint8(0xFE))                                 # exponent 255 - 127 clipped to 127
    mult = formats.decode_e8m0(s)                                         # float64 [P, n]
    with np.errstate(invalid="ignore"):
        out: np.ndarray = vals * mult[..., None]
    return out


def _check_data(data: Any, elem: str, field: str) -> np.ndarray:
    if not isinstance(data, np.ndarray):
        raise InvalidArgument(field, type(data).__name__, "must be a numpy array")
    container = MX_IN_DTYPES[elem][0]
    if data.dtype != container:
        raise InvalidArgument(f"{field}.dtype", str(data.dtype),
                              f"{elem} x4 data must be {np.dtype(container).name} (4 elements per word)")
    if data.ndim != 2:
        raise InvalidArgument(f"{field}.ndim", data.ndim, "must be 2 ([partitions, free])")
    if data.shape[0] not in VALID_P:
        raise InvalidArgument(f"{field}.shape[0]", data.shape[0], "partitions must be 32, 64, 96 or 128")
    if data.shape[1] == 0:
        raise InvalidArgument(f"{field}.shape[1]", 0, "free size must be positive")
    return data


def dequantize_mx(data: Any, scale: Any, dst_dtype: str = "float8_e4m3fn",
                  scale_layout: ScaleLayout = "auto", *, scale_ff: str = "nan") -> np.ndarray:
    """Exact inverse of the MX packing: float32 [P, 4 * n].

    Parameters
    ----------
    data : uint32 [P, n] (FP8, element 4j+k in byte k) or uint16 [P, n] (FP4, element k in
        nibble k, lowest first); P in {32, 64, 96, 128}.
    scale : uint8 E8M0, [P, n] scattered (rows 32q..32q+3 hold quadrant q) or [P/8, n] compact.
    dst_dtype : element format of ``data`` ("float8_e4m3fn", "float8_e5m2", "float4_e2m1fn";
        the NKI "_x4" names are accepted too).
    scale_layout : "auto" (by ``scale.shape[0]``), "scatter" or "compact".
    scale_ff : how scale byte 0xFF reads (docs/model.md §3): "nan" (OCP E8M0: the whole block is NaN) or
        "clip" (2^127, the byte 0xFE's value: AWS's ``dequantize_mx_golden`` clips the scale exponent
        s - 127 to +127). Bytes 0..254 read 2^(s-127) under both.

    Element 4j+k of row p is decode(code) x 2^(s-127), s = scale of block (p // 8, j), computed in
    float64 (exact) and stored as float32. The float32 store is exact except for overflow: a
    product beyond the float32 range becomes ±Inf (every E4M3 / E5M2 / FP4 value x 2^(s-127)
    with s <= 254 is a multiple of 2^-143, so it never loses bits to float32 subnormals).
    Scale 0xFF gives NaN for the whole block (``scale_ff="nan"``); NaN / Inf element codes stay NaN / Inf.
    Raises InvalidArgument naming the field.
    """
    elem = _mx_dtype(dst_dtype, "dst_dtype")
    if not isinstance(scale_ff, str) or scale_ff not in SCALE_FF:
        raise InvalidArgument("scale_ff", scale_ff, f"must be one of {', '.join(SCALE_FF)}")
    d = _check_data(data, elem, "data")
    p, n = d.shape
    sc = gather_scales(scale, p, n, scale_layout, "scale")
    vals = _dequant_operand(d, sc, elem, scale_ff)
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(vals.reshape(p, 4 * n).astype(np.float32))


def nc_matmul_mx(stationary: Any, moving: Any, stationary_scale: Any, moving_scale: Any, *,
                 in_dtype: str | tuple[str, str] = "float8_e4m3fn", dst_dtype: str = "float32") -> np.ndarray:
    """Reference MX matmul (docs/model.md §3): result [M, N] = sum over (partition, x4 lane).

    Parameters
    ----------
    stationary : [K_P, M] packed x4 (uint32 for FP8, uint16 for FP4), M even, 2 <= M <= 128.
    moving : [K_P, N] packed x4, 1 <= N <= 512 (fp32 dst) or 1024 (bf16 dst).
        K_P is the same for both, in {32, 64, 96, 128}; K = 4 * K_P <= 512.
    stationary_scale, moving_scale : uint8 E8M0, scattered [K_P, free] or compact [K_P/8, free]
        (chosen by shape[0]).
    in_dtype : element format of both operands, or a (stationary, moving) pair (MXFP8 and MXFP4
        may be mixed): "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn" (``_x4`` names accepted).
    dst_dtype : "float32" or "bfloat16".

    Value model: both operands are dequantized exactly (:func:`dequantize_mx`; float32 values,
    overflow to Inf), every product a[p, m, k] * b[p, n, k] is formed exactly in float64 (two
    float32 significands fit in 53 bits), the K products are summed in float64 (numpy's order)
    and the sum is rounded once to float32; bfloat16 dst then rounds that float32 by RNE
    (ml_dtypes). This is an *ideal* reference: the device accumulates in fp32 in an undocumented
    order, so device output is expected within |err| <= K * 2^-23 * sum_k |a_k * b_k| (+ one
    bf16 rounding, 2^-8 relative, for bf16 dst) of this result, not bit-equal.
    """
    if isinstance(in_dtype, tuple):
        if len(in_dtype) != 2:
            raise InvalidArgument("in_dtype", in_dtype, "a tuple must be (stationary dtype, moving dtype)")
        st_e, mv_e = _mx_dtype(in_dtype[0], "in_dtype[0]"), _mx_dtype(in_dtype[1], "in_dtype[1]")
    else:
        st_e = mv_e = _mx_dtype(in_dtype, "in_dtype")
    if dst_dtype not in ("float32", "bfloat16"):
        raise InvalidArgument("dst_dtype", dst_dtype, "must be float32 or bfloat16 (PSUM)")
    st = _check_data(stationary, st_e, "stationary")
    mv = _check_data(moving, mv_e, "moving")
    kp, m = st.shape
    if mv.shape[0] != kp:
        raise InvalidArgument("moving.shape[0]", mv.shape[0], f"partition count must equal stationary's ({kp})")
    if m % 2 or m > 128:
        raise InvalidArgument("stationary.shape[1]", m, "stationary free size must be even and <= 128")
    n = mv.shape[1]
    n_max = 512 if dst_dtype == "float32" else 1024
    if n > n_max:
        raise InvalidArgument("moving.shape[1]", n, f"moving free size must be <= {n_max} for {dst_dtype} dst")
    st_s = gather_scales(stationary_scale, kp, m, "auto", "stationary_scale")
    mv_s = gather_scales(moving_scale, kp, n, "auto", "moving_scale")
    with np.errstate(over="ignore", invalid="ignore"):
        a = _dequant_operand(st, st_s, st_e).astype(np.float32).astype(np.float64)   # [K_P, M, 4]
        b = _dequant_operand(mv, mv_s, mv_e).astype(np.float32).astype(np.float64)   # [K_P, N, 4]
        acc: np.ndarray = np.einsum("pmk,pnk->mn", a, b)
        out = acc.astype(np.float32)
    if dst_dtype == "bfloat16":
        import ml_dtypes
        return out.astype(ml_dtypes.bfloat16)
    return out
