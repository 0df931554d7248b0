"""NetBox bulk-import CSVs: ``devices.csv`` and ``interfaces.csv``.

Headers are NetBox's import field names (DCIM > Devices / Interfaces > Import). ``devices.csv``
carries every server and switch with its rack placement (location, rack, lowest rack unit,
face) when the design has a placement. What it refers to is exported too
(``export.netbox_setup``): the site, the device roles (``ai-server``, ``leaf-switch``,
``spine-switch``, ``core-switch``), the manufacturers and the device types (:func:`device_types`:
a server type ``{accelerator_model} {n}-accelerator server`` and one switch type per catalog
model and port layout, each with an interface template per port, so a device comes with its
interfaces and no component file names a device without its site).

``interfaces.csv`` lists the connected ports (one row per link end, grouped by device and
ordered by port; speeds in Kbps; the description names the other end). It is a listing, not
an import file: the device types create the interfaces. At 131,072 accelerators it holds
millions of rows: they are built from the topology arrays with numpy gathers and written in
chunks, never as one Python object per row kept in memory. Both files are quoted by
``export._csv`` (names never need it, see ``naming``; catalog text in ``devices.csv`` may).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from clusterloom.atomic import StrPath
from clusterloom.export._csv import csv_text, write_chunks, write_rows
from clusterloom.export.naming import server_name, switch_port_name, topology_names
from clusterloom.fabric import FabricDesign
from clusterloom.fabric.topology import ROLE_NAMES, Role
from clusterloom.pipeline import Design
from clusterloom.spec import Catalog
from clusterloom.units import BPS_PER_GBPS, to_kbps

DEVICE_COLUMNS = (
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
INTERFACE_COLUMNS = ("device", "name", "type", "speed", "enabled", "description")
#: the columns of NetBox's cable import (``cables.csv`` and the plant's ``cables_plant.csv``)
NETBOX_CABLE_COLUMNS = (
    "side_a_site",
    "side_a_device",
    "side_a_type",
    "side_a_name",
    "side_b_site",
    "side_b_device",
    "side_b_type",
    "side_b_name",
    "type",
    "status",
    "profile",
    "bundle",
    "label",
    "length",
    "length_unit",
)

SERVER_ROLE = "ai-server"
SERVER_MANUFACTURER = "Generic"
STATUS = "planned"

#: Interface rows built and written per chunk (bounded memory: ~100 bytes per row).
CHUNK_ROWS = 1 << 19

ETHERNET_TYPES: dict[int, str] = {
    1600: "1.6tbase-x-osfp1600",
    800: "800gbase-x-osfp",
    400: "400gbase-x-osfp",
    200: "200gbase-x-qsfp56",
    100: "100gbase-x-qsfp28",
    50: "50gbase-x-sfp56",
    25: "25gbase-x-sfp28",
    10: "10gbase-x-sfpp",
}
INFINIBAND_TYPES: dict[int, str] = {
    800: "infiniband-xdr",
    400: "infiniband-ndr",
    200: "infiniband-hdr",
    100: "infiniband-edr",
}


def interface_type(speed_gbps: int, technology: str) -> str:
    """NetBox interface type slug of a port at ``speed_gbps`` (``other`` when NetBox has none)."""
    table = INFINIBAND_TYPES if technology == "infiniband" else ETHERNET_TYPES
    return table.get(speed_gbps, "other")


def manufacturer(vendor: str) -> str:
    """A NetBox manufacturer name from a catalog vendor: ``generic (Broadcom Tomahawk 5)`` is
    ``Generic``; ``NVIDIA`` stays ``NVIDIA``."""
    name = vendor.split("(", 1)[0].strip() or vendor.strip()
    return name[:1].upper() + name[1:] if name.islower() else name


def server_device_type(design: Design) -> str:
    c = design.spec.compute
    return f"{c.accelerator_model} {c.accelerators_per_node}-accelerator server"


def _server_description(design: Design) -> str:
    c = design.spec.compute
    parts = [f"{c.accelerators_per_node} x {c.accelerator_model}"]
    for fd in design.fabrics:
        p = fd.plan
        per_node = p.ports_per_host * p.planes * p.hosts_per_node
        parts.append(f"{fd.name} {per_node} x {p.speed_gbps}G")
    return "; ".join(parts)


def _switch_description(fd: FabricDesign, plane: int, role: str, index: int, pod: int) -> str:
    text = f"{fd.name} fabric, plane {plane}, {role} {index}"
    if fd.plan.tiers == 3:
        text += f", core group {pod}" if role == "core" else f", pod {pod}"
    return text


@dataclass(frozen=True)
class DeviceType:
    """A NetBox device type: manufacturer, model, height and its interfaces (name, type)."""

    manufacturer: str
    model: str
    u_height: int
    interfaces: tuple[tuple[str, str], ...]
    description: str

    def document(self) -> dict[str, object]:
        """The device type as NetBox's device-type import reads it (YAML or JSON)."""
        return {
            "manufacturer": self.manufacturer,
            "model": self.model,
            "slug": slug(self.model),
            "u_height": self.u_height,
            "is_full_depth": True,
            "description": self.description,
            "interfaces": [{"name": n, "type": t} for n, t in self.interfaces],
        }


