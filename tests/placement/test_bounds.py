"""Placement lower bounds (``placement.bounds``): below the optimum of every small instance
(found by enumeration, or proven by CP-SAT), never below the bound they replace, stated
closed forms, and the note that says what a loose bound ignores."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.placement import solve as S
from clusterloom.placement.bounds import (
    CAMPUS_IGNORES,
    HALL_IGNORES,
    HallGrid,
    campus_path_bound,
    gap_note,
    hall_grid,
    hall_lp_bound,
    metric_closure,
)
from clusterloom.placement.demand import Demand
from clusterloom.placement.floor import FloorPlan
from clusterloom.spec import SiteSpec, parse_spec
from helpers import MINIMAL_SPEC, hall_case, spec_dict

Links = dict[tuple[int, int], int]


# --- hall bound against enumeration -------------------------------------------------------------


def _centre(v: np.ndarray, s: int, k: int, dm: int, cp_sat: bool) -> float:
    """A unit's centre as the placement code computes it (CP-SAT's or the greedy objective's)."""
    if cp_sat:
        return round(float(np.round(v[s : s + k] * dm).mean())) / dm
    return round(float(v[s : s + k].mean()) * dm) / dm


def _hall_optimum(
    grid: HallGrid, sizes: dict[int, int], starts: dict[int, list[int]], links: Links
) -> float:
    """Least objective over every placement (no two units overlapping), under both roundings."""
    units = sorted(sizes)
    best = math.inf
    for choice in itertools.product(*(starts[u] for u in units)):
        at = dict(zip(units, choice, strict=True))
        covered = [p for u in units for p in range(at[u], at[u] + sizes[u])]
        if len(covered) != len(set(covered)):
            continue
        for cp_sat in (False, True):
            door = (
                (round(grid.door[0] * grid.dm) / grid.dm, round(grid.door[1] * grid.dm) / grid.dm)
                if cp_sat
                else grid.door
            )

            def c(u: int, at: dict[int, int] = at, cp_sat: bool = cp_sat) -> tuple[float, float]:
                k = sizes[u]
                return (
                    _centre(grid.x, at[u], k, grid.dm, cp_sat),
                    _centre(grid.y, at[u], k, grid.dm, cp_sat),
                )

            total = 0.0
            for (a, b), w in links.items():
                if a in sizes and b in sizes:
                    (xa, ya), (xb, yb) = c(a), c(b)
                    total += w * (abs(xa - xb) + abs(ya - yb))
                elif a in sizes or b in sizes:
                    x, y = c(a if a in sizes else b)
                    total += w * (abs(x - door[0]) + abs(y - door[1]))
            best = min(best, total)
    return best


