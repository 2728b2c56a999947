"""Farms (issue 26 item 2): replay and explore on a Dask ``distributed`` cluster (q7emu.machine.farm), for real:
a LocalCluster of two worker processes, and ``dask scheduler`` + two ``dask worker`` processes on 127.0.0.1
with one of them killed mid-run; ``--shard I/N`` and ``q7emu merge``.

Every process runs with a hang timeout (never a speed assertion); "mid-run" is an event (the progress bar shows
a finished case while the run goes on), never a fixed sleep. Every address is on 127.0.0.1.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import progress_support
import pytest
from progress_support import finish, wait_for_progress
from signal_support import default_dispositions

distributed = pytest.importorskip("distributed", reason="the dask extra (pip install '.[dask]')")
import dask  # noqa: E402

from q7emu.cli.main import main  # noqa: E402
from q7emu.errors import InvalidArgument  # noqa: E402
from q7emu.machine import farm, report  # noqa: E402
from q7emu.machine.cases import load_case, save_case  # noqa: E402
from q7emu.machine.replay import replay  # noqa: E402
from q7emu.machine.workers import TaskFailure  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "cases"
HANG = 180
LINUX = sys.platform.startswith("linux")


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e["DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES"] = "0"       # with q7emu's one retry: -j's rule
    e["DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT"] = "5s"           # a dead worker's results: docs/cli.md §4.2
    e.pop("PYTHONFAULTHANDLER", None)
    return e


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes, one thread each; the scheduler ends a task whose worker died in KilledWorker at once
    (allowed-failures 0), q7emu runs it once more (docs/cli.md §4.2)."""
    with dask.config.set({"distributed.scheduler.allowed-failures": 0, "distributed.comm.timeouts.connect": "5s"}):
        c = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                                     host="127.0.0.1", silence_logs=logging.CRITICAL)
        yield c
        c.close()


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    case = load_case(EX / "cayman" / "cayman_7b_proc_4bit_mx_8_e2m1.json")
    case.expected[0][1][4, 0x11] ^= 1
    save_case(case, d / "mx8")
    (d / "broken.json").write_text('{"format": "q7emu-case", "version": 1, "generation": 5}')
    return d


def summary(results):
    return [(r.path, report.verdict(r), r.nbytes, r.error, None if r.mismatch is None else vars(r.mismatch),
             [(d.differing, d.partitions) for d in r.regions]) for r in results]


def test_replay_on_the_cluster_reports_what_replay_here_does(cluster, damaged):
    here = replay([EX, damaged], progress=False)
    there = replay([EX, damaged], progress=False, dask=cluster.scheduler_address)
    assert summary(there) == summary(here)
    assert [report.verdict(r) for r in there].count("PASS") == 34 and report.exit_status(there) == 2


def test_explore_on_the_cluster_finds_what_explore_here_does(cluster):
    from q7emu.analysis.explore import explore
    cases = [EX / "cayman", EX / "mariana" / "mariana_e3_quantize_mx_e4m3.json"]
    here = explore(cases, knobs=["nibble_order", "mx_layout", "emax"], progress=False).to_json()
    there = explore(cases, knobs=["nibble_order", "mx_layout", "emax"], progress=False,
                    dask=cluster.scheduler_address).to_json()
    for doc in (here, there):
        doc.pop("seconds")
    assert there == here and here["explained"]


def times_ten(k):
    return k * 10


def kill_my_worker_on(arg):
    """SIGKILL this worker process when running task ``arg[0] == 3``: always, or once (a marker file)."""
    k, marker = arg
    if k == 3 and (marker is None or not os.path.exists(marker)):
        if marker is not None:
            Path(marker).write_text("x")
        os.kill(os.getpid(), signal.SIGKILL)
    return k * 10


def raise_on_two(k):
    if k == 2:
        raise ValueError("bad task\nsecond line")
    return k


@pytest.fixture(scope="module")
def client(cluster):
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])      # the workers cannot import this test file
    c = farm.connect(cluster.scheduler_address)
    yield c
    farm.disconnect(c)


def collect(client, fn, tasks, chunk=None):
    got = {}
    farm.run_tasks_dask(fn, tasks, client, lambda i, v: got.__setitem__(i, v), chunk=chunk)
    return got


@pytest.mark.parametrize("chunk", [None, 1, 3, 16])
def test_results_are_the_functions(client, chunk):
    assert collect(client, times_ten, list(range(20)), chunk) == {i: 10 * i for i in range(20)}
    assert farm.chunk_size(2000, 2) == farm.MAX_CHUNK and farm.chunk_size(16, 2) == 1 and farm.chunk_size(0, 0) == 1


