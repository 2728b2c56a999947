"""Lane-level traces (q7emu.analysis.trace): op sequence from the kernel listing, filters, file formats, diff.

The expected op sequences come from the kernels' listings (q7emu.analysis.listing: read off runs of two and three
whole passes); the traces here are of other inputs (a one-word tail pass, several partitions), which must follow
them, and the spot checks name bundles by the kernels' labels with what each must issue.
"""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

import q7emu
from q7emu.analysis.trace import VIEW_IDS, Recorder, Trace, TraceError, bytes_from_lanes, diff, lanes_hex
from q7emu.errors import InvalidArgument


# ---------------------------------------------------------------------- the listings
# Bundle numbers are the kernels' labels (docs/model.md §9.1), the programs' (q7emu.kernels.dequant.listing_run of
# each family's configuration); the op sequences come from the kernels' listings (read off runs of whole passes),
# which these traces of other inputs (a one-word tail pass, several partitions) must follow.
def _labels() -> dict[str, int]:
    from q7emu.kernels import dequant
    out: dict[str, int] = {}
    for fmt, group in ((1, 0), (3, 0), (1, 8)):          # the re-bias, NF4 table and MX paths
        out.update({name: tag for tag, name in dequant.listing_run(1, fmt, group, {})[1].items()})
    return out


L = _labels()


def _seq(ops):
    return [(o.bundle, o.mnemonic) for o in ops]


def _listing(*args, **kw):
    from q7emu.analysis.listing import build
    return build(*args, **kw)


# E2M1 non-MX, the re-bias MAC path (docs/model.md §9.7): the entry loads the constants and the first pass; a pass
# finishes the one before it (software pipelining); the exit finishes the last pass's odd codes
_NON_MX = _listing("proc_4bit_non_mx", "e2m1")
ENTRY_4BIT_NON_MX, PASS_4BIT_NON_MX, EXIT_4BIT_NON_MX = (_seq(_NON_MX.entry), _seq(_NON_MX.passes),
                                                         _seq(_NON_MX.exit))
E0 = len(ENTRY_4BIT_NON_MX)           # seq of the first pass's first op
LISTING_4BIT_NON_MX_ONE_PASS = ENTRY_4BIT_NON_MX + PASS_4BIT_NON_MX + EXIT_4BIT_NON_MX
_MX = _listing("proc_4bit_mx_8", "e2m1", {"mx_scale": "e8m0"})
LISTING_4BIT_MX_ONE_BLOCK = _seq(_MX.entry) + _seq(_MX.passes) + _seq(_MX.exit)


def test_the_listings_name_the_seed_bundles_where_the_traces_show_them():
    """Spot checks of the listings these tests follow, in the kernels' own labels."""
    assert ENTRY_4BIT_NON_MX[-1] == (L["RB_FIRST"], "labvdcmprs2nx8_xp") and PASS_4BIT_NON_MX[0] == (L["RB_SEL0"],
                                                                                                     "sllinx16")
    assert [m for b, m in PASS_4BIT_NON_MX if b == L["RB_LOOKUP"]] == ["labvdcmprs2nx8_xp", "oltnxf16t", "dselnx16t"]
    assert [m for b, m in PASS_4BIT_NON_MX if b == L["RB_SEED"]] == ["muluupan16xr16", "sel2nx8i", "babssub2nx8"]
    assert EXIT_4BIT_NON_MX == [(L["RB_LOOKUP"], "oltnxf16t"), (L["RB_ZERO0"], "movnx16t"), (L["RB_NEG0"],
                                "negnxf16t"), (L["RB_SEED"], "sel2nx8i"), (L["RB_EXT0"], "sav2nx8_xp")]
    assert [m for b, m in LISTING_4BIT_MX_ONE_BLOCK if b == L["MX_GATE"]][:3] == ["muln_2x32", "ultn_2xf32t",
                                                                                  "sel2nx8i_s4"]


