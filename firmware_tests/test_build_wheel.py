"""The manylinux wheel recipe (tools/build_wheel.py, docs/build.md §4): the checks it makes of a wheel before and
after ``auditwheel repair``, and how it reads ``auditwheel show``. The recipe itself (a full build, auditwheel
from PyPI, a fresh venv that installs the wheel and replays the shipped cases) runs in ``.ci/run``'s ``wheel``
stage; these tests need no build."""
from __future__ import annotations

import importlib.util
import re
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("build_wheel", ROOT / "tools" / "build_wheel.py")
bw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bw)

SUFFIX = ".cpython-311-x86_64-linux-gnu.so"


def wheel(tmp_path, modules, entry_points=True, name="q7emu-0.1.0-cp311-cp311-linux_x86_64.whl"):
    p = tmp_path / name
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("q7emu/__init__.py", "")
        for m in modules:
            z.writestr(m + SUFFIX, b"\x7fELF")
        if entry_points:
            z.writestr("q7emu-0.1.0.dist-info/entry_points.txt", "[pytest11]\nq7emu = q7emu.pytest_plugin\n")
    return p


X86_LEVELS = ["generic", "avx2", "avx512"]


def full(levels=tuple(X86_LEVELS)):
    mods = [h if lv == "generic" else f"{h}_{lv}" for h in bw.HOT for lv in levels]
    return mods + list(bw.SINGLE)


def test_the_modules_the_recipe_expects_are_the_ones_src_builds():
    setup_hot = re.search(r"^HOT = \((.*?)\)", (ROOT / "setup.py").read_text(), re.M | re.S).group(1)
    assert {m.replace(".", "/") for m in re.findall(r'"([\w.]+)"', setup_hot)} == set(bw.HOT)
    assert set(bw.SINGLE) == {"q7emu/primitives/_ivp", "q7emu/kernels/_cpu", "q7emu/primitives/_cyutility"}
    assert bw.expected_levels("x86_64") == X86_LEVELS
    assert bw.expected_levels("aarch64") == ["generic"]


def test_a_complete_wheel_passes(tmp_path):
    w = wheel(tmp_path, full())
    assert bw.check_wheel(w, X86_LEVELS) == []
    assert bw.extension_modules(w)["q7emu/kernels/_program_avx512"] == "q7emu/kernels/_program_avx512" + SUFFIX


@pytest.mark.parametrize("drop,words", [
    ("q7emu/kernels/_program_avx512", "q7emu/kernels/_program_avx512 (ISA level avx512) is missing"),
    ("q7emu/kernels/_program", "q7emu/kernels/_program (ISA level generic) is missing"),
    ("q7emu/primitives/_ivp", "q7emu/primitives/_ivp is missing"),
])
def test_a_missing_module_or_level_is_named(tmp_path, drop, words):
    w = wheel(tmp_path, [m for m in full() if m != drop])
    assert bw.check_wheel(w, X86_LEVELS) == [words]


def test_a_native_level_and_missing_entry_points_are_refused(tmp_path):
    w = wheel(tmp_path, full() + ["q7emu/kernels/_program_native"], entry_points=False)
    problems = bw.check_wheel(w, X86_LEVELS)
    assert any("_program_native is in it" in p for p in problems)
    assert any("entry_points.txt" in p for p in problems)


def test_the_policy_is_read_from_auditwheel_show():
    text = ('\nq7emu-0.1.0-cp311-cp311-linux_x86_64.whl is consistent with the\nfollowing platform tag:\n'
            '"manylinux_2_17_x86_64".\n\nThe wheel references external versioned symbols in these\nsystem-'
            'provided shared libraries: libc.so.6 with versions\n{\'GLIBC_2.14\', \'GLIBC_2.2.5\'}\n')
    assert bw.policy_from_show(text) == "manylinux_2_17_x86_64"
    assert bw.policy_from_show("q7emu.whl is consistent with the following platform tag: \"linux_x86_64\"") == \
        "linux_x86_64"
    assert bw.policy_from_show("nothing useful") is None


def test_the_recipe_refuses_a_native_build(monkeypatch, capsys):
    monkeypatch.setenv("Q7EMU_NATIVE", "1")
    assert bw.main(["-o", "unused"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("build_wheel: Q7EMU_NATIVE=1")
