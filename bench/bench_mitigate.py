"""``ops mitigate`` per fault kind: doing nothing against the chosen mitigation, with the wall
and CPU seconds of the whole command (a fresh process each: imports, the design, every run).

    python bench/bench_mitigate.py            # hgx-1k-roce, 256 hosts; fat-tree-k16 packet

Prints one row per case: the fault, transport, engine, doing nothing's predicted time, the
first candidate (proposed when its verdict is better), its time and verdict, wall and CPU s.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time


def cases() -> list[tuple[str, str, str, list[str]]]:
    hgx = ["hgx-1k-roce", "--hosts", "256"]
    k16 = ["fat-tree-k16", "--hosts", "16", "--size", "1MB", "--engine", "packet"]
    return [
        ("dead-ev:be-p0-leaf0000#49153@0s", "mrc-spray", "flow", hgx),
        ("dead-ev:be-p0-spine0001#49153@0s", "roce-ecmp", "flow", hgx),
        ("mis-hashed-switch:be-p0-leaf0000@0s*share=0.9", "roce-ecmp", "flow", hgx),
        ("mis-hashed-switch:be-p0-leaf0000@0s*share=0.9", "mrc-spray", "flow", hgx),
        ("congested-spine:be-p0-spine0000@0s*load=0.1", "mrc-spray", "flow", ["hgx-1k-roce"]),
        ("straggler-rank:rank:5@0s*delay=1ms", "roce-ecmp", "flow", hgx),
        ("mis-hashed-switch:be-p0-leaf0000@0s*share=0.9", "roce-ecmp", "packet", k16),
        ("congested-spine:be-p0-spine0000@0s*load=0.3", "mrc-spray", "packet", k16),
        ("straggler-rank:rank:5@0s*delay=200us", "roce-ecmp", "packet", k16),
        ("straggler-rank:rank:5@0s*delay=1ms", "roce-ecmp", "packet", k16),
    ]


def main() -> None:
    print(
        "| fault | transport | engine | nothing us | first candidate | its us | verdict | "
        "wall s | CPU s |"
    )
    print("|---|---|---|---:|---|---:|---|---:|---:|")
    for fault, transport, engine, args in cases():
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        cmd = [sys.executable, "-c", "from clusterloom.cli.main import app; app()", "ops"]
        cmd += ["mitigate", *args, "--fault", fault, "--transport", transport, "--json"]
        cmd += ["--no-progress"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if done.returncode not in (0, 1):
            print(f"| {fault} | {transport} | {engine} | exit {done.returncode}: "
                  f"{done.stderr.strip()[:80]} | | | | {wall:.1f} | {cpu:.1f} |")  # fmt: skip
            continue
        doc = json.loads(done.stdout)
        first = doc["checked"][0]
        pred = first["predicted_ps"]
        print(
            f"| `{fault}` | {transport} | {engine} | {first['nothing_ps'] / 1e6:.1f} | "
            f"{first['mitigation']} | {'-' if pred is None else f'{pred / 1e6:.1f}'} | "
            f"{first['verdict']} | {wall:.1f} | {cpu:.1f} |"
        )


if __name__ == "__main__":
    main()
