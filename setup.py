"""Build the q7emu Cython extensions from src/ (setuptools + Cython).

src/ is grouped by layer: src/primitives (register types and the IVP primitive families),
src/trace (the trace recorder the kernels write into) and src/kernels (the firmware kernels).
Each .pyx becomes the extension of the same name in the matching q7emu sub-package.
"""
import os
import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

if sys.platform == "win32":
    COMPILE_ARGS = ["/O2"]
else:
    COMPILE_ARGS = ["-O3"] + (["-march=native"] if os.environ.get("Q7EMU_NATIVE", "1") == "1" else [])
DIRECTIVES = {
    "language_level": "3",
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
}
INCLUDE = sorted(d.as_posix() for d in Path("src").iterdir() if d.is_dir())  # every layer folder of src/

#: extension module -> its Cython source: src/<layer>/_<name>.pyx builds q7emu.<layer>._<name>
MODULES = {f"q7emu.{pyx.parent.name}.{pyx.stem}": pyx.as_posix() for pyx in sorted(Path("src").glob("*/_*.pyx"))}
extensions = [Extension(name, [source], include_dirs=INCLUDE, extra_compile_args=COMPILE_ARGS)
              for name, source in MODULES.items()]

JOBS = os.cpu_count() or 1
setup(ext_modules=cythonize(extensions, include_path=INCLUDE, compiler_directives=DIRECTIVES, nthreads=JOBS),
      options={"build_ext": {"parallel": JOBS}})
