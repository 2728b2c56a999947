#!/usr/bin/env python3
"""Build the shipped example replay cases into examples/cases/ (deterministic).

One case per kernel path per generation that has it:

* 0x7B TensorDequantize (CAYMAN, MARIANA, MARIANA_PLUS, MAVERICK): proc_4bit_non_mx for each 4-bit fmt
  (e2m1, int4, nf4), proc_4bit_mx_8 for each 4-bit fmt, proc_6bit_non_mx (e2m3);
* 0xE3 QuantizeMX (MARIANA, MARIANA_PLUS, MAVERICK): e4m3 (fp16 source) and e5m2 (bf16 source).

Expected bytes come from the golden models (``backend="golden"``), never from the kernels. Default knobs.
Usage: ``python tools/make_example_cases.py [OUTDIR]`` (default examples/cases).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from q7emu import registry  # noqa: E402
from q7emu.isa.records import Addr4, S3D3TensDequant, Tensor3D, make_quantize_mx_record  # noqa: E402
from q7emu.machine.cases import Case, build_case, save_case  # noqa: E402
from q7emu.model.kernels import FMT_NAMES, PATH_RATIO, path_name  # noqa: E402

PARTITION_BYTES = 0x400
DEQUANT_GENS = ("CAYMAN", "MARIANA", "MARIANA_PLUS", "MAVERICK")
QUANT_GENS = ("MARIANA", "MARIANA_PLUS", "MAVERICK")
FMTS = {code: name for name, code in FMT_NAMES.items()}
#: the (fmt, group) pairs of every TensorDequantize kernel, in registry (KernelId) order
DEQUANT_PAIRS = [pair for e in registry.for_opcode(0x7B) for pair in e.paths]


def dequant_case(gen: str, fmt: int, group: int, seed: int) -> Case:
    """A 0x7B case with a 2-D strided source (two runs of words, gap between) and a contiguous destination."""
    rng = np.random.default_rng(seed)
    nac, p0 = 12, 3
    path = path_name(fmt, group)
    a, b = PATH_RATIO[path]             # source words : destination words of the path
    run = 2 * a                         # source words per run; two runs 16 words apart
    src_words = 2 * run
    dst_words = src_words * b // a
    src = Tensor3D(Addr4.sbuf(p0, 0x40, PARTITION_BYTES), (1, 16, 0), (run, 2, 1))
    dst = Tensor3D(Addr4.sbuf(p0, 0x100, PARTITION_BYTES), (1, 0, 0), (dst_words, 1, 1))
    rec = S3D3TensDequant(src=src, num_active_channels=nac, dequant_fmt=fmt, group_size=group, dst=dst)
    image = rng.integers(0, 256, (nac, 0x40 + 4 * (16 + run)), dtype=np.uint8)[:, 0x40:]
    if group == 8:   # keep most in-band scales near 127 so values are not all saturated / zero
        flat = image.reshape(nac, -1)
        for k in range(0, flat.shape[1] - 4, 5):
            flat[:, k] = rng.integers(120, 135, nac)   # scale-first layout: byte 0 of each 5-byte group
        flat[0, 0] = 0xFF                              # one NaN scale
    name = f"{gen.lower()}_7b_{path}_{FMTS[fmt]}"
    note = (f"TensorDequantize {path} fmt {fmt} ({FMTS[fmt]}) group {group} on {gen}: {nac} partitions from "
            f"{p0}, src 2 runs of {run} words (step 16 words), dst {dst_words} words; expected bytes from "
            "q7emu.golden.dequantize, default knobs")
    # the 16 - run words between the two source runs are never read: decoys that catch a wrong stride
    return build_case(rec.encode(), gen, [(p0, 0x40, image)], knobs={}, partition_bytes=PARTITION_BYTES,
                      note=note, name=name, backend="golden", allow_unread=True)


def quant_case(gen: str, out_dtype: str, seed: int) -> Case:
    """A 0xE3 case: a [64, 16] fp16 (e4m3 output) or bf16 (e5m2) tile with NaN, Inf and a zero block."""
    rng = np.random.default_rng(seed)
    nac, free = 64, 16
    in_dtype, np_dtype = (0x07, np.float16) if out_dtype == "e4m3" else (0x06, ml_dtypes.bfloat16)
    rec = make_quantize_mx_record(nac, free, in_dtype=in_dtype, out_dtype=0x0E if out_dtype == "e4m3" else 0x0F,
                                  src_partition=0, src_offset=0x20, dst_partition=0, dst_offset=0x80,
                                  scale_offset=0xC0, scale_pidx=4, partition_bytes=PARTITION_BYTES)
    mag = np.exp2(rng.integers(-12, 12, (nac // 8, free // 4))).repeat(8, 0).repeat(4, 1)
    x = (rng.standard_normal((nac, free)) * mag).astype(np_dtype)
    x[0, 0] = np.nan
    x[9, 5] = np.inf
    x[16:24, 8:12] = 0
    src = np.ascontiguousarray(x).view(np.uint8)
    name = f"{gen.lower()}_e3_quantize_mx_{out_dtype}"
    note = (f"QuantizeMX to {out_dtype} from {'fp16' if in_dtype == 7 else 'bf16'} on {gen}: [{nac}, {free}] tile "
            "at partition 0 byte 0x20, data at 0x80, scales at 0xc0 rows 4..7 of each quadrant; expected bytes "
            "from q7emu.golden.quantize_mx, default knobs")
    return build_case(rec.encode(), gen, [(0, 0x20, src)], knobs={}, partition_bytes=PARTITION_BYTES,
                      note=note, name=name, backend="golden")


def main(argv: list[str]) -> int:
    """Write every example case below argv[1] (default examples/cases); returns the exit status."""
    out = Path(argv[1]) if len(argv) > 1 else ROOT / "examples" / "cases"
    if out.exists():
        shutil.rmtree(out)
    seed = 1000
    n = 0
    for gen in DEQUANT_GENS:
        for fmt, group in DEQUANT_PAIRS:
            seed += 1
            case = dequant_case(gen, fmt, group, seed)
            save_case(case, out / gen.lower() / case.name)
            n += 1
    for gen in QUANT_GENS:
        for dt in ("e4m3", "e5m2"):
            seed += 1
            case = quant_case(gen, dt, seed)
            save_case(case, out / gen.lower() / case.name)
            n += 1
    print(f"wrote {n} cases to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
