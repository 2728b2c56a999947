"""Reports are input too (issue 41 items 5-8): ``q7emu merge`` checks every field of a ``q7emu-replay`` document
against its schema (docs/cli.md §3.1) before merging -- types, ranges, finite numbers, verdicts consistent with
their counts, the summary and exit status with the cases, one q7emu version unless ``--allow-mixed`` -- the same in
text, ``--json`` and ``--junit`` modes, naming the file and the field; stdout is always strict JSON.

The instances are the issue's; the walk at the end changes every field of a real pair of shard reports to each of
a set of wrong values and holds the rules over all of them.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from case_support import damaged
from cli_support import run

from q7emu._version import __version__
from q7emu.machine import merge

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "cases"


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """The two shard reports of a run with passing cases, a failing one (with its listed bytes and diff map) and
    a broken case file, as documents."""
    d = tmp_path_factory.mktemp("shards")
    cases = d / "cases"
    cases.mkdir()
    for p in sorted((EX / "cayman").glob("*mx_8*")):
        (cases / p.name).write_bytes(p.read_bytes())
    damaged(cases, EX / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1.json", [(0, 4, 0x11), (0, 5, 0x12)], "bad")
    (cases / "broken.json").write_text('{"format": "q7emu-case", "version": 1, "generation": 5}')
    import contextlib
    import io

    from q7emu.cli.main import main
    docs = []
    for i in (1, 2):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["replay", str(cases), "--json", "--max-diffs", "2", "--shard", f"{i}/2"])
        docs.append(json.loads(out.getvalue()))
    assert sorted(c["verdict"] for doc in docs for c in doc["cases"]) == ["ERROR", "FAIL", "PASS", "PASS", "PASS"]
    return docs


def write(tmp_path, docs, text=None):
    paths = []
    for i, doc in enumerate(docs):
        p = tmp_path / f"s{i + 1}.json"
        p.write_text(text if text is not None and i == 0 else json.dumps(doc))
        paths.append(p)
    return paths


def strict(text):
    def refuse(name):
        raise AssertionError(f"{name} on stdout")
    return json.loads(text, parse_constant=refuse)


def modes(capsys, tmp_path, paths, *extra):
    """(exit status, stderr) of merge in text, --json and --junit modes; --json's stdout is strict JSON."""
    got = []
    for mode in ([], ["--json"], ["--junit", str(tmp_path / "m.xml")]):
        code, out, err = run(capsys, "merge", *paths, *mode, *extra)
        assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err
        if mode == ["--json"]:
            doc = strict(out)
            assert doc["format"] == ("q7emu-error" if err.strip() else "q7emu-replay"), (doc, err)
        got.append((code, err.strip()))
    assert len(set(got)) == 1, got            # the same verdict in every mode
    return got[0]


def find_case(doc, verdict):
    return next(c for c in doc["cases"] if c["verdict"] == verdict)


def owner(docs, verdict):
    return next(d for d in docs if any(c["verdict"] == verdict for c in d["cases"]))


def test_the_shards_merge(capsys, tmp_path, shards):
    code, err = modes(capsys, tmp_path, write(tmp_path, shards))
    assert code == 2 and err == ""               # the broken case file: 2 as replay gives it


@pytest.mark.parametrize("change, words", [
    (lambda d: find_case(d, "PASS").__setitem__("bytes_compared", [1]), "].bytes_compared: list is not an integer "
                                                                        ">= 0"),
    (lambda d: d.__setitem__("summary", [1]), "summary: list is not an object"),
    (lambda d: find_case(d, "PASS")["regions"][0].__setitem__("bytes_differing", "12a"),
     "regions[0].bytes_differing: '12a' is not an integer in 0.."),
    (lambda d: find_case(d, "PASS")["regions"][0].__setitem__("count", "2"), "regions[0].count: '2' is not an "
                                                                             "integer in 0..")])
def test_a_type_confused_report_is_one_line_and_exit_2_in_every_mode(capsys, tmp_path, shards, change, words):
    """Before: exit 3 (``bytes_compared: [1]``, ``summary: [1]``, a region with string counts), and --json took with
    exit 1 what text mode refused with exit 2, naming neither file nor field (``invalid literal for int() with base
    10: '12a'``)."""
    docs = copy.deepcopy(shards)
    change(docs[0] if any(c["verdict"] == "PASS" for c in docs[0]["cases"]) else docs[1])
    code, err = modes(capsys, tmp_path, write(tmp_path, docs))
    assert code == 2 and err.startswith("q7emu: error: ") and ".json: " in err and words in err, err
    assert "(docs/cli.md §3.1)" in err


def test_a_number_too_large_for_a_double_is_refused_not_printed_as_infinity(capsys, tmp_path, shards):
    """``1e999`` was read as inf and ``merge --json`` printed ``Infinity``, which q7emu's own reader refuses."""
    text = json.dumps(shards[0]).replace('"seconds": ', '"seconds": 1e999, "x": ', 1)
    code, err = modes(capsys, tmp_path, write(tmp_path, shards, text))
    assert code == 2 and "s1.json: not a readable JSON report (not valid JSON: the number 1e999 is too large for " \
                         "a double)" in err


