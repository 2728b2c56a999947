"""Raw SBUF dumps (issue 26 item 3) and the papercuts of issue 26 item 6, each with its test.

Raw dumps: ``--sbuf FILE.bin --partition-bytes N`` in ``run``, ``case new`` (``--sbuf`` / ``--expected-sbuf``),
``Machine(sbuf=...)`` and ``load_sbuf_image``; a wrong size is one line with the size found and the sizes
accepted; an unknown file shows its first bytes in hex, never a Python bytes literal.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from cli_support import EXAMPLES, MX8, PB, one_line, run

from q7emu.errors import InvalidArgument
from q7emu.machine.cases import build_case, load_case, run_case
from q7emu.machine.machine import Machine, load_sbuf_image


@pytest.fixture
def images(tmp_path):
    """A device capture of the shipped MX case: the SBUF before (its input over zeros) and after (its expected
    bytes over that), as raw dumps of 128 x 0x400 bytes and as an .npz."""
    case = load_case(MX8)
    before = np.zeros((128, PB), np.uint8)
    for reg, arr in case.inputs:
        before[reg.partition:reg.partition + reg.count, reg.offset:reg.offset + reg.length] = arr
    after = before.copy()
    for reg, arr in case.expected:
        after[reg.partition:reg.partition + reg.count, reg.offset:reg.offset + reg.length] = arr
    (tmp_path / "before.bin").write_bytes(before.tobytes())
    (tmp_path / "after.bin").write_bytes(after.tobytes())
    np.savez(tmp_path / "before.npz", sbuf=before)
    return case, before, after


def test_load_sbuf_image_reads_a_raw_dump_given_the_partition_size(tmp_path, images):
    _, before, _ = images
    assert np.array_equal(load_sbuf_image(tmp_path / "before.bin", PB), before)
    assert np.array_equal(load_sbuf_image(tmp_path / "before.npz", PB), before)     # .npz: its width checked
    with pytest.raises(InvalidArgument, match="0x400 bytes per partition, not the 0x800 given"):
        load_sbuf_image(tmp_path / "before.npz", 0x800)


def test_a_raw_dump_of_the_wrong_size_names_the_size_found_and_the_sizes_accepted(tmp_path):
    (tmp_path / "odd.bin").write_bytes(bytes(1000))
    with pytest.raises(InvalidArgument) as e:
        load_sbuf_image(tmp_path / "odd.bin", PB)
    msg = str(e.value)
    assert "1000 bytes" in msg and "is 131072 bytes (128 x 0x400)" in msg and "a multiple of 512" in msg
    (tmp_path / "wide.bin").write_bytes(bytes(128 * 0x800))
    with pytest.raises(InvalidArgument, match="262144 bytes would be 128 x 0x800: --partition-bytes 0x800"):
        load_sbuf_image(tmp_path / "wide.bin", PB)


def test_an_unknown_file_shows_its_first_bytes_in_hex(tmp_path):
    (tmp_path / "sbuf.bin").write_bytes(b"_\x82\xc2\xd9" + bytes(128 * 0x6000 - 4))
    with pytest.raises(InvalidArgument) as e:
        load_sbuf_image(tmp_path / "sbuf.bin")
    msg = str(e.value)
    assert "starts with 5f 82 c2 d9 00 00 00 00" in msg and "b'" not in msg and "\\x" not in msg
    assert "--partition-bytes 0x6000" in msg                 # the size it would be read at


def test_run_reads_a_raw_dump_and_writes_what_the_npz_gives(capsys, tmp_path, images):
    case, _, _ = images
    rec = case.record.hex()
    code, _, err = run(capsys, "run", rec, "-g", "CAYMAN", "--sbuf", tmp_path / "before.bin", "--partition-bytes",
                       hex(PB), "-o", tmp_path / "a.npz")
    assert code == 0, err
    code, _, err = run(capsys, "run", rec, "-g", "CAYMAN", "--sbuf", tmp_path / "before.npz", "-o", tmp_path / "b.npz")
    assert code == 0, err
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        assert np.array_equal(a["sbuf"], b["sbuf"])
        for reg, exp in case.expected:
            assert np.array_equal(a["sbuf"][reg.partition:reg.partition + reg.count,
                                            reg.offset:reg.offset + reg.length], exp)
    code, _, err = run(capsys, "run", rec, "-g", "CAYMAN", "--sbuf", tmp_path / "before.bin", "-o", tmp_path / "c")
    line = one_line(err)
    assert code == 2 and "starts with " in line and "--partition-bytes 0x400" in line


def test_machine_takes_an_image_file_or_array(tmp_path, images):
    case, before, _ = images
    m = Machine("CAYMAN", PB, sbuf=tmp_path / "before.bin")
    m.execute(case.record)
    reg, exp = case.expected[0]
    assert np.array_equal(m.read(*reg.as_tuple()), exp)
    assert Machine("CAYMAN", sbuf=before).partition_bytes == PB                    # the image's width
    with pytest.raises(InvalidArgument, match="partition_bytes"):
        Machine("CAYMAN", 0x800, sbuf=before)


def test_case_new_from_raw_before_and_after_dumps(capsys, tmp_path, images):
    case, _, _ = images
    code, out, err = run(capsys, "case", "new", tmp_path / "cap", "--record", case.record.hex(), "-g", "CAYMAN",
                         "--sbuf", tmp_path / "before.bin", "--expected-sbuf", tmp_path / "after.bin",
                         "--partition-bytes", hex(PB), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["partition_bytes"] == PB and doc["partition_bytes_source"] == "given"
    # two source runs of 10 words (40 bytes) at 0x40 and 0x80 of partitions 3..14: two input regions
    assert [(i["partition"], i["count"], i["offset"], i["length"]) for i in doc["inputs"]] == [
        (3, 12, 0x40, 40), (3, 12, 0x80, 40)]
    assert [(e["partition"], e["count"], e["offset"], e["length"]) for e in doc["expected"]] == [(3, 12, 0x100, 128)]
    got = load_case(tmp_path / "cap")
    assert np.array_equal(got.expected[0][1], case.expected[0][1])
    assert run_case(got).ok
    # a device that wrote other bytes: the case fails on replay, as it must
    after = np.frombuffer((tmp_path / "after.bin").read_bytes(), np.uint8).reshape(128, PB).copy()
    after[7, 0x111] ^= 1
    (tmp_path / "after2.bin").write_bytes(after.tobytes())
    assert run(capsys, "case", "new", tmp_path / "cap2", "--record", case.record.hex(), "-g", "CAYMAN", "--sbuf",
               tmp_path / "before.bin", "--expected-sbuf", tmp_path / "after2.bin",
               "--partition-bytes", hex(PB))[0] == 0
    assert run(capsys, "replay", tmp_path / "cap2.json")[0] == 1


def test_case_new_sbuf_errors(capsys, tmp_path, images):
    case, _, _ = images
    rec = case.record.hex()
    code, _, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "CAYMAN", "--sbuf",
                       tmp_path / "before.bin", "--partition-bytes", "0x800")
    assert code == 2 and "131072 bytes" in one_line(err) and "0x400" in one_line(err)
    code, _, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "CAYMAN", "--expected-sbuf",
                       tmp_path / "after.bin")
    assert code == 2 and "--expected-sbuf needs --sbuf" in one_line(err)


# ---------------------------------------------------------------------------------------------- papercuts
def test_case_new_says_default_when_nothing_pins_the_partition_size(capsys, tmp_path):
    """Papercut: with every input at partition 0 the size is the default, not 'inferred'."""
    from q7emu.isa.records import make_dequant_record
    rec = make_dequant_record(2, 0, 4, 3, partition_bytes=0x30000).encode().hex()
    np.save(tmp_path / "a.npy", np.arange(48, dtype=np.uint8).reshape(4, 12))
    code, out, err = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "MARIANA",
                         "--input", f"0:0={tmp_path / 'a.npy'}")
    assert code == 0, err
    assert "partition_bytes=0x30000 (default: no input region pins it" in out and "inferred" not in out
    code, out, _ = run(capsys, "case", "new", tmp_path / "c", "--record", rec, "-g", "MARIANA",
                       "--input", f"0:0={tmp_path / 'a.npy'}", "--json")
    assert json.loads(out)["partition_bytes_source"] == "default"


@pytest.mark.parametrize("argv,fmt", [
    (["profile", "{case}", "--json", "--no-progress"], "q7emu-profile"),
    (["trace", "{case}", "-o", "{tmp}/t.q7t", "--json", "--no-progress"], "q7emu-trace-run"),
    (["trace", "diff", "{tmp}/t.q7t", "{tmp}/t.q7t", "--json"], "q7emu-trace-diff"),
    (["trace", "export", "{tmp}/t.q7t", "-o", "{tmp}/t.jsonl", "--json"], "q7emu-trace-export"),
])
def test_trace_and_profile_documents_carry_q7emu_version(capsys, tmp_path, argv, fmt):
    """Papercut: docs/cli.md §2 says every document starts with format, version, q7emu_version."""
    from q7emu._version import __version__
    case = EXAMPLES / "cayman" / "cayman_7b_proc_4bit_non_mx_e2m1.json"
    if argv[0] == "trace" and argv[1] in ("diff", "export"):
        assert run(capsys, "trace", case, "-o", tmp_path / "t.q7t", "--no-progress")[0] == 0
    code, out, err = run(capsys, *[a.format(case=case, tmp=tmp_path) for a in argv])
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc)[:3] == ["format", "version", "q7emu_version"]
    assert doc["format"] == fmt and doc["q7emu_version"] == __version__


def test_a_trace_is_the_same_bytes_from_any_checkout(capsys, tmp_path):
    """Papercut: the .q7t embedded the case path as typed; two checkouts (here: two copies of a case, one
    reached by an absolute path, one by a relative path from another folder) write the same bytes."""
    import shutil
    for d in ("one", "two/deeper"):
        (tmp_path / d).mkdir(parents=True)
        for suffix in (".json", ".npz"):
            shutil.copy(MX8.with_suffix(suffix), tmp_path / d / MX8.with_suffix(suffix).name)
    assert run(capsys, "trace", tmp_path / "one" / MX8.name, "-o", tmp_path / "a.q7t", "--no-progress")[0] == 0
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path / "two")
        assert run(capsys, "trace", Path("deeper") / MX8.name, "-o", tmp_path / "b.q7t", "--no-progress")[0] == 0
    finally:
        os.chdir(cwd)
    assert (tmp_path / "a.q7t").read_bytes() == (tmp_path / "b.q7t").read_bytes()


def test_build_case_takes_a_record_from_fields():
    """Papercut: build_case(record_from_fields(...)) raised TypeError (it needed .encode())."""
    from q7emu.isa.records import record_from_fields
    rec = record_from_fields("0x7b", {"src.start_addr": "3:0x40", "src.num_elem": "4,1,1", "num_active_channels": 4,
                                      "dequant_fmt": "e2m1", "dst.start_addr": "3:0x100", "dst.num_elem": "8,1,1"},
                             partition_bytes=PB)
    src = np.full((4, 16), 0x77, np.uint8)          # FP4 E2M1 code 7 = 6.0 -> E5M2 0x46 (docs/firmware.md §2.2)
    case = build_case(rec, "CAYMAN", [(3, 0x40, src)], partition_bytes=PB)
    assert case.record == rec.encode()
    assert np.array_equal(case.expected[0][1], np.full((4, 32), 0x46, np.uint8))


def test_replay_rows_of_many_paths_line_up(capsys):
    """Papercut: replay's columns were misaligned by paths of different lengths."""
    code, out, _ = run(capsys, "replay", EXAMPLES, "--no-progress")
    assert code == 0
    rows = [ln for ln in out.splitlines() if ln.startswith("0x")]
    assert len(rows) == 34 and len({r.index(" B  ") for r in rows}) == 1 and len({r.index(" PASS ") for r in rows}) == 1


