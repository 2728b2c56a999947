"""QuantizeMX (0xE3): M elements/s of the emulated kernel (trace off) vs the golden model.

One [128, 16384] bf16 tile (2 Mi elements), both runs in the same process; the ratio goes into
benchmark.extra_info. Run: python -m pytest bench --benchmark-only -k quantize
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from q7emu import golden
from q7emu.kernels.quantize_mx import quantize_mx

P, F = 128, 16384
_RESULTS: dict[str, float] = {}


@pytest.fixture(scope="module")
def tile() -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((P, F)) * np.exp2(rng.integers(-20, 20, (P, F)))
    return x.astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("impl", ["kernel", "golden"])
def test_quantize_mx_throughput(benchmark, tile, impl):
    fn = quantize_mx if impl == "kernel" else golden.quantize_mx
    rounds = 5 if impl == "kernel" else 2
    data, scale = benchmark.pedantic(fn, args=(tile,), rounds=rounds, iterations=1, warmup_rounds=1)
    assert data.shape == (P, F // 4)
    _RESULTS[impl] = benchmark.stats.stats.min
    benchmark.extra_info["M_elements_per_s"] = P * F / benchmark.stats.stats.min / 1e6
    if len(_RESULTS) == 2:
        benchmark.extra_info["kernel_over_golden"] = _RESULTS["golden"] / _RESULTS["kernel"]
