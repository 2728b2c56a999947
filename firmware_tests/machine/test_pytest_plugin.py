"""Cases are pytest items (issue 26 item 1): ``pytest --q7emu-cases DIR`` through the plugin q7emu ships
(q7emu.pytest_plugin, the ``pytest11`` entry point): pass / fail per case with replay's report text, ``-k`` with
and / or / not over the case keywords, ``--lf``, ``-x``, ``--junitxml`` with identities from the file path,
``-n N`` through pytest-xdist; and nothing at all for a pytest run that does not use it.

Each pytest run is a subprocess in a fresh folder (its own rootdir and cache), with a hang timeout.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from q7emu.machine import report
from q7emu.machine.cases import load_case, save_case

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "cases"
HANG = 300


def pytest_run(cwd, *argv):
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("PYTEST_ADDOPTS", None)
    for name in [n for n in e if n.startswith("PYTEST_XDIST_")]:     # this run's own xdist worker, if any
        e.pop(name)
    p = subprocess.run([sys.executable, "-m", "pytest", *map(str, argv)], cwd=cwd,
                       capture_output=True, text=True, timeout=HANG, env=e)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    """A folder (its own pytest rootdir) holding the shipped cases of two generations, one case whose expected
    bytes were changed, and a broken case file."""
    d = tmp_path_factory.mktemp("farm")
    (d / "pytest.ini").write_text("[pytest]\n")
    for gen in ("cayman", "mariana"):
        shutil.copytree(EX / gen, d / "cases" / gen)
    case = load_case(d / "cases" / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1.json")
    case.expected[0][1][4, 0x11] ^= 1
    save_case(case, d / "cases" / "bad" / "mx8")
    (d / "cases" / "bad" / "broken.json").write_text('{"format": "q7emu-case", "version": 1, "generation": 5}')
    return d


def test_the_plugin_is_registered_as_a_pytest11_entry_point():
    eps = importlib.metadata.entry_points(group="pytest11")
    assert any(ep.value == "q7emu.pytest_plugin" for ep in eps if ep.dist and ep.dist.name == "q7emu")


def test_every_case_is_an_item_with_replays_verdict_and_report(farm):
    code, out, err = pytest_run(farm, "--q7emu-cases", "cases", "-q", "-p", "no:cacheprovider")
    assert code == 1, out + err
    # 7 cayman + 9 mariana shipped cases pass, the changed one fails, the broken file errors in set-up
    assert "1 failed, 16 passed, 1 error" in out, out[-2000:]
    # the failure's text is replay's, with the byte explained
    want = report.format_case(*_replayed(farm / "cases" / "bad" / "mx8.json"), 1).splitlines()
    assert want[1].strip() in out and "source byte" in out and "MX group 2 scale byte" in out
    assert "ERROR at setup of q7emu case broken" in out and "CaseError: " in out and "Traceback" not in out


def _replayed(path):
    from q7emu.machine.cases import run_case
    case = load_case(path)
    return run_case(case), case


def test_k_selects_with_and_or_not_over_the_case_keywords(farm):
    code, out, _ = pytest_run(farm, "--q7emu-cases", "cases", "-p", "no:cacheprovider", "--co", "-q",
                              "-k", "nf4 and g8")
    items = [ln for ln in out.splitlines() if "::" in ln]
    assert code == 0 and sorted(items) == [
        "cases/cayman/cayman_7b_proc_4bit_mx_8_nf4.json::cayman_7b_proc_4bit_mx_8_nf4",
        "cases/mariana/mariana_7b_proc_4bit_mx_8_nf4.json::mariana_7b_proc_4bit_mx_8_nf4"]
    code, out, _ = pytest_run(farm, "--q7emu-cases", "cases", "-p", "no:cacheprovider", "--co", "-q",
                              "-k", "mariana and not (e3 or nf4) and g0")
    items = sorted(ln.split("::")[1] for ln in out.splitlines() if "::" in ln)
    assert items == ["mariana_7b_proc_4bit_non_mx_e2m1", "mariana_7b_proc_4bit_non_mx_int4",
                     "mariana_7b_proc_6bit_non_mx_e2m3"]


def test_lf_reruns_only_the_failures_and_x_stops_at_the_first(farm, tmp_path):
    cache = tmp_path / "cache"
    base = ["--q7emu-cases", "cases", "-q", "-o", f"cache_dir={cache}"]
    assert pytest_run(farm, *base)[0] == 1
    code, out, _ = pytest_run(farm, *base, "--lf")
    assert code == 1 and "1 failed, 1 error" in out and "passed" not in out.splitlines()[-1], out[-1500:]
    code, out, _ = pytest_run(farm, "--q7emu-cases", "cases/bad", "cases/cayman", "-q", "-x", "-p", "no:cacheprovider")
    assert code == 1 and "stopping after 1 failures" in out, out[-1500:]


def test_junitxml_identities_are_replays_from_the_path(farm, tmp_path):
    code, _, _ = pytest_run(farm, "--q7emu-cases", "cases/cayman", "-q", "-p", "no:cacheprovider",
                            f"--junitxml={tmp_path / 'p.xml'}")
    assert code == 0
    got = sorted((t.get("classname"), t.get("name")) for t in ET.parse(tmp_path / "p.xml").iter("testcase"))
    want = sorted(report.junit_identity(f"cases/cayman/{p.name}") for p in (farm / "cases" / "cayman").glob("*.json"))
    assert got == want and len(got) == 7


def test_xdist_runs_the_cases_on_two_workers(farm):
    pytest.importorskip("xdist", reason="pytest-xdist (the test extra)")
    code, out, err = pytest_run(farm, "--q7emu-cases", "cases/mariana", "--q7emu-cases", "cases/cayman", "-n", "2",
                                "-p", "no:cacheprovider", "-q")
    assert code == 0 and "16 passed" in out, out[-1500:] + err[-1500:]


def test_knob_backend_and_max_diffs_options(farm):
    code, out, _ = pytest_run(farm, "--q7emu-cases", "cases/cayman", "-q", "-p", "no:cacheprovider",
                              "--q7emu-knob", "mx_layout=scale-last", "--q7emu-backend", "golden", "-k", "mx_8",
                              "--q7emu-max-diffs", "3")
    assert code == 1 and "3 failed" in out and "diff 3 of" in out and "diff 4 of" not in out
    code, _, err = pytest_run(farm, "--q7emu-cases", "cases", "--q7emu-knob", "emax=none")
    assert code == 4 and "--q7emu-knob" in err
    code, _, err = pytest_run(farm, "--q7emu-cases", "nowhere")
    assert code == 4 and "--q7emu-cases nowhere: no such case or folder" in err
    for n in ("1001", "-1"):                    # replay's cap (docs/limits.md §5)
        code, _, err = pytest_run(farm, "--q7emu-cases", "cases", "--q7emu-max-diffs", n)
        assert code == 4 and f"--q7emu-max-diffs {n}: must be in 0..1000" in err, err


COST_PROBE = """
import json, sys
def pytest_sessionfinish(session):
    mods = sorted(m for m in sys.modules if m.split(".")[0] in ("q7emu", "numpy", "ml_dtypes", "distributed"))
    with open("modules.json", "w") as f:
        json.dump({"modules": mods, "items": len(session.items)}, f)
