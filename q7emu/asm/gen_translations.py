"""Generate the kernel programs' translations (docs/asm.md §9): ``src/kernels/translations_gen.pxi``, and
``q7emu/kernels/programs/configurations_gen.py`` and ``decoded_gen.py``.

``python -m q7emu.asm.gen_translations [--check]`` assembles every configuration of the translated kernels (each
format and group of TensorDequantize under every value of the knobs that format and path read, and QuantizeMX's
source and destination types under every value of its knobs), groups the programs by shape
(q7emu.asm.translate.shape_key) and the shapes into families (:func:`families`: the shapes of a kernel that differ in
a few bundles), plans one translation per family (or per data section of a family that holds two: :func:`by_data`)
and writes its Cython function, the table of them the
interpreter's run() takes (TX), the table of each one's variants' shape keys and immediates (TRANSLATIONS)
q7emu.asm.run matches a program against; and, in the Python modules, the table of the configurations
(CONFIGURATIONS: each one's translation, runtime immediates, data section and decoded program; DATA_SECTIONS;
PROGRAMS) by which a TensorDequantize or QuantizeMX call runs its program -- translated untraced, interpreted
traced -- without assembling it (q7emu.kernels.configured). ``--check`` exits 1 when a committed file is stale
(firmware_tests/asm/test_translate.py runs it).
"""
from __future__ import annotations

import base64
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from q7emu.asm.kernels import kernel_program
from q7emu.asm.program import Program
from q7emu.asm.translate import TableEntry, Translation, data_key, family, match, plan, render, shape_key
from q7emu.fileio import write_generated
from q7emu.kernels.programs import (
    QUANTIZE_MX_KNOBS_READ,
    dequant_configuration,
    dequant_knobs_read,
    quantize_mx_configuration,
)
from q7emu.kernels.programs.bundle_notes import BUNDLE_NOTES
from q7emu.model.format_table import DEQUANT_FORMATS
from q7emu.model.knobs import QUANTIZE_MX_DST_DTYPES, QUANTIZE_MX_SRC_DTYPES, knob

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src" / "kernels" / "translations_gen.pxi"
#: the configurations' decoded programs and translations, for q7emu.kernels.configured (which cannot assemble)
CONFIG_OUT = ROOT / "q7emu" / "kernels" / "programs" / "configurations_gen.py"
#: their decoded programs (a module of its own: an untraced call, which runs the translation, never imports it)
DECODED_OUT = ROOT / "q7emu" / "kernels" / "programs" / "decoded_gen.py"
#: the kernels whose programs are translated
TRANSLATED = ("proc_4bit_non_mx", "proc_6bit_non_mx", "proc_4bit_mx_8", "quantize_mx")


def configurations() -> Iterator[tuple[str, str, Program]]:
    """(kernel, configuration name, program) for every configuration of the translated kernels: each TensorDequantize
    format's paths under every combination of the knobs the format and the path read
    (q7emu.kernels.programs.dequant_knobs_read), then QuantizeMX's source and destination types under every
    combination of the knobs its program reads (QUANTIZE_MX_KNOBS_READ)."""
    for rec in DEQUANT_FORMATS:
        for group, kernel in sorted(rec.paths.items()):
            if kernel not in TRANSLATED:
                continue
            names = dequant_knobs_read(rec.code, group)
            for values in itertools.product(*(knob(n).values for n in names)):
                knobs = dict(zip(names, values))
                yield (kernel, dequant_configuration(rec.code, group, knobs),
                       kernel_program(kernel, fmt=rec.code, group=group, knobs=knobs))
    for src, dst in itertools.product(QUANTIZE_MX_SRC_DTYPES, QUANTIZE_MX_DST_DTYPES):
        for values in itertools.product(*(knob(n).values for n in QUANTIZE_MX_KNOBS_READ)):
            knobs = dict(zip(QUANTIZE_MX_KNOBS_READ, values))
            yield ("quantize_mx", quantize_mx_configuration(src, dst, knobs),
                   kernel_program("quantize_mx", src_dtype=src, dst_dtype=dst, knobs=knobs))


