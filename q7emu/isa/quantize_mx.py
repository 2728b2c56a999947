"""The spec of DVE opcode 0xE3 QuantizeMX (:class:`QuantizeMxSpec`; docs/firmware.md §3, docs/model.md §2).

The record is :class:`~q7emu.isa.records.S3DMX1Quant`. Its reading is q7emu's choice (docs/firmware.md does not pin
it; docs/model.md §4):

* src: the TENSOR3D's u32 elements per partition are the fp16/bf16 source (in_dtype), two per word, element 2i in
  the low half (little-endian): F = 2 * count(src) free elements, P = num_active_channels partitions.
* dst data: MXTENSOR1D ``start_addr`` (a quadrant-base partition), ``num_elem`` = F/4 u32 words per partition,
  ``step_elem`` their signed stride in u32 elements (0 broadcasts); word j holds FP8 elements 4j..4j+3 (element
  4j+k in byte k).
* dst scales: one E8M0 byte per 8-partition x 4-element block, bytes contiguous from ``scale_addr``'s byte offset
  (block column j at +j). Block row i (partitions 8i..8i+7 of the active range) lands on partition
  ``scale_base + 32*(i // 4) + scale_pidx + (i % 4)``: each quadrant's 4 scale rows at scale_pidx..scale_pidx+3 of
  that quadrant. Data is written first, scales second (a scale byte wins an overlap). Other bytes untouched.
* the header's saturate bit is shown but has no effect: docs/model.md §2 always saturates.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from q7emu.errors import InternalError
from q7emu.isa import opcode_spec as spec
from q7emu.isa.enums import DType, Engine, Opcode
from q7emu.isa.explanation import Explanation
from q7emu.isa.records import Addr4, S3DMX1Quant
from q7emu.kernels.tracing import TraceRecorder
from q7emu.model.dtypes import fp8_dtype

__all__ = ["QuantizeMxSpec", "scale_partition"]

#: partitions per MX block row, quadrants of SBUF, scale rows per quadrant
BLOCK_PARTITIONS, QUADRANT, QUADRANT_ROWS = 8, 32, 4


_Rows = TypeVar("_Rows", int, npt.NDArray[np.int64])


def scale_partition(scale_base: int, scale_pidx: int, row: _Rows) -> _Rows:
    """The SBUF partition of scale row ``row`` (an int or an int64 array; module docstring): ``scale_base + 32 *
    (row // 4) + scale_pidx + row % 4``, the one statement of the QuantizeMX scale-byte address."""
    return scale_base + QUADRANT * (row // QUADRANT_ROWS) + scale_pidx + row % QUADRANT_ROWS


class QuantizeMxSpec(spec.FirmwareOpcodeSpec, opcode=Opcode.QUANTIZE_MX, name="QuantizeMX", engine=Engine.DVE,
                     record_class=S3DMX1Quant):
    """DVE 0xE3 QuantizeMX (module docstring)."""

    def addresses(self, record: S3DMX1Quant) -> list[tuple[str, Addr4]]:
        return [("src.start_addr", record.src.start_addr), ("dst.start_addr", record.dst.start_addr),
                ("dst.scale_addr", record.dst.scale_addr)]

    def pattern_counts(self, record: S3DMX1Quant) -> list[tuple[str, int]]:
        return [("src", record.src.count), ("dst", record.dst.num_elem)]

    # ------------------------------------------------------------------ kernels
    # ------------------------------------------------------------------ geometry
    def source(self, record: S3DMX1Quant) -> spec.SourcePattern:
        return spec.SourcePattern(record.src, record.num_active_channels)

    def destination(self, record: S3DMX1Quant, partition_bytes: int) -> spec.Destination:
        """``data``: uint8 [P, 4 * num_elem] (byte 4j + k of a row: element 4j + k, in byte k of data word j);
        ``scale``: uint8 [P/8, num_elem], block row i at :func:`scale_partition`, block column j at byte +j, placed
        one quadrant (4 rows) at a time."""
        d = record.dst
        dp, doff = d.start_addr.locate(partition_bytes)
        words = doff + 4 * np.arange(d.num_elem, dtype=np.int64) * d.step_elem
        data = spec.Placement("data", np.arange(dp, dp + record.num_active_channels, dtype=np.int64),
                         (words[:, None] + np.arange(4, dtype=np.int64)).reshape(-1))
        sp, soff = d.scale_addr.locate(partition_bytes)
        scale_offsets = soff + np.arange(d.num_elem, dtype=np.int64)
        scales = []
        for q in range(record.num_active_channels // QUADRANT):     # one placement (one write) per quadrant
            rows = np.arange(QUADRANT_ROWS * q, QUADRANT_ROWS * (q + 1), dtype=np.int64)
            scales.append(spec.Placement("scale", scale_partition(sp, d.scale_pidx, rows), scale_offsets, rows))
        return spec.Destination((data, *scales), dp,
                                (("dst.start_addr", d.start_addr), ("dst.scale_addr", d.scale_addr)))

    # ------------------------------------------------------------------ the run
    def run(self, record: S3DMX1Quant, words: npt.NDArray[np.uint32], kernel: spec.KernelFunction,
            knobs: Mapping[str, str], trace: TraceRecorder | None) -> dict[str, npt.NDArray[np.uint8]]:
        """The kernel's arguments: the fp16 / bf16 source (P x F), the FP8 output dtype, ``scale_layout="compact"``
        (the record places the scales) and the QuantizeMX knobs."""
        r = self.record(record)
        nac = r.num_active_channels
        # the fp16 / bf16 bit patterns as they are (src_format): a bf16 view would need ml_dtypes, whose import
        # alone took 0.76 s of a one-case replay's 1.16
        src = np.ascontiguousarray(words, dtype="<u4").view("<u2").astype(np.uint16, copy=False)   # (copies if it must)
        src_format = "float16" if r.in_dtype == DType.FP16 else "bfloat16"
        dst_dtype = fp8_dtype(DType(r.out_dtype), "out_dtype")          # FP8_EXP4 / FP8_EXP5 (validated)
        kwargs: dict[str, Any] = dict(scale_layout="compact", src_format=src_format,
                                      **{k: knobs[k] for k in self.kernels[0].knobs})
        if trace is not None:
            kwargs["trace"] = trace
        data, scale = kernel(src, dst_dtype, **kwargs)
        data, scale = np.asarray(data), np.asarray(scale)
        f4 = src.shape[1] // 4
        if data.shape != (nac, f4) or scale.shape != (nac // BLOCK_PARTITIONS, f4):
            raise InternalError(f"quantize_mx returned data {data.shape}, scale {scale.shape}")
        return {"data": np.ascontiguousarray(data.astype("<u4")).view(np.uint8),
                "scale": np.ascontiguousarray(scale.astype(np.uint8))}

    # ------------------------------------------------------------------ reports
    def out_format(self, record: S3DMX1Quant, part: str = "data") -> str | None:
        """``E8M0`` for the scales; the data's FP8 format by out_dtype (E4M3 for FP8_EXP4, else E5M2)."""
        if part == "scale":
            return "E8M0"
        return "E4M3" if record.out_dtype == DType.FP8_EXP4 else "E5M2"

    def byte_role(self, record: S3DMX1Quant, partition: int, part: str, row: int, column: int) -> spec.ByteRole:
        """A data byte is output element ``column`` of block (row // 8, column // 4); a scale byte is the scale of
        block (row, column)."""
        if part == "scale":
            return spec.ByteRole(partition, part, row, column, mx_block=(row, column))
        return spec.ByteRole(partition, part, row, column, element=column,
                        mx_block=(row // BLOCK_PARTITIONS, column // 4))

    def explain(self, record: S3DMX1Quant, stream: spec.SourceStream, role: spec.ByteRole,
                knobs: dict[str, str]) -> Explanation:
        """A data byte: its fp16 / bf16 source element and the SBUF place of its block's scale byte; a scale byte:
        its block and place."""
        ex = Explanation(knobs=knobs)
        d = record.dst
        sp, soff = d.scale_addr.locate(stream.partition_bytes)
        if role.part == "scale" and role.mx_block is not None:
            ex.out_format = "E8M0"
            ex.block = role.mx_block
            ex.scale_at = (role.partition, soff + role.mx_block[1])
            return ex
        if role.element is None:
            return ex
        element, row = role.element, role.row
        ex.out_format = self.out_format(record)
        ex.source_format = "FP16" if record.in_dtype == DType.FP16 else "BF16"
        lo = stream.byte(row, 2 * element)
        hi = stream.byte(row, 2 * element + 1)
        if lo is not None and hi is not None:
            ex.source = [lo, hi]
            ex.code = lo.value | hi.value << 8
            ex.code_where = f"{ex.source_format.lower()} element {element}"
        bi, bj = row // BLOCK_PARTITIONS, element // 4
        ex.block = (bi, bj)
        ex.scale_at = (scale_partition(sp, d.scale_pidx, bi), soff + bj)
        return ex

    def keywords(self, record: S3DMX1Quant) -> set[str]:
        """``quantize_mx``, its input (``fp16`` / ``bf16``) and output format (``e4m3`` / ``e5m2``)."""
        return {"quantize_mx", "fp16" if record.in_dtype == DType.FP16 else "bf16",
                "e4m3" if record.out_dtype == DType.FP8_EXP4 else "e5m2"}

    def listing_configuration(self, record: S3DMX1Quant) -> dict[str, Any]:
        return {"kernel": self.kernels[0].name,
                "src_dtype": "float16" if record.in_dtype == DType.FP16 else "bfloat16",
                "dst_dtype": fp8_dtype(DType(record.out_dtype), "out_dtype")}
