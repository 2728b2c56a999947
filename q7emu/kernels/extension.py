"""Loading the compiled kernel extensions on first use.

The kernel modules (:mod:`q7emu.kernels.dequant`, :mod:`q7emu.kernels.quantize_mx`) import their Cython
extension only when a kernel runs, so that everything that merely *names* a kernel (the registry, the
listings, the machine with the golden backend) imports without a build.
"""
from __future__ import annotations

import importlib
from collections.abc import MutableMapping
from types import ModuleType
from typing import Any

from q7emu.errors import Q7Error


def load_extension(name: str) -> ModuleType:
    """Import the compiled module ``name`` (e.g. ``"q7emu.kernels._dequant"``).

    Raises Q7Error in one line, telling the user to build the extensions, when it is not built."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise Q7Error(f"{name} is not available ({e}); build the extensions (pip install -e .) "
                      "or use the golden models (q7emu.golden, Machine(backend='golden'))") from None


def cached_extension(namespace: MutableMapping[str, Any], attr: str, name: str) -> ModuleType:
    """``namespace[attr]`` (a kernel module's globals), loading the compiled module ``name`` into it on the
    first call. A test may put a stand-in there (``monkeypatch.setattr(module, attr, ...)``)."""
    mod = namespace.get(attr)
    if mod is None:
        mod = namespace[attr] = load_extension(name)
    return mod
