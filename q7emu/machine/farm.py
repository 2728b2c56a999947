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
* **Another q7emu** on a worker (another version, another build, other knob defaults, or none) is refused when
  connecting, naming the worker. A worker can also join later, so every Dask task checks again, on the worker that
  runs it, that the worker is this q7emu (:func:`identity`): on another, the task runs none of its cases and each is
  a :class:`~q7emu.machine.workers.TaskNotRun` naming the worker and what differs; the client checks the identity
  every result comes back with as well, so a worker whose q7emu does not check (an older one) is refused too.
* **A lost scheduler** (killed, its machine gone, the connection cut): the client sees its futures cancelled (or
  its own connection closed); every task not finished then is a :class:`~q7emu.machine.workers.TaskNotRun`, and
  the run ends at once with what finished. No worker at all for :data:`NO_WORKER_SECONDS` ends it the same way.

``distributed`` is imported only here, and only when ``--dask`` is given.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from q7emu._version import __version__
from q7emu.errors import InvalidArgument, install_hint
from q7emu.machine.workers import Interrupted, TaskFailure, TaskNotRun, failure_text, sigint_ignored

__all__ = ["CONNECT_SECONDS", "NO_WORKER_SECONDS", "MAX_CHUNK", "RETRIES", "require_distributed", "connect_seconds",
           "connect", "disconnect", "run_tasks_dask", "chunk_size", "worker_info", "identity", "identity_mismatch"]

#: seconds to reach the scheduler, and to wait for a first worker (``--dask-timeout`` / ``Q7EMU_DASK_CONNECT_SECONDS``
#: override it): a mistyped address is reported within this
CONNECT_SECONDS = 10.0
#: how the error of a connection that timed out says to wait longer
LONGER = "--dask-timeout SECONDS (or Q7EMU_DASK_CONNECT_SECONDS) waits longer"
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
        raise InvalidArgument("--dask", "distributed", f"is not installed: {install_hint('dask')}") from None
    return distributed


def identity() -> dict[str, Any]:
    """What a process must share with the client for its results to count (docs/cli.md §4.2): the q7emu
    version, the build (the ISA levels compiled and their flags, ``q7emu --version``'s ``built``; None when the
    compiled extensions are not built) and the knob defaults (the value every knob takes when a case does not
    name it: the knob table's, and the one the machine fills in) and the opcodes it runs (every opcode spec,
    q7emu.isa.opcodes: a worker without an opcode registered here cannot run its cases). Read afresh at every
    call."""
    from q7emu import _version
    from q7emu.isa.opcodes import opcode_names
    from q7emu.machine.machine import MACHINE_KNOBS
    from q7emu.model.knobs import KNOB_DEFAULTS

    build: Any = None
    try:
        from q7emu.kernels.extension import build_levels

        build = build_levels()
    except Exception as e:  # noqa: BLE001 - a build that cannot be read differs from one that can
        build = {"error": failure_text(e)}
    return {"q7emu_version": str(_version.__version__), "build": build,
            "knob_defaults": {k: str(v) for k, v in KNOB_DEFAULTS.items()},
            "machine_knob_defaults": {k: str(v[0]) for k, v in MACHINE_KNOBS.items()},
            "opcodes": opcode_names()}


