"""What rests on firmware facts and what is q7emu's reconstruction: the tables the listings,
``q7emu ops`` and the README section read.

* :data:`PATH_FACTS`, :func:`classify`, :class:`OpProvenance` (re-exported from
  :mod:`q7emu.analysis.path_facts`): the IVP mnemonics docs/firmware.md places in each firmware path
  (docs/firmware.md §2.4,
  §3.6) and the provenance of one op of a kernel listing (``firmware`` / ``firmware~`` / ``q7emu``).
* :func:`primitive_class` / :func:`format_ops_table`: every IVP primitive's semantics provenance as one
  of SPEC HIGH, SPEC MED, ANCHORS HIGH, q7emu choice (from the op table :mod:`q7emu.primitives.optable`),
  plus the kernels that issue it.
* :data:`KNOB_FACTS` / :data:`OUTPUT_BASIS`: which output bytes rest on firmware facts and which on a
  model knob (docs/model.md), with the docs/firmware.md open question each knob stands for.
"""
from __future__ import annotations

from dataclasses import field

from q7emu import registry
from q7emu._dataclass import dataclass
from q7emu.analysis.listing import kernel_mnemonics
from q7emu.analysis.path_facts import NON_MX_BLOCK, PATH_FACTS, FirmwareFact, OpProvenance, accumulate_base, classify  # noqa: F401
from q7emu.model.knobs import KNOBS, knob_applies
from q7emu.primitives import optable

#: the kernels of the tables: those with docs/firmware.md facts first, in docs/firmware.md's order of the paths (§2.4
# non-MX block,
#: the MX path, §3.6), then any other kernel in registry order
KERNELS: tuple[str, ...] = tuple(PATH_FACTS) + tuple(k for k in registry.names() if k not in PATH_FACTS)


# ---------------------------------------------------------------------- knobs: which bytes rest on what
@dataclass(frozen=True)
class KnobFact:
    """One model knob: where it applies, which output bytes it decides, the docs/firmware.md open question."""

    knob: str
    applies: str          # where it applies (opcode / path / format)
    decides: str          # which output bytes it decides
    spec: str             # the docs/firmware.md open question it stands for


#: every machine knob's facts, from the knob table (q7emu.model.knobs.KNOBS; where it applies: the format table)
KNOB_FACTS: tuple[KnobFact, ...] = tuple(KnobFact(k.name, knob_applies(k.name), k.decides, k.question)
                                         for k in KNOBS if k.machine)


@dataclass(frozen=True)
class OutputBasis:
    """What one kind of output byte rests on: ``firmware``, ``knob: NAME`` or ``q7emu``, with the reference."""

    what: str
    basis: str            # "firmware" or "knob: NAME" or "q7emu"
    ref: str


#: what each output byte rests on; the README section prints this table
OUTPUT_BASIS: tuple[OutputBasis, ...] = (
    OutputBasis("0x7b: which path runs, words in : words out", "firmware", "docs/firmware.md §1.3, §1.5 [HIGH/OBS]"),
    OutputBasis("0x7b group 0: the FP8 value of each FP4 / INT4 / FP6 code", "firmware",
                "docs/firmware.md §2.2 format pairs [HIGH/OBS]; every code converts exactly"),
    OutputBasis("0x7b: the order of outputs within a byte (4-bit)", "knob: nibble_order", "docs/firmware.md §8.1.2"),
    OutputBasis("0x7b: the order of outputs within 3 bytes (FP6)", "knob: fp6_packing", "docs/firmware.md §8.1.3"),
    OutputBasis("0x7b NF4: the codebook value of each index", "knob: nf4_table", "docs/firmware.md §2.2 [MED], §8.1.4"),
    OutputBasis("0x7b group 8: where the in-band scale sits", "knob: mx_layout", "docs/firmware.md §8.1.1"),
    OutputBasis("0x7b group 8: scale 0xFF", "knob: mx_scale", "docs/firmware.md §2.3 E8M0 [MED/INF]"),
    OutputBasis("0x7b group 8: value x 2^(s-127), rounded once RNE, saturating", "q7emu",
                "docs/firmware.md §2.3 multiply [HIGH], RNE / clamp [MED]; docs/model.md §1"),
    OutputBasis("0xE3: block max exponent - max_exp", "knob: emax", "docs/firmware.md §3.4, §8.1.11"),
    OutputBasis("0xE3: scale below zero, and the divisor of such a block", "knob: underflow",
                "docs/firmware.md §8.2.14"),
    OutputBasis("0xE3: blocks holding a NaN or an Inf", "knob: nonfinite", "docs/anchors.md §1.4 (c)"),
    OutputBasis("0xE3: divide, clip to ±max_val, RNE, NaN kept", "firmware",
                "docs/firmware.md §3.4 (NKI simulator) [HIGH/OBS]"),
    OutputBasis("the op sequence that computes these bytes", "q7emu",
                "a reconstruction on the IVP primitives; see `q7emu listing` for which ops docs/firmware.md places "
                "in the path"),
)


