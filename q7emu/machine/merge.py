"""Merging the ``q7emu-replay`` JSON reports of the shards of one run (``q7emu merge``; docs/cli.md §4.3).

A farm without Dask splits a folder with ``q7emu replay DIR --shard I/N --json > shard-I.json`` on N machines;
:func:`merge_reports` checks that the documents belong together and makes one ``q7emu-replay`` v1 document of
them: the cases in shard order, the summary recomputed, the exit status replay would give for all the cases
(3 if a worker died, else 2 if a case file was broken, else 1 if a case failed, else 0), and ``shards``, where
each came from.

They belong together when every document is a ``q7emu-replay`` v1 document, all ran with the same backend,
knobs and ``-k`` selection, no case path appears twice, and, when they carry ``shard`` (``--shard I/N``), all name
the same N and the same number of cases selected, each shard 1..N appears exactly once (a missing shard would make
a passing report of part of the run) and their cases add up to that number. All were made by this q7emu version
unless ``allow_mixed`` (``merge --allow-mixed``): another version may give other verdicts.

A report is input like any other (docs/cli.md §4.3): :func:`check_report` checks every field the merge reads or
passes on against the schema of docs/cli.md §3.1 -- types, ranges, finite numbers (the reader refuses ``1e999``),
each verdict consistent with its counts and error, the summary and exit status consistent with the cases -- and
names the file and the field it refuses, before anything is merged; text, ``--json`` and ``--junit`` read the same
checked documents.
"""
from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable
from typing import Any, TypeGuard, TypeVar

from q7emu._version import __version__
from q7emu.errors import CaseError, InternalError, InvalidArgument
from q7emu.fileio import read_json
from q7emu.machine.cases import CaseResult, Mismatch
from q7emu.machine.diffs import RegionDiff
from q7emu.machine.machine import Region
from q7emu.machine.report import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_MISMATCH,
    EXIT_PASS,
    MAX_DIFFS,
    NOT_RUN,
    REPLAY_FORMAT,
    REPLAY_VERSION,
    shown,
)

__all__ = ["read_report", "check_report", "merge_reports", "results_of"]

#: the missing shards a refusal names (the rest as "...")
_MAX_MISSING_SHOWN = 8


