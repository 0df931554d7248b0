"""The cabling artifact: :class:`Cabling` (every link realized, as read-only arrays) and the
figures computed once on it (:class:`MediumTable`, :class:`CablingTotals`), which the terminal,
the report and the exports all read; the standard lengths cables are ordered in and the frame
kinds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.cabling.media import MediaTable
from clusterloom.cabling.pathways import Pathways
from clusterloom.cabling.plant import BACKBONE, TRUNK
from clusterloom.findings import Finding

__all__ = [
    "HALL_FRAME",
    "LENGTH_BUCKETS_M",
    "LONG_STEP_M",
    "PANELS_PER_RACK",
    "RACK_FRAME",
    "ROW_FRAME",
    "Cabling",
    "CablingTotals",
    "MediumTable",
    "hdf_name",
    "order_length",
    "panel_racks",
    "read_only",
]

PANELS_PER_RACK = 36  # catalog patch-48u: 36 x 1U panels

LENGTH_BUCKETS_M: tuple[float, ...] = (
    0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 70, 80, 100,
)  # fmt: skip
#: beyond the last bucket, lengths round up to a multiple of this
LONG_STEP_M = 25.0

#: frame kinds: a row's distribution frame, a network rack's own panels, a hall's HDF
ROW_FRAME, RACK_FRAME, HALL_FRAME = 0, 1, 2


@dataclass(frozen=True)
class MediumTable:
    """Per medium that realizes at least one link (in ``MediaTable.names`` order): its
    ``links``, how many of them are ``structured``, their ``metres`` and the ``longest``."""

    names: tuple[str, ...]
    links: tuple[int, ...]
    structured: tuple[int, ...]
    metres: tuple[float, ...]
    longest: tuple[float, ...]


@dataclass(frozen=True)
class CablingTotals:
    """Links realized, trunks and backbones between frames, panel ends."""

    realized: int
    trunks: int
    backbones: int
    panels: int


def order_length(length: NDArray[np.float64]) -> NDArray[np.float64]:
    """The standard length each cable is ordered in (the smallest bucket at least as long)."""
    buckets = np.asarray(LENGTH_BUCKETS_M, dtype=np.float64)
    k = np.searchsorted(buckets, length - 1e-9)
    long_ = np.ceil(length / LONG_STEP_M - 1e-9) * LONG_STEP_M
    return np.where(k < buckets.shape[0], buckets[np.minimum(k, buckets.shape[0] - 1)], long_)


def read_only(a: NDArray[Any]) -> NDArray[Any]:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Cabling:
    """Every link realized, as read-only arrays indexed by cable row ``i`` (fabric by fabric,
    in topology link order), plus frames, trunks and per-segment aggregates.

    Per link: ``fabric`` (index into ``fabrics``), ``link`` (topology link id), ``medium``
    (index into ``media.names``, -1 when none could be chosen), ``structured`` (through panels
    and trunks), ``length_m`` (the cable, or the channel of a structured link), ``order_m``,
    ``cord_a_m``/``cord_b_m`` (patch cords), ``loss_db``, ``frame_a``/``frame_b`` (the frame of
    each end, -1), ``hops`` (the cables between the frames from the a end, -1 padded: one trunk
    in a hall; trunk, backbone, trunk between halls), ``hop_legs`` (the link's first leg in
    each, 1-based), ``fiber_a`` and ``fiber_b`` (first fibre position in the leg at the link's
    a and b end), ``span`` (positions taken in a leg); ``a_breakout``/``b_breakout`` (logical
    ports per cage of each end's switch, 1 for a host) and ``shuffle_a``/``shuffle_b`` (a
    duplex lane of a broken-out cage, reaching its frame through the cage's MPO cord and a
    shuffle cassette).

    The cables between frames (``trunk_*``, indexed by cable ``t``) are 144-fibre trunks and
    backbones (``trunk_kind``, see ``plant``); frames are the rows' distribution frames, then
    the network racks' panels, then one hall distribution frame per hall (``frame_kind``).
    """

    fabrics: tuple[str, ...]
    media: MediaTable
    pathways: Pathways
    fabric: NDArray[np.int8]
    link: NDArray[np.int32]
    a_node: NDArray[np.int32]
    b_node: NDArray[np.int32]
    a_port: NDArray[np.int32]
    b_port: NDArray[np.int32]
    a_rack: NDArray[np.int32]
    b_rack: NDArray[np.int32]
    a_u: NDArray[np.int16]
    b_u: NDArray[np.int16]
    tier: NDArray[np.int8]
    medium: NDArray[np.int16]
    structured: NDArray[np.bool_]
    length_m: NDArray[np.float32]
    order_m: NDArray[np.float32]
    cord_a_m: NDArray[np.float32]
    cord_b_m: NDArray[np.float32]
    loss_db: NDArray[np.float32]
    frame_a: NDArray[np.int32]
    frame_b: NDArray[np.int32]
    hops: NDArray[np.int32]
    hop_legs: NDArray[np.int16]
    a_breakout: NDArray[np.int16]
    b_breakout: NDArray[np.int16]
    shuffle_a: NDArray[np.bool_]
    shuffle_b: NDArray[np.bool_]
    fiber_a: NDArray[np.int8]
    fiber_b: NDArray[np.int8]
    span: NDArray[np.int8]
    # frames (one per row, then one per network rack: ``frame_names``) and trunks; trunk t's
    # route is trunk_route_seg[ptr[t]:ptr[t+1]], from its b frame back to its a frame
    frame_names: tuple[str, ...]
    frame_hall: NDArray[np.int32]
    frame_kind: NDArray[np.int8]
    n_row_frames: int
    frame_node: NDArray[np.int32]
    frame_panels: NDArray[np.int32]
    trunk_a: NDArray[np.int32]
    trunk_b: NDArray[np.int32]
    trunk_fibers: NDArray[np.int32]
    trunk_fibers_used: NDArray[np.int32]
    trunk_smf: NDArray[np.bool_]
    trunk_kind: NDArray[np.int8]
    trunk_splices: NDArray[np.int8]
    trunk_route_ptr: NDArray[np.int64]
    trunk_route_seg: NDArray[np.int32]
    trunk_length_m: NDArray[np.float32]
    trunk_panel_a: NDArray[np.int32]
    trunk_panel_b: NDArray[np.int32]
    # per pathway segment
    seg_cables: NDArray[np.int64]
    seg_trunks: NDArray[np.int64]
    seg_fibers: NDArray[np.int64]
    seg_area_mm2: NDArray[np.float64]
    rerouted: int
    findings: tuple[Finding, ...]

    @property
    def n_links(self) -> int:
        return int(self.link.shape[0])

    @property
    def n_trunks(self) -> int:
        return int(self.trunk_a.shape[0])

    @property
    def trunk(self) -> NDArray[np.int32]:
        """The cable at each link's a end (-1 for a link that is not structured)."""
        return self.hops[:, 0]

    @property
    def leg(self) -> NDArray[np.int16]:
        """The link's first leg in its a-end cable."""
        return self.hop_legs[:, 0]

    @cached_property
    def n_hops(self) -> NDArray[np.int64]:
        """Cables between each link's frames (0, 1 or 3); computed once, the arrays are
        read-only."""
        return read_only((self.hops >= 0).sum(axis=1))

    @cached_property
    def _last_hop(self) -> NDArray[np.int64]:
        return np.maximum(self.n_hops - 1, 0)

    @cached_property
    def b_trunk(self) -> NDArray[np.int32]:
        """The cable at each link's b end (its last hop; -1 when not structured)."""
        return read_only(self.hops[np.arange(self.n_links), self._last_hop])

    @cached_property
    def b_leg(self) -> NDArray[np.int16]:
        """The link's first leg in its b-end cable."""
        return read_only(self.hop_legs[np.arange(self.n_links), self._last_hop])

    def panel_of(
        self, t: NDArray[np.integer], frame: NDArray[np.integer], leg: NDArray[np.integer]
    ) -> NDArray[np.int64]:
        """The panel (1-based, per frame; 0 for none) where leg ``leg`` of cable ``t`` ends at
        ``frame``: a cable takes one 12-port panel per 144 fibres; ``t`` -1 reads 0."""
        tt = np.where(t >= 0, t, self.n_trunks)
        first = np.where(
            np.append(self.trunk_a, -1)[tt] == frame,
            np.append(self.trunk_panel_a, 0)[tt],
            np.append(self.trunk_panel_b, 0)[tt],
        )
        return first.astype(np.int64) + (leg.astype(np.int64) - 1) // 12

    @property
    def seg_fill(self) -> NDArray[np.float64]:
        """Share of each segment's cross-section the cables take (limit: ``Tray.fill``)."""
        return self.seg_area_mm2 / self.pathways.seg_area_mm2

    def realized(self) -> NDArray[np.bool_]:
        return self.medium >= 0

    @cached_property
    def by_medium(self) -> MediumTable:
        """The per-medium table of the realized links (computed once)."""
        ok = self.realized()
        rows: list[tuple[str, int, int, float, float]] = []
        for i, name in enumerate(self.media.names):
            sel = ok & (self.medium == i)
            if not sel.any():
                continue
            rows.append(
                (
                    name,
                    int(sel.sum()),
                    int((sel & self.structured).sum()),
                    float(self.length_m[sel].sum()),
                    float(self.length_m[sel].max()),
                )
            )
        names, links, structured, metres, longest = zip(*rows, strict=True) if rows else ((),) * 5
        return MediumTable(names, links, structured, metres, longest)

    @cached_property
    def between_halls(self) -> dict[tuple[str, str], tuple[int, int]]:
        """Cables and installed fibres between each pair of halls, ``{(a, b): (cables,
        fibres)}``, a < b: the backbones (and any trunk) whose two frames are apart (computed
        once)."""
        pw = self.pathways
        return self._between([pw.hall_names[int(h)] for h in self.frame_hall.tolist()])

    @cached_property
    def between_buildings(self) -> dict[tuple[str, str], tuple[int, int]]:
        """As :attr:`between_halls`, between buildings."""
        pw = self.pathways
        hall_building = pw.hall_building[self.frame_hall].tolist()
        return self._between([pw.building_names[int(b)] for b in hall_building])

    def _between(self, keys: list[str]) -> dict[tuple[str, str], tuple[int, int]]:
        """Cables and fibres between frames whose ``keys`` differ, per pair of keys."""
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for a, b, n in zip(
            self.trunk_a.tolist(), self.trunk_b.tolist(), self.trunk_fibers.tolist(), strict=True
        ):
            ka, kb = keys[a], keys[b]
            if ka == kb:
                continue
            pair = (min(ka, kb), max(ka, kb))
            t, f = out.get(pair, (0, 0))
            out[pair] = (t + 1, f + n)
        return dict(sorted(out.items()))

    @cached_property
    def totals(self) -> CablingTotals:
        """Links realized, trunks, backbones and panel ends (computed once)."""
        return CablingTotals(
            realized=int(self.realized().sum()),
            trunks=int((self.trunk_kind == TRUNK).sum()),
            backbones=int((self.trunk_kind == BACKBONE).sum()),
            panels=int(self.frame_panels.sum()),
        )


def hdf_name(hall: str) -> str:
    """The frame name of ``hall``'s distribution frame (``b1/h1`` -> ``b1-h1-hdf``)."""
    return f"{hall.replace('/', '-')}-hdf"


def panel_racks(c: Cabling) -> int:
    """Patch racks the row and hall distribution frames need (``PANELS_PER_RACK`` 1U panels
    each; a network rack's panels sit in the rack itself)."""
    own = c.frame_panels[c.frame_kind != RACK_FRAME].tolist()
    return int(sum(math.ceil(p / PANELS_PER_RACK) for p in own))
