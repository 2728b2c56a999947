"""Lane-level traces of the emulated kernels: record, store, export, show and diff.

Recording
---------
Pass a :class:`Recorder` as ``trace=`` to :func:`q7emu.dequantize`, :func:`q7emu.quantize_mx` or
``Machine.execute``. The kernel's TracerP specialisation (src/q7trace.pxd) writes one raw record per
executed primitive; the API hands the bytes to :meth:`Recorder.add_run` together with the kernel name and
the knobs. ``Recorder(window=(lo, hi))`` records only sequence numbers ``lo <= seq < hi`` (every executed
primitive still counts), ``Recorder(ops=[...])`` only the named mnemonics. ``recorder.trace`` is the
parsed :class:`Trace`. Parsing is deferred until first use, so a recorded run costs the kernel's own
recording plus one bytes copy.

A record holds: run index (one per kernel call), sequence number (counts every executed primitive of the
run, across partitions), partition, kernel id (:class:`q7emu.model.kernels.KernelId`: 1 proc_4bit_non_mx,
2 proc_4bit_mx_8, 3 proc_6bit_non_mx, 4 quantize_mx), bundle index in the kernel listing (``B<n>`` in
src/kernels/_dequant.pyx / src/kernels/_quantize_mx.pyx), mnemonic and its operands. An operand has kind (vec,
wvec, vbool, pr, scalar), role (src = value before
the op, dst = after), register index (255 immediate, 254 memory offset, 253 length for scalars), lane view
and its bytes (vec 64, wvec 192 = the raw architectural image, vbool 8, pr 8, scalar 8 = int64).

In memory (:class:`Trace`) the records are numpy structured arrays:

``records`` (:data:`RECORD_DTYPE`, one row per record, in recording order)::

    run u2, seq u4, partition u4, kernel u1, bundle u2, op S16 (mnemonic, NUL padded),
    n_operands u1, operand0 u4 (index of the record's first row in ``operands``)

``operands`` (:data:`OPERAND_DTYPE`, one row per operand, grouped by record in order)::

    record u4 (row in ``records``), kind u1 (1 vec 2 wvec 3 vbool 4 pr 5 scalar), role u1 (0 src 1 dst),
    reg u1, view u1 (:data:`VIEWS` index), nbytes u4, offset u8 (into ``data``)

``data``: uint8 blob, every operand's bytes concatenated in operand order.

Binary trace file (``.q7t``; format ``q7emu-trace`` version 1), all integers little-endian::

    offset 0   8 bytes  magic b"Q7TRACE\\0"
    offset 8   u32      format version (1)
    offset 12  u32      H = length of the JSON header
    offset 16  H bytes  header, UTF-8 JSON object:
                 {"format": "q7emu-trace", "version": 1, "q7emu_version": "0.1.0",
                  "case": "<case path, 'record:<hex>' or a free label>",
                  "runs": [{"kernel": "proc_4bit_non_mx", "kernel_id": 1, "knobs": {...},
                            "window": [lo, hi] | null, "ops": [..] | null, "records": n}, ...],
                  "arrays": [{"name": "records", "descr": <numpy dtype descr>, "count": n,
                              "offset": <absolute byte offset>, "nbytes": b}, ... "operands", "data"]}
    then each array's bytes at its offset (8-byte aligned, zero padding between).

The file is written deterministically (no timestamps), so saving the same trace twice gives the same
bytes, and a trace that went through JSON Lines saves to the identical file. :meth:`Trace.to_raw`
rebuilds the kernel's raw record stream byte for byte (the layout in src/q7trace.pxd).

JSON Lines export (``.jsonl``; format ``q7emu-trace-jsonl`` version 1): line 1 is the header object
(``{"format": "q7emu-trace-jsonl", "version": 1, "q7emu_version": ..., "case": ..., "runs": [...]}``), then
one object per op::

    {"run": 0, "seq": 13, "partition": 0, "kernel": "proc_4bit_non_mx", "bundle": 1, "op": "lav2nx8_xp",
     "operands": [{"role": "src", "kind": "scalar", "reg": 254, "view": "scalar", "lanes": ["0000000000000000"]},
                  {"role": "dst", "kind": "vec", "reg": 20, "view": "2nx8", "lanes": ["12", "34", ...]}]}

``lanes`` are lane 0 first, each a fixed-width hex string (no ``0x``) of the lane's bits in the named view:
2nx8 64 x 8, nx16 / nxf16 32 x 16, n_2x32 / n_2xf32 16 x 32, w24 64 x 24, w48 32 x 48, w96 16 x 96 bits,
vb8 / vb16 / vb32 64 / 32 / 16 lanes of 1 / 2 / 4 predicate bits (lane k = bits [kW/8, (k+1)W/8) of the
64-bit vbool), pr and scalar one 64-bit lane. Export then import gives back the identical records
(and the identical JSON Lines text). A trace converted from another tool needs only ``op`` and
``operands`` per line; ``seq`` defaults to the line's index, ``run``/``partition`` to 0, ``bundle`` to
65535 (unknown), ``reg`` to 255, ``view`` to the kind's default; ``kernel`` may be a name or id.
"""
from __future__ import annotations