def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A ``q7emu-replay`` v1 document read from ``path`` (bounded JSON read, q7emu.fileio); CaseError naming
    the file when it is not one."""
    try:
        doc = read_json(path)
    except (OSError, InvalidArgument) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        if isinstance(e, InvalidArgument) and isinstance(e.value, str):     # its field is the file: named once
            why = f"{e.rule}: {e.value}"
        raise CaseError(f"{shown(str(path))}: not a readable JSON report ({shown(why)})") from None
    if not isinstance(doc, dict) or doc.get("format") != REPLAY_FORMAT:
        raise CaseError(f"{shown(str(path))}: not a {REPLAY_FORMAT} document (q7emu replay --json)")
    if doc.get("version") != REPLAY_VERSION:
        raise CaseError(f"{shown(str(path))}: {REPLAY_FORMAT} version {shown(repr(doc.get('version')))}; this q7emu "
                        f"reads {REPLAY_VERSION}")
    if not isinstance(doc.get("cases"), list) or not all(isinstance(c, dict) for c in doc["cases"]):
        raise CaseError(f"{shown(str(path))}: 'cases' must be a list of objects")
    check_report(str(path), doc)
    return doc


def _kind(case: dict[str, Any]) -> str:
    v = case.get("verdict")
    if v == "PASS":
        return "pass"
    if v == "FAIL":
        return "fail"
    error = str(case.get("error") or "")
    if error.startswith("worker failed:"):
        return "internal"
    return "not_run" if error.startswith(NOT_RUN) else "broken"


_T = TypeVar("_T")


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


# ---------------------------------------------------------------------- a report is input: its schema
#: where the schema of a q7emu-replay document is written down (the refusals cite it)
_SCHEMA = "docs/cli.md §3.1"
#: partitions of SBUF (a region's partitions), and the largest partition size in bytes (docs/model.md §4)
_PARTITIONS, _PARTITION_BYTES = 128, 0x40000
#: the verdicts of a case
_VERDICTS = ("PASS", "FAIL", "ERROR")
#: what a listed differing byte may be
_PARTS = ("data", "scale", "unwritten")


def _at(where: str, key: str) -> str:
    """The name of field ``key`` of the object at ``where`` (``cases[3].regions[0]``)."""
    return f"{where}.{key}" if where else key


class _Report:
    """Checks the fields of one document, naming the file and the field of the first one that breaks the schema."""

    def __init__(self, path: str) -> None:
        self.path = shown(path)

    def fail(self, where: str, value: object, rule: str) -> CaseError:
        text = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
        if len(text) > 60:
            text = text[:57] + "..."
        return CaseError(f"{self.path}: {where}: {shown(text)} {rule} ({_SCHEMA})")

    def _typed(self, v: object, at: str, kind: type[_T] | tuple[type[_T], ...], what: str,
               ok: Callable[[_T], bool] | None = None) -> _T:
        """``v`` when it is a ``kind`` (not a bool) for which ``ok`` holds; otherwise the failure
        ``<at>: <value> is not <what>``."""
        if isinstance(v, bool) or not isinstance(v, kind) or (ok is not None and not ok(v)):
            raise self.fail(at, v, f"is not {what}")
        return v

    def _field(self, obj: dict[str, Any], key: str, where: str, kind: type[_T] | tuple[type[_T], ...], what: str,
               null: bool = False, ok: Callable[[_T], bool] | None = None) -> _T | None:
        """Field ``key`` of ``obj`` checked by :meth:`_typed`; with ``null``, None when it is missing or null
        (and the failure says `` or null``)."""
        v = obj.get(key)
        if v is None and null:
            return None
        return self._typed(v, _at(where, key), kind, what + (" or null" if null else ""), ok)

    def int_(self, obj: dict[str, Any], key: str, where: str, lo: int = 0, hi: int | None = None,
             null: bool = False) -> int | None:
        span = f"in {lo}..{hi}" if hi is not None else f">= {lo}"
        return self._field(obj, key, where, int, f"an integer {span}", null,
                           lambda v: v >= lo and (hi is None or v <= hi))

    def number(self, obj: dict[str, Any], key: str, where: str, null: bool = False) -> float | None:
        v = self._field(obj, key, where, (int, float), "a finite number >= 0", null,
                        lambda v: math.isfinite(v) and v >= 0)
        return None if v is None else float(v)

    def str_(self, obj: dict[str, Any], key: str, where: str, null: bool = False) -> str | None:
        return self._field(obj, key, where, str, "a string", null)

    def obj(self, obj: dict[str, Any], key: str, where: str, null: bool = False) -> dict[str, Any] | None:
        return self._field(obj, key, where, dict, "an object", null)

    def list_(self, obj: dict[str, Any], key: str, where: str) -> list[Any]:
        return self._typed(obj.get(key), _at(where, key), list, "a list")

    def ints(self, v: object, where: str, n: int) -> list[int]:
        if not isinstance(v, list) or len(v) != n or not all(_is_int(x) and x >= 0 for x in v):
            raise self.fail(where, v, f"is not a list of {n} integers >= 0")
        return list(v)


def check_report(path: str, doc: dict[str, Any]) -> None:
    """Check a ``q7emu-replay`` v1 document read from ``path`` against its schema (docs/cli.md §3.1): the
    settings, every case (its verdict consistent with its counts, regions, first mismatch and error; its listed
    bytes and diff map well formed) and the summary and exit status against the cases. CaseError naming the file
    and the field otherwise. (``format``, ``version`` and ``cases`` being a list of objects are
    :func:`read_report`'s.)"""
    r = _Report(path)
    r.str_(doc, "q7emu_version", "")
    backend = doc.get("backend")
    if backend not in ("kernel", "golden", "kernel programs") and not (
            isinstance(backend, str) and backend.startswith("program ") and len(backend) > len("program ")):
        raise r.fail("backend", backend, "is not kernel, golden or program NAME (replay --program)")
    knobs = r.obj(doc, "knobs", "")
    if knobs is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in knobs.items()):
        raise r.fail("knobs", knobs, "is not an object of knob names to values (strings)")
    if "jobs" in doc:
        r.int_(doc, "jobs", "", 1, null=True)
    select = doc.get("select", [])
    if not isinstance(select, list) or not all(isinstance(x, str) for x in select):
        raise r.fail("select", select, "is not a list of -k expressions (strings)")
    max_diffs = r.int_(doc, "max_diffs", "", 0, MAX_DIFFS) or 0
    for key in ("dask", "junit", "plot"):
        if key in doc:
            r.str_(doc, key, "", null=True)
    shard = r.obj(doc, "shard", "", null=True) if "shard" in doc else None
    if shard is not None:
        index, count = shard.get("index"), shard.get("count")
        if not (_is_int(index) and _is_int(count) and 1 <= index <= count):
            raise CaseError(f"{r.path}: shard {shown(repr(index))}/{shown(repr(count))} is not I/N with 1 <= I <= N "
                            "(replay --shard)")
        r.int_(shard, "cases_selected", "shard", 0)
    kinds = []
    for n, case in enumerate(doc["cases"]):
        kinds.append(_check_case(r, f"cases[{n}]", case, max_diffs))
    summary = r.obj(doc, "summary", "")
    if summary is None:
        raise InternalError("a summary that is not an object passed the check")
    counted = {"cases": len(kinds), "passed": kinds.count("pass"), "failed": kinds.count("fail"),
               "errors": len(kinds) - kinds.count("pass") - kinds.count("fail"),
               "bytes_compared": sum(c["bytes_compared"] for c in doc["cases"]),
               "bytes_differing": sum(c["bytes_differing"] for c in doc["cases"])}
    if "not_run" in summary:
        counted["not_run"] = kinds.count("not_run")
    for key, want in counted.items():
        got = r.int_(summary, key, "summary")
        if got != want:
            raise r.fail(f"summary.{key}", got, f"does not match the cases ({want})")
    r.number(summary, "seconds", "summary")
    code = r.int_(doc, "exit_code", "", 0, 3)
    if code != _exit_code(kinds):
        raise r.fail("exit_code", code, f"does not match the cases' verdicts ({_exit_code(kinds)})")


