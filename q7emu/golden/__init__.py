"""Golden (reference) models in plain numpy + ml_dtypes, independent of the Cython kernels."""
from __future__ import annotations

from q7emu.golden.dequant import dequantize
from q7emu.golden.quantize_mx import quantize_mx

__all__ = ["dequantize", "quantize_mx"]