#: a shape joins a family of its kernel (a variant of one translation: q7emu.asm.translate.family) when the family's
#: positions then number at most this many times its largest variant's bundles: the shapes that differ in a knob's
#: few bundles (the nibble order, the FP6 packing) share a function, the paths that differ throughout (NF4 and the
#: rebias kernels of proc_4bit_non_mx) do not
MERGE_GROWTH = 1.25


def families(configs: list[tuple[str, str, Program]] | None = None) -> list[tuple[str, list[Program]]]:
    """The configurations' programs (default: :func:`configurations`) grouped into translation families: (kernel,
    its programs), in a stable order (kernel, then first appearance). A shape joins the first family of its
    kernel whose merged positions stay within :data:`MERGE_GROWTH`, else starts one."""
    shapes: dict[str, tuple[str, list[Program]]] = {}
    for kernel, _, prog in configurations() if configs is None else configs:
        shapes.setdefault(shape_key(prog), (kernel, []))[1].append(prog)
    out: list[tuple[str, list[Program]]] = []
    for kernel, progs in shapes.values():
        for fam_kernel, members in out:
            if fam_kernel != kernel:
                continue
            longest = max(len(p.bundles) for p in members + progs[:1])
            if len(family(members + progs[:1]).positions) <= MERGE_GROWTH * longest:
                members += progs
                break
        else:
            out.append((kernel, list(progs)))
    return out


#: a family whose programs hold 2 .. this many different data sections (E2M1's and INT4's rows in group 0, the two
#: FP6 packings' rows) is translated once per data section (:func:`by_data`): its rows are then constants of each
#: translation (known values), which the C compiler folds into the ops that read them. Families with more (MX group
#: 8: 9, QuantizeMX: 8) stay one translation: one copy per section would multiply their compile time
SPLIT_DATA_UP_TO = 2


def by_data(programs: list[Program]) -> list[tuple[str, list[Program]]]:
    """A family's programs as the translations :func:`translations` plans for them: one part per data section (its
    digest, q7emu.asm.translate.data_key, and its programs) when they hold 2 .. :data:`SPLIT_DATA_UP_TO` different
    ones, else the whole family for any data section ('')."""
    parts: dict[str, list[Program]] = {}
    for p in programs:
        parts.setdefault(data_key(p), []).append(p)
    if not 1 < len(parts) <= SPLIT_DATA_UP_TO:
        return [("", programs)]
    return list(parts.items())


def translations(configs: list[tuple[str, str, Program]] | None = None) -> list[tuple[Translation, Program]]:
    """The translations of ``configs``: one per family (:func:`families`), or one per data section of a family
    (:func:`by_data`), each with the program it was planned from first."""
    out = []
    count: dict[str, int] = {}
    for kernel, family_programs in families(configs):
        for data, progs in by_data(family_programs):
            i = count.get(kernel, 0)
            count[kernel] = i + 1
            tx = plan(f"tx_{kernel}_{i}", progs)
            tx.data = data
            render(tx, progs)
            out.append((tx, progs[0]))
    return out


def _wrapped(text: str, width: int = 100) -> list[str]:
    """A long string literal as adjacent literals of at most ``width`` characters, each on its line."""
    parts: list[str] = []
    cur = ""
    for word in text.split(" "):
        if cur and len(cur) + len(word) + 1 > width:
            parts.append(cur + " ")
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    parts.append(cur)
    return [f"     {x!r}" for x in parts[:-1]] + [f"     {parts[-1]!r},"]


def _table(txs: list[tuple[Translation, Program]]) -> list[TableEntry]:
    """TRANSLATIONS, as the compiled module has it: each translation's Translation.table_entry."""
    return [tx.table_entry(prog.name) for tx, prog in txs]


