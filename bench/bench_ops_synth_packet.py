"""``ops synth --engine packet`` on a 1,024-host example: 10 minutes of 10-second samples,
healthy and with a lossy gray link, a slow NIC port, a congested spine, a dead EV, a mis-hashed
switch and a straggler, the CPU seconds of each (the packet runs of its fabric states) and where
the packet engine put the drops, ECN marks, PFC pauses and the NICs' retransmissions; then what
``ops localise`` makes of each.

Run: ``python bench/bench_ops_synth_packet.py [EXAMPLE] [--kinds KIND,KIND...]`` (default
``hgx-1k-roce`` and every kind above); figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import resource
import sys
import time

import duckdb
import numpy as np

from clusterloom.ops.fabric import load_fabric
from clusterloom.ops.faults import random_fault
from clusterloom.ops.ingest import counter_rates
from clusterloom.ops.localise import localise
from clusterloom.ops.model import FaultKind
from clusterloom.ops.synth import Synthetic, synthesize

KINDS = (
    FaultKind.GRAY_LINK,
    FaultKind.SLOW_NIC_PORT,
    FaultKind.CONGESTED_SPINE,
    FaultKind.DEAD_EV,
    FaultKind.MIS_HASHED_SWITCH,
    FaultKind.STRAGGLER_RANK,
)


def _where(syn: Synthetic) -> str:
    con = duckdb.connect()
    con.register("c", syn.counters)
    parts = []
    cols = ["drops", "ecn_marks", "pfc_pauses"]
    if "retransmissions" in syn.counters.column_names:
        cols.append("retransmissions")
    for col in cols:
        rows = con.sql(
            f"select device || ':' || interface, max({col}) - min({col}) as d from c "
            "group by all having d > 0 order by d desc"
        ).fetchall()
        total = sum(int(r[1]) for r in rows)
        top = f", most at {rows[0][0]} ({int(rows[0][1]) / total:.0%})" if rows else ""
        parts.append(f"{col} {total:,} on {len(rows)} interfaces{top}")
    return "; ".join(parts)


def main(name: str, kinds: tuple[FaultKind, ...] = KINDS) -> None:
    fabric = load_fabric(name)
    print(f"{name}: {fabric.topology.plan.hosts:,} hosts, {fabric.topology.n_links:,} links")
    rng = np.random.default_rng(0)
    cases: list[tuple[str, list[object]]] = [("healthy", [])]
    for kind in kinds:
        f = random_fault(fabric, kind, rng, duration_ms=600_000)
        if kind is FaultKind.GRAY_LINK:  # a lossy one (random_fault draws a rate cut 1 in 3)
            while f.loss == 0.0:
                f = random_fault(fabric, kind, rng, duration_ms=600_000)
        cases.append((kind.value, [f]))
    for label, faults in cases:
        t0 = time.process_time()
        w0 = time.perf_counter()
        syn = synthesize(fabric, faults, duration_s=600, interval_s=10, seed=1, engine="packet")  # type: ignore[arg-type]
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        print(f"  {label}: {cpu:.1f} s CPU ({wall:.1f} s wall); {syn.notes[1]}")
        for f in syn.truth:
            print(f"    truth {f.kind.value} {f.target}")
        print(f"    {_where(syn)}")
        loc = localise(
            fabric,
            rates=counter_rates(syn.counters, fabric),
            probes=syn.probes,
            collectives=syn.collectives,
        )
        top = [f"{s.fault or s.kind} {s.target} {s.confidence:.2f}" for s in loc.suspects[:3]]
        print(f"    localise: congestion={loc.congestion}; first: {top}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:,.0f} MB")


if __name__ == "__main__":
    args = sys.argv[1:]
    chosen = KINDS
    if "--kinds" in args:
        at = args.index("--kinds")
        chosen = tuple(FaultKind(k) for k in args[at + 1].split(","))
        del args[at : at + 2]
    main(args[0] if args else "hgx-1k-roce", chosen)
