"""Fabric generation at scale: time and peak memory for 131,072 and 1,048,576 accelerators.

Each size runs in its own process so that its peak resident memory is its own. Two figures per
size: ``generate`` (sizing + topology arrays, the issue's target: 1M accelerators in < 60 s and
< 4 GB on a 2-core machine) and ``design`` (generate + every validator + options compared).

    python bench/bench_fabric.py            # both sizes
    python bench/bench_fabric.py 131072     # one size
"""

from __future__ import annotations

import json
import platform
import resource
import subprocess
import sys
import time

SPEC = """
version: 1
name: bench-{n}
compute:
  accelerators: {n}
  accelerators_per_node: 8
  nic: {{ports_per_accelerator: 8, port_speed_gbps: 100}}
fabrics:
  backend: {{switch: tomahawk5-64x800g, planes: 8}}
"""


def _child(n: int, what: str) -> None:
    from clusterloom import parse_spec
    from clusterloom.fabric import design_fabric, generate, plan_fabric

    spec = parse_spec(SPEC.format(n=n))
    start = time.perf_counter()
    if what == "generate":
        topo = generate(plan_fabric(spec))
        links, nodes = topo.n_links, topo.n_nodes
    else:
        design = design_fabric(spec)
        links, nodes = design.topology.n_links, design.topology.n_nodes
        assert not [f for f in design.findings if f.severity.value == "error"]
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    print(
        json.dumps(
            {
                "accelerators": n,
                "what": what,
                "seconds": round(seconds, 2),
                "peak_gb": round(peak / 1e9, 2),
                "nodes": nodes,
                "links": links,
            }
        )
    )


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--child":
        _child(int(argv[1]), argv[2])
        return
    sizes = [int(a) for a in argv] or [131_072, 1_048_576]
    print(
        f"# {platform.platform()}, {platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}"
    )
    print(
        f"{'accelerators':>12} {'stage':>9} {'seconds':>8} {'peak GB':>8} {'nodes':>10} "
        f"{'links':>11}"
    )
    for n in sizes:
        for what in ("generate", "design"):
            res = subprocess.run(
                [sys.executable, __file__, "--child", str(n), what],
                check=True,
                capture_output=True,
                text=True,
            )
            r = json.loads(res.stdout.strip().splitlines()[-1])
            print(
                f"{r['accelerators']:>12,} {what:>9} {r['seconds']:>8.2f} {r['peak_gb']:>8.2f} "
                f"{r['nodes']:>10,} {r['links']:>11,}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
