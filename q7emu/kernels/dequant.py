"""TensorDequantize (POOL opcode 0x7b): the public API over the emulated firmware kernels.

``dequantize`` validates every argument (q7emu.model.knobs) before any kernel code runs, then executes
the firmware path the (fmt, group_size) pair selects -- proc_4bit_non_mx, proc_4bit_mx_8 or
proc_6bit_non_mx -- built from the IVP primitives (src/_dequant.pyx).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from q7emu.kernels import _dequant
from q7emu.golden.formats import NF4_QLORA
from q7emu.model.knobs import DequantFmt, dequant_out_bytes, normalize_dequant_args, normalize_fmt, path_name
from q7emu.errors import InvalidArgument
from q7emu.kernels.cores import check_cores, host_threads, run_blocks

NF4_TABLES = {"qlora": NF4_QLORA}


def dequantize(src: np.ndarray, fmt: int | str | DequantFmt, group_size: int = 0, *,
               nibble_order: str = "low-first", fp6_packing: str = "lsb-first",
               mx_layout: str = "scale-first", mx_scale: str = "e8m0", nf4_table: str = "qlora",
               trace: Any = None, cores: int | None = None) -> np.ndarray:
    """Expand packed 4-bit / 6-bit codes to FP8 bytes exactly as the firmware path does.

    Args:
        src: uint8 [P, in_bytes] or uint32 [P, in_words] (little-endian words), P = 1..128
            partitions; each row is one partition's source stream.
        fmt: dequant_fmt 1..4, a DequantFmt member, or "e2m1" / "int4" / "nf4" / "e2m3".
        group_size: 0, or 8 for the in-band-scaled MX path (fmt 1..3 only).
        nibble_order, fp6_packing, mx_layout, mx_scale, nf4_table: model knobs (MODEL.md §1).
        trace: None, or a q7emu trace recorder (``q7emu.analysis.trace.Recorder``) that receives the
            lane-level record of every primitive executed.
        cores: how many Q7 cores (host threads) share the partitions, as the firmware splits
            channels across POOL cores; None = up to the host's CPU count for large inputs.
            Tracing always runs on one core. The bytes never depend on it.

    Returns:
        uint8 [P, out_bytes] FP8 codes (E5M2 for fmt 1, 2; E4M3 for fmt 3, 4), out_bytes =
        in_bytes x 2 (4-bit), x 8/5 (MX), x 4/3 (FP6).
    """
    knobs = {"nibble_order": nibble_order, "fp6_packing": fp6_packing, "mx_layout": mx_layout,
             "mx_scale": mx_scale, "nf4_table": nf4_table}
    src_bytes, fmt_i, group, path, knobs = normalize_dequant_args(src, fmt, group_size, knobs)
    check_cores(cores)
    out = np.zeros((src_bytes.shape[0], dequant_out_bytes(src_bytes.shape[1], path)), dtype=np.uint8)
    args = (fmt_i, group, knobs["nibble_order"], knobs["fp6_packing"], knobs["mx_layout"], knobs["mx_scale"],
            NF4_TABLES[knobs["nf4_table"]])
    if trace is not None:
        raw = _dequant.run(src_bytes, out, *args, trace=True, trace_window=getattr(trace, "window", None),
                           trace_ops=getattr(trace, "ops", None))
        trace.add_run(raw, kernel=path, knobs=knobs)
        return out
    parts = src_bytes.shape[0]
    run_blocks(lambda lo, hi: _dequant.run(src_bytes[lo:hi], out[lo:hi], *args), parts,
               host_threads(cores, parts, src_bytes.size))
    return out


def dequantize_path(path: str, src: np.ndarray, fmt: int | str | DequantFmt, **knobs: Any) -> np.ndarray:
    """Run one named firmware path directly ("proc_4bit_non_mx", "proc_4bit_mx_8",
    "proc_6bit_non_mx"); the (fmt, group) pair must select that path."""
    if path not in ("proc_4bit_non_mx", "proc_4bit_mx_8", "proc_6bit_non_mx"):
        raise InvalidArgument("path", path, "must be proc_4bit_non_mx, proc_4bit_mx_8 or proc_6bit_non_mx")
    group = 8 if path == "proc_4bit_mx_8" else 0
    f = normalize_fmt(fmt)
    if path_name(f, group) != path:
        raise InvalidArgument("fmt", f, f"fmt {f} does not run on {path}")
    return dequantize(src, f, group, **knobs)
