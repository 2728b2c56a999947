"""Public objects with state, shared by threads (issue 41 item 2 and its class): each either works when shared or
refuses a second thread in one line (docs/limits.md §4, docs/traces.md §1.5).

* works: a ``Recorder`` (in memory or ``path=``: one run at a time, each run whole, the file readable), a
  ``TraceWriter``, a ``TraceFile`` being read, a ``LogWriter``, a ``Machine`` (one record at a time), explore's
  case cache;
* refuses (``q7emu.errors.ConcurrentUse``): the ordered-stream objects, a ``ProfileAccumulator``, a
  ``BlockEncoder``, a ``JsonlReader`` (read once).

Before: one ``Recorder(path=...)`` used by 4-8 threads closed "successfully" into a file ``trace export`` refused
(``block index entry 1 is inconsistent with the file``), or the threads got a raw ``IndexError``. Expected results
are each call made alone, in one thread (the same code, but no sharing), never the shared run's own output.
"""
from __future__ import annotations

import io
import threading
from pathlib import Path

import numpy as np
import pytest

import q7emu
from q7emu.analysis.trace import LogWriter, Recorder, TraceFile, TraceWriter, load
from q7emu.errors import ConcurrentUse

THREADS = 8
ROUNDS = 3
EX = Path(__file__).resolve().parents[2] / "examples" / "cases"


def calls():
    """The kernel calls each thread makes: (label, function(trace) -> output bytes)."""
    rng = np.random.default_rng(41)
    src = rng.integers(0, 256, (8, 320), dtype=np.uint8)
    x = rng.standard_normal((32, 64)).astype(np.float16)
    return [("e2m1", lambda t: q7emu.dequantize(src, "e2m1", trace=t).tobytes()),
            ("nf4-g8", lambda t: q7emu.dequantize(src, "nf4", group_size=8, trace=t).tobytes()),
            ("qmx", lambda t: b"".join(a.tobytes() for a in q7emu.quantize_mx(x, "e4m3", trace=t)))]


def run_threads(target, n=THREADS):
    errors: list[str] = []

    def body(k):
        try:
            target(k)
        except Exception as e:  # noqa: BLE001 - collected and asserted on
            errors.append(f"{type(e).__name__}: {e}")
    ts = [threading.Thread(target=body, args=(k,), name=f"t{k}") for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


def alone(fn):
    """(output bytes, the trace's records as bytes) of one call with a recorder of its own."""
    rec = Recorder()
    out = fn(rec)
    t = rec.trace
    return out, t.to_raw()


@pytest.mark.parametrize("where", ["file", "memory"])
def test_a_recorder_shared_by_threads_keeps_every_run_whole(tmp_path, where):
    work = calls()
    want = {label: alone(fn) for label, fn in work}
    rec = Recorder(path=tmp_path / "shared.q7t") if where == "file" else Recorder()
    outputs: list[tuple[int, str, bytes]] = []

    def thread(k):
        for r in range(ROUNDS):
            label, fn = work[(k + r) % len(work)]
            outputs.append((k, label, fn(rec)))
    assert run_threads(thread) == []
    rec.close()
    assert all(out == want[label][0] for _, label, out in outputs)            # the kernels' bytes: as alone
    t = load(tmp_path / "shared.q7t") if where == "file" else rec.trace
    assert len(t.runs) == THREADS * ROUNDS
    for run, info in enumerate(t.runs):                                        # every run: the records of its call
        label = {"proc_4bit_non_mx": "e2m1", "proc_4bit_mx_8": "nf4-g8", "quantize_mx": "qmx"}[info["kernel"]]
        assert t.to_raw(run) == want[label][1], (run, info["kernel"])
    if where == "file":              # each run's blocks contiguous (what trace import needs of an export)
        with TraceFile(tmp_path / "shared.q7t") as f:
            order = [e[4] for e in f.index]
        assert order == sorted(order)


def test_a_machine_shared_by_threads_runs_each_record_whole_with_a_shared_recorder(tmp_path):
    """Threads run records at different partitions on one machine, into one recorder: each record's bytes and
    trace are those it has alone, and each run names its own first partition."""
    from q7emu.isa.records import make_dequant_record
    from q7emu.machine.machine import Machine
    pb = 0x1000
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (128, pb), dtype=np.uint8)
    records = {k: make_dequant_record(1, 0, 8, 64, partition_bytes=pb, src_partition=8 * k, dst_partition=8 * k,
                                      dst_offset=0x800).encode() for k in range(THREADS)}
    want = {}
    for k, r in records.items():
        m = Machine("CAYMAN", pb, sbuf=image.copy())
        m.execute(r)
        want[k] = m.read(8 * k, 8, 0x800, 0x400)
    shared = Machine("CAYMAN", pb, sbuf=image.copy())
    rec = Recorder()
    assert run_threads(lambda k: shared.execute(records[k], trace=rec)) == []
    for k in range(THREADS):
        assert np.array_equal(shared.read(8 * k, 8, 0x800, 0x400), want[k])
    assert sorted(r["partition_base"] for r in rec.trace.runs) == [8 * k for k in range(THREADS)]


