"""Interrupted writes (issue 15 finding 3): ``run -o`` and ``case new`` killed (SIGKILL) or interrupted (SIGINT)
in the middle of writing leave the previous output intact, or the complete new one; never a partial file.

Each round waits for the writer's temporary file to appear (so the signal lands inside the write), then
signals it. After SIGINT the temporary file is gone too; after SIGKILL it may remain (nothing can remove it)
beside the untouched destination.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hostile_lib import HANG, env
from signal_support import default_dispositions

from q7emu.isa.records import make_dequant_record
from q7emu.machine.cases import load_case

PB = 0x30000
REC = make_dequant_record(1, 0, 4, 4, partition_bytes=PB).encode().hex()
#: seconds from the temporary file's appearance to the signal: inside the write, and late (after the rename)
DELAYS = (0.0, 0.03, 0.1, 1.0)
ROUNDS = len(DELAYS)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("w")
    rng = np.random.default_rng(11)
    np.savez_compressed(d / "in.npz", sbuf=rng.integers(0, 256, (128, PB), dtype=np.uint8))   # slow to compress
    np.save(d / "region.npy", rng.integers(0, 256, (128, PB // 4), dtype=np.uint8))
    return d


def interrupt_while_writing(argv, folder, dest_name, sig, delay):
    """Start the CLI, wait for its temporary file beside the destination, wait ``delay`` s, send ``sig``."""
    with default_dispositions():            # the signal sent is not ignored in the child
        p = subprocess.Popen([sys.executable, "-m", "q7emu", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env(), start_new_session=True)
    t0 = time.monotonic()
    seen = False
    while time.monotonic() - t0 < HANG and p.poll() is None:
        if any(n.startswith(f".{dest_name}.") and n.endswith(".tmp") for n in os.listdir(folder)):
            seen = True
            time.sleep(delay)
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:               # it had finished
                pass
            break
        time.sleep(0.001)
    try:
        out, err = p.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        raise AssertionError("the writer hung after the signal") from None
    return seen, p.returncode, err


def leftovers(folder, dest_name):
    return [n for n in os.listdir(folder) if n.startswith(f".{dest_name}.") and n.endswith(".tmp")]


#: the signals the CLI handles (Ctrl-C, and since issue 27 item 11 SIGTERM and SIGHUP): the temporary file goes
HANDLED = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
SIGNALS = pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                                  ids=["SIGKILL", "SIGINT", "SIGTERM", "SIGHUP"])


@SIGNALS
def test_interrupted_run_output_keeps_the_old_file(inputs, tmp_path, sig):
    out = tmp_path / "out.npz"
    old = np.zeros((128, PB), np.uint8)
    np.savez_compressed(out, sbuf=old)
    old_bytes = out.read_bytes()
    outcomes = {"old": 0, "new": 0, "interrupted-in-write": 0}
    for r in range(ROUNDS):
        seen, code, err = interrupt_while_writing(
            ["run", REC, "--sbuf", str(inputs / "in.npz"), "-o", str(out), "-g", "CAYMAN", "--backend", "golden"],
            tmp_path, "out.npz", sig, delay=DELAYS[r])
        outcomes["interrupted-in-write"] += seen
        assert "Traceback" not in err, err
        data = out.read_bytes()
        if data == old_bytes:
            outcomes["old"] += 1
        else:                                        # the whole new file: loadable, the SBUF after the run
            with np.load(out) as z:
                assert z["sbuf"].shape == (128, PB) and z["sbuf"][4:].any()
            outcomes["new"] += 1
            out.write_bytes(old_bytes)
        if sig in HANDLED:
            assert not leftovers(tmp_path, "out.npz") and code in (HANDLED[sig], -sig, 0), (code, err)
        for n in leftovers(tmp_path, "out.npz"):
            os.unlink(tmp_path / n)
    assert outcomes["interrupted-in-write"] >= ROUNDS // 2, outcomes
    print(f"\nrun -o under {signal.Signals(sig).name}: {outcomes}")


@SIGNALS
def test_interrupted_case_new_keeps_the_old_case(inputs, tmp_path, sig):
    stem = tmp_path / "c"
    argv = ["case", "new", str(stem), "--record", REC, "-g", "CAYMAN", "--partition-bytes", hex(PB),
            "--input", f"0:0={inputs / 'region.npy'}", "--allow-unread"]   # a large region makes the write slow
    first = subprocess.run([sys.executable, "-m", "q7emu", *argv, "--note", "old"], capture_output=True, text=True,
                           env=env(), timeout=HANG)
    assert first.returncode == 0, first.stderr
    old = {s: stem.with_suffix(s).read_bytes() for s in (".json", ".npz")}
    outcomes = {"old": 0, "new": 0, "interrupted-in-write": 0}
    for r in range(ROUNDS):
        seen, code, err = interrupt_while_writing(argv + ["--note", f"new {r}"], tmp_path, "c.npz", sig,
                                                  delay=DELAYS[r])
        outcomes["interrupted-in-write"] += seen
        assert "Traceback" not in err, err
        for s in (".json", ".npz"):                  # each file: the old bytes, or a complete new file
            data = stem.with_suffix(s).read_bytes()
            if data == old[s]:
                outcomes["old"] += 1
                continue
            outcomes["new"] += 1
            if s == ".json":
                assert json.loads(data)["note"].startswith("new")
            else:
                with np.load(stem.with_suffix(s)) as z:
                    assert z["in0"].shape == (128, PB // 4)
        case = load_case(stem)                       # the pair still loads (same regions either way)
        assert case.inputs[0][1].shape == (128, PB // 4)
        if sig in HANDLED:
            assert not leftovers(tmp_path, "c.npz") and not leftovers(tmp_path, "c.json")
            assert code in (HANDLED[sig], -sig, 0), (code, err)
        for s in (".json", ".npz"):
            stem.with_suffix(s).write_bytes(old[s])
        for n in leftovers(tmp_path, "c.npz") + leftovers(tmp_path, "c.json"):
            os.unlink(tmp_path / n)
    assert outcomes["interrupted-in-write"] >= ROUNDS // 2, outcomes
    print(f"\ncase new under {signal.Signals(sig).name}: {outcomes}")
