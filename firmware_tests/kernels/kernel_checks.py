"""Checks shared by the kernel test files (imported as a plain module: pytest puts this folder on sys.path)."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest

from q7emu import registry
from q7emu.errors import InvalidArgument
from q7emu.model.kernels import DEQUANT_PATHS


class KernelMustNotRun:
    """Stands in for a compiled kernel module: any call means something was computed."""

    calls = 0

    def run(self, *a: Any, **k: Any) -> None:
        type(self).calls += 1
        raise AssertionError("the kernel was entered for an invalid argument")


def stub_kernel(monkeypatch: pytest.MonkeyPatch, kernel: str) -> None:
    """Replace the compiled module of a registry kernel's Python entry by a KernelMustNotRun."""
    entry = registry.get(kernel)
    module = importlib.import_module(entry.handler.__module__)
    monkeypatch.setattr(module, entry.extension.rsplit(".", 1)[-1], KernelMustNotRun())


def assert_rejected_before_compute(monkeypatch: pytest.MonkeyPatch, recorder: Any, kernel: str,
                                   public: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """The kernel's entry raises InvalidArgument for these arguments without entering the kernel or
    recording a run; its golden model and the public top-level name reject them too."""
    entry = registry.get(kernel)
    stub_kernel(monkeypatch, kernel)
    before = KernelMustNotRun.calls
    with pytest.raises(InvalidArgument):
        entry.handler(*args, trace=recorder, **kwargs)
    assert KernelMustNotRun.calls == before and recorder.runs == []
    # the golden model rejects the same arguments
    with pytest.raises(InvalidArgument):
        entry.golden(*args, **kwargs)
    # and so does the public top-level name
    with pytest.raises(InvalidArgument):
        public(*args, **kwargs)


#: every TensorDequantize kernel variant: (fmt, group, knobs), the MX ones with and without the NaN gate
DEQUANT_VARIANTS = [(fmt, g, knobs) for fmt, g in DEQUANT_PATHS
                    for knobs in ([{}, {"mx_scale": "e8m0-nonan"}] if g == 8 else [{}])] + [
    # the knobs that change a group-0 path's bundles (the selector's arms of the re-bias path)
    (1, 0, {"nibble_order": "high-first"}), (2, 0, {"nibble_order": "high-first"}),
    (4, 0, {"fp6_packing": "msb-first"})]


def bundle_issues(t):
    """Each bundle issue of a trace as the range of its record indices: consecutive records with the same
    (run, partition, bundle)."""
    r = t.records
    key = list(zip(r["run"].tolist(), r["partition"].tolist(), r["bundle"].tolist()))
    start = 0
    for i in range(1, len(key) + 1):
        if i == len(key) or key[i] != key[start]:
            yield range(start, i)
            start = i
