"""What q7emu knows of one opcode, in one object: :class:`OpcodeSpec` (docs/ARCHITECTURE.md "One place per opcode").

A spec is the only place that reads an opcode's record class. Everything above the isa layer (the machine, its
checks, reports, explanations, explore, the pytest plugin, the farm) asks the spec of a record's opcode
(:func:`q7emu.isa.opcodes.spec_of`) and never names a record class:

* the record: ``record_class``, ``opcode``, ``name``, ``engine``; its kernel_info rows per generation
  (:meth:`OpcodeSpec.kernel_info`; the firmware's own opcodes are in q7emu.isa.kernel_info's tables);
* validity: :meth:`~OpcodeSpec.check` (the firmware's predicate) and :meth:`~OpcodeSpec.preconditions` (q7emu's);
* the kernels that run it (registry entries: handler, golden model, knobs) and which one a record selects;
* geometry: the source pattern it reads (:class:`SourcePattern`) and where each byte of each of its outputs lands
  in SBUF (:class:`Destination`, one :class:`Placement` per output part: ``data``, ``scale``, ...);
* the run: from the gathered source words to the output parts (:meth:`~OpcodeSpec.run`);
* reports: the output format of a part, what an output byte is (element, MX group, block), the explanation of an
  output byte (:meth:`~OpcodeSpec.explain`), ``-k`` keywords, the listing configuration.

Adding an opcode is a subclass and :func:`q7emu.isa.opcodes.register` (CONTRIBUTING.md "Add an opcode"). A spec that
leaves an abstract method out cannot be made (TypeError naming it); a record whose opcode has no spec is
:class:`q7emu.errors.UnknownOpcode` wherever a spec is asked for.
"""
from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from q7emu import registry
from q7emu._dataclass import dataclass
from q7emu.errors import InternalError, InvalidArgument
from q7emu.isa.enums import Engine, Generation
from q7emu.isa.explanation import Explanation, SourceByte
from q7emu.isa.records import Addr4, OpcodeRecord, Tensor3D
from q7emu.isa.validate import Verdict, model_checks, pattern_checks
from q7emu.isa.validate import check as firmware_check
from q7emu.kernels.tracing import TraceRecorder
from q7emu.registry import KernelEntry

__all__ = ["OpcodeSpec", "FirmwareOpcodeSpec", "SourcePattern", "Placement", "Destination", "SourceStream", "ByteRole",
           "KernelFunction", "OpcodeKernel", "SpecKernel", "NUM_PARTITIONS", "MAX_MAPPED_ELEMENTS", "element_offsets",
           "sbuf_location", "check_parts"]

#: SBUF partitions
NUM_PARTITIONS = 128
#: the most u32 elements a pattern may address for q7emu to map it byte by byte (reports, explanations, masks)
MAX_MAPPED_ELEMENTS = 1 << 24


def element_offsets(t: Tensor3D, offset: int) -> npt.NDArray[np.int64]:
    """Byte offset (int64 [count]) of each u32 element of a TENSOR3D whose start is byte ``offset`` of its partition,
    in stream order (dim 0 innermost; docs/model.md §4)."""
    n0, n1, n2 = t.num_elem
    s0, s1, s2 = t.step_elem
    o = (np.arange(n2, dtype=np.int64)[:, None, None] * s2 + np.arange(n1, dtype=np.int64)[None, :, None] * s1
         + np.arange(n0, dtype=np.int64)[None, None, :] * s0)
    return offset + 4 * o.reshape(-1)


def sbuf_location(name: str, addr: Addr4, partition_bytes: int) -> tuple[int, int]:
    """(partition, byte offset) of an immediate SBUF address; InvalidArgument naming ``name`` for a register form,
    PSUM (bit 25) or an address beyond SBUF (docs/model.md §4)."""
    if not addr.is_immediate:
        raise InvalidArgument(name, f"0x{addr.raw:08x}", "register-form ADDR4 is not modelled by q7emu")
    if addr.is_psum:
        raise InvalidArgument(name, f"0x{addr.raw:08x}", "PSUM (bit 25) is not allowed for this operand")
    p, off = addr.locate(partition_bytes)
    if p >= NUM_PARTITIONS:
        raise InvalidArgument(name, f"0x{addr.raw:08x}", "address beyond SBUF")
    return p, off


