"""NetBox import of the structured plant: patch racks, patch panels with their rear and front
ports, and the cables between them with cable profiles and bundles.

NetBox model (4.5: cable profiles and front ports with positions; 4.6: cable bundles):

- **Panels** are 1U devices ``{frame}-pp{n:03d}``, panel ``n`` of a frame, in the frame's patch
  rack (``{frame}-pr{k}``, 36 panels each, at rack units 1-36) or, for a network rack's own
  panels, in that rack without a position (cabling does not check the rack's free units).
  A panel's ports come from its device type (:func:`panel_type`, one per port layout,
  ``clusterloom-mpo-panel-1u-ddddddmmmmmm``), so no file names a panel without its site and
  every front position is mapped (NetBox's front-port CSV import maps only a port's first
  position).
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
  ``single-1c1p``, grouped by the **bundle** of its trunk or backbone (``{site}/t00012``:
  bundle names are unique across a NetBox), labelled ``t00012/L03``. Spare legs of a trunk to
  an HDF plug into nothing and are not exported.

**Lanes and polarity.** NetBox numbers the connections in a connector (positions) and its
straight profiles keep them across every cable and HDF interconnect; the fibres themselves
cross (TIA-568 method B, an odd number of cables per channel), so lane ``m`` at one frame is
lane ``7 - m`` at the other. The cassettes of a duplex leg at the channel's higher frame
(``X``) map front port ``m`` to rear position ``7 - m``, those at the lower frame (``D``)
straight; a link's cord at its ``a`` frame is on its first lane ``m`` and at its ``b`` frame
on ``7 - m``, the physical LC port its fibres reach. NetBox's own trace from either interface
then ends on the other (``tests/export/test_netbox_real.py`` checks it in a real NetBox).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.atomic import StrPath
from clusterloom.cabling import Cabling
from clusterloom.cabling.artifact import HALL_FRAME, PANELS_PER_RACK, RACK_FRAME
from clusterloom.cabling.media import LEG_FIBERS
from clusterloom.cabling.plant import BACKBONE
from clusterloom.export._csv import csv_chunks, obj, write_chunks, write_rows
from clusterloom.export.netbox import DEVICE_COLUMNS, NETBOX_CABLE_COLUMNS
from clusterloom.export.placement_files import hall_location
from clusterloom.pipeline import Design

PANEL_TYPE = "clusterloom-mpo-panel-1u"
PANEL_ROLE = "patch-panel"
PANEL_MANUFACTURER = "Generic"
PANEL_COLUMNS = DEVICE_COLUMNS  # panels are NetBox devices, imported the same way
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
        # the cassettes of a duplex leg: the one at the channel's higher frame maps front port
        # m to rear position 7 - m (end 0 is a cable's a end, 1 its b end)
        self.flip = np.zeros((int(self.leg_base[-1]), 2), dtype=bool)
        for t_col, leg_col, here, there in (
            (c.trunk, c.leg, c.frame_a, c.frame_b),
            (c.b_trunk, c.b_leg, c.frame_b, c.frame_a),
        ):
            tt = t_col[st].astype(np.int64)
            g = self.leg_base[tt] + leg_col[st].astype(np.int64) - 1
            end = (c.trunk_a[tt] != here[st]).astype(np.int64)
            self.flip[g, end] = here[st] > there[st]
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


def _panel_rows(
    design: Design, n: PlantNames, codes: dict[str, str]
) -> Iterator[tuple[object, ...]]:
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
            panel = n.panel_name(f, k)
            yield (
                panel,
                PANEL_ROLE,
                PANEL_MANUFACTURER,
                panel_type_name(codes.get(panel, "")),
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
        "flip": n.flip[n.leg_base[tt] + leg - 1, (c.trunk_a[tt] != ff).astype(np.int64)],
        "hdf": c.frame_kind[ff] == HALL_FRAME,
    }


FRONT = obj([f"F{p:02d}" for p in range(13)])
REAR = obj([f"R{p:02d}" for p in range(13)])
LANE = np.array([[f"F{p:02d}-{m}" for m in range(LANES + 1)] for p in range(13)], dtype=object)

#: What a panel's port ``p`` holds, one letter per port in the panel type's name: ``D`` a
#: cassette of six LC ports ``Fpp-1``..``Fpp-6`` (front ``m`` on rear position ``m``), ``X``
#: the same cassette at a channel's higher frame (front ``m`` on rear position ``7 - m``),
#: ``M`` one MPO adapter ``Fpp`` (one position: parallel optics or a spare leg), ``H`` one
#: MPO adapter with six positions straight through (an HDF interconnect of duplex legs).
PORT_KINDS = "DXMH"


def panel_codes(n: PlantNames) -> dict[str, str]:
    """The port layout of every panel (a letter of :data:`PORT_KINDS` per port, port 1
    first), by panel name."""
    e = _end_legs(n)
    cassette = ~e["hdf"] & (e["kind"] == LANES)
    letter = np.where(
        cassette,
        np.where(e["flip"], "X", "D"),
        np.where(e["hdf"] & (e["kind"] == LANES), "H", "M"),
    )
    port = (e["leg"] - 1) % 12
    codes: dict[str, list[str]] = {}
    for name, p, k in zip(e["panel"].tolist(), port.tolist(), letter.tolist(), strict=True):
        row = codes.setdefault(name, [])
        row.extend("-" * (p - len(row)))
        row.append(k)
    return {name: "".join(row) for name, row in codes.items()}


def panel_type_name(code: str) -> str:
    return f"{PANEL_TYPE}-{code.lower()}"


def panel_type(code: str) -> dict[str, object]:
    """The NetBox device type (import document) of a panel whose ports hold ``code``: rear
    ports ``R01``.., front ports and the mapping of every front position to its rear
    position."""
    rear: list[dict[str, object]] = []
    front: list[dict[str, object]] = []
    maps: list[dict[str, object]] = []
    for p, k in enumerate(code, start=1):
        if k == "-":
            continue
        r = f"R{p:02d}"
        rear.append({"name": r, "type": "mpo", "positions": 1 if k == "M" else LANES})
        if k in "DX":
            for m in range(1, LANES + 1):
                f = f"F{p:02d}-{m}"
                front.append({"name": f, "type": "lc", "positions": 1})
                to = LANES + 1 - m if k == "X" else m
                maps.append(_mapping(f, 1, r, to))
        else:
            positions = 1 if k == "M" else LANES
            front.append({"name": f"F{p:02d}", "type": "mpo", "positions": positions})
            maps += [_mapping(f"F{p:02d}", q, r, q) for q in range(1, positions + 1)]
    legs = sum(k != "-" for k in code)
    return {
        "manufacturer": PANEL_MANUFACTURER,
        "model": panel_type_name(code),
        "slug": panel_type_name(code),
        "u_height": 1,
        "is_full_depth": False,
        "description": f"1U patch panel, {legs} MPO-12 legs ({code})",
        "rear-ports": rear,
        "front-ports": front,
        "port-mappings": maps,
    }


def _mapping(front: str, fpos: int, rear: str, rpos: int) -> dict[str, object]:
    return {
        "front_port": front,
        "front_port_position": fpos,
        "rear_port": rear,
        "rear_port_position": rpos,
    }


def panel_types(codes: dict[str, str]) -> list[dict[str, object]]:
    """One device type per distinct panel layout, in layout order."""
    return [panel_type(code) for code in sorted(set(codes.values()))]


def bundle_name(site: str, t: int) -> str:
    """NetBox cable bundle of cable ``t`` between frames: ``{site}/t00012`` (bundle names are
    unique across a whole NetBox, so they carry the design's site)."""
    return f"{site}/t{t:05d}"


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
    bundle = obj([bundle_name(site, x) for x in range(c.n_trunks)])[t]
    label = (
        obj([f"t{x:05d}" for x in range(c.n_trunks)])[t]
        + obj([f"/L{x:03d}" for x in range(int(legs.max(initial=1)) + 1)])[leg]
    )
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


def _bundle_rows(c: Cabling, site: str) -> Iterator[tuple[object, ...]]:
    for t in range(c.n_trunks):
        what = "backbone" if c.trunk_kind[t] == BACKBONE else "MPO trunk"
        fibre = "SMF" if c.trunk_smf[t] else "MMF"
        yield (
            bundle_name(site, t),
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
    # a duplex link's lane at its a frame, and at its b frame the lane those fibres reach
    # (method B: positions p and p + 1 arrive on 13 - p and 12 - p, lane 7 - m), which is
    # where NetBox's trace arrives through the cassettes (one of the two maps m to 7 - m)
    lane = (c.fiber_a[rows].astype(np.int64) + 1) // 2
    if side == "b":
        lane = LANES + 1 - lane
    n_legs = -(-c.media.slots[c.medium[rows]].astype(np.int64) // LEG_FIBERS)
    devices = n.panels(t, frame, leg)
    port = (leg - 1) % 12 + 1
    duplex = c.span[rows] < LEG_FIBERS
    ports = np.where(duplex, LANE[port, np.where(duplex, lane, 0)], FRONT[port])
    for i in np.flatnonzero(n_legs > 1).tolist():
        names = [f"F{(int(leg[i]) - 1 + j) % 12 + 1:02d}" for j in range(int(n_legs[i]))]
        ports[i] = ",".join(names)  # one field: the CSV writer quotes it
    return devices, ports


def write_netbox_plant(design: Design, out_dir: StrPath) -> list[Path]:
    """``netbox/patch_racks.csv``, ``panels.csv``, ``cable_bundles.csv`` and the leg cables
    ``cables_plant.csv``; the panels' device types are :func:`panel_types` (written by
    ``export.netbox_setup`` with the other device types)."""
    c = design.cabling
    if c is None or design.placement is None:
        return []
    out = Path(out_dir) / "netbox"
    n = PlantNames(c)
    codes = panel_codes(n)
    site = design.spec.name
    return [
        write_rows(out / "patch_racks.csv", PATCH_RACK_COLUMNS, _patch_rack_rows(design, c)),
        write_rows(out / "panels.csv", PANEL_COLUMNS, _panel_rows(design, n, codes)),
        write_rows(out / "cable_bundles.csv", BUNDLE_COLUMNS, _bundle_rows(c, site)),
        write_chunks(out / "cables_plant.csv", NETBOX_CABLE_COLUMNS, _leg_rows(design, n)),
    ]
