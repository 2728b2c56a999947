"""The ``.q7t`` trace file writer (format ``q7emu-trace`` v2, docs/traces.md §2): the preamble, each block
compressed and framed as it comes, the footer and trailer; written atomically."""
from __future__ import annotations

import contextlib
import json
import os
import threading
import zlib
from pathlib import Path
from typing import IO, Any

from q7emu._version import __version__
from q7emu.analysis.trace.blocks import block_stats
from q7emu.analysis.trace.layout import (
    CODEC,
    CODEC_LEVEL,
    END_MAGIC,
    FILE_FORMAT,
    FILE_VERSION,
    FRAME,
    FRAME_MAGIC,
    MAGIC,
    PREAMBLE,
    TRAILER,
    TraceError,
)
from q7emu.fileio import atomic_write, named_os_error


# ---------------------------------------------------------------------- the binary file: writing
class TraceWriter:
    """Writes a ``.q7t`` v2 file block by block (docs/traces.md §2): the preamble at once, each block as it
    comes (compressed, framed, CRC-32), the footer and trailer at :meth:`close`. A path is written through
    :func:`q7emu.fileio.atomic_write` (a temporary file renamed when complete; removed on error or abort), so
    an interrupted trace never leaves a partial file. ``dest`` may also be an open binary stream. ``shown_as``: the
    output an error names when ``dest`` is a temporary file standing for it.

    Threads may share a writer: each call (:meth:`begin_run`, :meth:`add_block`, :meth:`end_run`, :meth:`close`,
    :meth:`abort`) is whole, so the blocks, their index and the footer stay consistent (a run's blocks are
    contiguous only when its caller keeps them so: :class:`~q7emu.analysis.trace.Recorder` does)."""

    def __init__(self, dest: str | os.PathLike[str] | IO[bytes], case: str = "", q7emu_version: str = __version__,
                 level: int = CODEC_LEVEL, *, shown_as: str | os.PathLike[str] | None = None) -> None:
        self.case = case
        self.q7emu_version = q7emu_version
        self.level = level
        self.runs: list[dict[str, Any]] = []
        self.names: list[list[str]] = []
        self.index: list[list[int]] = []
        self.records = 0
        self.raw_bytes = 0
        self._ctx: Any = None
        self._lock = threading.RLock()
        self.dest = Path(dest) if isinstance(dest, (str, os.PathLike)) else None
        #: the output errors name (``shown_as``: the file a temporary ``dest`` stands for; docs/limits.md §3)
        self.shown_as = shown_as if shown_as is not None else self.dest
        if isinstance(dest, (str, os.PathLike)):
            self._ctx = atomic_write(dest, "wb", shown_as=shown_as)
            self.fh: IO[bytes] = self._ctx.__enter__()
        else:
            self.fh = dest
        head = json.dumps({"format": FILE_FORMAT, "version": FILE_VERSION, "q7emu_version": q7emu_version,
                           "codec": CODEC}, separators=(",", ":")).encode()
        pre = PREAMBLE.pack(MAGIC, FILE_VERSION, len(head)) + head
        pre += b"\0" * (-len(pre) % 8)
        self._put(pre)
        self.pos = len(pre)
        self.closed = False

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort(exc_type, exc, tb)

    def _put(self, data: bytes) -> None:
        """Write ``data``; a file-system error (full, too large) names the destination."""
        try:
            self.fh.write(data)
        except OSError as e:
            raise (named_os_error(e, self.shown_as) if self.shown_as is not None else e) from None

    def begin_run(self, info: dict[str, Any]) -> int:
        """Start a run (its info as in the footer's ``runs``); returns its index."""
        with self._lock:
            self._open_for("begin a run")
            self.runs.append(dict(info))
            self.names.append([])
            return len(self.runs) - 1

    def add_block(self, run: int, raw: bytes) -> int:
        """Compress and write one raw block of ``run``; returns the compressed size in bytes."""
        st = block_stats(raw)
        comp = zlib.compress(raw, self.level)
        crc = zlib.crc32(comp)
        with self._lock:
            self._open_for("add a block")
            self._put(FRAME.pack(FRAME_MAGIC, len(comp), len(raw), crc))
            self._put(comp)
            self.index.append([self.pos, len(comp), len(raw), crc, run, st["records"], st["operands"],
                               st["first_seq"], st["last_seq"], st["first_partition"], st["last_partition"],
                               self.records])
            self.pos += FRAME.size + len(comp)
            self.records += st["records"]
            self.raw_bytes += len(raw)
        return len(comp)

    def end_run(self, run: int, updates: dict[str, Any], names: list[str]) -> None:
        """Finish run ``run``: add ``updates`` (records, executed ...) to its info and its op-name table."""
        with self._lock:
            self.runs[run].update(updates)
            self.names[run] = list(names)

    def _open_for(self, what: str) -> None:
        if self.closed:
            raise TraceError(f"{self.shown_as or 'the trace'}: cannot {what}: the trace file is closed")

    def close(self) -> None:
        """Write the footer and trailer and (for a path) make the file appear atomically."""
        with self._lock:
            if self.closed:
                return
            runs = [dict(r, op_names=n) for r, n in zip(self.runs, self.names)]
            foot = json.dumps({"format": FILE_FORMAT, "version": FILE_VERSION, "q7emu_version": self.q7emu_version,
                               "case": self.case, "codec": CODEC, "records": self.records, "runs": runs,
                               "blocks": self.index}, separators=(",", ":")).encode()
            self._put(foot)
            self._put(TRAILER.pack(END_MAGIC, self.pos, len(foot), zlib.crc32(foot), self.records))
            self.pos += len(foot) + TRAILER.size
            self.closed = True
            if self._ctx is not None:
                self._ctx.__exit__(None, None, None)

    def abort(self, exc_type: Any = None, exc: Any = None, tb: Any = None) -> None:
        """Give the file up: for a path, the temporary file is removed and an existing file stays as it was."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self._ctx is not None:
                err = exc if exc is not None else TraceError("trace aborted")
                with contextlib.suppress(BaseException):
                    self._ctx.__exit__(type(err), err, tb)
