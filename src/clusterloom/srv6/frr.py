"""An FRR configuration per switch for the same intent as the iproute2 file: interfaces and
their addresses, the loopback, one static route per next hop of each locator route (FRR
installs several as ECMP) and the switch's SRv6 locator.

Checked with FRR 8.4 (Debian 12) ``vtysh --dryrun``, which parses every line. FRR 8.4 has no
static SRv6 SIDs (no ``static-sids``, no ``segments`` on a static route, no ``block-len`` /
``node-len`` / ``behavior usid`` on a locator): the End with NEXT-C-SID stays in the iproute2
file and is named in a comment here.
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterloom.fabric.topology import Role
from clusterloom.srv6.encoding import to_text
from clusterloom.srv6.render import Wiring


def _routes(w: Wiring, node: int) -> list[tuple[int, int, str, str]]:
    t, plan = w.plan.topology, w.plan
    out: list[tuple[int, int, str, str]] = []
    for link in w.downlinks(node).tolist():
        below = int(t.link_src[link])
        hop = to_text(plan.link_address(link, False)), w.ifname(link, True)
        if int(t.node_role[below]) == Role.HOST:
            sid = plan.nic_sid(below, int(t.link_src_port[link]))
            out.append((sid, plan.nic_bits, *hop))
        else:
            out.append((*w.locator(below), *hop))
    for link in w.uplinks(node).tolist():
        hop = to_text(plan.link_address(link, True)), w.ifname(link, False)
        out.append((*w.locator(int(t.link_dst[link])), *hop))
        block = plan.block(int(t.node_plane[node]))
        out.append((block, plan.fmt.block_bits, *hop))
    return sorted(out)


def frr_lines(w: Wiring, node: int) -> Iterator[str]:
    """The FRR configuration of switch ``node``, in a fixed order."""
    plan, fmt = w.plan, w.plan.fmt
    name = w.name(node)
    locator, bits = w.locator(node)
    sid, sid_bits = w.end_sid(node)
    yield "frr defaults datacenter"
    yield f"hostname {name}"
    yield f"! End with NEXT-C-SID at {to_text(sid)}/{sid_bits} (lblen {fmt.block_bits} nflen "
    yield f"! {fmt.usid_bits}): FRR 8.4 has no static SRv6 SID; the iproute2 file installs it"
    yield "!"
    yield "interface lo"
    yield f" ipv6 address {to_text(plan.loopback(node))}/128"
    yield "exit"
    ends = [(link, True) for link in w.downlinks(node).tolist()]
    ends += [(link, False) for link in w.uplinks(node).tolist()]
    for link, upper in sorted(ends, key=lambda e: w.ifname(*e)):
        yield "!"
        yield f"interface {w.ifname(link, upper)}"
        yield f" ipv6 address {to_text(plan.link_address(link, upper))}/127"
        yield "exit"
    yield "!"
    for address, length, via, dev in _routes(w, node):
        yield f"ipv6 route {to_text(address)}/{length} {via} {dev}"
    yield "!"
    yield "segment-routing"
    yield " srv6"
    yield "  locators"
    yield f"   locator {name}"
    yield f"    prefix {to_text(locator)}/{bits} func-bits {fmt.usid_bits}"
    yield "   exit"
    yield "  exit"
    yield " exit"
    yield "exit"


def render_frr(w: Wiring, node: int) -> str:
    return "\n".join(frr_lines(w, node)) + "\n"
