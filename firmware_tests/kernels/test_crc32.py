"""q7emu.kernels._cpu.crc32: zlib's CRC-32 folded with PCLMULQDQ, the value zlib gives for every buffer, length,
alignment and running value (the case reader checks stored .npz members with it: q7emu.fileio.use_crc32;
firmware_tests/hostile/test_hostile_stored_cases.py flips every byte of such a file)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from q7emu import fileio
from q7emu.kernels.extension import fast_crc32

_cpu = pytest.importorskip("q7emu.kernels._cpu")


@settings(max_examples=400, deadline=None)
@given(data=st.binary(min_size=0, max_size=700), offset=st.integers(0, 15),
       value=st.integers(0, 0xFFFFFFFF))
def test_crc32_is_zlibs(data, offset, value):
    buf = memoryview(bytes(offset) + data)[offset:]      # every alignment of the first byte
    assert _cpu.crc32(buf, value) == zlib.crc32(buf, value)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 63, 64, 65, 127, 128, 129, 191, 192, 4096, 4097, (6 << 20) + 3])
def test_crc32_at_the_fold_boundaries(n):
    a = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    for value in (0, 1, 0xFFFFFFFF, 0x12345678):
        assert _cpu.crc32(a, value) == zlib.crc32(a, value), (n, value)


def test_crc32_takes_what_zlib_takes():
    a = np.arange(4096, dtype=np.uint32)
    assert _cpu.crc32(a) == zlib.crc32(a)                 # another item size: its bytes
    strided = np.arange(1024, dtype=np.uint8)[::2]        # not contiguous: zlib's answer, an error
    with pytest.raises((BufferError, TypeError, ValueError)):
        zlib.crc32(strided)
    with pytest.raises((BufferError, TypeError, ValueError)):
        _cpu.crc32(strided)
    assert _cpu.crc32(b"abc" * 100, 7) == zlib.crc32(b"abc" * 100, 7)


def test_the_case_reader_checks_with_it_where_it_folds():
    import q7emu.machine.cases  # noqa: F401 - installs it

    fast = fast_crc32()
    assert fileio._crc32 is (fast if fast is not None else zlib.crc32)
    if _cpu.crc32_folds():
        assert fast is _cpu.crc32
