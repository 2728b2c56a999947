"""Translation of a program into straight-line Cython (docs/asm.md §9).

The interpreter (src/kernels/_program.pyx) decodes nothing at run time, but every op still goes through a handler
call, reads its operands from a decoded row and its registers from memory. A translation removes that: for a
*family* of programs -- one shape (the same ops, registers, labels and bundles; only immediates may differ), or a
few shapes whose bundles mostly agree, its *variants* (:func:`family`: each variant's bundles aligned on one
sequence of positions, the ops only some variants have run under a test of the variant, imm[0]) -- it generates
one Cython function in which

* every op is its primitive's call with the registers as C locals (``P.addnx16(&v26, &v2, &v24)``), the body text
  coming from the same generator as the interpreter's handlers (q7emu.primitives.gen_wrappers.OpText), so an op's
  semantics stays written once;
* an immediate the whole family agrees on is a constant (constant propagation over the configurations), one that
  differs is read from a small per-program array;
* the bundles are grouped into basic blocks and the control flow (branches, the zero-overhead loop, ret) becomes
  a dispatch over block numbers, in which a block that may be its own successor (a pass loop's body) is an inner
  loop, left for any other block and for the step budget's test (:func:`render`, ``_self_loop``);
* register liveness (:func:`liveness`), with the edge from the program's end back to its entry that carrying the
  register file from call to call adds, drops the ops whose every output is dead and sends a dead output of a live
  op to a scratch local (in a family, each variant's liveness on its own ops, joined);
* demanded bits (:func:`demanded_bits`) narrow an accumulator whose every reader reads only the low 16 or 32 bits
  of its 48-bit lanes to cells of that width (:func:`narrowing`; the same primitives' calls on a narrower local),
  or reads whole lanes whose values, by their value ranges (:func:`value_ranges`: the products of operand lanes
  bounded by the constant tables, the known values and the byte-move maps), fit that width as signed numbers.
* lookup chunks (:func:`lookup_chunks`): a 16-bit lookup whose every index lies in one 16-entry chunk of its pool
  (by its selector's lane value sets, :class:`LaneValues`: what the primitives of the ops feeding it give on the
  values their sources may hold), or reads a lane equal to the one at its place in that chunk, runs as its chunk form
  (one byte shuffle per 16 lanes at AVX2 instead of four and three blends).
* known predicates (:func:`known_predicates`): a vbool register that one op alone writes, an integer compare of a
  register with itself (the op table's ``equal_sources``: x == x is all-true, x < x all-false), and that is not
  live at the entry holds that constant at every read; the ops reading it take the constant, and the C compiler
  folds it into their merges (the firmware's ``ivp_eqnx16 vb0, v0, v0``, an all-true predicate for the ``t``
  forms).
* known values (:func:`known_values`): a vec, vbool or pr register that one op of the entry's first straight run
  writes, from the data section or from other known registers, with the same value in every program of the family,
  and that is not live at the entry, holds that value at every read; its readers take the constant (a vec one as a
  static const object the C compiler folds into the primitives), and the load of a constant row compares its bytes
  with the constant, handing the call to the interpreter when they differ (a program of the shape with other data).
* choices and byte moves (:func:`move_plans`): a register the family's programs load with one of a few rows (a
  layout's index row) is a choice, its load noting which row it found; a select op reading a known or choice row
  runs, where the level has no byte shuffle (Q7_BYTE_MOVES), as copies of bytes by a map found by running its
  primitive (:func:`byte_moves`), elsewhere as its primitive with the row a constant.
* choice predicates (:func:`choice_predicates`): a vbool register whose value the row a choice register holds decides
  (from known values and that choice) is read as one constant per row, each reader once per row under a test of it.
* exact reads (:func:`whole_writes`): a merge under a known all-true predicate (the op table's ``merge_under``)
  reads no old lane, so liveness does not count that read (what it overwrites is not carried in; what was written
  only for it is dead).
* lane masks (:func:`lane_masks`): a vbool register that only ops taking a lane mask read and write (the op table's
  ``lane_mask``) is kept as 64 bytes, byte j all ones where bit j is set: a compare's lanes as they come, a byte
  blend's mask as it goes, without the movemask and the spread the bits cost (one live at the entry is made from the
  register file's bits, and given back as bits).
* uniform lane masks (:func:`uniform_mask_reads`): a merge on 2- or 4-byte lanes under a lane mask that every write
  reaching it (not the call's entry value) wrote whole on lanes as wide reads it as it is (``vumask_t``), without
  spreading each lane's first byte over the lane.
* a memory access a call may run more than once (:func:`repeated_bundles`: a loop's) keeps the region it found
  last and tries it before the interpreter's scan of the regions (``mem_hit`` in src/kernels/_program.pyx); the
  others find theirs out of line (``mem_once``).

A run uses a translation only untraced and without bundle counts (a trace and a profile read the architectural
state op by op: the interpreter gives it), and only for a program whose shape and constant immediates match the
translation's (:func:`match`); anything the translation meets that the interpreter would report (an address
outside every region, the step budget), and a constant row loaded with other bytes (or a choice with none of its
rows), makes the run start again on the interpreter, which reports it (or runs the program as it is).
"""
from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import itertools
import math
import operator
from collections.abc import Iterable, Sequence
from dataclasses import field, replace

import numpy as np
import numpy.typing as npt

from q7emu._dataclass import dataclass
from q7emu.asm import run as program_run
from q7emu.asm.program import Program
from q7emu.asm.run import EXTENSION, INSN_COLS, MODE_SNAPSHOT, Runnable
from q7emu.kernels.extension import cached_extension
from q7emu.primitives import asm_syntax as S
from q7emu.primitives import optable as T
from q7emu.primitives import scalar_ops as X
from q7emu.primitives.gen_wrappers import OpText, _p_ivp, _p_scalar, wrapper_name

__all__ = ["Reg", "OpFacts", "Shape", "TranslateError", "op_facts", "shape_key", "Family", "family", "liveness",
           "dead_ops", "demanded_bits", "narrowing", "CELL_WIDTHS", "Range", "signed_bits", "reaching_writers",
           "byte_bounds", "lane_range", "value_ranges", "MAX_LANE_VALUES", "LaneSet", "LaneValues", "lookup_chunks",
           "choice_predicates", "known_predicates", "whole_writes",
           "lane_masks", "Translation", "TableEntry", "data_key", "plan", "render", "match", "translation_of"]

#: a register: (file, number); the files as q7emu.primitives.asm_syntax.REGISTER_FILES names them
Reg = tuple[str, int]
#: a TRANSLATIONS entry (Translation.table_entry): the variants' shape keys, their constant immediates, their
#: runtime immediates, the first program's name, the imm array's length, the data section's digest ('' any)
TableEntry = tuple[str, str, str, str, int, str]

_C_TYPE = {"v": "vec_t", "wv": "wvec_t", "vb": "vbool_t", "pr": "pr_t", "u": "valign_t"}
_KIND_FILE = {T.VEC: "v", T.WVEC: "wv", T.VBOOL: "vb", T.PR: "pr", T.VALIGN: "u"}


class TranslateError(ValueError):
    """A program the translator does not take (a snapshot bundle), or a family whose programs differ in shape."""


@dataclass(frozen=True)
class OpFacts:
    """One op of the decoded program (its row in execution order): what it reads and writes.

    ``row``: its row in Decoded.insns; ``bundle``: its bundle; ``op``: the op-table record; ``values`` int [10 - 2]:
    the row's operand slots; ``imm_slots``: the slots holding an immediate (a constant a configuration may change);
    ``reads`` / ``writes``: the vector-side and scalar registers (a read-modify-write register in both);
    ``control``: it decides the next bundle; ``guard``: in a merged family (:func:`family`), the variants whose
    program has it, where not every one has (None: every variant runs it)."""

    row: int
    bundle: int
    op: T.Op
    values: tuple[int, ...]
    imm_slots: tuple[int, ...]
    reads: tuple[Reg, ...]
    writes: tuple[Reg, ...]
    control: bool
    guard: frozenset[int] | None = None

    @property
    def vec_reads(self) -> set[Reg]:
        """The vector-side registers it reads (not the scalar ``a`` ones)."""
        return {r for r in self.reads if r[0] != "a"}

    @property
    def vec_writes(self) -> set[Reg]:
        """The vector-side registers it writes."""
        return {r for r in self.writes if r[0] != "a"}

    @property
    def ivp(self) -> bool:
        """An IVP op (else the scalar core's)."""
        return S.is_ivp(self.op)

    @property
    def accesses_memory(self) -> bool:
        """It reads or writes memory (an IVP memory operand, a scalar load or store)."""
        return any(o.kind == T.MEMORY for o in self.op.operands) if self.ivp else self.op.family == X.XMEM

    @property
    def removable(self) -> bool:
        """Dropping it changes nothing but its register outputs: no memory access (an access may fail: the
        interpreter reports it), no scalar register written, no control."""
        return (self.ivp and not self.accesses_memory
                and not any(f == "a" for f, _ in self.writes) and not self.control)


def _imm_slots(op: T.Op) -> tuple[int, ...]:
    if not S.is_ivp(op):
        return tuple(k for k, o in enumerate(op.operands) if o.kind == T.IMM)
    out = []
    for k, o in enumerate(op.operands):
        if o.kind == T.IMM or (o.kind == T.SCALAR and o.name not in ("off", "n")):
            out.append(k)
        elif o.kind == T.MEMORY and op.mnemonic.endswith("_i"):
            out.append(k)                 # the _i form's displacement
    return tuple(out)


def op_facts(program: Program) -> list[OpFacts]:
    """Every op of ``program`` in the decoded (execution) order, with its registers read and written."""
    d = program.decoded
    out: list[OpFacts] = []
    row = 0
    for bi, b in enumerate(program.bundles):
        for j in b.execution_order():
            ins = b.instrs[j]
            reads, writes = ins.registers()
            vals = tuple(int(x) for x in d.insns[row, 2:INSN_COLS])
            out.append(OpFacts(row, bi, ins.op, vals, _imm_slots(ins.op), tuple(reads), tuple(writes),
                               ins.is_control))
            row += 1
    return out


def shape_key(program: Program) -> str:
    """The program's shape as a hex digest: its decoded ops and bundles with every immediate cleared (and no
    source lines). Two programs with one key differ only in immediates and data."""
    d = program.decoded
    ins = d.insns.copy()
    for f in op_facts(program):
        for k in f.imm_slots:
            ins[f.row, 2 + k] = 0
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(ins).tobytes())
    h.update(np.ascontiguousarray(d.bundles[:, :4]).tobytes())
    h.update(int(d.entry).to_bytes(4, "little"))
    return h.hexdigest()[:24]


def data_key(program: Program) -> str:
    """The digest of the program's data section (its bytes at DATA_BASE), as Translation.data names it."""
    return hashlib.sha256(bytes(program.decoded.data)).hexdigest()[:24]


# ------------------------------------------------------------------------------------------------ the flow graph
@dataclass
class Shape:
    """The control flow of a program: ``leaders`` (the first bundle of each basic block, sorted), ``succ`` (each
    bundle's successors; -1 is the end of a call), ``loop_ends`` (the bundles whose fall-through may go back to a
    loop's first bundle) and ``ops`` (each bundle's ops in execution order)."""

    nbundles: int
    entry: int
    leaders: list[int]
    succ: dict[int, set[int]]
    loop_ends: set[int]
    ops: dict[int, list[OpFacts]]


def flow(program: Program, facts: Sequence[OpFacts]) -> Shape:
    """The program's basic blocks and each bundle's successors (docs/asm.md §4.1's rules: a taken branch or a loop
    skip goes to its label, a ret ends the call, the bundle before a loop's end label may go back to the bundle
    after its loop op, running off the text ends the call)."""
    return _flow(len(program.bundles), program.entry, facts)


def _flow(nb: int, entry: int, facts: Sequence[OpFacts]) -> Shape:
    """:func:`flow` of ``nb`` bundles (or a family's positions) entered at ``entry``."""
    by_bundle: dict[int, list[OpFacts]] = {}
    for f in facts:
        by_bundle.setdefault(f.bundle, []).append(f)
    loop_ends: set[int] = set()
    loop_starts: set[int] = set()            # the bundles after a loop op: where a loop end's fall-through goes
    for f in facts:
        if f.op.family == X.XLOOP:
            loop_ends.add(f.values[1] - 1)
            loop_starts.add(f.bundle + 1)
    succ: dict[int, set[int]] = {}
    leaders = {entry}
    for b in range(nb):
        s: set[int] = set()
        ops = by_bundle.get(b, [])
        ends = any(f.op.mnemonic in ("ret", "retw") for f in ops)
        jumps = [f for f in ops if f.op.family == X.XBRANCH]
        for f in jumps:
            s.add(f.values[len(f.op.operands) - 1])
        for f in ops:
            if f.op.family == X.XLOOP:
                s.add(f.values[1])          # loopnez / loopgtz skip (loop: a harmless extra edge)
        if not ends and not any(f.op.mnemonic == "j" for f in jumps):
            s.add(b + 1)
        if b in loop_ends:
            s |= loop_starts
        if ends:
            s = {-1}
        s = {x if 0 <= x < nb else -1 for x in s}
        succ[b] = s
        if any(f.control for f in ops) or b in loop_ends:
            leaders |= {x for x in s if x >= 0}
            if b + 1 < nb:
                leaders.add(b + 1)
    leaders |= loop_starts
    return Shape(nb, entry, sorted(x for x in leaders if 0 <= x < nb), succ, loop_ends, by_bundle)


def repeated_bundles(shape: Shape) -> set[int]:
    """The bundles a call may run more than once: those on a cycle of the flow graph (a loop's body, a branch
    back). Their memory accesses get a region cache (``mem_hit``, docs/asm.md §9)."""
    out: set[int] = set()
    for b in range(shape.nbundles):
        seen: set[int] = set()
        todo = [s for s in shape.succ[b] if s >= 0]
        while todo:
            x = todo.pop()
            if x == b:
                out.add(b)
                break
            if x not in seen:
                seen.add(x)
                todo += [s for s in shape.succ[x] if s >= 0]
    return out


# ------------------------------------------------------------------------------------------------ access lengths
#: the bytes a variable-length access (lav2nx8_xp, labvdcmprs2nx8_xp, sav2nx8_xp) touches at most: of a byte count n
#: it touches c = min(max(n, 0), 64), a whole vector from n = 64 up
WHOLE_ACCESS = 64
#: a scalar value :func:`scalar_values` cannot tell (another op's result, or a call's entry value)
UNKNOWN = None


