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

A file name that is not UTF-8 is written with backslash escapes in the item's identity (node id, name, location),
as ``q7emu replay`` writes it in its rows and reports (:func:`q7emu.machine.report.shown`; docs/cli.md §1): pytest,
xdist and ``--junitxml`` carry only text, and one such name lost the whole run. The file is still read under its
real name.

Under pytest-xdist every item checks, on the worker that runs it, that the worker's q7emu is the controller's
(version, build, knob defaults: :func:`q7emu.machine.farm.identity`). On another, the item is not run: it is an
error of its set-up naming the worker and what differs, the terminal summary says how many were not run, and
pytest exits 2 (docs/cli.md §4.4).
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
#: the key of the controller's q7emu identity in an xdist worker's ``workerinput``
_IDENTITY = "q7emu_identity"
#: the user property an item that was not run carries (its value says why)
_NOT_RUN = "q7emu_not_run"
#: pytest's exit status when an xdist worker of another q7emu took items: q7emu's status for a farm that could not
#: run its cases (docs/cli.md §1, §4.4)
_EXIT_NOT_RUN = 2


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

        #: the node ids of the items not run because an xdist worker is another q7emu, and why (controller)
        self.not_run: dict[str, str] = {}

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
    from q7emu.errors import InvalidArgument
    from q7emu.machine.heap import keep_freed_memory

    try:
        keep_freed_memory()               # the cases' large arrays reused from case to case (docs/limits.md §5)
    except InvalidArgument as e:
        raise pytest.UsageError(str(e)) from None
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


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, on the controller: hand every worker this q7emu's identity, which each item checks."""
    if getattr(node.config, _KEY, None) is None:
        return
    from q7emu.machine.farm import identity

    node.workerinput[_IDENTITY] = identity()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count the items an xdist worker of another q7emu did not run (on the controller, from their reports)."""
    why = dict(report.user_properties).get(_NOT_RUN) if report.when == "setup" else None
    if why is None:
        return
    s = getattr(_CONFIG.get("config"), _KEY, None)
    if s is not None:
        s.not_run[report.nodeid] = str(why)


#: the config of the run (pytest_runtest_logreport has no config argument)
_CONFIG: dict[str, pytest.Config] = {}


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Remember the config for :func:`pytest_runtest_logreport`."""
    if getattr(session.config, _KEY, None) is not None:
        _CONFIG["config"] = session.config


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line when items were not run because an xdist worker is another q7emu."""
    s = getattr(config, _KEY, None)
    if s is None or not s.not_run:
        return
    first = next(iter(s.not_run.values()))
    terminalreporter.write_line(f"q7emu: {len(s.not_run)} case(s) not run: {first}", red=True, bold=True)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Exit 2 when an xdist worker of another q7emu took items: its cases were not run (docs/cli.md §4.4)."""
    s = getattr(session.config, _KEY, None)
    if s is not None and s.not_run and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        session.exitstatus = _EXIT_NOT_RUN
    _CONFIG.pop("config", None)


def _shown(text: str) -> str:
    """``text`` as q7emu's reports write it (a name that is not UTF-8 with backslash escapes):
    :func:`q7emu.machine.report.shown`."""
    from q7emu.machine.report import shown

    return shown(text)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A :class:`CaseFile` for a case file under a ``--q7emu-cases`` folder (its identity escaped as replay's
    reports write a name that is not UTF-8)."""
    s = getattr(parent.config, _KEY, None)
    if s is None or file_path.suffix != ".json" or not s.holds(file_path) or not _is_case_file(file_path):
        return None
    node = CaseFile.from_parent(parent, path=file_path)
    if _shown(node.nodeid) != node.nodeid:       # the identity pytest gives it, escaped (made once more with it)
        node = CaseFile.from_parent(parent, path=file_path, name=_shown(node.name), nodeid=_shown(node.nodeid))
    return node


class CaseFile(pytest.File):
    """A case file: one :class:`CaseItem`, named after the file's stem (escaped as replay writes it)."""

    def collect(self) -> Any:
        """The file's one item."""
        yield CaseItem.from_parent(self, name=_shown(self.path.stem))


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

        why = self._not_this_q7emu()
        if why is not None:              # an xdist worker of another q7emu: the case is not run (a set-up error)
            self.user_properties.append((_NOT_RUN, why))
            pytest.fail(f"not run: {why}", pytrace=False)
        got = load_or_result(str(self.path))
        if isinstance(got, CaseResult):  # the file could not be read (pytest: an error in set-up)
            pytest.fail(format_case(got), pytrace=False)
        self.case = got

    def _not_this_q7emu(self) -> str | None:
        """Under pytest-xdist: how this worker's q7emu differs from the controller's, or None (the same; no xdist)."""
        want = getattr(self.config, "workerinput", {}).get(_IDENTITY)
        if want is None:
            return None
        from q7emu.machine.farm import identity, identity_mismatch

        why = identity_mismatch(identity(), want)
        worker = getattr(self.config, "workerinput", {}).get("workerid", "?")
        return None if why is None else f"xdist worker {worker} {why}"

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

    @property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's location of the item: its case file relative to the rootdir, escaped as replay writes a name
        that is not UTF-8 (pytest's own would carry the raw bytes, which ``--junitxml`` and xdist cannot)."""
        path, line, text = super().location
        return _shown(path), line, text
