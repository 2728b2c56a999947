"""TensorDequantize (POOL opcode 0x7b): the public API over the emulated firmware kernels.

``dequantize`` validates every argument (q7emu.model.knobs) before any kernel code runs, then executes the firmware
path the (fmt, group_size) pair selects -- proc_4bit_non_mx, proc_4bit_mx_8 or proc_6bit_non_mx -- as its program
(q7emu/kernels/programs/*.s, the one statement of each path's schedule, docs/asm.md §6) for the configuration. An
untraced call runs the program's translation (docs/asm.md §9), where the ISA level has translations and
``Q7EMU_TRANSLATIONS`` is not ``off``; a traced call, and an untraced one without a translation, run the program on
the interpreter (``q7emu.kernels._program``), which executes each op through its primitive's body. The bytes are the
same. The configuration's translation and decoded program come from tables generated from the programs
(q7emu.asm.gen_translations, q7emu.kernels.configured), so nothing is assembled here. The compiled
interpreter is imported on the first call (:func:`q7emu.kernels.extension.load_extension`), so this module imports
without a build.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, Unpack

import numpy as np

from q7emu.errors import InvalidArgument
from q7emu.kernels import configured
from q7emu.kernels.configured import ConfiguredProgram, Region, registers, run_interpreted, run_untraced
from q7emu.kernels.cores import check_cores, host_threads, output_buffer
from q7emu.kernels.extension import cached_extension
from q7emu.kernels.programs import DST_BASE, SRC_BASE, dequant_configuration, dequant_registers
from q7emu.kernels.tracing import TraceRecorder, run_traced
from q7emu.model.dtypes import FmtArg
from q7emu.model.format_table import dequant_path
from q7emu.model.kernels import DEQUANT_PATHS, dequant_kernel, path_name
from q7emu.model.knobs import (
    Fp6Packing,
    MxLayout,
    MxScale,
    Nf4Table,
    NibbleOrder,
    dequant_out_bytes,
    normalize_dequant_args,
    normalize_fmt,
)

__all__ = ["dequantize", "dequantize_path", "DequantizeOptions", "listing_run", "EXTENSION"]

#: the compiled module that runs the paths' programs: the interpreter, and the translations of its ISA level
EXTENSION = "q7emu.kernels._program"
#: that module once loaded at the dispatched level (None until the first kernel call: cached_extension; tests may
#: replace it)
_program: Any = None


def configured_program(fmt: int, group: int, knobs: Mapping[str, str]) -> ConfiguredProgram:
    """The program of a configuration (fmt 1..4, group 0 / 8, the knobs the path reads), from the generated tables
    (q7emu.kernels.configured)."""
    return configured.configured_program(dequant_configuration(fmt, group, knobs))


def _regions(src: np.ndarray, out: np.ndarray, lo: int, hi: int, columns: int) -> tuple[list[Region], np.ndarray]:
    """The memory map of the calls for partitions lo..hi (docs/asm.md §4.3): the source stream at SRC_BASE (read
    only), the destination at DST_BASE, one partition's row per call; (regions, offsets int64 [hi - lo, columns])."""
    in_bytes, out_bytes = src.shape[1], out.shape[1]
    rows = np.arange(hi - lo, dtype=np.int64)
    offsets = np.zeros((hi - lo, columns), np.int64)
    offsets[:, 1] = rows * in_bytes
    offsets[:, 2] = rows * out_bytes
    regions: list[Region] = [(SRC_BASE, src[lo:hi].reshape(-1), in_bytes, False),
                             (DST_BASE, out[lo:hi].reshape(-1), out_bytes, True)]
    return regions, offsets


def run_program(ext: Any, cp: ConfiguredProgram, src: np.ndarray, out: np.ndarray, lo: int, hi: int,
                trace: Any = None, kernel_id: int = 0, **trace_filters: Any) -> Any:
    """Run ``cp`` on the interpreter module ``ext`` for partitions lo..hi of ``src`` (uint8 [P, in_bytes]) into
    ``out`` (uint8 [P, out_bytes]): one call per partition, the register file carried from call to call. ``trace``:
    None, a sink, or True (the raw records, returned; ``trace_window`` / ``trace_ops`` filter them). The partitions
    a trace records are lo..hi - 1. Raises InternalError when the program stops on an error (a kernel's program on
    checked arguments never does) and KeyboardInterrupt on Ctrl-C."""
    regions, offsets = _regions(src, out, lo, hi, ext.REGION_COLUMNS)
    return run_interpreted(ext, cp, regions, offsets, registers(dequant_registers(src.shape[1])),
                           np.arange(lo, hi, dtype=np.int64), trace=trace, kernel_id=kernel_id, **trace_filters)


