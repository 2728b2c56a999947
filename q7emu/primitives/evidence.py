"""Public code written with the real Xtensa toolchain that pins what an IVP intrinsic computes.

Pure data, read by the op table (:attr:`q7emu.primitives.optable.Op.evidence`), ``q7emu ops --evidence`` and
docs/intrinsics.md (which says in prose what each source shows and how strong it is). Each :class:`Evidence`
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

from dataclasses import dataclass

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


def _e(source: str, lines: str, intrinsic: str, pins: str, strength: str) -> Evidence:
    return Evidence(source, lines, intrinsic, pins, strength)


_SEL_ORDER = "the first source is the pool's high half: pool = 2nd argument (lanes 0..N-1) || 1st"
_DSEL_GUIDE = ("Cadence's user-guide 3-way u16 interleave: selector byte 2k feeds lane k of the 2nd output, "
               "byte 2k+1 the 1st; pool = 2nd source || 1st")

#: mnemonic -> the public evidence for its operand order and semantics (docs/intrinsics.md)
EVIDENCE: dict[str, tuple[Evidence, ...]] = {
    "sel2nx8": (
        _e("halide-vectors", "2009-2011", "IVP_SEL2NX8", "a shuffle of concat(a[0], a[1]) is "
           "IVP_SEL2NX8(a[1], a[0], idx): " + _SEL_ORDER, "strong"),
        _e("tflm-softmax", "292-293", "IVP_SEL2NX8", "a 128-entry table lookup IVP_SEL2NX8(lut1, lut0, idx), "
           "index masked to 7 bits", "medium"),
    ),
    "selnx16": (
        _e("halide-vectors", "1968-1970", "IVP_SELNX16", "a slice of concat(a[0], a[1]) is "
           "IVP_SELNX16(a[1], a[0], SEQ + start): " + _SEL_ORDER, "medium"),
        _e("tflm-wide-arithm", "322-333", "IVP_SELNX16", "a 64-entry lookup IVP_SELNX16(lut1, lut0, idx)", "medium"),
    ),
    "seln_2x32": (
        _e("halide-vectors", "1976-1978", "IVP_SELN_2X32", "a slice of concat(a[0], a[1]) is "
           "IVP_SELN_2X32(a[1], a[0], SEQ + start): " + _SEL_ORDER, "medium"),
    ),
    "sel2nx8i": (
        _e("halide-vectors", "1993-1999", "IVP_SEL2NX8UI", "deinterleave: IVP_SEL2NX8UI(a[1], a[0], "
           "EXTRACT_1_OF_2_OFF_0 / _OFF_1) = the even / odd bytes of a[0] || a[1]", "strong"),
        _e("halide-vectors", "1594-1598", "IVP_SEL2NX8UI", "interleave(a, b) = IVP_SEL2NX8UI(b, a, "
           "INTERLEAVE_1_LO / _HI): out[2k] = a[k], out[2k+1] = b[k] (LO: k < 32)", "strong"),
        _e("halide-codegen", "374-409", "IVP_SEL2NX8I", "slice_right(a, n) = IVP_SEL2NX8I(a[1], a[0], "
           "ROTATE_RIGHT_n): out[k] = (a[0] || a[1])[k + n]", "medium"),
        _e("xai-intrin", "chars 16,699-17,600", "IVP_SEL2NX8I", "ROTATE_RIGHT_t windows of (dvec0 || dvec1) in the "
           "4-tap MAC fallback; the numeric values of IVP_SELI_* are in no public source", "strong"),
    ),
    "dselnx16": (
        _e("halide-vectors", "1553-1555", "IVP_DSELNX16U", _DSEL_GUIDE, "strong"),
        _e("tflm-add", "654-657", "IVP_SEL2NX8I", "the interleave pattern {0, 32, 1, 33, ...} a DSEL selector is "
           "built from", "weak"),
    ),
    "dselnx16t": (
        _e("halide-vectors", "1528, 1556-1557", "IVP_DSELNX16UT", _DSEL_GUIDE + "; the predicate is a vbool2N "
           "(mask 0xffffffff55555555): bit 2k gates lane k of the 2nd output, bit 2k+1 lane k of the 1st; "
           "false lanes keep the old value", "strong"),
    ),
    "dseln_2x32t": (
        _e("halide-vectors", "2379", "IVP_DSELN_2X32I", "dual 32-bit select: outputs in (odd, even) order, as "
           "dselnx16; the variable-selector and predicated forms appear in no public source", "weak"),
    ),
    "mov2nx8t": (
        _e("halide-codegen", "585-600", "IVP_MOV2NX8T", "select(c, t, f) = IVP_MOV2NX8T(t, f, c)", "strong"),
    ),
    "movnx16t": (
        _e("tflm-wide-arithm", "326-332", "IVP_MOVNX16T", "vdst = IVP_MOVNX16T(val2, vdst, vb): vb ? val2 : vdst",
           "medium"),
    ),
    "movn_2x32t": (
        _e("halide-vectors", "3326", "IVP_MOVN_2X32UT", "IVP_MOVN_2X32UT(0, 16 - nsa, p) = p ? 0 : 16 - nsa "
           "(div32, value-checked)", "strong"),
    ),
    "repnx16": (
        _e("tflm-conv2d", "537-538", "IVP_REPNX16", "IVP_REPNX16(v, 0) broadcasts lane 0", "weak"),
    ),
    "srlnx16": (
        _e("halide-simd-check", "119", "IVP_SRLNX16", "u16 >> clamp(i16, -16, 16), value-checked: a negative "
           "amount shifts left", "strong"),
        _e("halide-codegen", "1131-1132", "IVP_SRLNX16", "Halide's u16 >> signed amount becomes IVP_SRLNX16(a, b)",
           "medium"),
    ),
    "srln_2x32": (
        _e("halide-simd-check", "121", "IVP_SRLN_2X32", "u32 >> clamp(i32, -31, 31), value-checked: a negative "
           "amount shifts left", "strong"),
    ),
    "sllnx16": (
        _e("halide-simd-check", "123", "IVP_SLLNX16U", "u16 << clamp(i16, -16, 16): a negative amount shifts "
           "right (logical)", "strong"),
    ),
    "slln_2x32": (
        _e("halide-simd-check", "126", "IVP_SLLN_2X32U", "u32 << clamp(i32, -31, 31)", "strong"),
    ),
    "mulus4tn16xr16": (
        _e("xai-intrin", "chars 16,699-18,500", "IVP_MULUS4T2N8XR8", "sibling fallback (acc, dvec1, dvec0, s): "
           "tap t multiplies (dvec0 || dvec1)[i + t] by scalar field t, vector unsigned, scalar signed: the 2nd "
           "vector argument starts the window", "medium"),
    ),
    "mulus4tan16xr16": (
        _e("xai-intrin", "chars 16,699-17,650", "IVP_MULUS4TA2N8XR8", "sibling fallback: acc += sum_t "
           "(dvec0 || dvec1)[i + t] * s.t (the 2nd vector argument is tap 0's)", "medium"),
    ),
    "mul4tn16xr16": (
        _e("xai-intrin", "chars 16,699-18,200", "IVP_MUL4T2N8XR8", "sibling fallback: signed form of the same "
           "window (dvec0 || dvec1)", "medium"),
    ),
    "mul4tan16xr16": (
        _e("xai-intrin", "chars 16,699-17,300", "IVP_MUL4TA2N8XR8", "sibling fallback: acc += dvec0 * s.0 + "
           "SEL2NX8I(dvec1, dvec0, ROTATE_RIGHT_t) * s.t", "medium"),
    ),
    "dmulqa2n8xr8": (
        _e("tflm-conv2d-old", "1143-1154, 1184-1191", "IVP_DMULQA2N8XR8", "#ifdef pair: DMULQA(acc2, acc1, c4, c3, "
           "c2, c1, DEXTRPRN(d2, d1, 0, 0)) == MULQA(acc1, c4..c1, d1[0]); MULQA(acc2, c4..c1, d2[0]): the 2nd "
           "accumulator takes the pr's low word, the last vector its byte 0", "strong"),
        _e("halide-vectors", "2228-2236", "IVP_DMULQA2N8XR8", "dual quad MAC (r[1], r[0], a3, a2, a1, a0, s): "
           "r[0] += sum_p a_p * s.byte(p), r[1] += sum_p a_p * s.byte(4 + p)", "medium"),
        _e("halide-vectors", "2165-2171", "IVP_MULQA2N8XR8", "sibling: coefficients {s3, s2, s1, s0} with vectors "
           "(a0, a1, a2, a3): the last vector takes byte 0", "medium"),
    ),
    "muluupan16xr16": (
        _e("halide-vectors", "2421-2430", "IVP_MULSUPN16XR16", "sibling (disabled lerp): weights "
           "((65536 - w) << 16) | w for (a, b): the 1st vector takes the scalar's high 16 bits", "weak"),
    ),
    "mulsupn16xr16": (
        _e("halide-vectors", "2421-2430", "IVP_MULSUPN16XR16", "disabled lerp: IVP_MULSUPN16XR16(a, b, "
           "((65536 - w) << 16) | w) = a * (65536 - w) + b * w: the 1st vector takes bits 16..31", "weak"),
    ),
    "muluspa2n8xr16": (
        _e("halide-vectors", "2421-2430", "IVP_MULSUPN16XR16", "the paired family's convention: 1st vector x "
           "bits 16..31 (the same as docs/anchors.md §7's cstub probe T8)", "weak"),
    ),
    "muln_2x32": (
        _e("halide-codegen", "308", "IVP_MULN_2X32", "i32 * i32 = IVP_PACKLN_2X64W(IVP_MULN_2X32(a, b)), "
           "value-checked (simd_op_check line 116)", "strong"),
    ),
    "mulan_2x32": (
        _e("halide-vectors", "2110-2124", "IVP_MULAN_2X32", "widening multiply-add: r += a * b (signed)", "medium"),
    ),
    "cvtg48n_2x32l": (
        _e("halide-vectors", "2597", "IVP_CVT48SNX32", "sibling: IVP_CVT48SNX32(a[1], a[0]) widens concat(a[0], "
           "a[1]): the 1st source is the high half", "weak"),
    ),
    "cvtg48n_2x32h": (
        _e("halide-vectors", "2597", "IVP_CVT48SNX32", "sibling: the 1st source is the high half", "weak"),
    ),
    "packvr2nx24": (
        _e("halide-vectors", "2998-3001", "IVP_PACKVR2NX24", "i8_sat(rounding_shift_right(x, s)): round half up, "
           "then saturate", "medium"),
    ),
    "packvru2nx24": (
        _e("halide-vectors", "2987-2990", "IVP_PACKVRU2NX24", "u8_sat(x) with shift 0, value-checked "
           "(simd_op_check line 236)", "strong"),
    ),
    "packvrnx48": (
        _e("halide-vectors", "3019-3022", "IVP_PACKVRNX48", "i16_sat(rounding_shift_right(x, s))", "medium"),
    ),
    "packvrnrnx48": (
        _e("halide-simd-check", "274", "IVP_PACKVRNRNX48", "i16(widening_mul(a, b) >> 4), value-checked: no "
           "rounding, the low 16 bits (wraps)", "strong"),
    ),
    "packvrnr2nx24": (
        _e("tflm-intrin", "298-301", "IVP_PACKVRNR2NX24_1", "PACKHNX48(w) = PACKVRNR2NX24_1(w as 2Nx24, 8): no "
           "rounding; _1 = the odd lanes (whether the 8-bit form wraps or saturates: no public source)", "medium"),
    ),
    "packvrn_2x96": (
        _e("halide-vectors", "2409-2414", "IVP_PACKVN_2X64W", "\"There is only saturation *and rounding* "
           "intrinsic\": round half up, saturate to int32", "medium"),
    ),
    "packl2nx24": (
        _e("halide-vectors", "3281-3287", "IVP_PACKL2NX24", "u32 -> u8 truncating convert: the low 8 bits",
           "medium"),
    ),
    "packlnx48": (
        _e("tflm-wide-arithm", "753-773", "IVP_PACKLNX48", "32x32 -> 64-bit multiply macro: bits 0..15", "medium"),
    ),
    "packmnx48": (
        _e("tflm-wide-arithm", "753-773", "IVP_PACKMNX48", "32x32 -> 64-bit multiply macro: bits 16..31", "medium"),
    ),
    "packhnx48": (
        _e("tflm-intrin", "298-301", "IVP_PACKHNX48", "fallback: the high 16 bits of the 48-bit lane", "strong"),
    ),
    "packln_2x96": (
        _e("halide-codegen", "308", "IVP_PACKLN_2X64W", "the low 32 bits of the 96-bit lane (i32 * i32, "
           "value-checked)", "strong"),
    ),
    "oltnxf16t": (
        _e("halide-codegen", "719-722", "IVP_OLTNXF16", "sibling: Halide's fp16 a < b is the ordered compare",
           "weak"),
    ),
    "floatn_2x32": (
        _e("halide-vectors", "2788-2791", "IVP_FLOATN_2X32", "i32 -> f32 is IVP_FLOATN_2X32(x, 0) (the scale "
           "immediate is not exercised)", "medium"),
    ),
    "truncn_2xf32": (
        _e("halide-vectors", "2829-2832", "IVP_TRUNCN_2XF32", "f32 -> i32 (truncation) is IVP_TRUNCN_2XF32(x, 0)",
           "medium"),
    ),
    "trunc16nxf16": (
        _e("halide-vectors", "2907-2910", "IVP_TRUNC16NXF16", "f16 -> i16 is IVP_TRUNC16NXF16(x, 0)", "weak"),
    ),
    "float16nx16t": (
        _e("halide-vectors", "2902-2905", "IVP_FLOAT16NX16", "sibling: i16 -> f16 is IVP_FLOAT16NX16(x, 0)", "weak"),
    ),
    "cvtf32nxf16_0": (
        _e("halide-vectors", "2853-2865", "IVP_CVTF32NXF16_0", "f16 -> f32 x 2 = DSELN_2XF32I(.., _1(src), "
           "_0(src), INTERLEAVE_2): _0 widens the even f16 lanes 2k, _1 the odd lanes 2k + 1", "medium"),
    ),
    "cvtf32nxf16_1": (
        _e("halide-vectors", "2853-2865", "IVP_CVTF32NXF16_1", "_1 widens the odd f16 lanes (see cvtf32nxf16_0)",
           "medium"),
    ),
    "extrprn_2x32": (
        _e("halide-vectors", "406-410", "IVP_EXTRPRN_2X32", "IVP_EXTRPRN_2X32(vec, lane)", "weak"),
    ),
    "dextrprn_2x32": (
        _e("halide-optimize", "351-365", "IVP_DEXTRPRN_2X32", "concat(extract(v0, i0), extract(v1, i1)) becomes "
           "dual_extract(v1, v0, i1, i0), printed as IVP_DEXTRPRN_2X32 (CodeGen_Xtensa.cpp 437-443): each index "
           "is a lane of its own vector, the 2nd pair fills the low word", "medium"),
        _e("tflm-conv2d-old", "1143-1154, 1184-1191", "IVP_DEXTRPRN_2X32", "DEXTRPRN(d2, d1, 0, 0) feeds d1[0] to "
           "the 2nd accumulator (the low word) and d2[0] to the 1st (#ifdef pair with two MULQA)", "strong"),
    ),
    "lv2nx8_i": (
        _e("tflm-pointer", "97", "IVP_LV2NX8_I", "IVP_LV2NX8_XP(a, b, c) = a = IVP_LV2NX8_I(b, 0); b += c bytes",
           "strong"),
    ),
    "lv2nx8_ip": (
        _e("tflm-pointer", "97", "IVP_LV2NX8_I", "load at the pointer, then add the increment in bytes", "strong"),
    ),
    "lav2nx8_xp": (
        _e("tflm-datatransform", "3296-3299", "IVP_LAV2NX8U_XP", "four loads LAV(n), LAV(n - 64), LAV(n - 128), "
           "LAV(n - 192) read consecutive 64-byte chunks of one stream: each moves and advances by "
           "clamp(n, 0, 64) bytes", "strong"),
        _e("tflm-conv2d", "541-551", "IVP_LAVNX8U_XP", "a tail loop LAV(total - d) with total - d > 64", "medium"),
    ),
    "sav2nx8_xp": (
        _e("tflm-datatransform", "3308-3312", "IVP_SAV2NX8_XP", "four stores SAV(n), SAV(n - 64), ... write "
           "consecutive 64-byte chunks: each stores and advances by clamp(n, 0, 64) bytes", "strong"),
    ),
    "andb": (
        _e("halide-codegen", "748-805", "IVP_ANDB2N", "bitwise and of vbool2N (sibling names per lane width)",
           "weak"),
    ),
    "orb": (_e("halide-codegen", "748-805", "IVP_ORB2N", "bitwise or of vbool2N", "weak"),),
    "notb": (_e("halide-codegen", "748-805", "IVP_NOTB2N", "bitwise not of vbool2N", "weak"),),
}
