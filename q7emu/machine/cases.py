"""Replay cases: a record, an SBUF image and the bytes the firmware is expected to write.

Case format ``q7emu-case`` version 1 — a pair of files with the same stem:

``NAME.json`` (UTF-8 JSON object)::

    {
      "format": "q7emu-case",          # required, exactly this string
      "version": 1,                     # required
      "name": "cayman_e2m1_g0",         # optional; default: the file stem
      "generation": "CAYMAN",           # SUNDA | CAYMAN | MARIANA | MARIANA_PLUS | MAVERICK
      "knobs": {"nibble_order": "low-first", ...},   # model knobs (docs/model.md §1-§2); missing = default
      "record_hex": "7b10...",          # the 64-byte instruction record, 128 hex digits
      "partition_bytes": 4096,          # SBUF bytes per partition (128 partitions)
      "fill": 0,                        # optional: byte value of SBUF outside the input regions (default 0)
      "inputs":   [{"array": "in0",  "partition": 0, "count": 8, "offset": 0,   "length": 64}, ...],
      "expected": [{"array": "exp0", "partition": 0, "count": 8, "offset": 512, "length": 128}, ...],
      "expected_error": null,           # optional: a substring of the error the record must raise instead
      "note": "free text: where the bytes come from"
    }

``NAME.npz``: one uint8 array [count, length] per region, keyed by the region's ``array`` name; its members
stored (the default: read straight into the arrays, CRC-32 checked) or deflated (``save_case(...,
compress=True)``, ``case new --compress``, and every case written before): both load.

Replay: SBUF = ``fill`` everywhere, the input regions loaded in order, the record executed, then every expected
region compared byte for byte (bytes outside the expected regions are not compared). A device dump becomes a case
by listing the regions that were loaded and the regions read back.
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

from q7emu._dataclass import dataclass
from q7emu.errors import CaseError, InternalError, InvalidArgument, ProgramError, Q7Error, first_line
from q7emu.fileio import ArrayInfo, NpzReader, atomic_write, atomic_write_text, read_json, use_crc32, write_npz
from q7emu.isa.enums import Generation
from q7emu.isa.records import RECORD_SIZE, parse_hex
from q7emu.isa.validate import check_partition_bytes
from q7emu.kernels.extension import fast_crc32
from q7emu.machine.checks import (
    bytes_read_outside,
    check_record_knobs,
    infer_partition_bytes,
    input_coverage,
    source_reads,
)
from q7emu.machine.diffs import RegionDiff, compare_regions
from q7emu.machine.heap import zeroed_pages
from q7emu.machine.machine import (
    DEFAULT_PARTITION_BYTES,
    NUM_PARTITIONS,
    Backend,
    Machine,
    Region,
    normalize_machine_knobs,
    region_problem,
)

if (_crc := fast_crc32()) is not None:       # the case reader's CRC checks at PCLMULQDQ speed (docs/limits.md §1)
    use_crc32(_crc)

CASE_FORMAT = "q7emu-case"
CASE_VERSION = 1

RegionData = tuple[Region, np.ndarray]


@dataclass
class Case:
    """An in-memory replay case (see the module docstring for the on-disk format)."""

    name: str
    generation: Generation
    record: bytes
    inputs: list[RegionData]
    expected: list[RegionData]
    knobs: dict[str, str] = field(default_factory=dict)
    partition_bytes: int = DEFAULT_PARTITION_BYTES
    fill: int = 0
    expected_error: str | None = None
    note: str = ""
    path: Path | None = None

    @property
    def opcode(self) -> int:
        """The record's opcode (byte 0)."""
        return self.record[0]

    @property
    def expected_bytes(self) -> int:
        """Bytes compared on replay: the total size of the expected regions."""
        return int(sum(a.size for _, a in self.expected))


@dataclass
class Mismatch:
    """First differing byte: SBUF partition, byte offset inside the partition, expected and actual values."""

    region: int
    partition: int
    offset: int
    expected: int
    actual: int
    count: int = 1   # number of differing bytes over all expected regions

    def describe(self) -> str:
        """One line: where the first differing byte is, both values, and how many bytes differ."""
        return (f"first mismatch: partition {self.partition}, byte 0x{self.offset:x}: expected 0x{self.expected:02x}, "
                f"actual 0x{self.actual:02x} ({self.count} byte{'s differ' if self.count != 1 else ' differs'}, "
                f"expected region {self.region})")


