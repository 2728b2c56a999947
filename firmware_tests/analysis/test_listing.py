"""Kernel listings (q7emu.analysis.listing): read off runs of the kernels, they predict what a kernel executes.

A listing is built from runs of two and three whole passes; the tests check it against runs it was not built from:
longer inputs, several partitions, a shorter last pass."""
from __future__ import annotations

import json

import numpy as np
import pytest

from q7emu import registry
from q7emu.analysis.listing import KERNELS, _config, all_variant_configs, build, variant_diff, variants
from q7emu.analysis.trace import Recorder


def _keys(trace) -> list[tuple]:
    """(bundle, mnemonic, registers, immediates) of every record: what a listing op fixes."""
    out = []
    for i in range(len(trace)):
        r = trace[i]
        ops = tuple((o.kind_name, o.role_name, o.reg if o.kind_name != "scalar" else None,
                     int.from_bytes(o.data, "little", signed=True) if o.kind_name == "scalar" and o.reg == 255
                     else None) for o in r.operands)
        out.append((int(r.bundle), r.op, ops))
    return out


def _run(kernel: str, cfg: dict, passes: int, tail: int = 0, partitions: int = 1) -> list[tuple]:
    """The records of a public-API run of ``passes`` whole passes (+ a shorter last pass of ``tail`` units) on
    ``partitions`` partitions (row blocks of 8 partitions for quantize_mx, which takes 32 partitions or more),
    traced."""
    import q7emu
    rng = np.random.default_rng(passes + 10 * tail)
    rec = Recorder()
    knobs = cfg.get("knobs", {})
    if kernel == "quantize_mx":
        x = rng.standard_normal((8 * partitions, 16 * passes + 4 * tail)).astype(
            np.float16 if cfg["src_dtype"] == "float16" else np.float32)
        if cfg["src_dtype"] == "bfloat16":
            import ml_dtypes
            x = x.astype(ml_dtypes.bfloat16)
        q7emu.quantize_mx(x, cfg["dst_dtype"], trace=rec, cores=1, **knobs)
    else:
        fmt = cfg["fmt"]
        group = registry.get(kernel).group_size or 0
        unit = 20 if group == 8 else (12 if fmt == 4 else 4)                 # source bytes of a tail unit
        per = 40 if group == 8 else (48 if fmt == 4 else 32)
        src = rng.integers(0, 256, (partitions, per * passes + unit * tail), dtype=np.uint8)
        q7emu.dequantize(src, fmt, group, trace=rec, cores=1, **knobs)
    return _keys(rec.trace)


def _want(lst, passes: int, partitions: int = 1) -> list[tuple]:
    one = [(o.bundle, o.mnemonic, tuple(x.key()[:2] + (x.reg, x.key()[3]) for x in o.operands))
           for o in lst.entry + lst.passes * passes + lst.exit]
    return one * partitions


def _parts(kernel: str) -> int:
    """Partitions (row blocks) of a multi-partition run: QuantizeMX's smallest input is 32 partitions."""
    return 4 if kernel == "quantize_mx" else 2


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_listing_predicts_longer_runs(kernel):
    """Every configuration: entry + pass x 5 + exit is what a 5-pass run on several partitions executes (bundles,
    mnemonics, registers, immediates), though the listing was read off runs of two and three passes."""
    for cfg in all_variant_configs(kernel):
        lst = build(kernel, cfg.get("fmt"), cfg.get("knobs"), src_dtype=cfg.get("src_dtype"),
                    dst_dtype=cfg.get("dst_dtype"))
        assert lst.passes, (kernel, cfg)
        got = _run(kernel, lst.config, 5, partitions=_parts(kernel))
        assert got == _want(lst, 5, partitions=_parts(kernel)), (kernel, cfg)


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_short_last_pass_issues_the_same_ops(kernel):
    """A tail (a last pass shorter than the others) issues the pass's ops: only lengths and offsets differ."""
    lst = build(kernel)
    assert _run(kernel, lst.config, 2, tail=1, partitions=_parts(kernel)) == _want(lst, 3, _parts(kernel))


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_kernel_has_a_labelled_listing(kernel):
    lst = build(kernel)
    text = lst.format()
    assert kernel in text and "main loop, one pass:" in text and "B13" in text
    assert len(lst.passes) >= 10 and all(o.label != "?" for o in lst.all_ops())
    # every label of the kernel has a note, and no note names a label that does not exist
    e = registry.get(kernel)
    _, by_tag, notes = e.listing_run(1, lst.config)
    labels = set(by_tag.values())
    assert labels <= set(notes)
    for o in lst.all_ops():
        assert o.label.split("+")[0] in labels and o.note


