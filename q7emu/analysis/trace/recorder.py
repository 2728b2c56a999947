"""The recorder the kernels trace into (``trace=Recorder(...)``; docs/traces.md §1) and the checks of its
filter arguments."""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from q7emu.analysis.trace.blocks import Block, decode_block
from q7emu.analysis.trace.layout import (
    KERNEL_IDS,
    MAX_MNEMONIC,
    MAX_OPS_FILTER,
    MAX_PARTITION_RANGES,
    NAME_BYTES,
    OPERAND_ORDER,
    U64_MAX,
    known_mnemonics,
    nearest_mnemonics,
)
from q7emu.analysis.trace.model import Trace
from q7emu.analysis.trace.q7t import TraceWriter
from q7emu.errors import InvalidArgument, Q7Error

# ---------------------------------------------------------------------- the recorder
#: seconds a thread waiting for another thread's run looks again whether that thread is still alive
_OWNER_POLL_SECONDS = 0.5


class _RunLock:
    """Held by one thread from a run's ``begin_run`` to its ``finish`` / ``abort``, re-entrant (a callback of the
    recording thread may use its recorder). Another thread waits for it (a shared recorder records one run at a
    time: docs/traces.md §1.5); a thread that died holding it (a run begun but never finished) gives it up, so
    no one waits for ever."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._owner: threading.Thread | None = None
        self._depth = 0

    def acquire(self) -> None:
        me = threading.current_thread()
        with self._cond:
            while self._owner is not None and self._owner is not me:
                if not self._owner.is_alive():          # its run was begun and never ended: given up
                    self._owner, self._depth = None, 0
                    break
                self._cond.wait(_OWNER_POLL_SECONDS)
            self._owner = me
            self._depth += 1

    def release(self) -> None:
        with self._cond:
            if self._owner is not threading.current_thread() or self._depth == 0:
                return                                  # never held here (an abort after a finish): nothing to do
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._cond.notify_all()


class RunSink:
    """What the kernel's recorder (src/trace/trace_buffer.pxi) is handed for one run: the filters it reads
    (``window``, ``ops``, ``partitions``, ``bundles``, ``partition_base``, ``skeleton``, ``tick_ops``) and
    the calls it makes while the kernel runs (``block(raw)``, ``tick(executed)``, ``finish(executed,
    op_names)``)."""

    def __init__(self, owner: Recorder, run: int, partition_base: int | None = None) -> None:
        self.owner = owner
        self.run = run
        self.window = owner.window
        self.ops = owner.ops
        self.partitions = owner.partitions
        self.bundles = owner.bundles
        self.partition_base = owner.partition_base if partition_base is None else partition_base
        self.skeleton = owner.skeleton
        self.tick_ops = owner.tick_ops
        self.seq_start = owner.seq_start
        self.mutate = owner.mutate
        self.mutate_hits = 0
        self.records = 0
        self.done = False
        self._held = True               # the owner's run lock, taken by begin_run, given back at finish / abort

    def block(self, raw: bytes, names: bytes = b"") -> None:
        """One finished block (raw v2 bytes) and the run's op-name table so far (NAME_BYTES-byte NUL-padded
        names)."""
        self.records += int.from_bytes(raw[24:28], "little")
        if len(names) // NAME_BYTES != len(self.owner.op_names[self.run]):
            self.owner.op_names[self.run] = [names[i:i + NAME_BYTES].rstrip(b"\0").decode("ascii", "replace")
                                             for i in range(0, len(names), NAME_BYTES)]
        self.owner._block(self.run, raw)

    def tick(self, executed: int) -> None:
        """Progress: ``executed`` primitives of the run so far."""
        self.owner._tick(self.run, executed)

    def finish(self, executed: int, op_names: list[str]) -> None:
        """The run ended normally."""
        try:
            self.done = True
            self.owner.mutate_hits += self.mutate_hits
            self.owner._finish(self.run, executed, op_names)
        finally:
            self._release()

    def abort(self) -> None:
        """The run ended with an exception (the recorder keeps what it has)."""
        try:
            if not self.done:
                self.owner._abort(self.run)
        finally:
            self._release()

    def _release(self) -> None:
        if self._held:
            self._held = False
            self.owner._run_lock.release()


class Recorder:
    """Records every kernel run it is passed to (``trace=recorder``), with the filters applied inside the
    kernel's recorder (docs/traces.md §1.2).

    ``path=None`` keeps the compact blocks in memory (``recorder.trace`` decodes them); ``path=FILE`` streams
    them to a ``.q7t`` file; call :meth:`close` (or use the recorder as a context manager) to finish it.
    ``partition_base`` is added to the kernel's partition index (an SBUF instruction's first partition).
    ``skeleton=True`` stores no register bytes (what :mod:`q7emu.analysis.profile` needs). ``on_block(run,
    raw)`` / ``on_tick(run, executed)`` are called while the kernel runs (progress, text logs). ``seq_start`` is
    the sequence number of each run's first primitive (default 0). ``mutate=(mnemonic, bundle)`` turns every
    op of that mnemonic in that bundle into a no-op (its destinations keep their values) -- mutation testing of
    the kernels (docs/traces.md §8); ``mutate_hits`` then counts the ops it removed. ``output_name``: the output
    a file-system error names when ``path`` is a temporary file standing for it (``trace --jsonl``).

    **Threads.** A recorder may be shared by threads: it records one run at a time, whole. A thread whose kernel
    call begins a run while another thread's run is being recorded waits for that run to end, so every run's blocks
    are contiguous in the file and in memory, and :meth:`close` waits for the run being recorded. Threads that want
    their kernels to run side by side give each its own recorder (docs/traces.md §1.5)."""

    def __init__(self, window: tuple[int, int] | None = None, ops: Iterable[str] | None = None,
                 case: str = "", *, partitions: Any = None, bundles: Any = None,
                 path: str | os.PathLike[str] | None = None,
                 partition_base: int = 0, skeleton: bool = False,
                 on_block: Callable[[int, bytes], None] | None = None,
                 on_tick: Callable[[int, int], None] | None = None, tick_ops: int = 0, seq_start: int = 0,
                 mutate: tuple[str, int] | None = None, output_name: str | os.PathLike[str] | None = None) -> None:
        self.window = check_window(window)
        self.ops = check_ops(ops)
        self.partitions = check_partitions(partitions)
        self.bundles = check_bundles(bundles)
        self.case = case
        self.partition_base = check_partition_base(partition_base)
        self.skeleton = bool(skeleton)
        start = check_window((seq_start, seq_start))          # a pair: never None
        self.seq_start = start[0] if start is not None else 0
        self.mutate = check_mutate(mutate)
        self.mutate_hits = 0
        self.on_block = on_block
        self.on_tick = on_tick
        self.tick_ops = tick_ops if tick_ops else (1 << 16 if on_tick else 0)
        self.path = Path(path) if path is not None else None
        self.output_name = output_name
        self.runs: list[dict[str, Any]] = []
        self.run_blocks: list[list[bytes]] = []
        self.op_names: list[list[str]] = []
        self.raw_runs: list[tuple[Any, dict[str, Any]]] = []     # full-operand runs (add_run)
        self.writer: TraceWriter | None = None
        self.records = 0
        self.raw_bytes = 0
        self._run_records: list[int] = []
        self._trace: Trace | None = None
        self._run_lock = _RunLock()

    # ------------------------------------------------------------------ the kernel API's protocol
    def _info(self, kernel: str, knobs: dict[str, Any] | None, partition_base: int) -> dict[str, Any]:
        return {"kernel": kernel, "kernel_id": KERNEL_IDS.get(kernel, 0), "knobs": dict(knobs or {}),
                "operand_order": OPERAND_ORDER,
                "window": list(self.window) if self.window is not None else None,
                "ops": list(self.ops) if self.ops is not None else None,
                "partitions": [list(p) for p in self.partitions] if self.partitions is not None else None,
                "bundles": list(self.bundles) if self.bundles is not None else None,
                "partition_base": partition_base}

    def at_partition(self, partition_base: int) -> Any:
        """This recorder, for runs whose kernel partition 0 is SBUF partition ``partition_base`` (the machine
        hands a record's kernel this view): the base travels with the run, so threads sharing the recorder for
        records at different partitions never see each other's."""
        return _AtPartition(self, check_partition_base(partition_base))

    def begin_run(self, kernel: str, knobs: dict[str, Any] | None = None, *,
                  partition_base: int | None = None) -> RunSink:
        """Called by the kernel APIs before a traced run; returns the sink the kernel records into (its partition
        base ``partition_base``, default the recorder's). Waits while another thread's run is being recorded (class
        docstring); the sink's ``finish`` or ``abort`` ends the run."""
        base = self.partition_base if partition_base is None else partition_base
        self._run_lock.acquire()
        try:
            if self.raw_runs:
                raise Q7Error("a Recorder holds either full-operand runs (add_run) or compact runs, not both")
            if self.writer is not None and self.writer.closed:
                raise Q7Error("this Recorder's trace file is closed: record into a new Recorder")
            if self.path is not None and self.writer is None:
                self.writer = TraceWriter(self.path, case=self.case, shown_as=self.output_name)
            info = self._info(kernel, knobs, base)
            self.runs.append(info)
            self.run_blocks.append([])
            self.op_names.append([])
            self._run_records.append(0)
            if self.writer is not None:
                self.writer.begin_run(info)
            self._trace = None
            return RunSink(self, len(self.runs) - 1, base)
        except BaseException:
            self._run_lock.release()
            raise

    def _block(self, run: int, raw: bytes) -> None:
        n = int.from_bytes(raw[24:28], "little")
        self.records += n
        self._run_records[run] += n
        self.raw_bytes += len(raw)
        if self.writer is not None:
            self.writer.add_block(run, raw)
        else:
            self.run_blocks[run].append(raw)
        if self.on_block is not None:
            self.on_block(run, raw)

    def _tick(self, run: int, executed: int) -> None:
        if self.on_tick is not None:
            self.on_tick(run, executed)

    def _finish(self, run: int, executed: int, names: list[str]) -> None:
        info = self.runs[run]
        info["records"] = self._run_records[run]
        info["executed"] = int(executed)
        self.op_names[run] = list(names)
        if self.writer is not None:
            self.writer.end_run(run, {"records": info["records"], "executed": info["executed"]}, names)

    def _abort(self, run: int) -> None:
        self.runs[run]["aborted"] = True

    def add_run(self, raw: Any, kernel: str, knobs: dict[str, Any] | None = None) -> None:
        """A full-operand run (src/trace/q7trace.pxd MODE_LEGACY layout; any bytes-like object, kept without
        a copy), e.g. from the interpreter's ``run(..., trace=True)``."""
        self._run_lock.acquire()
        try:
            if self.runs:
                raise Q7Error("a Recorder holds either full-operand runs (add_run) or compact runs, not both")
            info = {"kernel": kernel, "kernel_id": KERNEL_IDS.get(kernel, 0), "knobs": dict(knobs or {}),
                    "operand_order": OPERAND_ORDER,
                    "window": list(self.window) if self.window is not None else None,
                    "ops": list(self.ops) if self.ops is not None else None}
            self.raw_runs.append((raw if raw is not None else b"", info))
            self._trace = None
        finally:
            self._run_lock.release()

    # ------------------------------------------------------------------ results
    def close(self) -> None:
        """Finish the trace file (``path=`` recorders): footer, trailer, atomic rename. Waits for a run another
        thread is recording."""
        self._run_lock.acquire()
        try:
            if self.writer is not None:
                self.writer.case = self.case
                self.writer.close()
        finally:
            self._run_lock.release()

    def abort(self) -> None:
        """Give the trace file up (it never appears; an existing file stays as it was)."""
        self._run_lock.acquire()
        try:
            if self.writer is not None:
                self.writer.abort()
        finally:
            self._run_lock.release()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
            return
        self._run_lock.acquire()
        try:
            if self.writer is not None:
                self.writer.abort(exc_type, exc, tb)
        finally:
            self._run_lock.release()

    @property
    def raw(self) -> bytes:
        """All full-operand runs' raw records concatenated (``add_run``)."""
        return b"".join(bytes(memoryview(r)) for r, _ in self.raw_runs)

    def blocks(self, run: int | None = None, values: bool = True) -> Iterator[Block]:
        """The in-memory runs' blocks, decoded one at a time."""
        for i, blocks in enumerate(self.run_blocks):
            if run is not None and i != run:
                continue
            for k, raw in enumerate(blocks):
                yield decode_block(raw, self.op_names[i], i, f"run {i} block {k}", values)

    @property
    def trace(self) -> Trace:
        """The :class:`Trace` of every run so far (decoded on first access; in-memory recorders only; waits for a
        run another thread is recording)."""
        self._run_lock.acquire()
        try:
            return self._decoded()
        finally:
            self._run_lock.release()

    def _decoded(self) -> Trace:
        if self._trace is None:
            if self.raw_runs:
                self._trace = Trace.from_runs(self.raw_runs, self.case)
            elif self.writer is not None:
                raise Q7Error("a path= Recorder streams to its file: read it with q7emu.analysis.trace.load")
            else:
                self._trace = Trace.concat(list(self.blocks()), [dict(r) for r in self.runs], self.case)
        return self._trace

    def __len__(self) -> int:
        return len(self.trace)


class _AtPartition:
    """A :class:`Recorder` seen by a kernel whose partition 0 is SBUF partition ``base``
    (:meth:`Recorder.at_partition`): its runs begin at that base; everything else is the recorder's."""

    def __init__(self, recorder: Recorder, base: int) -> None:
        self._recorder = recorder
        self.partition_base = base

    def begin_run(self, kernel: str, knobs: dict[str, Any] | None = None) -> RunSink:
        return self._recorder.begin_run(kernel, knobs, partition_base=self.partition_base)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._recorder, name)


