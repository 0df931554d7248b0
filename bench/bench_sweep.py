"""Sweep throughput and per-task executor overhead.

1. A 200-run sweep on the k=16 fat tree (``--example fat-tree-k16``: 1,024 hosts, 1 MB
   permutation, roce-ecmp and ideal, no failure or a spine failing at 20 us, 50 seeds; each task
   also runs its ideal bound) on ``local`` with 1 and 2 workers and on a local Ray with 2 CPUs,
   into a fresh dataset each: wall time, runs per second, and the per-run time a worker spends.
2. The per-task overhead of each executor: 200 ``clusterloom.exec.task:ping`` tasks (nothing
   but a one-row table), wall time per task, with the driver's writing of a part and the
   manifest timed apart (``Dataset.add`` for 200 one-row parts).

Run (a shared machine: under nice): ``nice python bench/bench_sweep.py``; figures go to
``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from clusterloom.exec import Executor, LocalExecutor, Task, open_executor
from clusterloom.sweep.dataset import open_dataset
from clusterloom.sweep.file import parse_sweep
from clusterloom.sweep.run import run_sweep, sweep_tasks

SWEEP = """\
version: 1
example: fat-tree-k16
base: {traffic: permutation, size: 1MB}
grid:
  transport: [roce-ecmp, ideal]
  failure: [none, "switch:1200@20us"]
seeds: 50
"""
PINGS = 200


def _sweep(ex: Executor, label: str) -> None:
    tasks = sweep_tasks(parse_sweep(SWEEP))
    with tempfile.TemporaryDirectory() as tmp, open_dataset(Path(tmp) / "out", {}) as ds:
        start = time.perf_counter()
        result = run_sweep(tasks, ex, ds)
        wall = time.perf_counter() - start
    assert not result.failed and result.ran == len(tasks)
    print(
        f"sweep {label}: {len(tasks)} runs in {wall:.1f} s, {len(tasks) / wall:.2f} runs/s, "
        f"{wall * ex.workers / len(tasks):.3f} s per run per worker"
    )


def _pings(ex: Executor, label: str) -> None:
    tasks = [Task("clusterloom.exec.task:ping", {"n": i}) for i in range(PINGS)]
    list(ex.run(tasks[: ex.workers * 2]))  # warm: workers started, modules imported
    start = time.perf_counter()
    out = list(ex.run(tasks))
    wall = time.perf_counter() - start
    assert all(o.ok for o in out)
    print(f"overhead {label}: {wall / PINGS * 1e3:.2f} ms per task (wall, {PINGS} tasks)")


def _driver() -> None:
    table = pa.table({"key": ["x"], "v": [1.0]})
    with tempfile.TemporaryDirectory() as tmp, open_dataset(Path(tmp) / "out", {}) as ds:
        start = time.perf_counter()
        for i in range(PINGS):
            ds.add(f"{i:064x}", {"variant": "base", "transport": "t"}, table)
        wall = time.perf_counter() - start
    print(f"driver: {wall / PINGS * 1e3:.2f} ms per part written (part + manifest, {PINGS})")


def main() -> None:
    print(f"machine: {os.cpu_count()} CPUs; pid {os.getpid()}, nice {os.nice(0)}")
    _driver()
    for workers in (1, 2):
        with LocalExecutor(workers) as ex:
            _pings(ex, f"local {workers}")
    with LocalExecutor(1) as ex:
        _sweep(ex, "local 1 worker")
    with LocalExecutor(2) as ex:
        _sweep(ex, "local 2 workers")
    os.environ.pop("RAY_ADDRESS", None)
    start = time.perf_counter()
    with open_executor("ray", 2) as ex:
        print(f"ray: a local Ray with 2 CPUs up in {time.perf_counter() - start:.1f} s")
        _pings(ex, "ray 2 CPUs")
        _sweep(ex, "ray 2 CPUs")


if __name__ == "__main__":
    main()
