"""One training step of the 16k-GPU example (dense ~400B, TP8 PP16 CP2 DP64) decomposed into
collectives and flows: time and peak memory (issue target: < 10 s and < 2 GB on 2 cores).
Also the 2k-GPU MoE example. Each runs in its own process.

    python bench/bench_workload.py
"""

from __future__ import annotations

import json
import platform
import resource
import subprocess
import sys
import time


def _child(name: str) -> None:
    from clusterloom.examples import example_text
    from clusterloom.spec import parse_spec
    from clusterloom.workload import design_workload

    spec = parse_spec(example_text(name))
    start = time.perf_counter()
    w = design_workload(spec)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps(
            {
                "example": name,
                "seconds": round(seconds, 2),
                "peak_gb": round(peak / 1e9, 2),
                "ops": len(w.ops),
                "flows": len(w.flows),
                "step_s": round(w.timing.step_s, 3),
            }
        )
    )


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--child":
        _child(argv[1])
        return
    print(f"# {platform.platform()}, python {platform.python_version()}")
    print(f"{'example':>10} {'seconds':>8} {'peak GB':>8} {'ops':>5} {'flows':>11} {'step s':>7}")
    for name in argv or ["rail-16k", "moe-2k"]:
        res = subprocess.run(
            [sys.executable, __file__, "--child", name], check=True, capture_output=True, text=True
        )
        r = json.loads(res.stdout.strip().splitlines()[-1])
        print(
            f"{name:>10} {r['seconds']:>8.2f} {r['peak_gb']:>8.2f} {r['ops']:>5} "
            f"{r['flows']:>11,} {r['step_s']:>7.3f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
