"""The trace in memory, :class:`Trace` (numpy record / operand arrays and a data blob, docs/traces.md §1),
and the trace file opened for reading, :class:`TraceFile` (``.q7t`` v2 block by block through its index, v1
and JSON Lines read whole; every read bounded and checked, docs/traces.md §2). The two are one module because
each builds the other: a Trace loads and saves through the file classes, a TraceFile hands out Traces."""
from __future__ import annotations

import io
import json
import os
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from q7emu._version import __version__
from q7emu.analysis.trace.blocks import Block, BlockEncoder, decode_block, parse_raw
from q7emu.analysis.trace.jsonl import JsonlReader
from q7emu.analysis.trace.lanes import _move_segments
from q7emu.analysis.trace.layout import (
    BLK_RECORDS,
    CODEC,
    END_MAGIC,
    FILE_FORMAT,
    FRAME,
    FRAME_MAGIC,
    HEADER_BYTES,
    KIND_BYTES,
    MAGIC,
    MAX_FOOTER_BYTES,
    MAX_HEADER_BYTES,
    MAX_MNEMONIC,
    MAX_NAMES,
    MAX_RAW_BLOCK,
    MAX_V1_BYTES,
    NAME_BYTES,
    OP_DTYPE,
    OPERAND_DTYPE,
    OPERAND_HEADER_BYTES,
    OPERAND_ORDER,
    PREAMBLE,
    READ_VERSIONS,
    RECORD_DTYPE,
    TRAILER,
    U64_MAX,
    V1_OPERAND_DTYPE,
    V1_RECORD_DTYPE,
    VIEWS,
    TraceError,
    _int,
    check_runs,
    json_loads,
)
from q7emu.analysis.trace.ops import Op, Operand, _jsonl_header, format_op, op_json
from q7emu.analysis.trace.q7t import TraceWriter
from q7emu.errors import InvalidArgument
from q7emu.fileio import atomic_write, open_regular


