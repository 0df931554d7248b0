"""Hostile specs are refused fast: a 50 MB spec, an alias bomb, deep nesting, a billion positions.

Each case is parsed through ``load_spec`` (the file path, as the command line reads it) in its
own process, so its peak resident memory is its own; the target (issue 12) is under a second
each, with nothing large built.

    python bench/bench_limits.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _alias_bomb() -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    return "version: 1\nname: bomb\n" + "\n".join(lines) + "\ncompute: {accelerators: *a8}\n"


def _cases() -> dict[str, str]:
    from clusterloom.examples import example_text

    site = example_text("hgx-1k-roce")
    return {
        # 50 MB of valid-looking YAML: a row listing a million positions
        "50 MB spec": "version: 1\nname: big\nrows:\n"
        + "".join(f"  - {{name: p{i:07d}, x_m: {i}.5}}\n" for i in range(1_375_000)),
        "alias bomb (10^9 nodes)": _alias_bomb(),
        "nesting 100,000 deep": "version: 1\nx: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "rows: 1,000,000,000": site.replace("rows: 4", "rows: 1000000000", 1),
    }


def _child(path: str) -> None:
    from clusterloom.errors import SpecError
    from clusterloom.spec import load_spec

    start = time.perf_counter()
    try:
        load_spec(path)
        outcome = "accepted"
    except SpecError as exc:
        outcome = str(exc.problems[0])[:90]
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, "outcome": outcome}))


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in _cases().items():
            path = Path(tmp) / "spec.yaml"
            path.write_text(text)
            size = path.stat().st_size
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(path)],
                check=True,
                capture_output=True,
                text=True,
            )
            result = json.loads(done.stdout)
            rows.append((name, size, result))
    print("| case | bytes | seconds | peak MB | answer |")
    print("|---|---:|---:|---:|---|")
    for name, size, r in rows:
        print(f"| {name} | {size:,} | {r['seconds']:.3f} | {r['peak_mb']:.0f} | {r['outcome']} |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(sys.argv[2])
    else:
        main()
