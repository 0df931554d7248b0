"""A sweep's results on disk: the append-only dataset of DESIGN.md's "Contracts".

::

    DIR/sweep.json                       what the last sweep into DIR ran (its runs and keys)
    DIR/parts/variant=V/transport=T/KEY.parquet   one finished task (hive-partitioned)
    DIR/manifest.json                    every part: path, key, rows, bytes, SHA-256 (sorted)
    DIR/failed.json                      tasks that failed after their retries (this run)
    DIR/journal.jsonl                    one line per attempt started, finished or failed
    .DIR.lock                            held while a sweep writes (``flock``)

Each part and the manifest are written atomically (``clusterloom.atomic``): a part is there
whole or not at all, so a killed sweep keeps every finished part, and the parts on disk, not
the manifest, say what is done (a kill between a part and its manifest loses nothing; the next
open lists it, and removes the temporary file of a part the kill cut short). Parts are named by
their task's content-addressed key, so the same sweep gives the same files on any executor, in
any completion order; a changed sweep (more seeds, another transport) into the same directory
reuses every part whose key it still has. The journal is the one file that depends on timing;
it records, not decides.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from clusterloom._version import __version__
from clusterloom.atomic import atomic_write
from clusterloom.errors import OutputError
from clusterloom.export.outdir import locked

__all__ = ["Dataset", "open_dataset", "read_parts"]

_KIND = "clusterloom-sweep"


def _parquet_bytes(table: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return bytes(sink.getvalue().to_pybytes())


def _entry(root: Path, path: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    data = path.read_bytes()
    return {
        "path": path.relative_to(root).as_posix(),
        "key": path.stem,
        "rows": pq.ParquetFile(path).metadata.num_rows,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


class Dataset:
    """An open, locked dataset (module docstring); made by :func:`open_dataset`."""

    def __init__(self, root: Path, sweep: Mapping[str, Any]) -> None:
        self.root = root
        self._sweep = json.dumps(
            {"kind": _KIND, "clusterloom_version": __version__, **sweep}, indent=1, sort_keys=True
        )
        self._entries: dict[str, dict[str, Any]] = {}
        self._journal: Any = None

    def _start(self) -> None:
        # a writer killed mid-write leaves its temporary file (``.NAME.XXXX.tmp``, never a
        # part); the lock says no writer is alive, so they are removed before anything else
        for stale in sorted(self.root.rglob(".*.tmp")):
            stale.unlink(missing_ok=True)
        atomic_write(self.root / "sweep.json", self._sweep + "\n")
        for part in sorted((self.root / "parts").rglob("*.parquet")):
            e = _entry(self.root, part)
            self._entries[e["key"]] = e
        self._write_manifest()
        self._journal = (self.root / "journal.jsonl").open("a", encoding="utf-8")

    @property
    def done(self) -> frozenset[str]:
        """Keys of the tasks whose part is on disk."""
        return frozenset(self._entries)

    def log(self, event: str, key: str, attempt: int, error: str = "") -> None:
        """One line of the journal (flushed, so a kill keeps it)."""
        line: dict[str, Any] = {"event": event, "key": key, "attempt": attempt}
        if error:
            line["error"] = error
        self._journal.write(json.dumps(line) + "\n")
        self._journal.flush()

    def add(self, key: str, partition: Mapping[str, str], table: Any) -> Path:
        """Write ``table`` as the part of ``key`` under ``partition`` (hive directories), then
        the manifest."""
        sub = Path("parts", *(f"{k}={v}" for k, v in partition.items()), f"{key}.parquet")
        path = atomic_write(self.root / sub, _parquet_bytes(table))
        self._entries[key] = _entry(self.root, path)
        self._write_manifest()
        return path

    def fail(self, failed: list[dict[str, Any]]) -> None:
        """Record the tasks that failed after their retries (empty: none)."""
        atomic_write(self.root / "failed.json", json.dumps(failed, indent=1) + "\n")

    def _write_manifest(self) -> None:
        parts = sorted(self._entries.values(), key=lambda e: e["path"])
        doc = {"kind": _KIND, "clusterloom_version": __version__, "parts": parts}
        atomic_write(self.root / "manifest.json", json.dumps(doc, indent=1) + "\n")

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()


@contextlib.contextmanager
def open_dataset(directory: str | Path, sweep: Mapping[str, Any]) -> Iterator[Dataset]:
    """The dataset in ``directory`` (created if missing), locked until the block ends; a
    directory locked by a running sweep is refused (``OutputError``)."""
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise OutputError(f"{root}: is a file, not a sweep directory")
    root.mkdir(parents=True, exist_ok=True)
    with locked(root):
        ds = Dataset(root, sweep)
        try:
            ds._start()
            yield ds
        finally:
            ds.close()


def read_parts(directory: str | Path) -> Any:
    """Every part of the dataset in ``directory`` as one ``pyarrow.Table``, rows by key."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = sorted(Path(directory, "parts").rglob("*.parquet"))
    tables = [pq.read_table(p, partitioning=None) for p in parts]
    if not tables:
        return None
    return pa.concat_tables(tables).sort_by("key")
