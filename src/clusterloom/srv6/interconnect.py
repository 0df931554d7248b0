"""The SRv6 plan of a cloud interconnect (the spec's ``interconnect:`` section): one uSID data
plane from the cloud edge through the DC edge to the WAN, carrying an L3VPN per tenant and TE
policies (draft-filsfils-srv6ops-srv6-e2e-dc-frontend-wan; RFC 8986, RFC 9800, RFC 9256).

Addressing (``B`` the block ``interconnect.block``, ``LBL`` its length, ``LNFL`` the uSID length):

- node ``n`` has a global uSID (its ``usid``, else the lowest free one in the order of
  ``nodes``); its locator ``B:N::/(LBL+LNFL)`` is an End with NEXT-C-SID;
- each attachment of a tenant gets service SIDs in its node's locator, ``B:N:F::/(LBL+2*LNFL)``
  with ``F`` a *local* uSID (above the global range, :func:`~.encoding.global_limit`): an
  End.DT6 looking the inner packet up in the tenant's table, or an End.DX6 to the attachment's
  router, for its IPv6 prefixes; an End.DX4 to that router for its IPv4 prefixes (End.DT4 needs
  a VRF device, RFC 8986 4.6, which this plan does without);
- link ``i`` of ``links`` is the /127 ``links_prefix + 2i`` (end ``a`` +0, end ``b`` +1); the
  attachments follow (node +0, the tenant's router +1), and each has an IPv4 /31 of
  ``links4_prefix`` (node even, router odd).

Routing: the underlay routes each locator along a shortest path (hop count; ties to the
neighbour whose name sorts first), one next hop. A tenant is a routing table per node (its
``table``, else ``100 + its index``), selected by a policy rule on each of its attachment
interfaces. In that table every prefix of its other attachments encapsulates (H.Encaps, RFC 8986
5.1) with the segment list of the path to it: the service SID alone (the underlay's shortest
path), or, for a TE policy, the uSIDs of its ``via`` nodes then the service SID (metric 100)
and its fallback (metric 200), taken when the primary's first link loses its carrier. A DT6
table also holds the node's own attachment prefixes towards the tenant's router.
"""

from __future__ import annotations

import ipaddress
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from typing import Literal

from clusterloom.errors import Problem, SpecError
from clusterloom.spec.interconnect import AttachmentSpec, InterconnectSpec, PolicySpec
from clusterloom.srv6.encoding import (
    ADDRESS_BITS,
    Format,
    block_value,
    container,
    pack,
    parse_prefix,
    to_text,
)

PRIMARY_METRIC = 100
FALLBACK_METRIC = 200
#: the table of tenant ``i`` when the spec gives none
TABLE_BASE = 100
#: the policy-rule preference of attachment interface ``k`` of a node (the main rule is 32766)
RULE_PREF_BASE = 1000

Behavior = Literal["End.DT6", "End.DX6", "End.DX4"]


@dataclass(frozen=True)
class Node:
    name: str
    role: str
    usid: int
    locator: int


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    address_a: int
    address_b: int

    def ifname(self, at: str) -> str:
        """The interface of this link at node ``at``: ``to-`` and the other end's name."""
        return f"to-{self.b if at == self.a else self.a}"

    def address(self, at: str) -> int:
        return self.address_a if at == self.a else self.address_b


@dataclass(frozen=True)
class Attachment:
    """A tenant's attachment point: an interface of ``node`` towards the tenant's router."""

    tenant: str
    node: str
    ifname: str
    table: int
    prefixes6: tuple[str, ...]
    prefixes4: tuple[str, ...]
    ipv6: Literal["dt6", "dx6"]
    node_address: int
    router_address: int
    node_address4: str
    router_address4: str


@dataclass(frozen=True)
class Service:
    """A service SID at ``node`` (a ``/(LBL+2*LNFL)`` route) and where it delivers."""

    node: str
    tenant: str
    attachment: str
    behavior: Behavior
    sid: int
    #: End.DT6: the table it looks the inner destination up in; End.DX*: the next hop
    table: int | None
    next_hop: str | None