@dataclass
class CaseResult:
    """Outcome of one replay."""

    name: str
    """The case's name (its file's stem)."""
    path: str
    """The case's JSON file."""
    opcode: int
    """The record's opcode (0x7b, 0xe3, ...), -1 when the case could not be read or a program failed."""
    ok: bool
    """The case passes: every expected byte equal, or the error the case expects raised."""
    nbytes: int
    """Expected bytes compared (bytes)."""
    seconds: float
    """Wall-clock seconds to load, run and compare the case (time.perf_counter)."""
    mismatch: Mismatch | None = None
    """The first differing byte and the count of differing bytes, when bytes differ."""
    error: str | None = None
    """Why the case fails without a byte compare (``Type: message`` of an error it did not expect, a record that ran
    where the case expects an error, a case that could not be read), else None."""
    #: every expected region compared (bytes compared / differing per region and partition); empty when the
    #: record raised or the case file could not be read
    regions: list[RegionDiff] = field(default_factory=list)
    #: the first differing bytes with their place in the output and hexdump rows
    #: (:class:`q7emu.machine.report.ByteDiff`), when replay computed them where the case ran (it then drops
    #: the regions' ``actual`` copies, so a result holds no case data: docs/limits.md §5); None otherwise
    diffs: list[Any] | None = None
    #: where the bytes differ (``replay --json``'s ``diff_map``, ``replay --plot``: q7emu.machine.diffmap), when
    #: replay computed it where the case ran; None otherwise
    diff_map: dict[str, Any] | None = None
    #: True when replay dropped ``diffs`` and ``diff_map`` to keep its report within MAX_REPORT_DIFFS listed bytes
    #: and MAX_REPORT_MAP_ENTRIES diff-map entries (docs/limits.md §5)
    diffs_omitted: bool = False

    @property
    def status(self) -> str:
        """"PASS" or "FAIL"."""
        return "PASS" if self.ok else "FAIL"


# ---------------------------------------------------------------------- building
def _region_array(r: Any, what: str) -> RegionData:
    if isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], Region):
        reg, arr = r
    elif isinstance(r, tuple) and len(r) == 3:
        p, off, arr = r
        arr = np.asarray(arr)
        if arr.ndim == 1:
            arr = arr[None, :]
        reg = Region(int(p), arr.shape[0] if arr.ndim == 2 else -1, int(off), arr.shape[-1])
    else:
        raise CaseError(f"{what}: a region is (partition, offset, uint8 array[count, length]) or (Region, array)")
    arr = np.asarray(arr)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.dtype != np.uint8 or arr.ndim != 2 or arr.shape != (reg.count, reg.length):
        raise CaseError(f"{what}: region {reg.as_tuple()} needs a uint8 array of shape ({reg.count}, {reg.length}), "
                        f"got {arr.dtype} {arr.shape}")
    return reg, np.ascontiguousarray(arr)


def _record_bytes(record: Any) -> bytes:
    """The 64 bytes of a record given as bytes or as a decoded record (``record_from_fields(...)``,
    ``decode_record(...)``: anything with ``encode()``)."""
    if hasattr(record, "encode") and not isinstance(record, (bytes, bytearray, memoryview, str)):
        return bytes(record.encode())
    try:
        return bytes(record)
    except TypeError:
        raise CaseError(f"record: {type(record).__name__} is neither 64 bytes nor a decoded record") from None


#: an input region per contiguous run of source bytes, up to this many runs; beyond, one bounding box
MAX_IMAGE_RUNS = 64


def image_input_regions(record: bytes, generation: Generation | str, image: np.ndarray) -> list[RegionData]:
    """The input regions a record reads from an SBUF image (uint8 [128, partition_bytes]): one region per
    contiguous run of the bytes its source reads (over its active partitions), or, past :data:`MAX_IMAGE_RUNS`
    runs, their bounding box. CaseError when the record's source cannot be located at this partition size."""
    pb = image.shape[1]
    reads = source_reads(record, generation, pb)
    if reads is None:
        raise CaseError(f"--sbuf: the record's source cannot be located at partition_bytes=0x{pb:x} (it fails a "
                        "validity clause there, reads nothing or is not an immediate SBUF address); check "
                        "--partition-bytes and the record (q7emu decode)")
    offs = reads.offsets
    breaks = np.flatnonzero(np.diff(offs) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [offs.size]])
    if starts.size > MAX_IMAGE_RUNS:
        starts, ends = np.array([0]), np.array([offs.size])
    p0, n = reads.partition, reads.count
    out = []
    for a, b in zip(starts, ends):
        o0, o1 = int(offs[a]), int(offs[b - 1]) + 1
        out.append((Region(p0, n, o0, o1 - o0), np.ascontiguousarray(image[p0:p0 + n, o0:o1])))
    return out


