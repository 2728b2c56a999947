"""Integer expressions of the assembly language (docs/asm.md §2.3): immediates, data and directive arguments.

Python integers (no width: a value is checked against the field or directive that takes it), C operators and
precedence, ``min`` / ``max`` / ``abs`` / ``hi16`` / ``lo16``, symbols and array symbols (``X[3]``, a configuration
table). Division and
remainder truncate toward zero, as in C. An error names the column in the expression where it was found.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

Value = int | tuple[int, ...]
_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F_]+|0[bB][01_]+|[0-9][0-9_]*)|([A-Za-z_.$][A-Za-z0-9_.$]*)|"
                    r"(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()<>&|^~!?:,\[\]]))")
#: binary operators: precedence (higher binds tighter), as in C
_BINARY = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7, ">=": 7,
           "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}
_FUNCS: dict[str, Callable[..., int]] = {"min": min, "max": max, "abs": abs,
                                         "hi16": lambda x: (x >> 16) & 0xFFFF, "lo16": lambda x: x & 0xFFFF}
_ONE_ARG = ("abs", "hi16", "lo16")
#: the longest expression text evaluated (a bound on work for hostile input)
MAX_EXPR_CHARS = 4096
#: the deepest nesting of parentheses and unary operators
MAX_DEPTH = 64


class ExprError(ValueError):
    """A malformed or undefined expression: ``col`` is the 0-based column in the expression text."""

    def __init__(self, message: str, col: int = 0) -> None:
        super().__init__(message)
        self.col = col


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, column) of each token: kind is 'num', 'name' or 'op'."""
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:
            col = pos + len(text[pos:]) - len(text[pos:].lstrip())
            raise ExprError(f"unexpected character {text[col]!r} in expression", col)
        kind = "num" if m.group(1) else "name" if m.group(2) else "op"
        tok = m.group(1) or m.group(2) or m.group(3)
        out.append((kind, tok, m.start(m.lastindex or 0)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str, symbols: Mapping[str, Value],
                 lookup: Callable[[str], Value | None] | None) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.symbols = symbols
        self.lookup = lookup
        self.end = len(text)
        self.depth = 0

    def peek(self) -> tuple[str, str, int]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "", self.end)

    def take(self, want: str | None = None) -> tuple[str, str, int]:
        tok = self.peek()
        if want is not None and tok[1] != want:
            found = f"{tok[1]!r}" if tok[0] != "end" else "the end of the expression"
            raise ExprError(f"expected {want!r}, found {found}", tok[2])
        if tok[0] == "end":
            raise ExprError("the expression ends too early", tok[2])
        self.i += 1
        return tok

    def expression(self, min_prec: int = 0) -> int:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError(f"the expression nests deeper than {MAX_DEPTH}", self.peek()[2])
        left = self.unary()
        while True:
            kind, op, col = self.peek()
            if kind == "op" and op == "?" and min_prec == 0:
                self.take()
                yes = self.expression(0)
                self.take(":")
                no = self.expression(0)
                left = yes if left else no
                continue
            prec = _BINARY.get(op) if kind == "op" else None
            if prec is None or prec < min_prec:
                break
            self.take()
            right = self.expression(prec + 1)
            left = self.binary(op, left, right, col)
        self.depth -= 1
        return left

    @staticmethod
    def binary(op: str, a: int, b: int, col: int) -> int:
        if op in ("/", "%"):
            if b == 0:
                raise ExprError("division by zero in expression", col)
            q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
            return q if op == "/" else a - b * q
        if op in ("<<", ">>"):
            if b < 0 or b > 4096:
                raise ExprError(f"shift count {b} out of range [0, 4096]", col)
            return a << b if op == "<<" else a >> b
        table: dict[str, Callable[[int, int], int]] = {
            "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
            "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y,
            "==": lambda x, y: int(x == y), "!=": lambda x, y: int(x != y), "<": lambda x, y: int(x < y),
            "<=": lambda x, y: int(x <= y), ">": lambda x, y: int(x > y), ">=": lambda x, y: int(x >= y),
            "&&": lambda x, y: int(bool(x) and bool(y)), "||": lambda x, y: int(bool(x) or bool(y))}
        r = table[op](a, b)
        if r.bit_length() > 4160:
            raise ExprError("the value grows past 4160 bits", col)
        return r

    def unary(self) -> int:
        kind, tok, col = self.peek()
        if kind == "op" and tok in ("-", "+", "~", "!"):
            self.take()
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise ExprError(f"the expression nests deeper than {MAX_DEPTH}", col)
            v = self.unary()
            self.depth -= 1
            return {"-": -v, "+": v, "~": ~v, "!": int(not v)}[tok]
        return self.primary()

    def primary(self) -> int:
        kind, tok, col = self.take()
        if kind == "num":
            return int(tok.replace("_", ""), 0)
        if kind == "op" and tok == "(":
            v = self.expression(0)
            self.take(")")
            return v
        if kind == "name":
            if tok in _FUNCS and self.peek()[1] == "(":
                self.take("(")
                args = [self.expression(0)]
                while self.peek()[1] == ",":
                    self.take()
                    args.append(self.expression(0))
                self.take(")")
                one = tok in _ONE_ARG
                if one and len(args) != 1 or not one and len(args) < 2:
                    raise ExprError(f"{tok}() takes {'one argument' if one else 'two or more arguments'}", col)
                return int(_FUNCS[tok](*args))
            value = self.symbols.get(tok)
            if value is None and self.lookup is not None:
                value = self.lookup(tok)
            if value is None:
                hint = ("" if not tok.isupper() else " (a configuration symbol? --define NAME=VALUE sets one; "
                        "q7emu listing KERNEL --asm prints a kernel's program with its configuration filled in)")
                raise ExprError(f"undefined symbol {tok!r}{hint}", col)
            if self.peek()[1] == "[":
                self.take("[")
                idx = self.expression(0)
                self.take("]")
                if not isinstance(value, tuple):
                    raise ExprError(f"symbol {tok!r} is a number, not a table", col)
                if not 0 <= idx < len(value):
                    raise ExprError(f"index {idx} outside table {tok!r} (0..{len(value) - 1})", col)
                return value[idx]
            if isinstance(value, tuple):
                raise ExprError(f"symbol {tok!r} is a table of {len(value)}: index it, {tok}[i]", col)
            return value
        raise ExprError(f"unexpected {tok!r} in expression", col)


