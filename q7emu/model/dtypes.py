"""Number-format names in every spelling the project uses, normalised in one place.

q7emu, its docs and the tools it is compared with spell the same formats several ways: short names (``"e4m3"``,
``"bf16"``, ``"e2m1"``), the numpy / ml_dtypes names (``"float8_e4m3fn"``, ``"bfloat16"``, ``"float4_e2m1fn"``),
NKI's packed names (``"float8_e4m3fn_x4"``), the firmware's DTYPE and DEQUANT_FMT names (``"FP8_EXP4"``,
``"E2M1_TO_E5M2"``; docs/firmware.md §5, §2.1), and the objects themselves (``np.dtype("float16")``,
``ml_dtypes.float8_e5m2``, a ``DType`` / ``DequantFmt`` member). :func:`canonical_format` maps every one of them
to one canonical name (the numpy / ml_dtypes name where one exists); :func:`fp8_dtype`, :func:`src_dtype` and
:func:`dequant_fmt_code` narrow it to what an argument accepts. :func:`fp8_view` gives the ml_dtypes view of
FP8 codes, so a notebook shows values instead of bytes.

Names are matched case-insensitively, with ``-`` read as ``_``. The FP8 and TensorDequantize source formats'
spellings are their records' in :mod:`q7emu.model.format_table`. This module only names formats; it computes no
values.
"""
from __future__ import annotations

import enum
from typing import Any, TypeAlias

import numpy as np

from q7emu.errors import InvalidArgument
from q7emu.model.format_table import DEQUANT_FORMATS, FP8_FORMATS, DequantFmt, DequantFmtName, Fp8Name

#: a TensorDequantize ``fmt`` argument: the code, a DequantFmt member, a spelling, a numpy dtype or scalar type
FmtArg: TypeAlias = int | DequantFmt | DequantFmtName | np.dtype[Any] | type[np.generic]
#: an FP8 format argument (QuantizeMX ``dst_dtype``): a spelling, a numpy dtype or an ml_dtypes scalar type
Fp8Arg: TypeAlias = Fp8Name | np.dtype[Any] | type[np.generic]

__all__ = ["FmtArg", "Fp8Arg", "CANONICAL_FORMATS", "FORMAT_ALIASES", "canonical_format", "fp8_dtype", "src_dtype",
           "dequant_fmt_code", "dequant_out_dtype", "fp8_view"]

#: the formats that are neither an FP8 output nor a TensorDequantize source: the E8M0 scales and QuantizeMX's
#: sources, canonical name -> its other spellings (the FP8 and source formats' spellings are the format table's)
_OTHER_FORMATS: dict[str, tuple[str, ...]] = {
    "float8_e8m0fnu": ("e8m0", "sfp8_e8"),
    "float16": ("fp16",),
    "bfloat16": ("bf16",),
}

#: canonical format names (what :func:`canonical_format` returns)
CANONICAL_FORMATS: tuple[str, ...] = (*(f.name for f in FP8_FORMATS), *_OTHER_FORMATS,
                                      *(f.name for f in DEQUANT_FORMATS))

#: every accepted spelling (lower case, ``_`` for ``-``) -> its canonical name: the FP8 formats (QuantizeMX
#: out_dtype, TensorDequantize output), the E8M0 scales, QuantizeMX's sources, TensorDequantize's source formats
FORMAT_ALIASES: dict[str, str] = {
    **{s: f.name for f in FP8_FORMATS for s in f.spellings},
    **{s: name for name, other in _OTHER_FORMATS.items() for s in (name, *other)},
    **{s: f.name for f in DEQUANT_FORMATS for s in f.spellings},
}

#: spellings of formats q7emu's ops never take, with the reason (so the error says more than "unknown")
_NOT_OURS: dict[str, str] = {
    "float8_e4m3": "is the IEEE-style E4M3 with Inf (ml_dtypes.float8_e4m3); the firmware's E4M3 is the 'fn' "
                   "variant without Inf: float8_e4m3fn / e4m3",
    "float8_e4m3fnuz": "is the 'fnuz' E4M3 (bias 8); the firmware's E4M3 is float8_e4m3fn / e4m3",
    "float8_e5m2fnuz": "is the 'fnuz' E5M2 (bias 16); the firmware's E5M2 is float8_e5m2 / e5m2",
}

#: DEQUANT_FMT code of each TensorDequantize source format (docs/firmware.md §2.1)
_DEQUANT_CODES: dict[str, int] = {f.name: f.code for f in DEQUANT_FORMATS}
#: FP8 output format of each DEQUANT_FMT code (docs/firmware.md §2.1)
_DEQUANT_OUT: dict[int, str] = {f.code: f.out for f in DEQUANT_FORMATS}
_FP8_NAMES = tuple(f.name for f in FP8_FORMATS)
#: "a or b" of the FP8 formats' names, "float8_e4m3fn (e4m3)"
_FP8_LIST = " or ".join(f"{f.name} ({f.short})" for f in FP8_FORMATS)
#: "e2m1, int4, nf4 or e2m3 (dequant_fmt 1..4)"
_SOURCE_LIST = (", ".join(f.short for f in DEQUANT_FORMATS[:-1]) + f" or {DEQUANT_FORMATS[-1].short} (dequant_fmt "
                f"{DEQUANT_FORMATS[0].code}..{DEQUANT_FORMATS[-1].code})")


