"""Inner-loop profiles of the emulated kernels, computed from counters kept while the kernel runs.

What a profile reports (``profile(trace)``; ``q7emu profile CASE|RECORD``):

* **per-mnemonic counts** -- executed primitives by mnemonic (QEMU howvec / SDE mix style); they equal
  the trace's op counts by construction;
* **per-bundle counts** -- for each (kernel, bundle index ``B<n>`` of the kernel listing): how many times
  the bundle issued and how many ops it carried;
* **estimated cycles** (the cycle model below), in total, per partition, per group and per output element;
* **emulator wall time per op family** -- ops x the host cost of one primitive call
  (``q7emu.primitives._ivp.time_op``: a nogil C loop, ns per 512-bit op; load / store ops are not timed there and
  show ``null``), plus the measured wall time of the whole run when the caller supplies it.

Cycle model (kept apart from the value model, like the Xtensa ISS cycle mode vs its fast functional mode):

1. **Issue.** Bundles issue in order at II = 1: walking the op stream, a new bundle issues each time the
   bundle index changes (or the run, kernel or partition changes). Each issue costs 1 cycle.
2. **MAC latency.** docs/firmware.md §6.2: MAC inputs are read at stage 10 and the accumulator at stage 12, II = 1,
   latency L = 2. A bundle that reads (as a source operand) a wvec register written by a MAC op
   (mnemonic ``mul*`` or ``dmul*``) issued ``d`` cycles earlier stalls ``max(0, L - d)`` cycles (a later
   non-MAC write of the register ends this); with the kernels' listings this is the pack in the bundle right
   after the multiply (B24 -> B25 in proc_4bit_mx_8,
   B38 -> B39 in quantize_mx): 1 stall cycle each. A MAC reading its own accumulator (``mula``-style
   chains) is forwarded at stage 12 and does not stall.
3. Total = issues + stalls. Not modelled: FLIX slot limits within a bundle (docs/firmware.md §6.3: s0 LdSt, s1 Ld,
   s2 Mul, s3/s4 ALU -- the listing's bundles are taken as given, so the B0 prologue that loads the
   rodata counts as one issue), load/store latency and bank conflicts, loop overhead / zero-overhead
   loop setup, branch and call cost, instruction fetch and the per-partition dispatch. Expect it to
   under-estimate device cycles; the ISS itself is quoted at 10-20 % error (docs/anchors.md §6).

Groups: the kernel's unit of work -- proc_4bit_mx_8: one MX group (8 codes + 1 scale byte -> 8 FP8);
proc_4bit_non_mx: one source word (8 codes -> 8 FP8); proc_6bit_non_mx: 3 source words (16 codes ->
16 FP8); quantize_mx: one MX block (8 partitions x 4 elements = 32 FP8 + 1 scale). Output elements are
counted from the trace itself: the byte count of the kernel's data store (``sav2nx8_xp`` length operand at
the kernel's last store bundle), one FP8 byte per element.

How it runs: ``q7emu profile`` records a *skeleton* trace (src/trace/q7trace.pxd MODE_SKELETON: the op
stream, the operand descriptors and the scalars, no register bytes) and a :class:`ProfileAccumulator` folds
each block into its counters as the kernel hands it over, so no full trace is kept and memory stays
bounded. :func:`profile` folds an in-memory :class:`~q7emu.analysis.trace.Trace` the same way.

A filtered run (window, partitions, ops or bundles) is profiled as recorded and marked ``"complete": false``.

The Chrome / Perfetto export (:func:`chrome_trace`) aggregates the repeated bundle instances: per run a
process, per partition a thread with one ``partition`` slice over its modelled cycles and, inside it, one
slice per bundle index (in listing order) whose duration is that bundle's issues plus its MAC stall cycles in
the partition (1 cycle shown as 1 us). Its size grows with partitions x bundles, not with the run length.
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from q7emu import registry
from q7emu.analysis.trace import Block, Trace
from q7emu.errors import OwnerThread, Q7Error, install_hint
from q7emu.fileio import atomic_write

MAC_LATENCY = 2
PROFILE_FORMAT = "q7emu-profile"
PROFILE_VERSION = 2
#: kernel id -> (elements per group, what a group is), from the registry's ``unit``; the output data store
#: is the kernel's last sav2nx8_xp bundle in the listing (quantize_mx's earlier one stores the scales)
KERNEL_UNITS: dict[int, tuple[int, str]] = {int(e.kernel_id): e.unit for e in registry.KERNELS}


def kernel_name(kernel_id: int) -> str | int:
    """The registry name of a trace's kernel id, or the id itself when no kernel has it (0 = not given)."""
    entry = registry.find(kernel_id)
    return entry.name if entry is not None else kernel_id


