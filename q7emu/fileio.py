"""Output files that are never left half-written, and input files that are read with bounds.

Every file q7emu writes for a user (`run -o`, case files, trace files, exports, profiles) goes through
:func:`atomic_write`. The bytes go to a temporary file in the destination's own folder. On success the file is
flushed, fsync'ed and renamed over the destination. Otherwise the temporary file is removed, so an
interrupt or an error leaves either the old file untouched or the complete new one.

Every case, SBUF image and array file q7emu reads for a user goes through the bounded readers
(:func:`read_json`, :func:`read_npy`, :class:`NpzReader`, :func:`read_head`): regular files only, sizes
checked from headers before data is read, limits in :data:`LIMITS` (docs/limits.md §2).
"""
from __future__ import annotations

import contextlib
import errno
import functools
import io
import json
import math
import os
import re
import signal
import stat
import struct
import sys
import threading
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

from q7emu._dataclass import dataclass
from q7emu.errors import InvalidArgument, first_line

#: the CRC-32 the .npz reader checks a stored member with: zlib's, until a faster one of the same value is installed
#: (:func:`use_crc32`; q7emu.machine.cases installs q7emu.kernels._cpu.crc32, folded with PCLMULQDQ)
_crc32: Callable[[Any, int], int] = zlib.crc32


def use_crc32(fn: Callable[[Any, int], int]) -> None:
    """Check stored ``.npz`` members with ``fn`` (``fn(buffer, value)``: zlib.crc32's value) instead of zlib's own:
    the reader of this lowest layer cannot import the compiled modules above it, so the layer that loads cases
    installs the faster one (docs/limits.md §1)."""
    global _crc32
    _crc32 = fn


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file")


def write_generated(outputs: dict[Path, str], argv: list[str], command: str, root: Path) -> int:
    """A generator's main: write each generated file of ``outputs`` ({path: text}) and say so; with ``--check`` in
    ``argv`` write nothing and name each file that is missing or differs ("stale: run ``command``"), exit status 1
    when one does, else 0; any other argument (``--help``) prints the usage and returns 2, writing nothing. Paths are
    printed relative to ``root`` (the repository)."""
    if any(a != "--check" for a in argv):
        print(f"usage: {command} [--check]   (--check: write nothing; exit 1 when a generated file is stale)",
              file=sys.stderr)
        return 2
    stale = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
    if "--check" in argv:
        for p in stale:
            print(f"{p.relative_to(root)} is stale: run {command}", file=sys.stderr)
        return 1 if stale else 0
    for p, text in outputs.items():
        p.write_text(text)
        print(f"wrote {p.relative_to(root)}")
    return 0


def output_target(path: str | os.PathLike[str]) -> Path:
    """The file an output to ``path`` replaces (docs/limits.md §3), checked before any work is done.

    A symlink (a chain of them, or one whose target does not exist yet) is followed: the file it names is
    written, in that file's folder, and the link stays. A folder, a FIFO, a socket or a device (``/dev/null``
    included) is refused, as is a symlink loop; the folder must exist. InvalidArgument names the path and the
    rule."""
    dest = Path(path)
    if not str(path):
        raise InvalidArgument("output", str(path), "is empty; name a file")
    if dest.is_symlink():
        target = Path(os.path.realpath(dest))
        if target.is_symlink():
            raise InvalidArgument("output", str(dest), "is a symlink loop; name a file")
        dest = target
    try:
        st = os.stat(dest)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise InvalidArgument("output", str(dest), f"cannot be examined ({e.strerror})") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        rule = "is a folder; name a file" if stat.S_ISDIR(st.st_mode) else \
            f"is {_kind(st.st_mode)}; q7emu writes only regular files (docs/limits.md §3)"
        raise InvalidArgument("output", str(path) if str(path) == str(dest) else f"{path} -> {dest}", rule)
    folder = dest.parent if str(dest.parent) else Path(".")
    if not folder.is_dir():
        raise InvalidArgument("output", str(dest), f"its folder {str(folder)!r} does not exist")
    return dest


