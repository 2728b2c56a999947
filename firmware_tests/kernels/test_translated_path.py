"""Untraced TensorDequantize and QuantizeMX calls run their programs' translations (docs/asm.md §9, "The default
path"): every configuration is in the translations' table with its program's translation, immediates and data
section; a call takes it (a spy on the interpreter module sees it), gives the interpreter's bytes
(Q7EMU_TRANSLATIONS=off: the program op by op through the primitives' bodies) on random inputs with tails on one core
and several, runs the interpreter when the translation stops, and stops on Ctrl-C inside the translation. The
generated table's decoded programs are the assembled ones. The kernels' exhaustive tests (test_dequant_kernel.py,
test_quantize_mx_kernel.py) compare this path with the golden models."""
from __future__ import annotations

import itertools
import os
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import q7emu
from firmware_tests.qmx_support import special_bits
from firmware_tests.signal_support import cpu_seconds, default_dispositions
from q7emu.errors import InvalidArgument
from q7emu.kernels import dequant, extension, quantize_mx
from q7emu.kernels.programs import (
    QUANTIZE_MX_KNOBS_READ,
    dequant_configuration,
    dequant_knobs_read,
    quantize_mx_configuration,
)
from q7emu.kernels.programs.configurations_gen import CONFIGURATIONS, DATA_SECTIONS
from q7emu.model.format_table import DEQUANT_FORMATS, dequant_path
from q7emu.model.knobs import QUANTIZE_MX_DST_DTYPES, QUANTIZE_MX_SRC_DTYPES, knob

ROOT = Path(__file__).resolve().parents[2]
LEVEL = extension.select_level()
PROGRAM = extension.load_extension(dequant.EXTENSION, LEVEL)
needs_translations = pytest.mark.skipif(not PROGRAM.TRANSLATED, reason=f"the {LEVEL} level has no translations")


def configurations() -> list[tuple[int, int, dict[str, str]]]:
    """(fmt, group, knobs) of every TensorDequantize configuration, from the format table and the knob table."""
    out = []
    for rec in DEQUANT_FORMATS:
        for group in sorted(rec.paths):
            names = dequant_knobs_read(rec.code, group)
            for values in itertools.product(*(knob(n).values for n in names)):
                out.append((rec.code, group, dict(zip(names, values))))
    return out


CONFIGS = configurations()
#: (src_dtype, dst_dtype, knobs) of every QuantizeMX configuration
QMX_CONFIGS = [(s, d, dict(zip(QUANTIZE_MX_KNOBS_READ, values)))
               for s, d in itertools.product(QUANTIZE_MX_SRC_DTYPES, QUANTIZE_MX_DST_DTYPES)
               for values in itertools.product(*(knob(n).values for n in QUANTIZE_MX_KNOBS_READ))]


@pytest.fixture
def spy(monkeypatch):
    """Every run_translated call of this level's interpreter module: its translation index and partitions."""
    calls: list[tuple[int, int]] = []
    real = PROGRAM.run_translated

    def recording(index, imm, data, data_base, regions, offsets, *args):
        calls.append((index, offsets.shape[0]))
        return real(index, imm, data, data_base, regions, offsets, *args)
    monkeypatch.setattr(PROGRAM, "run_translated", recording)
    monkeypatch.delenv(extension.TRANSLATIONS_ENV, raising=False)
    yield calls


def _source(fmt: int, group: int, rows: int, units: int, rng: np.random.Generator) -> np.ndarray:
    path = dequant_path(next(r for r in DEQUANT_FORMATS if r.code == fmt).paths[group])
    return rng.integers(0, 256, (rows, 4 * path.ratio[0] * units), dtype=np.uint8)


def _interpreted(monkeypatch, api: Callable[..., Any], *args, **kw) -> Any:
    """``api(*args, **kw)`` (q7emu.dequantize, quantize_mx) with Q7EMU_TRANSLATIONS=off: the interpreter."""
    monkeypatch.setenv(extension.TRANSLATIONS_ENV, "off")
    try:
        return api(*args, **kw)
    finally:
        monkeypatch.delenv(extension.TRANSLATIONS_ENV)


