"""Run-time ISA dispatch of the kernel extensions (docs/build.md §1) -- issue 12 "Fast and portable".

1. every level this CPU supports loads the module built for it, named and flagged as the build says;
   without Q7EMU_ISA the highest one; Q7EMU_ISA forces one; a bad value is InvalidArgument naming Q7EMU_ISA
   and the choices (and one line, exit 2, on the command line);
2. every level gives the same bytes: a quick in-process check of every path, and the exhaustive kernel
   tests run again under each supported level other than this run's (docs/build.md §1.4);
3. Q7EMU_ISA=generic and Q7EMU_ISA=portable (the plain C bodies every non-x86 machine runs) replay every
   shipped case;
4. the default build runs under ``qemu-x86_64 -cpu Haswell`` (AVX2, no AVX-512: dispatches avx2) and
   ``-cpu Nehalem`` (no AVX: generic) and replays every shipped case there.
"""
from __future__ import annotations

import importlib
import importlib.util
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from q7emu import registry
from q7emu.errors import InvalidArgument
from q7emu.kernels import dequant, extension, quantize_mx

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CASES = ROOT / "examples" / "cases"
N_CASES = len(list(CASES.rglob("*.json")))
#: each kernel API module and the attribute its compiled module (the interpreter, q7emu.kernels._program) is cached in
KERNEL_MODULES = {dequant: "_program", quantize_mx: "_program"}

BUILT = extension.built_levels(importlib.import_module(extension.PROBE))
CPU = extension.cpu_levels()
#: the levels this machine can run (built and supported), lowest first
RUNNABLE = [lv for lv in extension.LEVELS if lv in BUILT and (lv in CPU or lv == "native")]
#: the level this test run loads (its own Q7EMU_ISA, or the best)
CURRENT = extension.select_level(BUILT)


#: Q7EMU_TEST_EVERY_LEVEL=1 (.ci/run sets it) repeats the exhaustive kernel tests under every other level this
#: machine runs and runs the qemu portability check; by default a run tests its own, dispatched level
#: exhaustively and every level on the quick random inputs of section 2 (docs/build.md §1.4)
EVERY_LEVEL = os.environ.get("Q7EMU_TEST_EVERY_LEVEL") == "1"
every_level_only = pytest.mark.skipif(
    not EVERY_LEVEL, reason="the exhaustive tests ran at this run's level; Q7EMU_TEST_EVERY_LEVEL=1 (as CI) "
                            "repeats them under every level and runs the qemu check")


def env_without_isa(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != extension.ENV}
    env.update(extra)
    return env


# ---------------------------------------------------------------- 1. selection
def test_cpu_levels_are_a_prefix_of_the_levels():
    assert CPU == extension.LEVELS[:len(CPU)] and CPU[:2] == ("portable", "generic")
    assert "generic" in BUILT and list(BUILT)[0] == "generic" == extension.BASELINE


@pytest.mark.parametrize("level", RUNNABLE)
def test_each_level_loads_its_own_module(level):
    for mod in KERNEL_MODULES.values():
        name = f"q7emu.kernels.{mod}"
        m = extension.load_extension(name, level)
        assert m.__name__ == (name if level == "generic" else f"{name}_{level}")
        assert m.ISA_LEVEL == level and m.ISA_FLAGS == BUILT[level] and dict(m.ISA_BUILT) == BUILT
        if platform.machine() not in ("x86_64", "AMD64"):
            assert m.ISA_SIMD == ()                 # off x86 every level is the portable C bodies
        elif level in SIMD:
            assert m.ISA_SIMD == SIMD[level], (level, m.ISA_SIMD)


#: the x86 SIMD macros each level's compiler defines (setup.py's ISA_SIMD): which C bodies of the primitives it runs;
#: none at portable, whose x86 bodies setup.py compiles out (docs/build.md §1.1)
SIMD = {"portable": (), "generic": ("SSE2",), "avx2": ("SSE2", "AVX2"),
        "avx512": ("SSE2", "AVX2", "AVX512F", "AVX512BW", "AVX512VBMI")}