#: errors of the file system itself (full, read-only, quota, too large, I/O): they name the output they hit
_FS_ERRORS = frozenset(getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EROFS", "EFBIG", "EIO", "EACCES", "EPERM")
                       if hasattr(errno, n))


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "wb", *, shown_as: str | os.PathLike[str] | None = None,
                 **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on a clean exit it replaces ``path`` atomically.

    Args:
        path: the destination file (:func:`output_target`: a symlink is written through, to the file it
            names; a folder, FIFO, socket or device is refused). Its folder must exist.
        mode: ``"wb"`` (binary, the default) or ``"w"`` (text; ``encoding`` defaults to UTF-8).
        shown_as: the output an error names, when ``path`` is itself a temporary file standing for it (default
            ``path``): errors name the output a user asked for, never a temporary file (docs/limits.md §3).
        open_kwargs: passed to :func:`open` (e.g. ``newline``).

    Yields the open temporary file. On any exception (KeyboardInterrupt included) the temporary file is
    removed and ``path`` is unchanged. A replaced file keeps its permission bits; a new one gets those a plain
    ``open`` would (0666 less the umask). An error of the file system (full, read-only, ...) names ``path``.
    """
    if mode not in ("wb", "w"):
        raise InvalidArgument("mode", mode, "atomic_write writes 'wb' or 'w'")
    dest = output_target(path)
    folder = dest.parent if str(dest.parent) else Path(".")
    if mode == "w":
        open_kwargs.setdefault("encoding", "utf-8")
    try:
        old_mode: int | None = stat.S_IMODE(os.stat(dest).st_mode)
    except OSError:
        old_mode = None
    # a new file: what a plain open() gives (0666 less the umask, applied by the system: reading the umask would
    # mean setting it for a moment); a replaced one: 0600 until it gets the old file's mode below
    fd, tmp = create_temporary(folder, dest.name, mode=0o600 if old_mode is not None else 0o666,
                               writing=dest if shown_as is None else shown_as)
    try:
        if old_mode is not None:
            os.fchmod(fd, old_mode)
        with os.fdopen(fd, mode, **open_kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise named_os_error(e, dest if shown_as is None else shown_as) from None
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


#: names tried for a temporary output file before giving up (each a fresh random 48-bit name)
_TMP_TRIES = 100
#: open flags of a temporary output file: created here and now, never an existing file or a link
_TMP_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
              | getattr(os, "O_NOFOLLOW", 0))


def create_temporary(folder: str | os.PathLike[str], name: str, suffix: str = ".tmp", *, mode: int = 0o600,
                     writing: str | os.PathLike[str] | None = None) -> tuple[int, str]:
    """Create ``folder/.NAME.XXXXXXXXXXXX<suffix>``, a new file (``O_EXCL``, never a link) with a random name, for
    writing; (open descriptor, path). ``mode`` is given to the system, which applies the umask. An error names
    the folder (and ``writing``, the output it is for).

    The name is chosen before the file is created, and a Ctrl-C landing during or just after the creation removes
    the file before the KeyboardInterrupt leaves this function, so nothing stays that the caller cannot name
    (tempfile.mkstemp left its file then). No lock is taken (tempfile's name generator has one, which a Ctrl-C
    landing inside could leave held)."""
    target = f" (writing {writing})" if writing is not None else ""
    name = _short_enough(folder, name, len(f"..{'0' * 12}{suffix}"))
    for _ in range(_TMP_TRIES):
        tmp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(tmp, _TMP_FLAGS, mode), tmp
        except FileExistsError:
            continue                    # another file of that name, never ours: try another name
        except OSError as e:
            raise type(e)(e.errno, f"{e.strerror}: cannot create a file in {str(folder)!r}{target}") from None
        except BaseException:           # a Ctrl-C during or just after the creation: the file, if made, is ours
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    raise FileExistsError(errno.EEXIST, f"no free temporary name in {str(folder)!r}{target}")


#: the longest file name (bytes) where the folder's file system does not say (POSIX's NAME_MAX on Linux)
_NAME_MAX = 255


def _short_enough(folder: str | os.PathLike[str], name: str, extra: int) -> str:
    """``name`` cut so that it and ``extra`` more bytes fit one file name of ``folder``'s file system: a temporary
    file's name is longer than its output's (``.NAME.xxxxxxxxxxxx.tmp``), and an output whose own name was valid,
    but within 23 bytes of the limit, could not be written (ENAMETOOLONG)."""
    try:
        limit = int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        limit = _NAME_MAX
    raw = os.fsencode(name)
    room = max(1, limit - extra)
    return name if len(raw) <= room else os.fsdecode(raw[:room])


def named_os_error(e: OSError, dest: str | os.PathLike[str]) -> OSError:
    """``e`` naming the output ``dest`` when it is a file-system error that names no file (a full disk
    during a write names nothing); an error already named (by an inner write: a trace file written while its log
    is) is left as it is, so it names the file that failed and only that one."""
    if e.filename is None and e.errno in _FS_ERRORS and not getattr(e, "q7emu_named", False):
        named = type(e)(e.errno, f"{e.strerror} (writing {dest})")
        named.q7emu_named = True  # type: ignore[attr-defined]  # a marker on the exception, read above
        return named
    return e


#: errors of a resource running out (open files, memory for a process, processes): they name what was opened
_RESOURCE_ERRORS = frozenset(getattr(errno, n) for n in ("EMFILE", "ENFILE", "EAGAIN", "ENOMEM") if hasattr(errno, n))


def resource_error(e: OSError, what: str) -> OSError:
    """``e`` naming ``what`` was being opened or started when it is a resource error that names nothing (``[Errno
    24] Too many open files`` from a pipe or a fork): ``[Errno 24] Too many open files (opening a pipe to a
    worker process)`` (docs/limits.md §3)."""
    if e.filename is None and e.errno in _RESOURCE_ERRORS:
        return type(e)(e.errno, f"{e.strerror} (opening {what})")
    return e


#: a Ctrl-C during write_npz is acted on after at most this many more bytes of array data are written
_NPZ_WRITE_CHUNK = 4 << 20


class _SafePointSigint:
    """While active, SIGINT (and SIGTERM / SIGHUP when a Python handler is installed for them, as the CLI does:
    docs/limits.md §4) only sets a flag; :meth:`check` acts on it (as the previous handler would: a
    KeyboardInterrupt for Python's default) at a point the caller chooses. So a signal cannot land inside
    zipfile's bookkeeping, which then raises an unrelated ValueError and leaves a broken ZipFile whose
    finaliser prints a traceback. Does nothing outside the main thread (Python runs no handler there) or for a
    signal that is ignored."""

    def __init__(self) -> None:
        self.hit: list[int] = []
        self.old: dict[int, Any] = {}

    def __enter__(self) -> _SafePointSigint:
        if threading.current_thread() is threading.main_thread():
            for name in ("SIGINT", "SIGTERM", "SIGHUP"):
                sig = getattr(signal, name, None)
                if sig is None:
                    continue
                old = signal.getsignal(sig)
                if old in (signal.SIG_IGN, None) or (sig != signal.SIGINT and not callable(old)):
                    continue
                self.old[sig] = signal.signal(sig, self._flag)
        return self

    def _flag(self, signum: int, frame: Any) -> None:
        self.hit.append(signum)

    def check(self) -> None:
        """Act on a signal received so far (raises KeyboardInterrupt under Python's default SIGINT handler)."""
        while self.hit:
            sig = self.hit.pop(0)
            old = self.old.get(sig)
            if old is signal.default_int_handler:
                self.hit.clear()
                raise KeyboardInterrupt
            if callable(old):
                old(sig, None)
            elif old == signal.SIG_DFL:
                signal.signal(sig, signal.SIG_DFL)
                os.kill(os.getpid(), sig)

    def __exit__(self, *exc: object) -> None:
        old, self.old = self.old, {}
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if exc[0] is None:
            self.old = old
            try:
                self.check()
            finally:
                self.old = {}


def write_npz(f: IO[bytes], arrays: dict[str, np.ndarray], *, compress: bool = True) -> None:
    """Write ``arrays`` to the open binary file ``f`` as an ``.npz`` (what ``np.savez_compressed`` writes, and
    ``np.load`` reads): one ``NAME.npy`` member per array, deflated unless ``compress`` is False.

    Meant for the temporary file of :func:`atomic_write`. A Ctrl-C is acted on between chunks of array data
    (every 4 MiB), where the archive closes cleanly on the way out, as a KeyboardInterrupt (which makes
    atomic_write drop the temporary file)."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with _SafePointSigint() as sigint, zipfile.ZipFile(f, "w", method, allowZip64=True) as z:
        for name, arr in arrays.items():
            a = np.asarray(arr)
            if not a.flags.c_contiguous:
                a = a.copy(order="C")              # (np.ascontiguousarray would make a 0-d array 1-d)
            if a.dtype.hasobject:
                raise InvalidArgument(name, str(a.dtype), "q7emu writes no Python objects (pickles)")
            with z.open(f"{name}.npy", "w", force_zip64=True) as m:
                header = {"descr": np.lib.format.dtype_to_descr(a.dtype), "fortran_order": False, "shape": a.shape}
                try:
                    np.lib.format.write_array_header_1_0(m, header)
                except ValueError:                     # a header over 64 KiB (huge structured dtypes)
                    np.lib.format.write_array_header_2_0(m, header)
                data = a.reshape(-1).view(np.uint8).data if a.size else memoryview(b"")
                for pos in range(0, len(data), _NPZ_WRITE_CHUNK):
                    sigint.check()
                    m.write(data[pos:pos + _NPZ_WRITE_CHUNK])
            sigint.check()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` (bytes) to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path, "wb") as f:
        f.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path, "w") as f:
        f.write(text)


# ====================================================================== bounded readers
# Every file q7emu reads for a user goes through the readers below (docs/limits.md §1). They never block on
# a FIFO or a device, never read more than a limit, and learn an array's shape and size from its header
# before reading (or inflating) a byte of its data. A malformed, truncated or damaged file, and one over a
# limit, raises InvalidArgument naming the file (and member) and the rule, in one line.

#: the limits of the readers: environment variable -> default (docs/limits.md §2 says what each bounds)
LIMITS: dict[str, int] = {
    "Q7EMU_MAX_ARRAY_BYTES": 1 << 30,      # array data one .npz / .npy file may hold, all members together
    "Q7EMU_MAX_NPZ_MEMBERS": 4096,         # members of one .npz
    "Q7EMU_MAX_JSON_BYTES": 16 << 20,      # size of one JSON file
    "Q7EMU_MAX_JSON_DEPTH": 64,            # nesting depth of [ ] and { } in one JSON file
    "Q7EMU_MAX_DIFF_RECORDS": 1 << 24,     # records of both traces of one trace diff (~190 B of memory each)
}
#: a deflated member that claims to inflate more than this many times its compressed size has a header that
#: lies: deflate itself never exceeds about 1032:1 (a run of equal bytes)
MAX_DEFLATE_RATIO = 1100
#: how much of a ``*.json`` file a folder scan reads to tell a case file from any other JSON file
SCAN_HEAD_BYTES = 4096
#: the largest .npy header read (numpy's own default)
_MAX_NPY_HEADER = 10000
#: a zip member's local header (APPNOTE 4.3.7): signature, versions, flags, method, time, date, CRC-32, sizes, and
#: the lengths of the name (field 10) and the extra field (field 11) that follow it
_ZIP_LOCAL_HEADER = "<4s2B4HL2L2H"
_ZIP_LOCAL_SIZE = struct.calcsize(_ZIP_LOCAL_HEADER)
#: array data is read in chunks of this size (so a damaged member fails early and memory stays bounded)
_CHUNK = 16 << 20


def limit(name: str) -> int:
    """The current value of limit ``name`` (a key of :data:`LIMITS`): the environment variable of that name
    when set (a decimal or 0x integer >= 0), else its default (docs/limits.md §2)."""
    default = LIMITS[name]
    text = os.environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = int(text.strip(), 0)
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidArgument(name, text, "must be an integer >= 0 (docs/limits.md §2)")
    return value


def _refuse(path: str | os.PathLike[str], value: object, rule: str) -> InvalidArgument:
    return InvalidArgument(str(path), value, rule)


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open ``path`` for binary reading if it is a regular file; InvalidArgument for a FIFO, a device, a
    socket or a folder, which are never read (opened without blocking, then checked, so a FIFO with no
    writer cannot hang the caller). OSError (no such file, permission) propagates."""
    # The file object owns the descriptor from the start (open's opener), and only it closes it: a Ctrl-C landing
    # just after a file object was made from a bare descriptor used to close it twice, and the second close's
    # "Bad file descriptor" replaced the KeyboardInterrupt (a case reported unreadable, the run going on).
    try:
        f = open(path, "rb", opener=_open_nonblocking)
    except IsADirectoryError:                           # FileIO refuses a folder itself
        raise _refuse(path, "a folder", "is not a regular file (q7emu reads only regular files)") from None
    try:
        mode = os.fstat(f.fileno()).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "a device")
            raise _refuse(path, kind, "is not a regular file (q7emu reads only regular files)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(f.fileno(), True)
        return f
    except BaseException:
        f.close()
        raise


def _open_nonblocking(path: str, flags: int) -> int:
    """:func:`open`'s opener for :func:`open_regular`: without blocking (a FIFO with no writer), close-on-exec."""
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is (a symlink to) a regular file; never opens it, so a FIFO cannot block."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_head(path: str | os.PathLike[str], n: int = SCAN_HEAD_BYTES) -> bytes:
    """The first ``n`` bytes of a regular file (fewer when it is shorter); see :func:`open_regular`."""
    with open_regular(path) as f:
        return f.read(n)


def read_bytes(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The whole of a regular file of at most ``max_bytes`` bytes; InvalidArgument when it is larger
    (refused from its size before reading, and never more than max_bytes + 1 bytes read)."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise _refuse(path, f"{size} bytes", f"is larger than the limit of {max_bytes} bytes "
                                                 "(docs/limits.md §2)")
        parts = [f.read(size + 1)]           # what fstat says, and one byte more to see a file that grew ...
        got = len(parts[0])
        while got > size and got <= max_bytes:   # ... which is read on in chunks, never past the limit
            part = f.read(min(_CHUNK, max_bytes + 1 - got))
            if not part:
                break
            parts.append(part)
            got += len(part)
        data = b"".join(parts) if len(parts) > 1 else parts[0]
    if len(data) > max_bytes:
        raise _refuse(path, f"over {max_bytes} bytes", f"grew past the limit of {max_bytes} bytes while read")
    return data


#: a JSON string, or an unterminated one up to the end of the text: possessive, so it never backtracks, and it
#: always matches from an opening quote, so no quote is the start of a second scan (linear time)
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]++")
#: brackets counted per numpy step
_DEPTH_CHUNK = 1 << 20


def json_depth(data: bytes | str, stop: int | None = None) -> int:
    """The nesting depth of ``[ ]`` / ``{ }`` in JSON text (strings skipped; an unterminated string runs to
    the end); stops counting once it passes ``stop``. Linear time in ``len(data)`` (no backtracking, no
    recursion); ``str`` text is scanned as its UTF-8 bytes."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    brackets = _NOT_BRACKET.sub(b"", _JSON_STRING.sub(b"", data))
    depth = deepest = 0
    for pos in range(0, len(brackets), _DEPTH_CHUNK):
        step = np.frombuffer(brackets, np.uint8, min(_DEPTH_CHUNK, len(brackets) - pos), pos)
        # '[' 0x5b and '{' 0x7b open (bit 1 set), ']' 0x5d and '}' 0x7d close (bit 1 clear)
        levels = np.cumsum((step & 2).astype(np.int64) - 1, dtype=np.int64) + depth
        deepest = max(deepest, int(levels.max()))
        depth = int(levels[-1])
        if stop is not None and deepest > stop:
            break
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or an exponent, refused when a double cannot hold it (``1e999`` would be read
    as infinity, which strict JSON has no way to write back)."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:24]}{'...' if len(text) > 24 else ''} is too large for a double")
    return value


def read_json(path: str | os.PathLike[str], *, max_bytes: int | None = None, max_depth: int | None = None) -> Any:
    """Parse a UTF-8 JSON file of bounded size and nesting depth (defaults: the limits
    ``Q7EMU_MAX_JSON_BYTES`` and ``Q7EMU_MAX_JSON_DEPTH``, docs/limits.md §2). Strict JSON: ``NaN`` and
    ``Infinity`` are refused, and so is a number too large for a double (``1e999``, which would be read as
    infinity). InvalidArgument (one line, naming the file) for anything else."""
    max_bytes = limit("Q7EMU_MAX_JSON_BYTES") if max_bytes is None else max_bytes
    max_depth = limit("Q7EMU_MAX_JSON_DEPTH") if max_depth is None else max_depth
    data = read_bytes(path, max_bytes)
    depth = json_depth(data, stop=max_depth)
    if depth > max_depth:
        raise _refuse(path, f"depth > {max_depth}", f"JSON nested deeper than the limit of {max_depth} "
                                                     "(docs/limits.md §2)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _refuse(path, f"byte {e.start}", "is not UTF-8 text") from None
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise _refuse(path, f"line {e.lineno} column {e.colno}", f"not valid JSON: {e.msg}") from None
    except (ValueError, RecursionError, MemoryError) as e:
        raise _refuse(path, first_line(e), "not valid JSON") from None


class JsonTextError(ValueError):
    """JSON text refused by :func:`parse_json`; the message is one phrase without the text's name (the caller
    prefixes where the text came from)."""


def _not_a_number(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(data: bytes | str, *, max_depth: int | None = None) -> Any:
    """Parse JSON text already read under a bound (a trace file's header or footer, one line of a JSON Lines
    file) with :func:`read_json`'s rules: UTF-8, nesting at most ``max_depth`` levels (default the limit
    ``Q7EMU_MAX_JSON_DEPTH``, docs/limits.md §2; checked in linear time before parsing, so deep nesting is never a
    RecursionError), strict JSON (``NaN`` / ``Infinity`` refused). :class:`JsonTextError` otherwise, one of
    ``not UTF-8 (REASON at byte N)``, ``JSON nested deeper than N levels``, ``not valid JSON (DETAIL)``."""
    max_depth = limit("Q7EMU_MAX_JSON_DEPTH") if max_depth is None else max_depth
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise JsonTextError(f"not UTF-8 ({e.reason} at byte {e.start})") from None
    if json_depth(data, stop=max_depth) > max_depth:
        raise JsonTextError(f"JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(data, parse_constant=_not_a_number, parse_float=_finite_float)
    except (ValueError, RecursionError) as e:
        raise JsonTextError(f"not valid JSON ({e})") from None


# ---------------------------------------------------------------------- .npy / .npz
@dataclass(frozen=True)
class ArrayInfo:
    """What an ``.npy`` header says: the array's shape, dtype and order, its data size in bytes and the
    header's own size."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    nbytes: int
    header_bytes: int


