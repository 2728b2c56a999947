"""Replay and explore on a Dask ``distributed`` cluster (``--dask ADDRESS``; the optional ``dask`` extra).

:func:`run_tasks_dask` has the contract of :func:`q7emu.machine.workers.run_tasks`: it calls
``on_result(i, fn(tasks[i]))`` for every task, in completion order, with a
:class:`~q7emu.machine.workers.TaskFailure` for a task that did not return, and raises
:class:`~q7emu.machine.workers.Interrupted` on Ctrl-C. Each task is one Dask task running ``fn`` on a worker; a
task carries a case's path (and the knobs), never its arrays, so every worker reads its own cases from a file
system it shares with the client (the paths are made absolute). Results come back as they finish.

* **Chunks.** A Dask task replays a chunk of up to :data:`MAX_CHUNK` cases (:func:`chunk_size`): the scheduler
  and a worker spend about a millisecond on each task, as much as a small case takes to replay.
* **A worker that dies** (killed, out of memory, its machine gone): the scheduler runs the tasks it held again
  elsewhere until their workers died ``distributed.scheduler.allowed-failures + 1`` times (Dask's default 3),
  then ends them in ``KilledWorker``. Dask counts that death against every task the worker held, also those
  queued behind the one it ran, so q7emu splits a task that ended in ``KilledWorker`` into its cases and runs
  each once more (:data:`RETRIES`) alone, one at a time; a case whose run ends in ``KilledWorker`` again is a
  TaskFailure naming the attempts, and no other case fails with it.
  With ``allowed-failures = 0`` (``DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0`` when starting the scheduler;
  docs/cli.md §4.2) that is ``-j``'s rule: a case whose worker dies is run once more, then fails alone, and
  every other case reports. q7emu does not change a scheduler that other clients share.
* **A result lost with its worker.** A chunk can finish and then lose its result before the client reads it
  (its worker died holding it): the scheduler runs it again, and that run can end otherwise (``KilledWorker``
  when it lands on a worker that dies). q7emu looks at each task's status again after every attempt to fetch its
  result and waits for the task once more while it runs again; a result that cannot be read while its task
  stays finished fails the task after :data:`FETCH_ATTEMPTS` attempts. (``as_completed(with_results=True)``
  never returns such a task: its fetch raises inside Dask's own callback, so the run waited for ever.)
* **No worker at all** for :data:`NO_WORKER_SECONDS` (all of them gone, none started) fails the tasks not yet
  finished instead of waiting for ever.
* **Ctrl-C** cancels every future not yet finished (the scheduler drops them; a task already running on a
  worker runs to its end there, its result unread), closes the client and raises Interrupted, within a second.
* **Another q7emu** on a worker (another version, or none) is refused when connecting, naming the worker.

``distributed`` is imported only here, and only when ``--dask`` is given.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from q7emu._version import __version__
from q7emu.errors import InvalidArgument
from q7emu.machine.workers import Interrupted, TaskFailure, failure_text, sigint_ignored

__all__ = ["CONNECT_SECONDS", "NO_WORKER_SECONDS", "MAX_CHUNK", "RETRIES", "require_distributed", "connect_seconds",
           "connect", "disconnect", "run_tasks_dask", "chunk_size", "worker_info"]

#: seconds to reach the scheduler, and to wait for a first worker (``Q7EMU_DASK_CONNECT_SECONDS`` overrides it)
CONNECT_SECONDS = 30.0
#: seconds without any worker after which the unfinished tasks fail (docs/limits.md §4)
NO_WORKER_SECONDS = 60.0
#: how often the client looks for finished tasks and for workers (seconds)
POLL_SECONDS = 0.02
#: how often q7emu runs again a task that ended in KilledWorker (as q7emu.machine.workers.RETRIES)
RETRIES = 1
#: the most cases one Dask task replays (chunk_size)
MAX_CHUNK = 16
#: seconds to fetch one finished task's result before looking at the task again
RESULT_SECONDS = 30.0
#: how often a finished task's result may fail to arrive (it stays finished) before the task fails
FETCH_ATTEMPTS = 3


def require_distributed() -> Any:
    """The ``distributed`` module; InvalidArgument naming the ``dask`` extra when it is not installed."""
    try:
        import distributed
    except ImportError:
        raise InvalidArgument("--dask", "distributed", "is not installed: pip install 'q7emu[dask]'") from None
    return distributed


def worker_info() -> dict[str, Any]:
    """What a worker runs (called on each worker when connecting): q7emu's version and ISA level."""
    info: dict[str, Any] = {"q7emu_version": __version__, "isa": None}
    try:
        from q7emu.kernels.extension import isa_info

        info["isa"] = isa_info().get("level")
    except Exception as e:  # noqa: BLE001 - reported to the client, which refuses the worker
        info["error"] = f"{type(e).__name__}: {e}"
    return info


