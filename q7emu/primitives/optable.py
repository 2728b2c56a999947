"""The IVP op table: one frozen record per primitive, the single source of every primitive's facts.

Pure data (no numpy, no compiled code): read by :func:`q7emu.primitives.ivp.catalog`, ``q7emu ops``
(:mod:`q7emu.analysis.provenance`), the wrapper generator (:mod:`q7emu.primitives.gen_wrappers`, which
writes the Python wrappers of ``q7emu.ivp`` and their type stub from it), ``_ivp.time_op`` and the bench,
and checked against the compiled module and the family ``.pxd`` files by
``firmware_tests/primitives/test_ivp_catalog.py``.

A record (:class:`Op`) holds the mnemonic (no ``ivp_`` prefix; the C function of that name lives in
``src/primitives/<FAMILY_FILES[family]>.pxd``), its family, its operands in the Xtensa C intrinsic's argument
order, which is the disassembly's operand order (docs/intrinsics.md §2): the outputs first (as the C intrinsic
lists its out-parameters; a value-returning intrinsic's result is its first operand in the disassembly), then
the sources in argument order, a two-register source with its **high half first** (``IVP_SEL2NX8I(hi, lo,
imm)``, ``ivp_sel2nx8i vt, hi, lo, imm``), and the C primitive takes them in that order (``ivp_addnx16 vt, vs,
vr`` -> ``addnx16(&vt, &vs, &vr)``). Then the one-line semantics, the docs/ section it follows, the provenance
class of those semantics (with a detail note), the FLIX slot class it issues in (:data:`SLOT_CLASSES`,
docs/firmware.md §6.3), and (:attr:`Op.evidence`, from :mod:`q7emu.primitives.evidence`) the public code written
with the real toolchain that pins its operand order or meaning.

The Python wrapper of an op takes its non-destination operands in that order, except that a memory buffer
comes first, and returns its destination and read-modify-write operands in that order (a memory buffer is
written in place and not returned): ``bmin2nx8(va, vb) -> (flags, vt)``, ``lv2nx8_ip(mem, off, inc) -> (vt, off)``,
``dselnx16(hi, lo, sel) -> (odd, even)``.
"""
from __future__ import annotations

from collections.abc import Iterable

from q7emu._dataclass import dataclass
from q7emu.primitives.evidence import EVIDENCE, Evidence

# ---------------------------------------------------------------------------------- provenance classes
#: semantics rest on a firmware fact docs/firmware.md records at HIGH / MED confidence
SPEC_HIGH = "SPEC HIGH"
SPEC_MED = "SPEC MED"
#: semantics from the Cadence cstub probes quoted in docs/anchors.md §7 (functional-model truth, not a docs/firmware.md fact)
ANCHORS_HIGH = "ANCHORS HIGH"
#: semantics pinned by public code written with the real toolchain (docs/intrinsics.md): HIGH = a C fallback, an
#: #ifdef alternative, a value check against Cadence's functional model or Cadence's user-guide sequence; MED = a
#: generic code path or a sibling intrinsic's convention
PUBLIC_HIGH = "PUBLIC HIGH"
PUBLIC_MED = "PUBLIC MED"
#: docs/firmware.md leaves the lane map (or the whole op) open: q7emu's own choice, pinned by docs/ and the tests
Q7EMU_CHOICE = "q7emu choice"
PROVENANCE_CLASSES = (SPEC_HIGH, SPEC_MED, PUBLIC_HIGH, PUBLIC_MED, ANCHORS_HIGH, Q7EMU_CHOICE)

# ---------------------------------------------------------------------------------- families
MEM = "mem"              # loads / stores (docs/firmware.md §6.2 Loads, B06)
SELECT = "select"        # permutes, expand, predicated moves, broadcast (B21, §6.1 t forms)
ALU = "alu"              # add / sub / bitwise / integer compares / vbool logic (B03)
SHIFT = "shift"          # immediate and per-lane shifts (B12)
FLAG = "flag-alu"        # bmin / bmax / babssub / baddnorm / bsubnorm: a vec and a vbool flag (B03)
MAC = "mac"              # multiplies into wvec (B04 / B05)
WIDEN = "widen"          # vec -> wvec (B22)
PACK = "pack"            # wvec -> vec (B10)
FP = "fp"                # fp16 / fp32 compares and sign / exponent ops (B02)
CONVERT = "convert"      # int <-> float converts (B13 / B20)
PR_MOVE = "pr-move"      # moves into the packed register pr (XPR)
#: family -> the src/primitives/*.pxd file that defines its C primitives
FAMILY_FILES = {MEM: "ivp_mem", SELECT: "ivp_select", ALU: "ivp_alu", SHIFT: "ivp_shift", FLAG: "ivp_flag",
                MAC: "ivp_mac", WIDEN: "ivp_widen", PACK: "ivp_pack", FP: "ivp_fp", CONVERT: "ivp_convert",
                PR_MOVE: "ivp_pr"}

# ---------------------------------------------------------------------------------- FLIX slot classes
# docs/firmware.md §6.3: s0 LdSt, s1 Ld, s2 Mul (writes wvec), s3 ALU, s4 ALU only on formats F3 / F11.
LDST = "ldst"            # a load: s0 or s1
LDST2 = "ldst2"          # a load that uses both LSU pipes: s0 and s1 together
ST = "st"                # a store: s0 only (s1 loads only)
LD = "ld"                # a pack: s1
MUL = "mul"              # an op that writes a wvec: s2
ALU_SLOT = "alu"         # s3, or s4 in F3 / F11
S4 = "s4"                # an `_S4` form: pinned to s4 (ALU2)
#: slot class -> (the slots it may issue in, the source of the assignment)
SLOT_CLASSES: dict[str, tuple[tuple[str, ...], str]] = {
    LDST: (("s0", "s1"), "docs/firmware.md §6.3 (s0 LdSt, s1 Ld)"),
    LDST2: (("s0", "s1"), "docs/firmware.md §6.2 Loads (B06: l2a4nx8_ip uses both LSU pipes), §6.3"),
    ST: (("s0",), "docs/firmware.md §6.3 (s0 LdSt; s1 is Ld only)"),
    LD: (("s1",), "docs/firmware.md §6.2 wvec -> vec pack (B10: packs issue in the Ld slot)"),
    MUL: (("s2",), "docs/firmware.md §6.3 (s2 Mul writes wvec), §6.2 B22 (cvtg48 selector words F0/S2)"),
    ALU_SLOT: (("s3", "s4"), "docs/firmware.md §6.3 (s3 ALU; s4 ALU on F3 / F11)"),
    S4: (("s4",), "docs/firmware.md §6.2 Select (B21: _S0/_S2/_S4 forms pinned to the LdSt/Mul/ALU2 slot)"),
    # the scalar core's ops (q7emu/primitives/scalar_ops.py)
    "core": (("s0", "s1"), "docs/firmware.md §6.4 (a scalar op in a bundle: the .w15 branch forms, addi.a)"),
    "any": (("s0", "s1", "s2", "s3", "s4"), "docs/firmware.md §6.4 (nop fills a free slot: { loop.w15 ...; nop })"),
}

# ---------------------------------------------------------------------------------- operands
DST, SRC, SRCDST = "dst", "src", "srcdst"
# register / operand kinds
VEC, WVEC, VBOOL, PR, VALIGN, IMM, SCALAR, MEMORY = "vec", "wvec", "vbool", "pr", "valign", "imm", "scalar", "memory"
# the scalar core's operand kinds (q7emu/primitives/scalar_ops.py): an address register a0..a15, a branch target
AREG, LABEL = "areg", "label"
# numpy dtypes of the wrappers' lane arrays ("int" = a Python int)
U8, S8, U16, S16, U32, S32, F16, F32 = "uint8", "int8", "uint16", "int16", "uint32", "int32", "float16", "float32"
BOOL, I64, INT = "bool", "int64", "int"
#: vec lane view -> lanes (docs/firmware.md §6.1: 2NX8 = 64 x 8, NX16 = 32 x 16, N_2X32 = 16 x 32, NXF16, N_2XF32)
VEC_LANES = {"2nx8": 64, "nx16": 32, "n_2x32": 16, "nxf16": 32, "n_2xf32": 16}
#: wvec lane view -> lanes (64 x 24, 32 x 48, 16 x 96 bits)
WVEC_LANES = {"wvec24": 64, "wvec48": 32, "wvec96": 16}


