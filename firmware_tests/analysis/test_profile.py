"""Profiles (q7emu.analysis.profile): counts equal the trace's and the listing's, the cycle model recomputed
from the listing and on a hand-made trace, output elements, Chrome trace."""
from __future__ import annotations

import io
import json
import sys
from collections import Counter

import numpy as np
import pytest

import q7emu
from q7emu import registry
from q7emu.analysis.listing import all_variant_configs, build
from q7emu.analysis.profile import chrome_trace, cycle_schedule, family, format_profile, plot, profile
from q7emu.analysis.trace import Recorder, Trace
from q7emu.errors import Q7Error
from q7emu.machine.machine import MACHINE_KNOBS


def traced(fn, *args, **kw):
    rec = Recorder(**{k: kw.pop(k) for k in ("window", "ops") if k in kw})
    fn(*args, trace=rec, **kw)
    return rec.trace


@pytest.fixture(scope="module")
def non_mx():
    return traced(q7emu.dequantize, np.array([[0x21, 0x43, 0x65, 0x87]], np.uint8), 1, 0)


@pytest.fixture(scope="module")
def mx():
    return traced(q7emu.dequantize, np.array([[127, 0x21, 0x43, 0x65, 0x87] * 4], np.uint8), 1, 8)


def test_counts_equal_trace_counts(mx):
    p = profile(mx, time_ops=False)
    assert p["mnemonics"] == mx.op_counts()
    assert sum(p["mnemonics"].values()) == len(mx) == p["records"]
    assert sum(b["ops"] for b in p["bundles"]) == len(mx)
    names, counts = np.unique(mx.records["op"], return_counts=True)
    assert {n.decode(): int(c) for n, c in zip(names, counts)} == p["mnemonics"]


# ---------------------------------------------------------------- the cycle model, computed independently
# The reference below is the cycle model of q7emu.analysis.profile's docstring, applied to the kernel
# *listing* (q7emu.analysis.listing, read off runs of whole passes) rather than to the trace: issue a bundle
# each time the bundle index (or the partition) changes, 1 cycle each; a bundle whose non-MAC op reads a
# wvec register that a MAC op (mul* / dmul*) wrote d cycles earlier stalls max(0, L - d); a non-MAC write
# makes the register ordinary again. Nothing in it is a count typed from today's kernels, so an edit
# that adds or moves a bundle changes both sides alike.
def is_mac(mnemonic: str) -> bool:
    return mnemonic.startswith(("mul", "dmul"))


def listing_sequence(trace, kernel: str, build_args: dict) -> list[tuple[int, int, str, list[tuple[str, str, int]]]]:
    """(partition, bundle, mnemonic, [(kind, role, reg)]) of every op the listing says the run executes:
    per partition of the trace, the entry, k passes and the exit, k solved from the partition's record count."""
    lst = build(kernel, **build_args)
    entry, one_pass, exit_ = lst.ops("entry"), lst.ops("pass"), lst.ops("exit")
    parts = trace.records["partition"].tolist()
    counts = Counter(parts)
    seq = []
    for part in dict.fromkeys(parts):           # in the order the kernel ran them
        n = counts[part]
        k, rem = divmod(n - len(entry) - len(exit_), len(one_pass))
        assert rem == 0 and k >= 1, (kernel, part, n, len(entry), len(one_pass), len(exit_))
        for op in entry + one_pass * k + exit_:
            seq.append((part, op.bundle, op.mnemonic, [(o.kind, o.role, o.reg) for o in op.operands]))
    return seq


