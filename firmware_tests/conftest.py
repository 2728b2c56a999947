"""Shared settings and fixtures of the kernel-vs-golden tests (test_dequant_kernel.py,
test_quantize_mx_kernel.py).

Hypothesis profiles are *registered* here but not loaded globally, so that the other test files
keep their own settings; the kernel tests take their settings from the profile named by the
environment variable ``Q7EMU_KERNEL_PROFILE`` (default ``kernels``):

  kernels           modest example counts, keeps the two files under ~60 s on a 2-core machine
  kernels-thorough  10x the examples, for a long soak run

and ``emulated`` (every test, ``pytest --hypothesis-profile=emulated``): no per-example deadline.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, derandomize=False,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.function_scoped_fixture])
settings.register_profile("kernels", max_examples=100, **_COMMON)
settings.register_profile("kernels-thorough", max_examples=1000, **_COMMON)
# tools/aarch64_check.sh runs the suites under qemu-aarch64 (pytest --hypothesis-profile=emulated): Hypothesis's
# per-example deadline (200 ms) would time the emulator, not q7emu
settings.register_profile("emulated", deadline=None, suppress_health_check=[HealthCheck.too_slow])

KERNEL_PROFILE = os.environ.get("Q7EMU_KERNEL_PROFILE", "kernels")


def kernel_settings(scale: float = 1.0) -> settings:
    """Hypothesis settings of the kernel tests: the selected profile, max_examples x ``scale``."""
    base = settings.get_profile(KERNEL_PROFILE)
    return settings(base, max_examples=max(1, int(base.max_examples * scale)))


class TinyRecorder:
    """The smallest object the public API accepts as ``trace=``: ``window`` / ``ops`` filters
    (None = everything) and ``add_run(raw, kernel, knobs)``, which keeps what it is given."""

    def __init__(self) -> None:
        self.window = None
        self.ops = None
        self.runs: list[tuple[bytes, str, dict]] = []

    def add_run(self, raw, kernel, knobs) -> None:
        self.runs.append((raw, kernel, dict(knobs)))


@pytest.fixture
def recorder() -> TinyRecorder:
    return TinyRecorder()


@pytest.fixture
def rng() -> np.random.Generator:
    """A fixed-seed generator: deterministic test data, different per test function."""
    return np.random.default_rng(0x7B_E3)
