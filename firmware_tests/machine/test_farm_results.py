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
from q7emu.machine.workers import TaskFailure


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

    def submit(self, apply_chunk, fn, items, *, pure, key):
        items = tuple(items)
        self.submitted.append(items)
        events = self.plan.get((items, self.submitted.count(items)), [])
        return StandInFuture(key, apply_chunk(fn, items), events)

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
