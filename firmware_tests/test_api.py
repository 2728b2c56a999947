"""The Python package as a notebook or a script meets it (issue 14): ``__all__`` / ``__dir__``, every layer
reachable as an attribute after ``import q7emu``, ``q7emu.explore`` staying a function, format names in every
spelling, ml_dtypes views of the outputs, the return dtype named in every docstring, ``Trace.format_op`` of an
op, and one line that says what to do when q7emu is imported from a source tree that is not built.

Tests that import q7emu freshly run in a subprocess, so what an earlier test imported cannot make them pass.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import q7emu
from q7emu.errors import InvalidArgument
from q7emu.model import dtypes

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "cases"


def fresh(code: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``python -c code`` in a new interpreter."""
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)


# ---------------------------------------------------------------------- the namespace
def test_dir_lists_the_public_api():
    names = dir(q7emu)
    for name in ("dequantize", "dequantize_path", "quantize_mx", "dequantize_mx", "swizzle", "nc_matmul_mx",
                 "explore", "fp8_view", "golden", "ivp", "trace", "profile", "Q7Error", "InvalidArgument"):
        assert name in names and name in q7emu.__all__, name
    assert names == sorted(q7emu.__all__)


def test_every_name_of_all_resolves():
    p = fresh("import q7emu\nfor n in q7emu.__all__:\n    getattr(q7emu, n)\nprint('ok')")
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_every_subpackage_is_an_attribute_after_import_q7emu():
    with open(ROOT / "pyproject.toml", "rb") as f:
        packages = tomllib.load(f)["tool"]["setuptools"]["packages"]
    # the layer sub-packages (q7emu.X); a package inside a layer (q7emu.analysis.trace) is its layer's business
    subs = [p.split(".", 1)[1] for p in packages if p.count(".") == 1] + ["registry", "errors", "fileio"]
    assert {"model", "primitives", "kernels", "golden", "isa", "machine", "analysis", "cli"} <= set(subs)
    code = ("import importlib, q7emu\n"
            f"for n in {subs!r}:\n"
            "    assert getattr(q7emu, n) is importlib.import_module('q7emu.' + n), n\n"
            "print('ok')")
    p = fresh(code)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_trace_recorder_is_reachable_as_the_readme_shows():
    p = fresh("import q7emu\nprint(q7emu.trace.Recorder.__name__)")
    assert p.returncode == 0 and p.stdout.strip() == "Recorder", p.stderr


def test_explore_stays_a_function_after_importing_its_module():
    code = ("import q7emu\nf = q7emu.explore\nimport q7emu.analysis.explore\nimport q7emu.analysis\n"
            "assert callable(q7emu.explore) and q7emu.explore is f, type(q7emu.explore)\n"
            f"r = q7emu.explore([{str(EXAMPLES / 'mariana' / 'mariana_e3_quantize_mx_e4m3.json')!r}])\n"
            "assert callable(q7emu.explore)\nprint(type(r).__name__)")
    p = fresh(code)
    assert p.returncode == 0 and p.stdout.strip() == "ExploreResult", p.stderr


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        q7emu.nope  # noqa: B018


# ---------------------------------------------------------------------- format names
E4M3 = ["e4m3", "E4M3", "e4m3fn", "float8_e4m3fn", "float8-e4m3fn", "float8_e4m3fn_x4", "FP8_EXP4",
        np.dtype(ml_dtypes.float8_e4m3fn), ml_dtypes.float8_e4m3fn]
E5M2 = ["e5m2", "float8_e5m2", "float8_e5m2_x4", "FP8_EXP5", np.dtype(ml_dtypes.float8_e5m2), ml_dtypes.float8_e5m2]


@pytest.mark.parametrize("spelling", E4M3, ids=str)
def test_quantize_mx_accepts_every_e4m3_spelling(spelling):
    x = np.ones((32, 4), np.float16)
    data, scale = q7emu.quantize_mx(x, spelling)
    # 1.0 in a block of ones: OCP emax scale 127 - 8 = 119; 1.0 / 2^-8 = 256 -> E4M3 0x78 (README's tour)
    assert (scale == 119).all() and (data.view(np.uint8) == 0x78).all()
    gd, gs = q7emu.golden.quantize_mx(x, spelling)
    assert np.array_equal(gd, data) and np.array_equal(gs, scale)


@pytest.mark.parametrize("spelling", E5M2, ids=str)
def test_every_e5m2_spelling_is_float8_e5m2(spelling):
    assert dtypes.fp8_dtype(spelling) == "float8_e5m2"


