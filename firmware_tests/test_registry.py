"""The kernel registry (q7emu.registry): consistent with the model, the ISA, the sources and the build;
every entry's kernel equals its golden model; the registry imports without the compiled extensions.

A new registry entry is checked by every test here without editing it (the "Add a kernel" checklist).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from q7emu import registry
from q7emu.analysis.trace import Recorder
from q7emu.isa.enums import Engine, Opcode
from q7emu.isa.kernel_info import engine_of
from q7emu.machine.machine import MACHINE_KNOBS, RECORD_HANDLERS
from q7emu.model.kernels import DEQUANT_PATHS, PATH_RATIO, KernelId, path_name

ROOT = Path(__file__).resolve().parents[1]
ENTRIES = {e.name: e for e in registry.KERNELS}


def test_one_entry_per_kernel_id_in_id_order():
    assert [e.kernel_id for e in registry.KERNELS] == list(KernelId)
    assert registry.names() == tuple(k.kernel for k in KernelId)
    for e in registry.KERNELS:
        assert registry.get(e.name) is registry.get(int(e.kernel_id)) is registry.get(e.kernel_id) is e
        assert e.name == e.kernel_id.name.lower()
    assert len({e.abbr for e in registry.KERNELS}) == len(registry.KERNELS)
    assert registry.find("proc_8bit") is None and registry.find(0) is None
    with pytest.raises(ValueError, match="must be one of proc_4bit_non_mx"):
        registry.get("proc_8bit")


@pytest.mark.parametrize("name", ENTRIES)
def test_engine_and_opcode_agree_with_the_isa(name):
    e = ENTRIES[name]
    assert Opcode(e.opcode) in RECORD_HANDLERS            # the machine has a record handler for its opcode
    assert engine_of(e.opcode) is Engine(e.engine)
    assert e in registry.for_opcode(e.opcode)


def test_paths_are_the_model_paths():
    pairs = [p for e in registry.KERNELS for p in e.paths]
    assert sorted(pairs) == sorted(DEQUANT_PATHS) and len(pairs) == len(set(pairs))
    for (fmt, group), kid in DEQUANT_PATHS.items():
        e = registry.select(0x7B, fmt, group)
        assert e is not None and e.kernel_id is kid and path_name(fmt, group) == e.name
        assert e.name in PATH_RATIO and e.group_size == group and fmt in e.fmts
    assert registry.select(0x7B, 4, 8) is None                # FP6 is never MX
    assert registry.select(0xE3) is ENTRIES["quantize_mx"]
    assert registry.select(0x45) is None and registry.for_opcode(0x45) == ()


@pytest.mark.parametrize("name", ENTRIES)
def test_knobs_are_model_knobs(name):
    e = ENTRIES[name]
    assert e.knobs and set(e.knobs) <= set(MACHINE_KNOBS)
    assert list(e.knobs) == [k for k in MACHINE_KNOBS if k in e.knobs]        # table order
    if e.paths:      # per record: a subset; over all its paths: every knob of the kernel
        per_record = [set(e.knobs_for(f, g)) for f, g in e.paths]
        assert all(k <= set(e.knobs) for k in per_record) and set().union(*per_record) == set(e.knobs)
    else:
        assert e.knobs_for() == e.knobs
    assert bool(e.paths) != bool(e.src_dtypes and e.dst_dtypes)   # a kernel has fmt paths or dtypes


@pytest.mark.parametrize("name", ENTRIES)
def test_sources_extension_and_listing_exist(name):
    e = ENTRIES[name]
    for rel in e.sources:
        assert (ROOT / rel).is_file(), rel
    # every kernel runs as its program (docs/asm.md §6) on the interpreter module
    from q7emu.kernels.programs import program_file
    assert ROOT / e.sources[-1] == program_file(e.function) and e.function == e.name
    assert e.extension == "q7emu.kernels._program" and callable(e.load().run_translated)
    cfg = {"fmt": e.paths[0][0]} if e.paths else {"src_dtype": e.src_dtypes[0], "dst_dtype": e.dst_dtypes[0]}
    raw, labels, notes = e.listing_run(1, dict(cfg, knobs={}))
    # the listing's labels are the program's, each with its note (docs/model.md §9.1)
    assert labels and set(labels.values()) <= set(notes) and len(raw) > 0


def _inputs(e: registry.KernelEntry, rng: np.random.Generator):
    """(args, knobs) of one call per path / dtype pair of a kernel: several partitions and passes."""
    if e.paths:
        for fmt, group in e.paths:
            a, _ = PATH_RATIO[e.name]
            src = rng.integers(0, 256, (3, 4 * a * 23), dtype=np.uint8)
            if group == 8:
                src[:, ::5] = 110 + src[:, ::5] % 40
            yield (src, fmt, group), {}
    else:
        for s in e.src_dtypes:
            for d in e.dst_dtypes:
                x = (rng.standard_normal((64, 28)) * 2.0 ** rng.integers(-8, 8, (64, 1))).astype(
                    np.float16 if s == "float16" else ml_dtypes.bfloat16)
                yield (x, d), {}


@pytest.mark.parametrize("name", ENTRIES)
def test_every_kernel_equals_its_golden_model_and_traces_its_id(name):
    e = ENTRIES[name]
    rng = np.random.default_rng(int(e.kernel_id))
    n = 0
    for args, kw in _inputs(e, rng):
        want = e.golden(*args, **kw)
        got = e.handler(*args, **kw)
        want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
        assert all(np.array_equal(a, b) for a, b in zip(got, want)), (name, args[1:])
        rec = Recorder()
        e.handler(*args, trace=rec, **kw)
        assert set(rec.trace.records["kernel"].tolist()) == {int(e.kernel_id)}
        assert [r["kernel"] for r in rec.trace.runs] == [e.name]
        n += 1
    assert n


def test_registry_and_golden_machine_import_without_the_extensions():
    """With every compiled module blocked: the registry and the machine import, the
    golden backend replays a case, and a kernel call is a one-line Q7Error that says to build."""
    code = r'''
import sys, importlib.abc
BLOCK = {"q7emu.primitives._ivp", "q7emu.kernels._program"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in BLOCK:
            raise ImportError(f"blocked {name}")
sys.meta_path.insert(0, Block())
import numpy as np
from q7emu import registry
from q7emu.errors import Q7Error
from q7emu.machine.cases import load_case, run_case
res = run_case(load_case(sys.argv[1]), backend="golden")
assert res.ok, res
for e in registry.KERNELS:
    assert e.golden and e.handler
try:
    registry.get("proc_4bit_non_mx").handler(np.zeros((1, 4), np.uint8), 1)
except Q7Error as err:
    msg = str(err)
    assert "\n" not in msg and "build the extensions" in msg and "q7emu.kernels._program" in msg, msg
else:
    raise AssertionError("ran without the extension")
assert not BLOCK & set(sys.modules)
print("ok")
'''
    case = ROOT / "examples" / "cases" / "mariana" / "mariana_7b_proc_4bit_mx_8_e2m1.json"
    r = subprocess.run([sys.executable, "-c", code, str(case)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