def full_recording(src, fmt=1, group=0, window=None, ops=None, **knobs):
    """The kernel's uncompressed, full-operand recording of the same run (every operand's bytes as executed, the
    interpreter's ``run(..., trace=True)``), parsed without any reconstruction."""
    from q7emu.kernels import dequant
    from q7emu.kernels.extension import load_extension
    from q7emu.model.kernels import dequant_kernel
    cp = dequant.configured_program(fmt, group, knobs)
    src = np.ascontiguousarray(src)
    dst = np.zeros_like(q7emu.dequantize(src, fmt, group, **knobs))
    raw = dequant.run_program(load_extension(dequant.EXTENSION), cp, src, dst, 0, src.shape[0], trace=True,
                              kernel_id=int(dequant_kernel(fmt, group)), trace_window=window, trace_ops=ops)
    return Trace.from_runs([(raw, {})]), bytes(memoryview(raw))


def seq_of(t: Trace):
    return [(int(b), m) for b, m in zip(t.records["bundle"], t.mnemonics())]


def _trace_dequant(src, fmt=1, group=0, **kw):
    rec = Recorder(**kw)
    out = q7emu.dequantize(src, fmt, group, trace=rec)
    return rec, out


@pytest.fixture(scope="module")
def word_trace():
    rec, out = _trace_dequant(np.array([[0x21, 0x43, 0x65, 0x87]], np.uint8))
    return rec, out


def test_one_word_op_sequence_matches_listing(word_trace):
    rec, out = word_trace
    t = rec.trace
    assert seq_of(t) == LISTING_4BIT_NON_MX_ONE_PASS
    assert t.records["seq"].tolist() == list(range(len(LISTING_4BIT_NON_MX_ONE_PASS)))
    assert set(t.records["kernel"].tolist()) == {1} and set(t.records["partition"].tolist()) == {0}
    assert t.runs[0]["kernel"] == "proc_4bit_non_mx"
    # the untraced run gives the same bytes
    assert np.array_equal(out, q7emu.dequantize(np.array([[0x21, 0x43, 0x65, 0x87]], np.uint8), 1, 0))


def test_one_word_operands(word_trace):
    t = word_trace[0].trace
    load = t[E0 - 1]                                # RB_FIRST labvdcmprs2nx8_xp v2, vb12, off 0, n = 4
    assert (load.op, load.bundle) == ("labvdcmprs2nx8_xp", L["RB_FIRST"])
    assert [(o.role_name, o.kind_name, o.name) for o in load.operands] == \
        [("src", "vbool", "vb12"), ("src", "scalar", "off"), ("src", "scalar", "len"), ("dst", "vec", "v2")]
    assert int.from_bytes(load.operands[2].data, "little") == 4
    # byte j -> the low byte of 16-bit lane j; the high bytes and the tail are zero (only 4 bytes read)
    assert load.operands[3].data == bytes([0x21, 0, 0x43, 0, 0x65, 0, 0x87, 0]) + bytes(56)
    sel = t[E0 + 1]                                 # RB_SEL1 or2nx8 v4 = lane | lane << 4: even code low, odd high
    v4 = np.frombuffer(sel.operands[2].data, "<u2")      # the op table views or2nx8 as 8-bit lanes; read 16
    assert sel.op == "or2nx8" and [int(x) & 0x0F0F for x in v4[:5]] == [0x201, 0x403, 0x605, 0x807, 0]
    look = t[E0 + 4]                                # RB_LOOKUP dselnx16t v0, v1 = X of the odd / even codes (c & 7):
    assert look.op == "dselnx16t" and [o.name for o in look.operands if o.role_name == "dst"] == ["v0", "v1"]
    # the first output from the selector's odd bytes (docs/intrinsics.md §3.2); the sign (c >= 8) in bit 15: code 8
    # = E2M1 -0
    assert look.operands[6].lanes()[:5] == [2, 4, 6, 0x8000, 0] and look.operands[7].lanes()[:5] == [1, 3, 5, 7, 0]
    store = t[len(t) - 1]                           # after the loop: the pass's 8 FP8 bytes
    assert store.op == "sav2nx8_xp" and int.from_bytes(store.operands[2].data, "little") == 8
    first_store = t[E0 + 17]                        # inside the first pass: the (empty) previous pass
    assert first_store.op == "sav2nx8_xp" and int.from_bytes(first_store.operands[2].data, "little") == 0


