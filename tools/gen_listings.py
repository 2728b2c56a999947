#!/usr/bin/env python3
"""Derive the kernel listings from the kernel sources: writes q7emu/analysis/listings.json.

The kernels (src/_dequant.pyx, src/_quantize_mx.pyx, the shared src/kernel_fp8.pxi) issue every IVP op
through the instruction layer of src/kernel_ops.pxi (``V3(tr, rf, <bundle>, "addnx16", P.addnx16, ...)``,
``I_packvrnrnx48(tr, rf, <bundle>, ...)``). This tool parses that small, regular subset of Cython:

* ``cdef enum:`` blocks -> register / constant slot numbers (``vSIG = 23``);
* the instruction wrappers (functions taking ``TR tr`` whose body calls ``tr_begin``) -> each wrapper's
  mnemonic (a literal or its ``op`` parameter), bundle parameter, and operands in the order the trace
  hook records them (``tr_vec(tr, ROLE_SRC, s, ...)`` -> vec source from parameter ``s``);
* the shared sequences and kernel bodies (other functions taking ``TR tr``) -> a statement tree of
  wrapper calls, sequence calls, ``if``/``elif``/``else`` and ``for``/``while`` loops, with the
  ``# B<n>: ...`` comment in force at each op;
* ``run()``'s ``cfg.X = ...`` assignments -> how the kernel configuration follows from the knobs.

The kernels, their modules and source files come from the kernel registry (q7emu/registry.py).
Nothing is typed by hand: q7emu/analysis/listing.py instantiates this tree for a kernel configuration, and
firmware_tests/test_listing.py checks that (a) regenerating gives the committed file and (b) the
instantiated listing is exactly the (bundle, mnemonic, operands) sequence the kernel executes (trace).

Usage: python tools/gen_listings.py [--check]    (--check: exit 1 if q7emu/analysis/listings.json is stale)
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "q7emu" / "analysis" / "listings.json"
sys.path.insert(0, str(ROOT))

from q7emu import registry  # noqa: E402  (imports without the compiled extensions)

#: module -> source files in include order (later enums override earlier ones, as in Cython)
MODULES: dict[str, tuple[str, ...]] = registry.modules()
#: listing name -> (module, kernel function)
KERNELS: dict[str, tuple[str, str]] = {e.name: (e.module, e.function) for e in registry.KERNELS}
TRACE_KINDS = {"tr_vec": "vec", "tr_wvec": "wvec", "tr_vbool": "vbool", "tr_pr": "pr", "tr_scalar": "scalar"}


# ---------------------------------------------------------------------- lexical helpers
def _scan(text: str) -> Iterator[tuple[str, int, bool]]:
    """(character, bracket depth after it, inside a string literal) for every character of ``text``;
    quotes are tracked (a bracket, comma or ``#`` inside a string counts for nothing)."""
    d, q = 0, None
    for ch in text:
        if q:
            if ch == q:
                q = None
            yield ch, d, True
        elif ch in "\"'":
            q = ch
            yield ch, d, True
        else:
            if ch in "([{":
                d += 1
            elif ch in ")]}":
                d -= 1
            yield ch, d, False


def _strip_comment(line: str) -> str:
    """``line`` without its ``#`` comment (a ``#`` inside a string literal is kept)."""
    out = []
    for ch, _d, quoted in _scan(line):
        if ch == "#" and not quoted:
            break
        out.append(ch)
    return "".join(out).rstrip()


def _depth(text: str) -> int:
    """Open brackets left at the end of ``text`` (> 0: the logical line continues)."""
    d = 0
    for _ch, d, _q in _scan(text):  # noqa: B007 - the depth after the last character is the result
        pass
    return d


def logical_lines(path: Path) -> list[dict]:
    """(indent, code, comment, lineno) per logical line; bracket continuations joined; docstrings dropped."""
    raw = path.read_text().splitlines()
    out: list[dict] = []
    i = 0
    while i < len(raw):
        line = raw[i]
        lineno = i + 1
        stripped = line.strip()
        i += 1
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip(" "))
        if stripped.startswith('"""') or stripped.startswith("'''"):
            quote = stripped[:3]
            if not (len(stripped) >= 6 and stripped.endswith(quote)):
                while i < len(raw) and quote not in raw[i]:
                    i += 1
                i += 1
            continue
        if stripped.startswith("#"):
            out.append({"indent": indent, "code": "", "comment": stripped[1:].strip(), "line": lineno})
            continue
        code = _strip_comment(line).strip()
        while _depth(code) > 0 and i < len(raw):
            code += " " + _strip_comment(raw[i]).strip()
            i += 1
        out.append({"indent": indent, "code": code, "comment": None, "line": lineno})
    return out


