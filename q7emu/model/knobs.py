"""Model knobs (docs/model.md §1, §2, §6): the knob table, and the argument rules shared by the public API and the
golden models.

:data:`KNOBS` is the one table of knobs: one :class:`Knob` record each, with its values (its ``Literal`` type, the
first value the default), the op that reads it, its docs section, which bytes it decides and the open question it
stands for. Every layer takes the knobs from it: :data:`DEQUANT_KNOBS` / :data:`QUANTIZE_MX_KNOBS` and the machine's
knobs are views of it, the public API (``q7emu.dequantize``, ``q7emu.quantize_mx``) and the golden models annotate
their knob parameters with its ``Literal`` types (so a type checker flags a misspelt value), and the kernels'
``run()`` take its defaults; firmware_tests/model/test_knob_table.py proves the signatures agree with it.

This module only *checks and normalises arguments*; it computes no values. The formats live in
:mod:`q7emu.model.format_table`, the kernel ids and paths in :mod:`q7emu.model.kernels` (re-exported here under
their old names), the constants in :mod:`q7emu.model.tables`.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Literal, get_args

import numpy as np

from q7emu._dataclass import dataclass
from q7emu.errors import InvalidArgument
from q7emu.model.dtypes import dequant_fmt_code, fp8_dtype
from q7emu.model.format_table import DEQUANT_FORMATS, DEQUANT_PATH_TABLE, FP8_FORMATS, dequant_format
from q7emu.model.kernels import DEQUANT_PATHS, FMT_NAMES, GROUP_SIZES, PATH_RATIO, DequantFmt, path_name
from q7emu.model.knob_types import (
    Emax,
    Fp6Packing,
    MxLayout,
    MxScale,
    Nf4Table,
    NibbleOrder,
    Nonfinite,
    ScaleLayout,
    Underflow,
)

__all__ = ["Knob", "KNOBS", "KNOB_DEFAULTS", "knob", "knob_applies", "NibbleOrder", "Fp6Packing", "MxLayout",
           "MxScale", "Nf4Table", "Emax", "Underflow", "Nonfinite", "ScaleLayout",
           "DEQUANT_KNOBS", "QUANTIZE_MX_KNOBS", "QUANTIZE_MX_SRC_DTYPES", "QUANTIZE_MX_DST_DTYPES", "SrcFormat",
           "VALID_P",
           "DequantFmt", "FMT_NAMES",
           "PATH_RATIO", "path_name", "check_knob", "check_knobs", "dequant_knobs", "normalize_fmt",
           "normalize_dequant_args", "dequant_out_bytes", "normalize_quantize_mx_args"]

# the knobs' values, as types (default first): q7emu.model.knob_types, re-exported here


@dataclass(frozen=True)
class Knob:
    """One model knob (docs/model.md §6): a named choice where the firmware facts leave the bytes open."""

    name: str
    type: Any                 # its Literal type: the values, the default first
    op: str                   # the op whose bytes it decides: "dequantize" (0x7b) or "quantize_mx" (0xE3)
    section: str              # where docs/model.md defines it
    decides: str              # which output bytes it decides
    question: str             # the docs/firmware.md open question it stands for
    machine: bool = True      # a machine (record-level) knob; False: only the op's API takes it

    @property
    def values(self) -> tuple[str, ...]:
        """Its values, the default first (the ``Literal``'s arguments)."""
        return get_args(self.type)

    @property
    def default(self) -> str:
        """Its default value."""
        return self.values[0]


#: every knob, TensorDequantize's then QuantizeMX's (the order of every knob list q7emu prints)
KNOBS: tuple[Knob, ...] = (
    Knob("nibble_order", NibbleOrder, "dequantize", "docs/model.md §1",
         "the order of every output pair (which nibble is element 2i)", "docs/firmware.md §8.1.2"),
    Knob("fp6_packing", Fp6Packing, "dequantize", "docs/model.md §1",
         "which 6 bits of each 3-byte group make each of the 4 outputs", "docs/firmware.md §8.1.3"),
    Knob("mx_layout", MxLayout, "dequantize", "docs/model.md §1",
         "which source byte of each 5-byte group is the scale, so every MX output byte", "docs/firmware.md §8.1.1"),
    Knob("mx_scale", MxScale, "dequantize", "docs/model.md §1",
         "the bytes of groups whose scale byte is 0xFF (NaN vs saturate)",
         "docs/firmware.md §8.1.1, §2.3 (E8M0 is MED)"),
    Knob("nf4_table", Nf4Table, "dequantize", "docs/model.md §1", "every NF4 output byte (the codebook values)",
         "docs/firmware.md §8.1.4, §2.2 (MED)"),
    Knob("emax", Emax, "quantize_mx", "docs/model.md §2", "every scale byte and, through it, every data byte",
         "docs/firmware.md §8.1.11, §8.2.14"),
    Knob("underflow", Underflow, "quantize_mx", "docs/model.md §2",
         "scale and data bytes of blocks whose max exponent is below max_exp", "docs/firmware.md §8.2.14"),
    Knob("nonfinite", Nonfinite, "quantize_mx", "docs/model.md §2",
         "scale and data bytes of blocks holding a NaN or an Inf",
         "docs/firmware.md §3.4 (NaN / Inf not covered); docs/anchors.md §1.4 (c)"),
    # the record's scale_addr / scale_pidx place the scales on the machine (docs/model.md §7 item 5)
    Knob("scale_layout", ScaleLayout, "quantize_mx", "docs/model.md §2",
         "where the scale bytes sit in the returned array, never their values", "none", machine=False),
)

_BY_NAME: dict[str, Knob] = {k.name: k for k in KNOBS}
#: every knob's default value
KNOB_DEFAULTS: dict[str, str] = {k.name: k.default for k in KNOBS}

# ---------------------------------------------------------------- the per-op views (name -> values, default first)
DEQUANT_KNOBS: dict[str, tuple[str, ...]] = {k.name: k.values for k in KNOBS if k.op == "dequantize"}
QUANTIZE_MX_KNOBS: dict[str, tuple[str, ...]] = {k.name: k.values for k in KNOBS if k.op == "quantize_mx"}

#: QuantizeMX source and destination dtypes (numpy / ml_dtypes names) [docs/firmware.md §3.1]
#: (``SrcFormat``, the ``src_format`` of QuantizeMX's raw-bits source: those bit patterns in a uint16 array)
SrcFormat = Literal["float16", "bfloat16"]
QUANTIZE_MX_SRC_DTYPES: tuple[str, ...] = get_args(SrcFormat)
QUANTIZE_MX_DST_DTYPES = tuple(f.name for f in FP8_FORMATS)
#: QuantizeMX partition counts [docs/firmware.md §3.1]
VALID_P = (32, 64, 96, 128)


def knob(name: str) -> Knob:
    """The record of a knob by name; KeyError otherwise."""
    return _BY_NAME[name]


def _ranges(codes: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1-3, 5"``."""
    runs: list[list[int]] = []
    for c in codes:
        if runs and c == runs[-1][-1] + 1:
            runs[-1].append(c)
        else:
            runs.append([c])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def knob_applies(name: str) -> str:
    """Where a knob applies, from the format table: ``0x7b fmt 1-3 (proc_4bit_non_mx, proc_4bit_mx_8)`` for a
    knob some formats read, ``0x7b group 8 (proc_4bit_mx_8)`` for one a path reads, ``0xE3`` for QuantizeMX's."""
    if knob(name).op == "quantize_mx":
        return "0xE3"
    fmts = [f for f in DEQUANT_FORMATS if name in f.knobs]
    if fmts:
        used = {p for f in fmts for p in f.paths.values()}
        paths = [p.name for p in DEQUANT_PATH_TABLE if p.name in used]
        return f"0x7b fmt {_ranges([f.code for f in fmts])} ({', '.join(paths)})"
    readers = [p for p in DEQUANT_PATH_TABLE if name in p.knobs]
    groups = sorted({p.group for p in readers})
    return f"0x7b group {', '.join(map(str, groups))} ({', '.join(p.name for p in readers)})"


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
    in DEQUANT_KNOBS order (docs/model.md §1): the format's own (its record's ``knobs``: ``nibble_order`` for the
    4-bit formats, ``fp6_packing`` for FP6, ``nf4_table`` for NF4) and those of the group's path (``mx_layout``,
    ``mx_scale`` for group 8). The pair is not checked (an unknown fmt reads only its group's knobs)."""
    own = next((f.knobs for f in DEQUANT_FORMATS if f.code == fmt), ())
    applies = set(own) | {k for p in DEQUANT_PATH_TABLE if p.group == group_size for k in p.knobs}
    return tuple(k for k in DEQUANT_KNOBS if k in applies)


_FMT_RULE = "dequant_fmt must be {} or one of {}".format(
    _ranges(sorted(FMT_NAMES.values())).replace("-", ".."), ", ".join(FMT_NAMES))


def normalize_fmt(fmt: Any) -> int:
    """The DEQUANT_FMT code (1..4) of ``fmt``: an int, a DequantFmt member, or a source format in any spelling of
    :mod:`q7emu.model.dtypes` (``"e2m1"``, ``"float4_e2m1fn"``, ``"int4"``, ``ml_dtypes.int4``, ``"nf4"``, ``"e2m3"``,
    ``"fp6"``, ``"E2M1_TO_E5M2"``, ...). Raises InvalidArgument."""
    if isinstance(fmt, enum.Enum) and not isinstance(fmt, DequantFmt) or _is_format_spelling(fmt):
        return dequant_fmt_code(fmt, "fmt")
    if isinstance(fmt, (bool, np.bool_)) or not isinstance(fmt, (int, np.integer)):
        raise InvalidArgument("fmt", fmt, _FMT_RULE)
    if int(fmt) not in FMT_NAMES.values():
        raise InvalidArgument("fmt", int(fmt), f"dequant_fmt must be in {{{','.join(map(str, FMT_NAMES.values()))}}} "
                              "(0 is INVALID) [docs/firmware.md §1.3.4]")
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
                           ) -> tuple[np.ndarray, int, int, str, dict[str, Any]]:
    """Check every TensorDequantize rule before anything is computed.

    Returns ``(src_bytes, fmt, group_size, path, knobs)`` where ``src_bytes`` is a C-contiguous
    uint8 array [P, in_bytes] (P = 1..128 partitions, in_bytes a multiple of 4).
    """
    fmt_i = normalize_fmt(fmt)
    if isinstance(group_size, (bool, np.bool_)) or not isinstance(group_size, (int, np.integer)) \
            or int(group_size) not in GROUP_SIZES:
        raise InvalidArgument("group_size", group_size,
                              f"must be {' or '.join(map(str, GROUP_SIZES))} [docs/firmware.md §1.3.5]")
    group = int(group_size)
    if (fmt_i, group) not in DEQUANT_PATHS:
        rec = dequant_format(fmt_i)
        with_group = [f.code for f in DEQUANT_FORMATS if group in f.paths]
        raise InvalidArgument("group_size", group,
                              f"group {group} is allowed only with fmt {_ranges(with_group).replace('-', '..')}; "
                              f"{rec.title} (fmt {fmt_i}) runs only with group "
                              f"{' or '.join(map(str, rec.groups))} [docs/firmware.md §1.3.6]")
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