@pytest.mark.parametrize("level", [lv for lv in RUNNABLE if lv != "generic"])
def test_a_variant_imported_alone_is_its_own_module(level):
    """setup.py compiles one Cython output per level, renaming the module in each copy (docs/build.md §2.2): a
    variant imported first, in a fresh process, is registered under its own name only and names its level."""
    code = ("import sys, importlib\n"
            "for name in sys.argv[1:]:\n"
            "    m = importlib.import_module(name)\n"
            "    base = name.rsplit('_', 1)[0]\n"
            "    print(m.__name__, m.ISA_LEVEL, base in sys.modules, sys.modules[name] is m)\n")
    names = [f"q7emu.kernels.{mod}_{level}" for mod in KERNEL_MODULES.values()]
    r = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{name} {level} False True" for name in names]


def test_the_cpu_probe_records_the_levels_built():
    """q7emu --version reads the levels built from q7emu.kernels._cpu (no kernel module, no numpy): the same
    levels and flags as the kernel modules'."""
    from q7emu.kernels import _cpu
    assert dict(_cpu.ISA_BUILT) == BUILT and extension.build_levels() == BUILT


def test_default_is_the_best_runnable_level():
    assert extension.select_level(BUILT, env="") == RUNNABLE[-1]
    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert set(extension.DEFAULT_LEVELS) <= set(BUILT), "the default x86-64 build has every level"


