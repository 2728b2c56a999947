"""Host instructions the kernels execute, counted by valgrind's callgrind (docs/build.md §3.8): figures a busy or
shared machine cannot move, where bench/summary.py's times drift with the host's load.

    python bench/count_instructions.py [--levels generic] [--paths e2m1-g0,nf4-g0] [--partitions 4] [--jobs 2]
                                       [--program] [--by-primitive [N]] [--json]

For each level and each path of bench/summary.py (and QuantizeMX from fp16, ``quantize_mx fp16``: summary.py's input
clipped to fp16), one untraced call runs in a child process under
``valgrind --tool=callgrind``, which counts only inside the kernel: its program's translation (docs/asm.md §9:
``tx_*``) or, with ``--translations off`` (Q7EMU_TRANSLATIONS=off) or at a level without translations, its program
on the interpreter (``exec_loop``): not the Python around it. The inputs are
summary.py's, cut to the first PARTITIONS partitions (default 4; QuantizeMX on 32 x 2048, its smallest tile).
Prints host instructions per output element and per executed primitive (the primitives counted by a Recorder on
the same input, as summary.py's ns/prim). ``--program`` counts the path's kernel program instead (docs/asm.md §9):
its translation where the level has one (the ``tx_*`` functions), else the interpreter (``exec_loop``); the program
executes the kernel's primitives (their traces are equal), so the per-primitive figure compares. A child takes one
to three minutes: valgrind runs the whole Python start-up. Nothing is asserted.

``--by-primitive`` says where a translation's instructions go: the level's kernel module is compiled again from
the C the build left in build/isa (``python setup.py build_ext --inplace`` writes it), with the build's flags and
debug line tables (-g), the child loads that copy, callgrind records each instruction's count, and ``addr2line``
names the primitive (or other function: ``mem_hit``, the translation's own code) each instruction was inlined from,
the outermost call in the translation; the N largest shares are printed under each row (default 12), all of them
in ``--json``. Needs a C compiler and binutils' addr2line; -g changes no instruction (the totals equal the plain
count's).

Valgrind 3.19 (Debian 12) decodes the SSE2 code of the ``generic`` level and some ``avx2`` paths, but not every AVX
encoding GCC emits (``vmovq xmm, xmm``) nor any AVX-512; a path valgrind cannot run is reported as such, with no
figure.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: the kernel functions counted (callgrind --toggle-collect patterns on the Cython C names): a translation (an
#: untraced call runs it), or the interpreter's loop; the same with --program
KERNEL_FUNCTIONS = ("*_program_tx_*", "*exec_loop*")
PROGRAM_FUNCTIONS = KERNEL_FUNCTIONS
QMX_SHAPE = (32, 2048)
#: the environment variable naming the kernel module file the child loads instead of the installed one
MODULE_ENV = "Q7EMU_COUNT_MODULE"
ROOT = Path(__file__).resolve().parents[1]


def setup(partitions: int):
    """summary.py with its inputs cut to `partitions` partitions (QuantizeMX: QMX_SHAPE)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import summary
    summary.P = partitions
    summary.QMX_SHAPE = QMX_SHAPE
    return summary


class BadArgument(Exception):
    """A command-line value this script cannot use (one line on stderr, exit status 2)."""


def count_paths(summary):
    """bench/summary.py's paths, then QuantizeMX with an fp16 source (summary.qmx_fp16_src; no baseline: summary.py
    times bf16 alone): (name, kernel(cores, trace), outputs, ...)."""
    from q7emu.kernels import quantize_mx
    yield from summary.paths()
    x = summary.qmx_fp16_src()
    yield ("quantize_mx fp16", (lambda c, tr=None: quantize_mx.quantize_mx(x, cores=c, trace=tr)), x.size)


def find_path(summary, name: str):
    for row in count_paths(summary):
        if row[0] == name:
            return row
    raise BadArgument(f"--paths: no path {name!r} (paths: {', '.join(r[0] for r in count_paths(summary))})")


