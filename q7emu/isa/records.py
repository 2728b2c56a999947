"""64-byte TPB instruction records and their sub-structs (docs/firmware.md §1.1, §1.2, §3.1, §3.3).

Every struct is a frozen dataclass with ``encode() -> bytes`` (exactly ``SIZE`` little-endian bytes) and
``decode(data) -> instance``. Decoding never rejects a value: it is a pure byte view, so
``X.decode(b).encode() == b`` for every ``b`` of the right length. Encoding checks field ranges and raises
:class:`~q7emu.errors.InvalidArgument` for a value that does not fit its field.

Reading of ADDR4 (q7emu's choice where docs/firmware.md is silent, docs/model.md §4): the top byte is the marker.
A record uses the
*immediate* form when none of the marker bits 0x80 (address register), 0x40 (shape register) or 0x20 (indirect)
is set; the whole u32 is then PARTITION_OFFSET (bit 25 = PSUM). The remaining top-byte bits (0x01, 0x02,
0x04, 0x08, 0x10) are address bits of the immediate form: a flat SBUF address at the default partition size
reaches 0x17FFFFF, so bit 24 is needed.
"""
from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypeAlias, TypeVar

from q7emu.errors import InternalError, InvalidArgument
from q7emu.isa.enums import INST_WORD_LEN, OPCODE_NAMES, AddrMarker, DequantFmt, DType, Opcode
from q7emu.model.dtypes import FORMAT_ALIASES, canonical_format
from q7emu.model.kernels import path_ratio
from q7emu.model.knobs import normalize_fmt

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

RECORD_SIZE = 64
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
class MemPattern3D:
    """MEM_PATTERN3D union view (16 B, NC-v4/v5) ``{TENSOR3D t | INDIRECT16B i | MXTENSOR_V2 mx}``.

    ``raw`` holds the 16 bytes; ``t``, ``i`` and ``mx`` view them. ``is_mx_v5`` is the v5 selector
    ``addr_reg_v2.marker_a4 == 0x01`` [docs/firmware.md §1.2]. The INDIRECT16B layout is not in docs/firmware.md
    (raw bytes only).
    """

    raw: bytes = bytes(16)
    SIZE: ClassVar[int] = 16

    @property
    def t(self) -> Tensor3D:
        return Tensor3D.decode(self.raw)

    @property
    def i(self) -> bytes:
        return self.raw

    @property
    def mx(self) -> MxTensorV2:
        return MxTensorV2.decode(self.raw)

    @property
    def is_mx_v5(self) -> bool:
        return self.raw[3] == 0x01

    @classmethod
    def from_tensor3d(cls, t: Tensor3D) -> MemPattern3D:
        return cls(t.encode())

    def encode(self) -> bytes:
        return _raw("MEM_PATTERN3D", self.raw, self.SIZE)

    @classmethod
    def decode(cls, data: bytes) -> MemPattern3D:
        return cls(_check_bytes(data, cls.SIZE, "MEM_PATTERN3D"))


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
class MxMemPattern1D:
    """MXMEM_PATTERN1D union view (16 B) ``{MXTENSOR1D t | MXIndirect16B i}`` [docs/firmware.md §3.3]; ``raw`` bytes."""

    raw: bytes = bytes(16)
    SIZE: ClassVar[int] = 16

    @property
    def t(self) -> MxTensor1D:
        return MxTensor1D.decode(self.raw)

    @property
    def i(self) -> bytes:
        return self.raw

    @classmethod
    def from_mxtensor1d(cls, t: MxTensor1D) -> MxMemPattern1D:
        return cls(t.encode())

    def encode(self) -> bytes:
        return _raw("MXMEM_PATTERN1D", self.raw, self.SIZE)

    @classmethod
    def decode(cls, data: bytes) -> MxMemPattern1D:
        return cls(_check_bytes(data, cls.SIZE, "MXMEM_PATTERN1D"))


