"""What docs/firmware.md places in each firmware path, and the provenance of one op of a kernel listing.

* :data:`PATH_FACTS`: the IVP mnemonics docs/firmware.md places in each firmware path -- docs/firmware.md §2.4 for the
  three
  TensorDequantize (0x7b) paths, §3.6 for the QuantizeMX (0xE3) body -- with the bundle address docs/firmware.md
  gives, if any. These are transcribed from docs/firmware.md once, here; ``firmware_tests/analysis/test_provenance.py``
  checks every mnemonic and address against docs/firmware.md's text when docs/firmware.md is available. Keyed by kernel
  name (:class:`q7emu.model.kernels.KernelId`); a kernel docs/firmware.md says nothing about has no entry.
* :func:`classify`: the provenance of one op of a q7emu kernel listing:

  - ``firmware``: docs/firmware.md names this exact mnemonic in this path;
  - ``firmware~`` (a *form* match): docs/firmware.md names the same multiply in the other accumulate form, e.g.
    docs/firmware.md's ``ivp_mulus4tan16xr16`` @0x010051a9 (``a``: accumulate into the wvec) where q7emu issues
    ``mulus4tn16xr16`` (overwrite). The accumulate letter is the only difference q7emu treats as the
    same op: mul/mula, 4t/4ta, q/qa, p/pa. Slot suffixes (``_s4``), predicated ``t`` forms, signedness
    letters and lane widths are different ops and never match;
  - ``q7emu``: docs/firmware.md does not place the op in this path; it is part of q7emu's reconstruction.

The listings (:mod:`q7emu.analysis.listing`) classify every op with this module; the report tables of
:mod:`q7emu.analysis.provenance` (``q7emu ops``, the README section) read the listings and re-export these
names, so the import graph runs path_facts <- listing <- provenance, without a cycle.
"""
from __future__ import annotations

import re
from typing import Any

from q7emu._dataclass import dataclass
from q7emu.model.kernels import KernelId
from q7emu.primitives import optable

__all__ = ["FirmwareFact", "PATH_FACTS", "NON_MX_BLOCK", "accumulate_base", "OpProvenance", "classify",
           "seed_bundles", "SEED_OPERANDS", "seed_operands", "seed_bundle_writes", "seed_write_conflicts"]

# ---------------------------------------------------------------------- firmware facts per path
NON_MX_BLOCK = "inline non-MX paths in decode (0x4df0..0x511c)"


@dataclass(frozen=True)
class FirmwareFact:
    """One mnemonic docs/firmware.md places in a firmware path."""

    mnemonic: str                    # without the ivp_ prefix
    section: str                     # "§2.4" / "§3.6"
    addresses: tuple[str, ...] = ()  # bundle addresses docs/firmware.md gives for a clean bundle holding it
    count: int = 1                   # how many times docs/firmware.md lists it in the path (x2, x3)
    where: str = ""                  # the docs/firmware.md list it comes from

    def cite(self) -> str:
        """``ivp_<mnemonic> @<addresses> (docs/firmware.md <section>)``."""
        at = (" @" + ", @".join(self.addresses)) if self.addresses else ""
        return f"ivp_{self.mnemonic}{at} (docs/firmware.md {self.section})"


def _facts(section: str, where: str, rows: list[tuple[str, tuple[str, ...], int]]) -> tuple[FirmwareFact, ...]:
    """FirmwareFacts of one docs/firmware.md list from (mnemonic, addresses, count) rows."""
    return tuple(FirmwareFact(m, section, a, n, where) for m, a, n in rows)


