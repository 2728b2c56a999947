"""Every lane of every register width is range-checked (issue 41 item 11): a 96-bit accumulator lane took any Python
int (2^200) and wrapped it silently, where an 8/16/32-bit vec lane refuses a value its dtype cannot hold.

For every op of the op table and every register operand it takes (vec lanes of each integer view, wvec lanes of the
24-, 48- and 96-bit views, pr, immediates), each lane in turn is set just outside its range (refused: InvalidArgument
naming the operand) and to both ends of it (accepted). Expected ranges come from the register widths, not from the
code under test: a w-bit lane holds its signed or its unsigned value, -2^(w-1) .. 2^w - 1; a vec lane its dtype's;
pr 0 .. 2^64 - 1; an immediate the op table's lo .. hi.
"""
from __future__ import annotations

import numpy as np
import pytest

from q7emu.errors import InvalidArgument
from q7emu.primitives import _ivp, gen_wrappers, optable
from q7emu.primitives.regs import PR, VBool, WVec

DTYPES = {"u8": np.uint8, "s8": np.int8, "u16": np.uint16, "s16": np.int16, "u32": np.uint32, "s32": np.int32,
          "f16": np.float16, "f32": np.float32}


def good(o):
    """A well-formed operand of o's kind (zeros, the example immediate)."""
    if o.kind == optable.MEMORY:
        return np.zeros(256, np.uint8)
    if o.kind == optable.SCALAR:
        return 0
    if o.kind == optable.IMM:
        return o.example if o.example is not None else (o.values[0] if o.values else o.lo)
    if o.kind == optable.PR:
        return 0
    if o.kind == optable.VBOOL:
        return np.zeros(o.lanes, np.bool_)
    if o.kind == optable.WVEC:
        return [0] * o.lanes if o.pytype == "list[int]" else np.zeros(o.lanes, np.int64)
    if o.kind == optable.VALIGN:
        return np.zeros(64, np.uint8)
    return np.zeros(o.lanes, DTYPES[gen_wrappers.LANE_KIND[o.dtype]])


def lane_bounds(o):
    """(lo, hi) of one lane of a register operand, from its width; None for operands without integer lanes (float
    lanes take any value of their dtype)."""
    if o.kind == optable.WVEC:
        w = int(o.view.removeprefix("wvec"))
        return -(1 << (w - 1)), (1 << w) - 1
    if o.kind == optable.VEC:
        kind = gen_wrappers.LANE_KIND[o.dtype]
        if kind.startswith("f"):
            return None
        info = np.iinfo(DTYPES[kind])
        return int(info.min), int(info.max)
    return None


def with_lane(o, base, k, value):
    """``base`` with lane k set to ``value`` (a wider container where the value needs one)."""
    if isinstance(base, list):
        out = list(base)
        out[k] = value
        return out
    arr = base.astype(np.int64) if -(1 << 63) <= value < (1 << 63) else base.astype(object)
    arr[k] = value
    return arr


OPERANDS = [(op, i) for op in optable.ALL_OPS for i, o in enumerate(op.args)
            if o.kind in (optable.WVEC, optable.PR, optable.IMM) or (o.kind == optable.VEC and lane_bounds(o))]


@pytest.mark.parametrize("op, i", OPERANDS, ids=[f"{op.mnemonic}-{op.args[i].argname}" for op, i in OPERANDS])
def test_every_lane_is_range_checked(op, i):
    f = getattr(_ivp, gen_wrappers.wrapper_name(op))
    o = op.args[i]
    args = [good(a) for a in op.args]

    def call(value):
        return f(*args[:i], value, *args[i + 1:])

    if o.kind == optable.PR:
        for bad in (-1, 1 << 64, 1 << 200):
            with pytest.raises(InvalidArgument, match=o.argname):
                call(bad)
        call(0), call((1 << 64) - 1)
        return
    if o.kind == optable.IMM:
        for bad in (o.lo - 1, o.hi + 1, 1 << 200):
            with pytest.raises(InvalidArgument, match=o.argname):
                call(bad)
        call(good(o))
        return
    lo, hi = lane_bounds(o)
    base = good(o)
    for k in range(o.lanes):
        for bad in (lo - 1, hi + 1) + ((1 << 200,) if o.kind == optable.WVEC else ()):
            with pytest.raises(InvalidArgument, match=o.argname):
                call(with_lane(o, base, k, bad))
        for fine in (lo, hi):
            call(with_lane(o, base, k, fine) if o.kind == optable.WVEC else
                 with_lane(o, base, k, fine).astype(base.dtype))


@pytest.mark.parametrize("width", [24, 48, 96])
def test_wvec_images_and_views_check_every_lane(width):
    n = 1536 // width
    lo, hi = -(1 << (width - 1)), (1 << width) - 1
    for k in range(n):
        for bad in (lo - 1, hi + 1, 1 << 200):
            lanes = [0] * n
            lanes[k] = bad
            with pytest.raises(InvalidArgument, match=rf"\[{k}\]"):
                _ivp.wvec_raw(lanes, width)
            with pytest.raises(InvalidArgument, match=rf"lanes\[{k}\]"):
                WVec.from_lanes(lanes, width)
        lanes = [0] * n
        lanes[k] = hi
        assert WVec.from_lanes(lanes, width).raw == _ivp.wvec_raw(lanes, width)
        assert WVec.from_lanes(lanes, width).lanes(width)[k] == -1          # 2^w - 1 read back signed
        lanes[k] = lo
        assert WVec.from_lanes(lanes, width).lanes(width)[k] == lo


def test_the_64_bit_registers_hold_64_bits():
    for bad in (-1, 1 << 64, 1 << 200, True, 1.5):
        with pytest.raises(InvalidArgument):
            PR(bad)
        with pytest.raises(InvalidArgument):
            VBool(bad)
    assert PR((1 << 64) - 1).fields(32, signed=False) == [0xFFFFFFFF, 0xFFFFFFFF]
    assert VBool((1 << 64) - 1).lanes(32).all()
