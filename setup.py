"""Build the q7emu Cython extensions from src/ (setuptools + Cython).

src/ is grouped by layer: src/primitives (register types and the IVP primitive families),
src/trace (the trace recorder the kernels write into) and src/kernels (the program interpreter with the kernel
programs' translations: every kernel runs as its program).
Each .pyx becomes the extension of the same name in the matching q7emu sub-package.

ISA levels (docs/build.md §1): the hot kernel modules (:data:`HOT`) are compiled once per level of
:func:`isa_levels` -- ``q7emu.kernels._program`` at the baseline, ``q7emu.kernels._program_avx2``,
``q7emu.kernels._program_avx512`` (and with ``Q7EMU_PORTABLE=1`` ``q7emu.kernels._program_portable``, the primitives'
portable C bodies, which non-x86 machines run) -- and q7emu.kernels.extension picks one at import. Every other module is
compiled once, at the baseline. A hot module is cythonized once, from a source setup.py writes under build/isa/
(its ISA constants read from C macros, then the real .pyx included); that one C output is copied once per level
with the level's macros and the level's module name (docs/build.md §2.2). ``q7emu.kernels._cpu`` also carries
the levels built (``ISA_BUILT``), so ``q7emu --version`` reads them without loading a kernel (or numpy).

Environment: ``Q7EMU_NATIVE=1`` adds a ``native`` level (``-march=native``, this host only; docs/build.md §2);
``Q7EMU_PORTABLE=1`` adds the ``portable`` level on x86-64 (a test level: CI builds it; docs/build.md §1.1).
"""
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

MSVC = sys.platform == "win32"
#: setup.py commands that only write metadata: pip runs setup.py for them before the build (egg_info for the build
#: requirements, dist_info for the metadata); they need no C sources, and Cython takes seconds of CPU to start
METADATA_COMMANDS = {"egg_info", "dist_info"}
#: what to install where the C compiler or Python's headers are missing (the first line a newcomer needs)
INSTALL_HINT = ("Debian / Ubuntu: apt-get install gcc python3-dev; Fedora: dnf install gcc python3-devel; macOS: "
                "xcode-select --install")


def check_build_tools() -> None:
    """Exit with one line saying what to install when the C compiler setuptools would call, or Python's headers,
    are missing: setuptools' own error is a page ending in ``command 'gcc' failed: No such file or directory``.
    MSVC is left to setuptools, whose error names the Build Tools to install."""
    if MSVC:
        return
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    exe = (shlex.split(cc) or ["cc"])[0]
    if shutil.which(exe) is None:
        origin = "CC" if os.environ.get("CC") else "the C compiler this Python was built with"
        sys.exit(f"q7emu: error: no C compiler: {exe!r} ({origin}) is not on PATH; q7emu compiles its kernels when "
                 f"it is installed: install one ({INSTALL_HINT}) or set CC (docs/build.md §2.1)")
    header = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not header.is_file():
        sys.exit(f"q7emu: error: no Python headers: {header} is missing; install them ({INSTALL_HINT})")


_commands = [a for a in sys.argv[1:] if re.fullmatch(r"[a-z_]+", a)]
if not (_commands and set(_commands) <= METADATA_COMMANDS):
    check_build_tools()         # before Cython and setuptools are imported: their import is most of a second

from Cython.Build import cythonize  # noqa: E402
from setuptools import Extension, setup  # noqa: E402

#: -g0: no debug info (Python's CFLAGS carry -g), a third less compile time; symbols stay for perf
OPT = ["/O2"] if MSVC else ["-O3", "-g0"]
#: x86-64 with GCC / Clang: the levels beyond the baseline can be compiled (and detected at run time)
X86 = not MSVC and platform.machine().lower() in ("x86_64", "amd64")


#: the x86 SIMD macros undefined: the primitives' hand-written x86 bodies (``#if defined(__SSE2__)`` ...) drop out and
#: their portable C bodies -- the code every non-x86 machine compiles -- are built instead (docs/build.md §1.1)
NO_X86_SIMD = ["-U__SSE2__", "-U__SSE__", "-U__MMX__"]


#: GCC's tuning switch that builds a vector constant from a general register (mov, vmovd, vpbroadcast: three
#: instructions, which GCC repeats in a translation's loop for want of vector registers) turned off, so the constant
#: is one load from read-only data: at avx2, host instructions per 64 outputs group 0 337 -> 324, E2M3 459 -> 431,
#: MX group 8 780 -> 761, QuantizeMX bf16 2,742 -> 2,638; at generic it costs 1-2 % more (not used there); avx512
#: is not measured (docs/build.md §1, vector constants from memory)
CONSTANTS_FROM_MEMORY = "-mtune-ctrl=^inter_unit_moves_to_vec"