# ---------------------------------------------------------------------- primitives
PRIMITIVE_CLASSES = optable.PROVENANCE_CLASSES


def primitive_class(provenance: str) -> str:
    """Map an ``ivp.catalog()`` provenance string to its class (SPEC HIGH / SPEC MED / PUBLIC HIGH / PUBLIC MED /
    ANCHORS HIGH / q7emu choice).

    ANCHORS HIGH: semantics taken from the Cadence cstub probes quoted in docs/anchors.md §7 (functional-model
    truth, not a firmware fact of docs/firmware.md); PUBLIC: pinned by public code written with the real toolchain
    (docs/intrinsics.md)."""
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
    evidence: list[str] = field(default_factory=list)      # Evidence.cite() lines (docs/intrinsics.md)
    operands: list[dict[str, str]] = field(default_factory=list)


def _operand_json(o: optable.Operand) -> dict[str, str]:
    """{"name", "role", "kind", "view"} of one operand (in the C intrinsic's order)."""
    return {"name": o.name, "role": o.role, "kind": o.kind, "view": o.view}


def primitive_rows() -> list[PrimitiveRow]:
    """Every IVP primitive with its provenance class and the kernels (listings) that issue it (facts: the op
    table)."""
    used: dict[str, list[str]] = {}
    for k in KERNELS:
        for m in kernel_mnemonics(k):
            used.setdefault(m, []).append(k)
    rows = []
    for o in sorted(optable.OPS, key=lambda o: o.mnemonic):
        rows.append(PrimitiveRow(o.mnemonic, o.provenance, o.note, o.cite, o.semantics, used.get(o.mnemonic, []),
                                 [e.cite() for e in o.evidence], [_operand_json(x) for x in o.operands]))
    return rows


_KABBR = {e.name: e.abbr for e in registry.KERNELS}


def format_ops_table() -> str:
    """The ``q7emu ops`` table: mnemonic, provenance (SPEC HIGH / SPEC MED / ANCHORS HIGH / q7emu choice), the
    kernels that
    issue it (4nm proc_4bit_non_mx, mx8 proc_4bit_mx_8, 6nm proc_6bit_non_mx, qmx quantize_mx), semantics."""
    rows = primitive_rows()
    w = max((len(r.mnemonic) for r in rows), default=8)
    out = [f"{'mnemonic':<{w}}  {'provenance':<12}  {'kernels':<15}  semantics  [reference; provenance detail]"]
    for r in rows:
        ks = ",".join(_KABBR[k] for k in r.kernels) or "-"
        pub = f"{len(r.evidence)} public source(s)" if r.evidence else ""
        ref = "; ".join(x for x in (r.reference, r.detail, pub) if x)
        out.append(f"{r.mnemonic:<{w}}  {r.cls:<12}  {ks:<15}  {r.semantics}" + (f"  [{ref}]" if ref else ""))
    counts = {c: sum(r.cls == c for r in rows) for c in PRIMITIVE_CLASSES}
    out.append(f"{len(rows)} primitives: " + ", ".join(f"{n} {c}" for c, n in counts.items())
               + "; kernels: 4nm proc_4bit_non_mx, mx8 proc_4bit_mx_8, 6nm proc_6bit_non_mx, qmx quantize_mx"
               + "; `q7emu ops MNEMONIC` shows one op with its operands and public evidence (docs/intrinsics.md)")
    return "\n".join(out)


def format_op_detail(mnemonic: str) -> str:
    """One primitive in full (``q7emu ops MNEMONIC``): the disassembly / C intrinsic operand order with each
    operand's role and lane view, the semantics, the docs/ reference, the provenance and the public evidence.
    Raises KeyError for an unknown mnemonic."""
    o = optable.op(mnemonic)
    opnds = ", ".join(f"{x.name}" for x in o.operands)
    lines = [f"ivp_{o.mnemonic} {opnds}      (IVP_{o.mnemonic.upper()}; operands in the C intrinsic's order, "
             "docs/intrinsics.md §2)"]
    for x in o.operands:
        lines.append(f"  {x.name:<8} {x.role:<6} {x.describe()}")
    lines += [f"semantics: {o.semantics}", f"reference: {o.cite}", f"provenance: {o.provenance_text}",
              f"FLIX slots: {', '.join(o.slots)} ({o.slot})"]
    if o.evidence:
        lines.append("public evidence (docs/intrinsics.md):")
        lines += [f"  - {e.cite()}" for e in o.evidence]
    else:
        lines.append("public evidence: none found (docs/intrinsics.md §3.10)")
    return "\n".join(lines)