@dataclass(frozen=True)
class Operand:
    """One operand of an op, as the C primitive and the Python wrapper see it.

    ``name`` is the disassembly operand (``vt``, ``wv``, ``vb``), ``arg`` the wrapper's argument name when it
    differs (``vt_old`` for a merged destination, ``acc`` for an accumulator). ``view`` is the lane view the
    op reads or writes (a vec / vbool view, ``wvec24/48/96``); ``dtype`` the numpy dtype of the wrapper's
    array (or ``int``). Immediates carry their legal range ``lo..hi`` (and ``values`` when only some are
    modelled) and an ``example`` value; ``optional`` accumulators accept None for all-zero lanes;
    ``signed_when`` names the immediate bit that makes a result signed (``"imm & 16"``); ``touches`` is which
    bytes a memory operand reads or writes: 64 at ``mem[off]``, ``"n"`` (min(max(n, 0), 64) at ``mem[off]``, n
    the length operand), ``"row"`` / ``"row2"`` (the one / two aligned 64-byte rows from ``off & ~63``).
    """

    name: str
    role: str
    kind: str
    view: str = ""
    dtype: str = ""
    arg: str = ""
    lo: int | None = None
    hi: int | None = None
    values: tuple[int, ...] = ()
    example: int | None = None
    optional: bool = False
    signed_when: str = ""
    touches: int | str = 64
    step: int = 1
    align: int = 1

    @property
    def argname(self) -> str:
        """The wrapper's argument name for this operand."""
        return self.arg or self.name

    @property
    def lanes(self) -> int:
        """Lanes of a vec / vbool / wvec operand (0 for the others)."""
        return VEC_LANES.get(self.view) or WVEC_LANES.get(self.view) or 0

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the wrapper's array: (lanes,), (64,) for valign, (-1,) for a 1-D buffer, () for an int."""
        if self.kind in (VEC, VBOOL, WVEC):
            return (self.lanes,)
        if self.kind == VALIGN:
            return (64,)
        if self.kind == MEMORY:
            return (-1,)
        return ()

    @property
    def pytype(self) -> str:
        """The wrapper's Python type: ndarray, list[int] (96-bit wvec lanes) or int."""
        if self.kind == WVEC and self.view == "wvec96":
            return "list[int]"
        return "ndarray" if self.shape else "int"

    @property
    def signed_when_arg(self) -> tuple[str, int] | None:
        """(immediate argument, mask) of ``signed_when`` ("imm & 16" -> ("imm", 16)), or None."""
        if not self.signed_when:
            return None
        name, mask = self.signed_when.split("&")
        return name.strip(), int(mask, 0)

    def describe(self) -> str:
        """``uint8[64]``, ``bool[32]``, ``int64[32] (wvec48)``, ``int in [0, 15]``, ``uint8[n] buffer``..."""
        if self.kind == MEMORY:
            return "uint8[n] buffer" + (" (written in place)" if self.role != SRC else "")
        if self.kind == IMM:
            rng = f"int in [{self.lo}, {self.hi}]"
            return rng + (f", one of {', '.join(hex(v) for v in self.values)}" if self.values else "")
        if self.kind == PR:
            return "int in [0, 2^64) (pr)"
        if self.kind == SCALAR:
            return "int (bytes)"
        if self.pytype == "list[int]":
            base = f"{self.lanes} Python ints ({self.view})"
        else:
            dt = self.dtype if not self.signed_when else f"{self.dtype} (int16 when {self.signed_when})"
            base = f"{dt}[{self.shape[0]}] ({self.view})"
        return base + (" or None (zeros)" if self.optional else "")


def vec(name: str, view: str, dtype: str, role: str = SRC, arg: str = "", signed_when: str = "") -> Operand:
    """A vec register operand in lane view ``view``."""
    return Operand(name, role, VEC, view, dtype, arg, signed_when=signed_when)


def vbool(name: str, view: str, role: str = SRC, arg: str = "") -> Operand:
    """A vbool operand read or written per lane of ``view`` (bool[lanes] in the wrapper)."""
    return Operand(name, role, VBOOL, view, BOOL, arg)


def wvec(name: str, bits: int, role: str = SRC, arg: str = "", optional: bool = False) -> Operand:
    """A wvec accumulator in its ``bits``-bit lane view: int64 lanes (24/48) or Python ints (96)."""
    return Operand(name, role, WVEC, f"wvec{bits}", INT if bits == 96 else I64, arg, optional=optional)


def pr(name: str = "pr", role: str = SRC) -> Operand:
    """The 64-bit packed register (a Python int in the wrapper)."""
    return Operand(name, role, PR, "pr", INT)


def imm(name: str, lo: int, hi: int, example: int | None = None, values: tuple[int, ...] = (),
        step: int = 1) -> Operand:
    """An immediate in [lo, hi] (or one of ``values``), a multiple of ``step``."""
    return Operand(name, SRC, IMM, "", INT, lo=lo, hi=hi, values=values, example=lo if example is None else example,
                   step=step)


def scalar(name: str, role: str = SRC) -> Operand:
    """An address-register value (a byte offset, increment or length)."""
    return Operand(name, role, SCALAR, "", INT)


def mem(role: str = SRC, touches: int | str = 64, align: int = 1) -> Operand:
    """The memory operand: a 1-D uint8 buffer addressed with the byte offset operand ``off``, at an address that is
    a multiple of ``align``."""
    return Operand("mem", role, MEMORY, "", U8, touches=touches, align=align)


def valign(name: str, role: str) -> Operand:
    """A 512-bit alignment register (the unaligned stream's carry row; uint8[64])."""
    return Operand(name, role, VALIGN, "", U8)


def _vvv(view: str, dt: str) -> tuple[Operand, ...]:
    return vec("vt", view, dt, DST), vec("vs", view, dt), vec("vr", view, dt)


def _hilo(view: str, dt: str) -> tuple[Operand, ...]:
    """A two-register source, high half first (pool = lo || hi)."""
    return vec("hi", view, dt), vec("lo", view, dt)


def _sel(view: str, dt: str) -> tuple[Operand, ...]:
    """vt, hi, lo, sel of a variable select (the selector in the same lane view)."""
    return (vec("vt", view, dt, DST),) + _hilo(view, dt) + (vec("sel", view, dt),)


def _vvb(view: str, dt: str, role: str) -> tuple[Operand, ...]:
    return vec("vt", view, dt, role), vec("vs", view, dt), vbool("vb", view)


def _vvi(view: str, dt: str, hi: int) -> tuple[Operand, ...]:
    return vec("vt", view, dt, DST), vec("vs", view, dt), imm("imm", 0, hi, example=3)


def _bvv(view: str, dt: str) -> tuple[Operand, ...]:
    return vbool("vb", view, DST), vec("vs", view, dt), vec("vr", view, dt)


def _bvvv(view: str, dt: str, out: str) -> tuple[Operand, ...]:
    return (vbool("flags", view, DST), vec("vt", view, out, DST), vec("va", view, dt),
            vec("vr", view, dt, arg="vb"))


OVERWRITE, ACCUMULATE = False, True      # a MAC's `mul` / `mula` form
CARRY_UP, BIT_WINDOW, WHOLE_LANE = "carry-up", "bit-window", "whole-lane"    # Op.narrows
PRODUCT = "product"                                 # Op.lane_range
ALL_TRUE, ALL_FALSE = "all-true", "all-false"     # Op.equal_sources


def _macc(view: str, acc: bool) -> Operand:
    """The wvec of a MAC on `view` lanes (24-bit wvec lanes for 8-bit, 48-bit for 16-bit): dst or accumulated."""
    bits = 1536 // VEC_LANES[view]          # a wvec lane is 3x the vec lane
    return wvec("wv", bits, SRCDST, arg="acc", optional=True) if acc else wvec("wv", bits, DST)


def _wvvp(view: str, dt: str, acc: bool) -> tuple[Operand, ...]:
    """wv, va, vb, pr of a paired pr MAC (va takes pr bits 16..31, vb bits 0..15)."""
    return _macc(view, acc), vec("va", view, dt), vec("vb", view, dt), pr("pr")


