"""The interconnect plan rendered per node: iproute2 commands and an FRR configuration for the
same intent, deterministic (same plan, same bytes), and the run's files written atomically:
``nodes/NAME.sh``, ``frr/NAME.conf`` and ``interconnect.json`` (SIDs, policies, isolation).

A node's iproute2 file: forwarding and SRv6 sysctls (and ``ignore_routes_with_linkdown``, so
that a route whose first link lost its carrier gives way to the next metric: a TE policy's
fallback), link and attachment addresses, its End (NEXT-C-SID), a route per other node's
locator, its service SIDs (End.DT6 ``table N``, End.DX6 ``nh6``, End.DX4 ``nh4``), a policy
rule per attachment interface and family selecting the tenant's table, and that table's
routes (local ones towards the tenant's router; H.Encaps ones, ``encap.red`` for one SID).

FRR 8.4 (Debian 12, the one checked with ``vtysh --dryrun``) has no static SRv6 SIDs, no seg6
encapsulation on a static route and no policy rules outside ``pbrd``: its file carries the
interfaces, addresses, the underlay's and the DT6 tables' static routes and the locator, and
names the rest in comments (the iproute2 file installs them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clusterloom.atomic import atomic_write
from clusterloom.findings import Finding
from clusterloom.srv6.encoding import to_text
from clusterloom.srv6.interconnect import InterconnectPlan, Rule, Service, TenantRoute

SYSCTLS = (
    "net.ipv6.conf.all.forwarding=1",
    "net.ipv4.ip_forward=1",
    "net.ipv6.conf.all.seg6_enabled=1",
    "net.ipv6.conf.all.ignore_routes_with_linkdown=1",
    "net.ipv4.conf.all.ignore_routes_with_linkdown=1",
)


def _service(plan: InterconnectPlan, s: Service, first_link: str) -> str:
    sid = f"{to_text(s.sid)}/{plan.service_bits}"
    if s.behavior == "End.DT6":
        return f"{sid} encap seg6local action End.DT6 table {s.table} dev {first_link}"
    key = "nh6" if s.behavior == "End.DX6" else "nh4"
    return f"{sid} encap seg6local action {s.behavior} {key} {s.next_hop} dev {s.attachment}"


def _tenant_route(r: TenantRoute) -> str:
    ip = "ip -6" if r.family == 6 else "ip -4"
    if not r.segments:
        return f"{ip} route add {r.prefix} via {r.via} dev {r.dev} table {r.table}"
    mode = "encap.red" if len(r.segments) == 1 else "encap"
    segs = ",".join(to_text(s) for s in r.segments)
    return (
        f"{ip} route add {r.prefix} encap seg6 mode {mode} segs {segs} dev {r.dev} "
        f"metric {r.metric} table {r.table}"
    )


def _underlay(plan: InterconnectPlan, node: str) -> Iterator[tuple[int, str, str]]:
    """``(locator, via, dev)`` of every other node's locator route at ``node``."""
    for other in sorted(plan.nodes, key=lambda n: n.locator):
        step = plan.next_hop[other.name].get(node)
        if other.name == node or step is None:
            continue
        link = plan.link_between(node, step)
        yield other.locator, to_text(link.address(step)), link.ifname(node)


def _rules(plan: InterconnectPlan, node: str) -> list[Rule]:
    return sorted((r for r in plan.rules if r.node == node), key=lambda r: (r.pref, -r.family))


def node_lines(plan: InterconnectPlan, node: str) -> Iterator[str]:
    """The iproute2 and sysctl commands of ``node``, in a fixed order."""
    me, fmt = plan.node(node), plan.fmt
    loc = f"{to_text(me.locator)}/{plan.locator_bits}"
    yield f"# {node} ({me.role}): uSID {me.usid}, locator {loc}"
    yield "sysctl -q -w " + " ".join(SYSCTLS)
    links = plan.links_of(node)
    for k in links:
        yield f"ip -6 addr add {to_text(k.address(node))}/127 dev {k.ifname(node)}"
    atts = [a for a in plan.attachments if a.node == node]
    for a in atts:
        yield f"ip -6 addr add {to_text(a.node_address)}/127 dev {a.ifname}"
        yield f"ip -4 addr add {a.node_address4}/31 dev {a.ifname}"
    first = links[0].ifname(node)
    yield (
        f"ip -6 route add {loc} encap seg6local action End flavors next-csid "
        f"lblen {fmt.block_bits} nflen {fmt.usid_bits} dev {first}"
    )
    for locator, via, dev in _underlay(plan, node):
        yield f"ip -6 route add {to_text(locator)}/{plan.locator_bits} via {via} dev {dev}"
    for s in sorted((s for s in plan.services if s.node == node), key=lambda s: s.sid):
        yield f"# {s.behavior} of tenant {s.tenant} ({s.attachment})"
        yield f"ip -6 route add {_service(plan, s, first)}"
    for rule in _rules(plan, node):
        yield f"ip -{rule.family} rule add iif {rule.iif} table {rule.table} pref {rule.pref}"
    for r in (r for r in plan.routes if r.node == node):
        if r.segments:
            yield f"# tenant table {r.table}: {r.reason}, path {' '.join(r.path)}"
        yield _tenant_route(r)


