"""Cable every link of the ~131k-GPU multi-building example (mrc-131k): time and peak memory of
the cabling stage on its own (placement, ~200 s, runs first and is timed apart), then of
writing the cut sheet, trunks, pull list, BOM and NetBox ``cables.csv``.

Run: ``python bench/bench_cabling.py [EXAMPLE]``; figures go to ``bench/RESULTS.md`` by hand.
Peak memory of the stage is numpy's and Python's allocations under ``tracemalloc`` (the
process's peak RSS, which includes placement, is printed too).
"""

from __future__ import annotations

import dataclasses
import resource
import sys
import tempfile
import time
import tracemalloc

import numpy as np

from clusterloom.cabling import cable
from clusterloom.cabling.bom import cabling_bom, fibres_between
from clusterloom.examples import example_text
from clusterloom.export.cabling_files import write_cabling
from clusterloom.pipeline import run_design
from clusterloom.spec import parse_spec


def main(name: str = "mrc-131k") -> None:
    spec = parse_spec(example_text(name), source=f"example {name}")
    start = time.perf_counter()
    design = run_design(spec, compare=False, cable=False)
    before_s = time.perf_counter() - start
    assert design.placement is not None
    tracemalloc.start()
    start = time.perf_counter()
    c = cable(spec, design.fabrics, design.placement)
    cable_s = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    design = dataclasses.replace(design, cabling=c)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        written = write_cabling(design, out)
        sizes = sum(p.stat().st_size for p in written)
    write_s = time.perf_counter() - start
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    links = sum(fd.topology.n_links for fd in design.fabrics)
    print(f"{name}: {links:,} links of {len(design.fabrics)} fabric(s)")
    print(f"fabric + placement {before_s:.1f} s")
    print(f"cabling {cable_s:.1f} s, peak {peak / 1e9:.2f} GB (tracemalloc)")
    print(f"writing {write_s:.1f} s, {sizes / 1e6:,.0f} MB in {len(written)} files")
    print(f"process peak RSS {rss_gb:.2f} GB")
    ok = c.realized()
    trunk = c.trunk_kind == 0
    ribbon = int((c.trunk_fibers[trunk] > 144).sum())
    backbones = int((c.trunk_kind == 1).sum())
    print(
        f"realized {int(ok.sum()):,}, structured {int(c.structured.sum()):,}, trunks "
        f"{int(trunk.sum()):,} ({ribbon:,} ribbon), backbones {backbones:,}, panels "
        f"{int(c.frame_panels.sum()):,}, rerouted {c.rerouted:,}"
    )
    for i, m in enumerate(c.media.names):
        sel = ok & (c.medium == i)
        if sel.any():
            print(f"  {m}: {int(sel.sum()):,} links, longest {float(c.length_m[sel].max()):.1f} m")
    print(
        f"longest trunk {float(c.trunk_length_m.max()):.1f} m, worst loss "
        f"{float(c.loss_db.max()):.2f} dB"
    )
    fill = c.seg_fill
    print(
        f"fullest segment {c.pathways.segment_name(int(np.argmax(fill)))} {fill.max():.0%}; "
        f"{int((c.seg_area_mm2 > c.pathways.seg_capacity_mm2).sum())} segments over limit"
    )
    for (a, b), (t, f) in fibres_between(c, "building").items():
        print(f"  {a}-{b}: {t:,} backbones, {f:,} fibres")
    cost = sum(x.cost_usd for x in cabling_bom(c))
    print(f"cabling cost ${cost / 1e6:,.1f} M")
    errors = [f for f in c.findings if f.severity.value == "error"]
    print(f"findings: {len(c.findings)} ({len(errors)} errors)")
    for f in errors[:3]:
        print(f"  {f.code} {f.where}: {f.message}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