def evaluate(text: str, symbols: Mapping[str, Value], lookup: Callable[[str], Value | None] | None = None) -> int:
    """The integer value of expression ``text``; ``symbols`` (and ``lookup``, asked for a name ``symbols`` does
    not hold: a label's address) give its names. Raises :class:`ExprError` (with the column) when it is empty,
    malformed or names an undefined symbol."""
    if len(text) > MAX_EXPR_CHARS:
        raise ExprError(f"expression longer than {MAX_EXPR_CHARS} characters")
    p = _Parser(text, symbols, lookup)
    if not p.toks:
        raise ExprError("empty expression")
    v = p.expression(0)
    kind, tok, col = p.peek()
    if kind != "end":
        raise ExprError(f"unexpected {tok!r} after the expression", col)
    return v


def split_args(text: str) -> list[tuple[str, int]]:
    """Split a comma-separated argument list at its top-level commas: (argument text stripped, its column)."""
    out: list[tuple[str, int]] = []
    depth, start = 0, 0
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(_strip_col(text[start:i], start))
            start = i + 1
    out.append(_strip_col(text[start:], start))
    if len(out) == 1 and out[0][0] == "":
        return []
    return out


def _strip_col(s: str, col: int) -> tuple[str, int]:
    return s.strip(), col + len(s) - len(s.lstrip())


def is_name(text: str) -> bool:
    """A symbol or label name: a letter, ``_``, ``.`` or ``$`` first, then letters, digits and those."""
    return re.fullmatch(r"[A-Za-z_.$][A-Za-z0-9_.$]*", text) is not None


def as_values(seq: Sequence[int]) -> tuple[int, ...]:
    """A configuration table as an array symbol's value."""
    return tuple(int(x) for x in seq)
