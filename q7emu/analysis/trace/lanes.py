"""Lane codecs (an operand's bytes <-> its lanes in a view, docs/traces.md §4), register names and the
vectorised byte moves the block codecs use."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from q7emu.analysis.trace.layout import (
    KIND_BYTES,
    KINDS,
    REG_PREFIX,
    SCALAR_REGS,
    SNAP_BASE,
    SNAP_REGS,
    VIEWS,
    TraceError,
)


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
