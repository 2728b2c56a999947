"""Number formats of the golden side: exact decoders and single-rounding encoders (plain numpy).

Formats (code width, definition):

=========  =====  ===========================================================================
name       bits   definition
=========  =====  ===========================================================================
fp4        4      OCP FP4 E2M1: s1 e2 m1, bias 1, no Inf/NaN, max 6.0, subnormal 0.5
int4       4      two's complement nibble, -8..7
nf4        4      index 0..15 into :data:`NF4_QLORA` (docs/model.md ``nf4_table = qlora``), float32
fp6        6      OCP FP6 E2M3: s1 e2 m3, bias 1, no Inf/NaN, max 7.5, min subnormal 0.125
e4m3       8      FP8 E4M3 "fn": bias 7, no Inf, 0x7F / 0xFF NaN, max 448, min subnormal 2^-9
e5m2       8      FP8 E5M2: bias 15, IEEE Inf (0x7C / 0xFC) and NaN, max 57344, min subnormal 2^-16
e8m0       8      OCP E8M0 scale: 2^(s-127), 0xFF NaN, no zero, no sign
fp16/bf16  16     IEEE binary16 / bfloat16 bit helpers
=========  =====  ===========================================================================

Conventions
-----------
* Codes are ``uint8`` arrays (any shape); 4- and 6-bit codes use the low bits only (a code with
  higher bits set is an :class:`~q7emu.errors.InvalidArgument`).
* ``decode_<fmt>(codes) -> float32`` array of the same shape, exact (every value of these formats
  is a float32). ``decode_e8m0`` returns **float64** because 2^128 is not a float32 (0xFF is NaN,
  but the ``e8m0-nonan`` knob of docs/model.md reads 0xFF as 2^128: see :func:`e8m0_scale`).
* ``encode_<fmt>(values, *, saturate=True) -> uint8`` codes. The input is converted to float64
  (exact for every float16 / bfloat16 / float32 / float64 input) and **rounded once**, round to
  nearest, ties to even, by q7emu's own table-and-midpoint rounding (:func:`_round_to_table`):
  the representable non-negative values are a sorted table; |x| is compared with the exact
  float64 midpoint of its two neighbours (the midpoint of two values with <= 4 significant bits
  is exact in float64), ties go to the even code. No ml_dtypes cast is used by the ≤ 8-bit
  encoders, so the tests that compare them with ml_dtypes are independent checks.
* Overflow: with ``saturate=True`` (the docs/model.md rule) any finite or infinite value beyond the
  largest finite value becomes ±max (E4M3 0x7E / 0xFE, E5M2 0x7B / 0xFB). With
  ``saturate=False`` the formats with a special code follow IEEE rounding: E4M3 values above the
  overflow midpoint 464 and ±Inf become NaN 0x7F (like ml_dtypes); E5M2 values >= 61440 become
  ±Inf (0x7C / 0xFC). FP4 / FP6 / INT4 / NF4 have no special codes and always saturate.
* NaN input: E4M3 -> 0x7F, E5M2 -> 0x7E (canonical, positive, whatever the NaN's sign).
  FP4 / FP6 / INT4 / NF4 cannot represent NaN: encoding a NaN raises ``InvalidArgument``.
* Signed zero is kept: -0.0 and negative values that round to zero encode with the sign bit
  (FP4 0x8, FP6 0x20, FP8 0x80). INT4 and NF4 have a single zero (codes 0 and 7).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from q7emu.errors import InternalError, InvalidArgument

#: model data, defined once in q7emu.model.tables (re-exported here: formats.NF4_QLORA, formats.E4M3_MAX, ...)
from q7emu.model.tables import E4M3_MAX, E5M2_MAX, NF4_QLORA

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "NF4_QLORA",
    "FP4_MAX", "FP6_MAX", "E4M3_MAX", "E5M2_MAX",
    "E4M3_NAN", "E5M2_NAN", "E8M0_NAN",
    "decode_fp4", "encode_fp4", "decode_int4", "encode_int4", "decode_nf4", "encode_nf4",
    "decode_fp6", "encode_fp6", "decode_e4m3", "encode_e4m3", "decode_e5m2", "encode_e5m2",
    "decode_e8m0", "encode_e8m0", "e8m0_scale",
    "decode_fp16", "encode_fp16", "decode_bf16", "encode_bf16",
    "decode_fp32_bits", "encode_fp32_bits",
    "DECODERS", "FP8_ENCODERS", "FP8_NAN",
]

FP4_MAX = 6.0
FP6_MAX = 7.5
E4M3_NAN = 0x7F   #: canonical quiet NaN written for E4M3 (positive)
E5M2_NAN = 0x7E   #: canonical quiet NaN written for E5M2 (positive)
E8M0_NAN = 0xFF


# ---------------------------------------------------------------- small-float definitions
def _minifloat_value(code: int, ebits: int, mbits: int, bias: int) -> float:
    """Value of a sign/exponent/mantissa code read as a plain finite number (no specials)."""
    sign = -1.0 if (code >> (ebits + mbits)) & 1 else 1.0
    e = (code >> mbits) & ((1 << ebits) - 1)
    m = code & ((1 << mbits) - 1)
    if e == 0:   # subnormal: m * 2^(1 - bias - mbits)
        return sign * m * 2.0 ** (1 - bias - mbits)
    return sign * (1.0 + m / (1 << mbits)) * 2.0 ** (e - bias)


class _Minifloat:
    """Table form of a sign-magnitude format: decode LUT plus the non-negative rounding table."""

    def __init__(self, name: str, ebits: int, mbits: int, bias: int, *,
                 nan_codes: tuple[int, ...] = (), inf_codes: tuple[int, ...] = (),
                 nan_out: int | None = None, overflow: tuple[int, float] | None = None) -> None:
        self.name = name
        self.bits = 1 + ebits + mbits
        self.sign_bit = 1 << (ebits + mbits)
        ncodes = 1 << self.bits
        lut = np.empty(ncodes, dtype=np.float64)
        for c in range(ncodes):
            if c in nan_codes:   # NaN carrying the code's sign bit (as ml_dtypes decodes it)
                lut[c] = -np.nan if c & self.sign_bit else np.nan
            elif c in inf_codes:
                lut[c] = -np.inf if c & self.sign_bit else np.inf
            else:
                lut[c] = _minifloat_value(c, ebits, mbits, bias)
        self.lut64 = lut
        self.lut32 = lut.astype(np.float32)
        # non-negative finite codes 0 .. sign_bit-1, excluding specials, ascending in value
        pos = [c for c in range(self.sign_bit) if c not in nan_codes and c not in inf_codes]
        self.table_codes = np.array(pos, dtype=np.uint8)
        self.table_values = lut[pos]
        if not np.all(np.diff(self.table_values) > 0):
            raise InternalError(f"{name}: the rounding table is not ascending in value")
        self.max_code = int(self.table_codes[-1])
        self.max_value = float(self.table_values[-1])
        # IEEE-style overflow target: (code, the value it stands for in the rounding), one step beyond the max
        self.overflow = overflow
        self.nan_out = nan_out

    def decode(self, codes: Any) -> np.ndarray:
        c = _check_codes(codes, self.bits, self.name)
        return self.lut32[c]

    def encode(self, values: Any, saturate: bool = True) -> np.ndarray:
        x = _as_f64(values)
        nan = np.isnan(x)
        if nan.any() and self.nan_out is None:
            raise InvalidArgument("values", "nan", f"{self.name} has no NaN encoding")
        a = np.abs(np.where(nan, 0.0, x))
        tv, tc = self.table_values, self.table_codes
        if self.overflow is not None:   # virtual next value beyond max (Inf / NaN code)
            tv = np.append(tv, self.overflow[1])
            tc = np.append(tc, np.uint8(self.overflow[0]))
        code = _round_to_table(a, tv, tc)
        if self.overflow is not None and saturate:
            code = np.where(code == self.overflow[0], np.uint8(self.max_code), code)
        sign = np.signbit(x) & ~nan
        code = code | np.where(sign, np.uint8(self.sign_bit), np.uint8(0)).astype(np.uint8)
        if self.nan_out is not None:
            code = np.where(nan, np.uint8(self.nan_out), code)
        return code.astype(np.uint8)


def _as_f64(values: Any) -> npt.NDArray[np.float64]:
    """values -> float64 array (exact for fp16, bf16, fp32, fp64 and integer inputs |v| < 2^53)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "fiub" or arr.dtype.name in _ML_REAL:
        with np.errstate(invalid="ignore"):
            return arr.astype(np.float64)
    raise InvalidArgument("values.dtype", str(arr.dtype), "must be a real numeric array")


