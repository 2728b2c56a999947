"""Case files in the stored (uncompressed) .npz that ``save_case`` and ``case new`` write (issue 38): the reader
takes a stored member's bytes straight from the file (q7emu.fileio.NpzReader), so it checks by itself what
zipfile checked: the local header (signature, name), the file's size, the .npy header against the member, the
CRC-32. A damaged file is refused in one line, exit 2 on the command line, never a traceback; every byte of the
file is flipped and every length cut. Old (deflated) cases still load.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
from hostile_lib import EXAMPLES, cli

from q7emu.errors import CaseError
from q7emu.fileio import NpzReader
from q7emu.machine.cases import load_case, run_case, save_case

SEED = EXAMPLES / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1"


def stored_copy(folder: Path, name: str = "c") -> Path:
    """The seed case (deflated, as every case written before issue 38) saved again: stored."""
    return save_case(load_case(SEED.with_suffix(".json")), folder / name)


def arrays_of(case) -> list[bytes]:
    return [a.tobytes() for _, a in [*case.inputs, *case.expected]]


def test_save_case_stores_by_default_and_deflates_when_asked(tmp_path):
    seed = load_case(SEED.with_suffix(".json"))
    with zipfile.ZipFile(SEED.with_suffix(".npz")) as z:      # the shipped examples: deflated (the old default)
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
    for compress, method in ((False, zipfile.ZIP_STORED), (True, zipfile.ZIP_DEFLATED)):
        # (compress=False by its default: that default is what the test pins)
        path = save_case(seed, tmp_path / f"c{int(compress)}", **({"compress": True} if compress else {}))
        with zipfile.ZipFile(path.with_suffix(".npz")) as z:
            assert {i.compress_type for i in z.infolist()} == {method}
            assert z.testzip() is None
        again = load_case(path)
        assert arrays_of(again) == arrays_of(seed)
        assert run_case(again, backend="golden").ok
        with np.load(path.with_suffix(".npz")) as z:                # numpy reads it as it reads any .npz
            assert sorted(z.files) == sorted(f"{k}{i}" for k, items in (("in", seed.inputs), ("exp", seed.expected))
                                             for i in range(len(items)))


def test_case_new_compress_writes_a_deflated_case(tmp_path):
    seed = load_case(SEED.with_suffix(".json"))
    args = ["--record", seed.record.hex(), "-g", "CAYMAN"]
    (reg, arr), = seed.inputs
    np.save(tmp_path / "in.npy", arr)
    for extra, method in (([], zipfile.ZIP_STORED), (["--compress"], zipfile.ZIP_DEFLATED)):
        out = tmp_path / f"c{len(extra)}"
        done = cli("case", "new", str(out), *args, "--input", f"{reg.partition}:{reg.offset}={tmp_path / 'in.npy'}",
                   "--partition-bytes", hex(seed.partition_bytes), "--allow-unread", *extra)
        assert done.returncode == 0, done.describe()
        with zipfile.ZipFile(out.with_suffix(".npz")) as z:
            assert {i.compress_type for i in z.infolist()} == {method}
        assert arrays_of(load_case(out)) == arrays_of(seed)


def test_every_flipped_byte_is_refused_in_one_line_or_reads_the_same_arrays(tmp_path):
    """Each byte of a stored case's .npz flipped in turn: load_case refuses it (CaseError, one line) or, where
    the byte is one no reader checks (a time stamp, a version), reads exactly the arrays of the intact file."""
    path = stored_copy(tmp_path)
    npz = path.with_suffix(".npz")
    good = npz.read_bytes()
    want = arrays_of(load_case(path))
    refused = 0
    for i in range(len(good)):
        npz.write_bytes(good[:i] + bytes([good[i] ^ 0xFF]) + good[i + 1:])
        try:
            got = load_case(path)
        except CaseError as e:
            assert "\n" not in str(e), (i, str(e))
            refused += 1
            continue
        assert arrays_of(got) == want, f"byte {i} flipped: read other arrays"
    assert refused > len(good) // 2          # the data bytes at least: the CRC-32 covers them


def test_every_truncation_is_refused_in_one_line(tmp_path):
    path = stored_copy(tmp_path)
    npz = path.with_suffix(".npz")
    good = npz.read_bytes()
    for n in range(len(good)):
        npz.write_bytes(good[:n])
        with pytest.raises(CaseError) as e:
            load_case(path)
        assert "\n" not in str(e.value), n


def _member_start(npz: Path, name: str) -> tuple[int, zipfile.ZipInfo]:
    with zipfile.ZipFile(npz) as z:
        zi = z.getinfo(f"{name}.npy")
    data = npz.read_bytes()
    n, m = int.from_bytes(data[zi.header_offset + 26:zi.header_offset + 28], "little"), \
        int.from_bytes(data[zi.header_offset + 28:zi.header_offset + 30], "little")
    return zi.header_offset + 30 + n + m, zi


@pytest.mark.parametrize("damage,message", [
    ("data", "CRC-32 mismatch"),
    ("signature", "bad magic number"),
    ("name", "names another member"),
    ("extra-length", "truncated"),
])
def test_damaged_stored_members_name_what_is_wrong(tmp_path, damage, message):
    path = stored_copy(tmp_path)
    npz = path.with_suffix(".npz")
    data = bytearray(npz.read_bytes())
    start, zi = _member_start(npz, "exp0")
    if damage == "data":
        data[start + zi.file_size - 1] ^= 1            # the last data byte: the .npy header still reads
    elif damage == "signature":
        data[zi.header_offset] ^= 0xFF
    elif damage == "name":
        data[zi.header_offset + 30] ^= 0x01            # "exp0.npy" -> "dxp0.npy" in the local header only
    else:
        data[zi.header_offset + 28:zi.header_offset + 30] = (0xFFFF).to_bytes(2, "little")
    npz.write_bytes(bytes(data))
    with pytest.raises(CaseError, match=message) as e:
        load_case(path)
    assert "\n" not in str(e.value) and "exp0" in str(e.value)
    out = cli("replay", str(path), "--backend", "golden", "--no-progress")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.describe()


def test_a_stored_member_is_bounded_by_the_array_limit_before_it_is_read(tmp_path, monkeypatch):
    path = stored_copy(tmp_path)
    monkeypatch.setenv("Q7EMU_MAX_ARRAY_BYTES", "100")
    with pytest.raises(CaseError, match="Q7EMU_MAX_ARRAY_BYTES") as e:
        load_case(path)
    assert "\n" not in str(e.value)
    monkeypatch.delenv("Q7EMU_MAX_ARRAY_BYTES")
    with NpzReader(path.with_suffix(".npz"), max_bytes=10 ** 6) as z:
        total = sum(z.read(n).nbytes for n in z.names)
    assert total == sum(len(a) for a in arrays_of(load_case(path)))


def test_a_damaged_stored_case_on_the_command_line_is_one_error_row_exit_2(tmp_path):
    path = stored_copy(tmp_path)
    npz = path.with_suffix(".npz")
    data = bytearray(npz.read_bytes())
    start, zi = _member_start(npz, "in0")
    data[start + zi.file_size // 2] ^= 0x40
    npz.write_bytes(bytes(data))
    out = cli("replay", str(path), "--no-progress")
    assert out.returncode == 2 and out.signal is None and not out.stderr, out.describe()
    errors = [line for line in out.stdout.splitlines() if "CaseError" in line]
    assert len(errors) == 1 and "c.npz" in errors[0] and "CRC-32 mismatch" in errors[0], out.describe()
