"""NetBox bulk-import CSVs: ``devices.csv`` and ``interfaces.csv``.

Headers are NetBox's import field names (DCIM > Devices / Interfaces > Import). Referenced
objects must exist before the import: the site (named after the spec), the device roles
(``ai-server``, ``leaf-switch``, ``spine-switch``, ``core-switch``), the manufacturers and the
device types (switches: the catalog model name; servers: ``{accelerator_model}
{n}-accelerator server``).

``interfaces.csv`` has one row per link end, so only connected ports appear, grouped by device
and ordered by port; speeds are in Kbps. At 131,072 accelerators it holds millions of rows: they
are built from the topology arrays with numpy gathers and written in chunks, never as one Python
object per row kept in memory. Both files are quoted by ``export._csv`` (names never need it,
see ``naming``; catalog text in ``devices.csv`` may).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from clusterloom.export._csv import csv_text, write_chunks, write_rows
from clusterloom.export.atomic import StrPath
from clusterloom.export.naming import server_name, topology_names
from clusterloom.fabric import FabricDesign
from clusterloom.fabric.topology import ROLE_NAMES, Role
from clusterloom.pipeline import Design
from clusterloom.spec import Catalog, SwitchModel
from clusterloom.units import BPS_PER_GBPS, to_kbps

DEVICE_COLUMNS = ("name", "role", "manufacturer", "device_type", "site", "status", "description")
INTERFACE_COLUMNS = ("device", "name", "type", "speed", "enabled", "description")

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


def device_rows(design: Design) -> Iterator[tuple[str, ...]]:
    """Rows of ``devices.csv`` (no header): every server once, then each fabric's switches in
    topology order (plane, tier, index)."""
    catalog = design.spec.resolved_catalog()
    site = design.spec.name
    server_type = server_device_type(design)
    description = _server_description(design)
    for n in range(design.spec.compute.nodes):
        yield (
            server_name(n),
            SERVER_ROLE,
            SERVER_MANUFACTURER,
            server_type,
            site,
            STATUS,
            description,
        )
    for fd in design.fabrics:
        t = fd.topology
        names = topology_names(t, catalog)
        models: dict[str, SwitchModel] = {
            tier.role: catalog.switches[tier.model] for tier in fd.plan.switch_tiers
        }
        model_names: dict[str, str] = {tier.role: tier.model for tier in fd.plan.switch_tiers}
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
            yield (
                str(names.devices[v]),
                f"{role}-switch",
                manufacturer(models[role].vendor),
                model_names[role],
                site,
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
