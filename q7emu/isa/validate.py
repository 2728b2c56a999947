"""Validity predicates of the two executed records, clause by clause.

* 0x7B TensorDequantize: ``is_valid_tensor_dequantize`` of docs/firmware.md §1.3 (clause ids ``1.3.1`` .. ``1.3.11``).
* 0xE3 QuantizeMX: docs/firmware.md §3.2 (ids ``3.2.1``, ``3.2.2``, ``3.2.3``, ``3.2.4-dtype``, ``3.2.4-reserved``,
  ``3.2.5``) plus the num_active_channels rule of the §3.1 table (id ``3.1``).

:func:`check` returns one :class:`Verdict` per clause ("pass", "fail" or "skip"); :func:`validate` raises a
:class:`~q7emu.errors.ValidityError` for the first failing clause, naming field, value, rule and clause id.
:func:`model_checks` lists q7emu's own preconditions of execution (ids ``q7.*``; not firmware clauses).

Readings q7emu chooses where docs/firmware.md is silent (documented here and in the verdict rules):

* "header and events are valid" (1.3.1) is checked as ``header.opcode``; inst_word_len, debug and event fields
  are shown but not checked (the 0x10 value is n/a-tagged and QuantizeMX ORs a saturate bit into it).
* "partition-aligned for num_active_channels" (1.3.9) = the start partition of each immediate SBUF address plus
  num_active_channels stays within the 128 partitions.
* "SBUF allowed, PSUM forbidden" (1.3.10, 3.2.3) = an immediate address with bit 25 clear whose partition is
  < 128 and whose whole access footprint (every addressed u32 element, or scale byte) lies inside the partition.
  Register / indirect ADDR4 forms cannot be evaluated statically: those clauses are "skip" (and the machine then
  refuses to execute them, see :func:`model_checks`).
* A clause whose inputs are invalid because an earlier clause failed is "skip" (so each clause can be
  triggered alone); e.g. 1.3.9 is skipped when num_active_channels is out of range, 1.3.11 when
  fmt / group_size are invalid.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias

from q7emu._dataclass import dataclass
from q7emu.errors import InvalidArgument, ValidityError
from q7emu.isa.enums import POOLING_NUM_CHANNELS, DType, Generation, Opcode, dtype_name
from q7emu.isa.records import Addr4, OpcodeRecord, Record, S3D3TensDequant, S3DMX1Quant, decode_record

DEFAULT_PARTITION_BYTES = 0x30000
#: q7emu's own limit on u32 elements addressed per partition by one pattern, in units of partition words
ELEMENT_LIMIT_FACTOR = 2
#: the largest partition_bytes: 128 partitions stay below the PSUM bit 25 of an ADDR4 (docs/model.md §4)
MAX_PARTITION_BYTES = (1 << 25) // 128


def check_partition_bytes(partition_bytes: Any, field: str = "partition_bytes") -> int:
    """``partition_bytes`` as an int if it is a multiple of 4 in 4..0x40000 (docs/model.md §4: 128 partitions
    below the PSUM bit 25); InvalidArgument naming ``field`` otherwise."""
    try:
        pb = None if isinstance(partition_bytes, bool) else operator.index(partition_bytes)
    except TypeError:
        pb = None
    if pb is None or not 4 <= pb <= MAX_PARTITION_BYTES or pb % 4:
        shown = partition_bytes if isinstance(partition_bytes, (int, float, str)) else type(partition_bytes).__name__
        raise InvalidArgument(field, shown, "must be a multiple of 4 in 4..0x40000 (128 partitions below the PSUM "
                                            "bit 25)")
    return pb


@dataclass(frozen=True)
class Verdict:
    """One clause's outcome. ``status`` is "pass", "fail" or "skip"; ``kind`` is "firmware" or "q7emu"."""

    clause: str
    title: str
    status: str
    field: str = ""
    value: Any = None
    rule: str = ""
    kind: str = "firmware"

    @property
    def ok(self) -> bool:
        return self.status != "fail"

    def error(self) -> ValidityError:
        return ValidityError(self.field, self.value, self.rule, self.clause)

    def line(self) -> str:
        s = f"{self.clause:<15} {self.status.upper():<4}  {self.title}"
        if self.status == "fail":
            s += f": {self.field}={self.value!r}: {self.rule}"
        elif self.status == "skip" and self.rule:
            s += f" ({self.rule})"
        return s


