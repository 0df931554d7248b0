"""The cost of the packet engine's per-port counters: one permutation per transport on a
k-ary fat tree, run without counters, with them (sampled every 10 us), and again without;
CPU seconds of each (back to back, so the machine's load hits them alike) and whether the
runs are the same event for event.

Run: ``python bench/bench_packet_ports.py [K] [SIZE_KB] [TRANSPORT,...]`` (default k=8, 128
hosts, 512 KB, mrc-spray, roce-ecmp and receiver-driven);
figures go to ``bench/RESULTS.md`` by hand. ``--off-only`` times only runs without counters,
twice (it runs on a tree without them too: with ``PYTHONPATH`` at another checkout it gives
that tree's cost of the same runs, to compare back to back). The first run of each transport
warms the compiled loop (numba's cache) and is not timed.
"""

from __future__ import annotations

import resource
import sys
import time
from functools import partial

from clusterloom.sim.packet.fabrics import fat_tree
from clusterloom.sim.packet.run import PacketResult, run_packets
from clusterloom.sim.traffic import permutation

TRANSPORTS = ("mrc-spray", "roce-ecmp", "receiver-driven")


def _cpu(fn: object) -> tuple[float, PacketResult]:
    t0 = time.process_time()
    r = fn()  # type: ignore[operator]
    return time.process_time() - t0, r


def off_only(k: int, size_kb: int, transports: tuple[str, ...]) -> None:
    topo = fat_tree(k)
    traffic = permutation(int(topo.plan.hosts), size_kb * 1024, seed=1)
    for name in transports:
        run_packets(topo, permutation(int(topo.plan.hosts), 16 * 1024, seed=1), name)  # warm
        off1, a = _cpu(partial(run_packets, topo, traffic, name, seed=2))
        off2, _ = _cpu(partial(run_packets, topo, traffic, name, seed=2))
        print(f"  {name:16s} off {off1:6.2f} s / {off2:6.2f} s CPU; {a.events:,} events")


def main(k: int, size_kb: int, transports: tuple[str, ...] = TRANSPORTS) -> None:
    topo = fat_tree(k)
    hosts = int(topo.plan.hosts)
    traffic = permutation(hosts, size_kb * 1024, seed=1)
    print(f"k={k} fat tree, {hosts} hosts, {topo.n_links} links, permutation of {size_kb} KB")
    for name in transports:
        small = permutation(hosts, 16 * 1024, seed=1)
        run_packets(topo, small, name)  # warm the compiled loop
        run_packets(topo, small, name, ports_sample_ps=10_000_000)
        off1, a = _cpu(partial(run_packets, topo, traffic, name, seed=2))
        on, b = _cpu(partial(run_packets, topo, traffic, name, seed=2, ports_sample_ps=10**7))
        off2, _ = _cpu(partial(run_packets, topo, traffic, name, seed=2))
        same = (a.finish_ps.tolist(), a.events, a.drops, a.marks, a.pauses) == (
            b.finish_ps.tolist(),
            b.events,
            b.drops,
            b.marks,
            b.pauses,
        )
        p = b.ports
        assert p is not None
        mb = sum(p.counter(n).nbytes for n in p.NAMES) / 1e6
        print(
            f"  {name:16s} off {off1:6.2f} s / {off2:6.2f} s, on {on:6.2f} s CPU "
            f"({(on / min(off1, off2) - 1) * 100:+.1f}%); {a.events:,} events; same run: "
            f"{same}; {p.times_ps.size} samples, {mb:.1f} MB of counters"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:,.0f} MB")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--off-only"]
    run = off_only if "--off-only" in sys.argv else main
    run(
        int(args[0]) if args else 8,
        int(args[1]) if len(args) > 1 else 512,
        tuple(args[2].split(",")) if len(args) > 2 else TRANSPORTS,
    )