@dataclass(frozen=True)
class SourcePattern:
    """The source a record reads: the TENSOR3D ``pattern`` (u32 elements, docs/model.md §4) in ``partitions``
    consecutive partitions from its start address's."""

    pattern: Tensor3D
    partitions: int

    def start(self, partition_bytes: int) -> tuple[int, int]:
        """(partition, byte offset) of the start address, read as a flat address at ``partition_bytes``."""
        return self.pattern.start_addr.locate(partition_bytes)

    def offsets(self, partition_bytes: int) -> npt.NDArray[np.int64]:
        """The byte offset of each u32 element in its partition, stream order (int64 [count]); InvalidArgument past
        :data:`MAX_MAPPED_ELEMENTS`."""
        if self.pattern.count > MAX_MAPPED_ELEMENTS:
            raise InvalidArgument("src", self.pattern.count, f"q7emu maps at most {MAX_MAPPED_ELEMENTS} elements")
        return element_offsets(self.pattern, self.start(partition_bytes)[1])


@dataclass(frozen=True)
class Placement:
    """Where some bytes of one output part (uint8 [rows, columns], what :meth:`OpcodeSpec.run` returns for ``part``)
    land: row ``rows[i]`` of the part (row i when ``rows`` is None) in SBUF partition ``partitions[i]``, column j at
    byte ``offsets[j]`` of it. When a part's offsets repeat, the last column written wins; a later placement wins
    over an earlier one (the machine writes them in order, one write each)."""

    part: str
    partitions: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    rows: npt.NDArray[np.int64] | None = None

    def row(self, i: int) -> int:
        """The row of the part that lands in ``partitions[i]``."""
        return i if self.rows is None else int(self.rows[i])

    def last_columns(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(the sorted distinct byte offsets, the column that lands last on each)."""
        rev = self.offsets[::-1]
        uniq, first = np.unique(rev, return_index=True)
        return uniq.astype(np.int64), (self.offsets.size - 1 - first).astype(np.int64)


@dataclass(frozen=True)
class Destination:
    """Every SBUF byte a record writes: its output parts' placements in write order; ``kernel_partition``, the
    SBUF partition the kernel's partition 0 is (a trace names absolute partitions from it); ``addresses``, the
    ADDR4 fields the placements start from, by field name, the first the one ``kernel_partition`` is read from (the
    machine checks each is an SBUF address before the kernel runs, :func:`sbuf_location`)."""

    placements: tuple[Placement, ...]
    kernel_partition: int
    addresses: tuple[tuple[str, Addr4], ...] = ()


@dataclass(frozen=True)
class ByteRole:
    """What one written byte is: its SBUF ``partition``, its ``part`` (``data``, ``scale``) and the byte's ``row``
    and ``column`` in that part's output array; ``element`` the output element, ``mx_group`` / ``mx_block`` where
    the opcode has them (a report's ``output element 13, MX group 1`` / ``scale of MX block (0, 2)``)."""

    partition: int
    part: str
    row: int
    column: int
    element: int | None = None
    mx_group: int | None = None
    mx_block: tuple[int, int] | None = None


class SourceStream(Protocol):
    """The source bytes of one record as an explanation reads them (q7emu.machine.explain.Explainer): byte ``j`` of
    the stream of active partition ``row``, with its SBUF place and its value before the record ran; None past the
    stream or outside SBUF. ``partition_bytes``: the partition size the record is read at."""

    @property
    def partition_bytes(self) -> int: ...

    def byte(self, row: int, j: int) -> SourceByte | None: ...


#: what runs a kernel on a backend: the handler, the golden model or a program in its place (machine.kernel_function)
KernelFunction = Callable[..., Any]


class OpcodeKernel(Protocol):
    """What the machine needs of a kernel that runs an opcode: a registry :class:`q7emu.registry.KernelEntry`, or a
    :class:`SpecKernel` for an opcode added outside the registry. ``handler`` and ``golden`` are called the same
    way (the spec's :meth:`OpcodeSpec.run` calls one of them; the handler also takes ``trace=``); ``knobs``: the
    model knobs its bytes can depend on."""

    @property
    def name(self) -> str: ...

    @property
    def opcode(self) -> int: ...

    @property
    def handler(self) -> KernelFunction: ...

    @property
    def golden(self) -> KernelFunction: ...

    @property
    def knobs(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class SpecKernel:
    """A kernel of an opcode added through its spec (an :class:`OpcodeKernel`): ``handler`` runs it (a program
    through q7emu.asm.run.run_calls, or any function), ``golden`` is its golden model."""

    name: str
    opcode: int
    handler: KernelFunction
    golden: KernelFunction
    knobs: tuple[str, ...] = ()


class OpcodeSpec(abc.ABC):
    """One opcode (module docstring). A subclass names its opcode in its class line, ``class S(OpcodeSpec,
    opcode=0x7B, name="TensorDequantize", engine=Engine.POOL, record_class=S3D3TensDequant)``, and implements the
    abstract methods; the others have defaults that fit an opcode with one kernel, one ``data`` output and no
    knobs."""

    #: the TPB opcode byte
    opcode: ClassVar[int]
    #: its name in messages (``TensorDequantize``)
    name: ClassVar[str]
    #: the engine whose kernel_info table dispatches it
    engine: ClassVar[Engine]
    #: the class its 64-byte records decode to (a frozen dataclass with ``header``, ``encode``, ``decode``)
    record_class: ClassVar[type[Any]]

    def __init_subclass__(cls, *, opcode: int | None = None, name: str | None = None, engine: Engine | None = None,
                          record_class: type[Any] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for key, value in (("opcode", None if opcode is None else int(opcode)), ("name", name), ("engine", engine),
                           ("record_class", record_class)):
            if value is not None:
                setattr(cls, key, value)

    # ------------------------------------------------------------------ the record, its dispatch and validity
    def kernel_info(self, generation: Generation) -> int | None:
        """The funcVA at which ``generation``'s table registers the opcode (UNKNOWN_FUNC_VA when the address is not
        known), or None when the table does not hold it. The firmware's own opcodes answer None: their rows are the
        firmware's tables (q7emu.isa.kernel_info)."""
        return None

    def record(self, record: OpcodeRecord) -> Any:
        """``record``, which must be of this opcode's ``record_class`` (InternalError naming both otherwise)."""
        if not isinstance(record, self.record_class):
            raise InternalError(f"the {self.name} spec (opcode 0x{self.opcode:02x}) was given a "
                                f"{type(record).__name__}, not a {self.record_class.__name__}")
        return record

    @abc.abstractmethod
    def check(self, record: Any, generation: Generation, partition_bytes: int) -> list[Verdict]:
        """The firmware's validity predicate, clause by clause (q7emu.isa.validate.check runs it)."""

    @abc.abstractmethod
    def addresses(self, record: Any) -> list[tuple[str, Addr4]]:
        """Every ADDR4 the record's patterns start at, by field name (``src.start_addr``)."""

    @abc.abstractmethod
    def pattern_counts(self, record: Any) -> list[tuple[str, int]]:
        """The u32 element count of each of the record's patterns, by pattern name (``src``, ``dst``)."""

    def preconditions(self, record: Any, partition_bytes: int) -> list[Verdict]:
        """q7emu's own preconditions to execute a valid record (q7emu.isa.validate.model_checks runs them):
        immediate addresses and the element limit (:func:`q7emu.isa.validate.pattern_checks`)."""
        return pattern_checks(self.addresses(record), self.pattern_counts(record), partition_bytes)

    def describe(self, record: Any) -> str:
        """The record in a message: ``opcode 0x7b, dequant_fmt 1, group_size 0``."""
        return f"opcode 0x{self.opcode:02x}"

    # ------------------------------------------------------------------ kernels
    @property
    @abc.abstractmethod
    def kernels(self) -> tuple[OpcodeKernel, ...]:
        """The kernels that run the opcode (registry entries for the firmware's, :class:`SpecKernel` otherwise)."""

    def kernel(self, record: Any) -> OpcodeKernel | None:
        """The kernel a record runs (None when it selects none: an invalid record); default: the only one."""
        return self.kernels[0] if len(self.kernels) == 1 else None

    def record_knobs(self, record: Any) -> tuple[str, ...]:
        """The knobs whose value can change this record's bytes (docs/model.md §6)."""
        entry = self.kernel(record)
        return entry.knobs if entry is not None else ()

    # ------------------------------------------------------------------ geometry
    @abc.abstractmethod
    def source(self, record: Any) -> SourcePattern:
        """The source pattern the record reads."""

    @abc.abstractmethod
    def destination(self, record: Any, partition_bytes: int) -> Destination:
        """Where every output byte lands, from the addresses read as flat at ``partition_bytes`` (no check of the
        addresses' form: the caller checks them when it needs SBUF places, :func:`sbuf_location`)."""

    # ------------------------------------------------------------------ the run
    @abc.abstractmethod
    def run(self, record: Any, words: npt.NDArray[np.uint32], kernel: KernelFunction, knobs: Mapping[str, str],
            trace: TraceRecorder | None) -> dict[str, npt.NDArray[np.uint8]]:
        """Run ``kernel`` (its handler, golden model or a program in its place) on the source ``words`` (uint32
        [partitions, count], the gathered source), with the machine's ``knobs`` and ``trace`` (None, or the
        recorder at the kernel's partition; never given to a golden model). Returns each part's bytes (uint8 [rows,
        columns], as :meth:`destination` places them); InternalError when the kernel returns another shape."""

    # ------------------------------------------------------------------ reports
    def out_format(self, record: Any, part: str = "data") -> str | None:
        """The number format of a part's bytes (``E5M2``, ``E4M3``, ``E8M0``), None when it has none."""
        return None

    def byte_role(self, record: Any, partition: int, part: str, row: int, column: int) -> ByteRole:
        """What the byte at (row, column) of a part, in SBUF partition ``partition``, is; default: output element
        ``column``."""
        return ByteRole(partition, part, row, column, element=column if part == "data" else None)

    def explain(self, record: Any, stream: SourceStream, role: ByteRole, knobs: dict[str, str]) -> Explanation:
        """Where the output byte ``role`` comes from (docs/cli.md §3.1 ``diffs[].source``); default: its format
        only. ``knobs``: the explainer's full knob dict, shared by its explanations (read-only)."""
        return Explanation(out_format=self.out_format(record, role.part), knobs=knobs)

    def keywords(self, record: Any) -> set[str]:
        """The ``-k`` keywords of a case with this record besides its name, generation and opcode."""
        entry = self.kernel(record)
        return {entry.name} if entry is not None else set()

    def listing_configuration(self, record: Any) -> dict[str, Any]:
        """Keyword arguments of q7emu.analysis.listing.build for the configuration the record runs (with
        ``kernel``); InvalidArgument when the opcode has no listing."""
        raise InvalidArgument("record", f"opcode 0x{self.opcode:02x}", f"{self.name} has no kernel listing")


class FirmwareOpcodeSpec(OpcodeSpec):
    """The spec of an opcode of the firmware's own tables: its validity clauses are q7emu.isa.validate's (cited from
    docs/firmware.md), its preconditions :func:`q7emu.isa.validate.model_checks`, its kernels the registry's."""

    def check(self, record: Any, generation: Generation, partition_bytes: int) -> list[Verdict]:
        return firmware_check(self.record(record), generation, partition_bytes)

    def preconditions(self, record: Any, partition_bytes: int) -> list[Verdict]:
        return model_checks(self.record(record), partition_bytes)

    @property
    def kernels(self) -> tuple[KernelEntry, ...]:
        return registry.for_opcode(self.opcode)


def check_parts(name: str, parts: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]) -> None:
    """InternalError unless every part has the shape ``shapes`` gives it (what a spec's run checks of a kernel)."""
    for part, shape in shapes.items():
        got = getattr(parts.get(part), "shape", None)
        if got != shape:
            raise InternalError(f"{name} returned {part} {got}, expected {shape}")
