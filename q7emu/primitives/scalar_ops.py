"""The scalar core's op table: the base-Xtensa instructions a q7emu program may use (docs/asm.md §3).

Pure data, like :mod:`q7emu.primitives.optable`, and made of the same :class:`~q7emu.primitives.optable.Op`
records: mnemonic, family, operands in the disassembly's order (the destination first, as ``add ar, as, at``
prints), one-line semantics, the docs/ section, provenance and FLIX slot class. The semantics are those of
docs/firmware.md §6.4 (the ISA-batch pages B25 / B26 / B28 of this core, which QEMU's ``target/xtensa``
implements for the same base ISA); each op's C body is one ``cdef inline`` function in
``src/primitives/xt_scalar.pxd``, which the program interpreter (``src/kernels/_program.pyx``) calls.

Operand kinds: ``areg`` (a0..a15), ``imm`` (with its range, granule and, for the reg-immediate branches, the
table of encodable values) and ``label`` (a branch or loop target). The registers are 32 bits wide and every
arithmetic op wraps; a comparison is signed unless its mnemonic ends in ``u``.
"""
from __future__ import annotations

from q7emu.primitives.optable import (
    AREG,
    DST,
    LABEL,
    SPEC_HIGH,
    SPEC_MED,
    SRC,
    SRCDST,
    Op,
    Operand,
    imm,
)

# ---------------------------------------------------------------------------------- families and slots
XALU = "scalar-alu"      # arithmetic, logic, shifts, multiplies, conditional moves
XMEM = "scalar-mem"      # l32i / s32i and the 16- / 8-bit loads and stores
XBRANCH = "branch"       # branches and jumps (a label operand)
XLOOP = "loop"           # the zero-overhead loops
XCTRL = "control"        # nop, entry, ret / retw
SCALAR_FAMILIES = (XALU, XMEM, XBRANCH, XLOOP, XCTRL)
#: a scalar op in a FLIX bundle takes the LdSt or the Ld slot (docs/firmware.md §6.4: the ``.w15`` branch forms
#: and ``addi.a`` sit there); :data:`q7emu.primitives.optable.SLOT_CLASSES` holds the class
CORE = "core"
#: ``nop`` fills any free slot
ANY = "any"

_B25 = "docs/firmware.md §6.4 (B25)"
_B26 = "docs/firmware.md §6.4 (B26)"
_B28 = "docs/firmware.md §6.4 (B28)"

#: the reg-immediate branches' encodable constants (beqi / bnei / blti / bgei; bltui / bgeui): the base ISA's
#: B4CONST and B4CONSTU tables
B4CONST = (-1, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 32, 64, 128, 256)
B4CONSTU = (32768, 65536, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 32, 64, 128, 256)


def areg(name: str, role: str = SRC) -> Operand:
    """An address register operand (a0..a15)."""
    return Operand(name, role, AREG, "", "int")


def label(name: str = "label") -> Operand:
    """A branch or loop target: a label of the program."""
    return Operand(name, SRC, LABEL, "", "int")


def _op(mnemonic: str, family: str, operands: tuple[Operand, ...], semantics: str, cite: str,
        provenance: str = SPEC_HIGH, note: str = "", slot: str = CORE) -> Op:
    return Op(mnemonic, family, operands, semantics, cite, provenance, note, slot)


def _rrr(mnemonic: str, expr: str, cite: str = _B25) -> Op:
    """``op ar, as, at``: ar = expr."""
    return _op(mnemonic, XALU, (areg("ar", DST), areg("as"), areg("at")), f"ar = {expr}.", cite)


def _branch2(mnemonic: str, cond: str) -> Op:
    return _op(mnemonic, XBRANCH, (areg("as"), areg("at"), label()), f"Branch to label if {cond}.", _B26)


def _branchz(mnemonic: str, cond: str) -> Op:
    return _op(mnemonic, XBRANCH, (areg("as"), label()), f"Branch to label if {cond}.", _B26)


def _branchi(mnemonic: str, cond: str, table: tuple[int, ...]) -> Op:
    lo, hi = min(table), max(table)
    return _op(mnemonic, XBRANCH, (areg("as"), imm("imm", lo, hi, example=table[1], values=table), label()),
               f"Branch to label if {cond} (imm from the B4CONST{'U' if table is B4CONSTU else ''} table).", _B26)


def _load(mnemonic: str, size: int, expr: str) -> Op:
    hi = 255 * size
    return _op(mnemonic, XMEM, (areg("at", DST), areg("as"), imm("imm", 0, hi, example=size, step=size)),
               f"at = {expr} at address as + imm ({size}-byte aligned).", _B26)