#: a failed clause: (field, the offending value, the rule it breaks)
Failure: TypeAlias = tuple[str, Any, str]
#: what an address or pattern check finds: nothing wrong, a failure, or "register" (a register form, which is not
#: evaluated statically)
Problem: TypeAlias = Failure | Literal["register"] | None


class _Checker:
    def __init__(self, verdicts: list[Verdict] | None = None) -> None:
        self.out: list[Verdict] = list(verdicts or [])

    def add(self, clause: str, title: str, failure: Failure | None, skip: str | None = None,
            kind: str = "firmware") -> bool:
        if skip is not None:
            self.out.append(Verdict(clause, title, "skip", rule=skip, kind=kind))
            return True
        if failure is None:
            self.out.append(Verdict(clause, title, "pass", kind=kind))
            return True
        f, v, r = failure
        self.out.append(Verdict(clause, title, "fail", f, v, r, kind))
        return False


def footprint(start_offset: int, steps: tuple[int, ...], nums: tuple[int, ...], elem_bytes: int = 4
              ) -> tuple[int, int] | None:
    """[lo, hi) byte range touched by a strided pattern, or None when it addresses no element."""
    if any(n == 0 for n in nums):
        return None
    lo = start_offset + elem_bytes * sum(min(0, (n - 1) * s) for s, n in zip(steps, nums))
    hi = start_offset + elem_bytes * sum(max(0, (n - 1) * s) for s, n in zip(steps, nums)) + elem_bytes
    return lo, hi


def _addr_problem(name: str, a: Addr4, pb: int) -> Problem:
    """None if an SBUF immediate inside SBUF, a failure triple, or "register" for register forms."""
    if not a.is_immediate:
        return "register"
    if a.is_psum:
        return (f"{name}", f"0x{a.raw:08x}", "PSUM (bit 25) is forbidden; operand must be in SBUF")
    p, _ = a.locate(pb)
    if p >= POOLING_NUM_CHANNELS:
        return (f"{name}", f"0x{a.raw:08x}",
                f"flat address is beyond SBUF (partition {p} >= 128 at partition_bytes=0x{pb:x})")
    return None


def _pattern_problem(name: str, a: Addr4, steps: tuple[int, ...], nums: tuple[int, ...], pb: int,
                     elem_bytes: int = 4) -> Problem:
    prob = _addr_problem(f"{name}.start_addr", a, pb)
    if prob is not None:
        return prob
    _, off = a.locate(pb)
    fp = footprint(off, steps, nums, elem_bytes)
    if fp is not None and (fp[0] < 0 or fp[1] > pb):
        return (f"{name}", f"bytes [{fp[0]}, {fp[1]})",
                f"access pattern leaves the partition (0..0x{pb:x}) [offset 0x{off:x}, step {list(steps)}, "
                f"num {list(nums)}, {elem_bytes} B elements]")
    return None


def _first(*probs: Problem) -> tuple[Failure | None, bool]:
    """The first failure of ``probs`` (None when none failed) and whether a register form came before it."""
    regs = False
    for p in probs:
        if isinstance(p, str):      # "register"
            regs = True
        elif p is not None:
            return p, regs
    return None, regs


def clause(clause: str, title: str, failure: Failure | None, skip: str | None = None,
           kind: str = "firmware") -> Verdict:
    """One clause's verdict, for an opcode spec's predicate (q7emu.isa.opcode_spec.OpcodeSpec.check): ``failure``
    is (field, the offending value, the rule it breaks), None when the clause holds; ``skip`` the reason it is not
    evaluated; ``kind`` "firmware" or "q7emu"."""
    c = _Checker()
    c.add(clause, title, failure, skip, kind)
    return c.out[0]


