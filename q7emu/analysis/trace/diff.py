"""Trace diff (docs/traces.md §5): record pairs aligned by sequence number or along the mnemonic sequence,
compared by 128-bit fingerprints, the first divergence read back in full."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import Any

import numpy as np

from q7emu._dataclass import dataclass
from q7emu.analysis.trace.blocks import Block, decode_block
from q7emu.analysis.trace.layout import MAX_DIFF_SEQS, NAME_BYTES, OP_DTYPE, OPERAND_ORDER, OPERAND_ORDERS, TraceError
from q7emu.analysis.trace.model import Trace, TraceFile
from q7emu.analysis.trace.ops import Op
from q7emu.errors import InvalidArgument
from q7emu.fileio import limit


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
        elif da is not None and (db is None or da <= db):
            pairs.extend((i + k, None) for k in range(da))
            i += da
        elif db is not None:
            pairs.extend((None, j + k) for k in range(db))
            j += db
    pairs.extend((k, None) for k in range(i, na))
    pairs.extend((None, k) for k in range(j, nb))
    return pairs


def _gram_ids(ma: Sequence[int], mb: Sequence[int], run: int
              ) -> tuple[list[int], list[int], dict[int, list[int]], dict[int, list[int]]]:
    """Ids of the ``run``-grams starting at each position of both sequences (equal id = equal gram) and, per
    id, the sorted positions where it starts in each."""
    ids: dict[tuple[int, ...], int] = {}

    def grams(m: Sequence[int]) -> tuple[list[int], dict[int, list[int]]]:
        out: list[int] = []
        pos: dict[int, list[int]] = {}
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


def _check_diff_size(a: Trace | TraceFile, b: Trace | TraceFile) -> None:
    """InvalidArgument when the two traces hold more records together than Q7EMU_MAX_DIFF_RECORDS (docs/limits.md
    §2): memory is ~190 bytes per record of both traces."""
    cap = limit("Q7EMU_MAX_DIFF_RECORDS")
    total = (len(a) if isinstance(a, Trace) else a.records) + (len(b) if isinstance(b, Trace) else b.records)
    if total > cap:
        raise InvalidArgument("trace diff", f"{total} records", f"more than the limit of {cap} records of both "
                              "traces together (Q7EMU_MAX_DIFF_RECORDS, docs/limits.md §2): narrow the traces "
                              "(trace --window / --ops / --partitions) or raise the limit")


def _earliest_extra(a: Trace | TraceFile, sa: _Summary, only_a: np.ndarray, b: Trace | TraceFile, sb: _Summary,
                    only_b: np.ndarray) -> Divergence:
    """The earliest record by (run, seq) that only one trace holds (``only_a`` / ``only_b``: their indices; one
    of them is not empty), as a Divergence."""
    cand = []
    if only_a.size:
        i = int(only_a[np.lexsort((sa.seq[only_a], sa.run[only_a]))[0]])
        cand.append(((int(sa.run[i]), int(sa.seq[i])), "A", i))
    if only_b.size:
        i = int(only_b[np.lexsort((sb.seq[only_b], sb.run[only_b]))[0]])
        cand.append(((int(sb.run[i]), int(sb.seq[i])), "B", i))
    _, side, i = min(cand)
    r = _record(a if side == "A" else b, i)
    return (Divergence(i, None, r.seq, None, r.op, None, "only in A") if side == "A"
            else Divergence(None, i, r.seq, r.seq, r.op, None, "only in B"))


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
    _check_diff_size(a, b)
    sa, sb = _summarise(a), _summarise(b)
    first: Divergence | None
    first_extra: Divergence | None
    seqs: list[int]
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
            first_extra = _earliest_extra(a, sa, only_a_idx, b, sb, only_b_idx)
        return DiffResult(align, compared, int(dif_rows.size), int(only_a_idx.size), int(only_b_idx.size),
                          first or first_extra, seqs[0] if seqs else None, last_seq, seqs)
    names: dict[bytes, int] = {}
    ma = [names.setdefault(x, len(names)) for x in sa.op.tolist()]
    mb = [names.setdefault(x, len(names)) for x in sb.op.tolist()]
    pairs = _align_op(ma, mb)
    compared = differing = only_a = only_b = 0
    last_seq = 0
    first = None
    seqs = []
    first_extra = None
    for x, y in pairs:
        if x is None or y is None:                     # never both: _align_op pairs at least one record
            if y is not None:
                only_b += 1
                if first_extra is None:
                    r = _record(b, y)
                    first_extra = Divergence(None, y, r.seq, r.seq, r.op, None, "only in B")
            elif x is not None:
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
