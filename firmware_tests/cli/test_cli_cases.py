"""``q7emu case new`` builds cases that test something, and ``q7emu record new`` builds records from named fields.

The scenario of issue 14: a shipped example's record reads partition 3, byte 0x40 at 0x400 bytes per partition
(its flat source address is 3 * 0x400 + 0x40 = 0xc40, docs/model.md §4). With the old default of 0x30000 the
same address is partition 0, byte 0xc40: the user's input was never read, the expected bytes came out all
zeros and the case passed.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from cli_support import EXAMPLES, MX8, PB, one_line, run

from q7emu.isa.records import make_dequant_record, make_quantize_mx_record
from q7emu.machine.cases import load_case


@pytest.fixture
def shipped(tmp_path):
    """The record, input array file and expected bytes of a shipped 0x7b group-8 case."""
    meta = json.loads(MX8.with_suffix(".json").read_text())
    with np.load(MX8.with_suffix(".npz")) as z:
        np.save(tmp_path / "in.npy", z["in0"])
        expected = z["exp0"].copy()
    return meta["record_hex"], tmp_path / "in.npy", expected


def test_the_default_partition_size_no_longer_builds_a_case_that_reads_nothing(capsys, tmp_path, shipped):
    rec, inp, _ = shipped
    code, out, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "CAYMAN",
                         "--input", f"3:64={inp}", "--partition-bytes", "0x30000")
    line = one_line(err)
    assert code == 2 and out == "" and not (tmp_path / "c.json").exists()
    assert line.startswith("q7emu: error: input region 0 (partitions 3..14, bytes 0x40..0xa7): the record never "
                           "reads it") and "partitions 0..11" in line and "0xc40" in line


def test_the_partition_size_is_inferred_and_printed(capsys, tmp_path, shipped):
    rec, inp, expected = shipped
    # the shipped input keeps decoy bytes between the two source runs: without --allow-unread it is refused,
    # naming the region and how much of it is read (2 runs of 10 words = 80 of 104 bytes per partition)
    code, _, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "CAYMAN", "--input", f"3:64={inp}")
    line = one_line(err)
    assert code == 2 and "input region 0" in line and "reads only 960 of its 1248 bytes" in line
    assert "partition_bytes=0x400" in line and "--allow-unread" in line
    code, out, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "CAYMAN",
                         "--input", f"3:64={inp}", "--allow-unread")
    assert code == 0, err
    assert "partition_bytes=0x400 (inferred from the record and the input regions)" in out
    case = load_case(tmp_path / "c.json")
    assert case.partition_bytes == PB
    # the expected bytes computed now are the shipped ones (read from the shipped file, not recomputed)
    assert len(case.expected) == 1 and np.array_equal(case.expected[0][1], expected) and expected.any()
    code, out, _ = run(capsys, "replay", tmp_path / "c.json")
    assert code == 0 and "PASS" in out


def test_an_input_the_record_reads_completely_needs_no_flag(capsys, tmp_path):
    rec = make_dequant_record(2, 0, 4, 3, src_partition=5, src_offset=0x20, dst_partition=5, dst_offset=0x100,
                              partition_bytes=PB).encode().hex()
    np.save(tmp_path / "a.npy", np.arange(48, dtype=np.uint8).reshape(4, 12))
    code, out, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "MARIANA",
                         "--input", f"5:0x20={tmp_path / 'a.npy'}")
    assert code == 0, err
    assert "partition_bytes=0x400 (inferred" in out and load_case(tmp_path / "c").partition_bytes == PB
    # the same bytes, one partition too few: the record reads 12 bytes of partition 8 that no input provides
    np.save(tmp_path / "b.npy", np.arange(36, dtype=np.uint8).reshape(3, 12))
    code, _, err = run(capsys, "case", "new", tmp_path / "d", "--record", rec, "-g", "MARIANA",
                       "--input", f"5:0x20={tmp_path / 'b.npy'}", "--partition-bytes", hex(PB))
    assert code == 2 and "reads 12 source bytes that no input region provides" in one_line(err)


def test_an_input_wider_than_the_read_is_refused_unless_allowed(capsys, tmp_path):
    rec = make_dequant_record(2, 0, 4, 3, partition_bytes=PB).encode().hex()
    np.save(tmp_path / "a.npy", np.zeros((4, 16), np.uint8))        # 16 bytes; the record reads 3 words = 12
    argv = ["case", "new", tmp_path / "c", "--record", rec, "-g", "MARIANA", "--input", f"0:0={tmp_path / 'a.npy'}",
            "--partition-bytes", hex(PB)]
    code, _, err = run(capsys, *argv)
    assert code == 2 and "reads only 48 of its 64 bytes" in one_line(err)
    code, _, err = run(capsys, *argv, "--allow-unread")
    assert code == 0, err


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint16, np.float16])
def test_non_uint8_arrays_are_an_error(capsys, tmp_path, dtype):
    rec = make_dequant_record(2, 0, 4, 3, partition_bytes=PB).encode().hex()
    np.save(tmp_path / "a.npy", np.zeros((4, 12), dtype))
    code, _, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "MARIANA",
                       "--input", f"0:0={tmp_path / 'a.npy'}", "--partition-bytes", hex(PB))
    line = one_line(err)
    assert code == 2 and f"the array is {np.dtype(dtype).name}" in line and "uint8" in line


def test_a_knob_of_another_kernel_is_an_error_naming_its_kernel(capsys, tmp_path, shipped):
    rec, inp, _ = shipped
    code, _, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "CAYMAN",
                       "--input", f"3:64={inp}", "--allow-unread", "--knob", "emax=alt")
    line = one_line(err)
    assert code == 2 and "emax" in line and "belongs to quantize_mx" in line and "proc_4bit_mx_8" in line
    q = make_quantize_mx_record(32, 8, partition_bytes=PB).encode().hex()
    code, _, err = run(capsys, "case", "new", tmp_path / "q", "--record", q, "-g", "MARIANA",
                       "--knob", "nibble_order=high-first")
    assert code == 2 and "belongs to proc_4bit_non_mx and proc_4bit_mx_8" in one_line(err)
    code, _, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "CAYMAN",
                       "--input", f"3:64={inp}", "--allow-unread", "--knob", "fp6_packing=msb-first")
    assert code == 2 and "belongs to proc_6bit_non_mx" in one_line(err)


def test_case_new_without_inputs_notes_that_only_the_fill_is_read(capsys, tmp_path):
    rec = make_dequant_record(2, 0, 4, 3, partition_bytes=PB).encode().hex()
    code, out, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "MARIANA", "--fill", "0x11")
    assert code == 0, err
    assert "(default: no input region to infer it from)" in out
    assert "note: no input region: the record reads 48 source bytes of the fill 0x11" in out
    code, _, err = run(capsys, "case", "new", tmp_path / "d", "--record", rec, "-g", "MARIANA", "--fill", "256")
    assert code == 2 and "--fill" in one_line(err)


# ---------------------------------------------------------------------- record new
def test_record_new_builds_the_record_from_named_fields(capsys):
    want = make_dequant_record(1, 8, 12, 20, src_partition=3, src_offset=0x40, dst_partition=3, dst_offset=0x100,
                               partition_bytes=PB).encode()
    code, out, err = run(capsys, "record", "new", "0x7b", "--partition-bytes", "0x400", "src.start_addr=3:0x40",
                         "src.num_elem=20,1,1", "num_active_channels=12", "dequant_fmt=e2m1", "group_size=8",
                         "dst.start_addr=3:0x100", "dst.num_elem=32,1,1")
    assert code == 0, err
    assert out.strip() == want.hex()
    # the same with a flat address, one list item alone, and the enum by number
    code, out, _ = run(capsys, "record", "new", "dequant", "src.start_addr=0xc40", "src.num_elem[0]=20",
                       "num_active_channels=12", "dequant_fmt=1", "group_size=8", "dst.start_addr=0xd00",
                       "dst.num_elem=32,1,1")
    assert out.strip() == want.hex()


def test_record_new_quantize_mx_by_format_names(capsys, tmp_path):
    want = make_quantize_mx_record(64, 16, in_dtype=0x06, out_dtype=0x0F, src_offset=0x20, dst_offset=0x80,
                                   scale_offset=0xC0, scale_pidx=4, partition_bytes=PB).encode()
    code, out, err = run(capsys, "record", "new", "quantize_mx", "--partition-bytes", hex(PB), "-o", tmp_path / "r.bin",
                         "src.start_addr=0:0x20", "src.num_elem=8,1,1", "num_active_channels=64", "in_dtype=bf16",
                         "out_dtype=e5m2", "dst.start_addr=0:0x80", "dst.scale_addr=0:0xc0", "dst.num_elem=4",
                         "dst.scale_pidx=4")
    assert code == 0, err
    assert out.strip() == want.hex() and (tmp_path / "r.bin").read_bytes() == want


def test_decode_json_fields_round_trip_through_record_new(capsys):
    for path in sorted(EXAMPLES.rglob("*.json"))[::5]:
        rec = json.loads(path.read_text())["record_hex"]
        code, out, _ = run(capsys, "decode", rec, "--json")
        fields = json.loads(out)["fields"]
        items = [f"{f['name']}={','.join(map(str, f['value'])) if isinstance(f['value'], list) else f['value']}"
                 for f in fields]
        code, out, err = run(capsys, "record", "new", hex(bytes.fromhex(rec)[0]), *items)
        assert code == 0 and out.strip() == rec, (path, err)


@pytest.mark.parametrize("argv,words", [
    (["0x7b", "src.bogus=1"], "unknown field of S3D3TensDequant"),
    (["0x7b", "src.start_addr=3:0x40"], "needs the partition size (--partition-bytes)"),
    (["0x7b", "num_active_channels=300"], "num_active_channels=300: must be an unsigned 8-bit integer"),
    (["0x7b", "src.num_elem=1,2"], "needs 3 comma-separated integers"),
    (["0x7b", "dequant_fmt=e5m2"], "not a TensorDequantize source format"),
    (["0x7b", "in_dtype=weird"], "in_dtype"),
    (["0x7b", "reserved0=00"], "needs exactly 4 bytes"),
    (["0x7b", "src.start_addr"], "expected FIELD=VALUE"),
    (["0x45"], "must be 0x7b"),
    (["0xe3", "--partition-bytes", "6", "dst.num_elem=1"], "--partition-bytes"),
])
def test_record_new_errors_name_the_field(capsys, argv, words):
    code, out, err = run(capsys, "record", "new", *argv)
    assert code == 2 and out == "" and words in one_line(err)


def test_record_new_list_fields_are_the_decoded_names(capsys):
    code, out, _ = run(capsys, "record", "new", "0xe3", "--list-fields")
    names = out.split()
    code, dec, _ = run(capsys, "decode", make_quantize_mx_record(32, 8).encode().hex(), "--json")
    assert code == 0 and names == [f["name"] for f in json.loads(dec)["fields"]]
    assert "dst.scale_pidx" in names


def test_quantize_mx_knob_values_through_case_replay_and_explore(capsys, tmp_path):
    # issue 16: the new QuantizeMX values travel through --knob, the case file, replay and explore.
    # bf16 [32, 8] tile at partition 0 byte 0: block (0..7, elements 0..3) = 32 x 0x0001 (2^-133, fp32 field
    # 0), block (0..7, elements 4..7) = 32 x +Inf (0x7F80), the other blocks 0. Data at 0x40, scales at 0x60.
    q = make_quantize_mx_record(32, 8, in_dtype=0x06, out_dtype=0x0E, dst_offset=0x40, scale_offset=0x60,
                                partition_bytes=PB).encode().hex()
    x = np.zeros((32, 8), np.uint16)
    x[:8, :4] = 0x0001
    x[:8, 4:] = 0x7F80
    np.save(tmp_path / "x.npy", x.view(np.uint8))
    base = ["case", "new", tmp_path / "c", "--record", q, "-g", "MARIANA", "--input", f"0:0={tmp_path / 'x.npy'}",
            "--partition-bytes", hex(PB)]
    code, _, err = run(capsys, *base, "--knob", "underflow=unclamped-data", "--knob", "nonfinite=ocp")
    assert code == 0, err
    case = load_case(tmp_path / "c.json")
    assert case.knobs["underflow"] == "unclamped-data" and case.knobs["nonfinite"] == "ocp"
    exp = {(reg.partition, reg.offset): arr for reg, arr in case.expected}
    # E4M3 ocp: block (0, 0): m - 8 = -8 -> byte 0, data 2^-133 / 2^-135 = 4 -> 0 1001 000 = 0x48;
    # block (0, 1): Inf -> byte 0xFF, data NaN 0x7F (nonfinite=ocp); blocks of rows 1..3: zeros, byte 0
    data = exp[(0, 0x40)]
    assert data.shape == (32, 8) and np.all(data[:8, :4] == 0x48) and np.all(data[:8, 4:] == 0x7F)
    assert not data[8:].any()
    assert np.array_equal(exp[(0, 0x60)], [[0, 0xFF], [0, 0], [0, 0], [0, 0]])
    code, out, _ = run(capsys, "replay", tmp_path / "c.json")
    assert code == 0 and "PASS" in out
    for other in ("underflow=clamp", "underflow=unwrapped-data", "nonfinite=sim"):
        code, out, _ = run(capsys, "replay", tmp_path / "c.json", "--knob", other)
        assert code == 1 and "FAIL" in out, other
    code, _, err = run(capsys, *base, "--knob", "underflow=unclamped")
    line = one_line(err)
    assert code == 2 and "underflow" in line and "unclamped-data" in line and "unwrapped-data" in line
    code, _, err = run(capsys, "replay", tmp_path / "c.json", "--knob", "nonfinite=nan")
    assert code == 2 and "nonfinite" in one_line(err)
    code, out, _ = run(capsys, "explore", tmp_path / "c.json", "--json", "--no-progress")
    assert code == 0
    assert json.loads(out)["consistent"] == [{"emax": "ocp", "underflow": "unclamped-data", "nonfinite": "ocp"}]


def test_a_quantize_mx_case_from_random_bytes_prints_no_warning(tmp_path):
    """case new for a QuantizeMX record over a random SBUF image (fp16 signalling NaNs among its patterns), golden
    and kernel: stderr stays empty (numpy's "invalid value encountered in cast" reached it; issue 40)."""
    rec = make_quantize_mx_record(64, 16, src_offset=0x20, dst_offset=0x80, scale_offset=0xC0, scale_pidx=4,
                                  partition_bytes=PB).encode().hex()
    np.random.default_rng(7).integers(0, 256, 128 * PB, dtype=np.uint8).tofile(tmp_path / "before.bin")
    for backend in ("golden", "kernel"):
        r = subprocess.run([sys.executable, "-m", "q7emu", "case", "new", str(tmp_path / backend), "--record", rec,
                            "-g", "MARIANA", "--sbuf", str(tmp_path / "before.bin"), "--partition-bytes", hex(PB),
                            "--backend", backend], capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert r.returncode == 0 and r.stderr == "", (backend, r.stderr)
    r = subprocess.run([sys.executable, "-m", "q7emu", "replay", str(tmp_path)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stderr == "" and "2 cases: 2 passed" in r.stdout, r.stdout + r.stderr
