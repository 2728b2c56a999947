"""Kernel listings: a kernel configuration as its bundles, ops, operands and provenance, read off a run.

A listing is what the kernel executes (docs/model.md §9.1). :func:`build` runs the kernel's program on the
interpreter, traced, for one configuration (fmt or dtypes, and every knob: the defaults for those not given) on two
small inputs, of two and of three whole passes of its main loop, reads the records back (bundle, mnemonic, every
operand's kind, role, register and scalar value) and splits them by comparing the two runs: the **entry** (before the
main loop), **one pass** of the main loop and the **exit** (after it: a software-pipelined loop's last stage). So a
listing equals a trace by construction. Bundle labels are the program's ``.equ`` symbols that name a bundle, each
label's note from ``q7emu.kernels.programs.bundle_notes``; a bundle inside a shared sequence (``narrow_fp8`` …) is
shown as the label it starts at plus an offset. Provenance per op comes from :mod:`q7emu.analysis.path_facts`.

One listing per configuration: :func:`all_variant_configs` lists every configuration that decides the kernel's
branches, and :func:`variant_diff` gives the bundles in which one differs from the default configuration.
"""
from __future__ import annotations

import difflib
import itertools
from dataclasses import field
from functools import lru_cache
from typing import Any

from q7emu import registry
from q7emu._dataclass import dataclass
from q7emu.analysis.path_facts import (
    OpProvenance,
    classify,
    operands_match,
    seed_bundles,
    seed_operands,
    seed_write_conflicts,
)
from q7emu.errors import InternalError, InvalidArgument
from q7emu.machine.machine import MACHINE_KNOBS
from q7emu.model.kernels import FMT_NAMES
from q7emu.primitives import optable

#: every kernel with a listing (the registry's, in KernelId order)
KERNELS: tuple[str, ...] = registry.names()
_PREFIX = {"vec": "v", "wvec": "wv", "vbool": "vb", "pr": "pr"}
#: a scalar operand's trace register code (docs/traces.md §1.1)
IMMEDIATE, OFFSET, LENGTH = 255, 254, 253


@dataclass(frozen=True)
class Operand:
    """One operand of a listing op: kind (vec, wvec, vbool, pr, scalar), role (src / dst), register index (None
    for a scalar), a scalar's value and its trace register code (255 immediate, 254 memory offset, 253 length)."""

    kind: str
    role: str
    reg: int | None
    value: int | None = None
    code: int | None = None

    def render(self) -> str:
        """Assembly text: ``v23`` / ``wv2`` / ``vb9`` / ``pr1`` / an integer."""
        if self.kind == "scalar":
            return str(self.value)
        return f"{_PREFIX[self.kind]}{self.reg}"

    def key(self) -> tuple[Any, ...]:
        """What two passes share: the register, or an immediate's value (offsets and lengths move per pass)."""
        return (self.kind, self.role, self.reg, self.value if self.code == IMMEDIATE else None)

    def to_json(self) -> dict[str, Any]:
        """JSON form: kind, role, reg, value, code."""
        return {"kind": self.kind, "role": self.role, "reg": self.reg, "value": self.value, "code": self.code}


