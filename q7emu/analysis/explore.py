"""Model exploration: which knob values reproduce captured device output?

``explore(cases)`` replays every case under every combination of the model knobs (docs/model.md) that apply to
it, on the emulated kernels (never the golden models), and reports:

* the knob combinations that reproduce every expected byte of every case;
* when none does, the best combinations ranked by matching bytes, each with its first mismatch;
* per knob, the values consistent with all cases (and, when nothing explains everything, the values no
  single case rules out);
* combinations that give identical bytes on every case are grouped: on this evidence they cannot be told
  apart, and are reported as one candidate with all its members.

Which knobs apply (a case is replayed only under the knobs its bytes can depend on; the registry entry of
the record's kernel says which, :meth:`q7emu.registry.KernelEntry.knobs_for`):

* 0x7b TensorDequantize: ``nibble_order`` for the 4-bit formats (fmt 1-3), ``fp6_packing`` for fmt 4,
  ``mx_layout`` and ``mx_scale`` for group 8, ``nf4_table`` for fmt 3;
* 0xE3 QuantizeMX: ``emax`` x ``underflow`` x ``nonfinite`` (the scale layout is fixed by the record).

A global combination assigns a value to every knob that applies to some case; its score on a case is the
score of its restriction to that case's knobs, so each case runs once per combination of *its* knobs.
"""
from __future__ import annotations

import hashlib
import itertools
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np

from q7emu._dataclass import dataclass
from q7emu.errors import CaseError, InvalidArgument, Q7Error
from q7emu.fileio import read_json
from q7emu.isa.enums import Generation
from q7emu.isa.opcodes import find_spec
from q7emu.isa.records import decode_record, parse_hex
from q7emu.machine.cases import Case, Mismatch, compare, error_outcome, load_case, ran_outcome
from q7emu.machine.machine import MACHINE_KNOBS, Machine, Region, normalize_machine_knobs
from q7emu.machine.replay import ProgressBar, find_cases
from q7emu.machine.report import NOT_RUN
from q7emu.machine.workers import Interrupted, TaskFailure, TaskNotRun, run_tasks

#: order of knobs in reports
KNOB_ORDER = tuple(MACHINE_KNOBS)
#: progress bar when at least this many replays run (and stderr is a terminal, unless forced)
PROGRESS_THRESHOLD = 64


# ---------------------------------------------------------------------- which knobs apply
def case_kernel(case: Case) -> tuple[str, tuple[str, ...]]:
    """(kernel name, the knobs whose value can change this record's bytes) of a case's record, its opcode spec's
    (q7emu.isa.opcodes; for 0x7B the registry entry's ``knobs_for(fmt, group)``); ('', ()) when the record runs no
    modelled kernel (an opcode without a spec, an invalid format / group pair, 64 bytes that do not decode)."""
    try:
        r = decode_record(bytes(case.record))
        spec = find_spec(r)
    except (TypeError, ValueError):        # not bytes, not 64 of them (InvalidArgument is a ValueError)
        return "", ()
    entry = spec.kernel(r) if spec is not None else None
    if spec is None or entry is None:
        return "", ()
    return entry.name, spec.record_knobs(r)


def applicable_knobs(case: Case) -> tuple[str, ...]:
    """The knobs whose value can change this case's bytes (docs/model.md §1-§2; :func:`case_kernel`), in
    KNOB_ORDER."""
    names = set(case_kernel(case)[1])
    return tuple(k for k in KNOB_ORDER if k in names)


def parse_knob_space(items: Iterable[str] | dict[str, Sequence[str]] | None) -> dict[str, tuple[str, ...]] | None:
    """``["mx_layout=scale-first,scale-last", "emax"]`` (a bare name = all its values) or a dict -> knob space."""
    if items is None:
        return None
    # (name, values) as given: a caller's dict may hold anything, so both are checked below
    pairs: list[tuple[object, object]]
    if isinstance(items, dict):
        pairs = list(items.items())
    else:
        pairs = []
        for it in items:
            if not isinstance(it, str):
                raise InvalidArgument("knobs", type(it).__name__, "each item is a NAME or NAME=V1,V2 string")
            name, _, text = it.partition("=")
            pairs.append((name.strip(), [v.strip() for v in text.split(",") if v.strip()] if text else None))
    out: dict[str, tuple[str, ...]] = {}
    for key, given in pairs:
        if not isinstance(key, str) or key not in MACHINE_KNOBS:
            raise InvalidArgument("knob", key if isinstance(key, (str, int)) else type(key).__name__,
                                  f"unknown knob; known: {', '.join(MACHINE_KNOBS)}")
        if isinstance(given, str):
            given = (given,)
        if given is not None and not isinstance(given, (list, tuple)):
            raise InvalidArgument(key, type(given).__name__, "knob values are a list of strings")
        vals: list[str] = []
        for v in given or MACHINE_KNOBS[key]:
            if not isinstance(v, str) or v not in MACHINE_KNOBS[key]:
                raise InvalidArgument(key, v if isinstance(v, (str, int, float)) else type(v).__name__,
                                      f"must be one of {', '.join(MACHINE_KNOBS[key])}")
            vals.append(v)
        out[key] = tuple(dict.fromkeys(out.get(key, ()) + tuple(vals)))
    return out


# ---------------------------------------------------------------------- results
@dataclass
class Run:
    """One case under one combination of its knobs."""

    matched: int
    """Expected bytes the run reproduced (0 when the record raised an error the case did not expect)."""
    total: int
    """Expected bytes of the case (bytes)."""
    ok: bool
    """The case passes under this combination: every expected byte, or the error the case expects."""
    digest: str
    """What the run produced, for grouping combinations: blake2b-96 hex of the bytes in the expected regions; ``E``
    + the hash of the error for a raised error; ``R`` for a run the case says should have raised."""
    mismatch: Mismatch | None = None
    """The first differing byte, when bytes differ."""
    error: str | None = None
    """Why the run fails without a byte compare (an unexpected or a missing error), else None."""


@dataclass
class CaseInfo:
    """What explore reports about one case: name, path, opcode, kernel name, the knobs explored and
    the expected bytes."""

    name: str
    path: str
    opcode: int
    kernel: str
    knobs: tuple[str, ...]            # the knobs explored for this case
    nbytes: int


@dataclass
class Candidate:
    """A set of combinations that give identical bytes on every case (one member when distinguishable)."""

    members: list[dict[str, str]]
    matched: int
    total: int
    cases_ok: int
    # {"case", "path", "partition", "offset", "expected", "actual", "count"} or error
    first_mismatch: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True when the combinations reproduce every expected byte of every case."""
        return self.first_mismatch is None

    def summary(self, knobs: Sequence[str]) -> str:
        """Members as ``knob=v1|v2`` when they form a product, else listed."""
        return summarize(self.members, knobs)

    def to_json(self) -> dict[str, Any]:
        """JSON form: members, matched / total bytes, cases reproduced, first mismatch, indistinguishable."""
        return {"members": self.members, "matched_bytes": self.matched, "total_bytes": self.total,
                "cases_reproduced": self.cases_ok, "first_mismatch": self.first_mismatch,
                "indistinguishable": len(self.members) > 1}


@dataclass
class ExploreResult:
    """The result of :func:`explore`: the cases, the knob space, every candidate (best first), per-knob
    verdicts, run count and time."""

    cases: list[CaseInfo]
    space: dict[str, tuple[str, ...]]           # the knobs explored and their values
    candidates: list[Candidate]                 # every combination, grouped by identical bytes, best first
    runs: int
    seconds: float
    jobs: int
    per_knob: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def consistent(self) -> list[dict[str, str]]:
        """Every combination that reproduces every expected byte of every case."""
        return [m for c in self.candidates if c.ok for m in c.members]

    @property
    def explained(self) -> bool:
        """True when some combination reproduces every case."""
        return bool(self.consistent)

    @property
    def total_bytes(self) -> int:
        """Expected bytes over all cases."""
        return sum(c.nbytes for c in self.cases)

    def best(self, n: int = 5) -> list[Candidate]:
        """The ``n`` best candidates (most matching bytes first)."""
        return self.candidates[:n]

    def to_json(self, best: int = 10) -> dict[str, Any]:
        """The result as a JSON-serialisable dict (``best`` candidates listed in full)."""
        return {"cases": [vars(c) | {"knobs": list(c.knobs)} for c in self.cases],
                "space": {k: list(v) for k, v in self.space.items()},
                "combinations": int(np.prod([len(v) for v in self.space.values()])) if self.space else 1,
                "runs": self.runs, "seconds": round(self.seconds, 3), "jobs": self.jobs,
                "explained": self.explained, "consistent": self.consistent,
                "consistent_groups": [c.to_json() for c in self.candidates if c.ok],
                "best": [c.to_json() for c in self.candidates[:best]],
                "per_knob": self.per_knob, "errors": self.errors}

    def format(self, best: int = 5) -> str:
        """Human-readable report (``best`` candidates shown when nothing reproduces)."""
        ks = list(self.space)
        ncomb = int(np.prod([len(v) for v in self.space.values()])) if self.space else 1
        lines = [f"{len(self.cases)} case(s), {self.total_bytes} expected bytes; knobs explored: "
                 + (", ".join(f"{k} ({'|'.join(v)})" for k, v in self.space.items()) or "none")
                 + f"; {ncomb} combination(s), {self.runs} kernel runs, {self.seconds:.2f} s"]
        for e in self.errors:
            lines.append(f"  error: {e}")
        ok = [c for c in self.candidates if c.ok]
        if ok:
            lines.append(f"REPRODUCED by {sum(len(c.members) for c in ok)} combination(s):")
            for c in ok:
                tag = (f"  [{len(c.members)} combinations, identical bytes on these cases: indistinguishable]"
                       if len(c.members) > 1 else "")
                lines.append(f"  {c.summary(ks)}{tag}")
        else:
            lines.append("NOT REPRODUCED by any combination; best candidates (matching bytes):")
            for i, c in enumerate(self.candidates[:best], 1):
                tag = f"  [{len(c.members)} indistinguishable]" if len(c.members) > 1 else ""
                lines.append(f"  {i}. {c.matched}/{c.total} bytes, {c.cases_ok}/{len(self.cases)} cases: "
                             f"{c.summary(ks)}{tag}")
                lines.append(f"     {describe_mismatch(c.first_mismatch)}")
        lines.append("per knob:")
        for k in ks:
            pk = self.per_knob.get(k, {})
            cons = pk.get("consistent", [])
            if ok:
                verdict = (f"= {cons[0]} (the only value explored)" if len(self.space[k]) == 1 and cons else
                           "undetermined (every value fits)" if len(cons) == len(self.space[k])
                           else ("= " + cons[0] if len(cons) == 1 else "one of " + ", ".join(cons)))
                lines.append(f"  {k:<13} {verdict}")
            else:
                nro = pk.get("not_ruled_out", [])
                lines.append(f"  {k:<13} no value explains every case; not ruled out by any single case: "
                             + (", ".join(nro) or "none"))
        return "\n".join(lines)


def describe_mismatch(m: dict[str, Any] | None) -> str:
    """One line for a candidate's first mismatch (a Candidate.first_mismatch dict; None = reproduces)."""
    if m is None:
        return "reproduces every byte"
    if m.get("error"):
        return f"{m['case']}: {m['error']}"
    return (f"first mismatch: {m['case']} partition {m['partition']} byte 0x{m['offset']:x}: expected "
            f"0x{m['expected']:02x}, got 0x{m['actual']:02x} ({m['count']} byte{'s' if m['count'] != 1 else ''} "
            f"differ)")


def summarize(members: list[dict[str, str]], knobs: Sequence[str]) -> str:
    """Combinations as ``knob=v1|v2 ...`` when they form a full product over ``knobs``, else each listed."""
    if not members:
        return "-"
    sets = {k: list(dict.fromkeys(m[k] for m in members)) for k in knobs}
    if int(np.prod([len(v) for v in sets.values()])) == len(members):
        return " ".join(f"{k}={'|'.join(v)}" for k, v in sets.items()) or "(no knobs)"
    return "; ".join(" ".join(f"{k}={m[k]}" for k in knobs) for m in members)


# ---------------------------------------------------------------------- running
def _prepared(case: Case, sb: np.ndarray | None = None) -> np.ndarray:
    """The case's initial SBUF. With fill 0 the untouched pages stay unmapped (np.zeros), so only the
    input regions cost memory traffic; `sb` (a zeroed SBUF, e.g. a fresh Machine's) is filled in place."""
    if sb is None:
        sb = np.zeros((128, case.partition_bytes), dtype=np.uint8)
    if case.fill:
        sb[:] = case.fill
    for reg, arr in case.inputs:
        sb[reg.partition:reg.partition + reg.count, reg.offset:reg.offset + reg.length] = arr
    return sb


def run_combo(case: Case, knobs: dict[str, str], base: np.ndarray | None = None,
              machine: Machine | None = None) -> Run:
    """Replay ``case`` on the emulated kernels under ``knobs`` (over the case's own knobs).

    With ``machine`` (whose SBUF holds ``base``), the machine is reused: its knobs are set for this run
    and the regions the run wrote are restored from ``base`` afterwards (no fresh 24 MiB SBUF per run)."""
    kn = dict(case.knobs)
    kn.update(knobs)
    total = case.expected_bytes
    written: list[Region] = []
    try:
        if machine is None:
            m = Machine(case.generation, case.partition_bytes, kn, backend="kernel")
            m.sbuf[:] = _prepared(case) if base is None else base
        else:
            m = machine
            m.knobs = normalize_machine_knobs(kn)
        written = m.execute(case.record).regions
    except Q7Error as e:
        ok, err = error_outcome(case, e)
        msg = f"{type(e).__name__}: {e}"
        return Run(total if ok else 0, total, ok, "E" + hashlib.blake2b(msg.encode(), digest_size=12).hexdigest(),
                   None, err)
    try:
        err = ran_outcome(case)
        if err is not None:
            return Run(0, total, False, "R", None, err)
        h = hashlib.blake2b(digest_size=12)
        matched = 0
        for reg, exp in case.expected:
            act = m.sbuf[reg.partition:reg.partition + reg.count, reg.offset:reg.offset + reg.length]
            matched += int(np.count_nonzero(act == exp))
            h.update(np.ascontiguousarray(act).tobytes())
        mm = compare(case.expected, m.sbuf) if matched != total else None
        return Run(matched, total, mm is None, h.hexdigest(), mm)
    finally:
        if machine is not None and base is not None:
            for r in written:       # undo this run's writes for the next combination
                sl = (slice(r.partition, r.partition + r.count), slice(r.offset, r.offset + r.length))
                m.sbuf[sl] = base[sl]


#: a case's runs: (its index, its applicable knobs, the value combinations of those knobs to run)
_Task: TypeAlias = tuple[int, tuple[str, ...], list[tuple[str, ...]]]


def _case_combos(case_knobs: Sequence[str], space: dict[str, tuple[str, ...]]) -> list[tuple[str, ...]]:
    ks = [k for k in case_knobs if k in space]
    return list(itertools.product(*(space[k] for k in ks)))


#: case files already loaded in this process, least recently used first: path -> (stamp of the .json and
#: .npz, Case, bytes of array data); at most CASE_CACHE_BYTES of array data in all (docs/limits.md §5)
_CASE_CACHE: OrderedDict[str, tuple[tuple[tuple[int, ...], tuple[int, ...]], Case, int]] = OrderedDict()
#: the most case array data (inputs + expected) the explore case cache of one process keeps
CASE_CACHE_BYTES = 256 << 20


def _stamp(p: Path) -> tuple[int, ...]:
    """What changes whenever a file's content can have changed: device, inode (a file renamed over it), size,
    mtime and ctime (``cp -p`` keeps the mtime, but no one can set the ctime)."""
    try:
        st = p.stat()
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        return ()


#: guards _CASE_CACHE: explore may run in several threads of one process (each explore(jobs=1) loads its cases
#: here), and an OrderedDict changed while another thread walks it raises
_CASE_CACHE_LOCK = threading.Lock()


def _load_cached(path: str) -> Case:
    """load_case, reusing this process's earlier load while the case's files are unchanged (thread-safe)."""
    j = Path(path) if str(path).endswith(".json") else Path(str(path) + ".json")
    key = (_stamp(j), _stamp(j.with_suffix(".npz")))
    with _CASE_CACHE_LOCK:
        hit = _CASE_CACHE.get(str(path))
        if hit is not None and hit[0] == key and key[0]:
            _CASE_CACHE.move_to_end(str(path))
            return hit[1]
        _CASE_CACHE.pop(str(path), None)
    case = load_case(path)                # outside the lock: other threads' hits do not wait for a load
    size = sum(a.nbytes for _, a in case.inputs) + sum(a.nbytes for _, a in case.expected)
    if key[0] and size <= CASE_CACHE_BYTES:
        with _CASE_CACHE_LOCK:
            _CASE_CACHE[str(path)] = (key, case, size)
            while sum(v[2] for v in _CASE_CACHE.values()) > CASE_CACHE_BYTES:
                _CASE_CACHE.popitem(last=False)
    return case


def _work_task(arg: tuple[tuple[int, tuple[str, ...], list[tuple[str, ...]]], Any]
               ) -> tuple[int, list[Run], str | None]:
    """Run one case's task ((case index, knob names, value tuples), the Case or its path) -> (case index, runs,
    load error); a task of :func:`q7emu.machine.workers.run_tasks`."""
    (idx, names, combos), item = arg
    try:
        case = item if isinstance(item, Case) else _load_cached(item)
    except Q7Error as e:
        return idx, [], f"{item}: {e}"
    base = _prepared(case)
    try:
        machine = Machine(case.generation, case.partition_bytes, case.knobs, backend="kernel")
        _prepared(case, machine.sbuf)
    except Q7Error:
        machine = None       # run_combo reports the error per combination
    return idx, [run_combo(case, dict(zip(names, c)), base, machine) for c in combos], None


def _as_items(cases: Any) -> list[Any]:
    """Cases and case paths (strings) from a Case, a path, a directory, or a list of them."""
    if isinstance(cases, (str, os.PathLike, Case)):
        cases = [cases]
    items: list[Any] = []
    for c in cases:
        if isinstance(c, Case):
            items.append(c)
        else:
            items.extend(str(p) for p in find_cases([c]))
    return items


def _meta(item: Any) -> Case:
    """A case with its record (inputs / expected not needed) for planning: cheap for paths (JSON only)."""
    if isinstance(item, Case):
        return item
    try:
        meta = read_json(item)                   # bounded: docs/limits.md §1
        rec = parse_hex(meta["record_hex"])
        gen = Generation.parse(meta["generation"])
        knobs = meta.get("knobs") or {}
        if not isinstance(knobs, dict) or len(rec) != 64:
            raise CaseError("malformed")
        normalize_machine_knobs(knobs)
        err = meta.get("expected_error")
        if err is not None and not isinstance(err, str):
            raise CaseError("malformed")
    except Exception:
        return load_case(item)   # raises a proper CaseError
    c = Case(str(meta.get("name") or Path(item).stem), gen, rec, [], [], dict(knobs), path=Path(item))
    c.expected_error = err
    return c


def _plan(metas: list[Case], restrict: dict[str, tuple[str, ...]] | None
          ) -> tuple[list[CaseInfo], list[_Task], dict[str, tuple[str, ...]]]:
    """(each case's info, each case's task: its index, the knobs that vary for it and their combinations, the knob
    space in KNOB_ORDER): a case varies the knobs that apply to it (``restrict``: only those, over those values)."""
    infos: list[CaseInfo] = []
    tasks: list[_Task] = []
    space: dict[str, tuple[str, ...]] = {}
    for i, c in enumerate(metas):
        app = applicable_knobs(c)
        if restrict is not None:
            app = tuple(k for k in app if k in restrict)
        for k in app:
            space.setdefault(k, restrict[k] if restrict is not None else MACHINE_KNOBS[k])
        kernel = case_kernel(c)[0]
        infos.append(CaseInfo(c.name, str(c.path or c.name), c.opcode, kernel, app, 0))
        tasks.append((i, app, _case_combos(app, space)))
    return infos, tasks, {k: space[k] for k in KNOB_ORDER if k in space}


def explore(cases: Any, knobs: Any = None, jobs: int = 1, progress: bool | None = None,
            stream: Any = None, dask: Any = None, dask_timeout: float | None = None) -> ExploreResult:
    """Explore the knob space on ``cases`` (Case objects, case files or directories).

    knobs: None (every applicable knob, every value), or ``{"name": ["v1", "v2"]}`` / ``["name=v1,v2", ...]``:
    only those knobs vary (over those values; a bare name = all values), the others keep each case's value.
    jobs: worker processes (:mod:`q7emu.machine.workers`: persistent, kept for later calls in the same process,
    so only the first call pays for starting them; a dead worker fails only its case, after one retry).
    dask: the address of a Dask scheduler (the ``dask`` extra, :mod:`q7emu.machine.farm`): each case is a
    task that reads its own files on a worker (``jobs`` is then not used); ``dask_timeout``: seconds to reach it
    and its first worker (default :func:`q7emu.machine.farm.connect_seconds`).
    Ctrl-C stops within a second: what finished is written to ``stream`` and
    :class:`~q7emu.machine.workers.Interrupted` is raised."""
    t0 = time.perf_counter()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InvalidArgument("jobs", jobs if isinstance(jobs, int) else type(jobs).__name__, "must be an int >= 1")
    items = _as_items(cases)
    if not items:
        raise CaseError("no cases found")
    infos, tasks, space = _plan([_meta(it) for it in items], parse_knob_space(knobs))
    nruns = sum(len(t[2]) for t in tasks)

    out_stream = stream or sys.stderr
    if progress is None:
        progress = nruns >= PROGRESS_THRESHOLD and bool(getattr(out_stream, "isatty", lambda: False)())
    client = None
    if dask is not None:
        from q7emu.machine.farm import connect

        client = connect(dask, timeout=dask_timeout)
    bar = ProgressBar(nruns, out_stream, enabled=progress, unit="runs")
    results: dict[int, list[Run]] = {}
    load_errors: dict[int, str] = {}

    def take(k: int, res: tuple[int, list[Run], str | None] | TaskFailure | TaskNotRun) -> None:
        if isinstance(res, TaskFailure):      # its worker died (twice) or raised: this case is not run
            res = (tasks[k][0], [], f"{items[tasks[k][0]]}: worker failed: {res.reason}")
        elif isinstance(res, TaskNotRun):     # a farm worker of another q7emu, a lost scheduler (docs/cli.md §4.2)
            res = (tasks[k][0], [], f"{items[tasks[k][0]]}: {NOT_RUN} {res.reason}")
        idx, runs, err = res
        if err:
            load_errors[idx] = err
        results[idx] = runs
        for r in runs:
            bar.update(r.ok)

    order = sorted(range(len(tasks)), key=lambda i: -len(tasks[i][2]))   # largest first: no long tail
    work = [(tasks[i], items[tasks[i][0]]) for i in order]
    try:
        if client is not None:
            from q7emu.machine.farm import run_tasks_dask

            work = [(t, os.path.abspath(it) if isinstance(it, str) else it) for t, it in work]
            run_tasks_dask(_work_task, work, client, lambda k, res: take(order[k], res))
        else:
            run_tasks(_work_task, work, jobs if len(tasks) > 1 else 1, lambda k, res: take(order[k], res))
    except Interrupted as e:
        bar.close()
        runs_done = sum(len(r) for r in results.values())
        out_stream.write(f"explore interrupted: {e.done} of {e.total} cases ({runs_done} of {nruns} kernel runs) "
                         "finished; no verdict (it needs every case)\n")
        out_stream.flush()
        raise
    finally:
        bar.close()
        if client is not None:
            from q7emu.machine.farm import disconnect

            disconnect(client)
    errors = [load_errors[i] for i in sorted(load_errors)]     # in case order, however the workers finished

    for i, info in enumerate(infos):
        runs = results.get(i, [])
        info.nbytes = runs[0].total if runs else 0
    result = _combine(infos, tasks, results, space, errors)
    result.runs, result.jobs = nruns, jobs
    result.seconds = time.perf_counter() - t0
    return result


