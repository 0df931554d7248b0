"""Stable names of devices and interfaces, the same in every export (NetBox, graphs, reports).

Devices:

- a server (compute node) is ``node{n:05d}``, ``n`` its node index. On a backend a topology host
  is an accelerator: host ``h`` is accelerator ``h % hosts_per_node`` of node
  ``h // hosts_per_node``; on a frontend a host is a node. A server carries the interfaces of
  both fabrics, so it is one device in either;
- a switch is ``{fab}-p{plane}-{role}{index:04d}``, ``fab`` being ``be`` (backend) or ``fe``
  (frontend), ``index`` its position within its tier and plane: ``be-p3-leaf0012``.

Interfaces:

- on a server, backend port ``k`` of accelerator ``g`` is ``gpu{g}p{k}`` (``k`` the host port
  index of the topology, ``plane * ports_per_host + j``); frontend port ``k`` is ``fe{k}``;
- on a switch, logical port ``i`` at breakout factor ``f`` (logical ports per cage) is
  ``swp{i // f + 1}`` when ``f == 1``, else ``swp{i // f + 1}s{i % f + 1}`` (cage, lane: Cumulus
  style), so breakout 2 numbers ``swp1s1, swp1s2, swp2s1, ...``.

Topologies reach millions of links, so :class:`TopologyNames` holds lookup tables (one entry per
node, one per distinct port name) and names many ends at once with a numpy gather.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric.topology import ROLE_NAMES, Role, Topology
from clusterloom.spec import Catalog

FABRIC_PREFIX: dict[str, str] = {"backend": "be", "frontend": "fe"}

_SWITCH_RE = re.compile(
    r"^(?P<fab>[a-z]+)-p(?P<plane>\d+)-(?P<role>leaf|spine|core)(?P<index>\d{4,})$"
)
_SWITCH_PORT_RE = re.compile(r"^swp(?P<cage>[1-9]\d*)(?:s(?P<lane>[1-9]\d*))?$")
_SERVER_RE = re.compile(r"^node(?P<node>\d{5,})$")
_GPU_PORT_RE = re.compile(r"^gpu(?P<gpu>\d+)p(?P<port>\d+)$")
_FRONTEND_PORT_RE = re.compile(r"^fe(?P<port>\d+)$")

Names = NDArray[np.object_]


def fabric_prefix(fabric: str) -> str:
    """``be`` for the backend, ``fe`` for the frontend (any other fabric keeps its name)."""
    return FABRIC_PREFIX.get(fabric, fabric)


def server_name(node: int) -> str:
    return f"node{node:05d}"


def switch_name(fabric: str, plane: int, role: str, index: int) -> str:
    return f"{fabric_prefix(fabric)}-p{plane}-{role}{index:04d}"


def switch_port_name(port: int, factor: int) -> str:
    """Name of logical port ``port`` (0-based) of a switch running ``factor`` ports per cage."""
    if port < 0 or factor < 1:
        raise ValueError(f"no switch port {port} at breakout factor {factor}")
    cage, lane = divmod(port, factor)
    return f"swp{cage + 1}" if factor == 1 else f"swp{cage + 1}s{lane + 1}"


def host_port_name(fabric: str, gpu: int, port: int) -> str:
    """Name of host port ``port`` of accelerator ``gpu`` (backend) or of the node (frontend)."""
    return f"gpu{gpu}p{port}" if fabric == "backend" else f"fe{port}"


def parse_switch_name(name: str) -> tuple[str, int, str, int]:
    """``(fabric prefix, plane, role, index)`` of a switch name; ``ValueError`` if it is none."""
    m = _SWITCH_RE.match(name)
    if m is None:
        raise ValueError(f"not a switch name: {name!r}")
    return m["fab"], int(m["plane"]), m["role"], int(m["index"])


def parse_switch_port(name: str, factor: int) -> int:
    """Logical port index of ``name`` on a switch at breakout ``factor`` (inverse of
    :func:`switch_port_name`); ``ValueError`` when the name does not fit that factor."""
    m = _SWITCH_PORT_RE.match(name)
    if m is None:
        raise ValueError(f"not a switch port name: {name!r}")
    cage, lane = int(m["cage"]), m["lane"]
    if factor == 1 and lane is None:
        return cage - 1
    if factor > 1 and lane is not None and int(lane) <= factor:
        return (cage - 1) * factor + int(lane) - 1
    raise ValueError(f"{name!r} is not a port name at breakout factor {factor}")


def parse_server_name(name: str) -> int:
    m = _SERVER_RE.match(name)
    if m is None:
        raise ValueError(f"not a server name: {name!r}")
    return int(m["node"])


def parse_host_port(name: str) -> tuple[int | None, int]:
    """``(gpu, port)`` of a backend host port name, ``(None, port)`` of a frontend one."""
    m = _GPU_PORT_RE.match(name)
    if m is not None:
        return int(m["gpu"]), int(m["port"])
    m = _FRONTEND_PORT_RE.match(name)
    if m is not None:
        return None, int(m["port"])
    raise ValueError(f"not a host port name: {name!r}")


def _objects(strings: list[str]) -> Names:
    out = np.empty(len(strings), dtype=object)
    out[:] = strings
    return out


@dataclass(frozen=True, eq=False)
class TopologyNames:
    """Device and interface names of one topology as gather tables.

    ``devices[v]`` is the device name of topology node ``v`` (a backend host maps to its server);
    the interface at port ``p`` of node ``v`` is ``ports[port_offset[v] + p]``.
    """

    fabric: str
    devices: Names
    ports: Names
    port_offset: NDArray[np.int64]
    #: breakout factor of each switch tier, by role name
    breakout: dict[str, int]

    def device(self, nodes: NDArray[np.integer]) -> Names:
        return self.devices[nodes]  # type: ignore[no-any-return]

    def interface(self, nodes: NDArray[np.integer], ports: NDArray[np.integer]) -> Names:
        """Interface names of the ends ``(nodes[i], ports[i])``."""
        return self.ports[self.port_offset[nodes] + ports]  # type: ignore[no-any-return]


def server_names(nodes: int) -> Names:
    """``node00000 .. node{nodes-1}``."""
    return _objects([f"node{n:05d}" for n in range(nodes)])


def topology_names(topology: Topology, catalog: Catalog) -> TopologyNames:
    """Name tables of ``topology``; ``catalog`` gives each switch model's breakout factor."""
    plan = topology.plan
    fab = plan.fabric
    hosts, hpn = plan.hosts, plan.hosts_per_node
    servers = server_names(plan.nodes)

    devices = np.empty(topology.n_nodes, dtype=object)
    devices[:hosts] = servers[np.arange(hosts) // hpn]
    sw = slice(hosts, topology.n_nodes)
    roles = [ROLE_NAMES[Role(r)] for r in range(len(ROLE_NAMES))]
    devices[sw] = [
        switch_name(fab, plane, roles[role], index)
        for plane, role, index in zip(
            topology.node_plane[sw].tolist(),
            topology.node_role[sw].tolist(),
            topology.node_index[sw].tolist(),
            strict=True,
        )
    ]

    # host ports: one block per accelerator of a node, each holding every host port index
    per_host = plan.ports_per_host * plan.planes
    tables: list[str] = [host_port_name(fab, g, k) for g in range(hpn) for k in range(per_host)]
    offset = np.empty(topology.n_nodes, dtype=np.int64)
    offset[:hosts] = (np.arange(hosts, dtype=np.int64) % hpn) * per_host

    breakout: dict[str, int] = {}
    for tier in plan.switch_tiers:
        factor = catalog.switches[tier.model].ports_per_cage(plan.speed_gbps)
        breakout[tier.role] = factor
        start = len(tables)
        tables += [switch_port_name(i, factor) for i in range(tier.radix)]
        offset[topology.node_role == int(Role[tier.role.upper()])] = start
    return TopologyNames(fab, devices, _objects(tables), offset, breakout)
