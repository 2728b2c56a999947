"""The program interpreter (docs/asm.md §4): the scalar core's semantics against an independent Python model, every
IVP op's operands decoded as written (the trace records what each op was given), VLIW bundles, zero-overhead loops,
the memory map and the errors that stop a run."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from q7emu.analysis.trace import Recorder
from q7emu.asm import DATA_BASE, assemble
from q7emu.errors import InvalidArgument, ProgramError
from q7emu.kernels.dequant import run_traced
from q7emu.primitives import asm_syntax as S
from q7emu.primitives import optable as T
from q7emu.primitives.scalar_ops import B4CONST, B4CONSTU

M32 = 0xFFFFFFFF
U32 = st.integers(0, M32)
EDGES = [0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0x80000001, M32, M32 - 1, 0xFFFF, 0x10000, 0x8000]


def s32(x):
    return x - (1 << 32) if x & 0x80000000 else x


def s16(x):
    x &= 0xFFFF
    return x - (1 << 16) if x & 0x8000 else x


def tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


#: the scalar core's three-register ops, written again here from docs/firmware.md §6.4 / the base ISA
RRR = {
    "add": lambda s, t: s + t, "sub": lambda s, t: s - t,
    "addx2": lambda s, t: (s << 1) + t, "addx4": lambda s, t: (s << 2) + t, "addx8": lambda s, t: (s << 3) + t,
    "subx2": lambda s, t: (s << 1) - t, "subx4": lambda s, t: (s << 2) - t, "subx8": lambda s, t: (s << 3) - t,
    "and": lambda s, t: s & t, "or": lambda s, t: s | t, "xor": lambda s, t: s ^ t,
    "mull": lambda s, t: s * t, "muluh": lambda s, t: (s * t) >> 32, "mulsh": lambda s, t: (s32(s) * s32(t)) >> 32,
    "mul16u": lambda s, t: (s & 0xFFFF) * (t & 0xFFFF), "mul16s": lambda s, t: s16(s) * s16(t),
    "quou": lambda s, t: s // t, "remu": lambda s, t: s % t,
    "quos": lambda s, t: tdiv(s32(s), s32(t)), "rems": lambda s, t: s32(s) - s32(t) * tdiv(s32(s), s32(t)),
    "salt": lambda s, t: int(s32(s) < s32(t)), "saltu": lambda s, t: int(s < t),
}
COND = {"moveqz": lambda t: t == 0, "movnez": lambda t: t != 0, "movltz": lambda t: s32(t) < 0,
        "movgez": lambda t: s32(t) >= 0}
BRANCH2 = {"beq": lambda s, t: s == t, "bne": lambda s, t: s != t, "blt": lambda s, t: s32(s) < s32(t),
           "bge": lambda s, t: s32(s) >= s32(t), "bltu": lambda s, t: s < t, "bgeu": lambda s, t: s >= t,
           "bany": lambda s, t: s & t != 0, "bnone": lambda s, t: s & t == 0, "ball": lambda s, t: ~s & t & M32 == 0,
           "bnall": lambda s, t: ~s & t & M32 != 0, "bbc": lambda s, t: not (s >> (t & 31)) & 1,
           "bbs": lambda s, t: bool((s >> (t & 31)) & 1)}
BRANCHZ = {"beqz": lambda s: s == 0, "bnez": lambda s: s != 0, "bltz": lambda s: s32(s) < 0,
           "bgez": lambda s: s32(s) >= 0}


def run_words(text: str, rows: list[list[int]], nwords: int = 4, **kw) -> np.ndarray:
    """Run ``text`` once per row of u32 words (each row a partition at address 0); the partitions' words after."""
    sbuf = np.zeros((len(rows), 4 * nwords), np.uint8)
    w = sbuf.view("<u4")
    for i, r in enumerate(rows):
        w[i, :len(r)] = r
    assemble(text).run(sbuf, **kw)
    return w.copy()