# ---------------------------------------------------------------------------------------------- issue 41 item 9
@pytest.mark.parametrize("value", ["", " 1/2", "1/2 ", "+1/2", "1_0/20", "\u0661/\u0662", "1/2/3", "1/", "/2",
                                   "0x1/2", "1" * 19 + "/" + "2" * 19])
def test_shard_accepts_only_i_slash_n_in_decimal_digits(capsys, value):
    """``--shard ""`` ran every case (a farm script's ``--shard "$SHARD"`` with SHARD unset ran everything
    everywhere); Python's int() also took spaces, signs, underscores and other scripts' digits."""
    code, out, err = run(capsys, "replay", EXAMPLES / "cayman", "--shard", value)
    assert code == 2 and out == "" and "--shard" in one_line(err), (value, err)
    from q7emu.machine.replay import parse_shard
    with pytest.raises(InvalidArgument, match="--shard"):
        parse_shard(value)


@pytest.mark.parametrize("argv", [
    ["replay", EXAMPLES / "cayman", "--junit", ""], ["replay", EXAMPLES / "cayman", "--plot", ""],
    ["replay", EXAMPLES / "cayman", "-k", ""], ["replay", EXAMPLES / "cayman", "--dask", ""], ["replay", ""],
    ["explore", ""], ["merge", ""], ["trace", "show", ""], ["decode", ""],
    ["record", "new", "0x7b", "-o", "", "src.start_addr=0"], ["listing", "proc_4bit_non_mx", "--dst-dtype", ""]])
def test_an_empty_value_is_refused_not_read_as_absent(capsys, argv):
    """The class of item 9: an unset shell variable must not turn an argument off (no JUnit file, every case, the
    current folder): every argument but free text refuses an empty value in one line."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and "an empty value" in one_line(err), (argv, err)