def render_node(plan: InterconnectPlan, node: str) -> str:
    return "\n".join(node_lines(plan, node)) + "\n"


def frr_lines(plan: InterconnectPlan, node: str) -> Iterator[str]:
    """The FRR configuration of ``node``, in a fixed order."""
    me, fmt = plan.node(node), plan.fmt
    yield "frr defaults datacenter"
    yield f"hostname {node}"
    yield "! FRR 8.4 has no static SRv6 SID, seg6 encapsulation or policy rule; the iproute2"
    yield "! file installs these:"
    yield f"!  End (NEXT-C-SID lblen {fmt.block_bits} nflen {fmt.usid_bits}) " + to_text(me.locator)
    first = plan.links_of(node)[0].ifname(node)
    for s in sorted((s for s in plan.services if s.node == node), key=lambda s: s.sid):
        yield f"!  {_service(plan, s, first)}"
    for rule in _rules(plan, node):
        yield f"!  ip -{rule.family} rule iif {rule.iif} table {rule.table}"
    for r in (r for r in plan.routes if r.node == node and r.segments):
        yield f"!  {_tenant_route(r).split(' route add ', 1)[1]}"
    ends: list[tuple[str, str, str | None]] = [
        (k.ifname(node), to_text(k.address(node)), None) for k in plan.links_of(node)
    ]
    ends += [
        (a.ifname, to_text(a.node_address), a.node_address4)
        for a in plan.attachments
        if a.node == node
    ]
    for ifname, six, four in sorted(ends):
        yield "!"
        yield f"interface {ifname}"
        if four is not None:
            yield f" ip address {four}/31"
        yield f" ipv6 address {six}/127"
        yield "exit"
    yield "!"
    for locator, via, dev in _underlay(plan, node):
        yield f"ipv6 route {to_text(locator)}/{plan.locator_bits} {via} {dev}"
    for r in (r for r in plan.routes if r.node == node and not r.segments):
        yield f"ipv6 route {r.prefix} {r.via} {r.dev} table {r.table}"
    yield "!"
    yield "segment-routing"
    yield " srv6"
    yield "  locators"
    yield f"   locator {node}"
    yield f"    prefix {to_text(me.locator)}/{plan.locator_bits} func-bits {fmt.usid_bits}"
    yield "   exit"
    yield "  exit"
    yield " exit"
    yield "exit"


def render_frr(plan: InterconnectPlan, node: str) -> str:
    return "\n".join(frr_lines(plan, node)) + "\n"


def plan_dict(plan: InterconnectPlan, findings: list[Finding], name: str) -> dict[str, Any]:
    """What ``interconnect.json`` holds: the format, nodes, SIDs, policies, isolation."""
    fmt = plan.fmt
    return {
        "design": name,
        "block": f"{to_text(plan.block)}/{fmt.block_bits}",
        "usid_bits": fmt.usid_bits,
        "nodes": [
            {"name": n.name, "role": n.role, "usid": n.usid, "locator": to_text(n.locator)}
            for n in plan.nodes
        ],
        "services": [
            {
                "node": s.node,
                "tenant": s.tenant,
                "interface": s.attachment,
                "behavior": s.behavior,
                "sid": f"{to_text(s.sid)}/{plan.service_bits}",
                "table": s.table,
                "next_hop": s.next_hop,
            }
            for s in plan.services
        ],
        "policies": [
            {
                "name": p.name,
                "tenant": p.tenant,
                "from": p.source,
                "to": p.to,
                "via": list(p.via),
                "primary": list(p.primary),
                "fallback_via": None if p.fallback_via is None else list(p.fallback_via),
                "fallback": None if p.fallback is None else list(p.fallback),
            }
            for p in plan.policies
        ],
        "tenant_routes": len(plan.routes),
        "findings": [f.to_dict() for f in findings],
    }


def write_interconnect(
    directory: Path, plan: InterconnectPlan, findings: list[Finding], name: str
) -> list[Path]:
    """Every node's two files and ``interconnect.json``, each written atomically."""
    written = []
    for n in sorted(node.name for node in plan.nodes):
        written.append(atomic_write(directory / "nodes" / f"{n}.sh", render_node(plan, n)))
        written.append(atomic_write(directory / "frr" / f"{n}.conf", render_frr(plan, n)))
    text = json.dumps(plan_dict(plan, findings, name), indent=2, sort_keys=True) + "\n"
    written.append(atomic_write(directory / "interconnect.json", text))
    return written
