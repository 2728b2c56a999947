"""Worker processes for replay and explore: Ctrl-C stops within a second, a dead worker fails only its own task,
no worker outlives the process that started it, and concurrent calls never share a worker.

:func:`run_tasks` runs ``fn(task)`` for each task, in the calling process (``jobs == 1``) or in ``jobs``
worker processes while the calling process only hands out tasks and collects results, so it answers a signal
at once:

* **Ctrl-C.** The workers ignore SIGINT (the terminal sends it to the whole process group). On the first
  SIGINT the caller's process kills its workers (SIGKILL, they hold no state worth saving and write no file)
  and raises :class:`Interrupted`, which says how many tasks finished; the results of those were already
  handed to ``on_result``. While the workers are being killed SIGINT is ignored, so a second Ctrl-C cannot
  leave them running or hang the exit. Any other exception (the CLI turns SIGTERM / SIGHUP into one) kills
  the call's workers the same way before it propagates.
* **A dead worker** (killed, out of memory, a crash in native code) fails only the task it was running. That
  task is retried once in a fresh worker; if that worker dies too the task's result is a
  :class:`TaskFailure`. Tasks that were queued on the dead worker but not started are simply handed out again.
* **An exception** raised by ``fn`` in a worker becomes a :class:`TaskFailure` for that task (one line); in
  the calling process (``jobs == 1``) it propagates.
* **A dead parent** (SIGKILL, or any signal the process does not handle) takes its workers with it: on Linux
  each worker asks the kernel for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), and on every platform
  each forked worker closes the parent's ends of every worker pipe it inherited (its own included), so an
  idle worker sees end-of-file as soon as the parent is gone (docs/limits.md §4).

**One pool per call at a time** (docs/limits.md §4). The persistent pool (started once per process, kept for
later calls, so only the first call pays for starting the workers; the copy-on-write heap is frozen first) is
used by one call at a time, and only from the main thread: a call from another thread, or one made while the
persistent pool is busy (two threads, a nested call from ``on_result``), gets workers of its own, started
for it and killed when it returns. So results can never cross between calls.

Workers are forked where the platform can and spawned elsewhere; ``fn`` and the tasks must be picklable for
the spawn case and their results always are sent back pickled.
"""
from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from q7emu._dataclass import dataclass
from q7emu.errors import InvalidArgument
from q7emu.fileio import resource_error

if TYPE_CHECKING:       # imported where workers start: a run without -j never loads multiprocessing (2-3 ms)
    import multiprocessing as mp
    import multiprocessing.connection as mpc

#: how many tasks a worker holds at once (the one it runs and the next), so it never waits for the parent
PREFETCH = 2
#: how often a task whose worker died is run again
RETRIES = 1
#: seconds to wait for a killed worker to be reaped
REAP_SECONDS = 1.0
#: the most worker processes one call may start (docs/limits.md §2): -j 100000 must not fork a machine to death
MAX_JOBS = 64
#: prctl(2) option: the signal a process gets when its parent dies (Linux)
_PR_SET_PDEATHSIG = 1


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


@dataclass(frozen=True)
class TaskNotRun:
    """The result of a task that was not run, or whose result was refused, for a reason outside the task and
    outside q7emu (docs/cli.md §4.2): a Dask worker that is not this q7emu took it, the scheduler was lost, no
    worker was left. ``reason`` says which (and names the worker or the scheduler). Never a verdict: replay reports
    the case as not run (exit 2)."""

    reason: str


# ---------------------------------------------------------------------- the worker side
def _die_with_parent(ppid: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; elsewhere the closed pipe ends
    of :func:`_worker_main` are the only guard), and exit at once if the parent is already gone."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != ppid:            # the parent died before the request took effect
        os._exit(0)


def _worker_main(conn: Any, ppid: int = 0, inherited: Sequence[Any] = ()) -> None:
    """A worker: receive (fn, task), send back (True, fn(task)) or (False, "Type: message"); None or a closed
    pipe ends it. ``inherited``: the parent's ends of worker pipes this forked child holds a copy of (its own
    included): closed first, so that only the parent keeps them and its death reaches every worker as
    end-of-file. SIGINT is ignored and SIGTERM / SIGHUP take their default action: the parent decides when a
    worker stops (a signal handler the parent installed must not run here)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, sig) and signal.getsignal(getattr(signal, sig)) not in (signal.SIG_IGN, None):
            signal.signal(getattr(signal, sig), signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):       # blocked since the fork: delivered now, to these dispositions
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    for c in inherited:
        with contextlib.suppress(Exception):
            c.close()
    if ppid:
        _die_with_parent(ppid)
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
            out = (False, failure_text(e))
        try:
            conn.send(out)
        except (OSError, EOFError):
            return
        except Exception as e:               # a result that cannot be pickled
            try:
                conn.send((False, f"result not transferable: {failure_text(e)}"))
            except Exception:
                return


def failure_text(e: BaseException) -> str:
    """How a task's exception is reported (a worker's and a Dask task's alike): ``Type: first line``."""
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


