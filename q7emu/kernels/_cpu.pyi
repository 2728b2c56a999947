# The type stub of the compiled q7emu.kernels._cpu (src/kernels/_cpu.pyx), which a type checker cannot read.
def levels() -> tuple[str, ...]:
    """The ISA levels this CPU supports, lowest first: ``("generic",)``, ``(..., "avx2")``,
    ``(..., "avx2", "avx512")``."""

def detects() -> bool:
    """Whether this build can detect levels above ``generic`` (GCC or Clang on x86)."""

def crc32_folds() -> bool:
    """Whether :func:`crc32` folds with PCLMULQDQ here (GCC or Clang on x86-64, a CPU that has it)."""

def crc32(data: object, value: int = 0) -> int:
    """``zlib.crc32(data, value)``, the same 32-bit value, with a contiguous buffer of 64 bytes or more folded by
    PCLMULQDQ where the CPU has it (zlib's alone otherwise)."""