def test_dtype_objects_no_longer_raise_key_error():
    x = np.ones((32, 4), np.float16)
    a = q7emu.quantize_mx(x, np.dtype("float8_e4m3fn"))
    b = q7emu.quantize_mx(x, "float8_e4m3fn")
    assert all(np.array_equal(u, v) for u, v in zip(a, b))


@pytest.mark.parametrize("spelling,code", [
    ("e2m1", 1), ("fp4", 1), ("float4_e2m1fn", 1), ("FP4_EXP2", 1), ("E2M1_TO_E5M2", 1), (ml_dtypes.float4_e2m1fn, 1),
    ("int4", 2), (ml_dtypes.int4, 2), ("INT4_TO_E5M2", 2),
    ("nf4", 3), ("NF4_TO_E4M3", 3),
    ("e2m3", 4), ("fp6", 4), ("float6_e2m3fn", 4), (ml_dtypes.float6_e2m3fn, 4),
    (q7emu.DequantFmt.NF4_TO_E4M3, 3), (2, 2),
], ids=str)
def test_dequantize_accepts_every_format_spelling(spelling, code):
    src = np.arange(7, 7 + 12 * 23, 23, dtype=np.uint8).reshape(1, 12)    # 3 words: every format takes it
    assert np.array_equal(q7emu.dequantize(src, spelling), q7emu.dequantize(src, code))
    assert np.array_equal(q7emu.golden.dequantize(src, spelling), q7emu.golden.dequantize(src, code))


@pytest.mark.parametrize("bad,rule", [
    ("float8_e4m3", "IEEE-style E4M3 with Inf"), ("float8_e4m3fnuz", "fnuz"), ("e2m1", "FP4 output does not exist"),
    ("bfloat16", "not an FP8 data format"), ("nope", "unknown format"), (np.int32, "unknown format"), (3, "unknown"),
], ids=str)
def test_bad_fp8_names_are_invalid_arguments_naming_the_field(bad, rule):
    with pytest.raises(InvalidArgument, match=rule) as e:
        q7emu.quantize_mx(np.ones((32, 4), np.float16), bad)
    assert e.value.field == "dst_dtype"