#: an array header check: (where, info) -> None, raising InvalidArgument to refuse the array before its data
ArrayCheck = Callable[[str, ArrayInfo], None]


@functools.lru_cache(maxsize=512)
def _parse_npy_header(version: tuple[int, int], raw: bytes) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran order, dtype) of a .npy header (its length prefix and text), by numpy's own parser;
    remembered, since the cases of a farm repeat a handful of headers and numpy parses each with ``ast``."""
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    with warnings.catch_warnings():     # a damaged header's bad escapes: a warning from ast on the user's stderr
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", SyntaxWarning)
        return read(io.BytesIO(raw), max_header_size=_MAX_NPY_HEADER)


def _read_npy_header(f: IO[bytes], where: str) -> ArrayInfo:
    """Parse the .npy header at the start of ``f`` (numpy's own parser, bounded) and size the array."""
    try:
        version = np.lib.format.read_magic(f)
        if version not in ((1, 0), (2, 0)):
            raise _refuse(where, f"npy format {version}", "q7emu reads .npy format 1.0 and 2.0")
        size_bytes = 2 if version == (1, 0) else 4
        prefix = f.read(size_bytes)
        length = int.from_bytes(prefix, "little") if len(prefix) == size_bytes else -1
        if not 0 <= length <= _MAX_NPY_HEADER:     # numpy's own limit, checked before the header is read
            raise ValueError(f"header length {length} (at most {_MAX_NPY_HEADER})")
        text = f.read(length)
        if len(text) != length:
            raise ValueError("the header is cut short")
        shape, fortran, dtype = _parse_npy_header(version, prefix + text)
        header = f.tell()
    except InvalidArgument:
        raise
    except Exception as e:       # numpy parses the header with ast / tokenize: any of their errors, or MemoryError
        raise _refuse(where, first_line(e), "not a readable .npy array header (damaged or not an array)") from None
    if dtype.hasobject:
        raise _refuse(where, str(dtype), "holds Python objects (pickles are never loaded)")
    if dtype.itemsize == 0:
        raise _refuse(where, str(dtype), "has a zero-size dtype")
    if any(isinstance(x, bool) or x < 0 for x in shape):
        raise _refuse(where, shape, "the header's shape must be non-negative integers")
    count = span = 1
    for x in shape:
        count *= x
        span *= max(x, 1)
    if span * dtype.itemsize > sys.maxsize:      # numpy cannot even describe it (empty or not)
        raise _refuse(where, shape, "the header's shape is beyond the largest array numpy can describe")
    return ArrayInfo(tuple(shape), dtype, bool(fortran), count * dtype.itemsize, header)


def _flat_array(info: ArrayInfo) -> tuple[np.ndarray, memoryview]:
    """A fresh flat array for ``info``'s data and a writable byte view of it (the reader fills it)."""
    flat = np.empty(info.nbytes // info.dtype.itemsize, dtype=info.dtype)
    return flat, (flat.view(np.uint8).data if info.nbytes else memoryview(bytearray()))


def _shaped(flat: np.ndarray, info: ArrayInfo) -> np.ndarray:
    """The filled flat array in ``info``'s shape and order."""
    if info.fortran_order:
        return flat.reshape(info.shape[::-1]).transpose()
    return flat.reshape(info.shape)


def _read_data(f: IO[bytes], info: ArrayInfo, where: str) -> np.ndarray:
    """Read the array data that follows the header, in chunks, into a fresh array of ``info``'s shape."""
    flat, mv = _flat_array(info)
    pos = 0
    try:
        while pos < info.nbytes:
            chunk = f.read(min(_CHUNK, info.nbytes - pos))
            if not chunk:
                break
            mv[pos:pos + len(chunk)] = chunk
            pos += len(chunk)
        extra = f.read(1)
    except Exception as e:       # zipfile / zlib on damaged data: BadZipFile, zlib.error, EOFError, ...
        raise _refuse(where, first_line(e), "damaged array data (CRC or deflate error)") from None
    if pos < info.nbytes:
        raise _refuse(where, f"{pos} of {info.nbytes} data bytes", "truncated: the file ends inside the array")
    if extra:
        raise _refuse(where, f"more than {info.nbytes} data bytes", "holds bytes after the array its header "
                                                                     "describes")
    return _shaped(flat, info)


def _budget(where: str, need: int, left: int, total: int) -> None:
    if need > left:
        raise _refuse(where, f"{need} bytes", f"array data over the limit of {total} bytes per file "
                                              "(Q7EMU_MAX_ARRAY_BYTES, docs/limits.md §2)")


def read_npy(path: str | os.PathLike[str], *, check: ArrayCheck | None = None, max_bytes: int | None = None
             ) -> np.ndarray:
    """Read a ``.npy`` file: its header is parsed and checked (``check``, the size limit
    ``Q7EMU_MAX_ARRAY_BYTES`` or ``max_bytes``, the file size it implies) before any data is read."""
    total = limit("Q7EMU_MAX_ARRAY_BYTES") if max_bytes is None else max_bytes
    where = str(path)
    with open_regular(path) as f:
        info = _read_npy_header(f, where)
        if check is not None:
            check(where, info)
        _budget(where, info.nbytes, total, total)
        size = os.fstat(f.fileno()).st_size
        if size != info.header_bytes + info.nbytes:
            raise _refuse(where, f"{size} bytes", f"the header describes {info.header_bytes + info.nbytes} bytes "
                                                  "(a truncated or damaged .npy)")
        return _read_data(f, info, where)


class NpzReader:
    """A ``.npz`` file opened for bounded reading: the member names come from the zip directory, each
    member's ``.npy`` header is checked before its data is inflated, and the data of all members read
    through one reader together stays under ``Q7EMU_MAX_ARRAY_BYTES`` (or ``max_bytes``).

    Use as a context manager. Only stored and deflated members are read; a member whose sizes are
    inconsistent with its header, or whose claimed compression ratio deflate cannot produce, is refused
    before it is inflated; CRC damage and truncation are refused when found."""

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int | None = None) -> None:
        self.path = str(path)
        self.total = limit("Q7EMU_MAX_ARRAY_BYTES") if max_bytes is None else max_bytes
        self.left = self.total
        self._file = open_regular(path)
        try:
            self._zip = zipfile.ZipFile(self._file)
            infos = self._zip.infolist()
        except Exception as e:   # zipfile on a damaged directory raises many types (BadZipFile, struct.error, ...)
            self._file.close()
            raise _refuse(self.path, first_line(e), "not a readable .npz (zip) file: truncated or damaged") from None
        except BaseException:
            self._file.close()
            raise
        members = limit("Q7EMU_MAX_NPZ_MEMBERS")
        if len(infos) > members:
            self.close()
            raise _refuse(self.path, f"{len(infos)} members", f"more than the limit of {members} "
                                                              "(Q7EMU_MAX_NPZ_MEMBERS, docs/limits.md §2)")
        self._infos = {i.filename[:-4] if i.filename.endswith(".npy") else i.filename: i for i in infos}

    @property
    def names(self) -> list[str]:
        """The array names (member names without ``.npy``), in the zip's order."""
        return list(self._infos)

    def __contains__(self, name: object) -> bool:
        return name in self._infos

    def __enter__(self) -> NpzReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file."""
        self._zip.close()
        self._file.close()

    def _member(self, name: str) -> tuple[zipfile.ZipInfo, str]:
        """The zip entry of array ``name`` and how errors name it, checked from the zip directory alone."""
        zi = self._infos.get(name)
        where = f"{self.path}:{name}"
        if zi is None:
            raise _refuse(self.path, name, f"has no array of that name (it holds {', '.join(self.names) or 'none'})")
        if zi.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _refuse(where, f"compression method {zi.compress_type}", "q7emu reads stored or deflated members")
        if zi.flag_bits & 0x1:
            raise _refuse(where, "encrypted", "q7emu does not read encrypted members")
        if zi.compress_type == zipfile.ZIP_STORED and zi.file_size != zi.compress_size or \
                zi.file_size > MAX_DEFLATE_RATIO * max(zi.compress_size, 1):
            raise _refuse(where, f"{zi.compress_size} -> {zi.file_size} bytes",
                          f"claims a size its compression cannot produce (over {MAX_DEFLATE_RATIO}:1): damaged")
        if zi.file_size > self.left + _MAX_NPY_HEADER:
            raise _refuse(where, f"{zi.file_size} bytes", f"array data over the limit of {self.total} bytes per "
                                                          "file (Q7EMU_MAX_ARRAY_BYTES, docs/limits.md §2)")
        return zi, where

    def _open(self, zi: zipfile.ZipInfo, where: str) -> IO[bytes]:
        """The member ``zi`` (checked by :meth:`_member`) opened for reading through zipfile."""
        try:
            return self._zip.open(zi)
        except Exception as e:
            raise _refuse(where, first_line(e), "not a readable .npz member: damaged") from None

    def _stored_start(self, zi: zipfile.ZipInfo, where: str) -> int:
        """Where a stored member's bytes begin in the file, from its local header (checked as zipfile checks it:
        signature and name), and refused when the file ends before the member does (truncated)."""
        f = self._file
        try:
            f.seek(zi.header_offset)
            head = f.read(_ZIP_LOCAL_SIZE)
            if len(head) != _ZIP_LOCAL_SIZE:
                raise ValueError("the file ends inside a member's local header")
            fields = struct.unpack(_ZIP_LOCAL_HEADER, head)
            if fields[0] != b"PK\x03\x04":
                raise ValueError("bad magic number for a member's local header")
            name_len, extra_len = fields[10], fields[11]
            fname = f.read(name_len)
            encoding = "utf-8" if zi.flag_bits & 0x800 else "cp437"
            if fname.decode(encoding) != zi.orig_filename:
                raise ValueError("the local header names another member than the directory does")
        except (ValueError, OSError, struct.error) as e:   # (UnicodeDecodeError is a ValueError)
            raise _refuse(where, first_line(e), "not a readable .npz member: damaged") from None
        start = zi.header_offset + _ZIP_LOCAL_SIZE + int(name_len) + int(extra_len)
        size = os.fstat(f.fileno()).st_size
        if start + zi.file_size > size:
            raise _refuse(where, f"{max(size - start, 0)} of {zi.file_size} member bytes",
                          "truncated: the file ends inside the array")
        return start

    def _check_member(self, zi: zipfile.ZipInfo, where: str, info: ArrayInfo, check: ArrayCheck | None) -> None:
        """Before an array's data is read: the caller's ``check``, the header's size against the member's, and the
        reader's size budget."""
        if check is not None:
            check(where, info)
        if info.header_bytes + info.nbytes != zi.file_size:
            raise _refuse(where, f"{zi.file_size} bytes", f"the header describes "
                                                          f"{info.header_bytes + info.nbytes} bytes (damaged)")
        _budget(where, info.nbytes, self.left, self.total)

    def _read_stored(self, zi: zipfile.ZipInfo, where: str, check: ArrayCheck | None) -> np.ndarray:
        """A stored (uncompressed) member read straight into its array: one read of the data from the file, then
        the zip's CRC-32 over the member checked (what zipfile checks, without its copies)."""
        start = self._stored_start(zi, where)
        f = cast(io.BufferedReader, self._file)         # (open_regular: open(path, "rb"))
        f.seek(start)
        head = f.read(min(zi.file_size, 12 + _MAX_NPY_HEADER))
        info = _read_npy_header(io.BytesIO(head), where)
        self._check_member(zi, where, info, check)
        flat, mv = _flat_array(info)
        f.seek(start + info.header_bytes)
        pos = 0
        while pos < info.nbytes:
            got = f.readinto(mv[pos:pos + _CHUNK])
            if not got:
                raise _refuse(where, f"{pos} of {info.nbytes} data bytes", "truncated: the file ends inside the "
                                                                           "array")
            pos += got
        if _crc32(mv, zlib.crc32(head[:info.header_bytes])) != zi.CRC:
            raise _refuse(where, "CRC-32 mismatch", "damaged array data (CRC or deflate error)")
        self.left -= info.nbytes
        return _shaped(flat, info)

    def info(self, name: str) -> ArrayInfo:
        """The header of array ``name`` (only the header is inflated)."""
        zi, where = self._member(name)
        with self._open(zi, where) as f:
            return _read_npy_header(f, where)

    def read(self, name: str, check: ArrayCheck | None = None) -> np.ndarray:
        """Array ``name``: its header is read and checked (``check``, consistency with the member's size,
        the size limit) before its data is inflated. A stored member is read straight into the array
        (:meth:`_read_stored`)."""
        zi, where = self._member(name)
        if zi.compress_type == zipfile.ZIP_STORED:
            return self._read_stored(zi, where, check)
        with self._open(zi, where) as f:
            info = _read_npy_header(f, where)
            self._check_member(zi, where, info, check)
            arr = _read_data(f, info, where)
        self.left -= info.nbytes
        return arr