def split_args(text: str) -> list[str]:
    """The comma-separated arguments of a call's argument text, split at bracket depth 0, stripped."""
    args, cur = [], []
    for ch, d, quoted in _scan(text):
        if ch == "," and d == 0 and not quoted:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        args.append("".join(cur).strip())
    return args


CALL = re.compile(r"^([A-Za-z_]\w*)\((.*)\)$")
FUNC = re.compile(r"^cdef\s+(?:inline\s+)?void\s+(\w+)\((.*)\)\s*(?:noexcept\s*)?(?:nogil\s*)?:$")
DEF = re.compile(r"^def\s+(\w+)\((.*)\)\s*:$")


def _params(text: str) -> list[dict]:
    out = []
    for p in split_args(text):
        p = p.split("=")[0].strip()
        m = re.match(r"^(.*?)([A-Za-z_]\w*)$", p)
        out.append({"type": m.group(1).strip(), "name": m.group(2)})
    return out


def _blocks(lines: list[dict], start: int, indent: int) -> tuple[list[dict], int]:
    """Lines of the block starting at ``start`` whose indent is > ``indent`` (comments included)."""
    body = []
    i = start
    while i < len(lines):
        ln = lines[i]
        if ln["code"] and ln["indent"] <= indent:
            break
        if ln["comment"] is not None and ln["indent"] <= indent:
            # a comment at the outer level belongs to what follows the block
            j = i
            while j < len(lines) and lines[j]["comment"] is not None:
                j += 1
            if j >= len(lines) or lines[j]["indent"] <= indent:
                break
        body.append(ln)
        i += 1
    return body, i


# ---------------------------------------------------------------------- parse a module
def parse_file(path: Path, rel: str, acc: dict) -> None:
    """Add one source file's ``cdef enum`` values, ``TR tr`` functions and run() assignments to ``acc``."""
    lines = logical_lines(path)
    i = 0
    while i < len(lines):
        ln = lines[i]
        code = ln["code"]
        if ln["indent"] == 0 and code == "cdef enum:":
            body, i = _blocks(lines, i + 1, 0)
            prev = None
            for b in body:
                m = re.match(r"^(\w+)\s*=\s*(.+)$", b["code"])
                bare = re.match(r"^(\w+)$", b["code"])
                if m:
                    acc["enum_src"].append([m.group(1), m.group(2).strip(), rel, b["line"]])
                    prev = m.group(1)
                elif bare:          # C: one more than the member before it (0 for the first)
                    acc["enum_src"].append([bare.group(1), f"{prev} + 1" if prev else "0", rel, b["line"]])
                    prev = bare.group(1)
            continue
        m = FUNC.match(code) if ln["indent"] == 0 else None
        if m:
            name, params = m.group(1), _params(m.group(2))
            body, i = _blocks(lines, i + 1, 0)
            if params and params[0]["type"] == "TR":
                acc["functions"][name] = {"params": params, "body": body, "file": rel, "line": ln["line"]}
            continue
        m = DEF.match(code) if ln["indent"] == 0 else None
        if m and m.group(1) == "run":
            body, i = _blocks(lines, i + 1, 0)
            acc["run"] = {"params": [p["name"] for p in _params(m.group(2))], "file": rel,
                          "assign": [[b["code"].split("=", 1)[0].strip(), b["code"].split("=", 1)[1].strip()]
                                     for b in body if re.match(r"^(cfg\.\w+|rodata)\s*=[^=]", b["code"])]}
            continue
        i += 1