@dataclass(frozen=True)
class Op:
    """One IVP op of a listing: its bundle index ``B<n>``, the bundle's label (``MX_GATE``, ``G0_NARROW+3``),
    mnemonic, operands as recorded (sources, then destinations), provenance and the label's note."""

    bundle: int
    label: str
    mnemonic: str
    operands: tuple[Operand, ...]
    provenance: OpProvenance
    note: str | None = None

    def render_operands(self) -> str:
        """The operands in disassembly order (docs/intrinsics.md §2): the written ones (a read-modify-write
        operand once, in its written place), then ``[offset]`` for a memory op, then the read ones."""
        fields = optable.op(self.mnemonic).operands
        rmw = {f.name for f in fields if f.role == optable.SRCDST and f.kind != optable.SCALAR}
        dst = [o for o in self.operands if o.role == "dst"]
        srcs = [o for o in self.operands if o.role == "src"]
        names = [f.name for f in fields if f.role != optable.DST and f.kind != optable.MEMORY]
        parts = [o.render() for o in dst]
        off = next((o for o in srcs if o.code == OFFSET), None)
        if off is not None:
            parts.append(f"[{off.value}]")
        parts += [o.render() for o, n in zip(srcs, names) if n not in rmw and o.code != OFFSET]
        return ", ".join(parts)

    def text(self) -> str:
        """``mnemonic operands``."""
        return f"{self.mnemonic} {self.render_operands()}"

    def key(self) -> tuple[Any, ...]:
        """What identifies the op across passes and configurations (bundle, mnemonic, registers, immediates)."""
        return (self.bundle, self.mnemonic, tuple(o.key() for o in self.operands))

    def to_json(self) -> dict[str, Any]:
        """JSON form: bundle, label, mnemonic, operands (recorded order), text, provenance, note."""
        return {"bundle": self.bundle, "label": self.label, "mnemonic": self.mnemonic,
                "operands": [o.to_json() for o in self.operands], "text": self.text(),
                "provenance": self.provenance.to_json(), "note": self.note}


@dataclass
class Listing:
    """One kernel configuration's listing: the entry (before the main loop), one pass of the main loop and the
    exit (after it), each the ops the kernel issues, in issue order (a run of the kernel: docs/model.md §9.1)."""

    kernel: str
    config: dict[str, Any]
    entry: list[Op]
    passes: list[Op]
    exit: list[Op] = field(default_factory=list)

    def ops(self, section: str = "pass") -> list[Op]:
        """Ops of ``section`` ("entry", "pass" or "exit") in issue order."""
        return {"entry": self.entry, "exit": self.exit}.get(section, self.passes)

    def all_ops(self) -> list[Op]:
        """The entry, one pass and the exit."""
        return self.entry + self.passes + self.exit

    def mnemonics(self) -> set[str]:
        """Every mnemonic of the entry, the pass and the exit."""
        return {o.mnemonic for o in self.all_ops()}

    def to_json(self) -> dict[str, Any]:
        """JSON form: kernel, config, entry, pass, exit, seed report."""
        return {"kernel": self.kernel, "config": self.config, "entry": [o.to_json() for o in self.entry],
                "pass": [o.to_json() for o in self.passes], "exit": [o.to_json() for o in self.exit],
                "seed": self.seed_report()}

    def seed_report(self) -> dict[str, Any]:
        """How much of one pass is the firmware's vocabulary (docs/model.md §9 item 9): see :func:`seed_report`."""
        return seed_report(self.kernel, [self])

    def lines(self) -> list[str]:
        """Every op as ``B<n> LABEL  text`` (the form :func:`variant_diff` compares)."""
        return [f"{sec}  B{o.bundle} {o.label}  {o.text()}" for sec, ops in
                (("entry", self.entry), ("pass", self.passes), ("exit", self.exit)) for o in ops]

    def format(self) -> str:
        """The listing as text: a header with provenance counts and the seed report, then every bundle of the
        entry, of one pass and of the exit (a run of identical bundles shown once with its count)."""
        cfg = "  ".join(f"{k}={v}" for k, v in _flat_config(self.config).items())
        lines = [f"{self.kernel}  {cfg}",
                 "provenance: firmware = docs/firmware.md places this mnemonic in this path; firmware~ = same op in "
                 "the other accumulate form; q7emu = q7emu's reconstruction"]
        counts = _prov_counts(self.all_ops())
        lines.append("ops (entry, one pass, exit): " + ", ".join(f"{n} {k}" for k, n in counts.items()))
        lines += format_seed(self.seed_report())
        lines.append("")
        for title, ops in (("entry:", self.entry), ("main loop, one pass:", self.passes),
                           ("exit (after the main loop):", self.exit)):
            if ops or title == "entry:":
                lines.append(title)
                _fmt_ops(ops, lines)
        return "\n".join(lines)


