"""Pathways: the cable trays, ladder racks and duct banks of a site as a graph of arrays.

Generated from the floor placement uses (:class:`~clusterloom.placement.floor.FloorPlan`)::

    building entrance ══ duct bank ══ building entrance           (campus: site distances)
          ║ riser / building backbone
    hall door ── hall spine ── cross-aisle tray (row heads) ─┬─ cross-aisle tray (row tails)
                                     │                       │
                               head ─ p01 ─ p02 ─ ... ─ pNN ─ tail      (tray over each row)

Nodes, in id order: every floor position (the tray point above the rack), then two row ends per
row (``head`` before the first position, ``tail`` after the last, half a pitch out), one door
per hall, one entrance per building. Segments (undirected edges, lengths in metres):

- ``row``: between consecutive positions of a row and from the end positions to the row ends
  (Manhattan between centres);
- ``cross-aisle``: row heads chained in row order, row tails likewise (Manhattan);
- ``spine``: a hall's door to the nearest row head and the nearest row tail (the hall's main
  distribution path);
- ``hall``: door to door inside a building (Manhattan in the building frame);
- ``riser``: a hall's door to its building entrance (Manhattan in the building frame);
- ``campus``: building entrance to entrance (the site's ``distances``, else Manhattan).

These lengths reproduce :meth:`FloorPlan.distance` for the routes placement assumed, so the
lengths cabling computes are the floor distances plus what the floor model leaves out (row
ends, vertical drops, slack).

Capacity (cross-section, mm^2) and fill limit per kind are :data:`TRAYS`; the defaults:

=============  ==============================  ==========  =========================================
kind           pathway                          fill limit  source
=============  ==============================  ==========  =========================================
row            600 x 100 mm ladder tray         50 %        TIA-569: <= 25 % at install, 50 % max
cross-aisle    600 x 100 mm ladder tray         50 %        (REFERENCES.md, "Cable trays")
spine          900 x 150 mm ladder tray         50 %        same
hall           900 x 150 mm ladder tray         50 %        same
riser          900 x 150 mm ladder tray         50 %        same
campus         6 x 100 mm ducts (duct bank)     40 %        NEC chapter 9 table 1 (over 2 cables)
=============  ==============================  ==========  =========================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from clusterloom.placement.floor import FloorPlan
from clusterloom.spec.site import SiteSpec

SEGMENT_KINDS: tuple[str, ...] = ("row", "cross-aisle", "spine", "hall", "riser", "campus")
ROW, CROSS, SPINE, HALL, RISER, CAMPUS = range(6)


@dataclass(frozen=True)
class Tray:
    """A pathway's usable cross-section: ``area_mm2`` times ``fill`` may carry cables."""

    description: str
    area_mm2: float
    fill: float


#: Default pathway per segment kind (see the module docstring for sources).
TRAYS: dict[str, Tray] = {
    "row": Tray("600 x 100 mm ladder tray", 600.0 * 100.0, 0.5),
    "cross-aisle": Tray("600 x 100 mm ladder tray", 600.0 * 100.0, 0.5),
    "spine": Tray("900 x 150 mm ladder tray", 900.0 * 150.0, 0.5),
    "hall": Tray("900 x 150 mm ladder tray", 900.0 * 150.0, 0.5),
    "riser": Tray("900 x 150 mm ladder tray", 900.0 * 150.0, 0.5),
    "campus": Tray("duct bank of 6 x 100 mm ducts", 6 * math.pi * 50.0**2, 0.4),
}


def site_trays(site: SiteSpec | None) -> dict[str, Tray]:
    """The default pathways with the site's ``pathways`` section applied."""
    trays = dict(TRAYS)
    if site is not None:
        for kind, given in site.pathways.items():
            trays[kind] = Tray(given.description, given.area_mm2, given.fill)
    return trays


