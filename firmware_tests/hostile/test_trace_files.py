"""Hostile trace files (issue 15, findings 3 and 5): partial and damaged ``.q7t`` files, malformed v1 headers
and JSON Lines are refused with one q7emu error line (exit 2 on the CLI), never a traceback; an interrupted
export leaves no partial file."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import q7emu
from q7emu.analysis.trace import Recorder, Trace, TraceError, TraceFile, export_jsonl, import_jsonl
from q7emu.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "analysis" / "data"


@pytest.fixture(scope="module")
def blob() -> bytes:
    rec = Recorder()
    q7emu.dequantize(np.random.default_rng(2).integers(0, 256, (2, 40), dtype=np.uint8), 1, 8, trace=rec)
    return rec.trace.to_bytes()


def _cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _refused(capsys, path: Path) -> str:
    with pytest.raises(TraceError):
        TraceFile(path).read()
    rc, _out, err = _cli(capsys, "trace", "show", path)
    assert rc == 2 and err.startswith("q7emu: error:") and len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("cut", [0, 1, 15, 16, 40, -33, -32, -31, -1, 0.5])
def test_partial_files_are_refused(capsys, tmp_path, blob, cut):
    n = int(len(blob) * cut) if isinstance(cut, float) else (cut if cut >= 0 else len(blob) + cut)
    p = tmp_path / "t.q7t"
    p.write_bytes(blob[:n])
    _refused(capsys, p)


def test_every_flipped_byte_is_refused_or_harmless(tmp_path, blob):
    """A flipped byte anywhere gives a TraceError (CRC, counts, layout) or, in the JSON header's ignored
    parts, the same trace; never another exception."""
    good = Trace.from_bytes(blob)
    for i in range(0, len(blob), max(1, len(blob) // 400)):
        bad = bytearray(blob)
        bad[i] ^= 0x41
        try:
            t = Trace.from_bytes(bytes(bad))
        except TraceError:
            continue
        assert np.array_equal(t.records, good.records) and np.array_equal(t.data, good.data), i


def _v1_with(tmp_path: Path, edit) -> Path:
    raw = (DATA / "v1_two_runs.q7t").read_bytes()
    hlen = int.from_bytes(raw[12:16], "little")
    head = json.loads(raw[16:16 + hlen])
    edit(head)
    text = json.dumps(head).encode()
    text = text[:hlen].ljust(hlen) if len(text) <= hlen else text
    p = tmp_path / "v1.q7t"
    p.write_bytes(raw[:12] + struct.pack("<I", len(text)) + text + raw[16 + hlen:])
    return p


@pytest.mark.parametrize("edit", [
    lambda h: h.__setitem__("runs", "not a list"),
    lambda h: h.__setitem__("runs", [1, 2]),
    lambda h: h.__setitem__("arrays", {"records": 1}),
    lambda h: h["arrays"][0].__setitem__("offset", "x"),
    lambda h: h["arrays"][0].__setitem__("offset", -5),
    lambda h: h["arrays"][0].__setitem__("count", 10 ** 30),
    lambda h: h["arrays"][1].__setitem__("descr", "not a dtype"),
    lambda h: h["arrays"][1].__setitem__("descr", [["a", "<u4", 99]]),
    lambda h: h["arrays"][2].__setitem__("descr", None),
    lambda h: h.__setitem__("case", ["x"]),
])
def test_malformed_v1_headers_are_refused(capsys, tmp_path, edit):
    _refused(capsys, _v1_with(tmp_path, edit))


def test_infinity_offset_is_refused(capsys, tmp_path):
    p = _v1_with(tmp_path, lambda h: h["arrays"][0].__setitem__("offset", 1.5))
    raw = p.read_bytes().replace(b"1.5", b"Infinity")
    p.write_bytes(raw[:12] + struct.pack("<I", int.from_bytes(raw[12:16], "little") + 5) + raw[16:])
    _refused(capsys, p)


def test_zero_byte_operand_in_v1_is_refused(capsys, tmp_path):
    t = Trace.load(DATA / "v1_two_runs.q7t")
    raw = bytearray((DATA / "v1_two_runs.q7t").read_bytes())
    hlen = int.from_bytes(raw[12:16], "little")
    head = json.loads(raw[16:16 + hlen])
    ops = next(a for a in head["arrays"] if a["name"] == "operands")
    # operand 0 is the first constant load's dst (64 bytes): claim 0 bytes
    struct.pack_into("<I", raw, ops["offset"] + 8, 0)
    p = tmp_path / "z.q7t"
    p.write_bytes(bytes(raw))
    assert len(t) == 165
    _refused(capsys, p)


@pytest.mark.parametrize("line", [
    "[" * 100000 + "]" * 100000,
    '{"op": "addnx16", "operands": ' + "[" * 5000 + "]" * 5000 + "}",
    '{"op": "addnx16", "seq": Infinity}',
    '{"op": "addnx16", "seq": NaN}',
    '{"op": "addnx16", "seq": 1e400}',
    '{"op": "addnx16", "seq": -1}',
    '{"op": "addnx16", "seq": 18446744073709551616}',
    '{"op": "addnx16", "kernel": [1]}',
    '{"op": "addnx16", "operands": [{"kind": "scalar", "lanes": []}]}',
    '{"op": "addnx16", "operands": [{"kind": "vec", "lanes": ["0"] * 3}]}',
    '{"op": "addnx16", "operands": [{"kind": 9, "lanes": ["0"]}]}',
    '{"op": "addnx16", "operands": [{"kind": "vec", "reg": true, "lanes": []}]}',
    '{"op": "addnx16", "operands": "x"}',
    '{"format": "q7emu-trace-jsonl", "runs": {"a": 1}}',
    '{"format": "q7emu-trace-jsonl", "runs": [{"kernel": 5}]}',
    "\xff\xfe",
])
def test_malformed_jsonl_is_refused(capsys, tmp_path, line):
    p = tmp_path / "bad.jsonl"
    p.write_text(line + "\n", encoding="utf-8", errors="surrogateescape")
    with pytest.raises(TraceError):
        Trace.load(p)
    rc, _out, err = _cli(capsys, "trace", "import", p, "-o", tmp_path / "out.q7t")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and not (tmp_path / "out.q7t").exists(), err


def test_import_refuses_a_partial_export(capsys, tmp_path, blob):
    """issue 15 finding 3: a JSON Lines file cut short (its header counts more records) is refused."""
    src = tmp_path / "t.q7t"
    src.write_bytes(blob)
    export_jsonl(src, tmp_path / "e.jsonl")
    lines = (tmp_path / "e.jsonl").read_text().splitlines()
    (tmp_path / "cut.jsonl").write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    with pytest.raises(TraceError, match="records"):
        import_jsonl(tmp_path / "cut.jsonl", tmp_path / "x.q7t")
    assert not (tmp_path / "x.q7t").exists()


def test_interrupted_export_leaves_the_old_file(tmp_path, blob, monkeypatch):
    """issue 15 finding 3: an export interrupted half way leaves no partial file (and the old one intact)."""
    src = tmp_path / "t.q7t"
    src.write_bytes(blob)
    out = tmp_path / "e.jsonl"
    out.write_text("old\n")
    import q7emu.analysis.trace.model as tr  # the module whose TraceFile.iter_jsonl renders each op
    real = tr.op_json
    calls = {"n": 0}

    def boom(op):
        calls["n"] += 1
        if calls["n"] > 10:
            raise KeyboardInterrupt
        return real(op)

    monkeypatch.setattr(tr, "op_json", boom)
    with pytest.raises(KeyboardInterrupt):
        export_jsonl(src, out)
    assert out.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["e.jsonl", "t.q7t"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_files_never_raise_anything_else(blob, data):
    """Random truncations, byte flips and splices of a valid file: a TraceError or a valid trace."""
    b = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert", "zero"]))
        i = data.draw(st.integers(0, max(len(b) - 1, 0)))
        if op == "flip" and b:
            b[i] ^= data.draw(st.integers(1, 255))
        elif op == "cut":
            del b[i:i + data.draw(st.integers(1, 64))]
        elif op == "insert":
            b[i:i] = data.draw(st.binary(min_size=1, max_size=16))
        elif b:
            b[i:i + 8] = bytes(len(b[i:i + 8]))
    try:
        Trace.from_bytes(bytes(b))
    except TraceError:
        pass
