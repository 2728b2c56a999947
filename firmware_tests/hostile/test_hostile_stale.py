"""Stale results and leftovers (issue 27 item 11).

* A case replaced by one of the same size with its mtime kept (``cp -p``) stayed in explore's cache: a second
  ``explore`` said "explained" while ``replay`` said FAIL. The cache key now includes the inode and the ctime.
* ``explore`` on a case with a damaged ``.npz`` exited 1 (NOT REPRODUCED) where ``replay`` rightly exits 2.
* ``np.str_`` knob values passed the check, then raised ``TypeError`` inside the extension.
* A v1 trace header with ``"name": ["records"]`` exited 3.
* ``trace RECORD --partition-bytes 0`` ran at the default partition size.
(Stale ``.tmp`` files after SIGTERM / SIGHUP: test_hostile_writes.py.)
"""
from __future__ import annotations

import json
import shutil
import struct

import pytest
from hostile_lib import EXAMPLES, assert_clean_error, cli, python

CASE = sorted((EXAMPLES / "cayman").glob("*.json"))[0]


def copy_case(dst):
    shutil.copy(CASE, dst.with_suffix(".json"))
    shutil.copy(CASE.with_suffix(".npz"), dst.with_suffix(".npz"))
    return dst.with_suffix(".json")


STALE = """
import os, sys
import numpy as np
from q7emu.analysis.explore import explore
from q7emu.fileio import read_npz, write_npz
from q7emu.machine.replay import replay
path = sys.argv[1]
npz = path[:-5] + ".npz"
print("first", explore([path], jobs=1).explained)
arrays = read_npz(npz)
st = os.stat(npz)
for k in arrays:
    if k.startswith("exp"):
        arrays[k] = arrays[k] ^ 1                 # every expected byte wrong, the same size
with open(npz, "wb") as f:
    write_npz(f, arrays, compress=False)
os.utime(npz, ns=(st.st_atime_ns, st.st_mtime_ns))   # as cp -p leaves it
assert os.stat(npz).st_size == st.st_size and os.stat(npz).st_mtime_ns == st.st_mtime_ns
print("second", explore([path], jobs=1).explained)
print("replay", replay([path], progress=False)[0].ok)
"""


def test_a_replaced_case_with_its_mtime_kept_is_not_served_from_the_cache(tmp_path):
    path = copy_case(tmp_path / "c")
    from q7emu.fileio import read_npz, write_npz  # an uncompressed .npz of the same arrays: same size later
    arrays = read_npz(path.with_suffix(".npz"))
    with open(path.with_suffix(".npz"), "wb") as f:
        write_npz(f, arrays, compress=False)
    out = python(STALE, str(path))
    assert out.returncode == 0, out.describe()
    assert out.stdout.split() == ["first", "True", "second", "False", "replay", "False"], out.describe()


def test_explore_of_a_damaged_npz_is_bad_input_as_in_replay(tmp_path):
    path = copy_case(tmp_path / "c")
    data = bytearray(path.with_suffix(".npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.with_suffix(".npz").write_bytes(bytes(data))
    rep = cli("replay", str(path))
    exp = cli("explore", str(path))
    assert rep.returncode == 2, rep.describe()
    assert exp.returncode == 2 and "Traceback" not in exp.stderr, exp.describe()
    expj = cli("explore", str(path), "--json")
    assert expj.returncode == 2 and json.loads(expj.stdout)["errors"], expj.describe()


def test_np_str_knob_values_are_plain_strings(tmp_path):
    code = """
import numpy as np, q7emu
from q7emu.machine.cases import load_case, run_case
src = np.array([[0x07, 0x08, 0x00, 0x00]], np.uint8)
a = q7emu.dequantize(src, "e2m1", nibble_order=np.str_("high-first"))
b = q7emu.dequantize(src, "e2m1", nibble_order="high-first")
assert (a == b).all()
case = load_case(__import__("sys").argv[1])
r = run_case(case, knobs={k: np.str_(v) for k, v in case.knobs.items()})
print("ok", r.ok)
"""
    out = python(code, str(CASE))
    assert out.returncode == 0 and out.stdout.split() == ["ok", "True"], out.describe()


def test_a_v1_trace_header_with_a_list_for_a_name(tmp_path):
    head = json.dumps({"format": "q7emu-trace", "version": 1, "arrays": [
        {"name": ["records"], "descr": "|u1", "offset": 0, "count": 0}]}).encode()
    f = tmp_path / "v1.q7t"
    from q7emu.analysis.trace import MAGIC
    f.write_bytes(struct.pack("<8sII", MAGIC, 1, len(head)) + head)
    line = assert_clean_error(cli("trace", "show", str(f)))
    assert "v1.q7t" in line, line


@pytest.mark.parametrize("pb", ["0", "3", "0x40004", "-4"])
def test_trace_record_partition_bytes_out_of_range(tmp_path, pb):
    rec = json.loads(CASE.read_text())["record_hex"]
    line = assert_clean_error(cli("trace", rec, "-o", str(tmp_path / "t.q7t"), "--partition-bytes", pb))
    assert "partition" in line.lower(), line
    assert not (tmp_path / "t.q7t").exists()
