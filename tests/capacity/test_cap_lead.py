"""Lead-time and readiness slips (issue 22 item 6; ``learn.learn_slips``,
``memory.slip_observations``, ``learn.apply_learning``, ``actuals`` delivered rows): the
shrunk mean in closed form and as a hypothesis property, the quoted lead and stated date read
from the decision's own plan, deliveries known only once arrived, the plan's lead times and
ready dates moved, bad delivered rows refused naming the line, and the backtest's lead-time
case converging to the generated slip while every part that did not slip stays at 0."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.capacity.actuals import Actual, parse_actuals
from clusterloom.capacity.backtest import SLIPPED_PART, run_backtest
from clusterloom.capacity.input import Distribution, PlanInput, quarter_index
from clusterloom.capacity.learn import (
    Learned,
    Prior,
    SlipObservation,
    apply_learning,
    learn,
    learn_slips,
    learning_statements,
)
from clusterloom.capacity.memory import (
    MEMORY_SCHEMA,
    learn_from_records,
    outcome_record,
    slip_observations,
)
from clusterloom.changes import Decision
from clusterloom.cli.main import app
from clusterloom.errors import SpecError

HEADER = "quantity,site,program,period,value,part,delivered\n"


# ---- the actuals reader ----------------------------------------------------------------------


def test_delivered_rows_parse_and_old_files_still_do() -> None:
    rows = parse_actuals(
        HEADER + "delivered,east,,2027Q1,48,switch:sn5600,2027Q4\n"
        "demand,east,pretrain,2027Q1,512,,\nready,east/h2,,2027Q3,1,,\n"
    )
    d = next(a for a in rows if a.quantity == "delivered")
    assert (d.part, d.delivered, d.lead, d.value) == ("switch:sn5600", "2027Q4", 3, 48.0)
    assert d.as_list() == ["delivered", "east", "", "2027Q1", 48.0, "switch:sn5600", "2027Q4"]
    old = parse_actuals("quantity,site,program,period,value\ndemand,east,pretrain,2027Q1,512\n")
    assert old[0].as_list() == ["demand", "east", "pretrain", "2027Q1", 512.0]


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        (
            "quantity,site,program,period,value\ndelivered,east,,2027Q1,4\n",
            "<actuals>:2",
            "part,delivered",
        ),
        (HEADER + "delivered,east,,2027Q2,4,switch:x,2027Q1\n", "<actuals>:2 delivered", "before"),
        (HEADER + "delivered,east,,2027Q2,4,switch:x,soon\n", "<actuals>:2 delivered", "quarter"),
        (HEADER + "delivered,east,,2027Q2,4,sn5600,2027Q3\n", "<actuals>:2 part", "part id"),
        (HEADER + "demand,east,p,2027Q2,4,switch:x,\n", "<actuals>:2 part", "only a delivered"),
        (HEADER + "delivered,east,pretrain,2027Q2,4,switch:x,2027Q3\n", "<actuals>:2 program", ""),
        (HEADER + "delivered,east,,2027Q2,-4,switch:x,2027Q3\n", "<actuals>:2 value", ""),
        (HEADER + "delivered,east,,2027Q2,4,switch:x\n", "<actuals>:2", "6 columns"),
        ("quantity,site,program,period,value,part\n", "<actuals>:1", "header"),
    ],
)
def test_bad_delivered_rows_are_refused_naming_the_line(text: str, where: str, says: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_actuals(text)
    assert [p.where for p in err.value.problems] == [where]
    assert says in err.value.problems[0].message


def test_the_same_delivery_twice_is_refused() -> None:
    row = "delivered,east,,2027Q2,4,switch:x,2027Q3\n"
    with pytest.raises(SpecError, match="the same figure as line 2"):
        parse_actuals(HEADER + row + row)
    # two orders of the same quarter arriving in different quarters are two figures
    assert len(parse_actuals(HEADER + row + "delivered,east,,2027Q2,4,switch:x,2027Q4\n")) == 2


# ---- the estimator ---------------------------------------------------------------------------


def test_shrunk_mean_slip_closed_form() -> None:
    pairs = zip([1.0, 1.0, 2.0, 0.0], "abcd", strict=True)
    obs = [SlipObservation("lead", "v/p", x, cluster=c) for x, c in pairs]
    got = learn_slips(obs, Prior(outcomes=4))["lead:v/p"]
    assert got.mean == 1.0 and got.applied == pytest.approx(4 * 1.0 / (4 + 4))
    assert got.spread == pytest.approx(math.sqrt(2 / 3))
    # clustered by observation (4 clusters): sqrt(G/(G-1) * sum(resid^2)) / n
    assert got.stderr == pytest.approx(math.sqrt(4 / 3 * 2) / 4)
    # no prior: the raw mean; one cluster: no standard error
    assert learn_slips(obs, Prior(outcomes=0))["lead:v/p"].applied == 1.0
    one = learn_slips([SlipObservation("ready", "east", 2.0, "h")], Prior())["ready:east"]
    assert math.isnan(one.stderr) and one.applied == pytest.approx(2 / 5) and one.spread == 0.0
    assert learn_slips([]) == {}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-3, 6), min_size=1, max_size=40),
    st.floats(0.0, 20.0),
)
def test_the_applied_slip_lies_between_no_slip_and_the_mean(slips: list[int], n0: float) -> None:
    got = learn_slips([SlipObservation("lead", "k", float(x)) for x in slips], Prior(n0))["lead:k"]
    lo, hi = sorted((0.0, got.mean))
    assert lo - 1e-12 <= got.applied <= hi + 1e-12
    assert got.applied == pytest.approx(len(slips) * float(np.mean(slips)) / (len(slips) + n0))


# ---- memory: observations from recorded decisions --------------------------------------------


def _decision(plan: PlanInput, actuals: list[Actual], name: str = "p") -> Decision:
    context = {"memory": {"schema": MEMORY_SCHEMA, "plan": plan.model_dump(mode="json")}}
    return outcome_record(Decision(proposal=name, context=context, chosen=""), actuals, None)


def test_slips_read_the_quote_and_date_of_the_decisions_own_plan(plan: PlanInput) -> None:
    acts = [
        # sn5600 is quoted {0.5: 2, 0.9: 3}: median 2; delivered in 3 -> slip 1
        Actual("delivered", "east", "", "2027Q1", 48, "switch:sn5600", "2027Q4"),
        # the same order in a second outcome counts once
        # tomahawk3 is quoted 1; delivered in 1 -> slip 0
        Actual("delivered", "west", "", "2027Q1", 8, "switch:tomahawk3-32x400g", "2027Q2"),
        # arrives in 2028Q2: not known before 2028Q1
        Actual("delivered", "east", "", "2027Q2", 48, "switch:sn5600", "2028Q2"),
        # a part the plan does not quote: no observation
        Actual("delivered", "east", "", "2027Q1", 1, "switch:other", "2027Q2"),
        # east/h2 stated median 2027Q3, ready 2027Q4 -> +1; h1 states no date
        Actual("ready", "east/h2", "", "2027Q3", 0),
        Actual("ready", "east/h2", "", "2027Q4", 1),
        # west's h1 by the site's row: median 2027Q3, ready 2027Q2 -> -1
        Actual("ready", "west", "", "2027Q2", 1),
    ]
    decisions = [("a", _decision(plan, acts, "a")), ("b", _decision(plan, acts[:1], "b"))]
    obs = slip_observations(decisions, known_before="2028Q1")
    got = sorted((o.kind, o.key, o.slip) for o in obs)
    assert got == [
        ("lead", "nvidia/switch:sn5600", 1.0),
        ("lead", "switch-co/switch:tomahawk3-32x400g", 0.0),
        ("ready", "east", 1.0),
        ("ready", "west", -1.0),
    ]
    later = sorted(o.slip for o in slip_observations(decisions) if o.key.endswith("sn5600"))
    assert later == [1.0, 2.0]  # 2027Q2 -> 2028Q2 is 4 quarters, quoted 2: slip 2
    learned = learn_from_records(decisions, prior=Prior(0.0), known_before="2028Q1")
    assert learned.slip("ready", "east") is not None
    assert learned.slip("lead", "nvidia/switch:sn5600").applied == 1.0  # type: ignore[union-attr]


# ---- applying to the next plan ---------------------------------------------------------------


def _learned(*obs: SlipObservation, n0: float = 0.0) -> Learned:
    return learn([], Prior(n0), obs)


def test_apply_moves_lead_times_and_ready_dates(plan: PlanInput) -> None:
    learned = _learned(
        SlipObservation("lead", "nvidia/switch:sn5600", 1.0, "a"),
        SlipObservation("lead", "nvidia/switch:sn5600", 2.0, "b"),
        SlipObservation("lead", "switch-co/switch:tomahawk3-32x400g", 1.0, "a"),
        SlipObservation("ready", "west", 2.0, "west/h1"),
        SlipObservation("ready", "east", -1.0, "east/h2"),
    )
    new = apply_learning(plan, learned)
    parts = {p.id: p.supplier.lead_time for p in new.parts}
    sn = parts["switch:sn5600"]
    assert isinstance(sn, Distribution)
    assert sn.levels == [0.5, 0.9] and sn.values() == [3.5, 4.5]  # {2, 3} moved by 1.5
    tom = parts["switch:tomahawk3-32x400g"]
    assert isinstance(tom, Distribution)  # a certain 1 with one slip of 1 (spread 0): 2
    assert tom.levels == [0.1, 0.5, 0.9] and tom.values() == [2.0, 2.0, 2.0]
    old = {p.id: p.supplier.lead_time for p in plan.parts}
    for pid in parts:  # the parts nothing was learned of are as quoted
        if pid not in ("switch:sn5600", "switch:tomahawk3-32x400g"):
            assert parts[pid] == old[pid]
    start = quarter_index(plan.horizon.start)
    west = new.sites[1].halls[0].ready
    east_h1, east_h2 = (h.ready for h in new.sites[0].halls)
    assert isinstance(west, Distribution) and isinstance(east_h2, Distribution)
    # west/h1 stated 2027Q1/Q3/2028Q2 (offsets 0, 2, 5) moved by +2
    assert west.values() == [
        quarter_index("2027Q1") - start + 2, quarter_index("2027Q3") - start + 2,
        quarter_index("2028Q2") - start + 2,
    ]  # fmt: skip
    # east/h2 stated 2027Q2/Q3/2028Q1 (offsets 1, 2, 4) moved by -1
    assert east_h2.values() == [0.0, 1.0, 3.0]
    assert east_h1 is None  # no stated date: nothing to move
    said = learning_statements(plan, learned)
    assert any("nvidia/switch:sn5600" in s and "+1.50 quarters" in s for s in said)
    assert any("site west" in s and "ready dates moved by +2.00" in s for s in said)


def test_without_slips_the_plan_and_statements_are_as_before(plan: PlanInput) -> None:
    empty = learn([], Prior())
    assert apply_learning(plan, empty) == plan
    assert "slips" not in empty.to_dict()
    assert all("quarters" not in s for s in learning_statements(plan, empty))


def test_an_early_slip_clips_at_the_start_and_keeps_the_plan_valid(plan: PlanInput) -> None:
    new = apply_learning(plan, _learned(SlipObservation("ready", "east", -9.0)))
    h2 = new.sites[0].halls[1].ready
    assert isinstance(h2, Distribution) and h2.values() == [0.0, 0.0, 0.0]


# ---- the backtest's lead-time case -----------------------------------------------------------


@pytest.fixture(scope="module")
def lead_case(tmp_path_factory: pytest.TempPathFactory) -> object:
    return run_backtest(24, 0, lead_slip=1.0, cache=tmp_path_factory.mktemp("curves"))


def test_the_learned_lead_slip_converges_to_the_generated_one(lead_case: object) -> None:
    bt = lead_case
    vendor, part, _quoted = SLIPPED_PART
    key = f"{vendor}/{part}"
    final = bt.final.slip("lead", key)  # type: ignore[attr-defined]
    assert final is not None and final.outcomes >= 12
    # the raw mean is the mean of the slips drawn in the quarters that ordered the part
    ordered = [
        int(bt.slip_drawn[q])  # type: ignore[attr-defined]
        for q, rec in enumerate(bt.records[1::2])  # type: ignore[attr-defined]
        if any(row[5:6] == [part] for row in _outcome_rows(rec))
    ]
    assert final.mean == pytest.approx(float(np.mean(ordered)))
    # Poisson(1): within 3 standard errors of the generated mean
    assert abs(final.mean - 1.0) < 3 * math.sqrt(1.0 / final.outcomes)
    learned = bt.learned_slip[key]  # type: ignore[attr-defined]
    assert learned[0] == 0.0  # nothing known before the first delivery
    assert abs(learned[-1] - 1.0) < abs(learned[0] - 1.0)
    # every other part delivered as quoted: learned 0 throughout
    for k, v in bt.learned_slip.items():  # type: ignore[attr-defined]
        if k != key:
            assert np.all(v == 0.0)
    doc = bt.to_dict()  # type: ignore[attr-defined]
    assert doc["lead_time"]["slipped"] == key and doc["lead_time"]["generated_slip"] == 1.0


def test_learning_the_slip_is_worth_something(
    lead_case: object, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The same history and slips, the learning planner with demand learning alone (its
    lead times as quoted): learning the slip lowers its realised cost."""
    alone = run_backtest(
        24, 0, lead_slip=1.0, learn_lead=False, cache=tmp_path_factory.mktemp("curves2")
    )
    # the slip is still learned (from that planner's own orders), only not applied
    key = f"{SLIPPED_PART[0]}/{SLIPPED_PART[1]}"
    assert alone.learned_slip[key][-1] > 0.3
    assert lead_case.total("learning") < alone.total("learning")  # type: ignore[attr-defined]
    for p in ("median", "p90", "stochastic"):  # the others are untouched by it
        assert alone.total(p) == lead_case.total(p)  # type: ignore[attr-defined]


