"""Installing q7emu as the project's texts say (issue 40): every ``pip install`` they give works from a checkout,
and a build without a C compiler stops with one line saying what to install.

q7emu is installed from a checkout (``pip install .``, ``pip install '.[dask]'``) or from the wheel of
docs/build.md §4, never from a package index, so ``pip install 'q7emu[dask]'`` -- in the tutorial, the README and
three error messages before -- fails on a fresh machine. The scan below reads every tracked text that can tell a
user what to type (the docs, the README, the package's messages, the tools' and tests' texts).
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from q7emu.errors import EXTRAS, install_hint

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OPTIONAL = PROJECT["optional-dependencies"]


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0].lower().replace("_", "-")


#: the packages a text may tell a user to pip install by name: q7emu's dependencies, its extras' packages, and the
#: tools the docs use (every one of them on PyPI)
KNOWN = ({_name(r) for r in PROJECT["dependencies"]} | {_name(r) for reqs in OPTIONAL.values() for r in reqs}
         | {"pip", "setuptools", "wheel", "cython", "build"})
TEXTS = ("*.md", "docs/*.md", "examples/*.md", "q7emu/**/*.py", "tools/*.py", "tools/*.sh", "bench/*.py",
         "firmware_tests/**/*.py", "setup.py", ".ci/run")


def install_targets(text: str) -> list[str]:
    """What each ``pip install`` in ``text`` installs: its arguments up to the first word that is not an option, a
    path or a requirement (prose after an inline command), options dropped."""
    out = []
    for m in re.finditer(r"\bpip install\b", text):
        rest = re.split(r"\n|`|&&|\|\||;|\||\s#\s", text[m.end():], maxsplit=1)[0]
        try:
            words = shlex.split(rest)
        except ValueError:                              # an apostrophe in the prose after it
            words = rest.split()
        takes_file = False
        for w in words:
            w = w.strip("'\"").rstrip(",;:)'\"")       # (a command inside a message's quotes or parentheses)
            w = w if w in (".", "..") else w.rstrip(".")
            if takes_file:                              # the file of -r / -c
                takes_file = False
                continue
            if w.startswith("-"):
                takes_file = w in ("-r", "-c", "--requirement", "--constraint")
                continue
            if not w or w in ("&&", "||", "|", "#"):
                break
            path = w.startswith((".", "/", "$", "wheelhouse")) or ".whl" in w
            m = re.fullmatch(r"[A-Za-z0-9_.\-]+(\[[a-z,]+\])?([<>=!~]=?\S+)?", w)
            # a bare word is a package only when known (or q7emu): else it is the prose after an inline command
            if not (path or (m and (m.group(1) or m.group(2) or _name(w) in KNOWN | {"q7emu"}))):
                break
            out.append(w)
    return out


def problems(target: str) -> str | None:
    """Why ``target`` (an argument of pip install) would not install from a checkout; None when it would."""
    m = re.fullmatch(r"(.*?)(?:\[([A-Za-z0-9_,\-]+)\])?", target)
    base, extras = m.group(1), (m.group(2) or "")
    unknown = [x for x in extras.split(",") if x and x not in OPTIONAL]
    if unknown:
        return f"extra(s) {unknown} are not in pyproject.toml's optional-dependencies"
    if base in (".", "./") or base.startswith(("/", "$", "./", "wheelhouse")) or base.endswith(".whl"):
        return None
    name = _name(base)
    if name == "q7emu":
        return "q7emu is not on a package index: install it from its checkout ('.[extras]') or its wheel"
    if name not in KNOWN:
        return f"{name!r} is neither a dependency of q7emu, nor an extra's package, nor a known tool"
    return None


def tracked_texts() -> list[Path]:
    files = sorted({p for pattern in TEXTS for p in ROOT.glob(pattern) if p.is_file()})
    return [p for p in files if p.name not in ("CHANGELOG.md", Path(__file__).name)   # (history; this file's examples)
            and "build" not in p.relative_to(ROOT).parts[:1]]


def test_every_pip_install_a_text_gives_works_from_a_checkout():
    found, bad = 0, []
    for path in tracked_texts():
        for target in install_targets(path.read_text(encoding="utf-8", errors="replace")):
            found += 1
            why = problems(target)
            if why:
                bad.append(f"{path.relative_to(ROOT)}: pip install {target}: {why}")
    assert not bad, "\n".join(bad)
    assert found > 15, found


def test_the_scanner_finds_what_it_must_refuse():
    text = ("Install: `pip install 'q7emu[plot,dask]' pytest`. Or pip install '.[plot,dask]' and\n"
            "pip install -e \".[test,lint]\" && python -m pytest; pip install 'distributed>=2024.1' (the dask extra)\n"
            "pip install -e . there, or run; pip install '.[nope]'; pip install wheelhouse/q7emu-*.whl")
    targets = install_targets(text)
    assert targets == ["q7emu[plot,dask]", "pytest", ".[plot,dask]", ".[test,lint]", "distributed>=2024.1", ".",
                       ".[nope]", "wheelhouse/q7emu-*.whl"], targets
    assert [t for t in targets if problems(t)] == ["q7emu[plot,dask]", ".[nope]"]


def test_the_extras_hints_name_the_extras_packages():
    """The message of a command that needs an extra names its packages (q7emu.errors.EXTRAS = pyproject.toml)."""
    for extra, packages in EXTRAS.items():
        assert list(packages) == OPTIONAL[extra], extra
        assert install_hint(extra) == f"pip install {' '.join(repr(p) for p in packages)} (the {extra} extra)"


@pytest.mark.parametrize("cc", ["q7emu-no-such-cc", "/nonexistent/cc -pthread"])
def test_a_build_without_a_c_compiler_is_one_line_saying_what_to_install(cc, tmp_path):
    """setup.py without the compiler it would call: one line (pip prints the build's output as it is), before Cython
    is imported; setuptools' own error was a page ending in "command 'gcc' failed"."""
    env = {**os.environ, "CC": cc}
    r = subprocess.run([sys.executable, str(ROOT / "setup.py"), "build_ext", "--build-temp", str(tmp_path)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    exe = shlex.split(cc)[0]
    assert r.returncode != 0 and r.stdout == "", r.stdout[-2000:]
    assert r.stderr == (f"q7emu: error: no C compiler: {exe!r} (CC) is not on PATH; q7emu compiles its kernels "
                        "when it is installed: install one (Debian / Ubuntu: apt-get install gcc python3-dev; Fedora: "
                        "dnf install gcc python3-devel; macOS: xcode-select --install) or set CC (docs/build.md "
                        "§2.1)\n"), r.stderr[-2000:]
