"""The translations of the kernel programs (docs/asm.md §9): committed up to date, byte-equal to the interpreter on
every configuration, their liveness analysis sound (every vec output and flag it calls dead can be overwritten
without changing a byte, and a live output or flag wrongly called dead is caught) and their demanded-bits analysis
sound (the bits above a narrowed accumulator's cells can be changed without changing a byte, and an accumulator
narrowed too far is caught), their region cache given only to a loop's accesses and following an access into the
next region, their known predicates and known values (constant rows, what they make) holding their value at every
read (a register wrongly called known is caught; a program whose constant row differs runs on the interpreter),
their lane masks the ones the op table allows, their exact reads under an all-true predicate sound (what
such a merge overwrites can be changed at the entry without changing a byte; what a data-predicate merge keeps
cannot), their families (shapes merged as variants of one function) laid out, labelled and analysed per
variant, and the blocks that may be their own successor run as inner loops that keep the step budget's test."""
from __future__ import annotations

import dataclasses
import functools
import operator
import re
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import q7emu.asm.kernels as K
import q7emu.asm.run as R
from firmware_tests.qmx_support import special_bits
from q7emu.analysis.trace import Recorder
from q7emu.asm import assemble
from q7emu.asm import gen_translations as G
from q7emu.asm import translate as TX
from q7emu.asm.program import DATA_BASE, Program
from q7emu.kernels.extension import cached_extension
from q7emu.kernels.tracing import run_traced
from q7emu.model.knobs import dequant_out_bytes
from q7emu.primitives.gen_wrappers import SCALAR_CODE

CONFIGS = [(kernel, program) for kernel, _, program in G.configurations()]
IDS = [p.name.replace(" ", "_") for _, p in CONFIGS]


def _ext():
    return cached_extension(vars(R), "_program", R.EXTENSION)


