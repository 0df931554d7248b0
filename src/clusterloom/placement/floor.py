"""The floor as arrays: every position of a site with its hall, row, coordinates, budgets and
failure domains, and the cable distance between any two positions.

Distances (metres) follow the floor, never a straight line through walls:

- two positions of one hall: Manhattan distance between their centres;
- two halls of one building: each position to its hall's door (Manhattan), plus door to door
  (Manhattan in the building's frame);
- two buildings: each position to its hall's door, the door to its building's entrance (the
  building origin, Manhattan), plus the distance between the entrances (the site's
  ``distances``, else Manhattan between the building origins).

Vertical runs (rack to tray and back), slack and patch cords are the cabling stage's to add.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.spec.site import SiteSpec, hall_positions, hall_rows
from clusterloom.units import kilowatts

FREE, RESERVED, BLOCKED = 0, 1, 2
_STATE = {"free": FREE, "reserved": RESERVED, "blocked": BLOCKED}


def _ro(a: NDArray[Any]) -> NDArray[Any]:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class FloorPlan:
    """Positions of a site as read-only arrays; watts, metres and kilograms."""

    campus: str
    building_names: tuple[str, ...]
    building_xy: NDArray[np.float64]
    building_distance: NDArray[np.float64]
    hall_names: tuple[str, ...]  # "b1/h1"
    hall_building: NDArray[np.int32]
    hall_origin: NDArray[np.float64]  # in the building frame
    hall_door: NDArray[np.float64]  # in the hall frame
    hall_power_w: NDArray[np.float64]  # inf: no limit
    hall_cooling_w: NDArray[np.float64]
    hall_hold_back: NDArray[np.int32]
    row_names: tuple[str, ...]  # "b1/h1/r01"
    row_hall: NDArray[np.int32]
    row_power_w: NDArray[np.float64]
    row_cooling_w: NDArray[np.float64]
    row_feed: NDArray[np.int32]
    row_loop: NDArray[np.int32]
    row_facing: tuple[str, ...]
    row_aisle: tuple[str, ...]
    feed_names: tuple[str, ...]  # "b1/h1/ups-a"
    feed_hall: NDArray[np.int32]
    feed_power_w: NDArray[np.float64]
    loop_names: tuple[str, ...]
    loop_hall: NDArray[np.int32]
    loop_cooling_w: NDArray[np.float64]
    pos_names: tuple[str, ...]  # "b1/h1/r01/p01"
    pos_hall: NDArray[np.int32]
    pos_row: NDArray[np.int32]
    pos_x: NDArray[np.float64]  # hall frame, centre
    pos_y: NDArray[np.float64]
    pos_width: NDArray[np.float64]
    pos_depth: NDArray[np.float64]
    pos_power_w: NDArray[np.float64]
    pos_cooling_w: NDArray[np.float64]
    pos_weight_kg: NDArray[np.float64]
    pos_state: NDArray[np.int8]

    @property
    def n_positions(self) -> int:
        return int(self.pos_hall.shape[0])

    @property
    def n_halls(self) -> int:
        return len(self.hall_names)

    def hall_positions(self, hall: int) -> NDArray[np.int64]:
        """Position ids of ``hall`` in row order (positions of a hall are consecutive)."""
        return np.flatnonzero(self.pos_hall == hall)

    def free_mask(self) -> NDArray[np.bool_]:
        mask: NDArray[np.bool_] = self.pos_state == FREE
        return mask

    def door_xy(self) -> NDArray[np.float64]:
        """Each hall's door in its building's frame."""
        return self.hall_origin + self.hall_door

    def hall_distance(self) -> NDArray[np.float64]:
        """Door-to-door cable distance between halls (0 on the diagonal)."""
        door = self.door_xy()
        b = self.hall_building
        same = b[:, None] == b[None, :]
        within = np.abs(door[:, None, :] - door[None, :, :]).sum(axis=2)
        to_entrance = np.abs(door).sum(axis=1)
        across = to_entrance[:, None] + self.building_distance[b][:, b] + to_entrance[None, :]
        out = np.where(same, within, across)
        np.fill_diagonal(out, 0.0)
        return out  # type: ignore[no-any-return]

    def distance(self, a: NDArray[np.integer], b: NDArray[np.integer]) -> NDArray[np.float64]:
        """Cable distance in metres between positions ``a[i]`` and ``b[i]`` (see module)."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        ha, hb = self.pos_hall[a], self.pos_hall[b]
        direct = np.abs(self.pos_x[a] - self.pos_x[b]) + np.abs(self.pos_y[a] - self.pos_y[b])
        door = self.hall_door
        to_door_a = np.abs(self.pos_x[a] - door[ha, 0]) + np.abs(self.pos_y[a] - door[ha, 1])
        to_door_b = np.abs(self.pos_x[b] - door[hb, 0]) + np.abs(self.pos_y[b] - door[hb, 1])
        between = self.hall_distance()[ha, hb]
        return np.where(ha == hb, direct, to_door_a + between + to_door_b)  # type: ignore[no-any-return]

    def free_runs(self, taken: NDArray[np.bool_] | None = None) -> list[tuple[int, int, int]]:
        """Maximal runs of consecutive free positions in one row: (row, first position, length);
        ``taken`` marks positions already used (installed racks) as not free."""
        out: list[tuple[int, int, int]] = []
        free = self.free_mask() if taken is None else self.free_mask() & ~taken
        start = -1
        for p in range(self.n_positions + 1):
            ok = p < self.n_positions and bool(free[p])
            if ok and start >= 0 and self.pos_row[p] != self.pos_row[start]:
                out.append((int(self.pos_row[start]), start, p - start))
                start = p
            elif ok and start < 0:
                start = p
            elif not ok and start >= 0:
                out.append((int(self.pos_row[start]), start, p - start))
                start = -1
        return out