# ---------------------------------------------------------------------- argument checks
def check_window(window: Any) -> tuple[int, int] | None:
    """A trace window as (lo, hi) 64-bit sequence numbers, or None; InvalidArgument when malformed."""
    if window is None:
        return None
    try:
        lo, hi = (int(x) for x in window)
    except (TypeError, ValueError, OverflowError):
        raise InvalidArgument("window", window, "must be (start, end) integers") from None
    if not 0 <= lo <= hi <= U64_MAX:
        raise InvalidArgument("window", window, "needs 0 <= start <= end <= 2**64-1")
    return lo, hi


def check_ops(ops: Any) -> list[str] | None:
    """A trace op filter as a list of mnemonics (at most 64), or None; InvalidArgument for an
    unknown mnemonic."""
    if ops is None:
        return None
    names = [ops] if isinstance(ops, str) else list(ops)
    names = [str(n).strip() for n in names if str(n).strip()]
    if not names:
        return None
    if len(names) > MAX_OPS_FILTER:
        raise InvalidArgument("ops", len(names), f"at most {MAX_OPS_FILTER} mnemonics")
    known = known_mnemonics()
    for n in names:
        if len(n) > MAX_MNEMONIC or not n.isascii() or (known and n not in known):
            near = nearest_mnemonics(n, known) if len(n) <= MAX_MNEMONIC else []
            raise InvalidArgument("ops", n, "not an IVP mnemonic of the op table (see `q7emu ops`)"
                                  + (f"; nearest: {', '.join(near)}" if near else ""))
    return names


