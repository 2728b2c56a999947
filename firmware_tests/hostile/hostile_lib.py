"""Shared helpers of the hostile-input suite (firmware_tests/hostile/): run Python code or the CLI in a
subprocess with a hang timeout, and judge the outcome (no signal death, no traceback, one-line errors).

Every subprocess gets a generous timeout: it is a hang detector, never a speed assertion.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cases"
#: seconds before a subprocess counts as hung
HANG = 120


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str

    @property
    def signal(self) -> int | None:
        """The signal that killed the process (SIGSEGV, SIGABRT, ...), or None."""
        return -self.returncode if self.returncode < 0 else None

    def describe(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout[-2000:]}\n--- stderr\n{self.stderr[-4000:]}"


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("PYTHONFAULTHANDLER", None)
    return e


def python(code: str, *args: str, timeout: float = HANG, cwd: str | Path | None = None) -> Outcome:
    """Run ``python -c code args...``; a hang past ``timeout`` fails the test (TimeoutExpired propagates)."""
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                       env=env(), cwd=cwd)
    return Outcome(p.returncode, p.stdout, p.stderr)


def cli(*argv: str, timeout: float = HANG, cwd: str | Path | None = None) -> Outcome:
    """Run ``python -m q7emu argv...`` in a subprocess."""
    p = subprocess.run([sys.executable, "-m", "q7emu", *argv], capture_output=True, text=True, timeout=timeout,
                       env=env(), cwd=cwd)
    return Outcome(p.returncode, p.stdout, p.stderr)


def assert_clean_error(out: Outcome, code: int = 2) -> str:
    """The CLI refused the input the way it must: exit ``code``, exactly one stderr line
    (``q7emu: error: ...``), no traceback, no signal death. Returns that line."""
    assert out.signal is None, f"killed by signal {signal.Signals(out.signal).name}\n{out.describe()}"
    assert "Traceback" not in out.stderr, out.describe()
    assert out.returncode == code, out.describe()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and re.match(r"q7emu( [\w-]+)*: error: ", lines[0]), out.describe()
    return lines[0]


def assert_no_crash(out: Outcome) -> None:
    """No signal death and no traceback (any exit status)."""
    assert out.signal is None, f"killed by signal {signal.Signals(out.signal).name}\n{out.describe()}"
    assert "Traceback" not in out.stderr, out.describe()


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes), to prove nothing outside a destination changed."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def deflate_bomb(path: Path, shape: tuple[int, ...], name: str = "sbuf.npy") -> None:
    """Write a .npz whose one member is a valid, honest .npy of zeros of ``shape`` (uint8), deflated: a few MB
    that inflate to prod(shape) bytes. Built from one flushed deflate block repeated (fast, no 2 GiB buffer)."""
    import struct
    import zlib

    import numpy as np
    header = _npy_header(shape)
    total = header + int(np.prod(shape))
    assert total < 1 << 32, "keep it below the zip64 sizes"
    chunk = 1 << 24
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(_npy_header_bytes(shape)) + c.flush(zlib.Z_FULL_FLUSH)
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = block.compress(bytes(chunk)) + block.flush(zlib.Z_FULL_FLUSH)
    tail = zlib.compressobj(9, zlib.DEFLATED, -15).flush()     # an empty final block
    nzero = total - header
    assert nzero % chunk == 0
    body = head + zeros * (nzero // chunk) + tail
    crc = zlib.crc32(_npy_header_bytes(shape))
    z = bytes(chunk)
    for _ in range(nzero // chunk):
        crc = zlib.crc32(z, crc)
    fname = name.encode()
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(body), total, len(fname), 0) + fname
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(body), total, len(fname),
                          0, 0, 0, 0, 0, 0) + fname
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(body), 0)
    path.write_bytes(local + body + central + end)


def _npy_header_bytes(shape: tuple[int, ...]) -> bytes:
    import io

    import numpy as np
    b = io.BytesIO()
    np.lib.format.write_array_header_1_0(b, {"descr": "|u1", "fortran_order": False, "shape": tuple(shape)})
    return b.getvalue()


def _npy_header(shape: tuple[int, ...]) -> int:
    return len(_npy_header_bytes(shape))