def _exit_code(kinds: list[str]) -> int:
    """The exit status replay gives for cases of these kinds (docs/cli.md §1)."""
    for k, c in (("internal", EXIT_INTERNAL), ("broken", EXIT_BAD_INPUT), ("not_run", EXIT_BAD_INPUT),
                 ("fail", EXIT_MISMATCH)):
        if k in kinds:
            return c
    return EXIT_PASS


def _check_region(r: _Report, rw: str, reg: object, k: int) -> tuple[int, int, int, int, int]:
    """Region ``k`` of a case (docs/cli.md §3.1 ``regions``): (partition, count, offset, length, bytes differing)."""
    if not isinstance(reg, dict):
        raise r.fail(rw, reg, "is not an object")
    if reg.get("index") != k:
        raise r.fail(f"{rw}.index", reg.get("index"), f"is not {k} (regions are listed in order)")
    p0 = r.int_(reg, "partition", rw, 0, _PARTITIONS - 1) or 0
    count = r.int_(reg, "count", rw, 0, _PARTITIONS - p0) or 0
    off = r.int_(reg, "offset", rw, 0, _PARTITION_BYTES - 1) or 0
    length = r.int_(reg, "length", rw, 0, _PARTITION_BYTES - off) or 0
    rc = r.int_(reg, "bytes_compared", rw) or 0
    if rc != count * length:
        raise r.fail(f"{rw}.bytes_compared", rc, f"is not count x length ({count * length})")
    rd = r.int_(reg, "bytes_differing", rw, 0, rc) or 0
    parts = r.list_(reg, "partitions", rw)
    seen, total = -1, 0
    for j, pp in enumerate(parts):
        pw = f"{rw}.partitions[{j}]"
        if not isinstance(pp, dict):
            raise r.fail(pw, pp, "is not an object")
        p = r.int_(pp, "partition", pw, p0, p0 + count - 1) or 0
        if p <= seen:
            raise r.fail(f"{pw}.partition", p, "is not after the partition before it")
        seen = p
        total += r.int_(pp, "bytes_differing", pw, 1, length) or 0
    if total != rd:
        raise r.fail(f"{rw}.bytes_differing", rd, f"is not the sum over its partitions ({total})")
    return p0, count, off, length, rd