# ----------------------------------------------------------------------------- the two records
@dataclass(frozen=True)
class S3D3TensDequant:
    """NEURON_ISA_TPB_S3D3_TENS_DEQUANT_STRUCT (opcode 0x7B TensorDequantize, 64 B) [docs/firmware.md §1.1].

    ``src`` / ``dst`` are the TENSOR3D view of the src/dst_mem_pattern (the same 16 bytes are the
    MEM_PATTERN3D union on NC-v4/v5; use :meth:`src_pattern` / :meth:`dst_pattern` for the union view)."""

    header: Header = field(default_factory=lambda: Header(Opcode.TENSOR_DEQUANTIZE))
    events: Events = field(default_factory=Events)
    src: Tensor3D = field(default_factory=Tensor3D)
    reserved0: bytes = bytes(4)
    in_dtype: int = 0x09
    out_dtype: int = 0x09
    num_active_channels: int = 1
    dequant_fmt: int = 1
    group_size: int = 0
    reserved1: bytes = bytes(7)
    dst: Tensor3D = field(default_factory=Tensor3D)
    reserved2: bytes = bytes(4)
    SIZE: ClassVar[int] = RECORD_SIZE
    OPCODE: ClassVar[int] = Opcode.TENSOR_DEQUANTIZE

    def src_pattern(self) -> MemPattern3D:
        return MemPattern3D.from_tensor3d(self.src)

    def dst_pattern(self) -> MemPattern3D:
        return MemPattern3D.from_tensor3d(self.dst)

    def encode(self) -> bytes:
        out = (self.header.encode() + self.events.encode() + self.src.encode()
               + _raw("reserved0", self.reserved0, 4)
               + bytes([_u("in_dtype", self.in_dtype, 8), _u("out_dtype", self.out_dtype, 8),
                        _u("num_active_channels", self.num_active_channels, 8),
                        _u("dequant_fmt", self.dequant_fmt, 8), _u("group_size", self.group_size, 8)])
               + _raw("reserved1", self.reserved1, 7) + self.dst.encode() + _raw("reserved2", self.reserved2, 4))
        if len(out) != RECORD_SIZE:
            raise InternalError(f"S3D3TensDequant encoded to {len(out)} bytes, not {RECORD_SIZE}")
        return out

    @classmethod
    def decode(cls, data: bytes) -> S3D3TensDequant:
        d = _check_bytes(data, RECORD_SIZE, "record")
        return cls(Header.decode(d[0:4]), Events.decode(d[4:12]), Tensor3D.decode(d[12:28]), d[28:32],
                   d[32], d[33], d[34], d[35], d[36], d[37:44], Tensor3D.decode(d[44:60]), d[60:64])

    def reserved_bytes(self) -> list[tuple[str, int]]:
        """(field name, value) of all 15 reserved bytes (offsets 28..31, 37..43, 60..63)."""
        return ([(f"reserved0[{i}]", b) for i, b in enumerate(self.reserved0)]
                + [(f"reserved1[{i}]", b) for i, b in enumerate(self.reserved1)]
                + [(f"reserved2[{i}]", b) for i, b in enumerate(self.reserved2)])