FAMILIES: list[tuple[str, str]] = [
    ("load/store", r"^(lv|lav|sav|sv|l2a|la)"),
    ("MAC", r"^(mul|dmul)"),
    ("pack", r"^pack"),
    ("select/shuffle", r"^(sel|dsel|shfl|dcmprs)"),
    ("pr move", r"^(extrpr|dextrpr)"),
    ("compare", r"^(eq|neq|lt|le|ult|ueq|olt|ole|oeq|un)"),
    ("min/max (flag ALU)", r"^(bmin|bmax|babssub|badd|bsub)"),
    ("predicated move", r"^mov.*t$"),
    ("convert", r"^(float|cvt|trunc|utrunc)"),
    ("shift", r"^(sll|srl|sra)"),
    ("integer ALU", r"^(add|sub|and|or|xor|abs|neg|max|min)"),
]

_TIME_CACHE: dict[str, float | None] = {}


def family(mnemonic: str) -> str:
    """The op family of a mnemonic (the first pattern of :data:`FAMILIES` it matches, else "other")."""
    for name, pat in FAMILIES:
        if re.search(pat, mnemonic):
            return name
    return "other"


def ns_per_op(mnemonic: str, iterations: int = 20000) -> float | None:
    """Host ns per call of one primitive (q7emu.primitives._ivp.time_op), cached; None when not timeable."""
    if mnemonic not in _TIME_CACHE:
        try:
            from q7emu.primitives import _ivp
            v = _ivp.time_op(mnemonic, iterations)
        except (ImportError, ValueError, TypeError):
            v = None
        _TIME_CACHE[mnemonic] = None if v is None else float(v)
    return _TIME_CACHE[mnemonic]


def _is_mac(ops: np.ndarray) -> np.ndarray:
    return np.char.startswith(ops, b"mul") | np.char.startswith(ops, b"dmul")


