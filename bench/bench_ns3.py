"""C++ reference for the packet-level benchmark: the same case as ``bench_packet.py`` (a random
permutation of 2 MB flows on a k-ary three-tier fat tree, 100 Gb/s, 1 us links, ~4 KB
packets) run in ns-3, a C++ discrete-event simulator, through its Python bindings (cppyy).

ns-3 is not a clusterloom dependency: it is installed by hand, in its own environment::

    python3 -m venv /tmp/venv-ns3
    /tmp/venv-ns3/bin/pip install ns3 -e .     # ns3 3.44 wheel; clusterloom for the permutation
    /tmp/venv-ns3/bin/python bench/bench_ns3.py --k 16 --size 2MB

The transport is ns-3's TCP (NewReno by default, SACK, 4,096-byte segments) from a
BulkSendApplication per host to a PacketSink on its permutation partner; switches are IPv4
routers. Routing (``--ecmp``): ``flow`` (default) is a small fat-tree routing protocol compiled
into the run (C++, below) that picks the up link by a per-switch hash of the 5-tuple, as ECMP
does; ``spray`` picks it per packet. ``global-random`` and ``global-first`` use ns-3's own
global routing (``Ipv4GlobalRouting``, random per-packet ECMP or the first shortest path; it
has no per-flow hash), whose lookup scans a table of every link's /30 and is much slower on
this fabric. Figures printed: wall time of the event loop, events
executed (``Simulator::GetEventCount``), events per second, flow completion times (time of the
last byte at each sink, from the start at t=0, TCP handshake included) and peak RSS.

The event loop runs in slices of simulated time so that progress is printed and a wall-clock
limit (``--limit``) can end a run that does not finish; the rate and the simulated time
reached are then reported.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

# Flow-completion watcher compiled into the simulator process (C++ via cling): counts bytes at
# each sink and stops the simulator when every flow has its bytes, with no Python per packet.
_WATCH_CPP = r"""
#include <cstdint>
#include <vector>
namespace clbench {
struct Watch {
  uint64_t target = 0;
  uint64_t rx = 0;
  int64_t done_ps = -1;
  uint32_t* remaining = nullptr;
  void Rx(ns3::Ptr<const ns3::Packet> p, const ns3::Address&) {
    rx += p->GetSize();
    if (done_ps < 0 && rx >= target) {
      done_ps = ns3::Simulator::Now().GetPicoSeconds();
      if (--*remaining == 0) ns3::Simulator::Stop();
    }
  }
};
struct Recorder {
  std::vector<Watch> w;
  uint32_t remaining;
  Recorder(uint32_t n, uint64_t target) : w(n), remaining(n) {
    for (auto& x : w) { x.target = target; x.remaining = &remaining; }
  }
  void Attach(uint32_t i, ns3::Ptr<ns3::Application> app) {
    app->TraceConnectWithoutContext("Rx", ns3::MakeCallback(&Watch::Rx, &w[i]));
  }
  int64_t Done(uint32_t i) const { return w[i].done_ps; }
  uint64_t Rx(uint32_t i) const { return w[i].rx; }
};

// Fat-tree routing by arithmetic on the destination host's index (host h's address is the
// first of the h-th /30, 10.0.0.0 + 4h + 1): down when the destination is below, else up on
// a next hop picked by a hash of the 5-tuple and the switch (per-flow ECMP) or per packet
// (spray). One lookup is a few integer operations, unlike global routing's table scan.
class FatTreeRouting : public ns3::Ipv4RoutingProtocol {
 public:
  uint32_t role = 0, kh = 1, index = 0, spray = 0;
  uint64_t salt = 0, counter = 0;
  std::vector<uint32_t> up, down;
  ns3::Ptr<ns3::Ipv4> ipv4;