def _wtap(view: str, dt: str, acc: bool) -> tuple[Operand, ...]:
    """wv, hi, lo, pr of a 4-tap pr MAC: the window is lo || hi, tap 0 on lo."""
    return (_macc(view, acc),) + _hilo(view, dt) + (pr("pr"),)


def _vw(view: str, dt: str, bits: int) -> tuple[Operand, ...]:
    return vec("vt", view, dt, DST), wvec("wv", bits, arg="acc")


def _vwi(view: str, dt: str, bits: int) -> tuple[Operand, ...]:
    return _vw(view, dt, bits) + (imm("sh", 0, 63, example=14),)


def _fcmp(view: str, bview: str, dt: str) -> tuple[Operand, ...]:
    return (vbool("vb", bview, SRCDST, arg="vb_old"), vec("va", view, dt), vec("vr", view, dt),
            vbool("vbp", bview))


# ---------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Op:
    """One IVP primitive: every fact q7emu keeps about it."""

    mnemonic: str
    family: str
    operands: tuple[Operand, ...]
    semantics: str
    cite: str
    provenance: str
    note: str
    slot: str
    #: how its accumulator's lanes may be narrowed (docs/asm.md §9): CARRY_UP, a MAC whose output lane's bit j
    #: depends only on bits 0..j of its accumulator and operands (a sum of products modulo the lane); BIT_WINDOW, a
    #: pack that reads bits sh .. sh + 15 of each 48-bit lane (no rounding, no saturation); WHOLE_LANE, a pack that
    #: reads each lane's whole value (rounds, saturates): on narrowed cells it reads the cell's sign extension, the
    #: lane itself only where the lane's value range fits the cell as a signed number (value ranges); "" none. The
    #: primitive takes a narrowed accumulator (src/primitives/q7regs.pxd wacc48_t / wacc96_t) exactly when this is set.
    narrows: str = ""
    #: what bounds the lanes it writes (docs/asm.md §9, value ranges): PRODUCT, an overwrite whose lane i is the
    #: product of lane i of its two vec operands (in their lane view), so its range follows from theirs; "" nothing.
    lane_range: str = ""
    #: the vbool an integer compare gives when its two sources are one register (docs/asm.md §9, known
    #: predicates): ALL_TRUE (x == x, x <= x: every bit set), ALL_FALSE (x < x, x != x: every bit clear); "" when
    #: it depends on the lanes (an fp compare: a NaN lane is unordered) or the op is no such compare. Tested on the
    #: primitive itself (firmware_tests/primitives/test_equal_sources.py).
    equal_sources: str = ""
    #: the vbool operands (by name) the primitive also takes as a lane mask (docs/asm.md §9, lane-mask predicates:
    #: src/primitives/q7regs.pxd vpred_t, 64 bytes, byte j all ones where vbool bit j is set); the same op on either
    #: form gives the same predicate (firmware_tests/primitives/test_lane_masks.py).
    lane_mask: tuple[str, ...] = ()
    #: the vbool operand (by name) under which the op merges: its SRCDST operands keep their old lanes where it is
    #: false, so where it is all-true the op reads nothing of their old values (docs/asm.md §9: with a known all-true
    #: predicate, liveness does not count those reads); "" for no such merge.
    merge_under: str = ""
    #: a 16-bit lookup of the pool lo || hi (64 lanes, each output lane's index bits 0..5 of one selector byte) that
    #: has a chunk form (docs/asm.md §9, lookup chunks; src/primitives/ivp_select.pxd ``<mnemonic>_chunk``): lane
    #: 16 c + (index & 15) for a chunk c per output, the op's own lanes wherever every index it reads lies in chunk c
    #: or reads a lane equal to the one at its place in chunk c. Tested on the primitive
    #: (firmware_tests/primitives/test_lookup_chunks.py).
    chunk_form: bool = False
    #: the lane width in bytes of an op whose vec output's every lane is a function of one byte of its vec sources
    #: (which byte, the lane and the immediates decide): the values its lanes take are among those it gives on
    #: sources filled with one byte value, over the 256 (docs/asm.md §9, lane value sets); 0: not stated. Tested on
    #: the primitive (firmware_tests/primitives/test_lane_value_facts.py).
    one_byte_lanes: int = 0

    @property
    def lanewise(self) -> int:
        """The lane width in bytes in which the op is lane-wise (docs/asm.md §9, lane value sets), 0 where it is not:
        an ALU or shift op whose one output is a vec destination and whose other operands are vec sources in its
        lane view or immediates -- lane i of its output is a function of lane i of each source (and the
        immediates). Tested on every such primitive (firmware_tests/primitives/test_lane_value_facts.py: rotating
        every source's lanes rotates the output's)."""
        if self.family not in (ALU, SHIFT):
            return 0
        dst = [o for o in self.operands if o.role != SRC]
        if len(dst) != 1 or dst[0].kind != VEC or dst[0].role != DST:
            return 0
        if any(o.kind not in (VEC, IMM) or (o.kind == VEC and o.view != dst[0].view) for o in self.operands):
            return 0
        return 64 // VEC_LANES[dst[0].view]

    @property
    def args(self) -> tuple[Operand, ...]:
        """The wrapper's arguments in order: the memory buffer first, then every non-destination operand."""
        ins = [o for o in self.operands if o.role != DST]
        return tuple(sorted(ins, key=lambda o: o.kind != MEMORY))

    @property
    def returns(self) -> tuple[Operand, ...]:
        """What the wrapper returns, in order (one value, or a tuple of these)."""
        return tuple(o for o in self.operands if o.role != SRC and o.kind != MEMORY)

    @property
    def provenance_text(self) -> str:
        """``q7emu choice (4t lane map)``: the class with its detail note."""
        return f"{self.provenance} ({self.note})" if self.note else self.provenance

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        """The public code that pins this op's operand order or meaning (docs/intrinsics.md); () when none does."""
        return EVIDENCE.get(self.mnemonic, ())

    @property
    def slots(self) -> tuple[str, ...]:
        """The FLIX slots the op may issue in."""
        return SLOT_CLASSES[self.slot][0]

    @property
    def pxd(self) -> str:
        """The family file that defines the C primitive (without .pxd)."""
        return FAMILY_FILES[self.family]

    def operand(self, argname: str) -> Operand:
        """The operand the wrapper names ``argname``."""
        return next(o for o in self.operands if o.argname == argname)


#: sel2nx8i immediates whose lane maps q7emu models (q7emu choice; docs/firmware.md §6.2 B21 / §8.1.12)
SEL2NX8I_IMMS = (0x00, 0x01, 0x02, 0x03, 0x08, 0x09, 0x0A, 0x0B, 0x10, 0x11, 53)

#: mnemonics the facts give two readings of (docs/asm.md §5; docs/firmware.md §8.2 item 8): mnemonic -> {reading:
#: (the op that runs, its slot class, "" = that op's own)}; the first reading is the default. ``sel2nx8i_s4`` is a
#: nibble unpack in the kernel pages (q7emu's op of that name) and, in ISA-batch page B21, ``sel2nx8i`` pinned to
#: the ALU2 slot (S4) with the same immediate table
READINGS: dict[str, dict[str, tuple[str, str]]] = {
    "sel2nx8i_s4": {"unpack": ("sel2nx8i_s4", ""), "select": ("sel2nx8i", S4)},
}