#: docs/firmware.md §2.4 "Inline non-MX paths in decode": shared by proc_4bit_non_mx and proc_6bit_non_mx
_NON_MX = _facts("§2.4", NON_MX_BLOCK, [
    ("labvdcmprs2nx8_xp", ("0x01004dfc",), 1),
    ("sel2nx8i", ("0x01004fc8",), 2),
    ("dselnx16t", ("0x01004dfc",), 1),
    ("dseln_2x32t", (), 1),
    ("muluupan16xr16", ("0x01004fc8",), 2),
    ("mulsupn16xr16", (), 1),
    ("babssub2nx8", ("0x01004fc8",), 2),
    ("babssubunx16", (), 1),
    ("movpint16", (), 1),
    ("negnxf16t", (), 1),
    ("oltnxf16t", ("0x01004dfc",), 1),
])
#: docs/firmware.md §2.4 "MX path proc_4bit_mx_8"
_MX = _facts("§2.4", "MX path proc_4bit_mx_8", [
    ("sel2nx8i_s4", ("0x010051a9", "0x010052ee"), 2),
    ("l2a4nx8_ip", (), 1),
    ("dselnx16", ("0x010053c0",), 1),
    ("mulus4tan16xr16", ("0x010051a9",), 1),
    ("mul4tan16xr16", (), 1),
    ("dmulqa2n8xr8", ("0x010053c0",), 1),
    ("muln_2x32", ("0x010052ee",), 1),
    ("cvtg48n_2x32l", ("0x010051e1",), 1),
    ("bminnx16", ("0x010051e1",), 3),
    ("bminn_2x32", ("0x010051e1",), 3),
    ("bmin2nx8", ("0x010051a9",), 1),
    ("bmaxn_2x32", (), 1),
    ("bmaxun_2x32", (), 1),
    ("ultn_2xf32t", ("0x010052ee",), 1),
])
#: docs/firmware.md §3.6 "0xE3 device body" (MARIANA DVE PERF IRAM)
_QMX = _facts("§3.6", "0xE3 device body", [
    ("srln_2x32", ("0x79ec",), 1),
    ("bmaxn_2x32", (), 1),                 # step 1 "then the max-reduce": no address of its own
    ("dextrprn_2x32", ("0x22b5", "0x6c4b"), 2),
    ("mulus4tn16xr16", ("0x66a6",), 1),
    ("trunc16nxf16", ("0x66a6",), 1),
    ("baddnormnx16", ("0x66a6",), 1),
    ("muluspa2n8xr16", ("0x6c4b",), 1),
    ("bsubnormnx16", ("0x6c4b",), 1),
    ("cvtg48n_2x32h", ("0x216d",), 1),
    ("ueqn_2xf32t", ("0x216d",), 1),
    ("sel2nx8i_s4", ("0x216d",), 1),
])

#: kernel name -> the mnemonics docs/firmware.md places in its path (in docs/firmware.md's order of the paths)
PATH_FACTS: dict[str, tuple[FirmwareFact, ...]] = {
    KernelId.PROC_4BIT_NON_MX.kernel: _NON_MX,
    KernelId.PROC_6BIT_NON_MX.kernel: _NON_MX,
    KernelId.PROC_4BIT_MX_8.kernel: _MX,
    KernelId.QUANTIZE_MX.kernel: _QMX,
}

_ACC = re.compile(r"^(d?mul(?:us|su|uu|u|s)?(?:4t|q|p)?)a(.+)$")


def accumulate_base(mnemonic: str) -> str:
    """The mnemonic with the MAC accumulate letter removed (mulus4tan16xr16 -> mulus4tn16xr16); others unchanged."""
    m = _ACC.match(mnemonic)
    return m.group(1) + m.group(2) if m else mnemonic


@dataclass(frozen=True)
class OpProvenance:
    """The provenance of one listing op: its kind and the docs/firmware.md facts it rests on."""

    kind: str                                   # "firmware" | "firmware~" | "q7emu"
    facts: tuple[FirmwareFact, ...] = ()

    @property
    def label(self) -> str:
        """``q7emu``, or the kind followed by the docs/firmware.md citations."""
        if self.kind == "q7emu":
            return "q7emu"
        return f"{self.kind} " + "; ".join(f.cite() for f in self.facts)

    def to_json(self) -> dict[str, Any]:
        """JSON form: {"kind", "facts": [{"mnemonic", "section", "addresses", "where"}]}."""
        return {"kind": self.kind, "facts": [{"mnemonic": "ivp_" + f.mnemonic, "section": f.section,
                                              "addresses": list(f.addresses), "where": f.where} for f in self.facts]}


def classify(kernel: str, mnemonic: str) -> OpProvenance:
    """Provenance of ``mnemonic`` (no ivp_ prefix) issued by q7emu's ``kernel`` (a kernel name); every op of
    a kernel without docs/firmware.md facts is ``q7emu``."""
    facts = PATH_FACTS.get(kernel, ())
    exact = tuple(f for f in facts if f.mnemonic == mnemonic)
    if exact:
        return OpProvenance("firmware", exact)
    base = accumulate_base(mnemonic)
    form = tuple(f for f in facts if accumulate_base(f.mnemonic) == base)
    if form:
        return OpProvenance("firmware~", form)
    return OpProvenance("q7emu")


def seed_bundles(kernel: str) -> dict[str, frozenset[str]]:
    """The clean bundles docs/firmware.md gives for ``kernel``'s path: address -> the mnemonics it names there
    (only the legible ones; registers are not part of this record)."""
    out: dict[str, set[str]] = {}
    for f in PATH_FACTS.get(kernel, ()):
        for a in f.addresses:
            out.setdefault(a, set()).add(f.mnemonic)
    return {a: frozenset(m) for a, m in out.items()}


