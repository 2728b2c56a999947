"""Golden (reference) models in plain numpy + ml_dtypes, independent of the Cython kernels."""
from __future__ import annotations

from .dequant import dequantize
from .quantize_mx import quantize_mx

__all__ = ["dequantize", "quantize_mx"]
