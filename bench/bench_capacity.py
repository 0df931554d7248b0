"""Capacity planning at the issue's size: 10 sites, 12 quarters, 500 scenarios.

The plan is generated (``bench_plan``, seeded): 10 sites built from three hall shapes (so
sites of one shape share their design points in the cache), three programs over the sites
with a 3 x 3 correlation, two fabric choices (the hgx-1k-roce template on 2 and 3 tiers),
curves at 0, 2,048, 4,096 and 8,192 accelerators, vendor slips, demand moves between sites
and uncertain hall readiness. Timed, each on its own:

1. the curves cold (an empty cache: every design point designed) and warm (read back);
2. 500 scenarios; 3. ``build_problem``; 4. with ``--solve``, the whole ``clusterloom plan``
   command (curves warm, scenarios, problem, ``capacity.menu.solve_menu``, the files),
   when the optimisation side is installed.

``--place`` designs the curve points with placement and cabling too (much slower cold).
Run (a shared machine: under nice): ``nice python bench/bench_capacity.py [--solve]``; figures
go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from clusterloom.capacity.curves import compute_curves, design_points
from clusterloom.capacity.input import load_plan, quarter_label
from clusterloom.capacity.problem import build_problem
from clusterloom.capacity.scenarios import sample_scenarios
from clusterloom.spec import builtin_catalog

SITES, PERIODS, SCENARIOS, SEED = 10, 12, 500, 2026
START = 2027 * 4  # 2027Q1
#: (halls, rows, positions per row) of the three hall shapes
SHAPES = ((2, 8, 24), (3, 8, 24), (4, 10, 24))


def _forecast(rng: np.random.Generator, top: float) -> dict[str, Any]:
    """Quantiles at 10/50/90 % of a ramp to ``top`` by the last quarter, spread growing."""
    ramp = np.linspace(0.1, 1.0, PERIODS) ** 1.3
    median = np.round(top * ramp / 64) * 64
    rows = [
        [
            float(max(0.0, m * (1 - 0.15 - 0.2 * t / PERIODS))),
            float(m),
            float(m * (1.2 + 0.2 * t / PERIODS)),
        ]
        for t, m in enumerate(median)
    ]
    rows = [[round(v) for v in r] for r in rows]
    for t in range(1, PERIODS):  # cumulative: never below the period before
        rows[t] = [max(a, b) for a, b in zip(rows[t], rows[t - 1], strict=True)]
    return {"levels": [0.1, 0.5, 0.9], "accelerators": rows}


def bench_plan(place: bool) -> dict[str, Any]:
    rng = np.random.default_rng(SEED)
    sites = []
    for i in range(SITES):
        halls, rows, per_row = SHAPES[i % len(SHAPES)]
        hall_list = []
        for h in range(halls):
            ready = (
                None
                if h == 0
                else {
                    "levels": [0.1, 0.5, 0.9],
                    "quarters": [quarter_label(START + 2 * h + d) for d in (-1, 0, 3)],
                }
            )
            hall = {
                "name": f"h{h + 1}",
                "rows": rows,
                "positions_per_row": per_row,
                "position_power_kw": 45,
                "power": {"it_mw": round(rows * per_row * 0.04, 2), "pue": 1.25},
            }
            if ready is not None:
                hall["ready"] = ready
            hall_list.append(hall)
        sites.append({"name": f"s{i:02d}", "buildings": [{"name": "b1", "halls": hall_list}]})
    names = [s["name"] for s in sites]
    programs = []
    for r, (name, share) in enumerate((("pretrain", 0.5), ("post", 0.3), ("serve", 0.2))):
        mine = names[r::3] + names[(r + 1) :: 3][:1]
        programs.append(
            {
                "name": name,
                "vendor": "nvidia",
                "demand": {
                    s: _forecast(rng, 6000 * share * 3 / len(mine)) for s in sorted(set(mine))
                },
            }
        )
    catalog = builtin_catalog()
    parts = [
        {
            "id": f"switch:{m}",
            "supplier": {
                "vendor": "nvidia" if m.startswith("sn") or m.startswith("qm") else "switch-co",
                "lead_time": {"levels": [0.5, 0.9], "quarters": [2, 3]},
                "price_usd": catalog.switches[m].cost_usd,
                "cap": 400,
            },
        }
        for m in sorted(catalog.switches)
    ]
    for m in sorted(catalog.media):
        media = catalog.media[m]
        for prefix, price in (("optic", media.cost_usd_per_end), ("cable", media.cable_cost_usd)):
            parts.append(
                {
                    "id": f"{prefix}:{m}",
                    "supplier": {
                        "vendor": "optics-co",
                        "lead_time": {"levels": [0.5, 0.9], "quarters": [1, 2]},
                        "price_usd": [round(price * (1 - 0.02 * t), 2) for t in range(PERIODS)],
                        "cap": 20_000,
                    },
                }
            )
    return {
        "version": 1,
        "name": "bench-10-sites",
        "horizon": {"start": "2027Q1", "periods": PERIODS},
        "fabrics": [
            {"name": "2-tier", "template": "hgx-1k-roce", "tiers": 2},
            {"name": "3-tier", "template": "hgx-1k-roce", "tiers": 3},
        ],
        "curves": {"sizes": [2048, 4096, 8192], "place": place},
        "sites": sites,
        "programs": programs,
        "correlation": [[1.0, 0.6, 0.3], [0.6, 1.0, 0.4], [0.3, 0.4, 1.0]],
        "vendors": [
            {"name": "nvidia", "slip": {"probability": 0.2, "quarters": [1, 2]}},
            {"name": "optics-co", "slip": {"probability": 0.15, "quarters": [1, 1]}},
        ],
        "moves": {"probability": 0.2, "share": 0.25},
        "landing": {
            n: [names[(i + 1) % SITES], names[(i - 1) % SITES]] for i, n in enumerate(names)
        },
        "parts": parts,
        "costs": {
            "idle_usd_per_accelerator_quarter": 4380,
            "expedite_fraction": 0.25,
            "carry_fraction_per_quarter": 0.03,
            "rework_usd_per_accelerator": 500,
        },
    }


def _timed(label: str, fn: Any) -> Any:
    start = time.perf_counter()
    out = fn()
    print(f"{label}: {time.perf_counter() - start:.2f} s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solve", action="store_true", help="also the whole plan command")
    ap.add_argument("--place", action="store_true", help="curves with placement and cabling")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; pid {os.getpid()}, nice {os.nice(0)}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.yaml"
        doc = bench_plan(args.place)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        plan = load_plan(path)
        cache = Path(tmp) / "curves"
        print(
            f"plan: {len(plan.sites)} sites, {plan.horizon.periods} quarters, "
            f"{len(plan.programs)} programs, {len(plan.parts)} parts, sizes "
            f"{plan.curves.sizes}, place {plan.curves.place}"
        )
        _, points = _timed(
            "curves cold (every point designed)", lambda: design_points(plan, cache=cache)
        )
        print(f"  design points in the cache: {len(list(cache.glob('*.json')))}")
        # the plant's items are named by the cabling stage (trunk sizes, fibre types): supply
        # every one the designs need, at an illustrative price, then read the points back
        known = {p["id"] for p in doc["parts"]}
        needed = sorted({pid for pt in points.values() for pid in pt.parts} - known)
        doc["parts"] += [
            {
                "id": pid,
                "supplier": {"vendor": "plant-co", "lead_time": 1, "price_usd": 500, "cap": 5000},
            }
            for pid in needed
        ]
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        plan = load_plan(path)
        curves = _timed("curves warm (from the cache)", lambda: compute_curves(plan, cache=cache))
        sc = _timed(f"{SCENARIOS} scenarios", lambda: sample_scenarios(plan, SCENARIOS, SEED))
        problem = _timed("build_problem", lambda: build_problem(plan, curves, sc))
        print(
            f"  demand by {sc.periods[-1]}: median "
            f"{np.median(sc.demand[:, :, -1].sum(axis=1)):,.0f} "
            f"accelerators over {len(sc.sites)} sites; parts used "
            f"{int((problem.curves.units.sum(axis=(0, 1, 2)) > 0).sum())}"
        )
        if args.solve:
            if importlib.util.find_spec("clusterloom.capacity.menu") is None:
                print("plan --solve: skipped, capacity.menu is not installed")
                return
            env = dict(os.environ, CLUSTERLOOM_CACHE=str(Path(tmp)))  # its cache: tmp/curves
            cmd = [
                sys.executable, "-m", "clusterloom.cli.main", "plan", str(path),
                "-n", str(SCENARIOS), "--seed", str(SEED), "-o", str(Path(tmp) / "out"),
            ]  # fmt: skip
            start = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - start
            print(done.stdout[-2000:])
            if done.returncode != 0:
                print(done.stderr[-2000:])
            print(
                f"clusterloom plan (curves warm, {SCENARIOS} scenarios, solve, files): "
                f"{wall:.1f} s, exit {done.returncode}"
            )


if __name__ == "__main__":
    main()
