"""ECMP on a PFC fabric: when does the flow engine's lossless model (``roce-ecmp`` without DCQCN)
apply? The packet engine against the flow engine on the k=8 fat tree (128 hosts, 100 Gb/s,
1 us links), permutations of ``--size`` bytes per host, seeds 0..``--seeds``-1 (traffic and
ECMP hash alike; both engines hash a flow onto the same path), the median over seeds of each
engine's mean / p99 / max FCT:

- htsim's RoCE (``sim.crossval.HTSIM_ROCE``: PFC at 15/12 packets, no marking, no DCQCN, an
  ACK per packet): the flow engine's ``dcqcn=0`` (lossless model) and ``pfc_hol=0`` (max-min);
- the default (DCQCN and marking on, PFC at the engine's thresholds): the flow engine's
  default (max-min) and ``pfc_hol=1``; and the packet engine with PFC out of play (16 MiB
  buffers, pauses at 15 MiB; marking unchanged), to see whether its pauses hold flows back.

    python bench/bench_lossless.py [--size 1000000] [--seeds 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

MIB = 1 << 20


def main() -> None:
    from clusterloom.sim.crossval import HTSIM_ROCE, over_seeds
    from clusterloom.sim.packet.engine import PacketConfig
    from clusterloom.sim.packet.fabrics import fat_tree
    from clusterloom.sim.packet.run import run_packets
    from clusterloom.sim.paths import build_router
    from clusterloom.sim.traffic import permutation

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=1_000_000)
    p.add_argument("--seeds", type=int, default=10)
    opts = p.parse_args()
    k8 = fat_tree(8)
    seeds = range(opts.seeds)
    start = time.perf_counter()

    def line(label: str, ours: np.ndarray, ref: np.ndarray) -> None:
        a, b = np.median(ours, axis=0), np.median(ref, axis=0)
        print(
            f"{label:58s} {' / '.join(f'{x / 1e6:7.1f}' for x in a)} us   "
            f"over packet {' / '.join(f'{x:.3f}' for x in a / b)}"
        )

    config, options = HTSIM_ROCE
    hol = over_seeds(k8, "roce-ecmp", opts.size, seeds, config=config, options=options)
    plain = over_seeds(
        k8, "roce-ecmp", opts.size, seeds, config=config, options=options, flow_extra={"pfc_hol": 0}
    )
    print(f"k=8, {opts.size:,} B permutations, seeds 0-{opts.seeds - 1}: median mean / p99 / max")
    line("packet, htsim's RoCE (HTSIM_ROCE)", hol["packet"], hol["packet"])
    line("flow dcqcn=0 ack_every=1 (lossless model, the rule)", hol["flow"], hol["packet"])
    line("flow dcqcn=0 ack_every=1 pfc_hol=0 (max-min)", plain["flow"], hol["packet"])
    default = over_seeds(k8, "roce-ecmp", opts.size, seeds)
    forced = over_seeds(k8, "roce-ecmp", opts.size, seeds, flow_extra={"pfc_hol": 1})
    line("packet, default (DCQCN, marking, PFC)", default["packet"], default["packet"])
    line("flow default (DCQCN: max-min)", default["flow"], default["packet"])
    line("flow pfc_hol=1", forced["flow"], default["packet"])
    far = PacketConfig(
        buffer_bytes=16 * MIB,
        pfc_xoff=15 * MIB,
        pfc_xon=14 * MIB,
        ecn_kmin=64 << 10,
        ecn_kmax=256 << 10,
    )
    router = build_router(k8)
    rows, pauses = [], [[], []]
    for seed in seeds:
        load = permutation(k8.plan.hosts, opts.size, seed=seed)
        a = run_packets(k8, load, "roce-ecmp", seed=seed, router=router)
        b = run_packets(k8, load, "roce-ecmp", seed=seed, router=router, config=far)
        pauses[0].append(a.pauses)
        pauses[1].append(b.pauses)
        x = b.fct_ps.astype(np.float64)
        rows.append([x.mean(), np.percentile(x, 99), x.max()])
    line("packet, DCQCN, PFC out of play (16 MiB buffers)", np.array(rows), default["packet"])
    no_dcqcn = [
        run_packets(
            k8,
            permutation(k8.plan.hosts, opts.size, seed=s),
            "roce-ecmp",
            seed=s,
            router=router,
            config=config,
            options=options,
        ).pauses
        for s in seeds
    ]
    print(
        f"pauses per run: DCQCN {min(pauses[0])}-{max(pauses[0])}, DCQCN with 16 MiB buffers "
        f"{min(pauses[1])}-{max(pauses[1])}, htsim's RoCE {min(no_dcqcn)}-{max(no_dcqcn)}"
    )
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
