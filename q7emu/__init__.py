"""q7emu: a bit-exact host emulator of the Vision-Q7 IVP vector firmware behind Trainium's MX kernels.

Public API (see each function's docstring for shapes and units):
  dequantize, dequantize_path   TensorDequantize (POOL 0x7b) on the emulated firmware paths
  quantize_mx                   QuantizeMX (DVE 0xE3) on the emulated quantize body
  dequantize_mx, swizzle, nc_matmul_mx   MX reference functions (plain numpy)
  q7emu.ivp                     every IVP primitive, callable on numpy lanes
  q7emu.golden                  independent numpy + ml_dtypes models of the kernels
"""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import CaseError, DispatchError, InvalidArgument, Q7Error, ValidityError  # noqa: F401
from .knobs import DequantFmt  # noqa: F401
from . import golden  # noqa: F401
from .mx import dequantize_mx, nc_matmul_mx, swizzle  # noqa: F401


def __getattr__(name: str):
    # The kernel entry points import compiled extensions; load them on first use so that the
    # pure-Python parts (golden models, records, case files) import without a build.
    if name in ("dequantize", "dequantize_path"):
        from . import dequant
        return getattr(dequant, name)
    if name == "quantize_mx":
        from .quantize import quantize_mx
        return quantize_mx
    if name == "explore":
        from .explore import explore
        return explore
    raise AttributeError(f"module 'q7emu' has no attribute {name!r}")
