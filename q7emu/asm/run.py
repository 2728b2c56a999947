"""Running a program: memory maps, calling conventions, errors (docs/asm.md §4).

A run is one or more *calls* of the program, each with a fresh register file, a fresh copy of the data section and
its own memory regions. :func:`run_sbuf` is ``q7emu asm run`` and :meth:`q7emu.asm.Program.run`: one call per SBUF
partition, the partition at address 0. :func:`run_calls` is the general form the machine uses to run a program in a
kernel's place (a kernel call's streams as regions; docs/asm.md §4.3). Every address and length is checked here,
before the interpreter (``q7emu.kernels._program``) runs without the GIL; an error the program meets while it runs
comes back as a :class:`q7emu.errors.ProgramError` naming the op's line and the partition.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from q7emu._dataclass import dataclass
from q7emu.errors import InvalidArgument, ProgramError
from q7emu.kernels.extension import cached_extension
from q7emu.kernels.programs import DATA_BASE
from q7emu.kernels.tracing import TraceSink

#: the largest data section (bytes)
MAX_DATA_BYTES = 1 << 20
#: the most bundles a program has: a trace records a bundle's tag in 16 bits, and 65535 means "unknown"
MAX_BUNDLES = 65535
#: operands per op in the decoded form
MAX_OPERANDS = 8
#: insn row: opcode, the bundle's tag | the op's flags << 16, operands (MAX_OPERANDS)
INSN_COLS = 2 + MAX_OPERANDS
#: an op's flags (docs/asm.md §4.4): the last op of its bundle; of a bundle that needs the loop's full
#: end-of-bundle work (a control transfer, the bundle before a loop's end, a snapshot bundle); the first op of such
#: a bundle; the first op of a snapshot bundle (it runs the whole bundle)
FLAG_END, FLAG_SLOW, FLAG_SLOW_START, FLAG_SNAPSHOT = 1, 2, 4, 8
#: bundle row: first insn, insn count, tag, mode (0: in order; 1: each op reads a snapshot), source line
BUNDLE_COLS = 5
MODE_IN_ORDER, MODE_SNAPSHOT = 0, 1


class Runnable(Protocol):
    """What a run needs of a program (:class:`q7emu.asm.Program` is one): its decoded form and its name."""

    name: str

    @property
    def decoded(self) -> Decoded: ...


#: the bundle budget of one call unless the caller sets one (docs/asm.md §4.5): about a second of interpretation
DEFAULT_MAX_STEPS = 1 << 24
#: the most regions a call has besides the data section
MAX_REGIONS = 7
EXTENSION = "q7emu.kernels._program"
_program: Any = None

#: the interpreter's error codes (src/kernels/_program.pyx ERR_*) in words
ERRORS = {-1: "address outside every memory region", -2: "misaligned access", -3: "store into a read-only region",
          -4: "integer divide by zero", -5: "step budget spent (an endless loop? raise it with --max-steps)",
          -6: "interrupted", -7: "unknown opcode (a q7emu bug)", -8: "the trace recorder failed"}
#: ERRORS' step-budget code (ERR_STEPS): where registers_after stops a call
STEP_BUDGET_SPENT = -5


@dataclass(frozen=True)
class Decoded:
    """A program as the interpreter reads it (docs/asm.md §4.4).

    insns int32 [N, INSN_COLS]: opcode (:data:`q7emu.primitives.asm_syntax.OPCODES`), its bundle's tag | its
    FLAG_* bits << 16, then the operands in the op table's operand order (register numbers, immediates,
    address-register numbers; an ``_i`` form's displacement in the memory operand's place; a label as its bundle
    index); bundles int32
    [M, BUNDLE_COLS]: first insn, insn count, tag, mode, source line; data uint8: the data section; wmask int64
    [N, 3]: the registers each op writes (v bits 0..31, wv 32..35, u 36..39; vb 0..15, pr 16..31; a 0..15), which
    a snapshot bundle copies back; entry: the first bundle; lines: where each op was written
    (``file:line:col``), for error messages."""

    insns: npt.NDArray[np.int32]
    bundles: npt.NDArray[np.int32]
    data: npt.NDArray[np.uint8]
    wmask: npt.NDArray[np.int64]
    entry: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Region:
    """One memory region of a call: it is seen at ``base`` .. ``base + size`` (addresses), backed for call c by
    ``buffer[offsets[c] : offsets[c] + size]`` (a C-contiguous uint8 array); a program may store into it when
    ``writable``. ``name`` says what it is in an error message."""

    name: str
    base: int
    buffer: npt.NDArray[np.uint8]
    size: int
    offsets: npt.NDArray[np.int64]
    writable: bool


@dataclass(frozen=True)
class ProgramRun:
    """What a run leaves besides memory: ``steps`` int64 [C], the bundles each call executed, and ``registers``
    uint32 [C, 16], each call's scalar registers a0..a15 at its end; ``partitions`` int64 [C]; ``raw``: a run with
    ``trace=True``, its full-operand records (q7emu.analysis.trace reads them), else None; ``translated``: every call
    ran on the program's translation (docs/asm.md §9), none on the interpreter."""

    partitions: npt.NDArray[np.int64]
    steps: npt.NDArray[np.int64]
    registers: npt.NDArray[np.uint32]
    bundle_counts: npt.NDArray[np.int64] | None = None
    raw: Any = None
    translated: bool = False


