"""Records: exact 64-byte layouts, field offsets, ADDR4 forms, and round-trips (hypothesis)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from q7emu.errors import InvalidArgument
from q7emu.isa.enums import DTYPE, AddrMarker, DequantFmt, DType, Generation, is_cptc
from q7emu.isa.records import (
    Addr4,
    Events,
    Header,
    MemPattern3D,
    MxMemPattern1D,
    MxTensor1D,
    MxTensorV2,
    RawRecord,
    S3D3TensDequant,
    S3DMX1Quant,
    Tensor3D,
    decode_record,
    parse_hex,
)

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
i16 = st.integers(-0x8000, 0x7FFF)
i8 = st.integers(-0x80, 0x7F)


def raw(n: int):
    return st.binary(min_size=n, max_size=n)


headers = st.builds(Header, u8, u8, u8, u8)
events = st.builds(Events, u8, u8, u8, u8, u32)
addr4s = st.builds(Addr4, u32)
tensor3ds = st.builds(Tensor3D, addr4s, st.tuples(i16, i16, i16), st.tuples(u16, u16, u16))
mxtensor1ds = st.builds(MxTensor1D, addr4s, addr4s, u16, i8, u8, raw(4))
mxtensorv2s = st.builds(MxTensorV2, addr4s, addr4s, st.tuples(u8, u8), i16, i16, u8, u8)
dequants = st.builds(S3D3TensDequant, headers, events, tensor3ds, raw(4), u8, u8, u8, u8, u8, raw(7), tensor3ds,
                     raw(4))
quants = st.builds(S3DMX1Quant, headers, events, raw(4), tensor3ds, raw(1), u8, u8, u8, raw(12), mxtensor1ds)
raws = st.builds(RawRecord, headers, events, raw(52))

ALL = [(Header, headers), (Events, events), (Addr4, addr4s), (Tensor3D, tensor3ds), (MxTensor1D, mxtensor1ds),
       (MxTensorV2, mxtensorv2s), (S3D3TensDequant, dequants), (S3DMX1Quant, quants), (RawRecord, raws)]


@pytest.mark.parametrize("cls,strategy", ALL, ids=[c.__name__ for c, _ in ALL])
def test_struct_roundtrip_object(cls, strategy):
    @settings(max_examples=200, deadline=None)
    @given(strategy)
    def run(obj):
        data = obj.encode()
        assert len(data) == cls.SIZE
        assert cls.decode(data) == obj
    run()


@pytest.mark.parametrize("cls", [Header, Events, Addr4, Tensor3D, MxTensor1D, MxTensorV2, MemPattern3D,
                                 MxMemPattern1D, S3D3TensDequant, S3DMX1Quant, RawRecord])
def test_struct_roundtrip_bytes(cls):
    @settings(max_examples=200, deadline=None)
    @given(st.binary(min_size=cls.SIZE, max_size=cls.SIZE))
    def run(data):
        assert cls.decode(data).encode() == data
    run()


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=64, max_size=64))
def test_decode_record_dispatches_on_opcode(data):
    rec = decode_record(data)
    assert rec.encode() == data
    expected = {0x7B: S3D3TensDequant, 0xE3: S3DMX1Quant}.get(data[0], RawRecord)
    assert type(rec) is expected


def test_dequant_field_offsets():
    rec = S3D3TensDequant(
        header=Header(0x7B, 0x10, 0xAA, 0xBB), events=Events(1, 2, 3, 4, 0x11223344),
        src=Tensor3D(Addr4(0x01020304), (-1, 2, -3), (5, 6, 7)), in_dtype=0x09, out_dtype=0x0A,
        num_active_channels=0x80, dequant_fmt=3, group_size=8,
        dst=Tensor3D(Addr4(0xA0B0C0D0), (0x7FFF, -0x8000, 0), (0xFFFF, 1, 2)))
    b = rec.encode()
    assert len(b) == 64
    assert b[0:4] == bytes([0x7B, 0x10, 0xAA, 0xBB])
    assert b[4:12] == bytes([1, 2, 3, 4, 0x44, 0x33, 0x22, 0x11])
    assert b[12:16] == bytes([4, 3, 2, 1])
    assert b[16:18] == b"\xff\xff" and b[18:20] == b"\x02\x00" and b[22:24] == b"\x05\x00"
    assert b[28:32] == bytes(4)
    assert b[32:37] == bytes([0x09, 0x0A, 0x80, 3, 8])
    assert b[37:44] == bytes(7)
    assert b[44:48] == bytes([0xD0, 0xC0, 0xB0, 0xA0])
    assert b[48:50] == b"\xff\x7f" and b[50:52] == b"\x00\x80" and b[54:56] == b"\xff\xff"
    assert b[60:64] == bytes(4)


def test_quant_field_offsets():
    rec = S3DMX1Quant(src=Tensor3D(Addr4(0x100), (1, 0, 0), (8, 1, 1)), num_active_channels=64, in_dtype=6,
                      out_dtype=0x0F,
                      dst=MxTensor1D(Addr4(0x200), Addr4(0x300), 0x1234, -2, 7, bytes(4)))
    b = rec.encode()
    assert b[0] == 0xE3 and b[12:16] == bytes(4)
    assert b[16:20] == (0x100).to_bytes(4, "little") and b[26:28] == b"\x08\x00"
    assert b[32] == 0 and b[33:36] == bytes([64, 6, 0x0F]) and b[36:48] == bytes(12)
    assert b[48:52] == (0x200).to_bytes(4, "little") and b[52:56] == (0x300).to_bytes(4, "little")
    assert b[56:58] == b"\x34\x12" and b[58] == 0xFE and b[59] == 7 and b[60:64] == bytes(4)


def test_addr4_forms():
    r = Addr4.register(3, AddrMarker.ADDR_REG)
    assert r.encode() == bytes([3, 0, 0, 0x80])
    assert not r.is_immediate and r.regnum == 3 and r.form == "addr_reg" and not r.shape_from_register
    for m in (0x40, 0xC0):
        assert Addr4.register(1, m).shape_from_register
    for m in (0x20, 0xA0):
        assert not Addr4.register(1, m).is_immediate
    imm = Addr4.sbuf(5, 0x10, 0x1000)
    assert imm.is_immediate and imm.raw == 0x5010 and imm.locate(0x1000) == (5, 0x10)
    assert Addr4.immediate(0x02000000).is_psum
    assert Addr4.sbuf(127, 0x2FFFC).is_immediate    # bit 24 is an address bit of the immediate form
    with pytest.raises(InvalidArgument):
        Addr4.immediate(0x80000000)


def test_mem_pattern_views():
    t = Tensor3D(Addr4(0x01000040), (1, 2, 3), (4, 5, 6))
    mp = MemPattern3D.from_tensor3d(t)
    assert mp.t == t and mp.is_mx_v5 and mp.i == t.encode()
    assert mp.mx.data_addr == t.start_addr
    m1 = MxTensor1D(Addr4(8), Addr4(16), 3, -1, 2, bytes(4))
    assert MxMemPattern1D.from_mxtensor1d(m1).t == m1


def test_encode_range_errors():
    with pytest.raises(InvalidArgument):
        Tensor3D(Addr4(0), (0x8000, 0, 0), (1, 1, 1)).encode()
    with pytest.raises(InvalidArgument):
        S3D3TensDequant(num_active_channels=256).encode()
    with pytest.raises(InvalidArgument):
        S3D3TensDequant(reserved1=bytes(6)).encode()
    with pytest.raises(InvalidArgument):
        decode_record(bytes(63))
    with pytest.raises(InvalidArgument):
        parse_hex("zz")


def test_parse_hex_separators():
    assert parse_hex("0x7b 10:00_00") == bytes([0x7B, 0x10, 0, 0])


def test_enums():
    assert [g.nc_version for g in Generation] == [2, 3, 4, 4, 5]
    assert Generation.parse("mariana+") is Generation.MARIANA_PLUS
    assert Generation.parse("Mariana_Plus") is Generation.MARIANA_PLUS
    with pytest.raises(InvalidArgument):
        Generation.parse("TONGA")
    assert DTYPE is DType
    codes = {d.value for d in DType}
    assert codes == set(range(0x00, 0x17)) | set(range(0x19, 0x20))
    assert DType.FP8_EXP4 == 0x0E and DType.FP8_EXP5 == 0x0F and DType.UINT32 == 0x09 and DType.SFP8_E8 == 0x13
    assert [c for c in range(256) if is_cptc(c)] == list(range(0x19, 0x20))
    assert [f.value for f in DequantFmt] == [1, 2, 3, 4]