def case_from_images(record: Any, generation: Generation | str, before: np.ndarray,
                     after: np.ndarray | None = None, *, knobs: dict[str, Any] | None = None, note: str = "",
                     name: str = "case", backend: str = "golden") -> Case:
    """A case from a device capture: the SBUF image before the record ran (uint8 [128, partition_bytes]) and,
    optionally, the image after it. The inputs are the bytes the record's source reads in ``before``
    (:func:`image_input_regions`); the expected regions are the bounding boxes the record writes (found by
    running it on ``before`` with ``backend``), read from ``after``, or, without ``after``, the bytes ``backend``
    computes. The images must have the same shape."""
    record = _record_bytes(record)
    before = np.asarray(before)
    if before.dtype != np.uint8 or before.ndim != 2 or before.shape[0] != 128:
        raise CaseError(f"--sbuf: an SBUF image is uint8 [128, partition_bytes], got {before.dtype} {before.shape}")
    if after is not None and (np.asarray(after).shape != before.shape or np.asarray(after).dtype != np.uint8):
        raise CaseError(f"--expected-sbuf: uint8 {np.asarray(after).shape} does not match the --sbuf image "
                        f"{before.shape}")
    inputs = image_input_regions(record, generation, before)
    if after is None:
        return build_case(record, generation, inputs, knobs=knobs, partition_bytes=before.shape[1], note=note,
                          name=name, backend=backend, allow_unread=True)
    probe = build_case(record, generation, inputs, [], knobs=knobs, partition_bytes=before.shape[1], note=note,
                       name=name, allow_unread=True)
    m = _prepared_machine(probe, backend=backend)
    res = m.execute(record)
    expected = [(reg, np.ascontiguousarray(np.asarray(after)[reg.partition:reg.partition + reg.count,
                                                             reg.offset:reg.offset + reg.length]))
                for reg in res.regions]
    probe.expected = expected
    return probe