def compiler_accepts(flag: str) -> bool:
    """Whether the C compiler setuptools calls (CC, else the one Python was built with) compiles an empty file with
    ``flag`` (GCC's -mtune-ctrl: Clang refuses it)."""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc") or ["cc"]
    try:
        r = subprocess.run([*cc, flag, "-x", "c", "-c", "-o", os.devnull, "-"], input="int q7emu_probe;\n",
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0


def isa_levels() -> dict[str, list[str]]:
    """ISA level -> its compile arguments, the baseline (``generic``) first (docs/build.md §1)."""
    if not X86:
        return {"generic": OPT}
    levels = {"generic": OPT + ["-march=x86-64", "-mtune=generic"]}      # SSE2: every x86-64 CPU
    if os.environ.get("Q7EMU_PORTABLE", "0") == "1":
        # the non-x86 C bodies, on x86-64: a level to test them (never dispatched by itself), so a user's build
        # does not spend the ~25 s of CPU it costs (docs/build.md §2.2)
        levels["portable"] = OPT + ["-march=x86-64", "-mtune=generic"] + NO_X86_SIMD
    levels["avx2"] = OPT + ["-march=x86-64-v3", "-mtune=generic"]         # AVX2 FMA BMI1/2 F16C LZCNT MOVBE
    if compiler_accepts(CONSTANTS_FROM_MEMORY):
        levels["avx2"].append(CONSTANTS_FROM_MEMORY)
    levels["avx512"] = OPT + ["-march=x86-64-v4", "-mavx512vbmi", "-mtune=generic"]  # + AVX-512 F/BW/CD/DQ/VL, VBMI
    if os.environ.get("Q7EMU_NATIVE", "0") == "1":
        levels["native"] = OPT + ["-march=native"]
    return levels


LEVELS = isa_levels()
#: the levels whose interpreter holds the kernel programs' translations (docs/asm.md §9): every x86 level a CPU is
#: dispatched to; a level adds 8-17 s of CPU to the build (docs/build.md §2.2); portable runs programs interpreted
TRANSLATED_LEVELS = ("generic", "avx2", "avx512")
BASELINE = LEVELS["generic"]
#: level -> its flags as one string: the ISA_BUILT of the kernel modules and of q7emu.kernels._cpu
BUILT = {lv: " ".join(args) for lv, args in LEVELS.items()}
DIRECTIVES = {
    "language_level": "3",
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
}
#: src/ itself (the generated sources include "kernels/_program.pyx") and every layer folder of src/
INCLUDE = ["src"] + sorted(d.as_posix() for d in Path("src").iterdir() if d.is_dir())
#: extension module -> its Cython source: src/<layer>/_<name>.pyx builds q7emu.<layer>._<name>
MODULES = {f"q7emu.{pyx.parent.name}.{pyx.stem}": pyx.as_posix() for pyx in sorted(Path("src").glob("*/_*.pyx"))}
#: the modules compiled once per ISA level (the kernels); the rest is not hot and is built at the baseline
HOT = ("q7emu.kernels._program",)
#: the CPUID probe, which also records the levels built (ISA_BUILT)
CPU = "q7emu.kernels._cpu"
GENERATED = Path("build") / "isa"
#: the compiler macros whose presence picks a primitive's x86 body (src/primitives/*.pxd), reported per level as
#: ``ISA_SIMD`` (none at ``portable`` and off x86)
SIMD_MACROS = ("SSE2", "AVX2", "AVX512F", "AVX512BW", "AVX512VBMI")
#: Cython's utility code (memoryviews, function objects, exception helpers, ...) as one module that every extension
#: imports, instead of a copy compiled into each (Cython >= 3.1's shared utility module; docs/build.md §2.2)
SHARED = "q7emu.primitives._cyutility"
SHARED_C = GENERATED.joinpath(*SHARED.split(".")).with_suffix(".c")


def write(path: Path, text: str) -> str:
    """Write ``text`` to ``path`` unless it holds it already (an unchanged file keeps its time stamp, so
    nothing is rebuilt); return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path.as_posix()


def current(path: Path, source: str) -> bool:
    """Whether the file ``path`` setup.py derives from Cython's output ``source`` is newer than it and than
    setup.py (then it need not be derived again: pip runs setup.py three times per build)."""
    return path.is_file() and path.stat().st_mtime >= max(Path(source).stat().st_mtime, Path(__file__).stat().st_mtime)


def include_line(source: str) -> str:
    return f"include {Path(source).relative_to('src').as_posix()!r}\n"


def hot_source(name: str, source: str) -> str:
    """Write the Cython source of the hot module ``name``, cythonized once for every level: the module
    constants ``ISA_LEVEL`` / ``ISA_FLAGS`` from the C macros each level's C file defines (:func:`level_source`),
    ``ISA_SIMD`` (which of :data:`SIMD_MACROS` the level's compiler defines: the x86 bodies compiled in),
    ``ISA_BUILT`` (the same on every level), then the real source included from src/."""
    return write(GENERATED.joinpath(*name.split(".")).with_suffix(".pyx"), (
        f"# Generated by setup.py: {name} = {source}, cythonized once; setup.py copies the C output once per ISA\n"
        f"# level with the level's macros and module name (docs/build.md §2.2).\n"
        f"cdef extern from *:\n"
        f'    """\n'
        f"    #if !defined(Q7_ISA_LEVEL) || !defined(Q7_ISA_FLAGS)\n"
        f'    #error "compile the per-level copies setup.py writes beside this file (docs/build.md §2.2)"\n'
        f"    #endif\n"
        f"    /* the x86 SIMD macros the primitives' C bodies are chosen by, as this level's compiler defines them */\n"
        f"    static const char Q7_ISA_SIMD[] = \"\"\n"
        + "".join(f'    #if defined(__{m}__)\n    " {m}"\n    #endif\n' for m in SIMD_MACROS) +
        f"    ;\n"
        f'    """\n'
        f"    const char* Q7_ISA_LEVEL\n"
        f"    const char* Q7_ISA_FLAGS\n"
        f"    const char* Q7_ISA_SIMD\n"
        f"ISA_LEVEL = Q7_ISA_LEVEL.decode('ascii')\n"
        f"ISA_FLAGS = Q7_ISA_FLAGS.decode('ascii')\n"
        f"#: the x86 SIMD bodies compiled in (``()`` for the portable C bodies), e.g. ``('SSE2', 'AVX2')``\n"
        f"ISA_SIMD = tuple(Q7_ISA_SIMD.decode('ascii').split())\n"
        f"ISA_BUILT = {BUILT!r}\n"
        f"{include_line(source)}"))


