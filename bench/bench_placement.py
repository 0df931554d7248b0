"""Place an example (default the ~131k-GPU mrc-131k): time, peak RSS, objective, bound, gap
(with the bound's quality and what it ignores), per model and for the halls together.

Run: ``python bench/bench_placement.py [EXAMPLE]``; figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import resource
import sys
import time

from clusterloom.examples import example_text
from clusterloom.fabric import design_fabric, fabric_names
from clusterloom.placement import place
from clusterloom.spec import parse_spec


def main(name: str = "mrc-131k") -> None:
    spec = parse_spec(example_text(name), source=f"example {name}")
    start = time.perf_counter()
    fabrics = tuple(design_fabric(spec, f, compare=False) for f in fabric_names(spec))
    fabric_s = time.perf_counter() - start
    start = time.perf_counter()
    p = place(spec, fabrics)
    place_s = time.perf_counter() - start
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(
        f"{name}: {p.n_racks:,} racks on {p.floor.n_halls} halls in "
        f"{len(p.floor.building_names)} buildings"
    )
    print(f"fabric {fabric_s:.1f} s, placement {place_s:.1f} s, peak RSS {rss_gb:.2f} GB")
    print(
        f"objective {p.objective:,.0f} link-m, bound {p.bound:,.0f}, gap {p.gap * 100:.2f}% "
        f"({p.bound_quality} bound)"
    )
    if p.bound_note:
        print(f"  {p.bound_note}")
    halls = [s for s in p.solves if s.name != "campus"]
    obj, bound = sum(s.objective for s in halls), sum(s.bound for s in halls)
    print(f"  halls together: objective {obj:,.0f}, bound {bound:,.0f}, gap {1 - bound / obj:.2%}")
    for s in p.solves:
        print(
            f"  {s.name:<10} {s.status:<10} units {s.units:>4} objective {s.objective:>14,.0f} "
            f"bound {s.bound:>14,.0f} gap {s.gap * 100:6.2f}% {s.bound_quality}"
        )
    for x in p.lengths:
        print(
            f"  {x.fabric} tier {x.tier}: {x.links:,} links, {x.total_m:,.0f} m, longest "
            f"{x.longest_m:,.1f} m, {x.inter_hall:,} leave their hall"
        )
    errors = [f for f in p.findings if f.severity.value == "error"]
    print(f"findings: {len(p.findings)} ({len(errors)} errors)")


if __name__ == "__main__":
    main(*sys.argv[1:2])