def _store(mnemonic: str, size: int, what: str) -> Op:
    hi = 255 * size
    return _op(mnemonic, XMEM, (areg("at"), areg("as"), imm("imm", 0, hi, example=size, step=size)),
               f"Store {what} at address as + imm ({size}-byte aligned).", _B26)


#: every scalar op a program may use, in docs/asm.md §3's order
SCALAR_OPS: tuple[Op, ...] = (
    # ---- moves and constants
    _op("movi", XALU, (areg("at", DST), imm("imm", -2048, 2047, example=5)), "at = imm (signed 12-bit).", _B25),
    _op("const16", XALU, (areg("at", SRCDST), imm("imm", 0, 65535, example=0xCCCD)),
        "at = (at << 16) | imm: two in a row build a 32-bit constant.", _B25),
    _op("mov", XALU, (areg("ar", DST), areg("as")), "ar = as (the base ISA's `or ar, as, as`).", _B25),
    # ---- arithmetic (32-bit, wrapping)
    _op("addi", XALU, (areg("at", DST), areg("as"), imm("imm", -128, 127, example=20)), "at = as + imm.", _B25),
    _op("addmi", XALU, (areg("at", DST), areg("as"), imm("imm", -32768, 32512, example=256, step=256)),
        "at = as + imm (imm a multiple of 256).", _B25),
    _rrr("add", "as + at"),
    _rrr("sub", "as - at"),
    _rrr("addx2", "(as << 1) + at"),
    _rrr("addx4", "(as << 2) + at"),
    _rrr("addx8", "(as << 3) + at"),
    _rrr("subx2", "(as << 1) - at"),
    _rrr("subx4", "(as << 2) - at"),
    _rrr("subx8", "(as << 3) - at"),
    _op("neg", XALU, (areg("ar", DST), areg("at")), "ar = -at (wraps at INT32_MIN).", _B25),
    _op("abs", XALU, (areg("ar", DST), areg("at")), "ar = |at| (abs of INT32_MIN is INT32_MIN).", _B25),
    # ---- logic and shifts
    _rrr("and", "as & at"),
    _rrr("or", "as | at"),
    _rrr("xor", "as ^ at"),
    _op("slli", XALU, (areg("ar", DST), areg("as"), imm("sa", 1, 31, example=2)), "ar = as << sa (sa 1..31).", _B25),
    _op("srli", XALU, (areg("ar", DST), areg("at"), imm("sa", 0, 15, example=2)),
        "ar = at >> sa, logical (sa 0..15 only).", _B25),
    _op("srai", XALU, (areg("ar", DST), areg("at"), imm("sa", 0, 31, example=2)),
        "ar = at >> sa, arithmetic (sa 0..31).", _B25),
    _op("extui", XALU, (areg("ar", DST), areg("at"), imm("shift", 0, 31, example=1), imm("bits", 1, 16, example=4)),
        "ar = (at >> shift) & (2^bits - 1) (shift 0..31, bits 1..16).", _B25),
    # ---- multiplies and divides
    _rrr("mull", "low 32 bits of as * at", _B26),
    _rrr("muluh", "high 32 bits of the unsigned 64-bit product as * at", _B26),
    _rrr("mulsh", "high 32 bits of the signed 64-bit product as * at", _B26),
    _rrr("mul16u", "(as & 0xFFFF) * (at & 0xFFFF), unsigned", _B26),
    _rrr("mul16s", "int16(as) * int16(at), signed", _B26),
    _rrr("quou", "as / at, unsigned (at = 0 stops the run: integer divide by zero)", _B26),
    _rrr("quos", "as / at, signed, truncated (INT32_MIN / -1 = INT32_MIN; at = 0 stops the run)", _B26),
    _rrr("remu", "as % at, unsigned (at = 0 stops the run)", _B26),
    _rrr("rems", "as % at, signed, the sign of as (at = 0 stops the run)", _B26),
    # ---- conditional moves and set-less-than
    _op("moveqz", XALU, (areg("ar", SRCDST), areg("as"), areg("at")), "ar = as if at == 0.", _B25),
    _op("movnez", XALU, (areg("ar", SRCDST), areg("as"), areg("at")), "ar = as if at != 0.", _B25),
    _op("movltz", XALU, (areg("ar", SRCDST), areg("as"), areg("at")), "ar = as if at < 0.", _B25),
    _op("movgez", XALU, (areg("ar", SRCDST), areg("as"), areg("at")), "ar = as if at >= 0.", _B25),
    _rrr("salt", "1 if as < at (signed) else 0"),
    _rrr("saltu", "1 if as < at (unsigned) else 0"),
    # ---- loads and stores
    _load("l32i", 4, "the 32-bit word"),
    _load("l16ui", 2, "the zero-extended 16-bit halfword"),
    _load("l16si", 2, "the sign-extended 16-bit halfword"),
    _load("l8ui", 1, "the zero-extended byte"),
    _store("s32i", 4, "at"),
    _store("s16i", 2, "the low 16 bits of at"),
    _store("s8i", 1, "the low 8 bits of at"),
    # ---- branches
    _branchz("beqz", "as == 0"),
    _branchz("bnez", "as != 0"),
    _branchz("bltz", "as < 0"),
    _branchz("bgez", "as >= 0"),
    _branch2("beq", "as == at"),
    _branch2("bne", "as != at"),
    _branch2("blt", "as < at (signed)"),
    _branch2("bge", "as >= at (signed)"),
    _branch2("bltu", "as < at (unsigned)"),
    _branch2("bgeu", "as >= at (unsigned)"),
    _branch2("bany", "(as & at) != 0"),
    _branch2("bnone", "(as & at) == 0"),
    _branch2("ball", "(~as & at) == 0"),
    _branch2("bnall", "(~as & at) != 0"),
    _branch2("bbc", "bit (at & 31) of as is 0"),
    _branch2("bbs", "bit (at & 31) of as is 1"),
    _branchi("beqi", "as == imm", B4CONST),
    _branchi("bnei", "as != imm", B4CONST),
    _branchi("blti", "as < imm (signed)", B4CONST),
    _branchi("bgei", "as >= imm (signed)", B4CONST),
    _branchi("bltui", "as < imm (unsigned)", B4CONSTU),
    _branchi("bgeui", "as >= imm (unsigned)", B4CONSTU),
    _op("bbci", XBRANCH, (areg("as"), imm("bit", 0, 31, example=0), label()),
        "Branch to label if bit `bit` of as is 0.", _B26),
    _op("bbsi", XBRANCH, (areg("as"), imm("bit", 0, 31, example=0), label()),
        "Branch to label if bit `bit` of as is 1.", _B26),
    _op("j", XBRANCH, (label(),), "Jump to label.", _B26),
    # ---- zero-overhead loops (docs/asm.md §4.3)
    _op("loop", XLOOP, (areg("as"), label()),
        "Run the bundles from the next one up to label (exclusive) as times: LCOUNT = as - 1, LBEG = the next "
        "bundle, LEND = label (as = 0 runs the body 2^32 times).", _B28, SPEC_MED, "B28 and the base ISA"),
    _op("loopnez", XLOOP, (areg("as"), label()), "loop, but skip to label when as == 0.", _B28, SPEC_MED,
        "B28 and the base ISA"),
    _op("loopgtz", XLOOP, (areg("as"), label()), "loop, but skip to label when as <= 0 (signed).", _B28, SPEC_MED,
        "B28 and the base ISA"),
    # ---- control
    _op("nop", XCTRL, (), "No operation.", _B25, slot=ANY),
    _op("entry", XCTRL, (areg("as", SRCDST), imm("imm", 0, 32760, example=32, step=8)),
        "as = as - imm (the stack frame; the register-window rotation is not modelled).", _B26, SPEC_MED,
        "windows not modelled"),
    _op("ret", XCTRL, (), "Return from the entry function: the run ends.", _B26),
    _op("retw", XCTRL, (), "Return from the entry function (windowed): the run ends.", _B26),
)