def test_mx_block_op_sequence_matches_listing():
    src = np.array([[127, 0x21, 0x43, 0x65, 0x87] * 4], np.uint8)
    rec, _ = _trace_dequant(src, 1, 8)
    assert seq_of(rec.trace) == LISTING_4BIT_MX_ONE_BLOCK


def test_partitions_and_passes_repeat_the_listing():
    src = np.arange(2 * 36, dtype=np.uint8).reshape(2, 36)     # 2 partitions, 32 + 4 bytes: 2 passes
    rec, _ = _trace_dequant(src)
    t = rec.trace
    per_part = ENTRY_4BIT_NON_MX + PASS_4BIT_NON_MX + PASS_4BIT_NON_MX + EXIT_4BIT_NON_MX
    assert seq_of(t) == per_part * 2
    assert t.records["partition"].tolist() == [0] * len(per_part) + [1] * len(per_part)
    assert t.records["seq"].tolist() == list(range(2 * len(per_part)))   # seq counts across partitions


def test_window_limits_recording(word_trace):
    full = word_trace[0].trace
    rec, _ = _trace_dequant(np.array([[0x21, 0x43, 0x65, 0x87]], np.uint8), window=(13, 20))
    t = rec.trace
    assert t.records["seq"].tolist() == list(range(13, 20))
    assert t.to_raw() == full.subset(np.arange(13, 20)).to_raw()
    assert t.runs[0]["window"] == [13, 20]


def test_ops_filter_limits_recording(word_trace):
    full = word_trace[0].trace
    rec, _ = _trace_dequant(np.array([[0x21, 0x43, 0x65, 0x87]], np.uint8), ops=["babssubunx16", "sav2nx8_xp"])
    t = rec.trace
    assert t.mnemonics() == ["babssubunx16", "babssubunx16", "sav2nx8_xp", "sav2nx8_xp"]
    assert t.to_raw() == full.subset(full.select(["babssubunx16", "sav2nx8_xp"])).to_raw()
    # oltnxf16t is op 3 and op 21 of the pass
    rec2, _ = _trace_dequant(np.array([[0x21, 0x43, 0x65, 0x87]], np.uint8), ops=["oltnxf16t"], window=(0, E0 + 22))
    assert rec2.trace.records["seq"].tolist() == [E0 + 3, E0 + 21]


@pytest.mark.parametrize("bad", [dict(window=(5, 2)), dict(window=(-1, 3)), dict(window="x"),
                                 dict(ops=["nosuchop"]), dict(ops=["addnx16"] * 65)])
def test_recorder_rejects_bad_filters(bad):
    with pytest.raises(InvalidArgument):
        Recorder(**bad)


def test_quantize_mx_and_machine_forward_the_recorder():
    x = (np.arange(32 * 8, dtype=np.float32).reshape(32, 8) / 7).astype(np.float16)
    rec = Recorder()
    q7emu.quantize_mx(x, trace=rec)
    t = rec.trace
    assert set(t.records["kernel"].tolist()) == {4} and t.runs[0]["kernel"] == "quantize_mx"
    assert t.mnemonics()[:22] == ["lv2nx8_i"] * 22 and t.records["bundle"].max() >= 40
    from q7emu.machine.cases import _prepared_machine, load_case
    case = load_case("examples/cases/mariana/mariana_7b_proc_6bit_non_mx_e2m3")
    rec = Recorder()
    _prepared_machine(case).execute(case.record, trace=rec)
    assert len(rec.trace) > 0 and set(rec.trace.records["kernel"].tolist()) == {3}


