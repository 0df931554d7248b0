"""The placement artifact: :class:`Placement` (where every rack and device stands) and the
figures computed once on it (:class:`HallTable`, :class:`LinkLengths`), which the terminal, the
report and ``design.json`` all read."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric import FabricDesign
from clusterloom.findings import Finding
from clusterloom.placement.bounds import gap_note
from clusterloom.placement.demand import Demand, FabricDevices
from clusterloom.placement.floor import FloorPlan
from clusterloom.placement.solve import SolveStats, bound_quality

__all__ = ["HallTable", "LinkLengths", "Placement"]


@dataclass(frozen=True)
class LinkLengths:
    """Floor distance of one fabric's links of one tier (metres, before vertical runs)."""

    fabric: str
    tier: int
    links: int
    total_m: float
    longest_m: float
    inter_hall: int


@dataclass(frozen=True, eq=False)
class HallTable:
    """Per hall (indexed like ``FloorPlan.hall_names``), read-only: ``racks`` placed, their
    ``power_w``, ``usable`` positions (neither blocked nor reserved, before placing) and
    ``free`` positions (usable, no rack on them: where the hall can still grow)."""

    racks: NDArray[np.int64]
    power_w: NDArray[np.float64]
    usable: NDArray[np.int64]
    free: NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class Placement:
    """Where every rack and device stands. Arrays are read-only and indexed by rack id (into
    ``demand``) or by topology node id (``devices``).

    - ``rack_position[r]``: the floor position of rack ``r`` (into ``floor``'s positions), whose
      building, hall, row, name and x/y the floor holds;
    - ``device(fabric).node_rack[v]`` / ``node_u[v]`` / ``node_height[v]``: rack, lowest rack
      unit and height of topology node ``v`` (a backend host sits in its server);
    - ``solves``: each CP-SAT model's objective and bound (links x metres);
    - ``forced_moves``: grown around installed racks (``place(fixed=...)``), how many of them
      must move at least (their unit cannot keep its start, plus one when the model with every
      other installed unit pinned has no solution).
    """

    floor: FloorPlan
    demand: Demand
    rack_position: NDArray[np.int32]
    solves: tuple[SolveStats, ...]
    lengths: tuple[LinkLengths, ...]
    findings: tuple[Finding, ...]
    forced_moves: int = 0

    @property
    def n_racks(self) -> int:
        return self.demand.n_racks

    @property
    def objective(self) -> float:
        return sum(s.objective for s in self.solves)

    @property
    def bound(self) -> float:
        return sum(s.bound for s in self.solves)

    @property
    def gap(self) -> float:
        obj = self.objective
        return 0.0 if obj <= 0 else max(0.0, (obj - self.bound) / obj)

    @cached_property
    def halls(self) -> HallTable:
        """The per-hall table: racks, power, usable and free positions (computed once)."""
        f = self.floor
        hall = f.pos_hall[self.rack_position]
        usable_mask = f.free_mask()
        free_mask = usable_mask.copy()
        free_mask[self.rack_position] = False
        table = HallTable(
            racks=np.bincount(hall, minlength=f.n_halls).astype(np.int64),
            power_w=np.bincount(hall, weights=self.demand.rack_power_w, minlength=f.n_halls).astype(
                np.float64
            ),
            usable=np.bincount(f.pos_hall[usable_mask], minlength=f.n_halls).astype(np.int64),
            free=np.bincount(f.pos_hall[free_mask], minlength=f.n_halls).astype(np.int64),
        )
        for a in (table.racks, table.power_w, table.usable, table.free):
            a.setflags(write=False)
        return table

    @property
    def free_positions(self) -> NDArray[np.int64]:
        """Per hall, the usable positions (not blocked or reserved) no rack stands on: where
        the hall can still grow (``halls.free``)."""
        return self.halls.free

    @property
    def bound_quality(self) -> str:
        """How far the gap can be trusted (:func:`~clusterloom.placement.solve.bound_quality`
        of the summed objective and bound)."""
        return bound_quality(self.gap)

    @property
    def bound_note(self) -> str:
        """Where a gap that is not tight comes from and what the bounds behind it ignore
        (:func:`~clusterloom.placement.bounds.gap_note`); empty for a tight or proven bound."""
        if self.bound_quality in ("proven optimal", "tight"):
            return ""
        return gap_note([(s.name, s.objective, s.bound) for s in self.solves])

    @cached_property
    def rack_names(self) -> tuple[str, ...]:
        """Each rack's name: its position's path with dashes (``b1-h1-r03-p12``)."""
        names = self.floor.pos_names
        return tuple(names[p].replace("/", "-") for p in self.rack_position.tolist())

    def device(self, fabric: str) -> FabricDevices:
        for d in self.demand.devices:
            if d.fabric == fabric:
                return d
        raise KeyError(fabric)

    def node_position(self, fabric: str) -> NDArray[np.int32]:
        """Floor position of every topology node of ``fabric``."""
        return self.rack_position[self.device(fabric).node_rack]

    def link_distance_m(self, fd: FabricDesign) -> NDArray[np.float64]:
        """Floor distance of every link of ``fd`` (metres; see :mod:`placement.floor`)."""
        pos = self.node_position(fd.name)
        t = fd.topology
        return self.floor.distance(pos[t.link_src], pos[t.link_dst])
