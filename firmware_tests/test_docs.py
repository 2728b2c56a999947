"""docs/: every `docs/<name>.md §a[.b[.c]]` citation in the repository resolves, and docs/ stays self-contained.

A citation is ``docs/<name>.md §<a>[.<b>[.<c>]]`` (the file name may be closed by a backtick), optionally
continued by ``, §x.y`` items that cite the same file. It resolves when

* ``§a``     -> a heading ``# a.`` / ``## a.`` of that file;
* ``§a.b``   -> a heading ``### a.b``, or, when section ``a`` has no numbered subheadings, the numbered list
  item ``b.`` inside section ``a``;
* ``§a.b.c`` -> a heading ``#### a.b.c``, or the numbered list item ``c.`` (at line start, possibly indented)
  inside section ``a.b``, i.e. between its heading and the next heading of the same or a higher level.

Plain pytest: no q7emu import, no network.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SCAN_SUFFIXES = {".py", ".pyx", ".pxd", ".pxi", ".md", ".toml", ".txt", ".cfg"}

_SEC = r"\d+(?:\.\d+)*"
CITATION = re.compile(
    r"docs/(?P<doc>[A-Za-z0-9_.-]+?)\.md`?[ \t]*§(?P<first>" + _SEC + r")"
    r"(?P<more>(?:[`)]?[ \t]*,[ \t]*§" + _SEC + r")*)")
_MORE = re.compile(r"§(" + _SEC + r")")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_HEADING_NUMBER = re.compile(r"^(\d+(?:\.\d+)*)\.?(?:[ \t]|$)")
_LIST_ITEM = re.compile(r"^[ \t]*(\d+)\.[ \t]")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")


# --------------------------------------------------------------------------------------------- parsing
@dataclass(frozen=True)
class Heading:
    line: int           # 0-based line index
    level: int          # number of '#'
    number: str | None  # "1.3" for "### 1.3 Validity", None for an unnumbered heading


def _lines_outside_fences(text: str) -> list[tuple[int, str]]:
    """(index, line) of every line not inside a fenced code block (the fence lines excluded)."""
    out, fenced = [], False
    for i, line in enumerate(text.splitlines()):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((i, line))
    return out


def headings(text: str) -> list[Heading]:
    hs = []
    for i, line in _lines_outside_fences(text):
        m = _HEADING.match(line)
        if m:
            n = _HEADING_NUMBER.match(m.group(2))
            hs.append(Heading(i, len(m.group(1)), n.group(1) if n else None))
    return hs


def _span(text: str, hs: list[Heading], h: Heading) -> tuple[int, int]:
    """Lines of the section under heading h: up to the next heading of the same or a higher level."""
    end = len(text.splitlines())
    for other in hs:
        if other.line > h.line and other.level <= h.level:
            end = other.line
            break
    return h.line + 1, end


def _list_items(text: str, start: int, end: int) -> set[str]:
    return {m.group(1) for i, line in _lines_outside_fences(text) if start <= i < end
            for m in [_LIST_ITEM.match(line)] if m}


def resolve(text: str, section: str) -> bool:
    """True if ``§section`` names a heading or a numbered list item of the Markdown ``text``."""
    parts = section.split(".")
    if not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3:
        return False
    hs = headings(text)
    by_number: dict[str, list[Heading]] = {}
    for h in hs:
        if h.number is not None:
            by_number.setdefault(h.number, []).append(h)
    if len(parts) == 1:
        return any(h.level <= 2 for h in by_number.get(section, []))
    if any(h.level == len(parts) + 1 for h in by_number.get(section, [])):
        return True                                   # ### a.b / #### a.b.c
    parent = ".".join(parts[:-1])
    for h in by_number.get(parent, []):
        if h.level != len(parts):                     # ## a. for §a.b, ### a.b for §a.b.c
            continue
        start, end = _span(text, hs, h)
        if len(parts) == 2 and any(start <= o.line < end and o.number and o.number.startswith(parent + ".")
                                   for o in hs):
            continue                                  # section a has numbered subsections: no list fallback
        if parts[-1] in _list_items(text, start, end):
            return True
    return False


def citations(text: str) -> list[tuple[int, str, str]]:
    """(1-based line, doc name, section) of every docs citation in ``text``, continuations included."""
    out = []
    for m in CITATION.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.append((line, m.group("doc"), m.group("first")))
        out.extend((line, m.group("doc"), s) for s in _MORE.findall(m.group("more")))
    return out


# --------------------------------------------------------------------------------------------- the repo
def _tracked_files() -> list[Path]:
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True,
                               timeout=60).stdout.decode("utf-8", "surrogateescape").split("\0")
        files = {ROOT / n for n in names if n}
    except (OSError, subprocess.SubprocessError):
        files = {p for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts}
    files |= set(DOCS.glob("*.md"))                  # docs being written count before they are committed
    return sorted(p for p in files
                  if p.is_file() and (p.suffix in SCAN_SUFFIXES or p.relative_to(ROOT).parts[:1] == (".ci",)))


def _read_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_every_docs_citation_resolves():
    doc_text: dict[str, str | None] = {}
    found, bad = 0, []
    for path in _tracked_files():
        text = _read_text(path)
        if text is None:
            continue
        for line, doc, section in citations(text):
            found += 1
            if doc not in doc_text:
                target = DOCS / f"{doc}.md"
                doc_text[doc] = target.read_text(encoding="utf-8") if target.is_file() else None
            where = f"{path.relative_to(ROOT)}:{line}: docs/{doc}.md §{section}"
            if doc_text[doc] is None:
                bad.append(f"{where} (no such file)")
            elif not resolve(doc_text[doc], section):
                bad.append(f"{where} (no such heading or list item)")
    assert found > 0, "no docs citations found at all: the scanner is broken"
    assert not bad, "unresolved docs citations:\n" + "\n".join(bad)


_ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?:work|home|tmp|usr|etc|opt|var|root|mnt|srv|Users|private)/")
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)")


def test_docs_are_self_contained():
    """No links to the steering folder outside the repository (``shared/``) and no absolute filesystem paths
    in docs/."""
    outside = "/".join(("..", "shared"))
    md = sorted(DOCS.glob("*.md"))
    assert md, "docs/ has no Markdown files"
    bad = []
    for path in md:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{n}"
            if outside in line or "/shared/" in line:
                bad.append(f"{where}: reference to a shared/ path")
            if _ABSOLUTE.search(line):
                bad.append(f"{where}: absolute filesystem path")
            for target in _LINK.findall(line):
                if target.startswith(("/", "file:", "~")) or re.match(r"^[A-Za-z]:[\\/]", target):
                    bad.append(f"{where}: link to an absolute path {target!r}")
    assert not bad, "\n".join(bad)


def test_docs_index_lists_every_file():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "README.md" and f"docs/{p.name}" not in index]
    assert not missing, f"docs/README.md does not list {missing}"


# --------------------------------------------------------------------------------------------- self-test
_SAMPLE = "\n".join([
    "# Title",
    "## 1. One",
    "### 1.1 Sub",
    "1. first",
    "   2. second, indented",
    "#### not numbered",
    "3. still inside 1.1",
    "### 1.2 Other",
    "## 2. Two",
    "1. item",
    "### 2.9 Late",
    "```",
    "3. inside a code fence",
    "```",
    "4. after the fence",
])


def test_resolver_self_test():
    assert resolve(_SAMPLE, "1") and resolve(_SAMPLE, "2")
    assert resolve(_SAMPLE, "1.1") and resolve(_SAMPLE, "1.2")
    assert resolve(_SAMPLE, "1.1.1") and resolve(_SAMPLE, "1.1.2") and resolve(_SAMPLE, "1.1.3")
    assert not resolve(_SAMPLE, "3")                 # no such heading
    assert not resolve(_SAMPLE, "1.3")               # no heading, and 1 has numbered subsections
    assert not resolve(_SAMPLE, "1.2.1")             # the items belong to 1.1, not 1.2
    assert not resolve(_SAMPLE, "2.1")               # section 2 has a numbered subsection (2.9)
    assert not resolve(_SAMPLE, "2.9.3")             # fenced lines are not list items
    assert resolve(_SAMPLE, "2.9.4")
    assert not resolve(_SAMPLE, "1.1.1.1")           # at most three levels
    flat = "## 7. Choices\n1. a\n2. b\n## 8. Next\n"
    assert resolve(flat, "7.2") and not resolve(flat, "7.3") and not resolve(flat, "8.1")


def test_citation_parser_self_test():
    d = "docs/"                                       # split so that the scanner does not see these
    text = (f"see {d}demo.md §1.3, §2 and `{d}demo.md` §4.1.2.\n"
            f"and `{d}demo.md §8.1.13`, §8.2.19; {d}other.md §6.2 (B21)")
    assert citations(text) == [(1, "demo", "1.3"), (1, "demo", "2"), (1, "demo", "4.1.2"),
                               (2, "demo", "8.1.13"), (2, "demo", "8.2.19"), (2, "other", "6.2")]
    assert citations("SPEC §6.2 and MODEL §1") == []


# --------------------------------------------------------------------------------------------- paths
#: a repository-relative path named in a source file or a doc: a top-level folder, then path characters
_REPO_PATH = re.compile(r"(?<![\w./-])((?:q7emu|src|tools|firmware_tests|bench|docs|examples|\.ci)/[A-Za-z0-9_./-]*"
                        r"[A-Za-z0-9_/-])")
#: files that name paths as history or as outputs, not as the current tree
_PATH_EXEMPT = {"CHANGELOG.md"}
#: built or written at run time, never tracked
_BUILT = (".c", ".so", ".html", ".egg-info", ".q7t", ".jsonl", ".png")


#: what q7emu's src/ holds: a src/ path with another suffix (.cpp, .cc, .h, .py) is another repository's (Halide's,
#: Cadence's, the nki-library's), cited with its owner
_SRC_SUFFIXES = (".pyx", ".pxd", ".pxi")


def repo_paths(text: str) -> list[tuple[int, str]]:
    """(line number, path) of every file path in this repository that ``text`` names: a last component with a
    suffix (prose like ``src/dst`` is not a path), no placeholder (``<name>``, ``*``, ``{a,b}``, ``…``), not a
    built file, and under src/ only q7emu's own suffixes."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in _REPO_PATH.finditer(line):
            path, after = m.group(1), line[m.end():m.end() + 1]
            last = path.rsplit("/", 1)[-1]
            if (after and after in "<*{…") or path.endswith(_BUILT) or "." not in last.strip(".") \
                    or (path.startswith("src/") and not path.endswith(_SRC_SUFFIXES)):
                continue
            out.append((n, path))
    return out


