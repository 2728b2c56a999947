"""The translations of the kernel programs (docs/asm.md §9): committed up to date, byte-equal to the interpreter on
every configuration, and their liveness analysis sound (every output it calls dead can be overwritten without
changing a byte, and a live output wrongly called dead is caught)."""
from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import q7emu.asm.kernels as K
import q7emu.asm.run as R
from q7emu.asm import assemble
from q7emu.asm import gen_translations as G
from q7emu.asm import translate as TX
from q7emu.asm.program import Program
from q7emu.kernels.extension import cached_extension
from q7emu.model.knobs import dequant_out_bytes

CONFIGS = list(G.configurations())
IDS = [p.name.replace(" ", "_") for _, p in CONFIGS]


def _ext():
    return cached_extension(vars(R), "_program", R.EXTENSION)


def _run(program: Program, kernel: str, src: np.ndarray, translated: bool) -> tuple[np.ndarray, R.ProgramRun]:
    dst = np.full((src.shape[0], dequant_out_bytes(src.shape[1], kernel)), 0xA5, np.uint8)
    return dst, K.run_dequant(program, src, dst, translated=translated)


def test_translations_are_up_to_date():
    assert G.main(["--check"]) == 0


@pytest.mark.parametrize("kernel,program", CONFIGS, ids=IDS)
def test_every_configuration_has_its_translation_and_it_is_the_interpreter(kernel, program):
    # the levels setup.py builds them into hold a translation of every configuration; the others none
    assert (TX.translation_of(program) is not None) == _ext().TRANSLATED
    rng = np.random.default_rng(zlib.crc32(program.name.encode()))
    for nbytes in (4, 8, 36, 100, 768, 4100):       # tails of every length class, and whole passes
        src = rng.integers(0, 256, (3, nbytes), dtype=np.uint8)
        a, ra = _run(program, kernel, src, True)
        b, rb = _run(program, kernel, src, False)
        assert np.array_equal(a, b), (program.name, nbytes)
        assert np.array_equal(ra.steps, rb.steps) and np.array_equal(ra.registers, rb.registers)


@settings(max_examples=40, deadline=None)
@given(config=st.sampled_from(range(len(CONFIGS))), parts=st.integers(1, 4), words=st.integers(0, 300),
       seed=st.integers(0, 2**32 - 1))
def test_translation_is_the_interpreter_on_any_input(config, parts, words, seed):
    kernel, program = CONFIGS[config]
    src = np.random.default_rng(seed).integers(0, 256, (parts, 4 * words), dtype=np.uint8)
    a, _ = _run(program, kernel, src, True)
    b, _ = _run(program, kernel, src, False)
    assert np.array_equal(a, b)


def test_a_program_of_another_shape_or_constant_runs_on_the_interpreter():
    kernel, program = CONFIGS[0]
    if not _ext().TRANSLATED:
        pytest.skip("this ISA level holds no translations (setup.py TRANSLATED_LEVELS)")
    assert TX.match(_ext().TRANSLATIONS, assemble("{ ivp_addnx16 v1, v2, v3 }\nretw\n")) is None
    # the same shape with one of the compiled translation's constant immediates changed is not its program
    table = _ext().TRANSLATIONS
    index, _ = TX.match(table, program)
    row, slot, value = TX.parse_imms(table[index][1])[-1]
    ins = program.decoded.insns.copy()
    ins[row, 2 + slot] = value + 1
    other = dataclasses.replace(program)
    other.__dict__["decoded"] = dataclasses.replace(program.decoded, insns=ins)
    assert TX.match(_ext().TRANSLATIONS, other) is None


# ------------------------------------------------------------------------------------------------ liveness
def test_liveness_on_a_small_program():
    prog = assemble("""
        { ivp_addnx16 v1, v2, v3 }          # row 0: v1 overwritten by row 1 before any read: dropped
        { ivp_addnx16 v1, v4, v5 }          # row 1: live (stored)
        { ivp_bmaxnx16 vb1, v6, v6, v7 }    # row 2: the flag vb1 is never read (dead output), v6 is read
        { ivp_sav2nx8_xp v1, a4, a7 }
        { ivp_sav2nx8_xp v6, a5, a7 }
        retw
    """)
    drop, dead = TX.dead_ops(prog, carry=False)
    assert drop == {0}
    assert dead == {2: {("vb", 1)}}
    # with the register file carried into the next call, v2..v5, v7 are live at the end (the entry reads them)
    after = TX.liveness(prog, carry=True)
    assert {("v", 2), ("v", 3), ("v", 4), ("v", 5), ("v", 7)} <= set(after[-1])
    assert ("v", 1) not in after[-1]


def _clobbered(program: Program, row: int, reg: int) -> Program:
    """``program`` with three bundles after the one holding ``row``: a15 = the source stream's address, and vec
    register ``reg`` loaded from it (random bytes: not the value the op left)."""
    facts = TX.op_facts(program)
    at = facts[row].bundle + 1
    extra = assemble(f"const16 a15, {K.SRC_BASE >> 16}\nconst16 a15, 0\n{{ ivp_lv2nx8_i v{reg}, a15, 0 }}\n").bundles
    labels = {n: (sec, v + len(extra) if sec == "text" and v >= at else v) for n, (sec, v) in program.labels.items()}
    return Program(program.bundles[:at] + extra + program.bundles[at:], program.data, labels,
                   program.entry + (len(extra) if program.entry >= at else 0), program.readings, program.name)


def _dead_vec_outputs(program: Program) -> list[tuple[int, int]]:
    drop, dead = TX.dead_ops(program)
    facts = TX.op_facts(program)
    out = [(r, n) for r, regs in dead.items() for f, n in regs if f == "v"]
    out += [(r, n) for r in drop for f, n in facts[r].writes if f == "v"]
    return sorted(out)


@pytest.mark.parametrize("index", [0, 2, 4, 6], ids=lambda i: IDS[i])
def test_every_dead_output_can_be_overwritten_without_changing_a_byte(index):
    kernel, program = CONFIGS[index]
    src = np.random.default_rng(7).integers(0, 256, (3, 200), dtype=np.uint8)
    want, _ = _run(program, kernel, src, False)
    dead = _dead_vec_outputs(program)
    for row, reg in dead:
        got, _ = _run(_clobbered(program, row, reg), kernel, src, False)
        assert np.array_equal(got, want), (row, reg)


def test_a_live_output_called_dead_is_caught():
    """The check above fails when the analysis is wrong: overwrite a live output (the first op's vec output that
    the analysis keeps) and the bytes change."""
    kernel, program = CONFIGS[0]
    src = np.random.default_rng(7).integers(0, 256, (3, 200), dtype=np.uint8)
    want, _ = _run(program, kernel, src, False)
    after = TX.liveness(program)
    facts = TX.op_facts(program)
    live = [(f.row, n) for f in facts for k, n in f.writes if k == "v" and ("v", n) in after[f.row]
            and f.bundle > 0]
    changed = 0
    for row, reg in live[:8]:
        got, _ = _run(_clobbered(program, row, reg), kernel, src, False)
        changed += not np.array_equal(got, want)
    assert changed >= 6
