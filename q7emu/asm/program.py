"""An assembled program: its bundles, constant data and labels; its text; its decoded form for the interpreter.

:class:`Program` is what :func:`q7emu.asm.assemble` returns. Its :meth:`~Program.text` prints it in the language it
was read from (docs/asm.md), through the op fields of :mod:`q7emu.primitives.asm_syntax`, so that assembling the
text gives the same program again; :meth:`~Program.decoded` lays it out as the integer arrays the Cython
interpreter (``q7emu.kernels._program``) runs; :meth:`~Program.run` runs it on SBUF partitions
(:mod:`q7emu.asm.run`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from q7emu._dataclass import dataclass
from q7emu.asm.run import (
    BUNDLE_COLS,
    FLAG_END,
    FLAG_SLOW,
    FLAG_SLOW_START,
    FLAG_SNAPSHOT,
    INSN_COLS,
    MAX_BUNDLES,
    MAX_DATA_BYTES,
    MODE_IN_ORDER,
    MODE_SNAPSHOT,
    Decoded,
    ProgramRun,
    run_sbuf,
)
from q7emu.kernels.programs import DATA_BASE
from q7emu.kernels.tracing import TraceSink
from q7emu.primitives import asm_syntax as S
from q7emu.primitives import optable as T

__all__ = ["Program", "Bundle", "Instr", "SourceRef", "Decoded", "decode", "DATA_BASE", "MAX_DATA_BYTES",
           "MAX_BUNDLES"]

@dataclass(frozen=True)
class SourceRef:
    """Where a statement came from: ``file:line:col`` (1-based; col 0 = the whole line), and the macro
    expansions it came through (innermost first)."""

    file: str
    line: int
    col: int = 0
    via: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" + (f":{self.col}" if self.col else "")

    def context(self) -> str:
        """`` (in macro narrow_fp8 from prog.s:40)`` when the statement came from a macro expansion, else ""."""
        return "".join(f" ({v})" for v in self.via)


@dataclass(frozen=True)
class Instr:
    """One op of a bundle: the op that runs, its operand values in its fields' order (register numbers,
    immediates, label names), where it was written, and how it was written (``name``: the mnemonic as the printer
    writes it back, a scalar suffix or a reading's mnemonic included; ``slot``: its slot class)."""

    op: T.Op
    values: tuple[int | str, ...]
    where: SourceRef
    name: str
    slot: str

    def text(self, prefix: bool = True) -> str:
        """The op as a line of the language (``ivp_sel2nx8i_s4 v26, v3, v1, 9``)."""
        ops = S.format_operands(self.op, self.values)
        name = ("ivp_" if prefix and S.is_ivp(self.op) else "") + self.name
        return f"{name} {ops}" if ops else name

    def registers(self) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        """(the registers the op reads, the registers it writes) as (file, number) pairs (a read-modify-write
        register in both)."""
        reads, writes = [], []
        for f, v in zip(S.fields(self.op), self.values):
            if not f.is_register:
                continue
            if f.role != T.DST:
                reads.append((f.kind, int(v)))
            if f.role != T.SRC:
                writes.append((f.kind, int(v)))
        return reads, writes

    @property
    def is_control(self) -> bool:
        """A branch, jump, loop set-up or return: it decides the next bundle."""
        return self.op.family in ("branch", "loop") or self.op.mnemonic in ("ret", "retw")

    @property
    def mem_access(self) -> str:
        """"load", "store" or "" (the op reads / writes memory)."""
        if S.is_ivp(self.op):
            m = [o for o in self.op.operands if o.kind == T.MEMORY]
            return "" if not m else ("store" if m[0].role != T.SRC else "load")
        if self.op.family == "scalar-mem":
            return "store" if self.op.mnemonic.startswith("s") else "load"
        return ""


@dataclass(frozen=True)
class Bundle:
    """One FLIX bundle (or a single op outside braces): its ops in written order, its tag (the ``B<n>`` a trace
    records, docs/asm.md §2.6), where it was written, whether it was braced, its objdump address if one was
    given, and the labels on it."""

    instrs: tuple[Instr, ...]
    tag: int
    where: SourceRef
    braced: bool = True
    address: int | None = None
    labels: tuple[str, ...] = ()

    @property
    def mode(self) -> int:
        """MODE_IN_ORDER when no op reads a register an earlier op of the bundle writes (running them in written
        order then gives the VLIW result), else MODE_SNAPSHOT (each op reads the bundle's starting state)."""
        written: set[tuple[str, int]] = set()
        for ins in self.instrs:
            reads, writes = ins.registers()
            if written & set(reads):
                return MODE_SNAPSHOT
            written |= set(writes)
        return MODE_IN_ORDER

    def execution_order(self) -> tuple[int, ...]:
        """The order the interpreter runs the ops in: written order, except that a bundle's stores run after its
        loads (memory, like the registers, is read as it was before the bundle; docs/asm.md §4.1)."""
        idx = range(len(self.instrs))
        stores = [i for i in idx if self.instrs[i].mem_access == "store"]
        if not stores or not any(self.instrs[i].mem_access == "load" and i > stores[0] for i in idx):
            return tuple(idx)
        return tuple([i for i in idx if i not in stores] + stores)

    def text(self, prefix: bool = True) -> str:
        """The bundle as one line: ``{ op ; op }`` (or the op alone when it was written outside braces)."""
        body = " ; ".join(i.text(prefix) for i in self.instrs)
        return body if not self.braced and len(self.instrs) == 1 else "{ " + body + " }"


@dataclass
class Program:
    """An assembled program (docs/asm.md).

    ``bundles``: the text section in order (the program counter counts bundles); ``data``: the data section, at
    :data:`DATA_BASE`; ``labels``: name -> ("text", bundle index) or ("data", byte offset); ``entry``: the first
    bundle that runs; ``readings``: the reading chosen for each mnemonic of two readings (docs/asm.md §5);
    ``name``: the file or name it was assembled from; ``equates``: the integer symbols (``.equ``, ``.set``, the
    predefined ones) as assembly left them (the kernel programs' bundle-tag names: q7emu.asm.gen_translations),
    which the text does not print."""

    bundles: tuple[Bundle, ...]
    data: bytes = b""
    labels: dict[str, tuple[str, int]] = field(default_factory=dict)
    entry: int = 0
    readings: dict[str, str] = field(default_factory=dict)
    name: str = "<program>"
    equates: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    # ------------------------------------------------------------------ views
    def label_at(self, index: int) -> list[str]:
        """The text labels on bundle ``index``."""
        return [n for n, (sec, v) in self.labels.items() if sec == "text" and v == index]

    def instructions(self) -> list[tuple[int, Instr]]:
        """Every op with its bundle index, in text order."""
        return [(b, ins) for b, bun in enumerate(self.bundles) for ins in bun.instrs]

    def op_count(self) -> dict[str, int]:
        """Static count of each mnemonic in the program."""
        out: dict[str, int] = {}
        for _, ins in self.instructions():
            out[ins.op.mnemonic] = out.get(ins.op.mnemonic, 0) + 1
        return out

    # ------------------------------------------------------------------ text
    def text(self, prefix: bool = True, addresses: bool = False) -> str:
        """The program in the language (docs/asm.md), every symbol and macro resolved: assembling it gives this
        program again (the same bundles, tags, data, labels, entry and readings). ``addresses`` adds each bundle's
        index as a comment."""
        out = [f"# {self.name}: {len(self.bundles)} bundles, {len(self.data)} data bytes"]
        for mnemonic, reading in sorted(self.readings.items()):
            out.append(f".reading {mnemonic}, {reading}")
        entry_names = self.label_at(self.entry)
        if self.entry != 0:
            if not entry_names:
                raise ValueError("the entry bundle has no label to name it")
            out.append(f".entry {entry_names[0]}")
        if self.data:
            out.append(".data")
            data_labels: dict[int, list[str]] = {}
            for n, (sec, v) in self.labels.items():
                if sec == "data":
                    data_labels.setdefault(v, []).append(n)
            cuts = sorted(set(data_labels) | set(range(0, len(self.data), 16)))
            for k, start in enumerate(cuts):
                for n in data_labels.get(start, []):
                    out.append(f"{n}:")
                end = cuts[k + 1] if k + 1 < len(cuts) else len(self.data)
                if start < len(self.data):
                    out.append("    .byte " + ", ".join(f"0x{b:02x}" for b in self.data[start:end]))
            for n in data_labels.get(len(self.data), []):
                out.append(f"{n}:")
        out.append(".text")
        tag = 0
        for i, b in enumerate(self.bundles):
            for n in self.label_at(i):
                out.append(f"{n}:")
            if b.tag != tag and b.tag < MAX_BUNDLES:
                out.append(f"    .bundle {b.tag}")
            line = "    " + b.text(prefix)
            out.append(line + (f"    # {i}" if addresses else ""))
            tag = min(b.tag + 1, MAX_BUNDLES)
        for n in self.label_at(len(self.bundles)):
            out.append(f"{n}:")
        return "\n".join(out) + "\n"

    # ------------------------------------------------------------------ the decoded form
    @cached_property
    def decoded(self) -> Decoded:
        """The integer arrays the interpreter runs (made once)."""
        return decode(self)

    def run(self, sbuf: npt.NDArray[np.uint8], *, partitions: Sequence[int] | range | None = None,
            regs: Mapping[str, int] | None = None, trace: TraceSink | bool | None = None,
            max_steps: int | None = None) -> ProgramRun:
        """Run the program once per SBUF partition, in place (docs/asm.md §4.2).

        sbuf: uint8 [P, partition_bytes], written in place; each run sees its partition at address 0 and the
        program's data section at :data:`DATA_BASE`. partitions: which rows (default all). regs: starting scalar
        registers ``{"a2": 0x40, ...}`` (every register is 0 unless set; the vector registers start zero).
        trace: a q7emu trace recorder (``q7emu.analysis.trace.Recorder``) or None. max_steps: the bundle budget
        of one partition's run (default :data:`q7emu.asm.run.DEFAULT_MAX_STEPS`). Returns the bundles each
        partition executed and its final scalar registers. Raises ProgramError naming the line and the partition
        when a run stops on an error, InvalidArgument for a bad argument."""
        return run_sbuf(self, sbuf, partitions=partitions, regs=regs, trace=trace, max_steps=max_steps)


_WMASK_BIT = {"v": (0, 0), "wv": (0, 32), "u": (0, 36), "vb": (1, 0), "pr": (1, 16), "a": (2, 0)}


def decode(p: Program) -> Decoded:
    """Lay ``p`` out as :class:`Decoded` (labels resolved to bundle indexes, ops in execution order, each op's flags:
    q7emu.asm.run FLAG_*)."""
    n = sum(len(b.instrs) for b in p.bundles)
    insns = np.zeros((n, INSN_COLS), np.int32)
    wmask = np.zeros((n, 3), np.int64)
    bundles = np.zeros((len(p.bundles), BUNDLE_COLS), np.int32)
    lines: list[SourceRef] = []
    # a bundle whose fall-through may go back to a loop's start: the one before a loop's end label
    loop_ends = {p.labels[str(ins.values[-1])][1] - 1 for b in p.bundles for ins in b.instrs if ins.op.family == "loop"}
    k = 0
    for bi, b in enumerate(p.bundles):
        mode = b.mode
        bundles[bi] = (k, len(b.instrs), b.tag, mode, b.where.line)
        slow = mode == MODE_SNAPSHOT or bi in loop_ends or any(i.is_control for i in b.instrs)
        order = b.execution_order()
        for pos_in_bundle, j in enumerate(order):
            ins = b.instrs[j]
            row = insns[k]
            row[0] = S.OPCODE[ins.op.mnemonic]
            flags = 0
            if pos_in_bundle == 0:
                flags |= (FLAG_SLOW_START if slow else 0) | (FLAG_SNAPSHOT if mode == MODE_SNAPSHOT else 0)
            if pos_in_bundle == len(order) - 1:
                flags |= FLAG_END | (FLAG_SLOW if slow else 0)
            row[1] = b.tag | flags << 16
            for f, v in zip(S.fields(ins.op), ins.values):
                pos = S.operand_position(ins.op, f.operand)
                if f.kind == S.LABEL:
                    sec, target = p.labels[str(v)]
                    row[2 + pos] = target
                else:
                    row[2 + pos] = int(v)
            _, writes = ins.registers()
            for kind, reg in writes:
                col, base = _WMASK_BIT[kind]
                wmask[k, col] |= np.int64(1) << np.int64(base + reg)
            lines.append(ins.where)
            k += 1
    return Decoded(insns, bundles, np.frombuffer(p.data, np.uint8).copy(), wmask, p.entry,
                   tuple(str(w) for w in lines))
