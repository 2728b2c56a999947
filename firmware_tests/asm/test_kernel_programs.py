"""The kernels as programs (docs/asm.md §6). Every kernel runs its programs (q7emu.dequantize, q7emu.quantize_mx: the
decoded programs generated from them, translated untraced, interpreted traced); for every configuration the program
assembled here, run by the interpreter, gives the API's bytes and a trace `q7emu trace diff` finds equal (op, bundle,
operands, lanes), on random partitions with tails and on every shipped case. The kernels' own tests compare the API
with the golden models."""
import itertools
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import q7emu
from q7emu.analysis.trace import Recorder
from q7emu.analysis.trace.diff import diff
from q7emu.asm import assemble
from q7emu.asm.kernels import ProgramBackend, dequantize_program, kernel_program, quantize_mx_program
from q7emu.kernels import dequant, quantize_mx
from q7emu.kernels.extension import TRANSLATIONS_ENV
from q7emu.kernels.programs import PROGRAM_FILES, program_file
from q7emu.machine.cases import _prepared_machine, load_case, run_case
from q7emu.model.format_table import DEQUANT_FORMATS, dequant_path
from q7emu.model.knobs import KNOBS

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted((ROOT / "examples" / "cases").glob("*/*.npz"))


def _values(name):
    return next(k.values for k in KNOBS if k.name == name)


def dequant_configs():
    """(fmt, group, knobs) of every configuration: each format's paths x the knobs its path reads."""
    out = []
    for rec in DEQUANT_FORMATS:
        for group in rec.paths:
            names = [k for k in ("nibble_order", "fp6_packing", "mx_layout", "mx_scale")
                     if k in rec.knobs or (group == 8 and k in ("mx_layout", "mx_scale"))]
            for combo in itertools.product(*(_values(k) for k in names)):
                out.append((rec.code, group, dict(zip(names, combo))))
    return out


QMX_CONFIGS = [(s, d, dict(emax=e, underflow=u, nonfinite=n))
               for s in ("float16", "bfloat16") for d in ("float8_e4m3fn", "float8_e5m2")
               for e in _values("emax") for u in _values("underflow") for n in _values("nonfinite")]


def _same_trace(a: Recorder, b: Recorder) -> None:
    d = diff(a.trace, b.trace)
    assert d.same, d.format()
    assert d.compared > 0


