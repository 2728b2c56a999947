"""64-byte TPB instruction records (docs/firmware.md §1.1, §1.2, §3.1, §3.3).

Every struct is a frozen dataclass with ``encode() -> bytes`` (exactly ``SIZE`` little-endian bytes) and
``decode(data) -> instance``. Decoding never rejects a value: it is a pure byte view, so
``X.decode(b).encode() == b`` for every ``b`` of the right length. Encoding checks field ranges and raises
:class:`~q7emu.errors.InvalidArgument` for a value that does not fit its field.

The sub-structs the records are made of (HEADER, EVENTS, ADDR4, TENSOR3D, the MX tensor and memory-pattern
unions) live in :mod:`q7emu.isa.structs` and are re-exported here.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
from dataclasses import field
from typing import TYPE_CHECKING, ClassVar, Protocol, TypeAlias, TypeVar

from q7emu._dataclass import dataclass
from q7emu.errors import InternalError, InvalidArgument
from q7emu.isa.enums import OPCODE_NAMES, AddrMarker, DequantFmt, DType, Opcode

# the sub-structs, re-exported (``from q7emu.isa.records import Addr4`` keeps working), and the field checks the
# records share with them (package-private)
from q7emu.isa.structs import PSUM_BIT as PSUM_BIT
from q7emu.isa.structs import REGISTER_MARKER_BITS as REGISTER_MARKER_BITS
from q7emu.isa.structs import Addr4 as Addr4
from q7emu.isa.structs import Events as Events
from q7emu.isa.structs import Header as Header
from q7emu.isa.structs import MemPattern3D as MemPattern3D
from q7emu.isa.structs import MxMemPattern1D as MxMemPattern1D
from q7emu.isa.structs import MxTensor1D as MxTensor1D
from q7emu.isa.structs import MxTensorV2 as MxTensorV2
from q7emu.isa.structs import Tensor3D as Tensor3D
from q7emu.isa.structs import _check_bytes, _raw, _u
from q7emu.model.dtypes import FORMAT_ALIASES, canonical_format
from q7emu.model.kernels import path_ratio
from q7emu.model.knobs import normalize_fmt

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

RECORD_SIZE = 64


def _record_bytes(name: str, out: bytes) -> bytes:
    """``out``, the bytes record class ``name`` encoded to, checked to be one record long (InternalError
    otherwise: the class's own layout is wrong)."""
    if len(out) != RECORD_SIZE:
        raise InternalError(f"{name} encoded to {len(out)} bytes, not {RECORD_SIZE}")
    return out


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
        return _record_bytes("S3D3TensDequant", self.header.encode() + self.events.encode() + self.src.encode()
                             + _raw("reserved0", self.reserved0, 4)
                             + bytes([_u("in_dtype", self.in_dtype, 8), _u("out_dtype", self.out_dtype, 8),
                                      _u("num_active_channels", self.num_active_channels, 8),
                                      _u("dequant_fmt", self.dequant_fmt, 8), _u("group_size", self.group_size, 8)])
                             + _raw("reserved1", self.reserved1, 7) + self.dst.encode()
                             + _raw("reserved2", self.reserved2, 4))

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
        return _record_bytes("S3DMX1Quant", self.header.encode() + self.events.encode()
                             + _raw("reserved0", self.reserved0, 4) + self.src.encode()
                             + _raw("reserved1", self.reserved1, 1)
                             + bytes([_u("num_active_channels", self.num_active_channels, 8),
                                      _u("in_dtype", self.in_dtype, 8), _u("out_dtype", self.out_dtype, 8)])
                             + _raw("reserved2", self.reserved2, 12) + self.dst.encode())

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


class OpcodeRecord(Protocol):
    """What every decoded 64-byte record is, whatever its opcode: a frozen dataclass with the HEADER (its opcode)
    and ``encode() -> bytes``. The record class of an opcode that q7emu runs is its opcode spec's
    (q7emu.isa.opcodes); a class added there is decoded by :func:`decode_record` once registered."""

    @property
    def header(self) -> Header: ...

    def encode(self) -> bytes: ...


Record: TypeAlias = "S3D3TensDequant | S3DMX1Quant | RawRecord | OpcodeRecord"


class RecordClass(Protocol):
    """A record class: ``decode(64 bytes)`` gives a record of it."""

    def decode(self, data: bytes) -> OpcodeRecord: ...


#: opcode -> the class that decodes its records (every other opcode is a RawRecord); q7emu.isa.opcodes adds the
#: record class of an opcode registered there
_RECORD_CLASSES: dict[int, RecordClass] = {Opcode.TENSOR_DEQUANTIZE: S3D3TensDequant, Opcode.QUANTIZE_MX: S3DMX1Quant}


#: the environment variable naming modules that register opcodes (q7emu.isa.opcodes)
OPCODES_ENV = "Q7EMU_OPCODES"
_loaded: set[str] = set()


def load_env() -> None:
    """Import the modules ``Q7EMU_OPCODES`` names (a comma-separated list; each once), which register opcodes when
    imported (q7emu.isa.opcodes.register); InvalidArgument naming one that does not import."""
    for name in (n.strip() for n in os.environ.get(OPCODES_ENV, "").split(",")):
        if not name or name in _loaded:
            continue
        _loaded.add(name)
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise InvalidArgument(OPCODES_ENV, name, f"a module that registers opcodes must import: {e}") from None


def register_record_class(opcode: int, cls: RecordClass) -> None:
    """Decode records of ``opcode`` with ``cls`` from now on (q7emu.isa.opcodes.register calls this)."""
    _RECORD_CLASSES[int(opcode)] = cls


def decode_record(data: bytes) -> Record:
    """Decode 64 bytes by the opcode byte: 0x7B -> S3D3TensDequant, 0xE3 -> S3DMX1Quant, an opcode registered in
    q7emu.isa.opcodes -> its record class, else RawRecord."""
    d = _check_bytes(data, RECORD_SIZE, "record")
    cls = _RECORD_CLASSES.get(d[0])
    if cls is None and os.environ.get(OPCODES_ENV):     # modules that register opcodes, imported on first use
        load_env()
        cls = _RECORD_CLASSES.get(d[0])
    return cls.decode(d) if cls is not None else RawRecord.decode(d)


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
