"""Where a failing case's bytes differ, as numbers (``replay --json``: ``cases[].diff_map``) and as a picture
(``replay --plot FILE.png``, the ``plot`` extra: matplotlib).

The map of a case covers the bounding box of its differing bytes in SBUF: partition (rows) x byte offset, the
offsets cut into at most :data:`MAX_BINS` bins of ``bin_bytes`` bytes, and counts the differing bytes per
(partition, bin): ``cells`` lists ``[partition, bin, count]`` for every cell with a differing byte. Beside
it, the pairs (expected code, actual code) of the differing bytes with their counts, decoded in the output
format (FP8 data; E8M0 for QuantizeMX scale bytes), and the range of the expected and the actual values. A
knob that reads the source the wrong way shows as a band of differing partitions and as pairs off the diagonal
(e.g. every actual value half the expected one: a scale off by one).

The picture draws exactly these numbers: one row per failing case (at most :data:`MAX_PLOT_CASES`), on the left
the map (colour = differing bytes per cell), on the right the pairs (expected value on x, actual value on y,
marker area by count, the diagonal where they would agree). docs/cli.md §4.1 describes both.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from q7emu.errors import InvalidArgument, install_hint
from q7emu.fileio import atomic_write
from q7emu.machine.cases import Case, CaseResult
from q7emu.model.values import decode, value_text

__all__ = ["MAX_BINS", "MAX_PAIRS", "MAX_PLOT_CASES", "diff_map", "plot_diff_maps", "require_matplotlib"]

#: byte-offset bins of a map
MAX_BINS = 64
#: (expected, actual) code pairs listed per format, most frequent first
MAX_PAIRS = 64
#: failing cases drawn in one --plot figure
MAX_PLOT_CASES = 8


#: bytes of an expected region compared at a time (a block of its partitions): bounds the temporaries of a map
CHUNK_BYTES = 1 << 20


@functools.lru_cache(maxsize=8)
def _lut(fmt: str, **kw: Any) -> np.ndarray:
    return np.array([decode(c, fmt, **kw) for c in range(256)], dtype=np.float64)


def _value_stats(hist: np.ndarray, fmt: str, lut: np.ndarray) -> dict[str, Any]:
    """The ``values`` entry of one kind from ``hist`` (int64 [256, 256]: differing bytes per (expected code,
    actual code))."""
    def rng(per_code: np.ndarray) -> dict[str, Any]:
        v = lut[per_code > 0]
        fin = v[np.isfinite(v)]
        return {"min": float(fin.min()) if fin.size else None, "max": float(fin.max()) if fin.size else None,
                "nan": int(per_code[np.isnan(lut)].sum()), "inf": int(per_code[np.isinf(lut)].sum())}

    flat = hist.reshape(-1)
    pairs = np.flatnonzero(flat)                     # ascending (expected, actual) codes
    counts = flat[pairs]
    order = np.argsort(-counts, kind="stable")[:MAX_PAIRS]
    return {"format": fmt, "bytes": int(counts.sum()), "expected": rng(hist.sum(axis=1)),
            "actual": rng(hist.sum(axis=0)),
            "pairs": [{"expected": int(pairs[i] // 256), "actual": int(pairs[i] % 256), "count": int(counts[i]),
                       "expected_text": value_text(lut[pairs[i] // 256]),
                       "actual_text": value_text(lut[pairs[i] % 256])}
                      for i in order],
            "pairs_total": int(pairs.size)}


def _blocks(case: Case, result: CaseResult) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """(first partition, first offset, expected, actual, differing mask) of each block of at most
    :data:`CHUNK_BYTES` bytes (whole partitions of a region) of the regions whose bytes differ."""
    for (reg, exp), d in zip(case.expected, result.regions):
        if not d.differing or d.actual is None or d.actual.shape != exp.shape:
            continue
        rows = max(1, CHUNK_BYTES // max(1, reg.length))
        for r0 in range(0, reg.count, rows):
            e, a = exp[r0:r0 + rows], d.actual[r0:r0 + rows]
            yield reg.partition + r0, reg.offset, e, a, e != a


def diff_map(case: Case, result: CaseResult, out_format: str | None,
             is_scale: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None) -> dict[str, Any] | None:
    """The ``diff_map`` of a failing case (module docstring), None when no byte differs.

    ``out_format``: the record's FP8 data format (``E5M2`` / ``E4M3``; None: values are not decoded);
    ``is_scale(partitions, offsets)``: bool array, True at QuantizeMX scale bytes (decoded as E8M0).

    Memory: the regions are compared a block of at most :data:`CHUNK_BYTES` bytes at a time, twice (the
    bounding box, then the counts), and the values are counted in a 256 x 256 table per kind, so a map needs a
    few MiB whatever the number of differing bytes (docs/limits.md §5)."""
    p0 = o0 = None
    p1 = o1 = -1
    for pb, ob, _, _, m in _blocks(case, result):
        rows, cols = np.flatnonzero(m.any(axis=1)), np.flatnonzero(m.any(axis=0))
        if rows.size:
            p0 = pb + int(rows[0]) if p0 is None else min(p0, pb + int(rows[0]))
            o0 = ob + int(cols[0]) if o0 is None else min(o0, ob + int(cols[0]))
            p1, o1 = max(p1, pb + int(rows[-1])), max(o1, ob + int(cols[-1]))
    if p0 is None or o0 is None:
        return None
    span = o1 - o0 + 1
    bin_bytes = max(1, math.ceil(span / MAX_BINS))
    nbins = math.ceil(span / bin_bytes)
    grid = np.zeros((p1 - p0 + 1, nbins), dtype=np.int64)
    hist = {"data": np.zeros((256, 256), dtype=np.int64), "scale": np.zeros((256, 256), dtype=np.int64)}
    for pb, ob, e, a, m in _blocks(case, result):
        rows, cols = np.nonzero(m)
        if not rows.size:
            continue
        parts, offs = rows + pb, cols + ob
        np.add.at(grid, (parts - p0, (offs - o0) // bin_bytes), 1)
        codes = e[rows, cols].astype(np.int64) * 256 + a[rows, cols]
        scale = is_scale(parts, offs) if is_scale is not None else np.zeros(rows.size, dtype=bool)
        for kind, sel in (("data", ~scale), ("scale", scale)):
            if sel.any():
                hist[kind] += np.bincount(codes[sel], minlength=256 * 256).reshape(256, 256)
    values: dict[str, Any] = {}
    if hist["data"].any():
        values["data"] = _value_stats(hist["data"], out_format, _lut(out_format)) if out_format is not None else None
    if hist["scale"].any():
        values["scale"] = _value_stats(hist["scale"], "E8M0", _lut("E8M0"))
    cells = np.argwhere(grid)                        # row-major: by partition, then bin
    return {"bytes_differing": int(grid.sum()), "partitions": [p0, p1], "offsets": [o0, o1],
            "bin_bytes": bin_bytes, "bins": nbins,
            "cells": [[p0 + int(r), int(b), int(grid[r, b])] for r, b in cells],
            "partitions_differing": int(np.count_nonzero(grid.any(axis=1))),
            "values": values}


def require_matplotlib() -> None:
    """InvalidArgument naming the ``plot`` extra when matplotlib is not installed (checked before any work)."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise InvalidArgument("--plot", "matplotlib", f"is not installed: {install_hint('plot')}")