@st.composite
def _halls(draw: st.DrawFn) -> tuple[HallGrid, dict[int, int], dict[int, list[int]], Links]:
    rows = draw(st.integers(1, 2))
    per_row = draw(st.integers(3, 5))
    pitch = draw(st.sampled_from([0.6, 1.0, 1.25]))
    n = rows * per_row
    x = np.array([0.3 + pitch * (i % per_row) for i in range(n)])
    y = np.array([1.5 + 2.4 * (i // per_row) for i in range(n)])
    free = np.array([i % 3 != 0 or draw(st.booleans()) for i in range(n)], dtype=bool)
    door = (draw(st.sampled_from([0.0, 0.55, 2.0])), draw(st.sampled_from([0.0, 1.5, 3.9])))
    grid = HallGrid(x, y, free, door, 10)
    sizes = {0: draw(st.integers(1, 3))}
    for u in range(1, draw(st.integers(2, 4))):
        sizes[u] = 1 if u > 1 else draw(st.integers(1, 2))
    starts: dict[int, list[int]] = {}
    for u, k in sizes.items():
        starts[u] = [
            s
            for s in range(n - k + 1)
            if free[s : s + k].all() and (s // per_row) == ((s + k - 1) // per_row)
        ]
    weights = st.integers(0, 6)
    links: Links = {}
    for a, b in itertools.combinations([*sizes, 99], 2):
        w = draw(weights)
        if w:
            links[(a, b)] = w
    return grid, sizes, starts, links


@settings(max_examples=80, deadline=None)
@given(_halls())
def test_hall_lp_bound_is_below_the_enumerated_optimum(
    case: tuple[HallGrid, dict[int, int], dict[int, list[int]], Links],
) -> None:
    """Small halls (one or two rows, up to four units, a block of up to three positions,
    blocked positions, links to a unit outside the hall): the bound never exceeds the least
    objective of any placement, under either rounding of centres."""
    grid, sizes, starts, links = case
    best = _hall_optimum(grid, sizes, starts, links)
    bound = hall_lp_bound(grid, sizes, starts, links)
    assert bound >= 0.0
    if math.isinf(best):  # no placement at all: any bound holds
        return
    assert bound <= best + 1e-6


def test_hall_lp_bound_closed_form_rack_between_block_and_door() -> None:
    """Two rows of five positions 1 m apart, rows 1 m apart, the door at (0, 0)::

        y=1  [ ] [ ] [ ] [ ] [ ]
        y=0  [ ] [ ] [ ] [ ] [ ]     door at x = 0, y = 0

    A block of three positions and one rack with 10 links to the block and 10 to the door.
    The star bound gives the rack two places at once: across the row from the block's centre
    (10 x 1 m) and on the door (0), 10 in all. Where it really stands it pays 20: at (0, 0)
    the nearest centre it can have beside it is 2 m away; at (1, 0), 1 m from the door and
    1 m from a centre at (1, 1). The bound is 20, the optimum."""
    x = np.array([float(i % 5) for i in range(10)])
    y = np.array([float(i // 5) for i in range(10)])
    grid = HallGrid(x, y, np.ones(10, dtype=bool), (0.0, 0.0), 10)
    sizes = {0: 3, 1: 1}
    starts = {0: [0, 1, 2, 5, 6, 7], 1: list(range(10))}
    links = {(0, 1): 10, (1, 7): 10}
    assert hall_lp_bound(grid, sizes, starts, links) == pytest.approx(20.0)
    assert _hall_optimum(grid, sizes, starts, links) == pytest.approx(20.0)


def test_two_racks_cannot_share_the_position_by_the_door() -> None:
    """Four positions on a line 1 m apart, the door at the first; two racks with 5 links to
    the door each and a block of two positions linked to neither. With the block on 2-3 the
    racks take 0 and 1: 0 + 5 = 5. With the block forced onto 1-2 the second rack must go to
    3: 0 + 15 = 15, and the program sees it (the star bound, blind to the block, gives 5 in
    both cases)."""
    x = np.arange(4, dtype=np.float64)
    grid = HallGrid(x, np.zeros(4), np.ones(4, dtype=bool), (0.0, 0.0), 10)
    sizes = {0: 1, 1: 1, 2: 2}
    links = {(0, 9): 5, (1, 9): 5}
    assert hall_lp_bound(grid, sizes, {0: [0, 1, 2, 3], 1: [0, 1, 2, 3], 2: [1]}, links) == (
        pytest.approx(15.0)
    )
    assert hall_lp_bound(grid, sizes, {0: [0, 1, 2, 3], 1: [0, 1, 2, 3], 2: [2]}, links) == (
        pytest.approx(5.0)
    )


# --- hall bound on real hall models proven by CP-SAT --------------------------------------------


def _hall_case(
    base: str, rows: int, per_row: int, blocked: int, keep: int
) -> tuple[SiteSpec, FloorPlan, Demand, list[int], Links]:
    hall = {
        "name": "h1",
        "width_m": 40,
        "depth_m": 30,
        "template": {"rows": rows, "positions_per_row": per_row, "pitch_m": 0.6},
        "blocked": [f"r01/p{i + 1:02d}" for i in range(blocked)],
    }
    site, floor, demand, links = hall_case(base, hall, solver={"hall_effort": 20})
    # the hall model of the first ``keep`` units; the others' links leave the hall by the door
    units = list(range(min(keep, len(demand.units))))
    return site, floor, demand, units, links


@settings(max_examples=15, deadline=None)
@given(
    base=st.sampled_from(
        [
            MINIMAL_SPEC.replace("accelerators: 16", "accelerators: 64"),
            yaml.safe_dump(spec_dict(accelerators=128, scalable_unit_nodes=4)),
        ]
    ),
    rows=st.integers(1, 3),
    per_row=st.integers(4, 7),
    blocked=st.integers(0, 2),
    keep=st.integers(2, 9),
)
def test_hall_bound_is_below_the_proven_optimum_and_never_looser(
    base: str, rows: int, per_row: int, blocked: int, keep: int
) -> None:
    """Hall models of small specs (blocks of two racks, leaf and spine racks, some units in
    another hall): where CP-SAT proves its placement optimal, the new bound is at most that
    optimum; the bound reported is at least the star bound it had before."""
    try:
        site, floor, demand, units, links = _hall_case(base, rows, per_row, blocked, keep)
        _, stats = S.place_hall(floor, demand, site, 0, units, links)
    except S.SpecError:
        return
    pos = floor.hall_positions(0)
    starts = {u: S._allowed_starts(floor, demand, pos, demand.units[u]) for u in units}
    sizes = {u: len(demand.units[u].racks) for u in units}
    lp = hall_lp_bound(hall_grid(floor, 0, pos, S.DM), sizes, starts, links)
    star = S._pair_bound(floor, demand, 0, pos, units, starts, links)
    assert stats.bound >= star - 1e-9
    assert stats.bound >= min(lp, stats.objective) - 1e-9
    if stats.status == "optimal":
        assert lp <= stats.objective + 1e-6


# --- campus bound against enumeration -----------------------------------------------------------


def _campus_optimum(
    cap: np.ndarray, dem: np.ndarray, allowed: list[list[int]], cost: np.ndarray, links: Links
) -> float:
    best = math.inf
    for hall in itertools.product(*allowed):
        load = np.zeros_like(cap)
        for g, h in enumerate(hall):
            load[h] += dem[g]
        if (load > cap + 1e-9).any():
            continue
        best = min(best, sum(w * cost[hall[a], hall[b]] for (a, b), w in links.items()))
    return best


@st.composite
def _campuses(
    draw: st.DrawFn,
) -> tuple[np.ndarray, np.ndarray, list[list[int]], np.ndarray, Links, set[int]]:
    n_h = draw(st.integers(2, 3))
    n_units, n_children, n_roots = (
        draw(st.integers(2, 4)),
        draw(st.integers(1, 2)),
        draw(st.integers(0, 2)),
    )
    n_g = n_units + n_children + n_roots
    units = set(range(n_units))
    children = range(n_units, n_units + n_children)
    roots = range(n_units + n_children, n_g)
    upper = np.triu(
        np.array([[draw(st.integers(1, 60)) for _ in range(n_h)] for _ in range(n_h)]), 1
    )
    cost = (upper + upper.T).astype(np.float64)  # not always a metric: the bound must cope
    dem = np.array(
        [
            [
                draw(st.integers(3, 9)) if g in units else draw(st.integers(0, 2)),
                draw(st.integers(1, 5)),
            ]
            for g in range(n_g)
        ],
        dtype=np.float64,
    )
    cap = np.array(
        [
            [draw(st.integers(4, 20)), draw(st.sampled_from([8.0, 12.0, math.inf]))]
            for _ in range(n_h)
        ]
    )
    allowed = [sorted(draw(st.sets(st.integers(0, n_h - 1), min_size=1))) for _ in range(n_g)]
    links: Links = {}
    pairs = [(s, u) for s in children for u in units] + [(r, s) for r in roots for s in children]
    pairs += [(0, 1), (n_units, n_g - 1)]  # a unit-unit and (maybe) a child-child link count 0
    for a, b in pairs:
        w = draw(st.integers(0, 9))
        if w and a != b:
            links[(min(a, b), max(a, b))] = links.get((min(a, b), max(a, b)), 0) + w
    return cap, dem, allowed, cost, links, units


@settings(max_examples=120, deadline=None)
@given(_campuses())
def test_campus_bounds_are_below_the_enumerated_optimum(
    case: tuple[np.ndarray, np.ndarray, list[list[int]], np.ndarray, Links, set[int]],
) -> None:
    """Small campuses (two or three halls with random, not always metric, costs; units, spine
    groups linked to units, core groups linked to spines; two resources, allowed halls): the
    path bound, and the star bound it is reported with, never exceed the least objective of
    any assignment within the capacities."""
    cap, dem, allowed, cost, links, units = case
    best = _campus_optimum(cap, dem, allowed, cost, links)
    nbr: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (a, b), w in links.items():
        nbr[a].append((b, w))
        nbr[b].append((a, w))
    path = campus_path_bound(cap, dem, allowed, cost, links, units)
    star = S._campus_bound(
        cap, dem, allowed, cost, nbr, [sorted(set(range(len(dem))) - units), sorted(units)]
    )
    assert path >= 0.0
    if math.isinf(best):
        return
    assert max(path, star) <= best + 1e-6


def test_campus_path_bound_closed_form_two_pods() -> None:
    """Two halls 50 apart; two pods of two units (10 positions each), a spine group per pod
    (10 links to each of its units) and one core group (8 links to each spine group), halls
    of 23 positions. Each pod fits a hall, so the star bound of each spine group is 0. The
    core group's hall holds 23 - 2 (itself) = 21 positions of units; the other 19 cost, per
    unit, min(8 / 2, 10) = 4 links x 50: 1.9 x 200 = 380. The optimum, one pod per hall and the
    core with one of them, crosses 8 links: 400."""
    cost = np.array([[0.0, 50.0], [50.0, 0.0]])
    dem = np.array([[10.0]] * 4 + [[1.0], [1.0], [2.0]])
    cap = np.array([[23.0], [23.0]])
    allowed = [[0, 1]] * 7
    links = {(0, 4): 10, (1, 4): 10, (2, 5): 10, (3, 5): 10, (4, 6): 8, (5, 6): 8}
    assert campus_path_bound(cap, dem, allowed, cost, links, {0, 1, 2, 3}) == pytest.approx(380.0)
    assert _campus_optimum(cap, dem, allowed, cost, links) == pytest.approx(400.0)
    nbr: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (a, b), w in links.items():
        nbr[a].append((b, w))
        nbr[b].append((a, w))
    assert S._campus_bound(cap, dem, allowed, cost, nbr, [[4, 5, 6], [0, 1, 2, 3]]) == 0.0


def test_metric_closure_keeps_the_triangle_inequality() -> None:
    cost = np.array([[0.0, 10.0, 1.0], [10.0, 0.0, 2.0], [1.0, 2.0, 0.0]])
    d = metric_closure(cost)
    assert d[0, 1] == 3.0 and (d <= cost).all()
    n = d.shape[0]
    assert all(d[i, j] <= d[i, k] + d[k, j] for i in range(n) for j in range(n) for k in range(n))


# --- what the bound ignores ---------------------------------------------------------------------


def test_gap_note_splits_the_gap_and_says_what_each_bound_ignores() -> None:
    """Campus 900 over 880 (20 of the 1,000 link-metres), halls 100 over 40 (60): an 8% gap,
    6 points from the halls and 2 from the campus, each with what its bound ignores."""
    note = gap_note([("campus", 900.0, 880.0), ("b1/h1", 100.0, 40.0)])
    assert note.startswith("of the 8.00% gap, 6.00 points are the hall models' (the bound ")
    assert HALL_IGNORES in note and CAMPUS_IGNORES in note
    assert "2.00 points are the campus model's" in note
    assert gap_note([("b1/h1", 10.0, 10.0)]) == ""


def test_a_loose_gap_says_what_the_bound_ignores_on_every_surface() -> None:
    """A placement whose campus model is 1,000 over 900 and hall 100 over 20: a 16.36% gap
    (loose). The terminal line, design.json and the report put the note (9.09 points from the
    campus, 7.27 from the hall, and what each bound ignores) next to the gap; a proven
    placement has no note."""
    import dataclasses
    import io
    import json

    from rich.console import Console

    from clusterloom.cli import render
    from clusterloom.export.design_json import design_json
    from clusterloom.pipeline import run_design
    from clusterloom.report import render_report

    doc = yaml.safe_load(MINIMAL_SPEC)
    hall = {
        "name": "h1",
        "width_m": 20,
        "depth_m": 12,
        "template": {"rows": 1, "positions_per_row": 3, "pitch_m": 1.0},
    }
    doc["site"] = {"buildings": [{"name": "b1", "halls": [hall]}]}
    design = run_design(parse_spec(yaml.safe_dump(doc)), compare=False)
    p = design.placement
    assert p is not None and p.bound_note == "" and p.bound_quality == "proven optimal"
    solves = (
        S.SolveStats("campus", "feasible", 2, 1000.0, 900.0),
        S.SolveStats("b1/h1", "feasible", 3, 100.0, 20.0),
    )
    loose = dataclasses.replace(p, solves=solves)
    assert loose.bound_quality == "loose"
    note = loose.bound_note
    assert note.startswith("of the 16.36% gap, 7.27 points are the hall models'")
    assert "9.09 points are the campus model's" in note
    out = io.StringIO()
    render.placement(Console(file=out, width=5000), loose)
    assert "gap 16.36% over 2 CP-SAT model(s), loose bound: " + note in out.getvalue()
    changed = dataclasses.replace(design, placement=loose)
    placed = json.loads(design_json(changed))["placement"]
    assert placed["gap"] == pytest.approx(0.163636, abs=1e-6)
    assert placed["bound_quality"] == "loose" and placed["bound_note"] == note
    assert [s["bound_quality"] for s in placed["solves"]] == ["loose", "weak"]
    page = render_report(changed)
    assert "gap 16.36%" in page and note[1:40] in page


def test_campus_bound_reported_is_never_below_the_star_bound() -> None:
    """moe-2k's four scalable units on two halls of 40 positions (as in ``test_placement``):
    the campus bound reported is at least the star bound recomputed here, at most the
    objective, and the path bound it is the larger of stays below the objective too."""
    from clusterloom.examples import example_text

    doc = yaml.safe_load(example_text("moe-2k"))
    hall = doc["site"]["buildings"][0]["halls"][0]
    hall["template"]["rows"] = 2
    halls = [hall, {**hall, "name": "h2", "x_m": 20}]
    doc.pop("job")
    site_doc = {k: v for k, v in doc.pop("site").items() if k != "buildings"}
    # both halls: the site's buildings take the place of the one-hall default
    site, floor, demand, links = hall_case(
        yaml.safe_dump(doc), halls[0], **{**site_doc, "buildings": [{"name": "b1", "halls": halls}]}
    )
    _, stats = S.assign_halls(floor, demand, site, links)
    assert stats is not None
    groups = S._groups(demand, site)
    hr = S._hall_room(floor, demand, groups)
    allowed = S._allowed_halls(floor, demand, site, groups, hr)
    dist = floor.hall_distance()
    n_h = floor.n_halls
    cost = np.array(
        [
            [round(dist[a, b] + (site.trunk_penalty_m if a != b else 0.0)) for b in range(n_h)]
            for a in range(n_h)
        ],
        dtype=np.float64,
    )
    group_links: Links = defaultdict(int)
    for (ua, ub), w in links.items():
        ga, gb = demand.units[ua].group, demand.units[ub].group
        if ga != gb:
            group_links[(min(ga, gb), max(ga, gb))] += w
    nbr: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (a, b), w in group_links.items():
        nbr[a].append((b, w))
        nbr[b].append((a, w))
    cap, dem, layers = hr.capacity(), S._group_demand(groups, hr.lengths), S._layers(demand)
    star = S._campus_bound(cap, dem, allowed, cost, nbr, layers)
    path = campus_path_bound(cap, dem, allowed, cost, dict(group_links), set(layers[-1]))
    assert star > 0
    assert stats.bound >= star - 1e-9
    assert stats.bound == pytest.approx(min(max(star, path), stats.objective))
    assert path <= stats.objective + 1e-6


def test_a_hall_too_large_for_the_lp_keeps_the_other_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The closed-form hall above has 16 (unit, position) columns: with the limit below that
    the LP is skipped (0, the star and CP-SAT bounds remain), at it the LP gives its 20."""
    import clusterloom.placement.bounds as B

    x = np.array([float(i % 5) for i in range(10)])
    y = np.array([float(i // 5) for i in range(10)])
    grid = HallGrid(x, y, np.ones(10, dtype=bool), (0.0, 0.0), 10)
    args = ({0: 3, 1: 1}, {0: [0, 1, 2, 5, 6, 7], 1: list(range(10))}, {(0, 1): 10, (1, 7): 10})
    monkeypatch.setattr(B, "LP_MAX_COLUMNS", 15)
    assert hall_lp_bound(grid, *args) == 0.0
    monkeypatch.setattr(B, "LP_MAX_COLUMNS", 16)
    assert hall_lp_bound(grid, *args) == pytest.approx(20.0)
