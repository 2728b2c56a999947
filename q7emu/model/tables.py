"""Model constants shared by the kernels, the golden models and the analysis tools (docs/model.md).

Only numbers live here; the code that uses them is in :mod:`q7emu.kernels` (the emulated firmware) and
:mod:`q7emu.golden` (the independent numpy models), which share nothing else.
"""
from __future__ import annotations

import numpy as np

from q7emu.model.format_table import FP8_FORMATS, fp8_format

__all__ = ["NF4_QLORA", "NF4_TABLES", "E4M3_MAX", "E5M2_MAX", "MAX_EXP", "MAX_VAL"]

#: docs/model.md ``nf4_table = qlora`` (bitsandbytes NF4 codebook), index 0..15, as float32 [docs/firmware.md §2.2
# (MED)].
NF4_QLORA: np.ndarray = np.array([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
], dtype=np.float32)
NF4_QLORA.setflags(write=False)

#: ``nf4_table`` knob value -> its codebook (float32 [16], read-only)
NF4_TABLES: dict[str, np.ndarray] = {"qlora": NF4_QLORA}

#: largest finite FP8 values: E4M3 "fn" (0x7E) and E5M2 (0x7B) -- the format table's ``max_value``
E4M3_MAX = fp8_format("float8_e4m3fn").max_value
E5M2_MAX = fp8_format("float8_e5m2").max_value

#: QuantizeMX max_exp per (``emax`` knob, dst dtype) -- docs/model.md §2 [docs/firmware.md §3.4, §8.1.11]; the format
#: table's ``max_exp``
MAX_EXP: dict[tuple[str, str], int] = {(emax, f.name): f.max_exp[emax] for emax in FP8_FORMATS[0].max_exp
                                       for f in FP8_FORMATS}
#: QuantizeMX clip limit per dst dtype (the same under every knob) -- docs/model.md §2
MAX_VAL: dict[str, float] = {f.name: f.max_value for f in FP8_FORMATS}
