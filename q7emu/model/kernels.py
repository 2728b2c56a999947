"""The kernels of the model: their ids, the DEQUANT_FMT codes and which TensorDequantize path runs what.

* :class:`KernelId`: the id of each emulated kernel, as the ``kernel`` byte of every trace record
  (src/trace/q7trace.pxd, the ``.q7t`` format of :mod:`q7emu.analysis.trace`). The values are part of the
  trace format and never change; the member's lower-case name is the kernel's name everywhere else
  (``proc_4bit_non_mx``, listings, profiles, the registry).
* :class:`DequantFmt`: NEURON_ISA_TPB_DEQUANT_FMT (docs/firmware.md §2.1).
* :func:`dequant_kernel` / :data:`DEQUANT_PATHS`: the firmware path a (dequant_fmt, group_size) pair
  selects (docs/firmware.md §1.5), and :data:`PATH_RATIO` its source : destination words
  (docs/firmware.md §1.3, clause 11).

This is data only: the kernels themselves are in :mod:`q7emu.kernels`, their registry in
:mod:`q7emu.registry`.
"""
from __future__ import annotations

import enum

__all__ = ["KernelId", "DequantFmt", "FMT_NAMES", "GROUP_SIZES", "DEQUANT_PATHS", "PATH_RATIO",
           "dequant_kernel", "path_name"]


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


class DequantFmt(enum.IntEnum):
    """NEURON_ISA_TPB_DEQUANT_FMT (docs/firmware.md §2.1)."""

    E2M1_TO_E5M2 = 1
    INT4_TO_E5M2 = 2
    NF4_TO_E4M3 = 3
    E2M3_TO_E4M3 = 4


#: the public short names of the DEQUANT_FMT codes
FMT_NAMES: dict[str, int] = {"e2m1": 1, "int4": 2, "nf4": 3, "e2m3": 4}
#: TensorDequantize group sizes: 0 (no scale) or 8 (in-band E8M0 scale per 8 codes) [docs/firmware.md §1.3.5]
GROUP_SIZES: tuple[int, ...] = (0, 8)


def dequant_kernel(fmt: int, group_size: int) -> KernelId:
    """The firmware path (docs/firmware.md §1.5) a (fmt, group_size) pair selects: group 8 -> proc_4bit_mx_8, else
    fmt 4 (FP6) -> proc_6bit_non_mx, else proc_4bit_non_mx. The pair is not checked (see
    :func:`q7emu.model.knobs.normalize_dequant_args`)."""
    if group_size == 8:
        return KernelId.PROC_4BIT_MX_8
    return KernelId.PROC_6BIT_NON_MX if fmt == DequantFmt.E2M3_TO_E4M3 else KernelId.PROC_4BIT_NON_MX


def path_name(fmt: int, group_size: int) -> str:
    """Name of the firmware compute path for a (fmt, group_size) pair (:func:`dequant_kernel`)."""
    return dequant_kernel(fmt, group_size).kernel


#: every valid (fmt, group_size) pair -> its path, fmt-major within each group (FP6 is never MX) [docs/firmware.md
# §1.3.6]
DEQUANT_PATHS: dict[tuple[int, int], KernelId] = {
    (int(f), g): dequant_kernel(f, g) for g in GROUP_SIZES for f in DequantFmt
    if not (g == 8 and f == DequantFmt.E2M3_TO_E4M3)}

#: source words : destination words per path (docs/firmware.md §1.3 clause 11, in u32 words)
PATH_RATIO: dict[str, tuple[int, int]] = {
    KernelId.PROC_4BIT_NON_MX.kernel: (1, 2),
    KernelId.PROC_6BIT_NON_MX.kernel: (3, 4),
    KernelId.PROC_4BIT_MX_8.kernel: (5, 8),
}
