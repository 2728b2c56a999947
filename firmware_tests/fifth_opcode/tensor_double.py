"""TensorDouble: a made-up POOL opcode (0x5D) added from one place, its spec (q7emu's fifth-opcode example;
CONTRIBUTING.md "Add an opcode"). Importing this module registers it; ``Q7EMU_OPCODES=tensor_double`` makes every
q7emu process (a replay's workers, a farm's, pytest's) import it.

Record (64 B): HEADER (opcode 0x5D), EVENTS, src TENSOR3D at byte 12, num_active_channels at 28, dst TENSOR3D at 32,
16 reserved bytes. The source's u32 elements in ``num_active_channels`` partitions are a byte stream; each byte is
doubled (wrapping) into the destination stream, element k at the destination pattern's k-th element. The stream
is a whole number of 64-byte chunks; the program (tensor_double.s) runs once per chunk.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from tensor_double_golden import tensor_double

from q7emu.asm.assembler import assemble_file
from q7emu.asm.kernels import DST_BASE, SRC_BASE
from q7emu.asm.run import Region, run_calls
from q7emu.isa import opcode_spec as spec
from q7emu.isa import opcodes
from q7emu.isa.enums import Engine, Generation
from q7emu.isa.explanation import Explanation
from q7emu.isa.kernel_info import UNKNOWN_FUNC_VA
from q7emu.isa.records import Addr4, Events, Header, Tensor3D
from q7emu.isa.validate import Verdict, clause, opcode_clauses
from q7emu.kernels.tracing import TraceRecorder, run_traced

OPCODE = 0x5D
CHUNK = 64                                     # bytes per program call
PROGRAM = assemble_file(Path(__file__).with_name("tensor_double.s"))


@dataclass(frozen=True)
class S3DTensDouble:
    """The TensorDouble record (module docstring)."""

    header: Header = field(default_factory=lambda: Header(OPCODE))
    events: Events = field(default_factory=Events)
    src: Tensor3D = field(default_factory=Tensor3D)
    num_active_channels: int = 1
    reserved0: bytes = bytes(3)
    dst: Tensor3D = field(default_factory=Tensor3D)
    reserved1: bytes = bytes(16)

    def encode(self) -> bytes:
        return (self.header.encode() + self.events.encode() + self.src.encode()
                + bytes([self.num_active_channels]) + self.reserved0 + self.dst.encode() + self.reserved1)

    @classmethod
    def decode(cls, data: bytes) -> S3DTensDouble:
        d = bytes(data)
        return cls(Header.decode(d[0:4]), Events.decode(d[4:12]), Tensor3D.decode(d[12:28]), d[28], d[29:32],
                   Tensor3D.decode(d[32:48]), d[48:64])


def run_program(src: npt.NDArray[np.uint8], *, trace: TraceRecorder | None = None) -> npt.NDArray[np.uint8]:
    """The kernel: tensor_double.s once per 64-byte chunk of each row of ``src`` (uint8 [P, n], n a multiple of
    64), into a new uint8 [P, n]."""
    p, n = src.shape
    out = np.zeros_like(src)
    calls = np.arange(p * (n // CHUNK), dtype=np.int64)
    regions = [Region("the source chunk", SRC_BASE, np.ascontiguousarray(src).reshape(-1), CHUNK, calls * CHUNK, False),
               Region("the destination chunk", DST_BASE, out.reshape(-1), CHUNK, calls * CHUNK, True)]
    regs = {"a2": SRC_BASE, "a4": DST_BASE}
    partitions = calls // (n // CHUNK) if n else calls
    if trace is None:
        run_calls(PROGRAM, regions, partitions, regs)
    else:
        run_traced(trace, lambda t, **kw: run_calls(PROGRAM, regions, partitions, regs, trace=t), "tensor_double", {})
    return out


class TensorDoubleSpec(spec.OpcodeSpec, opcode=OPCODE, name="TensorDouble", engine=Engine.POOL,
                       record_class=S3DTensDouble):
    """POOL 0x5D TensorDouble (module docstring)."""

    KERNEL: ClassVar[spec.SpecKernel] = spec.SpecKernel("tensor_double", OPCODE, run_program, tensor_double)

    def kernel_info(self, generation: Generation) -> int | None:
        return UNKNOWN_FUNC_VA if generation.nc_version >= 3 else None

    def check(self, record: S3DTensDouble, generation: Generation, partition_bytes: int) -> list[Verdict]:
        n, nd = record.src.count, record.dst.count
        return [*opcode_clauses(record, generation, OPCODE, self.name, 3, ("td.1", "td.2")),
                clause("td.3", "num_active_channels in 1..128", None if 1 <= record.num_active_channels <= 128 else
                       ("num_active_channels", record.num_active_channels, "must be 1..128")),
                clause("td.4", "src and dst count the same elements, a multiple of 16", None if n == nd and n % 16 == 0
                       else ("dst.num_elem", list(record.dst.num_elem), f"must count {n} elements, a multiple of 16"))]

    def addresses(self, record: S3DTensDouble) -> list[tuple[str, Addr4]]:
        return [("src.start_addr", record.src.start_addr), ("dst.start_addr", record.dst.start_addr)]

    def pattern_counts(self, record: S3DTensDouble) -> list[tuple[str, int]]:
        return [("src", record.src.count), ("dst", record.dst.count)]

    @property
    def kernels(self) -> tuple[spec.SpecKernel, ...]:
        return (self.KERNEL,)

    def source(self, record: S3DTensDouble) -> spec.SourcePattern:
        return spec.SourcePattern(record.src, record.num_active_channels)

    def destination(self, record: S3DTensDouble, partition_bytes: int) -> spec.Destination:
        dp, doff = record.dst.start_addr.locate(partition_bytes)
        offs = (spec.element_offsets(record.dst, doff)[:, None] + np.arange(4, dtype=np.int64)).reshape(-1)
        parts = np.arange(dp, dp + record.num_active_channels, dtype=np.int64)
        return spec.Destination((spec.Placement("data", parts, offs),), dp,
                                (("dst.start_addr", record.dst.start_addr),))

    def run(self, record: S3DTensDouble, words: npt.NDArray[np.uint32], kernel: spec.KernelFunction,
            knobs: Mapping[str, str], trace: TraceRecorder | None) -> dict[str, npt.NDArray[np.uint8]]:
        src = np.ascontiguousarray(words.astype("<u4")).view(np.uint8)
        parts = {"data": np.asarray(kernel(src) if trace is None else kernel(src, trace=trace))}
        spec.check_parts(self.name, parts, {"data": src.shape})
        return parts

    def explain(self, record: S3DTensDouble, stream: spec.SourceStream, role: spec.ByteRole,
                knobs: dict[str, str]) -> Explanation:
        """Output byte k of a row is source byte k of that row, doubled."""
        b = stream.byte(role.row, role.column)
        return Explanation(source=[] if b is None else [b], code=None if b is None else b.value,
                           code_where=f"byte {role.column}", knobs=knobs)


opcodes.register(TensorDoubleSpec())