def plot_diff_maps(maps: Sequence[tuple[str, dict[str, Any]]], path: str) -> int:
    """Draw the ``(label, diff_map)`` of up to :data:`MAX_PLOT_CASES` failing cases into the PNG ``path``
    (written atomically); returns the number of cases drawn. The figure is the module docstring's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    shown = list(maps)[:MAX_PLOT_CASES]
    n = max(1, len(shown))
    fig, axes = plt.subplots(n, 2, figsize=(13, 3.6 * n), squeeze=False,
                             gridspec_kw={"width_ratios": [1.9, 1.0]})
    if not shown:
        axes[0, 0].text(0.5, 0.5, "no byte differs", ha="center", va="center")
        axes[0, 0].axis("off")
        axes[0, 1].axis("off")
    for (label, m), (ax_map, ax_val) in zip(shown, axes):
        p0, p1 = m["partitions"]
        grid = np.full((p1 - p0 + 1, m["bins"]), np.nan)
        for p, b, k in m["cells"]:
            grid[p - p0, b] = k
        o0, o1 = m["offsets"]
        extent = (o0, o0 + m["bins"] * m["bin_bytes"], p1 + 0.5, p0 - 0.5)
        im = ax_map.imshow(grid, aspect="auto", interpolation="nearest",
                           extent=extent, cmap="viridis")
        fig.colorbar(im, ax=ax_map, label=f"differing bytes per {m['bin_bytes']}-byte cell")
        if len(m["cells"]) <= 200:                  # a few cells: ring them so that they show at any size
            ax_map.scatter([o0 + (b + 0.5) * m["bin_bytes"] for _, b, _ in m["cells"]],
                           [p for p, _, _ in m["cells"]], s=60, facecolors="none", edgecolors="red", linewidths=1)
        ax_map.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"0x{int(x):x}"))
        ax_map.set_xlabel("SBUF byte offset")
        ax_map.set_ylabel("SBUF partition")
        ax_map.set_title(f"{label}\n{m['bytes_differing']} bytes differ in {m['partitions_differing']} "
                         f"partition(s), p{p0}..p{p1}, bytes 0x{o0:x}..0x{o1:x}", fontsize=9)
        drew = False
        tiny = [abs(v) for st in m["values"].values() if st for p in st["pairs"]
                for v in (decode(p["expected"], st["format"]), decode(p["actual"], st["format"]))
                if math.isfinite(v) and v != 0]
        for kind, marker in (("data", "o"), ("scale", "s")):
            st = m["values"].get(kind)
            if not st:
                continue
            xs = [decode(p["expected"], st["format"]) for p in st["pairs"]]
            ys = [decode(p["actual"], st["format"]) for p in st["pairs"]]
            cs = [p["count"] for p in st["pairs"]]
            keep = [i for i in range(len(xs)) if math.isfinite(xs[i]) and math.isfinite(ys[i])]
            if keep:
                top = max(cs)
                ax_val.scatter([xs[i] for i in keep], [ys[i] for i in keep], marker=marker, alpha=0.6,
                               s=[20 + 200 * cs[i] / top for i in keep],
                               label=f"{kind} ({st['format']}): {st['bytes']} bytes")
                drew = True
        if drew:
            lo, hi = ax_val.get_xlim()
            lo2, hi2 = ax_val.get_ylim()
            a, b = min(lo, lo2), max(hi, hi2)
            ax_val.plot([a, b], [a, b], color="grey", lw=0.8, ls="--")
            if tiny and max(tiny) / min(tiny) > 64:      # values over many octaves: a symmetric log scale
                for axis, setter in ((ax_val.xaxis, ax_val.set_xscale), (ax_val.yaxis, ax_val.set_yscale)):
                    setter("symlog", linthresh=min(tiny))
                    axis.set_major_locator(matplotlib.ticker.SymmetricalLogLocator(
                        base=10, linthresh=min(tiny), subs=[1.0]))
                    axis.get_major_locator().set_params(numticks=5)
                ax_val.tick_params(axis="x", labelrotation=45)
            ax_val.legend(fontsize=7, loc="best")
        ax_val.set_xlabel("expected value")
        ax_val.set_ylabel("actual value")
        ax_val.set_title(_range_title(m), fontsize=9)
    fig.tight_layout()
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=90)
    plt.close(fig)
    return len(shown)


def _range_title(m: dict[str, Any]) -> str:
    st = m["values"].get("data") or m["values"].get("scale")
    if not st:
        return "values not decoded"

    def r(d: dict[str, Any]) -> str:
        if d["min"] is None:
            return "no finite value"
        text = f"{value_text(d['min'])}..{value_text(d['max'])}"
        return text + (f", {d['nan']} NaN" if d["nan"] else "") + (f", {d['inf']} inf" if d["inf"] else "")
    return (f"{st['format']} values of the differing bytes\nexpected {r(st['expected'])}\n"
            f"actual {r(st['actual'])}")
