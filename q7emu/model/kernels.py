"""The kernels of the model: their ids, the DEQUANT_FMT codes and which TensorDequantize path runs what.

* :class:`KernelId`: the id of each emulated kernel, as the ``kernel`` byte of every trace record
  (src/trace/q7trace.pxd, the ``.q7t`` format of :mod:`q7emu.analysis.trace`). The values are part of the
  trace format and never change; the member's lower-case name is the kernel's name everywhere else
  (``proc_4bit_non_mx``, listings, profiles, the registry).
* :class:`DequantFmt`: NEURON_ISA_TPB_DEQUANT_FMT (docs/firmware.md §2.1), :data:`FMT_NAMES` its short names.
* :func:`dequant_kernel` / :data:`DEQUANT_PATHS`: the firmware path a (dequant_fmt, group_size) pair
  selects (docs/firmware.md §1.5), and :data:`PATH_RATIO` its source : destination words
  (docs/firmware.md §1.3, clause 11).

Everything but the kernel ids is a view of the format table (:mod:`q7emu.model.format_table`). This is data only:
the kernels themselves are in :mod:`q7emu.kernels`, their registry in :mod:`q7emu.registry`.
"""
from __future__ import annotations

import enum

from q7emu.errors import InvalidArgument
from q7emu.model.format_table import DEQUANT_FORMATS, DEQUANT_PATH_TABLE, DequantFmt

__all__ = ["KernelId", "DequantFmt", "FMT_NAMES", "GROUP_SIZES", "DEQUANT_PATHS", "PATH_RATIO",
           "dequant_kernel", "path_name", "path_ratio"]


class KernelId(enum.IntEnum):
    """Kernel id of the trace format (the ``kernel`` byte of a ``.q7t`` record); 0 means "not given"."""

    PROC_4BIT_NON_MX = 1
    PROC_4BIT_MX_8 = 2
    PROC_6BIT_NON_MX = 3
    QUANTIZE_MX = 4

    @property
    def kernel(self) -> str:
        """The kernel's name: ``proc_4bit_non_mx``, ``proc_4bit_mx_8``, ``proc_6bit_non_mx``, ``quantize_mx``."""
        return self.name.lower()


#: the public short names of the DEQUANT_FMT codes
FMT_NAMES: dict[str, int] = {f.short: f.code for f in DEQUANT_FORMATS}
#: TensorDequantize group sizes: 0 (no scale) or 8 (in-band E8M0 scale per 8 codes) [docs/firmware.md §1.3.5]
GROUP_SIZES: tuple[int, ...] = tuple(sorted({p.group for p in DEQUANT_PATH_TABLE}))

#: every valid (fmt, group_size) pair -> its path, fmt-major within each group (FP6 is never MX) [docs/firmware.md
# §1.3.6]: the format table's paths
DEQUANT_PATHS: dict[tuple[int, int], KernelId] = {
    (f.code, g): KernelId[f.paths[g].upper()] for g in GROUP_SIZES for f in DEQUANT_FORMATS if g in f.paths}

#: source words : destination words per path (docs/firmware.md §1.3 clause 11, in u32 words)
PATH_RATIO: dict[str, tuple[int, int]] = {p.name: p.ratio for p in DEQUANT_PATH_TABLE}


def dequant_kernel(fmt: int, group_size: int) -> KernelId:
    """The firmware path (docs/firmware.md §1.5) a (fmt, group_size) pair selects (:data:`DEQUANT_PATHS`): group 8
    -> proc_4bit_mx_8, else proc_6bit_non_mx for FP6 and proc_4bit_non_mx for the 4-bit formats. InvalidArgument
    for a pair that selects none (checked earlier by :func:`q7emu.model.knobs.normalize_dequant_args`)."""
    try:
        return DEQUANT_PATHS[int(fmt), int(group_size)]
    except KeyError:
        raise InvalidArgument("(fmt, group_size)", (fmt, group_size),
                              "selects no TensorDequantize path [docs/firmware.md §1.3.6]") from None


def path_name(fmt: int, group_size: int) -> str:
    """Name of the firmware compute path for a (fmt, group_size) pair (:func:`dequant_kernel`)."""
    return dequant_kernel(fmt, group_size).kernel


def path_ratio(fmt: int, group_size: int) -> tuple[int, int]:
    """Source words : destination words of the path a (fmt, group_size) pair selects; a pair that selects none (a
    record built to be INVALID) gets its group's first path's (the 4-bit one for group 0)."""
    kid = DEQUANT_PATHS.get((fmt, group_size))
    if kid is not None:
        return PATH_RATIO[kid.kernel]
    return next((p.ratio for p in DEQUANT_PATH_TABLE if p.group == group_size), DEQUANT_PATH_TABLE[0].ratio)
