"""The content-addressed blob directory: each blob is a file named by the SHA-256 of its content
(``ab/abcdef...``), written to a temporary file beside it and renamed into place, so a blob is
whole or absent and the same content is stored once."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from clusterloom.errors import StoreError

_HEX = re.compile(r"[0-9a-f]{64}")
_BLOCK = 1 << 20


class Blobs:
    """Blobs under ``root`` (created when missing)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"blob directory {root}: cannot be created ({exc.strerror or exc}); "
                "set CLUSTERLOOM_BLOBS to a writable directory"
            ) from exc

    def path(self, sha256: str) -> Path:
        """Where the blob of ``sha256`` lives (a hash only: no other text reaches a path)."""
        if not _HEX.fullmatch(sha256):
            raise StoreError(f"not a blob hash: {sha256[:80]!r}")
        return self.root / sha256[:2] / sha256

    def has(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def put_file(self, source: Path) -> tuple[str, int]:
        """Copy ``source`` in (hashing as it copies); its ``(sha256, size)``."""
        with source.open("rb") as fh:
            return self._put(iter(lambda: fh.read(_BLOCK), b""))

    def put_bytes(self, data: bytes) -> tuple[str, int]:
        return self._put(iter((data,)))

    def _put(self, chunks: Iterator[bytes]) -> tuple[str, int]:
        digest = hashlib.sha256()
        size = 0
        fd, tmp = tempfile.mkstemp(prefix=".in-", dir=self.root)
        try:
            with os.fdopen(fd, "wb") as fh:
                for chunk in chunks:
                    digest.update(chunk)
                    size += len(chunk)
                    fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
            sha = digest.hexdigest()
            target = self.path(sha)
            if target.is_file() and target.stat().st_size == size:
                os.unlink(tmp)  # stored already: the same content once
                os.utime(target)  # in use again: gc's grace period starts anew
            else:
                target.parent.mkdir(exist_ok=True)
                os.replace(tmp, target)
            return sha, size
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def stored(self) -> dict[str, int]:
        """Every blob in the directory: hash -> size (temporary files left out)."""
        found: dict[str, int] = {}
        for sub in self.root.iterdir():
            if not sub.is_dir() or len(sub.name) != 2:
                continue
            for blob in sub.iterdir():
                if _HEX.fullmatch(blob.name) and blob.name[:2] == sub.name:
                    found[blob.name] = blob.stat().st_size
        return found

    def remove(self, sha256: str) -> int:
        """Delete one blob and what is derived from it (files beside it named ``<sha>.<what>``,
        such as a table's vocabulary); the bytes freed (0 when it was not there)."""
        target = self.path(sha256)
        for derived in target.parent.glob(f"{sha256}.*"):
            derived.unlink(missing_ok=True)
        try:
            size = target.stat().st_size
            target.unlink()
        except FileNotFoundError:
            return 0
        return size