def build_case(record: bytes, generation: Generation | str, inputs: Iterable[Any],
               expected: Iterable[Any] | None = None, *, knobs: dict[str, Any] | None = None,
               partition_bytes: int | None = None, fill: int = 0, note: str = "",
               name: str = "case", backend: str = "golden", allow_unread: bool = False) -> Case:
    """Build a case. ``record``: 64 bytes or a decoded record (``record_from_fields(...)``). ``inputs`` /
    ``expected``: (partition, offset, uint8 [count, length]) or (Region, array).

    Checks before anything runs (q7emu.machine.checks), each an error naming the knob or region:

    * every knob belongs to the kernel the record runs (a QuantizeMX knob on a 0x7B record is an error);
    * ``partition_bytes`` None (the default): the partition size at which the record's source reads the input
      regions, inferred from the record's flat source address (docs/model.md §4); an error when none does;
    * every input region is read completely by the record's source, and the source reads no byte that no
      input region provides, unless ``allow_unread`` (kept unread bytes are e.g. decoys between strided runs).
      Not checked when the record cannot be located statically (it then fails on execution or replay).

    When ``expected`` is None the record is executed on a Machine with ``backend`` (default: the golden
    models) and every region it writes becomes an expected region (the whole bounding box of each write,
    so bytes inside it that must stay unchanged are checked too). An execution error becomes
    ``expected_error`` only if ``expected`` is given as ``[]``; otherwise it propagates."""
    record = _record_bytes(record)
    if len(record) != RECORD_SIZE:
        raise CaseError(f"record must be {RECORD_SIZE} bytes, got {len(record)}")
    gen = Generation.parse(generation)
    if isinstance(fill, bool) or not isinstance(fill, (int, np.integer)) or not 0 <= int(fill) <= 255:
        raise CaseError(f"fill must be a byte value 0..255, got {fill!r}")
    kn = {k: v for k, v in normalize_machine_knobs(knobs).items() if knobs and k in knobs}
    check_record_knobs(kn, record)
    ins = [_region_array(r, "inputs") for r in inputs]
    regions = [reg for reg, _ in ins]
    if partition_bytes is None:
        pb = infer_partition_bytes(record, gen, regions)
        if pb is None:       # no size reads every input completely: one that reads each partly names the region
            pb = infer_partition_bytes(record, gen, regions, allow_unread=True)
        if pb is None:
            raise CaseError("partition_bytes: cannot be inferred: at no single partition size does the record's "
                            "source read every input region; give the partition size (--partition-bytes) "
                            "[docs/model.md §4]")
    else:
        pb = partition_bytes
    case = Case(name, gen, record, ins, [], kn, int(pb), int(fill), None, note)
    reads = source_reads(record, gen, case.partition_bytes)
    if reads is not None and not allow_unread:
        src = (f"at partition_bytes=0x{case.partition_bytes:x} its source reads {reads.offsets.size} bytes in "
               f"0x{int(reads.offsets[0]):x}..0x{int(reads.offsets[-1]):x} of partitions {reads.partition}.."
               f"{reads.partition + reads.count - 1}")
        for c in input_coverage(reads, regions):
            if c.read == 0:
                raise CaseError(f"{c.describe()}: the record never reads it ({src}); check the partition size, "
                                "or allow unread input (--allow-unread)")
            if not c.complete:
                raise CaseError(f"{c.describe()}: the record reads only {c.read} of its {c.size} bytes ({src}); "
                                "give only the bytes it reads, or allow unread input such as decoys between "
                                "strided runs (--allow-unread)")
        outside = bytes_read_outside(reads, regions) if regions else 0
        if outside:
            raise CaseError(f"the record reads {outside} source bytes that no input region provides ({src}; they "
                            f"would read the fill 0x{case.fill:02x}); widen the inputs, or allow it "
                            "(--allow-unread)")
    if expected is not None:
        case.expected = [_region_array(r, "expected") for r in expected]
        return case
    m = _prepared_machine(case, backend=backend)
    res = m.execute(record)
    case.expected = [(reg, m.read(*reg.as_tuple())) for reg in res.regions]
    return case


def _prepared_machine(case: Case, knobs: dict[str, Any] | None = None, backend: Backend = "kernel",
                      sbuf: np.ndarray | None = None) -> Machine:
    """A machine with the case's SBUF: ``fill`` everywhere, the inputs loaded. ``sbuf``: an array to use as SBUF
    in place (:class:`_ReusedSbuf`), already ``fill`` everywhere; by default a new one."""
    kn = dict(case.knobs)
    kn.update(knobs or {})
    if sbuf is not None:
        m = Machine(case.generation, case.partition_bytes, kn, backend=backend, sbuf=sbuf, adopt=True)
    else:
        m = Machine(case.generation, case.partition_bytes, kn, backend=backend)
        if case.fill:
            m.sbuf[:] = case.fill
    for reg, arr in case.inputs:
        m.load(reg.partition, reg.offset, arr)
    return m


class _ReusedSbuf(threading.local):
    """One SBUF array per thread that :func:`run_case` runs its cases on, one after the other: a new 128 x 0x30000
    array costs a 24 MiB memset (or 24 MiB of page faults) per case, about 1.7 ms of a full-size case; the bytes
    the last case loaded and wrote are set back to the fill instead (its input regions and the bounding boxes of
    its writes: nothing else changed, Machine.execute writes nothing when it raises). An array is handed back only
    when its case ended in a verdict; any other exit (a q7emu bug, an interrupt) drops it."""

    def __init__(self) -> None:
        self.sbuf: np.ndarray | None = None
        self.fill = 0
        self.dirty: list[Region] = []

    def take(self, partition_bytes: int, fill: int) -> np.ndarray:
        """An array uint8 [128, partition_bytes] that is ``fill`` everywhere (this thread's own until given back)."""
        sb, self.sbuf = self.sbuf, None
        if sb is None or sb.shape[1] != partition_bytes:
            return np.full((NUM_PARTITIONS, partition_bytes), fill, dtype=np.uint8) if fill else \
                zeroed_pages((NUM_PARTITIONS, partition_bytes))
        if fill != self.fill:
            sb[:] = fill
        else:
            for r in self.dirty:
                sb[r.partition:r.partition + r.count, r.offset:r.offset + r.length] = fill
        return sb

    def give_back(self, sbuf: np.ndarray, fill: int, dirty: list[Region]) -> None:
        """Keep ``sbuf`` for this thread's next case: ``fill`` everywhere but in the ``dirty`` regions."""
        self.sbuf, self.fill, self.dirty = sbuf, fill, dirty