_ML_REAL = {"bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
            "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz",
            "float8_e8m0fnu", "int2", "int4", "uint2", "uint4"}


def _check_codes(codes: Any, bits: int, name: str) -> npt.NDArray[np.intp]:
    """codes -> int array (any integer dtype accepted) with every code < 2^bits."""
    c = np.asarray(codes)
    if c.dtype.kind not in "ui":
        raise InvalidArgument("codes.dtype", str(c.dtype), f"{name} codes must be an unsigned integer array")
    if c.size and (int(c.min()) < 0 or int(c.max()) >= (1 << bits)):
        raise InvalidArgument("codes", int(c.max()) if c.size else 0, f"{name} codes must be 0..{(1 << bits) - 1}")
    return c.astype(np.intp)


def _round_to_table(a: np.ndarray, values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Round non-negative ``a`` (float64, no NaN) to the nearest entry of the ascending table.

    Ties go to the entry with the even code. Values beyond the last entry take the last entry.
    Exact: the only arithmetic is the midpoint ``(lo + hi) / 2`` which is exact in float64 for
    table entries with at most 24 significant bits whose exponents are within float64 range.
    """
    idx = np.searchsorted(values, a, side="left")            # values[idx-1] < a <= values[idx]
    idx_hi = np.minimum(idx, len(values) - 1)
    idx_lo = np.maximum(idx - 1, 0)
    lo, hi = values[idx_lo], values[idx_hi]
    mid = (lo + hi) / 2.0
    c_lo, c_hi = codes[idx_lo], codes[idx_hi]
    tie_pick = np.where(c_hi % 2 == 0, c_hi, c_lo)
    out = np.where(a < mid, c_lo, np.where(a > mid, c_hi, tie_pick))
    out = np.where(idx == 0, codes[0], out)                  # a <= smallest (0)
    out = np.where(idx >= len(values), codes[-1], out)       # a > largest
    return out.astype(np.uint8)


# These formats are also records of q7emu.model.format_table; the golden side defines them again from their bit
# fields on purpose (an independent transcription: firmware_tests/model/test_format_table.py compares the two).
_FP4 = _Minifloat("fp4 e2m1", 2, 1, 1)
_FP6 = _Minifloat("fp6 e2m3", 2, 3, 1)
_E4M3 = _Minifloat("fp8 e4m3", 4, 3, 7, nan_codes=(0x7F, 0xFF), nan_out=E4M3_NAN,
                   overflow=(E4M3_NAN, 480.0))  # 480 = next step after 448
_E5M2 = _Minifloat("fp8 e5m2", 5, 2, 15, nan_codes=(0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF),
                   inf_codes=(0x7C, 0xFC), nan_out=E5M2_NAN,
                   overflow=(0x7C, 65536.0))  # 2^16: the step after 57344 (midpoint 61440)

if (_E4M3.max_value, _E5M2.max_value, _FP4.max_value, _FP6.max_value) != (E4M3_MAX, E5M2_MAX, FP4_MAX, FP6_MAX):
    raise InternalError("the golden formats' maxima differ from E4M3_MAX, E5M2_MAX, FP4_MAX, FP6_MAX of q7emu.model")


# ---------------------------------------------------------------- public 4/6/8-bit codecs
def decode_fp4(codes: Any) -> np.ndarray:
    """FP4 E2M1 codes (0..15, any shape) -> float32 values, exact."""
    return _FP4.decode(codes)


def encode_fp4(values: Any, *, saturate: bool = True) -> np.ndarray:
    """Values -> FP4 E2M1 codes (uint8, 0..15), RNE, always saturating to ±6; NaN raises."""
    return _FP4.encode(values, saturate)


def decode_fp6(codes: Any) -> np.ndarray:
    """FP6 E2M3 codes (0..63) -> float32 values, exact."""
    return _FP6.decode(codes)


def encode_fp6(values: Any, *, saturate: bool = True) -> np.ndarray:
    """Values -> FP6 E2M3 codes (uint8, 0..63), RNE, always saturating to ±7.5; NaN raises."""
    return _FP6.encode(values, saturate)


def decode_e4m3(codes: Any) -> np.ndarray:
    """FP8 E4M3 (e4m3fn) codes (0..255) -> float32 values; 0x7F / 0xFF -> NaN (sign bit kept)."""
    return _E4M3.decode(codes)


def encode_e4m3(values: Any, *, saturate: bool = True) -> np.ndarray:
    """Values -> FP8 E4M3 codes, rounded once (RNE) from float64.

    ``saturate=True``: |x| > 448 (including ±Inf) -> ±448 (0x7E / 0xFE).
    ``saturate=False``: |x| > 464 and ±Inf -> NaN 0x7F / 0xFF keeping the sign (ml_dtypes
    behaviour). NaN input -> 0x7F.
    """
    return _E4M3.encode(values, saturate)


def decode_e5m2(codes: Any) -> np.ndarray:
    """FP8 E5M2 codes (0..255) -> float32 values; 0x7C / 0xFC -> ±Inf, 0x7D..0x7F / 0xFD..0xFF -> NaN."""
    return _E5M2.decode(codes)


def encode_e5m2(values: Any, *, saturate: bool = True) -> np.ndarray:
    """Values -> FP8 E5M2 codes, rounded once (RNE) from float64.

    ``saturate=True``: |x| > 57344 (including ±Inf) -> ±57344 (0x7B / 0xFB).
    ``saturate=False``: |x| >= 61440 and ±Inf -> ±Inf (0x7C / 0xFC). NaN -> 0x7E.
    """
    return _E5M2.encode(values, saturate)


def decode_int4(codes: Any) -> np.ndarray:
    """INT4 two's complement nibbles (0..15) -> float32 values -8..7 (code 8 = -8, 15 = -1)."""
    c = _check_codes(codes, 4, "int4")
    return ((c ^ 8) - 8).astype(np.float32)


def encode_int4(values: Any, *, saturate: bool = True) -> np.ndarray:
    """Values -> INT4 nibbles: RNE to an integer, saturated to -8..7, two's complement. NaN raises."""
    x = _as_f64(values)
    if np.isnan(x).any():
        raise InvalidArgument("values", "nan", "int4 has no NaN encoding")
    r = np.clip(np.rint(x), -8, 7).astype(np.int64)       # np.rint is round-half-even
    return (r & 0xF).astype(np.uint8)


def decode_nf4(codes: Any) -> np.ndarray:
    """NF4 indices (0..15) -> float32 values of :data:`NF4_QLORA`."""
    c = _check_codes(codes, 4, "nf4")
    return NF4_QLORA[c]


_NF4_ORDER = np.argsort(NF4_QLORA.astype(np.float64), kind="stable")


def encode_nf4(values: Any, *, saturate: bool = True) -> np.ndarray:
    """Values -> NF4 index of the nearest table entry (ties to the even index); NaN raises.

    The table is ascending in index, so values outside [-1, 1] saturate to index 0 / 15.
    Both zeros map to index 7.
    """
    x = _as_f64(values)
    if np.isnan(x).any():
        raise InvalidArgument("values", "nan", "nf4 has no NaN encoding")
    tv = NF4_QLORA.astype(np.float64)
    idx = np.searchsorted(tv, x, side="left")
    hi = np.minimum(idx, 15)
    lo = np.maximum(idx - 1, 0)
    mid = (tv[lo] + tv[hi]) / 2.0     # exact: both are float32 values
    tie = np.where(hi % 2 == 0, hi, lo)
    out = np.where(x < mid, lo, np.where(x > mid, hi, tie))
    return out.astype(np.uint8)


# ---------------------------------------------------------------- E8M0
def decode_e8m0(codes: Any) -> np.ndarray:
    """E8M0 scale bytes -> float64 2^(s-127) (s = 0 -> 2^-127, 254 -> 2^127); 0xFF -> NaN.

    float64 because 2^-127 is a float32 subnormal and the e8m0-nonan reading of 0xFF (2^128)
    is not a float32 at all.
    """
    c = _check_codes(codes, 8, "e8m0")
    out = np.ldexp(1.0, (c - 127).astype(np.int32))
    return np.where(c == E8M0_NAN, np.nan, out)


def e8m0_scale(codes: Any, *, nonan: bool = False) -> np.ndarray:
    """Scale multiplier of E8M0 bytes as float64: 2^(s-127); 0xFF -> NaN, or 2^128 if ``nonan``."""
    c = _check_codes(codes, 8, "e8m0")
    out = np.ldexp(1.0, (c - 127).astype(np.int32))
    return out if nonan else np.where(c == E8M0_NAN, np.nan, out)


def encode_e8m0(values: Any, *, saturate: bool = True) -> np.ndarray:
    """Positive values -> E8M0 bytes. A power of two 2^k (-127 <= k <= 127) encodes as k + 127.

    Other positive values round to the nearest power of two measured linearly, ties upward
    (x = 1.5 * 2^k -> 2^(k+1)), which is ml_dtypes' float8_e8m0fnu rounding for normal float32
    inputs (for float32 subnormals in [2^-127, 1.5 * 2^-127) ml_dtypes gives 0x01; we give 0x00). Values below
    2^-127 give 0x00. Values rounding above 2^127 (and +Inf) give 0xFE with ``saturate=True``,
    0xFF (NaN) otherwise. Zero, negative values and NaN -> 0xFF (E8M0 has no zero and no sign).
    """
    x = _as_f64(values)
    bad = ~(x > 0) | np.isnan(x)
    xs = np.where(bad, 1.0, np.where(np.isinf(x), 2.0 ** 1000, x))
    mant, exp = np.frexp(xs)               # xs = mant * 2^exp, mant in [0.5, 1)
    k = exp - 1 + (mant >= 0.75).astype(np.int64)   # floor(log2 x) + (x >= 1.5 * 2^floor)
    code = k + 127
    code = np.maximum(code, 0)
    too_big = code > 254
    code = np.where(too_big, 254 if saturate else 255, code)
    code = np.where(bad, 255, code)
    return code.astype(np.uint8)


# ---------------------------------------------------------------- fp16 / bf16 / fp32 bit helpers
def _bits_check(bits: Any, nbits: int, name: str) -> np.ndarray:
    b = np.asarray(bits)
    if b.dtype.kind not in "ui":
        raise InvalidArgument(f"{name}.dtype", str(b.dtype), "bit patterns must be an integer array")
    if b.size and (int(b.min()) < 0 or int(b.max()) >= (1 << nbits)):
        raise InvalidArgument(name, int(b.max()), f"must be 0..{(1 << nbits) - 1}")
    return b


def decode_fp16(bits: Any) -> np.ndarray:
    """IEEE binary16 bit patterns (uint16) -> float32 values (exact)."""
    b = _bits_check(bits, 16, "bits").astype(np.uint16)
    return b.view(np.float16).astype(np.float32)


def encode_fp16(values: Any) -> np.ndarray:
    """Values -> binary16 bit patterns (uint16), RNE once from float64 (IEEE overflow to Inf).

    numpy's float64 -> float16 cast rounds directly from the double's bits (no float32 step).
    NaN stays NaN (numpy sets the quiet bit; payload bits above it are kept).
    """
    with np.errstate(over="ignore"):
        return _as_f64(values).astype(np.float16).view(np.uint16)


def decode_bf16(bits: Any) -> np.ndarray:
    """bfloat16 bit patterns (uint16) -> float32 values (exact: bits << 16)."""
    b = _bits_check(bits, 16, "bits").astype(np.uint32)
    return (b << np.uint32(16)).view(np.float32)


def _f64_to_f32_round_to_odd(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 with round-to-odd (truncate, then set the last bit if inexact).

    Rounding to odd at 24 bits, then RNE to p <= 22 bits, equals a single RNE to p bits.
    """
    with np.errstate(over="ignore"):
        t = x.astype(np.float32)
    big = np.abs(t.astype(np.float64)) > np.abs(x)           # RNE went away from zero: step back
    t = np.where(big, np.nextafter(t, np.float32(0.0)), t)
    inexact = (t.astype(np.float64) != x) & ~np.isnan(x)
    tb = t.view(np.uint32) | np.where(inexact, np.uint32(1), np.uint32(0))
    return tb.view(np.float32)


def encode_bf16(values: Any) -> np.ndarray:
    """Values -> bfloat16 bit patterns (uint16), RNE once from float64 (overflow to Inf).

    float64 -> float32 by round-to-odd, then float32 -> bfloat16 by RNE on the bits; NaN -> 0x7FC0
    (with the input's sign).
    """
    x = _as_f64(values)
    f = np.atleast_1d(_f64_to_f32_round_to_odd(x)).view(np.uint32).astype(np.uint64)
    lsb = (f >> np.uint64(16)) & np.uint64(1)
    r = (f + np.uint64(0x7FFF) + lsb) >> np.uint64(16)
    nan = np.atleast_1d(np.isnan(x))
    r = np.where(nan, (f >> np.uint64(16)) & np.uint64(0x8000) | np.uint64(0x7FC0), r)
    return r.astype(np.uint16).reshape(np.shape(x))


def decode_fp32_bits(bits: Any) -> np.ndarray:
    """uint32 bit patterns -> float32 values."""
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def encode_fp32_bits(values: Any) -> np.ndarray:
    """Values -> float32 bit patterns (uint32), numpy RNE from float64."""
    with np.errstate(over="ignore"):
        return _as_f64(values).astype(np.float32).view(np.uint32)


# ---------------------------------------------------------------- by the format table's names
#: the exact decoder of each TensorDequantize source format, by its short name (q7emu.model.format_table)
DECODERS: dict[str, Callable[[Any], np.ndarray]] = {"e2m1": decode_fp4, "int4": decode_int4, "nf4": decode_nf4,
                                                    "e2m3": decode_fp6}
#: the single-rounding encoder and the NaN code written of each FP8 format, by its canonical name
FP8_ENCODERS: dict[str, Callable[..., np.ndarray]] = {"float8_e4m3fn": encode_e4m3, "float8_e5m2": encode_e5m2}
FP8_NAN: dict[str, int] = {"float8_e4m3fn": E4M3_NAN, "float8_e5m2": E5M2_NAN}
