"""The campus model with installed groups pinned to their hall (``assign_halls(pinned=)``):
the pinned groups stay, every hall keeps within its positions, power and cooling, and the
model says the pins cannot hold only when no assignment of the other groups fits (checked by
enumerating them all).

moe-2k's four scalable units of 17 racks (674 kW each) and a spine rack on two halls of rows
of 20 positions (900 kW a row)::

    h1: 2 rows, P1 kW        h2: 3 rows, P2 kW (20 m away)
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.errors import SpecError
from clusterloom.examples import example_text
from clusterloom.placement import solve as S
from helpers import hall_case


@functools.cache
def _case(p1_kw: int, p2_kw: int) -> tuple[Any, Any, Any, Any]:
    doc = yaml.safe_load(example_text("moe-2k"))
    hall = doc["site"]["buildings"][0]["halls"][0]
    hall["template"]["rows"] = 2
    halls = [
        {**hall, "power_kw": p1_kw, "cooling_kw": p1_kw},
        {
            **hall,
            "name": "h2",
            "x_m": 20,
            "power_kw": p2_kw,
            "cooling_kw": p2_kw,
            "template": {**hall["template"], "rows": 3},
        },
    ]
    doc.pop("job")
    site_doc = {k: v for k, v in doc.pop("site").items() if k != "buildings"}
    return hall_case(
        yaml.safe_dump(doc), halls[0], **{**site_doc, "buildings": [{"name": "b1", "halls": halls}]}
    )


def _tables(case: tuple[Any, Any, Any, Any]) -> tuple[Any, Any, list[list[int]]]:
    site, floor, demand, _ = case
    groups = S._groups(demand, site)
    hr = S._hall_room(floor, demand, groups)
    return (
        hr.capacity(),
        S._group_demand(groups, hr.lengths),
        S._allowed_halls(floor, demand, site, groups, hr),
    )


def _fits(cap: Any, dem: Any, hall: Any) -> bool:
    used = np.zeros_like(cap)
    for g, h in enumerate(hall):
        used[h] += dem[g]
    return bool((used <= cap + 1e-6).all())


def test_an_installed_unit_keeps_its_hall_and_new_ones_go_where_room_is_left() -> None:
    """Unit 0 installed in either hall stays there; in h1 (1,300 kW: one unit of 674 kW, not
    two) it leaves no room for another unit, so the other three go to h2."""
    case = _case(1300, 3500)
    site, floor, demand, links = case
    cap, dem, _ = _tables(case)
    assert not _fits(cap, dem, [0, 0, 1, 1, 1])  # two units do not fit h1
    for h in (0, 1):
        hall, _ = S.assign_halls(floor, demand, site, links, {0: h})
        assert hall[0] == h and _fits(cap, dem, hall)
        if h == 0:
            assert hall[1:4].tolist() == [1, 1, 1]


def test_pins_no_hall_can_hold_are_refused_naming_the_hall() -> None:
    site, floor, demand, links = _case(1300, 3500)
    with pytest.raises(SpecError) as exc:
        S.assign_halls(floor, demand, site, links, {0: 0, 1: 0})
    assert "hall b1/h1: needs" in str(exc.value) and "of power" in str(exc.value)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    st.sampled_from([(1300, 3500), (2000, 1300), (1300, 2000), (3500, 3500)]),
    st.dictionaries(st.integers(0, 4), st.integers(0, 1), max_size=5),
)
def test_pinned_campus_keeps_pins_and_budgets_or_no_assignment_exists(
    powers: tuple[int, int], pinned: dict[int, int]
) -> None:
    case = _case(*powers)
    site, floor, demand, links = case
    cap, dem, allowed = _tables(case)
    choices = [[pinned[g]] if g in pinned else allowed[g] for g in range(dem.shape[0])]
    exists = any(_fits(cap, dem, a) for a in itertools.product(*choices))
    try:
        hall, _ = S.assign_halls(floor, demand, site, links, pinned)
    except SpecError:
        assert not exists
        return
    assert all(hall[g] == h for g, h in pinned.items())
    assert _fits(cap, dem, hall)