@dataclass(frozen=True)
class S3DMX1Quant:
    """NEURON_ISA_TPB_S3DMX1_QUANT_STRUCT (opcode 0xE3 QuantizeMX, 64 B) [docs/firmware.md §3.1].

    ``src`` is the TENSOR3D view of the MEM_PATTERN3D at offset 16; ``dst`` the MXTENSOR1D view of the
    MXMEM_PATTERN1D at offset 48."""

    header: Header = field(default_factory=lambda: Header(Opcode.QUANTIZE_MX))
    events: Events = field(default_factory=Events)
    reserved0: bytes = bytes(4)
    src: Tensor3D = field(default_factory=Tensor3D)
    reserved1: bytes = bytes(1)
    num_active_channels: int = 32
    in_dtype: int = 0x07
    out_dtype: int = 0x0E
    reserved2: bytes = bytes(12)
    dst: MxTensor1D = field(default_factory=MxTensor1D)
    SIZE: ClassVar[int] = RECORD_SIZE
    OPCODE: ClassVar[int] = Opcode.QUANTIZE_MX

    @property
    def saturate(self) -> bool:
        """Saturate bit (bit 0 of header byte 1) [docs/firmware.md §1.2, n/a]; q7emu always saturates
        (docs/model.md §2)."""
        return bool(self.header.inst_word_len & 1)

    def src_pattern(self) -> MemPattern3D:
        return MemPattern3D.from_tensor3d(self.src)

    def dst_pattern(self) -> MxMemPattern1D:
        return MxMemPattern1D.from_mxtensor1d(self.dst)

    def encode(self) -> bytes:
        out = (self.header.encode() + self.events.encode() + _raw("reserved0", self.reserved0, 4) + self.src.encode()
               + _raw("reserved1", self.reserved1, 1)
               + bytes([_u("num_active_channels", self.num_active_channels, 8), _u("in_dtype", self.in_dtype, 8),
                        _u("out_dtype", self.out_dtype, 8)])
               + _raw("reserved2", self.reserved2, 12) + self.dst.encode())
        if len(out) != RECORD_SIZE:
            raise InternalError(f"S3DMX1Quant encoded to {len(out)} bytes, not {RECORD_SIZE}")
        return out

    @classmethod
    def decode(cls, data: bytes) -> S3DMX1Quant:
        d = _check_bytes(data, RECORD_SIZE, "record")
        return cls(Header.decode(d[0:4]), Events.decode(d[4:12]), d[12:16], Tensor3D.decode(d[16:32]), d[32:33],
                   d[33], d[34], d[35], d[36:48], MxTensor1D.decode(d[48:64]))

    def reserved_bytes(self) -> list[tuple[str, int]]:
        """(field name, value) of the reserved bytes (offsets 12..15, 32, 36..47, 60..63 = dst.reserved)."""
        return ([(f"reserved0[{i}]", b) for i, b in enumerate(self.reserved0)]
                + [("reserved1[0]", self.reserved1[0])]
                + [(f"reserved2[{i}]", b) for i, b in enumerate(self.reserved2)]
                + [(f"dst.reserved[{i}]", b) for i, b in enumerate(self.dst.reserved)])


@dataclass(frozen=True)
class RawRecord:
    """Any other opcode: HEADER, EVENTS and the 52 per-opcode bytes (12..63) undecoded."""

    header: Header
    events: Events = field(default_factory=Events)
    body: bytes = bytes(52)
    SIZE: ClassVar[int] = RECORD_SIZE

    def encode(self) -> bytes:
        return self.header.encode() + self.events.encode() + _raw("body", self.body, 52)

    @classmethod
    def decode(cls, data: bytes) -> RawRecord:
        d = _check_bytes(data, RECORD_SIZE, "record")
        return cls(Header.decode(d[0:4]), Events.decode(d[4:12]), d[12:64])


Record = S3D3TensDequant | S3DMX1Quant | RawRecord


def decode_record(data: bytes) -> Record:
    """Decode 64 bytes by the opcode byte: 0x7B -> S3D3TensDequant, 0xE3 -> S3DMX1Quant, else RawRecord."""
    d = _check_bytes(data, RECORD_SIZE, "record")
    if d[0] == Opcode.TENSOR_DEQUANTIZE:
        return S3D3TensDequant.decode(d)
    if d[0] == Opcode.QUANTIZE_MX:
        return S3DMX1Quant.decode(d)
    return RawRecord.decode(d)


def encode_record(record: Record) -> bytes:
    """The 64 bytes of a record."""
    return record.encode()