def identity_mismatch(theirs: Any, ours: dict[str, Any]) -> str | None:
    """How the identity ``theirs`` (of a worker) differs from ``ours`` (the client's), in words, or None when they
    are the same: ``runs q7emu 9.9 (this is q7emu 0.1.0)``, ``is another build of q7emu 0.1.0 ...``, ``has knob
    default emax=alt (this q7emu: ocp)``."""
    if not isinstance(theirs, dict):
        return "did not say which q7emu it runs (a q7emu without the check, or none)"
    version = theirs.get("q7emu_version")
    if version != ours["q7emu_version"]:
        return f"runs q7emu {version} (this is q7emu {ours['q7emu_version']})"
    if theirs.get("build") != ours["build"]:
        return (f"runs another build of q7emu {version} (ISA levels and flags {theirs.get('build')!r}, here "
                f"{ours['build']!r})")
    for key in ("knob_defaults", "machine_knob_defaults"):
        mine, other = ours[key], theirs.get(key)
        if other == mine:
            continue
        if not isinstance(other, dict):
            return f"did not say its knob defaults ({key} {other!r})"
        for name in sorted(set(mine) | set(other)):
            if other.get(name) != mine.get(name):
                return (f"has knob default {name}={other.get(name)} (this q7emu: {mine.get(name)}), "
                        "another q7emu")
    if theirs.get("opcodes") != ours["opcodes"]:
        return (f"runs the opcodes {', '.join(theirs.get('opcodes') or ['(none said)'])} (this q7emu: "
                f"{', '.join(ours['opcodes'])}): register the same opcodes on every worker (Q7EMU_OPCODES)")
    return None


def worker_info() -> dict[str, Any]:
    """What a worker runs (called on each worker when connecting): its :func:`identity` and ISA level."""
    info: dict[str, Any] = {"identity": None, "q7emu_version": None, "isa": None}
    try:
        info["identity"] = identity()
        info["q7emu_version"] = info["identity"]["q7emu_version"]
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
        client = _client_within(distributed, address, timeout)
    except (OSError, TimeoutError, ValueError) as e:
        late = isinstance(e, TimeoutError) or "timed out" in str(e).lower()
        raise InvalidArgument("--dask", str(where), "cannot reach the Dask scheduler"
                              + (f" within {timeout:g} s ({failure_text(e)}); {LONGER}" if late
                                 else f" ({failure_text(e)})")) from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError) as e:
            raise InvalidArgument("--dask", str(where), f"the scheduler has no worker after {timeout:g} s "
                                  f"({failure_text(e)}); start one: dask worker {where}; {LONGER}") from None
        try:
            infos = client.run(worker_info)
        except Exception as e:  # noqa: BLE001 - a worker that cannot import q7emu raises ModuleNotFoundError
            raise InvalidArgument("--dask", str(where), f"a worker cannot run q7emu ({failure_text(e)}); install "
                                  "q7emu (the same version) on every worker") from None
        ours = identity()
        for addr, info in sorted(infos.items()):
            if info.get("q7emu_version") != __version__:
                raise InvalidArgument("--dask", str(where), f"worker {addr} runs q7emu {info.get('q7emu_version')}, "
                                      f"this is q7emu {__version__}; install the same version on every worker")
            if info.get("error"):
                raise InvalidArgument("--dask", str(where), f"worker {addr} cannot load q7emu's kernels "
                                      f"({info['error']})")
            why = identity_mismatch(info.get("identity"), ours)
            if why is not None:
                raise InvalidArgument("--dask", str(where), f"worker {addr} {why}; install the same q7emu (the "
                                      "same wheel) on every worker")
    except BaseException:
        disconnect(client)
        raise
    return client


def _client_within(distributed: Any, address: Any, timeout: float) -> Any:
    """``distributed.Client(address)``, given up after ``timeout`` seconds (TimeoutError). Its own timeout bounds
    the TCP connect only: a service that accepts the connection and never answers Dask's handshake (a web server
    on the port) held it for ever. The client is made on a daemon thread, which is left behind when it hangs. A
    service that answers otherwise (an SSH banner read as a frame length) is an OSError saying so, and the
    half-made client is marked closed: its ``__del__`` would wait seconds to close it and print a traceback."""
    import threading
    import traceback

    made: dict[str, Any] = {}

    def make() -> None:
        try:
            made["client"] = distributed.Client(address, timeout=timeout, set_as_default=False)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            for frame, _ in traceback.walk_tb(e.__traceback__):
                half = frame.f_locals.get("self")
                if isinstance(half, distributed.Client):
                    half.status = "closed"
            made["error"] = (OSError("the address answers, but not in Dask's protocol (is it a Dask scheduler?)")
                             if isinstance(e, MemoryError) else e)

    t = threading.Thread(target=make, name="q7emu-dask-connect", daemon=True)
    t.start()
    t.join(timeout + 1.0)
    if t.is_alive():
        raise TimeoutError("the address accepts connections but gives no Dask handshake (is it a Dask scheduler?)")
    if "error" in made:
        raise made["error"]
    return made["client"]


