"""Sweeps over failures: every single-link failure of a fabric tier, for every transport.

:func:`single_link_failures` lists the physical links of one tier (optionally a seeded sample);
:func:`sweep` runs :func:`clusterloom.sim.flow.run.run` once per transport without failure (the
baseline) and once per (transport, failed link), each link down from ``fail_at_ps`` to the end
of the run, in a local process pool, and returns one :class:`SweepRow` per (transport, link) in
the order given, whatever order the runs complete in.

Statistics skip the barrier flows of step traffic (``Traffic.barrier``): they carry no bytes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric.topology import Topology
from clusterloom.sim.flow.engine import RTOL_SATURATED, SimResult
from clusterloom.sim.flow.run import Failure, run
from clusterloom.sim.flow.transports import Transport
from clusterloom.sim.paths import build_router
from clusterloom.sim.traffic import Traffic

__all__ = ["TIERS", "SweepRow", "single_link_failures", "sweep"]

#: ``Topology.link_tier`` of each tier name.
TIERS: dict[str, int] = {"host_leaf": 1, "leaf_spine": 2, "spine_core": 3}


def single_link_failures(
    topology: Topology,
    tier: str,
    *,
    max_links: int | None = None,
    seed: int | np.random.Generator = 0,
) -> list[int]:
    """Physical link ids of ``tier`` (``host_leaf``, ``leaf_spine`` or ``spine_core``),
    ascending; with ``max_links`` a uniform sample of that many (without replacement, drawn
    with ``numpy.random.default_rng(seed)``), still ascending. A tier the fabric lacks (spine_core
    of a 2-tier fabric) has no links."""
    if tier not in TIERS:
        raise SpecError([Problem("tier", f"unknown tier '{tier}'; tiers: {', '.join(TIERS)}")])
    links = np.flatnonzero(topology.link_tier == TIERS[tier])
    if max_links is not None:
        if max_links < 0:
            raise SpecError([Problem("max_links", f"must be >= 0, got {max_links}")])
        if max_links < links.size:
            links = np.sort(np.random.default_rng(seed).choice(links, max_links, replace=False))
    return [int(x) for x in links]


@dataclass(frozen=True)
class SweepRow:
    """One transport with one link failed. Times in ps; ``slowdown`` is ``makespan_ps`` over
    the same transport's makespan without failure (``inf`` when some flow never finished,
    e.g. a host's only link)."""

    transport: str
    link: int
    makespan_ps: int
    fct_p99_ps: float
    baseline_makespan_ps: int
    slowdown: float
    unfinished: int


@dataclass(frozen=True)
class _Outcome:
    makespan_ps: int
    fct_p99_ps: float
    unfinished: int


def _outcome(result: SimResult, real: np.ndarray[tuple[int], np.dtype[np.bool_]]) -> _Outcome:
    done = (result.finish_ps >= 0) & real
    fct = (result.finish_ps - result.start_ps)[done].astype(np.float64)
    return _Outcome(
        makespan_ps=int(result.finish_ps[done].max(initial=0)),
        fct_p99_ps=float(np.percentile(fct, 99)) if fct.size else math.nan,
        unfinished=int((real & (result.finish_ps < 0)).sum()),
    )


@dataclass(frozen=True)
class _Task:
    topology: Topology
    traffic: Traffic
    transport: Transport
    links: tuple[int, ...]  # -1: no failure
    fail_at_ps: int
    seed: int
    rtol: float


def _run_task(task: _Task) -> list[_Outcome]:
    """Runs of one transport, one per link, sharing one router (a worker's unit of work)."""
    router = build_router(task.topology)
    real = ~task.traffic.barrier
    out = []
    for link in task.links:
        failures = (
            ()
            if link < 0
            else (
                Failure(
                    f"link:{link}@{task.fail_at_ps}",
                    np.array([link], dtype=np.int64),
                    task.fail_at_ps,
                    None,
                ),
            )
        )
        result = run(
            task.topology,
            task.traffic,
            task.transport,
            failures,
            seed=task.seed,
            router=router,
            rtol=task.rtol,
        )
        out.append(_outcome(result, real))
    return out


def sweep(
    topology: Topology,
    traffic: Traffic,
    transports: Sequence[Transport],
    link_ids: Sequence[int],
    *,
    fail_at_ps: int,
    seed: int = 0,
    rtol: float = RTOL_SATURATED,
    processes: int | None = None,
) -> list[SweepRow]:
    """Every transport with every link of ``link_ids`` failed at ``fail_at_ps`` (module
    docstring). ``processes``: worker processes (``None``: ``os.cpu_count()``; 1 runs inline,
    in this process). Rows are ordered by transport, then link, as given. Transports are
    picklable instances (``transports.transport(name, **options)``)."""
    links = [int(x) for x in link_ids]
    bad = [x for x in links if not 0 <= x < topology.n_links]
    if bad:
        raise ValueError(f"no link {bad[0]}; links are 0..{topology.n_links - 1}")
    workers = os.cpu_count() or 1 if processes is None else processes
    if workers < 1:
        raise SpecError([Problem("processes", f"must be >= 1, got {processes}")])
    # one chunk of runs per task: the baseline and about 4 tasks per worker and transport
    per = max(1, math.ceil(len(links) / (4 * workers)))
    chunks = [tuple(links[i : i + per]) for i in range(0, len(links), per)]
    tasks = [
        _Task(topology, traffic, t, chunk, fail_at_ps, seed, rtol)
        for t in transports
        for chunk in [(-1,), *chunks]
    ]
    if workers == 1 or len(tasks) == 1:
        results = [_run_task(task) for task in tasks]
    else:
        with ProcessPoolExecutor(max_workers=min(workers, len(tasks))) as pool:
            results = list(pool.map(_run_task, tasks))  # map keeps the order of `tasks`
    rows: list[SweepRow] = []
    per_transport = len(chunks) + 1
    for i, t in enumerate(transports):
        mine = results[i * per_transport : (i + 1) * per_transport]
        base = mine[0][0]
        failed = [o for chunk in mine[1:] for o in chunk]
        for link, o in zip(links, failed, strict=True):
            slow = (
                math.inf
                if o.unfinished or base.unfinished or base.makespan_ps == 0
                else o.makespan_ps / base.makespan_ps
            )
            rows.append(
                SweepRow(
                    t.name, link, o.makespan_ps, o.fct_p99_ps, base.makespan_ps, slow, o.unfinished
                )
            )
    return rows
