"""Lane-level traces of the emulated kernels: record, store, stream, export, show and diff.

Recording
---------
Pass a :class:`Recorder` as ``trace=`` to :func:`q7emu.dequantize`, :func:`q7emu.quantize_mx` or
``Machine.execute``. The kernel's TracerP specialisation (src/trace/q7trace.pxd) records every executed
primitive that passes the recorder's filters, all applied inside the recorder, so nothing outside them is
stored:

* ``window=(lo, hi)``: sequence numbers ``lo <= seq < hi`` (64-bit; every executed primitive counts);
* ``partitions=[(lo, hi), ...]``: absolute SBUF partitions (``partition_base`` + the kernel's partition
  index; the CLI sets the base to the record's destination partition, as ``replay`` reports them);
* ``bundles=[...]``: bundle indices of the kernel listing; ``ops=[...]``: mnemonics (at most 64).

``Recorder()`` keeps the compact blocks in memory (``recorder.trace`` decodes them into a :class:`Trace`);
``Recorder(path=FILE)`` streams them to a ``.q7t`` file while the kernel runs (memory stays bounded) and
``recorder.close()`` finishes the file atomically.

A record holds: run index (one per kernel call), sequence number (counts every executed primitive of the
run, across partitions), absolute partition, kernel id (:class:`q7emu.model.kernels.KernelId`: 1
proc_4bit_non_mx, 2 proc_4bit_mx_8, 3 proc_6bit_non_mx, 4 quantize_mx), bundle index in the kernel listing
(``B<n>`` in src/kernels/_dequant.pyx / src/kernels/_quantize_mx.pyx), mnemonic and its operands. An operand
has kind (vec, wvec, vbool, pr, scalar), role (src = value before the op, dst = after), register index (255
immediate, 254 memory offset, 253 length for scalars), lane view and its bytes (vec 64, wvec 192 = the raw
architectural image, vbool 8, pr 8, scalar 8 = int64). Readers reconstruct every operand: ``show``,
``diff`` and the JSON Lines export see the same operands as a full-operand recording.

In memory (:class:`Trace`) the records are numpy structured arrays:

``records`` (:data:`RECORD_DTYPE`, one row per record, in recording order)::

    run u4, seq u8, partition u4, kernel u1, bundle u2, op S32 (mnemonic of 1..31 characters, NUL padded),
    n_operands u1, operand0 u8 (index of the record's first row in ``operands``)

``operands`` (:data:`OPERAND_DTYPE`, one row per operand, grouped by record in order)::

    record u8 (row in ``records``), kind u1 (1 vec 2 wvec 3 vbool 4 pr 5 scalar), role u1 (0 src 1 dst),
    reg u1, view u1 (:data:`VIEWS` index), nbytes u4, offset u8 (into ``data``)

``data``: uint8 blob, every operand's bytes concatenated in operand order.

Binary trace file, ``.q7t`` format ``q7emu-trace`` version 2 (docs/traces.md §2-§3 has the byte layout):
a preamble (magic ``b"Q7TRACE\\0"``, u32 version, a JSON header), then compressed blocks (each framed with
``b"Q7BK"``, its compressed and raw lengths and a CRC-32), then a JSON footer (the runs, the block index
with each block's file offset, record count and sequence range, the op-name table of each run) and a
32-byte trailer (``b"Q7TEND\\0\\0"``, the footer's offset, length and CRC-32, the record count). A block
holds up to 16384 records: the register state a reader knows at its start, the records (bundle, op id,
operand count), the operand descriptors (register, view, kind, role, explicit), events (a sequence jump or a
partition change at a record) and the explicit operand bytes. An operand is explicit when its bytes differ
from the register's last known value; otherwise the reader takes that value. Version 1 files (one JSON
header, then the three arrays above uncompressed) are still read. Files are written to a temporary file and
renamed when complete; readers check the trailer, every CRC and every record count and refuse a partial or
damaged file with one line. The same trace always gives the same file bytes.

JSON Lines export (``.jsonl``; format ``q7emu-trace-jsonl`` version 1): line 1 is the header object
(``{"format": "q7emu-trace-jsonl", "version": 1, "q7emu_version": ..., "case": ..., "runs": [...]}``), then
one object per op::

    {"run": 0, "seq": 13, "partition": 0, "kernel": "proc_4bit_non_mx", "bundle": 1, "op": "lav2nx8_xp",
     "operands": [{"role": "src", "kind": "scalar", "reg": 254, "view": "scalar", "lanes": ["0000000000000000"]},
                  {"role": "dst", "kind": "vec", "reg": 20, "view": "2nx8", "lanes": ["12", "34", ...]}]}

``lanes`` are lane 0 first, each a fixed-width hex string (no ``0x``) of the lane's bits in the named view:
2nx8 64 x 8, nx16 / nxf16 32 x 16, n_2x32 / n_2xf32 16 x 32, w24 64 x 24, w48 32 x 48, w96 16 x 96 bits,
vb8 / vb16 / vb32 64 / 32 / 16 lanes of 1 / 2 / 4 predicate bits (lane k = bits [kW/8, (k+1)W/8) of the
64-bit vbool), pr and scalar one 64-bit lane. Export then import gives back the identical records, the
identical JSON Lines text and the identical ``.q7t`` bytes. A trace converted from another tool needs only
``op`` and ``operands`` per line; ``seq`` defaults to the line's index, ``run``/``partition`` to 0,
``bundle`` to 65535 (unknown), ``reg`` to 255, ``view`` to the kind's default; ``kernel`` may be a name or id.

Text log (:class:`LogWriter`, ``q7emu trace --log FILE|-``): one line per op, streamed while the kernel runs,
the way Spike's ``--log-commits`` and QEMU's execlog plugin print them::

    <seq> p<partition> B<bundle> <mnemonic> <operand>=<lanes hex, lane 0 first, '_' between lanes> ...

(a source operand is written ``name=...``, a destination ``name<=...``; scalars in decimal).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from q7emu._version import __version__
from q7emu.errors import InvalidArgument, Q7Error
from q7emu.fileio import atomic_write, json_depth, limit, named_os_error, open_regular
from q7emu.model.kernels import KernelId

# ---------------------------------------------------------------------- record layout (q7trace.pxd)
#: a mnemonic field (the recorder's name table, the raw record header, RECORD_DTYPE's ``op``): a mnemonic of
#: 1..NAME_BYTES - 1 ASCII characters, NUL-padded (Q7_NAME_BYTES in src/trace/q7trace.pxd)
NAME_BYTES = 32
MAX_MNEMONIC = NAME_BYTES - 1
OP_DTYPE = f"S{NAME_BYTES}"
HEADER_BYTES = 16 + NAME_BYTES
OPERAND_HEADER_BYTES = 8
KINDS = {1: "vec", 2: "wvec", 3: "vbool", 4: "pr", 5: "scalar"}
KIND_IDS = {v: k for k, v in KINDS.items()}
ROLES = {0: "src", 1: "dst"}
ROLE_IDS = {v: k for k, v in ROLES.items()}
#: view index -> (name, lane bits); order of the VIEW_* enum in src/trace/q7trace.pxd
VIEWS: list[tuple[str, int]] = [("2nx8", 8), ("nx16", 16), ("n_2x32", 32), ("nxf16", 16), ("n_2xf32", 32),
                                ("w24", 24), ("w48", 48), ("w96", 96), ("vb8", 1), ("vb16", 2), ("vb32", 4),
                                ("pr", 64), ("scalar", 64)]
VIEW_IDS = {name: i for i, (name, _) in enumerate(VIEWS)}
KIND_BYTES = {1: 64, 2: 192, 3: 8, 4: 8, 5: 8}
DEFAULT_VIEW = {1: "2nx8", 2: "w48", 3: "vb8", 4: "pr", 5: "scalar"}
#: kernel id of the record format -> kernel name, and back (q7emu.model.kernels.KernelId; 0 = not given)
KERNELS: dict[int, str] = {int(k): k.kernel for k in KernelId}
KERNEL_IDS: dict[str, int] = {v: k for k, v in KERNELS.items()}
SCALAR_REGS = {255: "imm", 254: "off", 253: "len"}
REG_PREFIX = {1: "v", 2: "wv", 3: "vb", 4: "pr"}
UNKNOWN_BUNDLE = 0xFFFF
U64_MAX = (1 << 64) - 1

RECORD_DTYPE = np.dtype([("run", "<u4"), ("seq", "<u8"), ("partition", "<u4"), ("kernel", "u1"),
                         ("bundle", "<u2"), ("op", OP_DTYPE), ("n_operands", "u1"), ("operand0", "<u8")])
OPERAND_DTYPE = np.dtype([("record", "<u8"), ("kind", "u1"), ("role", "u1"), ("reg", "u1"), ("view", "u1"),
                          ("nbytes", "<u4"), ("offset", "<u8")])
#: the arrays of a version 1 file (its op field is 16 bytes: widened to RECORD_DTYPE's on reading)
V1_RECORD_DTYPE = np.dtype([("run", "<u2"), ("seq", "<u4"), ("partition", "<u4"), ("kernel", "u1"),
                            ("bundle", "<u2"), ("op", "S16"), ("n_operands", "u1"), ("operand0", "<u4")])
V1_OPERAND_DTYPE = np.dtype([("record", "<u4"), ("kind", "u1"), ("role", "u1"), ("reg", "u1"), ("view", "u1"),
                             ("nbytes", "<u4"), ("offset", "<u8")])

MAGIC = b"Q7TRACE\0"
END_MAGIC = b"Q7TEND\0\0"
FRAME_MAGIC = b"Q7BK"
BLOCK_MAGIC = b"Q7B2"
FILE_FORMAT = "q7emu-trace"
FILE_VERSION = 2
READ_VERSIONS = (1, 2)
JSONL_FORMAT = "q7emu-trace-jsonl"
JSONL_VERSION = 1
CODEC = "zlib"
CODEC_LEVEL = 1
#: the operand convention a run was recorded under (each run's "operand_order", docs/traces.md §1.4): the C
#: intrinsics' argument order (a two-register source high half first; dual selects (odd, even)), and the name a run
#: without the field gets: q7emu's earlier order (low half first; dual selects (even, odd))
OPERAND_ORDER = "c-intrinsic"
LEGACY_OPERAND_ORDER = "q7emu-legacy"
OPERAND_ORDERS = {
    OPERAND_ORDER: "the C intrinsics' operand order (a two-register source high half first)",
    LEGACY_OPERAND_ORDER: "q7emu's earlier operand order (a two-register source low half first)",
}
MAX_OPS_FILTER = 64      # the kernels keep at most 64 mnemonics in the op filter
MAX_PARTITION_RANGES = 64
KERNEL_ONLY_OPS = ("lv2nx8_i", "dextrprn_2x32", "extrprn_2x32")

# ---------------------------------------------------------------------- v2 block layout (q7trace.pxd)
BLOCK_HEADER = struct.Struct("<4sIQIIIIIII20x")       # 64 bytes
SNAP_BYTES = 3072
SNAP_BASE = {1: 0, 2: 2048, 3: 2816, 4: 2944}          # shadow offset of register 0 of each kind
SNAP_REGS = {1: 32, 2: 4, 3: 16, 4: 16}                # registers of each kind the shadow tracks
BLK_RECORDS = 16384
BLK_OPERANDS = 65536
BLK_EVENTS = 4096
BLK_DATA = 1 << 20
MAX_OP_DATA = 2048
MAX_OP_OPERANDS = 16
MAX_NAMES = 256
EV_SEQ, EV_PARTITION, EV_KERNEL = 1, 2, 3
FRAME = struct.Struct("<4sIII")                         # magic, compressed length, raw length, crc32
TRAILER = struct.Struct("<8sQIIQ")                      # 32 bytes
PREAMBLE = struct.Struct("<8sII")
EVENT_DTYPE = np.dtype([("record", "<u4"), ("kind", "<u4"), ("value", "<u8")])

# ---------------------------------------------------------------------- reading limits (hostile input)
MAX_JSON_DEPTH = 32
MAX_HEADER_BYTES = 1 << 20
MAX_FOOTER_BYTES = 256 << 20
MAX_JSONL_LINE = 16 << 20
MAX_RAW_BLOCK = 64 + SNAP_BYTES + 4 * BLK_RECORDS + 4 * BLK_OPERANDS + 16 * BLK_EVENTS + BLK_DATA
MAX_V1_BYTES = 4 << 30
#: seqs of differing records a diff keeps (its JSON lists 1000 and says whether there were more)
MAX_DIFF_SEQS = 1001


class TraceError(Q7Error):
    """A malformed, partial or damaged trace file, JSON Lines line or raw record stream."""


def known_mnemonics() -> set[str]:
    """Every mnemonic a kernel can record (the IVP primitive table plus the kernel-only loads)."""
    try:
        from q7emu.primitives import ivp
        names = {r[0] for r in ivp.list()}
    except ImportError:         # pure-Python use (no build): accept any name
        return set()
    return names | set(KERNEL_ONLY_OPS)


# ---------------------------------------------------------------------- bounded JSON


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_loads(text: str | bytes, where: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that refuses NaN / Infinity and nesting deeper than ``max_depth`` (TraceError)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise TraceError(f"{where}: not UTF-8 ({e.reason} at byte {e.start})") from None
    if json_depth(text, stop=max_depth) > max_depth:        # linear time (q7emu.fileio)
        raise TraceError(f"{where}: JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        raise TraceError(f"{where}: not valid JSON ({e})") from None


def _int(obj: Any, key: str, where: str, lo: int = 0, hi: int = U64_MAX, default: Any = None) -> int:
    """``obj[key]`` as an int in lo..hi (a bool is not an int), or ``default`` when absent and given."""
    if not isinstance(obj, dict):
        raise TraceError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if key not in obj and default is not None:
        return default
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise TraceError(f"{where}: {key!r} must be an integer, got {type(v).__name__}")
    if not lo <= v <= hi:
        raise TraceError(f"{where}: {key!r} = {v} outside {lo}..{hi}")
    return v


# ---------------------------------------------------------------------- lanes
def lane_layout(view: int, nbytes: int) -> tuple[int, int]:
    """(lane count, lane bits) of an operand of ``nbytes`` bytes in view index ``view``."""
    if not 0 <= view < len(VIEWS):
        raise TraceError(f"unknown lane view {view}")
    bits = VIEWS[view][1]
    if nbytes <= 0 or (8 * nbytes) % bits:
        raise TraceError(f"view {VIEWS[view][0]} does not divide {nbytes} bytes")
    return 8 * nbytes // bits, bits


def lanes_int(buf: bytes, view: int) -> list[int]:
    """The lanes of an operand's bytes as unsigned ints (lane 0 first)."""
    n, bits = lane_layout(view, len(buf))
    x = int.from_bytes(buf, "little")
    mask = (1 << bits) - 1
    return [(x >> (bits * k)) & mask for k in range(n)]


def lanes_hex(buf: bytes, view: int) -> list[str]:
    """The lanes as fixed-width hex strings (lane 0 first)."""
    n, bits = lane_layout(view, len(buf))
    if bits % 8 == 0:
        w = bits // 8
        arr = np.frombuffer(buf, np.uint8).reshape(n, w)[:, ::-1]
        h = arr.tobytes().hex()
        d = 2 * w
        return [h[i:i + d] for i in range(0, len(h), d)]
    digits = (bits + 3) // 4
    return [format(v, f"0{digits}x") for v in lanes_int(buf, view)]