#: the ops whose result is one of their operands' values unchanged, with those operands: ``movi`` its immediate,
#: ``mov`` its source, a conditional move its source or the destination's own value. A translation follows them to
#: the lengths a loop's variable-length access takes (q7emu.asm.translate.access_lengths, docs/asm.md §9)
VALUE_COPIES: dict[str, tuple[str, ...]] = {
    "movi": ("imm",), "mov": ("as",),
    "moveqz": ("ar", "as"), "movnez": ("ar", "as"), "movltz": ("ar", "as"), "movgez": ("ar", "as"),
}
#: mnemonic -> record
SCALAR_BY_NAME: dict[str, Op] = {o.mnemonic: o for o in SCALAR_OPS}
#: the suffixes a scalar mnemonic may carry, all meaning the same operation (docs/asm.md §3.1): ``.w15`` and ``.a``
#: (the forms that sit in a FLIX bundle's slot, as the seeds print ``bbci.w15`` and ``addi.a``) and ``.n`` (the
#: 16-bit density forms; their narrower immediate ranges are not enforced)
SCALAR_SUFFIXES = (".w15", ".a", ".n")


def scalar_op(mnemonic: str) -> Op:
    """The record of a scalar mnemonic (no suffix); KeyError when the scalar core has no such op."""
    return SCALAR_BY_NAME[mnemonic]
