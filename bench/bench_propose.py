"""``propose`` on the two built-in benchmark goals: candidates evaluated per tier, the
simulations run (one per distinct fabric shape), the time of each tier and in all.

- ``rail-16k``: 16,384 B200 GPUs, 400G or more of scale-out from an 8 x 100G NIC, one plane down
  keeps 75% of the bisection, a budget (target: under 5 minutes on the 2-core machine);
- ``mrc-131k``: 131,072 GPUs, 800G as 8 x 100G, one plane down keeps 85% (target: under 20
  minutes).

Run: ``python bench/bench_propose.py [GOAL ...] [--workers N]`` (default both goals, 2
workers); figures go to ``bench/RESULTS.md`` by hand. The CPU seconds (this process and its
finished workers) say what the run costs on a machine shared with other jobs, where wall time
is the share it got.
"""

from __future__ import annotations

import argparse
import resource
import time
from typing import Any

from clusterloom.assist.goal import example_goal_text, parse_goal
from clusterloom.assist.propose import choice_text, propose
from clusterloom.exec import LocalExecutor


def _bench(name: str, workers: int) -> None:
    goal = parse_goal(example_goal_text(name), f"example goal {name}")
    marks: dict[str, float] = {}
    start = time.perf_counter()

    def progress(step: Any) -> None:
        marks.setdefault(step.task, time.perf_counter() - start)

    with LocalExecutor(workers) as pool:
        result = propose(goal, executor=pool, progress=progress)
    wall = time.perf_counter() - start
    cpu = sum(
        getattr(resource.getrusage(who), f)
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        for f in ("ru_utime", "ru_stime")
    )
    order = sorted(marks, key=lambda k: marks[k])
    spans = [
        f"{t} {(marks[order[i + 1]] if i + 1 < len(order) else wall) - marks[t]:.1f} s"
        for i, t in enumerate(order)
    ]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"{name}: {goal.compute.accelerators:,} accelerators, {workers} workers")
    print("  candidates per tier: " + ", ".join(f"{k} {v:,}" for k, v in result.tiers.items()))
    print(
        "  time per tier: " + ", ".join(spans) + f"; total {wall:.1f} s wall, {cpu:.0f} s CPU "
        f"(driver and workers); driver peak {peak:.2f} GB"
    )
    for c in result.front:
        m = c.metrics
        fct = "-" if m.fct_p99_ps is None else f"{m.fct_p99_ps / 1e6:,.1f} us"
        print(
            f"  front {c.id}: {choice_text(c.choice)}; ${m.cost_cents / 100:,.0f}, "
            f"{m.power_mw / 1e6:,.1f} kW, p99 FCT {fct}, {m.failure_kept:.1%} kept"
        )
    for f in result.findings:
        print(f"  finding {f.code}: {f.message}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("goals", nargs="*", default=["rail-16k", "mrc-131k"])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    for name in args.goals:
        _bench(name, args.workers)


if __name__ == "__main__":
    main()