  static uint64_t Mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  uint32_t OutIf(const ns3::Ipv4Header& h, ns3::Ptr<const ns3::Packet> p) {
    uint32_t dst = (h.GetDestination().Get() - 0x0A000000u) >> 2;
    if (role == 0) return 1;
    if (role == 3) return down[dst / (kh * kh)];
    if (role == 1 && dst / kh == index) return down[dst % kh];
    if (role == 2 && dst / (kh * kh) == index / kh) return down[(dst / kh) % kh];
    uint64_t key;
    if (spray) {
      key = salt ^ ++counter;
    } else {
      uint8_t ports[4] = {0, 0, 0, 0};
      if (p && p->GetSize() >= 4) p->CopyData(ports, 4);
      key = salt ^ (uint64_t(h.GetSource().Get()) << 32) ^ h.GetDestination().Get();
      key = Mix(key) ^ (uint64_t(ports[0]) << 24 | uint64_t(ports[1]) << 16 |
                        uint64_t(ports[2]) << 8 | ports[3]) ^ (uint64_t(h.GetProtocol()) << 40);
    }
    return up[Mix(key) % up.size()];
  }
  ns3::Ptr<ns3::Ipv4Route> Route(uint32_t oif, ns3::Ipv4Address dst) {
    auto r = ns3::Create<ns3::Ipv4Route>();
    r->SetDestination(dst);
    r->SetGateway(dst);
    r->SetSource(ipv4->GetAddress(oif, 0).GetLocal());
    r->SetOutputDevice(ipv4->GetNetDevice(oif));
    return r;
  }
  ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet> p, const ns3::Ipv4Header& h,
                                       ns3::Ptr<ns3::NetDevice>,
                                       ns3::Socket::SocketErrno& err) override {
    err = ns3::Socket::ERROR_NOTERROR;
    return Route(OutIf(h, p), h.GetDestination());
  }
  bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& h,
                  ns3::Ptr<const ns3::NetDevice>, const UnicastForwardCallback& ucb,
                  const MulticastForwardCallback&, const LocalDeliverCallback&,
                  const ErrorCallback&) override {
    if (role == 0) return false;
    ucb(Route(OutIf(h, p), h.GetDestination()), p, h);
    return true;
  }
  void NotifyInterfaceUp(uint32_t) override {}
  void NotifyInterfaceDown(uint32_t) override {}
  void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void SetIpv4(ns3::Ptr<ns3::Ipv4> v) override { ipv4 = v; }
  void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper>, ns3::Time::Unit) const override {}
};

