"""The text log (docs/traces.md §6): one line per op, streamed while the kernel runs."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import IO

from q7emu.analysis.trace.blocks import Block, decode_block
from q7emu.analysis.trace.layout import UNKNOWN_BUNDLE
from q7emu.analysis.trace.model import Trace
from q7emu.analysis.trace.ops import Op


# ---------------------------------------------------------------------- the text log
class LogWriter:
    """A streaming text log, one op per line (docs/traces.md §6), to a text stream: pass its
    :meth:`block` as ``Recorder(on_block=...)`` to log while the kernel runs."""

    def __init__(self, out: IO[str], names: Callable[[int], list[str]] | None = None) -> None:
        self.out = out
        self.names = names
        self.lines = 0
        self._lock = threading.Lock()       # threads may share a log: each block's lines stay together

    def block(self, run: int, raw: bytes, names: list[str]) -> None:
        """Log one raw v2 block of run ``run`` (op names of the run so far)."""
        self.write_block(decode_block(raw, names, run, f"run {run}"))

    def write_block(self, b: Block) -> None:
        """Log one decoded block."""
        t = Trace(b.records, b.operands, b.data)
        text = "".join(log_line(t[i]) + "\n" for i in range(len(t)))
        with self._lock:
            self.out.write(text)
            self.lines += len(t)


def log_line(op: Op) -> str:
    """One op as a text-log line."""
    parts = [f"{op.seq} p{op.partition} B{op.bundle if op.bundle != UNKNOWN_BUNDLE else '?'} {op.op}"]
    for o in op.operands:
        sep = "<=" if o.role == 1 else "="
        if o.kind == 5:
            parts.append(f"{o.name}{sep}{int.from_bytes(o.data, 'little', signed=True)}")
        elif not o.data:
            parts.append(f"{o.name}{sep}?")
        else:
            parts.append(f"{o.name}{sep}{'_'.join(o.lanes_hex())}")
    return " ".join(parts)
