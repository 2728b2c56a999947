"""The SBUF machine: 128 partitions of SBUF, POOL and DVE engines, kernel_info dispatch and execution.

``Machine.execute(record)`` runs one 64-byte instruction record the way the firmware does:

1. decode the 64 bytes (:func:`q7emu.isa.records.decode_record`);
2. route the opcode to its engine (0xE3 -> DVE, everything else -> POOL) and look it up in that engine's
   kernel_info table of the chosen generation; a miss raises DispatchError in the firmware's words
   (``UNKNOWN OPCODE=0x7b``). The lookup comes before validation because on the device the dispatcher's table
   scan runs before any kernel code; this is why 0x7B on SUNDA reports ``UNKNOWN OPCODE=0x7b``;
3. validate the record clause by clause (:func:`q7emu.isa.validate.validate`) and q7emu's own preconditions
   (:func:`q7emu.isa.validate.require_executable`: immediate addresses only, element limits, 0xE3 shapes);
4. call the record handler (:data:`RECORD_HANDLERS`, bound for every opcode that has a spec in
   :mod:`q7emu.isa.opcodes`) at the record's funcVA (or, where the funcVA is unknown, its key); it asks the
   record's spec for the source, gathers it over the active partitions, runs the kernel the record selects (its
   handler, its golden model with ``backend="golden"``, or a program in its place) and plans the writes where the
   spec's destination places each output part;
5. check every planned write is inside SBUF, then write. Nothing is written when any step fails.

Memory reading (docs/model.md §4): an immediate ADDR4 is a flat address, bit 25 = PSUM (an error for these ops);
partition = addr // partition_bytes, byte offset = addr % partition_bytes. A TENSOR3D addresses u32 elements
(4 little-endian bytes) at ``offset + 4 * (i0*step0 + i1*step1 + i2*step2)``, dim 0 innermost, steps signed,
step 0 broadcasts; element k of the stream is ``i0 + n0*(i1 + n1*i2)``. The same offsets apply in each of
``num_active_channels`` consecutive partitions from the start partition. When a destination pattern addresses
one byte more than once, the last element written (in stream order) wins.

How each opcode reads its source and where each output byte lands (QuantizeMX's data words and quadrant scale
rows, for instance) is its spec's: q7emu/isa/tensor_dequantize.py, q7emu/isa/quantize_mx.py.
"""
from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard

import numpy as np

from q7emu._dataclass import dataclass
from q7emu.errors import DispatchError, InternalError, InvalidArgument
from q7emu.fileio import ArrayInfo, NpzReader, UnknownFileKind, array_file_kind, open_regular, read_npy
from q7emu.isa import opcodes
from q7emu.isa.enums import Engine, Generation
from q7emu.isa.kernel_info import KernelInfoRecord, KernelInfoTable, dve_table, engine_of, pool_table
from q7emu.isa.opcode_spec import NUM_PARTITIONS as NUM_PARTITIONS
from q7emu.isa.opcode_spec import OpcodeKernel, Placement, sbuf_location
from q7emu.isa.opcode_spec import element_offsets as element_offsets
from q7emu.isa.opcodes import dispatch_key, find_spec, is_record, spec_for_opcode, spec_of, specs
from q7emu.isa.records import Record, Tensor3D, decode_record
from q7emu.isa.validate import MAX_PARTITION_BYTES, check_partition_bytes, footprint, require_executable, validate
from q7emu.kernels.tracing import PlacedRecorder, TraceRecorder
from q7emu.machine.heap import zeroed_pages
from q7emu.model.knobs import KNOBS, check_knob

if TYPE_CHECKING:       # imported where a program is used: q7emu.asm and the op tables cost a replay's start-up
    from q7emu.asm.kernels import ProgramBackend

DEFAULT_PARTITION_BYTES = 0x30000
#: knobs a Machine accepts: the knob table's machine knobs (not scale_layout: the record places the scales)
MACHINE_KNOBS: dict[str, tuple[str, ...]] = {k.name: k.values for k in KNOBS if k.machine}


@dataclass(frozen=True)
class Region:
    """A rectangle of SBUF: ``count`` partitions from ``partition``, ``length`` bytes from byte ``offset``."""

    partition: int
    count: int
    offset: int
    length: int

    def as_tuple(self) -> tuple[int, int, int, int]:
        """(partition, count, offset, length)."""
        return (self.partition, self.count, self.offset, self.length)


