"""Python access to the Vision-Q7 IVP primitives: ``q7emu.ivp.<mnemonic>(...)``.

Every primitive of the Cython library (the family files src/primitives/ivp_*.pxd) has a wrapper here that
takes and returns numpy arrays in the op's lane dtype (see :mod:`q7emu.primitives._ivp` for the operand
conventions); the wrappers, their docstrings and type hints are generated from the op table
:mod:`q7emu.primitives.optable`. :func:`list` gives every primitive with its one-line semantics;
:func:`catalog` adds the docs/firmware.md section and the provenance of its semantics (SPEC HIGH / SPEC MED /
ANCHORS HIGH / q7emu choice). Both read the op table only.
"""
from __future__ import annotations

import builtins

from q7emu._dataclass import dataclass
from q7emu.primitives import optable
from q7emu.primitives._ivp import *  # noqa: F401,F403  (the mnemonic wrappers)
from q7emu.primitives._ivp import SEL2NX8I_IMMS, la2nx8_stream, time_op, wvec_raw, wvec_view  # noqa: F401


@dataclass(frozen=True)
class PrimitiveInfo:
    """One row of the primitive table: the mnemonic, its semantics, the docs/firmware.md / ANCHORS section it follows
    and the provenance of the semantics (a class of :data:`optable.PROVENANCE_CLASSES` with its detail)."""

    mnemonic: str
    semantics: str
    reference: str
    provenance: str


def catalog() -> builtins.list[PrimitiveInfo]:
    """Every wrapped primitive, sorted by mnemonic, with semantics, docs/firmware.md reference and provenance
    (from the op table)."""
    return [PrimitiveInfo(o.mnemonic, o.semantics, o.cite, o.provenance_text)
            for o in sorted(optable.OPS, key=lambda o: o.mnemonic)]


def list() -> builtins.list[tuple[str, str]]:  # noqa: A001 - the issue names it q7emu.primitives.ivp.list()
    """Every wrapped primitive as (mnemonic, one-line semantics), sorted by mnemonic."""
    return [(r.mnemonic, r.semantics) for r in catalog()]


def example_args(mnemonic: str, seed: int = 0) -> builtins.list[object]:
    """Well-formed arguments for ``q7emu.ivp.<mnemonic>`` (or ``_ivp._c_<mnemonic>`` of a C-only op), built
    from the op table: vec lanes of the operand's dtype and lane count (integers in [0, 100), floats from a
    standard normal), vbool ``bool[lanes]``, wvec lanes in [-2^20, 2^20) (int64 array, or a list of Python
    ints for 96-bit lanes), pr ``0x0001000200034000``, each immediate its table example, ``off = 0``, other
    scalars 64, memory a 256-byte uint8 buffer, valign 64 zero bytes. For tests and benchmarks."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out: builtins.list[object] = []
    for o in optable.op(mnemonic).args:
        if o.kind == optable.VEC:
            dt = np.dtype(o.dtype)
            out.append(rng.standard_normal(o.lanes).astype(dt) if dt.kind == "f"
                       else rng.integers(0, 100, o.lanes).astype(dt))
        elif o.kind == optable.VBOOL:
            out.append(rng.random(o.lanes) < 0.5)
        elif o.kind == optable.WVEC:
            lanes = rng.integers(-(1 << 20), 1 << 20, o.lanes)
            out.append([int(x) for x in lanes] if o.pytype == "list[int]" else lanes.astype(np.int64))
        elif o.kind == optable.PR:
            out.append(0x0001000200034000)
        elif o.kind == optable.IMM:
            out.append(o.example)
        elif o.kind == optable.SCALAR:
            out.append(0 if o.name == "off" else 64)
        elif o.kind == optable.MEMORY:
            out.append(rng.integers(0, 256, 256).astype(np.uint8))
        else:
            out.append(np.zeros(64, dtype=np.uint8))
    return out
