"""TensorDequantize (POOL opcode 0x7b): the public API over the emulated firmware kernels.

``dequantize`` validates every argument (q7emu.model.knobs) before any kernel code runs, then executes
the firmware path the (fmt, group_size) pair selects -- proc_4bit_non_mx, proc_4bit_mx_8 or
proc_6bit_non_mx -- built from the IVP primitives. An untraced call runs the path's program as translated for its
configuration (docs/asm.md §9: the interpreter module ``q7emu.kernels._program`` of the kernels' ISA level, found by
the configuration's name in its CONFIGURATIONS), where that level has translations and ``Q7EMU_TRANSLATIONS`` is not
``off``; a traced call, a level without translations and a translation that stops run the compiled kernels
(src/kernels/_dequant.pyx). The bytes are the same. The compiled extensions are imported on the first call
(:func:`q7emu.kernels.extension.load_extension`), so this module imports without a build.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict, Unpack

import numpy as np

from q7emu.errors import InvalidArgument
from q7emu.kernels.cores import check_cores, host_threads, output_buffer, run_blocks
from q7emu.kernels.extension import cached_extension, load_extension, translations_enabled
from q7emu.kernels.programs import DATA_BASE, DST_BASE, SRC_BASE, dequant_configuration
from q7emu.kernels.tracing import TraceRecorder, run_traced
from q7emu.model.dtypes import FmtArg
from q7emu.model.format_table import dequant_path
from q7emu.model.kernels import DEQUANT_PATHS, dequant_kernel, path_name
from q7emu.model.knobs import (
    DEQUANT_KNOBS,
    Fp6Packing,
    MxLayout,
    MxScale,
    Nf4Table,
    NibbleOrder,
    dequant_out_bytes,
    normalize_dequant_args,
    normalize_fmt,
)
from q7emu.model.tables import NF4_TABLES

__all__ = ["dequantize", "dequantize_path", "DequantizeOptions", "run_params", "listing_run", "EXTENSION"]

#: the compiled module whose ``run()`` executes the three paths
EXTENSION = "q7emu.kernels._dequant"
#: that module once loaded (None until the first kernel call: cached_extension; tests may replace it)
_dequant: Any = None
#: the interpreter module whose translations run untraced calls (docs/asm.md §9), loaded at the level of _dequant
PROGRAM_EXTENSION = "q7emu.kernels._program"
#: a translated call's step budget (bundles per partition): a kernel's program always ends, far below it
TRANSLATED_MAX_STEPS = 1 << 40
#: (ISA level, configuration) -> what its translated run needs (None: that level has no translation of it)
_translated_cache: dict[tuple[str, str], tuple[Any, int, np.ndarray, np.ndarray] | None] = {}


def _translation(ext: Any, fmt: int, group: int, knobs: Mapping[str, str]
                 ) -> tuple[Any, int, np.ndarray, np.ndarray] | None:
    """The translation of a configuration at the ISA level of the kernel module ``ext``: (the interpreter module of
    that level, the translation's index, its runtime immediates int32 [K], the data section uint8 [D]), or None
    (no translation there, a stand-in ``ext`` without a level, or Q7EMU_TRANSLATIONS=off)."""
    level = getattr(ext, "ISA_LEVEL", None)
    if not isinstance(level, str) or not translations_enabled():
        return None
    name = dequant_configuration(fmt, group, knobs)
    key = (level, name)
    if key not in _translated_cache:
        found = None
        prog = load_extension(PROGRAM_EXTENSION, level)
        entry = prog.CONFIGURATIONS.get(name) if getattr(prog, "TRANSLATED", False) else None
        if entry is not None:
            index, imm, data_at = entry
            found = (prog, index, np.array(imm or (0,), np.int32),
                     np.frombuffer(prog.DATA_SECTIONS[data_at], np.uint8))
        _translated_cache[key] = found
    return _translated_cache[key]


def _translated_runner(tx: tuple[Any, int, np.ndarray, np.ndarray], src: np.ndarray, out: np.ndarray
                       ) -> Callable[[int, int], bool]:
    """A function running partitions lo..hi of ``src`` (uint8 [P, in_bytes]) into ``out`` (uint8 [P, out_bytes])
    on the translation ``tx`` under the kernel programs' calling convention (docs/asm.md §4.3: one call per
    partition, the source stream at SRC_BASE, the destination at DST_BASE, a2 = SRC_BASE, a3 = in_bytes / 4, a4 =
    DST_BASE); it returns False when the translation stopped (Ctrl-C raises KeyboardInterrupt)."""
    prog, index, imm, data = tx
    in_bytes, out_bytes = src.shape[1], out.shape[1]
    ar = np.zeros(16, np.uint32)
    ar[2], ar[3], ar[4] = SRC_BASE, in_bytes // 4, DST_BASE

    def run_partitions(lo: int, hi: int) -> bool:
        rows = np.arange(hi - lo, dtype=np.int64)
        offsets = np.zeros((hi - lo, prog.REGION_COLUMNS), np.int64)
        offsets[:, 1] = rows * in_bytes
        offsets[:, 2] = rows * out_bytes
        regions = [(SRC_BASE, src[lo:hi].reshape(-1), in_bytes, False),
                   (DST_BASE, out[lo:hi].reshape(-1), out_bytes, True)]
        return bool(prog.run_translated(index, imm, data, DATA_BASE, regions, offsets, ar,
                                        TRANSLATED_MAX_STEPS) == 0)
    return run_partitions


def run_params(fmt: int | None = None, group_size: int | None = None, knobs: Mapping[str, str] | None = None,
               src_dtype: str | None = None, dst_dtype: str | None = None) -> dict[str, Any]:
    """The arguments of ``_dequant.run()`` these options decide, by run()'s parameter names.

    fmt: DEQUANT_FMT code 1..4; group_size: 0 or 8; knobs: model knobs (docs/model.md §1) -- only those given
    appear (``nf4_table`` becomes ``nf4_values``, its float32 [16] codebook). src_dtype / dst_dtype do not
    apply to TensorDequantize (every kernel module's ``run_params`` takes the same options). Used by
    :func:`dequantize` (every option known) and by the listings (q7emu.analysis.listing, some unknown)."""
    knobs = knobs or {}
    params: dict[str, Any] = {}
    if fmt is not None:
        params["fmt"] = int(fmt)
    if group_size is not None:
        params["group"] = int(group_size)
    for k in DEQUANT_KNOBS:                  # run() takes each knob by its name, but the codebook as its values
        if k in knobs and k != "nf4_table":
            params[k] = knobs[k]
    if "nf4_table" in knobs:
        params["nf4_values"] = NF4_TABLES[knobs["nf4_table"]]
    return params


def listing_run(passes: int, fmt: int, group_size: int, knobs: Mapping[str, str]) -> tuple[Any, dict[int, str],
                                                                                          dict[str, str]]:
    """One traced partition of ``passes`` whole passes of the main loop, for the listings (q7emu.analysis.listing).

    Returns the raw full-operand trace (``run(trace=True)``), the path's bundle labels {bundle: label} and every
    label's note. The source bytes are fixed pseudo-random (a listing does not depend on data); one pass reads the
    path's ``pass_bytes`` (q7emu.model.format_table)."""
    ext = cached_extension(globals(), "_dequant", EXTENSION)
    src = np.random.default_rng(7).integers(0, 256, size=(1, dequant_path(path_name(fmt, group_size)).pass_bytes
                                                          * passes), dtype=np.uint8)
    dst = np.zeros((1, 64 * passes), np.uint8)
    params = run_params(fmt, group_size, knobs)
    raw = ext.run(src, dst, trace=True, kernel_id=int(dequant_kernel(fmt, group_size)), **params)
    return raw, ext.bundle_labels(fmt, group_size), dict(ext.BUNDLE_NOTES)


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
            lane-level record of every primitive executed (filters applied inside the kernel's recorder).
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
    ext = cached_extension(globals(), "_dequant", EXTENSION)
    out = output_buffer((src_bytes.shape[0], dequant_out_bytes(src_bytes.shape[1], path)), traced=trace is not None)
    params = run_params(fmt_i, group, knobs)
    params["kernel_id"] = int(dequant_kernel(fmt_i, group))
    if trace is not None:
        run_traced(trace, lambda t, **kw: ext.run(src_bytes, out, trace=t, **kw, **params), path, knobs)
        return out
    parts = src_bytes.shape[0]
    tx = _translation(ext, fmt_i, group, knobs)
    if tx is None:
        run_blocks(lambda lo, hi: ext.run(src_bytes[lo:hi], out[lo:hi], **params), parts,
                   host_threads(cores, parts, src_bytes.size))
        return out
    translated = _translated_runner(tx, src_bytes, out)
    # a block its translation stopped in runs again on the compiled kernel, which overwrites every byte of it
    run_blocks(lambda lo, hi: translated(lo, hi) or ext.run(src_bytes[lo:hi], out[lo:hi], **params), parts,
               host_threads(cores, parts, src_bytes.size))
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