def test_a_trace_writer_and_a_trace_file_shared_by_threads(tmp_path):
    rec = Recorder()
    calls()[0][1](rec)
    t = rec.trace
    blocks = [raw for raw in rec.run_blocks[0]]
    w = TraceWriter(tmp_path / "w.q7t")
    runs = [w.begin_run(dict(rec.runs[0], records=None)) for _ in range(THREADS)]

    def feed(k):
        for raw in blocks:
            w.add_block(runs[k], raw)
        w.end_run(runs[k], {"records": len(t)}, rec.op_names[0])
    assert run_threads(feed) == []
    w.close()
    shared = load(tmp_path / "w.q7t")
    assert len(shared.runs) == THREADS and all(shared.to_raw(k) == t.to_raw(0) for k in range(THREADS))
    f = TraceFile(tmp_path / "w.q7t")
    want = [f.raw_block(i) for i in range(len(f.index))]
    got: dict[int, list[bytes]] = {}
    assert run_threads(lambda k: got.__setitem__(k, [f.raw_block(i) for i in range(len(f.index))])) == []
    f.close()
    assert all(v == want for v in got.values())


def test_a_log_writer_shared_by_threads_keeps_each_block_whole():
    rec = Recorder()
    calls()[0][1](rec)
    blocks = list(rec.blocks())
    out = io.StringIO()
    log = LogWriter(out)
    alone_text = io.StringIO()
    LogWriter(alone_text).write_block(blocks[0])
    assert run_threads(lambda k: log.write_block(blocks[0])) == []
    assert out.getvalue() == alone_text.getvalue() * THREADS and log.lines == THREADS * len(blocks[0].records)


def test_stream_objects_refuse_a_second_thread_in_one_line():
    from q7emu.analysis.profile import ProfileAccumulator
    from q7emu.analysis.trace import BlockEncoder, JsonlReader
    rec = Recorder()
    calls()[0][1](rec)
    block = next(rec.blocks())
    acc = ProfileAccumulator()
    acc.add(block)
    enc = BlockEncoder(lambda raw: None)
    enc.add(0, 0, 0, 0, b"addnx16", [])
    got = run_threads(lambda k: acc.add(block), 1) + run_threads(lambda k: enc.add(1, 0, 0, 0, b"addnx16", []), 1)
    assert len(got) == 2 and all(e.startswith("ConcurrentUse: ") and "\n" not in e for e in got), got
    assert "a ProfileAccumulator is fed by thread 'MainThread', not by 't0'" in got[0]
    acc.add(block)                                      # its own thread still may
    reader = JsonlReader(io.StringIO(""), "t.jsonl")
    list(reader.records())
    with pytest.raises(ConcurrentUse, match="t.jsonl: a JsonlReader reads its text once"):
        reader.records()


def test_explore_in_threads_shares_its_case_cache_safely():
    from q7emu.analysis.explore import explore
    cases = [EX / "cayman", EX / "mariana"]
    want = explore(cases, knobs=["nibble_order"], progress=False).to_json()
    got: list[dict] = []
    assert run_threads(lambda k: got.append(explore(cases, knobs=["nibble_order"], progress=False).to_json()),
                       4) == []
    for doc in [want, *got]:
        doc.pop("seconds")
    assert got == [want] * 4