def eval_enums(enum_src: list) -> dict[str, int]:
    """The enum values, evaluated in source order (later ones may use earlier ones)."""
    env: dict[str, int] = {}
    for name, expr, _rel, _line in enum_src:
        env[name] = int(eval(expr, {"__builtins__": {}}, dict(env)))
    return env


def parse_wrapper(fn: dict) -> dict:
    """An instruction wrapper's mnemonic (literal or parameter), bundle parameter, memory parameter
    and operands in trace-hook order."""
    text = "\n".join(b["code"] for b in fn["body"])
    m = re.search(r"tr_begin\(tr,\s*([^,]+),\s*(\w+)\)", text)
    op = m.group(1).strip()
    operands = []
    for call in re.finditer(r"\b(tr_vec|tr_wvec|tr_vbool|tr_pr|tr_scalar)\(tr,\s*([^;]*?)\)(?=\s*(?:;|$|\n))", text):
        a = split_args(call.group(2))
        kind = TRACE_KINDS[call.group(1)]
        if kind == "scalar":
            operands.append({"kind": kind, "role": "src", "code": int(a[0]), "param": a[1].replace("[0]", "")})
        else:
            operands.append({"kind": kind, "role": "src" if a[0] == "ROLE_SRC" else "dst", "param": a[1]})
    pnames = [p["name"] for p in fn["params"]]
    mem = [p["name"] for p in fn["params"] if "uint8_t*" in p["type"].replace(" ", "")]
    return {"mnemonic": json.loads(op) if op.startswith('"') else None,
            "mnemonic_param": None if op.startswith('"') else op,
            "bundle_param": m.group(2), "params": pnames, "memory": mem, "operands": operands,
            "file": fn["file"]}


BUNDLE_TAG = re.compile(r"^(?:B\d+|b\s*\+\s*\d+|[A-Z][A-Z0-9]*_[A-Z0-9_]+(?:\s*\+\s*\w+)?):")


def parse_body(lines: list[dict], wrappers: set[str], seqs: set[str]) -> list[dict]:
    """Statement tree of one function body (``lines`` all indented deeper than the function).

    Comments: a comment block that starts with a bundle tag (``# B12: ...``, ``# b+3: ...``) stays in force
    for the ops that follow it in the same block, up to the next comment; any other comment is a note on the
    statement right after it only. A compound statement ends the comment in force."""
    out: list[dict] = []
    comment, fresh = None, False
    if not lines:
        return out
    base = min(line["indent"] for line in lines if line["code"])
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln["comment"] is not None:
            if ln["indent"] >= base:
                joins = fresh and comment and not BUNDLE_TAG.match(ln["comment"])
                comment = comment + " " + ln["comment"] if joins else ln["comment"]
                fresh = True
            i += 1
            continue
        tagged = comment is not None and bool(BUNDLE_TAG.match(comment))
        note = comment if (fresh or tagged) else None       # for ops
        lead = comment if fresh else None                   # for calls and compound statements
        fresh = False
        code = ln["code"]
        m = re.match(r"^(if|elif|while)\s+(.+):$", code) or re.match(r"^(else):$", code) \
            or re.match(r"^(for)\s+(\w+)\s+in\s+range\((.+)\):$", code)
        if m:
            body, j = _blocks(lines, i + 1, ln["indent"])
            sub = parse_body(body, wrappers, seqs)
            kw = m.group(1)
            if kw == "if":
                out.append({"kind": "if", "arms": [{"cond": m.group(2), "body": sub, "line": ln["line"]}],
                            "line": ln["line"], "comment": lead})
            elif kw in ("elif", "else"):
                out[-1]["arms"].append({"cond": m.group(2) if kw == "elif" else None, "body": sub, "line": ln["line"]})
            elif kw == "for":
                out.append({"kind": "for", "var": m.group(2), "count": m.group(3), "body": sub, "line": ln["line"],
                            "comment": lead})
            else:
                out.append({"kind": "while", "cond": m.group(2), "body": sub, "line": ln["line"], "comment": lead})
            comment = None
            i = j
            continue
        m = CALL.match(code)
        if m and m.group(1) in wrappers:
            out.append({"kind": "op", "wrapper": m.group(1), "args": split_args(m.group(2)), "line": ln["line"],
                        "comment": note})
        elif m and m.group(1) in seqs:
            out.append({"kind": "call", "func": m.group(1), "args": split_args(m.group(2)), "line": ln["line"],
                        "comment": lead})
        if not tagged:
            comment = None
        i += 1
    return out


