"""Resources that run out (issue 41 item 10): ``ulimit -n 8`` with ``replay -j 2`` said ``[Errno 24] Too many open
files`` naming nothing. A resource error names what was being opened (docs/limits.md §3): the pipe or the fork of a
worker process, the poll of their pipes, a file by its path.

Each command runs in a subprocess whose open-file limit is set before it starts (RLIMIT_NOFILE), over the limits
from where Python itself cannot start to where the run fits: at each one it either passes or refuses in one line
naming what it opened.
"""
from __future__ import annotations

import errno
import re
import resource
import subprocess
import sys

import pytest
from hostile_lib import EXAMPLES, HANG, Outcome, assert_clean_error, env

from q7emu.fileio import resource_error

LINUX = sys.platform.startswith("linux")


def limited(nofile):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    return set_limit


def run_limited(nofile, *argv):
    p = subprocess.run([sys.executable, "-m", "q7emu", *argv], capture_output=True, text=True, env=env(),
                       timeout=HANG, preexec_fn=limited(nofile))
    return Outcome(p.returncode, p.stdout, p.stderr)


#: what a refusal may name: the thing opened (a worker's pipe, its fork, the poll), or a file by its path
NAMED = re.compile(r"\(opening [a-z]|: '/|\(writing /|: /")


@pytest.mark.skipif(not LINUX, reason="RLIMIT_NOFILE and fork")
@pytest.mark.parametrize("argv", [["replay", str(EXAMPLES), "-j", "2"], ["explore", str(EXAMPLES / "cayman"), "-j", "2",
                                                                       "--knobs", "nibble_order"]],
                         ids=["replay", "explore"])
def test_too_few_open_files_names_what_was_being_opened(argv):
    """From 8 open files (numpy and the kernels still import) up: a run that fits passes; one that does not is one
    line naming what it was opening. ``replay -j 2`` named nothing before."""
    outcomes = []
    for nofile in range(8, 24):
        out = run_limited(nofile, *argv)
        if out.returncode == 2 and "Too many open files" in out.stderr:
            line = assert_clean_error(out)
            assert NAMED.search(line), (nofile, line)
            outcomes.append("named")
        else:
            assert out.returncode == 0 and "Traceback" not in out.stderr, (nofile, out.describe())
            outcomes.append("pass")
    assert "named" in outcomes and outcomes[-1] == "pass", outcomes


def test_resource_error_names_only_what_names_nothing():
    e = resource_error(OSError(errno.EMFILE, "Too many open files"), "a pipe to a worker process of -j")
    assert str(e) == "[Errno 24] Too many open files (opening a pipe to a worker process of -j)"
    named = OSError(errno.EMFILE, "Too many open files", "/x/case.json")
    assert resource_error(named, "it") is named                 # it names its file already
    other = OSError(errno.EIO, "Input/output error")
    assert resource_error(other, "it") is other                 # not a resource running out


EARLY_SIGTERM = r"""
import os, signal, sys
from q7emu.machine import workers

def stop(signum, frame):                   # what the CLI installs while a command runs
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, stop)
real = workers._worker_main

def early(*args):                          # a SIGTERM (the parent's terminate at exit) lands before the worker
    os.kill(os.getpid(), signal.SIGTERM)   # has set its own dispositions
    real(*args)

workers._worker_main = early
got = {}
workers.run_tasks(os.getpid().__class__, [1, 2], 2, got.__setitem__)
print(sorted(v.reason if isinstance(v, workers.TaskFailure) else "ran" for v in got.values()))
"""


@pytest.mark.skipif(not LINUX, reason="fork and signal masks")
def test_a_sigterm_before_a_worker_sets_its_dispositions_still_ends_it():
    """The hang the open-file limits found (``explore -j 2`` at ``ulimit -n 10``): the second worker could not start,
    the first was terminated at exit while still starting, took the SIGTERM in the handler it inherited and dropped
    it, and the parent waited for it for ever. A worker starts with SIGINT, SIGTERM and SIGHUP blocked until it has
    set its own dispositions, so such a SIGTERM ends it."""
    from hostile_lib import python
    out = python(EARLY_SIGTERM)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.describe()
    assert out.stdout.strip() == str(["worker process killed by SIGTERM while running it (2 attempts)"] * 2), \
        out.describe()


NO_THREADS = r"""
import threading, numpy as np
real = threading.Thread.start

def start(self):                           # the process may start one kernel thread, no more (ulimit -u)
    if self.name.startswith("q7core") and sum(t.name.startswith("q7core") for t in threading.enumerate()) >= 1:
        raise RuntimeError("can't start new thread")
    return real(self)

threading.Thread.start = start
import q7emu
src = np.random.default_rng(0).integers(0, 256, (128, 8192), dtype=np.uint8)
try:
    q7emu.dequantize(src, "e2m1", cores=4)
    print("ran")
except OSError as e:
    print(f"OSError {e}")
print((q7emu.dequantize(src, "e2m1", cores=1) == q7emu.golden.dequantize(src, "e2m1")).all())
"""


def test_no_thread_left_for_the_kernel_cores_is_a_named_resource_error():
    """``cores=N`` starts host threads; when the process may start no more (``ulimit -u``), the RuntimeError ``can't
    start new thread`` was q7emu's bug (exit 3 on the command line); it is a resource error naming the kernel thread
    it was starting, and cores=1 still runs."""
    from hostile_lib import python
    out = python(NO_THREADS)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.describe()
    first, second = out.stdout.strip().splitlines()
    assert first.startswith("OSError [Errno 11] can't start new thread (starting kernel thread ") and second == "True"
