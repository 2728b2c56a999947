"""The C heap of a replaying process keeps freed arrays for the next case, and SBUF starts on pages of its own
(q7emu.machine.heap, docs/limits.md §5).

Each child process allocates, writes and frees the large arrays of a case-sized round (16 MiB in four arrays) six
times and reports the page faults of the last five rounds: with glibc's own thresholds every round faults its
pages in again (the top of the heap is trimmed, about 2,000 faults a round); kept, no round after the first
faults. Page faults are counted by the kernel: a loaded host does not move them.
"""
from __future__ import annotations

import json
import mmap
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from firmware_tests.cli_support import ROOT
from q7emu.errors import InvalidArgument
from q7emu.machine import heap
from q7emu.machine.machine import Machine

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


# ----------------------------------------------------------------------------------------------- zeroed_pages
def test_zeroed_pages_is_a_new_writable_zero_array_of_its_own():
    a, b = heap.zeroed_pages((128, 0x30000)), heap.zeroed_pages((128, 0x30000))
    assert a.shape == (128, 0x30000) and a.dtype == np.uint8
    assert a.flags.c_contiguous and a.flags.writeable
    assert not a.any()
    a[5, 7] = 0xAB
    a[127, -1] = 1
    assert not b.any() and int(a.sum()) == 0xAB + 1     # no memory shared with another array
    c = pickle.loads(pickle.dumps(a))                   # a copy, as any array's
    assert np.array_equal(c, a) and c.flags.writeable
    assert heap.zeroed_pages((0, 16)).shape == (0, 16)


def _owner(a: np.ndarray) -> object:
    """The object whose memory ``a`` is a view of (a memoryview's: the exporter)."""
    base: object = a
    while isinstance(base, np.ndarray):
        base = base.base
    return base.obj if isinstance(base, memoryview) else base


@pytest.mark.skipif(not hasattr(mmap, "MAP_ANONYMOUS"), reason="no anonymous mappings: np.zeros")
def test_a_new_sbuf_is_a_mapping_of_its_own():
    assert isinstance(_owner(heap.zeroed_pages((128, 4096))), mmap.mmap)
    m = Machine("MARIANA")
    assert m.sbuf.shape == (128, m.partition_bytes) and not m.sbuf.any() and m.sbuf.flags.writeable
    assert isinstance(_owner(m.sbuf), mmap.mmap)


PAGES_CHILD = textwrap.dedent("""
    import os, resource, sys
    from q7emu.machine.heap import zeroed_pages
    a = zeroed_pages((128, 0x30000))                    # 24 MiB
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a[:, :4096] = 1                                     # one 4 KiB page of each partition's row
    f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    pid = os.fork()
    if pid == 0:                                        # a forked child's writes stay its own
        a[:, :] = 2
        os._exit(0)
    os.waitpid(pid, 0)
    print(f1 - f0, int(a[:, :4096].min()), int(a[:, 4096:].max()))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_zeroed_pages_fault_in_only_what_is_touched_and_stay_private():
    """Touching one page of each of SBUF's 128 rows faults in about 128 pages (4 KiB each), not the 24 MiB a huge-page
    or memset zeroing would; a forked child's writes never reach the parent (a private mapping). Page faults are
    counted by the kernel: a loaded host does not move them."""
    out = subprocess.run([sys.executable, "-c", PAGES_CHILD], capture_output=True, text=True, cwd=ROOT, check=True)
    faults, touched, untouched = (int(x) for x in out.stdout.split())
    assert 128 <= faults < 1024
    assert (touched, untouched) == (1, 0)
