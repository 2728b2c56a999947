"""The assembly syntax of every op: one field list per op, from which the printer and the parser both come.

docs/asm.md §2 is the language; this module is its op-level half. :func:`fields` derives an op's operand fields from
its record in the op tables (:mod:`q7emu.primitives.optable` for the IVP ops, :mod:`q7emu.primitives.scalar_ops`
for the scalar core), in the disassembly's operand order, which is the C intrinsic's (docs/intrinsics.md §2):

* a vec / wvec / vbool / pr / valign operand is a register field (``v0..v31``, ``wv0..wv3``, ``vb0..vb15``,
  ``pr0..pr15``, ``u0..u3``);
* an immediate is an ``imm`` field with its range, granule and modelled values;
* a memory operand is Xtensa's: the address register that holds the address (the op table's ``mem`` + ``off``
  pair) -- updated by the ``_ip`` / ``_xp`` forms --, followed in an ``_i`` form by an immediate displacement
  (``ivp_lv2nx8_i v13, a5, 832``: the listing's ``[832]``); the ``_ip`` forms' increment is an immediate, the
  ``_xp`` forms' byte count (``n``) an address register;
* the scalar core's ``areg`` and ``label`` operands are ``a0..a15`` and a label of the program.

:func:`format_operands` prints an op's operand values and :func:`parse_register` / :func:`check_immediate` read
them back, from the same fields, so the printer (listings, ``q7emu listing --asm``, :meth:`q7emu.asm.Program.text`)
and the assembler cannot disagree. :data:`OPCODES` numbers every op for the program interpreter
(``src/kernels/_program.pyx``, whose dispatch ``q7emu/primitives/gen_wrappers.py`` generates in the same order).
"""
from __future__ import annotations

import re
from functools import cache

from q7emu._dataclass import dataclass
from q7emu.primitives import optable as T
from q7emu.primitives.scalar_ops import SCALAR_BY_NAME, SCALAR_OPS, SCALAR_SUFFIXES

#: register field kind -> (the register file's name in docs/firmware.md §6.1, how many registers)
REGISTER_FILES = {"v": ("vec", 32), "wv": ("wvec", 4), "vb": ("vbool", 16), "pr": ("pr", 16), "u": ("valign", 4),
                  "a": ("AR", 16)}
#: op-table operand kind -> its register field kind
_REG_KIND = {T.VEC: "v", T.WVEC: "wv", T.VBOOL: "vb", T.PR: "pr", T.VALIGN: "u", T.AREG: "a"}
#: the immediates of the memory forms, which the facts do not bound: q7emu's choice, a signed 16-bit field
#: (docs/asm.md §2.4)
MEM_IMM_LO, MEM_IMM_HI = -32768, 32767
IMM, LABEL = "imm", "label"
_REG_RE = re.compile(r"^(wv|vb|pr|v|u|a)([0-9]+)$")


@dataclass(frozen=True)
class Field:
    """One operand field of an op's assembly syntax.

    ``kind``: a register file (``v``, ``wv``, ``vb``, ``pr``, ``u``, ``a``), ``imm`` or ``label``; ``operand``: the
    op-table operand it fills (``disp`` for an ``_i`` form's displacement); ``role``: src / dst / srcdst (what the
    op does to the register); ``lo`` / ``hi`` / ``values`` / ``step``: an immediate's rule; ``name``: the field's
    name in error messages and docs (``vt``, ``as``, ``imm``)."""

    kind: str
    operand: str
    role: str
    name: str
    lo: int | None = None
    hi: int | None = None
    values: tuple[int, ...] = ()
    step: int = 1

    @property
    def is_register(self) -> bool:
        """A register field (not an immediate or a label)."""
        return self.kind in REGISTER_FILES

    def describe(self) -> str:
        """What the field takes, for an error message: ``a vec register v0..v31``, ``an immediate in [0, 31]``."""
        if self.kind in REGISTER_FILES:
            file, count = REGISTER_FILES[self.kind]
            article = "an" if file[0] in "AEIOU" else "a"
            return f"{article} {file} register {self.kind}0..{self.kind}{count - 1}"
        if self.kind == LABEL:
            return "a label"
        rule = f"an immediate in [{self.lo}, {self.hi}]"
        if self.values:
            rule = "an immediate, one of " + ", ".join(str(v) for v in self.values)
        if self.step > 1:
            rule += f", a multiple of {self.step}"
        return rule

    def syntax(self) -> str:
        """The field as docs/asm.md's syntax tables show it: ``vt``, ``as``, ``imm``, ``label``."""
        return self.name


def _ivp_fields(op: T.Op) -> tuple[Field, ...]:
    out: list[Field] = []
    for o in op.operands:
        if o.kind == T.MEMORY:
            continue
        if o.kind == T.SCALAR:
            if o.name == "off":
                out.append(Field("a", "off", o.role, "as"))
                if op.mnemonic.endswith("_i"):
                    out.append(Field(IMM, "disp", T.SRC, "disp", MEM_IMM_LO, MEM_IMM_HI))
            elif o.name == "n":
                out.append(Field("a", "n", T.SRC, "at"))
            else:
                out.append(Field(IMM, o.name, T.SRC, o.name, MEM_IMM_LO, MEM_IMM_HI))
        elif o.kind == T.IMM:
            out.append(Field(IMM, o.name, T.SRC, o.name, o.lo, o.hi, o.values, o.step))
        else:
            out.append(Field(_REG_KIND[o.kind], o.name, o.role, o.name))
    return tuple(out)


