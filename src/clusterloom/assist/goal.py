"""A design goal (``clusterloom propose GOAL.yaml``, ``docs/assist.md``): what must hold and what
to optimise, read like a spec (frozen pydantic models, no unknown field, one ``Problem`` per bad
field with its dotted path).

What must hold: the accelerators (count, node, model, scale-up domain), the scale-out bandwidth
per accelerator, the NIC when it is fixed hardware, the oversubscription limits, the transports
to support, the failure tolerance (``failure: {planes_down: 1, floors: {bisection: 0.85}}``,
:class:`~clusterloom.assist.floors.Floors`), the budget of cost and network power, the site and
the growth to reserve. What to optimise: ``optimise`` (cost, power, fct, failure, step_time).
``space`` narrows the candidate designs ``propose`` enumerates.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from clusterloom.assist.floors import Floors
from clusterloom.errors import Problem, SpecError
from clusterloom.spec._base import SpecModel
from clusterloom.spec.job import JobSpec
from clusterloom.spec.limits import (
    Accelerators,
    BandwidthGbps,
    DeviceCount,
    PortGbps,
    PowerKw,
    PriceUsd,
    Seed,
)
from clusterloom.spec.models import Ratio, ScaleUpSpec
from clusterloom.spec.site import SiteSpec

__all__ = [
    "OBJECTIVES",
    "Budget",
    "FailureGoal",
    "Goal",
    "GoalCompute",
    "GoalNetwork",
    "GoalNic",
    "Objective",
    "Space",
    "example_goal_names",
    "example_goal_text",
    "goal_from_dict",
    "load_goal",
    "parse_goal",
]

Objective = Literal["cost", "power", "fct", "failure", "step_time"]
#: every objective, in the order the front and its tables show them
OBJECTIVES: tuple[Objective, ...] = ("cost", "power", "fct", "failure", "step_time")
Family = Literal["rail-optimized", "fat-tree"]
LeafPlacement = Literal["network-rack", "in-rack"]


class GoalCompute(SpecModel):
    """The accelerators every candidate has (the spec's ``compute`` without the NIC, which is
    a choice: ``network.nic``)."""

    accelerators: Accelerators
    accelerators_per_node: DeviceCount = 8
    accelerator_model: str = Field(default="generic", max_length=128)
    scale_up: ScaleUpSpec = ScaleUpSpec()


class GoalNic(SpecModel):
    """The accelerator NIC when it is fixed hardware: its ports per accelerator (the ones not
    given to scale-out serve scale-up) and the speeds a port runs at."""

    ports: DeviceCount | None = Field(
        default=None, description="ports per accelerator (default: as many as the bandwidth needs)"
    )
    port_speeds_gbps: tuple[PortGbps, ...] = Field(
        default=(), max_length=8, description="speeds a port may run at (default: the switches')"
    )


class MaxOversubscription(SpecModel):
    leaf: Ratio = 1.0
    spine: Ratio = 1.0


class GoalNetwork(SpecModel):
    bandwidth_per_accelerator_gbps: BandwidthGbps = Field(
        gt=0, description="scale-out bandwidth every accelerator gets, at least"
    )
    nic: GoalNic = GoalNic()
    max_oversubscription: MaxOversubscription = MaxOversubscription()
    transports: tuple[str, ...] = Field(
        default=("roce-ecmp",),
        min_length=1,
        max_length=8,
        description="transports the fabric must carry; the first is the one simulated",
    )


class FailureGoal(SpecModel):
    """The failure a candidate must survive and the floors it keeps through it."""

    planes_down: int = Field(default=1, ge=0, le=64, description="whole planes lost at once")
    floors: Floors = Floors()

    @model_validator(mode="after")
    def _plane_floor(self) -> FailureGoal:
        if self.planes_down and self.floors.plane:
            raise ValueError(
                "floors.plane cannot hold with a plane down (a plane that is down keeps none "
                "of its own bisection); use floors.bisection for the fabric's"
            )
        return self


class Budget(SpecModel):
    max_cost_usd: PriceUsd | None = Field(default=None, gt=0, description="the network's BOM")
    max_power_kw: PowerKw | None = Field(
        default=None, gt=0, description="the network's power (switches and optics, the BOM's)"
    )


class Space(SpecModel):
    """The candidate space (empty: every value the catalog and the sizing rules allow)."""

    families: tuple[Family, ...] = ("rail-optimized", "fat-tree")
    switches: tuple[str, ...] = Field(default=(), max_length=64)
    tiers: tuple[Literal[2, 3], ...] = (2, 3)
    planes: tuple[DeviceCount, ...] = Field(default=(), max_length=16)
    leaf_oversubscription: tuple[Ratio, ...] = Field(default=(1.0, 2.0, 3.0), max_length=8)
    leaf_placement: tuple[LeafPlacement, ...] = ("network-rack", "in-rack")


class Goal(SpecModel):
    """A design goal (module docstring)."""

    version: Literal[1]
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=48)
    description: str = Field(default="", max_length=4096)
    compute: GoalCompute
    network: GoalNetwork
    failure: FailureGoal = FailureGoal()
    budget: Budget = Budget()
    site: SiteSpec | None = None
    growth_to_accelerators: Accelerators | None = Field(
        default=None, description="the size to reserve upper layers for (growth)"
    )
    job: JobSpec | None = None
    space: Space = Space()
    optimise: tuple[Objective, ...] = Field(
        default=("cost", "power", "fct", "failure"), min_length=1, max_length=5
    )
    seed: Seed = Field(default=0, description="the standard traffic's seed")

    @model_validator(mode="after")
    def _consistent(self) -> Goal:
        if "step_time" in self.optimise and self.job is None:
            raise ValueError("optimise: step_time needs a job section")
        if len(set(self.optimise)) != len(self.optimise):
            raise ValueError("optimise names an objective twice")
        c = self.compute
        if self.growth_to_accelerators is not None and self.growth_to_accelerators < c.accelerators:
            raise ValueError(
                f"growth_to_accelerators ({self.growth_to_accelerators:,}) is below "
                f"compute.accelerators ({c.accelerators:,}); reserve a larger size or remove it"
            )
        return self


def _goal_problems(goal: Goal) -> list[Problem]:
    """Checks the schema cannot express: names that must exist elsewhere."""
    from clusterloom.sim.registry import REGISTRY
    from clusterloom.spec.catalog import builtin_catalog

    problems = []
    for i, name in enumerate(goal.network.transports):
        if name not in REGISTRY:
            known = ", ".join(sorted(REGISTRY))
            problems.append(
                Problem(f"network.transports[{i}]", f"unknown transport '{name}'; known: {known}")
            )
    switches = builtin_catalog().switches
    for i, name in enumerate(goal.space.switches):
        if name not in switches:
            known = ", ".join(sorted(switches))
            problems.append(
                Problem(f"space.switches[{i}]", f"unknown switch '{name}'; known: {known}")
            )
    if goal.site is not None:
        from clusterloom.spec.site import site_problems

        problems += site_problems(goal.site)
    c = goal.compute
    if c.accelerators % c.accelerators_per_node:
        problems.append(
            Problem(
                "compute.accelerators",
                f"{c.accelerators:,} accelerators do not fill whole nodes of "
                f"{c.accelerators_per_node}; use a multiple of {c.accelerators_per_node}",
            )
        )
    return problems


def goal_from_dict(data: Mapping[str, Any], source: str = "goal") -> Goal:
    """A checked :class:`Goal` from plain data (a parsed YAML document, a tool's arguments);
    ``SpecError`` with one problem per bad field, named by its dotted path."""
    from clusterloom.spec.load import validation_problems

    if not isinstance(data, Mapping):
        raise SpecError([Problem(source, "a goal is a mapping with version, name, ...")])
    try:
        goal = Goal.model_validate(dict(data))
    except ValidationError as exc:
        raise SpecError(validation_problems(exc, Goal)) from exc
    problems = _goal_problems(goal)
    if problems:
        raise SpecError(problems)
    return goal


def parse_goal(text: str, source: str = "<goal>") -> Goal:
    """A goal from YAML text (held to the spec's document limits first)."""
    from clusterloom.spec.load import read_yaml

    return goal_from_dict(read_yaml(text, source, "a goal"), source)


def load_goal(path: str | Path) -> Goal:
    """Read and check the goal at ``path``."""
    from clusterloom.spec.load import read_document

    return parse_goal(read_document(path, "a goal"), source=str(path))


def example_goal_names() -> tuple[str, ...]:
    """Names of the built-in example goals (``examples/goals/``), sorted."""
    files = resources.files("clusterloom.examples").joinpath("goals").iterdir()
    return tuple(sorted(f.name[: -len(".yaml")] for f in files if f.name.endswith(".yaml")))


def example_goal_text(name: str) -> str:
    """The YAML text of example goal ``name``."""
    if name not in example_goal_names():
        known = ", ".join(example_goal_names())
        raise SpecError([Problem("--example", f"no example goal '{name}'; known: {known}")])
    folder = resources.files("clusterloom.examples").joinpath("goals")
    return folder.joinpath(f"{name}.yaml").read_text("utf-8")
