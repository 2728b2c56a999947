"""Hostile .npy / .npz images (issue 15 findings 5 and 6): random .npy headers (shapes near and past every
limit, odd dtypes and orders), and mutated .npz archives (truncations, flipped bytes, lying sizes), through
the bounded readers and load_sbuf_image: an array with exactly the header's shape and dtype, or a one-line
InvalidArgument; never MemoryError, BadZipFile, zlib.error or a traceback; never more memory than the
header's array. The base-layer unit tests are firmware_tests/base/test_fileio_readers.py.
"""
from __future__ import annotations

import io
import zipfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from q7emu import fileio
from q7emu.errors import InvalidArgument
from q7emu.machine.machine import load_sbuf_image

COUNTS = {"npy": 0, "npy_read": 0, "npz": 0, "npz_read": 0, "refused": 0}
DESCRS = ["|u1", "<u2", ">u4", "<f8", "|b1", "|V7", "<c16", "|O", "|S0", "|V0", "<U3", "<M8[s]", "u1", "float64",
          "[('a', '<u1')]", "<i16", "|u8"]
dims = st.one_of(st.integers(0, 5), st.integers(0, 2 ** 64), st.sampled_from([128, 0x30000, 0x40004, 2 ** 31,
                                                                             2 ** 63 - 1, 2 ** 63, -1]))


def read_or_refuse(read, path, kind):
    """``read(path)``, counted under ``kind``; None when it is refused, whose message must be one line."""
    COUNTS[kind] += 1
    try:
        got = read(path)
    except InvalidArgument as e:
        assert "\n" not in str(e)
        COUNTS["refused"] += 1
        return None
    COUNTS[f"{kind}_read"] += 1
    return got


def npy_bytes(descr, fortran, shape, data):
    d = descr if descr.startswith("[") else repr(descr)
    head = f"{{'descr': {d}, 'fortran_order': {fortran}, 'shape': {tuple(shape)!r}, }}"
    head = head + " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head.encode() + data


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(descr=st.sampled_from(DESCRS), fortran=st.booleans(), shape=st.lists(dims, max_size=3),
       data=st.binary(max_size=300))
def test_random_npy_headers(tmp_path_factory, descr, fortran, shape, data):
    p = tmp_path_factory.mktemp("n") / "a.npy"
    p.write_bytes(npy_bytes(descr, fortran, shape, data))
    arr = read_or_refuse(fileio.read_npy, p, "npy")
    if arr is not None:
        assert arr.shape == tuple(shape) and arr.nbytes == len(data)
        assert np.array_equal(arr, np.load(p, allow_pickle=False))      # numpy's own reading of the same file
    try:
        load_sbuf_image(p)
    except InvalidArgument as e:
        assert "\n" not in str(e)


def npz_of(arrays):
    b = io.BytesIO()
    np.savez_compressed(b, **arrays)
    return b.getvalue()


SEEDS = [npz_of({"sbuf": np.random.default_rng(1).integers(0, 256, (128, 64), dtype=np.uint8)}),
         npz_of({"sbuf": np.zeros((128, 4096), np.uint8)}),
         npz_of({"a": np.arange(10, dtype=np.uint16), "b": np.ones((3, 4), np.float32)})]


@st.composite
def mutated_npz(draw):
    data = bytearray(SEEDS[draw(st.integers(0, len(SEEDS) - 1))])
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return bytes(data[:draw(st.integers(0, len(data)))])
    if kind == 1:
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
        return bytes(data)
    if kind == 2:                          # a size field of the central directory replaced (a lying header)
        cd = data.rfind(b"PK\x01\x02")
        off = draw(st.sampled_from([20, 24]))
        data[cd + off:cd + off + 4] = draw(st.integers(0, 2 ** 32 - 1)).to_bytes(4, "little")
        return bytes(data)
    return bytes(data) + draw(st.binary(min_size=1, max_size=64))


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=mutated_npz())
def test_mutated_npz_archives(tmp_path_factory, blob):
    p = tmp_path_factory.mktemp("z") / "a.npz"
    p.write_bytes(blob)
    got = read_or_refuse(fileio.read_npz, p, "npz")
    if got is not None:
        with zipfile.ZipFile(io.BytesIO(blob)) as z:            # what was read is what the archive holds
            assert sorted(got) == sorted(n[:-4] for n in z.namelist())
    try:
        load_sbuf_image(p)
    except InvalidArgument as e:
        assert "\n" not in str(e)


def test_npz_member_name_with_a_newline_is_refused_on_one_line(tmp_path):
    """A member whose name in the central directory ("b.np\\n") differs from its local header's ("b.npy"): the
    refusal names the member, and its message stays one line (the newline is written as an escape)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in ("a", "b"):
            member = io.BytesIO()
            np.save(member, np.arange(4, dtype=np.uint8))
            z.writestr(f"{name}.npy", member.getvalue())
    blob = bytearray(buf.getvalue())
    cd = blob.rindex(b"PK\x01\x02")                      # the second central-directory entry: b.npy's
    name_at = blob.index(b"b.npy", cd)
    blob[name_at:name_at + 5] = b"b.np\n"
    p = tmp_path / "a.npz"
    p.write_bytes(bytes(blob))
    try:
        fileio.read_npz(p)
    except InvalidArgument as e:
        assert "\n" not in str(e) and "b.np\\n" in str(e), str(e)
    else:
        raise AssertionError("an archive whose member names disagree was read")


def test_zz_report_array_counts():
    print(f"\n.npy/.npz fuzz: {COUNTS}")