def pairs():
    rng = np.random.default_rng(11)
    out = [(a, b) for a in EDGES for b in EDGES]
    out += [tuple(int(x) for x in rng.integers(0, 1 << 32, 2, dtype=np.uint64)) for _ in range(400)]
    return out


@pytest.mark.parametrize("name", sorted(RRR))
def test_three_register_ops(name):
    rows = [[s, t] for s, t in pairs() if not (name[:3] in ("quo", "rem") and t == 0)]
    got = run_words(f"l32i a2, a5, 0\nl32i a3, a5, 4\n{name} a4, a2, a3\ns32i a4, a5, 8\nretw\n", rows)
    want = [RRR[name](s, t) & M32 for s, t in rows]
    assert [int(x) for x in got[:, 2]] == want


@pytest.mark.parametrize("name", sorted(COND))
def test_conditional_moves(name):
    rows = [[s, t, 0x5A5A5A5A] for s, t in pairs()[:300]]
    got = run_words(f"l32i a2, a5, 0\nl32i a3, a5, 4\nl32i a4, a5, 8\n{name} a4, a2, a3\ns32i a4, a5, 12\n", rows)
    assert [int(x) for x in got[:, 3]] == [s if COND[name](t) else 0x5A5A5A5A for s, t, _ in rows]


@pytest.mark.parametrize("name", sorted(BRANCH2) + sorted(BRANCHZ))
def test_branches(name):
    rows = [[s, t] for s, t in pairs()[:300]]
    operands = "a2, a3" if name in BRANCH2 else "a2"
    got = run_words(f"""
        l32i a2, a5, 0
        l32i a3, a5, 4
        movi a4, 1
        {name} {operands}, taken
        movi a4, 2
        j done
    taken:
        movi a4, 3
    done:
        s32i a4, a5, 8
    """, rows)
    want = [3 if (BRANCH2[name](s, t) if name in BRANCH2 else BRANCHZ[name](s)) else 2 for s, t in rows]
    assert [int(x) for x in got[:, 2]] == want


@pytest.mark.parametrize("name,table,cond", [
    ("beqi", B4CONST, lambda s, i: s == i & M32), ("bnei", B4CONST, lambda s, i: s != i & M32),
    ("blti", B4CONST, lambda s, i: s32(s) < i), ("bgei", B4CONST, lambda s, i: s32(s) >= i),
    ("bltui", B4CONSTU, lambda s, i: s < i), ("bgeui", B4CONSTU, lambda s, i: s >= i),
    ("bbci", range(32), lambda s, i: not (s >> i) & 1), ("bbsi", range(32), lambda s, i: bool((s >> i) & 1))])
def test_immediate_branches(name, table, cond):
    values = [0, 1, 2, 7, 8, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x10000, M32, 0x80000000, 0xFFFFFFFE, 12, 64]
    for imm in table:
        got = run_words(f"l32i a2, a5, 0\nmovi a4, 1\n{name} a2, {imm}, t\nmovi a4, 2\nj d\nt:\nmovi a4, 3\n"
                        "d:\ns32i a4, a5, 4\n", [[v] for v in values])
        assert [int(x) for x in got[:, 1]] == [3 if cond(v, imm) else 2 for v in values], imm


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(U32, st.integers(-2048, 2047), st.integers(-128, 127), st.integers(1, 31), st.integers(0, 15),
       st.integers(0, 31), st.integers(0, 31), st.integers(1, 16), st.integers(-128, 127), st.integers(0, 65535))
