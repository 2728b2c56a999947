"""pytest plugin: replay cases as pytest items, ``pytest --q7emu-cases DIR`` (docs/cli.md §4.4).

Registered through the ``pytest11`` entry point, so pytest loads it wherever q7emu is installed. It costs nothing
to a run that does not use it: this module imports only pytest and the standard library, and every hook returns
at once without ``--q7emu-cases``; q7emu's machinery (numpy, the kernels) is imported when the option is given.

With ``--q7emu-cases DIR`` (repeatable) every case file under DIR (a ``*.json`` whose first 4 KiB name the
``q7emu-case`` format, as ``q7emu replay DIR`` finds them) is one item, ``DIR/.../NAME.json::NAME``. The item
replays the case with the core ``q7emu replay`` uses (:func:`q7emu.machine.replay.replay_one`: load, run, compare
every expected byte) and fails with replay's report text (:func:`q7emu.machine.report.format_case`, the first
``--q7emu-max-diffs`` differing bytes explained). A case file that cannot be read fails the item's set-up
(pytest's error, ``E``), as it is an ERROR of replay. The item's keywords are the case's
(:func:`q7emu.machine.report.case_keywords`: generation, kernel path, format, ``g0`` / ``g8``, opcode, ...), so
pytest's ``-k "nf4 and g8"`` selects as ``q7emu replay -k`` does; ``--lf``, ``-x``, ``--junitxml`` (identities
from the file path) and ``-n N`` (pytest-xdist) work as for any item.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

#: what a case file names in its first bytes (q7emu.machine.cases.CASE_FORMAT; not imported: nothing heavy here)
_MARKER = b"q7emu-case"
#: bytes of a *.json read to tell a case file (q7emu.fileio.SCAN_HEAD_BYTES)
_HEAD = 4096
#: the config attribute holding the settings of an active run
_KEY = "_q7emu_cases"


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``--q7emu-*`` options."""
    g = parser.getgroup("q7emu", "q7emu replay cases as tests (docs/cli.md §4.4)")
    g.addoption("--q7emu-cases", action="append", default=[], metavar="DIR",
                help="collect every q7emu case under DIR (a case file or a folder; repeatable) as a test item")
    g.addoption("--q7emu-knob", action="append", default=[], metavar="NAME=VALUE",
                help="override a model knob in the cases whose kernel has it (as q7emu replay --knob)")
    g.addoption("--q7emu-backend", default="kernel", choices=("kernel", "golden"),
                help="replay on the kernels (default) or the golden models")
    g.addoption("--q7emu-max-diffs", type=int, default=1, metavar="N",
                help="differing bytes explained in a failure's report (0..1000, default 1; 0 = only the summary)")


class _Settings:
    """The settings of a run with ``--q7emu-cases``."""

    def __init__(self, roots: list[Path], knobs: dict[str, str], backend: str, max_diffs: int) -> None:
        self.roots = roots
        self.knobs = knobs
        self.backend = backend
        self.max_diffs = max_diffs

    def holds(self, path: Path) -> bool:
        p = path.resolve()
        return any(p == r or r in p.parents for r in self.roots)


def pytest_configure(config: pytest.Config) -> None:
    """Check the options and make the case folders what pytest collects (with no path given: only them)."""
    dirs = config.getoption("q7emu_cases", default=[]) or []
    if not dirs:
        return
    for d in dirs:
        if not os.path.exists(d):
            raise pytest.UsageError(f"--q7emu-cases {d}: no such case or folder")
    from q7emu.machine.report import MAX_DIFFS

    max_diffs = config.getoption("q7emu_max_diffs")
    if not 0 <= max_diffs <= MAX_DIFFS:
        raise pytest.UsageError(f"--q7emu-max-diffs {max_diffs}: must be in 0..{MAX_DIFFS} differing bytes per "
                                "case (docs/limits.md §5)")
    knobs: dict[str, str] = {}
    for item in config.getoption("q7emu_knob") or []:
        if "=" not in item:
            raise pytest.UsageError(f"--q7emu-knob {item!r}: expected NAME=VALUE")
        k, v = item.split("=", 1)
        knobs[k.strip()] = v.strip()
    if knobs:
        from q7emu.errors import Q7Error
        from q7emu.machine.machine import normalize_machine_knobs
        try:
            normalize_machine_knobs(knobs)
        except Q7Error as e:
            raise pytest.UsageError(f"--q7emu-knob: {e}") from None
    setattr(config, _KEY, _Settings([Path(d).resolve() for d in dirs], knobs,
                                    config.getoption("q7emu_backend"), max_diffs))
    given = getattr(config, "args_source", None) == pytest.Config.ArgsSource.ARGS
    if given:
        config.args.extend(d for d in dirs if d not in config.args)
    else:                                 # no path on the command line: the cases, not testpaths / the cwd
        config.args[:] = list(dirs)


