"""Reporting replay results: verdicts and exit status, per-case summaries, the first N differing bytes with their
output element / MX group and a hexdump, the ``q7emu-replay`` JSON document, JUnit XML, ``-k`` selection and
durations.

Everything here reads finished :class:`~q7emu.machine.cases.CaseResult` objects; it never runs a record. The
byte-level detail of a failing case (its first differing bytes, what each is worth and where it comes from, its
diff map) needs the case's data, so replay computes it where the case ran (:func:`keep_detail`, in the worker)
and the result carries it without the data (docs/limits.md §5); given a :class:`~q7emu.machine.cases.Case` and a
result that still holds its actual bytes, the functions here compute it themselves.

Verdicts (:func:`verdict`): ``PASS``; ``FAIL`` (a byte differs, the record raised where the case expects bytes,
or the other way round: a mismatch or divergence, exit 1); ``ERROR`` (the case file could not be read: bad
input, exit 2; or a replay worker died: q7emu's own failure, exit 3).
"""
from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

from q7emu._dataclass import dataclass
from q7emu._version import __version__
from q7emu.errors import InternalError, Q7Error, shown_name, shown_names
from q7emu.fileio import atomic_write_text
from q7emu.isa.opcode_spec import ByteRole, OpcodeSpec, Placement
from q7emu.isa.opcodes import find_spec
from q7emu.isa.records import decode_record
from q7emu.machine.cases import PROGRAM_ERROR, Case, CaseResult, load_case
from q7emu.machine.explain import Explainer, Explanation
from q7emu.model.values import decode, format_value

__all__ = ["REPLAY_FORMAT", "REPLAY_VERSION", "EXIT_PASS", "EXIT_MISMATCH", "EXIT_BAD_INPUT", "EXIT_INTERNAL",
           "kind", "verdict", "exit_status", "ByteDiff", "OutputMap", "first_diffs", "hexdump",
           "format_case", "case_json", "replay_json", "junit_xml", "write_junit", "select_cases",
           "format_durations", "case_record", "KeywordExpression", "case_keywords", "path_width", "junit_identity",
           "diff_json", "explainer", "MAX_DIFFS", "MAX_REPORT_DIFFS", "MAX_REPORT_MAP_ENTRIES", "shown", "NOT_RUN",
           "keep_detail", "case_diff_map", "map_entries", "failing_cases", "dumps"]

#: the JSON document of ``q7emu replay --json`` (schema: docs/cli.md)
REPLAY_FORMAT = "q7emu-replay"
REPLAY_VERSION = 1

#: exit statuses of a replay (the CLI's: docs/cli.md)
EXIT_PASS, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3

#: the prefix q7emu.machine.replay gives the error of a case whose worker process died
_WORKER_FAILED = "worker failed:"
#: the prefix of the error of a case that was not run, or whose result was refused, for a reason outside it and
#: outside q7emu: a Dask worker of another q7emu, a lost scheduler, no worker left (docs/cli.md §4.2)
NOT_RUN = "not run:"
#: the byte rows of a hexdump: 16 bytes each
HEX_ROW = 16
#: the most differing bytes ``--max-diffs`` lists per case (docs/limits.md §5)
MAX_DIFFS = 1000
#: the most differing bytes one replay keeps for its report, over all cases (about 1 KB of memory each,
#: with their values and source): past it the cases latest in order list none (docs/limits.md §5)
MAX_REPORT_DIFFS = 100_000
#: the most diff-map entries (``cells`` and value ``pairs``, about 120 bytes each) one replay keeps over all
#: cases: past it the cases latest in order keep no map (docs/limits.md §5)
MAX_REPORT_MAP_ENTRIES = 200_000