def parse_registers(regs: Mapping[str, int] | None) -> npt.NDArray[np.uint32]:
    """``{"a2": 0x40}`` -> uint32 [16] starting registers (every other one 0); InvalidArgument names a bad one."""
    out = np.zeros(16, np.uint32)
    for name, value in (regs or {}).items():
        key = str(name).strip().lower()
        digits = key[1:]
        if not (key.startswith("a") and digits.isdigit() and int(digits) <= 15 and str(int(digits)) == digits):
            raise InvalidArgument("regs", name, "a starting register is a0..a15")
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not -(1 << 31) <= int(value) < 1 << 32:
            raise InvalidArgument(key, value, "a register value is an int in [-2^31, 2^32)")
        out[int(key[1:])] = int(value) & 0xFFFFFFFF
    return out


def _check_steps(max_steps: int | None) -> int:
    if max_steps is None:
        return DEFAULT_MAX_STEPS
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or not 1 <= int(max_steps) < 1 << 62:
        raise InvalidArgument("max_steps", max_steps, "the step budget is an int in [1, 2^62)")
    return int(max_steps)


def _region_layout(regions: Sequence[Region], calls: int, data_bytes: int
                   ) -> tuple[npt.NDArray[np.int64], list[tuple[int, npt.NDArray[np.uint8], int, bool]]]:
    """The checked memory map of a run: each call's offset into each region's buffer (int64 [calls, MAX_REGIONS +
    1], column 0 the data section's, unused) and the regions as the interpreter takes them (base, buffer, size,
    writable); InvalidArgument naming a region that is not a C-contiguous uint8 buffer, is read-only but written,
    leaves the 32-bit address space or its buffer, or overlaps another region or the data section."""
    if len(regions) > MAX_REGIONS:
        raise InvalidArgument("regions", len(regions), f"a call has at most {MAX_REGIONS} memory regions")
    spans = [(DATA_BASE, data_bytes, "the data section")]
    offsets = np.zeros((calls, MAX_REGIONS + 1), np.int64)
    arrays = []
    for k, r in enumerate(regions, 1):
        buf = r.buffer
        if not isinstance(buf, np.ndarray) or buf.dtype != np.uint8 or not buf.flags.c_contiguous:
            raise InvalidArgument(r.name, type(buf).__name__, "a region's buffer is a C-contiguous uint8 array")
        if r.writable and not buf.flags.writeable:
            raise InvalidArgument(r.name, "read-only", "a writable region needs a writable buffer")
        if not (0 <= r.base < 1 << 32 and 0 <= r.size and r.base + r.size <= 1 << 32):
            raise InvalidArgument(r.name, r.base, "a region lies within the 32-bit address space")
        o = np.asarray(r.offsets, np.int64)
        if o.shape != (calls,) or calls and (int(o.min()) < 0 or int(o.max()) + r.size > buf.size):
            raise InvalidArgument(r.name, o.shape, f"each call's {r.size} bytes must lie within the {buf.size}-byte "
                                                  "buffer")
        offsets[:, k] = o
        spans.append((r.base, r.size, r.name))
        arrays.append((r.base, buf.reshape(-1), r.size, r.writable))
    spans.sort()
    for (b0, s0, n0), (b1, _, n1) in zip(spans, spans[1:]):
        if b0 + s0 > b1:
            raise InvalidArgument("regions", n1, f"overlaps {n0} in the address map")
    return offsets, arrays


