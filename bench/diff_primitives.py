"""Differential check of every IVP primitive against a reference revision of the primitive library.

Builds (on the fly, in a temp dir, outside setup.py) a throwaway Cython module that cimports both
the current src/primitives/q7ivp.pxd (the umbrella over the ivp_*.pxd family files) and the copy of
src/primitives/q7{regs,softfloat,ivp}.pxd at a reference git revision (renamed *_ref), then runs every
primitive of the op table (q7emu/primitives/optable.py) defined in the current family files on
the same random register states through both and compares the complete state: all vector
registers (64 bytes each), wvec view + all 64 cells (in the 48-bit view their low 48 bits, all a cell holds of
its lane: src/primitives/q7regs.pxd), the full 64-bit vbool registers (not just
the lane bits the Python wrappers expose), pr, the memory buffer and the offset.

Three operand modes: `distinct` (every register operand a different register), `alias` (operands
drawn from 3 registers, so destinations alias sources as the kernels do, e.g. bminnx16 v26, v26, v4)
and `sweep16` (distinct registers whose 16-bit lanes walk through all 65536 values).
Build with Q7EMU_NATIVE=0 to check the baseline x86-64 bodies (SSE2: the generic level's) instead, with
Q7EMU_DIFF_ARCH="-march=haswell" (say) for another target's bodies, or with
Q7EMU_DIFF_ARCH="-U__SSE2__ -U__SSE__ -U__MMX__" for the portable C bodies (what a non-x86 host compiles; the
flags setup.py adds for the portable ISA level).

    python bench/diff_primitives.py [--ref REV] [--trials N]      (from the repository root)

Exit status 0 when every primitive matches in both modes.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the primitive library as issue 25's third stop found it (after the intrinsic-conventions issue). Older
#: revisions differ on purpose: 58093f0, before the performance rewrite, shifted srlnx16 by the unsigned amount and
#: took dselnx16's operands in another order, so it reports those primitives
DEFAULT_REF = "2d35302"

NV, NW, NB, NP = 8, 2, 4, 2
SIG = re.compile(r"^cdef inline void (\w+)\((.*?)\)\s*noexcept nogil:", re.S | re.M)

# int-operand ranges (lo, hi inclusive): the ranges the q7emu.primitives.ivp wrappers accept, widened where
# the primitive itself masks or clamps the value.
INT_RANGES = {
    "sel2nx8i": (0, 127), "sel2nx8i_s4": (0, 31),
    "sllinx16": (0, 20), "srlinx16": (0, 20), "srainx16": (0, 20),
    "sllin_2x32": (0, 40), "srlin_2x32": (0, 40), "srain_2x32": (0, 40),
    "repnx16": (-40, 100), "float16nx16t": (-20, 40), "floatn_2x32": (-40, 80),
    "truncn_2xf32": (-40, 80), "trunc16nxf16": (-20, 40),
    "extrpr2nx8": (-70, 140), "extrprn_2x32": (-40, 80), "dextrprn_2x32": (-70, 140),
}
PACK_RANGE = (-5, 70)

# Operand aliasings where the reference revision is itself wrong and is not compared: its dsel*
# bodies write vu lane k before reading the vt index of lane k from sr, so with vu == sr the vt
# index comes from the freshly written vu lane instead of the instruction's source operand.
# (parameter positions that must not name the same register)
REF_ALIAS_BUGS = {"dselnx16": [(0, 4)], "dselnx16t": [(0, 4)], "dseln_2x32t": [(0, 4)]}


def parse(text):
    out = []
    for m in SIG.finditer(text):
        name = m.group(1)
        if name.startswith("_"):
            continue
        params = []
        for p in " ".join(m.group(2).split()).split(","):
            p = p.strip()
            typ, pname = p.rsplit(" ", 1)
            if pname.startswith("*"):
                typ, pname = typ + "*", pname[1:]
            params.append((typ.replace("const ", "").replace(" ", ""), pname))
        out.append((name, params))
    return out


#: register pointer parameter -> (field of St, cast for the reference side)
_REG_PTR = {"vec_t*": ("v", "<RR.vec_t*>"), "wvec_t*": ("w", "<RR.wvec_t*>"), "vbool_t*": ("b", ""), "pr_t*": ("p", "")}
#: parameters passed the same way to both sides
_FIXED = {"valign_t*": ("&a.u[0]", "<RR.valign_t*>&r.u[0]"), "uint8_t*": ("a.mem", "r.mem"),
          "Py_ssize_t*": ("&a.off", "&r.off")}


def arg_exprs(typ, j):
    """(argument expression on the current state a, on the reference state r) for parameter j of type typ."""
    ix, iv = f"IX[t, {j}]", f"IV[t, {j}]"
    if typ in _REG_PTR:
        field, cast = _REG_PTR[typ]
        return f"&a.{field}[{ix}]", f"{cast}&r.{field}[{ix}]"
    if typ in ("vbool_t", "pr_t"):
        e = f"{typ[0].upper()}[t, {ix}]"
        return e, e
    if typ in ("int", "Py_ssize_t"):
        return f"<{typ}>{iv}", f"<{typ}>{iv}"
    if typ in _FIXED:
        return _FIXED[typ]
    raise SystemExit(f"unhandled parameter type {typ}")


def gen_pyx(funcs):
    L = []
    w = L.append
    w("# cython: language_level=3, boundscheck=False, wraparound=False")
    w("from libc.stdint cimport uint8_t, uint64_t, int64_t, int32_t")
    w("from libc.string cimport memcpy, memset, memcmp")
    w("from q7regs cimport vec_t, wvec_t, vbool_t, pr_t, valign_t, wvec_from_raw")
    w("cimport q7ivp as N")
    w("cimport q7ivp_ref as R")
    w("cimport q7regs_ref as RR")
    w("")
    w(f"cdef struct St:\n    vec_t v[{NV}]\n    wvec_t w[{NW}]\n    vbool_t b[{NB}]\n    pr_t p[{NP}]\n"
      "    valign_t u[1]\n    uint8_t mem[512]\n    Py_ssize_t off")
    w("")
    w("cdef void load(St* s, const uint8_t[:, ::1] V, const uint8_t[:, ::1] W, const int32_t[:, ::1] WV,"
      " const uint64_t[:, ::1] B, const uint64_t[:, ::1] P, const uint8_t[:, ::1] M, Py_ssize_t t) noexcept:")
    w("    cdef int i")
    w("    memset(s, 0, sizeof(St))")
    w(f"    memcpy(s.v, &V[t, 0], {64 * NV})")
    w(f"    for i in range({NW}):")
    w("        wvec_from_raw(&s.w[i], &W[t, 192 * i], WV[t, i])")
    w(f"    for i in range({NB}):")
    w("        s.b[i] = B[t, i]")
    w(f"    for i in range({NP}):")
    w("        s.p[i] = P[t, i]")
    w("    memcpy(s.u[0].row, &M[t, 0], 64)")
    w("    memcpy(s.mem, &M[t, 64], 512)")
    w("    s.off = <Py_ssize_t>(M[t, 600] % 193)")
    w("")
    w("cdef int same(St* a, St* b) noexcept:")
    w("    cdef int i, j")
    w("    if memcmp(a.v, b.v, sizeof(a.v)) or memcmp(a.b, b.b, sizeof(a.b)) or memcmp(a.p, b.p, sizeof(a.p)):")
    w("        return 0")
    w("    if memcmp(a.u, b.u, sizeof(a.u)) or memcmp(a.mem, b.mem, 512) or a.off != b.off:")
    w("        return 0")
    w(f"    for i in range({NW}):")
    w("        if a.w[i].view != b.w[i].view:")
    w("            return 0")
    w("        if a.w[i].view == 48:     # a 48-bit cell holds its lane modulo 2^48: its low 48 bits are the state")
    w("            for j in range(64):")
    w("                if (<uint64_t>a.w[i].c[j]) << 16 != (<uint64_t>b.w[i].c[j]) << 16:")
    w("                    return 0")
    w("        elif memcmp(a.w[i].c, b.w[i].c, sizeof(a.w[i].c)):")
    w("            return 0")
    w("    return 1")
    w("")
    w("def vstate(St s):\n    return s")
    for name, params in funcs:
        w(f"def t_{name}(const uint8_t[:, ::1] V, const uint8_t[:, ::1] W, const int32_t[:, ::1] WV,"
          " const uint64_t[:, ::1] B, const uint64_t[:, ::1] P, const uint8_t[:, ::1] M,"
          " const int32_t[:, ::1] IX, const int64_t[:, ::1] IV):")
        w("    cdef St a, r")
        w("    cdef Py_ssize_t t, bad = 0, first = -1")
        w("    for t in range(V.shape[0]):")
        w("        load(&a, V, W, WV, B, P, M, t)")
        w("        load(&r, V, W, WV, B, P, M, t)")
        na, nr = [], []
        for j, (typ, _pname) in enumerate(params):
            ea, er = arg_exprs(typ, j)
            na.append(ea)
            nr.append(er)
        w(f"        N.{name}({', '.join(na)})")
        w(f"        R.{name}({', '.join(nr)})")
        w("        if not same(&a, &r):")
        w("            bad += 1")
        w("            if first < 0:")
        w("                first = t")
        w("    return bad, first")
        w("")
    return "\n".join(L)


#: the C names the family files define in their verbatim C blocks (leaves, lane typedefs, macros): renamed in the
#: reference copies, which the current copies define again in the same module
REF_C_NAMES = re.compile(r"\b(q7|Q7)_(\w+)")


def _git_show(rev, mod):
    """src/primitives/<mod>.pxd at rev (src/<mod>.pxd before the src/ layers)."""
    for path in (f"src/primitives/{mod}.pxd", f"src/{mod}.pxd"):
        r = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:{path}"], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout
    raise SystemExit(f"{rev}: no {mod}.pxd")


def _ref_family_modules(rev):
    """The family files of the primitive library at rev (src/primitives/ivp_*.pxd; none before the split)."""
    r = subprocess.run(["git", "-C", ROOT, "ls-tree", "--name-only", rev, "src/primitives/"], capture_output=True,
                       text=True)
    names = [os.path.basename(f)[:-4] for f in r.stdout.split() if os.path.basename(f).startswith("ivp_")
             and f.endswith(".pxd")]
    return sorted(names)


def current_sources():
    """The text of every family file of the current library (src/primitives/ivp_*.pxd)."""
    prim = os.path.join(ROOT, "src", "primitives")
    return "\n".join(open(os.path.join(prim, f)).read() for f in sorted(os.listdir(prim))
                     if f.startswith("ivp_") and f.endswith(".pxd"))


def ref_sources(rev):
    """{file name: text} of the reference copies: q7regs, q7softfloat, q7ivp and (after the split into family
    files) every ivp_*.pxd at rev, each renamed *_ref, their cimports pointing at the other *_ref copies and every
    q7_ / Q7_ C name renamed q7ref_ / Q7REF_ (the current copies define the same names)."""
    mods = ["q7regs", "q7softfloat", "q7ivp", *_ref_family_modules(rev)]
    pattern = re.compile(r"\b(from|cimport)\s+(" + "|".join(map(re.escape, mods)) + r")\b")
    out = {}
    for mod in mods:
        txt = _git_show(rev, mod)
        txt = pattern.sub(lambda m: f"{m.group(1)} {m.group(2)}_ref", txt)
        txt = REF_C_NAMES.sub(lambda m: ("q7ref_" if m.group(1) == "q7" else "Q7REF_") + m.group(2), txt)
        out[f"{mod}_ref.pxd"] = txt
    return out


def ref_primitive_names(rev):
    """The primitives (cdef inline functions) the reference revision defines, in any of its copies."""
    return {n for txt in ref_sources(rev).values() for n, _ in parse(txt)}


def build(rev, funcs, tmp):
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    for fn, txt in ref_sources(rev).items():
        with open(os.path.join(tmp, fn), "w") as f:
            f.write(txt)
    pyx = os.path.join(tmp, "_q7diff.pyx")
    with open(pyx, "w") as f:
        f.write(gen_pyx(funcs))
    src = os.path.join(ROOT, "src", "primitives")
    arch = os.environ.get("Q7EMU_DIFF_ARCH") or ("-march=native" if os.environ.get("Q7EMU_NATIVE", "1") == "1" else "")
    args = ["-O1"] + arch.split()
    ext = Extension("_q7diff", [pyx], include_dirs=[tmp, src], extra_compile_args=args)
    dist = Distribution({"ext_modules": cythonize([ext], include_path=[tmp, src], quiet=True,
                                                   compiler_directives={"language_level": "3"})})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib = tmp
    cmd.build_temp = os.path.join(tmp, "build")
    cmd.ensure_finalized()
    cmd.run()
    path = cmd.get_ext_fullpath("_q7diff")
    spec = importlib.util.spec_from_file_location("_q7diff", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def lanes_mix(rng, n):
    """n vector images (64 bytes each): random bytes, small ints, fp16 / fp32 specials, mixed."""
    out = rng.integers(0, 256, (n, 64), dtype=np.uint8)
    kind = rng.integers(0, 6, n)
    f16 = np.array([0, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE00, 0x0001, 0x03FF, 0x0400, 0x8001,
                    0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x3555, 0x0200], np.uint16)
    f32 = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC00000, 1,
                    0x007FFFFF, 0x00800000, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0x4F000000, 0xCF000000,
                    0x4EFFFFFF, 0xCF000001, 0x46FFFE00, 0xC7000100, 0x47000000], np.uint32)
    for i in np.nonzero(kind == 1)[0]:          # small signed 16-bit lanes (shift amounts, etc.)
        out[i] = rng.integers(-40, 41, 32).astype(np.int16).view(np.uint8)
    for i in np.nonzero(kind == 2)[0]:          # small signed 32-bit lanes
        out[i] = rng.integers(-70, 71, 16).astype(np.int32).view(np.uint8)
    for i in np.nonzero(kind == 3)[0]:          # fp16 specials mixed with random
        v = out[i].view(np.uint16).copy()
        m = rng.random(32) < 0.6
        v[m] = rng.choice(f16, m.sum())
        out[i] = v.view(np.uint8)
    for i in np.nonzero(kind == 4)[0]:          # fp32 specials mixed with random
        v = out[i].view(np.uint32).copy()
        m = rng.random(16) < 0.6
        v[m] = rng.choice(f32, m.sum())
        out[i] = v.view(np.uint8)
    for i in np.nonzero(kind == 5)[0]:          # extremes and small bytes
        out[i] = rng.choice(np.array([0, 1, 2, 0x7F, 0x80, 0x81, 0xFE, 0xFF, 3, 15, 16, 17, 31, 32, 63, 64],
                                     np.uint8), 64)
    return out


def make_inputs(rng, name, params, n, mode):
    V = lanes_mix(rng, n * NV).reshape(n, NV * 64)
    if mode == "sweep16":
        # every register walks through all 65536 16-bit lane values (each register offset differently)
        t = np.arange(n, dtype=np.int64)[:, None, None]
        r = np.arange(NV, dtype=np.int64)[None, :, None]
        k = np.arange(32, dtype=np.int64)[None, None, :]
        V = (((t * 32 + k) * (2 * r + 1) + 7919 * r) & 0xFFFF).astype(np.uint16).view(np.uint8).reshape(n, NV * 64)
    W = rng.integers(0, 256, (n, 192 * NW), dtype=np.uint8)
    small = rng.random((n, NW)) < 0.5               # small-magnitude wide lanes (pack without saturating)
    for t, i in zip(*np.nonzero(small)):
        v = rng.integers(-(1 << 20), 1 << 20, 16).astype(np.int64)
        img = bytearray()
        for x in v:
            img += (int(x) % (1 << 96)).to_bytes(12, "little")
        W[t, 192 * i:192 * (i + 1)] = np.frombuffer(bytes(img), np.uint8)
    WV = rng.choice(np.array([24, 48, 96], np.int32), (n, NW)).astype(np.int32)
    B = rng.integers(0, 2 ** 63, (n, NB), dtype=np.uint64) * 2 + rng.integers(0, 2, (n, NB), dtype=np.uint64)
    special = rng.random((n, NB))
    B[special < 0.1] = 0
    B[(special >= 0.1) & (special < 0.2)] = np.uint64(0xFFFFFFFFFFFFFFFF)
    B[(special >= 0.2) & (special < 0.3)] = np.uint64(0x5555555555555555)
    B[(special >= 0.3) & (special < 0.4)] = np.uint64(0x1111111111111111)
    B[(special >= 0.4) & (special < 0.5)] = np.uint64(0xAAAAAAAAAAAAAAAA)
    P = rng.integers(0, 2 ** 63, (n, NP), dtype=np.uint64) * 2 + rng.integers(0, 2, (n, NP), dtype=np.uint64)
    smallp = rng.random(n) < 0.5
    P[smallp, 0] = rng.integers(-3, 4, (smallp.sum(), 4)).astype(np.int16).view(np.uint64).ravel()
    M = rng.integers(0, 256, (n, 640), dtype=np.uint8)
    np_ = len(params)
    IX = np.zeros((n, max(np_, 1)), np.int32)
    IV = np.zeros((n, max(np_, 1)), np.int64)
    counts = {"vec_t*": NV, "wvec_t*": NW, "vbool_t*": NB, "pr_t*": NP, "vbool_t": NB, "pr_t": NP}
    for t in range(n):
        perms = {k: rng.permutation(c) for k, c in counts.items()}
        used = {k: 0 for k in counts}
        for j, (typ, pname) in enumerate(params):
            if typ in counts:
                if mode != "alias":
                    IX[t, j] = perms[typ][used[typ] % counts[typ]]
                    used[typ] += 1
                else:
                    IX[t, j] = rng.integers(0, min(3, counts[typ]))
            elif typ == "int":
                lo, hi = PACK_RANGE if name.startswith("pack") else INT_RANGES.get(name, (0, 31))
                IV[t, j] = rng.integers(lo, hi + 1)
            elif typ == "Py_ssize_t":
                IV[t, j] = rng.integers(0, 193) if pname == "off" else rng.integers(-8, 100)
        for i, j in REF_ALIAS_BUGS.get(name, []) if mode == "alias" else []:
            while IX[t, i] == IX[t, j]:
                IX[t, j] = rng.integers(0, min(3, NV))
    return V, W, WV, B, P, M, IX, IV


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default=DEFAULT_REF)
    ap.add_argument("--trials", type=int, default=4000)
    ap.add_argument("--sweeps", type=int, default=2,
                    help="sweep16 mode: each register walks all 65536 16-bit lane values this many times")
    ap.add_argument("--only", default="", help="comma-separated primitive names")
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from q7emu.primitives import optable
    funcs = [fp for fp in parse(current_sources()) if fp[0] in optable.BY_NAME]   # the ops, not the helpers
    if args.only:
        keep = set(args.only.split(","))
        funcs = [fp for fp in funcs if fp[0] in keep]
    ref_names = ref_primitive_names(args.ref)
    funcs = [fp for fp in funcs if fp[0] in ref_names]
    rng = np.random.default_rng(12345)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        mod = build(args.ref, funcs, tmp)
        for name, params in funcs:
            res = []
            for mode in ("distinct", "alias", "sweep16"):
                n = args.trials if mode != "sweep16" else 2048 * args.sweeps
                if not n:
                    continue
                bad, first = getattr(mod, f"t_{name}")(*make_inputs(rng, name, params, n, mode))
                res.append((mode, bad, first))
                if bad:
                    failures += 1
            flag = "  " if all(b == 0 for _, b, _ in res) else "!!"
            print(f"{flag} {name:18s} " + "  ".join(f"{m}: {b} bad (first {f})" if b else f"{m}: ok"
                                               for m, b, f in res))
    print(f"diff_primitives: {len(funcs)} primitives vs {args.ref}, {failures} failing mode(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
