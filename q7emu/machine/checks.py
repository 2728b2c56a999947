"""Checks of a record against what a user gives with it: which kernel owns each knob, which input bytes the
record reads, and the partition size at which the record reads the inputs.

Used by :func:`q7emu.machine.cases.build_case` (``q7emu case new``) and by ``q7emu run`` / ``q7emu replay`` so
that a knob for another kernel, an input the record never reads, or a wrong partition size is an error naming
the knob or the region instead of a case that silently tests nothing.

Reading of the source (docs/model.md §4): the record's opcode spec's source pattern (q7emu.isa.opcode_spec), u32
elements, 4 bytes each, at the same byte offsets in its partitions from the start partition of its immediate SBUF
address.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from q7emu._dataclass import dataclass
from q7emu.errors import InvalidArgument, Q7Error
from q7emu.isa.enums import Generation
from q7emu.isa.opcode_spec import NUM_PARTITIONS, OpcodeKernel, OpcodeSpec, SourcePattern, element_offsets
from q7emu.isa.opcodes import find_spec, specs
from q7emu.isa.records import Addr4, Record, decode_record
from q7emu.isa.validate import require_executable, validate
from q7emu.machine.machine import DEFAULT_PARTITION_BYTES, Region

__all__ = ["record_kernel", "check_record_knobs", "knob_owners", "SourceReads", "source_reads", "InputCoverage",
           "input_coverage", "infer_partition_bytes", "PARTITION_BYTES_MAX"]

#: the largest partition size a Machine accepts (128 partitions below the PSUM bit 25)
PARTITION_BYTES_MAX = (1 << 25) // NUM_PARTITIONS


def _decoded(record: bytes | Record) -> Record:
    return decode_record(bytes(record)) if isinstance(record, (bytes, bytearray, memoryview)) else record


def _spec_source(record: bytes | Record) -> tuple[Record, OpcodeSpec, SourcePattern] | None:
    """(the decoded record, its opcode's spec, the source it reads), None for an opcode q7emu has no spec for."""
    rec = _decoded(record)
    spec = find_spec(rec)
    return None if spec is None else (rec, spec, spec.source(rec))


def record_kernel(record: bytes | Record) -> OpcodeKernel | None:
    """The kernel a record runs (its opcode spec's choice: for 0x7B by dequant_fmt and group_size); None when q7emu
    has none."""
    rec = _decoded(record)
    spec = find_spec(rec)
    return spec.kernel(rec) if spec is not None else None


def knob_owners(name: str) -> tuple[str, ...]:
    """The kernels whose bytes knob ``name`` can change (every opcode's, in the opcodes' order)."""
    return tuple(e.name for spec in specs() for e in spec.kernels if name in e.knobs)


def check_record_knobs(knobs: Mapping[str, object] | Iterable[str], record: bytes | Record) -> None:
    """Raise InvalidArgument for a knob that belongs to another kernel than the one ``record`` runs, naming the
    kernel(s) it belongs to (docs/model.md §6). Records q7emu runs no kernel for are not checked here (the
    machine rejects them)."""
    entry = record_kernel(record)
    if entry is None:
        return
    rec = _decoded(record)
    for name in knobs:
        if name in entry.knobs:
            continue
        owners = knob_owners(name)
        spec = find_spec(rec)
        what = spec.describe(rec) if spec is not None else f"opcode 0x{rec.header.opcode:02x}"
        if not owners:
            raise InvalidArgument("knob", name, f"no kernel has this knob; {entry.name} has "
                                  f"{', '.join(entry.knobs) or 'none'} [docs/model.md §6]")
        raise InvalidArgument("knob", name, f"belongs to {' and '.join(owners)}, but this record ({what}) runs "
                              f"{entry.name}, whose knobs are {', '.join(entry.knobs) or 'none'} [docs/model.md §6]")


@dataclass(frozen=True)
class SourceReads:
    """The SBUF bytes a record's source pattern reads: ``count`` partitions from ``partition``, at the sorted
    unique byte ``offsets`` (int64) inside each."""

    partition: int
    count: int
    offsets: np.ndarray

    @property
    def nbytes(self) -> int:
        """Bytes read in all: partitions x distinct offsets."""
        return self.count * int(self.offsets.size)


def source_reads(record: bytes | Record, generation: Generation | str,
                 partition_bytes: int) -> SourceReads | None:
    """The bytes the record's source reads at ``partition_bytes``, or None when that cannot be said: the record
    is of an opcode without a spec, fails a validity clause or a q7emu precondition at this partition size (a
    register-form address, PSUM, a pattern outside the partition), or reads nothing."""
    found = _spec_source(record)
    if found is None:
        return None
    rec, _, src = found
    try:
        validate(rec, generation, partition_bytes)
        require_executable(rec, partition_bytes)
    except Q7Error:
        return None
    if src.pattern.count == 0:
        return None
    p0, off = src.start(partition_bytes)
    elems = element_offsets(src.pattern, off)
    offs = np.unique((elems[:, None] + np.arange(4, dtype=np.int64)).reshape(-1))
    return SourceReads(int(p0), int(src.partitions), offs)


@dataclass(frozen=True)
class InputCoverage:
    """How much of one input region the record reads: ``read`` of its ``size`` bytes."""

    index: int
    region: Region
    read: int

    @property
    def size(self) -> int:
        """Bytes in the region."""
        return self.region.count * self.region.length

    @property
    def complete(self) -> bool:
        """Every byte of the region is read."""
        return self.read == self.size

    def describe(self) -> str:
        """``input region 0 (partitions 3..14, bytes 0x40..0xa7)``."""
        r = self.region
        return (f"input region {self.index} (partitions {r.partition}..{r.partition + r.count - 1}, "
                f"bytes 0x{r.offset:x}..0x{r.offset + r.length - 1:x})")


def input_coverage(reads: SourceReads | None, regions: Sequence[Region]) -> list[InputCoverage]:
    """For each input region, how many of its bytes ``reads`` covers (0 for every region when ``reads`` is None)."""
    out = []
    for i, r in enumerate(regions):
        if reads is None or r.count == 0 or r.length == 0:
            out.append(InputCoverage(i, r, 0))
            continue
        rows = max(0, min(r.partition + r.count, reads.partition + reads.count) - max(r.partition, reads.partition))
        lo, hi = np.searchsorted(reads.offsets, [r.offset, r.offset + r.length])
        out.append(InputCoverage(i, r, rows * int(hi - lo)))
    return out


def bytes_read_outside(reads: SourceReads | None, regions: Sequence[Region]) -> int:
    """Source bytes the record reads that no input region provides (the SBUF fill value there)."""
    if reads is None:
        return 0
    mask = np.zeros((reads.count, reads.offsets.size), dtype=bool)
    for r in regions:
        p_lo = max(r.partition, reads.partition) - reads.partition
        p_hi = min(r.partition + r.count, reads.partition + reads.count) - reads.partition
        if p_hi <= p_lo:
            continue
        lo, hi = np.searchsorted(reads.offsets, [r.offset, r.offset + r.length])
        mask[p_lo:p_hi, lo:hi] = True
    return int(mask.size - mask.sum())


def _source_start(record: bytes | Record) -> tuple[Record, int] | None:
    """(the decoded record, its source's flat immediate address), None for an opcode without a spec or a source
    address of another form."""
    found = _spec_source(record)
    if found is None:
        return None
    start: Addr4 = found[2].pattern.start_addr
    return (found[0], start.raw) if start.is_immediate else None


def _fits(regions: Sequence[Region], pb: int) -> bool:
    return all(r.partition + r.count <= NUM_PARTITIONS and r.offset + r.length <= pb for r in regions)


def infer_partition_bytes(record: bytes | Record, generation: Generation | str, regions: Sequence[Region], *,
                          allow_unread: bool = False) -> int | None:
    """The partition size at which the record reads the input regions (each completely, or with
    ``allow_unread`` at least partly), or None when no partition size does.

    The flat source address A of an immediate ADDR4 is ``partition * partition_bytes + offset``
    (docs/model.md §4), so an input region at partition p > 0, byte b, pins ``partition_bytes = (A - b) / p``.
    The candidates are these and the default 0x30000; the default wins when it works, otherwise the only
    candidate that works. Without input regions: the default."""
    if not regions:
        return DEFAULT_PARTITION_BYTES
    start = _source_start(record)
    if start is None:
        return None
    rec, a = start
    cands = [DEFAULT_PARTITION_BYTES]
    for r in regions:
        if r.partition > 0 and a >= r.offset and (a - r.offset) % r.partition == 0:
            cands.append((a - r.offset) // r.partition)
    good = []
    for pb in dict.fromkeys(cands):
        if not 4 <= pb <= PARTITION_BYTES_MAX or pb % 4 or not _fits(regions, pb):
            continue
        cov = input_coverage(source_reads(rec, generation, pb), regions)
        if all(c.complete or (allow_unread and c.read > 0) for c in cov):
            good.append(pb)
    if DEFAULT_PARTITION_BYTES in good:
        return DEFAULT_PARTITION_BYTES
    return good[0] if len(good) == 1 else None


def partition_bytes_pinned(record: bytes | Record, regions: Sequence[Region], partition_bytes: int) -> bool:
    """True when an input region pins ``partition_bytes``: the record's flat source address A and a region at
    partition p > 0, byte b, give ``(A - b) / p == partition_bytes`` (docs/model.md §4). False when nothing pins
    it (every input at partition 0, or none): :func:`infer_partition_bytes` then took the default."""
    start = _source_start(record)
    if start is None:
        return False
    a = start[1]
    return any(r.partition > 0 and a >= r.offset and (a - r.offset) == r.partition * partition_bytes
               for r in regions)
