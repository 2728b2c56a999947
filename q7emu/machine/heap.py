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
"""
from __future__ import annotations

import os

from q7emu.errors import InvalidArgument

__all__ = ["HEAP_ENV", "MMAP_THRESHOLD_BYTES", "TRIM_THRESHOLD_BYTES", "heap_policy", "keep_freed_memory"]

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