def cpu_source(source: str) -> str:
    """Write the Cython source of q7emu.kernels._cpu: ``ISA_BUILT`` (level -> flags of every level this build
    compiles), then the real source included from src/."""
    return write(GENERATED.joinpath(*CPU.split(".")).with_suffix(".pyx"), (
        f"# Generated by setup.py: {CPU} = {source} and the ISA levels this build compiles (docs/build.md §1.2).\n"
        f"#: level -> compile flags of every ISA level the kernel modules were built for (read by q7emu --version)\n"
        f"ISA_BUILT = {BUILT!r}\n"
        f"{include_line(source)}"))


def level_source(name: str, c_file: str, level: str) -> str:
    """Write the C file of the hot module ``name`` at ``level``: the level's macros, then Cython's output
    ``c_file`` with the module's name (its init function ``PyInit__program``, its ``PyModuleDef`` name and the
    qualified name it is registered under) renamed to the variant's (``_program_avx2``)."""
    short = name.rsplit(".", 1)[-1]
    variant = short if level == "generic" else f"{short}_{level}"
    # (_program_generic.c, _program_avx2.c, ...: never _program.c, Cython's output beside them)
    path = GENERATED.joinpath(*name.split(".")).with_name(f"{short}_{level}.c")
    if current(path, c_file):
        return path.as_posix()
    text = Path(c_file).read_text()
    if level != "generic":
        subs = [(rf"\bPyInit_{short}\b", f"PyInit_{variant}"),
                (re.escape(f'"{name}"'), f'"{name.rsplit(".", 1)[0]}.{variant}"'),
                (re.escape(f'"{short}"'), f'"{variant}"')]
        for pattern, new in subs:
            text, n = re.subn(pattern, new, text)
            if n == 0:      # a Cython release that spells the module name differently: fail, never mis-name
                sys.exit(f"setup.py: {pattern!r} not found in {c_file}; cannot name the {level} variant of {name}")
    head = (f"/* Generated by setup.py: {name} at ISA level {level}, module {variant} (docs/build.md §2.2). */\n"
            f"#define Q7_ISA_LEVEL {json.dumps(level)}\n"
            f"#define Q7_ISA_FLAGS {json.dumps(BUILT[level])}\n"
            f"#define Q7_TRACED_HERE {int(level == 'generic')}\n"
            f"#define Q7_TRANSLATED_HERE {int(level in TRANSLATED_LEVELS)}\n")
    return write(path, head + split_opt(text))


