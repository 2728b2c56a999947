"""Shared helpers of the IVP family tests: lane-mask construction and exact array comparison."""
from __future__ import annotations

import numpy as np


def M(n: int, head: list[bool], fill: bool = False) -> np.ndarray:
    """A vbool as bool[n]: the first lanes are ``head``, the rest ``fill``."""
    out = [fill] * n
    out[: len(head)] = head
    return np.array(out, dtype=np.bool_)


def eq(got: object, want: object) -> None:
    """Same lanes and same dtype."""
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype
