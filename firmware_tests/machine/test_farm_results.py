"""A Dask task whose status changes after it finished (q7emu.machine.farm, docs/cli.md §4.2): its worker died
holding its result, so the client's fetch fails and the scheduler runs the task again, and that run may end in
``KilledWorker``. Dask's ``as_completed(with_results=True)`` never returns such a task (the fetch raises inside
its own callback), which hung a run under load; q7emu fetches each result itself and looks at the status again.

The cluster here is a stand-in that plays those events in a fixed order, so each case is deterministic (the real
race needs a worker to die during one fetch); the real two-worker cluster runs in test_farm.py. The stand-in
runs every task at once, so a run that waits for a task which never comes back is reported by the stand-in
(``nothing left to return``) instead of hanging.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from q7emu.machine import farm
from q7emu.machine.workers import TaskFailure, TaskNotRun


class KilledWorker(Exception):
    """Named as Dask's: q7emu recognises the exception by its class name and ``allowed_failures``."""
    allowed_failures = 0


class StandInFuture:
    """One submitted task: it has run (``finished``); each ``result`` call plays the next fetch event.

    Events: ``ok`` returns the value; ``lost`` fails the fetch and the task runs again (status ``lost``; it
    finishes again when re-added); ``killed`` fails the fetch and the rerun ends in KilledWorker (status
    ``error``); ``unreadable`` fails the fetch and the task stays finished."""

    def __init__(self, key: str, value: object, events: list[str]):
        self.key, self.value, self.events = key, value, list(events)
        self.status = "finished"
        self.exc: BaseException | None = None

    def result(self, timeout: float | None = None) -> object:
        event = self.events.pop(0) if self.events else "ok"
        if event == "ok":
            return self.value
        if event == "lost":
            self.status = "lost"
            raise OSError("could not gather the key from its worker")
        if event == "killed":
            self.status, self.exc = "error", KilledWorker("the task's worker died")
            raise self.exc
        assert event == "unreadable"
        raise ValueError("cannot unpickle the result")

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self.exc


class StandInAsCompleted:
    """``distributed.as_completed`` without results: returns each future when it has ended."""

    def __init__(self, futures: list[StandInFuture], loop: object = None):
        self.queue = list(futures)

    def add(self, future: StandInFuture) -> None:
        if future.status == "lost":
            future.status = "finished"              # the scheduler ran it again
        self.queue.append(future)

    def has_ready(self) -> bool:
        assert self.queue, "nothing left to return: the run waits for a task that never ends"
        return True

    def next_batch(self, block: bool = True) -> list[StandInFuture]:
        batch, self.queue = self.queue, []
        return batch


class StandInClient:
    """Runs each submitted chunk at once; ``plan[(items, n)]`` are the fetch events of the n-th submission
    (from 1) of that chunk."""

    loop = None

    def __init__(self, plan: dict[tuple[tuple[int, ...], int], list[str]]):
        self.plan, self.submitted = plan, []

    def submit(self, apply_chunk, fn, items, *args, pure, key):
        items = tuple(items)
        self.submitted.append(items)
        events = self.plan.get((items, self.submitted.count(items)), [])
        return StandInFuture(key, apply_chunk(fn, items, *args), events)

    def scheduler_info(self, n_workers: int = -1) -> dict:
        return {"workers": {"stand-in": {"nthreads": 1}}}

    def cancel(self, futures, force: bool = False) -> None:
        pass


def times_ten(k: int) -> int:
    return 10 * k


def collect(monkeypatch, plan, n: int, chunk: int) -> tuple[dict[int, object], list[tuple[int, ...]]]:
    monkeypatch.setattr(farm, "require_distributed", lambda: SimpleNamespace(as_completed=StandInAsCompleted))
    client = StandInClient(plan)
    got: dict[int, object] = {}
    farm.run_tasks_dask(times_ten, list(range(n)), client, got.__setitem__, chunk=chunk)
    return got, client.submitted


@pytest.mark.parametrize("chunk", [1, 3])
def test_a_result_lost_with_its_worker_whose_rerun_is_killed_is_run_again_alone(monkeypatch, chunk):
    first = tuple(range(3, 3 + chunk))
    got, submitted = collect(monkeypatch, {(first, 1): ["killed"]}, 9, chunk)
    assert got == {k: 10 * k for k in range(9)}
    assert [s for s in submitted if s[0] in first] == [first] + [(k,) for k in first]


def test_a_result_lost_with_its_worker_is_read_after_the_rerun(monkeypatch):
    got, submitted = collect(monkeypatch, {((2,), 1): ["lost", "lost"]}, 5, 1)
    assert got == {k: 10 * k for k in range(5)} and submitted == [(k,) for k in range(5)]


def test_a_result_that_cannot_be_read_fails_its_tasks_alone(monkeypatch):
    got, _ = collect(monkeypatch, {((2, 3), 1): ["unreadable"] * farm.FETCH_ATTEMPTS}, 6, 2)
    assert {k: v for k, v in got.items() if k not in (2, 3)} == {k: 10 * k for k in (0, 1, 4, 5)}
    for k in (2, 3):
        assert isinstance(got[k], TaskFailure)
        assert got[k].reason == (f"its result could not be fetched ({farm.FETCH_ATTEMPTS} attempts): "
                                 "ValueError: cannot unpickle the result")


def test_a_killed_rerun_that_is_killed_again_fails_with_its_attempts(monkeypatch):
    got, _ = collect(monkeypatch, {((1,), 1): ["killed"], ((1,), 2): ["killed"]}, 3, 1)
    assert got[0] == 0 and got[2] == 20
    assert isinstance(got[1], TaskFailure) and got[1].reason == "Dask worker process died while running it (2 attempts)"


# ---------------------------------------------------------------------------------------------- farm membership
# A worker that joins after connect is checked by every task it runs, on the worker (issue 41 item 1): the stand-in
# runs a chunk "on a worker of another q7emu" by changing what farm.identity says while the chunk runs.
class ForeignClient(StandInClient):
    """Runs the ``foreign`` submissions (counted from 0) as a worker whose identity is ``change(identity)``."""

    def __init__(self, foreign: set[int], change, check: bool = True):
        super().__init__({})
        self.foreign, self.change, self.check = foreign, change, check

    def submit(self, apply_chunk, fn, items, *args, pure, key):
        items = tuple(items)
        self.submitted.append(items)
        if len(self.submitted) - 1 not in self.foreign:
            return StandInFuture(key, apply_chunk(fn, items, *args), [])
        real = farm.identity
        farm.identity = lambda: self.change(real())
        try:
            value = apply_chunk(fn, items, *(args if self.check else ()))
        finally:
            farm.identity = real
        return StandInFuture(key, value, [])


RAN: list[int] = []


def times_ten_logged(k: int) -> int:
    RAN.append(k)
    return 10 * k


def run_foreign(monkeypatch, client, n=6, chunk=2):
    monkeypatch.setattr(farm, "require_distributed", lambda: SimpleNamespace(as_completed=StandInAsCompleted))
    RAN.clear()
    got: dict[int, object] = {}
    farm.run_tasks_dask(times_ten_logged, list(range(n)), client, got.__setitem__, chunk=chunk)
    return got


def other_version(ident):
    return dict(ident, q7emu_version="9.9.9")


def other_knob_default(ident):
    return dict(ident, machine_knob_defaults=dict(ident["machine_knob_defaults"], emax="alt"))


@pytest.mark.parametrize("change, words", [
    (other_version, "runs q7emu 9.9.9 (this is q7emu "),
    (other_knob_default, "has knob default emax=alt (this q7emu: ocp)")])
def test_a_chunk_on_a_worker_of_another_q7emu_runs_none_of_its_cases(monkeypatch, change, words):
    got = run_foreign(monkeypatch, ForeignClient({1}, change))      # the chunk of tasks 2 and 3
    assert {k: got[k] for k in (0, 1, 4, 5)} == {0: 0, 1: 10, 4: 40, 5: 50}
    assert sorted(RAN) == [0, 1, 4, 5]                      # checked on the worker, before any case of it ran
    for k in (2, 3):
        assert isinstance(got[k], TaskNotRun) and got[k].reason.startswith("a Dask worker ")
        assert words in got[k].reason


def test_a_worker_that_does_not_check_is_refused_by_the_client(monkeypatch):
    """A worker whose q7emu does not check (another version's _apply_chunk) still says, or fails to say, which q7emu
    it is: the client refuses the results of a worker whose identity differs or is missing."""
    got = run_foreign(monkeypatch, ForeignClient({0}, other_version, check=False))
    assert sorted(RAN) == [0, 1, 2, 3, 4, 5]                # it ran them: nothing stopped it on the worker
    assert [type(got[k]).__name__ for k in range(6)] == ["TaskNotRun"] * 2 + ["int"] * 4
    assert "runs q7emu 9.9.9" in got[0].reason

    class OldWorker(StandInClient):                         # an older q7emu: a plain list, no identity
        def submit(self, apply_chunk, fn, items, *args, pure, key):
            self.submitted.append(tuple(items))
            return StandInFuture(key, [(True, fn(i)) for i in items], [])
    got = run_foreign(monkeypatch, OldWorker({}))
    assert all(isinstance(v, TaskNotRun) and "did not say which q7emu it runs" in v.reason for v in got.values())


class CancelledFuture(StandInFuture):
    """A future Dask cancelled when the client lost its scheduler."""

    def __init__(self, key):
        super().__init__(key, None, [])
        self.status = "cancelled"
        self._state = SimpleNamespace(exception=SimpleNamespace(reason="scheduler-connection-lost"))


class LostClient(StandInClient):
    """The scheduler is lost once ``after`` chunks were submitted: the later futures come back cancelled."""

    def __init__(self, after: int):
        super().__init__({})
        self.after = after
        self.scheduler = SimpleNamespace(address="tcp://127.0.0.1:1")

    def submit(self, apply_chunk, fn, items, *args, pure, key):
        self.submitted.append(tuple(items))
        if len(self.submitted) > self.after:
            return CancelledFuture(key)
        return StandInFuture(key, apply_chunk(fn, items, *args), [])


def test_a_lost_scheduler_ends_the_run_with_the_cases_left_not_run(monkeypatch):
    got = run_foreign(monkeypatch, LostClient(after=2), n=8, chunk=2)
    assert {k: got[k] for k in range(4)} == {k: 10 * k for k in range(4)}
    for k in range(4, 8):
        assert isinstance(got[k], TaskNotRun)
        assert got[k].reason == "the Dask scheduler tcp://127.0.0.1:1 was lost (the connection to it closed)"


class NoWorkerAsCompleted(StandInAsCompleted):
    def has_ready(self) -> bool:                            # nothing ever finishes: there is no worker
        return False


class NoWorkerClient(StandInClient):
    def scheduler_info(self, n_workers: int = -1) -> dict:
        return {"workers": {}}

    def submit(self, apply_chunk, fn, items, *args, pure, key):
        return StandInFuture(key, None, [])


def test_no_worker_at_all_ends_the_run_with_every_case_not_run(monkeypatch):
    monkeypatch.setattr(farm, "require_distributed", lambda: SimpleNamespace(as_completed=NoWorkerAsCompleted))
    got: dict[int, object] = {}
    farm.run_tasks_dask(times_ten, list(range(3)), NoWorkerClient({}), got.__setitem__, chunk=1, no_worker_seconds=0)
    assert got == {k: TaskNotRun("no Dask worker for 0 s") for k in range(3)}


def test_explore_on_a_farm_with_a_worker_of_another_q7emu_is_exit_2_in_one_line(monkeypatch, capsys):
    """explore --dask takes the same route: the cases a foreign worker took are not run, never a knob verdict."""
    from pathlib import Path

    from q7emu.cli.main import main
    ex = Path(__file__).resolve().parents[2] / "examples" / "cases" / "cayman"
    monkeypatch.setattr(farm, "require_distributed", lambda: SimpleNamespace(as_completed=StandInAsCompleted))
    monkeypatch.setattr(farm, "connect", lambda address, timeout=None: ForeignClient({0}, other_version))
    code = main(["explore", str(ex / "cayman_7b_proc_4bit_mx_8_e2m1.json"),
                 str(ex / "cayman_7b_proc_4bit_mx_8_int4.json"), "--knobs", "mx_layout", "--dask", "tcp://127.0.0.1:1"])
    out, err = capsys.readouterr()
    assert code == 2 and "not run: a Dask worker runs q7emu 9.9.9" in out, (out, err)
    assert err.strip().splitlines() == [
        f"q7emu: error: --dask tcp://127.0.0.1:1: 1 of 2 cases not run: a Dask worker runs q7emu 9.9.9 (this is q7emu "
        f"{farm.__version__})"]


class NoQ7emuClient(StandInClient):
    """A worker that cannot load the task (no q7emu, or one without its function): the task ends in an error."""

    def submit(self, apply_chunk, fn, items, *args, pure, key):
        self.submitted.append(tuple(items))
        f = StandInFuture(key, None, [])
        f.status, f.exc = "error", ModuleNotFoundError("No module named 'q7emu'")
        return f


def test_a_worker_that_cannot_load_q7emu_runs_none_of_its_cases(monkeypatch):
    """A worker without q7emu that joins late fails to unpickle every task it takes: its cases are not run (exit 2),
    never 'worker failed', q7emu's own bug (exit 3)."""
    got = run_foreign(monkeypatch, NoQ7emuClient({}), n=2, chunk=1)
    assert got == {k: TaskNotRun("a Dask worker cannot load q7emu's task (ModuleNotFoundError: No module named "
                                 "'q7emu'); install q7emu (the same wheel) on every worker") for k in range(2)}
