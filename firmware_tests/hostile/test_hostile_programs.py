"""Hostile programs (docs/asm.md): text a user pastes or a generator writes goes to the assembler and the
interpreter. In a subprocess (so a segfault is a test failure, not a dead test run), thousands of programs --
random token streams, mutated kernel programs, and random well-formed programs from the op tables with hostile
register values -- must each assemble or raise AsmError (one line, ``file:line``), and each that assembles must
print and reassemble to itself and run to its end or raise ProgramError (one line naming the line and the
partition) within its step budget: nothing else, no crash, no hang."""
from __future__ import annotations

import json

import pytest
from hostile_lib import ROOT, assert_clean_error, assert_no_crash, cli, python

FUZZ = r"""
import json, random, sys
import numpy as np
from q7emu.asm import assemble
from q7emu.errors import AsmError, InvalidArgument, ProgramError
from q7emu.primitives import asm_syntax as S

mode, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
OPS = list(S.OPCODES)
REGS = {"v": 32, "wv": 4, "vb": 16, "pr": 16, "u": 4, "a": 16}
WORDS = ([op.mnemonic for op in OPS] + ["ivp_" + op.mnemonic for op in OPS if S.is_ivp(op)]
         + [f"{k}{i}" for k, n in REGS.items() for i in (0, 1, n - 1, n, 99)]
         + [".equ", ".set", ".macro", ".endm", ".rept", ".endr", ".irp", ".if", ".else", ".endif", ".include",
            ".data", ".text", ".byte", ".half", ".word", ".space", ".align", ".bundle", ".entry", ".reading",
            ".error", ".req", "\\@", "\\x", "x", "top", "top:", "...", "…", "?", "10051a9:", "<f>:"]
         + ["0", "1", "-1", "63", "64", "0x7fffffff", "0xffffffff", "4294967296", str(2**63), "-" + str(2**80),
            "1/0", "1%0", "((((", "))", "min(", "CB_SIG[", "1<<200"]
         + list("{};,:()[]+-*/%<>=!&|^~#") + ["\n"] * 12 + [" "] * 8)
counts = {"programs": 0, "assembled": 0, "ran": 0, "asm_errors": 0, "program_errors": 0}
sbuf = np.zeros((4, 0x400), np.uint8)


def judge_error(e, kind):
    msg = str(e)
    assert "\n" not in msg and msg, (kind, msg)
    counts[kind] += 1


def try_program(text, regs, steps=2000):
    counts["programs"] += 1
    try:
        prog = assemble(text, name="fuzz.s")
    except AsmError as e:
        assert str(e).startswith("fuzz.s"), str(e)
        judge_error(e, "asm_errors")
        return
    counts["assembled"] += 1
    printed = prog.text()
    again = assemble(printed, name="fuzz.s")
    assert again.text() == printed, (text, printed, again.text())
    sb = np.random.default_rng(counts["programs"]).integers(0, 256, sbuf.shape, dtype=np.uint8)
    try:
        prog.run(sb, partitions=[0, 3], regs=regs, max_steps=steps)
        counts["ran"] += 1
    except ProgramError as e:
        assert "partition" in str(e), str(e)
        judge_error(e, "program_errors")


def hostile_value():
    return rng.choice([0, 0x40, 0x3c0, 0x400, 0x3ff, 0x2000000, 0x2000040, 0xffffffff, 0x80000000, 0x7fffffc0,
                       rng.randrange(0, 0x400), rng.randrange(0, 1 << 32)])


def regs():
    return {f"a{i}": hostile_value() for i in rng.sample(range(16), rng.randrange(0, 8))}


def operand(f, labels):
    if f.kind in REGS:
        return rng.randrange(REGS[f.kind])
    if f.kind == "label":
        return rng.choice(labels)
    if f.values:
        return rng.choice(f.values)
    lo, hi = f.lo, f.hi
    v = rng.choice([lo, hi, 0 if lo <= 0 <= hi else lo, rng.randrange(lo, hi + 1)])
    return v - v % f.step if f.step > 1 and lo <= v - v % f.step else v


def well_formed():
    n = rng.randrange(1, 12)
    labels = [f"L{i}" for i in range(n + 1)]
    lines = []
    for i in range(n):
        lines.append(f"L{i}:")
        ops = rng.sample(OPS, rng.randrange(1, 4))
        text = [S.format_op(op, tuple(operand(f, labels) for f in S.fields(op))) for op in ops]
        lines.append("  { " + " ; ".join(text) + " }" if len(text) > 1 else "  " + text[0])
    lines.append(f"L{n}:")
    lines.append("  retw")
    return "\n".join(lines) + "\n"


if mode == "tokens":
    for _ in range(count):
        try_program("".join(rng.choice(WORDS) + rng.choice(["", " ", ", "]) for _ in range(rng.randrange(1, 80))),
                    regs())
elif mode == "well-formed":
    for _ in range(count):
        try_program(well_formed(), regs())
elif mode == "mutated":
    from q7emu.analysis.listing import program
    bases = [program("proc_4bit_mx_8", "e2m1", {}).text(), program("proc_4bit_non_mx", "nf4", {}).text(),
             program("proc_6bit_non_mx", "e2m3", {}).text()]
    for _ in range(count):
        lines = rng.choice(bases).splitlines()
        for _ in range(rng.randrange(1, 6)):
            i = rng.randrange(len(lines))
            how = rng.randrange(4)
            if how == 0:
                del lines[i]
            elif how == 1:
                lines.insert(i, rng.choice(lines))
            elif how == 2:
                toks = lines[i].split(" ")
                toks[rng.randrange(len(toks))] = rng.choice(WORDS).strip() or "x"
                lines[i] = " ".join(toks)
            else:
                lines[i], lines[-1 - i] = lines[-1 - i], lines[i]
        try_program("\n".join(lines) + "\n", regs(), steps=20000)
print(json.dumps(counts))
"""