def reference_schedule(seq, latency: int) -> tuple[list[tuple[int, int]], list[int]]:
    """((partition, bundle) of each issue, stall cycles before each issue) under the documented model."""
    issues: list[list] = []
    keys: list[tuple[int, int]] = []
    for part, bundle, mnem, ops in seq:
        if not keys or keys[-1] != (part, bundle):
            keys.append((part, bundle))
            issues.append([])
        issues[-1].append((mnem, ops))
    ready: dict[int, int] = {}
    stalls, cycle = [], -1
    for ops_of_issue in issues:
        earliest = cycle + 1
        need = max([ready[reg] - earliest for mnem, ops in ops_of_issue if not is_mac(mnem)
                    for kind, role, reg in ops if kind == "wvec" and role == "src" and reg in ready] + [0])
        cycle = earliest + need
        stalls.append(need)
        for mnem, ops in ops_of_issue:
            for kind, role, reg in ops:
                if kind == "wvec" and role == "dst":
                    if is_mac(mnem):
                        ready[reg] = cycle + latency
                    else:
                        ready.pop(reg, None)
    return keys, stalls


#: (kernel, call of the public API with default knobs, fmt or dtypes): several partitions, several
#: passes and a tail
RUNS = {
    "proc_4bit_non_mx nf4": ("proc_4bit_non_mx", lambda rng, tr: q7emu.dequantize(
        rng.integers(0, 256, (3, 72), dtype=np.uint8), 3, 0, trace=tr), {"fmt": 3}),
    "proc_4bit_non_mx int4": ("proc_4bit_non_mx", lambda rng, tr: q7emu.dequantize(
        rng.integers(0, 256, (3, 72), dtype=np.uint8), 2, 0, trace=tr), {"fmt": 2}),
    "proc_4bit_mx_8 e2m1": ("proc_4bit_mx_8", lambda rng, tr: q7emu.dequantize(
        _mx_stream(rng, 2, 100), 1, 8, trace=tr), {"fmt": 1}),
    "proc_6bit_non_mx": ("proc_6bit_non_mx", lambda rng, tr: q7emu.dequantize(
        rng.integers(0, 256, (2, 108), dtype=np.uint8), 4, 0, trace=tr), {"fmt": 4}),
    "quantize_mx fp16 e4m3": ("quantize_mx", lambda rng, tr: q7emu.quantize_mx(
        (rng.standard_normal((32, 40)) * 4).astype(np.float16), trace=tr),
        {"src_dtype": "float16", "dst_dtype": "float8_e4m3fn"}),
}


def _listing_options(kernel: str, which: dict) -> dict:
    """build() options of the configuration with these fmt / dtypes and every knob at its default."""
    return next(c for c in all_variant_configs(kernel) if all(c.get(k) == v for k, v in which.items())
                and all(v == MACHINE_KNOBS[k][0] for k, v in c["knobs"].items()))


def _mx_stream(rng, parts: int, nbytes: int) -> np.ndarray:
    src = rng.integers(0, 256, (parts, nbytes), dtype=np.uint8)
    src[:, ::5] = 120 + src[:, ::5] % 16           # scale-first: sane E8M0 scales
    return src


class _Run(tuple):
    """(kernel, trace, the API's output, listing options) of one traced run; ``call`` runs it again."""

    call = None


@pytest.fixture(scope="module", params=sorted(RUNS))
def run(request):
    """(kernel, trace, the API's output, listing options) of one traced run."""
    kernel, call, which = RUNS[request.param]
    rec = Recorder()
    out = call(np.random.default_rng(11), rec)
    r = _Run((kernel, rec.trace, out, _listing_options(kernel, which)))
    r.call = call
    return r


@pytest.mark.parametrize("latency", [1, 2, 3])
def test_cycles_are_issues_plus_the_stalls_the_listing_predicts(run, latency):
    kernel, t, _out, opts = run
    keys, stalls = reference_schedule(listing_sequence(t, kernel, opts), latency)
    iid, cycles, got_stalls = cycle_schedule(t, latency)
    assert got_stalls.tolist() == stalls                       # per issue, not just in total
    assert cycles.tolist() == (np.arange(len(stalls)) + np.cumsum(stalls)).tolist()
    r = profile(t, mac_latency=latency, time_ops=False)["runs"][0]
    assert (r["issues"], r["mac_stall_cycles"]) == (len(keys), sum(stalls))
    assert r["cycles"] == len(keys) + sum(stalls)
    assert r["partitions"] == len({p for p, _ in keys})
    # each trace record belongs to the issue of its (partition, bundle) run
    r_ = t.records
    assert [keys[i] for i in iid.tolist()] == list(zip(r_["partition"].tolist(), r_["bundle"].tolist()))