def test_a_task_whose_worker_dies_once_is_run_again(client, tmp_path):
    marker = str(tmp_path / "died")
    got = collect(client, kill_my_worker_on, [(k, marker) for k in range(16)])
    assert os.path.exists(marker) and got == {k: 10 * k for k in range(16)}


@pytest.mark.parametrize("chunk", [1, 4])
def test_a_task_whose_worker_always_dies_fails_alone_after_one_retry(client, chunk):
    """Dask counts a worker's death against every task it held, also the ones queued behind the one it ran, and
    a chunk dies with its killer; q7emu runs each task of a killed chunk once more, alone: only the task that
    kills its worker fails."""
    got = collect(client, kill_my_worker_on, [(k, None) for k in range(16)], chunk)
    assert isinstance(got[3], TaskFailure) and got[3].reason == "Dask worker process died while running it (2 attempts)"
    assert {k: v for k, v in got.items() if k != 3} == {k: 10 * k for k in range(16) if k != 3}


def test_an_exception_fails_only_its_task(client):
    got = collect(client, raise_on_two, list(range(5)), chunk=5)
    assert got[2] == TaskFailure("ValueError: bad task") and all(got[k] == k for k in (0, 1, 3, 4))


def test_a_scheduler_that_is_not_there_is_one_line(capsys, monkeypatch):
    with pytest.raises(InvalidArgument, match="cannot reach the Dask scheduler"):
        farm.connect("tcp://127.0.0.1:9", timeout=1)
    monkeypatch.setenv("Q7EMU_DASK_CONNECT_SECONDS", "1")
    assert main(["replay", str(EX / "cayman"), "--dask", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("q7emu: error: --dask=") and "cannot reach" in err[0]
    monkeypatch.setenv("Q7EMU_DASK_CONNECT_SECONDS", "soon")
    assert main(["replay", str(EX / "cayman"), "--dask", "tcp://127.0.0.1:9"]) == 2
    assert "Q7EMU_DASK_CONNECT_SECONDS" in capsys.readouterr().err


def test_the_connect_timeout_is_10_s_at_most_and_the_user_sets_it(monkeypatch):
    monkeypatch.delenv("Q7EMU_DASK_CONNECT_SECONDS", raising=False)
    assert farm.connect_seconds() == farm.CONNECT_SECONDS <= 10
    monkeypatch.setenv("Q7EMU_DASK_CONNECT_SECONDS", "2.5")
    assert farm.connect_seconds() == 2.5


@contextlib.contextmanager
def tcp_service(banner: bytes):
    """A local TCP service that is not a Dask scheduler: it accepts every connection, sends ``banner`` (b"": it
    stays silent, as a web server waiting for a request) and holds the connection open."""
    srv = socket.create_server(("127.0.0.1", 0))
    held = []

    def serve():
        with contextlib.suppress(OSError):
            while True:
                conn, _ = srv.accept()
                held.append(conn)
                if banner:
                    conn.sendall(banner)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    finally:
        srv.close()
        for conn in held:
            conn.close()


@pytest.mark.parametrize("what,banner,words", [
    ("nothing listens", None, "within 1 s"),
    ("a silent service", b"", "gives no Dask handshake"),            # before: q7emu waited for ever
    ("an SSH server", b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", "not in Dask's protocol")])
@pytest.mark.parametrize("command", ["replay", "explore"])
def test_a_wrong_address_is_one_line_within_the_timeout_given(command, what, banner, words):
    """``--dask-timeout 1`` bounds every way a wrong address fails (issue 40): exit 2, one line, no traceback."""
    with contextlib.ExitStack() as stack:
        address = "tcp://127.0.0.1:9" if banner is None else stack.enter_context(tcp_service(banner))
        r = subprocess.run([sys.executable, "-m", "q7emu", command, str(EX / "cayman"), "--dask", address,
                            "--dask-timeout", "1"], capture_output=True, text=True, cwd=ROOT, timeout=120,
                           env={k: v for k, v in os.environ.items() if k != "Q7EMU_DASK_CONNECT_SECONDS"})
    assert r.returncode == 2 and r.stderr.count("\n") == 1, (what, r.stderr)
    assert r.stderr.startswith(f"q7emu: error: --dask='{address}': cannot reach") and words in r.stderr, r.stderr
    assert ("--dask-timeout SECONDS" in r.stderr) == ("within 1 s" in r.stderr), r.stderr


def test_dask_timeout_needs_dask_and_a_number(capsys):
    assert main(["replay", str(EX / "cayman"), "--dask-timeout", "5"]) == 2
    assert "--dask-timeout applies to --dask" in capsys.readouterr().err
    for bad in ("0", "-1", "soon"):
        assert main(["replay", str(EX / "cayman"), "--dask", "tcp://127.0.0.1:9", "--dask-timeout", bad]) == 2
        assert "not a number of seconds > 0" in capsys.readouterr().err


def test_dask_and_jobs_together_is_a_usage_error(capsys, cluster):
    assert main(["replay", str(EX), "-j", "2", "--dask", cluster.scheduler_address]) == 2
    assert "--dask and -j" in capsys.readouterr().err


def test_cli_json_and_junit_are_as_without_dask(capsys, cluster, damaged, tmp_path):
    def doc(*extra):
        code = main(["replay", str(EX / "mariana"), str(damaged), "--json", "--max-diffs", "2",
                     "--junit", str(tmp_path / f"r{len(extra)}.xml"), *extra])
        d = json.loads(capsys.readouterr().out)
        d["summary"].pop("seconds")
        for c in d["cases"]:
            c.pop("seconds")
        return code, {k: v for k, v in d.items() if k not in ("dask", "junit")}
    code_here, here = doc()
    code_there, there = doc("--dask", cluster.scheduler_address)
    assert (code_there, there) == (code_here, here) and code_here == 2
    # the failing case's detail, computed on the worker that ran it (the client reads no case)
    (bad,) = [c for c in there["cases"] if c["verdict"] == "FAIL"]
    assert len(bad["diffs"]) == 1 and bad["diffs"][0]["source"]["bytes"] and bad["diff_map"]["bytes_differing"] == 1

    def cases(path):
        import xml.etree.ElementTree as ET
        return [(t.get("classname"), t.get("name"), [c.tag for c in t]) for t in ET.parse(path).iter("testcase")]
    assert cases(tmp_path / "r0.xml") == cases(tmp_path / "r2.xml")


# ---------------------------------------------------------------------------------------------- processes
@pytest.fixture(scope="module")
def slow_cases(tmp_path_factory):
    """40 copies of a case that takes a noticeable time to replay: a run long enough to be interrupted or to lose
    a worker while cases are still queued."""
    return progress_support.slow_cases(tmp_path_factory.mktemp("slow"), 40)


def start(*argv, **kw):
    with default_dispositions():            # the Ctrl-C the tests send is not ignored in the child
        return subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env(), start_new_session=True, **kw)


@pytest.mark.skipif(not LINUX, reason="process groups and select on pipes")
def test_ctrl_c_cancels_the_futures_and_reports_what_finished(cluster, slow_cases):
    p = start("-m", "q7emu", "replay", str(slow_cases), "--dask", cluster.scheduler_address, "--progress")
    wait_for_progress(p)
    os.killpg(p.pid, signal.SIGINT)
    code, out, err = finish(p)
    assert code == 130 and "Traceback" not in err, (code, out[-800:], err[-2000:])
    line = next(ln for ln in out.splitlines() if ln.startswith("interrupted: "))
    done = int(line.split()[1])
    assert 0 < done < 40 and out.count(" PASS ") == done, out[-1500:]
    with distributed.Client(cluster.scheduler_address, timeout=30) as c:     # the futures were cancelled
        for _ in range(600):
            left = c.run_on_scheduler(lambda dask_scheduler: sum(str(k).startswith("q7emu-")
                                                                 for k in dask_scheduler.tasks))
            if not left:
                break
            time.sleep(0.05)                        # polling the scheduler: there is no event to wait on
        assert left == 0


@pytest.mark.skipif(not LINUX, reason="process groups and select on pipes")
def test_dask_scheduler_and_two_workers_a_worker_killed_mid_run(tmp_path, slow_cases):
    """``dask scheduler`` + two ``dask worker`` processes on 127.0.0.1 replay the shipped cases and 40 slow ones;
    one worker (nanny and worker process) is SIGKILLed while cases are still queued: every case still reports,
    and passes."""
    sched_file = tmp_path / "scheduler.json"
    procs = [start("-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                   "--scheduler-file", str(sched_file), cwd=tmp_path)]
    try:
        deadline = time.monotonic() + HANG
        while not sched_file.exists() and time.monotonic() < deadline:
            assert procs[0].poll() is None, procs[0].communicate()
            time.sleep(0.05)                        # waiting for the scheduler file (written once it listens)
        for i in range(2):
            procs.append(start("-m", "dask", "worker", "--scheduler-file", str(sched_file), "--nthreads", "1",
                               "--no-dashboard", "--name", f"w{i}", "--host", "127.0.0.1", cwd=tmp_path))
        with distributed.Client(scheduler_file=str(sched_file), timeout=60) as c:
            c.wait_for_workers(2, timeout=HANG)
            address = c.scheduler.address
        total = 34 + 40
        p = start("-m", "q7emu", "replay", str(EX), str(slow_cases), "--dask", address, "--progress",
                  "--junit", str(tmp_path / "r.xml"))
        wait_for_progress(p, done=3)
        assert p.poll() is None                     # still running: the kill lands mid-run
        os.killpg(procs[1].pid, signal.SIGKILL)     # worker w0: its nanny and its worker process
        code, out, err = finish(p)
        assert "Traceback" not in err, err[-3000:]
        assert code == 0 and f"{total} cases: {total} passed, 0 failed" in out, (code, out[-1500:], err[-2000:])
        assert out.count(" PASS ") == total
        import xml.etree.ElementTree as ET
        assert len(list(ET.parse(tmp_path / "r.xml").iter("testcase"))) == total
    finally:
        for q in procs:
            if q.poll() is None:
                os.killpg(q.pid, signal.SIGKILL)
            q.communicate()


# ---------------------------------------------------------------------------------------------- shards
def test_shards_split_deterministically_and_evenly():
    from q7emu.machine.replay import parse_shard, shard
    files = [f"c{i:03d}.json" for i in range(10)]
    parts = [shard(files, i, 3) for i in (1, 2, 3)]
    assert sorted(sum(parts, [])) == files and [len(p) for p in parts] == [4, 3, 3]
    assert parts[0] == ["c000.json", "c003.json", "c006.json", "c009.json"]
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "a/b", "3", "1/2/3"):
        with pytest.raises(InvalidArgument, match="--shard"):
            parse_shard(bad)


def test_shard_reports_merge_into_the_whole_run(capsys, tmp_path, damaged):
    def run_json(*argv):
        code = main(["replay", str(EX), str(damaged), "--json", "--max-diffs", "1", *argv])
        return code, json.loads(capsys.readouterr().out)
    code_all, whole = run_json()
    files = []
    for i in (1, 2, 3):
        code, doc = run_json("--shard", f"{i}/3")
        assert doc["shard"] == {"index": i, "count": 3, "cases_selected": 36}
        files.append(tmp_path / f"s{i}.json")
        files[-1].write_text(json.dumps(doc))
    code = main(["merge", *map(str, reversed(files)), "--json", "-o", str(tmp_path / "m.json"),
                 "--junit", str(tmp_path / "m.xml")])
    merged = json.loads(capsys.readouterr().out)
    assert code == code_all == 2 and merged["exit_code"] == 2
    assert {k: v for k, v in merged["summary"].items() if k != "seconds"} == \
        {k: v for k, v in whole["summary"].items() if k != "seconds"}
    assert sorted(c["path"] for c in merged["cases"]) == sorted(c["path"] for c in whole["cases"])
    assert [s["shard"]["index"] for s in merged["shards"]] == [1, 2, 3]
    assert json.loads((tmp_path / "m.json").read_text()) == merged
    assert (tmp_path / "m.xml").read_text().count("<testcase") == 36
    assert main(["merge", *map(str, files)]) == 2
    assert "36 cases from 3 report(s): 34 passed, 1 failed, 1 could not be replayed" in capsys.readouterr().out


@pytest.mark.parametrize("problem", ["missing", "twice", "backend", "not-a-report", "bad-shard", "huge-count"])
def test_merge_refuses_reports_that_are_not_one_run(capsys, tmp_path, problem):
    docs = []
    for i in (1, 2):
        assert main(["replay", str(EX / "cayman"), "--json", "--shard", f"{i}/2",
                     *(["--backend", "golden"] if problem == "backend" and i == 2 else [])]) == 0
        docs.append(tmp_path / f"s{i}.json")
        docs[-1].write_text(capsys.readouterr().out)
    if problem == "missing":
        argv, words = [docs[0]], "shard(s) 2/2 missing"
    elif problem == "twice":
        argv, words = [docs[0], docs[0]], "are both shard 1/2"
    elif problem == "backend":
        argv, words = docs, "ran with backend 'golden'"
    elif problem in ("bad-shard", "huge-count"):      # a hand-edited report: refused in one line, at once
        for p in docs:
            d = json.loads(p.read_text())
            d["shard"]["count"] = None if problem == "bad-shard" else 10**15
            p.write_text(json.dumps(d))
        argv = docs
        words = ("s1.json: shard 1/None is not I/N with 1 <= I <= N" if problem == "bad-shard" else
                 "shard(s) 3/1000000000000000, 4/1000000000000000, 5/1000000000000000, 6/1000000000000000, "
                 "7/1000000000000000, 8/1000000000000000, 9/1000000000000000, 10/1000000000000000, ... missing")
    else:
        (tmp_path / "x.json").write_text("{}")
        argv, words = [docs[0], tmp_path / "x.json"], "not a q7emu-replay document"
    assert main(["merge", *map(str, argv)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


# ---------------------------------------------------------------------------------------------- membership, loss
# issue 41 items 1 and 3: a worker of another q7emu that joins after connect, and a scheduler lost mid-run
FOREIGN = """
# a Dask worker preload: this worker's q7emu is another version whose knob default differs
import q7emu._version
q7emu._version.__version__ = "9.9.9"
from q7emu.machine import machine
machine.MACHINE_KNOBS["emax"] = ("alt", "ocp")       # (Dask may run a preload more than once)
"""
FOREIGN_KNOB = """
# a Dask worker preload: the same version, another knob default (a q7emu changed in place)
from q7emu.machine import machine
machine.MACHINE_KNOBS["emax"] = ("alt", "ocp")       # (Dask may run a preload more than once)
"""

#: a Dask worker preload: the worker runs its first Dask task (a chunk of cases), then holds every later one until it
#: is killed, so that the cases left all land on a worker that joins later, however fast a case replays
HOLD_AFTER_FIRST = """
import threading
from q7emu.machine import farm
if not getattr(farm, "_held", False):          # (Dask may run a preload more than once)
    farm._held = True
    _apply, _lock, _calls = farm._apply_chunk, threading.Lock(), [0]

    def _apply_chunk(*args, **kwargs):
        with _lock:
            _calls[0] += 1
            first = _calls[0] == 1
        if not first:
            threading.Event().wait()           # until the test kills this worker
        return _apply(*args, **kwargs)

    farm._apply_chunk = _apply_chunk
"""


class DaskProcesses:
    """``dask scheduler`` and ``dask worker`` processes on 127.0.0.1 (killed at the end)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.sched_file = folder / "scheduler.json"
        self.scheduler = start("-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(self.sched_file), cwd=folder)
        self.workers: list[subprocess.Popen] = []
        deadline = time.monotonic() + HANG
        while not self.sched_file.exists() and time.monotonic() < deadline:
            assert self.scheduler.poll() is None, self.scheduler.communicate()
            time.sleep(0.05)                        # waiting for the scheduler file (written once it listens)
        with distributed.Client(scheduler_file=str(self.sched_file), timeout=60) as c:
            self.address = c.scheduler.address

    def worker(self, *extra: str) -> subprocess.Popen:
        w = start("-m", "dask", "worker", "--scheduler-file", str(self.sched_file), "--nthreads", "1",
                  "--no-dashboard", "--host", "127.0.0.1", *extra, cwd=self.folder)
        self.workers.append(w)
        return w

    def wait_for_workers(self, n: int) -> None:
        with distributed.Client(self.address, timeout=60) as c:
            c.wait_for_workers(n, timeout=HANG)

    def close(self) -> None:
        for q in [self.scheduler, *self.workers]:
            if q.poll() is None:
                os.killpg(q.pid, signal.SIGKILL)
            q.communicate()


@pytest.mark.skipif(not LINUX, reason="process groups")
def test_a_worker_of_another_q7emu_present_at_connect_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "foreign_knob.py").write_text(FOREIGN_KNOB)
    procs = DaskProcesses(tmp_path)
    try:
        procs.worker("--preload", str(tmp_path / "foreign_knob.py"))
        procs.wait_for_workers(1)
        with pytest.raises(InvalidArgument, match=r"worker tcp://127\.0\.0\.1:\d+ has knob default emax=alt \(this "
                                                  r"q7emu: ocp\), another q7emu; install the same q7emu"):
            farm.connect(procs.address)
        assert main(["replay", str(EX / "mariana"), "--dask", procs.address, "--json"]) == 2
        out, err = capsys.readouterr()
        assert len(err.strip().splitlines()) == 1 and "has knob default emax=alt" in err
        assert json.loads(out)["format"] == "q7emu-error"
    finally:
        procs.close()


def junit_cases(path):
    import xml.etree.ElementTree as ET
    return {t.get("name"): [(c.tag, c.get("type")) for c in t] for t in ET.parse(path).iter("testcase")}


@pytest.mark.skipif(not LINUX, reason="process groups and select on pipes")
def test_a_worker_of_another_q7emu_that_joins_mid_run_runs_no_case(tmp_path, slow_cases):
    """The issue's reproduction: the run connects to a cluster of this q7emu; mid-run a worker whose q7emu is another
    version with another knob default joins and the good worker goes, so every case left lands on the foreign one.
    None of them is a verdict: each is an ERROR naming the worker (not run), the summary says so, exit 2."""
    (tmp_path / "foreign.py").write_text(FOREIGN)
    (tmp_path / "hold.py").write_text(HOLD_AFTER_FIRST)
    procs = DaskProcesses(tmp_path)
    try:
        good = procs.worker("--name", "good", "--preload", str(tmp_path / "hold.py"))   # one chunk, then holds
        procs.wait_for_workers(1)
        p = start("-m", "q7emu", "replay", str(slow_cases), "--dask", procs.address, "--progress",
                  "--junit", str(tmp_path / "r.xml"))
        wait_for_progress(p, done=1)
        procs.worker("--name", "foreign", "--preload", str(tmp_path / "foreign.py"))
        procs.wait_for_workers(2)
        os.killpg(good.pid, signal.SIGKILL)         # every case not yet done now runs on the foreign worker
        code, out, err = finish(p)
        assert "Traceback" not in err, err[-3000:]
        errors = [ln for ln in err.splitlines() if ln.startswith("q7emu: error:")]
        passed, not_run = out.count(" PASS "), out.count("\n      not run: Dask worker tcp://127.0.0.1:")
        assert code == 2 and passed >= 1 and not_run >= 1 and passed + not_run == 40, \
            (code, out[-2000:], err[-2000:])
        assert " FAIL " not in out and "runs q7emu 9.9.9 (this is q7emu " in out
        assert f"40 cases: {passed} passed, 0 failed, {not_run} could not be replayed ({not_run} not run: " in out
        assert len(errors) == 1 and f"{not_run} of 40 cases not run: Dask worker tcp://127.0.0.1:" in errors[0]
        kinds = junit_cases(tmp_path / "r.xml")
        assert len(kinds) == 40 and sum(v == [("error", "not-run")] for v in kinds.values()) == not_run
    finally:
        procs.close()


@pytest.mark.skipif(not LINUX, reason="process groups and select on pipes")
def test_a_scheduler_lost_mid_run_is_one_line_and_exit_2_with_what_finished(tmp_path, slow_cases):
    procs = DaskProcesses(tmp_path)
    try:
        procs.worker()
        procs.wait_for_workers(1)
        p = start("-m", "q7emu", "replay", str(slow_cases), "--dask", procs.address, "--progress", "--json",
                  "--junit", str(tmp_path / "r.xml"))
        wait_for_progress(p, done=1)
        assert p.poll() is None
        os.killpg(procs.scheduler.pid, signal.SIGKILL)
        code, out, err = finish(p)
        assert "Traceback" not in err and "CommClosedError" not in err, err[-3000:]
        errors = [ln for ln in err.splitlines() if ln.startswith("q7emu: error:")]
        assert code == 2 and len(errors) == 1, (code, err[-3000:])
        doc = json.loads(out)                       # stdout: the report, strict JSON
        s = doc["summary"]
        assert doc["exit_code"] == 2 and s["cases"] == 40 and s["passed"] >= 1 and s["not_run"] >= 1
        assert s["passed"] + s["not_run"] == 40 and s["errors"] == s["not_run"] and s["failed"] == 0
        lost = f"not run: the Dask scheduler {procs.address} was lost ("
        assert sum(c["verdict"] == "ERROR" and c["error"].startswith(lost) for c in doc["cases"]) == s["not_run"]
        assert f"{s['not_run']} of 40 cases not run: the Dask scheduler {procs.address} was lost" in errors[0]
        kinds = junit_cases(tmp_path / "r.xml")
        assert sum(v == [("error", "not-run")] for v in kinds.values()) == s["not_run"] and len(kinds) == 40
    finally:
        procs.close()
