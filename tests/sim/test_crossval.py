"""The flow engine against the packet engine on small fat trees, per transport and case, within
``sim.crossval.TOLERANCE`` (its docstring says where the engines part on purpose).

    k=4: 16 hosts, 4 pods; k=8: 128 hosts, 8 pods; 1 us links, 100 Gb/s

Cases: a lone flow between pods, a permutation (k=4), a 4-to-1 incast, and a chained ring
all-reduce (groups of 4, 6 steps, each waiting for the block received the step before).
"""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom.sim.crossval import (
    HTSIM_ROCE,
    LOSSLESS_TOLERANCE,
    TOLERANCE,
    chained_ring_all_reduce,
    compare,
    over_seeds,
)
from clusterloom.sim.flow.transports import transport
from clusterloom.sim.packet.fabrics import fat_tree
from clusterloom.sim.traffic import Traffic, incast, permutation

K4 = fat_tree(4)
K8 = fat_tree(8)


def _case(name: str, k: int) -> Traffic:
    t = K4 if k == 4 else K8
    n = t.plan.hosts
    if name == "lone":
        return Traffic.from_arrays([0], [n - 1], [1_000_000], n_hosts=n)
    if name == "permutation":
        return permutation(n, 500_000, seed=1)
    if name == "incast":
        return incast(4, 500_000, receiver=n - 1, n_hosts=n)
    return chained_ring_all_reduce(n, 4, 400_000)


CASES = [
    (transport, case, k)
    for transport, cases in TOLERANCE.items()
    for case in cases
    for k in ((4, 8) if case in ("lone", "incast") else (4,))
]


@pytest.mark.parametrize(("transport", "case", "k"), CASES)
def test_flow_engine_within_tolerance_of_packet_engine(transport: str, case: str, k: int) -> None:
    mean_tol, last_tol = TOLERANCE[transport][case]
    c = compare(K4 if k == 4 else K8, _case(case, k), transport)
    assert (c.packet_fct_ps >= 0).all() and (c.flow_fct_ps >= 0).all()
    if mean_tol is not None:
        assert abs(c.mean_ratio - 1) <= mean_tol + 1e-12, c.mean_ratio
    assert abs(c.makespan_ratio - 1) <= last_tol + 1e-12, c.makespan_ratio


@pytest.mark.parametrize("transport", ["roce-ecmp", "mrc-spray"])
def test_lone_flow_agrees_to_the_picosecond(transport: str) -> None:
    """Both engines: payload and headers at line rate, six 1 us links, a full packet's
    store-and-forward at the five switches."""
    c = compare(K4, _case("lone", 4), transport)
    assert c.packet_fct_ps.tolist() == c.flow_fct_ps.tolist()
    ser = (4096 + 64) * 8 * 10**12 // (100 * 10**9)
    wire = 1_000_000 + -(-1_000_000 // 4096) * 64
    assert c.flow_fct_ps.tolist() == [-(-wire * 8 * 10**12 // 10**11) + 6 * 10**6 + 5 * ser]


def test_chained_ring_shape() -> None:
    t = chained_ring_all_reduce(8, 4, 400)
    assert len(t) == 8 * 6 and t.nbytes.tolist() == [100] * 48
    assert t.src[:4].tolist() == [0, 1, 2, 3] and t.dst[:4].tolist() == [1, 2, 3, 0]
    # rank 1's second step waits for the block rank 0 sent it in the first
    assert t.deps(8 + 1).tolist() == [0]
    with pytest.raises(ValueError, match="groups of 3"):
        chained_ring_all_reduce(8, 3, 400)


#: seeds of the lossless check: both engines hash a flow onto the same path for a seed
SEEDS = range(10)


def test_lossless_roce_follows_the_packet_engine_over_seeds() -> None:
    """htsim's RoCE (PFC, no DCQCN, no marking; ``HTSIM_ROCE``) on k=8 permutations of 500 KB:
    the flow engine's ``roce-ecmp dcqcn=0`` (its lossless model, by the rule) holds the median
    over seeds of the packet engine's mean, p99 and max FCT to ``LOSSLESS_TOLERANCE``, and its
    p99 and max lie nearer to the packet engine's than max-min's (``pfc_hol=0``) do."""
    config, options = HTSIM_ROCE
    hol = over_seeds(K8, "roce-ecmp", 500_000, SEEDS, config=config, options=options)
    plain = over_seeds(
        K8, "roce-ecmp", 500_000, SEEDS, config=config, options=options, flow_extra={"pfc_hol": 0}
    )
    assert np.array_equal(hol["packet"], plain["packet"])  # the packet engine has no such option
    packet = np.median(hol["packet"], axis=0)
    ratio = np.median(hol["flow"], axis=0) / packet
    off = np.median(plain["flow"], axis=0) / packet
    for j, key in enumerate(("mean", "p99", "max")):
        assert abs(ratio[j] - 1) <= LOSSLESS_TOLERANCE[key], (key, ratio, off)
    assert (abs(np.log(ratio[1:])) < abs(np.log(off[1:]))).all(), (ratio, off)


def test_the_lossless_model_follows_dcqcn() -> None:
    assert not transport("roce-ecmp").lossless  # DCQCN: max-min, the rate control's aim
    assert transport("roce-ecmp", dcqcn=0).lossless  # htsim's RoCE: PFC does the pacing
    assert not transport("roce-ecmp", dcqcn=0, pfc_hol=0).lossless  # given: kept
    assert transport("roce-ecmp", pfc_hol=1).lossless
