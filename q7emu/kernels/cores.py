"""Running a kernel over partitions on several host threads, as the firmware splits channels.

TensorDequantize divides its active channels across the POOL cores (docs/firmware.md §1.5 "channel split",
get_cpu_id()); each Q7 core runs the same kernel on its own register file. q7emu mirrors that:
the partitions are cut into contiguous blocks and each block runs on a host thread with its own
register file (the kernels release the GIL). Results do not depend on the number of threads.
"""
from __future__ import annotations

import errno
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

_EXECUTOR: ThreadPoolExecutor | None = None
#: below this many source bytes in total a single thread is faster than handing out work
MIN_PARALLEL_BYTES = 1 << 19


def _forget_executor_after_fork() -> None:
    """In a forked child the parent's pool threads do not exist: a submit to the inherited executor would wait
    forever (replay / explore workers are forked), so the child starts its own on first use."""
    global _EXECUTOR
    _EXECUTOR = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_executor_after_fork)


def check_cores(cores: object) -> None:
    """`cores` must be None or a positive int."""
    from q7emu.errors import InvalidArgument
    if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
        raise InvalidArgument("cores", cores, "must be a positive integer or None")


def host_threads(cores: int | None, units: int, total_bytes: int) -> int:
    """Threads to use for `units` independent row blocks: `cores` if given (>= 1), else up to the
    host's CPU count (and at most 8, the POOL's core count)."""
    if cores is None:
        if total_bytes < MIN_PARALLEL_BYTES:
            return 1
        cores = min(os.cpu_count() or 1, 8)
    return max(1, min(int(cores), units))


def output_buffer(shape: tuple[int, int], traced: bool = False) -> np.ndarray:
    """A kernel's uint8 output array of ``shape`` (rows, bytes). Untraced, not initialised: the dequant kernels and
    QuantizeMX's data pass write every byte of theirs (firmware_tests/kernels/test_cores.py runs them on buffers
    filled with different bytes and compares), so zeroing it first would only add a serial pass over the whole
    output (0.24 ms per 4 MiB on the host of docs/build.md §3.7, a sixth of an NF4 group-0 call) before the threads
    start. Traced, zeroed: a recorder may make ops no-ops (mutation, docs/traces.md §8), and the bytes a skipped
    store leaves must not depend on what the memory held before."""
    return np.zeros(shape, dtype=np.uint8) if traced else np.empty(shape, dtype=np.uint8)


def run_blocks(fn: Callable[[int, int], object], units: int, threads: int) -> None:
    """Call fn(lo, hi) over `threads` contiguous slices of range(units), concurrently."""
    global _EXECUTOR
    if threads <= 1:
        fn(0, units)
        return
    if _EXECUTOR is None or _EXECUTOR._max_workers < threads:  # noqa: SLF001 - grow once
        _EXECUTOR = ThreadPoolExecutor(max_workers=max(threads, os.cpu_count() or 1),
                                       thread_name_prefix="q7core")
    bounds = [units * i // threads for i in range(threads + 1)]
    futures = []
    try:
        for i in range(threads):
            if bounds[i] < bounds[i + 1]:
                futures.append(_EXECUTOR.submit(fn, bounds[i], bounds[i + 1]))
    except RuntimeError as e:             # "can't start new thread": out of threads (ulimit -u), named, not a bug
        for f in futures:
            f.exception()                 # no thread of this call writes after it returns
        raise OSError(errno.EAGAIN, f"{e} (starting kernel thread {len(futures) + 1} of {threads}: give cores=1, "
                                    "or raise the process limit)") from None
    for f in futures:
        f.result()
