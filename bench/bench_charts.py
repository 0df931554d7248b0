"""The explorer's charts (``clusterloom.web.charts``) and the store's pictures
(``report.pictures``) timed on real runs.

Charts: each figure made from a ``clusterloom simulate -o`` run directory (given, or simulated
here from ``--example``, default ``fat-tree-k16`` with its spine failure, whose ``roce-ecmp``
waits for its assumed 1 s reroute), ``--repeat`` times after a warm-up; the median and the
slowest, the size of the figure's JSON, and the window each run was drawn over. Pictures: every
picture of a design (``--design EXAMPLE``, default ``nvl72-64k``, 8 halls) made once, its count
and total size.

Run (a shared machine: under nice): ``nice python bench/bench_charts.py [--run DIR]
[--example NAME] [--design NAME] [--repeat N]``. Figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusterloom.web import charts


def simulate(example: str, folder: Path) -> Path:
    out = folder / example
    subprocess.run(
        [
            sys.executable,
            "-m",
            "clusterloom.cli.main",
            "simulate",
            "--example",
            example,
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out


def timed(make: Callable[[], dict[str, Any]], repeat: int) -> tuple[float, float, int]:
    """Median and slowest milliseconds of ``make`` over ``repeat`` calls; the JSON's bytes."""
    size = len(json.dumps(make()))  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        make()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), max(times), size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", type=Path, help="a simulate -o directory (else simulated here)")
    ap.add_argument("--example", default="fat-tree-k16")
    ap.add_argument("--design", default="nvl72-64k", help="'' to skip the pictures")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run
        if run is None:
            t0 = time.perf_counter()
            run = simulate(args.example, Path(tmp))
            print(f"simulated {args.example} in {time.perf_counter() - t0:.1f} s")
        import pyarrow.parquet as pq

        rows = {n: pq.read_metadata(run / f"{n}.parquet").num_rows for n in charts._TABLES}
        print("rows: " + ", ".join(f"{n} {r:,}" for n, r in rows.items()))
        w = charts.window(run)
        print(f"window {w.start:g}..{w.end:g} us; clipped: {[(t, e) for t, e, _ in w.beyond]}")
        for name, make in (
            ("fct_cdf", lambda: charts.fct_cdf([("run", run)])),
            ("utilisation", lambda: charts.utilisation(run)),
            ("link_heatmap", lambda: charts.link_heatmap(run)),
        ):
            med, worst, size = timed(make, args.repeat)
            print(f"{name:13s} median {med:7.1f} ms, slowest {worst:7.1f} ms, JSON {size:,} B")
    if args.design:
        from clusterloom.examples import example_text
        from clusterloom.pipeline import run_design
        from clusterloom.report.pictures import pictures
        from clusterloom.spec import parse_spec

        t0 = time.perf_counter()
        design = run_design(parse_spec(example_text(args.design)), compare=False)
        made = time.perf_counter() - t0
        t0 = time.perf_counter()
        pics = pictures(design)
        took = time.perf_counter() - t0
        total = sum(len(s) for s in pics.values())
        print(
            f"pictures of {args.design} (designed in {made:.1f} s): {len(pics)} in "
            f"{took * 1e3:.0f} ms, {total:,} characters"
        )


if __name__ == "__main__":
    main()
