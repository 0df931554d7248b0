"""Barrier flows of step traffic in the engine: same schedule as the direct dependencies."""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom.fabric.topology import generate
from clusterloom.sim.flow.run import run
from clusterloom.sim.flow.transports import Ideal, MrcSpray, RoceEcmp, Transport
from clusterloom.sim.traffic import from_step_flows
from clusterloom.workload.algorithms import Algorithm, Collective
from clusterloom.workload.flows import step_flows
from clusterloom.workload.ops import CollectiveOp, LinkClass
from helpers import kport_plan


def _op(
    name: str, coll: Collective, algo: Algorithm, nbytes: int, groups: list[list[int]]
) -> CollectiveOp:
    g = np.array(groups, dtype=np.int32)
    return CollectiveOp("ep", name, "forward", coll, algo, nbytes, 1.0, g, LinkClass.SCALE_OUT)


def _ops() -> tuple[CollectiveOp, ...]:
    """ring all-reduce, two expert all-to-alls, ring all-reduce over 16 ranks."""
    ranks = list(range(16))
    a2a = [ranks[:8], ranks[8:]]
    return (
        _op("ar0", Collective.ALL_REDUCE, Algorithm.RING, 400_000, [ranks]),
        _op("dispatch", Collective.ALL_TO_ALL, Algorithm.DIRECT, 800_000, a2a),
        _op("combine", Collective.ALL_TO_ALL, Algorithm.DIRECT, 800_000, a2a),
        _op("ar1", Collective.ALL_REDUCE, Algorithm.RING, 400_000, [ranks]),
    )


@pytest.mark.parametrize("transport", [Ideal(), RoceEcmp(qps=2), MrcSpray(evs=16)])
def test_barriers_keep_the_schedule_of_direct_dependencies(transport: Transport) -> None:
    """32 hosts on 8-port switches; 16 ranks with 2 channels each. Every real flow starts and
    finishes at the same picosecond with barriers as with the quadratic direct dependencies,
    and a rank's op k+1 starts only once its op k flows have all finished."""
    topo = generate(kport_plan(32, 8, speed_gbps=100))
    ops = _ops()
    t = from_step_flows(step_flows(ops, ranks_per_domain=1, channels=2), ops)
    direct = t.without_barriers()
    assert t.barrier.any() and t.n_deps < direct.n_deps
    with_b = run(topo, t, transport, seed=3)
    without = run(topo, direct, transport, seed=3)
    real = np.flatnonzero(~t.barrier)
    assert np.all(with_b.finish_ps >= 0)
    assert np.array_equal(with_b.start_ps[real], without.start_ps)
    assert np.array_equal(with_b.finish_ps[real], without.finish_ps)
    rows = direct.dep_rows()
    assert np.all(with_b.start_ps[rows] >= with_b.finish_ps[direct.dep_idx])
    # a barrier finishes the instant its rank's previous op does
    b = np.flatnonzero(t.barrier)
    last = np.array([with_b.finish_ps[t.deps(x)].max() for x in b.tolist()])
    assert np.array_equal(with_b.start_ps[b], last)
    assert np.array_equal(with_b.finish_ps[b], last)