_REUSED = _ReusedSbuf()


# ---------------------------------------------------------------------- files
def case_paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(json path, npz path) of a case given either file or the common stem."""
    p = Path(path)
    if p.suffix in (".json", ".npz"):
        p = p.with_suffix("")
    return p.with_suffix(".json"), p.with_suffix(".npz")


def save_case(case: Case, path: str | os.PathLike[str], *, compress: bool = False) -> Path:
    """Write ``case`` as ``path.json`` + ``path.npz`` (each atomically, q7emu.fileio); return the JSON path.

    The .npz's arrays are stored (uncompressed, the default: a case loads at the speed of reading its file, with
    no inflating; docs/cli.md §5) or, with ``compress``, deflated (about a quarter smaller for random codes, and
    about 5 ms of CPU per MiB of array data on every load). :func:`load_case` reads both."""
    jpath, npath = case_paths(path)
    arrays: dict[str, np.ndarray] = {}

    def regions(items: list[RegionData], prefix: str) -> list[dict[str, Any]]:
        out = []
        for i, (reg, arr) in enumerate(items):
            key = f"{prefix}{i}"
            arrays[key] = arr
            out.append({"array": key, "partition": reg.partition, "count": reg.count, "offset": reg.offset,
                        "length": reg.length})
        return out

    meta = {"format": CASE_FORMAT, "version": CASE_VERSION, "name": case.name, "generation": case.generation.name,
            "knobs": dict(case.knobs), "record_hex": case.record.hex(), "partition_bytes": case.partition_bytes,
            "fill": case.fill, "inputs": regions(case.inputs, "in"), "expected": regions(case.expected, "exp"),
            "expected_error": case.expected_error, "note": case.note}
    jpath.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(npath) as fh:        # the arrays first: the JSON is what a folder scan finds
        write_npz(fh, arrays, compress=compress)
    atomic_write_text(jpath, json.dumps(meta, indent=1) + "\n")
    case.path = jpath
    return jpath


def _need(meta: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in meta:
        raise CaseError(f"{where}: missing key {key!r}")
    v = meta[key]
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        raise CaseError(f"{where}: {key!r} has the wrong type ({type(v).__name__})")
    return v


def region_error(reg: Region, partition_bytes: int, where: str) -> CaseError | None:
    """The CaseError of a region that leaves SBUF (the rules of a record's access patterns,
    :func:`q7emu.machine.machine.region_problem`), naming it; None when it lies inside."""
    why = region_problem(reg, partition_bytes)
    if why is None:
        return None
    p, n, off, ln = reg.as_tuple()
    return CaseError(f"{where}: region (partition {p}, count {n}, offset {off}, length {ln}) must lie inside SBUF "
                     f"(128 partitions x 0x{partition_bytes:x} bytes): {why}")


def check_case_regions(case: Case) -> None:
    """CaseError naming the first input or expected region of ``case`` that leaves its SBUF, or whose array
    does not have the region's shape."""
    where = str(case.path or case.name)
    for key, items in (("inputs", case.inputs), ("expected", case.expected)):
        for i, item in enumerate(items):
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Region)):
                raise CaseError(f"{where}: {key}[{i}]: must be a (Region, uint8 array) pair")
            reg, arr = item
            err = region_error(reg, case.partition_bytes, f"{where}: {key}[{i}]")
            if err is not None:
                raise err
            if getattr(arr, "shape", None) != (reg.count, reg.length) or getattr(arr, "dtype", None) != np.uint8:
                raise CaseError(f"{where}: {key}[{i}]: region {reg.as_tuple()} needs a uint8 array of shape "
                                f"({reg.count}, {reg.length})")


def _meta_regions(meta: dict[str, Any], key: str, pb: int, where: str) -> list[tuple[Region, str, str]]:
    """(region, array name, where) of each region listed under ``key``, each checked against SBUF."""
    items = _need(meta, key, list, where) if key in meta else []
    out = []
    for i, r in enumerate(items):
        w = f"{where}: {key}[{i}]"
        if not isinstance(r, dict):
            raise CaseError(f"{w}: must be an object")
        reg = Region(*(_need(r, k, int, w) for k in ("partition", "count", "offset", "length")))
        err = region_error(reg, pb, w)
        if err is not None:
            raise err
        out.append((reg, _need(r, "array", str, w), w))
    return out


