"""The backtest of decision memory and learning (issue 22, part 6; ``capacity.backtest``):
a seeded synthetic history of biased, noisy forecasts with the truth known, planned quarter by
quarter by median, p90, stochastic and learning planners, each decision priced against the
truth. Prints, per seed, each planner's total realised cost and regret (over the hindsight
optimum), and for the first seed the learned bias of each source quarter by quarter against
the generated one.

Run: ``python bench/bench_capacity_backtest.py [--quarters 24] [--seeds 0 1 2 3 4]
[--scenarios 32] [--risk-weight 0] [--prior 4] [--unbiased]``; ``--unbiased`` replaces the
sources by two unbiased, calibrated ones (learning has nothing to learn: what does it cost?);
figures go to ``bench/RESULTS.md`` by hand. The curves' design points are
cached (``$CLUSTERLOOM_CACHE``).
"""

from __future__ import annotations

import argparse
import resource
import time

from clusterloom.capacity.backtest import DEFAULT_SOURCES, SourceSpec, run_backtest
from clusterloom.capacity.curves import default_cache
from clusterloom.capacity.learn import Prior

#: two sources with nothing to learn: unbiased, their stated spread right
UNBIASED = (SourceSpec("calibrated", 1.0, 0.15, 0.15), SourceSpec("noisy", 1.0, 0.25, 0.25))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quarters", type=int, default=24)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--scenarios", type=int, default=32)
    ap.add_argument("--horizon", type=int, default=4)
    ap.add_argument("--risk-weight", type=float, default=0.0)
    ap.add_argument("--prior", type=float, default=4.0, help="the prior's weight in outcomes")
    ap.add_argument("--unbiased", action="store_true", help="sources with nothing to learn")
    args = ap.parse_args()
    sources = UNBIASED if args.unbiased else DEFAULT_SOURCES
    print(
        f"{args.quarters} quarters, horizon {args.horizon}, {args.scenarios} scenarios, "
        f"risk weight {args.risk_weight}, prior {args.prior} outcomes, sources "
        + ", ".join(
            f"{s.name} (bias {s.bias}, noise {s.noise}, stated {s.stated})" for s in sources
        )
        + "; realised cost in $M (regret over the hindsight optimum)"
    )
    print("| seed | median | p90 | stochastic | learning | hindsight | learning's saving vs "
          "median / p90 | seconds |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    wins = 0
    first = None
    cpu0 = time.process_time()
    for seed in args.seeds:
        t0 = time.perf_counter()
        bt = run_backtest(
            args.quarters,
            seed,
            horizon=args.horizon,
            scenarios=args.scenarios,
            risk_weight=args.risk_weight,
            prior=Prior(args.prior),
            sources=sources,
            cache=default_cache(),
        )
        wall = time.perf_counter() - t0
        first = first or bt
        hind = float(bt.hindsight_cents[:, 0].sum())
        cells = [f"{bt.total(p) / 1e8:.2f} ({(bt.total(p) - hind) / 1e8:.2f})" for p in bt.planners]
        lrn = bt.total("learning")
        wins += lrn < bt.total("median") and lrn < bt.total("p90")
        print(
            f"| {seed} | " + " | ".join(cells) + f" | {hind / 1e8:.2f} | "
            f"{1 - lrn / bt.total('median'):.1%} / {1 - lrn / bt.total('p90'):.1%} | {wall:.1f} |"
        )
    print(f"learning beat median and p90 planning in {wins} of {len(args.seeds)} histories")
    assert first is not None
    print(f"\nseed {first.history.seed}: learned bias ln(actual/median) before each quarter")
    names = [s.name for s in first.history.sources]
    heads = [
        f"{s.name} (generated {s.generated_bias:+.3f}): learned, error, outcomes"
        for s in first.history.sources
    ]
    print("| quarter | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(names))
    for q in range(first.history.quarters):
        cells = [
            f"{first.learned_bias[n][q]:+.3f}, {first.bias_error(n)[q]:.3f}, {first.outcomes[n][q]}"
            for n in names
        ]
        print(f"| {q} | " + " | ".join(cells) + " |")
    print()
    for s in first.final.sources.values():
        print(s.statement())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nCPU {time.process_time() - cpu0:.1f} s, peak {peak:.0f} MB")


if __name__ == "__main__":
    main()
