"""SRv6 on the 131,072-GPU example (mrc-131k): path programs for one source NIC port, for one
whole NIC (8 ports), the whole-table summary, the plan's checks and the failover set of one
endpoint under a spine failure and a leaf-spine link failure; time and peak memory.

Each step's time is the best of ``--repeat`` runs (default 5) after one warm-up; peak memory is
the process's maximum resident set after the step (``ru_maxrss``), so later rows include
earlier ones.

    python bench/bench_srv6.py [--example mrc-131k] [--repeat 5]
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable
from typing import Any


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    result = fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--example", default="mrc-131k")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from clusterloom.examples import example_text
    from clusterloom.fabric.sizing import plan_fabric
    from clusterloom.fabric.topology import Role, generate
    from clusterloom.spec import parse_spec
    from clusterloom.srv6 import default_evs, plan_addresses, programs_for
    from clusterloom.srv6.failover import Failure, host_failover
    from clusterloom.srv6.summary import check_plan, summarize

    spec = parse_spec(example_text(args.example))
    start = time.perf_counter()
    topo = generate(plan_fabric(spec, "backend"))
    plan = plan_addresses(topo)
    print(f"{args.example}: topology and plan {time.perf_counter() - start:.2f} s, "
          f"{topo.plan.hosts:,} hosts x {plan.host_ports} ports, {topo.n_links:,} links, "
          f"rss {_rss_mb():,.0f} MB")  # fmt: skip
    evs = default_evs()
    rows = []
    took, pr = _best(lambda: programs_for(plan, 0, 0, evs), args.repeat)
    rows.append(("programs, one NIC port", took, f"{pr.entries:,} programs, {pr.nbytes:,} B"))
    took, prs = _best(
        lambda: [programs_for(plan, 0, k, evs) for k in range(plan.host_ports)], args.repeat
    )
    entries = sum(p.entries for p in prs)
    rows.append(("programs, one NIC (all ports)", took, f"{entries:,} programs"))
    del prs
    took, s = _best(lambda: summarize(plan, evs), args.repeat)
    rows.append(("whole-table summary", took, f"{s.programs:,} programs, {s.nbytes:,} B"))
    took, found = _best(lambda: check_plan(plan), 1)
    rows.append(("plan checks", took, f"{len(found)} findings"))
    spine = Failure("switch", topo.switch_id(0, Role.SPINE, 3))
    took, fo = _best(lambda: host_failover(plan, 0, [spine], evs), 1)
    rows.append(("failover set, spine down", took, f"{fo.retired_count:,} EVs retired, "
                 f"min share {fo.share.min():.4f}"))  # fmt: skip
    leaf0 = topo.switch_id(0, Role.LEAF, int(plan.nic_leaf[0, 0]))
    link = next(int(i) for i in (topo.link_src == leaf0).nonzero()[0] if topo.link_tier[i] == 2)
    took, fo = _best(lambda: host_failover(plan, 0, [Failure("link", link)], evs), 1)
    rows.append(("failover set, leaf-spine link down", took, f"{fo.retired_count:,} EVs "
                 f"retired, min share {fo.share.min():.4f}"))  # fmt: skip
    for name, seconds, what in rows:
        print(f"  {name:<36} {seconds * 1e3:9.1f} ms  {what}")
    print(f"  peak rss {_rss_mb():,.0f} MB")


if __name__ == "__main__":
    main()
