"""Record layout, block layout and reading limits of the trace formats (src/trace/q7trace.pxd; docs/traces.md
§1-§3), the trace error, and the checks of the JSON parts of a trace file (header, footer, ``runs``)."""
from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from q7emu.errors import Q7Error
from q7emu.fileio import JsonTextError, parse_json
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
    """Every mnemonic a kernel or a program can record: the IVP ops of the op table (wrapped and C-only)."""
    from q7emu.primitives.optable import BY_NAME

    return set(BY_NAME)


def nearest_mnemonics(name: str, names: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``names`` that look like ``name`` (a misspelt mnemonic), the closest first."""
    import difflib

    return difflib.get_close_matches(name, sorted(set(names)), n=n, cutoff=0.6)


# ---------------------------------------------------------------------- bounded JSON


def json_loads(text: str | bytes, where: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """JSON text of a trace file (header, footer, one JSON Lines line) parsed by :func:`q7emu.fileio.parse_json`
    (UTF-8, strict, nesting at most ``max_depth``); TraceError naming ``where`` otherwise."""
    try:
        return parse_json(text, max_depth=max_depth)
    except JsonTextError as e:
        raise TraceError(f"{where}: {e}") from None


def _int(obj: Any, key: str, where: str, lo: int = 0, hi: int = U64_MAX, default: Any = None) -> int:
    """``obj[key]`` as an int in lo..hi (a bool is not an int), or ``default`` when absent and given."""
    if not isinstance(obj, dict):
        raise TraceError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if key not in obj and default is not None:
        return int(default)
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise TraceError(f"{where}: {key!r} must be an integer, got {type(v).__name__}")
    if not lo <= v <= hi:
        raise TraceError(f"{where}: {key!r} = {v} outside {lo}..{hi}")
    return v


def object_items(items: Any, limit: int, where: str, rule: str, item: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, object) of each item of a JSON list that must be a list of at most ``limit`` objects: TraceError
    ``{where}: {rule}`` for anything else, ``{where}: {item} {i}: must be an object, got TYPE`` for an item that is
    not one."""
    if not isinstance(items, list) or len(items) > limit:
        raise TraceError(f"{where}: {rule}")
    for i, obj in enumerate(items):
        w = f"{where}: {item} {i}"
        if not isinstance(obj, dict):
            raise TraceError(f"{w}: must be an object, got {type(obj).__name__}")
        yield w, obj


def check_runs(runs: Any, where: str) -> list[dict[str, Any]]:
    """A file's ``runs`` list, checked: a list of objects with the documented field types."""
    out = []
    for w, r in object_items(runs, 1 << 20, where, "'runs' must be a list of run objects", "run"):
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
        _check_run_lists(r, w)
        # a run written before the field existed was recorded under q7emu's earlier operand order (§1.4)
        out.append(r if "operand_order" in r else dict(r, operand_order=LEGACY_OPERAND_ORDER))
    return out


def _check_run_lists(r: dict[str, Any], w: str) -> None:
    """A run's ``window``, ``partitions``, ``ops`` and ``bundles`` items (TraceError naming the first bad one)."""
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
