"""q7emu.model.values, the plain-Python decoder the mismatch reports use (no ml_dtypes import in replay): every
code of every format against ml_dtypes / numpy (independent implementations), the NF4 codebook against
q7emu.model.tables, and the texts a person reads."""
from __future__ import annotations

import math
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from q7emu.model import values
from q7emu.model.tables import NF4_QLORA


def _bf16(c):
    with np.errstate(invalid="ignore"):          # NaN patterns: ml_dtypes' cast warns, the value is NaN
        return c.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32).astype(np.float64)


# format -> (bits, the reference decoder: code array -> float64 values)
REFERENCES = {
    "E4M3": (8, lambda c: c.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)),
    "E5M2": (8, lambda c: c.astype(np.uint8).view(ml_dtypes.float8_e5m2).astype(np.float64)),
    "E8M0": (8, lambda c: c.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)),
    "E2M1": (4, lambda c: c.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)),
    "E2M3": (6, lambda c: c.astype(np.uint8).view(ml_dtypes.float6_e2m3fn).astype(np.float64)),
    "INT4": (4, lambda c: c.astype(np.uint8).view(ml_dtypes.int4).astype(np.float64)),
    "NF4": (4, lambda c: NF4_QLORA[c].astype(np.float64)),
    "FP16": (16, lambda c: c.astype(np.uint16).view(np.float16).astype(np.float64)),
    "BF16": (16, lambda c: _bf16(c)),
}


def same(a: float, b: float) -> bool:
    """Equal values, NaN equal to NaN, and the sign of a zero (and of a NaN) kept."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b) and math.copysign(1, a) == math.copysign(1, b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


@pytest.mark.parametrize("fmt", list(REFERENCES))
def test_every_code_decodes_as_the_reference_does(fmt):
    bits, ref = REFERENCES[fmt]
    codes = np.arange(1 << bits)
    want = ref(codes)
    bad = [(int(c), values.decode(int(c), fmt), float(w)) for c, w in zip(codes, want)
           if not same(values.decode(int(c), fmt), float(w))]
    assert not bad, bad[:8]
    assert values.FORMATS[fmt] == bits


def test_e8m0_ff_is_nan_or_2_128_when_read_as_nonan():
    assert math.isnan(values.decode(0xFF, "E8M0"))
    assert values.decode(0xFF, "E8M0", e8m0_nonan=True) == 2.0 ** 128


@pytest.mark.parametrize("code,fmt,text", [
    (0x39, "E5M2", "0x39 = 0.625 E5M2"),           # the example: 0x39 is E5M2 0.625, 0x38 0.5
    (0x38, "e5m2", "0x38 = 0.5 E5M2"),
    (0x7E, "E4M3", "0x7e = 448.0 E4M3"),            # E4M3 "fn" max
    (0x7F, "E4M3", "0x7f = NaN E4M3"),
    (0x7C, "E5M2", "0x7c = inf E5M2"),
    (0xFC, "E5M2", "0xfc = -inf E5M2"),
    (0x80, "E5M2", "0x80 = -0.0 E5M2"),
    (0x7F, "E8M0", "0x7f = 2^0 E8M0"),              # scales are powers of two
    (0x7A, "E8M0", "0x7a = 2^-5 E8M0"),
    (0x00, "E8M0", "0x00 = 2^-127 E8M0"),
    (0x7, "E2M1", "0x7 = 6.0 E2M1"),
    (0xF, "INT4", "0xf = -1.0 INT4"),
    (0x3C00, "FP16", "0x3c00 = 1.0 FP16"),
    (0x01, "E5M2", "0x01 = 2^-16 E5M2"),            # the smallest E5M2 subnormal
])
def test_format_value_texts(code, fmt, text):
    assert values.format_value(code, fmt) == text


@pytest.mark.parametrize("code,fmt", [(256, "E4M3"), (-1, "E5M2"), (16, "E2M1"), (64, "E2M3"), (1.0, "E4M3"),
                                      (True, "E4M3"), (0, "FP8")])
def test_bad_codes_and_formats_are_value_errors(code, fmt):
    with pytest.raises(ValueError):
        values.decode(code, fmt)


def test_the_decoder_imports_neither_numpy_nor_ml_dtypes():
    out = subprocess.run([sys.executable, "-c", "import sys, q7emu.model.values as v; v.decode(0x39, 'E5M2'); "
                          "print(sorted(m for m in ('numpy', 'ml_dtypes') if m in sys.modules))"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
