"""Model knobs (docs/model.md) and the argument rules shared by the public API and the golden models.

This module only *checks and normalises arguments*; it computes no values. Knob names and
values are the public names of docs/model.md §1 and §2 (the first value of each tuple is the default).
The kernel ids, DEQUANT_FMT codes and path data live in :mod:`q7emu.model.kernels` (re-exported here
under their old names), the constants in :mod:`q7emu.model.tables`.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import numpy as np

from q7emu.errors import InvalidArgument
from q7emu.model.dtypes import dequant_fmt_code, fp8_dtype
from q7emu.model.kernels import FMT_NAMES, GROUP_SIZES, PATH_RATIO, DequantFmt, path_name

__all__ = ["DEQUANT_KNOBS", "QUANTIZE_MX_KNOBS", "QUANTIZE_MX_SRC_DTYPES", "QUANTIZE_MX_DST_DTYPES", "VALID_P",
           "DequantFmt", "FMT_NAMES",
           "PATH_RATIO", "path_name", "check_knob", "check_knobs", "dequant_knobs", "normalize_fmt",
           "normalize_dequant_args", "dequant_out_bytes", "normalize_quantize_mx_args"]

# ---------------------------------------------------------------- TensorDequantize (0x7b) knobs
DEQUANT_KNOBS: dict[str, tuple[str, ...]] = {
    "nibble_order": ("low-first", "high-first"),
    "fp6_packing": ("lsb-first", "msb-first"),
    "mx_layout": ("scale-first", "scale-last", "word-block"),
    "mx_scale": ("e8m0", "e8m0-nonan"),
    "nf4_table": ("qlora",),
}

# ---------------------------------------------------------------- QuantizeMX (0xE3) knobs
QUANTIZE_MX_KNOBS: dict[str, tuple[str, ...]] = {
    "emax": ("ocp", "alt"),
    "underflow": ("wrap", "clamp", "unclamped-data", "unwrapped-data"),
    "nonfinite": ("sim", "ocp"),
    "scale_layout": ("auto", "scatter", "compact"),
}

#: QuantizeMX source and destination dtypes (numpy / ml_dtypes names) [docs/firmware.md §3.1]
QUANTIZE_MX_SRC_DTYPES = ("float16", "bfloat16")
QUANTIZE_MX_DST_DTYPES = ("float8_e4m3fn", "float8_e5m2")
#: QuantizeMX partition counts [docs/firmware.md §3.1]
VALID_P = (32, 64, 96, 128)


def check_knob(name: str, value: Any, table: Mapping[str, tuple[str, ...]]) -> str:
    """Return ``value`` as a plain ``str`` if it is a legal value of knob ``name``; raise InvalidArgument
    otherwise. A ``str`` subclass (``np.str_``) is accepted and returned as the plain string: the compiled
    kernels take only ``str`` itself."""
    allowed = table[name]
    if not isinstance(value, str):
        raise InvalidArgument(name, value, f"must be one of {', '.join(allowed)}")
    plain = str.__str__(value)
    if plain not in allowed:
        raise InvalidArgument(name, plain, f"must be one of {', '.join(allowed)}")
    return plain


def check_knobs(knobs: Mapping[str, Any], table: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """Every knob of ``table`` with its value from ``knobs`` (default: the first value), each checked; then
    any name in ``knobs`` that ``table`` does not know is rejected. Raises InvalidArgument."""
    checked = {name: check_knob(name, knobs.get(name, vals[0]), table) for name, vals in table.items()}
    unknown = set(knobs) - set(table)
    if unknown:
        raise InvalidArgument("knob", sorted(unknown)[0], f"unknown knob; known: {', '.join(table)}")
    return checked


def dequant_knobs(fmt: int, group_size: int) -> tuple[str, ...]:
    """The TensorDequantize knobs whose value can change the output bytes of a (fmt, group_size) record,
    in DEQUANT_KNOBS order (docs/model.md §1): ``nibble_order`` for the 4-bit formats (fmt 1-3), ``fp6_packing``
    for fmt 4, ``mx_layout`` and ``mx_scale`` for group 8, ``nf4_table`` for fmt 3."""
    applies = {"nibble_order": fmt in (DequantFmt.E2M1_TO_E5M2, DequantFmt.INT4_TO_E5M2, DequantFmt.NF4_TO_E4M3),
               "fp6_packing": fmt == DequantFmt.E2M3_TO_E4M3,
               "mx_layout": group_size == 8,
               "mx_scale": group_size == 8,
               "nf4_table": fmt == DequantFmt.NF4_TO_E4M3}
    return tuple(k for k in DEQUANT_KNOBS if applies[k])


def normalize_fmt(fmt: Any) -> int:
    """The DEQUANT_FMT code 1..4 of ``fmt``: an int 1..4, a DequantFmt member, or a source format in any spelling of
    :mod:`q7emu.model.dtypes` (``"e2m1"``, ``"float4_e2m1fn"``, ``"int4"``, ``ml_dtypes.int4``, ``"nf4"``, ``"e2m3"``,
    ``"fp6"``, ``"E2M1_TO_E5M2"``, ...). Raises InvalidArgument."""
    if isinstance(fmt, enum.Enum) and not isinstance(fmt, DequantFmt) or _is_format_spelling(fmt):
        return dequant_fmt_code(fmt, "fmt")
    if isinstance(fmt, (bool, np.bool_)) or not isinstance(fmt, (int, np.integer)):
        raise InvalidArgument("fmt", fmt, "dequant_fmt must be 1..4 or one of e2m1, int4, nf4, e2m3")
    if int(fmt) not in (1, 2, 3, 4):
        raise InvalidArgument("fmt", int(fmt),
                              "dequant_fmt must be in {1,2,3,4} (0 is INVALID) [docs/firmware.md §1.3.4]")
    return int(fmt)


def _is_format_spelling(fmt: Any) -> bool:
    """True for a format name or a dtype-like object (numpy dtype, numpy / ml_dtypes scalar type)."""
    return isinstance(fmt, (str, np.dtype)) or (isinstance(fmt, type) and issubclass(fmt, np.generic))


def check_array_size(name: str, arr: np.ndarray) -> None:
    """InvalidArgument when ``arr`` holds more data than ``Q7EMU_MAX_ARRAY_BYTES`` (docs/limits.md §2), judged
    from its shape before anything copies it: a stride-0 view (``np.broadcast_to``) of a petabyte costs no
    memory until it is made contiguous, which numpy then fails with a MemoryError."""
    from q7emu.fileio import limit

    cap = limit("Q7EMU_MAX_ARRAY_BYTES")
    nbytes = arr.dtype.itemsize
    for n in arr.shape:
        nbytes *= int(n)
    if nbytes > cap:
        raise InvalidArgument(f"{name}.shape", tuple(int(n) for n in arr.shape),
                              f"{nbytes} bytes of array data, more than the limit of {cap} "
                              "(Q7EMU_MAX_ARRAY_BYTES, docs/limits.md §2)")


def normalize_dequant_args(src: Any, fmt: Any, group_size: Any, knobs: Mapping[str, Any]
                           ) -> tuple[np.ndarray, int, int, str, dict[str, str]]:
    """Check every TensorDequantize rule before anything is computed.

    Returns ``(src_bytes, fmt, group_size, path, knobs)`` where ``src_bytes`` is a C-contiguous
    uint8 array [P, in_bytes] (P = 1..128 partitions, in_bytes a multiple of 4).
    """
    fmt_i = normalize_fmt(fmt)
    if isinstance(group_size, (bool, np.bool_)) or not isinstance(group_size, (int, np.integer)) \
            or int(group_size) not in GROUP_SIZES:
        raise InvalidArgument("group_size", group_size, "must be 0 or 8 [docs/firmware.md §1.3.5]")
    group = int(group_size)
    if group == 8 and fmt_i == 4:
        raise InvalidArgument("group_size", group,
                              "group 8 is allowed only with fmt 1..3; FP6 (fmt 4) is never MX [docs/firmware.md "
                              "§1.3.6]")
    checked = check_knobs(knobs, DEQUANT_KNOBS)
    if not isinstance(src, np.ndarray):
        raise InvalidArgument("src", type(src).__name__, "must be a numpy array of uint8 or uint32")
    if src.dtype not in (np.uint8, np.uint32):
        raise InvalidArgument("src.dtype", str(src.dtype), "must be uint8 [P, in_bytes] or uint32 [P, in_words]")
    if src.ndim != 2:
        raise InvalidArgument("src.ndim", src.ndim, "must be 2 ([partitions, stream])")
    parts = src.shape[0]
    if not 1 <= parts <= 128:
        raise InvalidArgument("src.shape[0]", parts,
                              "partitions (num_active_channels) must be 1..128 [docs/firmware.md §1.3.3]")
    check_array_size("src", src)
    src_bytes = np.ascontiguousarray(src.astype(src.dtype.newbyteorder("<"), copy=False)).view(np.uint8)
    if src_bytes.shape[1] % 4:
        raise InvalidArgument("src.shape[1]", src_bytes.shape[1],
                              "uint8 stream length must be a whole number of u32 words")
    words = src_bytes.shape[1] // 4
    path = path_name(fmt_i, group)
    a, _ = PATH_RATIO[path]
    if words == 0 or words % a:
        raise InvalidArgument("src words", words,
                              f"{path} needs a positive multiple of {a} source words [docs/firmware.md §1.3.11]")
    return np.ascontiguousarray(src_bytes), fmt_i, group, path, checked


def dequant_out_bytes(in_bytes: int, path: str) -> int:
    """Output bytes per partition for ``in_bytes`` source bytes (a multiple of the path's source words x 4)
    on ``path`` (a kernel name of :data:`PATH_RATIO`)."""
    a, b = PATH_RATIO[path]
    return in_bytes // a * b


def normalize_quantize_mx_args(src: Any, dst_dtype: Any, knobs: Mapping[str, Any]
                               ) -> tuple[np.ndarray, str, str, dict[str, str]]:
    """Check every QuantizeMX rule before anything is computed.

    ``dst_dtype`` is an FP8 format in any spelling of :mod:`q7emu.model.dtypes` (``"e4m3"``,
    ``"float8_e4m3fn"``, ``np.dtype``, ``ml_dtypes.float8_e5m2``, ...). Returns ``(src_bits, src_kind, dst_dtype,
    knobs)``: ``src_bits`` is a C-contiguous uint16 array [P, F] of the raw fp16/bf16 bit patterns, ``src_kind``
    is "float16" or "bfloat16", ``dst_dtype`` is "float8_e4m3fn" or "float8_e5m2", and ``knobs['scale_layout']``
    is resolved from ``auto`` to ``scatter`` / ``compact``.
    """
    import ml_dtypes

    dst_dtype = fp8_dtype(dst_dtype, "dst_dtype")
    checked = check_knobs(knobs, QUANTIZE_MX_KNOBS)
    if not isinstance(src, np.ndarray):
        raise InvalidArgument("src", type(src).__name__, "must be a numpy array of float16 or bfloat16")
    if src.dtype == np.float16:
        kind = "float16"
    elif src.dtype == ml_dtypes.bfloat16:
        kind = "bfloat16"
    else:
        raise InvalidArgument("src.dtype", str(src.dtype),
                              "must be float16 or bfloat16 [docs/firmware.md §3.1 in_dtype]")
    if src.ndim != 2:
        raise InvalidArgument("src.ndim", src.ndim, "must be 2 ([P, F])")
    p, f = src.shape
    if p not in VALID_P:
        raise InvalidArgument("src.shape[0]", p, "partitions must be 32, 64, 96 or 128 [docs/firmware.md §3.1]")
    if f == 0 or f % 4:
        raise InvalidArgument("src.shape[1]", f, "free size must be a positive multiple of 4 [docs/firmware.md §3.4]")
    check_array_size("src", src)
    if checked["scale_layout"] == "auto":
        checked["scale_layout"] = "scatter" if p > 32 else "compact"
    bits = np.ascontiguousarray(src).view(np.uint16)
    return np.ascontiguousarray(bits), kind, dst_dtype, checked
