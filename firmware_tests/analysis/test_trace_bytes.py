"""The bytes every trace writer produces are pinned (issue 24 item 3: the split of q7emu.analysis.trace into a
package changed no output byte).

A synthetic trace (two runs, every operand kind and lane view, seq jumps, partition and kernel changes, repeated
register values, more records than one block holds) is built from JSON Lines text written here, independently of
the code under test and of the kernels. The SHA-256 of each output was taken from the single-module
implementation (the module q7emu.analysis.trace at commit 57b34c7) before the split: ``.q7t`` bytes, JSON Lines text,
export / import through files, the raw record stream, the text log, ``format_op`` text and the diff results.
Any change to one byte of any of them fails here; a deliberate format change updates the digests and
docs/traces.md together."""
from __future__ import annotations

import hashlib
import io
import json

import pytest

from q7emu.analysis.trace import (
    LogWriter,
    Trace,
    TraceFile,
    diff,
    export_jsonl,
    format_op,
    import_jsonl,
)

#: (kind, view, bytes) of the operands the synthetic records cycle through: every view of docs/traces.md §4
VIEWS = {"vec": (["2nx8", 8], ["nx16", 16], ["n_2x32", 32], ["nxf16", 16], ["n_2xf32", 32]),
         "wvec": (["w24", 24], ["w48", 48], ["w96", 96]),
         "vbool": (["vb8", 1], ["vb16", 2], ["vb32", 4]), "pr": (["pr", 64],), "scalar": (["scalar", 64],)}
NBYTES = {"vec": 64, "wvec": 192, "vbool": 8, "pr": 8, "scalar": 8}
OPS = ["addnx16", "mulnx16packl", "lav2nx8_xp", "sel2nx8i", "movvint16", "a_mnemonic_of_31_characters_xyz"]


class _Lcg:
    """A 64-bit LCG (Knuth's MMIX constants): the same numbers on every platform and numpy version."""

    def __init__(self, seed: int) -> None:
        self.x = seed

    def next(self, bits: int) -> int:
        out = 0
        for k in range(0, bits, 32):
            self.x = (self.x * 6364136223846793005 + 1442695040888963407) & ((1 << 64) - 1)
            out |= (self.x >> 32) << k
        return out & ((1 << bits) - 1)


def _operand(rng: _Lcg, kind: str, role: str, reg: int, vi: int, value: int | None) -> dict:
    view, bits = VIEWS[kind][vi % len(VIEWS[kind])]
    n = 8 * NBYTES[kind] // bits
    digits = (bits + 3) // 4
    v = rng if value is None else _Lcg(value)
    return {"role": role, "kind": kind, "reg": reg, "view": view,
            "lanes": [format(v.next(bits), f"0{digits}x") for _ in range(n)]}