def test_raw_and_binary_file_round_trip(word_trace, tmp_path):
    rec = word_trace[0]
    t = rec.trace
    _, raw = full_recording(np.array([[0x21, 0x43, 0x65, 0x87]], np.uint8))
    assert t.to_raw() == raw                       # the compact recording decodes to the full one
    path = t.save(tmp_path / "a.q7t")
    blob = path.read_bytes()
    assert blob[:8] == b"Q7TRACE\0" and int.from_bytes(blob[8:12], "little") == 2
    head = json.loads(blob[16:16 + int.from_bytes(blob[12:16], "little")])
    assert head["format"] == "q7emu-trace" and head["q7emu_version"] == q7emu.__version__
    assert blob[-32:-24] == b"Q7TEND\0\0" and int.from_bytes(blob[-8:], "little") == len(t)
    foot = json.loads(blob[int.from_bytes(blob[-24:-16], "little"):-32])
    assert foot["records"] == len(t) and len(foot["blocks"]) == 1 and foot["runs"][0]["kernel"] == "proc_4bit_non_mx"
    back = Trace.load(path)
    assert back.to_raw() == raw and back.to_bytes() == blob
    assert np.array_equal(back.records, t.records) and np.array_equal(back.operands, t.operands)


def test_jsonl_round_trip_is_byte_exact(word_trace, tmp_path):
    rec = word_trace[0]
    t = rec.trace
    buf = io.StringIO()
    t.to_jsonl(buf)
    text = buf.getvalue()
    lines = text.splitlines()
    assert json.loads(lines[0])["format"] == "q7emu-trace-jsonl"
    first = json.loads(lines[E0])         # RB_FIRST labvdcmprs2nx8_xp (line 0 is the header)
    assert first["op"] == "labvdcmprs2nx8_xp" and first["bundle"] == L["RB_FIRST"]
    assert first["kernel"] == "proc_4bit_non_mx"
    dst = first["operands"][3]
    assert dst == {"role": "dst", "kind": "vec", "reg": 2, "view": "2nx8", "lanes": dst["lanes"]}
    assert dst["lanes"][:5] == ["21", "00", "43", "00", "65"] and len(dst["lanes"]) == 64
    _, raw = full_recording(np.array([[0x21, 0x43, 0x65, 0x87]], np.uint8))
    back = Trace.from_jsonl(io.StringIO(text))
    assert back.to_raw() == raw
    assert back.to_bytes() == t.to_bytes()
    again = io.StringIO()
    back.to_jsonl(again)
    assert again.getvalue() == text
    # also through files, and Trace.load detects JSON Lines
    t.to_jsonl(tmp_path / "a.jsonl")
    assert Trace.load(tmp_path / "a.jsonl").to_raw() == raw


def test_jsonl_round_trip_all_operand_kinds():
    """wvec (w48), pr, vbool (vb16 / vb32 / vb8) and float views survive the JSON Lines trip."""
    src = np.array([[0xFF, 0x21, 0x43, 0x65, 0x87] * 8], np.uint8)
    rec, _ = _trace_dequant(src, 1, 8)
    t = rec.trace
    kinds = {(o.kind_name, o.view_name) for op in t for o in op.operands}
    assert {("wvec", "w48"), ("pr", "pr"), ("vbool", "vb16"), ("vbool", "vb32"), ("vbool", "vb8")} <= kinds
    buf = io.StringIO()
    t.to_jsonl(buf)
    assert Trace.from_jsonl(io.StringIO(buf.getvalue())).to_raw() == full_recording(src, 1, 8)[1]


@pytest.mark.parametrize("view,nbytes", [("2nx8", 64), ("nx16", 64), ("n_2xf32", 64), ("w24", 192),
                                         ("w96", 192), ("vb8", 8), ("vb16", 8), ("vb32", 8), ("scalar", 8)])
def test_lane_hex_inverse(view, nbytes):
    data = np.random.default_rng(1).integers(0, 256, nbytes, dtype=np.uint8).tobytes()
    v = VIEW_IDS[view]
    assert bytes_from_lanes(lanes_hex(data, v), v, nbytes) == data


def test_vbool_lanes_follow_the_view():
    data = (0b1100).to_bytes(8, "little")          # 16-bit view: lane 1 true (bits 2, 3)
    assert lanes_hex(data, VIEW_IDS["vb16"])[:3] == ["0", "3", "0"]
    assert len(lanes_hex(data, VIEW_IDS["vb32"])) == 16 and len(lanes_hex(data, VIEW_IDS["vb8"])) == 64


