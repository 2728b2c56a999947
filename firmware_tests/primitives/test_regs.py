"""q7emu.primitives.regs: the Python register views agree with the C register images (via q7emu.primitives.ivp)."""
import pytest

from q7emu.errors import InvalidArgument
from q7emu.primitives import ivp
from q7emu.primitives.regs import PR, VBool, Vec, WVec


def test_vec_views_share_bytes():
    v = Vec(bytes(range(64)))
    # lane 0 of the 16-bit view is bytes 0,1 little-endian: 0x0100
    assert v.view("nx16")[0] == 0x0100
    # lane 1 of the 32-bit view is bytes 4..7: 0x07060504
    assert v.view("n_2x32")[1] == 0x07060504
    assert Vec.from_lanes(v.view("nx16")).raw == v.raw


def test_wvec_matches_the_c_image():
    lanes48 = [(-1) ** i * (i << 40) + i for i in range(32)]
    raw = ivp.wvec_raw(lanes48, 48)
    w = WVec(raw)
    assert w.lanes(48) == lanes48
    # 48-bit lane i is 24-bit lanes 2i (low) and 2i+1 (high) of the same image
    l24 = w.lanes(24)
    for i, x in enumerate(lanes48):
        assert (l24[2 * i] & 0xFFFFFF) | ((l24[2 * i + 1] & 0xFFFFFF) << 24) == x % (1 << 48)
    assert WVec.from_lanes(lanes48, 48).raw == raw
    assert list(ivp.wvec_view(raw, 96)) == w.lanes(96)


def test_vbool_and_pr():
    # a 16-bit compare sets 2 bits per lane: lane 1 true -> bits 2,3
    assert list(VBool(0b1100).lanes(16)[:3]) == [False, True, False]
    assert list(VBool(0xF0).lanes(32)[:2]) == [False, True]
    assert PR(0x0000_0000_FFFF_4000).fields(16) == [0x4000, -1, 0, 0]
    with pytest.raises(InvalidArgument):
        Vec(b"\x00" * 63)
    with pytest.raises(InvalidArgument):
        WVec(bytes(192)).lanes(32)