# ---------------------------------------------------------------------- text safe for any output
#: the characters XML 1.0 cannot hold: every code point outside its Char production (tab, LF, CR, U+0020..U+D7FF,
#: U+E000..U+FFFD, U+10000..U+10FFFF), listed as ranges (the negated class took 5-9 ms to compile in every process)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def shown(text: str) -> str:
    """``text`` as every report writes it: a file name that is not UTF-8 (its bytes held as surrogates, as
    ``os.fsdecode`` gives them) and characters XML cannot hold become backslash escapes (``\\xff``), so a
    row, the JSON document and the JUnit file can always be written (docs/cli.md §1)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", shown_name(text))


# ---------------------------------------------------------------------- verdicts
def kind(r: CaseResult) -> str:
    """``pass``, ``fail`` (mismatch or divergence), ``broken`` (the case file could not be read, or the program of
    ``replay --program`` stopped on an error: bad input either way), ``internal`` (the worker replaying it died) or
    ``not_run`` (a farm that could not run it: a worker of another q7emu, a lost scheduler; docs/cli.md §4.2)."""
    if r.ok:
        return "pass"
    if r.opcode < 0 and r.error and r.error.startswith(_WORKER_FAILED):
        return "internal"
    if r.opcode < 0 and r.error and r.error.startswith(NOT_RUN):
        return "not_run"
    if r.opcode < 0:            # load_case failed, or the program in the kernel's place stopped on an error
        return "broken"
    return "fail"


def verdict(r: CaseResult) -> str:
    """``PASS``, ``FAIL`` or ``ERROR`` (a case that could not be replayed at all)."""
    return {"pass": "PASS", "fail": "FAIL"}.get(kind(r), "ERROR")


def exit_status(results: Iterable[CaseResult]) -> int:
    """3 if a worker died, else 2 if a case file could not be read or a case was not run (a farm that could not
    run it), else 1 if a case failed, else 0."""
    kinds = {kind(r) for r in results}
    for k, code in (("internal", EXIT_INTERNAL), ("broken", EXIT_BAD_INPUT), ("not_run", EXIT_BAD_INPUT),
                    ("fail", EXIT_MISMATCH)):
        if k in kinds:
            return code
    return EXIT_PASS


# ---------------------------------------------------------------------- where a byte sits in the output
@dataclass(frozen=True, slots=True)
class ByteDiff:
    """One differing byte: expected region index, SBUF partition and byte offset, both values, and where it
    sits in the kernel's output.

    ``element``: the output element (one FP8 value) index in its partition's output stream, None for a scale
    byte or a byte the record does not write; ``mx_group``: for a 0x7B group-8 record, the MX group (8 outputs
    sharing one scale) of that element; ``mx_block``: for 0xE3, the (block row, block column) of the
    8-partition x 4-element block the data or scale byte belongs to; ``part``: ``data``, ``scale`` or
    ``unwritten`` (inside an expected region but not written by the record)."""

    region: int
    partition: int
    offset: int
    expected: int
    actual: int
    element: int | None = None
    mx_group: int | None = None
    mx_block: tuple[int, int] | None = None
    part: str = "data"
    #: where the byte comes from and how to read it (its format, source bytes and code, scale byte)
    explanation: Explanation | None = field(default=None, compare=False, repr=False)
    #: the hexdump window around the byte: (partition, first offset, expected bytes, actual bytes), kept so
    #: the byte can be shown after the case's data is gone (:func:`first_diffs` with ``keep_rows``)
    rows: tuple[int, int, bytes, bytes] | None = field(default=None, compare=False, repr=False)
    #: a QuantizeMX data byte's block scale byte, (expected, actual), when an expected region holds it (the
    #: explanation's ``scale_at``); None otherwise
    scale_bytes: tuple[int, int] | None = field(default=None, compare=False, repr=False)

    def value_text(self, byte: int) -> str:
        """``0x39 = 0.625 E5M2`` in the output format of this byte (just ``0x39`` for an unwritten byte)."""
        if self.explanation is None or self.part == "unwritten":
            return f"0x{byte:02x}"
        return self.explanation.value(byte)

    def where(self) -> str:
        """``output element 13, MX group 1`` / ``scale of MX block (0, 2)`` / ``not written by the record``."""
        if self.part == "unwritten":
            return "not written by the record"
        if self.part == "scale":
            return f"scale of MX block {self.mx_block}"
        s = f"output element {self.element}"
        if self.mx_group is not None:
            s += f", MX group {self.mx_group}"
        if self.mx_block is not None:
            s += f", MX block {self.mx_block}"
        return s


class OutputMap:
    """Maps SBUF (partition, byte offset) to what the record's output byte there is (its opcode spec's destination
    and byte roles, q7emu.isa.opcode_spec; the machine's reading, docs/model.md §4: last write wins as in the
    machine, and a later output part wins an overlap)."""

    def __init__(self, record: bytes, partition_bytes: int) -> None:
        self.rec = decode_record(bytes(record))
        self.pb = partition_bytes
        self.spec: OpcodeSpec | None = None
        #: each placement, its sorted distinct byte offsets and the column that lands last on each
        self._places: list[tuple[Placement, np.ndarray, np.ndarray]] = []
        try:
            spec = find_spec(self.rec)
            if spec is not None:
                self._places = [(pl, *pl.last_columns())
                                for pl in spec.destination(self.rec, partition_bytes).placements]
                self.spec = spec
        except (Q7Error, ValueError):                  # a record the machine would refuse: no mapping
            self._places = []

    def scale_mask(self, partitions: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """bool array: True where (partition, offset) is a byte of an output part other than ``data`` (a
        QuantizeMX scale byte; vectorised)."""
        parts = np.asarray(partitions, dtype=np.int64)
        offs = np.asarray(offsets, dtype=np.int64)
        mask = np.zeros(parts.shape, dtype=bool)
        for pl, uniq, _ in self._places:
            if pl.part != "data":
                mask |= np.isin(parts, pl.partitions) & np.isin(offs, uniq)
        return mask

    def role_at(self, partition: int, offset: int) -> ByteRole | None:
        """What the record's output byte at SBUF (partition, offset) is, None when the record does not write it."""
        if self.spec is None:
            return None
        for pl, uniq, columns in reversed(self._places):     # a later placement wins an overlap
            i = int(np.searchsorted(uniq, offset))
            if i >= uniq.size or uniq[i] != offset:
                continue
            rows = np.flatnonzero(pl.partitions == partition)
            if rows.size:
                return self.spec.byte_role(self.rec, partition, pl.part, pl.row(int(rows[-1])), int(columns[i]))
        return None


