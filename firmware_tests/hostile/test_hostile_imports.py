"""``import q7emu.trace`` and ``import q7emu.ivp`` work as the README writes them (issue 27 item 9): both raised
ModuleNotFoundError, though ``from q7emu import ivp`` and ``q7emu.trace.Recorder`` worked."""
from __future__ import annotations

import pytest
from hostile_lib import python

SPELLINGS = """
import importlib, sys
name, real = sys.argv[1], sys.argv[2]
mod = importlib.import_module(name)                       # import q7emu.NAME
import q7emu
assert mod is importlib.import_module(real), (mod, real)  # the one module object under both names
assert getattr(q7emu, name.split(".")[1]) is mod
exec(f"import {name} as m2; from {name} import *")       # both statement forms
print("ok", mod.__name__)
"""


@pytest.mark.parametrize("name,real", [("q7emu.trace", "q7emu.analysis.trace"),
                                       ("q7emu.ivp", "q7emu.primitives.ivp"),
                                       ("q7emu.profile", "q7emu.analysis.profile")])
def test_short_module_names_import(name, real):
    out = python(SPELLINGS, name, real)
    assert out.returncode == 0 and out.stdout.strip() == f"ok {real}", out.describe()


def test_the_readme_tour_spelling():
    out = python("import q7emu.trace\nwith q7emu.trace.Recorder() as r:\n    pass\nprint(type(r).__name__)")
    assert out.returncode == 0 and out.stdout.strip() == "Recorder", out.describe()


def test_unknown_names_still_fail():
    out = python("import q7emu.nonexistent")
    assert out.returncode == 1 and "ModuleNotFoundError" in out.stderr, out.describe()