def parse_hex(text: str) -> bytes:
    """Bytes from hex text; whitespace, ``:``, ``_``, ``,`` and ``0x`` prefixes are ignored."""
    cleaned = text.strip().lower()
    for sep in (" ", "\n", "\t", "\r", ":", "_", ","):
        cleaned = cleaned.replace(sep, "")
    if cleaned.startswith("0x"):
        cleaned = cleaned[2:]
    try:
        return bytes.fromhex(cleaned)
    except ValueError:
        raise InvalidArgument("hex", text[:40], "is not hexadecimal bytes") from None


@dataclass(frozen=True)
class FieldInfo:
    """One leaf field of a decoded record, as ``q7emu decode`` shows it.

    ``name`` is its dotted path (``src.start_addr``, ``dst.num_elem``); ``value`` the plain value (int, list of
    ints, or the hex text of a bytes field); ``text`` the display text; ``enum`` the name of the value in its
    enumeration (``UINT32``, ``E2M1_TO_E5M2``, ``TensorDequantize``) or None."""

    name: str
    value: int | list[int] | str
    text: str
    enum: str | None = None


def _enum_name(name: str, value: int) -> str | None:
    """The enumeration name of an int field's value (None for a field without one, or an unassigned code)."""
    leaf = name.rsplit(".", 1)[-1]
    if name == "header.opcode":
        return OPCODE_NAMES.get(value)
    if leaf in ("in_dtype", "out_dtype", "scale_dtype"):
        try:
            return DType(value).name
        except ValueError:
            return None
    if leaf == "dequant_fmt":
        try:
            return DequantFmt(value).name
        except ValueError:
            return "INVALID" if value == 0 else None
    if leaf == "marker":
        try:
            return AddrMarker(value).name
        except ValueError:
            return None
    return None


def describe_fields(record: Record, partition_bytes: int = 0x30000) -> list[FieldInfo]:
    """Every leaf field of a decoded record in struct order, with value, display text and enum name.

    ``partition_bytes``: SBUF bytes per partition, used to show an immediate address as partition and byte
    (docs/model.md §4); a positive multiple of 4."""
    if isinstance(partition_bytes, bool) or not isinstance(partition_bytes, int) or partition_bytes <= 0:
        raise InvalidArgument("partition_bytes", partition_bytes, "must be a positive integer")
    out: list[FieldInfo] = []

    def walk(prefix: str, obj: object) -> None:
        if isinstance(obj, Addr4):
            out.append(FieldInfo(prefix, obj.raw, obj.describe(partition_bytes)))
        elif dataclasses.is_dataclass(obj):
            for f in dataclasses.fields(obj):
                walk(f"{prefix}.{f.name}" if prefix else f.name, getattr(obj, f.name))
        elif isinstance(obj, (bytes, bytearray)):
            out.append(FieldInfo(prefix, bytes(obj).hex(), bytes(obj).hex(" ") or "-"))
        elif isinstance(obj, tuple):
            out.append(FieldInfo(prefix, [int(v) for v in obj], "[" + ", ".join(str(v) for v in obj) + "]"))
        elif isinstance(obj, int):
            name = _enum_name(prefix, obj)
            if name:
                text = f"{obj} (0x{obj:x}, {name})" if obj > 9 else f"{obj} ({name})"
            else:
                text = f"{obj} (0x{obj:x})" if obj > 9 else str(obj)
            out.append(FieldInfo(prefix, int(obj), text, name))
        else:  # pragma: no cover - every leaf of the record structs is one of the above
            out.append(FieldInfo(prefix, str(obj), str(obj)))

    walk("", record)
    return out


def fields(record: Record, partition_bytes: int = 0x30000) -> list[tuple[str, str]]:
    """Flat (name, value text) list of every field of a decoded record, for display (enum names beside
    numbers; immediate addresses as partition and byte at ``partition_bytes``)."""
    return [(f.name, f.text) for f in describe_fields(record, partition_bytes)]


