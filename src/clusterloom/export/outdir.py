"""An output directory as a transaction: ``-o out`` holds the whole previous run or the whole
new one, never a mix and never a partial run, not even for an instant.

How a run is written (``output_run``):

1. **Lock.** ``.<name>.lock`` beside the target is locked with ``flock`` (released by the
   kernel when the process ends, also on ``kill -9``); a second run into the same target is
   refused at once with ``OutputError``.
2. **Clean up.** Leftovers of runs that were killed, ``.<name>.run-*`` (a run being written)
   and ``.<name>.old-*`` (a previous run being removed), are deleted: they are only ever made
   here, and the lock says that no run owns them.
3. **Check the target.** ``""``, the file-system root, the home directory, the working directory
   and its ancestors are refused. An existing target must be a directory that is empty or holds
   a clusterloom run (its ``manifest.json`` says so); anything else is refused unless
   ``force``, which moves the directory aside to ``<name>.moved-<n>`` (never deletes it).
4. **Write** every file into a fresh staging directory ``.<name>.run-<token>`` beside the
   target (same file system); ``manifest.json`` (every file's size and SHA-256, the spec hash,
   the version) is written last.
5. **Switch** in one step: on Linux ``renameat2(RENAME_EXCHANGE)`` swaps the staging directory
   and the target atomically; the previous run, now under the staging name, is renamed to
   ``.<name>.old-<token>`` and removed. Where the exchange is not available (another OS, a file
   system without it) the target is renamed aside and the new run renamed in: two renames, so
   there is an instant with no target, but still never a mix.

If anything fails before the switch, the staging directory is removed and the target is
untouched. The manifest lists no dates or timings, so the same inputs give the same bytes.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from clusterloom.atomic import StrPath, atomic_write
from clusterloom.errors import OutputError

__all__ = [
    "MANIFEST",
    "OutputRun",
    "locked",
    "output_run",
    "read_manifest",
    "relative",
    "verify_run",
]

#: the file every run writes last, and by which a directory is known as a clusterloom run
MANIFEST = "manifest.json"
_KIND = "clusterloom-run"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@dataclass(frozen=True)
class OutputRun:
    """The run being written: files go under ``staging``; ``target`` is where it will appear."""

    target: Path
    staging: Path


def _refuse(target: str, why: str) -> OutputError:
    return OutputError(f"-o {target}: {why}")


def _check_target(given: StrPath) -> Path:
    text = os.fspath(given)
    if text.strip() == "":
        raise _refuse(repr(text), "an empty path; name the output directory, e.g. -o out")
    target = Path(text).expanduser()
    if target.is_symlink():
        target = target.resolve()
    target = Path(os.path.abspath(target))
    home = None
    if target == Path(target.anchor):
        raise _refuse(text, "is the file-system root; name a directory of its own, e.g. -o out")
    with contextlib.suppress(RuntimeError, KeyError):  # no home directory is known
        home = Path.home().resolve()
    if target == home:
        raise _refuse(text, "is the home directory; name a directory of its own, e.g. -o out")
    cwd = Path.cwd().resolve()
    if target.resolve() == cwd or target.resolve() in cwd.parents:
        raise _refuse(text, "holds the working directory; name a directory of its own, e.g. -o out")
    if target.exists() and not target.is_dir():
        raise _refuse(text, "is a file, not a directory; remove it or name another directory")
    return target


def read_manifest(directory: StrPath) -> dict[str, object] | None:
    """The manifest of a clusterloom run in ``directory``, or None when it is not one."""
    try:
        data = json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("kind") == _KIND else None


def _is_ours_or_empty(directory: Path) -> bool:
    try:
        empty = next(directory.iterdir(), None) is None
    except OSError as exc:
        raise _refuse(str(directory), f"cannot be read: {exc.strerror or exc}") from exc
    return empty or read_manifest(directory) is not None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _manifest(staging: Path, spec_hash: str, version: str) -> str:
    files = sorted(p for p in staging.rglob("*") if p.is_file())
    entries = [
        {"path": p.relative_to(staging).as_posix(), "bytes": p.stat().st_size, "sha256": _sha256(p)}
        for p in files
    ]
    document = {
        "kind": _KIND,
        "clusterloom_version": version,
        "spec_hash": spec_hash,
        "files": entries,
    }
    return json.dumps(document, indent=1) + "\n"


def verify_run(directory: StrPath) -> list[str]:
    """What is wrong with the run in ``directory`` against its manifest: files missing, extra,
    or of another size or hash. An empty list means the run is whole."""
    root = Path(directory)
    manifest = read_manifest(root)
    if manifest is None:
        return [f"{root}: no clusterloom manifest"]
    listed = manifest.get("files")
    problems: list[str] = []
    seen = {MANIFEST}
    for entry in listed if isinstance(listed, list) else []:
        rel = str(entry["path"])
        seen.add(rel)
        path = root / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
        elif path.stat().st_size != entry["bytes"] or _sha256(path) != entry["sha256"]:
            problems.append(f"{rel}: differs from the manifest")
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel not in seen:
            problems.append(f"{rel}: not in the manifest")
    return problems


@cache
def _renameat2() -> Any:
    """libc's ``renameat2`` (glibc 2.28+), or None where there is none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        fn = ctypes.CDLL(name, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` atomically; False where the system cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _moved_aside(target: Path) -> Path:
    for n in range(1, 10_000):
        candidate = target.with_name(f"{target.name}.moved-{n}")
        if not candidate.exists():
            return candidate
    raise _refuse(str(target), "too many moved-aside copies beside it; remove some")


