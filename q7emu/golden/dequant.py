"""Golden model of TensorDequantize (opcode 0x7b, POOL): docs/model.md §1 in plain numpy.

Independent of the Cython kernels: it shares only the argument rules (:mod:`q7emu.model.knobs`), the model
constants (the NF4 codebook of :mod:`q7emu.model.tables`, through :mod:`q7emu.golden.formats`) and which FP8 format
each source format writes (:mod:`q7emu.model.format_table`); the values themselves are computed by
:mod:`q7emu.golden.formats`' own decoders and encoders.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from q7emu.errors import InternalError
from q7emu.golden import formats
from q7emu.model.dtypes import FmtArg
from q7emu.model.format_table import MX_BLOCK_BYTES, MX_BLOCK_GROUPS, dequant_format, fp6_code_shift, nibble_shift
from q7emu.model.format_table import mx_layout as mx_layout_of
from q7emu.model.kernels import PATH_RATIO
from q7emu.model.knobs import (
    Fp6Packing,
    MxLayout,
    MxScale,
    Nf4Table,
    NibbleOrder,
    dequant_out_bytes,
    normalize_dequant_args,
)

__all__ = ["dequantize", "unpack_nibbles", "unpack_fp6", "split_mx_groups", "code_values"]


def unpack_nibbles(b: np.ndarray, nibble_order: NibbleOrder) -> np.ndarray:
    """uint8 [P, n] -> uint8 codes [P, 2n] in element order.

    ``low-first``: the low nibble of byte i is element 2i, the high nibble element 2i+1;
    ``high-first``: the reverse.
    """
    first, second = ((b >> nibble_shift(nibble_order, k)) & 0x0F for k in (0, 1))
    return np.stack([first, second], axis=-1).reshape(b.shape[0], -1).astype(np.uint8)


def unpack_fp6(b: np.ndarray, fp6_packing: Fp6Packing) -> np.ndarray:
    """uint8 [P, 3n] -> uint8 FP6 codes [P, 4n] in element order.

    Each 3 bytes b0 b1 b2 form w = b0 | b1 << 8 | b2 << 16; code k (0..3) is bits [6k, 6k+6)
    (``lsb-first``) or bits [18-6k, 24-6k) (``msb-first``).
    """
    p = b.shape[0]
    t = b.reshape(p, -1, 3).astype(np.uint32)
    w = t[..., 0] | (t[..., 1] << 8) | (t[..., 2] << 16)
    shifts = [fp6_code_shift(fp6_packing, k) for k in range(4)]
    codes = np.stack([(w >> s) & 0x3F for s in shifts], axis=-1)
    return codes.reshape(p, -1).astype(np.uint8)


def split_mx_groups(b: np.ndarray, mx_layout: MxLayout) -> tuple[np.ndarray, np.ndarray]:
    """uint8 [P, 5g] group-8 stream -> (scale bytes uint8 [P, g], code bytes uint8 [P, g, 4]).

    ``scale-first``: each 5-byte group is [scale][4 code bytes]; ``scale-last``: [4 code bytes][scale];
    ``word-block``: every 20 bytes (5 words) = 4 scale bytes (byte j = scale of group j) then
    four 4-byte code words, one per group. The stream length is a multiple of 20 bytes (the
    argument rules ask for a multiple of 5 words), so all three layouts tile it exactly.
    """
    p = b.shape[0]
    lay = mx_layout_of(mx_layout)                                   # the format table's formula
    groups = range(MX_BLOCK_GROUPS)
    t = b.reshape(p, -1, MX_BLOCK_BYTES)
    scales = t[..., [lay.scale_byte(g) for g in groups]].reshape(p, -1)
    codes = t[..., [lay.code_byte(g, j) for g in groups for j in range(4)]].reshape(p, -1, 4)
    return scales.copy(), codes.copy()


def code_values(codes: np.ndarray, fmt: int) -> np.ndarray:
    """Exact float64 value of each code: FP4 E2M1 (1), INT4 (2), NF4 qlora float32 (3), FP6 E2M3 (4): the decoder of
    the format's short name (:data:`q7emu.golden.formats.DECODERS`)."""
    dec = formats.DECODERS[dequant_format(fmt).short]
    return dec(codes).astype(np.float64)


#: source bytes (all partitions together) the golden model converts at a time (docs/limits.md §5)
BLOCK_BYTES = 1 << 18


