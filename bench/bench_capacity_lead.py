"""The backtest's lead-time case (issue 22 item 6; ``capacity.backtest``, ``--lead-slip``):
nvidia's switch delivers a seeded Poisson number of quarters late; per seed, the slip learned
from the recorded deliveries against the generated one, and the regret (over hindsight) of
each planner, with the learning planner once learning the slip and once with demand
learning alone (its lead times as quoted): what learning the slip is worth.

Run: ``python bench/bench_capacity_lead.py [--quarters 24] [--seeds 0 1 2] [--slip 1]``;
figures go to ``bench/RESULTS.md`` by hand. The curves' design points are cached
(``$CLUSTERLOOM_CACHE``).
"""

from __future__ import annotations

import argparse
import time

from clusterloom.capacity.backtest import SLIPPED_PART, run_backtest
from clusterloom.capacity.curves import default_cache


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quarters", type=int, default=24)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--slip", type=float, default=1.0)
    args = ap.parse_args()
    key = f"{SLIPPED_PART[0]}/{SLIPPED_PART[1]}"
    print(f"lead-time case: {key} slips Poisson({args.slip:g}), {args.quarters} quarters")
    print("seed  deliveries  learned (raw ± se)  applied  regret $M: learning  demand-only  "
          "median  p90  stochastic  CPU s")  # fmt: skip
    for seed in args.seeds:
        t = time.process_time()
        bt = run_backtest(args.quarters, seed, lead_slip=args.slip, cache=default_cache())
        alone = run_backtest(
            args.quarters, seed, lead_slip=args.slip, cache=default_cache(), learn_lead=False
        )
        cpu = time.process_time() - t
        hind = float(bt.hindsight_cents[:, 0].sum())
        sl = bt.final.slip("lead", key)
        assert sl is not None
        regret = {p: (bt.total(p) - hind) / 1e8 for p in bt.planners}
        only = (alone.total("learning") - hind) / 1e8
        print(
            f"{seed:>4}  {sl.outcomes:>10}  {sl.mean:+.2f} ± {sl.stderr:.2f}      "
            f"{sl.applied:+.2f}    {regret['learning']:>8.2f}  {only:>11.2f}  "
            f"{regret['median']:>6.2f}  {regret['p90']:>4.2f}  {regret['stochastic']:>10.2f}"
            f"  {cpu:.1f}"
        )


if __name__ == "__main__":
    main()