def _ro(a: NDArray[Any]) -> NDArray[Any]:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Pathways:
    """The tray graph: node coordinates (campus frame) and undirected segments as arrays.

    ``seg_a/seg_b`` are node ids, ``seg_length_m`` metres, ``seg_kind`` an index into
    :data:`SEGMENT_KINDS`, ``seg_capacity_mm2`` the cross-section that may be filled (area x
    fill limit), ``seg_hall`` the hall a segment belongs to (-1 for campus segments) and
    ``seg_building`` its building (-1 for campus segments).
    """

    n_positions: int
    row_names: tuple[str, ...]
    row_hall: NDArray[np.int32]
    hall_names: tuple[str, ...]
    hall_building: NDArray[np.int32]
    building_names: tuple[str, ...]
    node_names: tuple[str, ...]
    node_xy: NDArray[np.float64]
    row_head: NDArray[np.int32]
    row_tail: NDArray[np.int32]
    hall_door: NDArray[np.int32]
    building_entrance: NDArray[np.int32]
    seg_a: NDArray[np.int32]
    seg_b: NDArray[np.int32]
    seg_length_m: NDArray[np.float64]
    seg_kind: NDArray[np.int8]
    seg_area_mm2: NDArray[np.float64]
    seg_capacity_mm2: NDArray[np.float64]
    seg_hall: NDArray[np.int32]
    seg_building: NDArray[np.int32]
    trays: tuple[Tray, ...]  # the pathway of each segment kind, in SEGMENT_KINDS order

    def tray(self, s: int) -> Tray:
        """The pathway (cross-section, fill limit, description) of segment ``s``."""
        return self.trays[int(self.seg_kind[s])]

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_segments(self) -> int:
        return int(self.seg_a.shape[0])

    def segment_name(self, s: int) -> str:
        a, b = self.node_names[int(self.seg_a[s])], self.node_names[int(self.seg_b[s])]
        return f"{SEGMENT_KINDS[int(self.seg_kind[s])]}:{a}~{b}"

    def graph(self, weight: NDArray[np.float64] | None = None) -> sp.csr_matrix:
        """Symmetric CSR adjacency with ``weight`` (default: lengths) on each segment."""
        w = self.seg_length_m if weight is None else weight
        # a zero-length segment would vanish from a sparse matrix: keep a millimetre
        w = np.maximum(w, 1e-3)
        n = self.n_nodes
        rows = np.concatenate([self.seg_a, self.seg_b])
        cols = np.concatenate([self.seg_b, self.seg_a])
        return sp.csr_matrix((np.concatenate([w, w]), (rows, cols)), shape=(n, n))

    def edge_lookup(self) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
        """Sorted keys ``u * n + v`` (both directions) and the segment of each key."""
        n = self.n_nodes
        keys = np.concatenate(
            [
                self.seg_a.astype(np.int64) * n + self.seg_b,
                self.seg_b.astype(np.int64) * n + self.seg_a,
            ]
        )
        segs = np.concatenate([np.arange(self.n_segments)] * 2).astype(np.int32)
        order = np.argsort(keys, kind="stable")
        return keys[order], segs[order]


