"""The assembly language (docs/asm.md §2): every op's syntax both ways, directives, macros, pasted objdump text, and
the one-line errors, each naming file:line:col and the rule."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from q7emu.asm import DATA_BASE, assemble
from q7emu.asm.expr import ExprError, evaluate
from q7emu.errors import AsmError
from q7emu.primitives import asm_syntax as S
from q7emu.primitives import optable as T


# ---------------------------------------------------------------------- every op's syntax, both ways
def _value(f: S.Field, draw):
    if f.kind in S.REGISTER_FILES:
        return draw(st.integers(0, S.REGISTER_FILES[f.kind][1] - 1))
    if f.kind == S.LABEL:
        return "target"
    if f.values:
        return draw(st.sampled_from(f.values))
    lo, hi = f.lo, f.hi
    v = draw(st.integers(lo, hi))
    return v - v % f.step if f.step > 1 and v - v % f.step >= lo else lo


@st.composite
def op_instances(draw):
    op = draw(st.sampled_from(S.OPCODES))
    fs = S.fields(op)
    values = tuple(_value(f, draw) for f in fs)
    outs = [(f.kind, v) for f, v in zip(fs, values) if f.is_register and f.role != T.SRC]
    if len(set(outs)) != len(outs):                 # one op writing one register twice is refused (below)
        values = tuple(v if not (f.is_register and f.role != T.SRC) else (k + i) % S.REGISTER_FILES[f.kind][1]
                       for i, (f, v, k) in enumerate((f, v, 7) for f, v in zip(fs, values)))
    return op, values


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op_instances(), st.booleans())
def test_every_op_prints_and_parses_back(inst, prefix):
    """The printer and the parser come from one field list: an op printed (with or without ivp_) reads back as
    the same op and operand values."""
    op, values = inst
    line = S.format_op(op, values, prefix=prefix)
    p = assemble(f"{line}\n  nop\ntarget:\n  nop\n")
    ins = p.bundles[0].instrs[0]
    assert ins.op is op and ins.values == values, line
    assert p.bundles[0].text(prefix=prefix) == line


def test_the_syntax_follows_the_op_tables():
    # operands in the C intrinsic's order; the memory operand is an address register (+ displacement for _i)
    assert S.syntax_line(T.op("lv2nx8_i")) == "ivp_lv2nx8_i vt, as, disp"
    assert S.syntax_line(T.op("lav2nx8_xp")) == "ivp_lav2nx8_xp vt, as, at"
    assert S.syntax_line(T.op("sel2nx8i")) == "ivp_sel2nx8i vt, hi, lo, imm"
    assert S.syntax_line(T.op("bmin2nx8")) == "ivp_bmin2nx8 flags, vt, va, vr"
    assert S.syntax_line(T.op("mulus4tan16xr16")) == "ivp_mulus4tan16xr16 wv, hi, lo, pr"
    assert S.syntax_line(S.lookup("addi")[0]) == "addi at, as, imm"
    assert S.syntax_line(S.lookup("bbci")[0]) == "bbci as, bit, label"
    # every op of both tables has a field list whose registers are named by role
    for op in S.OPCODES:
        assert len(S.fields(op)) <= 8


# ---------------------------------------------------------------------- bundles, labels, data, directives
def test_bundles_labels_and_data():
    p = assemble("""
        .data
        rows:   .byte 1, 2, 3, 0xff
                .half -1, 0x1234
                .word rows, 1 << 31
        .align 64
        more:   .space 4, 7
        .text
        start:
            { ivp_lv2nx8_i v1, a2, 0 ; addi.a a3, a3, 1 }   // a bundle
            ivp_add2nx8 v2, v1, v1 ; movi a5, -2048         # two single ops on one line
        end:
            retw
    """)
    assert [len(b.instrs) for b in p.bundles] == [2, 1, 1, 1]
    assert p.labels["start"] == ("text", 0) and p.labels["end"] == ("text", 3)
    assert p.labels["rows"] == ("data", 0) and p.labels["more"] == ("data", 64)
    assert p.data[:8] == bytes([1, 2, 3, 0xFF, 0xFF, 0xFF, 0x34, 0x12])
    assert int.from_bytes(p.data[8:12], "little") == DATA_BASE
    assert int.from_bytes(p.data[12:16], "little") == 1 << 31
    assert p.data[64:68] == bytes([7] * 4)
    assert p.bundles[0].instrs[1].name == "addi.a"          # the suffix is kept for the printer


def test_macros_repeats_conditionals_aliases_and_register_expressions():
    p = assemble("""
        .equ N, 3
        .req vOUT, v30
        .macro put r, k=5
          ivp_movnx16t \\r, v(\\k + 1), vb0
        .endm
        .if N > 2
          put vOUT
        .else
          put v1
        .endif
        .for i, 0, N
          ivp_or2nx8 v\\i, v(\\i + 10), v0
        .endr
        .irp r, v20, v21
          ivp_xor2nx8 \\r, \\r, \\r
        .endr
        .rept 2
          nop
        .endr
    """)
    texts = [b.text() for b in p.bundles]
    assert texts[0] == "ivp_movnx16t v30, v6, vb0"
    assert texts[1:4] == [f"ivp_or2nx8 v{i}, v{i + 10}, v0" for i in range(3)]
    assert texts[4:6] == ["ivp_xor2nx8 v20, v20, v20", "ivp_xor2nx8 v21, v21, v21"]
    assert texts[6:] == ["nop", "nop"]


def test_bundle_tags():
    p = assemble("nop\n.bundle 40\nnop\nnop\n.bundle 7\n{ nop }\n")
    assert [b.tag for b in p.bundles] == [0, 40, 41, 7]
    again = assemble(p.text())
    assert [b.tag for b in again.bundles] == [0, 40, 41, 7]


def test_expressions():
    syms = {"A": 5, "T": (10, 20, 30)}
    assert evaluate("1 + 2 * 3 << 1", syms) == 14
    assert evaluate("-7 / 2", syms) == -3 and evaluate("-7 % 2", syms) == -1      # C's truncation
    assert evaluate("A > 4 ? T[A - 3] : 0", syms) == 30
    assert evaluate("hi16(0x12345678) | lo16(0x9abc) << 16", syms) == 0x9ABC1234
    assert evaluate("min(3, A, 1) + max(2, 9) + abs(-4)", syms) == 14
    for bad, col in (("1 +", 3), ("T", 0), ("T[3]", 0), ("B", 0), ("1 / 0", 2), ("(1", 2), ("1 ~ 2", 2)):
        with pytest.raises(ExprError) as e:
            evaluate(bad, syms)
        assert e.value.col == col, bad


def test_objdump_text_parses():
    p = assemble("""
