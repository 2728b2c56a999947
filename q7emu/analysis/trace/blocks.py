"""Block codecs: the full-operand raw record stream, and the compact v2 block (docs/traces.md §3) decoded
into arrays and encoded from records (the kernel recorder's encoder, in Python)."""
from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

import numpy as np

from q7emu._dataclass import dataclass
from q7emu.analysis.trace.lanes import _move_segments, _slot, _u
from q7emu.analysis.trace.layout import (
    BLK_DATA,
    BLK_EVENTS,
    BLK_OPERANDS,
    BLK_RECORDS,
    BLOCK_HEADER,
    BLOCK_MAGIC,
    EV_KERNEL,
    EV_PARTITION,
    EV_SEQ,
    EVENT_DTYPE,
    HEADER_BYTES,
    KIND_BYTES,
    MAX_MNEMONIC,
    MAX_NAMES,
    MAX_OP_DATA,
    MAX_OP_OPERANDS,
    OP_DTYPE,
    OPERAND_DTYPE,
    OPERAND_HEADER_BYTES,
    RECORD_DTYPE,
    SNAP_BASE,
    SNAP_BYTES,
    SNAP_REGS,
    U64_MAX,
    VIEWS,
    TraceError,
)
from q7emu.errors import OwnerThread


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


def _block_header(raw: memoryview, where: str) -> tuple[int, int, int, int, int, int, int, int]:
    """(first seq, partition, kernel, records, operands, events, data bytes, flags) of a raw block's header, each
    checked against the block's size and the format's limits (TraceError naming ``where``)."""
    if len(raw) < BLOCK_HEADER.size:
        raise TraceError(f"{where}: block of {len(raw)} bytes is shorter than its header")
    magic, flags, first_seq, part0, kern0, nrec, nopd, nev, dlen, snap = BLOCK_HEADER.unpack_from(raw, 0)
    if magic != BLOCK_MAGIC or flags > 1 or snap != SNAP_BYTES:
        raise TraceError(f"{where}: not a q7emu trace block (magic {bytes(magic)!r}, flags {flags}, snapshot {snap})")
    if nrec > BLK_RECORDS or nopd > BLK_OPERANDS or nev > BLK_EVENTS or dlen > BLK_DATA + MAX_OP_DATA or nrec == 0:
        raise TraceError(f"{where}: block counts out of range ({nrec} records, {nopd} operands, {nev} events, "
                         f"{dlen} data bytes)")
    o_data = BLOCK_HEADER.size + SNAP_BYTES + 4 * nrec + 4 * nopd + 16 * nev
    if o_data + dlen != len(raw):
        raise TraceError(f"{where}: block is {len(raw)} bytes, its header says {o_data + dlen}")
    if kern0 > 255 or first_seq + nrec - 1 > U64_MAX:
        raise TraceError(f"{where}: bad block header (kernel {kern0}, first seq {first_seq})")
    return first_seq, part0, kern0, nrec, nopd, nev, dlen, flags


def _record_fields(evs: np.ndarray, nrec: int, first_seq: int, part0: int, kern0: int, where: str
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seq uint64, partition uint32, kernel uint8) of each of a block's ``nrec`` records: the header's first
    values, changed from each event's record on (docs/traces.md §3.3); TraceError naming ``where`` for a bad
    event."""
    seq = np.arange(nrec, dtype=np.uint64) + np.uint64(first_seq)
    part = np.full(nrec, part0, np.uint32)
    kern = np.full(nrec, kern0, np.uint8)
    if evs.size:
        at = evs["record"].astype(np.int64)
        if (at == 0).any() or (at >= nrec).any() or (np.diff(at) < 0).any():
            raise TraceError(f"{where}: event record indices not in 1..{nrec - 1} ascending")
        for ev_kind in (EV_SEQ, EV_PARTITION, EV_KERNEL):
            sel = np.nonzero(evs["kind"] == ev_kind)[0]
            if not sel.size:
                continue
            idx = at[sel]
            if (np.diff(idx) <= 0).any():
                raise TraceError(f"{where}: two events of one kind at the same record")
            val = evs["value"][sel]
            seg = np.searchsorted(idx, np.arange(nrec), side="right") - 1     # last event at or before
            has = seg >= 0
            if ev_kind == EV_SEQ:
                base = np.where(has, val[np.maximum(seg, 0)], np.uint64(first_seq))
                start = np.where(has, idx[np.maximum(seg, 0)], 0).astype(np.uint64)
                seq = base + (np.arange(nrec, dtype=np.uint64) - start)
            elif ev_kind == EV_PARTITION:
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
    return seq, part, kern


def decode_block(raw: bytes | memoryview, names: Sequence[str], run: int = 0, where: str = "block",
                 values: bool = True) -> Block:
    """Decode one raw v2 block (docs/traces.md §3) of run ``run`` whose op ids index ``names``.

    Every size, count, id and offset is checked before use (TraceError naming ``where``). With ``values``
    False the register operands' bytes are not reconstructed (cheaper; the profile needs only the op
    stream, the operand descriptors and the scalars)."""
    raw = memoryview(raw).cast("B")
    first_seq, part0, kern0, nrec, nopd, nev, dlen, flags = _block_header(raw, where)
    o_recs = BLOCK_HEADER.size + SNAP_BYTES
    o_opds = o_recs + 4 * nrec
    o_evs = o_opds + 4 * nopd
    o_data = o_evs + 16 * nev
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
    seq, part, kern = _record_fields(evs, nrec, first_seq, part0, kern0, where)
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
    for k, snap_base in SNAP_BASE.items():
        in_snap = (kind == k) & (reg < SNAP_REGS[k])
        slot[in_snap] = snap_base + KIND_BYTES[k] * reg[in_snap]
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
        self._owner = OwnerThread("a BlockEncoder", "give each thread (each run) its own encoder")

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
        """One record: ``operands`` = (kind, role, reg, view, bytes) in recorded order (from one thread: another
        is refused with :class:`q7emu.errors.ConcurrentUse`)."""
        self._owner.check()
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
        self._owner.check()
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
