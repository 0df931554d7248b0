"""The fluid engine on a random permutation: 8,192 flows of 2 MB over a synthetic 2-tier Clos
(8,192 hosts at 100 Gb/s, 128 leaves of 64 hosts, 64 spines, one 100G link from every leaf to
every spine), each flow pinned to one random spine path of 4 directed links (seed fixed).
Prints seconds and peak memory of ``simulate`` (issue target: well under 5 s).

    python bench/bench_engine.py [--seed N] [--watch-all]
"""

from __future__ import annotations

import argparse
import platform
import resource
import time

import numpy as np
from numpy.typing import NDArray

from clusterloom.sim.flow.engine import FlowSet, UnitSet, fct_percentiles, simulate
from clusterloom.units import PS_PER_US, gbps

HOSTS, LEAVES, SPINES = 8192, 128, 64
PER_LEAF = HOSTS // LEAVES
FLOW_BYTES = 2_000_000


def clos_paths(seed: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Link capacities (bytes/s) and one 4-link path per flow of a random permutation.

    Directed link ids: host->leaf ``h``, leaf->host ``HOSTS + h``, leaf->spine
    ``2 HOSTS + leaf * SPINES + s``, spine->leaf ``2 HOSTS + LEAVES * SPINES + leaf * SPINES + s``.
    """
    rng = np.random.default_rng(seed)
    n_links = 2 * HOSTS + 2 * LEAVES * SPINES
    capacity = np.full(n_links, gbps(100) / 8, dtype=np.float64)
    src = np.arange(HOSTS, dtype=np.int64)
    dst = rng.permutation(HOSTS).astype(np.int64)
    fixed = np.flatnonzero(dst == src)  # no host sends to itself: swap with the next flow
    for i in fixed:
        j = (i + 1) % HOSTS
        dst[i], dst[j] = dst[j], dst[i]
    spine = rng.integers(0, SPINES, HOSTS)
    up = 2 * HOSTS + (src // PER_LEAF) * SPINES + spine
    down = 2 * HOSTS + LEAVES * SPINES + (dst // PER_LEAF) * SPINES + spine
    paths = np.stack([src, up, down, HOSTS + dst], axis=1)
    return capacity, paths


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--watch-all", action="store_true", help="record every link's load")
    args = parser.parse_args()

    capacity, paths = clos_paths(args.seed)
    n = paths.shape[0]
    flows = FlowSet(size=np.full(n, float(FLOW_BYTES)), start_ps=np.zeros(n, dtype=np.int64))
    units = UnitSet(
        unit_flow=np.arange(n, dtype=np.int64),
        unit_ptr=np.arange(0, 4 * n + 1, 4, dtype=np.int64),
        unit_link=paths.ravel(),
        unit_share=np.ones(n),
    )
    watch = None if args.watch_all else np.arange(2 * HOSTS, 2 * HOSTS + 8)
    t0 = time.perf_counter()
    res = simulate(capacity, flows, units, watch_links=watch)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    pct = fct_percentiles(res)
    print(f"# {platform.platform()}, python {platform.python_version()}")
    print(f"flows {n:,}  links {capacity.size:,}  seconds {seconds:.2f}  peak_gb {peak / 1e9:.2f}")
    print(
        f"events {res.events:,}  allocations {res.allocations:,}  rounds {res.alloc_rounds:,}  "
        f"segments {res.n_segments:,}  unfinished {(res.finish_ps < 0).sum()}"
    )
    print("fct us: " + "  ".join(f"p{q:g} {v / PS_PER_US:.1f}" for q, v in pct.items()))


if __name__ == "__main__":
    main()