#: every primitive with a Python wrapper (q7emu.ivp.<mnemonic>), listed by ``q7emu ops``
OPS: tuple[Op, ...] = (
    Op("lv2nx8_ip", MEM, (vec("vt", "2nx8", U8, DST), mem(align=64), scalar("off", SRCDST), scalar("inc"),),
       "vt = the 64 bytes at mem[off]; returns (vt uint8[64], off + inc).",
       "docs/firmware.md §6.2 Loads (B06)", SPEC_HIGH, "", LDST),
    Op("l2a4nx8_ip", MEM, (vec("vt", "2nx8", U8, DST), mem(), scalar("off", SRCDST), scalar("inc"),),
       "vt = the 64 bytes at mem[off] read through the two-row (1024-bit) window; off += inc.",
       "docs/firmware.md §6.2 Loads (B06), §8.2.9", Q7EMU_CHOICE, "", LDST2),
    Op("lav2nx8_xp", MEM, (vec("vt", "2nx8", U8, DST), mem(touches="n"), scalar("off", SRCDST), scalar("n"),),
       "vt = the first c = min(max(n, 0), 64) bytes at mem[off], zero-filled; off += c (variable-length load).",
       "docs/firmware.md §6.2 Loads (B06); docs/intrinsics.md §3.8", PUBLIC_HIGH, "valign carry not modelled", LDST),
    Op("labvdcmprs2nx8_xp", MEM, (vec("vt", "2nx8", U8, DST), vbool("vb", "2nx8"), mem(touches="n"), scalar("off", SRCDST), scalar("n"),),
       "R = the first c = min(max(n, 0), 64) bytes at mem[off], zero-filled; vt[k] = vb[k] ? R[popcount(vb below k)] : R[63]; off += c.",
       "docs/firmware.md §6.2 Loads (B06), docs/model.md §8 item 18", SPEC_MED, "lane wiring; byte count as lav2nx8_xp (q7emu choice)", LDST),
    Op("sv2nx8_ip", MEM, (vec("vs", "2nx8", U8), mem(SRCDST, align=64), scalar("off", SRCDST), scalar("inc"),),
       "Store the 64 bytes of vs at mem[off] (in place); returns off + inc.",
       "docs/firmware.md §6.2 Loads/stores (B06)", SPEC_HIGH, "", ST),
    Op("sav2nx8_xp", MEM, (vec("vs", "2nx8", U8), mem(SRCDST, touches="n"), scalar("off", SRCDST), scalar("n"),),
       "Store the first c = min(max(n, 0), 64) bytes of vs at mem[off] (in place); returns off + c.",
       "docs/firmware.md §6.2 Loads/stores (B06); docs/intrinsics.md §3.8", PUBLIC_HIGH, "valign flush not modelled", ST),
    Op("sel2nx8", SELECT, (*_sel("2nx8", U8),),
       "vt[k] = pool[sel[k] & 0x7F], pool = lo (bytes 0..63) || hi (64..127).",
       "docs/firmware.md §6.2 Select (B21); docs/intrinsics.md §3.1 (order)", SPEC_HIGH, "", ALU_SLOT),
    Op("selnx16", SELECT, (*_sel("nx16", U16),),
       "vt[k] = pool16[sel[k] & 0x3F], pool16 = lo (lanes 0..31) || hi (32..63).",
       "docs/firmware.md §6.2 Select (B21); docs/intrinsics.md §3.1 (order)", SPEC_HIGH, "", ALU_SLOT, chunk_form=True),
    Op("seln_2x32", SELECT, (*_sel("n_2x32", U32),),
       "vt[k] = pool32[sel[k] & 0x1F], pool32 = lo (lanes 0..15) || hi (16..31).",
       "docs/firmware.md §6.2 Select (B21); docs/intrinsics.md §3.1 (order)", SPEC_HIGH, "", ALU_SLOT),
    Op("sel2nx8i", SELECT, (vec("vt", "2nx8", U8, DST), *_hilo("2nx8", U8), imm("imm", 0, 127, example=0, values=SEL2NX8I_IMMS),),
       "vt = fixed permutation `imm` of pool = lo (bytes 0..63) || hi (64..127): 0/1 even/odd bytes, 2/3 interleave lo/hi halves, 8..11 every 4th byte from offset imm-8, 0x10/0x11 rotate right by 1/4, 53 interleave the odd bytes (vt[2k] = lo[2k+1], vt[2k+1] = hi[2k+1]).",
       "docs/firmware.md §6.2 Select (B21), §8.1.12; docs/intrinsics.md §3.1", Q7EMU_CHOICE, "immediate numbers", ALU_SLOT),
    Op("sel2nx8i_s4", SELECT, (vec("vt", "nx16", U16, DST, signed_when="imm & 16"), vec("vs", "2nx8", U8), vec("vr", "2nx8", U8), imm("imm", 0, 31, example=9),),
       "Nibble unpack: vt.16[k] = nibble ((k&1)^H) of byte 16*C + (k>>1) of vs || vr (chunks 0..3 from the first operand), zero/sign-extended; imm = S<<4 | H<<3 | C.",
       "docs/firmware.md §8.2.8, seeds @0x010051a9, @0x010052ee; docs/model.md §8 item 2", Q7EMU_CHOICE, "unpack reading; chunk order from the seeds", S4, one_byte_lanes=2),
    Op("dselnx16", SELECT, (vec("odd", "nx16", U16, DST), vec("even", "nx16", U16, DST), *_hilo("nx16", U16), vec("sel", "2nx8", U8),),
       "Two permutations of pool16 = lo (lanes 0..31) || hi (32..63): even[k] = pool[sel.u8[2k] & 63], odd[k] = pool[sel.u8[2k+1] & 63]; returns (odd, even).",
       "docs/firmware.md §6.2 Select (B21); docs/intrinsics.md §3.2", PUBLIC_HIGH, "Cadence user-guide sequence", ALU_SLOT, chunk_form=True),
    Op("dselnx16t", SELECT, (vec("odd", "nx16", U16, SRCDST, arg="odd_old"), vec("even", "nx16", U16, SRCDST, arg="even_old"), *_hilo("nx16", U16), vec("sel", "2nx8", U8), vbool("vb", "2nx8"),),
       "dselnx16 merged under the vbool2N vb: bit 2k gates even[k], bit 2k+1 gates odd[k]; false lanes keep odd_old / even_old; returns (odd, even).",
       "docs/firmware.md §6.2 Select (B21), §6.1 t forms; docs/intrinsics.md §3.2", PUBLIC_HIGH, "Cadence user-guide sequence", ALU_SLOT, merge_under="vb",
       chunk_form=True),
    Op("dseln_2x32t", SELECT, (vec("odd", "n_2x32", U32, SRCDST, arg="odd_old"), vec("even", "n_2x32", U32, SRCDST, arg="even_old"), *_hilo("n_2x32", U32), vec("sel", "nx16", U16), vbool("vb", "nx16"),),
       "even[k] = pool32[sel.u16[2k] & 31], odd[k] = pool32[sel.u16[2k+1] & 31], pool32 = lo || hi; vb lane 2k gates even[k], lane 2k+1 odd[k]; returns (odd, even).",
       "docs/firmware.md §6.2 Select (B21); docs/intrinsics.md §3.2", Q7EMU_CHOICE, "by analogy with dselnx16t", ALU_SLOT, merge_under="vb"),
    Op("dcmprs2nx8", SELECT, (vec("vt", "2nx8", U8, DST), vec("vr", "2nx8", U8), vbool("vb", "2nx8"),),
       "Expand: vt[k] = vb[k] ? vr[popcount(vb bits below k)] : vr[63].",
       "docs/firmware.md §6.2 Select (B21)", SPEC_HIGH, "", ALU_SLOT),
    Op("mov2nx8t", SELECT, (*_vvb("2nx8", U8, SRCDST),),
       "vt[k] = vb[k] ? vs[k] : vt[k] (8-bit lanes).",
       "docs/firmware.md §6.1 t forms", SPEC_HIGH, "", ALU_SLOT, lane_mask=("vb",), merge_under="vb"),
    Op("movnx16t", SELECT, (*_vvb("nx16", U16, SRCDST),),
       "vt[k] = vb[k] ? vs[k] : vt[k] (16-bit lanes).",
       "docs/firmware.md §6.1 t forms", SPEC_HIGH, "", ALU_SLOT, lane_mask=("vb",), merge_under="vb"),
    Op("movn_2x32t", SELECT, (*_vvb("n_2x32", U32, SRCDST),),
       "vt[k] = vb[k] ? vs[k] : vt[k] (32-bit lanes).",
       "docs/firmware.md §6.1 t forms", SPEC_HIGH, "", ALU_SLOT, lane_mask=("vb",), merge_under="vb"),
    Op("repnx16", SELECT, (vec("vt", "nx16", U16, DST), vec("vs", "nx16", U16), imm("lane", 0, 31, example=3),),
       "vt[k] = vs[lane] for all k (broadcast a 16-bit lane).",
       "docs/anchors.md §7 (REPNX16)", SPEC_MED, "", ALU_SLOT),
    Op("add2nx8", ALU, (*_vvv("2nx8", U8),),
       "vt = vs + vr on 8-bit lanes, wrapping.",
       "docs/anchors.md §7 (IVP_ADD2NX8U)", ANCHORS_HIGH, "Cadence cstub probe", ALU_SLOT),
    Op("addnx16", ALU, (*_vvv("nx16", U16),),
       "vt = vs + vr on 16-bit lanes, wrapping.",
       "docs/anchors.md §7 (IVP_ADDNX16U)", ANCHORS_HIGH, "Cadence cstub probe", ALU_SLOT),
    Op("addn_2x32", ALU, (*_vvv("n_2x32", U32),),
       "vt = vs + vr on 32-bit lanes, wrapping.",
       "docs/anchors.md §7 (IVP_ADD*/SUB* wrap)", ANCHORS_HIGH, "Cadence cstub probe, same family", ALU_SLOT),
    Op("sub2nx8", ALU, (*_vvv("2nx8", U8),),
       "vt = vs - vr on 8-bit lanes, wrapping.",
       "docs/anchors.md §7 (IVP_SUB2NX8U)", ANCHORS_HIGH, "Cadence cstub probe", ALU_SLOT),
    Op("subnx16", ALU, (*_vvv("nx16", U16),),
       "vt = vs - vr on 16-bit lanes, wrapping.",
       "docs/anchors.md §7 (IVP_ADD*/SUB* wrap)", ANCHORS_HIGH, "Cadence cstub probe, same family", ALU_SLOT),
    Op("subn_2x32", ALU, (*_vvv("n_2x32", U32),),
       "vt = vs - vr on 32-bit lanes, wrapping.",
       "docs/anchors.md §7 (IVP_ADD*/SUB* wrap)", ANCHORS_HIGH, "Cadence cstub probe, same family", ALU_SLOT),
    Op("and2nx8", ALU, (*_vvv("2nx8", U8),),
       "vt = vs & vr over all 512 bits.",
       "docs/firmware.md §6.1 vec register", Q7EMU_CHOICE, "bitwise ops are not described by the facts", ALU_SLOT),
    Op("or2nx8", ALU, (*_vvv("2nx8", U8),),
       "vt = vs | vr over all 512 bits.",
       "docs/firmware.md §6.1 vec register", Q7EMU_CHOICE, "bitwise ops are not described by the facts", ALU_SLOT),
    Op("xor2nx8", ALU, (*_vvv("2nx8", U8),),
       "vt = vs ^ vr over all 512 bits.",
       "docs/firmware.md §6.1 vec register", Q7EMU_CHOICE, "bitwise ops are not described by the facts", ALU_SLOT),
    Op("eq2nx8", ALU, (*_bvv("2nx8", U8),),
       "vb[k] = vs[k] == vr[k] (8-bit lanes).",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT, equal_sources=ALL_TRUE),
    Op("ltu2nx8", ALU, (*_bvv("2nx8", U8),),
       "vb[k] = vs[k] < vr[k], unsigned 8-bit lanes.",
       "docs/anchors.md §7 (IVP_LTU2NX8)", ANCHORS_HIGH, "Cadence cstub probe", ALU_SLOT, equal_sources=ALL_FALSE),
    Op("eqnx16", ALU, (*_bvv("nx16", U16),),
       "vb[k] = vs[k] == vr[k] (16-bit lanes, 2 bits each).",
       "docs/firmware.md §6.2 (B03)", SPEC_HIGH, "", ALU_SLOT, equal_sources=ALL_TRUE),
    Op("neqnx16", ALU, (*_bvv("nx16", U16),),
       "vb[k] = vs[k] != vr[k] (16-bit lanes).",
       "docs/firmware.md §6.2 (B03)", SPEC_HIGH, "", ALU_SLOT, equal_sources=ALL_FALSE, lane_mask=("vb",)),
    Op("ltnx16", ALU, (*_bvv("nx16", S16),),
       "vb[k] = vs[k] < vr[k], signed 16-bit lanes.",
       "docs/firmware.md §6.2 (B03)", SPEC_HIGH, "", ALU_SLOT, equal_sources=ALL_FALSE),
    Op("lenx16", ALU, (*_bvv("nx16", S16),),
       "vb[k] = vs[k] <= vr[k], signed 16-bit lanes.",
       "docs/firmware.md §6.2 (B03)", SPEC_HIGH, "", ALU_SLOT, equal_sources=ALL_TRUE),
    Op("ltunx16", ALU, (*_bvv("nx16", U16),),
       "vb[k] = vs[k] < vr[k], unsigned 16-bit lanes.",
       "docs/firmware.md §6.2 (B03)", SPEC_HIGH, "", ALU_SLOT, equal_sources=ALL_FALSE),
    Op("eqn_2x32", ALU, (*_bvv("n_2x32", U32),),
       "vb[k] = vs[k] == vr[k] (32-bit lanes, 4 bits each).",
       "docs/firmware.md §6.2 (B03)", SPEC_HIGH, "", ALU_SLOT, equal_sources=ALL_TRUE, lane_mask=("vb",)),
    Op("ltn_2x32", ALU, (*_bvv("n_2x32", S32),),
       "vb[k] = vs[k] < vr[k], signed 32-bit lanes.",
       "docs/firmware.md §6.2 (B03)", SPEC_HIGH, "", ALU_SLOT, equal_sources=ALL_FALSE),
    Op("sllinx16", SHIFT, (*_vvi("nx16", U16, 15),),
       "vt = vs << imm on 16-bit lanes (imm4; >= 16 gives 0).",
       "docs/firmware.md §6.2 Shifts (B12)", SPEC_HIGH, "", ALU_SLOT),
    Op("srlinx16", SHIFT, (*_vvi("nx16", U16, 15),),
       "vt = vs >> imm (logical) on 16-bit lanes (imm4).",
       "docs/firmware.md §6.2 Shifts (B12)", SPEC_HIGH, "", ALU_SLOT),
    Op("srainx16", SHIFT, (*_vvi("nx16", S16, 15),),
       "vt = vs >> imm (arithmetic) on 16-bit lanes (imm4).",
       "docs/firmware.md §6.2 Shifts (B12)", SPEC_HIGH, "", ALU_SLOT),
    Op("sllin_2x32", SHIFT, (*_vvi("n_2x32", U32, 31),),
       "vt = vs << imm on 32-bit lanes (imm5).",
       "docs/firmware.md §6.2 Shifts (B12)", SPEC_HIGH, "", ALU_SLOT),
    Op("srlin_2x32", SHIFT, (*_vvi("n_2x32", U32, 31),),
       "vt = vs >> imm (logical) on 32-bit lanes (imm5).",
       "docs/firmware.md §6.2 Shifts (B12)", SPEC_HIGH, "", ALU_SLOT),
    Op("srain_2x32", SHIFT, (*_vvi("n_2x32", S32, 31),),
       "vt = vs >> imm (arithmetic) on 32-bit lanes (imm5).",
       "docs/firmware.md §6.2 Shifts (B12)", SPEC_HIGH, "", ALU_SLOT),
    Op("srlnx16", SHIFT, (*_vvv("nx16", U16),),
       "vt[k] = vs[k] >> a (logical), a = vr[k] read as int16; a < 0 shifts left by -a; |a| >= 16 gives 0.",
       "docs/firmware.md §6.2 Shifts (B12); docs/intrinsics.md §3.7", SPEC_HIGH, "negative amounts: public code", ALU_SLOT),
    Op("srln_2x32", SHIFT, (*_vvv("n_2x32", U32),),
       "vt[k] = vs[k] >> a (logical), a = vr[k] read as int32; a < 0 shifts left by -a; |a| >= 32 gives 0.",
       "docs/firmware.md §6.2 Shifts (B12), §3.6 @0x79ec; docs/intrinsics.md §3.7", SPEC_HIGH, "negative amounts: public code", ALU_SLOT),
    Op("sllnx16", SHIFT, (*_vvv("nx16", U16),),
       "vt[k] = vs[k] << a, a = signed 6-bit vr[k] (negative: logical right).",
       "docs/firmware.md §6.2 Shifts (B12)", SPEC_HIGH, "", ALU_SLOT),
    Op("sranx16", SHIFT, (*_vvv("nx16", S16),),
       "vt[k] = vs[k] >> a (arithmetic), a = signed 6-bit vr[k] (negative: left).",
       "docs/firmware.md §6.2 Shifts (B12)", SPEC_HIGH, "", ALU_SLOT),
    Op("slln_2x32", SHIFT, (*_vvv("n_2x32", U32),),
       "vt[k] = vs[k] << a, a = signed 7-bit vr[k] (negative: logical right).",
       "docs/firmware.md §6.2 Shifts (B12)", SPEC_HIGH, "", ALU_SLOT),
    Op("sran_2x32", SHIFT, (*_vvv("n_2x32", S32),),
       "vt[k] = vs[k] >> a (arithmetic), a = signed 7-bit vr[k] (negative: left).",
       "docs/firmware.md §6.2 Shifts (B12)", SPEC_HIGH, "", ALU_SLOT),
    Op("bmin2nx8", FLAG, (*_bvvv("2nx8", S8, S8),),
       "(flags, vt): vt = min(a, b) signed 8-bit, flag = a < b (tie: 0, b selected).",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bminu2nx8", FLAG, (*_bvvv("2nx8", U8, U8),),
       "(flags, vt): vt = min(a, b) unsigned 8-bit, flag = a < b.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bmax2nx8", FLAG, (*_bvvv("2nx8", S8, S8),),
       "(flags, vt): vt = max(a, b) signed 8-bit, flag = a > b (tie: 0, b selected).",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bmaxu2nx8", FLAG, (*_bvvv("2nx8", U8, U8),),
       "(flags, vt): vt = max(a, b) unsigned 8-bit, flag = a > b.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bminnx16", FLAG, (*_bvvv("nx16", S16, S16),),
       "(flags, vt): vt = min(a, b) signed 16-bit, flag = a < b.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bminunx16", FLAG, (*_bvvv("nx16", U16, U16),),
       "(flags, vt): vt = min(a, b) unsigned 16-bit, flag = a < b.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bmaxnx16", FLAG, (*_bvvv("nx16", S16, S16),),
       "(flags, vt): vt = max(a, b) signed 16-bit, flag = a > b.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bmaxunx16", FLAG, (*_bvvv("nx16", U16, U16),),
       "(flags, vt): vt = max(a, b) unsigned 16-bit, flag = a > b.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bminn_2x32", FLAG, (*_bvvv("n_2x32", S32, S32),),
       "(flags, vt): vt = min(a, b) signed 32-bit, flag = a < b.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bminun_2x32", FLAG, (*_bvvv("n_2x32", U32, U32),),
       "(flags, vt): vt = min(a, b) unsigned 32-bit, flag = a < b.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bmaxn_2x32", FLAG, (*_bvvv("n_2x32", S32, S32),),
       "(flags, vt): vt = max(a, b) signed 32-bit, flag = a > b.",
       "docs/firmware.md §6.2 Flag ALU (B03), §3.6 @0x79ec", SPEC_HIGH, "", ALU_SLOT),
    Op("bmaxun_2x32", FLAG, (*_bvvv("n_2x32", U32, U32),),
       "(flags, vt): vt = max(a, b) unsigned 32-bit, flag = a > b.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("babssub2nx8", FLAG, (*_bvvv("2nx8", S8, U8),),
       "(flags, vt): vt = |a - b| (unsigned result), flag = a < b, signed 8-bit.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("babssubu2nx8", FLAG, (*_bvvv("2nx8", U8, U8),),
       "(flags, vt): vt = |a - b|, flag = a < b, unsigned 8-bit.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("babssubnx16", FLAG, (*_bvvv("nx16", S16, U16),),
       "(flags, vt): vt = |a - b| (unsigned result), flag = a < b, signed 16-bit.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("babssubunx16", FLAG, (*_bvvv("nx16", U16, U16),),
       "(flags, vt): vt = |a - b|, flag = a < b, unsigned 16-bit.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT, lane_mask=("flags",)),
    Op("baddnormnx16", FLAG, (*_bvvv("nx16", S16, S16),),
       "(flags, vt): s = a + b (17-bit); flag = bit15 != bit16; vt = flag ? s >> 1 : s.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("bsubnormnx16", FLAG, (*_bvvv("nx16", S16, S16),),
       "(flags, vt): s = a - b (17-bit); flag = bit15 != bit16; vt = flag ? s >> 1 : s.",
       "docs/firmware.md §6.2 Flag ALU (B03)", SPEC_HIGH, "", ALU_SLOT),
    Op("mulus4tn16xr16", MAC, (*_wtap("nx16", U16, OVERWRITE),),
       "wv48[i] = sum_t pool.u16[i+t] * pr.s16[t], pool = lo (lanes 0..31) || hi (32..63), tap 0 on lo (4-tap, overwrite); returns int64[32].",
       "docs/firmware.md §6.2 Integer MAC (B04/B05), §8.2.19; docs/intrinsics.md §3.3", PUBLIC_MED, "the 8-bit sibling's C fallback; 16-bit taps", MUL, narrows=CARRY_UP),
    Op("mulus4tan16xr16", MAC, (*_wtap("nx16", U16, ACCUMULATE),),
       "wv48[i] += sum_t pool.u16[i+t] * pr.s16[t], pool = lo || hi, tap 0 on lo; acc int64[32] (None = 0).",
       "docs/firmware.md §6.2 Integer MAC (B04/B05), seed @0x010051a9; docs/intrinsics.md §3.3", PUBLIC_MED, "the 8-bit sibling's C fallback; 16-bit taps", MUL, narrows=CARRY_UP),
    Op("mul4tn16xr16", MAC, (*_wtap("nx16", S16, OVERWRITE),),
       "wv48[i] = sum_t pool.s16[i+t] * pr.s16[t], pool = lo || hi (signed x signed, overwrite).",
       "docs/firmware.md §6.2 Integer MAC (B04); docs/intrinsics.md §3.3", PUBLIC_MED, "the 8-bit sibling's C fallback; 16-bit taps", MUL, narrows=CARRY_UP),
    Op("mul4tan16xr16", MAC, (*_wtap("nx16", S16, ACCUMULATE),),
       "wv48[i] += sum_t pool.s16[i+t] * pr.s16[t], pool = lo || hi (signed x signed).",
       "docs/firmware.md §6.2 Integer MAC (B04), §2.4 MX path; docs/intrinsics.md §3.3", PUBLIC_MED, "the 8-bit sibling's C fallback; 16-bit taps", MUL, narrows=CARRY_UP),
    Op("dmulqa2n8xr8", MAC, (wvec("wh", 24, SRCDST, arg="acc_hi", optional=True), wvec("wl", 24, SRCDST, arg="acc_lo", optional=True), *(vec(f"v{j}", "2nx8", S8) for j in (3, 2, 1, 0)), pr("pr"),),
       "acc_lo24[i] += sum_j vj.s8[i] * pr.s8[j]; acc_hi24[i] += sum_j vj.s8[i] * pr.s8[4+j] (j < 4; the last vector is v0); returns (acc_hi, acc_lo).",
       "docs/firmware.md §6.2 Integer MAC (B04/B05), seed @0x010053c0; docs/intrinsics.md §3.4", PUBLIC_HIGH, "#ifdef pair in Cadence's conv kernel", MUL),
    Op("muluupan16xr16", MAC, (*_wvvp("nx16", U16, ACCUMULATE),),
       "wv48[i] += va.u16[i] * pr.u16[1] + vb.u16[i] * pr.u16[0] (unsigned, paired: the first vector takes pr bits 16..31).",
       "docs/firmware.md §6.2 Integer MAC (B04/B05), §2.4 @0x01004fc8; docs/intrinsics.md §3.5", PUBLIC_MED, "the paired family's convention", MUL, narrows=CARRY_UP),
    Op("mulsupn16xr16", MAC, (*_wvvp("nx16", S16, OVERWRITE),),
       "wv48[i] = va.s16[i] * pr.u16[1] + vb.s16[i] * pr.u16[0] (signed x unsigned, paired, overwrite: the first vector takes pr bits 16..31).",
       "docs/firmware.md §6.2 Integer MAC (B04/B05); docs/intrinsics.md §3.5", PUBLIC_MED, "the paired family's convention", MUL, narrows=CARRY_UP),
    Op("muluspa2n8xr16", MAC, (*_wvvp("2nx8", U8, ACCUMULATE),),
       "wv24[i] += va.u8[i] * hi16(w) + vb.u8[i] * lo16(w), w = pr bits [0, 32), weights signed.",
       "docs/anchors.md §7 (IVP_MULUSPA2N8XR16), docs/firmware.md §3.6 @0x6c4b", ANCHORS_HIGH, "Cadence cstub probe", MUL),
    Op("muln_2x32", MAC, (wvec("wv", 96, DST), vec("va", "n_2x32", S32), vec("vb", "n_2x32", S32),),
       "wv96[i] = va.s32[i] * vb.s32[i] (signed); returns 16 Python ints.",
       "docs/firmware.md §6.2 Integer MAC (B04)", SPEC_HIGH, "", MUL, narrows=CARRY_UP, lane_range=PRODUCT),
    Op("mulan_2x32", MAC, (wvec("wv", 96, SRCDST, arg="acc", optional=True), vec("va", "n_2x32", S32), vec("vb", "n_2x32", S32),),
       "wv96[i] += va.s32[i] * vb.s32[i], wrapping modulo 2^96.",
       "docs/firmware.md §6.2 Integer MAC (B04)", SPEC_HIGH, "", MUL),
    Op("cvtg48n_2x32l", WIDEN, (wvec("wv", 48, DST), *_hilo("n_2x32", U32),),
       "wv48[i] = zero-extended u32 lane i of pool32 = lo (lanes 0..15) || hi (16..31) (high 16 bits 0); returns int64[32].",
       "docs/firmware.md §6.2 (B22), §8.2.5; docs/intrinsics.md §3.1", Q7EMU_CHOICE, "identity gather; the order of its sibling CVT48SNX32", MUL),
    Op("cvtg48n_2x32h", WIDEN, (wvec("wv", 48, SRCDST, arg="acc"), *_hilo("n_2x32", U32),),
       "wv48[i] keeps its low 32 bits; high 16 bits = low 16 bits of u32 lane i of pool32 = lo || hi.",
       "docs/firmware.md §6.2 (B22), §3.6 @0x216d; docs/intrinsics.md §3.1", Q7EMU_CHOICE, "identity gather; the order of its sibling CVT48SNX32", MUL),
    Op("packvr2nx24", PACK, (*_vwi("2nx8", S8, 24),),
       "vt.s8[i] = sat8((wv24[i] + 2^(sh-1)) >> sh), sh clamped to 23.",
       "docs/firmware.md §6.2 pack (B10)", SPEC_HIGH, "", LD),
    Op("packvrnx48", PACK, (*_vwi("nx16", S16, 48),),
       "vt.s16[i] = sat16((wv48[i] + 2^(sh-1)) >> sh), sh clamped to 32.",
       "docs/firmware.md §6.2 pack (B10)", SPEC_HIGH, "", LD),
    Op("packvru2nx24", PACK, (*_vwi("2nx8", U8, 24),),
       "vt.u8[i] = usat8((wv24[i] + 2^(sh-1)) >> sh).",
       "docs/firmware.md §6.2 pack (B10), docs/anchors.md §7 T10", SPEC_HIGH, "", LD),
    Op("packvrunx48", PACK, (*_vwi("nx16", U16, 48),),
       "vt.u16[i] = usat16((wv48[i] + 2^(sh-1)) >> sh).",
       "docs/firmware.md §6.2 pack (B10)", SPEC_HIGH, "", LD),
    Op("packvrnr2nx24", PACK, (*_vwi("2nx8", U8, 24),),
       "vt.u8[i] = low 8 bits of (wv24[i] >> sh), no rounding, wraps.",
       "docs/firmware.md §6.2 pack (B10), docs/anchors.md §7 T20", SPEC_HIGH, "", LD),
    Op("packvrnrnx48", PACK, (*_vwi("nx16", U16, 48),),
       "vt.u16[i] = low 16 bits of (wv48[i] >> sh), no rounding, wraps.",
       "docs/firmware.md §6.2 pack (B10)", SPEC_HIGH, "", LD, narrows=BIT_WINDOW),
    Op("packvrn_2x96", PACK, (*_vwi("n_2x32", S32, 96),),
       "vt.s32[i] = sat32((wv96[i] + 2^(sh-1)) >> sh), sh clamped to 32.",
       "docs/firmware.md §6.2 pack (B10)", SPEC_HIGH, "", LD, narrows=WHOLE_LANE),
    Op("packl2nx24", PACK, (*_vw("2nx8", U8, 24),),
       "vt.u8[i] = low 8 bits of wv24[i].",
       "docs/firmware.md §6.2 pack (B10), docs/anchors.md §7 T16", SPEC_HIGH, "", LD),
    Op("packlnx48", PACK, (*_vw("nx16", U16, 48),),
       "vt.u16[i] = low 16 bits of wv48[i].",
       "docs/firmware.md §6.2 pack (B10)", SPEC_HIGH, "", LD),
    Op("packmnx48", PACK, (*_vw("nx16", U16, 48),),
       "vt.u16[i] = bits 16..31 of wv48[i].",
       "docs/firmware.md §6.2 pack (B10)", SPEC_HIGH, "", LD),
    Op("packhnx48", PACK, (*_vw("nx16", U16, 48),),
       "vt.u16[i] = bits 32..47 of wv48[i].",
       "docs/firmware.md §6.2 pack (B10)", SPEC_HIGH, "", LD),
    Op("packln_2x96", PACK, (*_vw("n_2x32", U32, 96),),
       "vt.u32[i] = low 32 bits of wv96[i].",
       "docs/firmware.md §6.2 pack (B10)", SPEC_HIGH, "", LD),
    Op("ultn_2xf32t", FP, (*_fcmp("n_2xf32", "n_2x32", F32),),
       "vb[k] = vbp[k] ? (isnan(a) | isnan(b) | a < b) : vb_old[k], fp32 lanes (unordered, quiet).",
       "docs/firmware.md §6.2 fp ALU (B02), seed @0x010052ee", SPEC_HIGH, "", ALU_SLOT, lane_mask=("vb",), merge_under="vbp"),
    Op("ueqn_2xf32t", FP, (*_fcmp("n_2xf32", "n_2x32", F32),),
       "vb[k] = vbp[k] ? (isnan(a) | isnan(b) | a == b) : vb_old[k], fp32 lanes (unordered).",
       "docs/firmware.md §6.2 fp ALU (B02), §3.6 @0x216d", SPEC_HIGH, "", ALU_SLOT, merge_under="vbp"),
    Op("oltnxf16t", FP, (*_fcmp("nxf16", "nx16", F16),),
       "vb[k] = vbp[k] ? (a < b, false on NaN) : vb_old[k], fp16 lanes (ordered).",
       "docs/firmware.md §6.2 fp ALU (B02), §2.4 @0x01004dfc", SPEC_HIGH, "", ALU_SLOT, lane_mask=("vb",), merge_under="vbp"),
    Op("negnxf16t", FP, (vec("vt", "nxf16", F16, SRCDST, arg="vt_old"), vec("vs", "nxf16", F16), vbool("vb", "nx16"),),
       "vt[k] = vb[k] ? -vs[k] (sign bit flipped) : vt_old[k].",
       "docs/firmware.md §6.2 fp ALU (B02)", SPEC_HIGH, "", ALU_SLOT, lane_mask=("vb",), merge_under="vb"),
    Op("addexpnxf16", FP, (vec("vt", "nxf16", F16, DST), vec("va", "nxf16", F16), vec("vb", "nxf16", F16),),
       "exp = (exp_a + exp_b + 0x11) mod 32, mant = a.mant, sign = a.sign ^ b.sign (fp16 lanes).",
       "docs/firmware.md §6.2 fp ALU (B02)", SPEC_HIGH, "", ALU_SLOT),
    Op("float16nx16t", CONVERT, (vec("vt", "nxf16", F16, SRCDST, arg="vt_old"), vec("vs", "nx16", S16), imm("imm", 0, 15, example=3), vbool("vb", "nx16"),),
       "vt[k] = vb[k] ? fp16(int16 vs[k] * 2^-imm) (RNE) : vt_old[k]; imm 0..15.",
       "docs/firmware.md §6.2 Converts (B13/B20)", SPEC_HIGH, "", ALU_SLOT, merge_under="vb"),
    Op("floatn_2x32", CONVERT, (vec("vt", "n_2xf32", F32, DST), vec("vs", "n_2x32", S32), imm("imm", 0, 31, example=3),),
       "vt[k] = fp32(int32 vs[k] * 2^-imm) (RNE); imm 0..31.",
       "docs/firmware.md §6.2 Converts (B13)", SPEC_HIGH, "", ALU_SLOT),
    Op("truncn_2xf32", CONVERT, (vec("vt", "n_2x32", S32, DST), vec("vs", "n_2xf32", F32), imm("imm", 0, 31, example=3),),
       "vt[k] = int32 trunc(fp32 vs[k] * 2^imm), saturating; NaN -> INT32_MAX.",
       "docs/firmware.md §6.2 Converts (B13)", SPEC_HIGH, "", ALU_SLOT),
    Op("trunc16nxf16", CONVERT, (vec("vt", "nx16", S16, DST), vec("vs", "nxf16", F16), imm("imm", 0, 15, example=3),),
       "vt[k] = int16 trunc(fp16 vs[k] * 2^imm), saturating; NaN -> INT16_MAX.",
       "docs/firmware.md §6.2 Converts (B20), §8.2.7", SPEC_HIGH, "", ALU_SLOT),
    Op("cvtf32nxf16_0", CONVERT, (vec("vt", "n_2xf32", F32, DST), vec("vs", "nxf16", F16),),
       "vt.f32[k] = fp16 lane 2k of vs (the even lanes), exact.",
       "docs/firmware.md §6.2 Converts; docs/intrinsics.md §3.6", PUBLIC_MED, "against docs/firmware.md §6.2's low / high halves", ALU_SLOT),
    Op("cvtf32nxf16_1", CONVERT, (vec("vt", "n_2xf32", F32, DST), vec("vs", "nxf16", F16),),
       "vt.f32[k] = fp16 lane 2k+1 of vs (the odd lanes), exact.",
       "docs/firmware.md §6.2 Converts; docs/intrinsics.md §3.6", PUBLIC_MED, "against docs/firmware.md §6.2's low / high halves", ALU_SLOT),
    Op("extrpr2nx8", PR_MOVE, (pr("pr", DST), vec("vs", "2nx8", U8), imm("k", 0, 63, example=5),),
       "pr = u8 lane k of vs, upper bits 0 (returns int).",
       "docs/firmware.md §6.2 Moves into pr (XPR)", SPEC_HIGH, "", ALU_SLOT),
    Op("extrprn_2x32", PR_MOVE, (pr("pr", DST), vec("vs", "n_2x32", U32), imm("k", 0, 15, example=5),),
       "pr = u32 lane k of vs, upper bits 0 (returns int).",
       "docs/firmware.md §6.2 Moves into pr (XPR)", SPEC_HIGH, "", ALU_SLOT),
    Op("dextrprn_2x32", PR_MOVE, (pr("pr", DST), vec("vhi", "n_2x32", U32), vec("vlo", "n_2x32", U32), imm("ihi", 0, 15, example=5), imm("ilo", 0, 15, example=10),),
       "pr = vlo.u32[ilo] | vhi.u32[ihi] << 32: each index is a lane of its own vector (returns int).",
       "docs/firmware.md §6.2 (XPR), §3.6 @0x22b5; docs/intrinsics.md §3.4", PUBLIC_HIGH, "#ifdef pair in Cadence's conv kernel", ALU_SLOT),
    Op("movpint16", PR_MOVE, (pr("pr", DST), imm("imm", -32768, 65535, example=256),),
       "pr = the 16-bit immediate (imm mod 2^16) in each of pr's four 16-bit fields (returns int).",
       "docs/firmware.md §2.4, §8.1 item 15; docs/model.md §8 item 19", Q7EMU_CHOICE, "semantics", ALU_SLOT),
)

#: C primitives without a wrapper of their own: the kernels' constant loads, the unaligned stream pair
#: (reached through ``q7emu.ivp.la2nx8_stream``) and the vbool logic ops. Tests reach them through the
#: underscored ``_ivp._c_<mnemonic>`` wrappers; ``q7emu ops`` does not list them.
C_ONLY: tuple[Op, ...] = (
    Op("lv2nx8_i", MEM, (vec("vt", "2nx8", U8, DST), mem(align=64), scalar("off"),),
       "vt = the 64 bytes at mem[off] (aligned vector load, no update).",
       "docs/firmware.md §6.2 Loads (B06)", SPEC_HIGH, "", LDST),
    Op("la2nx8_pp", MEM, (valign("u", DST), mem(touches="row"), scalar("off"),),
       "Prime the unaligned stream: u = the aligned 64-byte row holding mem[off].",
       "docs/firmware.md §6.2 Loads (B06), docs/anchors.md §7 (LA_PP)", SPEC_HIGH, "", LDST),
    Op("la2nx8_ip", MEM, (vec("vt", "2nx8", U8, DST), valign("u", SRCDST), mem(touches="row2"), scalar("off", SRCDST),),
       "vt[j] = byte (off%64 + j) of {u || next aligned row}; u = that row; off += 64.",
       "docs/firmware.md §6.2 Loads (B06)", SPEC_HIGH, "", LDST),
    *(Op(name, ALU, (vbool("vt", "2nx8", DST),) + tuple(vbool(x, "2nx8") for x in srcs),
         f"vt = {expr} over the 64 vbool bits.",
         "docs/firmware.md §6.1 vbool register", Q7EMU_CHOICE, "bitwise ops are not described by the facts", ALU_SLOT)
      for name, srcs, expr in (("andb", "ab", "a & b"), ("orb", "ab", "a | b"), ("xorb", "ab", "a ^ b"),
                               ("notb", "a", "~a"))),
)

ALL_OPS: tuple[Op, ...] = OPS + C_ONLY
BY_NAME: dict[str, Op] = {op.mnemonic: op for op in ALL_OPS}


def op(mnemonic: str) -> Op:
    """The record of ``mnemonic`` (no ``ivp_`` prefix); KeyError when q7emu has no such primitive."""
    return BY_NAME[mnemonic]


def family_ops(family: str) -> tuple[Op, ...]:
    """Every op (wrapped or C-only) of one family, in table order."""
    return tuple(o for o in ALL_OPS if o.family == family)


#: the FLIX slots of a wide bundle (docs/firmware.md §6.3)
FLIX_SLOTS = ("s0", "s1", "s2", "s3", "s4")


def assign_slots(mnemonics: Iterable[str]) -> tuple[tuple[str, ...], ...] | None:
    """A legal FLIX slot assignment for the IVP ops of one bundle (docs/firmware.md §6.3), or None.

    Returns, for each mnemonic in order, the slots it takes (one slot; ``ldst2`` loads take s0 and s1);
    no two ops share a slot. So a bundle holds at most one MAC / wvec-writing op (s2), two
    loads / stores / packs (s0, s1; stores only in s0, packs only in s1) and two ALU ops (s3, s4; an
    ``_S4`` form only in s4). :func:`assign_slot_classes` does the same for slot classes (a program's bundle,
    whose scalar ops are not in this table)."""
    return assign_slot_classes(op(m).slot for m in mnemonics)


def assign_slot_classes(classes: Iterable[str]) -> tuple[tuple[str, ...], ...] | None:
    """:func:`assign_slots` over the ops' slot classes (:data:`SLOT_CLASSES` keys), in order; None when the ops
    cannot share one bundle."""
    names = list(classes)
    choices = [((SLOT_CLASSES[c][0],) if c == LDST2 else tuple((s,) for s in SLOT_CLASSES[c][0])) for c in names]
    if len(names) > len(FLIX_SLOTS):
        return None

    def place(i: int, used: frozenset[str]) -> list[tuple[str, ...]] | None:
        if i == len(names):
            return []
        for take in choices[i]:
            if not used & set(take):
                rest = place(i + 1, used | set(take))
                if rest is not None:
                    return [take, *rest]
        return None

    got = place(0, frozenset())
    return tuple(got) if got is not None else None
