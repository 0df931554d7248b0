"""The SRv6 plan's files, written atomically into a run's staging directory (the command line
opens the run, :mod:`clusterloom.export.outdir`): ``sids.csv``, ``summary.json``, and per node
``nodes/NAME.sh`` (iproute2) and, per switch, ``frr/NAME.conf``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from clusterloom.atomic import atomic_write
from clusterloom.fabric.topology import ROLE_NAMES, Role
from clusterloom.findings import Finding
from clusterloom.srv6.encoding import to_text
from clusterloom.srv6.frr import render_frr
from clusterloom.srv6.plan import AddressPlan
from clusterloom.srv6.render import Wiring, render_node
from clusterloom.srv6.summary import TableSummary, nic_sid_halves

SIDS_HEADER = ("node", "plane", "role", "index", "port", "sid", "length", "behavior")
#: node files are written for every node up to this many nodes; beyond, for the switches
#: only up to ``RENDER_SWITCHES`` (``srv6 render --node`` renders any one)
RENDER_NODES = 64
RENDER_SWITCHES = 512


def sids_csv(plan: AddressPlan, w: Wiring) -> str:
    """Every SID and loopback: switch End SIDs, NIC End.DT6 SIDs, switch loopbacks."""
    t = plan.topology
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(SIDS_HEADER)
    for n in range(t.plan.hosts, t.n_nodes):
        sid, bits = w.end_sid(n)
        role = ROLE_NAMES[Role(int(t.node_role[n]))]
        row = [w.name(n), int(t.node_plane[n]), role, int(t.node_index[n]), ""]
        out.writerow([*row, to_text(sid), bits, "End next-csid"])
        out.writerow([*row, to_text(plan.loopback(n)), 128, "loopback"])
    halves = nic_sid_halves(plan).astype(object)
    sids = (halves[:, 0] << 64) | halves[:, 1]
    ports = plan.host_ports
    for i, sid in enumerate(sids.tolist()):
        host, port = divmod(i, ports)
        plane = port // plan.ports_per_host
        row = [w.name(host), plane, "nic", host, port, to_text(sid), plan.nic_bits, "End.DT6"]
        out.writerow(row)
    return buf.getvalue()


def summary_dict(
    plan: AddressPlan,
    table: TableSummary,
    findings: list[Finding],
    rendered: int,
    name: str,
) -> dict[str, Any]:
    p, fmt = plan.topology.plan, plan.fmt
    return {
        "design": name,
        "fabric": p.fabric,
        "format": {
            "block_bits": fmt.block_bits,
            "usid_bits": fmt.usid_bits,
            "usids_per_container": fmt.capacity,
        },
        "prefix": plan.options.prefix,
        "loopbacks": plan.options.loopbacks,
        "links": plan.options.links,
        "blocks": [f"{to_text(plan.block(q))}/{fmt.block_bits}" for q in range(p.planes)],
        "growth": plan.options.growth,
        "global_usids": {"reserved": plan.used_global, "limit": fmt.global_limit},
        "ranges": dict(zip(("leaf", "spine", "core"), plan.caps, strict=True)),
        "switch_locators": p.planes * p.switches_per_plane,
        "nic_sids": p.hosts * plan.host_ports,
        "programs": table.as_dict(),
        "findings": [f.to_dict() for f in findings],
        "node_files": rendered,
    }


def nodes_to_render(plan: AddressPlan) -> list[int]:
    t = plan.topology
    if t.n_nodes <= RENDER_NODES:
        return list(range(t.n_nodes))
    switches = t.n_nodes - t.plan.hosts
    return list(range(t.plan.hosts, t.n_nodes)) if switches <= RENDER_SWITCHES else []


def write_nodes(directory: Path, w: Wiring, nodes: list[int], evs: int | None = None) -> list[Path]:
    """``nodes/NAME.sh`` for each node and ``frr/NAME.conf`` for each switch among them."""
    t = w.plan.topology
    written = []
    for n in nodes:
        name = w.name(n)
        written.append(atomic_write(directory / "nodes" / f"{name}.sh", render_node(w, n, evs)))
        if int(t.node_role[n]) != Role.HOST:
            written.append(atomic_write(directory / "frr" / f"{name}.conf", render_frr(w, n)))
    return written


def write_plan(
    directory: Path,
    plan: AddressPlan,
    table: TableSummary,
    findings: list[Finding],
    name: str,
    evs: int | None = None,
) -> tuple[list[Path], dict[str, Any]]:
    """``sids.csv``, ``summary.json`` and the node files that :func:`nodes_to_render` picks."""
    w = Wiring(plan)
    nodes = nodes_to_render(plan)
    written = [atomic_write(directory / "sids.csv", sids_csv(plan, w))]
    written += write_nodes(directory, w, nodes, evs)
    summary = summary_dict(plan, table, findings, len(nodes), name)
    text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
    written.append(atomic_write(directory / "summary.json", text))
    return written, summary


def node_by_name(w: Wiring, name: str) -> int | None:
    """The node id called ``name`` (a linear scan over switches, a parse for hosts)."""
    t = w.plan.topology
    for n in np.arange(t.n_nodes).tolist():
        if w.name(n) == name:
            return int(n)
    return None
