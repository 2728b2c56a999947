"""The sub-structs of the 64-byte TPB instruction records (docs/firmware.md §1.2, §3.3): HEADER, EVENTS, ADDR4,
TENSOR3D and the MX tensor / memory-pattern union views. :mod:`q7emu.isa.records` builds the records of them.

Every struct is a frozen dataclass with ``encode() -> bytes`` (exactly ``SIZE`` little-endian bytes) and
``decode(data) -> instance``, a pure byte view that never rejects a value. Encoding checks field ranges and raises
:class:`~q7emu.errors.InvalidArgument` for a value that does not fit its field.

Reading of ADDR4 (q7emu's choice where docs/firmware.md is silent, docs/model.md §4): the top byte is the marker.
A record uses the *immediate* form when none of the marker bits 0x80 (address register), 0x40 (shape register) or
0x20 (indirect) is set; the whole u32 is then PARTITION_OFFSET (bit 25 = PSUM). The remaining top-byte bits (0x01, 0x02,
0x04, 0x08, 0x10) are address bits of the immediate form: a flat SBUF address at the default partition size
reaches 0x17FFFFF, so bit 24 is needed.
"""
from __future__ import annotations

import struct
from dataclasses import field
from typing import ClassVar, Self

from q7emu._dataclass import dataclass
from q7emu.errors import InvalidArgument
from q7emu.isa.enums import INST_WORD_LEN, AddrMarker

PSUM_BIT = 1 << 25
REGISTER_MARKER_BITS = 0xE0


def _check_bytes(data: bytes, size: int, what: str) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidArgument(what, type(data).__name__, "must be bytes")
    data = bytes(data)
    if len(data) != size:
        raise InvalidArgument(f"{what} length", len(data), f"must be exactly {size} bytes")
    return data


