"""Waiting on a q7emu process the tests started: its progress bar, its end (shared by the hostile worker tests and
the farm tests). Events only: a line on a pipe, never a fixed sleep."""
from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from pathlib import Path

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


def slow_cases(folder: Path, copies: int) -> Path:
    """``copies`` cases in ``folder`` (hard links of one case's arrays) that each take a noticeable time to
    replay (a 0x7b E2M1 group-0 case of 4 MiB output, its arrays deflated: inflating them is most of a case's
    time since issue 38 made the rest fast): a run long enough to be interrupted while cases are still queued."""
    import numpy as np

    from q7emu.isa.records import make_dequant_record
    from q7emu.machine.cases import build_case, save_case
    pb, words = 0x30000, 4096
    rec = make_dequant_record(1, 0, 128, words, partition_bytes=pb).encode()
    src = np.random.default_rng(0).integers(0, 256, (128, words * 4), dtype=np.uint8)
    first = save_case(build_case(rec, "CAYMAN", [(0, 0, src)], partition_bytes=pb, name="c00"), folder / "c00",
                      compress=True)
    text = first.read_text()
    for i in range(1, copies):
        os.link(folder / "c00.npz", folder / f"c{i:02d}.npz")
        (folder / f"c{i:02d}.json").write_text(text)
    return folder