def length_slot(op: T.Op) -> int | None:
    """The operand slot of an IVP access's byte count ``n`` (a scalar register), None for an op without one."""
    return next((k for k, o in enumerate(op.operands) if o.kind == T.SCALAR and o.name == "n"), None)


class _ScalarValues:
    """:func:`scalar_values` and :func:`access_lengths`' walk, each (op, register) once: a cycle of copies (a
    loop's conditional move of its own register) gives UNKNOWN where it closes."""

    def __init__(self, shape: Shape, imm_values: dict[tuple[int, int], frozenset[int]], variants: int) -> None:
        self.shape = shape
        self.imm_values = imm_values
        self.variants = variants
        self._at: dict[tuple[int, Reg], frozenset[int | None]] = {}

    def at(self, read: OpFacts, reg: Reg) -> frozenset[int | None]:
        key = (read.row, reg)
        if key not in self._at:
            self._at[key] = frozenset({UNKNOWN})        # while it is walked: a cycle back here
            writers = reaching_writers(self.shape, read, reg, self.variants)
            self._at[key] = (frozenset({UNKNOWN}) if writers is None else
                             frozenset().union(*(self.written(w) for w in writers)))
        return self._at[key]

    def written(self, w: OpFacts) -> frozenset[int | None]:
        """The values op ``w`` may write to its scalar destination."""
        names = None if w.ivp else X.VALUE_COPIES.get(w.op.mnemonic)
        if names is None:
            return frozenset({UNKNOWN})
        out: set[int | None] = set()
        for k, o in enumerate(w.op.operands):
            if o.name not in names:
                continue
            if o.kind == T.IMM:
                out |= self.imm_values.get((w.row, k), {w.values[k]})
            else:
                out |= self.at(w, ("a", w.values[k]))
        return frozenset(out)


def scalar_values(shape: Shape, read: OpFacts, reg: Reg, imm_values: dict[tuple[int, int], frozenset[int]],
                  variants: int = 1) -> frozenset[int | None]:
    """The values scalar register ``reg`` may hold where op ``read`` reads it, as far as copies tell
    (scalar_ops.VALUE_COPIES): for each write that reaches it (:func:`reaching_writers`), a ``movi``'s immediate
    (each value the family's programs have there: ``imm_values``, (row, slot) -> values), the values a copy's
    operands hold where it reads them; UNKNOWN for any other op's result and where a call's entry value may reach."""
    return _ScalarValues(shape, imm_values, variants).at(read, reg)


def access_lengths(shape: Shape, facts: Sequence[OpFacts], imm_values: dict[tuple[int, int], frozenset[int]],
                   variants: int = 1) -> dict[int, tuple[int, bool]]:
    """The byte count each variable-length access in a loop (a repeated bundle) is translated for (docs/asm.md §9,
    access lengths): row -> (count, exact), the count clamped as the ops clamp it (0 .. 64). Exact where every write
    of its ``n`` register that reaches it gives one known value (:func:`scalar_values`): the access is translated
    for that count alone. Otherwise the count the loop's own writes give (those in repeated bundles, or every one
    when none is: a pass's length, where the first pass's may differ) when they know exactly one value, else
    :data:`WHOLE_ACCESS`; the translation then tests that ``n`` gives that count (:func:`length_test`, one
    comparison) and runs the access for the constant count, any other count as the interpreter's text does. A
    constant count folds the access's clamps and tail tests."""
    repeated = repeated_bundles(shape)
    walk = _ScalarValues(shape, imm_values, variants)
    out: dict[int, tuple[int, bool]] = {}
    for f in facts:
        k = length_slot(f.op) if f.ivp else None
        if k is None or f.bundle not in repeated:
            continue
        reg = ("a", f.values[k])
        every = walk.at(f, reg)
        if len(every) == 1 and UNKNOWN not in every:
            out[f.row] = (_count(next(x for x in every if x is not None)), True)
            continue
        writers = reaching_writers(shape, f, reg, variants) or []
        loop = [w for w in writers if w.bundle in repeated] or writers
        steady = {x for w in loop for x in walk.written(w) if x is not None}
        out[f.row] = (_count(steady.pop()) if len(steady) == 1 else WHOLE_ACCESS, False)
    return out


def _count(n: int) -> int:
    """The bytes an access of byte count ``n`` touches: min(max(n, 0), 64) (the variable-length ops' rule)."""
    return min(max(n, 0), WHOLE_ACCESS)


def length_test(count: int) -> str:
    """The C test that an access's ``n`` gives ``count`` bytes (:func:`access_lengths`: its clamped count)."""
    return "n >= 64" if count == WHOLE_ACCESS else "n <= 0" if count == 0 else f"n == {count}"


# ------------------------------------------------------------------------------------------------ liveness
def liveness(program: Program, facts: Sequence[OpFacts] | None = None,
             carry: bool = True) -> list[frozenset[Reg]]:
    """Register liveness: for each op (decoded row), the vector-side registers live after it. A call's end leads to
    the next call's entry when the register file carries (``carry``: a kernel's calls), else nothing is live there.
    Scalar registers are not tracked (a translation keeps every one: a run returns them)."""
    facts = list(facts) if facts is not None else op_facts(program)
    return _live(flow(program, facts), len(facts), carry)[0]


def _live(shape: Shape, nrows: int, carry: bool) -> tuple[list[frozenset[Reg]], dict[int, frozenset[Reg]]]:
    """(the registers live after each row, those live at each bundle's start): :func:`liveness`'s fixed point."""
    live_in: dict[int, frozenset[Reg]] = {b: frozenset() for b in range(shape.nbundles)}
    after: list[frozenset[Reg]] = [frozenset()] * nrows
    changed = True
    while changed:
        changed = False
        end_live = live_in.get(shape.entry, frozenset()) if carry else frozenset()
        for b in reversed(range(shape.nbundles)):
            out: set[Reg] = set()
            for s in shape.succ[b]:
                out |= end_live if s < 0 else live_in[s]
            live = frozenset(out)
            # VLIW: every op of the bundle reads before any writes; the execution order already gives that result
            # (one variant's ops: a family's liveness is each variant's, _family_live)
            for f in reversed(shape.ops.get(b, [])):
                after[f.row] = live
                live = (live - f.vec_writes) | f.vec_reads
            if live != live_in[b]:
                live_in[b] = live
                changed = True
    return after, live_in


def _family_live(nb: int, entry: int, facts: Sequence[OpFacts], variants: int, carry: bool
                 ) -> tuple[list[frozenset[Reg]], frozenset[Reg]]:
    """Liveness of a family's ops (:func:`family`): each variant's own (its ops alone, on the same positions), then
    the union over the variants that run each op: (the registers live after each row, those live at the entry).
    Exact for every variant, where one pass over the guarded ops (whose writes may not happen) would keep alive a
    register one variant writes before reading and another overwrites unread."""
    after: list[frozenset[Reg]] = [frozenset()] * len(facts)
    entry_live: frozenset[Reg] = frozenset()
    for v in range(variants):
        mine = [replace(f, guard=None) for f in facts if f.guard is None or v in f.guard]
        shape = _flow(nb, entry, mine)
        rows_after, live_in = _live(shape, len(facts), carry)
        for f in mine:
            after[f.row] = after[f.row] | rows_after[f.row]
        entry_live = entry_live | live_in[shape.entry]
    return after, entry_live


def dead_ops(program: Program, carry: bool = True,
             known: dict[Reg, int] | None = None) -> tuple[set[int], dict[int, set[Reg]]]:
    """(the rows a translation drops: every register output dead and nothing else done; row -> its dead
    destination-only outputs, for the live ops). With the program's ``known`` predicates, over the exact facts
    (:func:`whole_writes`: a merge under a known all-true predicate reads no old lane)."""
    facts = whole_writes(op_facts(program), known or {})
    return _dead(facts, _live(flow(program, facts), len(facts), carry)[0])


def _dead(facts: Sequence[OpFacts], after: Sequence[frozenset[Reg]]) -> tuple[set[int], dict[int, set[Reg]]]:
    """:func:`dead_ops` of ``facts`` with the registers live after each row (``after``)."""
    drop: set[int] = set()
    dead_out: dict[int, set[Reg]] = {}
    for f in facts:
        dead = f.vec_writes - after[f.row]
        if f.removable and dead and dead == f.vec_writes:
            drop.add(f.row)
        elif dead:
            only_dst = {r for r in dead if r not in f.reads}
            if only_dst:
                dead_out[f.row] = only_dst
    return drop, dead_out


# ------------------------------------------------------------------------------------------------ demanded bits
#: the cell widths of a narrowed accumulator, narrowest first (src/primitives/q7regs.pxd wcells16_t / wcells32_t)
CELL_WIDTHS = (16, 32)
_CELL_TYPE = {16: "wcells16_t", 32: "wcells32_t"}
#: the largest shift a 16-bit pack of 48-bit lanes takes (src/primitives/ivp_pack.pxd clamps it there)
_PACK16_MAX_SHIFT = 32


def _writers(facts: Iterable[OpFacts]) -> dict[Reg, list[OpFacts]]:
    """Each register some op of ``facts`` writes, with those ops in order."""
    out: dict[Reg, list[OpFacts]] = {}
    for f in facts:
        for r in f.writes:
            out.setdefault(r, []).append(f)
    return out


def demanded_bits(facts: Sequence[OpFacts], live_at_entry: Iterable[Reg],
                  constants: dict[tuple[int, int], int], ranges: dict[int, Range] | None = None) -> dict[Reg, int]:
    """For each accumulator whose lanes may be kept modulo 2^k: the k its readers need (the highest lane bit any of
    them reads, plus one). An accumulator qualifies when every op that reads or writes it is a CARRY_UP MAC (its
    lanes' bit j depends only on bits 0..j of the accumulator and operands: sums of products), a BIT_WINDOW pack
    (bits sh .. sh + 15) whose shift is a constant of the family (``constants``: (row, slot) -> value) or a
    WHOLE_LANE pack, which needs every lane value to fit k bits as a signed number: then every op that writes the
    accumulator must have a range (``ranges``: family row -> the range of the lanes it writes, :func:`value_ranges`)
    and k is at least the signed width of their union (:func:`signed_bits`). And it is not live at the entry (not
    carried in from, nor back to, the register file). Others are absent."""
    live = set(live_at_entry)
    ranges = ranges or {}
    users: dict[Reg, list[OpFacts]] = {}
    for f in facts:
        for r in {*f.reads, *f.writes}:
            if r[0] == "wv":
                users.setdefault(r, []).append(f)
    out: dict[Reg, int] = {}
    for reg, ops in sorted(users.items()):
        if reg in live:
            continue
        top = 0
        for f in ops:
            if f.op.narrows == T.CARRY_UP:
                continue
            if f.op.narrows == T.WHOLE_LANE:
                rows = [w.row for w in ops if reg in w.writes]
                if not rows or any(r not in ranges for r in rows):
                    break
                written = [ranges[r] for r in rows]
                top = max(top, signed_bits((min(lo for lo, _ in written), max(hi for _, hi in written))))
                continue
            slot = next((k for k, o in enumerate(f.op.operands) if o.kind == T.IMM), None)
            if f.op.narrows != T.BIT_WINDOW or slot is None or (f.row, slot) not in constants:
                break
            top = max(top, min(max(constants[f.row, slot], 0), _PACK16_MAX_SHIFT) + 16)
        else:
            out[reg] = top
    return out


def narrowing(demanded: dict[Reg, int]) -> dict[Reg, int]:
    """The cell width of each accumulator a translation narrows: the narrowest of CELL_WIDTHS that holds its
    demanded bits (an accumulator needing more keeps its 64-bit cells and is absent)."""
    out = {}
    for reg, top in demanded.items():
        width = next((w for w in CELL_WIDTHS if top <= w), None)
        if width is not None:
            out[reg] = width
    return out


# ------------------------------------------------------------------------------------------------ value ranges
#: a range of lane values: (lowest, highest), both included
Range = tuple[int, int]


def signed_bits(r: Range) -> int:
    """The fewest bits w that hold every value of ``r`` as a w-bit signed number (-2^(w-1) .. 2^(w-1) - 1)."""
    lo, hi = r
    return max(lo.bit_length() + 1 if lo >= 0 else (-lo - 1).bit_length() + 1,
               hi.bit_length() + 1 if hi >= 0 else (-hi - 1).bit_length() + 1)


def reaching_writers(shape: Shape, read: OpFacts, reg: Reg, variants: int = 1) -> list[OpFacts] | None:
    """The ops whose write of ``reg`` the op ``read`` may see (the writes of ``reg`` that reach its bundle along the
    flow graph: a bundle's reads see the values before its writes), or None where a call's entry value may reach
    it. In a family of ``variants`` (:func:`family`), only the variants that run ``read`` are followed, and a write
    of some of them (``guard``) ends the search for those alone."""
    preds: dict[int, set[int]] = {}
    for b, succ in shape.succ.items():
        for x in succ:
            preds.setdefault(x, set()).add(b)
    every = frozenset(range(variants))
    found: dict[int, OpFacts] = {}
    seen: set[tuple[int, frozenset[int]]] = set()
    todo = [(read.bundle, read.guard if read.guard is not None else every)]   # a bundle's start, variants to find
    while todo:
        b, want = todo.pop()
        if b == shape.entry:
            return None
        for x in preds.get(b, ()):
            rest = want
            for f in shape.ops.get(x, []):
                if reg in f.writes and (f.guard is None or f.guard & rest):
                    found[f.row] = f
                    rest = rest - (f.guard if f.guard is not None else every)
            if rest and (x, rest) not in seen:
                seen.add((x, rest))
                todo.append((x, rest))
    return [found[r] for r in sorted(found)]


