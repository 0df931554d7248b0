"""What NetBox needs before a design's devices and cables import, and the import order.

- ``netbox/custom_fields.csv``: the rack custom fields ``racks.csv`` fills (``x_m``, ``y_m``,
  ``row``, ``position``, ``feed``, ``cooling_loop``: NetBox has no floor coordinates);
- ``netbox/rack_roles.csv``, ``manufacturers.csv``, ``device_roles.csv``;
- ``netbox/device_types.yaml``: every device type (servers and switches with an interface
  template per port, patch panels with their rear and front ports and the mapping of every
  front position to its rear position), as NetBox's device-type import reads YAML;
- ``netbox/IMPORT_ORDER.txt``: :data:`IMPORT_ORDER`, file by file with NetBox's import page.

Every file imports with NetBox 4.6's own bulk-import views, in :data:`IMPORT_ORDER`, into a
NetBox that has none of these objects yet. Manufacturers, roles, custom fields and device types
are shared by every design in a NetBox: a second design imports only what the first lacks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import yaml

from clusterloom.atomic import StrPath, atomic_write
from clusterloom.export._csv import write_rows
from clusterloom.export.netbox import (
    SERVER_ROLE,
    device_types,
    slug,
)
from clusterloom.export.netbox_plant import (
    PANEL_ROLE,
    PlantNames,
    panel_codes,
    panel_types,
)
from clusterloom.pipeline import Design

#: ``(file, NetBox import page, format)`` in the order the files import: every object a row
#: refers to exists by the time the row is read.
IMPORT_ORDER: tuple[tuple[str, str, str], ...] = (
    ("custom_fields.csv", "/extras/custom-fields/import/", "csv"),
    ("sites.csv", "/dcim/sites/import/", "csv"),
    ("locations.csv", "/dcim/locations/import/", "csv"),
    ("rack_roles.csv", "/dcim/rack-roles/import/", "csv"),
    ("racks.csv", "/dcim/racks/import/", "csv"),
    ("patch_racks.csv", "/dcim/racks/import/", "csv"),
    ("manufacturers.csv", "/dcim/manufacturers/import/", "csv"),
    ("device_roles.csv", "/dcim/device-roles/import/", "csv"),
    ("device_types.yaml", "/dcim/device-types/import/", "yaml"),
    ("devices.csv", "/dcim/devices/import/", "csv"),
    ("panels.csv", "/dcim/devices/import/", "csv"),
    ("cable_bundles.csv", "/dcim/cable-bundles/import/", "csv"),
    ("cables_plant.csv", "/dcim/cables/import/", "csv"),
    ("cables.csv", "/dcim/cables/import/", "csv"),
)

#: NetBox 4.6's custom-field import requires ``search_weight``, ``filter_logic`` and ``weight``.
#: Files of objects every design in a NetBox shares (field definitions, roles, manufacturers,
#: device types): a second design imports only the rows NetBox does not have yet.
SHARED = frozenset(
    {
        "custom_fields.csv",
        "rack_roles.csv",
        "manufacturers.csv",
        "device_roles.csv",
        "device_types.yaml",
    }
)
CUSTOM_FIELD_COLUMNS = (
    "name",
    "object_types",
    "type",
    "label",
    "description",
    "search_weight",
    "filter_logic",
    "weight",
)
#: The rack custom fields of ``racks.csv`` (``cf_<name>``): name, type, label, description.
RACK_FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("x_m", "decimal", "x (m)", "rack centre across its hall, metres"),
    ("y_m", "decimal", "y (m)", "rack centre along its hall, metres"),
    ("row", "text", "Row", "row of the hall"),
    ("position", "text", "Position", "position in its row"),
    ("feed", "text", "Feed", "UPS/PDU line of its row"),
    ("cooling_loop", "text", "Cooling loop", "cooling loop of its row"),
)
ROLE_COLUMNS = ("name", "slug", "color", "description")
MANUFACTURER_COLUMNS = ("name", "slug")
#: Colours of roles (NetBox's palette, hex without ``#``).
ROLE_COLORS: dict[str, str] = {
    SERVER_ROLE: "2196f3",
    "tor-switch": "ff9800",
    "leaf-switch": "ff9800",
    "spine-switch": "f44336",
    "core-switch": "9c27b0",
    PANEL_ROLE: "9e9e9e",
}
PATCH_RACK_ROLE = "patch-rack"


def _rack_roles(design: Design) -> Iterator[tuple[str, ...]]:
    roles: list[str] = []
    if design.placement is not None:
        roles += sorted({f"{r}-rack" for r in design.placement.demand.rack_role})
    if design.cabling is not None:
        roles.append(PATCH_RACK_ROLE)
    for role in roles:
        yield (role, slug(role), "9e9e9e", "")


def _device_roles(design: Design) -> Iterator[tuple[str, ...]]:
    roles = [SERVER_ROLE]
    for fd in design.fabrics:
        roles += [f"{tier.role}-switch" for tier in fd.plan.switch_tiers]
    if design.cabling is not None and design.placement is not None:
        roles.append(PANEL_ROLE)
    for role in dict.fromkeys(roles):
        yield (role, slug(role), ROLE_COLORS.get(role, "9e9e9e"), "")


def type_documents(design: Design) -> list[dict[str, object]]:
    """Every device type of the design as NetBox's device-type import document."""
    docs = [dt.document() for dt in device_types(design)]
    if design.cabling is not None and design.placement is not None:
        docs += panel_types(panel_codes(PlantNames(design.cabling)))
    return docs