@pytest.mark.parametrize("fmt,group,knobs", dequant_configs(), ids=lambda x: str(x))
def test_dequant_program_is_the_apis(fmt, group, knobs, monkeypatch):
    path = dequant_path(next(r for r in DEQUANT_FORMATS if r.code == fmt).paths[group])
    words_in = path.ratio[0]
    rng = np.random.default_rng(fmt * 100 + group * 10 + len(str(knobs)))
    # whole passes, a tail, one block, several passes and a tail (pass_bytes per pass)
    for units in (1, path.pass_bytes // (4 * words_in), path.pass_bytes // (4 * words_in) + 1, 7):
        src = rng.integers(0, 256, (3, 4 * words_in * units), dtype=np.uint8)
        monkeypatch.setenv(TRANSLATIONS_ENV, "off")           # the generated program on the interpreter, untraced
        want = q7emu.dequantize(src, fmt, group, **knobs)
        monkeypatch.delenv(TRANSLATIONS_ENV)
        got = dequantize_program(None, src, fmt, group, **knobs)
        interpreted = dequantize_program(None, src, fmt, group, **knobs, counts=np.zeros(
            len(kernel_program(path.name, fmt=fmt, group=group, knobs=knobs).decoded.bundles), np.int64))
        assert np.array_equal(got, want) and np.array_equal(interpreted, want), units
    ra, rb = Recorder(), Recorder()
    q7emu.dequantize(src, fmt, group, **knobs, trace=ra)
    dequantize_program(None, src, fmt, group, **knobs, trace=rb)
    _same_trace(ra, rb)


class _RawRecorder:
    """The minimal recorder (q7emu.kernels.tracing.RawRecorder): the window and op filter, and each run's raw
    full-operand records."""

    def __init__(self, window=None, ops=None):
        self.window, self.ops, self.runs = window, ops, []

    def add_run(self, raw, *, kernel, knobs):
        self.runs.append((bytes(memoryview(raw)), kernel, knobs))


@pytest.mark.parametrize("window,ops", [(None, None), ((5, 60), None), (None, ["sav2nx8_xp", "oltnxf16t"])])
def test_a_raw_recorder_gets_a_programs_records(window, ops):
    """A raw recorder on an assembled program (q7emu.asm: ProgramRun.raw) gets the records the API's run gives it,
    filtered alike; without a filter, the records of every op (the window and the filter do cut)."""
    src = np.random.default_rng(4).integers(0, 256, (2, 96), dtype=np.uint8)
    a, b = _RawRecorder(window, ops), _RawRecorder(window, ops)
    q7emu.dequantize(src, 1, 0, trace=a)
    dequantize_program(None, src, 1, 0, trace=b)
    assert len(a.runs) == len(b.runs) == 1 and a.runs[0] == b.runs[0]
    whole = _RawRecorder()
    q7emu.dequantize(src, 1, 0, trace=whole)
    assert (len(a.runs[0][0]) == len(whole.runs[0][0])) == (window is None and ops is None)


@pytest.mark.parametrize("src_dtype,dst,knobs", QMX_CONFIGS, ids=lambda x: str(x))
def test_quantize_mx_program_is_the_apis(src_dtype, dst, knobs):
    rng = np.random.default_rng(len(str(knobs)) + len(dst))
    p, f = 32, 4 * 9                                # two chunks: 16 columns and a 4-column tail... and one more
    bits = rng.integers(0, 1 << 16, (p, f), dtype=np.uint16)
    bits[0, :3] = (0x7C00, 0xFE00, 0x0001) if src_dtype == "float16" else (0x7F80, 0xFFC0, 0x0001)
    bits[8:16, 4:8] = 0                             # an all-zero block: underflow
    x = bits.view(np.float16 if src_dtype == "float16" else ml_dtypes.bfloat16)
    want = q7emu.quantize_mx(x, dst, **knobs)
    got = quantize_mx_program(None, x, dst, **knobs)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    ra, rb = Recorder(), Recorder()
    q7emu.quantize_mx(x, dst, **knobs, trace=ra)
    quantize_mx_program(None, x, dst, **knobs, trace=rb)
    _same_trace(ra, rb)


@pytest.mark.parametrize("layout", ["scatter", "compact"])
def test_quantize_mx_program_full_tile(layout):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((128, 52)) * 300).astype(ml_dtypes.bfloat16)
    want = q7emu.quantize_mx(x, "e5m2", scale_layout=layout)
    got = quantize_mx_program(None, x, "e5m2", scale_layout=layout)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_shipped_case_with_the_kernel_programs(path):
    case = load_case(path)
    assert run_case(case, backend=ProgramBackend()).ok
    traces = []
    for backend in ("kernel", ProgramBackend()):
        m = _prepared_machine(case, None, backend)
        rec = Recorder()
        m.execute(case.record, trace=rec)
        traces.append(rec)
    _same_trace(*traces)


def _labels_of(program_path: Path, symbols) -> dict[str, int]:
    """The .equ symbols of a kernel program whose names are listing labels."""
    from q7emu.asm.assembler import Assembler
    a = Assembler(str(program_path), symbols, None, program_path.parent)
    a.expand(a.read_lines(program_path.read_text(), str(program_path)))
    return {k: v for k, v in a.symbols.items() if isinstance(v, int)}