@dataclass
class Write:
    """A planned write: ``data`` uint8 [len(partitions), len(offsets)] to SBUF[partitions][:, offsets]."""

    partitions: np.ndarray
    offsets: np.ndarray
    data: np.ndarray

    def region(self) -> Region | None:
        """The bounding box of the bytes written, or None for an empty write."""
        if self.partitions.size == 0 or self.offsets.size == 0:
            return None
        p0, p1 = int(self.partitions.min()), int(self.partitions.max())
        o0, o1 = int(self.offsets.min()), int(self.offsets.max())
        return Region(p0, p1 - p0 + 1, o0, o1 - o0 + 1)


@dataclass
class ExecResult:
    """What one ``Machine.execute`` did. ``regions`` are the bounding boxes of the bytes written."""

    opcode: int
    engine: str
    table: str
    func_va: int
    path: str
    regions: list[Region] = field(default_factory=list)
    bytes_written: int = 0
    seconds: float = 0.0


Handler = Callable[["Machine", Record, "TraceRecorder | None"], "tuple[str, list[Write]]"]

#: Machine's partition_bytes when it is not given (the image's width, or DEFAULT_PARTITION_BYTES)
_UNSET: Any = type("Unset", (), {"__repr__": lambda self: "DEFAULT_PARTITION_BYTES"})()


#: the rule an SBUF image meets (docs/model.md §4)
SBUF_IMAGE_RULE = "sbuf must be uint8 [128, partition_bytes], partition_bytes a multiple of 4 in 4..0x40000"


def _check_sbuf_header(where: str, info: ArrayInfo) -> None:
    """Refuse an SBUF image from its .npy header, before its data is read."""
    ok = (info.dtype == np.uint8 and len(info.shape) == 2 and info.shape[0] == NUM_PARTITIONS
          and 4 <= info.shape[1] <= MAX_PARTITION_BYTES and info.shape[1] % 4 == 0)
    if not ok:
        raise InvalidArgument(where, f"{info.dtype} {info.shape}", SBUF_IMAGE_RULE)


#: a raw SBUF dump is 128 x partition_bytes bytes: these are the sizes one can have (bytes)
RAW_SBUF_SIZES = (f"a multiple of {NUM_PARTITIONS * 4} from {NUM_PARTITIONS * 4} to "
                  f"{NUM_PARTITIONS * MAX_PARTITION_BYTES}")


def _raw_fit(size: int) -> str:
    """What a raw dump of ``size`` bytes would be: ``128 x 0x6000`` or why it cannot be one."""
    pb, rest = divmod(size, NUM_PARTITIONS)
    if rest == 0 and 4 <= pb <= MAX_PARTITION_BYTES and pb % 4 == 0:
        return f"its {size} bytes would be 128 x 0x{pb:x}: --partition-bytes 0x{pb:x}"
    return f"its {size} bytes are no raw SBUF dump either (those are 128 x partition_bytes: {RAW_SBUF_SIZES} bytes)"


def _read_raw_sbuf(path: Any, partition_bytes: int) -> np.ndarray:
    """A raw SBUF dump: exactly 128 x partition_bytes bytes, partition 0 first; InvalidArgument (one line) with
    the size found and the sizes accepted otherwise."""
    need = NUM_PARTITIONS * partition_bytes
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size != need:
            pb, rest = divmod(size, NUM_PARTITIONS)
            hint = (f"; {size} bytes would be 128 x 0x{pb:x}: --partition-bytes 0x{pb:x}"
                    if rest == 0 and 4 <= pb <= MAX_PARTITION_BYTES and pb % 4 == 0 else
                    f"; a raw dump is {RAW_SBUF_SIZES} bytes")
            raise InvalidArgument(str(path), f"{size} bytes",
                                  f"a raw SBUF dump at partition_bytes 0x{partition_bytes:x} is {need} bytes "
                                  f"(128 x 0x{partition_bytes:x}){hint}")
        data = f.read(need + 1)
    if len(data) != need:
        raise InvalidArgument(str(path), f"{len(data)} bytes", f"changed size while read (expected {need})")
    return np.frombuffer(data, dtype=np.uint8).reshape(NUM_PARTITIONS, partition_bytes).copy()