#: the operands docs/firmware.md §2.4 / §3.6 give for the ops of each clean bundle, in disassembly order
#: (address -> mnemonic -> operand tokens; an op given without operands is absent; "..." marks the illegible rest)
SEED_OPERANDS: dict[str, dict[str, tuple[str, ...]]] = {
    "0x01004fc8": {"muluupan16xr16": ("wv3", "v0", "v23", "pr3"), "sel2nx8i": ("v10", "v26", "v7", "53"),
                   "babssub2nx8": ("vb9", "v8", "v11", "v1")},
    "0x01004dfc": {"labvdcmprs2nx8_xp": ("vb12", "..."), "oltnxf16t": ("vb2", "..."), "dselnx16t": ("v0", "...")},
    "0x010051a9": {"mulus4tan16xr16": ("wv2", "v26", "v1", "pr1"), "bmin2nx8": ("vb3", "v4", "v20", "v16"),
                   "sel2nx8i_s4": ("v26", "v3", "v1", "9")},
    "0x010051e1": {"cvtg48n_2x32l": ("wv0", "v29", "v22")},
    "0x010052ee": {"ultn_2xf32t": ("vb1", "v13", "v16", "vb9"), "sel2nx8i_s4": ("v21", "v17", "v16", "0")},
    "0x010053c0": {"dmulqa2n8xr8": ("wv3", "wv1", "v25", "v9", "v13", "v29", "pr0"), "dselnx16": ("v2", "...")},
    "0x79ec": {"srln_2x32": ("v14", "v25", "v5"), "bmaxn_2x32": ("vb0", "v12", "v5", "v24")},
    "0x22b5": {"dextrprn_2x32": ("pr8", "v14", "v16", "5", "10")},
    "0x66a6": {"mulus4tn16xr16": ("wv0", "v31", "v7", "pr8"), "trunc16nxf16": ("v0", "v15", "7"),
               "baddnormnx16": ("vb4", "v0", "v1", "v0")},
    "0x6c4b": {"muluspa2n8xr16": ("wv1", "v12", "v26", "pr6"), "dextrprn_2x32": ("pr8", "v26", "v2", "12", "13"),
               "bsubnormnx16": ("vb1", "v28", "v5", "v26")},
    "0x216d": {"cvtg48n_2x32h": ("wv2", "v16", "v4"), "ueqn_2xf32t": ("vb8", "v2", "v17", "vb5"),
               "sel2nx8i_s4": ("v18", "v17", "v22", "16")},
}


def seed_operands(address: str, mnemonic: str) -> tuple[str, ...]:
    """The operand tokens docs/firmware.md gives for ``mnemonic`` in the bundle at ``address`` ("..." = illegible
    rest; empty when it gives none)."""
    return SEED_OPERANDS.get(address, {}).get(mnemonic, ())


def seed_bundle_writes(address: str) -> dict[str, tuple[str, ...]]:
    """The registers the ops of the seed bundle at ``address`` write, read off its operand tokens with the op
    table's operand roles (disassembly order: the written operands first, then the read ones, as for
    ``ivp_bmin2nx8 vb3, v4, v20, v16``): register token -> the mnemonics writing it. Only ops whose operands
    docs/firmware.md gives in full count (an illegible "..." rest leaves the order open)."""
    out: dict[str, list[str]] = {}
    for mnemonic, tokens in SEED_OPERANDS.get(address, {}).items():
        if "..." in tokens:
            continue
        fields = optable.op(mnemonic).operands
        ordered = [f for f in fields if f.role != optable.SRC] + [f for f in fields if f.role == optable.SRC]
        for token, field in zip(tokens, ordered):
            if field.role != optable.SRC:
                out.setdefault(token, []).append(mnemonic)
    return {reg: tuple(ms) for reg, ms in out.items()}


def seed_write_conflicts(address: str) -> dict[str, tuple[str, ...]]:
    """The registers two or more ops of the seed bundle at ``address`` write (docs/model.md §9 item 9): no VLIW
    bundle can keep both results, so the bundle cannot be issued with every op doing work under the operand
    reading of docs/firmware.md §6.2."""
    return {reg: ms for reg, ms in seed_bundle_writes(address).items() if len(ms) > 1}


def operands_match(seed: tuple[str, ...], listed: list[str]) -> bool:
    """True when the seed's legible operand tokens appear, in order, among an op's rendered operand tokens (a fully
    given operand list must be the whole list)."""
    legible = [t for t in seed if t != "..."]
    if "..." not in seed:
        return legible == listed
    it = iter(listed)
    return all(any(t == x for x in it) for t in legible)
