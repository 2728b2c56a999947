"""What rests on firmware facts and what is q7emu's reconstruction: the one table both the listings,
``q7emu ops`` and the README section read.

* :data:`PATH_FACTS`: the IVP mnemonics SPEC places in each firmware path -- SPEC §2.4 for the three
  TensorDequantize (0x7b) paths, §3.6 for the QuantizeMX (0xE3) body -- with the bundle address SPEC
  gives, if any. These are transcribed from SPEC once, here; ``firmware_tests/test_provenance.py``
  checks every mnemonic and address against SPEC.md's text when SPEC.md is available.
* :func:`classify`: the provenance of one op of a q7emu kernel listing:

  - ``firmware``: SPEC names this exact mnemonic in this path;
  - ``firmware~`` (a *form* match): SPEC names the same multiply in the other accumulate form, e.g.
    SPEC's ``ivp_mulus4tan16xr16`` @0x010051a9 (``a``: accumulate into the wvec) where q7emu issues
    ``mulus4tn16xr16`` (overwrite). The accumulate letter is the only difference q7emu treats as the
    same op: mul/mula, 4t/4ta, q/qa, p/pa. Slot suffixes (``_s4``), predicated ``t`` forms, signedness
    letters and lane widths are different ops and never match;
  - ``q7emu``: SPEC does not place the op in this path; it is part of q7emu's reconstruction.

* :func:`primitive_class` / :func:`format_ops_table`: every IVP primitive's semantics provenance as one
  of SPEC HIGH, SPEC MED, ANCHORS HIGH, q7emu choice (from the op table :mod:`q7emu.primitives.optable`), plus the kernels that issue it.
* :data:`KNOB_FACTS` / :data:`OUTPUT_BASIS`: which output bytes rest on firmware facts and which on a
  model knob (MODEL.md), with the SPEC open question each knob stands for.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from q7emu.primitives import optable

# ---------------------------------------------------------------------- firmware facts per path
NON_MX_BLOCK = "inline non-MX paths in decode (0x4df0..0x511c)"


@dataclass(frozen=True)
class FirmwareFact:
    """One mnemonic SPEC places in a firmware path."""

    mnemonic: str                    # without the ivp_ prefix
    section: str                     # "§2.4" / "§3.6"
    addresses: tuple[str, ...] = ()  # bundle addresses SPEC gives for a clean bundle holding it
    count: int = 1                   # how many times SPEC lists it in the path (x2, x3)
    where: str = ""                  # the SPEC list it comes from

    def cite(self) -> str:
        at = (" @" + ", @".join(self.addresses)) if self.addresses else ""
        return f"ivp_{self.mnemonic}{at} (SPEC {self.section})"


def _facts(section: str, where: str, rows: list[tuple[str, tuple[str, ...], int]]) -> tuple[FirmwareFact, ...]:
    return tuple(FirmwareFact(m, section, a, n, where) for m, a, n in rows)


#: SPEC §2.4 "Inline non-MX paths in decode": shared by proc_4bit_non_mx and proc_6bit_non_mx
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
#: SPEC §2.4 "MX path proc_4bit_mx_8"
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
#: SPEC §3.6 "0xE3 device body" (MARIANA DVE PERF IRAM)
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

PATH_FACTS: dict[str, tuple[FirmwareFact, ...]] = {
    "proc_4bit_non_mx": _NON_MX,
    "proc_6bit_non_mx": _NON_MX,
    "proc_4bit_mx_8": _MX,
    "quantize_mx": _QMX,
}
KERNELS = tuple(PATH_FACTS)

_ACC = re.compile(r"^(d?mul(?:us|su|uu|u|s)?(?:4t|q|p)?)a(.+)$")


def accumulate_base(mnemonic: str) -> str:
    """The mnemonic with the MAC accumulate letter removed (mulus4tan16xr16 -> mulus4tn16xr16); others unchanged."""
    m = _ACC.match(mnemonic)
    return m.group(1) + m.group(2) if m else mnemonic


@dataclass(frozen=True)
class OpProvenance:
    kind: str                                   # "firmware" | "firmware~" | "q7emu"
    facts: tuple[FirmwareFact, ...] = ()

    @property
    def label(self) -> str:
        if self.kind == "q7emu":
            return "q7emu"
        return f"{self.kind} " + "; ".join(f.cite() for f in self.facts)

    def to_json(self) -> dict:
        return {"kind": self.kind, "facts": [{"mnemonic": "ivp_" + f.mnemonic, "section": f.section,
                                              "addresses": list(f.addresses), "where": f.where} for f in self.facts]}


def classify(kernel: str, mnemonic: str) -> OpProvenance:
    """Provenance of ``mnemonic`` (no ivp_ prefix) issued by q7emu's ``kernel``."""
    facts = PATH_FACTS[kernel]
    exact = tuple(f for f in facts if f.mnemonic == mnemonic)
    if exact:
        return OpProvenance("firmware", exact)
    base = accumulate_base(mnemonic)
    form = tuple(f for f in facts if accumulate_base(f.mnemonic) == base)
    if form:
        return OpProvenance("firmware~", form)
    return OpProvenance("q7emu")


