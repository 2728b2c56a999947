"""Public code written with the real Xtensa toolchain that pins what an IVP intrinsic computes.

Pure data, read by the op table (:attr:`q7emu.primitives.optable.Op.evidence`), ``q7emu ops --evidence`` and
docs/intrinsics.md (which says in prose what each source shows and how strong it is). The rows are in the data file
``evidence.toml`` beside this module (package data), read and checked once at import. Each :class:`Evidence`
names a place in a public source (:data:`SOURCES`: repository, path, commit) by its lines, the C intrinsic that
code calls (the op's own, or a sibling that shares its convention), what it pins in q7emu's words, and how
strongly:

* ``strong``: a C fallback or an ``#ifdef`` alternative that must compute what the intrinsic computes, a test
  that checks the intrinsic's values against Cadence's functional model, or Cadence's own user-guide sequence;
* ``medium``: a generic code path (a shuffle, a conversion) whose meaning follows from the code around it;
* ``weak``: disabled code, a single use, or a sibling intrinsic whose convention is assumed to carry over.

The tests of ``firmware_tests/primitives/test_public_intrinsics.py`` compute each pinned meaning in plain numpy
from the source's own statement (a Halide IR pattern, a fallback body) and compare the wrappers with it.
"""
from __future__ import annotations

import tomllib
from dataclasses import fields
from importlib import resources

from q7emu._dataclass import dataclass
from q7emu.errors import InternalError

#: the commits the citations are at
HALIDE_COMMIT = "001745e0290e7ecc8dcd9645a60c95b5e259805a"      # halide/Halide, branch xtensa-codegen
TFLM_COMMIT = "8f54fea399daf28602d74b60e8b5122ec192a81a"        # foss-xtensa/tflmlib_vision, main
_TFLM_K = "xi_tflmlib_vision_p6/kernels/"
_TFLM_OLD = "TFLM_PersonDetection/tensorflow/lite/micro/tools/make/downloads/xi_annlib_vision_p6/"


@dataclass(frozen=True)
class Source:
    """A public source file: repository (owner/name), path, commit (40 hex; empty when unknown) and what it is."""

    repo: str
    path: str
    commit: str
    what: str

    def where(self, lines: str) -> str:
        """``repo:path@commit12 lines`` (a source without a repository is named by its file and what it is)."""
        at = f"@{self.commit[:12]}" if self.commit else ""
        repo = f"{self.repo}:" if self.repo else ""
        return f"{repo}{self.path}{at} {lines}"


