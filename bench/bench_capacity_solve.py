"""The capacity menu at the issue's size: 10 sites (4 greenfield, free to choose 2 or 3 tiers),
12 quarters, 5 parts, 500 seeded scenarios (``tests/capacity/capacity_problems.py``).

The two-stage MIP over all 500 scenarios is 1.0 M columns; it does not solve in minutes on
this machine (50 scenarios took 110 s, 100 did not finish in 6 min). So the menu is solved on
``--keep`` scenarios chosen by fast forward selection (probabilities merged onto the nearest
kept scenario), which is the timed figure; then, untimed, the plan's first stage is priced in
every one of the 500 scenarios (its recourse re-optimised per scenario: an upper bound on the
500-scenario optimum) and each scenario is solved alone with everything free (wait-and-see: a
lower bound, since each scenario's cost can only rise when the first stage must be shared,
and E and CVaR are monotone). The gap between the two bounds the loss from reduction and
includes the value of perfect information, so it over-states the reduction's own error.

Run: ``python bench/bench_capacity_solve.py [--keep 10] [--decisions 4] [--option-nodes 50]
[--no-gap] [--continuous-orders]`` (the menu orders now in whole units unless
``--continuous-orders``; it prints its CPU seconds beside the wall clock);
figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "capacity"))

from capacity_problems import synthetic

from clusterloom.capacity import solve_menu
from clusterloom.capacity.optimise import (
    Options,
    build,
    cvar,
    evaluate,
    one_scenario,
    reduce_scenarios,
    solve,
)


def wait_and_see(problem, options):  # type: ignore[no-untyped-def]
    """[S] each scenario's cost when it alone is planned for (the first stage free)."""
    sc = problem.scenarios
    out = np.empty(len(sc.probability))
    flat = dataclasses.replace(options, risk_weight=0.0)
    for s in range(len(sc.probability)):
        one = one_scenario(sc, s)
        solved, _ = solve(build(dataclasses.replace(problem, scenarios=one), flat))
        out[s] = solved.scenario_cents[0]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", type=int, default=10)
    ap.add_argument("--decisions", type=int, default=4)
    ap.add_argument("--option-nodes", type=int, default=50)
    ap.add_argument("--no-gap", action="store_true")
    ap.add_argument(
        "--continuous-orders",
        action="store_true",
        help="orders now as continuous columns (the menu's default is whole units)",
    )
    args = ap.parse_args()
    problem = synthetic(2026, n_scenarios=500, n_sites=10, n_periods=12, greenfield=4)
    options = Options()
    t = time.perf_counter()
    full = build(problem, options)
    print(
        f"full model (500 scenarios): {full.lp.num_col_:,} columns, {full.lp.num_row_:,} rows, "
        f"{len(full.lp.a_matrix_.value_):,} nonzeros, {full.integers} integers "
        f"(built in {time.perf_counter() - t:.1f} s, not solved)"
    )
    del full
    t = time.perf_counter()
    cpu = time.process_time()
    menu = solve_menu(
        problem,
        max_scenarios=args.keep,
        max_decisions=args.decisions,
        option_node_limit=args.option_nodes,
        integer_orders=not args.continuous_orders,
    )
    seconds = time.perf_counter() - t
    cpu = time.process_time() - cpu
    f = menu.formulation
    print(
        f"menu: {seconds:.1f} s ({cpu:.1f} s CPU) for 500 scenarios reduced to {args.keep} "
        f"({f['variables']:,} columns, {f['constraints']:,} rows, {f['integer_variables']} "
        f"integers; plan {f['plan_seconds']:.1f} s, {f['solves']} solves, {args.decisions} "
        f"decisions priced; status {f['status']}, MIP gap {f['mip_gap']:.2e})"
    )
    print(
        f"  expected ${menu.expected_cost_cents / 100:,.0f}, CVaR90 ${menu.cvar_cents / 100:,.0f}"
        f" on the kept scenarios; {len(menu.moves)} moves, best: {menu.moves[0].name}"
    )
    t = time.perf_counter()
    again = solve_menu(
        problem,
        max_scenarios=args.keep,
        max_decisions=args.decisions,
        option_node_limit=args.option_nodes,
        integer_orders=not args.continuous_orders,
    )
    print(
        f"  same again: identical to_dict() = {again.to_dict() == menu.to_dict()} "
        f"({time.perf_counter() - t:.1f} s)"
    )
    if args.no_gap:
        return
    reduced, _ = reduce_scenarios(problem, args.keep)
    model = build(reduced, options)
    plan, _ = solve(model)
    prob = problem.scenarios.probability
    t = time.perf_counter()
    upper = evaluate(problem, options, model, plan.values)
    ub = float(prob @ upper) + options.risk_weight * cvar(upper, prob, options.risk_alpha)
    print(
        f"plan priced in all 500 scenarios: objective ${ub / 100:,.0f} "
        f"({time.perf_counter() - t:.1f} s)"
    )
    t = time.perf_counter()
    lower = wait_and_see(problem, options)
    lb = float(prob @ lower) + options.risk_weight * cvar(lower, prob, options.risk_alpha)
    print(
        f"wait-and-see bound over 500: objective ${lb / 100:,.0f} ({time.perf_counter() - t:.1f} s)"
    )
    print(f"gap (upper - lower) / upper: {(ub - lb) / ub:.2%}")


if __name__ == "__main__":
    main()