def listing_run(passes: int, fmt: int, group_size: int, knobs: Mapping[str, str]) -> tuple[Any, dict[int, str],
                                                                                          dict[str, str]]:
    """One traced partition of ``passes`` whole passes of the main loop, for the listings (q7emu.analysis.listing).

    Returns the raw full-operand trace of the configuration's program (the interpreter's ``run(trace=True)``), the
    program's bundle labels {bundle: label} and every label's note. The source bytes are fixed pseudo-random (a
    listing does not depend on data); one pass reads the path's ``pass_bytes`` (q7emu.model.format_table)."""
    from q7emu.kernels.programs.bundle_notes import BUNDLE_NOTES
    ext = cached_extension(globals(), "_program", EXTENSION)
    cp = configured_program(fmt, group_size, knobs)
    src = np.random.default_rng(7).integers(0, 256, size=(1, dequant_path(path_name(fmt, group_size)).pass_bytes
                                                          * passes), dtype=np.uint8)
    dst = np.zeros((1, 64 * passes), np.uint8)
    raw = run_program(ext, cp, src, dst, 0, 1, trace=True, kernel_id=int(dequant_kernel(fmt, group_size)))
    return raw, dict(cp.labels), dict(BUNDLE_NOTES)


def dequantize(src: np.ndarray, fmt: FmtArg, group_size: int = 0, *,
               nibble_order: NibbleOrder = "low-first", fp6_packing: Fp6Packing = "lsb-first",
               mx_layout: MxLayout = "scale-first", mx_scale: MxScale = "e8m0", nf4_table: Nf4Table = "qlora",
               trace: TraceRecorder | None = None, cores: int | None = None) -> np.ndarray:
    """Expand packed 4-bit / 6-bit codes to FP8 bytes exactly as the firmware path does.

    Args:
        src: uint8 [P, in_bytes] or uint32 [P, in_words] (little-endian words), P = 1..128
            partitions; each row is one partition's source stream.
        fmt: dequant_fmt 1..4, a DequantFmt member, or "e2m1" / "int4" / "nf4" / "e2m3" (any spelling of
            q7emu.model.dtypes; the type lists the lower-case ones, the format table's).
        group_size: 0, or 8 for the in-band-scaled MX path (fmt 1..3 only).
        nibble_order, fp6_packing, mx_layout, mx_scale, nf4_table: model knobs (docs/model.md §1; their values and
            defaults are the knob table's, q7emu.model.knobs.KNOBS).
        trace: None, or a q7emu trace recorder (``q7emu.analysis.trace.Recorder``) that receives the
            lane-level record of every primitive executed (filters applied inside the interpreter's recorder).
        cores: how many Q7 cores (host threads) share the partitions, as the firmware splits
            channels across POOL cores; None = up to the host's CPU count for large inputs.
            Tracing always runs on one core. The bytes never depend on it.

    Returns:
        uint8 [P, out_bytes] FP8 codes (E5M2 for fmt 1, 2; E4M3 for fmt 3, 4), out_bytes =
        in_bytes x 2 (4-bit), x 8/5 (MX), x 4/3 (FP6).

    Raises InvalidArgument (before any kernel code runs) or Q7Error when the extension is not built.
    """
    given = {"nibble_order": nibble_order, "fp6_packing": fp6_packing, "mx_layout": mx_layout,
             "mx_scale": mx_scale, "nf4_table": nf4_table}
    src_bytes, fmt_i, group, path, knobs = normalize_dequant_args(src, fmt, group_size, given)
    check_cores(cores)
    ext = cached_extension(globals(), "_program", EXTENSION)
    cp = configured_program(fmt_i, group, knobs)
    out = output_buffer((src_bytes.shape[0], dequant_out_bytes(src_bytes.shape[1], path)), traced=trace is not None)
    kernel_id = int(dequant_kernel(fmt_i, group))
    parts = src_bytes.shape[0]
    if trace is not None:
        run_traced(trace, lambda t, **kw: run_program(ext, cp, src_bytes, out, 0, parts, trace=t, kernel_id=kernel_id,
                                                      **kw), path, knobs)
        return out
    run_untraced(ext, cp, lambda lo, hi: _regions(src_bytes, out, lo, hi, ext.REGION_COLUMNS),
                 registers(dequant_registers(src_bytes.shape[1])), parts, host_threads(cores, parts, src_bytes.size))
    return out


class DequantizeOptions(TypedDict, total=False):
    """The keyword options of :func:`dequantize` (the knobs, typed as in its signature; ``trace``, ``cores``), for
    :func:`dequantize_path`'s ``**knobs``."""

    nibble_order: NibbleOrder
    fp6_packing: Fp6Packing
    mx_layout: MxLayout
    mx_scale: MxScale
    nf4_table: Nf4Table
    trace: TraceRecorder | None
    cores: int | None


def dequantize_path(path: str, src: np.ndarray, fmt: FmtArg, **knobs: Unpack[DequantizeOptions]) -> np.ndarray:
    """Run one named firmware path directly ("proc_4bit_non_mx", "proc_4bit_mx_8",
    "proc_6bit_non_mx"); the (fmt, group) pair must select that path. ``knobs`` as for
    :func:`dequantize` (and ``trace``, ``cores``); returns its uint8 [P, out_bytes]."""
    names = [k.kernel for k in sorted(set(DEQUANT_PATHS.values()))]
    if path not in names:
        raise InvalidArgument("path", path, f"must be {', '.join(names[:-1])} or {names[-1]}")
    f = normalize_fmt(fmt)
    group = next((g for (ff, g), k in DEQUANT_PATHS.items() if k.kernel == path and ff == f), None)
    if group is None:
        raise InvalidArgument("fmt", f, f"fmt {f} does not run on {path}")
    return dequantize(src, f, group, **knobs)

