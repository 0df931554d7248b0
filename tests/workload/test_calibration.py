"""The step-time model against published training throughput (``reference_cases.py``): every
A100 case within 10% with the catalog's one A100 parameter set, fitted on the cases marked
``fit`` (``bench/calibrate_steptime.py``) and held out on the others. PaLM on TPU v4 is analytic
only: its catalog entry carries the default efficiencies (the A100 fit) on TPU v4's roofline."""

from __future__ import annotations

import pytest
from reference_cases import CASES, Case, published_metric

from clusterloom.spec import parse_spec
from clusterloom.workload import step_ops, step_time

A100 = [c for c in CASES if c.name.startswith(("sc21", "mlsys23"))]


def _predicted(case: Case) -> float:
    spec = parse_spec(case.spec)
    return published_metric(case, step_time(spec, step_ops(spec)).step_s)


@pytest.mark.parametrize("case", A100, ids=lambda c: c.name)
def test_a100_cases_within_ten_percent(case: Case) -> None:
    predicted = _predicted(case)
    assert predicted == pytest.approx(case.published, rel=0.10), (case.source, predicted)


def test_fitted_and_held_out_cases_both_exist() -> None:
    assert sum(c.fit for c in A100) >= 5 and sum(not c.fit for c in A100) >= 5


def test_palm_is_predicted_within_ten_percent() -> None:
    """Held out, and no TPU parameter fitted: TPU v4 carries the default (A100-fitted)
    efficiencies."""
    palm = next(c for c in CASES if c.name == "palm-540b")
    assert _predicted(palm) == pytest.approx(palm.published, rel=0.10)


def test_published_metrics_are_the_papers_formulas() -> None:
    """SC21's 1T row: 163 TFLOP/s per GPU on 3,072 GPUs is 502 PFLOP/s aggregate (the table's
    last column), so the hardware-FLOP formula is the paper's."""
    case = next(c for c in CASES if c.name == "sc21-gpt-1008b")
    step = published_metric(case, 1.0) / 163.0  # the step time that gives 163 TFLOP/s
    assert published_metric(case, step) * 3072 / 1000 == pytest.approx(502, rel=0.01)