def test_immediate_ops(s, movi, addi, slli, srli, srai, shift, bits, addmi, c16):
    got = run_words(f"""
        l32i a2, a5, 0
        movi a3, {movi}
        addi a4, a2, {addi}
        slli a6, a2, {slli}
        srli a7, a2, {srli}
        srai a8, a2, {srai}
        extui a9, a2, {shift}, {bits}
        addmi a10, a2, {addmi * 256}
        mov a11, a2
        const16 a11, {c16}
        neg a12, a2
        abs a13, a2
        s32i a3, a5, 4
        s32i a4, a5, 8
        s32i a6, a5, 12
        s32i a7, a5, 16
        s32i a8, a5, 20
        s32i a9, a5, 24
        s32i a10, a5, 28
        s32i a11, a5, 32
        s32i a12, a5, 36
        s32i a13, a5, 40
    """, [[s]], nwords=11)
    want = [movi, s + addi, s << slli, s >> srli, s32(s) >> srai, (s >> shift) & ((1 << bits) - 1), s + addmi * 256,
            (s << 16) | c16, -s, abs(s32(s))]
    assert [int(x) for x in got[0, 1:]] == [w & M32 for w in want]


def test_loads_and_stores_of_every_width():
    got = run_words("""
        l32i a2, a5, 0
        s8i a2, a5, 8
        s16i a2, a5, 12
        l16ui a3, a5, 0
        l16si a4, a5, 2
        l8ui a6, a5, 3
        s32i a3, a5, 16
        s32i a4, a5, 20
        s32i a6, a5, 24
    """, [[0x80F1A2B3]], nwords=7)
    assert [int(x) for x in got[0]] == [0x80F1A2B3, 0, 0xB3, 0xA2B3, 0xA2B3, 0xFFFF80F1, 0x80]


def test_divide_by_zero_stops_the_run_naming_the_line():
    with pytest.raises(ProgramError, match=r"<program>:3:1: partition 1: quou: integer divide by zero"):
        run_words("l32i a2, a5, 0\nl32i a3, a5, 4\nquou a4, a2, a3\n", [[1, 1], [1, 0]])


# ---------------------------------------------------------------------- zero-overhead loops
@pytest.mark.parametrize("count", [1, 2, 5, 100])
def test_loop_runs_its_body_count_times(count):
    got = run_words("l32i a2, a5, 0\nmovi a3, 0\nloop a2, end\n  addi a3, a3, 1\n  addi a3, a3, 10\nend:\n"
                    "s32i a3, a5, 4\n", [[count]])
    assert int(got[0, 1]) == 11 * count


@pytest.mark.parametrize("op,count,runs", [("loopnez", 0, 0), ("loopnez", 3, 3), ("loopgtz", 0, 0),
                                           ("loopgtz", M32, 0), ("loopgtz", 4, 4), ("loop", 1, 1)])
def test_loop_skips(op, count, runs):
    got = run_words(f"l32i a2, a5, 0\nmovi a3, 0\n{op} a2, end\n  addi a3, a3, 1\nend:\ns32i a3, a5, 4\n", [[count]])
    assert int(got[0, 1]) == runs


def test_loop_of_zero_runs_two_to_the_32_times():
    with pytest.raises(ProgramError, match=r"step budget spent \(an endless loop\?.*\): 1000 bundles"):
        run_words("movi a2, 0\nloop a2, end\n  nop\nend:\n", [[0]], max_steps=1000)


def test_branch_out_of_a_loop_and_a_bundle_with_a_branch():
    got = run_words("""
        movi a2, 10
        movi a3, 0
        loop a2, end
          addi a3, a3, 1
          { beqi a3, 4, out ; ivp_add2nx8 v1, v2, v3 ; movi a4, 7 }   # every op of the bundle runs, then the branch
        end:
        movi a3, 99
    out:
        s32i a3, a5, 0
        s32i a4, a5, 4
    """, [[0]])
    assert [int(x) for x in got[0, :2]] == [4, 7]


