"""The op table (q7emu/primitives/optable.py) against the compiled module, the family files and the tests.

* list() / catalog() cover every primitive named in issue 2, each with semantics, a docs/firmware.md reference and a
  provenance; an op whose lane map public code pins is PUBLIC HIGH / MED with its evidence, an open one is
  "q7emu choice"; the public evidence (q7emu/primitives/evidence.toml) names real ops, sources and strengths;
* the table and the compiled module agree both ways: every row has a wrapper taking the table's arguments,
  every wrapper _ivp exports has a row; a call with operands of the table's dtypes and shapes returns the
  table's dtypes and shapes (one parametrized case per row, C-only rows through _ivp._c_<mnemonic>); the
  generated wrapper table and type stub are up to date; every row's C primitive is defined in its family file;
* every row is declared (COVERS) by exactly one family test file, and every declared mnemonic is called there
  inside a function that asserts;
* every wrapper rejects bad operands (wrong lane count, wrong dtype, values that do not fit the lanes,
  out-of-range immediates, bad vbool / pr / memory) with q7emu.errors.InvalidArgument.
"""
from __future__ import annotations

import ast
import inspect
import pathlib
import re

import numpy as np
import pytest

from q7emu.errors import InternalError, InvalidArgument
from q7emu.primitives import _ivp, evidence, gen_wrappers, ivp, optable

HERE = pathlib.Path(__file__).parent
SRC = HERE.parents[1] / "src" / "primitives"
HELPERS = {"wvec_raw", "wvec_view", "la2nx8_stream", "time_op"}

# ===================================================================== issue 2 primitive list
ISSUE2 = """
l2a4nx8_ip labvdcmprs2nx8_xp sel2nx8 sel2nx8i sel2nx8i_s4 dselnx16 dselnx16t dseln_2x32t dcmprs2nx8
bmin2nx8 bminnx16 bminn_2x32 bmaxn_2x32 bmaxun_2x32 babssub2nx8 babssubunx16 baddnormnx16 bsubnormnx16
srln_2x32 mulus4tan16xr16 mulus4tn16xr16 mul4tan16xr16 dmulqa2n8xr8 muluupan16xr16 mulsupn16xr16
muluspa2n8xr16 muln_2x32 cvtg48n_2x32l cvtg48n_2x32h ultn_2xf32t ueqn_2xf32t oltnxf16t float16nx16t
floatn_2x32 truncn_2xf32 trunc16nxf16 cvtf32nxf16_0 cvtf32nxf16_1 negnxf16t addexpnxf16 extrpr2nx8
extrprn_2x32 dextrprn_2x32
""".split()
# "the other bmin/bmax widths", the packvr* / packl* families and the support ops the issue asks for
OTHER_WIDTHS = "bminu2nx8 bmax2nx8 bmaxu2nx8 bminunx16 bmaxnx16 bmaxunx16 bminun_2x32".split()
PACK_FAMILIES = {"packvr": {"packvr2nx24", "packvrnx48", "packvru2nx24", "packvrunx48", "packvrnr2nx24",
                            "packvrnrnx48", "packvrn_2x96"},
                 "packl": {"packl2nx24", "packlnx48", "packln_2x96"}}
SUPPORT = "lv2nx8_ip lav2nx8_xp sv2nx8_ip sav2nx8_xp and2nx8 or2nx8 xor2nx8 sllinx16 srlinx16 srainx16 " \
          "srlnx16 sllnx16 sranx16 add2nx8 addnx16 addn_2x32 sub2nx8 subnx16 subn_2x32".split()

PROVENANCES = optable.PROVENANCE_CLASSES


def _names():
    return [m for m, _ in ivp.list()]


def test_list_covers_issue2_primitives():
    names = set(_names())
    missing = [n for n in ISSUE2 + OTHER_WIDTHS + SUPPORT if n not in names]
    assert not missing, f"primitives missing from q7emu.primitives.ivp.list(): {missing}"
    for prefix, members in PACK_FAMILIES.items():
        assert members <= names, f"{prefix}*: missing {sorted(members - names)}"


