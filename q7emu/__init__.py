"""q7emu: a bit-exact host emulator of the Vision-Q7 IVP vector firmware behind Trainium's MX kernels.

Public API (see each function's docstring for shapes and units):
  dequantize, dequantize_path   TensorDequantize (POOL 0x7b) on the emulated firmware paths
  quantize_mx                   QuantizeMX (DVE 0xE3) on the emulated quantize body
  dequantize_mx, swizzle, nc_matmul_mx   MX reference functions (plain numpy)
  q7emu.ivp                     every IVP primitive, callable on numpy lanes
  q7emu.golden                  independent numpy + ml_dtypes models of the kernels
  q7emu.trace, q7emu.profile    lane-level traces and inner-loop profiles

The package is layered (docs/ARCHITECTURE.md): model -> primitives -> kernels | golden -> isa ->
machine -> analysis -> cli. Names that need the compiled extensions load on first use, so the
pure-Python layers (golden models, records, case files) import without a build.
"""
from __future__ import annotations

import importlib
from typing import Any

from q7emu._version import __version__
from q7emu.errors import CaseError, DispatchError, InvalidArgument, Q7Error, ValidityError
from q7emu.model.knobs import DequantFmt

#: public name -> (module, attribute or None for the module itself), loaded on first use
_LAZY: dict[str, tuple[str, str | None]] = {
    "dequantize": ("q7emu.kernels.dequant", "dequantize"),
    "dequantize_path": ("q7emu.kernels.dequant", "dequantize_path"),
    "quantize_mx": ("q7emu.kernels.quantize_mx", "quantize_mx"),
    "dequantize_mx": ("q7emu.golden.mx_reference", "dequantize_mx"),
    "swizzle": ("q7emu.golden.mx_reference", "swizzle"),
    "nc_matmul_mx": ("q7emu.golden.mx_reference", "nc_matmul_mx"),
    "explore": ("q7emu.analysis.explore", "explore"),
    "golden": ("q7emu.golden", None),
    "ivp": ("q7emu.primitives.ivp", None),
    "trace": ("q7emu.analysis.trace", None),
    "profile": ("q7emu.analysis.profile", None),
    "listing": ("q7emu.analysis.listing", None),
    "isa": ("q7emu.isa", None),
    "formats": ("q7emu.golden.formats", None),
}

__all__ = ["__version__", "CaseError", "DispatchError", "InvalidArgument", "Q7Error", "ValidityError",
           "DequantFmt", *_LAZY]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'q7emu' has no attribute {name!r}") from None
    mod = importlib.import_module(module)
    return mod if attr is None else getattr(mod, attr)


def __dir__() -> list[str]:
    return sorted(__all__)
