"""Model knobs (MODEL.md) and the argument rules shared by the public API and the golden models.

This module only *checks and normalises arguments*; it computes no values. Knob names and
values are the public names of MODEL.md §1 and §2 (the first value of each tuple is the default).
"""
from __future__ import annotations

import enum
from typing import Any

import numpy as np

from q7emu.errors import InvalidArgument

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
    "underflow": ("wrap", "clamp"),
    "scale_layout": ("auto", "scatter", "compact"),
}

QUANTIZE_MX_DST_DTYPES = ("float8_e4m3fn", "float8_e5m2")


class DequantFmt(enum.IntEnum):
    """NEURON_ISA_TPB_DEQUANT_FMT (SPEC §2.1)."""

    E2M1_TO_E5M2 = 1
    INT4_TO_E5M2 = 2
    NF4_TO_E4M3 = 3
    E2M3_TO_E4M3 = 4


FMT_NAMES = {"e2m1": 1, "int4": 2, "nf4": 3, "e2m3": 4}

#: (fmt, group_size) -> firmware path name (SPEC §1.5)
def path_name(fmt: int, group_size: int) -> str:
    """Name of the firmware compute path for a valid (fmt, group_size) pair."""
    if group_size == 8:
        return "proc_4bit_mx_8"
    return "proc_6bit_non_mx" if fmt == 4 else "proc_4bit_non_mx"


#: source words : destination words per path (SPEC §1.3 clause 11, in u32 words)
PATH_RATIO = {
    "proc_4bit_non_mx": (1, 2),
    "proc_6bit_non_mx": (3, 4),
    "proc_4bit_mx_8": (5, 8),
}


def check_knob(name: str, value: Any, table: dict[str, tuple[str, ...]]) -> str:
    """Return ``value`` if it is a legal value of knob ``name``; raise InvalidArgument otherwise."""
    allowed = table[name]
    if not isinstance(value, str) or value not in allowed:
        raise InvalidArgument(name, value, f"must be one of {', '.join(allowed)}")
    return value


def normalize_fmt(fmt: Any) -> int:
    """Accept 1..4, a DequantFmt member or 'e2m1' / 'int4' / 'nf4' / 'e2m3'; return the int code."""
    if isinstance(fmt, str):
        if fmt.lower() in FMT_NAMES:
            return FMT_NAMES[fmt.lower()]
        raise InvalidArgument("fmt", fmt, "dequant_fmt must be 1..4 or one of e2m1, int4, nf4, e2m3")
    if isinstance(fmt, (bool, np.bool_)) or not isinstance(fmt, (int, np.integer)):
        raise InvalidArgument("fmt", fmt, "dequant_fmt must be 1..4 or one of e2m1, int4, nf4, e2m3")
    if int(fmt) not in (1, 2, 3, 4):
        raise InvalidArgument("fmt", int(fmt), "dequant_fmt must be in {1,2,3,4} (0 is INVALID) [SPEC §1.3.4]")
    return int(fmt)