"""


def test_a_pytest_run_without_the_option_costs_nothing(tmp_path):
    """The entry point loads the plugin into every pytest run where q7emu is installed: without --q7emu-cases
    it imports no numpy and no other part of q7emu, and collects nothing (a case file in the folder included)."""
    (tmp_path / "conftest.py").write_text(COST_PROBE)
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    shutil.copy(EX / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1.json", tmp_path / "case.json")
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "no:hypothesispytest", "-p", "no:benchmark"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=HANG, env=e)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout + p.stderr
    got = json.loads((tmp_path / "modules.json").read_text())
    assert got["items"] == 1
    assert set(got["modules"]) <= {"q7emu", "q7emu._version", "q7emu.errors", "q7emu.pytest_plugin"}, got


# ---------------------------------------------------------------------------------------------- issue 41
@pytest.fixture(scope="module")
def odd_names(tmp_path_factory):
    """A folder (its own rootdir) whose cases are named with a byte that is not UTF-8: one passes, one fails."""
    d = tmp_path_factory.mktemp("odd")
    (d / "pytest.ini").write_text("[pytest]\n")
    (d / "cases").mkdir()
    folder = os.fsencode(d / "cases")
    case = load_case(EX / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1.json")
    save_case(case, os.fsdecode(folder + b"/pass\xff"))
    case.expected[0][1][4, 0x11] ^= 1
    save_case(case, os.fsdecode(folder + b"/fail\xfe"))
    return d


@pytest.mark.parametrize("xdist", [False, True])
def test_a_case_named_with_a_byte_that_is_not_utf8_is_escaped_as_replay_writes_it(odd_names, tmp_path, xdist):
    """A non-UTF-8 name lost the whole run: with -n 2 an INTERNALERROR and no test ran (exit 3), with --junitxml a
    traceback at the end and a 38-byte JUnit file. The item identities are escaped as replay's reports write them."""
    if xdist:
        pytest.importorskip("xdist", reason="pytest-xdist (the test extra)")
    junit = tmp_path / "p.xml"
    code, out, err = pytest_run(odd_names, "--q7emu-cases", "cases", "-p", "no:cacheprovider", "-q", "-rA",
                                f"--junitxml={junit}", *(["-n", "2"] if xdist else []))
    assert code == 1 and "1 failed, 1 passed" in out and "INTERNALERROR" not in out + err, out[-2000:] + err[-2000:]
    assert "Traceback" not in err and "cases/fail\\xfe.json::fail\\xfe" in out
    got = sorted((t.get("classname"), t.get("name"), [c.tag for c in t]) for t in ET.parse(junit).iter("testcase"))
    assert got == [("cases.fail\\xfe.json", "fail\\xfe", ["failure"]), ("cases.pass\\xff.json", "pass\\xff", [])]
    assert [report.junit_identity(report.shown(os.fsdecode(b"cases/pass\xff.json")))] == \
        [(report.shown(os.fsdecode(b"cases.pass\xff.json")), report.shown(os.fsdecode(b"pass\xff")))]


