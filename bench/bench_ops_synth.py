"""``ops synth`` on the 1,024-host examples: 10 minutes of 10-second samples on the flow
engine, healthy and with one random fault of each kind (the localisation evaluation's unit of
work), and the time to write the files.

Run: ``python bench/bench_ops_synth.py [EXAMPLE ...]`` (default ``fat-tree-k16 hgx-1k-roce``);
figures go to ``bench/RESULTS.md`` by hand. The first synthesis of a fabric includes the
numba compilation of the engines (cached on disk after the first run) and the healthy run,
which is then cached per fabric; the per-incident figures are the ones an evaluation pays.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time

import numpy as np

from clusterloom.ops.fabric import load_fabric
from clusterloom.ops.faults import random_fault
from clusterloom.ops.model import FaultKind
from clusterloom.ops.synth import synthesize, write_synthetic


def main(names: list[str]) -> None:
    for name in names:
        t0 = time.perf_counter()
        fabric = load_fabric(name)
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        syn = synthesize(fabric, [], duration_s=600, interval_s=10, seed=0)
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        syn = synthesize(fabric, [], duration_s=600, interval_s=10, seed=0)
        t_healthy = time.perf_counter() - t0
        print(
            f"{name}: {fabric.topology.plan.hosts:,} hosts, {fabric.topology.n_links:,} links; "
            f"load {t_load:.2f} s, first synthesis {t_first:.2f} s, healthy {t_healthy:.2f} s; "
            f"{syn.counters.num_rows:,} counter, {syn.probes.num_rows:,} probe, "
            f"{syn.collectives.num_rows:,} collective rows"
        )
        rng = np.random.default_rng(0)
        per_kind = []
        for kind in FaultKind:
            fault = random_fault(fabric, kind, rng, duration_ms=600_000)
            t0 = time.perf_counter()
            syn = synthesize(fabric, [fault], duration_s=600, interval_s=10, seed=1)
            dt = time.perf_counter() - t0
            per_kind.append(dt)
            print(f"  {kind.value:18s} {dt:.2f} s  ({syn.notes[0].split(', ')[-1]})")
        print(f"  mean per incident {np.mean(per_kind):.2f} s, max {np.max(per_kind):.2f} s")
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            write_synthetic(syn, d)
            print(f"  write_synthetic {time.perf_counter() - t0:.2f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:,.0f} MB")


if __name__ == "__main__":
    main(sys.argv[1:] or ["fat-tree-k16", "hgx-1k-roce"])