def _check_first_mismatch(r: _Report, fw: str, fm: dict[str, Any], spans: list[tuple[int, int, int, int, int]]
                          ) -> None:
    """A case's ``first_mismatch``: a differing byte inside a region with differing bytes."""
    k = r.int_(fm, "region", fw, 0, len(spans) - 1 if spans else 0) or 0
    if not spans or not spans[k][4]:
        raise r.fail(f"{fw}.region", k, "is not a region with a differing byte")
    p0, count, off, length, _ = spans[k]
    r.int_(fm, "partition", fw, p0, p0 + count - 1)
    r.int_(fm, "offset", fw, off, off + length - 1)
    if r.int_(fm, "expected", fw, 0, 255) == r.int_(fm, "actual", fw, 0, 255):
        raise r.fail(f"{fw}.actual", fm.get("actual"), "is the expected byte: it is no mismatch")


def _check_verdict(r: _Report, where: str, verdict: object, opcode: int | None, error: str | None, mismatch: bool,
                   compared: int, differing: int, regions: bool) -> None:
    """The verdict and what it rests on (docs/cli.md §3.1; q7emu.machine.report.kind)."""
    if verdict == "PASS" and (differing or error is not None or mismatch or opcode is None):
        raise r.fail(f"{where}.verdict", verdict, f"contradicts its counts ({differing} bytes differing, error "
                                                  f"{shown(repr(error))}, opcode {opcode})")
    if verdict == "FAIL" and (opcode is None or (error is None) == (not mismatch) or bool(differing) != mismatch):
        raise r.fail(f"{where}.verdict", verdict, f"contradicts its counts (a FAIL has an opcode and either bytes "
                                                  f"differing with a first mismatch or an error; {differing} bytes "
                                                  f"differing, error {shown(repr(error))})")
    if verdict == "ERROR" and (opcode is not None or error is None or compared or differing or regions or mismatch):
        raise r.fail(f"{where}.verdict", verdict, "contradicts its counts (an ERROR has no opcode, no bytes "
                                                  "compared and an error)")


def _check_case(r: _Report, where: str, c: dict[str, Any], max_diffs: int) -> str:
    """Check one case of a report; its kind (pass, fail, broken, internal, not_run)."""
    r.str_(c, "name", where)
    r.str_(c, "path", where)
    opcode = r.int_(c, "opcode", where, 0, 255, null=True)
    verdict = c.get("verdict")
    if verdict not in _VERDICTS:
        raise r.fail(f"{where}.verdict", verdict, "is not PASS, FAIL or ERROR")
    r.number(c, "seconds", where)
    compared = r.int_(c, "bytes_compared", where) or 0
    differing = r.int_(c, "bytes_differing", where) or 0
    error = r.str_(c, "error", where, null=True)
    regions = r.list_(c, "regions", where)
    region_sums = [0, 0]
    spans = []
    for k, reg in enumerate(regions):
        span = _check_region(r, f"{where}.regions[{k}]", reg, k)
        region_sums[0] += span[1] * span[3]          # bytes compared: count x length
        region_sums[1] += span[4]
        spans.append(span)
    if region_sums[0] != compared:
        raise r.fail(f"{where}.bytes_compared", compared, f"is not the sum over its regions ({region_sums[0]})")
    if region_sums[1] != differing:
        raise r.fail(f"{where}.bytes_differing", differing, f"is not the sum over its regions ({region_sums[1]})")
    fm = r.obj(c, "first_mismatch", where, null=True)
    if fm is not None:
        _check_first_mismatch(r, f"{where}.first_mismatch", fm, spans)
    _check_verdict(r, where, verdict, opcode, error, fm is not None, compared, differing, bool(regions))
    diffs = r.list_(c, "diffs", where) if "diffs" in c else []
    if len(diffs) > min(max_diffs, differing):
        raise r.fail(f"{where}.diffs", f"{len(diffs)} listed", f"are more than --max-diffs ({max_diffs}) or the "
                                                              f"bytes differing ({differing})")
    for j, d in enumerate(diffs):
        _check_diff(r, f"{where}.diffs[{j}]", d)
    if "diff_map" in c:
        _check_map(r, f"{where}.diff_map", r.obj(c, "diff_map", where, null=True))
    if not isinstance(c.get("diffs_omitted", False), bool):
        raise r.fail(f"{where}.diffs_omitted", c.get("diffs_omitted"), "is not true or false")
    return _kind(c)


