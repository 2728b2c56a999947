"""Waiting on a q7emu process the tests started: its progress bar, its end (shared by the hostile worker tests and
the farm tests). Events only: a line on a pipe, never a fixed sleep."""
from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time

#: seconds a started q7emu may take before a test calls it hung
HANG = 180


def wait_for_progress(p: subprocess.Popen, done: int = 1, timeout: float = HANG) -> None:
    """Block until the progress bar on p's stderr (``--progress``) shows at least ``done`` finished cases or
    replays (``] DONE/TOTAL ``): the event that work is under way (on a slow machine the import alone can take
    seconds). What was read is kept in ``p.early_err`` for :func:`finish`."""
    got, fd = b"", p.stderr.fileno()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            got += chunk
            counts = [int(m) for m in re.findall(rb"\] (\d+)/\d+ ", got)]
            if counts and max(counts) >= done:
                p.early_err = got.decode(errors="replace")
                return
    p.early_err = got.decode(errors="replace")
    raise AssertionError(f"no progress shown: {p.early_err[-1500:]!r}")


def finish(p: subprocess.Popen, timeout: float = HANG) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of p once it ends (stderr includes what :func:`wait_for_progress` read);
    AssertionError "hung" after ``timeout`` seconds, the process group killed."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise AssertionError("q7emu hung") from None
    return p.returncode, out, getattr(p, "early_err", "") + err
