"""The value of one code in each number format the kernels read or write, for reports a person reads.

Plain Python, no numpy and no ml_dtypes (whose import alone costs more than a second): a replay report decodes a
handful of bytes, so it must not pay for a vector library. ``firmware_tests/machine/test_values.py`` checks every
code of every format against ml_dtypes (and the NF4 codebook of :mod:`q7emu.model.tables`).

Formats (names as q7emu prints them; docs/cli.md §7 lists every spelling the arguments accept):

========  =====  ==============================================================================
name      bits   reading
========  =====  ==============================================================================
E4M3      8      FP8 E4M3 "fn" (bias 7, no Inf, 0x7F / 0xFF NaN), the NF4 / FP6 output, QuantizeMX FP8_EXP4
E5M2      8      FP8 E5M2 (bias 15, IEEE Inf / NaN), the FP4 / INT4 output, QuantizeMX FP8_EXP5
E8M0      8      MX scale: 2^(s - 127), 0xFF NaN (docs/model.md §1; ``mx_scale = e8m0-nonan`` reads it as 2^128)
E2M1      4      FP4 (bias 1, no specials)
INT4      4      two's complement -8..7
NF4       4      index into the ``nf4_table`` codebook (qlora)
E2M3      6      FP6 (bias 1, no specials)
FP16      16     IEEE binary16
BF16      16     bfloat16 (the top half of an IEEE binary32)
========  =====  ==============================================================================
"""
from __future__ import annotations

import math
import struct
from typing import TypedDict, Unpack

from q7emu.model.knob_types import Nf4Table

__all__ = ["FORMATS", "decode", "format_value", "value_text", "format_bits"]

#: format name -> bits per code
FORMATS: dict[str, int] = {"E4M3": 8, "E5M2": 8, "E8M0": 8, "E2M1": 4, "INT4": 4, "NF4": 4, "E2M3": 6,
                           "FP16": 16, "BF16": 16}

# bitsandbytes' NF4 codebook (nf4_table = qlora), the float32 values of q7emu.model.tables.NF4_QLORA as Python
# floats (a test checks the two agree; importing tables would import numpy)
_NF4_QLORA = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)


def format_bits(fmt: str) -> int:
    """Bits per code of ``fmt`` (a name of :data:`FORMATS`, case-insensitive); ValueError for another name."""
    try:
        return FORMATS[fmt.upper()]
    except KeyError:
        raise ValueError(f"format {fmt!r}: not one of {', '.join(FORMATS)}") from None


def _minifloat(code: int, ebits: int, mbits: int, bias: int) -> float:
    sign = -1.0 if (code >> (ebits + mbits)) & 1 else 1.0
    e = (code >> mbits) & ((1 << ebits) - 1)
    m = code & ((1 << mbits) - 1)
    if e == 0:
        return sign * math.ldexp(m, 1 - bias - mbits)
    return sign * math.ldexp((1 << mbits) + m, e - bias - mbits)


def decode(code: int, fmt: str, *, nf4_table: Nf4Table = "qlora", e8m0_nonan: bool = False) -> float:
    """The value of ``code`` (an int of ``fmt``'s width) as a Python float: NaN / +-Inf where the format has them.

    ``fmt``: a name of :data:`FORMATS`. E8M0 0xFF is NaN, or 2^128 with ``e8m0_nonan``. ValueError for an unknown
    format, an unknown ``nf4_table`` or a code outside the format's width."""
    bits = format_bits(fmt)
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < (1 << bits):
        raise ValueError(f"code {code!r}: not a {bits}-bit {fmt.upper()} code")
    f = fmt.upper()
    if f == "E4M3":
        if code & 0x7F == 0x7F:
            return -math.nan if code & 0x80 else math.nan
        return _minifloat(code, 4, 3, 7)
    if f == "E5M2":
        e, m = (code >> 2) & 0x1F, code & 3
        if e == 0x1F:
            if m:
                return -math.nan if code & 0x80 else math.nan
            return -math.inf if code & 0x80 else math.inf
        return _minifloat(code, 5, 2, 15)
    if f == "E8M0":
        if code == 0xFF:
            return math.ldexp(1.0, 128) if e8m0_nonan else math.nan
        return math.ldexp(1.0, code - 127)
    if f == "E2M1":
        return _minifloat(code, 2, 1, 1)
    if f == "E2M3":
        return _minifloat(code, 2, 3, 1)
    if f == "INT4":
        return float(code - 16 if code & 8 else code)
    if f == "NF4":
        if nf4_table != "qlora":
            raise ValueError(f"nf4_table {nf4_table!r}: q7emu knows qlora")
        return _NF4_QLORA[code]
    if f == "FP16":
        return float(struct.unpack("<e", code.to_bytes(2, "little"))[0])
    # BF16: the top half of a binary32
    return float(struct.unpack("<f", (code << 16).to_bytes(4, "little"))[0])


def value_text(value: float, *, power_of_two: bool = False) -> str:
    """A value as a person reads it: the shortest repr that round-trips (``0.625``, ``-448.0``, ``1e-06``),
    ``NaN``, ``inf`` / ``-inf``; powers of two below 2^-10 or above 2^10 (any power of two with
    ``power_of_two``, as for E8M0 scales) as ``2^-16``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value != 0:
        m, e = math.frexp(abs(value))
        if m == 0.5 and (power_of_two or not -10 <= e - 1 <= 10):
            return ("-" if value < 0 else "") + f"2^{e - 1}"
    return repr(float(value))


class DecodeOptions(TypedDict, total=False):
    """The keyword options of :func:`decode`, as :func:`format_value` passes them on."""

    nf4_table: Nf4Table
    e8m0_nonan: bool


def format_value(code: int, fmt: str, **kw: Unpack[DecodeOptions]) -> str:
    """``0x39 = 0.625 E5M2``: the code in hex (width of the format), its value and the format's name."""
    bits = format_bits(fmt)
    digits = max(1, (bits + 3) // 4)
    text = value_text(decode(code, fmt, **kw), power_of_two=fmt.upper() == "E8M0")
    return f"0x{code:0{digits}x} = {text} {fmt.upper()}"
