"""The backtest (``capacity.backtest``), as issue 22 states its proof: on a seeded synthetic
history with biased and noisy forecasts, the learning plan's total realised cost beats
planning to the median and to the 90th percentile, and the learned bias converges to the
generated one; deterministic; the CLI's exit codes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from clusterloom.capacity.backtest import (
    DEFAULT_SOURCES,
    Backtest,
    run_backtest,
    synthetic_history,
)
from clusterloom.cli.main import app
from clusterloom.errors import SpecError


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("curves")


@pytest.fixture(scope="module")
def runs(cache: Path) -> dict[int, Backtest]:
    return {seed: run_backtest(8, seed, cache=cache) for seed in (0, 1)}


def test_the_history_has_the_generated_bias() -> None:
    h = synthetic_history(40, 3)
    assert np.all(np.diff(h.truth, axis=1) > 0)  # cumulative demand grows
    assert np.all(np.diff(h.forecasts, axis=3) >= 0)  # quantiles ordered
    for r, spec in enumerate(DEFAULT_SOURCES):
        ratio = [
            math.log(h.true(r, q + k) / h.forecasts[q, r, k, 1])
            for q in range(40)
            for k in range(h.horizon)
        ]
        # one error per forecast (shared by its leads), sigma = noise: 40 forecasts
        assert abs(np.mean(ratio) - spec.generated_bias) < 4 * spec.noise / math.sqrt(40)


@pytest.mark.parametrize("seed", [0, 1])
def test_learning_beats_median_and_p90_planning(runs: dict[int, Backtest], seed: int) -> None:
    bt = runs[seed]
    assert bt.total("learning") < bt.total("median")
    assert bt.total("learning") < bt.total("p90")
    # never below the hindsight optimum, decision by decision
    assert np.all(bt.cost_cents >= bt.hindsight_cents - 1.0)
    # before any outcome the learning plan is the stochastic plan
    i, j = bt.planners.index("learning"), bt.planners.index("stochastic")
    assert bt.cost_cents[0, i] == bt.cost_cents[0, j]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_learned_bias_converges(runs: dict[int, Backtest], seed: int) -> None:
    bt = runs[seed]
    opt = bt.bias_error("optimistic")
    assert opt[0] == pytest.approx(abs(DEFAULT_SOURCES[0].generated_bias))  # nothing known
    assert opt[-1] < 0.4 * opt[1] and opt[-1] < 0.08
    assert np.all(np.diff(bt.outcomes["optimistic"]) >= 0)
    # the unbiased source: within 3 standard errors (one error per forecast, shared by its
    # leads: sigma = noise over the 7 forecasts known by the last quarter)
    noisy = DEFAULT_SOURCES[1]
    assert bt.bias_error("noisy")[-1] < 3 * noisy.noise / math.sqrt(7)


def test_deterministic(runs: dict[int, Backtest], cache: Path) -> None:
    again = run_backtest(8, 0, cache=cache)
    a = json.dumps(runs[0].to_dict(), sort_keys=True)
    assert a == json.dumps(again.to_dict(), sort_keys=True)
    assert a != json.dumps(runs[1].to_dict(), sort_keys=True)


def test_bad_arguments() -> None:
    with pytest.raises(SpecError) as err:
        run_backtest(0, 0, horizon=1)
    assert {p.where for p in err.value.problems} == {"--quarters", "--horizon"}


def test_cli(cache: Path) -> None:
    runner = CliRunner()
    env = {"CLUSTERLOOM_CACHE": str(cache.parent)}
    r = runner.invoke(app, ["capacity", "backtest", "--quarters", "3", "--json"], env=env)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc["planners"]) == {"median", "p90", "stochastic", "learning"}
    r = runner.invoke(app, ["capacity", "backtest", "--quarters", "3"], env=env)
    assert r.exit_code == 0 and "learning" in r.output
    r = runner.invoke(app, ["capacity", "backtest", "--quarters", "-1"], env=env)
    assert r.exit_code == 2 and "--quarters" in r.output
