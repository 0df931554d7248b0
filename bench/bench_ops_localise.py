"""Localisation over seeded synthetic incidents (issue 23, "Tests and proof"): for each fault
kind, ``--incidents`` single-fault incidents on each design (``ops.faults.random_fault``, a
minute of 10-s telemetry from ``ops.synth.synthesize`` on the flow engine, counters turned
into rates by ``ops.ingest.counter_rates``), localised and scored (``ops.evaluate``): top-1,
top-3, precision, recall, kind right, false first, silent; with the time taken per kind
(synthesis included) and the peak memory. A kind's row is printed as soon as it is done.

    python bench/bench_ops_localise.py [--designs fat-tree-k16,hgx-1k-roce] [--incidents 200]
        [--seed 0] [--kinds gray-link,...]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    from clusterloom.ops.evaluate import evaluate, variant_scores
    from clusterloom.ops.fabric import load_fabric
    from clusterloom.ops.model import FaultKind

    parser = argparse.ArgumentParser()
    parser.add_argument("--designs", default="fat-tree-k16,hgx-1k-roce")
    parser.add_argument("--incidents", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", default=",".join(k.value for k in FaultKind))
    args = parser.parse_args()
    kinds = [FaultKind(k) for k in args.kinds.split(",")]
    head = (
        f"{'design':<14} {'fault kind':<18} {'n':>4} {'top-1':>6} {'top-3':>6} {'prec':>6} "
        f"{'recall':>6} {'kind':>6} {'false1':>6} {'silent':>6} {'s':>7}"
    )
    print(head)
    for design in args.designs.split(","):
        fabric = load_fabric(design)
        t_design = time.perf_counter()
        for kind in kinds:
            ev = evaluate(fabric, [kind], args.incidents, args.seed, design=design)
            k = ev.scores[0]
            print(
                f"{design:<14} {kind.value:<18} {k.incidents:>4} {k.top1:>6.1%} {k.top3:>6.1%} "
                f"{k.precision:>6.1%} {k.recall:>6.1%} {k.kind_right:>6.1%} "
                f"{k.false_first:>6.1%} {k.silent:>6.1%} {k.seconds:>7.1f}"
            )
            for _, variant, v in variant_scores(ev):
                print(
                    f"{'':<14} {'  ' + variant:<18} {v.incidents:>4} {v.top1:>6.1%} "
                    f"{v.top3:>6.1%} {v.precision:>6.1%} {v.recall:>6.1%} "
                    f"{v.kind_right:>6.1%} {v.false_first:>6.1%} {v.silent:>6.1%} "
                    f"{v.seconds:>7.1f}"
                )
            sys.stdout.flush()
        print(
            f"{design}: {time.perf_counter() - t_design:.0f} s for {len(kinds)} kinds x "
            f"{args.incidents} incidents, peak RSS {_rss_mb():,.0f} MB"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
