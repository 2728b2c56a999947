"""FLIX slot legality (docs/model.md §9.3, docs/firmware.md §6.3): every bundle the kernels issue fits the five
slots of a wide bundle (s0 LdSt, s1 Ld, s2 Mul, s3 ALU, s4 ALU): at most one MAC, two loads / stores / packs,
two ALU ops. Checked on traces of every TensorDequantize variant, and against the seed bundles themselves."""
import ml_dtypes
import numpy as np
import pytest
from kernel_checks import DEQUANT_VARIANTS as DEQUANT
from kernel_checks import bundle_issues

import q7emu
from q7emu.analysis.trace import Recorder
from q7emu.primitives.optable import assign_slots


def issued_ops(t):
    """(bundle, mnemonics) of each bundle issue of trace t."""
    names = t.mnemonics()
    for rows in bundle_issues(t):
        yield int(t.records["bundle"][rows[0]]), tuple(names[i] for i in rows)


# ---------------------------------------------------------------------- the slot model itself
@pytest.mark.parametrize("ops,legal", [
    (["mulus4tan16xr16", "bmin2nx8", "sel2nx8i_s4"], True),        # seed @0x010051a9: Mul, ALU, ALU2
    (["lv2nx8_i", "lv2nx8_i"], True),                               # s0 + s1
    (["lv2nx8_i", "lv2nx8_i", "lv2nx8_i"], False),                  # a third load: no slot
    (["mulus4tan16xr16", "mulsupn16xr16"], False),                  # two MACs: one Mul slot
    (["cvtg48n_2x32l", "muln_2x32"], False),                        # a wvec widen is a Mul-slot op too
    (["addnx16", "subnx16"], True),
    (["addnx16", "subnx16", "or2nx8"], False),                      # three ALU ops
    (["sel2nx8i_s4", "sel2nx8i_s4"], False),                        # one s4
    (["sav2nx8_xp", "sav2nx8_xp"], False),                          # stores only in s0
    (["sav2nx8_xp", "lav2nx8_xp"], True),
    (["packvrnrnx48", "packvrnrnx48"], False),                      # packs only in s1
    (["packvrnrnx48", "lav2nx8_xp"], True),                         # the load then takes s0
    (["l2a4nx8_ip", "lv2nx8_i"], False),                            # l2a4nx8_ip takes both LSU pipes
    (["l2a4nx8_ip", "mulus4tan16xr16", "addnx16", "subnx16"], True),
    ([], True),
])
def test_assign_slots(ops, legal):
    got = assign_slots(ops)
    assert (got is not None) == legal
    if got is not None:
        taken = [s for take in got for s in take]
        assert len(taken) == len(set(taken))


# the mnemonics of the seed bundles that are legible (docs/firmware.md §2.4, §3.6): each must fit the slots
SEED_BUNDLES = {
    "0x01004fc8": ["muluupan16xr16", "sel2nx8i", "babssub2nx8"],
    "0x01004dfc": ["labvdcmprs2nx8_xp", "oltnxf16t", "dselnx16t"],
    "0x010051a9": ["mulus4tan16xr16", "bmin2nx8", "sel2nx8i_s4"],
    "0x010051e1": ["cvtg48n_2x32l", "bminnx16", "bminn_2x32"],
    "0x010052ee": ["muln_2x32", "ultn_2xf32t", "sel2nx8i_s4"],
    "0x010053c0": ["dmulqa2n8xr8", "dselnx16"],
    "0x66a6": ["mulus4tn16xr16", "trunc16nxf16", "baddnormnx16"],
    "0x6c4b": ["muluspa2n8xr16", "dextrprn_2x32", "bsubnormnx16"],
    "0x216d": ["cvtg48n_2x32h", "ueqn_2xf32t", "sel2nx8i_s4"],
}


@pytest.mark.parametrize("where", sorted(SEED_BUNDLES))
def test_the_seed_bundles_fit_the_slot_classes(where):
    assert assign_slots(SEED_BUNDLES[where]) is not None, where


# ---------------------------------------------------------------------- the kernels
@pytest.mark.parametrize("fmt,group,knobs", DEQUANT)
def test_every_dequant_bundle_is_slot_legal(fmt, group, knobs):
    words = 5 if group == 8 else (3 if fmt == 4 else 1)
    src = np.random.default_rng(fmt + group).integers(0, 256, (2, 4 * words * 5), dtype=np.uint8)
    rec = Recorder()
    q7emu.dequantize(src, fmt, group, trace=rec, **knobs)
    issues = list(issued_ops(rec.trace))
    assert len(issues) > 20
    bad = sorted({(b, ops) for b, ops in issues if assign_slots(ops) is None})
    assert bad == [], bad[:5]


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("underflow", ["wrap", "clamp", "unclamped-data", "unwrapped-data"])
@pytest.mark.parametrize("nonfinite", ["sim", "ocp"])
def test_every_quantize_mx_bundle_is_slot_legal(dtype, underflow, nonfinite):
    x = (np.random.default_rng(3).standard_normal((32, 20)) * 8).astype(dtype)
    rec = Recorder()
    q7emu.quantize_mx(x, underflow=underflow, nonfinite=nonfinite, trace=rec)
    issues = list(issued_ops(rec.trace))
    assert len(issues) > 100
    bad = sorted({(b, ops) for b, ops in issues if assign_slots(ops) is None})
    assert bad == [], bad[:5]