FOREIGN_WORKER = """
import os
if os.environ.get("PYTEST_XDIST_WORKER") == "gw1":      # this xdist worker runs another q7emu
    import q7emu._version
    q7emu._version.__version__ = "9.9.9"
"""


def test_an_xdist_worker_of_another_q7emu_runs_no_case(farm, tmp_path):
    """Under xdist each item checks, on the worker that runs it, that the worker is the controller's q7emu: gw1 (made
    another version by a conftest) runs none of its items; each is an error naming it, the summary says how many,
    pytest exits 2 (docs/cli.md §4.4)."""
    pytest.importorskip("xdist", reason="pytest-xdist (the test extra)")
    d = tmp_path / "run"
    shutil.copytree(farm / "cases" / "mariana", d / "cases")
    (d / "pytest.ini").write_text("[pytest]\n")
    (d / "conftest.py").write_text(FOREIGN_WORKER)
    code, out, err = pytest_run(d, "--q7emu-cases", "cases", "-n", "2", "-p", "no:cacheprovider", "-q",
                                "--junitxml", tmp_path / "x.xml")
    errors = sum(ln.startswith("not run: xdist worker gw1 runs q7emu 9.9.9 (this is q7emu ") for ln in out.splitlines())
    assert code == 2 and errors >= 1 and "failed" not in out.splitlines()[-1], out[-2500:] + err[-1500:]
    assert f"q7emu: {errors} case(s) not run: xdist worker gw1 runs q7emu 9.9.9" in out
    assert f"{9 - errors} passed, {errors} errors" in out.splitlines()[-1]
    assert sum(1 for t in ET.parse(tmp_path / "x.xml").iter("error")) == errors