def run_calls(program: Runnable, regions: Sequence[Region], partitions: npt.NDArray[np.int64],
              regs: Mapping[str, int] | npt.NDArray[np.uint32] | None = None, *,
              trace: TraceSink | bool | None = None,
              kernel_id: int = 0, max_steps: int | None = None, count_bundles: bool = False,
              carry: bool = False, counts: npt.NDArray[np.int64] | None = None,
              translation: tuple[int, npt.NDArray[np.int32]] | None = None,
              trace_window: tuple[int, int] | None = None, trace_ops: Any = None) -> ProgramRun:
    """Run ``program`` once per entry of ``partitions`` (int64 [C], what a trace records as each call's partition),
    call c seeing each region at its base backed by the region's buffer from ``offsets[c]`` on. The regions must
    not overlap each other or the data section. ``regs``: starting scalar registers (a dict or uint32 [16]).
    ``carry``: the vector registers carry from call to call (a kernel's calls), else each call starts from the reset
    state (every register 0). ``count_bundles``: count each bundle's executions (ProgramRun.bundle_counts), into
    ``counts`` (int64 [bundles], added to) when given. ``translation``: the program's translation
    (q7emu.asm.translate.translation_of: its index and runtime immediates, docs/asm.md §9), run in the interpreter's
    place when the run is untraced and without counts; the result is the same. ``trace=True``: the run's full-operand
    records in ProgramRun.raw, within ``trace_window`` (lo, hi) sequence numbers and of the mnemonics ``trace_ops``
    when given. Raises ProgramError when a call stops on an error."""
    d = program.decoded
    calls = len(partitions)
    offsets, arrays = _region_layout(regions, calls, len(d.data))
    if len(d.data) > MAX_DATA_BYTES:
        raise InvalidArgument("data", len(d.data), f"the data section is at most {MAX_DATA_BYTES} bytes")
    ar = regs if isinstance(regs, np.ndarray) else parse_registers(regs)
    steps = _check_steps(max_steps)
    if calls == 0:
        return ProgramRun(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 16), np.uint32))
    ext = cached_extension(globals(), "_program", EXTENSION)
    if counts is not None and (counts.dtype != np.int64 or counts.shape != (len(d.bundles),)
                               or not counts.flags.c_contiguous):
        raise InvalidArgument("counts", counts.shape, f"bundle counts are int64 [{len(d.bundles)}]")
    if counts is None and count_bundles:
        counts = np.zeros(len(d.bundles), np.int64)
    parts = np.ascontiguousarray(partitions, np.int64)
    tx = translation if trace is None and counts is None else None
    if tx is not None:
        status, call, insn, st, ar_out, addr, length, _ = ext.run(
            d.insns, d.bundles, d.wmask, d.data, DATA_BASE, d.entry, arrays, offsets, ar, parts, steps, carry=carry,
            translation=tx[0], imm=tx[1])
        if status == 0:
            return ProgramRun(np.asarray(partitions, np.int64), st, ar_out, counts, translated=True)
        # the interpreter runs every call again and reports what stopped the translation (docs/asm.md §9)
    status, call, insn, st, ar_out, addr, length, raw = ext.run(
        d.insns, d.bundles, d.wmask, d.data, DATA_BASE, d.entry, arrays, offsets, ar, parts, steps, trace=trace,
        kernel_id=kernel_id, counts=counts, carry=carry, trace_window=trace_window, trace_ops=trace_ops)
    if status:
        raise ProgramError(_where(program, insn, int(partitions[call])),
                           _explain(status, program, insn, addr, length, regions, int(st[call])))
    return ProgramRun(np.asarray(partitions, np.int64), st, ar_out, counts, raw)