def bytes_from_lanes(lanes: Sequence[str], view: int, nbytes: int | None = None) -> bytes:
    """Inverse of :func:`lanes_hex`."""
    if not 0 <= view < len(VIEWS):
        raise TraceError(f"unknown lane view {view}")
    bits = VIEWS[view][1]
    total = len(lanes) * bits
    if total % 8 or total == 0 or (nbytes is not None and total != 8 * nbytes):
        raise TraceError(f"{len(lanes)} lanes of {bits} bits in view {VIEWS[view][0]} do not make "
                         f"{nbytes if nbytes is not None else 'whole'} bytes")
    if not all(isinstance(s, str) for s in lanes):
        raise TraceError("lanes must be hex strings")
    if bits % 8 == 0:
        w = bits // 8
        try:
            raw = bytes.fromhex("".join(s.rjust(2 * w, "0") if 0 < len(s) <= 2 * w and s.isascii() else "!"
                                        for s in lanes))
        except ValueError:
            raise TraceError(f"bad hex lane in view {VIEWS[view][0]} (each lane 1 to {2 * w} hex digits)") from None
        return np.frombuffer(raw, np.uint8).reshape(len(lanes), w)[:, ::-1].tobytes()
    x = 0
    for k, s in enumerate(lanes):
        if not (0 < len(s) <= 16 and s.isascii()):
            raise TraceError(f"bad hex lane {s[:20]!r}")
        try:
            v = int(s, 16)
        except ValueError:
            raise TraceError(f"bad hex lane {s!r}") from None
        if v >> bits or s.startswith(("-", "+", "0x", "0X")) or "_" in s or not s.strip() == s:
            raise TraceError(f"lane {k} value {s} does not fit {bits} bits (view {VIEWS[view][0]})")
        x |= v << (bits * k)
    return x.to_bytes(total // 8, "little")


def operand_name(kind: int, reg: int) -> str:
    """``v20``, ``wv2``, ``vb4``, ``pr1``, or ``imm`` / ``off`` / ``len`` for scalars."""
    if kind == 5:
        return SCALAR_REGS.get(reg, f"a{reg}")
    if reg == 255:
        return f"{KINDS.get(kind, '?')}?"
    return f"{REG_PREFIX.get(kind, '?')}{reg}"


def _slot(kind: int, reg: int) -> int:
    """Offset of a register in the recorder's shadow (docs/traces.md §3.2), -1 when it is not tracked."""
    base = SNAP_BASE.get(kind)
    if base is None or reg >= SNAP_REGS[kind]:
        return -1
    return base + KIND_BYTES[kind] * reg


# ---------------------------------------------------------------------- vectorised byte moves
def _rows(arr: np.ndarray, w: int, writeable: bool = False) -> np.ndarray:
    """Overlapping [len - w + 1, w] byte-window view of a 1-D uint8 array: row p = arr[p:p + w]."""
    return np.lib.stride_tricks.as_strided(arr, shape=(max(arr.size - w + 1, 0), w), strides=(1, 1),
                                           writeable=writeable)


def _move_segments(src: np.ndarray, src_pos: np.ndarray, dst: np.ndarray, dst_pos: np.ndarray,
                   widths: np.ndarray) -> None:
    """dst[dst_pos[i]:+widths[i]] = src[src_pos[i]:+widths[i]] for every i (vectorised per distinct width)."""
    for w in np.unique(widths):
        w = int(w)
        if w == 0:
            continue
        s = np.nonzero(widths == w)[0]
        _rows(dst, w, writeable=True)[dst_pos[s]] = _rows(src, w)[src_pos[s]]


def _u(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros(pos.shape, np.uint64)
    for j in range(width):
        out |= buf[pos + j].astype(np.uint64) << np.uint64(8 * j)
    return out


# ---------------------------------------------------------------------- the full-operand raw stream
def parse_raw(raw: bytes | bytearray | memoryview, run: int = 0
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Full-operand raw records (src/trace/q7trace.pxd MODE_LEGACY layout; ``run(..., trace=True)``) ->
    (records, operands, data); ``operands.offset`` index ``data``. The layout's seq is 32-bit."""
    raw = bytes(raw)
    n = len(raw)
    starts: list[int] = []
    unpack = struct.Struct("<I").unpack_from
    off = 0
    while off < n:
        if off + HEADER_BYTES > n:
            raise TraceError(f"raw trace truncated at byte {off} (record header)")
        rb = unpack(raw, off + 8)[0]
        if rb < HEADER_BYTES or off + rb > n:
            raise TraceError(f"raw trace: bad record length {rb} at byte {off}")
        starts.append(off)
        off += rb
    buf = np.frombuffer(raw, np.uint8)
    st = np.asarray(starts, np.int64)
    nrec = st.size
    rec = np.zeros(nrec, RECORD_DTYPE)
    if nrec == 0:
        return rec, np.zeros(0, OPERAND_DTYPE), np.zeros(0, np.uint8)
    rec["run"] = run
    rec["seq"] = _u(buf, st, 4)
    rec["bundle"] = _u(buf, st + 4, 2)
    rec["kernel"] = buf[st + 6]
    rec["n_operands"] = buf[st + 7]
    rec["partition"] = _u(buf, st + 12, 4)
    rec["op"] = buf[st[:, None] + np.arange(16, HEADER_BYTES)].view(OP_DTYPE).reshape(nrec)
    rlen = _u(buf, st + 8, 4).astype(np.int64)
    nops = rec["n_operands"].astype(np.int64)
    # operands: walk k = 0, 1, ... over every record that has a k-th operand (vectorised over records)
    rows_rec, rows_pos = [], []
    pos = st + HEADER_BYTES
    for k in range(int(nops.max())):
        sel = np.nonzero(nops > k)[0]
        p = pos[sel]
        if (p + OPERAND_HEADER_BYTES > (st + rlen)[sel]).any():
            raise TraceError("raw trace: an operand header runs past its record")
        rows_rec.append(sel)
        rows_pos.append(p)
        pos[sel] = p + OPERAND_HEADER_BYTES + _u(buf, p + 4, 4).astype(np.int64)
    if not np.array_equal(pos, st + rlen):
        bad = int(np.nonzero(pos != st + rlen)[0][0])
        raise TraceError(f"raw trace: record {bad} (byte {int(st[bad])}) operands do not fill its length")
    if rows_rec:
        orec = np.concatenate(rows_rec)
        opos = np.concatenate(rows_pos)
        order = np.lexsort((opos, orec))
        orec, opos = orec[order], opos[order]
    else:
        orec = opos = np.zeros(0, np.int64)
    ops = np.zeros(orec.size, OPERAND_DTYPE)
    ops["record"] = orec
    ops["kind"] = buf[opos]
    ops["role"] = buf[opos + 1]
    ops["reg"] = buf[opos + 2]
    ops["view"] = buf[opos + 3]
    nb = _u(buf, opos + 4, 4).astype(np.int64)
    ops["nbytes"] = nb
    ops["offset"] = np.cumsum(nb) - nb
    data = np.zeros(int(nb.sum()), np.uint8)
    _move_segments(buf, opos + OPERAND_HEADER_BYTES, data, ops["offset"].astype(np.int64), nb)
    cnt = np.bincount(orec, minlength=nrec) if orec.size else np.zeros(nrec, np.int64)
    rec["operand0"] = np.cumsum(cnt) - cnt
    return rec, ops, data


# ---------------------------------------------------------------------- v2 blocks: decoding
@dataclass
class Block:
    """One decoded v2 block: its records, operands and (reconstructed) operand bytes, in :class:`Trace`'s
    array layout with ``operand0`` / ``record`` / ``offset`` relative to the block. ``complete`` is False
    for a skeleton block (profiles), whose register operands carry no bytes (``nbytes`` 0)."""

    records: np.ndarray
    operands: np.ndarray
    data: np.ndarray
    complete: bool = True
    op_id: np.ndarray | None = None        # per record: index into ``names`` (decoded blocks)
    names: Sequence[str] | None = None


def decode_block(raw: bytes | memoryview, names: Sequence[str], run: int = 0, where: str = "block",
                 values: bool = True) -> Block:
    """Decode one raw v2 block (docs/traces.md §3) of run ``run`` whose op ids index ``names``.

    Every size, count, id and offset is checked before use (TraceError naming ``where``). With ``values``
    False the register operands' bytes are not reconstructed (cheaper; the profile needs only the op
    stream, the operand descriptors and the scalars)."""
    raw = memoryview(raw).cast("B")
    if len(raw) < BLOCK_HEADER.size:
        raise TraceError(f"{where}: block of {len(raw)} bytes is shorter than its header")
    magic, flags, first_seq, part0, kern0, nrec, nopd, nev, dlen, snap = BLOCK_HEADER.unpack_from(raw, 0)
    if magic != BLOCK_MAGIC or flags > 1 or snap != SNAP_BYTES:
        raise TraceError(f"{where}: not a q7emu trace block (magic {bytes(magic)!r}, flags {flags}, snapshot {snap})")
    if nrec > BLK_RECORDS or nopd > BLK_OPERANDS or nev > BLK_EVENTS or dlen > BLK_DATA + MAX_OP_DATA or nrec == 0:
        raise TraceError(f"{where}: block counts out of range ({nrec} records, {nopd} operands, {nev} events, "
                         f"{dlen} data bytes)")
    o_recs = BLOCK_HEADER.size + SNAP_BYTES
    o_opds = o_recs + 4 * nrec
    o_evs = o_opds + 4 * nopd
    o_data = o_evs + 16 * nev
    if o_data + dlen != len(raw):
        raise TraceError(f"{where}: block is {len(raw)} bytes, its header says {o_data + dlen}")
    if kern0 > 255 or first_seq + nrec - 1 > U64_MAX:
        raise TraceError(f"{where}: bad block header (kernel {kern0}, first seq {first_seq})")
    skeleton = bool(flags & 1)
    snapshot = np.frombuffer(raw, np.uint8, SNAP_BYTES, BLOCK_HEADER.size)
    recs = np.frombuffer(raw, "<u4", nrec, o_recs).astype(np.int64)
    opds = np.frombuffer(raw, "<u4", nopd, o_opds).astype(np.int64)
    evs = np.frombuffer(raw, EVENT_DTYPE, nev, o_evs)
    data = np.frombuffer(raw, np.uint8, dlen, o_data)
    op_id = (recs >> 16) & 0xFF
    nops = recs >> 24
    if int(op_id.max()) >= len(names):
        raise TraceError(f"{where}: op id {int(op_id.max())} outside the run's {len(names)} mnemonics")
    if int(nops.sum()) != nopd:
        raise TraceError(f"{where}: records name {int(nops.sum())} operands, the block has {nopd}")
    # per-record run / seq / partition / kernel from the header and the events
    seq = np.arange(nrec, dtype=np.uint64) + np.uint64(first_seq)
    part = np.full(nrec, part0, np.uint32)
    kern = np.full(nrec, kern0, np.uint8)
    if nev:
        at = evs["record"].astype(np.int64)
        if (at == 0).any() or (at >= nrec).any() or (np.diff(at) < 0).any():
            raise TraceError(f"{where}: event record indices not in 1..{nrec - 1} ascending")
        for kind in (EV_SEQ, EV_PARTITION, EV_KERNEL):
            sel = np.nonzero(evs["kind"] == kind)[0]
            if not sel.size:
                continue
            idx = at[sel]
            if (np.diff(idx) <= 0).any():
                raise TraceError(f"{where}: two events of one kind at the same record")
            val = evs["value"][sel]
            seg = np.searchsorted(idx, np.arange(nrec), side="right") - 1     # last event at or before
            has = seg >= 0
            if kind == EV_SEQ:
                base = np.where(has, val[np.maximum(seg, 0)], np.uint64(first_seq))
                start = np.where(has, idx[np.maximum(seg, 0)], 0).astype(np.uint64)
                seq = base + (np.arange(nrec, dtype=np.uint64) - start)
            elif kind == EV_PARTITION:
                if (val > 0xFFFFFFFF).any():
                    raise TraceError(f"{where}: partition event out of range")
                part = np.where(has, val[np.maximum(seg, 0)], part0).astype(np.uint32)
            else:
                if (val > 255).any():
                    raise TraceError(f"{where}: kernel event out of range")
                kern = np.where(has, val[np.maximum(seg, 0)], kern0).astype(np.uint8)
        bad = set(evs["kind"].tolist()) - {EV_SEQ, EV_PARTITION, EV_KERNEL}
        if bad:
            raise TraceError(f"{where}: unknown event kind {min(bad)}")
    if nrec > 1 and (seq[1:] <= seq[:-1]).any():
        raise TraceError(f"{where}: sequence numbers do not increase")
    rec = np.zeros(nrec, RECORD_DTYPE)
    rec["run"] = run
    rec["seq"] = seq
    rec["partition"] = part
    rec["kernel"] = kern
    rec["bundle"] = recs & 0xFFFF
    rec["op"] = np.array([n.encode() for n in names], OP_DTYPE)[op_id]
    rec["n_operands"] = nops
    rec["operand0"] = np.cumsum(nops) - nops
    # operand descriptors
    kind = (opds >> 16) & 0xF
    view = (opds >> 8) & 0xFF
    explicit = (opds >> 21) & 1
    if (opds >> 22).any() or ((kind < 1) | (kind > 5)).any() or (view >= len(VIEWS)).any():
        raise TraceError(f"{where}: bad operand descriptor")
    reg = opds & 0xFF
    nb = np.array([0, 64, 192, 8, 8, 8], np.int64)[kind]
    ops = np.zeros(nopd, OPERAND_DTYPE)
    ops["record"] = np.repeat(np.arange(nrec), nops)
    ops["kind"] = kind
    ops["role"] = (opds >> 20) & 1
    ops["reg"] = reg
    ops["view"] = view
    eb = nb * explicit
    if int(eb.sum()) != dlen:
        raise TraceError(f"{where}: explicit operands need {int(eb.sum())} data bytes, the block has {dlen}")
    if skeleton and ((explicit == 1) & (kind != 5)).any():
        raise TraceError(f"{where}: a skeleton block with register bytes")
    eoff = np.cumsum(eb) - eb                          # offset of each explicit operand's bytes in data
    slot = np.full(nopd, -1, np.int64)
    for k, base in SNAP_BASE.items():
        sel = (kind == k) & (reg < SNAP_REGS[k])
        slot[sel] = base + KIND_BYTES[k] * reg[sel]
    if ((slot < 0) & (explicit == 0)).any():
        raise TraceError(f"{where}: an implicit operand of a register the format does not track")
    if skeleton or not values:
        keep = kind == 5                               # scalars only
        nb_out = np.where(keep, nb, 0)
        ops["nbytes"] = nb_out
        ops["offset"] = np.cumsum(nb_out) - nb_out
        out = np.zeros(int(nb_out.sum()), np.uint8)
        _move_segments(data, eoff[keep], out, ops["offset"][keep].astype(np.int64), nb[keep])
        return Block(rec, ops, out, complete=False, op_id=op_id, names=names)
    # reconstruct implicit operands: the last explicit operand of the same register before it, else the snapshot
    src = np.where(explicit == 1, eoff, -1)
    imp = np.nonzero(explicit == 0)[0]
    if imp.size:
        tracked = np.nonzero(slot >= 0)[0]
        order = tracked[np.lexsort((tracked, slot[tracked]))]          # by register, then operand order
        gid = np.cumsum(np.concatenate(([0], np.diff(slot[order]) != 0)))
        big = np.int64(nopd + 1)
        pos = np.arange(order.size, dtype=np.int64)
        v = np.where(explicit[order] == 1, pos, -1) + 1 + gid * big
        last = np.maximum.accumulate(v) - gid * big - 1                  # sorted position of the last explicit
        from_row = np.where(last >= 0, order[np.maximum(last, 0)], -1)
        src_row = np.full(nopd, -1, np.int64)
        src_row[order] = from_row
        r = src_row[imp]
        src[imp] = np.where(r >= 0, eoff[np.maximum(r, 0)], dlen + slot[imp])
    pool = np.concatenate((data, snapshot))
    ops["nbytes"] = nb
    ops["offset"] = np.cumsum(nb) - nb
    out = np.zeros(int(nb.sum()), np.uint8)
    _move_segments(pool, src, out, ops["offset"].astype(np.int64), nb)
    return Block(rec, ops, out, op_id=op_id, names=names)


def block_stats(raw: bytes | memoryview) -> dict[str, int]:
    """Header facts of a raw block without decoding it: records, operands, first / last seq and partition."""
    raw = memoryview(raw).cast("B")
    _m, _f, first_seq, part0, _k, nrec, nopd, nev, _d, snap = BLOCK_HEADER.unpack_from(raw, 0)
    o_evs = BLOCK_HEADER.size + snap + 4 * nrec + 4 * nopd
    evs = np.frombuffer(raw, EVENT_DTYPE, nev, o_evs)
    last_seq, last_part = first_seq + nrec - 1, part0
    sq = np.nonzero(evs["kind"] == EV_SEQ)[0]
    if sq.size:
        last_seq = int(evs["value"][sq[-1]]) + (nrec - 1 - int(evs["record"][sq[-1]]))
    pt = np.nonzero(evs["kind"] == EV_PARTITION)[0]
    if pt.size:
        last_part = int(evs["value"][pt[-1]])
    return {"records": nrec, "operands": nopd, "first_seq": first_seq, "last_seq": last_seq,
            "first_partition": part0, "last_partition": last_part}


# ---------------------------------------------------------------------- v2 blocks: encoding (import)
class BlockEncoder:
    """The compact encoder of src/trace/q7trace.pxd in Python (used by ``trace import`` and
    :meth:`Trace.save`): the same shadow, the same flush rule and the same byte layout, so a trace encoded
    here and the kernel's own recording of it are the same bytes. ``emit(raw_block)`` receives each block."""

    def __init__(self, emit: Callable[[bytes], None], kernel: int = 0) -> None:
        self.emit = emit
        self.kernel = kernel
        self.shadow = bytearray(SNAP_BYTES)
        self.names: dict[bytes, int] = {}
        self._reset()
        self.next_seq = 0
        self.rec_partition = 0
        self.rec_kernel = kernel

    def _reset(self) -> None:
        self.recs: list[int] = []
        self.opds: list[int] = []
        self.evs: list[tuple[int, int, int]] = []
        self.data = bytearray()
        self.first_seq = self.partition0 = 0
        self.kernel0 = self.kernel
        self.snapshot = b""

    def add(self, seq: int, partition: int, kernel: int, bundle: int, op: bytes,
            operands: Sequence[tuple[int, int, int, int, bytes]]) -> None:
        """One record: ``operands`` = (kind, role, reg, view, bytes) in recorded order."""
        op_id = self.names.get(op)
        if op_id is None:
            if not 0 < len(op) <= MAX_MNEMONIC or not op.isascii() or b"\0" in op:
                raise TraceError(f"'op' {op[:40].decode('ascii', 'replace')!r} is not a mnemonic of "
                                 f"1..{MAX_MNEMONIC} ASCII characters")
            if len(self.names) >= MAX_NAMES:
                raise TraceError(f"more than {MAX_NAMES} distinct mnemonics in one run")
            op_id = self.names[op] = len(self.names)
        if len(operands) > 255:
            raise TraceError("a record has more than 255 operands")
        if (len(self.recs) >= BLK_RECORDS or len(self.opds) > BLK_OPERANDS - MAX_OP_OPERANDS
                or len(self.evs) > BLK_EVENTS - 2 or (kernel != self.rec_kernel and len(self.evs) > BLK_EVENTS - 3)
                or len(self.data) > BLK_DATA - MAX_OP_DATA
                or len(self.opds) + len(operands) > BLK_OPERANDS
                or len(self.data) + sum(len(o[4]) for o in operands) > BLK_DATA + MAX_OP_DATA):
            self.flush()
        n = len(self.recs)
        if n == 0:
            self.first_seq, self.partition0, self.kernel0 = seq, partition, kernel
            self.snapshot = bytes(self.shadow)
        else:
            if seq != self.next_seq:
                self.evs.append((n, EV_SEQ, seq))
            if partition != self.rec_partition:
                self.evs.append((n, EV_PARTITION, partition))
            if kernel != self.rec_kernel:
                self.evs.append((n, EV_KERNEL, kernel))
        self.next_seq, self.rec_partition, self.rec_kernel = seq + 1, partition, kernel
        self.recs.append((bundle & 0xFFFF) | (op_id << 16) | (len(operands) << 24))
        sh = self.shadow
        for kind, role, reg, view, data in operands:
            s = _slot(kind, reg)
            explicit = 1
            if s >= 0:
                nb = KIND_BYTES[kind]
                if sh[s:s + nb] == data:
                    explicit = 0
                else:
                    sh[s:s + nb] = data
            self.opds.append(reg | (view << 8) | (kind << 16) | (role << 20) | (explicit << 21))
            if explicit:
                self.data += data

    def flush(self) -> None:
        """Emit the open block (if any) and start an empty one."""
        if not self.recs:
            return
        head = BLOCK_HEADER.pack(BLOCK_MAGIC, 0, self.first_seq, self.partition0, self.kernel0, len(self.recs),
                                 len(self.opds), len(self.evs), len(self.data), SNAP_BYTES)
        ev = np.array(self.evs, EVENT_DTYPE) if self.evs else np.zeros(0, EVENT_DTYPE)
        self.emit(b"".join((head, self.snapshot, np.array(self.recs, "<u4").tobytes(),
                            np.array(self.opds, "<u4").tobytes(), ev.tobytes(), bytes(self.data))))
        self._reset()

    def op_names(self) -> list[str]:
        """The run's op-name table (op id order)."""
        return [n.decode("ascii", "replace") for n in self.names]


# ---------------------------------------------------------------------- the trace (in memory)
@dataclass
class Operand:
    """One operand of one record (a view of the trace's arrays)."""

    index: int
    kind: int
    role: int
    reg: int
    view: int
    data: bytes

    @property
    def kind_name(self) -> str:
        """vec / wvec / vbool / pr / scalar."""
        return KINDS.get(self.kind, str(self.kind))

    @property
    def role_name(self) -> str:
        """src (value before the op) or dst (after)."""
        return ROLES.get(self.role, str(self.role))

    @property
    def view_name(self) -> str:
        """The lane view (2nx8, nx16, ..., scalar)."""
        return VIEWS[self.view][0] if 0 <= self.view < len(VIEWS) else str(self.view)

    @property
    def name(self) -> str:
        """The register's name (v23, wv1, vb0, pr1, imm / off / len)."""
        return operand_name(self.kind, self.reg)

    def lanes(self) -> list[int]:
        """The lane values (lane 0 first) in the operand's view, as ints."""
        return lanes_int(self.data, self.view)

    def lanes_hex(self) -> list[str]:
        """The lane values as fixed-width hex strings (lane 0 first)."""
        return lanes_hex(self.data, self.view)

    def describe(self) -> str:
        """One line: index, role, kind, register and view."""
        return f"operand {self.index} ({self.role_name} {self.kind_name} {self.name}, view {self.view_name})"


@dataclass
class Op:
    """One record: a primitive executed by a kernel."""

    index: int
    run: int
    seq: int
    partition: int
    kernel: int
    bundle: int
    op: str
    operands: list[Operand]

    @property
    def kernel_name(self) -> str:
        """The kernel's name from its KernelId (``kernel<n>`` for an id no kernel has)."""
        return KERNELS.get(self.kernel, f"kernel{self.kernel}")

    def describe(self) -> str:
        """One line: seq, run, partition, kernel, bundle and mnemonic."""
        b = "B?" if self.bundle == UNKNOWN_BUNDLE else f"B{self.bundle}"
        return f"seq {self.seq} (run {self.run}, partition {self.partition}, {self.kernel_name} {b} {self.op})"


def format_op(op: Op, lanes: tuple[int | None, int | None] | None = None, per_row: int | None = None) -> str:
    """One record in its operands' lane views (hex lanes; ``lanes`` = [lo, hi) lane filter)."""
    b = "B?" if op.bundle == UNKNOWN_BUNDLE else f"B{op.bundle}"
    lines = [f"#{op.seq:<6} {b:<4} {op.op:<15} run {op.run} p{op.partition} {op.kernel_name}"]
    for o in op.operands:
        label = f"  {o.role_name} {o.name:<5} {o.view_name:<7}"
        if not o.data:
            lines.append(f"{label} (not recorded)")
            continue
        hx = o.lanes_hex()
        if o.kind == 5:
            v = int.from_bytes(o.data, "little", signed=True)
            lines.append(f"{label} 0x{hx[0]} ({v})")
            continue
        lo, hi = (lanes or (None, None))
        lo = 0 if lo is None else max(0, lo)
        hi = len(hx) if hi is None else min(len(hx), hi)
        if lo >= hi:
            lines.append(f"{label} (no lanes in {lo}:{hi}; {len(hx)} lanes)")
            continue
        width = len(hx[0])
        pr = per_row or max(1, min(16, 64 // (width + 1)))
        first = True
        for s in range(lo, hi, pr):
            chunk = " ".join(hx[s:min(hi, s + pr)])
            lines.append(f"{label if first else ' ' * len(label)} [{s:>2}] {chunk}")
            first = False
    return "\n".join(lines)


def op_json(op: Op) -> dict[str, Any]:
    """A record as its JSON Lines object (lanes as hex strings)."""
    return {"run": op.run, "seq": op.seq, "partition": op.partition,
            "kernel": KERNELS.get(op.kernel, op.kernel),
            "bundle": op.bundle, "op": op.op,
            "operands": [{"role": o.role_name, "kind": o.kind_name, "reg": o.reg, "view": o.view_name,
                          "lanes": o.lanes_hex() if o.data else []} for o in op.operands]}


def _jsonl_header(case: str, runs: list[dict[str, Any]], q7emu_version: str) -> str:
    head = {"format": JSONL_FORMAT, "version": JSONL_VERSION, "q7emu_version": q7emu_version,
            "case": case, "runs": runs}
    return json.dumps(head, separators=(",", ":"))


class Trace:
    """A lane-level trace in memory (see the module docstring for the arrays and file formats).

    Fine for the traces of small runs and for tests; a trace of a whole-SBUF instruction is read block by
    block with :class:`TraceFile` instead (``q7emu trace show / diff / export`` do)."""

    def __init__(self, records: np.ndarray | None = None, operands: np.ndarray | None = None,
                 data: np.ndarray | None = None, runs: list[dict[str, Any]] | None = None,
                 case: str = "", q7emu_version: str = __version__) -> None:
        self.records = _as_dtype(records, RECORD_DTYPE)
        self.operands = _as_dtype(operands, OPERAND_DTYPE)
        self.data = data if data is not None else np.zeros(0, np.uint8)
        # a run built in memory without an operand convention holds this q7emu's records (docs/traces.md §1.4)
        self.runs = [r if "operand_order" in r else dict(r, operand_order=OPERAND_ORDER) for r in runs or []]
        self.case = case
        self.q7emu_version = q7emu_version

    # ------------------------------------------------------------------ building
    @classmethod
    def from_runs(cls, runs: Sequence[tuple[bytes, dict[str, Any]]], case: str = "") -> Trace:
        """Build from (full-operand raw bytes, run info) pairs, run info as in the file footer's ``runs``."""
        parts, infos = [], []
        for i, (raw, info) in enumerate(runs):
            r, o, d = parse_raw(raw, run=i)
            parts.append(Block(r, o, d))
            infos.append(dict(info, records=int(r.size)))
        return cls.concat(parts, infos, case)

    @classmethod
    def concat(cls, blocks: Sequence[Block], runs: list[dict[str, Any]], case: str = "",
               q7emu_version: str = __version__) -> Trace:
        """Join decoded blocks (in order) into one trace."""
        if not blocks:
            return cls(runs=runs, case=case, q7emu_version=q7emu_version)
        nrec = np.cumsum([0] + [b.records.size for b in blocks])
        nops = np.cumsum([0] + [b.operands.size for b in blocks])
        ndat = np.cumsum([0] + [b.data.size for b in blocks])
        rec = np.concatenate([b.records for b in blocks])
        ops = np.concatenate([b.operands for b in blocks])
        rec["operand0"] += np.repeat(nops[:-1], [b.records.size for b in blocks]).astype(np.uint64)
        ops["record"] += np.repeat(nrec[:-1], [b.operands.size for b in blocks]).astype(np.uint64)
        ops["offset"] += np.repeat(ndat[:-1], [b.operands.size for b in blocks]).astype(np.uint64)
        return cls(rec, ops, np.concatenate([b.data for b in blocks]), runs, case, q7emu_version)

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return int(self.records.size)

    def __iter__(self) -> Iterator[Op]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, i: int) -> Op:
        r = self.records[i]
        k0 = int(r["operand0"])
        ops = []
        for j in range(int(r["n_operands"])):
            o = self.operands[k0 + j]
            off, nb = int(o["offset"]), int(o["nbytes"])
            ops.append(Operand(j, int(o["kind"]), int(o["role"]), int(o["reg"]), int(o["view"]),
                               self.data[off:off + nb].tobytes()))
        return Op(int(i), int(r["run"]), int(r["seq"]), int(r["partition"]), int(r["kernel"]), int(r["bundle"]),
                  r["op"].decode("ascii", "replace"), ops)

    def mnemonics(self) -> list[str]:
        """The mnemonic of every record, in order."""
        return [m.decode("ascii", "replace") for m in self.records["op"]]

    def op_counts(self) -> dict[str, int]:
        """Records per mnemonic, most frequent first (ties by name)."""
        names, counts = np.unique(self.records["op"], return_counts=True)
        pairs = sorted(((n.decode(), int(c)) for n, c in zip(names, counts)), key=lambda t: (-t[1], t[0]))
        return dict(pairs)

    def select(self, op: Iterable[str] | str | None = None, seq: tuple[int | None, int | None] | None = None
               ) -> np.ndarray:
        """Row indices of the records whose mnemonic is in ``op`` and whose seq is in [lo, hi)."""
        keep = np.ones(len(self), bool)
        if op:
            names = [op] if isinstance(op, str) else list(op)
            keep &= np.isin(self.records["op"], np.array([n.encode() for n in names], OP_DTYPE))
        if seq is not None:
            lo, hi = seq
            if lo is not None:
                keep &= self.records["seq"] >= np.uint64(lo)
            if hi is not None:
                keep &= self.records["seq"] < np.uint64(hi)
        return np.nonzero(keep)[0]

    def subset(self, rows: np.ndarray) -> Trace:
        """A new trace holding only records ``rows`` (operands and data compacted)."""
        rows = np.asarray(rows, np.int64)
        rec = self.records[rows].copy()
        first = rec["operand0"].astype(np.int64)
        cnt = rec["n_operands"].astype(np.int64)
        oidx = np.repeat(first, cnt) + (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        ops = self.operands[oidx].copy()
        ops["record"] = np.repeat(np.arange(rows.size), cnt)
        rec["operand0"] = np.cumsum(cnt) - cnt
        nb = ops["nbytes"].astype(np.int64)
        newoff = np.cumsum(nb) - nb
        data = np.zeros(int(nb.sum()), np.uint8)
        _move_segments(self.data, ops["offset"].astype(np.int64), data, newoff, nb)
        ops["offset"] = newoff
        return Trace(rec, ops, data, self.runs, self.case, self.q7emu_version)

    # ------------------------------------------------------------------ the full-operand raw stream
    def record_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(start byte of every record, start byte of every operand header) in :meth:`to_raw`'s stream."""
        nb = self.operands["nbytes"].astype(np.int64)
        osz = OPERAND_HEADER_BYTES + nb
        ocum = np.concatenate(([0], np.cumsum(osz)))
        recidx = self.operands["record"].astype(np.int64)
        first = self.records["operand0"].astype(np.int64)
        rstart = HEADER_BYTES * np.arange(len(self), dtype=np.int64) + ocum[first] if len(self) else \
            np.zeros(0, np.int64)
        opos = HEADER_BYTES * (recidx + 1) + ocum[:-1]
        return rstart, opos

    def to_raw(self, run: int | None = None) -> bytes:
        """The full-operand raw record stream (src/trace/q7trace.pxd MODE_LEGACY layout, seq truncated to
        32 bits) of every run, or of one run."""
        t = self if run is None else self.subset(np.nonzero(self.records["run"] == run)[0])
        n = len(t)
        if n == 0:
            return b""
        rstart, opos = t.record_bounds()
        nb = t.operands["nbytes"].astype(np.int64)
        total = n * HEADER_BYTES + int((OPERAND_HEADER_BYTES + nb).sum())
        out = np.zeros(total, np.uint8)
        r = t.records
        rend = np.concatenate((rstart[1:], [total]))

        def put(pos: np.ndarray, vals: np.ndarray, width: int) -> None:
            v = vals.astype(np.uint64)
            for j in range(width):
                out[pos + j] = ((v >> np.uint64(8 * j)) & np.uint64(0xFF)).astype(np.uint8)

        put(rstart, r["seq"], 4)
        put(rstart + 4, r["bundle"], 2)
        out[rstart + 6] = r["kernel"]
        out[rstart + 7] = r["n_operands"]
        put(rstart + 8, rend - rstart, 4)
        put(rstart + 12, r["partition"], 4)
        out[rstart[:, None] + np.arange(16, HEADER_BYTES)] = \
            np.ascontiguousarray(r["op"]).view(np.uint8).reshape(n, NAME_BYTES)
        o = t.operands
        if o.size:
            out[opos] = o["kind"]
            out[opos + 1] = o["role"]
            out[opos + 2] = o["reg"]
            out[opos + 3] = o["view"]
            put(opos + 4, nb, 4)
            _move_segments(t.data, o["offset"].astype(np.int64), out, opos + OPERAND_HEADER_BYTES, nb)
        return out.tobytes()

    # ------------------------------------------------------------------ the binary file
    def encode_runs(self) -> Iterator[tuple[int, dict[str, Any], list[str], list[bytes]]]:
        """(run index, run info, op names, raw v2 blocks) of every run, encoded as the kernel recorder does."""
        r = self.records
        runs = self.runs or [{}]
        nrun = max(len(runs), int(r["run"].max()) + 1 if len(self) else 0)
        order = np.argsort(r["run"], kind="stable")        # the rows of each run, found once (not per run)
        starts = np.searchsorted(r["run"][order], np.arange(nrun + 1, dtype=np.int64))
        for i in range(nrun):
            rows = order[starts[i]:starts[i + 1]]
            blocks: list[bytes] = []
            info = dict(runs[i]) if i < len(runs) else {}
            enc = BlockEncoder(blocks.append, int(info.get("kernel_id", 0) or 0))
            for row in rows.tolist():
                op = self[row]
                if len(op.operands) > 255:
                    raise TraceError(f"record {row}: more than 255 operands")
                ops = []
                for o in op.operands:
                    if o.kind not in KIND_BYTES or len(o.data) != KIND_BYTES[o.kind]:
                        raise TraceError(f"record {row}: {o.describe()} of {len(o.data)} bytes cannot be stored")
                    ops.append((o.kind, o.role, o.reg, o.view, o.data))
                enc.add(op.seq, op.partition, op.kernel, op.bundle, op.op.encode(), ops)
            enc.flush()
            info["records"] = int(rows.size)
            yield i, info, enc.op_names(), blocks

    def save(self, path: str | os.PathLike) -> Path:
        """Write the ``.q7t`` v2 file atomically; returns the path."""
        with TraceWriter(path, case=self.case, q7emu_version=self.q7emu_version) as w:
            for i, info, names, blocks in self.encode_runs():
                w.begin_run(info)
                for b in blocks:
                    w.add_block(i, b)
                w.end_run(i, {"records": info["records"]}, names)
        return Path(path)

    def to_bytes(self) -> bytes:
        """The ``.q7t`` v2 file bytes (deterministic: the same trace always gives the same bytes)."""
        buf = io.BytesIO()
        w = TraceWriter(buf, case=self.case, q7emu_version=self.q7emu_version)
        for i, info, names, blocks in self.encode_runs():
            w.begin_run(info)
            for b in blocks:
                w.add_block(i, b)
            w.end_run(i, {"records": info["records"]}, names)
        w.close()
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes, where: str = "trace") -> Trace:
        """Parse ``.q7t`` file bytes (version 1 or 2); TraceError naming ``where`` when malformed."""
        return TraceFile(io.BytesIO(blob), where=where).read()

    @classmethod
    def load(cls, path: str | os.PathLike) -> Trace:
        """Read a binary trace file (v1 or v2), or a JSON Lines export (detected by its first byte)."""
        with TraceFile(path) as f:
            return f.read()

    def validate(self, where: str = "trace") -> None:
        """Check the arrays are consistent (operand ranges, offsets, lane layouts)."""
        r, o = self.records, self.operands
        cnt = r["n_operands"].astype(np.int64)
        if int(cnt.sum()) != o.size:
            raise TraceError(f"{where}: records name {int(cnt.sum())} operands, the operand table has {o.size}")
        if r.size and not np.array_equal(r["operand0"].astype(np.int64), np.cumsum(cnt) - cnt):
            raise TraceError(f"{where}: records' operand0 indices are not contiguous")
        if not o.size and self.data.size:
            raise TraceError(f"{where}: data blob without operands")
        if r.size and int(r["run"].max()) >= max(len(self.runs), r.size):   # saving makes one entry per run index
            raise TraceError(f"{where}: run index {int(r['run'].max())} beyond the {len(self.runs)} runs listed "
                             f"and the {r.size} records (docs/traces.md §4)")
        if o.size:
            if not np.array_equal(o["record"].astype(np.int64), np.repeat(np.arange(r.size), cnt)):
                raise TraceError(f"{where}: operand rows do not follow their records")
            nb = o["nbytes"].astype(np.int64)
            if not np.array_equal(o["offset"].astype(np.int64), np.cumsum(nb) - nb) or int(nb.sum()) != self.data.size:
                raise TraceError(f"{where}: operand data must fill the data blob in operand order")
            if (o["view"] >= len(VIEWS)).any():
                raise TraceError(f"{where}: unknown lane view index")
            bits = np.array([b for _, b in VIEWS], np.int64)[o["view"].astype(np.int64)]
            if ((nb == 0) | ((8 * nb) % bits != 0)).any():
                raise TraceError(f"{where}: an operand's bytes do not fill whole lanes of its view")

    # ------------------------------------------------------------------ show and JSON Lines
    def format_op(self, op: int | Op, lanes: tuple[int | None, int | None] | None = None,
                  per_row: int | None = None) -> str:
        """One record (its index in this trace, or an :class:`Op` taken from it) in its operands' lane views
        (hex lanes; ``lanes`` = [lo, hi) lane filter)."""
        return format_op(op if isinstance(op, Op) else self[op], lanes, per_row)

    def show(self, op: Iterable[str] | str | None = None, seq: tuple[int | None, int | None] | None = None,
             lanes: tuple[int | None, int | None] | None = None) -> Iterator[str]:
        """The formatted records selected by mnemonic / seq range, lanes limited to ``lanes``."""
        for i in self.select(op, seq):
            yield self.format_op(int(i), lanes)

    def op_json(self, i: int) -> dict[str, Any]:
        """Record ``i`` as its JSON Lines object (lanes as hex strings)."""
        return op_json(self[i])

    def iter_jsonl(self) -> Iterator[str]:
        """The JSON Lines text: the header line, then one line per record (no newlines)."""
        yield _jsonl_header(self.case, self.runs, self.q7emu_version)
        for i in range(len(self)):
            yield json.dumps(self.op_json(i), separators=(",", ":"))

    def to_jsonl(self, dest: str | os.PathLike | IO[str]) -> None:
        """Write the JSON Lines form to a path (atomically) or a text stream."""
        if isinstance(dest, (str, os.PathLike)):
            with atomic_write(dest, "w", newline="\n") as fh:
                self.to_jsonl(fh)
            return
        for line in self.iter_jsonl():
            dest.write(line + "\n")

    @classmethod
    def from_jsonl(cls, src: str | os.PathLike | IO[str], where: str | None = None) -> Trace:
        """Read a JSON Lines trace (a path or a text stream); TraceError naming ``where`` and the line."""
        if isinstance(src, (str, os.PathLike)):
            try:
                with _open_text(src) as fh:
                    return cls.from_jsonl(fh, where=str(src))
            except UnicodeDecodeError as e:
                raise TraceError(f"{src}: not UTF-8 text ({e.reason})") from None
        reader = JsonlReader(src, where or "jsonl")
        blocks = list(reader.blocks())
        t = cls.concat(blocks, reader.runs(), reader.case, reader.q7emu_version)
        t.validate(reader.where)
        return t


def _as_dtype(arr: np.ndarray | None, dt: np.dtype) -> np.ndarray:
    if arr is None:
        return np.zeros(0, dt)
    if arr.dtype == dt:
        return arr
    return arr.astype(dt)


def _widen_v1(arr: np.ndarray, dt: np.dtype) -> np.ndarray:
    """A version 1 array in today's layout, field by field (run / seq / operand indices widen, and the 16-byte
    op field becomes a NAME_BYTES one, NUL-padded)."""
    out = np.zeros(arr.shape, dt)
    for name in dt.names:
        out[name] = arr[name]
    return out


def _first_kernel_per_run(rec: np.ndarray) -> list[int]:
    if rec.size == 0:
        return []
    out = []
    for run in range(int(rec["run"].max()) + 1):
        k = rec["kernel"][rec["run"] == run]
        out.append(int(k[0]) if k.size else 0)
    return out


# ---------------------------------------------------------------------- JSON Lines reading (streaming)
class JsonlReader:
    """Reads a JSON Lines trace line by line into :class:`Block` s of at most ``chunk`` records, checking
    every field (types, ranges, lane counts, nesting) before use."""

    def __init__(self, src: IO[str], where: str, chunk: int = 4096) -> None:
        self.src = src
        self.where = where
        self.chunk = chunk
        self.head: dict[str, Any] = {}
        self.case = ""
        self.q7emu_version = __version__
        self._kernels: dict[int, int] = {}
        self._counts: dict[int, int] = {}

    def runs(self) -> list[dict[str, Any]]:
        """The header's runs (checked), or ones made up from the records (after :meth:`blocks`)."""
        runs = self.head.get("runs")
        if runs is not None:
            return runs
        n = max(self._kernels) + 1 if self._kernels else 0
        return [{"kernel": KERNELS.get(self._kernels.get(i, 0), str(self._kernels.get(i, 0))),
                 "kernel_id": self._kernels.get(i, 0), "knobs": {}, "window": None, "ops": None,
                 "records": self._counts.get(i, 0)} for i in range(n)]

    def _header(self, obj: dict[str, Any], where: str) -> None:
        if obj.get("format") != JSONL_FORMAT:
            raise TraceError(f"{where}: header format {str(obj.get('format'))[:40]!r} is not {JSONL_FORMAT}")
        if obj.get("version", JSONL_VERSION) != JSONL_VERSION:
            raise TraceError(f"{where}: JSON Lines version {obj.get('version')!r} (this q7emu reads {JSONL_VERSION})")
        runs = obj.get("runs")
        if runs is not None:
            obj["runs"] = check_runs(runs, where)
        if not isinstance(obj.get("case", ""), str) or not isinstance(obj.get("q7emu_version", ""), str):
            raise TraceError(f"{where}: header 'case' and 'q7emu_version' must be strings")
        self.head = obj
        self.case = obj.get("case", "")
        self.q7emu_version = obj.get("q7emu_version", __version__)

    def records(self) -> Iterator[tuple[tuple, list[tuple[int, int, int, int, bytes]]]]:
        """((run, seq, partition, kernel, bundle, op bytes), operands) per op line."""
        n = 0
        lineno = 0
        while True:
            line = self.src.readline(MAX_JSONL_LINE + 1)    # bounded: one endless line is never read whole
            if not line:
                break
            lineno += 1
            where = f"{self.where}:{lineno}"
            if len(line) > MAX_JSONL_LINE:
                raise TraceError(f"{where}: line longer than {MAX_JSONL_LINE} characters")
            if not line.strip():
                continue
            obj = json_loads(line, where)
            if not isinstance(obj, dict):
                raise TraceError(f"{where}: each line must be a JSON object")
            if "format" in obj and "op" not in obj:
                if n or self.head:
                    raise TraceError(f"{where}: a header line after the first record")
                self._header(obj, where)
                continue
            yield self._op_line(obj, n, where)
            n += 1

    def _op_line(self, obj: dict[str, Any], n: int, where: str) -> tuple[tuple, list]:
        name = obj.get("op")
        if not isinstance(name, str) or not name or len(name) > MAX_MNEMONIC or not name.isascii() or "\0" in name:
            raise TraceError(f"{where}: 'op' must be a mnemonic of 1..{MAX_MNEMONIC} ASCII characters")
        kern = obj.get("kernel", 0)
        if isinstance(kern, str):
            if kern not in KERNEL_IDS and not (kern.startswith("kernel") and kern[6:].isdigit()):
                raise TraceError(f"{where}: unknown kernel {kern[:40]!r}")
            kid = KERNEL_IDS[kern] if kern in KERNEL_IDS else int(kern[6:])
        else:
            kid = _int(obj, "kernel", where, 0, 255, default=0)
        if not 0 <= kid <= 255:
            raise TraceError(f"{where}: kernel id {kid} outside 0..255")
        head_runs = len(self.head.get("runs") or ())
        run = _int(obj, "run", where, 0, max(n, head_runs - 1), default=0)   # work bounded by the input's size
        seq = _int(obj, "seq", where, 0, U64_MAX, default=n)
        part = _int(obj, "partition", where, 0, 0xFFFFFFFF, default=0)
        bundle = _int(obj, "bundle", where, 0, 0xFFFF, default=UNKNOWN_BUNDLE)
        operands = obj.get("operands", [])
        if not isinstance(operands, list) or len(operands) > 255:
            raise TraceError(f"{where}: 'operands' must be a list of at most 255 objects")
        ops = []
        for k, od in enumerate(operands):
            w = f"{where}: operand {k}"
            if not isinstance(od, dict):
                raise TraceError(f"{w}: must be an object")
            kind = od.get("kind")
            kind = KIND_IDS.get(kind) if isinstance(kind, str) else (kind if type(kind) is int else None)
            if kind not in KIND_BYTES:
                raise TraceError(f"{w}: 'kind' must be one of {sorted(KIND_IDS)}")
            role = od.get("role", "src")
            role = ROLE_IDS.get(role) if isinstance(role, str) else (role if type(role) is int else None)
            if role not in (0, 1):
                raise TraceError(f"{w}: 'role' must be 'src' or 'dst'")
            view = od.get("view", DEFAULT_VIEW[kind])
            view = VIEW_IDS.get(view) if isinstance(view, str) else (view if type(view) is int else None)
            if view is None or not 0 <= view < len(VIEWS):
                raise TraceError(f"{w}: 'view' must be one of {[v for v, _ in VIEWS]}")
            reg = _int(od, "reg", w, 0, 255, default=255)
            lanes = od.get("lanes")
            if not isinstance(lanes, list) or len(lanes) > 512:
                raise TraceError(f"{w}: 'lanes' must be a list of hex strings")
            try:
                data = bytes_from_lanes(lanes, view, KIND_BYTES[kind])
            except TraceError as e:
                raise TraceError(f"{w}: {e}") from None
            ops.append((kind, role, reg, view, data))
        self._kernels.setdefault(run, kid)
        self._counts[run] = self._counts.get(run, 0) + 1
        return (run, seq, part, kid, bundle, name.encode()), ops

    def blocks(self) -> Iterator[Block]:
        """The records as in-memory blocks of at most ``chunk`` records."""
        rows: list[tuple] = []
        oprows: list[tuple] = []
        chunks: list[bytes] = []
        doff = 0

        def make() -> Block:
            rec = np.array(rows, RECORD_DTYPE) if rows else np.zeros(0, RECORD_DTYPE)
            ops = np.array(oprows, OPERAND_DTYPE) if oprows else np.zeros(0, OPERAND_DTYPE)
            return Block(rec, ops, np.frombuffer(b"".join(chunks), np.uint8).copy())

        for (run, seq, part, kid, bundle, name), ops in self.records():
            first = len(oprows)
            for kind, role, reg, view, data in ops:
                oprows.append((len(rows), kind, role, reg, view, len(data), doff))
                chunks.append(data)
                doff += len(data)
            rows.append((run, seq, part, kid, bundle, name, len(ops), first))
            if len(rows) >= self.chunk:
                yield make()
                rows, oprows, chunks, doff = [], [], [], 0
        if rows or not self._counts:
            b = make()
            if b.records.size:
                yield b


def check_runs(runs: Any, where: str) -> list[dict[str, Any]]:
    """A file's ``runs`` list, checked: a list of objects with the documented field types."""
    if not isinstance(runs, list) or len(runs) > 1 << 20:
        raise TraceError(f"{where}: 'runs' must be a list of run objects")
    out = []
    for i, r in enumerate(runs):
        w = f"{where}: run {i}"
        if not isinstance(r, dict):
            raise TraceError(f"{w}: must be an object, got {type(r).__name__}")
        for key, types in (("kernel", (str,)), ("knobs", (dict,)), ("window", (list, type(None))),
                           ("ops", (list, type(None))), ("partitions", (list, type(None))),
                           ("bundles", (list, type(None))), ("operand_order", (str,))):
            if key in r and not isinstance(r[key], types):
                raise TraceError(f"{w}: {key!r} has the wrong type ({type(r[key]).__name__})")
        if r.get("operand_order", LEGACY_OPERAND_ORDER) not in OPERAND_ORDERS:
            raise TraceError(f"{w}: 'operand_order' {str(r['operand_order'])[:40]!r} is not one of "
                             f"{', '.join(OPERAND_ORDERS)} (docs/traces.md §1.4)")
        for key in ("kernel_id", "records", "executed", "partition_base"):
            if key in r and r[key] is not None:
                _int(r, key, w)
        for key in ("window", "partitions"):
            for x in r.get(key) or []:
                vals = x if key == "partitions" else [x]
                if key == "partitions" and (not isinstance(x, list) or len(x) != 2):
                    raise TraceError(f"{w}: {key!r} items must be [lo, hi] pairs")
                if any(isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= U64_MAX for v in vals):
                    raise TraceError(f"{w}: {key!r} must hold integers in 0..2**64-1")
        for key in ("ops", "bundles"):
            for x in r.get(key) or []:
                if not isinstance(x, (str, int)) or isinstance(x, bool):
                    raise TraceError(f"{w}: {key!r} items must be {'strings' if key == 'ops' else 'integers'}")
        # a run written before the field existed was recorded under q7emu's earlier operand order (§1.4)
        out.append(r if "operand_order" in r else dict(r, operand_order=LEGACY_OPERAND_ORDER))
    return out


def _open_bytes(path: str | os.PathLike) -> IO[bytes]:
    """A trace file opened for binary reading through :func:`q7emu.fileio.open_regular` (docs/limits.md §1:
    a FIFO, device, socket or folder is refused without blocking); TraceError for those."""
    try:
        return open_regular(path)
    except InvalidArgument as e:
        raise TraceError(f"{path}: {e.rule}") from None


def _open_text(path: str | os.PathLike) -> IO[str]:
    """A JSON Lines trace opened as strict UTF-8 text, read through :func:`_open_bytes`."""
    return io.TextIOWrapper(_open_bytes(path), encoding="utf-8", errors="strict")


# ---------------------------------------------------------------------- the binary file: writing
class TraceWriter:
    """Writes a ``.q7t`` v2 file block by block (docs/traces.md §2): the preamble at once, each block as it
    comes (compressed, framed, CRC-32), the footer and trailer at :meth:`close`. A path is written through
    :func:`q7emu.fileio.atomic_write` (a temporary file renamed when complete; removed on error or abort), so
    an interrupted trace never leaves a partial file. ``dest`` may also be an open binary stream."""

    def __init__(self, dest: str | os.PathLike | IO[bytes], case: str = "", q7emu_version: str = __version__,
                 level: int = CODEC_LEVEL) -> None:
        self.case = case
        self.q7emu_version = q7emu_version
        self.level = level
        self.runs: list[dict[str, Any]] = []
        self.names: list[list[str]] = []
        self.index: list[list[int]] = []
        self.records = 0
        self.raw_bytes = 0
        self._ctx: Any = None
        self.dest = Path(dest) if isinstance(dest, (str, os.PathLike)) else None
        if isinstance(dest, (str, os.PathLike)):
            self._ctx = atomic_write(dest, "wb")
            self.fh: IO[bytes] = self._ctx.__enter__()
        else:
            self.fh = dest
        head = json.dumps({"format": FILE_FORMAT, "version": FILE_VERSION, "q7emu_version": q7emu_version,
                           "codec": CODEC}, separators=(",", ":")).encode()
        pre = PREAMBLE.pack(MAGIC, FILE_VERSION, len(head)) + head
        pre += b"\0" * (-len(pre) % 8)
        self._put(pre)
        self.pos = len(pre)
        self.closed = False

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort(exc_type, exc, tb)

    def _put(self, data: bytes) -> None:
        """Write ``data``; a file-system error (full, too large) names the destination."""
        try:
            self.fh.write(data)
        except OSError as e:
            raise (named_os_error(e, self.dest) if self.dest is not None else e) from None

    def begin_run(self, info: dict[str, Any]) -> int:
        """Start a run (its info as in the footer's ``runs``); returns its index."""
        self.runs.append(dict(info))
        self.names.append([])
        return len(self.runs) - 1

    def add_block(self, run: int, raw: bytes) -> int:
        """Compress and write one raw block of ``run``; returns the compressed size in bytes."""
        st = block_stats(raw)
        comp = zlib.compress(raw, self.level)
        crc = zlib.crc32(comp)
        self._put(FRAME.pack(FRAME_MAGIC, len(comp), len(raw), crc))
        self._put(comp)
        self.index.append([self.pos, len(comp), len(raw), crc, run, st["records"], st["operands"],
                           st["first_seq"], st["last_seq"], st["first_partition"], st["last_partition"],
                           self.records])
        self.pos += FRAME.size + len(comp)
        self.records += st["records"]
        self.raw_bytes += len(raw)
        return len(comp)

    def end_run(self, run: int, updates: dict[str, Any], names: list[str]) -> None:
        """Finish run ``run``: add ``updates`` (records, executed ...) to its info and its op-name table."""
        self.runs[run].update(updates)
        self.names[run] = list(names)

    def close(self) -> None:
        """Write the footer and trailer and (for a path) make the file appear atomically."""
        if self.closed:
            return
        runs = [dict(r, op_names=n) for r, n in zip(self.runs, self.names)]
        foot = json.dumps({"format": FILE_FORMAT, "version": FILE_VERSION, "q7emu_version": self.q7emu_version,
                           "case": self.case, "codec": CODEC, "records": self.records, "runs": runs,
                           "blocks": self.index}, separators=(",", ":")).encode()
        self._put(foot)
        self._put(TRAILER.pack(END_MAGIC, self.pos, len(foot), zlib.crc32(foot), self.records))
        self.pos += len(foot) + TRAILER.size
        self.closed = True
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)

    def abort(self, exc_type: Any = None, exc: Any = None, tb: Any = None) -> None:
        """Give the file up: for a path, the temporary file is removed and an existing file stays as it was."""
        if self.closed:
            return
        self.closed = True
        if self._ctx is not None:
            err = exc if exc is not None else TraceError("trace aborted")
            with contextlib.suppress(BaseException):
                self._ctx.__exit__(type(err), err, tb)


# ---------------------------------------------------------------------- the binary file: reading
def _read_exact(fh: IO[bytes], n: int, where: str, what: str) -> bytes:
    b = fh.read(n)
    if len(b) != n:
        raise TraceError(f"{where}: file truncated in {what} ({len(b)} of {n} bytes)")
    return b


class TraceFile:
    """A trace file opened for reading, block by block: ``.q7t`` v2 (seeks through its block index), v1 or
    JSON Lines (read whole). Checks the trailer, the footer, every block's CRC-32 and record count before
    using them; a partial or damaged file is a TraceError of one line.

    ``runs``, ``case``, ``q7emu_version``, ``records`` (count); :meth:`blocks` / :meth:`ops` stream the
    records, optionally only a seq range or one run; :meth:`read` gives the whole :class:`Trace`."""

    def __init__(self, src: str | os.PathLike | IO[bytes], where: str | None = None) -> None:
        self._own = isinstance(src, (str, os.PathLike))
        self.where = where or (str(src) if self._own else "trace")
        if self._own:
            p = Path(src)
            try:
                if p.is_dir():
                    raise TraceError(f"{p}: is a folder, not a trace file")
                self.fh: IO[bytes] = _open_bytes(p)
            except FileNotFoundError:
                raise TraceError(f"{p}: no such trace file") from None
            except PermissionError:
                raise TraceError(f"{p}: permission denied") from None
        else:
            self.fh = src
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> TraceFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (when this object opened it)."""
        if self._own:
            self.fh.close()

    def _open(self) -> None:
        w = self.where
        fh = self.fh
        fh.seek(0, os.SEEK_END)
        self.size = fh.tell()
        fh.seek(0)
        first = fh.read(16)
        self.kind = "v2"
        self._trace: Trace | None = None
        if first[:1] == b"{":
            self.kind = "jsonl"
            fh.seek(0)
            text = io.TextIOWrapper(fh, encoding="utf-8", errors="strict", newline=None)
            try:
                self._trace = Trace.from_jsonl(text, where=w)
            except UnicodeDecodeError as e:
                raise TraceError(f"{w}: not UTF-8 text ({e.reason})") from None
            finally:
                text.detach()
            self._adopt(self._trace)
            return
        if len(first) < 16 or first[:8] != MAGIC:
            raise TraceError(f"{w}: not a q7emu trace file (bad magic)")
        _m, version, hlen = PREAMBLE.unpack(first)
        if version not in READ_VERSIONS:
            raise TraceError(f"{w}: unsupported trace file version {version} (this q7emu reads "
                             f"{', '.join(map(str, READ_VERSIONS))})")
        if hlen > MAX_HEADER_BYTES or 16 + hlen > self.size:
            raise TraceError(f"{w}: header length {hlen} runs past the end of the file")
        head = json_loads(_read_exact(fh, hlen, w, "the header"), f"{w}: header")
        if not isinstance(head, dict) or head.get("format") != FILE_FORMAT or head.get("version") != version:
            raise TraceError(f"{w}: header is not a {FILE_FORMAT} version {version} header")
        if version == 1:
            self.kind = "v1"
            self._trace = self._read_v1(head, 16 + hlen)
            self._adopt(self._trace)
            return
        if head.get("codec") != CODEC:
            raise TraceError(f"{w}: unknown block codec {str(head.get('codec'))[:20]!r} (this q7emu reads {CODEC})")
        if self.size < 16 + hlen + TRAILER.size:
            raise TraceError(f"{w}: partial trace file (no trailer: the recording did not finish)")
        fh.seek(self.size - TRAILER.size)
        end, foot_off, foot_len, foot_crc, nrec = TRAILER.unpack(_read_exact(fh, TRAILER.size, w, "the trailer"))
        if end != END_MAGIC:
            raise TraceError(f"{w}: partial or damaged trace file (no trailer: the recording did not finish)")
        if foot_len > MAX_FOOTER_BYTES or foot_off < 16 + hlen or foot_off + foot_len + TRAILER.size != self.size:
            raise TraceError(f"{w}: damaged trace file (footer at {foot_off}, {foot_len} bytes)")
        fh.seek(foot_off)
        foot_raw = _read_exact(fh, foot_len, w, "the footer")
        if zlib.crc32(foot_raw) != foot_crc:
            raise TraceError(f"{w}: damaged trace file (footer checksum mismatch)")
        foot = json_loads(foot_raw, f"{w}: footer")
        if not isinstance(foot, dict) or foot.get("format") != FILE_FORMAT:
            raise TraceError(f"{w}: footer is not a {FILE_FORMAT} footer")
        if _int(foot, "records", f"{w}: footer") != nrec:
            raise TraceError(f"{w}: footer counts {foot.get('records')} records, the trailer {nrec}")
        runs = check_runs(foot.get("runs"), f"{w}: footer")
        self.names: list[list[str]] = []
        for i, r in enumerate(runs):
            names = r.pop("op_names", None)
            if not isinstance(names, list) or len(names) > MAX_NAMES or not all(
                    isinstance(n, str) and 0 < len(n.encode()) <= MAX_MNEMONIC for n in names):
                raise TraceError(f"{w}: run {i}: 'op_names' must list at most {MAX_NAMES} mnemonics "
                                 f"of 1..{MAX_MNEMONIC} characters")
            self.names.append(names)
        blocks = foot.get("blocks")
        if not isinstance(blocks, list):
            raise TraceError(f"{w}: footer 'blocks' must be a list")
        idx = []
        pos, total = 16 + hlen + (-(16 + hlen) % 8), 0
        run_counts = [0] * len(runs)
        for k, b in enumerate(blocks):
            if (not isinstance(b, list) or len(b) != 12
                    or any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= U64_MAX for x in b)):
                raise TraceError(f"{w}: block index entry {k} is not 12 integers")
            off, clen, rlen, _crc, run, nr, _no, first, last, _p0, _p1, r0 = b
            if off != pos or off + FRAME.size + clen > foot_off or rlen > MAX_RAW_BLOCK or run >= len(runs) \
                    or r0 != total or not 0 < nr <= BLK_RECORDS or last < first:
                raise TraceError(f"{w}: block index entry {k} is inconsistent with the file")
            pos = off + FRAME.size + clen
            total += nr
            run_counts[run] += nr
            idx.append(b)
        if pos != foot_off:
            raise TraceError(f"{w}: blocks do not fill the file up to the footer")
        if total != nrec:
            raise TraceError(f"{w}: the block index counts {total} records, the trailer {nrec}")
        for i, r in enumerate(runs):
            if r.get("records", run_counts[i]) != run_counts[i]:
                raise TraceError(f"{w}: run {i} says {r.get('records')} records, its blocks hold {run_counts[i]}")
        self.index = idx
        self.runs = runs
        self.records = nrec
        self.case = str(foot.get("case", ""))
        self.q7emu_version = str(foot.get("q7emu_version", ""))

    def _adopt(self, t: Trace) -> None:
        self.runs = t.runs
        self.records = len(t)
        self.case = t.case
        self.q7emu_version = t.q7emu_version
        self.index = []

    def _read_v1(self, meta: dict[str, Any], data_start: int) -> Trace:
        w = self.where
        if self.size > MAX_V1_BYTES:
            raise TraceError(f"{w}: a version 1 file larger than {MAX_V1_BYTES} bytes")
        arrays = {}
        want = {"records": V1_RECORD_DTYPE, "operands": V1_OPERAND_DTYPE, "data": np.dtype(np.uint8)}
        entries = meta.get("arrays")
        if not isinstance(entries, list):
            raise TraceError(f"{w}: header 'arrays' must be a list")
        for e in entries:
            if not isinstance(e, dict) or not isinstance(e.get("name"), str) or e.get("name") not in want:
                raise TraceError(f"{w}: bad array entry {str(e)[:60]!r}")
            name = e["name"]
            descr = e.get("descr")
            try:
                dt = np.lib.format.descr_to_dtype(descr if isinstance(descr, str) else [tuple(x) for x in descr])
            except Exception as ex:  # noqa: BLE001 - any malformed descr is the file's fault
                raise TraceError(f"{w}: array {name}: bad dtype ({type(ex).__name__})") from None
            if dt != want[name]:
                raise TraceError(f"{w}: array {name} has dtype {dt}, expected {want[name]}")
            off = _int(e, "offset", f"{w}: array {name}")
            cnt = _int(e, "count", f"{w}: array {name}")
            if off < data_start or off + cnt * dt.itemsize > self.size:
                raise TraceError(f"{w}: array {name} runs past the end of the file")
            self.fh.seek(off)
            arrays[name] = np.frombuffer(_read_exact(self.fh, cnt * dt.itemsize, w, f"array {name}"), dt, cnt).copy()
        missing = set(want) - set(arrays)
        if missing:
            raise TraceError(f"{w}: missing arrays {sorted(missing)}")
        runs = check_runs(meta.get("runs") or [], f"{w}: header")
        if not isinstance(meta.get("case", ""), str):
            raise TraceError(f"{w}: header 'case' must be a string")
        t = Trace(_widen_v1(arrays["records"], RECORD_DTYPE), _widen_v1(arrays["operands"], OPERAND_DTYPE),
                  arrays["data"], runs, str(meta.get("case", "")), str(meta.get("q7emu_version", "")))
        t.validate(w)
        return t

    # ------------------------------------------------------------------ streaming
    def raw_block(self, k: int) -> bytes:
        """Raw (decompressed, checked) bytes of block ``k`` of a v2 file."""
        off, clen, rlen, crc, run, nr = self.index[k][:6]
        w = f"{self.where}: block {k}"
        self.fh.seek(off)
        magic, c2, r2, crc2 = FRAME.unpack(_read_exact(self.fh, FRAME.size, w, "a block frame"))
        if magic != FRAME_MAGIC or (c2, r2, crc2) != (clen, rlen, crc):
            raise TraceError(f"{w}: block frame does not match the index (damaged file)")
        comp = _read_exact(self.fh, clen, w, "a block")
        if zlib.crc32(comp) != crc:
            raise TraceError(f"{w}: checksum mismatch (damaged file)")
        try:
            d = zlib.decompressobj()
            raw = d.decompress(comp, rlen + 1)
        except zlib.error as e:
            raise TraceError(f"{w}: does not decompress ({e})") from None
        if len(raw) != rlen or not d.eof:
            raise TraceError(f"{w}: decompresses to {len(raw)} bytes, the index says {rlen}")
        return raw

    def blocks(self, seq: tuple[int | None, int | None] | None = None, run: int | None = None,
               values: bool = True) -> Iterator[Block]:
        """The records block by block (a :class:`Block` each, offsets relative to the block), only the
        blocks that can hold ``seq`` = [lo, hi) (seek via the index) and, with ``run``, of that run."""
        lo, hi = seq or (None, None)
        if self._trace is not None:
            t = self._trace
            rows = t.select(seq=seq) if seq else np.arange(len(t))
            if run is not None:
                rows = rows[t.records["run"][rows] == run]
            for a in range(0, rows.size, BLK_RECORDS):
                s = t.subset(rows[a:a + BLK_RECORDS])
                yield Block(s.records, s.operands, s.data)
            return
        for k, e in enumerate(self.index):
            first, last, r = e[7], e[8], e[4]
            if (run is not None and r != run) or (lo is not None and last < lo) or (hi is not None and first >= hi):
                continue
            b = decode_block(self.raw_block(k), self.names[r], r, f"{self.where}: block {k}", values)
            if b.records.size != e[5]:
                raise TraceError(f"{self.where}: block {k} holds {b.records.size} records, the index says {e[5]}")
            if int(b.records["seq"][0]) != first or int(b.records["seq"][-1]) != last:
                raise TraceError(f"{self.where}: block {k} seq range does not match the index")
            if lo is not None or hi is not None:
                s = b.records["seq"]
                keep = np.ones(s.size, bool)
                if lo is not None:
                    keep &= s >= np.uint64(lo)
                if hi is not None:
                    keep &= s < np.uint64(hi)
                if not keep.all():
                    t = Trace(b.records, b.operands, b.data).subset(np.nonzero(keep)[0])
                    b = Block(t.records, t.operands, t.data, b.complete)
            yield b

    def ops(self, seq: tuple[int | None, int | None] | None = None, run: int | None = None) -> Iterator[Op]:
        """Every record as an :class:`Op`, streamed (``index`` counts records in the file)."""
        n = 0
        for b in self.blocks(seq, run):
            t = Trace(b.records, b.operands, b.data)
            for i in range(len(t)):
                op = t[i]
                op.index = n
                n += 1
                yield op

    def read(self) -> Trace:
        """The whole trace in memory."""
        if self._trace is not None:
            return self._trace
        t = Trace.concat(list(self.blocks()), self.runs, self.case, self.q7emu_version)
        t.validate(self.where)
        return t

    def iter_jsonl(self) -> Iterator[str]:
        """The JSON Lines text, streamed (header line first)."""
        yield _jsonl_header(self.case, self.runs, self.q7emu_version)
        for op in self.ops():
            yield json.dumps(op_json(op), separators=(",", ":"))


def open_trace(path: str | os.PathLike) -> TraceFile:
    """Open a trace file (``.q7t`` v1 / v2 or JSON Lines) for streaming reads (:class:`TraceFile`)."""
    return TraceFile(path)


def load(path: str | os.PathLike) -> Trace:
    """Read a trace file (binary or JSON Lines) into memory."""
    return Trace.load(path)


def export_jsonl(src: str | os.PathLike, dest: str | os.PathLike) -> int:
    """Stream a trace file to JSON Lines (written atomically); returns the record count."""
    n = 0
    with TraceFile(src) as f, atomic_write(dest, "w", newline="\n") as out:
        for line in f.iter_jsonl():
            out.write(line + "\n")
            n += 1
    return n - 1


def import_jsonl(src: str | os.PathLike, dest: str | os.PathLike) -> int:
    """Stream a JSON Lines trace into a ``.q7t`` v2 file (written atomically); returns the record count."""
    try:
        fh = _open_text(src)
    except FileNotFoundError:
        raise TraceError(f"{src}: no such trace file") from None
    with fh:
        reader = JsonlReader(fh, str(src))
        try:
            return _write_records(reader, dest)
        except UnicodeDecodeError as e:
            raise TraceError(f"{src}: not UTF-8 text ({e.reason})") from None


def _write_records(reader: JsonlReader, dest: str | os.PathLike) -> int:
    pending: dict[int, list[bytes]] = {}
    encs: dict[int, BlockEncoder] = {}
    last_run = -1
    n = 0
    out = TraceWriter(dest)
    try:
        for (run, seq, part, kid, bundle, name), ops in reader.records():
            if run < last_run:
                raise TraceError(f"{reader.where}: run {run} after run {last_run} (records must be in run order)")
            if run != last_run:
                if last_run >= 0:
                    encs[last_run].flush()
                pending[run] = []             # runs between get no encoder: they hold no record
                encs[run] = BlockEncoder(pending[run].append, kid)
                last_run = run
            encs[run].add(seq, part, kid, bundle, name, ops)
            n += 1
        if last_run >= 0:
            encs[last_run].flush()
        out.case = reader.case
        out.q7emu_version = reader.q7emu_version
        runs = reader.runs()
        nrun = max(len(runs), last_run + 1)
        for r in range(nrun):
            info = dict(runs[r]) if r < len(runs) else {}
            out.begin_run(info)
            count = 0
            for b in pending.get(r, []):
                out.add_block(r, b)
                count += block_stats(b)["records"]
            if info.get("records", count) != count:
                raise TraceError(f"{reader.where}: header says run {r} has {info.get('records')} records, "
                                 f"the file has {count}")
            out.end_run(r, {"records": count}, encs[r].op_names() if r in encs else [])
        out.close()
    except BaseException as e:
        out.abort(type(e), e, e.__traceback__)
        raise
    return n


# ---------------------------------------------------------------------- the recorder
class RunSink:
    """What the kernel's recorder (src/trace/trace_buffer.pxi) is handed for one run: the filters it reads
    (``window``, ``ops``, ``partitions``, ``bundles``, ``partition_base``, ``skeleton``, ``tick_ops``) and
    the calls it makes while the kernel runs (``block(raw)``, ``tick(executed)``, ``finish(executed,
    op_names)``)."""

    def __init__(self, owner: Recorder, run: int) -> None:
        self.owner = owner
        self.run = run
        self.window = owner.window
        self.ops = owner.ops
        self.partitions = owner.partitions
        self.bundles = owner.bundles
        self.partition_base = owner.partition_base
        self.skeleton = owner.skeleton
        self.tick_ops = owner.tick_ops
        self.seq_start = owner.seq_start
        self.mutate = owner.mutate
        self.mutate_hits = 0
        self.records = 0
        self.done = False

    def block(self, raw: bytes, names: bytes = b"") -> None:
        """One finished block (raw v2 bytes) and the run's op-name table so far (NAME_BYTES-byte NUL-padded
        names)."""
        self.records += int.from_bytes(raw[24:28], "little")
        if len(names) // NAME_BYTES != len(self.owner.op_names[self.run]):
            self.owner.op_names[self.run] = [names[i:i + NAME_BYTES].rstrip(b"\0").decode("ascii", "replace")
                                             for i in range(0, len(names), NAME_BYTES)]
        self.owner._block(self.run, raw)

    def tick(self, executed: int) -> None:
        """Progress: ``executed`` primitives of the run so far."""
        self.owner._tick(self.run, executed)

    def finish(self, executed: int, op_names: list[str]) -> None:
        """The run ended normally."""
        self.done = True
        self.owner.mutate_hits += self.mutate_hits
        self.owner._finish(self.run, executed, op_names)

    def abort(self) -> None:
        """The run ended with an exception (the recorder keeps what it has)."""
        self.owner._abort(self.run)


class Recorder:
    """Records every kernel run it is passed to (``trace=recorder``), with the filters applied inside the
    kernel's recorder (module docstring).

    ``path=None`` keeps the compact blocks in memory (``recorder.trace`` decodes them); ``path=FILE`` streams
    them to a ``.q7t`` file; call :meth:`close` (or use the recorder as a context manager) to finish it.
    ``partition_base`` is added to the kernel's partition index (an SBUF instruction's first partition).
    ``skeleton=True`` stores no register bytes (what :mod:`q7emu.analysis.profile` needs). ``on_block(run,
    raw)`` / ``on_tick(run, executed)`` are called while the kernel runs (progress, text logs). ``seq_start`` is
    the sequence number of each run's first primitive (default 0). ``mutate=(mnemonic, bundle)`` turns every
    op of that mnemonic in that bundle into a no-op (its destinations keep their values) -- mutation testing of
    the kernels (docs/traces.md §8); ``mutate_hits`` then counts the ops it removed."""

    def __init__(self, window: tuple[int, int] | None = None, ops: Iterable[str] | None = None,
                 case: str = "", *, partitions: Any = None, bundles: Any = None, path: str | os.PathLike | None = None,
                 partition_base: int = 0, skeleton: bool = False,
                 on_block: Callable[[int, bytes], None] | None = None,
                 on_tick: Callable[[int, int], None] | None = None, tick_ops: int = 0, seq_start: int = 0,
                 mutate: tuple[str, int] | None = None) -> None:
        self.window = check_window(window)
        self.ops = check_ops(ops)
        self.partitions = check_partitions(partitions)
        self.bundles = check_bundles(bundles)
        self.case = case
        self.partition_base = check_partition_base(partition_base)
        self.skeleton = bool(skeleton)
        self.seq_start = check_window((seq_start, seq_start))[0]
        self.mutate = check_mutate(mutate)
        self.mutate_hits = 0
        self.on_block = on_block
        self.on_tick = on_tick
        self.tick_ops = tick_ops if tick_ops else (1 << 16 if on_tick else 0)
        self.path = Path(path) if path is not None else None
        self.runs: list[dict[str, Any]] = []
        self.run_blocks: list[list[bytes]] = []
        self.op_names: list[list[str]] = []
        self.raw_runs: list[tuple[Any, dict[str, Any]]] = []     # full-operand runs (add_run)
        self.writer: TraceWriter | None = None
        self.records = 0
        self.raw_bytes = 0
        self._run_records: list[int] = []
        self._trace: Trace | None = None

    # ------------------------------------------------------------------ the kernel API's protocol
    def _info(self, kernel: str, knobs: dict[str, Any] | None) -> dict[str, Any]:
        return {"kernel": kernel, "kernel_id": KERNEL_IDS.get(kernel, 0), "knobs": dict(knobs or {}),
                "operand_order": OPERAND_ORDER,
                "window": list(self.window) if self.window is not None else None,
                "ops": list(self.ops) if self.ops is not None else None,
                "partitions": [list(p) for p in self.partitions] if self.partitions is not None else None,
                "bundles": list(self.bundles) if self.bundles is not None else None,
                "partition_base": self.partition_base}

    def begin_run(self, kernel: str, knobs: dict[str, Any] | None = None) -> RunSink:
        """Called by the kernel APIs before a traced run; returns the sink the kernel records into."""
        if self.raw_runs:
            raise Q7Error("a Recorder holds either full-operand runs (add_run) or compact runs, not both")
        if self.path is not None and self.writer is None:
            self.writer = TraceWriter(self.path, case=self.case)
        info = self._info(kernel, knobs)
        self.runs.append(info)
        self.run_blocks.append([])
        self.op_names.append([])
        self._run_records.append(0)
        if self.writer is not None:
            self.writer.begin_run(info)
        self._trace = None
        return RunSink(self, len(self.runs) - 1)

    def _block(self, run: int, raw: bytes) -> None:
        n = int.from_bytes(raw[24:28], "little")
        self.records += n
        self._run_records[run] += n
        self.raw_bytes += len(raw)
        if self.writer is not None:
            self.writer.add_block(run, raw)
        else:
            self.run_blocks[run].append(raw)
        if self.on_block is not None:
            self.on_block(run, raw)

    def _tick(self, run: int, executed: int) -> None:
        if self.on_tick is not None:
            self.on_tick(run, executed)

    def _finish(self, run: int, executed: int, names: list[str]) -> None:
        info = self.runs[run]
        info["records"] = self._run_records[run]
        info["executed"] = int(executed)
        self.op_names[run] = list(names)
        if self.writer is not None:
            self.writer.end_run(run, {"records": info["records"], "executed": info["executed"]}, names)

    def _abort(self, run: int) -> None:
        self.runs[run]["aborted"] = True

    def add_run(self, raw: Any, kernel: str, knobs: dict[str, Any] | None = None) -> None:
        """A full-operand run (src/trace/q7trace.pxd MODE_LEGACY layout; any bytes-like object, kept without
        a copy), e.g. from ``_dequant.run(..., trace=True)``."""
        if self.runs:
            raise Q7Error("a Recorder holds either full-operand runs (add_run) or compact runs, not both")
        info = {"kernel": kernel, "kernel_id": KERNEL_IDS.get(kernel, 0), "knobs": dict(knobs or {}),
                "operand_order": OPERAND_ORDER,
                "window": list(self.window) if self.window is not None else None,
                "ops": list(self.ops) if self.ops is not None else None}
        self.raw_runs.append((raw if raw is not None else b"", info))
        self._trace = None

    # ------------------------------------------------------------------ results
    def close(self) -> None:
        """Finish the trace file (``path=`` recorders): footer, trailer, atomic rename."""
        if self.writer is not None:
            self.writer.case = self.case
            self.writer.close()

    def abort(self) -> None:
        """Give the trace file up (it never appears; an existing file stays as it was)."""
        if self.writer is not None:
            self.writer.abort()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        elif self.writer is not None:
            self.writer.abort(exc_type, exc, tb)

    @property
    def raw(self) -> bytes:
        """All full-operand runs' raw records concatenated (``add_run``)."""
        return b"".join(bytes(memoryview(r)) for r, _ in self.raw_runs)

    def blocks(self, run: int | None = None, values: bool = True) -> Iterator[Block]:
        """The in-memory runs' blocks, decoded one at a time."""
        for i, blocks in enumerate(self.run_blocks):
            if run is not None and i != run:
                continue
            for k, raw in enumerate(blocks):
                yield decode_block(raw, self.op_names[i], i, f"run {i} block {k}", values)

    @property
    def trace(self) -> Trace:
        """The :class:`Trace` of every run so far (decoded on first access; in-memory recorders only)."""
        if self._trace is None:
            if self.raw_runs:
                self._trace = Trace.from_runs(self.raw_runs, self.case)
            elif self.writer is not None:
                raise Q7Error("a path= Recorder streams to its file: read it with q7emu.analysis.trace.load")
            else:
                self._trace = Trace.concat(list(self.blocks()), [dict(r) for r in self.runs], self.case)
        return self._trace

    def __len__(self) -> int:
        return len(self.trace)


# ---------------------------------------------------------------------- argument checks
def check_window(window: Any) -> tuple[int, int] | None:
    """A trace window as (lo, hi) 64-bit sequence numbers, or None; InvalidArgument when malformed."""
    if window is None:
        return None
    try:
        lo, hi = (int(x) for x in window)
    except (TypeError, ValueError, OverflowError):
        raise InvalidArgument("window", window, "must be (start, end) integers") from None
    if not 0 <= lo <= hi <= U64_MAX:
        raise InvalidArgument("window", window, "needs 0 <= start <= end <= 2**64-1")
    return lo, hi


def check_ops(ops: Any) -> list[str] | None:
    """A trace op filter as a list of mnemonics (at most 64), or None; InvalidArgument for an
    unknown mnemonic."""
    if ops is None:
        return None
    names = [ops] if isinstance(ops, str) else list(ops)
    names = [str(n).strip() for n in names if str(n).strip()]
    if not names:
        return None
    if len(names) > MAX_OPS_FILTER:
        raise InvalidArgument("ops", len(names), f"at most {MAX_OPS_FILTER} mnemonics")
    known = known_mnemonics()
    for n in names:
        if len(n) > MAX_MNEMONIC or not n.isascii() or (known and n not in known):
            raise InvalidArgument("ops", n, "not a mnemonic the kernels record (see `q7emu ops`)")
    return names


def check_partitions(parts: Any) -> list[tuple[int, int]] | None:
    """A partition filter: ranges (lo, hi) or single partitions (absolute SBUF partitions, at most 64
    ranges after merging), or None."""
    if parts is None:
        return None
    items = [parts] if isinstance(parts, (int, str)) else list(parts)
    ranges = []
    for it in items:
        try:
            lo, hi = (int(it), int(it) + 1) if isinstance(it, (int, np.integer)) else (int(it[0]), int(it[1]))
        except (TypeError, ValueError, IndexError, OverflowError):
            raise InvalidArgument("partitions", it, "each item is a partition or a (start, end) range") from None
        if not 0 <= lo <= hi <= 0xFFFFFFFF:
            raise InvalidArgument("partitions", it, "needs 0 <= start <= end <= 2**32-1")
        if lo < hi:
            ranges.append((lo, hi))
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    if not merged:
        raise InvalidArgument("partitions", parts, "selects no partition")
    if len(merged) > MAX_PARTITION_RANGES:
        raise InvalidArgument("partitions", len(merged), f"at most {MAX_PARTITION_RANGES} ranges")
    return merged


def check_mutate(mutate: Any) -> tuple[str, int] | None:
    """A mutation (mnemonic, bundle) checked: a mnemonic of 1..31 ASCII characters and a bundle 0..65535, or
    None."""
    if mutate is None:
        return None
    if (not isinstance(mutate, tuple | list) or len(mutate) != 2 or not isinstance(mutate[0], str)
            or not 0 < len(mutate[0]) <= MAX_MNEMONIC or not mutate[0].isascii() or isinstance(mutate[1], bool)
            or not isinstance(mutate[1], int) or not 0 <= mutate[1] <= 0xFFFF):
        raise InvalidArgument("mutate", mutate, f"must be (mnemonic of 1..{MAX_MNEMONIC} ASCII characters, "
                                                "bundle 0..65535)")
    return (mutate[0], int(mutate[1]))


def check_bundles(bundles: Any) -> list[int] | None:
    """A bundle filter (bundle indices 0..65535, ``B<n>`` of the listing), or None."""
    if bundles is None:
        return None
    items = [bundles] if isinstance(bundles, (int, str)) else list(bundles)
    out = set()
    for b in items:
        try:
            v = int(b)
        except (TypeError, ValueError, OverflowError):
            raise InvalidArgument("bundles", b, "bundle indices are integers") from None
        if not 0 <= v <= 0xFFFF:
            raise InvalidArgument("bundles", b, "needs 0 <= bundle <= 65535")
        out.add(v)
    if not out:
        raise InvalidArgument("bundles", bundles, "selects no bundle")
    return sorted(out)


def check_partition_base(base: Any) -> int:
    """The partition base (an SBUF instruction's first partition), 0..2**32-1."""
    try:
        v = int(base)
    except (TypeError, ValueError, OverflowError):
        raise InvalidArgument("partition_base", base, "must be an integer") from None
    if not 0 <= v <= 0xFFFFFFFF:
        raise InvalidArgument("partition_base", base, "needs 0 <= base <= 2**32-1")
    return v


def parse_range(text: str | None, what: str = "range") -> tuple[int | None, int | None] | None:
    """``A:B`` (half-open; either side may be empty) or ``A`` (just A) -> (lo, hi)."""
    if text is None:
        return None
    t = text.strip()
    try:
        if ":" not in t:
            v = int(t, 0)
            return v, v + 1
        a, b = t.split(":", 1)
        lo = int(a, 0) if a.strip() else None
        hi = int(b, 0) if b.strip() else None
    except ValueError:
        raise InvalidArgument(what, text, "expected START:END (half-open), START: , :END or N") from None
    if (lo is not None and lo < 0) or (hi is not None and hi < 0) or (lo is not None and hi is not None and hi < lo):
        raise InvalidArgument(what, text, "needs 0 <= START <= END")
    return lo, hi


def parse_list(text: str | None, what: str) -> list[tuple[int, int]] | None:
    """``A,B:C,D`` (single values and half-open ranges, any base) -> ranges [(lo, hi), ...]."""
    if text is None:
        return None
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        r = parse_range(item, what)
        if r is None or r[0] is None or r[1] is None:
            raise InvalidArgument(what, text, "each item is N or START:END with both ends given")
        out.append((r[0], r[1]))
    if not out:
        raise InvalidArgument(what, text, "selects nothing")
    return out


# ---------------------------------------------------------------------- the text log
class LogWriter:
    """A streaming text log, one op per line (the module docstring's format), to a text stream: pass its
    :meth:`block` as ``Recorder(on_block=...)`` to log while the kernel runs."""

    def __init__(self, out: IO[str], names: Callable[[int], list[str]] | None = None) -> None:
        self.out = out
        self.names = names
        self.lines = 0

    def block(self, run: int, raw: bytes, names: list[str]) -> None:
        """Log one raw v2 block of run ``run`` (op names of the run so far)."""
        self.write_block(decode_block(raw, names, run, f"run {run}"))

    def write_block(self, b: Block) -> None:
        """Log one decoded block."""
        t = Trace(b.records, b.operands, b.data)
        w = self.out.write
        for i in range(len(t)):
            w(log_line(t[i]) + "\n")
        self.lines += len(t)


def log_line(op: Op) -> str:
    """One op as a text-log line."""
    parts = [f"{op.seq} p{op.partition} B{op.bundle if op.bundle != UNKNOWN_BUNDLE else '?'} {op.op}"]
    for o in op.operands:
        sep = "<=" if o.role == 1 else "="
        if o.kind == 5:
            parts.append(f"{o.name}{sep}{int.from_bytes(o.data, 'little', signed=True)}")
        elif not o.data:
            parts.append(f"{o.name}{sep}?")
        else:
            parts.append(f"{o.name}{sep}{'_'.join(o.lanes_hex())}")
    return " ".join(parts)


# ---------------------------------------------------------------------- diff
@dataclass
class LaneDiff:
    """One differing lane of an operand: lane index and both values (hex)."""

    lane: int
    a: str
    b: str


@dataclass
class Divergence:
    """The first divergent record pair."""

    index_a: int | None
    index_b: int | None
    seq: int
    seq_b: int | None
    op: str
    op_b: str | None
    what: str                      # "op", "bundle", "kernel", "partition", "operand count", "operand", "only in A" ...
    operand: int | None = None
    operand_desc: str = ""
    lanes: list[LaneDiff] | None = None
    detail: str = ""

    def describe(self) -> str:
        """One line naming the first divergence and what differs."""
        other = f" (B seq {self.seq_b})" if self.seq_b is not None and self.seq_b != self.seq else ""
        where = f"seq {self.seq}" + other
        if self.what in ("only in A", "only in B"):
            return f"first divergence: {self.what}: {where} {self.op}"
        s = f"first divergence: {where} {self.op}"
        if self.op_b and self.op_b != self.op:
            s += f" vs {self.op_b}"
        if self.what == "operand":
            n = len(self.lanes or [])
            s += f": {self.operand_desc}: {n} lane{'s' if n != 1 else ''} differ"
        else:
            s += f": {self.what} differs ({self.detail})"
        return s

    def as_json(self) -> dict[str, Any]:
        """The divergence as a JSON object (``q7emu trace diff --json``)."""
        return {"what": self.what, "index_a": self.index_a, "index_b": self.index_b, "seq": self.seq,
                "seq_b": self.seq_b, "op": self.op, "op_b": self.op_b, "operand": self.operand,
                "operand_desc": self.operand_desc or None, "detail": self.detail or None,
                "lanes": [{"lane": x.lane, "a": x.a, "b": x.b} for x in self.lanes] if self.lanes is not None else None}


DIFF_FORMAT = "q7emu-trace-diff"
DIFF_VERSION = 1


@dataclass
class DiffResult:
    """The result of :func:`diff`: how many record pairs were compared and differ, the first
    divergence, and the records only one side has."""

    align: str
    compared: int
    differing: int
    only_a: int
    only_b: int
    first: Divergence | None
    first_seq: int | None
    last_seq: int | None
    #: the first :data:`MAX_DIFF_SEQS` seqs of differing records (``differing`` counts them all)
    differing_seqs: list[int] = field(default_factory=list)

    @property
    def same(self) -> bool:
        """True when nothing differs and neither side has extra records."""
        return self.differing == 0 and self.only_a == 0 and self.only_b == 0

    def summary(self) -> str:
        """One line: records compared, differing, only in A / B."""
        s = f"{self.compared} records compared (align {self.align}), {self.differing} differ"
        if self.differing:
            s += f" (first seq {self.first_seq}, last seq {self.last_seq})"
        if self.only_a or self.only_b:
            s += f"; {self.only_a} only in A, {self.only_b} only in B"
        return s

    def format(self, max_lanes: int = 16) -> str:
        """The summary plus the first divergence with at most ``max_lanes`` differing lanes."""
        lines = []
        if self.first is not None:
            lines.append(self.first.describe())
            for ld in (self.first.lanes or [])[:max_lanes]:
                lines.append(f"  lane {ld.lane:>2}: A {ld.a}  B {ld.b}")
            if self.first.lanes and len(self.first.lanes) > max_lanes:
                lines.append(f"  ... {len(self.first.lanes) - max_lanes} more lanes")
        else:
            lines.append("traces are identical" if self.same else "no differing record pairs")
        lines.append(self.summary())
        return "\n".join(lines)

    def as_json(self, max_seqs: int = 1000) -> dict[str, Any]:
        """The result as the documented JSON object (docs/traces.md §5; format ``q7emu-trace-diff`` v1)."""
        return {"format": DIFF_FORMAT, "version": DIFF_VERSION, "align": self.align, "same": self.same,
                "compared": self.compared, "differing": self.differing, "only_a": self.only_a,
                "only_b": self.only_b, "first_seq": self.first_seq, "last_seq": self.last_seq,
                "first": self.first.as_json() if self.first is not None else None,
                "differing_seqs": self.differing_seqs[:max_seqs],
                "differing_seqs_truncated": len(self.differing_seqs) > max_seqs}


#: random odd multipliers of the record fingerprints (fixed: fingerprints are compared across files)
_MULT = np.random.default_rng(0x5EED_7B_E3).integers(1, 1 << 62, size=(2, 64), dtype=np.uint64) * np.uint64(2) \
    + np.uint64(1)


@dataclass
class _Summary:
    """Per record of a trace: run, seq, op and a 128-bit fingerprint of everything but the seq."""

    run: np.ndarray
    seq: np.ndarray
    op: np.ndarray
    h0: np.ndarray
    h1: np.ndarray


def _fingerprints(b: Block) -> tuple[np.ndarray, np.ndarray]:
    """Two independent 64-bit fingerprints per record of a block (op, kernel, bundle, partition, operand
    descriptors and bytes): equal records give equal fingerprints; different ones differ in both with
    probability 1 - 2**-128."""
    r, o = b.records, b.operands
    n = r.size
    out = []
    with np.errstate(over="ignore"):
        op_words = np.ascontiguousarray(r["op"]).view("<u8").reshape(n, NAME_BYTES // 8)
        nb = o["nbytes"].astype(np.int64)
        for h in range(2):
            m = _MULT[h]
            # op words 2, 3 (characters 16..31) are zero for a mnemonic of at most 15 characters
            rec_h = (op_words[:, 0] * m[0] + op_words[:, 1] * m[1] + op_words[:, 2] * m[32] + op_words[:, 3] * m[33]
                     + r["kernel"].astype(np.uint64) * m[2]
                     + r["bundle"].astype(np.uint64) * m[3] + r["partition"].astype(np.uint64) * m[4]
                     + r["n_operands"].astype(np.uint64) * m[5])
            if o.size:
                desc = (o["kind"].astype(np.uint64) | o["role"].astype(np.uint64) << np.uint64(8)
                        | o["reg"].astype(np.uint64) << np.uint64(16) | o["view"].astype(np.uint64) << np.uint64(24)
                        | nb.astype(np.uint64) << np.uint64(32))
                oh = desc * m[6]
                # operand bytes: 8-byte words (every stored operand is 8, 64 or 192 bytes)
                words = nb // 8
                if (nb % 8).any():
                    raise TraceError("an operand of a length that is not a multiple of 8 bytes")
                maxw = int(words.max()) if words.size else 0
                wd = b.data.view("<u8") if b.data.size % 8 == 0 else np.frombuffer(b.data.tobytes(), "<u8")
                woff = o["offset"].astype(np.int64) // 8
                for k in range(min(maxw, 24)):
                    sel = np.nonzero(words > k)[0]
                    oh[sel] += wd[woff[sel] + k] * m[8 + k]
                oh = (oh ^ (oh >> np.uint64(29))) * m[40]
                j = (np.arange(o.size) - np.repeat(r["operand0"].astype(np.int64), r["n_operands"].astype(np.int64)))
                oh = oh * m[(41 + j) % 64]
                acc = np.zeros(n, np.uint64)
                has = np.nonzero(r["n_operands"])[0]
                acc[has] = np.add.reduceat(oh, r["operand0"][has].astype(np.int64))
                rec_h = rec_h + acc
            out.append(rec_h ^ (rec_h >> np.uint64(31)))
    return out[0], out[1]


def _summarise(src: Trace | TraceFile) -> _Summary:
    parts: list[tuple[np.ndarray, ...]] = []
    blocks = [Block(src.records, src.operands, src.data)] if isinstance(src, Trace) else src.blocks()
    for b in blocks:
        if b.records.size == 0:
            continue
        h0, h1 = _fingerprints(b)
        parts.append((b.records["run"].astype(np.int64), b.records["seq"].copy(), b.records["op"].copy(), h0, h1))
    if not parts:
        z = np.zeros(0, np.int64)
        return _Summary(z, np.zeros(0, np.uint64), np.zeros(0, OP_DTYPE), np.zeros(0, np.uint64),
                        np.zeros(0, np.uint64))
    return _Summary(*(np.concatenate([p[i] for p in parts]) for i in range(5)))


def _record(src: Trace | TraceFile, i: int) -> Op:
    """Record ``i`` (in file order) of a trace or trace file."""
    if isinstance(src, Trace):
        return src[i]
    if src._trace is not None:
        return src._trace[i]
    starts = [e[11] for e in src.index]
    k = int(np.searchsorted(starts, i, side="right")) - 1
    e = src.index[k]
    b = decode_block(src.raw_block(k), src.names[e[4]], e[4], f"{src.where}: block {k}")
    op = Trace(b.records, b.operands, b.data)[i - e[11]]
    op.index = i
    return op


def _describe_pair(a: Trace | TraceFile, ia: int, b: Trace | TraceFile, ib: int) -> Divergence:
    ra, rb = _record(a, ia), _record(b, ib)
    d = Divergence(ia, ib, ra.seq, rb.seq, ra.op, rb.op, "")
    for fname, va, vb in (("op", ra.op, rb.op), ("kernel", ra.kernel_name, rb.kernel_name),
                          ("bundle", ra.bundle, rb.bundle), ("partition", ra.partition, rb.partition),
                          ("operand count", len(ra.operands), len(rb.operands))):
        if va != vb:
            d.what, d.detail = fname, f"A {va}, B {vb}"
            return d
    for oa, ob in zip(ra.operands, rb.operands):
        if (oa.kind, oa.role, oa.reg, oa.view, len(oa.data)) != (ob.kind, ob.role, ob.reg, ob.view, len(ob.data)):
            d.what, d.operand, d.operand_desc = "operand shape", oa.index, oa.describe()
            d.detail = f"A {oa.describe()}, B {ob.describe()}"
            return d
        if oa.data != ob.data:
            ha, hb = oa.lanes_hex(), ob.lanes_hex()
            d.what, d.operand, d.operand_desc = "operand", oa.index, oa.describe()
            d.lanes = [LaneDiff(k, x, y) for k, (x, y) in enumerate(zip(ha, hb)) if x != y]
            return d
    d.what, d.detail = "record", "fingerprints differ"
    return d


def _align_op(ma: Sequence[int], mb: Sequence[int], run: int = 8, lookahead: int = 4096
              ) -> list[tuple[int | None, int | None]]:
    """Pair records by mnemonic sequence: walk both; at a mnemonic mismatch skip the fewest records in one
    trace (up to ``lookahead``) after which ``run`` mnemonics (or the rest) match again; with none, compare
    the two records as a substituted pair. A skip of d in A is tried before a skip of d in B.

    Near-linear: the next place where a ``run``-gram occurs is looked up in a per-gram position list
    (bisect) instead of scanning the lookahead window, so dissimilar traces cost O(n log n)."""
    import bisect

    na, nb = len(ma), len(mb)
    ga = _gram_ids(ma, mb, run)
    gram_a, gram_b, pos_a, pos_b = ga

    def resyncs(x: int, y: int) -> bool:
        k = min(run, na - x, nb - y)
        return ma[x:x + k] == mb[y:y + k]

    def first_skip(i: int, j: int, skip_a: bool) -> int | None:
        """Smallest d in 1..lookahead such that resyncs(i + d, j) (skip_a) or resyncs(i, j + d)."""
        x0, y0, n_x, n_y = (i, j, na, nb) if skip_a else (j, i, nb, na)
        best = None
        if n_y - y0 >= run:                            # full grams on the fixed side: a position-list lookup
            g = (gram_b if skip_a else gram_a)[y0]
            lst = (pos_a if skip_a else pos_b).get(g, [])
            k = bisect.bisect_right(lst, x0)
            if k < len(lst) and lst[k] - x0 <= lookahead and lst[k] + run <= n_x:
                best = lst[k] - x0
            # the moving side's tail (fewer than `run` left) compares shorter windows
            for x in range(max(x0 + 1, n_x - run + 1), min(n_x, x0 + lookahead) + 1):
                if best is not None and x - x0 >= best:
                    break
                if (resyncs(x, y0) if skip_a else resyncs(y0, x)):
                    best = x - x0
                    break
        else:                                          # the fixed side's tail: compare directly (short)
            for x in range(x0 + 1, min(n_x, x0 + lookahead) + 1):
                if (resyncs(x, y0) if skip_a else resyncs(y0, x)):
                    best = x - x0
                    break
        return best

    pairs: list[tuple[int | None, int | None]] = []
    i = j = 0
    while i < na and j < nb:
        if ma[i] == mb[j]:
            pairs.append((i, j))
            i += 1
            j += 1
            continue
        da = first_skip(i, j, True)
        db = first_skip(i, j, False)
        if da is None and db is None:
            pairs.append((i, j))           # a substituted op: compare it as a pair
            i += 1
            j += 1
        elif db is None or (da is not None and da <= db):
            pairs.extend((i + k, None) for k in range(da))
            i += da
        else:
            pairs.extend((None, j + k) for k in range(db))
            j += db
    pairs.extend((k, None) for k in range(i, na))
    pairs.extend((None, k) for k in range(j, nb))
    return pairs


def _gram_ids(ma: Sequence[int], mb: Sequence[int], run: int
              ) -> tuple[list[int], list[int], dict[int, list[int]], dict[int, list[int]]]:
    """Ids of the ``run``-grams starting at each position of both sequences (equal id = equal gram) and, per
    id, the sorted positions where it starts in each."""
    ids: dict[tuple, int] = {}

    def grams(m: Sequence[int]) -> tuple[list[int], dict[int, list[int]]]:
        out, pos = [], {}
        t = tuple(m)
        for p in range(max(len(t) - run + 1, 0)):
            g = ids.setdefault(t[p:p + run], len(ids))
            out.append(g)
            pos.setdefault(g, []).append(p)
        return out, pos

    ga, pa = grams(ma)
    gb, pb = grams(mb)
    return ga, gb, pa, pb


def operand_orders(runs: Iterable[dict[str, Any]]) -> list[str]:
    """The operand convention of each run (docs/traces.md §1.4): its ``operand_order``. The file readers give a run
    written before the field existed :data:`LEGACY_OPERAND_ORDER`; a run built in memory without it (raw
    records of this q7emu's kernels) is :data:`OPERAND_ORDER`."""
    return [str(r.get("operand_order", OPERAND_ORDER)) for r in runs]


class OperandOrderMismatch(TraceError):
    """Two traces (or runs of one) recorded under different operand conventions: their operand lists do not
    compare (docs/traces.md §1.4)."""


def check_same_operand_order(a: Trace | TraceFile, b: Trace | TraceFile) -> None:
    """Raise :class:`OperandOrderMismatch` (one line) unless every run of both traces has one operand convention."""
    oa, ob = set(operand_orders(a.runs)), set(operand_orders(b.runs))
    if len(oa | ob) > 1:
        def say(o: set[str]) -> str:
            return " and ".join(OPERAND_ORDERS.get(x, x) for x in sorted(o)) or "no run"
        raise OperandOrderMismatch(f"A was recorded under {say(oa)}, B under {say(ob)}: their operand lists do not "
                                   "compare; record both with one q7emu version (docs/traces.md §1.4)")


def diff(a: Trace | TraceFile, b: Trace | TraceFile, align: str = "seq") -> DiffResult:
    """Compare two traces record by record (in-memory traces or files opened with :class:`TraceFile`).

    Traces recorded under different operand conventions (docs/traces.md §1.4) are refused with one
    :class:`OperandOrderMismatch` instead of a divergence at every op.

    ``align="seq"`` pairs records with the same (run, seq); ``align="op"`` pairs them along the mnemonic
    sequence (resynchronising after records present in only one trace). Two paired records differ when
    anything but the sequence number differs (mnemonic, kernel, bundle, partition, operands, lanes).
    Files are read block by block; what is kept per record is its run, seq, mnemonic and a 128-bit
    fingerprint, and the first divergent pair is read back through the block index.
    """
    if align not in ("seq", "op"):
        raise InvalidArgument("align", align, "must be 'seq' or 'op'")
    check_same_operand_order(a, b)
    cap = limit("Q7EMU_MAX_DIFF_RECORDS")          # memory is ~190 bytes per record of both traces
    total = (len(a) if isinstance(a, Trace) else a.records) + (len(b) if isinstance(b, Trace) else b.records)
    if total > cap:
        raise InvalidArgument("trace diff", f"{total} records", f"more than the limit of {cap} records of both "
                              "traces together (Q7EMU_MAX_DIFF_RECORDS, docs/limits.md §2): narrow the traces "
                              "(trace --window / --ops / --partitions) or raise the limit")
    sa, sb = _summarise(a), _summarise(b)
    if align == "seq":
        def order(s: _Summary) -> np.ndarray:
            return np.lexsort((s.seq, s.run))
        oa, ob = order(sa), order(sb)
        ka = np.stack((sa.run[oa].astype(np.uint64), sa.seq[oa]), 1) if oa.size else np.zeros((0, 2), np.uint64)
        kb = np.stack((sb.run[ob].astype(np.uint64), sb.seq[ob]), 1) if ob.size else np.zeros((0, 2), np.uint64)
        va = ka.view([("r", "<u8"), ("s", "<u8")]).reshape(-1)
        vb = kb.view([("r", "<u8"), ("s", "<u8")]).reshape(-1)
        both, ia_, ib_ = np.intersect1d(va, vb, assume_unique=False, return_indices=True)
        ia, ib = oa[ia_], ob[ib_]
        pa = np.sort(ia)
        pos = np.argsort(ia, kind="stable")
        pb = ib[pos]
        only_a_idx = np.setdiff1d(np.arange(sa.run.size), ia)
        only_b_idx = np.setdiff1d(np.arange(sb.run.size), ib)
        dif = (sa.h0[pa] != sb.h0[pb]) | (sa.h1[pa] != sb.h1[pb])
        compared = int(pa.size)
        dif_rows = np.nonzero(dif)[0]
        seqs = sa.seq[pa[dif_rows[:MAX_DIFF_SEQS]]].tolist()        # kept: bounded, not one per difference
        last_seq = int(sa.seq[pa[dif_rows[-1]]]) if dif_rows.size else None
        first = _describe_pair(a, int(pa[dif_rows[0]]), b, int(pb[dif_rows[0]])) if dif_rows.size else None
        first_extra = None
        if first is None and (only_a_idx.size or only_b_idx.size):
            # the earliest extra record by (run, seq)
            cand = []
            if only_a_idx.size:
                i = int(only_a_idx[np.lexsort((sa.seq[only_a_idx], sa.run[only_a_idx]))[0]])
                cand.append(((int(sa.run[i]), int(sa.seq[i])), "A", i))
            if only_b_idx.size:
                i = int(only_b_idx[np.lexsort((sb.seq[only_b_idx], sb.run[only_b_idx]))[0]])
                cand.append(((int(sb.run[i]), int(sb.seq[i])), "B", i))
            _, side, i = min(cand)
            src = a if side == "A" else b
            r = _record(src, i)
            first_extra = (Divergence(i, None, r.seq, None, r.op, None, "only in A") if side == "A"
                           else Divergence(None, i, r.seq, r.seq, r.op, None, "only in B"))
        return DiffResult(align, compared, int(dif_rows.size), int(only_a_idx.size), int(only_b_idx.size),
                          first or first_extra, seqs[0] if seqs else None, last_seq, seqs)
    names: dict[bytes, int] = {}
    ma = [names.setdefault(x, len(names)) for x in sa.op.tolist()]
    mb = [names.setdefault(x, len(names)) for x in sb.op.tolist()]
    pairs = _align_op(ma, mb)
    compared = differing = only_a = only_b = 0
    last_seq = 0
    first: Divergence | None = None
    seqs: list[int] = []
    first_extra: Divergence | None = None
    for x, y in pairs:
        if x is None or y is None:
            if x is None:
                only_b += 1
                if first_extra is None:
                    r = _record(b, y)
                    first_extra = Divergence(None, y, r.seq, r.seq, r.op, None, "only in B")
            else:
                only_a += 1
                if first_extra is None:
                    r = _record(a, x)
                    first_extra = Divergence(x, None, r.seq, None, r.op, None, "only in A")
            continue
        compared += 1
        if sa.h0[x] != sb.h0[y] or sa.h1[x] != sb.h1[y]:
            differing += 1
            last_seq = int(sa.seq[x])
            if len(seqs) < MAX_DIFF_SEQS:
                seqs.append(last_seq)
            if first is None:
                first = _describe_pair(a, x, b, y)
    return DiffResult(align, compared, differing, only_a, only_b, first or first_extra,
                      seqs[0] if seqs else None, last_seq if seqs else None, seqs)
