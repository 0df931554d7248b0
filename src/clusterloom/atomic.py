"""Atomic file output: a reader sees the old file or the complete new one, never a torn write.

Data goes to a temporary file in the target's directory (same file system, so the rename is
atomic), is flushed and fsynced, and is then renamed over the target with ``os.replace``. If
anything fails before the rename, the temporary file is removed and the target is untouched.
``OSError`` is translated into ``OutputError`` naming the path.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TextIO, overload

from clusterloom.errors import OutputError

StrPath = str | os.PathLike[str]


@cache
def _file_mode() -> int:
    """Permissions a plain ``open(path, "w")`` would give: 0o666 minus the process umask
    (``mkstemp`` creates 0o600 files, too strict for shared outputs). Linux reports the umask
    in ``/proc``; elsewhere it is read by setting and restoring it, once per process."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; not every platform can open a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def _atomic(path: StrPath, mode: str, newline: str | None, encoding: str) -> Iterator[IO[Any]]:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"{target}: cannot create a file here: {_reason(exc)}") from exc
    tmp = Path(tmp_name)
    try:
        if "b" in mode:
            handle: IO[Any] = os.fdopen(fd, mode)
        else:
            handle = os.fdopen(fd, mode, encoding=encoding, newline=newline)
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _file_mode())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise OutputError(f"{target}: cannot write: {_reason(exc)}") from exc
        raise
    _fsync_directory(target.parent)


@overload
def atomic_open(
    path: StrPath, mode: Literal["w"] = "w", *, newline: str | None = "\n", encoding: str = "utf-8"
) -> contextlib.AbstractContextManager[TextIO]: ...


@overload
def atomic_open(
    path: StrPath, mode: Literal["wb"], *, newline: str | None = "\n", encoding: str = "utf-8"
) -> contextlib.AbstractContextManager[BinaryIO]: ...


def atomic_open(
    path: StrPath, mode: str = "w", *, newline: str | None = "\n", encoding: str = "utf-8"
) -> contextlib.AbstractContextManager[IO[Any]]:
    """Open ``path`` for writing, atomically: the file appears under its name only when the
    ``with`` block ends without an exception. Text mode (``"w"``) writes UTF-8 and, by default,
    ``"\\n"`` line ends on every platform; ``"wb"`` writes bytes. Parent directories are created.

    Raises ``OutputError`` when the file cannot be created or written.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode 'w' or 'wb', not {mode!r}")
    return _atomic(path, mode, newline, encoding)


def atomic_write(path: StrPath, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically; return the path."""
    if isinstance(data, bytes):
        with atomic_open(path, "wb") as fh:
            fh.write(data)
    else:
        with atomic_open(path, "w") as fh:
            fh.write(data)
    return Path(path)
