"""Shared helpers of the IVP family tests: lane-mask construction, exact array comparison and the pool of a
two-register source.

Operands follow the Xtensa C intrinsics' argument order (= the disassembly's): a two-register source lists its
HIGH half first, so ``IVP_SEL2NX8(hi, lo, idx)`` reads the pool ``lo (lanes 0..N-1) || hi (lanes N..2N-1)``.
"""
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


def pool(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """The 2N-lane pool of a two-register source given in intrinsic order (high half first): lo || hi."""
    assert hi.dtype == lo.dtype and hi.shape == lo.shape
    return np.concatenate([lo, hi])


def wrap(x: object, bits: int) -> np.ndarray:
    """x (int64 lanes) wrapped to a signed ``bits``-bit value (a wvec lane read back as a signed integer)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << (bits - 1))) & ((1 << bits) - 1)) - (1 << (bits - 1))