def fuzz(mode: str, seed: int, count: int) -> dict[str, int]:
    out = python(FUZZ, mode, str(seed), str(count), timeout=600)
    assert_no_crash(out)
    assert out.returncode == 0, out.describe()
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("seed", [1, 2])
def test_random_token_streams(seed):
    got = fuzz("tokens", seed, 1500)
    assert got["programs"] == 1500 and got["asm_errors"] > 1000


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_well_formed_programs_with_hostile_registers(seed):
    got = fuzz("well-formed", seed, 400)
    # most assemble (a bundle whose ops cannot share the slots, or write one register twice, does not) and both
    # outcomes of a run occur: a program that ends and one stopped by its first bad access
    assert got["assembled"] > 100 and got["ran"] > 20 and got["program_errors"] > 20, got


def test_mutated_kernel_programs():
    got = fuzz("mutated", 4, 300)
    assert got["assembled"] > 20 and got["asm_errors"] > 20, got


HOSTILE_TEXTS = {
    "unclosed bundle": "{",
    "stray brace": "}\n",
    "recursive macro": ".macro m\n  m\n.endm\n  m\n",
    "1e10 lines": ".rept 100000\n.rept 100000\nnop\n.endr\n.endr\n",
    "self-referent symbol": "x = x + 1\n  movi a2, x\n",
    "include a device": ".include \"/dev/zero\"\n",
    "include a folder": ".include \"..\"\n",
    "include itself": ".include \"h.s\"\n",
    "NUL": "\x00",
    "lone surrogate byte": "\udcff",
    "deep parentheses": "  movi a2, " + "(" * 5000 + "1" + ")" * 5000 + "\n",
    "long expression": "  movi a2, 1" + "+1" * 100000 + "\n",
    "huge .space": ".data\n.space 0x7fffffff\n.text\n  nop\n",
    "tag past 16 bits": ".bundle 70000\n  nop\n",
    "loop ending at itself": "top: loop a2, top\n",
}


@pytest.mark.parametrize("text", list(HOSTILE_TEXTS.values()), ids=list(HOSTILE_TEXTS))
def test_hostile_texts_on_the_command_line(tmp_path, text):
    prog = tmp_path / "h.s"
    prog.write_bytes(text.encode("utf-8", "surrogateescape"))
    line = assert_clean_error(cli("asm", "check", str(prog)))
    assert "h.s" in line or "include" in line, line


def test_every_kernel_program_file_needs_its_configuration_not_a_crash(tmp_path):
    for path in sorted((ROOT / "q7emu" / "kernels" / "programs").glob("*.s")):
        assert "--define" in assert_clean_error(cli("asm", "check", str(path)))