def test_repository_paths_in_sources_and_docs_exist():
    """Every repository path a tracked source file or doc names (in a comment, a docstring, a message or prose)
    exists in the tree: a renamed or deleted file leaves no stale pointer behind."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:          # a source archive (a tarball, GitHub's zip), not a clone: nothing says tracked
        pytest.skip("not a git checkout: `git ls-files` lists the tracked files this test reads")
    files = listed.stdout.split()
    bad, seen = [], 0
    for rel in files:
        path = ROOT / rel
        if path.suffix not in SCAN_SUFFIXES | {".sh", ".yaml", ".yml"} and rel != ".ci/run" or rel in _PATH_EXEMPT \
                or not path.is_file():
            continue
        for n, named in repo_paths(path.read_text(encoding="utf-8", errors="replace")):
            seen += 1
            if not (ROOT / named.rstrip("/")).exists():
                bad.append(f"{rel}:{n}: {named}")
    assert seen > 100, "too few repository paths found: the scanner is broken"
    assert not bad, "paths that do not exist:\n" + "\n".join(bad)


def test_repo_path_scanner_self_test():
    text = ("see q7emu/model/knobs.py, src/kernels/_<name>.pyx and docs/model.md §9.\nbuilt: src/x/_a.c; "
            "Halide's src/CodeGen_Xtensa.cpp; the src/dst patterns; src/kernels/_program.pyx")
    assert repo_paths(text) == [(1, "q7emu/model/knobs.py"), (1, "docs/model.md"), (2, "src/kernels/_program.pyx")]
