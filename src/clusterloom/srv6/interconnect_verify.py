"""The interconnect's proof on the kernel: two tenants, two edge nodes and a WAN node as
network namespaces (:mod:`.lab`), one more namespace per attachment for the tenant's router
(``ce-TENANT-NODE``), the rendered iproute2 files applied, UDP probes sent from each router
to every prefix of every other attachment, captured at every ingress.

The lab (:data:`LAB_INTERCONNECT`): a triangle ``edge1 - wan1 - edge2`` plus ``edge1 - edge2``.
Tenants ``blue`` and ``red`` use the *same* IPv6 prefixes at both edges (their tables keep
them apart): blue decapsulates with End.DT6 in its table at both edges and has an IPv4 prefix
at ``edge2`` (End.DX4); red uses End.DX6 at ``edge2`` and has an IPv4 prefix at ``edge1``.
Policy ``blue-wan`` steers blue from edge1 to edge2 through wan1; its fallback (computed:
link-disjoint) is the direct link.

Checked for every probe against the plan (:func:`~.interconnect_check.walk`): the routers and
nodes that see it and, at each, the destination and Segments Left the plan predicts; that it
arrives (decapsulated: an IPv6 probe shows no SRH and its inner destination) at exactly the
router the plan's tables deliver it to, and at no other router (a prefix of another tenant is
never delivered). Then the primary's first link is set down at its far end: the headend's
route loses its carrier (``linkdown``) and the fallback, metric 200, carries the policy's
probes, hop by hop as planned, while wan1 sees none of them. A failure further along the
primary is invisible to the headend without a control plane (BFD, a PCE): not checked here.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from clusterloom.spec import parse_spec
from clusterloom.srv6.encoding import to_text
from clusterloom.srv6.interconnect import Attachment, InterconnectPlan, plan_interconnect
from clusterloom.srv6.interconnect_check import delivered_to, isolation_findings, table_of, walk
from clusterloom.srv6.interconnect_render import render_node
from clusterloom.srv6.lab import Lab, LabError, Seen, can_make_namespaces, inside, run, sweep
from clusterloom.srv6.verify import LAB_SPEC, Report

LAB_INTERCONNECT = """\
interconnect:
  nodes:
    - {name: edge1, role: edge}
    - {name: edge2, role: dc-edge}
    - {name: wan1, role: wan}
  links:
    - {a: edge1, b: wan1}
    - {a: wan1, b: edge2}
    - {a: edge1, b: edge2}
  tenants:
    - name: blue
      attachments:
        - {node: edge1, prefixes: ["2001:db8:1::/48"]}
        - {node: edge2, prefixes: ["2001:db8:2::/48", "203.0.113.0/24"]}
    - name: red
      attachments:
        - {node: edge1, prefixes: ["2001:db8:1::/48", "198.51.100.0/24"]}
        - {node: edge2, prefixes: ["2001:db8:2::/48"], ipv6: dx6}
  policies:
    - {name: blue-wan, tenant: blue, from: edge1, to: edge2, via: [wan1]}