def _flat_config(config: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in config.items() if k != "knobs" and v is not None}
    if "fmt" in out:
        names = {code: name for name, code in FMT_NAMES.items()}
        out["fmt"] = f"{out['fmt']} ({names.get(out['fmt'], '?')})"
    out.update(config.get("knobs", {}))
    return out


def _prov_counts(ops: list[Op]) -> dict[str, int]:
    c = {"firmware": 0, "firmware~": 0, "q7emu": 0}
    for o in ops:
        c[o.provenance.kind] += 1
    return c


def _repeats(ops: list[Op]) -> list[tuple[int, int, int]]:
    """(start, length, count) of the runs of identical op blocks (an inner loop: same bundles, registers and
    immediates; count >= 2), greedily from the left, shortest block first."""
    out, i, n = [], 0, len(ops)
    keys = [o.key() for o in ops]
    while i < n:
        best = (1, 1)
        for p in range(1, (n - i) // 2 + 1):
            c = 1
            while i + (c + 1) * p <= n and keys[i + c * p:i + (c + 1) * p] == keys[i:i + p]:
                c += 1
            if c > 1 and c * p > best[0] * best[1]:
                best = (p, c)
        out.append((i, best[0], best[1]))
        i += best[0] * best[1]
    return out


def _fmt_ops(ops: list[Op], lines: list[str]) -> None:
    last = None
    for start, length, count in _repeats(ops):
        block = ops[start:start + length]
        ind = "  "
        if count > 1:
            lines.append(f"  {count} times (an inner loop):")
            ind, last = "    ", None
        for o in block:
            if o.bundle != last:
                head = f"{ind}B{o.bundle:<3d} {o.label}"
                lines.append(head + (f"  ; {o.note}" if o.note and "+" not in o.label else ""))
                last = o.bundle
            lines.append(f"{ind}     {o.text():<46s} {o.provenance.label}")
        if count > 1:
            last = None


def seed_report(kernel: str, listings: list[Listing]) -> dict[str, Any]:
    """How much of one pass is the firmware's vocabulary, over one or more listings of ``kernel`` (all its
    configurations for the README).

    ``seed_named`` of the ``pass_ops`` distinct ops of a pass (an op repeated with the same bundle, registers and
    immediates -- an inner loop's iterations -- counts once; several listings: their distinct pass ops together)
    are mnemonics docs/firmware.md places in this path (``share``, 0..1); ``bundles_present``: which of the path's
    ``bundles`` clean seed bundles have all their legible mnemonics in one bundle; ``bundles_verbatim``: which of
    those also have the registers and immediates docs/firmware.md gives (path_facts.SEED_OPERANDS);
    ``bundles_conflicting``: the seed bundles in which two ops write one register as docs/firmware.md gives them
    (address -> register -> mnemonics; docs/model.md §9 item 9), which no VLIW issue can keep whole."""
    pass_ops = list({o.key(): o for lst in listings for o in lst.passes}.values())
    named = sum(o.provenance.kind == "firmware" for o in pass_ops)
    bundles: list[list[Op]] = []
    for lst in listings:
        by: dict[tuple[str, int], list[Op]] = {}
        for sec in ("entry", "pass", "exit"):
            for o in lst.ops(sec):
                by.setdefault((sec, o.bundle), []).append(o)
        bundles += list(by.values())
    seeds = seed_bundles(kernel)
    present = [a for a, want in seeds.items() if any(want <= {o.mnemonic for o in have} for have in bundles)]

    def op_ok(o: Op, address: str, mnemonic: str) -> bool:
        want = seed_operands(address, mnemonic)
        return o.mnemonic == mnemonic and (not want or operands_match(want, o.render_operands().split(", ")))
    exact = [a for a in present if any(all(any(op_ok(o, a, m) for o in have) for m in seeds[a]) for have in bundles)]
    conflicting = {a: {reg: list(ms) for reg, ms in c.items()} for a in seeds if (c := seed_write_conflicts(a))}
    return {"seed_named": named, "pass_ops": len(pass_ops), "share": named / len(pass_ops) if pass_ops else 0.0,
            "bundles": len(seeds), "bundles_present": present, "bundles_verbatim": exact,
            "bundles_conflicting": conflicting}


def format_seed(seed: dict[str, Any]) -> list[str]:
    """The seed report as text lines."""
    out = [f"seed-named: {seed['seed_named']} of {seed['pass_ops']} ops of one pass ({100 * seed['share']:.0f} %); "
           f"seed bundles whose mnemonics issue together: {len(seed['bundles_present'])} of {seed['bundles']}"
           + (f" ({', '.join('@' + a for a in seed['bundles_present'])})" if seed["bundles_present"] else "")
           + f"; with the seed's registers and immediates: {len(seed['bundles_verbatim'])}"
           + (f" ({', '.join('@' + a for a in seed['bundles_verbatim'])})" if seed["bundles_verbatim"] else "")]
    if seed["bundles_conflicting"]:
        out.append("seed bundles that write one register twice as given (no VLIW issue keeps both; "
                   "docs/model.md §9 item 9): "
                   + "; ".join(f"@{a} " + ", ".join(f"{reg} by {' and '.join(ms)}" for reg, ms in c.items())
                               for a, c in seed["bundles_conflicting"].items()))
    return out


# ------------------------------------------------------------------------------------------ configurations
def _norm_fmt(fmt: Any) -> int | None:
    if fmt is None:
        return None
    if isinstance(fmt, str):
        if fmt.lower() in FMT_NAMES:
            return FMT_NAMES[fmt.lower()]
        if fmt.isdigit():
            return int(fmt)
        codes = sorted(FMT_NAMES.values())
        raise InvalidArgument("fmt", fmt, f"must be one of {', '.join(FMT_NAMES)} or {codes[0]}..{codes[-1]}")
    return int(fmt)


def all_variant_configs(kernel: str) -> list[dict[str, Any]]:
    """Configurations (build() keyword arguments) that together decide every branch of ``kernel`` both ways.

    Every fmt (or every src x dst dtype) of the kernel times every value of each knob it reads with that fmt
    (registry ``knobs_for``)."""
    entry = registry.get(kernel)
    out: list[dict[str, Any]] = []
    if entry.fmts:
        for f in entry.fmts:
            names = entry.knobs_for(f, entry.group_size)
            for vals in itertools.product(*(MACHINE_KNOBS[k] for k in names)):
                out.append({"fmt": f, "knobs": dict(zip(names, vals))})
    else:
        for s, d in itertools.product(entry.src_dtypes, entry.dst_dtypes):
            for vals in itertools.product(*(MACHINE_KNOBS[k] for k in entry.knobs)):
                out.append({"src_dtype": s, "dst_dtype": d, "knobs": dict(zip(entry.knobs, vals))})
    return out


def _config(kernel: str, fmt: Any, knobs: dict[str, str] | None, src_dtype: str | None,
            dst_dtype: str | None) -> tuple[registry.KernelEntry, dict[str, Any]]:
    """The full configuration the options decide (the kernel's first fmt / dtypes and each knob's default for
    what is not given), checked."""
    entry = registry.find(kernel) if isinstance(kernel, str) else None
    if entry is None:
        raise InvalidArgument("kernel", kernel, f"must be one of {', '.join(KERNELS)}")
    knobs = dict(knobs or {})
    for k, v in knobs.items():
        if k not in MACHINE_KNOBS or v not in MACHINE_KNOBS[k]:
            raise InvalidArgument("knob", f"{k}={v}", f"unknown knob or value; known: {', '.join(MACHINE_KNOBS)}")
    f = _norm_fmt(fmt)
    cfg: dict[str, Any]
    if entry.fmts:
        if f is not None and f not in entry.fmts:
            raise InvalidArgument("fmt", fmt, f"{kernel} runs fmt {', '.join(map(str, entry.fmts))}")
        cfg = {"fmt": f if f is not None else entry.fmts[0]}
    else:
        if f is not None:
            raise InvalidArgument("fmt", fmt, f"{kernel} has no fmt (use --src-dtype / --dst-dtype)")
        for name, val, allowed in (("src_dtype", src_dtype, entry.src_dtypes), ("dst_dtype", dst_dtype,
                                                                                entry.dst_dtypes)):
            if val is not None and val not in allowed:
                raise InvalidArgument(name, val, f"must be one of {', '.join(allowed)}")
        cfg = {"src_dtype": src_dtype or entry.src_dtypes[0], "dst_dtype": dst_dtype or entry.dst_dtypes[0]}
    reads = entry.knobs_for(cfg.get("fmt"), entry.group_size)
    for k in knobs:
        if k not in reads:
            where = f"{kernel} fmt {cfg['fmt']}" if "fmt" in cfg else kernel
            raise InvalidArgument("knob", k, f"{where} does not read it; it reads: {', '.join(reads)}")
    cfg["knobs"] = {k: knobs.get(k, MACHINE_KNOBS[k][0]) for k in reads}
    return entry, cfg


# ------------------------------------------------------------------------------------------ running
def _records(entry: registry.KernelEntry, cfg: dict[str, Any], passes: int) -> tuple[list[Any], dict[int, str],
                                                                                   dict[str, str]]:
    """The full-operand trace records of one partition (row block) over ``passes`` whole passes, the bundle labels
    and their notes (the kernel module's ``listing_run``)."""
    from q7emu.analysis.trace import Trace

    raw, labels, notes = entry.listing_run(passes, cfg)
    t = Trace.from_runs([(raw, {})])
    return [t[i] for i in range(len(t))], labels, notes


def _ops(kernel: str, records: list[Any], labels: dict[int, str], notes: dict[str, str]) -> list[Op]:
    """Listing ops of trace records: operands, the bundle's label (the label before it plus an offset inside a
    shared sequence) and note, provenance."""
    values = sorted(labels)
    out = []
    for r in records:
        ops = []
        for o in r.operands:
            if o.kind_name == "scalar":
                ops.append(Operand("scalar", o.role_name, None, int.from_bytes(o.data, "little", signed=True), o.reg))
            else:
                ops.append(Operand(o.kind_name, o.role_name, o.reg))
        below = [v for v in values if v <= r.bundle]
        base = below[-1] if below else None
        label = "?" if base is None else (labels[base] + (f"+{r.bundle - base}" if r.bundle != base else ""))
        note = notes.get(labels[base]) if base is not None else None
        out.append(Op(int(r.bundle), label, r.op, tuple(ops), classify(kernel, r.op), note))
    return out


def _split(two: list[Op], three: list[Op]) -> tuple[int, int]:
    """(entry length, pass length) of a run of three whole passes given the same configuration's run of two: the
    first entry length at which the three passes repeat (registers and immediates) and the runs agree around them."""
    p = len(three) - len(two)
    e = len(two) - 2 * p
    k2, k3 = [o.key() for o in two], [o.key() for o in three]
    for k in range(e + 1):
        body = k3[k:k + p]
        if p > 0 and k3[:k] == k2[:k] and k3[k + p:k + 2 * p] == body and k3[k + 2 * p:k + 3 * p] == body \
                and k3[k + 3 * p:] == k2[k + 2 * p:]:
            return k, p
    raise InternalError(f"the listing's runs of two and three passes do not repeat a pass ({len(two)} and "
                        f"{len(three)} ops; docs/model.md §9.1)")


@lru_cache(maxsize=512)
def _build(kernel: str, frozen: tuple[tuple[str, Any], ...]) -> Listing:
    cfg = dict(frozen)
    cfg["knobs"] = dict(cfg["knobs"])
    entry = registry.get(kernel)
    two, labels, notes = _records(entry, cfg, 2)
    three, _, _ = _records(entry, cfg, 3)
    ops2, ops3 = (_ops(kernel, r, labels, notes) for r in (two, three))
    k, p = _split(ops2, ops3)
    return Listing(kernel, cfg, ops3[:k], ops3[k + p:k + 2 * p], ops3[k + 3 * p:])


def build(kernel: str, fmt: Any = None, knobs: dict[str, str] | None = None, *, src_dtype: str | None = None,
          dst_dtype: str | None = None) -> Listing:
    """The listing of ``kernel`` for one configuration: fmt 1..4 / e2m1 / int4 / nf4 / e2m3 (dequant kernels;
    default: the kernel's first), src_dtype ("float16" / "bfloat16") and dst_dtype ("float8_e4m3fn" /
    "float8_e5m2") for quantize_mx (default: the first of each), knobs (docs/model.md §6; default: each knob's
    default). Runs the kernel (its compiled extension must be built)."""
    entry, cfg = _config(kernel, fmt, knobs, src_dtype, dst_dtype)
    frozen = tuple(sorted((k, tuple(sorted(v.items())) if k == "knobs" else v) for k, v in cfg.items()))
    return _build(entry.name, frozen)


def variants(kernel: str) -> list[Listing]:
    """The listing of every configuration of :func:`all_variant_configs`."""
    return [build(kernel, c.get("fmt"), c.get("knobs"), src_dtype=c.get("src_dtype"), dst_dtype=c.get("dst_dtype"))
            for c in all_variant_configs(kernel)]


def variant_diff(base: Listing, other: Listing) -> list[str]:
    """The lines in which ``other``'s listing differs from ``base``'s (a unified diff without context: ``-`` base
    only, ``+`` other only), as ``section  B<n> LABEL  mnemonic operands``."""
    return [d for d in difflib.unified_diff(base.lines(), other.lines(), lineterm="", n=0)
            if d[:1] in "+-" and not d.startswith(("+++", "---"))]


@lru_cache(maxsize=16)
def _kernel_mnemonics(kernel: str) -> frozenset[str]:
    from q7emu.analysis.trace import Trace

    entry = registry.get(kernel)
    out: set[str] = set()
    for c in all_variant_configs(kernel):
        _, cfg = _config(kernel, c.get("fmt"), c.get("knobs"), c.get("src_dtype"), c.get("dst_dtype"))
        raw, _, _ = entry.listing_run(2, cfg)          # entry, two passes, exit: every op the configuration issues
        ops = Trace.from_runs([(raw, {})]).records["op"]
        out.update(m.decode("ascii") for m in set(ops.tolist()))
    return frozenset(out)


def kernel_mnemonics(kernel: str) -> set[str]:
    """Every mnemonic the kernel issues in some configuration (read off one traced run of each configuration: the
    records' mnemonics only, no listing built)."""
    return set(_kernel_mnemonics(registry.get(kernel).name))


# ------------------------------------------------------------------------------------------ programs
def program(kernel: str, fmt: Any = None, knobs: dict[str, str] | None = None, *, src_dtype: str | None = None,
            dst_dtype: str | None = None) -> Any:
    """The program of one configuration of ``kernel`` (docs/asm.md §6; the options as :func:`build`'s): what
    ``q7emu listing KERNEL --asm`` prints, a :class:`q7emu.asm.Program`."""
    from q7emu.asm.kernels import kernel_program

    entry, cfg = _config(kernel, fmt, knobs, src_dtype, dst_dtype)
    if "fmt" in cfg:
        return kernel_program(entry.name, fmt=cfg["fmt"], group=entry.group_size, knobs=cfg["knobs"])
    return kernel_program(entry.name, src_dtype=cfg["src_dtype"], dst_dtype=cfg["dst_dtype"], knobs=cfg["knobs"])


def case_configuration(record: bytes, knobs: dict[str, str]) -> dict[str, Any]:
    """The listing configuration a case runs (its record's kernel, format or types, and the knobs that kernel
    reads): keyword arguments of :func:`build` / :func:`program`, with ``kernel``."""
    from q7emu.isa.opcodes import find_spec
    from q7emu.isa.records import decode_record

    rec = decode_record(record)
    spec = find_spec(rec)
    if spec is None or spec.kernel(rec) is None:
        raise InvalidArgument("record", record[:8].hex(), "runs no q7emu kernel")
    out: dict[str, Any] = spec.listing_configuration(rec)
    reads = spec.record_knobs(rec)
    out["knobs"] = {k: v for k, v in knobs.items() if k in reads}
    return out
