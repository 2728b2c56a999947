"""One record of a trace as :class:`Op` / :class:`Operand` (views of a trace's arrays), and its text
(``trace show``) and JSON Lines forms (docs/traces.md §4)."""
from __future__ import annotations

import json
from typing import Any

from q7emu._dataclass import dataclass
from q7emu.analysis.trace.lanes import lanes_hex, lanes_int, operand_name
from q7emu.analysis.trace.layout import JSONL_FORMAT, JSONL_VERSION, KERNELS, KINDS, ROLES, UNKNOWN_BUNDLE, VIEWS


# ---------------------------------------------------------------------- the trace (in memory)
@dataclass
class Operand:
    """One operand of one record (a view of the trace's arrays)."""

    index: int
    kind: int
    role: int
    reg: int
    view: int
    data: bytes

    @property
    def kind_name(self) -> str:
        """vec / wvec / vbool / pr / scalar."""
        return KINDS.get(self.kind, str(self.kind))

    @property
    def role_name(self) -> str:
        """src (value before the op) or dst (after)."""
        return ROLES.get(self.role, str(self.role))

    @property
    def view_name(self) -> str:
        """The lane view (2nx8, nx16, ..., scalar)."""
        return VIEWS[self.view][0] if 0 <= self.view < len(VIEWS) else str(self.view)

    @property
    def name(self) -> str:
        """The register's name (v23, wv1, vb0, pr1, imm / off / len)."""
        return operand_name(self.kind, self.reg)

    def lanes(self) -> list[int]:
        """The lane values (lane 0 first) in the operand's view, as ints."""
        return lanes_int(self.data, self.view)

    def lanes_hex(self) -> list[str]:
        """The lane values as fixed-width hex strings (lane 0 first)."""
        return lanes_hex(self.data, self.view)

    def describe(self) -> str:
        """One line: index, role, kind, register and view."""
        return f"operand {self.index} ({self.role_name} {self.kind_name} {self.name}, view {self.view_name})"


@dataclass
class Op:
    """One record: a primitive executed by a kernel."""

    index: int
    run: int
    seq: int
    partition: int
    kernel: int
    bundle: int
    op: str
    operands: list[Operand]

    @property
    def kernel_name(self) -> str:
        """The kernel's name from its KernelId (``kernel<n>`` for an id no kernel has)."""
        return KERNELS.get(self.kernel, f"kernel{self.kernel}")

    def describe(self) -> str:
        """One line: seq, run, partition, kernel, bundle and mnemonic."""
        b = "B?" if self.bundle == UNKNOWN_BUNDLE else f"B{self.bundle}"
        return f"seq {self.seq} (run {self.run}, partition {self.partition}, {self.kernel_name} {b} {self.op})"


def format_op(op: Op, lanes: tuple[int | None, int | None] | None = None, per_row: int | None = None) -> str:
    """One record in its operands' lane views (hex lanes; ``lanes`` = [lo, hi) lane filter)."""
    b = "B?" if op.bundle == UNKNOWN_BUNDLE else f"B{op.bundle}"
    lines = [f"#{op.seq:<6} {b:<4} {op.op:<15} run {op.run} p{op.partition} {op.kernel_name}"]
    for o in op.operands:
        label = f"  {o.role_name} {o.name:<5} {o.view_name:<7}"
        if not o.data:
            lines.append(f"{label} (not recorded)")
            continue
        hx = o.lanes_hex()
        if o.kind == 5:
            v = int.from_bytes(o.data, "little", signed=True)
            lines.append(f"{label} 0x{hx[0]} ({v})")
            continue
        lo, hi = (lanes or (None, None))
        lo = 0 if lo is None else max(0, lo)
        hi = len(hx) if hi is None else min(len(hx), hi)
        if lo >= hi:
            lines.append(f"{label} (no lanes in {lo}:{hi}; {len(hx)} lanes)")
            continue
        width = len(hx[0])
        pr = per_row or max(1, min(16, 64 // (width + 1)))
        first = True
        for s in range(lo, hi, pr):
            chunk = " ".join(hx[s:min(hi, s + pr)])
            lines.append(f"{label if first else ' ' * len(label)} [{s:>2}] {chunk}")
            first = False
    return "\n".join(lines)


def op_json(op: Op) -> dict[str, Any]:
    """A record as its JSON Lines object (lanes as hex strings)."""
    return {"run": op.run, "seq": op.seq, "partition": op.partition,
            "kernel": KERNELS.get(op.kernel, op.kernel),
            "bundle": op.bundle, "op": op.op,
            "operands": [{"role": o.role_name, "kind": o.kind_name, "reg": o.reg, "view": o.view_name,
                          "lanes": o.lanes_hex() if o.data else []} for o in op.operands]}


def _jsonl_header(case: str, runs: list[dict[str, Any]], q7emu_version: str) -> str:
    head = {"format": JSONL_FORMAT, "version": JSONL_VERSION, "q7emu_version": q7emu_version,
            "case": case, "runs": runs}
    return json.dumps(head, separators=(",", ":"))
