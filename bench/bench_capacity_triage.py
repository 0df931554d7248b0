"""Triage on labelled synthetic streams (issue 22 part 5): recall of the truly novel signals
and precision of those flagged, over several seeds, for the example plan (two-sites).

For each seed: ``synthetic_stream(plan, n, novel, seed)`` and ``triage(plan, stream,
solve=0)``; printed per seed: signals, truly novel, flagged, recall, precision, the largest
``p`` of a novel signal and the smallest of a routine one (the margin between them), and the
seconds of scoring. Then the ``p`` of signals at growing distance from the plan (a hall's
power, a forecast revision, a lead time), to show where the threshold sits. Then one stream
triaged with its ``--top`` most novel re-solved on 8 scenarios (the decisions they change),
timed.

With ``--sweep``: the harder stream instead (``sweep_stream``: novel events moved a number of
the plan's own spreads from a draw of its model, routine signals including the plan's own
outer 1 %), per shift over the seeds: recall and precision of the triage as it runs (p <
ALPHA within the stream's Benjamini-Hochberg cutoff at FDR), then the curve at other
thresholds (p < 1e-4, 1e-2 alone, and the cutoff at FDR alone) from the same p; then a long
stream (``--long`` signals, 0.1 % novel) with and without the correction.

Run: ``nice python bench/bench_capacity_triage.py [--seeds 10] [-n 400] [--novel 0.05]
[--sweep]``; figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from clusterloom.capacity.curves import compute_curves
from clusterloom.capacity.input import PlanInput, example_plan, load_plan
from clusterloom.capacity.triage import (
    ALPHA,
    FDR,
    Signal,
    bh_cutoff,
    recall_precision,
    sweep_stream,
    synthetic_stream,
    triage,
)

SHIFTS = (8.0, 6.0, 5.0, 4.0, 3.5, 3.0, 2.5, 2.0)


def _rp(flag: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    tp = int((flag & truth).sum())
    return tp / max(1, int(truth.sum())), tp / max(1, int(flag.sum()))


def sweep(plan: PlanInput, seeds: int, n: int, novel: float, long: int) -> None:
    """Recall and precision per shift (in the plan's spreads) over ``seeds`` streams."""
    print(
        f"sweep: {n} signals a stream, novel share {novel}, {seeds} seeds, routine tails 10 %; "
        f"triage: p < {ALPHA:g} within the BH cutoff at FDR {FDR:g}"
    )
    rules = ("triage", "p<1e-4", "p<1e-3 alone", "p<1e-2", "BH 0.2 alone")
    print(
        "shift  "
        + "  ".join(f"{r:>22}" for r in rules)
        + "   (recall min/mean, precision min/mean)"
    )
    t0 = time.process_time()
    for shift in SHIFTS:
        got: dict[str, list[tuple[float, float]]] = {r: [] for r in rules}
        for seed in range(seeds):
            result = triage(
                plan, sweep_stream(plan, shift=shift, n=n, novel=novel, seed=seed), solve=0
            )
            got["triage"].append(recall_precision(result))
            p = np.array([t.p for t in result.ranked])
            truth = np.array([t.signal.label == "novel" for t in result.ranked])
            got["p<1e-4"].append(_rp(p < 1e-4, truth))
            got["p<1e-3 alone"].append(_rp(p < ALPHA, truth))
            got["p<1e-2"].append(_rp(p < 1e-2, truth))
            got["BH 0.2 alone"].append(_rp(p <= bh_cutoff(p, FDR), truth))
        cells = []
        for r in rules:
            rec = [a for a, _ in got[r]]
            pre = [b for _, b in got[r]]
            cells.append(f"{min(rec):.2f}/{np.mean(rec):.2f} {min(pre):.2f}/{np.mean(pre):.2f}")
        print(f"{shift:5.1f}  " + "  ".join(f"{c:>22}" for c in cells))
    print(f"  CPU {time.process_time() - t0:.1f} s for {len(SHIFTS) * seeds} streams")
    print(f"long streams: {long} signals, 0.1 % novel, shift 4 (recall, precision, false flags)")
    for seed in range(3):
        stream = sweep_stream(plan, shift=4.0, n=long, novel=0.001, seed=seed)
        t1 = time.process_time()
        on = triage(plan, stream, solve=0)
        took = time.process_time() - t1
        off = triage(plan, stream, solve=0, fdr=1.0)
        row = []
        for res in (on, off):
            r, pr = recall_precision(res)
            fp = sum(1 for t in res.ranked if t.novel and t.signal.label != "novel")
            row.append(f"{r:.3f} {pr:.3f} {fp}")
        print(
            f"  seed {seed}: with the correction {row[0]} (cutoff {on.cutoff:.2e}, "
            f"{took:.1f} s CPU); alone {row[1]}"
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
    ap.add_argument("--sweep", action="store_true", help="the harder stream, swept")
    ap.add_argument("--long", type=int, default=20_000, help="signals of the long streams")
    args = ap.parse_args()
    plan = load_plan(example_plan())
    if args.sweep:
        sweep(plan, args.seeds, args.n, args.novel, args.long)
        return
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