# ---------------------------------------------------------------------- the parent side
#: every worker of this process that is not yet killed, in any pool (their parent ends are closed in each
#: newly forked worker); changed only with the GIL held, so a fork always copies a consistent set
_LIVE: set[_Worker] = set()
#: held while a worker is started and while a worker's pipe end is closed
_FORK_LOCK = threading.Lock()


class _Worker:
    """One worker process and the parent's end of its pipe; ``held`` are the task indexes sent, in order."""

    conn: mpc.Connection
    proc: mp.process.BaseProcess

    def __init__(self, ctx: Any) -> None:
        self.held: deque[int] = deque()
        with _FORK_LOCK:                   # no other thread forks or closes a pipe end while this child starts
            try:
                parent_end, child_end = ctx.Pipe(duplex=True)
            except OSError as e:           # out of file descriptors: named (docs/limits.md §3)
                raise resource_error(e, "a pipe to a worker process of -j") from None
            forked = ctx.get_start_method() == "fork"
            inherited = [parent_end, *(w.conn for w in list(_LIVE))] if forked else []
            try:
                with _stop_signals_blocked():  # the child starts with them blocked until it sets its own
                    self.proc = ctx.Process(target=_worker_main, args=(child_end, os.getpid(), inherited),
                                            daemon=True, name="q7emu-worker")
                    self.proc.start()
            except OSError as e:
                parent_end.close()
                child_end.close()
                raise resource_error(e, "a worker process of -j (its pipes, its fork)") from None
            except BaseException:
                parent_end.close()
                child_end.close()
                raise
            child_end.close()
            self.conn = parent_end
            _LIVE.add(self)

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
        with _FORK_LOCK:
            _LIVE.discard(self)
            with contextlib.suppress(Exception):
                self.conn.close()
        with contextlib.suppress(Exception):
            self.proc.join(REAP_SECONDS)


#: the signals a forked worker starts with blocked: SIGINT (which it ignores), SIGTERM and SIGHUP (which kill it).
#: Unblocked, the parent's Python handler the child inherits could take a SIGTERM sent before the child sets its
#: own disposition, and the child would drop it: a worker the parent terminated at exit lived on, and the parent
#: waited for it for ever (a pool that failed to start for want of file descriptors, issue 41's hostile round)
_STOP_SIGNALS = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)}


