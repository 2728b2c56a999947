"""The seeds' FLIX bundles (seed 002 §5.3 and §7.1, transcribed in docs/firmware.md §2.4): each, pasted as printed,
is a one-line "illegible" error naming the operand to fill in; filled in, each assembles (its scalar slots
included), and runs. docs/asm.md §5 says which reading of sel2nx8i_s4 each supports; §8 walks one to a replay."""
import numpy as np
import pytest

from q7emu.asm import assemble
from q7emu.errors import AsmError

#: address -> (the bundle as the seeds print it, the first illegible operand's message, a filled-in reading)
SEEDS = {
    "0x010051a9": ("{ bbci.w15 a5,0,… ; addi.a a10,a1,20 ; ivp_mulus4tan16xr16 wv2,v26,v1,pr1 ; "
                   "ivp_bmin2nx8 vb3,v4,v20,v16 ; ivp_sel2nx8i_s4 v26,v3,v1,9 }",
                   "operand 3 of bbci.w15 is illegible ('…'): fill in label: a label",
                   "{ bbci.w15 a5,0,next ; addi.a a10,a1,20 ; ivp_mulus4tan16xr16 wv2,v26,v1,pr1 ; "
                   "ivp_bmin2nx8 vb3,v4,v20,v16 ; ivp_sel2nx8i_s4 v26,v3,v1,9 }"),
    "0x010051e1": ("{ ivp_cvtg48n_2x32l wv0,v29,v22 ; ivp_bminnx16 ; ivp_bminn_2x32 }",
                   "the operands of ivp_bminnx16 are missing (illegible in the disassembly?): "
                   "fill in flags, vt, va, vr",
                   "{ ivp_cvtg48n_2x32l wv0,v29,v22 ; ivp_bminnx16 vb1,v1,v2,v3 ; ivp_bminn_2x32 vb2,v4,v5,v6 }"),
    "0x010052ee": ("{ ivp_muln_2x32 ; ivp_ultn_2xf32t vb1,v13,v16,vb9 ; "
                   "ivp_sel2nx8i_s4 v21,v17,v16,0 }",
                   "the operands of ivp_muln_2x32 are missing (illegible in the disassembly?): fill in wv, va, vb",
                   "{ ivp_muln_2x32 wv0,v29,v4 ; ivp_ultn_2xf32t vb1,v13,v16,vb9 ; ivp_sel2nx8i_s4 v21,v17,v16,0 }"),
    "0x010053c0": ("{ ivp_dmulqa2n8xr8 wv3,wv1,v25,v9,v13,v29,pr0 ; ivp_dselnx16 v2,… }",
                   "operand 2 of ivp_dselnx16 is illegible ('…'): fill in even: a vec register v0..v31",
                   "{ ivp_dmulqa2n8xr8 wv3,wv1,v25,v9,v13,v29,pr0 ; ivp_dselnx16 v2,v3,v4,v5,v6 }"),
    "0x01004fc8": ("{ bbci.w15 a2,30,… ; extui a0,a4,1,4 ; ivp_muluupan16xr16 wv3,v0,v23,pr3 ; "
                   "ivp_sel2nx8i v10,v26,v7,53 ; ivp_babssub2nx8 vb9,v8,v11,v1 }",
                   "operand 3 of bbci.w15 is illegible ('…'): fill in label: a label",
                   "{ bbci.w15 a2,30,next ; extui a0,a4,1,4 ; ivp_muluupan16xr16 wv3,v0,v23,pr3 ; "
                   "ivp_sel2nx8i v10,v26,v7,53 ; ivp_babssub2nx8 vb9,v8,v11,v1 }"),
    # q7emu's labvdcmprs2nx8_xp takes (vt, vb, as, at): the seed's first operand vb12 is q7emu's second
    "0x01004dfc": ("{ ivp_labvdcmprs2nx8_xp vb12,… ; ivp_oltnxf16t vb2,… ; ivp_dselnx16t v0,… }",
                   "operand 2 of ivp_labvdcmprs2nx8_xp is illegible ('…'): fill in vb: a vbool register vb0..vb15",
                   "{ ivp_labvdcmprs2nx8_xp v2,vb12,a2,a3 ; ivp_oltnxf16t vb2,v16,v26,vb0 ; "
                   "ivp_dselnx16t v0,v1,v14,v14,v4,vb0 }"),
}