def test_listing_cli_takes_the_same_spellings(capsys):
    from q7emu.cli.main import main

    outs = []
    for dst in ("e4m3", "float8_e4m3fn", "FP8_EXP4"):
        assert main(["listing", "quantize_mx", "--dst-dtype", dst, "--src-dtype", "bf16", "--json"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] == outs[2]


# ---------------------------------------------------------------------- values, not bytes
def test_fp8_view_shows_values():
    src = np.array([[0x07, 0x08, 0x00, 0x00]], np.uint8)
    codes = q7emu.dequantize(src, "e2m1")
    v = q7emu.fp8_view(codes, "e2m1")
    assert v.dtype == ml_dtypes.float8_e5m2 and np.shares_memory(v, codes)
    # FP4 codes 7 = 6.0, 0 = 0.0, 8 = -0.0 (low nibble first): docs/firmware.md §2.2 pairs
    assert v[0, :4].astype(np.float32).tolist() == [6.0, 0.0, 0.0, -0.0]
    assert np.array_equal(v, codes.view(ml_dtypes.float8_e5m2))
    data, _ = q7emu.quantize_mx(np.ones((32, 4), np.float16), "e4m3")
    w = q7emu.fp8_view(data, "e4m3")
    assert w.dtype == ml_dtypes.float8_e4m3fn and w.shape == (32, 4) and (w.astype(np.float32) == 256.0).all()
    with pytest.raises(InvalidArgument, match="codes.dtype"):
        q7emu.fp8_view(np.zeros(4, np.int16), "e4m3")


def test_the_package_docstring_documents_the_ml_dtypes_view():
    assert "view(ml_dtypes.float8_e5m2)" in q7emu.__doc__ and "fp8_view" in q7emu.__doc__


# ---------------------------------------------------------------------- return dtypes in the docstrings
def _api_calls():
    src = np.array([[0x07, 0x08, 0x00, 0x00]], np.uint8)
    x = np.ones((32, 4), np.float16)
    data, scale = q7emu.quantize_mx(x, "e4m3")
    st = np.zeros((32, 2), np.uint32)
    mv = np.zeros((32, 1), np.uint32)
    return {
        "dequantize": (q7emu.dequantize, lambda: q7emu.dequantize(src, "e2m1")),
        "dequantize_path": (q7emu.dequantize_path, lambda: q7emu.dequantize_path("proc_4bit_non_mx", src, "e2m1")),
        "quantize_mx": (q7emu.quantize_mx, lambda: q7emu.quantize_mx(x, "e4m3")),
        "dequantize_mx": (q7emu.dequantize_mx, lambda: q7emu.dequantize_mx(data, scale)),
        "nc_matmul_mx": (q7emu.nc_matmul_mx, lambda: q7emu.nc_matmul_mx(
            st, mv, np.full((4, 2), 127, np.uint8), np.full((4, 1), 127, np.uint8))),
        "golden.dequantize": (q7emu.golden.dequantize, lambda: q7emu.golden.dequantize(src, "e2m1")),
        "golden.quantize_mx": (q7emu.golden.quantize_mx, lambda: q7emu.golden.quantize_mx(x, "e4m3")),
        "fp8_view": (q7emu.fp8_view, lambda: q7emu.fp8_view(q7emu.dequantize(src, "e2m1"), "e2m1")),
    }


@pytest.mark.parametrize("name", list(_api_calls()))
def test_docstring_names_the_returned_dtype(name):
    fn, call = _api_calls()[name]
    out = call()
    for arr in out if isinstance(out, tuple) else (out,):
        assert re.search(rf"\b{arr.dtype.name}\b", fn.__doc__), f"{name} returns {arr.dtype}; its docstring says not"


def test_swizzle_docstring_says_the_result_keeps_the_input_dtype():
    assert q7emu.swizzle(np.zeros((4, 2), np.uint16)).dtype == np.uint16
    assert re.search(r"(same dtype|dtype of (x|the input)|input'?s dtype)", q7emu.swizzle.__doc__)


@pytest.mark.parametrize("op,want", [("addnx16", ("uint16",)), ("bminnx16", ("bool", "int16"))])
def test_ivp_docstring_names_the_returned_dtype(op, want):
    fn = getattr(q7emu.ivp, op)
    a, b = np.arange(32, dtype=np.int16), np.full(32, 5, np.int16)
    out = fn(a, b)
    got = tuple(o.dtype.name for o in (out if isinstance(out, tuple) else (out,)))
    assert got == want                                  # the issue: addnx16 uint16, bminnx16 (flags, int16)
    for name in set(got):
        assert re.search(rf"\b{name}\b", fn.__doc__), f"ivp.{op} returns {got}; docstring: {fn.__doc__!r}"


# ---------------------------------------------------------------------- traces
def test_trace_format_op_of_an_op_does_not_crash():
    rec = q7emu.trace.Recorder()
    q7emu.dequantize(np.zeros((1, 4), np.uint8), "e2m1", trace=rec)
    t = rec.trace
    assert len(t) > 0
    assert t.format_op(t[0]) == t.format_op(0)


# ---------------------------------------------------------------------- a source tree without its build
@pytest.fixture(scope="module")
def unbuilt_tree(tmp_path_factory):
    """A copy of the source tree (q7emu/, src/, setup.py) without any compiled extension."""
    tree = tmp_path_factory.mktemp("unbuilt")
    shutil.copytree(ROOT / "q7emu", tree / "q7emu",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("*.c", "*.html"))
    shutil.copy(ROOT / "setup.py", tree / "setup.py")
    return tree


def test_the_readme_tour_runs_as_written_and_says_where_to_run_it(tmp_path):
    """README "A short tour": its Python block runs from outside the checkout (a fresh interpreter, an empty
    folder), and the text before it says why not from the repository root after `pip install .` (issue 40)."""
    section = (ROOT / "README.md").read_text().split("## A short tour", 1)[1].split("\n## ", 1)[0]
    note, code = section.split("```python\n", 1)
    assert "outside the checkout" in note and "pip install -e ." in note
    p = fresh(code.split("```", 1)[0], cwd=tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stderr[-2000:]
    assert p.stdout.count("\n") == 3, p.stdout       # the three primitives the tour lists


def test_python_dash_m_from_an_unbuilt_tree_says_what_to_do(unbuilt_tree):
    p = subprocess.run([sys.executable, "-m", "q7emu", "replay", str(EXAMPLES)], cwd=unbuilt_tree,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert "pip install -e ." in lines[0] and "outside the source tree" in lines[0]
    assert str(unbuilt_tree / "q7emu") in lines[0] and "q7emu.kernels._program" in lines[0]


def test_importing_a_compiled_name_from_an_unbuilt_tree_says_what_to_do(unbuilt_tree):
    p = fresh("import q7emu\nq7emu.golden.dequantize\ntry:\n    from q7emu import ivp\n"
              "except ImportError as e:\n    print(e)\n", cwd=unbuilt_tree)
    assert p.returncode == 0, p.stderr
    (line,) = p.stdout.strip().splitlines()
    assert line.startswith("q7emu is imported from the source tree") and "pip install -e ." in line


def test_a_built_tree_and_an_installed_package_have_no_problem():
    from q7emu.cli.common import source_tree_problem

    assert source_tree_problem() is None              # this checkout is built (the test suite runs on it)
