"""The spraying transport on the SRv6 path programs in the packet engine: every packet's route
is its EV's program, a failure is survived by the endpoints alone (no reroute), the EVs they
withdraw are the failover set, and the ECMP case changes its routes only after reconvergence.

The failure runs use a k=4 fat tree (16 hosts, 4 paths between pods), one spine-core link
down mid-run::

    core   c0  c1  c2  c3
           |x  (c0 - spine 0 of pod 0 fails)
    spine  s0 s1 | s2 s3 | ...
    leaf   l0 l1 | l2 l3 | ...
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from srv6_fabrics import SHAPES, topology
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.fabric.topology import Topology
from clusterloom.sim.failures import Failure as SimFailure
from clusterloom.sim.packet.engine import DATA, Packet, PacketConfig, PacketSim
from clusterloom.sim.packet.fabrics import fat_tree
from clusterloom.sim.packet.run import PacketResult, run_packets
from clusterloom.sim.paths import connection_hash
from clusterloom.sim.traffic import Traffic, permutation
from clusterloom.srv6 import AddressPlan, plan_addresses, programs_for
from clusterloom.srv6.failover import Failure, host_failover
from clusterloom.srv6.programs import hops_of
from clusterloom.srv6.simulate import (
    ProgramRoutes,
    compare_packets,
    notified,
    retired_evs,
)
from clusterloom.units import PS_PER_S, gbps, tx_ps, us

EVS = 16
FAIL_PS = us(20)


def _nodes(t: Topology, route: tuple[int, ...]) -> list[int]:
    """The nodes a route of directed links visits (2i: link i upward, 2i+1: downward)."""
    lo, hi = t.link_src.tolist(), t.link_dst.tolist()
    way = []
    for d in route:
        a, b = (lo[d // 2], hi[d // 2]) if d % 2 == 0 else (hi[d // 2], lo[d // 2])
        if way:
            assert way[-1] == a, f"route {route} is not contiguous at {d}"
        else:
            way.append(a)
        way.append(b)
    return way


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SHAPES), st.data())
def test_each_route_is_its_programs_hops(
    shape: tuple[int, int, int, int], data: st.DataObject
) -> None:
    t = topology(shape)
    plan = plan_addresses(t)
    hosts = t.plan.hosts
    src = data.draw(st.integers(0, hosts - 1))
    dst = data.draw(st.integers(0, hosts - 2).map(lambda d: d + (d >= src)))
    evs = data.draw(st.integers(1, 24))
    ev = data.draw(st.integers(0, evs - 1))
    port = ev % plan.host_ports
    (route,) = ProgramRoutes(plan, evs)(np.array([[src, dst, port, ev]]))
    assert route is not None
    pr = programs_for(plan, src, port, evs)
    row = int(np.searchsorted(pr.dst, dst))
    hops = [h for h in hops_of(pr)[row, ev // plan.host_ports].tolist() if h >= 0]
    assert _nodes(t, route) == [src, *hops, dst]
    # the first and last links are the NIC ports' own
    assert route[0] == 2 * plan.nic_link[src, port]
    assert route[-1] == 2 * plan.nic_link[dst, port] + 1


def test_a_key_without_a_program_has_no_route() -> None:
    plan = plan_addresses(topology(SHAPES[2]))  # 2 planes: EV i rides port i % 2
    routes = ProgramRoutes(plan, 8)
    keys = np.array([[0, 1, 1, 2], [0, 1, 0, 8], [3, 3, 0, 0], [0, 1, 0, 2]])
    out = routes(keys)
    assert out[:3] == [None, None, None]  # wrong port for the EV, EV out of range, to itself
    assert out[3] is not None


class Recorder:
    """Every routed packet (time, kind, flow, src, dst, ev, route) and every event."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int, int, int, int, int, tuple[int, ...]]] = []
        self.events: list[tuple[int, int, str, int, int]] = []

    def packet(self, now: int, where: str, host: int, pkt: Packet) -> None:
        return

    def event(self, now: int, flow: int, what: str, a: int = 0, b: int = 0) -> None:
        self.events.append((now, flow, what, a, b))

    def routed(self, pkt: Packet) -> None:
        self.sent.append((pkt.sent_ps, pkt.kind, pkt.flow, pkt.src, pkt.dst, pkt.ev, pkt.route))