# ----------------------------------------------------------------------------- a record from named fields
#: a record struct :func:`record_from_fields` builds
RecordKind: TypeAlias = type[S3D3TensDequant] | type[S3DMX1Quant]
#: record kinds :func:`record_from_fields` builds, by every name it accepts
RECORD_KINDS: dict[str, RecordKind] = {"0x7b": S3D3TensDequant, "7b": S3D3TensDequant, "dequant": S3D3TensDequant,
                                 "tensor_dequantize": S3D3TensDequant, "tensordequantize": S3D3TensDequant, "0xe3":
                                 S3DMX1Quant, "e3": S3DMX1Quant, "quantize_mx": S3DMX1Quant, "quantizemx": S3DMX1Quant}

#: DTYPE of each canonical format name (q7emu.model.dtypes): the DType members named as a format
_FORMAT_DTYPES = {FORMAT_ALIASES[d.name.lower()]: d for d in DType if d.name.lower() in FORMAT_ALIASES}


def record_kind(kind: str | int) -> RecordKind:
    """The record struct of a kind: ``0x7b`` / ``dequant`` -> S3D3TensDequant, ``0xe3`` / ``quantize_mx`` ->
    S3DMX1Quant (an opcode int works too)."""
    if isinstance(kind, int) and not isinstance(kind, bool):
        key = f"0x{kind:02x}"
    elif isinstance(kind, str):
        key = kind.strip().lower().replace("-", "_")
    else:
        key = ""
    if key not in RECORD_KINDS:
        raise InvalidArgument("kind", kind,
                              "must be 0x7b (dequant, TensorDequantize) or 0xe3 (quantize_mx, QuantizeMX)")
    return RECORD_KINDS[key]


def field_names(kind: str | int | RecordKind) -> list[str]:
    """The dotted leaf field names of a record kind, in struct order (what ``q7emu decode`` prints)."""
    cls = kind if isinstance(kind, type) else record_kind(kind)
    return [f.name for f in describe_fields(cls())]


