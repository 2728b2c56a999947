"""Merging the ``q7emu-replay`` JSON reports of the shards of one run (``q7emu merge``; docs/cli.md §4.3).

A farm without Dask splits a folder with ``q7emu replay DIR --shard I/N --json > shard-I.json`` on N machines;
:func:`merge_reports` checks that the documents belong together and makes one ``q7emu-replay`` v1 document of
them: the cases in shard order, the summary recomputed, the exit status replay would give for all the cases
(3 if a worker died, else 2 if a case file was broken, else 1 if a case failed, else 0), and ``shards``, where
each came from.

They belong together when every document is a ``q7emu-replay`` v1 document, all ran with the same backend and
knobs, no case path appears twice, and, when they carry ``shard`` (``--shard I/N``), all name the same N and
each shard 1..N appears exactly once (a missing shard would make a passing report of part of the run).
"""
from __future__ import annotations

import itertools
import os
from typing import Any, TypeGuard

from q7emu._version import __version__
from q7emu.errors import CaseError, InvalidArgument
from q7emu.fileio import read_json
from q7emu.machine.cases import CaseResult, Mismatch
from q7emu.machine.diffs import RegionDiff
from q7emu.machine.machine import Region
from q7emu.machine.report import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_MISMATCH,
    EXIT_PASS,
    REPLAY_FORMAT,
    REPLAY_VERSION,
)

__all__ = ["read_report", "merge_reports", "results_of"]

#: the missing shards a refusal names (the rest as "...")
_MAX_MISSING_SHOWN = 8


def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A ``q7emu-replay`` v1 document read from ``path`` (bounded JSON read, q7emu.fileio); CaseError naming
    the file when it is not one."""
    try:
        doc = read_json(path)
    except (OSError, InvalidArgument) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise CaseError(f"{path}: not a readable JSON report ({why})") from None
    if not isinstance(doc, dict) or doc.get("format") != REPLAY_FORMAT:
        raise CaseError(f"{path}: not a {REPLAY_FORMAT} document (q7emu replay --json)")
    if doc.get("version") != REPLAY_VERSION:
        raise CaseError(f"{path}: {REPLAY_FORMAT} version {doc.get('version')!r}; this q7emu reads {REPLAY_VERSION}")
    if not isinstance(doc.get("cases"), list) or not all(isinstance(c, dict) for c in doc["cases"]):
        raise CaseError(f"{path}: 'cases' must be a list of objects")
    return doc


def _kind(case: dict[str, Any]) -> str:
    v = case.get("verdict")
    if v == "PASS":
        return "pass"
    if v == "FAIL":
        return "fail"
    return "internal" if str(case.get("error") or "").startswith("worker failed:") else "broken"


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def merge_reports(docs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One ``q7emu-replay`` document of the shards' ``(file name, document)`` (module docstring); ValueError
    naming the files when they do not belong together."""
    if not docs:
        raise ValueError("no report to merge")
    first_name, first = docs[0]
    for name, d in docs[1:]:
        for key in ("backend", "knobs"):
            if d.get(key) != first.get(key):
                raise ValueError(f"{name} ran with {key} {d.get(key)!r}, {first_name} with {first.get(key)!r}: "
                                 "not shards of one run")
    shards = [d.get("shard") for _, d in docs]
    if any(s is not None for s in shards):
        shard_of = [s for s in shards if isinstance(s, dict)]
        if len(shard_of) != len(shards):
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
        order = sorted(range(len(docs)), key=lambda k: index_count[k][0])
        docs = [docs[k] for k in order]
    cases: list[dict[str, Any]] = []
    where: dict[str, str] = {}
    for name, d in docs:
        for c in d["cases"]:
            path = str(c.get("path"))
            if path in where:
                raise ValueError(f"case {path} is in both {where[path]} and {name}")
            where[path] = name
            cases.append(c)
    kinds = [_kind(c) for c in cases]
    code = EXIT_PASS
    for k, c in (("internal", EXIT_INTERNAL), ("broken", EXIT_BAD_INPUT), ("fail", EXIT_MISMATCH)):
        if k in kinds:
            code = c
            break
    return {
        "format": REPLAY_FORMAT, "version": REPLAY_VERSION, "q7emu_version": __version__,
        "backend": first.get("backend"), "knobs": first.get("knobs", {}), "jobs": None,
        "select": first.get("select", []), "max_diffs": first.get("max_diffs"),
        "summary": {"cases": len(cases), "passed": kinds.count("pass"), "failed": kinds.count("fail"),
                    "errors": kinds.count("broken") + kinds.count("internal"),
                    "bytes_compared": sum(int(c.get("bytes_compared") or 0) for c in cases),
                    "bytes_differing": sum(int(c.get("bytes_differing") or 0) for c in cases),
                    "seconds": round(sum(float(d.get("summary", {}).get("seconds") or 0) for _, d in docs), 6)},
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
            raise CaseError(f"cases[{n}] ({c.get('path')!r}): malformed ({type(e).__name__}: {e})") from None
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
