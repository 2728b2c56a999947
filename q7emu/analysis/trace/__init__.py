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
(``B<n>``: the bundle tags of the kernel programs), mnemonic and its operands. An operand
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

Modules (one per job; every public name is re-exported here, so ``from q7emu.analysis.trace import Trace``
and ``q7emu.trace.Recorder`` work as before; docs/ARCHITECTURE.md lists them):

* :mod:`~q7emu.analysis.trace.layout`: record / block layout constants, limits, :class:`TraceError`, the
  checks of a file's JSON parts;
* :mod:`~q7emu.analysis.trace.lanes`: lane codecs, register names, vectorised byte moves;
* :mod:`~q7emu.analysis.trace.blocks`: the raw record stream and the v2 block codecs;
* :mod:`~q7emu.analysis.trace.ops`: :class:`Op`, :class:`Operand`, one op as text / JSON;
* :mod:`~q7emu.analysis.trace.model`: :class:`Trace` and the streaming reader :class:`TraceFile`;
* :mod:`~q7emu.analysis.trace.q7t`: the ``.q7t`` writer; :mod:`~q7emu.analysis.trace.jsonl`: the JSON Lines
  reader; :mod:`~q7emu.analysis.trace.convert`: export / import;
* :mod:`~q7emu.analysis.trace.recorder`: :class:`Recorder` and its argument checks;
* :mod:`~q7emu.analysis.trace.log`: the text log; :mod:`~q7emu.analysis.trace.diff`: :func:`diff`.