def render_file(txs: list[tuple[Translation, Program]] | None = None) -> str:
    """The text of src/kernels/translations_gen.pxi (``txs``: :func:`translations` of every configuration, computed
    when not given)."""
    txs = translations() if txs is None else txs
    table = _table(txs)
    L = ["# Generated by q7emu/asm/gen_translations.py from the kernel programs (q7emu/kernels/programs): do not edit.",
         "# The translations of docs/asm.md §9: one function per family of program shapes (or per data section of a",
         "# family: gen_translations.by_data), included by",
         "# src/kernels/_program.pyx.",
         "# Every op is its primitive's call with the registers as C locals; an op's text comes from the generator of",
         "# the interpreter's handlers (q7emu.primitives.gen_wrappers._p_ivp / _p_scalar).", ""]
    for tx, _ in txs:
        L += ["", tx.text.rstrip("\n")]
    L += ["", "", f"cdef tx_t TX[{max(1, len(txs))}]", "", "", "cdef void fill_translations() noexcept:",
          '    """Point TX at the translations."""']
    L += [f"    TX[{i}] = {tx.name}" for i, (tx, _) in enumerate(txs)] or ["    pass"]
    L += ["", "", "#: each translation's variants' shape keys, their constant immediates ('row:slot:value ...') and",
          "#: runtime immediates ('row:slot ...', the order of its imm array after the variant; '-': an op the",
          "#: variant lacks), each variant's '/' apart, the first program it was planned from, its imm array's",
          "#: length, the digest of the data section a program must have ('': any; q7emu.asm.translate.data_key)",
          "#: (q7emu.asm.translate.Translation.table_entry)",
          "TRANSLATIONS = ("]
    for key, const, runtime, name, nimm, data in table:
        L.append("    (")
        L += _wrapped(key)
        L += _wrapped(const)
        L += _wrapped(runtime)
        L.append(f"     {name!r}, {nimm}, {data!r}),")
    L.append(")")
    return "\n".join(L) + "\n"


def _array(name: str, a: np.ndarray, dtype: str, width: int = 100) -> list[str]:
    """``name=(shape, dtype, base64 of its bytes)``, the string cut into literals of ``width`` characters a line
    (q7emu.kernels.configured reads it back)."""
    text = base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")
    return ([f"    {name}=({tuple(int(n) for n in a.shape)!r}, {dtype!r}, ("]
            + [f"        {text[i:i + width]!r}" for i in range(0, len(text), width)] + ["    )),"])


