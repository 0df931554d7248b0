"""NetBox import of the structured plant: patch racks, patch panels with their rear and front
ports, and the cables between them with cable profiles and bundles.

NetBox model (4.5+: cable profiles, front ports with positions, ``CableBundle``):

- **Panels** are devices of type :data:`PANEL_TYPE` (1U): ``{frame}-pp{n:03d}``, panel ``n``
  of a frame, in the frame's patch rack (``{frame}-pr{k}``, 36 panels each, at rack units
  1-36) or, for a network rack's own panels, in that rack without a position (cabling does not
  check the rack's free units).
- **Rear ports** ``R01``-``R12`` (type ``mpo``): one per MPO-12 leg of the cable that ends on
  the panel; ``positions`` 6 for a leg of duplex links, 1 for a leg of parallel optics (and
  a spare leg).
- **Front ports**: a duplex leg ends on a cassette of six LC duplex ports ``F03-1``-``F03-6``
  (1 position each), a parallel leg on one MPO adapter ``F03``. A backbone's panel at a hall
  distribution frame has one MPO front port per leg with the leg's positions: the trunk legs
  of the hall plug into it (an interconnect).
- **Cables**: a direct link is one cable between two interfaces (profile ``single-1c1p``);
  a structured link adds two patch cords (interface to front port, ``{label}/A`` and
  ``/B``), and every cable between frames is one NetBox cable per leg (rear port to rear
  port, or rear port to an HDF front port), profile ``single-1c6p`` (duplex) or
  ``single-1c1p``, grouped by the **bundle** of its trunk or backbone (``t00012``), labelled
  ``t00012/L03``. Spare legs of a trunk to an HDF plug into nothing and are not exported.

**Lanes and polarity.** NetBox numbers the connections in a connector (positions) and its
straight profiles keep them across a cable; the fibres themselves cross (TIA-568 method B).
So the lanes NetBox traces are the lanes at each frame pair's lower frame (the cable's ``a``
end), and the cassettes at the far end map their front port ``m`` (the physical LC port, as on
the cut sheet) to rear position ``7 - m``. A trace from a switch port then ends on the right
far interface.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.cabling import Cabling
from clusterloom.cabling.media import LEG_FIBERS, TRUNK_FIBERS
from clusterloom.cabling.plant import BACKBONE
from clusterloom.cabling.stage import HALL_FRAME, PANELS_PER_RACK, RACK_FRAME
from clusterloom.export._csv import csv_chunks, obj, write_chunks, write_rows
from clusterloom.export.atomic import StrPath
from clusterloom.export.placement_files import hall_location
from clusterloom.pipeline import Design

PANEL_TYPE = "clusterloom-mpo-panel-1u"
PANEL_ROLE = "patch-panel"
PANEL_MANUFACTURER = "Generic"
PANEL_COLUMNS = (
    "name",
    "role",
    "manufacturer",
    "device_type",
    "site",
    "location",
    "rack",
    "position",
    "face",
    "status",
    "description",
)
DEVICE_TYPE_COLUMNS = ("manufacturer", "model", "slug", "u_height", "is_full_depth", "description")
PATCH_RACK_COLUMNS = (
    "site",
    "location",
    "name",
    "status",
    "role",
    "width",
    "u_height",
    "description",
)
REAR_PORT_COLUMNS = ("device", "name", "type", "positions", "description")
FRONT_PORT_COLUMNS = ("device", "name", "type", "positions", "rear_port", "rear_port_position")
BUNDLE_COLUMNS = ("name", "description")
LANES = LEG_FIBERS // 2  # duplex connections in a leg
STATUS = "planned"


class PlantNames:
    """Names of panels and ports at the ends of the cables between frames."""

    def __init__(self, c: Cabling) -> None:
        self.c = c
        legs = c.trunk_fibers.astype(np.int64) // LEG_FIBERS
        self.leg_base = np.concatenate([[0], np.cumsum(legs)])
        # per cable leg: 0 unused, 1 parallel optics, LANES duplex; and its HDF peer (the
        # backbone leg a trunk leg plugs into at an HDF, -1)
        self.kind = np.zeros(int(self.leg_base[-1]), dtype=np.int64)
        self.peer = np.full(int(self.leg_base[-1]), -1, dtype=np.int64)
        st = np.flatnonzero(c.structured & c.realized())
        slots = c.media.slots[c.medium[st]].astype(np.int64)
        n_legs = -(-slots // LEG_FIBERS)
        kind = np.where(c.span[st] < LEG_FIBERS, LANES, 1)
        for col in range(c.hops.shape[1]):
            on = c.hops[st, col] >= 0
            g = self.leg_base[c.hops[st[on], col]] + c.hop_legs[st[on], col] - 1
            for k in range(int(n_legs.max(initial=1))):
                more = n_legs[on] > k
                self.kind[g[more] + k] = kind[on][more]
        three = st[c.n_hops[st] == 3]
        bb = self.leg_base[c.hops[three, 1]] + c.hop_legs[three, 1] - 1
        for col in (0, 2):
            g = self.leg_base[c.hops[three, col]] + c.hop_legs[three, col] - 1
            self.peer[g] = bb

        self.frames = obj(c.frame_names)
        top = int(c.frame_panels.max(initial=0)) + 1
        self.suffix = obj([f"-pp{k:03d}" for k in range(top)])

    def panel_name(self, frame: int, panel: int) -> str:
        return f"{self.c.frame_names[frame]}-pp{panel:03d}"

    def panels(
        self, t: NDArray[np.int64], frame: NDArray[np.int64], leg: NDArray[np.int64]
    ) -> NDArray[np.object_]:
        """Names of the panels where legs ``leg`` of cables ``t`` end at ``frame`` (vector)."""
        return self.frames[frame] + self.suffix[self.c.panel_of(t, frame, leg)]  # type: ignore[no-any-return]


def _panel_rows(design: Design, n: PlantNames) -> Iterator[tuple[object, ...]]:
    c = n.c
    p = design.placement
    assert p is not None
    halls = [hall_location(h) for h in p.floor.hall_names]
    for f in range(len(c.frame_names)):
        name = c.frame_names[f]
        own = c.frame_kind[f] == RACK_FRAME
        for k in range(1, int(c.frame_panels[f]) + 1):
            rack = name[: -len("-pp")] if own else f"{name}-pr{(k - 1) // PANELS_PER_RACK + 1}"
            position = "" if own else (k - 1) % PANELS_PER_RACK + 1
            yield (
                n.panel_name(f, k),
                PANEL_ROLE,
                PANEL_MANUFACTURER,
                PANEL_TYPE,
                design.spec.name,
                halls[int(c.frame_hall[f])],
                rack,
                position,
                "front" if not own else "",
                STATUS,
                f"panel {k} of frame {name}",
            )


def _patch_rack_rows(design: Design, c: Cabling) -> Iterator[tuple[object, ...]]:
    p = design.placement
    assert p is not None
    halls = [hall_location(h) for h in p.floor.hall_names]
    for f in range(len(c.frame_names)):
        if c.frame_kind[f] == RACK_FRAME:
            continue
        what = "hall distribution frame" if c.frame_kind[f] == HALL_FRAME else "row frame"
        for k in range(1, -(-int(c.frame_panels[f]) // PANELS_PER_RACK) + 1):
            yield (
                design.spec.name,
                halls[int(c.frame_hall[f])],
                f"{c.frame_names[f]}-pr{k}",
                STATUS,
                "patch-rack",
                19,
                48,
                f"patch rack {k} of {what} {c.frame_names[f]} (not placed on the floor)",
            )


def _end_legs(n: PlantNames) -> dict[str, NDArray[Any]]:
    """Every leg of every cable end that has panels of its own: cable, frame, leg, kind, the
    panel's name, whether its cassettes flip and whether it stands at an HDF."""
    c = n.c
    t = np.concatenate([np.arange(c.n_trunks), np.arange(c.n_trunks)])
    frame = np.concatenate([c.trunk_a, c.trunk_b]).astype(np.int64)
    first = np.concatenate([c.trunk_panel_a, c.trunk_panel_b])
    o = np.lexsort((frame, t))  # cable by cable, its a end first
    t, frame, first = t[o], frame[o], first[o]
    keep = first > 0
    t, frame = t[keep], frame[keep]
    legs = (c.trunk_fibers[t] // LEG_FIBERS).astype(np.int64)
    e = np.repeat(np.arange(t.shape[0]), legs)
    leg = np.arange(int(legs.sum())) - np.repeat(np.cumsum(legs) - legs, legs) + 1
    tt, ff = t[e], frame[e]
    return {
        "t": tt,
        "frame": ff,
        "leg": leg,
        "kind": n.kind[n.leg_base[tt] + leg - 1],
        "panel": n.panels(tt, ff, leg),
        "flip": c.trunk_b[tt] == ff,
        "hdf": c.frame_kind[ff] == HALL_FRAME,
    }


FRONT = obj([f"F{p:02d}" for p in range(13)])
REAR = obj([f"R{p:02d}" for p in range(13)])
LANE = np.array([[f"F{p:02d}-{m}" for m in range(LANES + 1)] for p in range(13)], dtype=object)


def _rear_ports(n: PlantNames) -> Iterator[str]:
    e = _end_legs(n)
    port = (e["leg"] - 1) % 12 + 1
    desc = obj(
        [f"t{t:05d} leg {g}" for t, g in zip(e["t"].tolist(), e["leg"].tolist(), strict=True)]
    )
    return csv_chunks(
        [
            e["panel"],
            REAR[port],
            np.full(port.shape[0], "mpo", dtype=object),
            np.maximum(e["kind"], 1),
            desc,
        ]
    )


def _front_ports(n: PlantNames) -> Iterator[str]:
    e = _end_legs(n)
    port = (e["leg"] - 1) % 12 + 1
    cassette = ~e["hdf"] & (e["kind"] == LANES)
    r = np.where(cassette, LANES, 1)
    i = np.repeat(np.arange(port.shape[0]), r)
    m = np.arange(i.shape[0]) - np.repeat(np.cumsum(r) - r, r) + 1  # lane of a cassette
    cas = cassette[i]
    pos = np.where(cas, np.where(e["flip"][i], LANES + 1 - m, m), 1)
    name = np.where(cas, LANE[port[i], np.where(cas, m, 0)], FRONT[port[i]])
    kind = np.where(cas, "lc", "mpo").astype(object)
    positions = np.where(cas, 1, np.maximum(e["kind"][i], 1))
    return csv_chunks([e["panel"][i], name, kind, positions, REAR[port[i]], pos])


def _cable(t: int) -> str:
    return f"t{t:05d}"


def _fibre_type(c: Cabling, t: int) -> str:
    return "smf-os2" if c.trunk_smf[t] else "mmf-om4"


def _leg_rows(design: Design, n: PlantNames) -> Iterator[str]:
    """One NetBox cable per leg of every cable between frames."""
    c = n.c
    site = design.spec.name
    legs = (c.trunk_fibers // LEG_FIBERS).astype(np.int64)
    t = np.repeat(np.arange(c.n_trunks), legs)
    leg = np.arange(int(legs.sum())) - np.repeat(np.cumsum(legs) - legs, legs) + 1
    g = n.leg_base[t] + leg - 1
    port = (leg - 1) % 12 + 1
    cols: dict[str, list[NDArray[Any]]] = {}
    ok = np.ones(t.shape[0], dtype=bool)
    for side, frame, first in (
        ("a", c.trunk_a[t].astype(np.int64), c.trunk_panel_a[t]),
        ("b", c.trunk_b[t].astype(np.int64), c.trunk_panel_b[t]),
    ):
        dev = np.empty(t.shape[0], dtype=object)
        kind = np.full(t.shape[0], "dcim.rearport", dtype=object)
        name = REAR[port].copy()
        own = first > 0
        dev[own] = n.panels(t[own], frame[own], leg[own])
        # a trunk's leg at an HDF plugs into the front port of its backbone leg there
        plug = ~own & (n.peer[g] >= 0)
        peer = n.peer[g[plug]]
        bb = np.searchsorted(n.leg_base, peer, side="right") - 1
        bleg = peer - n.leg_base[bb] + 1
        dev[plug] = n.panels(bb, frame[plug], bleg)
        kind[plug] = "dcim.frontport"
        name[plug] = FRONT[(bleg - 1) % 12 + 1]
        ok &= own | plug
        cols[side] = [np.full(t.shape[0], site, dtype=object), dev, kind, name]
    smf = np.where(c.trunk_smf[t], "smf-os2", "mmf-om4").astype(object)
    profile = np.where(n.kind[g] == LANES, f"single-1c{LANES}p", "single-1c1p").astype(object)
    bundle = obj([f"t{x:05d}" for x in range(c.n_trunks)])[t]
    label = bundle + obj([f"/L{x:03d}" for x in range(int(legs.max(initial=1)) + 1)])[leg]
    length = obj([f"{float(x):.1f}" for x in c.trunk_length_m.tolist()])[t]
    rows = [
        *cols["a"],
        *cols["b"],
        smf,
        np.full(t.shape[0], STATUS, dtype=object),
        profile,
        bundle,
        label,
        length,
        np.full(t.shape[0], "m", dtype=object),
    ]
    return csv_chunks([col[ok] for col in rows])


def _bundle_rows(c: Cabling) -> Iterator[tuple[object, ...]]:
    for t in range(c.n_trunks):
        what = "backbone" if c.trunk_kind[t] == BACKBONE else "MPO trunk"
        fibre = "SMF" if c.trunk_smf[t] else "MMF"
        yield (
            _cable(t),
            f"{int(c.trunk_fibers[t])}-fibre {fibre} {what} "
            f"{c.frame_names[int(c.trunk_a[t])]} to {c.frame_names[int(c.trunk_b[t])]}",
        )


def cord_ends(
    n: PlantNames, rows: NDArray[np.int64], side: str
) -> tuple[NDArray[np.object_], NDArray[np.object_]]:
    """Panel and front port(s) where the patch cord of each structured link in ``rows`` ends
    on its ``side`` (``"a"`` or ``"b"``): a cassette's LC port for a duplex link (the lane its
    fibres take there), the MPO port(s) of its leg(s) for parallel optics."""
    c = n.c
    t = (c.trunk if side == "a" else c.b_trunk)[rows].astype(np.int64)
    leg = (c.leg if side == "a" else c.b_leg)[rows].astype(np.int64)
    frame = (c.frame_a if side == "a" else c.frame_b)[rows].astype(np.int64)
    fiber = (c.fiber_a if side == "a" else c.fiber_b)[rows].astype(np.int64)
    n_legs = -(-c.media.slots[c.medium[rows]].astype(np.int64) // LEG_FIBERS)
    devices = n.panels(t, frame, leg)
    port = (leg - 1) % 12 + 1
    duplex = c.span[rows] < LEG_FIBERS
    ports = np.where(duplex, LANE[port, np.where(duplex, (fiber + 1) // 2, 0)], FRONT[port])
    for i in np.flatnonzero(n_legs > 1).tolist():
        names = [f"F{(int(leg[i]) - 1 + j) % 12 + 1:02d}" for j in range(int(n_legs[i]))]
        ports[i] = ",".join(names)  # one field: the CSV writer quotes it
    return devices, ports


def write_netbox_plant(design: Design, out_dir: StrPath) -> list[Path]:
    """``netbox/device_types_panels.csv``, ``patch_racks.csv``, ``panels.csv``,
    ``rear_ports.csv``, ``front_ports.csv``, ``cable_bundles.csv`` and the leg cables
    ``cables_plant.csv`` (import in that order, after ``cables.csv``'s devices)."""
    c = design.cabling
    if c is None or design.placement is None:
        return []
    out = Path(out_dir) / "netbox"
    n = PlantNames(c)
    from clusterloom.export.cabling_files import NETBOX_CABLE_COLUMNS

    panel_type = [
        (
            PANEL_MANUFACTURER,
            PANEL_TYPE,
            PANEL_TYPE,
            1,
            "false",
            f"1U patch panel, 12 MPO-12 ports ({TRUNK_FIBERS} fibres)",
        )
    ]
    return [
        write_rows(out / "device_types_panels.csv", DEVICE_TYPE_COLUMNS, panel_type),
        write_rows(out / "patch_racks.csv", PATCH_RACK_COLUMNS, _patch_rack_rows(design, c)),
        write_rows(out / "panels.csv", PANEL_COLUMNS, _panel_rows(design, n)),
        write_chunks(out / "rear_ports.csv", REAR_PORT_COLUMNS, _rear_ports(n)),
        write_chunks(out / "front_ports.csv", FRONT_PORT_COLUMNS, _front_ports(n)),
        write_rows(out / "cable_bundles.csv", BUNDLE_COLUMNS, _bundle_rows(c)),
        write_chunks(out / "cables_plant.csv", NETBOX_CABLE_COLUMNS, _leg_rows(design, n)),
    ]