def _is_ml_bfloat16(dtype: np.dtype[Any]) -> bool:
    """Whether ``dtype`` is ml_dtypes' bfloat16 (imported here only for a dtype of that name: an array of it means
    ml_dtypes is imported already)."""
    import ml_dtypes

    return bool(dtype == ml_dtypes.bfloat16)


def normalize_quantize_mx_args(src: Any, dst_dtype: Any, knobs: Mapping[str, Any],
                               src_format: SrcFormat | None = None
                               ) -> tuple[np.ndarray, str, str, dict[str, Any]]:
    """Check every QuantizeMX rule before anything is computed.

    ``dst_dtype`` is an FP8 format in any spelling of :mod:`q7emu.model.dtypes` (``"e4m3"``,
    ``"float8_e4m3fn"``, ``np.dtype``, ``ml_dtypes.float8_e5m2``, ...). ``src`` is a float16 or ml_dtypes.bfloat16
    array, or, with ``src_format`` ("float16" / "bfloat16"), a uint16 array of those bit patterns (no ml_dtypes
    needed: its import alone takes 0.8-1.6 s). Returns ``(src_bits, src_kind, dst_dtype, knobs)``: ``src_bits`` is
    a C-contiguous uint16 array [P, F] of the raw fp16/bf16 bit patterns, ``src_kind`` is "float16" or "bfloat16",
    ``dst_dtype`` is "float8_e4m3fn" or "float8_e5m2", and ``knobs['scale_layout']`` is resolved from ``auto`` to
    ``scatter`` / ``compact``.
    """
    dst_dtype = fp8_dtype(dst_dtype, "dst_dtype")
    checked = check_knobs(knobs, QUANTIZE_MX_KNOBS)
    if not isinstance(src, np.ndarray):
        raise InvalidArgument("src", type(src).__name__, "must be a numpy array of float16 or bfloat16")
    if src_format is not None:
        if src_format not in QUANTIZE_MX_SRC_DTYPES:
            raise InvalidArgument("src_format", src_format, "must be float16 or bfloat16 (or None: src's dtype)")
        if src.dtype != np.uint16:
            raise InvalidArgument("src.dtype", str(src.dtype), f"must be uint16 (the {src_format} bit patterns) "
                                                               "when src_format is given")
        kind = src_format
    elif src.dtype == np.float16:
        kind = "float16"            # (no ml_dtypes: its import alone takes 0.8-1.6 s)
    elif src.dtype.name == "bfloat16" and _is_ml_bfloat16(src.dtype):
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
