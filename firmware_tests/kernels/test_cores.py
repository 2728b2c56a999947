"""Splitting partitions across Q7 cores (host threads) never changes a byte."""
import ml_dtypes
import numpy as np
import pytest

from q7emu.errors import InvalidArgument
from q7emu.kernels.dequant import dequantize
from q7emu.kernels.quantize_mx import quantize_mx


@pytest.mark.parametrize("fmt,group,words", [(1, 0, 1), (3, 0, 1), (4, 0, 3), (2, 8, 5), (3, 8, 5)])
@pytest.mark.parametrize("cores", [1, 2, 3, 8, 200])
def test_dequant_cores_give_identical_bytes(fmt, group, words, cores):
    rng = np.random.default_rng(fmt * 10 + group)
    src = rng.integers(0, 256, (37, 4 * words * 9), dtype=np.uint8)   # 37 rows: uneven blocks
    one = dequantize(src, fmt, group, cores=1)
    assert np.array_equal(dequantize(src, fmt, group, cores=cores), one)


@pytest.mark.parametrize("layout", ["scatter", "compact"])
@pytest.mark.parametrize("cores", [1, 2, 3, 16])
def test_quantize_cores_give_identical_bytes(layout, cores):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((128, 52)) * 100).astype(ml_dtypes.bfloat16)
    d1, s1 = quantize_mx(x, scale_layout=layout, cores=1)
    d, s = quantize_mx(x, scale_layout=layout, cores=cores)
    assert np.array_equal(d, d1) and np.array_equal(s, s1)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_cores_must_be_a_positive_int(bad):
    with pytest.raises(InvalidArgument):
        dequantize(np.zeros((1, 4), np.uint8), 1, cores=bad)
    with pytest.raises(InvalidArgument):
        quantize_mx(np.zeros((32, 4), np.float16), cores=bad)
