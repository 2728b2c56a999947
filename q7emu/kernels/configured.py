"""A kernel configuration's program as the compiled interpreter runs it, without the assembler (docs/asm.md §4.4, §9).

Every configuration of the translated kernels (each TensorDequantize format, group and knob values; each QuantizeMX
source type, destination type and knob values) has, in tables generated from the kernel programs
(q7emu.asm.gen_translations: ``configurations_gen``, ``decoded_gen``), its translation and its decoded program.
:func:`configured_program` builds a :class:`ConfiguredProgram` from them; :func:`run_interpreted` runs it on the
interpreter (traced or not), :func:`run_translation` runs its translation and :func:`run_untraced` an untraced
call, on its host threads, translated where it can be. q7emu.kernels.dequant and q7emu.kernels.quantize_mx lay out
the calls (the memory regions, their offsets, the registers).
"""
from __future__ import annotations

import base64
from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from q7emu._dataclass import dataclass
from q7emu.errors import InternalError
from q7emu.kernels.cores import run_blocks
from q7emu.kernels.extension import translations_enabled
from q7emu.kernels.programs import DATA_BASE
from q7emu.kernels.programs.configurations_gen import CONFIGURATIONS, DATA_SECTIONS

__all__ = ["ConfiguredProgram", "configured_program", "registers", "run_interpreted", "run_translation",
           "run_untraced", "KERNEL_MAX_STEPS"]

#: a kernel call's bundle budget: a kernel's program always ends, far below it
KERNEL_MAX_STEPS = 1 << 40

#: one memory region of a call: (base address, buffer uint8 [n], size in bytes a call sees, writable)
Region = tuple[int, npt.NDArray[np.uint8], int, bool]
#: the calls of units lo..hi of a kernel call (its partitions, or row blocks): (their regions, offsets int64
#: [hi - lo, the interpreter's REGION_COLUMNS])
Layout = Callable[[int, int], tuple[list[Region], npt.NDArray[np.int64]]]


@dataclass(frozen=True)
class DecodedProgram:
    """A configuration's decoded program (q7emu.asm.run.Decoded without the source lines): insns int32 [N,
    INSN_COLS], bundles int32 [M, BUNDLE_COLS], wmask int64 [N, 3], entry; labels {bundle tag: name} (the
    listings')."""

    insns: npt.NDArray[np.int32]
    bundles: npt.NDArray[np.int32]
    wmask: npt.NDArray[np.int64]
    entry: int
    labels: dict[int, str]


def _array(cell: tuple[tuple[int, ...], str, str]) -> npt.NDArray[Any]:
    """An array of decoded_gen.PROGRAMS: (shape, little-endian dtype, its bytes in base64), as a writable array."""
    shape, dtype, text = cell
    return np.frombuffer(base64.b64decode(text), dtype=dtype).reshape(shape).astype(dtype[1:])


@dataclass(frozen=True)
class ConfiguredProgram:
    """A configuration's program: data uint8 [D], the data section at DATA_BASE; translation, its index in the
    interpreter's TX, and imm int32 [K], its variant and runtime immediates (what an untraced call needs); and,
    read from decoded_gen (a module an untraced call never imports: about 0.4 MB) on first use, its decoded program
    (:attr:`decoded`; insns, bundles, wmask, entry, labels its fields), what the interpreter runs."""

    name: str
    data: npt.NDArray[np.uint8]
    translation: int
    imm: npt.NDArray[np.int32]
    shape: int
    patches: tuple[tuple[int, int, int], ...]

    @cached_property
    def decoded(self) -> DecodedProgram:
        """Its shape's decoded program (decoded_gen.PROGRAMS[shape]) with the configuration's cells patched in."""
        from q7emu.kernels.programs.decoded_gen import PROGRAMS
        p: dict[str, Any] = PROGRAMS[self.shape]
        insns = _array(p["insns"])
        for row, col, value in self.patches:
            insns[row, col] = value
        return DecodedProgram(insns, _array(p["bundles"]), _array(p["wmask"]), int(p["entry"]), dict(p["labels"]))

    @property
    def insns(self) -> npt.NDArray[np.int32]:
        """int32 [N, INSN_COLS]: the decoded program's op rows (:attr:`decoded`)."""
        return self.decoded.insns

    @property
    def bundles(self) -> npt.NDArray[np.int32]:
        """int32 [M, BUNDLE_COLS]: the decoded program's bundle rows (:attr:`decoded`)."""
        return self.decoded.bundles

    @property
    def wmask(self) -> npt.NDArray[np.int64]:
        """int64 [N, 3]: each op's written registers (the interpreter's copy-back masks) (:attr:`decoded`)."""
        return self.decoded.wmask

    @property
    def entry(self) -> int:
        """The entry bundle (:attr:`decoded`)."""
        return self.decoded.entry

    @property
    def labels(self) -> dict[int, str]:
        """{bundle tag: label}: the listings' labels (:attr:`decoded`)."""
        return self.decoded.labels


