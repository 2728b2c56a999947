"""Names that are not UTF-8, everywhere (issue 41's class of item 4): every command that prints a file name or a case
name writes it as ``replay`` does, a byte that is not UTF-8 as ``\\xff`` (docs/cli.md §1): in rows, notes, one-line
errors, ``--json`` documents (strict JSON whose strings are valid Unicode) and JUnit files; under a UTF-8 locale and
under the C locale (whose ``surrogateescape`` streams wrote the raw bytes). A case whose JSON name holds a lone
surrogate (``"\\ud800"``) made ``replay --json`` print a q7emu-error after running every case, and ``explore`` stop
mid-report.

Each command runs in a subprocess; its stdout and stderr are read as bytes and must be UTF-8.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from hostile_lib import EXAMPLES, HANG, env

SEED = EXAMPLES / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1"


@pytest.fixture(scope="module")
def odd(tmp_path_factory):
    """A folder ``dir\\xff`` holding a case ``case\\xfe`` (bytes that are not UTF-8) and a folder ``sur`` holding a
    case whose JSON name is a lone surrogate; the shard reports of the first for merge."""
    root = tmp_path_factory.mktemp("names")
    d = os.fsencode(root) + b"/dir\xff"
    os.mkdir(d)
    for ext in (".json", ".npz"):
        shutil.copy(str(SEED) + ext, os.fsdecode(d + b"/case\xfe" + ext.encode()))
    (root / "sur").mkdir()
    meta = json.loads(SEED.with_suffix(".json").read_text())
    (root / "sur" / "c.json").write_text(json.dumps(dict(meta, name="x\ud800y")))
    shutil.copy(SEED.with_suffix(".npz"), root / "sur" / "c.npz")
    return root, os.fsdecode(d), os.fsdecode(d + b"/case\xfe.json")


def q7emu(args, locale, cwd):
    e = env()
    e["LC_ALL"] = e["LANG"] = locale
    e.pop("PYTHONIOENCODING", None)
    e.pop("PYTHONUTF8", None)
    p = subprocess.run([sys.executable, "-m", "q7emu", *args], capture_output=True, timeout=HANG, env=e, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def commands(d, case):
    return [
        ["replay", d], ["replay", d, "--json"], ["replay", d, "--junit", f"{d}/r.xml"],
        ["replay", f"{d}/missing"], ["replay", f"{d}/missing", "--json"],
        ["explore", d, "--knobs", "nibble_order"], ["explore", d, "--knobs", "nibble_order", "--json"],
        ["trace", case, "-o", f"{d}/t.q7t"], ["trace", case, "-o", f"{d}/t.q7t", "--json"],
        ["trace", "show", f"{d}/t.q7t", "--json", "--op", "sav2nx8_xp"], ["profile", case, "--json"],
        ["merge", case], ["merge", case, "--json"], ["decode", case],
        ["replay", "sur", "--json"], ["explore", "sur", "--knobs", "nibble_order"],
        ["explore", "sur", "--knobs", "nibble_order", "--json"]]


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_every_command_writes_such_names_as_replay_does(odd, locale):
    root, d, case = odd
    tries = 0
    for args in commands(d, case):
        code, out, err = q7emu(args, locale, root)
        tries += 1
        text_out, text_err = out.decode("utf-8"), err.decode("utf-8")         # UTF-8, whatever the locale
        assert code in (0, 1, 2) and "Traceback" not in text_err, (args, code, text_err)
        assert "\\udc" not in text_out + text_err and "\\ud800" not in text_out.replace("\\\\ud800", ""), \
            (args, text_out[-500:], text_err)
        if "--json" in args:
            doc = json.loads(text_out)
            json.dumps(doc, ensure_ascii=False).encode("utf-8")                # no lone surrogate in any string
        if code == 2:
            assert len(text_err.strip().splitlines()) == 1, (args, text_err)
        shown = (text_out + text_err).replace("\\\\", "\\")         # a JSON string's backslash, as text
        names_it = args[0] not in ("decode", "explore") or "--json" in args      # explore's text names no case
        if d.split("/")[-1] in " ".join(args) and names_it:
            assert "dir\\xff" in shown or "case\\xfe" in shown, (args, shown[-800:])
    junit = os.fsencode(d) + b"/r.xml"
    assert b'name="case\\xfe"' in open(junit, "rb").read()
    assert tries == len(commands(d, case))
