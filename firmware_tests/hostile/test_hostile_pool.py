"""The worker pool under threads and signals (issue 27 items 2 and 3).

* Two threads calling run_tasks / replay with jobs=2 at once each get exactly their own results (they shared
  one global pool without a lock: results crossed between threads, ``ValueError: ... is not in list``) and
  leave no worker process behind.
* SIGTERM, SIGHUP or SIGKILL to ``q7emu replay DIR -j 2`` ends its workers too (each forked worker held the
  parent's end of its own pipe and of its siblings', so none ever saw end-of-file, and they kept stdout open:
  ``q7emu replay DIR -j 2 | tee log`` never finished).

Every wait is for an event (a line on a pipe, a process gone) with a hang timeout, never a fixed sleep.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from hostile_lib import EXAMPLES, python
from signal_support import default_dispositions
from test_hostile_workers import finish, slow_cases, start, wait_for_progress, wait_for_workers  # noqa: F401

LINUX = sys.platform.startswith("linux")

THREADS = """
import os, sys, threading, time, multiprocessing as mp
from q7emu.machine import workers
from q7emu.machine.workers import run_tasks

def tagged(arg):
    tag, k = arg
    time.sleep(0.002 * (k % 3))
    return tag, k, os.getpid()

errors, bad = [], []
def caller(tag, rounds=6, n=40):
    try:
        for _ in range(rounds):
            got = {}
            run_tasks(tagged, [(tag, k) for k in range(n)], 2, lambda i, v: got.__setitem__(i, v))
            if sorted(got) != list(range(n)) or any(v[:2] != (tag, i) for i, v in got.items()):
                bad.append((tag, sorted(got), [v[:2] for v in got.values() if v[0] != tag][:3]))
    except BaseException as e:
        errors.append(f"{tag}: {type(e).__name__}: {e}")

threads = [threading.Thread(target=caller, args=(t,)) for t in "ABC"]
threads.append(threading.Thread(target=caller, args=("M",)))
for t in threads: t.start()
caller("main")                                  # the main thread too, on the persistent pool
for t in threads: t.join()
live = [p for p in mp.active_children()]
print("errors", errors)
print("bad", bad[:3])
print("children", len(live), "pool", len(workers._POOL))
workers.shutdown()
print("after-shutdown", len(mp.active_children()))
"""


def test_threads_calling_run_tasks_at_once_each_get_their_own_results():
    out = python(THREADS, timeout=240)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.describe()
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert lines["errors"] == "[]", out.describe()
    assert lines["bad"] == "[]", out.describe()
    # only the main thread's persistent pool is left; the other threads' workers ended with their calls
    assert lines["children"] == "2 pool 2", out.describe()
    assert lines["after-shutdown"] == "0", out.describe()


REPLAY_THREADS = """
import sys, threading
from pathlib import Path
from q7emu.machine.replay import replay

folders = sys.argv[1:]
want = {f: sorted(str(p) for p in Path(f).glob("*.json")) for f in folders}
problems = []
def caller(folder):
    try:
        for _ in range(3):
            res = replay([folder], jobs=2, progress=False)
            paths = sorted(r.path for r in res)
            if paths != want[folder] or not all(r.ok for r in res):
                problems.append((folder, len(paths), [p for p in paths if p not in want[folder]][:2]))
    except BaseException as e:
        problems.append(f"{type(e).__name__}: {e}")
ts = [threading.Thread(target=caller, args=(f,)) for f in folders]
for t in ts: t.start()
for t in ts: t.join()
print("problems", problems)
"""


def test_threads_calling_replay_at_once_get_their_own_cases():
    folders = sorted(p for p in EXAMPLES.iterdir() if p.is_dir())[:2]
    out = python(REPLAY_THREADS, *map(str, folders), timeout=240)
    assert out.returncode == 0 and out.stdout.strip() == "problems []", out.describe()


def _gone(pids, within=10.0):
    """Wait until none of ``pids`` is alive (a process gone is the event; the bound is a hang guard)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [k for k in pids if os.path.exists(f"/proc/{k}") and _state(k) not in ("Z", "X")]
        if not alive:
            return []
        time.sleep(0.02)                       # polling /proc: a process's death in another session has no event
    return alive


def _state(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


@pytest.mark.skipif(not LINUX, reason="needs /proc to find the workers")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGKILL"])
def test_a_signal_to_replay_j2_ends_its_workers_and_releases_stdout(slow_cases, sig):  # noqa: F811
    p = start("replay", str(slow_cases), "-j", "2", "--progress")
    kids = wait_for_workers(p, 2)
    wait_for_progress(p)                        # the workers are replaying cases
    os.kill(p.pid, getattr(signal, sig))        # the parent alone, as `kill PID` or a closing terminal does
    try:                                        # EOF on stdout: nothing holds the pipe any more (`| tee` ends)
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise AssertionError(f"stdout still held after {sig}: the workers outlived q7emu") from None
    assert _gone(kids) == [], f"workers still running after {sig}"
    if sig != "SIGKILL":                        # a handled signal: what finished, then exit 128 + signal
        err = getattr(p, "early_err", "") + err
        assert p.returncode == 128 + getattr(signal, sig), (p.returncode, out[-500:], err[-1000:])
        assert "Traceback" not in err, err
        assert any(line.startswith("interrupted: ") for line in out.splitlines()), out[-1000:]


@pytest.mark.skipif(not LINUX, reason="needs /proc to find the workers")
def test_workers_of_a_killed_api_caller_die_with_it(tmp_path):
    """A Python program (no CLI signal handlers) killed while run_tasks runs: its workers go too."""
    code = """
import os, sys, time
from q7emu.machine.workers import run_tasks
def slow(k):
    time.sleep(30)
    return k
print("pid", os.getpid(), flush=True)
run_tasks(slow, list(range(4)), 2, lambda i, v: None)
"""
    with default_dispositions():
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(EXAMPLES.parents[1])}, start_new_session=True)
    assert p.stdout.readline().startswith("pid")
    kids = wait_for_workers(p, 2)
    os.kill(p.pid, signal.SIGTERM)             # Python's default: die at once, no cleanup
    p.wait(timeout=60)
    assert _gone(kids) == [], "workers outlived their parent"
    shutil.rmtree(tmp_path, ignore_errors=True)


NESTED = """
import multiprocessing as mp
from q7emu.machine import workers
from q7emu.machine.workers import run_tasks
def sq(x):
    return x * x
outer = {}
def take(i, v):
    inner = {}
    run_tasks(sq, [v, v + 1], 2, lambda j, w: inner.__setitem__(j, w))   # a call made from on_result
    outer[i] = (v, inner)
run_tasks(sq, list(range(6)), 2, take)
assert outer == {i: (i * i, {0: i ** 4, 1: (i * i + 1) ** 2}) for i in range(6)}, outer
print("ok", len(mp.active_children()), len(workers._POOL))
"""


def test_a_call_from_on_result_gets_its_own_workers():
    """The nested call found the persistent pool busy: it used to clear the outer call's bookkeeping."""
    out = python(NESTED, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["ok", "2", "2"], out.describe()