def load_sbuf_image(path: Any, partition_bytes: int | None = None) -> np.ndarray:
    """An SBUF image, uint8 [128, partition_bytes]: an .npz (its array named 'sbuf', or its only array) or an
    .npy, told apart by their first bytes, or, given ``partition_bytes``, a raw dump of exactly 128 x
    partition_bytes bytes (partition 0 first; docs/limits.md §1). The array's header is checked before its data
    is read (q7emu.fileio bounded readers); an .npz / .npy image must be ``partition_bytes`` wide when it is given.
    InvalidArgument (one line) for anything else: a raw file without ``partition_bytes`` names the size that
    would read it."""
    if partition_bytes is not None:
        check_partition_bytes(partition_bytes)
    try:
        kind = array_file_kind(path, raw=partition_bytes is not None)
    except UnknownFileKind as e:
        try:
            with open_regular(path) as f:
                size = os.fstat(f.fileno()).st_size
        except OSError:
            raise e from None
        raise UnknownFileKind(path, e.head, f"{e.rule}; for a raw SBUF dump give partition_bytes "
                                             f"(--partition-bytes): {_raw_fit(size)}") from None
    if kind == "raw":
        if partition_bytes is None:
            raise InternalError(f"{path}: array_file_kind said raw when not asked for raw")
        return _read_raw_sbuf(path, partition_bytes)
    if kind == "npy":
        arr = read_npy(path, check=_check_sbuf_header)
    else:
        with NpzReader(path) as z:
            key = "sbuf" if "sbuf" in z else (z.names[0] if len(z.names) == 1 else None)
            if key is None:
                raise InvalidArgument(str(path), sorted(z.names)[:8],
                                      "needs an array named 'sbuf' (uint8 [128, partition_bytes])")
            arr = z.read(key, _check_sbuf_header)
    if partition_bytes is not None and arr.shape[1] != partition_bytes:
        raise InvalidArgument(str(path), f"uint8 {arr.shape}", f"is 0x{arr.shape[1]:x} bytes per partition, not the "
                                                               f"0x{partition_bytes:x} given")
    return arr


def region_problem(r: Region, partition_bytes: int) -> str | None:
    """Why region ``r`` does not lie inside SBUF (128 partitions x ``partition_bytes``), or None when it does.

    The rules are those of a record's access patterns (docs/model.md §4): partitions 0..127 and byte offsets
    0..partition_bytes-1, nothing negative; empty regions (count or length 0) are allowed. Python integer
    arithmetic: no overflow."""
    vals = r.as_tuple()
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in vals):
        return "partition, count, offset and length must be integers"
    p, n, off, ln = (int(v) for v in vals)
    for name, v in (("partition", p), ("count", n), ("offset", off), ("length", ln)):
        if v < 0:
            return f"{name} {v} is negative"
    if p + n > NUM_PARTITIONS:
        return f"partitions {p}..{p + n - 1} leave the 128 SBUF partitions"
    if off + ln > partition_bytes:
        return f"bytes 0x{off:x}..0x{off + ln - 1:x} leave the 0x{partition_bytes:x}-byte partition"
    return None


def check_region(r: Region, partition_bytes: int, name: str = "region") -> None:
    """InvalidArgument naming ``name`` unless region ``r`` lies inside SBUF (:func:`region_problem`)."""
    why = region_problem(r, partition_bytes)
    if why is not None:
        raise InvalidArgument(name, r.as_tuple(), f"must lie inside SBUF (128 partitions x 0x{partition_bytes:x} "
                                                  f"bytes): {why}")


def normalize_machine_knobs(knobs: Mapping[str, Any] | None) -> dict[str, str]:
    """Check knob names and values (docs/model.md §1-§2); return the full dict with defaults filled in.
    InvalidArgument (one line) for a non-mapping, an unknown name or a value that is not one of the knob's
    strings."""
    if knobs is not None and not isinstance(knobs, Mapping):
        raise InvalidArgument("knobs", type(knobs).__name__, "must be a mapping of knob names to values")
    knobs = dict(knobs or {})
    for name, value in knobs.items():
        if not isinstance(name, str) or name not in MACHINE_KNOBS:
            raise InvalidArgument("knob", name if isinstance(name, (str, int)) else type(name).__name__,
                                  f"unknown machine knob; known: {', '.join(MACHINE_KNOBS)}")
        if not isinstance(value, str):     # (an array would print over many lines; name its type instead)
            raise InvalidArgument(name, type(value).__name__,
                                  f"a knob value is a string, one of {', '.join(MACHINE_KNOBS[name])}")
    return {name: check_knob(name, knobs.get(name, vals[0]), MACHINE_KNOBS) for name, vals in MACHINE_KNOBS.items()}