"""
CE_IF = "ce"
PORT = 9
CARRIER_WAIT = 3.0


def lab_plan() -> InterconnectPlan:
    spec = parse_spec(LAB_SPEC + LAB_INTERCONNECT, source="srv6 interconnect lab")
    assert spec.interconnect is not None
    return plan_interconnect(spec.interconnect)


def ce_name(a: Attachment) -> str:
    return f"ce-{a.tenant}-{a.node}"


def host_of(prefix: str) -> str:
    """The router's address in ``prefix``: its first host (on the router's loopback)."""
    return str(ipaddress.ip_network(prefix).network_address + 1)


def ce_lines(a: Attachment) -> Iterator[str]:
    """A tenant router: its link addresses, an address in each prefix, default routes."""
    yield f"ip -6 addr add {to_text(a.router_address)}/127 dev {CE_IF}"
    yield f"ip -4 addr add {a.router_address4}/31 dev {CE_IF}"
    for p in a.prefixes6 + a.prefixes4:
        bits = 128 if ":" in p else 32
        yield f"ip -{6 if bits == 128 else 4} addr add {host_of(p)}/{bits} dev lo"
    yield f"ip -6 route add default via {to_text(a.node_address)} dev {CE_IF}"
    yield f"ip -4 route add default via {a.node_address4} dev {CE_IF}"


def apply(lab: Lab, node: str, text: str) -> None:
    """A rendered file in ``node``: ``sysctl`` lines, then the ``ip -4`` lines as one batch,
    then the ``ip -6`` lines (End.DX4 names an IPv4 next hop); LabError naming a bad line."""
    ns = lab.namespace(node)
    batches: dict[str, list[str]] = {"-4": [], "-6": []}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("sysctl "):
            run(["ip", "netns", "exec", ns, *line.split()])
        elif line[:6] in ("ip -4 ", "ip -6 "):
            batches[line[3:5]].append(line[6:])
        else:
            raise LabError(f"{node}: cannot apply {line!r}")
    for family, lines in batches.items():
        if lines:
            run(["ip", family, "-n", ns, "-batch", "-"], "\n".join(lines) + "\n")


def _build(lab: Lab, plan: InterconnectPlan) -> None:
    lab.add_nodes([n.name for n in plan.nodes] + [ce_name(a) for a in plan.attachments])
    lab.add_links(
        [(k.a, k.ifname(k.a), k.b, k.ifname(k.b)) for k in plan.links]
        + [(a.node, a.ifname, ce_name(a), CE_IF) for a in plan.attachments]
    )
    for n in plan.nodes:
        apply(lab, n.name, render_node(plan, n.name))
    for a in plan.attachments:
        apply(lab, ce_name(a), "\n".join(ce_lines(a)) + "\n")
    for k in plan.links:
        lab.capture(k.a, k.ifname(k.a))
        lab.capture(k.b, k.ifname(k.b))
    for a in plan.attachments:
        lab.capture(a.node, a.ifname)
        lab.capture(ce_name(a), CE_IF)


@dataclass(frozen=True)
class Probe:
    tag: bytes
    source: Attachment
    target: str
    #: where the plan delivers it (None: nowhere) and what each ingress sees
    expect: Attachment | None
    hops: frozenset[tuple[str, int, int | None]]


def _expect(
    plan: InterconnectPlan, a: Attachment, target: str, down: set[str]
) -> tuple[Attachment | None, frozenset[tuple[str, int, int | None]]]:
    """The plan's answer for a probe from ``a``'s router to ``target``: the router it reaches
    and the (node, destination, Segments Left) each ingress sees. Routes leaving by an
    interface in ``down`` (``NODE:IF``) are skipped, as ``ignore_routes_with_linkdown`` does."""
    address = ipaddress.ip_address(target)
    six = address.version == 6
    table = table_of(plan, a, address.version)
    routes = [
        r
        for r in plan.routes
        if (r.node, r.table, r.family) == (a.node, table, address.version)
        and address in ipaddress.ip_network(r.prefix)
        and f"{r.node}:{r.dev}" not in down
    ]
    inner = int(address) if six else 0
    seen: set[tuple[str, int, int | None]] = {(a.node, inner, None)} if six else set()
    if not routes:
        return None, frozenset(seen)
    r = min(routes, key=lambda r: r.metric)
    hops, svc = walk(plan, a.node, r.segments)
    seen |= {(h.node, h.destination, h.segments_left) for h in hops}
    b = None if svc is None else delivered_to(plan, r, svc)
    if b is not None and six:
        seen.add((ce_name(b), inner, None))
    return b, frozenset(seen)


def _probes(plan: InterconnectPlan, tag: str, down: set[str]) -> list[Probe]:
    """From every router to the first host of every prefix at every other node."""
    out: list[Probe] = []
    for a in plan.attachments:
        for b in plan.attachments:
            if b.node == a.node:
                continue
            for p in b.prefixes6 + b.prefixes4:
                target = host_of(p)
                if any(q.source is a and q.target == target for q in out):
                    continue  # another tenant's router with the same prefix
                expect, hops = _expect(plan, a, target, down)
                out.append(Probe(f"{tag}{len(out):03d}".encode(), a, target, expect, hops))
    return out


def _source(a: Attachment, target: str) -> str:
    if ":" in target:
        return host_of(a.prefixes6[0]) if a.prefixes6 else to_text(a.router_address)
    return host_of(a.prefixes4[0]) if a.prefixes4 else a.router_address4


def _socket(lab: Lab, node: str, six: bool) -> socket.socket:
    with inside(lab.namespace(node)):
        return socket.socket(socket.AF_INET6 if six else socket.AF_INET, socket.SOCK_DGRAM)


def _send(
    lab: Lab, plan: InterconnectPlan, probes: list[Probe]
) -> tuple[dict[bytes, list[Seen]], dict[bytes, set[str]]]:
    """Send every probe; what each ingress captured and which routers received it."""
    receivers = []
    for a in plan.attachments:
        for six, anywhere in ((True, "::"), (False, "0.0.0.0")):
            s = _socket(lab, ce_name(a), six)
            if six:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.bind((anywhere, PORT))
            s.setblocking(False)
            receivers.append((ce_name(a), s))
    lab.drain()
    try:
        for p in probes:
            s = _socket(lab, ce_name(p.source), ":" in p.target)
            with contextlib.closing(s):
                s.bind((_source(p.source, p.target), 0))
                s.sendto(b"clusterloom-interconnect " + p.tag, (p.target, PORT))
            time.sleep(0.002)
        time.sleep(0.1)
        got: dict[bytes, set[str]] = {p.tag: set() for p in probes}
        for name, s in receivers:
            with contextlib.suppress(BlockingIOError):
                while True:
                    got.setdefault(s.recv(2048).rsplit(b" ", 1)[-1], set()).add(name)
    finally:
        for _, s in receivers:
            s.close()
    seen: dict[bytes, list[Seen]] = {p.tag: [] for p in probes}
    for frame in lab.drain():
        for tag in seen:
            if frame.frame.endswith(b" " + tag) and not frame.outgoing:
                seen[tag].append(frame)
    return seen, got


def _check(
    probes: list[Probe], seen: dict[bytes, list[Seen]], got: dict[bytes, set[str]], report: Report
) -> None:
    for p in probes:
        what = f"{ce_name(p.source)} -> {p.target}"
        hops = {
            (s.node, int.from_bytes(s.destination, "big"), s.segments_left) for s in seen[p.tag]
        }
        shown = ", ".join(f"{n}: {to_text(d)} SL {sl}" for n, d, sl in sorted(hops, key=str))
        ok = hops == p.hops and len(seen[p.tag]) == len(p.hops)
        report.check(ok, f"{what}: {len(seen[p.tag])} ingress captures as planned ({shown})")
        want = set() if p.expect is None else {ce_name(p.expect)}
        report.check(
            got[p.tag] == want,
            f"{what}: received by {sorted(got[p.tag]) or 'none'}, planned {sorted(want) or 'none'}",
        )
        if p.expect is not None:
            report.check(
                p.expect.tenant == p.source.tenant, f"{what}: stays in tenant {p.source.tenant}"
            )


def _linkdown(lab: Lab, node: str, table: int, ifname: str) -> tuple[list[str], list[str], float]:
    """Wait (up to :data:`CARRIER_WAIT` s) until every IPv6 route of ``table`` by ``ifname``
    is marked ``linkdown``: the kernel's link watch reports a carrier change up to a second
    late. IPv4 routes show no such flag on this kernel; the probes show they give way too."""
    start = time.perf_counter()
    while True:
        shown = lab.ip(node, "-6", "route", "show", "table", str(table))
        lines = [x for x in shown.splitlines() if f"dev {ifname} " in x]
        marked = [x for x in lines if "linkdown" in x]
        took = time.perf_counter() - start
        if (lines and marked == lines) or took > CARRIER_WAIT:
            return lines, marked, took
        time.sleep(0.02)


def _fail_primary(
    lab: Lab, plan: InterconnectPlan, report: Report, say: Callable[[str], None]
) -> None:
    """Set the first link of each policy's primary down at its far end; check the headend's
    route is marked linkdown and the policy's probes take the fallback, hop by hop."""
    for policy in plan.policies:
        head, far = policy.primary[0], policy.primary[1]
        link = plan.link_between(head, far)
        lab.ip(far, "link", "set", link.ifname(far), "down")
        say(f"policy {policy.name}: link {head} ~ {far} set down at {far} {link.ifname(far)}")
        number = next(
            a.table for a in plan.attachments if (a.tenant, a.node) == (policy.tenant, head)
        )
        lines, marked, took = _linkdown(lab, head, number, link.ifname(head))
        report.check(
            bool(lines) and marked == lines,
            f"{head} table {number}: {len(marked)} of {len(lines)} IPv6 routes by "
            f"{link.ifname(head)} marked linkdown after {took * 1e3:.0f} ms",
        )
        down = {f"{head}:{link.ifname(head)}"}
        probes = [
            p
            for p in _probes(plan, "f", down)
            if (p.source.tenant, p.source.node) == (policy.tenant, head)
            and p.expect is not None
            and p.expect.node == policy.to
        ]
        report.check(bool(probes), f"policy {policy.name}: {len(probes)} probes after the failure")
        seen, got = _send(lab, plan, probes)
        _check(probes, seen, got, report)
        for p in probes:
            crossed = {s.node for s in seen[p.tag]}
            report.check(far not in crossed, f"{p.tag.decode()} takes the fallback, not {far}")
        lab.ip(far, "link", "set", link.ifname(far), "up")


def verify_interconnect(say: Callable[[str], None] = lambda _: None) -> Report:
    """Build the interconnect lab, check every probe hop by hop and its delivery, fail each
    policy's primary link and check its fallback; always delete the namespaces. LabError
    (exit 2) when namespaces cannot be made here."""
    why = can_make_namespaces()
    if why is not None:
        raise LabError(why)
    for stale in sweep():
        say(f"deleted stale namespace {stale}")
    plan = lab_plan()
    report = Report()
    for f in isolation_findings(plan):
        report.check(False, f"plan: {f.code}: {f.message}")
    with Lab() as lab:
        _build(lab, plan)
        pairs = len(plan.links) + len(plan.attachments)
        say(f"built {len(lab.names)} namespaces, {pairs} veth pairs")
        probes = _probes(plan, "p", set())
        seen, got = _send(lab, plan, probes)
        _check(probes, seen, got, report)
        lost = sum(p.expect is None for p in probes)
        say(f"{len(probes)} probes checked hop by hop, {lost} to other tenants' prefixes lost")
        _fail_primary(lab, plan, report, say)
    return report