# ---------------------------------------------------------------------- knobs: which bytes rest on what
@dataclass(frozen=True)
class KnobFact:
    knob: str
    applies: str          # where it applies (opcode / path / format)
    decides: str          # which output bytes it decides
    spec: str             # the SPEC open question it stands for


KNOB_FACTS: tuple[KnobFact, ...] = (
    KnobFact("nibble_order", "0x7b fmt 1-3 (proc_4bit_non_mx, proc_4bit_mx_8)",
             "the order of every output pair (which nibble is element 2i)", "SPEC §8.1.2"),
    KnobFact("fp6_packing", "0x7b fmt 4 (proc_6bit_non_mx)",
             "which 6 bits of each 3-byte group make each of the 4 outputs", "SPEC §8.1.3"),
    KnobFact("mx_layout", "0x7b group 8 (proc_4bit_mx_8)",
             "which source byte of each 5-byte group is the scale, so every MX output byte", "SPEC §8.1.1"),
    KnobFact("mx_scale", "0x7b group 8 (proc_4bit_mx_8)",
             "the bytes of groups whose scale byte is 0xFF (NaN vs saturate)", "SPEC §8.1.1, §2.3 (E8M0 is MED)"),
    KnobFact("nf4_table", "0x7b fmt 3 (NF4)", "every NF4 output byte (the codebook values)", "SPEC §8.1.4, §2.2 (MED)"),
    KnobFact("emax", "0xE3", "every scale byte and, through it, every data byte", "SPEC §8.1.11, §8.2.14"),
    KnobFact("underflow", "0xE3", "scale (and data) bytes of blocks whose max exponent is below max_exp",
             "SPEC §8.2.14"),
)


@dataclass(frozen=True)
class OutputBasis:
    what: str
    basis: str            # "firmware" or "knob: NAME" or "q7emu"
    ref: str


#: what each output byte rests on; the README section prints this table
OUTPUT_BASIS: tuple[OutputBasis, ...] = (
    OutputBasis("0x7b: which path runs, words in : words out", "firmware", "SPEC §1.3, §1.5 [HIGH/OBS]"),
    OutputBasis("0x7b group 0: the FP8 value of each FP4 / INT4 / FP6 code", "firmware",
                "SPEC §2.2 format pairs [HIGH/OBS]; every code converts exactly"),
    OutputBasis("0x7b: the order of outputs within a byte (4-bit)", "knob: nibble_order", "SPEC §8.1.2"),
    OutputBasis("0x7b: the order of outputs within 3 bytes (FP6)", "knob: fp6_packing", "SPEC §8.1.3"),
    OutputBasis("0x7b NF4: the codebook value of each index", "knob: nf4_table", "SPEC §2.2 [MED], §8.1.4"),
    OutputBasis("0x7b group 8: where the in-band scale sits", "knob: mx_layout", "SPEC §8.1.1"),
    OutputBasis("0x7b group 8: scale 0xFF", "knob: mx_scale", "SPEC §2.3 E8M0 [MED/INF]"),
    OutputBasis("0x7b group 8: value x 2^(s-127), rounded once RNE, saturating", "q7emu",
                "SPEC §2.3 multiply [HIGH], RNE / clamp [MED]; MODEL §1"),
    OutputBasis("0xE3: block max exponent - max_exp", "knob: emax", "SPEC §3.4, §8.1.11"),
    OutputBasis("0xE3: scale below zero", "knob: underflow", "SPEC §8.2.14"),
    OutputBasis("0xE3: divide, clip to ±max_val, RNE, NaN kept", "firmware", "SPEC §3.4 (NKI simulator) [HIGH/OBS]"),
    OutputBasis("the op sequence that computes these bytes", "q7emu",
                "a reconstruction on the IVP primitives; see `q7emu listing` for which ops SPEC places in the path"),
)