#: Files written only with a placement, and only with a cabling.
_PLACED = {"custom_fields.csv", "sites.csv", "locations.csv", "rack_roles.csv", "racks.csv"}
_CABLED = {"patch_racks.csv", "panels.csv", "cable_bundles.csv", "cables_plant.csv", "cables.csv"}


def import_order(design: Design) -> list[tuple[str, str, str]]:
    """:data:`IMPORT_ORDER` less the files ``design`` has none of."""
    skip: set[str] = set()
    if design.placement is None:
        skip |= _PLACED
    if design.cabling is None or design.placement is None:
        skip |= _CABLED
    return [step for step in IMPORT_ORDER if step[0] not in skip]


def import_order_text(design: Design) -> str:
    lines = [
        "Import these files into NetBox 4.6 in this order, each on its import page",
        "(format CSV, delimiter comma; device_types.yaml as YAML):",
        "",
    ]
    for i, (name, page, _) in enumerate(import_order(design), start=1):
        mark = "*" if name in SHARED else " "
        lines.append(f"{i:2d}. {name:<20} {page}{mark}".rstrip())
    lines += [
        "",
        "Marked *: shared by every design in a NetBox (custom fields, roles, manufacturers,",
        "device types). Into a NetBox that already holds another design, import only the",
        "rows of these files it lacks; every other file imports whole.",
        "",
        "interfaces.csv is a listing of the connected ports, not an import file:",
        "the device types create every interface with its device.",
        "",
    ]
    return "\n".join(lines)


def write_netbox_setup(design: Design, out_dir: StrPath) -> list[Path]:
    """The prerequisite files and ``IMPORT_ORDER.txt`` in ``out_dir/netbox``."""
    out = Path(out_dir) / "netbox"
    docs = type_documents(design)
    makers = dict.fromkeys(str(d["manufacturer"]) for d in docs)
    paths = []
    if design.placement is not None:
        fields = (
            (name, "dcim.rack", kind, label, text, 1000, "loose", 100)
            for name, kind, label, text in RACK_FIELDS
        )
        paths.append(write_rows(out / "custom_fields.csv", CUSTOM_FIELD_COLUMNS, fields))
        paths.append(write_rows(out / "rack_roles.csv", ROLE_COLUMNS, _rack_roles(design)))
    paths += [
        write_rows(out / "manufacturers.csv", MANUFACTURER_COLUMNS, ((m, slug(m)) for m in makers)),
        write_rows(out / "device_roles.csv", ROLE_COLUMNS, _device_roles(design)),
        atomic_write(
            out / "device_types.yaml",
            yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True),
        ),
        atomic_write(out / "IMPORT_ORDER.txt", import_order_text(design)),
    ]
    return paths
