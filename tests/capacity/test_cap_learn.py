"""Learning a source's bias and spread from outcomes (``capacity.learn``): the learned bias
of a generated history with a known bias is within a stated error of it (hypothesis over
biases and seeds); no history gives no correction; an unbiased, calibrated source is left
almost as it is; the correction in closed form; the spread against the stated one."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from clusterloom.capacity.input import PlanInput
from clusterloom.capacity.learn import (
    Z90,
    Learned,
    Observation,
    Prior,
    apply_learning,
    forecast_observations,
    learn,
    learning_statements,
)


def _history(
    bias: float, noise: float, stated: float, n: int, seed: int, source: str = "s"
) -> list[Observation]:
    """``n`` independent forecasts of one period (lead 1) by a source whose median is
    ``actual / exp(bias) x exp(noise e)`` and whose stated 10-90 % interval is
    ``median x exp(±1.2816 stated)``, observed through ``forecast_observations``."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        actual = float(rng.uniform(200, 2000))
        med = actual / math.exp(bias) * math.exp(noise * rng.standard_normal())
        row = [med * math.exp(-Z90 * stated), med, med * math.exp(Z90 * stated)]
        out += forecast_observations(
            source, f"p{i}", "east", [0.1, 0.5, 0.9], [row, row], ["2027Q1", "2027Q2"],
            {"2027Q2": actual},
        )  # fmt: skip
    return out


@given(
    bias=st.floats(-0.5, 0.5),
    noise=st.floats(0.02, 0.4),
    seed=st.integers(0, 10_000),
)
def test_the_learned_bias_is_within_its_stated_error(bias: float, noise: float, seed: int) -> None:
    n = 200
    obs = _history(bias, noise, noise, n, seed)
    assert len(obs) == n and all(o.lead == 1 for o in obs)
    s = learn(obs).sources["s"]
    # the raw mean of n independent log ratios: within 4 standard errors (p < 1e-4)
    assert abs(s.mean_log_ratio - bias) <= 4 * noise / math.sqrt(n)
    assert abs(s.stderr - noise / math.sqrt(n)) <= 0.25 * noise / math.sqrt(n)
    # the applied figure is shrunk toward 0 by n0 / (n + n0), never past it
    n0 = Prior().outcomes
    assert s.bias == s.mean_log_ratio * n / (n + n0)
    assert abs(s.bias - bias) <= 4 * noise / math.sqrt(n) + abs(bias) * n0 / (n + n0)
    # a calibrated source (stated = noise): spread ratio near 1
    assert abs(s.spread_ratio - 1.0) < 0.25


def test_an_over_confident_source_is_widened() -> None:
    s = learn(_history(0.0, 0.3, 0.1, 400, 1)).sources["s"]
    assert 2.6 < s.spread_ratio < 3.4  # errors 3x the stated spread
    assert s.spread > 2.5
    assert s.coverage is not None and s.coverage < 0.5  # a stated 80 % held far less


def test_shrinkage_with_little_history() -> None:
    one = learn(_history(0.4, 0.01, 0.01, 1, 3)).sources["s"]
    assert abs(one.mean_log_ratio - 0.4) < 0.05
    assert abs(one.bias - one.mean_log_ratio / 5) < 1e-12  # 1 outcome against a prior of 4
    many = learn(_history(0.4, 0.01, 0.01, 100, 3)).sources["s"]
    assert abs(many.bias - 0.4) < 0.03


def test_no_history_no_correction(plan: PlanInput) -> None:
    empty = learn([])
    assert empty.sources == {}
    assert apply_learning(plan, empty).model_dump() == plan.model_dump()
    said = learning_statements(plan, empty)
    assert len(said) == len(plan.programs)
    assert all("no outcomes yet" in s for s in said)


def _quantiles(plan: PlanInput) -> dict[tuple[str, str], np.ndarray]:
    return {
        (p.name, site): f.quantile_table()[1] for p in plan.programs for site, f in p.demand.items()
    }


def test_an_unbiased_calibrated_source_changes_almost_nothing(plan: PlanInput) -> None:
    obs = []
    for program in ("pretrain", "inference"):
        obs += _history(0.0, 0.15, 0.15, 2000, 7, source=program)
    learned = learn(obs)
    new = apply_learning(plan, learned)
    before, after = _quantiles(plan), _quantiles(new)
    for key, b in before.items():
        a = after[key]
        assert np.array_equal(a == 0, b == 0), key
        med = b[:, 1:2]
        # the median moved by at most 2 % and each quantile's distance from it by 10 %:
        # 4 standard errors of the bias (0.15 / sqrt(2000)) and of the spread ratio
        # (1 / sqrt(2 x 2000)) with room to spare
        safe = (b > 0) & (med > 0)
        gap = np.abs(np.log(np.where(safe, a, 1.0) / np.where(safe, b, 1.0)))
        room = 0.02 + 0.1 * np.abs(np.log(np.where(safe, b, 1.0) / np.where(med > 0, med, 1.0)))
        assert np.all(gap[safe] <= room[safe]), key


