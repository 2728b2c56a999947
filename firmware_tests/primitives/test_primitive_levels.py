"""The primitive library's SIMD bodies at every ISA level (docs/build.md §1.4).

The primitive suite (this folder) tests ``q7emu.primitives._ivp``, which the build compiles once, at the baseline
level. The kernel modules compile the same primitives at every level, where the C leaves of the family files take
their AVX2 / AVX-512 bodies; the exhaustive kernel tests reach those bodies only through the kernels' own operands.
With ``Q7EMU_TEST_EVERY_LEVEL=1`` (as CI) this test compiles the primitives module's generated C again with each
other level's flags (the ones the kernel modules were built with, from ``q7emu.kernels._cpu``) and runs the whole
primitive suite against it in a fresh interpreter, so every leaf body is checked op by op at every level this CPU
runs.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from q7emu.kernels import extension

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
#: Cython's C output of src/primitives/_ivp.pyx, written by the build of a source checkout
GENERATED_C = ROOT / "src" / "primitives" / "_ivp.c"
BUILT = extension.build_levels() or {}
CPU = extension.cpu_levels()
OTHER_LEVELS = [lv for lv in extension.FORCEABLE_LEVELS if lv != "generic" and lv in BUILT and lv in CPU]

#: imports the compiled module under the name q7emu.primitives._ivp before anything imports the built one, then
#: runs pytest with the remaining arguments (argv[1]: the module file)
LOADER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("q7emu.primitives._ivp", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = mod
spec.loader.exec_module(mod)
import q7emu.primitives
q7emu.primitives._ivp = mod
import q7emu.primitives.ivp as ivp
assert ivp.wvec_view is mod.wvec_view, "the wrappers did not take the compiled module"
print("q7emu.primitives._ivp from", mod.__file__, flush=True)
import pytest
sys.exit(pytest.main(sys.argv[2:]))
"""

pytestmark = pytest.mark.skipif(
    os.environ.get("Q7EMU_TEST_EVERY_LEVEL") != "1",
    reason="the primitive suite ran at the baseline level; Q7EMU_TEST_EVERY_LEVEL=1 (as CI) repeats it compiled "
           "at every other level this CPU runs")


