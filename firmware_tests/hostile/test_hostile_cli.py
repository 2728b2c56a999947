"""The CLI under hostile input (issue 15 findings 5, 6 and 8): each input that printed a traceback is now one
line ``q7emu: error: ...`` with exit 2 (or, for a case in a replay, one failing row with exit 1); small files
that inflate or claim huge sizes cost no memory. The commands run in a subprocess with a hang timeout, except
the plain bad-input checks, which run q7emu's main in-process (they cannot crash or block).
"""
from __future__ import annotations

import io
import json
import shutil
import zipfile

import numpy as np
import pytest
from hostile_lib import EXAMPLES, assert_clean_error, assert_no_crash, cli, deflate_bomb, python

from q7emu.isa.records import make_dequant_record

PB = 0x400
REC = make_dequant_record(1, 0, 4, 4, partition_bytes=PB).encode().hex()
SEED = EXAMPLES / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(7)
    np.savez_compressed(d / "in.npz", sbuf=rng.integers(0, 256, (128, PB), dtype=np.uint8))
    np.save(d / "in.npy", rng.integers(0, 256, (128, PB), dtype=np.uint8))
    data = (d / "in.npz").read_bytes()
    (d / "trunc.npz").write_bytes(data[:len(data) // 2])
    mid = len(data) // 2
    (d / "crc.npz").write_bytes(data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1:])
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED) as z:
        buf = io.BytesIO()
        np.save(buf, np.zeros((128, PB), np.uint8))
        z.writestr("sbuf.npy", buf.getvalue())
    stored = bytearray(b.getvalue())
    stored[len(stored) // 2] ^= 1                       # a stored member: only the CRC notices
    (d / "crcstored.npz").write_bytes(bytes(stored))
    with open(d / "huge.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "|u1", "fortran_order": False, "shape": (128, 1 << 40)})
    deflate_bomb(d / "bomb.npz", (128, 1 << 24))       # ~2 MB that inflate to 2 GiB
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "text.npz").write_text("not an archive")
    np.savez(d / "arr.npz", src=rng.integers(0, 256, (4, 16), dtype=np.uint8))
    meta = json.loads(SEED.with_suffix(".json").read_text())
    cases = d / "cases"
    cases.mkdir()
    deep = dict(meta, note=json.loads("[" * 90 + "]" * 90))           # deeper than the JSON depth limit (64)
    for name, m in {"deep": deep, "knobs-list": dict(meta, knobs=[1, 2])}.items():
        (cases / f"{name}.json").write_text(json.dumps(m))
        shutil.copy(SEED.with_suffix(".npz"), cases / f"{name}.npz")
    (d / "deepcase.json").write_text('{"format": "q7emu-case", "version": 1, "note": ' + "[" * 100_000
                                     + "]" * 100_000 + "}")
    return d


RUN = ["run", REC, "-g", "CAYMAN", "--backend", "golden", "-o"]


def in_process(capsys, *argv):
    """q7emu's main in this process (for inputs that cannot crash or hang it: the subprocess tests above and
    below cover those); an uncaught exception fails the test like a traceback would."""
    from hostile_lib import Outcome

    from q7emu.cli.main import main
    code = main(list(argv))
    out, err = capsys.readouterr()
    return Outcome(code, out, err)


@pytest.mark.parametrize("sbuf,msg", [
    ("trunc.npz", "truncated or damaged"),            # was BadZipFile
    ("crc.npz", "damaged"),                           # was zlib.error
    ("crcstored.npz", "damaged"),                     # was BadZipFile (Bad CRC-32)
    ("huge.npy", "sbuf must be uint8"),               # was MemoryError
    ("bomb.npz", "over the limit"),                   # was 2.1 GB RSS, then a shape error
    ("deep.json", "neither an .npz"),
    ("text.npz", "neither an .npz"),
    ("missing.npz", "No such file"),
])
def test_run_with_a_bad_sbuf_image_is_one_line(files, tmp_path, capsys, sbuf, msg):
    line = assert_clean_error(in_process(capsys, *RUN, str(tmp_path / "out.npz"), "--sbuf", str(files / sbuf)))
    assert msg in line
    assert not (tmp_path / "out.npz").exists()


def test_run_accepts_an_npy_sbuf_image(files, tmp_path):
    """A .npy given to --sbuf (was a traceback) is read as the SBUF image."""
    out = cli(*RUN, str(tmp_path / "a.npz"), "--sbuf", str(files / "in.npy"))
    assert out.returncode == 0, out.describe()
    out = cli(*RUN, str(tmp_path / "b.npz"), "--sbuf", str(files / "in.npz"))
    assert out.returncode == 0, out.describe()
    assert np.array_equal(np.load(tmp_path / "a.npz")["sbuf"][4:], np.load(files / "in.npy")[4:])


MEMORY = """
import resource, sys
from q7emu.cli.main import main
code = main(sys.argv[1:])
try:    # VmHWM: this process's own peak; ru_maxrss carries the forking parent's peak over exec (Linux)
    peak_kib = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
except OSError:
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(code, peak_kib // 1024)
"""


def test_a_2_mb_npz_inflating_to_2_gib_is_refused_before_inflating(files, tmp_path):
    out = python(MEMORY, *RUN, str(tmp_path / "o.npz"), "--sbuf", str(files / "bomb.npz"))
    assert_no_crash(out)
    code, rss_mb = (int(x) for x in out.stdout.split())
    assert code == 2 and "over the limit" in out.stderr
    assert rss_mb < 500, f"peak RSS {rss_mb} MB for a refused 2 MB file"


@pytest.mark.parametrize("argv,msg", [
    (["case", "new", "{tmp}/c", "--record", REC, "-g", "CAYMAN", "--fill", "300"], "--fill 300"),
    (["case", "new", "{tmp}/c", "--record", REC, "-g", "CAYMAN", "--input", "0:0={files}/trunc.npz:sbuf"],
     "truncated"),
    (["case", "new", "{tmp}/c", "--record", REC, "-g", "CAYMAN", "--input", "0:0={files}/huge.npy"],
     "over the limit"),
    (["case", "new", "{tmp}/c", "--record", REC, "-g", "CAYMAN", "--input", "0:0={files}/arr.npz:nope"],
     "no array of that name"),
    (["decode", REC, "--partition-bytes", "0"], "multiple of 4"),          # was ZeroDivisionError
    (["decode", REC, "--partition-bytes", "-4"], "multiple of 4"),
    (["explore", "{files}/cases/knobs-list.json", "--no-progress"], "'knobs' has the wrong type"),
    (["explore", "{files}/deepcase.json", "--no-progress"], "nested deeper"),     # was RecursionError
    (["run", REC, "--sbuf", "{files}/in.npz", "-o", "{tmp}/no/such/dir/o.npz", "-g", "CAYMAN"], "does not exist"),
    (["run", REC, "--sbuf", "{files}/in.npz", "-o", "{tmp}", "-g", "CAYMAN"], "is a folder"),
])
def test_bad_cli_input_is_one_line_exit_2(files, tmp_path, capsys, argv, msg):
    argv = [a.format(tmp=tmp_path, files=files) for a in argv]
    line = assert_clean_error(in_process(capsys, *argv))
    assert msg in line
    assert not list(tmp_path.glob("c.*"))


@pytest.mark.parametrize("case", ["deep.json", "knobs-list.json"])
def test_replay_of_a_malformed_case_is_a_failing_row(files, case):
    out = cli("replay", str(files / "cases" / case), "--no-progress")
    assert_no_crash(out)
    assert out.returncode == 2 and "CaseError" in out.stdout, out.describe()


def test_replay_of_a_deeply_nested_case_is_a_failing_row(files):
    out = cli("replay", str(files / "deepcase.json"), "--no-progress")
    assert_no_crash(out)
    assert out.returncode == 2 and "nested deeper" in out.stdout, out.describe()