import io
import json
import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from q7emu._version import __version__
from q7emu.errors import InvalidArgument, Q7Error
from q7emu.model.kernels import KernelId

# ---------------------------------------------------------------------- raw record layout (q7trace.pxd)
HEADER_BYTES = 32
OPERAND_HEADER_BYTES = 8
KINDS = {1: "vec", 2: "wvec", 3: "vbool", 4: "pr", 5: "scalar"}
KIND_IDS = {v: k for k, v in KINDS.items()}
ROLES = {0: "src", 1: "dst"}
ROLE_IDS = {v: k for k, v in ROLES.items()}
#: view index -> (name, lane bits); order of the VIEW_* enum in src/q7trace.pxd
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

RECORD_DTYPE = np.dtype([("run", "<u2"), ("seq", "<u4"), ("partition", "<u4"), ("kernel", "u1"),
                         ("bundle", "<u2"), ("op", "S16"), ("n_operands", "u1"), ("operand0", "<u4")])
OPERAND_DTYPE = np.dtype([("record", "<u4"), ("kind", "u1"), ("role", "u1"), ("reg", "u1"), ("view", "u1"),
                          ("nbytes", "<u4"), ("offset", "<u8")])

MAGIC = b"Q7TRACE\0"
FILE_FORMAT = "q7emu-trace"
FILE_VERSION = 1
JSONL_FORMAT = "q7emu-trace-jsonl"
JSONL_VERSION = 1
MAX_OPS_FILTER = 64      # the kernels keep at most 64 mnemonics in the op filter
KERNEL_ONLY_OPS = ("lv2nx8_i", "dextrprn_2x32", "extrprn_2x32")


class TraceError(Q7Error):
    """A malformed trace file, JSON Lines line or raw record stream."""


def known_mnemonics() -> set[str]:
    """Every mnemonic a kernel can record (the IVP primitive table plus the kernel-only loads)."""
    try:
        from q7emu.primitives import ivp
        names = {r[0] for r in ivp.list()}
    except ImportError:         # pure-Python use (no build): accept any name
        return set()
    return names | set(KERNEL_ONLY_OPS)


# ---------------------------------------------------------------------- lanes
def lane_layout(view: int, nbytes: int) -> tuple[int, int]:
    """(lane count, lane bits) of an operand of ``nbytes`` bytes in view index ``view``."""
    if not 0 <= view < len(VIEWS):
        raise TraceError(f"unknown lane view {view}")
    bits = VIEWS[view][1]
    if (8 * nbytes) % bits:
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
    if total % 8 or (nbytes is not None and total != 8 * nbytes):
        raise TraceError(f"{len(lanes)} lanes of {bits} bits in view {VIEWS[view][0]} do not make "
                         f"{nbytes if nbytes is not None else 'whole'} bytes")
    if bits % 8 == 0:
        w = bits // 8
        try:
            raw = bytes.fromhex("".join(s.rjust(2 * w, "0") if len(s) <= 2 * w else "!" for s in lanes))
        except ValueError:
            raise TraceError(f"bad hex lane in view {VIEWS[view][0]} (each lane at most {2 * w} digits)") from None
        return np.frombuffer(raw, np.uint8).reshape(len(lanes), w)[:, ::-1].tobytes()
    x = 0
    for k, s in enumerate(lanes):
        try:
            v = int(s, 16)
        except (TypeError, ValueError):
            raise TraceError(f"bad hex lane {s!r}") from None
        if v >> bits:
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