def _int(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise InvalidArgument(name, value, "must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip(), 0)
        except ValueError:
            pass
    raise InvalidArgument(name, value, "must be an integer (decimal, or 0x / 0o / 0b prefixed)")


def _enum_value(name: str, value: object) -> int:
    """An int field's value: an integer, or a name of the field's enumeration."""
    if not isinstance(value, str) or _looks_int(value):
        return _int(name, value)
    leaf = name.rsplit(".", 1)[-1]
    key = value.strip().upper().replace("-", "_")
    if name == "header.opcode":
        by_name = {n.upper(): op for op, n in OPCODE_NAMES.items()} | {m.name: int(m) for m in Opcode}
        if key in by_name:
            return by_name[key]
        raise InvalidArgument(name, value, "an integer or an opcode name: " + ", ".join(sorted(by_name)))
    if leaf in ("in_dtype", "out_dtype", "scale_dtype"):
        if key in DType.__members__:
            return int(DType[key])
        try:
            return int(_FORMAT_DTYPES[canonical_format(value, name)])
        except (InvalidArgument, KeyError):
            raise InvalidArgument(name, value, "an integer, a DTYPE name (UINT32, FP16, BFLOAT16, FP8_EXP4, ...) "
                                  "or a format name (fp16, bf16, e4m3, e5m2) [docs/firmware.md §5]") from None
    if leaf == "dequant_fmt":
        if key == "INVALID":
            return 0
        return normalize_fmt(value)
    raise InvalidArgument(name, value, "must be an integer (decimal, or 0x / 0o / 0b prefixed)")


def _looks_int(text: str) -> bool:
    try:
        int(text.strip(), 0)
    except ValueError:
        return False
    return True


def _addr(name: str, value: object, partition_bytes: int | None) -> Addr4:
    if isinstance(value, Addr4):
        return value
    if isinstance(value, str) and ":" in value:
        p_text, o_text = value.split(":", 1)
        part, off = _int(f"{name} partition", p_text), _int(f"{name} byte offset", o_text)
        if partition_bytes is None:
            raise InvalidArgument(name, value, "a PARTITION:OFFSET address needs the partition size "
                                  "(--partition-bytes): the flat address is partition * partition_bytes + offset "
                                  "[docs/model.md §4]")
        if not 0 <= off < partition_bytes:
            raise InvalidArgument(f"{name} byte offset", off, f"must be in 0..0x{partition_bytes - 1:x} "
                                  f"(partition_bytes=0x{partition_bytes:x})")
        if part < 0:
            raise InvalidArgument(f"{name} partition", part, "must be >= 0")
        return Addr4.immediate(part * partition_bytes + off)
    raw = _int(name, value)
    return Addr4(_u(name, raw, 32))


def _tuple(name: str, value: object, n: int) -> tuple[int, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or len(items) != n:
        raise InvalidArgument(name, value, f"needs {n} comma-separated integers")
    return tuple(_int(f"{name}[{i}]", v) for i, v in enumerate(items))


def _bytes(name: str, value: object, n: int) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        data = bytes(value)
    elif isinstance(value, str):
        data = parse_hex(value)
    else:
        raise InvalidArgument(name, value, f"needs {n} bytes as hex")
    if len(data) != n:
        raise InvalidArgument(name, value, f"needs exactly {n} bytes (hex), got {len(data)}")
    return data


_D = TypeVar("_D", bound="DataclassInstance")


def _assign(obj: _D, path: list[str], full: str, value: object, partition_bytes: int | None) -> _D:
    """``obj`` with the leaf ``path`` (dotted parts; the last may carry ``[i]``) set to ``value``."""
    head, index = path[0], None
    if len(path) == 1 and head.endswith("]") and "[" in head:
        head, idx_text = head[:-1].split("[", 1)
        index = _int(f"{full} index", idx_text)
    names = {f.name for f in dataclasses.fields(obj)}
    if head not in names:
        raise KeyError(full)
    cur = getattr(obj, head)
    if len(path) > 1:
        if not dataclasses.is_dataclass(cur) or isinstance(cur, (type, Addr4)):   # a sub-struct (not a class)
            raise KeyError(full)
        return dataclasses.replace(obj, **{head: _assign(cur, path[1:], full, value, partition_bytes)})
    if index is not None:
        if not isinstance(cur, tuple) or not 0 <= index < len(cur):
            raise InvalidArgument(full, value, f"{head} is not a list with an item {index}")
        new: object = tuple(_int(full, value) if i == index else v for i, v in enumerate(cur))
    elif isinstance(cur, Addr4):
        new = _addr(full, value, partition_bytes)
    elif isinstance(cur, tuple):
        new = _tuple(full, value, len(cur))
    elif isinstance(cur, (bytes, bytearray)):
        new = _bytes(full, value, len(cur))
    elif dataclasses.is_dataclass(cur):
        raise KeyError(full)
    else:
        new = _enum_value(full, value)
    return dataclasses.replace(obj, **{head: new})


def record_from_fields(kind: str | int, values: dict[str, object] | list[tuple[str, object]], *,
                       partition_bytes: int | None = None) -> Record:
    """A 64-byte record built from named fields: the defaults of the ``kind`` struct, then each assignment.

    Args:
        kind: ``0x7b`` / ``dequant`` (S3D3TensDequant) or ``0xe3`` / ``quantize_mx`` (S3DMX1Quant).
        values: field name -> value, or (name, value) pairs applied in order. Names are the dotted names
            ``q7emu decode`` prints (``src.start_addr``, ``dst.num_elem``, ``num_active_channels``); a list item
            can be set alone (``src.num_elem[0]``). Values: integers in any base; lists as ``"4,1,1"``; bytes
            fields as hex; addresses as a flat integer or ``"PARTITION:OFFSET"`` (needs ``partition_bytes``);
            enum fields also by name (``dequant_fmt=e2m1``, ``in_dtype=UINT32`` or ``fp16``,
            ``out_dtype=e4m3``, ``header.opcode=QuantizeMX``).
        partition_bytes: SBUF bytes per partition for ``PARTITION:OFFSET`` addresses (docs/model.md §4).

    Returns the decoded record (``.encode()`` gives its 64 bytes). Raises InvalidArgument naming the field for an
    unknown name or a value that does not fit; the record is not checked against the firmware predicate
    (``q7emu.isa.validate.check`` / ``q7emu decode`` do that)."""
    cls = record_kind(kind)
    if partition_bytes is not None and (isinstance(partition_bytes, bool) or not isinstance(partition_bytes, int)
                                        or partition_bytes <= 0 or partition_bytes % 4):
        raise InvalidArgument("partition_bytes", partition_bytes, "must be a positive multiple of 4")
    rec = cls()
    items = list(values.items()) if isinstance(values, dict) else list(values)
    for name, value in items:
        if not isinstance(name, str) or not name.strip():
            raise InvalidArgument("field", name, "must be a field name")
        name = name.strip()
        try:
            rec = _assign(rec, name.split("."), name, value, partition_bytes)
        except KeyError:
            raise InvalidArgument("field", name, f"unknown field of {cls.__name__}; known: "
                                  + ", ".join(field_names(cls))) from None
    rec.encode()       # every field range checked (InvalidArgument names the field)
    return rec


# ----------------------------------------------------------------------------- convenience builders
def make_dequant_record(fmt: int, group_size: int, num_active_channels: int, src_words: int, *,
                        src_partition: int = 0, src_offset: int = 0, dst_partition: int = 0,
                        dst_offset: int | None = None, partition_bytes: int = 0x30000) -> S3D3TensDequant:
    """A contiguous 0x7B record: ``src_words`` u32 per partition in, the path's ratio out (1:2, 3:4, 5:8).

    ``dst_offset`` defaults to right after the source bytes. Offsets are bytes inside the partition."""
    a, b = path_ratio(fmt, group_size)
    dst_words = src_words * b // a
    if dst_offset is None:
        dst_offset = src_offset + 4 * src_words
    return S3D3TensDequant(
        src=Tensor3D(Addr4.sbuf(src_partition, src_offset, partition_bytes), (1, 0, 0), (src_words, 1, 1)),
        num_active_channels=num_active_channels, dequant_fmt=fmt, group_size=group_size,
        dst=Tensor3D(Addr4.sbuf(dst_partition, dst_offset, partition_bytes), (1, 0, 0), (dst_words, 1, 1)))


def make_quantize_mx_record(num_active_channels: int, free: int, *, in_dtype: int = 0x07, out_dtype: int = 0x0E,
                            src_partition: int = 0, src_offset: int = 0, dst_partition: int = 0,
                            dst_offset: int | None = None, scale_offset: int | None = None, scale_pidx: int = 0,
                            partition_bytes: int = 0x30000) -> S3DMX1Quant:
    """A contiguous 0xE3 record for a [num_active_channels, free] fp16/bf16 tile (free a multiple of 4).

    Source: free/2 u32 words from ``src_offset``; data: free/4 words at ``dst_offset`` (default right after the
    source); scales: free/4 bytes at ``scale_offset`` (default right after the data) in the quadrant base
    ``dst_partition`` (+ scale_pidx rows)."""
    if dst_offset is None:
        dst_offset = src_offset + 2 * free
    if scale_offset is None:
        scale_offset = dst_offset + free
    return S3DMX1Quant(
        src=Tensor3D(Addr4.sbuf(src_partition, src_offset, partition_bytes), (1, 0, 0), (free // 2, 1, 1)),
        num_active_channels=num_active_channels, in_dtype=in_dtype, out_dtype=out_dtype,
        dst=MxTensor1D(Addr4.sbuf(dst_partition, dst_offset, partition_bytes),
                       Addr4.sbuf(dst_partition, scale_offset, partition_bytes), free // 4, 1, scale_pidx))
