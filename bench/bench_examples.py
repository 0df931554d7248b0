"""Design the flagship examples end to end, as a user does: ``clusterloom design --example NAME
-o DIR`` in its own process, timed on the wall clock, with its exit code and the findings of
``design.json`` by severity. The small examples run in the test suite (``tests/test_examples.py``);
these take minutes each (placement of hundreds to thousands of racks).

Run: ``python bench/bench_examples.py [NAME ...]``; figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

FLAGSHIPS = ("rail-16k", "nvl72-64k", "mrc-131k")


def run(name: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = ["clusterloom", "design", "--example", name, "-o", str(out)]
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        findings = json.loads((out / "design.json").read_text("utf-8"))["findings"]
    by = Counter(f["severity"] for f in findings)
    print(
        f"{name}: exit {done.returncode}, {wall:.1f} s wall, findings {len(findings)} "
        f"(error {by['error']}, warning {by['warning']}, info {by['info']})"
    )
    for f in findings:
        if f["severity"] != "info":
            print(f"  {f['severity']} {f['code']}: {f['message']} [{f['where']}]")
    return done.returncode


def main(names: list[str]) -> int:
    codes = [run(n) for n in names or FLAGSHIPS]
    return max(codes)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