def test_labels_and_notes_agree():
    """Every label the kernels use over all their paths has a note, and every note a label: the kernel programs
    share one note table (q7emu/kernels/programs/bundle_notes.py), which every listing gets."""
    labels: set[str] = set()
    tables = []
    for e in registry.KERNELS:
        for f in [f for f, _ in e.paths] or [None]:
            _, cfg = _config(e.name, f, None, None, None)
            _, by_tag, notes = e.listing_run(1, cfg)
            labels |= set(by_tag.values())
            tables.append(notes)
    assert len(tables) > len(registry.KERNELS) and all(t == tables[0] for t in tables)
    assert set(tables[0]) == labels, set(tables[0]) ^ labels
    assert all(isinstance(v, str) and v for v in tables[0].values())


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
    assert byq["mulus4tn16xr16"].kind == "firmware"             # block 1's divide MAC: the seed's form and registers
    assert {o.render_operands() for o in q.ops("pass") if o.mnemonic == "mulus4tn16xr16"} == {"wv0, v31, v7, pr8"}
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
    bynf = {o.mnemonic: o.provenance for o in nf.ops("pass")}
    # NF4 group 0 is the non-MX block's table lookup (docs/model.md §9.10): its load and dselnx16t, no MX unpack
    assert "sel2nx8i_s4" not in bynf and bynf["dselnx16t"].kind == "firmware"
    assert bynf["labvdcmprs2nx8_xp"].kind == "firmware" and len(nf.passes) == 6


def test_the_seed_registers_read_like_the_disassembly():
    """The listing renders operands in disassembly order (docs/intrinsics.md §2): the seeds' bundles, verbatim."""
    rb = build("proc_4bit_non_mx", "e2m1")
    texts = {o.text() for o in rb.passes}
    assert {"muluupan16xr16 wv3, v0, v23, pr3", "sel2nx8i v10, v26, v7, 53", "babssub2nx8 vb9, v8, v11, v1"} <= texts
    mx = build("proc_4bit_mx_8", "e2m1", {"mx_scale": "e8m0", "nibble_order": "low-first"})
    assert {"ultn_2xf32t vb1, v13, v16, vb9", "sel2nx8i_s4 v21, v17, v16, 0"} <= {o.text() for o in mx.passes}
    q = build("quantize_mx")
    assert {"srln_2x32 v14, v25, v5", "dextrprn_2x32 pr8, v14, v16, 5, 10"} <= {o.text() for o in q.all_ops()}


def test_one_listing_per_configuration_and_the_variants_differ_where_they_should():
    nonan = build("proc_4bit_mx_8", "nf4", {"mx_scale": "e8m0-nonan"})
    gate = build("proc_4bit_mx_8", "nf4", {"mx_scale": "e8m0"})
    assert "ultn_2xf32t" not in nonan.mnemonics() and "ultn_2xf32t" in gate.mnemonics()
    d = variant_diff(gate, nonan)
    assert d and all(ln[0] in "+-" for ln in d)
    assert any("ultn_2xf32t" in ln and ln.startswith("-") for ln in d)
    assert variant_diff(gate, gate) == []
    high = build("proc_4bit_mx_8", "nf4", {"nibble_order": "high-first"})
    assert any("sel2nx8i_s4 v21, v17, v16, 8" in ln for ln in variant_diff(gate, high))
    # defaults fill what is not given
    assert build("proc_4bit_non_mx").config == {"fmt": 1, "knobs": {"nibble_order": "low-first"}}
    assert len(variants("proc_4bit_mx_8")) == len(all_variant_configs("proc_4bit_mx_8"))


def test_listing_cli(capsys):
    from q7emu.cli.main import main
    assert main(["listing", "proc_4bit_mx_8", "--fmt", "e2m1", "--knob", "mx_scale=e8m0"]) == 0
    out = capsys.readouterr().out
    assert "mulus4tan16xr16" in out and "0x010051a9" in out and "pr1" in out and "MX_GATE" in out
    assert main(["listing", "quantize_mx", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kernel"] == "quantize_mx" and d["pass"] and d["pass"][0]["label"]
    assert main(["listing", "proc_4bit_non_mx", "--variants"]) == 0
    out = capsys.readouterr().out
    assert "fmt=1 nibble_order=high-first: 5 line(s)" in out and "other 5 configuration(s)" in out
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
    # distinct ops of a pass: the two halves' and four groups' repeats (same bundle, registers, immediates) once
    pass_ops = list({o.key(): o for o in build("proc_4bit_mx_8", "nf4", {"mx_scale": "e8m0"}).ops("pass")}.values())
    fw = [o.mnemonic for o in pass_ops if o.provenance.kind == "firmware"]
    assert mx["seed_named"] == len(fw) and "mulus4tan16xr16" in fw and "dselnx16" in fw
    assert mx["share"] == len(fw) / len(pass_ops)
    q = build("quantize_mx").seed_report()
    # single-op seed "bundles" (@0x79ec srln_2x32, @0x22b5 dextrprn_2x32) are issued; the three-op ones are not
    assert q["bundles"] == 5 and sorted(q["bundles_present"]) == ["0x22b5", "0x79ec"]
    # both with the seed's registers: srln_2x32 v14,v25,v5 and dextrprn_2x32 pr8,v14,v16,5,10
    assert sorted(q["bundles_verbatim"]) == ["0x22b5", "0x79ec"]
