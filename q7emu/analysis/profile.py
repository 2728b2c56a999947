"""Inner-loop profiles of the emulated kernels, computed from a full lane-level trace.

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

A profile needs the unfiltered trace (no window or op filter); a filtered trace is profiled as recorded
and marked ``"complete": false``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from q7emu import registry
from q7emu.analysis.trace import Trace
from q7emu.errors import Q7Error

MAC_LATENCY = 2
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


def issue_ids(trace: Trace) -> np.ndarray:
    """Issue index (0-based) of every record: a new issue when run, kernel, partition or bundle changes."""
    r = trace.records
    n = len(trace)
    if n == 0:
        return np.zeros(0, np.int64)
    change = np.ones(n, bool)
    same = np.ones(n - 1, bool)
    for f in ("run", "kernel", "partition", "bundle"):
        same &= r[f][1:] == r[f][:-1]
    change[1:] = ~same
    return np.cumsum(change) - 1


def cycle_schedule(trace: Trace, mac_latency: int = MAC_LATENCY) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(issue id per record, cycle per issue, stall cycles before each issue) under the cycle model."""
    iid = issue_ids(trace)
    nissue = int(iid[-1]) + 1 if iid.size else 0
    stalls = np.zeros(nissue, np.int64)
    o = trace.operands
    w = np.nonzero(o["kind"] == 2)[0]              # wvec operands only
    if w.size and nissue:
        rec = o["record"][w].astype(np.int64)
        iss = iid[rec]
        is_mac = np.char.startswith(trace.records["op"][rec], b"mul") | \
            np.char.startswith(trace.records["op"][rec], b"dmul")
        events = sorted(zip(iss.tolist(), o["role"][w].tolist(), o["reg"][w].tolist(), is_mac.tolist()),
                        key=lambda e: (e[0], e[1]))   # per issue: reads (role 0) before writes (role 1)
        ready: dict[int, int] = {}                  # wvec reg -> cycle its MAC result is usable
        acc = 0                                     # stall cycles inserted so far
        k = 0
        while k < len(events):
            issue = events[k][0]
            group = []
            while k < len(events) and events[k][0] == issue:
                group.append(events[k])
                k += 1
            cyc = issue + acc
            need = max([ready[reg] - cyc for _, role, reg, mac in group
                        if role == 0 and not mac and reg in ready] + [0])
            stalls[issue] = need
            acc += need
            for _, role, reg, mac in group:
                if role == 1:
                    if mac:
                        ready[reg] = issue + acc + mac_latency
                    else:
                        ready.pop(reg, None)
    cycles = np.arange(nissue, dtype=np.int64) + np.cumsum(stalls)
    return iid, cycles, stalls


def _store_elements(trace: Trace, rows: np.ndarray, kernel: int) -> int:
    """FP8 elements stored by the kernel's data store (length operand of its sav2nx8_xp records)."""
    if kernel not in KERNEL_UNITS:
        return 0
    r = trace.records
    stores = rows[r["op"][rows] == b"sav2nx8_xp"]
    if not stores.size:
        return 0
    bundle = int(r["bundle"][stores].max())        # the data store: the last store bundle of the listing
    sel = stores[r["bundle"][stores] == bundle]
    total = 0
    for i in sel.tolist():
        for o in trace[i].operands:
            if o.kind == 5 and o.reg == 253:
                total += int.from_bytes(o.data, "little", signed=True)
    return total


def profile(trace: Trace, mac_latency: int = MAC_LATENCY, time_ops: bool = True,
            wall: dict[str, float] | None = None) -> dict[str, Any]:
    """The profile of a trace as a JSON-serialisable dict (see the module docstring)."""
    r = trace.records
    iid, cycles, stalls = cycle_schedule(trace, mac_latency)
    counts = trace.op_counts()
    complete = all(not run.get("window") and not run.get("ops") for run in trace.runs)
    # per bundle
    bundles = []
    if len(trace):
        first_of_issue = np.nonzero(np.diff(np.concatenate(([-1], iid))) != 0)[0]
        keys = r["kernel"].astype(np.int64) << 16 | r["bundle"].astype(np.int64)
        uk, nops = np.unique(keys, return_counts=True)
        ik, nis = np.unique(keys[first_of_issue], return_counts=True)
        issues_of = dict(zip(ik.tolist(), nis.tolist()))
        stall_of: dict[int, int] = {}
        for k, s in zip(keys[first_of_issue].tolist(), stalls.tolist()):
            if s:
                stall_of[k] = stall_of.get(k, 0) + s
        for k, n in zip(uk.tolist(), nops.tolist()):
            rows = np.nonzero(keys == k)[0]
            mn = sorted({m.decode() for m in r["op"][rows]})
            bundles.append({"kernel": kernel_name(k >> 16), "bundle": k & 0xFFFF,
                            "issues": int(issues_of.get(k, 0)), "ops": int(n), "stall_cycles": int(stall_of.get(k, 0)),
                            "mnemonics": mn})
    # per run: cycles, groups, elements
    runs = []
    for ri, info in enumerate(trace.runs or [{}]):
        rows = np.nonzero(r["run"] == ri)[0]
        kern = int(r["kernel"][rows[0]]) if rows.size else int(info.get("kernel_id", 0) or 0)
        if rows.size:
            ids = np.unique(iid[rows])
            n_issue = int(ids.size)
            n_stall = int(stalls[ids].sum())
        else:
            n_issue = n_stall = 0
        total = n_issue + n_stall
        parts = int(np.unique(r["partition"][rows]).size) if rows.size else 0
        elems = _store_elements(trace, rows, kern)
        unit = KERNEL_UNITS.get(kern, (0, "n/a"))
        groups = elems / unit[0] if unit[0] else 0
        name = kernel_name(kern)
        runs.append({"run": ri, "kernel": name if isinstance(name, str) else info.get("kernel", kern),
                     "knobs": info.get("knobs", {}),
                     "ops": int(rows.size), "issues": n_issue, "mac_stall_cycles": n_stall, "cycles": total,
                     "partitions": parts, "cycles_per_partition": total / parts if parts else None,
                     "output_elements": elems, "group": unit[1], "group_elements": unit[0], "groups": groups,
                     "cycles_per_group": total / groups if groups else None,
                     "cycles_per_element": total / elems if elems else None,
                     "ops_per_element": rows.size / elems if elems else None})
    # families
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
    total_cycles = sum(x["cycles"] for x in runs)
    return {
        "format": "q7emu-profile", "version": 1, "case": trace.case, "complete": complete,
        "records": len(trace), "mnemonics": counts, "bundles": bundles, "runs": runs,
        "cycles": {"model": f"II=1 per bundle-index change + MAC latency {mac_latency} (docs/firmware.md §6.2)",
                   "mac_latency": mac_latency, "issues": int(len(cycles)), "mac_stall_cycles": int(stalls.sum()),
                   "total": int(total_cycles)},
        "families": families, "wall": dict(wall or {}),
    }


