"""kernel_info_table dispatch tables (docs/firmware.md §4).

A table is a flat array of 8-byte records ``{u8 0, u8 0, u8 spec, u8 opcode, u32_le funcVA}``. The first word,
read as a little-endian u32, is the key ``(opcode << 24) | (spec << 16)``; lookup is a linear scan in table
order comparing that whole word (the 0xF0 specs are registered 0, 1, 2, 4, 3, so a binary search would fail).
A table is bounded by its section size: the word after the 17 CAYMAN records is the DRAM header magic
0x6099cb34, not a sentinel.

Unknown funcVAs (every SUNDA record; the MARIANA / MARIANA_PLUS / MAVERICK records other than 0x7B; the DVE
0xE3 route) are stored as :data:`UNKNOWN_FUNC_VA` = 0xFFFFFFFF, so every table round-trips through bytes.
Choices q7emu makes where docs/firmware.md is silent:

* MARIANA, MARIANA_PLUS and MAVERICK keep CAYMAN EXTISA_0's key order (docs/firmware.md says "same keys"; MARIANA's
  funcVAs
  "shift upward monotonically", and the MAVERICK 0x7B record sits at index 16 = (0x70b8 - 0x7038) / 8, as on
  CAYMAN).
* Only EXTISA_0 is given for MARIANA+ (docs/firmware.md lists EXTISA_1..3 records for CAYMAN only).
* The DVE route for 0xE3 is modelled as a one-record DVE table (MARIANA and later; MAVERICK keeps it because the
  handler is still armed in the DVE PROF CAM [docs/firmware.md §3.6]); SUNDA and CAYMAN have an empty DVE table.
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from q7emu._dataclass import dataclass
from q7emu.errors import DispatchError, InvalidArgument
from q7emu.isa.enums import OPCODE_NAMES, Engine, Generation

RECORD_BYTES = 8
UNKNOWN_FUNC_VA = 0xFFFFFFFF
EXTENDED_OPCODE = 0xF0
#: u32 LE word found right after the CAYMAN EXTISA_0 table: the DRAM header magic, not a terminator
DRAM_HEADER_MAGIC = 0x6099CB34


@dataclass(frozen=True)
class KernelInfoRecord:
    """One 8-byte kernel_info record. ``key`` is the first u32 LE word, ``func_va`` the second."""

    key: int
    func_va: int

    @classmethod
    def make(cls, opcode: int, spec: int, func_va: int = UNKNOWN_FUNC_VA) -> KernelInfoRecord:
        if not (0 <= opcode <= 0xFF and 0 <= spec <= 0xFF and 0 <= func_va <= 0xFFFFFFFF):
            raise InvalidArgument("kernel_info record", (opcode, spec, func_va), "opcode/spec u8, funcVA u32")
        return cls((opcode << 24) | (spec << 16), func_va)

    @property
    def opcode(self) -> int:
        return (self.key >> 24) & 0xFF

    @property
    def spec(self) -> int:
        return (self.key >> 16) & 0xFF

    @property
    def func_va_known(self) -> bool:
        return self.func_va != UNKNOWN_FUNC_VA

    @property
    def name(self) -> str:
        return OPCODE_NAMES.get(self.opcode, "")

    def to_bytes(self) -> bytes:
        return struct.pack("<II", self.key, self.func_va)

    @classmethod
    def from_bytes(cls, data: bytes) -> KernelInfoRecord:
        if len(data) != RECORD_BYTES:
            raise InvalidArgument("kernel_info record length", len(data), "must be 8 bytes")
        return cls(*struct.unpack("<II", bytes(data)))


class KernelInfoTable:
    """An ordered kernel_info table of one engine of one generation's image."""

    def __init__(self, records: Iterable[KernelInfoRecord], name: str = "", engine: Engine = Engine.POOL,
                 generation: Generation | None = None) -> None:
        self.records: tuple[KernelInfoRecord, ...] = tuple(records)
        self.name = name
        self.engine = engine
        self.generation = generation

    @classmethod
    def from_bytes(cls, blob: bytes, size: int | None = None, **kw: Any) -> KernelInfoTable:
        """Parse ``size`` bytes (default: all of ``blob``) as records; ``size`` must be a multiple of 8."""
        blob = bytes(blob)
        size = len(blob) if size is None else size
        if size < 0 or size > len(blob) or size % RECORD_BYTES:
            raise InvalidArgument("kernel_info_table size", size,
                                  f"must be a multiple of 8 and at most the {len(blob)} bytes given")
        return cls((KernelInfoRecord.from_bytes(blob[i:i + RECORD_BYTES]) for i in range(0, size, RECORD_BYTES)), **kw)

    def to_bytes(self) -> bytes:
        return b"".join(r.to_bytes() for r in self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[KernelInfoRecord]:
        return iter(self.records)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KernelInfoTable) and self.records == other.records

    def find(self, opcode: int, spec: int = 0) -> KernelInfoRecord | None:
        """Linear scan in table order on the packed key; None on a miss."""
        key = (opcode << 24) | (spec << 16)
        for rec in self.records:
            if rec.key == key:
                return rec
        return None

    def lookup(self, opcode: int, spec: int = 0) -> KernelInfoRecord:
        """Like :meth:`find`, but a miss raises DispatchError in the firmware's words:
        ``UNKNOWN OPCODE=0x%x`` or, for 0xF0 with an unregistered spec, ``UNKNOWN EXTENDED OPCODE=%d``."""
        rec = self.find(opcode, spec if opcode == EXTENDED_OPCODE else 0)
        if rec is not None:
            return rec
        where = f" [{self.generation.name if self.generation else '?'} {self.engine.value} {self.name}]"
        if opcode == EXTENDED_OPCODE:
            raise DispatchError(f"UNKNOWN EXTENDED OPCODE={spec}{where}")
        raise DispatchError(f"UNKNOWN OPCODE=0x{opcode:x}{where}")

    def format(self) -> str:
        """Human-readable listing, one record per line."""
        lines = [f"{self.generation.name if self.generation else ''} {self.engine.value} {self.name}: "
                 f"{len(self)} records, {len(self) * RECORD_BYTES} bytes".strip()]
        for i, r in enumerate(self.records):
            va = f"0x{r.func_va:08x}" if r.func_va_known else "unknown   "
            lines.append(f"  {i:3d}  {r.to_bytes().hex(' ')}  opcode 0x{r.opcode:02x} spec {r.spec:<3d} "
                         f"funcVA {va}  {r.name}")
        return "\n".join(lines)


