"""Loading the compiled kernel extensions on first use, at the ISA level this CPU runs best (docs/build.md §1).

The kernel modules (:mod:`q7emu.kernels.dequant` and :mod:`q7emu.kernels.quantize_mx`, which run the kernel
programs on the interpreter module ``q7emu.kernels._program``) import their Cython extension only when a
kernel runs, so that everything that merely *names* a kernel (the registry, the
listings, the machine with the golden backend) imports without a build.

Each kernel extension is built once per ISA level (setup.py): ``q7emu.kernels._program`` at the baseline
(``generic``) and ``q7emu.kernels._program_avx2`` / ``_program_avx512`` beside it on x86-64, plus
``q7emu.kernels._program_portable`` in a ``Q7EMU_PORTABLE=1`` build (``portable``: the primitives' plain C bodies,
the code a non-x86 machine runs, where ``generic`` is those bodies).
:func:`load_extension` imports the baseline module (it must exist; it also lists the levels built and their flags),
then the variant of the selected level: the highest level both built and supported by this CPU (q7emu.kernels._cpu),
or the one ``Q7EMU_ISA`` names (docs/build.md §1.3). Every level computes the same bytes. ``q7emu --version`` and
the CLI's ``Q7EMU_ISA`` check read the levels built from q7emu.kernels._cpu (``ISA_BUILT``, written by setup.py),
which imports neither a kernel module nor numpy.
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable, MutableMapping
from types import ModuleType
from typing import Any

from q7emu.errors import InvalidArgument, Q7Error

__all__ = ["LEVELS", "BASELINE", "DEFAULT_LEVELS", "FORCEABLE_LEVELS", "ENV", "load_extension", "cached_extension",
           "cpu_levels", "built_levels", "build_levels", "select_level", "check_env", "isa_info", "TRANSLATIONS_ENV",
           "translations_enabled", "fast_crc32"]

#: the ISA levels, lowest first; ``native`` exists only in a ``Q7EMU_NATIVE=1`` build (docs/build.md §1.1).
#: ``portable`` (the primitives' C bodies without x86 SIMD) runs on every CPU but is never picked by itself: it is
#: there to be forced (``Q7EMU_ISA=portable``) and tested, the code every non-x86 machine runs
LEVELS = ("portable", "generic", "avx2", "avx512", "native")
#: the level of the module every build has (``q7emu.kernels._program``, no suffix)
BASELINE = "generic"
#: the levels a default x86-64 build has (off x86-64 only ``generic``, which is there the portable bodies); a build
#: with ``Q7EMU_PORTABLE=1`` (CI's) adds ``portable`` (docs/build.md §1.1)
DEFAULT_LEVELS = ("generic", "avx2", "avx512")
#: the levels ``Q7EMU_ISA`` may name (``native`` too, in a native build)
FORCEABLE_LEVELS = LEVELS[:4]
#: the environment variable that forces a level
ENV = "Q7EMU_ISA"
#: the environment variable that sends untraced TensorDequantize calls to the interpreter instead of their
#: programs' translations ("off"; unset or "on": the translations, docs/asm.md §9)
TRANSLATIONS_ENV = "Q7EMU_TRANSLATIONS"
#: the baseline module whose ISA_BUILT lists the levels and flags of the build
PROBE = "q7emu.kernels._program"


def _import_base(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise Q7Error(f"{name} is not available ({e}); build the extensions (pip install -e .) "
                      "or use the golden models (q7emu.golden, Machine(backend='golden'))") from None


def cpu_levels() -> tuple[str, ...]:
    """The ISA levels this CPU supports, lowest first: ``portable`` and ``generic`` (every CPU), then what CPUID
    reports through q7emu.kernels._cpu (nothing more when that module is not built). ``native`` is not a CPU level:
    a native build is trusted to run here."""
    try:
        from q7emu.kernels import _cpu
    except ImportError:
        return ("portable", BASELINE)
    return ("portable", *_cpu.levels())


def fast_crc32() -> Callable[[Any, int], int] | None:
    """``q7emu.kernels._cpu.crc32`` (zlib's CRC-32, folded with PCLMULQDQ) where it folds on this CPU, else None
    (not built, not x86-64 with GCC or Clang, no PCLMULQDQ): what q7emu.fileio.use_crc32 installs."""
    try:
        from q7emu.kernels import _cpu
    except ImportError:
        return None
    return _cpu.crc32 if _cpu.crc32_folds() else None


def built_levels(base: ModuleType) -> dict[str, str]:
    """Level -> compile flags of every variant built beside the baseline module ``base``."""
    built = getattr(base, "ISA_BUILT", None)
    return dict(built) if built else {BASELINE: ""}


def build_levels() -> dict[str, str] | None:
    """Level -> compile flags of every level this build compiled the kernels for, None when the extensions are
    not built. Read from q7emu.kernels._cpu (setup.py records them there: no kernel module, no numpy is
    imported); from the baseline kernel module (:data:`PROBE`) for a build whose _cpu predates that."""
    cpu: ModuleType | None
    try:
        from q7emu.kernels import _cpu as cpu
    except ImportError:
        cpu = None
    built = getattr(cpu, "ISA_BUILT", None)
    if built:
        return dict(built)
    try:
        return built_levels(importlib.import_module(PROBE))
    except ImportError:
        return None


def select_level(built: dict[str, str] | None = None, env: str | None = None) -> str:
    """The level to load: ``env`` (default: the ``Q7EMU_ISA`` environment variable) when set, else the highest
    level of ``built`` (default: the build's) this CPU supports.

    Raises InvalidArgument naming ``Q7EMU_ISA`` and the choices when the value is not a level, was not built
    or the CPU lacks it."""
    if built is None:
        built = build_levels()
        if built is None:
            built = built_levels(_import_base(PROBE))     # (raises Q7Error: not built)
    cpu = cpu_levels()
    runnable = [lv for lv in LEVELS if lv in built and (lv in cpu or lv == "native")]
    value = os.environ.get(ENV, "") if env is None else env
    if not value:
        return runnable[-1] if runnable else BASELINE
    if value not in FORCEABLE_LEVELS and not (value == "native" and "native" in built):
        choices = ", ".join(lv for lv in LEVELS if lv != "native" or lv in built)
        raise InvalidArgument(ENV, value, f"must be one of {choices} (or unset: the best this CPU runs)")
    if value not in built:
        raise InvalidArgument(ENV, value, f"this build has only the levels {', '.join(built)} "
                                          "(setup.py builds avx2 and avx512 on x86-64 with GCC or Clang, and portable "
                                          "with Q7EMU_PORTABLE=1; elsewhere generic is the portable C bodies)")
    if value not in runnable:
        raise InvalidArgument(ENV, value, f"this CPU supports only {', '.join(lv for lv in LEVELS if lv in cpu)}; "
                                          f"choose one of {', '.join(runnable)}")
    return value


def load_extension(name: str, level: str | None = None) -> ModuleType:
    """Import the compiled module ``name`` (e.g. ``"q7emu.kernels._program"``) at ISA level ``level``
    (default: :func:`select_level`; a level its module has not is InvalidArgument as for ``Q7EMU_ISA``).

    Raises Q7Error in one line, telling the user to build the extensions, when it is not built."""
    base = _import_base(name)
    built = getattr(base, "ISA_BUILT", None)
    if built is None:          # a module built once (not a kernel): there is only the baseline
        return base
    level = select_level(dict(built), env=level)
    if level == BASELINE:
        return base
    try:
        return importlib.import_module(f"{name}_{level}")
    except ImportError as e:
        raise Q7Error(f"{name}_{level} is not available ({e}) though {name} lists it; "
                      "rebuild the extensions (pip install -e .)") from None


def cached_extension(namespace: MutableMapping[str, Any], attr: str, name: str) -> ModuleType:
    """``namespace[attr]`` (a kernel module's globals), loading the compiled module ``name`` into it on the
    first call. A test may put a stand-in there (``monkeypatch.setattr(module, attr, ...)``)."""
    mod = namespace.get(attr)
    if mod is None:
        mod = namespace[attr] = load_extension(name)
    return mod


def translations_enabled() -> bool:
    """Whether an untraced TensorDequantize call runs its program's translation where its ISA level has one
    (docs/asm.md §9): ``Q7EMU_TRANSLATIONS`` unset or ``on``; ``off`` runs the programs on the interpreter. The bytes
    are the same either way. Raises InvalidArgument naming the variable for any other value."""
    value = os.environ.get(TRANSLATIONS_ENV, "") or "on"
    if value not in ("on", "off"):
        raise InvalidArgument(TRANSLATIONS_ENV, value, "must be on or off (or unset: on)")
    return value == "on"


def check_env() -> None:
    """Raise InvalidArgument (as :func:`select_level`) now when ``Q7EMU_ISA`` is set to a level this build or
    CPU cannot run, or ``Q7EMU_TRANSLATIONS`` to neither on nor off, rather than at the first kernel call; nothing
    when they are unset or nothing is built. The CLI calls it before every command, so a bad value is one line and
    exit 2 (docs/build.md §1.3)."""
    translations_enabled()
    if not os.environ.get(ENV):
        return
    built = build_levels()
    if built is not None:
        select_level(built)


def isa_info() -> dict[str, Any]:
    """What ``q7emu --version`` prints: ``level`` (the level a kernel loads now, None when the extensions are
    not built), ``forced`` (the ``Q7EMU_ISA`` value, or None), ``cpu`` (the levels this CPU supports),
    ``built`` (level -> compile flags) and ``translations`` (:func:`translations_enabled`). Raises InvalidArgument
    as :func:`select_level` for a bad Q7EMU_ISA, as :func:`translations_enabled` for a bad Q7EMU_TRANSLATIONS."""
    forced = os.environ.get(ENV) or None
    translations = translations_enabled()
    built = build_levels()
    if built is None:
        return {"level": None, "forced": forced, "cpu": list(cpu_levels()), "built": {}, "translations": translations}
    return {"level": select_level(built), "forced": forced, "cpu": list(cpu_levels()), "built": built,
            "translations": translations}