def slug(text: str) -> str:
    """A NetBox slug (lower case letters, digits, ``-`` and ``_``) of ``text``."""
    out = "".join(c if c.isalnum() or c == "_" else "-" for c in text.lower())
    return "-".join(part for part in out.split("-") if part)


def switch_type_name(model: str, radix: int, speed_gbps: int, factor: int) -> str:
    """NetBox device type of a switch: the catalog model, or with its cages broken out
    (``factor`` logical ports per cage) ``{model} {radix}x{speed}G``."""
    return model if factor == 1 else f"{model} {radix}x{speed_gbps}G"


def _server_height(design: Design) -> int:
    p = design.placement
    return 1 if p is None else int(p.demand.server_height)


def server_type(design: Design) -> DeviceType:
    """The server's device type: every backend and frontend host port as an interface."""
    catalog = design.spec.resolved_catalog()
    ports: list[tuple[str, str]] = []
    for fd in design.fabrics:
        names = topology_names(fd.topology, catalog)
        plan = fd.plan
        per_node = plan.ports_per_host * plan.planes * plan.hosts_per_node
        leaf = catalog.switches[plan.switch_tiers[0].model]
        kind = interface_type(plan.speed_gbps, leaf.technology)
        ports += [(str(n), kind) for n in names.ports[:per_node].tolist()]
    return DeviceType(
        SERVER_MANUFACTURER,
        server_device_type(design),
        _server_height(design),
        tuple(ports),
        _server_description(design),
    )


def switch_types(design: Design) -> dict[tuple[str, str], DeviceType]:
    """The device type of each fabric's switch tiers, by (fabric, role)."""
    catalog = design.spec.resolved_catalog()
    out: dict[tuple[str, str], DeviceType] = {}
    for fd in design.fabrics:
        plan = fd.plan
        for tier in plan.switch_tiers:
            model = catalog.switches[tier.model]
            factor = model.ports_per_cage(plan.speed_gbps)
            kind = interface_type(plan.speed_gbps, model.technology)
            ports = tuple((switch_port_name(i, factor), kind) for i in range(tier.radix))
            out[(fd.name, tier.role)] = DeviceType(
                manufacturer(model.vendor),
                switch_type_name(tier.model, tier.radix, plan.speed_gbps, factor),
                model.rack_units,
                ports,
                f"{model.vendor}: {tier.radix} x {plan.speed_gbps}G",
            )
    return out


def device_types(design: Design) -> list[DeviceType]:
    """Every device type of the design's servers and switches, once each (by model)."""
    seen: dict[str, DeviceType] = {}
    for dt in (server_type(design), *switch_types(design).values()):
        known = seen.setdefault(dt.model, dt)
        if known != dt:
            raise ValueError(f"two layouts of device type {dt.model!r}")
    return list(seen.values())


def _placed(design: Design) -> dict[str, tuple[object, ...]]:
    """Location, rack, lowest rack unit and face of every placed device, by name."""
    from clusterloom.export.placement_files import elevation_rows, hall_location

    p = design.placement
    if p is None:
        return {}
    f = p.floor
    halls = [
        hall_location(f.hall_names[int(f.pos_hall[int(p.rack_position[r])])])
        for r in range(p.n_racks)
    ]
    index = {name: r for r, name in enumerate(p.rack_names)}
    return {
        device: (halls[index[rack]], rack, u, "front")
        for rack, u, _, device, _, _ in elevation_rows(design)
    }


