"""The assembler: program text (docs/asm.md) -> :class:`q7emu.asm.program.Program`.

Three steps. The *preprocessor* reads the lines (comments, pasted objdump prefixes), evaluates ``.equ`` / ``.set``,
``.req`` and conditional assembly, and expands macros, ``.rept`` / ``.irp`` / ``.for`` blocks and ``.include``
files. The *first pass* splits what is left into labels, directives, data and bundles, and reads each op's
mnemonic and operand texts. The *second pass*, once every label is known, reads each operand against its field
(:mod:`q7emu.primitives.asm_syntax`), then checks each bundle: FLIX slots, one write per register, one control
transfer, loop bodies. Every error is one :class:`q7emu.errors.AsmError` naming ``file:line:col`` and the rule.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

from q7emu._dataclass import dataclass
from q7emu.asm.expr import ExprError, Value, evaluate, is_name, split_args
from q7emu.asm.program import DATA_BASE, MAX_BUNDLES, MAX_DATA_BYTES, Bundle, Instr, Program, SourceRef
from q7emu.errors import AsmError, InvalidArgument
from q7emu.fileio import open_regular
from q7emu.primitives import asm_syntax as S
from q7emu.primitives import optable as T

#: the largest program text read (bytes; an .include counts its own file), the longest line, the most lines
#: after macro expansion, the deepest include / macro nesting (docs/asm.md §2.8)
MAX_SOURCE_BYTES = 1 << 20
MAX_LINE_CHARS = 4096
MAX_EXPANDED_LINES = 400_000
MAX_INCLUDE_DEPTH = 8
MAX_MACRO_DEPTH = 32
#: an operand the disassembler could not read, as objdump and the seeds print it
ILLEGIBLE = ("…", "...", "?")

_LABEL_RE = re.compile(r"\s*([A-Za-z_.$][A-Za-z0-9_.$]*)\s*:(?!:)")
_ADDR_RE = re.compile(r"\s*(@?0[xX][0-9a-fA-F]+|@[0-9a-fA-F]+|[0-9a-fA-F]+)\s*(<([^<>]*)>)?\s*:(?=\s|$)")
_HEX_RE = re.compile(r"[0-9a-fA-F]+")
#: a register numbered by an expression: ``v(\first + 2)`` (docs/asm.md §2.2)
_REG_EXPR_RE = re.compile(r"(wv|vb|pr|v|u|a)\s*\((.*)\)", re.IGNORECASE)
_DIRECTIVES_IGNORED = (".global", ".globl", ".type", ".size", ".file", ".ident", ".literal_position", ".begin",
                       ".end", ".local", ".weak", ".hidden")
_DATA_WIDTH = {".byte": 1, ".half": 2, ".short": 2, ".2byte": 2, ".hword": 2, ".word": 4, ".long": 4, ".4byte": 4,
               ".int": 4}
_BLOCKS = (".rept", ".irp", ".for")
#: the conditional-assembly directives (docs/asm.md §2.5)
_CONDITIONALS = frozenset({".if", ".ifdef", ".ifndef", ".elif", ".elseif", ".else", ".endif"})


@dataclass
class _Line:
    text: str
    where: SourceRef


@dataclass
class _Macro:
    name: str
    params: list[tuple[str, str | None]]
    body: list[_Line]
    where: SourceRef


@dataclass
class _PendingInstr:
    op: T.Op
    name: str
    slot: str
    args: list[tuple[str, int]]
    where: SourceRef


@dataclass
class _PendingBundle:
    instrs: list[_PendingInstr]
    tag: int
    where: SourceRef
    braced: bool
    address: int | None
    labels: list[str] = field(default_factory=list)


def _err(where: SourceRef, rule: str, col: int | None = None) -> AsmError:
    return AsmError(where.file, where.line, where.col if col is None else col, rule + where.context())


def _strip_comment(text: str) -> str:
    """The line without its comment (``#`` or ``//`` outside a string)."""
    quote = False
    for i, c in enumerate(text):
        if c == '"':
            quote = not quote
        elif not quote and (c == "#" or text.startswith("//", i)):
            return text[:i]
    return text


class Assembler:
    """One assembly: the preprocessor's state, the passes' results."""

    def __init__(self, name: str, symbols: Mapping[str, Value] | None, readings: Mapping[str, str] | None,
                 base_dir: Path | None) -> None:
        self.name = name
        self.symbols: dict[str, Value] = dict(symbols or {})
        self.aliases: dict[str, tuple[str, int]] = {}
        self.macros: dict[str, _Macro] = {}
        self.override_readings = dict(readings or {})
        self.readings: dict[str, str] = {m: next(iter(r)) for m, r in T.READINGS.items()}
        for m, r in self.override_readings.items():
            self._check_reading(m, r, SourceRef(name, 0))
            self.readings[m] = r
        self.base_dir = base_dir
        self.expansions = 0
        self.n_lines = 0
        # first pass
        self.section = "text"
        self.data = bytearray()
        self.data_exprs: list[tuple[int, int, str, SourceRef, int]] = []
        self.bundles: list[_PendingBundle] = []
        self.labels: dict[str, tuple[str, int]] = {}
        self.label_where: dict[str, SourceRef] = {}
        self.pending_labels: list[str] = []
        self.next_tag = 0
        self.entry: tuple[str, SourceRef] | None = None
        self.open_bundle: tuple[str, SourceRef, int | None, int] | None = None
        self.pending_addr: int | None = None

    # ================================================================== preprocessor
    def read_lines(self, text: str, file: str, depth: int = 0) -> list[_Line]:
        """The physical lines of one source, checked for size and characters."""
        if len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
            raise AsmError(file, 0, 0, f"the program is larger than {MAX_SOURCE_BYTES} bytes (docs/asm.md §2.8)")
        out = []
        for i, line in enumerate(text.splitlines(), 1):
            if len(line) > MAX_LINE_CHARS:
                raise AsmError(file, i, 0, f"line longer than {MAX_LINE_CHARS} characters")
            if "\x00" in line:
                raise AsmError(file, i, line.index("\x00") + 1, "a NUL character in the program text")
            out.append(_Line(line, SourceRef(file, i)))
        return out

    def _eval(self, text: str, where: SourceRef, col: int = 0, labels: bool = False) -> int:
        lookup = self._label_value if labels else None
        try:
            return evaluate(text, self.symbols, lookup)
        except ExprError as e:
            raise _err(where, str(e), col + e.col + 1 if col or e.col else 0) from None

    def _label_value(self, name: str) -> int | None:
        got = self.labels.get(name)
        if got is None:
            return None
        sec, v = got
        return DATA_BASE + v if sec == "data" else v

    def expand(self, lines: list[_Line], depth: int = 0) -> list[_Line]:
        """Conditional assembly, symbols, register aliases, macros, repeats and includes, in order."""
        out: list[_Line] = []
        conds: list[list[bool]] = []          # per open .if: [this branch active, some branch taken]
        opened: list[SourceRef] = []          # where each open .if is
        i = 0
        while i < len(lines):
            ln = lines[i]
            i += 1
            body = _strip_comment(ln.text).strip()
            word = body.split(None, 1)[0].lower() if body else ""
            rest = body[len(word):].strip() if body else ""
            if word in _CONDITIONALS:
                self._conditional(word, rest, ln, conds, opened)
                continue
            active = all(c[0] for c in conds)
            if not active:
                if word == ".macro" or word in _BLOCKS:    # skip the block whole (its .endif lines are its own)
                    _, i = self._collect(lines, i, ln, ".endm" if word == ".macro" else ".endr")
                continue
            if word == ".macro":
                self._define_macro(lines, i, ln, rest)
                _, i = self._collect(lines, i, ln, ".endm")
                continue
            if word in (".endm", ".endr"):
                raise _err(ln.where, f"{word} without its opening directive")
            if word in _BLOCKS:
                block, i = self._collect(lines, i, ln, ".endr")
                out += self._repeat(word, rest, block, ln, depth)
                continue
            if self._definition(word, rest, body, ln):
                continue
            if word == ".include":
                out += self._include(rest, ln, depth)
                continue
            if word == ".error":
                raise _err(ln.where, ".error: " + rest.strip().strip('"'))
            if word and word in self.macros:
                out += self._call_macro(self.macros[word], rest, ln, depth)
                continue
            out.append(ln)
            self.n_lines += 1
            if self.n_lines > MAX_EXPANDED_LINES:
                raise _err(ln.where, f"more than {MAX_EXPANDED_LINES} lines after macro expansion (docs/asm.md §2.8)")
        if conds:
            raise _err(opened[-1], ".if without .endif")
        return out

    def _definition(self, word: str, rest: str, body: str, ln: _Line) -> bool:
        """A symbol (``.equ`` / ``.set`` / ``.equiv``, ``NAME = EXPR``) or register alias (``.req``) defined by the
        line; False when the line defines neither."""
        if word in (".equ", ".set", ".equiv"):
            self._define_symbol(rest, ln)
            return True
        if "=" in body and not body.startswith((".", "{")) and _is_assignment(body):
            name, expr = body.split("=", 1)
            self._define_symbol(f"{name.strip()}, {expr.strip()}", ln)
            return True
        if word == ".req":
            self._define_alias(rest, ln)
            return True
        return False

    def _conditional(self, word: str, rest: str, ln: _Line, conds: list[list[bool]], opened: list[SourceRef]
                     ) -> None:
        """A conditional-assembly directive (``word`` in _CONDITIONALS): update the open conditions ``conds`` (per
        open .if: [this branch active, some branch taken]) and where each was opened."""
        active = all(c[0] for c in conds)
        if word in (".if", ".ifdef", ".ifndef"):
            opened.append(ln.where)
            if not active:
                conds.append([False, True])
                return
            if word == ".if":
                val = bool(self._eval(rest, ln.where, _col(ln.text, rest)))
            else:
                if not is_name(rest):
                    raise _err(ln.where, f"{word} takes one symbol name")
                val = (rest in self.symbols) == (word == ".ifdef")
            conds.append([val, val])
            return
        if word in (".elif", ".elseif"):
            if not conds:
                raise _err(ln.where, f"{word} without .if")
            c = conds[-1]
            outer = all(x[0] for x in conds[:-1])
            if c[1] or not outer:
                c[0] = False
            else:
                c[0] = bool(self._eval(rest, ln.where, _col(ln.text, rest)))
                c[1] = c[0]
            return
        if word == ".else":
            if not conds:
                raise _err(ln.where, ".else without .if")
            conds[-1][0] = not conds[-1][1]
            conds[-1][1] = True
            return
        if word == ".endif":
            if not conds:
                raise _err(ln.where, ".endif without .if")
            conds.pop()
            opened.pop()

    def _collect(self, lines: list[_Line], i: int, opener: _Line, end: str) -> tuple[list[_Line], int]:
        """The lines of a .macro / .rept / .irp / .for block from line i up to its matching end directive."""
        depth = 1
        body: list[_Line] = []
        starts = (".macro",) if end == ".endm" else _BLOCKS
        while i < len(lines):
            w = _strip_comment(lines[i].text).strip().split(None, 1)
            word = w[0].lower() if w else ""
            if word in starts:
                depth += 1
            elif word == end:
                depth -= 1
                if depth == 0:
                    return body, i + 1
            body.append(lines[i])
            i += 1
        raise _err(opener.where, f"{opener.text.strip().split()[0]} without {end}")

    def _define_symbol(self, rest: str, ln: _Line) -> None:
        args = split_args(rest)
        if len(args) != 2 or not is_name(args[0][0]):
            raise _err(ln.where, "a symbol definition is `.equ NAME, EXPRESSION` (or `NAME = EXPRESSION`)")
        name = args[0][0]
        if name.lower() in S.REGISTER_FILES or S.register_kind(name) is not None:
            raise _err(ln.where, f"{name!r} is a register name, not a symbol")
        self.symbols[name] = self._eval(args[1][0], ln.where, _col(ln.text, args[1][0]))

    def _define_alias(self, rest: str, ln: _Line) -> None:
        args = split_args(rest)
        kind = S.register_kind(args[1][0]) if len(args) == 2 else None
        if len(args) != 2 or not is_name(args[0][0]) or kind is None:
            raise _err(ln.where, "a register alias is `.req NAME, REGISTER` (v0..v31, wv0..wv3, vb0..vb15, pr0..pr15, "
                                 "u0..u3, a0..a15)")
        reg = S.parse_register(kind, args[1][0])
        if reg is None:
            raise _err(ln.where, f"{args[1][0]!r} is not a register")
        self.aliases[args[0][0]] = (kind, reg)

    def _define_macro(self, lines: list[_Line], i: int, ln: _Line, rest: str) -> None:
        parts = rest.replace(",", " ").split()
        if not parts or not is_name(parts[0]):
            raise _err(ln.where, "a macro is `.macro NAME [param[=default], ...]` ... `.endm`")
        name = parts[0].lower()
        if S.lookup(name)[0] is not None:
            raise _err(ln.where, f"macro {name!r} would hide the op of that name")
        params: list[tuple[str, str | None]] = []
        for p in parts[1:]:
            pname, _, default = p.partition("=")
            if not is_name(pname):
                raise _err(ln.where, f"macro parameter {pname!r} is not a name")
            params.append((pname, default if "=" in p else None))
        body, _ = self._collect(lines, i, ln, ".endm")
        self.macros[name] = _Macro(name, params, body, ln.where)

    def _substitute(self, body: list[_Line], values: Mapping[str, str], via: str) -> list[_Line]:
        keys = sorted(values, key=len, reverse=True)
        self.expansions += 1
        out = []
        for b in body:
            text = b.text.replace("\\@", str(self.expansions))
            for k in keys:
                text = _param_re(k).sub(_Literal(values[k]), text)
                text = text.replace("\\()", "")
            out.append(_Line(text, SourceRef(b.where.file, b.where.line, b.where.col, (via,) + b.where.via)))
        return out

    def _call_macro(self, m: _Macro, rest: str, ln: _Line, depth: int) -> list[_Line]:
        if depth >= MAX_MACRO_DEPTH:
            raise _err(ln.where, f"macros nest deeper than {MAX_MACRO_DEPTH} (a macro that calls itself?)")
        args = [a for a, _ in split_args(rest)]
        if len(args) > len(m.params):
            raise _err(ln.where, f"macro {m.name} takes {len(m.params)} arguments, got {len(args)}")
        values: dict[str, str] = {}
        for k, (pname, default) in enumerate(m.params):
            if k < len(args) and args[k] != "":
                values[pname] = args[k]
            elif default is not None:
                values[pname] = default
            else:
                raise _err(ln.where, f"macro {m.name}: argument {pname!r} missing")
        body = self._substitute(m.body, values, f"in macro {m.name} from {ln.where}")
        return self.expand(body, depth + 1)

    def _repeat(self, word: str, rest: str, block: list[_Line], ln: _Line, depth: int) -> list[_Line]:
        if depth >= MAX_MACRO_DEPTH:
            raise _err(ln.where, f"blocks nest deeper than {MAX_MACRO_DEPTH}")
        args = split_args(rest)
        out: list[_Line] = []
        if word == ".rept":
            if len(args) != 1:
                raise _err(ln.where, ".rept takes one count: `.rept COUNT` ... `.endr`")
            n = self._eval(args[0][0], ln.where, _col(ln.text, args[0][0]))
            if not 0 <= n <= MAX_EXPANDED_LINES:
                raise _err(ln.where, f".rept count {n} outside [0, {MAX_EXPANDED_LINES}]")
            for _ in range(n):
                out += self.expand(self._substitute(block, {}, f"in .rept from {ln.where}"), depth + 1)
            return out
        if not args or not is_name(args[0][0]):
            raise _err(ln.where, f"{word} takes a variable name first")
        var = args[0][0]
        if word == ".irp":
            items = [a for a, _ in args[1:]]
        else:
            if len(args) != 3:
                raise _err(ln.where, ".for takes `.for VAR, START, END` (START .. END - 1)")
            lo = self._eval(args[1][0], ln.where, _col(ln.text, args[1][0]))
            hi = self._eval(args[2][0], ln.where, _col(ln.text, args[2][0]))
            if hi - lo > MAX_EXPANDED_LINES:
                raise _err(ln.where, f".for runs more than {MAX_EXPANDED_LINES} times")
            items = [str(v) for v in range(lo, hi)]
        for item in items:
            out += self.expand(self._substitute(block, {var: item}, f"in {word} {var}={item} from {ln.where}"),
                               depth + 1)
        return out

    def _include(self, rest: str, ln: _Line, depth: int) -> list[_Line]:
        name = rest.strip()
        if len(name) < 2 or name[0] != '"' or name[-1] != '"':
            raise _err(ln.where, '.include takes a quoted file name: .include "file.inc"')
        rel = name[1:-1]
        base = Path(ln.where.file).parent if ln.where.file != self.name or self.base_dir is None else self.base_dir
        if self.base_dir is None:
            raise _err(ln.where, ".include needs a program read from a file (its folder is where includes are read)")
        if depth >= MAX_INCLUDE_DEPTH:
            raise _err(ln.where, f"includes nest deeper than {MAX_INCLUDE_DEPTH}")
        path = (base / rel) if not Path(rel).is_absolute() else Path(rel)
        try:
            with open_regular(path) as f:
                raw = f.read(MAX_SOURCE_BYTES + 1)
        except InvalidArgument as e:
            raise _err(ln.where, f".include {rel}: {e.rule}") from None
        except OSError as e:
            raise _err(ln.where, f".include {rel}: cannot read it ({e.strerror or type(e).__name__})") from None
        if len(raw) > MAX_SOURCE_BYTES:
            raise _err(ln.where, f".include {rel}: larger than {MAX_SOURCE_BYTES} bytes")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _err(ln.where, f".include {rel}: not UTF-8 text (byte {e.start})") from None
        return self.expand(self.read_lines(text, str(path), depth + 1), depth + 1)

    @staticmethod
    def _check_reading(mnemonic: str, reading: str, where: SourceRef) -> None:
        if mnemonic not in T.READINGS:
            raise _err(where, f"{mnemonic!r} has one reading; .reading applies to " + ", ".join(T.READINGS))
        if reading not in T.READINGS[mnemonic]:
            raise _err(where, f"{mnemonic} readings: " + ", ".join(T.READINGS[mnemonic]) + f"; not {reading!r}")

    # ================================================================== first pass
    def first_pass(self, lines: list[_Line]) -> None:
        for ln in lines:
            self._statement(ln)
        if self.open_bundle is not None:
            _, where, _, _ = self.open_bundle
            raise _err(where, "a bundle `{` without its closing `}`")

    def _statement(self, ln: _Line) -> None:
        text = _strip_comment(ln.text)
        if self.open_bundle is not None:
            acc, where, addr, col = self.open_bundle
            if "}" in text:
                close = text.index("}")
                self.open_bundle = None
                self._bundle(acc + " " + text[:close], where, addr, col)
                self._statement(_Line(" " * (close + 1) + text[close + 1:], ln.where))
            else:
                self.open_bundle = (acc + " " + text, where, addr, col)
            return
        pos, addr = self._objdump_prefix(text, ln.where)
        if addr is None:
            addr, self.pending_addr = self.pending_addr, None
        if addr is not None and not text[pos:].strip():
            self.pending_addr = addr                    # an address line alone: it belongs to the next bundle
            return
        while (m := _LABEL_RE.match(text, pos)) is not None:      # labels
            self._label(m.group(1), ln.where, m.start(1) + 1)
            pos = m.end()
        rest = text[pos:]
        body = rest.strip()
        if not body or body in ILLEGIBLE:
            return
        col = pos + len(rest) - len(rest.lstrip()) + 1
        if body.startswith("{"):
            inner = body[1:]
            if "}" in inner:
                close = inner.index("}")
                self._bundle(inner[:close], ln.where, addr, col + 1)
                tail = inner[close + 1:].strip()
                if tail:
                    raise _err(ln.where, f"text after the bundle's closing brace: {tail!r}")
            else:
                self.open_bundle = (inner, ln.where, addr, col + 1)
            return
        if body.startswith(".") and not body.startswith(("...", "…")):
            self._directive(body, ln, col)
            return
        for piece, pcol in _split_semicolons(body, col):
            if piece and piece not in ILLEGIBLE:
                one = self._instr(piece, ln.where, pcol)
                self._add_bundle([one], one.where, addr, braced=False)
                addr = None

    def _objdump_prefix(self, text: str, where: SourceRef) -> tuple[int, int | None]:
        """Skip a pasted objdump prefix: ``10051a9:`` / ``@0x010051a9:`` and the encoding bytes after it, or a
        ``0100511c <proc_4bit_mx_8>:`` function header (its name becomes a label); a leading ``...`` (elided
        code). Returns (the position after the prefix, the address it gave)."""
        m = _ADDR_RE.match(text)
        pos, addr = 0, None
        if m:
            tok = m.group(1)
            after = text[m.end():]
            digits = tok.lstrip("@")
            explicit = tok.startswith("@") or digits[:2].lower() == "0x" or digits[0].isdigit()
            bytes_follow = re.match(r"\s+[0-9a-fA-F]{2}(\s|[0-9a-fA-F]{2})", after) is not None
            if explicit or bytes_follow or m.group(2):
                addr = int(digits, 16)
                pos = m.end()
                if m.group(3):
                    name = m.group(3).strip()
                    if is_name(name):
                        self._label(name, where, m.start(3) + 1)
                    return len(text), addr
                # the encoding: hex groups before the mnemonic
                while True:
                    t = re.match(r"\s+([0-9a-fA-F]+)(?=\s)", text[pos:])
                    if not t or len(t.group(1)) % 2 or S.lookup(t.group(1))[0] is not None:
                        break
                    nxt = text[pos + t.end():].strip()
                    if not nxt:
                        break
                    pos += t.end()
        e = re.match(r"\s*(\.\.\.|…)\s+(?=\S)", text[pos:])
        if e and not text[pos + e.end():].startswith("."):
            pos += e.end()
        return pos, addr

    def _label(self, name: str, where: SourceRef, col: int) -> None:
        if name in self.labels:
            raise _err(where, f"label {name!r} defined twice (first at {self.label_where[name]})", col)
        if name.lower() in self.macros or S.lookup(name)[0] is not None or S.register_kind(name) is not None:
            raise _err(where, f"label {name!r} is the name of an op, macro or register", col)
        if self.section == "data":
            self.labels[name] = ("data", len(self.data))
        else:
            self.labels[name] = ("text", len(self.bundles))
            self.pending_labels.append(name)
        self.label_where[name] = where

    def _directive(self, body: str, ln: _Line, col: int) -> None:
        word, _, rest = body.partition(" ")
        word = word.lower().rstrip()
        if "\t" in word:
            word, _, more = word.partition("\t")
            rest = more + " " + rest
        rest = rest.strip()
        where = SourceRef(ln.where.file, ln.where.line, col, ln.where.via)
        if word in (".text",):
            self.section = "text"
        elif word in (".data", ".rodata"):
            self.section = "data"
        elif word == ".section":
            sec = rest.split(",")[0].strip()
            self.section = "text" if sec.startswith(".text") else "data"
        elif word in _DATA_WIDTH:
            self._data(word, rest, ln, where)
        elif word in (".space", ".skip", ".zero"):
            self._space(word, rest, ln, where)
        elif word in (".align", ".balign", ".p2align"):
            self._align(word, rest, ln, where)
        elif word == ".bundle":
            tag = self._eval(rest, ln.where, _col(ln.text, rest))
            if not 0 <= tag < MAX_BUNDLES:
                raise _err(where, f".bundle {tag}: a bundle tag is in [0, {MAX_BUNDLES - 1}] (65535 = unknown)")
            self.next_tag = tag
        elif word == ".entry":
            if not is_name(rest):
                raise _err(where, ".entry takes a label: .entry LABEL")
            self.entry = (rest, where)
        elif word == ".reading":
            self._reading(rest, where)
        elif word in _DIRECTIVES_IGNORED:
            pass
        else:
            known = [".text", ".data", ".byte", ".half", ".word", ".space", ".align", ".bundle", ".entry", ".reading",
                     ".equ", ".set", ".req", ".if", ".macro", ".rept", ".irp", ".for", ".include", ".error"]
            near = difflib.get_close_matches(word, known, 2)
            hint = f" (did you mean {' or '.join(near)}?)" if near else " (docs/asm.md §2.5 lists the directives)"
            raise _err(where, f"unknown directive {word}{hint}")

    def _space(self, word: str, rest: str, ln: _Line, where: SourceRef) -> None:
        """``.space N[, FILL]`` (``.skip``, ``.zero``): N fill bytes in the data section."""
        self._need_data(word, where)
        args = split_args(rest)
        if not 1 <= len(args) <= 2:
            raise _err(where, f"{word} takes a byte count and an optional fill byte")
        n = self._eval(args[0][0], ln.where, _col(ln.text, args[0][0]))
        fill = self._eval(args[1][0], ln.where, _col(ln.text, args[1][0])) if len(args) == 2 else 0
        if not 0 <= n <= MAX_DATA_BYTES or not 0 <= fill <= 255:
            raise _err(where, f"{word} {n}, {fill}: the count must be in [0, {MAX_DATA_BYTES}], the fill a byte")
        self._grow(n, where)
        self.data += bytes([fill]) * n

    def _align(self, word: str, rest: str, ln: _Line, where: SourceRef) -> None:
        """``.align N`` / ``.balign N`` (bytes) / ``.p2align N`` (a power): pad the data section to it."""
        self._need_data(word, where, allow_text=True)
        n = self._eval(rest, ln.where, _col(ln.text, rest))
        size = 1 << n if word == ".p2align" else n
        if word != ".p2align" and (n <= 0 or n & (n - 1)) or size > 4096:
            raise _err(where, f"{word} {n}: the alignment must be a power of two up to 4096 bytes")
        if self.section == "data":
            pad = -len(self.data) % size
            self._grow(pad, where)
            self.data += bytes(pad)

    def _reading(self, rest: str, where: SourceRef) -> None:
        """``.reading MNEMONIC, READING``: which reading of a two-reading mnemonic the program means (docs/asm.md
        §5); a reading given to the assembler (``readings=``) wins."""
        names = [a for a, _ in split_args(rest)]
        if len(names) != 2:
            raise _err(where, ".reading takes a mnemonic and a reading: .reading sel2nx8i_s4, select")
        mnemonic = names[0].lower().removeprefix("ivp_")
        self._check_reading(mnemonic, names[1], where)
        if mnemonic not in self.override_readings:
            self.readings[mnemonic] = names[1]

    def _need_data(self, word: str, where: SourceRef, allow_text: bool = False) -> None:
        if self.section != "data" and not allow_text:
            raise _err(where, f"{word} in the text section: constant data goes under .data (raw bytes in the text "
                              "are a desynced span of a disassembly, which q7emu cannot run)")

    def _grow(self, n: int, where: SourceRef) -> None:
        if len(self.data) + n > MAX_DATA_BYTES:
            raise _err(where, f"the data section would pass {MAX_DATA_BYTES} bytes")

    def _data(self, word: str, rest: str, ln: _Line, where: SourceRef) -> None:
        self._need_data(word, where)
        width = _DATA_WIDTH[word]
        args = split_args(rest)
        if not args:
            raise _err(where, f"{word} takes one or more values")
        self._grow(width * len(args), where)
        for text, c in args:
            self.data_exprs.append((len(self.data), width, text, ln.where, _col(ln.text, text) if text else c))
            self.data += bytes(width)

    def _instr(self, text: str, where: SourceRef, col: int) -> _PendingInstr:
        mnemonic, _, rest = text.partition(" ")
        if "\t" in mnemonic:
            mnemonic, _, more = mnemonic.partition("\t")
            rest = more + " " + rest
        op, suffix = S.lookup(mnemonic)
        where = SourceRef(where.file, where.line, col, where.via)
        if op is None:
            base = mnemonic.lower().removeprefix("ivp_")
            near = difflib.get_close_matches(base, S.known_mnemonics(), 3)
            hint = (f" (did you mean {', '.join(near)}?)" if near
                    else " (q7emu ops lists the IVP ops, docs/asm.md §3 the scalar ones)")
            raise _err(where, f"unknown mnemonic {mnemonic!r}{hint}")
        name, slot = op.mnemonic + suffix, op.slot
        if op.mnemonic in T.READINGS:
            runs, slot_override = T.READINGS[op.mnemonic][self.readings[op.mnemonic]]
            op = T.op(runs)
            slot = slot_override or op.slot
        args_col = col + len(mnemonic) + (len(rest) - len(rest.lstrip()) if rest else 0) + 1
        args = [(a, args_col + c) for a, c in split_args(rest.strip())] if rest.strip() else []
        fs = S.fields(op)
        for k, (a, c) in enumerate(args):
            if a in ILLEGIBLE:
                f = fs[k] if k < len(fs) else None
                what = f"{f.name}: {f.describe()}" if f else "an operand the op does not take"
                raise _err(where, f"operand {k + 1} of {mnemonic} is illegible ({a!r}): fill in {what}", c)
        if not args and fs:
            raise _err(where, f"the operands of {mnemonic} are missing (illegible in the disassembly?): fill in "
                              f"{', '.join(f.name for f in fs)} ({S.syntax_line(op)})")
        if len(args) != len(fs):
            raise _err(where, f"{mnemonic} takes {len(fs)} operand{'s' * (len(fs) != 1)} "
                              f"({S.syntax_line(op)}), got {len(args)}")
        return _PendingInstr(op, name, slot, args, where)

    def _bundle(self, inner: str, where: SourceRef, addr: int | None, col: int) -> None:
        pieces = [(p, c) for p, c in _split_semicolons(inner, col) if p]
        if not pieces:
            raise _err(where, "an empty bundle `{ }`")
        instrs = []
        for p, c in pieces:
            if p in ILLEGIBLE:
                raise _err(where, f"an illegible op ({p!r}) in the bundle: fill it in or remove it", c)
            instrs.append(self._instr(p, where, c))
        self._add_bundle(instrs, SourceRef(where.file, where.line, col - 1, where.via), addr, braced=True)

    def _add_bundle(self, instrs: list[_PendingInstr], where: SourceRef, addr: int | None, braced: bool) -> None:
        if self.section != "text":
            raise _err(where, "an instruction in the data section (write .text before the code)")
        if len(self.bundles) >= MAX_BUNDLES - 1:
            raise _err(where, f"more than {MAX_BUNDLES - 1} bundles in one program")
        self.bundles.append(_PendingBundle(instrs, self.next_tag, where, braced, addr, self.pending_labels))
        self.pending_labels = []
        self.next_tag = min(self.next_tag + 1, MAX_BUNDLES)   # past 65534: 65535, a trace's "unknown" (B?)

    # ================================================================== second pass
    def second_pass(self) -> Program:
        addresses = {b.address: i for i, b in enumerate(self.bundles) if b.address is not None}
        for off, width, text, where, col in self.data_exprs:
            v = self._eval(text, where, col - 1 if col else 0, labels=True)
            lo, hi = -(1 << (8 * width - 1)), (1 << (8 * width)) - 1
            if not lo <= v <= hi:
                raise _err(where, f"data value {v} does not fit {width} byte{'s' * (width > 1)} ([{lo}, {hi}])", col)
            self.data[off:off + width] = (v & hi).to_bytes(width, "little")
        bundles = []
        for i, pb in enumerate(self.bundles):
            instrs = tuple(self._resolve(pi, addresses) for pi in pb.instrs)
            self._check_bundle(instrs, pb, i)
            bundles.append(Bundle(instrs, pb.tag, pb.where, pb.braced, pb.address, tuple(pb.labels)))
        entry = 0
        if self.entry is not None:
            name, where = self.entry
            got = self.labels.get(name)
            if got is None or got[0] != "text":
                raise _err(where, f".entry {name}: no such label in the text section")
            entry = got[1]
        if not bundles:
            raise AsmError(self.name, 0, 0, "the program has no instructions")
        if entry >= len(bundles):
            raise _err(self.entry[1] if self.entry else SourceRef(self.name, 0), ".entry names the end of the program")
        used = {m: r for m, r in self.readings.items() if any(ins.name == m for b in bundles for ins in b.instrs)}
        readings = {m: r for m, r in used.items() if r != next(iter(T.READINGS[m]))}
        equates = {k: v for k, v in self.symbols.items() if isinstance(v, int) and not isinstance(v, bool)}
        return Program(tuple(bundles), bytes(self.data), dict(self.labels), entry, readings, self.name, equates)

    def _resolve(self, pi: _PendingInstr, addresses: Mapping[int, int]) -> Instr:
        values: list[int | str] = []
        for k, (f, (text, col)) in enumerate(zip(S.fields(pi.op), pi.args)):
            where = SourceRef(pi.where.file, pi.where.line, col, pi.where.via)
            what = f"operand {k + 1} ({f.name}) of {pi.name}"
            if f.is_register:
                values.append(self._register(f, text, what, where))
            elif f.kind == S.LABEL:
                values.append(self._target(text, what, where, addresses))
            else:
                if S.register_kind(text) is not None and text not in self.symbols:
                    raise _err(where, f"{what} must be {f.describe()}, not the register {text}")
                v = self._eval(text, where, col - 1, labels=True)
                bad = S.check_immediate(f, v)
                if bad:
                    raise _err(where, f"{what}: {bad}")
                values.append(v)
        return Instr(pi.op, tuple(values), pi.where, pi.name, pi.slot)

    def _register(self, f: S.Field, text: str, what: str, where: SourceRef) -> int:
        alias = self.aliases.get(text)
        if alias is not None:
            if alias[0] != f.kind:
                raise _err(where, f"{what} must be {f.describe()}; {text} is {alias[0]}{alias[1]}")
            return alias[1]
        m = _REG_EXPR_RE.fullmatch(text)
        if m is not None and m.group(1).lower() == f.kind:
            n = self._eval(m.group(2), where, where.col + m.start(2))
            count = S.REGISTER_FILES[f.kind][1]
            if not 0 <= n < count:
                raise _err(where, f"{what}: {text} is register {f.kind}{n}, outside {f.kind}0..{f.kind}{count - 1}")
            return n
        reg = S.parse_register(f.kind, text)
        if reg is None:
            got = S.register_kind(text)
            shown = f"the {S.REGISTER_FILES[got][0]} register {text}" if got and got != f.kind else repr(text)
            raise _err(where, f"{what} must be {f.describe()}, not {shown}")
        return reg

    def _target(self, text: str, what: str, where: SourceRef, addresses: Mapping[int, int]) -> str:
        name = text.split("<")[0].strip() if "<" in text else text
        got = self.labels.get(name)
        if got is not None:
            if got[0] != "text":
                raise _err(where, f"{what}: {name!r} labels data, not code")
            return name
        if is_name(name) and not (_HEX_RE.fullmatch(name) and addresses):
            raise _err(where, f"{what}: label {name!r} is not defined")
        try:
            addr = int(name, 16) if not name.lower().startswith("0x") else int(name, 0)
        except ValueError:
            raise _err(where, f"{what} must be a label (or the objdump address of a bundle), not {text!r}") from None
        if addr not in addresses:
            raise _err(where, f"{what}: no bundle of this program has the objdump address {addr:#x}")
        target = addresses[addr]
        label = f".L{addr:x}"
        self.labels.setdefault(label, ("text", target))
        return label

    def _check_bundle(self, instrs: tuple[Instr, ...], pb: _PendingBundle, index: int) -> None:
        where = pb.where
        if T.assign_slot_classes(i.slot for i in instrs) is None:
            names = ", ".join(f"{i.name} ({i.slot})" for i in instrs)
            raise _err(where, f"these ops cannot issue in one FLIX bundle: {names} (slots s0 LdSt, s1 Ld, s2 Mul, "
                              "s3 / s4 ALU; docs/firmware.md §6.3)")
        seen: dict[tuple[str, int], str] = {}
        for ins in instrs:
            writes = ins.registers()[1]
            twice = next((r for r in writes if writes.count(r) > 1), None)
            if twice is not None:
                raise _err(ins.where, f"{ins.name} writes {twice[0]}{twice[1]} twice: its outputs must be different "
                                      "registers")
            for reg in writes:
                if reg in seen:
                    raise _err(where, f"{reg[0]}{reg[1]} is written twice in one bundle ({seen[reg]} and {ins.name}): "
                                      "VLIW writes land together (docs/asm.md §4.1)")
                seen[reg] = ins.name
        control = [i for i in instrs if i.is_control]
        if len(control) > 1:
            raise _err(where, "two control transfers in one bundle (" + ", ".join(i.name for i in control) + ")")
        for ins in control:
            if ins.op.family == "loop":
                target = self.labels[str(ins.values[-1])][1]
                if target <= index + 1:
                    raise _err(where, f"{ins.name}: the loop's end label must come after the loop's first body bundle "
                                      f"(the body is the bundles after the loop up to the label)")


_PARAM_RE: dict[str, re.Pattern[str]] = {}


def _param_re(name: str) -> re.Pattern[str]:
    """The pattern of ``\\name`` in a macro or block body (not followed by more of a name)."""
    got = _PARAM_RE.get(name)
    if got is None:
        got = _PARAM_RE.setdefault(name, re.compile(r"\\" + re.escape(name) + r"(?![A-Za-z0-9_])"))
    return got


class _Literal:
    """A re.sub replacement that inserts its text as it is (no backslash escapes)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self, _m: re.Match[str]) -> str:
        return self.text


def _col(line: str, fragment: str) -> int:
    """The 1-based column of ``fragment`` in ``line`` (0 when it cannot be found)."""
    k = line.find(fragment) if fragment else -1
    return k + 1 if k >= 0 else 0


def _is_assignment(body: str) -> bool:
    left, _, right = body.partition("=")
    return is_name(left.strip()) and not right.startswith("=") and not left.rstrip().endswith(("!", "<", ">", "="))


def _split_semicolons(text: str, col: int) -> list[tuple[str, int]]:
    """Split at ``;``: (piece stripped, its 1-based column)."""
    out, start = [], 0
    for i, c in enumerate(text + ";"):
        if c == ";":
            piece = text[start:i]
            out.append((piece.strip(), col + start + len(piece) - len(piece.lstrip())))
            start = i + 1
    return out


def assemble(text: str, *, name: str = "<program>", path: str | Path | None = None,
             symbols: Mapping[str, Value] | None = None, readings: Mapping[str, str] | None = None) -> Program:
    """Assemble program text (docs/asm.md) into a :class:`~q7emu.asm.program.Program`.

    text: the program (an objdump paste included); name: how errors name it (``path`` when given); path: the file it
    came from, whose folder ``.include`` reads from (without one, ``.include`` is refused); symbols: predefined
    symbols, ints or tuples of ints (a configuration: ``{"NAN_GATE": 1, "CB_SIG": (...)}``); readings: the reading
    of a mnemonic the facts read two ways, overriding the program's ``.reading`` (``{"sel2nx8i_s4": "select"}``).
    Raises :class:`q7emu.errors.AsmError` (``file:line:col: rule``) on the first error."""
    if not isinstance(text, str):
        raise AsmError(name, 0, 0, f"program text must be a str, not {type(text).__name__}")
    label = str(path) if path is not None else name
    a = Assembler(label, symbols, readings, Path(path).parent if path is not None else None)
    lines = a.expand(a.read_lines(text, label))
    a.first_pass(lines)
    return a.second_pass()


def assemble_file(path: str | Path, *, symbols: Mapping[str, Value] | None = None,
                  readings: Mapping[str, str] | None = None) -> Program:
    """Assemble the program in file ``path`` (UTF-8, at most MAX_SOURCE_BYTES); see :func:`assemble`."""
    p = Path(path)
    try:
        with open_regular(p) as f:
            raw = f.read(MAX_SOURCE_BYTES + 1)
    except InvalidArgument as e:
        raise AsmError(str(p), 0, 0, f"cannot read the program: {e.rule}") from None
    except OSError as e:
        raise AsmError(str(p), 0, 0, f"cannot read the program ({e.strerror or type(e).__name__})") from None
    if len(raw) > MAX_SOURCE_BYTES:
        raise AsmError(str(p), 0, 0, f"the program is larger than {MAX_SOURCE_BYTES} bytes (docs/asm.md §2.8)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AsmError(str(p), 0, 0, f"the program is not UTF-8 text (byte {e.start})") from None
    return assemble(text, path=p, symbols=symbols, readings=readings)