# ---------------------------------------------------------------------- VLIW bundles
def test_a_bundle_reads_the_state_from_before_it():
    sbuf = np.zeros((1, 256), np.uint8)
    sbuf[0, :64] = np.arange(64)
    sbuf[0, 64:128] = np.arange(64) + 100
    assemble("""
        movi a2, 0
        movi a3, 64
        movi a4, 5
        movi a6, 9
        { ivp_lv2nx8_i v1, a2, 0 ; ivp_lv2nx8_i v2, a2, 64 }
        { ivp_or2nx8 v1, v2, v2 ; ivp_or2nx8 v2, v1, v1 ; mov a4, a6 ; mov a6, a4 }   # both swaps
        { ivp_sv2nx8_ip v1, a3, 64 ; ivp_lv2nx8_i v3, a3, 0 }      # the load sees the memory from before the store
        movi a3, 128
        ivp_sv2nx8_ip v2, a3, 64
        ivp_sv2nx8_ip v3, a3, 0
        s32i a4, a2, 0
        s32i a6, a2, 4
    """).run(sbuf)
    assert list(sbuf[0, 64:128]) == list(np.arange(64) + 100)      # v1 after the swap = the old v2
    assert list(sbuf[0, 128:192]) == list(np.arange(64))           # v2 after the swap = the old v1
    assert list(sbuf[0, 192:256]) == list(np.arange(64) + 100)     # v3: the row before the store
    assert list(sbuf[0, :8].view("<u4")) == [9, 5]


# ---------------------------------------------------------------------- every IVP op decodes its operands
def _prologue(rng) -> str:
    """Fill every register with random bits: v from the data section, vb by compares, pr by extracts, wv by MACs."""
    rows = rng.integers(0, 256, (32, 64), dtype=np.uint8)
    lines = [".data", "rows:"] + [f"  .byte {', '.join(str(b) for b in r)}" for r in rows] + [".text"]
    lines += ["  const16 a8, hi16(rows)", "  const16 a8, lo16(rows)"]
    lines += [f"  ivp_lv2nx8_i v{i}, a8, {64 * i}" for i in range(32)]
    lines += [f"  ivp_ltu2nx8 vb{i}, v{i}, v{i + 1}" for i in range(16)]
    lines += [f"  ivp_dextrprn_2x32 pr{i}, v{i}, v{i + 2}, {i}, {15 - i}" for i in range(16)]
    lines += [f"  ivp_mulan_2x32 wv{i}, v{i}, v{i + 5}" for i in range(4)]
    return "\n".join(lines) + "\n"


def _operand_records(op, values):
    """What the trace records of one op as the interpreter issues it: (kind, role, register) per operand, in the
    instruction layer's order (sources before the op, then destinations; docs/traces.md §1.1)."""
    kinds = {T.VEC: 1, T.WVEC: 2, T.VBOOL: 3, T.PR: 4}
    by_name = {f.operand: v for f, v in zip(S.fields(op), values)}
    srcs, dsts = [], []
    for o in op.operands:
        if o.kind in kinds:
            reg = by_name[o.name]
            if o.role != T.DST:
                srcs.append((kinds[o.kind], 0, reg))
            if o.role != T.SRC:
                dsts.append((kinds[o.kind], 1, reg))
        elif o.kind == T.IMM:
            srcs.append((5, 0, 255))
        elif o.kind == T.SCALAR:
            srcs.append((5, 0, {"off": 254, "n": 253}.get(o.name, 255)))
    return srcs + dsts