def opcode_clauses(record: OpcodeRecord, generation: Generation, opcode: int, name: str, min_nc_version: int,
                   clauses: tuple[str, str]) -> list[Verdict]:
    """The two clauses every opcode's predicate opens with: the header's opcode is ``opcode`` (clause
    ``clauses[0]``) and the generation's NeuronCore version is at least ``min_nc_version`` (``clauses[1]``);
    ``name`` is the opcode's name in the rule text (``must be 0x7b (TensorDequantize)``)."""
    c = _Checker()
    got = record.header.opcode
    c.add(clauses[0], f"header.opcode == 0x{opcode:02x}",
          None if got == opcode else ("header.opcode", f"0x{got:02x}", f"must be 0x{opcode:02x} ({name})"))
    c.add(clauses[1], f"NeuronCore version >= V{min_nc_version}",
          None if generation.nc_version >= min_nc_version else
          ("generation", f"{generation.name} (NC-v{generation.nc_version})",
           f"{name} needs NC-v{min_nc_version} or later"))
    return c.out


def _check_dequant(r: S3D3TensDequant, gen: Generation, pb: int) -> list[Verdict]:
    nac = r.num_active_channels
    c = _Checker(opcode_clauses(r, gen, Opcode.TENSOR_DEQUANTIZE, "TensorDequantize", 3, ("1.3.1", "1.3.2")))
    nac_ok = c.add("1.3.3", "num_active_channels in 1..128",
                   None if 1 <= nac <= POOLING_NUM_CHANNELS else
                   ("num_active_channels", nac, "must be != 0 and <= 128 (POOLING_NUM_CHANNELS)"))
    fmt, grp = r.dequant_fmt, r.group_size
    # Clauses 1.3.4-1.3.6 and 1.3.11 transcribe the firmware's predicate (docs/firmware.md §1.3) on purpose, not the
    # format table (q7emu.model.format_table): the table is what q7emu runs, this is what the firmware accepts.
    fmt_ok = c.add("1.3.4", "dequant_fmt in {1,2,3,4}",
                   None if fmt in (1, 2, 3, 4) else
                   ("dequant_fmt", fmt, "must be 1..4 (0 is INVALID: 'Unimplemented dequant format')"))
    grp_ok = c.add("1.3.5", "group_size in {0, 8}",
                   None if grp in (0, 8) else ("group_size", grp, "must be 0 or 8"))
    pair_ok = c.add("1.3.6", "group_size 8 only with fmt 1, 2, 3",
                    None if grp != 8 or fmt in (1, 2, 3) else
                    ("group_size", grp, f"group 8 is allowed only with fmt 1..3 (fmt={fmt}); FP6 is never MX"))
    bad = [(n, v) for n, v in r.reserved_bytes() if v]
    c.add("1.3.7", "all 15 reserved bytes are zero",
          None if not bad else (bad[0][0], bad[0][1], "reserved bytes (28..31, 37..43, 60..63) must be 0"))
    c.add("1.3.8", "in_dtype == out_dtype == UINT32",
          None if r.in_dtype == DType.UINT32 and r.out_dtype == DType.UINT32 else
          (("in_dtype", dtype_name(r.in_dtype), "must be UINT32 (0x09)") if r.in_dtype != DType.UINT32 else
           ("out_dtype", dtype_name(r.out_dtype), "must be UINT32 (0x09)")))
    # 1.3.9: channel range from each start partition
    skip9 = None if nac_ok else "num_active_channels invalid"
    fail9 = None
    if skip9 is None:
        for name, t in (("src", r.src), ("dst", r.dst)):
            a = t.start_addr
            if a.is_immediate and not a.is_psum:
                p, _ = a.locate(pb)
                if p < POOLING_NUM_CHANNELS and p + nac > POOLING_NUM_CHANNELS:
                    fail9 = (f"{name}.start_addr", f"0x{a.raw:08x}",
                             f"start partition {p} + num_active_channels {nac} exceeds 128 partitions")
                    break
    c.add("1.3.9", "start addresses partition-aligned for num_active_channels", fail9, skip9)
    # 1.3.10: SBUF only, PSUM forbidden, footprint inside the partition
    prob, regs = _first(_pattern_problem("src", r.src.start_addr, r.src.step_elem, r.src.num_elem, pb),
                        _pattern_problem("dst", r.dst.start_addr, r.dst.step_elem, r.dst.num_elem, pb))
    c.add("1.3.10", "src and dst in SBUF (PSUM forbidden), patterns inside the partition", prob,
          "register-form address not evaluated statically" if prob is None and regs else None)
    # 1.3.11: element counts
    skip11 = None
    if r.src.start_addr.shape_from_register or r.dst.start_addr.shape_from_register:
        skip11 = "shape from register"
    elif not (fmt_ok and grp_ok and pair_ok):
        skip11 = "fmt / group_size invalid"
    fail11 = None
    if skip11 is None:
        ka, kb, mult = (8, 5, 5) if grp == 8 else ((4, 3, 3) if fmt == 4 else (2, 1, 1))
        ns, nd = r.src.count, r.dst.count
        if ns % mult:
            fail11 = ("src.num_elem", list(r.src.num_elem), f"source element count {ns} must be a multiple of {mult}")
        elif ns * ka != nd * kb:
            fail11 = ("dst.num_elem", list(r.dst.num_elem),
                      f"count(src)*{ka} == count(dst)*{kb} required (src {ns} u32, dst {nd} u32)")
    c.add("1.3.11", "element counts (ratio_element_count_t3d)", fail11, skip11)
    return c.out


