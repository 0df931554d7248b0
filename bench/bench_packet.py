"""Packet-level engine benchmark: a random permutation on a k-ary fat tree, one run per
transport, each in its own process (so peak memory is per run). Prints wall time, the process's
CPU time (the machine is shared: wall time depends on the load), simulated events and events
per second; the figures go to bench/RESULTS.md.

    python bench/bench_packet.py                       # k=16, 2 MB, every transport
    python bench/bench_packet.py --k 32 --size 256KB --transport mrc-spray
    python bench/bench_packet.py --traffic allreduce --evs 256 --transport mrc-spray

``--traffic allreduce``: the chained ring all-reduce of ``bench/bench_vs_htsim.py`` (groups of 8
consecutive hosts, each step waiting on the previous one; ``--size`` the buffer), the
case whose peak memory issue 15 compares with htsim's.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

TRANSPORTS = ("roce-ecmp", "mrc-spray", "metaroce", "receiver-driven")


def one(
    k: int, size: str, name: str, seed: int, traffic_kind: str = "permutation", evs: int = 0
) -> dict[str, float | int | str]:
    from clusterloom.sim.crossval import chained_ring_all_reduce
    from clusterloom.sim.failures import parse_size
    from clusterloom.sim.packet.fabrics import fat_tree
    from clusterloom.sim.packet.run import run_packets
    from clusterloom.sim.traffic import permutation

    t0 = time.perf_counter()
    c0 = time.process_time()
    topology = fat_tree(k)
    n = topology.plan.hosts
    if traffic_kind == "allreduce":
        traffic = chained_ring_all_reduce(n, 8, parse_size(size))
    else:
        traffic = permutation(n, parse_size(size), seed=seed)
    options = {"evs": float(evs)} if evs and name != "roce-ecmp" else None
    r = run_packets(topology, traffic, name, seed=seed, options=options)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    fct = r.fct_ps[r.finish_ps >= 0]
    return {
        "transport": name,
        "hosts": topology.plan.hosts,
        "finished": r.finished,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "run_s": round(r.wall_s, 1),
        "events": r.events,
        "events_per_s": round(r.events_per_s),
        "fct_max_us": round(float(fct.max()) / 1e6, 1) if fct.size else -1,
        "fct_p50_us": round(float(sorted(fct)[len(fct) // 2]) / 1e6, 1) if fct.size else -1,
        "drops": r.drops,
        "trims": r.trims,
        "peak_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--size", default="2MB")
    ap.add_argument("--transport", default=",".join(TRANSPORTS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--traffic", choices=("permutation", "allreduce"), default="permutation")
    ap.add_argument("--evs", type=int, default=0, help="EVs per connection (0: the default)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.k, a.size, a.transport, a.seed, a.traffic, a.evs)))
        return
    print(
        "| transport | hosts | finished | wall s | CPU s | events | events/s | FCT p50 us | "
        "FCT max us | drops | trims | peak GB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in a.transport.split(","):
        cmd = [
            sys.executable,
            __file__,
            "--one",
            "--k",
            str(a.k),
            "--size",
            a.size,
            "--transport",
            name,
            "--seed",
            str(a.seed),
            "--traffic",
            a.traffic,
            "--evs",
            str(a.evs),
        ]
        row = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        print(
            f"| {row['transport']} | {row['hosts']:,} | {row['finished']:,} | "
            f"{row['wall_s']} | {row['cpu_s']} | {row['events']:,} | {row['events_per_s']:,} | "
            f"{row['fct_p50_us']:,} | {row['fct_max_us']:,} | {row['drops']:,} | "
            f"{row['trims']:,} | {row['peak_gb']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
