"""The package's layers (docs/ARCHITECTURE.md): every import of q7emu/**/*.py, module-level or inside a
function, goes down the layer stack or stays in its own layer, and the import graph has no cycle.

Layers, top to bottom (a module may import its own layer and every layer below it)::

    q7emu.cli
    q7emu.analysis
    q7emu.machine
    q7emu.isa
    q7emu.registry
    q7emu.kernels | q7emu.golden     siblings that never import each other
    q7emu.primitives
    q7emu.model
    q7emu.fileio
    q7emu.errors | q7emu._version

The layers are read from the import-linter ``layers`` contract in pyproject.toml, so the two checks cannot
drift apart.

``q7emu/__init__.py`` (and ``__main__``) is the public facade above every layer: no layered module imports
a name from it (``import q7emu`` / ``from q7emu import dequantize``); ``from q7emu import golden`` names the
sub-package and counts as an import of ``q7emu.golden``.

The checker reads the source with :mod:`ast` (no module is imported), so it is independent of
import-linter, which CI runs with the same layers. ``python firmware_tests/test_layers.py`` prints every
import with its layers, then the violations and cycles.
"""
from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "q7emu"

def _contract_layers() -> tuple[dict[str, tuple[int, str]], set[int]]:
    """The layers of the import-linter ``layers`` contract in pyproject.toml (the one place they are written):
    ``{module prefix: (rank, name)}`` (higher rank = higher layer) and the ranks whose ``a | b`` siblings
    must not import each other."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    layers: dict[str, tuple[int, str]] = {}
    independent: set[int] = set()
    entries = contract["layers"]
    for i, entry in enumerate(entries):
        rank = len(entries) - 1 - i
        names = [name.strip().strip("()") for name in entry.split("|")]
        if len(names) > 1:
            independent.add(rank)
        for name in names:
            if name != "__main__":  # the facade, checked separately
                layers[f"q7emu.{name}"] = (rank, name)
    return layers, independent


#: (layer rank, sibling name) per layer; ranks whose siblings must not import each other
LAYERS, INDEPENDENT = _contract_layers()
#: compiled extensions (no .py file): src/<layer>/_<name>.pyx builds q7emu.<layer>._<name> (setup.py)
EXTENSIONS = {f"q7emu.{pyx.parent.name}.{pyx.stem}" for pyx in (ROOT / "src").glob("*/_*.pyx")}
FACADE = {"q7emu", "q7emu.__main__"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def layer_of(module: str) -> tuple[int, str] | None:
    """(rank, group) of a module, or None for the facade / modules outside q7emu."""
    best = None
    for prefix, lay in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, lay)
    return best[1] if best else None


def imports_of(module: str, path: Path, known: set[str]) -> list[tuple[str, int, bool]]:
    """(imported q7emu module, line, names-a-facade-attribute) for every import statement in the file,
    at any depth (function bodies, ``if TYPE_CHECKING:`` blocks, try/except), plus
    ``importlib.import_module("q7emu....")`` calls with a literal name."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    out: list[tuple[str, int, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "q7emu" or a.name.startswith("q7emu."):
                    out.append((a.name, node.lineno, a.name == "q7emu"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not (target == "q7emu" or target.startswith("q7emu.")):
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in known:
                    out.append((sub, node.lineno, False))
                else:
                    out.append((target, node.lineno, target == "q7emu"))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and node.args[0].value.startswith("q7emu") \
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            out.append((node.args[0].value, node.lineno, False))
    return out


def graph() -> tuple[dict[str, set[str]], list[tuple[str, int, str, str]]]:
    """(import graph between q7emu modules, every import as (importer, line, imported, layers text))."""
    mods = all_modules()
    known = set(mods) | EXTENSIONS
    edges: dict[str, set[str]] = {m: set() for m in known}
    rows = []
    for mod, path in mods.items():
        for target, line, facade_name in imports_of(mod, path, known):
            if target != mod:
                edges[mod].add(target)
            rows.append((mod, line, target, "facade" if facade_name else ""))
    return edges, rows


def violations() -> list[str]:
    """Every upward import, sibling import between independent layers, and facade-name import."""
    _, rows = graph()
    bad = []
    for mod, line, target, facade in rows:
        src, dst = layer_of(mod), layer_of(target)
        if src is None:            # the facade itself may import anything
            continue
        where = f"{mod}:{line} imports {target}"
        if facade or target in FACADE:
            bad.append(f"{where}: a name of the public facade (import it from its defining module)")
        elif dst is None:
            bad.append(f"{where}: outside the layers")
        elif dst[0] > src[0]:
            bad.append(f"{where}: upward ({src[1]} -> {dst[1]})")
        elif dst[0] == src[0] and dst[1] != src[1] and src[0] in INDEPENDENT:
            bad.append(f"{where}: independent siblings ({src[1]} -> {dst[1]})")
    return bad


def cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    edges, _ = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def test_every_module_has_a_layer():
    assert [m for m in all_modules() if m not in FACADE and layer_of(m) is None] == []


def test_no_upward_or_sibling_imports():
    assert violations() == []


def test_no_import_cycles():
    assert cycles() == []


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from q7emu.analysis.trace import Trace\n    from . import cores\n"
                 "    import importlib\n    importlib.import_module('q7emu.golden')\n")
    got = {t for t, _, _ in imports_of("q7emu.kernels.m", f, {"q7emu.kernels.cores", "q7emu.analysis.trace"})}
    assert got == {"q7emu.analysis.trace", "q7emu.kernels.cores", "q7emu.golden"}


def record_class_names_above_isa() -> list[str]:
    """``file:line: Name`` for every place outside q7emu/isa/ that names a record class (a spec's record class, or
    RawRecord): only an opcode's spec reads its record class (docs/ARCHITECTURE.md, issue 39). The generated
    dataclass methods (q7emu/_dataclass_methods.py) name every class of the package in their keys, and are exempt."""
    import re

    from q7emu.isa import opcodes
    names = sorted({s.record_class.__name__ for s in opcodes.specs()} | {"RawRecord"})
    word = re.compile(r"\b(" + "|".join(names) + r")\b")
    out = []
    for path in sorted(PKG.rglob("*.py")):
        if path.relative_to(PKG).parts[0] == "isa" or path.name == "_dataclass_methods.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            out += [f"{path.relative_to(ROOT)}:{n}: {m}" for m in word.findall(line)]
    return out


def test_no_module_above_isa_names_a_record_class():
    assert record_class_names_above_isa() == []


if __name__ == "__main__":
    _, all_rows = graph()
    for mod, line, target, facade in sorted(all_rows):
        s, d = layer_of(mod), layer_of(target)
        layers = f"[{s[1] if s else 'facade'} -> {d[1] if d else 'facade'}]"
        print(f"{mod}:{line} -> {target}  {layers}{' ' + facade if facade else ''}")
    print("\nviolations:", *violations() or ["none"], sep="\n  ")
    print("cycles:", *[" <-> ".join(c) for c in cycles()] or ["none"], sep="\n  ")