def _check_quant(r: S3DMX1Quant, gen: Generation, pb: int) -> list[Verdict]:
    c = _Checker(opcode_clauses(r, gen, Opcode.QUANTIZE_MX, "QuantizeMX", 4, ("3.2.1", "3.2.2")))
    nac = r.num_active_channels
    nac_ok = c.add("3.1", "num_active_channels in {32, 64, 96, 128}",
                   None if nac in (32, 64, 96, 128) else ("num_active_channels", nac, "must be 32, 64, 96 or 128"))
    d = r.dst
    # 3.2.3: mem3d_valid(src) + mxmem1d_valid(dst)
    probs = [_pattern_problem("src", r.src.start_addr, r.src.step_elem, r.src.num_elem, pb),
             _pattern_problem("dst", d.start_addr, (d.step_elem,), (d.num_elem,), pb),
             _pattern_problem("dst.scale", d.scale_addr, (1,), (d.num_elem,), pb, elem_bytes=1)]
    if nac_ok:
        for name, a in (("src", r.src.start_addr), ("dst", d.start_addr)):
            if a.is_immediate and not a.is_psum:
                p, _ = a.locate(pb)
                if p < 128 and p + nac > 128:
                    probs.append((f"{name}.start_addr", f"0x{a.raw:08x}",
                                  f"start partition {p} + num_active_channels {nac} exceeds 128 partitions"))
    prob, regs = _first(*probs)
    c.add("3.2.3", "mem3d_valid(src), mxmem1d_valid(dst): SBUF only, PSUM forbidden, inside the partition", prob,
          "register-form address not evaluated statically" if prob is None and regs else None)
    fail4 = None
    if r.in_dtype not in (DType.FP16, DType.BFLOAT16):
        fail4 = ("in_dtype", dtype_name(r.in_dtype), "must be FP16 (0x07) or BFLOAT16 (0x06)")
    elif r.out_dtype not in (DType.FP8_EXP5, DType.FP8_EXP4):
        fail4 = ("out_dtype", dtype_name(r.out_dtype), "must be FP8_EXP5 (0x0f) or FP8_EXP4 (0x0e); never MXFP4")
    c.add("3.2.4-dtype", "in_dtype in {FP16, BF16}, out_dtype in {FP8_EXP4, FP8_EXP5}", fail4)
    bad = [(n, v) for n, v in r.reserved_bytes() if v]
    c.add("3.2.4-reserved", "reserved bytes zero (s3dmx1_quant_reserved_zero)",
          None if not bad else (bad[0][0], bad[0][1], "reserved bytes (12..15, 32, 36..47, 60..63) must be 0"))
    # 3.2.5 quadrant rule
    skip5 = fail5 = None
    da, sa = d.start_addr, d.scale_addr
    if not (da.is_immediate and sa.is_immediate):
        skip5 = "register-form address not evaluated statically"
    elif da.is_psum or sa.is_psum or da.locate(pb)[0] >= 128 or sa.locate(pb)[0] >= 128:
        skip5 = "address not in SBUF (see 3.2.3)"
    else:
        dp, sp = da.locate(pb)[0], sa.locate(pb)[0]
        if dp not in (0, 32, 64, 96):
            fail5 = ("dst.start_addr", f"0x{da.raw:08x}", f"data partition {dp} must be a quadrant base 0/32/64/96")
        elif sp != dp:
            fail5 = ("dst.scale_addr", f"0x{sa.raw:08x}",
                     f"scale partition {sp} must be the data partition base {dp} (same quadrant base)")
    c.add("3.2.5", "data and scale addresses in the same quadrant base partition", fail5, skip5)
    return c.out


