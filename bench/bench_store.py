"""The design store on the largest built-in example (mrc-131k: 131,072 GPUs, 2,097,152 links):
design it and write it as ``design -o`` does, record it in a fresh SQLite store (every file as
a blob, the CSV tables converted to Parquet, the pictures drawn), then time the queries the
web explorer makes of the 2.1M-row cut sheet: the first page, a sort by length, a search for
one rack, a filter on one rack, a deep page; each run ``--repeat`` times (median and best).

Run: ``python -u bench/bench_store.py [EXAMPLE] [--workdir DIR] [--repeat N]
[--queries-only]`` (the last on a work directory of a run before); figures go to
``bench/RESULTS.md`` by hand. Queries are timed through ``Store.table`` (a DuckDB connection
per query, the row count included), as the explorer calls it.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from clusterloom.examples import example_text
from clusterloom.export.outdir import output_run
from clusterloom.pipeline import run_design
from clusterloom.spec import parse_spec
from clusterloom.store import DesignRecord, Store, TablePage, open_store
from clusterloom.write import write_design


def _timed(fn: Callable[[], TablePage], repeat: int) -> tuple[float, float, TablePage]:
    times = []
    page = fn()  # a first call: files into the page cache, as on a warm server
    for _ in range(repeat):
        start = time.perf_counter()
        page = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, min(times) * 1e3, page


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _design_and_record(example: str, work: Path) -> tuple[Store, DesignRecord]:
    out, db = work / "out", work / "store.db"
    for stale in (out, Path(f"{db}.blobs")):
        shutil.rmtree(stale, ignore_errors=True)
    db.unlink(missing_ok=True)

    spec = parse_spec(example_text(example), source=f"example {example}")
    start = time.perf_counter()
    design = run_design(spec, compare=False)
    design_s = time.perf_counter() - start
    p = design.provenance
    start = time.perf_counter()
    with output_run(out, spec_hash=p.spec_hash, version=p.clusterloom_version) as run:
        write_design(design, run.staging)
    write_s = time.perf_counter() - start
    print(
        f"{example}: designed in {design_s:.1f} s ("
        + ", ".join(f"{s} {t:.1f}" for s, t in design.timings_s)
        + f"), written in {write_s:.1f} s: {_size(out) / 1e6:,.0f} MB"
    )

    store = open_store(f"sqlite:///{db}")
    start = time.perf_counter()
    rec = store.record_design(design, out)
    record_s = time.perf_counter() - start
    rows = store.table_rows(rec.id, "cut_sheet")
    cut_csv = (out / "cabling" / "cut_sheet.csv").stat().st_size
    parquet = store.table_source(rec.id, "cut_sheet")
    cut_parquet = parquet.stat().st_size if parquet is not None else 0
    print(
        f"recorded in {record_s:.1f} s: {len(store.artifacts(rec.id))} files, "
        f"{len(store.tables(rec.id))} tables, {len(store.pictures(rec.id))} pictures; blobs "
        f"{_size(store.blobs.root) / 1e6:,.0f} MB; cut sheet {rows:,} rows, CSV "
        f"{cut_csv / 1e6:,.0f} MB -> Parquet {cut_parquet / 1e6:,.0f} MB"
    )
    return store, rec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("example", nargs="?", default="mrc-131k")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--queries-only", action="store_true", help="time the queries of a store made before"
    )
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-store-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.queries_only:
        store = open_store(f"sqlite:///{work / 'store.db'}")
        rec = store.designs()[0]
        print(f"queries on {rec.ref} recorded in {work} before")
    else:
        store, rec = _design_and_record(args.example, work)
    first = store.table(rec.id, "cut_sheet", limit=1)
    rack = str(first.rows[0][first.columns.index("a_rack")])
    queries: list[tuple[str, Callable[[], TablePage]]] = [
        ("first page (50 rows)", lambda: store.table(rec.id, "cut_sheet")),
        (
            "sort by length, longest first",
            lambda: store.table(rec.id, "cut_sheet", sort="length_m", descending=True),
        ),
        (f"search {rack!r}", lambda: store.table(rec.id, "cut_sheet", search=rack)),
        (
            f"where a_rack = {rack!r}",
            lambda: store.table(rec.id, "cut_sheet", where={"a_rack": rack}),
        ),
        (
            "page at offset 2,000,000 by label",
            lambda: store.table(rec.id, "cut_sheet", offset=2_000_000, sort="label"),
        ),
    ]
    print(f"cut sheet queries (median / best of {args.repeat}, ms; rows matching):")
    for label, fn in queries:
        median, best, page = _timed(fn, args.repeat)
        print(f"  {label:<42} {median:8.1f} / {best:8.1f}   {page.total:>10,}")
    start = time.perf_counter()
    svg = store.picture(rec.id, "campus")
    read_ms = (time.perf_counter() - start) * 1e3
    print(f"campus picture: {len(svg) / 1e3:,.0f} kB read in {read_ms:.1f} ms")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"peak RSS {peak:.2f} GB; work directory {work}")


if __name__ == "__main__":
    main()
