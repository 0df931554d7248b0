"""Flow-level simulation at scale, per transport, each in its own process:

- a random permutation of 2 MB flows on the k=32 fat tree (8,192 hosts at 100 Gb/s, 1 us links;
  issue target: under 5 s and 2 GB);
- a ring all-reduce (aggregated, 1 GB per rank) over the 131,072 accelerators of the
  `mrc-131k` example (issue target: under 60 s).

    python bench/bench_sim.py                 # everything
    python bench/bench_sim.py ring ideal      # one case
"""

from __future__ import annotations

import json
import platform
import resource
import subprocess
import sys
import time

K32 = """
version: 1
name: fat-tree-k32
compute:
  accelerators: 8192
  accelerators_per_node: 1
  scale_up: {domain_size: 1}
  nic: {ports_per_accelerator: 1, port_speed_gbps: 100}
fabrics:
  backend:
    family: fat-tree
    tiers: 3
    switch: k32
    link_latency_ns: {host_leaf: 1000, leaf_spine: 1000, spine_core: 1000}
catalog:
  switches:
    k32: {vendor: test, ports: 32, port_speed_gbps: 100, power_w: 300}
"""

CASES = {
    "permutation": ("roce-ecmp", "mrc-spray", "receiver-driven", "ideal"),
    "ring": ("roce-ecmp", "ideal", "mrc-spray"),
}


def _child(case: str, name: str) -> None:
    from clusterloom.examples import example_text
    from clusterloom.fabric import generate, plan_fabric
    from clusterloom.sim import traffic as tr
    from clusterloom.sim.flow.run import run, summarize
    from clusterloom.sim.flow.transports import transport
    from clusterloom.spec import parse_spec

    start = time.perf_counter()
    if case == "permutation":
        topo = generate(plan_fabric(parse_spec(K32)))
        load = tr.permutation(topo.plan.hosts, 2_000_000, seed=1)
    else:
        topo = generate(plan_fabric(parse_spec(example_text("mrc-131k"))))
        load = tr.ring_all_reduce(topo.plan.hosts, 1_000_000_000)
    kwargs = {"evs": 16} if case == "ring" and name == "mrc-spray" else {}
    result = run(topo, load, transport(name, **kwargs), rtol=1e-2)
    s = summarize(name, result)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps(
            {
                "seconds": round(seconds, 2),
                "peak_gb": round(peak / 1e9, 2),
                "flows": s.flows,
                "makespan_ms": round(s.makespan_ps / 1e9, 3),
                "events": s.events,
            }
        )
    )


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--child":
        _child(argv[1], argv[2])
        return
    print(f"# {platform.platform()}, python {platform.python_version()}")
    print(
        f"{'case':>12} {'transport':>16} {'seconds':>8} {'peak GB':>8} {'flows':>9} "
        f"{'makespan ms':>12} {'events':>7}"
    )
    cases = [argv[0]] if argv else list(CASES)
    for case in cases:
        names = argv[1:] or CASES[case]
        for name in names:
            res = subprocess.run(
                [sys.executable, __file__, "--child", case, name],
                check=True,
                capture_output=True,
                text=True,
            )
            r = json.loads(res.stdout.strip().splitlines()[-1])
            print(
                f"{case:>12} {name:>16} {r['seconds']:>8.2f} {r['peak_gb']:>8.2f} "
                f"{r['flows']:>9,} {r['makespan_ms']:>12.3f} {r['events']:>7}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