def _t(rows: list[tuple[int, int, int]]) -> list[KernelInfoRecord]:
    return [KernelInfoRecord.make(op, spec, va) for op, spec, va in rows]


U = UNKNOWN_FUNC_VA

#: CAYMAN EXTISA_0, 17 records in table order [docs/firmware.md §4.2]
CAYMAN_EXTISA_0 = [
    (0x7E, 0, 0x01000080), (0x7C, 0, 0x010003F8), (0x7D, 0, 0x01000410), (0x45, 0, 0x01000B90),
    (0x51, 0, 0x0100105C), (0x41, 0, 0x01000F1C), (0xF0, 0, 0x01003370), (0xF0, 1, 0x01003380),
    (0xF0, 2, 0x01003484), (0xF0, 4, 0x010037A8), (0xF0, 3, 0x01003A60), (0x52, 0, 0x01003B40),
    (0x46, 0, 0x010040C0), (0x47, 0, 0x01004160), (0xBE, 0, 0x01004204), (0xF2, 0, 0x0100484C),
    (0x7B, 0, 0x01004DC4),
]
CAYMAN_EXTISA_1 = [(0x7E, 0, U)]
CAYMAN_EXTISA_2 = [(0x7C, 0, U), (0x7D, 0, U)]
CAYMAN_EXTISA_3 = [
    (0x7E, 0, 0x01000080), (0x7C, 0, 0x010003F8), (0x7D, 0, 0x01000410), (0x45, 0, 0x01000B90),
    (0xBE, 0, 0x01000DAC), (0xF2, 0, 0x010013F4), (0x7B, 0, 0x01001964), (0xE4, 0, 0x01002258),
    (0xF0, 7, 0x01003B64),
]
#: funcVA of the TensorDequantize trampoline per generation [docs/firmware.md §1.4, §4.2]
TENSOR_DEQUANT_FUNC_VA = {
    Generation.CAYMAN: 0x01004DC4,
    Generation.MARIANA: 0x01004E04,
    Generation.MARIANA_PLUS: 0x01004E04,
    Generation.MAVERICK: 0x000050EC,
}
#: SUNDA's flat POOL table: 18 opcodes, all spec 0, funcVAs unknown [docs/firmware.md §4.2]
SUNDA_OPCODES = [0xE7, 0x74, 0x67, 0x68, 0x46, 0x47, 0xB8, 0xBB, 0x7E, 0x41, 0x7C, 0x7D, 0x49, 0x7A, 0x79,
                 0x43, 0x44, 0x92]