def synthetic_jsonl(n: int = 7000) -> str:
    """The JSON Lines text of the pinned trace: ``n`` records over two runs."""
    rng = _Lcg(0x7B_E3)
    runs = [{"kernel": "proc_4bit_non_mx", "kernel_id": 1, "knobs": {"x": 1}, "window": None, "ops": None,
             "operand_order": "c-intrinsic"},
            {"kernel": "quantize_mx", "kernel_id": 4, "knobs": {}, "window": [0, 99999], "ops": None,
             "operand_order": "c-intrinsic"}]
    lines = [json.dumps({"format": "q7emu-trace-jsonl", "version": 1, "q7emu_version": "pinned",
                         "case": "pinned.json", "runs": runs})]
    seq = 0
    for i in range(n):
        run = 0 if i < n * 3 // 5 else 1
        if i == n * 3 // 5:
            seq = 5
        seq += 1 + (7 if i % 911 == 0 else 0)               # seq jumps
        part = (i // 1500) % 5 + 3 * run                      # partition changes
        kernel = ["proc_4bit_non_mx", "proc_4bit_mx_8", "proc_6bit_non_mx"][(i // 4000) % 3] if run == 0 \
            else "quantize_mx"
        ops = []
        for k in range(1 + i % 5):
            kind = ["vec", "wvec", "vbool", "pr", "scalar"][(i + k) % 5]
            regs = [(i * 7 + k) % 34, (i + k) % 5, (i + 3 * k) % 17, (i + k) % 17, [255, 254, 253, 3][k % 4]]
            reg = regs[(i + k) % 5]
            same = (i + k) % 3 == 0                           # a repeated value: an implicit operand in a block
            ops.append(_operand(rng, kind, "dst" if k % 2 else "src", reg, i + k, reg * 1000 + 1 if same else None))
        lines.append(json.dumps({"run": run, "seq": seq, "partition": part, "kernel": kernel,
                                 "bundle": 65535 if i % 97 == 0 else i % 300, "op": OPS[i % len(OPS)],
                                 "operands": ops}))
    return "\n".join(lines) + "\n"


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def outputs(tmp_path) -> dict[str, str]:
    """SHA-256 of every output of the pinned trace."""
    text = synthetic_jsonl()
    t = Trace.from_jsonl(io.StringIO(text))
    out = {"q7t": _sha(t.to_bytes()), "jsonl": _sha("\n".join(t.iter_jsonl())), "raw": _sha(t.to_raw())}
    src = tmp_path / "in.jsonl"
    src.write_text(text)
    q7t = tmp_path / "t.q7t"
    import_jsonl(src, q7t)
    out["import"] = _sha(q7t.read_bytes())
    export_jsonl(q7t, tmp_path / "e.jsonl")
    out["export"] = _sha((tmp_path / "e.jsonl").read_bytes())
    import_jsonl(tmp_path / "e.jsonl", tmp_path / "again.q7t")
    out["reimport"] = _sha((tmp_path / "again.q7t").read_bytes())
    log = io.StringIO()
    lw = LogWriter(log)
    with TraceFile(q7t) as f:
        out["blocks"] = str(len(f.index))
        for b in f.blocks():
            lw.write_block(b)
        shown = "\n".join(format_op(op, (2, 9) if op.index % 2 else None) for op in f.ops(seq=(2000, 2400)))
    out["log"] = _sha(log.getvalue())
    out["show"] = _sha(shown)
    # B: one lane of one record changed, 30 records dropped, one op renamed
    rows = [i for i in range(len(t)) if not 3000 <= i < 3030]
    u = t.subset(rows)
    u.data[int(u.operands["offset"][500]) + 3] ^= 0x40
    u.records["op"][5000] = b"addnx16"
    for align in ("seq", "op"):
        r = diff(t, u, align=align)
        out[f"diff_{align}"] = _sha(json.dumps(r.as_json()) + "\n" + r.format())
    return out


PINNED = {
    "blocks": "2",
    "diff_op": "6d9cea6685a07361f21f1ebb7a54b78357b709067bd7dc86753fbac325317b9f",
    "diff_seq": "4b822c0d017bd8d995bf023fe8c3e23e25ab479cd6e534ee2937d8fba5b64ac4",
    "export": "78334e1c3837c2791898abd29f2e434cee3b4eb864ac3e37d5383e8a254196b1",
    "import": "885dcd5f2e0371b3e592eb3a500d12f73ac1bee751020fdb0a11f41903eafb58",
    "jsonl": "bc6bcf3ddbec3c25acd97e3d076c47c840b73af101a71064c97ec038e199981e",
    "log": "1e136c3ab7f75083d32f825d1785c3b829beb7960d651a0551173a6c6b16ad47",
    "q7t": "85ecace7e80e0a8963f59f2814f441f3332f959fe21d94d2d20e5a77fe0565a1",
    "raw": "c5a7499ef58e6eae100da3538ba03587522a2e52756bb32ff4fccd7b5506c075",
    "reimport": "885dcd5f2e0371b3e592eb3a500d12f73ac1bee751020fdb0a11f41903eafb58",
    "show": "b848807df1e406cf74ef6cbc3935e342730d100da2ab7171c256ab90fa4b869a",
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_output_bytes_are_pinned(name, tmp_path_factory):
    got = _outputs_once(tmp_path_factory)
    assert got[name] == PINNED[name], f"{name}: the bytes changed (see the module docstring)"


_CACHE: dict[str, dict[str, str]] = {}


def _outputs_once(tmp_path_factory) -> dict[str, str]:
    if "o" not in _CACHE:
        _CACHE["o"] = outputs(tmp_path_factory.mktemp("pinned"))
    return _CACHE["o"]


def test_export_then_import_gives_the_same_file(tmp_path_factory):
    got = _outputs_once(tmp_path_factory)
    assert got["reimport"] == got["import"] and int(got["blocks"]) >= 2 and set(got) == set(PINNED)