@pytest.mark.parametrize("op", T.ALL_OPS, ids=lambda o: o.mnemonic)
def test_every_ivp_op_gets_the_operands_written(op):
    """The interpreter decodes each operand field into the op's parameter: the trace of the op (recorded by the
    kernels' own instruction layer) names the registers and immediates the program wrote, and the values its
    scalars had (a memory offset relative to its region)."""
    rng = np.random.default_rng(len(op.mnemonic) * 7 + 1)
    fields = S.fields(op)
    values = []
    for f in fields:
        if f.kind in S.REGISTER_FILES and f.kind != "a":
            values.append(int(rng.integers(0, S.REGISTER_FILES[f.kind][1])))
        elif f.kind == "a":
            values.append({"off": 2, "n": 3}[f.operand])
        elif f.values:
            values.append(int(rng.choice(f.values)))
        elif f.operand in ("disp", "inc"):
            values.append(64)
        else:
            values.append(int(rng.integers(f.lo, f.hi + 1)))
    outs = [(f.kind, v) for f, v in zip(fields, values) if f.is_register and f.role != T.SRC]
    if len(set(outs)) != len(outs):
        values = [v if not (f.is_register and f.role != T.SRC) else (v + i) % S.REGISTER_FILES[f.kind][1]
                  for i, (f, v) in enumerate(zip(fields, values))]
    line = S.format_op(op, tuple(values))
    prog = assemble(_prologue(rng) + "  movi a2, 128\n  movi a3, 40\n  .bundle 777\n  " + line + "\n")
    sbuf = rng.integers(0, 256, (1, 512), dtype=np.uint8)
    rec = Recorder(ops=[op.mnemonic], bundles=[777])
    run_traced(rec, lambda t, **_: prog.run(sbuf, trace=t), "program", {})
    tr = rec.trace
    assert len(tr) == 1
    rec0 = tr[0]
    assert rec0.op == op.mnemonic and rec0.bundle == 777
    got = [(o.kind, o.role, o.reg) for o in rec0.operands]
    assert got == _operand_records(op, values), line
    for o in rec0.operands:
        if o.kind == 5 and o.reg == 254:                                       # a2 (+ an _i form's 64)
            want = 128 + (64 if op.mnemonic.endswith("_i") else 0)
            assert int.from_bytes(o.data, "little", signed=True) == want
        if o.kind == 5 and o.reg == 253:
            assert int.from_bytes(o.data, "little", signed=True) == 40         # a3


# ---------------------------------------------------------------------- memory map, reset state and errors
def test_each_partition_starts_from_the_reset_state():
    sbuf = np.zeros((3, 64), np.uint8)
    assemble("l32i a3, a2, 0\naddi a3, a3, 1\ns32i a3, a2, 0\nivp_add2nx8 v1, v1, v9\n").run(sbuf, regs={"a2": 4})
    assert list(sbuf[:, 4]) == [1, 1, 1]


def test_the_data_section_is_fresh_for_every_partition():
    sbuf = np.zeros((2, 8), np.uint8)
    assemble(""".data
    cell: .word 5
    .text
        const16 a2, hi16(cell)
        const16 a2, lo16(cell)
        l32i a3, a2, 0
        addi a4, a3, 1
        s32i a4, a2, 0
        movi a5, 0
        s32i a3, a5, 0
    """).run(sbuf)
    assert list(sbuf.view("<u4")[:, 0]) == [5, 5]


@pytest.mark.parametrize("text,rule", [
    ("movi a2, 1\nslli a2, a2, 11\nivp_lv2nx8_i v1, a2, 0",
     "address outside every memory region: 64 bytes at 0x800"),
    ("movi a2, 2000\nivp_lv2nx8_i v1, a2, 0", "misaligned access: 64 bytes at 0x7d0"),
    ("movi a2, 4\nivp_lv2nx8_i v1, a2, 0", "misaligned access: 64 bytes at 0x4"),
    ("movi a2, 2\nl32i a3, a2, 0", "misaligned access: 4 bytes at 0x2"),
    ("movi a2, 1024\ns8i a2, a2, 0", "address outside every memory region: 1 bytes at 0x400"),
    ("movi a2, 1024\nivp_la2nx8_pp u0, a2", "address outside every memory region"),
])
def test_bad_addresses_stop_the_run(text, rule):
    sbuf = np.zeros((2, 1024), np.uint8)
    with pytest.raises(ProgramError) as e:
        assemble(text, name="prog.s").run(sbuf, partitions=[1])
    assert str(e.value).startswith(f"prog.s:{text.count(chr(10)) + 1}:1: partition 1: ")
    assert rule in str(e.value) and "the SBUF partition [0x0, 0x400)" in str(e.value)


def test_a_store_into_a_read_only_region_is_refused():
    from q7emu.asm.kernels import SRC_BASE, run_dequant
    prog = assemble("movi a5, 1\ns8i a5, a2, 0\n", name="p.s")
    with pytest.raises(ProgramError, match="p.s:2:1: partition 0: s8i: store into a read-only region"):
        run_dequant(prog, np.zeros((1, 8), np.uint8), np.zeros((1, 16), np.uint8))
    assert SRC_BASE == 0x04000000