def test_per_bundle_and_per_op_counts_follow_the_listing(run):
    kernel, t, _out, opts = run
    seq = listing_sequence(t, kernel, opts)
    keys, stalls = reference_schedule(seq, 2)
    p = profile(t, time_ops=False)
    assert Counter(p["mnemonics"]) == Counter(m for _, _, m, _ in seq) == Counter(t.op_counts())
    issues_of = Counter(b for _, b in keys)
    stall_of: Counter = Counter()
    for (_, b), s in zip(keys, stalls):
        stall_of[b] += s
    ops_of = Counter(b for _, b, _, _ in seq)
    mn_of: dict[int, set] = {}
    for _, b, m, _ in seq:
        mn_of.setdefault(b, set()).add(m)
    got = {b["bundle"]: b for b in p["bundles"]}
    assert set(got) == set(ops_of)
    for b, row in got.items():
        assert row["kernel"] == kernel
        assert (row["issues"], row["ops"], row["stall_cycles"]) == (issues_of[b], ops_of[b], stall_of[b]), b
        assert row["mnemonics"] == sorted(mn_of[b])


def test_output_elements_are_the_bytes_the_kernel_wrote(run):
    kernel, t, out, _opts = run
    data = out[0] if isinstance(out, tuple) else out
    r = profile(t, time_ops=False)["runs"][0]
    assert r["output_elements"] == data.nbytes                 # one FP8 byte per element
    unit = registry.get(kernel).unit
    assert (r["group_elements"], r["group"]) == unit
    assert r["groups"] == data.nbytes / unit[0]
    assert r["cycles_per_element"] == r["cycles"] / data.nbytes
    assert r["cycles_per_partition"] == r["cycles"] / r["partitions"]


def _synthetic(rows: list[tuple[int, str, list[tuple[str, str, int]]]], partitions: list[int] | None = None) -> Trace:
    """A trace from (bundle, mnemonic, [(kind, role, reg)]) rows (JSON Lines import), partition 0 unless
    ``partitions`` gives one per row."""
    lanes = {"wvec": ["0" * 12] * 32, "vec": ["00"] * 64}
    parts = partitions or [0] * len(rows)
    lines = [json.dumps({"run": 0, "seq": i, "partition": parts[i], "kernel": "proc_4bit_mx_8", "bundle": b, "op": m,
                         "operands": [{"role": role, "kind": kind, "reg": reg, "lanes": lanes[kind]}
                                      for kind, role, reg in ops]})
             for i, (b, m, ops) in enumerate(rows)]
    return Trace.from_jsonl(io.StringIO("\n".join(lines) + "\n"))


