"""Python access to the Vision-Q7 IVP primitives: ``q7emu.ivp.<mnemonic>(...)``.

Every primitive of the Cython library (the family files src/primitives/ivp_*.pxd) has a wrapper here that
takes and returns numpy arrays in the op's lane dtype (see :mod:`q7emu.primitives._ivp` for the operand
conventions); the wrappers, their docstrings and type hints are generated from the op table
:mod:`q7emu.primitives.optable`. :func:`list` gives every primitive with its one-line semantics;
:func:`catalog` adds the SPEC section and the provenance of its semantics (SPEC HIGH / SPEC MED /
ANCHORS HIGH / q7emu choice). Both read the op table only.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass

from q7emu.primitives import optable
from q7emu.primitives._ivp import *  # noqa: F401,F403  (the mnemonic wrappers)
from q7emu.primitives._ivp import SEL2NX8I_IMMS, la2nx8_stream, time_op, wvec_raw, wvec_view  # noqa: F401


@dataclass(frozen=True)
class PrimitiveInfo:
    """One row of the primitive table: the mnemonic, its semantics, the SPEC / ANCHORS section it follows
    and the provenance of the semantics (a class of :data:`optable.PROVENANCE_CLASSES` with its detail)."""

    mnemonic: str
    semantics: str
    reference: str
    provenance: str


def catalog() -> builtins.list[PrimitiveInfo]:
    """Every wrapped primitive, sorted by mnemonic, with semantics, SPEC reference and provenance (from the op table)."""
    return [PrimitiveInfo(o.mnemonic, o.semantics, o.cite, o.provenance_text)
            for o in sorted(optable.OPS, key=lambda o: o.mnemonic)]


def list() -> builtins.list[tuple[str, str]]:  # noqa: A001 - the issue names it q7emu.primitives.ivp.list()
    """Every wrapped primitive as (mnemonic, one-line semantics), sorted by mnemonic."""
    return [(r.mnemonic, r.semantics) for r in catalog()]