def connect_seconds() -> float:
    """:data:`CONNECT_SECONDS`, or the environment's ``Q7EMU_DASK_CONNECT_SECONDS`` (a number > 0;
    docs/limits.md §2)."""
    import os

    text = os.environ.get("Q7EMU_DASK_CONNECT_SECONDS", "").strip()
    if not text:
        return CONNECT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        raise InvalidArgument("Q7EMU_DASK_CONNECT_SECONDS", text, "must be a number of seconds > 0 "
                              "(docs/limits.md §2)")
    return value


def connect(address: str, *, timeout: float | None = None) -> Any:
    """A Dask client of the scheduler at ``address`` (``tcp://HOST:PORT``, or a ``distributed`` Cluster object)
    that has at least one worker, each running this q7emu version. InvalidArgument naming ``--dask`` (one line)
    when the scheduler cannot be reached, has no worker within ``timeout`` seconds, or a worker runs another
    q7emu."""
    distributed = require_distributed()
    timeout = connect_seconds() if timeout is None else timeout
    where = getattr(address, "scheduler_address", address)
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise InvalidArgument("--dask", str(where), f"cannot reach the Dask scheduler ({failure_text(e)})") from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError) as e:
            raise InvalidArgument("--dask", str(where), f"the scheduler has no worker after {timeout:g} s "
                                  f"({failure_text(e)}); start one: dask worker {where}") from None
        try:
            infos = client.run(worker_info)
        except Exception as e:  # noqa: BLE001 - a worker that cannot import q7emu raises ModuleNotFoundError
            raise InvalidArgument("--dask", str(where), f"a worker cannot run q7emu ({failure_text(e)}); install "
                                  "q7emu (the same version) on every worker") from None
        for addr, info in sorted(infos.items()):
            if info.get("q7emu_version") != __version__:
                raise InvalidArgument("--dask", str(where), f"worker {addr} runs q7emu {info.get('q7emu_version')}, "
                                      f"this is q7emu {__version__}; install the same version on every worker")
            if info.get("error"):
                raise InvalidArgument("--dask", str(where), f"worker {addr} cannot load q7emu's kernels "
                                      f"({info['error']})")
    except BaseException:
        disconnect(client)
        raise
    return client


def disconnect(client: Any) -> None:
    """Close a client of :func:`connect` (never raises; bounded by a few seconds)."""
    with sigint_ignored(), contextlib.suppress(Exception):
        client.close(timeout=5)


def _n_workers(client: Any) -> int:
    try:
        return len(client.scheduler_info(n_workers=-1)["workers"])
    except TypeError:                                   # older distributed: no n_workers argument
        return len(client.scheduler_info()["workers"])