def test_cycle_model_on_a_hand_made_trace():
    """The documented rules one by one, with the stalls counted by hand."""
    w = lambda role, reg: ("wvec", role, reg)          # noqa: E731
    t = _synthetic([
        (1, "mulus4tn16xr16", [w("dst", 0)]),                  # issue 0, cycle 0: MAC writes wv0
        (2, "packvrnrnx48", [w("src", 0), ("vec", "dst", 1)]),  # issue 1: reads wv0 one cycle later -> stall L-1
        (3, "mulus4tn16xr16", [w("dst", 1)]),                  # issue 2: MAC writes wv1
        (4, "addnx16", [("vec", "src", 2), ("vec", "dst", 3)]),
        (5, "packvrnrnx48", [w("src", 1), ("vec", "dst", 4)]),  # issue 4: two cycles after the MAC -> no stall at L=2
        (6, "mulus4tn16xr16", [w("dst", 2)]),                  # issue 5: MAC writes wv2
        (7, "mulus4tn16xr16", [w("src", 2), w("dst", 2)]),     # issue 6: a MAC reading its accumulator: forwarded
        (8, "cvtg48n_2x32l", [("vec", "src", 5), w("dst", 3)]),  # issue 7: a non-MAC writes wv3 ...
        (9, "packvrnrnx48", [w("src", 3), ("vec", "dst", 6)]),  # issue 8: ... so reading it never stalls
        (9, "packvrnrnx48", [w("src", 2), ("vec", "dst", 7)]),  # same issue: wv2, 2 cycles after issue 6
    ])
    _iid, cycles, stalls = cycle_schedule(t, 2)
    assert stalls.tolist() == [0, 1, 0, 0, 0, 0, 0, 0, 0]
    assert cycles.tolist() == [0, 2, 3, 4, 5, 6, 7, 8, 9]
    _iid, cycles, stalls = cycle_schedule(t, 3)
    # L=3: issue 1 waits 2 (ready 3); the MAC of issue 2 runs at cycle 4 (ready 7), so issue 4 (earliest 6)
    # waits 1; the MAC chain of issues 5-6 does not stall (6 reads its own accumulator) but leaves wv2 ready
    # at 9 + 3 = 12, so issue 8 (earliest 11) waits 1 for it while wv3 (a non-MAC result) never stalls
    assert stalls.tolist() == [0, 2, 0, 0, 1, 0, 0, 0, 1]
    assert cycles.tolist() == [0, 3, 4, 5, 7, 8, 9, 10, 12]
    _iid, _cycles, stalls = cycle_schedule(t, 1)
    assert stalls.tolist() == [0] * 9
    r = profile(t, time_ops=False)["runs"][0]
    assert (r["issues"], r["mac_stall_cycles"], r["cycles"]) == (9, 1, 10)
    # a non-MAC write of a MAC's register makes it ordinary again (L=3: the read 2 cycles after the MAC waits
    # for nothing); a bundle reads its operands before its own MAC writes them back
    t2 = _synthetic([(1, "mulus4tn16xr16", [w("dst", 4)]),
                     (2, "cvtg48n_2x32l", [w("dst", 4)]),
                     (3, "packvrnrnx48", [w("src", 4), ("vec", "dst", 1)]),
                     (4, "mulus4tn16xr16", [w("dst", 5)]),
                     (5, "addnx16", [("vec", "dst", 2)]), (6, "addnx16", [("vec", "dst", 2)]),
                     (7, "addnx16", [("vec", "dst", 2)]),
                     (8, "packvrnrnx48", [w("src", 5), ("vec", "dst", 3)]),
                     (8, "mulus4tn16xr16", [w("dst", 5)])])
    assert cycle_schedule(t2, 3)[2].tolist() == [0, 0, 0, 0, 0, 0, 0, 0]
    # the dual multiplies (dmul*) are MAC ops too
    t3 = _synthetic([(1, "dmulq2n8xr8", [w("dst", 6)]), (2, "packvrnrnx48", [w("src", 6), ("vec", "dst", 1)])])
    assert cycle_schedule(t3, 2)[2].tolist() == [0, 1]
    # a new partition is a new issue even when its first bundle index equals the last one's
    two = _synthetic([(4, "addnx16", [("vec", "dst", 1)]), (4, "addnx16", [("vec", "dst", 2)]),
                      (4, "addnx16", [("vec", "dst", 1)])], partitions=[0, 0, 1])
    assert cycle_schedule(two)[0].tolist() == [0, 0, 1]
    assert reference_schedule([(0, b, m, ops) for b, m, ops in
                               [(int(x.bundle), x.op, [(o.kind_name, o.role_name, o.reg) for o in x.operands])
                                for x in t]], 2)[1] == [0, 1, 0, 0, 0, 0, 0, 0, 0]


def test_families_and_wall_time(mx):
    p = profile(mx, wall={"execute_untraced_s": 0.001})
    fams = {f["family"]: f for f in p["families"]}
    assert fams["MAC"]["ops"] == sum(n for m, n in mx.op_counts().items() if is_mac(m)) > 0
    assert fams["MAC"]["ns_per_op"] > 0
    assert fams["load/store"]["ns_per_op"] is None and fams["load/store"]["untimed_ops"] == fams["load/store"]["ops"]
    assert sum(f["ops"] for f in p["families"]) == len(mx)
    assert family("sel2nx8i_s4") == "select/shuffle" and family("movnx16t") == "predicated move"
    text = format_profile(p)
    assert "cycles/group" in text and "MAC stall" in text and "execute_untraced_s 1.000 ms" in text
    json.dumps(p)


