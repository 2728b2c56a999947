"""kernel_info tables: record bytes, built-in tables, round-trips, linear lookup, firmware miss messages."""
from __future__ import annotations

import pytest

from q7emu.errors import DispatchError, InvalidArgument
from q7emu.isa.enums import Engine, Generation
from q7emu.isa.kernel_info import (
    DRAM_HEADER_MAGIC,
    UNKNOWN_FUNC_VA,
    KernelInfoRecord,
    KernelInfoTable,
    builtin_tables,
    dve_table,
    engine_of,
    pool_table,
)


def test_documented_cayman_record():
    rec = KernelInfoRecord.from_bytes(bytes.fromhex("0000007bc44d0001"))
    assert (rec.opcode, rec.spec, rec.func_va) == (0x7B, 0, 0x01004DC4)
    assert rec.key == 0x7B000000
    assert KernelInfoRecord.make(0x7B, 0, 0x01004DC4).to_bytes() == bytes.fromhex("0000007bc44d0001")


def test_documented_maverick_record():
    t = pool_table("MAVERICK")
    assert t.records[16].to_bytes() == bytes.fromhex("0000007bec500000")


@pytest.mark.parametrize("gen", list(Generation))
def test_every_builtin_table_roundtrips(gen):
    for t in builtin_tables(gen).values():
        blob = t.to_bytes()
        assert len(blob) == 8 * len(t)
        back = KernelInfoTable.from_bytes(blob)
        assert back == t and back.to_bytes() == blob


def test_cayman_extisa0_contents():
    t = pool_table(Generation.CAYMAN)
    assert len(t) == 17 and len(t.to_bytes()) == 0x88
    assert [r.spec for r in t if r.opcode == 0xF0] == [0, 1, 2, 4, 3]   # not sorted
    assert t.find(0xF0, 3).func_va == 0x01003A60 and t.find(0xF0, 4).func_va == 0x010037A8
    assert t.lookup(0x7B).func_va == 0x01004DC4
    assert t.records[0].to_bytes() == bytes.fromhex("0000007e80000001")
    assert all(r.func_va_known for r in t)
    tabs = builtin_tables("CAYMAN")
    assert [len(tabs[f"EXTISA_{i}"]) for i in range(4)] == [17, 1, 2, 9]
    assert tabs["EXTISA_3"].find(0x7B).func_va == 0x01001964
    assert tabs["EXTISA_3"].find(0xF0, 7).func_va == 0x01003B64


def test_bounded_by_size_not_sentinel():
    blob = pool_table("CAYMAN").to_bytes() + DRAM_HEADER_MAGIC.to_bytes(4, "little") + bytes(4)
    assert blob[0x88:0x8C] == bytes.fromhex("34cb9960")
    t = KernelInfoTable.from_bytes(blob, size=0x88)
    assert len(t) == 17 and t == pool_table("CAYMAN")
    with pytest.raises(InvalidArgument):
        KernelInfoTable.from_bytes(blob, size=0x89)
    with pytest.raises(InvalidArgument):
        KernelInfoTable.from_bytes(blob, size=0x100)


def test_linear_lookup_first_match_and_full_key():
    recs = [KernelInfoRecord.make(0xF0, 4, 0x40), KernelInfoRecord.make(0xF0, 3, 0x30),
            KernelInfoRecord.make(0xF0, 3, 0x99), KernelInfoRecord(0x7B000001, 0x50)]
    t = KernelInfoTable(recs)
    assert t.lookup(0xF0, 3).func_va == 0x30
    assert t.find(0x7B) is None     # low half of the key word is compared too


def test_miss_messages_in_firmware_words():
    with pytest.raises(DispatchError, match=r"^UNKNOWN OPCODE=0x7b\b"):
        pool_table("SUNDA").lookup(0x7B)
    with pytest.raises(DispatchError, match=r"^UNKNOWN OPCODE=0xe3\b"):
        dve_table("CAYMAN").lookup(0xE3)
    with pytest.raises(DispatchError, match=r"^UNKNOWN EXTENDED OPCODE=5\b"):
        pool_table("CAYMAN").lookup(0xF0, 5)


def test_generation_tables():
    for g in ("MARIANA", "MARIANA_PLUS"):
        t = pool_table(g)
        assert [r.key for r in t] == [r.key for r in pool_table("CAYMAN")]
        assert t.lookup(0x7B).func_va == 0x01004E04
        assert sum(r.func_va_known for r in t) == 1
    assert pool_table("MAVERICK").lookup(0x7B).func_va == 0x000050EC
    sunda = pool_table("SUNDA")
    assert len(sunda) == 18 and sunda.find(0x7B) is None and all(r.spec == 0 for r in sunda)
    assert all(r.func_va == UNKNOWN_FUNC_VA for r in sunda)
    for g in Generation:
        has = dve_table(g).find(0xE3) is not None
        assert has == (g.nc_version >= 4)
        assert pool_table(g).find(0xE3) is None      # 0xE3 is never a POOL opcode
    assert engine_of(0xE3) is Engine.DVE and engine_of(0x7B) is Engine.POOL


def test_format_lists_records():
    text = pool_table("CAYMAN").format()
    assert "00 00 00 7b c4 4d 00 01" in text and "0x01004dc4" in text
