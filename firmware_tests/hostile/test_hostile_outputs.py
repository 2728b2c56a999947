"""Outputs never replace special files and fail cleanly when the file system does (issue 27 item 5, and the
ENOSPC / read-only class of the hunt).

``atomic_write`` renamed its temporary file over whatever the path named: a symlink (the file it points to was
never written), a dangling symlink, a FIFO, a character device (as root, ``q7emu run ... -o /dev/null``
replaced /dev/null with a regular file). Now (docs/limits.md §3) a symlink is written through (the file it
names is replaced atomically, in its own folder; the link stays), and a FIFO, socket, device or symlink loop
is refused before any work, in one line. A file system that fails the write (full, file too large, read-only)
is one line naming the output, the old file untouched, no temporary file left.
"""
from __future__ import annotations

import os
import resource
import socket
import stat
import subprocess
import sys

import numpy as np
import pytest
from hostile_lib import EXAMPLES as EXAMPLES_DIR
from hostile_lib import HANG, assert_clean_error, cli, env

from q7emu.fileio import atomic_write_text
from q7emu.isa.records import make_dequant_record

PB = 0x400
REC = make_dequant_record(1, 0, 4, 4, partition_bytes=PB).encode().hex()


@pytest.fixture
def sbuf(tmp_path):
    p = tmp_path / "in.npz"
    np.savez(p, sbuf=np.random.default_rng(3).integers(0, 256, (128, PB), dtype=np.uint8))
    return p


def run_to(sbuf, dest, **kw):
    return cli("run", REC, "--sbuf", str(sbuf), "-o", str(dest), "-g", "CAYMAN", **kw)


def tmp_files(folder):
    return [n for n in os.listdir(folder) if n.endswith(".tmp")]


def test_a_symlink_output_writes_the_file_it_names(tmp_path, sbuf):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.npz"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.npz"
    link.symlink_to(target)
    out = run_to(sbuf, link)
    assert out.returncode == 0, out.describe()
    assert link.is_symlink() and os.readlink(link) == str(target)        # the link stays a link ...
    with np.load(target) as z:                                          # ... and its target got the bytes
        assert z["sbuf"].shape == (128, PB)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640                 # a replaced file keeps its mode
    assert not tmp_files(tmp_path) and not tmp_files(tmp_path / "real")


def test_a_dangling_symlink_output_creates_its_target(tmp_path, sbuf):
    link = tmp_path / "link.npz"
    link.symlink_to(tmp_path / "made.npz")
    out = run_to(sbuf, link)
    assert out.returncode == 0, out.describe()
    assert link.is_symlink() and (tmp_path / "made.npz").is_file()


def test_the_api_writes_through_a_symlink_too(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    (tmp_path / "l.txt").symlink_to("t.txt")                            # a relative link
    atomic_write_text(tmp_path / "l.txt", "new")
    assert (tmp_path / "l.txt").is_symlink() and target.read_text() == "new"


def _fifo(p):
    os.mkfifo(p)
    return "FIFO"


def _socket(p):
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()
    return "socket"


def _device(p):
    try:
        os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))           # a /dev/null twin: safe to test as root
    except (PermissionError, OSError):
        pytest.skip("cannot make a device node here")
    return "device"


def _loop(p):
    os.symlink(p.name + ".b", p.with_name(p.name + ".a"))
    os.symlink(p.name + ".a", p.with_name(p.name + ".b"))
    os.symlink(p.name + ".a", p)
    return "symlink loop"


@pytest.mark.parametrize("make", [_fifo, _socket, _device, _loop], ids=["fifo", "socket", "device", "loop"])
@pytest.mark.parametrize("through_link", [False, True], ids=["direct", "via-symlink"])
def test_special_files_are_refused_and_left_alone(tmp_path, sbuf, make, through_link):
    special = tmp_path / "out.npz"
    what = make(special)
    before = os.lstat(special)
    dest = special
    if through_link:
        dest = tmp_path / "to-special.npz"
        dest.symlink_to(special)
    out = run_to(sbuf, dest, timeout=60)                 # a FIFO must not block the writer either
    line = assert_clean_error(out)
    assert ("loop" in line) if what == "symlink loop" else (what.lower() in line.lower()), line
    after = os.lstat(special)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert not tmp_files(tmp_path)