0100511c <proc_4bit_mx_8>:
 100511c:\t0f 12 34\tconst16 a4, 0xcccd
 100511f:\t3340cccd\tmuluh a3, a3, a4
@0x010051a9:
  { ivp_mulus4tan16xr16 wv2,v26,v1,pr1 ; ivp_bmin2nx8 vb3,v4,v20,v16 ;
    ivp_sel2nx8i_s4 v26,v3,v1,9 }
  ...
 10051c0:\tj 100511f <proc_4bit_mx_8+0x3>
  ... srli a3,a3,2
""")
    assert p.labels["proc_4bit_mx_8"] == ("text", 0)
    assert [b.address for b in p.bundles[:4]] == [0x100511C, 0x100511F, 0x10051A9, 0x10051C0]
    assert len(p.bundles[2].instrs) == 3                   # a bundle over two lines
    assert p.bundles[3].instrs[0].op.mnemonic == "j"
    jump = p.bundles[3].instrs[0].values[0]
    assert p.labels[jump] == ("text", 1)                   # the branch target found by its address
    assert p.bundles[4].text() == "srli a3, a3, 2"


# ---------------------------------------------------------------------- one-line errors
ERRORS = [
    ("{ bbci.w15 a5,0,… ; addi.a a10,a1,20 }", 1, 17, "operand 3 of bbci.w15 is illegible ('…'): fill in label"),
    ("  ivp_dselnx16 v2,…", 1, 19, "operand 2 of ivp_dselnx16 is illegible"),
    ("{ ivp_cvtg48n_2x32l wv0,v29,v22 ; ivp_bminnx16 }", 1, 35, "the operands of ivp_bminnx16 are missing"),
    ("ivp_addnx17 v1, v2, v3", 1, 1, "unknown mnemonic 'ivp_addnx17' (did you mean addnx16"),
    ("add a1, v2, a3", 1, 9, "operand 2 (as) of add must be an AR register a0..a15, not the vec register v2"),
    ("ivp_addnx16 v1, v2", 1, 1, "ivp_addnx16 takes 3 operands (ivp_addnx16 vt, vs, vr), got 2"),
    ("ivp_sel2nx8i v1, v2, v3, 12", 1, 26, "12 is not an immediate, one of 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 53"),
    ("addi a1, a2, 128", 1, 14, "128 is out of range: an immediate in [-128, 127]"),
    ("l32i a1, a2, 6", 1, 14, "6 is not a multiple of 4"),
    ("srli a1, a2, 16", 1, 14, "16 is out of range: an immediate in [0, 15]"),
    ("{ ivp_addnx16 v1, v2, v3 ; ivp_subnx16 v1, v2, v3 }", 1, 1, "v1 is written twice in one bundle"),
    ("ivp_dselnx16 v2, v2, v3, v4, v5", 1, 1, "dselnx16 writes v2 twice: its outputs must be different"),
    ("{ ivp_mulus4tan16xr16 wv2,v26,v1,pr1 ; ivp_mulus4tan16xr16 wv1,v26,v1,pr1 }", 1, 1,
     "these ops cannot issue in one FLIX bundle"),
    ("{ ivp_sel2nx8i_s4 v1, v2, v3, 9 ; ivp_sel2nx8i_s4 v4, v2, v3, 9 }", 1, 1, "cannot issue in one FLIX bundle"),
    ("{ j a ; j a }\na:\n nop", 1, 1, "two control transfers in one bundle"),
    ("nop\n  beqz a2, nowhere", 2, 12, "label 'nowhere' is not defined"),
    ("x:\nx:\n nop", 2, 1, "label 'x' defined twice (first at prog.s:1)"),
    ("loop a2, end\nend:\n nop", 1, 1, "the loop's end label must come after the loop's first body bundle"),
    (".data\n.byte 256", 2, 7, "data value 256 does not fit 1 byte"),
    (".text\n.byte 1", 2, 1, ".byte in the text section"),
    (".data\nnop", 2, 0, "an instruction in the data section"),
    (".bogus 1", 1, 1, "unknown directive .bogus"),
    (".if 1\nnop", 1, 0, ".if without .endif"),
    (".endif", 1, 0, ".endif without .if"),
    (".macro m\nnop", 1, 0, ".macro without .endm"),
    (".macro m\n  m\n.endm\nm", 2, 0, "macros nest deeper than 32"),
    (".include \"x.inc\"", 1, 0, ".include needs a program read from a file"),
    (".error \"not for this configuration\"", 1, 0, ".error: not for this configuration"),
    ("movi a2, UNDEFINED", 1, 10, "undefined symbol 'UNDEFINED'"),
    ("ivp_or2nx8 v(40), v1, v2", 1, 12, "v(40) is register v40, outside v0..v31"),
    (".reading sel2nx8i_s4, nibble", 1, 1, "sel2nx8i_s4 readings: unpack, select; not 'nibble'"),
    ("", 0, 0, "the program has no instructions"),
]


@pytest.mark.parametrize("text,line,col,rule", ERRORS, ids=[e[3][:40] for e in ERRORS])
def test_errors_name_the_line_and_the_rule(text, line, col, rule):
    with pytest.raises(AsmError) as e:
        assemble(text, name="prog.s")
    assert e.value.line == line, str(e.value)
    if col:
        assert e.value.col == col, str(e.value)
    assert rule in str(e.value)
    assert str(e.value).startswith(f"prog.s:{line}" if line else "prog.s: ")
    assert "\n" not in str(e.value)


def test_limits(tmp_path):
    with pytest.raises(AsmError, match="larger than 1048576 bytes"):
        assemble("nop\n" * 300_000)
    with pytest.raises(AsmError, match="line longer than 4096 characters"):
        assemble("nop " + "#" * 5000)
    with pytest.raises(AsmError, match="more than 400000 lines after macro expansion"):
        assemble(".rept 1000\n.rept 1000\nnop\n.endr\n.endr\n")
    f = tmp_path / "loop.s"
    f.write_text('.include "loop.s"\n')
    from q7emu.asm import assemble_file
    with pytest.raises(AsmError, match="includes nest deeper than 8"):
        assemble_file(f)


def test_include_reads_the_including_files_folder(tmp_path):
    from q7emu.asm import assemble_file
    (tmp_path / "defs.inc").write_text(".equ SEVEN, 7\n.macro seven r\n  movi \\r, SEVEN\n.endm\n")
    (tmp_path / "prog.s").write_text('.include "defs.inc"\nseven a2\n')
    p = assemble_file(tmp_path / "prog.s")
    assert p.bundles[0].text() == "movi a2, 7"


def test_readings():
    default = assemble("ivp_sel2nx8i_s4 v26, v3, v1, 9")
    assert default.bundles[0].instrs[0].op.mnemonic == "sel2nx8i_s4"
    select = assemble(".reading sel2nx8i_s4, select\nivp_sel2nx8i_s4 v26, v3, v1, 9")
    ins = select.bundles[0].instrs[0]
    assert ins.op.mnemonic == "sel2nx8i" and ins.slot == T.S4 and ins.name == "sel2nx8i_s4"
    assert select.readings == {"sel2nx8i_s4": "select"}
    assert assemble(select.text()).bundles[0].instrs[0].op.mnemonic == "sel2nx8i"
    # the command line's reading wins over the file's
    over = assemble(".reading sel2nx8i_s4, select\nivp_sel2nx8i_s4 v26, v3, v1, 9",
                    readings={"sel2nx8i_s4": "unpack"})
    assert over.bundles[0].instrs[0].op.mnemonic == "sel2nx8i_s4"
    # under the select reading the immediate is sel2nx8i's: 12 is refused there too
    with pytest.raises(AsmError, match="12 is not an immediate"):
        assemble(".reading sel2nx8i_s4, select\nivp_sel2nx8i_s4 v26, v3, v1, 12")


def test_vliw_hazards_pick_the_snapshot_mode():
    from q7emu.asm.run import MODE_IN_ORDER, MODE_SNAPSHOT
    p = assemble("""
        { ivp_or2nx8 v1, v2, v2 ; ivp_or2nx8 v3, v1, v1 }   # reads v1 after the bundle writes it: snapshot
        { ivp_or2nx8 v3, v1, v1 ; ivp_or2nx8 v1, v2, v2 }   # reads before writes: in order
        { ivp_lv2nx8_ip v1, a2, 64 ; addi a3, a2, 1 }        # a2 written by the load, read by addi: snapshot
    """)
    assert [b.mode for b in p.bundles] == [MODE_SNAPSHOT, MODE_IN_ORDER, MODE_SNAPSHOT]


# ---------------------------------------------------------------------- the printed program is the program
@st.composite
def programs(draw):
    """Random well-formed programs: bundles of ops that can share a bundle, labels, data, tags."""
    lines, n = [".data", "d0:"], draw(st.integers(1, 12))
    lines += [f"  .byte {', '.join(str(b) for b in draw(st.lists(st.integers(0, 255), min_size=1, max_size=9)))}"]
    lines.append(".text")
    for i in range(n):
        lines.append(f"L{i}:")
        if draw(st.booleans()):
            lines.append(f"  .bundle {draw(st.integers(0, 65534))}")
        ops = []
        for _ in range(draw(st.integers(1, 3))):
            op = draw(st.sampled_from([o for o in S.OPCODES if not o.family == "loop"]))
            vals = tuple(f"L{draw(st.integers(0, n - 1))}" if f.kind == S.LABEL else _value(f, draw)
                         for f in S.fields(op))
            ops.append(S.format_op(op, vals))
        lines.append("  { " + " ; ".join(ops) + " }")
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_printed_programs_reassemble_to_themselves(text):
    try:
        p = assemble(text)
    except AsmError as e:                      # slots or a register written twice: refused, one line
        assert "\n" not in str(e)
        assert any(w in str(e) for w in ("FLIX", "written twice", "two control", "twice: its outputs"))
        return
    again = assemble(p.text())
    assert again.text() == p.text()
    assert (again.decoded.insns == p.decoded.insns).all() and again.data == p.data
