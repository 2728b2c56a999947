"""The format table: one record per TensorDequantize source format and per FP8 output format (docs/model.md §10).

Every layer reads a format's facts from here (ml_dtypes' habit: one record per format, the tests parametrised over
the list): the DEQUANT_FMT codes, names and paths of :mod:`q7emu.model.kernels`, the spellings of
:mod:`q7emu.model.dtypes`, the knob rules of :mod:`q7emu.model.knobs`, the kernels' constant vectors (the rodata
builders of the kernel programs), the golden models' choice of decoder and encoder, the listings and the command
line. Two layers keep their own transcription on purpose and say so where they do: the
validity predicate (q7emu/isa/validate.py, the firmware's clauses as docs/firmware.md §1.3 writes them) and the
golden models' arithmetic (q7emu/golden/formats.py defines each format's values from its bit fields).

* :class:`Fp8Format` / :data:`FP8_FORMATS`: E4M3 "fn" and E5M2, the FP8 formats TensorDequantize writes and
  QuantizeMX quantizes to.
* :class:`DequantFormat` / :data:`DEQUANT_FORMATS`: the DEQUANT_FMT source formats 1..4 (docs/firmware.md §2.1),
  with the firmware path each group size runs, the MX codebook and the re-bias MAC numbers (:class:`Rebias`).
* :class:`DequantPath` / :data:`DEQUANT_PATH_TABLE`: the three TensorDequantize firmware paths (docs/firmware.md
  §1.5) with their words in : out and the knobs the path itself reads.
* :class:`DequantFmt`: the DEQUANT_FMT enumeration, one member per record (a test checks they agree).
* :class:`MxGroupLayout` / :data:`MX_LAYOUTS`, :func:`nibble_shift`, :func:`fp6_code_shift`: where each code and
  each MX scale sits in a source stream under the knobs ``mx_layout``, ``nibble_order`` and ``fp6_packing``
  (docs/model.md §1): the one statement of these byte layouts that the golden model, the kernels' constant vectors
  and programs, and the reports' explanations all read.
* :data:`DequantFmtName`, :data:`Fp8Name`: the lower-case spellings an API argument accepts, as ``Literal`` types
  for a type checker (a test checks they equal the records' names).

Adding a source format that runs on the existing paths: its record here (and its DequantFmt member and spellings),
its golden decoder (q7emu/golden/formats.py ``DECODERS``) and the validity clause (q7emu/isa/validate.py); see
CONTRIBUTING.md. This module is data only.
"""
from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Literal, TypeAlias

from q7emu._dataclass import dataclass
from q7emu.model.knob_types import Fp6Packing, NibbleOrder

__all__ = ["Fp8Format", "FP8_FORMATS", "Rebias", "DequantFormat", "DEQUANT_FORMATS", "DequantPath",
           "DEQUANT_PATH_TABLE", "DequantFmt", "DequantFmtName", "Fp8Name", "fp8_format",
           "dequant_format", "dequant_path", "MxGroupLayout", "MX_LAYOUTS", "MX_BLOCK_BYTES", "MX_BLOCK_GROUPS",
           "mx_layout", "nibble_shift", "fp6_code_shift", "source_format_name", "out_format_name", "codebook_triples"]


