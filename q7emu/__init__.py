"""q7emu: a bit-exact host emulator of the Vision-Q7 IVP vector firmware behind Trainium's MX kernels.

Public API (see each function's docstring for shapes, dtypes and units):
  dequantize, dequantize_path   TensorDequantize (POOL 0x7b) on the emulated firmware paths -> uint8 FP8 codes
  quantize_mx                   QuantizeMX (DVE 0xE3) on the emulated quantize body -> (uint32 data, uint8 scales)
  dequantize_mx, swizzle, nc_matmul_mx   MX reference functions (plain numpy)
  explore                       which model knob values reproduce captured cases
  fp8_view                      FP8 codes as an ml_dtypes view, so they show as values
  q7emu.ivp                     every IVP primitive, callable on numpy lanes
  q7emu.golden                  independent numpy + ml_dtypes models of the kernels
  q7emu.trace, q7emu.profile    lane-level traces and inner-loop profiles
  q7emu.model ... q7emu.cli     every layer sub-package (and q7emu.registry, q7emu.errors, q7emu.fileio)

Outputs are raw codes (bytes), exactly what the firmware writes. To see values, view them as ml_dtypes::

    codes = q7emu.dequantize(src, "e2m1")        # uint8 [P, out_bytes], FP8 E5M2 codes
    codes.view(ml_dtypes.float8_e5m2)            # the same bytes as float8_e5m2 values (no copy)
    q7emu.fp8_view(codes, "e2m1")                # the same, the FP8 format picked from the source format
    data, scale = q7emu.quantize_mx(x, "e4m3")   # data uint32 [P, F/4]: four FP8 codes per word
    q7emu.fp8_view(data, "e4m3")                 # float8_e4m3fn [P, F]

Format names are accepted in every spelling the project uses ("e4m3", "float8_e4m3fn", np.dtype, ml_dtypes types,
"FP8_EXP4"; see q7emu.model.dtypes).

The package is layered: model -> primitives -> kernels | golden -> registry -> isa -> machine -> analysis ->
cli (the import contract in pyproject.toml). Names that need the compiled extensions load on first use, so the
pure-Python layers (golden models, records, case files) import without a build; from a source tree whose
extensions are not built, the first compiled name raises an ImportError in one line that says what to do
(:func:`source_tree_problem`).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from typing import TYPE_CHECKING, Any

from q7emu._version import __version__
from q7emu.errors import CaseError, DispatchError, InvalidArgument, Q7Error, ValidityError

if TYPE_CHECKING:
    # What a type checker sees of the names :data:`_LAZY` loads on first use: the real modules and signatures (the
    # knobs' Literal types), not the Any of ``__getattr__``. firmware_tests/test_typing.py checks it lists them all.
    from q7emu import analysis as analysis
    from q7emu import asm as asm
    from q7emu import cli as cli
    from q7emu import errors as errors
    from q7emu import fileio as fileio
    from q7emu import golden as golden
    from q7emu import isa as isa
    from q7emu import kernels as kernels
    from q7emu import machine as machine
    from q7emu import model as model
    from q7emu import primitives as primitives
    from q7emu import registry as registry
    from q7emu.analysis import listing as listing
    from q7emu.analysis import profile as profile
    from q7emu.analysis import trace as trace
    from q7emu.analysis.explore import explore as explore
    from q7emu.cli.common import source_tree_problem as source_tree_problem
    from q7emu.golden import formats as formats
    from q7emu.golden.mx_reference import dequantize_mx as dequantize_mx
    from q7emu.golden.mx_reference import nc_matmul_mx as nc_matmul_mx
    from q7emu.golden.mx_reference import swizzle as swizzle
    from q7emu.kernels.dequant import dequantize as dequantize
    from q7emu.kernels.dequant import dequantize_path as dequantize_path
    from q7emu.kernels.quantize_mx import quantize_mx as quantize_mx
    from q7emu.model.dtypes import fp8_view as fp8_view
    from q7emu.model.knobs import DequantFmt as DequantFmt
    from q7emu.primitives import ivp as ivp

#: public name -> (module, attribute or None for the module itself), loaded on first use
_LAZY: dict[str, tuple[str, str | None]] = {
    "dequantize": ("q7emu.kernels.dequant", "dequantize"),
    "dequantize_path": ("q7emu.kernels.dequant", "dequantize_path"),
    "quantize_mx": ("q7emu.kernels.quantize_mx", "quantize_mx"),
    "dequantize_mx": ("q7emu.golden.mx_reference", "dequantize_mx"),
    "swizzle": ("q7emu.golden.mx_reference", "swizzle"),
    "nc_matmul_mx": ("q7emu.golden.mx_reference", "nc_matmul_mx"),
    "explore": ("q7emu.analysis.explore", "explore"),
    "fp8_view": ("q7emu.model.dtypes", "fp8_view"),
    "DequantFmt": ("q7emu.model.knobs", "DequantFmt"),
    "source_tree_problem": ("q7emu.cli.common", "source_tree_problem"),
    "golden": ("q7emu.golden", None),
    "ivp": ("q7emu.primitives.ivp", None),
    "trace": ("q7emu.analysis.trace", None),
    "profile": ("q7emu.analysis.profile", None),
    "listing": ("q7emu.analysis.listing", None),
    "formats": ("q7emu.golden.formats", None),
    # every layer sub-package and bottom-layer module (pyproject.toml [tool.setuptools] packages)
    "model": ("q7emu.model", None),
    "primitives": ("q7emu.primitives", None),
    "kernels": ("q7emu.kernels", None),
    "registry": ("q7emu.registry", None),
    "asm": ("q7emu.asm", None),
    "isa": ("q7emu.isa", None),
    "machine": ("q7emu.machine", None),
    "analysis": ("q7emu.analysis", None),
    "cli": ("q7emu.cli", None),
    "errors": ("q7emu.errors", None),
    "fileio": ("q7emu.fileio", None),
}

__all__ = ["__version__", "CaseError", "DispatchError", "InvalidArgument", "Q7Error", "ValidityError", *_LAZY]

#: short module names that ``import q7emu.NAME`` accepts (as ``import numpy.linalg`` does) -> the module they are
_ALIASES = {"q7emu.ivp": "q7emu.primitives.ivp", "q7emu.trace": "q7emu.analysis.trace",
            "q7emu.profile": "q7emu.analysis.profile", "q7emu.listing": "q7emu.analysis.listing",
            "q7emu.formats": "q7emu.golden.formats"}


class _AliasLoader(importlib.abc.Loader):
    """Loads ``q7emu.trace`` etc. as the module they name: ``sys.modules`` then holds the one module object
    under both names, so ``q7emu.trace is q7emu.analysis.trace``."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return importlib.import_module(self.target)

    def exec_module(self, module: Any) -> None:
        """Nothing to run: the target module ran when it was imported."""


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds the names of :data:`_ALIASES` (and nothing else)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _ALIASES:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(_ALIASES[fullname]))


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.append(_AliasFinder())


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'q7emu' has no attribute {name!r}") from None
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        from q7emu.cli.common import source_tree_problem

        problem = source_tree_problem()
        if problem is not None:
            raise ImportError(problem, name=module) from None
        raise ImportError(f"q7emu.{name}: {module} cannot be imported ({e}); reinstall q7emu (pip install .)",
                          name=module) from e
    return mod if attr is None else getattr(mod, attr)


def __dir__() -> list[str]:
    return sorted(__all__)
