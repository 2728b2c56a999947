"""Shipped cases made to fail on purpose, for the tests of mismatch reports."""
from __future__ import annotations

from pathlib import Path

from q7emu.machine.cases import load_case, save_case


def damaged(tmp_path: Path, source: Path, flips: list[tuple[str, int, int]], name: str) -> Path:
    """A copy of the case ``source`` saved as ``tmp_path/name`` whose expected byte at each (region, partition
    row, byte column) of ``flips`` is XOR 0x01; the new case's JSON path."""
    case = load_case(source)
    for region, row, col in flips:
        case.expected[region][1][row, col] ^= 0x01
    save_case(case, tmp_path / name)
    return tmp_path / f"{name}.json"