class ProfileAccumulator:
    """The profile's counters, fed one block of records at a time (:meth:`add`; blocks in recording order,
    skeleton or full) and read with :meth:`result` after :meth:`finish`.

    Kept per (kernel, bundle): ops, issues, MAC stall cycles, mnemonics; per mnemonic: ops; per run: ops,
    issues, stalls, partitions, the data-store byte counts per store bundle; per (run, partition, kernel,
    bundle): issues, ops, stalls (the Chrome export). The MAC-stall model walks only the wvec operands; the
    events of the issue still open at a block's end wait for the next block. ``keep_issues`` also keeps every
    record's issue id and every issue's stall (:func:`cycle_schedule`)."""

    def __init__(self, mac_latency: int = MAC_LATENCY, keep_issues: bool = False) -> None:
        self.mac_latency = mac_latency
        self.keep_issues = keep_issues
        self.n_issue = 0
        self.records = 0
        self.last_key: tuple[int, int, int, int] | None = None
        self.mnemonics: Counter[str] = Counter()
        self.kb_ops: Counter[int] = Counter()             # keyed by kernel << 16 | bundle
        self.kb_issues: Counter[int] = Counter()
        self.kb_stalls: Counter[int] = Counter()
        self.kb_mn: dict[int, set[str]] = defaultdict(set)
        self.run_ops: Counter[int] = Counter()            # keyed by run
        self.run_issues: Counter[int] = Counter()
        self.run_stalls: Counter[int] = Counter()
        self.run_kernel: dict[int, int] = {}
        self.run_parts: dict[int, set[int]] = defaultdict(set)
        self.run_store: dict[int, Counter[int]] = defaultdict(Counter)
        self.part: dict[tuple[int, int], dict[str, Any]] = {}
        self.ready: dict[int, int] = {}
        self.acc = 0
        self.pending: list[tuple[int, int, int, bool, int, int, int]] = []
        self.stall_issue: list[int] = []
        self.stall_cycles: list[int] = []
        self.iids: list[np.ndarray] = []
        self.done = False
        self._owner = OwnerThread("a ProfileAccumulator", "give each thread its own and profile its blocks there")

    # ------------------------------------------------------------------ feeding
    def add(self, b: Block) -> None:
        """Fold one block of records into the counters (blocks in recording order: the first thread that adds
        one owns the accumulator, another is refused with :class:`q7emu.errors.ConcurrentUse`)."""
        self._owner.check()
        r, o = b.records, b.operands
        n = r.size
        if n == 0:
            return
        run = r["run"].astype(np.int64)
        kern = r["kernel"].astype(np.int64)
        part = r["partition"].astype(np.int64)
        bundle = r["bundle"].astype(np.int64)
        change = np.ones(n, bool)
        if n > 1:
            change[1:] = (run[1:] != run[:-1]) | (kern[1:] != kern[:-1]) | (part[1:] != part[:-1]) \
                | (bundle[1:] != bundle[:-1])
        key0 = (int(run[0]), int(kern[0]), int(part[0]), int(bundle[0]))
        change[0] = key0 != self.last_key
        iid = self.n_issue - 1 + np.cumsum(change)
        self.n_issue = int(iid[-1]) + 1
        self.last_key = (int(run[-1]), int(kern[-1]), int(part[-1]), int(bundle[-1]))
        self.records += n
        if self.keep_issues:
            self.iids.append(iid)
        starts = np.nonzero(change)[0]
        kb = kern << 16 | bundle
        if b.op_id is not None and b.names is not None:
            op_id, names = b.op_id.astype(np.int64), [n.encode() for n in b.names]
        else:
            u, op_id = np.unique(r["op"], return_inverse=True)
            op_id, names = op_id.reshape(-1).astype(np.int64), list(u)
        for i, c in enumerate(np.bincount(op_id, minlength=len(names)).tolist()):
            if c:
                self.mnemonics[names[i].decode("ascii", "replace")] += c
        for k, c in zip(*np.unique(kb, return_counts=True)):
            self.kb_ops[int(k)] += int(c)
        for k, c in zip(*np.unique(kb[starts], return_counts=True)):
            self.kb_issues[int(k)] += int(c)
        for x in np.unique(kb << 8 | op_id).tolist():
            self.kb_mn[x >> 8].add(names[x & 0xFF].decode("ascii", "replace"))
        # segments of one (run, partition): ops, issues per bundle, and the partition's issue span
        cut = np.nonzero((run[1:] != run[:-1]) | (part[1:] != part[:-1]))[0] + 1 if n > 1 else np.zeros(0, np.int64)
        bounds = [0, *cut.tolist(), n]
        for a, z in zip(bounds[:-1], bounds[1:]):
            rr, pp = int(run[a]), int(part[a])
            self.run_ops[rr] += z - a
            self.run_parts[rr].add(pp)
            seg_starts = starts[(starts >= a) & (starts < z)] - a
            self.run_issues[rr] += int(seg_starts.size)
            if seg_starts.size:
                self.run_kernel.setdefault(rr, int(kern[a + seg_starts[0]]))
            d = self.part.setdefault((rr, pp), {"first": int(iid[a]), "last": int(iid[z - 1]), "kernel": int(kern[a]),
                                                "bundles": {}})
            d["last"] = int(iid[z - 1])
            u, inv, cnt = np.unique(kb[a:z], return_inverse=True, return_counts=True)
            isc = np.bincount(inv.reshape(-1)[seg_starts], minlength=len(u))
            bd = d["bundles"]
            for k, c, ic in zip(u.tolist(), cnt.tolist(), isc.tolist()):
                e = bd.setdefault(k, [0, 0, 0])
                e[0] += ic
                e[1] += c
        if o.size:
            self._add_operands(b, iid, run, part, bundle, kb)
        self._schedule(int(iid[-1]))

    def _add_operands(self, b: Block, iid: np.ndarray, run: np.ndarray, part: np.ndarray, bundle: np.ndarray,
                      kb: np.ndarray) -> None:
        """The operands of a block (``iid``, ``run``, ``part``, ``bundle``, ``kb``: per record): the data stores (the
        length scalar, reg 253, of sav2nx8_xp) and the wvec reads and writes the MAC-stall model schedules."""
        r, o = b.records, b.operands
        ops = r["op"]
        orec = o["record"].astype(np.int64)
        sel = np.nonzero((o["kind"] == 5) & (o["reg"] == 253))[0]
        sel = sel[ops[orec[sel]] == b"sav2nx8_xp"] if sel.size else sel
        if sel.size:
            off = o["offset"][sel].astype(np.int64)
            vals = np.frombuffer(b.data.tobytes(), np.uint8)
            lens = np.zeros(sel.size, np.int64)
            for j in range(8):
                lens |= vals[off + j].astype(np.int64) << (8 * j)
            for rr, bb, v in zip(run[orec[sel]].tolist(), bundle[orec[sel]].tolist(), lens.tolist()):
                self.run_store[rr][bb] += v
        w = np.nonzero(o["kind"] == 2)[0]
        if w.size:
            rec = orec[w]
            mac = _is_mac(ops[rec])
            ev = sorted(zip(iid[rec].tolist(), o["role"][w].tolist(), o["reg"][w].tolist(), mac.tolist(),
                            run[rec].tolist(), part[rec].tolist(), kb[rec].tolist()),
                        key=lambda e: (e[0], e[1]))     # per issue: reads (role 0) before writes (role 1)
            self.pending.extend(ev)

    def _schedule(self, open_issue: int | None) -> None:
        """Run the MAC-stall model over the pending wvec events of every issue before ``open_issue``."""
        ev = self.pending
        if not ev:
            return
        ev.sort(key=lambda e: (e[0], e[1]))
        k = 0
        L = self.mac_latency
        while k < len(ev):
            issue = ev[k][0]
            if open_issue is not None and issue >= open_issue:
                break
            j = k
            while j < len(ev) and ev[j][0] == issue:
                j += 1
            group = ev[k:j]
            cyc = issue + self.acc
            need = max([self.ready[reg] - cyc for _, role, reg, m, *_ in group
                        if role == 0 and not m and reg in self.ready] + [0])
            if need:
                _, _, _, _, rr, pp, kb = group[0]
                self.stall_issue.append(issue)
                self.stall_cycles.append(need)
                self.kb_stalls[kb] += need
                self.run_stalls[rr] += need
                self.part[(rr, pp)]["bundles"][kb][2] += need
            self.acc += need
            for _, role, reg, m, *_ in group:
                if role == 1:
                    if m:
                        self.ready[reg] = issue + self.acc + L
                    else:
                        self.ready.pop(reg, None)
            k = j
        self.pending = ev[k:]

    def finish(self) -> ProfileAccumulator:
        """Close the last issue (call once, after the last block)."""
        if not self.done:
            self._schedule(None)
            self.done = True
        return self

    # ------------------------------------------------------------------ reading
    def stalls(self) -> np.ndarray:
        """Stall cycles before each issue (int64 [issues])."""
        s = np.zeros(self.n_issue, np.int64)
        if self.stall_issue:
            s[np.asarray(self.stall_issue, np.int64)] = self.stall_cycles
        return s

    def cycle_at(self, issues: np.ndarray) -> np.ndarray:
        """Modelled cycle of each issue id: the id plus the stall cycles of every issue up to it."""
        si = np.asarray(self.stall_issue, np.int64)
        cs = np.cumsum(np.asarray(self.stall_cycles, np.int64))
        k = np.searchsorted(si, issues, side="right")
        return np.asarray(issues, np.int64) + np.where(k > 0, cs[np.maximum(k - 1, 0)] if cs.size else 0, 0)

    def result(self, runs: list[dict[str, Any]] | None = None, case: str = "", time_ops: bool = True,
               wall: dict[str, Any] | None = None) -> dict[str, Any]:
        """The profile as a JSON-serialisable dict (module docstring; format ``q7emu-profile`` v2)."""
        self.finish()
        runs = runs or []
        counts = dict(sorted(self.mnemonics.items(), key=lambda t: (-t[1], t[0])))
        complete = all(not run.get(k) for run in runs for k in ("window", "ops", "partitions", "bundles"))
        bundles = [{"kernel": kernel_name(k >> 16), "bundle": k & 0xFFFF, "issues": int(self.kb_issues.get(k, 0)),
                    "ops": int(n), "stall_cycles": int(self.kb_stalls.get(k, 0)), "mnemonics": sorted(self.kb_mn[k])}
                   for k, n in sorted(self.kb_ops.items())]
        out_runs = []
        for ri in range(max(len(runs), max(self.run_ops, default=-1) + 1)):
            info = runs[ri] if ri < len(runs) else {}
            kern = self.run_kernel.get(ri, int(info.get("kernel_id", 0) or 0))
            n_issue, n_stall = int(self.run_issues.get(ri, 0)), int(self.run_stalls.get(ri, 0))
            total = n_issue + n_stall
            parts = len(self.run_parts.get(ri, ()))
            store = self.run_store.get(ri)
            elems = int(store[max(store)]) if store and kern in KERNEL_UNITS else 0
            unit = KERNEL_UNITS.get(kern, (0, "n/a"))
            groups = elems / unit[0] if unit[0] else 0
            nops = int(self.run_ops.get(ri, 0))
            name = kernel_name(kern)
            out_runs.append({"run": ri, "kernel": name if isinstance(name, str) else info.get("kernel", kern),
                             "knobs": info.get("knobs", {}), "executed": info.get("executed"),
                             "ops": nops, "issues": n_issue, "mac_stall_cycles": n_stall, "cycles": total,
                             "partitions": parts, "cycles_per_partition": total / parts if parts else None,
                             "output_elements": elems, "group": unit[1], "group_elements": unit[0], "groups": groups,
                             "cycles_per_group": total / groups if groups else None,
                             "cycles_per_element": total / elems if elems else None,
                             "ops_per_element": nops / elems if elems else None})
        fam: dict[str, dict[str, Any]] = {}
        for m, c in counts.items():
            f = fam.setdefault(family(m), {"family": family(m), "ops": 0, "mnemonics": [], "est_ns": 0.0,
                                           "untimed_ops": 0})
            f["ops"] += c
            f["mnemonics"].append(m)
            ns = ns_per_op(m) if time_ops else None
            if ns is None:
                f["untimed_ops"] += c
            else:
                f["est_ns"] += ns * c
        families = sorted(fam.values(), key=lambda f: -f["ops"])
        for f in families:
            timed = f["ops"] - f["untimed_ops"]
            f["ns_per_op"] = f["est_ns"] / timed if timed else None
            f["est_ns"] = f["est_ns"] if timed else None
        total_cycles = sum(x["cycles"] for x in out_runs)
        return {
            "format": PROFILE_FORMAT, "version": PROFILE_VERSION, "case": case, "complete": complete,
            "records": self.records, "mnemonics": counts, "bundles": bundles, "runs": out_runs,
            "cycles": {"model": f"II=1 per bundle-index change + MAC latency {self.mac_latency} "
                                "(docs/firmware.md §6.2)",
                       "mac_latency": self.mac_latency, "issues": self.n_issue,
                       "mac_stall_cycles": int(sum(self.stall_cycles)), "total": int(total_cycles)},
            "families": families, "wall": dict(wall or {}),
        }


