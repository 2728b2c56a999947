"""What an output byte of a record is made of: :class:`SourceByte` and :class:`Explanation` (docs/cli.md §3.1
``diffs[].source``), which an opcode's spec fills in (q7emu.isa.opcode_spec.OpcodeSpec.explain) and the machine's
explainer (q7emu.machine.explain) hands to reports. Values are decoded by :mod:`q7emu.model.values` (no ml_dtypes).
"""
from __future__ import annotations

from dataclasses import field
from typing import Any, cast

from q7emu._dataclass import dataclass
from q7emu.model.knob_types import Nf4Table
from q7emu.model.values import DecodeOptions, decode, format_value, value_text

__all__ = ["SourceByte", "Explanation"]


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
