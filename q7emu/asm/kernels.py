"""Programs in a kernel's place: the kernels' own programs, and the calling convention any program runs under when it
stands in for a kernel (docs/asm.md §4.3, §6).

* :func:`kernel_program` assembles a kernel's program (``q7emu/kernels/programs/*.s``) for one configuration.
* :func:`run_dequant` / :func:`run_quantize_mx` run a program as the TensorDequantize / QuantizeMX kernel runs:
  the same calls (one per partition; one per 8-partition row block), the same streams as memory regions and the
  same register file carried from call to call, so that a kernel's program assembled here gives the kernel API's
  bytes and traces, and a user's program (``q7emu replay --program``) runs exactly where the kernel would.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import PurePath
from typing import Any

import numpy as np
import numpy.typing as npt

from q7emu._dataclass import dataclass
from q7emu.asm.assembler import assemble_file
from q7emu.asm.program import Program
from q7emu.asm.run import ProgramRun, Region, run_calls
from q7emu.asm.translate import translation_of
from q7emu.errors import InvalidArgument
from q7emu.kernels.cores import output_buffer
from q7emu.kernels.programs import (
    DST_BASE,
    SCALE_BASE,
    SRC_BASE,
    dequant_registers,
    dequant_symbols,
    program_file,
    quantize_mx_registers,
    quantize_mx_symbols,
)
from q7emu.kernels.tracing import TraceRecorder, TraceSink, run_traced
from q7emu.model.format_table import dequant_format
from q7emu.model.kernels import KernelId, dequant_kernel
from q7emu.model.knobs import SrcFormat, dequant_out_bytes, normalize_dequant_args, normalize_quantize_mx_args

__all__ = ["kernel_program", "run_dequant", "run_quantize_mx", "dequantize_program", "quantize_mx_program",
           "ProgramBackend", "SRC_BASE", "DST_BASE", "SCALE_BASE"]


@lru_cache(maxsize=128)
def _assembled(kernel: str, key: tuple[tuple[str, Any], ...], title: str) -> Program:
    prog = assemble_file(program_file(kernel), symbols=dict(key))
    prog.name = title
    return prog


def kernel_program(kernel: str, *, fmt: int | None = None, group: int | None = None,
                   knobs: Mapping[str, str] | None = None, src_dtype: str = "float16",
                   dst_dtype: str = "float8_e4m3fn") -> Program:
    """The program of ``kernel`` ("proc_4bit_non_mx", "proc_4bit_mx_8", "proc_6bit_non_mx", "quantize_mx") for one
    configuration: the dequant paths take ``fmt`` and ``group``, QuantizeMX ``src_dtype`` / ``dst_dtype``; ``knobs``
    the model knobs (defaults where not given). Assembled once per configuration."""
    if kernel == "quantize_mx":
        sym = quantize_mx_symbols(src_dtype, dst_dtype, knobs)
        title = f"{kernel} {src_dtype} -> {dst_dtype}"
    else:
        if fmt is None or group is None:
            raise ValueError(f"the {kernel} program needs fmt and group")
        sym = dequant_symbols(fmt, group, knobs)
        title = f"{kernel} fmt={fmt} ({dequant_format(fmt).short}) group={group}"
    title += "".join(f" {k}={v}" for k, v in sorted((knobs or {}).items()))
    return _assembled(kernel, tuple(sorted(sym.items())), title)


def run_dequant(program: Program, src: npt.NDArray[np.uint8], dst: npt.NDArray[np.uint8], *,
                trace: TraceSink | bool | None = None,
                kernel_id: int = 0, max_steps: int | None = None,
                counts: npt.NDArray[np.int64] | None = None, translated: bool = True,
                trace_window: tuple[int, int] | None = None, trace_ops: Any = None) -> ProgramRun:
    """Run ``program`` as TensorDequantize runs its kernel: one call per partition (row) of ``src`` (uint8 [P,
    in_bytes], the source streams) into ``dst`` (uint8 [P, out_bytes], written in place). Each call sees its source
    stream at SRC_BASE (read-only) and its destination stream at DST_BASE, with a2 = SRC_BASE, a3 = in_bytes / 4
    (num_elem, u32 words) and a4 = DST_BASE; the vector registers carry from one call to the next. ``counts``: add
    each bundle's executions into it (int64 [bundles]). ``translated``: an untraced run without counts takes the
    program's translation when it has one (docs/asm.md §9; False: the interpreter always); the bytes are the same.
    ``trace=True``: the full-operand records in ProgramRun.raw (``trace_window`` / ``trace_ops`` filter them)."""
    parts, nbytes = src.shape
    regions = [Region("the source stream", SRC_BASE, np.ascontiguousarray(src).reshape(-1), nbytes,
                      np.arange(parts, dtype=np.int64) * nbytes, False),
               Region("the destination stream", DST_BASE, dst.reshape(-1), dst.shape[1],
                      np.arange(parts, dtype=np.int64) * dst.shape[1], True)]
    regs = dequant_registers(nbytes)
    tx = translation_of(program) if translated and trace is None and counts is None else None
    return run_calls(program, regions, np.arange(parts, dtype=np.int64), regs, trace=trace, kernel_id=kernel_id,
                     max_steps=max_steps, carry=True, counts=counts, translation=tx, trace_window=trace_window,
                     trace_ops=trace_ops)


def run_quantize_mx(program: Program, bits: npt.NDArray[np.uint16], data: npt.NDArray[np.uint8],
                    scale: npt.NDArray[np.uint8], scatter: bool, *, trace: TraceSink | bool | None = None,
                    kernel_id: int = 0,
                    max_steps: int | None = None, counts: npt.NDArray[np.int64] | None = None,
                    translated: bool = True, trace_window: tuple[int, int] | None = None,
                    trace_ops: Any = None) -> ProgramRun:
    """Run ``program`` as QuantizeMX runs its kernel: one call per 8-partition row block b of ``bits`` (uint16 [P, F],
    the fp16 / bf16 patterns) into ``data`` (uint8 [P, F], FP8 bytes) and ``scale`` (uint8: [P, F/4] rows 32q .. 32q
    + 3 when ``scatter``, else [P/8, F/4]). Call b sees the block's source rows at SRC_BASE (2F bytes apart,
    read-only), its data rows at DST_BASE (F bytes apart) and its scale row at SCALE_BASE, with a2 = SRC_BASE, a3 =
    2F (the source row stride), a4 = F (the columns), a5 = DST_BASE, a6 = F (the data row stride), a7 =
    SCALE_BASE; the vector registers carry from one call to the next. ``trace``, ``translated``, ``trace_window``,
    ``trace_ops``: as for :func:`run_dequant`."""
    p, f = bits.shape
    blocks = np.arange(p // 8, dtype=np.int64)
    srow = 32 * (blocks // 4) + blocks % 4 if scatter else blocks
    src = np.ascontiguousarray(bits).view(np.uint8).reshape(-1)
    regions = [Region("the source rows", SRC_BASE, src, 16 * f, blocks * 16 * f, False),
               Region("the data rows", DST_BASE, data.reshape(-1), 8 * f, blocks * 8 * f, True),
               Region("the scale row", SCALE_BASE, scale.reshape(-1), f // 4, srow * (f // 4), True)]
    tx = translation_of(program) if translated and trace is None and counts is None else None
    return run_calls(program, regions, 8 * blocks, quantize_mx_registers(f), trace=trace, kernel_id=kernel_id,
                     max_steps=max_steps, carry=True, counts=counts, translation=tx, trace_window=trace_window,
                     trace_ops=trace_ops)


def dequantize_program(program: Program | None, src: npt.NDArray[Any], fmt: Any, group_size: int = 0, *,
                       trace: TraceRecorder | None = None, max_steps: int | None = None,
                       counts: npt.NDArray[np.int64] | None = None,
                       **knobs: Any) -> npt.NDArray[np.uint8]:
    """:func:`q7emu.dequantize` with ``program`` in the kernel's place (None: the path's own program for this
    configuration): the same arguments, checks and result (uint8 [P, out_bytes]); a trace records the program's IVP ops
    under the path's kernel."""
    src_bytes, fmt_i, group, path, checked = normalize_dequant_args(src, fmt, group_size, knobs)
    prog = program if program is not None else kernel_program(path, fmt=fmt_i, group=group, knobs=checked)
    out = output_buffer((src_bytes.shape[0], dequant_out_bytes(src_bytes.shape[1], path)), traced=trace is not None)
    kid = int(dequant_kernel(fmt_i, group))
    if trace is not None:
        run_traced(trace, lambda t, **kw: run_dequant(prog, src_bytes, out, trace=t, kernel_id=kid,
                                                      max_steps=max_steps, counts=counts, **kw).raw, path, checked)
    else:
        run_dequant(prog, src_bytes, out, kernel_id=kid, max_steps=max_steps, counts=counts)
    return out