def test_list_entries_have_semantics():
    rows = ivp.list()
    assert len(rows) == len({m for m, _ in rows}), "duplicate mnemonics"
    for m, sem in rows:
        assert isinstance(sem, str) and len(sem) > 10, m
        assert callable(getattr(ivp, m)), m


def test_catalog_reference_and_provenance():
    cat = ivp.catalog()
    assert [r.mnemonic for r in cat] == _names()
    for r in cat:
        assert r.semantics, r.mnemonic
        assert re.match(r"docs/(firmware|model|anchors)\.md §", r.reference), (r.mnemonic, r.reference)
        assert r.provenance.startswith(PROVENANCES), (r.mnemonic, r.provenance)


#: docs/firmware.md §8.1.12/13 leaves these lane maps open and no public code pins them (sel2nx8i: the immediate
#: numbers; sel2nx8i_s4: the unpack; dseln_2x32t: no variable-selector use; cvtg48: no use of the op itself)
OPEN_LANE_MAPS = ["sel2nx8i", "sel2nx8i_s4", "dseln_2x32t", "cvtg48n_2x32l", "cvtg48n_2x32h"]
#: lane maps that public code written with the real toolchain pins (docs/intrinsics.md): Cadence's user-guide
#: interleave (dsel), the #ifdef pair of Cadence's conv kernel (dmulqa / dextrprn), the xai_intrin.h 4-tap
#: fallback, the paired-MAC convention, Halide's f16 -> f32 conversion and Cadence's variable-length streams
PUBLIC_LANE_MAPS = ["dselnx16", "dselnx16t", "mulus4tn16xr16", "mulus4tan16xr16", "mul4tn16xr16", "mul4tan16xr16",
                    "dmulqa2n8xr8", "dextrprn_2x32", "muluupan16xr16", "mulsupn16xr16", "cvtf32nxf16_0",
                    "cvtf32nxf16_1", "lav2nx8_xp", "sav2nx8_xp"]
PUBLIC = (optable.PUBLIC_HIGH, optable.PUBLIC_MED)


@pytest.mark.parametrize("name", OPEN_LANE_MAPS)
def test_open_lane_maps_are_marked_q7emu_choice(name):
    # an open lane map: q7emu must say the mapping is its own choice
    row = {r.mnemonic: r for r in ivp.catalog()}[name]
    assert row.provenance.startswith("q7emu choice"), row
    assert optable.op(name).provenance == optable.Q7EMU_CHOICE


@pytest.mark.parametrize("name", PUBLIC_LANE_MAPS)
def test_public_lane_maps_are_marked_public_with_evidence(name):
    # a lane map public code pins: PUBLIC HIGH / MED, with at least one Evidence naming the place
    op = optable.op(name)
    assert op.provenance in PUBLIC, (name, op.provenance)
    row = {r.mnemonic: r for r in ivp.catalog()}[name]
    assert row.provenance.startswith(PUBLIC), row
    assert len(op.evidence) >= 1 and all(isinstance(e, evidence.Evidence) for e in op.evidence), name
    assert op.evidence == evidence.EVIDENCE[name]


def test_provenance_classes_include_public():
    assert {optable.PUBLIC_HIGH, optable.PUBLIC_MED} <= set(optable.PROVENANCE_CLASSES)
    assert {"PUBLIC HIGH", "PUBLIC MED", "q7emu choice"} <= set(PROVENANCES)
    assert len(set(optable.PROVENANCE_CLASSES)) == len(optable.PROVENANCE_CLASSES)


