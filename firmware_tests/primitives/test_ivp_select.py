"""IVP select / shuffle primitives: sel*, sel2nx8i, sel2nx8i_s4, dsel*, dcmprs2nx8.

Hand-computed expectations from docs/firmware.md §6.2 Select (B21) and the op table's stated semantics
(q7emu/primitives/optable.py); where docs/firmware.md leaves a lane map open (the sel2nx8i immediate numbers, the
nibble unpack, dseln_2x32t) the table records q7emu's own choice. Operands are in the Xtensa C intrinsics' order:
a two-register source lists its HIGH half first (``sel2nx8(hi, lo, sel)``) and the pool is lo (lanes 0..N-1) ||
hi (lanes N..2N-1). The dual selects return (odd, even): even[k] takes selector element 2k, odd[k] element 2k+1,
and the predicated forms gate even[k] / odd[k] with vbool lanes 2k / 2k+1. sel2nx8i_s4 keeps its (vs, vr)
operands: nibble chunks 0..3 come from the first one.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from ivp_testlib import pool

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


# lo[k] = k, hi[k] = 0x80 + k: pool (lo || hi) byte i is i for i < 64 and 0x80 + (i - 64) = i + 64 for i >= 64.
LO8 = u8(range(64))
HI8 = u8([0x80 + k for k in range(64)])


def pool8(i):
    return i if i < 64 else i + 64


# ===================================================================== sel (variable index)
def test_sel2nx8_mask_0x7f():
    sr = np.zeros(64, dtype=np.uint8)
    sr[:8] = [0, 63, 64, 127, 128, 255, 0x85, 0xC1]
    got = ivp.sel2nx8(HI8, LO8, sr)
    # idx = sr & 0x7F: 0 -> lo[0] = 0 ; 63 -> lo[63] = 63 ; 64 -> hi[0] = 0x80 ; 127 -> hi[63] = 0xBF ;
    # 128 -> 0 -> 0 ; 255 -> 127 -> 0xBF ; 0x85 -> 5 -> 5 ; 0xC1 -> 0x41 = 65 -> hi[1] = 0x81 ; rest sr 0 -> 0
    eq(got, u8([0, 63, 0x80, 0xBF, 0, 0xBF, 5, 0x81] + [0] * 56))


def test_selnx16_mask_0x3f():
    lo, hi = u16([0x1000 + k for k in range(32)]), u16([0x2000 + k for k in range(32)])
    sr = u16([0, 31, 32, 63, 64, 0xFFFF, 0x8021] + [1] * 25)
    # & 0x3F: 0 -> lo[0] = 0x1000 ; 31 -> 0x101F ; 32 -> hi[0] = 0x2000 ; 63 -> 0x201F ; 64 -> 0 -> 0x1000 ;
    # 0xFFFF -> 63 -> 0x201F ; 0x8021 -> 0x21 = 33 -> hi[1] = 0x2001 ; 1 -> 0x1001
    eq(ivp.selnx16(hi, lo, sr), u16([0x1000, 0x101F, 0x2000, 0x201F, 0x1000, 0x201F, 0x2001] + [0x1001] * 25))


def test_seln_2x32_mask_0x1f():
    lo, hi = u32([0xA0000000 + k for k in range(16)]), u32([0xB0000000 + k for k in range(16)])
    sr = u32([0, 15, 16, 31, 32, 0xFFFFFFFF, 0x11] + [2] * 9)
    # & 0x1F: 0 -> lo0 ; 15 -> lo15 ; 16 -> hi0 ; 31 -> hi15 ; 32 -> 0 -> lo0 ; 2^32-1 -> 31 -> hi15 ; 17 -> hi1
    eq(ivp.seln_2x32(hi, lo, sr),
       u32([0xA0000000, 0xA000000F, 0xB0000000, 0xB000000F, 0xA0000000, 0xB000000F, 0xB0000001] + [0xA0000002] * 9))


def test_sel_every_index_at_every_lane():
    """selnx16 / seln_2x32: each lane reads every pool lane in turn, with bits above the index mask set in half the
    lanes (a rotation of the index vector per call)."""
    rng = np.random.default_rng(25)
    for bits, fn, n in ((16, ivp.selnx16, 32), (32, ivp.seln_2x32, 16)):
        dt = np.dtype(f"uint{bits}")
        lo = rng.integers(0, 2 ** bits, n, dtype=np.uint64).astype(dt)
        hi = rng.integers(0, 2 ** bits, n, dtype=np.uint64).astype(dt)
        pool = np.concatenate([lo, hi])
        junk = (np.arange(n) % 2).astype(np.uint64) * ((2 ** bits - 1) ^ (2 * n - 1))
        for r in range(2 * n):
            idx = (np.arange(n) + r) % (2 * n)
            eq(fn(hi, lo, (idx.astype(np.uint64) | junk).astype(dt)), pool[idx])


def test_sel_first_operand_is_the_high_half():
    # index 0 reads lane 0 of the SECOND operand (lo), index N lane 0 of the FIRST (hi)
    z8, z16, z32 = np.zeros(64, np.uint8), np.zeros(32, np.uint16), np.zeros(16, np.uint32)
    eq(ivp.sel2nx8(HI8, LO8, z8), u8([0] * 64))                       # lo[0] = 0
    eq(ivp.sel2nx8(HI8, LO8, z8 + 64), u8([0x80] * 64))               # hi[0] = 0x80
    eq(ivp.sel2nx8(LO8, HI8, z8), u8([0x80] * 64))                    # operands swapped: so is the pool
    lo16, hi16 = u16([7] * 32), u16([9] * 32)
    eq(ivp.selnx16(hi16, lo16, z16), lo16)
    eq(ivp.selnx16(hi16, lo16, z16 + 32), hi16)
    lo32, hi32 = u32([0x11111111] * 16), u32([0x22222222] * 16)
    eq(ivp.seln_2x32(hi32, lo32, z32), lo32)
    eq(ivp.seln_2x32(hi32, lo32, z32 + 16), hi32)


# ===================================================================== sel2nx8i (q7emu immediate numbers)
def test_sel2nx8i_extract_even_odd():
    # 0x00: vt[k] = pool[2k] ; 0x01: pool[2k+1]. pool[2k] for k < 32 is 2k ; for k >= 32, 2k >= 64 -> 2k + 64
    eq(ivp.sel2nx8i(HI8, LO8, 0x00), u8([pool8(2 * k) for k in range(64)]))
    eq(ivp.sel2nx8i(HI8, LO8, 0x01), u8([pool8(2 * k + 1) for k in range(64)]))
    got = ivp.sel2nx8i(HI8, LO8, 0x00)
    assert (got[0], got[1], got[31], got[32], got[63]) == (0, 2, 62, 0x80, 0xBE)   # pool[126] = hi[62] = 0xBE
    got = ivp.sel2nx8i(HI8, LO8, 0x01)
    assert (got[0], got[31], got[32], got[63]) == (1, 63, 0x81, 0xBF)


def test_sel2nx8i_interleave_lo_hi():
    got = ivp.sel2nx8i(HI8, LO8, 0x02)
    # vt[2k] = pool[k] = lo[k] = k, vt[2k+1] = pool[64+k] = hi[k] = 0x80+k (k < 32)
    assert list(got[:6]) == [0, 0x80, 1, 0x81, 2, 0x82]
    assert (got[62], got[63]) == (31, 0x9F)
    got = ivp.sel2nx8i(HI8, LO8, 0x03)
    # vt[2k] = pool[32+k] = lo[32+k] = 32+k, vt[2k+1] = pool[96+k] = hi[32+k] = 0xA0+k
    assert list(got[:4]) == [32, 0xA0, 33, 0xA1]
    assert (got[62], got[63]) == (63, 0xBF)


@pytest.mark.parametrize("j", [0, 1, 2, 3])
def test_sel2nx8i_extract_1_of_4(j):
    got = ivp.sel2nx8i(HI8, LO8, 0x08 + j)
    # vt[k] = pool[(4k + j) & 127]: k=0 -> j ; k=15 -> 60+j ; k=16 -> 64+j -> hi[j] = 0x80+j ;
    # k=31 -> 124+j -> hi[60+j] ; k=32 -> 128+j & 127 = j (wraps) ; k=63 -> 252+j & 127 = 124+j -> hi[60+j]
    assert got[0] == j and got[15] == 60 + j and got[16] == 0x80 + j
    assert got[31] == 0x80 + 60 + j and got[32] == j and got[63] == 0x80 + 60 + j


def test_sel2nx8i_rotate():
    # 0x10: vt[k] = pool[k+1] -> lo[1..63] = 1..63 then hi[0] = 0x80 ; 0x11: pool[k+4] -> 4..63, hi[0..3]
    eq(ivp.sel2nx8i(HI8, LO8, 0x10), u8(list(range(1, 64)) + [0x80]))
    eq(ivp.sel2nx8i(HI8, LO8, 0x11), u8(list(range(4, 64)) + [0x80, 0x81, 0x82, 0x83]))


@pytest.mark.parametrize("imm", [4, 5, 0x12, 0x3B, 127, 128, -1])
def test_sel2nx8i_rejects_unmodelled_imm(imm):
    with pytest.raises(InvalidArgument):
        ivp.sel2nx8i(HI8, LO8, imm)


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
LO16 = u16([0x100 + k for k in range(32)])     # pool16 lanes 0..31
HI16 = u16([0x200 + k for k in range(32)])     # pool16 lanes 32..63


def test_dselnx16_selector_bytes():
    # selector byte 2k -> even[k], byte 2k+1 -> odd[k], both & 63
    sel = u8([3, 5, 0x20, 0x3F, 0xFF, 0xC0, 0, 0] + [1, 1] * 28)
    odd, even = ivp.dselnx16(HI16, LO16, sel)
    # lane 0: even = pool[3] = 0x103, odd = pool[5] = 0x105
    # lane 1: even = pool[32] = hi[0] = 0x200, odd = pool[63] = hi[31] = 0x21F
    # lane 2: even = pool[0xFF & 63 = 63] = 0x21F, odd = pool[0xC0 & 63 = 0] = lo[0] = 0x100
    # lane 3: both pool[0] = 0x100 ; lanes 4..31: both pool[1] = 0x101
    eq(even, u16([0x103, 0x200, 0x21F, 0x100] + [0x101] * 28))
    eq(odd, u16([0x105, 0x21F, 0x100, 0x100] + [0x101] * 28))


def test_dselnx16_first_output_is_odd_first_source_is_high():
    sel = u8([0, 32] * 32)                     # even[k] = pool[0] = lo[0], odd[k] = pool[32] = hi[0]
    odd, even = ivp.dselnx16(HI16, LO16, sel)
    eq(even, u16([0x100] * 32))
    eq(odd, u16([0x200] * 32))
    odd, even = ivp.dselnx16(LO16, HI16, sel)  # sources swapped: the pool halves swap
    eq(even, u16([0x200] * 32))
    eq(odd, u16([0x100] * 32))


def test_dselnx16t_merge_bit_per_output_lane():
    sel = u8([3, 5] * 32)                      # even[k] = pool[3] = 0x103, odd[k] = pool[5] = 0x105
    odd_old, even_old = u16([0xAAAA] * 32), u16([0xBBBB] * 32)
    vb = np.zeros(64, dtype=np.bool_)
    vb[[0, 10, 62]] = True                     # bits 2k: even lanes 0, 5, 31
    vb[[1, 15]] = True                         # bits 2k+1: odd lanes 0, 7
    odd, even = ivp.dselnx16t(odd_old, even_old, HI16, LO16, sel, vb)
    want_even = np.full(32, 0xBBBB, np.uint16)
    want_even[[0, 5, 31]] = 0x103
    want_odd = np.full(32, 0xAAAA, np.uint16)
    want_odd[[0, 7]] = 0x105
    eq(even, want_even)
    eq(odd, want_odd)


def test_dselnx16t_user_guide_mask():
    # the vbool2N 0xffffffff55555555 of Cadence's 3-way interleave: bits 0, 2, .., 30 and 32..63 set ->
    # even lanes 0..31 all written, odd lanes 0..15 keep their old value, odd lanes 16..31 written
    mask = 0xFFFFFFFF55555555
    vb = np.array([(mask >> i) & 1 for i in range(64)], dtype=np.bool_)
    sel = u8([k % 64 for k in range(64)])      # even[k] = pool[2k], odd[k] = pool[2k+1]
    odd, even = ivp.dselnx16t(u16([0xAAAA] * 32), u16([0xBBBB] * 32), HI16, LO16, sel, vb)
    eq(even, u16([0x100 + 2 * k for k in range(16)] + [0x200 + 2 * k - 32 for k in range(16, 32)]))
    eq(odd, u16([0xAAAA] * 16 + [0x200 + 2 * k + 1 - 32 for k in range(16, 32)]))


def test_dseln_2x32t_selector_lanes_and_merge():
    lo, hi = u32([0xA0000000 + k for k in range(16)]), u32([0xB0000000 + k for k in range(16)])
    sel = np.zeros(32, dtype=np.uint16)
    # lane k: sel[2k] -> even index, sel[2k+1] -> odd index, & 0x1F; pool32 = lo || hi
    sel[0:2] = [1, 16]        # even0 = lo1, odd0 = hi0
    sel[2:4] = [31, 0x20]     # even1 = hi15, odd1 = 0x20 & 31 = 0 -> lo0
    sel[4:6] = [0xFFFF, 17]   # even2 = 31 -> hi15, odd2 = hi1
    sel[6:8] = [2, 3]         # even3 = lo2, odd3 = lo3
    # vb lane 2k gates even[k], lane 2k+1 odd[k]: lanes 0..5 (pairs 0..2), lane 6 (even3 only), lane 9 (odd4 only)
    vb = np.zeros(32, dtype=np.bool_)
    vb[[0, 1, 2, 3, 4, 5, 6, 9]] = True
    odd_old, even_old = u32([9] * 16), u32([7] * 16)
    odd, even = ivp.dseln_2x32t(odd_old, even_old, hi, lo, sel, vb)
    # even4 keeps 7 (lane 8 false) ; odd3 keeps 9 (lane 7 false) ; odd4 = pool[sel[9] = 0] = lo0
    eq(even, u32([0xA0000001, 0xB000000F, 0xB000000F, 0xA0000002] + [7] * 12))
    eq(odd, u32([0xB0000000, 0xA0000000, 0xB0000001, 9, 0xA0000000] + [9] * 11))


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
@PROP
@given(hi=arrays(np.uint8, 64), lo=arrays(np.uint8, 64), sel=arrays(np.uint8, 64))
def test_prop_sel2nx8(hi, lo, sel):
    eq(ivp.sel2nx8(hi, lo, sel), pool(hi, lo)[sel & 0x7F])


@PROP
@given(hi=arrays(np.uint16, 32), lo=arrays(np.uint16, 32), sel=arrays(np.uint16, 32))
def test_prop_selnx16(hi, lo, sel):
    eq(ivp.selnx16(hi, lo, sel), pool(hi, lo)[sel & 0x3F])


@PROP
@given(hi=arrays(np.uint32, 16), lo=arrays(np.uint32, 16), sel=arrays(np.uint32, 16))
def test_prop_seln_2x32(hi, lo, sel):
    eq(ivp.seln_2x32(hi, lo, sel), pool(hi, lo)[sel & 0x1F])


_K = np.arange(64)
SELI_REF = {
    0x00: lambda p: p[2 * _K], 0x01: lambda p: p[2 * _K + 1],
    0x02: lambda p: np.stack([p[:32], p[64:96]], axis=1).ravel(),
    0x03: lambda p: np.stack([p[32:64], p[96:]], axis=1).ravel(),
    0x08: lambda p: p[(4 * _K) & 127], 0x09: lambda p: p[(4 * _K + 1) & 127],
    0x0A: lambda p: p[(4 * _K + 2) & 127], 0x0B: lambda p: p[(4 * _K + 3) & 127],
    0x10: lambda p: p[1:65], 0x11: lambda p: p[4:68],
    53: lambda p: np.stack([p[1:64:2], p[65:128:2]], axis=1).ravel(),     # the odd bytes of lo and of hi
}


def test_sel2nx8i_53_interleaves_the_high_bytes():
    lo = np.arange(32, dtype=np.uint16) | 0x3C00          # fp16 lanes: the E5M2 byte is the high byte
    hi = np.arange(32, dtype=np.uint16) | 0xC000
    out = ivp.sel2nx8i(hi.view(np.uint8), lo.view(np.uint8), 53)
    # vt[2k] = lo byte 2k+1 (the high byte of lo's 16-bit lane k), vt[2k+1] = hi byte 2k+1
    assert out[0::2].tolist() == [0x3C] * 32 and out[1::2].tolist() == [0xC0] * 32


def test_seli_table_matches_wrapper_constant():
    assert set(SELI_REF) == set(ivp.SEL2NX8I_IMMS)


@PROP
@given(hi=arrays(np.uint8, 64), lo=arrays(np.uint8, 64), imm=st.sampled_from(sorted(SELI_REF)))
def test_prop_sel2nx8i(hi, lo, imm):
    eq(ivp.sel2nx8i(hi, lo, imm), SELI_REF[imm](pool(hi, lo)))


@PROP
@given(vs=arrays(np.uint8, 64), vr=arrays(np.uint8, 64), c=st.integers(0, 3), h=st.integers(0, 1),
       s=st.integers(0, 1))
def test_prop_sel2nx8i_s4(vs, vr, c, h, s):
    imm = s << 4 | h << 3 | c
    chunk = np.concatenate([vs, vr])[16 * c: 16 * c + 16].astype(np.int64)     # chunks 0..3: the first operand
    lo, hi = chunk & 15, chunk >> 4
    nib = np.stack([hi, lo] if h else [lo, hi], axis=1).ravel()
    want = (((nib ^ 8) - 8).astype(np.int16)) if s else nib.astype(np.uint16)
    eq(ivp.sel2nx8i_s4(vs, vr, imm), want)


@PROP
@given(hi=arrays(np.uint16, 32), lo=arrays(np.uint16, 32), sel=arrays(np.uint8, 64),
       odd_old=arrays(np.uint16, 32), even_old=arrays(np.uint16, 32), vb=arrays(np.bool_, 64))
def test_prop_dselnx16(hi, lo, sel, odd_old, even_old, vb):
    p = pool(hi, lo)
    r_even, r_odd = p[sel[0::2] & 63], p[sel[1::2] & 63]
    odd, even = ivp.dselnx16(hi, lo, sel)
    eq(even, r_even)
    eq(odd, r_odd)
    odd, even = ivp.dselnx16t(odd_old, even_old, hi, lo, sel, vb)
    eq(even, np.where(vb[0::2], r_even, even_old))
    eq(odd, np.where(vb[1::2], r_odd, odd_old))


@PROP
@given(hi=arrays(np.uint32, 16), lo=arrays(np.uint32, 16), sel=arrays(np.uint16, 32),
       odd_old=arrays(np.uint32, 16), even_old=arrays(np.uint32, 16), vb=arrays(np.bool_, 32))
def test_prop_dseln_2x32t(hi, lo, sel, odd_old, even_old, vb):
    p = pool(hi, lo)
    odd, even = ivp.dseln_2x32t(odd_old, even_old, hi, lo, sel, vb)
    eq(even, np.where(vb[0::2], p[sel[0::2] & 31], even_old))
    eq(odd, np.where(vb[1::2], p[sel[1::2] & 31], odd_old))


@PROP
@given(vr=arrays(np.uint8, 64), vb=arrays(np.bool_, 64))
def test_prop_dcmprs2nx8(vr, vb):
    below = np.cumsum(vb) - vb            # popcount of the mask bits below lane k
    eq(ivp.dcmprs2nx8(vr, vb), np.where(vb, vr[np.minimum(below, 63)], vr[63]))