def accumulate(blocks: Iterable[Block], mac_latency: int = MAC_LATENCY, keep_issues: bool = False
               ) -> ProfileAccumulator:
    """A finished :class:`ProfileAccumulator` over ``blocks``."""
    acc = ProfileAccumulator(mac_latency, keep_issues)
    for b in blocks:
        acc.add(b)
    return acc.finish()


def _whole(trace: Trace) -> Block:
    return Block(trace.records, trace.operands, trace.data)


def issue_ids(trace: Trace) -> np.ndarray:
    """Issue index (0-based) of every record: a new issue when run, kernel, partition or bundle changes."""
    acc = accumulate([_whole(trace)], keep_issues=True)
    return np.concatenate(acc.iids) if acc.iids else np.zeros(0, np.int64)


def cycle_schedule(trace: Trace, mac_latency: int = MAC_LATENCY) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(issue id per record, cycle per issue, stall cycles before each issue) under the cycle model."""
    acc = accumulate([_whole(trace)], mac_latency, keep_issues=True)
    iid = np.concatenate(acc.iids) if acc.iids else np.zeros(0, np.int64)
    stalls = acc.stalls()
    return iid, np.arange(acc.n_issue, dtype=np.int64) + np.cumsum(stalls), stalls


def profile(trace: Trace, mac_latency: int = MAC_LATENCY, time_ops: bool = True,
            wall: dict[str, float] | None = None) -> dict[str, Any]:
    """The profile of an in-memory trace as a JSON-serialisable dict (see the module docstring)."""
    return accumulate([_whole(trace)], mac_latency).result(trace.runs, trace.case, time_ops, wall)


def format_profile(p: dict[str, Any], top: int | None = None) -> str:
    """Human-readable report."""
    out = []
    out.append(f"profile of {p.get('case') or 'trace'}: {p['records']} ops"
               + ("" if p["complete"] else "  (FILTERED: counts and cycles cover only what was recorded)"))
    c = p["cycles"]
    out.append(f"cycle model: {c['model']}")
    for run in p["runs"]:
        out.append(f"run {run['run']} {run['kernel']}: {run['ops']} ops, {run['issues']} bundle issues + "
                   f"{run['mac_stall_cycles']} MAC stall cycles = {run['cycles']} cycles over {run['partitions']} "
                   f"partition(s)")
        if run["output_elements"]:
            out.append(f"  {run['output_elements']} output elements, {run['groups']:g} groups of "
                       f"{run['group_elements']} ({run['group']}): {run['cycles_per_group']:.2f} cycles/group, "
                       f"{run['cycles_per_element']:.3f} cycles/element, {run['ops_per_element']:.2f} ops/element")
        if run["cycles_per_partition"] is not None:
            out.append(f"  {run['cycles_per_partition']:.1f} cycles per partition")
    out.append("")
    out.append("per mnemonic:")
    items = list(p["mnemonics"].items())[:top] if top else p["mnemonics"].items()
    tot = max(p["records"], 1)
    for m, n in items:
        out.append(f"  {m:<16} {n:>10}  {100 * n / tot:5.1f}%")
    out.append("")
    out.append("per bundle (kernel, B<n>: issues, ops, stall cycles, mnemonics):")
    for b in p["bundles"]:
        st = f" +{b['stall_cycles']} stall" if b["stall_cycles"] else ""
        out.append(f"  {b['kernel']:<17} B{b['bundle']:<3} {b['issues']:>8} issues {b['ops']:>9} ops{st}  "
                   f"{' '.join(b['mnemonics'])}")
    out.append("")
    out.append("emulator wall time per op family (ops x _ivp.time_op ns/op):")
    for f in p["families"]:
        ns = "n/a" if f["ns_per_op"] is None else f"{f['ns_per_op']:.1f} ns/op"
        est = "n/a" if f["est_ns"] is None else f"{f['est_ns'] / 1e6:.3f} ms"
        extra = f" ({f['untimed_ops']} untimed)" if f["untimed_ops"] and f["est_ns"] is not None else ""
        out.append(f"  {f['family']:<20} {f['ops']:>10} ops  {ns:>14}  {est:>10}{extra}")
    w = p.get("wall") or {}
    if w:
        out.append("measured: " + ", ".join(f"{k} {v * 1e3:.3f} ms" if isinstance(v, float) else f"{k} {v}"
                                             for k, v in w.items()))
    return "\n".join(out)


def chrome_trace(src: Trace | ProfileAccumulator, mac_latency: int = MAC_LATENCY) -> dict[str, Any]:
    """Chrome trace-event JSON (opens in ui.perfetto.dev / chrome://tracing) with the repeated bundle
    instances aggregated (module docstring): pid = run, tid = partition, 1 us = 1 modelled cycle."""
    acc = src if isinstance(src, ProfileAccumulator) else accumulate([_whole(src)], mac_latency)
    acc.finish()
    ev: list[dict[str, Any]] = []
    keys = sorted(acc.part, key=lambda k: acc.part[k]["first"])
    if keys:
        firsts = np.array([acc.part[k]["first"] for k in keys], np.int64)
        lasts = np.array([acc.part[k]["last"] for k in keys], np.int64)
        starts = acc.cycle_at(firsts - 1) + 1
        ends = acc.cycle_at(lasts) + 1
    seen_runs: set[int] = set()
    for (run, part), t0, t1 in zip(keys, starts.tolist() if keys else [], ends.tolist() if keys else []):
        d = acc.part[(run, part)]
        kern = str(kernel_name(d["kernel"]))
        if run not in seen_runs:
            seen_runs.add(run)
            ev.append({"ph": "M", "name": "process_name", "pid": run, "tid": 0, "args": {"name": f"run {run} {kern}"}})
        ev.append({"ph": "M", "name": "thread_name", "pid": run, "tid": part, "args": {"name": f"partition {part}"}})
        ev.append({"name": f"partition {part}", "cat": "partition", "ph": "X", "ts": int(t0), "dur": int(t1 - t0),
                   "pid": run, "tid": part, "args": {"issues": sum(e[0] for e in d["bundles"].values()),
                                                     "ops": sum(e[1] for e in d["bundles"].values()),
                                                     "stall_cycles": sum(e[2] for e in d["bundles"].values())}})
        ts = int(t0)
        for kb in sorted(d["bundles"]):
            issues, nops, stalls = d["bundles"][kb]
            dur = issues + stalls
            ev.append({"name": f"B{kb & 0xFFFF}", "cat": str(kernel_name(kb >> 16)), "ph": "X", "ts": ts,
                       "dur": dur, "pid": run, "tid": part,
                       "args": {"issues": issues, "ops": nops, "stall_cycles": stalls,
                                "mnemonics": sorted(acc.kb_mn.get(kb, ()))}})
            ts += dur
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"generator": "q7emu profile", "time_unit": "1 us in the viewer = 1 modelled cycle",
                          "aggregation": "per partition, one slice per bundle index: its issues + MAC stalls",
                          "cycle_model": f"II=1 per bundle-index change + MAC latency {acc.mac_latency}"}}


def write_chrome_trace(src: Trace | ProfileAccumulator, path: str | Path, mac_latency: int = MAC_LATENCY) -> Path:
    """Write :func:`chrome_trace` as compact JSON to ``path`` (atomically); returns the path."""
    p = Path(path)
    with atomic_write(p, "w") as f:
        json.dump(chrome_trace(src, mac_latency), f, separators=(",", ":"))
    return p


def require_matplotlib() -> Any:
    """matplotlib.pyplot (Agg backend), or Q7Error naming the optional extra when it is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise Q7Error(f"--plot needs matplotlib, which is not installed: {install_hint('plot')}") from None
    return plt


def plot(p: dict[str, Any], path: str | Path, top: int = 30) -> Path:
    """Op-mix bar chart (PNG, written atomically). Needs matplotlib (the optional ``plot`` extra)."""
    plt = require_matplotlib()
    items = list(p["mnemonics"].items())[:top]
    fig, ax = plt.subplots(figsize=(10, 0.3 * len(items) + 1.5))
    ax.barh([m for m, _ in items][::-1], [n for _, n in items][::-1])
    ax.set_xlabel("executed ops")
    ax.set_title(f"op mix: {p.get('case') or 'trace'} ({p['records']} ops)")
    fig.tight_layout()
    out = Path(path)
    with atomic_write(out, "wb") as f:
        fig.savefig(f, format="png")
    plt.close(fig)
    return out
