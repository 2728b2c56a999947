"""Start-up: no command imports what it does not use (issue 25; docs/cli.md §1). Each command runs in a fresh
interpreter, which then reports which heavy modules it imported: numpy (~0.1-0.9 s), ml_dtypes (seconds for some
releases), tqdm, matplotlib, dask / distributed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "examples" / "cases" / "mariana"
HEAVY = ("numpy", "ml_dtypes", "tqdm", "matplotlib", "dask", "distributed")
_CODE = f"""
import contextlib, io, json, sys
from q7emu.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(sys.argv[1:])
print(json.dumps([rc, sorted(m for m in {HEAVY!r} if m in sys.modules),
                  sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("q7emu.cli.") and
                         m.endswith("_commands"))]), file=sys.stderr)
"""


def imported(*argv: str) -> tuple[int, list[str]]:
    """(exit status, heavy modules imported) of ``q7emu ARGV`` in a fresh interpreter."""
    rc, mods, _ = imported_modules(*argv)
    return rc, mods


def imported_modules(*argv: str) -> tuple[int, list[str], list[str]]:
    """(exit status, heavy modules imported, q7emu.cli command modules imported) of ``q7emu ARGV`` in a fresh
    interpreter."""
    out = subprocess.run([sys.executable, "-c", _CODE, *argv], capture_output=True, text=True, timeout=300, cwd=ROOT)
    rc, mods, commands = json.loads(out.stderr.strip().splitlines()[-1])
    return rc, mods, commands


@pytest.mark.parametrize("argv,commands", [
    (["--version"], []), (["--version", "--json"], []),
    (["replay", str(CASES / "mariana_7b_proc_4bit_non_mx_e2m1.json")], ["run_commands"]),
    (["decode", "--help"], ["inspect_commands"]), (["listing", "--help"], ["explore_commands"]),
    (["asm", "--help"], ["asm_commands"]),
    (["--help"], ["asm_commands", "explore_commands", "inspect_commands", "record_commands", "run_commands",
                  "trace_commands"])])
def test_a_command_imports_only_its_command_module(argv, commands):
    rc, _, got = imported_modules(*argv)
    assert rc == 0 and got == commands, (argv, got)


@pytest.mark.parametrize("argv", [["--help"], ["replay", "--help"], ["trace", "--help"], ["listing", "--help"],
                                  ["explore", "--help"], ["--version"], ["--version", "--json"]])
def test_help_imports_nothing_heavy(argv):
    rc, mods = imported(*argv)
    assert rc == 0 and mods == [], (argv, mods)


def test_ops_imports_numpy_at_most():
    """``ops`` runs each kernel configuration once (which kernels issue each op): numpy, nothing else heavy."""
    rc, mods = imported("ops")
    assert rc == 0 and set(mods) <= {"numpy"}, mods


def test_replaying_one_case_imports_only_numpy():
    """One 0x7b case: numpy for its arrays; no ml_dtypes (no bf16 in it), no progress bar, no plot, no cluster."""
    rc, mods = imported("replay", str(CASES / "mariana_7b_proc_4bit_non_mx_e2m1.json"))
    assert rc == 0 and mods == ["numpy"], mods


@pytest.mark.parametrize("case", ["mariana_e3_quantize_mx_e4m3", "mariana_e3_quantize_mx_e5m2"])
def test_a_quantize_mx_case_imports_no_ml_dtypes(case):
    """QuantizeMX needs no ml_dtypes (its import took 0.8-1.6 s, three times the replay): from fp16 (issue 40) and,
    since the ISA layer passes the source's bit patterns (``src_format``, issue 38), from bf16 too."""
    rc, got = imported("replay", str(CASES / f"{case}.json"))
    assert rc == 0 and got == ["numpy"], got


def test_replaying_on_the_kernels_imports_no_program_machinery():
    """A replay on the kernels (or the golden models) never loads q7emu.asm and the op tables it reads (a sixth of
    a one-case replay's start-up before issue 38); ``--program`` does."""
    code = ("import contextlib, io, sys\nfrom q7emu.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    rc = main(sys.argv[1:])\n"
            "print(rc, sorted(m for m in sys.modules if m.startswith(('q7emu.asm', 'q7emu.primitives.optable'))),"
            " file=sys.stderr)")
    case = str(CASES / "mariana_7b_proc_4bit_non_mx_e2m1.json")
    for backend in ("kernel", "golden"):
        out = subprocess.run([sys.executable, "-c", code, "replay", case, "--backend", backend], capture_output=True,
                             text=True, timeout=300, cwd=ROOT)
        assert out.stderr.strip().splitlines()[-1] == "0 []", (backend, out.stderr[-2000:])


def test_replaying_a_folder_needs_no_plot_or_cluster_libraries():
    rc, mods = imported("replay", str(ROOT / "examples" / "cases"))
    assert rc == 0 and not {"matplotlib", "dask", "distributed"} & set(mods), mods


_BLAS_CODE = ("import contextlib, io, os, sys\n{pre}from q7emu.cli.main import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n    rc = main(sys.argv[1:])\n"
              "print(rc, os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)")


@pytest.mark.parametrize(("user", "pre", "expect"), [
    (None, "", "1"),                        # unset: one thread, before numpy loads OpenBLAS
    ("3", "", "3"),                         # the user's own setting stands
    (None, "import numpy\n", "None"),       # numpy already loaded (a program calling main): nothing changes
])
def test_the_cli_starts_openblas_with_one_thread(user, pre, expect):
    """No command uses BLAS; OpenBLAS's thread pool cost about 0.1 s of CPU in every one-case process (docs/cli.md
    §1). The CLI sets ``OPENBLAS_NUM_THREADS=1`` before numpy is first imported, unless the user set it."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user is not None:
        env["OPENBLAS_NUM_THREADS"] = user
    case = str(CASES / "mariana_7b_proc_4bit_non_mx_e2m1.json")
    out = subprocess.run([sys.executable, "-c", _BLAS_CODE.format(pre=pre), "replay", case], capture_output=True,
                         text=True, timeout=300, cwd=ROOT, env=env)
    assert out.stderr.strip().splitlines()[-1] == f"0 {expect}", out.stderr[-2000:]