def check_partitions(parts: Any) -> list[tuple[int, int]] | None:
    """A partition filter: ranges (lo, hi) or single partitions (absolute SBUF partitions, at most 64
    ranges after merging), or None."""
    if parts is None:
        return None
    items = [parts] if isinstance(parts, (int, str)) else list(parts)
    ranges = []
    for it in items:
        try:
            lo, hi = (int(it), int(it) + 1) if isinstance(it, (int, np.integer)) else (int(it[0]), int(it[1]))
        except (TypeError, ValueError, IndexError, OverflowError):
            raise InvalidArgument("partitions", it, "each item is a partition or a (start, end) range") from None
        if not 0 <= lo <= hi <= 0xFFFFFFFF:
            raise InvalidArgument("partitions", it, "needs 0 <= start <= end <= 2**32-1")
        if lo < hi:
            ranges.append((lo, hi))
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    if not merged:
        raise InvalidArgument("partitions", parts, "selects no partition")
    if len(merged) > MAX_PARTITION_RANGES:
        raise InvalidArgument("partitions", len(merged), f"at most {MAX_PARTITION_RANGES} ranges")
    return merged


def check_mutate(mutate: Any) -> tuple[str, int] | None:
    """A mutation (mnemonic, bundle) checked: a mnemonic of 1..31 ASCII characters and a bundle 0..65535, or
    None."""
    if mutate is None:
        return None
    if (not isinstance(mutate, tuple | list) or len(mutate) != 2 or not isinstance(mutate[0], str)
            or not 0 < len(mutate[0]) <= MAX_MNEMONIC or not mutate[0].isascii() or isinstance(mutate[1], bool)
            or not isinstance(mutate[1], int) or not 0 <= mutate[1] <= 0xFFFF):
        raise InvalidArgument("mutate", mutate, f"must be (mnemonic of 1..{MAX_MNEMONIC} ASCII characters, "
                                                "bundle 0..65535)")
    return (mutate[0], int(mutate[1]))


def check_bundles(bundles: Any) -> list[int] | None:
    """A bundle filter (bundle indices 0..65535, ``B<n>`` of the listing), or None."""
    if bundles is None:
        return None
    items = [bundles] if isinstance(bundles, (int, str)) else list(bundles)
    out = {_int_upto("bundles", b, 0xFFFF, "bundle indices are integers", "needs 0 <= bundle <= 65535") for b in items}
    if not out:
        raise InvalidArgument("bundles", bundles, "selects no bundle")
    return sorted(out)


def check_partition_base(base: Any) -> int:
    """The partition base (an SBUF instruction's first partition), 0..2**32-1."""
    return _int_upto("partition_base", base, 0xFFFFFFFF, "must be an integer", "needs 0 <= base <= 2**32-1")


def _int_upto(name: str, value: Any, hi: int, not_int: str, out_of_range: str) -> int:
    """``int(value)`` when it is 0..hi; InvalidArgument(name, value, ...) saying ``not_int`` or ``out_of_range``."""
    try:
        v = int(value)
    except (TypeError, ValueError, OverflowError):
        raise InvalidArgument(name, value, not_int) from None
    if not 0 <= v <= hi:
        raise InvalidArgument(name, value, out_of_range)
    return v
