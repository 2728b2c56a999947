"""Replay many cases: find them, run them (optionally in worker processes, :mod:`q7emu.machine.workers`),
show progress, format rows."""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from q7emu.errors import CaseError, InvalidArgument, Q7Error
from q7emu.fileio import SCAN_HEAD_BYTES, is_regular_file, read_head
from q7emu.machine.cases import CASE_FORMAT, CaseResult, load_case, run_case
from q7emu.machine.report import MAX_DIFFS, MAX_REPORT_DIFFS, keep_detail
from q7emu.machine.workers import Interrupted, TaskFailure, run_tasks

#: show a progress bar when at least this many cases are replayed
PROGRESS_THRESHOLD = 16


def find_cases(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Case JSON files named by ``paths``: a case file / stem, or a directory searched recursively
    (only regular ``*.json`` files whose first :data:`q7emu.fileio.SCAN_HEAD_BYTES` bytes declare the
    ``q7emu-case`` format: a FIFO is never opened, a large unrelated file costs one small read;
    docs/limits.md §1). Sorted per directory."""
    out: list[Path] = []
    marker = CASE_FORMAT.encode()
    for p in paths:
        p = Path(p)
        if p.is_dir():
            for j in sorted(p.rglob("*.json")):
                if not is_regular_file(j):
                    continue
                try:
                    head = read_head(j, SCAN_HEAD_BYTES)
                except (OSError, InvalidArgument):
                    continue
                if marker in head:
                    out.append(j)
        else:
            j = p if p.suffix == ".json" else p.with_suffix(".json")
            if not j.exists():
                raise CaseError(f"{p}: no such case or directory")
            out.append(j)
    return out


class ProgressBar:
    """A tiny text progress bar on a stream (stderr), redrawn in place with ``\\r``."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 30, enabled: bool = True) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.stream = stream or sys.stderr
        self.width, self.enabled = width, enabled
        self.t0 = time.perf_counter()

    def update(self, ok: bool) -> None:
        """Count one finished case (``ok``: it passed) and redraw the bar."""
        self.done += 1
        self.failed += 0 if ok else 1
        if self.enabled:
            frac = self.done / max(self.total, 1)
            fill = int(frac * self.width)
            self.stream.write(f"\r[{'#' * fill}{'.' * (self.width - fill)}] {self.done}/{self.total} "
                              f"{self.failed} failed {time.perf_counter() - self.t0:6.1f}s")
            self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _run_path(path: str, knobs: dict[str, Any] | None, backend: str, max_diffs: int = 1) -> CaseResult:
    """Load and replay one case; the result keeps the first ``max_diffs`` differing bytes and no copy of the
    case's data (:func:`q7emu.machine.report.keep_detail`)."""
    t0 = time.perf_counter()
    try:
        case = load_case(path)
    except Q7Error as e:
        return CaseResult(Path(path).stem, path, -1, False, 0, time.perf_counter() - t0,
                          error=f"{type(e).__name__}: {e}")
    return keep_detail(case, run_case(case, knobs=knobs, backend=backend), max_diffs)


def _run_path_task(task: tuple[Any, ...]) -> CaseResult:
    """One replay task of :func:`q7emu.machine.workers.run_tasks`: (path, knobs, backend[, max_diffs])."""
    return _run_path(*task)


def replay(paths: Iterable[str | os.PathLike], jobs: int = 1, knobs: dict[str, Any] | None = None,
           backend: str = "kernel", progress: bool | None = None, stream: TextIO | None = None,
           max_diffs: int = 1) -> list[CaseResult]:
    """Replay every case under ``paths``; results in the order the cases were found.

    ``jobs`` > 1 runs cases in worker processes (:mod:`q7emu.machine.workers`): a worker that dies fails only
    the case it was running, after one retry. Ctrl-C stops within a second and raises
    :class:`~q7emu.machine.workers.Interrupted` whose ``results`` are the cases that finished, in order.
    ``progress`` None = a bar on stderr when there are at least :data:`PROGRESS_THRESHOLD` cases and stderr is
    a terminal; True / False force it on / off.

    Memory is bounded by what one case needs, not by how many fail (docs/limits.md §5): each result keeps the
    first ``max_diffs`` (0..:data:`~q7emu.machine.report.MAX_DIFFS`) differing bytes of its case, with
    their hexdump rows, in ``diffs`` and no copy of the case's data; over the whole replay at most
    :data:`~q7emu.machine.report.MAX_REPORT_DIFFS` are kept (the cases latest in order then keep none and
    say so, ``diffs_omitted``)."""
    files = [str(p) for p in find_cases(paths)]
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise CaseError(f"--jobs must be an integer >= 1, got {jobs!r}")
    if isinstance(max_diffs, bool) or not isinstance(max_diffs, int) or not 0 <= max_diffs <= MAX_DIFFS:
        raise InvalidArgument("max_diffs", max_diffs if isinstance(max_diffs, int) else type(max_diffs).__name__,
                              f"must be an integer in 0..{MAX_DIFFS} differing bytes per case (docs/limits.md §5)")
    if progress is None:
        out = stream or sys.stderr
        progress = len(files) >= PROGRESS_THRESHOLD and bool(getattr(out, "isatty", lambda: False)())
    bar = ProgressBar(len(files), stream, enabled=progress)
    results: list[CaseResult | None] = [None] * len(files)
    kept: dict[int, int] = {}                 # case index -> differing bytes its result lists
    cutoff = [len(files)]                     # cases from this index on list none (the report's budget is spent)

    def take(i: int, r: CaseResult | TaskFailure) -> None:
        if isinstance(r, TaskFailure):        # the worker died (twice) or raised: this case fails, only this one
            r = CaseResult(Path(files[i]).stem, files[i], -1, False, 0, 0.0, error=f"worker failed: {r.reason}")
        results[i] = r
        if r.diffs:
            kept[i] = len(r.diffs)
            total = sum(kept.values())
            if i >= cutoff[0]:
                total = _omit(i, total)
            while total > MAX_REPORT_DIFFS:   # drop the latest cases' detail: the same ones whatever the order
                last = max(kept)
                total = _omit(last, total)
                cutoff[0] = min(cutoff[0], last)
        bar.update(r.ok)

    def _omit(i: int, total: int) -> int:
        r = results[i]
        assert r is not None
        r.diffs, r.diffs_omitted = [], True
        return total - kept.pop(i)

    try:
        run_tasks(_run_path_task, [(f, knobs, backend, max_diffs) for f in files], jobs, take)
    except Interrupted as e:
        bar.close()
        raise Interrupted(e.done, e.total, [r for r in results if r is not None]) from None
    bar.close()
    return [r for r in results if r is not None]


def format_row(r: CaseResult) -> str:
    """``OPCODE  PATH  BYTES  PASS|FAIL  TIME`` plus, for a failure, an indented detail line."""
    op = f"0x{r.opcode:02x}" if r.opcode >= 0 else "  ? "
    row = f"{op}  {r.path}  {r.nbytes:7d} B  {r.status}  {r.seconds * 1000:8.1f} ms"
    if r.mismatch is not None:
        row += "\n      " + r.mismatch.describe()
    elif r.error:
        row += "\n      " + r.error
    return row
