"""The ``interconnect:`` section: a cloud interconnect carried by SRv6 (docs/srv6.md "Cloud
interconnect"): its nodes (cloud edge, DC edge, WAN) and links, the tenants with their
attachment points and prefixes (an L3VPN each: RFC 8986 End.DT6 or End.DX6 for IPv6, End.DX4
for IPv4) and TE policies (an explicit list of named nodes, with a fallback).

The models check shapes; :func:`interconnect_problems` checks what needs the whole section:
names unique, every reference known, one attachment per tenant and node, no prefix of a
tenant overlapping another of the same tenant. Two tenants may use the same prefix: each has
its own routing table (that is what an L3VPN is for). What needs the addressing (the block,
the service SIDs, reachability) is checked by ``clusterloom.srv6.interconnect``.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field

from clusterloom.errors import Problem
from clusterloom.spec._base import SpecModel

__all__ = [
    "AttachmentSpec",
    "InterconnectSpec",
    "LinkSpec",
    "NodeSpec",
    "PolicySpec",
    "TenantSpec",
    "interconnect_problems",
]

#: node names become interface names (``to-NAME``, at most 15 characters on Linux)
NodeName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,11}$")]
TenantName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,31}$")]
#: Linux routing tables; 0 and 253..255 (unspec, default, main, local) are the kernel's
TableId = Annotated[int, Field(ge=1, le=2**31 - 1)]
RESERVED_TABLES = (253, 254, 255)
MAX_ENTRIES = 4096
#: tenant routes a section may imply (every attachment's table holds its tenant's other
#: prefixes, a policy's fallback once more): 40,000 are planned and checked in about 5 s here
MAX_TENANT_ROUTES = 100_000


class NodeSpec(SpecModel):
    name: NodeName
    role: Literal["edge", "dc-edge", "wan"] = "edge"
    usid: int | None = Field(default=None, ge=1, le=2**32 - 1, description="its global uSID")


class LinkSpec(SpecModel):
    a: NodeName
    b: NodeName


class AttachmentSpec(SpecModel):
    node: NodeName
    prefixes: list[str] = Field(min_length=1, max_length=MAX_ENTRIES)
    ipv6: Literal["dt6", "dx6"] = "dt6"
    sid: str | None = Field(default=None, description="the IPv6 service SID (default: assigned)")
    sid4: str | None = Field(default=None, description="the End.DX4 SID (default: assigned)")


class TenantSpec(SpecModel):
    name: TenantName
    table: TableId | None = None
    attachments: list[AttachmentSpec] = Field(min_length=1, max_length=MAX_ENTRIES)


class PolicySpec(SpecModel):
    name: TenantName
    tenant: TenantName
    source: NodeName = Field(alias="from")
    to: NodeName
    via: list[NodeName] = Field(min_length=1, max_length=64)
    fallback: Literal["auto", "none"] | list[NodeName] = "auto"


class InterconnectSpec(SpecModel):
    block: str = "fcbb:bc00::/32"
    usid_bits: Literal[8, 16, 24, 32] = 16
    links_prefix: str = "fd00:0:20::/64"
    links4_prefix: str = "100.64.0.0/22"
    nodes: list[NodeSpec] = Field(min_length=2, max_length=MAX_ENTRIES)
    links: list[LinkSpec] = Field(min_length=1, max_length=MAX_ENTRIES)
    tenants: list[TenantSpec] = Field(default_factory=list, max_length=MAX_ENTRIES)
    policies: list[PolicySpec] = Field(default_factory=list, max_length=MAX_ENTRIES)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _unique(names: list[str], where: str, what: str) -> list[Problem]:
    seen: dict[str, int] = {}
    out = []
    for i, n in enumerate(names):
        if n in seen:
            out.append(Problem(f"{where}[{i}]", f"{what} {n!r} is also {where}[{seen[n]}]"))
        seen.setdefault(n, i)
    return out


def _prefix_problems(t: int, tenant: TenantSpec) -> list[Problem]:
    """Every prefix parses (strict: no host bits) and none overlaps another of the tenant."""
    out: list[Problem] = []
    mine: list[tuple[Network, str]] = []
    for j, att in enumerate(tenant.attachments):
        for k, text in enumerate(att.prefixes):
            where = f"interconnect.tenants[{t}].attachments[{j}].prefixes[{k}]"
            try:
                net = ipaddress.ip_network(text, strict=True)
            except ValueError as exc:
                out.append(Problem(where, f"{text!r} is not an IP prefix ({exc})"))
                continue
            for other, other_where in mine:
                if net.version == other.version and net.overlaps(other):
                    out.append(
                        Problem(
                            where,
                            f"{net} overlaps {other} ({other_where}) of the same tenant; a "
                            "tenant's prefixes must be disjoint",
                        )
                    )
            mine.append((net, where))
    return out


def _tenant_problems(spec: InterconnectSpec, nodes: set[str]) -> list[Problem]:
    out = _unique([t.name for t in spec.tenants], "interconnect.tenants", "tenant")
    tables = [t.table for t in spec.tenants if t.table is not None]
    out += _unique([str(x) for x in tables], "interconnect.tenants.table", "table")
    for t, tenant in enumerate(spec.tenants):
        base = f"interconnect.tenants[{t}]"
        if tenant.table in RESERVED_TABLES:
            out.append(Problem(f"{base}.table", f"{tenant.table} is a kernel table (253..255)"))
        at: dict[str, int] = {}
        for j, att in enumerate(tenant.attachments):
            if att.node not in nodes:
                out.append(Problem(f"{base}.attachments[{j}].node", f"no node {att.node!r}"))
            elif att.node in at:
                out.append(
                    Problem(
                        f"{base}.attachments[{j}].node",
                        f"tenant {tenant.name!r} is attached at {att.node!r} already "
                        f"(attachments[{at[att.node]}]); give one attachment per node",
                    )
                )
            at.setdefault(att.node, j)
        out += _prefix_problems(t, tenant)
    return out


def _policy_problems(spec: InterconnectSpec, nodes: set[str]) -> list[Problem]:
    out = _unique([p.name for p in spec.policies], "interconnect.policies", "policy")
    attached = {t.name: {a.node for a in t.attachments} for t in spec.tenants}
    for i, p in enumerate(spec.policies):
        base = f"interconnect.policies[{i}]"
        if p.tenant not in attached:
            out.append(Problem(f"{base}.tenant", f"no tenant {p.tenant!r}"))
        for field, node in (("from", p.source), ("to", p.to)):
            if node not in nodes:
                out.append(Problem(f"{base}.{field}", f"no node {node!r}"))
            elif p.tenant in attached and node not in attached[p.tenant]:
                out.append(
                    Problem(f"{base}.{field}", f"tenant {p.tenant!r} has no attachment at {node!r}")
                )
        if p.source == p.to:
            out.append(Problem(f"{base}.to", f"the policy starts and ends at {p.to!r}"))
        lists = [("via", p.via)] + (
            [("fallback", p.fallback)] if isinstance(p.fallback, list) else []
        )
        for field, names in lists:
            for k, node in enumerate(names):
                if node not in nodes:
                    known = ", ".join(sorted(nodes))
                    out.append(Problem(f"{base}.{field}[{k}]", f"no node {node!r}; known: {known}"))
    pairs = [(p.tenant, p.source, p.to) for p in spec.policies]
    out += _unique([f"{t} {a}->{b}" for t, a, b in pairs], "interconnect.policies", "tenant pair")
    return out


def interconnect_problems(spec: InterconnectSpec) -> list[Problem]:
    """What the schema alone cannot check, one problem per thing to fix."""
    names = [n.name for n in spec.nodes]
    out = _unique(names, "interconnect.nodes", "node")
    nodes = set(names)
    pairs: list[str] = []
    for i, link in enumerate(spec.links):
        for end in ("a", "b"):
            if getattr(link, end) not in nodes:
                out.append(
                    Problem(f"interconnect.links[{i}].{end}", f"no node {getattr(link, end)!r}")
                )
        if link.a == link.b:
            out.append(Problem(f"interconnect.links[{i}]", f"a link from {link.a!r} to itself"))
        pairs.append(" ~ ".join(sorted((link.a, link.b))))
    out += _unique(pairs, "interconnect.links", "link")
    out += _tenant_problems(spec, nodes)
    out += _policy_problems(spec, nodes)
    routes = _route_count(spec)
    if routes > MAX_TENANT_ROUTES:
        out.append(
            Problem(
                "interconnect.tenants",
                f"{routes:,} tenant routes (attachments x their tenant's prefixes), more than "
                f"{MAX_TENANT_ROUTES:,}; split the interconnect",
            )
        )
    return out


def _route_count(spec: InterconnectSpec) -> int:
    """Routes the tenant tables will hold: per tenant, each attachment's table holds every
    prefix of the others (and its own, at most); a policy adds its destination's once more."""
    total = 0
    prefixes: dict[tuple[str, str], int] = {}
    for t in spec.tenants:
        count = sum(len(a.prefixes) for a in t.attachments)
        total += len(t.attachments) * count
        prefixes |= {(t.name, a.node): len(a.prefixes) for a in t.attachments}
    return total + sum(prefixes.get((p.tenant, p.to), 0) for p in spec.policies)
