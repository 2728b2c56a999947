# The type stub of the compiled q7emu.kernels._cpu (src/kernels/_cpu.pyx), which a type checker cannot read.
def levels() -> tuple[str, ...]:
    """The ISA levels this CPU supports, lowest first: ``("generic",)``, ``(..., "avx2")``,
    ``(..., "avx2", "avx512")``."""

def detects() -> bool:
    """Whether this build can detect levels above ``generic`` (GCC or Clang on x86)."""
