"""The kernel registry: one entry per emulated kernel, the only table of kernels in q7emu.

Every consumer reads the kernels from here: the machine (which kernel runs a record, on the kernel or the
golden backend) and the trace / profile / listing / provenance / explore tools. Importing this module needs
no compiled extension: the kernel modules load theirs on the first call.

An entry (:class:`KernelEntry`) holds

* ``kernel_id`` (:class:`q7emu.model.kernels.KernelId`, the id in the ``.q7t`` trace format) and so the
  kernel's name (``kernel_id.kernel``);
* ``engine`` and ``opcode``: the value of :class:`q7emu.isa.enums.Engine` and the TPB opcode whose record runs
  it (this layer sits below q7emu.isa, so they are plain values; firmware_tests check them against isa);
* ``paths``: the (dequant_fmt, group_size) pairs that select it (from :data:`q7emu.model.kernels.DEQUANT_PATHS`;
  ``()`` for an op without a format), or ``src_dtypes`` / ``dst_dtypes`` for one that has dtypes instead;
* ``knobs``: the model knobs (docs/model.md §1-§2) its bytes can depend on; ``knob_rule`` narrows them per record;
* ``sources``, ``extension``, ``function``: its source files in include order, the compiled module that runs
  it, and its body: every kernel runs as its program (docs/asm.md §6), so the program's files
  (q7emu/kernels/programs), the interpreter module (whose translations run it untraced) and the program's name;
* ``handler`` / ``golden``: the kernel's Python entry and its golden model, called the same way (the
  handler also takes ``trace=`` and ``cores=``); ``listing_run``: one traced pass-count run for the listings
  (q7emu.analysis.listing), returning the raw trace and the bundle labels and notes;
* ``abbr`` (the tag in ``q7emu ops``) and ``unit`` (output elements per group of work, for profiles).

To add a kernel: its sources, one entry here, its golden model and its tests (the "Add a kernel"
checklist of CONTRIBUTING.md).
"""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from q7emu._dataclass import dataclass
from q7emu.errors import InvalidArgument
from q7emu.golden.dequant import dequantize as golden_dequantize
from q7emu.golden.quantize_mx import quantize_mx as golden_quantize_mx
from q7emu.kernels import dequant as _dequant
from q7emu.kernels import quantize_mx as _quantize_mx
from q7emu.kernels.extension import load_extension
from q7emu.model.kernels import DEQUANT_PATHS, KernelId
from q7emu.model.knobs import DEQUANT_KNOBS, KNOBS, QUANTIZE_MX_DST_DTYPES, QUANTIZE_MX_SRC_DTYPES, dequant_knobs

__all__ = ["KernelEntry", "KERNELS", "names", "get", "find", "for_opcode", "select"]


@dataclass(frozen=True)
class KernelEntry:
    """One emulated kernel (see the module docstring for every field)."""

    kernel_id: KernelId
    engine: str
    opcode: int
    sources: tuple[str, ...]
    extension: str
    function: str
    handler: Callable[..., Any]
    golden: Callable[..., Any]
    listing_run: Callable[..., tuple[Any, dict[int, str], dict[str, str]]]
    abbr: str
    unit: tuple[int, str]
    knobs: tuple[str, ...] = ()
    knob_rule: Callable[[int, int], tuple[str, ...]] | None = None
    paths: tuple[tuple[int, int], ...] = ()
    src_dtypes: tuple[str, ...] = ()
    dst_dtypes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The kernel's name (``proc_4bit_non_mx``, ...): the lower-case KernelId member name."""
        return self.kernel_id.kernel

    @property
    def fmts(self) -> tuple[int, ...]:
        """The dequant_fmt codes of its paths, in order (``()`` when the op has no format)."""
        return tuple(dict.fromkeys(f for f, _ in self.paths))

    @property
    def group_size(self) -> int | None:
        """The group size all its paths share, or None (no paths)."""
        groups = {g for _, g in self.paths}
        return groups.pop() if len(groups) == 1 else None

    def knobs_for(self, fmt: int | None = None, group_size: int | None = None) -> tuple[str, ...]:
        """The knobs whose value can change the bytes of one record of this kernel with (fmt, group_size)
        (``knobs`` when the kernel has no per-record rule or the record's fields are not given)."""
        if self.knob_rule is None or fmt is None or group_size is None:
            return self.knobs
        return self.knob_rule(fmt, group_size)

    def load(self) -> ModuleType:
        """The compiled extension (Q7Error in one line when it is not built)."""
        return load_extension(self.extension)