def pytest_report_header(config: pytest.Config) -> str | None:
    """One header line when cases are collected: the q7emu version, backend and knobs."""
    s = getattr(config, _KEY, None)
    if s is None:
        return None
    from q7emu._version import __version__
    return (f"q7emu {__version__}: cases from {', '.join(map(str, config.getoption('q7emu_cases')))} "
            f"(backend {s.backend}{', knobs ' + str(s.knobs) if s.knobs else ''})")


def _is_case_file(path: Path) -> bool:
    if path.suffix != ".json":
        return False
    try:
        with open(path, "rb") as f:       # pytest hands over regular files only
            return _MARKER in f.read(_HEAD)
    except OSError:
        return False


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A :class:`CaseFile` for a case file under a ``--q7emu-cases`` folder."""
    s = getattr(parent.config, _KEY, None)
    if s is None or file_path.suffix != ".json" or not s.holds(file_path) or not _is_case_file(file_path):
        return None
    return CaseFile.from_parent(parent, path=file_path)


class CaseFile(pytest.File):
    """A case file: one :class:`CaseItem`, named after the file's stem."""

    def collect(self) -> Any:
        """The file's one item."""
        yield CaseItem.from_parent(self, name=self.path.stem)


class CaseReport(Exception):
    """A case that did not pass; ``text`` is replay's report of it."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class CaseItem(pytest.Item):
    """One case, replayed as ``q7emu replay`` does (module docstring)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        from q7emu.machine.report import case_keywords

        self.extra_keyword_matches.update(case_keywords(self.path))
        self.case: Any = None

    def _settings(self) -> _Settings:
        settings: _Settings = getattr(self.config, _KEY)      # set by pytest_configure when the option is given
        return settings

    def setup(self) -> None:
        """Read the case; a file that cannot be read is an error of the set-up, with replay's report."""
        from q7emu.machine.cases import CaseResult
        from q7emu.machine.replay import load_or_result
        from q7emu.machine.report import format_case

        got = load_or_result(str(self.path))
        if isinstance(got, CaseResult):  # the file could not be read (pytest: an error in set-up)
            pytest.fail(format_case(got), pytrace=False)
        self.case = got

    def runtest(self) -> None:
        """Replay the case as replay does (:func:`q7emu.machine.replay.replay_loaded`, the second half of
        ``replay_one``: the first ``--q7emu-max-diffs`` differing bytes explained where the case ran, its data
        then dropped); raise :class:`CaseReport` with replay's text when it does not pass."""
        from q7emu.machine.replay import replay_loaded
        from q7emu.machine.report import format_case

        s = self._settings()
        case, self.case = self.case, None
        result = replay_loaded(case, s.knobs or None, s.backend, s.max_diffs)
        del case
        if not result.ok:
            raise CaseReport(format_case(result, None, s.max_diffs))

    def teardown(self) -> None:
        """Drop the case's arrays."""
        self.case = None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """Replay's report text for a case that failed; pytest's own for anything else (a q7emu bug)."""
        if isinstance(excinfo.value, CaseReport):
            return excinfo.value.text
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Where the item is: its case file."""
        return self.path, None, f"q7emu case {self.name}"
