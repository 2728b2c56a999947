"""Worker processes for replay and explore: Ctrl-C stops within a second, a dead worker fails only its own task.

:func:`run_tasks` runs ``fn(task)`` for each task, in the calling process (``jobs == 1``) or in ``jobs``
persistent worker processes while the calling process only hands out tasks and collects results, so it
answers a signal at once:

* **Ctrl-C.** The workers ignore SIGINT (the terminal sends it to the whole process group). On the first
  SIGINT the caller's process kills its workers (SIGKILL, they hold no state worth saving and write no file)
  and raises :class:`Interrupted`, which says how many tasks finished; the results of those were already
  handed to ``on_result``. While the workers are being killed SIGINT is ignored, so a second Ctrl-C cannot
  leave them running or hang the exit.
* **A dead worker** (killed, out of memory, a crash in native code) fails only the task it was running. That
  task is retried once in a fresh worker; if that worker dies too the task's result is a
  :class:`TaskFailure`. Tasks that were queued on the dead worker but not started are simply handed out again.
* **An exception** raised by ``fn`` in a worker becomes a :class:`TaskFailure` for that task (one line); in
  the calling process (``jobs == 1``) it propagates.

Workers are forked where the platform can (started once per process and kept for later calls, so only the
first call pays for starting them; the copy-on-write heap is frozen first) and spawned elsewhere; ``fn`` and
the tasks must be picklable for the spawn case and their results always are sent back pickled.
"""
from __future__ import annotations

import contextlib
import gc
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from q7emu.errors import InvalidArgument

#: how many tasks a worker holds at once (the one it runs and the next), so it never waits for the parent
PREFETCH = 2
#: how often a task whose worker died is run again
RETRIES = 1
#: seconds to wait for a killed worker to be reaped
REAP_SECONDS = 1.0
#: the most worker processes one call may start (docs/limits.md §2): -j 100000 must not fork a machine to death
MAX_JOBS = 64


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`run_tasks` (or a caller built on it): ``done`` of ``total`` tasks had finished.

    Callers may attach what finished as ``results``. It is a KeyboardInterrupt, so code that handles Ctrl-C
    the usual way (exit status 130) still does."""

    def __init__(self, done: int, total: int, results: list[Any] | None = None) -> None:
        super().__init__(f"interrupted: {done} of {total} finished")
        self.done = done
        self.total = total
        self.results = results if results is not None else []


@dataclass(frozen=True)
class TaskFailure:
    """The result of a task that did not return: its worker died (``reason`` says how, twice) or ``fn``
    raised (``reason`` is ``Type: message``)."""

    reason: str


# ---------------------------------------------------------------------- the worker side
def _worker_main(conn: Any) -> None:
    """A worker: receive (fn, task), send back (True, fn(task)) or (False, "Type: message"); None or a closed
    pipe ends it. SIGINT is ignored: the parent decides when a worker stops."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        fn, task = msg
        try:
            out: tuple[bool, Any] = (True, fn(task))
        except Exception as e:
            out = (False, _one_line(e))
        try:
            conn.send(out)
        except (OSError, EOFError):
            return
        except Exception as e:               # a result that cannot be pickled
            try:
                conn.send((False, f"result not transferable: {_one_line(e)}"))
            except Exception:
                return