def quantize_mx_program(program: Program | None, src: npt.NDArray[Any], dst_dtype: Any = "float8_e4m3fn", *,
                        trace: TraceRecorder | None = None, max_steps: int | None = None,
                       counts: npt.NDArray[np.int64] | None = None, src_format: SrcFormat | None = None,
                        **knobs: Any) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint8]]:
    """:func:`q7emu.quantize_mx` with ``program`` in the kernel's place (None: the kernel's own program for this
    configuration): the same arguments, checks and results ((data uint32 [P, F/4], scale uint8))."""
    bits, kind, dst, checked = normalize_quantize_mx_args(src, dst_dtype, knobs, src_format)
    prog = program if program is not None else kernel_program("quantize_mx", src_dtype=kind, dst_dtype=dst,
                                                              knobs=checked)
    p, f = bits.shape
    scatter = checked["scale_layout"] == "scatter"
    data = output_buffer((p, f), traced=trace is not None)
    scale = np.zeros((p if scatter else p // 8, f // 4), dtype=np.uint8)
    kid = int(KernelId.QUANTIZE_MX)
    if trace is not None:
        run_traced(trace, lambda t, **kw: run_quantize_mx(prog, bits, data, scale, scatter, trace=t, kernel_id=kid,
                                                          max_steps=max_steps, counts=counts, **kw).raw,
                   KernelId.QUANTIZE_MX.kernel, dict(checked, dst_dtype=dst))
    else:
        run_quantize_mx(prog, bits, data, scale, scatter, kernel_id=kid, max_steps=max_steps, counts=counts)
    return data.view("<u4").reshape(p, f // 4), scale


@dataclass(frozen=True)
class ProgramBackend:
    """A machine backend that runs a program in the record's kernel's place (docs/asm.md §4.3): ``program``, or
    with None each record's kernel's own program for its configuration (the round trip of docs/asm.md §6);
    ``max_steps`` the bundle budget of one call; ``counts`` (int64 [the program's bundles]) gets each bundle's
    executions added (a profile). Picklable: a worker process or a farm node runs it."""

    program: Program | None = None
    max_steps: int | None = None
    counts: npt.NDArray[np.int64] | None = None

    def handler(self, opcode: int) -> Callable[..., Any]:
        """The function that stands in for the kernel API of ``opcode`` (0x7b: :func:`q7emu.dequantize`'s
        arguments; 0xE3: :func:`q7emu.quantize_mx`'s); InvalidArgument for an opcode without a calling convention (an
        opcode added through its spec runs its own kernel)."""
        if opcode == 0xE3:
            return lambda *a, **k: quantize_mx_program(self.program, *a, max_steps=self.max_steps,
                                                       counts=self.counts, **k)
        if opcode != 0x7B:
            raise InvalidArgument("--program", f"opcode 0x{opcode:02x}", "a program stands in for the kernels of 0x7b "
                                  "and 0xe3 only: their calling conventions (docs/asm.md §4.3)")
        return lambda *a, **k: dequantize_program(self.program, *a, max_steps=self.max_steps, counts=self.counts,
                                                  **k)

    @property
    def name(self) -> str:
        """How a report names the backend: ``program PROG.s`` (the file's name, not its folder: a report is the same
        from any folder) or ``kernel programs``."""
        return f"program {PurePath(self.program.name).name}" if self.program is not None else "kernel programs"
