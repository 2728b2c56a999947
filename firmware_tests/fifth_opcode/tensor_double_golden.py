"""The golden model of TensorDouble (tensor_double.py): what the opcode computes, written without the program."""
from __future__ import annotations

import numpy as np
import numpy.typing as npt


def tensor_double(src: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """uint8 [P, n] -> uint8 [P, n]: every byte doubled, modulo 256."""
    return ((src.astype(np.uint16) * 2) & 0xFF).astype(np.uint8)