def device_rows(design: Design) -> Iterator[tuple[object, ...]]:
    """Rows of ``devices.csv`` (no header): every server once, then each fabric's switches in
    topology order (plane, tier, index), each with its rack placement when there is one."""
    catalog = design.spec.resolved_catalog()
    site = design.spec.name
    placed = _placed(design)
    unplaced = ("", "", "", "")
    server = server_type(design)
    description = _server_description(design)
    for n in range(design.spec.compute.nodes):
        name = server_name(n)
        yield (
            name,
            SERVER_ROLE,
            SERVER_MANUFACTURER,
            server.model,
            site,
            *placed.get(name, unplaced),
            STATUS,
            description,
        )
    types = switch_types(design)
    for fd in design.fabrics:
        t = fd.topology
        names = topology_names(t, catalog)
        hosts = fd.plan.hosts
        for v, role_id, plane, index, pod in zip(
            range(hosts, t.n_nodes),
            t.node_role[hosts:].tolist(),
            t.node_plane[hosts:].tolist(),
            t.node_index[hosts:].tolist(),
            t.node_pod[hosts:].tolist(),
            strict=True,
        ):
            role = ROLE_NAMES[Role(role_id)]
            dt = types[(fd.name, role)]
            name = str(names.devices[v])
            yield (
                name,
                f"{role}-switch",
                dt.manufacturer,
                dt.model,
                site,
                *placed.get(name, unplaced),
                STATUS,
                _switch_description(fd, plane, role, index, pod),
            )


def write_devices(design: Design, path: StrPath) -> Path:
    """Write ``devices.csv`` atomically; return its path."""
    return write_rows(path, DEVICE_COLUMNS, device_rows(design))


def _node_types(fd: FabricDesign, catalog: Catalog) -> NDArray[np.object_]:
    """Interface type slug of every topology node's ports (a host takes its leaves' type)."""
    t, plan = fd.topology, fd.plan
    by_role = {
        int(Role[tier.role.upper()]): interface_type(
            plan.speed_gbps, catalog.switches[tier.model].technology
        )
        for tier in plan.switch_tiers
    }
    by_role[int(Role.HOST)] = by_role[int(Role.LEAF)]
    table = np.empty(max(by_role) + 1, dtype=object)
    for role, slug in by_role.items():
        table[role] = slug
    return table[t.node_role]


def interface_chunks(
    fd: FabricDesign, catalog: Catalog, chunk_rows: int = CHUNK_ROWS
) -> Iterator[str]:
    """The rows of ``interfaces.csv`` for one fabric, as text chunks of up to ``chunk_rows``
    rows: one row per link end, ordered by topology node then port."""
    t = fd.topology
    if t.n_links == 0:
        return
    names = topology_names(t, catalog)
    types = _node_types(fd, catalog)
    speed = to_kbps(fd.plan.speed_gbps * BPS_PER_GBPS)

    ends = np.concatenate([t.link_src, t.link_dst]).astype(np.int64)
    ports = np.concatenate([t.link_src_port, t.link_dst_port]).astype(np.int64)
    stride = int(ports.max()) + 1
    order = np.argsort(ends * stride + ports, kind="stable")
    peers = np.concatenate([t.link_dst, t.link_src])
    peer_ports = np.concatenate([t.link_dst_port, t.link_src_port])

    for start in range(0, order.shape[0], chunk_rows):
        sel = order[start : start + chunk_rows]
        node, peer = ends[sel], peers[sel]
        yield csv_text(
            [
                names.device(node),
                names.interface(node, ports[sel]),
                types[node],
                str(speed),
                "true",
                ("to ", names.device(peer), " ", names.interface(peer, peer_ports[sel])),
            ]
        )


def write_interfaces(design: Design, path: StrPath, *, chunk_rows: int = CHUNK_ROWS) -> Path:
    """Write ``interfaces.csv`` atomically, chunk by chunk; return its path."""
    catalog = design.spec.resolved_catalog()
    chunks = (c for fd in design.fabrics for c in interface_chunks(fd, catalog, chunk_rows))
    return write_chunks(Path(path), INTERFACE_COLUMNS, chunks)


def write_netbox(design: Design, directory: StrPath) -> list[Path]:
    """``devices.csv`` and ``interfaces.csv`` in ``directory``."""
    out = Path(directory)
    return [
        write_devices(design, out / "devices.csv"),
        write_interfaces(design, out / "interfaces.csv"),
    ]