@needs_translations
def test_every_configuration_has_its_translation():
    names = {dequant_configuration(f, g, k) for f, g, k in CONFIGS}
    qmx = {quantize_mx_configuration(s, d, k) for s, d, k in QMX_CONFIGS}
    assert len(names) == len(CONFIGS) == 44 and len(qmx) == len(QMX_CONFIGS) == 64
    assert set(CONFIGURATIONS) == names | qmx
    from q7emu.kernels.programs.decoded_gen import PROGRAMS
    for index, imm, data_at, shape, _ in CONFIGURATIONS.values():
        assert 0 <= index < len(PROGRAM.TRANSLATIONS) and 0 <= data_at < len(DATA_SECTIONS)
        assert 0 <= shape < len(PROGRAMS)
        assert len(imm) == PROGRAM.TRANSLATIONS[index][4]      # the variant, then the runtime immediates


def _is_its_entry(prog: Any, name: str, cp: Any) -> None:
    """The assembled program ``prog`` matches configuration ``name``'s table entry (its translation and
    immediates), and has its data section and the decoded form ``cp`` (its ConfiguredProgram) runs."""
    from q7emu.asm.translate import translation_of
    index, imm, data_at, _, _ = CONFIGURATIONS[name]
    found = translation_of(prog)
    assert found is not None and found[0] == index and tuple(found[1]) == (tuple(imm) or (0,))
    d = prog.decoded
    assert bytes(d.data) == DATA_SECTIONS[data_at] == bytes(cp.data)
    assert np.array_equal(d.insns, cp.insns) and np.array_equal(d.bundles[:, :4], cp.bundles[:, :4])
    assert np.array_equal(d.wmask, cp.wmask) and d.entry == cp.entry


@needs_translations
def test_the_table_is_what_the_programs_give():
    """Each entry is what matching its configuration's assembled program gives (q7emu.asm.translate.match), with
    that program's data section and decoded form (what traced and interpreted calls run); a knob the configuration
    does not read does not change its program."""
    from q7emu.asm.kernels import kernel_program
    for fmt, group, knobs in CONFIGS:
        name = dequant_configuration(fmt, group, knobs)
        cp = dequant.configured_program(fmt, group, knobs)
        path = next(r for r in DEQUANT_FORMATS if r.code == fmt).paths[group]
        every = {n: knob(n).values[-1] for n in ("nibble_order", "fp6_packing", "mx_layout", "mx_scale", "nf4_table")}
        every.update(knobs)
        for prog in (kernel_program(path, fmt=fmt, group=group, knobs=knobs),
                     kernel_program(path, fmt=fmt, group=group, knobs=every)):
            _is_its_entry(prog, name, cp)


@needs_translations
def test_the_quantize_mx_table_is_what_the_programs_give():
    """As for TensorDequantize: each QuantizeMX entry is its assembled program's match, data section and decoded
    form; scale_layout, which places the scale row, does not change the program."""
    from q7emu.asm.kernels import kernel_program
    for src, dst, knobs in QMX_CONFIGS:
        name = quantize_mx_configuration(src, dst, knobs)
        cp = quantize_mx.configured_program(src, dst, knobs)
        for prog in (kernel_program("quantize_mx", src_dtype=src, dst_dtype=dst, knobs=knobs),
                     kernel_program("quantize_mx", src_dtype=src, dst_dtype=dst,
                                    knobs=dict(knobs, scale_layout="scatter"))):
            _is_its_entry(prog, name, cp)


@needs_translations
@pytest.mark.parametrize("src_dtype,dst,knobs", QMX_CONFIGS, ids=lambda x: str(x))
def test_an_untraced_quantize_mx_call_runs_the_translation_and_gives_the_interpreters_bytes(src_dtype, dst, knobs,
                                                                                          spy, monkeypatch):
    rng = np.random.default_rng(len(str(knobs)) + 10 * len(spy) + (src_dtype == "bfloat16") + 7 * (dst[-1] == "2"))
    for rows, columns, layout in ((32, 4, "compact"), (64, 36, "scatter"), (32, 100, "compact")):
        bits = special_bits(rng, (rows, columns))
        before = len(spy)
        got = quantize_mx.quantize_mx(bits, dst, src_format=src_dtype, scale_layout=layout, **knobs)
        assert len(spy) == before + 1 and spy[-1][1] == rows // 8
        want = _interpreted(monkeypatch, quantize_mx.quantize_mx, bits, dst, src_format=src_dtype, scale_layout=layout,
                            **knobs)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (rows, columns, layout)
        assert len(spy) == before + 1


