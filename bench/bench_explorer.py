"""The explorer's pages over HTTP on a large design in a store: the cut sheet's first page, a
sort by length, a search for one rack, and the campus overview (issue 20's target: each under
300 ms on the 2-core machine, after the design is in the store).

The design is made and recorded first (``run_design``, ``write_design``, ``Store.record_design``
into a SQLite store in a temporary directory, or ``--store-dir DIR`` to keep and reuse it);
then each request is sent ``--repeat`` times through a real uvicorn server on 127.0.0.1 with
httpx (a read token), after one warm-up request, and the median and the slowest are printed.

Run (a shared machine: under nice): ``nice python bench/bench_explorer.py [EXAMPLE]
[--store-dir DIR] [--repeat N]``; the default example is mrc-131k (2,097,152 backend links).
Figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import uvicorn

from clusterloom.examples import example_text
from clusterloom.export.outdir import output_run
from clusterloom.pipeline import run_design
from clusterloom.spec import parse_spec
from clusterloom.store import Store, open_store
from clusterloom.web import create_app
from clusterloom.write import write_design


def record(example: str, folder: Path) -> tuple[Store, str, float, float]:
    """The example's design in the store at ``folder`` (made and recorded unless it is there
    already): the store, the design's id, seconds to design and write, seconds to record."""
    store = open_store(f"sqlite:///{folder / 'store.db'}")
    for d in store.designs():
        if d.name == example:
            return store, d.id, 0.0, 0.0
    t0 = time.perf_counter()
    design = run_design(parse_spec(example_text(example)), compare=False)
    p = design.provenance
    out = folder / "design"
    with output_run(out, spec_hash=p.spec_hash, version=p.clusterloom_version) as run:
        write_design(design, run.staging)
    t1 = time.perf_counter()
    rec = store.record_design(design, out, user="bench")
    return store, rec.id, t1 - t0, time.perf_counter() - t1


def serve(store: Store) -> tuple[uvicorn.Server, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    config = uvicorn.Config(create_app(store), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, port


def timed(client: httpx.Client, url: str, repeat: int) -> tuple[float, float, int, int]:
    """Median and slowest milliseconds of ``repeat`` GETs (after one warm-up), the status and
    the body's bytes."""
    first = client.get(url)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = client.get(url)
        times.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200, (url, r.status_code, r.text[:200])
    return statistics.median(times), max(times), first.status_code, len(first.content)


def store_alone(store: Store, did: str, query: dict[str, Any], repeat: int) -> float:
    """Median milliseconds of the same page asked of ``Store.table`` directly (no HTTP)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        store.table(did, "cut_sheet", limit=50, **query)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("example", nargs="?", default="mrc-131k")
    parser.add_argument("--store-dir", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    folder = args.store_dir or Path(tempfile.mkdtemp(prefix="bench-explorer-"))
    folder.mkdir(parents=True, exist_ok=True)
    store, did, t_design, t_record = record(args.example, folder)
    rows = store.table_rows(did, "cut_sheet")
    rack = store.table(did, "cut_sheet", limit=1).rows[0]
    columns = store.table(did, "cut_sheet", limit=1).columns
    a_rack = str(rack[columns.index("a_rack")])
    print(
        f"{args.example}: design and write {t_design:.1f} s, record {t_record:.1f} s "
        f"(0 when reused from {folder}); cut sheet {rows:,} rows; {len(store.pictures(did))} "
        "pictures"
    )
    _, secret = store.add_token("bench", "read")
    server, port = serve(store)
    base = f"http://127.0.0.1:{port}"
    direct = {
        "cut sheet, first page (JSON)": {},
        "sort by length_m, descending": {"sort": "length_m", "descending": True},
        f"search for rack {a_rack}": {"search": a_rack},
        f"filter a_rack = {a_rack}": {"where": {"a_rack": a_rack}},
    }
    cases = [
        ("cut sheet, first page (JSON)", f"/api/designs/{did}/tables/cut_sheet?limit=50"),
        ("cut sheet, first page (HTML)", f"/designs/{did}/tables/cut_sheet"),
        (
            "sort by length_m, descending",
            f"/api/designs/{did}/tables/cut_sheet?sort=length_m&desc=true",
        ),
        (f"search for rack {a_rack}", f"/api/designs/{did}/tables/cut_sheet?q={quote(a_rack)}"),
        (
            f"filter a_rack = {a_rack}",
            f"/api/designs/{did}/tables/cut_sheet?where=a_rack:{quote(a_rack)}",
        ),
        ("campus overview (design page)", f"/designs/{did}"),
        ("campus picture (SVG)", f"/designs/{did}/pictures/campus"),
    ]
    print(f"{'request':<40} {'median ms':>10} {'max ms':>8} {'bytes':>10} {'Store.table ms':>15}")
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=300
    ) as client:
        for label, url in cases:
            median, worst, _, size = timed(client, url, args.repeat)
            query = direct.get(label)
            alone = "" if query is None else f"{store_alone(store, did, query, args.repeat):.1f}"
            print(f"{label:<40} {median:>10.1f} {worst:>8.1f} {size:>10,} {alone:>15}")
    server.should_exit = True


if __name__ == "__main__":
    main()
