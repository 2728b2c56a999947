"""Byte-for-byte comparison of a replay's expected regions with SBUF: per region and per partition.

:func:`compare_regions` is what :func:`q7emu.machine.cases.run_case` records for every case; the report of
:mod:`q7emu.machine.report` (summaries, ``--max-diffs``, JUnit) is built from it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field

import numpy as np

from q7emu._dataclass import dataclass
from q7emu.machine.machine import Region

__all__ = ["RegionDiff", "compare_regions"]


@dataclass
class RegionDiff:
    """One expected region compared with SBUF.

    ``differing``: bytes that differ; ``partitions``: SBUF partition -> differing bytes in it (partitions with
    a difference only); ``actual``: a copy of the SBUF bytes of the region (uint8 [count, length]) when any
    byte differs, else None (the expected bytes are in the case)."""

    index: int
    region: Region
    differing: int = 0
    partitions: dict[int, int] = field(default_factory=dict)
    actual: np.ndarray | None = None

    @property
    def bytes_compared(self) -> int:
        """Bytes compared: the region's size."""
        return self.region.count * self.region.length


def _equal(act: np.ndarray, exp: np.ndarray) -> bool:
    """Whether two uint8 [count, length] arrays whose rows are contiguous hold the same bytes: compared as the
    widest words (8, 4 or 2 bytes) that ``length`` is a multiple of, a seventh of a per-byte comparison's time
    (the per-partition counts are needed only where a byte differs)."""
    width = next(w for w in (8, 4, 2, 1) if act.shape[1] % w == 0)
    if width == 1 or act.strides[1] != 1 or exp.strides[1] != 1:
        return bool(np.array_equal(act, exp))
    kind = f"<u{width}"
    return not bool(np.any(act.view(kind) != exp.view(kind)))


def compare_regions(expected: Sequence[tuple[Region, np.ndarray]], sbuf: np.ndarray) -> list[RegionDiff]:
    """Compare each expected region (Region, uint8 [count, length]) with the same rectangle of ``sbuf``
    (uint8 [128, partition_bytes]); one :class:`RegionDiff` per region, in order."""
    out = []
    for i, (reg, exp) in enumerate(expected):
        act = sbuf[reg.partition:reg.partition + reg.count, reg.offset:reg.offset + reg.length]
        if not act.size or _equal(act, exp):
            out.append(RegionDiff(i, reg, 0, {}, None))
            continue
        per_row = np.count_nonzero(act != exp, axis=1)
        total = int(per_row.sum())
        parts = {reg.partition + int(r): int(per_row[r]) for r in np.flatnonzero(per_row)}
        out.append(RegionDiff(i, reg, total, parts, act.copy() if total else None))
    return out
