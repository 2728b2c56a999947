"""The spec of POOL opcode 0x7B TensorDequantize (:class:`TensorDequantizeSpec`; docs/firmware.md §1, docs/model.md §1).

The record is :class:`~q7emu.isa.records.S3D3TensDequant`. The machine's reading (docs/model.md §4): the source
TENSOR3D's u32 elements, per active partition, are the packed codes in address order; the kernel the (dequant_fmt,
group_size) pair selects writes 4 FP8 bytes per destination u32 element, element k of the destination stream at the
k-th element of the destination TENSOR3D in the same active partitions from its start partition (a byte addressed
twice: the last element written wins). Where a code and a group's scale sit in the stream is the format table's
(q7emu.model.format_table: ``nibble_shift``, ``fp6_code_shift``, ``MxGroupLayout``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from q7emu import registry
from q7emu.errors import InternalError, InvalidArgument, Q7Error
from q7emu.isa.enums import Engine, Opcode
from q7emu.isa.explanation import Explanation
from q7emu.isa.opcode_spec import (
    MAX_MAPPED_ELEMENTS,
    ByteRole,
    Destination,
    FirmwareOpcodeSpec,
    KernelFunction,
    Placement,
    SourcePattern,
    SourceStream,
    element_offsets,
)
from q7emu.isa.records import Addr4, S3D3TensDequant
from q7emu.kernels.tracing import TraceRecorder
from q7emu.model.format_table import (
    DEQUANT_FORMATS,
    dequant_format,
    fp6_code_shift,
    mx_layout,
    nibble_shift,
    out_format_name,
    source_format_name,
)
from q7emu.model.kernels import path_name
from q7emu.model.knob_types import Fp6Packing, NibbleOrder
from q7emu.model.knobs import DEQUANT_KNOBS
from q7emu.registry import KernelEntry

__all__ = ["TensorDequantizeSpec"]

_KNOWN_FMTS = frozenset(f.code for f in DEQUANT_FORMATS)


class TensorDequantizeSpec(FirmwareOpcodeSpec, opcode=Opcode.TENSOR_DEQUANTIZE, name="TensorDequantize",
                           engine=Engine.POOL, record_class=S3D3TensDequant):
    """POOL 0x7B TensorDequantize (module docstring)."""

    def addresses(self, record: S3D3TensDequant) -> list[tuple[str, Addr4]]:
        return [("src.start_addr", record.src.start_addr), ("dst.start_addr", record.dst.start_addr)]

    def pattern_counts(self, record: S3D3TensDequant) -> list[tuple[str, int]]:
        return [("src", record.src.count), ("dst", record.dst.count)]

    def describe(self, record: S3D3TensDequant) -> str:
        return f"opcode 0x{self.opcode:02x}, dequant_fmt {record.dequant_fmt}, group_size {record.group_size}"

    # ------------------------------------------------------------------ kernels
    def kernel(self, record: S3D3TensDequant) -> KernelEntry | None:
        """The path (dequant_fmt, group_size) selects (docs/firmware.md §1.5)."""
        return registry.select(self.opcode, int(record.dequant_fmt), int(record.group_size))

    def record_knobs(self, record: S3D3TensDequant) -> tuple[str, ...]:
        entry = self.kernel(record)
        return entry.knobs_for(int(record.dequant_fmt), int(record.group_size)) if entry is not None else ()

    # ------------------------------------------------------------------ geometry
    def source(self, record: S3D3TensDequant) -> SourcePattern:
        return SourcePattern(record.src, record.num_active_channels)

    def destination(self, record: S3D3TensDequant, partition_bytes: int) -> Destination:
        """``data``: uint8 [num_active_channels, 4 * count(dst)], byte 4k + i of a row at byte i of destination
        element k. InvalidArgument for a destination of more than MAX_MAPPED_ELEMENTS elements."""
        if record.dst.count > MAX_MAPPED_ELEMENTS:
            raise InvalidArgument("dst", record.dst.count, f"q7emu maps at most {MAX_MAPPED_ELEMENTS} elements")
        dp, doff = record.dst.start_addr.locate(partition_bytes)
        offs = (element_offsets(record.dst, doff)[:, None] + np.arange(4, dtype=np.int64)).reshape(-1)
        parts = np.arange(dp, dp + record.num_active_channels, dtype=np.int64)
        return Destination((Placement("data", parts, offs),), dp, (("dst.start_addr", record.dst.start_addr),))

    # ------------------------------------------------------------------ the run
    def run(self, record: S3D3TensDequant, words: npt.NDArray[np.uint32], kernel: KernelFunction,
            knobs: Mapping[str, str], trace: TraceRecorder | None) -> dict[str, npt.NDArray[np.uint8]]:
        """The kernel's arguments: the source bytes (uint8 [P, 4 * count(src)]), dequant_fmt, group_size and the
        TensorDequantize knobs."""
        r = self.record(record)
        nac = r.num_active_channels
        src = np.ascontiguousarray(words, dtype="<u4").view(np.uint8)   # (a copy only when it must)
        kwargs: dict[str, Any] = {k: knobs[k] for k in DEQUANT_KNOBS}
        if trace is not None:
            kwargs["trace"] = trace
        out = np.asarray(kernel(src, r.dequant_fmt, r.group_size, **kwargs))
        if out.dtype != np.uint8 or out.shape != (nac, r.dst.count * 4):
            raise InternalError(f"dequantize returned {out.dtype} {out.shape}, expected uint8 "
                                f"({nac}, {r.dst.count * 4})")
        return {"data": out}

    # ------------------------------------------------------------------ reports
    def out_format(self, record: S3D3TensDequant, part: str = "data") -> str | None:
        """The FP8 format the source format writes (the format table), None for a code without a format."""
        fmt = int(record.dequant_fmt)
        return out_format_name(dequant_format(fmt).out) if fmt in _KNOWN_FMTS else None

    def byte_role(self, record: S3D3TensDequant, partition: int, part: str, row: int, column: int) -> ByteRole:
        """Output byte ``column`` is output element ``column``; under group 8 in MX group ``column // 8``."""
        group = column // 8 if int(record.group_size) == 8 else None
        return ByteRole(partition, part, row, column, element=column, mx_group=group)

    def explain(self, record: S3D3TensDequant, stream: SourceStream, role: ByteRole,
                knobs: dict[str, str]) -> Explanation:
        """The code an output element is decoded from (its nibble, or its FP6 bits) and, under group 8, the group's
        in-band scale byte (docs/model.md §1)."""
        ex = Explanation(knobs=knobs)
        fmt = int(record.dequant_fmt)
        if role.part != "data" or role.element is None or fmt not in _KNOWN_FMTS:
            return ex
        ex.source_format, ex.out_format = source_format_name(fmt), self.out_format(record)
        element, row = role.element, role.row
        if int(record.group_size) == 8:
            g, jj = divmod(element, 8)
            ex.mx_group = g
            lay = mx_layout(knobs["mx_layout"])
            ex.scale = stream.byte(row, lay.scale_byte(g))
            self._nibble(ex, stream, row, lay.code_byte(g, jj // 2), jj % 2, knobs)
        elif dequant_format(fmt).bits == 6:
            self._fp6(ex, stream, row, element, knobs)
        else:
            self._nibble(ex, stream, row, element // 2, element % 2, knobs)
        return ex

    @staticmethod
    def _nibble(ex: Explanation, stream: SourceStream, row: int, j: int, k: int, knobs: Mapping[str, str]) -> None:
        """Code k (0, 1) of stream byte j."""
        b = stream.byte(row, j)
        if b is None:
            return
        ex.source = [b]
        shift = nibble_shift(cast(NibbleOrder, knobs["nibble_order"]), k)        # checked with the knobs
        ex.code = (b.value >> shift) & 0xF
        ex.code_where = "high nibble" if shift else "low nibble"

    @staticmethod
    def _fp6(ex: Explanation, stream: SourceStream, row: int, element: int, knobs: Mapping[str, str]) -> None:
        """Code ``element % 4`` of the 3 stream bytes of group ``element // 4``."""
        q, kk = divmod(element, 4)
        bs = [stream.byte(row, 3 * q + i) for i in range(3)]
        if any(b is None for b in bs):
            return
        ex.source = [b for b in bs if b is not None]
        w = ex.source[0].value | ex.source[1].value << 8 | ex.source[2].value << 16
        shift = fp6_code_shift(cast(Fp6Packing, knobs["fp6_packing"]), kk)      # checked with the knobs
        ex.code = (w >> shift) & 0x3F
        ex.code_where = f"bits {shift}..{shift + 5} of the 3 bytes"

    def keywords(self, record: S3D3TensDequant) -> set[str]:
        """``g0`` / ``g8``, the source format's short name (``fmt5`` for a code without one) and the path."""
        fmt, group = int(record.dequant_fmt), int(record.group_size)
        out = {f"g{group}", source_format_name(fmt).lower()}
        try:
            out.add(path_name(fmt, group))
        except (Q7Error, ValueError, KeyError):
            pass
        return out

    def listing_configuration(self, record: S3D3TensDequant) -> dict[str, Any]:
        entry = self.kernel(record)
        if entry is None:
            return super().listing_configuration(record)
        return {"kernel": entry.name, "fmt": int(record.dequant_fmt)}