#: what runs a record's kernel: "kernel", "golden" or a program (:class:`q7emu.asm.kernels.ProgramBackend`)
Backend: TypeAlias = "str | ProgramBackend"


def is_program(backend: object) -> TypeGuard[ProgramBackend]:
    """True when ``backend`` is a program (:class:`q7emu.asm.kernels.ProgramBackend`). q7emu.asm is imported only
    for a backend that is not a string: a replay on the kernels or the golden models never loads it (it and the op
    tables it reads were a sixth of a one-case replay's start-up)."""
    if isinstance(backend, str):
        return False
    from q7emu.asm.kernels import ProgramBackend

    return isinstance(backend, ProgramBackend)


def kernel_function(entry: OpcodeKernel, backend: Backend) -> Callable[..., Any]:
    """What runs a kernel on a backend: a program in its place (a :class:`q7emu.asm.kernels.ProgramBackend`,
    docs/asm.md §4.3), its Python entry (``"kernel"``; it loads the compiled extension on
    its first call, Q7Error when not built) or its golden model (``"golden"``)."""
    if is_program(backend):
        return backend.handler(entry.opcode)
    return entry.golden if backend == "golden" else entry.handler


class EngineModel:
    """One engine (POOL or DVE): its kernel_info table and the handlers q7emu binds to funcVAs."""

    def __init__(self, kind: Engine, table: KernelInfoTable, bindings: dict[int, Handler],
                 key_bindings: dict[int, Handler]) -> None:
        self.kind = kind
        self.table = table
        self.bindings = bindings          # funcVA -> handler
        self.key_bindings = key_bindings  # key word -> handler, for records whose funcVA is unknown

    def dispatch(self, opcode: int, spec: int) -> tuple[KernelInfoRecord, Handler]:
        """(kernel_info record, handler) for an opcode (and 0xF0 spec): DispatchError on a table miss
        (firmware words) or when q7emu binds no handler to the record."""
        rec = self.table.lookup(opcode, spec)
        handler = (self.bindings.get(rec.func_va) if rec.func_va_known else None) or self.key_bindings.get(rec.key)
        if handler is None:
            va = f"0x{rec.func_va:08x}" if rec.func_va_known else "an unknown funcVA"
            gen = self.table.generation.name if self.table.generation is not None else "?"
            raise DispatchError(f"opcode 0x{opcode:02x} spec {rec.spec} ({rec.name or 'unnamed'}) is registered at "
                                f"{va} in the {gen} {self.kind.value} table, but q7emu binds no handler to it")
        return rec, handler


def _engines(gen: Generation) -> tuple[EngineModel, EngineModel]:
    """The POOL and DVE engines of a generation: its kernel_info tables with the record handler bound at every
    opcode that has a spec (the same for every Machine of that generation while no opcode is registered, so built
    once: a farm builds thousands of machines)."""
    return _engines_at(gen, opcodes.version())


@functools.cache
def _engines_at(gen: Generation, opcodes_version: int) -> tuple[EngineModel, EngineModel]:
    tables = {Engine.POOL: pool_table(gen), Engine.DVE: dve_table(gen)}
    bind: dict[Engine, tuple[dict[int, Handler], dict[int, Handler]]] = {e: ({}, {}) for e in tables}
    for spec in specs():               # every opcode with a spec: the handler at the table's record
        rec = tables[spec.engine].find(spec.opcode)
        if rec is None or not spec.kernels:
            continue
        by_va, by_key = bind[spec.engine]
        if rec.func_va_known:
            by_va[rec.func_va] = RECORD_HANDLERS[spec.opcode]
        else:
            by_key[rec.key] = RECORD_HANDLERS[spec.opcode]
    return (EngineModel(Engine.POOL, tables[Engine.POOL], *bind[Engine.POOL]),
            EngineModel(Engine.DVE, tables[Engine.DVE], *bind[Engine.DVE]))