@dataclass(frozen=True)
class TenantRoute:
    """A route of a tenant table at ``node``: encapsulating (``segments``) or local (towards
    the attachment's router, ``via``)."""

    node: str
    table: int
    family: int
    prefix: str
    dev: str
    segments: tuple[int, ...] = ()
    via: str | None = None
    metric: int = PRIMARY_METRIC
    #: what chose it: "shortest", "policy NAME primary", "policy NAME fallback", "local"
    reason: str = "local"
    #: the nodes the outer packet crosses, headend first
    path: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    node: str
    family: int
    iif: str
    table: int
    pref: int


@dataclass(frozen=True)
class PolicyPath:
    name: str
    tenant: str
    source: str
    to: str
    via: tuple[str, ...]
    primary: tuple[str, ...]
    #: the fallback's waypoints and its path; None: no fallback (asked for none, or none exists)
    fallback_via: tuple[str, ...] | None
    fallback: tuple[str, ...] | None


@dataclass(frozen=True, eq=False)
class InterconnectPlan:
    fmt: Format
    block: int
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    attachments: tuple[Attachment, ...]
    services: tuple[Service, ...]
    routes: tuple[TenantRoute, ...]
    rules: tuple[Rule, ...]
    policies: tuple[PolicyPath, ...]
    #: ``next_hop[destination][node]``: the underlay's next hop from node towards destination
    next_hop: dict[str, dict[str, str]] = field(repr=False)

    @property
    def locator_bits(self) -> int:
        return self.fmt.block_bits + self.fmt.usid_bits

    @property
    def service_bits(self) -> int:
        return self.fmt.block_bits + 2 * self.fmt.usid_bits

    @cached_property
    def _by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def _services_at(self) -> dict[tuple[str, int], Service]:
        low = ADDRESS_BITS - self.service_bits
        return {(s.node, s.sid >> low): s for s in self.services}

    @cached_property
    def _routes_in(self) -> dict[tuple[str, int, int], list[TenantRoute]]:
        out: dict[tuple[str, int, int], list[TenantRoute]] = {}
        for r in self.routes:
            out.setdefault((r.node, r.table, r.family), []).append(r)
        return out

    @cached_property
    def _attached(self) -> dict[tuple[str, str], Attachment]:
        out = {(a.node, a.ifname): a for a in self.attachments}
        out |= {(a.node, to_text(a.router_address)): a for a in self.attachments}
        out |= {(a.node, a.router_address4): a for a in self.attachments}
        return out

    @cached_property
    def _locals(self) -> dict[tuple[str, int], list[tuple[str, str]]]:
        out: dict[tuple[str, int], list[tuple[str, str]]] = {}
        for r in self.routes:
            if not r.segments and r.family == 6:
                out.setdefault((r.node, r.table), []).append((r.prefix, r.dev))
        return out

    def local_routes(self, node: str, table: int | None) -> list[tuple[str, str]]:
        """The local IPv6 routes (prefix, interface) of tenant table ``table`` at ``node``."""
        return [] if table is None else self._locals.get((node, table), [])

    def node(self, name: str) -> Node:
        return self._by_name[name]

    def attachment_at(self, node: str, key: str | None) -> Attachment | None:
        """The attachment of ``node`` on interface ``key``, or whose router has address
        ``key`` (IPv6 text as ``to_text`` writes it, or IPv4)."""
        return None if key is None else self._attached.get((node, key))

    def service_at(self, node: str, address: int) -> Service | None:
        """The service SID of ``node`` whose ``/(LBL+2*LNFL)`` route ``address`` matches."""
        return self._services_at.get((node, address >> (ADDRESS_BITS - self.service_bits)))

    def table(self, node: str, table: int | None, family: int) -> list[TenantRoute]:
        """The routes of tenant table ``table`` of ``family`` at ``node``."""
        return [] if table is None else self._routes_in.get((node, table, family), [])

    def links_of(self, name: str) -> list[Link]:
        return sorted((k for k in self.links if name in (k.a, k.b)), key=lambda k: k.ifname(name))

    def link_between(self, a: str, b: str) -> Link:
        return next(k for k in self.links if {k.a, k.b} == {a, b})


