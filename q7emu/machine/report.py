"""Reporting replay results: verdicts and exit status, per-case summaries, the first N differing bytes with their
output element / MX group and a hexdump, the ``q7emu-replay`` JSON document, JUnit XML, ``-k`` selection and
durations.

Everything here reads finished :class:`~q7emu.machine.cases.CaseResult` objects (and, for the byte-level detail
of a failing case, its :class:`~q7emu.machine.cases.Case`); it never runs a record.

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
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from q7emu._version import __version__
from q7emu.errors import Q7Error
from q7emu.fileio import atomic_write_text
from q7emu.isa.records import S3D3TensDequant, S3DMX1Quant, decode_record
from q7emu.machine.cases import Case, CaseResult, load_case
from q7emu.machine.machine import element_offsets

__all__ = ["REPLAY_FORMAT", "REPLAY_VERSION", "EXIT_PASS", "EXIT_MISMATCH", "EXIT_BAD_INPUT", "EXIT_INTERNAL",
           "kind", "verdict", "exit_status", "ByteDiff", "OutputMap", "first_diffs", "hexdump",
           "format_case", "case_json", "replay_json", "junit_xml", "write_junit", "select_cases",
           "format_durations", "case_record", "MAX_DIFFS", "MAX_REPORT_DIFFS", "shown", "keep_detail"]

#: the JSON document of ``q7emu replay --json`` (schema: docs/cli.md)
REPLAY_FORMAT = "q7emu-replay"
REPLAY_VERSION = 1

#: exit statuses of a replay (the CLI's: docs/cli.md)
EXIT_PASS, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3

#: the prefix q7emu.machine.replay gives the error of a case whose worker process died
_WORKER_FAILED = "worker failed:"
#: the byte rows of a hexdump: 16 bytes each
HEX_ROW = 16
#: the most differing bytes ``--max-diffs`` lists per case (docs/limits.md §5)
MAX_DIFFS = 1000
#: the most differing bytes one replay keeps for its report, over all cases (about 400 bytes of memory each):
#: past it the cases latest in order list none (docs/limits.md §5)
MAX_REPORT_DIFFS = 100_000


# ---------------------------------------------------------------------- text safe for any output
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def shown(text: str) -> str:
    """``text`` as every report writes it: a file name that is not UTF-8 (its bytes held as surrogates, as
    ``os.fsdecode`` gives them) and characters XML cannot hold become backslash escapes (``\\xff``), so a
    row, the JSON document and the JUnit file can always be written (docs/cli.md §1)."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


# ---------------------------------------------------------------------- verdicts
def kind(r: CaseResult) -> str:
    """``pass``, ``fail`` (mismatch or divergence), ``broken`` (the case file could not be read) or
    ``internal`` (the worker replaying it died)."""
    if r.ok:
        return "pass"
    if r.opcode < 0 and r.error and r.error.startswith(_WORKER_FAILED):
        return "internal"
    if r.opcode < 0:            # load_case failed: the result carries no record
        return "broken"
    return "fail"


def verdict(r: CaseResult) -> str:
    """``PASS``, ``FAIL`` or ``ERROR`` (a case that could not be replayed at all)."""
    return {"pass": "PASS", "fail": "FAIL"}.get(kind(r), "ERROR")


def exit_status(results: Iterable[CaseResult]) -> int:
    """3 if a worker died, else 2 if a case file could not be read, else 1 if a case failed, else 0."""
    kinds = {kind(r) for r in results}
    for k, code in (("internal", EXIT_INTERNAL), ("broken", EXIT_BAD_INPUT), ("fail", EXIT_MISMATCH)):
        if k in kinds:
            return code
    return EXIT_PASS


# ---------------------------------------------------------------------- where a byte sits in the output
@dataclass(frozen=True)
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
    #: the hexdump window around the byte: (partition, first offset, expected bytes, actual bytes), kept so
    #: the byte can be shown after the case's data is gone (:func:`first_diffs` with ``keep_rows``)
    rows: tuple[int, int, bytes, bytes] | None = None

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