def _outcome_rows(rec: Decision) -> list[list[object]]:
    import json

    rows: list[list[object]] = json.loads(rec.outcome)["actuals"]
    return rows


def test_the_default_backtest_has_no_lead_case(tmp_path: Path) -> None:
    bt = run_backtest(2, 0, horizon=2, scenarios=2, cache=tmp_path)
    assert "lead_time" not in bt.to_dict() and bt.final.slips == {}
    with pytest.raises(SpecError, match="--lead-slip"):
        run_backtest(2, 0, lead_slip=-1.0, cache=tmp_path)


def test_cli_lead_slip_out_of_range_exits_2() -> None:
    result = CliRunner().invoke(app, ["capacity", "backtest", "--lead-slip", "9"])
    assert result.exit_code == 2 and "--lead-slip" in result.output


def test_cli_plan_learns_slips_from_a_log(plan: PlanInput, tmp_path: Path) -> None:
    """End to end: a log whose outcome has deliveries and a ready date; ``plan --learn-from``
    says the slips in menu.json, its JSON and the page, and refuses a bad delivered row."""
    import json

    from clusterloom.capacity.input import example_plan
    from clusterloom.capacity.memory import record_decision

    acts = [
        Actual("delivered", "east", "", "2027Q1", 16, "switch:sn5600", "2027Q4"),
        Actual("ready", "east/h2", "", "2027Q4", 1),
    ]
    log = tmp_path / "d.jsonl"
    record_decision(_decision(plan, acts), log=log)
    run = tmp_path / "run"
    env = {"CLUSTERLOOM_CACHE": str(tmp_path / "cache")}
    args = ["plan", str(example_plan()), "-n", "4", "--no-menu", "--learn-from", str(log)]
    r = CliRunner().invoke(app, [*args, "--json", "-o", str(run)], env=env)
    assert r.exit_code == 0, r.output
    learning = json.loads(r.stdout)["learning"]
    assert json.loads((run / "menu.json").read_text())["learning"] == learning
    sn = learning["slips"]["lead:nvidia/switch:sn5600"]
    assert sn["mean"] == 1.0 and sn["applied"] == pytest.approx(0.2)  # one of 1, prior 4
    assert learning["slips"]["ready:east"]["mean"] == 1.0  # stated 2027Q3, ready 2027Q4
    said = " ".join(learning["statements"])
    assert "nvidia/switch:sn5600: lead time slipped +1.00" in said and "site east" in said
    assert "lead time slipped" in (run / "plan.html").read_text()
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "delivered,east,,2027Q2,1,switch:sn5600,2027Q1\n")
    r = CliRunner().invoke(
        app, ["capacity", "outcome", "p", "--actuals", str(bad), "--log", str(log)], env=env
    )
    assert r.exit_code == 2 and "bad.csv:2 delivered" in r.output and "Traceback" not in r.output