class Machine:
    """SBUF (uint8 [128, partition_bytes]) plus the POOL and DVE engines of one generation.

    ``knobs``: model knobs of docs/model.md §1-§2 (``nibble_order``, ``fp6_packing``, ``mx_layout``, ``mx_scale``,
    ``nf4_table``, ``emax``, ``underflow``, ``nonfinite``). ``backend``: "kernel" (the IVP kernels, default), "golden"
    (the golden models; used to build expected bytes of cases) or a :class:`q7emu.asm.kernels.ProgramBackend` (a
    program in the record's kernel's place, docs/asm.md §4.3). ``sbuf``: the initial SBUF, a uint8 [128,
    partition_bytes] array or an image file (:func:`load_sbuf_image`: .npz, .npy, or with ``partition_bytes`` a raw
    dump); ``partition_bytes`` not given = the image's width, or 0x30000 without an image. ``adopt``: with an array
    ``sbuf`` (writable, C-contiguous), that array is SBUF, read and written in place, not a copy (replay reuses one
    array per thread: a fresh 24 MiB SBUF costs a 24 MiB memset or its page faults per case).
    """

    def __init__(self, generation: Generation | str, partition_bytes: int = _UNSET,
                 knobs: dict[str, Any] | None = None, backend: Backend = "kernel", sbuf: Any = None, *,
                 adopt: bool = False) -> None:
        self.generation = Generation.parse(generation)
        if adopt and not (isinstance(sbuf, np.ndarray) and sbuf.flags.c_contiguous and sbuf.flags.writeable):
            raise InvalidArgument("sbuf", type(sbuf).__name__, "adopt=True takes a writable C-contiguous uint8 "
                                                               "[128, partition_bytes] array")
        image = None
        given = partition_bytes is not _UNSET
        if sbuf is not None:
            if isinstance(sbuf, np.ndarray):
                image = sbuf
                if image.dtype != np.uint8 or image.ndim != 2 or image.shape[0] != NUM_PARTITIONS:
                    raise InvalidArgument("sbuf", f"{image.dtype} {image.shape}", SBUF_IMAGE_RULE)
            else:
                image = load_sbuf_image(sbuf, check_partition_bytes(partition_bytes) if given else None)
            if not given:
                partition_bytes = image.shape[1]
            elif image.shape[1] != partition_bytes:
                raise InvalidArgument("sbuf", f"uint8 {image.shape}", f"is not 0x{partition_bytes:x} bytes per "
                                                                     "partition (partition_bytes)")
        self.partition_bytes = check_partition_bytes(partition_bytes if partition_bytes is not _UNSET
                                                     else DEFAULT_PARTITION_BYTES)
        self.knobs = normalize_machine_knobs(knobs)
        if not is_program(backend) and backend not in ("kernel", "golden"):
            raise InvalidArgument("backend", backend, "must be 'kernel', 'golden' or a program (ProgramBackend)")
        self.backend = backend
        if adopt and isinstance(image, np.ndarray):
            self.sbuf = image
        elif image is not None:                 # every byte is copied: no zeroing first
            self.sbuf = np.empty((NUM_PARTITIONS, self.partition_bytes), dtype=np.uint8)
            self.sbuf[:] = image
        else:
            self.sbuf = zeroed_pages((NUM_PARTITIONS, self.partition_bytes))
        self.pool, self.dve = _engines(self.generation)
        #: one record, load or read at a time: threads may share a machine, and each record then runs whole, on
        #: the SBUF the previous one left (docs/limits.md §4)
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ SBUF access
    def load(self, partition: int, offset: int, data: np.ndarray) -> None:
        """Copy uint8 ``data`` [count, length] (or [length] for one partition) into SBUF."""
        arr = np.asarray(data)
        if arr.dtype != np.uint8:
            raise InvalidArgument("data.dtype", str(arr.dtype), "must be uint8")
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2:
            raise InvalidArgument("data.ndim", arr.ndim, "must be 1 or 2")
        self._check_region(Region(partition, arr.shape[0], offset, arr.shape[1]))
        with self._lock:
            self.sbuf[partition:partition + arr.shape[0], offset:offset + arr.shape[1]] = arr

    def read(self, partition: int, count: int, offset: int, length: int) -> np.ndarray:
        """A copy of SBUF[partition:partition+count, offset:offset+length] (uint8)."""
        self._check_region(Region(partition, count, offset, length))
        with self._lock:
            return self.sbuf[partition:partition + count, offset:offset + length].copy()

    def _check_region(self, r: Region) -> None:
        check_region(r, self.partition_bytes)

    def source_bytes(self, t: Tensor3D, num_partitions: int) -> np.ndarray:
        """The bytes of the u32 elements addressed by ``t`` in consecutive partitions, stream order: a new
        C-contiguous uint8 [num_partitions, 4 * count], element k in bytes 4k..4k+3 (little-endian).

        One strided copy out of SBUF (a view of SBUF by the pattern's steps, which may be 0 or negative, copied
        once), never a per-byte index; the result shares no memory with SBUF, so a kernel may read (or, as the
        program interpreter does, write) it. InvalidArgument when the pattern leaves SBUF."""
        p0, off = sbuf_location("start_addr", t.start_addr, self.partition_bytes)
        fp = footprint(off, t.step_elem, t.num_elem)
        if p0 + num_partitions > NUM_PARTITIONS or (fp is not None and (fp[0] < 0 or fp[1] > self.partition_bytes)):
            raise InvalidArgument("pattern", (p0, num_partitions, fp), "gather leaves SBUF")
        n0, n1, n2 = t.num_elem
        s0, s1, s2 = t.step_elem
        out = np.empty((num_partitions, 4 * n0 * n1 * n2), dtype=np.uint8)
        if fp is None or out.size == 0:         # no element (a zero count) or no partition: nothing to read
            return out
        rows = self.sbuf[p0:p0 + num_partitions]
        # every element inside the footprint checked above: the view never reaches past SBUF's rows
        view = np.lib.stride_tricks.as_strided(
            rows[:, off:], shape=(num_partitions, n2, n1, n0, 4),
            strides=(rows.strides[0], 4 * s2, 4 * s1, 4 * s0, 1), writeable=False)
        out.reshape(num_partitions, n2, n1, n0, 4)[...] = view
        return out

    def gather(self, t: Tensor3D, num_partitions: int) -> np.ndarray:
        """u32 elements (uint32 [num_partitions, count]) addressed by ``t`` in consecutive partitions (a copy)."""
        return self.source_bytes(t, num_partitions).view("<u4").astype(np.uint32, copy=False)

    def plan_scatter(self, partitions: np.ndarray, elem_offsets: np.ndarray, values: np.ndarray,
                     elem_bytes: int) -> Write:
        """Plan writing ``values`` (uint8 [P, k*elem_bytes]) to elements at ``elem_offsets`` (int64 [k], byte
        offsets of each element's first byte, stream order); where elements overlap, the last one written wins.

        Elements at increasing, non-overlapping offsets (every record's usual destination) keep ``values`` as
        they are (no copy); otherwise each byte keeps its last value (a column gather)."""
        boffs = (elem_offsets[:, None] + np.arange(elem_bytes)).reshape(-1).astype(np.int64)
        return self.plan_placement(Placement("data", np.asarray(partitions, dtype=np.int64), boffs), values)

    def plan_placement(self, placement: Placement, part: np.ndarray) -> Write:
        """Plan writing the rows of an output ``part`` (uint8 [rows, columns]) that ``placement`` places (last
        write wins where its offsets repeat); InternalError when the part has another width than the placement."""
        rows = part if placement.rows is None else part[placement.rows]
        if placement.offsets.size != rows.shape[1]:
            raise InternalError(f"{rows.shape[1]} result bytes for {placement.offsets.size} destination bytes")
        parts = np.asarray(placement.partitions, dtype=np.int64)
        offs = placement.offsets
        if offs.size < 2 or bool(np.all(offs[1:] > offs[:-1])):   # increasing, no overlap: the bytes as they are
            return Write(parts, offs.astype(np.int64, copy=False), rows)
        offsets, columns = placement.last_columns()
        return Write(parts, offsets, rows[:, columns])

    def _commit(self, writes: Sequence[Write]) -> tuple[list[Region], int]:
        for w in writes:
            if w.partitions.size and (w.partitions.min() < 0 or w.partitions.max() >= NUM_PARTITIONS):
                raise InvalidArgument("destination partitions", (int(w.partitions.min()), int(w.partitions.max())),
                                      "leave the 128 SBUF partitions")
            if w.offsets.size and (w.offsets.min() < 0 or w.offsets.max() >= self.partition_bytes):
                raise InvalidArgument("destination bytes", (int(w.offsets.min()), int(w.offsets.max())),
                                      f"leave the partition (0..0x{self.partition_bytes:x})")
            if w.data.shape != (w.partitions.size, w.offsets.size) or w.data.dtype != np.uint8:
                raise InternalError(f"write of shape {w.data.shape} for {w.partitions.size}x{w.offsets.size}")
        regions, total = [], 0
        for w in writes:
            store_write(self.sbuf, w)
            r = w.region()
            if r is not None:
                regions.append(r)
                total += w.data.size
        return regions, total

    # ------------------------------------------------------------------ execution
    def engine_for(self, opcode: int) -> EngineModel:
        """The engine whose table dispatches ``opcode`` (0xE3 and a registered DVE opcode -> DVE, every other
        opcode -> POOL)."""
        return self.dve if engine_of(opcode) is Engine.DVE else self.pool

    def execute(self, record: bytes | bytearray | Record, trace: TraceRecorder | None = None) -> ExecResult:
        """Decode, dispatch, validate and run one 64-byte record; return what was written.

        Raises DispatchError (kernel_info miss, firmware words), ValidityError (a firmware clause),
        InvalidArgument (q7emu's own limits) or Q7Error; SBUF is untouched whenever anything is raised."""
        t0 = time.perf_counter()
        rec = decode_record(bytes(record)) if isinstance(record, (bytes, bytearray, memoryview)) else record
        if not is_record(rec):
            raise InvalidArgument("record", type(rec).__name__, "must be 64 bytes or a decoded record")
        opcode, spec = dispatch_key(rec)
        engine = self.engine_for(opcode)
        kinfo, handler = engine.dispatch(opcode, spec)
        validate(rec, self.generation, self.partition_bytes)
        require_executable(rec, self.partition_bytes)
        with self._lock:                  # the record reads and writes SBUF whole (another thread's waits)
            path, writes = handler(self, rec, trace)
            regions, total = self._commit(writes)
        return ExecResult(opcode, engine.kind.value, engine.table.name, kinfo.func_va, path, regions, total,
                          time.perf_counter() - t0)


