"""Build the q7emu Cython extensions from src/ (setuptools + Cython).

src/ is grouped by layer: src/primitives (register types and the IVP primitive families),
src/trace (the trace recorder the kernels write into) and src/kernels (the firmware kernels).
Each .pyx becomes the extension of the same name in the matching q7emu sub-package.
"""
import os
import sys

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
INCLUDE = ["src/primitives", "src/trace", "src/kernels"]

#: extension module -> its Cython source
MODULES = {
    "q7emu.primitives._ivp": "src/primitives/_ivp.pyx",
    "q7emu.kernels._dequant": "src/kernels/_dequant.pyx",
    "q7emu.kernels._quantize_mx": "src/kernels/_quantize_mx.pyx",
}
extensions = [Extension(name, [source], include_dirs=INCLUDE, extra_compile_args=COMPILE_ARGS)
              for name, source in MODULES.items()]

setup(ext_modules=cythonize(extensions, include_path=INCLUDE, compiler_directives=DIRECTIVES,
                            nthreads=os.cpu_count() or 1))
