"""The C heap of a process that runs many cases: freed arrays kept for the next case (docs/limits.md §5).

A full-size case allocates and frees about 12 MiB of large arrays: its source and expected bytes read from the
``.npz``, the operand gathered from SBUF, the kernel's output. glibc's malloc gives a block that large back to the
system when it is freed (an ``mmap``-ed block is unmapped; free memory at the top of the heap past its trim
threshold is trimmed), so the next case's arrays start as fresh pages that the kernel zeroes on first touch: about
2,000 page faults a case, 5-9 ms of system CPU against 9-14 ms of the rest of a case (2-core AMD EPYC, E2M1
group 0 at avx2, ``bench/replay_throughput.py``). :func:`keep_freed_memory` raises glibc's two thresholds so that
those blocks stay in the process and the next case reuses them: no page faults after the first case, and about the
same peak (the next case takes what the last one freed; a larger trim threshold kept more of the holes that cases of
different sizes leave: docs/limits.md §5).

:func:`q7emu.machine.replay.replay` calls it (so ``q7emu replay`` and its forked ``-j`` workers), the CLI before
every command and the pytest plugin when it replays cases. A program of your own that runs many cases another way
may call it too; it changes how this process's C heap gives memory back, nothing else. ``Q7EMU_HEAP=libc`` keeps
the C library's own policy. On a C library other than glibc (macOS, musl, Windows) it does nothing.

A new SBUF image that starts as zeros (:func:`zeroed_pages`: ``Machine`` without an image, the first case a thread
replays) is a private anonymous mapping of its own, whose pages the kernel zeroes as a case first touches them.
``np.zeros`` would give the same pages outside the policy above (a script that makes a ``Machine``), but numpy asks
for transparent huge pages on an array that large: the first input row a record reads then faults in all of SBUF at
2 MiB a page (the 128 partitions' rows span every one of them), compacting memory for them where the host's is
fragmented. On the 2-core host above, loading a full-size case's inputs into a new ``Machine`` in a fresh process took
1.3 ms on its own mapping (4 KiB pages, only those touched), and on ``np.zeros`` the same 1.3 ms while the host had
free huge pages but 13-25 ms of system CPU in two of ten processes when it had to compact for them (a 24 MiB
``np.zeros`` touched once: 47 ms in one of ten). A ``q7emu replay`` process (the policy on: the array comes from the
heap, in small pages) is unchanged, about 1.3 ms either way.
"""
from __future__ import annotations

import mmap
import os
from typing import TYPE_CHECKING

from q7emu.errors import InvalidArgument

if TYPE_CHECKING:
    import numpy as np

__all__ = ["HEAP_ENV", "MMAP_THRESHOLD_BYTES", "TRIM_THRESHOLD_BYTES", "heap_policy", "keep_freed_memory",
           "zeroed_pages"]

#: the environment variable: ``reuse`` (the default) or ``libc``
HEAP_ENV = "Q7EMU_HEAP"
#: a block up to this size comes from the heap, not from its own mapping (glibc's M_MMAP_THRESHOLD; 32 MiB is the
#: largest glibc takes on 64-bit hosts): the 24 MiB SBUF image of 0x30000-byte partitions fits
MMAP_THRESHOLD_BYTES = 32 << 20
#: free memory at the top of the heap is given back to the system only past this size (glibc's M_TRIM_THRESHOLD): what
#: a full-size case frees (about 12 MiB) with room to spare; 128 MiB raised the peak of 12 failing cases by 70 MiB
TRIM_THRESHOLD_BYTES = 32 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3        # mallopt's parameter numbers (glibc malloc.h)
_applied: bool | None = None


def heap_policy() -> str:
    """``reuse`` (``Q7EMU_HEAP`` unset, empty or ``reuse``) or ``libc``; InvalidArgument naming the variable for
    any other value."""
    value = os.environ.get(HEAP_ENV, "") or "reuse"
    if value not in ("reuse", "libc"):
        raise InvalidArgument(HEAP_ENV, value, "must be reuse or libc (or unset: reuse); docs/limits.md §5")
    return value


def keep_freed_memory() -> bool:
    """Keep freed blocks of up to :data:`MMAP_THRESHOLD_BYTES` in this process's C heap for reuse (glibc's
    ``mallopt``: the mmap threshold to :data:`MMAP_THRESHOLD_BYTES`, the trim threshold to
    :data:`TRIM_THRESHOLD_BYTES`). Returns True when glibc took both, False when ``Q7EMU_HEAP=libc`` or the C
    library is not glibc. The first call decides; later calls return its answer (after checking the variable).
    Raises InvalidArgument for a bad ``Q7EMU_HEAP``."""
    global _applied
    policy = heap_policy()
    if _applied is None:
        _applied = policy == "reuse" and _set_thresholds()
    return _applied


def _set_thresholds() -> bool:
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
    except (ValueError, OSError, AttributeError):      # not glibc: no such name, or no confstr (Windows)
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))


def zeroed_pages(shape: tuple[int, int]) -> np.ndarray:
    """A new writable, C-contiguous uint8 array of ``shape`` (rows, bytes per row), every byte 0, on memory of its own
    (module docstring): a private anonymous mapping, so no byte is written and no page faulted in before it is used,
    and a page never touched costs nothing; unmapped when the array and its views are gone. Where the platform has no
    anonymous ``mmap`` flags (Windows), ``np.zeros``."""
    import numpy as np  # here: the CLI imports this module before it knows whether a command needs numpy

    nbytes = shape[0] * shape[1]
    private: int | None = getattr(mmap, "MAP_PRIVATE", None)
    anonymous: int | None = getattr(mmap, "MAP_ANONYMOUS", None)
    if nbytes <= 0 or private is None or anonymous is None:
        return np.zeros(shape, dtype=np.uint8)
    try:
        pages = mmap.mmap(-1, nbytes, flags=private | anonymous)
    except OSError:         # no address space for a mapping of its own: the C heap's zeros
        return np.zeros(shape, dtype=np.uint8)
    return np.frombuffer(pages, dtype=np.uint8).reshape(shape)