def _as_range(values: np.ndarray) -> slice | None:
    """``values`` (int64 [n], n >= 1) as the slice of consecutive increasing integers they are, or None."""
    first = int(values[0])
    if int(values[-1]) - first != values.size - 1:
        return None
    if values.size > 2 and not bool(np.all(values[1:] - values[:-1] == 1)):
        return None
    return slice(first, first + values.size)


def byte_runs(offsets: np.ndarray) -> tuple[int, int, int, int] | None:
    """``(start, runs, length, step)`` when the strictly increasing byte offsets (int64 [n], n >= 1) are ``runs``
    runs of ``length`` consecutive bytes, run r starting at ``start + r * step`` (``step`` > ``length`` when there
    are several runs, 0 for one run); None for any other layout. Offsets that are not increasing are None."""
    steps = offsets[1:] - offsets[:-1]
    if steps.size and int(steps.min()) < 1:
        return None
    breaks = np.flatnonzero(steps != 1)
    start = int(offsets[0])
    if breaks.size == 0:
        return start, 1, int(offsets.size), 0
    length = int(breaks[0]) + 1
    runs, rest = divmod(int(offsets.size), length)
    if rest or breaks.size != runs - 1 or not bool(np.all(breaks == np.arange(1, runs) * length - 1)):
        return None
    heads = offsets[::length]
    step = int(heads[1] - heads[0])
    if not bool(np.all(heads[1:] - heads[:-1] == step)):
        return None
    return start, runs, length, step