# ---------------------------------------------------------------------------------------------- FP8 outputs
@dataclass(frozen=True)
class Fp8Format:
    """One FP8 output format (docs/firmware.md §2.1, §3.1; docs/model.md §1, §2)."""

    name: str                       # canonical name, the ml_dtypes one: "float8_e4m3fn"
    short: str                      # "e4m3"
    dtype: str                      # the firmware DTYPE enumerator (docs/firmware.md §5): "FP8_EXP4"
    aliases: tuple[str, ...]        # other accepted spellings (lower case, "_" for "-"), besides name / short / dtype
    exp_bits: int
    mant_bits: int
    bias: int
    max_code: int                   # the largest finite code (positive)
    max_value: float                # its value: the saturation bound
    nan_code: int                   # the NaN code q7emu writes (positive; docs/model.md §7 item 1)
    max_exp: Mapping[str, int]      # QuantizeMX max_exp per ``emax`` knob value (docs/model.md §2)

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every accepted spelling: name, short name, the DTYPE enumerator (lower case), the aliases."""
        return tuple(dict.fromkeys((self.name, self.short, self.dtype.lower(), *self.aliases)))


FP8_FORMATS: tuple[Fp8Format, ...] = (
    Fp8Format("float8_e4m3fn", "e4m3", "FP8_EXP4", ("e4m3fn", "fp8_e4m3", "fp8_e4m3fn", "float8_e4m3fn_x4"),
              exp_bits=4, mant_bits=3, bias=7, max_code=0x7E, max_value=448.0, nan_code=0x7F,
              max_exp=MappingProxyType({"ocp": 8, "alt": 7})),
    Fp8Format("float8_e5m2", "e5m2", "FP8_EXP5", ("fp8_e5m2", "float8_e5m2_x4"),
              exp_bits=5, mant_bits=2, bias=15, max_code=0x7B, max_value=57344.0, nan_code=0x7E,
              max_exp=MappingProxyType({"ocp": 15, "alt": 14})),
)


# ---------------------------------------------------------------------------------------------- paths
@dataclass(frozen=True)
class DequantPath:
    """One TensorDequantize firmware path (docs/firmware.md §1.5): its kernel name, the group size that selects it,
    source words : destination words (docs/firmware.md §1.3 clause 11), the source bytes one pass of its main loop
    reads (one partition), and the knobs the path reads whatever the format (docs/model.md §1)."""

    name: str
    group: int
    ratio: tuple[int, int]
    pass_bytes: int
    knobs: tuple[str, ...] = ()


DEQUANT_PATH_TABLE: tuple[DequantPath, ...] = (
    DequantPath("proc_4bit_non_mx", 0, (1, 2), 32),                  # 32 bytes = 64 nibble codes
    DequantPath("proc_4bit_mx_8", 8, (5, 8), 40, ("mx_layout", "mx_scale")),   # 8 groups of 4 code bytes + scale
    DequantPath("proc_6bit_non_mx", 0, (3, 4), 48),                  # 48 bytes = 64 six-bit codes
)


# ---------------------------------------------------------------------------------------------- source formats
@dataclass(frozen=True)
class Rebias:
    """The re-bias MAC path's numbers of one format (docs/model.md §9.7 item 7): the fp16 pattern of -|value| of a
    code with selector X is BIAS * w1 + wX X + w1 |p1 - X| + w2 |p2 - X| + w3 |p3 - X| (mod 2^16); for FP6 the
    E4M3 byte in the high byte. ``neg_min`` is -(the smallest magnitude), the zero gate's bound; ``x`` the
    selector X of each code 0 .. 2^bits - 1 (the code's sign, its top bit, goes to bit 15 of the table entry)."""

    p1: int
    p2: int
    p3: int                         # the third kink (0 with w3 = 0: none)
    bias: int                       # the BIAS register, in units of w1
    w1: int                         # 16-bit patterns of the MAC weights
    wx: int
    w2: int
    w3: int
    neg_min: int
    x: tuple[int, ...]

    def numbers(self) -> tuple[int, ...]:
        """(p1, p2, p3, BIAS, w1, wX, w2, w3, -min): the order docs/model.md §9.7 writes them."""
        return (self.p1, self.p2, self.p3, self.bias, self.w1, self.wx, self.w2, self.w3, self.neg_min)


@dataclass(frozen=True)
class DequantFormat:
    """One TensorDequantize source format, a DEQUANT_FMT code (docs/firmware.md §2.1; docs/model.md §1)."""

    code: int                       # the DEQUANT_FMT value
    member: str                     # its DequantFmt member (the firmware's enumerator): "E2M1_TO_E5M2"
    short: str                      # the public short name: "e2m1"
    name: str                       # canonical name, the ml_dtypes one where it exists: "float4_e2m1fn"
    aliases: tuple[str, ...]        # other accepted spellings, besides name / short / member / dtype
    title: str                      # how the docs name the input code: "FP4 E2M1"
    bits: int                       # bits per code
    out: str                        # the FP8 output format (an Fp8Format name)
    paths: Mapping[int, str]        # group size -> the firmware path (a DequantPath name) it runs
    knobs: tuple[str, ...]          # the knobs the format reads on every path (docs/model.md §1)
    dtype: str | None = None        # the firmware DTYPE enumerator of the source, where there is one
    codebook: tuple[float, ...] | None = None   # each code's exact value (the MX codebook); None: ``codebook_knob``
    codebook_knob: str | None = None            # the knob whose value picks the codebook (q7emu.model.tables)
    rebias: Rebias | None = None    # group 0 runs the re-bias MAC path with these numbers; None: the codebook path

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every accepted spelling: name, short name, the enumerator names (lower case), the aliases."""
        names = (self.name, self.short, self.member.lower(), *((self.dtype.lower(),) if self.dtype else ()))
        return tuple(dict.fromkeys((*names, *self.aliases)))

    @property
    def groups(self) -> tuple[int, ...]:
        """The group sizes the format runs with."""
        return tuple(self.paths)

    @property
    def out_format(self) -> Fp8Format:
        """Its FP8 output format's record."""
        return fp8_format(self.out)


def _two(v: tuple[float, ...]) -> tuple[float, ...]:
    """A sign-magnitude codebook: the 8 magnitudes, then their negatives (code c >= 8: sign set)."""
    return (*v, *(-m for m in v))


DEQUANT_FORMATS: tuple[DequantFormat, ...] = (
    DequantFormat(
        1, "E2M1_TO_E5M2", "e2m1", "float4_e2m1fn", ("fp4", "float4_e2m1fn_x4"), "FP4 E2M1", 4, "float8_e5m2",
        MappingProxyType({0: "proc_4bit_non_mx", 8: "proc_4bit_mx_8"}), ("nibble_order",), dtype="FP4_EXP2",
        codebook=_two((0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)),
        # 0xB700 + 512 X + 256 |1 - X| - 256 |2 - X|, X = c & 7
        rebias=Rebias(1, 2, 0, 183, 0x0100, 0x0200, 0xFF00, 0, 0xB800, tuple(c & 7 for c in range(16)))),
    DequantFormat(
        2, "INT4_TO_E5M2", "int4", "int4", (), "two's complement -8..7", 4, "float8_e5m2",
        MappingProxyType({0: "proc_4bit_non_mx", 8: "proc_4bit_mx_8"}), ("nibble_order",), dtype="INT4",
        codebook=tuple(float(c if c < 8 else c - 16) for c in range(16)),
        # 0xD000 - 640 X - 256 |6 - X| - 128 |4 - X|, X = |c - 8| (the magnitude is 8 - X)
        rebias=Rebias(6, 4, 0, -208, 0xFF00, 0xFD80, 0xFF80, 0, 0xBC00, tuple(abs(c - 8) for c in range(16)))),
    DequantFormat(
        3, "NF4_TO_E4M3", "nf4", "nf4", ("nf4to_e4m3",), "an index into the NF4 table", 4, "float8_e4m3fn",
        MappingProxyType({0: "proc_4bit_non_mx", 8: "proc_4bit_mx_8"}), ("nibble_order", "nf4_table"),
        codebook_knob="nf4_table"),
    DequantFormat(
        4, "E2M3_TO_E4M3", "e2m3", "float6_e2m3fn", ("fp6",), "FP6 E2M3", 6, "float8_e4m3fn",
        MappingProxyType({0: "proc_6bit_non_mx"}), ("fp6_packing",),
        # 0xA400 + 1152 X - 512 |2 - X| - 256 |4 - X| - 128 |8 - X| (E4M3 in the high byte), X = c & 31
        rebias=Rebias(2, 4, 8, 46, 0xFE00, 0x0480, 0xFF00, 0xFF80, 0xA000, tuple(c & 31 for c in range(64)))),
)


class DequantFmt(enum.IntEnum):
    """NEURON_ISA_TPB_DEQUANT_FMT (docs/firmware.md §2.1): one member per :data:`DEQUANT_FORMATS` record."""

    E2M1_TO_E5M2 = 1
    INT4_TO_E5M2 = 2
    NF4_TO_E4M3 = 3
    E2M3_TO_E4M3 = 4


#: the spellings of a TensorDequantize source format an API argument accepts (every record's ``spellings``)
DequantFmtName: TypeAlias = Literal[
    "float4_e2m1fn", "e2m1", "e2m1_to_e5m2", "fp4_exp2", "fp4", "float4_e2m1fn_x4",
    "int4", "int4_to_e5m2",
    "nf4", "nf4_to_e4m3", "nf4to_e4m3",
    "float6_e2m3fn", "e2m3", "e2m3_to_e4m3", "fp6",
]
#: the spellings of an FP8 format an API argument accepts (every FP8 record's ``spellings``)
Fp8Name: TypeAlias = Literal[
    "float8_e4m3fn", "e4m3", "fp8_exp4", "e4m3fn", "fp8_e4m3", "fp8_e4m3fn", "float8_e4m3fn_x4",
    "float8_e5m2", "e5m2", "fp8_exp5", "fp8_e5m2", "float8_e5m2_x4",
]

_FP8_BY_NAME: dict[str, Fp8Format] = {f.name: f for f in FP8_FORMATS}
_BY_CODE: dict[int, DequantFormat] = {f.code: f for f in DEQUANT_FORMATS}
_PATH_BY_NAME: dict[str, DequantPath] = {p.name: p for p in DEQUANT_PATH_TABLE}


def fp8_format(name: str) -> Fp8Format:
    """The record of an FP8 format by canonical name (``"float8_e4m3fn"`` / ``"float8_e5m2"``); KeyError otherwise
    (the argument rules of q7emu.model.dtypes turn any spelling into the name first)."""
    return _FP8_BY_NAME[name]


def dequant_format(code: int) -> DequantFormat:
    """The record of a DEQUANT_FMT code; KeyError for a code q7emu has no format for (checked before: the
    argument rules of q7emu.model.knobs)."""
    return _BY_CODE[int(code)]


def dequant_path(name: str) -> DequantPath:
    """The record of a TensorDequantize path by kernel name (``"proc_4bit_mx_8"``); KeyError otherwise."""
    return _PATH_BY_NAME[name]


# ---------------------------------------------------------------------------------------------- source byte layouts
#: the group-8 stream is read in blocks of 4 MX groups: 5 words = 20 bytes (4 scale bytes, 16 code bytes)
MX_BLOCK_BYTES = 20
MX_BLOCK_GROUPS = 4


@dataclass(frozen=True)
class MxGroupLayout:
    """Where the scale byte and the 4 code bytes of each MX group sit in a group-8 source stream under one value of
    the ``mx_layout`` knob (docs/model.md §1). The stream is read in blocks of :data:`MX_BLOCK_GROUPS` groups, each
    :data:`MX_BLOCK_BYTES` bytes; group g is group ``g % 4`` of block ``g // 4``, and inside its block

    * its scale byte is at ``scale_base + scale_step * (g % 4)``;
    * its code byte j (0..3, codes 2j and 2j+1 of the group) at ``code_base + code_step * (g % 4) + j``.

    ``scale-first`` [scale][4 code bytes] per group: (0, 5, 1, 5); ``scale-last`` [4 code bytes][scale]: (4, 5, 0, 5);
    ``word-block`` a word of the 4 scales, then one code word per group: (0, 1, 4, 4)."""

    name: str                       # the knob value
    scale_base: int
    scale_step: int
    code_base: int
    code_step: int

    def scale_byte(self, group: int) -> int:
        """The stream byte (0-based, one partition) that holds the E8M0 scale of MX group ``group``."""
        block, g = divmod(group, MX_BLOCK_GROUPS)
        return MX_BLOCK_BYTES * block + self.scale_base + self.scale_step * g

    def code_byte(self, group: int, j: int) -> int:
        """The stream byte that holds codes 2j and 2j+1 (j = 0..3) of MX group ``group``."""
        block, g = divmod(group, MX_BLOCK_GROUPS)
        return MX_BLOCK_BYTES * block + self.code_base + self.code_step * g + j


MX_LAYOUTS: tuple[MxGroupLayout, ...] = (
    MxGroupLayout("scale-first", 0, 5, 1, 5),
    MxGroupLayout("scale-last", 4, 5, 0, 5),
    MxGroupLayout("word-block", 0, 1, 4, 4),
)
_MX_BY_NAME: dict[str, MxGroupLayout] = {m.name: m for m in MX_LAYOUTS}


def mx_layout(name: str) -> MxGroupLayout:
    """The layout of an ``mx_layout`` knob value; KeyError otherwise (the knob rules check the value first)."""
    return _MX_BY_NAME[name]


def nibble_shift(nibble_order: NibbleOrder, k: int) -> int:
    """The shift of code k (0: the byte's first code, 1: its second) in its byte under ``nibble_order``
    (docs/model.md §1): ``low-first`` reads the low nibble first."""
    return 4 * k if nibble_order == "low-first" else 4 - 4 * k


def fp6_code_shift(fp6_packing: Fp6Packing, k: int) -> int:
    """The shift of FP6 code k (0..3) in the 24-bit word w = b0 | b1 << 8 | b2 << 16 of its 3 bytes under
    ``fp6_packing`` (docs/model.md §1): bits [6k, 6k+6) ``lsb-first``, bits [18-6k, 24-6k) ``msb-first``."""
    return 6 * k if fp6_packing == "lsb-first" else 18 - 6 * k


def source_format_name(code: int) -> str:
    """How reports name a DEQUANT_FMT code's source format (``E2M1``, ``INT4``, ``NF4``, ``E2M3``: the short name in
    capitals, the name q7emu.model.values decodes), ``fmt5`` for a code without a record."""
    f = _BY_CODE.get(int(code))
    return f.short.upper() if f is not None else f"fmt{int(code)}"


def out_format_name(fp8_name: str) -> str:
    """How reports name an FP8 format (``E4M3`` / ``E5M2``) from its canonical name."""
    return fp8_format(fp8_name).short.upper()


def codebook_triples(values: Iterable[float], ebias: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The soft-float triple of each of 16 codebook values (float32), as the kernels' codebook path reads them (the
    constant vectors of the programs' data sections, their symbols): SIG (the top 14 significand bits and a sticky
    bit, the leading one at bit 14; 0 for zero), EXP (the unbiased exponent minus ``ebias``; -16384 for zero), SGN
    (0x80 for a negative value). The sticky bit keeps the later single rounding to <= 4 bits exact."""
    bits = [int.from_bytes(struct.pack("<f", float(v)), "little") for v in values]
    if len(bits) != 16:
        raise ValueError(f"a codebook has 16 values, not {len(bits)}")
    sig, exp, sgn = [], [], []
    for b in bits:
        e, m = (b >> 23) & 0xFF, b & 0x7FFFFF
        sgn.append(((b >> 31) & 1) * 0x80)
        if e == 0 and m == 0:
            sig.append(0)
            exp.append(-16384)
            continue
        if e == 0:                      # float32 subnormal: normalise
            sh = 24 - m.bit_length()
            m24, ue = m << sh, -126 - sh
        else:
            m24, ue = m | 0x800000, e - 127
        sig.append((m24 >> 9) | (1 if (m24 & 0x1FF) else 0))
        exp.append(ue - ebias)
    return tuple(sig), tuple(exp), tuple(sgn)