def _extisa0_like(gen: Generation) -> list[tuple[int, int, int]]:
    dq = TENSOR_DEQUANT_FUNC_VA[gen]
    return [(op, spec, dq if op == 0x7B else U) for op, spec, _ in CAYMAN_EXTISA_0]


#: opcodes q7emu.isa.opcodes registered beyond the firmware's tables: opcode -> (its engine, the funcVA at which a
#: generation's table registers it (UNKNOWN_FUNC_VA: registered, address unknown; None: not registered))
_REGISTERED: dict[int, tuple[Engine, Callable[[Generation], int | None]]] = {}


def register_opcode(opcode: int, engine: Engine, func_va: Callable[[Generation], int | None]) -> None:
    """Add ``opcode`` to the tables of the generations where ``func_va(generation)`` is not None: the POOL
    EXTISA_0 table or the DVE route, by ``engine`` (q7emu.isa.opcodes.register calls this for an opcode q7emu models
    beyond the firmware's tables)."""
    _REGISTERED[int(opcode)] = (engine, func_va)


def _registered_rows(gen: Generation, engine: Engine) -> list[tuple[int, int, int]]:
    rows = []
    for op, (eng, func_va) in sorted(_REGISTERED.items()):
        va = func_va(gen) if eng is engine else None
        if va is not None:
            rows.append((op, 0, va))
    return rows


def builtin_tables(generation: Generation | str) -> dict[str, KernelInfoTable]:
    """Every built-in table of a generation, by name (``EXTISA_0``..``EXTISA_3`` for POOL, ``DVE``), with the
    opcodes registered through :func:`register_opcode` after the firmware's rows of EXTISA_0 / the DVE route."""
    gen = Generation.parse(generation)
    pool: dict[str, list[tuple[int, int, int]]]
    if gen is Generation.SUNDA:
        pool = {"EXTISA_0": [(op, 0, U) for op in SUNDA_OPCODES]}
    elif gen is Generation.CAYMAN:
        pool = {"EXTISA_0": CAYMAN_EXTISA_0, "EXTISA_1": CAYMAN_EXTISA_1, "EXTISA_2": CAYMAN_EXTISA_2,
                "EXTISA_3": CAYMAN_EXTISA_3}
    else:
        pool = {"EXTISA_0": _extisa0_like(gen)}
    pool["EXTISA_0"] = [*pool["EXTISA_0"], *_registered_rows(gen, Engine.POOL)]
    tables = {name: KernelInfoTable(_t(rows), name, Engine.POOL, gen) for name, rows in pool.items()}
    dve_rows = [(0xE3, 0, U)] if gen.nc_version >= 4 else []
    dve_rows += _registered_rows(gen, Engine.DVE)
    tables["DVE"] = KernelInfoTable(_t(dve_rows), "route", Engine.DVE, gen)
    return tables


def pool_table(generation: Generation | str) -> KernelInfoTable:
    """The POOL table the machine dispatches through (EXTISA_0)."""
    return builtin_tables(generation)["EXTISA_0"]


def dve_table(generation: Generation | str) -> KernelInfoTable:
    """The DVE route table (0xE3 on MARIANA and later; empty before)."""
    return builtin_tables(generation)["DVE"]


def engine_of(opcode: int) -> Engine:
    """0xE3 is DVE-only [docs/firmware.md §3.6]; a registered opcode is its engine's (:func:`register_opcode`); every
    other opcode is looked up in the POOL table."""
    if opcode in _REGISTERED:
        return _REGISTERED[opcode][0]
    return Engine.DVE if opcode == 0xE3 else Engine.POOL