def test_evidence_is_well_formed():
    # every mnemonic with evidence is an op of the table; every Evidence names a known source and strength
    assert set(evidence.EVIDENCE) <= set(optable.BY_NAME), sorted(set(evidence.EVIDENCE) - set(optable.BY_NAME))
    for name, items in evidence.EVIDENCE.items():
        assert isinstance(items, tuple) and items, name
        for e in items:
            assert isinstance(e, evidence.Evidence), (name, e)
            assert e.source in evidence.SOURCES, (name, e.source)
            assert e.strength in evidence.STRENGTHS, (name, e.strength)
            assert e.lines and e.intrinsic.startswith("IVP_") and e.pins, (name, e)
            assert evidence.SOURCES[e.source].where(e.lines) in e.cite(), (name, e)
    assert set(evidence.STRENGTHS) == {"strong", "medium", "weak"}
    for key, src in evidence.SOURCES.items():
        assert src.path and src.what, key
        assert src.commit == "" or re.fullmatch(r"[0-9a-f]{40}", src.commit), (key, src.commit)
        assert src.repo == "" or re.fullmatch(r"[\w.-]+/[\w.-]+", src.repo), (key, src.repo)


_ROW = 'source = "halide-vectors"\nlines = "1"\nintrinsic = "IVP_X"\npins = "p"\nstrength = "weak"\n'


@pytest.mark.parametrize("text,says", [
    ("sel2nx8 = 1\n", "sel2nx8 is not a list of [[sel2nx8]] rows"),
    ("[[sel2nx8]]\n" + _ROW.replace('pins = "p"', "pins = 1"), "sel2nx8[0] needs the strings source, lines, "),
    ("[[sel2nx8]]\n" + _ROW + "extra = \"x\"\n", "sel2nx8[0] needs the strings"),
    ("[[sel2nx8]]\n" + _ROW + "[[sel2nx8]]\n" + _ROW.replace("halide-vectors", "nowhere"),
     "sel2nx8[1]: unknown source 'nowhere'"),
    ("[[sel2nx8]]\n" + _ROW.replace('"weak"', '"sure"'),
     "sel2nx8[0]: unknown source 'halide-vectors' or strength 'sure'"),
])
def test_evidence_file_rows_are_checked_when_read(text, says):
    # evidence.toml is read into EVIDENCE at import; a row that is not an Evidence of a known source and strength
    # stops the import, naming the row
    assert evidence._load("[[sel2nx8]]\n" + _ROW)["sel2nx8"] == (
        evidence.Evidence("halide-vectors", "1", "IVP_X", "p", "weak"),)
    with pytest.raises(InternalError, match=re.escape(f"{evidence.EVIDENCE_FILE}: {says}")):
        evidence._load(text)


def test_every_public_op_has_evidence():
    public = [op.mnemonic for op in optable.ALL_OPS if op.provenance in PUBLIC]
    assert public, "no PUBLIC HIGH / MED op"
    missing = [m for m in public if not optable.op(m).evidence]
    assert not missing, f"PUBLIC HIGH / MED ops without evidence: {missing}"
    # and the op's evidence is exactly its EVIDENCE entry (the table reads it, it does not keep its own copy)
    for m in public:
        assert optable.op(m).evidence == evidence.EVIDENCE[m], m


def test_helpers_not_listed():
    names = set(_names())
    assert not {"wvec_raw", "wvec_view", "la2nx8_stream", "SEL2NX8I_IMMS"} & names


# ===================================================================== the table against the module
def _wrapper(op):
    return getattr(_ivp, gen_wrappers.wrapper_name(op))


def test_every_row_has_a_wrapper_with_the_tables_arguments():
    for op in optable.ALL_OPS:
        params = list(inspect.signature(_wrapper(op)).parameters)
        assert params == [o.argname for o in op.args], op.mnemonic
        assert op.semantics in _wrapper(op).__doc__ and op.cite in _wrapper(op).__doc__, op.mnemonic


def test_every_exported_wrapper_has_a_row():
    exported = {n for n in dir(_ivp) if not n.startswith("_") and callable(getattr(_ivp, n))
                and not isinstance(getattr(_ivp, n), type)}
    assert exported - HELPERS == {o.mnemonic for o in optable.OPS}
    assert set(_ivp.__all__) - HELPERS - {"SEL2NX8I_IMMS"} == {o.mnemonic for o in optable.OPS}