def _spelling(fmt: Any) -> str | None:
    """The lower-case lookup key of a format given as a string, an enum member, a numpy dtype or a scalar type
    (numpy / ml_dtypes); None when ``fmt`` is none of these."""
    if isinstance(fmt, str):
        return fmt.strip().lower().replace("-", "_")
    if isinstance(fmt, enum.Enum):                  # DType / DequantFmt members (and their IntEnum values)
        return fmt.name.lower()
    if isinstance(fmt, np.dtype) or (isinstance(fmt, type) and issubclass(fmt, np.generic)):
        try:
            return np.dtype(fmt).name.lower()
        except TypeError:
            return None
    return None


def canonical_format(fmt: Any, field: str = "format") -> str:
    """The canonical name (one of :data:`CANONICAL_FORMATS`) of a format in any spelling of the project.

    ``fmt``: a name (``"e4m3"``, ``"float8_e4m3fn"``, ``"FP8_EXP4"``, ``"bf16"``, ``"e2m1"``, ...), a numpy dtype,
    a numpy / ml_dtypes scalar type, or a ``DType`` / ``DequantFmt`` member. Raises InvalidArgument naming
    ``field`` for anything else."""
    key = _spelling(fmt)
    if key is not None and key in FORMAT_ALIASES:
        return FORMAT_ALIASES[key]
    if key is not None and key in _NOT_OURS:
        raise InvalidArgument(field, fmt, _NOT_OURS[key])
    raise InvalidArgument(field, fmt, "unknown format; accepted: " + ", ".join(sorted(FORMAT_ALIASES)))


def _narrow(fmt: Any, field: str, allowed: tuple[str, ...], rule: str) -> str:
    name = canonical_format(fmt, field)
    if name not in allowed:
        raise InvalidArgument(field, fmt, f"{name} is not {rule}")
    return name


def fp8_dtype(fmt: Any, field: str = "dst_dtype") -> str:
    """``"float8_e4m3fn"`` or ``"float8_e5m2"`` for an FP8 format in any spelling (QuantizeMX dst_dtype)."""
    key = _spelling(fmt)
    if key is not None and FORMAT_ALIASES.get(key) == "float4_e2m1fn":
        raise InvalidArgument(field, fmt, "FP4 output does not exist for QuantizeMX [docs/firmware.md §3.1]")
    return _narrow(fmt, field, _FP8_NAMES, f"an FP8 data format: {_FP8_LIST} [docs/firmware.md §3.1]")


def src_dtype(fmt: Any, field: str = "src_dtype") -> str:
    """``"float16"`` or ``"bfloat16"`` for a QuantizeMX source format in any spelling."""
    return _narrow(fmt, field, ("float16", "bfloat16"),
                   "a QuantizeMX source format: float16 (fp16) or bfloat16 (bf16) [docs/firmware.md §3.1]")


def dequant_fmt_code(fmt: Any, field: str = "fmt") -> int:
    """DEQUANT_FMT code 1..4 of a TensorDequantize source format given by name, dtype or member
    (``"e2m1"``, ``"float4_e2m1fn"``, ``ml_dtypes.int4``, ``"nf4"``, ``"e2m3"``, ``DequantFmt.NF4_TO_E4M3``)."""
    name = _narrow(fmt, field, tuple(_DEQUANT_CODES),
                   f"a TensorDequantize source format: {_SOURCE_LIST} [docs/firmware.md §2.1]")
    return _DEQUANT_CODES[name]


def dequant_out_dtype(fmt: int) -> str:
    """The FP8 format (``"float8_e5m2"`` / ``"float8_e4m3fn"``) TensorDequantize writes for DEQUANT_FMT 1..4."""
    if fmt not in _DEQUANT_OUT:
        raise InvalidArgument("fmt", fmt, f"dequant_fmt must be in {{{','.join(map(str, _DEQUANT_OUT))}}} "
                              "[docs/firmware.md §1.3.4]")
    return _DEQUANT_OUT[fmt]


def fp8_view(codes: np.ndarray, fmt: Any) -> np.ndarray:
    """FP8 codes as an ml_dtypes array view, so they print as values (no copy for uint8 codes, nor for
    C-contiguous little-endian uint32 words).

    Args:
        codes: uint8 FP8 codes of any shape (``q7emu.dequantize``'s output), or uint32 words of four FP8 codes
            each, element 4j+k in byte k of word j (``q7emu.quantize_mx``'s data, [P, F/4]; viewed as [P, F]).
        fmt: the FP8 format, in any spelling (``"e5m2"``, ``"float8_e4m3fn"``, ``ml_dtypes.float8_e5m2``), or
            a TensorDequantize source format (``"e2m1"``, ``1``, ...), whose FP8 output format is then used.

    Returns:
        an ``ml_dtypes.float8_e4m3fn`` / ``float8_e5m2`` view of the same bytes: [..., n] for uint8 input,
        [..., 4n] for uint32 input.
    """
    import ml_dtypes

    if isinstance(fmt, (int, np.integer)) and not isinstance(fmt, (bool, np.bool_, enum.Enum)):
        name = dequant_out_dtype(int(fmt))
    else:
        canon = canonical_format(fmt, "fmt")
        name = dequant_out_dtype(_DEQUANT_CODES[canon]) if canon in _DEQUANT_CODES else fp8_dtype(fmt, "fmt")
    arr = np.asarray(codes)
    if arr.dtype == np.uint32:
        if arr.ndim == 0:
            raise InvalidArgument("codes.ndim", 0, "uint32 words need at least one axis")
        arr = np.ascontiguousarray(arr.astype("<u4", copy=False)).view(np.uint8)
    elif arr.dtype != np.uint8:
        raise InvalidArgument("codes.dtype", str(arr.dtype), "FP8 codes must be uint8 (or uint32 words of 4 codes)")
    return arr.view(getattr(ml_dtypes, name))