def _check_diff(r: _Report, where: str, d: object) -> None:
    """One listed differing byte (docs/cli.md §3.1 ``diffs``)."""
    if not isinstance(d, dict):
        raise r.fail(where, d, "is not an object")
    for key in ("region", "partition", "offset"):
        r.int_(d, key, where)
    r.int_(d, "expected", where, 0, 255)
    r.int_(d, "actual", where, 0, 255)
    if d.get("part") not in _PARTS:
        raise r.fail(f"{where}.part", d.get("part"), "is not data, scale or unwritten")
    for key in ("element", "mx_group"):
        r.int_(d, key, where, null=True)
    if d.get("mx_block") is not None:
        r.ints(d.get("mx_block"), f"{where}.mx_block", 2)
    for key in ("format", "expected_text", "actual_text"):
        r.str_(d, key, where, null=key == "format")
    for key in ("expected_value", "actual_value"):
        v = d.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
            raise r.fail(_at(where, key), v, "is not a finite number or null")
    for key in ("source", "scale_byte"):
        r.obj(d, key, where, null=True)
    hexdump = r.obj(d, "hexdump", where, null=True)
    if hexdump is not None:
        r.int_(hexdump, "partition", f"{where}.hexdump", 0, _PARTITIONS - 1)
        r.int_(hexdump, "offset", f"{where}.hexdump")
        for key in ("expected", "actual"):
            text = r.str_(hexdump, key, f"{where}.hexdump") or ""
            if len(text) % 2 or len(text) != len(str(hexdump.get("expected"))) or \
                    any(ch not in "0123456789abcdef" for ch in text):
                raise r.fail(f"{where}.hexdump.{key}", text, "is not lower-case hex of the expected bytes' length")


def _check_map(r: _Report, where: str, m: dict[str, Any] | None) -> None:
    """A case's diff map (docs/cli.md §3.1 ``diff_map``), or null."""
    if m is None:
        return
    for key in ("bytes_differing", "bin_bytes", "bins", "partitions_differing"):
        r.int_(m, key, where)
    r.ints(m.get("partitions"), f"{where}.partitions", 2)
    r.ints(m.get("offsets"), f"{where}.offsets", 2)
    cells = r.list_(m, "cells", where)
    for j, cell in enumerate(cells):
        r.ints(cell, f"{where}.cells[{j}]", 3)
    r.obj(m, "values", where)