def _switch(staging: Path, target: Path, token: str) -> None:
    old = target.with_name(f".{target.name}.old-{token}")
    if not target.exists():
        os.rename(staging, target)
    elif _exchange(staging, target):
        os.rename(staging, old)  # the previous run, now under the staging name
    else:
        os.rename(target, old)
        os.rename(staging, target)
    _fsync_dir(target.parent)
    _remove_tree(old)


@contextlib.contextmanager
def locked(target: Path) -> Iterator[None]:
    """``.<name>.lock`` beside ``target`` held (``flock``) for the block; a second holder is
    refused at once (``OutputError``). Also the lock of a sweep's append-only dataset."""
    lock = target.with_name(f".{target.name}.lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _refuse(str(target), f"cannot lock: {exc.strerror or exc}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _refuse(
                str(target), "another clusterloom run is writing here; wait for it to finish"
            ) from None
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _clean_leftovers(target: Path) -> None:
    for prefix in (f".{target.name}.run-", f".{target.name}.old-"):
        for path in target.parent.glob(f"{_glob_escape(prefix)}*"):
            if path.is_dir() and not path.is_symlink():
                _remove_tree(path)


def _glob_escape(text: str) -> str:
    """``text`` with glob's special characters taken literally."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


@contextlib.contextmanager
def output_run(
    target: StrPath, *, spec_hash: str = "", version: str = "", force: bool = False
) -> Iterator[OutputRun]:
    """Write a run into ``target`` as a transaction (see the module docstring). Files go under
    the yielded run's ``staging``; when the block ends without an exception the manifest is
    written and the target is switched to the new run.

    Raises ``OutputError`` for a target that cannot be used, a concurrent run, or a failed
    write; the target is then as it was.
    """
    path = _check_target(target)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _refuse(str(target), f"cannot create its parent: {exc.strerror or exc}") from exc
    with locked(path):
        _clean_leftovers(path)
        if path.exists() and not _is_ours_or_empty(path):
            if not force:
                raise _refuse(
                    str(target),
                    "holds files that are not a clusterloom run; name another directory, or "
                    "pass --force to move them aside (nothing is deleted)",
                )
            os.rename(path, _moved_aside(path))
        token = f"{os.getpid()}-{secrets.token_hex(4)}"
        staging = path.with_name(f".{path.name}.run-{token}")
        try:
            staging.mkdir(mode=0o777)
        except OSError as exc:
            raise _refuse(str(target), f"cannot create a directory: {exc.strerror}") from exc
        try:
            yield OutputRun(path, staging)
            atomic_write(staging / MANIFEST, _manifest(staging, spec_hash, version))
            _fsync_dir(staging)
            _switch(staging, path, token)
        except BaseException as exc:
            _remove_tree(staging)
            if isinstance(exc, OSError):
                raise _refuse(str(target), f"cannot write: {exc.strerror or exc}") from exc
            raise


def relative(paths: Sequence[Path], run: OutputRun) -> list[str]:
    """The written ``paths`` relative to the run, as the target will show them."""
    return [p.relative_to(run.staging).as_posix() for p in paths]
