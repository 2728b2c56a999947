"""The format table (q7emu.model.format_table), one record per format, every test parametrised over the records
(ml_dtypes' habit): each record's numbers are checked against an independent source -- ml_dtypes' definition of
the format, the golden models' own decoders (q7emu.golden.formats), the re-bias MAC formula of docs/model.md §9.7
evaluated here -- and the views other layers take of it (DequantFmt, the spellings, the kernel's C constants).
"""
from __future__ import annotations

from pathlib import Path
from typing import get_args

import ml_dtypes
import numpy as np
import pytest

from q7emu.errors import InvalidArgument
from q7emu.golden import formats as golden_formats
from q7emu.model.dtypes import FORMAT_ALIASES, canonical_format, dequant_fmt_code, dequant_out_dtype, fp8_dtype
from q7emu.model.format_table import (
    DEQUANT_FORMATS,
    DEQUANT_PATH_TABLE,
    FP8_FORMATS,
    DequantFmt,
    DequantFmtName,
    Fp8Name,
    dequant_path,
)
from q7emu.model.kernels import DEQUANT_PATHS, GROUP_SIZES, KernelId
from q7emu.model.knobs import knob
from q7emu.model.tables import NF4_TABLES

ROOT = Path(__file__).resolve().parents[2]
FP8_IDS = [f.short for f in FP8_FORMATS]
SRC_IDS = [f.short for f in DEQUANT_FORMATS]
#: the ml_dtypes type of a source format, where ml_dtypes has one (NF4 has none)
ML_SOURCE = {"float4_e2m1fn": ml_dtypes.float4_e2m1fn, "int4": ml_dtypes.int4,
             "float6_e2m3fn": ml_dtypes.float6_e2m3fn}


# ---------------------------------------------------------------------------------------------- FP8 records
@pytest.mark.parametrize("f", FP8_FORMATS, ids=FP8_IDS)
def test_fp8_record_matches_ml_dtypes(f):
    t = getattr(ml_dtypes, f.name)
    fi = ml_dtypes.finfo(t)
    assert (fi.nexp, fi.nmant) == (f.exp_bits, f.mant_bits)
    assert 1 - fi.minexp == f.bias
    assert float(fi.max) == f.max_value
    assert float(np.array([f.max_code], np.uint8).view(t)[0]) == f.max_value
    assert np.isnan(float(np.array([f.nan_code], np.uint8).view(t)[0]))


@pytest.mark.parametrize("f", FP8_FORMATS, ids=FP8_IDS)
def test_fp8_record_matches_golden_transcription(f):
    """The golden models define the formats again from their bit fields (on purpose); the two agree."""
    enc = golden_formats.FP8_ENCODERS[f.name]
    assert enc(np.array([1e30]), saturate=True)[0] == f.max_code
    assert enc(np.array([np.nan]))[0] == f.nan_code == golden_formats.FP8_NAN[f.name]


@pytest.mark.parametrize("f", FP8_FORMATS, ids=FP8_IDS)
def test_fp8_max_exp_per_emax(f):
    """docs/model.md §2: emax = ocp gives the format's largest exponent (8 / 15), alt one less."""
    assert tuple(f.max_exp) == knob("emax").values
    assert f.max_exp["ocp"] == ml_dtypes.finfo(getattr(ml_dtypes, f.name)).maxexp - 1
    assert f.max_exp["alt"] == f.max_exp["ocp"] - 1


@pytest.mark.parametrize("f", FP8_FORMATS, ids=FP8_IDS)
def test_fp8_spellings(f):
    for s in f.spellings:
        assert canonical_format(s) == f.name == fp8_dtype(s) == fp8_dtype(s.upper().replace("_", "-"))


# ---------------------------------------------------------------------------------------------- source records
@pytest.mark.parametrize("f", DEQUANT_FORMATS, ids=SRC_IDS)
def test_source_codebook_matches_ml_dtypes_and_golden(f):
    codes = np.arange(1 << f.bits, dtype=np.uint8)
    golden = golden_formats.DECODERS[f.short](codes).astype(np.float64)
    if f.name in ML_SOURCE:
        t = ML_SOURCE[f.name]
        np.testing.assert_array_equal(golden, codes.view(t).astype(np.float64))
        fi = ml_dtypes.iinfo(t) if f.name == "int4" else ml_dtypes.finfo(t)
        assert f.bits == (fi.bits if f.name == "int4" else 1 + fi.nexp + fi.nmant)
    if f.codebook is not None:
        np.testing.assert_array_equal(np.array(f.codebook, np.float64), golden)
    if f.codebook_knob is not None:                     # the default codebook is the golden decoder's
        np.testing.assert_array_equal(NF4_TABLES[knob(f.codebook_knob).default].astype(np.float64), golden)