def _shards_in_order(docs: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The documents of a ``replay --shard I/N`` run in shard order; ValueError naming the files when they are not
    every shard of one run, each once."""
    shard_of = [s for _, d in docs if isinstance(s := d.get("shard"), dict)]
    if len(shard_of) != len(docs):
        raise ValueError("some reports come from replay --shard I/N and some do not: not shards of one run")
    index_count: list[tuple[int, int]] = []      # (I, N) of each document
    for (name, _), s in zip(docs, shard_of):
        index, count = s.get("index"), s.get("count")
        if not (_is_int(index) and _is_int(count) and 1 <= index <= count):
            raise ValueError(f"{name}: shard {index!r}/{count!r} is not I/N with 1 <= I <= N (replay --shard)")
        index_count.append((index, count))
    counts = {n for _, n in index_count}
    if len(counts) != 1:
        raise ValueError(f"the reports split the run into different numbers of shards: {sorted(counts)}")
    n = counts.pop()
    seen: dict[int, str] = {}
    for (name, _), (i, _) in zip(docs, index_count):
        if i in seen:
            raise ValueError(f"{name} and {seen[i]} are both shard {i}/{n}")
        seen[i] = name
    if len(seen) != n:      # every index is in 1..n and none twice: n - len(seen) of them are missing
        # the first few (N comes from a file: it may be huge)
        missing = list(itertools.islice((i for i in range(1, n + 1) if i not in seen), _MAX_MISSING_SHOWN))
        more = ", ..." if n - len(seen) > len(missing) else ""
        raise ValueError(f"shard(s) {', '.join(f'{i}/{n}' for i in missing)}{more} missing: a merged report of "
                         "part of the run would hide its cases")
    selected = {s.get("cases_selected") for s in shard_of}
    if len(selected) != 1:
        raise ValueError(f"the reports split runs of different numbers of cases: {sorted(map(str, selected))}")
    want = selected.pop()
    got = sum(len(d["cases"]) for _, d in docs)
    if got != want:
        raise ValueError(f"the shards hold {got} cases, but their run selected {want}: not the shards of one run")
    order = sorted(range(len(docs)), key=lambda k: index_count[k][0])
    return [docs[k] for k in order]


def merge_reports(docs: list[tuple[str, dict[str, Any]]], *, allow_mixed: bool = False) -> dict[str, Any]:
    """One ``q7emu-replay`` document of the shards' ``(file name, document)`` (module docstring; each checked by
    :func:`check_report`); ValueError naming the files when they do not belong together. ``allow_mixed``: merge
    reports of other q7emu versions too (``merge --allow-mixed``)."""
    if not docs:
        raise ValueError("no report to merge")
    docs = [(shown(name), d) for name, d in docs]
    first_name, first = docs[0]
    if not allow_mixed:
        for name, d in docs:
            if d.get("q7emu_version") != __version__:
                raise ValueError(f"{name} was made by q7emu {shown(str(d.get('q7emu_version')))}, this is q7emu "
                                 f"{__version__}: another version may give other verdicts; merge --allow-mixed "
                                 "merges it anyway")
    for name, d in docs[1:]:
        for key in ("backend", "knobs", "select"):
            if d.get(key, [] if key == "select" else None) != first.get(key, [] if key == "select" else None):
                raise ValueError(f"{name} ran with {key} {shown(repr(d.get(key)))}, {first_name} with "
                                 f"{shown(repr(first.get(key)))}: not shards of one run")
    if any(d.get("shard") is not None for _, d in docs):
        docs = _shards_in_order(docs)
    cases: list[dict[str, Any]] = []
    where: dict[str, str] = {}
    for name, d in docs:
        for c in d["cases"]:
            path = str(c.get("path"))
            if path in where:
                raise ValueError(f"case {shown(path)} is in both {where[path]} and {name}")
            where[path] = name
            cases.append(c)
    kinds = [_kind(c) for c in cases]
    code = _exit_code(kinds)
    return {
        "format": REPLAY_FORMAT, "version": REPLAY_VERSION, "q7emu_version": __version__,
        "backend": first.get("backend"), "knobs": first.get("knobs", {}), "jobs": None,
        "select": first.get("select", []), "max_diffs": first.get("max_diffs"),
        "summary": {"cases": len(cases), "passed": kinds.count("pass"), "failed": kinds.count("fail"),
                    "errors": len(kinds) - kinds.count("pass") - kinds.count("fail"),
                    "bytes_compared": sum(int(c["bytes_compared"]) for c in cases),
                    "bytes_differing": sum(int(c["bytes_differing"]) for c in cases),
                    "seconds": round(sum(float(d["summary"]["seconds"]) for _, d in docs), 6),
                    **({"not_run": kinds.count("not_run")} if "not_run" in kinds else {})},
        "exit_code": code,
        "shard": None,
        "shards": [{"file": name, "shard": d.get("shard"), "cases": len(d["cases"]),
                    "q7emu_version": d.get("q7emu_version"), "exit_code": d.get("exit_code")} for name, d in docs],
        "cases": cases,
    }


def results_of(doc: dict[str, Any]) -> list[CaseResult]:
    """The cases of a ``q7emu-replay`` document as :class:`CaseResult` objects (without the actual bytes), for
    the text rows and JUnit XML of :mod:`q7emu.machine.report`."""
    out = []
    for n, c in enumerate(doc["cases"]):
        try:
            out.append(_result(c))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CaseError(f"cases[{n}] ({shown(repr(c.get('path')))}): malformed ({type(e).__name__}: {e})") from None
    return out


def _result(c: dict[str, Any]) -> CaseResult:
    fm = c.get("first_mismatch")
    regions = [RegionDiff(r["index"], Region(r["partition"], r["count"], r["offset"], r["length"]),
                          r["bytes_differing"], {p["partition"]: p["bytes_differing"] for p in r["partitions"]})
               for r in c.get("regions") or []]
    mm = None if not fm else Mismatch(fm["region"], fm["partition"], fm["offset"], fm["expected"], fm["actual"],
                                      int(c.get("bytes_differing") or 1))
    opcode = c.get("opcode")
    return CaseResult(str(c.get("name")), str(c.get("path")), -1 if opcode is None else int(opcode),
                      c.get("verdict") == "PASS", int(c.get("bytes_compared") or 0),
                      float(c.get("seconds") or 0.0), mm, c.get("error"), regions)
