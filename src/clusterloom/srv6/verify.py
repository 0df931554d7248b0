"""The proof on the kernel: a small design built as namespaces (:mod:`.lab`), the rendered
commands applied, probes sent along chosen programs, every hop's capture checked against the
destination and Segments Left the plan predicts; then a link set down, the endpoints' retired
EVs avoid it (the others still deliver, a retired one no longer does) and no switch route
through another port changed.

The design: 4 hosts with 2 NIC ports on a 2-plane leaf-spine of 4-port switches (per plane 2
leaves, 2 spines, 1 link per leaf-spine pair). Probes: every ordered host pair, the first two
EVs of every port (both spines of the plane), so same-leaf and cross-leaf programs both run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

from clusterloom.fabric.sizing import plan_fabric
from clusterloom.fabric.topology import Role, Topology, generate
from clusterloom.spec import parse_spec
from clusterloom.srv6.encoding import Format, next_csid, to_text
from clusterloom.srv6.failover import Failure, host_failover
from clusterloom.srv6.lab import Lab, LabError, Seen, can_make_namespaces, sweep
from clusterloom.srv6.plan import AddressPlan, PlanOptions, plan_addresses
from clusterloom.srv6.programs import Programs, hops_of, programs_for
from clusterloom.srv6.render import Wiring, render_node, sport

LAB_SPEC = """\
version: 1
name: srv6-lab
compute:
  accelerators: 4
  accelerators_per_node: 1
  scale_up: {domain_size: 1}
  nic: {ports_per_accelerator: 2, port_speed_gbps: 100}
fabrics:
  backend: {family: fat-tree, switch: lab4, tiers: 2, planes: 2}
catalog:
  switches:
    lab4: {vendor: lab, ports: 4, port_speed_gbps: 100, power_w: 100}