def _edit_lane(text: str, seq: int, operand: int, lane: int, value: str) -> str:
    out = []
    for line in text.splitlines():
        obj = json.loads(line)
        if obj.get("seq") == seq and "op" in obj:
            obj["operands"][operand]["lanes"][lane] = value
            line = json.dumps(obj, separators=(",", ":"))
        out.append(line)
    return "\n".join(out) + "\n"


def test_diff_names_record_operand_and_lane(word_trace):
    t = word_trace[0].trace
    buf = io.StringIO()
    t.to_jsonl(buf)
    # RB_EXT1 packvrnrnx48 v7, wv1, 0 (the odd codes' fp16) -> operand 2 is the dst (nx16), change lane 5
    s = E0 + 20
    op = t[s]
    assert (op.op, op.bundle) == ("packvrnrnx48", L["RB_EXT1"])
    old = op.operands[2].lanes_hex()[5]
    new = format(int(old, 16) ^ 0x10, "04x")
    b = Trace.from_jsonl(io.StringIO(_edit_lane(buf.getvalue(), s, 2, 5, new)))
    r = diff(t, b)
    assert not r.same and r.compared == len(t) and r.differing == 1 and r.first_seq == r.last_seq == s
    d = r.first
    assert (d.seq, d.op, d.what, d.operand) == (s, "packvrnrnx48", "operand", 2)
    assert [(x.lane, x.a, x.b) for x in d.lanes] == [(5, old, new)]
    text = r.format()
    assert f"seq {s} packvrnrnx48" in text and "operand 2 (dst vec v7, view nx16)" in text
    assert f"lane  5: A {old}  B {new}" in text
    assert f"1 differ (first seq {s}, last seq {s})" in text
    assert diff(t, t).same


def test_diff_align_op_skips_an_extra_record(word_trace):
    t = word_trace[0].trace
    lines = io.StringIO()
    t.to_jsonl(lines)
    rows = lines.getvalue().splitlines()
    # B's tool logs one extra op after seq 20 and numbers its records densely; and lane 0 of seq 30 differs
    extra = json.loads(rows[1 + 20])
    extra["op"] = "nop"
    extra["operands"] = []
    edited = _edit_lane(lines.getvalue(), 30, 0, 0, "ff").splitlines()     # seq 30: babssub2nx8 (2nx8 lanes)
    objs = [json.loads(x) for x in edited[1:]]
    objs.insert(21, extra)
    for i, o in enumerate(objs):
        o["seq"] = i
    b = Trace.from_jsonl(io.StringIO("\n".join([edited[0]] + [json.dumps(o) for o in objs])))
    by_seq = diff(t, b, align="seq")
    assert by_seq.differing > 20            # everything after the insertion is shifted
    by_op = diff(t, b, align="op")
    assert (by_op.only_a, by_op.only_b, by_op.differing) == (0, 1, 1)
    assert by_op.first.seq == 30 and by_op.first.operand == 0 and by_op.first.lanes[0].lane == 0


def test_multiple_runs_and_subset():
    rec = Recorder()
    q7emu.dequantize(np.zeros((1, 4), np.uint8), 1, 0, trace=rec)
    q7emu.dequantize(np.zeros((1, 12), np.uint8), 4, 0, trace=rec)
    t = rec.trace
    assert [r["kernel"] for r in t.runs] == ["proc_4bit_non_mx", "proc_6bit_non_mx"]
    assert t.records["run"][0] == 0 and t.records["run"][-1] == 1 and t.records["seq"][-1] < len(t)
    assert t.to_raw(run=1) == full_recording(np.zeros((1, 12), np.uint8), 4, 0)[1]
    buf = io.StringIO()
    t.to_jsonl(buf)
    assert Trace.from_jsonl(io.StringIO(buf.getvalue())).to_bytes() == t.to_bytes()


def test_foreign_jsonl_minimal_lines():
    text = "\n".join(json.dumps(x) for x in [
        {"op": "addnx16", "operands": [{"kind": "vec", "view": "nx16", "lanes": ["1"] * 32}]},
        {"op": "sav2nx8_xp", "operands": [{"kind": "scalar", "reg": 253, "lanes": ["40"]}]}])
    t = Trace.from_jsonl(io.StringIO(text))
    assert t.records["seq"].tolist() == [0, 1] and t[0].operands[0].lanes() == [1] * 32
    assert t[1].operands[0].name == "len" and t[0].bundle == 0xFFFF