def byte_bounds(reg: Reg, constants: dict[Reg, bytes], choices: dict[Reg, tuple[bytes, ...]],
                moves: dict[int, Moves], writers: Sequence[OpFacts] | None) -> list[Range]:
    """For each of the 64 bytes of vec register ``reg``, the range of the values it holds at a read in a call that
    the translation runs: one value where it is a known value (``constants``, whose loads the translation checks);
    the rows' bytes where it is a choice (``choices``: only those whose loads are checked); where every op whose
    write the read may see (``writers``, :func:`reaching_writers`) runs as byte moves (``moves``), what their maps
    give that byte (a constant, or a copy of a data byte: any); else 0 .. 255. (A map copies only data sources:
    :func:`move_plans` takes every known vec source as fixed, so its bytes are the map's constants.)"""
    if reg in constants:
        return [(b, b) for b in constants[reg]]
    if reg in choices:
        rows = choices[reg]
        return [(min(r[i] for r in rows), max(r[i] for r in rows)) for i in range(64)]
    if not writers or any(w.row not in moves for w in writers):
        return [(0, 255)] * 64
    out: list[Range] = []
    for i in range(64):
        values: list[int] = []
        for w in writers:
            for mp in moves[w.row].maps:
                j, b = mp[i]
                values += [b] if j < 0 else [0, 255]
        out.append((min(values), max(values)))
    return out


def lane_range(bounds: Sequence[Range], lane_bytes: int, signed: bool) -> Range:
    """The range of every lane of ``lane_bytes`` bytes (little-endian, ``signed`` or not) whose bytes lie in
    ``bounds`` (:func:`byte_bounds`): each lane's lowest and highest unsigned values are its bytes' (bounds hold
    each byte independently); a signed lane whose top byte may or may not have its sign bit takes every value."""
    bits = 8 * lane_bytes
    lo = hi = None
    for at in range(0, 64, lane_bytes):
        lane = bounds[at:at + lane_bytes]
        umin = sum(b[0] << (8 * j) for j, b in enumerate(lane))
        umax = sum(b[1] << (8 * j) for j, b in enumerate(lane))
        if signed and lane[-1][0] >= 0x80:
            umin, umax = umin - (1 << bits), umax - (1 << bits)
        elif signed and lane[-1][1] >= 0x80:
            umin, umax = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        lo = umin if lo is None else min(lo, umin)
        hi = umax if hi is None else max(hi, umax)
    assert lo is not None and hi is not None
    return lo, hi


