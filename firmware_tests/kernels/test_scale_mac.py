"""The block scale goes through the MAC (docs/model.md §9.4): in a trace, pr1 (TensorDequantize MX) and pr8..pr11
(QuantizeMX) carry the data's own scale, and the MACs that read them are the ones that scale the data.

Expected values come from the input (the scale bytes written into it) or from the golden model's scale bytes,
never from the kernel's output."""
import ml_dtypes
import numpy as np

import q7emu
from q7emu.analysis.trace import Recorder
from q7emu.golden.quantize_mx import quantize_mx as golden_quantize_mx


def _pr_values(trace, mnemonic, role):
    """The pr operand of every `mnemonic` record with that role (0 src, 1 dst), as unsigned 64-bit ints."""
    out = []
    for i in range(len(trace)):
        op = trace[i]
        if op.op == mnemonic:
            out += [int.from_bytes(o.data, "little") for o in op.operands if o.kind_name == "pr" and o.role == role]
    return out


def test_pr1_carries_each_groups_scale_byte():
    rng = np.random.default_rng(5)
    src = rng.integers(0, 256, (2, 80), dtype=np.uint8)
    scales = np.array([[3, 250, 127, 128, 0, 17, 200, 64, 1, 2, 99, 140, 141, 142, 143, 254],
                       [9, 8, 7, 6, 5, 4, 3, 2, 255, 254, 253, 252, 251, 250, 249, 248]], np.uint8)
    src[:, 0::5] = scales                                   # scale-first: byte 5g is group g's scale
    rec = Recorder(ops=["extrpr2nx8", "mulus4tan16xr16"])
    q7emu.dequantize(src, 1, 8, trace=rec)
    t = rec.trace
    moved = _pr_values(t, "extrpr2nx8", 1)                  # the byte moved into pr1, group by group
    assert moved == scales.reshape(-1).tolist()
    used = _pr_values(t, "mulus4tan16xr16", 0)              # the pr each scale MAC multiplies by
    assert used == scales.reshape(-1).tolist()


def test_pr8_carries_minus_each_blocks_scale_exponent():
    x = (np.random.default_rng(6).standard_normal((32, 16)) * np.repeat([1e-3, 1, 40, 3e3], 4)).astype(
        ml_dtypes.bfloat16)
    _, want_scale = golden_quantize_mx(x, "float8_e4m3fn", scale_layout="compact")
    rec = Recorder(ops=["dextrprn_2x32", "mulus4tn16xr16", "mulus4tan16xr16"])
    q7emu.quantize_mx(x, "float8_e4m3fn", trace=rec)
    t = rec.trace
    # per 8-row block, blocks 1, 0, 2, 3 go into pr8, pr9, pr10, pr11 (block 1's is seed @0x22b5): minus the
    # block's scale exponent as pr's 16-bit field 2 (the high word's low half: tap 2 of the 4-tap MACs), the
    # other fields 0 (docs/model.md §9.4)
    order = [1, 0, 2, 3]
    want = [[((-int(s)) & 0xFFFF) << 32 for s in row] for row in np.asarray(want_scale)]
    got = _pr_values(t, "dextrprn_2x32", 1)
    assert got == [row[b] for row in want for b in order] and len({v for row in want for v in row}) > 4
    regs = [o.reg for i in range(len(t)) if t[i].op == "dextrprn_2x32" for o in t[i].operands
            if o.kind_name == "pr" and o.role == 1]
    assert regs == [8, 9, 10, 11] * len(want)
    # each row's four divide MACs read them: block 1's (the overwrite form, seed @0x66a6) first
    used = [int.from_bytes(o.data, "little") for i in range(len(t)) if t[i].op.startswith("mulus4t")
            for o in t[i].operands if o.kind_name == "pr"]
    assert used == [row[b] for row in want for _ in range(8) for b in order]
    assert [t[i].op for i in range(len(t)) if t[i].op.startswith("mulus4t")][:4] == \
        ["mulus4tn16xr16"] + ["mulus4tan16xr16"] * 3
