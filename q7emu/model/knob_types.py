"""The knobs' values as ``Literal`` types, default first (docs/model.md §10.2).

Plain Python, no numpy: the value decoder a replay report uses (:mod:`q7emu.model.values`) types its ``nf4_table``
with them. :mod:`q7emu.model.knobs` builds the knob table from these types and re-exports them.
"""
from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = ["NibbleOrder", "Fp6Packing", "MxLayout", "MxScale", "Nf4Table", "Emax", "Underflow", "Nonfinite",
           "ScaleLayout"]

NibbleOrder: TypeAlias = Literal["low-first", "high-first"]
Fp6Packing: TypeAlias = Literal["lsb-first", "msb-first"]
MxLayout: TypeAlias = Literal["scale-first", "scale-last", "word-block"]
MxScale: TypeAlias = Literal["e8m0", "e8m0-nonan"]
Nf4Table: TypeAlias = Literal["qlora"]
Emax: TypeAlias = Literal["ocp", "alt"]
Underflow: TypeAlias = Literal["wrap", "clamp", "unclamped-data", "unwrapped-data"]
Nonfinite: TypeAlias = Literal["sim", "ocp"]
ScaleLayout: TypeAlias = Literal["auto", "scatter", "compact"]