def _qmx_bits(src: np.ndarray) -> np.ndarray:
    """QuantizeMX's input standing for a test's source bytes (uint8 [rows, n]): uint16 [8 rows, F] fp16 / bf16
    patterns, F = 4 (n // 16) or at least 4 (a tail of 4, 8 or 12 columns as n varies), drawn from a generator
    seeded by the bytes, with the values the knobs decide (firmware_tests.qmx_support.special_bits)."""
    rows, n = src.shape
    return special_bits(np.random.default_rng(zlib.crc32(src.tobytes()) + n), (8 * rows, max(4, 4 * (n // 16))))


def _run(program: Program, kernel: str, src: np.ndarray, translated: bool, **kw) -> tuple[np.ndarray, R.ProgramRun]:
    """Run ``program`` in ``kernel``'s place on ``src`` (uint8 [rows, n]; QuantizeMX: :func:`_qmx_bits` of it, compact
    scales); the bytes it wrote (QuantizeMX: data, then scales) with every output byte set to 0xA5 first."""
    if kernel == "quantize_mx":
        bits = _qmx_bits(src)
        data = np.full(bits.shape, 0xA5, np.uint8)
        scale = np.full((bits.shape[0] // 8, bits.shape[1] // 4), 0xA5, np.uint8)
        run = K.run_quantize_mx(program, bits, data, scale, False, translated=translated, **kw)
        return np.concatenate([data.reshape(-1), scale.reshape(-1)]), run
    dst = np.full((src.shape[0], dequant_out_bytes(src.shape[1], kernel)), 0xA5, np.uint8)
    return dst, K.run_dequant(program, src, dst, translated=translated, **kw)


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
        # and the translation ran every call: none stopped and went to the interpreter (a check of its constant rows
        # that failed would give the same bytes)
        assert ra.translated == _ext().TRANSLATED and not rb.translated, (program.name, nbytes)


@pytest.mark.parametrize("kernel,program", [CONFIGS[0], next(c for c in CONFIGS if c[0] == "quantize_mx")],
                         ids=["group0", "quantize_mx"])
def test_the_step_budget_near_a_calls_steps(kernel, program):
    """A translated call starts a block only while the steps so far leave room for the family's longest block
    under the budget (docs/asm.md §9): under any budget the bytes are the interpreter's; a budget the calls need
    every step of runs them on the interpreter; one with that room to spare runs them translated; one short of
    what a call needs is the interpreter's step-budget error."""
    src = np.random.default_rng(9).integers(0, 256, (2, 768), dtype=np.uint8)
    want, run = _run(program, kernel, src, False)
    need = int(run.steps.max())
    with pytest.raises(R.ProgramError, match="step budget spent"):
        _run(program, kernel, src, True, max_steps=need - 1)
    for budget in (need, need + 1, need + 100, need + 10 ** 6):
        got, r = _run(program, kernel, src, True, max_steps=budget)
        assert np.array_equal(got, want), budget
        if budget == need:
            assert not r.translated
        if budget == need + 10 ** 6:
            assert r.translated == _ext().TRANSLATED


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
    index, imm = TX.match(table, program)
    row, slot, value = TX.parse_imms(table[index][1].split("/")[imm[0]])[-1]       # imm[0]: the variant
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


def _inserted(program: Program, after: set[int], text: str) -> Program:
    """``program`` with the bundles of ``text`` after each bundle of ``after``: they run when it has run."""
    extra = assemble(text).bundles
    bundles, moved = [], {}
    for b, bundle in enumerate(program.bundles):
        moved[b] = len(bundles)
        bundles.append(bundle)
        if b in after:
            bundles += extra
    moved[len(program.bundles)] = len(bundles)
    labels = {n: (sec, moved[v] if sec == "text" else v) for n, (sec, v) in program.labels.items()}
    return Program(bundles, program.data, labels, moved[program.entry], program.readings, program.name)


def _load_source(reg: str) -> str:
    """Bundles that load vec register ``reg`` with the source stream's first bytes (random: not what the program
    left in it); they use a1, which no kernel program reads."""
    return f"const16 a1, {K.SRC_BASE >> 16}\nconst16 a1, 0\n{{ ivp_lv2nx8_i {reg}, a1, 0 }}\n"


def _clobbered(program: Program, row: int, reg: int) -> Program:
    """``program`` with vec register ``reg`` loaded with other bytes after the bundle holding ``row``."""
    return _inserted(program, {TX.op_facts(program)[row].bundle}, _load_source(f"v{reg}"))


def _dead_vec_outputs(program: Program) -> list[tuple[int, int]]:
    drop, dead = TX.dead_ops(program, known=TX.plan("t", [program]).known)
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


def _flag_cleared(program: Program, row: int, reg: int) -> Program:
    """``program`` with vbool register ``reg`` cleared (an unsigned v0 < v0: every bit 0) after the bundle holding
    ``row``."""
    return _inserted(program, {TX.op_facts(program)[row].bundle}, f"{{ ivp_ltu2nx8 vb{reg}, v0, v0 }}\n")


@pytest.mark.parametrize("index", [0, 2, 4, 6], ids=lambda i: IDS[i])
def test_every_dead_flag_can_be_cleared_without_changing_a_byte(index):
    kernel, program = CONFIGS[index]
    src = np.random.default_rng(7).integers(0, 256, (3, 200), dtype=np.uint8)
    want, _ = _run(program, kernel, src, False)
    drop, dead = TX.dead_ops(program, known=TX.plan("t", [program]).known)
    facts = TX.op_facts(program)
    flags = sorted({(r, n) for r, regs in dead.items() for f, n in regs if f == "vb"}
                   | {(r, n) for r in drop for f, n in facts[r].writes if f == "vb"})
    for row, reg in flags:
        got, _ = _run(_flag_cleared(program, row, reg), kernel, src, False)
        assert np.array_equal(got, want), (row, reg)


def test_a_live_flag_called_dead_is_caught():
    """The check above fails when the analysis is wrong: clear a flag the analysis keeps (the zero gates and the
    sign tests of group 0) and the bytes change."""
    kernel, program = CONFIGS[0]
    src = np.random.default_rng(7).integers(0, 256, (3, 200), dtype=np.uint8)
    want, _ = _run(program, kernel, src, False)
    after = TX.liveness(program)
    live = [(f.row, n) for f in TX.op_facts(program) for k, n in f.writes
            if k == "vb" and ("vb", n) in after[f.row] and f.bundle > 0]
    changed = [not np.array_equal(_run(_flag_cleared(program, row, reg), kernel, src, False)[0], want)
               for row, reg in live]
    assert len(live) >= 4 and sum(changed) >= len(live) // 2, (live, changed)


# ------------------------------------------------------------------------------------------------ demanded bits
def test_demanded_bits_on_a_small_program():
    prog = assemble("""
        { ivp_mulsupn16xr16 wv1, v2, v3, pr1 }          # wv1: read by a pack of bits 0..15 -> 16-bit cells
        { ivp_muluupan16xr16 wv1, v4, v5, pr1 }
        { ivp_packvrnrnx48 v6, wv1, 0 }
        { ivp_mulsupn16xr16 wv2, v2, v3, pr1 }          # wv2: bits 15..30 -> 32-bit cells
        { ivp_packvrnrnx48 v7, wv2, 15 }
        { ivp_mulsupn16xr16 wv3, v2, v3, pr1 }          # wv3: bits 20..35 -> keeps its 64-bit cells
        { ivp_packvrnrnx48 v8, wv3, 20 }
        { ivp_packvrnrnx48 v9, wv0, 0 }                 # wv0: live at the entry (carried in) -> kept
        { ivp_mulsupn16xr16 wv0, v2, v3, pr1 }
        { ivp_packvrnx48 v10, wv0, 0 }                  # a rounding, saturating pack reads every bit
        retw
    """)
    facts = TX.op_facts(prog)
    consts = {(f.row, k): f.values[k] for f in facts for k in f.imm_slots}
    demanded = TX.demanded_bits(facts, [("wv", 0)], consts)
    assert demanded == {("wv", 1): 16, ("wv", 2): 31, ("wv", 3): 36}
    assert TX.narrowing(demanded) == {("wv", 1): 16, ("wv", 2): 32}
    # a shift that differs between the programs of a family (read at run time) is not known: nothing narrows
    assert ("wv", 1) not in TX.demanded_bits(facts, [], {k: v for k, v in consts.items() if k[0] != 2})
    # nor does an accumulator some other op reads (the rounding pack of wv0), even when nothing carries it in
    assert ("wv", 0) not in TX.demanded_bits(facts, [], consts)


def _perturbed_above(program: Program, reg: tuple[str, int], width: int) -> Program:
    """``program`` with random bits added above bit ``width`` (16 or 32) of each lane of accumulator ``reg`` after
    every bundle that writes it: v31 loaded from the source, then (16) a paired MAC adding v31 * 2^16 (both weights
    2^15) or (32) bits 32..47 replaced by v31's (cvtg48n_2x32h); v31 is saved first in 64 bytes added to the data
    section and loaded back after (QuantizeMX reads every vec register)."""
    facts = TX.op_facts(program)
    used = {r for f in facts for r in (*f.reads, *f.writes)}
    assert ("pr", 15) not in used and ("a", 1) not in used
    after = {f.bundle for f in facts if reg in f.writes}
    wv = f"wv{reg[1]}"
    change = (f"{{ ivp_movpint16 pr15, 32768 }}\n{{ ivp_muluupan16xr16 {wv}, v31, v31, pr15 }}\n" if width == 16
              else f"{{ ivp_cvtg48n_2x32h {wv}, v31, v31 }}\n")
    at = -(-len(program.data) // 64) * 64                  # the scratch row: past the data, 64-byte aligned
    spare = f"const16 a1, {DATA_BASE >> 16}\nconst16 a1, {at}\n"
    text = (spare + "{ ivp_sv2nx8_ip v31, a1, 0 }\n" + _load_source("v31") + change
            + spare + "{ ivp_lv2nx8_i v31, a1, 0 }\n")
    spacious = dataclasses.replace(program, data=bytes(program.data).ljust(at + 64, b"\0"))
    return _inserted(spacious, after, text)


def _narrowed_configs(whole: bool) -> list[tuple[int, tuple[str, int], int]]:
    """(config index, accumulator, cell width) of every narrowed accumulator, one configuration per shape: those a
    whole-lane pack reads (``whole``: narrowed by their value ranges), or the others (by the bits their readers
    demand)."""
    out, seen = [], set()
    for i, (_, program) in enumerate(CONFIGS):
        key = TX.shape_key(program)
        if key not in seen:
            seen.add(key)
            facts = TX.op_facts(program)
            ranged = {r for f in facts if f.op.narrows == TX.T.WHOLE_LANE for r in f.reads if r[0] == "wv"}
            out += [(i, reg, w) for reg, w in sorted(TX.plan("t", [program]).narrowed.items())
                    if (reg in ranged) == whole]
    return out


NARROWED = _narrowed_configs(False)
RANGED = _narrowed_configs(True)


def test_the_kernels_narrow_as_the_listings_imply():
    # group 0 (E2M1, INT4, E2M3): both re-bias accumulators feed packvrnrnx48 ..., 0; the MX path's exponent
    # accumulator feeds ..., 15, and so does QuantizeMX's (wv0: EXP - s, the divide); in MX's e8m0 shapes
    # muln_2x32's products (a scale byte, 0 .. 255, times the known row 2^23: value ranges) feed a saturating pack
    # and fit 32 bits as signed numbers
    by_kernel: dict[str, set] = {}
    for i, reg, w in NARROWED + RANGED:
        by_kernel.setdefault(CONFIGS[i][0], set()).add((reg, w))
    rebias = {(("wv", 1), 16), (("wv", 3), 16)}
    assert by_kernel == {"proc_4bit_non_mx": rebias, "proc_6bit_non_mx": rebias,
                         "proc_4bit_mx_8": {(("wv", 2), 32), (("wv", 0), 32)}, "quantize_mx": {(("wv", 0), 32)}}
    # the products exist only where the scale gate does: every e8m0 shape, no e8m0-nonan one
    mx = [i for i, (k, p) in enumerate(CONFIGS) if k == "proc_4bit_mx_8" and "mx_scale=e8m0 " in p.name]
    assert RANGED and {i for i, _, _ in RANGED} <= set(mx)
    assert {TX.shape_key(CONFIGS[i][1]) for i, _, _ in RANGED} == {TX.shape_key(CONFIGS[i][1]) for i in mx}


@pytest.mark.parametrize("index,reg,width", NARROWED, ids=lambda x: str(x))
def test_the_bits_above_a_narrowed_accumulator_do_not_change_a_byte(index, reg, width):
    kernel, program = CONFIGS[index]
    src = np.random.default_rng(11).integers(0, 256, (3, 300), dtype=np.uint8)
    want, _ = _run(program, kernel, src, False)
    got, _ = _run(_perturbed_above(program, reg, width), kernel, src, False)
    assert np.array_equal(got, want)


def test_an_accumulator_narrowed_too_far_is_caught():
    """The check above fails when the analysis is wrong: the MX exponent accumulator (32-bit cells) with its bits
    from 16 up changed gives other bytes."""
    wide = [(i, reg) for i, reg, w in NARROWED if w == 32]
    assert wide
    for index, reg in wide:
        kernel, program = CONFIGS[index]
        src = np.random.default_rng(11).integers(0, 256, (3, 300), dtype=np.uint8)
        want, _ = _run(program, kernel, src, False)
        got, _ = _run(_perturbed_above(program, reg, 16), kernel, src, False)
        assert not np.array_equal(got, want), CONFIGS[index][1].name


# ------------------------------------------------------------------------------------------------ choice predicates
_PREDICATE_PROGRAM = """
    .data
    .align 64
    zero:
      .space 64
    spread:
      .rept 16
      .byte SPREAD
      .endr
    .text
      const16 a8, hi16(zero)
      const16 a8, lo16(zero)
      { ivp_lv2nx8_i v0, a8, 0 ; ivp_lv2nx8_i v17, a8, 64 }
      { ivp_ltu2nx8 vb9, v0, V17 }
      { ivp_labvdcmprs2nx8_xp v25, vb9, a2, a3 }
      { ivp_sv2nx8_ip v25, a4, 0 }
      retw
"""


def _predicate_family(rows: list[str], reg: str = "v17") -> TX.Translation:
    return TX.plan("t", [assemble(_PREDICATE_PROGRAM.replace("SPREAD", r).replace("V17", reg)) for r in rows])


def test_choice_predicates_on_a_small_family():
    # two programs whose row v17 differs (a choice): vb9 = 0 < v17 per byte follows the row each loads
    tx = _predicate_family(["1, 1, 0, 0", "0, 0, 1, 1"])
    assert tx.choice_predicates == {("vb", 9): (("v", 17), (0x3333333333333333, 0xCCCCCCCCCCCCCCCC))}
    assert ("v", 17) in {r for r, _ in tx.choices.values()}        # the row's load is compared with both rows
    text = TX.render(tx, [assemble(_PREDICATE_PROGRAM.replace("SPREAD", "1, 1, 0, 0").replace("V17", "v17"))])
    assert "if choice_v17 == 0:" in text and "<vbool_t>0x3333333333333333" in text \
        and "<vbool_t>0xcccccccccccccccc" in text
    # one row in every program: a known predicate, not a choice one; a predicate from the call's data: neither
    assert _predicate_family(["1, 1, 0, 0", "1, 1, 0, 0"]).choice_predicates == {}
    assert _predicate_family(["1, 1, 0, 0", "0, 0, 1, 1"], "v18").choice_predicates == {}


QMX = [p for k, p in CONFIGS if k == "quantize_mx"]


def _predicate_claims(tx: TX.Translation, program: Program, swap: bool = False) -> dict:
    """The value each choice predicate of ``tx`` has in ``program`` (by the row its choice register loads there), or
    with ``swap`` the value of another row."""
    held = TX.prefix_values(program)[0]
    rows = {r: rows for r, rows in tx.choices.values()}
    out = {}
    for reg, (choice, values) in tx.choice_predicates.items():
        n = rows[choice].index(held[choice][1])
        out[reg] = values[(n + 1) % len(values) if swap else n]
    return out


def test_the_quantize_mx_row_predicate_follows_its_spread_row():
    # QuantizeMX's row-load predicate (vb9 = 0 < kSPREAD per byte, seed-shaped) is 0x3333... for fp16 sources and
    # 0xCCCC... for bf16 (the upper or lower halves of 32-bit lanes): the row v17 holds decides it
    tx = {t.name: t for t, _ in G.translations()}["tx_quantize_mx_0"]
    assert tx.choice_predicates == {("vb", 9): (("v", 17), (0x3333333333333333, 0xCCCCCCCCCCCCCCCC))}
    assert all(not t.choice_predicates for t, _ in G.translations() if t.name != "tx_quantize_mx_0")


@pytest.mark.parametrize("swap", [False, True], ids=["planned", "swapped"])
def test_a_choice_predicate_holds_at_every_read(swap):
    """Every read of a choice predicate, in interpreted runs of a bf16 and an fp16 QuantizeMX configuration, sees the
    value planned for the row its choice register holds; with the rows' values swapped (the analysis broken on
    purpose) every read differs."""
    tx = TX.plan("t", QMX)
    for source in ("bfloat16", "float16"):
        program = next(p for p in QMX if p.name.startswith(f"quantize_mx {source} "))
        bad = _reads_not_matching(program, "quantize_mx", _predicate_claims(tx, program, swap))
        assert bool(bad) == swap, program.name


# ------------------------------------------------------------------------------------------------ value ranges
def test_signed_bits_and_lane_ranges():
    cases = ((0, 0), (0, 1), (-1, 0), (-128, 127), (0, 128), (-129, 0))
    assert [TX.signed_bits(r) for r in cases] == [1, 2, 1, 8, 9, 9]
    assert TX.signed_bits((0, 255 << 23)) == 32 and TX.signed_bits((0, 256 << 23)) == 33
    # a byte zero-extended into each 32-bit lane (bytes 1..3 known 0); with byte 3 maybe 0x80.. the lane is anything
    low = [(0, 255) if k % 4 == 0 else (0, 0) for k in range(64)]
    assert TX.lane_range(low, 4, True) == (0, 255)
    assert TX.lane_range([(0, 255) if k % 4 in (0, 3) else (0, 0) for k in range(64)], 4, True) == (-(1 << 31),
                                                                                                    (1 << 31) - 1)
    assert TX.lane_range([(0x80, 0xFF) if k % 4 == 3 else (0, 0) for k in range(64)], 4, True) == (-(1 << 31),
                                                                                                   -(1 << 24))
    assert TX.lane_range([(3, 3)] * 64, 2, False) == (0x0303, 0x0303)


_RANGED_PROGRAM = """
    .data
    .align 64
    zero:
      .space 64
    mult:
      .rept 16
      .word MULT
      .endr
    spread:                                     # sel2nx8: lane L <- byte L of lo, zero-extended (64: hi's byte 0)
      .for lane, 0, 16
      .byte \\lane, 64, 64, 64
      .endr
    .text
      const16 a8, hi16(zero)
      const16 a8, lo16(zero)
      { ivp_lv2nx8_i v0, a8, 0 ; ivp_lv2nx8_i v4, a8, 64 }
      { ivp_lv2nx8_i v20, a8, 128 }
      { ivp_lv2nx8_i v17, a2, 0 }               # the data
      { ivp_sel2nx8 v29, v0, v17, v20 }
      { ivp_muln_2x32 wv0, v29, MULTIPLICAND }
      { ivp_packvrn_2x96 v16, wv0, 0 }
      { ivp_sv2nx8_ip v16, a3, 0 }
      retw
"""


def _ranged(mult: int, multiplicand: str = "v4") -> TX.Translation:
    return TX.plan("t", [assemble(_RANGED_PROGRAM.replace("MULTIPLICAND", multiplicand).replace("MULT", str(mult)))])


def test_value_ranges_on_a_small_program():
    # a scale byte spread into 32-bit lanes (the sel2nx8's byte moves: bytes 1..3 of each lane from the known zero
    # row) times the known row 2^23: 0 .. 255 * 2^23, 32 bits as signed numbers -> the pack's accumulator in 32-bit
    # cells
    tx = _ranged(1 << 23)
    (row, rng), = tx.ranges.items()
    assert rng == (0, 255 << 23) and tx.narrowed == {("wv", 0): 32}
    # times 2^24 the products need 33 bits: kept wide; times the data (any 32-bit lane): kept wide
    tx = _ranged(1 << 24)
    assert list(tx.ranges.values()) == [(0, 255 << 24)] and tx.narrowed == {}
    tx = _ranged(1 << 23, "v17")
    assert list(tx.ranges.values())[0][1] == 255 * ((1 << 31) - 1) and tx.narrowed == {}


def test_reaching_writers_follow_the_flow():
    # (per variant: MX's gate reads a split only variant 0 runs; test_the_kernels_narrow_as_the_listings_imply)
    prog = assemble("""
        { ivp_or2nx8 v1, v5, v5 }
        movi a9, 4
        loopnez a9, .Lend
        { ivp_addnx16 v2, v1, v1 }
        { ivp_and2nx8 v1, v5, v6 }
    .Lend:
        { ivp_addnx16 v3, v1, v1 }
        retw
    """)
    facts = TX.op_facts(prog)
    shape = TX.flow(prog, facts)
    adds = [f for f in facts if f.op.mnemonic == "addnx16"]
    movs = [f.row for f in facts if f.op.mnemonic in ("or2nx8", "and2nx8")]
    # in the loop v1 is the first write's or the loop's own from the pass before; after it, either too
    assert [w.row for w in TX.reaching_writers(shape, adds[0], ("v", 1))] == movs
    assert [w.row for w in TX.reaching_writers(shape, adds[1], ("v", 1))] == movs
    # a register nothing writes first: the call's entry value reaches
    assert TX.reaching_writers(shape, adds[0], ("v", 7)) is None


def _traced(program: Program, kernel: str, seed: int):
    """The trace of an interpreted run of ``program`` in ``kernel``'s place on random source bytes (``seed``)."""
    src = np.random.default_rng(seed).integers(0, 256, (2, 300), dtype=np.uint8)
    rec = Recorder()
    run_traced(rec, lambda sink, **kw: _run(program, kernel, src, False, trace=sink), kernel, {})
    return rec.trace


def _fact_key(f: TX.OpFacts) -> tuple[str, tuple[int, ...]]:
    """A family's op as a trace shows its executions: its mnemonic and the registers it reads (the trace lists a
    merge's old outputs with the sources)."""
    return f.op.mnemonic, tuple(f.values[k] for k, o in enumerate(f.op.operands) if o.role != "dst")


def _trace_key(op) -> tuple[str, tuple[int, ...]]:
    """A traced execution's :func:`_fact_key`."""
    return op.op, tuple(o.reg for o in op.operands if o.role_name == "src")


def _executions(program: Program, kernel: str, seed: int, sites: dict):
    """In an interpreted run with a trace (:func:`_traced`), each execution of an op of ``sites`` (keyed by
    :func:`_fact_key`), with what ``sites`` holds for it: (traced op, value)."""
    t = _traced(program, kernel, seed)
    for i in range(len(t)):
        op = t[i]
        site = sites.get(_trace_key(op))
        if site is not None:
            yield op, site


def _ranged_lanes(program: Program, kernel: str, tx: TX.Translation, fam: TX.Family) -> tuple[int, list[int]]:
    """In an interpreted run with a trace, the lanes each op with a planned range writes: (lanes checked, the
    values outside the range)."""
    sites = {_fact_key(fam.facts[row]): rng for row, rng in tx.ranges.items()}
    checked, outside = 0, []
    for op, rng in _executions(program, kernel, 5, sites):
        (out,) = [o for o in op.operands if o.role_name == "dst"]
        raw = int.from_bytes(bytes(out.data), "little")           # the raw image: 16 lanes of 96 bits
        for lane in range(16):
            v = (raw >> (96 * lane)) & ((1 << 96) - 1)
            v -= (v >> 95) << 96
            checked += 1
            if not rng[0] <= v <= rng[1]:
                outside.append(v)
    return checked, outside


MX = [p for k, p in CONFIGS if k == "proc_4bit_mx_8"]


def test_a_planned_range_holds_at_every_execution():
    """Every lane each product with a range (docs/asm.md §9, value ranges) writes, in an interpreted run of each MX
    e8m0 configuration (planned with its whole family: its rows are choices), lies in that range; and the ranges fit
    the cells its accumulator is narrowed to."""
    tx = TX.plan("t", MX)
    fam = TX.family(MX)
    assert tx.ranges and tx.narrowed[("wv", 0)] == 32
    assert all(TX.signed_bits(r) <= 32 for r in tx.ranges.values())
    for program in MX:
        if "mx_scale=e8m0 " in program.name:
            checked, outside = _ranged_lanes(program, "proc_4bit_mx_8", tx, fam)
            assert checked > 0 and outside == [], program.name


def test_a_range_too_narrow_is_caught():
    """The check above fails when the range is wrong: the MX products' range claimed as a zero scale byte's alone
    (0 .. 0), which the run's other scale bytes leave (each a multiple of 2^23 up to 255 * 2^23)."""
    tx = TX.plan("t", MX)
    fam = TX.family(MX)
    short = dataclasses.replace(tx, ranges={row: (lo, lo) for row, (lo, hi) in tx.ranges.items()})
    program = next(p for p in MX if "mx_scale=e8m0 " in p.name)
    checked, outside = _ranged_lanes(program, "proc_4bit_mx_8", short, fam)
    assert checked > 0 and outside and all(v % (1 << 23) == 0 and 0 < v <= 255 << 23 for v in outside)


# ------------------------------------------------------------------------------------------------ lookup chunks
_CHUNKED_PROGRAM = r"""
    .data
    .align 64
    k32:
      .rept 32
      .half 32
      .endr
    k1000:
      .rept 32
      .half 0x1000
      .endr
    table:                                      # a pool whose four chunks agree: lane j holds 7 * (j & 15)
      .for lane, 0, 32
      .half 7 * (\lane & 15)
      .endr
    .text
      const16 a8, hi16(k32)
      const16 a8, lo16(k32)
      { ivp_lv2nx8_i v6, a8, 0 ; ivp_lv2nx8_i v11, a8, 64 }
      { ivp_lv2nx8_i v14, a8, 128 }
      { ivp_lv2nx8_i v17, a2, 0 ; ivp_lv2nx8_i v18, a2, 64 }      # the data: the codes' bytes ...
      { ivp_lv2nx8_i v9, a2, 128 ; ivp_lv2nx8_i v10, a2, 192 }    # ... and a pool
      { ivp_sel2nx8i_s4 v21, v17, v18, UNPACK }
      { ivp_sllinx16 v26, v21, 8 ; ivp_addnx16 v27, v21, v6 }   # c << 8 ; c + 32
      { ivp_or2nx8 v26, v26, v21 ; ivp_selnx16 v25, v10, v9, v27 }
      { ivp_addnx16 v26, v26, v11 }                             # c << 8 | c, + 0x1000
      { ivp_dselnx16 v24, v23, v10, v9, v26 }
      { ivp_dselnx16 v20, v19, v14, v14, v17 }                  # the agreeing pool, a data selector
      { ivp_dselnx16 v16, v15, v10, v9, v17 }                   # the data pool, a data selector
      { ivp_sv2nx8_ip v25, a3, 64 }
      { ivp_sv2nx8_ip v24, a3, 64 }
      { ivp_sv2nx8_ip v23, a3, 64 }
      { ivp_sv2nx8_ip v20, a3, 64 }
      { ivp_sv2nx8_ip v19, a3, 64 }
      { ivp_sv2nx8_ip v16, a3, 64 }
      { ivp_sv2nx8_ip v15, a3, 64 }
      retw
"""


def _chunked(unpack: int) -> tuple[Program, list[TX.OpFacts], TX.Translation]:
    prog = assemble(_CHUNKED_PROGRAM.replace("UNPACK", str(unpack)))
    return prog, TX.op_facts(prog), TX.plan("t", [prog])


def test_lane_sets_widen_to_every_combination():
    s = TX.LaneSet(1, frozenset({1, 2}))
    assert s.widened(1) == s
    assert s.widened(2) == TX.LaneSet(2, frozenset({0x0101, 0x0201, 0x0102, 0x0202}))
    assert s.widened(4) is not None and len(s.widened(4).values) == 16
    assert TX.LaneSet(1, frozenset(range(65))).widened(2) is None        # 65^2 > MAX_LANE_VALUES


def test_lane_values_follow_the_selector_chain():
    prog, facts, tx = _chunked(0)
    values = TX.LaneValues(TX.flow(prog, facts), tx.constants, {(f.row, k): frozenset({f.values[k]})
                                                                 for f in facts for k in f.imm_slots})
    sel, dsel = (next(f for f in facts if f.op.mnemonic == m) for m in ("selnx16", "dselnx16"))
    # the unpacked codes (zero-extended nibbles, each lane one source byte's): 0..15; + 32 by the known row
    assert values.at(sel, ("v", 21)) == TX.LaneSet(2, frozenset(range(16)))
    assert values.at(sel, ("v", 27)) == TX.LaneSet(2, frozenset(range(32, 48)))
    # c << 8 | c' (the or's two sources taken as independent), + 0x1000: low byte 0..15, high byte 16..31
    assert values.at(dsel, ("v", 26)) == TX.LaneSet(2, frozenset(a | (b + 16) << 8 for a in range(16)
                                                                 for b in range(16)))
    assert values.at(dsel, ("v", 6)) == bytes(prog.data[0:64])            # a known value: its bytes
    assert values.at(dsel, ("v", 17)) is None                             # the data: anything


def test_lane_values_give_up_past_their_bound_and_around_a_loop():
    prog = assemble("""
        .data
        .align 64
        one:
          .rept 32
          .half 1
          .endr
        .text
          const16 a8, hi16(one)
          const16 a8, lo16(one)
          { ivp_lv2nx8_i v6, a8, 0 }
          { ivp_lv2nx8_i v17, a2, 0 }
          { ivp_sel2nx8i_s4 v21, v17, v17, 0 }
          { ivp_sllinx16 v22, v21, 4 }
          { ivp_or2nx8 v22, v22, v21 }                  # 256 values
          { ivp_addnx16 v23, v22, v22 }                 # 256 x 256 combinations: past the bound
          movi a9, 4
          movi a10, 0
          loopnez a9, .Lend
          { ivp_addnx16 v21, v21, v6 }                  # fed back by the loop: anything
        .Lend:
          { ivp_addnx16 v24, v21, v6 }
          { ivp_sv2nx8_ip v23, a3, 64 }
          { ivp_sv2nx8_ip v24, a3, 64 }
          retw
    """)
    facts = TX.op_facts(prog)
    tx = TX.plan("t", [prog])
    values = TX.LaneValues(TX.flow(prog, facts), tx.constants, {(f.row, k): frozenset({f.values[k]})
                                                                 for f in facts for k in f.imm_slots})
    adds = [f for f in facts if f.op.mnemonic == "addnx16"]
    assert len(values.at(adds[0], ("v", 22)).values) == 256
    assert values.at(adds[2], ("v", 23)) is None
    assert values.at(adds[2], ("v", 21)) is None


def test_lookup_chunks_on_a_small_program():
    prog, facts, tx = _chunked(0)
    rows = {f.row: (f.op.mnemonic, f.values[0]) for f in facts}
    # zero-extended codes: the sign lookup reads chunk 2, the codebook's even lanes chunk 0, odd lanes chunk 1; the
    # agreeing known pool any index (chunk 0); the data pool with a data selector none
    assert {rows[r]: c for r, c in tx.chunks.items()} == {("selnx16", 25): (2,), ("dselnx16", 24): (0, 1),
                                                          ("dselnx16", 20): (0, 0)}
    assert "P.selnx16_chunk(" in TX.render(tx, prog) and "P.dselnx16_chunk(" in tx.text
    # sign-extended codes (-8 .. 7) straddle chunks: only the agreeing pool's lookup keeps its chunk form
    _, _, signed = _chunked(16)
    assert {rows[r]: c for r, c in signed.chunks.items()} == {("dselnx16", 20): (0, 0)}


def test_the_mx_lookups_read_one_chunk():
    tx = TX.plan("t", MX)
    fam = TX.family(MX)
    got = sorted((fam.facts[r].op.mnemonic, c) for r, c in tx.chunks.items())
    assert got == [("dselnx16", (0, 1))] * 4 + [("selnx16", (2,))] * 4      # two halves, the pairs' and the odd block's


def _chunk_reads(program: Program, kernel: str, tx: TX.Translation, fam: TX.Family) -> tuple[int, int]:
    """In an interpreted run with a trace, the indexes each lookup with planned chunks reads: (indexes checked, those
    whose pool lane differs from the one at its place in the planned chunk)."""
    t = _traced(program, kernel, 7)
    sites = {_fact_key(f): (chunks, {o.name: f.values[k] for k, o in enumerate(f.op.operands)})
             for row, chunks in tx.chunks.items() for f in [fam.facts[row]]}
    checked = wrong = 0
    for i in range(len(t)):
        op = t[i]
        site = sites.get(_trace_key(op))
        if site is None:
            continue
        chunks, reg = site
        data = {o.reg: bytes(o.data) for o in op.operands if o.role_name == "src"}     # by register number
        pool = np.frombuffer(data[reg["lo"]] + data[reg["hi"]], np.uint16)
        sel = data[reg["sel"]]
        for byte, c in enumerate(chunks):
            for lane in range(32):
                j = sel[2 * lane + byte] & 0x3F
                checked += 1
                wrong += int(pool[j] != pool[16 * c + (j & 15)])
    return checked, wrong


def test_planned_chunks_hold_at_every_execution():
    """Every index each lookup with planned chunks (docs/asm.md §9, lookup chunks) reads, in an interpreted run of
    each MX configuration (planned with its whole family), reads the lane at its place in the planned chunk."""
    tx = TX.plan("t", MX)
    fam = TX.family(MX)
    for program in MX:
        checked, wrong = _chunk_reads(program, "proc_4bit_mx_8", tx, fam)
        assert checked > 0 and wrong == 0, program.name


G0 = [p for k, p in CONFIGS if k == "proc_4bit_non_mx" and "nf4" not in p.name]


def test_the_group0_lookup_reads_its_repeated_table_as_one_chunk():
    """Group 0's X table (E2M1 or INT4 by the row its load finds: a choice) repeats every 16 lanes, so its lookup
    of any index reads the lane at its place in chunk 0 -- in both rows, whose load the translation then checks."""
    tx = TX.plan("t", G0)
    fam = TX.family(G0)
    assert [(fam.facts[r].op.mnemonic, c) for r, c in tx.chunks.items()] == [("dselnx16t", (0, 0))]
    assert ("v", 14) in {reg for reg, _ in tx.choices.values()}
    for program in G0:
        checked, wrong = _chunk_reads(program, "proc_4bit_non_mx", tx, fam)
        assert checked > 0 and wrong == 0, program.name


def test_a_program_with_another_unpack_runs_on_the_interpreter():
    """The MX chunks rest on the unpack's immediates (zero-extended nibbles: 0, 1, 8, 9), which the family reads at
    run time: an MX program whose unpacks sign-extend (imm | 16; the same shape, so it matches the translation) fails
    the translation's test of them and runs on the interpreter, whose bytes the sign extension changes."""
    kernel, program = next((k, p) for k, p in CONFIGS if k == "proc_4bit_mx_8")
    tx = TX.plan("t", MX)
    assert {frozenset(v) for v in tx.imm_checks.values()} == {frozenset({0, 8}), frozenset({1, 9})}
    lines = [re.sub(r"(ivp_sel2nx8i_s4 v21, v17, v16, )(\d+)", lambda m: m[1] + str(int(m[2]) | 16), line)
             for line in program.text().splitlines()]
    signed = dataclasses.replace(assemble("\n".join(lines)), name=program.name + " (signed unpack)")
    assert TX.shape_key(signed) == TX.shape_key(program) and signed.text() != program.text()
    assert TX.translation_of(signed) is not None or not _ext().TRANSLATED
    src = np.random.default_rng(5).integers(0, 256, (2, 300), dtype=np.uint8)
    out, run = _run(signed, kernel, src, True)
    assert not run.translated
    assert np.array_equal(out, _run(signed, kernel, src, False)[0])
    assert not np.array_equal(out, _run(program, kernel, src, False)[0])
    assert _run(program, kernel, src, True)[1].translated == _ext().TRANSLATED


def test_a_checked_immediate_reads_as_its_known_bits():
    """Once the call's start has found a runtime immediate among its family's values (imm_checks), the translation
    reads it as (imm & the bits that vary) | the bits set in every value: MX's unpacks as (imm & 8) | 0 and
    (imm & 8) | 1, their chunk and sign bits constants. The expression equals every checked value; an immediate
    nothing checks is read whole."""
    tx = TX.plan("t", MX)
    assert tx.imm_bits and set(tx.imm_bits) == set(tx.imm_checks)
    assert set(tx.imm_bits.values()) == {(8, 0), (8, 1)}
    for rk, values in tx.imm_checks.items():
        vary, ones = tx.imm_bits[rk]
        assert all((x & vary) | ones == x for x in values)
        assert vary == functools.reduce(operator.or_, values) & ~functools.reduce(operator.and_, values)
    text = TX.render(tx, MX)
    for rk, j in tx.imm_index.items():
        if rk in tx.imm_bits:
            assert f"((imm[{j}] & {tx.imm_bits[rk][0]:#x}) | {tx.imm_bits[rk][1]:#x})" in text
            assert re.search(rf"imm\[{j}\]\)", text) is None          # never read whole in an op's call
        else:
            assert re.search(rf"\bimm\[{j}\]\)", text)
    negative = dataclasses.replace(tx, imm_checks={(0, 0): frozenset({-1, 3})})
    assert negative.imm_bits == {}


def test_a_wrong_chunk_is_caught():
    """The check above fails when the chunks are wrong: the MX lookups' chunks swapped (the codebook's odd and even
    lanes, the sign lookup's chunk 2 taken as 3)."""
    tx = TX.plan("t", MX)
    fam = TX.family(MX)
    wrong_chunks = dataclasses.replace(tx, chunks={row: (c[1], c[0]) if len(c) == 2 else (3,)
                                                   for row, c in tx.chunks.items()})
    checked, wrong = _chunk_reads(MX[0], "proc_4bit_mx_8", wrong_chunks, fam)
    assert checked > 0 and wrong > checked // 2


# ------------------------------------------------------------------------------------------------ the region cache
def test_only_a_loops_accesses_get_a_region_cache():
    prog = assemble("""
        movi a9, 4
        loopnez a9, .Lend
        { ivp_lav2nx8_xp v1, a2, a6 }       # bundle 2: the loop's body, run 4 times a call
        { ivp_addnx16 v2, v1, v1 }
    .Lend:
        { ivp_sav2nx8_xp v2, a4, a7 }       # bundle 4: once a call
        retw
    """)
    assert TX.repeated_bundles(TX.flow(prog, TX.op_facts(prog))) == {2, 3}
    assert TX._frame(TX.family([prog]), carry=True).cached_rows == [2]
    # a branch back makes a cycle too: every bundle from the label to the branch
    back = assemble("""
        movi a5, 3
    .Lagain:
        { ivp_lav2nx8_xp v1, a2, a6 }
        addi a5, a5, -1
        bnez a5, .Lagain
        { ivp_sav2nx8_xp v1, a4, a7 }
        retw
    """)
    assert TX.repeated_bundles(TX.flow(back, TX.op_facts(back))) == {1, 2, 3}


def _split_regions(src: np.ndarray, dst_head: np.ndarray, dst_tail: np.ndarray, src_cut: int, tail_writable: bool
                   ) -> list[R.Region]:
    """run_dequant's two streams, each cut into two adjacent regions backed by separate buffers (a repeated access
    leaves the region it found first: its cached region must miss and mem_at find the next; reading or writing on
    past the first region's end would touch other bytes). The cuts fall between two passes' accesses: 480 source
    bytes are whole passes of every path (32 bytes a pass at group 0, 40 for MX, 48 for FP6), the destination's
    head a multiple of 128 bytes (a pass)."""
    parts, nbytes = src.shape
    head, tail = np.ascontiguousarray(src[:, :src_cut]), np.ascontiguousarray(src[:, src_cut:])
    rows = np.arange(parts, dtype=np.int64)
    cut = dst_head.shape[1]
    return [R.Region("source head", K.SRC_BASE, head.reshape(-1), src_cut, rows * src_cut, False),
            R.Region("source tail", K.SRC_BASE + src_cut, tail.reshape(-1), nbytes - src_cut,
                     rows * (nbytes - src_cut), False),
            R.Region("destination head", K.DST_BASE, dst_head.reshape(-1), cut, rows * cut, True),
            R.Region("destination tail", K.DST_BASE + cut, dst_tail.reshape(-1), dst_tail.shape[1],
                     rows * dst_tail.shape[1], tail_writable)]


def _split_dst(parts: int, kernel: str, nbytes: int, cut: int) -> tuple[np.ndarray, np.ndarray]:
    out = dequant_out_bytes(nbytes, kernel)
    return np.full((parts, cut), 0xA5, np.uint8), np.full((parts, out - cut), 0xA5, np.uint8)


@pytest.mark.parametrize("index", [0, 2, 4, 6], ids=lambda i: IDS[i])
def test_the_region_cache_follows_an_access_into_the_next_region(index):
    # the translation itself runs to the end (status 0: no fallback to the interpreter) and gives its bytes
    kernel, program = CONFIGS[index]
    if not _ext().TRANSLATED:
        pytest.skip("this ISA level holds no translations (setup.py TRANSLATED_LEVELS)")
    src = np.random.default_rng(index).integers(0, 256, (3, 1024), dtype=np.uint8)
    out = []
    for translated in (True, False):
        dst_head, dst_tail = _split_dst(3, kernel, 1024, 512)
        regions = _split_regions(src, dst_head, dst_tail, 480, True)
        offsets, arrays = R._region_layout(regions, 3, len(program.decoded.data))
        d = program.decoded
        tx = TX.translation_of(program) if translated else None
        extra = {"translation": tx[0], "imm": tx[1]} if tx is not None else {}
        status, *_ = _ext().run(d.insns, d.bundles, d.wmask, d.data, R.DATA_BASE, d.entry, arrays, offsets,
                                R.parse_registers({"a2": K.SRC_BASE, "a3": 256, "a4": K.DST_BASE}),
                                np.arange(3, dtype=np.int64), R.DEFAULT_MAX_STEPS, carry=True, **extra)
        assert status == 0
        out.append(np.concatenate([dst_head, dst_tail], axis=1))
    assert np.array_equal(out[0], out[1])
    whole = np.full_like(out[0], 0xA5)
    K.run_dequant(program, src, whole, translated=False)
    assert np.array_equal(out[1], whole)          # cutting a stream in two changes nothing


@pytest.mark.parametrize("index", [0, 4], ids=lambda i: IDS[i])
def test_a_store_the_region_cache_sends_into_a_read_only_region_is_the_interpreters_error(index):
    kernel, program = CONFIGS[index]
    src = np.random.default_rng(index).integers(0, 256, (2, 1024), dtype=np.uint8)
    errors = []
    for translated in (True, False):
        regions = _split_regions(src, *_split_dst(2, kernel, 1024, 512), 480, False)
        tx = TX.translation_of(program) if translated else None
        with pytest.raises(R.ProgramError) as e:
            R.run_calls(program, regions, np.arange(2, dtype=np.int64),
                        {"a2": K.SRC_BASE, "a3": 256, "a4": K.DST_BASE}, carry=True, translation=tx)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "read-only" in errors[0]


@pytest.mark.parametrize("index", [0, 2], ids=lambda i: IDS[i])
def test_a_stream_at_the_top_of_the_address_space_is_the_interpreters(index):
    # the loop's last load touches no bytes at the stream's end, which wraps to address 0: no region holds it (the
    # interpreter's answer); a cached region must not claim it
    kernel, program = CONFIGS[index]
    src = np.random.default_rng(index).integers(0, 256, (2, 1024), dtype=np.uint8)
    results = []
    for translated in (True, False):
        dst = np.zeros((2, dequant_out_bytes(1024, kernel)), np.uint8)
        top = (1 << 32) - 1024
        regions = [R.Region("source", top, src.reshape(-1), 1024, np.arange(2, dtype=np.int64) * 1024, False),
                   R.Region("destination", K.DST_BASE, dst.reshape(-1), dst.shape[1],
                            np.arange(2, dtype=np.int64) * dst.shape[1], True)]
        tx = TX.translation_of(program) if translated else None
        try:
            R.run_calls(program, regions, np.arange(2, dtype=np.int64), {"a2": top, "a3": 256, "a4": K.DST_BASE},
                        carry=True, translation=tx)
            results.append(dst.tobytes())
        except R.ProgramError as e:
            results.append(str(e))
    assert results[0] == results[1]


# ------------------------------------------------------------------------------------------------ known predicates
ALL_ONES = (1 << 64) - 1


def test_known_predicates_on_a_small_program():
    prog = assemble("""
        { ivp_movnx16t v7, v8, vb0 }                    # vb0: read before it is written (carried in) -> not known
        { ivp_eqnx16 vb0, v2, v2 }
        { ivp_eqnx16 vb1, v2, v2 }                      # x == x: all-true
        { ivp_ltunx16 vb3, v4, v4 }                     # x < x: all-false
        { ivp_eqnx16 vb4, v2, v5 }                      # two registers: depends on the lanes
        { ivp_eqnx16 vb5, v2, v2 }
        { ivp_lenx16 vb5, v2, v2 }                      # written twice -> not known, though each write is
        { ivp_oltnxf16t vb6, v2, v2, vb1 }              # an fp compare (a NaN lane) that merges: no fact
        { ivp_movnx16t v9, v10, vb1 ; ivp_movnx16t v11, v12, vb3 }
        { ivp_movnx16t v13, v14, vb4 ; ivp_movnx16t v15, v16, vb5 }
        { ivp_movnx16t v17, v18, vb6 }
        retw
    """)
    assert TX.plan("t", [prog]).known == {("vb", 1): ALL_ONES, ("vb", 3): 0}


def _one_per_shape() -> list[int]:
    out, seen = [], set()
    for i, (_, program) in enumerate(CONFIGS):
        key = TX.shape_key(program)
        if key not in seen:
            seen.add(key)
            out.append(i)
    return out


SHAPES = _one_per_shape()


def test_the_kernels_know_their_all_true_predicate():
    # each kernel builds an all-true predicate for its t forms with `ivp_eqnx16 vbN, v0, v0` (docs/asm.md §9); the
    # MX path reads it only for its NaN scale, which mx_scale=e8m0-nonan does not have
    for i in SHAPES:
        kernel, program = CONFIGS[i]
        mx = kernel == "proc_4bit_mx_8"
        want = {} if "nonan" in program.name else {("vb", 9 if mx else 0): ALL_ONES}
        facts = TX.op_facts(program)
        live = TX._family_live(len(program.bundles), program.entry, facts, 1, True)[1]
        assert TX.known_predicates(facts, live) == want, program.name
        assert TX.plan("t", [program]).known.items() >= want.items(), program.name


#: the trace's operand kinds (docs/traces.md) of the register files whose values a translation may know
_KIND_FILE = {1: "v", 3: "vb", 4: "pr"}


def _reads_not_matching(program: Program, kernel: str, claims: dict) -> list[tuple[int, str, tuple[str, int]]]:
    """The reads of a register claimed known (register -> its 64 bytes, or its 64-bit value), in an interpreted run
    with a trace, that do not see the claimed value: (seq, op, register) of each."""
    t = _traced(program, kernel, 3)
    bad, reads = [], 0
    for i in range(len(t)):
        op = t[i]
        for o in op.operands:
            reg = (_KIND_FILE.get(o.kind, ""), o.reg)
            if o.role_name != "src" or reg not in claims:
                continue
            reads += 1
            want = claims[reg]
            got = bytes(o.data) if isinstance(want, bytes) else int.from_bytes(bytes(o.data), "little")
            if got != want:
                bad.append((op.seq, op.op, reg))
    assert reads > 0, claims
    return bad


def _claims(program: Program) -> dict:
    tx = TX.plan("t", [program])
    return {**tx.known, **tx.constants}


@pytest.mark.parametrize("index", [i for i in SHAPES if _claims(CONFIGS[i][1])], ids=lambda i: IDS[i])
def test_a_known_value_holds_at_every_read(index):
    """Every read of a register the translation takes as a constant (a known predicate, a known value: docs/asm.md
    §9) sees that value in the interpreter."""
    kernel, program = CONFIGS[index]
    assert _reads_not_matching(program, kernel, _claims(program)) == []


def _family_plans() -> dict[str, TX.Translation]:
    """Each kernel family planned whole (all its data sections: G.families), by its first program's name."""
    return {progs[0].name: TX.plan("t", progs) for _, progs in G.families()}


def test_the_kernels_know_their_constant_rows():
    # the rows every configuration of a family loads alike (docs/asm.md §9, known values): group 0's spread row
    # (v13), -0 (v17) and zero (v19), and the spread predicate they make (vb12); the MX path's zero row and its pair
    # weights (pr2: from v26, a row register the pass reuses, whose load is checked); FP6's weights (pr3..pr5:
    # immediates and constant rows)
    plans = _family_plans()
    g0, mx, fp6 = (next(t for name, t in plans.items() if name.startswith(k))
                   for k in ("proc_4bit_non_mx fmt=1", "proc_4bit_mx_8", "proc_6bit_non_mx"))
    assert sorted(g0.constants) == [("v", 13), ("v", 17), ("v", 19)]
    assert g0.constants[("v", 17)] == b"\x00\x80" * 32 and g0.known[("vb", 12)] == 0x5555555555555555
    assert mx.constants[("v", 0)] == bytes(64) and mx.known[("pr", 2)] == 1 | 1 << 31
    assert ("v", 26) in {r for r, _ in mx.checks.values()} and ("v", 26) not in mx.constants
    assert {("pr", 3), ("pr", 4), ("pr", 5)} <= set(fp6.known)
    # FP6's byte-reversal row (v22), which its msb-first variant alone loads (and reads)
    assert ("v", 22) in fp6.constants
    # QuantizeMX's row-load spread (v17) is one row for fp16 sources and another for bf16: no constant
    tx = {t.name: t for t, _ in G.translations()}
    assert ("v", 17) not in tx["tx_quantize_mx_0"].constants


def test_a_family_of_two_data_sections_is_translated_once_per_section():
    """Group 0's re-bias family (E2M1's rows and INT4's) and FP6's (its two packings' rows) hold two data sections
    each: each section's programs get a translation of their own (docs/asm.md §9, one per data section), which
    knows the rows the whole family loads differently (group 0's v11, v12, v15, v16: E2M1's rows in one, INT4's in
    the other) and which a program matches only with that section's bytes; the families with more sections stay
    one translation for any data."""
    txs = G.translations()
    split = {}
    for _, progs in G.families():
        sections = {TX.data_key(p) for p in progs}
        parts = G.by_data(progs)
        if 1 < len(sections) <= G.SPLIT_DATA_UP_TO:
            assert sorted(d for d, _ in parts) == sorted(sections)
            split.update({p.name: d for d, ps in parts for p in ps})
        else:
            assert parts == [("", progs)]
    kinds = {name.split(" group")[0] for name in split}
    assert kinds == {"proc_4bit_non_mx fmt=1 (e2m1)", "proc_4bit_non_mx fmt=2 (int4)",
                     "proc_6bit_non_mx fmt=4 (e2m3)"}
    table = [tx.table_entry(first.name) for tx, first in txs]
    whole = next(t for name, t in _family_plans().items() if name.startswith("proc_4bit_non_mx fmt=1"))
    rows = (("v", 11), ("v", 12), ("v", 15), ("v", 16))
    for kernel, program in CONFIGS:
        index, _ = TX.match(table, program)
        tx = txs[index][0]
        assert tx.data == split.get(program.name, "")
        if program.name.startswith(("proc_4bit_non_mx fmt=1", "proc_4bit_non_mx fmt=2")):
            # the rows its translation takes as constants are what every read of them sees in the interpreter
            assert not any(r in whole.constants for r in rows)
            assert _reads_not_matching(program, kernel, {r: tx.constants[r] for r in rows}) == [], program.name
    # a program of a split shape with another data section matches no translation (it runs on the interpreter);
    # one of an unsplit family still matches its translation (whose loads check the rows they read)
    for name in ("proc_4bit_non_mx fmt=1 (e2m1) group=0 nibble_order=low-first",
                 "proc_4bit_mx_8 fmt=1 (e2m1) group=8 mx_layout=scale-first mx_scale=e8m0 nibble_order=low-first"):
        program = next(p for _, p in CONFIGS if p.name == name)
        data = program.decoded.data.copy()
        data[-1] ^= 1
        other = dataclasses.replace(program)
        other.__dict__["decoded"] = dataclasses.replace(program.decoded, data=data)
        assert (TX.match(table, other) is None) == (name in split), name


def test_known_values_on_a_small_program():
    prog = assemble("""
        .data
        .align 64
        rows:
          .rept 32
            .half 5
          .endr
          .rept 32
            .half 7
          .endr
        .text
          const16 a8, hi16(rows)
          const16 a8, lo16(rows)
          { ivp_lv2nx8_i v1, a8, 0 ; ivp_lv2nx8_i v2, a8, 64 }    # data rows: known
          { ivp_lv2nx8_i v3, a8, 0 }                              # written again below: not known
          { ivp_ltunx16 vb1, v1, v2 }                             # of known rows: known (5 < 7: all true)
          { ivp_ltunx16 vb2, v1, v9 }                             # v9 carried in: not known
          { ivp_movpint16 pr1, 3 }                                # an immediate: known
          { ivp_extrprn_2x32 pr2, v3, 0 }                         # of v3's first row: known, that load checked
          { ivp_addnx16 v20, v1, v2 }
          { ivp_addnx16 v20, v20, v1 }                            # v20: written twice, no load
          { ivp_extrprn_2x32 pr3, v20, 0 }                        # of v20: not known
          { ivp_addnx16 v5, v1, v2 }                              # of known rows: known
          { ivp_lv2nx8_i v4, a2, 0 }                              # the caller's memory: not known
          { ivp_addnx16 v7, v1, v2 }                              # after it: the values' run stops there
          { ivp_lv2nx8_i v3, a8, 64 }
          movi a5, 1
          s32i a5, a4, 0                                          # a store ends the prefix
          { ivp_lv2nx8_i v6, a8, 0 }                              # after it: not known
          { ivp_movnx16t v10, v1, vb1 ; ivp_movnx16t v11, v2, vb2 }
          { ivp_movnx16t v12, v3, vb1 ; ivp_movnx16t v13, v4, vb1 }
          { ivp_movnx16t v14, v5, vb1 ; ivp_movnx16t v15, v6, vb1 }
          { ivp_movnx16t v16, v7, vb1 ; ivp_mulsupn16xr16 wv0, v1, v2, pr1 }
          { ivp_packvrnrnx48 v17, wv0, 0 ; ivp_mulsupn16xr16 wv1, v1, v2, pr2 }
          { ivp_packvrnrnx48 v18, wv1, 0 ; ivp_mulsupn16xr16 wv2, v1, v2, pr3 }
          { ivp_packvrnrnx48 v19, wv2, 0 }
          .irp v, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19          # stored: every reader above is live
            { ivp_sav2nx8_xp v\\v, a4, a5 }
          .endr
          retw
    """)
    tx = TX.plan("t", [prog])
    assert sorted(tx.constants) == [("v", 1), ("v", 2), ("v", 5)]
    assert tx.constants[("v", 1)] == (5).to_bytes(2, "little") * 32
    assert tx.constants[("v", 5)] == (12).to_bytes(2, "little") * 32
    assert tx.known[("vb", 1)] == ALL_ONES and ("vb", 2) not in tx.known and ("pr", 1) in tx.known
    assert ("pr", 2) in tx.known and ("pr", 3) not in tx.known
    # the loads checked at run time: v1's and v2's (constants) and v3's first (what pr2 is made of)
    assert sorted(r for r, _ in tx.checks.values()) == [("v", 1), ("v", 2), ("v", 3)]
    # a row the family's programs load differently is no constant
    other = dataclasses.replace(prog, data=prog.data[:64] + (3).to_bytes(2, "little") * 32)     # 5 < 3: vb1 clear
    both = TX.plan("t", [prog, other])
    assert sorted(both.constants) == [("v", 1)] and ("vb", 1) not in both.known


#: a program of one data row (its directives: the first %s) loaded into v1, the ops between (the second %s), v6 stored
_ONE_ROW = """
    .data
    .align 64
    rows:
%s
    .text
      const16 a8, hi16(rows)
      const16 a8, lo16(rows)
      movi a5, 64
      { ivp_lv2nx8_i v1, a8, 0 }
%s
      { ivp_sav2nx8_xp v6, a4, a5 }
      retw
"""
_ONE_VARIANT = _ONE_ROW % ("      .rept 64\n        .byte 3\n      .endr", "%s")


def test_a_row_one_variant_loads_is_known():
    # a family of two shapes: v5's one writer is variant 0's alone, and so are its readers: known, its load checked
    with_row = assemble(_ONE_VARIANT % "      { ivp_lv2nx8_i v5, a8, 0 }\n      { ivp_add2nx8 v6, v5, v1 }")
    without = assemble(_ONE_VARIANT % "      { ivp_add2nx8 v6, v1, v1 }")
    tx = TX.plan("t", [with_row, without])
    assert len(tx.keys) == 2 and sorted(tx.constants) == [("v", 1), ("v", 5)]
    assert sorted(r for r, _ in tx.checks.values()) == [("v", 1), ("v", 5)]
    # a variant that reads v5 without loading it carries it in (live at the entry): not known
    reads_it = assemble(_ONE_VARIANT % "      { ivp_add2nx8 v6, v5, v1 }")
    assert sorted(TX.plan("t", [with_row, reads_it]).constants) == [("v", 1)]


_SHIFTED_ROW = _ONE_ROW % ("      .rept 32\n        .half 0x8000\n      .endr",
                           "      { ivp_sllinx16 v2, v1, SHIFT }\n      { ivp_addnx16 v6, v2, v1 }")


def test_a_value_an_immediate_read_at_run_time_decides_is_not_known():
    """Two programs of one shape whose shift immediates differ (1, 2: read at run time) leave v2 the same (0x8000
    shifted out either way); a third program of the shape shifting by 0 matches the translation too and leaves
    0x8000. So a value an op with a runtime immediate computes is no known value, however the family's programs agree
    (a load's bytes are checked, whatever its immediates); with one program, whose immediates are all constants, v2
    is known."""
    progs = [assemble(_SHIFTED_ROW.replace("SHIFT", str(n))) for n in (1, 2)]
    assert TX.shape_key(progs[0]) == TX.shape_key(progs[1])
    tx = TX.plan("t", progs)
    assert tx.runtime_imms and ("v", 1) in tx.constants
    assert ("v", 2) not in tx.constants
    unshifted = assemble(_SHIFTED_ROW.replace("SHIFT", "0"))       # runs the same translation
    assert TX.match([tx.table_entry("first")], unshifted) is not None
    assert ("v", 2) in TX.plan("t", progs[:1]).constants
    assert TX.plan("t", progs[:1]).constants[("v", 2)] == bytes(64)


def test_a_program_whose_constant_row_differs_runs_on_the_interpreter():
    """A program of a translation's shape and immediates whose data section has another value in a row the
    translation took as a constant (MX group 8's zero row, v0; its translation serves any data section): the
    translation finds other bytes at its load and hands the call to the interpreter (docs/asm.md §9), so the bytes are
    the interpreter's, which the changed row changes. Group 0's -0 (v17), whose translation is planned for E2M1's
    data section alone: the changed program matches no translation and runs on the interpreter from the start."""
    kernel, program = next((k, p) for k, p in CONFIGS if k == "proc_4bit_mx_8")
    tx = next(t for t, first in G.translations() if first.name == program.name)
    assert not tx.data and tx.constants[("v", 0)] == bytes(64)
    _a_changed_row_runs_on_the_interpreter(kernel, program, 0, bytes([1]) * 64)                       # v0: row 0
    kernel, program = CONFIGS[0]
    assert ("v", 17) in TX.plan("t", [program]).constants
    _a_changed_row_runs_on_the_interpreter(kernel, program, 6, (0x8100).to_bytes(2, "little") * 32,   # v17: row 6
                                           matches=False)


def _a_changed_row_runs_on_the_interpreter(kernel: str, program: Program, row: int, data: bytes,
                                           matches: bool = True) -> None:
    """``program`` with constant row ``row`` (64 bytes each) of its data section replaced by ``data``: a program the
    translation would take (its shape and immediates; with ``matches`` false, one no translation takes: its
    translation was planned for its data section alone), run translated, runs on the interpreter, with the
    interpreter's bytes, which the changed row changes."""
    section = bytearray(program.data)
    section[64 * row:64 * row + 64] = data
    changed = dataclasses.replace(program, data=bytes(section))
    assert (TX.translation_of(changed) is not None) == (matches and _ext().TRANSLATED)
    src = np.random.default_rng(5).integers(0, 256, (2, 300), dtype=np.uint8)
    out, run = _run(changed, kernel, src, True)
    assert not run.translated
    assert np.array_equal(out, _run(changed, kernel, src, False)[0])
    assert not np.array_equal(out, _run(program, kernel, src, False)[0])


def test_a_value_wrongly_called_known_is_caught():
    """The check above fails when the analysis is wrong: group 0's sign predicates (vb6, vb7: written by a compare
    of the data) called all-true or all-false, its codes' X (v0, written by the lookup) called a constant row."""
    kernel, program = CONFIGS[0]
    for value in (ALL_ONES, 0):
        assert _reads_not_matching(program, kernel, {("vb", 6): value, ("vb", 7): value})
    assert _reads_not_matching(program, kernel, {("v", 0): bytes(64)})


# ------------------------------------------------------------------------------------------------ access lengths
def test_access_lengths_on_a_small_program():
    prog = assemble("""
        movi a6, 32
        movi a7, 0
        movi a10, 16
        movi a9, 4
        loopnez a9, .Lend
        { ivp_lav2nx8_xp v1, a2, a6 }                 # bundle 5: a6 is 32 wherever it comes from
        { ivp_sav2nx8_xp v1, a4, a7 }                 # 6: 0 on the first pass, 100 after (64 bytes touched)
        { ivp_labvdcmprs2nx8_xp v2, vb1, a3, a10 }    # 7: 16, unless the conditional move took a11
        { ivp_lav2nx8_xp v3, a5, a8 }                 # 8: the call's entry value
        movi a7, 100
        movltz a10, a11, a12
    .Lend:
        { ivp_sav2nx8_xp v3, a4, a6 }                 # 11: once a call (no loop: not versioned)
        retw
    """)
    facts = TX.op_facts(prog)
    shape = TX.flow(prog, facts)
    by_bundle = {f.bundle: f for f in facts}
    assert TX.scalar_values(shape, by_bundle[5], ("a", 6), {}) == {32}
    assert TX.scalar_values(shape, by_bundle[6], ("a", 7), {}) == {0, 100}
    # the loop's conditional move keeps its own value (around the loop: unknown where the cycle closes) or takes a11
    assert TX.scalar_values(shape, by_bundle[7], ("a", 10), {}) == {16, TX.UNKNOWN}
    assert TX.scalar_values(shape, by_bundle[8], ("a", 8), {}) == {TX.UNKNOWN}
    lengths = TX.access_lengths(shape, facts, {})
    assert lengths == {by_bundle[5].row: (32, True),        # exact: no test
                       by_bundle[6].row: (64, False),       # the loop's own write (100, clamped), tested
                       by_bundle[7].row: (16, False),
                       by_bundle[8].row: (TX.WHOLE_ACCESS, False)}
    # an immediate the family's programs differ in gives each of its values: none exact, no single steady count
    movi_a6 = next(f for f in facts if f.op.mnemonic == "movi" and f.values[0] == 6)
    varied = TX.access_lengths(shape, facts, {(movi_a6.row, 1): frozenset({32, 48})})
    assert varied[by_bundle[5].row] == (TX.WHOLE_ACCESS, False)
    assert [TX.length_test(c) for c in (64, 0, 32)] == ["n >= 64", "n <= 0", "n == 32"]


def test_the_kernels_access_lengths():
    # the counts the programs give a pass (q7emu/kernels/programs/*.s: 32 source bytes a group-0 pass, 40 for MX, 48
    # for FP6; 64 destination bytes each store): exact where one movi sets the register before the loop (NF4, MX's
    # load), tested where the pass's last count is the rest (group 0's and FP6's movltz) or the first pass stores
    # nothing
    families = {progs[0].name: progs for _, progs in G.families()}

    def lengths(prefix: str) -> list[tuple[str, tuple[int, bool]]]:
        progs = next(p for name, p in families.items() if name.startswith(prefix))
        facts = TX.family(progs).facts
        return [(facts[row].op.mnemonic, x) for row, x in sorted(TX.plan("t", progs).lengths.items())]

    assert lengths("proc_4bit_non_mx fmt=1") == [("labvdcmprs2nx8_xp", (32, False)), ("sav2nx8_xp", (64, False))]
    assert lengths("proc_4bit_non_mx fmt=3") == [("labvdcmprs2nx8_xp", (32, True)), ("sav2nx8_xp", (64, True))]
    assert lengths("proc_4bit_mx_8") == [("lav2nx8_xp", (40, True)), ("sav2nx8_xp", (64, False))]
    assert lengths("proc_6bit_non_mx") == [("labvdcmprs2nx8_xp", (48, False)), ("sav2nx8_xp", (64, False))]


def test_every_access_length_is_in_the_translation_text():
    # each access a translation plans a count for runs it (an op issued once per choice predicate's row, as
    # QuantizeMX's loads are, once per row): its bundle's text holds the count's test, or the exact count
    for _, programs in G.families():
        for _, part in G.by_data(programs):
            tx = TX.plan("t", part)
            TX.render(tx, part)
            pieces = re.split(r"\n *# bundle (\d+)", tx.text)
            text_of: dict[int, str] = {}
            for number, body in zip(pieces[1::2], pieces[2::2]):
                text_of[int(number)] = text_of.get(int(number), "") + body
            bundle_of = {f.row: f.bundle for f in TX.family(part).facts}
            for row, (count, exact) in tx.lengths.items():
                want = f"# n: {count} (access_lengths)" if exact else f"if {TX.length_test(count)}:"
                assert want in text_of[bundle_of[row]], (part[0].name, row)


def _lengths(program: Program) -> dict[int, tuple[int, bool]]:
    """The access lengths of ``program`` translated alone (its rows)."""
    return TX.plan("t", [program]).lengths


def _length_reads(program: Program, kernel: str, counts: dict[int, int]) -> tuple[int, list[int]]:
    """In an interpreted run with a trace, the executions of the accesses of ``counts`` (bundle -> the count
    claimed): (executions seen, the counts they touched that differ from the claim). The program runs with each
    bundle tagged by its index, so that the trace tells a loop's access from the tail's (the kernels' tags are the
    firmware's, which the two share)."""
    program = dataclasses.replace(program, bundles=tuple(dataclasses.replace(b, tag=i)
                                                         for i, b in enumerate(program.bundles)))
    t = _traced(program, kernel, 3)
    seen, other = 0, []
    for i in range(len(t)):
        op = t[i]
        if op.bundle not in counts:
            continue
        (n,) = [o for o in op.operands if o.role_name == "src" and o.kind_name == "scalar"
                and o.reg == SCALAR_CODE["n"]]
        count = min(max(int.from_bytes(bytes(n.data), "little", signed=True), 0), TX.WHOLE_ACCESS)
        seen += 1
        if count != counts[op.bundle]:
            other.append(count)
    return seen, other


@pytest.mark.parametrize("index", [i for i in SHAPES if any(e for _, e in _lengths(CONFIGS[i][1]).values())],
                         ids=lambda i: IDS[i])
def test_an_exact_access_length_holds_at_every_execution(index):
    """Every execution of an access the translation runs for one count alone (docs/asm.md §9, access lengths), in
    an interpreted run, touches that count."""
    kernel, program = CONFIGS[index]
    facts = TX.op_facts(program)
    exact = {facts[row].bundle: c for row, (c, e) in _lengths(program).items() if e}
    seen, other = _length_reads(program, kernel, exact)
    assert seen > 0 and other == []


def test_a_wrong_exact_length_is_caught():
    """The check above fails when the analysis is wrong: MX's load called 48 bytes a pass (it reads 40)."""
    kernel, program = next(c for c in CONFIGS if c[0] == "proc_4bit_mx_8")
    facts = TX.op_facts(program)
    (load,) = [f for f in facts if f.op.mnemonic == "lav2nx8_xp" and f.row in _lengths(program)]
    seen, other = _length_reads(program, kernel, {load.bundle: 48})
    assert seen > 0 and set(other) == {40}


# ------------------------------------------------------------------------------------------------ byte moves
def _op(mnemonic: str):
    return next(o for o in TX.T.ALL_OPS if o.mnemonic == mnemonic)


def test_byte_moves_of_a_select_op():
    """sel2nx8 (vt[k] = pool[sel[k] & 0x7F], pool = lo || hi: docs/intrinsics.md §3.1) with its selector and hi
    known and lo the data: each output byte a byte of lo, or of the known hi (a constant); the map written here from
    the op's stated semantics, not from the code."""
    hi = bytes(0xC0 + k for k in range(64))
    sel = bytes((2 * k) & 0x7F | (0x80 if k % 5 == 0 else 0) for k in range(64))   # bit 7 ignored
    want = tuple((0, 2 * k) if 2 * k < 64 else (-1, hi[2 * k - 64]) for k in range(64))
    assert TX.byte_moves(_op("sel2nx8"), {1: hi, 3: sel}, [2]) == want
    # lo and hi both the data: 64 x 2 positions
    assert TX.byte_moves(_op("sel2nx8"), {3: sel}, [1, 2]) == tuple((1, 2 * k) if 2 * k < 64 else (0, 2 * k - 64)
                                                                     for k in range(64))
    # selnx16 moves 16-bit lanes: two bytes each
    sel16 = np.array([63 - k for k in range(32)], np.uint16).tobytes()     # pool16 lane 63 - k: hi's lane 31 - k
    assert TX.byte_moves(_op("selnx16"), {3: sel16}, [1, 2]) == tuple((0, 2 * (31 - k // 2) + k % 2)
                                                                      for k in range(64))
    # no move: a data selector (the output follows no one byte), a nibble unpack, an ALU op
    assert TX.byte_moves(_op("sel2nx8"), {1: hi}, [2, 3]) is None
    assert TX.byte_moves(_op("sel2nx8i_s4"), {3: 0}, [1, 2]) is None
    assert TX.byte_moves(_op("addnx16"), {2: bytes(64)}, [1]) is None


def test_move_runs_copy_runs_and_fill_the_most_common_constant():
    moves = [(0, 4), (0, 5), (0, 6), (-1, 0), (-1, 0), (-1, 7), (1, 0), (0, 7)] + [(-1, 0)] * 56
    assert TX.move_runs(moves) == (0, [(0, 3, 0, 4), (5, 1, -1, 7), (6, 1, 1, 0), (7, 1, 0, 7)])
    assert TX.move_runs([(0, k) for k in range(64)]) == (None, [(0, 64, 0, 0)])


def test_the_mx_path_runs_its_index_rows_as_byte_moves():
    # MX's split and scale index rows (v12, v20) depend on the layout: three rows each across the family, so no
    # constant; each load finds one of them (a choice) and the two sel2nx8 per half-pass run that row's byte moves
    tx = {t.name: t for t, _ in G.translations()}["tx_proc_4bit_mx_8_0"]
    assert sorted(r for r, _ in tx.choices.values()) == [("v", 12), ("v", 20)]
    assert all(len(rows) == 3 for _, rows in tx.choices.values())
    assert ("v", 12) not in tx.constants and ("v", 20) not in tx.constants
    assert sorted({m.choice for m in tx.moves.values()}) == [("v", 12), ("v", 20)] and len(tx.moves) == 6
    assert all(len(m.maps) == 3 and m.sources == (2,) for m in tx.moves.values())      # lo: the loaded pass


def _moves_not_matching(program: Program, kernel: str, tx: TX.Translation, fam: TX.Family,
                        maps: dict[int, tuple[tuple[int, int], ...]] | None = None) -> tuple[int, list[int]]:
    """The executions of each op ``tx`` runs as byte moves, in an interpreted run with a trace, whose output is not
    what its map (the row its choice register holds, or ``maps``' replacement) gives from its sources: (executions
    checked, seqs of those that differ)."""
    t = _traced(program, kernel, 7)
    sites = {(*_fact_key(fam.facts[row]), fam.facts[row].values[m.dst]): (row, m) for row, m in tx.moves.items()}
    checked, bad = 0, []
    for i in range(len(t)):
        op = t[i]
        ins = [o for o in op.operands if o.role_name == "src"]
        outs = [o for o in op.operands if o.role_name == "dst"]
        site = sites.get((*_trace_key(op), outs[0].reg if outs else -1))
        if site is None:
            continue
        row, m = site
        f = fam.facts[row]
        slots = [k for k, o in enumerate(f.op.operands) if o.role == "src"]
        data = {k: bytes(o.data) for k, o in zip(slots, ins)}
        if maps and row in maps:
            moves = maps[row]
        elif m.choice is None:
            moves = m.maps[0]
        else:
            rows = next(rows for r, rows in tx.choices.values() if r == m.choice)
            held = data[next(k for k in slots if (TX._KIND_FILE[f.op.operands[k].kind], f.values[k]) == m.choice)]
            moves = m.maps[rows.index(held)]
        want = bytes(b if j < 0 else data[m.sources[j]][b] for j, b in moves)
        checked += 1
        if bytes(outs[0].data) != want:
            bad.append(op.seq)
    return checked, bad


MOVE_SHAPES = [i for i in SHAPES if TX.plan("t", [CONFIGS[i][1]]).moves or CONFIGS[i][0] == "proc_4bit_mx_8"]


@pytest.mark.parametrize("index", MOVE_SHAPES, ids=lambda i: IDS[i])
def test_a_byte_move_map_holds_at_every_execution(index):
    """Every execution of a select op the translation runs as byte moves (docs/asm.md §9) gives, in the
    interpreter, what its map gives from that execution's sources (MX: planned with every configuration of its
    family, so its index rows are choices)."""
    kernel, program = CONFIGS[index]
    programs = [p for k, p in CONFIGS if k == kernel and TX.shape_key(p) in
                TX.plan("t", [program]).keys] if kernel != "proc_4bit_mx_8" else \
        [p for k, p in CONFIGS if k == kernel]
    tx = TX.plan("t", programs)
    assert tx.moves, program.name
    checked, bad = _moves_not_matching(program, kernel, tx, TX.family(programs))
    assert checked > 0 and bad == []


def test_a_wrong_byte_move_map_is_caught():
    """The check above fails when the map is wrong: MX's split map with two of its copies swapped, or with a copy
    made a constant."""
    programs = [p for k, p in CONFIGS if k == "proc_4bit_mx_8"]
    tx = TX.plan("t", programs)
    fam = TX.family(programs)
    row = min(r for r, m in tx.moves.items() if m.choice == ("v", 12))
    program = programs[0]
    rows = next(rows for _, (r, rows) in tx.choices.items() if r == ("v", 12))
    held = TX.prefix_values(program)[0][("v", 12)][1]                # the row this program loads
    right = tx.moves[row].maps[rows.index(held)]
    swapped = list(right)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    constant = [(-1, 0)] + list(right[1:])
    for wrong in (swapped, constant):
        split = {r: tuple(wrong) for r, m in tx.moves.items() if m.choice == ("v", 12)}    # every such op
        checked, bad = _moves_not_matching(program, "proc_4bit_mx_8", tx, fam, split)
        assert checked > 0 and bad, wrong[:2]


def test_a_program_whose_index_row_is_none_of_its_choices_runs_on_the_interpreter():
    """An MX program whose split index row (v12) is none of the family's three: the translation finds no row of its
    own at the load and hands the call to the interpreter, whose bytes the changed row changes."""
    kernel, program = next((k, p) for k, p in CONFIGS if k == "proc_4bit_mx_8")
    # v12, row 12, as the identity: codes and scales not split
    _a_changed_row_runs_on_the_interpreter(kernel, program, 12, bytes(range(64)))


# ------------------------------------------------------------------------------------------------ lane masks
def test_lane_masks_on_a_small_program():
    prog = assemble("""
        { ivp_eqnx16 vb0, v0, v0 }                      # known all-true
        { ivp_ltunx16 vb4, v2, v3 }                     # a data predicate: an op without a lane-mask form writes it
        { ivp_oltnxf16t vb1, v2, v3, vb0 }              # under the all-true vb0: every lane written, none read
        { ivp_movnx16t v4, v5, vb1 }                    # vb1: written and read by lane-mask operands -> a lane mask
        { ivp_oltnxf16t vb2, v2, v3, vb0 }
        { ivp_oltnxf16t vb6, v2, v3, vb2 }              # vb2 governs a compare (vbp takes no lane mask) -> bits
        { ivp_oltnxf16t vb3, v2, v3, vb4 }              # under a data predicate: vb3's old lanes are read (carried
        { ivp_movnx16t v6, v5, vb3 }                    # in: made from the register file's bits) -> a lane mask
        { ivp_babssubunx16 vb5, v7, v2, v3 }            # a flag -> ...
        { ivp_negnxf16t v8, v8, vb5 }                   # ... a sign merge: a lane mask
        { ivp_movnx16t v9, v5, vb4 }                    # vb4 (ltunx16's): bits
        { ivp_movnx16t v10, v5, vb6 }                   # vb6 (olt's under vb2): a lane mask
        { ivp_bmaxnx16 vb1, v11, v2, v3 }               # outputs nobody reads (dropped): vb1 stays a lane mask
        retw
    """)
    tx = TX.plan("t", [prog])
    assert tx.known == {("vb", 0): ALL_ONES}
    assert tx.masks == {("vb", 1), ("vb", 3), ("vb", 5), ("vb", 6)}
    assert 12 in tx.dropped
    # the exact facts: the compares under vb0 read nothing of their destination; the one under vb4 does
    exact = TX.whole_writes(TX.op_facts(prog), tx.known)
    assert ("vb", 1) not in exact[2].reads and ("vb", 2) not in exact[4].reads
    assert ("vb", 3) in exact[6].reads


def _prefixed(program: Program, text: str) -> Program:
    """``program`` with the bundles of ``text`` run first at its entry (labels after it moved)."""
    extra = assemble(text).bundles
    e = program.entry
    bundles = list(program.bundles[:e]) + list(extra) + list(program.bundles[e:])
    labels = {n: (sec, v + len(extra) if sec == "text" and v > e else v) for n, (sec, v) in program.labels.items()}
    return Program(bundles, program.data, labels, e, program.readings, program.name)


def test_a_merge_under_an_all_true_predicate_reads_no_old_lane():
    """Run on the interpreter (two calls, registers carried): the carried-in register a merge under the known
    all-true predicate overwrites can be changed without changing a byte; the one a merge under a data predicate
    keeps lanes of cannot (the analysis would be wrong to drop it)."""
    body = f"""
        const16 a2, {K.SRC_BASE >> 16}
        const16 a2, 0
        const16 a4, {K.DST_BASE >> 16}
        const16 a4, 0
        {{ ivp_lv2nx8_i v2, a2, 0 }}
        {{ ivp_sllinx16 v3, v2, 1 }}
        {{ ivp_eqnx16 vb0, v0, v0 }}
        {{ ivp_ltunx16 vb4, v2, v3 }}                  # v2 < v2 << 1: the lanes below 0x8000
        {{ ivp_movnx16t v4, v3, vb0 }}                 # every lane of v4 written
        {{ ivp_movnx16t v6, v3, vb4 }}                 # v6 keeps its old lanes at or above 0x8000
        {{ ivp_sv2nx8_ip v4, a4, 64 }}
        {{ ivp_sv2nx8_ip v6, a4, 64 }}
        retw
    """
    prog = assemble(body)
    facts = TX.whole_writes(TX.op_facts(prog), TX.plan("t", [prog]).known)
    shape = TX.flow(prog, facts)
    live = TX._live(shape, len(facts), True)[1][shape.entry]
    assert ("v", 4) not in live and ("v", 6) in live
    src = np.random.default_rng(5).integers(0, 256, 256, dtype=np.uint8)

    def out(program: Program) -> np.ndarray:
        dst = np.zeros(256, np.uint8)
        regions = [R.Region("src", K.SRC_BASE, src, 128, np.array([0, 128]), False),
                   R.Region("dst", K.DST_BASE, dst, 128, np.array([0, 128]), True)]
        R.run_calls(program, regions, np.array([0, 1]), carry=True)
        return dst

    base = out(prog)
    loads = f"const16 a15, {K.SRC_BASE >> 16}\nconst16 a15, 0\n"
    assert np.array_equal(out(_prefixed(prog, loads + "{ ivp_lv2nx8_i v4, a15, 64 }\n")), base)
    assert not np.array_equal(out(_prefixed(prog, loads + "{ ivp_lv2nx8_i v6, a15, 64 }\n")), base)


def _freed_at_entry(program: Program) -> set[tuple[str, int]]:
    """The registers live at the entry by the plain facts but not by the exact ones (whole_writes)."""
    tx = TX.plan("t", [program])
    out = []
    for facts in (TX.op_facts(program), TX.whole_writes(TX.op_facts(program), tx.known)):
        shape = TX.flow(program, facts)
        out.append(set(TX._live(shape, len(facts), True)[1][shape.entry]))
    return out[0] - out[1]


def test_the_kernels_lane_masks():
    # group 0's zero gates (vb2, vb13: the fp16 compare under the all-true vb0, read by the -0 merge) and its sign
    # flags (vb6, vb7: babssubunx16's, read by the sign flip; the odd ones a pass late, so the first pass reads the
    # carried-in bits, made a lane mask at the entry)
    for i in SHAPES:
        kernel, program = CONFIGS[i]
        masks = TX.plan("t", [program]).masks
        if kernel in ("proc_4bit_non_mx", "proc_6bit_non_mx") and "nf4" not in program.name:
            assert masks == {("vb", 2), ("vb", 6), ("vb", 7), ("vb", 13)}, program.name
        elif kernel == "proc_4bit_mx_8":
            # the NaN-scale test (vb1: ultn_2xf32t under the all-true vb9, read by the merge of the NaN code) where
            # the scale has NaN; bmin / bmax's flags into vb1 before it are dead (the compare writes every lane)
            assert masks == (set() if "nonan" in program.name else {("vb", 1)}), program.name
        elif kernel == "quantize_mx":
            # QuantizeMX's class flags (vb3 field 0, vb4 ±0, vb5 field 0xFF, and under nonfinite=ocp vb8, a
            # non-finite block: eqn_2x32's, read by movn_2x32t), its NaN flag (vb6: ultn_2xf32t's, read by
            # movn_2x32t and merged by the next ultn_2xf32t) and its 16-bit NaN predicate (vb7: neqnx16's, read by
            # movnx16t); not vb9, the row load's predicate (read by the expanding load, which takes no lane mask),
            # nor the flag ALU's vb1 / vb2
            ocp = {("vb", 8)} if "nonfinite=ocp" in program.name else set()
            assert masks == {("vb", n) for n in (3, 4, 5, 6, 7)} | ocp, program.name


@pytest.mark.parametrize("index", [i for i in SHAPES if _freed_at_entry(CONFIGS[i][1])], ids=lambda i: IDS[i])
def test_what_an_all_true_merge_frees_can_be_changed_at_the_entry(index):
    # the freed vec registers get the source's bytes and the freed predicates every bit set, then every bit clear
    # (x == x, x < x), at the start of every call, where the calls before left their own values
    kernel, program = CONFIGS[index]
    freed = sorted(_freed_at_entry(program))
    src = np.random.default_rng(9).integers(0, 256, (3, 700), dtype=np.uint8)
    a, _ = _run(program, kernel, src, False)
    for compare in ("ivp_eq2nx8", "ivp_ltu2nx8"):
        text = f"const16 a1, {K.SRC_BASE >> 16}\nconst16 a1, 0\n"      # (a1: no kernel program reads it)
        for file, n in freed:
            text += f"{{ ivp_lv2nx8_i v{n}, a1, 0 }}\n" if file == "v" else f"{{ {compare} vb{n}, v0, v0 }}\n"
        b, _ = _run(_prefixed(program, text), kernel, src, False)
        assert np.array_equal(a, b), (compare, freed)


# ------------------------------------------------------------------------------------------------ merged variants
_LOOP_A = """
    movi a3, 2
    loop a3, .Lend
    { ivp_addnx16 v1, v2, v3 }
    { ivp_sav2nx8_xp v1, a4, a7 }
.Lend:
    retw
"""
_LOOP_B = """
    movi a3, 2
    loop a3, .Lend
    { ivp_addnx16 v1, v2, v3 }
    { ivp_subnx16 v1, v1, v5 }
    { ivp_sav2nx8_xp v1, a4, a7 }
.Lend:
    retw
"""


def test_a_family_lays_its_variants_on_one_sequence():
    """Two shapes that differ in one bundle of a loop's body: one position of its own, guarded by its variant; the
    loop's end label the same position in both; each variant's steps its own bundles'."""
    a, b = assemble(_LOOP_A), assemble(_LOOP_B)
    fam = TX.family([a, b, a])                  # a program of a shape already seen adds no variant
    assert fam.keys == [TX.shape_key(a), TX.shape_key(b)]
    assert fam.positions == [{0: 0, 1: 0}, {0: 1, 1: 1}, {0: 2, 1: 2}, {1: 3}, {0: 3, 1: 4}, {0: 4, 1: 5}]
    assert [(f.op.mnemonic, f.guard) for f in fam.facts] == [
        ("movi", None), ("loop", None), ("addnx16", None), ("subnx16", frozenset({1})), ("sav2nx8_xp", None),
        ("retw", None)]
    assert fam.facts[1].values[1] == 5                         # .Lend: the ret's position
    assert fam.rows[3] == {1: 3} and fam.rows[4] == {0: 3, 1: 4}
    assert fam.steps(2, 5) == [2, 3]
    tx = TX.plan("t", [a, b])
    text = TX.render(tx, [a, b])
    assert "cdef int var = imm[0]" in text and "if var == 1:\n" in text
    # the loop body's steps (2, variant 1 3), computed once a call, added at its end
    assert "cdef int64_t steps_2 = 2 + 1 * (((1 << var) & 0x2) != 0)" in text and "k += steps_2\n" in text


def test_a_shared_branch_goes_to_the_first_of_its_variants_targets():
    """A branch to a label where the variants' bundles differ goes to the first variant's position: the other passes
    it (nothing of its own there). Where a variant would skip a bundle of its own on the way, they cannot merge."""
    head = "    beqz a2, .L1\n    { ivp_addnx16 v1, v2, v3 }\n.L1:\n"
    tail = "    { ivp_sav2nx8_xp v4, a4, a7 }\n    retw\n"
    a = assemble(head + "    { ivp_sllinx16 v4, v1, 4 }\n" + tail)
    b = assemble(head + "    { ivp_srlinx16 v4, v1, 4 }\n" + tail)
    fam = TX.family([a, b])
    assert fam.positions[2:4] == [{0: 2}, {1: 2}] and fam.facts[0].values[1] == 2
    # the two variants' bundles there: one test, the other variant its else
    text = TX.render(TX.plan("t", [a, b]), [a, b])
    assert "if var == 0:\n" in text and "var == 1" not in text and text.count("else:\n") >= 1
    c = assemble("    beqz a2, .L1\n    { ivp_addnx16 v1, v2, v3 }\n.L1:\n    { ivp_sllinx16 v4, v1, 4 }\n"
                 "    { ivp_addnx16 v6, v4, v4 }\n    retw\n")
    d = assemble("    beqz a2, .L1\n    { ivp_addnx16 v1, v2, v3 }\n    { ivp_srlinx16 v4, v1, 4 }\n.L1:\n"
                 "    { ivp_addnx16 v6, v4, v4 }\n    retw\n")
    with pytest.raises(TX.TranslateError, match="different bundles"):
        TX.family([c, d])


def test_a_family_liveness_is_each_variants_own():
    """v5 is read at the entry by variant 1 only: live at the entry (its copy in); v7, written by variant 1's own
    bundle before its read and never read by variant 0, is not. Liveness that let a guarded write kill in every
    variant would miss variant 0's read of v8 (written only by variant 1 before it): caught here."""
    a = assemble("    { ivp_addnx16 v1, v2, v3 }\n    { ivp_addnx16 v9, v8, v1 }\n"
                 "    { ivp_sav2nx8_xp v9, a4, a7 }\n    retw\n")
    b = assemble("    { ivp_addnx16 v1, v2, v3 }\n    { ivp_subnx16 v7, v5, v1 }\n    { ivp_addnx16 v8, v7, v7 }\n"
                 "    { ivp_addnx16 v9, v8, v1 }\n    { ivp_sav2nx8_xp v9, a4, a7 }\n    retw\n")
    fam = TX.family([a, b])
    after, entry = TX._family_live(len(fam.positions), fam.entry, fam.facts, 2, carry=False)
    assert {("v", 2), ("v", 3), ("v", 5), ("v", 8)} <= entry and ("v", 7) not in entry
    unguarded = [dataclasses.replace(f, guard=None) for f in fam.facts]
    wrong = TX._live(TX._flow(len(fam.positions), fam.entry, unguarded), len(unguarded), False)[1][fam.entry]
    assert ("v", 8) not in wrong                    # what the guard-blind analysis would have copied in: not v8


def test_a_family_table_entry_matches_each_variant():
    """TRANSLATIONS' entry of a family: each variant's program matches it, its imm array the variant first."""
    a, b = assemble(_LOOP_A), assemble(_LOOP_B)
    tx = TX.plan("t", [a, b])
    table = [tx.table_entry(a.name)]
    assert TX.match(table, a)[1][0] == 0 and TX.match(table, b)[1][0] == 1
    assert TX.match(table, assemble("{ ivp_addnx16 v1, v2, v3 }\nretw\n")) is None


# ------------------------------------------------------------------------------------------------ self-loops
def _inner_loops(text: str) -> list[int]:
    """The blocks a rendered translation runs as inner loops: the start of each one's exit test."""
    return [int(b) for b in re.findall(r"if blk != (\d+) or k >= check:", text)]


def _self_looping(programs: list[Program]) -> list[int]:
    """The blocks of a family that may be their own successor, from its flow (independently of the renderer)."""
    shape = TX._frame(TX.family(programs), carry=True).shape
    starts = sorted(shape.leaders)
    ends = [*starts[1:], shape.nbundles]
    return [a for a, b in zip(starts, ends) if a in shape.succ.get(b - 1, ())]


_BACK = """
    movi a5, 3
.Lagain:
    { ivp_addnx16 v1, v1, v2 }          # bundle 1: the block a branch goes back to
    addi a5, a5, -1
    bnez a5, .Lagain
    { ivp_sav2nx8_xp v1, a4, a7 }
    retw
"""
_STRAIGHT = """
    { ivp_addnx16 v1, v2, v3 }
    { ivp_sav2nx8_xp v1, a4, a7 }
    retw
"""


@pytest.mark.parametrize("text,loops", [(_LOOP_A, [2]), (_BACK, [1]), (_STRAIGHT, [])],
                         ids=["zero-overhead loop", "branch back", "straight"])
def test_a_block_that_is_its_own_successor_is_an_inner_loop(text, loops):
    """docs/asm.md §9, self-loops: a loop's body that is one block (a zero-overhead loop's end going back, a branch
    back to its start) runs again inside its own loop while it chose itself and the step budget's test is not due;
    every other block stays a plain case of the dispatch."""
    prog = assemble(text)
    assert _self_looping([prog]) == loops
    rendered = TX.render(TX.plan("t", [prog]), [prog])
    assert _inner_loops(rendered) == loops
    for b in loops:     # the block's own text is inside the loop, its exit test after it
        case = rendered[rendered.index(f"blk == {b}:"):]
        assert case.split("\n")[1].strip() == "while True:"
        assert case.index("k += ") < case.index(f"if blk != {b} or k >= check:")


def test_every_kernels_pass_loop_is_an_inner_loop():
    """Each kernel family's translation runs exactly the blocks its flow lets be their own successor as inner loops
    (the committed file is the rendering: test_translations_are_up_to_date), and has at least one: its pass loop."""
    for kernel, programs in G.families():
        text = TX.render(TX.plan("t", programs), programs)
        assert _inner_loops(text) == _self_looping(programs) != [], kernel


@pytest.mark.parametrize("index", [0, 4], ids=lambda i: IDS[i])
def test_a_budget_spent_inside_a_pass_loop_leaves_the_interpreters_bytes(index):
    """A budget the pass loop spends part way: the translation stops at its next budget test, before the budget
    (a self-loop included: docs/asm.md §9), and the interpreter runs the call to the budget's error, so the
    destination holds exactly the bytes the interpreter alone writes by then. An inner loop that ran on past the
    test would have stored the loop's later passes already."""
    kernel, program = CONFIGS[index]
    src = np.random.default_rng(5).integers(0, 256, (1, 4096), dtype=np.uint8)
    need = int(_run(program, kernel, src, False)[1].steps.max())
    for budget in (need // 3, need // 2):
        got = []
        for translated in (False, True):
            dst = np.full((1, dequant_out_bytes(src.shape[1], kernel)), 0xA5, np.uint8)
            with pytest.raises(R.ProgramError, match="step budget spent"):
                K.run_dequant(program, src, dst, translated=translated, max_steps=budget)
            got.append(dst)
        assert np.array_equal(got[0], got[1]), budget
        assert (got[0] != 0xA5).any() and (got[0] == 0xA5).any(), budget     # stopped inside the loop


# ------------------------------------------------------------------------------------------------ uniform lane masks
def test_uniform_lane_masks_on_a_small_program():
    """docs/asm.md §9, uniform lane masks: a merge reads its lane mask as filling its lanes whole where every write
    reaching it is a whole write on lanes as wide or a multiple as wide; not where a write is merged under a data
    predicate, is on narrower lanes, or the call's entry value may reach it (no lane-mask op writes 8-bit lanes)."""
    prog = assemble("""
        { ivp_eqnx16 vb0, v0, v0 }                      # known all-true
        { ivp_ltunx16 vb4, v2, v3 }                     # a data predicate (bits)
        { ivp_oltnxf16t vb1, v2, v3, vb0 }              # row 2: whole, 16-bit lanes
        { ivp_movnx16t v4, v5, vb1 }                    # row 3: uniform
        { ivp_oltnxf16t vb3, v2, v3, vb4 }              # row 4: merged under a data predicate
        { ivp_movnx16t v6, v5, vb3 }                    # row 5: not uniform
        { ivp_babssubunx16 vb5, v7, v2, v3 }            # row 6: a flag, whole, 16-bit lanes
        { ivp_negnxf16t v8, v8, vb5 }                   # row 7: uniform
        { ivp_eqn_2x32 vb6, v2, v3 }                    # row 8: 32-bit lanes
        { ivp_movnx16t v9, v5, vb6 }                    # row 9: a 16-bit merge under 32-bit lanes: uniform
        { ivp_movn_2x32t v12, v5, vb5 }                 # row 10: a 32-bit merge under 16-bit lanes: not uniform
        { ivp_movnx16t v13, v5, vb2 }                   # row 11: vb2 from the entry: not uniform
        { ivp_oltnxf16t vb2, v2, v3, vb0 }
        { ivp_movnx16t v14, v5, vb2 }                   # row 13: uniform (the write above reaches it alone)
        { ivp_sav2nx8_xp v4, a4, a7 }
        retw
    """)
    tx = TX.plan("t", [prog])
    assert {("vb", n) for n in (1, 2, 3, 5, 6)} <= tx.masks
    assert tx.uniform_reads == {3, 7, 9, 13}
    text = TX.render(tx, [prog])
    assert "P.movnx16t(&v4, &v5, <vumask_t*>&vb1)" in text and "P.movnx16t(&v6, &v5, &vb3)" in text


def _uniform_claims(program: Program, extra: tuple[int, ...] = ()) -> dict[tuple[str, tuple[int, ...]], int]:
    """The merges of ``program`` whose lane mask the analysis (and ``extra``: rows claimed besides) calls uniform, as
    a trace shows their executions (:func:`_fact_key`) -> their lane width in bytes."""
    facts = TX.op_facts(program)
    out = {}
    for row in sorted(TX.plan("t", [program]).uniform_reads | set(extra)):
        f = facts[row]
        k = next(i for i, o in enumerate(f.op.operands) if o.name == f.op.merge_under)
        out[_fact_key(f)] = 64 // f.op.operands[k].lanes
    return out


def _nonuniform_reads(program: Program, kernel: str, claims: dict) -> tuple[int, list[tuple[int, str]]]:
    """In an interpreted run with a trace, the executions of the claimed merges (:func:`_uniform_claims`) whose
    predicate's bits differ within one of their lanes: (executions checked, (seq, op) of each that differs)."""
    checked, bad = 0, []
    for op, width in _executions(program, kernel, 11, claims):
        pred = next(o for o in op.operands if o.role_name == "src" and _KIND_FILE.get(o.kind) == "vb")
        bits, lane = int.from_bytes(bytes(pred.data), "little"), (1 << width) - 1
        checked += 1
        if any((bits >> (width * k)) & lane not in (0, lane) for k in range(64 // width)):
            bad.append((op.seq, op.op))
    return checked, bad


@pytest.mark.parametrize("index", [i for i in SHAPES if TX.plan("t", [CONFIGS[i][1]]).uniform_reads],
                         ids=lambda i: IDS[i])
def test_a_uniform_lane_mask_fills_its_lanes_at_every_read(index):
    """Every execution of a merge the analysis reads uniform, in the interpreter, sees a predicate whose bits agree
    within each of its lanes (so its lane mask's bytes do)."""
    kernel, program = CONFIGS[index]
    checked, bad = _nonuniform_reads(program, kernel, _uniform_claims(program))
    assert checked > 0 and not bad, bad[:4]


def test_a_lane_mask_the_entry_reaches_called_uniform_is_caught():
    """The check above fails when the analysis is wrong: group 0's sign flip of the odd codes reads vb6 a pass late,
    so the first pass reads the register file's vb6; the call's entry given bits that differ within 16-bit lanes, a
    claim that this read is uniform fails, and the analysis's own claims still hold."""
    kernel, program = CONFIGS[0]
    prefix = _load_source("v31") + "{ ivp_ltu2nx8 vb6, v0, v31 }\n"       # byte lanes: source byte > 0
    wrong = _prefixed(program, prefix)
    facts = TX.op_facts(wrong)
    late = [f.row for f in facts if f.op.mnemonic == "negnxf16t" and f.values[2] == 6]
    assert late and not set(late) & TX.plan("t", [wrong]).uniform_reads
    assert _nonuniform_reads(wrong, kernel, _uniform_claims(wrong))[1] == []
    checked, bad = _nonuniform_reads(wrong, kernel, _uniform_claims(wrong, tuple(late)))
    assert bad and {op for _, op in bad} == {"negnxf16t"}