class Trace:
    """A lane-level trace in memory (docs/traces.md §1 has the arrays, §2-§4 the file formats).

    Fine for the traces of small runs and for tests; a trace of a whole-SBUF instruction is read block by
    block with :class:`TraceFile` instead (``q7emu trace show / diff / export`` do)."""

    def __init__(self, records: np.ndarray | None = None, operands: np.ndarray | None = None,
                 data: np.ndarray | None = None, runs: list[dict[str, Any]] | None = None,
                 case: str = "", q7emu_version: str = __version__) -> None:
        self.records = _as_dtype(records, RECORD_DTYPE)
        self.operands = _as_dtype(operands, OPERAND_DTYPE)
        self.data = data if data is not None else np.zeros(0, np.uint8)
        # a run built in memory without an operand convention holds this q7emu's records (docs/traces.md §1.4)
        self.runs = [r if "operand_order" in r else dict(r, operand_order=OPERAND_ORDER) for r in runs or []]
        self.case = case
        self.q7emu_version = q7emu_version

    # ------------------------------------------------------------------ building
    @classmethod
    def from_runs(cls, runs: Sequence[tuple[bytes, dict[str, Any]]], case: str = "") -> Trace:
        """Build from (full-operand raw bytes, run info) pairs, run info as in the file footer's ``runs``."""
        parts, infos = [], []
        for i, (raw, info) in enumerate(runs):
            r, o, d = parse_raw(raw, run=i)
            parts.append(Block(r, o, d))
            infos.append(dict(info, records=int(r.size)))
        return cls.concat(parts, infos, case)

    @classmethod
    def concat(cls, blocks: Sequence[Block], runs: list[dict[str, Any]], case: str = "",
               q7emu_version: str = __version__) -> Trace:
        """Join decoded blocks (in order) into one trace."""
        if not blocks:
            return cls(runs=runs, case=case, q7emu_version=q7emu_version)
        nrec = np.cumsum([0] + [b.records.size for b in blocks])
        nops = np.cumsum([0] + [b.operands.size for b in blocks])
        ndat = np.cumsum([0] + [b.data.size for b in blocks])
        rec = np.concatenate([b.records for b in blocks])
        ops = np.concatenate([b.operands for b in blocks])
        rec["operand0"] += np.repeat(nops[:-1], [b.records.size for b in blocks]).astype(np.uint64)
        ops["record"] += np.repeat(nrec[:-1], [b.operands.size for b in blocks]).astype(np.uint64)
        ops["offset"] += np.repeat(ndat[:-1], [b.operands.size for b in blocks]).astype(np.uint64)
        return cls(rec, ops, np.concatenate([b.data for b in blocks]), runs, case, q7emu_version)

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return int(self.records.size)

    def __iter__(self) -> Iterator[Op]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, i: int) -> Op:
        r = self.records[i]
        k0 = int(r["operand0"])
        ops = []
        for j in range(int(r["n_operands"])):
            o = self.operands[k0 + j]
            off, nb = int(o["offset"]), int(o["nbytes"])
            ops.append(Operand(j, int(o["kind"]), int(o["role"]), int(o["reg"]), int(o["view"]),
                               self.data[off:off + nb].tobytes()))
        return Op(int(i), int(r["run"]), int(r["seq"]), int(r["partition"]), int(r["kernel"]), int(r["bundle"]),
                  r["op"].decode("ascii", "replace"), ops)

    def mnemonics(self) -> list[str]:
        """The mnemonic of every record, in order."""
        return [m.decode("ascii", "replace") for m in self.records["op"]]

    def op_counts(self) -> dict[str, int]:
        """Records per mnemonic, most frequent first (ties by name)."""
        names, counts = np.unique(self.records["op"], return_counts=True)
        pairs = sorted(((n.decode(), int(c)) for n, c in zip(names, counts)), key=lambda t: (-t[1], t[0]))
        return dict(pairs)

    def select(self, op: Iterable[str] | str | None = None, seq: tuple[int | None, int | None] | None = None
               ) -> np.ndarray:
        """Row indices of the records whose mnemonic is in ``op`` and whose seq is in [lo, hi)."""
        keep = np.ones(len(self), bool)
        if op:
            names = [op] if isinstance(op, str) else list(op)
            keep &= np.isin(self.records["op"], np.array([n.encode() for n in names], OP_DTYPE))
        if seq is not None:
            lo, hi = seq
            if lo is not None:
                keep &= self.records["seq"] >= np.uint64(lo)
            if hi is not None:
                keep &= self.records["seq"] < np.uint64(hi)
        return np.nonzero(keep)[0]

    def subset(self, rows: np.ndarray) -> Trace:
        """A new trace holding only records ``rows`` (operands and data compacted)."""
        rows = np.asarray(rows, np.int64)
        rec = self.records[rows].copy()
        first = rec["operand0"].astype(np.int64)
        cnt = rec["n_operands"].astype(np.int64)
        oidx = np.repeat(first, cnt) + (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        ops = self.operands[oidx].copy()
        ops["record"] = np.repeat(np.arange(rows.size), cnt)
        rec["operand0"] = np.cumsum(cnt) - cnt
        nb = ops["nbytes"].astype(np.int64)
        newoff = np.cumsum(nb) - nb
        data = np.zeros(int(nb.sum()), np.uint8)
        _move_segments(self.data, ops["offset"].astype(np.int64), data, newoff, nb)
        ops["offset"] = newoff
        return Trace(rec, ops, data, self.runs, self.case, self.q7emu_version)

    # ------------------------------------------------------------------ the full-operand raw stream
    def record_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(start byte of every record, start byte of every operand header) in :meth:`to_raw`'s stream."""
        nb = self.operands["nbytes"].astype(np.int64)
        osz = OPERAND_HEADER_BYTES + nb
        ocum = np.concatenate(([0], np.cumsum(osz)))
        recidx = self.operands["record"].astype(np.int64)
        first = self.records["operand0"].astype(np.int64)
        rstart = HEADER_BYTES * np.arange(len(self), dtype=np.int64) + ocum[first] if len(self) else \
            np.zeros(0, np.int64)
        opos = HEADER_BYTES * (recidx + 1) + ocum[:-1]
        return rstart, opos

    def to_raw(self, run: int | None = None) -> bytes:
        """The full-operand raw record stream (src/trace/q7trace.pxd MODE_LEGACY layout, seq truncated to
        32 bits) of every run, or of one run."""
        t = self if run is None else self.subset(np.nonzero(self.records["run"] == run)[0])
        n = len(t)
        if n == 0:
            return b""
        rstart, opos = t.record_bounds()
        nb = t.operands["nbytes"].astype(np.int64)
        total = n * HEADER_BYTES + int((OPERAND_HEADER_BYTES + nb).sum())
        out = np.zeros(total, np.uint8)
        r = t.records
        rend = np.concatenate((rstart[1:], [total]))

        def put(pos: np.ndarray, vals: np.ndarray, width: int) -> None:
            v = vals.astype(np.uint64)
            for j in range(width):
                out[pos + j] = ((v >> np.uint64(8 * j)) & np.uint64(0xFF)).astype(np.uint8)

        put(rstart, r["seq"], 4)
        put(rstart + 4, r["bundle"], 2)
        out[rstart + 6] = r["kernel"]
        out[rstart + 7] = r["n_operands"]
        put(rstart + 8, rend - rstart, 4)
        put(rstart + 12, r["partition"], 4)
        out[rstart[:, None] + np.arange(16, HEADER_BYTES)] = \
            np.ascontiguousarray(r["op"]).view(np.uint8).reshape(n, NAME_BYTES)
        o = t.operands
        if o.size:
            out[opos] = o["kind"]
            out[opos + 1] = o["role"]
            out[opos + 2] = o["reg"]
            out[opos + 3] = o["view"]
            put(opos + 4, nb, 4)
            _move_segments(t.data, o["offset"].astype(np.int64), out, opos + OPERAND_HEADER_BYTES, nb)
        return out.tobytes()

    # ------------------------------------------------------------------ the binary file
    def encode_runs(self) -> Iterator[tuple[int, dict[str, Any], list[str], list[bytes]]]:
        """(run index, run info, op names, raw v2 blocks) of every run, encoded as the kernel recorder does."""
        r = self.records
        runs = self.runs or [{}]
        nrun = max(len(runs), int(r["run"].max()) + 1 if len(self) else 0)
        order = np.argsort(r["run"], kind="stable")        # the rows of each run, found once (not per run)
        starts = np.searchsorted(r["run"][order], np.arange(nrun + 1, dtype=np.int64))
        for i in range(nrun):
            rows = order[starts[i]:starts[i + 1]]
            blocks: list[bytes] = []
            info = dict(runs[i]) if i < len(runs) else {}
            enc = BlockEncoder(blocks.append, int(info.get("kernel_id", 0) or 0))
            for row in rows.tolist():
                op = self[row]
                if len(op.operands) > 255:
                    raise TraceError(f"record {row}: more than 255 operands")
                ops = []
                for o in op.operands:
                    if o.kind not in KIND_BYTES or len(o.data) != KIND_BYTES[o.kind]:
                        raise TraceError(f"record {row}: {o.describe()} of {len(o.data)} bytes cannot be stored")
                    ops.append((o.kind, o.role, o.reg, o.view, o.data))
                enc.add(op.seq, op.partition, op.kernel, op.bundle, op.op.encode(), ops)
            enc.flush()
            info["records"] = int(rows.size)
            yield i, info, enc.op_names(), blocks

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the ``.q7t`` v2 file atomically; returns the path."""
        with TraceWriter(path, case=self.case, q7emu_version=self.q7emu_version) as w:
            for i, info, names, blocks in self.encode_runs():
                w.begin_run(info)
                for b in blocks:
                    w.add_block(i, b)
                w.end_run(i, {"records": info["records"]}, names)
        return Path(path)

    def to_bytes(self) -> bytes:
        """The ``.q7t`` v2 file bytes (deterministic: the same trace always gives the same bytes)."""
        buf = io.BytesIO()
        w = TraceWriter(buf, case=self.case, q7emu_version=self.q7emu_version)
        for i, info, names, blocks in self.encode_runs():
            w.begin_run(info)
            for b in blocks:
                w.add_block(i, b)
            w.end_run(i, {"records": info["records"]}, names)
        w.close()
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes, where: str = "trace") -> Trace:
        """Parse ``.q7t`` file bytes (version 1 or 2); TraceError naming ``where`` when malformed."""
        return TraceFile(io.BytesIO(blob), where=where).read()

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Trace:
        """Read a binary trace file (v1 or v2), or a JSON Lines export (detected by its first byte)."""
        with TraceFile(path) as f:
            return f.read()

    def validate(self, where: str = "trace") -> None:
        """Check the arrays are consistent (operand ranges, offsets, lane layouts)."""
        r, o = self.records, self.operands
        cnt = r["n_operands"].astype(np.int64)
        if int(cnt.sum()) != o.size:
            raise TraceError(f"{where}: records name {int(cnt.sum())} operands, the operand table has {o.size}")
        if r.size and not np.array_equal(r["operand0"].astype(np.int64), np.cumsum(cnt) - cnt):
            raise TraceError(f"{where}: records' operand0 indices are not contiguous")
        if not o.size and self.data.size:
            raise TraceError(f"{where}: data blob without operands")
        if r.size and int(r["run"].max()) >= max(len(self.runs), r.size):   # saving makes one entry per run index
            raise TraceError(f"{where}: run index {int(r['run'].max())} beyond the {len(self.runs)} runs listed "
                             f"and the {r.size} records (docs/traces.md §4)")
        if o.size:
            if not np.array_equal(o["record"].astype(np.int64), np.repeat(np.arange(r.size), cnt)):
                raise TraceError(f"{where}: operand rows do not follow their records")
            nb = o["nbytes"].astype(np.int64)
            if not np.array_equal(o["offset"].astype(np.int64), np.cumsum(nb) - nb) or int(nb.sum()) != self.data.size:
                raise TraceError(f"{where}: operand data must fill the data blob in operand order")
            if (o["view"] >= len(VIEWS)).any():
                raise TraceError(f"{where}: unknown lane view index")
            bits = np.array([b for _, b in VIEWS], np.int64)[o["view"].astype(np.int64)]
            if ((nb == 0) | ((8 * nb) % bits != 0)).any():
                raise TraceError(f"{where}: an operand's bytes do not fill whole lanes of its view")

    # ------------------------------------------------------------------ show and JSON Lines
    def format_op(self, op: int | Op, lanes: tuple[int | None, int | None] | None = None,
                  per_row: int | None = None) -> str:
        """One record (its index in this trace, or an :class:`Op` taken from it) in its operands' lane views
        (hex lanes; ``lanes`` = [lo, hi) lane filter)."""
        return format_op(op if isinstance(op, Op) else self[op], lanes, per_row)

    def show(self, op: Iterable[str] | str | None = None, seq: tuple[int | None, int | None] | None = None,
             lanes: tuple[int | None, int | None] | None = None) -> Iterator[str]:
        """The formatted records selected by mnemonic / seq range, lanes limited to ``lanes``."""
        for i in self.select(op, seq):
            yield self.format_op(int(i), lanes)

    def op_json(self, i: int) -> dict[str, Any]:
        """Record ``i`` as its JSON Lines object (lanes as hex strings)."""
        return op_json(self[i])

    def iter_jsonl(self) -> Iterator[str]:
        """The JSON Lines text: the header line, then one line per record (no newlines)."""
        yield _jsonl_header(self.case, self.runs, self.q7emu_version)
        for i in range(len(self)):
            yield json.dumps(self.op_json(i), separators=(",", ":"))

    def to_jsonl(self, dest: str | os.PathLike[str] | IO[str]) -> None:
        """Write the JSON Lines form to a path (atomically) or a text stream."""
        if isinstance(dest, (str, os.PathLike)):
            with atomic_write(dest, "w", newline="\n") as fh:
                self.to_jsonl(fh)
            return
        for line in self.iter_jsonl():
            dest.write(line + "\n")

    @classmethod
    def from_jsonl(cls, src: str | os.PathLike[str] | IO[str], where: str | None = None) -> Trace:
        """Read a JSON Lines trace (a path or a text stream); TraceError naming ``where`` and the line."""
        if isinstance(src, (str, os.PathLike)):
            try:
                with _open_text(src) as fh:
                    return cls.from_jsonl(fh, where=str(src))
            except UnicodeDecodeError as e:
                raise TraceError(f"{src}: not UTF-8 text ({e.reason})") from None
        reader = JsonlReader(src, where or "jsonl")
        blocks = list(reader.blocks())
        t = cls.concat(blocks, reader.runs(), reader.case, reader.q7emu_version)
        t.validate(reader.where)
        return t


def _as_dtype(arr: np.ndarray | None, dt: np.dtype) -> np.ndarray:
    if arr is None:
        return np.zeros(0, dt)
    if arr.dtype == dt:
        return arr
    return arr.astype(dt)


def _widen_v1(arr: np.ndarray, dt: np.dtype) -> np.ndarray:
    """A version 1 array in today's layout, field by field (run / seq / operand indices widen, and the 16-byte
    op field becomes a NAME_BYTES one, NUL-padded)."""
    out = np.zeros(arr.shape, dt)
    for name in dt.names or ():
        out[name] = arr[name]
    return out


def _first_kernel_per_run(rec: np.ndarray) -> list[int]:
    if rec.size == 0:
        return []
    out = []
    for run in range(int(rec["run"].max()) + 1):
        k = rec["kernel"][rec["run"] == run]
        out.append(int(k[0]) if k.size else 0)
    return out


def _open_bytes(path: str | os.PathLike[str]) -> IO[bytes]:
    """A trace file opened for binary reading through :func:`q7emu.fileio.open_regular` (docs/limits.md §1:
    a FIFO, device, socket or folder is refused without blocking); TraceError for those."""
    try:
        return open_regular(path)
    except InvalidArgument as e:
        raise TraceError(f"{path}: {e.rule}") from None


def _open_text(path: str | os.PathLike[str]) -> IO[str]:
    """A JSON Lines trace opened as strict UTF-8 text, read through :func:`_open_bytes`."""
    return io.TextIOWrapper(_open_bytes(path), encoding="utf-8", errors="strict")



# ---------------------------------------------------------------------- the binary file: reading
def _read_exact(fh: IO[bytes], n: int, where: str, what: str) -> bytes:
    b = fh.read(n)
    if len(b) != n:
        raise TraceError(f"{where}: file truncated in {what} ({len(b)} of {n} bytes)")
    return b


def _read_footer(fh: Any, size: int, body_start: int, w: str) -> tuple[dict[str, Any], int, int]:
    """(the footer, its offset, the trailer's record count) of a v2 file of ``size`` bytes whose blocks start at
    ``body_start``; TraceError for a partial file (no trailer), a damaged one or a footer that is not one."""
    if size < body_start + TRAILER.size:
        raise TraceError(f"{w}: partial trace file (no trailer: the recording did not finish)")
    fh.seek(size - TRAILER.size)
    end, foot_off, foot_len, foot_crc, nrec = TRAILER.unpack(_read_exact(fh, TRAILER.size, w, "the trailer"))
    if end != END_MAGIC:
        raise TraceError(f"{w}: partial or damaged trace file (no trailer: the recording did not finish)")
    if foot_len > MAX_FOOTER_BYTES or foot_off < body_start or foot_off + foot_len + TRAILER.size != size:
        raise TraceError(f"{w}: damaged trace file (footer at {foot_off}, {foot_len} bytes)")
    fh.seek(foot_off)
    foot_raw = _read_exact(fh, foot_len, w, "the footer")
    if zlib.crc32(foot_raw) != foot_crc:
        raise TraceError(f"{w}: damaged trace file (footer checksum mismatch)")
    foot = json_loads(foot_raw, f"{w}: footer")
    if not isinstance(foot, dict) or foot.get("format") != FILE_FORMAT:
        raise TraceError(f"{w}: footer is not a {FILE_FORMAT} footer")
    return foot, foot_off, nrec


def _block_index(blocks: Any, nruns: int, body_start: int, foot_off: int, nrec: int, w: str
                 ) -> tuple[list[list[int]], list[int]]:
    """(the footer's block index, checked: each entry 12 integers, the blocks back to back from ``body_start``
    (8-aligned) up to the footer, ``nrec`` records in all; the records of each run)."""
    if not isinstance(blocks, list):
        raise TraceError(f"{w}: footer 'blocks' must be a list")
    idx = []
    pos, total = body_start + (-body_start % 8), 0
    run_counts = [0] * nruns
    for k, b in enumerate(blocks):
        if (not isinstance(b, list) or len(b) != 12
                or any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= U64_MAX for x in b)):
            raise TraceError(f"{w}: block index entry {k} is not 12 integers")
        off, clen, rlen, _crc, run, nr, _no, first, last, _p0, _p1, r0 = b
        if off != pos or off + FRAME.size + clen > foot_off or rlen > MAX_RAW_BLOCK or run >= nruns \
                or r0 != total or not 0 < nr <= BLK_RECORDS or last < first:
            raise TraceError(f"{w}: block index entry {k} is inconsistent with the file")
        pos = off + FRAME.size + clen
        total += nr
        run_counts[run] += nr
        idx.append(b)
    if pos != foot_off:
        raise TraceError(f"{w}: blocks do not fill the file up to the footer")
    if total != nrec:
        raise TraceError(f"{w}: the block index counts {total} records, the trailer {nrec}")
    return idx, run_counts


class TraceFile:
    """A trace file opened for reading, block by block: ``.q7t`` v2 (seeks through its block index), v1 or
    JSON Lines (read whole). Checks the trailer, the footer, every block's CRC-32 and record count before
    using them; a partial or damaged file is a TraceError of one line.

    ``runs``, ``case``, ``q7emu_version``, ``records`` (count); :meth:`blocks` / :meth:`ops` stream the
    records, optionally only a seq range or one run; :meth:`read` gives the whole :class:`Trace`."""

    def __init__(self, src: str | os.PathLike[str] | IO[bytes], where: str | None = None) -> None:
        self._io = threading.Lock()
        self._own = isinstance(src, (str, os.PathLike))
        self.where = where or (str(src) if self._own else "trace")
        if isinstance(src, (str, os.PathLike)):
            p = Path(src)
            try:
                if p.is_dir():
                    raise TraceError(f"{p}: is a folder, not a trace file")
                self.fh: IO[bytes] = _open_bytes(p)
            except FileNotFoundError:
                raise TraceError(f"{p}: no such trace file") from None
            except PermissionError:
                raise TraceError(f"{p}: permission denied") from None
        else:
            self.fh = src
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> TraceFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (when this object opened it)."""
        if self._own:
            self.fh.close()

    def _open(self) -> None:
        w = self.where
        fh = self.fh
        fh.seek(0, os.SEEK_END)
        self.size = fh.tell()
        fh.seek(0)
        first = fh.read(16)
        self.kind = "v2"
        self._trace: Trace | None = None
        if first[:1] == b"{":
            self.kind = "jsonl"
            fh.seek(0)
            text = io.TextIOWrapper(fh, encoding="utf-8", errors="strict", newline=None)
            try:
                self._trace = Trace.from_jsonl(text, where=w)
            except UnicodeDecodeError as e:
                raise TraceError(f"{w}: not UTF-8 text ({e.reason})") from None
            finally:
                text.detach()
            self._adopt(self._trace)
            return
        if len(first) < 16 or first[:8] != MAGIC:
            raise TraceError(f"{w}: not a q7emu trace file (bad magic)")
        _m, version, hlen = PREAMBLE.unpack(first)
        if version not in READ_VERSIONS:
            raise TraceError(f"{w}: unsupported trace file version {version} (this q7emu reads "
                             f"{', '.join(map(str, READ_VERSIONS))})")
        if hlen > MAX_HEADER_BYTES or 16 + hlen > self.size:
            raise TraceError(f"{w}: header length {hlen} runs past the end of the file")
        head = json_loads(_read_exact(fh, hlen, w, "the header"), f"{w}: header")
        if not isinstance(head, dict) or head.get("format") != FILE_FORMAT or head.get("version") != version:
            raise TraceError(f"{w}: header is not a {FILE_FORMAT} version {version} header")
        if version == 1:
            self.kind = "v1"
            self._trace = self._read_v1(head, 16 + hlen)
            self._adopt(self._trace)
            return
        if head.get("codec") != CODEC:
            raise TraceError(f"{w}: unknown block codec {str(head.get('codec'))[:20]!r} (this q7emu reads {CODEC})")
        foot, foot_off, nrec = _read_footer(fh, self.size, 16 + hlen, w)
        if _int(foot, "records", f"{w}: footer") != nrec:
            raise TraceError(f"{w}: footer counts {foot.get('records')} records, the trailer {nrec}")
        runs = check_runs(foot.get("runs"), f"{w}: footer")
        self.names: list[list[str]] = []
        for i, r in enumerate(runs):
            names = r.pop("op_names", None)
            if not isinstance(names, list) or len(names) > MAX_NAMES or not all(
                    isinstance(n, str) and 0 < len(n.encode()) <= MAX_MNEMONIC for n in names):
                raise TraceError(f"{w}: run {i}: 'op_names' must list at most {MAX_NAMES} mnemonics "
                                 f"of 1..{MAX_MNEMONIC} characters")
            self.names.append(names)
        idx, run_counts = _block_index(foot.get("blocks"), len(runs), 16 + hlen, foot_off, nrec, w)
        for i, r in enumerate(runs):
            if r.get("records", run_counts[i]) != run_counts[i]:
                raise TraceError(f"{w}: run {i} says {r.get('records')} records, its blocks hold {run_counts[i]}")
        self.index = idx
        self.runs = runs
        self.records = nrec
        self.case = str(foot.get("case", ""))
        self.q7emu_version = str(foot.get("q7emu_version", ""))

    def recorded_mnemonics(self) -> set[str]:
        """Every mnemonic the file's records hold (a q7emu-trace v2 file says so in its footer: no block is read)."""
        if self._trace is None:
            return set().union(*self.names)
        return set(self._trace.op_counts())

    def _adopt(self, t: Trace) -> None:
        self.runs = t.runs
        self.records = len(t)
        self.case = t.case
        self.q7emu_version = t.q7emu_version
        self.index = []

    def _read_v1(self, meta: dict[str, Any], data_start: int) -> Trace:
        w = self.where
        if self.size > MAX_V1_BYTES:
            raise TraceError(f"{w}: a version 1 file larger than {MAX_V1_BYTES} bytes")
        arrays = {}
        want = {"records": V1_RECORD_DTYPE, "operands": V1_OPERAND_DTYPE, "data": np.dtype(np.uint8)}
        entries = meta.get("arrays")
        if not isinstance(entries, list):
            raise TraceError(f"{w}: header 'arrays' must be a list")
        for e in entries:
            if not isinstance(e, dict) or not isinstance(e.get("name"), str) or e.get("name") not in want:
                raise TraceError(f"{w}: bad array entry {str(e)[:60]!r}")
            name = e["name"]
            descr: Any = e.get("descr")
            try:
                spec: Any = descr if isinstance(descr, str) else [tuple(x) for x in descr]   # TypeError: the file's
                dt = np.lib.format.descr_to_dtype(spec)
            except Exception as ex:  # noqa: BLE001 - any malformed descr is the file's fault
                raise TraceError(f"{w}: array {name}: bad dtype ({type(ex).__name__})") from None
            if dt != want[name]:
                raise TraceError(f"{w}: array {name} has dtype {dt}, expected {want[name]}")
            off = _int(e, "offset", f"{w}: array {name}")
            cnt = _int(e, "count", f"{w}: array {name}")
            if off < data_start or off + cnt * dt.itemsize > self.size:
                raise TraceError(f"{w}: array {name} runs past the end of the file")
            self.fh.seek(off)
            arrays[name] = np.frombuffer(_read_exact(self.fh, cnt * dt.itemsize, w, f"array {name}"), dt, cnt).copy()
        missing = set(want) - set(arrays)
        if missing:
            raise TraceError(f"{w}: missing arrays {sorted(missing)}")
        runs = check_runs(meta.get("runs") or [], f"{w}: header")
        if not isinstance(meta.get("case", ""), str):
            raise TraceError(f"{w}: header 'case' must be a string")
        t = Trace(_widen_v1(arrays["records"], RECORD_DTYPE), _widen_v1(arrays["operands"], OPERAND_DTYPE),
                  arrays["data"], runs, str(meta.get("case", "")), str(meta.get("q7emu_version", "")))
        t.validate(w)
        return t

    # ------------------------------------------------------------------ streaming
    def raw_block(self, k: int) -> bytes:
        """Raw (decompressed, checked) bytes of block ``k`` of a v2 file."""
        off, clen, rlen, crc, run, nr = self.index[k][:6]
        w = f"{self.where}: block {k}"
        with self._io:                      # one seek and its reads at a time: threads may share a TraceFile
            self.fh.seek(off)
            frame = _read_exact(self.fh, FRAME.size, w, "a block frame")
            magic, c2, r2, crc2 = FRAME.unpack(frame)
            if magic != FRAME_MAGIC or (c2, r2, crc2) != (clen, rlen, crc):
                raise TraceError(f"{w}: block frame does not match the index (damaged file)")
            comp = _read_exact(self.fh, clen, w, "a block")
        if zlib.crc32(comp) != crc:
            raise TraceError(f"{w}: checksum mismatch (damaged file)")
        try:
            d = zlib.decompressobj()
            raw = d.decompress(comp, rlen + 1)
        except zlib.error as e:
            raise TraceError(f"{w}: does not decompress ({e})") from None
        if len(raw) != rlen or not d.eof:
            raise TraceError(f"{w}: decompresses to {len(raw)} bytes, the index says {rlen}")
        return raw

    def blocks(self, seq: tuple[int | None, int | None] | None = None, run: int | None = None,
               values: bool = True) -> Iterator[Block]:
        """The records block by block (a :class:`Block` each, offsets relative to the block), only the
        blocks that can hold ``seq`` = [lo, hi) (seek via the index) and, with ``run``, of that run."""
        lo, hi = seq or (None, None)
        if self._trace is not None:
            t = self._trace
            rows = t.select(seq=seq) if seq else np.arange(len(t))
            if run is not None:
                rows = rows[t.records["run"][rows] == run]
            for a in range(0, rows.size, BLK_RECORDS):
                s = t.subset(rows[a:a + BLK_RECORDS])
                yield Block(s.records, s.operands, s.data)
            return
        for k, e in enumerate(self.index):
            first, last, r = e[7], e[8], e[4]
            if (run is not None and r != run) or (lo is not None and last < lo) or (hi is not None and first >= hi):
                continue
            b = decode_block(self.raw_block(k), self.names[r], r, f"{self.where}: block {k}", values)
            if b.records.size != e[5]:
                raise TraceError(f"{self.where}: block {k} holds {b.records.size} records, the index says {e[5]}")
            if int(b.records["seq"][0]) != first or int(b.records["seq"][-1]) != last:
                raise TraceError(f"{self.where}: block {k} seq range does not match the index")
            if lo is not None or hi is not None:
                bseq = b.records["seq"]
                keep = np.ones(bseq.size, np.bool_)
                if lo is not None:
                    keep &= bseq >= np.uint64(lo)
                if hi is not None:
                    keep &= bseq < np.uint64(hi)
                if not keep.all():
                    kept = Trace(b.records, b.operands, b.data).subset(np.nonzero(keep)[0])
                    b = Block(kept.records, kept.operands, kept.data, b.complete)
            yield b

    def ops(self, seq: tuple[int | None, int | None] | None = None, run: int | None = None) -> Iterator[Op]:
        """Every record as an :class:`Op`, streamed (``index`` counts records in the file)."""
        n = 0
        for b in self.blocks(seq, run):
            t = Trace(b.records, b.operands, b.data)
            for i in range(len(t)):
                op = t[i]
                op.index = n
                n += 1
                yield op

    def read(self) -> Trace:
        """The whole trace in memory."""
        if self._trace is not None:
            return self._trace
        t = Trace.concat(list(self.blocks()), self.runs, self.case, self.q7emu_version)
        t.validate(self.where)
        return t

    def iter_jsonl(self) -> Iterator[str]:
        """The JSON Lines text, streamed (header line first)."""
        yield _jsonl_header(self.case, self.runs, self.q7emu_version)
        for op in self.ops():
            yield json.dumps(op_json(op), separators=(",", ":"))


def open_trace(path: str | os.PathLike[str]) -> TraceFile:
    """Open a trace file (``.q7t`` v1 / v2 or JSON Lines) for streaming reads (:class:`TraceFile`)."""
    return TraceFile(path)


def load(path: str | os.PathLike[str]) -> Trace:
    """Read a trace file (binary or JSON Lines) into memory."""
    return Trace.load(path)
