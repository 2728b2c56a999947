"""Conversions between a trace file and JSON Lines (``q7emu trace export`` / ``import``, docs/traces.md §4):
streamed, the output written atomically."""
from __future__ import annotations

import os

from q7emu.analysis.trace.blocks import BlockEncoder, block_stats
from q7emu.analysis.trace.jsonl import JsonlReader
from q7emu.analysis.trace.layout import TraceError
from q7emu.analysis.trace.model import TraceFile, _open_text
from q7emu.analysis.trace.q7t import TraceWriter
from q7emu.fileio import atomic_write


def export_jsonl(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> int:
    """Stream a trace file to JSON Lines (written atomically); returns the record count."""
    n = 0
    with TraceFile(src) as f, atomic_write(dest, "w", newline="\n") as out:
        for line in f.iter_jsonl():
            out.write(line + "\n")
            n += 1
    return n - 1


def import_jsonl(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> int:
    """Stream a JSON Lines trace into a ``.q7t`` v2 file (written atomically); returns the record count."""
    try:
        fh = _open_text(src)
    except FileNotFoundError:
        raise TraceError(f"{src}: no such trace file") from None
    with fh:
        reader = JsonlReader(fh, str(src))
        try:
            return _write_records(reader, dest)
        except UnicodeDecodeError as e:
            raise TraceError(f"{src}: not UTF-8 text ({e.reason})") from None


def _write_records(reader: JsonlReader, dest: str | os.PathLike[str]) -> int:
    pending: dict[int, list[bytes]] = {}
    encs: dict[int, BlockEncoder] = {}
    last_run = -1
    n = 0
    out = TraceWriter(dest)
    try:
        for (run, seq, part, kid, bundle, name), ops in reader.records():
            if run < last_run:
                raise TraceError(f"{reader.where}: run {run} after run {last_run} (records must be in run order)")
            if run != last_run:
                if last_run >= 0:
                    encs[last_run].flush()
                pending[run] = []             # runs between get no encoder: they hold no record
                encs[run] = BlockEncoder(pending[run].append, kid)
                last_run = run
            encs[run].add(seq, part, kid, bundle, name, ops)
            n += 1
        if last_run >= 0:
            encs[last_run].flush()
        out.case = reader.case
        out.q7emu_version = reader.q7emu_version
        runs = reader.runs()
        nrun = max(len(runs), last_run + 1)
        for r in range(nrun):
            info = dict(runs[r]) if r < len(runs) else {}
            out.begin_run(info)
            count = 0
            for b in pending.get(r, []):
                out.add_block(r, b)
                count += block_stats(b)["records"]
            if info.get("records", count) != count:
                raise TraceError(f"{reader.where}: header says run {r} has {info.get('records')} records, "
                                 f"the file has {count}")
            out.end_run(r, {"records": count}, encs[r].op_names() if r in encs else [])
        out.close()
    except BaseException as e:
        out.abort(type(e), e, e.__traceback__)
        raise
    return n