#: configuration name -> its ConfiguredProgram, built on first use
_configured: dict[str, ConfiguredProgram] = {}


def configured_program(name: str) -> ConfiguredProgram:
    """The program of the configuration ``name`` (q7emu.kernels.programs.dequant_configuration,
    quantize_mx_configuration), from the generated tables: its translation and data section, and its shape's decoded
    program with the configuration's immediates patched in (:attr:`ConfiguredProgram.decoded`, read when first
    used). InternalError when the tables lack it (they are stale)."""
    found = _configured.get(name)
    if found is None:
        if name not in CONFIGURATIONS:
            raise InternalError(f"no generated program for the configuration {name} (run python -m "
                                "q7emu.asm.gen_translations)")
        tx, imm, data_at, shape, patches = CONFIGURATIONS[name]
        found = ConfiguredProgram(name, np.frombuffer(DATA_SECTIONS[data_at], np.uint8), int(tx),
                                  np.array(imm or (0,), np.int32), int(shape), tuple(patches))
        _configured[name] = found
    return found


def registers(values: dict[str, int]) -> npt.NDArray[np.uint32]:
    """A calling convention's scalar registers ({"a2": ..., ...}) as the interpreter takes them: uint32 [16],
    a0..a15, the others 0."""
    ar = np.zeros(16, np.uint32)
    for name, value in values.items():
        ar[int(name[1:])] = value
    return ar


def run_interpreted(ext: Any, cp: ConfiguredProgram, regions: list[Region], offsets: npt.NDArray[np.int64],
                    ar: npt.NDArray[np.uint32], partitions: npt.NDArray[np.int64], trace: Any = None,
                    kernel_id: int = 0, **trace_filters: Any) -> Any:
    """Run ``cp`` on the interpreter module ``ext``, one call per row of ``offsets`` (int64 [C, ext.REGION_COLUMNS]:
    call c sees region r at its buffer's offset offsets[c, r + 1]), the register file carried from call to call, each
    call starting from the scalar registers ``ar``; ``partitions`` int64 [C]: each call's partition, as a trace shows
    it. ``trace``: None, a sink, or True (the raw records, returned; ``trace_window`` / ``trace_ops`` filter them).
    Raises InternalError when the program stops on an error (a kernel's program on checked arguments never does) and
    KeyboardInterrupt on Ctrl-C."""
    d = cp.decoded
    status, call, insn, _, _, addr, _, raw = ext.run(
        d.insns, d.bundles, d.wmask, cp.data, DATA_BASE, d.entry, regions, offsets, ar, partitions,
        KERNEL_MAX_STEPS, trace=trace, kernel_id=kernel_id, carry=True, **trace_filters)
    if status:
        raise InternalError(f"the program of {cp.name} stopped at op {insn} of call {call} (partition "
                            f"{int(partitions[call])}; error {status}, address {addr:#x})")
    return raw


def run_translation(ext: Any, cp: ConfiguredProgram, regions: list[Region], offsets: npt.NDArray[np.int64],
                    ar: npt.NDArray[np.uint32]) -> bool:
    """Run ``cp``'s translation in ``ext`` (untraced), the calls as for :func:`run_interpreted`; False when the
    translation stopped (the caller then runs the calls on the interpreter, which overwrites every byte they write
    and reports what stopped it)."""
    return bool(ext.run_translated(cp.translation, cp.imm, cp.data, DATA_BASE, regions, offsets, ar,
                                   KERNEL_MAX_STEPS) == 0)


def run_untraced(ext: Any, cp: ConfiguredProgram, layout: Layout, ar: npt.NDArray[np.uint32], units: int,
                 threads: int, partition_stride: int = 1) -> None:
    """An untraced kernel call: units 0..units (one interpreter call each, laid out by ``layout``) in blocks on
    ``threads`` host threads (q7emu.kernels.cores.run_blocks), each block on ``cp``'s translation where the ISA level
    has translations and ``Q7EMU_TRANSLATIONS`` is not ``off`` (the variable is checked at every level), else on the
    interpreter. A block its translation stopped in runs again on the interpreter, which overwrites every byte of it
    and says what stopped it (unit u is partition ``partition_stride`` x u there)."""
    translate = translations_enabled() and bool(getattr(ext, "TRANSLATED", False))

    def run_units(lo: int, hi: int) -> None:
        regions, offsets = layout(lo, hi)
        if not (translate and run_translation(ext, cp, regions, offsets, ar)):
            run_interpreted(ext, cp, regions, offsets, ar, partition_stride * np.arange(lo, hi, dtype=np.int64))
    run_blocks(run_units, units, threads)
