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

import numpy as np
from numpy.typing import NDArray

from clusterloom.cabling import Cabling
from clusterloom.cabling.media import LEG_FIBERS, TRUNK_FIBERS
from clusterloom.cabling.plant import BACKBONE
from clusterloom.cabling.stage import HALL_FRAME, PANELS_PER_RACK, RACK_FRAME
from clusterloom.export.atomic import StrPath, atomic_open
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


def _write(path: Path, header: tuple[str, ...], rows: Iterator[tuple[object, ...]]) -> Path:
    with atomic_open(path, "w") as fh:
        fh.write(",".join(header) + "\n")
        for row in rows:
            fh.write(",".join(str(x) for x in row) + "\n")
    return path


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

    def panel_name(self, frame: int, panel: int) -> str:
        return f"{self.c.frame_names[frame]}-pp{panel:03d}"

    def end(self, t: int, frame: int) -> tuple[int, int]:
        """First panel of cable ``t`` at ``frame`` (0: none), and the frame."""
        c = self.c
        first = c.trunk_panel_a[t] if c.trunk_a[t] == frame else c.trunk_panel_b[t]
        return int(first), frame

    def rear(self, t: int, frame: int, leg: int) -> tuple[str, str]:
        """Panel and rear port where leg ``leg`` (1-based) of cable ``t`` ends at ``frame``."""
        first, _ = self.end(t, frame)
        return self.panel_name(frame, first + (leg - 1) // 12), f"R{(leg - 1) % 12 + 1:02d}"

    def flipped(self, t: int, frame: int) -> bool:
        """Whether the cassettes at this end map front port ``m`` to rear position ``7 - m``."""
        return bool(self.c.trunk_b[t] == frame)


def _panel_rows(design: Design, n: PlantNames) -> Iterator[tuple[object, ...]]:
    c = n.c
    p = design.placement
    assert p is not None
    halls = [h.replace("/", "-") for h in p.floor.hall_names]
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
    halls = [h.replace("/", "-") for h in p.floor.hall_names]
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


def _ends(c: Cabling) -> Iterator[tuple[int, int, int]]:
    """(cable, frame, first panel) of every cable end that has panels of its own."""
    for t in range(c.n_trunks):
        for frame, first in (
            (c.trunk_a[t], c.trunk_panel_a[t]),
            (c.trunk_b[t], c.trunk_panel_b[t]),
        ):
            if first > 0:
                yield t, int(frame), int(first)


def _port_rows(n: PlantNames, front: bool) -> Iterator[tuple[object, ...]]:
    c = n.c
    for t, frame, first in _ends(c):
        hdf = c.frame_kind[frame] == HALL_FRAME
        flip = n.flipped(t, frame)
        for leg in range(1, int(c.trunk_fibers[t]) // LEG_FIBERS + 1):
            kind = int(n.kind[n.leg_base[t] + leg - 1])
            device = n.panel_name(frame, first + (leg - 1) // 12)
            port = (leg - 1) % 12 + 1
            positions = max(kind, 1)
            if not front:
                yield device, f"R{port:02d}", "mpo", positions, f"{_cable(t)} leg {leg}"
            elif hdf or kind != LANES:
                yield device, f"F{port:02d}", "mpo", positions, f"R{port:02d}", 1
            else:
                for m in range(1, LANES + 1):
                    pos = LANES + 1 - m if flip else m
                    yield device, f"F{port:02d}-{m}", "lc", 1, f"R{port:02d}", pos


def _cable(t: int) -> str:
    return f"t{t:05d}"


def _fibre_type(c: Cabling, t: int) -> str:
    return "smf-os2" if c.trunk_smf[t] else "mmf-om4"


def _leg_rows(design: Design, n: PlantNames) -> Iterator[tuple[object, ...]]:
    """One NetBox cable per leg of every cable between frames."""
    c = n.c
    site = design.spec.name
    for t in range(c.n_trunks):
        a, b = int(c.trunk_a[t]), int(c.trunk_b[t])
        length = f"{float(c.trunk_length_m[t]):.1f}"
        for leg in range(1, int(c.trunk_fibers[t]) // LEG_FIBERS + 1):
            g = int(n.leg_base[t]) + leg - 1
            kind = int(n.kind[g])
            sides = []
            for frame in (a, b):
                first, _ = n.end(t, frame)
                if first > 0:
                    dev, port = n.rear(t, frame, leg)
                    sides.append((dev, "dcim.rearport", port))
                elif n.peer[g] >= 0:  # a trunk leg plugging into a backbone leg at an HDF
                    bb = int(np.searchsorted(n.leg_base, n.peer[g], side="right") - 1)
                    bleg = int(n.peer[g] - n.leg_base[bb]) + 1
                    dev, port = n.rear(bb, frame, bleg)
                    sides.append((dev, "dcim.frontport", "F" + port[1:]))
            if len(sides) < 2:
                continue
            profile = f"single-1c{LANES}p" if kind == LANES else "single-1c1p"
            yield (
                site,
                *sides[0],
                site,
                *sides[1],
                _fibre_type(c, t),
                STATUS,
                profile,
                _cable(t),
                f"{_cable(t)}/L{leg:03d}",
                length,
                "m",
            )


def _bundle_rows(c: Cabling) -> Iterator[tuple[object, ...]]:
    for t in range(c.n_trunks):
        what = "backbone" if c.trunk_kind[t] == BACKBONE else "MPO trunk"
        fibre = "SMF" if c.trunk_smf[t] else "MMF"
        yield (
            _cable(t),
            f"{int(c.trunk_fibers[t])}-fibre {fibre} {what} "
            f"{c.frame_names[int(c.trunk_a[t])]} to {c.frame_names[int(c.trunk_b[t])]}",
        )


def cord_ends(n: PlantNames, rows: NDArray[np.int64], side: str) -> tuple[list[str], list[str]]:
    """Panel and front port(s) where the patch cord of each structured link in ``rows`` ends
    on its ``side`` (``"a"`` or ``"b"``)."""
    c = n.c
    t = (c.trunk if side == "a" else c.b_trunk)[rows]
    leg = (c.leg if side == "a" else c.b_leg)[rows]
    frame = (c.frame_a if side == "a" else c.frame_b)[rows]
    fiber = (c.fiber_a if side == "a" else c.fiber_b)[rows]
    n_legs = -(-c.media.slots[c.medium[rows]].astype(np.int64) // LEG_FIBERS)
    devices: list[str] = []
    ports: list[str] = []
    for ti, lg, fr, fb, k, sp in zip(
        t.tolist(),
        leg.tolist(),
        frame.tolist(),
        fiber.tolist(),
        n_legs.tolist(),
        c.span[rows].tolist(),
        strict=True,
    ):
        dev, rear = n.rear(ti, fr, lg)
        devices.append(dev)
        if sp < LEG_FIBERS:
            ports.append(f"F{rear[1:]}-{(fb + 1) // 2}")
        else:
            names = [f"F{(lg - 1 + j) % 12 + 1:02d}" for j in range(k)]
            ports.append(names[0] if k == 1 else '"' + ",".join(names) + '"')
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

    panel_type = iter(
        [
            (
                PANEL_MANUFACTURER,
                PANEL_TYPE,
                PANEL_TYPE,
                1,
                "false",
                f"1U patch panel, 12 MPO-12 ports ({TRUNK_FIBERS} fibres)",
            )
        ]
    )
    return [
        _write(out / "device_types_panels.csv", DEVICE_TYPE_COLUMNS, panel_type),
        _write(out / "patch_racks.csv", PATCH_RACK_COLUMNS, _patch_rack_rows(design, c)),
        _write(out / "panels.csv", PANEL_COLUMNS, _panel_rows(design, n)),
        _write(out / "rear_ports.csv", REAR_PORT_COLUMNS, _port_rows(n, front=False)),
        _write(out / "front_ports.csv", FRONT_PORT_COLUMNS, _port_rows(n, front=True)),
        _write(out / "cable_bundles.csv", BUNDLE_COLUMNS, _bundle_rows(c)),
        _write(out / "cables_plant.csv", NETBOX_CABLE_COLUMNS, _leg_rows(design, n)),
    ]
