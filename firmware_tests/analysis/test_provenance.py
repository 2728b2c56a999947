"""q7emu.analysis.provenance: firmware facts per path, op classification, the ops table and the README section."""
from __future__ import annotations

import re
from pathlib import Path

from q7emu.analysis.provenance import (
    KERNELS,
    PATH_FACTS,
    PRIMITIVE_CLASSES,
    accumulate_base,
    classify,
    format_ops_table,
    primitive_class,
    primitive_rows,
)

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "docs" / "firmware.md"   # the firmware facts the transcription must match


def _spec_section(text: str, head: str) -> str:
    a = text.index(head)
    b = text.index("\n### ", a + 1)
    return text[a:b]


def test_facts_are_in_spec():
    """Every transcribed mnemonic and bundle address appears in its docs/firmware.md section."""
    text = FACTS.read_text()
    sections = {"§2.4": _spec_section(text, "### 2.4"), "§3.6": _spec_section(text, "### 3.6")}
    for kernel, facts in PATH_FACTS.items():
        for f in facts:
            sec = sections[f.section]
            assert re.search(rf"ivp_{re.escape(f.mnemonic)}\b", sec), (kernel, f.mnemonic)
            for a in f.addresses:
                # the text from the address to the next address names the mnemonic (the bundle at that address)
                i = sec.index(f"@{a}")
                j = sec.find("@0x", i + 1)
                assert f"ivp_{f.mnemonic}" in sec[i:j if j > 0 else len(sec)], (kernel, f.mnemonic, a)


def test_accumulate_forms():
    assert accumulate_base("mulus4tan16xr16") == "mulus4tn16xr16"
    assert accumulate_base("dmulqa2n8xr8") == "dmulq2n8xr8"
    assert accumulate_base("muluupan16xr16") == "muluupn16xr16"
    assert accumulate_base("mulan_2x32") == "muln_2x32"
    assert accumulate_base("sel2nx8i_s4") == "sel2nx8i_s4"
    assert accumulate_base("and2nx8") == "and2nx8"


def test_classify():
    p = classify("proc_4bit_mx_8", "mulus4tn16xr16")
    assert p.kind == "firmware~" and p.facts[0].mnemonic == "mulus4tan16xr16"
    assert "@0x010051a9" in p.label
    assert classify("quantize_mx", "mulus4tn16xr16").kind == "firmware"
    assert classify("proc_4bit_non_mx", "sel2nx8i_s4").kind == "q7emu"     # slot forms never match
    assert classify("proc_4bit_mx_8", "sel2nx8i_s4").kind == "firmware"
    assert classify("proc_6bit_non_mx", "sel2nx8i").kind == "firmware"
    assert classify("quantize_mx", "addnx16").kind == "q7emu"
    assert set(KERNELS) == {"proc_4bit_non_mx", "proc_4bit_mx_8", "proc_6bit_non_mx", "quantize_mx"}


def test_primitive_classes():
    assert primitive_class("SPEC HIGH") == "SPEC HIGH"
    assert primitive_class("SPEC MED (lane wiring)") == "SPEC MED"
    assert primitive_class("q7emu choice (4t lane map)") == "q7emu choice"
    rows = primitive_rows()
    assert rows and all(r.cls in PRIMITIVE_CLASSES for r in rows)
    by = {r.mnemonic: r for r in rows}
    assert set(by["mulus4tan16xr16"].kernels) == {"proc_4bit_mx_8", "quantize_mx"}
    assert by["labvdcmprs2nx8_xp"].cls == "SPEC MED"


def test_format_ops_table():
    from q7emu.primitives import ivp
    text = format_ops_table()
    lines = text.splitlines()
    names = [r.mnemonic for r in ivp.catalog()]
    assert len(lines) == len(names) + 2
    for name, line in zip(names, lines[1:]):
        assert line.split()[0] == name
        assert any(c in line for c in PRIMITIVE_CLASSES)
    assert "mx8" in next(row for row in lines if row.startswith("mulus4tan16xr16 "))


def test_readme_known_section_is_generated():
    """README's section is what tools/gen_known_section.py writes (run in this process, so the listings it reads
    are the ones the listing tests built: the listing module caches each configuration's)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen_known_section", ROOT / "tools" / "gen_known_section.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    readme = (ROOT / "README.md").read_text()
    assert gen.render(readme) == readme, "README.md's known section is stale: run python tools/gen_known_section.py"
    assert "<!-- known:begin -->" in readme and "## What is known and what is modelled" in readme


def test_seed_bundle_writes_follow_the_operand_roles(monkeypatch):
    from q7emu.analysis import path_facts
    # the MAC reads v26 while the unpack writes it: a read of a register another op writes is VLIW, not a conflict
    w = path_facts.seed_bundle_writes("0x010051a9")
    assert w == {"wv2": ("mulus4tan16xr16",), "vb3": ("bmin2nx8",), "v4": ("bmin2nx8",), "v26": ("sel2nx8i_s4",)}
    # as docs/firmware.md §3.6 gives @0x66a6, trunc16nxf16 and baddnormnx16 both write v0; no other seed bundle
    # writes a register twice
    conflicts = {a: c for a in path_facts.SEED_OPERANDS if (c := path_facts.seed_write_conflicts(a))}
    assert conflicts == {"0x66a6": {"v0": ("trunc16nxf16", "baddnormnx16")}}
    # an op given only in part ("...") does not count: its operand order is open
    monkeypatch.setitem(path_facts.SEED_OPERANDS, "0xtest", {"addnx16": ("v1", "v2", "v3"),
                                                              "subnx16": ("v1", "..."), "and2nx8": ("v3", "v1", "v1")})
    assert path_facts.seed_write_conflicts("0xtest") == {}
    monkeypatch.setitem(path_facts.SEED_OPERANDS, "0xtest",
                        {"addnx16": ("v1", "v2", "v3"), "and2nx8": ("v1", "v2", "v2")})
    assert path_facts.seed_write_conflicts("0xtest") == {"v1": ("addnx16", "and2nx8")}