def normalize_dequant_args(src: Any, fmt: Any, group_size: Any, knobs: dict[str, Any]
                           ) -> tuple[np.ndarray, int, int, str, dict[str, str]]:
    """Check every TensorDequantize rule before anything is computed.

    Returns ``(src_bytes, fmt, group_size, path, knobs)`` where ``src_bytes`` is a C-contiguous
    uint8 array [P, in_bytes] (P = 1..128 partitions, in_bytes a multiple of 4).
    """
    fmt_i = normalize_fmt(fmt)
    if isinstance(group_size, (bool, np.bool_)) or not isinstance(group_size, (int, np.integer)) \
            or int(group_size) not in (0, 8):
        raise InvalidArgument("group_size", group_size, "must be 0 or 8 [SPEC §1.3.5]")
    group = int(group_size)
    if group == 8 and fmt_i == 4:
        raise InvalidArgument("group_size", group,
                              "group 8 is allowed only with fmt 1..3; FP6 (fmt 4) is never MX [SPEC §1.3.6]")
    checked = {name: check_knob(name, knobs.get(name, vals[0]), DEQUANT_KNOBS)
               for name, vals in DEQUANT_KNOBS.items()}
    unknown = set(knobs) - set(DEQUANT_KNOBS)
    if unknown:
        raise InvalidArgument("knob", sorted(unknown)[0], f"unknown knob; known: {', '.join(DEQUANT_KNOBS)}")
    if not isinstance(src, np.ndarray):
        raise InvalidArgument("src", type(src).__name__, "must be a numpy array of uint8 or uint32")
    if src.dtype not in (np.uint8, np.uint32):
        raise InvalidArgument("src.dtype", str(src.dtype), "must be uint8 [P, in_bytes] or uint32 [P, in_words]")
    if src.ndim != 2:
        raise InvalidArgument("src.ndim", src.ndim, "must be 2 ([partitions, stream])")
    parts = src.shape[0]
    if not 1 <= parts <= 128:
        raise InvalidArgument("src.shape[0]", parts, "partitions (num_active_channels) must be 1..128 [SPEC §1.3.3]")
    src_bytes = np.ascontiguousarray(src.astype(src.dtype.newbyteorder("<"), copy=False)).view(np.uint8)
    if src_bytes.shape[1] % 4:
        raise InvalidArgument("src.shape[1]", src_bytes.shape[1], "uint8 stream length must be a whole number of u32 words")
    words = src_bytes.shape[1] // 4
    path = path_name(fmt_i, group)
    a, _ = PATH_RATIO[path]
    if words == 0 or words % a:
        raise InvalidArgument("src words", words,
                              f"{path} needs a positive multiple of {a} source words [SPEC §1.3.11]")
    return np.ascontiguousarray(src_bytes), fmt_i, group, path, checked


def dequant_out_bytes(in_bytes: int, path: str) -> int:
    """Output bytes per partition for ``in_bytes`` source bytes on ``path``."""
    a, b = PATH_RATIO[path]
    return in_bytes // a * b


VALID_P = (32, 64, 96, 128)


def normalize_quantize_mx_args(src: Any, dst_dtype: Any, knobs: dict[str, Any]
                               ) -> tuple[np.ndarray, str, str, dict[str, str]]:
    """Check every QuantizeMX rule before anything is computed.

    Returns ``(src_bits, src_kind, dst_dtype, knobs)``: ``src_bits`` is a C-contiguous uint16
    array [P, F] of the raw fp16/bf16 bit patterns, ``src_kind`` is "float16" or "bfloat16",
    and ``knobs['scale_layout']`` is resolved from ``auto`` to ``scatter`` / ``compact``.
    """
    import ml_dtypes

    if dst_dtype not in QUANTIZE_MX_DST_DTYPES:
        rule = ("FP4 output does not exist for QuantizeMX [SPEC §3.1]" if isinstance(dst_dtype, str)
                and "e2m1" in dst_dtype else f"must be one of {', '.join(QUANTIZE_MX_DST_DTYPES)}")
        raise InvalidArgument("dst_dtype", dst_dtype, rule)
    checked = {name: check_knob(name, knobs.get(name, vals[0]), QUANTIZE_MX_KNOBS)
               for name, vals in QUANTIZE_MX_KNOBS.items()}
    unknown = set(knobs) - set(QUANTIZE_MX_KNOBS)
    if unknown:
        raise InvalidArgument("knob", sorted(unknown)[0], f"unknown knob; known: {', '.join(QUANTIZE_MX_KNOBS)}")
    if not isinstance(src, np.ndarray):
        raise InvalidArgument("src", type(src).__name__, "must be a numpy array of float16 or bfloat16")
    if src.dtype == np.float16:
        kind = "float16"
    elif src.dtype == ml_dtypes.bfloat16:
        kind = "bfloat16"
    else:
        raise InvalidArgument("src.dtype", str(src.dtype), "must be float16 or bfloat16 [SPEC §3.1 in_dtype]")
    if src.ndim != 2:
        raise InvalidArgument("src.ndim", src.ndim, "must be 2 ([P, F])")
    p, f = src.shape
    if p not in VALID_P:
        raise InvalidArgument("src.shape[0]", p, "partitions must be 32, 64, 96 or 128 [SPEC §3.1]")
    if f == 0 or f % 4:
        raise InvalidArgument("src.shape[1]", f, "free size must be a positive multiple of 4 [SPEC §3.4]")
    if checked["scale_layout"] == "auto":
        checked["scale_layout"] = "scatter" if p > 32 else "compact"
    bits = np.ascontiguousarray(src).view(np.uint16)
    return np.ascontiguousarray(bits), kind, dst_dtype, checked
