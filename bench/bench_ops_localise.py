"""Localisation over seeded synthetic incidents (issue 23, "Tests and proof"): for each fault
kind, ``--incidents`` single-fault incidents on each design (``ops.faults.random_fault``, a
minute of 10-s telemetry from ``ops.synth.synthesize`` on the flow engine, counters turned
into rates by ``ops.ingest.counter_rates``), localised and scored (``ops.evaluate``): top-1,
top-3, precision, recall, kind right, false first, silent; with the time taken per kind
(synthesis included) and the peak memory. A kind's row is printed as soon as it is done.

``--engine packet`` synthesises the telemetry on the packet engine instead (drops, ECN marks
and PFC pauses simulated: ``synthesize(..., engine="packet")``), for the kinds it expresses
(``ops.evaluate.PACKET_KINDS``) and ``--healthy`` windows with no fault, cycling
``--traffics`` permutations so that the detectors meet as many patterns of ECMP collisions.
Its designs default to two small ones made from the built-in examples, small enough for
hundreds of incidents (a packet run costs about 1 s of CPU per 100 hosts): ``fat-tree-k8``
(``fat-tree-k16`` with 8-port switches: 128 hosts, three tiers, 384 links) and
``hgx-256-roce`` (``hgx-1k-roce`` with 256 GPUs: 32 nodes, scalable units of 32, 8 rails).

``--scale DESIGN`` instead times ``localise`` alone at scale, on the inputs ``bench_ops.py``'s
hour hands it: ``--hours`` of 1-minute rates of every interface (a telemetry store's rollup;
healthy utilisation with noise, one gray link dropping 0.5%) and 10-s probes (every host to
one peer over four EVs, ten probes an interval, the probes over the gray link losing 0.5%
each way), built directly as tables (not simulated), then localised; the time of each step
and the peak memory.

    python bench/bench_ops_localise.py [--designs fat-tree-k16,hgx-1k-roce] [--incidents 200]
        [--seed 0] [--kinds gray-link,...]
    python bench/bench_ops_localise.py --engine packet [--designs fat-tree-k8,hgx-256-roce]
        [--incidents 100] [--healthy 100] [--traffics 10]
    python bench/bench_ops_localise.py --scale rail-16k [--hours 1]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _scale(design: str, hours: float) -> None:
    import numpy as np
    import pyarrow as pa

    from clusterloom.ops.fabric import load_fabric
    from clusterloom.ops.localise import localise
    from clusterloom.ops.model import RATE_SCHEMA

    t0 = time.perf_counter()
    fabric = load_fabric(design)
    t = fabric.topology
    rng = np.random.default_rng(0)
    n_t = int(hours * 360)
    n_r = int(hours * 60)
    start = 1_796_083_200_000
    # rates: every interface, every minute
    table = fabric.interface_table()
    n_if = table.num_rows
    link = np.asarray(table["link"].to_numpy(), dtype=np.int64)
    cap = np.asarray(table["capacity_bps"].to_numpy(), dtype=np.float64)
    gray = int(np.flatnonzero(t.link_tier == 2)[7])
    util = np.tile(rng.uniform(0.3, 0.5, n_if), n_r) * (1 + rng.normal(0, 0.01, n_if * n_r))
    tx = util * np.tile(cap, n_r)
    pps = tx / 8 / 4160
    drops = np.where(np.tile(link == gray, n_r), 0.005 * pps, 0.0)
    zeros = np.zeros(n_if * n_r)
    rates = pa.table(
        {
            "ts_ms": np.repeat(start + 60_000 * np.arange(1, n_r + 1, dtype=np.int64), n_if),
            "device": pa.DictionaryArray.from_arrays(
                np.tile(np.arange(n_if, dtype=np.int32), n_r), table["device"].combine_chunks()
            ),
            "interface": pa.DictionaryArray.from_arrays(
                np.tile(np.arange(n_if, dtype=np.int32), n_r), table["interface"].combine_chunks()
            ),
            "link": np.tile(link, n_r),
            "end": np.tile(np.asarray(table["end"].to_numpy(), dtype=np.int8), n_r),
            "seconds": np.full(n_if * n_r, 60.0),
            "tx_bps": tx,
            "rx_bps": tx,
            "tx_pps": pps,
            "rx_pps": pps,
            "drops_ps": drops,
            "ecn_ps": zeros,
            "pfc_ps": zeros,
            "fec_corrected_ps": zeros,
            "fec_uncorrected_ps": zeros,
            "up": np.ones(n_if * n_r),
            "flaps": np.zeros(n_if * n_r, dtype=np.int32),
        }
    )
    rates = rates.cast(
        pa.schema(
            [
                f.with_type(rates.schema.field(f.name).type)
                if f.name in ("device", "interface")
                else f
                for f in RATE_SCHEMA
            ]
        )
    )
    # probes: one peer under another leaf, four EVs, ten probes an interval
    hosts, ports = t.plan.hosts, fabric.host_ports
    src = np.repeat(np.arange(hosts, dtype=np.int64), 4)
    peer = (np.arange(hosts, dtype=np.int64) + rng.integers(64, hosts - 64, hosts)) % hosts
    dst = np.repeat(peer, 4)
    port = src % ports
    ev = np.tile(np.arange(49152, 49156, dtype=np.int64), src.size // 4)
    paths = np.concatenate(
        [fabric.paths(src, dst, port, ev), fabric.paths(dst, src, port, ev)], axis=1
    )
    on = (paths // 2 == gray).sum(axis=1)
    p_lost = 1 - (1 - 0.005) ** on
    n_k = src.size
    k = np.tile(np.arange(n_k, dtype=np.int32), n_t)
    sent = np.full(k.size, 10, dtype=np.int32)
    lost = rng.binomial(10, p_lost[k]).astype(np.int32)
    rtt = 8.0 + rng.random(k.size)
    names = fabric.names
    sd = pa.array(names.device(src).tolist())
    si = pa.array(names.interface(src, port).tolist())
    dd = pa.array(names.device(dst).tolist())
    di = pa.array(names.interface(dst, port).tolist())
    probes = pa.table(
        {
            "ts_ms": np.repeat(start + 10_000 * np.arange(1, n_t + 1, dtype=np.int64), n_k),
            "src_device": pa.DictionaryArray.from_arrays(k, sd),
            "src_interface": pa.DictionaryArray.from_arrays(k, si),
            "dst_device": pa.DictionaryArray.from_arrays(k, dd),
            "dst_interface": pa.DictionaryArray.from_arrays(k, di),
            "ev": ev[k].astype(np.int32),
            "sent": sent,
            "lost": lost,
            "rtt_us": rtt,
            "rtt_max_us": rtt + 1.0,
        }
    )
    t1 = time.perf_counter()
    print(
        f"{design}: {hours:g} h of telemetry built in {t1 - t0:.1f} s: "
        f"{rates.num_rows:,} rate rows, {probes.num_rows:,} probe rows; RSS {_rss_mb():,.0f} MB"
    )
    sys.stdout.flush()
    loc = localise(fabric, rates=rates, probes=probes)
    t2 = time.perf_counter()
    first = loc.suspects[0].target if loc.suspects else "(none)"
    print(
        f"localise: {t2 - t1:.1f} s, {len(loc.suspects)} suspect(s), first {first} "
        f"(truth {fabric.link_label(gray)}); peak RSS {_rss_mb():,.0f} MB"
    )


def main() -> None:
    from clusterloom.ops.evaluate import (
        PACKET_KINDS,
        SMALL_DESIGNS,
        evaluate,
        small_design,
        variant_scores,
    )
    from clusterloom.ops.fabric import load_fabric
    from clusterloom.ops.model import FaultKind

    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=("flow", "packet"), default="flow")
    parser.add_argument("--designs", default=None)
    parser.add_argument("--incidents", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", default=None)
    parser.add_argument("--healthy", type=int, default=None, help="healthy windows scored")
    parser.add_argument("--traffics", type=int, default=None, help="permutations cycled")
    parser.add_argument("--scale", default=None, help="time localise alone on this design")
    parser.add_argument("--hours", type=float, default=1.0)
    args = parser.parse_args()
    if args.scale:
        _scale(args.scale, args.hours)
        return
    packet = args.engine == "packet"
    designs = args.designs or ("fat-tree-k8,hgx-256-roce" if packet else "fat-tree-k16,hgx-1k-roce")
    n = args.incidents if args.incidents is not None else (100 if packet else 200)
    healthy = args.healthy if args.healthy is not None else (100 if packet else 0)
    traffics = args.traffics if args.traffics is not None else (10 if packet else 1)
    default_kinds = PACKET_KINDS if packet else tuple(FaultKind)
    kinds = [FaultKind(k) for k in args.kinds.split(",")] if args.kinds else list(default_kinds)
    print(f"engine {args.engine}, seed {args.seed}, {traffics} traffic(s) cycled")
    head = (
        f"{'design':<14} {'fault kind':<18} {'n':>4} {'top-1':>6} {'top-3':>6} {'prec':>6} "
        f"{'recall':>6} {'kind':>6} {'false1':>6} {'silent':>6} {'s':>7}"
    )
    print(head)
    for design in designs.split(","):
        fabric = small_design(design) if design in SMALL_DESIGNS else load_fabric(design)
        t_design = time.perf_counter()
        c_design = time.process_time()
        for kind in kinds:
            c0 = time.process_time()
            ev = evaluate(
                fabric, [kind], n, args.seed, design=design, engine=args.engine, traffics=traffics
            )
            k = ev.scores[0]
            print(
                f"{design:<14} {kind.value:<18} {k.incidents:>4} {k.top1:>6.1%} {k.top3:>6.1%} "
                f"{k.precision:>6.1%} {k.recall:>6.1%} {k.kind_right:>6.1%} "
                f"{k.false_first:>6.1%} {k.silent:>6.1%} {k.seconds:>7.1f} "
                f"(CPU {time.process_time() - c0:.1f} s)"
            )
            for _, variant, v in variant_scores(ev):
                print(
                    f"{'':<14} {'  ' + variant:<18} {v.incidents:>4} {v.top1:>6.1%} "
                    f"{v.top3:>6.1%} {v.precision:>6.1%} {v.recall:>6.1%} "
                    f"{v.kind_right:>6.1%} {v.false_first:>6.1%} {v.silent:>6.1%} "
                    f"{v.seconds:>7.1f}"
                )
            for o in ev.outcomes:
                if o.rank != 0:
                    print(
                        f"{'':<14}   miss {o.kind.value} {o.variant} #{o.index}: truth "
                        f"{o.truth}, culprit at {o.rank}, first {o.first_fault} {o.first}"
                    )
            sys.stdout.flush()
        if healthy:
            c0 = time.process_time()
            ev = evaluate(
                fabric, [], 0, args.seed, engine=args.engine, traffics=traffics, healthy=healthy
            )
            h = ev.healthy
            assert h is not None
            print(
                f"{design:<14} {'healthy':<18} {h.incidents:>4} fault named first {h.named:.1%}, "
                f"congestion called {h.congestion:.1%}, nothing suspected {h.silent:.1%} "
                f"{h.seconds:>7.1f} (CPU {time.process_time() - c0:.1f} s)"
            )
            for f in h.firsts:
                print(f"{'':<14}   false alarm {f}")
        print(
            f"{design}: {time.perf_counter() - t_design:.0f} s wall, "
            f"{time.process_time() - c_design:.0f} s CPU for {len(kinds)} kinds x "
            f"{n} incidents, peak RSS {_rss_mb():,.0f} MB"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