def _kw(value: float | None) -> float:
    return math.inf if value is None else kilowatts(float(value))


def floor_plan(site: SiteSpec) -> FloorPlan:
    """Resolve ``site`` (a checked spec section) into arrays."""
    b_names = tuple(b.name for b in site.buildings)
    b_xy = np.array([[b.x_m, b.y_m] for b in site.buildings], dtype=np.float64).reshape(-1, 2)
    nb = len(b_names)
    bd = np.abs(b_xy[:, None, :] - b_xy[None, :, :]).sum(axis=2)
    index = {n: i for i, n in enumerate(b_names)}
    for d in site.distances:
        i, j = index[d.a], index[d.b]
        bd[i, j] = bd[j, i] = d.m
    np.fill_diagonal(bd, 0.0)

    halls: dict[str, list[Any]] = {k: [] for k in ("name", "b", "origin", "door", "p", "c", "hb")}
    rows: dict[str, list[Any]] = {k: [] for k in ("name", "h", "p", "c", "f", "l", "face", "aisle")}
    feeds: dict[str, list[Any]] = {k: [] for k in ("name", "h", "w")}
    loops: dict[str, list[Any]] = {k: [] for k in ("name", "h", "w")}
    pos: dict[str, list[Any]] = {
        k: [] for k in ("name", "h", "r", "x", "y", "wd", "dp", "p", "c", "kg", "st")
    }
    for bi, b in enumerate(site.buildings):
        for hall in b.halls:
            h = len(halls["name"])
            hname = f"{b.name}/{hall.name}"
            resolved = hall_positions(hall)
            free = sum(1 for p in resolved if p.state == "free")
            halls["name"].append(hname)
            halls["b"].append(bi)
            halls["origin"].append((hall.x_m, hall.y_m))
            halls["door"].append(hall.door_m)
            halls["p"].append(_kw(hall.power_kw))
            halls["c"].append(_kw(hall.cooling_kw))
            halls["hb"].append(max(hall.hold_back, math.ceil(site.growth_fraction * free)))
            feed_id: dict[str, int] = {}
            loop_id: dict[str, int] = {}
            row_id: list[int] = []
            for row in hall_rows(hall):
                if row.feed not in feed_id:
                    feed_id[row.feed] = len(feeds["name"])
                    feeds["name"].append(f"{hname}/{row.feed}")
                    feeds["h"].append(h)
                    feeds["w"].append(_kw(hall.feeds.get(row.feed)))
                if row.cooling_loop not in loop_id:
                    loop_id[row.cooling_loop] = len(loops["name"])
                    loops["name"].append(f"{hname}/{row.cooling_loop}")
                    loops["h"].append(h)
                    loops["w"].append(_kw(hall.cooling_loops.get(row.cooling_loop)))
                row_id.append(len(rows["name"]))
                rows["name"].append(f"{hname}/{row.name}")
                rows["h"].append(h)
                rows["p"].append(_kw(row.power_kw))
                rows["c"].append(_kw(row.cooling_kw))
                rows["f"].append(feed_id[row.feed])
                rows["l"].append(loop_id[row.cooling_loop])
                rows["face"].append(row.facing)
                rows["aisle"].append(row.aisle)
            for p in resolved:
                pos["name"].append(f"{hname}/{p.row_name}/{p.name}")
                pos["h"].append(h)
                pos["r"].append(row_id[p.row])
                pos["x"].append(p.x_m)
                pos["y"].append(p.y_m)
                pos["wd"].append(p.width_m)
                pos["dp"].append(p.depth_m)
                pos["p"].append(kilowatts(p.power_kw))
                pos["c"].append(kilowatts(p.cooling_kw))
                pos["kg"].append(p.max_weight_kg)
                pos["st"].append(_STATE[p.state])

    def f64(v: list[Any]) -> NDArray[np.float64]:
        return _ro(np.array(v, dtype=np.float64))

    def i32(v: list[Any]) -> NDArray[np.int32]:
        return _ro(np.array(v, dtype=np.int32))

    return FloorPlan(
        campus=site.campus,
        building_names=b_names,
        building_xy=_ro(b_xy),
        building_distance=_ro(bd.reshape(nb, nb)),
        hall_names=tuple(halls["name"]),
        hall_building=i32(halls["b"]),
        hall_origin=_ro(np.array(halls["origin"], dtype=np.float64).reshape(-1, 2)),
        hall_door=_ro(np.array(halls["door"], dtype=np.float64).reshape(-1, 2)),
        hall_power_w=f64(halls["p"]),
        hall_cooling_w=f64(halls["c"]),
        hall_hold_back=i32(halls["hb"]),
        row_names=tuple(rows["name"]),
        row_hall=i32(rows["h"]),
        row_power_w=f64(rows["p"]),
        row_cooling_w=f64(rows["c"]),
        row_feed=i32(rows["f"]),
        row_loop=i32(rows["l"]),
        row_facing=tuple(rows["face"]),
        row_aisle=tuple(rows["aisle"]),
        feed_names=tuple(feeds["name"]),
        feed_hall=i32(feeds["h"]),
        feed_power_w=f64(feeds["w"]),
        loop_names=tuple(loops["name"]),
        loop_hall=i32(loops["h"]),
        loop_cooling_w=f64(loops["w"]),
        pos_names=tuple(pos["name"]),
        pos_hall=i32(pos["h"]),
        pos_row=i32(pos["r"]),
        pos_x=f64(pos["x"]),
        pos_y=f64(pos["y"]),
        pos_width=f64(pos["wd"]),
        pos_depth=f64(pos["dp"]),
        pos_power_w=f64(pos["p"]),
        pos_cooling_w=f64(pos["c"]),
        pos_weight_kg=f64(pos["kg"]),
        pos_state=_ro(np.array(pos["st"], dtype=np.int8)),
    )
