"""q7emu: a bit-exact host emulator of the Vision-Q7 IVP vector firmware for Trainium MX kernels."""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import CaseError, DispatchError, InvalidArgument, Q7Error, ValidityError  # noqa: F401
from .knobs import DequantFmt  # noqa: F401