@pytest.mark.parametrize("argv,suffix", [
    (["replay", "{case}", "--plot", "{out}"], ".png"),
    (["merge", "{report}", "-o", "{out}"], ".json"),
    (["merge", "{report}", "--junit", "{out}"], ".xml"),
], ids=["replay-plot", "merge-o", "merge-junit"])
@pytest.mark.parametrize("make", [_fifo, _device], ids=["fifo", "device"])
def test_the_farm_outputs_refuse_special_files_too(tmp_path, argv, suffix, make):
    """The outputs the farm added (issue 26: ``replay --plot``, ``merge -o`` / ``--junit``) go through the same
    checks: a FIFO or device is refused in one line before any work and left as it was."""
    if "--plot" in argv:
        pytest.importorskip("matplotlib")
    case = sorted((EXAMPLES_DIR / "cayman").glob("*.json"))[0]
    rep = tmp_path / "shard.json"
    made = cli("replay", str(case), "--json")
    assert made.returncode == 0, made.describe()
    rep.write_text(made.stdout)
    special = tmp_path / f"out{suffix}"
    what = make(special)
    before = os.lstat(special)
    out = cli(*[a.format(case=case, report=rep, out=special) for a in argv], timeout=60)
    line = assert_clean_error(out)
    assert what.lower() in line.lower() and out.stdout == "", out.describe()
    after = os.lstat(special)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode) and not tmp_files(tmp_path)


def test_merge_writes_through_a_symlink(tmp_path):
    case = sorted((EXAMPLES_DIR / "cayman").glob("*.json"))[0]
    made = cli("replay", str(case), "--json")
    (tmp_path / "shard.json").write_text(made.stdout)
    (tmp_path / "real").mkdir()
    (tmp_path / "m.json").symlink_to(tmp_path / "real" / "merged.json")
    out = cli("merge", str(tmp_path / "shard.json"), "-o", str(tmp_path / "m.json"))
    assert out.returncode == 0, out.describe()
    assert (tmp_path / "m.json").is_symlink() and '"q7emu-replay"' in (tmp_path / "real" / "merged.json").read_text()


@pytest.mark.skipif(os.geteuid() == 0, reason="as root this would test the real /dev/null: see the device case")
def test_dev_null_is_refused(sbuf):
    line = assert_clean_error(run_to(sbuf, "/dev/null"))
    assert "device" in line and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def _limit_file_size(nbytes):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    return set_limit