# -- graph ---------------------------------------------------------------------------------


def _adjacency(spec: InterconnectSpec, dead: frozenset[frozenset[str]]) -> dict[str, list[str]]:
    adj: dict[str, list[str]] = {n.name: [] for n in spec.nodes}
    for link in spec.links:
        if frozenset((link.a, link.b)) not in dead:
            adj[link.a].append(link.b)
            adj[link.b].append(link.a)
    return {n: sorted(v) for n, v in adj.items()}


def next_hops(adj: dict[str, list[str]], destination: str) -> dict[str, str]:
    """Each node's next hop towards ``destination`` along a shortest path (ties: the neighbour
    whose name sorts first); nodes that cannot reach it are absent."""
    dist = {destination: 0}
    queue = deque([destination])
    while queue:
        u = queue.popleft()
        for v in adj[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return {
        u: min((v for v in adj[u] if v in dist), key=lambda v: (dist[v], v))
        for u in dist
        if u != destination
    }


def route(next_hop: dict[str, dict[str, str]], a: str, b: str) -> tuple[str, ...] | None:
    """The nodes from ``a`` to ``b`` along the next hops; None when ``a`` cannot reach ``b``."""
    out = [a]
    while out[-1] != b:
        step = next_hop[b].get(out[-1])
        if step is None:
            return None
        out.append(step)
    return tuple(out)


def _edges(path: tuple[str, ...]) -> set[frozenset[str]]:
    return {frozenset(p) for p in pairwise(path)}


# -- addressing ----------------------------------------------------------------------------


def _format(spec: InterconnectSpec) -> tuple[Format, int]:
    block, bits = parse_prefix(spec.block, "interconnect.block")
    fmt = Format(bits, spec.usid_bits)
    found = [
        Problem(p.where.replace("interconnect.block_bits", "interconnect.block"), p.message)
        for p in fmt.problems("interconnect")
    ]
    if not found and fmt.capacity < 2:
        found.append(
            Problem(
                "interconnect.usid_bits",
                f"a /{bits} block leaves room for {fmt.capacity} {spec.usid_bits}-bit uSID, a "
                "service SID needs 2 (node and function); use a shorter block or uSID",
            )
        )
    if found:
        raise SpecError(found)
    return fmt, block


def _node_usids(spec: InterconnectSpec, fmt: Format) -> list[int]:
    limit = fmt.global_limit
    problems: list[Problem] = []
    given = [n.usid for n in spec.nodes]
    for i, u in enumerate(given):
        if u is not None and u > limit:
            problems.append(
                Problem(
                    f"interconnect.nodes[{i}].usid",
                    f"{u} is above the global uSIDs 1..{limit} of {fmt.usid_bits}-bit uSIDs",
                )
            )
        elif u is not None and given.index(u) != i:
            problems.append(
                Problem(f"interconnect.nodes[{i}].usid", f"{u} is nodes[{given.index(u)}]'s too")
            )
    if len(spec.nodes) > limit:
        problems.append(
            Problem(
                "interconnect.nodes",
                f"{len(spec.nodes)} nodes, more than the {limit} global {fmt.usid_bits}-bit "
                "uSIDs; use longer uSIDs",
            )
        )
    if problems:
        raise SpecError(problems)
    taken = {u for u in given if u is not None}
    free = (u for u in range(1, limit + 1) if u not in taken)
    return [u if u is not None else next(free) for u in given]


def _explicit_sid(
    text: str, where: str, plan: tuple[Format, int], node: Node, problems: list[Problem]
) -> int | None:
    """A service SID the spec gives: inside the block, in the node's locator, a local uSID."""
    fmt, block = plan
    try:
        sid = int(ipaddress.IPv6Address(text))
    except ValueError as exc:
        problems.append(Problem(where, f"{text!r} is not an IPv6 address ({exc})"))
        return None
    low = ADDRESS_BITS - fmt.block_bits - 2 * fmt.usid_bits
    u = fmt.usid_bits
    active = (sid >> (low + u)) & ((1 << u) - 1)
    function = (sid >> low) & ((1 << u) - 1)
    block_text = f"{to_text(block)}/{fmt.block_bits}"
    if block_value(sid, fmt) != block:
        problems.append(Problem(where, f"{text} is outside the block {block_text}"))
    elif active != node.usid:
        problems.append(
            Problem(
                where,
                f"{text} is not in the locator {to_text(node.locator)}/"
                f"{fmt.block_bits + u} of node {node.name!r} (its uSID is {active}, the "
                f"node's {node.usid})",
            )
        )
    elif not fmt.global_limit < function < 1 << u or sid & ((1 << low) - 1):
        problems.append(
            Problem(
                where,
                f"{text}: function {function} must be a local uSID in "
                f"{fmt.global_limit + 1}..{(1 << u) - 1} with nothing after it",
            )
        )
    else:
        return sid
    return None


def _link_space(spec: InterconnectSpec, n_attach: int) -> tuple[int, int]:
    base6, len6 = parse_prefix(spec.links_prefix, "interconnect.links_prefix")
    try:
        net4 = ipaddress.IPv4Network(spec.links4_prefix, strict=True)
    except ValueError as exc:
        raise SpecError(
            [Problem("interconnect.links4_prefix", f"not an IPv4 prefix ({exc})")]
        ) from exc
    problems = []
    need6 = 2 * (len(spec.links) + n_attach)
    if need6 > 1 << (ADDRESS_BITS - len6):
        problems.append(
            Problem(
                "interconnect.links_prefix",
                f"{spec.links_prefix} holds {1 << (ADDRESS_BITS - len6):,} addresses, "
                f"{need6:,} needed ({len(spec.links)} links, {n_attach} attachments, 2 each)",
            )
        )
    if 2 * n_attach > net4.num_addresses:
        problems.append(
            Problem(
                "interconnect.links4_prefix",
                f"{net4} holds {net4.num_addresses:,} addresses, {2 * n_attach:,} needed "
                f"({n_attach} attachments, a /31 each)",
            )
        )
    if problems:
        raise SpecError(problems)
    return base6, int(net4.network_address)


def _underlay_overlaps(spec: InterconnectSpec) -> list[Problem]:
    """Tenant prefixes must stay off the interconnect's own space (block, link prefixes)."""
    own = {
        "interconnect.block": ipaddress.ip_network(spec.block),
        "interconnect.links_prefix": ipaddress.ip_network(spec.links_prefix),
        "interconnect.links4_prefix": ipaddress.ip_network(spec.links4_prefix),
    }
    out = []
    names = list(own)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if own[a].version == own[b].version and own[a].overlaps(own[b]):
                out.append(Problem(a, f"{own[a]} overlaps {b} {own[b]}; give disjoint prefixes"))
    for t, tenant in enumerate(spec.tenants):
        for j, att in enumerate(tenant.attachments):
            for k, text in enumerate(att.prefixes):
                net = ipaddress.ip_network(text)
                for key, mine in own.items():
                    if net.version == mine.version and net.overlaps(mine):
                        where = f"interconnect.tenants[{t}].attachments[{j}].prefixes[{k}]"
                        out.append(Problem(where, f"{net} collides with {key} {mine}"))
    return out


def _families(att: AttachmentSpec) -> tuple[tuple[str, ...], tuple[str, ...]]:
    nets = [ipaddress.ip_network(p) for p in att.prefixes]
    six = tuple(str(n) for n in nets if n.version == 6)
    four = tuple(str(n) for n in nets if n.version == 4)
    return six, four


def iter_attachments(spec: InterconnectSpec) -> Iterator[tuple[int, int, AttachmentSpec]]:
    for t, tenant in enumerate(spec.tenants):
        for j, att in enumerate(tenant.attachments):
            yield t, j, att


def tenant_tables(spec: InterconnectSpec) -> list[int]:
    """Each tenant's table: its ``table``, else the lowest free from ``TABLE_BASE`` up."""
    taken = {t.table for t in spec.tenants if t.table is not None}
    free = (n for n in range(TABLE_BASE, 2**31) if n not in taken)
    return [t.table if t.table is not None else next(free) for t in spec.tenants]


def _attachments(spec: InterconnectSpec) -> list[Attachment]:
    base6, base4 = _link_space(spec, sum(len(t.attachments) for t in spec.tenants))
    per_node: dict[str, int] = {}
    tables = tenant_tables(spec)
    out = []
    for i, (t, _, att) in enumerate(iter_attachments(spec)):
        k = per_node.get(att.node, 0)
        per_node[att.node] = k + 1
        six, four = _families(att)
        n6 = base6 + 2 * (len(spec.links) + i)
        out.append(
            Attachment(
                tenant=spec.tenants[t].name,
                node=att.node,
                ifname=f"att{k}",
                table=tables[t],
                prefixes6=six,
                prefixes4=four,
                ipv6=att.ipv6,
                node_address=n6,
                router_address=n6 + 1,
                node_address4=str(ipaddress.IPv4Address(base4 + 2 * i)),
                router_address4=str(ipaddress.IPv4Address(base4 + 2 * i + 1)),
            )
        )
    return out


def _services(
    spec: InterconnectSpec, fmt: Format, block: int, nodes: dict[str, Node], atts: list[Attachment]
) -> list[Service]:
    """The service SIDs: the spec's first (checked), then the lowest free local uSID of each
    node, in the order of the tenants and their attachments (IPv6 before IPv4)."""
    problems: list[Problem] = []
    wanted: list[tuple[Attachment, Behavior, int | None]] = []
    for (t, j, att), a in zip(iter_attachments(spec), atts, strict=True):
        base = f"interconnect.tenants[{t}].attachments[{j}]"
        for family, text, key in ((a.prefixes6, att.sid, "sid"), (a.prefixes4, att.sid4, "sid4")):
            behavior: Behavior = (
                ("End.DT6" if a.ipv6 == "dt6" else "End.DX6") if key == "sid" else "End.DX4"
            )
            if text is not None and not family:
                problems.append(
                    Problem(f"{base}.{key}", f"the attachment has no {behavior[-1]} prefix")
                )
            if not family:
                continue
            sid = None
            if text is not None:
                sid = _explicit_sid(text, f"{base}.{key}", (fmt, block), nodes[a.node], problems)
                if sid is None:
                    continue
            wanted.append((a, behavior, sid))
    given = [sid for _, _, sid in wanted if sid is not None]
    for sid in sorted({s for s in given if given.count(s) > 1}):
        problems.append(
            Problem("interconnect.tenants", f"service SID {to_text(sid)} is given twice")
        )
    low = ADDRESS_BITS - fmt.block_bits - 2 * fmt.usid_bits
    used = {(sid >> low) & ((1 << fmt.usid_bits) - 1) for sid in given}
    local = range(fmt.global_limit + 1, 1 << fmt.usid_bits)
    out = []
    free: dict[str, Iterator[int]] = {}
    for a, behavior, sid in wanted:
        if sid is None:
            pool = free.setdefault(a.node, (f for f in local if f not in used))
            function = next(pool, None)
            if function is None:
                problems.append(
                    Problem(
                        f"interconnect.nodes.{a.node}",
                        f"more services than the {len(local)} local {fmt.usid_bits}-bit uSIDs "
                        "of a node; use longer uSIDs",
                    )
                )
                continue
            sid = container(block, fmt, [nodes[a.node].usid, function])
        table = a.table if behavior == "End.DT6" else None
        hop = None
        if behavior == "End.DX6":
            hop = to_text(a.router_address)
        elif behavior == "End.DX4":
            hop = a.router_address4
        out.append(Service(a.node, a.tenant, a.ifname, behavior, sid, table, hop))
    if problems:
        raise SpecError(problems)
    return out


def _checked_route(
    next_hop: dict[str, dict[str, str]], points: list[str], where: list[str]
) -> tuple[str, ...]:
    """The path through ``points`` (shortest between each two); SpecError naming the first
    point that cannot reach the next."""
    path: list[str] = [points[0]]
    for k in range(len(points) - 1):
        leg = route(next_hop, points[k], points[k + 1])
        if leg is None:
            raise SpecError(
                [
                    Problem(
                        where[k],
                        f"{points[k]!r} cannot reach {points[k + 1]!r} over interconnect.links",
                    )
                ]
            )
        path += leg[1:]
    return tuple(path)


def _waypoints(next_hop: dict[str, dict[str, str]], path: tuple[str, ...]) -> tuple[str, ...]:
    """The fewest intermediate nodes whose shortest legs follow ``path`` exactly (greedy: each
    leg as long as the underlay's shortest path keeps to it)."""
    out: list[str] = []
    i = 0
    while i < len(path) - 1:
        j = len(path) - 1
        while j > i + 1 and route(next_hop, path[i], path[j]) != path[i : j + 1]:
            j -= 1
        if j < len(path) - 1:
            out.append(path[j])
        i = j
    return tuple(out)


def _policy(
    spec: InterconnectSpec, i: int, p: PolicySpec, next_hop: dict[str, dict[str, str]]
) -> PolicyPath:
    base = f"interconnect.policies[{i}]"
    points = [p.source, *p.via, p.to]
    where = [f"{base}.via[{k}]" for k in range(len(p.via))] + [f"{base}.to"]
    primary = _checked_route(next_hop, points, [f"{base}.from", *where[:-1]])
    fallback_via: tuple[str, ...] | None = None
    fallback: tuple[str, ...] | None = None
    if isinstance(p.fallback, list):
        fallback_via = tuple(p.fallback)
        points = [p.source, *p.fallback, p.to]
        fwhere = [f"{base}.from"] + [f"{base}.fallback[{k}]" for k in range(len(p.fallback))]
        fallback = _checked_route(next_hop, points, fwhere)
    elif p.fallback == "auto":
        adj = _adjacency(spec, frozenset(_edges(primary)))
        fallback = route({p.to: next_hops(adj, p.to)}, p.source, p.to)
        if fallback is not None:
            fallback_via = _waypoints(next_hop, fallback)
    return PolicyPath(
        p.name, p.tenant, p.source, p.to, tuple(p.via), primary, fallback_via, fallback
    )


@dataclass(frozen=True)
class _Ctx:
    fmt: Format
    block: int
    nodes: dict[str, Node]
    next_hop: dict[str, dict[str, str]]
    policies: dict[tuple[str, str, str], PolicyPath]


def _segments(ctx: _Ctx, via: tuple[str, ...], sid: int) -> tuple[int, ...]:
    usids = [ctx.nodes[v].usid for v in via]
    return tuple(pack(usids, ctx.fmt, ctx.block, sid))


def _remote_routes(ctx: _Ctx, a: Attachment, b: Attachment, svc: Service) -> list[TenantRoute]:
    """The routes in ``a``'s table towards ``b``'s prefixes of ``svc``'s family."""
    family = 4 if svc.behavior == "End.DX4" else 6
    prefixes = b.prefixes4 if family == 4 else b.prefixes6
    policy = ctx.policies.get((a.tenant, a.node, b.node))
    ways: list[tuple[tuple[int, ...], tuple[str, ...], int, str]] = []
    if policy is None:
        path = route(ctx.next_hop, a.node, b.node)
        assert path is not None  # reachability is checked before
        ways.append(((svc.sid,), path, PRIMARY_METRIC, "shortest"))
    else:
        segs = _segments(ctx, policy.via, svc.sid)
        ways.append((segs, policy.primary, PRIMARY_METRIC, f"policy {policy.name} primary"))
        if policy.fallback is not None and policy.fallback_via is not None:
            segs = _segments(ctx, policy.fallback_via, svc.sid)
            reason = f"policy {policy.name} fallback"
            ways.append((segs, policy.fallback, FALLBACK_METRIC, reason))
    return [
        TenantRoute(a.node, a.table, family, p, f"to-{path[1]}", segs, None, metric, why, path)
        for segs, path, metric, why in ways
        for p in prefixes
    ]


def _tables(
    ctx: _Ctx, atts: list[Attachment], services: list[Service]
) -> tuple[list[TenantRoute], list[Rule]]:
    by_att = {(s.node, s.attachment, s.behavior == "End.DX4"): s for s in services}
    by_tenant: dict[str, list[Attachment]] = {}
    for a in atts:
        by_tenant.setdefault(a.tenant, []).append(a)
    routes: list[TenantRoute] = []
    rules: list[Rule] = []
    for a in atts:
        pref = RULE_PREF_BASE + int(a.ifname[3:])
        rules += [Rule(a.node, f, a.ifname, a.table, pref) for f in (6, 4)]
        if a.ipv6 == "dt6":
            via = to_text(a.router_address)
            routes += [TenantRoute(a.node, a.table, 6, p, a.ifname, via=via) for p in a.prefixes6]
        for b in by_tenant[a.tenant]:
            if b is a:
                continue
            for four in (False, True):
                svc = by_att.get((b.node, b.ifname, four))
                if svc is not None:
                    routes += _remote_routes(ctx, a, b, svc)
    return routes, rules


def _reachable(spec: InterconnectSpec, next_hop: dict[str, dict[str, str]]) -> None:
    problems = []
    for t, tenant in enumerate(spec.tenants):
        first = tenant.attachments[0].node
        for j, att in enumerate(tenant.attachments[1:], start=1):
            if route(next_hop, first, att.node) is None:
                problems.append(
                    Problem(
                        f"interconnect.tenants[{t}].attachments[{j}].node",
                        f"{att.node!r} cannot reach {first!r} (attachments[0]) over "
                        "interconnect.links",
                    )
                )
    if problems:
        raise SpecError(problems)


def plan_interconnect(spec: InterconnectSpec) -> InterconnectPlan:
    """The interconnect's SRv6 plan; SpecError (naming the field and the numbers) when the
    block cannot hold it, a SID or prefix collides, or a policy or tenant cannot be routed."""
    fmt, block = _format(spec)
    base6, _ = _link_space(spec, 0)
    if found := _underlay_overlaps(spec):
        raise SpecError(found)
    usids = _node_usids(spec, fmt)
    nodes = {
        n.name: Node(n.name, n.role, u, container(block, fmt, [u]))
        for n, u in zip(spec.nodes, usids, strict=True)
    }
    links = tuple(
        Link(k.a, k.b, base6 + 2 * i, base6 + 2 * i + 1) for i, k in enumerate(spec.links)
    )
    adj = _adjacency(spec, frozenset())
    next_hop = {n: next_hops(adj, n) for n in nodes}
    _reachable(spec, next_hop)
    policies = [_policy(spec, i, p, next_hop) for i, p in enumerate(spec.policies)]
    atts = _attachments(spec)
    services = _services(spec, fmt, block, nodes, atts)
    ctx = _Ctx(fmt, block, nodes, next_hop, {(p.tenant, p.source, p.to): p for p in policies})
    routes, rules = _tables(ctx, atts, services)
    return InterconnectPlan(
        fmt,
        block,
        tuple(nodes.values()),
        links,
        tuple(atts),
        tuple(services),
        tuple(routes),
        tuple(rules),
        tuple(policies),
        next_hop,
    )
