"""The firmware kernels as programs (docs/asm.md §6): one assembly file per kernel, the statement of its schedule.

``proc_4bit_non_mx.s``, ``proc_4bit_mx_8.s``, ``proc_6bit_non_mx.s`` and ``quantize_mx.s`` (with their shared
``kernel_common.inc``) are written in q7emu's assembly language, bundle by bundle (the kernels' only statement: the
interpreter and the translations of ``src/kernels/_program.pyx`` run them). A kernel configuration (the format, the
knobs) reaches a program as predefined symbols: the functions here compute them from the format and knob tables
(:mod:`q7emu.model.format_table`, :mod:`q7emu.model.knobs`), and the program's conditional assembly and data
directives do the rest. Assembling and running them is :mod:`q7emu.asm.kernels`' (one layer up); a TensorDequantize or
QuantizeMX call runs its configuration's translation or decoded program (docs/asm.md §9) through
:func:`dequant_configuration` / :func:`quantize_mx_configuration`, the registers and the addresses below, without the
assembler.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from q7emu.model.format_table import codebook_triples, dequant_format, dequant_path, fp8_format, mx_layout
from q7emu.model.knobs import KNOB_DEFAULTS, KNOBS, knob
from q7emu.model.tables import MAX_EXP, NF4_TABLES

#: where the program files are
PROGRAM_DIR = Path(__file__).resolve().parent
#: kernel name -> its program file
PROGRAM_FILES = {"proc_4bit_non_mx": "proc_4bit_non_mx.s", "proc_4bit_mx_8": "proc_4bit_mx_8.s",
                 "proc_6bit_non_mx": "proc_6bit_non_mx.s", "quantize_mx": "quantize_mx.s"}
Symbols = dict[str, int | tuple[int, ...]]

#: the data section's address: the program's constant rows live here, apart from the SBUF partition at 0
#: (docs/asm.md §4.2; the firmware's own state band starts at 0x02000000, docs/firmware.md §1.4)
DATA_BASE = 0x0200_0000
#: where a kernel call's streams are (docs/asm.md §4.3): the source at SRC_BASE, the destination at DST_BASE,
#: QuantizeMX's scale row at SCALE_BASE
SRC_BASE = 0x0400_0000
DST_BASE = 0x0600_0000
SCALE_BASE = 0x0700_0000


def dequant_registers(in_bytes: int) -> dict[str, int]:
    """A TensorDequantize call's starting scalar registers (docs/asm.md §4.3): a2 = the source stream's address, a3 =
    its u32 words (num_elem; ``in_bytes`` is the stream's length in bytes), a4 = the destination stream's address."""
    return {"a2": SRC_BASE, "a3": in_bytes // 4, "a4": DST_BASE}


def program_file(kernel: str) -> Path:
    """The program file of a kernel (KeyError for a kernel without one)."""
    return PROGRAM_DIR / PROGRAM_FILES[kernel]


def _mx_layout_symbols(name: str) -> Symbols:
    """MX_SCALE_BASE, MX_SCALE_STEP, MX_CODE_BASE, MX_CODE_STEP: the format table's layout of an ``mx_layout`` value
    (:class:`q7emu.model.format_table.MxGroupLayout`)."""
    lay = mx_layout(name)
    return {"MX_SCALE_BASE": lay.scale_base, "MX_SCALE_STEP": lay.scale_step, "MX_CODE_BASE": lay.code_base,
            "MX_CODE_STEP": lay.code_step}


def dequant_symbols(fmt: int, group: int, knobs: Mapping[str, str] | None = None) -> Symbols:
    """The predefined symbols of a TensorDequantize configuration: the path's program reads them (the header of each
    program file lists the ones it uses). ``knobs``: the model knobs (docs/model.md §1); a knob not given takes the
    knob table's default."""
    k = dict(KNOB_DEFAULTS)
    k.update(knobs or {})
    rec = dequant_format(fmt)
    path = dequant_path(rec.paths[group])
    out8 = fp8_format(rec.out)
    sym: Symbols = {
        "FMT": rec.code, "FMT_BITS": rec.bits, "GROUP": group,
        "NIBBLE_HIGH_FIRST": int(k["nibble_order"] == "high-first"),
        "FP6_MSB_FIRST": int(k["fp6_packing"] == "msb-first"),
        **_mx_layout_symbols(k["mx_layout"]),
        "MX_NAN_SCALE": int(k["mx_scale"] == "e8m0"),
        "OUT_BIAS": out8.bias, "OUT_MBITS": out8.mant_bits, "OUT_MAX": out8.max_code, "OUT_NAN": out8.nan_code,
        "PASS_BYTES": path.pass_bytes,
    }
    rb = rec.rebias
    if group == 0 and rb is not None:
        sym.update({"REBIAS": 1, "RB_P1": rb.p1, "RB_P2": rb.p2, "RB_P3": rb.p3, "RB_BIAS": rb.bias, "RB_W1": rb.w1,
                    "RB_WX": rb.wx, "RB_W2": rb.w2, "RB_W3": rb.w3, "RB_NEGMIN": rb.neg_min,
                    "RB_X": tuple(int(x) for x in rb.x)})
    else:
        values = rec.codebook if rec.codebook is not None else NF4_TABLES[k[rec.codebook_knob or "nf4_table"]]
        sig, exp, sgn = codebook_triples(values, 127 if group == 8 else 0)
        sym.update({"REBIAS": 0, "CB_SIG": sig, "CB_EXP": exp, "CB_SGN": sgn})
    return sym