def role_fields(role: ByteRole | None) -> tuple[str, int | None, int | None, tuple[int, int] | None]:
    """(part, element, mx_group, mx_block) of a byte role, as a :class:`ByteDiff` holds them (``unwritten`` for
    None)."""
    if role is None:
        return "unwritten", None, None, None
    return role.part, role.element, role.mx_group, role.mx_block


def case_record(case: Case) -> OutputMap:
    """The :class:`OutputMap` of a case's record at its partition size."""
    return OutputMap(case.record, case.partition_bytes)


def explainer(case: Case, knobs: dict[str, Any] | None = None) -> Explainer:
    """The :class:`~q7emu.machine.explain.Explainer` of a case replayed with ``knobs`` over its own."""
    kn = dict(case.knobs)
    kn.update(knobs or {})
    return Explainer(case.record, case.partition_bytes, case.inputs, case.fill, kn)


def first_diffs(case: Case | None, result: CaseResult, n: int, knobs: dict[str, Any] | None = None, *,
                keep_rows: bool = False) -> tuple[list[ByteDiff], int]:
    """The first ``n`` differing bytes of a replayed case (region order, then partition, then byte) with their
    output element / MX group and where they come from (``knobs``: the replay's overrides of the case's knobs),
    and the number of differing bytes in all.

    When ``result.diffs`` holds them already (replay computed them where the case ran, :func:`keep_detail`)
    those are used and ``case`` may be None. ``keep_rows``: each ByteDiff also keeps its hexdump window
    (``rows``)."""
    total = sum(d.differing for d in result.regions)
    if result.diffs is not None:
        return list(result.diffs[:max(n, 0)]), total
    out: list[ByteDiff] = []
    if case is None or n <= 0 or total == 0 or len(result.regions) != len(case.expected):
        return out, total
    omap = case_record(case)
    ex = explainer(case, knobs)
    for d, (reg, exp) in zip(result.regions, case.expected):
        if not d.differing or d.actual is None or d.actual.shape != exp.shape:
            continue
        for r, c in _first_differing(exp, d.actual, n - len(out)):
            p, off = reg.partition + r, reg.offset + c
            role = omap.role_at(p, off)
            part, element, group, block = role_fields(role)
            why = ex.explain_role(role)
            scale = (_region_byte(case, result, *why.scale_at)
                     if why.scale_at is not None and part == "data" else None)
            bd = ByteDiff(d.index, p, off, int(exp[r, c]), int(d.actual[r, c]), element, group, block, part, why,
                          scale_bytes=scale)
            if keep_rows:
                rp, start, e, a = _rows(case, result, bd, 1)
                bd = dataclasses.replace(bd, rows=(rp, start, e.tobytes(), a.tobytes()))
            out.append(bd)
        if len(out) >= n:
            break
    return out, total


