"""Python access to the Vision-Q7 IVP primitives: ``q7emu.primitives.ivp.<mnemonic>(...)``.

Every primitive of the Cython library (src/q7ivp.pxd) has a wrapper here that takes and returns
numpy arrays in the op's lane dtype (see :mod:`q7emu.primitives._ivp` for the operand conventions).
``q7emu.primitives.ivp.list()`` gives every primitive with its one-line semantics; :func:`catalog` adds the
SPEC section and the provenance of its semantics (SPEC HIGH / SPEC MED / q7emu choice).
"""
from __future__ import annotations

import builtins
import re
from dataclasses import dataclass

from q7emu.primitives import _ivp
from q7emu.primitives._ivp import *  # noqa: F401,F403  (the mnemonic wrappers)

_HELPERS = {"wvec_raw", "wvec_view", "la2nx8_stream", "time_op"}
_REF = re.compile(r"\s((?:SPEC|ANCHORS) §.*)$", re.S)


@dataclass(frozen=True)
class PrimitiveInfo:
    """One row of the primitive table."""

    mnemonic: str
    semantics: str
    reference: str
    provenance: str


def catalog() -> builtins.list[PrimitiveInfo]:
    """Every primitive, sorted by mnemonic, with semantics, SPEC reference and provenance."""
    rows = []
    for name in sorted(dir(_ivp)):
        fn = getattr(_ivp, name)
        if name.startswith("_") or name in _HELPERS or isinstance(fn, type) or not callable(fn) \
                or not fn.__doc__:
            continue
        doc = " ".join(fn.__doc__.split())
        m = _REF.search(doc)
        semantics, ref = (doc[: m.start()].strip(), m.group(1)) if m else (doc, "")
        prov = ref.split("provenance:")[-1].strip() if "provenance:" in ref else "q7emu choice"
        ref = ref.split("; provenance:")[0].strip()
        rows.append(PrimitiveInfo(name, semantics, ref, prov))
    return rows


def list() -> builtins.list[tuple[str, str]]:  # noqa: A001 - the issue names it q7emu.primitives.ivp.list()
    """Every primitive as (mnemonic, one-line semantics)."""
    return [(r.mnemonic, r.semantics) for r in catalog()]
