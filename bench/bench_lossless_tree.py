"""The lossless model's tail against the packet engine on the same paths (issue 15, flow-fid):
``roce-ecmp`` in htsim's RoCE configuration (``sim.crossval.HTSIM_ROCE``: PFC at htsim's pause
points, no DCQCN, an ACK per packet) through both engines on a k-ary fat tree, permutations of
``--size`` bytes, seeds 0..``--seeds``-1 (traffic and ECMP hash alike: both engines put a flow
on the same path). Prints, for the flow engine over the packet engine, the median over seeds
of mean / p99 / max, the median per-seed correlation of the flows' FCTs and mean |log ratio|,
and the ratios of the quantiles of all flows of all seeds pooled (p10 / p50 / p90 / p99): the
figure htsim's 10-seed sweep reports as "pooled p90", here without htsim's clock-seeded paths.
``--rounds`` sets ``engine.LOSSLESS_ROUNDS`` for the run (the model's refinement limit).

    python bench/bench_lossless_tree.py [--k 16] [--size 2000000] [--seeds 5] [--rounds 8]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    from clusterloom.sim.crossval import HTSIM_ROCE, flow_options
    from clusterloom.sim.flow import engine
    from clusterloom.sim.flow.run import run as run_flow
    from clusterloom.sim.flow.transports import transport as flow_transport
    from clusterloom.sim.packet.fabrics import fat_tree
    from clusterloom.sim.packet.run import config_for, run_packets
    from clusterloom.sim.paths import build_router
    from clusterloom.sim.traffic import permutation

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--k", type=int, default=16)
    p.add_argument("--size", type=int, default=2_000_000)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--rounds", type=int, default=engine.LOSSLESS_ROUNDS)
    opts = p.parse_args()
    engine.LOSSLESS_ROUNDS = opts.rounds
    topo = fat_tree(opts.k)
    router = build_router(topo)
    config, options = HTSIM_ROCE
    cfg = config_for("roce-ecmp", config)
    tr = flow_transport("roce-ecmp", **{**flow_options("roce-ecmp", cfg), **options})

    flows, packets, per = [], [], []
    cpu = {"flow": 0.0, "packet": 0.0}
    for seed in range(opts.seeds):
        load = permutation(topo.plan.hosts, opts.size, seed=seed)
        t0 = time.process_time()
        f = run_flow(topo, load, tr, seed=seed, router=router, rtol=0.01).fct_ps.astype(float)
        t1 = time.process_time()
        pk = run_packets(
            topo, load, "roce-ecmp", seed=seed, router=router, config=cfg, options=options
        ).fct_ps.astype(float)
        cpu["flow"] += t1 - t0
        cpu["packet"] += time.process_time() - t1
        flows.append(f)
        packets.append(pk)
        per.append(
            [
                f.mean() / pk.mean(),
                np.percentile(f, 99) / np.percentile(pk, 99),
                f.max() / pk.max(),
                np.corrcoef(f, pk)[0, 1],
                np.abs(np.log(f / pk)).mean(),
            ]
        )
        print(
            f"seed {seed}: flow over packet mean / p99 / max",
            " / ".join(f"{x:.3f}" for x in per[-1][:3]),
        )
    med = np.median(np.array(per), axis=0)
    fa, pa = np.concatenate(flows), np.concatenate(packets)
    q = [10, 50, 90, 99]
    print(
        f"k={opts.k}, {opts.size:,} B, seeds 0-{opts.seeds - 1}, LOSSLESS_ROUNDS {opts.rounds}: "
        f"median mean / p99 / max {med[0]:.3f} / {med[1]:.3f} / {med[2]:.3f}, "
        f"correlation {med[3]:.3f}, mean |log ratio| {med[4]:.3f}"
    )
    print(
        "pooled p10 / p50 / p90 / p99 over packet: "
        + " / ".join(f"{np.percentile(fa, x) / np.percentile(pa, x):.3f}" for x in q)
    )
    print(f"CPU s (this process): flow {cpu['flow']:.1f}, packet {cpu['packet']:.1f}")


if __name__ == "__main__":
    main()