def compiled_source(name: str, c_file: str) -> str:
    """Write the C file compiled for the module ``name`` built once: Cython's output ``c_file`` with its cold
    functions at :data:`COLD_OPT` (:func:`split_opt`)."""
    path = GENERATED.joinpath(*name.split(".")).with_name(f"{name.rsplit('.', 1)[-1]}_compiled.c")
    return path.as_posix() if current(path, c_file) else write(path, split_opt(Path(c_file).read_text()))


#: the optimisation of the code that is not a kernel's (Python wrappers and argument parsing, module set-up,
#: Cython's utility code): -O0 instead of -O3 cuts a kernel module's compile time by about 40 % (docs/build.md §2.2)
COLD_OPT = "O0"
#: a C function Cython generated from a ``cdef`` function (the kernels, the primitives of src/primitives/*.pxd, the
#: trace recorder): compiled with the level's flags; every other function of the module is cold (:func:`split_opt`)
HOT_FUNCTION = ("__pyx_f_", "__pyx_fuse_")
#: the shared utility module is all cold code
COLD_ARGS = [] if MSVC else [f"-{COLD_OPT}"]
_DEF = re.compile(r"^[A-Za-z_][^;=(]*?\b([A-Za-z_][A-Za-z0-9_]*)\s*\([^;=]*\)\s*\{\s*$")
_CODE = "/* #### Code section: module_code ### */"


def split_opt(text: str) -> str:
    """Cython's C output ``text`` with the definitions of its cold functions (every function after the start of
    the module code whose name is not in :data:`HOT_FUNCTION`) compiled at :data:`COLD_OPT` by GCC (``#pragma GCC
    optimize``; other compilers compile everything with the command line's flags). The switches are placed only
    between top-level definitions outside ``#if`` blocks; a function inside an ``#if`` block keeps the mode of the
    first function of that block. The hot code -- the verbatim C of the primitives (above the module code) and
    every cdef function -- keeps the command line's -O3 and the level's -march."""
    lines = text.split("\n")
    if _CODE not in lines:
        return text
    start = lines.index(_CODE)
    push = (f"#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC push_options\n"
            f"#pragma GCC optimize (\"{COLD_OPT}\")\n#endif")
    pop = "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC pop_options\n#endif"
    inserts: dict[int, str] = {}
    depth, in_function, boundary, since, cold = 0, False, start + 1, 0, False
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if not in_function and depth == 0:
            boundary, since = i, 0          # a top-level position: a switch may go here
        directive = line.lstrip()
        if directive.startswith("#"):
            word = directive[1:].lstrip()
            depth += word.startswith("if") - word.startswith("endif")
            continue
        if in_function:
            in_function = not line.startswith("}")
            continue
        m = _DEF.match(line)
        if not m:
            continue
        in_function, since = True, since + 1
        want = not m.group(1).startswith(HOT_FUNCTION)
        if want != cold and since == 1:
            inserts[boundary], cold = (push if want else pop), want
    out = []
    for i, line in enumerate(lines):
        if i in inserts:
            out.append(inserts[i])
        out.append(line)
    if cold:
        out.append(pop)
    return "\n".join(out)


JOBS = os.cpu_count() or 1


def generated(name: str, source: str) -> str:
    if name in HOT:
        return hot_source(name, source)
    return cpu_source(source) if name == CPU else source


def extensions() -> list[Extension]:
    """Every extension module to compile: cythonize every module once (the hot ones and _cpu from their generated
    sources) in parallel, the shared utility module first (Cython writes it to SHARED_C, whose folder must exist);
    then one extension per ISA level of each hot module from its one C output."""
    SHARED_C.parent.mkdir(parents=True, exist_ok=True)
    cythonized = cythonize([Extension(SHARED, [SHARED_C.as_posix()], extra_compile_args=BASELINE + COLD_ARGS)] +
                           [Extension(name, [generated(name, source)], include_dirs=INCLUDE,
                                      extra_compile_args=BASELINE) for name, source in MODULES.items()],
                           include_path=INCLUDE, compiler_directives=DIRECTIVES, nthreads=JOBS,
                           shared_utility_qualified_name=SHARED)
    out = []
    for ext in cythonized:
        if ext.name == SHARED:
            out.append(ext)
        elif ext.name in HOT:
            out += [Extension(ext.name if lv == "generic" else f"{ext.name}_{lv}",
                              [level_source(ext.name, ext.sources[0], lv)], include_dirs=INCLUDE,
                              extra_compile_args=args)
                    for lv, args in LEVELS.items()]
        else:
            ext.sources = [compiled_source(ext.name, ext.sources[0])]
            out.append(ext)
    return out


if _commands and set(_commands) <= METADATA_COMMANDS:
    setup(ext_modules=[Extension(name, [source]) for name, source in MODULES.items()])
else:
    setup(ext_modules=extensions(), options={"build_ext": {"parallel": JOBS}})
