"""Triage on labelled synthetic streams (issue 22 part 5): recall of the truly novel signals
and precision of those flagged, over several seeds, for the example plan (two-sites).

For each seed: ``synthetic_stream(plan, n, novel, seed)`` and ``triage(plan, stream,
solve=0)``; printed per seed: signals, truly novel, flagged, recall, precision, the largest
``p`` of a novel signal and the smallest of a routine one (the margin between them), and the
seconds of scoring. Then the ``p`` of signals at growing distance from the plan (a hall's
power, a forecast revision, a lead time), to show where the threshold sits. Then one stream
triaged with its ``--top`` most novel re-solved on 8 scenarios (the decisions they change),
timed.

Run: ``nice python bench/bench_capacity_triage.py [--seeds 10] [-n 400] [--novel 0.05]``;
figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from clusterloom.capacity.curves import compute_curves
from clusterloom.capacity.input import PlanInput, example_plan, load_plan
from clusterloom.capacity.triage import (
    ALPHA,
    Signal,
    recall_precision,
    synthetic_stream,
    triage,
)


def edges(plan: PlanInput) -> None:
    """Where the threshold sits: p of signals at growing distance from the plan."""
    cases: list[tuple[str, list[tuple[str, str, str, str, str]]]] = [
        (
            "east/b1/h1 power (plan 2.4 MW)",
            [
                ("site-update", "east/b1/h1", "", f"{2.4 * (1 - f):.4f}", "it_mw")
                for f in (0.02, 0.04, 0.06, 0.07, 0.10, 0.20)
            ],
        ),
        (
            "pretrain@east by 2028Q1 (p10 384, median 512, p90 768)",
            [
                ("forecast-revision", "pretrain@east", "2028Q1", f"{v}", "accelerators")
                for v in (300, 250, 200, 150, 100, 1100, 1300, 1500)
            ],
        ),
        (
            "switch:sn5600 lead time (2 at p50, 3 at p90, slips of 1-2)",
            [
                ("supplier-notice", "switch:sn5600", "", f"{v}", "lead_time_quarters")
                for v in (3, 4, 5, 6, 7, 8)
            ],
        ),
    ]
    for title, rows in cases:
        signals = tuple(
            Signal(i + 2, "2026-12-01", "bench", k, t, per, v, u)
            for i, (k, t, per, v, u) in enumerate(rows)
        )
        result = {r.signal.line: r for r in triage(plan, signals, solve=0).ranked}
        shown = ", ".join(
            f"{s.value}: {result[s.line].p:.1e}{'*' if result[s.line].novel else ''}"
            for s in signals
        )
        print(f"  {title}: {shown}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("-n", type=int, default=400, help="signals per stream")
    ap.add_argument("--novel", type=float, default=0.05, help="share of novel events")
    ap.add_argument("--top", type=int, default=10, help="signals re-solved in the last run")
    args = ap.parse_args()
    plan = load_plan(example_plan())
    print(f"two-sites, {args.n} signals a stream, novel share {args.novel}, alpha {ALPHA:g}")
    print("seed  signals  novel  flagged  recall  precision  max p novel  min p routine  s")
    recalls, precisions = [], []
    for seed in range(args.seeds):
        stream = synthetic_stream(plan, n=args.n, novel=args.novel, seed=seed)
        t0 = time.perf_counter()
        result = triage(plan, stream, solve=0)
        took = time.perf_counter() - t0
        recall, precision = recall_precision(result)
        recalls.append(recall)
        precisions.append(precision)
        novel = [t.p for t in result.ranked if t.signal.label == "novel"]
        routine = [t.p for t in result.ranked if t.signal.label != "novel"]
        flagged = sum(1 for t in result.ranked if t.novel)
        print(
            f"{seed:4d}  {len(stream):7d}  {len(novel):5d}  {flagged:7d}  {recall:6.3f}  "
            f"{precision:9.3f}  {max(novel, default=0):11.2e}  {min(routine, default=1):13.2e}"
            f"  {took:.2f}"
        )
    print(
        f"recall min {min(recalls):.3f} mean {sum(recalls) / len(recalls):.3f}; "
        f"precision min {min(precisions):.3f} mean {sum(precisions) / len(precisions):.3f}"
    )
    print(f"where the threshold sits (p; * novel, p < {ALPHA:g}):")
    edges(plan)
    with tempfile.TemporaryDirectory() as cache:
        curves = compute_curves(plan, cache=Path(cache))
        stream = synthetic_stream(plan, n=args.n, novel=args.novel, seed=0)
        t0 = time.perf_counter()
        result = triage(plan, stream, curves=curves, base=example_plan().parent, solve=args.top)
        took = time.perf_counter() - t0
    moving = [t for t in result.ranked if t.novel and t.changes_decision]
    print(
        f"seed 0 with the {args.top} most novel re-solved on 8 scenarios: {took:.2f} s; "
        f"{len(moving)} novel signals change a decision"
    )
    for t in result.ranked[:5]:
        s = t.signal
        change = "; ".join(f"{c.move} {c.before:g} -> {c.after:g}" for c in t.changes[:2])
        print(f"  line {s.line} {s.kind} {s.target} {s.value} {s.unit}: p {t.p:.2g}; {change}")


if __name__ == "__main__":
    main()
