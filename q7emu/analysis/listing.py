"""Kernel listings: each kernel as its bundles, ops, operands and provenance.

The listing is *derived from the kernel sources*: ``tools/gen_listings.py`` parses each registry kernel's
sources (src/kernels/_dequant.pyx, _quantize_mx.pyx, kernel_fp8.pxi, kernel_ops.pxi) into
q7emu/analysis/listings.json (a statement tree of every op call, shared sequence call, branch and loop,
with the ``# B<n>`` comments). This module instantiates that tree for one kernel configuration; which
formats, knobs and dtypes a kernel has, and how its options become ``run()`` arguments, come from the
kernel registry (:mod:`q7emu.registry`):

* the branches whose condition the configuration decides are resolved (``if cfg.nan_gate`` under
  ``mx_scale=e8m0``; the per-format arms of ``decode_codes`` under ``--fmt``); the others are kept as
  marked variants;
* shared sequences (``narrow_fp8``, ``decode_codes``, ...) are inlined with their base bundle ``b``;
* register and immediate operands are evaluated from the kernel's enums and configuration.

``Listing.sections(expand=True)`` gives the exact op sequence of the kernel's entry and of one pass of
its main loop (inner loops unrolled), which firmware_tests/analysis/test_listing.py compares with a trace.
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from q7emu import registry
from q7emu.analysis.path_facts import (
    OpProvenance,
    classify,
    operands_match,
    seed_bundles,
    seed_operands,
    seed_write_conflicts,
)
from q7emu.errors import InvalidArgument
from q7emu.machine.machine import MACHINE_KNOBS
from q7emu.model.kernels import FMT_NAMES

LISTINGS_JSON = Path(__file__).with_name("listings.json")
#: every kernel with a listing (the registry's, in KernelId order)
KERNELS: tuple[str, ...] = registry.names()
_PREFIX = {"vec": "v", "wvec": "wv", "vbool": "vb", "pr": "pr"}


@lru_cache(maxsize=1)
def data() -> dict:
    """The parsed kernel sources (q7emu/listings.json)."""
    return json.loads(LISTINGS_JSON.read_text())


class _Unknown(Exception):
    pass


@dataclass
class Operand:
    """One operand of a listing op: kind (vec, wvec, vbool, pr, scalar), role, register index (or None
    when it depends on an unbound loop variable) or scalar value, and its source text."""

    kind: str                  # vec | wvec | vbool | pr | scalar
    role: str                  # src | dst
    reg: int | None            # register index (None when it depends on an unbound loop variable)
    value: int | None          # scalars: the immediate / count when known
    text: str                  # the source expression
    code: int | None = None    # scalars: the trace hook's register code (255 immediate, 254 offset, 253 count)

    def render(self, names: bool = False) -> str:
        """Assembly text: ``v23`` / ``v[cfg.byte_reg]`` / an immediate; ``names`` adds the register's name."""
        if self.kind == "scalar":
            return str(self.value) if self.value is not None else self.text
        prefix = _PREFIX[self.kind]
        r = f"{prefix}{self.reg}" if self.reg is not None else f"{prefix}[{_unwrap(self.text)}]"
        if names and self.reg is not None and re.fullmatch(r"[A-Za-z_]\w*", self.text):
            r += f"({self.text})"
        return r

    def to_json(self) -> dict:
        """JSON form: kind, role, reg, value, text."""
        return {"kind": self.kind, "role": self.role, "reg": self.reg, "value": self.value, "text": self.text}


def _unwrap(text: str) -> str:
    """``text`` without one pair of parentheses around the whole of it (``(a + b)`` -> ``a + b``; ``(a) + (b)``
    and ``a + (b)`` stay as they are)."""
    t = text.strip()
    if not (t.startswith("(") and t.endswith(")")):
        return t
    depth = 0
    for i, ch in enumerate(t):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and i < len(t) - 1:
            return t                    # the first "(" closes before the end
    return t[1:-1]


