"""A telemetry store: Parquet parts in a directory, queried with DuckDB (issue 23, item 1).

Layout under the store's directory (each part a Parquet file in the model's schema)::

    store.json                          format and the retention it keeps
    raw/{counters,rates,probes,collectives}/2026-12-01T19/part-00000001.parquet
    1m/{counters,rates,probes}/2026-12-01T19/rollup.parquet
    1h/{counters,rates,probes}/2026-12-01T19/rollup.parquet
    state/last.parquet                  each interface's latest counter sample

Parts are partitioned by the UTC hour of their rows' ``ts_ms``. Appends are atomic per
batch (one ``add_*`` call, one file of :meth:`TelemetryStore.add_files`): its parts are written
under temporary names and fsynced, the renames recorded in a journal (``state/commit.json``)
and made, so a batch is all there or not at all (a crash after the journal is finished by the
next writer); one writer at a time (an advisory lock on ``.lock``).
:meth:`TelemetryStore.add_files` reads, checks and appends files with the reading, the rates
and the writing overlapped in three threads. Adding counters also adds their rates
(:func:`~clusterloom.ops.ingest.counter_rates`), the first interval of each interface running
from its latest stored sample (``state/last.parquet``), so a stream appended in pieces has the
same rates as one appended whole; a counter sample not after the interface's latest stored one
is refused with a note.

**Downsampling** (:meth:`TelemetryStore.downsample`, run by :meth:`enforce_retention`): every
raw hour is rolled into 1-minute and 1-hour buckets (a bucket ``[k*60 s, (k+1)*60 s)``):

- counters: the last sample of each interface in the bucket (with its own ``ts_ms``), so that
  rates over the coarser samples are exact over the coarser intervals;
- rates: per interface and bucket, each rate the average over the intervals that end in the
  bucket weighted by their ``seconds`` (over those where it is not null), ``seconds`` their sum,
  ``up`` the weighted share up, ``flaps`` the sum, ``ts_ms`` the last interval's end; with the
  samples contiguous this equals the rate between the bucket's last sample and the previous
  bucket's (tested);
- probes: per source and destination endpoint, EV and bucket: ``sent`` and ``lost`` summed,
  ``rtt_us`` the mean weighted by the probes that came back, ``rtt_max_us`` the largest,
  ``ts_ms`` the last interval's end;
- collectives are not rolled up (one row per rank and step is already sparse).

**Retention** (:class:`Retention`, kept in ``store.json``; defaults: raw 7 days, 1-minute 90
days, 1-hour 2 years, collectives 90 days): :meth:`enforce_retention` (``now_ms``) first rolls
up every raw hour not rolled since it last changed, then removes the hours whose end is older
than each resolution's horizon. A query reads one resolution (``raw``, ``1m`` or ``1h``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from clusterloom.atomic import _file_mode, _fsync_directory, atomic_open, atomic_write
from clusterloom.errors import OutputError, Problem, SpecError
from clusterloom.ops.fabric import OpsFabric
from clusterloom.ops.ingest import (
    Ingested,
    Kind,
    counter_rates_noted,
    guess_kind,
    interface_codes,
    latest_samples,
    read_telemetry,
)
from clusterloom.ops.model import COLLECTIVE_SCHEMA, COUNTER_SCHEMA, PROBE_SCHEMA, RATE_SCHEMA
from clusterloom.units import BPS_PER_GBPS

__all__ = [
    "Added",
    "Resolution",
    "Retention",
    "Stored",
    "TelemetryStore",
    "summarise_rates",
    "system_pool",
]

Resolution = Literal["raw", "1m", "1h"]
Table = Literal["counters", "rates", "probes", "collectives"]

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
DAY_MS = 24 * HOUR_MS
FORMAT = 1

SCHEMAS: dict[str, pa.Schema] = {
    "counters": COUNTER_SCHEMA,
    "rates": RATE_SCHEMA,
    "probes": PROBE_SCHEMA,
    "collectives": COLLECTIVE_SCHEMA,
}
#: the columns that name a series, per table (rows are sorted by them and time)
SERIES: dict[str, tuple[str, ...]] = {
    "counters": ("device", "interface"),
    "rates": ("device", "interface"),
    "probes": ("src_device", "src_interface", "dst_device", "dst_interface", "ev"),
    "collectives": ("job", "rank", "collective", "step"),
}
BUCKET_MS: dict[str, int] = {"1m": MINUTE_MS, "1h": HOUR_MS}
#: the memory DuckDB may use for a rollup (it spills to ``state/spill`` beyond it)
ROLLUP_MEMORY = "1GB"
#: the journal of the batch being committed (see ``TelemetryStore._recover``)
JOURNAL = "state/commit.json"
#: columns added to the schemas since the store's format 1: parts written before lack them,
#: and read them as null
OPTIONAL = frozenset({"speed_bps", "retransmissions"})


@dataclass(frozen=True)
class Retention:
    """How long each resolution is kept, in days (raw samples, 1-minute and 1-hour rollups,
    collective timings)."""

    raw_days: float = 7.0
    minute_days: float = 90.0
    hour_days: float = 730.0
    collective_days: float = 90.0

    def __post_init__(self) -> None:
        bad = [
            Problem(f"retention.{k}", f"must be a positive number of days, not {v!r}")
            for k, v in asdict(self).items()
            if not (isinstance(v, int | float) and v > 0)
        ]
        if not bad and not (self.raw_days <= self.minute_days <= self.hour_days):
            bad.append(
                Problem("retention", "keep raw <= 1-minute <= 1-hour days (coarser lives longer)")
            )
        if bad:
            raise SpecError(bad)


@dataclass(frozen=True)
class Added:
    """What an append stored: rows per table (``rates`` too, for counters) and notes (samples
    refused as not newer than the stored ones, counter resets)."""

    rows: int
    rates: int = 0
    notes: tuple[Problem, ...] = ()


@dataclass(frozen=True)
class Stored:
    """One file of :meth:`TelemetryStore.add_files`: its path and kind, the rows it held,
    the problems of its bad rows (not stored) and what was appended."""

    source: str
    kind: str
    rows_read: int
    problems: tuple[Problem, ...]
    added: Added


def _hour_name(hour: int) -> str:
    return datetime.fromtimestamp(hour * 3600, UTC).strftime("%Y-%m-%dT%H")


def _hour_of(name: str) -> int | None:
    try:
        dt = datetime.strptime(name, "%Y-%m-%dT%H").replace(tzinfo=UTC)
    except ValueError:
        return None
    return int(dt.timestamp()) // 3600


def _write_batches(path: Path, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
    """:func:`_write` of a stream of record batches (cast to ``schema``), never held whole."""
    names = [f.name for f in schema if pa.types.is_string(f.type)]
    with atomic_open(path, "wb") as fh:
        writer = pq.ParquetWriter(
            fh, schema, compression="zstd", compression_level=1, use_dictionary=names
        )
        try:
            for b in batches:
                writer.write_table(pa.Table.from_batches([b]).cast(schema), row_group_size=1 << 20)
        finally:
            writer.close()


@contextlib.contextmanager
def system_pool() -> Iterator[None]:
    """Arrow's allocations in the block on the C library's allocator (``malloc``) rather
    than its default (mimalloc in the wheels), the previous pool restored after. Measured on
    the 16k ingest (two counter and two probe files, 2 cores): 11.3 s of CPU, 5.2 s of it in
    the kernel, on mimalloc; 8.8 s and 2.5 s on malloc. The difference is mimalloc giving
    freed pages back to the kernel and faulting them in again (``minflt``/``madvise``) as
    files of 3-6M rows are read, checked, turned into rates and written by three threads.
    Buffers keep the pool they came from, so switching is safe; the switch is process-wide
    while the block runs."""
    before = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(before)


def _will_need(path: Path) -> None:
    """Ask the kernel to read ``path`` into the page cache in the background (a file read
    next: the disk works while the CPU does)."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
        finally:
            os.close(fd)


