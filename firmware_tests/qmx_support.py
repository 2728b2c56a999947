"""QuantizeMX inputs the translation tests share (firmware_tests/asm/test_translate.py,
firmware_tests/kernels/test_translated_path.py): fp16 / bf16 bit patterns weighted toward the values the knobs
decide. Inputs only: each test compares two runs of q7emu (translated and interpreted), and the kernels' own tests
compare them with the golden model."""
from __future__ import annotations

import numpy as np


def special_bits(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """uint16 ``shape`` fp16 / bf16 patterns: random, with 15 % of the elements' exponent fields mostly cleared
    (blocks below max_exp: ``underflow``), 5 % zeros, and ±Inf and NaN patterns (``nonfinite``)."""
    bits = rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    pick = rng.random(shape)
    bits[pick < 0.15] &= 0x80FF
    bits[(pick >= 0.15) & (pick < 0.2)] = 0
    bits[(pick >= 0.2) & (pick < 0.22)] = 0x7C00
    bits[(pick >= 0.22) & (pick < 0.24)] = 0xFF80
    bits[(pick >= 0.24) & (pick < 0.25)] = 0x7FC1
    return bits
