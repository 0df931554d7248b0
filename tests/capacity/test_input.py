"""The plan input: the example loads; every bad input of issue 22 is refused with the field
named (non-monotone quantiles, negative power, inconsistent units, a unit without a rule, a
part with no supplier), and the checks the schema cannot express."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capacity_helpers import changed, example_data, plan_from, problems_of
from clusterloom.capacity.input import PlanInput, load_plan, quarter_index, quarter_label
from clusterloom.errors import SpecError

HALL = "sites[0].buildings[0].halls[0]"


def test_example_loads(plan: PlanInput) -> None:
    assert plan.periods == (
        "2027Q1", "2027Q2", "2027Q3", "2027Q4", "2028Q1", "2028Q2", "2028Q3", "2028Q4",
    )  # fmt: skip
    h2 = plan.sites[0].buildings[0].halls[1]
    assert h2.power.it_kw == pytest.approx(3.0 / 1.25 * 1000)  # facility / PUE
    assert h2.positions == 64


def test_quarters_round_trip() -> None:
    assert quarter_index("2028Q1") - quarter_index("2027Q4") == 1
    assert all(quarter_label(quarter_index(q)) == q for q in ("2027Q1", "1999Q4", "2100Q2"))


def test_quantiles_not_monotone_name_the_forecast() -> None:
    data = changed({"programs[0].demand.east.accelerators[2]": [384, 256, 512]})
    problems = problems_of(data)
    assert list(problems) == ["programs[0].demand.east"]
    assert "not monotone" in problems["programs[0].demand.east"]


def test_cumulative_demand_may_not_fall() -> None:
    data = changed({"programs[0].demand.east.accelerators[3]": [128, 256, 256]})
    assert "cumulative" in problems_of(data)["programs[0].demand.east"]


def test_negative_power_names_the_hall() -> None:
    problems = problems_of(changed({f"{HALL}.power": {"it_mw": -2, "pue": 1.2}}))
    assert list(problems) == [f"{HALL}.power.it_mw"]
    assert "greater than 0" in problems[f"{HALL}.power.it_mw"]


def test_inconsistent_units_are_refused() -> None:
    bad = {"it_mw": 2.4, "facility_mw": 2.4, "pue": 1.25}  # facility / PUE = 1.92, not 2.4
    problems = problems_of(changed({f"{HALL}.power": bad}))
    assert "disagree" in problems[f"{HALL}.power"]
    ok = {"it_mw": 2.4, "facility_mw": 3.0, "pue": 1.25}
    assert plan_from(changed({f"{HALL}.power": ok})).sites[0].halls[0].power.it_kw == 2400


def test_a_unit_without_a_rule_is_refused() -> None:
    problems = problems_of(changed({f"{HALL}.power": {"it_kw": 2400, "pue": 1.25}}))
    assert "unknown field; allowed here: it_mw, facility_mw, pue" in problems[f"{HALL}.power.it_kw"]
    problems = problems_of(changed({f"{HALL}.power": {"pue": 1.25}}))
    assert "give it_mw" in problems[f"{HALL}.power"]


def test_a_part_with_no_supplier() -> None:
    data = example_data()
    del data["parts"][2]["supplier"]
    assert problems_of(data) == {"parts[2].supplier": "required field is missing"}


@pytest.mark.parametrize(
    ("matrix", "where", "words"),
    [
        ([[1.0, 0.5], [0.4, 1.0]], "correlation[0][1]", "not symmetric"),
        ([[1.0, 0.5], [0.5, 0.9]], "correlation", "diagonal"),
        ([[1.0], [1.0]], "correlation", "2 x 2"),
    ],
)
def test_correlation_checked(matrix: list[list[float]], where: str, words: str) -> None:
    assert words in problems_of(changed({"correlation": matrix}))[where]


def test_correlation_must_be_positive_semi_definite() -> None:
    data = example_data()
    data["programs"].append(copy.deepcopy(data["programs"][1]) | {"name": "third"})
    # each pair alone is possible, the three together are not
    data["correlation"] = [[1.0, 0.9, -0.9], [0.9, 1.0, 0.9], [-0.9, 0.9, 1.0]]
    assert "positive semi-definite" in problems_of(data)["correlation"]


def test_cross_references_and_periods() -> None:
    data = example_data()
    data["programs"][0]["demand"]["north"] = data["programs"][0]["demand"]["east"]
    data["landing"] = {"east": ["south"]}
    data["installed"] = [{"site": "nowhere", "run": "x"}]
    data["parts"][0]["supplier"]["price_usd"] = [1.0, 2.0]
    data["programs"][1]["demand"]["west"]["accelerators"].pop()
    problems = problems_of(data)
    assert "no site 'north'" in problems["programs[0].demand.north"]
    assert "no site 'south'" in problems["landing.east"]
    assert "no site 'nowhere'" in problems["installed[0].site"]
    assert "2 values for 8 periods" in problems["parts[0].supplier.price_usd"]
    assert "7 periods for a horizon of 8" in problems["programs[1].demand.west"]


def test_lead_time_is_a_duration() -> None:
    data = changed({"parts[0].supplier.lead_time": {"levels": [0.5], "quarters": ["2027Q3"]}})
    assert "not a date" in problems_of(data)["parts[0].supplier.lead_time.quarters"]


def test_unreadable_and_bad_yaml(tmp_path: Path) -> None:
    base = tmp_path
    with pytest.raises(SpecError, match="cannot read"):
        load_plan(base / "missing.yaml")
    (base / "bad.yaml").write_text("version: 1\nname: [unclosed\n")
    with pytest.raises(SpecError, match=r"bad.yaml line 3, column 1: not valid YAML"):
        load_plan(base / "bad.yaml")


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.integers(0, 500), min_size=3, max_size=3),
    st.integers(0, 2),
    st.integers(1, 200),
)
def test_quantiles_are_accepted_exactly_when_monotone(row: list[int], swap: int, bump: int) -> None:
    """A sorted row of quantiles is accepted in every period; making one level exceed the
    next is refused, and the problem names that forecast."""
    increments = sorted(row)
    data = example_data()
    rows = [[increments[0], increments[1], increments[2]] for _ in range(8)]
    data["programs"][1]["demand"]["west"]["accelerators"] = rows
    assert plan_from(data).programs[1].demand["west"].quantile_table()[1].shape == (8, 3)
    broken = [list(r) for r in rows]
    i = min(swap, 1)
    broken[3][i] = broken[3][i + 1] + bump
    data["programs"][1]["demand"]["west"]["accelerators"] = broken
    assert "not monotone" in problems_of(data)["programs[1].demand.west"]