@pytest.mark.parametrize("address", sorted(SEEDS))
def test_a_seed_bundle_as_printed_names_what_to_fill_in(address):
    printed, message, _ = SEEDS[address]
    with pytest.raises(AsmError) as e:
        assemble(f"@{address}:\n  {printed}\n", name="seed.s")
    text = str(e.value)
    assert message in text and text.startswith("seed.s:2:") and "\n" not in text


@pytest.mark.parametrize("address", sorted(SEEDS))
@pytest.mark.parametrize("reading", ["unpack", "select"])
def test_a_filled_in_seed_bundle_assembles_and_runs(address, reading):
    _, _, filled = SEEDS[address]
    prog = assemble(f"  movi a2, 64\n  movi a3, 40\n@{address}:\n  {filled}\nnext:\n  retw\n",
                    readings={"sel2nx8i_s4": reading})
    bundle = prog.bundles[2]
    assert bundle.address == int(address, 16) and len(bundle.instrs) == filled.count(";") + 1
    sbuf = np.random.default_rng(1).integers(0, 256, (2, 256), dtype=np.uint8)
    run = prog.run(sbuf)
    assert list(run.steps) == [4, 4] or list(run.steps) == [3, 3]       # bbci may branch past nothing


def test_the_two_readings_of_sel2nx8i_s4_differ_where_the_facts_do():
    """@0x010052ee's sel2nx8i_s4 v21,v17,v16,0: the nibble unpack (q7emu's MX kernel) and B21's sel2nx8i in slot
    S4 (the even bytes) give different lanes; each reading runs the body its op table record names."""
    sbuf = np.zeros((1, 256), np.uint8)
    sbuf[0, :128] = np.arange(128, dtype=np.uint8) * 3
    text = ("movi a2, 0\n{ ivp_lv2nx8_i v17, a2, 0 ; ivp_lv2nx8_i v16, a2, 64 }\n"
            "ivp_sel2nx8i_s4 v21, v17, v16, 0\nmovi a3, 128\nivp_sv2nx8_ip v21, a3, 64\n")
    out = {}
    for reading in ("unpack", "select"):
        s = sbuf.copy()
        assemble(text, readings={"sel2nx8i_s4": reading}).run(s)
        out[reading] = s[0, 128:192]
    from q7emu.primitives import ivp
    v17, v16 = sbuf[0, :64], sbuf[0, 64:128]
    assert np.array_equal(out["unpack"], ivp.sel2nx8i_s4(v17, v16, 0).view(np.uint8))
    assert np.array_equal(out["select"], ivp.sel2nx8i(v17, v16, 0))
    assert not np.array_equal(out["unpack"], out["select"])


def test_the_quantize_mx_bundles_of_docs_firmware():
    """docs/firmware.md §3.6's clean 0xE3 bundles, as written there: @0x79ec, @0x22b5 and @0x6c4b assemble; @0x66a6
    writes v0 twice under q7emu's operand roles (trunc16nxf16 v0 and baddnormnx16 ..., v0, ...: the facts'
    register order or q7emu's reading of one of them is wrong), and the assembler says so."""
    for ok in ("{ ivp_srln_2x32 v14,v25,v5 ; ivp_bmaxn_2x32 vb0,v12,v5,v24 }",
               "ivp_dextrprn_2x32 pr8,v14,v16,5,10",
               "{ ivp_muluspa2n8xr16 wv1,v12,v26,pr6 ; ivp_dextrprn_2x32 pr8,v26,v2,12,13 ; "
               "ivp_bsubnormnx16 vb1,v28,v5,v26 }",
               "{ ivp_cvtg48n_2x32h wv2,v16,v4 ; ivp_ueqn_2xf32t vb8,v2,v17,vb5 ; ivp_sel2nx8i_s4 v18,v17,v22,16 }"):
        assemble(ok)
    with pytest.raises(AsmError, match="v0 is written twice in one bundle"):
        assemble("{ ivp_mulus4tn16xr16 wv0,v31,v7,pr8 ; ivp_trunc16nxf16 v0,v15,7 ; ivp_baddnormnx16 vb4,v0,v1,v0 }")
