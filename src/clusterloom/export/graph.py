"""A topology as a networkx graph, and as node-link JSON and GraphML files, for small fabrics.

Graph views are for analysis and for other tools (Gephi, yEd, a notebook); they cost a Python
object per node and link, so they are built only up to ``GRAPH_LINK_LIMIT`` links. Writers return
``False`` (and write nothing) above it; ``to_networkx`` raises ``ValueError``.

Graph nodes are the topology's node ids (integers). Node attributes: ``name`` (unique: a switch
name, ``node00012/gpu3`` for an accelerator, the server name for a frontend host), ``device``
(the NetBox device: hosts map to their server), ``role``, ``tier`` (0 host, 1 leaf, 2 spine,
3 core), ``plane`` and ``pod`` (-1 where they do not apply: GraphML has no null). Edges are keyed
by link id, in link order, with ``tier``, ``plane``, ``capacity_gbps``, ``latency_ns``,
``src_port`` and ``dst_port`` (interface names; ``src`` is the lower end).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from clusterloom.atomic import StrPath, atomic_open
from clusterloom.export.naming import TopologyNames, topology_names
from clusterloom.fabric.topology import ROLE_NAMES, Role, Topology
from clusterloom.spec import Catalog
from clusterloom.units import BPS_PER_GBPS, PS_PER_NS

GRAPH_LINK_LIMIT = 250_000


def graphable(topology: Topology) -> bool:
    """True when ``topology`` is small enough for a graph view."""
    return topology.n_links <= GRAPH_LINK_LIMIT


def to_networkx(topology: Topology, *, catalog: Catalog, names: TopologyNames | None = None) -> Any:
    """A ``networkx.MultiGraph`` of ``topology``. ``catalog`` (the spec's resolved catalog)
    gives the breakout factors that switch port names depend on; ``names`` reuses tables
    already built for it."""
    if not graphable(topology):
        raise ValueError(
            f"{topology.plan.fabric}: {topology.n_links} links exceed the graph view limit of "
            f"{GRAPH_LINK_LIMIT}"
        )
    t = topology
    names = names or topology_names(t, catalog)
    plan = t.plan
    graph = nx.MultiGraph(
        fabric=plan.fabric,
        family=plan.family,
        planes=plan.planes,
        tiers=plan.tiers,
        speed_gbps=plan.speed_gbps,
    )

    ids = np.arange(t.n_nodes)
    devices = names.device(ids).tolist()
    labels = list(devices)
    if plan.host_kind == "accelerator":
        hpn = plan.hosts_per_node
        labels[: plan.hosts] = [f"{devices[h]}/gpu{h % hpn}" for h in range(plan.hosts)]
    roles = [ROLE_NAMES[Role(r)] for r in t.node_role.tolist()]
    graph.add_nodes_from(
        (
            v,
            {
                "name": label,
                "device": device,
                "role": role,
                "tier": tier,
                "plane": plane,
                "pod": pod,
            },
        )
        for v, label, device, role, tier, plane, pod in zip(
            ids.tolist(),
            labels,
            devices,
            roles,
            t.node_role.tolist(),
            t.node_plane.tolist(),
            t.node_pod.tolist(),
            strict=True,
        )
    )

    src_port = names.interface(t.link_src, t.link_src_port).tolist()
    dst_port = names.interface(t.link_dst, t.link_dst_port).tolist()
    capacity = (t.link_capacity_bps // BPS_PER_GBPS).tolist()
    latency = (t.link_latency_ps / PS_PER_NS).tolist()
    graph.add_edges_from(
        (
            u,
            v,
            key,
            {
                "tier": tier,
                "plane": plane,
                "capacity_gbps": cap,
                "latency_ns": lat,
                "src_port": sp,
                "dst_port": dp,
            },
        )
        for key, (u, v, tier, plane, cap, lat, sp, dp) in enumerate(
            zip(
                t.link_src.tolist(),
                t.link_dst.tolist(),
                t.link_tier.tolist(),
                t.link_plane.tolist(),
                capacity,
                latency,
                src_port,
                dst_port,
                strict=True,
            )
        )
    )
    return graph


def node_link_document(graph: Any) -> dict[str, Any]:
    """networkx node-link data with links under ``links``, for ``nx.node_link_graph(...,
    edges="links")``."""
    return nx.node_link_data(graph, edges="links")  # type: ignore[no-any-return]


def write_node_link(
    topology: Topology, path: StrPath, *, catalog: Catalog, graph: Any | None = None
) -> bool:
    """Write the node-link JSON of ``topology`` atomically; False (nothing written) when the
    topology is over ``GRAPH_LINK_LIMIT``."""
    if not graphable(topology):
        return False
    graph = graph if graph is not None else to_networkx(topology, catalog=catalog)
    with atomic_open(path, "w") as fh:
        json.dump(node_link_document(graph), fh, separators=(",", ":"), allow_nan=False)
        fh.write("\n")
    return True


def write_graphml(
    topology: Topology, path: StrPath, *, catalog: Catalog, graph: Any | None = None
) -> bool:
    """Write the GraphML of ``topology`` atomically; False (nothing written) when the topology
    is over ``GRAPH_LINK_LIMIT``."""
    if not graphable(topology):
        return False
    graph = graph if graph is not None else to_networkx(topology, catalog=catalog)
    with atomic_open(Path(path), "wb") as fh:
        nx.write_graphml_xml(graph, fh, encoding="utf-8", prettyprint=True)
    return True
