"""The signal dispositions the signal tests need (shared by the hostile, CLI, fileio and farm tests).

A test run started in the background of a non-interactive shell (``pytest &`` in a script: POSIX ignores
SIGINT and SIGQUIT there) or under ``nohup`` (SIGHUP) inherits those signals ignored, and q7emu rightly keeps an
ignored signal ignored (docs/limits.md §4), so a Ctrl-C test would see its signal do nothing. A test that sends
a stop signal starts its process (or runs its own code) inside :func:`default_dispositions`: SIGINT is Python's
KeyboardInterrupt handler and SIGTERM / SIGHUP their defaults there, and a child started inside inherits them
(an exec turns the Python handler into the default, which the child's Python then replaces with its own).
"""
from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

#: the signals q7emu treats as a request to stop (docs/limits.md §4)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def default_dispositions() -> Iterator[None]:
    """SIGINT -> ``signal.default_int_handler``, SIGTERM and SIGHUP -> ``SIG_DFL`` inside the block (main thread
    only, as ``signal.signal``); the previous handlers afterwards."""
    saved = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def cpu_seconds(pid: int) -> float:
    """The user + system CPU seconds process ``pid`` has spent so far (Linux: /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