def _combine(infos: list[CaseInfo], tasks: list[_Task], results: dict[int, list[Run]],
             space: dict[str, tuple[str, ...]], errors: list[str]) -> ExploreResult:
    knobs = list(space)
    total = sum(i.nbytes for i in infos)
    # per case: value tuple (of its knobs) -> Run
    per_case = []
    for (idx, names, combos) in tasks:
        runs = results.get(idx, [])
        per_case.append((names, dict(zip(combos, runs))))
    groups: dict[tuple[str, ...], Candidate] = {}
    order = []
    for vals in itertools.product(*(space[k] for k in knobs)):
        combo = dict(zip(knobs, vals))
        key, matched, cases_ok, first = _combo_outcome(combo, per_case, infos)
        if key not in groups:
            groups[key] = Candidate([], matched, total, cases_ok, first)
            order.append(key)
        groups[key].members.append(combo)
    cands = sorted((groups[k] for k in order), key=lambda c: (-c.matched, -c.cases_ok))
    ok = [m for c in cands if c.ok for m in c.members]
    per_knob = {k: {"consistent": [v for v in space[k] if any(m[k] == v for m in ok)],
                    "not_ruled_out": [v for v in space[k] if _not_ruled_out(k, v, per_case)]} for k in knobs}
    return ExploreResult(infos, space, cands, 0, 0.0, 1, per_knob, errors)


#: per case: the knobs that vary for it, and its run under each of their value tuples
_CaseRuns: TypeAlias = "list[tuple[tuple[str, ...], dict[tuple[str, ...], Run]]]"


def _combo_outcome(combo: dict[str, str], per_case: _CaseRuns, infos: list[CaseInfo]
                   ) -> tuple[tuple[str, ...], int, int, dict[str, Any] | None]:
    """One knob combination over every case: (its signature: each case's output digest, or X for a case that
    could not be loaded; the bytes matched; the cases reproduced; the first case it does not reproduce)."""
    sig: list[str] = []
    matched, cases_ok = 0, 0
    first: dict[str, Any] | None = None
    for ci, (names, table) in enumerate(per_case):
        r = table.get(tuple(combo[k] for k in names))
        if r is None:      # the case could not be loaded
            sig.append("X")
            if first is None:
                first = {"case": infos[ci].name, "path": infos[ci].path, "error": "not run"}
            continue
        sig.append(r.digest)
        matched += r.matched
        if r.ok:
            cases_ok += 1
        elif first is None:
            first = {"case": infos[ci].name, "path": infos[ci].path}
            if r.mismatch is not None:
                first.update(partition=r.mismatch.partition, offset=r.mismatch.offset,
                             expected=r.mismatch.expected, actual=r.mismatch.actual, count=r.mismatch.count)
            else:
                first["error"] = r.error
    return tuple(sig), matched, cases_ok, first


def _not_ruled_out(k: str, v: str, per_case: _CaseRuns) -> bool:
    """Knob ``k`` = ``v`` is not ruled out: every case ``k`` applies to is reproduced by some combination of its
    knobs with k = v."""
    for names, table in per_case:
        if k not in names:
            continue
        pos = names.index(k)
        if not any(r.ok for vals, r in table.items() if vals[pos] == v):
            return False
    return True