def registers_after(program: Runnable, steps: int) -> tuple[dict[str, npt.NDArray[Any]] | None, int]:
    """The vector-side registers after the first ``steps`` bundles of one call of ``program`` from the reset state,
    with no memory but its data section and every scalar register 0: ({"v": uint8 [32, 64], "vb": uint64 [16], "pr":
    uint64 [16]}, -1); or (None, the row of the op that stopped the call first: an access outside the data section,
    or -1 for its end). What a translation's known values are read from (q7emu.asm.translate.known_values: only the
    registers whose every input is the data section or an immediate)."""
    d = program.decoded
    ext = cached_extension(globals(), "_program", EXTENSION)
    offsets, arrays = _region_layout([], 1, len(d.data))
    out: dict[str, npt.NDArray[Any]] = {}
    status, _, insn = ext.run(d.insns, d.bundles, d.wmask, d.data, DATA_BASE, d.entry, arrays, offsets,
                              np.zeros(16, np.uint32), np.zeros(1, np.int64), steps, registers=out)[:3]
    return (out, -1) if status == STEP_BUDGET_SPENT else (None, int(insn) if status else -1)


def _where(program: Runnable, insn: int, partition: int) -> str:
    d = program.decoded
    if 0 <= insn < len(d.lines):
        ref = d.lines[insn]
        return f"{ref}: partition {partition}"
    return f"{program.name}: partition {partition}"


def _explain(status: int, program: Runnable, insn: int, addr: int, length: int, regions: Sequence[Region],
             steps: int) -> str:
    what = ERRORS.get(status, f"error {status}")
    op = ""
    if 0 <= insn < len(program.decoded.lines):
        from q7emu.primitives.asm_syntax import OPCODES
        op = OPCODES[int(program.decoded.insns[insn, 0])].mnemonic + ": "
    if status in (-1, -2, -3):
        where = ", ".join(f"{r.name} [{r.base:#x}, {r.base + r.size:#x})" for r in regions)
        data = f"the data section [{DATA_BASE:#x}, {DATA_BASE + len(program.decoded.data):#x})"
        return f"{op}{what}: {length} bytes at {addr:#x} (regions: {data}" + (f", {where}" if where else "") + ")"
    if status == STEP_BUDGET_SPENT:
        return f"{what}: {steps} bundles"
    return op + what


def run_sbuf(program: Runnable, sbuf: npt.NDArray[np.uint8], *, partitions: Sequence[int] | range | None = None,
             regs: Mapping[str, int] | None = None, trace: TraceSink | bool | None = None,
             max_steps: int | None = None,
             count_bundles: bool = False) -> ProgramRun:
    """Run ``program`` once on each chosen SBUF partition, in place: partition p's bytes at address 0 (docs/asm.md
    §4.2). ``sbuf``: uint8 [P, partition_bytes], C-contiguous and writable."""
    if not isinstance(sbuf, np.ndarray) or sbuf.dtype != np.uint8 or sbuf.ndim != 2:
        raise InvalidArgument("sbuf", getattr(sbuf, "shape", type(sbuf).__name__), "an SBUF image is uint8 [P, bytes]")
    if not sbuf.flags.c_contiguous or not sbuf.flags.writeable:
        raise InvalidArgument("sbuf", "layout", "the SBUF image must be C-contiguous and writable (it is run in place)")
    nparts, pbytes = sbuf.shape
    if pbytes > DATA_BASE:
        raise InvalidArgument("sbuf", pbytes, f"a partition is at most {DATA_BASE:#x} bytes (the data section "
                                              "follows)")
    parts = list(range(nparts)) if partitions is None else [int(p) for p in partitions]
    if any(not 0 <= p < nparts for p in parts):
        raise InvalidArgument("partitions", parts, f"partitions are in [0, {nparts})")
    pa = np.array(parts, np.int64)
    region = Region("the SBUF partition", 0, sbuf.reshape(-1), pbytes, pa * pbytes, True)
    return run_calls(program, [region], pa, regs, trace=trace, max_steps=max_steps, count_bundles=count_bundles)
