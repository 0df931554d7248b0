"""The ~131k-GPU example (mrc-131k) placed and cabled with its halls serially, then as one task
per hall on the local pool: the time of each, that both give the same placement and cabling,
and each hall's own time (measured in the serial runs), from which the time on N workers is
worked out: the serial parts plus, for each map over the halls, the halls scheduled in order
on N workers (``schedule``), as the executor hands them out.

Run (a shared machine: under nice): ``nice python bench/bench_placement_halls.py [WORKERS]
[EXAMPLE]``; figures go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import dataclasses
import heapq
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import clusterloom.cabling.halls as cabling_halls
import clusterloom.placement.halls as placement_halls
from clusterloom.cabling import cable
from clusterloom.examples import example_text
from clusterloom.exec import LocalExecutor
from clusterloom.fabric import design_fabric, fabric_names
from clusterloom.placement import place
from clusterloom.spec import parse_spec

WORKERS = (1, 2, 4, 8, 16)


def schedule(times: list[float], workers: int) -> float:
    """When the last of ``times`` ends, each started in order on the first free of
    ``workers``."""
    free = [0.0] * workers
    for t in times:
        heapq.heappush(free, heapq.heappop(free) + t)
    return max(free)


def timed(module: Any, name: str, key: Callable[..., Any], into: list[tuple[Any, float]]) -> None:
    """Wrap ``module.name`` so each call's ``key(*args)`` and seconds go to ``into``."""
    fn = getattr(module, name)

    def wrapper(*args: Any, **kw: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            into.append((key(*args), time.perf_counter() - start))

    setattr(module, name, wrapper)


def _arrays(c: Any) -> dict[str, Any]:
    return {
        f.name: getattr(c, f.name).tobytes()
        for f in dataclasses.fields(c)
        if isinstance(getattr(c, f.name), np.ndarray)
    } | {"findings": c.findings, "rerouted": c.rerouted}


def _expected(label: str, serial_s: float, maps: list[list[float]]) -> None:
    """The time on N workers: what is not a hall's, then each map's halls on N workers."""
    rest = serial_s - sum(sum(m) for m in maps)
    print(
        f"{label}: serial parts {rest:.1f} s; halls per map: "
        + "; ".join(
            f"{len(m)} halls, sum {sum(m):.2f} s, largest {max(m, default=0):.2f} s" for m in maps
        )
    )
    for w in WORKERS:
        t = rest + sum(schedule(m, w) for m in maps)
        print(f"  {w:>2} workers: {t:.1f} s expected, {serial_s / t:.2f}x")


def main(workers: int = 2, name: str = "mrc-131k") -> None:
    print(f"load before: {os.getloadavg()}")
    spec = parse_spec(example_text(name), source=f"example {name}")
    fabrics = tuple(design_fabric(spec, f, compare=False) for f in fabric_names(spec))
    hall_solves: list[tuple[Any, float]] = []
    timed(placement_halls, "place_hall", lambda *a: a[3], hall_solves)
    start = time.perf_counter()
    serial = place(spec, fabrics)
    serial_s = time.perf_counter() - start
    n_halls = len(hall_solves)
    start = time.perf_counter()
    with LocalExecutor(workers) as ex:
        pooled = place(spec, fabrics, executor=ex)
    pooled_s = time.perf_counter() - start
    same = (
        pooled.rack_position.tobytes() == serial.rack_position.tobytes()
        and pooled.solves == serial.solves
    )
    print(f"{name}: {serial.n_racks:,} racks, {n_halls} hall models, {workers} workers")
    print(f"placement serial: {serial_s:.1f} s; hall models on the pool: {pooled_s:.1f} s")
    print(f"speed-up {serial_s / pooled_s:.2f}x; identical placement: {same}")
    _expected("placement", serial_s, [[t for _, t in hall_solves[:n_halls]]])

    parts: list[tuple[Any, float]] = []
    timed(cabling_halls, "route_part", lambda job, k: (k, job.parts[k][0]), parts)
    start = time.perf_counter()
    c_serial = cable(spec, fabrics, serial)
    c_serial_s = time.perf_counter() - start
    n_parts = len(parts)  # the pool's hall parts run in its workers, not recorded here
    start = time.perf_counter()
    with LocalExecutor(workers) as ex:
        c_pooled = cable(spec, fabrics, serial, executor=ex)
    c_pooled_s = time.perf_counter() - start
    same_c = _arrays(c_pooled) == _arrays(c_serial)
    print(
        f"cabling {c_serial.link.shape[0]:,} links serial: {c_serial_s:.1f} s; halls' routes on "
        f"the pool: {c_pooled_s:.1f} s; identical cabling: {same_c}"
    )
    maps: list[list[float]] = []
    between = 0.0
    for (k, part), t in parts[:n_parts]:
        if k == 0:  # a new call of route_by_hall
            maps.append([])
        if part >= 0:
            maps[-1].append(t)
        else:
            between += t
    print(f"cabling: the routes between halls (after the halls, serial) {between:.2f} s")
    _expected("cabling", c_serial_s, [m for m in maps if len(m) >= 2])
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]), *sys.argv[2:3])
