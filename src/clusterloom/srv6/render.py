"""Per-node rendering of the SRv6 plan: Linux iproute2 commands and an FRR configuration for
the same intent. Deterministic text (same plan, same bytes), one file per node.

Switch files: forwarding and SRv6 sysctls, the loopback and link addresses, the node's End SID
(NEXT-C-SID flavour), a route per neighbour's locator over the links to it (several parallel
links: one multipath route), a route per attached NIC SID (leaves) and, on every switch with
uplinks, the plane's block over all uplinks (ECMP) for the locators it has no route for.
Host files: the NIC port addresses, the plane's block through the port's leaf (the
encapsulated packet is routed again on its outer destination), each NIC SID's End.DT6
(decapsulate and deliver through the local table, 255: what this kernel needs to deliver
locally), and the EV programs: one policy rule per EV (``ipproto udp sport BASE+EV``)
selecting table ``TABLE_BASE+EV`` whose route to each destination encapsulates with that EV's
segment list (``encap.red``, no SRH, for one SID; ``encap`` with an SRH for more).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from clusterloom.export.naming import server_name, switch_name
from clusterloom.fabric.topology import ROLE_NAMES, Role
from clusterloom.srv6.encoding import to_text
from clusterloom.srv6.plan import AddressPlan
from clusterloom.srv6.programs import Programs, programs_for

#: UDP source port of EV 0 and routing table of EV 0 on a host
SPORT_BASE = 49152
TABLE_BASE = 1000
#: the routing table End.DT6 looks the inner packet up in: the local table (255) delivers
DT6_TABLE = 255


def sport(ev: int) -> int:
    return SPORT_BASE + ev


@dataclass(frozen=True, eq=False)
class Wiring:
    """Names and links of the nodes, looked up by node id (links sorted by each end once)."""

    plan: AddressPlan
    fabric: str = "backend"

    @cached_property
    def _by_src(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        t = self.plan.topology
        order = np.argsort(t.link_src, kind="stable")
        return order, np.searchsorted(t.link_src[order], np.arange(t.n_nodes + 1))

    @cached_property
    def _by_dst(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        t = self.plan.topology
        order = np.argsort(t.link_dst, kind="stable")
        return order, np.searchsorted(t.link_dst[order], np.arange(t.n_nodes + 1))

    def uplinks(self, node: int) -> NDArray[np.int64]:
        order, start = self._by_src
        return order[start[node] : start[node + 1]]

    def downlinks(self, node: int) -> NDArray[np.int64]:
        order, start = self._by_dst
        return order[start[node] : start[node + 1]]

    def name(self, node: int) -> str:
        t = self.plan.topology
        role = Role(int(t.node_role[node]))
        if role is Role.HOST:
            per = t.plan.hosts_per_node
            return f"{server_name(node // per)}-gpu{node % per}"
        return switch_name(
            self.fabric, int(t.node_plane[node]), ROLE_NAMES[role], int(t.node_index[node])
        )

    def ifname(self, link: int, upper: bool) -> str:
        """The interface of ``link`` at its upper (or lower) end."""
        t = self.plan.topology
        if upper:
            return f"swp{int(t.link_dst_port[link]) + 1}"
        src, port = int(t.link_src[link]), int(t.link_src_port[link])
        if int(t.node_role[src]) == Role.HOST:
            return f"gpu{src % t.plan.hosts_per_node}p{port}"
        return f"swp{port + 1}"

    def locator(self, node: int) -> tuple[int, int]:
        """The locator (address, length) of switch ``node``."""
        t, plan = self.plan.topology, self.plan
        role = Role(int(t.node_role[node]))
        address = plan.locator(int(t.node_plane[node]), role, int(t.node_index[node]))
        return address, plan.locator_bits

    def end_sid(self, node: int) -> tuple[int, int]:
        """The End SID of switch ``node``: its locator (a leaf's: the /NIC length at local 0,
        so that its NIC SIDs stay apart)."""
        address, bits = self.locator(node)
        if int(self.plan.topology.node_role[node]) == Role.LEAF:
            return address, self.plan.nic_bits
        return address, bits


def _multipath(hops: list[tuple[str, str]]) -> str:
    if len(hops) == 1:
        return f"via {hops[0][0]} dev {hops[0][1]}"
    return " ".join(f"nexthop via {a} dev {d}" for a, d in hops)


def _end(w: Wiring, node: int, dev: str) -> str:
    """The End SID route. Its device is a port of the switch: with ``dev lo`` this kernel
    (6.18) executes the End but finds no route for the shifted destination."""
    fmt = w.plan.fmt
    sid, bits = w.end_sid(node)
    return (
        f"ip -6 route add {to_text(sid)}/{bits} encap seg6local action End flavors next-csid "
        f"lblen {fmt.block_bits} nflen {fmt.usid_bits} dev {dev}"
    )


def switch_lines(w: Wiring, node: int) -> Iterator[str]:
    """The iproute2 and sysctl commands of switch ``node``, in a fixed order."""
    t, plan = w.plan.topology, w.plan
    locator, bits = w.locator(node)
    yield f"# {w.name(node)}: locator {to_text(locator)}/{bits}"
    yield "sysctl -q -w net.ipv6.conf.all.forwarding=1 net.ipv6.conf.all.seg6_enabled=1"
    yield f"ip -6 addr add {to_text(plan.loopback(node))}/128 dev lo"
    ups, downs = w.uplinks(node), w.downlinks(node)
    ends = [(link, True) for link in downs.tolist()] + [(link, False) for link in ups.tolist()]
    for link, upper in ends:
        address = to_text(plan.link_address(link, upper))
        yield f"ip -6 addr add {address}/127 dev {w.ifname(link, upper)}"
    yield _end(w, node, w.ifname(*ends[0]))
    routes: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for link in downs.tolist():
        below = int(t.link_src[link])
        hop = (to_text(plan.link_address(link, False)), w.ifname(link, True))
        if int(t.node_role[below]) == Role.HOST:
            port = int(t.link_src_port[link])
            routes.setdefault((plan.nic_sid(below, port), plan.nic_bits), []).append(hop)
        else:
            routes.setdefault(w.locator(below), []).append(hop)
    uphops = []
    for link in ups.tolist():
        hop = (to_text(plan.link_address(link, True)), w.ifname(link, False))
        routes.setdefault(w.locator(int(t.link_dst[link])), []).append(hop)
        uphops.append(hop)
    for (prefix, length), nexthops in sorted(routes.items()):
        yield f"ip -6 route add {to_text(prefix)}/{length} {_multipath(nexthops)}"
    if uphops:
        block = plan.block(int(t.node_plane[node]))
        yield f"ip -6 route add {to_text(block)}/{plan.fmt.block_bits} {_multipath(uphops)}"


def host_lines(w: Wiring, host: int, evs: int | None = None) -> Iterator[str]:
    """The commands of host ``host``: addresses, End.DT6 per NIC SID, one rule and table per
    EV whose routes encapsulate with that EV's segment list."""
    plan = w.plan
    yield f"# {w.name(host)}"
    links = plan.nic_link[host].tolist()
    for link in links:
        address = to_text(plan.link_address(link, False))
        yield f"ip -6 addr add {address}/127 dev {w.ifname(link, False)}"
    for port, link in enumerate(links):
        block = to_text(plan.block(port // plan.ports_per_host))
        leaf = to_text(plan.link_address(link, True))
        dev = w.ifname(link, False)
        yield f"ip -6 route add {block}/{plan.fmt.block_bits} via {leaf} dev {dev}"
    for port, link in enumerate(links):
        sid = to_text(plan.nic_sid(host, port))
        yield (
            f"ip -6 route add {sid}/{plan.nic_bits} encap seg6local action End.DT6 "
            f"table {DT6_TABLE} dev {w.ifname(link, False)}"
        )
    for port, link in enumerate(links):
        yield from _program_lines(w, programs_for(plan, host, port, evs), link)


def _program_lines(w: Wiring, pr: Programs, link: int) -> Iterator[str]:
    plan = w.plan
    leaf = to_text(plan.link_address(link, True))
    dev = w.ifname(link, False)
    for m, ev in enumerate(pr.evs.tolist()):
        table = TABLE_BASE + ev
        yield f"ip -6 rule add ipproto udp sport {sport(ev)} table {table} pref {table}"
        for d, dst in enumerate(pr.dst.tolist()):
            target = to_text(plan.link_address(int(plan.nic_link[dst, pr.port]), False))
            segs = ",".join(to_text(s) for s in pr.segments(d, m))
            mode = "encap.red" if "," not in segs else "encap"
            yield (
                f"ip -6 route add {target}/128 encap seg6 mode {mode} segs {segs} "
                f"via {leaf} dev {dev} table {table}"
            )


def render_node(w: Wiring, node: int, evs: int | None = None) -> str:
    """One node's iproute2 file."""
    host = int(w.plan.topology.node_role[node]) == Role.HOST
    lines = host_lines(w, node, evs) if host else switch_lines(w, node)
    return "\n".join(lines) + "\n"