FatTreeRouting* InstallFatTree(ns3::Ptr<ns3::Node> n, uint32_t role, uint32_t kh,
                               uint32_t index, uint32_t spray, uint64_t seed) {
  auto r = ns3::CreateObject<FatTreeRouting>();
  r->role = role; r->kh = kh; r->index = index; r->spray = spray;
  r->salt = FatTreeRouting::Mix(seed * 1000003u + n->GetId());
  auto list = ns3::DynamicCast<ns3::Ipv4ListRouting>(
      n->GetObject<ns3::Ipv4>()->GetRoutingProtocol());
  list->AddRoutingProtocol(r, 10);
  return ns3::PeekPointer(r);
}
}
"""


def parse_size(text: str) -> int:
    units = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "B": 1}
    t = text.strip().upper()
    for suffix, mult in units.items():
        if t.endswith(suffix):
            return int(float(t[: -len(suffix)]) * mult)
    return int(t)


def permutation_pairs(n: int, nbytes: int, seed: int) -> list[int]:
    """Destination of each host: clusterloom's permutation when installed, else the same
    algorithm (rejection-sampled derangement on ``numpy.random.default_rng(seed)``)."""
    try:
        from clusterloom.sim.traffic import permutation

        t = permutation(n, nbytes, seed=seed)
        src = [int(x) for x in t.src]
        dst = [int(x) for x in t.dst]
        out = [-1] * n
        for s, d in zip(src, dst, strict=True):
            out[s] = d
        return out
    except ImportError:
        import numpy as np

        rng = np.random.default_rng(seed)
        hosts = np.arange(n)
        while True:
            perm = rng.permutation(n)
            if not np.any(perm == hosts):
                return [int(x) for x in perm]


def fat_tree_links(k: int) -> tuple[int, list[tuple[int, int]]]:
    """Node count and undirected links of the k-ary fat tree, numbered as clusterloom's
    ``fat_tree(k)``: hosts, then edge, aggregation and core switches. Host h is on edge
    h // (k/2); edge e is in pod e // (k/2) and reaches every aggregation switch of its pod;
    aggregation switch j of a pod reaches cores j*(k/2) .. j*(k/2) + k/2 - 1."""
    h = k // 2
    hosts, edges, aggs, cores = k**3 // 4, k * h, k * h, h * h
    e0, a0, c0 = hosts, hosts + edges, hosts + edges + aggs
    links = [(x, e0 + x // h) for x in range(hosts)]
    for pod in range(k):
        for i in range(h):
            for j in range(h):
                links.append((e0 + pod * h + i, a0 + pod * h + j))
    for pod in range(k):
        for j in range(h):
            for m in range(h):
                links.append((a0 + pod * h + j, c0 + j * h + m))
    return hosts + edges + aggs + cores, links


def check_against_clusterloom(k: int, n_nodes: int, links: list[tuple[int, int]]) -> str:
    try:
        from clusterloom.sim.packet.fabrics import fat_tree
    except ImportError:
        return "clusterloom not installed: topology not cross-checked"
    t = fat_tree(k)
    theirs = {tuple(sorted((int(a), int(b)))) for a, b in zip(t.link_src, t.link_dst, strict=True)}
    ours = {tuple(sorted(x)) for x in links}
    if t.n_nodes != n_nodes or theirs != ours:
        raise SystemExit("fat tree differs from clusterloom.sim.packet.fabrics.fat_tree")
    return "topology identical to clusterloom fat_tree(k)"


def install_fat_tree_routing(
    cppyy: object, nodes: object, k: int, links: list[tuple[int, int]], spray: bool, seed: int
) -> None:
    """Give every node a ``FatTreeRouting`` (above) with its up and down interfaces, in the
    order of the links (interface 0 is the loopback, then one per link as created)."""
    h = k // 2
    n_hosts, n_edge = k**3 // 4, k * h
    bounds = (n_hosts, n_hosts + n_edge, n_hosts + 2 * n_edge)

    def role(x: int) -> int:
        return sum(x >= b for b in bounds)

    starts = (0, *bounds)
    n_nodes = bounds[-1] + h * h
    up: list[list[int]] = [[] for _ in range(n_nodes)]
    down: list[list[int]] = [[] for _ in range(n_nodes)]
    n_if = [1] * n_nodes
    for u, v in links:
        for me, other in ((u, v), (v, u)):
            (up if role(other) > role(me) else down)[me].append(n_if[me])
            n_if[me] += 1
    install = cppyy.gbl.clbench.InstallFatTree
    for x in range(n_nodes):
        r = role(x)
        proto = install(nodes.Get(x), r, h, x - starts[r], int(spray), seed)
        for i in up[x]:
            proto.up.push_back(i)
        for i in down[x]:
            proto.down.push_back(i)


def run(a: argparse.Namespace) -> dict[str, object]:
    t_import = time.perf_counter()
    import cppyy
    from ns import ns

    cppyy.cppdef(_WATCH_CPP)
    t_setup = time.perf_counter()

    k, size = a.k, parse_size(a.size)
    n_nodes, links = fat_tree_links(k)
    n_hosts = k**3 // 4
    note = check_against_clusterloom(k, n_nodes, links)
    dst_of = permutation_pairs(n_hosts, size, a.seed)

    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(a.seed + 1)
    cfg = ns.Config.SetDefault
    tcp = ns.TypeId.LookupByName(f"ns3::Tcp{a.tcp}")
    cfg("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(tcp))
    cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(a.mss))
    cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(8 << 20))
    cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(8 << 20))
    cfg("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MicroSeconds(a.min_rto_us)))
    cfg("ns3::TcpSocketBase::ClockGranularity", ns.TimeValue(ns.MicroSeconds(1)))
    cfg("ns3::TcpSocketBase::ReTxThreshold", ns.UintegerValue(a.dupack))
    cfg("ns3::Ipv4GlobalRouting::RandomEcmpRouting", ns.BooleanValue(a.ecmp == "global-random"))

    nodes = ns.NodeContainer()
    nodes.Create(n_nodes)
    ns.InternetStackHelper().Install(nodes)

    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{a.gbps}Gbps"))
    # IP MTU: segment + 20 (IP) + 20 (TCP) + 12 (timestamp option), rounded up.
    p2p.SetDeviceAttribute("Mtu", ns.UintegerValue(a.mss + 104))
    p2p.SetChannelAttribute("Delay", ns.StringValue(f"{a.delay_ns}ns"))
    buf = ns.QueueSizeValue(ns.QueueSize(f"{a.buffer_kib * 1024}B"))
    host_buf = ns.QueueSizeValue(ns.QueueSize(f"{64 << 20}B"))  # host NIC: effectively unbounded
    tch = ns.TrafficControlHelper()
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    host_ip = [None] * n_hosts
    for u, v in links:
        devs = p2p.Install(nodes.Get(u), nodes.Get(v))
        for i in range(2):
            q = devs.Get(i).GetObject[ns.PointToPointNetDevice]().GetQueue()
            q.SetAttribute("MaxSize", host_buf if (u, v)[i] < n_hosts else buf)
        ifs = addr.Assign(devs)
        tch.Uninstall(devs)  # no queue disc: the device's drop-tail queue is the port buffer
        if u < n_hosts:
            host_ip[u] = ifs.GetAddress(0)
        addr.NewNetwork()
    t_routes = time.perf_counter()
    if a.ecmp.startswith("global"):
        ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    else:
        install_fat_tree_routing(cppyy, nodes, k, links, a.ecmp == "spray", a.seed)
    routes_s = time.perf_counter() - t_routes

    rec = cppyy.gbl.clbench.Recorder(n_hosts, size)
    port = 9000
    for s in range(n_hosts):
        d = dst_of[s]
        sink = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo(),
        )
        apps = sink.Install(nodes.Get(d))
        rec.Attach(d, apps.Get(0))
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(host_ip[d], port).ConvertTo()
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(size))
        bulk.SetAttribute("SendSize", ns.UintegerValue(64 * 1024))
        bulk.Install(nodes.Get(s)).Start(ns.Seconds(0))
    setup_s = time.perf_counter() - t_setup
    if a.progress:
        print(
            f"  import {t_setup - t_import:.1f} s, setup {setup_s:.1f} s (routes {routes_s:.1f} s)",
            flush=True,
        )

    sim = ns.Simulator
    ev0 = sim.GetEventCount()
    t0 = time.perf_counter()
    finished, shown = 0, -1.0
    while True:
        sim.Stop(ns.MicroSeconds(a.slice_us))
        sim.Run()
        wall = time.perf_counter() - t0
        finished = n_hosts - int(rec.remaining)
        now_us = sim.Now().GetMicroSeconds()
        ev = sim.GetEventCount() - ev0
        if a.progress and (wall - shown >= 10 or finished == n_hosts):
            shown = wall
            print(
                f"  sim {now_us} us, {finished}/{n_hosts} done, {ev:,} events, "
                f"{wall:.1f} s wall, {ev / max(wall, 1e-9):,.0f} ev/s",
                flush=True,
            )
        if finished == n_hosts or wall > a.limit or now_us > a.max_sim_us:
            break
    wall = time.perf_counter() - t0
    events = sim.GetEventCount() - ev0
    sim_us = sim.Now().GetMicroSeconds()
    fct = sorted(rec.Done(d) / 1e6 for d in range(n_hosts) if rec.Done(d) >= 0)
    rx = sum(rec.Rx(d) for d in range(n_hosts))
    sim.Destroy()
    return {
        "simulator": "ns-3.44 (pip ns3 3.44.post0)",
        "transport": f"TCP {a.tcp}",
        "ecmp": a.ecmp,
        "hosts": n_hosts,
        "nodes": n_nodes,
        "links": len(links),
        "finished": finished,
        "complete": finished == n_hosts,
        "sim_time_us": sim_us,
        "bytes_delivered": rx,
        "import_s": round(t_setup - t_import, 1),
        "setup_s": round(setup_s, 1),
        "routes_s": round(routes_s, 1),
        "run_s": round(wall, 1),
        "events": events,
        "events_per_s": round(events / max(wall, 1e-9)),
        "fct_p50_us": round(fct[len(fct) // 2], 1) if fct else -1,
        "fct_p99_us": round(fct[len(fct) * 99 // 100], 1) if fct else -1,
        "fct_max_us": round(fct[-1], 1) if fct else -1,
        "peak_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2),
        "check": note,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--size", default="2MB")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tcp", default="NewReno", help="ns-3 TCP congestion control (Tcp<NAME>)")
    ap.add_argument(
        "--ecmp",
        choices=("flow", "spray", "global-random", "global-first"),
        default="flow",
        help="fat-tree routing with per-flow hash or per-packet spray; or ns-3 global routing",
    )
    ap.add_argument("--mss", type=int, default=4096, help="TCP segment size, bytes")
    ap.add_argument("--gbps", type=int, default=100)
    ap.add_argument("--delay-ns", type=int, default=1000)
    ap.add_argument("--buffer-kib", type=int, default=512, help="switch port buffer")
    ap.add_argument("--dupack", type=int, default=3, help="TCP duplicate-ACK threshold")
    ap.add_argument("--min-rto-us", type=int, default=1000)
    ap.add_argument("--slice-us", type=int, default=50, help="simulated time per progress slice")
    ap.add_argument(
        "--limit",
        type=float,
        default=2400,
        help="wall-clock limit of the event loop, seconds (checked between slices)",
    )
    ap.add_argument("--max-sim-us", type=int, default=1_000_000)
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--json", action="store_true", help="print one JSON line only")
    a = ap.parse_args()
    row = run(a)
    if a.json:
        print(json.dumps(row))
        return
    for key, value in row.items():
        print(f"{key:>16}: {value:,}" if isinstance(value, int) else f"{key:>16}: {value}")


if __name__ == "__main__":
    main()