def test_forced_level_and_version_report(monkeypatch):
    for level in RUNNABLE:
        monkeypatch.setenv(extension.ENV, level)
        assert extension.select_level() == level
        info = extension.isa_info()
        assert info["level"] == level and info["forced"] == level and info["built"] == BUILT
    r = subprocess.run([sys.executable, "-m", "q7emu", "--version", "--json"], capture_output=True, text=True,
                       cwd=ROOT, env=env_without_isa(Q7EMU_ISA="generic"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "q7emu-version" and doc["isa"]["level"] == "generic"
    r = subprocess.run([sys.executable, "-m", "q7emu", "--version"], capture_output=True, text=True, cwd=ROOT,
                       env=env_without_isa())
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines[0].startswith("q7emu ") and lines[1].startswith(f"isa: {RUNNABLE[-1]} ")
    for level, flags in BUILT.items():
        assert any(line.split() == [level, *flags.split()] for line in lines), (level, r.stdout)


def test_bad_values_name_the_variable_and_the_choices(monkeypatch):
    with pytest.raises(InvalidArgument) as e:
        extension.select_level(BUILT, env="sse9")
    assert e.value.field == "Q7EMU_ISA" and "portable, generic, avx2, avx512" in str(e.value)
    with pytest.raises(InvalidArgument, match="this build has only the levels generic"):
        extension.select_level({"generic": "-O3"}, env="avx2")
    with pytest.raises(InvalidArgument, match="elsewhere generic is the portable C bodies"):
        extension.select_level({"generic": "-O3"}, env="portable")      # (an aarch64 build)
    monkeypatch.setattr(extension, "cpu_levels", lambda: ("generic",))
    with pytest.raises(InvalidArgument, match="this CPU supports only generic"):
        extension.select_level({"generic": "", "avx2": "", "avx512": ""}, env="avx512")
    assert extension.select_level({"generic": "", "avx2": "", "avx512": ""}, env="") == "generic"


@pytest.mark.parametrize("argv", [["--version"], ["replay", str(CASES)], ["ops"]])
def test_bad_value_on_the_command_line_is_one_line_exit_2(argv):
    r = subprocess.run([sys.executable, "-m", "q7emu", *argv], capture_output=True, text=True, cwd=ROOT,
                       env=env_without_isa(Q7EMU_ISA="avx1024"))
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "Q7EMU_ISA='avx1024'" in r.stderr
    assert "portable, generic, avx2, avx512" in r.stderr


# ---------------------------------------------------------------- 2. same bytes on every level
def _inputs(e: registry.KernelEntry, rng: np.random.Generator):
    if e.paths:
        for fmt, group in e.paths:
            src = rng.integers(0, 256, (5, 40 * 37 + 20), dtype=np.uint8)
            if group == 8:
                src[:, ::5] = 100 + src[:, ::5] % 60
            yield (src, fmt, group)
    else:
        import ml_dtypes
        for s in e.src_dtypes:
            for d in e.dst_dtypes:
                x = (rng.standard_normal((64, 92)) * 2.0 ** rng.integers(-20, 12, (64, 1)))
                yield (x.astype(np.float16 if s == "float16" else ml_dtypes.bfloat16), d)


@pytest.mark.parametrize("name", [e.name for e in registry.KERNELS])
def test_every_level_gives_the_golden_bytes(name, monkeypatch):
    e = registry.get(name)
    module = sys.modules[e.handler.__module__]
    attr = e.extension.rsplit(".", 1)[-1]
    for level, translations in itertools.product(RUNNABLE, ("on", "off")):
        # an untraced call runs the translations of the module's level (on) or the interpreter (off)
        monkeypatch.setenv(extension.TRANSLATIONS_ENV, translations)
        monkeypatch.setattr(module, attr, extension.load_extension(e.extension, level))
        for args in _inputs(e, np.random.default_rng(int(e.kernel_id))):
            want, got = e.golden(*args), e.handler(*args)
            want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
            assert all(np.array_equal(a, b) for a, b in zip(got, want)), (level, translations, name, args[1:])


def _traced(e, args):
    from q7emu.analysis.trace import Recorder
    rec = Recorder()
    out = e.handler(*args, trace=rec)
    return out, b"".join(block for run in rec.run_blocks for block in run) + rec.raw


@pytest.mark.parametrize("name", [e.name for e in registry.KERNELS])
def test_a_traced_run_at_every_level_is_the_baselines(name, monkeypatch):
    """Only the baseline module compiles the traced kernels; a level's module hands a traced run to it
    (docs/build.md §2.2): the same output and the same trace bytes at every level."""
    e = registry.get(name)
    module = sys.modules[e.handler.__module__]
    attr = e.extension.rsplit(".", 1)[-1]
    args = next(iter(_inputs(e, np.random.default_rng(7))))
    monkeypatch.setattr(module, attr, extension.load_extension(e.extension, "generic"))
    want_out, want_trace = _traced(e, args)
    assert len(want_trace) > 1000
    for level in RUNNABLE:
        monkeypatch.setattr(module, attr, extension.load_extension(e.extension, level))
        out, trace = _traced(e, args)
        want, got = (want_out, out) if isinstance(out, tuple) else ((want_out,), (out,))
        assert all(np.array_equal(a, b) for a, b in zip(got, want)) and trace == want_trace, level


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils) to list the modules' symbols")
@pytest.mark.parametrize("short", sorted(set(KERNEL_MODULES.values())))
def test_only_the_baseline_compiles_the_traced_kernels(short):
    """The traced code -- the interpreter's traced op handlers (``ht_<opcode>``) -- is in the baseline's shared
    object and in no other level's (docs/build.md §2.2: a third of a level's compile)."""
    marker = f"__pyx_f_5q7emu_7kernels_{len(short)}{short}_ht_"
    def traced_functions(level):
        name = f"q7emu.kernels.{short}" if level == "generic" else f"q7emu.kernels.{short}_{level}"
        spec = importlib.util.find_spec(name)          # not imported: this CPU may not run the level's code
        assert spec is not None and spec.origin, name
        path = spec.origin
        out = subprocess.run(["nm", path], capture_output=True, text=True).stdout
        if not out.strip():
            pytest.skip(f"{path} has no symbol table (a stripped build): nothing to list")
        return [ln for ln in out.splitlines() if marker in ln]
    assert len(traced_functions("generic")) > 10
    for level in BUILT:
        if level != "generic":
            assert traced_functions(level) == [], level


CHILD = "Q7EMU_ISA_TEST_CHILD"      # set in the pytest processes this file starts: they never start more


@every_level_only
@pytest.mark.skipif(bool(os.environ.get(CHILD)), reason="inside a per-level run already")
@pytest.mark.parametrize("level,translations", [(lv, "on") for lv in RUNNABLE if lv != CURRENT]
                         + [(CURRENT, "off")])
def test_exhaustive_kernel_tests_under_each_level(level, translations):
    """The exhaustive kernel == golden tests of test_dequant_kernel.py / test_quantize_mx_kernel.py, the
    translations == interpreter tests of firmware_tests/asm/test_translate.py and the translated path's tests
    (docs/asm.md §9), again in a process whose kernels and programs run at ``level`` (this run's own level runs them
    in the suite); at this run's level, again with Q7EMU_TRANSLATIONS=off: untraced calls on the interpreter (the
    suite runs the translations)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                        str(HERE / "test_dequant_kernel.py"), str(HERE / "test_quantize_mx_kernel.py"),
                        str(HERE.parent / "asm" / "test_translate.py"), str(HERE / "test_translated_path.py"),
                        f"{HERE / 'test_isa_dispatch.py'}::test_probe_level",   # (never this test: no recursion)
                        "-k", "exhaustive or every_bit_pattern or probe_level or translation or narrowed"],
                       capture_output=True, text=True, cwd=ROOT, timeout=1200,
                       env=env_without_isa(Q7EMU_ISA=level, **{CHILD: "1", extension.TRANSLATIONS_ENV: translations}))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout.splitlines()[-1] and " failed" not in r.stdout.splitlines()[-1]


def test_probe_level():
    """In the subprocesses above: the kernel modules are loaded at the forced level."""
    forced = os.environ.get(extension.ENV)
    for module, attr in KERNEL_MODULES.items():
        m = extension.cached_extension(vars(module), attr, module.EXTENSION)
        assert m.ISA_LEVEL == (forced or CURRENT)


# ---------------------------------------------------------------- 3. / 4. the shipped cases
REPLAY = r'''
import sys
import q7emu.kernels._cpu, q7emu.primitives._ivp
from q7emu.kernels.extension import isa_info
from q7emu.cli.main import main
print("isa:", isa_info()["level"], file=sys.stderr)
sys.exit(main(["replay", sys.argv[1], "--json", "--no-progress"]))
'''


def replay_all(prefix: list[str], env: dict[str, str], timeout: float) -> tuple[str, dict]:
    """(dispatched level, q7emu-replay document) of every shipped case in a fresh process run by prefix."""
    r = subprocess.run([*prefix, sys.executable, "-c", REPLAY, str(CASES)], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=timeout)
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-3000:])
    level = [line.split()[1] for line in r.stderr.splitlines() if line.startswith("isa: ")]
    doc = json.loads(r.stdout)
    s = doc["summary"]
    assert s["cases"] == N_CASES and s["passed"] == N_CASES and s["bytes_differing"] == 0, s
    return level[0], doc


@pytest.mark.parametrize("level", [lv for lv in ("generic", "portable") if lv in BUILT])
def test_a_forced_level_replays_every_shipped_case(level):
    got, _ = replay_all([], env_without_isa(Q7EMU_ISA=level), timeout=300)
    assert got == level


QEMU = shutil.which("qemu-x86_64")


@every_level_only
@pytest.mark.skipif(QEMU is None, reason="qemu-x86_64 not installed (Debian: apt-get install qemu-user; "
                                         ".ci/run installs it)")
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the qemu check is of an x86-64 build")
@pytest.mark.parametrize("cpu,level", [("Haswell", "avx2"), ("Nehalem", "generic")])
def test_default_build_runs_under_qemu(cpu, level):
    """The default build on an older CPU: no SIGILL on import, the right level dispatched, every shipped case
    passes (qemu-user runs the interpreter; the replay uses no worker processes). numpy's OpenBLAS is told the
    emulated core (OPENBLAS_CORETYPE): its own detection reads the host's CPU family and model through qemu-user
    and, on an AMD EPYC host, picked a kernel with AVX2 instructions under -cpu Nehalem (SIGILL when numpy loads,
    before any q7emu code; numpy 2.3.5 and 2.4.6 alike, qemu 7.2)."""
    got, _ = replay_all([QEMU, "-cpu", cpu], env_without_isa(OPENBLAS_CORETYPE=cpu), timeout=900)
    assert got == level, f"qemu -cpu {cpu}: dispatched {got}, expected {level}"