def _check_returned(op, o, value):
    """One returned value against its table operand: type, dtype and shape."""
    if o.pytype == "list[int]":
        assert isinstance(value, list) and len(value) == o.lanes, (op.mnemonic, o.name)
        assert all(isinstance(x, int) for x in value), (op.mnemonic, o.name)
    elif o.pytype == "int":
        assert isinstance(value, int) and not isinstance(value, bool), (op.mnemonic, o.name, type(value))
        if o.kind == optable.PR:
            assert 0 <= value < 2 ** 64
    else:
        assert isinstance(value, np.ndarray), (op.mnemonic, o.name, type(value))
        assert value.shape == o.shape and value.dtype == np.dtype(o.dtype), (op.mnemonic, o.name, value.dtype)


@pytest.mark.parametrize("name", [o.mnemonic for o in optable.ALL_OPS])
def test_wrapper_returns_the_tables_dtypes_and_shapes(name):
    op = optable.op(name)
    out = _wrapper(op)(*ivp.example_args(name))
    rets = op.returns
    assert isinstance(out, tuple) == (len(rets) > 1), name
    outs = out if len(rets) > 1 else (out,)
    assert len(outs) == len(rets), name
    for o, value in zip(rets, outs):
        _check_returned(op, o, value)


def test_signed_when_switches_the_result_dtype():
    # sel2nx8i_s4: imm bit 4 (S) makes the nibbles sign-extended int16 lanes
    z = np.zeros(64, dtype=np.uint8)
    assert ivp.sel2nx8i_s4(z, z, 9).dtype == np.uint16
    assert ivp.sel2nx8i_s4(z, z, 16 | 9).dtype == np.int16


def test_generated_wrapper_files_are_current():
    if not SRC.exists():
        pytest.skip("no source tree")
    assert gen_wrappers.main(["--check"]) == 0


def test_every_row_is_defined_in_its_family_file():
    if not SRC.exists():
        pytest.skip("no source tree")
    defined = {}
    for f in SRC.glob("ivp_*.pxd"):
        for m in re.finditer(r"^cdef inline void (\w+)\(", f.read_text(), re.M):
            defined[m.group(1)] = f.stem
    for op in optable.ALL_OPS:
        assert defined.get(op.mnemonic) == op.pxd, (op.mnemonic, defined.get(op.mnemonic), op.pxd)
    assert set(optable.FAMILY_FILES) == {op.family for op in optable.ALL_OPS}


def test_a_primitive_takes_a_narrowed_accumulator_exactly_when_its_row_says_it_narrows():
    # docs/asm.md §9: a translation hands a narrowed accumulator (wacc48_t, wacc96_t) only to the ops whose
    # Op.narrows is set
    if not SRC.exists():
        pytest.skip("no source tree")
    takes = set()
    for f in SRC.glob("ivp_*.pxd"):
        takes |= {m.group(1) for m in re.finditer(r"^cdef inline void (\w+)\([^)]*\bwacc(?:48|96)_t\*", f.read_text(),
                                                  re.M)}
    assert takes & {op.mnemonic for op in optable.ALL_OPS} == {op.mnemonic for op in optable.ALL_OPS if op.narrows}
    assert {op.narrows for op in optable.ALL_OPS} == {"", optable.CARRY_UP, optable.BIT_WINDOW, optable.WHOLE_LANE}
    assert {op.lane_range for op in optable.ALL_OPS} == {"", optable.PRODUCT}
    for op in optable.ALL_OPS:
        wide = [o.view for o in op.operands if o.kind == optable.WVEC]
        if op.lane_range or op.narrows == optable.WHOLE_LANE:   # 96-bit lanes: 16 lanes in the first 16 cells
            assert wide == ["wvec96"] and op.narrows, op.mnemonic
        elif op.narrows:    # 48-bit lanes: what the narrowed cells hold the low bits of
            assert wide == ["wvec48"], op.mnemonic
    # a product bounds its lanes only as an overwrite (an accumulation's lanes grow with every call)
    assert all(o.role == optable.DST for op in optable.ALL_OPS if op.lane_range for o in op.operands
               if o.kind == optable.WVEC)