def _u(name: str, value: int, bits: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise InvalidArgument(name, value, f"must be an unsigned {bits}-bit integer")
    return value


def _s(name: str, value: int, bits: int) -> int:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidArgument(name, value, f"must be a signed {bits}-bit integer ({lo}..{hi})")
    return value


def _raw(name: str, value: bytes, size: int) -> bytes:
    if not isinstance(value, (bytes, bytearray)) or len(value) != size:
        raise InvalidArgument(name, value, f"must be {size} bytes")
    return bytes(value)


# ----------------------------------------------------------------------------- HEADER / EVENTS
@dataclass(frozen=True)
class Header:
    """HEADER (4 B): opcode, inst_word_len (0x10 = 16 dwords; QuantizeMX ORs a saturate bit into bit 0),
    debug_cmd, debug_hint [docs/firmware.md §1.2]."""

    opcode: int
    inst_word_len: int = INST_WORD_LEN
    debug_cmd: int = 0
    debug_hint: int = 0
    SIZE: ClassVar[int] = 4

    def encode(self) -> bytes:
        return bytes([_u("header.opcode", self.opcode, 8), _u("header.inst_word_len", self.inst_word_len, 8),
                      _u("header.debug_cmd", self.debug_cmd, 8), _u("header.debug_hint", self.debug_hint, 8)])

    @classmethod
    def decode(cls, data: bytes) -> Header:
        d = _check_bytes(data, cls.SIZE, "HEADER")
        return cls(d[0], d[1], d[2], d[3])


@dataclass(frozen=True)
class Events:
    """EVENTS (8 B): wait_mode, wait_idx, update_mode, update_idx (u8 each), semaphore_value (u32).
    Decoded and shown; q7emu models no semaphores (docs/model.md §4)."""

    wait_mode: int = 0
    wait_idx: int = 0
    update_mode: int = 0
    update_idx: int = 0
    semaphore_value: int = 0
    SIZE: ClassVar[int] = 8

    def encode(self) -> bytes:
        return struct.pack("<4BI", _u("events.wait_mode", self.wait_mode, 8), _u("events.wait_idx", self.wait_idx, 8),
                           _u("events.update_mode", self.update_mode, 8), _u("events.update_idx", self.update_idx, 8),
                           _u("events.semaphore_value", self.semaphore_value, 32))

    @classmethod
    def decode(cls, data: bytes) -> Events:
        return cls(*struct.unpack("<4BI", _check_bytes(data, cls.SIZE, "EVENTS")))


# ----------------------------------------------------------------------------- ADDR4
@dataclass(frozen=True)
class Addr4:
    """ADDR4 (4 B union): ``raw`` is the little-endian u32.

    Immediate form (marker bits 0x80/0x40/0x20 clear): PARTITION_OFFSET; bit 25 set = PSUM, otherwise a flat
    SBUF address ``partition * partition_bytes + byte_offset`` (docs/model.md §4).
    Register form ADDR_REG4 ``{regnum, reserved[2], marker}``: byte 0 = regnum, bytes 1..2 reserved, byte 3 the
    marker (0x80 address register, 0x40 shape register, 0xC0 both, 0x20 / 0xA0 indirect).
    """

    raw: int = 0
    SIZE: ClassVar[int] = 4

    @classmethod
    def immediate(cls, addr: int) -> Addr4:
        """Immediate PARTITION_OFFSET form (a flat address; add :data:`PSUM_BIT` for PSUM)."""
        _u("addr", addr, 32)
        if (addr >> 24) & REGISTER_MARKER_BITS:
            raise InvalidArgument("addr", addr,
                                  "an immediate address must leave marker bits 0xE0 of the top byte clear")
        return cls(addr)

    @classmethod
    def sbuf(cls, partition: int, offset: int, partition_bytes: int = 0x30000) -> Addr4:
        """Immediate SBUF address of byte ``offset`` in ``partition`` (docs/model.md §4 flat reading)."""
        return cls.immediate(partition * partition_bytes + offset)

    @classmethod
    def register(cls, regnum: int, marker: int = AddrMarker.ADDR_REG, reserved: int = 0) -> Addr4:
        """Register form ADDR_REG4: ``regnum`` (u8), ``reserved`` (u16), ``marker`` (u8)."""
        return cls(_u("regnum", regnum, 8) | _u("reserved", reserved, 16) << 8 | _u("marker", int(marker), 8) << 24)

    @property
    def marker(self) -> int:
        """The top byte."""
        return (self.raw >> 24) & 0xFF

    @property
    def is_immediate(self) -> bool:
        """True for the PARTITION_OFFSET form (no register / indirect marker bit)."""
        return not (self.marker & REGISTER_MARKER_BITS)

    @property
    def shape_from_register(self) -> bool:
        """Marker is SHAPE_REG or ADDR_SHAPE_REG (the static element-count check is skipped) [docs/firmware.md §1.2]."""
        return self.marker in (AddrMarker.SHAPE_REG, AddrMarker.ADDR_SHAPE_REG)

    @property
    def form(self) -> str:
        """'immediate', or the marker name of a register / indirect form ('marker 0x..' when unnamed)."""
        if self.is_immediate:
            return "immediate"
        try:
            return AddrMarker(self.marker).name.lower()
        except ValueError:
            return f"marker 0x{self.marker:02x}"

    @property
    def regnum(self) -> int:
        """Register number of the register form (byte 0)."""
        return self.raw & 0xFF

    @property
    def is_psum(self) -> bool:
        """Immediate form with bit 25 set."""
        return self.is_immediate and bool(self.raw & PSUM_BIT)

    def locate(self, partition_bytes: int) -> tuple[int, int]:
        """(partition, byte offset) of an immediate SBUF address (partition may be >= 128: out of SBUF)."""
        return divmod(self.raw, partition_bytes)

    def encode(self) -> bytes:
        return struct.pack("<I", _u("ADDR4", self.raw, 32))

    @classmethod
    def decode(cls, data: bytes) -> Addr4:
        return cls(struct.unpack("<I", _check_bytes(data, cls.SIZE, "ADDR4"))[0])

    def describe(self, partition_bytes: int = 0x30000) -> str:
        if not self.is_immediate:
            return f"0x{self.raw:08x} ({self.form}, reg {self.regnum})"
        if self.is_psum:
            return f"0x{self.raw:08x} (PSUM)"
        p, off = self.locate(partition_bytes)
        return f"0x{self.raw:08x} (SBUF partition {p}, byte 0x{off:x})"


# ----------------------------------------------------------------------------- TENSOR3D and unions
@dataclass(frozen=True)
class Tensor3D:
    """TENSOR3D (16 B): start_addr ADDR4; step_elem[3] int16 (signed element strides, 0 = broadcast);
    num_elem[3] uint16 (per-dimension counts; dim 0 innermost) [docs/firmware.md §1.2]."""

    start_addr: Addr4 = field(default_factory=Addr4)
    step_elem: tuple[int, int, int] = (1, 0, 0)
    num_elem: tuple[int, int, int] = (0, 1, 1)
    SIZE: ClassVar[int] = 16

    @property
    def count(self) -> int:
        """Elements addressed: num_elem[0] * num_elem[1] * num_elem[2]."""
        return self.num_elem[0] * self.num_elem[1] * self.num_elem[2]

    def encode(self) -> bytes:
        if len(self.step_elem) != 3 or len(self.num_elem) != 3:
            raise InvalidArgument("TENSOR3D", (self.step_elem, self.num_elem), "step_elem and num_elem have 3 entries")
        return (self.start_addr.encode()
                + struct.pack("<3h", *(_s(f"step_elem[{i}]", v, 16) for i, v in enumerate(self.step_elem)))
                + struct.pack("<3H", *(_u(f"num_elem[{i}]", v, 16) for i, v in enumerate(self.num_elem))))

    @classmethod
    def decode(cls, data: bytes) -> Tensor3D:
        d = _check_bytes(data, cls.SIZE, "TENSOR3D")
        v = struct.unpack("<I3h3H", d)
        return cls(Addr4(v[0]), tuple(v[1:4]), tuple(v[4:7]))


@dataclass(frozen=True)
class MxTensorV2:
    """MXTENSOR_V2 (16 B, MAVERICK) [docs/firmware.md §3.3]: data_addr, scale_addr (ADDR4), num_elem[2] (u8),
    step_elem_data_1 (i16, bytes multiple of 4), step_elem_scale_1 (i16), p_f_dim (u8: F high nibble,
    P low nibble, log2), scale_dtype (DTYPE; 0 = no scales). A view only: q7emu executes no op that uses it."""

    data_addr: Addr4 = field(default_factory=Addr4)
    scale_addr: Addr4 = field(default_factory=Addr4)
    num_elem: tuple[int, int] = (0, 0)
    step_elem_data_1: int = 0
    step_elem_scale_1: int = 0
    p_f_dim: int = 0
    scale_dtype: int = 0
    SIZE: ClassVar[int] = 16

    def encode(self) -> bytes:
        return (self.data_addr.encode() + self.scale_addr.encode()
                + struct.pack("<2Bhh2B", _u("num_elem[0]", self.num_elem[0], 8), _u("num_elem[1]", self.num_elem[1], 8),
                              _s("step_elem_data_1", self.step_elem_data_1, 16),
                              _s("step_elem_scale_1", self.step_elem_scale_1, 16),
                              _u("p_f_dim", self.p_f_dim, 8), _u("scale_dtype", self.scale_dtype, 8)))

    @classmethod
    def decode(cls, data: bytes) -> MxTensorV2:
        v = struct.unpack("<II2Bhh2B", _check_bytes(data, cls.SIZE, "MXTENSOR_V2"))
        return cls(Addr4(v[0]), Addr4(v[1]), (v[2], v[3]), v[4], v[5], v[6], v[7])


@dataclass(frozen=True)
class _UnionView:
    """A 16-byte union held as its ``raw`` bytes, which the subclass's properties view; ``i`` is the indirect
    member (raw bytes only). ``_NAME`` names the union in the messages of encode / decode."""

    raw: bytes = bytes(16)
    SIZE: ClassVar[int] = 16
    _NAME: ClassVar[str]

    @property
    def i(self) -> bytes:
        return self.raw

    def encode(self) -> bytes:
        return _raw(self._NAME, self.raw, self.SIZE)

    @classmethod
    def decode(cls, data: bytes) -> Self:
        return cls(_check_bytes(data, cls.SIZE, cls._NAME))


@dataclass(frozen=True)
class MemPattern3D(_UnionView):
    """MEM_PATTERN3D union view (16 B, NC-v4/v5) ``{TENSOR3D t | INDIRECT16B i | MXTENSOR_V2 mx}``.

    ``raw`` holds the 16 bytes; ``t``, ``i`` and ``mx`` view them. ``is_mx_v5`` is the v5 selector
    ``addr_reg_v2.marker_a4 == 0x01`` [docs/firmware.md §1.2]. The INDIRECT16B layout is not in docs/firmware.md
    (raw bytes only).
    """

    _NAME: ClassVar[str] = "MEM_PATTERN3D"

    @property
    def t(self) -> Tensor3D:
        return Tensor3D.decode(self.raw)

    @property
    def mx(self) -> MxTensorV2:
        return MxTensorV2.decode(self.raw)

    @property
    def is_mx_v5(self) -> bool:
        return self.raw[3] == 0x01

    @classmethod
    def from_tensor3d(cls, t: Tensor3D) -> MemPattern3D:
        return cls(t.encode())


@dataclass(frozen=True)
class MxTensor1D:
    """MXTENSOR1D (16 B, v4) [docs/firmware.md §3.3]: start_addr (packed data), scale_addr (E8M0 scales),
    num_elem (u16),
    step_elem (i8), scale_pidx (u8: scale partition index inside the quadrant), reserved[4].

    q7emu's reading (machine.py): ``num_elem`` counts u32 data words per partition, ``step_elem`` is their
    signed stride in u32 elements; scales are one byte per 4 data elements, contiguous from ``scale_addr``."""

    start_addr: Addr4 = field(default_factory=Addr4)
    scale_addr: Addr4 = field(default_factory=Addr4)
    num_elem: int = 0
    step_elem: int = 1
    scale_pidx: int = 0
    reserved: bytes = bytes(4)
    SIZE: ClassVar[int] = 16

    def encode(self) -> bytes:
        return (self.start_addr.encode() + self.scale_addr.encode()
                + struct.pack("<HbB", _u("num_elem", self.num_elem, 16), _s("step_elem", self.step_elem, 8),
                              _u("scale_pidx", self.scale_pidx, 8))
                + _raw("MXTENSOR1D.reserved", self.reserved, 4))

    @classmethod
    def decode(cls, data: bytes) -> MxTensor1D:
        d = _check_bytes(data, cls.SIZE, "MXTENSOR1D")
        v = struct.unpack("<IIHbB", d[:12])
        return cls(Addr4(v[0]), Addr4(v[1]), v[2], v[3], v[4], d[12:16])


@dataclass(frozen=True)
class MxMemPattern1D(_UnionView):
    """MXMEM_PATTERN1D union view (16 B) ``{MXTENSOR1D t | MXIndirect16B i}`` [docs/firmware.md §3.3]; ``raw`` bytes."""

    _NAME: ClassVar[str] = "MXMEM_PATTERN1D"

    @property
    def t(self) -> MxTensor1D:
        return MxTensor1D.decode(self.raw)

    @classmethod
    def from_mxtensor1d(cls, t: MxTensor1D) -> MxMemPattern1D:
        return cls(t.encode())
