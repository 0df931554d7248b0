"""Where a packet run's memory goes: resident memory at each set-up step and at the run's
peak, with the sizes of the engine's tables then (issue 15, docs/packet.md "Memory against
htsim on the chained all-reduce").

    python bench/bench_packet_memory.py [--k 16] [--case allreduce|permutation]
        [--transport mrc-spray|receiver-driven|roce-ecmp|roce-ecmp+htsim]

The case is the bench_vs_htsim one (2 MB per host; the all-reduce in groups of 8 consecutive
hosts, 256 EVs, htsim's framing); the figures are this process's (``/proc/self/statm``),
sampled each time the engine checks whether to stop (every 4,096 events), so the peak is
that of the samples; the process's own peak (``VmHWM``) is printed too. The steps before the
run are the floor: the interpreter and numpy, the packet path's modules, the kernels loaded
(from their ahead-of-time extensions, ``sim._aot``; numba is not imported unless they run
under numba's JIT, ``CLUSTERLOOM_AOT=0``). It prints a digest of the run's figures (start, finish,
retransmissions, failures, events, counters) so that two versions can be compared run for
run.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from dataclasses import replace
from typing import Any

import numpy as np


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--k", type=int, default=16)
    p.add_argument("--case", default="allreduce", choices=("allreduce", "permutation"))
    p.add_argument("--transport", default="mrc-spray")
    opts = p.parse_args()
    steps = [("Python and numpy", rss_mib())]
    import sys

    from clusterloom.sim import _aot
    from clusterloom.sim.crossval import HTSIM_ROCE, chained_ring_all_reduce
    from clusterloom.sim.packet.engine import PacketConfig, PacketSim
    from clusterloom.sim.packet.fabrics import fat_tree
    from clusterloom.sim.packet.run import config_for, run_packets
    from clusterloom.sim.traffic import permutation

    steps.append(("clusterloom modules", rss_mib()))
    for module in ("clusterloom.sim.packet._core", "clusterloom.sim.paths"):
        _aot.load(module)
    steps.append(("kernels loaded", rss_mib()))
    t = fat_tree(opts.k)
    hosts = t.plan.hosts
    if opts.case == "allreduce":
        traffic = chained_ring_all_reduce(hosts, 8, 2_000_000)
    else:
        traffic = permutation(hosts, 2_000_000, seed=0)
    steps.append((f"topology and traffic ({len(traffic):,} flows)", rss_mib()))
    name, _, variant = opts.transport.partition("+")
    mss = 3936 if name == "mrc-spray" else 4000
    cfg = config_for(name, PacketConfig(mtu=mss, header=64))
    options: dict[str, float] = {} if name == "roce-ecmp" else {"evs": 256.0}
    if name == "receiver-driven":
        cfg = replace(cfg, buffer_bytes=35 * (mss + 64))
        options["iw_bdp"] = 1.15
    if variant == "htsim":
        cfg, options = config_for(name, HTSIM_ROCE[0]), dict(HTSIM_ROCE[1])
    held: list[PacketSim] = []
    peak: list[Any] = [0.0, {}]

    def progress(done: float, total: float) -> None:
        r = rss_mib()
        if r > peak[0] and held:
            s = held[0]
            peak[0] = r
            peak[1] = {
                "time us": s.now / 1e6,
                "connections live": sum(1 for c in s.conns if hasattr(c, "pay")),
                "ECMP keys": len(s._ecmp),
                "routes": len(s._route_at),
                "route links MiB": s._rl.nbytes / 2**20,
                "packet slots": len(s._objs),
                "packet rows MiB": s._pkts.nbytes / 2**20,
                "heap MiB": s._heap.nbytes / 2**20,
                "endpoint rows MiB": s._r.nbytes / 2**20,
                "loop routes room MiB": s._rr.nbytes / 2**20,
                "loop routes used MiB": s._rr_used * 8 / 2**20,
                "flags MiB": s._b.nbytes / 2**20,
            }

    cpu = time.process_time()
    res = run_packets(
        t, traffic, name, seed=0, config=cfg, options=options,
        progress=progress, actions=[(0, held.append)],
    )  # fmt: skip
    cpu = time.process_time() - cpu
    for what, mib in steps:
        print(f"{what:40s} {mib:8.1f} MiB")
    print(f"{'run peak (sampled)':40s} {peak[0]:8.1f} MiB")
    for what, v in peak[1].items():
        print(f"  {what:38s} {v:10,.1f}")
    with open("/proc/self/status") as f:
        hwm = next(line.split()[1] for line in f if line.startswith("VmHWM"))
    print(f"{'peak resident (VmHWM)':40s} {int(hwm) / 1024:8.1f} MiB")
    print(f"numba imported: {'numba' in sys.modules}")
    for module, how in _aot.status().items():
        print(f"  {module}: {how}")
    h = hashlib.sha256()
    for a in (res.start_ps, res.finish_ps, res.retransmissions, res.failed):
        h.update(np.ascontiguousarray(a).tobytes())
    figures = (res.end_ps, res.events, res.drops, res.trims, res.marks, res.pauses)
    h.update(repr((*figures, res.max_queue_bytes, res.data_bytes_delivered)).encode())
    print(
        f"{opts.transport} {opts.case} k={opts.k}: {res.finished:,}/{len(traffic):,} finished, "
        f"{res.events:,} events, {cpu:.1f} s CPU, digest {h.hexdigest()[:16]}"
    )
    return 0 if res.finished == len(traffic) else 3


if __name__ == "__main__":
    raise SystemExit(main())