def disconnect(client: Any) -> None:
    """Close a client of :func:`connect` (never raises; bounded by a few seconds)."""
    with sigint_ignored(), contextlib.suppress(Exception):
        client.close(timeout=5)


def _n_workers(client: Any) -> int | None:
    """The scheduler's workers now; None when the scheduler does not answer."""
    try:
        try:
            return len(client.scheduler_info(n_workers=-1)["workers"])
        except TypeError:                               # older distributed: no n_workers argument
            return len(client.scheduler_info()["workers"])
    except Exception:  # noqa: BLE001 - a scheduler that is gone (CommClosedError, OSError, TimeoutError)
        return None


def _worker_address() -> str | None:
    """The address of the Dask worker this task runs on (None outside one)."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except Exception:  # noqa: BLE001 - only names the worker in a message
        return None


def _worker_phrase(address: Any) -> str:
    """``Dask worker tcp://HOST:PORT`` (``a Dask worker`` when its address is not known)."""
    return f"Dask worker {address}" if isinstance(address, str) and address else "a Dask worker"


def _apply_chunk(fn: Callable[[Any], Any], items: Sequence[Any], want: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    """One Dask task: ``fn`` over a chunk of tasks, ``(True, result)`` or ``(False, "Type: message")`` each, so that
    an exception fails only its own task (as :func:`q7emu.machine.workers.run_tasks` does). ``want``: the client's
    :func:`identity`; on a worker whose identity differs no task runs, each is ``(None, why)``. Returns
    ``{"worker", "identity", "results"}``: the client checks the identity too."""
    ours = identity()
    worker = _worker_address()
    why = identity_mismatch(ours, want) if want is not None else None
    out: list[tuple[bool | None, Any]] = []
    for item in items:
        if why is not None:
            out.append((None, f"{_worker_phrase(worker)} {why}"))
            continue
        try:
            out.append((True, fn(item)))
        except Exception as e:  # noqa: BLE001 - reported as that task's failure
            out.append((False, failure_text(e)))
    return {"worker": worker, "identity": ours, "results": out}


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


class _Watch:
    """What a farm run checks about once a second while no result comes: its scheduler still answers, and it has a
    worker (none for ``no_worker_seconds`` ends the run)."""

    def __init__(self, client: Any, scheduler: str, no_worker_seconds: float) -> None:
        self.client, self.scheduler, self.no_worker_seconds = client, scheduler, no_worker_seconds
        self.no_worker_since: float | None = None
        self.last_check = 0.0

    def check(self, now: float) -> str | None:
        """Why the run must stop (the reason every task left is not run), or None."""
        if now - self.last_check < 1.0:
            return None
        self.last_check = now
        lost = _lost(self.client)
        if lost is not None:
            return f"{self.scheduler} was lost ({lost})"
        workers = _n_workers(self.client)
        if workers:
            self.no_worker_since = None
        elif self.no_worker_since is None:
            self.no_worker_since = now
        elif now - self.no_worker_since >= self.no_worker_seconds:
            return (f"no Dask worker for {self.no_worker_seconds:g} s" if workers == 0 else
                    f"{self.scheduler} did not answer for {self.no_worker_seconds:g} s")
        return None


def _chunk_outcomes(status: str, value: Any, count: int, want: dict[str, Any]) -> list[Any]:
    """The outcome of each of the ``count`` tasks of a Dask task that settled (not killed, not cancelled): its
    result, a TaskFailure, or a TaskNotRun when the worker is not this q7emu (``want``: this q7emu's identity)."""
    if status == "finished" and isinstance(value, dict) and isinstance(value.get("results"), list) \
            and len(value["results"]) == count:
        why = identity_mismatch(value.get("identity"), want)
        if why is not None:
            return [TaskNotRun(f"{_worker_phrase(value.get('worker'))} {why}")] * count
        return [TaskNotRun(str(v)) if ok is None else (v if ok else TaskFailure(v)) for ok, v in value["results"]]
    if status == "finished" and not isinstance(value, TaskFailure):
        why = identity_mismatch(None, want)     # not a result of this q7emu's _apply_chunk: an older one
        return [TaskNotRun(f"a Dask worker {why}")] * count
    failure = _outcome(status, value)
    return [failure if isinstance(failure, (TaskFailure, TaskNotRun)) else TaskFailure("malformed result")] * count


def run_tasks_dask(fn: Callable[[Any], Any], tasks: Sequence[Any], client: Any,
                   on_result: Callable[[int, Any], None], *, retries: int = RETRIES, chunk: int | None = None,
                   no_worker_seconds: float = NO_WORKER_SECONDS) -> None:
    """Call ``on_result(i, fn(tasks[i]))`` for every task, run through ``client`` (from :func:`connect`) as Dask
    tasks of ``chunk`` tasks each (default :func:`chunk_size`), in completion order (module docstring).

    A Dask task that ends in ``KilledWorker`` is split into its tasks, and each runs again alone, one at a time
    (no other retried task beside it), until it has run ``retries`` more times; a task whose last run ends in
    ``KilledWorker`` too is a TaskFailure. A task that a worker of another q7emu took, and every task left when the
    scheduler is lost or no worker is left, is a :class:`~q7emu.machine.workers.TaskNotRun` (never a result).
    ``fn`` must be importable on the workers (a module-level function of q7emu) and the tasks small (paths, not
    arrays)."""
    distributed = require_distributed()
    n = len(tasks)
    if n == 0:
        return
    scheduler = _scheduler_name(client)
    size = chunk if chunk is not None else chunk_size(n, _n_threads(client))
    run = _DaskRun(fn, tasks, client, on_result, retries, identity())
    try:
        first = [run.submit(tuple(range(k, min(k + size, n)))) for k in range(0, n, size)]
        ac = distributed.as_completed(first, loop=client.loop)   # futures only: results are fetched below
        watch = _Watch(client, scheduler, no_worker_seconds)
        while run.done < n:
            retry = run.next_retry()
            if retry is not None:
                ac.add(retry)
            batch = ac.next_batch(block=False) if ac.has_ready() else []
            if not batch:
                reason = watch.check(time.monotonic())
                if reason is not None:
                    run.give_up(reason)
                    return
                time.sleep(POLL_SECONDS)
                continue
            for future in batch:
                status, value = _settled(future, run.fetch_failures)
                if status is None:
                    ac.add(future)                  # it runs again: its worker died holding the result
                    continue
                if status == "cancelled":           # q7emu cancels only when it stops: the scheduler is gone
                    lost = _lost(client) or _cancel_reason(future) or "its futures were cancelled"
                    run.give_up(f"{scheduler} was lost ({lost})")
                    return
                run.settle(future.key, status, value)
    except KeyboardInterrupt:
        with sigint_ignored(), contextlib.suppress(Exception):
            client.cancel(list(run.futures.values()), force=True)
        raise Interrupted(run.done, n) from None


class _DaskRun:
    """The bookkeeping of one :func:`run_tasks_dask` call: the Dask tasks in flight (key -> the task indexes each
    runs), the killed tasks waiting to run again alone, and which tasks have an outcome (each is given to
    ``on_result`` once)."""

    def __init__(self, fn: Callable[[Any], Any], tasks: Sequence[Any], client: Any,
                 on_result: Callable[[int, Any], None], retries: int, want: dict[str, Any]) -> None:
        n = len(tasks)
        self.fn, self.tasks, self.client, self.on_result, self.retries, self.want = \
            fn, tasks, client, on_result, retries, want
        self.stamp, self.serial = time.time_ns(), 0
        self.jobs: dict[str, tuple[int, ...]] = {}           # Dask key -> the task indexes it runs
        self.futures: dict[str, Any] = {}
        self.reruns = [0] * n
        self.deaths = [0] * n
        self.again: list[int] = []                   # killed tasks to run once more, alone, one at a time
        self.retrying: int | None = None
        self.fetch_failures: dict[str, int] = {}     # Dask key -> failed fetches of its result while it stayed finished
        self.finished = [False] * n
        self.done = 0

    def submit(self, idx: tuple[int, ...]) -> Any:
        """Submit the tasks ``idx`` as one Dask task; its future."""
        self.serial += 1
        f = self.client.submit(_apply_chunk, self.fn, [self.tasks[i] for i in idx], self.want, pure=False,
                               key=f"q7emu-{self.stamp}-{self.serial}")
        self.jobs[f.key] = idx
        self.futures[f.key] = f
        return f

    def next_retry(self) -> Any:
        """The future of the next killed task to run again, alone (None while one runs, or none waits)."""
        if self.retrying is not None or not self.again:
            return None
        self.retrying = self.again.pop(0)
        self.reruns[self.retrying] += 1
        return self.submit((self.retrying,))

    def finish(self, i: int, value: Any) -> None:
        """Task ``i``'s outcome (a later one is ignored)."""
        if self.finished[i]:
            return
        self.finished[i] = True
        self.done += 1
        self.on_result(i, value)

    def give_up(self, reason: str) -> None:
        """Every task not finished is not run (``reason``); the futures left are cancelled."""
        with contextlib.suppress(Exception):
            self.client.cancel(list(self.futures.values()))
        for i in range(len(self.tasks)):
            self.finish(i, TaskNotRun(reason))

    def settle(self, key: str, status: str, value: Any) -> None:
        """The Dask task ``key`` settled (not cancelled): its tasks' outcomes, or, for a killed worker, the tasks to
        run again (a TaskFailure after ``retries`` more runs)."""
        self.fetch_failures.pop(key, None)
        idx = self.jobs.pop(key)
        self.futures.pop(key, None)
        if self.retrying is not None and idx == (self.retrying,):
            self.retrying = None
        killed = _killed(status, value)
        if killed is None:
            for i, outcome in zip(idx, _chunk_outcomes(status, value, len(idx), self.want)):
                self.finish(i, outcome)
            return
        for i in idx:
            self.deaths[i] += killed
            if self.reruns[i] < self.retries:
                self.again.append(i)
            else:
                self.finish(i, TaskFailure(f"Dask worker process died while running it ({self.deaths[i]} attempts)"))


def _scheduler_name(client: Any) -> str:
    """``the Dask scheduler tcp://HOST:PORT`` (without the address when the client does not say it)."""
    address = getattr(getattr(client, "scheduler", None), "address", None)
    return f"the Dask scheduler {address}" if isinstance(address, str) and address else "the Dask scheduler"


def _lost(client: Any) -> str | None:
    """Why ``client`` has lost its scheduler (its connection closed or being re-made), or None while it runs."""
    status = getattr(client, "status", "running")
    if status in ("running", "newly-created"):
        return None
    return "the connection to it closed" if status == "connecting" else f"the client is {status}"


def _cancel_reason(future: Any) -> str | None:
    """The reason Dask gives for cancelling ``future`` (``scheduler-connection-lost``), when it says one."""
    exc = getattr(getattr(future, "_state", None), "exception", None)
    reason = getattr(exc, "reason", None)
    if reason == "scheduler-connection-lost":
        return "the connection to it closed"
    return f"Dask cancelled its tasks: {reason}" if reason else None


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
    """The result of a finished future, or the TaskFailure of one that erred or was cancelled; a task that a worker
    could not even load (an ImportError: a worker without q7emu, or with one that lacks the task's function) is a
    TaskNotRun, never a failure of its cases (docs/cli.md §4.2)."""
    if status == "finished":
        return value
    if status == "error" and isinstance(value, ImportError):
        return TaskNotRun(f"a Dask worker cannot load q7emu's task ({failure_text(value)}); install q7emu (the same "
                          "wheel) on every worker")
    if status == "error":
        return TaskFailure(failure_text(value) if isinstance(value, BaseException) else str(value))
    return TaskFailure(f"Dask task {status}")
