"""q7emu.fileio.atomic_write: the old file survives any failure; the new one appears whole or not at all."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from q7emu.errors import InvalidArgument
from q7emu.fileio import atomic_write, atomic_write_bytes, atomic_write_text


def _leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_replaces_the_file_whole(tmp_path):
    out = tmp_path / "out.bin"
    atomic_write_bytes(out, b"old")
    atomic_write_bytes(out, b"new contents")
    assert out.read_bytes() == b"new contents"
    atomic_write_text(out, "text ü")
    assert out.read_text(encoding="utf-8") == "text ü"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_an_error_while_writing_keeps_the_old_file(tmp_path, exc):
    out = tmp_path / "out.bin"
    atomic_write_bytes(out, b"old")
    with pytest.raises(exc):
        with atomic_write(out) as f:
            f.write(b"partial")
            raise exc()
    assert out.read_bytes() == b"old"
    assert _leftovers(tmp_path) == []


def test_the_new_file_has_the_mode_open_would_give(tmp_path):
    umask = os.umask(0o022)
    try:
        out = tmp_path / "out.bin"
        atomic_write_bytes(out, b"x")
        assert out.stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(umask)


def test_folder_and_missing_parent_are_errors(tmp_path):
    with pytest.raises(InvalidArgument, match="is a folder"):
        atomic_write_bytes(tmp_path, b"x")
    with pytest.raises(InvalidArgument, match="does not exist"):
        atomic_write_bytes(tmp_path / "no" / "such" / "file", b"x")
    with pytest.raises(InvalidArgument, match="mode"):
        with atomic_write(tmp_path / "x", "ab"):
            pass


def test_a_killed_writer_leaves_the_old_file(tmp_path):
    """SIGKILL in the middle of a large write: the destination still holds the old bytes."""
    out = tmp_path / "out.bin"
    atomic_write_bytes(out, b"old")
    code = ("import sys, time; from q7emu.fileio import atomic_write\n"
            "with atomic_write(sys.argv[1]) as f:\n"
            "    f.write(b'x' * (1 << 20)); sys.stdout.write('go\\n'); sys.stdout.flush(); time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"go\n"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    time.sleep(0.05)
    assert out.read_bytes() == b"old"



def test_a_ctrl_c_at_any_step_of_a_write_leaves_no_temporary_file(tmp_path):
    """A KeyboardInterrupt raised at each point where a Ctrl-C handler's exception can land -- each Python call's
    start and each C call's return (a profile function's ``call`` / ``c_return`` events) -- of atomic_write_bytes:
    every time the KeyboardInterrupt reaches the caller, no ``.NAME.*.tmp`` file stays, the destination holds the
    old bytes or the new, and the next write still works. Before, tempfile.mkstemp created the file and a Ctrl-C
    landing before it returned left that file (its caller had no name to remove yet), and one landing inside its
    name generator's lock left the lock held: the next write hung. The loop runs in a thread of its own (profile
    functions are per thread), so a hang fails the test instead of stopping the suite."""
    import threading
    dest = tmp_path / "out.bin"
    dest.write_bytes(b"old")
    result: dict[str, object] = {}

    def every_step() -> None:
        step, leftovers = 0, []
        while True:
            step += 1
            state = {"events": 0, "step": step, "active": True}

            def interrupt_at_step(frame, event, arg, state=state):
                if event in ("call", "c_return"):
                    state["events"] += 1
                    if state["active"] and state["events"] == state["step"]:
                        raise KeyboardInterrupt

            sys.setprofile(interrupt_at_step)
            try:
                atomic_write_bytes(dest, b"new bytes")
                done = True
            except KeyboardInterrupt:
                done = False
            finally:
                state["active"] = False
                sys.setprofile(None)
            left = sorted(p.name for p in tmp_path.iterdir() if p.name != "out.bin")
            if left:
                leftovers.append((step, left))
                for name in left:
                    (tmp_path / name).unlink()
            if dest.read_bytes() not in (b"old", b"new bytes"):
                leftovers.append((step, "destination damaged"))
            if done:
                result.update(steps=step, leftovers=leftovers, final=dest.read_bytes())
                return

    umask = os.umask(0o022)
    os.umask(umask)
    worker = threading.Thread(target=every_step, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "a write after an interrupted one hung (a lock left held)"
    assert result["leftovers"] == [] and result["steps"] > 20 and result["final"] == b"new bytes", result
    now = os.umask(umask)
    assert now == umask, f"the umask was left at {now:o}"      # a write never sets it, even for a moment