def test_a_pass_with_differing_bytes_and_an_error_is_refused(capsys, tmp_path, shards):
    docs = copy.deepcopy(shards)
    doc = owner(docs, "PASS")
    case = find_case(doc, "PASS")
    case["error"] = "boom"
    case["regions"][0]["bytes_differing"] = 1
    case["regions"][0]["partitions"] = [{"partition": case["regions"][0]["partition"], "bytes_differing": 1}]
    case["bytes_differing"] = 1
    doc["summary"]["bytes_differing"] += 1
    code, err = modes(capsys, tmp_path, write(tmp_path, docs))
    assert code == 2 and ".verdict: 'PASS' contradicts its counts (1 bytes differing, error 'boom'" in err, err
    docs = copy.deepcopy(shards)                  # a summary that does not add up: refused too
    owner(docs, "FAIL")["summary"]["failed"] = 0
    code, err = modes(capsys, tmp_path, write(tmp_path, docs))
    assert code == 2 and "summary.failed: 0 does not match the cases (1)" in err, err
    docs = copy.deepcopy(shards)                  # an exit status that is not the cases'
    owner(docs, "FAIL")["exit_code"] = 0
    code, err = modes(capsys, tmp_path, write(tmp_path, docs))
    assert code == 2 and "exit_code: 0 does not match the cases' verdicts" in err, err


def test_a_report_of_another_version_needs_allow_mixed(capsys, tmp_path, shards):
    docs = copy.deepcopy(shards)
    docs[1]["q7emu_version"] = "9.9.9"
    paths = write(tmp_path, docs)
    code, err = modes(capsys, tmp_path, paths)
    assert code == 2 and f"s2.json was made by q7emu 9.9.9, this is q7emu {__version__}" in err
    assert "--allow-mixed" in err
    code, err = modes(capsys, tmp_path, paths, "--allow-mixed")
    assert code == 2 and err == ""
    code, out, _ = run(capsys, "merge", *paths, "--allow-mixed")
    assert f"note: merged reports of q7emu {__version__}, 9.9.9 (--allow-mixed)" in out
    code, out, _ = run(capsys, "merge", *paths, "--allow-mixed", "--json")
    assert [s["q7emu_version"] for s in json.loads(out)["shards"]] == [__version__, "9.9.9"]


def test_shards_of_different_selections_or_sizes_are_not_one_run(capsys, tmp_path, shards):
    docs = copy.deepcopy(shards)
    docs[1]["select"] = ["nf4"]
    code, err = modes(capsys, tmp_path, write(tmp_path, docs))
    assert code == 2 and "s2.json ran with select ['nf4'], " in err and "s1.json with []: not shards of one run" in err
    docs = copy.deepcopy(shards)
    for d in docs:
        d["shard"]["cases_selected"] = 9
    code, err = modes(capsys, tmp_path, write(tmp_path, docs))
    assert code == 2 and "the shards hold 5 cases, but their run selected 9" in err


# ---------------------------------------------------------------------------------------------- every field
WRONG = [None, True, -1, 2 ** 70, 0.5, "12a", "", [], [1], {}, {"a": 1}, "\udcff"]


def fields(obj, path=()):
    """Every (path, value) of a JSON document, containers included."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from fields(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from fields(v, (*path, i))


def replaced(doc, path, value):
    out = copy.deepcopy(doc)
    if not path:
        return value
    o = out
    for k in path[:-1]:
        o = o[k]
    o[path[-1]] = value
    return out


def test_every_field_of_a_report_changed_to_a_wrong_value(capsys, tmp_path, shards):
    """Each field of the shard holding the failing case, changed to each of WRONG: never exit 3, a traceback or
    more than one line; text, --json and --junit agree; what merge accepts is itself a report that passes the
    checks (consistent counts and verdicts). ``tries`` is the number of merges run in the three modes."""
    target = 0 if any(c["verdict"] == "FAIL" for c in shards[0]["cases"]) else 1
    tries = accepted = 0
    for n, (path, _) in enumerate(fields(shards[target])):
        if path[:1] in (("format",), ("version",)) or not path:
            continue
        for value in WRONG[n % 2::2]:            # half of them per field, the other half at the next one
            docs = copy.deepcopy(shards)
            docs[target] = replaced(docs[target], path, value)
            paths = write(tmp_path, docs)
            code, err = modes(capsys, tmp_path, paths)
            tries += 3
            assert code in (0, 1, 2), (path, value, err)
            if err == "":
                accepted += 1
                code, out, _ = run(capsys, "merge", *paths, "--json")
                merge.check_report("merged", strict(out))
    assert tries > 1500 and accepted < tries // 3