def value_ranges(shape: Shape, constants: dict[Reg, bytes], choices: dict[Reg, tuple[bytes, ...]],
                 moves: dict[int, Moves], variants: int = 1) -> dict[int, Range]:
    """Value ranges from the constant tables (docs/asm.md §9): for each op of ``shape`` (a family's flow graph) whose
    op-table row bounds its lanes (optable.Op.lane_range PRODUCT: lane i = the product of lane i of its two vec
    operands), the range of the lanes it writes (family row -> range): the extremes of the products of its operands'
    lane ranges (:func:`lane_range` over :func:`byte_bounds`, in each operand's lane view; ``variants``: the
    family's, :func:`reaching_writers`)."""
    out: dict[int, Range] = {}
    for fs in shape.ops.values():
        for f in fs:
            if f.op.lane_range != T.PRODUCT:
                continue
            ranges = []
            for k, o in enumerate(f.op.operands):
                if o.kind == T.VEC and o.role == T.SRC:
                    reg = ("v", f.values[k])
                    bounds = byte_bounds(reg, constants, choices, moves, reaching_writers(shape, f, reg, variants))
                    ranges.append(lane_range(bounds, 64 // T.VEC_LANES[o.view], o.dtype.startswith("int")))
            if len(ranges) == 2:
                corners = [a * b for a in ranges[0] for b in ranges[1]]
                out[f.row] = (min(corners), max(corners))
    return dict(sorted(out.items()))


# ------------------------------------------------------------------------------------------------ lane value sets
#: the most values a lane value set holds, and the most combinations of its sources' values an op is run on
MAX_LANE_VALUES = 4096


@dataclass(frozen=True)
class LaneSet:
    """The values every lane of a vec register may hold at a read (docs/asm.md §9, lane value sets): lanes of
    ``width`` bytes (1, 2, 4), each one of ``values`` (unsigned, little-endian)."""

    width: int
    values: frozenset[int]

    def widened(self, width: int) -> LaneSet | None:
        """The set in lanes of ``width`` bytes (a multiple of :attr:`width`): every combination of the narrower
        lanes a wide lane holds; None where that is more than :data:`MAX_LANE_VALUES` values."""
        k = width // self.width
        if len(self.values) ** k > MAX_LANE_VALUES:
            return None
        out = {0}
        for j in range(k):
            out = {v | x << (8 * self.width * j) for v in out for x in self.values}
        return LaneSet(width, frozenset(out))


def _lanes_of(data: bytes, width: int) -> set[int]:
    return {int.from_bytes(data[i:i + width], "little") for i in range(0, 64, width)}


def _run_op(op: T.Op, values: dict[int, bytes | int]) -> bytes:
    """The op's primitive (its wrapper in q7emu.primitives._ivp, the C-only ops' too) on its sources by operand
    slot -- a vec one as its 64 bytes, an immediate as an int; its one vec output's 64 bytes."""
    from q7emu.primitives import _ivp
    fn = getattr(_ivp, wrapper_name(op))
    args = [x if isinstance(x, int) else np.frombuffer(x, np.dtype(o.dtype)).copy()
            for o in op.args for x in [values[op.operands.index(o)]]]
    return np.asarray(fn(*args)).tobytes()


class LaneValues:
    """Lane value sets (docs/asm.md §9): the values the lanes of a vec register may hold where an op reads it, from
    what the translation checks -- a known value's bytes (``constants``), the values each immediate takes in the
    family's programs (``imm_values``: (row, operand slot) -> its values; one where it is a constant) -- through the
    ops that keep the lanes small: an op whose every lane is a function of one source byte (optable.Op.one_byte_lanes:
    the values it gives on sources filled with each byte value) and a lane-wise op (optable.Op.lanewise: its primitive
    run on every combination of its sources' values, one in every lane). A register some write of which is none of
    these, or that a call's entry value may reach (:func:`reaching_writers`, per variant of a family of
    ``variants``), or that a loop feeds back into its own writer, may hold anything. The primitives are the only
    statement of the ops here."""

    def __init__(self, shape: Shape, constants: dict[Reg, bytes], imm_values: dict[tuple[int, int], frozenset[int]],
                 variants: int = 1) -> None:
        self.shape = shape
        self.constants = constants
        self.imm_values = imm_values
        self.variants = variants
        self._written: dict[tuple[int, Reg], LaneSet | None] = {}
        #: the immediates (row, operand slot) some set was computed from: a translation resting on a set checks
        #: that a program's runtime immediates there are among those values (:attr:`Translation.imm_checks`)
        self.imms_read: set[tuple[int, int]] = set()

    def at(self, read: OpFacts, reg: Reg) -> LaneSet | bytes | None:
        """What vec register ``reg`` holds where ``read`` reads it: its 64 bytes where it is a known value, else a
        :class:`LaneSet`, or None (anything)."""
        if reg in self.constants:
            return self.constants[reg]
        writers = reaching_writers(self.shape, read, reg, self.variants)
        if not writers:
            return None
        sets = [self.written(w, reg) for w in writers]
        if any(x is None for x in sets):
            return None
        width = max(x.width for x in sets if x is not None)
        wide = [x.widened(width) for x in sets if x is not None]
        if any(x is None for x in wide):
            return None
        union = frozenset().union(*(x.values for x in wide if x is not None))
        return LaneSet(width, union) if len(union) <= MAX_LANE_VALUES else None

    def written(self, w: OpFacts, reg: Reg) -> LaneSet | None:
        """The values of the lanes op ``w`` writes into ``reg`` (None: anything)."""
        key = (w.row, reg)
        if key not in self._written:
            self._written[key] = None           # a loop back into this write: anything
            self._written[key] = self._evaluate(w)
        return self._written[key]

    def _evaluate(self, w: OpFacts) -> LaneSet | None:
        op = w.op
        if not w.ivp or not (op.lanewise or op.one_byte_lanes) or w.accesses_memory:
            return None
        slots = [k for k, o in enumerate(op.operands) if o.kind == T.IMM]
        if any((w.row, k) not in self.imm_values for k in slots):
            return None
        self.imms_read.update((w.row, k) for k in slots)
        sources = [k for k, o in enumerate(op.operands) if o.kind == T.VEC and o.role == T.SRC]
        found: list[LaneSet] = []
        for chosen in itertools.product(*(sorted(self.imm_values[w.row, k]) for k in slots)):   # each program's
            imms = dict(zip(slots, chosen))
            got = self._one_byte(op, sources, imms) if op.one_byte_lanes else self._lanewise(w, sources, imms)
            if got is None:
                return None
            found.append(got)
        out = frozenset().union(*(x.values for x in found))     # one width: the sources' decide it, not the imms
        return LaneSet(found[0].width, out) if len(out) <= MAX_LANE_VALUES else None

    @staticmethod
    def _one_byte(op: T.Op, sources: list[int], imms: dict[int, int]) -> LaneSet:
        out: set[int] = set()
        for b in range(256):
            out |= _lanes_of(_run_op(op, {**imms, **{k: bytes([b]) * 64 for k in sources}}), op.one_byte_lanes)
        return LaneSet(op.one_byte_lanes, frozenset(out))

    def _lanewise(self, w: OpFacts, sources: list[int], imms: dict[int, int]) -> LaneSet | None:
        op = w.op
        out: set[int] = set()
        known: dict[int, bytes] = {}
        sets: dict[int, LaneSet] = {}
        for k in sources:
            x = self.at(w, ("v", w.values[k]))
            if x is None:
                return None
            if isinstance(x, bytes):
                known[k] = x
            else:
                sets[k] = x
        width = max([op.lanewise] + [x.width for x in sets.values()])
        wide: dict[int, LaneSet] = {}
        for k, x in sets.items():
            y = x.widened(width)
            if y is None:
                return None
            wide[k] = y
        if math.prod(len(x.values) for x in wide.values()) > MAX_LANE_VALUES:
            return None
        for combo in itertools.product(*(sorted(x.values) for x in wide.values())):
            filled = {k: v.to_bytes(width, "little") * (64 // width) for k, v in zip(wide, combo)}
            out |= _lanes_of(_run_op(op, {**imms, **known, **filled}), width)
            if len(out) > MAX_LANE_VALUES:
                return None
        return LaneSet(width, frozenset(out))


def _indexes(sel: LaneSet | bytes | None, byte: int) -> set[int]:
    """The indexes (bits 0..5) byte ``byte`` (0, 1) of a selector's 16-bit lanes may hold."""
    if sel is None:
        return set(range(64))
    if isinstance(sel, bytes):
        return {sel[i + byte] & 0x3F for i in range(0, 64, 2)}
    lanes = sel.widened(2) if sel.width == 1 else sel
    if lanes is None:
        return set(range(64))
    halves = {v >> (16 * j) & 0xFFFF for v in lanes.values for j in range(lanes.width // 2)}
    return {v >> (8 * byte) & 0x3F for v in halves}


def _pools(lo: Reg, hi: Reg, constants: dict[Reg, bytes], choices: dict[Reg, tuple[bytes, ...]]
           ) -> list[npt.NDArray[np.uint16]]:
    """Every pool lo || hi a lookup may read, as 64 16-bit lanes: from known values and choices' rows (one register
    as both halves holds one row in both); none where a half is neither."""
    rows = [[constants[r]] if r in constants else list(choices.get(r, ())) for r in (lo, hi)]
    pairs = [(x, x) for x in rows[0]] if lo == hi else list(itertools.product(*rows))
    return [np.frombuffer(a + b, np.uint16) for a, b in pairs]


def lookup_chunks(shape: Shape, facts: Sequence[OpFacts], constants: dict[Reg, bytes],
                  imm_values: dict[tuple[int, int], frozenset[int]], dropped: Iterable[int] = (), variants: int = 1,
                  choices: dict[Reg, tuple[bytes, ...]] | None = None
                  ) -> tuple[dict[int, tuple[int, ...]], set[Reg], set[tuple[int, int]]]:
    """Lookup chunks (docs/asm.md §9): each 16-bit lookup with a chunk form (optable.Op.chunk_form) that liveness
    keeps and whose every output reads one 16-entry chunk of its pool (family row -> the chunk of each output: even
    then odd for a dual select): by the indexes its selector's lane value sets (:class:`LaneValues`) allow, all in
    one chunk c, or each reading a lane equal to the one at its place in chunk c in every pool it may have -- its
    known values (``constants``) or the rows of a choice (``choices``) (``imm_values``: as :class:`LaneValues`
    takes them). And what the chunks rest on, which the caller checks: the choice registers whose rows some chunk
    rests on (their loads are compared with them) and the immediates the sets were computed from
    (:attr:`LaneValues.imms_read`)."""
    gone = set(dropped)
    values = LaneValues(shape, constants, imm_values, variants)
    out: dict[int, tuple[int, ...]] = {}
    relied: set[Reg] = set()
    for f in facts:
        if f.row in gone or not f.op.chunk_form:
            continue
        regs = {o.name: ("v", f.values[k]) for k, o in enumerate(f.op.operands) if o.kind == T.VEC}
        pools = _pools(regs["lo"], regs["hi"], constants, choices or {})
        sel = values.at(f, regs["sel"])
        found: list[int] = []
        by_pool = False
        for byte in range(sum(1 for o in f.op.operands if o.kind == T.VEC and o.role != T.SRC)):
            idx = _indexes(sel, byte)
            c = next((c for c in range(4) if all(i >> 4 == c for i in idx)), None)
            if c is None and pools:
                by_pool = True
                c = next((c for c in range(4) if all(p[i] == p[16 * c + (i & 15)] for i in idx for p in pools)), None)
            if c is None:
                break
            found.append(c)
        else:
            out[f.row] = tuple(found)
            if by_pool:
                relied |= {regs[h] for h in ("lo", "hi") if regs[h] not in constants}
    return out, relied, values.imms_read if out else set()


# ------------------------------------------------------------------------------------------------ known predicates
#: the vbool_t value of each Op.equal_sources fact (every bit set or clear)
_EQUAL_SOURCES_VALUE = {T.ALL_TRUE: (1 << 64) - 1, T.ALL_FALSE: 0}


def known_predicates(facts: Sequence[OpFacts], live_at_entry: Iterable[Reg]) -> dict[Reg, int]:
    """The vbool registers whose value is the same at every read, with that value (a 64-bit vbool): a register
    that exactly one op writes, as its destination only (not a merge of its old value), where that op is an integer
    compare whose two vec sources are one register (the op table's ``equal_sources``: the result does not depend on
    the lanes), that some op reads, and that is not live at the entry (``live_at_entry``: every path from the entry to
    a read passes that op first, also across calls when the register file carries). Others are absent."""
    live = set(live_at_entry)
    writers = {r: ws for r, ws in _writers(facts).items() if r[0] == "vb"}
    read = {r for f in facts for r in f.reads}
    out: dict[Reg, int] = {}
    for reg, ops in sorted(writers.items()):
        if reg in live or reg not in read or len(ops) != 1 or not ops[0].op.equal_sources:
            continue
        f = ops[0]
        dst = [f.values[k] for k, o in enumerate(f.op.operands) if o.kind == T.VBOOL and o.role == T.DST]
        srcs = {f.values[k] for k, o in enumerate(f.op.operands) if o.kind == T.VEC and o.role == T.SRC}
        if dst == [reg[1]] and len(srcs) == 1:
            out[reg] = _EQUAL_SOURCES_VALUE[f.op.equal_sources]
    return out


def _merge_predicate(f: OpFacts) -> int | None:
    """The operand slot of the vbool predicate op ``f`` merges under (the op table's ``merge_under``), or None."""
    return next((k for k, o in enumerate(f.op.operands)
                 if o.name == f.op.merge_under and o.kind == T.VBOOL and o.role == T.SRC), None)


def _under_all_true(f: OpFacts, known: dict[Reg, int]) -> bool:
    """Whether op ``f`` merges under a known predicate with every bit set (so writes every lane it merges)."""
    k = _merge_predicate(f)
    return k is not None and known.get(("vb", f.values[k])) == _EQUAL_SOURCES_VALUE[T.ALL_TRUE]


def whole_writes(facts: Sequence[OpFacts], known: dict[Reg, int]) -> list[OpFacts]:
    """``facts`` with what a known all-true predicate adds: an op that merges under a vbool operand (the op table's
    ``merge_under``) which is a known predicate with every bit set writes every lane of its SRCDST operands, so it
    does not read their old values (unless it also reads them as a source); liveness over these facts is exact where
    the plain facts count reads no lane makes."""
    out = []
    for f in facts:
        if not _under_all_true(f, known):
            out.append(f)
            continue
        old = {(_KIND_FILE.get(o.kind), f.values[k]) for k, o in enumerate(f.op.operands) if o.role == T.SRCDST}
        kept = {(_KIND_FILE.get(o.kind), f.values[k]) for k, o in enumerate(f.op.operands) if o.role == T.SRC}
        out.append(replace(f, reads=tuple(r for r in f.reads if r not in old or r in kept)))
    return out


# ------------------------------------------------------------------------------------------------ known values
#: the register files whose known values a translation takes as constants (a vec register's 64 bytes, a vbool's or a
#: pr's 64 bits)
KNOWN_FILES = ("v", "vb", "pr")


def _stores(f: OpFacts) -> bool:
    """It writes memory (an IVP store, whose memory operand is not a plain source; a scalar store)."""
    if f.ivp:
        return any(o.kind == T.MEMORY and o.role != T.SRC for o in f.op.operands)
    return f.op.family == X.XMEM and not any(o.role == T.DST for o in f.op.operands)


def entry_prefix(program: Program, facts: Sequence[OpFacts] | None = None) -> tuple[list[OpFacts], int]:
    """The ops every call runs first and once, in order, and the bundles they span: the entry's basic block (none
    when a branch or a loop comes back to it) up to its first bundle with a control op or a store."""
    facts = list(facts) if facts is not None else op_facts(program)
    shape = flow(program, facts)
    if any(shape.entry in s for s in shape.succ.values()):
        return [], 0
    out: list[OpFacts] = []
    b = shape.entry
    while b < shape.nbundles and (b == shape.entry or b not in shape.leaders):
        ops = shape.ops.get(b, [])
        if any(f.control or _stores(f) for f in ops):
            break
        out += ops
        b += 1
    return out, b - shape.entry


def prefix_values(program: Program) -> tuple[dict[Reg, tuple[int, bytes | int]], dict[int, tuple[int, ...]]]:
    """The registers the entry prefix (:func:`entry_prefix`) leaves with a value fixed by the program alone, each with
    the row of the op that wrote it and that value: a vec register an IVP load wrote whose register inputs are known
    (its address may be anything: the translation checks the bytes it loads); a vec, vbool or pr register an IVP op
    without memory wrote whose every register input is known. The scalar registers are never known (the caller sets
    them); the values are the interpreter's (q7emu.asm.run.registers_after: the same primitives on the data section).
    And, for each such op, the rows of the ops whose outputs it read."""
    facts = op_facts(program)
    prefix, steps = entry_prefix(program, facts)
    entry = program.entry
    known, inputs, steps = _walk(prefix, entry + steps, entry)
    regs, stopped = program_run.registers_after(program, steps) if known else (None, -1)
    if regs is None and stopped >= 0:
        # a load the run found outside the data section (its address is the caller's): known up to its bundle
        known, inputs, steps = _walk(prefix, facts[stopped].bundle, entry)
        regs = program_run.registers_after(program, steps)[0] if known else None
    if regs is None:
        return {}, {}
    return ({(file, n): (w.row, bytes(regs["v"][n]) if file == "v" else int(regs[file][n]))
             for (file, n), w in known.items()}, inputs)


def _walk(prefix: Sequence[OpFacts], end: int, entry: int
          ) -> tuple[dict[Reg, OpFacts], dict[int, tuple[int, ...]], int]:
    """:func:`prefix_values`' walk of the prefix's ops before bundle ``end``: the registers known at its end (each
    with the op that wrote it), each known op's inputs (rows), and the bundles the interpreter runs to get there (an
    access it has no memory for ends the walk before its bundle)."""
    known: dict[Reg, OpFacts] = {}
    inputs: dict[int, tuple[int, ...]] = {}
    for f in prefix:
        if f.bundle >= end:
            break
        if f.ivp and f.accesses_memory:
            ok = all(r[0] == "a" or r in known for r in f.reads) and all(r[0] in ("a", "v") for r in f.writes)
        else:
            ok = f.ivp and all(r in known for r in f.reads)
        if f.accesses_memory and not ok:
            # an access of the call's own memory: the interpreter's run has none, so it ends before this bundle
            return {r: w for r, w in known.items() if w.bundle < f.bundle}, inputs, f.bundle - entry
        if ok:
            inputs[f.row] = tuple(sorted({known[r].row for r in f.reads if r in known}))
        for r in f.writes:
            if ok and r[0] in KNOWN_FILES:
                known[r] = f
            else:
                known.pop(r, None)
    return known, inputs, end - entry


def _reads_runtime_imm(f: OpFacts, runtime: set[tuple[int, int]]) -> bool:
    """Whether op ``f`` reads an immediate the family's programs differ in (``runtime``: (row, operand slot), read
    at run time): a value it computes is then no family's value (:func:`known_values`, :func:`choice_predicates`)."""
    return any((f.row, k) in runtime for k in f.imm_slots)


def known_values(fam: Family, programs: Sequence[Program], live_at_entry: Iterable[Reg],
                 runtime_imms: Iterable[tuple[int, int]] = ()
                 ) -> tuple[dict[Reg, bytes | int], dict[int, tuple[Reg, bytes]], dict[Reg, tuple[bytes, ...]]]:
    """The vec, vbool and pr registers that hold one value at every read of every program of the family (docs/asm.md
    §9, known values), with it: a register that exactly one op of the family writes (in every variant, or in some:
    a variant without it that read the register would make it live at the entry), that is not live at the entry
    (every read comes after that op), where that op is in the entry prefix of each program that has it, with a
    value fixed by the program (:func:`prefix_values`) and the value is the same in every program, and where, if that
    op is no load, each op whose output it reads wrote such a register or is a load whose bytes are the same in
    every program (a row register the pass reuses later). And the loads whose bytes the translation compares with
    the value planned (family row -> the register, the bytes): those of the known vec registers and those others; a
    program of the shape whose bytes differ there runs on the interpreter, before a value computed from them is
    read. And the choices: the vec registers that would be known but for the family's programs loading 2 ..
    :data:`MAX_CHOICES` different rows into them (a layout's index row), with those rows in order of first
    appearance. An op that reads an immediate the family's programs differ in (``runtime_imms``: (row, operand slot),
    read at run time) writes no known value unless it is a load (its bytes are checked): any program of the shape
    runs the translation, whatever its immediates there, and the family's agreeing values say nothing of another's."""
    live = set(live_at_entry)
    runtime = set(runtime_imms)
    cands = {r: w[0] for r, w in _writers(fam.facts).items()
             if r[0] in KNOWN_FILES and len(w) == 1 and r not in live
             and (w[0].accesses_memory or not _reads_runtime_imm(w[0], runtime))}
    seen, loaded, needs, choices = _agreed(fam, programs, cands)
    # a value an op computes is the family's only when its inputs are: other bytes in a row are caught at the row's
    # load (the translation compares what it loads), not at what the row feeds
    changed = True
    while changed:
        writer_rows = {w.row for w in cands.values()}
        gone = [r for r, w in cands.items() if not w.accesses_memory
                and any(x not in writer_rows and x not in loaded for x in needs.get(w.row, ()))]
        for r in gone:
            del cands[r]
        changed = bool(gone)
    checks = {x: loaded[x] for w in cands.values()
              for x in ((w.row,) if w.accesses_memory else needs.get(w.row, ())) if x in loaded}
    return {r: seen[r] for r in sorted(cands)}, dict(sorted(checks.items())), choices


def _agreed(fam: Family, programs: Sequence[Program], cands: dict[Reg, OpFacts]
            ) -> tuple[dict[Reg, bytes | int], dict[int, tuple[Reg, bytes]], dict[int, set[int]],
                       dict[Reg, tuple[bytes, ...]]]:
    """:func:`known_values`' look at each program's prefix: drops from ``cands`` the registers whose writer a program
    does not leave known, or leaves with another value; returns their values, the loads whose bytes every program's
    prefix gives alike (family row -> register, bytes), each known op's inputs (family rows) and the choices (a
    load's register dropped only for its programs' different rows, 2 .. MAX_CHOICES of them: the rows)."""
    by_row = {f.row: f for f in fam.facts}
    variant = {k: v for v, k in enumerate(fam.keys)}
    seen: dict[Reg, bytes | int] = {}
    loads: dict[int, tuple[Reg, bytes] | None] = {}     # None: the programs' bytes differ
    needs: dict[int, set[int]] = {}
    known_in: dict[int, int] = {}                       # a family row: the programs whose prefix leaves it known
    holding: dict[int, int] = {}                        # the programs whose variant has it
    loaded_rows: dict[Reg, list[bytes]] = {}            # a load's register: the rows the programs load into it
    for p in programs:
        v = variant[shape_key(p)]
        row_of = {rows[v]: r for r, rows in enumerate(fam.rows) if v in rows}
        own, inputs = prefix_values(p)
        for x in row_of.values():
            holding[x] = holding.get(x, 0) + 1
        for x in {row_of[row] for row, _ in own.values()}:
            known_in[x] = known_in.get(x, 0) + 1
        for r, (row, value) in own.items():
            if by_row[row_of[row]].accesses_memory and isinstance(value, bytes):
                if loads.setdefault(row_of[row], (r, value)) != (r, value):
                    loads[row_of[row]] = None
        for row, ins in inputs.items():
            needs.setdefault(row_of[row], set()).update(row_of[x] for x in ins)
        _note(fam, v, own, cands, seen, loaded_rows)
    for r, values in loaded_rows.items():
        if len(values) == 1:
            seen[r] = values[0]
        else:
            del cands[r]
    loaded = {x: got for x, got in loads.items() if got is not None and known_in.get(x) == holding.get(x)}
    return seen, loaded, needs, {r: tuple(x) for r, x in sorted(loaded_rows.items())
                                if 1 < len(x) <= MAX_CHOICES}


def _note(fam: Family, v: int, own: dict[Reg, tuple[int, bytes | int]], cands: dict[Reg, OpFacts],
          seen: dict[Reg, bytes | int], loaded_rows: dict[Reg, list[bytes]]) -> None:
    """:func:`_agreed`'s look at one program (of variant ``v``; ``own``: its :func:`prefix_values`): drops from
    ``cands`` a register whose writer it does not leave known or leaves with another value than the programs before
    (a load's register: adds the row to ``loaded_rows`` instead)."""
    for r, w in list(cands.items()):
        if v not in fam.rows[w.row]:
            continue                                    # (its writer is another variant's: so are its readers)
        got = own.get(r)
        if got is None or got[0] != fam.rows[w.row][v]:
            del cands[r]
            loaded_rows.pop(r, None)
        elif isinstance(got[1], bytes) and w.accesses_memory:
            loaded_rows.setdefault(r, [])
            if got[1] not in loaded_rows[r]:
                loaded_rows[r].append(got[1])
        elif seen.setdefault(r, got[1]) != got[1]:
            del cands[r]


# ------------------------------------------------------------------------------------------------ choice predicates
def choice_predicates(fam: Family, programs: Sequence[Program], live_at_entry: Iterable[Reg],
                      values: dict[Reg, bytes | int], choices: dict[Reg, tuple[bytes, ...]],
                      runtime_imms: Iterable[tuple[int, int]] = ()) -> dict[Reg, tuple[Reg, tuple[int, ...]]]:
    """The vbool registers whose value follows a choice (docs/asm.md §9, choice predicates): exactly one op of the
    family writes the register, which is not live at the entry; that op accesses no memory and reads one choice
    register (``choices``, :func:`known_values`) and otherwise known values (``values``); and in every program of the
    family the entry prefix leaves the register with a value (:func:`prefix_values`) that the row its choice register
    holds there decides; and that op reads no immediate read at run time (``runtime_imms``, as
    :func:`known_values`). Register -> (the choice register, the value for each of its rows, in the rows' order)."""
    live = set(live_at_entry)
    runtime = set(runtime_imms)
    cands: dict[Reg, Reg] = {}
    for r, ws in sorted(_writers(fam.facts).items()):
        if r[0] != "vb" or len(ws) != 1 or r in live or r in values or not ws[0].ivp or ws[0].accesses_memory \
                or _reads_runtime_imm(ws[0], runtime):
            continue
        chosen = {x for x in ws[0].reads if x in choices}
        if len(chosen) == 1 and all(x in values or x in choices for x in ws[0].reads):
            cands[r] = chosen.pop()
    per_row: dict[Reg, dict[int, int]] = {r: {} for r in cands}
    for program in programs if cands else ():
        held = prefix_values(program)[0]
        for r, c in list(cands.items()):
            value, row = held.get(r, (0, None))[1], held.get(c, (0, None))[1]
            n = choices[c].index(row) if isinstance(row, bytes) and row in choices[c] else -1
            if not isinstance(value, int) or n < 0 or per_row[r].setdefault(n, value) != value:
                del cands[r]
    return {r: (c, tuple(per_row[r][n] for n in range(len(choices[c])))) for r, c in cands.items()
            if len(per_row[r]) == len(choices[c])}


# ------------------------------------------------------------------------------------------------ byte moves
#: a register the family's programs load with one of at most this many rows is a choice (:func:`known_values`)
MAX_CHOICES = 4
#: a select op whose map takes more statements than this (copies of runs of bytes, fills) keeps its primitive with
#: the selector a constant, whose gather GCC folds into one load and store per lane: about as many instructions as
#: that many runs' copies (QuantizeMX's selnx16 gathers, 32 runs of 2 bytes: 7,186 -> 7,410 host instructions per 64
#: outputs at generic as moves)
MAX_MOVES = 24
#: the op-table family whose ops :func:`byte_moves` may turn into moves (each output byte one of the pool's bytes)
MOVE_FAMILY = "select"
#: a byte move: (variable source, its byte) or (-1, a constant byte)
Move = tuple[int, int]
#: :func:`byte_moves`' fillings: byte position q of the variable sources holds (turn + _STRIDE * q) mod 256 (odd: the
#: positions' bytes differ, and each takes every value over the 256 turns)
_STRIDE = 167
_STRIDE_INVERSE = pow(_STRIDE, -1, 256)


@dataclass(frozen=True)
class Moves:
    """A select op the translation runs as byte moves (docs/asm.md §9, byte moves): its destination's operand slot,
    its variable sources' slots (in the op's operand order), the choice register it reads (None: only known values)
    and, for each of that register's rows (else one), its map: 64 :data:`Move` s, the output bytes in order."""

    dst: int
    sources: tuple[int, ...]
    choice: Reg | None
    maps: tuple[tuple[Move, ...], ...]


def byte_moves(op: T.Op, fixed: dict[int, bytes | int], variable: Sequence[int]) -> tuple[Move, ...] | None:
    """The map of a select op (:data:`MOVE_FAMILY`) whose operand slots ``fixed`` have known values (vec: 64 bytes,
    imm: an int) and whose vec slots ``variable`` are the data: for each output byte, the variable slot's index in
    ``variable`` and its byte, or -1 and a constant. Found by running the op's primitive (its wrapper in
    q7emu.primitives._ivp) on 256 fillings of the variable slots in which every byte position takes every value
    and, in each, the positions hold distinct values: an output byte that follows one position in every filling is
    its copy, one that never changes a constant; None where some output byte is no one input byte or one
    constant in all of them (the op is not a move under these values), or where the op is of another family or
    takes another kind of operand. The primitive is the only statement of the op here."""
    if op.family != MOVE_FAMILY or len(variable) * 64 > 256:
        return None
    dsts = [k for k, o in enumerate(op.operands) if o.role == T.DST]
    if len(dsts) != 1 or op.operands[dsts[0]].kind != T.VEC:
        return None
    for o in op.args:
        k = op.operands.index(o)
        if o.role != T.SRC or o.kind not in (T.VEC, T.IMM) or (k not in fixed and k not in variable) \
                or (o.kind == T.IMM) != isinstance(fixed.get(k, b""), int):
            return None
    positions = np.arange(64 * len(variable))
    outs = np.empty((256, 64), np.int64)
    for turn in range(256):
        filling = ((turn + _STRIDE * positions) & 0xFF).astype(np.uint8)     # distinct bytes, every value in turn
        data = {k: filling[64 * j:64 * j + 64].tobytes() for j, k in enumerate(variable)}
        outs[turn] = np.frombuffer(_run_op(op, {**fixed, **data}), np.uint8)
    # output byte i copies position q when out - turn = STRIDE * q (mod 256) in every turn; is a constant when equal
    offset = (outs - np.arange(256)[:, None]) & 0xFF
    found: list[Move] = []
    for i in range(64):
        if (offset[:, i] == offset[0, i]).all() and (q := int(offset[0, i]) * _STRIDE_INVERSE & 0xFF) < len(positions):
            found.append((q // 64, q % 64))
        elif (outs[:, i] == outs[0, i]).all():
            found.append((-1, int(outs[0, i])))
        else:
            return None
    return tuple(found)


def move_runs(moves: Sequence[Move]) -> tuple[int | None, list[tuple[int, int, int, int]]]:
    """The statements of a map: the constant the output starts filled with (the most frequent one, where it fills
    more than one byte; else None), then (output byte, length, source, its byte) for each run of consecutive bytes
    copied from consecutive bytes of one source, and (output byte, length, -1, constant) for each run of another
    constant."""
    consts = [b for j, b in moves if j < 0]
    base = max(set(consts), key=consts.count) if consts and consts.count(max(set(consts), key=consts.count)) > 1 \
        else None
    runs: list[tuple[int, int, int, int]] = []
    for i, (j, b) in enumerate(moves):
        if j < 0 and b == base:
            continue
        if runs:
            at, n, pj, pb = runs[-1]
            if at + n == i and pj == j and (pb + n == b if j >= 0 else pb == b):
                runs[-1] = (at, n + 1, pj, pb)
                continue
        runs.append((i, 1, j, b))
    return base, runs


def move_plans(facts: Sequence[OpFacts], constants: dict[Reg, bytes], choices: dict[Reg, tuple[bytes, ...]],
               const_imms: dict[tuple[int, int], int], dropped: Iterable[int] = ()) -> dict[int, Moves]:
    """The select ops a translation runs as byte moves (family row -> :class:`Moves`): each op
    of :data:`MOVE_FAMILY` that liveness keeps, whose immediates are constants, that reads a known vec register
    (``constants``) or one choice register (``choices``: then a map per row), and whose every map is moves
    (:func:`byte_moves`) of at most :data:`MAX_MOVES` statements."""
    gone = set(dropped)
    out: dict[int, Moves] = {}
    for f in facts:
        if f.row in gone or not f.ivp or f.op.family != MOVE_FAMILY or f.accesses_memory:
            continue
        fixed: dict[int, bytes | int] = {}
        variable: list[int] = []
        chosen: list[tuple[int, Reg]] = []
        for k, o in enumerate(f.op.operands):
            reg = (_KIND_FILE.get(o.kind, ""), f.values[k])
            if o.kind == T.IMM:
                if (f.row, k) not in const_imms:
                    break
                fixed[k] = const_imms[f.row, k]
            elif o.role == T.SRC and o.kind == T.VEC:
                if reg in constants:
                    fixed[k] = constants[reg]
                elif reg in choices:
                    chosen.append((k, reg))
                else:
                    variable.append(k)
        else:
            if len({r for _, r in chosen}) > 1 or not (chosen or any(isinstance(x, bytes) for x in fixed.values())):
                continue
            rows = choices[chosen[0][1]] if chosen else (b"",)
            maps = []
            for row in rows:
                maps.append(byte_moves(f.op, {**fixed, **{k: row for k, _ in chosen}}, variable))
            if all(m is not None and len(move_runs(m)[1]) + 1 <= MAX_MOVES for m in maps):
                dst = next(k for k, o in enumerate(f.op.operands) if o.role == T.DST)
                out[f.row] = Moves(dst, tuple(variable), chosen[0][1] if chosen else None,
                                   tuple(m for m in maps if m is not None))
    return out


# ------------------------------------------------------------------------------------------------ lane masks
def lane_masks(facts: Sequence[OpFacts], known: Iterable[Reg] = (), dropped: Iterable[int] = (),
               dead_outputs: dict[int, set[Reg]] | None = None) -> set[Reg]:
    """The vbool registers a translation keeps as lane masks (src/primitives/q7regs.pxd vmask_t: byte j all ones
    where bit j is set): each one some op writes and some op reads, every operand that names it is one its op takes
    as a lane mask (the op table's ``lane_mask``), and not a known predicate (its readers take a constant). A dropped
    op's operands and a dead destination (liveness: ``dropped``, ``dead_outputs``, row -> registers) do not count:
    the translation sends those to a scratch vbool. The same predicate in another form, so nothing but the cost of
    making and using it changes; one live at the entry is made from the register file's bits when a call starts and
    given back as bits when it ends."""
    skip = set(known)
    gone = set(dropped)
    dead = dead_outputs or {}
    used: set[Reg] = set()
    barred: set[Reg] = set()
    written: set[Reg] = set()
    read: set[Reg] = set()
    for f in facts:
        if f.row in gone:
            continue
        for k, o in enumerate(f.op.operands):
            if o.kind != T.VBOOL:
                continue
            reg = ("vb", f.values[k])
            if o.role == T.DST and reg in dead.get(f.row, ()):
                continue
            used.add(reg)
            if o.name not in f.op.lane_mask:
                barred.add(reg)
        written.update(r for r in f.writes if r[0] == "vb" and r not in dead.get(f.row, ()))
        read.update(r for r in f.reads if r[0] == "vb")
    return {r for r in used if r not in barred and r not in skip and r in written and r in read}


def uniform_mask_reads(facts: Sequence[OpFacts], shape: Shape, masks: set[Reg], known: dict[Reg, int],
                       variants: int = 1) -> set[int]:
    """The merges (docs/asm.md §9, uniform lane masks) whose lane-mask predicate (``masks``) is known to fill each of
    their lanes whole: an op that merges under a lane mask (``Op.merge_under``, one of its ``lane_mask`` operands) on
    lanes of 2 or 4 bytes, where every write of the mask that may reach it (:func:`reaching_writers`; the call's
    entry value must not, as the register file's bits are any bits) is a vbool output on lanes as wide or a multiple
    as wide, written whole: not merged under a predicate, or merged under the known all-true one (``known``). There
    every byte of a lane equals its first byte, the one whose bit is the lane's predicate, and the merge blends the
    bytes as they are instead of spreading that byte over the lane first (src/primitives/q7regs.pxd vumask_t).
    Family rows, in ``facts``' (exact) form."""
    out: set[int] = set()
    for f in facts:
        k = _merge_predicate(f) if f.ivp and f.op.merge_under in f.op.lane_mask else None
        if k is None:
            continue
        width = 64 // f.op.operands[k].lanes
        reg = ("vb", f.values[k])
        if width < 2 or reg not in masks:
            continue
        writers = reaching_writers(shape, f, reg, variants)
        if writers and all(_fills_lanes(w, reg, width, known) for w in writers):
            out.add(f.row)
    return out


def _fills_lanes(w: OpFacts, reg: Reg, width: int, known: dict[Reg, int]) -> bool:
    """Whether op ``w`` writes vbool ``reg`` whole on lanes of a multiple of ``width`` bytes (uniform_mask_reads)."""
    outs = [o for j, o in enumerate(w.op.operands)
            if o.kind == T.VBOOL and o.role != T.SRC and ("vb", w.values[j]) == reg]
    if len(outs) != 1 or (64 // outs[0].lanes) % width:
        return False
    return not w.op.merge_under or _under_all_true(w, known)


# ------------------------------------------------------------------------------------------------ families
@dataclass
class Family:
    """The programs of one translation on one sequence of bundle positions (docs/asm.md §9, merged variants).

    ``variants``: one program per shape (variant v = its index), ``keys`` their shape keys; ``positions``: each
    position's bundle in each variant that has it (variant -> bundle index), in an order that keeps every variant's
    bundles in its own order; ``facts``: the ops of every position in execution order, ``row`` numbering them
    (the family's rows), ``bundle`` their position, label operands as positions, ``guard`` the variants whose
    bundle holds the op where not every variant's does; ``rows``: each family row's row in each variant that has it;
    ``entry``: the entry position; ``texts``: each position's bundle text with the variants it belongs to (None:
    every one)."""

    variants: list[Program]
    keys: list[str]
    positions: list[dict[int, int]]
    facts: list[OpFacts]
    rows: list[dict[int, int]]
    entry: int
    texts: list[list[tuple[frozenset[int] | None, str]]]

    def steps(self, start: int, stop: int) -> list[int]:
        """The bundles each variant runs in positions start .. stop - 1 (a block's steps)."""
        return [sum(v in self.positions[b] for b in range(start, stop)) for v in range(len(self.variants))]


def _bundle_keys(program: Program, facts: Sequence[OpFacts]) -> list[tuple[object, ...]]:
    """Each bundle's identity for merging: its mode and its ops with their immediates and labels blanked (a label
    names a bundle, whose number moves where another variant has bundles of its own; so does an untagged bundle's
    tag, the one after its predecessor's, which only a trace reads)."""
    d = program.decoded
    by: dict[int, list[OpFacts]] = {}
    for f in facts:
        by.setdefault(f.bundle, []).append(f)
    out: list[tuple[object, ...]] = []
    for b in range(len(program.bundles)):
        ops = tuple((f.op.mnemonic, tuple(0 if k in f.imm_slots or _is_label(f.op, k) else v
                                          for k, v in enumerate(f.values))) for f in by.get(b, []))
        out.append((int(d.bundles[b, 3]), ops))
    return out


def _is_label(op: T.Op, k: int) -> bool:
    return k < len(op.operands) and op.operands[k].kind == T.LABEL


def family(programs: Sequence[Program]) -> Family:
    """The programs (of one shape or several: each shape a variant, in order of first appearance) on one sequence
    of positions: each variant's bundles aligned with the sequence so far (difflib's longest matching runs of equal
    bundles), a bundle equal in every variant one position whose ops run unguarded, the others positions of their
    own whose ops are guarded by the variants holding them. A shared op's label (and the entry) is the first of
    its variants' positions, which the others reach by passing positions they have no bundle at. TranslateError
    for a snapshot bundle, or where that does not hold."""
    variants, keys = _distinct_shapes(programs)
    vfacts = [op_facts(p) for p in variants]
    bkeys = [_bundle_keys(p, f) for p, f in zip(variants, vfacts)]
    positions = _align(bkeys)
    at = [{b: i for i, pos in enumerate(positions) for u, b in pos.items() if u == v} for v in range(len(variants))]
    end = len(positions)
    entry = _shared_position(positions, {v: at[v].get(p.entry, end) for v, p in enumerate(variants)})
    if entry is None:
        raise TranslateError(f"{variants[0].name}: its variants enter at different bundles")
    by_bundle: list[dict[int, list[OpFacts]]] = [{} for _ in variants]
    for v, fs in enumerate(vfacts):
        for f in fs:
            by_bundle[v].setdefault(f.bundle, []).append(f)
    facts: list[OpFacts] = []
    rows: list[dict[int, int]] = []
    texts: list[list[tuple[frozenset[int] | None, str]]] = []
    for i, pos in enumerate(positions):
        groups: dict[tuple[object, ...], list[int]] = {}
        for v in sorted(pos):
            groups.setdefault(bkeys[v][pos[v]], []).append(v)
        texts.append([])
        for members in groups.values():
            guard = None if len(members) == len(variants) else frozenset(members)
            u = members[0]
            texts[-1].append((guard, variants[u].bundles[pos[u]].text()))
            ops = [by_bundle[w].get(pos[w], []) for w in members]
            for j, f in enumerate(ops[0]):
                values = list(f.values)
                for slot in range(len(f.op.operands)):
                    if not _is_label(f.op, slot):
                        continue
                    target = _shared_position(positions, {w: at[w].get(int(ops[n][j].values[slot]), end)
                                                          for n, w in enumerate(members)})
                    if target is None:
                        raise TranslateError(f"{variants[u].name}: bundle {pos[u]}'s {f.op.mnemonic} goes to "
                                             "different bundles in its variants")
                    values[slot] = target
                facts.append(replace(f, row=len(facts), bundle=i, values=tuple(values), guard=guard))
                rows.append({w: ops[n][j].row for n, w in enumerate(members)})
    return Family(variants, keys, positions, facts, rows, entry, texts)


def _distinct_shapes(programs: Sequence[Program]) -> tuple[list[Program], list[str]]:
    """The first program of each shape among ``programs``, and the shapes' keys; TranslateError for none, or for a
    snapshot bundle."""
    variants: list[Program] = []
    keys: list[str] = []
    for p in programs:
        key = shape_key(p)
        if key not in keys:
            keys.append(key)
            variants.append(p)
    if not variants:
        raise TranslateError("a translation needs at least one program")
    for p in variants:
        if (p.decoded.bundles[:, 3] == MODE_SNAPSHOT).any():
            raise TranslateError(f"{p.name}: a snapshot bundle (an op reads what an earlier op of its bundle writes)")
    return variants, keys


def _align(bkeys: Sequence[Sequence[tuple[object, ...]]]) -> list[dict[int, int]]:
    """The positions of :func:`family`: variant 0's bundles, then each next variant's aligned with them (its
    bundles equal to a run of the sequence's join those positions; the others are positions of their own, after
    the sequence's positions they replace)."""
    positions: list[dict[int, int]] = [{0: b} for b in range(len(bkeys[0]))]
    pkeys = list(bkeys[0])
    for v in range(1, len(bkeys)):
        merged: list[dict[int, int]] = []
        mkeys: list[tuple[object, ...]] = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=pkeys, b=bkeys[v], autojunk=False).get_opcodes():
            if tag == "equal":
                for i, j in zip(range(i1, i2), range(j1, j2)):
                    positions[i][v] = j
            merged += positions[i1:i2]
            mkeys += pkeys[i1:i2]
            if tag != "equal":
                merged += [{v: j} for j in range(j1, j2)]
                mkeys += bkeys[v][j1:j2]
        positions, pkeys = merged, mkeys
    return positions


def _shared_position(positions: Sequence[dict[int, int]], targets: dict[int, int]) -> int | None:
    """The position that serves every variant's target (variant -> position; past the last: the end of the text):
    the first of them, when no variant has a bundle between it and its own target (it passes those positions,
    running nothing); else None."""
    first = min(targets.values())
    if any(v in positions[x] for v, t in targets.items() for x in range(first, t)):
        return None
    return first


# ------------------------------------------------------------------------------------------------ code
@dataclass
class Translation:
    """One family's translation: its function ``name``, its variants' shape keys ``keys`` (the first: ``key``), the
    constant immediates ``(row, slot, value)`` a program must have to use it, and the runtime ones
    ``(row, slot)`` in the order of its ``imm`` array (after imm[0], the variant), in the family's rows (``rows``:
    each one's row in each variant that has it, :class:`Family`); ``dropped`` / ``dead_outputs``: what liveness
    removed (rows; row -> registers), under ``carry`` (the register file carries from call to call: what the entry
    reads is live at the end); ``narrowed``: the accumulators kept in narrower cells (register -> cell width in
    bits, :func:`narrowing`); ``known``: the vbool and pr registers whose readers take a constant (register -> its
    64-bit value, :func:`known_predicates`, :func:`known_values`); ``masks``: the predicates kept as lane masks
    (:func:`lane_masks`); ``constants``: the vec registers whose readers take a constant (register -> its 64 bytes,
    :func:`known_values`); ``checks``: the loads whose bytes are compared with the planned ones (family row -> the
    register, the bytes; a load whose output is dead feeds no value and is not checked); ``choices``: the loads of
    a choice register some move reads, whose bytes are compared with each of its rows (family row -> the register,
    the rows); ``moves``: the select ops run as byte moves (family row -> :class:`Moves`, :func:`move_plans`);
    ``ranges``: the range of the lanes of each op that bounds them (family row -> :data:`Range`, :func:`value_ranges`),
    which a WHOLE_LANE pack's narrowing rests on; ``choice_predicates``: the vbool registers whose value the row a
    choice register holds decides (register -> the choice register, the value per row, :func:`choice_predicates`),
    whose readers take that value as a constant, one call per row; ``chunks``: the lookups run as their chunk forms
    (family row -> the chunk of each output, :func:`lookup_chunks`); ``imm_checks``: the runtime immediates those
    rest on, with the values the family's programs have there ((row, slot) -> values): a program with another value
    there runs on the interpreter; ``uniform_reads``: the merges whose lane mask fills their lanes whole (family rows,
    :func:`uniform_mask_reads`), which blend it without spreading it; ``data``: the digest of the one data section
    its programs have when it was planned for it alone (:func:`data_key`; q7emu.asm.gen_translations splits a
    family by data section), which a program must then have to use it; '' when any data section may; ``lengths``:
    the byte count each variable-length access of a loop is translated for (family row -> the count, exact: when
    not, a test of the ``n`` register picks it or the general text; :func:`access_lengths`)."""

    name: str
    keys: list[str]
    const_imms: list[tuple[int, int, int]]
    runtime_imms: list[tuple[int, int]]
    carry: bool = True
    dropped: set[int] = field(default_factory=set)
    dead_outputs: dict[int, set[Reg]] = field(default_factory=dict)
    narrowed: dict[Reg, int] = field(default_factory=dict)
    known: dict[Reg, int] = field(default_factory=dict)
    masks: set[Reg] = field(default_factory=set)
    text: str = ""
    rows: list[dict[int, int]] = field(default_factory=list)
    constants: dict[Reg, bytes] = field(default_factory=dict)
    checks: dict[int, tuple[Reg, bytes]] = field(default_factory=dict)
    choices: dict[int, tuple[Reg, tuple[bytes, ...]]] = field(default_factory=dict)
    moves: dict[int, Moves] = field(default_factory=dict)
    ranges: dict[int, Range] = field(default_factory=dict)
    choice_predicates: dict[Reg, tuple[Reg, tuple[int, ...]]] = field(default_factory=dict)
    chunks: dict[int, tuple[int, ...]] = field(default_factory=dict)
    imm_checks: dict[tuple[int, int], frozenset[int]] = field(default_factory=dict)
    uniform_reads: set[int] = field(default_factory=set)
    data: str = ""
    lengths: dict[int, tuple[int, bool]] = field(default_factory=dict)

    def choice_name(self, row: int, n: int) -> str:
        """The C name of the ``n``-th row the load of family row ``row`` may find (:attr:`choices`)."""
        return f"q7k_{self.name}_row{row}_c{n}"

    def move_name(self, row: int, n: int) -> str:
        """The C name of the function that runs family row ``row``'s select op as its ``n``-th map's byte moves."""
        return f"q7m_{self.name}_row{row}_m{n}"

    def constant_name(self, reg: Reg) -> str:
        """The C name of a known vec register's 64 bytes (:func:`render` defines it, static and const)."""
        return f"q7k_{self.name}_{reg[0]}{reg[1]}"

    def check_name(self, row: int) -> str:
        """The C name of the 64 bytes the load of family row ``row`` must find (:attr:`checks`)."""
        return f"q7k_{self.name}_row{row}"

    @property
    def key(self) -> str:
        """The shape key of its first variant (the program it was planned from)."""
        return self.keys[0]

    @property
    def imm_index(self) -> dict[tuple[int, int], int]:
        """Each runtime immediate (row, slot) -> its cell in the imm array (imm[0] is the variant)."""
        return {rc: j + 1 for j, rc in enumerate(self.runtime_imms)}

    @property
    def imm_bits(self) -> dict[tuple[int, int], tuple[int, int]]:
        """The bits a checked runtime immediate's values agree on (:attr:`imm_checks`; (row, slot) -> (the bits
        that vary, the bits set in every value)): once the call's start has found the immediate among its values,
        it equals ``(imm & vary) | ones``, an expression in which the C compiler sees the other bits as constants
        (the unpack's chunk and sign bits). Values outside 0 .. 2^31 - 1 are left as they are."""
        out: dict[tuple[int, int], tuple[int, int]] = {}
        for rk, values in self.imm_checks.items():
            if values and all(0 <= x < 1 << 31 for x in values):
                ones = functools.reduce(operator.and_, values)
                out[rk] = (functools.reduce(operator.or_, values) ^ ones, ones)
        return out

    def table_entry(self, first: str) -> TableEntry:
        """Its TRANSLATIONS entry: (the variants' shape keys; per variant ('/' apart) its constant immediates
        'row:slot:value ...' and its runtime ones 'row:slot ...' in the imm array's order, '-' where the variant has
        no such op; ``first``, the program it was planned from; the length of its imm array; the digest of the data
        section a program must have, :attr:`data`). The variants' parts of the immediates are '/' apart."""
        const: list[str] = []
        runtime: list[str] = []
        for v in range(len(self.keys)):
            const.append(" ".join(f"{self.rows[r][v]}:{k}:{x}" for r, k, x in self.const_imms if v in self.rows[r]))
            runtime.append(" ".join(f"{self.rows[r][v]}:{k}" if v in self.rows[r] else "-"
                                    for r, k in self.runtime_imms))
        return " ".join(self.keys), "/".join(const), "/".join(runtime), first, 1 + len(self.runtime_imms), self.data


class _TxText(OpText):
    """The translation's names for an op's operands: constants, locals, the imm array."""

    def __init__(self, f: OpFacts, imm_index: dict[tuple[int, int], int], dead: set[Reg], pc: int,
                 cached: bool = False, known: dict[Reg, int] | None = None, masks: set[Reg] | None = None,
                 constants: dict[Reg, str] | None = None) -> None:
        self.f = f
        self.known = known or {}
        self.constants = constants or {}
        self.masks = masks or set()
        self.imm_index = imm_index
        self.dead = dead
        self.here = str(pc)
        self.cached = cached
        self.chunks: tuple[int, ...] = ()     # a lookup's chunks (lookup_chunks): its chunk form is issued
        #: the checked runtime immediates' known bits (Translation.imm_bits)
        self.imm_bits: dict[tuple[int, int], tuple[int, int]] = {}
        self.uniform = False        # its lane-mask predicate fills its lanes whole (Translation.uniform_reads)

    def locate(self, addr: str, touch: str, need: str, align: int, write: int) -> str:
        # a repeated access tries the region it found last (mem_hit); one that runs once a call goes out of line
        return f"{'mem_hit' if self.cached else 'mem_once'}(m, &{self.site}, {addr}, {touch}, {need}, {align}, " \
               f"{write}, &p, &off)"

    def region_base(self) -> str:
        return f"{self.site}.base"          # mem_hit / mem_once leave the region found in the site's RegionHit

    @property
    def site(self) -> str:
        """The RegionHit of this access: its own when it repeats (hit<row>), else the shared hit_once."""
        return f"hit{self.f.row}" if self.cached else "hit_once"

    def areg(self, k: int) -> str:
        return f"a{self.f.values[k]}"

    def value(self, k: int) -> str:
        j = self.imm_index.get((self.f.row, k))
        if j is None:
            return str(self.f.values[k])
        bits = self.imm_bits.get((self.f.row, k))
        if bits is None:
            return f"imm[{j}]"
        return f"((imm[{j}] & {bits[0]:#x}) | {bits[1]:#x})"     # a checked immediate (Translation.imm_bits)

    def register(self, o: T.Operand, k: int) -> str:
        file = _KIND_FILE[o.kind]
        reg = (file, self.f.values[k])
        name = f"{file}{reg[1]}"
        if o.role == T.DST and reg in self.dead:
            name = f"dead_{file}"
        if o.kind in (T.VBOOL, T.PR) and o.role == T.SRC and reg in self.known:
            return f"<{_C_TYPE[file]}>{self.known[reg]:#x}"     # a known predicate or pr (known_predicates, _values)
        if o.kind == T.VEC and o.role == T.SRC and reg in self.constants:
            return f"<vec_t*>{self.constants[reg]}"         # a known vec register's bytes (known_values)
        if o.kind == T.VBOOL and o.role == T.SRC and reg in self.masks:
            if self.uniform and o.name == self.f.op.merge_under:
                return f"<vumask_t*>&{name}"               # its lanes filled whole (uniform_mask_reads)
            return "&" + name                              # a lane mask is read through its address (lane_masks)
        if o.kind in (T.VBOOL, T.PR) and o.role == T.SRC:
            return name
        return "&" + name

    def issue(self, op: T.Op, args: list[str]) -> str:
        if self.chunks:
            return f"P.{op.mnemonic}_chunk({', '.join(args + [str(c) for c in self.chunks])})"
        return f"P.{op.mnemonic}({', '.join(args)})"

    def fail(self, code: str) -> str:
        return f"return {code}"

    control = ""                      # the control state is the translation's locals


def plan(name: str, programs: Sequence[Program], carry: bool = True) -> Translation:
    """The translation of a family of programs (one shape, or several: the variants of :func:`family`, one function
    that takes the variant in imm[0]): which immediates are constants, which are read at run time, which ops
    liveness drops. TranslateError as :func:`family` says."""
    fam = family(programs)
    variant = {k: v for v, k in enumerate(fam.keys)}
    of = [(variant[shape_key(p)], p.decoded.insns) for p in programs]
    const: list[tuple[int, int, int]] = []
    runtime: list[tuple[int, int]] = []
    imm_values: dict[tuple[int, int], frozenset[int]] = {}
    for f in fam.facts:
        where = fam.rows[f.row]
        for k in f.imm_slots:
            vals = {int(ins[where[v], 2 + k]) for v, ins in of if v in where}
            imm_values[f.row, k] = frozenset(vals)
            if len(vals) == 1:
                const.append((f.row, k, vals.pop()))
            else:
                runtime.append((f.row, k))
    nb, n = len(fam.positions), len(fam.variants)
    entry_live = _family_live(nb, fam.entry, fam.facts, n, carry)[1]
    values, checks, choices = known_values(fam, programs, entry_live, runtime)
    known = {**{r: x for r, x in values.items() if isinstance(x, int)}, **known_predicates(fam.facts, entry_live)}
    exact = whole_writes(fam.facts, known)
    drop, dead_out = _dead(exact, _family_live(nb, fam.entry, exact, n, carry)[0])
    rows = {(r, k): x for r, k, x in const}
    constants = {r: x for r, x in values.items() if isinstance(x, bytes)}
    moves = move_plans(fam.facts, constants, choices, rows, drop)
    read = {r for f in fam.facts if f.row not in drop for r in f.reads}
    cpreds = choice_predicates(fam, programs, entry_live, values, choices, runtime)
    chosen = {m.choice for m in moves.values() if m.choice is not None} | {c for c, _ in cpreds.values()}
    # the ranges read only what the translation checks: the known values' loads, and the choices some move reads
    shape = _flow(nb, fam.entry, fam.facts)
    ranges = value_ranges(shape, constants, {r: choices[r] for r in chosen}, moves, n)
    narrowed = narrowing(demanded_bits(fam.facts, entry_live, rows, ranges))
    chunks, relied, imms_read = lookup_chunks(shape, fam.facts, constants, imm_values, drop | set(moves), n, choices)
    chosen |= relied        # a chunk form resting on a choice's rows: its loads are compared with them
    lengths = access_lengths(shape, fam.facts, imm_values, n)
    masks = lane_masks(fam.facts, known, drop, dead_out)
    uniform = uniform_mask_reads(exact, _flow(nb, fam.entry, exact), masks, known, n)
    return Translation(name, fam.keys, const, runtime, carry, drop, dead_out, narrowed, known, masks, rows=fam.rows,
                       constants={r: x for r, x in constants.items() if r in read},
                       checks={row: c for row, c in checks.items() if c[0] not in dead_out.get(row, ())},
                       choices={w.row: (r, choices[r]) for w in fam.facts for r in w.writes if r in chosen},
                       moves=moves, ranges=ranges, choice_predicates=cpreds, chunks=chunks,
                       imm_checks={rk: imm_values[rk] for rk in sorted(imms_read) if rk in runtime},
                       uniform_reads={r for r in uniform if r not in drop}, lengths=lengths)


def _indent(lines: Iterable[str], n: int) -> list[str]:
    return [" " * n + x for x in lines]


@dataclass
class _Frame:
    """What the text of one translation needs: the program's flow (its ops by bundle), the registers it uses (the
    vector side and the scalar ones) and those live at its entry (read before written: the state carried in)."""

    shape: Shape
    regs: set[Reg]
    aregs: set[int]
    live_at_entry: set[Reg]
    cached_rows: list[int] = field(default_factory=list)


def _frame(fam: Family, carry: bool, known: dict[Reg, int] | None = None) -> _Frame:
    facts = whole_writes(fam.facts, known or {})
    shape = _flow(len(fam.positions), fam.entry, facts)
    entry_live = _family_live(len(fam.positions), fam.entry, facts, len(fam.variants), carry)[1]
    regs = {r for f in facts for r in (*f.reads, *f.writes) if r[0] != "a"}
    aregs = {r[1] for f in facts for r in (*f.reads, *f.writes) if r[0] == "a"}
    repeated = repeated_bundles(shape)
    cached = [f.row for f in facts if f.bundle in repeated and f.accesses_memory]
    return _Frame(shape, regs, aregs, set(entry_live), cached)


def _register_copies(fr: _Frame, into_locals: bool, masks: set[Reg]) -> list[str]:
    """The registers live at the entry copied from the register file into the locals (or back; a lane mask made
    from the bits, or its bits), and the scalar registers from the machine (or back)."""
    out = []
    for file, num in sorted(fr.live_at_entry):
        reg, loc = f"rf.{file}[{num}]", f"{file}{num}"
        dst, src = (loc, reg) if into_locals else (reg, loc)
        if (file, num) in masks:
            out.append(f"    q7_bits_to_bytes({reg}, {loc}.m.u8)" if into_locals else
                       f"    {reg} = vb_from_mask(&{loc}.m)")
            continue
        out.append(f"    {dst} = {src}" if file in ("vb", "pr") else
                   f"    memcpy(&{dst}, &{src}, sizeof({_C_TYPE[file]}))")
    out += [f"    a{n} = m.ar[{n}]" if into_locals else f"    m.ar[{n}] = a{n}" for n in sorted(fr.aregs)]
    return out


def _prologue(tx: Translation, program: Program, fr: _Frame, longest_block: int,
              block_steps: dict[str, str]) -> list[str]:
    """The function's head, its locals and their starting values. ``longest_block``: the most steps a block takes
    (the step budget's margin, :func:`render`); ``block_steps``: the local -> the expression of each block's steps that
    depends on the variant (computed once a call)."""
    head = f"cdef tx_status {tx.name}("
    L = [f"{head}regfile_t* rf, Machine* m, const int32_t* imm, int64_t max_steps,",
         f"{' ' * len(head)}int64_t* steps) noexcept nogil:"]
    if len(tx.keys) < 2:
        L.append(f'    """Shape {tx.key}, planned from {program.name[:60]}."""')
    else:
        chunks = [" ".join(tx.keys[i:i + 3]) for i in range(0, len(tx.keys), 3)]
        L += ['    """Shapes ' + chunks[0]] + [f"    {c}" for c in chunks[1:]]
        L.append(f'    (variants 0..{len(tx.keys) - 1}), planned from {program.name[:60]}."""')
    for file in ("v", "wv", "vb", "pr", "u"):
        names = sorted(n for f_, n in fr.regs if f_ == file and (f_, n) not in tx.narrowed and (f_, n) not in tx.masks)
        if names:
            L.append(f"    cdef {_C_TYPE[file]} " + ", ".join(f"{file}{n}" for n in names))
        masks = sorted(n for f_, n in tx.masks if f_ == file)
        if masks:
            L.append("    cdef vmask_t " + ", ".join(f"{file}{n}" for n in masks) + "     # lane masks")
        for width in CELL_WIDTHS:
            cells = sorted(n for (f_, n), w in tx.narrowed.items() if f_ == file and w == width)
            if cells:
                L.append(f"    cdef {_CELL_TYPE[width]} " + ", ".join(f"{file}{n}" for n in cells)
                         + f"     # {width}-bit cells: demanded bits, value ranges")
        if any(file == f_ for d in tx.dead_outputs.values() for f_, _ in d):
            L.append(f"    cdef {_C_TYPE[file]} dead_{file}")
    if fr.aregs:
        L.append("    cdef uint32_t " + ", ".join(f"a{n}" for n in sorted(fr.aregs)))
    chosen = sorted(r for r, _ in tx.choices.values())
    if chosen:
        L.append("    cdef int " + ", ".join(f"choice_{f_}{n} = 0" for f_, n in chosen)
                 + "     # which row each choice register holds")
    L.append("    # the region an access found (hit<row>: a repeated access's, kept)")
    L.append("    cdef RegionHit hit_once" + "".join(f", hit{row}" for row in fr.cached_rows))
    if len(tx.keys) > 1:
        L.append("    cdef int var = imm[0]     # the variant (Family)")
    if len(tx.keys) > 2:
        L.append("    cdef uint32_t vbit = 1u << var     # the variant's bit, which a test of several variants masks")
    L += [f"    cdef int64_t {name} = {expr}     # a block's steps in this variant"
          for name, expr in block_steps.items()]
    L += ["    cdef uint32_t lcount = 0", "    cdef int lbeg = -1, lend = -1, next_pc = -1, halt = 0, blk",
          "    cdef int64_t k = 0",
          f"    cdef int64_t last = max_steps - {longest_block}     # a block starts below it (the step budget)",
          "    cdef int64_t check = STEPS_PER_CHECK if STEPS_PER_CHECK < last else last",
          "    cdef int r", "    cdef Py_ssize_t off = 0, n = 0", "    cdef uint8_t* p = NULL",
          "    if not Q7_TRANSLATED_HERE:     # a level without translations (setup.py TRANSLATED_LEVELS)",
          "        return ERR_FALLBACK",
          "    if check <= 0:     # a budget the longest block could pass: the interpreter runs the call",
          "        return ERR_FALLBACK"]
    # the others start zero (never read before written: liveness says so; the C compiler cannot see it through the
    # block dispatch)
    L += _imm_checks(tx)
    L += [line for row in fr.cached_rows for line in (f"    hit{row}.r = -1", f"    hit{row}.size = 0")]
    for file, num in sorted(fr.regs - fr.live_at_entry):
        ctype = _CELL_TYPE[tx.narrowed[file, num]] if (file, num) in tx.narrowed else \
            "vmask_t" if (file, num) in tx.masks else _C_TYPE[file]
        L.append(f"    {file}{num} = 0" if file in ("vb", "pr") and ctype == _C_TYPE[file] else
                 f"    memset(&{file}{num}, 0, sizeof({ctype}))")
    return L + _register_copies(fr, True, tx.masks) + [f"    blk = {fr.shape.entry}"]


def _imm_checks(tx: Translation) -> list[str]:
    """The prologue's test of each runtime immediate a lane value set was computed from (:attr:`imm_checks`): one of
    the family's values, or the interpreter runs the call (in the variants that have the op; the others' imm cell
    is 0 and unread)."""
    out: list[str] = []
    for (row, k), values in tx.imm_checks.items():
        test = " or ".join(f"imm[{tx.imm_index[row, k]}] == {x}" for x in sorted(values))
        have = frozenset(tx.rows[row]) if tx.rows else frozenset(range(len(tx.keys)))
        guard = "" if len(have) == len(tx.keys) else f"({_variant_test(have)}) and "
        out += [f"    if {guard}not ({test}):     # row {row}'s immediate, which a lane value set read",
                "        return ERR_FALLBACK"]
    return out


def _variant_test(guard: frozenset[int]) -> str:
    """The test that the variant is one of ``guard``'s: var == v, or a mask of their bits (vbit: 1 << var)."""
    if len(guard) <= 2:
        return " or ".join(f"var == {v}" for v in sorted(guard))
    return f"vbit & {sum(1 << v for v in guard):#x}"


def _per_variant(counts: list[int]) -> str:
    """An expression of the variant local whose value is counts[var]: a constant where every variant has the same,
    else the least plus, for each larger count, the difference where the variant's bit is in that count's mask."""
    if len(set(counts)) == 1:
        return str(counts[0])
    base = min(counts)
    terms = [f"{c - base} * (((1 << var) & {sum(1 << v for v, x in enumerate(counts) if x == c):#x}) != 0)"
             for c in sorted(set(counts) - {base})]
    return " + ".join([str(base)] + terms)


def _block(tx: Translation, fam: Family, fr: _Frame, start: int, stop: int, imm_index: dict[tuple[int, int], int],
           imm_bits: dict[tuple[int, int], tuple[int, int]], steps: str) -> list[str]:
    """One basic block (positions start .. stop - 1): its ops (an op some variants lack under a test of the
    variant: :func:`_guarded`), the next block, the steps it took (``steps``: their count, or the local that holds it
    in this variant). ``imm_index``, ``imm_bits``: ``tx``'s, derived once by the caller. No block starts where it
    could pass the step budget (:func:`render`)."""
    body: list[str] = []
    next_block = [f"blk = {stop}"]
    segments: list[tuple[frozenset[int] | None, list[str]]] = []
    for b in range(start, stop):
        ops = fr.shape.ops.get(b, [])
        for guard, text in fam.texts[b]:
            lines = [f"# bundle {b}: {text}" if guard is None else
                     f"# bundle {b}, variant{'s' if len(guard) > 1 else ''} {', '.join(map(str, sorted(guard)))}: "
                     f"{text}"]
            for f in ops:
                if f.guard != guard:
                    continue
                if f.row in tx.dropped:
                    lines.append(f"# dropped (every output dead): row {f.row}")
                    continue
                t = _TxText(f, imm_index, tx.dead_outputs.get(f.row, set()), b, f.row in fr.cached_rows, tx.known,
                            tx.masks, {r: tx.constant_name(r) + "_p" for r in tx.constants})
                t.chunks = tx.chunks.get(f.row, ())
                t.imm_bits = imm_bits
                t.uniform = f.row in tx.uniform_reads
                lines += (_move_calls(tx, f, t) if f.row in tx.moves else
                          _predicate_calls(tx, f, t) or (_ivp_calls(tx, f, t) if f.ivp else _p_scalar(f.op, t)))
                if f.row in tx.checks:          # the bytes planned from, or the interpreter runs the call
                    r = tx.checks[f.row][0]
                    lines += [f"if memcmp(&{r[0]}{r[1]}, {tx.check_name(f.row)}_p, 64) != 0:",
                              "    return ERR_FALLBACK"]
                if f.row in tx.choices:         # which of its rows, or the interpreter runs the call
                    r, rows = tx.choices[f.row]
                    for n in range(len(rows)):
                        lines += [f"{'if' if n == 0 else 'elif'} memcmp(&{r[0]}{r[1]}, {tx.choice_name(f.row, n)}_p, "
                                  "64) == 0:", f"    choice_{r[0]}{r[1]} = {n}"]
                    lines += ["else:", "    return ERR_FALLBACK"]
            segments.append((guard, lines))
        if b in fr.shape.loop_ends or any(f.control for f in ops):
            # at a block's start halt is 0 and next_pc -1 (a block that sets one ends there): only a ret sets halt,
            # only a branch or a loop skip next_pc, so a block without them has neither test
            fall = [f"blk = {b + 1}"]
            if b in fr.shape.loop_ends:
                fall += [f"if lend == {b + 1} and lcount != 0:", "    lcount -= 1", "    blk = lbeg"]
            tests = ([("halt", ["blk = -1"])] if any(f.op.mnemonic in ("ret", "retw") for f in ops) else []) + \
                ([("next_pc >= 0", ["blk = next_pc", "next_pc = -1"])]
                 if any(f.op.family == X.XBRANCH or f.op.mnemonic in ("loopnez", "loopgtz") for f in ops) else [])
            next_block = fall
            if tests:
                next_block = [line for n, (cond, then) in enumerate(tests)
                              for line in [f"{'if' if n == 0 else 'elif'} {cond}:"] + _indent(then, 4)]
                next_block += ["else:"] + _indent(fall, 4)
            break
    return body + _guarded(segments, len(fam.variants)) + next_block + [f"k += {steps}"]


def _ivp_calls(tx: Translation, f: OpFacts, t: _TxText) -> list[str]:
    """An IVP op's text; a variable-length access of a loop for the count it is translated for
    (:attr:`Translation.lengths`): that count alone where it is exact, else under a test of ``n``, the general
    text for any other count."""
    length = tx.lengths.get(f.row)
    if length is None:
        return _p_ivp(f.op, t)
    count, exact = length
    if exact:
        return [f"# n: {count} (access_lengths)"] + _p_ivp(f.op, t, str(count))
    k = length_slot(f.op)
    assert k is not None
    return ([f"n = <Py_ssize_t><int32_t>{t.areg(k)}",
             f"if {length_test(count)}:     # the loop's count (access_lengths)"]
            + _indent(_p_ivp(f.op, t, str(count)), 4) + ["else:"] + _indent(_p_ivp(f.op, t), 4))


def _move_calls(tx: Translation, f: OpFacts, t: _TxText) -> list[str]:
    """A select op of :attr:`Translation.moves`: where the level runs byte moves (Q7_BYTE_MOVES), the call of its
    map's function, or of the map of the row its choice register holds; elsewhere the primitive, the choice register
    read as that row's constant."""
    m = tx.moves[f.row]
    args = ", ".join(t.register(f.op.operands[k], k) for k in (m.dst, *m.sources))
    if m.choice is None:
        return ["if Q7_BYTE_MOVES:", f"    {tx.move_name(f.row, 0)}({args})     # {f.op.mnemonic}: byte moves",
                "else:"] + _indent(_p_ivp(f.op, t), 4)
    load = next(row for row, (r, _) in tx.choices.items() if r == m.choice)
    reg = f"choice_{m.choice[0]}{m.choice[1]}"
    moves: list[str] = []
    calls: list[str] = []
    for n in range(len(m.maps)):
        test = f"{'if' if n == 0 else 'elif'} {reg} == {n}:" if n < len(m.maps) - 1 else "else:"
        moves += [test, f"    {tx.move_name(f.row, n)}({args})     # {f.op.mnemonic}: byte moves, row {n}"]
        row_n = copy.copy(t)
        row_n.constants = {**t.constants, m.choice: tx.choice_name(load, n) + "_p"}
        calls += [test] + _indent(_p_ivp(f.op, row_n), 4)
    return ["if Q7_BYTE_MOVES:"] + _indent(moves, 4) + ["else:"] + _indent(calls, 4)


def _predicate_calls(tx: Translation, f: OpFacts, t: _TxText) -> list[str]:
    """An IVP op reading choice predicates of one choice register (:attr:`Translation.choice_predicates`): the op
    once per row of that register, under a test of the row its load found, each reading the predicates as that
    row's constants; nothing (the op as it is) for any other op."""
    preds = {("vb", f.values[k]) for k, o in enumerate(f.op.operands) if o.kind == T.VBOOL and o.role == T.SRC} \
        & set(tx.choice_predicates)
    regs = {tx.choice_predicates[r][0] for r in preds}
    if not f.ivp or len(regs) != 1:
        return []
    choice = regs.pop()
    rows = len(tx.choice_predicates[next(iter(preds))][1])
    out: list[str] = []
    for n in range(rows):
        out.append(f"{'if' if n == 0 else 'elif'} choice_{choice[0]}{choice[1]} == {n}:" if n < rows - 1 else "else:")
        row_n = copy.copy(t)
        row_n.known = {**t.known, **{r: tx.choice_predicates[r][1][n] for r in preds}}
        out += _indent(_ivp_calls(tx, f, row_n), 4)
    return out


def _move_function(name: str, moves: Sequence[Move], sources: int) -> str:
    """The C definition of one map's byte moves (:func:`move_runs`; the output is written after every source is
    read: it may be one of them) and its declaration."""
    base, runs = move_runs(moves)
    params = ", ".join(["void *o"] + [f"const void *s{j}" for j in range(sources)])
    used = {j for _, _, j, _ in runs if j >= 0}
    body = ["uint8_t t[64];"] + [f"const uint8_t *b{j} = (const uint8_t *)s{j};" if j in used else f"(void)s{j};"
                                 for j in range(sources)]
    if base is not None:
        body.append(f"memset(t, {base:#04x}, 64);")
    body += [f"memcpy(t + {at}, b{j} + {b}, {n});" if j >= 0 else f"memset(t + {at}, {b:#04x}, {n});"
             for at, n, j, b in runs]
    body.append("memcpy(o, t, 64);")
    decl = ", ".join(["void* o"] + [f"const void* s{j}" for j in range(sources)])
    return ("cdef extern from *:\n"
            '    """\n'
            f"    static inline void {name}({params}) {{\n"
            + "".join(f"        {x}\n" for x in body)
            + "    }\n"
            '    """\n'
            "    # a select op's byte moves (docs/asm.md §9)\n"
            f"    void {name}({decl}) noexcept nogil\n\n\n")


def _guarded(segments: list[tuple[frozenset[int] | None, list[str]]], variants: int) -> list[str]:
    """The text of a block's segments (guard, lines) in order, the guarded ones under tests of the variant: a run of
    guarded segments whose guards are equal or disjoint (the variants' bundles a knob swaps) is one chain, each
    guard's segments together in their order (ops of different variants never both run), its last test an ``else``
    where the run's guards cover every variant; a guarded segment with no op is left out."""
    out: list[str] = []
    i = 0
    while i < len(segments):
        guard, lines = segments[i]
        if guard is None:
            out += lines
            i += 1
            continue
        run: dict[frozenset[int], list[str]] = {}
        while i < len(segments):
            g = segments[i][0]
            if g is None or (g not in run and any(g & other for other in run)):
                break                                   # overlapping guards: keep their order, a chain each
            run.setdefault(g, []).extend(segments[i][1])
            i += 1
        live = [(g, body) for g, body in run.items() if any(not x.lstrip().startswith("#") for x in body)]
        covered = set().union(*(g for g, _ in live)) == set(range(variants)) if live else False
        for n, (g, body) in enumerate(live):
            test = "if" if n == 0 else "elif"
            out += ["else:" if covered and n == len(live) - 1 and n > 0 else f"{test} {_variant_test(g)}:"]
            out += _indent(body, 4)
    return out


def render(tx: Translation, programs: Program | Sequence[Program]) -> str:
    """The Cython text of ``tx`` (``programs``: its family, as :func:`plan` took it; or one program of a family of
    one shape): a function ``cdef tx_status <name>(regfile_t* rf, Machine* m, const int32_t* imm, int64_t
    max_steps, int64_t* steps) noexcept nogil`` that runs one call as the interpreter's exec_loop would, returning
    0, or ERR_FALLBACK when the interpreter must run the call (it reports the error or the step budget)."""
    fam = family([programs] if isinstance(programs, Program) else programs)
    if fam.keys != tx.keys:
        raise TranslateError(f"{tx.name}: rendered from programs of other shapes than it was planned from")
    fr = _frame(fam, tx.carry, tx.known)
    imm_index, imm_bits = tx.imm_index, tx.imm_bits
    blocks = fr.shape.leaders
    spans = [(start, blocks[bi + 1] if bi + 1 < len(blocks) else fr.shape.nbundles) for bi, start in enumerate(blocks)]
    # the step budget: a block starts only while k < check <= max_steps - the longest block's steps, so none passes
    # it (a call that could is the interpreter's, which reports it); k >= check is the one test a block end makes
    longest = max([max(fam.steps(a, b)) for a, b in spans] + [1])
    counts = {a: _per_variant(fam.steps(a, b)) for a, b in spans}
    block_steps = {f"steps_{a}": x for a, x in counts.items() if not x.isdigit()}
    L = _prologue(tx, fam.variants[0], fr, longest, block_steps) + ["    while True:"]
    for bi, (start, stop) in enumerate(spans):
        L.append(f"        {'if' if bi == 0 else 'elif'} blk == {start}:")
        name = f"steps_{start}"
        block = _block(tx, fam, fr, start, stop, imm_index, imm_bits, name if name in block_steps else counts[start])
        if start in fr.shape.succ.get(stop - 1, ()):
            block = _self_loop(block, start)
        L += _indent(block, 12)
    L += ["        else:", "            break",
          "        if k >= check:",
          "            if k >= last and blk >= 0:     # the next block could pass the step budget",
          "                return ERR_FALLBACK",
          "            if _interrupted():",
          "                return ERR_INTERRUPT",
          "            check = k + STEPS_PER_CHECK if k + STEPS_PER_CHECK < last else last"]
    L += _register_copies(fr, False, tx.masks) + ["    steps[0] = k", "    return 0"]
    tx.text = "".join(_constant(tx.constant_name(r), tx.constants[r], f"{r[0]}{r[1]}: a known value")
                      for r in sorted(tx.constants))
    tx.text += "".join(_constant(tx.check_name(row), data, f"what row {row}'s load of {r[0]}{r[1]} must find")
                       for row, (r, data) in tx.checks.items())
    tx.text += "".join(_constant(tx.choice_name(row, n), data, f"row {n} row {row}'s load of {r[0]}{r[1]} may find")
                       for row, (r, rows) in tx.choices.items() for n, data in enumerate(rows))
    tx.text += "".join(_move_function(tx.move_name(row, n), moves, len(m.sources))
                       for row, m in tx.moves.items() for n, moves in enumerate(m.maps))
    tx.text += "\n".join(x for line in L for x in _fit(line)) + "\n"
    return tx.text


def _self_loop(block: list[str], start: int) -> list[str]:
    """A block that may be its own successor (a pass loop's body: a branch back to its start, a loop end going back)
    as an inner loop (docs/asm.md §9, self-loops): it runs again while it chose itself and the step budget's next
    test is not due, as the dispatch would have run it; any other next block, and the test, go through the dispatch.
    The C compiler then sees the loop: the values its iterations share (constants, the hits of its accesses, the
    scalar registers) stay in registers across them, and invariant work is hoisted out of it."""
    return ["while True:"] + _indent(block, 4) + [f"    if blk != {start} or k >= check:", "        break"]


def _constant(name: str, data: bytes, what: str) -> str:
    """The C definition of 64 bytes a translation reads (static, const, 8-byte aligned) and the pointer to them its
    text takes (``name`` + ``_p``)."""
    rows = [", ".join(f"{x:#04x}" for x in data[i:i + 16]) for i in range(0, 64, 16)]
    return ("cdef extern from *:\n"
            '    """\n'
            f"    static const union {{ uint8_t u8[64]; uint64_t u64[8]; }} {name} = {{{{\n"
            + "".join(f"        {row}{',' if i < 3 else ''}\n" for i, row in enumerate(rows))
            + "    }};\n"
            '    """\n'
            f"    # {what} (docs/asm.md §9)\n"
            f'    void* {name}_p "((void *)&{name})"\n\n\n')


def _fit(line: str, width: int = 120) -> list[str]:
    """A generated line within ``width``: a comment cut, a call's arguments continued under its parenthesis."""
    if len(line) <= width:
        return [line]
    if line.lstrip().startswith("#"):
        return [line[:width].rstrip()]
    if "(" not in line and line.lstrip().startswith("cdef "):      # cdef TYPE a, b, ...: two declarations
        cut = line.rindex(", ", 0, width - 1)
        head = line[:line.index("cdef ")] + " ".join(line.lstrip().split(" ")[:2]) + " "
        return [line[:cut]] + _fit(head + line[cut + 2:], width)
    open_at = line.index("(") + 1
    cut = line.rfind(", ", open_at, width - 1) + 1
    if cut <= 0:
        raise TranslateError(f"a generated line does not fit in {width} columns: {line.strip()}")
    return [line[:cut]] + _fit(" " * open_at + line[cut:].lstrip(), width)


def parse_imms(text: str) -> list[tuple[int, ...]]:
    """The immediates of a TRANSLATIONS entry's variant: ``'3:4:0 4:4:64'`` -> [(3, 4, 0), (4, 4, 64)]; ``-`` (an
    op the variant does not have) -> ()."""
    return [tuple(int(x) for x in item.split(":")) if item != "-" else () for item in text.split()]


def match(table: Sequence[TableEntry], program: Program) -> tuple[int, npt.NDArray[np.int32]] | None:
    """The translation ``program`` can run on: (its index in ``table``, the imm array int32 [K]: the variant, then
    the runtime immediates), or None. ``table``: the compiled module's TRANSLATIONS (Translation.table_entry). A
    program matches an entry with its shape among the variants', the variant's constant immediates and, where the
    entry names one, its data section (Translation.data)."""
    key = shape_key(program)
    ins = program.decoded.insns
    data: str | None = None
    for i, (keys, const, runtime, _, _, only) in enumerate(table):
        names = keys.split()
        if key not in names:
            continue
        if only:
            data = data_key(program) if data is None else data
            if data != only:
                continue
        v = names.index(key)
        if all(int(ins[row, 2 + slot]) == x for row, slot, x in parse_imms(const.split("/")[v])):
            cells = parse_imms(runtime.split("/")[v])
            return i, np.array([v] + [int(ins[c[0], 2 + c[1]]) if c else 0 for c in cells], np.int32)
    return None


def translation_of(program: Runnable) -> tuple[int, npt.NDArray[np.int32]] | None:
    """The translation the interpreter module of this ISA level has for ``program`` (its index and runtime
    immediates: q7emu.asm.run.run_calls's ``translation``), or None; looked up once per program object."""
    ext = cached_extension(vars(program_run), "_program", EXTENSION)   # the module q7emu.asm.run runs
    cache = program.__dict__.setdefault("_translation", {}) if hasattr(program, "__dict__") else {}
    if id(ext) not in cache:
        cache[id(ext)] = match(getattr(ext, "TRANSLATIONS", ()), program)  # type: ignore[arg-type]
    found: tuple[int, npt.NDArray[np.int32]] | None = cache[id(ext)]
    return found