@pytest.mark.parametrize("f", DEQUANT_FORMATS, ids=SRC_IDS)
def test_source_output_format_and_paths(f):
    assert f.out in {g.name for g in FP8_FORMATS} and dequant_out_dtype(f.code) == f.out
    assert set(f.paths) <= set(GROUP_SIZES) and 0 in f.paths
    for g, name in f.paths.items():
        assert dequant_path(name).group == g
        assert DEQUANT_PATHS[f.code, g] is KernelId[name.upper()]
    assert all(knob(k).op == "dequantize" for k in f.knobs)
    assert f.codebook is None or f.codebook_knob is None
    if f.codebook_knob is not None:
        assert f.codebook_knob in f.knobs
    if 8 in f.paths:                       # the MX path decodes every format through a 16-entry codebook
        assert f.bits == 4 and (f.codebook is not None or f.codebook_knob is not None)
    if f.rebias is None:                   # group 0 then runs the codebook (rounding) path
        assert f.bits == 4


@pytest.mark.parametrize("f", DEQUANT_FORMATS, ids=SRC_IDS)
def test_source_spellings(f):
    assert f.member == DequantFmt(f.code).name
    for s in f.spellings:
        assert canonical_format(s) == f.name and dequant_fmt_code(s) == f.code
        assert dequant_fmt_code(s.upper()) == f.code


def _fp16_bits(x: float) -> int:
    return int(np.array([x], np.float16).view(np.uint16)[0])


@pytest.mark.parametrize("f", [f for f in DEQUANT_FORMATS if f.rebias is not None],
                         ids=[f.short for f in DEQUANT_FORMATS if f.rebias is not None])
def test_rebias_numbers_give_every_code(f):
    """docs/model.md §9.7: F = BIAS w1 + wX X + w1 |p1 - X| + w2 |p2 - X| + w3 |p3 - X| (mod 2^16) of a code's X is
    the pattern of -|value|: fp16 for an E5M2 output (whose byte is the high byte), the E4M3 byte in the high byte
    (low byte 0) for FP6; a zero code comes out above -min (the zero gate), every other code at or below it.
    The values are ml_dtypes' (the golden decoders' for the formats ml_dtypes lacks)."""
    rb = f.rebias
    assert len(rb.x) == 1 << f.bits and rb.numbers() == (rb.p1, rb.p2, rb.p3, rb.bias, rb.w1, rb.wx, rb.w2, rb.w3,
                                                          rb.neg_min)
    codes = np.arange(1 << f.bits, dtype=np.uint8)
    values = golden_formats.DECODERS[f.short](codes).astype(np.float64)
    if f.name in ML_SOURCE:
        values = codes.view(ML_SOURCE[f.name]).astype(np.float64)
    e4m3 = f.out == "float8_e4m3fn"
    neg_min = float(np.array([rb.neg_min], np.uint16).view(np.float16)[0])
    for c in range(1 << f.bits):
        x = rb.x[c]
        mac = (rb.bias * rb.w1 + rb.wx * x + rb.w1 * abs(rb.p1 - x) + rb.w2 * abs(rb.p2 - x)
               + rb.w3 * abs(rb.p3 - x)) & 0xFFFF
        mag = abs(values[c])
        as_fp16 = float(np.array([mac], np.uint16).view(np.float16)[0])
        if mag == 0:
            assert neg_min < as_fp16, (f.short, c, hex(mac))
            continue
        assert not neg_min < as_fp16, (f.short, c, hex(mac))
        if e4m3:
            want = int(np.array([-mag], np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)[0])
            assert mac == want << 8, (f.short, c, hex(mac), hex(want))
        else:
            assert mac == _fp16_bits(-mag), (f.short, c, hex(mac))
            assert np.array([-mag], np.float32).astype(ml_dtypes.float8_e5m2).view(np.uint8)[0] == mac >> 8


# ---------------------------------------------------------------------------------------------- paths and views
def test_paths_ratio_and_pass():
    """Words in : out follow from the code width (8 output bytes per 8 codes; MX: a scale byte per 8 codes)."""
    for p in DEQUANT_PATH_TABLE:
        bits = {f.bits for f in DEQUANT_FORMATS if p.name in f.paths.values()}
        assert len(bits) == 1
        b = bits.pop()
        a, o = p.ratio
        codes = 32 * a // (b + (1 if p.group == 8 else 0))     # codes per `a` source words
        assert codes * 8 == 32 * o                                # one FP8 byte per code
        assert p.pass_bytes * 8 // (b + (1 if p.group == 8 else 0)) == 64   # a pass makes 64 outputs
        assert all(knob(k).op == "dequantize" for k in p.knobs)


def test_dequant_fmt_enum_is_the_table():
    assert [(m.name, int(m)) for m in DequantFmt] == [(f.member, f.code) for f in DEQUANT_FORMATS]


def test_literal_spellings_are_the_records():
    assert set(get_args(DequantFmtName)) == {s for f in DEQUANT_FORMATS for s in f.spellings}
    assert set(get_args(Fp8Name)) == {s for f in FP8_FORMATS for s in f.spellings}
    assert len(get_args(DequantFmtName)) == len(set(get_args(DequantFmtName)))
    assert set(get_args(DequantFmtName)) | set(get_args(Fp8Name)) <= set(FORMAT_ALIASES)


def test_unknown_codes_rejected():
    bad = max(f.code for f in DEQUANT_FORMATS) + 1
    with pytest.raises(InvalidArgument, match="dequant_fmt"):
        dequant_out_dtype(bad)
