"""Routes on the tray graph and spreading off full trays, on a floor small enough to draw."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from clusterloom.cabling import Pathways, build_pathways
from clusterloom.cabling.pathways import CROSS
from clusterloom.cabling.route import route_pairs, spread
from clusterloom.placement.floor import floor_plan
from clusterloom.spec import parse_spec
from helpers import MINIMAL_SPEC


def _pathways() -> Pathways:
    """Two rows of three 1 m positions (template: rows 2.4 m apart)::

        head2 -- p1 -- p2 -- p3 -- tail2        row 2, y = 3.4
          |                          |
        head1 -- p1 -- p2 -- p3 -- tail1        row 1, y = 1.0
        x=0     0.5   1.5   2.5    3.0

    head1 -> head2: 2.4 m up the head cross-aisle, or 3 + 2.4 + 3 = 8.4 m round the tails.
    """
    doc = yaml.safe_load(MINIMAL_SPEC)
    template = {"rows": 2, "positions_per_row": 3, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    doc["site"] = {
        "buildings": [
            {
                "name": "b1",
                "halls": [
                    {
                        "name": "h1",
                        "width_m": 40,
                        "depth_m": 30,
                        "door_m": [20, 0],
                        "template": template,
                    }
                ],
            }
        ]
    }
    site = parse_spec(yaml.safe_dump(doc)).site
    assert site is not None
    return build_pathways(floor_plan(site))


def test_shortest_route_and_its_segments() -> None:
    pw = _pathways()
    h1, h2 = int(pw.row_head[0]), int(pw.row_head[1])
    length, pair, seg = route_pairs(pw, np.array([h1, h1]), np.array([h2, h1]))
    assert length.tolist() == pytest.approx([2.4, 0.0])
    assert pair.tolist() == [0]
    assert pw.seg_kind[seg[0]] == CROSS


def test_full_cross_aisle_moves_just_enough_trunks_round_the_far_end() -> None:
    """Three trunks, each 40 % of the cross-aisle's capacity: 120 % on the short way. One is
    enough to move (largest first, all equal): it takes the 8.4 m way round the tails."""
    pw = _pathways()
    h1, h2 = int(pw.row_head[0]), int(pw.row_head[1])
    cross = int(np.flatnonzero((pw.seg_kind == CROSS) & (pw.seg_a == h1))[0])
    area = np.full(3, 0.4 * pw.seg_capacity_mm2[cross])
    src, dst = np.full(3, h1), np.full(3, h2)
    length, pair, seg, moved = spread(pw, src, dst, area, np.zeros(pw.n_segments))
    assert moved == 1
    assert sorted(length.tolist()) == pytest.approx([2.4, 2.4, 8.4])
    load = np.bincount(seg, weights=area[pair], minlength=pw.n_segments)
    assert load[cross] <= pw.seg_capacity_mm2[cross]
    # a reach that leaves no room for the detour keeps every trunk on the short way
    length, _, _, moved = spread(pw, src, dst, area, np.zeros(pw.n_segments), np.full(3, 3.0))
    assert moved == 0 and length.tolist() == pytest.approx([2.4] * 3)