def _scalar_fields(op: T.Op) -> tuple[Field, ...]:
    out: list[Field] = []
    for o in op.operands:
        if o.kind == T.AREG:
            out.append(Field("a", o.name, o.role, o.name))
        elif o.kind == T.IMM:
            out.append(Field(IMM, o.name, T.SRC, o.name, o.lo, o.hi, o.values, o.step))
        else:
            out.append(Field(LABEL, o.name, T.SRC, o.name))
    return tuple(out)


#: every op a program may use: the IVP ops (wrapped and C-only), then the scalar core's; the index is the opcode
OPCODES: tuple[T.Op, ...] = T.ALL_OPS + SCALAR_OPS
OPCODE: dict[str, int] = {o.mnemonic: i for i, o in enumerate(OPCODES)}
#: the first scalar opcode
FIRST_SCALAR = len(T.ALL_OPS)


def is_ivp(op: T.Op) -> bool:
    """An IVP op (printed with the ``ivp_`` prefix), not one of the scalar core's."""
    return op.mnemonic not in SCALAR_BY_NAME


@cache
def fields(op: T.Op) -> tuple[Field, ...]:
    """The op's operand fields, in the disassembly's order."""
    return _scalar_fields(op) if not is_ivp(op) else _ivp_fields(op)


def operand_position(op: T.Op, operand: str) -> int:
    """The index of op-table operand ``operand`` in the interpreter's operand array of ``op`` (its position in
    the op table's operand list; an ``_i`` form's displacement takes the memory operand's position)."""
    names = ["disp" if o.kind == T.MEMORY else o.name for o in op.operands]
    return names.index(operand)


def lookup(mnemonic: str) -> tuple[T.Op | None, str]:
    """(record, suffix) of a mnemonic as written: case-insensitive, the ``ivp_`` prefix optional on an IVP op, a
    scalar op's ``.w15`` / ``.a`` / ``.n`` suffix kept apart; (None, "") when no op has that name."""
    m = mnemonic.lower()
    if m.startswith("ivp_"):
        o = T.BY_NAME.get(m[4:])
        return o, ""
    if m in T.BY_NAME:
        return T.BY_NAME[m], ""
    for suffix in ("",) + SCALAR_SUFFIXES:
        if suffix and not m.endswith(suffix):
            continue
        base = m[: len(m) - len(suffix)] if suffix else m
        if base in SCALAR_BY_NAME:
            return SCALAR_BY_NAME[base], suffix
    return None, ""


def known_mnemonics() -> list[str]:
    """Every mnemonic a program may use (IVP ops without their prefix), for 'did you mean' hints."""
    return [o.mnemonic for o in OPCODES]


def parse_register(kind: str, token: str) -> int | None:
    """The register number ``token`` names in register file ``kind`` (``v12`` -> 12), or None when it names no
    register of that file (another file, a number out of range, not a register)."""
    m = _REG_RE.match(token.strip().lower())
    if not m or m.group(1) != kind:
        return None
    n = int(m.group(2))
    if n >= REGISTER_FILES[kind][1] or (len(m.group(2)) > 1 and m.group(2)[0] == "0"):
        return None
    return n


def register_kind(token: str) -> str | None:
    """The register file a token names (``vb3`` -> ``vb``), or None: for an error message that says what was
    written instead of the expected kind."""
    m = _REG_RE.match(token.strip().lower())
    return m.group(1) if m else None


def check_immediate(f: Field, value: int) -> str | None:
    """The rule ``value`` breaks as immediate field ``f``, or None when it is legal."""
    if f.values and value not in f.values:
        return f"{value} is not {f.describe()}"
    if f.lo is not None and f.hi is not None and not f.lo <= value <= f.hi:
        return f"{value} is out of range: {f.describe()}"
    if f.step > 1 and value % f.step:
        return f"{value} is not a multiple of {f.step}"
    return None


def format_value(f: Field, value: int | str) -> str:
    """One operand value as the printer writes it: ``v12``, ``a5``, ``-3``, ``0xCCCD``, a label name."""
    if f.kind in REGISTER_FILES:
        return f"{f.kind}{value}"
    if f.kind == LABEL:
        return str(value)
    v = int(value)
    return hex(v) if abs(v) >= 4096 else str(v)


def format_operands(op: T.Op, values: tuple[int | str, ...], sep: str = ", ") -> str:
    """The operand list of one op instance, in its fields' order."""
    fs = fields(op)
    if len(values) != len(fs):
        raise ValueError(f"{op.mnemonic}: {len(values)} operand values for {len(fs)} fields")
    return sep.join(format_value(f, v) for f, v in zip(fs, values))


def format_op(op: T.Op, values: tuple[int | str, ...], prefix: bool = True, sep: str = ", ") -> str:
    """One op instance as a line of the language: ``ivp_sel2nx8i_s4 v26, v3, v1, 9``, ``addi a10, a1, 20``."""
    name = ("ivp_" if prefix and is_ivp(op) else "") + op.mnemonic
    ops = format_operands(op, values, sep)
    return f"{name} {ops}" if ops else name


def syntax_line(op: T.Op) -> str:
    """The op's syntax as docs/asm.md's tables print it: ``ivp_lv2nx8_i vt, as, disp``."""
    name = ("ivp_" if is_ivp(op) else "") + op.mnemonic
    return (name + " " + ", ".join(f.syntax() for f in fields(op))).rstrip()
