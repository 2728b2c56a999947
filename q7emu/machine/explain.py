"""Where one output byte of a record comes from, for mismatch reports a person can read.

Given a case (its record, knobs and input regions) and an SBUF (partition, byte offset) that the record writes,
:func:`explain_byte` names

* the output format and the value of a byte in it (``0x39 = 0.625 E5M2``; an E8M0 scale byte as ``2^-2``);
* the source byte(s) in SBUF that produce the element, their values before the record ran (the case's input
  regions over its fill), and the code the element is decoded from (``low nibble 0x5 = 3.0 E2M1``; an FP6 code's
  bits; a QuantizeMX fp16 / bf16 element);
* for a TensorDequantize group-8 record the in-band scale byte of the element's MX group (its SBUF place and
  value), for QuantizeMX the 8-partition x 4-element block and the SBUF place of its E8M0 scale byte.

The readings are the machine's (q7emu.machine.machine: the source stream is the record's u32 elements in
address order per partition) and docs/model.md §1 (the layouts the knobs ``nibble_order``, ``fp6_packing`` and
``mx_layout`` choose). Values are decoded by :mod:`q7emu.model.values` (no ml_dtypes).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from q7emu.errors import Q7Error
from q7emu.isa.enums import DType
from q7emu.isa.records import S3D3TensDequant, S3DMX1Quant, decode_record
from q7emu.machine.machine import NUM_PARTITIONS, Region, element_offsets, normalize_machine_knobs
from q7emu.model.knob_types import Nf4Table
from q7emu.model.values import DecodeOptions, decode, format_value, value_text

__all__ = ["SourceByte", "Explanation", "Explainer", "output_format"]

#: TensorDequantize dequant_fmt -> (source code format, output FP8 format) [docs/firmware.md §2.1]
_DEQUANT_FORMATS = {1: ("E2M1", "E5M2"), 2: ("INT4", "E5M2"), 3: ("NF4", "E4M3"), 4: ("E2M3", "E4M3")}


@dataclass(frozen=True, slots=True)
class SourceByte:
    """One SBUF byte the record reads: partition, byte offset and its value before the record ran."""

    partition: int
    offset: int
    value: int

    def text(self) -> str:
        """``0x4f at p77 0x10a``."""
        return f"0x{self.value:02x} at p{self.partition} 0x{self.offset:x}"

    def to_json(self) -> dict[str, int]:
        """``{"partition", "offset", "value"}``."""
        return {"partition": self.partition, "offset": self.offset, "value": self.value}


@dataclass(slots=True)
class Explanation:
    """Where an output byte comes from (see the module docstring); ``None`` fields do not apply. The
    explanations of one :class:`Explainer` share its ``knobs`` dict (read-only): a replay keeps up to 100,000 of
    them (docs/limits.md §5)."""

    out_format: str | None = None            # E5M2 / E4M3 (data) or E8M0 (a QuantizeMX scale byte)
    source: list[SourceByte] = field(default_factory=list)
    source_format: str | None = None         # E2M1 / INT4 / NF4 / E2M3 / FP16 / BF16
    code: int | None = None
    code_where: str | None = None            # "low nibble", "bits 6..11 of 3 bytes", "fp16 element 37"
    scale: SourceByte | None = None          # 0x7B group 8: the group's in-band E8M0 scale byte
    mx_group: int | None = None
    block: tuple[int, int] | None = None     # 0xE3: (block row, block column)
    scale_at: tuple[int, int] | None = None  # 0xE3: (partition, offset) of the block's scale byte
    knobs: dict[str, str] = field(default_factory=dict)

    def value(self, byte: int) -> str:
        """``0x39 = 0.625 E5M2`` (or just ``0x39`` when the format is unknown)."""
        return format_value(byte, self.out_format) if self.out_format else f"0x{byte:02x}"

    def code_text(self) -> str | None:
        """``low nibble 0x5 = 3.0 E2M1`` / ``fp16 0x3c00 = 1.0``."""
        if self.code is None or self.source_format is None:
            return None
        return f"{self.code_where} {format_value(self.code, self.source_format, **self._code_kw())}"

    def _code_kw(self) -> DecodeOptions:
        if self.source_format != "NF4":
            return {}
        return {"nf4_table": cast(Nf4Table, self.knobs.get("nf4_table", "qlora"))}     # checked with the knobs

    def source_text(self) -> str | None:
        """One line: the source bytes, the code they hold and (0x7B MX) the group's scale byte."""
        if not self.source:
            return None
        what = ", ".join(s.text() for s in self.source)
        line = f"source byte{'s' if len(self.source) > 1 else ''} {what}"
        code = self.code_text()
        if code:
            line += f": {code}"
        if self.scale is not None:
            nonan = self.knobs.get("mx_scale") == "e8m0-nonan"
            line += (f"; MX group {self.mx_group} scale byte {self.scale.text()} = "
                     f"{value_text(decode(self.scale.value, 'E8M0', e8m0_nonan=nonan), power_of_two=True)}")
        return line

    def to_json(self) -> dict[str, Any]:
        """The explanation as JSON (docs/cli.md §3.1 ``diffs[].source``)."""
        code_value = None
        if self.code is not None and self.source_format is not None:
            code_value = _json_number(decode(self.code, self.source_format, **self._code_kw()))
        return {"format": self.out_format, "source_format": self.source_format,
                "bytes": [s.to_json() for s in self.source], "code": self.code, "code_where": self.code_where,
                "code_value": code_value, "code_text": self.code_text(),
                "scale": None if self.scale is None else {**self.scale.to_json(), "mx_group": self.mx_group},
                "mx_block": None if self.block is None else list(self.block),
                "scale_at": None if self.scale_at is None else {"partition": self.scale_at[0],
                                                               "offset": self.scale_at[1]}}


