"""Build the q7emu Cython extensions from src/ (setuptools + Cython, optimisation on)."""
import os
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup

COMPILE_ARGS = ["-O3"] + (["-march=native"] if os.environ.get("Q7EMU_NATIVE", "1") == "1" else []) if sys.platform != "win32" else ["/O2"]
DIRECTIVES = {
    "language_level": "3",
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
}

MODULES = ["_ivp", "_dequant", "_quantize_mx"]
extensions = [
    Extension(f"q7emu.{name}", [f"src/{name}.pyx"], include_dirs=["src"], extra_compile_args=COMPILE_ARGS)
    for name in MODULES if os.path.exists(f"src/{name}.pyx")
]

setup(
    ext_modules=cythonize(extensions, include_path=["src"], compiler_directives=DIRECTIVES),
)