def format_profile(p: dict[str, Any], top: int | None = None) -> str:
    """Human-readable report."""
    out = []
    out.append(f"profile of {p.get('case') or 'trace'}: {p['records']} ops"
               + ("" if p["complete"] else "  (FILTERED trace: counts and cycles cover only what was recorded)"))
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
    if p.get("wall"):
        out.append("measured: " + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in p["wall"].items()))
    return "\n".join(out)


def chrome_trace(trace: Trace, mac_latency: int = MAC_LATENCY) -> dict[str, Any]:
    """Chrome trace-event JSON (open in Perfetto / chrome://tracing): one complete ('X') slice per bundle
    issue at its modelled cycle (1 cycle shown as 1 us), MAC stalls as separate 'stall' slices; pid = run,
    tid = partition."""
    iid, cycles, stalls = cycle_schedule(trace, mac_latency)
    r = trace.records
    ev: list[dict[str, Any]] = []
    if len(trace):
        bounds = np.nonzero(np.diff(np.concatenate(([-1], iid))) != 0)[0].tolist() + [len(trace)]
        names = trace.mnemonics()
        seen: set[tuple[int, int]] = set()
        for k in range(len(bounds) - 1):
            a, b = bounds[k], bounds[k + 1]
            run, part = int(r["run"][a]), int(r["partition"][a])
            kern = str(kernel_name(int(r["kernel"][a])))
            if (run, part) not in seen:
                seen.add((run, part))
                ev.append({"ph": "M", "name": "thread_name", "pid": run, "tid": part,
                           "args": {"name": f"partition {part}"}})
                if not any(e["ph"] == "M" and e["name"] == "process_name" and e["pid"] == run for e in ev):
                    ev.append({"ph": "M", "name": "process_name", "pid": run, "tid": 0,
                               "args": {"name": f"run {run} {kern}"}})
            cyc = int(cycles[k])
            if stalls[k]:
                ev.append({"name": "MAC stall", "cat": "stall", "ph": "X", "ts": cyc - int(stalls[k]),
                           "dur": int(stalls[k]), "pid": run, "tid": part})
            ev.append({"name": f"B{int(r['bundle'][a])}", "cat": kern, "ph": "X", "ts": cyc, "dur": 1,
                       "pid": run, "tid": part,
                       "args": {"ops": names[a:b], "seq": [int(r["seq"][a]), int(r["seq"][b - 1])],
                                "cycle": cyc}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"generator": "q7emu profile", "time_unit": "1 us in the viewer = 1 modelled cycle",
                          "cycle_model": f"II=1 per bundle-index change + MAC latency {mac_latency}"}}


def write_chrome_trace(trace: Trace, path: str | Path, mac_latency: int = MAC_LATENCY) -> Path:
    """Write :func:`chrome_trace` as compact JSON to ``path``; returns the path."""
    p = Path(path)
    p.write_text(json.dumps(chrome_trace(trace, mac_latency), separators=(",", ":")))
    return p


def require_matplotlib() -> Any:
    """matplotlib.pyplot (Agg backend), or Q7Error naming the optional extra when it is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise Q7Error("--plot needs matplotlib, which is not installed "
                      "(pip install matplotlib, or pip install 'q7emu[plot]')") from None
    return plt


def plot(p: dict[str, Any], path: str | Path, top: int = 30) -> Path:
    """Op-mix bar chart (PNG). Needs matplotlib (optional extra ``q7emu[plot]``)."""
    plt = require_matplotlib()
    items = list(p["mnemonics"].items())[:top]
    fig, ax = plt.subplots(figsize=(10, 0.3 * len(items) + 1.5))
    ax.barh([m for m, _ in items][::-1], [n for _, n in items][::-1])
    ax.set_xlabel("executed ops")
    ax.set_title(f"op mix: {p.get('case') or 'trace'} ({p['records']} ops)")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