def render_configurations(configs: list[tuple[str, str, Program]] | None = None,
                          txs: list[tuple[Translation, Program]] | None = None) -> tuple[str, str]:
    """The texts of q7emu/kernels/programs/configurations_gen.py and decoded_gen.py: every configuration's translation
    (its index in TRANSLATIONS and TX, its runtime immediates) and its program, decoded (docs/asm.md §4.4) as one
    program per shape (decoded_gen.PROGRAMS) with the cells the configuration's immediates change (the patches) and its
    data section (an index in DATA_SECTIONS), so that a traced or interpreted kernel call runs the program
    without the assembler. ``txs``: the translations of ``configs`` (computed when not given)."""
    configs = list(configurations()) if configs is None else configs
    table = _table(translations(configs) if txs is None else txs)
    sections: dict[bytes, int] = {}
    shapes: dict[str, int] = {}
    programs: list[tuple[str, Program]] = []
    L = ['"""Generated by q7emu/asm/gen_translations.py from the kernel programs (q7emu/kernels/programs/*.s): do not',
         "edit. Every TensorDequantize and QuantizeMX configuration's translation and decoded program (docs/asm.md",
         '§4.4, §9), read by q7emu.kernels.configured, which runs them without the assembler."""', "",
         "#: a configuration (q7emu.kernels.programs.dequant_configuration, quantize_mx_configuration) -> (its",
         "#: translation's index in TX / TRANSLATIONS of src/kernels/translations_gen.pxi, its imm array (its",
         "#: variant, then its runtime immediates), its data section's index in DATA_SECTIONS, its program's index",
         "#: in PROGRAMS, the cells (insn row, column, value) where its decoded insns differ from that program's)",
         "CONFIGURATIONS = {"]
    for kernel, name, prog in configs:
        found = match(table, prog)
        if found is None:
            raise ValueError(f"{name}: no translation matches its program")
        d = prog.decoded
        at = sections.setdefault(bytes(d.data), len(sections))
        imm = tuple(int(x) for x in found[1])
        key = shape_key(prog)
        if key not in shapes:
            shapes[key] = len(programs)
            programs.append((kernel, prog))
        base = programs[shapes[key]][1].decoded
        if not (np.array_equal(base.bundles[:, :4], d.bundles[:, :4]) and np.array_equal(base.wmask, d.wmask)
                and base.entry == d.entry and base.insns.shape == d.insns.shape):
            raise ValueError(f"{name}: its program's bundles differ from its shape's first program")
        rows, cols = np.nonzero(base.insns != d.insns)
        patches = tuple((int(r), int(c), int(d.insns[r, c])) for r, c in zip(rows, cols))
        L += [f"    {name!r}:", f"        ({found[0]}, {imm!r}, {at}, {shapes[key]},"]
        cells = [f"{p!r}," for p in patches]
        L += [f"         ({' '.join(cells[i:i + 8])}" for i in range(0, len(cells), 8)] or ["         ("]
        L[-1] += ")),"
    L += ["}", "", "#: the data sections of the configurations' programs (bytes at DATA_BASE)", "DATA_SECTIONS = ("]
    for data in sections:
        hexed = data.hex()
        L.append("    bytes.fromhex(")
        L += [f"        {hexed[i:i + 96]!r}" for i in range(0, len(hexed), 96)]
        L[-1] += "),"
    L.append(")")
    D = ['"""Generated by q7emu/asm/gen_translations.py from the kernel programs (q7emu/kernels/programs/*.s): do not',
         "edit. One decoded program (docs/asm.md §4.4) per program shape; a configuration's own is its shape's with",
         'the patches of its entry in configurations_gen.CONFIGURATIONS (q7emu.kernels.configured)."""', "",
         "#: one decoded program per shape (q7emu.asm.run.Decoded): its kernel, the program it was decoded from,",
         "#: insns (int32 [N, INSN_COLS]), bundles (int32 [M, BUNDLE_COLS]), wmask (int64 [N, 3]) -- each as (its",
         "#: shape, its little-endian dtype, its bytes in base64: a string Python reads far faster than tuples of",
         "#: ints) --, entry, and its labels: bundle tag -> name, the program's .equ symbols that name a bundle",
         "#: (bundle_notes.BUNDLE_NOTES)",
         "PROGRAMS = ("]
    for kernel, prog in programs:
        d = prog.decoded
        D += ["  dict(", f"    kernel={kernel!r},", f"    name={prog.name!r},"]
        D += _array("insns", d.insns, "<i4") + _array("bundles", d.bundles, "<i4")
        labels = {prog.equates[n]: n for n in BUNDLE_NOTES if n in prog.equates}
        D += _array("wmask", d.wmask, "<i8") + [f"    entry={int(d.entry)},", "    labels={"]
        D += [f"        {tag}: {name!r}," for tag, name in sorted(labels.items())] + ["    },", "  ),"]
    D.append(")")
    return "\n".join(L) + "\n", "\n".join(D) + "\n"


def main(argv: list[str]) -> int:
    """Write the file; with --check, say whether it is stale (exit 1) instead."""
    configs = list(configurations())
    txs = translations(configs)
    table, decoded = render_configurations(configs, txs)
    return write_generated({OUT: render_file(txs), CONFIG_OUT: table, DECODED_OUT: decoded}, argv,
                           "python -m q7emu.asm.gen_translations", ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
