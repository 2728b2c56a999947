"""IVP select / shuffle primitives: sel*, sel2nx8i, sel2nx8i_s4, dsel*, dcmprs2nx8.

Hand-computed expectations from docs/firmware.md §6.2 Select (B21) and, where docs/firmware.md leaves the lane
map open, the
mapping written beside the primitive (q7ivp.pxd, "q7emu choice"). The pool of every two-source op is
vs (low half) || vr (high half).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from q7emu.errors import InvalidArgument
from q7emu.primitives import ivp

#: the op-table rows this file tests by hand (test_ivp_catalog checks the declaration against the table and
#: that each is called inside an asserting test)
COVERS = ("sel2nx8", "selnx16", "seln_2x32", "sel2nx8i", "sel2nx8i_s4", "dselnx16", "dselnx16t",
          "dseln_2x32t", "dcmprs2nx8")

PROP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def eq(got, want):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype


def u8(x):
    return np.array(x, dtype=np.int64).astype(np.uint8)


def u16(x):
    return np.array(x, dtype=np.int64).astype(np.uint16)


def u32(x):
    return np.array(x, dtype=np.int64).astype(np.uint32)


# vs[k] = k, vr[k] = 0x80 + k: pool byte i is i for i < 64 and 0x80 + (i - 64) = i + 64 for i >= 64.
VS8 = u8(range(64))
VR8 = u8([0x80 + k for k in range(64)])


def pool8(i):
    return i if i < 64 else i + 64


# ===================================================================== sel (variable index)
def test_sel2nx8_mask_0x7f():
    sr = np.zeros(64, dtype=np.uint8)
    sr[:8] = [0, 63, 64, 127, 128, 255, 0x85, 0xC1]
    got = ivp.sel2nx8(VS8, VR8, sr)
    # idx = sr & 0x7F: 0 -> vs[0] = 0 ; 63 -> vs[63] = 63 ; 64 -> vr[0] = 0x80 ; 127 -> vr[63] = 0xBF ;
    # 128 -> 0 -> 0 ; 255 -> 127 -> 0xBF ; 0x85 -> 5 -> 5 ; 0xC1 -> 0x41 = 65 -> vr[1] = 0x81 ; rest sr 0 -> 0
    eq(got, u8([0, 63, 0x80, 0xBF, 0, 0xBF, 5, 0x81] + [0] * 56))


def test_selnx16_mask_0x3f():
    vs, vr = u16([0x1000 + k for k in range(32)]), u16([0x2000 + k for k in range(32)])
    sr = u16([0, 31, 32, 63, 64, 0xFFFF, 0x8021] + [1] * 25)
    # & 0x3F: 0 -> 0x1000 ; 31 -> 0x101F ; 32 -> vr[0] = 0x2000 ; 63 -> 0x201F ; 64 -> 0 -> 0x1000 ;
    # 0xFFFF -> 63 -> 0x201F ; 0x8021 -> 0x21 = 33 -> vr[1] = 0x2001 ; 1 -> 0x1001
    eq(ivp.selnx16(vs, vr, sr), u16([0x1000, 0x101F, 0x2000, 0x201F, 0x1000, 0x201F, 0x2001] + [0x1001] * 25))


def test_seln_2x32_mask_0x1f():
    vs, vr = u32([0xA0000000 + k for k in range(16)]), u32([0xB0000000 + k for k in range(16)])
    sr = u32([0, 15, 16, 31, 32, 0xFFFFFFFF, 0x11] + [2] * 9)
    # & 0x1F: 0 -> vs0 ; 15 -> vs15 ; 16 -> vr0 ; 31 -> vr15 ; 32 -> 0 -> vs0 ; 2^32-1 -> 31 -> vr15 ; 17 -> vr1
    eq(ivp.seln_2x32(vs, vr, sr),
       u32([0xA0000000, 0xA000000F, 0xB0000000, 0xB000000F, 0xA0000000, 0xB000000F, 0xB0000001] + [0xA0000002] * 9))


# ===================================================================== sel2nx8i (q7emu lane maps)
def test_sel2nx8i_extract_even_odd():
    # 0x00: vt[k] = pool[2k] ; 0x01: pool[2k+1]. pool[2k] for k < 32 is 2k ; for k >= 32, 2k >= 64 -> 2k + 64
    eq(ivp.sel2nx8i(VS8, VR8, 0x00), u8([pool8(2 * k) for k in range(64)]))
    eq(ivp.sel2nx8i(VS8, VR8, 0x01), u8([pool8(2 * k + 1) for k in range(64)]))
    got = ivp.sel2nx8i(VS8, VR8, 0x00)
    assert (got[0], got[1], got[31], got[32], got[63]) == (0, 2, 62, 0x80, 0xBE)   # pool[126] = vr[62] = 0xBE
    got = ivp.sel2nx8i(VS8, VR8, 0x01)
    assert (got[0], got[31], got[32], got[63]) == (1, 63, 0x81, 0xBF)


def test_sel2nx8i_interleave_lo_hi():
    got = ivp.sel2nx8i(VS8, VR8, 0x02)
    # vt[2k] = pool[k] = k, vt[2k+1] = pool[64+k] = 0x80+k (k < 32)
    assert list(got[:6]) == [0, 0x80, 1, 0x81, 2, 0x82]
    assert (got[62], got[63]) == (31, 0x9F)
    got = ivp.sel2nx8i(VS8, VR8, 0x03)
    # vt[2k] = pool[32+k] = 32+k, vt[2k+1] = pool[96+k] = 0x80+32+k = 0xA0+k
    assert list(got[:4]) == [32, 0xA0, 33, 0xA1]
    assert (got[62], got[63]) == (63, 0xBF)


@pytest.mark.parametrize("j", [0, 1, 2, 3])
def test_sel2nx8i_extract_1_of_4(j):
    got = ivp.sel2nx8i(VS8, VR8, 0x08 + j)
    # vt[k] = pool[(4k + j) & 127]: k=0 -> j ; k=15 -> 60+j ; k=16 -> 64+j -> vr[j] = 0x80+j ;
    # k=31 -> 124+j -> vr[60+j] ; k=32 -> 128+j & 127 = j (wraps) ; k=63 -> 252+j & 127 = 124+j -> vr[60+j]
    assert got[0] == j and got[15] == 60 + j and got[16] == 0x80 + j
    assert got[31] == 0x80 + 60 + j and got[32] == j and got[63] == 0x80 + 60 + j


def test_sel2nx8i_rotate():
    # 0x10: vt[k] = pool[k+1] -> 1..63 then vr[0] = 0x80 ; 0x11: pool[k+4] -> 4..63, vr[0..3]
    eq(ivp.sel2nx8i(VS8, VR8, 0x10), u8(list(range(1, 64)) + [0x80]))
    eq(ivp.sel2nx8i(VS8, VR8, 0x11), u8(list(range(4, 64)) + [0x80, 0x81, 0x82, 0x83]))


@pytest.mark.parametrize("imm", [4, 5, 0x12, 0x3B, 127, 128, -1])
def test_sel2nx8i_rejects_unmodelled_imm(imm):
    with pytest.raises(InvalidArgument):
        ivp.sel2nx8i(VS8, VR8, imm)


# ===================================================================== sel2nx8i_s4 (nibble unpack)
def _nib_src():
    # vs byte b = (2b+2) << 4 | (2b+1) (mod 16 per nibble): byte 0 = 0x21, byte 1 = 0x43, byte 2 = 0x65,
    # byte 3 = 0x87, byte 4 = 0xA9, byte 5 = 0xCB, byte 6 = 0xED, byte 7 = 0x0F
    vs = u8([(((2 * b + 2) & 15) << 4) | ((2 * b + 1) & 15) for b in range(64)])
    vr = u8([0xF7] + [0x80] * 15 + [0x5A] * 48)
    return vs, vr


def test_sel2nx8i_s4_nibble_order_zero_extend():
    vs, vr = _nib_src()
    got = ivp.sel2nx8i_s4(vs, vr, 0)       # C=0, H=0, S=0
    assert got.dtype == np.uint16
    # H=0: lane 2m = low nibble of byte m, lane 2m+1 = high nibble:
    # byte0 0x21 -> 1, 2 ; byte1 0x43 -> 3, 4 ; byte3 0x87 -> 7, 8 ; byte7 0x0F -> 0xF, 0
    assert list(got[:8]) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert list(got[14:16]) == [0xF, 0x0]
    got = ivp.sel2nx8i_s4(vs, vr, 8)       # H=1: high nibble first
    assert list(got[:4]) == [2, 1, 4, 3]


def test_sel2nx8i_s4_sign_extend():
    vs, vr = _nib_src()
    got = ivp.sel2nx8i_s4(vs, vr, 16)      # S=1
    assert got.dtype == np.int16
    # byte3 0x87: low 7 -> 7, high 8 -> -8 ; byte4 0xA9: 9 -> -7, 0xA -> -6 ; byte7 0x0F: 0xF -> -1, 0 -> 0
    assert list(got[6:10]) == [7, -8, -7, -6]
    assert list(got[14:16]) == [-1, 0]


def test_sel2nx8i_s4_chunk_select():
    vs, vr = _nib_src()
    got = ivp.sel2nx8i_s4(vs, vr, 9)       # C=1, H=1 (the seed bundle's immediate)
    # C=1: bytes 16..31 of vs. byte 16 = (34 & 15) << 4 | (33 & 15) = 0x21 ; H=1 -> high first: 2, 1
    assert list(got[:2]) == [2, 1]
    # byte 17 = 0x43 -> 4, 3 ; byte 23 = (48 & 15) << 4 | (47 & 15) = 0x0F -> 0, 0xF
    assert list(got[2:4]) == [4, 3] and list(got[14:16]) == [0, 0xF]
    got = ivp.sel2nx8i_s4(vs, vr, 3)
    # C=3: bytes 48..63 of vs; byte 48 = (98 & 15) << 4 | (97 & 15) = 0x21 -> 1, 2 ; byte 51 = 0x87 -> 7, 8
    assert list(got[:2]) == [1, 2] and list(got[6:8]) == [7, 8]


def test_sel2nx8i_s4_chunk_from_vr():
    vs, vr = _nib_src()
    got = ivp.sel2nx8i_s4(vs, vr, 4)       # C=4: pool bytes 64..79 = vr[0..15]
    # vr[0] = 0xF7 -> low 7, high 0xF ; vr[1..15] = 0x80 -> 0, 8
    assert list(got[:4]) == [7, 0xF, 0, 8]
    got = ivp.sel2nx8i_s4(vs, vr, 16 | 7)  # C=7, S=1: vr[48..63] = 0x5A -> 0xA -> -6, 5
    assert list(got[:2]) == [-6, 5]


@pytest.mark.parametrize("imm", [-1, 32, 255])
def test_sel2nx8i_s4_rejects_bad_imm(imm):
    vs, vr = _nib_src()
    with pytest.raises(InvalidArgument):
        ivp.sel2nx8i_s4(vs, vr, imm)


# ===================================================================== dsel (dual select)
VS16 = u16([0x100 + k for k in range(32)])
VR16 = u16([0x200 + k for k in range(32)])


def test_dselnx16_index_packing():
    sr = u16([0x0503, 0x3F20, 0xC0FF, 0x0000] + [0x0101] * 28)
    vu, vt = ivp.dselnx16(VS16, VR16, sr)
    # lane k: low byte -> vu index, high byte -> vt index (both & 0x3F):
    # 0x0503: vu = pool[3] = 0x103, vt = pool[5] = 0x105
    # 0x3F20: vu = pool[32] = vr[0] = 0x200, vt = pool[63] = vr[31] = 0x21F
    # 0xC0FF: vu = pool[0xFF & 63 = 63] = 0x21F, vt = pool[0xC0 & 63 = 0] = 0x100
    # 0x0000: both pool[0] = 0x100 ; 0x0101: both pool[1] = 0x101
    eq(vu, u16([0x103, 0x200, 0x21F, 0x100] + [0x101] * 28))
    eq(vt, u16([0x105, 0x21F, 0x100, 0x100] + [0x101] * 28))


def test_dselnx16t_merge():
    sr = u16([0x0503] * 32)
    old_u, old_t = u16([0xAAAA] * 32), u16([0xBBBB] * 32)
    m = np.zeros(32, dtype=np.bool_)
    m[[0, 5, 31]] = True
    vu, vt = ivp.dselnx16t(old_u, old_t, VS16, VR16, sr, m)
    # true lanes take pool[3] = 0x103 / pool[5] = 0x105 ; false lanes keep 0xAAAA / 0xBBBB
    eq(vu, np.where(m, 0x103, 0xAAAA).astype(np.uint16))
    eq(vt, np.where(m, 0x105, 0xBBBB).astype(np.uint16))


def test_dseln_2x32t_index_packing_and_merge():
    vs, vr = u32([0xA0000000 + k for k in range(16)]), u32([0xB0000000 + k for k in range(16)])
    sr = np.zeros(32, dtype=np.uint16)
    # lane k: sr[2k] -> vu index, sr[2k+1] -> vt index, & 0x1F
    sr[0:2] = [1, 16]        # vu0 = vs1, vt0 = vr0
    sr[2:4] = [31, 0x20]     # vu1 = vr15, vt1 = 0x20 & 31 = 0 -> vs0
    sr[4:6] = [0xFFFF, 17]   # vu2 = 31 -> vr15, vt2 = vr1
    m = np.array([True, True, True] + [False] * 13)
    old_u, old_t = u32([7] * 16), u32([9] * 16)
    vu, vt = ivp.dseln_2x32t(old_u, old_t, vs, vr, sr, m)
    eq(vu, u32([0xA0000001, 0xB000000F, 0xB000000F] + [7] * 13))
    eq(vt, u32([0xB0000000, 0xA0000000, 0xB0000001] + [9] * 13))


# ===================================================================== dcmprs (expand)
def test_dcmprs2nx8_expand():
    vr = u8([k + 1 for k in range(64)])       # vr[j] = j+1, vr[63] = 64
    vb = np.zeros(64, dtype=np.bool_)
    vb[[0, 2, 3, 6, 63]] = True
    got = ivp.dcmprs2nx8(vr, vb)
    # true lanes take vr[popcount below]: lane0 -> vr[0] = 1, lane2 -> vr[1] = 2, lane3 -> vr[2] = 3,
    # lane6 -> vr[3] = 4, lane63 -> vr[4] = 5 ; false lanes take vr[63] = 64
    want = np.full(64, 64, dtype=np.uint8)
    want[[0, 2, 3, 6, 63]] = [1, 2, 3, 4, 5]
    eq(got, want)
    eq(ivp.dcmprs2nx8(vr, np.ones(64, dtype=np.bool_)), vr)                 # all true: identity
    eq(ivp.dcmprs2nx8(vr, np.zeros(64, dtype=np.bool_)), u8([64] * 64))     # all false: vr[63] everywhere


# ===================================================================== numpy-reference properties
def _pool(vs, vr):
    return np.concatenate([vs, vr])


@PROP
@given(vs=arrays(np.uint8, 64), vr=arrays(np.uint8, 64), sr=arrays(np.uint8, 64))
def test_prop_sel2nx8(vs, vr, sr):
    eq(ivp.sel2nx8(vs, vr, sr), _pool(vs, vr)[sr & 0x7F])


@PROP
@given(vs=arrays(np.uint16, 32), vr=arrays(np.uint16, 32), sr=arrays(np.uint16, 32))
def test_prop_selnx16(vs, vr, sr):
    eq(ivp.selnx16(vs, vr, sr), _pool(vs, vr)[sr & 0x3F])


@PROP
@given(vs=arrays(np.uint32, 16), vr=arrays(np.uint32, 16), sr=arrays(np.uint32, 16))
def test_prop_seln_2x32(vs, vr, sr):
    eq(ivp.seln_2x32(vs, vr, sr), _pool(vs, vr)[sr & 0x1F])


_K = np.arange(64)
SELI_REF = {
    0x00: lambda p: p[2 * _K], 0x01: lambda p: p[2 * _K + 1],
    0x02: lambda p: np.stack([p[:32], p[64:96]], axis=1).ravel(),
    0x03: lambda p: np.stack([p[32:64], p[96:]], axis=1).ravel(),
    0x08: lambda p: p[(4 * _K) & 127], 0x09: lambda p: p[(4 * _K + 1) & 127],
    0x0A: lambda p: p[(4 * _K + 2) & 127], 0x0B: lambda p: p[(4 * _K + 3) & 127],
    0x10: lambda p: p[1:65], 0x11: lambda p: p[4:68],
    53: lambda p: np.stack([p[1:64:2], p[65:128:2]], axis=1).ravel(),     # the high bytes of two nx16 vectors
}


def test_sel2nx8i_53_interleaves_the_high_bytes():
    lo = np.arange(32, dtype=np.uint16) | 0x3C00          # fp16 lanes: the E5M2 byte is the high byte
    hi = np.arange(32, dtype=np.uint16) | 0xC000
    out = ivp.sel2nx8i(lo.view(np.uint8), hi.view(np.uint8), 53)
    assert out[0::2].tolist() == [0x3C] * 32 and out[1::2].tolist() == [0xC0] * 32


def test_seli_table_matches_wrapper_constant():
    assert set(SELI_REF) == set(ivp.SEL2NX8I_IMMS)


@PROP
@given(vs=arrays(np.uint8, 64), vr=arrays(np.uint8, 64), imm=st.sampled_from(sorted(SELI_REF)))
def test_prop_sel2nx8i(vs, vr, imm):
    eq(ivp.sel2nx8i(vs, vr, imm), SELI_REF[imm](_pool(vs, vr)))


@PROP
@given(vs=arrays(np.uint8, 64), vr=arrays(np.uint8, 64), c=st.integers(0, 3), h=st.integers(0, 1),
       s=st.integers(0, 1))
def test_prop_sel2nx8i_s4(vs, vr, c, h, s):
    imm = s << 4 | h << 3 | c
    chunk = _pool(vs, vr)[16 * c: 16 * c + 16].astype(np.int64)
    lo, hi = chunk & 15, chunk >> 4
    nib = np.stack([hi, lo] if h else [lo, hi], axis=1).ravel()
    want = (((nib ^ 8) - 8).astype(np.int16)) if s else nib.astype(np.uint16)
    eq(ivp.sel2nx8i_s4(vs, vr, imm), want)


@PROP
@given(vs=arrays(np.uint16, 32), vr=arrays(np.uint16, 32), sr=arrays(np.uint16, 32),
       ou=arrays(np.uint16, 32), ot=arrays(np.uint16, 32), m=arrays(np.bool_, 32))
def test_prop_dselnx16(vs, vr, sr, ou, ot, m):
    p, idx = _pool(vs, vr), sr.view(np.uint8)
    ru, rt = p[idx[0::2] & 63], p[idx[1::2] & 63]
    vu, vt = ivp.dselnx16(vs, vr, sr)
    eq(vu, ru)
    eq(vt, rt)
    vu, vt = ivp.dselnx16t(ou, ot, vs, vr, sr, m)
    eq(vu, np.where(m, ru, ou))
    eq(vt, np.where(m, rt, ot))


@PROP
@given(vs=arrays(np.uint32, 16), vr=arrays(np.uint32, 16), sr=arrays(np.uint16, 32),
       ou=arrays(np.uint32, 16), ot=arrays(np.uint32, 16), m=arrays(np.bool_, 16))
def test_prop_dseln_2x32t(vs, vr, sr, ou, ot, m):
    p = _pool(vs, vr)
    vu, vt = ivp.dseln_2x32t(ou, ot, vs, vr, sr, m)
    eq(vu, np.where(m, p[sr[0::2] & 31], ou))
    eq(vt, np.where(m, p[sr[1::2] & 31], ot))


@PROP
@given(vr=arrays(np.uint8, 64), vb=arrays(np.bool_, 64))
def test_prop_dcmprs2nx8(vr, vb):
    below = np.cumsum(vb) - vb            # popcount of the mask bits below lane k
    eq(ivp.dcmprs2nx8(vr, vb), np.where(vb, vr[np.minimum(below, 63)], vr[63]))
