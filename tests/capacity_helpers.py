"""Shared builders of capacity plans for the tests: a plan as plain data, changed and parsed
through the same ``parse_plan`` a user's file goes through."""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from clusterloom.capacity.input import PlanInput, example_plan, parse_plan
from clusterloom.errors import SpecError


# A Menu-shaped object (the fields capacity.menu.Menu has), for the page and the writer.
@dataclass(frozen=True)
class Move:
    name: str
    kind: str
    site: str
    part: str
    period: str
    quantity: float
    expected_cost_cents: float
    cvar_cents: float
    protects: tuple[str, ...]
    option_value_cents: float
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Menu:
    moves: tuple[Move, ...]
    expected_cost_cents: float
    cvar_cents: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


MENU = Menu(
    moves=(
        Move(
            "order switch:sn5600 now",
            "order",
            "east",
            "switch:sn5600",
            "2027Q1",
            24,
            1_234_500_00,
            2_000_000_00,
            ("s3", "s17"),
            50_000_00,
            ("the nvidia slip in 2 of 200 scenarios leaves <b>east</b> idle",),
        ),
        Move("defer", "defer", "", "", "", 0, 1_500_000_00, 3_000_000_00, (), 0, ()),
    ),
    expected_cost_cents=1_234_500_00,
    cvar_cents=2_000_000_00,
)


def example_data() -> dict[str, Any]:
    data = yaml.safe_load(example_plan().read_text())
    assert isinstance(data, dict)
    return data


def plan_from(data: dict[str, Any]) -> PlanInput:
    return parse_plan(yaml.safe_dump(data, sort_keys=False))


def problems_of(data: dict[str, Any]) -> dict[str, str]:
    """The problems a plan is refused with, by where."""
    try:
        plan_from(data)
    except SpecError as exc:
        return {p.where: p.message for p in exc.problems}
    raise AssertionError("the plan was accepted")


def changed(paths: dict[str, Any]) -> dict[str, Any]:
    """The example's data with values set at dotted paths (``a.b[0].c``)."""
    data = copy.deepcopy(example_data())
    for path, value in paths.items():
        set_path(data, path, value)
    return data


def set_path(data: Any, path: str, value: Any) -> None:
    keys: list[str | int] = []
    for part in path.replace("]", "").replace("[", ".").split("."):
        keys.append(int(part) if part.isdigit() else part)
    node = data
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