def compile_primitives(level: str, out_dir: Path, optimise: str | None = None, extra: tuple[str, ...] = (),
                       compiler: list[str] | None = None) -> Path:
    """_ivp.c compiled with ``level``'s flags and ``extra`` into out_dir (``optimise``, e.g. "-O0", replacing their
    -O option) by ``compiler`` (default: Python's CC); the module file."""
    cc = compiler or shlex.split(sysconfig.get_config_var("CC") or "cc")
    out = out_dir / ("_ivp" + sysconfig.get_config_var("EXT_SUFFIX"))
    includes = [ROOT / "src", ROOT / "src" / "primitives", Path(sysconfig.get_paths()["include"]),
                Path(np.get_include())]
    flags = shlex.split(BUILT[level])
    if optimise:
        flags = [f for f in flags if not f.startswith("-O")] + [optimise]
    cmd = [*cc, "-shared", "-fPIC", "-fwrapv", "-DNDEBUG", *flags, *extra,
           *(f"-I{p}" for p in includes), str(GENERATED_C), "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{shlex.join(cmd)}\n{r.stderr[-4000:]}"
    return out


@pytest.mark.skipif(not GENERATED_C.is_file(), reason="needs the build's generated C (a source checkout, built)")
@pytest.mark.parametrize("level", [lv for lv in extension.FORCEABLE_LEVELS if lv in BUILT])
def test_the_primitives_compile_unoptimised_at(level, tmp_path):
    """An intrinsic's immediate operand must be a constant in the source: one taken from a loop index or a
    conditional compiles only where GCC unrolls or folds it (-O3), and a build at -O0 (a debug build, another
    compiler's flags) fails. Compiled at -O0 for every level built (the CPU need not run it)."""
    compile_primitives(level, tmp_path, optimise="-O0")


@pytest.mark.skipif(not OTHER_LEVELS, reason="this CPU runs no level above the baseline")
@pytest.mark.skipif(not GENERATED_C.is_file(), reason="needs the build's generated C (a source checkout, built)")
@pytest.mark.parametrize("level", OTHER_LEVELS)
def test_the_primitive_suite_passes_with_the_primitives_compiled_at(level, tmp_path):
    run_primitive_suite(compile_primitives(level, tmp_path), tmp_path)


#: the GNU extensions q7emu's C helpers use where the compiler has them (src/primitives/*.pxd), each with a plain C
#: alternative: under Q7_PLAIN_C they take the alternative, and ``#pragma GCC poison`` makes any use left unguarded a
#: compile error (the C of Cython and of the system headers is not q7emu's and is not checked)
GNU_EXTENSIONS = ("__int128", "__builtin_clzll", "__builtin_clz", "__builtin_ctzll", "__builtin_popcountll",
                  "__builtin_convertvector", "__may_alias__", "vector_size")


@pytest.mark.skipif(not GENERATED_C.is_file(), reason="needs the build's generated C (a source checkout, built)")
def test_the_primitive_suite_passes_in_plain_c(tmp_path):
    """What a compiler without GNU extensions (MSVC) compiles of q7emu's own C: the portable bodies (no x86 SIMD)
    with Q7_PLAIN_C, every GNU extension above poisoned, and the whole primitive suite run against it (README:
    MSVC is expected to work, untested)."""
    poison = tmp_path / "plain_c.h"
    poison.write_text(f"#pragma GCC poison {' '.join(GNU_EXTENSIONS)}\n")
    level = "portable" if "portable" in BUILT else "generic"     # (off x86 generic is the portable bodies)
    module = compile_primitives(level, tmp_path, extra=("-DQ7_PLAIN_C", "-include", str(poison)))
    run_primitive_suite(module, tmp_path)


@pytest.mark.skipif(shutil.which("clang") is None, reason="needs clang (Debian: apt-get install clang)")
@pytest.mark.skipif(not GENERATED_C.is_file(), reason="needs the build's generated C (a source checkout, built)")
def test_the_primitive_suite_passes_built_by_clang(tmp_path):
    """The portable bodies compiled by Clang (the compiler of macOS: its vector extensions, its code) instead of
    the build's compiler, and the whole primitive suite run against them."""
    level = "portable" if "portable" in BUILT else "generic"
    run_primitive_suite(compile_primitives(level, tmp_path, compiler=["clang"]), tmp_path)


@pytest.mark.skipif(not GENERATED_C.is_file(), reason="needs the build's generated C (a source checkout, built)")
def test_the_variable_length_loads_pass_with_every_count_in_quarters(tmp_path):
    """q7_load_prefix builds a constant count that is not a whole number of 16-byte quarters in vector registers at
    `generic` (a translation's access lengths, docs/build.md §3.2), a count the primitives see as a variable in plain
    copies: compiled with Q7_PREFIX_QUARTERS_ALWAYS=1, the quarters take every count, and the loads' tests (every
    count from -2 to 70 at five places, hostile counts) run against them."""
    module = compile_primitives("generic", tmp_path, extra=("-DQ7_PREFIX_QUARTERS_ALWAYS=1",))
    run_primitive_suite(module, tmp_path, HERE / "test_ivp_mem.py")


def run_primitive_suite(module: Path, tmp_path: Path, tests: Path = HERE) -> None:
    """The primitive suite (this folder but this file; or the test file ``tests``), in a fresh interpreter, against
    the module file ``module``."""
    # q7emu (its pytest plugin) is imported before pytest starts, so pytest warns it cannot rewrite its asserts
    args = [sys.executable, "-c", LOADER, str(module), "-q", "-n", "0", "-p", "no:cacheprovider",
            "-W", "ignore::pytest.PytestAssertRewriteWarning", f"--basetemp={tmp_path / 'pytest'}", str(tests),
            f"--ignore={Path(__file__)}"]
    r = subprocess.run(args, capture_output=True, text=True, cwd=ROOT,
                       env={k: v for k, v in os.environ.items() if k != "Q7EMU_TEST_EVERY_LEVEL"})
    tail = (r.stdout + r.stderr)[-6000:]
    assert f"q7emu.primitives._ivp from {module}" in r.stdout, tail
    assert r.returncode == 0, tail
    assert " passed" in r.stdout.splitlines()[-1], tail