def test_filtered_trace_is_marked(non_mx):
    t = traced(q7emu.dequantize, np.zeros((1, 4), np.uint8), 1, 0, ops=["addnx16"])
    assert profile(t, time_ops=False)["complete"] is False
    assert profile(non_mx, time_ops=False)["complete"] is True


def test_chrome_trace_aggregates_bundles_per_partition(run):
    """One 'partition' slice per partition over its modelled cycles and, inside it, one slice per bundle index
    whose duration is that bundle's issues + MAC stalls there (the cycle schedule recomputed per issue)."""
    _kernel, t, _out, _opts = run
    ct = chrome_trace(t)
    json.dumps(ct)
    iid, cycles, stalls = cycle_schedule(t)
    ev = [e for e in ct["traceEvents"] if e["ph"] == "X"]
    parts = [e for e in ev if e["cat"] == "partition"]
    slices = [e for e in ev if e["name"].startswith("B")]
    r = t.records
    assert sorted(e["tid"] for e in parts) == sorted(set(r["partition"].tolist()))
    assert sum(e["args"]["ops"] for e in slices) == len(t)
    assert sum(e["args"]["issues"] for e in slices) == len(cycles)
    assert sum(e["args"]["stall_cycles"] for e in slices) == int(stalls.sum())
    for pe in parts:
        rows = np.nonzero(r["partition"] == pe["tid"])[0]
        first, last = int(iid[rows].min()), int(iid[rows].max())
        assert pe["ts"] == cycles[first] - stalls[first] and pe["ts"] + pe["dur"] == cycles[last] + 1
        mine = sorted((e for e in slices if e["tid"] == pe["tid"]), key=lambda e: e["ts"])
        assert [int(e["name"][1:]) for e in mine] == sorted(set(r["bundle"][rows].tolist()))   # listing order
        assert mine[0]["ts"] == pe["ts"] and sum(e["dur"] for e in mine) == pe["dur"]
        for e in mine:
            b_rows = rows[r["bundle"][rows] == int(e["name"][1:])]
            issues = np.unique(iid[b_rows])
            assert (e["args"]["ops"], e["args"]["issues"]) == (b_rows.size, issues.size)
            assert e["dur"] == issues.size + int(stalls[issues].sum())


def test_counters_from_the_kernel_equal_the_trace_profile(run):
    """The profile of the kernel's skeleton stream (no register bytes, folded block by block) equals the
    profile of the full in-memory trace of the same run."""
    from q7emu.analysis.profile import ProfileAccumulator
    kernel, t, _out, _opts = run
    call = run.call
    acc = ProfileAccumulator()
    rec = Recorder(skeleton=True)
    call(np.random.default_rng(11), rec)
    for b in rec.blocks():
        assert not b.complete
        acc.add(b)
    want = profile(t, time_ops=False)
    got = acc.result(rec.runs, t.case, time_ops=False)
    for k in ("records", "mnemonics", "bundles", "cycles"):
        assert got[k] == want[k], k
    assert [{k: v for k, v in x.items() if k != "executed"} for x in got["runs"]] == \
        [{k: v for k, v in x.items() if k != "executed"} for x in want["runs"]]
    assert got["runs"][0]["executed"] == len(t)
    assert chrome_trace(acc) == chrome_trace(t)


def test_plot_needs_matplotlib(mx, tmp_path, monkeypatch):
    p = profile(mx, time_ops=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(Q7Error, match="matplotlib"):
        plot(p, tmp_path / "x.png")


def test_plot_writes_png(mx, tmp_path):
    pytest.importorskip("matplotlib")
    out = plot(profile(mx, time_ops=False), tmp_path / "mix.png")
    assert out.read_bytes()[:4] == b"\x89PNG"