def _byte_index(elem_offsets: np.ndarray, elem_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique destination byte offsets, the output byte index that lands last on each)."""
    boffs = (elem_offsets[:, None] + np.arange(elem_bytes, dtype=np.int64)).reshape(-1)
    rev = boffs[::-1]
    uniq, first = np.unique(rev, return_index=True)
    return uniq, boffs.size - 1 - first


class OutputMap:
    """Maps SBUF (partition, byte offset) to the output element that a record's destination writes there
    (the machine's destination reading, docs/model.md §4; last write wins as in the machine)."""

    def __init__(self, record: bytes, partition_bytes: int) -> None:
        self.rec = decode_record(bytes(record))
        self.pb = partition_bytes
        self._data: tuple[int, int, np.ndarray, np.ndarray] | None = None
        self._scale: tuple[int, int, int, int, int] | None = None
        self.group = 0
        r = self.rec
        try:
            if isinstance(r, S3D3TensDequant):
                p0, off = r.dst.start_addr.locate(partition_bytes)
                uniq, idx = _byte_index(element_offsets(r.dst, off), 4)
                self._data = (p0, r.num_active_channels, uniq, idx)
                self.group = r.group_size
            elif isinstance(r, S3DMX1Quant):
                d = r.dst
                p0, off = d.start_addr.locate(partition_bytes)
                uniq, idx = _byte_index(off + 4 * np.arange(d.num_elem, dtype=np.int64) * d.step_elem, 4)
                self._data = (p0, r.num_active_channels, uniq, idx)
                sp, soff = d.scale_addr.locate(partition_bytes)
                self._scale = (sp, soff, d.num_elem, d.scale_pidx, r.num_active_channels)
        except (Q7Error, ValueError):                  # a record the machine would refuse: no mapping
            self._data = self._scale = None

    def locate(self, partition: int, offset: int) -> tuple[str, int | None, int | None, tuple[int, int] | None]:
        """(part, element, mx_group, mx_block) of the byte at SBUF (partition, offset)."""
        if self._scale is not None:                    # scales are written after the data: they win an overlap
            sp, soff, f4, pidx, nac = self._scale
            rel = partition - sp
            q, r = divmod(rel, 32) if rel >= 0 else (-1, -1)
            if 0 <= q < nac // 32 and pidx <= r < pidx + 4 and soff <= offset < soff + f4:
                return "scale", None, None, (4 * q + r - pidx, offset - soff)
        if self._data is not None:
            p0, nac, uniq, idx = self._data
            i = int(np.searchsorted(uniq, offset))
            if p0 <= partition < p0 + nac and i < uniq.size and uniq[i] == offset:
                element = int(idx[i])
                if isinstance(self.rec, S3DMX1Quant):
                    return "data", element, None, ((partition - p0) // 8, element // 4)
                return "data", element, element // 8 if self.group == 8 else None, None
        return "unwritten", None, None, None


def case_record(case: Case) -> OutputMap:
    """The :class:`OutputMap` of a case's record at its partition size."""
    return OutputMap(case.record, case.partition_bytes)


def first_diffs(case: Case | None, result: CaseResult, n: int, *, keep_rows: bool = False
                ) -> tuple[list[ByteDiff], int]:
    """The first ``n`` differing bytes of a replayed case (region order, then partition, then byte) with their
    output element / MX group, and the number of differing bytes in all.

    When ``result.diffs`` holds them already (replay computed them where the case ran) those are used and
    ``case`` may be None. ``keep_rows``: each ByteDiff also keeps its hexdump window (``rows``)."""
    total = sum(d.differing for d in result.regions)
    if result.diffs is not None:
        return list(result.diffs[:max(n, 0)]), total
    out: list[ByteDiff] = []
    if case is None or n <= 0 or total == 0 or len(result.regions) != len(case.expected):
        return out, total
    omap = case_record(case)
    for d, (reg, exp) in zip(result.regions, case.expected):
        if not d.differing or d.actual is None or d.actual.shape != exp.shape:
            continue
        for r, c in np.argwhere(d.actual != exp)[: n - len(out)]:
            p, off = reg.partition + int(r), reg.offset + int(c)
            part, element, group, block = omap.locate(p, off)
            bd = ByteDiff(d.index, p, off, int(exp[r, c]), int(d.actual[r, c]), element, group, block, part)
            if keep_rows:
                rp, start, e, a = _rows(case, result, bd, 1)
                bd = dataclasses.replace(bd, rows=(rp, start, e.tobytes(), a.tobytes()))
            out.append(bd)
        if len(out) >= n:
            break
    return out, total


def _rows(case: Case | None, result: CaseResult, diff: ByteDiff, context: int
          ) -> tuple[int, int, np.ndarray, np.ndarray]:
    """(partition, first byte offset, expected bytes, actual bytes) of the hexdump rows around ``diff``."""
    if diff.rows is not None and context == 1:
        p, start, e, a = diff.rows
        return p, start, np.frombuffer(e, np.uint8), np.frombuffer(a, np.uint8)
    assert case is not None
    reg, exp = case.expected[diff.region]
    act = result.regions[diff.region].actual
    row = diff.partition - reg.partition
    lo_off = max(reg.offset, (diff.offset // HEX_ROW - context) * HEX_ROW)
    hi_off = min(reg.offset + reg.length, (diff.offset // HEX_ROW + context + 1) * HEX_ROW)
    sl = slice(lo_off - reg.offset, hi_off - reg.offset)
    assert act is not None
    return diff.partition, lo_off, exp[row, sl], act[row, sl]


def hexdump(case: Case | None, result: CaseResult, diff: ByteDiff, context: int = 1) -> list[str]:
    """Expected vs actual bytes around ``diff``: the 16-byte row holding it and ``context`` rows either side
    (inside its expected region), a ``^^`` under each differing byte."""
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


def format_case(result: CaseResult, case: Case | None = None, max_diffs: int = 0) -> str:
    """A case's row (``OPCODE  PATH  BYTES  VERDICT  TIME``), then for a failure its detail: the first mismatch,
    the per-region summary and, given the ``case``, its first ``max_diffs`` differing bytes with hexdumps."""
    op = f"0x{result.opcode:02x}" if result.opcode >= 0 else "  ? "
    lines = [f"{op}  {shown(result.path)}  {result.nbytes:7d} B  {verdict(result)}  "
             f"{result.seconds * 1000:8.1f} ms"]
    if result.mismatch is not None:
        lines.append("      " + result.mismatch.describe())
    elif result.error:
        lines.append("      " + shown(result.error))
    lines += ["      " + s for s in summary_lines(result)]
    if result.diffs_omitted and max_diffs > 0:
        lines.append(f"      (differing bytes not listed: this replay's report lists at most {MAX_REPORT_DIFFS} "
                     "in all, docs/limits.md §5)")
    if (case is not None or result.diffs is not None) and max_diffs > 0:
        diffs, total = first_diffs(case, result, max_diffs)
        for i, d in enumerate(diffs, 1):
            lines.append(f"      diff {i} of {total}: region {d.region}, partition {d.partition}, byte 0x{d.offset:x} "
                         f"({d.where()}): expected 0x{d.expected:02x}, actual 0x{d.actual:02x}")
            lines += ["        " + h for h in hexdump(case, result, d)]
    return "\n".join(lines)


def keep_detail(case: Case, result: CaseResult, max_diffs: int) -> CaseResult:
    """Where a case ran: keep its first ``max_diffs`` differing bytes (with their hexdump rows) in
    ``result.diffs`` and drop the regions' copies of the SBUF bytes, so the result carries no case data
    (docs/limits.md §5). Returns ``result``."""
    if any(d.differing for d in result.regions):
        result.diffs = first_diffs(case, result, max_diffs, keep_rows=True)[0] if max_diffs > 0 else []
    for d in result.regions:
        d.actual = None
    return result


def format_durations(results: Sequence[CaseResult], n: int) -> str:
    """The ``n`` slowest cases (all when ``n`` is 0), slowest first: ``  12.3 ms  PATH``."""
    ranked = sorted(results, key=lambda r: r.seconds, reverse=True)
    shown = ranked if n <= 0 else ranked[:n]
    head = f"slowest {len(shown)} of {len(results)} case(s):" if n > 0 else f"durations of {len(results)} case(s):"
    return "\n".join([head] + [f"  {r.seconds * 1000:8.1f} ms  {r.path}" for r in shown])


# ---------------------------------------------------------------------- JSON
def case_json(result: CaseResult, case: Case | None = None, max_diffs: int = 0) -> dict[str, Any]:
    """One case of the ``q7emu-replay`` document (docs/cli.md)."""
    diffs: list[ByteDiff] = []
    total = sum(d.differing for d in result.regions)
    detail = case is not None or result.diffs is not None
    if detail:
        diffs, total = first_diffs(case, result, max_diffs)
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
        "diffs": [{"region": d.region, "partition": d.partition, "offset": d.offset, "expected": d.expected,
                   "actual": d.actual, "part": d.part, "element": d.element, "mx_group": d.mx_group,
                   "mx_block": None if d.mx_block is None else list(d.mx_block),
                   "hexdump": _hexdump_json(case, result, d)} for d in diffs] if detail else [],
        "diffs_omitted": result.diffs_omitted,
    }


def replay_json(results: Sequence[CaseResult], cases: dict[str, Case] | None = None, *, max_diffs: int = 0,
                backend: str = "kernel", knobs: dict[str, str] | None = None, jobs: int = 1,
                select: Sequence[str] = (), seconds: float = 0.0) -> dict[str, Any]:
    """The ``q7emu-replay`` v1 document of a replay (docs/cli.md): settings, summary and one entry per case.

    ``cases``: path -> Case of the failing cases whose byte-level detail (``diffs``) is wanted."""
    cases = cases or {}
    entries = [case_json(r, cases.get(r.path), max_diffs) for r in results]
    kinds = [kind(r) for r in results]
    return {
        "format": REPLAY_FORMAT, "version": REPLAY_VERSION, "q7emu_version": __version__,
        "backend": backend, "knobs": dict(knobs or {}), "jobs": jobs, "select": list(select),
        "max_diffs": max_diffs,
        "summary": {"cases": len(results), "passed": kinds.count("pass"), "failed": kinds.count("fail"),
                    "errors": kinds.count("broken") + kinds.count("internal"),
                    "bytes_compared": sum(e["bytes_compared"] for e in entries),
                    "bytes_differing": sum(e["bytes_differing"] for e in entries),
                    "seconds": round(seconds, 6)},
        "exit_code": exit_status(results),
        "cases": entries,
    }


# ---------------------------------------------------------------------- JUnit XML
def _classname(path: str) -> str:
    parent = Path(path).parent.as_posix().strip("./")
    return "q7emu.replay" + ("." + parent.replace("/", ".") if parent else "")


def junit_xml(results: Sequence[CaseResult], cases: dict[str, Case] | None = None, *, max_diffs: int = 0,
              backend: str = "kernel", seconds: float = 0.0, suite: str = "q7emu replay") -> str:
    """JUnit XML of a replay: one ``<testcase>`` per case (classname from its folder, name = case name,
    ``time`` in seconds); a FAIL carries a ``<failure>`` whose text is the case's summary (and its first
    ``max_diffs`` differing bytes, given its Case in ``cases``), an ERROR an ``<error>``."""
    cases = cases or {}
    kinds = [kind(r) for r in results]
    attrs = {"name": suite, "tests": str(len(results)), "failures": str(kinds.count("fail")),
             "errors": str(kinds.count("broken") + kinds.count("internal")), "skipped": "0",
             "time": f"{seconds:.6f}"}
    root = ET.Element("testsuites", attrs)
    ts = ET.SubElement(root, "testsuite", attrs)
    props = ET.SubElement(ts, "properties")
    for k, v in (("backend", backend), ("q7emu_version", __version__)):
        ET.SubElement(props, "property", {"name": k, "value": shown(v)})
    for r, k in zip(results, kinds):
        tc = ET.SubElement(ts, "testcase", {"classname": shown(_classname(r.path)), "name": shown(r.name),
                                            "file": shown(r.path), "time": f"{r.seconds:.6f}"})
        if k == "pass":
            continue
        text = format_case(r, cases.get(r.path), max_diffs)
        first = shown(r.mismatch.describe() if r.mismatch is not None else (r.error or "failed"))
        if k == "fail":
            el = ET.SubElement(tc, "failure", {"type": "mismatch" if r.mismatch is not None else "divergence",
                                               "message": first})
        else:
            el = ET.SubElement(tc, "error", {"type": "internal" if k == "internal" else "bad-case-file",
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
def select_cases(files: Sequence[str | os.PathLike[str]], patterns: Sequence[str]) -> list[str]:
    """The case files that match any of ``patterns`` (all of them when none is given).

    A pattern with a shell wildcard (``*``, ``?``, ``[``) matches the case's stem or its whole path with
    :func:`fnmatch.fnmatchcase`; any other pattern is a case-insensitive substring of the path."""
    out = []
    for f in files:
        path = Path(f).as_posix()
        stem = Path(f).stem
        for pat in patterns or ["*"]:
            if any(ch in pat for ch in "*?["):
                if fnmatch.fnmatchcase(stem, pat) or fnmatch.fnmatchcase(path, pat):
                    break
            elif pat.lower() in path.lower():
                break
        else:
            continue
        out.append(str(f))
    return out


def failing_cases(results: Sequence[CaseResult]) -> dict[str, Case]:
    """path -> Case, re-read from disk, of every FAIL whose bytes differ (for the byte-level detail); a case that
    can no longer be read is left out."""
    out: dict[str, Case] = {}
    for r in results:
        if kind(r) == "fail" and any(d.differing for d in r.regions):
            try:
                out[r.path] = load_case(r.path)
            except Q7Error:
                continue
    return out


def dumps(doc: dict[str, Any]) -> str:
    """A JSON document as the CLI prints it (one space indent, keys in insertion order)."""
    return json.dumps(doc, indent=1)
