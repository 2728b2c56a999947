"""The suite's signal tests in a run that inherited SIGINT and SIGHUP ignored, as ``pytest &`` in a script (POSIX
ignores SIGINT there) under ``nohup`` (SIGHUP) starts it: each such test restores the defaults in the process it
signals (signal_support.default_dispositions), so they pass there too. Before, ten of them failed in such a run:
the signals they sent did nothing and the commands ran to their end (exit 0)."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_lib import ROOT, env

HERE = Path(__file__).resolve().parent
#: one test of each kind: a Ctrl-C to a CLI run (a child), a SIGHUP to a CLI run, a SIGINT a child sends itself,
#: and the CLI's handlers in this process
TESTS = [f"{HERE / 'test_hostile_workers.py'}::test_ctrl_c_during_sequential_replay",
         f"{HERE / 'test_hostile_pool.py'}::test_a_signal_to_replay_j2_ends_its_workers_and_releases_stdout[SIGHUP]",
         f"{HERE.parent / 'base' / 'test_fileio_readers.py'}::"
         "test_a_ctrl_c_inside_write_npz_is_a_clean_keyboard_interrupt",
         f"{HERE.parent / 'cli' / 'test_cli.py'}::test_a_second_ctrl_c_while_the_command_cleans_up_is_ignored"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc (the SIGHUP test finds the workers)")
def test_the_signal_tests_pass_in_a_run_that_inherited_sigint_and_sighup_ignored():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGHUP)}
    signal.signal(signal.SIGINT, signal.SIG_IGN)            # what the child pytest inherits (an exec keeps SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *TESTS],
                           capture_output=True, text=True, cwd=ROOT, env=env(), timeout=600)
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert r.returncode == 0 and f"{len(TESTS)} passed" in last, r.stdout[-4000:] + r.stderr[-2000:]
