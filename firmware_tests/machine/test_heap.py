"""The C heap of a replaying process keeps freed arrays for the next case (q7emu.machine.heap, docs/limits.md §5).

Each child process allocates, writes and frees the large arrays of a case-sized round (16 MiB in four arrays) six
times and reports the page faults of the last five rounds: with glibc's own thresholds every round faults its
pages in again (the top of the heap is trimmed, about 2,000 faults a round); kept, no round after the first
faults. Page faults are counted by the kernel: a loaded host does not move them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from firmware_tests.cli_support import ROOT
from q7emu.errors import InvalidArgument
from q7emu.machine import heap

GLIBC = bool(getattr(os, "confstr_names", {}).get("CS_GNU_LIBC_VERSION")) and bool(
    os.confstr("CS_GNU_LIBC_VERSION"))

CHILD = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    how = sys.argv[1]
    applied = None
    if how == "api":
        from q7emu.machine.heap import keep_freed_memory
        applied = keep_freed_memory()
    elif how == "cli":
        import os
        from q7emu.cli.main import main
        sys.stdout = open(os.devnull, "w")
        assert main(["ops"]) == 0
        sys.stdout = sys.__stdout__

    def case_round():
        arrays = [np.ones(n << 20, np.uint8) for n in (6, 4, 2, 4)]     # every page written
        return sum(int(a[-1]) for a in arrays)

    case_round()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        case_round()
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
    print(json.dumps({"applied": applied, "faults": faults}))
""")


def _child(how: str, **env: str) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, how], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, **env}, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def libc_faults() -> float:
    """The faults of a round under glibc's own thresholds; the tests that need them to be many skip otherwise."""
    if not GLIBC:
        pytest.skip("not glibc: keep_freed_memory does nothing here")
    got = _child("none", Q7EMU_HEAP="libc")
    if got["faults"] < 500:
        pytest.skip(f"this glibc does not give the round's arrays back ({got['faults']} faults a round)")
    return float(got["faults"])


@pytest.mark.parametrize("how", ["api", "cli"])
def test_freed_arrays_are_reused(how, libc_faults):
    got = _child(how, Q7EMU_HEAP="reuse")
    assert got["faults"] < 50 < libc_faults, (got, libc_faults)
    if how == "api":
        assert got["applied"] is True


def test_libc_keeps_the_c_librarys_policy(libc_faults):
    got = _child("api", Q7EMU_HEAP="libc")
    assert got["applied"] is False and got["faults"] > 500, got


@pytest.mark.parametrize("value", ["yes", "REUSE", "off"])
def test_a_bad_q7emu_heap_names_the_variable(value, monkeypatch):
    monkeypatch.setenv(heap.HEAP_ENV, value)
    with pytest.raises(InvalidArgument, match="Q7EMU_HEAP"):
        heap.keep_freed_memory()
    r = subprocess.run([sys.executable, "-m", "q7emu", "replay", str(ROOT / "examples" / "cases")],
                       capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=300)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Q7EMU_HEAP" in r.stderr, r.stderr