def _stage(path: Path, table: pa.Table) -> Path:
    """Write ``table`` as :func:`_write` does, to a temporary file beside ``path``, fsynced;
    the temporary file's path (removed when the write fails)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"{path}: cannot create a file here: {exc.strerror or exc}") from exc
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            _encode(fh, table)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _file_mode())
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
        raise
    return tmp


def _encode(fh: Any, table: pa.Table) -> None:
    names = [f.name for f in table.schema if pa.types.is_string(f.type)]
    # dictionaries for the names only (numbers rarely repeat), light zstd
    pq.write_table(
        table,
        fh,
        compression="zstd",
        compression_level=1,
        use_dictionary=names,
        row_group_size=1 << 20,
    )


class TelemetryStore:
    """Telemetry of one design's fabric kept in ``path`` (created when missing). ``fabric``
    is needed to add counters (their rates name links); ``retention`` is recorded when the
    store is created (a different one given later replaces it)."""

    def __init__(
        self,
        path: Path | str,
        fabric: OpsFabric | None = None,
        *,
        retention: Retention | None = None,
    ) -> None:
        self.path = Path(path)
        self.fabric = fabric
        meta = self.path / "store.json"
        if self.path.exists() and not self.path.is_dir():
            raise SpecError([Problem(str(self.path), "not a directory (a telemetry store is one)")])
        if meta.is_file():
            try:
                doc = json.loads(meta.read_text())
                if doc.get("format") != FORMAT:
                    raise ValueError(f"format {doc.get('format')!r}, this version reads {FORMAT}")
                kept = Retention(**doc["retention"])
            except (ValueError, KeyError, TypeError) as exc:
                raise SpecError(
                    [Problem(str(meta), f"not a telemetry store's store.json: {exc}")]
                ) from exc
            if retention is not None and retention != kept:
                self._save_meta(retention)
                kept = retention
            self.retention = kept
        else:
            if self.path.is_dir() and any(self.path.iterdir()):
                raise SpecError(
                    [Problem(str(self.path), "a directory that is not a telemetry store")]
                )
            self.retention = retention or Retention()
            self._save_meta(self.retention)

    def _save_meta(self, retention: Retention) -> None:
        doc = {"format": FORMAT, "retention": asdict(retention)}
        atomic_write(self.path / "store.json", json.dumps(doc, indent=2, sort_keys=True) + "\n")

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        try:
            fh = open(self.path / ".lock", "a")  # noqa: SIM115 (held for the block)
        except OSError as exc:
            raise OutputError(f"{self.path}: cannot lock the store: {exc}") from exc
        try:
            fcntl.flock(fh, fcntl.LOCK_EX)
            self._recover()  # a batch a crash left half renamed is finished first
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()

    # -- appends -----------------------------------------------------------------------
    #
    # Every append is a batch: its parts (and, for counters, the new ``state/last.parquet``)
    # are written to temporary files beside their targets and fsynced, the renames are
    # recorded in a journal (``state/commit.json``, written atomically), then made, the
    # directories fsynced once and the journal removed. A crash before the journal leaves
    # only temporary files (never read); after it, the next writer finishes the renames
    # (:meth:`_recover`): a batch is all there or not at all.

    def _recover(self) -> None:
        """Finish the renames of a batch whose journal survived a crash (under the lock)."""
        journal = self.path / JOURNAL
        if not journal.is_file():
            return
        try:
            pairs = [(str(a), str(b)) for a, b in json.loads(journal.read_text())]
        except (ValueError, TypeError) as exc:
            raise SpecError(
                [Problem(str(journal), f"not a telemetry store's commit journal: {exc}")]
            ) from exc
        done: set[Path] = set()
        for tmp, final in pairs:
            if (self.path / tmp).is_file():
                os.replace(self.path / tmp, self.path / final)
                done.add((self.path / final).parent)
        for d in sorted(done):
            _fsync_directory(d)
        journal.unlink()

    def _commit(self, staged: Sequence[tuple[Path, Path]]) -> None:
        """Make the staged ``(temporary, target)`` files visible as one batch."""
        if not staged:
            return
        doc = [[str(t.relative_to(self.path)), str(f.relative_to(self.path))] for t, f in staged]
        try:
            atomic_write(self.path / JOURNAL, json.dumps(doc) + "\n")
        except BaseException:  # no journal: the batch is not there, nor its temporary files
            for tmp, _ in staged:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            raise
        try:
            for tmp, final in staged:
                os.replace(tmp, final)
            for d in sorted({f.parent for _, f in staged}):
                _fsync_directory(d)
            (self.path / JOURNAL).unlink()
        except OSError as exc:
            raise OutputError(
                f"{self.path}: a batch's renames failed ({exc}); the next write to the store "
                "finishes them"
            ) from exc

    def _write_batch(self, parts: Sequence[tuple[Path, pa.Table]]) -> None:
        """Stage ``parts`` (two at a time: Parquet encoding releases the GIL), then commit
        them. A failure while staging leaves nothing of the batch (its temporary files are
        removed); once the journal is written the batch is whole: a failed rename leaves the
        journal for the next writer to finish (:meth:`_recover`)."""
        staged: list[tuple[Path, Path]] = []
        try:
            if len(parts) == 1:
                staged.append((_stage(*parts[0]), parts[0][0]))
            else:
                with ThreadPoolExecutor(max_workers=2) as pool:
                    futures = [(pool.submit(_stage, path, t), path) for path, t in parts]
                    for fut, path in futures:  # every one awaited, so none is left behind
                        with contextlib.suppress(Exception):
                            staged.append((fut.result(), path))
                    for fut, _ in futures:
                        fut.result()  # the first failure, raised
        except BaseException:
            for tmp, _ in staged:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            raise
        self._commit(staged)

    def _parts(
        self, kind: str, table: pa.Table, seqs: dict[Path, int]
    ) -> list[tuple[Path, pa.Table]]:
        """``table`` (in ``kind``'s schema) as one new part per hour it touches; ``seqs``
        the next part number per hour folder (found on disk the first time)."""
        if table.num_rows == 0:
            return []
        hours = np.asarray(table.column("ts_ms").to_numpy(), dtype=np.int64) // HOUR_MS
        out: list[tuple[Path, pa.Table]] = []
        for hour in np.unique(hours).tolist():
            part = table.filter(pa.array(hours == hour)) if hours.min() != hours.max() else table
            folder = self.path / "raw" / kind / _hour_name(hour)
            if folder not in seqs:
                seqs[folder] = 1 + max(
                    (int(p.stem.split("-")[1]) for p in folder.glob("part-*.parquet")), default=0
                )
            out.append((folder / f"part-{seqs[folder]:08d}.parquet", part))
            seqs[folder] += 1
        return out

    def _checked(self, kind: str, table: pa.Table) -> pa.Table:
        schema = SCHEMAS[kind]
        try:
            for f in schema:  # an optional column added since (the speed): null
                if f.nullable and f.name in OPTIONAL and f.name not in table.column_names:
                    table = table.append_column(f, pa.nulls(table.num_rows, f.type))
            return table.select(schema.names).cast(schema)
        except (KeyError, pa.ArrowInvalid, ValueError) as exc:
            raise SpecError(
                [Problem(kind, f"not a {kind} table in the model's schema: {exc}")]
            ) from exc

    def _last(self) -> pa.Table:
        last_path = self.path / "state" / "last.parquet"
        if last_path.is_file():
            return self._checked("counters", pq.read_table(last_path))
        return COUNTER_SCHEMA.empty_table()

    def _counter_batch(
        self, table: pa.Table, last: pa.Table, seqs: dict[Path, int]
    ) -> tuple[list[tuple[Path, pa.Table]], Added, pa.Table]:
        """The parts of appending counter samples (``table``, checked) to a store whose
        interfaces' latest samples are ``last``: the counters', their rates' and the new
        ``state/last.parquet``; what they add; the new latest samples."""
        assert self.fabric is not None
        code = interface_codes(table, self.fabric)
        last_code = interface_codes(last, self.fabric)
        width = 2 * int(self.fabric.topology.n_links)
        latest = np.full(width, np.iinfo(np.int64).min, dtype=np.int64)
        known = last_code >= 0
        latest[last_code[known]] = np.asarray(last.column("ts_ms"), dtype=np.int64)[known]
        ts = np.asarray(table.column("ts_ms"), dtype=np.int64)
        stale = (code >= 0) & (ts <= latest[np.maximum(code, 0)])
        notes: list[Problem] = []
        if stale.any():
            rows_stale = np.flatnonzero(stale)
            for r in rows_stale[:1000].tolist():
                notes.append(
                    Problem(
                        f"{table.column('device')[r]}:{table.column('interface')[r]} at {ts[r]}",
                        f"not after the latest stored sample ({latest[code[r]]}): not stored",
                    )
                )
            if len(rows_stale) > 1000:
                notes.append(Problem("counters", f"and {len(rows_stale) - 1000:,} more"))
            table = table.filter(pa.array(~stale))
            code = code[~stale]
        # the interfaces' latest stored samples, then the new ones: their rates
        present = np.zeros(width + 1, dtype=np.bool_)
        present[code] = True  # code -1 marks the spare last slot
        before = last.filter(pa.array(present[last_code]))
        rates, resets = counter_rates_noted(pa.concat_tables([before, table]), self.fabric)
        notes.extend(resets)
        newest = latest_samples(pa.concat_tables([last, table]), np.concatenate([last_code, code]))
        parts = self._parts("counters", table, seqs) + self._parts("rates", rates, seqs)
        parts.append((self.path / "state" / "last.parquet", newest))
        return parts, Added(int(table.num_rows), int(rates.num_rows), tuple(notes)), newest

    def add_counters(self, table: pa.Table) -> Added:
        """Append counter samples (checked ones: ``ops.ingest``'s readers keep only those)
        and their rates, as one batch (all or nothing). A sample not after its interface's
        latest stored one is refused with a note."""
        if self.fabric is None:
            raise SpecError([Problem(str(self.path), "adding counters needs the design's fabric")])
        table = self._checked("counters", table)
        with self._lock():
            parts, added, _ = self._counter_batch(table, self._last(), {})
            self._write_batch(parts)
        return added

    def _add(self, kind: str, table: pa.Table) -> Added:
        table = self._checked(kind, table)
        with self._lock():
            parts = self._parts(kind, table, {})
            self._write_batch(parts)
        return Added(int(table.num_rows))

    def add_probes(self, table: pa.Table) -> Added:
        """Append probe rows (``PROBE_SCHEMA``), as one batch."""
        return self._add("probes", table)

    def add_collectives(self, table: pa.Table) -> Added:
        """Append collective timings (``COLLECTIVE_SCHEMA``), as one batch."""
        return self._add("collectives", table)

    def add_files(self, sources: Sequence[Path | str], *, fmt: str | None = None) -> list[Stored]:
        """Read, check and append telemetry files in order (each file's kind from
        :func:`~clusterloom.ops.ingest.guess_kind`), one batch per file, the three stages
        overlapped: a reader thread reads and checks the next file while this thread works
        out the current one's rates and a writer thread encodes, fsyncs and commits the one
        before (pyarrow and numpy release the GIL for most of it, so both cores work and the
        disk's waits hide behind the CPU); the file after the next is read ahead into the
        page cache (``posix_fadvise``), and Arrow allocates from ``malloc`` meanwhile
        (:func:`system_pool`). The rows stored are exactly those of
        ``read_telemetry`` and ``add_counters``/``add_probes``/``add_collectives`` file by file
        (tested). A file that cannot be read (``SpecError``) stops the ingest there: the files
        before it are stored, nothing of it or after it is. At most three files are held in
        memory at once."""
        paths = [Path(s) for s in sources]
        fabric = self.fabric
        if fabric is None:  # probes and collectives are checked against a design too
            raise SpecError([Problem(str(self.path), "adding files needs the design's fabric")])
        out: list[Stored] = []
        with (
            system_pool(),
            self._lock(),
            ThreadPoolExecutor(max_workers=1) as reader,
            ThreadPoolExecutor(max_workers=1) as writer,
        ):
            last: pa.Table | None = None
            seqs: dict[Path, int] = {}

            def read(i: int) -> tuple[Kind, Ingested]:
                if i + 1 < len(paths):
                    _will_need(paths[i + 1])
                kind = guess_kind(paths[i], fmt=fmt)
                return kind, read_telemetry(kind, paths[i], fabric, fmt=fmt)

            ahead: Future[tuple[Kind, Ingested]] | None = reader.submit(read, 0) if paths else None
            wrote: Future[None] | None = None
            try:
                for i, path in enumerate(paths):
                    assert ahead is not None
                    kind, got = ahead.result()
                    ahead = reader.submit(read, i + 1) if i + 1 < len(paths) else None
                    table = self._checked(kind, got.table)
                    if kind == "counters":
                        if last is None:
                            last = self._last()
                        parts, added, last = self._counter_batch(table, last, seqs)
                    else:
                        parts, added = self._parts(kind, table, seqs), Added(table.num_rows)
                    stored = Stored(str(path), kind, got.rows_read, got.problems, added)
                    del got, table
                    if wrote is not None:
                        pending, wrote = wrote, None
                        pending.result()  # the batch before is committed (or its error raised)
                    wrote = writer.submit(self._write_batch, parts)
                    del parts
                    out.append(stored)
                if wrote is not None:
                    pending, wrote = wrote, None
                    pending.result()
            finally:
                if ahead is not None:
                    ahead.cancel()
                if wrote is not None:  # an error above: the batch in flight still ends whole
                    with contextlib.suppress(Exception):
                        wrote.result()
        return out

    # -- queries -------------------------------------------------------------------------

    def hours(self, kind: str, resolution: Resolution = "raw") -> list[int]:
        """The UTC hours (``ts_ms // 3600000``) holding rows of ``kind`` at ``resolution``."""
        folder = self.path / resolution / kind
        if not folder.is_dir():
            return []
        return sorted(h for p in folder.iterdir() if (h := _hour_of(p.name)) is not None)

    def _files(
        self, kind: str, resolution: Resolution, start_ms: int | None, end_ms: int | None
    ) -> list[str]:
        out: list[str] = []
        for hour in self.hours(kind, resolution):
            lo, hi = hour * HOUR_MS, (hour + 1) * HOUR_MS
            if (start_ms is not None and hi <= start_ms) or (end_ms is not None and lo >= end_ms):
                continue
            folder = self.path / resolution / kind / _hour_name(hour)
            out.extend(str(p) for p in sorted(folder.glob("*.parquet")))
        return out

    def query(
        self,
        kind: Table,
        start_ms: int | None = None,
        end_ms: int | None = None,
        *,
        resolution: Resolution = "raw",
        where: str | None = None,
        params: list[object] | None = None,
    ) -> pa.Table:
        """Rows of ``kind`` with ``start_ms <= ts_ms < end_ms`` at ``resolution``, sorted by
        time and series; ``where`` an extra SQL condition (with ``?`` ``params``)."""
        import duckdb

        schema = SCHEMAS[kind]
        if resolution not in ("raw", "1m", "1h"):
            raise SpecError([Problem("resolution", f"raw, 1m or 1h, not {resolution!r}")])
        if resolution != "raw" and kind == "collectives":
            raise SpecError([Problem("resolution", "collectives are kept raw only")])
        files = self._files(kind, resolution, start_ms, end_ms)
        if not files:
            return schema.empty_table()
        cond = ["TRUE"]
        args: list[object] = []
        if start_ms is not None:
            cond.append("ts_ms >= ?")
            args.append(int(start_ms))
        if end_ms is not None:
            cond.append("ts_ms < ?")
            args.append(int(end_ms))
        if where:
            cond.append(f"({where})")
            args.extend(params or [])
        order = ", ".join(("ts_ms", *SERIES[kind]))
        columns = ", ".join(f'"{c}"' for c in schema.names)
        with duckdb.connect() as con:
            src = _source(con, files, schema)
            sql = f"SELECT {columns} FROM {src} WHERE {' AND '.join(cond)} ORDER BY {order}"
            got = con.sql(sql, params=args).to_arrow_table()
        return _as_table(got).cast(schema)

    def _where(self, start_ms: int | None, end_ms: int | None) -> tuple[str, list[object]]:
        cond: list[str] = ["TRUE"]
        args: list[object] = []
        if start_ms is not None:
            cond.append("ts_ms >= ?")
            args.append(int(start_ms))
        if end_ms is not None:
            cond.append("ts_ms < ?")
            args.append(int(end_ms))
        return " AND ".join(cond), args

    def columns(
        self,
        kind: Table,
        names: Sequence[str],
        start_ms: int | None = None,
        end_ms: int | None = None,
        *,
        resolution: Resolution = "raw",
    ) -> pa.Table:
        """Only the columns ``names`` of ``kind``'s rows with ``start_ms <= ts_ms < end_ms``,
        in the order the parts hold them (hour by hour, each part sorted by time and series:
        deterministic, without a sort), typed as the schema: a narrow read for a long window
        (the rates' names and strings are not read)."""
        import duckdb

        schema = SCHEMAS[kind]
        unknown = [n for n in names if n not in schema.names]
        if unknown:
            raise SpecError([Problem("columns", f"not in the {kind} schema: {unknown}")])
        files = self._files(kind, resolution, start_ms, end_ms)
        want = pa.schema([schema.field(n) for n in names])
        if not files:
            return want.empty_table()
        cond, args = self._where(start_ms, end_ms)
        cols = ", ".join(f'"{n}"' for n in names)
        with duckdb.connect() as con:
            con.sql("SET threads TO 2")
            src = _source(con, files, schema)
            got = con.sql(f"SELECT {cols} FROM {src} WHERE {cond}", params=args).arrow()
        return _as_table(got).cast(want)

    def probe_series(
        self,
        start_ms: int | None = None,
        end_ms: int | None = None,
        *,
        resolution: Resolution = "raw",
    ) -> pa.Table:
        """The distinct probe series (source and destination endpoints, EV) with rows in the
        window, sorted."""
        import duckdb

        files = self._files("probes", resolution, start_ms, end_ms)
        names = list(SERIES["probes"])
        want = pa.schema([PROBE_SCHEMA.field(n) for n in names])
        if not files:
            return want.empty_table()
        cond, args = self._where(start_ms, end_ms)
        cols = ", ".join(names)
        with duckdb.connect() as con:
            con.sql("SET threads TO 2")
            src = _source(con, files, PROBE_SCHEMA)
            sql = f"SELECT DISTINCT {cols} FROM {src} WHERE {cond} ORDER BY {cols}"
            got = con.sql(sql, params=args).arrow()
        return _as_table(got).cast(want)

    def probe_values(
        self,
        series: pa.Table,
        start_ms: int | None = None,
        end_ms: int | None = None,
        *,
        resolution: Resolution = "raw",
        batch_rows: int = 1 << 20,
    ) -> tuple[int, Iterator[pa.RecordBatch]]:
        """The probe rows of the window without their names: how many, and record batches
        of ``ts_ms``, ``series`` (the row of ``series``, as :meth:`probe_series` gives it, that
        names the row; rows of other series are left out), ``sent``, ``lost`` and ``rtt_us``
        (float32), in no particular order: a caller that needs one sorts them."""
        import duckdb

        files = self._files("probes", resolution, start_ms, end_ms)
        if not files or series.num_rows == 0:
            return 0, iter(())
        cond, args = self._where(start_ms, end_ms)
        keys = list(SERIES["probes"])
        con = duckdb.connect()
        con.sql("SET threads TO 2")
        named = series.select(keys).append_column(
            "series", pa.array(np.arange(series.num_rows, dtype=np.int32))
        )
        con.register("series_names", named)
        src = _source(con, files, PROBE_SCHEMA)
        join = " AND ".join(f"p.{k} = s.{k}" for k in keys)
        body = (
            f"FROM {src} p JOIN series_names s ON {join} WHERE {cond.replace('ts_ms', 'p.ts_ms')}"
        )
        n = int(con.execute(f"SELECT count(*) {body}", args).fetchall()[0][0])
        reader = con.sql(
            "SELECT p.ts_ms, s.series, p.sent, p.lost, p.rtt_us::FLOAT AS rtt_us " + body,
            params=args,
        ).to_arrow_reader(batch_rows)

        def batches() -> Iterator[pa.RecordBatch]:
            try:
                yield from reader
            finally:
                con.close()

        return n, batches()

    def counters(
        self,
        start_ms: int | None = None,
        end_ms: int | None = None,
        *,
        resolution: Resolution = "raw",
    ) -> pa.Table:
        """Counter samples (``COUNTER_SCHEMA``)."""
        return self.query("counters", start_ms, end_ms, resolution=resolution)

    def rates(
        self,
        start_ms: int | None = None,
        end_ms: int | None = None,
        *,
        resolution: Resolution = "raw",
        device: str | None = None,
    ) -> pa.Table:
        """Rates (``RATE_SCHEMA``), of one device's interfaces when ``device`` is given."""
        if device is None:
            return self.query("rates", start_ms, end_ms, resolution=resolution)
        return self.query(
            "rates", start_ms, end_ms, resolution=resolution, where="device = ?", params=[device]
        )

    def probes(
        self,
        start_ms: int | None = None,
        end_ms: int | None = None,
        *,
        resolution: Resolution = "raw",
    ) -> pa.Table:
        """Probe rows (``PROBE_SCHEMA``)."""
        return self.query("probes", start_ms, end_ms, resolution=resolution)

    def collectives(self, start_ms: int | None = None, end_ms: int | None = None) -> pa.Table:
        """Collective timings (``COLLECTIVE_SCHEMA``)."""
        return self.query("collectives", start_ms, end_ms)

    # -- downsampling and retention -------------------------------------------------------

    def _rolled(self) -> dict[str, list[str]]:
        p = self.path / "state" / "rolled.json"
        if not p.is_file():
            return {}
        try:
            doc = json.loads(p.read_text())
        except ValueError:
            return {}
        return {str(k): list(v) for k, v in doc.items()} if isinstance(doc, dict) else {}

    def _is_rolled(
        self, rolled: dict[str, list[str]], key: str, res: str, parts: list[str]
    ) -> bool:
        return rolled.get(key) == parts or rolled.get(f"{key}/{res}") == parts

    def downsample(
        self,
        kinds: Sequence[str] = ("counters", "rates", "probes"),
        resolutions: Sequence[str] = ("1m", "1h"),
    ) -> int:
        """Roll every raw hour of ``kinds`` (counters, rates, probes) not rolled at a
        resolution of ``resolutions`` (``1m``, ``1h``) since it last changed into those
        rollups; the number of (kind, hour) partitions rolled. Only what is asked for is made
        (``kinds=("rates",), resolutions=("1m",))``, the rollup the localisation reads);
        the retention (:meth:`enforce_retention`) makes the rest."""
        import duckdb

        bad = [
            Problem("kinds", f"counters, rates or probes, not {k!r}")
            for k in kinds
            if k not in ("counters", "rates", "probes")
        ]
        bad += [
            Problem("resolutions", f"1m or 1h, not {r!r}")
            for r in resolutions
            if r not in BUCKET_MS
        ]
        if bad:
            raise SpecError(bad)
        every = set(resolutions) == set(BUCKET_MS)
        done = 0
        with self._lock(), duckdb.connect() as con:
            # one thread: the sums (weighted rates, RTTs) taken in the parts' row order, so a
            # rollup is the same to the bit run after run (and equals ``rate_rollup``'s)
            con.sql("SET threads TO 1")
            # a rollup of an hour of a large fabric (35M counter rows at 16k GPUs) is a
            # grouping and a sort: bounded, spilling to disk beyond it, the result streamed
            con.sql(f"SET memory_limit = '{ROLLUP_MEMORY}'")
            con.sql("SET preserve_insertion_order = false")
            spill = self.path / "state" / "spill"
            spill.mkdir(parents=True, exist_ok=True)
            con.execute("SET temp_directory = ?", [str(spill)])
            rolled = self._rolled()
            for kind in ("counters", "rates", "probes"):
                if kind not in kinds:
                    continue
                for hour in self.hours(kind, "raw"):
                    name = _hour_name(hour)
                    parts = sorted(
                        p.name for p in (self.path / "raw" / kind / name).glob("*.parquet")
                    )
                    key = f"{kind}/{name}"
                    todo = [
                        r
                        for r in ("1m", "1h")
                        if r in resolutions and not self._is_rolled(rolled, key, r, parts)
                    ]
                    if not todo:
                        continue
                    files = [str(self.path / "raw" / kind / name / p) for p in parts]
                    src = _source(con, files, SCHEMAS[kind])
                    for res in todo:
                        sql = _rollup_sql(kind, src, BUCKET_MS[res])
                        folder = self.path / res / kind / name
                        folder.mkdir(parents=True, exist_ok=True)
                        reader = con.sql(sql).to_arrow_reader(1 << 20)
                        _write_batches(folder / "rollup.parquet", SCHEMAS[kind], reader)
                        rolled[f"{key}/{res}"] = parts
                    if every or all(
                        self._is_rolled(rolled, key, r, parts) for r in BUCKET_MS
                    ):  # both resolutions current: one entry for the hour
                        rolled[key] = parts
                        for r in BUCKET_MS:
                            rolled.pop(f"{key}/{r}", None)
                    done += 1
            if done:  # the rollups are rewritten whole, so a crash before this only redoes them
                atomic_write(
                    self.path / "state" / "rolled.json",
                    json.dumps(rolled, indent=1, sort_keys=True) + "\n",
                )
        return done

    def rate_rollup(
        self,
        names: Sequence[str],
        start_ms: int | None = None,
        end_ms: int | None = None,
        *,
        resolution: Literal["1m", "1h"] = "1m",
    ) -> pa.Table:
        """The columns ``names`` (numbers only: ``link`` and ``end`` name the interface) of
        the rates' rollup at ``resolution`` over the window (the rolled rows with
        ``start_ms <= ts_ms < end_ms``), without a stored rollup: each hour whose raw rates
        are kept is grouped here, by ``link``, ``end`` and bucket, with the stored rollup's
        own aggregates over the rows in the same order (:meth:`downsample` need not have run:
        the same values, to the bit on an hour DuckDB groups in one piece; where it combines
        partial sums of a large hour, a few ulp apart: 4.2e-16 relative at 16k); an hour whose
        raw rates are gone (retention) is read from its stored rollup. Rows ordered by
        ``ts_ms``, ``link``, ``end`` (one row per interface and bucket: a total order).
        Each hour is one grouping of its own (a bucket never spans hours), in one DuckDB thread:
        the sums are taken in the parts' row order, so the result is the same run after run."""
        import duckdb

        if resolution not in BUCKET_MS:
            raise SpecError([Problem("resolution", f"1m or 1h, not {resolution!r}")])
        wrong = [n for n in names if n not in RATE_SCHEMA.names or n in ("device", "interface")]
        if wrong:
            raise SpecError(
                [Problem("columns", f"not numeric columns of the rates schema: {wrong}")]
            )
        want = pa.schema([RATE_SCHEMA.field(n) for n in names])
        raw = set(self.hours("rates", "raw"))
        hours = sorted(raw | set(self.hours("rates", resolution)))
        cond, args = self._where(start_ms, end_ms)
        cols = ", ".join(f'{_rate_agg(n)} AS "{n}"' for n in names)
        keep = ", ".join(f'"{n}"' for n in names)
        bucket = BUCKET_MS[resolution]
        out: list[pa.Table] = []
        with duckdb.connect() as con:
            con.sql("SET threads TO 1")  # the sums' order fixed: deterministic to the bit
            con.sql(f"SET memory_limit = '{ROLLUP_MEMORY}'")
            spill = self.path / "state" / "spill"
            spill.mkdir(parents=True, exist_ok=True)
            con.execute("SET temp_directory = ?", [str(spill)])
            for hour in hours:
                lo, hi = hour * HOUR_MS, (hour + 1) * HOUR_MS
                if (start_ms is not None and hi <= start_ms) or (
                    end_ms is not None and lo >= end_ms
                ):
                    continue
                res: Resolution = "raw" if hour in raw else resolution
                folder = self.path / res / "rates" / _hour_name(hour)
                files = [str(p) for p in sorted(folder.glob("*.parquet"))]
                if not files:
                    continue
                src = _source(con, files, RATE_SCHEMA)
                if res == "raw":
                    sql = (
                        f"SELECT * FROM (SELECT {cols}, max(ts_ms) AS _t, link AS _l, "
                        f'"end" AS _e FROM {src} GROUP BY link, "end", ts_ms // {bucket}) '
                        f"WHERE {cond.replace('ts_ms', '_t')} ORDER BY _t, _l, _e"
                    )
                else:
                    sql = (
                        f'SELECT {keep}, ts_ms AS _t, link AS _l, "end" AS _e FROM {src} '
                        f"WHERE {cond} ORDER BY _t, _l, _e"
                    )
                got = _as_table(con.sql(sql, params=args).to_arrow_table())
                out.append(got.select(list(names)).cast(want))
        if not out:
            return want.empty_table()
        return pa.concat_tables(out).combine_chunks()

    def enforce_retention(self, now_ms: int) -> dict[str, int]:
        """Roll up what is not yet rolled, then remove the hours older than the retention
        (an hour goes when its end is more than the horizon before ``now_ms``); the number of
        hour partitions removed per resolution."""
        self.downsample()
        r = self.retention
        horizon = {
            "raw": r.raw_days,
            "1m": r.minute_days,
            "1h": r.hour_days,
        }
        removed = {"raw": 0, "1m": 0, "1h": 0}
        with self._lock():
            rolled = self._rolled()
            for res, days in horizon.items():
                for kind in SCHEMAS:
                    keep_days = r.collective_days if kind == "collectives" else days
                    if kind == "collectives" and res != "raw":
                        continue
                    for hour in self.hours(kind, res):  # type: ignore[arg-type]
                        if (hour + 1) * HOUR_MS <= now_ms - keep_days * DAY_MS:
                            shutil.rmtree(self.path / res / kind / _hour_name(hour))
                            removed[res] += 1
                            if res == "raw":
                                for k in ("", "/1m", "/1h"):
                                    rolled.pop(f"{kind}/{_hour_name(hour)}{k}", None)
            if removed["raw"]:
                atomic_write(
                    self.path / "state" / "rolled.json",
                    json.dumps(rolled, indent=1, sort_keys=True) + "\n",
                )
        return removed


def _as_table(got: pa.Table | pa.RecordBatchReader) -> pa.Table:
    if isinstance(got, pa.RecordBatchReader):
        return got.read_all()
    return got


def _source(con: Any, files: list[str], schema: pa.Schema) -> str:
    """A SQL source of the parts ``files`` with every column of ``schema``: an optional
    column (:data:`OPTIONAL`) that no part has is null."""
    scan = f"read_parquet({_sql_list(files)}, union_by_name = true)"
    have = {str(r[0]) for r in con.sql(f"DESCRIBE SELECT * FROM {scan}").fetchall()}
    cols = [
        f'"{f.name}"' if f.name in have or f.name not in OPTIONAL else f'NULL AS "{f.name}"'
        for f in schema
    ]
    return f"(SELECT {', '.join(cols)} FROM {scan})"


def _sql_list(files: list[str]) -> str:
    return "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"


#: the rates' columns that are rates (averaged weighted by the intervals' seconds)
_WEIGHTED = frozenset(
    f.name
    for f in RATE_SCHEMA
    if f.name.endswith(("_bps", "_pps", "_ps")) and f.name != "speed_bps"
) | {"up"}


def _rate_agg(name: str) -> str:
    """The SQL aggregate of the rates' column ``name`` over a bucket's intervals (grouped by
    ``link``, ``"end"`` and the bucket): the one expression both the stored rollup and
    :meth:`TelemetryStore.rate_rollup` use, so their values are the same."""
    if name == "ts_ms":
        return "max(ts_ms)"
    if name in ("link", "end"):
        return f'"{name}"'
    if name in ("device", "interface"):
        return f"any_value({name})"
    if name == "seconds":
        return "sum(seconds)"
    if name == "flaps":
        return "sum(flaps)::INTEGER"
    if name == "speed_bps":
        return "arg_max(speed_bps, ts_ms)"
    if name in _WEIGHTED:
        return (
            f"sum({name} * seconds) / nullif(sum(CASE WHEN {name} IS NULL THEN 0 ELSE seconds "
            "END), 0)"
        )
    raise AssertionError(name)  # pragma: no cover


def _rollup_sql(kind: str, src: str, bucket_ms: int) -> str:
    b = f"ts_ms // {bucket_ms}"
    if kind == "counters":
        cols = [f.name for f in COUNTER_SCHEMA if f.name not in ("ts_ms", "device", "interface")]
        last = ", ".join(f"arg_max({c}, ts_ms) AS {c}" for c in cols)
        return (
            f"SELECT max(ts_ms) AS ts_ms, device, interface, {last} FROM {src} "
            f"GROUP BY device, interface, {b} ORDER BY ts_ms, device, interface"
        )
    if kind == "rates":
        # grouped by the integer keys (a rate's link and end name its interface: one to one)
        agg = ", ".join(f'{_rate_agg(f.name)} AS "{f.name}"' for f in RATE_SCHEMA)
        return (
            f'SELECT {agg} FROM {src} GROUP BY link, "end", {b} ORDER BY ts_ms, device, interface'
        )
    if kind == "probes":
        return (
            "SELECT max(ts_ms) AS ts_ms, src_device, src_interface, dst_device, dst_interface, "
            "ev, sum(sent)::INTEGER AS sent, sum(lost)::INTEGER AS lost, "
            "sum(rtt_us * (sent - lost)) / nullif(sum(CASE WHEN rtt_us IS NULL THEN 0 "
            "ELSE sent - lost END), 0) AS rtt_us, max(rtt_max_us) AS rtt_max_us "
            f"FROM {src} GROUP BY src_device, src_interface, dst_device, dst_interface, ev, {b} "
            "ORDER BY ts_ms, src_device, src_interface, dst_device, dst_interface, ev"
        )
    raise AssertionError(kind)  # pragma: no cover


def summarise_rates(rates: pa.Table) -> list[dict[str, object]]:
    """Per interface of a ``RATE_SCHEMA`` table: the window it covers (``first_ms`` the first
    interval's start, ``last_ms`` the last one's end), each rate averaged over the window
    weighted by the intervals' seconds (bit rates in Gb/s), the share of time up and the
    flaps; busiest (tx + rx) first, then by name."""
    import duckdb

    def mean(c: str) -> str:
        return f"sum({c} * seconds) / nullif(sum(CASE WHEN {c} IS NULL THEN 0 ELSE seconds END), 0)"

    sql = (
        "SELECT device, interface, min(ts_ms - CAST(round(seconds * 1000) AS BIGINT)) AS first_ms,"
        f" max(ts_ms) AS last_ms, {mean('tx_bps')} / {BPS_PER_GBPS} AS tx_gbps, "
        f"{mean('rx_bps')} / {BPS_PER_GBPS} AS rx_gbps, {mean('drops_ps')} AS drops_ps, "
        f"{mean('ecn_ps')} AS ecn_ps, {mean('pfc_ps')} AS pfc_ps, {mean('up')} AS up, "
        "coalesce(sum(flaps), 0)::BIGINT AS flaps FROM rates GROUP BY device, interface "
        "ORDER BY coalesce(tx_gbps, 0) + coalesce(rx_gbps, 0) DESC, device, interface"
    )
    with duckdb.connect() as con:
        con.register("rates", rates)
        got = con.sql(sql).to_arrow_table()
    return list(_as_table(got).to_pylist())
