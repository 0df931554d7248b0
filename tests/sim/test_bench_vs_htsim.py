"""bench/bench_vs_htsim.py without a built htsim: it says how to build one and exits 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "bench_vs_htsim.py"


def test_without_htsim_it_says_how_to_build_it(tmp_path: Path) -> None:
    for args in ([], ["--htsim", str(tmp_path)]):
        done = subprocess.run(
            [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "build.sh" in done.stdout and "--htsim" in done.stdout