"""

#: EVs per connection in the lab (a connection's first ``PROBED_PER_PORT`` of each port run)
LAB_EVS = 8
PROBED_PER_PORT = 2


def lab_topology() -> Topology:
    return generate(plan_fabric(parse_spec(LAB_SPEC, source="srv6 lab"), "backend"))


@dataclass(frozen=True)
class Hop:
    """What the node at the far end of a link should see arriving: destination and SL."""

    node: int
    link: int
    destination: int
    segments_left: int | None


def _link(t: Topology, a: int, b: int) -> list[int]:
    lo, hi = (a, b) if a < b else (b, a)
    return [i for i in range(t.n_links) if int(t.link_src[i]) == lo and int(t.link_dst[i]) == hi]


def predict(w: Wiring, pr: Programs, d: int, m: int) -> list[Hop]:
    """The hops of program ``[d, m]``: at each node's ingress, the destination and Segments
    Left the previous node sent (RFC 8986 End, RFC 9800 NEXT-C-SID, RFC 8754 SRH)."""
    plan, t = w.plan, w.plan.topology
    segs = pr.segments(d, m)
    da, sl = segs[0], (len(segs) - 1 if len(segs) > 1 else None)
    way = [pr.host, *[h for h in hops_of(pr)[d, m].tolist() if h >= 0], int(pr.dst[d])]
    out: list[Hop] = []
    for a, b in pairwise(way):
        if int(t.node_role[a]) != Role.HOST:
            sid, bits = w.end_sid(a)
            if da >> (128 - bits) == sid >> (128 - bits):
                shifted = next_csid(da, plan.fmt)
                if shifted is not None:
                    da = shifted
                elif sl:
                    sl -= 1
                    da = segs[len(segs) - 1 - sl]
        links = (
            _link(t, a, b) if int(t.node_role[a]) != Role.HOST else [int(plan.nic_link[a, pr.port])]
        )
        out.append(Hop(b, links[0], da, sl))
    return out


@dataclass
class Report:
    """What the verification checked; ``problems`` empty when every check held."""

    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str) -> None:
        (self.checked if ok else self.problems).append(what)


def _build(lab: Lab, w: Wiring) -> None:
    t = w.plan.topology
    lab.add_nodes(w.name(n) for n in range(t.n_nodes))
    lab.add_links(
        (
            w.name(int(t.link_src[i])),
            w.ifname(i, False),
            w.name(int(t.link_dst[i])),
            w.ifname(i, True),
        )
        for i in range(t.n_links)
    )
    for n in range(t.n_nodes):
        lab.apply(w.name(n), render_node(w, n, LAB_EVS))
    for i in range(t.n_links):
        lab.capture(w.name(int(t.link_src[i])), w.ifname(i, False))
        lab.capture(w.name(int(t.link_dst[i])), w.ifname(i, True))


def _addr(plan: AddressPlan, host: int, port: int) -> str:
    return to_text(plan.link_address(int(plan.nic_link[host, port]), False))


@dataclass(frozen=True)
class Probe:
    tag: bytes
    programs: Programs
    d: int
    m: int


def _send(lab: Lab, w: Wiring, probes: list[Probe]) -> dict[bytes, list[Seen]]:
    plan = w.plan
    lab.drain()
    for p in probes:
        pr = p.programs
        ev = int(pr.evs[p.m])
        source, target = _addr(plan, pr.host, pr.port), _addr(plan, int(pr.dst[p.d]), pr.port)
        lab.send_udp(w.name(pr.host), source, sport(ev), target, b"clusterloom-srv6 " + p.tag)
        time.sleep(0.002)
    time.sleep(0.1)
    seen: dict[bytes, list[Seen]] = {p.tag: [] for p in probes}
    for s in lab.drain():
        for tag in seen:
            if s.frame.endswith(b" " + tag) and not s.outgoing:
                seen[tag].append(s)
    return seen


def _check_probe(w: Wiring, p: Probe, seen: list[Seen], report: Report) -> None:
    pr = p.programs
    what = f"host {pr.host} port {pr.port} -> host {int(pr.dst[p.d])} EV {int(pr.evs[p.m])}"
    want = {(w.name(h.node), h.destination, h.segments_left) for h in predict(w, pr, p.d, p.m)}
    got = {(s.node, int.from_bytes(s.destination, "big"), s.segments_left) for s in seen}
    ok = got == want and len(seen) == len(want)
    shown = ", ".join(f"{n}: {to_text(a)} SL {sl}" for n, a, sl in sorted(got))
    report.check(ok, f"{what}: {len(seen)} hops seen as predicted ({shown})")


def _probes(plan: AddressPlan, hosts: list[int], tag: str) -> list[Probe]:
    out: list[Probe] = []
    for h in hosts:
        for port in range(plan.host_ports):
            pr = programs_for(plan, h, port, LAB_EVS)
            for d in range(pr.dst.shape[0]):
                for m in range(min(PROBED_PER_PORT, pr.evs.shape[0])):
                    out.append(Probe(f"{tag}{len(out):04d}".encode(), pr, d, m))
    return out


def _routes(lab: Lab, w: Wiring) -> dict[str, list[str]]:
    t = w.plan.topology
    return {
        w.name(n): lab.ip(w.name(n), "-6", "route", "show").splitlines()
        for n in range(t.n_nodes)
        if int(t.node_role[n]) != Role.HOST
    }


def _fail_link(lab: Lab, w: Wiring, report: Report, say: Callable[[str], None]) -> None:
    plan, t = w.plan, w.plan.topology
    link = next(i for i in range(t.n_links) if int(t.link_tier[i]) == 2)  # a leaf-spine link
    upper, ifname = w.name(int(t.link_dst[link])), w.ifname(link, True)
    before = _routes(lab, w)
    lab.ip(upper, "link", "set", ifname, "down")
    say(f"link {link} ({w.name(int(t.link_src[link]))} ~ {upper}) set down at {upper} {ifname}")
    time.sleep(0.05)
    hosts = list(range(t.plan.hosts))
    probes = _probes(plan, hosts, "f")
    failover = {h: host_failover(plan, h, [Failure("link", link)], LAB_EVS) for h in hosts}
    live: list[Probe] = []
    dead: list[Probe] = []
    for p in probes:
        pr = p.programs
        mask = failover[pr.host].retired[pr.port]
        (dead if mask[p.d, p.m] else live).append(p)
    report.check(bool(dead), f"{len(dead)} probed programs cross the failed link and are retired")
    seen = _send(lab, w, live + dead[:1])
    delivered = 0
    for p in live:
        path_links = {h.link for h in predict(w, p.programs, p.d, p.m)}
        report.check(link not in path_links, f"kept program {p.tag.decode()} avoids link {link}")
        _check_probe(w, p, seen[p.tag], report)
        delivered += 1
    if dead:
        last = {s.node for s in seen[dead[0].tag]}
        far = w.name(int(dead[0].programs.dst[dead[0].d]))
        report.check(far not in last, f"a retired EV's probe ({dead[0].tag.decode()}) is lost")
    after = _routes(lab, w)
    for node, lines in before.items():
        keep = [r for r in lines if f"dev {ifname} " not in r + " " or node != upper]
        now = [r for r in after[node] if f"dev {ifname} " not in r + " " or node != upper]
        same = [r.replace(" linkdown", "") for r in now] == [
            r.replace(" linkdown", "") for r in keep
        ]
        report.check(same, f"{node}: no route changed (but those through the downed port)")
    say(f"{delivered} kept programs delivered after the failure, {len(dead)} retired")


def verify(say: Callable[[str], None] = lambda _: None, fmt: Format | None = None) -> Report:
    """Build the lab, check the programs hop by hop, fail a link, check failover; always
    delete the namespaces. LabError (exit 2) when namespaces cannot be made here."""
    why = can_make_namespaces()
    if why is not None:
        raise LabError(why)
    for stale in sweep():
        say(f"deleted stale namespace {stale}")
    plan = plan_addresses(lab_topology(), PlanOptions(fmt=fmt or Format()))
    w = Wiring(plan)
    report = Report()
    with Lab() as lab:
        _build(lab, w)
        say(f"built {len(lab.names)} namespaces, {plan.topology.n_links} veth pairs")
        probes = _probes(plan, list(range(plan.topology.plan.hosts)), "p")
        seen = _send(lab, w, probes)
        for p in probes:
            _check_probe(w, p, seen[p.tag], report)
        say(f"{len(probes)} probes checked hop by hop")
        _fail_link(lab, w, report, say)
    return report


#: the formats the suite proves: one container per program (no SRH), and a /96 block whose
#: 2-uSID containers cannot hold a spine and the NIC SID (an SRH of two SIDs, SL 1 then 0)
FORMATS = (Format(32, 16), Format(96, 16))


def verify_all(say: Callable[[str], None] = lambda _: None) -> Report:
    """:func:`verify` for each of :data:`FORMATS`, one report."""
    total = Report()
    for fmt in FORMATS:
        say(f"format /{fmt.block_bits} block, {fmt.usid_bits}-bit uSIDs")
        r = verify(say, fmt)
        total.checked += [f"/{fmt.block_bits}: {c}" for c in r.checked]
        total.problems += [f"/{fmt.block_bits}: {c}" for c in r.problems]
    return total