def program_call(summary, name: str):
    """One untraced call of path `name`'s kernel program on summary.py's input (translated where it can be)."""
    from q7emu.asm import kernels as programs
    from q7emu.model.knobs import normalize_dequant_args, normalize_quantize_mx_args
    if name.startswith("quantize_mx"):
        x = summary.qmx_fp16_src() if name.endswith("fp16") else summary.qmx_src()
        _, kind, dst, checked = normalize_quantize_mx_args(x, "float8_e4m3fn", {})
        prog = programs.kernel_program("quantize_mx", src_dtype=kind, dst_dtype=dst, knobs=checked)
        return lambda: programs.quantize_mx_program(prog, x)
    fmt, group = next((f, g) for f, g in summary.COMBOS if f"{summary.FMT[f]}-g{g}" == name)
    src = summary.dequant_src(fmt, group)
    _, fmt_i, g, path, checked = normalize_dequant_args(src, fmt, group, {})
    prog = programs.kernel_program(path, fmt=fmt_i, group=g, knobs=checked)
    return lambda: programs.dequantize_program(prog, src, fmt, group)


def debug_module(level: str, out_dir: str) -> str:
    """This checkout's kernel module at ``level`` compiled again with debug line tables, into ``out_dir``: the C the
    build left in build/isa, with Python's compiler flags and the level's its header records (Q7_ISA_FLAGS), as the
    build compiled it, and -g. Its path; BadArgument when that C is missing or does not compile."""
    import sysconfig

    import numpy as np

    from q7emu.kernels import extension
    base = level == extension.BASELINE
    c_file = ROOT / "build" / "isa" / "q7emu" / "kernels" / f"_program_{level}.c"
    if not c_file.is_file():
        raise BadArgument(f"--by-primitive: no {c_file.relative_to(ROOT)} (python setup.py build_ext --inplace "
                          "writes it)")
    m = re.search(r'^#define Q7_ISA_FLAGS "([^"]*)"', c_file.read_text(errors="replace")[:4096], re.M)
    # as setuptools compiles it: Python's CFLAGS and CCSHARED (-fwrapv among them), then the level's, then -g
    python_flags = (sysconfig.get_config_var("CFLAGS") or "").split() + (sysconfig.get_config_var("CCSHARED") or
                                                                          "-fPIC").split()
    flags = python_flags + [f for f in (m.group(1).split() if m else ["-O3"]) if not f.startswith("-g")] + ["-g"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    out = os.path.join(out_dir, ("_program" if base else f"_program_{level}") + suffix)
    includes = [sysconfig.get_paths()["include"], np.get_include(), str(ROOT / "src"),
                *(str(d) for d in sorted((ROOT / "src").iterdir()) if d.is_dir())]
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"
    r = subprocess.run([cc, "-shared", *flags, *(f"-I{d}" for d in includes), str(c_file), "-o", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise BadArgument(f"--by-primitive: {cc} failed on {c_file.name}: {r.stderr.strip().splitlines()[-1:]}")
    return out


def by_primitive(cg_out: str, module: str) -> dict[str, int]:
    """Each function's share of the instructions callgrind counted in ``module`` (``cg_out``: recorded with
    --dump-instr=yes): every instruction address is named by ``addr2line -i`` and counted for the outermost function
    inlined into the translation (``tx_*``; the translation's own code: "translation"), or, outside one, the
    function it is in. Names lose Cython's prefixes (``__pyx_f_10ivp_select_sel2nx8`` -> ``sel2nx8``)."""
    cost: dict[int, int] = {}
    files: dict[str, str] = {}
    current = ""
    last = 0
    skip = False
    stem = os.path.basename(module)
    with open(cg_out) as f:
        for line in f:
            if line.startswith(("ob=", "cob=")):
                m = re.match(r"c?ob=\((\d+)\)(?: (.*))?", line.strip())
                if m and m.group(2):
                    files[m.group(1)] = m.group(2)
                if line.startswith("ob=") and m:
                    current = files.get(m.group(1), "")
                continue
            if line.startswith("calls="):
                skip = True                       # the next line is the call's inclusive cost
                continue
            if line[:1] not in ("0", "+", "-", "*"):
                continue
            pos, *rest = line.split()
            addr = last if pos == "*" else last + int(pos, 0) if pos[0] in "+-" else int(pos, 16)
            last = addr
            if skip:
                skip = False
                continue
            if os.path.basename(current) == stem and rest:
                cost[addr] = cost.get(addr, 0) + int(rest[0])
    if not cost:
        return {}
    r = subprocess.run(["addr2line", "-a", "-i", "-f", "-e", module, *(hex(a) for a in sorted(cost))],
                       capture_output=True, text=True)
    chains: dict[int, list[str]] = {}
    at = -1
    lines = iter(r.stdout.splitlines())
    for text in lines:
        if text.startswith("0x"):
            at = int(text, 16)
            chains[at] = []
        else:
            chains.setdefault(at, []).append(text)
            next(lines, None)                     # its file:line
    out: dict[str, int] = {}
    for addr, n in cost.items():
        names = chains.get(addr) or ["?"]       # innermost first
        tx = [i for i, x in enumerate(names) if "_program_tx_" in x]
        name = names[-1] if not tx else "translation" if tx[-1] == 0 else names[tx[-1] - 1]
        out[plain_name(name)] = out.get(plain_name(name), 0) + n
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def plain_name(c_name: str) -> str:
    """A C function's name without Cython's module prefix (``__pyx_f_5q7emu_7kernels_8_program_mem_hit`` ->
    ``mem_hit``, ``__pyx_fuse_1__pyx_f_9ivp_lanes_lanes_arith`` -> ``lanes_arith``) or a primitive family's
    (``ivp_fp_oltnxf16t`` -> ``oltnxf16t``)."""
    m = re.match(r"__pyx_(?:fuse_\d+__pyx_)?f_", c_name)
    if not m:
        return re.sub(r"^ivp_[a-z]+_", "", c_name)
    i = m.end()
    while i < len(c_name) and c_name[i].isdigit():      # each package / module name: its length, then itself
        j = i
        while c_name[j].isdigit():
            j += 1
        i = j + int(c_name[i:j])
        i += c_name[i:i + 1] == "_"
    return c_name[i:]


def child(level: str, name: str, partitions: int, program: bool) -> None:
    """The process valgrind runs: one untraced call of `name` (or its program) at `level`."""
    from q7emu.asm import run as program_run
    from q7emu.kernels import dequant, extension, quantize_mx
    summary = setup(partitions)
    summary.use_level(level)
    module = extension.load_extension(program_run.EXTENSION, level)
    if os.environ.get(MODULE_ENV):            # --by-primitive: the -g copy of the level's module
        import importlib.util
        path = os.environ[MODULE_ENV]
        spec = importlib.util.spec_from_file_location(f"q7emu.kernels.{os.path.basename(path).split('.')[0]}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        dequant._program = quantize_mx._program = module
    if program:
        program_run._program = module
        program_call(summary, name)()
    else:
        find_path(summary, name)[1](1)


def count(level: str, name: str, partitions: int, valgrind: str, program: bool = False,
          translations: str = "on", module: str | None = None) -> dict:
    """Instructions of one call, from a child under callgrind (Q7EMU_TRANSLATIONS=``translations``):
    {"instructions": int} or {"error": str}; with ``module`` (:func:`debug_module`), run on that copy, and each
    function's share too ({"by_primitive": {name: instructions}}, :func:`by_primitive`)."""
    functions = PROGRAM_FUNCTIONS if program else KERNEL_FUNCTIONS
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
               *(f"--toggle-collect={f}" for f in functions),
               *(["--dump-instr=yes", "--dump-line=no"] if module else []),
               sys.executable, str(Path(__file__).resolve()), "--child", level, name, str(partitions),
               *(["--program"] if program else [])]
        r = subprocess.run(cmd, capture_output=True, text=True,
                           env=dict(os.environ, **{"Q7EMU_TRANSLATIONS": translations},
                                    **({MODULE_ENV: module} if module else {})))
        if "unhandled instruction bytes" in r.stderr or "Unrecognised instruction" in r.stderr:
            return {"error": "valgrind cannot decode this level's code"}
        m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
        if r.returncode != 0 or not m:
            return {"error": f"valgrind exit status {r.returncode}: {r.stderr.strip().splitlines()[-1:]}"}
        if int(m.group(1)) == 0:
            return {"error": "no instructions counted: no function matched " + ", ".join(functions)}
        if module:
            return {"instructions": int(m.group(1)), "by_primitive": by_primitive(out, module)}
        return {"instructions": int(m.group(1))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--levels", default="generic", help="comma-separated ISA levels (default: generic)")
    ap.add_argument("--paths", help="comma-separated paths of bench/summary.py, or 'quantize_mx fp16' "
                                    "(default: every path)")
    ap.add_argument("--partitions", type=int, default=4, help="partitions of each dequantize input (default 4)")
    ap.add_argument("--jobs", type=int, default=1, help="children run at once (default 1)")
    ap.add_argument("--program", action="store_true",
                    help="count the path's kernel program (translated where the level has it) instead of the kernel")
    ap.add_argument("--translations", choices=("on", "off"), default="on",
                    help="off: count the interpreter where an untraced call would run a translation")
    ap.add_argument("--by-primitive", nargs="?", type=int, const=12, default=0, metavar="N",
                    help="count a -g copy of each level's module and print the N functions (default 12) the most "
                         "instructions went to, per path (all of them in --json)")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    ap.add_argument("--child", nargs=3, metavar=("LEVEL", "PATH", "PARTITIONS"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(a.child[0], a.child[1], int(a.child[2]), a.program)
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("count_instructions: needs valgrind on PATH (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    if not 1 <= a.partitions <= 128 or a.jobs < 1:
        print("count_instructions: --partitions must be 1..128 and --jobs at least 1", file=sys.stderr)
        return 2
    summary = setup(a.partitions)
    from q7emu.errors import Q7Error
    from q7emu.kernels import extension
    names = a.paths.split(",") if a.paths else [r[0] for r in count_paths(summary)]
    rows = []
    try:
        for level in a.levels.split(","):
            extension.select_level(extension.isa_info()["built"], env=level)   # a level this build lacks: an error
            summary.use_level(level)
            for name in names:
                _, kfn, n_out, *_ = find_path(summary, name)
                rows.append({"level": level, "path": name, "program": a.program,
                             "translations": "" if a.program else a.translations, "outputs": n_out,
                             "primitives": summary.executed(lambda tr, kfn=kfn: kfn(1, tr))})
    except (BadArgument, Q7Error) as e:
        print(f"count_instructions: {e}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as debug_dir, ThreadPoolExecutor(max_workers=a.jobs) as pool:
        modules: dict[str, str | None] = {}
        try:
            if a.by_primitive and shutil.which("addr2line") is None:
                raise BadArgument("--by-primitive needs addr2line on PATH (Debian: apt-get install binutils)")
            for level in a.levels.split(","):
                modules[level] = debug_module(level, debug_dir) if a.by_primitive else None
        except BadArgument as e:
            print(f"count_instructions: {e}", file=sys.stderr)
            return 2
        counts = pool.map(lambda r: count(r["level"], r["path"], a.partitions, valgrind, a.program,
                                          a.translations, modules[r["level"]]), rows)
        for row, c in zip(rows, counts):
            row.update(c)
            if "instructions" in row:
                row["instructions_per_output"] = row["instructions"] / row["outputs"]
                row["instructions_per_64_outputs"] = 64 * row["instructions"] / row["outputs"]
                row["instructions_per_primitive"] = row["instructions"] / row["primitives"]
            if not a.json:
                print(format_row(row), flush=True)
                for fn, n in list(row.get("by_primitive", {}).items())[:a.by_primitive]:
                    print(f"    {fn:32s} {64 * n / row['outputs']:9,.0f} per 64 outputs "
                          f"({100 * n / row['instructions']:4.1f} %)", flush=True)
    if a.json:
        print(json.dumps({"format": "q7emu-bench-instructions", "version": 1, "partitions": a.partitions,
                          "rows": rows}, indent=1))
    return 0


def format_row(r: dict) -> str:
    name = r["path"] + (" (program)" if r.get("program") else " (kernel)" if r.get("translations") == "off" else "")
    head = f"{r['level']:8s} {name:27s} {r['outputs']:8d} outputs {r['primitives']:8d} primitives"
    if "error" in r:
        return f"{head}  no count: {r['error']}"
    return (f"{head} {r['instructions']:11d} instructions = {r['instructions_per_output']:6.1f} per output "
            f"({r['instructions_per_64_outputs']:,.0f} per 64 outputs), "
            f"{r['instructions_per_primitive']:6.1f} per primitive")


if __name__ == "__main__":
    sys.exit(main())
