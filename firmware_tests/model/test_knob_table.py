"""The knob table (q7emu.model.knobs.KNOBS) is the one source of every knob's values and default: every function
of q7emu that takes a knob -- found by walking the package's modules, compiled modules included, not from a list --
has the table's default, and a Python function types it with the knob's Literal (so mypy sees the same values).

Also: the public API and its golden model taking the same options, the views of the table (DEQUANT_KNOBS,
QUANTIZE_MX_KNOBS, the machine's knobs, the provenance facts) and docs/model.md §6's knob index.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import typing
from pathlib import Path
from typing import Any

import pytest

import q7emu
from q7emu import registry
from q7emu.analysis.provenance import KNOB_FACTS
from q7emu.machine.machine import MACHINE_KNOBS
from q7emu.model.format_table import DEQUANT_FORMATS
from q7emu.model.knobs import DEQUANT_KNOBS, KNOB_DEFAULTS, KNOBS, QUANTIZE_MX_KNOBS, knob

ROOT = Path(__file__).resolve().parents[2]
#: compiled modules built once per ISA level beside the baseline (same source, same signatures; importing a level
#: this CPU lacks would crash, so only the baseline is walked)
ISA_VARIANT = re.compile(r"_(avx2|avx512|native)$")


def _modules() -> list[Any]:
    mods = [q7emu]
    for info in pkgutil.walk_packages(q7emu.__path__, "q7emu."):
        if info.name == "q7emu.__main__" or ISA_VARIANT.search(info.name):
            continue
        mods.append(importlib.import_module(info.name))
    return mods


MODULES = _modules()


def _is_function(obj: Any) -> bool:
    return inspect.isfunction(obj) or type(obj).__name__ in ("cython_function_or_method", "fused_cython_function")


def _functions() -> dict[str, Any]:
    """Every function and method defined in a q7emu module (Python or Cython), by qualified name."""
    out: dict[str, Any] = {}
    for mod in MODULES:
        for obj in vars(mod).values():
            if getattr(obj, "__module__", None) != mod.__name__:
                continue
            if _is_function(obj):
                out[f"{mod.__name__}.{obj.__qualname__}"] = obj
            elif inspect.isclass(obj):
                for member in vars(obj).values():
                    fn = getattr(member, "__func__", member)
                    if _is_function(fn):
                        out[f"{mod.__name__}.{fn.__qualname__}"] = fn
    return out


def _knob_params() -> list[tuple[str, Any, inspect.Parameter]]:
    found = []
    for name, fn in _functions().items():
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        found += [(name, fn, p) for p in sig.parameters.values() if p.name in KNOB_DEFAULTS]
    return found


KNOB_PARAMS = _knob_params()


def test_the_walk_finds_the_api_golden_and_kernels():
    """The walk is not vacuous: it finds the public API and the golden models (no compiled run() takes a knob by its
    name now: TensorDequantize's knobs reach its programs as symbols, QuantizeMX's run() takes flags)."""
    names = {n for n, _, _ in KNOB_PARAMS}
    for want in ("q7emu.kernels.dequant.dequantize", "q7emu.kernels.quantize_mx.quantize_mx",
                 "q7emu.golden.dequant.dequantize", "q7emu.golden.quantize_mx.quantize_mx"):
        assert want in names, want
    assert {p.name for _, _, p in KNOB_PARAMS} == set(KNOB_DEFAULTS)


@pytest.mark.parametrize("name,fn,param", KNOB_PARAMS, ids=[f"{n}:{p.name}" for n, _, p in KNOB_PARAMS])
def test_knob_default_and_type(name, fn, param):
    k = knob(param.name)
    if param.default is not inspect.Parameter.empty:
        assert param.default == k.default, f"{name}({param.name}={param.default!r}): the table says {k.default!r}"
    if inspect.isfunction(fn):                    # Python: typed with the knob's Literal (Cython: str)
        ann = param.annotation
        if isinstance(ann, str):
            ann = eval(ann, fn.__globals__)       # noqa: S307 - the module's own annotation text
        assert ann == k.type, f"{name}({param.name}: {param.annotation}): expected the Literal of {k.name}"


@pytest.mark.parametrize("entry", registry.KERNELS, ids=lambda e: e.name)
def test_api_and_golden_take_the_same_options(entry):
    """The handler (q7emu.dequantize / quantize_mx) and its golden model: same parameters, defaults and types (the
    handler also takes trace= and cores=)."""
    api = inspect.signature(entry.handler).parameters
    gold = inspect.signature(entry.golden).parameters
    assert [n for n in api if n not in ("trace", "cores")] == list(gold)
    hints_api = typing.get_type_hints(entry.handler)
    hints_gold = typing.get_type_hints(entry.golden)
    for n, p in gold.items():
        assert p.default == api[n].default, n
        if n != "src":
            assert hints_api[n] == hints_gold[n], n


def test_views_of_the_table():
    assert DEQUANT_KNOBS == {k.name: k.values for k in KNOBS if k.op == "dequantize"}
    assert QUANTIZE_MX_KNOBS == {k.name: k.values for k in KNOBS if k.op == "quantize_mx"}
    assert set(DEQUANT_KNOBS) | set(QUANTIZE_MX_KNOBS) == set(KNOB_DEFAULTS)
    assert list(MACHINE_KNOBS) == [k.name for k in KNOBS if k.machine] == [f.knob for f in KNOB_FACTS]
    assert "scale_layout" not in MACHINE_KNOBS       # the record places the scales (docs/model.md §7 item 5)
    for k in KNOBS:
        assert len(set(k.values)) == len(k.values) >= 1 and k.default == k.values[0]
        assert all(isinstance(v, str) and v == v.strip() for v in k.values)
        assert k.op in ("dequantize", "quantize_mx") and k.section.startswith("docs/model.md §")


def test_format_knobs_are_knobs():
    for f in DEQUANT_FORMATS:
        assert all(knob(k).op == "dequantize" for k in f.knobs)


def test_docs_knob_index_is_the_table():
    """docs/model.md §6's knob index lists every knob with its values, default first, in table order."""
    text = (ROOT / "docs" / "model.md").read_text()
    section = text[text.index("## 6. Knob index"):text.index("## 7.")]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, re.M)
    assert [name for name, _ in rows] == [k.name for k in KNOBS]
    for (name, values), k in zip(rows, KNOBS):
        assert re.findall(r"`([^`]+)`", values) == list(k.values), name