def _read_case_arrays(npath: Path, listed: dict[str, list[tuple[Region, str, str]]]
                      ) -> dict[str, list[RegionData]]:
    """The arrays a case's regions name (``listed``: per key, (region, array name, where)), read from its .npz, each
    checked against its region before it is inflated and read once however many regions name it; CaseError (one
    line) naming the region or the file."""
    regions: dict[str, list[RegionData]] = {"inputs": [], "expected": []}
    try:
        with NpzReader(npath) as z:
            seen: dict[str, np.ndarray] = {}     # each array is read (inflated) once, however many regions name it
            for key, items in listed.items():
                for reg, name, w in items:
                    if name not in z:
                        raise CaseError(f"{w}: array {name!r} not in {npath.name}")

                    def fits(member: str, info: ArrayInfo, reg: Region = reg, w: str = w) -> None:
                        if info.dtype != np.uint8 or info.shape != (reg.count, reg.length):
                            raise CaseError(f"{w}: region {reg.as_tuple()} needs a uint8 array of shape "
                                            f"({reg.count}, {reg.length}), got {info.dtype} {info.shape}")
                    if name in seen:
                        arr = seen[name]
                        fits(name, ArrayInfo(arr.shape, arr.dtype, False, arr.nbytes, 0))
                    else:
                        arr = seen[name] = z.read(name, fits)
                    regions[key].append((reg, arr))
    except FileNotFoundError:
        raise CaseError(f"{npath}: array file missing") from None
    except (OSError, InvalidArgument) as e:
        raise CaseError(f"{npath}: not a readable .npz ({first_line(e)})") from None
    return regions


def load_case(path: str | os.PathLike[str]) -> Case:
    """Read a case (``NAME.json`` / ``NAME.npz`` / the stem). Raises CaseError (one line) when malformed.

    Both files are read with the bounds of :mod:`q7emu.fileio` (docs/limits.md §1): regular files only, the
    JSON's size and depth limited, and of the .npz only the arrays the regions name, each checked against its
    region (uint8 [count, length]) from its header before its data is inflated. Every region must lie inside
    SBUF (128 partitions x partition_bytes), as a record's access patterns must."""
    jpath, npath = case_paths(path)
    where = str(jpath)
    try:
        meta = read_json(jpath)
    except FileNotFoundError:
        raise CaseError(f"{where}: no such case file") from None
    except (OSError, InvalidArgument) as e:
        raise CaseError(f"{where}: not a readable JSON case ({first_line(e)})") from None
    if not isinstance(meta, dict) or meta.get("format") != CASE_FORMAT:
        raise CaseError(f"{where}: not a {CASE_FORMAT} file")
    if meta.get("version") != CASE_VERSION:
        raise CaseError(f"{where}: unsupported case version {meta.get('version')!r} (this q7emu reads {CASE_VERSION})")
    try:
        gen = Generation.parse(_need(meta, "generation", str, where))
        record = parse_hex(_need(meta, "record_hex", str, where))
        if len(record) != RECORD_SIZE:
            raise CaseError(f"{where}: record_hex holds {len(record)} bytes, not {RECORD_SIZE}")
        knobs = _need(meta, "knobs", dict, where) if "knobs" in meta else {}
        normalize_machine_knobs(knobs)
        pb = _need(meta, "partition_bytes", int, where) if "partition_bytes" in meta else DEFAULT_PARTITION_BYTES
        check_partition_bytes(pb)
        fill = meta.get("fill", 0) or 0
        if isinstance(fill, bool) or not isinstance(fill, int) or not 0 <= fill <= 255:
            raise CaseError(f"{where}: fill must be a byte value 0..255")
    except Q7Error as e:
        if isinstance(e, CaseError):
            raise
        raise CaseError(f"{where}: {first_line(e)}") from None
    listed = {key: _meta_regions(meta, key, pb, where) for key in ("inputs", "expected")}
    err = meta.get("expected_error")
    if err is not None and not isinstance(err, str):
        raise CaseError(f"{where}: expected_error must be a string or null")
    note = meta.get("note", "")

    regions = _read_case_arrays(npath, listed) if any(listed.values()) else {"inputs": [], "expected": []}
    return Case(str(meta.get("name") or jpath.stem), gen, record, regions["inputs"], regions["expected"],
                dict(knobs), pb, fill, err, str(note), jpath)