def read_npz(path: str | os.PathLike[str], names: Iterable[str] | None = None, *, check: ArrayCheck | None = None,
             max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """The arrays ``names`` (default: all) of a ``.npz`` file, read with :class:`NpzReader`'s bounds."""
    with NpzReader(path, max_bytes=max_bytes) as z:
        return {n: z.read(n, check) for n in (z.names if names is None else names)}


NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def head_text(head: bytes) -> str:
    """The first bytes of a file as a person reads them: ``starts with 5f 82 c2 d9 00 01 02 03`` (hex, never a
    Python bytes literal), or ``is empty``."""
    return f"starts with {head.hex(' ')}" if head else "is empty"


class UnknownFileKind(InvalidArgument):
    """A file that is neither an .npz nor an .npy: ``value`` is its first bytes; the message shows them in hex."""

    def __init__(self, path: str | os.PathLike[str], head: bytes, rule: str) -> None:
        super().__init__(str(path), head, rule)
        self.head = head
        self.args = (f"{path}: {head_text(head)}: {rule}",)


def array_file_kind(path: str | os.PathLike[str], *, raw: bool = False) -> str:
    """``"npz"`` or ``"npy"`` from the file's first bytes (not its name); with ``raw``, ``"raw"`` for anything
    else (a raw dump), otherwise InvalidArgument showing the first bytes in hex."""
    head = read_head(path, 8)
    if head.startswith(NPY_MAGIC):
        return "npy"
    if head.startswith(ZIP_MAGIC):
        return "npz"
    if raw:
        return "raw"
    raise UnknownFileKind(path, head[:8], "is neither an .npz (zip) nor an .npy file")


def read_array_file(path: str | os.PathLike[str], name: str | None = None, *, check: ArrayCheck | None = None
                    ) -> np.ndarray:
    """One array from an ``.npy`` file, or array ``name`` of an ``.npz`` file (``name`` may be omitted when
    the .npz holds one array), with the bounds of :func:`read_npy` / :class:`NpzReader`."""
    if array_file_kind(path) == "npy":
        if name is not None:
            raise _refuse(path, name, "is an .npy file (one array): name no array key")
        return read_npy(path, check=check)
    with NpzReader(path) as z:
        if name is None:
            if len(z.names) != 1:
                raise _refuse(path, sorted(z.names)[:8], "holds several arrays: name one (FILE.npz:KEY)")
            name = z.names[0]
        return z.read(name, check)