def _program_sources(kid: KernelId) -> tuple[str, ...]:
    """A kernel's program files in include order: the shared include, the re-bias include of the paths that use
    it, the program."""
    rebias = ("rebias.inc",) if kid in (KernelId.PROC_4BIT_NON_MX, KernelId.PROC_6BIT_NON_MX) else ()
    return tuple(f"q7emu/kernels/programs/{f}" for f in ("kernel_common.inc", *rebias, f"{kid.kernel}.s"))


def _dequant_entry(kid: KernelId, abbr: str, unit: tuple[int, str]) -> KernelEntry:
    """A TensorDequantize (POOL 0x7B) path: its (fmt, group) pairs and knobs follow from the model tables."""
    paths = tuple(pair for pair, k in DEQUANT_PATHS.items() if k is kid)
    used = {k for f, g in paths for k in dequant_knobs(f, g)}
    return KernelEntry(
        kernel_id=kid, engine="POOL", opcode=0x7B, paths=paths,
        knobs=tuple(k for k in DEQUANT_KNOBS if k in used), knob_rule=dequant_knobs,
        sources=_program_sources(kid),
        extension=_dequant.EXTENSION, function=kid.kernel,
        handler=_dequant.dequantize, golden=golden_dequantize,
        listing_run=lambda passes, cfg: _dequant.listing_run(passes, cfg["fmt"], paths[0][1], cfg["knobs"]),
        abbr=abbr, unit=unit)


#: every kernel, in KernelId order
KERNELS: tuple[KernelEntry, ...] = (
    _dequant_entry(KernelId.PROC_4BIT_NON_MX, "4nm", (8, "source word (8 codes)")),
    _dequant_entry(KernelId.PROC_4BIT_MX_8, "mx8", (8, "MX group (8 codes + scale)")),
    _dequant_entry(KernelId.PROC_6BIT_NON_MX, "6nm", (16, "3 source words (16 codes)")),
    KernelEntry(
        kernel_id=KernelId.QUANTIZE_MX, engine="DVE", opcode=0xE3,
        # the knob table's machine knobs of the op (scale_layout is placed by the record / the caller)
        knobs=tuple(k.name for k in KNOBS if k.op == "quantize_mx" and k.machine),
        src_dtypes=QUANTIZE_MX_SRC_DTYPES, dst_dtypes=QUANTIZE_MX_DST_DTYPES,
        sources=_program_sources(KernelId.QUANTIZE_MX),
        extension=_quantize_mx.EXTENSION, function=KernelId.QUANTIZE_MX.kernel,
        handler=_quantize_mx.quantize_mx, golden=golden_quantize_mx,
        listing_run=lambda passes, cfg: _quantize_mx.listing_run(passes, cfg["src_dtype"], cfg["dst_dtype"],
                                                                 cfg["knobs"]),
        abbr="qmx", unit=(32, "MX block (8 partitions x 4)")),
)

_BY_NAME = {e.name: e for e in KERNELS}
_BY_ID = {int(e.kernel_id): e for e in KERNELS}


def names() -> tuple[str, ...]:
    """Every kernel name, in KernelId order."""
    return tuple(_BY_NAME)


def find(kernel: str | int | KernelId) -> KernelEntry | None:
    """The entry of a kernel name or id, or None."""
    if isinstance(kernel, str):
        return _BY_NAME.get(kernel)
    try:
        return _BY_ID.get(int(kernel))
    except (TypeError, ValueError):
        return None


def get(kernel: str | int | KernelId) -> KernelEntry:
    """The entry of a kernel name or id; InvalidArgument naming the known kernels otherwise."""
    entry = find(kernel)
    if entry is None:
        raise InvalidArgument("kernel", kernel, f"must be one of {', '.join(names())}")
    return entry


def for_opcode(opcode: int) -> tuple[KernelEntry, ...]:
    """The kernels a record with this TPB opcode can run (``()`` for an opcode q7emu does not execute)."""
    return tuple(e for e in KERNELS if e.opcode == opcode)


def select(opcode: int, fmt: int | None = None, group_size: int | None = None) -> KernelEntry | None:
    """The kernel one record runs: among ``for_opcode(opcode)``, the one whose ``paths`` hold
    (fmt, group_size), or the only one when the op has no paths; None when no kernel matches."""
    entries = for_opcode(opcode)
    for e in entries:
        if (fmt, group_size) in e.paths or (not e.paths and len(entries) == 1):
            return e
    return None