def test_the_correction_in_closed_form(plan: PlanInput) -> None:
    b = math.log(0.8)
    learned = Learned(
        {
            "pretrain": learn([Observation("pretrain", 1, b)] * 10_000).sources["pretrain"],
        }
    )
    s = learned.sources["pretrain"]
    assert abs(s.bias - b) < 1e-3 and s.spread_outcomes == 0 and s.spread == 1.0
    new = apply_learning(plan, learned)
    before, after = _quantiles(plan), _quantiles(new)
    b0 = before[("pretrain", "east")]
    factor = np.array([math.exp(s.bias_at(t)) for t in range(b0.shape[0])])[:, None]
    expected = np.maximum.accumulate(np.round(b0 * factor, 6), axis=0)
    assert np.allclose(after[("pretrain", "east")], expected)
    assert np.array_equal(after[("inference", "west")], before[("inference", "west")])
    said = learning_statements(plan, learned)
    assert any("pretrain" in t and "high" in t for t in said)


def test_spread_scales_log_distances_about_the_median(plan: PlanInput) -> None:
    base = learn([Observation("pretrain", 0, 0.0, sigma=0.1)] * 10_000).sources["pretrain"]
    from dataclasses import replace

    wide = Learned({"pretrain": replace(base, spread=2.0)})
    new = apply_learning(plan, wide)
    b, a = _quantiles(plan)[("pretrain", "east")], _quantiles(new)[("pretrain", "east")]
    t = 3  # [384, 512, 640] -> the median kept, ln distances doubled
    assert math.isclose(a[t, 1], b[t, 1])
    assert math.isclose(a[t, 0], b[t, 1] * (b[t, 0] / b[t, 1]) ** 2, rel_tol=1e-6)
    assert math.isclose(a[t, 2], b[t, 1] * (b[t, 2] / b[t, 1]) ** 2, rel_tol=1e-6)
    assert np.all(np.diff(a, axis=1) >= 0) and np.all(np.diff(a, axis=0) >= 0)


def test_observations_in_closed_form() -> None:
    row = [80.0, 100.0, 125.0]
    obs = forecast_observations(
        "s", "p", "east", [0.1, 0.5, 0.9], [row, row], ["2027Q1", "2027Q2"],
        {"2027Q2": 110.0, "2027Q3": 1.0},
    )  # fmt: skip
    assert len(obs) == 1
    o = obs[0]
    assert o.lead == 1 and o.period == "2027Q2"
    assert math.isclose(o.log_ratio, math.log(1.1))
    assert o.sigma is not None
    assert math.isclose(o.sigma, (math.log(125) - math.log(80)) / (2 * Z90))
    assert o.inside is True
    # a median of 0 or an actual of 0 gives no log ratio
    zero = forecast_observations("s", "p", "e", [0.5], [[0.0]], ["2027Q1"], {"2027Q1": 5.0})
    assert zero == []


def test_a_sample_set_forecast_is_corrected_path_by_path(plan: PlanInput) -> None:
    data = plan.model_dump(mode="json")
    paths = [[100.0 * (i + 1) + 40.0 * t for t in range(8)] for i in range(5)]
    data["programs"][0]["demand"]["east"] = {"samples": paths}
    sampled = PlanInput.model_validate(data)
    b = math.log(1.25)
    learned = learn([Observation("pretrain", 0, b)] * 20_000)
    new = apply_learning(sampled, learned)
    got = new.programs[0].demand["east"].samples
    assert got is not None
    s = learned.sources["pretrain"]
    for path, moved in zip(paths, got, strict=True):
        for t, (v, w) in enumerate(zip(path, moved, strict=True)):
            assert math.isclose(w, round(v * math.exp(s.bias_at(t)), 6), rel_tol=1e-9)


@given(
    biases=st.lists(st.floats(-1.5, 1.5), min_size=1, max_size=8),
    spread=st.floats(0.1, 10.0),
)
def test_any_correction_keeps_a_forecast_valid(
    plan: PlanInput, biases: list[float], spread: float
) -> None:
    """Whatever was learned, the corrected plan passes the plan's own checks: quantiles
    monotone across levels, cumulative demand not falling, zeros kept."""
    from dataclasses import replace

    obs = [Observation("pretrain", lead, b) for lead, b in enumerate(biases) for _ in range(50)]
    s = replace(learn(obs).sources["pretrain"], spread=spread)
    new = apply_learning(plan, Learned({"pretrain": s}))  # a SpecError would fail the test
    before, after = _quantiles(plan), _quantiles(new)
    a, b = after[("pretrain", "east")], before[("pretrain", "east")]
    assert np.all(np.diff(a, axis=1) >= 0) and np.all(np.diff(a, axis=0) >= 0)
    assert np.array_equal(a == 0, b == 0)
    assert np.array_equal(after[("inference", "west")], before[("inference", "west")])