The command line's parsing of ranges and lists (``--window``, ``--partitions``, ``--lanes`` ...) is in
:mod:`q7emu.cli.trace_args`.
"""
from __future__ import annotations

from q7emu.analysis.trace.blocks import Block, BlockEncoder, block_stats, decode_block, parse_raw
from q7emu.analysis.trace.convert import export_jsonl, import_jsonl
from q7emu.analysis.trace.diff import (
    DIFF_FORMAT,
    DIFF_VERSION,
    DiffResult,
    Divergence,
    LaneDiff,
    OperandOrderMismatch,
    check_same_operand_order,
    diff,
    operand_orders,
)
from q7emu.analysis.trace.jsonl import JsonlReader
from q7emu.analysis.trace.lanes import bytes_from_lanes, lane_layout, lanes_hex, lanes_int, operand_name
from q7emu.analysis.trace.layout import (
    BLK_DATA,
    BLK_EVENTS,
    BLK_OPERANDS,
    BLK_RECORDS,
    BLOCK_HEADER,
    BLOCK_MAGIC,
    CODEC,
    CODEC_LEVEL,
    DEFAULT_VIEW,
    END_MAGIC,
    EV_KERNEL,
    EV_PARTITION,
    EV_SEQ,
    EVENT_DTYPE,
    FILE_FORMAT,
    FILE_VERSION,
    FRAME,
    FRAME_MAGIC,
    HEADER_BYTES,
    JSONL_FORMAT,
    JSONL_VERSION,
    KERNEL_IDS,
    KERNEL_ONLY_OPS,
    KERNELS,
    KIND_BYTES,
    KIND_IDS,
    KINDS,
    LEGACY_OPERAND_ORDER,
    MAGIC,
    MAX_DIFF_SEQS,
    MAX_FOOTER_BYTES,
    MAX_HEADER_BYTES,
    MAX_JSON_DEPTH,
    MAX_JSONL_LINE,
    MAX_MNEMONIC,
    MAX_NAMES,
    MAX_OP_DATA,
    MAX_OP_OPERANDS,
    MAX_OPS_FILTER,
    MAX_PARTITION_RANGES,
    MAX_RAW_BLOCK,
    MAX_V1_BYTES,
    NAME_BYTES,
    OP_DTYPE,
    OPERAND_DTYPE,
    OPERAND_HEADER_BYTES,
    OPERAND_ORDER,
    OPERAND_ORDERS,
    PREAMBLE,
    READ_VERSIONS,
    RECORD_DTYPE,
    REG_PREFIX,
    ROLE_IDS,
    ROLES,
    SCALAR_REGS,
    SNAP_BASE,
    SNAP_BYTES,
    SNAP_REGS,
    TRAILER,
    U64_MAX,
    UNKNOWN_BUNDLE,
    V1_OPERAND_DTYPE,
    V1_RECORD_DTYPE,
    VIEW_IDS,
    VIEWS,
    TraceError,
    check_runs,
    json_loads,
    known_mnemonics,
)
from q7emu.analysis.trace.log import LogWriter, log_line
from q7emu.analysis.trace.model import Trace, TraceFile, load, open_trace
from q7emu.analysis.trace.ops import Op, Operand, format_op, op_json
from q7emu.analysis.trace.q7t import TraceWriter
from q7emu.analysis.trace.recorder import (
    Recorder,
    RunSink,
    check_bundles,
    check_mutate,
    check_ops,
    check_partition_base,
    check_partitions,
    check_window,
)

__all__ = [
    "BLK_DATA",
    "BLK_EVENTS",
    "BLK_OPERANDS",
    "BLK_RECORDS",
    "BLOCK_HEADER",
    "BLOCK_MAGIC",
    "Block",
    "BlockEncoder",
    "CODEC",
    "CODEC_LEVEL",
    "DEFAULT_VIEW",
    "DIFF_FORMAT",
    "DIFF_VERSION",
    "DiffResult",
    "Divergence",
    "END_MAGIC",
    "EVENT_DTYPE",
    "EV_KERNEL",
    "EV_PARTITION",
    "EV_SEQ",
    "FILE_FORMAT",
    "FILE_VERSION",
    "FRAME",
    "FRAME_MAGIC",
    "HEADER_BYTES",
    "JSONL_FORMAT",
    "JSONL_VERSION",
    "JsonlReader",
    "KERNELS",
    "KERNEL_IDS",
    "KERNEL_ONLY_OPS",
    "KINDS",
    "KIND_BYTES",
    "KIND_IDS",
    "LEGACY_OPERAND_ORDER",
    "LaneDiff",
    "LogWriter",
    "MAGIC",
    "MAX_DIFF_SEQS",
    "MAX_FOOTER_BYTES",
    "MAX_HEADER_BYTES",
    "MAX_JSONL_LINE",
    "MAX_JSON_DEPTH",
    "MAX_MNEMONIC",
    "MAX_NAMES",
    "MAX_OPS_FILTER",
    "MAX_OP_DATA",
    "MAX_OP_OPERANDS",
    "MAX_PARTITION_RANGES",
    "MAX_RAW_BLOCK",
    "MAX_V1_BYTES",
    "NAME_BYTES",
    "OPERAND_DTYPE",
    "OPERAND_HEADER_BYTES",
    "OPERAND_ORDER",
    "OPERAND_ORDERS",
    "OP_DTYPE",
    "Op",
    "Operand",
    "OperandOrderMismatch",
    "PREAMBLE",
    "READ_VERSIONS",
    "RECORD_DTYPE",
    "REG_PREFIX",
    "ROLES",
    "ROLE_IDS",
    "Recorder",
    "RunSink",
    "SCALAR_REGS",
    "SNAP_BASE",
    "SNAP_BYTES",
    "SNAP_REGS",
    "TRAILER",
    "Trace",
    "TraceError",
    "TraceFile",
    "TraceWriter",
    "U64_MAX",
    "UNKNOWN_BUNDLE",
    "V1_OPERAND_DTYPE",
    "V1_RECORD_DTYPE",
    "VIEWS",
    "VIEW_IDS",
    "block_stats",
    "bytes_from_lanes",
    "check_bundles",
    "check_mutate",
    "check_ops",
    "check_partition_base",
    "check_partitions",
    "check_runs",
    "check_same_operand_order",
    "check_window",
    "decode_block",
    "diff",
    "export_jsonl",
    "format_op",
    "import_jsonl",
    "json_loads",
    "known_mnemonics",
    "lane_layout",
    "lanes_hex",
    "lanes_int",
    "load",
    "log_line",
    "op_json",
    "open_trace",
    "operand_name",
    "operand_orders",
    "parse_raw",
]
