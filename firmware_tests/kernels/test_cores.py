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


def _prefilled(monkeypatch, fill):
    """Make the kernels' output buffers start as ``fill`` in every byte instead of uninitialised."""
    from q7emu.kernels import dequant as dq
    from q7emu.kernels import quantize_mx as qm
    for mod in (dq, qm):
        monkeypatch.setattr(mod, "output_buffer", lambda shape, traced=False: np.full(shape, fill, np.uint8))


@pytest.mark.parametrize("fmt,group", [(1, 0), (2, 0), (3, 0), (4, 0), (1, 8), (2, 8), (3, 8)])
def test_dequant_writes_every_output_byte(monkeypatch, fmt, group):
    # the output array is not initialised (q7emu.kernels.cores.output_buffer): every byte must come from the kernel,
    # so buffers that start as 0x00, 0xA5 or 0xFF give the same bytes, at every row length up to a few passes and
    # on several cores
    rng = np.random.default_rng(20 + fmt + group)
    step = 4 * (5 if group else (3 if fmt == 4 else 1))        # bytes per whole source unit (u32 words)
    for width in [step * k for k in range(1, 70)] + [step * 409]:
        src = rng.integers(0, 256, (5, width), dtype=np.uint8)
        outs = []
        for fill in (0x00, 0xA5, 0xFF):
            _prefilled(monkeypatch, fill)
            outs.append(dequantize(src, fmt, group, cores=2))
        assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2]), (fmt, group, width)


@pytest.mark.parametrize("layout", ["scatter", "compact"])
@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16])
def test_quantize_mx_writes_every_data_byte(monkeypatch, layout, dtype):
    # as test_dequant_writes_every_output_byte, for QuantizeMX's data (its scale array is zeroed: the scattered
    # layout leaves rows 0)
    rng = np.random.default_rng(6)
    for p, f in [(32, 4), (32, 60), (64, 132), (128, 8)]:
        x = (rng.standard_normal((p, f)) * 10).astype(dtype)
        outs = []
        for fill in (0x00, 0xA5, 0xFF):
            _prefilled(monkeypatch, fill)
            outs.append(quantize_mx(x, scale_layout=layout, cores=2))
        assert all(np.array_equal(o[0], outs[0][0]) and np.array_equal(o[1], outs[0][1]) for o in outs), (p, f)


@pytest.mark.parametrize("fmt,group", [(1, 0), (4, 0), (2, 8)])
def test_a_traced_run_whose_stores_are_skipped_leaves_zeros(fmt, group):
    # a recorder may make ops no-ops (mutation, docs/traces.md §8): the bytes a skipped store leaves are 0, not
    # whatever the memory held (here the bytes of the same call without the mutation, run just before)
    from q7emu.analysis.trace import Recorder
    rng = np.random.default_rng(3)
    src = rng.integers(0, 256, (8, 4 * 5 * 6), dtype=np.uint8)
    rec = Recorder()
    dequantize(src[:1], fmt, group, trace=rec)
    stores = sorted({(m, b) for m, b in zip(rec.trace.mnemonics(), rec.trace.records["bundle"].tolist())
                     if m.startswith("sav")})
    assert stores
    for site in stores:
        full = dequantize(src, fmt, group, trace=Recorder(window=(0, 0)))
        assert full.any()
        mutated = Recorder(window=(0, 0), mutate=site)
        got = dequantize(src, fmt, group, trace=mutated)
        assert mutated.mutate_hits > 0
        if len(stores) == 1:
            assert not got.any(), site
        else:
            assert set(np.unique(got[got != full])) <= {0}, site


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_cores_must_be_a_positive_int(bad):
    with pytest.raises(InvalidArgument):
        dequantize(np.zeros((1, 4), np.uint8), 1, cores=bad)
    with pytest.raises(InvalidArgument):
        quantize_mx(np.zeros((32, 4), np.float16), cores=bad)