def _symbol_keys(body: list[dict], func: str, seen: dict[str, int]) -> None:
    """Replace each statement's source line by a key made of symbols (listings.json is keyed by symbol, so
    an edit changes only the entries it touches): ``func:BUNDLE_LABEL:wrapper/mnemonic#n`` for an op,
    ``func:call:seq#n`` for a sequence call, ``func:if:cond#n`` (arms ``.../arm<j>``), ``func:for:var#n``,
    ``func:while:cond#n``; ``n`` counts the same key earlier in the function."""
    def key(text: str) -> str:
        n = seen.get(text, 0)
        seen[text] = n + 1
        return f"{func}:{text}#{n}"
    for st in body:
        kind = st["kind"]
        if kind == "op":
            a = st["args"]
            mnem = next((x for x in a if x.startswith('"')), st["wrapper"]).strip('"')
            st["line"] = key(f"{a[2] if len(a) > 2 else '?'}:{mnem}".replace(" ", ""))
        elif kind == "call":
            st["line"] = key(f"call:{st['func']}")
        elif kind == "if":
            st["line"] = key(f"if:{st['arms'][0]['cond']}".replace(" ", ""))
            for j, arm in enumerate(st["arms"]):
                arm["line"] = f"{st['line']}/arm{j}"
                _symbol_keys(arm["body"], func, seen)
        else:
            st["line"] = key(f"{kind}:{st.get('var') or st.get('cond')}".replace(" ", ""))
            _symbol_keys(st["body"], func, seen)


def build() -> dict:
    """The listings data of every registry kernel (the content of q7emu/analysis/listings.json)."""
    sources = {}
    modules = {}
    wrappers_all: dict[str, dict] = {}
    for mod, files in MODULES.items():
        acc: dict = {"enum_src": [], "functions": {}, "run": None}
        for rel in files:
            p = ROOT / rel
            sources[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            parse_file(p, rel, acc)
        wrappers = {n: parse_wrapper(f) for n, f in acc["functions"].items()
                    if any("tr_begin(" in b["code"] for b in f["body"])}
        for n, w in wrappers.items():
            wrappers_all.setdefault(n, w)
        seq_names = set(acc["functions"]) - set(wrappers)
        funcs = {}
        for n in sorted(seq_names):
            f = acc["functions"][n]
            body = parse_body(f["body"], set(wrappers), seq_names)
            _symbol_keys(body, n, {})
            funcs[n] = {"params": [p["name"] for p in f["params"]], "file": f["file"], "body": body}
        modules[mod] = {"enums": eval_enums(acc["enum_src"]), "wrappers": sorted(wrappers),
                        "functions": funcs, "run": acc["run"]}
    return {"format": "q7emu-listings", "version": 1,
            "generator": "tools/gen_listings.py", "sources": sources,
            "kernels": {k: {"module": m, "function": f} for k, (m, f) in KERNELS.items()},
            "wrappers": dict(sorted(wrappers_all.items())), "modules": modules}


def render(data: dict) -> str:
    """The listings data as the committed JSON text."""
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    """Write q7emu/analysis/listings.json (``--check``: exit 1 if it is stale); returns the exit status."""
    text = render(build())
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python tools/gen_listings.py", file=sys.stderr)
            return 1
        print(f"{OUT.relative_to(ROOT)} is up to date")
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