# ---------------------------------------------------------------------- running
def compare(expected: Sequence[RegionData], sbuf: np.ndarray) -> Mismatch | None:
    """First differing byte over the expected regions, in region order then partition then byte."""
    return first_mismatch(expected, compare_regions(expected, sbuf))


def first_mismatch(expected: Sequence[RegionData], diffs: Sequence[RegionDiff]) -> Mismatch | None:
    """The :class:`Mismatch` of a comparison (:func:`q7emu.machine.diffs.compare_regions`), or None."""
    total = sum(d.differing for d in diffs)
    for (reg, exp), d in zip(expected, diffs):
        if d.differing and d.actual is not None:
            r, c = (int(x) for x in np.argwhere(d.actual != exp)[0])
            return Mismatch(d.index, reg.partition + r, reg.offset + c, int(exp[r, c]), int(d.actual[r, c]), total)
    return None


def error_outcome(case: Case, error: Q7Error) -> tuple[bool, str | None]:
    """(ok, error text) of a replay whose record raised ``error``: ok when the case expects an error whose
    text contains its ``expected_error``; the error text (``Type: message``) is None when ok."""
    ok = case.expected_error is not None and case.expected_error in str(error)
    return ok, None if ok else f"{type(error).__name__}: {error}"


def ran_outcome(case: Case) -> str | None:
    """The failure of a replay whose record ran without error: None, or the error the case expected."""
    if case.expected_error is None:
        return None
    return f"expected an error containing {case.expected_error!r}, but the record ran"


#: the prefix of the error of a case whose program (replay --program) stopped on an error (docs/asm.md §4.5)
PROGRAM_ERROR = "ProgramError:"


def run_case(case: Case, knobs: dict[str, Any] | None = None, backend: Backend = "kernel") -> CaseResult:
    """Replay one case. ``knobs`` override the case's knobs. Never raises for a failing record: the error
    becomes the result (PASS only if the case has a matching ``expected_error``)."""
    t0 = time.perf_counter()
    path = str(case.path) if case.path else case.name
    try:
        check_case_regions(case)          # a malformed case fails whatever error it expects
    except CaseError as e:
        return CaseResult(case.name, path, case.opcode, False, 0, time.perf_counter() - t0,
                          error=f"CaseError: {e}")
    sbuf = _REUSED.take(case.partition_bytes, case.fill)
    dirty = [reg for reg, _ in case.inputs]
    try:
        m = _prepared_machine(case, knobs, backend, sbuf)
        dirty += m.execute(case.record).regions
    except InternalError:
        raise                             # a q7emu bug is not the case's outcome: the replay reports it as such
    except ProgramError as e:             # the program in the kernel's place is bad input, not a verdict: ERROR
        return CaseResult(case.name, path, -1, False, 0, time.perf_counter() - t0,   # (exit 2; docs/asm.md §4.5)
                          error=f"{PROGRAM_ERROR} {e}")
    except Q7Error as e:
        _REUSED.give_back(sbuf, case.fill, dirty)       # (nothing written: the inputs at most)
        ok, err = error_outcome(case, e)
        return CaseResult(case.name, path, case.opcode, ok, case.expected_bytes, time.perf_counter() - t0,
                          error=err)
    try:
        return _ran_result(case, m, path, t0)
    finally:
        _REUSED.give_back(sbuf, case.fill, dirty)


def _ran_result(case: Case, m: Machine, path: str, t0: float) -> CaseResult:
    """The result of a case whose record ran on ``m``: its expected regions compared (copies of the differing
    regions' bytes kept, never a view of SBUF)."""
    err = ran_outcome(case)
    if err is not None:
        return CaseResult(case.name, path, case.opcode, False, case.expected_bytes, time.perf_counter() - t0,
                          error=err)
    diffs = compare_regions(case.expected, m.sbuf)
    mm = first_mismatch(case.expected, diffs)
    return CaseResult(case.name, path, case.opcode, mm is None, case.expected_bytes, time.perf_counter() - t0, mm,
                      regions=diffs)