def store_write(sbuf: np.ndarray, w: Write) -> None:
    """Store a planned write into ``sbuf`` (uint8 [128, partition_bytes]): ``sbuf[np.ix_(w.partitions,
    w.offsets)] = w.data``, the same bytes, written as a slice where the partitions are consecutive and the
    offsets one run of bytes, as a strided view where they are equal runs at a fixed step, and as a scatter
    otherwise. The write's places must already be checked (:meth:`Machine._commit`)."""
    if w.partitions.size == 0 or w.offsets.size == 0:
        return
    rows = _as_range(w.partitions)
    runs = byte_runs(w.offsets) if rows is not None else None
    if rows is None or runs is None:
        if rows is not None:
            sbuf[rows][:, w.offsets] = w.data
        else:
            sbuf[np.ix_(w.partitions, w.offsets)] = w.data
        return
    start, count, length, step = runs
    block = sbuf[rows]
    if count == 1:
        block[:, start:start + length] = w.data
        return
    # equal runs at a fixed step > length: the view's elements are distinct bytes inside the checked offsets
    view = np.lib.stride_tricks.as_strided(block[:, start:], shape=(block.shape[0], count, length),
                                           strides=(block.strides[0], step, 1))
    view[...] = w.data.reshape(block.shape[0], count, length)


