"""A growth step on the ~131k-GPU campus (mrc-131k): a new hall added to an installed design.

The baseline is the example without its last hall (b4-h4, 15 of 16 halls: 122,880 GPUs, 60
scalable units); the step adds that hall back and its 4 scalable units (131,072 GPUs). The
spines have room (256 spines per plane at 480 of 512 ports), so the lower bound of re-patching
is 0. Stages, each timed with the process's peak RSS after it:

1. the baseline designed (fabric, placement, cabling) and written (``design -o``, no
   prediction: the growth step does not need one);
2. the baseline read back (``read_installed``: a fabric this large has no node-link files, so
   every link comes from ``cabling/cut_sheet.csv``, read with pyarrow), its peak under
   ``tracemalloc`` (numpy and Python) and pyarrow's memory pool;
3. the grown design with ``installed=`` (its stages' own timings, and ``growth``: the baseline
   rebuilt from the files, the cable change and the change plan);
4. the rework figures (``Rework``) and the change plan's steps.

Run: ``nice python bench/bench_growth.py``; figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import resource
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml

from clusterloom.errors import SpecError
from clusterloom.examples import example_text
from clusterloom.growth import read_installed
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import ClusterSpec, parse_spec
from clusterloom.write import write_design

HALL_GPUS = 8192  # 4 scalable units of 256 HGX nodes


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def specs() -> tuple[ClusterSpec, ClusterSpec]:
    """The campus without its last hall (the baseline), and the example as is (the step)."""
    grown_text = example_text("mrc-131k")
    doc: dict[str, Any] = yaml.safe_load(grown_text)
    doc["compute"]["accelerators"] -= HALL_GPUS
    hall = doc["site"]["buildings"][-1]["halls"].pop()
    doc["description"] = f"mrc-131k without hall {hall['name']} of the last building"
    base = parse_spec(yaml.safe_dump(doc, sort_keys=False), source="mrc-131k less a hall")
    return base, parse_spec(grown_text, source="example mrc-131k")


def main() -> None:
    base, grown = specs()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "installed"
        start = time.perf_counter()
        baseline = run_design(base, compare=False)
        t_design = time.perf_counter() - start
        start = time.perf_counter()
        written = write_design(baseline, out)
        t_write = time.perf_counter() - start
        size = sum(p.stat().st_size for p in written)
        print(f"baseline: {base.compute.accelerators:,} GPUs, {_links(baseline):,} links")
        print(f"  design {t_design:.1f} s ({_timings(baseline.timings_s)}), RSS {_rss_gb():.2f} GB")
        print(f"  write {t_write:.1f} s, {size / 1e6:,.0f} MB in {len(written)} files")

        del baseline
        tracemalloc.start()
        start = time.perf_counter()
        installed = read_installed(out)
        t_read = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        arrow = pa.default_memory_pool().max_memory() or 0
        n_links = sum(x.n_links for x in installed.links.values())
        print(
            f"read_installed {t_read:.1f} s: {n_links:,} links (cut sheet), "
            f"{len(installed.racks):,} racks, peak {peak / 1e9:.2f} GB (tracemalloc) + "
            f"{arrow / 1e9:.2f} GB (pyarrow's pool)"
        )

        start = time.perf_counter()
        try:
            design = run_design(grown, compare=False, installed=installed)
        except SpecError as exc:  # the step cannot be placed: say why, measure the fabric's
            print(
                f"  placing the step refused after {time.perf_counter() - start:.1f} s: "
                f"{exc.problems[0].where}: {exc.problems[0].message} "
                f"({len(exc.problems)} problems); the step without placement and cabling:"
            )
            start = time.perf_counter()
            design = run_design(grown, compare=False, installed=installed, place=False)
        t_grow = time.perf_counter() - start
        print(f"grown: {grown.compute.accelerators:,} GPUs, {_links(design):,} links")
        print(f"  step {t_grow:.1f} s ({_timings(design.timings_s)}), RSS {_rss_gb():.2f} GB")
    g = design.growth
    assert g is not None
    print(g.rework.line())
    print("change plan:")
    for s in g.plan.steps:
        print(f"  {s.order}. {s.action} {len(s.objects):,}: {s.reason} (valid {s.valid})")
    print(f"process peak RSS {_rss_gb():.2f} GB")


def _links(design: Design) -> int:
    return sum(fd.topology.n_links for fd in design.fabrics)


def _timings(timings: tuple[tuple[str, float], ...]) -> str:
    return ", ".join(f"{stage} {t:.1f}" for stage, t in timings)


if __name__ == "__main__":
    main()