@needs_translations
def test_quantize_mx_on_several_cores_and_a_stopped_translation(spy, monkeypatch):
    bits = special_bits(np.random.default_rng(2), (128, 300))
    want = _interpreted(monkeypatch, quantize_mx.quantize_mx, bits, "e4m3", src_format="float16", cores=1)
    got = quantize_mx.quantize_mx(bits, "e4m3", src_format="float16", cores=4)
    assert len(spy) == 4 and sum(n for _, n in spy) == 16
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    calls = []
    monkeypatch.setattr(PROGRAM, "run_translated", lambda *a: calls.append(a) or -9)
    got = quantize_mx.quantize_mx(bits, "e4m3", src_format="float16", cores=2)
    assert len(calls) == 2
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@needs_translations
@pytest.mark.parametrize("fmt,group,knobs", CONFIGS, ids=lambda x: str(x))
def test_an_untraced_call_runs_the_translation_and_gives_the_interpreters_bytes(fmt, group, knobs, spy, monkeypatch):
    rng = np.random.default_rng(fmt * 1000 + group * 100 + len(spy) + len(str(knobs)))
    path = dequant_path(next(r for r in DEQUANT_FORMATS if r.code == fmt).paths[group])
    for units in (1, path.pass_bytes // (4 * path.ratio[0]) + 1, 37):
        src = _source(fmt, group, 5, units, rng)
        if group == 8:
            src[:, ::5] = 100 + src[:, ::5] % 60          # scales near 127: finite outputs
        before = len(spy)
        got = q7emu.dequantize(src, fmt, group, **knobs)
        assert len(spy) == before + 1 and spy[-1][1] == 5
        assert np.array_equal(got, _interpreted(monkeypatch, q7emu.dequantize, src, fmt, group, **knobs)), units
        assert len(spy) == before + 1                      # off: the interpreter, no translation


@needs_translations
def test_a_knob_the_configuration_does_not_read_keeps_the_translation(spy):
    src = _source(1, 0, 2, 9, np.random.default_rng(3))
    want = q7emu.dequantize(src, 1, 0)
    got = q7emu.dequantize(src, 1, 0, fp6_packing="msb-first", mx_layout="word-block", mx_scale="e8m0-nonan")
    assert len(spy) == 2 and spy[0][0] == spy[1][0] and np.array_equal(got, want)


@needs_translations
@pytest.mark.parametrize("fmt,group", [(1, 0), (3, 0), (4, 0), (2, 8)])
def test_several_cores_give_the_same_bytes(fmt, group, spy, monkeypatch):
    src = _source(fmt, group, 128, 300, np.random.default_rng(fmt))
    got = q7emu.dequantize(src, fmt, group, cores=4)
    assert len(spy) == 4 and sum(n for _, n in spy) == 128
    assert np.array_equal(got, _interpreted(monkeypatch, q7emu.dequantize, src, fmt, group, cores=1))


@needs_translations
def test_a_translation_that_stops_hands_its_block_to_the_interpreter(monkeypatch):
    """run_translated answering an error code (ERR_FALLBACK, without writing): the call's output is the
    interpreter's anyway (the output buffer is uninitialised: without the interpreter it would be whatever was
    there)."""
    calls = []
    monkeypatch.setattr(PROGRAM, "run_translated", lambda *a: calls.append(a) or -9)
    monkeypatch.delenv(extension.TRANSLATIONS_ENV, raising=False)
    src = _source(1, 8, 64, 200, np.random.default_rng(11))
    src[:, ::5] = 120
    got = q7emu.dequantize(src, 1, 8, cores=2)
    assert len(calls) == 2
    assert np.array_equal(got, _interpreted(monkeypatch, q7emu.dequantize, src, 1, 8))


def test_a_traced_call_and_off_run_the_interpreter(spy, monkeypatch):
    from q7emu.analysis.trace import Recorder
    src = _source(1, 0, 2, 9, np.random.default_rng(5))
    want = _interpreted(monkeypatch, q7emu.dequantize, src, 1, 0)
    assert np.array_equal(q7emu.dequantize(src, 1, 0, trace=Recorder()), want)
    bits = special_bits(np.random.default_rng(6), (32, 20))
    want_qmx = _interpreted(monkeypatch, quantize_mx.quantize_mx, bits, "e5m2", src_format="bfloat16")
    got_qmx = quantize_mx.quantize_mx(bits, "e5m2", src_format="bfloat16", trace=Recorder())
    assert np.array_equal(got_qmx[0], want_qmx[0]) and np.array_equal(got_qmx[1], want_qmx[1])
    assert spy == []


@pytest.mark.parametrize("value", ["yes", "0", "OFF"])
def test_a_bad_q7emu_translations_names_the_variable(value, monkeypatch):
    monkeypatch.setenv(extension.TRANSLATIONS_ENV, value)
    with pytest.raises(InvalidArgument, match="Q7EMU_TRANSLATIONS"):
        q7emu.dequantize(np.zeros((1, 4), np.uint8), 1, 0)
    r = subprocess.run([sys.executable, "-m", "q7emu", "replay", str(ROOT / "examples" / "cases")],
                       capture_output=True, text=True, cwd=ROOT, env=dict(os.environ))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Q7EMU_TRANSLATIONS" in r.stderr, r.stderr


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import q7emu
    from q7emu.kernels import dequant, extension
    program = extension.load_extension(dequant.EXTENSION)
    real, stopped = program.run_translated, []

    def watched(*args):
        try:
            return real(*args)
        except KeyboardInterrupt:
            stopped.append(1)                # raised by the translated run itself
            raise
    program.run_translated = watched
    src = np.random.default_rng(1).integers(0, 256, (16, 1 << 20), dtype=np.uint8)   # 200k bundles a call
    q7emu.dequantize(src[:1], 1, 0)
    print("go", flush=True)
    while True:
        try:
            while True:     # the calls' loop inside the try: a Ctrl-C at its back edge lands here too
                q7emu.dequantize(src, 1, 0, cores=1)
        except KeyboardInterrupt:
            print("run_translated" if stopped else "elsewhere", flush=True)
            if stopped:
                sys.exit(130)
""")


@needs_translations
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals a child process, reads /proc")
def test_ctrl_c_stops_a_translated_call_within_a_second():
    """SIGINT while the translation runs (the child says whether the KeyboardInterrupt it got came out of
    run_translated; if not, it goes on and gets another) stops it within a second."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop(extension.TRANSLATIONS_ENV, None)
    with default_dispositions():
        p = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, cwd=ROOT)
    try:
        assert p.stdout.readline().strip() == b"go", p.stderr.read()
        for _ in range(20):
            start = cpu_seconds(p.pid)
            while cpu_seconds(p.pid) < start + 0.2:     # back in its loop of calls: its CPU time grows
                select.select([p.stdout], [], [], 0.02)
            cpu_before = cpu_seconds(p.pid)
            p.send_signal(signal.SIGINT)
            ready, _, _ = select.select([p.stdout], [], [], 30)
            assert ready, "Ctrl-C did not stop the call"
            line = p.stdout.readline().strip()
            assert line in (b"run_translated", b"elsewhere"), (line, p.stderr.read())
            if line == b"run_translated":
                break
        else:
            raise AssertionError("no Ctrl-C landed inside the translation in 20 tries")
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        assert p.returncode == 130
        # the CPU the child spent after the Ctrl-C (its stop, the report, its exit), not the host's load
        assert usage.ru_utime + usage.ru_stime - cpu_before < 1.0
    finally:
        if p.returncode is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()


@needs_translations
def test_an_untraced_call_never_reads_the_decoded_programs():
    """The decoded programs (decoded_gen, about 0.4 MB of Python) are read by the interpreter's calls alone: an untraced
    call of each kernel, in a fresh process, runs its translation without importing them; a traced one imports
    them."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import q7emu
        from q7emu.analysis.trace import Recorder
        q7emu.dequantize(np.zeros((2, 8), np.uint8), 1, 0)
        q7emu.dequantize(np.full((2, 40), 120, np.uint8), 2, 8)
        q7emu.quantize_mx(np.ones((32, 8), np.uint16), src_format="bfloat16")
        print("decoded_gen" in "".join(sys.modules))
        q7emu.quantize_mx(np.ones((32, 8), np.uint16), src_format="bfloat16", trace=Recorder())
        print("decoded_gen" in "".join(sys.modules))
    """)
    env = dict(os.environ)
    env.pop(extension.TRANSLATIONS_ENV, None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]
