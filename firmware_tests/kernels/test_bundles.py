"""The kernels' bundle annotations are a legal VLIW schedule: inside one bundle issue no op reads a
register that an earlier op of the same bundle writes, and no two ops write the same register (a FLIX
bundle reads all its operands before any slot writes back). Checked on traces of every kernel variant."""
import ml_dtypes
import numpy as np
import pytest
from kernel_checks import DEQUANT_VARIANTS, bundle_issues

import q7emu
from q7emu.analysis.trace import Recorder

ZERO_REG = 250          # register indices >= 250 are immediates / memory offsets / lengths


def hazards(t):
    bad = []
    for rows in bundle_issues(t):
        written = set()
        for i in rows:
            op = t[i]
            srcs = {(o.kind, o.reg) for o in op.operands if o.role == 0 and o.reg < ZERO_REG}
            dsts = {(o.kind, o.reg) for o in op.operands if o.role == 1 and o.reg < ZERO_REG}
            if srcs & written or dsts & written:
                bad.append((op.seq, op.bundle, op.op, sorted(srcs & written), sorted(dsts & written)))
            written |= dsts
    return bad


DEQUANT = DEQUANT_VARIANTS


@pytest.mark.parametrize("fmt,group,knobs", DEQUANT)
def test_dequant_bundles_have_no_intra_bundle_hazards(fmt, group, knobs):
    words = 5 if group == 8 else (3 if fmt == 4 else 1)
    src = np.random.default_rng(fmt).integers(0, 256, (2, 4 * words * 3), dtype=np.uint8)
    rec = Recorder()
    q7emu.dequantize(src, fmt, group, trace=rec, **knobs)
    assert len(rec.trace) > 0
    assert hazards(rec.trace) == []


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("underflow", ["wrap", "clamp", "unclamped-data", "unwrapped-data"])
@pytest.mark.parametrize("nonfinite", ["sim", "ocp"])
def test_quantize_mx_bundles_have_no_intra_bundle_hazards(dtype, underflow, nonfinite):
    x = (np.random.default_rng(3).standard_normal((32, 20)) * 8).astype(dtype)
    x[0, 0] = np.inf
    rec = Recorder()
    q7emu.quantize_mx(x, underflow=underflow, nonfinite=nonfinite, trace=rec)
    assert hazards(rec.trace) == []


def test_the_checker_sees_a_hazard():
    # a hand-made trace: an op reads v3, which an earlier op of the same bundle writes
    from q7emu import registry
    from q7emu.analysis.trace import Trace
    _, labels, _ = registry.get("proc_4bit_non_mx").listing_run(1, {"fmt": 1, "knobs": {}})
    sel0 = next(tag for tag, name in labels.items() if name == "RB_SEL0")    # sllinx16 v3 = v2 << 4
    rec = Recorder()
    q7emu.dequantize(np.zeros((1, 4), np.uint8), 1, trace=rec)
    t = rec.trace
    rows = [i for i in range(len(t)) if t[i].bundle == sel0]
    assert len(rows) == 1 and t[rows[0]].op == "sllinx16"
    assert hazards(t) == []
    r = t.records.copy()
    sel = rows[0] + 1                                                 # RB_SEL1: or2nx8 v4 = v2 | v3
    assert t[sel].op == "or2nx8"
    r["bundle"][sel] = sel0                                           # pull it into RB_SEL0 (it reads v3)
    bad = hazards(Trace(r, t.operands, t.data, t.runs, t.case))
    assert len(bad) == 1 and bad[0][2] == "or2nx8"
