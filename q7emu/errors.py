"""Exception types of q7emu.

Every rejection names the field, the offending value and the rule it breaks, in one line.
All of them derive from :class:`Q7Error`; argument errors are also ``ValueError`` so that
ordinary Python callers can catch them the usual way.
"""
from __future__ import annotations

import re
import threading


class Q7Error(Exception):
    """Base class of every error q7emu raises on purpose."""


def one_line(text: str) -> str:
    """``text`` with every unprintable character (a newline, a tab, an escape) written as its Python escape, so a
    message built from user-supplied names (a file name, an archive member) stays one line."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


#: a lone surrogate: a byte of a name that is not UTF-8 (U+DC80..U+DCFF, as os.fsdecode holds it) or any other
#: (a JSON text may carry "\ud800")
_SURROGATE = re.compile("[\ud800-\udfff]")


def shown_name(text: str) -> str:
    """``text`` as every report writes it (docs/cli.md §1): each byte of a name that is not UTF-8 (held as a
    surrogate U+DC80..U+DCFF, as ``os.fsdecode`` gives it) as a backslash escape ``\\xNN`` (``cases-\\xff``), any
    other lone surrogate (from a JSON ``"\\ud800"``) as ``\\uNNNN``, so the text can always be written as UTF-8."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}" if "\udc80" <= m.group() <= "\udcff"
                          else f"\\u{ord(m.group()):04x}", text)


def shown_names(obj: object) -> object:
    """A JSON value with every string (keys too) through :func:`shown_name` (the same object when none needs it)."""
    if isinstance(obj, str):
        return shown_name(obj)
    if isinstance(obj, dict):
        return {shown_name(k) if isinstance(k, str) else k: shown_names(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [shown_names(v) for v in obj]
    return obj


def first_line(e: BaseException) -> str:
    """The first line of an exception's message, or its type name when the message is empty: how a one-line
    report names an error."""
    text = str(e)
    return text.splitlines()[0] if text else type(e).__name__


#: the packages of q7emu's optional extras a command needs (pyproject.toml [project.optional-dependencies]; a test
#: checks they agree)
EXTRAS = {"plot": ("matplotlib>=3.7",), "dask": ("distributed>=2024.1",)}


def install_hint(extra: str) -> str:
    """How to add the optional ``extra`` to an installed q7emu, as a message's tail: its packages by name (q7emu
    itself is installed from a checkout or a wheel, not from a package index, so its name with the extra would not
    install)."""
    return f"pip install {' '.join(repr(p) for p in EXTRAS[extra])} (the {extra} extra)"


class InvalidArgument(Q7Error, ValueError):
    """An API argument (array shape, dtype, knob value, format code) breaks a rule.

    ``field`` names the argument, ``value`` is what was given and ``rule`` the rule it breaks.
    """

    def __init__(self, field: str, value: object, rule: str) -> None:
        self.field = field
        self.value = value
        self.rule = rule
        super().__init__(f"{one_line(str(field))}={value!r}: {one_line(str(rule))}")


class ValidityError(Q7Error):
    """An instruction record fails one clause of the firmware's validity predicate.

    ``clause`` is the clause id (e.g. ``"1.3.4"`` for docs/firmware.md §1.3 clause 4).
    """

    def __init__(self, field: str, value: object, rule: str, clause: str = "") -> None:
        self.field = field
        self.value = value
        self.rule = rule
        self.clause = clause
        where = f" [docs/firmware.md §{clause}]" if clause else ""
        super().__init__(f"{one_line(str(field))}={value!r}: {one_line(str(rule))}{where}")


class DispatchError(Q7Error):
    """The kernel_info table of the chosen generation has no handler for the record.

    The message uses the firmware's own words (``UNKNOWN OPCODE=0x..``).
    """


class UnknownOpcode(Q7Error):
    """A record of an opcode that q7emu has no opcode spec for (q7emu.isa.opcodes), where one is needed: the message
    names the opcode and what is missing."""


class InternalError(Q7Error):
    """q7emu's own inconsistency: a result of the wrong shape, a kernel the registry cannot find, a listing whose
    runs do not repeat. Never bad input: it is a q7emu bug, and the CLI exits 3 for it (docs/cli.md §1); a replay
    reports the case as an internal error, not as a mismatch."""


class CaseError(Q7Error):
    """A replay case file is malformed or inconsistent."""


class AsmError(Q7Error, ValueError):
    """A program's text breaks a rule of the assembly language (docs/asm.md): ``file:line:col: rule``.

    ``file``, ``line`` (1-based; 0 = the whole file) and ``col`` (1-based; 0 = the whole line) locate it; ``rule``
    says what is wrong and, where it can, what to write instead."""

    def __init__(self, file: str, line: int, col: int, rule: str) -> None:
        self.file = file
        self.line = line
        self.col = col
        self.rule = rule
        where = one_line(file) + (f":{line}" if line else "") + (f":{col}" if line and col else "")
        super().__init__(f"{where}: {one_line(rule)}")


class ProgramError(Q7Error):
    """A program stopped on an error while it ran (docs/asm.md §4.5): an address outside every memory region, a
    misaligned access, an integer divide by zero, the step budget spent. Names the line of the op and the partition
    (bad input, like :class:`AsmError`: the CLI exits 2)."""

    def __init__(self, where: str, rule: str) -> None:
        self.where = where
        self.rule = rule
        super().__init__(f"{one_line(where)}: {one_line(rule)}")


class ConcurrentUse(Q7Error):
    """A stateful object that takes one ordered stream (a profile's blocks, an encoder's records, a reader's
    lines) was fed by a second thread: refused, in one line naming the object and the thread it belongs to
    (docs/limits.md §4)."""


class OwnerThread:
    """Binds a stream-ordered object to the first thread that feeds it: :meth:`check` from any other thread raises
    :class:`ConcurrentUse` (deterministically, whether or not the two overlap: the stream's order would depend on
    the threads' timing). ``what`` names the object, ``hint`` says what to do instead."""

    def __init__(self, what: str, hint: str = "give each thread its own") -> None:
        self.what = what
        self.hint = hint
        self._owner: threading.Thread | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
        """Claim the object for this thread, or raise ConcurrentUse when another thread has it."""
        me = threading.current_thread()
        owner = self._owner
        if owner is None:
            with self._lock:
                if self._owner is None:
                    self._owner = me
                owner = self._owner
        if owner is not me:
            raise ConcurrentUse(f"{self.what} is fed by thread {owner.name!r}, not by {me.name!r}: it takes one "
                                f"ordered stream; {self.hint} (docs/limits.md §4)")