@contextlib.contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    if not hasattr(signal, "pthread_sigmask"):     # not on Windows
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored (main thread only) while workers are killed or a farm's futures cancelled: a second Ctrl-C
    cannot cut it short."""
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
#: held by the one call that uses the persistent pool; a call that cannot take it gets workers of its own
_POOL_LOCK = threading.Lock()


def _q7emu_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("Q7EMU_")}


def _context() -> Any:
    import multiprocessing as mp
    try:
        return mp.get_context("fork")
    except ValueError:  # pragma: no cover - platforms without fork
        return mp.get_context("spawn")


def _start(ctx: Any, pool: list[_Worker], n: int) -> None:
    """Grow ``pool`` to ``n`` workers."""
    if len(pool) < n:
        gc.freeze()          # forked children share the parent's heap without a copy-on-write storm from the GC
        try:
            while len(pool) < n:
                pool.append(_Worker(ctx))
        finally:
            gc.unfreeze()


def _kill_all(pool: list[_Worker]) -> None:
    with sigint_ignored():
        for w in pool:
            w.kill()
        pool.clear()


class _Pool:
    """The workers of one :func:`run_tasks` call: the persistent pool (``shared``, while the call holds
    ``_POOL_LOCK``) or workers of its own (killed when the call returns)."""

    def __init__(self, ctx: Any, n: int, shared: bool) -> None:
        self.ctx = ctx
        self.shared = shared
        self.workers: list[_Worker] = _POOL if shared else []
        if shared:
            if _POOL and _POOL_ENV != _q7emu_env():     # restarted so the workers apply this process's limits
                _kill_all(_POOL)
            _POOL_ENV.clear()
            _POOL_ENV.update(_q7emu_env())
            for w in [w for w in _POOL if not w.alive()]:
                w.kill()
                _POOL.remove(w)
        try:
            _start(ctx, self.workers, n)
        except BaseException:
            _kill_all(self.workers)      # the persistent pool too: no worker of a pool that failed to start lives on
            raise
        for w in self.workers:
            w.held.clear()
        self.active = self.workers[:n]

    def replace(self, old: _Worker) -> _Worker:
        """A fresh worker in place of ``old`` (killed)."""
        old.kill()
        new = _Worker(self.ctx)
        self.workers[self.workers.index(old)] = new
        return new

    def kill(self) -> None:
        """Kill every worker of this pool (for the persistent pool: every persistent worker)."""
        _kill_all(self.workers)

    def release(self) -> None:
        """The call is over: own workers are killed, the persistent pool stays for the next call."""
        if not self.shared:
            self.kill()


@contextlib.contextmanager
def _pool(ctx: Any, n: int) -> Iterator[_Pool]:
    """The pool of one call: the persistent one when this is the main thread and no other call uses it."""
    shared = threading.current_thread() is threading.main_thread() and _POOL_LOCK.acquire(blocking=False)
    try:
        p = _Pool(ctx, n, shared)
        try:
            yield p
        except BaseException:
            p.kill()
            raise
        p.release()
    finally:
        if shared:
            _POOL_LOCK.release()


def shutdown() -> None:
    """Kill every persistent worker of this process (they are also killed on Ctrl-C and at exit). Waits for
    a call that is using them to return."""
    with _POOL_LOCK:
        _kill_all(_POOL)


def _run_here(fn: Callable[[Any], Any], tasks: Sequence[Any], on_result: Callable[[int, Any], None]) -> None:
    """:func:`run_tasks` in this process, in order: an exception of ``fn`` propagates; Ctrl-C is Interrupted."""
    done = 0
    try:
        for i, t in enumerate(tasks):
            value = fn(t)
            done += 1
            on_result(i, value)
    except KeyboardInterrupt:
        raise Interrupted(done, len(tasks)) from None


def _feed(pool: Any, workers: list[Any], queue: deque[int], fn: Callable[[Any], Any], tasks: Sequence[Any]) -> None:
    """Give each worker tasks from ``queue`` up to PREFETCH held (a dead idle worker is replaced first; a send that
    fails puts its task back, the worker's death is seen later)."""
    for k in range(len(workers)):
        w = workers[k]
        if not w.held and not w.alive():
            workers[k] = w = pool.replace(w)
        while queue and len(w.held) < PREFETCH:
            i = queue.popleft()
            try:
                w.conn.send((fn, tasks[i]))
            except (OSError, EOFError):      # it died idle: its death is seen below or next round
                queue.appendleft(i)
                break
            w.held.append(i)


def _collect(w: Any, on_result: Callable[[int, Any], None], done: list[int]) -> bool:
    """Hand on every result worker ``w`` has sent, counting each in ``done[0]`` before it is handed on; whether its
    pipe broke (a dead or dying worker)."""
    try:
        while w.held and w.conn.poll():
            ok, value = w.conn.recv()
            i = w.held.popleft()
            done[0] += 1
            on_result(i, value if ok else TaskFailure(value))
    except (EOFError, OSError):
        return True
    except KeyboardInterrupt:
        raise
    except Exception:           # a torn message from a dying worker
        return True
    return False


def run_tasks(fn: Callable[[Any], Any], tasks: Sequence[Any], jobs: int,
              on_result: Callable[[int, Any], None], *, retries: int = RETRIES) -> None:
    """Call ``on_result(i, fn(tasks[i]))`` for every task, in completion order.

    ``jobs == 1`` (or a single task): in this process, in order; an exception of ``fn`` propagates. Otherwise
    ``min(jobs, len(tasks))`` worker processes run the tasks; a task whose worker died is run ``retries`` more
    times, after which its result is a :class:`TaskFailure`, as it is when ``fn`` raised in the worker. On
    Ctrl-C (KeyboardInterrupt) the workers are killed and :class:`Interrupted` is raised. InvalidArgument when
    ``jobs`` is not an int in 1..:data:`MAX_JOBS`. Safe to call from several threads at once (each call has
    workers no other call uses)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
        raise InvalidArgument("jobs", jobs if isinstance(jobs, int) else type(jobs).__name__,
                              f"must be an integer in 1..{MAX_JOBS} worker processes")
    n = len(tasks)
    if jobs <= 1 or n <= 1:
        _run_here(fn, tasks, on_result)
        return
    done = [0]                  # tasks with an outcome (a list: _collect counts into it)
    queue: deque[int] = deque(range(n))
    attempts = [0] * n
    from multiprocessing.connection import wait as wait_any  # here: a run without -j never loads it
    try:
        with _pool(_context(), min(jobs, n)) as pool:
            workers = pool.active
            while done[0] < n:
                _feed(pool, workers, queue, fn, tasks)
                busy = [w for w in workers if w.held]
                if not busy:                              # every send failed: start fresh workers
                    workers = [pool.replace(w) for w in workers]
                    continue
                try:
                    ready = set(wait_any([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=1.0))
                except OSError as e:          # the poll itself needs a descriptor
                    raise resource_error(e, "a poll of the pipes of the worker processes of -j") from None
                for w in busy:
                    if w.conn not in ready and w.proc.sentinel not in ready:
                        continue
                    broken = _collect(w, on_result, done)
                    if w.held and (broken or not w.alive()):
                        why = w.death()
                        i = w.held.popleft()                   # the task it was running
                        queue.extendleft(reversed(w.held))     # the ones it had not started
                        w.held.clear()
                        attempts[i] += 1
                        if attempts[i] > retries:
                            done[0] += 1
                            on_result(i, TaskFailure(f"worker process {why} while running it "
                                                     f"({attempts[i]} attempts)"))
                        else:
                            queue.appendleft(i)
                        workers[workers.index(w)] = pool.replace(w)
    except KeyboardInterrupt:
        raise Interrupted(done[0], n) from None
