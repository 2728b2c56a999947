"""IVP integer ALU primitives: add/sub/bitwise, shifts, compares, bmin/bmax, babssub, baddnorm/bsubnorm,
predicated moves and repnx16.

Every expectation below is written from the semantics in docs/firmware.md §6.2 (Flag ALU B03, Shifts B12) / the
primitive's one-line comment, with the arithmetic in a comment. The hypothesis tests at the end re-implement
each op as a numpy one-liner and compare on random lanes.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from ivp_testlib import M, eq

from q7emu.primitives import ivp

PROP = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: the op-table rows this file tests by hand (test_ivp_catalog checks the declaration against the table and
#: that each is called inside an asserting test)
COVERS = ("mov2nx8t", "movnx16t", "movn_2x32t", "repnx16", "add2nx8", "addnx16", "addn_2x32", "sub2nx8",
          "subnx16", "subn_2x32", "and2nx8", "or2nx8", "xor2nx8", "eq2nx8", "ltu2nx8", "eqnx16", "neqnx16",
          "ltnx16", "lenx16", "ltunx16", "eqn_2x32", "ltn_2x32", "sllinx16", "srlinx16", "srainx16",
          "sllin_2x32", "srlin_2x32", "srain_2x32", "srlnx16", "srln_2x32", "sllnx16", "sranx16", "slln_2x32",
          "sran_2x32", "bmin2nx8", "bminu2nx8", "bmax2nx8", "bmaxu2nx8", "bminnx16", "bminunx16", "bmaxnx16",
          "bmaxunx16", "bminn_2x32", "bminun_2x32", "bmaxn_2x32", "bmaxun_2x32", "babssub2nx8",
          "babssubu2nx8", "babssubnx16", "babssubunx16", "baddnormnx16", "bsubnormnx16", "andb", "orb",
          "xorb", "notb")

DT = {"u8": (np.uint8, 64), "s8": (np.int8, 64), "u16": (np.uint16, 32), "s16": (np.int16, 32),
      "u32": (np.uint32, 16), "s32": (np.int32, 16)}


def V(kind, head, fill=0):
    """A vector of `kind` whose first lanes are `head`, the rest `fill`."""
    dt, n = DT[kind]
    out = [fill] * n
    out[: len(head)] = head
    return np.array(out, dtype=np.int64).astype(dt)


def vec_st(kind):
    dt, n = DT[kind]
    info = np.iinfo(dt)
    return arrays(dt, n, elements=st.integers(int(info.min), int(info.max)))


# ===================================================================== add / sub / bitwise (hand)
def test_add2nx8_wraps():
    # 200+100 = 300 = 256+44 -> 44 ; 255+1 = 256 -> 0 ; 127+1 = 128 ; 0+0 = 0
    eq(ivp.add2nx8(V("u8", [200, 255, 127, 0]), V("u8", [100, 1, 1, 0])), V("u8", [44, 0, 128, 0]))


def test_sub2nx8_wraps():
    # 10-20 = -10 -> 256-10 = 246 ; 0-1 -> 255 ; 200-100 = 100
    eq(ivp.sub2nx8(V("u8", [10, 0, 200]), V("u8", [20, 1, 100])), V("u8", [246, 255, 100]))


def test_addnx16_subnx16_wrap():
    # 0xFFFF+2 = 0x10001 -> 1 ; 40000+30000 = 70000-65536 = 4464
    eq(ivp.addnx16(V("u16", [0xFFFF, 40000]), V("u16", [2, 30000])), V("u16", [1, 4464]))
    # 0-1 -> 0xFFFF ; 5-3 = 2 ; 0x8000-1 = 0x7FFF
    eq(ivp.subnx16(V("u16", [0, 5, 0x8000]), V("u16", [1, 3, 1])), V("u16", [0xFFFF, 2, 0x7FFF]))


def test_addn_2x32_subn_2x32_wrap():
    # 0xFFFFFFFF+1 -> 0 ; 0x80000000+0x80000000 = 2^32 -> 0 ; 0x7FFFFFFF+1 = 0x80000000
    eq(ivp.addn_2x32(V("u32", [0xFFFFFFFF, 0x80000000, 0x7FFFFFFF]), V("u32", [1, 0x80000000, 1])),
       V("u32", [0, 0, 0x80000000]))
    # 5-7 = -2 -> 0xFFFFFFFE
    eq(ivp.subn_2x32(V("u32", [5]), V("u32", [7])), V("u32", [0xFFFFFFFE]))


def test_bitwise():
    # 0xF0 & 0x3C = 0x30 ; 0xF0 | 0x3C = 0xFC ; 0xF0 ^ 0x3C = 0xCC ; x ^ x = 0
    a, b = V("u8", [0xF0, 0xAA], 0x5A), V("u8", [0x3C, 0x55], 0x5A)
    eq(ivp.and2nx8(a, b), V("u8", [0x30, 0x00], 0x5A))
    eq(ivp.or2nx8(a, b), V("u8", [0xFC, 0xFF], 0x5A))
    eq(ivp.xor2nx8(a, b), V("u8", [0xCC, 0xFF], 0x00))


# ===================================================================== immediate shifts (hand)
def test_sllinx16():
    x = V("u16", [0x8001, 0x1234, 0x0001])
    # imm 0: identity
    eq(ivp.sllinx16(x, 0), x)
    # 0x8001 << 1 = 0x10002 -> 0x0002 ; 0x1234 << 1 = 0x2468 ; 1 << 1 = 2
    eq(ivp.sllinx16(x, 1), V("u16", [0x0002, 0x2468, 0x0002]))
    # full width - 1: 0x8001 << 15 -> 0x8000 ; 0x1234 << 15 -> bit0 of 0x1234 is 0 -> 0 ; 1 << 15 = 0x8000
    eq(ivp.sllinx16(x, 15), V("u16", [0x8000, 0x0000, 0x8000]))


def test_srlinx16_srainx16():
    x = V("s16", [-32768, -2, 0x4000, 7, -1])
    # logical: 0x8000 >> 15 = 1 ; 0xFFFE >> 15 = 1 ; 0x4000 >> 15 = 0 ; 7 >> 15 = 0 ; 0xFFFF >> 15 = 1
    eq(ivp.srlinx16(x.view(np.uint16), 15), V("u16", [1, 1, 0, 0, 1]))
    eq(ivp.srlinx16(x.view(np.uint16), 0), x.view(np.uint16))
    # arithmetic by 15 fills the sign: -32768 -> -1 ; -2 -> -1 ; 0x4000 -> 0 ; 7 -> 0 ; -1 -> -1
    eq(ivp.srainx16(x, 15), V("s16", [-1, -1, 0, 0, -1]))
    # by 1: floor(-32768/2) = -16384 ; floor(-2/2) = -1 ; 0x4000/2 = 0x2000 ; floor(7/2) = 3 ; -1 -> -1
    eq(ivp.srainx16(x, 1), V("s16", [-16384, -1, 0x2000, 3, -1]))
    eq(ivp.srainx16(x, 0), x)


def test_sllin_srlin_srain_2x32():
    x = V("u32", [1, 0x80000000, 0xFFFFFFFB, 3])
    # 1 << 31 = 0x80000000 ; 0x80000000 << 31 -> 0 ; 0xFFFFFFFB << 31 -> bit0 = 1 -> 0x80000000 ; 3<<31 -> 0x80000000
    eq(ivp.sllin_2x32(x, 31), V("u32", [0x80000000, 0, 0x80000000, 0x80000000]))
    eq(ivp.sllin_2x32(x, 0), x)
    # logical >> 31: 0, 1, 1, 0
    eq(ivp.srlin_2x32(x, 31), V("u32", [0, 1, 1, 0]))
    # arithmetic: -5 >> 1 = floor(-2.5) = -3 ; -2^31 >> 31 = -1 ; 1 >> 31 = 0
    s = V("s32", [-5, -2 ** 31, 1, 2 ** 31 - 1])
    eq(ivp.srain_2x32(s, 1), V("s32", [-3, -2 ** 30, 0, 2 ** 30 - 1]))
    eq(ivp.srain_2x32(s, 31), V("s32", [-1, -1, 0, 0]))
    eq(ivp.srain_2x32(s, 0), s)


# ===================================================================== per-lane shifts (hand)
def test_srlnx16_amounts_0_width_and_beyond():
    x = V("u16", [0x8421, 0x8421, 0x8421, 0x8421, 0x8421, 0xFFFF], 0xFFFF)
    amt = V("u16", [0, 1, 15, 16, 17, 0x7FFF], 100)
    # 0x8421 >> 0 = 0x8421 ; >> 1 = 0x4210 ; >> 15 = 1 ; >= 16 -> 0 ; 32767 -> 0 ; fill 100 -> 0
    eq(ivp.srlnx16(x, amt), V("u16", [0x8421, 0x4210, 1, 0, 0, 0], 0))


def test_srlnx16_negative_amount_shifts_left():
    # the amount is vr read as int16: a < 0 shifts left by -a (logical, 16-bit result), |a| >= 16 gives 0
    x = V("u16", [0xFFFF, 0x8421, 0x8421, 0x0001, 0x0001, 0xFFFF, 0xFFFF, 0x1234], 0x8421)
    amt = V("u16", [0xFFFF, 0xFFFE, 0xFFFC, 0xFFF1, 0xFFF0, 0xFFEF, 0x8000, 0xFFF8])
    # -1: 0xFFFF << 1 = 0x1FFFE -> 0xFFFE ; -2: 0x8421 << 2 = 0x21084 -> 0x1084 ; -4: 0x84210 -> 0x4210 ;
    # -15: 1 << 15 = 0x8000 ; -16: 0 ; -17: 0 ; -32768: 0 ; -8: 0x1234 << 8 = 0x123400 -> 0x3400 ; tail amount 0
    eq(ivp.srlnx16(x, amt), V("u16", [0xFFFE, 0x1084, 0x4210, 0x8000, 0, 0, 0, 0x3400], 0x8421))


def test_srln_2x32_amounts_0_width_and_beyond():
    x = V("u32", [0x80000001, 0x80000001, 0x80000001, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFF], 0xDEADBEEF)
    amt = V("u32", [0, 4, 31, 32, 33, 0x7FFFFFFF], 64)
    # >>0 identity ; 0x80000001 >> 4 = 0x08000000 ; >> 31 = 1 ; 32, 33, 2^31-1, 64 -> 0 (past the width)
    eq(ivp.srln_2x32(x, amt), V("u32", [0x80000001, 0x08000000, 1, 0, 0, 0], 0))


def test_srln_2x32_negative_amount_shifts_left():
    # the amount is vr read as int32: a < 0 shifts left by -a (logical, 32-bit result), |a| >= 32 gives 0
    x = V("u32", [0xFFFFFFFF, 0x80000001, 0x00000001, 0x00000001, 0xFFFFFFFF, 0xFFFFFFFF, 0x12345678])
    amt = V("u32", [0xFFFFFFFF, 0xFFFFFFFC, 0xFFFFFFE1, 0xFFFFFFE0, 0xFFFFFFDF, 0x80000000, 0xFFFFFFF0])
    # -1: 0xFFFFFFFE ; -4: 0x800000010 -> 0x00000010 ; -31: 1 << 31 = 0x80000000 ; -32: 0 ; -33: 0 ;
    # -2^31: 0 ; -16: 0x12345678 << 16 -> 0x56780000 ; tail x 0
    eq(ivp.srln_2x32(x, amt), V("u32", [0xFFFFFFFE, 0x00000010, 0x80000000, 0, 0, 0, 0x56780000]))


def test_sllnx16_signed_6bit_amount():
    x = V("u16", [0x8001, 0x8001, 0x8001, 0x8001, 0x8001, 0x8001, 0x8001, 0x4001])
    # amounts are the low 6 bits of vr read as signed (-32..31):
    #  0 -> 0x8001 ; 1 -> 0x0002 ; 15 -> 0x8000 ; 16 -> 0 (full width) ;
    #  0x3F = -1 -> logical right 1: 0x4000 ; 0x30 = -16 -> right 16: 0 ; 0x20 = -32 -> 0 ;
    #  0x41 -> low 6 bits = 1 -> 0x4001 << 1 = 0x8002
    amt = V("u16", [0, 1, 15, 16, 0x3F, 0x30, 0x20, 0x41])
    eq(ivp.sllnx16(x, amt), V("u16", [0x8001, 0x0002, 0x8000, 0, 0x4000, 0, 0, 0x8002]))


def test_sranx16_signed_6bit_amount():
    x = V("s16", [-3, -3, -32768, -32768, 5, 0x4000, 0x4000, 1])
    # 1: floor(-3/2) = -2 ; 15: -3 -> -1 ; 16: sign fill -> -1 ; 31: -1 ;
    # 31: 5 -> 0 ; -1 (0xFFFF, low 6 bits 0x3F): left 1: 0x4000 << 1 = 0x8000 = -32768 ;
    # -2 -> left 2: 0x4000 << 2 = 0x10000 -> 0 ; -16: 1 << 16 -> 0 (past the width)
    amt = V("s16", [1, 15, 16, 31, 31, -1, -2, -16])
    eq(ivp.sranx16(x, amt), V("s16", [-2, -1, -1, -1, 0, -32768, 0, 0]))
    eq(ivp.sranx16(x, V("s16", [])), x)  # amount 0 everywhere: identity


def test_slln_2x32_signed_7bit_amount():
    x = V("u32", [0x80000001] * 8 + [3])
    # low 7 bits signed (-64..63): 0 -> same ; 31 -> 0x80000000 ; 32 -> 0 ; 63 -> 0 ;
    # 0x7F = -1 -> right 1: 0x40000000 ; 0x61 = -31 -> right 31: 1 ; 0x60 = -32 -> 0 ; 0x40 = -64 -> 0 ;
    # 0x81 -> low 7 bits = 1 -> 3 << 1 = 6
    amt = V("u32", [0, 31, 32, 63, 0x7F, 0x61, 0x60, 0x40, 0x81])
    eq(ivp.slln_2x32(x, amt), V("u32", [0x80000001, 0x80000000, 0, 0, 0x40000000, 1, 0, 0, 6]))


def test_sran_2x32_signed_7bit_amount():
    x = V("s32", [-5, -5, -5, 7, 0x40000000, 0x40000000, 1, -1])
    # 1: floor(-5/2) = -3 ; 31: -1 ; 40 (past width): sign fill -1 ; 40: 7 -> 0 ;
    # -1: 0x40000000 << 1 = 0x80000000 = -2^31 ; -2: << 2 -> 0 ; 0x60 read as 7-bit = -32: 1 << 32 -> 0 ;
    # 63: -1 -> -1
    amt = V("s32", [1, 31, 40, 40, -1, -2, 0x60, 63])
    eq(ivp.sran_2x32(x, amt), V("s32", [-3, -1, -1, 0, -2 ** 31, 0, 0, -1]))


# ===================================================================== integer compares (hand)
def test_compares_8bit():
    a, b = V("u8", [5, 0x80, 0x7F, 0, 255]), V("u8", [5, 0x7F, 0x80, 1, 255])
    # eq: T F F F T, rest 0 == 0 -> T
    eq(ivp.eq2nx8(a, b), M(64, [True, False, False, False, True], True))
    # ltu: 5<5 F ; 128<127 F ; 127<128 T ; 0<1 T ; 255<255 F ; 0<0 F
    eq(ivp.ltu2nx8(a, b), M(64, [False, False, True, True, False]))


def test_compares_16bit_signed_vs_unsigned():
    a, b = V("s16", [-1, 0, -32768, 32767, 7]), V("s16", [0, -1, 32767, -32768, 7])
    # signed lt: -1<0 T ; 0<-1 F ; -32768<32767 T ; 32767<-32768 F ; 7<7 F
    eq(ivp.ltnx16(a, b), M(32, [True, False, True, False, False]))
    # le: adds the ties (lane 4 and the all-zero tail)
    eq(ivp.lenx16(a, b), M(32, [True, False, True, False, True], True))
    # unsigned: 0xFFFF<0 F ; 0<0xFFFF T ; 0x8000<0x7FFF F ; 0x7FFF<0x8000 T ; 7<7 F
    eq(ivp.ltunx16(a.view(np.uint16), b.view(np.uint16)), M(32, [False, True, False, True, False]))
    eq(ivp.eqnx16(a.view(np.uint16), b.view(np.uint16)), M(32, [False, False, False, False, True], True))
    eq(ivp.neqnx16(a.view(np.uint16), b.view(np.uint16)), M(32, [True, True, True, True, False], False))


def test_compares_32bit():
    a, b = V("s32", [-2 ** 31, 2 ** 31 - 1, -1, 3]), V("s32", [2 ** 31 - 1, -2 ** 31, -1, 4])
    # -2^31 < 2^31-1 T ; reverse F ; -1 < -1 F ; 3 < 4 T
    eq(ivp.ltn_2x32(a, b), M(16, [True, False, False, True]))
    eq(ivp.eqn_2x32(a.view(np.uint32), b.view(np.uint32)), M(16, [False, False, True, False], True))


# ===================================================================== bmin / bmax (hand, every width)
# Lanes: 0 = (MIN, MAX) i.e. 0x80.. vs 0x7F.. ; 1 = (MAX, MIN) ; 2 = tie ; 3 = (-1, 0) ; 4 = tie at MIN
def _bm_inputs(kind):
    bits = {"8": 8, "16": 16, "32": 32}[kind]
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    sk = {8: "s8", 16: "s16", 32: "s32"}[bits]
    return sk, V(sk, [lo, hi, 5, -1, lo]), V(sk, [hi, lo, 5, 0, lo], 9)


@pytest.mark.parametrize("w", ["8", "16", "32"])
def test_bmin_bmax_signed(w):
    sk, a, b = _bm_inputs(w)
    n = DT[sk][1]
    bits = int(w)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    fmin = {"8": ivp.bmin2nx8, "16": ivp.bminnx16, "32": ivp.bminn_2x32}[w]
    fmax = {"8": ivp.bmax2nx8, "16": ivp.bmaxnx16, "32": ivp.bmaxn_2x32}[w]
    fl, vt = fmin(a, b)
    # min: lo<hi -> lo, flag 1 ; hi<lo F -> b = lo, flag 0 ; tie 5 -> flag 0 (b) ; -1<0 -> -1 flag 1 ;
    # tie lo -> flag 0 ; tail a=0, b=9: 0<9 -> 0 flag 1
    eq(vt, V(sk, [lo, lo, 5, -1, lo], 0))
    eq(fl, M(n, [True, False, False, True, False], True))
    fl, vt = fmax(a, b)
    # max: lo>hi F -> b = hi flag 0 ; hi>lo -> hi flag 1 ; tie 5 flag 0 ; -1>0 F -> 0 flag 0 ; tie lo flag 0 ;
    # tail 0>9 F -> 9 flag 0
    eq(vt, V(sk, [hi, hi, 5, 0, lo], 9))
    eq(fl, M(n, [False, True, False, False, False], False))


@pytest.mark.parametrize("w", ["8", "16", "32"])
def test_bmin_bmax_unsigned(w):
    bits = int(w)
    uk = {8: "u8", 16: "u16", 32: "u32"}[bits]
    n = DT[uk][1]
    top, below = 1 << (bits - 1), (1 << (bits - 1)) - 1   # 0x80.. and 0x7F..
    full = (1 << bits) - 1
    a, b = V(uk, [top, below, 5, full, 0]), V(uk, [below, top, 5, 0, 0], 9)
    fmin = {8: ivp.bminu2nx8, 16: ivp.bminunx16, 32: ivp.bminun_2x32}[bits]
    fmax = {8: ivp.bmaxu2nx8, 16: ivp.bmaxunx16, 32: ivp.bmaxun_2x32}[bits]
    fl, vt = fmin(a, b)
    # unsigned: 0x80.. < 0x7F.. F -> b = 0x7F.. flag 0 ; 0x7F.. < 0x80.. T flag 1 ; tie 5 F ;
    # 0xFF.. < 0 F -> 0 ; tie 0 F ; tail 0 < 9 T -> 0
    eq(vt, V(uk, [below, below, 5, 0, 0], 0))
    eq(fl, M(n, [False, True, False, False, False], True))
    fl, vt = fmax(a, b)
    # 0x80.. > 0x7F.. T -> 0x80.. flag 1 ; reverse F -> b = 0x80.. ; tie F ; 0xFF.. > 0 T ; tie F ; 0 > 9 F -> 9
    eq(vt, V(uk, [top, top, 5, full, 0], 9))
    eq(fl, M(n, [True, False, False, True, False], False))


def test_bmin_tie_selects_b_flag_zero_all_ties():
    a = V("s8", list(range(-32, 32)))
    fl, vt = ivp.bmin2nx8(a, a.copy())
    eq(fl, M(64, []))
    eq(vt, a)
    fl, vt = ivp.bmaxun_2x32(V("u32", [7] * 16), V("u32", [7] * 16))
    eq(fl, M(16, []))
    eq(vt, V("u32", [7] * 16))


# ===================================================================== babssub (hand)
def test_babssub2nx8():
    # |-128-127| = 255 flag(-128<127)=1 ; |127-(-128)| = 255 flag 0 ; |5-5| = 0 flag 0 ; |-3-4| = 7 flag 1
    fl, vt = ivp.babssub2nx8(V("s8", [-128, 127, 5, -3]), V("s8", [127, -128, 5, 4]))
    eq(vt, V("u8", [255, 255, 0, 7]))
    eq(fl, M(64, [True, False, False, True]))


def test_babssubu2nx8():
    # unsigned: |0x80-0x7F| = 1 flag 0 ; |0-255| = 255 flag 1 ; |200-100| = 100 flag 0
    fl, vt = ivp.babssubu2nx8(V("u8", [0x80, 0, 200]), V("u8", [0x7F, 255, 100]))
    eq(vt, V("u8", [1, 255, 100]))
    eq(fl, M(64, [False, True, False]))


def test_babssubnx16():
    # |-32768-32767| = 65535 flag 1 ; |32767+32768| = 65535 flag 0 ; |-1-1| = 2 flag 1
    fl, vt = ivp.babssubnx16(V("s16", [-32768, 32767, -1]), V("s16", [32767, -32768, 1]))
    eq(vt, V("u16", [65535, 65535, 2]))
    eq(fl, M(32, [True, False, True]))


def test_babssubunx16():
    # |0-0xFFFF| = 65535 flag 1 ; |0x8000-0x7FFF| = 1 flag 0 (unsigned: 0x8000 > 0x7FFF) ; tie 0 flag 0
    fl, vt = ivp.babssubunx16(V("u16", [0, 0x8000, 9]), V("u16", [0xFFFF, 0x7FFF, 9]))
    eq(vt, V("u16", [65535, 1, 0]))
    eq(fl, M(32, [True, False, False]))


# ===================================================================== baddnorm / bsubnorm (hand)
def test_baddnormnx16_overflow():
    a = V("s16", [32767, -32768, 100, -32768, 32767, -1])
    b = V("s16", [1, -1, 200, -32768, 32767, 1])
    # 32767+1 = 32768 = 0_1000..0 (17 bit): bit16 0 != bit15 1 -> ovf, 32768>>1 = 16384
    # -32768-1 = -32769 = 1_0111..1: bit16 1 != bit15 0 -> ovf, floor(-32769/2) = -16385
    # 100+200 = 300 no ovf
    # -32768-32768 = -65536 = 1_0000..0 -> ovf, -32768
    # 32767+32767 = 65534 = 0_1111..10 -> ovf, 32767
    # -1+1 = 0 no ovf
    fl, vt = ivp.baddnormnx16(a, b)
    eq(vt, V("s16", [16384, -16385, 300, -32768, 32767, 0]))
    eq(fl, M(32, [True, True, False, True, True, False]))


def test_bsubnormnx16_overflow():
    a = V("s16", [32767, -32768, -32768, 5, 0, -32768])
    b = V("s16", [-1, 1, 32767, 7, -32768, -32768])
    # 32767+1 = 32768 -> ovf -> 16384 ; -32769 -> ovf -> -16385 ; -65535 -> ovf -> floor(-32767.5) = -32768
    # 5-7 = -2 no ovf ; 0+32768 = 32768 -> ovf -> 16384 ; -32768+32768 = 0 no ovf
    fl, vt = ivp.bsubnormnx16(a, b)
    eq(vt, V("s16", [16384, -16385, -32768, -2, 16384, 0]))
    eq(fl, M(32, [True, True, True, False, True, False]))


# ===================================================================== predicated moves, rep (hand)
def test_mov2nx8t_merge():
    old, new = V("u8", list(range(64))), V("u8", [200] * 64)
    m = M(64, [True, False, True, False, False, True])
    # true lanes 0, 2, 5 take 200; the others keep their old value k
    want = V("u8", list(range(64)))
    want[[0, 2, 5]] = 200
    eq(ivp.mov2nx8t(old, new, m), want)


def test_movnx16t_movn_2x32t_merge():
    eq(ivp.movnx16t(V("u16", [1, 2, 3], 4), V("u16", [9, 9, 9], 9), M(32, [False, True, False], True)),
       V("u16", [1, 9, 3], 9))
    eq(ivp.movn_2x32t(V("u32", [1, 2, 3], 4), V("u32", [0xFFFFFFFF] * 3, 8), M(16, [True, False, True])),
       V("u32", [0xFFFFFFFF, 2, 0xFFFFFFFF], 4))


def test_repnx16():
    x = V("u16", list(range(100, 132)))
    eq(ivp.repnx16(x, 0), V("u16", [100] * 32))
    eq(ivp.repnx16(x, 31), V("u16", [131] * 32))


# ===================================================================== numpy-reference properties
def _i(x):
    return np.asarray(x).astype(np.int64)


def _wrapto(x, kind):
    dt = DT[kind][0]
    bits = np.iinfo(dt).bits
    return (np.asarray(x, dtype=np.int64) & ((1 << bits) - 1)).astype(np.uint64).astype(dt) if bits < 64 else x


VVV = [
    ("add2nx8", "u8", lambda a, b: _wrapto(_i(a) + _i(b), "u8")),
    ("addnx16", "u16", lambda a, b: _wrapto(_i(a) + _i(b), "u16")),
    ("addn_2x32", "u32", lambda a, b: _wrapto(_i(a) + _i(b), "u32")),
    ("sub2nx8", "u8", lambda a, b: _wrapto(_i(a) - _i(b), "u8")),
    ("subnx16", "u16", lambda a, b: _wrapto(_i(a) - _i(b), "u16")),
    ("subn_2x32", "u32", lambda a, b: _wrapto(_i(a) - _i(b), "u32")),
    ("and2nx8", "u8", lambda a, b: a & b),
    ("or2nx8", "u8", lambda a, b: a | b),
    ("xor2nx8", "u8", lambda a, b: a ^ b),
]


@pytest.mark.parametrize("name,kind,ref", VVV, ids=[v[0] for v in VVV])
@PROP
@given(data=st.data())
def test_prop_add_sub_bitwise(name, kind, ref, data):
    a, b = data.draw(vec_st(kind)), data.draw(vec_st(kind))
    eq(getattr(ivp, name)(a, b), ref(a, b))


def _sll_ref(x, amt, bits, abits):
    a = ((_i(amt) & ((1 << abits) - 1)) ^ (1 << (abits - 1))) - (1 << (abits - 1))
    x = _i(x)
    left = np.where(a < bits, (x << np.clip(a, 0, bits - 1)) & ((1 << bits) - 1), 0)
    right = np.where(-a < bits, x >> np.clip(-a, 0, bits - 1), 0)
    return np.where(a >= 0, left, right)


def _sra_ref(x, amt, bits, abits):
    a = ((_i(amt) & ((1 << abits) - 1)) ^ (1 << (abits - 1))) - (1 << (abits - 1))
    xs = _i(x)
    right = xs >> np.clip(a, 0, bits - 1)
    left = np.where(-a < bits, (xs << np.clip(-a, 0, bits - 1)) & ((1 << bits) - 1), 0)
    left = np.where(left >= (1 << (bits - 1)), left - (1 << bits), left)
    return np.where(a >= 0, right, left)


def _srl_ref(x, amt, bits):
    """srl: the amount is the whole lane read as a signed `bits`-bit integer; negative shifts left; |a| >= bits
    gives 0."""
    a = _i(amt.view(np.dtype(f"int{bits}")))
    x = _i(x)
    right = np.where(a < bits, x >> np.clip(a, 0, bits - 1), 0)
    left = np.where(-a < bits, (x << np.clip(-a, 0, bits - 1)) & ((1 << bits) - 1), 0)
    return np.where(a >= 0, right, left)


def _check_lane_shifts(x, amt, bits, srl, sll, sra):
    """srl / sll / sra by per-lane amounts on `bits`-bit lanes against the numpy references (srl reads the
    whole lane as a signed amount; sll / sra a signed amount log2(bits) + 2 bits wide: 6 for 16-bit lanes, 7 for
    32-bit)."""
    ab = {16: 6, 32: 7}[bits]
    u, s = x.dtype, np.dtype(f"int{bits}")
    eq(srl(x, amt), _srl_ref(x, amt, bits).astype(u))
    eq(sll(x, amt), _sll_ref(x, amt, bits, ab).astype(u))
    eq(sra(x.view(s), amt.view(s)), _sra_ref(x.view(s), amt, bits, ab).astype(s))


@PROP
@given(x=vec_st("u16"), amt=arrays(np.uint16, 32, elements=st.integers(0, 70) | st.integers(0, 0xFFFF)
                                    | st.integers(0x10000 - 70, 0xFFFF)))
def test_prop_lane_shifts_16(x, amt):
    _check_lane_shifts(x, amt, 16, ivp.srlnx16, ivp.sllnx16, ivp.sranx16)


def test_lane_shifts_16_every_amount():
    """srlnx16 / sllnx16 / sranx16 under every 16-bit amount lane value (65,536, 32 per call), each on a value
    with the top, bottom and a middle bit set and on its complement: the amount decoding (the whole lane for
    srl, its signed 6-bit field for sll / sra) and the range edges (-32768 is its own magnitude) at once."""
    amounts = np.arange(0x10000, dtype=np.uint32).astype(np.uint16).reshape(-1, 32)
    for x in (np.full(32, 0x8421, np.uint16), np.full(32, 0x7BDE, np.uint16)):
        for amt in amounts:
            _check_lane_shifts(x, amt, 16, ivp.srlnx16, ivp.sllnx16, ivp.sranx16)


@PROP
@given(x=vec_st("u32"), amt=arrays(np.uint32, 16, elements=st.integers(0, 140) | st.integers(0, 2 ** 32 - 1)
                                    | st.integers(2 ** 32 - 140, 2 ** 32 - 1)))
def test_prop_lane_shifts_32(x, amt):
    _check_lane_shifts(x, amt, 32, ivp.srln_2x32, ivp.slln_2x32, ivp.sran_2x32)


@PROP
@given(x=vec_st("u16"), y=vec_st("u32"), i16=st.integers(0, 15), i32=st.integers(0, 31))
def test_prop_imm_shifts(x, y, i16, i32):
    eq(ivp.sllinx16(x, i16), ((_i(x) << i16) & 0xFFFF).astype(np.uint16))
    eq(ivp.srlinx16(x, i16), (x >> np.uint16(i16)).astype(np.uint16))
    eq(ivp.srainx16(x.view(np.int16), i16), (x.view(np.int16) >> np.int16(i16)).astype(np.int16))
    eq(ivp.sllin_2x32(y, i32), ((_i(y) << i32) & 0xFFFFFFFF).astype(np.uint32))
    eq(ivp.srlin_2x32(y, i32), (y >> np.uint32(i32)).astype(np.uint32))
    eq(ivp.srain_2x32(y.view(np.int32), i32), (y.view(np.int32) >> np.int32(i32)).astype(np.int32))


def test_imm_shifts_every_amount():
    """The six immediate shifts under every immediate they take (0..15 on 16-bit lanes, 0..31 on 32-bit), on
    random lanes and the edge patterns (top bit, bottom bit, all ones): the immediate reaches the primitive at run
    time, as it does from a program, and takes the SIMD leaf where the level has one."""
    rng = np.random.default_rng(38)
    edges16 = np.array([0x8000, 0x0001, 0xFFFF, 0x7FFF, 0x8001, 0], np.uint16)
    x = np.concatenate([edges16, rng.integers(0, 1 << 16, 32 - len(edges16))]).astype(np.uint16)
    edges32 = np.array([0x80000000, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000001, 0], np.uint32)
    y = np.concatenate([edges32, rng.integers(0, 1 << 32, 16 - len(edges32))]).astype(np.uint32)
    for i in range(16):
        eq(ivp.sllinx16(x, i), ((_i(x) << i) & 0xFFFF).astype(np.uint16))
        eq(ivp.srlinx16(x, i), (_i(x) >> i).astype(np.uint16))
        eq(ivp.srainx16(x.view(np.int16), i), (_i(x.view(np.int16)) >> i).astype(np.int16))
    for i in range(32):
        eq(ivp.sllin_2x32(y, i), ((_i(y) << i) & 0xFFFFFFFF).astype(np.uint32))
        eq(ivp.srlin_2x32(y, i), (_i(y) >> i).astype(np.uint32))
        eq(ivp.srain_2x32(y.view(np.int32), i), (_i(y.view(np.int32)) >> i).astype(np.int32))


def _draw_pair(data, kind):
    """Two random vectors of `kind` that tie in a random subset of lanes."""
    a = data.draw(vec_st(kind))
    tie = data.draw(arrays(np.bool_, len(a)))
    return a, np.where(tie, a, data.draw(vec_st(kind))).astype(a.dtype)


CMP = [
    ("eq2nx8", "u8", np.equal), ("ltu2nx8", "u8", np.less), ("eqnx16", "u16", np.equal),
    ("neqnx16", "u16", np.not_equal), ("ltnx16", "s16", np.less), ("lenx16", "s16", np.less_equal),
    ("ltunx16", "u16", np.less), ("eqn_2x32", "u32", np.equal), ("ltn_2x32", "s32", np.less),
]


@pytest.mark.parametrize("name,kind,ref", CMP, ids=[c[0] for c in CMP])
@PROP
@given(data=st.data())
def test_prop_compares(name, kind, ref, data):
    a, b = _draw_pair(data, kind)
    eq(getattr(ivp, name)(a, b), ref(a, b))


BM = [
    ("bmin2nx8", "s8", "min"), ("bminu2nx8", "u8", "min"), ("bmax2nx8", "s8", "max"), ("bmaxu2nx8", "u8", "max"),
    ("bminnx16", "s16", "min"), ("bminunx16", "u16", "min"), ("bmaxnx16", "s16", "max"),
    ("bmaxunx16", "u16", "max"), ("bminn_2x32", "s32", "min"), ("bminun_2x32", "u32", "min"),
    ("bmaxn_2x32", "s32", "max"), ("bmaxun_2x32", "u32", "max"),
]


@pytest.mark.parametrize("name,kind,op", BM, ids=[b[0] for b in BM])
@PROP
@given(data=st.data())
def test_prop_bmin_bmax(name, kind, op, data):
    a, b = _draw_pair(data, kind)
    fl, vt = getattr(ivp, name)(a, b)
    flag = (a < b) if op == "min" else (a > b)
    eq(fl, flag)
    eq(vt, np.where(flag, a, b))


AS = [("babssub2nx8", "s8", np.uint8), ("babssubu2nx8", "u8", np.uint8), ("babssubnx16", "s16", np.uint16),
      ("babssubunx16", "u16", np.uint16)]


@pytest.mark.parametrize("name,kind,odt", AS, ids=[a[0] for a in AS])
@PROP
@given(data=st.data())
def test_prop_babssub(name, kind, odt, data):
    a, b = data.draw(vec_st(kind)), data.draw(vec_st(kind))
    fl, vt = getattr(ivp, name)(a, b)
    eq(fl, a < b)
    eq(vt, np.abs(_i(a) - _i(b)).astype(odt))


def test_babssub_8bit_every_pair():
    """babssub2nx8 / babssubu2nx8 on every pair of 8-bit lane values (65,536 pairs, 64 per call), and the 16-bit
    forms on every pair of their edge values."""
    a_all = np.repeat(np.arange(256), 256).astype(np.uint8).reshape(-1, 64)
    b_all = np.tile(np.arange(256), 256).astype(np.uint8).reshape(-1, 64)
    for name, kind in (("babssub2nx8", np.int8), ("babssubu2nx8", np.uint8)):
        fn = getattr(ivp, name)
        for a, b in zip(a_all, b_all):
            x, y = a.view(kind), b.view(kind)
            fl, vt = fn(x, y)
            eq(fl, x < y)
            eq(vt, np.abs(_i(x) - _i(y)).astype(np.uint8))
    edges = np.array([0, 1, 0x7FFE, 0x7FFF, 0x8000, 0x8001, 0xFFFE, 0xFFFF], dtype=np.uint16)
    for lo in (0, 32):
        a, b = np.repeat(edges, 8)[lo:lo + 32], np.tile(edges, 8)[lo:lo + 32]
        for name, kind in (("babssubnx16", np.int16), ("babssubunx16", np.uint16)):
            x, y = a.view(kind), b.view(kind)
            fl, vt = getattr(ivp, name)(x, y)
            eq(fl, x < y)
            eq(vt, np.abs(_i(x) - _i(y)).astype(np.uint16))


@PROP
@given(a=vec_st("s16"), b=vec_st("s16"))
def test_prop_baddnorm_bsubnorm(a, b):
    for name, s in (("baddnormnx16", _i(a) + _i(b)), ("bsubnormnx16", _i(a) - _i(b))):
        ovf = (s < -32768) | (s > 32767)   # bit 15 != bit 16 of the 17-bit result <=> outside int16
        fl, vt = getattr(ivp, name)(a, b)
        eq(fl, ovf)
        eq(vt, np.where(ovf, s >> 1, s).astype(np.int16))


@pytest.mark.parametrize("name,kind", [("mov2nx8t", "u8"), ("movnx16t", "u16"), ("movn_2x32t", "u32")])
@PROP
@given(data=st.data())
def test_prop_predicated_moves(name, kind, data):
    old, new = data.draw(vec_st(kind)), data.draw(vec_st(kind))
    m = data.draw(arrays(np.bool_, len(old)))
    eq(getattr(ivp, name)(old, new, m), np.where(m, new, old))


@PROP
@given(x=vec_st("u16"), lane=st.integers(0, 31))
def test_prop_repnx16(x, lane):
    eq(ivp.repnx16(x, lane), np.full(32, x[lane], dtype=np.uint16))


# ===================================================================== vbool logic (C-only, via _ivp._c_*)
def test_vbool_logic():
    from q7emu.primitives import _ivp
    a = M(64, [True, True, False, False])
    b = M(64, [True, False, True, False])
    eq(_ivp._c_andb(a, b), M(64, [True, False, False, False]))
    eq(_ivp._c_orb(a, b), M(64, [True, True, True, False]))
    eq(_ivp._c_xorb(a, b), M(64, [False, True, True, False]))
    eq(_ivp._c_notb(a), M(64, [False, False, True, True], fill=True))   # ~a: the 60 false bits become true