@pytest.mark.parametrize("argv", [
    ["run", REC, "--sbuf", "{sbuf}", "-o", "{out}", "-g", "CAYMAN"],
    ["case", "new", "{out}", "--record", REC, "-g", "CAYMAN", "--partition-bytes", hex(PB),
     "--input", "0:0={region}", "--allow-unread"],
    ["record", "new", "0x7b", "-o", "{out}"],
    ["trace", "{case}", "-o", "{out}"],
    ["trace", "import", "{jsonl}", "-o", "{out}"],
    ["trace", "{case}", "-o", "{out}.jsonl"],
    ["trace", "{case}", "-o", "{out}", "--log", "{out}.log"],
], ids=["run", "case-new", "record-new", "trace", "trace-import", "trace-jsonl", "trace-log"])
def test_a_full_file_system_is_one_line_naming_the_output(tmp_path, sbuf, argv):
    """RLIMIT_FSIZE stands in for a full disk: the write fails (EFBIG, as ENOSPC would) part way."""
    np.save(tmp_path / "region.npy", np.ones((128, PB // 4), np.uint8))
    out = tmp_path / ("out.npz" if argv[0] == "run" else "out.q7t" if argv[0] == "trace" else "out")
    if argv[0] == "record":
        out = tmp_path / "rec.bin"
    out_old = b"old bytes"
    case = sorted((EXAMPLES_DIR / "cayman").glob("*.json"))[0]
    if "{jsonl}" in argv:
        assert cli("trace", str(case), "-o", str(tmp_path / "in.jsonl")).returncode == 0
    argv = [a.format(sbuf=sbuf, out=out, region=tmp_path / "region.npy", case=case, jsonl=tmp_path / "in.jsonl")
            for a in argv]
    if argv[0] == "record":
        argv = ["record", "new", "0x7b", "--partition-bytes", "0x400", "src.start_addr=3:0x40",
                "src.num_elem=4,1,1", "num_active_channels=4", "dequant_fmt=e2m1", "dst.start_addr=3:0x100",
                "dst.num_elem=8,1,1", "-o", str(out)]
    if argv[-1].endswith(".jsonl"):
        out = out.with_name(out.name + ".jsonl")
        argv[-1] = str(out)
    (out if argv[0] != "case" else out.with_suffix(".npz")).write_bytes(out_old)
    # no byte-code writes under the limit: CPython would write a 16-byte (header-only) .pyc for a module first
    # imported here (its short write raises nothing), and every later import of that module in this checkout fails
    p = subprocess.run([sys.executable, "-m", "q7emu", *argv], capture_output=True, text=True,
                       env={**env(), "PYTHONDONTWRITEBYTECODE": "1"}, timeout=HANG, preexec_fn=_limit_file_size(16))
    from hostile_lib import Outcome
    err = "\n".join(x for x in p.stderr.splitlines() if not x.startswith("q7emu trace: "))  # the size estimate
    line = assert_clean_error(Outcome(p.returncode, p.stdout, err))
    assert "File too large" in line and str(tmp_path) in line, line
    # the output asked for, once, never a temporary file standing for it (issue 41 item 10: --jsonl named its .q7t)
    named = [out.with_suffix(".npz")] if argv[0] == "case" else [out, out.with_name(out.name + ".log")]
    assert any(line.endswith(f"(writing {n})") for n in named), line
    assert line.count("(writing ") == 1 and ".tmp" not in line, line
    assert (out if argv[0] != "case" else out.with_suffix(".npz")).read_bytes() == out_old
    assert not tmp_files(tmp_path)


def test_a_read_only_file_system_is_one_line(sbuf):
    ro = "/proc/sys"                               # read-only for everyone, root included
    line = assert_clean_error(run_to(sbuf, f"{ro}/q7emu-out.npz"))
    assert "q7emu-out.npz" in line or ro in line, line


def test_trace_export_to_stdout_and_only_there(tmp_path):
    """``-`` is stdout where the format is text (JSON Lines); a binary output refuses it."""
    case = next(iter(sorted((EXAMPLES_DIR / "cayman").glob("*.json"))))
    t = tmp_path / "t.q7t"
    assert cli("trace", str(case), "-o", str(t), "--ops", "sav2nx8_xp").returncode == 0
    out = cli("trace", "export", str(t), "-o", "-")
    assert out.returncode == 0 and out.stdout.startswith('{"format":"q7emu-trace-jsonl"'), out.describe()
    assert not (tmp_path / "-").exists() and not os.path.exists("-")
    assert_clean_error(cli("trace", "import", str(t), "-o", "-"))


@pytest.mark.parametrize("length", [232, 244, 255, 256])
def test_an_output_named_near_the_file_name_limit(tmp_path, sbuf, capsys, length):
    """An output whose own name fits the file system (255 bytes) is written, also when its temporary file's name
    (``.NAME.xxxxxxxxxxxx.tmp``, 18 bytes longer) would not fit: before, a valid name within 23 bytes of the limit
    failed with ENAMETOOLONG (issue 41's hostile round). One byte over the limit is one line naming the output."""
    from cli_support import run
    case = sorted((EXAMPLES_DIR / "cayman").glob("*.json"))[0]
    outputs = {"run": ("npz", ["run", REC, "--sbuf", sbuf, "-g", "CAYMAN", "-o"]),
               "junit": ("xml", ["replay", case, "--junit"]),
               "trace": ("jsonl", ["trace", case, "-o"]),
               "record": ("bin", ["record", "new", "0x7b", "src.num_elem=4,1,1", "-o"])}
    for what, (ext, argv) in outputs.items():
        name = "n" * (length - len(ext) - 1) + "." + ext
        code, out, err = run(capsys, *argv, tmp_path / name)
        if length <= 255:
            assert code == 0 and (tmp_path / name).is_file(), (what, err)
        else:
            assert code == 2 and "File name too long" in err and len(err.strip().splitlines()) == 1, (what, err)
        assert not tmp_files(tmp_path), what
