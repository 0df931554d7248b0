"""The ~131k-GPU example's placement (mrc-131k) with its hall models solved serially, then as
one task per hall on the local pool: time of each, and that both place every rack alike.

Run (a shared machine: under nice): ``nice python bench/bench_placement_halls.py [WORKERS]``;
figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import sys
import time

from clusterloom.examples import example_text
from clusterloom.exec import LocalExecutor
from clusterloom.fabric import design_fabric, fabric_names
from clusterloom.placement import place
from clusterloom.spec import parse_spec


def main(workers: int = 2, name: str = "mrc-131k") -> None:
    spec = parse_spec(example_text(name), source=f"example {name}")
    fabrics = tuple(design_fabric(spec, f, compare=False) for f in fabric_names(spec))
    start = time.perf_counter()
    serial = place(spec, fabrics)
    serial_s = time.perf_counter() - start
    halls = [s for s in serial.solves if s.name != "campus"]
    hall_cpu = sum(1 for _ in halls)
    start = time.perf_counter()
    with LocalExecutor(workers) as ex:
        pooled = place(spec, fabrics, executor=ex)
    pooled_s = time.perf_counter() - start
    same = (
        pooled.rack_position.tobytes() == serial.rack_position.tobytes()
        and pooled.solves == serial.solves
    )
    print(f"{name}: {serial.n_racks:,} racks, {hall_cpu} hall models, {workers} workers")
    print(f"serial: {serial_s:.1f} s; hall models on the pool: {pooled_s:.1f} s")
    print(f"speed-up {serial_s / pooled_s:.2f}x; identical placement: {same}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
