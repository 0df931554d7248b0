"""Triage: the labelled synthetic stream's recall and precision at the stated thresholds,
the tail probability as a closed form, a routine signal never above a novel one that changes
a decision, signals applied as stated, bad lines named, determinism and the command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.capacity.input import PlanInput, example_plan, quarter_index
from clusterloom.capacity.model import Curves
from clusterloom.capacity.triage import (
    ALPHA,
    Signal,
    apply_signal,
    parse_signals,
    recall_precision,
    signals_text,
    synthetic_stream,
    tail_p,
    triage,
)
from clusterloom.cli.main import app
from clusterloom.errors import SpecError

runner = CliRunner()
HEADER = "time,source,kind,target,period,value,unit\n"


def _signal(kind: str, target: str, value: str, unit: str, period: str = "") -> Signal:
    return Signal(0, "2026-12-01", "test", kind, target, period, value, unit)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_labelled_streams_recall_and_precision(plan: PlanInput, seed: int) -> None:
    stream = synthetic_stream(plan, n=150, novel=0.08, seed=seed)
    assert sum(s.label == "novel" for s in stream) >= 3
    result = triage(plan, stream, solve=0)
    recall, precision = recall_precision(result)
    assert recall >= 0.9 and precision >= 0.8, (recall, precision)


def test_tail_probability_closed_form() -> None:
    v = np.array([10.0])
    # one value with a noise of 0.1 x 10 + 0: two-sided normal tail
    assert tail_p(10.0, v, (0.1, 0.0)) == pytest.approx(1.0)
    assert tail_p(10.0 + 1.959964, v, (0.1, 0.0)) == pytest.approx(0.05, rel=1e-5)
    assert tail_p(10.0 - 1.959964, v, (0.1, 0.0)) == pytest.approx(0.05, rel=1e-5)
    # a mixture: the median of two far apart values is not a surprise, beyond them it is
    two = np.array([0.0, 100.0])
    assert tail_p(50.0, two, (0.0, 1.0)) == pytest.approx(1.0)
    assert tail_p(110.0, two, (0.0, 1.0)) < 1e-20


def test_routine_never_above_a_novel_signal_that_changes_a_decision(
    plan: PlanInput, curves: Curves
) -> None:
    """A few routine signals and one novel: switch:sn5600 (the plan orders ~10 now) at a
    ten-quarter lead time, past the horizon: ordering now stops paying."""
    routine = [s for s in synthetic_stream(plan, n=40, novel=0.0, seed=5) if s.label == "routine"][
        :6
    ]
    novel = Signal(
        99,
        "2026-12-02",
        "vendor",
        "supplier-notice",
        "switch:sn5600",
        "",
        "10",
        "lead_time_quarters",
        "novel",
    )
    result = triage(
        plan, (*routine, novel), curves=curves, base=example_plan().parent, solve=7, scenarios=4
    )
    first = result.ranked[0]
    assert first.signal.line == 99 and first.novel and first.changes_decision
    assert any("switch:sn5600" in c.move for c in first.changes)
    assert all(not t.novel for t in result.ranked[1:])
    # every signal was re-solved; the novel one ranks first whatever the routine ones change
    assert all(t.solved for t in result.ranked)


def test_triage_is_deterministic(plan: PlanInput, curves: Curves) -> None:
    stream = synthetic_stream(plan, n=30, novel=0.1, seed=3)
    assert signals_text(stream) == signals_text(synthetic_stream(plan, n=30, novel=0.1, seed=3))
    assert signals_text(stream) != signals_text(synthetic_stream(plan, n=30, novel=0.1, seed=4))
    kw = {"curves": curves, "base": example_plan().parent, "solve": 2, "scenarios": 3}
    a = json.dumps(triage(plan, stream, **kw).to_dict(), sort_keys=True)  # type: ignore[arg-type]
    b = json.dumps(triage(plan, stream, **kw).to_dict(), sort_keys=True)  # type: ignore[arg-type]
    assert a == b


def test_a_forecast_revision_is_applied_from_its_period(plan: PlanInput) -> None:
    s = _signal("forecast-revision", "pretrain@east", "320", "accelerators", "2027Q4")
    out = apply_signal(plan, s)
    old = np.asarray(plan.programs[0].demand["east"].accelerators)
    new = np.asarray(out.programs[0].demand["east"].accelerators)
    assert new[3, 1] == pytest.approx(320)  # the median at its period
    np.testing.assert_allclose(new[3:], old[3:] * 320 / 512)  # the spread scaled with it
    assert np.all(new[:3] <= new[3]) and np.all(np.diff(new, axis=0) >= 0)  # cumulative
    # a program with no forecast at a site gets one there from that period
    moved = apply_signal(
        plan, _signal("forecast-revision", "pretrain@west", "200", "gpus", "2027Q3")
    )
    assert moved.programs[0].demand["west"].accelerators == [[0.0]] * 2 + [[200.0]] * 6


def test_power_and_supply_signals_are_applied(plan: PlanInput) -> None:
    lost = apply_signal(plan, _signal("site-update", "east/b1/h2", "0", "it_mw"))
    hall = lost.sites[0].buildings[0].halls[1]
    start = quarter_index(plan.horizon.start)
    assert hall.ready == f"{(start + 8) // 4}Q{(start + 8) % 4 + 1}"  # never in the horizon
    fac = apply_signal(plan, _signal("site-update", "east/b1/h2", "2.5", "facility_mw"))
    assert fac.sites[0].buildings[0].halls[1].power.it_kw == pytest.approx(2000)  # 2.5 / 1.25
    site = apply_signal(plan, _signal("site-update", "east", "2.4", "it_mw"))
    assert sum(h.power.it_kw for h in site.sites[0].halls) == pytest.approx(2400)
    lt = apply_signal(plan, _signal("supplier-notice", "optic:fr4-400g", "4", "lead_time_quarters"))
    assert lt.parts[3].supplier.lead_time == 4
    cap = apply_signal(
        plan, _signal("supplier-notice", "switch:sn5600", "10", "cap_units", "2027Q3")
    )
    assert cap.parts[0].supplier.cap == [48.0, 48.0] + [10.0] * 6


def test_bad_lines_are_named_and_the_stream_refused(plan: PlanInput) -> None:
    text = HEADER + "\n".join(
        [
            "2026-12-01,f,site-update,east/b1/h1,,2.4,it_mw",  # good
            "2026-12-01,f,site-update,east/b1/h1,,-1,it_mw",  # negative power
            "2026-12-01,f,site-update,east/b1/h1,,2.4,facility_kva",  # no rule
            "2026-12-01,s,supplier-notice,optic:unknown,,3,lead_time_quarters",  # no supplier
            "2026-12-01,p,forecast-revision,pretrain@east,2027Q9,100,accelerators",
            "yesterday,p,forecast-revision,pretrain@east,2027Q2,100,accelerators",
            "2026-12-01,p,rumour,pretrain@east,2027Q2,100,accelerators",
            "2026-12-01,s,supplier-notice,switch:sn5600,,2.5,lead_time_quarters",
            "2026-12-01,f,site-update,east,,1e300,it_mw",
        ]
    )
    with pytest.raises(SpecError) as exc:
        parse_signals(text, plan, "s.csv")
    wheres = [p.where for p in exc.value.problems]
    assert wheres == [
        "s.csv:3 value",
        "s.csv:4 unit",
        "s.csv:5 target",
        "s.csv:6 period",
        "s.csv:7 time",
        "s.csv:8 kind",
        "s.csv:9 value",
        "s.csv:10 value",
    ]
    messages = " ".join(p.message for p in exc.value.problems)
    assert "without a rule" in messages and "a part with no supplier" in messages


def test_csv_and_json_lines_read_the_same(plan: PlanInput) -> None:
    stream = synthetic_stream(plan, n=20, seed=1)
    csv_signals = parse_signals(signals_text(stream), plan)
    lines = [
        json.dumps(
            {
                k: getattr(s, k)
                for k in ("time", "source", "kind", "target", "period", "value", "unit", "label")
            }
        )
        for s in stream
    ]
    json_signals = parse_signals("\n".join(lines) + "\n", plan)
    strip = [(s.kind, s.target, s.period, s.value, s.unit, s.label) for s in csv_signals]
    assert strip == [(s.kind, s.target, s.period, s.value, s.unit, s.label) for s in json_signals]
    with pytest.raises(SpecError) as exc:
        parse_signals(lines[0] + "\n{not json\n", plan, "s.jsonl")
    assert exc.value.problems[0].where == "s.jsonl:2"


def test_triage_and_signals_commands(tmp_path: Path, curves_cache: Path) -> None:
    env = {"CLUSTERLOOM_CACHE": str(curves_cache.parent)}
    stream = tmp_path / "s.csv"
    made = runner.invoke(
        app,
        [
            "capacity",
            "signals",
            str(example_plan()),
            "-o",
            str(stream),
            "-n",
            "40",
            "--novel",
            "0.1",
            "--seed",
            "2",
        ],
    )
    assert made.exit_code == 0, made.output
    args = ["capacity", "triage", str(example_plan()), str(stream), "--top", "2", "-n", "3"]
    result = runner.invoke(app, [*args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert len(doc["signals"]) == 40 and doc["alpha"] == ALPHA
    assert sum(s["solved"] for s in doc["signals"]) == 2
    shown = runner.invoke(app, args, env=env)
    assert shown.exit_code == 0 and "1. line" in shown.output
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "2026-12-01,f,site-update,east/b1/h1,,2.4,facility_kva\n")
    refused = runner.invoke(app, ["capacity", "triage", str(example_plan()), str(bad)], env=env)
    assert refused.exit_code == 2
    assert "bad.csv:2 unit" in refused.output and "Traceback" not in refused.output


def test_a_power_change_is_novel_beyond_the_noise_closed_form(plan: PlanInput) -> None:
    """One figure (2.4 MW) smoothed by 2 % + 0.001 MW: novel exactly when the change is over
    z sigma, z = the normal quantile at 1 - ALPHA / 2 (3.2905)."""
    sigma = 0.02 * 2.4 + 0.001
    z = 3.2905267
    for factor, novel in ((0.98, False), (1.02, True)):
        for sign in (-1, 1):
            value = 2.4 + sign * factor * z * sigma
            s = _signal("site-update", "east/b1/h1", f"{value:.6f}", "it_mw")
            (t,) = triage(plan, (s,), solve=0).ranked
            assert t.novel is novel, (value, t.p)


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 5000), st.integers(0, 7), st.sampled_from(["pretrain@east", "inference@west"]))
def test_any_revision_gives_a_valid_plan_with_that_median(
    plan: PlanInput, value: float, t: int, target: str
) -> None:
    period = f"{2027 + t // 4}Q{t % 4 + 1}"
    out = apply_signal(plan, _signal("forecast-revision", target, f"{value:.6g}", "gpus", period))
    program, _, site = target.partition("@")
    old = next(p for p in plan.programs if p.name == program).demand[site]
    new = next(p for p in out.programs if p.name == program).demand[site]
    table = np.asarray(new.accelerators)
    assert np.all(np.diff(table, axis=0) >= -1e-9) and np.all(np.diff(table, axis=1) >= -1e-9)
    median = float(np.interp(0.5, new.levels or [], table[t]))
    old_median = float(np.interp(0.5, old.levels or [], np.asarray(old.accelerators)[t]))
    expected = float(f"{value:.6g}") if old_median > 0 else old_median + float(f"{value:.6g}")
    assert median == pytest.approx(expected, rel=1e-9, abs=1e-9)
