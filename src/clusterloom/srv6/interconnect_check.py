"""The interconnect plan read back as a data plane: a packet's walk through the nodes (each
hop's destination and Segments Left, RFC 8986 End with RFC 9800 NEXT-C-SID, RFC 8754 SRH) and
the isolation check built on it.

Isolation is checked on the plan's own tables, not on the spec: from every attachment, through
the policy rule of its interface, every route of the table it selects (primary and fallback
alike, either may be the one in use) is followed: a local route to the router on its
interface; an encapsulating one along its walk to the service SID it ends at, then that SID's
behaviour (End.DT6: a lookup of the prefix in the SID's table there; End.DX4/DX6: the router
whose address is the next hop). A prefix delivered to another tenant's router, or to a router
that does not own it, is an ``isolation`` error; a tenant's prefix its other attachment cannot
reach by a primary route is an ``unreached`` error.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from clusterloom.findings import Finding, Severity
from clusterloom.srv6.encoding import ADDRESS_BITS, block_value, next_csid
from clusterloom.srv6.interconnect import (
    PRIMARY_METRIC,
    Attachment,
    InterconnectPlan,
    Service,
    TenantRoute,
)


@dataclass(frozen=True)
class Hop:
    """What ``node`` sees arriving from ``sender``: destination and Segments Left (None
    without an SRH)."""

    node: str
    sender: str
    destination: int
    segments_left: int | None


def walk(
    plan: InterconnectPlan, start: str, segments: tuple[int, ...]
) -> tuple[list[Hop], Service | None]:
    """The hops of a packet the headend ``start`` encapsulated with ``segments`` (H.Encaps.Red
    for one SID: no SRH) and the service SID that decapsulates it (None: it is dropped)."""
    fmt = plan.fmt
    da = segments[0]
    sl = len(segments) - 1 if len(segments) > 1 else None
    by_usid = {n.usid: n for n in plan.nodes}
    at, hops = start, list[Hop]()
    shift = ADDRESS_BITS - plan.locator_bits
    mask = (1 << fmt.usid_bits) - 1
    for _ in range(4 * len(plan.nodes) + fmt.capacity * len(segments)):
        svc = plan.service_at(at, da)
        if svc is not None:
            return hops, svc
        if da >> shift == plan.node(at).locator >> shift:  # End with NEXT-C-SID
            shifted = next_csid(da, fmt)
            if shifted is not None:
                da = shifted
            elif sl:
                sl -= 1
                da = segments[len(segments) - 1 - sl]
            else:
                return hops, None
            continue
        owner = by_usid.get((da >> shift) & mask) if block_value(da, fmt) == plan.block else None
        step = plan.next_hop[owner.name].get(at) if owner is not None else None
        if step is None:
            return hops, None
        hops.append(Hop(step, at, da, sl))
        at = step
    return hops, None


@dataclass(frozen=True)
class Reach:
    """Route ``route`` of ``source``'s table delivers its prefix to ``target`` (None: to no
    router)."""

    source: Attachment
    route: TenantRoute
    target: Attachment | None


def table_of(plan: InterconnectPlan, a: Attachment, family: int) -> int | None:
    """The table the policy rule of ``a``'s interface selects (None: no rule, or several)."""
    tables = {
        r.table for r in plan.rules if (r.node, r.iif, r.family) == (a.node, a.ifname, family)
    }
    return tables.pop() if len(tables) == 1 else None


def delivered_to(plan: InterconnectPlan, r: TenantRoute, svc: Service) -> Attachment | None:
    """The router ``svc`` hands route ``r``'s prefix to (None: none)."""
    if svc.behavior == "End.DT6":
        if r.family != 6:
            return None  # an IPv4 packet at an End.DT6: dropped
        routes = plan.local_routes(svc.node, svc.table)
        exact = next((dev for prefix, dev in routes if prefix == r.prefix), None)
        if exact is not None:  # the usual case, without parsing
            return plan.attachment_at(svc.node, exact)
        net = ipaddress.IPv6Network(r.prefix)
        for prefix, dev in routes:
            if net.subnet_of(ipaddress.IPv6Network(prefix)):
                return plan.attachment_at(svc.node, dev)
        return None
    return plan.attachment_at(svc.node, svc.next_hop)


def reachability(plan: InterconnectPlan) -> list[Reach]:
    """Every route each attachment's table holds, followed to the router it delivers to."""
    out: list[Reach] = []
    for a in plan.attachments:
        for family in (6, 4):
            table = table_of(plan, a, family)
            for r in plan.table(a.node, table, family):
                if not r.segments:
                    out.append(Reach(a, r, plan.attachment_at(a.node, r.dev)))
                    continue
                _, svc = walk(plan, a.node, r.segments)
                out.append(Reach(a, r, None if svc is None else delivered_to(plan, r, svc)))
    return out


def _owns(a: Attachment, prefix: str) -> bool:
    if prefix in a.prefixes6 or prefix in a.prefixes4:
        return True
    net = ipaddress.ip_network(prefix)
    mine = a.prefixes6 if net.version == 6 else a.prefixes4
    return any(net.subnet_of(ipaddress.ip_network(p)) for p in mine)  # type: ignore[arg-type]


def _name(a: Attachment) -> str:
    return f"{a.tenant}@{a.node}"


def isolation_findings(plan: InterconnectPlan, reach: list[Reach] | None = None) -> list[Finding]:
    """``isolation`` errors (a prefix delivered across tenants or to a router that does not
    own it) and ``unreached`` errors (a tenant's prefix its other attachment cannot reach)."""
    reach = reachability(plan) if reach is None else reach
    out: list[Finding] = []
    for x in reach:
        src, r = _name(x.source), x.route
        if x.target is None:
            out.append(
                Finding(
                    Severity.ERROR,
                    "unreached",
                    f"{src}: {r.prefix} ({r.reason}) is delivered to no router",
                    f"{r.node} table {r.table}",
                )
            )
        elif x.target.tenant != x.source.tenant or not _owns(x.target, r.prefix):
            other = x.target.tenant != x.source.tenant
            why = "belongs to another tenant" if other else "does not own it"
            out.append(
                Finding(
                    Severity.ERROR,
                    "isolation",
                    f"{src}: {r.prefix} ({r.reason}) reaches {_name(x.target)}, which {why}",
                    f"{r.node} table {r.table}",
                )
            )
    reached = {
        (id(x.source), x.route.prefix, id(x.target))
        for x in reach
        if x.route.metric == PRIMARY_METRIC and x.target is not None
    }
    for a in plan.attachments:
        for b in plan.attachments:
            if a is b or a.tenant != b.tenant:
                continue
            for p in b.prefixes6 + b.prefixes4:
                if (id(a), p, id(b)) not in reached:
                    out.append(
                        Finding(
                            Severity.ERROR,
                            "unreached",
                            f"{_name(a)} cannot reach {p} of {_name(b)}",
                            f"{a.node} table {a.table}",
                        )
                    )
    return out