# ---------------------------------------------------------------------- primitives
PRIMITIVE_CLASSES = optable.PROVENANCE_CLASSES


def primitive_class(provenance: str) -> str:
    """Map an ``ivp.catalog()`` provenance string to SPEC HIGH / SPEC MED / ANCHORS HIGH / q7emu choice.

    ANCHORS HIGH: semantics taken from the Cadence cstub probes quoted in ANCHORS.md §7 (functional-model
    truth, not a firmware fact of SPEC.md)."""
    for c in PRIMITIVE_CLASSES:
        if provenance.startswith(c):
            return c
    return "q7emu choice"


@dataclass
class PrimitiveRow:
    mnemonic: str
    cls: str
    detail: str
    reference: str
    semantics: str
    kernels: list[str] = field(default_factory=list)


def primitive_rows() -> list[PrimitiveRow]:
    """Every IVP primitive with its provenance class and the kernels (listings) that issue it (facts: the op table)."""
    used: dict[str, list[str]] = {}
    try:
        from q7emu.analysis.listing import kernel_mnemonics
        for k in KERNELS:
            for m in kernel_mnemonics(k):
                used.setdefault(m, []).append(k)
    except Exception:  # pragma: no cover - listing data missing: no usage column
        used = {}
    rows = []
    for o in sorted(optable.OPS, key=lambda o: o.mnemonic):
        rows.append(PrimitiveRow(o.mnemonic, o.provenance, o.note, o.cite, o.semantics, used.get(o.mnemonic, [])))
    return rows


_KABBR = {"proc_4bit_non_mx": "4nm", "proc_4bit_mx_8": "mx8", "proc_6bit_non_mx": "6nm", "quantize_mx": "qmx"}


def format_ops_table() -> str:
    """The ``q7emu ops`` table: mnemonic, provenance (SPEC HIGH / SPEC MED / ANCHORS HIGH / q7emu choice), the kernels that
    issue it (4nm proc_4bit_non_mx, mx8 proc_4bit_mx_8, 6nm proc_6bit_non_mx, qmx quantize_mx), semantics."""
    rows = primitive_rows()
    w = max((len(r.mnemonic) for r in rows), default=8)
    out = [f"{'mnemonic':<{w}}  {'provenance':<12}  {'kernels':<15}  semantics  [reference; provenance detail]"]
    for r in rows:
        ks = ",".join(_KABBR[k] for k in r.kernels) or "-"
        ref = "; ".join(x for x in (r.reference, r.detail) if x)
        out.append(f"{r.mnemonic:<{w}}  {r.cls:<12}  {ks:<15}  {r.semantics}" + (f"  [{ref}]" if ref else ""))
    counts = {c: sum(r.cls == c for r in rows) for c in PRIMITIVE_CLASSES}
    out.append(f"{len(rows)} primitives: " + ", ".join(f"{n} {c}" for c, n in counts.items())
               + "; kernels: 4nm proc_4bit_non_mx, mx8 proc_4bit_mx_8, 6nm proc_6bit_non_mx, qmx quantize_mx")
    return "\n".join(out)