# ---------------------------------------------------------------------- parsing the raw stream
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


def parse_raw(raw: bytes | bytearray | memoryview, run: int = 0
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Raw records (src/q7trace.pxd layout) -> (records, operands, data); ``operands.offset`` index ``data``."""
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

    def u(pos: np.ndarray, width: int) -> np.ndarray:
        out = np.zeros(pos.shape, np.uint64)
        for j in range(width):
            out |= buf[pos + j].astype(np.uint64) << np.uint64(8 * j)
        return out

    rec["run"] = run
    rec["seq"] = u(st, 4)
    rec["bundle"] = u(st + 4, 2)
    rec["kernel"] = buf[st + 6]
    rec["n_operands"] = buf[st + 7]
    rec["partition"] = u(st + 12, 4)
    rec["op"] = buf[st[:, None] + np.arange(16, 32)].view("S16").reshape(nrec)
    rlen = u(st + 8, 4).astype(np.int64)
    nops = rec["n_operands"].astype(np.int64)
    # operands: walk k = 0, 1, ... over every record that has a k-th operand (vectorised over records)
    rows_rec, rows_pos = [], []
    pos = st + HEADER_BYTES
    for k in range(int(nops.max()) if nrec else 0):
        sel = np.nonzero(nops > k)[0]
        p = pos[sel]
        rows_rec.append(sel)
        rows_pos.append(p)
        pos[sel] = p + OPERAND_HEADER_BYTES + u(p + 4, 4).astype(np.int64)
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
    nb = u(opos + 4, 4).astype(np.int64)
    ops["nbytes"] = nb
    ops["offset"] = np.cumsum(nb) - nb
    data = np.zeros(int(nb.sum()), np.uint8)
    _move_segments(buf, opos + OPERAND_HEADER_BYTES, data, ops["offset"].astype(np.int64), nb)
    first = np.zeros(nrec, np.int64)
    if nrec:
        cnt = np.bincount(orec, minlength=nrec) if orec.size else np.zeros(nrec, np.int64)
        first[1:] = np.cumsum(cnt)[:-1]
    rec["operand0"] = first
    return rec, ops, data


# ---------------------------------------------------------------------- the trace
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


class Trace:
    """A parsed lane-level trace (see the module docstring for the arrays and file formats)."""

    def __init__(self, records: np.ndarray | None = None, operands: np.ndarray | None = None,
                 data: np.ndarray | None = None, runs: list[dict[str, Any]] | None = None,
                 case: str = "", q7emu_version: str = __version__) -> None:
        self.records = records if records is not None else np.zeros(0, RECORD_DTYPE)
        self.operands = operands if operands is not None else np.zeros(0, OPERAND_DTYPE)
        self.data = data if data is not None else np.zeros(0, np.uint8)
        self.runs = list(runs or [])
        self.case = case
        self.q7emu_version = q7emu_version

    # ------------------------------------------------------------------ building
    @classmethod
    def from_runs(cls, runs: Sequence[tuple[bytes, dict[str, Any]]], case: str = "") -> Trace:
        """Build from (raw bytes, run info) pairs, run info as in the file header's ``runs``."""
        recs, opss, datas, infos = [], [], [], []
        nrec = nops = ndata = 0
        for i, (raw, info) in enumerate(runs):
            r, o, d = parse_raw(raw, run=i)
            r["operand0"] += nops
            o["record"] += nrec
            o["offset"] += ndata
            nrec, nops, ndata = nrec + r.size, nops + o.size, ndata + d.size
            recs.append(r)
            opss.append(o)
            datas.append(d)
            infos.append(dict(info, records=int(r.size)))
        if not recs:
            return cls(runs=infos, case=case)
        return cls(np.concatenate(recs), np.concatenate(opss), np.concatenate(datas), infos, case)

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
            keep &= np.isin(self.records["op"], np.array([n.encode() for n in names], "S16"))
        if seq is not None:
            lo, hi = seq
            if lo is not None:
                keep &= self.records["seq"] >= lo
            if hi is not None:
                keep &= self.records["seq"] < hi
        return np.nonzero(keep)[0]

    # ------------------------------------------------------------------ raw stream
    def record_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(start byte of every record, start byte of every operand header) in :meth:`to_raw`'s stream."""
        nb = self.operands["nbytes"].astype(np.int64)
        osz = OPERAND_HEADER_BYTES + nb
        ocum = np.concatenate(([0], np.cumsum(osz)))
        recidx = self.operands["record"].astype(np.int64)
        first = self.records["operand0"].astype(np.int64)
        rstart = HEADER_BYTES * np.arange(len(self), dtype=np.int64) + ocum[first] if len(self) else \
            np.zeros(0, np.int64)
        # operand j of record r sits after r+1 headers and all earlier operands
        opos = HEADER_BYTES * (recidx + 1) + ocum[:-1]
        return rstart, opos

    def to_raw(self, run: int | None = None) -> bytes:
        """The raw record stream (src/q7trace.pxd layout) of every run, or of one run."""
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
        out[rstart[:, None] + np.arange(16, 32)] = np.ascontiguousarray(r["op"]).view(np.uint8).reshape(n, 16)
        o = t.operands
        if o.size:
            out[opos] = o["kind"]
            out[opos + 1] = o["role"]
            out[opos + 2] = o["reg"]
            out[opos + 3] = o["view"]
            put(opos + 4, nb, 4)
            _move_segments(t.data, o["offset"].astype(np.int64), out, opos + OPERAND_HEADER_BYTES, nb)
        return out.tobytes()

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

    # ------------------------------------------------------------------ binary file
    def header(self) -> dict[str, Any]:
        """The file header fields (format, version, q7emu_version, case, runs)."""
        return {"format": FILE_FORMAT, "version": FILE_VERSION, "q7emu_version": self.q7emu_version,
                "case": self.case, "runs": self.runs}

    def to_bytes(self) -> bytes:
        """The ``.q7t`` file bytes (deterministic: the same trace always gives the same bytes)."""
        arrays = [("records", self.records, RECORD_DTYPE), ("operands", self.operands, OPERAND_DTYPE),
                  ("data", self.data, np.dtype(np.uint8))]
        meta = self.header()
        entries = [{"name": n, "descr": np.lib.format.dtype_to_descr(dt), "count": int(a.size),
                    "offset": 0, "nbytes": int(a.size * dt.itemsize)} for n, a, dt in arrays]
        # two passes: the offsets depend on the header's own length
        for _ in range(3):
            meta["arrays"] = entries
            head = json.dumps(meta, separators=(",", ":")).encode()
            pos = 16 + len(head)
            for e in entries:
                pos = (pos + 7) & ~7
                e["offset"] = pos
                pos += e["nbytes"]
        meta["arrays"] = entries
        head = json.dumps(meta, separators=(",", ":")).encode()
        out = bytearray(MAGIC + struct.pack("<II", FILE_VERSION, len(head)) + head)
        for (_name, a, dt), e in zip(arrays, entries):
            out += b"\0" * (e["offset"] - len(out))
            if len(out) != e["offset"]:
                raise TraceError("internal: trace file layout")
            out += np.ascontiguousarray(a, dtype=dt).tobytes()
        return bytes(out)

    def save(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_bytes` to ``path``; returns the path."""
        p = Path(path)
        p.write_bytes(self.to_bytes())
        return p

    @classmethod
    def from_bytes(cls, blob: bytes, where: str = "trace") -> Trace:
        """Parse ``.q7t`` file bytes; TraceError naming ``where`` when malformed."""
        if blob[:8] != MAGIC or len(blob) < 16:
            raise TraceError(f"{where}: not a q7emu trace file (bad magic)")
        version, hlen = struct.unpack_from("<II", blob, 8)
        if version != FILE_VERSION:
            raise TraceError(f"{where}: unsupported trace file version {version} (this q7emu reads {FILE_VERSION})")
        try:
            meta = json.loads(blob[16:16 + hlen].decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise TraceError(f"{where}: bad header ({e})") from None
        if not isinstance(meta, dict) or meta.get("format") != FILE_FORMAT:
            raise TraceError(f"{where}: header is not a {FILE_FORMAT} header")
        arrays = {}
        want = {"records": RECORD_DTYPE, "operands": OPERAND_DTYPE, "data": np.dtype(np.uint8)}
        for e in meta.get("arrays", []):
            try:
                dt = np.lib.format.descr_to_dtype(e["descr"] if isinstance(e["descr"], str)
                                                  else [tuple(x) for x in e["descr"]])
                off, cnt = int(e["offset"]), int(e["count"])
            except (KeyError, TypeError, ValueError) as ex:
                raise TraceError(f"{where}: bad array entry {e!r} ({ex})") from None
            if e.get("name") in want and dt != want[e["name"]]:
                raise TraceError(f"{where}: array {e['name']} has dtype {dt}, expected {want[e['name']]}")
            if off < 0 or off + cnt * dt.itemsize > len(blob):
                raise TraceError(f"{where}: array {e.get('name')} runs past the end of the file")
            arrays[e.get("name")] = np.frombuffer(blob, dt, cnt, off).copy()
        missing = set(want) - set(arrays)
        if missing:
            raise TraceError(f"{where}: missing arrays {sorted(missing)}")
        t = cls(arrays["records"], arrays["operands"], arrays["data"], meta.get("runs") or [],
                str(meta.get("case", "")), str(meta.get("q7emu_version", "")))
        t.validate(where)
        return t

    @classmethod
    def load(cls, path: str | os.PathLike) -> Trace:
        """Read a binary trace file, or a JSON Lines export (detected by its first byte)."""
        p = Path(path)
        try:
            blob = p.read_bytes()
        except FileNotFoundError:
            raise TraceError(f"{p}: no such trace file") from None
        if blob[:1] == b"{":
            return cls.from_jsonl(io.StringIO(blob.decode("utf-8")), where=str(p))
        return cls.from_bytes(blob, str(p))

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
        if o.size:
            if not np.array_equal(o["record"].astype(np.int64), np.repeat(np.arange(r.size), cnt)):
                raise TraceError(f"{where}: operand rows do not follow their records")
            nb = o["nbytes"].astype(np.int64)
            if not np.array_equal(o["offset"].astype(np.int64), np.cumsum(nb) - nb) or int(nb.sum()) != self.data.size:
                raise TraceError(f"{where}: operand data must fill the data blob in operand order")
            if (o["view"] >= len(VIEWS)).any():
                raise TraceError(f"{where}: unknown lane view index")

    # ------------------------------------------------------------------ JSON Lines
    def op_json(self, i: int) -> dict[str, Any]:
        """Record ``i`` as its JSON Lines object (lanes as hex strings)."""
        op = self[i]
        return {"run": op.run, "seq": op.seq, "partition": op.partition,
                "kernel": KERNELS.get(op.kernel, op.kernel),
                "bundle": op.bundle, "op": op.op,
                "operands": [{"role": o.role_name, "kind": o.kind_name, "reg": o.reg, "view": o.view_name,
                              "lanes": o.lanes_hex()} for o in op.operands]}

    def iter_jsonl(self) -> Iterator[str]:
        """The JSON Lines text: the header line, then one line per record (no newlines)."""
        head = {"format": JSONL_FORMAT, "version": JSONL_VERSION, "q7emu_version": self.q7emu_version,
                "case": self.case, "runs": self.runs}
        yield json.dumps(head, separators=(",", ":"))
        for i in range(len(self)):
            yield json.dumps(self.op_json(i), separators=(",", ":"))

    def to_jsonl(self, dest: str | os.PathLike | IO[str]) -> None:
        """Write the JSON Lines form to a path or a text stream."""
        if isinstance(dest, (str, os.PathLike)):
            with open(dest, "w", encoding="utf-8", newline="\n") as fh:
                self.to_jsonl(fh)
            return
        for line in self.iter_jsonl():
            dest.write(line + "\n")

    @classmethod
    def from_jsonl(cls, src: str | os.PathLike | IO[str], where: str | None = None) -> Trace:
        """Read a JSON Lines trace (a path or a text stream); TraceError naming ``where`` and the line."""
        if isinstance(src, (str, os.PathLike)):
            with open(src, encoding="utf-8") as fh:
                return cls.from_jsonl(fh, where=str(src))
        where = where or "jsonl"
        head: dict[str, Any] = {}
        rows: list[tuple] = []
        oprows: list[tuple] = []
        chunks: list[bytes] = []
        doff = 0
        n = 0
        for lineno, line in enumerate(src, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise TraceError(f"{where}:{lineno}: not JSON ({e})") from None
            if not isinstance(obj, dict):
                raise TraceError(f"{where}:{lineno}: each line must be a JSON object")
            if "format" in obj and "op" not in obj:
                if obj.get("format") != JSONL_FORMAT:
                    raise TraceError(f"{where}:{lineno}: header format {obj.get('format')!r} is not {JSONL_FORMAT}")
                head = obj
                continue
            try:
                name = obj["op"]
                if not isinstance(name, str) or not name or len(name.encode()) > 15:
                    raise TraceError("'op' must be a mnemonic of 1..15 characters")
                kern = obj.get("kernel", 0)
                kid = KERNEL_IDS.get(kern, kern) if isinstance(kern, str) else int(kern)
                if not isinstance(kid, int) or not 0 <= kid <= 255:
                    raise TraceError(f"unknown kernel {kern!r}")
                operands = obj.get("operands", [])
                if not isinstance(operands, list) or len(operands) > 255:
                    raise TraceError("'operands' must be a list")
                first = len(oprows)
                for k, od in enumerate(operands):
                    kind = od["kind"]
                    kind = KIND_IDS[kind] if isinstance(kind, str) else int(kind)
                    role = od.get("role", "src")
                    role = ROLE_IDS[role] if isinstance(role, str) else int(role)
                    view = od.get("view", DEFAULT_VIEW.get(kind, "2nx8"))
                    view = VIEW_IDS[view] if isinstance(view, str) else int(view)
                    reg = int(od.get("reg", 255))
                    lanes = od["lanes"]
                    if not isinstance(lanes, list):
                        raise TraceError(f"operand {k}: 'lanes' must be a list of hex strings")
                    data = bytes_from_lanes([str(s) for s in lanes], view, KIND_BYTES.get(kind))
                    if not (0 <= reg <= 255 and 0 <= role <= 255):
                        raise TraceError(f"operand {k}: reg / role out of range")
                    oprows.append((n, kind, role, reg, view, len(data), doff))
                    chunks.append(data)
                    doff += len(data)
                rows.append((int(obj.get("run", 0)), int(obj.get("seq", n)), int(obj.get("partition", 0)), kid,
                             int(obj.get("bundle", UNKNOWN_BUNDLE)), name.encode(), len(operands), first))
            except TraceError as e:
                raise TraceError(f"{where}:{lineno}: {e}") from None
            except (KeyError, TypeError, ValueError, OverflowError) as e:
                raise TraceError(f"{where}:{lineno}: bad op line ({type(e).__name__}: {e})") from None
            n += 1
        try:
            rec = np.array(rows, RECORD_DTYPE) if rows else np.zeros(0, RECORD_DTYPE)
            ops = np.array(oprows, OPERAND_DTYPE) if oprows else np.zeros(0, OPERAND_DTYPE)
        except OverflowError as e:
            raise TraceError(f"{where}: a field is out of range ({e})") from None
        data = np.frombuffer(b"".join(chunks), np.uint8).copy()
        runs = head.get("runs")
        if runs is None:
            runs = [{"kernel": KERNELS.get(int(k), str(int(k))), "kernel_id": int(k), "knobs": {},
                     "window": None, "ops": None, "records": int((rec["run"] == i).sum())}
                    for i, k in enumerate(_first_kernel_per_run(rec))]
        t = cls(rec, ops, data, runs, str(head.get("case", "")), str(head.get("q7emu_version", __version__)))
        t.validate(where)
        return t

    # ------------------------------------------------------------------ show
    def format_op(self, i: int, lanes: tuple[int | None, int | None] | None = None, per_row: int | None = None
                  ) -> str:
        """One record in its operands' lane views (hex lanes; ``lanes`` = [lo, hi) lane filter)."""
        op = self[i]
        b = "B?" if op.bundle == UNKNOWN_BUNDLE else f"B{op.bundle}"
        lines = [f"#{op.seq:<6} {b:<4} {op.op:<15} run {op.run} p{op.partition} {op.kernel_name}"]
        for o in op.operands:
            hx = o.lanes_hex()
            label = f"  {o.role_name} {o.name:<5} {o.view_name:<7}"
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

    def show(self, op: Iterable[str] | str | None = None, seq: tuple[int | None, int | None] | None = None,
             lanes: tuple[int | None, int | None] | None = None) -> Iterator[str]:
        """The formatted records selected by mnemonic / seq range, lanes limited to ``lanes``."""
        for i in self.select(op, seq):
            yield self.format_op(int(i), lanes)


def _first_kernel_per_run(rec: np.ndarray) -> list[int]:
    if rec.size == 0:
        return []
    out = []
    for run in range(int(rec["run"].max()) + 1):
        k = rec["kernel"][rec["run"] == run]
        out.append(int(k[0]) if k.size else 0)
    return out


# ---------------------------------------------------------------------- the recorder
class Recorder:
    """Collects the raw trace of every kernel run it is passed to (``trace=recorder``).

    ``window=(lo, hi)`` records sequence numbers lo <= seq < hi of each run; ``ops`` records only those
    mnemonics (at most 64). ``case`` is a free label stored in the file header. ``recorder.trace`` parses
    the collected runs into a :class:`Trace` (cached until the next run)."""

    def __init__(self, window: tuple[int, int] | None = None, ops: Iterable[str] | None = None,
                 case: str = "") -> None:
        self.window = check_window(window)
        self.ops = check_ops(ops)
        self.case = case
        self.raw_runs: list[tuple[bytes, dict[str, Any]]] = []
        self._trace: Trace | None = None

    def add_run(self, raw: Any, kernel: str, knobs: dict[str, Any] | None = None) -> None:
        """Called by the kernel APIs after a traced run with the raw records (q7trace.pxd layout; any
        bytes-like object, e.g. the kernels' zero-copy TraceBuffer, kept without a copy)."""
        info = {"kernel": kernel, "kernel_id": KERNEL_IDS.get(kernel, 0), "knobs": dict(knobs or {}),
                "window": list(self.window) if self.window is not None else None,
                "ops": list(self.ops) if self.ops is not None else None}
        self.raw_runs.append((raw if raw is not None else b"", info))
        self._trace = None

    @property
    def raw(self) -> bytes:
        """All runs' raw records concatenated."""
        return b"".join(r for r, _ in self.raw_runs)

    @property
    def trace(self) -> Trace:
        """The parsed :class:`Trace` of every run so far (parsed on first access)."""
        if self._trace is None:
            self._trace = Trace.from_runs(self.raw_runs, self.case)
        return self._trace

    def __len__(self) -> int:
        return len(self.trace)


def check_window(window: Any) -> tuple[int, int] | None:
    """A trace window as (lo, hi) sequence numbers, or None; InvalidArgument when malformed."""
    if window is None:
        return None
    try:
        lo, hi = (int(x) for x in window)
    except (TypeError, ValueError):
        raise InvalidArgument("window", window, "must be (start, end) integers") from None
    if not 0 <= lo <= hi <= 0xFFFFFFFF:
        raise InvalidArgument("window", window, "needs 0 <= start <= end <= 0xFFFFFFFF")
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
        if len(n.encode()) > 15 or (known and n not in known):
            raise InvalidArgument("ops", n, "not a mnemonic the kernels record (see `q7emu ops`)")
    return names


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


def _record_keys(t: Trace) -> list[bytes]:
    """Per record, its raw bytes without the sequence number (what 'same record' means)."""
    raw = t.to_raw()
    rstart, _ = t.record_bounds()
    ends = list(rstart[1:]) + [len(raw)]
    return [raw[int(s) + 4:int(e)] for s, e in zip(rstart, ends)]


def _describe_pair(a: Trace, ia: int, b: Trace, ib: int) -> Divergence:
    ra, rb = a[ia], b[ib]
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
    d.what, d.detail = "record", "raw bytes differ"
    return d


def _align_op(ma: list[int], mb: list[int], run: int = 8, lookahead: int = 4096) -> list[tuple[int | None, int | None]]:
    """Pair records by mnemonic sequence: walk both; at a mnemonic mismatch skip the fewest records in one
    trace (up to ``lookahead``) after which ``run`` mnemonics (or the rest) match again."""
    pairs: list[tuple[int | None, int | None]] = []
    i = j = 0
    na, nb = len(ma), len(mb)

    def resyncs(x: int, y: int) -> bool:
        # after skipping, the next `run` mnemonics (or all that is left of the shorter trace) match
        k = min(run, na - x, nb - y)
        return ma[x:x + k] == mb[y:y + k]

    while i < na and j < nb:
        if ma[i] == mb[j]:
            pairs.append((i, j))
            i += 1
            j += 1
            continue
        step = None
        for d in range(1, lookahead + 1):
            if i + d <= na and resyncs(i + d, j):
                step = ("a", d)
                break
            if j + d <= nb and resyncs(i, j + d):
                step = ("b", d)
                break
            if i + d > na and j + d > nb:
                break
        if step is None:
            pairs.append((i, j))           # a substituted op: compare it as a pair
            i += 1
            j += 1
        elif step[0] == "a":
            pairs.extend((i + k, None) for k in range(step[1]))
            i += step[1]
        else:
            pairs.extend((None, j + k) for k in range(step[1]))
            j += step[1]
    pairs.extend((k, None) for k in range(i, na))
    pairs.extend((None, k) for k in range(j, nb))
    return pairs


def diff(a: Trace, b: Trace, align: str = "seq") -> DiffResult:
    """Compare two traces record by record.

    ``align="seq"`` pairs records with the same (run, seq); ``align="op"`` pairs them along the mnemonic
    sequence (resynchronising after records present in only one trace). Two paired records differ when
    anything but the sequence number differs (mnemonic, kernel, bundle, partition, operands, lanes).
    """
    if align not in ("seq", "op"):
        raise InvalidArgument("align", align, "must be 'seq' or 'op'")
    ka, kb = _record_keys(a), _record_keys(b)
    if align == "seq":
        def keyed(t: Trace) -> dict[int, int]:
            k = (t.records["run"].astype(np.int64) << 32) | t.records["seq"].astype(np.int64)
            return dict(zip(k.tolist(), range(k.size)))
        ia, ib = keyed(a), keyed(b)
        keys = np.union1d(np.fromiter(ia, np.int64, len(ia)), np.fromiter(ib, np.int64, len(ib))).tolist()
        pairs = [(ia.get(k), ib.get(k)) for k in keys]
    else:
        names = {}
        ma = [names.setdefault(x, len(names)) for x in a.records["op"].tolist()]
        mb = [names.setdefault(x, len(names)) for x in b.records["op"].tolist()]
        pairs = _align_op(ma, mb)
    compared = differing = only_a = only_b = 0
    first: Divergence | None = None
    seqs: list[int] = []
    first_extra: Divergence | None = None
    for x, y in pairs:
        if x is None or y is None:
            if x is None:
                only_b += 1
                if first_extra is None:
                    r = b[y]
                    first_extra = Divergence(None, y, r.seq, r.seq, r.op, None, "only in B")
            else:
                only_a += 1
                if first_extra is None:
                    r = a[x]
                    first_extra = Divergence(x, None, r.seq, None, r.op, None, "only in A")
            continue
        compared += 1
        if ka[x] != kb[y]:
            differing += 1
            seqs.append(int(a.records["seq"][x]))
            if first is None:
                first = _describe_pair(a, x, b, y)
    return DiffResult(align, compared, differing, only_a, only_b, first or first_extra,
                      seqs[0] if seqs else None, seqs[-1] if seqs else None, seqs)


def load(path: str | os.PathLike) -> Trace:
    """Read a trace file (binary or JSON Lines)."""
    return Trace.load(path)
