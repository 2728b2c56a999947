"""Typed knobs: a user's type checker sees q7emu's public functions with the knob table's ``Literal`` types, so a
misspelt knob value, format name or option is flagged before anything runs; and ``trace=`` with the recorder
Protocols of q7emu.kernels.tracing, so a user's recorder without ``begin_run`` is flagged too.

The mypy test runs mypy (the ``lint`` extra) on a small user snippet and expects exactly the errors of its
misspelt lines; it is skipped when mypy is not installed. The facade test checks that ``q7emu/__init__.py``'s
``if TYPE_CHECKING:`` block names every attribute it loads lazily, so none of them looks like ``Any``.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import q7emu

ROOT = Path(__file__).resolve().parents[1]

SNIPPET = '''\
import numpy as np
import q7emu
from q7emu.model.knobs import NibbleOrder

src = np.zeros((1, 4), np.uint8)
x = np.ones((32, 4), np.float16)
q7emu.dequantize(src, 1, nibble_order="low_first")                        # BAD: '_' for '-'
q7emu.dequantize(src, "e2m2")                                             # BAD: no such format
q7emu.quantize_mx(x, "e4m3", emax="OCP")                                  # BAD: knob values are lower case
q7emu.quantize_mx(x, "e4m3", underflow="wrapped")                         # BAD: not a value
q7emu.dequantize_path("proc_4bit_mx_8", src, "nf4", mx_layout="first")    # BAD: **knobs are typed too
q7emu.golden.dequantize(src, 1, fp6_packing="lsb")                        # BAD: the golden model is typed alike
q7emu.dequantize(src, "e2m1", 8, nibble_order="high-first", mx_layout="word-block", mx_scale="e8m0-nonan")
q7emu.dequantize(src, q7emu.DequantFmt.NF4_TO_E4M3, nf4_table="qlora")
q7emu.dequantize(src, np.dtype("uint8"), cores=2)
data, scale = q7emu.quantize_mx(x, "float8_e5m2", scale_layout="compact", emax="alt", underflow="unwrapped-data",
                                nonfinite="ocp")
order: NibbleOrder = "high-first"
q7emu.golden.dequantize(src, "int4", nibble_order=order)
reveal_type(q7emu.dequantize)


class Sink:
    def block(self, raw: bytes, names: bytes = b"") -> None: ...
    def tick(self, executed: int) -> None: ...
    def finish(self, executed: int, op_names: list[str]) -> None: ...
    def abort(self) -> None: ...


class MyRecorder:
    def begin_run(self, kernel: str, knobs: dict[str, object] | None = None) -> Sink:
        return Sink()


class NotARecorder:
    def begin(self, kernel: str) -> Sink:
        return Sink()


q7emu.dequantize(src, 1, trace=MyRecorder())
q7emu.quantize_mx(x, "e4m3", trace=NotARecorder())                        # BAD: a recorder has begin_run
'''


def _bad_lines(code: str) -> set[int]:
    return {i for i, line in enumerate(code.splitlines(), 1) if "# BAD" in line}


def test_mypy_flags_a_misspelt_knob(tmp_path, monkeypatch):
    api = pytest.importorskip("mypy.api")
    # an editable install is found through an import hook mypy does not run: from the source tree's root, mypy
    # finds the package itself (an installed q7emu, with its py.typed, is found in site-packages anyway)
    tree = Path(q7emu.__file__).resolve().parents[1]
    if (tree / "pyproject.toml").exists():
        monkeypatch.chdir(tree)
    snippet = tmp_path / "snippet.py"
    snippet.write_text(SNIPPET)
    # --config-file "": a user's settings, not q7emu's own [tool.mypy] (which the tree's pyproject.toml holds)
    stdout, stderr, status = api.run([
        str(snippet), "--config-file", "", "--follow-imports=silent", "--python-version", "3.11", "--no-error-summary",
        "--cache-dir", str(tmp_path / "cache"), "--hide-error-context", "--show-error-codes"])
    assert status in (0, 1), stderr
    errors = {}
    notes = []
    for line in stdout.splitlines():
        m = re.match(r".*snippet\.py:(\d+): (error|note): (.*)", line)
        assert m, f"unexpected mypy output: {line}\n{stdout}"
        if m.group(2) == "error":
            errors.setdefault(int(m.group(1)), []).append(m.group(3))
        else:
            notes.append(m.group(3))
    assert set(errors) == _bad_lines(SNIPPET), stdout
    assert all("[arg-type]" in e or "[call-arg]" in e for es in errors.values() for e in es), stdout
    assert any('"nibble_order"' in e and "low_first" in e for e in errors[7]), stdout
    revealed = [n for n in notes if n.startswith("Revealed type")]
    assert revealed and "Any" != revealed[0].split('"')[1] and "nibble_order" in revealed[0], revealed


def _lazy_names() -> set[str]:
    return set(q7emu._LAZY)


def test_facade_type_checking_block_names_every_lazy_attribute():
    tree = ast.parse((ROOT / "q7emu" / "__init__.py").read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                 and node.test.id == "TYPE_CHECKING")
    seen: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.dump(node)
        for alias in node.names:
            assert alias.asname == alias.name, "an explicit re-export: import X as X"
            seen[alias.name] = f"{node.module}.{alias.name}"
    assert set(seen) == _lazy_names()
    for name, (module, attr) in q7emu._LAZY.items():
        assert seen[name] == (module if attr is None else f"{module}.{attr}"), name