@pytest.mark.parametrize("base,size", [(0xFFFF_FFC0, 128), (1 << 32, 0), (-64, 64), (0x1000, -1)])
def test_a_region_outside_the_32_bit_address_space_is_refused(base, size):
    # a region ending past 2^32 once passed (the check's `not` bound to its first comparison only); a remembered
    # region's bounds test (mem_hit) relies on every region ending within the address space
    from q7emu.asm import run as R
    region = R.Region("far", base, np.zeros(256, np.uint8), size, np.zeros(1, np.int64), False)
    with pytest.raises(InvalidArgument, match="far.*within the 32-bit address space"):
        R.run_calls(assemble("nop"), [region], np.zeros(1, np.int64), {})


def _boundary_trace(text: str):
    """The trace of ``text`` with two adjacent read-only regions, A at 0x1000 and B at 0x1040 (64 bytes each), a2 = a4 =
    0x1040 (B's start, A's end), a3 = 64, a5 = 0."""
    from q7emu.asm import run as R
    regions = [R.Region("A", 0x1000, np.arange(64, dtype=np.uint8), 64, np.zeros(1, np.int64), False),
               R.Region("B", 0x1040, np.arange(64, 128, dtype=np.uint8), 64, np.zeros(1, np.int64), False)]
    rec = Recorder()
    run_traced(rec, lambda t, **kw: R.run_calls(assemble(text), regions, np.zeros(1, np.int64),
                                                {"a2": 0x1040, "a3": 64, "a4": 0x1040, "a5": 0}, trace=t), "p", {})
    return rec.trace


def test_an_access_of_no_bytes_at_a_shared_end_takes_the_first_region_whatever_came_before():
    """The interpreter tries the region the last load found before its scan (mem_at's hint); an access of no bytes at
    the end of A, the start of B, is held by both and must stay A's (the scan's order, offset 64), also after a load
    from B left B as the hint."""
    alone = _boundary_trace("ivp_labvdcmprs2nx8_xp v1, vb0, a4, a5\n")
    after_b = _boundary_trace("ivp_labvdcmprs2nx8_xp v0, vb0, a2, a3\nivp_labvdcmprs2nx8_xp v1, vb0, a4, a5\n")
    first_b = after_b[0].operands[1].data
    assert int.from_bytes(first_b[:4], "little") == 0                  # the 64-byte load: B, offset 0
    offsets = [int.from_bytes(t.operands[1].data[:4], "little") for t in (alone[0], after_b[1])]
    assert offsets == [64, 64]


def test_run_arguments_are_checked():
    prog = assemble("nop")
    with pytest.raises(InvalidArgument, match="a starting register is a0..a15"):
        prog.run(np.zeros((1, 8), np.uint8), regs={"a16": 1})
    with pytest.raises(InvalidArgument, match="partitions are in"):
        prog.run(np.zeros((1, 8), np.uint8), partitions=[3])
    with pytest.raises(InvalidArgument, match="the step budget"):
        prog.run(np.zeros((1, 8), np.uint8), max_steps=0)
    with pytest.raises(InvalidArgument, match="uint8"):
        prog.run(np.zeros((1, 8), np.int16))
    ro = np.zeros((1, 8), np.uint8)
    ro.setflags(write=False)
    with pytest.raises(InvalidArgument, match="writable"):
        prog.run(ro)


def test_the_entry_and_the_end():
    got = run_words(".entry go\nmovi a3, 1\ngo:\nmovi a4, 2\ns32i a3, a5, 0\ns32i a4, a5, 4\nretw\ns32i a4, a5, 8\n",
                    [[7, 7, 7]])
    assert [int(x) for x in got[0, :3]] == [0, 2, 7]
    assert DATA_BASE == 0x02000000
