"""Placement outputs: rack positions, rack elevations and NetBox bulk-import CSVs.

- ``placement/racks.csv``: one row per rack: name (its position, ``b1-h1-r03-p12``), what it
  holds, building, hall, row, position, x/y in the hall and in the building (metres), the
  way its front faces and its cold aisle, feed, cooling loop, power and weight;
- ``placement/elevations.csv``: one row per device: rack, lowest rack unit, height, device
  name (the names of ``naming``), role and fabric; servers once, then each fabric's switches;
- ``netbox/sites.csv``, ``netbox/locations.csv`` (buildings, then halls inside them),
  ``netbox/racks.csv`` (rack x/y, row, feed and cooling loop in custom fields, which NetBox
  lacks: create custom fields ``x_m``, ``y_m``, ``row``, ``position``, ``feed``,
  ``cooling_loop`` on dcim.rack: ``netbox/custom_fields.csv``). Each device's rack, position
  and face are in ``netbox/devices.csv`` (``export.netbox``).

Rows are in a fixed order (rack id, then device), so the same spec gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from clusterloom.atomic import StrPath
from clusterloom.export._csv import write_rows
from clusterloom.export.naming import server_name, topology_names
from clusterloom.fabric.topology import ROLE_NAMES, Role
from clusterloom.pipeline import Design
from clusterloom.placement import Placement
from clusterloom.units import to_kilowatts

RACK_COLUMNS = (
    "rack",
    "holds",
    "role",
    "rack_type",
    "fabric",
    "plane",
    "building",
    "hall",
    "row",
    "position",
    "x_m",
    "y_m",
    "building_x_m",
    "building_y_m",
    "facing",
    "aisle",
    "feed",
    "cooling_loop",
    "power_kw",
    "weight_kg",
)
ELEVATION_COLUMNS = ("rack", "u", "height_u", "device", "role", "fabric")
NETBOX_SITE_COLUMNS = ("name", "slug", "status", "description")
NETBOX_LOCATION_COLUMNS = ("name", "slug", "site", "parent", "status", "description")
NETBOX_RACK_COLUMNS = (
    "site",
    "location",
    "name",
    "status",
    "role",
    "facility_id",
    "width",
    "u_height",
    "description",
    "cf_x_m",
    "cf_y_m",
    "cf_row",
    "cf_position",
    "cf_feed",
    "cf_cooling_loop",
)
STATUS = "planned"


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def hall_location(hall: str) -> str:
    """NetBox location name of a hall (``b1/h1`` is ``b1-h1``: unique across buildings)."""
    return hall.replace("/", "-")


def _m(value: float) -> str:
    return f"{value:.2f}"


def rack_rows(p: Placement) -> Iterator[tuple[str, ...]]:
    f, d = p.floor, p.demand
    origin = f.hall_origin
    for r in range(p.n_racks):
        pos = int(p.rack_position[r])
        h, row = int(f.pos_hall[pos]), int(f.pos_row[pos])
        building, hall, row_name, position = f.pos_names[pos].split("/")
        plane = int(d.rack_plane[r])
        yield (
            p.rack_names[r],
            d.rack_label[r],
            d.rack_role[r],
            d.rack_model[r],
            d.rack_fabric[r],
            "" if plane < 0 else str(plane),
            building,
            hall,
            row_name,
            position,
            _m(f.pos_x[pos]),
            _m(f.pos_y[pos]),
            _m(f.pos_x[pos] + origin[h, 0]),
            _m(f.pos_y[pos] + origin[h, 1]),
            f.row_facing[row],
            f.row_aisle[row],
            f.feed_names[f.row_feed[row]].rsplit("/", 1)[1],
            f.loop_names[f.row_loop[row]].rsplit("/", 1)[1],
            f"{to_kilowatts(d.rack_power_w[r]):.2f}",
            f"{d.rack_weight_kg[r]:.0f}",
        )


def elevation_rows(design: Design) -> Iterator[tuple[str, ...]]:
    p = design.placement
    assert p is not None
    d = p.demand
    names = p.rack_names
    for n in range(d.server_rack.shape[0]):
        yield (
            names[d.server_rack[n]],
            str(int(d.server_u[n])),
            str(d.server_height),
            server_name(n),
            "server",
            "",
        )
    catalog = design.spec.resolved_catalog()
    for fd in design.fabrics:
        dev = p.device(fd.name)
        t = fd.topology
        devices = topology_names(t, catalog).devices
        hosts = fd.plan.hosts
        for v in range(hosts, t.n_nodes):
            yield (
                names[dev.node_rack[v]],
                str(int(dev.node_u[v])),
                str(int(dev.node_height[v])),
                str(devices[v]),
                ROLE_NAMES[Role(int(t.node_role[v]))],
                fd.name,
            )


def _locations(design: Design) -> Iterator[tuple[str, ...]]:
    p = design.placement
    assert p is not None
    site = design.spec.name
    for b in p.floor.building_names:
        yield (b, _slug(b), site, "", STATUS, "building")
    for h in p.floor.hall_names:
        building = h.split("/")[0]
        yield (hall_location(h), _slug(h), site, building, STATUS, f"data hall of {building}")


def _netbox_racks(design: Design) -> Iterator[tuple[str, ...]]:
    p = design.placement
    assert p is not None
    catalog = design.spec.resolved_catalog()
    f, d = p.floor, p.demand
    for r, row in enumerate(rack_rows(p)):
        hall = hall_location(f.hall_names[int(f.pos_hall[int(p.rack_position[r])])])
        yield (
            design.spec.name,
            hall,
            p.rack_names[r],
            STATUS,
            f"{d.rack_role[r]}-rack",
            d.rack_label[r],
            "19",
            str(catalog.racks[d.rack_model[r]].rack_units),
            f"{d.rack_model[r]}: {d.rack_label[r]}",
            row[10],
            row[11],
            row[8],
            row[9],
            row[16],
            row[17],
        )


def write_placement(design: Design, out_dir: StrPath) -> list[Path]:
    """Write the placement files of ``design`` (which has a placement) under ``out_dir``."""
    p = design.placement
    if p is None:
        return []
    out = Path(out_dir)
    site = design.spec.site
    assert site is not None
    sites = iter([(design.spec.name, _slug(design.spec.name), STATUS, f"campus {site.campus}")])
    return [
        write_rows(out / "placement" / "racks.csv", RACK_COLUMNS, rack_rows(p)),
        write_rows(out / "placement" / "elevations.csv", ELEVATION_COLUMNS, elevation_rows(design)),
        write_rows(out / "netbox" / "sites.csv", NETBOX_SITE_COLUMNS, sites),
        write_rows(out / "netbox" / "locations.csv", NETBOX_LOCATION_COLUMNS, _locations(design)),
        write_rows(out / "netbox" / "racks.csv", NETBOX_RACK_COLUMNS, _netbox_racks(design)),
    ]