def _one_line(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


# ---------------------------------------------------------------------- the parent side
class _Worker:
    """One worker process and the parent's end of its pipe; ``held`` are the task indexes sent, in order."""

    def __init__(self, ctx: Any) -> None:
        parent_end, child_end = ctx.Pipe(duplex=True)
        with _sigint_blocked():        # the child starts with SIGINT blocked until it ignores it
            self.proc = ctx.Process(target=_worker_main, args=(child_end,), daemon=True, name="q7emu-worker")
            self.proc.start()
        child_end.close()
        self.conn = parent_end
        self.held: deque[int] = deque()

    def alive(self) -> bool:
        return self.proc.is_alive()

    def death(self) -> str:
        """How the process ended, for a failure message."""
        self.proc.join(REAP_SECONDS)
        code = self.proc.exitcode
        if code is None:
            return "stopped answering"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code}"

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.join(REAP_SECONDS)
        with contextlib.suppress(Exception):
            self.conn.close()


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    can = hasattr(signal, "pthread_sigmask")
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if can else None
    try:
        yield
    finally:
        if can:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored (main thread only) while workers are being killed: a second Ctrl-C cannot cut it short."""
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGINT, old)


#: the persistent workers of this process (kept between calls; emptied when killed)
_POOL: list[_Worker] = []
#: the Q7EMU_* environment the workers were started with (the limits of docs/limits.md §2 are read there)
_POOL_ENV: dict[str, str] = {}


def _q7emu_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("Q7EMU_")}


def _context() -> Any:
    try:
        return mp.get_context("fork")
    except ValueError:  # pragma: no cover - platforms without fork
        return mp.get_context("spawn")


def _acquire(ctx: Any, n: int) -> list[_Worker]:
    """n live workers of the persistent pool (started on first need; restarted when a Q7EMU_* variable
    changed since they were started, so they apply the same limits as this process)."""
    if _POOL and _POOL_ENV != _q7emu_env():
        shutdown()
    _POOL_ENV.clear()
    _POOL_ENV.update(_q7emu_env())
    dead = [w for w in _POOL if not w.alive()]
    for w in dead:
        w.kill()
    _POOL[:] = [w for w in _POOL if w not in dead]
    if len(_POOL) < n:
        gc.freeze()          # forked children share the parent's heap without a copy-on-write storm from the GC
        try:
            while len(_POOL) < n:
                _POOL.append(_Worker(ctx))
        finally:
            gc.unfreeze()
    for w in _POOL:
        w.held.clear()
    return _POOL[:n]


def _replace(ctx: Any, old: _Worker) -> _Worker:
    old.kill()
    new = _Worker(ctx)
    _POOL[_POOL.index(old)] = new
    return new


def shutdown() -> None:
    """Kill every persistent worker of this process (they are also killed on Ctrl-C and at exit)."""
    with _sigint_ignored():
        for w in _POOL:
            w.kill()
        _POOL.clear()


def run_tasks(fn: Callable[[Any], Any], tasks: Sequence[Any], jobs: int,
              on_result: Callable[[int, Any], None], *, retries: int = RETRIES) -> None:
    """Call ``on_result(i, fn(tasks[i]))`` for every task, in completion order.

    ``jobs == 1`` (or a single task): in this process, in order; an exception of ``fn`` propagates. Otherwise
    ``min(jobs, len(tasks))`` worker processes run the tasks; a task whose worker died is run ``retries`` more
    times, after which its result is a :class:`TaskFailure`, as it is when ``fn`` raised in the worker. On
    Ctrl-C (KeyboardInterrupt) the workers are killed and :class:`Interrupted` is raised. InvalidArgument when
    ``jobs`` is not an int in 1..:data:`MAX_JOBS`."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
        raise InvalidArgument("jobs", jobs if isinstance(jobs, int) else type(jobs).__name__,
                              f"must be an integer in 1..{MAX_JOBS} worker processes")
    n = len(tasks)
    done = 0
    if jobs <= 1 or n <= 1:
        try:
            for i, t in enumerate(tasks):
                value = fn(t)
                done += 1
                on_result(i, value)
        except KeyboardInterrupt:
            raise Interrupted(done, n) from None
        return
    ctx = _context()
    queue: deque[int] = deque(range(n))
    attempts = [0] * n
    try:
        workers = _acquire(ctx, min(jobs, n))
        while done < n:
            for k in range(len(workers)):
                w = workers[k]
                if not w.held and not w.alive():
                    workers[k] = w = _replace(ctx, w)
                while queue and len(w.held) < PREFETCH:
                    i = queue.popleft()
                    try:
                        w.conn.send((fn, tasks[i]))
                    except (OSError, EOFError):      # it died idle: its death is seen below or next round
                        queue.appendleft(i)
                        break
                    w.held.append(i)
            busy = [w for w in workers if w.held]
            if not busy:                              # every send failed: start fresh workers
                workers = [_replace(ctx, w) for w in workers]
                continue
            ready = set(mpc.wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=1.0))
            for w in busy:
                if w.conn not in ready and w.proc.sentinel not in ready:
                    continue
                broken = False
                try:
                    while w.held and w.conn.poll():
                        ok, value = w.conn.recv()
                        i = w.held.popleft()
                        done += 1
                        on_result(i, value if ok else TaskFailure(value))
                except (EOFError, OSError):
                    broken = True
                except KeyboardInterrupt:
                    raise
                except Exception:           # a torn message from a dying worker
                    broken = True
                if w.held and (broken or not w.alive()):
                    why = w.death()
                    i = w.held.popleft()                   # the task it was running
                    queue.extendleft(reversed(w.held))     # the ones it had not started
                    w.held.clear()
                    attempts[i] += 1
                    if attempts[i] > retries:
                        done += 1
                        on_result(i, TaskFailure(f"worker process {why} while running it "
                                                 f"({attempts[i]} attempts)"))
                    else:
                        queue.appendleft(i)
                    workers[workers.index(w)] = _replace(ctx, w)
    except KeyboardInterrupt:
        shutdown()
        raise Interrupted(done, n) from None
    except BaseException:
        shutdown()
        raise