def _apply_chunk(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[tuple[bool, Any]]:
    """One Dask task: ``fn`` over a chunk of tasks, ``(True, result)`` or ``(False, "Type: message")`` each, so that
    an exception fails only its own task (as :func:`q7emu.machine.workers.run_tasks` does)."""
    out: list[tuple[bool, Any]] = []
    for item in items:
        try:
            out.append((True, fn(item)))
        except Exception as e:  # noqa: BLE001 - reported as that task's failure
            out.append((False, failure_text(e)))
    return out


def _n_threads(client: Any) -> int:
    try:
        return sum(int(w.get("nthreads", 1)) for w in client.scheduler_info(n_workers=-1)["workers"].values())
    except Exception:  # noqa: BLE001 - only sizes the chunks
        return 1


def chunk_size(n: int, threads: int) -> int:
    """Tasks per Dask task: enough that the per-task overhead of the scheduler and the workers (about a
    millisecond each) is shared by several cases, few enough that every worker thread gets about eight
    chunks (no long tail); at most :data:`MAX_CHUNK`."""
    return max(1, min(MAX_CHUNK, n // (8 * max(1, threads))))


def run_tasks_dask(fn: Callable[[Any], Any], tasks: Sequence[Any], client: Any,
                   on_result: Callable[[int, Any], None], *, retries: int = RETRIES, chunk: int | None = None,
                   no_worker_seconds: float = NO_WORKER_SECONDS) -> None:
    """Call ``on_result(i, fn(tasks[i]))`` for every task, run through ``client`` (from :func:`connect`) as Dask
    tasks of ``chunk`` tasks each (default :func:`chunk_size`), in completion order (module docstring).

    A Dask task that ends in ``KilledWorker`` is split into its tasks, and each runs again alone, one at a time
    (no other retried task beside it), until it has run ``retries`` more times; a task whose last run ends in
    ``KilledWorker`` too is a TaskFailure. ``fn`` must be importable on the workers (a module-level function of
    q7emu) and the tasks small (paths, not arrays)."""
    distributed = require_distributed()
    n = len(tasks)
    if n == 0:
        return
    size = chunk if chunk is not None else chunk_size(n, _n_threads(client))
    stamp, serial = time.time_ns(), 0
    jobs: dict[str, tuple[int, ...]] = {}           # Dask key -> the task indexes it runs
    futures: dict[str, Any] = {}
    reruns = [0] * n
    deaths = [0] * n
    again: list[int] = []                           # killed tasks to run once more, alone, one at a time
    retrying: int | None = None
    fetch_failures: dict[str, int] = {}             # Dask key -> failed fetches of its result while it stayed finished
    done = 0

    def submit(idx: tuple[int, ...]) -> Any:
        nonlocal serial
        serial += 1
        f = client.submit(_apply_chunk, fn, [tasks[i] for i in idx], pure=False, key=f"q7emu-{stamp}-{serial}")
        jobs[f.key] = idx
        futures[f.key] = f
        return f

    def finish(i: int, value: Any) -> None:
        nonlocal done
        done += 1
        on_result(i, value)

    try:
        first = [submit(tuple(range(k, min(k + size, n)))) for k in range(0, n, size)]
        ac = distributed.as_completed(first, loop=client.loop)   # futures only: results are fetched below
        no_worker_since: float | None = None
        last_check = 0.0
        while done < n:
            if retrying is None and again:
                retrying = again.pop(0)
                reruns[retrying] += 1
                ac.add(submit((retrying,)))
            batch = ac.next_batch(block=False) if ac.has_ready() else []
            if not batch:
                now = time.monotonic()
                if now - last_check >= 1.0:
                    last_check = now
                    if _n_workers(client):
                        no_worker_since = None
                    elif no_worker_since is None:
                        no_worker_since = now
                    elif now - no_worker_since >= no_worker_seconds:
                        left = sorted({i for idx in jobs.values() for i in idx} | set(again))
                        client.cancel(list(futures.values()))
                        for i in left:
                            finish(i, TaskFailure(f"no Dask worker for {no_worker_seconds:g} s: not run"))
                        return
                time.sleep(POLL_SECONDS)
                continue
            for future in batch:
                status, value = _settled(future, fetch_failures)
                if status is None:
                    ac.add(future)                  # it runs again: its worker died holding the result
                    continue
                fetch_failures.pop(future.key, None)
                idx = jobs.pop(future.key)
                futures.pop(future.key, None)
                if retrying is not None and idx == (retrying,):
                    retrying = None
                killed = _killed(status, value)
                if killed is not None:
                    for i in idx:
                        deaths[i] += killed
                        if reruns[i] < retries:
                            again.append(i)
                        else:
                            finish(i, TaskFailure(f"Dask worker process died while running it ({deaths[i]} "
                                                  "attempts)"))
                    continue
                if status == "finished" and isinstance(value, list) and len(value) == len(idx):
                    for i, (ok, v) in zip(idx, value):
                        finish(i, v if ok else TaskFailure(v))
                else:
                    failure = _outcome(status, value)
                    for i in idx:
                        finish(i, failure if isinstance(failure, TaskFailure) else TaskFailure("malformed result"))
    except KeyboardInterrupt:
        with sigint_ignored(), contextlib.suppress(Exception):
            client.cancel(list(futures.values()), force=True)
        raise Interrupted(done, n) from None


def _settled(future: Any, fetch_failures: dict[str, int]) -> tuple[str | None, Any]:
    """``(status, value)`` for a future that has ended: ``"finished"`` and its result (or a TaskFailure when its
    result could not be fetched :data:`FETCH_ATTEMPTS` times while it stayed finished), ``"error"`` and its
    exception, or ``"cancelled"``; ``(None, None)`` for one that runs again (its result was lost with its
    worker: it ends again later, perhaps in an error)."""
    status = future.status
    if status == "finished":
        try:
            return "finished", future.result(timeout=RESULT_SECONDS)
        except Exception as e:  # noqa: BLE001 - the status says what happened
            status = future.status
            if status == "finished":
                fetch_failures[future.key] = fetch_failures.get(future.key, 0) + 1
                if fetch_failures[future.key] >= FETCH_ATTEMPTS:
                    reason = f"its result could not be fetched ({FETCH_ATTEMPTS} attempts): {failure_text(e)}"
                    return "finished", TaskFailure(reason)
                return None, None
    if status == "error":
        return "error", future.exception()
    if status == "cancelled":
        return "cancelled", None
    return None, None


def _killed(status: str, value: Any) -> int | None:
    """How many workers died running a future that ended in KilledWorker (``allowed-failures + 1``), else None."""
    if status != "error" or type(value).__name__ != "KilledWorker":
        return None
    allowed = getattr(value, "allowed_failures", None)
    return allowed + 1 if isinstance(allowed, int) else 1


def _outcome(status: str, value: Any) -> Any:
    """The result of a finished future, or the TaskFailure of one that erred or was cancelled."""
    if status == "finished":
        return value
    if status == "error":
        return TaskFailure(failure_text(value) if isinstance(value, BaseException) else str(value))
    return TaskFailure(f"Dask task {status}")
