"""Kernel listings (q7emu.analysis.listing): derived from the sources, and equal to what the kernels execute."""
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from q7emu import registry
from q7emu.analysis import listing
from q7emu.analysis.listing import KERNELS, all_variant_configs, build

ROOT = Path(__file__).resolve().parents[2]
KIND = {1: "vec", 2: "wvec", 3: "vbool", 4: "pr", 5: "scalar"}


def parse_trace(raw: bytes) -> list[tuple]:
    """Raw trace records (src/trace/q7trace.pxd: a 48-byte header, char op[32] at 16) -> (partition, bundle,
    mnemonic, [(kind, role, reg, scalar)], kernel id)."""
    raw = bytes(memoryview(raw))
    out, off = [], 0
    while off < len(raw):
        seq, bundle, kernel, nops, nbytes, part = struct.unpack_from("<IHBBII", raw, off)
        op = raw[off + 16:off + 48].split(b"\0")[0].decode()
        p = off + 48
        ops = []
        for _ in range(nops):
            kind, role, reg, view, n = struct.unpack_from("<BBBBI", raw, p)
            val = struct.unpack_from("<q", raw, p + 8)[0] if kind == 5 else None
            ops.append((KIND[kind], "dst" if role else "src", reg, val))
            p += 8 + n
        assert p == off + nbytes
        out.append((part, bundle, op, ops, kernel))
        off += nbytes
    return out


def traced(kernel: str, cfg: dict, rng) -> tuple[list[tuple], int]:
    """Trace one partition (row block) over 3 passes, the last a tail; returns (records, passes).

    The extension's run() gets the arguments the kernel's module derives from the options (the registry
    entry's run_params) and the kernel id."""
    entry = registry.get(kernel)
    params = entry.run_params(fmt=cfg.get("fmt"), group_size=entry.group_size, knobs=cfg.get("knobs", {}),
                              src_dtype=cfg.get("src_dtype"), dst_dtype=cfg.get("dst_dtype"))
    ext = entry.load()
    if kernel == "quantize_mx":
        src = rng.integers(0, 1 << 16, size=(8, 40), dtype=np.uint16)
        data = np.zeros((8, 40), np.uint8)
        scale = np.zeros((1, 10), np.uint8)
        raw = ext.run(src, data, scale, scatter=False, trace=True, kernel_id=int(entry.kernel_id), **params)
    else:
        nbytes = {"proc_4bit_non_mx": 72, "proc_4bit_mx_8": 100, "proc_6bit_non_mx": 108}[kernel]
        out = {"proc_4bit_non_mx": 144, "proc_4bit_mx_8": 160, "proc_6bit_non_mx": 144}[kernel]
        src = rng.integers(0, 256, size=(1, nbytes), dtype=np.uint8)
        dst = np.zeros((1, out), np.uint8)
        raw = ext.run(src, dst, trace=True, kernel_id=int(entry.kernel_id), **params)
    recs = parse_trace(raw)
    assert {k for *_, k in recs} == {int(entry.kernel_id)}
    return [r[:4] for r in recs], 3


def _check(kernel: str, cfg: dict, rng) -> listing.Listing:
    lst = build(kernel, cfg.get("fmt"), cfg.get("knobs"), src_dtype=cfg.get("src_dtype"),
                dst_dtype=cfg.get("dst_dtype"), expand=True)
    recs, passes = traced(kernel, cfg, rng)
    want = lst.entry + lst.passes * passes + lst.exit
    assert len(recs) == len(want), (kernel, cfg, len(recs), len(want))
    for i, (rec, op) in enumerate(zip(recs, want)):
        _part, bundle, mnem, operands = rec
        where = f"{kernel} {cfg} op {i} ({op.source})"
        assert (bundle, mnem) == (op.bundle, op.mnemonic), where
        assert [(k, r, g) for k, r, g, _ in operands if k != "scalar"] == \
               [(o.kind, o.role, o.reg) for o in op.operands if o.kind != "scalar"], where
        scal = [v for k, _r, _g, v in operands if k == "scalar"]
        lst_scal = [o.value for o in op.operands if o.kind == "scalar"]
        assert len(scal) == len(lst_scal), where
        for got, exp in zip(scal, lst_scal):
            if exp is not None:
                assert got == exp, where
    return lst