@pytest.mark.parametrize("line", ['{"op": "x", "operands": [{"kind": "vec", "view": "nx16", "lanes": ["1"]}]}',
                                  '{"op": "x", "operands": [{"kind": "vec", "view": "nope", "lanes": []}]}',
                                  '{"op": "x", "operands": [{"kind": "vec", "lanes": ["zz"] }]}',
                                  'not json', '[1, 2]'])
def test_bad_jsonl_is_a_trace_error(line):
    with pytest.raises(TraceError):
        Trace.from_jsonl(io.StringIO(line + "\n"))


def test_bad_binary_files(tmp_path, word_trace):
    blob = word_trace[0].trace.to_bytes()
    for bad in (b"nope" * 10, blob[:40], blob[:-10]):
        p = tmp_path / "bad.q7t"
        p.write_bytes(bad)
        with pytest.raises(TraceError):
            Trace.load(p)


def test_show_filters(word_trace):
    t = word_trace[0].trace
    out = list(t.show(op="or2nx8", lanes=(0, 4)))
    assert len(out) == 1 and f"B{L['RB_SEL1']}  or2nx8" in out[0]
    assert "dst v4    2nx8    [ 0] 31 02 73 04" in out[0]          # the op table's lane view of or2nx8
    assert "0000" not in out[0].split("dst")[1]
    assert [s.split()[0] for s in t.show(seq=(13, 16))] == ["#13", "#14", "#15"]


# ---------------------------------------------------------------------- mnemonic fields (1..31 characters)
LONG_OPS = ["labvdcmprs2nx8_xp", "z" * 30 + "a"]        # 17 (the one IVP mnemonic past 15) and 31 characters


def _jsonl(ops):
    return "\n".join(json.dumps({"op": op, "bundle": i, "operands": [{"kind": "scalar", "reg": 255,
                                                                      "lanes": [format(100 + i, "016x")]}]})
                     for i, op in enumerate(ops)) + "\n"


def test_every_mnemonic_fits_the_op_field():
    from q7emu.analysis.trace import MAX_MNEMONIC, NAME_BYTES, known_mnemonics
    assert (NAME_BYTES, MAX_MNEMONIC) == (32, 31)
    known = known_mnemonics()
    assert "labvdcmprs2nx8_xp" in known and all(0 < len(m) <= MAX_MNEMONIC and m.isascii() for m in known)
    assert Recorder(ops=["labvdcmprs2nx8_xp"]).ops == ["labvdcmprs2nx8_xp"]


def test_kernel_legacy_header_is_48_bytes():
    """The C recorder's MODE_LEGACY record: a 48-byte header (char op[32] at 16), then the operands."""
    from q7emu.analysis.trace import HEADER_BYTES, parse_raw
    _, raw = full_recording(np.array([[0x21, 0x43, 0x65, 0x87]], np.uint8))
    assert HEADER_BYTES == 48
    assert raw[16:48] == b"lv2nx8_i".ljust(32, b"\0")                  # record 0: the first rodata load
    pos = 48
    for _ in range(raw[7]):                                             # its operands follow the header
        pos += 8 + int.from_bytes(raw[pos + 4:pos + 8], "little")
    assert pos == int.from_bytes(raw[8:12], "little")
    assert parse_raw(raw)[0]["op"][0] == b"lv2nx8_i"


