"""Hostile ivp arguments (issue 15 findings 1 and 8): the reproducers run in a subprocess, so a segfault is a
test failure rather than a dead test run; then every wrapper of the op table is called with random and mutated
arguments (wrong kinds, shapes, dtypes, huge and negative integers), also in a subprocess, and must return or
raise InvalidArgument (one line), nothing else.

The full-integer-range property tests of the memory wrappers against a numpy reference are in
firmware_tests/primitives/test_ivp_mem.py.
"""
from __future__ import annotations

import json

import pytest
from hostile_lib import python

# the issue's reproducers: each segfaulted (a wild store or read) or overflowed a C int
REPRODUCERS = [
    "ivp.sav2nx8_xp(np.zeros(64, np.uint8), np.zeros(64, np.uint8), 2**63-1, 64)",
    "ivp.lv2nx8_ip(np.zeros(64, np.uint8), 2**63-1, 0)",
    "ivp.l2a4nx8_ip(np.zeros(64, np.uint8), 2**63-1, 0)",
    "ivp.lav2nx8_xp(np.zeros(64, np.uint8), 2**63-1, 64)",
    "ivp.labvdcmprs2nx8_xp(np.zeros(64, np.uint8), np.ones(64, np.bool_), 2**63-1, 0)",
    "ivp.sv2nx8_ip(np.zeros(64, np.uint8), np.zeros(64, np.uint8), 2**63-1, 0)",
    "ivp.la2nx8_stream(np.zeros(64, np.uint8), 2**63-1, 1)",
    "ivp.la2nx8_stream(np.zeros(64, np.uint8), 1 << 20, 2**31-1)",      # the C int count overflow
    "ivp.la2nx8_stream(np.zeros(256, np.uint8), 0, 2**31)",
    "ivp.lv2nx8_ip(np.zeros(256, np.uint8), 64, 2**63-1)",                # off + inc overflows int64
    "ivp.sav2nx8_xp(np.zeros(256, np.uint8), np.zeros(64, np.uint8), 2**62, 2**62 + 2**61)",
    # finding 8: plain Python errors
    "ivp.lv2nx8_ip(np.zeros(64, np.uint8), 2**64, 0)",                    # OverflowError
    "ivp.lv2nx8_ip([[1, 2], [3]], 0, 0)",                                 # ValueError (ragged)
    "ivp.la2nx8_stream(np.zeros(64, np.uint8), 'a', 1)",                  # TypeError
    "ivp.add2nx8([[1, 2], [3]], np.zeros(64, np.uint8))",
    "ivp.wvec_raw([0] * 64, 'x')", "ivp.wvec_view(10**12, 24)", "ivp.wvec_view(None, 24)",
]

REPRO_SCRIPT = """
import sys, numpy as np
from q7emu import ivp
from q7emu.errors import InvalidArgument
try:
    eval(sys.argv[1])
except InvalidArgument as e:
    assert "\\n" not in str(e)
    print("InvalidArgument")
else:
    print("returned")
"""


@pytest.mark.parametrize("expr", REPRODUCERS)
def test_issue_reproducer_is_invalid_argument_in_a_subprocess(expr):
    out = python(REPRO_SCRIPT, expr)
    assert out.signal is None, f"{expr}: killed by signal {out.signal}\n{out.describe()}"
    assert out.returncode == 0 and out.stdout.strip() == "InvalidArgument", out.describe()


FUZZ_SCRIPT = r"""
import json, sys, numpy as np
from q7emu.primitives import _ivp, gen_wrappers, optable
from q7emu.errors import InvalidArgument

rng = np.random.default_rng(int(sys.argv[1]))
ROUNDS = int(sys.argv[2])
INTS = [0, 1, -1, 63, 64, 65, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**30]
DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.int64, np.uint64, np.float16, np.float32,
          np.float64, np.bool_, np.complex64, object]


def good(o):
    # a well-formed operand of o's kind (the starting point of a mutation)
    if o.kind == optable.MEMORY:
        return np.zeros(int(rng.integers(0, 300)), np.uint8)
    if o.kind in (optable.SCALAR, optable.IMM):
        return int(rng.choice([o.example if o.kind == optable.IMM and o.example is not None else 0, 1, 64]))
    if o.kind == optable.PR:
        return int(rng.integers(0, 2**63))
    if o.kind == optable.VBOOL:
        return rng.integers(0, 2, o.lanes).astype(np.bool_)
    if o.kind == optable.WVEC:
        return [0] * o.lanes if o.pytype == "list[int]" else np.zeros(o.lanes, np.int64)
    dt = {"u8": np.uint8, "s8": np.int8, "u16": np.uint16, "s16": np.int16, "u32": np.uint32, "s32": np.int32,
          "f16": np.float16, "f32": np.float32}[gen_wrappers.LANE_KIND[o.dtype]]
    return np.zeros(64 // np.dtype(dt).itemsize, dt)


def hostile():
    k = int(rng.integers(0, 12))
    if k == 0:
        return int(rng.choice(INTS)) * int(rng.choice([1, -1]))
    if k == 1:
        return int(rng.integers(-2**63, 2**63 - 1, dtype=np.int64)) * int(rng.integers(1, 4))
    if k == 2:
        dt = DTYPES[int(rng.integers(0, len(DTYPES)))]
        shape = tuple(int(x) for x in rng.integers(0, 70, int(rng.integers(0, 3))))
        return np.zeros(shape, dt)
    if k == 3:
        return [[1, 2], [3]]
    if k == 4:
        return None
    if k == 5:
        return "64"
    if k == 6:
        return float(rng.choice([0.5, 1e300, float("nan"), float("inf")]))
    if k == 7:
        return np.zeros(int(rng.integers(0, 130)), np.uint8)[::2]
    if k == 8:
        return np.full(64, 2**40, dtype=np.int64)
    if k == 9:
        return [2**70] * 64
    if k == 10:
        return np.uint64(2**64 - 1)
    return object()


counts = {"calls": 0, "returned": 0, "InvalidArgument": 0}
for r in range(ROUNDS):
    for op in optable.ALL_OPS:
        f = getattr(_ivp, gen_wrappers.wrapper_name(op))
        args = [good(o) for o in op.args]
        for _ in range(int(rng.integers(1, 3))):
            args[int(rng.integers(0, len(args)))] = hostile()
        counts["calls"] += 1
        try:
            f(*args)
            counts["returned"] += 1
        except InvalidArgument as e:
            assert "\n" not in str(e), (op.mnemonic, str(e))
            counts["InvalidArgument"] += 1
        except Exception as e:
            print(json.dumps({"bug": f"{op.mnemonic}{tuple(type(a).__name__ for a in args)}: "
                                     f"{type(e).__name__}: {e}"}))
            sys.exit(1)
print(json.dumps(counts))
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_every_wrapper_with_hostile_arguments_returns_or_raises_invalid_argument(seed):
    out = python(FUZZ_SCRIPT, str(seed), "40")
    assert out.signal is None, out.describe()
    assert out.returncode == 0, out.describe()
    counts = json.loads(out.stdout.strip().splitlines()[-1])
    assert counts["calls"] == counts["returned"] + counts["InvalidArgument"] > 0
    assert counts["InvalidArgument"] > counts["calls"] // 2        # the mutations are mostly refused
    print(f"\nivp fuzz seed {seed}: {counts}")