@pytest.mark.parametrize("kernel", KERNELS)
def test_listing_ops_are_the_executed_ops(kernel):
    """Every configuration: the expanded listing (entry + pass x 3) is the traced (bundle, mnemonic, operand
    registers, known immediates) sequence; every branch arm the listing shows is taken by some configuration."""
    rng = np.random.default_rng(7)
    taken = set()
    cfgs = all_variant_configs(kernel)
    assert cfgs
    for cfg in cfgs:
        taken |= _check(kernel, cfg, rng).taken
    # the branch arms the all-variants listing shows are exactly the arms the traced configurations took
    full = build(kernel)
    # (proc_6bit_non_mx shows only the FP6 arm of the non-MX body it shares with proc_4bit_non_mx)
    assert full.arms == taken, (sorted(full.arms - taken), sorted(taken - full.arms))


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_kernel_has_a_listing(kernel, capsys):
    text = build(kernel).format()
    assert kernel in text and "main loop" in text and "B1" in text
    ops = build(kernel).ops("pass")
    assert len(ops) >= 10
    assert all(o.bundle is not None for o in ops)


def test_listings_json_is_generated_from_the_sources():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_listings.py"), "--check"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


def test_firmware_provenance_in_listings():
    mx = build("proc_4bit_mx_8", "e2m1", {"mx_scale": "e8m0"})
    by = {o.mnemonic: o.provenance for o in mx.ops("entry") + mx.ops("pass")}
    assert by["mulus4tan16xr16"].kind == "firmware"             # the scale MAC (pr1 = the group's scale byte)
    assert "@0x010051a9" in by["mulus4tan16xr16"].label
    assert by["dselnx16"].kind == "firmware" and "0x010053c0" in by["dselnx16"].label
    assert by["ultn_2xf32t"].kind == "firmware" and "0x010052ee" in by["ultn_2xf32t"].label
    assert by["sel2nx8i_s4"].kind == "firmware"
    assert by["addnx16"].kind == "q7emu"
    q = build("quantize_mx")
    byq = {o.mnemonic: o.provenance for o in q.ops("entry") + q.ops("pass")}
    # the divide MACs accumulate: the seed's overwrite form mulus4tn16xr16 @0x66a6 names their family
    assert byq["mulus4tan16xr16"].kind == "firmware~" and "0x66a6" in byq["mulus4tan16xr16"].label
    assert byq["mulus4tn16xr16"].kind == "firmware"             # block 0's divide MAC: the seed's form and registers
    assert [o.render_operands() for o in q.ops("pass") if o.mnemonic == "mulus4tn16xr16"] == ["wv0, v31, v7, pr8"]
    assert byq["dextrprn_2x32"].kind == "firmware" and "0x22b5" in byq["dextrprn_2x32"].label
    assert q.seed_report()["bundles_conflicting"] == {"0x66a6": {"v0": ["trunc16nxf16", "baddnormnx16"]}}
    assert "@0x66a6 v0 by trunc16nxf16 and baddnormnx16" in q.format()
    assert mx.seed_report()["bundles_conflicting"] == {}
    assert byq["srln_2x32"].kind == "firmware" and "0x79ec" in byq["srln_2x32"].label
    nm = build("proc_4bit_non_mx", "int4")
    bynm = {o.mnemonic: o.provenance for o in nm.ops("pass")}
    assert bynm["sel2nx8i"].kind == "firmware" and "0x01004fc8" in bynm["sel2nx8i"].label   # §2.4 non-MX list
    assert bynm["muluupan16xr16"].kind == "firmware" and bynm["babssubunx16"].kind == "firmware"
    assert bynm["labvdcmprs2nx8_xp"].kind == "firmware" and "0x01004dfc" in bynm["labvdcmprs2nx8_xp"].label
    assert bynm["dselnx16t"].kind == "firmware" and bynm["sllinx16"].kind == "q7emu"
    nf = build("proc_4bit_non_mx", "nf4")
    assert {o.mnemonic: o.provenance for o in nf.ops("pass")}["sel2nx8i_s4"].kind == "q7emu"   # MX list only