def dequant_knobs_read(fmt: int, group: int) -> tuple[str, ...]:
    """The knobs a TensorDequantize configuration's program reads (sorted): the format's and its path's; the others
    leave its program as their defaults do."""
    rec = dequant_format(fmt)
    return tuple(sorted(set(rec.knobs) | set(dequant_path(rec.paths[group]).knobs)))


def dequant_configuration(fmt: int, group: int, knobs: Mapping[str, str] | None = None) -> str:
    """A TensorDequantize configuration's name, ``fmt=1 group=0 nibble_order=low-first``: the format, the group and
    the value of each knob it reads (:func:`dequant_knobs_read`; a knob not given takes its default). Two calls
    whose names are equal run the same program; the translations' table is keyed by it (docs/asm.md §9)."""
    k = knobs or {}
    return " ".join([f"fmt={int(fmt)}", f"group={int(group)}"]
                    + [f"{n}={k.get(n, knob(n).default)}" for n in dequant_knobs_read(fmt, group)])


def quantize_mx_symbols(src_dtype: str, dst_dtype: str, knobs: Mapping[str, str] | None = None) -> Symbols:
    """The predefined symbols of a QuantizeMX configuration (``quantize_mx.s`` lists them): the source and
    destination types and the knobs of docs/model.md §2 (a knob not given takes the knob table's default)."""
    k = dict(KNOB_DEFAULTS)
    k.update(knobs or {})
    out8 = fp8_format(dst_dtype)
    return {"BF16": int(src_dtype in ("bfloat16", "bf16")), "OUT_BIAS": out8.bias, "OUT_MBITS": out8.mant_bits,
            "OUT_MAX": out8.max_code, "OUT_NAN": out8.nan_code, "MAX_EXP": MAX_EXP[(k["emax"], dst_dtype)],
            "UNDERFLOW_WRAP": int(k["underflow"] in ("wrap", "unwrapped-data")),
            "UNDERFLOW_TRUE_DIV": int(k["underflow"] in ("unclamped-data", "unwrapped-data")),
            "NONFINITE_OCP": int(k["nonfinite"] == "ocp")}


#: the knobs a QuantizeMX configuration's program reads (sorted): the op's machine knobs (scale_layout places the
#: scale row, a region of the call, and leaves the program as it is)
QUANTIZE_MX_KNOBS_READ: tuple[str, ...] = tuple(sorted(k.name for k in KNOBS if k.op == "quantize_mx" and k.machine))


def quantize_mx_configuration(src_dtype: str, dst_dtype: str, knobs: Mapping[str, str] | None = None) -> str:
    """A QuantizeMX configuration's name, ``quantize_mx src=float16 dst=float8_e4m3fn emax=ocp ...``: the source and
    destination types (their canonical names) and the value of each knob the program reads
    (:data:`QUANTIZE_MX_KNOBS_READ`; a knob not given takes its default). Two calls whose names are equal run the
    same program (docs/asm.md §9)."""
    k = knobs or {}
    return " ".join(["quantize_mx", f"src={src_dtype}", f"dst={dst_dtype}"]
                    + [f"{n}={k.get(n, knob(n).default)}" for n in QUANTIZE_MX_KNOBS_READ])


def quantize_mx_registers(columns: int) -> dict[str, int]:
    """A QuantizeMX call's starting scalar registers (docs/asm.md §4.3) for a tile of ``columns`` (F) elements per
    row: a2 = the block's source rows' address, a3 = their stride (2F bytes), a4 = F, a5 = the data rows' address,
    a6 = their stride (F bytes), a7 = the scale row's address."""
    return {"a2": SRC_BASE, "a3": 2 * columns, "a4": columns, "a5": DST_BASE, "a6": columns, "a7": SCALE_BASE}