@dataclass
class Op:
    """One IVP op of a listing: its bundle index ``B<n>``, mnemonic, operands, provenance, comment and
    source line."""

    bundle: int | None
    mnemonic: str
    operands: list[Operand]
    provenance: OpProvenance
    comment: str | None
    source: str                # file:line of the call
    memory: str | None = None  # loads / stores: the base pointer expression
    rmw: tuple[int, ...] = ()  # indices of source operands that are also the destination

    def render_operands(self, names: bool = False) -> str:
        """The operands as assembly text: destinations, then ``[base + offset]`` for memory ops, then sources."""
        dst = [o for o in self.operands if o.role == "dst"]
        src = [o for i, o in enumerate(self.operands) if o.role == "src" and i not in self.rmw]
        parts = [o.render(names) for o in dst]
        if self.memory is not None:
            off = next((o for o in src if o.code == 254), None)
            parts.append(f"[{self.memory} + {off.render() if off else '0'}]")
            src = [o for o in src if o is not off]
        parts += [o.render(names) for o in src]
        return ", ".join(parts)

    def key(self) -> tuple:
        """(bundle, mnemonic, register operands, known immediates): what a trace must reproduce."""
        regs = tuple((o.kind, o.role, o.reg) for o in self.operands if o.kind != "scalar")
        imms = tuple(o.value for o in self.operands if o.kind == "scalar")
        return (self.bundle, self.mnemonic, regs, imms)

    def to_json(self) -> dict:
        """JSON form: bundle, mnemonic, text, operands, provenance, comment, source."""
        return {"bundle": self.bundle, "mnemonic": self.mnemonic, "text": f"{self.mnemonic} {self.render_operands()}",
                "operands": [o.to_json() for o in self.operands], "provenance": self.provenance.to_json(),
                "comment": self.comment, "source": self.source}


@dataclass
class Loop:
    """A ``for`` or ``while`` loop of the kernel source with its body (loop count or condition text)."""

    var: str | None
    count: int | str           # int, or the source text (while loops: the condition)
    body: list
    kind: str                  # for | while
    comment: str | None
    source: str

    def to_json(self) -> dict:
        """JSON form: loop kind, variable, count, comment, source, body."""
        return {"loop": self.kind, "var": self.var, "count": self.count, "comment": self.comment,
                "source": self.source, "body": [x.to_json() for x in self.body]}


@dataclass
class Branch:
    """A branch the configuration does not decide: every arm, with its condition."""

    arms: list[tuple[str | None, str, list]]   # (condition text, how the kernel sets it, body)
    source: str

    def to_json(self) -> dict:
        """JSON form: every arm's condition, how run() sets it, and body."""
        return {"branch": [{"cond": c, "set_by": s, "body": [x.to_json() for x in b]} for c, s, b in self.arms],
                "source": self.source}


@dataclass
class Call:
    """An inlined shared sequence."""

    func: str
    base: str
    body: list
    comment: str | None

    def to_json(self) -> dict:
        """JSON form: sequence name, base bundle, comment, body."""
        return {"sequence": self.func, "base": self.base, "comment": self.comment,
                "body": [x.to_json() for x in self.body]}


