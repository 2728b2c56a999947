"""Replay many cases: find them, run them (optionally in worker processes, :mod:`q7emu.machine.workers`),
show progress, format rows."""
from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterable, MutableMapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from q7emu.errors import CaseError, InternalError, InvalidArgument, Q7Error
from q7emu.fileio import SCAN_HEAD_BYTES, is_regular_file, read_head
from q7emu.machine.cases import CASE_FORMAT, Case, CaseResult, load_case, run_case
from q7emu.machine.heap import keep_freed_memory
from q7emu.machine.machine import Backend
from q7emu.machine.report import (
    MAX_DIFFS,
    MAX_REPORT_DIFFS,
    MAX_REPORT_MAP_ENTRIES,
    NOT_RUN,
    keep_detail,
    map_entries,
)
from q7emu.machine.workers import Interrupted, TaskFailure, TaskNotRun, run_tasks

#: show a progress bar when at least this many cases are replayed
PROGRESS_THRESHOLD = 16


def find_cases(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
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


#: the progress bar's layout (tqdm ``bar_format``): ``[#####.....] 12/60 1 failed [00:03<00:12, 4.10 cases/s]``;
#: scripts and tests read ``] DONE/TOTAL `` from it
BAR_FORMAT = "{desc}[{bar:30}] {n_fmt}/{total_fmt} {failed} failed [{elapsed}<{remaining}, {rate_text}]"


def _tqdm_class() -> Any:
    """tqdm with a ``{failed}`` field for :data:`BAR_FORMAT` (imported when a bar is shown)."""
    from tqdm import tqdm

    class Bar(tqdm):  # type: ignore[type-arg]  # generic only in types-tqdm's stub: tqdm[Any] fails at runtime
        failed = 0
        #: no monitor thread: its atexit hook would print a traceback when a second Ctrl-C lands at exit
        monitor_interval = 0

        @property
        def format_dict(self) -> MutableMapping[str, Any]:
            d = super().format_dict
            d["failed"] = self.failed
            n, t, unit = d["n"], d["elapsed"], str(d["unit"]).strip()
            d["rate_text"] = f"{n / t:.1f} {unit}/s" if n and t else f"? {unit}/s"
            return d
    return Bar


class ProgressBar:
    """The replay / explore progress bar on a stream (stderr): tqdm, with the rate and the time left, and how
    many finished items failed. tqdm is imported only when the bar is shown."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 30, enabled: bool = True,
                 unit: str = "cases") -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self._bar: Any = None
        if enabled:
            self._bar = _tqdm_class()(total=total, file=self.stream, ascii=".#", unit=" " + unit, leave=True,
                                      bar_format=BAR_FORMAT.replace("{bar:30}", f"{{bar:{width}}}"),
                                      dynamic_ncols=False, mininterval=0.1)

    def update(self, ok: bool) -> None:
        """Count one finished item (``ok``: it passed) and redraw the bar (at most every 0.1 s)."""
        self.done += 1
        self.failed += 0 if ok else 1
        if self._bar is not None:
            self._bar.failed = self.failed
            self._bar.update(1)

    def close(self) -> None:
        """Draw the bar's last state and end its line (idempotent)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def load_or_result(path: str) -> Case | CaseResult:
    """The case at ``path``, or the ERROR :class:`CaseResult` of a case file that cannot be read (its error
    ``CaseError: ...``): the first half of :func:`replay_one`, shared with the pytest plugin, which reports such
    a file as an error of the item's set-up."""
    t0 = time.perf_counter()
    try:
        return load_case(path)
    except Q7Error as e:
        return CaseResult(Path(path).stem, path, -1, False, 0, time.perf_counter() - t0,
                          error=f"{type(e).__name__}: {e}")


def replay_loaded(case: Case, knobs: dict[str, Any] | None = None, backend: Backend = "kernel", max_diffs: int = 1,
                  diff_map: bool = False) -> CaseResult:
    """Run a loaded case and keep its detail where it ran (:func:`q7emu.machine.report.keep_detail`: its first
    ``max_diffs`` differing bytes with their hexdump rows, values and source, with ``diff_map`` its diff map,
    and no copy of its data): the second half of :func:`replay_one`, shared with the pytest plugin."""
    return keep_detail(case, run_case(case, knobs=knobs, backend=backend), max_diffs, knobs, diff_map=diff_map)


def replay_one(path: str, knobs: dict[str, Any] | None = None, backend: Backend = "kernel", max_diffs: int = 1,
               diff_map: bool = False) -> CaseResult:
    """Replay the case file at ``path``: the core that ``q7emu replay`` (in this process, in worker processes or
    on a Dask cluster) and the pytest plugin (``pytest --q7emu-cases``) share. Never raises for a bad case: a
    file that cannot be read is an ERROR result, a record that fails a FAIL result. The result carries its
    first ``max_diffs`` differing bytes explained (and with ``diff_map`` its diff map), computed here, where the
    case's data is, and no copy of that data (docs/limits.md §5)."""
    got = load_or_result(path)
    if isinstance(got, CaseResult):
        return got
    return replay_loaded(got, knobs, backend, max_diffs, diff_map)


def _run_path_task(task: tuple[Any, ...]) -> CaseResult:
    """One replay task of :func:`q7emu.machine.workers.run_tasks` / the Dask route: (path, knobs, backend[,
    max_diffs[, diff_map]]), the arguments of :func:`replay_one`."""
    return replay_one(*task)


#: ``--shard``: I/N written in ASCII decimal digits only, at most 18 each (Python's int() also takes " 2", "+2",
#: "2_0" and other scripts' digits, which a script's I/N never means)
_SHARD = re.compile(r"([0-9]{1,18})/([0-9]{1,18})")


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (shard I of N, 1 <= I <= N, ASCII digits) -> (I, N); InvalidArgument naming ``--shard`` for anything
    else: an empty value (``--shard "$SHARD"`` with SHARD unset must not run every case everywhere), spaces, signs,
    underscores, other digits."""
    m = _SHARD.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        shown_text = text if isinstance(text, str) and len(text) <= 40 else type(text).__name__
        raise InvalidArgument("--shard", shown_text, "must be I/N, shard I of N in decimal digits (e.g. 2/4)")
    i, n = int(m.group(1)), int(m.group(2))
    if not 1 <= i <= n:
        raise InvalidArgument("--shard", text, "must be I/N with 1 <= I <= N")
    return i, n


def shard(files: Sequence[str], index: int, count: int) -> list[str]:
    """Shard ``index`` of ``count`` (1-based) of ``files``: every count-th file from the index-th, in the
    order given (the sorted order :func:`find_cases` finds them in), so N machines that list the same folder
    split it the same way, into shards whose sizes differ by at most one."""
    if not 1 <= index <= count:
        raise InvalidArgument("shard", f"{index}/{count}", "must be I/N with 1 <= I <= N")
    return list(files)[index - 1::count]


def _check_replay_args(jobs: Any, max_diffs: Any) -> None:
    """CaseError for a ``jobs`` that is not an int >= 1, InvalidArgument for a ``max_diffs`` outside 0..MAX_DIFFS."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise CaseError(f"--jobs must be an integer >= 1, got {jobs!r}")
    if isinstance(max_diffs, bool) or not isinstance(max_diffs, int) or not 0 <= max_diffs <= MAX_DIFFS:
        raise InvalidArgument("max_diffs", max_diffs if isinstance(max_diffs, int) else type(max_diffs).__name__,
                              f"must be an integer in 0..{MAX_DIFFS} differing bytes per case (docs/limits.md §5)")


def replay(paths: Iterable[str | os.PathLike[str]], jobs: int = 1, knobs: dict[str, Any] | None = None,
           backend: Backend = "kernel", progress: bool | None = None, stream: TextIO | None = None,
           dask: str | None = None, max_diffs: int = 1, diff_maps: bool = False,
           dask_timeout: float | None = None) -> list[CaseResult]:
    """Replay every case under ``paths``; results in the order the cases were found.

    ``jobs`` > 1 runs cases in worker processes (:mod:`q7emu.machine.workers`): a worker that dies fails only the
    case it was running, after one retry. ``dask``: the address of a Dask scheduler (the ``dask`` extra,
    :mod:`q7emu.machine.farm`); each case is a task that reads its own files on a worker (``jobs`` is then not
    used); ``dask_timeout``: seconds to reach it and its first worker (default
    :func:`~q7emu.machine.farm.connect_seconds`). Ctrl-C stops within a second and raises
    :class:`~q7emu.machine.workers.Interrupted` whose ``results`` are the cases that finished, in order.
    ``progress`` None = a bar on stderr when there are at least :data:`PROGRESS_THRESHOLD` cases and stderr is a
    terminal; True / False force it on / off.

    The C heap keeps the large arrays a case frees for the next one (:func:`q7emu.machine.heap.keep_freed_memory`,
    called first: a bad ``Q7EMU_HEAP`` raises InvalidArgument). Memory is bounded by what one case needs, not by
    how many fail (docs/limits.md §5): each case runs in
    :func:`replay_one` (here, in a worker process or on a Dask worker), whose result keeps the first
    ``max_diffs`` (0..:data:`~q7emu.machine.report.MAX_DIFFS`) differing bytes of its case, with their hexdump
    rows, values and source, in ``diffs`` (with ``diff_maps``, the case's diff map in ``diff_map``) and no copy
    of the case's data; over the whole replay at most :data:`~q7emu.machine.report.MAX_REPORT_DIFFS` listed
    bytes and :data:`~q7emu.machine.report.MAX_REPORT_MAP_ENTRIES` diff-map entries are kept (the cases latest
    in order then keep none and say so, ``diffs_omitted``)."""
    files = [str(p) for p in find_cases(paths)]
    _check_replay_args(jobs, max_diffs)
    keep_freed_memory()        # each case reuses the arrays the last one freed (docs/limits.md §5; Q7EMU_HEAP)
    if progress is None:
        out = stream or sys.stderr
        progress = len(files) >= PROGRESS_THRESHOLD and bool(getattr(out, "isatty", lambda: False)())
    client = None
    if dask is not None:
        from q7emu.machine.farm import connect

        # before the bar: a wrong address is one line, not a half-drawn bar
        client = connect(dask, timeout=dask_timeout)
    bar = ProgressBar(len(files), stream, enabled=progress)
    results: list[CaseResult | None] = [None] * len(files)
    kept: dict[int, tuple[int, int]] = {}     # case index -> (differing bytes listed, diff-map entries) it keeps
    used = [0, 0]                             # their sums over the cases in ``kept``
    cutoff = [len(files)]                     # cases from this index on keep none (the report's budget is spent)

    def take(i: int, r: CaseResult | TaskFailure | TaskNotRun) -> None:
        if isinstance(r, TaskFailure):        # the worker died (twice) or raised: this case fails, only this one
            r = CaseResult(Path(files[i]).stem, files[i], -1, False, 0, 0.0, error=f"worker failed: {r.reason}")
        elif isinstance(r, TaskNotRun):       # a farm worker of another q7emu, a lost scheduler: never a verdict
            r = CaseResult(Path(files[i]).stem, files[i], -1, False, 0, 0.0, error=f"{NOT_RUN} {r.reason}")
        r.path = files[i]                     # as found (a Dask worker was given the absolute path)
        results[i] = r
        cost = (len(r.diffs or ()), map_entries(r.diff_map))
        if cost != (0, 0):
            kept[i] = cost
            used[0] += cost[0]
            used[1] += cost[1]
            if i >= cutoff[0]:
                _omit(i)
            while used[0] > MAX_REPORT_DIFFS or used[1] > MAX_REPORT_MAP_ENTRIES:
                last = max(kept)              # drop the latest cases' detail: the same ones whatever the order
                _omit(last)
                cutoff[0] = min(cutoff[0], last)
        bar.update(r.ok)

    def _omit(i: int) -> None:
        r = results[i]
        if r is None:
            raise InternalError(f"replay: the detail of case {i} is kept, but it has no result")
        r.diffs, r.diff_map, r.diffs_omitted = [], None, True
        n, m = kept.pop(i)
        used[0] -= n
        used[1] -= m

    tasks = [(f, knobs, backend, max_diffs, diff_maps) for f in files]
    try:
        if client is not None:
            from q7emu.machine.farm import run_tasks_dask

            run_tasks_dask(_run_path_task, [(os.path.abspath(t[0]), *t[1:]) for t in tasks], client, take)
        else:
            run_tasks(_run_path_task, tasks, jobs, take)
    except Interrupted as e:
        bar.close()
        raise Interrupted(e.done, e.total, [r for r in results if r is not None]) from None
    finally:
        bar.close()
        if client is not None:
            from q7emu.machine.farm import disconnect

            disconnect(client)
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
