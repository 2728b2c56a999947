"""QuantizeMX's raw-bits source (``src_format``): a uint16 array of fp16 / bf16 bit patterns gives the bytes the
same values as float16 / ml_dtypes.bfloat16 give, on the kernel, the golden model and the kernel's program; bad
values name the argument. (That a replay of a bf16 case, which passes the bits, imports no ml_dtypes is
firmware_tests/cli/test_cli_imports.py's.)"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import q7emu
from q7emu.asm.kernels import quantize_mx_program
from q7emu.errors import InvalidArgument
from q7emu.golden import quantize_mx as golden_quantize_mx


def _bits(seed: int, shape=(32, 64)) -> np.ndarray:
    """Random fp16 / bf16 bit patterns, with the special ones (zeros, infinities, NaNs, subnormals) among them."""
    bits = np.random.default_rng(seed).integers(0, 1 << 16, size=shape, dtype=np.uint16)
    bits.flat[:8] = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x7C00, 0xFE00]
    return bits


@pytest.mark.parametrize("fmt,dtype", [("bfloat16", ml_dtypes.bfloat16), ("float16", np.float16)])
@pytest.mark.parametrize("run", ["kernel", "golden", "program"])
def test_raw_bits_give_the_bytes_the_typed_array_gives(fmt, dtype, run):
    fn = {"kernel": q7emu.quantize_mx, "golden": golden_quantize_mx,
          "program": lambda *a, **k: quantize_mx_program(None, *a, **k)}[run]
    bits = _bits(3 if fmt == "float16" else 4)
    for dst in ("e4m3", "e5m2"):
        want = fn(bits.view(dtype), dst)
        got = fn(bits, dst, src_format=fmt)
        assert all(np.array_equal(a, b) for a, b in zip(want, got)), (fmt, dst, run)


def test_bad_src_format_values_name_the_argument():
    bits = _bits(5)
    with pytest.raises(InvalidArgument, match="src_format"):
        q7emu.quantize_mx(bits, "e4m3", src_format="bf16")                       # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="src.dtype.*uint16"):
        q7emu.quantize_mx(bits.view(np.float16), "e4m3", src_format="float16")
    with pytest.raises(InvalidArgument, match="src.dtype"):
        q7emu.quantize_mx(bits, "e4m3")                                          # uint16 without src_format