@pytest.mark.parametrize("fmt,group", [(1, 0), (3, 0), (4, 0), (1, 8)])
def test_program_labels_are_the_listings(fmt, group):
    """The listing's labels of a configuration (q7emu.kernels.dequant.listing_run) are its program's .equ symbols that
    name a bundle (a note in bundle_notes.BUNDLE_NOTES), each issued by the program."""
    from q7emu.kernels.programs import dequant_symbols
    from q7emu.kernels.programs.bundle_notes import BUNDLE_NOTES
    path = dequant_path(next(r for r in DEQUANT_FORMATS if r.code == fmt).paths[group])
    syms = _labels_of(program_file(path.name), dequant_symbols(fmt, group))
    _, labels, notes = dequant.listing_run(1, fmt, group, {})
    assert notes == BUNDLE_NOTES and len(labels) >= 10
    assert labels == {v: k for k, v in syms.items() if k in BUNDLE_NOTES}
    issued = set(kernel_program(path.name, fmt=fmt, group=group).decoded.bundles[:, 2].tolist())
    fp6_only = {"RB_PRED", "RB_SEL2", "RB_SEL3", "RB_SEL4", "RB_MACC0", "RB_MACC1"}     # rebias.inc's FP6 bundles
    assert {t for t, n in labels.items() if n not in fp6_only} <= issued


@pytest.mark.parametrize("src_dtype,dst", [("float16", "float8_e4m3fn"), ("bfloat16", "float8_e5m2")])
def test_quantize_mx_program_labels_are_the_listings(src_dtype, dst):
    """As for TensorDequantize (q7emu.kernels.quantize_mx.listing_run): the labels are the program's .equ symbols with
    a note, each issued by the program (Q_NONFIN under nonfinite=ocp only)."""
    from q7emu.kernels.programs import quantize_mx_symbols
    from q7emu.kernels.programs.bundle_notes import BUNDLE_NOTES
    syms = _labels_of(program_file("quantize_mx"), quantize_mx_symbols(src_dtype, dst))
    _, labels, notes = quantize_mx.listing_run(1, src_dtype, dst, {})
    assert notes == BUNDLE_NOTES and len(labels) > 40
    assert labels == {v: k for k, v in syms.items() if k in BUNDLE_NOTES}
    issued = {n: set(kernel_program("quantize_mx", src_dtype=src_dtype, dst_dtype=dst, knobs={"nonfinite": n}
                                    ).decoded.bundles[:, 2].tolist()) for n in ("sim", "ocp")}
    assert set(labels) - {syms["Q_NONFIN"]} <= issued["sim"] and set(labels) <= issued["ocp"]


@pytest.mark.parametrize("kernel,kw", [("proc_4bit_mx_8", dict(fmt=3, group=8, knobs={"mx_layout": "word-block"})),
                                       ("proc_4bit_non_mx", dict(fmt=2, group=0)),
                                       ("proc_4bit_non_mx", dict(fmt=3, group=0, knobs={"nibble_order": "high-first"})),
                                       ("proc_6bit_non_mx", dict(fmt=4, group=0, knobs={"fp6_packing": "msb-first"})),
                                       ("quantize_mx", dict(src_dtype="bfloat16", dst_dtype="float8_e5m2"))])
def test_printed_program_is_the_program(kernel, kw):
    """The text `listing --asm` prints assembles to the same program (bundles, tags, data, labels) and runs the same."""
    prog = kernel_program(kernel, **kw)
    again = assemble(prog.text(), name=prog.name)
    assert again.text() == prog.text()
    d1, d2 = prog.decoded, again.decoded
    assert np.array_equal(d1.insns, d2.insns)
    assert np.array_equal(d1.bundles[:, :4], d2.bundles[:, :4])
    assert np.array_equal(d1.data, d2.data) and d1.entry == d2.entry


def test_every_kernel_has_a_program():
    from q7emu import registry
    assert {e.name for e in registry.KERNELS} == set(PROGRAM_FILES)
