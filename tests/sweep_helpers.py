"""A small sweep for the sweep tests: the k=16 fat tree, 16 hosts, 64 KB flows, two transports,
a link failure or none, two seeds (8 runs of well under a second each), and the CLI run in a
subprocess, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

SMALL_SWEEP = """\
version: 1
example: fat-tree-k16
base: {traffic: permutation, size: 64KB, hosts: 16}
grid:
  transport: [roce-ecmp, mrc-spray]
  failure: [none, "link:17@2us"]
seeds: 2
"""


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    e["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), e.get("PYTHONPATH", "")) if p)
    return {**e, **extra}


def command(sweep: Path, out: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "clusterloom.cli.main",
        "sweep",
        str(sweep),
        "-o",
        str(out),
        "--no-progress",
        *args,
    ]


def run_cli(sweep: Path, out: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(sweep, out, *args), env=env(**extra), capture_output=True, text=True, timeout=240
    )


def results(directory: Path) -> dict[str, bytes]:
    """Every file of a sweep's directory but the journal (the one that records timing)."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != "journal.jsonl"
    }


def small_sweep_run(root: Path, *args: str) -> tuple[Path, Path]:
    """The small sweep written into ``root`` and run once into ``root/out``: both paths."""
    sweep = root / "small.yaml"
    sweep.write_text(SMALL_SWEEP)
    done = run_cli(sweep, root / "out", *args)
    assert done.returncode == 0, done.stderr
    return sweep, root / "out"