@dataclass
class Listing:
    """One kernel's listing for a configuration: the entry (before the main loop), one pass of the main
    loop and the exit (after it: a software-pipelined loop's last stage), with the branch arms met and taken."""

    kernel: str
    config: dict[str, Any]
    entry: list
    passes: list               # the main loop's body (one pass)
    loop: str                  # the main loop's condition
    taken: set[str] = field(default_factory=set)     # branch arms taken (file:line)
    arms: set[str] = field(default_factory=set)      # every branch arm met while walking
    exit: list = field(default_factory=list)         # after the main loop

    # -------------------------------------------------------------- flat views
    def ops(self, section: str = "pass") -> list[Op]:
        """Ops of ``section`` ("entry", "pass" or "exit") in listing order, loops shown once, variants all
        included."""
        out: list[Op] = []

        def rec(items: list[Any]) -> None:
            for it in items:
                if isinstance(it, Op):
                    out.append(it)
                elif isinstance(it, (Loop, Call)):
                    rec(it.body)
                elif isinstance(it, Branch):
                    for _, _, body in it.arms:
                        rec(body)
        rec({"entry": self.entry, "exit": self.exit}.get(section, self.passes))
        return out

    def mnemonics(self) -> set[str]:
        """Every mnemonic of the entry, the pass and the exit (all variants)."""
        return {o.mnemonic for o in self.ops("entry") + self.ops("pass") + self.ops("exit")}

    def to_json(self) -> dict:
        """JSON form: kernel, config, entry, main loop condition, pass, exit."""
        return {"kernel": self.kernel, "config": self.config, "entry": [x.to_json() for x in self.entry],
                "main_loop": self.loop, "pass": [x.to_json() for x in self.passes],
                "exit": [x.to_json() for x in self.exit], "seed": self.seed_report()}

    def seed_report(self) -> dict[str, Any]:
        """How much of one pass is the firmware's vocabulary: ``seed_named`` of ``pass_ops`` ops of the pass
        (loops shown once) are mnemonics docs/firmware.md places in this path (``share``, 0..1), and which of the
        path's ``bundles`` clean seed bundles have all their legible mnemonics in one bundle of the listing
        (``bundles_present``, addresses), and which of those also have the registers and immediates docs/firmware.md
        gives for them (``bundles_verbatim``; path_facts.SEED_OPERANDS); ``bundles_conflicting``: the path's seed
        bundles in which two ops write one register as docs/firmware.md gives them (address -> register ->
        mnemonics; docs/model.md §9 item 9), which no VLIW issue can keep whole."""
        ops = self.ops("entry") + self.ops("pass") + self.ops("exit")
        pass_ops = self.ops("pass")
        named = sum(o.provenance.kind == "firmware" for o in pass_ops)
        by_bundle: dict[Any, list[Op]] = {}
        for o in ops:
            by_bundle.setdefault(o.bundle, []).append(o)
        seeds = seed_bundles(self.kernel)
        present = [a for a, want in seeds.items()
                   if any(want <= {o.mnemonic for o in have} for have in by_bundle.values())]

        def op_ok(o: Op, address: str, mnemonic: str) -> bool:
            want = seed_operands(address, mnemonic)
            return o.mnemonic == mnemonic and (not want or operands_match(want, o.render_operands().split(", ")))
        exact = [a for a in present
                 if any(all(any(op_ok(o, a, m) for o in have) for m in seeds[a]) for have in by_bundle.values())]
        conflicting = {a: {reg: list(ms) for reg, ms in c.items()} for a in seeds if (c := seed_write_conflicts(a))}
        return {"seed_named": named, "pass_ops": len(pass_ops), "share": named / len(pass_ops) if pass_ops else 0.0,
                "bundles": len(seeds), "bundles_present": present, "bundles_verbatim": exact,
                "bundles_conflicting": conflicting}

    # -------------------------------------------------------------- text
    def format(self, names: bool = False) -> str:
        """The listing as text: a header with provenance counts, then every bundle of the entry and of
        one pass (``names`` shows register names beside indices)."""
        cfg = ", ".join(f"{k}={v}" for k, v in self.config.items() if v is not None) or "all variants"
        lines = [f"{self.kernel}  ({cfg})",
                 "provenance: firmware = docs/firmware.md places this mnemonic in this path; firmware~ = same op in "
                 "the other "
                 "accumulate form; q7emu = q7emu's reconstruction"]
        counts = _prov_counts(self.ops("entry") + self.ops("pass") + self.ops("exit"))
        lines.append("ops: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
        seed = self.seed_report()
        lines.append(f"seed-named: {seed['seed_named']} of {seed['pass_ops']} ops of one pass "
                     f"({100 * seed['share']:.0f} %); seed bundles whose mnemonics issue together: "
                     f"{len(seed['bundles_present'])} of {seed['bundles']}"
                     + (f" ({', '.join('@' + a for a in seed['bundles_present'])})" if seed["bundles_present"] else "")
                     + f"; with the seed's registers and immediates: {len(seed['bundles_verbatim'])}"
                     + (f" ({', '.join('@' + a for a in seed['bundles_verbatim'])})"
                        if seed["bundles_verbatim"] else ""))
        if seed["bundles_conflicting"]:
            lines.append("seed bundles that write one register twice as given (no VLIW issue keeps both; "
                         "docs/model.md §9 item 9): "
                         + "; ".join(f"@{a} " + ", ".join(f"{reg} by {' and '.join(ms)}" for reg, ms in c.items())
                                     for a, c in seed["bundles_conflicting"].items()))
        lines.append("")
        lines.append("entry:")
        _fmt_items(self.entry, lines, 1, names)
        lines.append(f"main loop: while {self.loop}  -- one pass:")
        _fmt_items(self.passes, lines, 1, names)
        if self.exit:
            lines.append("exit (after the main loop):")
            _fmt_items(self.exit, lines, 1, names)
        return "\n".join(lines)


def _prov_counts(ops: list[Op]) -> dict[str, int]:
    c = {"firmware": 0, "firmware~": 0, "q7emu": 0}
    for o in ops:
        c[o.provenance.kind] += 1
    return c


def _fmt_items(items: list, lines: list[str], depth: int, names: bool, last: list | None = None) -> None:
    ind = "  " * depth
    last = last if last is not None else [None]
    for it in items:
        if isinstance(it, Op):
            if (it.bundle, it.comment) != last[0]:
                head = f"B{it.bundle}" if it.bundle is not None else "B?"
                com = re.sub(r"^(B\d+(\.\.B\d+)?|b\s*\+\s*\d+):\s*", "", it.comment or "")
                if last[0] is not None and it.bundle is not None and it.bundle == last[0][0]:
                    if com:                             # more of the same bundle (a resolved variant's ops)
                        lines.append(f"{ind}     ; {com}")
                else:
                    lines.append(f"{ind}{head:<4} ; {com}".rstrip(" ;"))
                last[0] = (it.bundle, it.comment)
            text = f"{it.mnemonic} {it.render_operands(names)}"
            lines.append(f"{ind}     {text:<46} {it.provenance.label}")
        elif isinstance(it, Loop):
            head = f"for {it.var} in range({it.count}):" if it.kind == "for" else f"while {it.count}:"
            lines.append(f"{ind}{head}" + (f"   # {it.comment}" if it.comment else ""))
            last[0] = None
            _fmt_items(it.body, lines, depth + 1, names, last)
            last[0] = None
        elif isinstance(it, Call):
            lines.append(f"{ind}-- {it.func} (b = {it.base})" + (f"   # {it.comment}" if it.comment else ""))
            _fmt_items(it.body, lines, depth + 1, names, last)
        elif isinstance(it, Branch):
            for k, (cond, how, body) in enumerate(it.arms):
                kw = "if" if k == 0 else ("elif" if cond is not None else "else")
                setter = f"   (set by run(): {how})" if how else ""
                lines.append(f"{ind}[variant] {kw} {cond or ''}".rstrip() + setter)
                last[0] = None
                _fmt_items(body, lines, depth + 1, names, last)
            last[0] = None


# ---------------------------------------------------------------------- configuration
def _norm_fmt(fmt: Any) -> int | None:
    """A dequant_fmt given as 1..4 or a name (e2m1, int4, nf4, e2m3); None stays None."""
    if fmt is None:
        return None
    if isinstance(fmt, str) and fmt.lower() in FMT_NAMES:
        return FMT_NAMES[fmt.lower()]
    try:
        return int(fmt)
    except (TypeError, ValueError):
        raise InvalidArgument("fmt", fmt, "must be 1..4 or one of e2m1, int4, nf4, e2m3") from None


def _run_env(kernel: str, fmt: int | None, knobs: dict[str, str], src_dtype: str | None,
             dst_dtype: str | None) -> dict[str, Any]:
    """The arguments the kernel module's run() would receive (only those the options decide), plus the
    extension's ``build_rodata`` (needs the compiled extension)."""
    entry = registry.get(kernel)
    env = entry.run_params(fmt=fmt, group_size=entry.group_size, knobs=knobs, src_dtype=src_dtype,
                           dst_dtype=dst_dtype)
    env["build_rodata"] = entry.load().build_rodata
    return env


class _Walker:
    def __init__(self, kernel: str, module: dict, cfg: SimpleNamespace, expand: bool, run_assign: dict[str, str],
                 possible: list[SimpleNamespace]) -> None:
        self.possible = possible
        self.kernel = kernel
        self.mod = module
        self.wrappers = data()["wrappers"]
        self.cfg = cfg
        self.expand = expand
        self.run_assign = run_assign
        self.taken: set[str] = set()
        self.arms: set[str] = set()

    # scope: name -> (value or _UNK, source text)
    def ev(self, text: str, scope: dict[str, tuple[Any, str]], cfg: SimpleNamespace | None = None) -> Any:
        names: dict[str, Any] = dict(self.mod["enums"])
        names["cfg"] = self.cfg if cfg is None else cfg
        for k, (v, _t) in scope.items():
            if v is not _UNK:
                names[k] = v
        try:
            return eval(text.replace("&", ""), {"__builtins__": {"range": range}}, names)
        except Exception:
            raise _Unknown(text) from None

    def subst(self, text: str, scope: dict[str, tuple[Any, str]]) -> str:
        """``text`` with parameters replaced by the caller's argument text (Cython casts dropped)."""
        def rep(m: re.Match[str]) -> str:
            v = scope.get(m.group(0))
            if v is None:
                return m.group(0)
            return v[1] if re.fullmatch(r"[\w.\[\]]+", v[1]) else f"({v[1]})"
        text = re.sub(r"<[^<>]*>", "", text)
        return re.sub(r"(?<![\w.])[A-Za-z_]\w*", rep, text)

    def func(self, name: str, scope: dict[str, tuple[Any, str]]) -> list:
        f = self.mod["functions"][name]
        return self.body(f["body"], scope, f["file"])

    def body(self, nodes: list[dict], scope: dict, file: str) -> list:
        out: list = []
        for n in nodes:
            k = n["kind"]
            src = f"{file} {n['line']}"
            if k == "op":
                out.append(self.op(n, scope, src))
            elif k == "call":
                f = self.mod["functions"][n["func"]]
                sub: dict[str, tuple[Any, str]] = {}
                for p, a in zip(f["params"], n["args"]):
                    if p in ("tr", "rf"):
                        continue
                    text = self.subst(a, scope)
                    try:
                        sub[p] = (self.ev(a, scope), text)
                    except _Unknown:
                        sub[p] = (_UNK, text)
                inner = self.func(n["func"], sub)
                if self.expand:
                    out.extend(inner)
                else:
                    base = sub.get("b", (None, "-"))
                    out.append(Call(n["func"], str(base[0]) if base[0] not in (None, _UNK) else base[1], inner,
                                    n.get("comment")))
            elif k == "if":
                chosen = self.choose(n["arms"], scope)
                if chosen is None:
                    if self.expand:
                        raise InvalidArgument("configuration", n["arms"][0]["cond"],
                                              "a trace-exact listing needs every branch decided (give --fmt / --knob)")
                    # arms some configuration consistent with the options can take
                    reach = set()
                    for pc in self.possible:
                        a = self.choose(n["arms"], self._closed(scope, pc), pc)
                        if a is not None:
                            reach.add(a["line"])
                    variants = []
                    implicit = [{"cond": None, "body": [], "line": f"{n['arms'][0]['line']}:else"}] \
                        if n["arms"][-1]["cond"] is not None else []
                    for a in n["arms"] + implicit:
                        if a["line"] not in reach:
                            continue
                        self.arms.add(f"{file}:{a['line']}")
                        cond = self.subst(a["cond"], scope) if a["cond"] else None
                        variants.append((cond, self._how(cond), self.body(a["body"], scope, file)))
                    if len(variants) == 1:
                        out.extend(variants[0][2])
                    else:
                        out.append(Branch(variants, src))
                else:
                    self.arms.add(f"{file}:{chosen['line']}")
                    self.taken.add(f"{file}:{chosen['line']}")
                    out.extend(self.body(chosen["body"], scope, file))
            elif k == "for":
                try:
                    count = int(self.ev(n["count"], scope))
                except _Unknown:
                    count = None
                if self.expand:
                    if count is None:
                        raise InvalidArgument("configuration", n["count"], "loop count not known")
                    for i in range(count):
                        s2 = dict(scope)
                        s2[n["var"]] = (i, str(i))
                        out.extend(self.body(n["body"], s2, file))
                else:
                    s2 = dict(scope)
                    s2[n["var"]] = (_UNK, n["var"])
                    out.append(Loop(n["var"], count if count is not None else self.subst(n["count"], scope),
                                    self.body(n["body"], s2, file), "for", n.get("comment"), src))
            elif k == "while":
                out.append(Loop(None, n["cond"], self.body(n["body"], scope, file), "while", n.get("comment"), src))
        return out

    def choose(self, arms: list[dict], scope: dict, cfg: SimpleNamespace | None = None) -> dict | None:
        """The arm the configuration takes, or None when a condition cannot be decided."""
        for a in arms:
            if a["cond"] is None:
                return a
            try:
                if self.ev(a["cond"], scope, cfg):
                    return a
            except _Unknown:
                return None
        return {"cond": None, "body": [], "line": f"{arms[0]['line']}:else"}   # no arm taken (implicit else)

    def _closed(self, scope: dict, cfg: SimpleNamespace) -> dict:
        """``scope`` with unknown parameters re-evaluated from their source text under ``cfg``."""
        out = {}
        for k, (v, t) in scope.items():
            try:
                v = self.ev(t, {}, cfg)
            except _Unknown:
                pass
            out[k] = (v, t)
        return out

    def _how(self, cond: str | None) -> str:
        if not cond:
            return ""
        fields = re.findall(r"cfg\.(\w+)", cond)
        return "; ".join(f"cfg.{f} = {self.run_assign[f]}" for f in fields if f in self.run_assign)

    def op(self, n: dict, scope: dict, src: str) -> Op:
        w = self.wrappers[n["wrapper"]]
        args = dict(zip(w["params"], n["args"]))
        mnem = w["mnemonic"] or json.loads(args[w["mnemonic_param"]])
        try:
            bundle = int(self.ev(args[w["bundle_param"]], scope))
        except _Unknown:
            bundle = None
        ops: list[Operand] = []
        dst_params = {o["param"] for o in w["operands"] if o["role"] == "dst"}
        rmw = []
        for i, o in enumerate(w["operands"]):
            a = args[o["param"]]
            text = self.subst(a, scope).replace("&", "")
            try:
                val = int(self.ev(a, scope))
            except (_Unknown, TypeError, ValueError):
                val = None
            if val is None:   # show the configuration fields that are known
                text = re.sub(r"cfg\.(\w+)", lambda m: str(int(getattr(self.cfg, m.group(1))))
                              if isinstance(getattr(self.cfg, m.group(1), None), (int, bool)) else m.group(0), text)
            if o["kind"] == "scalar":
                ops.append(Operand("scalar", "src", None, val, text, o["code"]))
            else:
                ops.append(Operand(o["kind"], o["role"], val, None, text))
                if o["role"] == "src" and o["param"] in dst_params:
                    rmw.append(i)
        memory = self.subst(args[w["memory"][0]], scope) if w["memory"] else None
        return Op(bundle, mnem, ops, classify(self.kernel, mnem), n.get("comment"), src, memory, tuple(rmw))


class _UnkType:
    def __repr__(self) -> str:
        return "?"


_UNK = _UnkType()


def _resolve_cfg(kernel: str, f: int | None, knobs: dict[str, str], src_dtype: str | None,
                 dst_dtype: str | None) -> tuple[SimpleNamespace, dict[str, str]]:
    """Evaluate run()'s ``rodata = ...`` / ``cfg.X = ...`` assignments for the options given (fields the
    options do not decide stay unset)."""
    d = data()
    mod = d["modules"][d["kernels"][kernel]["module"]]
    names = dict(mod["enums"])
    names.update(_run_env(kernel, f, knobs, src_dtype, dst_dtype))
    cfg = SimpleNamespace()
    names["cfg"] = cfg
    assign = {}
    for lhs, rhs in mod["run"]["assign"]:
        if lhs.startswith("cfg."):
            assign[lhs[4:]] = rhs
        try:
            val = eval(rhs, {"__builtins__": {}}, names)
        except Exception:
            continue
        if lhs.startswith("cfg."):
            setattr(cfg, lhs[4:], val)
        else:
            names[lhs] = val
    return cfg, assign


def build(kernel: str, fmt: Any = None, knobs: dict[str, str] | None = None, *, src_dtype: str | None = None,
          dst_dtype: str | None = None, expand: bool = False) -> Listing:
    """The listing of ``kernel`` for the configuration the options decide.

    fmt: 1..4 / e2m1 / int4 / nf4 / e2m3 (dequant kernels); knobs: model knobs (docs/model.md) -- only the ones
    given are applied, every branch they leave open is shown as a variant; src_dtype ("float16" /
    "bfloat16") and dst_dtype ("float8_e4m3fn" / "float8_e5m2") for quantize_mx.
    ``expand=True`` unrolls loops and inlines everything (needs every branch decided): the exact op
    sequence executed, as used by the trace test."""
    entry = registry.find(kernel) if isinstance(kernel, str) else None
    if entry is None:
        raise InvalidArgument("kernel", kernel, f"must be one of {', '.join(KERNELS)}")
    knobs = dict(knobs or {})
    for k, v in knobs.items():
        if k not in MACHINE_KNOBS or v not in MACHINE_KNOBS[k]:
            raise InvalidArgument("knob", f"{k}={v}", f"unknown knob or value; known: {', '.join(MACHINE_KNOBS)}")
    f = _norm_fmt(fmt)
    if not entry.fmts:
        if f is not None:
            raise InvalidArgument("fmt", fmt, f"{kernel} has no fmt (use --src-dtype / --dst-dtype)")
    elif f is not None and f not in entry.fmts:
        raise InvalidArgument("fmt", fmt, f"{kernel} runs fmt {', '.join(map(str, entry.fmts))}")
    if f is None and len(entry.fmts) == 1:
        f = entry.fmts[0]
    d = data()
    kinfo = d["kernels"][kernel]
    mod = d["modules"][kinfo["module"]]
    cfg, assign = _resolve_cfg(kernel, f, knobs, src_dtype, dst_dtype)
    possible = []
    for pc in all_variant_configs(kernel):
        pk = pc.get("knobs", {})
        if any(pk.get(k, v) != v for k, v in knobs.items()) or (f is not None and pc.get("fmt", f) != f) \
                or (src_dtype is not None and pc.get("src_dtype", src_dtype) != src_dtype) \
                or (dst_dtype is not None and pc.get("dst_dtype", dst_dtype) != dst_dtype):
            continue
        possible.append(_resolve_cfg(kernel, pc.get("fmt"), pk, pc.get("src_dtype"), pc.get("dst_dtype"))[0])
    walker = _Walker(kernel, mod, cfg, expand, assign, possible)
    fn = mod["functions"][kinfo["function"]]
    items = walker.func(kinfo["function"], {})
    # entry = everything before the main (top-level while) loop; pass = its body
    idx = next((i for i, it in enumerate(items) if isinstance(it, Loop) and it.kind == "while"), None)
    if idx is None:  # pragma: no cover - every kernel has a main loop
        raise InvalidArgument("kernel", kernel, "no main loop found in the source")
    main = items[idx]
    config: dict[str, Any] = {"fmt": f} if entry.fmts else {"src_dtype": src_dtype, "dst_dtype": dst_dtype}
    config.update({k: knobs[k] for k in entry.knobs if k in knobs})
    lst = Listing(kernel, config, items[:idx], main.body, main.count, walker.taken, walker.arms, items[idx + 1:])
    lst.source = f"{fn['file']}:{kinfo['function']}"  # type: ignore[attr-defined]
    return lst


def kernel_mnemonics(kernel: str) -> set[str]:
    """Every mnemonic the kernel's source can issue (all variants)."""
    return build(kernel).mnemonics()


def all_variant_configs(kernel: str) -> list[dict[str, Any]]:
    """Configurations (build() keyword arguments) that together decide every branch of ``kernel`` both ways.

    Every fmt (or every src x dst dtype) of the kernel times every value of each knob the kernel reads
    (registry ``knobs``); the other knobs of its op stay at their default. A kernel with fmts gets all of
    its op's knobs in each configuration, one without gets only its own."""
    entry = registry.get(kernel)
    op_knobs = [k for k in MACHINE_KNOBS if any(k in e.knobs for e in registry.for_opcode(entry.opcode))]
    names = op_knobs if entry.fmts else [k for k in op_knobs if k in entry.knobs]
    values = [MACHINE_KNOBS[k] if k in entry.knobs else MACHINE_KNOBS[k][:1] for k in names]
    if entry.fmts:
        axes = [[{"fmt": f} for f in entry.fmts]]
    else:
        axes = [[{"src_dtype": s} for s in entry.src_dtypes], [{"dst_dtype": d} for d in entry.dst_dtypes]]
    out = []
    for parts in itertools.product(*axes):
        for vals in itertools.product(*values):
            cfg: dict[str, Any] = {}
            for p in parts:
                cfg.update(p)
            cfg["knobs"] = dict(zip(names, vals))
            out.append(cfg)
    return out
