"""Output files that are never left half-written.

Every file q7emu writes for a user (`run -o`, case files, trace files, exports, profiles) goes through
:func:`atomic_write`. The bytes go to a temporary file in the destination's own folder. On success the file is
flushed, fsync'ed and renamed over the destination. Otherwise the temporary file is removed, so an
interrupt or an error leaves either the old file untouched or the complete new one.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from q7emu.errors import InvalidArgument


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "wb", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on a clean exit it replaces ``path`` atomically.

    Args:
        path: the destination file. Its folder must exist; ``path`` itself must not be a folder.
        mode: ``"wb"`` (binary, the default) or ``"w"`` (text; ``encoding`` defaults to UTF-8).
        open_kwargs: passed to :func:`open` (e.g. ``newline``).

    Yields the open temporary file. On any exception (KeyboardInterrupt included) the temporary file is
    removed and ``path`` is unchanged.
    """
    if mode not in ("wb", "w"):
        raise InvalidArgument("mode", mode, "atomic_write writes 'wb' or 'w'")
    dest = Path(path)
    if dest.is_dir():
        raise InvalidArgument("output", str(dest), "is a folder; name a file")
    folder = dest.parent if str(dest.parent) else Path(".")
    if not folder.is_dir():
        raise InvalidArgument("output", str(dest), f"its folder {str(folder)!r} does not exist")
    if mode == "w":
        open_kwargs.setdefault("encoding", "utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=folder)
    try:
        # mkstemp creates the file 0600; give it the mode a plain open() would (0666 less the umask)
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, mode, **open_kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where the platform allows it
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` (bytes) to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path, "wb") as f:
        f.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path, "w") as f:
        f.write(text)