def test_every_row_has_a_slot_class_and_provenance():
    for op in optable.ALL_OPS:
        assert op.slot in optable.SLOT_CLASSES and op.slots, op.mnemonic
        assert op.provenance in optable.PROVENANCE_CLASSES, op.mnemonic
        assert re.match(r"docs/(firmware|model|anchors)\.md §", op.cite), op.mnemonic
    # docs/firmware.md §6.3: s2 Mul writes wvec; packs issue in s1; the _S4 form is pinned to s4
    for op in optable.ALL_OPS:
        writes_wvec = any(o.kind == optable.WVEC and o.role != optable.SRC for o in op.operands)
        assert writes_wvec == (op.slot == optable.MUL), op.mnemonic
        assert (op.family == optable.PACK) == (op.slot == optable.LD), op.mnemonic
    assert optable.op("sel2nx8i_s4").slots == ("s4",)


# ===================================================================== every row has a real test
def _test_files():
    return [p for p in sorted(HERE.glob("test_ivp_*.py")) if p.name != pathlib.Path(__file__).name]


def _covers(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "COVERS" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def _asserts(fn):
    """Does this function check anything (assert, eq / assert_* helpers, pytest.raises)?"""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("eq", "raises") or name.startswith("assert") or name.startswith("_check"):
                return True
    return False


def _strings(node, names):
    """String constants in node, following module-level names (a parametrize list defined elsewhere)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.add(n.value)
        elif isinstance(n, ast.Name) and n.id in names:
            out |= _strings(names.pop(n.id), names)
    return out


def _called_in_asserting_functions(tree):
    """Mnemonics an asserting function calls: ivp.<m> / _ivp._c_<m> attribute uses in its body, and, where
    it calls getattr(ivp, name), the names its parametrize decorators feed it."""
    consts = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name)}
    out = set()
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and _asserts(fn)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") in ("ivp", "_ivp"):
                out.add(node.attr[3:] if node.attr.startswith("_c_") else node.attr)
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr" \
                    and getattr(node.args[0], "id", "") == "ivp":
                for dec in fn.decorator_list:
                    out |= _strings(dec, dict(consts))
    return out


def test_every_row_is_declared_by_one_family_test_file():
    homes: dict[str, list[str]] = {}
    for p in _test_files():
        for m in _covers(ast.parse(p.read_text())):
            homes.setdefault(m, []).append(p.name)
    assert set(homes) == set(optable.BY_NAME), (set(optable.BY_NAME) - set(homes), set(homes) - set(optable.BY_NAME))
    assert all(len(v) == 1 for v in homes.values()), {m: v for m, v in homes.items() if len(v) > 1}


@pytest.mark.parametrize("path", _test_files(), ids=lambda p: p.name)
def test_declared_coverage_is_tested(path):
    tree = ast.parse(path.read_text())
    declared = _covers(tree)
    assert declared, f"{path.name} declares no COVERS"
    missing = declared - _called_in_asserting_functions(tree)
    assert not missing, f"{path.name}: declared but never called inside an asserting test: {sorted(missing)}"


# ===================================================================== operand validation
def _bad(o):
    """(label, value) pairs that the wrapper must reject with InvalidArgument, from the operand's table record."""
    if o.kind == optable.VEC:
        dt, n = np.dtype(o.dtype), o.lanes
        out = [("lanes-1", np.zeros(n - 1, dtype=dt)), ("lanes+1", np.zeros(n + 1, dtype=dt)),
               ("2-D", np.zeros((1, n), dtype=dt))]
        if dt.kind == "f":
            other = np.float32 if dt == np.float16 else np.float16
            out += [("other float", np.zeros(n, dtype=other)),
                    ("int lanes", np.zeros(n, dtype=np.int64 if dt == np.float32 else np.int16))]
        else:
            info = np.iinfo(dt)
            out += [("float lanes", np.zeros(n, dtype=np.float64)),
                    ("too big", np.full(n, int(info.max) + 1, dtype=np.int64)),
                    ("too small", np.full(n, int(info.min) - 1, dtype=np.int64))]
        return out
    if o.kind == optable.WVEC:
        return [("lanes-1", [0] * (o.lanes - 1)), ("lanes+1", [0] * (o.lanes + 1)),
                ("float lanes", np.full(o.lanes, 1.7))]
    if o.kind == optable.VBOOL:
        n = o.lanes
        return [("lanes-1", np.zeros(n - 1, dtype=np.bool_)), ("uint8 mask", np.zeros(n, dtype=np.uint8)),
                ("other width", np.zeros(64 if n != 64 else 32, dtype=np.bool_))]
    if o.kind == optable.PR:
        return [("negative", -1), ("2^64", 2 ** 64), ("float", 1.0)]
    if o.kind == optable.IMM:
        out = [("below", o.lo - 1), ("above", o.hi + 1), ("float", float(o.lo))]
        return out + [("not modelled", v) for v in range(o.lo, o.hi + 1) if o.values and v not in o.values][:3]
    if o.kind == optable.MEMORY and o.role == optable.SRC:
        return [("int16 mem", np.zeros(256, dtype=np.int16)), ("2-D mem", np.zeros((4, 64), dtype=np.uint8))]
    if o.kind == optable.MEMORY:
        return [("int16 mem", np.zeros(256, dtype=np.int16)), ("bytearray", bytearray(256)),
                ("strided", np.zeros(512, dtype=np.uint8)[::2])]
    if o.kind == optable.SCALAR and o.name == "off":
        return [("negative", -1), ("past end", 256), ("float", 0.0)]
    if o.kind == optable.SCALAR:
        return [("float", 1.0)]
    return [("lanes-1", np.zeros(63, dtype=np.uint8))]


@pytest.mark.parametrize("name", [o.mnemonic for o in optable.ALL_OPS])
def test_wrapper_rejects_bad_operands(name):
    op = optable.op(name)
    fn = _wrapper(op)
    tried = 0
    for i, o in enumerate(op.args):
        for label, bad in _bad(o):
            args = ivp.example_args(name)
            args[i] = bad
            with pytest.raises(InvalidArgument) as info:
                fn(*args)
                pytest.fail(f"{name}: operand {o.argname} {label} was accepted")
            assert info.value.field == o.argname or (o.kind == optable.MEMORY and info.value.field == "off"), \
                (name, o.argname, label, info.value.field)
            tried += 1
    assert tried > 0


def test_sel_immediates_outside_model_rejected():
    z = np.zeros(64, dtype=np.uint8)
    for bad in (4, 7, 0x0C, 0x12, 0x3B, 0x40, 127):
        with pytest.raises(InvalidArgument):
            ivp.sel2nx8i(z, z, bad)
    for ok in ivp.SEL2NX8I_IMMS:
        ivp.sel2nx8i(z, z, ok)


# ===================================================================== validation gaps (known bugs)
@pytest.mark.parametrize("name,lanes", [("packvr2nx24", 64), ("packvrnx48", 32), ("packvrn_2x96", 16)])
def test_acc_float_lanes_rejected(name, lanes):
    with pytest.raises(InvalidArgument):
        getattr(ivp, name)(np.full(lanes, 1.7), 0)


def test_wvec_raw_rejects_bad_view():
    with pytest.raises(InvalidArgument):
        ivp.wvec_raw([0] * 64, 32)


def test_la2nx8_stream_rejects_negative_offset():
    with pytest.raises(InvalidArgument):
        ivp.la2nx8_stream(np.arange(256, dtype=np.uint8), -64, 1)