def _dequantize_block(b: np.ndarray, fmt_i: int, path: str, knobs: dict[str, Any]) -> np.ndarray:
    """FP8 codes uint8 [P, out] of the source columns ``b`` [P, in] (whole groups of the path)."""
    p = b.shape[0]
    out_format = dequant_format(fmt_i).out                    # E5M2 for FP4 / INT4, E4M3 for NF4 / FP6
    encode = formats.FP8_ENCODERS[out_format]
    nan_code = formats.FP8_NAN[out_format]
    if path == "proc_6bit_non_mx":
        vals = code_values(unpack_fp6(b, knobs["fp6_packing"]), fmt_i)
        out = encode(vals, saturate=True)
    elif path == "proc_4bit_non_mx":
        vals = code_values(unpack_nibbles(b, knobs["nibble_order"]), fmt_i)
        out = encode(vals, saturate=True)
    else:
        scales, code_bytes = split_mx_groups(b, knobs["mx_layout"])          # [P, g], [P, g, 4]
        g = scales.shape[1]
        codes = unpack_nibbles(code_bytes.reshape(p, -1), knobs["nibble_order"]).reshape(p, g, 8)
        mult = formats.e8m0_scale(scales, nonan=knobs["mx_scale"] == "e8m0-nonan")   # float64 [P, g]
        nan_group = np.isnan(mult)
        vals = code_values(codes, fmt_i) * np.where(nan_group, 1.0, mult)[..., None]  # exact in float64
        out = encode(vals, saturate=True)
        out = np.where(nan_group[..., None], np.uint8(nan_code), out).reshape(p, g * 8)
    return np.asarray(out, dtype=np.uint8).reshape(p, -1)


def dequantize(src: Any, fmt: FmtArg, group_size: int = 0, *, nibble_order: NibbleOrder = "low-first",
               fp6_packing: Fp6Packing = "lsb-first", mx_layout: MxLayout = "scale-first", mx_scale: MxScale = "e8m0",
               nf4_table: Nf4Table = "qlora") -> np.ndarray:
    """Golden TensorDequantize of one source stream.

    Parameters
    ----------
    src : uint8 [P, in_bytes] or uint32 [P, in_words] (little-endian words), P = 1..128.
        The bytes of each partition in address order.
    fmt : 1..4 (E2M1->E5M2, INT4->E5M2, NF4->E4M3, E2M3->E4M3), a DequantFmt or a name.
    group_size : 0 (no scale) or 8 (in-band E8M0 scale per 8 codes; fmt 1..3 only).
    knobs : docs/model.md §1.

    Returns
    -------
    uint8 [P, out_bytes] FP8 codes (E5M2 for fmt 1, 2; E4M3 for fmt 3, 4) in input element
    order; out_bytes = in_bytes x 2 (4-bit, group 0), x 4/3 (FP6), x 8/5 (group 8).

    Each output is ``fp8(value(code) * 2^(s-127))`` computed exactly in float64 and rounded once
    (RNE, saturating). Under ``mx_scale='e8m0'`` a group with s = 0xFF is all NaN (0x7E / 0x7F);
    under ``e8m0-nonan`` 0xFF is 2^128. Every invalid argument raises InvalidArgument.
    """
    b, fmt_i, group, path, knobs = normalize_dequant_args(
        src, fmt, group_size, dict(nibble_order=nibble_order, fp6_packing=fp6_packing,
                                   mx_layout=mx_layout, mx_scale=mx_scale, nf4_table=nf4_table))
    p, n = b.shape
    # in column blocks of whole source groups (a path's words in), BLOCK_BYTES of source at a time: the float64
    # temporaries are tens of bytes per code (a full SBUF at once peaked at 1.4 GB; docs/limits.md §5)
    unit = 4 * PATH_RATIO[path][0]
    width = max(unit, BLOCK_BYTES // p // unit * unit)
    out = np.empty((p, dequant_out_bytes(n, path)), dtype=np.uint8)
    for c0 in range(0, n, width):
        block = b[:, c0:c0 + width]
        o0, want = dequant_out_bytes(c0, path), dequant_out_bytes(block.shape[1], path)
        got = _dequantize_block(block, fmt_i, path, knobs)
        if got.shape != (p, want):
            raise InternalError(f"golden {path}: {got.shape[1]} output bytes per partition for {block.shape[1]} "
                                f"input bytes, expected {want}")
        out[:, o0:o0 + want] = got
    return out
