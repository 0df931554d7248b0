"""The local search after a hall model (``placement.improve``): never worse, every rule of the
hall model kept (recomputed here), a known optimum reached from a bad start, rows exchanged."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.placement import solve as S
from clusterloom.placement.demand import Demand
from clusterloom.placement.floor import FloorPlan
from clusterloom.placement.improve import _cable, _Hall, _valid, improve_singles, polish
from clusterloom.spec import SiteSpec
from helpers import MINIMAL_SPEC, hall_case, spec_dict

Links = dict[tuple[int, int], int]


def _case(
    base: str, template: dict[str, object], blocked: list[str] | None = None
) -> tuple[SiteSpec, FloorPlan, Demand, list[int], Links]:
    hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template, "door_m": [0, 0]}
    if blocked:
        hall["blocked"] = blocked
    site, floor, demand, links = hall_case(base, hall)
    return site, floor, demand, list(range(len(demand.units))), links


def _rules_hold(
    site: SiteSpec,
    floor: FloorPlan,
    demand: Demand,
    at: dict[int, int],
    starts: dict[int, list[int]],
) -> None:
    """Allowed starts, no overlap and row budgets, recomputed from the arrays."""
    assert all(at[u] in starts[u] for u in at)
    covered = [p for u, a in at.items() for p in range(a, a + len(demand.units[u].racks))]
    assert len(covered) == len(set(covered))
    pos = floor.hall_positions(0)
    load = np.zeros(len(floor.row_names))
    for u, a in at.items():
        load[floor.pos_row[pos[a]]] += demand.rack_power_w[list(demand.units[u].racks)].sum()
    assert (load <= floor.row_power_w + 1e-6).all()


def test_a_bad_start_reaches_the_known_optimum() -> None:
    """Three racks (compute, leaf, spine; 16 links each way) on one row of three positions
    1 m apart, started with the leaf rack at an end (16 x 1 + 16 x 2 = 48): a swap puts the
    leaf in the middle, the proven optimum of 32 (``test_placement``)."""
    template = {"rows": 1, "positions_per_row": 3, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    site, floor, demand, units, links = _case(MINIMAL_SPEC, template)
    pos = floor.hall_positions(0)
    starts = {u: S._allowed_starts(floor, demand, pos, demand.units[u]) for u in units}
    role = {demand.rack_role[demand.units[u].racks[0]]: u for u in units}
    start = {role["compute"]: 0, role["spine"]: 1, role["leaf"]: 2}
    hall = _Hall(floor, demand, site, 0, pos, units, links, S.DM)
    assert _cable(hall, start, links) == pytest.approx(48.0)
    pitch = S._pitch_dm(floor, pos)
    out = improve_singles(hall, starts, links, start, pitch)
    assert out[role["leaf"]] == 1
    assert _cable(hall, out, links) == pytest.approx(32.0)
    placed = {u: int(pos[a]) for u, a in start.items()}
    moved, cost = polish(
        floor, demand, site, 0, units, starts, links, placed, 48.0, dm=S.DM, pitch_dm=pitch
    )
    assert cost == pytest.approx(32.0) and moved[role["leaf"]] == int(pos[1])
    # given a placement it cannot improve, polish returns it as it is
    assert polish(
        floor, demand, site, 0, units, starts, links, moved, cost, dm=S.DM, pitch_dm=pitch
    ) == (moved, cost)


def test_rows_are_exchanged_to_bring_the_racks_to_the_door() -> None:
    """Two rows of three, the door at the hall's corner (0, 0); the compute rack has 40 links
    leaving the hall, and all three racks start in the far row: exchanging the rows (each
    rack keeps its place in its row) brings them to the row by the door, cheaper, and the
    result keeps every rule."""
    template = {"rows": 2, "positions_per_row": 3, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    site, floor, demand, units, links = _case(MINIMAL_SPEC, template)
    pos = floor.hall_positions(0)
    starts = {u: S._allowed_starts(floor, demand, pos, demand.units[u]) for u in units}
    outside = 99  # links to a unit in another hall leave by the door
    links = {**links, (0, outside): 40}
    start = {u: 3 + i for i, u in enumerate(units)}  # the far row (y farther from the door)
    hall = _Hall(floor, demand, site, 0, pos, units, links, S.DM)
    pitch = S._pitch_dm(floor, pos)
    out = improve_singles(hall, starts, links, start, pitch)
    assert _cable(hall, out, links) < _cable(hall, start, links)
    assert all(a < 3 for a in out.values())  # all in the row by the door
    assert _valid(hall, out, starts, pitch)


@settings(max_examples=12, deadline=None)
@given(
    rows=st.integers(1, 3),
    per_row=st.integers(4, 7),
    blocked=st.integers(0, 2),
    seed=st.integers(0, 10_000),
)
def test_never_worse_and_every_rule_kept(rows: int, per_row: int, blocked: int, seed: int) -> None:
    """Small halls started from a random valid placement of the greedy's racks: the search
    never raises the cable, keeps every rule (checked by the search's own full check and
    recomputed here) and never goes below the hall's lower bound."""
    template = {"rows": rows, "positions_per_row": per_row, "pitch_m": 0.6}
    base = yaml.safe_dump(spec_dict(accelerators=128, scalable_unit_nodes=4))
    try:
        site, floor, demand, units, links = _case(
            base, template, [f"r01/p{i + 1:02d}" for i in range(blocked)]
        )
    except S.SpecError:
        return
    pos = floor.hall_positions(0)
    starts = {u: S._allowed_starts(floor, demand, pos, demand.units[u]) for u in units}
    found = S._greedy(floor, demand, site, 0, pos, units, starts, links)
    if found is None:
        return
    hall = _Hall(floor, demand, site, 0, pos, units, links, S.DM)
    pitch = S._pitch_dm(floor, pos)
    # shuffle the single racks over the free allowed positions, keeping a valid start
    rng = np.random.default_rng(seed)
    start = dict(found)
    singles = [u for u in units if len(demand.units[u].racks) == 1]
    for _ in range(20):
        u, v = rng.choice(singles, 2, replace=False).tolist()
        trial = {**start, u: start[v], v: start[u]}
        if _valid(hall, trial, starts, pitch):
            start = trial
    out = improve_singles(hall, starts, links, start, pitch)
    assert _cable(hall, out, links) <= _cable(hall, start, links) + 1e-9
    if _valid(hall, start, starts, pitch):
        assert _valid(hall, out, starts, pitch)
    _rules_hold(site, floor, demand, out, starts)
    bound = S._pair_bound(floor, demand, 0, pos, units, starts, links)
    assert _cable(hall, out, links) >= bound - 1e-6