@cache
def _k4() -> tuple[Topology, AddressPlan, Traffic, SimFailure]:
    t = fat_tree(4)
    plan = plan_addresses(t)
    traffic = permutation(t.plan.hosts, 1_000_000, seed=1)
    # the spine-core link that roce-ecmp's first queue pair hashes onto (so RoCE is hit too)
    src, dst = int(traffic.src[0]), int(traffic.dst[0])
    ev = int(connection_hash(np.array([src]), np.array([dst]), np.array([0]), 0)[0])
    path = PacketSim(t).path(src, dst, 0, ev & 0xFFFFFFFF) or ()
    link = next(d // 2 for d in path if t.link_tier[d // 2] == 3)
    f = SimFailure(f"link:{link}", np.array([link]), FAIL_PS, None)
    return t, plan, traffic, f


def _run(
    *, programs: bool, told: bool, ecmp: bool = False, reroute_ps: int = PS_PER_S
) -> tuple[PacketResult, Recorder]:
    t, plan, traffic, f = _k4()
    rec = Recorder()
    r = run_packets(
        t,
        traffic,
        "mrc-spray",
        (f,),
        config=PacketConfig(reroute_ps=reroute_ps),
        options={"evs": EVS, "ecmp": int(ecmp)},
        tracer=rec,
        source_routes=ProgramRoutes(plan, EVS) if programs else None,
        actions=[notified(plan, f, EVS)] if told else (),
        max_time_ps=us(5_000),
    )
    return r, rec


def _dead(route: tuple[int, ...], link: int) -> bool:
    return 2 * link in route or 2 * link + 1 in route


def test_every_data_packet_rides_its_evs_program_and_the_failover_is_told() -> None:
    """With the programs, each data packet's route is exactly its EV's program (``hops_of``);
    told of the failure, each connection withdraws exactly the failover set (both directions,
    and that is the set of EVs whose route crosses the link); from the failure plus one base
    RTT no data packet is routed onto the dead link, and every flow completes."""
    _, plan, traffic, f = _k4()
    r, rec = _run(programs=True, told=True)
    assert r.finished == len(traffic)
    routes = ProgramRoutes(plan, EVS)
    link = int(f.links[0])
    base = min(flow for _, _, flow, *_ in rec.sent)
    data = [s for s in rec.sent if s[1] == DATA]
    keys = np.array([[src, dst, ev % plan.host_ports, ev] for _, _, _, src, dst, ev, _ in data])
    assert [s[6] for s in data] == routes(keys)
    denied: dict[int, set[int]] = {}
    for _, flow, what, _, ev in rec.events:
        if what == "ev-deny":
            denied.setdefault(flow - base, set()).add(ev)
    failures = [Failure("link", link)]
    hit = 0
    for i, (src, dst) in enumerate(zip(traffic.src.tolist(), traffic.dst.tolist(), strict=True)):
        told = set(retired_evs(plan, failures, EVS, src, dst))
        fwd = set(host_failover(plan, src, failures, EVS).retired_evs(dst))
        back = set(host_failover(plan, dst, failures, EVS).retired_evs(src))
        crossing = {
            ev
            for ev in range(EVS)
            if _dead(routes(np.array([[src, dst, ev % plan.host_ports, ev]]))[0] or (), link)
        }
        assert told == fwd | back == crossing
        assert denied.get(i, set()) == told
        hit += bool(told)
    assert hit > 0  # the failure touches some connections
    # the longest base RTT (a connection's, which times its notification): 6 links of 1 us
    # each way, a full packet and an ACK serialized at 100 Gb/s on each
    rtt = 2 * 6 * us(1) + 6 * (tx_ps(4096 + 64, gbps(100)) + tx_ps(64, gbps(100)))
    # (at the notification's own picosecond, events scheduled before it still run first)
    late = [s for s in rec.sent if s[0] > FAIL_PS + rtt and _dead(s[6], link)]
    assert not late  # no packet at all: data, ACK or probe
    assert any(_dead(s[6], link) for s in data if s[0] < FAIL_PS)  # it carried traffic


def test_learned_failover_stops_using_an_ev_once_it_saw_it_fail() -> None:
    """Not told, the sender learns (loss seen through later ACKs or a timeout marks the EV
    down); after an EV through the dead link is marked down, no data packet of that
    connection is routed on it (only probes), no route changed, and every flow completes."""
    _, _, traffic, f = _k4()
    r, rec = _run(programs=True, told=False)
    assert r.finished == len(traffic)
    link = int(f.links[0])
    down: dict[tuple[int, int], int] = {}
    for now, flow, what, _, ev in rec.events:
        if what == "ev-down":
            down.setdefault((flow, ev), now)
    late = [
        s
        for s in rec.sent
        if s[1] == DATA and _dead(s[6], link) and s[0] > down.get((s[2], s[5]), 1 << 62)
    ]
    assert down and not late
    dead_evs = {(s[2], s[5]) for s in rec.sent if s[1] == DATA and _dead(s[6], link)}
    assert dead_evs <= set(down)  # every EV that carried data onto the link was learned dead


def test_ecmp_spraying_reroutes_only_after_reconvergence() -> None:
    """Hashed hop by hop, packets keep being routed onto the dead link (data until the sender
    learns, then the probes of the EVs marked down) until ``reroute_ps`` after the failure and
    never after it; an EV marked down comes back (a probe answered) only once the routing view
    has changed."""
    _, _, traffic, f = _k4()
    reroute = us(40)  # shorter than the run (about 120 us), so the reroute happens in it
    r, rec = _run(programs=False, told=False, ecmp=True, reroute_ps=reroute)
    assert r.finished == len(traffic)
    link = int(f.links[0])
    on_dead = [s[0] for s in rec.sent if _dead(s[6], link)]
    assert any(FAIL_PS + reroute // 2 < x < FAIL_PS + reroute for x in on_dead)
    assert not [x for x in on_dead if x >= FAIL_PS + reroute]
    downs = [now for now, _, what, _, _ in rec.events if what == "ev-down"]
    ups = [now for now, _, what, _, _ in rec.events if what == "ev-up"]
    assert downs and ups and min(ups) >= FAIL_PS + reroute


def test_srv6_failover_completes_no_later_than_ecmp_with_one_second_reconvergence() -> None:
    """The physical reason: with a 1 s reconvergence the ECMP runs (milliseconds long) never
    see the routing view change, so every ECMP path through the dead link stays a black hole
    for the whole run. The sprayer on ECMP can only learn its dead EVs (a timeout or losses
    seen through later ACKs, at least an RTT and up to ``rto_us`` later, losing what it sends
    meanwhile), and its hashed EVs load the paths unevenly; the programs spread each pair's
    EVs evenly over the paths and the told endpoint stops after one RTT. RoCE on ECMP waits
    the full second on a dead path and gives up first (``retries`` timeouts)."""
    _, plan, traffic, f = _k4()
    cases = {
        c.case: c
        for c in compare_packets(
            plan, traffic, f, reroute_ps=PS_PER_S, evs=EVS, max_time_ps=us(20_000)
        )
    }
    srv6 = cases["srv6 spray, notified"]
    assert srv6.finished == srv6.flows and srv6.completion_ps is not None
    for other in ("ecmp spray, reconverge", "roce-ecmp, reconverge", "srv6 spray, learned"):
        c = cases[other]
        assert c.completion_ps is None or srv6.completion_ps <= c.completion_ps, other
    assert cases["roce-ecmp, reconverge"].completion_ps is None  # it gave up on the dead path


def test_the_command_prints_every_case_and_refuses_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["srv6", "failover-sim", "-e", "fat-tree-k16", "--hosts", "16", "--evs", "16"]
    run = [*args, "--size", "200KB", "--engine", "packet", "--fail", "link:1024@20us"]
    ok = runner.invoke(app, [*run, "-o", str(tmp_path / "a")])
    assert ok.exit_code == 0, ok.output
    # one row per case of the packet engine, every flow done (an 80-column table wraps names)
    assert ok.output.count("│ packet │") == 4 and ok.output.count("16/16") == 4
    # -o: the same cases as data and as a page, byte for byte again on a second run
    doc = json.loads((tmp_path / "a" / "failover.json").read_text())
    assert [c["finished"] for c in doc["cases"]] == [16] * 4
    assert doc["failure"] == "link:1024@20us" and doc["hosts"] == 16
    assert all(c["completion_ps"] > 20_000_000 for c in doc["cases"])  # after the failure
    page = (tmp_path / "a" / "failover.html").read_text()
    assert page.count("<tr><td>packet</td>") == 4
    assert runner.invoke(app, [*run, "-o", str(tmp_path / "b")]).exit_code == 0
    for name in ("failover.json", "failover.html"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    bad = runner.invoke(
        app, [*args[:4], "--hosts", "1", "--evs", "300", "--engine", "x", "--fail", "link:1@0*0.5"]
    )
    assert bad.exit_code == 2
    lines = bad.output.strip().splitlines()
    assert [line.split(":")[1].strip() for line in lines] == ["--hosts", "--evs", "--engine"]
    gray = runner.invoke(app, [*args, "--fail", "link:1@0*0.5"])
    assert gray.exit_code == 2 and "gray failure" in gray.output
    missing = runner.invoke(app, args)
    assert missing.exit_code == 2 and "--fail" in missing.output


def test_the_table_shows_a_dash_for_what_an_engine_does_not_measure() -> None:
    from clusterloom.srv6.simulate import COLUMNS, CaseResult, table_rows

    flow = CaseResult("flow", "roce-ecmp, reconverge", 4, 3, None, 2e6, 3e6, None, None, None)
    (row,) = table_rows([flow])
    assert len(row) == len(COLUMNS)
    assert row[2:4] == ("3/4", "unfinished") and row[6:] == ("-", "-", "-")


def test_a_sprayer_with_more_evs_than_the_table_routes_is_refused() -> None:
    import pytest

    from clusterloom.sim.packet.engine import PacketSimError

    t, plan, traffic, _ = _k4()
    with pytest.raises(PacketSimError, match="evs 16 exceeds the 8 EVs routed"):
        run_packets(
            t, traffic, "mrc-spray", options={"evs": 16}, source_routes=ProgramRoutes(plan, 8)
        )
