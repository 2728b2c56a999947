"""The JSON Lines trace reader (format ``q7emu-trace-jsonl`` v1, docs/traces.md §4): streaming, every field
checked before use, records handed out as blocks."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from q7emu._version import __version__
from q7emu.analysis.trace.blocks import Block
from q7emu.analysis.trace.lanes import bytes_from_lanes
from q7emu.analysis.trace.layout import (
    DEFAULT_VIEW,
    JSONL_FORMAT,
    JSONL_VERSION,
    KERNEL_IDS,
    KERNELS,
    KIND_BYTES,
    KIND_IDS,
    MAX_JSONL_LINE,
    MAX_MNEMONIC,
    OPERAND_DTYPE,
    RECORD_DTYPE,
    ROLE_IDS,
    U64_MAX,
    UNKNOWN_BUNDLE,
    VIEW_IDS,
    VIEWS,
    TraceError,
    _int,
    check_runs,
    json_loads,
    object_items,
)
from q7emu.errors import ConcurrentUse

# ---------------------------------------------------------------------- JSON Lines reading (streaming)
#: (run, seq, partition, kernel id, bundle, mnemonic) of one JSON Lines record
RecordKey = tuple[int, int, int, int, int, bytes]
#: (kind, role, reg, view, bytes) of one operand
OperandTuple = tuple[int, int, int, int, bytes]


class JsonlReader:
    """Reads a JSON Lines trace line by line into :class:`Block` s of at most ``chunk`` records, checking
    every field (types, ranges, lane counts, nesting) before use."""

    def __init__(self, src: IO[str], where: str, chunk: int = 4096) -> None:
        self.src = src
        self.where = where
        self.chunk = chunk
        self.head: dict[str, Any] = {}
        self.case = ""
        self.q7emu_version = __version__
        self._kernels: dict[int, int] = {}
        self._counts: dict[int, int] = {}
        self._read = threading.Lock()           # held from the first records() on: the text is read once

    def runs(self) -> list[dict[str, Any]]:
        """The header's runs (checked), or ones made up from the records (after :meth:`blocks`)."""
        runs: list[dict[str, Any]] | None = self.head.get("runs")
        if runs is not None:
            return runs
        n = max(self._kernels) + 1 if self._kernels else 0
        return [{"kernel": KERNELS.get(self._kernels.get(i, 0), str(self._kernels.get(i, 0))),
                 "kernel_id": self._kernels.get(i, 0), "knobs": {}, "window": None, "ops": None,
                 "records": self._counts.get(i, 0)} for i in range(n)]

    def _header(self, obj: dict[str, Any], where: str) -> None:
        if obj.get("format") != JSONL_FORMAT:
            raise TraceError(f"{where}: header format {str(obj.get('format'))[:40]!r} is not {JSONL_FORMAT}")
        if obj.get("version", JSONL_VERSION) != JSONL_VERSION:
            raise TraceError(f"{where}: JSON Lines version {obj.get('version')!r} (this q7emu reads {JSONL_VERSION})")
        runs = obj.get("runs")
        if runs is not None:
            obj["runs"] = check_runs(runs, where)
        if not isinstance(obj.get("case", ""), str) or not isinstance(obj.get("q7emu_version", ""), str):
            raise TraceError(f"{where}: header 'case' and 'q7emu_version' must be strings")
        self.head = obj
        self.case = obj.get("case", "")
        self.q7emu_version = obj.get("q7emu_version", __version__)

    def records(self) -> Iterator[tuple[RecordKey, list[OperandTuple]]]:
        """((run, seq, partition, kernel, bundle, op bytes), operands) per op line. The text is read once: a second
        call (another thread's, or this one's again) is refused with :class:`q7emu.errors.ConcurrentUse`."""
        if not self._read.acquire(blocking=False):
            raise ConcurrentUse(f"{self.where}: a JsonlReader reads its text once and has begun: open a new reader "
                                "(one per thread) to read it again (docs/limits.md §4)")
        return self._records()

    def _records(self) -> Iterator[tuple[RecordKey, list[OperandTuple]]]:
        n = 0
        lineno = 0
        while True:
            line = self.src.readline(MAX_JSONL_LINE + 1)    # bounded: one endless line is never read whole
            if not line:
                break
            lineno += 1
            where = f"{self.where}:{lineno}"
            if len(line) > MAX_JSONL_LINE:
                raise TraceError(f"{where}: line longer than {MAX_JSONL_LINE} characters")
            if not line.strip():
                continue
            obj = json_loads(line, where)
            if not isinstance(obj, dict):
                raise TraceError(f"{where}: each line must be a JSON object")
            if "format" in obj and "op" not in obj:
                if n or self.head:
                    raise TraceError(f"{where}: a header line after the first record")
                self._header(obj, where)
                continue
            yield self._op_line(obj, n, where)
            n += 1

    def _op_line(self, obj: dict[str, Any], n: int, where: str) -> tuple[RecordKey, list[OperandTuple]]:
        name = obj.get("op")
        if not isinstance(name, str) or not name or len(name) > MAX_MNEMONIC or not name.isascii() or "\0" in name:
            raise TraceError(f"{where}: 'op' must be a mnemonic of 1..{MAX_MNEMONIC} ASCII characters")
        kern = obj.get("kernel", 0)
        if isinstance(kern, str):
            if kern not in KERNEL_IDS and not (kern.startswith("kernel") and kern[6:].isdigit()):
                raise TraceError(f"{where}: unknown kernel {kern[:40]!r}")
            kid = KERNEL_IDS[kern] if kern in KERNEL_IDS else int(kern[6:])
        else:
            kid = _int(obj, "kernel", where, 0, 255, default=0)
        if not 0 <= kid <= 255:
            raise TraceError(f"{where}: kernel id {kid} outside 0..255")
        head_runs = len(self.head.get("runs") or ())
        run = _int(obj, "run", where, 0, max(n, head_runs - 1), default=0)   # work bounded by the input's size
        seq = _int(obj, "seq", where, 0, U64_MAX, default=n)
        part = _int(obj, "partition", where, 0, 0xFFFFFFFF, default=0)
        bundle = _int(obj, "bundle", where, 0, 0xFFFF, default=UNKNOWN_BUNDLE)
        ops = []
        for w, od in object_items(obj.get("operands", []), 255, where,
                                  "'operands' must be a list of at most 255 objects", "operand"):
            kind = od.get("kind")
            kind = KIND_IDS.get(kind) if isinstance(kind, str) else (kind if type(kind) is int else None)
            if kind not in KIND_BYTES:
                raise TraceError(f"{w}: 'kind' must be one of {sorted(KIND_IDS)}")
            role = od.get("role", "src")
            role = ROLE_IDS.get(role) if isinstance(role, str) else (role if type(role) is int else None)
            if role not in (0, 1):
                raise TraceError(f"{w}: 'role' must be 'src' or 'dst'")
            view = od.get("view", DEFAULT_VIEW[kind])
            view = VIEW_IDS.get(view) if isinstance(view, str) else (view if type(view) is int else None)
            if view is None or not 0 <= view < len(VIEWS):
                raise TraceError(f"{w}: 'view' must be one of {[v for v, _ in VIEWS]}")
            reg = _int(od, "reg", w, 0, 255, default=255)
            lanes = od.get("lanes")
            if not isinstance(lanes, list) or len(lanes) > 512:
                raise TraceError(f"{w}: 'lanes' must be a list of hex strings")
            try:
                data = bytes_from_lanes(lanes, view, KIND_BYTES[kind])
            except TraceError as e:
                raise TraceError(f"{w}: {e}") from None
            ops.append((kind, role, reg, view, data))
        self._kernels.setdefault(run, kid)
        self._counts[run] = self._counts.get(run, 0) + 1
        return (run, seq, part, kid, bundle, name.encode()), ops

    def blocks(self) -> Iterator[Block]:
        """The records as in-memory blocks of at most ``chunk`` records."""
        rows: list[tuple[Any, ...]] = []
        oprows: list[tuple[int, ...]] = []
        chunks: list[bytes] = []
        doff = 0

        def make() -> Block:
            rec = np.array(rows, RECORD_DTYPE) if rows else np.zeros(0, RECORD_DTYPE)
            ops = np.array(oprows, OPERAND_DTYPE) if oprows else np.zeros(0, OPERAND_DTYPE)
            return Block(rec, ops, np.frombuffer(b"".join(chunks), np.uint8).copy())

        for (run, seq, part, kid, bundle, name), ops in self.records():
            first = len(oprows)
            for kind, role, reg, view, data in ops:
                oprows.append((len(rows), kind, role, reg, view, len(data), doff))
                chunks.append(data)
                doff += len(data)
            rows.append((run, seq, part, kid, bundle, name, len(ops), first))
            if len(rows) >= self.chunk:
                yield make()
                rows, oprows, chunks, doff = [], [], [], 0
        if rows or not self._counts:
            b = make()
            if b.records.size:
                yield b
