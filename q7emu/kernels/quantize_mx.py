"""QuantizeMX (DVE opcode 0xE3): the public API over the emulated quantize body.

``quantize_mx`` validates every argument (q7emu.model.knobs) before any kernel code runs, then runs the body as its
program (q7emu/kernels/programs/quantize_mx.s, the one statement of its schedule, docs/asm.md §6) for the
configuration, one call per 8-partition row block. An untraced call runs the program's translation (docs/asm.md §9)
where the ISA level has translations and ``Q7EMU_TRANSLATIONS`` is not ``off``; a traced call, and an untraced one
without a translation, run the program on the interpreter (``q7emu.kernels._program``), which executes each op
through its primitive's body. The bytes are the same. The configuration's translation and decoded program come from
tables generated from the programs (q7emu.asm.gen_translations, q7emu.kernels.configured), so nothing is assembled
here. The compiled interpreter is imported on the first call, so this module imports without a build.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from q7emu.kernels import configured
from q7emu.kernels.configured import ConfiguredProgram, Region, registers, run_interpreted, run_untraced
from q7emu.kernels.cores import check_cores, host_threads, output_buffer
from q7emu.kernels.extension import cached_extension
from q7emu.kernels.programs import DST_BASE, SCALE_BASE, SRC_BASE, quantize_mx_configuration, quantize_mx_registers
from q7emu.kernels.tracing import TraceRecorder, run_traced
from q7emu.model.dtypes import Fp8Arg
from q7emu.model.kernels import KernelId
from q7emu.model.knobs import Emax, Nonfinite, ScaleLayout, SrcFormat, Underflow, normalize_quantize_mx_args

#: max_exp per (emax knob, dst dtype): model data (q7emu.model.tables), re-exported here
from q7emu.model.tables import MAX_EXP

__all__ = ["quantize_mx", "configured_program", "listing_run", "EXTENSION", "MAX_EXP"]

#: the compiled module that runs the body's program: the interpreter, and the translations of its ISA level
EXTENSION = "q7emu.kernels._program"
#: that module once loaded at the dispatched level (None until the first kernel call: cached_extension; tests may
#: replace it)
_program: Any = None


def configured_program(src_dtype: str, dst_dtype: str, knobs: Mapping[str, str]) -> ConfiguredProgram:
    """The program of a configuration ("float16" / "bfloat16", "float8_e4m3fn" / "float8_e5m2", the knobs the
    program reads), from the generated tables (q7emu.kernels.configured)."""
    return configured.configured_program(quantize_mx_configuration(src_dtype, dst_dtype, knobs))


def _regions(bits: np.ndarray, data: np.ndarray, scale: np.ndarray, scatter: bool, lo: int, hi: int,
             columns: int) -> tuple[list[Region], np.ndarray]:
    """The memory map of the calls for row blocks lo..hi (docs/asm.md §4.3): block b's 8 source rows at SRC_BASE
    (2F bytes apart, read only), its 8 data rows at DST_BASE (F bytes apart) and its scale row at SCALE_BASE (row
    32q + b % 4 of a scatter layout, q = b // 4; row b of a compact one); (regions, offsets int64 [hi - lo,
    columns])."""
    f = bits.shape[1]
    blocks = np.arange(lo, hi, dtype=np.int64)
    offsets = np.zeros((hi - lo, columns), np.int64)
    offsets[:, 1] = blocks * 16 * f
    offsets[:, 2] = blocks * 8 * f
    offsets[:, 3] = (32 * (blocks // 4) + blocks % 4 if scatter else blocks) * (f // 4)
    regions: list[Region] = [(SRC_BASE, bits.view(np.uint8).reshape(-1), 16 * f, False),
                             (DST_BASE, data.reshape(-1), 8 * f, True),
                             (SCALE_BASE, scale.reshape(-1), f // 4, True)]
    return regions, offsets


def run_program(ext: Any, cp: ConfiguredProgram, bits: np.ndarray, data: np.ndarray, scale: np.ndarray,
                scatter: bool, lo: int, hi: int, trace: Any = None, **trace_filters: Any) -> Any:
    """Run ``cp`` on the interpreter module ``ext`` for row blocks lo..hi of ``bits`` (uint16 [P, F]) into ``data``
    (uint8 [P, F]) and ``scale`` (uint8, [P, F/4] when ``scatter``, else [P/8, F/4]): one call per block, the
    register file carried from call to call; a trace shows block b as partition 8b. ``trace``: None, a sink, or True
    (the raw records, returned; ``trace_window`` / ``trace_ops`` filter them)."""
    regions, offsets = _regions(bits, data, scale, scatter, lo, hi, ext.REGION_COLUMNS)
    return run_interpreted(ext, cp, regions, offsets, registers(quantize_mx_registers(bits.shape[1])),
                           8 * np.arange(lo, hi, dtype=np.int64), trace=trace,
                           kernel_id=int(KernelId.QUANTIZE_MX), **trace_filters)


def listing_run(passes: int, src_dtype: str, dst_dtype: str, knobs: Mapping[str, str]) -> tuple[
        Any, dict[int, str], dict[str, str]]:
    """One traced row block (8 partitions) of ``passes`` whole passes of the main loop (16 columns = 4 MX blocks
    each), compact scale layout, for the listings (q7emu.analysis.listing).

    Returns the raw full-operand trace of the configuration's program (the interpreter's ``run(trace=True)``), the
    program's bundle labels {bundle: label} and every label's note. The source values are fixed pseudo-random (a
    listing does not depend on data)."""
    from q7emu.kernels.programs.bundle_notes import BUNDLE_NOTES
    ext = cached_extension(globals(), "_program", EXTENSION)
    cp = configured_program(src_dtype, dst_dtype, knobs)
    bits = np.random.default_rng(7).integers(0, 1 << 16, size=(8, 16 * passes), dtype=np.uint16)
    data = np.zeros((8, 16 * passes), np.uint8)
    scale = np.zeros((1, 4 * passes), np.uint8)
    raw = run_program(ext, cp, bits, data, scale, False, 0, 1, trace=True)
    return raw, dict(cp.labels), dict(BUNDLE_NOTES)


def quantize_mx(src: np.ndarray, dst_dtype: Fp8Arg = "float8_e4m3fn", *, scale_layout: ScaleLayout = "auto",
                emax: Emax = "ocp", underflow: Underflow = "wrap", nonfinite: Nonfinite = "sim",
                trace: TraceRecorder | None = None,
                cores: int | None = None, src_format: SrcFormat | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Quantize an fp16 / bf16 tile to MXFP8 exactly as the 0xE3 body does.

    Args:
        src: float16 or ml_dtypes.bfloat16 [P, F], P in {32, 64, 96, 128}, F a multiple of 4; or, with
            ``src_format``, uint16 [P, F] holding those bit patterns.
        dst_dtype: "float8_e4m3fn" or "float8_e5m2" in any spelling (the type lists the lower-case ones, the
            format table's; FP4 output does not exist for this op).
        scale_layout: "auto" (scatter when P > 32, else compact), "scatter" or "compact".
        emax: "ocp" (max_exp 8 / 15) or "alt" (7 / 14).
        underflow: for blocks whose largest fp32 exponent field m is below max_exp (docs/model.md §2):
            "wrap" (uint8 subtract, as the NKI simulator), "clamp" (at 0), "unclamped-data" (byte as clamp,
            data divided by the true 2^(m - max_exp - 127)) or "unwrapped-data" (byte as wrap, true divide).
        nonfinite: "sim" (NaN / Inf take part in the block maximum as field 255) or "ocp" (a block with
            any NaN or Inf: scale byte 0xFF, every element the format's positive NaN).
        trace: None or a q7emu trace recorder.
        cores: host threads sharing the 8-partition row blocks (None = up to the CPU count for
            large tiles; tracing runs on one). The bytes never depend on it.
        src_format: None (``src``'s dtype says), or "float16" / "bfloat16": ``src`` is uint16 bit patterns of that
            format (a bf16 source without importing ml_dtypes, whose import alone takes about a second).
        The knobs' values and defaults are the knob table's (q7emu.model.knobs.KNOBS; docs/model.md §2).

    Returns:
        (data, scale): data uint32 [P, F/4], FP8 element 4j+k in byte k of word j; scale uint8
        E8M0 bytes, [P, F/4] with quadrant q's block rows at partitions 32q..32q+3 and the other
        rows 0 (scatter), or [P/8, F/4] (compact).

    Raises InvalidArgument (before any kernel code runs) or Q7Error when the extension is not built.
    """
    bits, kind, dst, knobs = normalize_quantize_mx_args(
        src, dst_dtype, {"scale_layout": scale_layout, "emax": emax, "underflow": underflow, "nonfinite": nonfinite},
        src_format)
    check_cores(cores)
    ext = cached_extension(globals(), "_program", EXTENSION)
    cp = configured_program(kind, dst, knobs)
    p, f = bits.shape
    scatter = knobs["scale_layout"] == "scatter"
    data = output_buffer((p, f), traced=trace is not None)
    scale = np.zeros((p if scatter else p // 8, f // 4), dtype=np.uint8)   # scatter: the other rows stay 0
    if trace is not None:
        run_traced(trace, lambda t, **kw: run_program(ext, cp, bits, data, scale, scatter, 0, p // 8, trace=t, **kw),
                   KernelId.QUANTIZE_MX.kernel, dict(knobs, dst_dtype=dst))
        return data.view("<u4").reshape(p, f // 4), scale
    # row block b is partition 8b on the interpreter's reports, as in a trace
    run_untraced(ext, cp, lambda lo, hi: _regions(bits, data, scale, scatter, lo, hi, ext.REGION_COLUMNS),
                 registers(quantize_mx_registers(f)), p // 8, host_threads(cores, p // 8, bits.nbytes),
                 partition_stride=8)
    return data.view("<u4").reshape(p, f // 4), scale
