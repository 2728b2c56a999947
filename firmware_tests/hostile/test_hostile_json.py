"""The JSON pre-check is linear in its input (issue 27 item 4).

The nesting-depth scan that runs before every JSON parse (``q7emu.fileio.json_depth``, used by the case
reader and by the trace reader's JSON Lines / header / footer parsing) skipped strings with
``"(?:[^"\\\\]|\\\\.)*"``: in an unterminated string of escaped quotes the regex rescans to the end from every
quote, so a 32 KB case file took 28 s and 128 KB did not finish in 120 s. Each hostile file here is 1 MiB; the
subprocess timeout is a hang guard (quadratic time would take hours), never a speed assertion.
"""
from __future__ import annotations

import json

import pytest
from hostile_lib import assert_clean_error, assert_no_crash, cli, python

MIB = 1 << 20

#: shapes that defeat a backtracking string skip, each 1 MiB (as expressions: a subprocess builds them)
SHAPES = {
    "escaped-quotes": "b'{\"a\": \"' + b'\\\\\"' * (MIB // 2)",
    "quote-runs": "b'[\"' + b'\\\\\\\\\\\\\"' * (MIB // 4)",
    "many-quotes": "b'\"' * MIB",
    "backslashes": "b'\"' + b'\\\\' * MIB",
    "brackets-in-strings": "b'[\"' + b'[{' * (MIB // 2)",
    "open-brackets": "b'[' * MIB",
}
HOSTILE = {name: eval(expr, {"MIB": MIB}) for name, expr in SHAPES.items()}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_json_depth_is_linear_and_right(name):
    code = f"""
import sys, time
from q7emu.fileio import json_depth
MIB = {MIB}
data = {SHAPES[name]}
t = time.perf_counter()
d = json_depth(data)
ds = json_depth(data.decode("latin-1"))
print(d, ds, time.perf_counter() - t)
"""
    out = python(code, timeout=60)
    assert out.returncode == 0, out.describe()
    depth, depth_str, _seconds = out.stdout.split()
    want = {"escaped-quotes": 1, "quote-runs": 1, "many-quotes": 0, "backslashes": 0,
            "brackets-in-strings": 1, "open-brackets": MIB}[name]
    assert int(depth) == int(depth_str) == want, out.describe()


def test_json_depth_counts_what_json_nests():
    from q7emu.fileio import json_depth
    for text in ['{"a": [1, {"b": "]]]"}]}', '"\\\\"', '["\\"[", [[]]]', "[]", "1", '{"k": "\\u005b"}']:
        want = 0
        depth = 0

        def walk(x, d=0):
            nonlocal want
            if isinstance(x, (list, dict)):
                want = max(want, d + 1)
                for v in (x.values() if isinstance(x, dict) else x):
                    walk(v, d + 1)
        walk(json.loads(text))
        depth = json_depth(text.encode())
        assert depth == want, (text, depth, want)


@pytest.mark.parametrize("name", ["escaped-quotes", "quote-runs", "brackets-in-strings"])
def test_a_hostile_case_file_is_refused_at_once(tmp_path, name):
    (tmp_path / "c.json").write_bytes(HOSTILE[name])
    out = cli("replay", str(tmp_path / "c.json"), timeout=60)
    assert_no_crash(out)                        # a broken case is an ERROR row naming it, exit 2
    assert out.returncode == 2 and "ERROR" in out.stdout and "c.json: not a readable JSON case" in out.stdout, \
        out.describe()


@pytest.mark.parametrize("name", ["escaped-quotes", "quote-runs"])
def test_a_hostile_json_lines_trace_is_refused_at_once(tmp_path, name):
    src = tmp_path / "t.jsonl"
    src.write_bytes(HOSTILE[name] + b"\n")
    out = cli("trace", "import", str(src), "-o", str(tmp_path / "t.q7t"), timeout=60)
    line = assert_clean_error(out)
    assert "t.jsonl" in line
    out = cli("trace", "show", str(src), timeout=60)
    assert_clean_error(out)
