"""Byte-for-byte comparison of a replay's expected regions with SBUF: per region and per partition.

:func:`compare_regions` is what :func:`q7emu.machine.cases.run_case` records for every case; the report of
:mod:`q7emu.machine.report` (summaries, ``--max-diffs``, JUnit) is built from it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

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


def compare_regions(expected: Sequence[tuple[Region, np.ndarray]], sbuf: np.ndarray) -> list[RegionDiff]:
    """Compare each expected region (Region, uint8 [count, length]) with the same rectangle of ``sbuf``
    (uint8 [128, partition_bytes]); one :class:`RegionDiff` per region, in order."""
    out = []
    for i, (reg, exp) in enumerate(expected):
        act = sbuf[reg.partition:reg.partition + reg.count, reg.offset:reg.offset + reg.length]
        per_row = np.count_nonzero(act != exp, axis=1) if act.size else np.zeros(reg.count, dtype=np.int64)
        total = int(per_row.sum())
        parts = {reg.partition + int(r): int(per_row[r]) for r in np.flatnonzero(per_row)}
        out.append(RegionDiff(i, reg, total, parts, act.copy() if total else None))
    return out