def _manhattan(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.abs(a - b).sum(axis=-1)  # type: ignore[no-any-return]


def build_pathways(floor: FloorPlan, trays: dict[str, Tray] | None = None) -> Pathways:
    """The tray graph of ``floor`` (see the module docstring)."""
    trays = TRAYS if trays is None else trays
    P = floor.n_positions
    # campus frame: building origin + hall origin + hall-frame position
    hall_off = floor.building_xy[floor.hall_building] + floor.hall_origin
    pos_xy = np.stack([floor.pos_x, floor.pos_y], axis=1) + hall_off[floor.pos_hall]
    names: list[str] = list(floor.pos_names)
    xy: list[NDArray[np.float64]] = [pos_xy]
    seg: dict[str, list[Any]] = {"a": [], "b": [], "k": []}

    def add(a: NDArray[np.integer] | list[int], b: NDArray[np.integer] | list[int], k: int) -> None:
        a_ = np.asarray(a, dtype=np.int64).ravel()
        b_ = np.asarray(b, dtype=np.int64).ravel()
        seg["a"].append(a_)
        seg["b"].append(b_)
        seg["k"].append(np.full(a_.shape[0], k, dtype=np.int8))

    # row trays: consecutive positions of one row (positions of a row are consecutive ids)
    same_row = floor.pos_row[1:] == floor.pos_row[:-1]
    idx = np.flatnonzero(same_row)
    add(idx, idx + 1, ROW)

    n_rows = len(floor.row_names)
    first = np.full(n_rows, -1, dtype=np.int64)
    last = np.full(n_rows, -1, dtype=np.int64)
    rows_seen = floor.pos_row.astype(np.int64)
    for p in range(P - 1, -1, -1):
        first[rows_seen[p]] = p
    for p in range(P):
        last[rows_seen[p]] = p
    heads = np.arange(P, P + n_rows, dtype=np.int32)
    tails = np.arange(P + n_rows, P + 2 * n_rows, dtype=np.int32)
    head_xy = np.zeros((n_rows, 2))
    tail_xy = np.zeros((n_rows, 2))
    for r in range(n_rows):
        f, g = int(first[r]), int(last[r])
        if f < 0:  # a row with no positions keeps its ends at the hall origin
            head_xy[r] = tail_xy[r] = hall_off[floor.row_hall[r]]
            continue
        if g > f:
            step = (pos_xy[f + 1] - pos_xy[f]) / max(np.abs(pos_xy[f + 1] - pos_xy[f]).sum(), 1e-9)
            end_step = (pos_xy[g] - pos_xy[g - 1]) / max(
                np.abs(pos_xy[g] - pos_xy[g - 1]).sum(), 1e-9
            )
        else:
            step = end_step = np.array([1.0, 0.0])
        head_xy[r] = pos_xy[f] - step * floor.pos_width[f] / 2
        tail_xy[r] = pos_xy[g] + end_step * floor.pos_width[g] / 2
    names += [f"{n}/head" for n in floor.row_names] + [f"{n}/tail" for n in floor.row_names]
    xy += [head_xy, tail_xy]
    has = first >= 0
    add(heads[has], first[has], ROW)
    add(last[has], tails[has], ROW)

    H = floor.n_halls
    doors = np.arange(P + 2 * n_rows, P + 2 * n_rows + H, dtype=np.int32)
    door_xy = floor.building_xy[floor.hall_building] + floor.door_xy()
    names += [f"{n}/door" for n in floor.hall_names]
    xy.append(door_xy)
    for h in range(H):
        rows = np.flatnonzero((floor.row_hall == h) & has)
        if rows.shape[0] == 0:
            continue
        # cross-aisle trays chain the row ends in row order; the door joins the nearest of each
        add(heads[rows[:-1]], heads[rows[1:]], CROSS)
        add(tails[rows[:-1]], tails[rows[1:]], CROSS)
        for ends, end_xy in ((heads, head_xy), (tails, tail_xy)):
            near = rows[int(np.argmin(_manhattan(end_xy[rows], door_xy[h])))]
            add([int(doors[h])], [int(ends[near])], SPINE)

    B = len(floor.building_names)
    start = P + 2 * n_rows + H
    entrances = np.arange(start, start + B, dtype=np.int32)
    names += [f"{n}/entrance" for n in floor.building_names]
    xy.append(floor.building_xy.astype(np.float64))
    for b in range(B):
        hs = np.flatnonzero(floor.hall_building == b)
        for i, h in enumerate(hs.tolist()):
            for g in hs[i + 1 :].tolist():
                add([int(doors[h])], [int(doors[g])], HALL)
            add([int(doors[h])], [int(entrances[b])], RISER)
        for c in range(b + 1, B):
            add([int(entrances[b])], [int(entrances[c])], CAMPUS)

    node_xy = np.concatenate(xy, axis=0)
    a = np.concatenate(seg["a"]).astype(np.int32)
    b_ = np.concatenate(seg["b"]).astype(np.int32)
    kind = np.concatenate(seg["k"])
    length = _manhattan(node_xy[a], node_xy[b_])
    # campus segments take the site's route length between entrances
    camp = kind == CAMPUS
    if camp.any():
        ba, bb = a[camp] - start, b_[camp] - start
        length[camp] = floor.building_distance[ba, bb]
    node_hall = np.concatenate(
        [
            floor.pos_hall.astype(np.int32),
            floor.row_hall.astype(np.int32),
            floor.row_hall.astype(np.int32),
            np.arange(H, dtype=np.int32),
            np.full(B, -1, dtype=np.int32),
        ]
    )
    seg_hall = np.where(kind >= RISER, -1, node_hall[a]).astype(np.int32)
    seg_hall = np.where(kind == HALL, -1, seg_hall).astype(np.int32)
    node_building = np.concatenate(
        [floor.hall_building[node_hall[:start]].astype(np.int32), np.arange(B, dtype=np.int32)]
    )
    seg_building = np.where(kind == CAMPUS, -1, node_building[a]).astype(np.int32)
    area = np.array([trays[SEGMENT_KINDS[k]].area_mm2 for k in kind.tolist()], dtype=np.float64)
    fill = np.array([trays[SEGMENT_KINDS[k]].fill for k in kind.tolist()], dtype=np.float64)
    return Pathways(
        n_positions=P,
        row_names=floor.row_names,
        row_hall=floor.row_hall,
        hall_names=floor.hall_names,
        hall_building=floor.hall_building,
        building_names=floor.building_names,
        node_names=tuple(names),
        node_xy=_ro(node_xy),
        row_head=_ro(heads),
        row_tail=_ro(tails),
        hall_door=_ro(doors),
        building_entrance=_ro(entrances),
        seg_a=_ro(a),
        seg_b=_ro(b_),
        seg_length_m=_ro(length.astype(np.float64)),
        seg_kind=_ro(kind),
        seg_area_mm2=_ro(area),
        seg_capacity_mm2=_ro(area * fill),
        seg_hall=_ro(seg_hall),
        seg_building=_ro(seg_building),
        trays=tuple(trays[k] for k in SEGMENT_KINDS),
    )
