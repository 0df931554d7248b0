"""Fit the A100 step-time parameters on the calibration cases marked ``fit`` and print every
case's error (docs/workload.md, Calibration). Run from the repository root:

    PYTHONPATH=src python bench/calibrate_steptime.py [--fit]

Without ``--fit`` it prints the table for the catalog's parameters. With ``--fit`` it searches
``gemm_efficiency``, ``gemm_half_dim``, ``memory_efficiency`` and ``kernel_overhead_us`` (a
coarse grid, then coordinate refinement) for the smallest worst-case error on the fitted cases.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "workload"))

from reference_cases import CASES, Case, published_metric

from clusterloom.spec import parse_spec
from clusterloom.spec.catalog import builtin_catalog
from clusterloom.workload import step_ops, step_time

NAMES = ("gemm_efficiency", "gemm_half_dim", "memory_efficiency", "kernel_overhead_us")


def predict(case: Case, params: dict[str, float] | None = None) -> float:
    doc = yaml.safe_load(case.spec)
    if params is not None:
        acc = builtin_catalog().accelerators[doc["compute"]["accelerator_model"]]
        doc["catalog"] = {"accelerators": {acc_name(doc): {**acc.model_dump(), **params}}}
    spec = parse_spec(yaml.safe_dump(doc))
    return published_metric(case, step_time(spec, step_ops(spec)).step_s)


def acc_name(doc: dict[str, object]) -> str:
    compute = doc["compute"]
    assert isinstance(compute, dict)
    return str(compute["accelerator_model"])


def worst(params: dict[str, float], cases: list[Case]) -> float:
    return max(abs(predict(c, params) / c.published - 1) for c in cases)


def fit() -> dict[str, float]:
    cases = [c for c in CASES if c.fit]
    grid = {
        "gemm_efficiency": [0.6, 0.7, 0.8],
        "gemm_half_dim": [32.0, 128.0, 256.0],
        "memory_efficiency": [0.5, 0.8],
        "kernel_overhead_us": [2.0, 10.0],
    }
    best = min(
        (dict(zip(NAMES, values, strict=True)) for values in itertools.product(*grid.values())),
        key=lambda p: worst(p, cases),
    )
    step = {n: 0.25 for n in NAMES}
    for _ in range(4):
        for n in NAMES:
            for factor in (1 - step[n], 1 + step[n]):
                trial = {**best, n: best[n] * factor}
                if n.endswith("efficiency") and trial[n] > 1:
                    continue
                if worst(trial, cases) < worst(best, cases):
                    best = trial
            step[n] /= 2
    return best


def main() -> None:
    params = fit() if "--fit" in sys.argv else None
    if params is not None:
        print("fitted:", {k: round(v, 3) for k, v in params.items()})
    print(f"{'case':22} {'published':>9} {'predicted':>9} {'error':>7}  set")
    for c in CASES:
        p = predict(c, params if c.name.startswith(("sc21", "mlsys23")) else None)
        print(
            f"{c.name:22} {c.published:9.3f} {p:9.3f} {p / c.published - 1:+7.1%}  "
            f"{'fitted' if c.fit else 'held out'}"
        )


if __name__ == "__main__":
    main()