SOURCES: dict[str, Source] = {
    "halide-vectors": Source("halide/Halide", "src/CodeGen_Xtensa_vectors.template.cpp", HALIDE_COMMIT,
                             "Halide's Xtensa runtime: the C++ bodies of the helpers its Xtensa backend emits"),
    "halide-optimize": Source("halide/Halide", "src/XtensaOptimize.cpp", HALIDE_COMMIT,
                              "Halide's pattern matcher: the IR pattern each Xtensa helper replaces"),
    "halide-codegen": Source("halide/Halide", "src/CodeGen_Xtensa.cpp", HALIDE_COMMIT,
                             "Halide's Xtensa C emitter: which intrinsic each IR operation becomes"),
    "halide-simd-check": Source("halide/Halide", "test/correctness/simd_op_check_xtensa.cpp", HALIDE_COMMIT,
                                "Halide's per-intrinsic value checks, run against Cadence's cstub library"),
    "tflm-conv2d-old": Source("foss-xtensa/tflmlib_vision", _TFLM_OLD + "conv2D_xi.cc", TFLM_COMMIT,
                              "Cadence's Vision P6 conv kernel with an #ifdef IVP_DMULQA2N8XR8 / #else pair"),
    "tflm-datatransform": Source("foss-xtensa/tflmlib_vision", _TFLM_K + "src/datatransform.cc", TFLM_COMMIT,
                                 "Cadence's Vision P6 data-transform kernels (variable-length tail loads / stores)"),
    "tflm-conv2d": Source("foss-xtensa/tflmlib_vision", _TFLM_K + "src/conv2D_xi.cc", TFLM_COMMIT,
                          "Cadence's Vision P6 conv kernels"),
    "tflm-softmax": Source("foss-xtensa/tflmlib_vision", _TFLM_K + "src/softmaxA.h", TFLM_COMMIT,
                           "Cadence's Vision P6 softmax (a SEL-based lookup table)"),
    "tflm-add": Source("foss-xtensa/tflmlib_vision", _TFLM_K + "src/addA.h", TFLM_COMMIT,
                       "Cadence's Vision P6 quantised add"),
    "tflm-wide-arithm": Source("foss-xtensa/tflmlib_vision", _TFLM_K + "include/xi_wide_arithm.h", TFLM_COMMIT,
                               "Cadence's wide-arithmetic macros (lookup tables, 32x32 multiply)"),
    "tflm-intrin": Source("foss-xtensa/tflmlib_vision", _TFLM_K + "include/xi_intrin.h", TFLM_COMMIT,
                          "Cadence's intrinsics header with C fallbacks"),
    "tflm-pointer": Source("foss-xtensa/tflmlib_vision", _TFLM_K + "include/xi_pointer_translation.h", TFLM_COMMIT,
                           "Cadence's load macros spelt out as a load and a pointer update"),
    "xai-intrin": Source("", "xai_intrin.h", "",
                         "Tensilica's XAI CNN library intrinsics header (2013-2018, MIT-style licence) with "
                         "#ifndef C fallbacks; the public-code index holds it without its repository, so it is "
                         "cited by macro and character offset"),
}


@dataclass(frozen=True)
class Evidence:
    """One place in a public source that pins part of an op's meaning (see the module docstring)."""

    source: str          # a key of SOURCES
    lines: str           # "2009-2011" (or a character range for a source without line numbers)
    intrinsic: str       # the C intrinsic the code calls there
    pins: str            # what it pins, in q7emu's words
    strength: str        # "strong" | "medium" | "weak"

    def cite(self) -> str:
        """``IVP_X at repo:path@commit lines (strength): pins``."""
        return f"{self.intrinsic} at {SOURCES[self.source].where(self.lines)} ({self.strength}): {self.pins}"


STRENGTHS = ("strong", "medium", "weak")


#: the rows of :data:`EVIDENCE`, a data file of this package (shipped beside this module)
EVIDENCE_FILE = "evidence.toml"
_FIELDS = tuple(f.name for f in fields(Evidence))


def _load(text: str) -> dict[str, tuple[Evidence, ...]]:
    """EVIDENCE from the text of :data:`EVIDENCE_FILE`: every row has the five string fields of an Evidence, a
    known source and a known strength (InternalError naming the row otherwise: the file is q7emu's own)."""
    out: dict[str, tuple[Evidence, ...]] = {}
    for mnemonic, rows in tomllib.loads(text).items():
        if not isinstance(rows, list) or not rows:
            raise InternalError(f"{EVIDENCE_FILE}: {mnemonic} is not a list of [[{mnemonic}]] rows")
        items = []
        for n, row in enumerate(rows):
            if (not isinstance(row, dict) or sorted(row) != sorted(_FIELDS)
                    or not all(isinstance(v, str) for v in row.values())):
                raise InternalError(f"{EVIDENCE_FILE}: {mnemonic}[{n}] needs the strings {', '.join(_FIELDS)}")
            e = Evidence(**row)
            if e.source not in SOURCES or e.strength not in STRENGTHS:
                raise InternalError(f"{EVIDENCE_FILE}: {mnemonic}[{n}]: unknown source {e.source!r} or strength "
                                    f"{e.strength!r}")
            items.append(e)
        out[mnemonic] = tuple(items)
    return out


#: mnemonic -> the public evidence for its operand order and semantics (docs/intrinsics.md), in the file's order
EVIDENCE: dict[str, tuple[Evidence, ...]] = _load(
    resources.files("q7emu.primitives").joinpath(EVIDENCE_FILE).read_text(encoding="utf-8"))