def test_a_bundle_split_by_a_resolved_variant_keeps_one_header():
    # RB_PR3's second extrprn_2x32 (FP6 only) and RB_SIGN's MAC come after a resolved `if cfg.fp6`: the same
    # bundle, so no second "B<n>" header (a comment of its own goes on a continuation line)
    from q7emu.analysis.listing import data
    enums = data()["modules"]["dequant"]["enums"]
    text = build("proc_6bit_non_mx", None, {"fp6_packing": "lsb-first"}).format().splitlines()
    for label in ("RB_PR3", "RB_SIGN", "RB_MAC1"):              # none of them is in the exit section
        heads = [ln for ln in text if ln.lstrip().startswith(f"B{enums[label]} ")]
        assert len(heads) == 1, (label, heads)
    assert any(ln.strip().startswith("; RB_SIGN: RE-BIAS MAC") for ln in text)


def test_variants_shown_and_resolved():
    open_ = build("proc_4bit_mx_8", "nf4").format()
    assert "[variant] if cfg.nan_gate" in open_ and 'mx_scale == "e8m0"' in open_
    assert "[variant] if cfg.high_first" in open_          # the first unpack's immediate (seed @0x010052ee: 0)
    closed = build("proc_4bit_mx_8", "nf4", {"mx_scale": "e8m0-nonan", "nibble_order": "low-first"}).format()
    assert "[variant]" not in closed and "ultn_2xf32t" not in closed
    fmt_open = build("proc_4bit_non_mx").format()
    assert "[variant] if cfg.rebias" in fmt_open and "decode_nf4" in fmt_open   # the re-bias and NF4 arms
    only_e2m1 = build("proc_4bit_non_mx", "e2m1").format()
    assert "[variant] if cfg.high_first" in only_e2m1 and "dselnx16 " not in only_e2m1   # the selector's two arms
    low_first = build("proc_4bit_non_mx", "e2m1", {"nibble_order": "low-first"}).format()
    assert "[variant]" not in low_first and "dselnx16t v0, v1" in low_first


def test_listing_cli(capsys):
    from q7emu.cli.main import main
    assert main(["listing", "proc_4bit_mx_8", "--fmt", "e2m1", "--knob", "mx_scale=e8m0"]) == 0
    out = capsys.readouterr().out
    assert "mulus4tan16xr16" in out and "0x010051a9" in out and "pr1" in out
    assert main(["listing", "quantize_mx", "--json"]) == 0
    import json
    d = json.loads(capsys.readouterr().out)
    assert d["kernel"] == "quantize_mx" and d["pass"]
    assert main(["listing", "nope"]) == 2
    assert main(["listing", "proc_6bit_non_mx", "--fmt", "e2m1"]) == 2


def test_seed_report_counts_the_path_vocabulary():
    mx = build("proc_4bit_mx_8", "nf4", {"mx_scale": "e8m0"}).seed_report()
    # of 0x010051a9, 0x010051e1, 0x010052ee, 0x010053c0: the NaN-scale gate's bundle (e8m0 only)
    assert mx["bundles"] == 4 and mx["bundles_present"] == ["0x010052ee"]
    low = build("proc_4bit_mx_8", "nf4", {"mx_scale": "e8m0", "nibble_order": "low-first"}).seed_report()
    assert low["bundles_verbatim"] == ["0x010052ee"]                   # { muln_2x32 ; ultn_2xf32t vb1,v13,v16,vb9 ;
    high = build("proc_4bit_mx_8", "nf4", {"mx_scale": "e8m0", "nibble_order": "high-first"}).seed_report()
    assert high["bundles_verbatim"] == []                              # sel2nx8i_s4 v21,v17,v16,0 }: imm 8 here
    nonan = build("proc_4bit_mx_8", "nf4", {"mx_scale": "e8m0-nonan"}).seed_report()
    assert nonan["bundles_present"] == []                              # no gate, no scale factors
    pass_ops = build("proc_4bit_mx_8", "nf4", {"mx_scale": "e8m0"}).ops("pass")
    fw = [o.mnemonic for o in pass_ops if o.provenance.kind == "firmware"]
    assert mx["seed_named"] == len(fw) and "mulus4tan16xr16" in fw and "dselnx16" in fw
    assert mx["share"] == len(fw) / len(pass_ops)
    q = build("quantize_mx").seed_report()
    # single-op seed "bundles" (@0x79ec srln_2x32, @0x22b5 dextrprn_2x32) are issued; the three-op ones are not
    assert q["bundles"] == 5 and sorted(q["bundles_present"]) == ["0x22b5", "0x79ec"]
    # both with the seed's registers: srln_2x32 v14,v25,v5 and dextrprn_2x32 pr8,v14,v16,5,10
    assert sorted(q["bundles_verbatim"]) == ["0x22b5", "0x79ec"]