#: a record class's firmware predicate (record, generation, partition_bytes) -> verdicts
Predicate: TypeAlias = Callable[[Any, Generation, int], list[Verdict]]
#: a record class's q7emu preconditions (record, partition_bytes) -> verdicts
Preconditions: TypeAlias = Callable[[Any, int], list[Verdict]]
_PREDICATES: dict[type, Predicate] = {S3D3TensDequant: _check_dequant, S3DMX1Quant: _check_quant}
_PRECONDITIONS: dict[type, Preconditions] = {}


def register_predicate(record_class: type, predicate: Predicate, preconditions: Preconditions) -> None:
    """:func:`check` / :func:`validate` run ``predicate`` and :func:`model_checks` / :func:`require_executable` run
    ``preconditions`` on the records of ``record_class`` (q7emu.isa.opcodes.register calls this for an opcode it
    adds)."""
    _PREDICATES[record_class] = predicate
    _PRECONDITIONS[record_class] = preconditions


def check(record: Record | bytes, generation: Generation | str,
          partition_bytes: int = DEFAULT_PARTITION_BYTES) -> list[Verdict]:
    """Per-clause verdicts of the firmware predicate for ``record`` on ``generation``.

    Records of other opcodes get one "skip" verdict (q7emu knows no predicate for them). InvalidArgument for a
    ``partition_bytes`` that :func:`check_partition_bytes` refuses."""
    gen = Generation.parse(generation)
    partition_bytes = check_partition_bytes(partition_bytes)
    rec = decode_record(record) if isinstance(record, (bytes, bytearray)) else record
    predicate = _PREDICATES.get(type(rec))
    if predicate is not None:
        return predicate(rec, gen, partition_bytes)
    return [Verdict("-", f"no validity predicate modelled for opcode 0x{rec.header.opcode:02x}", "skip")]


def validate(record: Record | bytes, generation: Generation | str,
             partition_bytes: int = DEFAULT_PARTITION_BYTES) -> None:
    """Raise ValidityError for the first failing clause (field, value, rule, clause id); return None if valid."""
    for v in check(record, generation, partition_bytes):
        if v.status == "fail":
            raise v.error()


