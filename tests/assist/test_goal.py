"""Reading a goal: the built-in examples parse; a malformed goal is refused with one problem
per bad field, each named by its dotted path (the spec's error machinery, rooted at ``Goal``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.assist.goal import (
    Goal,
    example_goal_names,
    example_goal_text,
    goal_from_dict,
    load_goal,
    parse_goal,
)
from clusterloom.errors import SpecError


def minimal(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": 1,
        "name": "g",
        "compute": {"accelerators": 64},
        "network": {"bandwidth_per_accelerator_gbps": 400},
    }
    doc.update(changes)
    return doc


def problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as info:
        goal_from_dict(doc)
    return [(p.where, p.message) for p in info.value.problems]


@pytest.mark.parametrize("name", example_goal_names())
def test_every_example_goal_parses(name: str) -> None:
    goal = parse_goal(example_goal_text(name), f"example goal {name}")
    assert isinstance(goal, Goal) and goal.name == name


def test_the_examples_include_the_benchmarks_goals() -> None:
    assert {"hgx-1k", "rail-16k", "mrc-131k"} <= set(example_goal_names())


def test_defaults_of_a_minimal_goal() -> None:
    goal = goal_from_dict(minimal())
    assert goal.network.transports == ("roce-ecmp",)
    assert goal.failure.planes_down == 1 and goal.failure.floors.bisection == 0.0
    assert goal.optimise == ("cost", "power", "fct", "failure")
    assert goal.budget.max_cost_usd is None


def test_an_unknown_field_is_named_with_the_fields_allowed_there() -> None:
    got = problems(minimal(network={"bandwidth_per_accelerator_gbps": 400, "bandwith": 1}))
    assert len(got) == 1
    where, message = got[0]
    assert where == "network.bandwith"
    assert "unknown field" in message and "bandwidth_per_accelerator_gbps" in message


def test_each_bad_field_is_one_problem_with_its_path() -> None:
    doc = minimal(
        budget={"max_cost_usd": -5},
        failure={"planes_down": 1, "floors": {"bisection": 1.5}},
        space={"tiers": [4]},
    )
    where = [w for w, _ in problems(doc)]
    assert sorted(where) == ["budget.max_cost_usd", "failure.floors.bisection", "space.tiers[0]"]


def test_a_missing_section_is_named() -> None:
    doc = minimal()
    del doc["network"]
    assert problems(doc) == [("network", "required field is missing")]


def test_names_that_must_exist_are_checked() -> None:
    doc = minimal(
        network={"bandwidth_per_accelerator_gbps": 400, "transports": ["roce-ecmp", "tcp"]},
        space={"switches": ["tomahawk5-64x800g", "nope"]},
    )
    where = [w for w, _ in problems(doc)]
    assert where == ["network.transports[1]", "space.switches[1]"]


def test_inconsistent_fields_are_refused() -> None:
    (_, message), *_ = problems(minimal(optimise=["cost", "step_time"]))
    assert "step_time needs a job" in message
    (_, message), *_ = problems(minimal(failure={"planes_down": 1, "floors": {"plane": 0.5}}))
    assert "floors.plane" in message
    (_, message), *_ = problems(minimal(growth_to_accelerators=32))
    assert "below compute.accelerators" in message
    assert problems(minimal(compute={"accelerators": 60})) == [
        (
            "compute.accelerators",
            "60 accelerators do not fill whole nodes of 8; use a multiple of 8",
        )
    ]


def test_yaml_errors_and_versions(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        parse_goal("version: 1\nname: a\nname: b\n", "g.yaml")
    assert "given twice" in info.value.problems[0].message
    with pytest.raises(SpecError) as info:
        parse_goal("version: 2\nname: a\n", "g.yaml")
    assert info.value.problems[0].where == "version"
    with pytest.raises(SpecError) as info:
        load_goal(tmp_path / "missing.yaml")
    assert "cannot read" in info.value.problems[0].message


def test_a_goal_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(example_goal_text("hgx-1k"))
    assert load_goal(path) == parse_goal(example_goal_text("hgx-1k"))


def test_a_site_is_checked_as_a_spec_checks_it() -> None:
    template = {"rows": 2, "positions_per_row": 4, "pitch_m": 1.0, "origin_m": [2, 2]}
    hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template}
    site = {"buildings": [{"name": "b1", "halls": [hall]}, {"name": "b1", "halls": [hall]}]}
    assert problems(minimal(site=site)) == [("site.buildings", "building name 'b1' is used twice")]


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.integers(-5, 5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
FIELDS = [
    ("compute", "accelerators"),
    ("compute", "accelerators_per_node"),
    ("network", "bandwidth_per_accelerator_gbps"),
    ("network", "transports"),
    ("network", "nic"),
    ("failure", "planes_down"),
    ("budget", "max_cost_usd"),
    ("space", "tiers"),
    ("space", "switches"),
    (None, "optimise"),
    (None, "growth_to_accelerators"),
    (None, "seed"),
]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(FIELDS), values), min_size=1, max_size=4))
def test_any_value_anywhere_is_a_goal_or_problems_naming_fields(
    changes: list[tuple[tuple[str | None, str], object]],
) -> None:
    """Outside input: whatever a field holds, the reader gives a goal or ``SpecError`` whose
    every problem names a field, never another exception."""
    doc = minimal()
    for (section, name), value in changes:
        if section is None:
            doc[name] = value
        else:
            doc[section] = {**doc.get(section, {}), name: value}
    try:
        goal_from_dict(doc)
    except SpecError as exc:
        assert exc.problems and all(p.where and p.message for p in exc.problems)
