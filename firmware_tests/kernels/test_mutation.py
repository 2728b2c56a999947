"""Mutation tests (docs/traces.md §8): every op of a kernel that the seeds name in its path does work. Making it
a no-op (its destinations keep their old values) changes the output bytes for some input.

The expectations are "the output differs from the unmutated run": nothing here is taken from the kernel's own
bytes except that comparison. The inputs cover every code byte in every position, and (MX) every scale byte.
"""
import ml_dtypes
import numpy as np
import pytest
from kernel_checks import DEQUANT_VARIANTS as DEQUANT

import q7emu
from q7emu.analysis.path_facts import classify
from q7emu.analysis.trace import Recorder
from q7emu.model.format_table import FP8_FORMATS
from q7emu.model.kernels import dequant_kernel


def _input(fmt, group):
    """uint8 [partitions, bytes]: every code byte (and MX: every scale byte 0..255) at least once."""
    if group == 8:
        rng = np.random.default_rng(7)
        rows = []
        for p in range(128):                      # partition p: 16 groups, scales 2p and 2p + 1, random codes
            r = rng.integers(0, 256, 80, dtype=np.uint8)
            r[0::10] = 2 * p                      # scale-first layout: byte 5g is group g's scale
            r[5::10] = 2 * p + 1
            rows.append(r)
        return np.stack(rows)
    width = 96 if fmt == 4 else 64             # two passes: a pass loads the next one and finishes the one before
    b = np.arange(256, dtype=np.uint8)
    return np.stack([np.roll(np.tile(b, 2)[:2 * width], k)[:width] for k in range(0, 256, 7)])


def _sites(trace):
    """(mnemonic, bundle) of every op the run executed, in first-execution order."""
    seen = {}
    for b, m in zip(trace.records["bundle"].tolist(), trace.mnemonics()):
        seen.setdefault((m, b), None)
    return list(seen)


def _run(src, fmt, group, knobs, mutate=None):
    rec = Recorder(window=(0, 0), mutate=mutate)                 # record nothing; mutate the run
    out = q7emu.dequantize(src, fmt, group, trace=rec, **knobs)
    return out, rec.mutate_hits


@pytest.mark.parametrize("fmt,group,knobs", DEQUANT)
def test_every_seed_named_op_does_work(fmt, group, knobs):
    src = _input(fmt, group)
    kernel = dequant_kernel(fmt, group).kernel
    rec = Recorder()
    want = q7emu.dequantize(src[:1], fmt, group, trace=rec, **knobs)
    sites = [s for s in _sites(rec.trace) if classify(kernel, s[0]).kind.startswith("firmware")]
    assert sites, "the path issues no seed-named op"
    base = q7emu.dequantize(src, fmt, group, **knobs)
    assert np.array_equal(base[:1], want)
    idle = []
    for site in sites:
        got, hits = _run(src, fmt, group, knobs, mutate=site)
        assert hits > 0, site
        if np.array_equal(got, base):
            idle.append(site)
    assert idle == [], f"{kernel}: seed-named ops whose removal changes nothing: {idle}"


def test_mutation_removes_only_the_named_ops():
    src = _input(1, 0)
    base = q7emu.dequantize(src, 1, 0)
    got, hits = _run(src, 1, 0, {}, mutate=("nosuchop", 3))
    assert hits == 0 and np.array_equal(got, base)
    rec = Recorder()
    q7emu.dequantize(src[:1], 1, 0, trace=rec)
    pack = next(s for s in _sites(rec.trace) if s[0] == "sel2nx8i")
    got, hits = _run(src, 1, 0, {}, mutate=pack)
    # one pack per 32-byte pass (two per row), in the pass (it packs the pass before) and one after the loop
    assert hits == 3 * src.shape[0] and not np.array_equal(got, base)


@pytest.mark.parametrize("bad", [("addnx16",), ("x" * 32, 3), ("", 3), ("addnx16\u00e9", 3), ("addnx16", -1),
                                 ("addnx16", 1 << 16), "addnx16"])
def test_recorder_rejects_a_bad_mutation(bad):
    with pytest.raises(q7emu.InvalidArgument):
        Recorder(mutate=bad)


def _qmx_input(dtype):
    """[32, 64] fp16 / bf16: every magnitude range the format has, zeros, subnormals, Inf and NaN blocks."""
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 1 << 16, (32, 64), dtype=np.uint16)
    bits[:8, :4] = 0x7C00 if dtype == np.float16 else 0x7F80      # an Inf block
    bits[8:16, :4] = 0x7E00 if dtype == np.float16 else 0x7FC0    # a NaN block
    bits[16:24, 4:8] = 0x0001                                     # a subnormal block (underflow)
    bits[24:, 8:12] = 0                                           # a zero block
    return bits.view(dtype)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("dst", [f.name for f in FP8_FORMATS])
def test_every_seed_named_quantize_mx_op_does_work(dtype, dst):
    x = _qmx_input(dtype)
    rec = Recorder()
    q7emu.quantize_mx(x, dst, trace=rec)
    sites = [s for s in _sites(rec.trace) if classify("quantize_mx", s[0]).kind.startswith("firmware")]
    assert len(sites) >= 4
    base = q7emu.quantize_mx(x, dst)
    idle = []
    for site in sites:
        r = Recorder(window=(0, 0), mutate=site)
        got = q7emu.quantize_mx(x, dst, trace=r)
        assert r.mutate_hits > 0, site
        if all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(got, base)):
            idle.append(site)
    assert idle == [], f"quantize_mx: seed-named ops whose removal changes nothing: {idle}"