def model_checks(record: Record, partition_bytes: int = DEFAULT_PARTITION_BYTES) -> list[Verdict]:
    """q7emu's own preconditions to execute a (firmware-valid) record; ids ``q7.*``.

    * ``q7.addr-form``: register / indirect ADDR4 forms are not modelled (only immediate addresses).
    * ``q7.limit``: each pattern addresses at most 2 x partition_bytes / 4 u32 elements per partition.
    * ``q7.e3-shape`` (0xE3): src count (u32 words) = F/2 with F the free size in fp16/bf16 elements, F a
      multiple of 4, and dst.num_elem (u32 data words) = F/4; ``scale_pidx + 3 < 32`` (4 scale rows inside the
      quadrant).
    """
    partition_bytes = check_partition_bytes(partition_bytes)
    registered = _PRECONDITIONS.get(type(record))
    if registered is not None:
        return registered(record, partition_bytes)
    if isinstance(record, S3D3TensDequant):
        addrs = [("src.start_addr", record.src.start_addr), ("dst.start_addr", record.dst.start_addr)]
        counts = [("src", record.src.count), ("dst", record.dst.count)]
    elif isinstance(record, S3DMX1Quant):
        addrs = [("src.start_addr", record.src.start_addr), ("dst.start_addr", record.dst.start_addr),
                 ("dst.scale_addr", record.dst.scale_addr)]
        counts = [("src", record.src.count), ("dst", record.dst.num_elem)]
    else:
        return []
    out = pattern_checks(addrs, counts, partition_bytes)
    if isinstance(record, S3DMX1Quant):
        out.append(_e3_shape(record))
    return out


def pattern_checks(addresses: Sequence[tuple[str, Addr4]], counts: Sequence[tuple[str, int]],
                   partition_bytes: int = DEFAULT_PARTITION_BYTES) -> list[Verdict]:
    """q7emu's preconditions on any record's access patterns (``q7.addr-form``, ``q7.limit`` of
    :func:`model_checks`): ``addresses`` (field name, ADDR4) are immediate, and each pattern's u32 element count
    (``counts``: pattern name, count) is within the limit."""
    partition_bytes = check_partition_bytes(partition_bytes)
    c = _Checker()
    addrs = list(addresses)
    regs = [(n, a) for n, a in addrs if not a.is_immediate]
    c.add("q7.addr-form", "immediate ADDR4 forms only",
          None if not regs else (regs[0][0], f"0x{regs[0][1].raw:08x}",
                                 f"register-form ADDR4 ({regs[0][1].form}) is not modelled by q7emu; "
                                 "use an immediate SBUF address"), kind="q7emu")
    limit = ELEMENT_LIMIT_FACTOR * partition_bytes // 4
    big = [(n, k) for n, k in counts if k > limit]
    c.add("q7.limit", f"at most {limit} u32 elements per partition per pattern",
          None if not big else (f"{big[0][0]}.num_elem", big[0][1],
                                f"q7emu executes at most {limit} u32 elements per partition per pattern"),
          kind="q7emu")
    return c.out


def _e3_shape(record: S3DMX1Quant) -> Verdict:
    ns, nd = record.src.count, record.dst.num_elem
    f = 2 * ns
    fail: Failure | None = None
    if f % 4:
        fail = ("src.num_elem", list(record.src.num_elem),
                f"src holds {ns} u32 = {f} fp16/bf16 elements per partition; must be a multiple of 4")
    elif nd * 4 != f:
        fail = ("dst.num_elem", nd, f"must be F/4 = {f // 4} u32 data words (F = {f} source elements)")
    elif record.dst.scale_pidx > 28:
        fail = ("dst.scale_pidx", record.dst.scale_pidx, "4 scale rows must fit in the quadrant (<= 28)")
    return clause("q7.e3-shape", "QuantizeMX src/dst element counts agree (q7emu reading)", fail, kind="q7emu")


def require_executable(record: Record, partition_bytes: int = DEFAULT_PARTITION_BYTES) -> None:
    """Raise InvalidArgument for the first failing :func:`model_checks` verdict."""
    for v in model_checks(record, partition_bytes):
        if v.status == "fail":
            raise InvalidArgument(v.field, v.value, v.rule + f" [{v.clause}]")