@pytest.mark.parametrize("op", LONG_OPS)
def test_long_mnemonic_round_trips(op):
    """A 17..31-character mnemonic survives the legacy raw stream, the v2 blocks and the recorder's sink."""
    from q7emu.analysis.trace import parse_raw
    names = ["addnx16", op, "addnx16", op]
    text = _jsonl(names)
    t = Trace.from_jsonl(io.StringIO(text))
    assert t.mnemonics() == names and t.select(op).tolist() == [1, 3]
    # legacy (full-operand) layout: op[32] at 16 of a 48-byte header
    raw = t.to_raw()
    r1 = 48 + 8 + 8
    assert raw[r1 + 16:r1 + 48] == op.encode().ljust(32, b"\0") and int.from_bytes(raw[r1 + 8:r1 + 12], "little") == r1
    back = Trace.from_runs([(raw, {})])
    assert back.mnemonics() == names and back.to_raw() == raw and parse_raw(raw)[0]["op"][1] == op.encode()
    # v2 blocks (the file's footer holds the op-name table)
    blob = t.to_bytes()
    foot = json.loads(blob[int.from_bytes(blob[-24:-16], "little"):-32])
    assert foot["runs"][0]["op_names"] == ["addnx16", op]
    again = Trace.from_bytes(blob)
    assert again.mnemonics() == names and again.to_bytes() == blob and diff(t, again).same
    out = io.StringIO()
    again.to_jsonl(out)
    assert Trace.from_jsonl(io.StringIO(out.getvalue())).to_bytes() == blob
    # the recorder's sink: blocks come with the run's name table as 32-byte NUL-padded names (trace_buffer.pxi)
    rec = Recorder()
    sink = rec.begin_run("proc_4bit_non_mx")
    for _, _, table, blocks in t.encode_runs():
        for b in blocks:
            sink.block(b, b"".join(n.encode().ljust(32, b"\0") for n in table))
            assert rec.op_names[0] == ["addnx16", op]
        sink.finish(len(t), table)
    assert rec.trace.mnemonics() == names and diff(t, rec.trace).same


def test_long_mnemonics_differ_past_character_16():
    """diff tells two 31-character mnemonics apart that share their first 30 characters."""
    a = Trace.from_jsonl(io.StringIO(_jsonl(["z" * 30 + "a"])))
    b = Trace.from_jsonl(io.StringIO(_jsonl(["z" * 30 + "b"])))
    d = diff(a, b)
    assert not d.same and d.first.what == "op"


def test_mnemonic_of_32_characters_is_refused(tmp_path):
    from q7emu.analysis.trace import RECORD_DTYPE, BlockEncoder, TraceWriter
    long = "x" * 32
    with pytest.raises(TraceError, match=r"'op' must be a mnemonic of 1\.\.31 ASCII characters"):
        Trace.from_jsonl(io.StringIO(_jsonl([long])))
    with pytest.raises(InvalidArgument, match="^mutate=.*1..31"):
        Recorder(mutate=(long, 3))
    with pytest.raises(InvalidArgument, match="^ops="):
        Recorder(ops=[long])
    # a trace in memory whose op field is full (no NUL) cannot be saved
    t = Trace.from_jsonl(io.StringIO(_jsonl(["addnx16"])))
    t.records["op"][0] = long.encode()
    assert t.records.dtype == RECORD_DTYPE and t.mnemonics() == [long]
    with pytest.raises(TraceError, match="'op' 'x{32}' is not a mnemonic of 1..31 ASCII characters"):
        t.to_bytes()
    # a file whose op-name table holds one is refused on reading
    blocks = []
    enc = BlockEncoder(blocks.append)
    enc.add(0, 0, 0, 0, b"addnx16", [(5, 0, 255, 12, bytes(8))])
    enc.flush()
    w = TraceWriter(tmp_path / "long.q7t")
    w.begin_run({})
    w.add_block(0, blocks[0])
    w.end_run(0, {"records": 1}, [long])
    w.close()
    with pytest.raises(TraceError, match="'op_names' must list at most 256 mnemonics of 1..31 characters"):
        Trace.load(tmp_path / "long.q7t")


def test_v1_file_op_field_is_widened():
    """A version 1 file's records (op S16) read into today's RECORD_DTYPE (op S32)."""
    from pathlib import Path

    from q7emu.analysis.trace import RECORD_DTYPE
    data = Path(__file__).parent / "data"
    t = Trace.load(data / "v1_two_runs.q7t")
    assert t.records.dtype == RECORD_DTYPE and len(t) == 165
    assert t.mnemonics()[:2] == ["lv2nx8_i", "lv2nx8_i"] and t.op_counts()["mulus4tn16xr16"] == 2
    out = io.StringIO()
    t.to_jsonl(out)
    assert out.getvalue() == (data / "v1_two_runs.jsonl").read_text()
