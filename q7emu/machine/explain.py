"""Where one output byte of a record comes from, for mismatch reports a person can read.

Given a case (its record, knobs and input regions) and an SBUF (partition, byte offset) that the record writes,
:meth:`Explainer.explain` names

* the output format and the value of a byte in it (``0x39 = 0.625 E5M2``; an E8M0 scale byte as ``2^-2``);
* the source byte(s) in SBUF that produce the element, their values before the record ran (the case's input
  regions over its fill), and the code the element is decoded from (``low nibble 0x5 = 3.0 E2M1``; an FP6 code's
  bits; a QuantizeMX fp16 / bf16 element);
* for a TensorDequantize group-8 record the in-band scale byte of the element's MX group (its SBUF place and
  value), for QuantizeMX the 8-partition x 4-element block and the SBUF place of its E8M0 scale byte.

The readings are the record's opcode spec's (q7emu.isa.opcode_spec: the source stream is the record's u32 elements
in address order per partition; the spec's ``explain`` says what an output byte is made of, from docs/model.md §1
for the layouts the knobs ``nibble_order``, ``fp6_packing`` and ``mx_layout`` choose). Values are decoded by
:mod:`q7emu.model.values` (no ml_dtypes).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from q7emu.errors import Q7Error
from q7emu.isa.explanation import Explanation, SourceByte
from q7emu.isa.opcode_spec import NUM_PARTITIONS, ByteRole, OpcodeSpec
from q7emu.isa.opcodes import find_spec
from q7emu.isa.records import decode_record
from q7emu.machine.machine import Region, normalize_machine_knobs

__all__ = ["SourceByte", "Explanation", "Explainer", "output_format"]


def output_format(record: bytes) -> str | None:
    """The number format of a record's data output (``E5M2`` / ``E4M3``; its opcode spec's), None when it does not
    decode or has no spec."""
    try:
        r = decode_record(bytes(record))
        spec = find_spec(r)
    except (Q7Error, ValueError):
        return None
    return spec.out_format(r) if spec is not None else None


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
        self.rec: Any = None
        self.spec: OpcodeSpec | None = None
        self.src_p0 = self.dst_p0 = 0
        self.src_offs = np.zeros(0, np.int64)
        try:
            r = decode_record(bytes(record))
            spec = find_spec(r)
            if spec is not None:
                source = spec.source(r)
                self.src_p0 = source.start(partition_bytes)[0]
                self.dst_p0 = spec.destination(r, partition_bytes).kernel_partition
                self.src_offs = source.offsets(partition_bytes)       # InvalidArgument past MAX_MAPPED_ELEMENTS
                self.rec, self.spec = r, spec
        except (Q7Error, ValueError):
            self.rec = self.spec = None

    @property
    def partition_bytes(self) -> int:
        """The partition size the record is read at (q7emu.isa.opcode_spec.SourceStream)."""
        return self.pb

    def sbuf_byte(self, partition: int, offset: int) -> int:
        """The SBUF byte at (partition, offset) before the record ran: the last input region holding it, else
        the fill."""
        for reg, arr in reversed(self.inputs):
            if (reg.partition <= partition < reg.partition + reg.count
                    and reg.offset <= offset < reg.offset + reg.length):
                return int(arr[partition - reg.partition, offset - reg.offset])
        return self.fill

    def byte(self, row: int, j: int) -> SourceByte | None:
        """Byte ``j`` of the source stream of active partition ``row`` (None past the stream's end or outside SBUF):
        the q7emu.isa.opcode_spec.SourceStream an opcode spec's explanation reads."""
        if not 0 <= j < 4 * self.src_offs.size:
            return None
        p, off = self.src_p0 + row, int(self.src_offs[j // 4]) + j % 4
        if not (0 <= p < NUM_PARTITIONS and 0 <= off < self.pb):
            return None
        return SourceByte(p, off, self.sbuf_byte(p, off))

    def explain(self, partition: int, part: str, element: int | None,
                block: tuple[int, int] | None = None) -> Explanation:
        """The :class:`Explanation` of the output byte at ``partition`` that is output ``element`` (``part``
        ``data``) or the byte of output ``part`` (``scale``) at ``block`` (row, column): :meth:`explain_role` of the
        spec's byte role there."""
        if self.rec is None or self.spec is None:
            return Explanation(knobs=self.knobs)
        if part == "data" and element is not None:
            return self.explain_role(self.spec.byte_role(self.rec, partition, part, partition - self.dst_p0, element))
        if part not in ("data", "unwritten") and block is not None:
            return self.explain_role(self.spec.byte_role(self.rec, partition, part, *block))
        return Explanation(knobs=self.knobs)

    def explain_role(self, role: ByteRole | None) -> Explanation:
        """The :class:`Explanation` of the output byte ``role`` (q7emu.machine.report.OutputMap.role_at; None: a
        byte the record does not write, explained by nothing)."""
        if self.rec is None or self.spec is None or role is None:
            return Explanation(knobs=self.knobs)
        return self.spec.explain(self.rec, self, role, self.knobs)