def _first_differing(exp: np.ndarray, act: np.ndarray, n: int) -> list[tuple[int, int]]:
    """(row, column) of the first ``n`` bytes where ``act`` differs from ``exp`` (uint8 [rows, bytes], row-major
    order), compared a block of about 1 MiB at a time, so a region where every byte differs costs no index
    array of its size."""
    out: list[tuple[int, int]] = []
    step = max(1, (1 << 20) // max(1, exp.shape[1]))
    for r0 in range(0, exp.shape[0], step):
        if len(out) >= n:
            break
        hits = np.argwhere(act[r0:r0 + step] != exp[r0:r0 + step])[: n - len(out)]
        out += [(r0 + int(r), int(c)) for r, c in hits]
    return out


def _rows(case: Case | None, result: CaseResult, diff: ByteDiff, context: int
          ) -> tuple[int, int, np.ndarray, np.ndarray]:
    """(partition, first byte offset, expected bytes, actual bytes) of the hexdump rows around ``diff``."""
    if diff.rows is not None and context == 1:
        p, start, e, a = diff.rows
        return p, start, np.frombuffer(e, np.uint8), np.frombuffer(a, np.uint8)
    if case is None:
        raise InternalError("a hexdump of a difference whose rows were not kept needs its case")
    reg, exp = case.expected[diff.region]
    act = result.regions[diff.region].actual
    row = diff.partition - reg.partition
    lo_off = max(reg.offset, (diff.offset // HEX_ROW - context) * HEX_ROW)
    hi_off = min(reg.offset + reg.length, (diff.offset // HEX_ROW + context + 1) * HEX_ROW)
    sl = slice(lo_off - reg.offset, hi_off - reg.offset)
    if act is None:
        raise InternalError(f"a difference in region {diff.region}, which has no actual bytes")
    return diff.partition, lo_off, exp[row, sl], act[row, sl]


def hexdump(case: Case | None, result: CaseResult, diff: ByteDiff, context: int = 1) -> list[str]:
    """Expected vs actual bytes around ``diff``: the 16-byte row holding it and ``context`` rows either side
    (inside its expected region), a ``^^`` under each differing byte. ``case`` may be None when ``diff`` kept
    its rows (``context`` 1)."""
    p, start, exp, act = _rows(case, result, diff, context)
    lines = []
    end = start + exp.size
    for base in range(start // HEX_ROW * HEX_ROW, end, HEX_ROW):   # rows at 16-byte boundaries of the partition
        lo, hi = max(base, start), min(base + HEX_ROW, end)
        e, a = exp[lo - start:hi - start], act[lo - start:hi - start]
        pad = " " * (3 * (lo - base))                 # a region may start mid-row: keep the columns aligned
        label = f"p{p} 0x{base:05x}"
        lines.append(f"{label}  expected {pad}{e.tobytes().hex(' ')}")
        lines.append(f"{' ' * len(label)}  actual   {pad}{a.tobytes().hex(' ')}")
        if np.any(e != a):
            lines.append(f"{' ' * len(label)}           {pad}"
                         + " ".join("^^" if x != y else "  " for x, y in zip(e, a)).rstrip())
    return lines


def _hexdump_json(case: Case | None, result: CaseResult, diff: ByteDiff, context: int = 1) -> dict[str, Any]:
    p, start, exp, act = _rows(case, result, diff, context)
    return {"partition": p, "offset": start, "expected": exp.tobytes().hex(), "actual": act.tobytes().hex()}


# ---------------------------------------------------------------------- text
def _partitions_text(parts: dict[int, int], limit: int = 8) -> str:
    items = sorted(parts.items())
    text = ", ".join(f"{p} ({n})" for p, n in items[:limit])
    return text + (f", ... ({len(items) - limit} more partitions)" if len(items) > limit else "")


def summary_lines(result: CaseResult) -> list[str]:
    """One line per expected region that differs: bytes differing of compared, and in which partitions."""
    total = sum(d.differing for d in result.regions)
    compared = sum(d.bytes_compared for d in result.regions)
    if not total:
        return []
    lines = [f"{total} of {compared} bytes differ in {sum(1 for d in result.regions if d.differing)} of "
             f"{len(result.regions)} expected region(s)"]
    for d in result.regions:
        if d.differing:
            r = d.region
            lines.append(f"region {d.index} (partitions {r.partition}..{r.partition + r.count - 1}, bytes "
                         f"0x{r.offset:x}..0x{r.offset + r.length - 1:x}): {d.differing} of {d.bytes_compared} "
                         f"bytes differ, in partition {_partitions_text(d.partitions)}")
    return lines


def _region_byte(case: Case, result: CaseResult, partition: int, offset: int) -> tuple[int, int] | None:
    """(expected, actual) of the byte at (partition, offset) when an expected region holds it, else None."""
    for i, (reg, exp) in enumerate(case.expected):
        if reg.partition <= partition < reg.partition + reg.count and reg.offset <= offset < reg.offset + reg.length:
            e = int(exp[partition - reg.partition, offset - reg.offset])
            d = result.regions[i] if i < len(result.regions) else None
            act = d.actual if d is not None else None
            a = int(act[partition - reg.partition, offset - reg.offset]) if act is not None else e
            return e, a
    return None


def scale_text(diff: ByteDiff) -> str | None:
    """For a QuantizeMX data byte: ``MX block (1, 1): scale byte at p4 0xc1: expected 0x7f = 2^0, actual ...``
    (or that no expected region holds the scale byte); None otherwise."""
    ex = diff.explanation
    if ex is None or ex.scale_at is None or diff.part != "data":
        return None
    p, off = ex.scale_at
    head = f"MX block {ex.block}: scale byte at p{p} 0x{off:x}"
    if diff.scale_bytes is None:
        return head + " (in no expected region)"
    e, a = diff.scale_bytes
    same = "" if e != a else " (the same)"
    return f"{head}: expected {format_value(e, 'E8M0')}, actual {format_value(a, 'E8M0')}{same}"


def diff_lines(case: Case | None, result: CaseResult, diff: ByteDiff, i: int, total: int) -> list[str]:
    """The lines of one listed differing byte: where it is, both values in its format, where it comes from
    (source bytes and code, the MX scale byte and block) and the hexdump around it (``case`` may be None when
    ``diff`` kept its rows)."""
    lines = [f"diff {i} of {total}: region {diff.region}, partition {diff.partition}, byte 0x{diff.offset:x} "
             f"({diff.where()}): expected {diff.value_text(diff.expected)}, actual {diff.value_text(diff.actual)}"]
    ex = diff.explanation
    if ex is not None:
        src = ex.source_text()
        if src:
            lines.append("  " + src)
        sc = scale_text(diff)
        if sc:
            lines.append("  " + sc)
    lines += ["  " + h for h in hexdump(case, result, diff)]
    return lines


def path_width(results: Sequence[CaseResult]) -> int:
    """The width of the path column of :func:`format_case` rows: the longest path of ``results`` as shown."""
    return max((len(shown(r.path)) for r in results), default=0)


def format_case(result: CaseResult, case: Case | None = None, max_diffs: int = 0, *, width: int = 0,
                knobs: dict[str, Any] | None = None) -> str:
    """A case's row (``OPCODE  PATH  BYTES  VERDICT  TIME``, the path padded to ``width`` so the columns of many
    rows line up), then for a failure its detail: the first mismatch, the per-region summary and its first
    ``max_diffs`` differing bytes with their values, source and hexdumps: those replay kept in the result
    (:func:`keep_detail`), or, given the ``case`` of a result that holds its actual bytes, computed here
    (``knobs``: the replay's knob overrides, which decide how source bytes are read)."""
    op = f"0x{result.opcode:02x}" if result.opcode >= 0 else "  ? "
    lines = [f"{op}  {shown(result.path):<{width}}  {result.nbytes:7d} B  {verdict(result):<5}  "
             f"{result.seconds * 1000:8.1f} ms".rstrip()]
    if result.mismatch is not None:
        lines.append("      " + result.mismatch.describe())
    elif result.error:
        lines.append("      " + shown(result.error))
    lines += ["      " + s for s in summary_lines(result)]
    if result.diffs_omitted and max_diffs > 0:
        lines.append(f"      (differing bytes not listed: this replay's report lists at most {MAX_REPORT_DIFFS} "
                     f"in all and keeps at most {MAX_REPORT_MAP_ENTRIES} diff-map entries, docs/limits.md §5)")
    if (case is not None or result.diffs is not None) and max_diffs > 0:
        diffs, total = first_diffs(case, result, max_diffs, knobs)
        for i, d in enumerate(diffs, 1):
            lines += ["      " + ln for ln in diff_lines(case, result, d, i, total)]
    return "\n".join(lines)


def case_diff_map(case: Case, result: CaseResult) -> dict[str, Any] | None:
    """The ``diff_map`` of a replayed case whose result still holds its actual bytes (None when no byte
    differs): :func:`q7emu.machine.diffmap.diff_map` in the record's output format, scale bytes apart."""
    from q7emu.machine.diffmap import diff_map
    from q7emu.machine.explain import output_format

    if not any(d.differing for d in result.regions) or len(result.regions) != len(case.expected):
        return None
    return diff_map(case, result, output_format(case.record), case_record(case).scale_mask)


def map_entries(m: dict[str, Any] | None) -> int:
    """What a diff map costs against :data:`MAX_REPORT_MAP_ENTRIES`: its cells and value pairs."""
    if not m:
        return 0
    return len(m["cells"]) + sum(len(st["pairs"]) for st in m["values"].values() if st)


def keep_detail(case: Case, result: CaseResult, max_diffs: int, knobs: dict[str, Any] | None = None, *,
                diff_map: bool = False) -> CaseResult:
    """Where a case ran: keep its first ``max_diffs`` differing bytes in ``result.diffs``, each with its
    hexdump rows, its values, where it comes from and its block's scale byte (``knobs``: the replay's
    overrides), with ``diff_map`` its diff map in ``result.diff_map``, and drop the regions' copies of the SBUF
    bytes, so the result carries no case data and the report never reads the case again (docs/limits.md §5).
    Returns ``result``."""
    if any(d.differing for d in result.regions):
        result.diffs = first_diffs(case, result, max_diffs, knobs, keep_rows=True)[0] if max_diffs > 0 else []
        if diff_map:
            result.diff_map = case_diff_map(case, result)
    for d in result.regions:
        d.actual = None
    return result


def format_durations(results: Sequence[CaseResult], n: int) -> str:
    """The ``n`` slowest cases (all when ``n`` is 0), slowest first: ``  12.3 ms  PATH``."""
    ranked = sorted(results, key=lambda r: r.seconds, reverse=True)
    top = ranked if n <= 0 else ranked[:n]
    head = f"slowest {len(top)} of {len(results)} case(s):" if n > 0 else f"durations of {len(results)} case(s):"
    return "\n".join([head] + [f"  {r.seconds * 1000:8.1f} ms  {shown(r.path)}" for r in top])


# ---------------------------------------------------------------------- JSON
def _value_json(diff: ByteDiff, byte: int) -> dict[str, Any]:
    ex = diff.explanation
    fmt = ex.out_format if ex is not None and diff.part != "unwritten" else None
    if fmt is None:
        return {"value": None, "text": f"0x{byte:02x}"}
    nonan = fmt == "E8M0" and ex is not None and ex.knobs.get("mx_scale") == "e8m0-nonan"
    v = decode(byte, fmt, e8m0_nonan=nonan)
    return {"value": v if v == v and abs(v) != float("inf") else None, "text": format_value(byte, fmt)}


def diff_json(case: Case | None, result: CaseResult, d: ByteDiff) -> dict[str, Any]:
    """One entry of ``diffs`` (docs/cli.md §3.1): place, both bytes and values, element / MX group / block,
    where the byte comes from (``source``), the QuantizeMX block's scale byte and the hexdump (``case`` may be
    None when ``d`` kept its rows)."""
    ex = d.explanation
    scale_byte = None
    if ex is not None and ex.scale_at is not None and d.part == "data":
        p, off = ex.scale_at
        got = d.scale_bytes
        scale_byte = {"partition": p, "offset": off, "expected": got[0] if got else None,
                      "actual": got[1] if got else None,
                      "expected_text": format_value(got[0], "E8M0") if got else None,
                      "actual_text": format_value(got[1], "E8M0") if got else None}
    e, a = _value_json(d, d.expected), _value_json(d, d.actual)
    return {"region": d.region, "partition": d.partition, "offset": d.offset, "expected": d.expected,
            "actual": d.actual, "part": d.part, "element": d.element, "mx_group": d.mx_group,
            "mx_block": None if d.mx_block is None else list(d.mx_block),
            "format": ex.out_format if ex is not None and d.part != "unwritten" else None,
            "expected_value": e["value"], "actual_value": a["value"],
            "expected_text": e["text"], "actual_text": a["text"],
            "source": ex.to_json() if ex is not None else None, "scale_byte": scale_byte,
            "hexdump": _hexdump_json(case, result, d)}


def case_json(result: CaseResult, case: Case | None = None, max_diffs: int = 0,
              knobs: dict[str, Any] | None = None) -> dict[str, Any]:
    """One case of the ``q7emu-replay`` document (docs/cli.md): with ``max_diffs`` > 0, its first ``max_diffs``
    differing bytes explained and the ``diff_map`` of where its bytes differ, as replay kept them in the result
    (:func:`keep_detail`) or, given its ``case`` and a result that holds its actual bytes, computed here
    (``knobs``: the replay's overrides)."""
    diffs: list[ByteDiff] = []
    total = sum(d.differing for d in result.regions)
    dmap = None
    detail = (case is not None or result.diffs is not None) and max_diffs > 0
    if detail:
        diffs, total = first_diffs(case, result, max_diffs, knobs)
        dmap = result.diff_map
        if dmap is None and case is not None and result.diffs is None:
            dmap = case_diff_map(case, result)
    return {
        "name": shown(result.name), "path": shown(result.path),
        "opcode": result.opcode if result.opcode >= 0 else None,
        "verdict": verdict(result), "seconds": round(result.seconds, 6),
        "bytes_compared": sum(d.bytes_compared for d in result.regions),
        "bytes_differing": total,
        "error": None if result.error is None else shown(result.error),
        "first_mismatch": None if result.mismatch is None else {
            "region": result.mismatch.region, "partition": result.mismatch.partition,
            "offset": result.mismatch.offset, "expected": result.mismatch.expected,
            "actual": result.mismatch.actual},
        "regions": [{"index": d.index, "partition": d.region.partition, "count": d.region.count,
                     "offset": d.region.offset, "length": d.region.length, "bytes_compared": d.bytes_compared,
                     "bytes_differing": d.differing,
                     "partitions": [{"partition": p, "bytes_differing": n} for p, n in sorted(d.partitions.items())]}
                    for d in result.regions],
        "diffs": [diff_json(case, result, d) for d in diffs],
        "diff_map": dmap,
        "diffs_omitted": result.diffs_omitted,
    }


def replay_json(results: Sequence[CaseResult], cases: dict[str, Case] | None = None, *, max_diffs: int = 0,
                backend: str = "kernel", knobs: dict[str, str] | None = None, jobs: int = 1,
                select: Sequence[str] = (), seconds: float = 0.0, **extra: Any) -> dict[str, Any]:
    """The ``q7emu-replay`` v1 document of a replay (docs/cli.md): settings, summary and one entry per case.

    ``cases``: path -> Case of failing cases whose results still hold their actual bytes, for their byte-level
    detail (``diffs``, ``diff_map``); a result that carries its detail (:func:`keep_detail`) needs none."""
    cases = cases or {}
    entries = [case_json(r, cases.get(r.path), max_diffs, knobs) for r in results]
    kinds = [kind(r) for r in results]
    return {
        "format": REPLAY_FORMAT, "version": REPLAY_VERSION, "q7emu_version": __version__,
        "backend": backend, "knobs": dict(knobs or {}), "jobs": jobs, "select": list(select),
        "max_diffs": max_diffs,
        "summary": {"cases": len(results), "passed": kinds.count("pass"), "failed": kinds.count("fail"),
                    "errors": kinds.count("broken") + kinds.count("internal") + kinds.count("not_run"),
                    "bytes_compared": sum(e["bytes_compared"] for e in entries),
                    "bytes_differing": sum(e["bytes_differing"] for e in entries),
                    "seconds": round(seconds, 6),
                    # only when a farm could not run a case (docs/cli.md §3.1): other documents keep their bytes
                    **({"not_run": kinds.count("not_run")} if "not_run" in kinds else {})},
        "exit_code": exit_status(results),
        **extra,
        "cases": entries,
    }


# ---------------------------------------------------------------------- JUnit XML
def junit_identity(path: str) -> tuple[str, str]:
    """(classname, name) of a case in JUnit XML, from its file path alone (two cases never share one, whatever
    their JSON ``name``): the path's folders and file name joined by dots, and the file stem; the same identity
    pytest's ``--junitxml`` gives the item of that case file (``--q7emu-cases``, q7emu.pytest_plugin) when the
    path is relative to pytest's rootdir."""
    p = Path(path)
    parts = [x for x in p.as_posix().split("/") if x not in ("", ".")]
    return ".".join(parts), p.stem


def junit_xml(results: Sequence[CaseResult], cases: dict[str, Case] | None = None, *, max_diffs: int = 0,
              backend: str = "kernel", seconds: float = 0.0, suite: str = "q7emu replay",
              knobs: dict[str, Any] | None = None) -> str:
    """JUnit XML of a replay: one ``<testcase>`` per case (classname and name from its path,
    :func:`junit_identity`; ``time`` in seconds); a FAIL carries a ``<failure>`` whose text is the case's summary
    (and its first ``max_diffs`` differing bytes, kept in its result or computed from its Case in ``cases``), an
    ERROR an ``<error>``."""
    import xml.etree.ElementTree as ET  # here: only a --junit run loads it
    cases = cases or {}
    kinds = [kind(r) for r in results]
    attrs = {"name": suite, "tests": str(len(results)), "failures": str(kinds.count("fail")),
             "errors": str(kinds.count("broken") + kinds.count("internal") + kinds.count("not_run")), "skipped": "0",
             "time": f"{seconds:.6f}"}
    root = ET.Element("testsuites", attrs)
    ts = ET.SubElement(root, "testsuite", attrs)
    props = ET.SubElement(ts, "properties")
    for k, v in (("backend", backend), ("q7emu_version", __version__)):
        ET.SubElement(props, "property", {"name": k, "value": shown(v)})
    for r, k in zip(results, kinds):
        classname, name = junit_identity(r.path)
        tc = ET.SubElement(ts, "testcase", {"classname": shown(classname), "name": shown(name),
                                            "file": shown(r.path), "time": f"{r.seconds:.6f}"})
        if k == "pass":
            continue
        text = format_case(r, cases.get(r.path), max_diffs, knobs=knobs)
        first = shown(r.mismatch.describe() if r.mismatch is not None else (r.error or "failed"))
        if k == "fail":
            el = ET.SubElement(tc, "failure", {"type": "mismatch" if r.mismatch is not None else "divergence",
                                               "message": first})
        else:
            bad = "bad-program" if (r.error or "").startswith(PROGRAM_ERROR) else "bad-case-file"
            el = ET.SubElement(tc, "error", {"type": {"internal": "internal", "not_run": "not-run"}.get(k, bad),
                                             "message": first})
        el.text = text
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: str | os.PathLike[str], results: Sequence[CaseResult], cases: dict[str, Case] | None = None,
                **kw: Any) -> Path:
    """Write :func:`junit_xml` to ``path`` atomically (q7emu.fileio); return the path."""
    atomic_write_text(path, junit_xml(results, cases, **kw))
    return Path(path)


# ---------------------------------------------------------------------- selection
_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


class KeywordExpression:
    """A ``-k`` expression, as pytest's: identifiers combined with ``and``, ``or``, ``not`` and parentheses
    (``nf4 and g8``, ``mariana and not (e3 or nf4)``). An identifier matches a case when it is a case-insensitive
    substring of the case's path or of one of its keywords (:func:`case_keywords`), or, when it holds a shell
    wildcard (``*``, ``?``, ``[``), when it matches the stem, the path or a keyword with
    :func:`fnmatch.fnmatchcase`. ValueError (naming the column) for an expression that does not parse."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = [m.group(1) for m in _TOKEN.finditer(text)]
        if "".join(self.tokens) != "".join(text.split()):
            raise ValueError(f"-k {text!r}: cannot read it")
        self.pos = 0
        self.tree: Any = ("all",) if not self.tokens else self._or()
        if self.pos != len(self.tokens):
            raise ValueError(f"-k {text!r}: unexpected {self.tokens[self.pos]!r} (expected and, or or the end)")

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _binary(self, op: str, operand: Callable[[], Any]) -> Any:
        """``operand (op operand)*``, grouped from the left: ("op", ("op", a, b), c)."""
        node = operand()
        while self._peek() == op:
            self.pos += 1
            node = (op, node, operand())
        return node

    def _or(self) -> Any:
        return self._binary("or", self._and)

    def _and(self) -> Any:
        return self._binary("and", self._not)

    def _not(self) -> Any:
        tok = self._peek()
        if tok is None:
            raise ValueError(f"-k {self.text!r}: ends where a name, not or ( is expected")
        self.pos += 1
        if tok == "not":
            return ("not", self._not())
        if tok == "(":
            node = self._or()
            if self._peek() != ")":
                raise ValueError(f"-k {self.text!r}: a ( is not closed")
            self.pos += 1
            return node
        if tok in ("and", "or", ")"):
            raise ValueError(f"-k {self.text!r}: unexpected {tok!r} (expected a name, not or ()")
        return ("name", tok)

    def matches(self, path: str, keywords: Iterable[str] = ()) -> bool:
        """True when the case at ``path`` with ``keywords`` matches the expression."""
        p = Path(path)
        names = [p.as_posix(), *keywords]
        lower = [n.lower() for n in names]

        def ident(tok: str) -> bool:
            if any(ch in tok for ch in "*?["):
                return any(fnmatch.fnmatchcase(n, tok) for n in [p.stem, *names])
            t = tok.lower()
            return any(t in n for n in lower)

        def ev(node: Any) -> bool:
            op = node[0]
            if op == "all":
                return True
            if op == "name":
                return ident(node[1])
            if op == "not":
                return not ev(node[1])
            if op == "and":
                return ev(node[1]) and ev(node[2])
            return ev(node[1]) or ev(node[2])
        return ev(self.tree)


def case_keywords(path: str | os.PathLike[str]) -> set[str]:
    """The keywords ``-k`` matches besides a case's path, read from its JSON alone (an unreadable file has none):
    its ``name``, generation, opcode (``0x7b``), and for TensorDequantize the kernel path (``proc_4bit_mx_8``),
    source format (``e2m1``, ``int4``, ``nf4``, ``e2m3``) and group (``g0``, ``g8``), for QuantizeMX
    ``quantize_mx``, its input (``fp16``, ``bf16``) and output format (``e4m3``, ``e5m2``); all lower case."""
    from q7emu.fileio import read_json
    from q7emu.isa.records import parse_hex

    try:
        meta = read_json(path)
        out = {str(meta.get("name") or Path(path).stem).lower(), str(meta.get("generation", "")).lower()}
        r = decode_record(parse_hex(meta["record_hex"]))
    except (OSError, Q7Error, ValueError, KeyError, TypeError, AttributeError):
        return set()
    out.add(f"0x{r.header.opcode:02x}")
    try:
        spec = find_spec(r)
    except Q7Error:
        spec = None
    if spec is not None:
        out |= spec.keywords(r)
    out.discard("")
    return out


def select_cases(files: Sequence[str | os.PathLike[str]], patterns: Sequence[str],
                 keywords: Callable[[str], Iterable[str]] | None = None) -> list[str]:
    """The case files that match any of ``patterns`` (all of them when none is given), each a ``-k``
    expression (:class:`KeywordExpression`; ValueError when one does not parse). ``keywords(path)``: the
    keywords of a case (default :func:`case_keywords`, which reads its JSON)."""
    exprs = [KeywordExpression(p) for p in patterns]
    if not exprs:
        return [str(f) for f in files]
    kw = keywords or case_keywords
    out = []
    for f in files:
        words: list[str] | None = None
        for e in exprs:
            if words is None:
                words = sorted(kw(str(f)))
            if e.matches(str(f), words):
                out.append(str(f))
                break
    return out


def failing_cases(results: Sequence[CaseResult]) -> dict[str, Case]:
    """path -> Case, re-read from disk, of every FAIL whose bytes differ and whose result does not carry its
    detail (a result of :func:`q7emu.machine.replay.replay` does: :func:`keep_detail`); a case that can no longer
    be read is left out."""
    out: dict[str, Case] = {}
    for r in results:
        if kind(r) == "fail" and r.diffs is None and any(d.differing for d in r.regions):
            try:
                out[r.path] = load_case(r.path)
            except Q7Error:
                continue
    return out


def dumps(doc: dict[str, Any]) -> str:
    """A JSON document as the CLI prints it (one space indent, keys in insertion order), strict JSON: a number
    that is not finite is a ValueError, never ``Infinity`` / ``NaN`` (docs/cli.md §2)."""
    text = json.dumps(doc, indent=1, allow_nan=False)
    if "\\ud" in text:                  # a lone surrogate (a name from a report's JSON): written as the rows write it
        text = json.dumps(shown_names(doc), indent=1, allow_nan=False)
    return text
