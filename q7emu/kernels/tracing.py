"""The trace recorder's contract: what a kernel, a program, the machine and a user's recorder agree on
(docs/traces.md §1.2), as :class:`typing.Protocol` classes a type checker reads, and :func:`run_traced`, the one
place a kernel API hands a recorder to a compiled ``run()``.

* :class:`TraceSink`: what one traced run records into (the compiled recorder, src/trace/trace_buffer.pxi, reads
  its filters and calls ``block`` / ``tick`` / ``finish``; the kernel API calls ``abort`` when the run raises).
* :class:`Recorder`: ``begin_run(kernel, knobs) -> TraceSink`` (q7emu.analysis.trace.Recorder is one);
  :class:`PlacedRecorder` also says ``at_partition(base)``, the view the machine hands a record's kernel so the
  trace names absolute SBUF partitions.
* :class:`RawRecorder`: the minimal recorder, the full-operand stream of a run in one piece: ``window`` / ``ops``
  filter it, ``add_run(raw, kernel=..., knobs=...)`` receives it.

``trace=`` of every kernel API, program runner and ``Machine.execute`` is a :data:`TraceRecorder` or None.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeAlias, runtime_checkable

__all__ = ["TraceSink", "Recorder", "PlacedRecorder", "RawRecorder", "TraceRecorder", "run_traced"]


class TraceSink(Protocol):
    """One traced run (docs/traces.md §1.2). The compiled recorder reads the filters (each may be None / 0 /
    False): ``window`` (lo, hi) sequence numbers, ``ops`` mnemonics, ``partitions`` ranges, ``bundles``,
    ``partition_base`` (added to the kernel's partition index), ``seq_start``, ``skeleton`` (no register bytes),
    ``tick_ops`` and ``mutate`` (mnemonic, bundle), and writes ``mutate_hits``."""

    def block(self, raw: bytes, names: bytes = b"") -> None:
        """One finished block of compact records (docs/traces.md §2) and the run's op-name table so far."""

    def tick(self, executed: int) -> None:
        """Progress: ``executed`` ops of the run so far."""

    def finish(self, executed: int, op_names: list[str]) -> None:
        """The run ended normally after ``executed`` ops."""

    def abort(self) -> None:
        """The run ended with an exception (Ctrl-C, a full disk): keep what was recorded."""


@runtime_checkable
class Recorder(Protocol):
    """A recorder that kernel runs stream compact blocks into (q7emu.analysis.trace.Recorder)."""

    def begin_run(self, kernel: str, knobs: dict[str, Any] | None = None) -> TraceSink:
        """Called before a traced run of ``kernel`` (its name) with its model ``knobs``; returns the run's sink."""


@runtime_checkable
class PlacedRecorder(Recorder, Protocol):
    """A :class:`Recorder` that can be told where the kernel's partition 0 sits in SBUF."""

    def at_partition(self, partition_base: int) -> Recorder:
        """This recorder, for runs whose kernel partition 0 is SBUF partition ``partition_base``."""


@runtime_checkable
class RawRecorder(Protocol):
    """The minimal recorder: ``window`` ((lo, hi) sequence numbers, or None) and ``ops`` (mnemonics, or None)
    filter the full-operand record stream of a run, which ``add_run`` receives whole."""

    window: tuple[int, int] | None
    ops: Any

    def add_run(self, raw: Any, *, kernel: str, knobs: dict[str, Any]) -> None:
        """The run's raw full-operand records (q7emu.analysis.trace.raw reads them)."""


#: what ``trace=`` takes everywhere (None: untraced)
TraceRecorder: TypeAlias = Recorder | RawRecorder


def run_traced(trace: TraceRecorder, run: Callable[..., Any], kernel: str, knobs: Mapping[str, Any]) -> None:
    """Run a kernel with ``trace``: a :class:`Recorder` gets a sink (``begin_run``) the run streams compact blocks
    into, and its ``abort()`` when the run raises; a :class:`RawRecorder` gets the run's full-operand stream
    (``add_run``). ``run(trace_arg, **kw)`` calls the extension (or a program's runner) with the sink, or with
    ``True`` and the raw recorder's ``trace_window`` / ``trace_ops``."""
    if not isinstance(trace, Recorder):
        raw = run(True, trace_window=getattr(trace, "window", None), trace_ops=getattr(trace, "ops", None))
        trace.add_run(raw, kernel=kernel, knobs=dict(knobs))
        return
    sink = trace.begin_run(kernel=kernel, knobs=dict(knobs))
    try:
        run(sink)
    except BaseException:
        sink.abort()
        raise