# ---------------------------------------------------------------------- the record handler
def _at_partition(trace: TraceRecorder, first_partition: int) -> TraceRecorder:
    """The recorder, told that the kernel's partition 0 is SBUF partition ``first_partition`` (the record's
    first destination partition), so a trace names absolute SBUF partitions as replay does: a PlacedRecorder's view
    at that partition (the base travels with the run: threads may share the recorder); any other recorder with a
    ``partition_base`` attribute has it set (q7emu.kernels.tracing)."""
    if isinstance(trace, PlacedRecorder):
        return trace.at_partition(first_partition)
    if hasattr(trace, "partition_base"):
        trace.partition_base = first_partition
    return trace


def _run_record(m: Machine, rec: Record, trace: TraceRecorder | None) -> tuple[str, list[Write]]:
    """Any opcode with a spec (q7emu.isa.opcodes): gather its source over the active partitions, run the kernel the
    record selects on the machine's backend, and plan each output part's writes where the spec places them (in the
    spec's order: a later placement wins an overlap)."""
    spec = spec_of(rec)
    entry = spec.kernel(rec)
    if entry is None:
        raise InternalError(f"no kernel runs a valid record ({spec.describe(rec)})")
    source = spec.source(rec)
    if source.pattern.count == 0:         # nothing to read, nothing written
        return entry.name, []
    words = m.gather(source.pattern, source.partitions)
    dest = spec.destination(rec, m.partition_bytes)
    for name, addr in dest.addresses:
        sbuf_location(name, addr, m.partition_bytes)
    at = _at_partition(trace, dest.kernel_partition) if trace is not None and m.backend != "golden" else None
    parts = spec.run(rec, words, kernel_function(entry, m.backend), m.knobs, at)
    return entry.name, [m.plan_placement(pl, parts[pl.part]) for pl in dest.placements]


class _SpecHandlers(Mapping[int, Handler]):
    """opcode -> the record handler, for every opcode with a spec (q7emu.isa.opcodes, registered ones included)."""

    def __getitem__(self, opcode: int) -> Handler:
        if spec_for_opcode(opcode) is None:
            raise KeyError(opcode)
        return _run_record

    def __iter__(self) -> Iterator[int]:
        return iter([s.opcode for s in specs()])

    def __len__(self) -> int:
        return len(specs())


#: opcode -> the handler of its records (gather the source, run the kernel, plan the writes: one handler for every
#: opcode, driven by the opcode's spec); the machine binds it wherever the generation's kernel_info table registers
#: an opcode that has a spec
RECORD_HANDLERS: Mapping[int, Handler] = _SpecHandlers()


def dst_mask(record: Record, partition_bytes: int = DEFAULT_PARTITION_BYTES) -> np.ndarray | None:
    """bool [128, partition_bytes]: the bytes a valid immediate-address record may write (for checks/tests);
    None when the destination cannot be located (register form, PSUM, beyond SBUF, too large to map). All False
    for a record of an opcode without a spec (the machine refuses it)."""
    mask = np.zeros((NUM_PARTITIONS, partition_bytes), dtype=bool)
    spec = find_spec(record)
    if spec is None:
        return mask
    try:
        dest = spec.destination(record, partition_bytes)
        for name, addr in dest.addresses:
            sbuf_location(name, addr, partition_bytes)
    except InvalidArgument:
        return None
    for pl in dest.placements:
        parts = pl.partitions[(pl.partitions >= 0) & (pl.partitions < NUM_PARTITIONS)]
        offs = pl.offsets[(pl.offsets >= 0) & (pl.offsets < partition_bytes)]
        mask[np.ix_(parts, offs)] = True
    return mask