def _json_number(v: float) -> float | None:
    """A float for JSON: NaN / Inf (not JSON) become None; the ``*_text`` fields spell them."""
    return None if v != v or v in (float("inf"), float("-inf")) else v


def output_format(record: bytes) -> str | None:
    """The FP8 format of a record's data output (``E5M2`` / ``E4M3``), None when it does not decode."""
    try:
        r = decode_record(bytes(record))
    except (Q7Error, ValueError):
        return None
    if isinstance(r, S3D3TensDequant):
        pair = _DEQUANT_FORMATS.get(int(r.dequant_fmt))
        return pair[1] if pair else None
    if isinstance(r, S3DMX1Quant):
        return "E4M3" if r.out_dtype == DType.FP8_EXP4 else "E5M2"
    return None


class Explainer:
    """Explains output bytes of one case (its record at its partition size, its knobs over ``knobs``, the SBUF
    its input regions and fill give before the record runs)."""

    def __init__(self, record: bytes, partition_bytes: int, inputs: Sequence[tuple[Region, np.ndarray]],
                 fill: int = 0, knobs: dict[str, Any] | None = None) -> None:
        self.pb = partition_bytes
        self.inputs = list(inputs)
        self.fill = fill
        try:
            self.knobs = normalize_machine_knobs(knobs)
        except Q7Error:
            self.knobs = normalize_machine_knobs(None)
        self.out_format = output_format(record)
        self.rec: Any = None
        self.src_p0 = self.dst_p0 = 0
        self.src_offs = np.zeros(0, np.int64)
        try:
            r = decode_record(bytes(record))
            if isinstance(r, (S3D3TensDequant, S3DMX1Quant)):
                self.src_p0, soff = r.src.start_addr.locate(partition_bytes)
                self.dst_p0 = r.dst.start_addr.locate(partition_bytes)[0]
                if r.src.count <= 1 << 24:
                    self.src_offs = element_offsets(r.src, soff)
                    self.rec = r
        except (Q7Error, ValueError):
            self.rec = None

    def sbuf_byte(self, partition: int, offset: int) -> int:
        """The SBUF byte at (partition, offset) before the record ran: the last input region holding it, else
        the fill."""
        for reg, arr in reversed(self.inputs):
            if (reg.partition <= partition < reg.partition + reg.count
                    and reg.offset <= offset < reg.offset + reg.length):
                return int(arr[partition - reg.partition, offset - reg.offset])
        return self.fill

    def _stream_byte(self, row: int, j: int) -> SourceByte | None:
        """Byte ``j`` of the source stream of active partition ``row`` (None past the stream's end)."""
        if not 0 <= j < 4 * self.src_offs.size:
            return None
        p, off = self.src_p0 + row, int(self.src_offs[j // 4]) + j % 4
        if not (0 <= p < NUM_PARTITIONS and 0 <= off < self.pb):
            return None
        return SourceByte(p, off, self.sbuf_byte(p, off))

    def explain(self, partition: int, part: str, element: int | None,
                block: tuple[int, int] | None = None) -> Explanation:
        """The :class:`Explanation` of the output byte at ``partition`` that is output ``element`` (``part``
        ``data``) or the scale byte of QuantizeMX block ``block`` (``part`` ``scale``)."""
        ex = Explanation(knobs=self.knobs)
        r = self.rec
        if r is None or part == "unwritten":
            return ex
        if isinstance(r, S3DMX1Quant):
            return self._explain_qmx(ex, partition, part, element, block)
        if part != "data" or element is None:
            return ex
        pair = _DEQUANT_FORMATS.get(int(r.dequant_fmt))
        if pair is None:
            return ex
        ex.source_format, ex.out_format = pair
        row = partition - self.dst_p0
        k = self.knobs
        if int(r.group_size) == 8:
            g, jj = divmod(element, 8)
            ex.mx_group = g
            lay = k["mx_layout"]
            if lay == "word-block":
                base = 20 * (g // 4)
                scale_j, code0 = base + g % 4, base + 4 + 4 * (g % 4)
            elif lay == "scale-last":
                scale_j, code0 = 5 * g + 4, 5 * g
            else:
                scale_j, code0 = 5 * g, 5 * g + 1
            ex.scale = self._stream_byte(row, scale_j)
            self._nibble(ex, row, code0 + jj // 2, jj % 2)
        elif int(r.dequant_fmt) == 4:
            q, kk = divmod(element, 4)
            bs = [self._stream_byte(row, 3 * q + i) for i in range(3)]
            if any(b is None for b in bs):
                return ex
            ex.source = [b for b in bs if b is not None]
            w = ex.source[0].value | ex.source[1].value << 8 | ex.source[2].value << 16
            shift = 6 * kk if k["fp6_packing"] == "lsb-first" else 18 - 6 * kk
            ex.code = (w >> shift) & 0x3F
            ex.code_where = f"bits {shift}..{shift + 5} of the 3 bytes"
        else:
            self._nibble(ex, row, element // 2, element % 2)
        return ex

    def _nibble(self, ex: Explanation, row: int, j: int, second: int) -> None:
        b = self._stream_byte(row, j)
        if b is None:
            return
        ex.source = [b]
        high = (second == 1) == (self.knobs["nibble_order"] == "low-first")
        ex.code = (b.value >> 4) if high else (b.value & 0xF)
        ex.code_where = "high nibble" if high else "low nibble"

    def _explain_qmx(self, ex: Explanation, partition: int, part: str, element: int | None,
                     block: tuple[int, int] | None) -> Explanation:
        r = self.rec
        d = r.dst
        sp, soff = d.scale_addr.locate(self.pb)
        if part == "scale" and block is not None:
            ex.out_format = "E8M0"
            ex.block = block
            ex.scale_at = (partition, soff + block[1])
            return ex
        if element is None:
            return ex
        ex.out_format = self.out_format
        row = partition - self.dst_p0
        ex.source_format = "FP16" if r.in_dtype == DType.FP16 else "BF16"
        lo = self._stream_byte(row, 2 * element)
        hi = self._stream_byte(row, 2 * element + 1)
        if lo is not None and hi is not None:
            ex.source = [lo, hi]
            ex.code = lo.value | hi.value << 8
            ex.code_where = f"{ex.source_format.lower()} element {element}"
        bi, bj = row // 8, element // 4
        ex.block = (bi, bj)
        ex.scale_at = (sp + 32 * (bi // 4) + d.scale_pidx + bi % 4, soff + bj)
        return ex
